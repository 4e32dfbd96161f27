//! DICOM out: the JSON model of PS3.18 Annex F (data channel), the value-free summary of
//! `inspect`, and Part 10 bytes (`fmt`'s canonical form and the redactor's output).
//!
//! The JSON model: one object keyed by the 8-hex-digit tag, `{"vr": .., "Value": [..]}`; PN as
//! `{"Alphabetic", "Ideographic", "Phonetic"}`; IS, DS and the binary numbers as JSON numbers
//! (an IS or DS that is not a JSON number stays a string); AT as `"GGGGEEEE"`; sequences as
//! arrays of objects; OB, OD, OF, OL, OV, OW and UN values under `BULK_MIN` bytes as
//! `InlineBinary` (base64), longer ones and pixel data as the value-free descriptor
//! `{"vr": "OW", "BulkDataLength": n}` (encapsulated pixel data adds `"Fragments": n`). The
//! file meta elements (group 0002) come first, in the same object.
//!
//! Canonical Part 10: a zero preamble, `DICM`, the meta group with its group length computed
//! (and the type 1 elements it lacks added where the file gives them: [`Meta::Canonical`]),
//! then the dataset in its own transfer syntax, every sequence and item of undefined length
//! (delimited); a deflated dataset (Deflated Explicit VR Little Endian) deflated again, raw
//! deflate at level 6, padded to an even length. A DICOMDIR's record offsets (PS3.3 F.3.2.1:
//! (0004,1200), (0004,1202), (0004,1400), (0004,1420)) are rewritten to the positions of the
//! same records in the file written. Text is decoded for JSON with the Specific Character Set of its dataset (an item's own
//! (0008,0005) applies to it and what it nests): see [`super::charset`], which runs the ISO 2022
//! code extensions.
//!
//! What it does not do: write a file whose bulk values were left out of the record (over
//! `BULK_KEPT`): [`part10`] then writes nothing and returns false.

use base64::Engine as _;
use serde::Serialize;

use super::charset::Charset;
use super::dict::{self, Vr};
use super::lex::{self, Element, Kind, PIXEL_DATA, Syntax, UNDEFINED};
use super::read::Document;
use crate::diag::{Diagnostic, Severity};
use crate::phi::Disclosure;

/// The decoder of the Specific Character Set (0008,0005) of the top-level dataset.
pub fn charset(doc: &Document) -> Charset {
    doc.top(0x0008_0005).map_or_else(Charset::default, |i| charset_at(doc, i))
}

/// The decoder of the Specific Character Set that applies to element `i`: its enclosing item's
/// own (0008,0005), which applies to the item and what it nests (PS3.5 7.5.3), else the
/// enclosing dataset's, up to the top level's `top`. `cache` holds the items decided (by index).
pub fn charset_of(
    doc: &Document,
    i: usize,
    top: Charset,
    cache: &mut std::collections::BTreeMap<u32, Charset>,
) -> Charset {
    let els = doc.elements();
    let Some(p) = els.get(i).map(|e| e.parent).filter(|&p| p != u32::MAX) else { return top };
    if let Some(cs) = cache.get(&p) {
        return *cs;
    }
    let item = p as usize;
    let Some(it) = els.get(item) else { return top };
    let end = (it.end as usize).max(item + 1).min(els.len());
    let own = (item + 1..end).find(|&k| els[k].parent == p && els[k].tag == 0x0008_0005 && els[k].kind == Kind::Value);
    // The item's sequence is an element of the enclosing dataset: its charset is that one's.
    let cs = own.map_or_else(|| charset_of(doc, it.parent as usize, top, cache), |k| charset_at(doc, k));
    cache.insert(p, cs);
    cs
}

/// The decoder of the Specific Character Set element `i`.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser: reads the character set's defined terms to pick a decoder; returns a decoder, not the value"
)]
fn charset_at(doc: &Document, i: usize) -> Charset {
    Charset::from_value(doc.value(i).raw())
}

/// The character set's defined term when it is one phiward knows (value-free: a name of the
/// standard), `"default"` when absent, `"other"` otherwise.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser: compares the character set with the standard's defined terms; returns a name of the standard"
)]
pub fn charset_name(doc: &Document) -> &'static str {
    let Some(i) = doc.top(0x0008_0005) else { return "default" };
    let v = doc.value(i).raw();
    let first = v.split(|&b| b == b'\\').map(<[u8]>::trim_ascii).find(|t| !t.is_empty());
    match first {
        None => "default",
        Some(t) => CHARSETS.iter().find(|n| n.as_bytes() == t).copied().unwrap_or("other"),
    }
}

/// The defined terms of Specific Character Set (PS3.3 C.12.1.1.2).
const CHARSETS: &[&str] = &[
    "ISO_IR 6",
    "ISO_IR 100",
    "ISO_IR 101",
    "ISO_IR 109",
    "ISO_IR 110",
    "ISO_IR 144",
    "ISO_IR 127",
    "ISO_IR 126",
    "ISO_IR 138",
    "ISO_IR 148",
    "ISO_IR 203",
    "ISO_IR 13",
    "ISO_IR 166",
    "ISO_IR 192",
    "GB18030",
    "GBK",
    "ISO 2022 IR 6",
    "ISO 2022 IR 100",
    "ISO 2022 IR 101",
    "ISO 2022 IR 109",
    "ISO 2022 IR 110",
    "ISO 2022 IR 144",
    "ISO 2022 IR 127",
    "ISO 2022 IR 126",
    "ISO 2022 IR 138",
    "ISO 2022 IR 148",
    "ISO 2022 IR 203",
    "ISO 2022 IR 13",
    "ISO 2022 IR 166",
    "ISO 2022 IR 87",
    "ISO 2022 IR 159",
    "ISO 2022 IR 149",
    "ISO 2022 IR 58",
];

/// True for a text the summary may hold: a name or UID of the standard's tables, a defined
/// term, or one of the summary's own words (for the fuzz oracle's no-leak check).
pub fn is_summary_text(s: &str) -> bool {
    ["dicom", "unknown", "absent", "default", "other"].contains(&s)
        || CHARSETS.contains(&s)
        || MODALITIES.contains(&s)
        || super::tables::TRANSFER_SYNTAXES.iter().any(|t| t.0 == s || t.1 == s)
        || super::tables::SOP_CLASSES.iter().any(|t| t.0 == s || t.1 == s)
}

/// Trailing padding of a text value: spaces and NULs (UI pads with NUL; some writers pad other
/// VRs with it too).
fn trim_text(v: &[u8]) -> &[u8] {
    let mut v = v;
    while let [rest @ .., last] = v {
        if *last == b' ' || *last == 0 {
            v = rest;
        } else {
            break;
        }
    }
    v
}

fn is_json_number(s: &str) -> bool {
    serde_json::from_str::<serde_json::Number>(s).is_ok()
}

fn number<T: std::fmt::Display>(out: &mut Vec<u8>, n: T) {
    out.extend_from_slice(n.to_string().as_bytes());
}

fn float(out: &mut Vec<u8>, f: f64) {
    if f.is_finite() {
        let s = serde_json::Number::from_f64(f).map_or_else(|| "null".to_owned(), |n| n.to_string());
        out.extend_from_slice(s.as_bytes());
    } else {
        out.extend_from_slice(if f.is_nan() {
            b"\"NaN\""
        } else if f > 0.0 {
            b"\"Infinity\""
        } else {
            b"\"-Infinity\""
        });
    }
}

/// The binary numbers of a value.
fn binary(out: &mut Vec<u8>, vr: Vr, syntax: Syntax, v: &[u8]) {
    let Some(size) = vr.binary_size() else { return };
    let mut first = true;
    for c in v.chunks_exact(size) {
        if !first {
            out.push(b',');
        }
        first = false;
        let mut a = [0u8; 8];
        a[..size].copy_from_slice(c);
        if syntax.big {
            a[..size].reverse();
        }
        match &vr.0 {
            b"US" => number(out, u16::from_le_bytes([a[0], a[1]])),
            b"SS" => number(out, i16::from_le_bytes([a[0], a[1]])),
            b"UL" => number(out, u32::from_le_bytes([a[0], a[1], a[2], a[3]])),
            b"SL" => number(out, i32::from_le_bytes([a[0], a[1], a[2], a[3]])),
            b"FL" => float(out, f64::from(f32::from_le_bytes([a[0], a[1], a[2], a[3]]))),
            b"FD" => float(out, f64::from_le_bytes(a)),
            b"SV" => number(out, i64::from_le_bytes(a)),
            b"UV" => number(out, u64::from_le_bytes(a)),
            b"AT" => {
                let g = u16::from_le_bytes([a[0], a[1]]);
                let e = u16::from_le_bytes([a[2], a[3]]);
                let g = if syntax.big { u16::from_le_bytes([a[1], a[0]]) } else { g };
                let e = if syntax.big { u16::from_le_bytes([a[3], a[2]]) } else { e };
                out.extend_from_slice(format!("\"{g:04X}{e:04X}\"").as_bytes());
            }
            _ => out.extend_from_slice(b"null"),
        }
    }
}

/// Writes the JSON model of the document (data channel).
pub fn model_json(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let cs = charset(doc);
    let els = doc.elements();
    let end = els.len();
    write_dataset(doc, cs, disclosure, 0, end, out);
}

/// Writes the elements `from..to` that are children of one dataset (depth-first skipping).
fn write_dataset(doc: &Document, cs: Charset, disclosure: &Disclosure, from: usize, to: usize, out: &mut Vec<u8>) {
    let els = doc.elements();
    out.push(b'{');
    let mut i = from;
    let mut first = true;
    while i < to.min(els.len()) {
        let e = els[i];
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(format!("\"{:08X}\":", e.tag).as_bytes());
        write_element(doc, cs, disclosure, i, out);
        i = match e.kind {
            Kind::Sequence | Kind::Encapsulated => (e.end as usize).max(i + 1),
            _ => i + 1,
        };
    }
    out.push(b'}');
}

#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: the JSON model of parse, under the operation's disclosure"
)]
fn write_element(doc: &Document, cs: Charset, disclosure: &Disclosure, i: usize, out: &mut Vec<u8>) {
    let els = doc.elements();
    let e = els[i];
    out.extend_from_slice(b"{\"vr\":");
    // A sequence is SQ in the model, whatever VR it came under (a UN holding items).
    crate::json::string(out, if e.kind == Kind::Sequence { "SQ" } else { e.vr.as_str() });
    match e.kind {
        Kind::Sequence => {
            let items: Vec<usize> =
                (i + 1..(e.end as usize).min(els.len())).filter(|&j| els[j].parent == i as u32).collect();
            if !items.is_empty() {
                out.extend_from_slice(b",\"Value\":[");
                for (n, &j) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    // An item's own Specific Character Set applies to it and what it nests
                    // (PS3.5 7.5.3); otherwise the enclosing dataset's holds.
                    let end = (els[j].end as usize).max(j + 1);
                    let own = (j + 1..end.min(els.len())).find(|&k| {
                        els[k].parent == j as u32 && els[k].tag == 0x0008_0005 && els[k].kind == Kind::Value
                    });
                    let item_cs = own.map_or(cs, |k| charset_at(doc, k));
                    write_dataset(doc, item_cs, disclosure, j + 1, end, out);
                }
                out.push(b']');
            }
        }
        Kind::Encapsulated => {
            let frags = (i + 1..(e.end as usize).min(els.len())).filter(|&j| els[j].kind == Kind::Fragment);
            let total: u64 = frags.clone().map(|j| u64::from(els[j].length)).sum();
            out.extend_from_slice(format!(",\"BulkDataLength\":{total},\"Fragments\":{}", frags.count()).as_bytes());
        }
        Kind::Item | Kind::Fragment => {}
        Kind::Value => {
            // A bulk value (the lexer's rule, whether or not the record kept it) is a
            // descriptor; a short one of a bulk VR is inline.
            if lex::is_bulk(e.tag, e.vr, e.length) || doc.elided(i) {
                out.extend_from_slice(format!(",\"BulkDataLength\":{}", e.length).as_bytes());
            } else if e.vr.is_bulk() {
                if e.length > 0 {
                    let v = doc.value(i).expose_value(disclosure);
                    out.extend_from_slice(b",\"InlineBinary\":\"");
                    out.extend_from_slice(base64::engine::general_purpose::STANDARD.encode(v).as_bytes());
                    out.push(b'"');
                }
            } else if e.vr.binary_size().is_some() {
                let v = doc.value(i).expose_value(disclosure);
                if !v.is_empty() {
                    out.extend_from_slice(b",\"Value\":[");
                    binary(out, e.vr, e.syntax, v);
                    out.push(b']');
                }
            } else if e.vr.is_text() {
                let v = trim_text(doc.value(i).expose_value(disclosure));
                if !v.is_empty() {
                    let mut text = if e.vr == Vr::UI
                        || matches!(&e.vr.0, b"AE" | b"AS" | b"CS" | b"DA" | b"DS" | b"DT" | b"IS" | b"TM")
                    {
                        Charset::default().decode(e.vr, v)
                    } else {
                        cs.decode(e.vr, v)
                    };
                    out.extend_from_slice(b",\"Value\":[");
                    let parts: Vec<&str> =
                        if e.vr.is_single_text() { vec![&text[..]] } else { text.split('\\').collect() };
                    for (n, p) in parts.iter().enumerate() {
                        if n > 0 {
                            out.push(b',');
                        }
                        text_value(out, e.vr, p);
                    }
                    out.push(b']');
                    crate::phi::wipe_string(&mut text);
                }
            }
        }
    }
    out.push(b'}');
}

fn text_value(out: &mut Vec<u8>, vr: Vr, p: &str) {
    let t = p.trim_matches(|c| c == ' ' || c == '\0');
    match &vr.0 {
        _ if t.is_empty() => out.extend_from_slice(b"null"),
        b"IS" | b"DS" if is_json_number(t) => out.extend_from_slice(t.as_bytes()),
        b"PN" => {
            out.push(b'{');
            let mut first = true;
            for (name, g) in ["Alphabetic", "Ideographic", "Phonetic"].iter().zip(p.split('=')) {
                let g = g.trim_end_matches([' ', '\0']);
                if g.is_empty() {
                    continue;
                }
                if !first {
                    out.push(b',');
                }
                first = false;
                crate::json::string(out, name);
                out.push(b':');
                crate::json::string(out, g);
            }
            out.push(b'}');
        }
        _ => crate::json::string(out, if vr.is_single_text() { p.trim_end_matches([' ', '\0']) } else { t }),
    }
}

/// The value-free summary of `inspect`.
#[derive(Debug, Serialize)]
pub struct Summary {
    format: &'static str,
    preamble: bool,
    file_meta: bool,
    transfer_syntax: Named,
    sop_class: Named,
    modality: &'static str,
    elements: usize,
    meta_elements: usize,
    top_level_elements: usize,
    sequences: usize,
    items: usize,
    max_depth: u16,
    private_groups: usize,
    private_creators: usize,
    pixel_data: PixelData,
    frames: Option<u32>,
    warning_count: usize,
    error_count: usize,
}

/// A UID of the standard's tables with its name (`"unknown"`: not in the tables; the UID is then
/// not shown, it could be anything).
#[derive(Debug, Serialize)]
struct Named {
    uid: Option<&'static str>,
    name: &'static str,
}

#[derive(Debug, Serialize)]
struct PixelData {
    present: bool,
    encapsulated: bool,
    bytes: u64,
    fragments: u32,
}

/// The modalities of PS3.3 C.7.3.1.1.1 (Defined Terms).
const MODALITIES: &[&str] = &[
    "AR",
    "ASMT",
    "AU",
    "BDUS",
    "BI",
    "BMD",
    "CR",
    "CT",
    "CTPROTOCOL",
    "DG",
    "DOC",
    "DX",
    "ECG",
    "EPS",
    "ES",
    "FID",
    "GM",
    "HC",
    "HD",
    "IO",
    "IOL",
    "IVOCT",
    "IVUS",
    "KER",
    "KO",
    "LEN",
    "LS",
    "MG",
    "MR",
    "M3D",
    "NM",
    "OAM",
    "OCT",
    "OP",
    "OPM",
    "OPT",
    "OPTBSV",
    "OPTENF",
    "OPV",
    "OSS",
    "OT",
    "PLAN",
    "PR",
    "PT",
    "PX",
    "REG",
    "RESP",
    "RF",
    "RG",
    "RTDOSE",
    "RTIMAGE",
    "RTINTENT",
    "RTPLAN",
    "RTRAD",
    "RTRECORD",
    "RTSEGANN",
    "RTSTRUCT",
    "RWV",
    "SEG",
    "SM",
    "SMR",
    "SR",
    "SRF",
    "STAIN",
    "TEXTUREMAP",
    "TG",
    "US",
    "VA",
    "XA",
    "XC",
];

/// A top-level value compared with names of the standard: the name, or `None`.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser: compares a value with the standard's constants; returns a constant of the standard"
)]
fn standard_name(doc: &Document, tag: u32, names: &'static [&'static str]) -> Option<&'static str> {
    let i = doc.top(tag)?;
    let v = trim_text(doc.value(i).raw()).trim_ascii();
    names.iter().find(|n| n.as_bytes() == v).copied()
}

/// Number of Frames (0028,0008), an IS: a count of structure.
#[expect(clippy::disallowed_methods, reason = "a parser: reads a count of frames; returns a number of structure")]
pub fn frames(doc: &Document) -> Option<u32> {
    let i = doc.top(0x0028_0008)?;
    std::str::from_utf8(doc.value(i).raw()).ok()?.trim_matches([' ', '\0']).parse().ok()
}

/// The transfer syntax and SOP class of the tables.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser: looks a UID up in the standard's tables; returns a constant of the tables"
)]
pub fn sop_class(doc: &Document) -> Option<(&'static str, &'static str, u16)> {
    let i = doc.top(0x0008_0016).or_else(|| doc.top(0x0002_0002))?;
    dict::sop_class(doc.value(i).raw()).map(|(_, u, n, iod)| (u, n, iod))
}

/// The value-free summary.
pub fn summarize(doc: &Document, findings: &[Diagnostic]) -> Summary {
    let els = doc.elements();
    let mut groups = std::collections::BTreeSet::new();
    let mut creators = 0;
    let mut sequences = 0;
    let mut items = 0;
    let mut elements = 0;
    let mut top = 0;
    let mut depth = 0;
    for e in els {
        depth = depth.max(e.depth);
        match e.kind {
            Kind::Item => items += 1,
            Kind::Fragment => {}
            k => {
                elements += 1;
                if k == Kind::Sequence {
                    sequences += 1;
                }
                if e.depth == 0 && e.tag >> 16 != 0x0002 {
                    top += 1;
                }
                if dict::is_private(e.tag) {
                    groups.insert(e.tag >> 16);
                    if dict::is_private_creator(e.tag) {
                        creators += 1;
                    }
                }
            }
        }
    }
    let pixel = doc.top(PIXEL_DATA).map(|i| {
        let e = els[i];
        let frags = (i + 1..(e.end as usize).min(els.len())).filter(|&j| els[j].kind == Kind::Fragment);
        if e.kind == Kind::Encapsulated {
            let fragments = u32::try_from(frags.clone().count()).unwrap_or(u32::MAX);
            PixelData {
                present: true,
                encapsulated: true,
                bytes: frags.map(|j| u64::from(els[j].length)).sum(),
                fragments,
            }
        } else {
            PixelData { present: true, encapsulated: false, bytes: u64::from(e.length), fragments: 0 }
        }
    });
    let ts =
        doc.lexed.syntax.map_or(Named { uid: None, name: "unknown" }, |t| Named { uid: Some(t.uid), name: t.name });
    let sop = sop_class(doc).map_or(Named { uid: None, name: "unknown" }, |(u, n, _)| Named { uid: Some(u), name: n });
    Summary {
        format: "dicom",
        preamble: doc.preamble,
        file_meta: doc.lexed.meta,
        transfer_syntax: ts,
        sop_class: sop,
        modality: if doc.top(0x0008_0060).is_some() {
            standard_name(doc, 0x0008_0060, MODALITIES).unwrap_or("other")
        } else {
            "absent"
        },
        elements,
        meta_elements: doc.lexed.dataset,
        top_level_elements: top,
        sequences,
        items,
        max_depth: depth,
        private_groups: groups.len(),
        private_creators: creators,
        pixel_data: pixel.unwrap_or(PixelData { present: false, encapsulated: false, bytes: 0, fragments: 0 }),
        frames: frames(doc),
        warning_count: findings.iter().filter(|f| f.severity == Severity::Warning).count(),
        error_count: findings.iter().filter(|f| f.severity.is_failure()).count(),
    }
}

/// What a Part 10 writer does with an element.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Written as it is (a sequence or item with what its children decide).
    As,
    /// Left out (with its subtree).
    Drop,
    /// Written with an empty value.
    Empty,
    /// Written with the value at this index of the replacement list.
    Replace(usize),
}

fn put16(out: &mut Vec<u8>, s: Syntax, v: u16) {
    out.extend_from_slice(&if s.big { v.to_be_bytes() } else { v.to_le_bytes() });
}

fn put32(out: &mut Vec<u8>, s: Syntax, v: u32) {
    out.extend_from_slice(&if s.big { v.to_be_bytes() } else { v.to_le_bytes() });
}

fn header(out: &mut Vec<u8>, s: Syntax, tag: u32, vr: Vr, len: u32) {
    put16(out, s, (tag >> 16) as u16);
    put16(out, s, tag as u16);
    if tag >> 16 == 0xFFFE {
        put32(out, s, len);
    } else if s.explicit {
        out.extend_from_slice(&vr.0);
        if vr.long_header() {
            out.extend_from_slice(&[0, 0]);
            put32(out, s, len);
        } else {
            put16(out, s, u16::try_from(len).unwrap_or(u16::MAX));
        }
    } else {
        put32(out, s, len);
    }
}

/// phiward's Implementation Class UID (0002,0012), written in the file meta of every Part 10
/// file `redact` writes (and by `fmt` where the input's meta has none): a UUID-derived UID
/// (PS3.5 B.2, root `2.25`, which needs no registration) of the fixed name
/// `phiward implementation class UID`: the first 128 bits of its SHA-256 with the version (8)
/// and variant bits of RFC 9562 set, as a decimal integer. Fixed: the same in every build.
pub const IMPLEMENTATION_CLASS_UID: &str = "2.25.33855971498493271503042817076323841679";

/// phiward's Implementation Version Name (0002,0013): `PHIWARD_` and the crate's version (SH,
/// 16 characters at most).
pub const IMPLEMENTATION_VERSION_NAME: &str = concat!("PHIWARD_", env!("CARGO_PKG_VERSION"));

/// Elements a writer adds: tag, VR, value.
pub type Added = Vec<(u32, Vr, Vec<u8>)>;

/// The file meta group a Part 10 writer writes.
#[derive(Copy, Clone, Debug)]
pub enum Meta<'a> {
    /// `fmt`'s: the input's meta elements as read, the group length computed, and the type 1
    /// elements of PS3.10 Table 7.1-1 the input lacks (or holds empty) added where the file
    /// gives them: File Meta Information Version `00\01`, the SOP Class and Instance UIDs of
    /// the dataset's (0008,0016) and (0008,0018), the transfer syntax the dataset is written
    /// in (also over a named one the dataset is not in: explicit VR named, implicit VR read),
    /// and phiward's implementation class UID and version name. What the file does not give
    /// (a SOP Instance UID in neither the meta nor the dataset) is not invented.
    Canonical,
    /// These elements (ascending tags, explicit VR little endian values), instead of the
    /// input's meta; the group length computed.
    Given(&'a [(u32, Vr, Vec<u8>)]),
}

/// The uncompressed transfer syntax of an encoding (implicit VR big endian has none).
fn plain_syntax(s: Syntax) -> Option<&'static str> {
    match (s.explicit, s.big) {
        (false, false) => Some("1.2.840.10008.1.2"),
        (true, false) => Some("1.2.840.10008.1.2.1"),
        (true, true) => Some("1.2.840.10008.1.2.2"),
        (false, true) => None,
    }
}

/// The transfer syntax UID of the dataset as the Part 10 writer writes it: the one the meta
/// names when the dataset was read in it (a deflated or encapsulated one too), else the
/// uncompressed syntax of the encoding the dataset was found in (no meta, no or an unknown
/// transfer syntax named, or explicit VR named over implicit VR). Encapsulated pixel data
/// needs its compressed syntax: with one named over a dataset not in its encoding (a JPEG
/// syntax over implicit VR, as pydicom's SC_rgb_jpeg.dcm), the named one (the input's own
/// mismatch: no transfer syntax is implicit VR with encapsulated pixel data, and the
/// compression is the one it names); with none known, None (the compression is not known).
pub fn written_syntax(doc: &Document) -> Option<&'static str> {
    let enc = doc.lexed.encoding.unwrap_or(Syntax::META);
    if let Some(t) = doc.lexed.syntax.filter(|t| t.explicit == enc.explicit && t.little != enc.big) {
        return Some(t.uid);
    }
    let encapsulated = doc.top(PIXEL_DATA).is_some_and(|i| doc.elements()[i].kind == Kind::Encapsulated);
    if encapsulated { doc.lexed.syntax.filter(|t| t.encapsulated).map(|t| t.uid) } else { plain_syntax(enc) }
}

/// The meta elements `fmt` adds (ascending tags), and the indices of the input's meta elements
/// they replace (an empty type 1 element, a transfer syntax the dataset is not in).
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: the dataset's SOP Class and Instance UIDs copied into its meta"
)]
fn canonical_meta(doc: &Document, disclosure: &Disclosure) -> (Added, Vec<usize>) {
    let mut add = Vec::new();
    let mut replaced = Vec::new();
    let value = |i: usize| trim_text(doc.value(i).expose_value(disclosure));
    // Added when absent, over the input's when empty (or, `over`, whatever it holds).
    let mut fill = |tag: u32, vr: Vr, v: Option<Vec<u8>>, over: bool| {
        let Some(v) = v.filter(|v| !v.is_empty()) else { return };
        match doc.top(tag) {
            None => add.push((tag, vr, v)),
            Some(i) if over || value(i).is_empty() => {
                replaced.push(i);
                add.push((tag, vr, v));
            }
            Some(_) => {}
        }
    };
    fill(0x0002_0001, Vr::OB, Some(vec![0, 1]), false);
    fill(0x0002_0002, Vr::UI, doc.top(0x0008_0016).map(|i| value(i).to_vec()), false);
    fill(0x0002_0003, Vr::UI, doc.top(0x0008_0018).map(|i| value(i).to_vec()), false);
    // The transfer syntax: as read when the dataset is in it, or when it is one phiward does
    // not know (the dataset was read as explicit VR little endian under it, and is written so).
    let named_unknown = doc.top(0x0002_0010).is_some_and(|i| !value(i).is_empty()) && doc.lexed.syntax.is_none();
    let coherent = doc.lexed.syntax.is_some() && written_syntax(doc) == doc.lexed.syntax.map(|t| t.uid);
    if !named_unknown && !coherent {
        fill(0x0002_0010, Vr::UI, written_syntax(doc).map(|u| u.as_bytes().to_vec()), true);
    }
    let no_class = doc.top(0x0002_0012).is_none_or(|i| value(i).is_empty());
    fill(0x0002_0012, Vr::UI, Some(IMPLEMENTATION_CLASS_UID.as_bytes().to_vec()), false);
    if no_class && doc.top(0x0002_0013).is_none() {
        fill(0x0002_0013, Vr(*b"SH"), Some(IMPLEMENTATION_VERSION_NAME.as_bytes().to_vec()), false);
    }
    add.sort_by_key(|a| a.0);
    (add, replaced)
}

/// Writes one value element (its value padded to an even length: NUL for UI and binary, a
/// space for text).
fn put_value(buf: &mut Vec<u8>, s: Syntax, tag: u32, vr: Vr, v: &[u8]) {
    let pad = v.len() % 2 == 1;
    header(buf, s, tag, vr, (v.len() + usize::from(pad)) as u32);
    buf.extend_from_slice(v);
    if pad {
        buf.push(if vr == Vr::UI || vr.is_bulk() { 0 } else { b' ' });
    }
}

/// The value of a sequence of `items` (each its elements: tag, VR, value; ascending tags) in
/// the syntax `doc`'s dataset is written in: items of defined length, for an insert of
/// [`part10_with`] with VR SQ (written with a defined length too).
pub fn sequence_value(doc: &Document, items: &[Added]) -> Vec<u8> {
    let s = doc.lexed.encoding.unwrap_or(Syntax::META);
    let mut out = Vec::new();
    for item in items {
        let mut body = Vec::new();
        for (tag, vr, v) in item {
            put_value(&mut body, s, *tag, *vr, v);
        }
        header(&mut out, s, 0xFFFE_E000, Vr::NONE, body.len() as u32);
        out.extend_from_slice(&body);
    }
    out
}

/// Writes a Part 10 file of the document, each element as `keep` decides (data channel).
/// Returns false, with nothing written, when the document was read in part (a file broken
/// mid-way: its part is never written as a whole file), a kept bulk value was left out of the
/// record or a replacement does not fit its VR's 16-bit length.
pub fn part10(
    doc: &Document,
    disclosure: &Disclosure,
    keep: &dyn Fn(usize, &Element) -> Keep,
    replacements: &[Vec<u8>],
    out: &mut Vec<u8>,
) -> bool {
    part10_bytes(doc, disclosure, keep, replacements, Meta::Canonical, &[], false, out)
}

/// [`part10`] with the file meta `meta` instead of the input's (the input's group 0002 is not
/// written), and top-level elements `inserts` (tag, VR, value; ascending tags, in the
/// dataset's syntax) written in their place among the dataset's top-level elements. A deflated
/// dataset is written deflated again.
pub fn part10_with(
    doc: &Document,
    disclosure: &Disclosure,
    keep: &dyn Fn(usize, &Element) -> Keep,
    replacements: &[Vec<u8>],
    meta: &[(u32, Vr, Vec<u8>)],
    inserts: &[(u32, Vr, Vec<u8>)],
    out: &mut Vec<u8>,
) -> bool {
    part10_bytes(doc, disclosure, keep, replacements, Meta::Given(meta), inserts, false, out)
}

/// The canonical Part 10 form with a deflated dataset written inflated (for comparing with a
/// record, which holds the dataset inflated).
pub fn part10_inflated(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) -> bool {
    part10_bytes(doc, disclosure, &|_, _| Keep::As, &[], Meta::Canonical, &[], true, out)
}

#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: Part 10 bytes of fmt and redact, under the disclosure"
)]
#[expect(clippy::too_many_arguments, reason = "one writer behind the three entry points above")]
fn part10_bytes(
    doc: &Document,
    disclosure: &Disclosure,
    keep: &dyn Fn(usize, &Element) -> Keep,
    replacements: &[Vec<u8>],
    meta_plan: Meta<'_>,
    inserts: &[(u32, Vr, Vec<u8>)],
    plain: bool,
    out: &mut Vec<u8>,
) -> bool {
    if doc.broken().is_some() {
        return false;
    }
    let dataset = doc.lexed.encoding.unwrap_or(Syntax::META);
    let mut pending = inserts.iter().peekable();
    let put = |buf: &mut Vec<u8>, tag: u32, vr: Vr, v: &[u8]| put_value(buf, dataset, tag, vr, v);
    let (mut added, replaced) = match meta_plan {
        Meta::Canonical => canonical_meta(doc, disclosure),
        Meta::Given(_) => (Vec::new(), Vec::new()),
    };
    let given = match meta_plan {
        Meta::Given(m) => Some(m),
        Meta::Canonical => None,
    };
    let mut meta_pending = given.unwrap_or(&added).iter().peekable();
    let els = doc.elements();
    let start = out.len();
    // Sized once: the redacted file is about the record's size (no copy as it grows).
    let mut body = Vec::with_capacity(doc.record_len());
    let mut meta = Vec::new();
    // Close markers: (index past the subtree, delimiter tag, syntax).
    let mut open: Vec<(usize, u32, Syntax)> = Vec::new();
    // A DICOMDIR's record offsets (PS3.3 F.3.2.1: byte offsets of directory record items from
    // the file's first byte): where each item was read and written, and where each offset
    // value sits in the body, so the offsets point at the same records in the file written.
    let mut items: Vec<(u64, usize)> = Vec::new();
    let mut offsets: Vec<(usize, u32, Syntax)> = Vec::new();
    let mut i = 0;
    while i < els.len() {
        while let Some(&(end, delim, s)) = open.last() {
            if i >= end {
                let buf = &mut body;
                header(buf, s, delim, Vr::NONE, 0);
                open.pop();
            } else {
                break;
            }
        }
        let e = els[i];
        let is_meta = e.tag >> 16 == 0x0002 && e.depth == 0;
        if e.tag == 0x0002_0000 && e.depth == 0 {
            i += 1;
            continue;
        }
        let decision = if is_meta && (given.is_some() || replaced.contains(&i)) { Keep::Drop } else { keep(i, &e) };
        if is_meta && decision != Keep::Drop {
            while let Some((tag, vr, v)) = meta_pending.next_if(|p| p.0 < e.tag) {
                put_value(&mut meta, Syntax::META, *tag, *vr, v);
            }
        }
        if e.depth == 0 && !is_meta {
            while let Some((tag, vr, v)) = pending.next_if(|p| p.0 < e.tag) {
                put(&mut body, *tag, *vr, v);
            }
        }
        let buf = if is_meta { &mut meta } else { &mut body };
        let s = if is_meta { Syntax::META } else { e.syntax };
        let subtree_end = (e.end as usize).max(i + 1);
        match (e.kind, decision) {
            (_, Keep::Drop) => {
                i = if matches!(e.kind, Kind::Sequence | Kind::Encapsulated | Kind::Item) {
                    subtree_end
                } else {
                    i + 1
                };
                continue;
            }
            (Kind::Sequence, Keep::Empty) => {
                header(buf, s, e.tag, e.vr, 0);
                i = subtree_end;
                continue;
            }
            (Kind::Sequence, _) => {
                // Items in another encoding than the sequence's (a UN read as SQ: implicit VR
                // LE items) are written under UN, as they came (PS3.5 6.2.2).
                let inner = els.get(i + 1).filter(|_| i + 1 < subtree_end).map(|c| c.syntax);
                let vr = if inner.is_some_and(|c| c != s) { Vr::UN } else { e.vr };
                header(buf, s, e.tag, vr, UNDEFINED);
                open.push((subtree_end, 0xFFFE_E0DD, s));
            }
            (Kind::Encapsulated, _) => {
                header(buf, s, e.tag, e.vr, UNDEFINED);
                open.push((subtree_end, 0xFFFE_E0DD, s));
            }
            (Kind::Item, _) => {
                if !is_meta {
                    items.push((e.offset, buf.len()));
                }
                header(buf, s, e.tag, Vr::NONE, UNDEFINED);
                open.push((subtree_end, 0xFFFE_E00D, s));
            }
            (Kind::Fragment, _) => {
                if doc.elided(i) {
                    out.truncate(start);
                    return false;
                }
                let v = doc.value(i).expose_value(disclosure);
                header(buf, s, e.tag, Vr::NONE, v.len() as u32);
                buf.extend_from_slice(v);
            }
            (Kind::Value, d) => {
                if d == Keep::As && doc.elided(i) {
                    out.truncate(start);
                    return false;
                }
                let v: &[u8] = match d {
                    Keep::Replace(r) => replacements.get(r).map_or(&[][..], |v| &v[..]),
                    Keep::Empty => &[],
                    _ => doc.value(i).expose_value(disclosure),
                };
                let pad = v.len() % 2 == 1;
                let len = v.len() + usize::from(pad);
                if (!s.explicit || e.vr.long_header()) && u32::try_from(len).is_err()
                    || s.explicit && !e.vr.long_header() && len > 0xFFFF
                {
                    out.truncate(start);
                    return false;
                }
                header(buf, s, e.tag, e.vr, len as u32);
                if !is_meta && e.vr == Vr::UL && is_record_offset(e.tag) {
                    if let Ok(b) = <[u8; 4]>::try_from(v) {
                        let n = if s.big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) };
                        offsets.push((buf.len(), n, s));
                    }
                }
                buf.extend_from_slice(v);
                if pad {
                    buf.push(if e.vr == Vr::UI || e.vr.is_bulk() { 0 } else { b' ' });
                }
            }
        }
        i += 1;
    }
    while let Some((_, delim, s)) = open.pop() {
        header(&mut body, s, delim, Vr::NONE, 0);
    }
    for (tag, vr, v) in pending {
        put(&mut body, *tag, *vr, v);
    }
    for (tag, vr, v) in meta_pending {
        put_value(&mut meta, Syntax::META, *tag, *vr, v);
    }
    for a in &mut added {
        crate::phi::wipe(&mut a.2);
    }
    if !offsets.is_empty() {
        let body_at = 132 + if meta.is_empty() { 0 } else { 12 + meta.len() };
        items.sort_unstable();
        for (at, was, s) in offsets {
            // An offset to a record not written (or to none: 0) becomes 0, "no such record".
            let now = match items.binary_search_by_key(&u64::from(was), |&(o, _)| o) {
                Ok(k) if was != 0 => items.get(k).and_then(|&(_, p)| u32::try_from(body_at + p).ok()).unwrap_or(0),
                _ => 0,
            };
            let bytes = if s.big { now.to_be_bytes() } else { now.to_le_bytes() };
            if let Some(slot) = body.get_mut(at..at + 4) {
                slot.copy_from_slice(&bytes);
            }
        }
    }
    out.reserve(132 + 12 + meta.len() + body.len());
    out.extend_from_slice(&[0u8; 128]);
    out.extend_from_slice(b"DICM");
    if !meta.is_empty() {
        header(out, Syntax::META, 0x0002_0000, Vr::UL, 4);
        out.extend_from_slice(&u32::try_from(meta.len()).unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&meta);
    }
    let deflate = doc.lexed.syntax.is_some_and(|t| t.deflated) && !plain;
    if deflate {
        let mut squeezed = deflated(&body);
        out.extend_from_slice(&squeezed);
        crate::phi::wipe(&mut squeezed);
    } else {
        out.extend_from_slice(&body);
    }
    crate::phi::wipe(&mut meta);
    crate::phi::wipe(&mut body);
    true
}

/// The attributes of a Basic Directory that hold a directory record's byte offset (PS3.3
/// F.3.2.1, F.3.2.2): the root directory's first and last records, a record's next and its
/// lower-level directory's first.
fn is_record_offset(tag: u32) -> bool {
    matches!(tag, 0x0004_1200 | 0x0004_1202 | 0x0004_1400 | 0x0004_1420)
}

/// `dataset` as raw deflate (RFC 1951, no zlib header) at level 6, padded to an even length
/// with a zero byte (PS3.5 A.5). The same bytes in give the same bytes out (one encoder, one
/// level, whole input at once).
fn deflated(dataset: &[u8]) -> Vec<u8> {
    let mut z = flate2::Compress::new(flate2::Compression::new(6), false);
    let mut out = Vec::with_capacity(dataset.len() / 2 + 64);
    loop {
        let before = z.total_in();
        let rest = dataset.get(usize::try_from(before).unwrap_or(usize::MAX)..).unwrap_or_default();
        if out.capacity() - out.len() < 64 * 1024 {
            out.reserve(64 * 1024);
        }
        match z.compress_vec(rest, &mut out, flate2::FlushCompress::Finish) {
            Ok(flate2::Status::StreamEnd) => break,
            Ok(_) => {}
            // The in-memory encoder does not fail; stop rather than loop.
            Err(_) => break,
        }
    }
    if out.len() % 2 == 1 {
        out.push(0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The implementation class UID is the one its documentation derives: SHA-256 of the fixed
    /// name, the first 128 bits with RFC 9562's version 8 and variant bits, under `2.25`.
    #[test]
    fn implementation_class_uid_is_derived_from_its_fixed_name() {
        use sha2::Digest as _;
        let h = sha2::Sha256::digest(b"phiward implementation class UID");
        let mut n = [0u8; 16];
        n.copy_from_slice(&h[..16]);
        n[6] = (n[6] & 0x0F) | 0x80;
        n[8] = (n[8] & 0x3F) | 0x80;
        assert_eq!(IMPLEMENTATION_CLASS_UID, format!("2.25.{}", u128::from_be_bytes(n)));
        assert!(IMPLEMENTATION_CLASS_UID.len() <= 64);
        assert!(IMPLEMENTATION_VERSION_NAME.len() <= 16);
    }
}
