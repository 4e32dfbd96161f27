#!/usr/bin/env node
// node-x12 1.7.1's strict envelope check on each FILE: `new X12Parser(true).parse()` throws at the
// first envelope fault (ISA width, a segment outside its group or set, SE01/GE01/IEA01 counts,
// SE02/GE02/IEA02 control numbers). Prints one JSON line per file: {file, ok, kind}; kind is a
// class of its message, never the message (it quotes values).
// The package is resolved from $PHIWARD_BENCH_NODE or target/bench/peers/node (scripts/bench's prefix).
import { readFileSync } from 'node:fs';
import { peerRequire } from '../../scripts/bench_peers/_peerio.mjs';

const { X12Parser } = peerRequire('node-x12');
const KINDS = [
  [/\b(SE01|GE01|IEA01)\b/, 'count'],
  [/\b(SE02|GE02|IEA02)\b/, 'control'],
  [/ISA segment is not the correct length/, 'isa-width'],
  [/Missing (GS|ST) segment|outside of a (functional group|transaction)/, 'structure'],
  [/too short|at least one functional group/, 'not-x12'],
];
for (const file of process.argv.slice(2)) {
  let ok = true;
  let kind = '';
  try {
    new X12Parser(true).parse(readFileSync(file, 'latin1'));
  } catch (e) {
    ok = false;
    const msg = String(e && e.message ? e.message : e);
    kind = (KINDS.find(([re]) => re.test(msg)) || [null, 'other'])[1];
  }
  process.stdout.write(JSON.stringify({ file, ok, kind }) + '\n');
}
