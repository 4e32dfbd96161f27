#!/usr/bin/env python3
"""Generate phiward's compact HL7 v2 definition tables.

Reads the HL7 v2 definitions shipped by two registry packages and writes one
compact binary file per HL7 version under ``src/formats/hl7v2/schema/``
(``v2.5.1.bin`` ...), the string table they share (``strings.bin``),
``segment_ids.txt`` (every segment id of every version, sorted) and
``PROVENANCE.md``.  The file layout is described in ``schema.rs``.  The Rust module
``src/formats/hl7v2/schema.rs`` decodes these files.

Sources (installed by the commands in PROVENANCE.md, never fetched here):

* PyPI ``hl7apy`` (primary): message structures, groups, segments, fields,
  composite data types, table numbers, table values (2.3.1 and later).
* npm ``hl7-dictionary`` (secondary, versions 2.1 to 2.7.1): field and
  component lengths, conditional/backward optionality, bounded repetition
  counts, long names, table numbers missing from hl7apy 2.1/2.2, table values
  for 2.1 to 2.3, and table 0354 (message structure -> trigger events).

Run with the interpreter of the virtualenv that holds hl7apy:

    target/gen-venv/bin/python tools/gen_hl7v2_tables.py

Python 3.11, standard library plus the installed hl7apy only.  The output is
deterministic: the same sources give the same bytes.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib
import importlib.metadata
import json
import re
import struct
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "src" / "formats" / "hl7v2" / "schema"
NPM_DIR = REPO / "target" / "gen-npm"
DICT_LIB = NPM_DIR / "node_modules" / "hl7-dictionary" / "lib"
DL_DIR = REPO / "target" / "gen-dl"

# HL7 version -> (hl7apy module suffix, hl7-dictionary folder or None).
# hl7apy has no 2.7.1; the Rust side serves 2.7.1 from the 2.7 data.
VERSIONS = [
    ("2.1", "v2_1", "2.1"),
    ("2.2", "v2_2", "2.2"),
    ("2.3", "v2_3", "2.3"),
    ("2.3.1", "v2_3_1", "2.3.1"),
    ("2.4", "v2_4", "2.4"),
    ("2.5", "v2_5", "2.5"),
    ("2.5.1", "v2_5_1", "2.5.1"),
    ("2.6", "v2_6", "2.6"),
    ("2.7", "v2_7", "2.7"),
    ("2.8", "v2_8", None),
    ("2.8.1", "v2_8_1", None),
    ("2.8.2", "v2_8_2", None),
]

# hl7-dictionary folders, oldest first.
DICT_FOLDERS = ["2.1", "2.2", "2.3", "2.3.1", "2.4", "2.5", "2.5.1", "2.6", "2.7", "2.7.1"]

MAGIC = b"PW7S"
STRINGS_MAGIC = b"PW7T"
FORMAT_VERSION = 2

# Node kinds in a message structure tree (must match schema.rs).
NODE_SEGMENT, NODE_GROUP, NODE_CHOICE, NODE_ANY = 0, 1, 2, 3
# Table kinds (must match schema.rs).
TABLE_UNKNOWN, TABLE_HL7, TABLE_USER = 0, 1, 2
# Table flags.
TABLE_FLAG_VALUES_APPROX = 1
# Data type flags.
DT_FLAG_PRIMITIVE = 1

ANY_SEGMENT = "ANYHL7SEGMENT"


def warn(msg: str) -> None:
    print(f"gen_hl7v2_tables: {msg}", file=sys.stderr)


# --------------------------------------------------------------------------
# Source loading
# --------------------------------------------------------------------------


def load_js_object(path: Path) -> dict:
    """hl7-dictionary files are `var x = {...JSON...}; module.exports = x;`."""
    text = path.read_text(encoding="utf-8")
    start = text.index("{")
    end = text.rindex("}")
    return json.loads(text[start : end + 1])


def load_dictionary(folder: str | None) -> tuple[dict, dict, dict]:
    if folder is None:
        return {}, {}, {}
    base = DICT_LIB / folder
    return (
        load_js_object(base / "segments.js"),
        load_js_object(base / "fields.js"),
        load_js_object(base / "messages.js"),
    )


def table_number(ref) -> int | None:
    """hl7apy writes tables as 'HL70001'; 'HL79999' means 'no table'."""
    if not ref or not isinstance(ref, str) or not ref.startswith("HL7"):
        return None
    digits = ref[3:]
    if not digits.isdigit():
        return None
    n = int(digits)
    if n == 9999 or n == 0 or n > 0xFFFF:
        return None
    return n


def title_case(snake: str) -> str:
    words = [w for w in snake.split("_") if w]
    return " ".join(w[:1].upper() + w[1:].lower() for w in words)


def norm_dt(dt) -> str:
    if dt is None:
        return ""
    return "varies" if dt.upper() == "VARIES" else dt


def children_of(definition) -> tuple[str, tuple]:
    """hl7apy structures are ('sequence'|'choice', children) or, in a few
    2.1 segments, a bare tuple of children."""
    if isinstance(definition, tuple) and definition and isinstance(definition[0], str):
        kind = definition[0]
        kids = definition[1] if len(definition) > 1 else ()
        return kind, kids
    return "sequence", definition


# --------------------------------------------------------------------------
# Model building
# --------------------------------------------------------------------------


def usage_for(min_max: tuple[int, int], dict_opt, newer_opt=None) -> str:
    """hl7apy gives min/max only and marks some conditional fields required
    (OBX-2 and OBX-4 in 2.7 and 2.8): the dictionary's `C` wins, and for the
    versions without a dictionary (2.8.x) the 2.7.1 dictionary's `C` at the
    same position does (HL7 never renumbers fields)."""
    lo, hi = min_max
    if hi == 0:
        return "X"
    if dict_opt == 3 or (dict_opt is None and lo >= 1 and newer_opt == 3):
        return "C"
    if lo >= 1:
        return "R"
    if dict_opt == 4:
        return "B"
    return "O"


def reps_for(min_max: tuple[int, int], dict_rep) -> int:
    """0 = unbounded, n = at most n occurrences."""
    hi = min_max[1]
    if hi == 0:
        return 1
    if hi == -1:
        if isinstance(dict_rep, int) and dict_rep >= 2:
            return min(dict_rep, 0xFFFF)
        return 0
    return min(hi, 0xFFFF)


def dt_agrees(entry, dt: str) -> bool:
    if entry is None or not dt:
        return False
    other = norm_dt(entry.get("datatype"))
    return other == dt or other == dt.split("_")[0]


def element_record(apy_child, dict_entry, apy_def, name_entry=None) -> dict:
    """Build a field/component record from the hl7apy definition, enriched
    from hl7-dictionary when both agree on the data type.  `name_entry` (the
    2.7.1 dictionary, for versions the dictionary lacks) only supplies the
    long name."""
    name, ref, min_max = apy_child[0], apy_def, apy_child[2]
    dt = norm_dt(ref[2])
    agree = dict_entry is not None and (
        norm_dt(dict_entry.get("datatype")) == dt
        or norm_dt(dict_entry.get("datatype")) == dt.split("_")[0]
    )
    if dt == "" and dict_entry is not None and min_max[1] == 0:
        agree = False
    d = dict_entry if agree else None
    table = table_number(ref[4])
    if table is None and d is not None and isinstance(d.get("table"), int) and 0 < d["table"] < 9999:
        table = d["table"]
    long_name = (d.get("desc") or "").strip() if d else ""
    if not long_name and d is None and dt_agrees(name_entry, dt):
        long_name = (name_entry.get("desc") or "").strip()
    if not long_name:
        long_name = title_case(ref[3] or "")
    length = d.get("len") if d else None
    if not isinstance(length, int) or length < 0:
        length = 0
    return {
        "dt": dt,
        "name": long_name,
        "usage": usage_for(min_max, d.get("opt") if d else None, name_entry.get("opt") if name_entry else None),
        "reps": reps_for(min_max, d.get("rep") if d else None),
        "len": min(length, 0xFFFFFFFF),
        "table": table or 0,
    }


def build_segments(apy, dseg, nseg, seg_names) -> tuple[list, dict]:
    segments = []
    uses = {}  # table -> set of data types referencing it
    for sid in sorted(apy.SEGMENTS):
        if sid == ANY_SEGMENT:
            continue
        _, kids = children_of(apy.SEGMENTS[sid])
        dfields = dseg.get(sid, {}).get("fields", [])
        nfields = nseg.get(sid, {}).get("fields", [])
        fields = []
        for i, child in enumerate(kids):
            # hl7apy 2.6 and later leave withdrawn fields out (EVN starts at EVN_2 in 2.8):
            # place each field at the position its name gives, and fill the gaps with
            # withdrawn placeholders, so that positions stay the standard's.
            position = field_position(child[0], i + 1)
            while len(fields) + 1 < position:
                at = len(fields)
                dentry = dfields[at] if at < len(dfields) else None
                fields.append(withdrawn_record(dentry))
            at = len(fields)
            dentry = dfields[at] if at < len(dfields) else None
            nentry = nfields[at] if at < len(nfields) else None
            rec = element_record(child, dentry, child[1], nentry)
            fields.append(rec)
            if rec["table"]:
                uses.setdefault(rec["table"], []).append(rec["dt"])
        name = (dseg.get(sid, {}).get("desc") or "").strip() or seg_names.get(sid, "")
        segments.append({"id": sid, "name": name, "fields": fields})
    return segments, uses


def field_position(name: str, default: int) -> int:
    """The 1-based position in an hl7apy field name such as `EVN_2`."""
    m = re.fullmatch(r"[A-Z0-9]{3}_(\d+)", name)
    return int(m.group(1)) if m else default


def component_position(name: str, default: int) -> int:
    """The 1-based position in an hl7apy component name such as `XTN_2`."""
    m = re.search(r"_(\d+)$", name)
    return int(m.group(1)) if m else default


def withdrawn_record(dict_entry) -> dict:
    """A field hl7apy leaves out because the version withdraws it."""
    name = (dict_entry.get("desc") or "").strip() if dict_entry else ""
    return {"dt": "", "name": name, "usage": "X", "reps": 1, "len": 0, "table": 0}


def build_datatypes(apy, dtypes, ntypes, dt_names, used_types: set[str]) -> tuple[list, dict]:
    out = []
    uses = {}
    composite = set(apy.DATATYPES_STRUCTS)
    for dt in sorted(composite):
        kids = apy.DATATYPES_STRUCTS[dt]
        dentry = dtypes.get(dt) or dtypes.get(dt.split("_")[0])
        dsub = (dentry or {}).get("subfields") or []
        nentry = ntypes.get(dt) or ntypes.get(dt.split("_")[0])
        nsub = (nentry or {}).get("subfields") or []
        comps = []
        for i, child in enumerate(kids):
            # As for fields: a component hl7apy leaves out (2.6 XTN starts at XTN_2) keeps
            # its position through a withdrawn placeholder.
            position = component_position(child[0], i + 1)
            while len(comps) + 1 < position:
                at = len(comps)
                comps.append(withdrawn_record(dsub[at] if at < len(dsub) else None))
            at = len(comps)
            rec = element_record(child, dsub[at] if at < len(dsub) else None, child[1],
                                 nsub[at] if at < len(nsub) else None)
            comps.append(rec)
            if rec["table"]:
                uses.setdefault(rec["table"], []).append(rec["dt"])
            used_types.add(rec["dt"])
        name = ((dentry or {}).get("desc") or "").strip() or dt_names.get(dt, "")
        out.append({"id": dt, "name": name, "primitive": False, "comps": comps})
    for dt in sorted(used_types - composite):
        if not dt:
            continue
        dentry = dtypes.get(dt) or {}
        name = (dentry.get("desc") or "").strip() or dt_names.get(dt, "")
        out.append({"id": dt, "name": name, "primitive": True, "comps": []})
    out.sort(key=lambda d: d["id"])
    return out, uses


def build_node(apy, name, ref, min_max, kind, prefix_groups, stack) -> dict:
    lo, hi = min_max
    node = {
        "name": name,
        "required": 1 if lo >= 1 else 0,
        "reps": 0 if hi == -1 else max(hi, 1),
        "kids": [],
    }
    if kind == "SEG":
        node["kind"] = NODE_ANY if name == ANY_SEGMENT else NODE_SEGMENT
        return node
    definition = apy.GROUPS.get(name) if ref is None else ref
    if definition is None:
        raise SystemExit(f"group {name} not found")
    gkind, kids = children_of(definition)
    node["kind"] = NODE_CHOICE if gkind == "choice" else NODE_GROUP
    if name in stack:
        raise SystemExit(f"recursive group {name}")
    for child in kids:
        node["kids"].append(
            build_node(apy, child[0], child[1] if child[3] != "SEG" else None, child[2], child[3], prefix_groups, stack + [name])
        )
    return node


def build_structures(apy) -> list:
    out = []
    for sid in sorted(apy.MESSAGES):
        _, kids = children_of(apy.MESSAGES[sid])
        nodes = [
            build_node(apy, c[0], c[1] if c[3] != "SEG" else None, c[2], c[3], sid, [sid])
            for c in kids
        ]
        out.append({"id": sid, "kids": nodes})
    return out


# Known defects of the sources, corrected from the standard's text:
# (version, structure, path of group names, child index) -> fields to set.
STRUCTURE_ERRATA = {
    # HL7 2.2 chapter 4, ORM^O01: {ORC [<OBR|RQD|RQ1|RXO|ODS|ODT> [{NTE}] [{OBX [{NTE}]}]]
    # [BLG]}.  hl7apy flattens the optional OBX group and marks its NTE required.
    ("2.2", "ORM_O01", ("ORM_O01_ORDER", "ORM_O01_ORDER_DETAIL"), 3): {"required": 0},
}


def apply_errata(hl7v: str, structures: list) -> None:
    for (version, sid, path, index), fix in STRUCTURE_ERRATA.items():
        if version != hl7v:
            continue
        nodes = next((s["kids"] for s in structures if s["id"] == sid), None)
        for name in path:
            group = next((n for n in nodes or [] if n["name"] == name), None)
            nodes = group["kids"] if group else None
        if not nodes or index >= len(nodes):
            raise SystemExit(f"erratum {version} {sid} {path} {index} does not apply")
        nodes[index].update(fix)


def flatten(nodes) -> list[str]:
    seq = []
    for n in nodes:
        if n["kind"] in (NODE_SEGMENT, NODE_ANY):
            seq.append(n["name"])
        else:
            seq.extend(flatten(n["kids"]))
    return seq


def build_events(hl7v: str, structures: list, listing: dict, dmessages: dict, apy_tables) -> list:
    structs = {s["id"] for s in structures}
    listed = set(listing)
    if apy_tables and "HL70354" in apy_tables:
        listed |= {str(x) for x in apy_tables["HL70354"][1]}
    cand: dict[tuple[str, str], set[str]] = {}
    for struct_id, desc in sorted(listing.items()):
        if struct_id not in structs or "_" not in struct_id:
            continue
        code = struct_id.split("_", 1)[0]
        for trig in re.split(r"[,\s]+", desc or ""):
            if re.fullmatch(r"[A-Z0-9]{3}", trig):
                cand.setdefault((code, trig), set()).add(struct_id)
    # Before 2.3 there are no message structure ids: hl7apy has one
    # definition per event, which wins.  From 2.3 on, a structure named
    # after the event wins only if table 0354 lists it as a structure; hl7apy
    # also carries per-event copies (SIU_S14 for SIU_S12) that the standard
    # does not name, and table 0354 sends those events to the shared one.
    pre_structures = hl7v in ("2.1", "2.2")
    mapping: dict[tuple[str, str], str] = {}
    for s in sorted(structs):
        m = re.fullmatch(r"([A-Z0-9]{3})_([A-Z0-9]{3})", s)
        if m and (pre_structures or s in listed or (m.group(1), m.group(2)) not in cand):
            mapping[(m.group(1), m.group(2))] = s
    for key, options in sorted(cand.items()):
        if key in mapping:
            continue
        if len(options) > 1:
            warn(f"{hl7v}: {key[0]}^{key[1]} listed under {sorted(options)}; using {sorted(options)[0]}")
        mapping[key] = sorted(options)[0]
    if "ACK" in structs:
        mapping[("ACK", "")] = "ACK"  # any trigger
    # Events the dictionary knows for this version but the listing does not
    # map: match the flat segment sequence against the hl7apy structures.
    by_seq: dict[tuple, list[str]] = {}
    for s in structures:
        by_seq.setdefault(tuple(flatten(s["kids"])), []).append(s["id"])
    unmapped = []
    for ev in sorted(dmessages):
        m = re.fullmatch(r"([A-Z0-9]{3})_([A-Z0-9]{3})", ev)
        if not m or (m.group(1), m.group(2)) in mapping:
            continue
        if m.group(1) == "ACK":
            continue
        seq = tuple(dict_flat(dmessages[ev].get("segments", {}).get("segments", [])))
        hits = [h for h in by_seq.get(seq, []) if h.startswith(m.group(1) + "_")]
        if len(hits) == 1:
            mapping[(m.group(1), m.group(2))] = hits[0]
        else:
            unmapped.append(ev)
    if unmapped:
        warn(f"{hl7v}: {len(unmapped)} dictionary events without a structure: {' '.join(unmapped[:12])}{' ...' if len(unmapped) > 12 else ''}")
    return sorted((c, t, s) for (c, t), s in mapping.items())


def dict_flat(items) -> list[str]:
    seq = []
    for it in items:
        if it.get("children"):
            seq.extend(dict_flat(it["children"]))
        elif it.get("segments") and isinstance(it["segments"], list):
            seq.extend(dict_flat(it["segments"]))
        else:
            seq.append(it.get("name", ""))
    return seq


def classify_tables(uses: dict) -> dict[int, int]:
    """ID = coded value for HL7-defined tables, IS = coded value for
    user-defined tables (HL7 v2 chapter 2).  Returns table -> kind for the
    tables this version references through ID or IS."""
    out = {}
    for t, dts in uses.items():
        ids = sum(1 for d in dts if d == "ID")
        iss = sum(1 for d in dts if d == "IS")
        if ids == 0 and iss == 0:
            continue
        out[t] = TABLE_HL7 if ids >= iss else TABLE_USER
    return out


# --------------------------------------------------------------------------
# Binary encoding
# --------------------------------------------------------------------------


class Strings:
    """The string table shared by every version (``strings.bin``)."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self.index: dict[str, int] = {}

    def id(self, text: str) -> int:
        if text not in self.index:
            if len(self.strings) >= 0xFFFF:
                raise SystemExit("too many strings for u16 ids")
            if len(text.encode("utf-8")) > 0xFF:
                raise SystemExit(f"string too long: {text!r}")
            self.index[text] = len(self.strings)
            self.strings.append(text)
        return self.index[text]

    def finish(self) -> bytes:
        encoded = [t.encode("utf-8") for t in self.strings]
        out = bytearray(STRINGS_MAGIC)
        out += struct.pack("<B", FORMAT_VERSION)
        out += struct.pack("<I", len(encoded))
        out += bytes(len(e) for e in encoded)
        blob = b"".join(encoded)
        out += struct.pack("<I", len(blob))
        out += blob
        return bytes(out)


class Writer:
    def __init__(self, strings: Strings) -> None:
        self.strings = strings
        self.body = bytearray(MAGIC)
        self.body += struct.pack("<B", FORMAT_VERSION)

    def s(self, text: str) -> None:
        self.body += struct.pack("<H", self.strings.id(text))

    def u8(self, v: int) -> None:
        self.body += struct.pack("<B", v)

    def u16(self, v: int) -> None:
        self.body += struct.pack("<H", v)

    def u32(self, v: int) -> None:
        self.body += struct.pack("<I", v)

    def finish(self) -> bytes:
        return bytes(self.body)


def write_element(w: Writer, rec: dict) -> None:
    w.s(rec["dt"])
    w.s(rec["name"])
    w.u8(ord(rec["usage"]))
    w.u16(rec["reps"])
    w.u32(rec["len"])
    w.u16(rec["table"])


def write_node(w: Writer, n: dict) -> None:
    w.u8(n["kind"])
    w.s(n["name"])
    w.u8(n["required"])
    w.u16(min(n["reps"], 0xFFFF))
    if n["kind"] in (NODE_GROUP, NODE_CHOICE):
        w.u16(len(n["kids"]))
        for k in n["kids"]:
            write_node(w, k)


def encode(strings: Strings, hl7v: str, segments, datatypes, structures, events, tables) -> bytes:
    w = Writer(strings)
    w.s(hl7v)
    w.u16(len(segments))
    for seg in segments:
        w.s(seg["id"])
        w.s(seg["name"])
        w.u16(len(seg["fields"]))
        for f in seg["fields"]:
            write_element(w, f)
    w.u16(len(datatypes))
    for dt in datatypes:
        w.s(dt["id"])
        w.s(dt["name"])
        w.u8(DT_FLAG_PRIMITIVE if dt["primitive"] else 0)
        w.u16(len(dt["comps"]))
        for c in dt["comps"]:
            write_element(w, c)
    w.u16(len(structures))
    for st in structures:
        w.s(st["id"])
        w.u16(len(st["kids"]))
        for k in st["kids"]:
            write_node(w, k)
    w.u16(len(events))
    for code, trig, sid in events:
        w.s(code)
        w.s(trig)
        w.s(sid)
    w.u16(len(tables))
    for t in tables:
        w.u16(t["number"])
        w.s(t["name"])
        w.u8(t["kind"])
        w.u8(t["flags"])
        w.u16(len(t["values"]))
        for v in t["values"]:
            w.s(v)
    return w.finish()


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT_DIR, help="output folder")
    args = ap.parse_args()
    out_dir: Path = args.out
    out_dir.mkdir(parents=True, exist_ok=True)

    if not DICT_LIB.is_dir():
        raise SystemExit(f"hl7-dictionary not installed at {DICT_LIB}; see PROVENANCE.md")
    dict_tables = load_js_object(DICT_LIB / "tables.js")
    listing = dict_tables.get("354", {}).get("values", {})

    # Long names of segments and data types from any dictionary version
    # (newest wins), for those a version's own dictionary lacks.
    seg_names: dict[str, str] = {}
    dt_names: dict[str, str] = {}
    for folder in DICT_FOLDERS:
        dseg, dtypes, _ = load_dictionary(folder)
        seg_names.update({k: (v.get("desc") or "").strip() for k, v in dseg.items() if (v.get("desc") or "").strip()})
        dt_names.update({k: (v.get("desc") or "").strip() for k, v in dtypes.items() if (v.get("desc") or "").strip()})
    newest_seg, newest_types, _ = load_dictionary(DICT_FOLDERS[-1])

    built = []
    all_segment_ids: set[str] = set()
    for hl7v, mod, dfolder in VERSIONS:
        apy = importlib.import_module(f"hl7apy.{mod}")
        dseg, dtypes, dmsgs = load_dictionary(dfolder)
        nseg, ntypes = ({}, {}) if dfolder else (newest_seg, newest_types)
        segments, seg_uses = build_segments(apy, dseg, nseg, seg_names)
        used = {f["dt"] for s in segments for f in s["fields"]}
        datatypes, dt_uses = build_datatypes(apy, dtypes, ntypes, dt_names, used)
        structures = build_structures(apy)
        apply_errata(hl7v, structures)
        events = build_events(hl7v, structures, listing, dmsgs, getattr(apy, "TABLES", None))
        uses: dict[int, list[str]] = {}
        for src in (seg_uses, dt_uses):
            for t, dts in src.items():
                uses.setdefault(t, []).extend(dts)
        apy_tables = getattr(apy, "TABLES", None)
        built.append({
            "v": hl7v, "segments": segments, "datatypes": datatypes,
            "structures": structures, "events": events, "uses": uses,
            "apy_tables": apy_tables,
            # IS (user-defined table values) only exists from 2.3 on; 2.1
            # and 2.2 code every table as ID, so they give no evidence.
            "kinds": classify_tables(uses) if hl7v not in ("2.1", "2.2") else {},
        })
        all_segment_ids.update(s["id"] for s in segments)

    # Table kinds: this version's ID/IS evidence, else the nearest version's.
    for i, b in enumerate(built):
        order = sorted(range(len(built)), key=lambda j: (abs(j - i), j > i))
        tables = []
        numbers = set(b["uses"])
        if b["apy_tables"]:
            numbers |= {n for n in (table_number(k) for k in b["apy_tables"]) if n}
        for n in sorted(numbers):
            kind = TABLE_UNKNOWN
            for j in order:
                if n in built[j]["kinds"]:
                    kind = built[j]["kinds"][n]
                    break
            flags = 0
            name = ""
            values: list[str] = []
            key = f"HL7{n:04d}"
            if b["apy_tables"] is not None:
                if key in b["apy_tables"]:
                    name, vals = b["apy_tables"][key]
                    values = [str(x) for x in vals]
            else:
                dt = dict_tables.get(str(n))
                if dt:
                    values = sorted(dt.get("values", {}))
                    flags |= TABLE_FLAG_VALUES_APPROX
            if not name:
                name = (dict_tables.get(str(n), {}).get("desc") or "").strip()
            # Keep order, drop duplicates; sort for binary search.
            values = sorted(set(v for v in values if v != ""))
            tables.append({"number": n, "name": (name or "").strip(), "kind": kind, "flags": flags, "values": values})
        b["tables"] = tables

    total = 0
    strings = Strings()
    for b in built:
        data = encode(strings, b["v"], b["segments"], b["datatypes"], b["structures"], b["events"], b["tables"])
        path = out_dir / f"v{b['v']}.bin"
        path.write_bytes(data)
        total += len(data)
        print(f"v{b['v']}: {len(b['segments'])} segments, {len(b['datatypes'])} data types, "
              f"{len(b['structures'])} structures, {len(b['events'])} events, {len(b['tables'])} tables, "
              f"{len(data)} bytes")
    data = strings.finish()
    (out_dir / "strings.bin").write_bytes(data)
    total += len(data)
    print(f"strings.bin: {len(strings.strings)} strings, {len(data)} bytes")

    # Segment ids the dictionary knows that hl7apy lacks (2.7.1 included)
    # count as known ids too, so diagnostics may name them.
    for folder in DICT_FOLDERS:
        dseg = load_js_object(DICT_LIB / folder / "segments.js")
        all_segment_ids.update(s for s in dseg if re.fullmatch(r"[A-Z][A-Z0-9]{2}", s))
    ids = sorted(all_segment_ids)
    bad = [s for s in ids if not re.fullmatch(r"[A-Z][A-Z0-9]{2}", s)]
    if bad:
        raise SystemExit(f"unexpected segment ids {bad}")
    (out_dir / "segment_ids.txt").write_text("".join(ids) + "\n", encoding="ascii")
    print(f"{len(ids)} segment ids; {total} bytes of tables")

    write_provenance(out_dir)
    return 0


def write_provenance(out_dir: Path) -> None:
    apy_version = importlib.metadata.version("hl7apy")
    dict_pkg = json.loads((DICT_LIB.parent / "package.json").read_text(encoding="utf-8"))
    wheel = DL_DIR / f"hl7apy-{apy_version}-py2.py3-none-any.whl"
    tgz = NPM_DIR / f"hl7-dictionary-{dict_pkg['version']}.tgz"
    wheel_sha = sha256(wheel) if wheel.is_file() else "(wheel not found in target/gen-dl)"
    tgz_sha = sha256(tgz) if tgz.is_file() else "(tarball not found in target/gen-npm)"
    body = PROVENANCE.format(
        apy_version=apy_version, wheel_sha=wheel_sha,
        dict_version=dict_pkg["version"], tgz_sha=tgz_sha,
        versions=", ".join(v for v, _, _ in VERSIONS),
    )
    path = out_dir / "PROVENANCE.md"
    date_line = "Generated on: {date}\n"
    if path.is_file():
        old = path.read_text(encoding="utf-8")
        m = re.search(r"^Generated on: (\S+)$", old, re.M)
        if m and old == body.replace("{DATE}", date_line.format(date=m.group(1))):
            return  # unchanged sources: keep the file byte for byte
    today = datetime.date.today().isoformat()
    path.write_text(body.replace("{DATE}", date_line.format(date=today)), encoding="utf-8")


PROVENANCE = """\
# Provenance of the HL7 v2 definition tables

The `v*.bin` files, `strings.bin` and `segment_ids.txt` in this folder are generated by
`tools/gen_hl7v2_tables.py`; do not edit them by hand.  `schema.rs` (one folder
up) decodes them.

{{DATE}}
HL7 versions: {versions} (2.7.1 is served from the 2.7 tables: hl7apy has no 2.7.1).

## Sources

| package | registry | version | sha256 of the archive | licence |
| --- | --- | --- | --- | --- |
| `hl7apy` | PyPI | {apy_version} | `{wheel_sha}` (wheel) | MIT (Copyright (c) 2012-2018, CRS4) |
| `hl7-dictionary` | npm | {dict_version} | `{tgz_sha}` (tarball) | MIT (Fernando Serrano) |

What comes from where:

* hl7apy (primary, every version): message structures and their groups
  (hl7apy group names such as `ADT_A01_PROCEDURE`), segments and their fields
  in order, field and component data types, required/optional (`min`),
  repetition (`max`), table numbers, composite data types and their
  components, table names and code values for 2.3.1 and later.
* hl7-dictionary (versions 2.1 to 2.7, and 2.7.1 for names only): maximum lengths, the `C`
  (conditional) and `B` (backward compatible; the source does not separate B,
  W and X) optionality codes, bounded repetition counts where hl7apy only says
  "repeating", long names of fields, components, segments and data types,
  table numbers missing from hl7apy 2.1/2.2, table values for 2.1, 2.2 and 2.3
  (unversioned in the source, so flagged approximate), and table 0354
  (structure -> trigger events), which maps `ADT^A04` to `ADT_A01`.
  Its data are only used where its data type for the same position agrees
  with hl7apy's.

Derived, not read from a source:

* Table kind (HL7-defined or user-defined): HL7 v2 chapter 2 uses data type
  ID for HL7-defined tables and IS for user-defined tables; a table referenced
  through ID is marked HL7, through IS marked user-defined.  Tables referenced
  only through CE/CWE/CNE take the kind from the nearest version that has ID/IS
  evidence, else "unknown".  2.1 and 2.2 (no IS type yet) always take it from
  the nearest later version.  The standard is not fully consistent with this
  rule (e.g. a few ID fields point at user-defined tables).
* Trigger events -> structure: every `CODE_TRG` structure maps its own event;
  table 0354 adds the shared ones; events the dictionary lists for a version
  without a 0354 entry are matched by identical segment sequence.
* Long names for 2.8, 2.8.1 and 2.8.2 come from the 2.7.1 dictionary where
  the data type at the same position agrees; otherwise (and wherever the
  sources disagree) they are the hl7apy names in title case
  (`PATIENT_NAME` -> `Patient Name`).  Segment and data type long names
  missing from a version's dictionary come from the newest dictionary
  version that has them.
* One structure erratum: in 2.2 `ORM_O01`, the NTE that follows OBX is
  optional (hl7apy flattens the standard's `[{{OBX [{{NTE}}]}}]` and marks it
  required); see `STRUCTURE_ERRATA` in the generator.
* Optionality `C` where hl7apy says required and the dictionary says
  conditional (OBX-2 and OBX-4 in 2.7); for 2.8.x, where the 2.7.1
  dictionary says conditional at the same position.
* Positions of withdrawn fields and components: hl7apy 2.6 and later leave
  some out (EVN-1 in 2.8, DG1-7 to DG1-11 in 2.6, XTN.1 in 2.6, ...); each
  element is placed at the position its hl7apy name gives (`EVN_2` -> 2) and
  the gaps hold withdrawn (`X`) placeholders without a data type, so that
  positions are the standard's.

Not available from these sources: maximum lengths for 2.8.x, W/X
optionality as distinct codes (hl7apy's `max 0` fields are marked `X`),
conformance lengths, table value descriptions, and per-version table values
before 2.3.1.

The licences of both packages are MIT; the HL7 v2 standard content itself is
(c) Health Level Seven International.  Only structural metadata and code
values are kept, no narrative text of the standard.

## Regenerate

```sh
python3 -m venv target/gen-venv
target/gen-venv/bin/pip download --no-deps hl7apy=={apy_version} -d target/gen-dl
target/gen-venv/bin/pip install target/gen-dl/hl7apy-{apy_version}-py2.py3-none-any.whl
mkdir -p target/gen-npm && (cd target/gen-npm && npm pack hl7-dictionary@{dict_version})
npm install --prefix target/gen-npm target/gen-npm/hl7-dictionary-{dict_version}.tgz
target/gen-venv/bin/python tools/gen_hl7v2_tables.py
```

The output is deterministic: rerunning with the same sources rewrites the
same bytes (this file keeps its date unless something else changed).
"""


if __name__ == "__main__":
    sys.exit(main())
