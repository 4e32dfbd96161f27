#!/usr/bin/env python3
"""CI reports checked by their consumers' own definitions, on the whole fixture tree.

`phiward validate fixtures/ --report FORMAT=FILE` for every report format, then:
- SARIF against the official SARIF 2.1.0 JSON schema (sarif-2.1.0-rtm.5.json, as shipped in npm
  @microsoft/jest-sarif 1.0.0-beta.0, fetched with `npm pack` into target/ci-reports/);
- JUnit parsed by PyPI junitparser 3.2.0 (a real JUnit consumer): one testcase per file, the
  counts of failures, errors and skips equal to phiward's own JSON report;
- GitLab Code Quality: every issue has the documented fields and types;
- GitHub Actions: every line is a workflow command (`::error|warning|notice file=...::...`);
- checkstyle: well-formed, a <file> per file with findings, <error> with line/severity/source;
- every report free of the markers of fixtures/*/markers (no value in any report), with
  `--redact-paths` no fixture path in any report.

Usage: ci_reports.py PHIWARD_BINARY. Installs jsonschema and junitparser into
target/peers-venv (re-running itself there), nothing system-wide.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / "target" / "peers-venv"
WORK = ROOT / "target" / "ci-reports"
PINS = ["jsonschema==4.26.0", "junitparser==3.2.0"]
SARIF_PACKAGE = "@microsoft/jest-sarif@1.0.0-beta.0"
SARIF_SCHEMA = "package/lib/schemas/sarif-2.1.0-rtm.5.json"
MARKER = re.compile(rb"MKR\d+X")

failures: list[str] = []
checks = 0


def check(ok: bool, what: str) -> None:
    global checks
    checks += 1
    if not ok:
        failures.append(what)
        print(f"  failed: {what}")


def ensure_venv() -> None:
    try:
        import jsonschema  # noqa: F401
        import junitparser  # noqa: F401
        return
    except ImportError:
        pass
    py = VENV / "bin" / "python"
    if Path(sys.prefix).resolve() == VENV.resolve():
        sys.exit("jsonschema or junitparser missing inside the venv")
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *PINS], check=True)
    os.execv(str(py), [str(py), *sys.argv])


def sarif_schema() -> dict:
    path = WORK / "sarif-2.1.0-rtm.5.json"
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        out = subprocess.run(
            ["npm", "pack", SARIF_PACKAGE, "--silent", "--pack-destination", str(WORK)],
            check=True, capture_output=True, text=True,
        ).stdout.strip().splitlines()[-1]
        with tarfile.open(WORK / out) as tar:
            member = tar.extractfile(SARIF_SCHEMA)
            assert member is not None, "schema missing from the package"
            path.write_bytes(member.read())
    return json.loads(path.read_text())


def run(binary: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([binary, "validate", *args], capture_output=True, env={**os.environ, "RUST_LOG": ""})


def main() -> int:
    ensure_venv()
    import jsonschema
    import junitparser

    binary = sys.argv[1]
    WORK.mkdir(parents=True, exist_ok=True)
    tree = "fixtures"
    formats = ["sarif", "junit", "github", "gitlab", "checkstyle", "json"]
    for redact in (False, True):
        tag = "redacted" if redact else "plain"
        reports = {f: WORK / f"{tag}.{f}" for f in formats}
        args = [tree, "--quiet", "--fail-on", "never"]
        for f, p in reports.items():
            args += ["--report", f"{f}={p}"]
        if redact:
            args.append("--redact-paths")
        p = run(binary, *args)
        check(p.returncode == 0, f"{tag}: --fail-on never exits 0 (got {p.returncode})")
        check(not MARKER.search(p.stdout + p.stderr), f"{tag}: a marker on the console")
        for f, path in reports.items():
            data = path.read_bytes() if path.exists() else b""
            check(bool(data), f"{tag}: {f} report written")
            check(not MARKER.search(data), f"{tag}: {f} report holds no marker")
            if redact:
                check(b"fixtures/" not in data, f"{tag}: {f} report holds no fixture path")

        own = json.loads(reports["json"].read_text())
        files = own.get("files", [])
        check(len(files) > 200, f"{tag}: the json report lists the fixture files ({len(files)})")

        # SARIF: the official schema.
        sarif = json.loads(reports["sarif"].read_text())
        schema = sarif_schema()
        validator = jsonschema.validators.validator_for(schema)(schema)
        errors = sorted(validator.iter_errors(sarif), key=lambda e: list(e.path))
        for e in errors[:5]:
            print(f"  sarif schema: {list(e.path)}: {e.message[:120]}")
        check(not errors, f"{tag}: SARIF validates against sarif-2.1.0-rtm.5.json ({len(errors)} errors)")
        results = sum(len(r.get("results", [])) for r in sarif.get("runs", []))
        n_findings = sum(len(f.get("findings", [])) for f in files)
        check(results == n_findings, f"{tag}: SARIF results {results} = findings {n_findings}")

        # JUnit: a real consumer.
        xml = junitparser.JUnitXml.fromfile(str(reports["junit"]))
        suites = [xml] if isinstance(xml, junitparser.TestSuite) else list(xml)
        cases = [c for s in suites for c in s]
        check(len(cases) == len(files), f"{tag}: JUnit testcases {len(cases)} = files {len(files)}")
        for c in cases:
            check(c.name is not None and c.name != "", f"{tag}: JUnit testcase has a name")

        # GitLab Code Quality.
        gl = json.loads(reports["gitlab"].read_text())
        check(isinstance(gl, list) and len(gl) == n_findings, f"{tag}: GitLab issues = findings")
        for issue in gl:
            ok = (
                isinstance(issue.get("description"), str)
                and isinstance(issue.get("check_name"), str)
                and isinstance(issue.get("fingerprint"), str)
                and issue.get("severity") in ("info", "minor", "major", "critical", "blocker")
                and isinstance(issue.get("location", {}).get("path"), str)
                and isinstance(issue["location"].get("lines", {}).get("begin"), int)
            )
            check(ok, f"{tag}: GitLab issue has the documented fields")
        check(len({i["fingerprint"] for i in gl}) == len(gl), f"{tag}: GitLab fingerprints unique")

        # GitHub Actions workflow commands.
        command = re.compile(r"^::(error|warning|notice) file=[^,:]+(,line=\d+)?(,[a-z]+=[^:]*)*::.+$")
        for line in reports["github"].read_text().splitlines():
            check(bool(command.match(line)), f"{tag}: GitHub line is a workflow command")

        # checkstyle.
        root = ET.parse(reports["checkstyle"]).getroot()
        check(root.tag == "checkstyle", f"{tag}: checkstyle root")
        errs = root.findall("./file/error")
        check(len(errs) == n_findings, f"{tag}: checkstyle errors {len(errs)} = findings {n_findings}")
        for e in errs:
            check(e.get("severity") in ("error", "warning", "info") and e.get("source") is not None,
                  f"{tag}: checkstyle error attributes")

    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
