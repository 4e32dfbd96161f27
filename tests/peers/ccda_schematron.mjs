// The schematron side of tests/peers/ccda_schematron.py: npm cda-schematron-validator (pinned,
// installed into target/schematron) running a schematron over C-CDA documents.
//
//   node tests/peers/ccda_schematron.mjs MODULES_DIR SCHEMATRON RESOURCE_DIR FILE...
//
// The schematron map is parsed once; the rule contexts' cache is cleared before each file.
// Prints one JSON line per file: {"file", "ms", "errors": [[patternId, ruleId, assertionId,
// path]...], "ignored": N, "crash"}. The validator's descriptions and XML snippets quote the
// document: they are never printed; the path is element names and indexes.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [modules, schematronPath, resourceDir, ...files] = process.argv.slice(2);
const require = createRequire(path.resolve(modules, "package.json"));
const validator = require("cda-schematron-validator");
const { DOMParser } = require("@xmldom/xmldom");

const quiet = { warning() {}, error() {}, fatalError() {} };
const sch = new DOMParser({ errorHandler: quiet }).parseFromString(fs.readFileSync(schematronPath, "utf8"));
const map = validator.parseSchematron(sch);
for (const file of files) {
  const out = { file, ms: 0, errors: [], ignored: 0, crash: null };
  const t0 = process.hrtime.bigint();
  try {
    const xml = fs.readFileSync(file, "utf8");
    // The validator caches each rule context's selected nodes across calls, whatever the
    // document: without this, a document gets the findings of the first one validated.
    validator.clearCache();
    const r = validator.validate(xml, null, {
      parsedSchematronMap: map,
      resourceDir: resourceDir + path.sep,
      includeWarnings: false,
    });
    for (const e of r.errors || []) {
      out.errors.push([e.patternId ?? null, e.ruleId ?? null, e.assertionId ?? null, e.path ?? null]);
    }
    out.ignored = (r.ignored || []).length;
  } catch (err) {
    out.crash = err && err.name ? String(err.name) : "error";
  }
  out.ms = Number(process.hrtime.bigint() - t0) / 1e6;
  process.stdout.write(JSON.stringify(out) + "\n");
}
