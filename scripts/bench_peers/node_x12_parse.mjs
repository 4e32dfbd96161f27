#!/usr/bin/env node
// Peer driver: npm `node-x12` X12Parser(strict).parse() on FILE (one X12 file: an interchange,
// or several, which node-x12 returns as an X12FatInterchange). Its strict mode checks the
// envelope (ISA width, control numbers and counts of the trailers); it has no implementation
// guides. Prints {"tool", "processed" (transaction sets), "segments", "errors"} as one JSON line.
import { readFileSync } from 'node:fs';
import { peerRequire, report } from './_peerio.mjs';

const { X12Parser } = peerRequire('node-x12');
const text = readFileSync(process.argv[2], 'utf8');
let sets = 0;
let segments = 0;
let errors = 0;
let firstError;
try {
  const parsed = new X12Parser(true).parse(text);
  const interchanges = parsed.interchanges || [parsed]; // X12FatInterchange or X12Interchange
  for (const ic of interchanges) {
    segments += 2;
    for (const g of ic.functionalGroups) {
      segments += 2;
      for (const t of g.transactions) {
        sets++;
        segments += t.segments.length + 2; // ST and SE are kept as header/trailer
      }
    }
  }
} catch (e) {
  errors++;
  firstError = String(e && e.message ? e.message : e);
}
report({ tool: 'node-x12', processed: sets, segments, errors, ...(firstError ? { first_error: firstError } : {}) });
