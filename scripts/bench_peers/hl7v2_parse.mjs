#!/usr/bin/env node
// Peer driver: npm `hl7v2` (panates) HL7Message.parse() on every HL7 v2 message
// in FILE. The library parses against its version dictionaries (hl7v2-dictionary);
// problems it records on a message are counted as errors.
// Prints {"tool", "processed", "segments", "errors"} as one JSON line.
import { hl7Messages, importPeer, report } from './_peerio.mjs';

const { HL7Message } = await importPeer('hl7v2');
let n = 0;
let segments = 0;
let errors = 0;
for (const text of hl7Messages(process.argv[2])) {
  try {
    const msg = HL7Message.parse(text);
    segments += msg.segments.length;
  } catch {
    errors++;
  }
  n++;
}
report({ tool: 'hl7v2', processed: n, segments, errors });
