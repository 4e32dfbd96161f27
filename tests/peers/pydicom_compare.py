#!/usr/bin/env python3
"""Cross-check phiward's DICOM reader against pydicom: element count, tags and VRs per file.

    target/peers-venv/bin/python tests/peers/pydicom_compare.py DIR PHIWARD
        [--public] [--expect FILE | --write-expect FILE]

For every file under DIR (recursively; *.md, *.json, *.py ignored) this script reads it with
pydicom 3.0.2 (`dcmread`, file meta and dataset, sequences walked; its default settings:
a UN of a known standard tag takes the dictionary's VR, as phiward does), and runs
`<phiward> parse --json <file>`, whose model is the PS3.18 JSON model (file meta elements
first); both sides become a sorted list of (path, tag, VR) where path is the chain of
sequence tags and 0-based item numbers. Pixel data's VR is compared as pydicom reports it
(OB or OW).

Each file gets one verdict:
- `ok`: the same (path, tag, VR) lists;
- `MISMATCH`: both read it, the lists differ (the first differences are printed);
- `peer-fail`: pydicom cannot read it (even with force=True), phiward gives a code (parse
  exit 65 or 66, or a negative validate verdict, exit 1);
- `not-dicom`: pydicom reads it only with force=True (no DICM, no dataset it recognises) and
  phiward refuses it with a code (`CLI_FORMAT_UNDETECTED`, exit 65/66): a text file, a dump,
  a gzip;
- `ok-break`: a file broken mid-way (truncated, a lying length): phiward's `parse` lists the
  elements read completely before the break and names the break (a fatal finding, exit 1);
  pydicom (lenient) has the same elements, and also what it kept of the element at the break
  (a value cut short, the elements of an item whose length runs past its sequence's), which
  phiward's finding names by its tag path. Counted as agreeing;
- `peer-only`: pydicom (lenient) reads a broken file on past the break, or reads a file
  phiward refuses with a code;
- `CRASH`: phiward exits otherwise (70, a panic) - always a failure.

`--public` (pydicom's own test files, `pydicom/data/test_files` of the wheel) prints the
share of files that agree, of the files that are DICOM ((`ok` + `ok-break`) / (`ok` +
`ok-break` + `MISMATCH` + `peer-only`)). `--expect FILE` (tests/peers/pydicom_public_expected.json) exits 1 when a
file's verdict differs from the recorded one (a ratchet: a new mismatch or a fixed one both
need the file updated with `--write-expect`). Without `--expect`: exit 1 on any MISMATCH or
CRASH. Exit 2: usage.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import warnings
from pathlib import Path


def pydicom_elements(path: Path) -> tuple[list[tuple[str, str, str]] | None, bool]:
    """(elements, strict): strict is True when pydicom reads it without force."""
    import pydicom  # noqa: PLC0415

    warnings.simplefilter("ignore")
    strict = True
    try:
        ds = pydicom.dcmread(str(path))
    except Exception:  # noqa: BLE001 - any failure of the peer
        strict = False
        try:
            ds = pydicom.dcmread(str(path), force=True)
        except Exception:  # noqa: BLE001
            return None, False
    out: list[tuple[str, str, str]] = []

    def walk(d, prefix: str) -> None:
        for elem in d:
            tag = f"{elem.tag:08X}"
            vr = str(elem.VR)
            if "or" in vr:
                vr = vr.split(" or ")[0]
            out.append((prefix, tag, vr))
            if elem.VR == "SQ":
                for n, item in enumerate(elem.value):
                    walk(item, f"{prefix}{tag}[{n}].")

    try:
        walk(ds.file_meta, "")
        walk(ds, "")
    except Exception:  # noqa: BLE001
        return None, strict
    return sorted(out), strict


def break_path(location: str) -> tuple[str, str]:
    """(sequence path, tag) of a fatal finding's location, in this script's form:
    `(300A,00B0)[1].(300A,012C)/offset:2092` -> (`300A00B0[0].`, `300A012C`). An item's own
    header (`(0004,1220).(FFFE,E000)`) is the next item of its sequence: (`00041220[`, ``),
    which prefixes every item's path of that sequence."""
    steps = location.split("/offset:", 1)[0].split(".")
    prefix = ""
    for step in steps[:-1]:
        tag = step[1:5] + step[6:10]
        item = step.split("[", 1)[1].rstrip("]") if "[" in step else None
        prefix += f"{tag}[{int(item) - 1}]." if item else f"{tag}["
    last = steps[-1]
    tag = last[1:5] + last[6:10]
    if tag == "FFFEE000":
        return prefix, ""
    return prefix, tag


def phiward_elements(path: Path, exe: str) -> tuple[list[tuple[str, str, str]] | None, int, str, tuple[str, str] | None]:
    """(elements, exit code, cause, break): a file broken mid-way is parsed up to the break
    (exit 1): its elements are those read completely, `break` the fatal finding's place."""
    o = subprocess.run([exe, "parse", "--json", str(path)], capture_output=True, check=False)
    if o.returncode not in (0, 1) or not o.stdout:
        # The code of the failure (stderr: `phiward: CODE: ... (CAUSE at LOCATION)`), value-free.
        err = o.stderr.decode("utf-8", "replace")
        cause = err.split("(", 1)[1].split(" ", 1)[0] if "(" in err else err.split(":")[1].strip() if ":" in err else ""
        return None, o.returncode, cause, None
    parsed = json.loads(o.stdout.splitlines()[0])
    model = parsed["model"]
    fatal = [f for f in parsed.get("warnings", []) if f.get("severity") == "fatal"]
    where = break_path(fatal[0]["location"]) if fatal else None
    cause = fatal[0]["code"] if fatal else ""
    out: list[tuple[str, str, str]] = []

    def walk(obj: dict, prefix: str) -> None:
        for tag, e in obj.items():
            out.append((prefix, tag, e["vr"]))
            if e["vr"] == "SQ":
                for n, item in enumerate(e.get("Value", [])):
                    walk(item, f"{prefix}{tag}[{n}].")

    walk(model, "")
    return sorted(out), o.returncode, cause, where


def verdict(path: Path, exe: str) -> tuple[str, str]:
    ours, code, cause, where = phiward_elements(path, exe)
    theirs, strict = pydicom_elements(path)
    if code not in (0, 1, 65, 66):
        return "CRASH", f"phiward exit {code}"
    if theirs is None:
        if ours is not None:
            # phiward reads it; its verdict must then be negative.
            code = subprocess.run([exe, "validate", str(path)], capture_output=True, check=False).returncode
        if code in (1, 65, 66):
            return "peer-fail", f"phiward exit {code} {cause}"
        return "MISMATCH", f"pydicom cannot read it, phiward exit {code}"
    if ours is None:
        if code not in (65, 66):
            return "CRASH", f"phiward exit {code}"
        if not strict and cause == "CLI_FORMAT_UNDETECTED":
            return "not-dicom", cause
        # A file phiward refuses: pydicom's reading of it is lenient and holds what it could.
        return "peer-only", f"phiward {cause}, pydicom {len(theirs)} elements"
    if ours == theirs:
        return "ok", f"{len(ours)} elements" + (f", {cause} at the end" if where else "")
    a, b = set(ours), set(theirs)
    if where is not None and not a - b:
        # Broken mid-way: phiward lists the elements read completely and names the break (its
        # fatal finding's tag path); pydicom keeps what it could of the element at the break
        # (a value cut short, an item whose length runs past its sequence's). The file agrees
        # when every element pydicom has and phiward's model has not is that element or under it.
        prefix, tag = where
        at_break = [e for e in b - a if (e[0] == prefix and e[1] == tag) or (e[0].startswith(prefix + tag) if tag else e[0].startswith(prefix))]
        if len(at_break) == len(b - a):
            return "ok-break", f"{len(ours)} elements and {cause}; pydicom also {len(at_break)} at the break"
        # pydicom reads on past the break (it trusts the enclosing length less than phiward).
        return "peer-only", f"phiward {len(ours)} elements and {cause}, pydicom {len(b - a)} more past the break"
    return "MISMATCH", f"phiward-only={sorted(a - b)[:5]} pydicom-only={sorted(b - a)[:5]}"


def main() -> int:
    ap = argparse.ArgumentParser(add_help=True)
    ap.add_argument("dir")
    ap.add_argument("phiward")
    ap.add_argument("--public", action="store_true")
    ap.add_argument("--expect")
    ap.add_argument("--write-expect")
    args = ap.parse_args()
    root = Path(args.dir)
    results: dict[str, str] = {}
    counts: dict[str, int] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix not in (".md", ".json", ".py")):
        v, detail = verdict(path, args.phiward)
        name = path.relative_to(root).as_posix()
        results[name] = v
        counts[v] = counts.get(v, 0) + 1
        print(f"{v:<10} {name} {detail}")
    if args.write_expect:
        Path(args.write_expect).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    summary = ", ".join(
        f"{counts.get(k, 0)} {k}" for k in ("ok", "ok-break", "MISMATCH", "peer-only", "peer-fail", "not-dicom", "CRASH")
    )
    if args.public:
        agree = counts.get("ok", 0) + counts.get("ok-break", 0)
        dicom = agree + counts.get("MISMATCH", 0) + counts.get("peer-only", 0)
        share = 100.0 * agree / dicom if dicom else 0.0
        summary += f"; agreement {agree}/{dicom} = {share:.1f}% of the DICOM files"
    if args.expect:
        expected = json.loads(Path(args.expect).read_text())
        changed = [n for n in sorted(set(expected) | set(results)) if expected.get(n) != results.get(n)]
        for n in changed:
            print(f"CHANGED    {n}: expected {expected.get(n)}, got {results.get(n)}")
        print(f"{summary}; {len(changed)} differ from {args.expect}")
        return 1 if changed or counts.get("CRASH") else 0
    print(summary)
    return 1 if counts.get("MISMATCH") or counts.get("CRASH") else 0


if __name__ == "__main__":
    sys.exit(main())
