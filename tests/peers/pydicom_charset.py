#!/usr/bin/env python3
"""Cross-check phiward's decoding of Specific Character Set text against pydicom's.

    target/peers-venv/bin/python tests/peers/pydicom_charset.py DIR PHIWARD [--expect FILE]

For every `chr*.dcm` under DIR (pydicom 3.0.2's `pydicom/data/charset_files`: single-byte
sets, UTF-8, ISO 2022 Japanese, Korean and Chinese, an item with its own character set), this
reads the file with pydicom (`dcmread`, sequences walked, values decoded with the character set
of their dataset) and runs `<phiward> parse --json <file>`; every PN, LO, SH, ST, LT, UC and UT
value of both is compared as text (a private element of an implicit VR dataset, UN for
phiward, text for pydicom's private dictionary, is counted apart): a PN by its three component groups (`Alphabetic`,
`Ideographic`, `Phonetic` joined by `=`, empty trailing groups left off), a multi-valued
element value by value (empty ones as ""), trailing spaces trimmed on both sides.

Prints one line per file (`ok n/n` or `DIFF`, with the tag path of each differing value, never
the value) and a last line with the share of values and files that agree. Exit 1 on a crash or
a difference; `--expect FILE` (JSON `{"differences": {"<file> <tag path>": "<reason>"}}`) lists
differences explained by the standard (pydicom's known deviations), which then pass, and a
listed one that no longer differs fails (the file must shrink). None is needed today: every
value agrees. Exit 2: usage.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import warnings
from pathlib import Path

TEXT_VRS = {"PN", "LO", "SH", "ST", "LT", "UC", "UT"}


def norm(s: str) -> str:
    return s.rstrip(" \0")


def pydicom_values(path: Path) -> dict[str, list[str]]:
    import pydicom  # noqa: PLC0415

    warnings.simplefilter("ignore")
    ds = pydicom.dcmread(str(path))
    out: dict[str, list[str]] = {}

    def walk(d, prefix: str) -> None:
        for el in d:
            tag = f"{el.tag:08X}"
            if el.VR == "SQ":
                for n, item in enumerate(el.value):
                    walk(item, f"{prefix}{tag}[{n}].")
                continue
            if el.VR not in TEXT_VRS or el.value is None or el.value == "":
                continue
            vals = list(el.value) if isinstance(el.value, pydicom.multival.MultiValue) else [el.value]
            texts = []
            for v in vals:
                if el.VR == "PN":
                    groups = [norm(g) for g in str(v).split("=")]
                    while groups and groups[-1] == "":
                        groups.pop()
                    texts.append("=".join(groups))
                else:
                    texts.append(norm(str(v)))
            out[prefix + tag] = texts

    walk(ds.file_meta, "")
    walk(ds, "")
    return out


def phiward_values(path: Path, phiward: str) -> dict[str, list[str]] | None:
    r = subprocess.run([phiward, "parse", "--json", str(path)], capture_output=True, check=False)
    if r.returncode not in (0, 1):
        return None
    model = json.loads(r.stdout)
    data = model["model"]
    out: dict[str, list[str]] = {}

    def walk(d: dict, prefix: str) -> None:
        for tag, el in d.items():
            vr = el.get("vr")
            if vr == "SQ":
                for n, item in enumerate(el.get("Value", [])):
                    walk(item, f"{prefix}{tag}[{n}].")
                continue
            if vr not in TEXT_VRS or "Value" not in el:
                continue
            texts = []
            for v in el["Value"]:
                if v is None:
                    texts.append("")
                elif vr == "PN":
                    groups = [norm(v.get(k, "")) for k in ("Alphabetic", "Ideographic", "Phonetic")]
                    while groups and groups[-1] == "":
                        groups.pop()
                    texts.append("=".join(groups))
                else:
                    texts.append(norm(v))
            out[prefix + tag] = texts

    walk(data, "")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("phiward")
    ap.add_argument("--expect")
    a = ap.parse_args()
    files = sorted(Path(a.dir).rglob("chr*.dcm"))
    if not files:
        print("no chr*.dcm files", file=sys.stderr)
        return 2
    expected: dict[str, str] = {}
    if a.expect:
        expected = json.loads(Path(a.expect).read_text(encoding="utf-8"))["differences"]
    seen: set[str] = set()
    values = agree = files_ok = apart = 0
    failed = False
    for f in files:
        peer = pydicom_values(f)
        ours = phiward_values(f, a.phiward)
        if ours is None:
            print(f"{f.name}: CRASH")
            failed = True
            continue
        diffs = []
        # A private element of an implicit VR dataset is UN for phiward (PS3.5 6.2.2: its VR is
        # not known without the creator's dictionary) and text for pydicom (its private
        # dictionary): not a decoding question, counted apart (pydicom_compare.py checks VRs).
        private_un = sorted(k for k in set(peer) - set(ours) if int(k.split(".")[-1][:4], 16) % 2 == 1)
        apart += len(private_un)
        for key in sorted((set(peer) | set(ours)) - set(private_un)):
            values += 1
            if peer.get(key) == ours.get(key):
                agree += 1
            else:
                diffs.append(key)
        for key in diffs:
            name = f"{f.name} {key}"
            seen.add(name)
            why = expected.get(name)
            print(f"{f.name}: DIFF {key}" + (f" (expected: {why})" if why else " (UNEXPECTED)"))
            if not why:
                failed = True
        if not diffs:
            files_ok += 1
            n = len(peer) - len(private_un)
            print(f"{f.name}: ok {n}/{n}" + (f" ({len(private_un)} private implicit VR elements UN)" if private_un else ""))
    stale = sorted(set(expected) - seen)
    for name in stale:
        print(f"{name}: listed as a difference, now agrees (update {a.expect})")
        failed = True
    print(
        f"charset agreement: {agree}/{values} text values ({100.0 * agree / max(values, 1):.1f}%), "
        f"{files_ok}/{len(files)} files identical ({apart} private elements of implicit VR datasets apart: UN for phiward)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
