#!/usr/bin/env python3
"""Cross-check phiward's DICOM reader against pydicom: element count, tags and VRs per file.

    target/peers-venv/bin/python tests/peers/pydicom_compare.py DIR target/release/phiward

For every file under DIR (recursively; *.md, *.json, *.py ignored) this script reads it with
pydicom (`dcmread(force=True)`, file meta and dataset, sequences walked), and runs
`<phiward> parse --json <file>`, whose model is the PS3.18 JSON model (file meta elements
first); both sides become a sorted list of (path, tag, VR) where path is the chain of
sequence tags and 0-based item numbers. Pixel data's VR is compared as pydicom reports it
(OB or OW). Files pydicom cannot read must get a code from phiward (parse exit 65 or 66, or a
negative validate verdict, exit 1), never a crash (exit 70).

Output: one line per file (`ok`, `MISMATCH` with the first differences, `peer-fail` when pydicom
cannot read it and phiward gives a code) and a last line "N passed, M failed, K peer-fails".
Exit status: 0 no mismatch, 1 a mismatch, 2 usage.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def pydicom_elements(path: Path) -> list[tuple[str, str, str]] | None:
    import pydicom  # noqa: PLC0415

    try:
        ds = pydicom.dcmread(str(path), force=True)
    except Exception:  # noqa: BLE001 - any failure of the peer is a peer-fail
        return None
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
        return None
    return sorted(out)


def phiward_elements(path: Path, exe: str) -> tuple[list[tuple[str, str, str]] | None, int]:
    o = subprocess.run([exe, "parse", "--json", str(path)], capture_output=True, check=False)
    if o.returncode != 0:
        return None, o.returncode
    model = json.loads(o.stdout.splitlines()[0])["model"]
    out: list[tuple[str, str, str]] = []

    def walk(obj: dict, prefix: str) -> None:
        for tag, e in obj.items():
            out.append((prefix, tag, e["vr"]))
            if e["vr"] == "SQ":
                for n, item in enumerate(e.get("Value", [])):
                    walk(item, f"{prefix}{tag}[{n}].")

    walk(model, "")
    return sorted(out), 0


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    root, exe = Path(sys.argv[1]), sys.argv[2]
    passed = failed = peer = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix not in (".md", ".json", ".py")):
        ours, code = phiward_elements(path, exe)
        theirs = pydicom_elements(path)
        if theirs is None:
            if ours is not None:
                # phiward reads it; its verdict must then be negative.
                code = subprocess.run([exe, "validate", str(path)], capture_output=True, check=False).returncode
            if code in (1, 65, 66):
                peer += 1
                print(f"peer-fail  {path} (phiward validate or parse exit {code})")
            else:
                failed += 1
                print(f"MISMATCH   {path} pydicom cannot read it, phiward exit {code}")
            continue
        if ours is None:
            # A file phiward refuses: pydicom's reading of it is lenient (force=True) and holds
            # what it could read; phiward's refusal must be a code.
            ok = code in (65, 66)
            print(f"{'peer-only' if ok else 'MISMATCH'}  {path} phiward exit {code}, pydicom {len(theirs)} elements")
            peer += ok
            failed += not ok
            continue
        if ours == theirs:
            passed += 1
            print(f"ok         {path} {len(ours)} elements")
        else:
            failed += 1
            a, b = set(ours), set(theirs)
            print(f"MISMATCH   {path} phiward-only={sorted(a - b)[:5]} pydicom-only={sorted(b - a)[:5]}")
    print(f"{passed} passed, {failed} failed, {peer} peer-fails")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
