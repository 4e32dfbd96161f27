// Shared helpers for the Node peer drivers: locate the local npm prefix
// (target/bench/peers/node, or $PHIWARD_BENCH_NODE) and split inputs.
import { readFileSync, openSync, readSync, closeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
export const NODE_PREFIX = process.env.PHIWARD_BENCH_NODE || join(here, '..', '..', 'target', 'bench', 'peers', 'node');
export const peerRequire = createRequire(join(NODE_PREFIX, 'package.json'));

/** import() a package installed under the local prefix (works for ESM-only packages). */
export async function importPeer(name) {
  return import(pathToFileURL(peerRequire.resolve(name)).href);
}

const CHUNK = 1 << 22;

/** Yields Buffers delimited by `delim` (a Buffer), reading FILE in chunks. */
function* splitFile(path, delim) {
  const fd = openSync(path, 'r');
  try {
    let buf = Buffer.alloc(0);
    const chunk = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const n = readSync(fd, chunk, 0, CHUNK, null);
      if (n === 0) break;
      buf = buf.length ? Buffer.concat([buf, chunk.subarray(0, n)]) : Buffer.from(chunk.subarray(0, n));
      let start = 0;
      for (;;) {
        const end = buf.indexOf(delim, start);
        if (end < 0) break;
        yield buf.subarray(start, end);
        start = end + delim.length;
      }
      buf = buf.subarray(start);
    }
    if (buf.length) yield buf;
  } finally {
    closeSync(fd);
  }
}

const FS_CR = Buffer.from([0x1c, 0x0d]);

/** Yields each HL7 v2 message (string, CR-separated segments) in FILE: MLLP frames, or an ER7 file / batch. */
export function* hl7Messages(path) {
  const fd = openSync(path, 'r');
  const first = Buffer.alloc(1);
  readSync(fd, first, 0, 1, 0);
  closeSync(fd);
  if (first[0] === 0x0b) {
    for (const frame of splitFile(path, FS_CR)) {
      const vt = frame.indexOf(0x0b);
      const body = vt >= 0 ? frame.subarray(vt + 1) : frame;
      if (body.length === 0) continue;
      if (vt < 0 && body.toString('latin1').trim() === '') continue;
      yield body.toString('utf8');
    }
    return;
  }
  const text = readFileSync(path, 'utf8').replace(/\r\n|\n/g, '\r');
  const parts = text.split(/\r(?=MSH\|)/);
  for (const p of parts) {
    const m = p.replace(/^\r+|\r+$/g, '');
    if (m) yield m;
  }
}

/** Yields each FHIR resource (JSON text) in FILE: NDJSON lines, or the whole file. */
export function* fhirResources(path) {
  if (path.endsWith('.ndjson')) {
    for (const line of splitFile(path, Buffer.from([0x0a]))) {
      if (line.length && line.toString('latin1').trim() !== '') yield line.toString('utf8');
    }
  } else {
    yield readFileSync(path, 'utf8');
  }
}

export function report(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}
