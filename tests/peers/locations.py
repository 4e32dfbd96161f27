#!/usr/bin/env python3
"""Locations a CI can use, over public samples (issue 35's acceptance).

    python3 tests/peers/locations.py target/release/phiward [DIR ...]

Validates, in one `phiward validate DIR... --output-format json --fail-on never` run, the
fixtures, the 5,306 official R4 examples (target/r4-examples/package, fetched by
tests/peers/r4_examples.py) and the R4 files of the reference validator's test suite
(../shared/fhir-test-cases/validator) when present, plus any DIR given, and checks every finding:
- no location is cut short (no `...`, no empty location, none ending in `.` or `/`);
- no two findings of a file share a fingerprint, every fingerprint is 16 hex digits;
- every finding of a FHIR file (JSON or XML) has a line and a column, except the record-level
  failure of a stream record, which has its record's byte offset and kind instead;
- every failed or unsupported file's finding, and every failed record's, has a `kind`.
Prints the counts; exits 1 on any violation (the first 20 listed, value-free: path, code,
location). Python 3 standard library only.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEX16 = re.compile(r"^[0-9a-f]{16}$")
KINDS = {"unsupported", "undetected", "unparseable", "too_large", "framing", "failed"}


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    dirs = [ROOT / "fixtures"]
    examples = ROOT / "target" / "r4-examples" / "package"
    if examples.is_dir():
        dirs.append(examples)
    else:
        print("note: target/r4-examples/package absent (run tests/peers/r4_examples.py first)")
    suite = ROOT.parent / "shared" / "fhir-test-cases" / "validator"
    if suite.is_dir():
        dirs.append(suite)
    dirs += [Path(d) for d in sys.argv[2:]]
    cmd = [binary, "validate", *map(str, dirs), "--output-format", "json", "--fail-on", "never"]
    run = subprocess.run(cmd, capture_output=True, check=False)
    if run.returncode not in (0, 1):
        print(f"phiward exited {run.returncode}")
        return 1
    report = json.loads(run.stdout)
    problems: list[str] = []
    files = findings = fhir = 0
    for f in report["files"]:
        files += 1
        seen: set[str] = set()
        is_fhir = f.get("format") == "fhir"
        for x in f.get("findings", []):
            findings += 1
            where = f"{f['path']}: {x.get('code')} {x.get('location')}"
            loc = x.get("location", "")
            if not loc or "..." in loc or (loc != "-" and loc[-1] in "./"):
                problems.append(f"cut short: {where}")
            fp = x.get("fingerprint", "")
            if not HEX16.match(fp):
                problems.append(f"fingerprint not 16 hex digits: {where}")
            if fp in seen:
                problems.append(f"fingerprint shared: {where}")
            seen.add(fp)
            failure = "kind" in x
            if failure and x["kind"] not in KINDS:
                problems.append(f"unknown kind: {where}")
            if f["status"] in ("failed", "unsupported") and not failure:
                problems.append(f"failure without kind: {where}")
            if is_fhir:
                fhir += 1
                if failure:
                    if x.get("record") is not None and "offset" not in x:
                        problems.append(f"failed record without offset: {where}")
                elif "line" not in x or "column" not in x:
                    problems.append(f"FHIR finding without line and column: {where}")
    print(f"{files} files, {findings} findings ({fhir} FHIR): {len(problems)} problems")
    for p in problems[:20]:
        print("  " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
