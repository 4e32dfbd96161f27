#!/usr/bin/env node
// Cross-check of phiward's UCUM codes (UCUM_CODE_INVALID) against NLM's @lhncbc/ucum-lhc
// (validateUnitString), on every code of the package's unit table (the UCUM atoms and 458
// LOINC unit expressions) and a list of units seen in clinical data, valid and not.
//
// phiward's verdict: `phiward validate --ndjson` of one Observation per unit, its valueQuantity
// with system http://unitsofmeasure.org and the unit as code. Two differences are known and
// allowed, both where phiward follows the UCUM specification and ucum-lhc is lenient:
//   - a prefix before a non-metric atom (`kmin`, `kh`): "only metric units can be combined with
//     a prefix" (UCUM, section 2.2); ucum-lhc accepts them;
//   - leading or trailing white space (ucum-lhc trims it; a UCUM code has none).
// Any other disagreement fails (exit 1). Last line: "N agree, M known differences, K other".
//
//   node tests/peers/ucum_lhc.mjs PHIWARD [PREFIX]   (PREFIX: the npm prefix that has ucum-lhc,
//   default target/gen-npm-ucum)
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { resolve, join } from 'node:path';
import { spawnSync } from 'node:child_process';

const phiward = process.argv[2] || 'target/release/phiward';
const prefix = resolve(process.argv[3] || 'target/gen-npm-ucum');
const require = createRequire(join(prefix, 'node_modules') + '/');
const ucum = require('@lhncbc/ucum-lhc');
const utils = ucum.UcumLhcUtils.getInstance();

const defs = JSON.parse(readFileSync(join(prefix, 'node_modules/@lhncbc/ucum-lhc/data/ucumDefs.min.json'), 'utf8'));
const col = defs.units.config.findIndex((k) => k === 'csCode_');
const table = defs.units.data.map((row) => row[col]);
const clinical = [
  'mcg', 'mEq', 'ea', 'TAB', 'drop', 'ml/hr', 'month', 'tbl', 'mg/dl', 'mmHg', 'mm[Hg]', '10*9/L', 'x10E9/L',
  '10^9/L', '/HPF', 'cells/uL', 'IU/L', 'U/L', 'mIU/mL', '%', '{ratio}', 'fL', 'pg', 'g/dL', 'mmol/L', 'umol/L',
  'ng/mL', 'ug/dL', 'kg', 'lb', '[lb_av]', 'cm', 'in', '[in_i]', 'Cel', 'degF', '[degF]', '/min', 'beats/min',
  '{beats}/min', 'sec', 'hr', 'h', 'd', 'day', 'wk', 'mo', 'a', 'yr', 'mL/min/1.73m2', 'mL/min/{1.73_m2}', 'kg/m2',
  '10*3/uL', 'thou/uL', '1', '{titer}', 'mosm/kg', 'mOsm/kg', 'meq/L', 'mEq/L', '[iU]/L', '[IU]/L', 'mg/24.h',
  'mg/(24.h)', 'g/24h', 'mL/h', 'L/min', 'cm[H2O]', 'kPa', '%{HbA1c}', 'mm/h', 'mm/hr', 'ppm', '[ppm]', 'm.s-2',
  's-1', '10*-3', 'KiBy', 'ohm', 'Ohm', '{score}', '{cells}/[HPF]', '[CFU]/mL', 'mg{FEU}/L', '[pH]', 'pH', '[drp]',
  'B[10.nV]', '[m/s2/Hz^(1/2)]', 'kmin', 'kh', 'g/kg ', ' mg', '/', '//', 'm//s', 'm..s', 'm.', 'm/', '(m', 'm)',
  '()', '{', '}', 'm{a{b}}', '[', ']', 'kgg', 'mmm', 'cd', 'cc', 'g%', '2m', '-', 'mg dL', '°C',
];
const units = [...new Set([...table, ...clinical])];

const records = units.map((u) => JSON.stringify({
  resourceType: 'Observation', status: 'final', code: { text: 'unit' },
  valueQuantity: { value: 1, system: 'http://unitsofmeasure.org', code: u },
})).join('\n') + '\n';
const run = spawnSync(phiward, ['validate', '--json', '--ndjson', '-'], { input: records, maxBuffer: 1 << 28 });
const ours = new Map();
for (const line of run.stdout.toString().split('\n').filter(Boolean)) {
  const o = JSON.parse(line);
  if (!o.record) continue;
  ours.set(units[o.record - 1], !(o.findings || []).some((f) => f.code === 'UCUM_CODE_INVALID'));
}

// A prefix before a non-metric atom: the code is not an atom itself, and some split of it into
// a prefix and an atom names a non-metric atom (ucum-lhc's table says which atoms are metric).
const metric = new Map();
const ucumCol = defs.units.config.findIndex((k) => k === 'source_');
const metricCol = defs.units.config.findIndex((k) => k === 'isMetric_');
const baseCol = defs.units.config.findIndex((k) => k === 'isBase_');
for (const row of defs.units.data) {
  if (row[ucumCol] === 'UCUM') metric.set(row[col], row[metricCol] || row[baseCol]);
}
const prefixes = defs.prefixes.data.map((p) => p[0]);
const prefixedNonMetric = (u) => u.split(/[./()]/).some((part) => {
  const sym = part.replace(/[+-]?\d+$/, '');
  return !metric.has(sym) && prefixes.some((p) => sym.startsWith(p) && metric.get(sym.slice(p.length)) === false);
});

let agree = 0;
let known = 0;
const other = [];
for (const u of units) {
  if (!ours.has(u)) {
    other.push(`${JSON.stringify(u)}: no phiward verdict`);
    continue;
  }
  const lhc = utils.validateUnitString(u, false).status === 'valid';
  const mine = ours.get(u);
  if (lhc === mine) {
    agree += 1;
  } else if (lhc && !mine && (u.trim() !== u || prefixedNonMetric(u))) {
    known += 1;
  } else {
    other.push(`${JSON.stringify(u)}: ucum-lhc ${lhc ? 'valid' : 'invalid'}, phiward ${mine ? 'valid' : 'invalid'}`);
  }
}
for (const o of other) console.log(`DIFF ${o}`);
console.log(`${agree} agree, ${known} known differences, ${other.length} other (of ${units.length} unit strings)`);
process.exit(other.length ? 1 : 0);
