#!/usr/bin/env python3
"""Generate phiward's X12 implementation-guide tables.

Reads the machine-readable implementation guides that PyPI ``pyx12==4.0.0`` ships (BSD
licence): ``pyx12/map/maps.xml`` (which map serves which GS08 version and GS01 code),
the transaction maps (``837.5010.X222.A1.xml`` ...), ``dataele.xml`` (data types and lengths)
and ``codes.xml`` (the external code lists), and writes ``src/formats/x12/tables.rs``: static,
sorted Rust tables decoded by ``src/formats/x12/guide.rs``, and
``src/formats/x12/PROVENANCE.md`` (the package version, the wheel's sha256 and the sha256 of
every map read).

Install the package under target/ (never system-wide), then run the generator with that
interpreter:

    python3 -m venv target/gen-x12-venv
    target/gen-x12-venv/bin/python -m pip install --no-deps pyx12==4.0.0
    target/gen-x12-venv/bin/python tools/gen_x12_tables.py

What is taken from a map: the loops of the transaction set (ST_LOOP; the envelope loops and the
`wrapper` loops HEADER/DETAIL/FOOTER are not loops of the guide and are flattened), each loop's
usage and repeat, its segments in order with usage, max use and syntax rules (P, R, C, E, L),
each element's usage, data element number (type, minimum and maximum length from dataele.xml),
repeat, and code list (inline, or external from codes.xml), and composites with their
components. Python 3.11, standard library plus the installed pyx12's data files. Deterministic:
the same package gives the same bytes.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "src" / "formats" / "x12" / "tables.rs"
PROVENANCE = REPO / "src" / "formats" / "x12" / "PROVENANCE.md"
WHEEL = REPO / "target" / "gen-dl" / "pyx12-4.0.0-py3-none-any.whl"
PIN = "pyx12==4.0.0"

# Maps that maps.xml does not list but that the package ships (277 claim status response).
EXTRA = [("00501", "005010X212", "HN", "277", "277.5010.X212.xml")]

USAGE = {"R": "Ur", "S": "Us", "N": "Un"}
TYPES = {"AN": "AN", "ID": "ID", "DT": "DT", "TM": "TM", "R": "R", "B": "B", "N": "N0"}
for i in range(10):
    TYPES[f"N{i}"] = f"N{i}"
RULES = "PRCEL"
UNBOUNDED = 0xFFFFFFFF


def map_dir() -> Path:
    import pyx12  # noqa: PLC0415

    return Path(pyx12.__file__).resolve().parent / "map"


def text(node, tag: str, default: str = "") -> str:
    c = node.find(tag)
    return (c.text or "").strip() if c is not None and c.text else default


def repeat(s: str) -> int:
    s = s.strip()
    if not s or s.startswith(">"):
        return UNBOUNDED
    return int(s)


class Tables:
    def __init__(self, dataele: dict[str, tuple[str, int, int]], external: dict[str, list[str]]):
        self.dataele = dataele
        self.external = external
        self.codes: list[str] = []
        self.code_lists: dict[tuple[str, ...], tuple[int, int]] = {}
        self.elements: list[tuple] = []
        self.element_runs: dict[tuple, int] = {}
        self.rules: list[tuple[str, tuple[int, ...]]] = []
        self.rule_runs: dict[tuple, int] = {}
        self.segments: list[tuple] = []
        self.segment_index: dict[tuple, int] = {}
        self.loops: list[tuple] = []
        self.nodes: list[tuple[str, int]] = []
        self.guides: list[tuple] = []
        self.segment_ids: set[str] = {"ISA", "IEA", "GS", "GE", "ST", "SE", "TA1"}

    def code_list(self, codes: list[str]) -> tuple[int, int]:
        key = tuple(sorted(set(codes)))
        if not key:
            return (0, 0)
        if key not in self.code_lists:
            self.code_lists[key] = (len(self.codes), len(key))
            self.codes.extend(key)
        return self.code_lists[key]

    def codes_of(self, el) -> list[str]:
        vc = el.find("valid_codes")
        if vc is None:
            return []
        ext = vc.get("external")
        if ext:
            return self.external.get(ext, [])
        return [(c.text or "").strip() for c in vc.findall("code") if (c.text or "").strip()]

    def element(self, el) -> tuple:
        num = text(el, "data_ele")
        ty, mn, mx = self.dataele.get(num, ("AN", 1, 9999))
        codes = self.code_list(self.codes_of(el))
        return (USAGE.get(text(el, "usage"), "Us"), TYPES.get(ty, "AN"), mn, mx, codes, (0, 0),
                min(repeat(text(el, "repeat", "1")), 0xFFFF))

    def run(self, items: list[tuple]) -> tuple[int, int]:
        key = tuple(items)
        if not key:
            return (0, 0)
        if key not in self.element_runs:
            self.element_runs[key] = len(self.elements)
            self.elements.extend(key)
        return (self.element_runs[key], len(key))

    def segment(self, seg) -> int:
        sid = seg.get("xid")
        self.segment_ids.add(sid)
        elems: list[tuple] = []
        seqs: list[int] = []
        for child in seg:
            if child.tag == "element":
                elems.append(self.element(child))
                seqs.append(int(text(child, "seq", "0") or 0))
            elif child.tag == "composite":
                comps = [self.element(c) for c in child.findall("element")]
                crun = self.run(comps)
                usage = USAGE.get(text(child, "usage"), "Us")
                elems.append((usage, "C", 0, 0, (0, 0), crun, min(repeat(text(child, "repeat", "1")), 0xFFFF)))
                seqs.append(int(text(child, "seq", "0") or 0))
        # Elements by their sequence number (gaps filled with not-used elements).
        by_seq: dict[int, tuple] = {}
        for s, e in zip(seqs, elems):
            by_seq[s] = e
        n = max(by_seq) if by_seq else 0
        ordered = [by_seq.get(i, ("Un", "AN", 0, 9999, (0, 0), (0, 0), 1)) for i in range(1, n + 1)]
        erun = self.run(ordered)
        rules = []
        for r in seg.findall("syntax"):
            r = (r.text or "").strip()
            if len(r) >= 5 and r[0] in RULES and r[1:].isdigit() and len(r[1:]) % 2 == 0:
                rules.append((r[0], tuple(int(r[i:i + 2]) for i in range(1, len(r), 2))))
        key = tuple(rules)
        if key and key not in self.rule_runs:
            self.rule_runs[key] = len(self.rules)
            self.rules.extend(key)
        rrun = (self.rule_runs[key], len(key)) if key else (0, 0)
        # The keys that tell this segment from another with the same id (pyx12's is_match):
        # element 01 (or its first component) with a code list, and HL03.
        keys = []
        if ordered:
            first = ordered[0]
            if first[1] == "ID" and first[0] == "Ur" and first[4][1] > 0 and not self._external(seg, 0):
                keys.append((1, 0, first[4]))
            elif first[1] == "C" and first[5][1] > 0:
                comp = self.elements[first[5][0]]
                if comp[1] == "ID" and comp[0] == "Ur" and comp[4][1] > 0:
                    keys.append((1, 1, comp[4]))
        if sid == "HL" and len(ordered) >= 3 and ordered[2][4][1] > 0:
            keys.append((3, 0, ordered[2][4]))
        while len(keys) < 2:
            keys.append((0, 0, (0, 0)))
        row = (sid, USAGE.get(text(seg, "usage"), "Us"), repeat(text(seg, "max_use", ">1")), erun, rrun,
               tuple(keys))
        if row not in self.segment_index:
            self.segment_index[row] = len(self.segments)
            self.segments.append(row)
        return self.segment_index[row]

    @staticmethod
    def _external(seg, i: int) -> bool:
        children = [c for c in seg if c.tag in ("element", "composite")]
        if i >= len(children):
            return False
        vc = children[i].find("valid_codes")
        return vc is not None and vc.get("external") is not None

    def loop(self, lp, parent_path: str, root: bool = False) -> int:
        """Adds a loop (its children flattened through wrappers); returns its index."""
        lid = "" if root else lp.get("xid")
        children: list = []

        def flatten(node):
            for c in node:
                if c.tag == "segment":
                    children.append(c)
                elif c.tag == "loop":
                    if c.get("type") == "wrapper":
                        flatten(c)
                    else:
                        children.append(c)

        flatten(lp)
        first = next((c for c in children if c.tag == "segment"), None)
        starts_hl = children and children[0].tag == "segment" and children[0].get("xid") == "HL"
        path = "" if root else (lid if (starts_hl or not parent_path) else f"{parent_path}/{lid}")
        index = len(self.loops)
        self.loops.append(None)  # filled below
        nodes: list[tuple[str, int]] = []
        for c in children:
            if c.tag == "segment":
                nodes.append(("S", self.segment(c)))
            else:
                nodes.append(("L", self.loop(c, path)))
        start = len(self.nodes)
        self.nodes.extend(nodes)
        usage = "Ur" if root else USAGE.get(text(lp, "usage"), "Us")
        rep = 1 if root else repeat(text(lp, "repeat", ">1"))
        self.loops[index] = (lid, path, usage, rep, start, len(nodes))
        _ = first
        return index

    def guide(self, version: str, fic: str, set_id: str, abbr: str, path: Path) -> None:
        root = ET.parse(path).getroot()
        st = None
        for lp in root.iter("loop"):
            if lp.get("xid") == "ST_LOOP":
                st = lp
                break
        if st is None:
            raise SystemExit(f"{path.name}: no ST_LOOP")
        idx = self.loop(st, "", root=True)
        self.guides.append((set_id, version, fic, abbr, idx))


def rust_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main() -> int:
    d = map_dir()
    version = importlib.metadata.version("pyx12")
    if f"pyx12=={version}" != PIN:
        raise SystemExit(f"pyx12 {version} is installed; the tables are pinned to {PIN}")
    dataele: dict[str, tuple[str, int, int]] = {}
    for e in ET.parse(d / "dataele.xml").getroot():
        dataele[e.get("ele_num")] = (e.get("data_type"), int(e.get("min_len")), int(e.get("max_len")))
    external: dict[str, list[str]] = {}
    for cs in ET.parse(d / "codes.xml").getroot().findall("codeset"):
        cid = text(cs, "id")
        codes = []
        for v in cs.findall("version"):
            codes.extend((c.text or "").strip() for c in v.findall("code"))
        external[cid] = sorted({c for c in codes if c})
    entries = []
    for ver in ET.parse(d / "maps.xml").getroot().findall("version"):
        icvn = ver.get("icvn")
        for m in ver.findall("map"):
            if m.get("abbr") == "X12" or not m.get("vriic"):
                continue
            entries.append((icvn, m.get("vriic"), m.get("fic"), m.get("abbr"), (m.text or "").strip()))
    entries.extend(EXTRA)
    t = Tables(dataele, external)
    files: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    for icvn, vriic, fic, abbr, fname in sorted(entries, key=lambda e: (e[1], e[3])):
        path = d / fname
        set_id = ET.parse(path).getroot().get("xid")[:3]
        if (vriic, set_id) in seen:
            # 278 (two maps for one version) and 997 (one map for many): the first one.
            continue
        seen.add((vriic, set_id))
        files[fname] = hashlib.sha256(path.read_bytes()).hexdigest()
        t.guide(vriic, fic, set_id, abbr, path)
    for name in ("maps.xml", "dataele.xml", "codes.xml"):
        files[name] = hashlib.sha256((d / name).read_bytes()).hexdigest()

    out: list[str] = []
    w = out.append
    w(f"//! The X12 implementation-guide tables, @generated by tools/gen_x12_tables.py from PyPI {PIN}")
    w("//! (pyx12/map, BSD licence): do not edit. Provenance (the wheel's and every map's sha256):")
    w("//! PROVENANCE.md beside this file. Layout: guide.rs.")
    w("#![allow(clippy::all, clippy::pedantic, missing_docs)]")
    w("use super::guide::{Element as E, Guide, Loop, Node, Rule, Segment, Key, Type::*, Usage::{N as Un, R as Ur, S as Us}};")
    w("use super::guide::Node::{L, S as G};")
    w("")
    w(f"pub static GUIDES: [Guide; {len(t.guides)}] = [")
    for set_id, ver, fic, abbr, idx in sorted(t.guides, key=lambda g: (g[1], g[0])):
        w(f"    Guide {{ set: {rust_str(set_id)}, version: {rust_str(ver)}, functional: {rust_str(fic)}, "
          f"name: {rust_str(abbr)}, root: {idx} }},")
    w("];")
    w(f"pub static LOOPS: [Loop; {len(t.loops)}] = [")
    for lid, path, usage, rep, start, n in t.loops:
        w(f"    Loop {{ id: {rust_str(lid)}, path: {rust_str(path)}, usage: {usage}, repeat: {rep}, "
          f"start: {start}, len: {n} }},")
    w("];")
    w(f"pub static NODES: [Node; {len(t.nodes)}] = [")
    line = []
    for kind, i in t.nodes:
        line.append(f"{'G' if kind == 'S' else 'L'}({i})")
        if len(line) == 12:
            w("    " + ", ".join(line) + ",")
            line = []
    if line:
        w("    " + ", ".join(line) + ",")
    w("];")
    w(f"pub static SEGMENTS: [Segment; {len(t.segments)}] = [")
    for sid, usage, mx, erun, rrun, keys in t.segments:
        ks = ", ".join(f"Key({a}, {b}, {c[0]}, {c[1]})" for a, b, c in keys)
        w(f"    Segment {{ id: {rust_str(sid)}, usage: {usage}, max_use: {mx}, elements: ({erun[0]}, {erun[1]}), "
          f"rules: ({rrun[0]}, {rrun[1]}), keys: [{ks}] }},")
    w("];")
    w(f"pub static ELEMENTS: [E; {len(t.elements)}] = [")
    for usage, ty, mn, mx, codes, comps, rep in t.elements:
        w(f"    E::new({usage}, {ty}, {mn}, {mx}, {codes[0]}, {codes[1]}, {comps[0]}, {comps[1]}, {rep}),")
    w("];")
    w(f"pub static RULES: [Rule; {len(t.rules)}] = [")
    for kind, elems in t.rules:
        padded = list(elems[:6]) + [0] * (6 - min(len(elems), 6))
        w(f"    Rule {{ kind: b'{kind}', elements: [{', '.join(map(str, padded))}] }},")
    w("];")
    w(f"pub static CODES: [&str; {len(t.codes)}] = [")
    line = []
    for c in t.codes:
        line.append(rust_str(c))
        if len(line) == 16:
            w("    " + ", ".join(line) + ",")
            line = []
    if line:
        w("    " + ", ".join(line) + ",")
    w("];")
    ids = sorted(t.segment_ids)
    w(f"pub static SEGMENT_IDS: [&str; {len(ids)}] = [")
    for i in range(0, len(ids), 16):
        w("    " + ", ".join(rust_str(x) for x in ids[i:i + 16]) + ",")
    w("];")
    OUT.write_text("\n".join(out) + "\n", encoding="utf-8")

    wheel = hashlib.sha256(WHEEL.read_bytes()).hexdigest() if WHEEL.is_file() else "(wheel not found at target/gen-dl)"
    p = ["# X12 implementation-guide tables: provenance", "",
         f"`tables.rs` is generated by `tools/gen_x12_tables.py` from PyPI `{PIN}` (BSD licence), the",
         "maps of the package's `pyx12/map` folder. Regenerate with the commands in the generator's",
         "docstring; `scripts/check-generated x12` checks that the committed file is what it writes.", "",
         f"- wheel `pyx12-4.0.0-py3-none-any.whl`: sha256 `{wheel}`", ""]
    p.append("| file | sha256 |")
    p.append("|---|---|")
    for name in sorted(files):
        p.append(f"| `{name}` | `{files[name]}` |")
    p.append("")
    p.append("| GS08 version | set | GS01 | map |")
    p.append("|---|---|---|---|")
    for set_id, ver, fic, abbr, _ in sorted(t.guides, key=lambda g: (g[1], g[0])):
        p.append(f"| `{ver}` | {set_id} | {fic} | {abbr} |")
    p.append("")
    p.append(f"{len(t.guides)} guides, {len(t.loops)} loops, {len(t.segments)} distinct segment definitions, "
             f"{len(t.elements)} element definitions, {len(t.codes)} codes.")
    PROVENANCE.write_text("\n".join(p) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
