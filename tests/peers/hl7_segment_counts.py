#!/usr/bin/env python3
"""Cross-check phiward's HL7 v2 segment counts against python-hl7.

For every HL7 v2 file in DIR (recursively; *.md, *.json, *.py and dot-files
are ignored) this script

  1. splits the file into messages the way python-hl7 needs them:
     UTF-8 BOM removed; MLLP frames (0x0B ... 0x1C 0x0D) read with
     python-hl7's own MLLPStreamReader; CR, LF and CRLF all accepted as
     segment terminators (python-hl7 only splits on CR); FHS/BHS/BTS/FTS
     envelope segments taken apart from the messages the way
     hl7.parse_file does;
  2. decodes each message using its MSH-18 (8859/n -> iso8859-n,
     UNICODE UTF-8 -> utf-8, otherwise python-hl7's default utf-8),
     parses it with hl7.parse() and counts segments by id; envelope
     segments are parsed as python-hl7 does for batches (header + trailer
     parsed together) and counted too;
  3. runs `<phiward> inspect --json <file>`, which prints one JSON object
     per line ({"format":"hl7","segments":{...},...} or
     {"record":i,"format":"hl7","error":"CODE"}), and sums the "segments"
     maps over all lines;
  4. compares both totals.

Output: one line per file
    ok         <file> {totals}
    MISMATCH   <file> python-hl7={...} phiward={...} [phiward errors / exit code]
    peer-skip  <file> <why python-hl7 cannot read it> (phiward={...})
and a last line "N passed, M failed, K skipped" (K = peer-skips).
Exit status: 0 all compared files agree, 1 at least one mismatch,
2 phiward binary missing / bad usage.

Options:
  --ignore-batch-envelope   leave FHS/BHS/BTS/FTS out of both sides
  --manifest PATH           use fixtures/hl7v2/manifest.json expectations:
                            "parse_fails" files pass when phiward reports
                            an error record or exits non-zero; "invalid"
                            files must get an error record or a non-zero
                            warningCount (and, without an error, matching
                            segment counts); "valid" files are compared
                            as usual (an error record is a mismatch)
  --check-manifest PATH     no phiward needed: compare python-hl7's counts
                            with the manifest's "segments"/"messages"
                            (used to double-check the generated manifest)

Requirements: Python 3.11 and python-hl7 (PyPI package "hl7"), e.g.
    python3 -m venv target/peers-venv && target/peers-venv/bin/pip install hl7
    target/peers-venv/bin/python tests/peers/hl7_segment_counts.py fixtures/hl7v2/valid target/debug/phiward
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

try:
    import hl7  # python-hl7
except ImportError:  # pragma: no cover
    print("python-hl7 is not installed: pip install hl7 (into a venv)", file=sys.stderr)
    sys.exit(2)

BOM = b"\xef\xbb\xbf"
VT, FS, CR = b"\x0b", b"\x1c", b"\x0d"
ENVELOPE = {"FHS", "BHS", "BTS", "FTS"}
WARNINGS = "\0warnings"  # private key: cannot clash with a segment id
SKIP_SUFFIXES = {".md", ".json", ".py", ".pyc"}
# python-hl7 strips every whitespace character except CR around segments
_HL7_WS = b" \t\n\x0b\x0c\x1c\x1d\x1e\x1f"


class PeerSkip(Exception):
    """python-hl7 cannot read this input."""


# ---------------------------------------------------------------- splitting
def mllp_blocks(data: bytes) -> list[bytes]:
    """Read MLLP frames with python-hl7's MLLPStreamReader (strict: junk or a
    truncated frame raises, as it would on a live connection)."""
    try:
        from hl7.mllp.streams import MLLPStreamReader
    except ImportError:  # older python-hl7: same rules, by hand
        blocks = []
        rest = data
        while rest:
            end = rest.find(FS + CR)
            if end < 0:
                raise PeerSkip("MLLP: incomplete frame at end of input")
            blk = rest[: end + 2]
            if blk[:1] != VT:
                raise PeerSkip("MLLP: block does not begin with <VT>")
            blocks.append(blk[1:-2])
            rest = rest[end + 2:]
        return blocks

    async def read() -> list[bytes]:
        reader = MLLPStreamReader(limit=len(data) + 1024)
        reader.feed_data(data)
        reader.feed_eof()
        out = []
        while not reader.at_eof():
            out.append(await reader.readblock())
        return out

    try:
        return asyncio.run(read())
    except asyncio.IncompleteReadError:
        raise PeerSkip("MLLP: incomplete frame at end of input (python-hl7 IncompleteReadError)")
    except Exception as exc:  # InvalidBlockError and friends
        raise PeerSkip(f"MLLP: {type(exc).__name__}: {exc}")


def split_units(data: bytes) -> tuple[list[list[bytes]], list[list[bytes]]]:
    """Return (messages, envelopes); each a list of segment lines (bytes, no terminator).

    envelopes: one list per FHS (header + FTS) and per BHS (header + BTS).
    Mirrors hl7.parse_file's grouping and raises PeerSkip where python-hl7
    would raise or silently drop data.
    """
    if data.startswith(BOM):
        data = data[3:]
    if VT in data:
        blocks = mllp_blocks(data)
    else:
        blocks = [data]
    messages: list[list[bytes]] = []
    envelopes: list[list[bytes]] = []
    file_env: list[bytes] | None = None
    file_closed = False
    batch_env: list[bytes] | None = None
    current: list[bytes] | None = None
    for block in blocks:
        text = block.replace(b"\r\n", b"\r").replace(b"\n", b"\r")
        current = None  # a frame always starts a fresh message
        for raw in text.split(CR):
            line = raw.strip(_HL7_WS)
            if not line:
                continue
            sid = line[:3]
            if sid == b"FHS":
                if file_env is not None:
                    raise PeerSkip("python-hl7: File cannot have more than one FHS segment")
                file_env = [line]
                envelopes.append(file_env)
                current = None
            elif sid == b"FTS":
                if file_env is None or file_closed:
                    raise PeerSkip("FTS without FHS (python-hl7 silently drops it)")
                file_env.append(line)
                file_closed = True
                current = None
            elif sid == b"BHS":
                if batch_env is not None:
                    raise PeerSkip("python-hl7: Batch cannot have more than one BHS segment")
                batch_env = [line]
                envelopes.append(batch_env)
                current = None
            elif sid == b"BTS":
                if batch_env is None:
                    raise PeerSkip("BTS without BHS (python-hl7 silently drops it)")
                batch_env.append(line)
                batch_env = None
                current = None
            elif sid == b"MSH":
                current = [line]
                messages.append(current)
            else:
                if current is None:
                    raise PeerSkip(f"python-hl7: Segment received before message header {line[:20]!r}")
                current.append(line)
    if not messages and not envelopes:
        raise PeerSkip("no HL7 segments found")
    return messages, envelopes


# ---------------------------------------------------------------- decoding
def msh18_codec(msh_line: bytes) -> str | None:
    if len(msh_line) < 8:
        return None
    fs = msh_line[3:4]
    parts = msh_line.split(fs)
    if len(parts) <= 17:
        return None
    enc = parts[1]
    field = parts[17]
    if len(enc) >= 2:
        field = field.split(enc[1:2])[0]  # first repetition
    if len(enc) >= 1:
        field = field.split(enc[0:1])[0]  # first component
    cs = field.decode("ascii", "replace").strip().upper()
    if cs in ("UNICODE UTF-8", "UTF-8", "UTF8"):
        return "utf-8"
    m = re.fullmatch(r"8859/(\d{1,2})", cs)
    if m:
        return f"iso8859-{m.group(1)}"
    return None


def decode(lines: list[bytes], codec: str | None) -> str:
    raw = b"\r".join(lines)
    try:
        return raw.decode(codec or "utf-8")  # python-hl7's default is utf-8
    except (UnicodeDecodeError, LookupError) as exc:
        raise PeerSkip(f"cannot decode as {codec or 'utf-8 (python-hl7 default)'}: {exc}")


# ---------------------------------------------------------------- python-hl7
def count_parsed(text: str) -> Counter:
    try:
        msg = hl7.parse(text)
    except Exception as exc:
        raise PeerSkip(f"python-hl7: {type(exc).__name__}: {exc}")
    c: Counter = Counter()
    for seg in msg:
        c[str(seg[0])] += 1
    return c


def peer_counts(path: Path) -> tuple[int, Counter]:
    """(number of messages, segment totals) as python-hl7 sees the file."""
    data = path.read_bytes()
    messages, envelopes = split_units(data)
    totals: Counter = Counter()
    for lines in messages:
        totals.update(count_parsed(decode(lines, msh18_codec(lines[0]))))
    for lines in envelopes:
        # python-hl7 parses header + trailer together (see hl7.parser._create_batch)
        totals.update(count_parsed(decode(lines, None)))
    return len(messages), totals


# ---------------------------------------------------------------- phiward
def run_phiward(binary: str, path: Path, timeout: float) -> tuple[Counter, list[str], int, str | None]:
    """Returns (summed segments, error codes, exit code, problem-or-None).

    The summed "warningCount" of all lines is stored in totals under the
    key WARNINGS (removed again by the caller)."""
    try:
        proc = subprocess.run([binary, "inspect", "--json", str(path)], capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Counter(), [], -1, f"phiward timed out after {timeout}s"
    totals: Counter = Counter()
    errors: list[str] = []
    lines = [ln for ln in proc.stdout.decode("utf-8", "replace").splitlines() if ln.strip()]
    for ln in lines:
        try:
            rec = json.loads(ln)
        except json.JSONDecodeError:
            return totals, errors, proc.returncode, f"phiward printed a non-JSON line: {ln[:120]!r}"
        if not isinstance(rec, dict):
            return totals, errors, proc.returncode, f"phiward printed a non-object JSON line: {ln[:120]!r}"
        if "error" in rec:
            errors.append(f"record {rec.get('record', '?')}: {rec['error']}")
        try:
            totals[WARNINGS] += int(rec.get("warningCount") or 0)
        except (TypeError, ValueError):
            return totals, errors, proc.returncode, f"'warningCount' is not a number: {ln[:120]!r}"
        segs = rec.get("segments") or {}
        if not isinstance(segs, dict):
            return totals, errors, proc.returncode, f"'segments' is not an object: {ln[:120]!r}"
        for k, v in segs.items():
            totals[k] += int(v)
    if not lines and proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return totals, errors, proc.returncode, f"phiward exited {proc.returncode} with no output" + (f": {err[-1][:160]}" if err else "")
    return totals, errors, proc.returncode, None


def resolve_binary(arg: str) -> str | None:
    if os.sep in arg or arg.startswith("."):
        p = Path(arg)
        return str(p) if p.is_file() and os.access(p, os.X_OK) else None
    return shutil.which(arg)


# ---------------------------------------------------------------- helpers
def fmt(c: Counter) -> str:
    return json.dumps(dict(sorted((k, v) for k, v in c.items() if v)), separators=(",", ":"))


def drop_envelope(c: Counter) -> Counter:
    return Counter({k: v for k, v in c.items() if k not in ENVELOPE})


def collect_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.name.startswith(".") and p.suffix.lower() not in SKIP_SUFFIXES:
            out.append(p)
    return out


def load_manifest(path: Path) -> dict[str, dict]:
    entries = json.loads(path.read_text(encoding="utf-8"))
    base = path.resolve().parent
    return {str((base / e["file"]).resolve()): e for e in entries}


# ---------------------------------------------------------------- modes
def check_manifest(manifest_path: Path, ignore_env: bool) -> int:
    """Double-check manifest counts with python-hl7 (no phiward involved)."""
    passed = failed = skipped = 0
    for key, e in load_manifest(manifest_path).items():
        path = Path(key)
        want = Counter(e["segments"])
        try:
            n, got = peer_counts(path)
        except PeerSkip as why:
            if e["expect"] == "valid":
                print(f"MISMATCH   {e['file']} python-hl7 cannot read a file marked valid: {why}")
                failed += 1
            else:
                print(f"peer-skip  {e['file']} {why}")
                skipped += 1
            continue
        if ignore_env:
            want, got = drop_envelope(want), drop_envelope(got)
        if got == want and n == e["messages"]:
            print(f"ok         {e['file']} {fmt(got)}")
            passed += 1
        elif e["expect"] == "parse_fails":
            # python-hl7 is far more lenient than a validating parser; differences here are informational
            print(f"peer-skip  {e['file']} (expect=parse_fails; python-hl7 reads it differently) python-hl7={fmt(got)} manifest={fmt(want)}")
            skipped += 1
        else:
            print(f"MISMATCH   {e['file']} python-hl7={fmt(got)} messages={n} manifest={fmt(want)} messages={e['messages']}")
            failed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


def cross_check(root: Path, binary: str, manifest: dict[str, dict] | None, ignore_env: bool, timeout: float) -> int:
    files = collect_files(root)
    if not files:
        print(f"no input files under {root}", file=sys.stderr)
        return 2
    passed = failed = skipped = 0
    for path in files:
        name = str(path.relative_to(root)) if root.is_dir() else str(path)
        expect = manifest.get(str(path.resolve()), {}).get("expect") if manifest else None
        ph, errors, rc, problem = run_phiward(binary, path, timeout)
        warnings = ph.pop(WARNINGS, 0)
        if ignore_env:
            ph = drop_envelope(ph)
        if problem:
            print(f"MISMATCH   {name} {problem}")
            failed += 1
            continue
        if expect == "parse_fails":
            if errors or rc != 0:
                print(f"ok         {name} expected parse failure: {'; '.join(errors) or f'exit {rc}'}")
                passed += 1
            else:
                print(f"MISMATCH   {name} manifest expects a parse failure but phiward reported none: phiward={fmt(ph)}")
                failed += 1
            continue
        if expect == "invalid":
            if errors:
                print(f"ok         {name} expected problem reported as error: {'; '.join(errors)}")
                passed += 1
                continue
            if not warnings:
                print(f"MISMATCH   {name} manifest expects a reported problem but phiward gave no error and warningCount 0: phiward={fmt(ph)}")
                failed += 1
                continue
        try:
            _, py = peer_counts(path)
        except PeerSkip as why:
            print(f"peer-skip  {name} {why} (phiward={fmt(ph)}{'; errors: ' + '; '.join(errors) if errors else ''})")
            skipped += 1
            continue
        if ignore_env:
            py = drop_envelope(py)
        if py == ph and not errors:
            print(f"ok         {name} {fmt(py)}")
            passed += 1
        else:
            extra = []
            if errors:
                extra.append("phiward errors: " + "; ".join(errors))
            if rc != 0:
                extra.append(f"phiward exit {rc}")
            only = sorted(set(py) ^ set(ph)) + sorted(k for k in set(py) & set(ph) if py[k] != ph[k])
            if only:
                extra.append("differs on " + ",".join(only))
            print(f"MISMATCH   {name} python-hl7={fmt(py)} phiward={fmt(ph)}" + (" [" + " | ".join(extra) + "]" if extra else ""))
            failed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", type=Path, help="directory (or single file) of HL7 v2 inputs")
    ap.add_argument("phiward", nargs="?", help="path to the phiward binary")
    ap.add_argument("--manifest", type=Path, help="manifest.json whose 'parse_fails' entries must make phiward report an error")
    ap.add_argument("--check-manifest", type=Path, metavar="MANIFEST", help="compare python-hl7 counts with MANIFEST only (no phiward)")
    ap.add_argument("--ignore-batch-envelope", action="store_true", help="ignore FHS/BHS/BTS/FTS on both sides")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per phiward run (default 60)")
    args = ap.parse_args(argv)

    if args.check_manifest:
        return check_manifest(args.check_manifest, args.ignore_batch_envelope)
    if args.dir is None or args.phiward is None:
        ap.print_usage(sys.stderr)
        print("error: DIR and PHIWARD are required (or use --check-manifest)", file=sys.stderr)
        return 2
    binary = resolve_binary(args.phiward)
    if binary is None:
        print(f"phiward binary not found or not executable: {args.phiward} (build it first, e.g. cargo build)")
        return 2
    if not args.dir.exists():
        print(f"input not found: {args.dir}", file=sys.stderr)
        return 2
    manifest = load_manifest(args.manifest) if args.manifest else None
    return cross_check(args.dir, binary, manifest, args.ignore_batch_envelope, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
