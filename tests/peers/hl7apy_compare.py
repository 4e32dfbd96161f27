#!/usr/bin/env python3
"""Compare phiward's HL7 v2 conformance verdicts with hl7apy's validator, fixture by fixture.

    target/gen-venv/bin/python tests/peers/hl7apy_compare.py [--phiward PATH] [--markdown]

For every HL7 v2 fixture (fixtures/hl7v2/{valid,invalid} and fixtures/hl7v2/conformance/
{valid,invalid}), each message is judged four ways:

* phiward `validate --json`, default (tolerant) mode and `--strict`: valid or not, findings;
* hl7apy (PyPI, the peer our tables are generated from) with VALIDATION_LEVEL.STRICT: the
  message is parsed strictly and then validated (`Validator.validate` with a report file, so
  that every error is counted, not only the first);
* hl7apy with VALIDATION_LEVEL.TOLERANT: the message is only parsed (hl7apy validates nothing
  in this mode); this stands for HAPI-like behaviour, a lenient parser that places unexpected
  segments and checks no usage or table (HAPI itself is not installed: its jars come from a
  registry this workplace does not reach).

Multi-message files (batches, MLLP streams, concatenated messages) are split into messages; the
batch envelope (FHS/BHS/BTS/FTS) is dropped, as hl7apy reads one message at a time.  A file is
valid for a tool when all its messages are.

The output is a table per fixture and a summary with the figures quoted in
docs/hl7v2-conformance.md.  It prints verdicts, counts and error categories only: hl7apy's
messages can quote values, so they are reduced to categories here.

The fixtures are synthetic (invented people).  Standard library plus hl7apy.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ["fixtures/hl7v2/valid", "fixtures/hl7v2/invalid", "fixtures/hl7v2/conformance/valid", "fixtures/hl7v2/conformance/invalid"]

try:
    from hl7apy.consts import VALIDATION_LEVEL
    from hl7apy.parser import parse_message
    from hl7apy.validation import Validator
except ImportError:  # pragma: no cover - the tool says what to install
    sys.exit("hl7apy is not installed: use target/gen-venv/bin/python (see tools/gen_hl7v2_tables.py)")


def messages(data: bytes) -> list[str]:
    """The messages of a file: MLLP frames unwrapped, envelopes dropped, split at MSH."""
    text = data.replace(b"\x0b", b"").replace(b"\x1c", b"").decode("latin-1")
    if text.startswith("\ufeff") or text.startswith("\xef\xbb\xbf"):
        text = text[3:] if text.startswith("\xef\xbb\xbf") else text[1:]
    lines = [l for l in re.split(r"\r\n|\r|\n", text) if l.strip()]
    out: list[list[str]] = []
    for line in lines:
        if line[:3] in ("FHS", "BHS", "BTS", "FTS"):
            continue
        if line.startswith("MSH"):
            out.append([line])
        elif out:
            out[-1].append(line)
    return ["\r".join(m) + "\r" for m in out]


CATEGORIES = [
    ("missing", re.compile(r"missing required|required child", re.I)),
    ("unexpected", re.compile(r"not allowed|unexpected|invalid child|unknown", re.I)),
    ("repetition", re.compile(r"too many|repetition|max", re.I)),
    ("length", re.compile(r"length", re.I)),
    ("table", re.compile(r"table", re.I)),
    ("datatype", re.compile(r"datatype|invalid|format|value", re.I)),
]


def category(text: str) -> str:
    for name, rx in CATEGORIES:
        if rx.search(text):
            return name
    return "other"


def hl7apy_strict(msg: str) -> tuple[bool, dict[str, int]]:
    """Strict parse, then full validation with a report file. (valid, error categories)"""
    cats: dict[str, int] = {}
    try:
        m = parse_message(msg, validation_level=VALIDATION_LEVEL.STRICT, find_groups=True)
    except Exception as e:  # noqa: BLE001 - any failure is a negative verdict
        cats[f"parse:{category(str(e))}"] = 1
        return False, cats
    with tempfile.NamedTemporaryFile("r+", suffix=".txt") as report:
        try:
            Validator.validate(m, report_file=report.name)
            ok = True
        except Exception:  # noqa: BLE001
            ok = False
        report.seek(0)
        for line in report.read().splitlines():
            if line.startswith("Error:"):
                c = category(line)
                cats[c] = cats.get(c, 0) + 1
    return ok, cats


def hl7apy_tolerant(msg: str) -> bool:
    try:
        parse_message(msg, validation_level=VALIDATION_LEVEL.TOLERANT, find_groups=True)
        return True
    except Exception:  # noqa: BLE001
        return False


def phiward(binary: str, path: Path, strict: bool) -> tuple[bool, int, list[str]]:
    args = [binary, "validate", "--json"] + (["--strict"] if strict else []) + [str(path)]
    p = subprocess.run(args, capture_output=True)
    codes: list[str] = []
    valid = p.returncode == 0
    for line in p.stdout.decode().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        codes += [f["code"] for f in rec.get("findings", []) if f["severity"] in ("error", "fatal")]
    return valid, p.returncode, codes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--phiward", default=str(ROOT / "target" / "release" / "phiward"))
    ap.add_argument("--markdown", action="store_true", help="print the per-fixture table as markdown")
    args = ap.parse_args()
    if not os.access(args.phiward, os.X_OK):
        sys.exit(f"no phiward binary at {args.phiward}: cargo build --release first")

    # The manifest's expectation where it has one (a warning-only file in invalid/ is valid).
    manifest = {}
    mpath = ROOT / "fixtures" / "hl7v2" / "manifest.json"
    if mpath.exists():
        for e in json.loads(mpath.read_text()):
            manifest[e["file"]] = "valid" if e.get("expect") == "valid" else "invalid"
    rows = []
    t_apy = 0.0
    n_msgs = 0
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).glob("*")):
            if path.suffix not in (".hl7", ".mllp"):
                continue
            expect = "valid" if "/valid" in folder else "invalid"
            expect = manifest.get(str(path.relative_to(ROOT / "fixtures" / "hl7v2")), expect)
            msgs = messages(path.read_bytes())
            pw_d, rc_d, err_d = phiward(args.phiward, path, False)
            pw_s, _, _ = phiward(args.phiward, path, True)
            t0 = time.perf_counter()
            if msgs:
                strict = [hl7apy_strict(m) for m in msgs]
                apy_s = all(ok for ok, _ in strict)
                cats: dict[str, int] = {}
                for _, c in strict:
                    for k, v in c.items():
                        cats[k] = cats.get(k, 0) + v
                apy_t = all(hl7apy_tolerant(m) for m in msgs)
            else:
                apy_s, apy_t, cats = False, False, {"no message": 1}
            t_apy += time.perf_counter() - t0
            n_msgs += len(msgs)
            rows.append({
                "file": str(path.relative_to(ROOT / "fixtures" / "hl7v2")),
                "expect": expect, "messages": len(msgs),
                "phiward": pw_d, "phiward_exit": rc_d, "phiward_strict": pw_s,
                "phiward_errors": sorted(set(err_d)),
                "hl7apy_strict": apy_s, "hl7apy_tolerant": apy_t, "hl7apy_categories": cats,
            })

    mark = lambda b: "valid" if b else "INVALID"  # noqa: E731
    if args.markdown:
        print("| fixture | expected | phiward | phiward --strict | hl7apy STRICT | hl7apy TOLERANT (parse) |")
        print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        cats = ", ".join(f"{k} {v}" for k, v in sorted(r["hl7apy_categories"].items()))
        if args.markdown:
            print(f"| `{r['file']}` | {r['expect']} | {mark(r['phiward'])} | {mark(r['phiward_strict'])} | "
                  f"{mark(r['hl7apy_strict'])} ({cats or '-'}) | {mark(r['hl7apy_tolerant'])} |")
        else:
            print(f"{r['file']:<62} {r['expect']:<8} phiward={mark(r['phiward']):<8} strict={mark(r['phiward_strict']):<8} "
                  f"hl7apy-strict={mark(r['hl7apy_strict']):<8} hl7apy-tolerant={mark(r['hl7apy_tolerant']):<8} {cats}")

    def agree(key: str, subset: list[dict]) -> str:
        ok = sum(1 for r in subset if r[key] == (r["expect"] == "valid"))
        return f"{ok}/{len(subset)}"

    groups = {
        "syntax fixtures (fixtures/hl7v2/{valid,invalid})": [r for r in rows if not r["file"].startswith("conformance/")],
        "conformance fixtures (fixtures/hl7v2/conformance)": [r for r in rows if r["file"].startswith("conformance/")],
        "all": rows,
    }
    print()
    print("Agreement with the expected verdict (the manifest's for fixtures/hl7v2, else the folder):")
    print("| corpus | files | phiward | phiward --strict | hl7apy STRICT | hl7apy TOLERANT |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, subset in groups.items():
        print(f"| {name} | {len(subset)} | {agree('phiward', subset)} | {agree('phiward_strict', subset)} | "
              f"{agree('hl7apy_strict', subset)} | {agree('hl7apy_tolerant', subset)} |")
    both = [r for r in rows if r["messages"]]
    same = sum(1 for r in both if r["phiward_strict"] == r["hl7apy_strict"])
    print()
    print(f"phiward --strict and hl7apy STRICT give the same verdict on {same}/{len(both)} files with messages.")
    print(f"hl7apy: {n_msgs} messages in {t_apy:.2f} s ({1000 * t_apy / max(n_msgs, 1):.1f} ms per message, both modes).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
