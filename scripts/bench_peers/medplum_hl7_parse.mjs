#!/usr/bin/env node
// Peer driver: @medplum/core Hl7Message.parse() on every HL7 v2 message in FILE.
// Prints {"tool", "processed", "segments"} as one JSON line.
import { hl7Messages, peerRequire, report } from './_peerio.mjs';

const { Hl7Message } = peerRequire('@medplum/core');
let n = 0;
let segments = 0;
for (const text of hl7Messages(process.argv[2])) {
  const msg = Hl7Message.parse(text);
  segments += msg.segments.length;
  n++;
}
report({ tool: 'medplum', processed: n, segments });
