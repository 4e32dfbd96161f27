//! DICOM validation: the file meta rules (PS3.10 7.1), the encoding rules the lexer leaves to
//! a verdict (even lengths, ascending tags, private creators, the explicit VR against the
//! dictionary's), each value against its VR (PS3.5 6.2: syntax and length) and its value
//! multiplicity (PS3.6), and the IOD of the SOP class (PS3.3 Annex A: the type 1 and 2
//! attributes of the mandatory modules, top level, and their type 1C and 2C attributes whose
//! condition the tables read; in every item of a sequence the IOD's modules define, the type 1
//! and 2 attributes of its macro and the 1C and 2C ones whose condition on the item is read; the
//! enumerated values of the modules' attributes at any depth, and of the Basic Directory's;
//! Number of Frames in a single-frame IOD), and Photometric Interpretation against the pixel
//! data's encoding (PS3.5 Section 8.2).
//!
//! What it does not do: evaluate conditions stated in other prose (conditional modules, the
//! other 1C and 2C attributes: reported once as `DICOM_CONDITION_UNCHECKED`), check the items of
//! the functional group sequences and of content items (which macro an item holds depends on
//! what the package's rows do not say), or check defined terms.

use std::collections::BTreeSet;

use super::charset::Charset;
use super::dict::{self, AttrType, Usage, Vr};
use super::lex::{self, Kind};
use super::read::Document;
use super::write;
use crate::diag::{Code, Diagnostic, DicomPosition, Location};

/// Most findings kept for one file.
pub const MAX_FINDINGS: usize = 1000;

/// What to check.
#[derive(Copy, Clone, Debug)]
pub struct Options {
    /// The reader's findings only (`parse`, `fmt`).
    pub syntax_only: bool,
    /// Warnings become errors.
    pub strict: bool,
}

struct Out {
    findings: Vec<Diagnostic>,
}

impl Out {
    fn push(&mut self, code: Code, p: DicomPosition) {
        if self.findings.len() < MAX_FINDINGS {
            self.findings.push(Diagnostic::new(code, Location::Dicom(p)));
        }
    }
}

fn tag_only(tag: u32) -> DicomPosition {
    let mut p = DicomPosition::new(u64::MAX);
    p.push(tag, 0);
    p
}

/// The findings on a document.
pub fn validate(doc: &Document, options: Options) -> Vec<Diagnostic> {
    let mut out = Out { findings: doc.lexed.findings.clone() };
    // A document read in part: the break (fatal), then what the elements before it show (the
    // attributes after the break are missing to the IOD check, as for dciodvfy).
    out.findings.extend(doc.broken());
    if !doc.preamble {
        out.push(Code::DICOM_PREAMBLE_MISSING, DicomPosition::new(0));
    }
    if !options.syntax_only {
        meta(doc, &mut out);
        elements(doc, &mut out);
        iod(doc, &mut out);
        photometric(doc, &mut out);
    }
    let mut f = out.findings;
    if options.strict {
        for d in &mut f {
            if d.severity == crate::diag::Severity::Warning {
                *d = d.with_severity(crate::diag::Severity::Error);
            }
        }
    }
    f.truncate(MAX_FINDINGS);
    f
}

fn meta(doc: &Document, out: &mut Out) {
    if !doc.lexed.meta {
        out.push(Code::DICOM_META_MISSING, DicomPosition::new(u64::MAX));
        return;
    }
    for tag in [0x0002_0001, 0x0002_0002, 0x0002_0003, 0x0002_0010] {
        match doc.top(tag) {
            Some(i) if !doc.value(i).is_empty() => {}
            Some(i) => out.push(Code::DICOM_META_ELEMENT_MISSING, doc.position(i)),
            None => out.push(Code::DICOM_META_ELEMENT_MISSING, tag_only(tag)),
        }
    }
    let declared = doc.top(0x0002_0000).and_then(|i| group_length(doc, i).map(|n| (i, n)));
    match (declared, doc.lexed.meta_length) {
        (Some((i, n)), Some(actual)) if u64::from(n) != actual => {
            out.push(Code::DICOM_META_GROUP_LENGTH, doc.position(i))
        }
        (None, _) => out.push(Code::DICOM_META_GROUP_LENGTH, tag_only(0x0002_0000)),
        _ => {}
    }
    for (m, d) in [(0x0002_0002, 0x0008_0016), (0x0002_0003, 0x0008_0018)] {
        if let (Some(a), Some(b)) = (doc.top(m), doc.top(d)) {
            if !same_uid(doc, a, b) {
                out.push(Code::DICOM_META_MISMATCH, doc.position(b));
            }
        }
    }
}

#[expect(clippy::disallowed_methods, reason = "a validator: reads the group length, a count of bytes of structure")]
fn group_length(doc: &Document, i: usize) -> Option<u32> {
    let v = doc.value(i).raw();
    Some(u32::from_le_bytes(v.try_into().ok()?))
}

#[expect(clippy::disallowed_methods, reason = "a validator: compares two UIDs; returns whether they are equal")]
fn same_uid(doc: &Document, a: usize, b: usize) -> bool {
    dict::trim_uid(doc.value(a).raw()) == dict::trim_uid(doc.value(b).raw())
}

fn elements(doc: &Document, out: &mut Out) {
    let els = doc.elements();
    let top_cs = write::charset(doc);
    let mut item_cs = std::collections::BTreeMap::new();
    // Last tag per dataset (the enclosing item's index), and the private blocks with a creator.
    let mut last: std::collections::BTreeMap<u32, u32> = std::collections::BTreeMap::new();
    let mut creators: BTreeSet<(u32, u32, u32)> = BTreeSet::new();
    for (i, e) in els.iter().enumerate() {
        if matches!(e.kind, Kind::Item | Kind::Fragment) {
            continue;
        }
        let prev = last.insert(e.parent, e.tag);
        if prev.is_some_and(|p| p >= e.tag) {
            out.push(Code::DICOM_TAG_ORDER, doc.position(i));
        }
        if dict::is_private(e.tag) {
            let (g, el) = (e.tag >> 16, e.tag & 0xFFFF);
            if dict::is_private_creator(e.tag) {
                creators.insert((e.parent, g, el & 0xFF));
            } else if el >= 0x1000 && !creators.contains(&(e.parent, g, el >> 8)) {
                out.push(Code::DICOM_PRIVATE_CREATOR_MISSING, doc.position(i));
            }
            continue;
        }
        if e.kind != Kind::Value {
            continue;
        }
        if e.length % 2 == 1 {
            out.push(Code::DICOM_ODD_LENGTH, doc.position(i));
        }
        let entry = dict::element(e.tag);
        if let Some(en) = entry {
            if !en.vr.is_empty() && e.vr != Vr::UN && !en.vr.split('|').any(|v| v.as_bytes() == e.vr.0) {
                out.push(Code::DICOM_VR_MISMATCH, doc.position(i));
            }
        }
        // Bulk values (a bulk VR, a pixel data tag) are not checked, so no check depends on
        // whether the record kept them (see `source`); the binary VRs checked here are never
        // bulk.
        if doc.elided(i) || e.vr.is_bulk() || lex::is_pixel_tag(e.tag) {
            continue;
        }
        let vm = entry.map_or("", |en| en.vm);
        // An item's own Specific Character Set counts its values' characters (PS3.5 7.5.3).
        let cs = if e.depth == 0 { top_cs } else { write::charset_of(doc, i, top_cs, &mut item_cs) };
        let (syntax, multiplicity) = doc.value(i).classify(|v| check(e.vr, vm, v, &cs));
        for code in [syntax, multiplicity].into_iter().flatten() {
            out.push(code, doc.position(i));
        }
    }
}

/// The value's syntax and length against its VR, and its multiplicity against `vm`.
fn check(vr: Vr, vm: &str, v: &[u8], cs: &Charset) -> (Option<Code>, Option<Code>) {
    if let Some(size) = vr.binary_size() {
        if v.len() % size != 0 {
            return (Some(Code::DICOM_VALUE_INVALID), None);
        }
        let n = v.len() / size;
        return (None, (n > 0 && !vm_ok(vm, n)).then_some(Code::DICOM_VM_INVALID));
    }
    if !vr.is_text() && vr.0 != *b"PN" {
        return (None, None);
    }
    let v = trim_end(v, vr == Vr::UI);
    if v.is_empty() {
        return (None, None);
    }
    if vr.is_single_text() {
        let max = match &vr.0 {
            b"ST" => 1024,
            b"LT" => 10240,
            _ => usize::MAX,
        };
        return ((chars(vr, v, max, cs) > max).then_some(Code::DICOM_VALUE_TOO_LONG), None);
    }
    let mut syntax = None;
    let mut n = 0;
    for part in v.split(|&b| b == b'\\') {
        n += 1;
        if syntax.is_none() {
            syntax = one(vr, part, cs);
        }
    }
    (syntax, (!vm_ok(vm, n)).then_some(Code::DICOM_VM_INVALID))
}

fn trim_end(v: &[u8], nul: bool) -> &[u8] {
    let mut v = v;
    while let [rest @ .., last] = v {
        if *last == b' ' || (nul && *last == 0) {
            v = rest;
        } else {
            break;
        }
    }
    v
}

/// The length of a value of a text VR whose maximum PS3.5 Table 6.2-1 gives in characters (LO,
/// SH, PN, ST, LT: "chars maximum (see Note in Section 6.2)"), in characters of the dataset's
/// character set: a character of a multi-byte set (UTF-8, GB18030, GBK, the two-byte ISO 2022
/// sets JIS X 0208/0212, KS X 1001, GB 2312) counts once and an ISO 2022 escape sequence not at
/// all. A value of no more bytes than `max` has no more characters: it is not decoded.
fn chars(vr: Vr, v: &[u8], max: usize, cs: &Charset) -> usize {
    if v.len() <= max || v.is_ascii() && !v.contains(&0x1B) {
        return v.len();
    }
    let mut text = cs.decode(vr, v);
    let n = text.chars().count();
    crate::phi::wipe_string(&mut text);
    n
}

fn digits(v: &[u8]) -> bool {
    !v.is_empty() && v.iter().all(u8::is_ascii_digit)
}

fn num(v: &[u8]) -> u32 {
    v.iter().fold(0u32, |n, &d| n.saturating_mul(10).saturating_add(u32::from(d.wrapping_sub(b'0'))))
}

fn date_ok(v: &[u8]) -> bool {
    if v.len() != 8 || !digits(v) {
        return false;
    }
    let (m, d) = (num(&v[4..6]), num(&v[6..8]));
    (1..=12).contains(&m) && (1..=31).contains(&d)
}

fn time_ok(v: &[u8]) -> bool {
    let (main, frac) = match v.iter().position(|&b| b == b'.') {
        Some(p) => (&v[..p], Some(&v[p + 1..])),
        None => (v, None),
    };
    if !matches!(main.len(), 2 | 4 | 6) || !digits(main) {
        return false;
    }
    if frac.is_some() && main.len() != 6 {
        return false;
    }
    if let Some(f) = frac {
        if f.is_empty() || f.len() > 6 || !digits(f) {
            return false;
        }
    }
    let hh = num(&main[..2]);
    let mm = if main.len() >= 4 { num(&main[2..4]) } else { 0 };
    let ss = if main.len() >= 6 { num(&main[4..6]) } else { 0 };
    hh < 24 && mm < 60 && ss < 61
}

fn datetime_ok(v: &[u8]) -> bool {
    let (main, zone) = match v.iter().position(|&b| b == b'+' || b == b'-') {
        Some(p) => (&v[..p], Some(&v[p + 1..])),
        None => (v, None),
    };
    if let Some(z) = zone {
        if z.len() != 4 || !digits(z) {
            return false;
        }
    }
    let (whole, frac) = match main.iter().position(|&b| b == b'.') {
        Some(p) => (&main[..p], Some(&main[p + 1..])),
        None => (main, None),
    };
    if !matches!(whole.len(), 4 | 6 | 8 | 10 | 12 | 14) || !digits(whole) {
        return false;
    }
    if let Some(f) = frac {
        if whole.len() != 14 || f.is_empty() || f.len() > 6 || !digits(f) {
            return false;
        }
    }
    let m = if whole.len() >= 6 { num(&whole[4..6]) } else { 1 };
    let d = if whole.len() >= 8 { num(&whole[6..8]) } else { 1 };
    (1..=12).contains(&m) && (1..=31).contains(&d) && (whole.len() < 10 || time_ok(&whole[8..]))
}

fn ds_ok(v: &[u8]) -> bool {
    let t = v.trim_ascii();
    let s = std::str::from_utf8(t).unwrap_or("x");
    !t.is_empty()
        && t.iter().all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
        && s.parse::<f64>().is_ok_and(f64::is_finite)
}

fn is_ok(v: &[u8]) -> bool {
    let t = v.trim_ascii();
    let body = t.strip_prefix(b"+").or_else(|| t.strip_prefix(b"-")).unwrap_or(t);
    digits(body)
        && std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.trim_start_matches('+').parse::<i64>().ok())
            .is_some_and(|n| (i64::from(i32::MIN)..=i64::from(i32::MAX)).contains(&n))
}

fn uid_ok(v: &[u8]) -> bool {
    !v.is_empty() && v.split(|&b| b == b'.').all(|c| digits(c) && (c.len() == 1 || c[0] != b'0'))
}

/// One value of a multi-valued text VR.
fn one(vr: Vr, v: &[u8], cs: &Charset) -> Option<Code> {
    let (max, ok) = match &vr.0 {
        b"AE" => (16, v.iter().all(|&b| (0x20..0x7F).contains(&b)) && !v.trim_ascii().is_empty() || v.is_empty()),
        b"AS" => (4, v.is_empty() || v.len() == 4 && digits(&v[..3]) && matches!(v[3], b'D' | b'W' | b'M' | b'Y')),
        b"CS" => (16, v.iter().all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ' || b == b'_')),
        b"DA" => (8, v.is_empty() || date_ok(v)),
        b"DS" => (16, v.is_empty() || ds_ok(v)),
        b"DT" => (26, v.is_empty() || datetime_ok(v.trim_ascii_end())),
        b"IS" => (12, v.is_empty() || is_ok(v)),
        b"TM" => (14, v.is_empty() || time_ok(v.trim_ascii_end())),
        b"UI" => (64, v.is_empty() || uid_ok(trim_end(v, true))),
        b"LO" => (64, true),
        b"SH" => (16, true),
        b"PN" => (64 * 3 + 2, v.split(|&b| b == b'=').count() <= 3),
        _ => (usize::MAX, true),
    };
    if !ok {
        return Some(Code::DICOM_VALUE_INVALID);
    }
    // Characters for LO, SH and PN; bytes for the others (AE, AS, CS, DA, DS, DT, IS, TM, UI:
    // "bytes maximum" or "bytes fixed" in PS3.5 Table 6.2-1).
    let n = if matches!(&vr.0, b"LO" | b"SH" | b"PN") { chars(vr, v, max, cs) } else { v.len() };
    (n > max).then_some(Code::DICOM_VALUE_TOO_LONG)
}

/// True when `n` values fit the multiplicity `vm` (`1`, `1-3`, `1-n`, `2-2n`; alternatives by
/// `|`; an empty or unreadable multiplicity fits anything).
fn vm_ok(vm: &str, n: usize) -> bool {
    if vm.is_empty() {
        return true;
    }
    // Most of the dictionary: one value (what the general case below gives for "1").
    if vm == "1" {
        return n == 1;
    }
    vm.split('|').any(|alt| {
        let alt = alt.trim();
        let (lo, hi) = alt.split_once('-').unwrap_or((alt, alt));
        let Ok(lo) = lo.trim().parse::<usize>() else { return true };
        let hi = hi.trim();
        if hi == "n" {
            return n >= lo;
        }
        if let Some(step) = hi.strip_suffix('n') {
            let step = step.parse::<usize>().unwrap_or(1).max(1);
            return n >= lo && n % step == 0;
        }
        hi.parse::<usize>().map_or(true, |hi| (lo..=hi).contains(&n))
    })
}

fn iod(doc: &Document, out: &mut Out) {
    let Some((_, _, iod)) = write::sop_class(doc) else {
        out.push(Code::DICOM_SOP_CLASS_UNKNOWN, tag_only(0x0008_0016));
        // A DICOMDIR: the Basic Directory IOD's enumerated values (PS3.3 F.3.2.2), written in the
        // generator (the package has no Annex F); its modules are not checked.
        if is_directory(doc) {
            check_enumerations(doc, &dict::directory_enumerations(), out);
        }
        return;
    };
    let mut conditions = false;
    let mut seen = BTreeSet::new();
    for (module, attrs, usage) in dict::iod_modules_indexed(iod) {
        match usage {
            Usage::Conditional => conditions = true,
            Usage::User => {}
            Usage::Mandatory => {
                for &(tag, ty) in attrs {
                    let ty = dict::iod_override(iod, tag).unwrap_or(ty);
                    // A 1C or 2C attribute whose condition was read is required as 1 or 2 when
                    // the condition holds, and not checked otherwise.
                    let ty = match ty {
                        AttrType::T1C | AttrType::T2C => {
                            let mut read = false;
                            let mut holds = false;
                            for c in dict::module_conditions(module, tag) {
                                read = true;
                                holds |= condition_holds(doc, c);
                            }
                            if !read {
                                conditions = true;
                                continue;
                            }
                            if !holds {
                                continue;
                            }
                            if ty == AttrType::T1C { AttrType::T1 } else { AttrType::T2 }
                        }
                        other => other,
                    };
                    match ty {
                        AttrType::T1C | AttrType::T2C | AttrType::T3 => {}
                        AttrType::T1 | AttrType::T2 => {
                            if !seen.insert(tag) {
                                continue;
                            }
                            match doc.top(tag) {
                                None => out.push(Code::DICOM_ATTRIBUTE_MISSING, tag_only(tag)),
                                Some(i) => {
                                    let e = doc.elements()[i];
                                    let empty = e.length == 0 || (e.kind == Kind::Sequence && e.number == 0);
                                    if ty == AttrType::T1 && empty {
                                        out.push(Code::DICOM_ATTRIBUTE_EMPTY, doc.position(i));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    conditions |= items(doc, iod, out);
    if conditions {
        out.push(Code::DICOM_CONDITION_UNCHECKED, DicomPosition::new(u64::MAX));
    }
    enumerated(doc, iod, out);
    frames(doc, iod, out);
}

/// True when the file's SOP class (the dataset's, else the file meta's) is the Media Storage
/// Directory Storage of a DICOMDIR.
fn is_directory(doc: &Document) -> bool {
    let Some(i) = doc.top(0x0008_0016).or_else(|| doc.top(0x0002_0002)) else { return false };
    doc.value(i).classify(|v| dict::trim_uid(v) == dict::MEDIA_STORAGE_DIRECTORY.as_bytes())
}

/// Number of Frames (0028,0008) greater than 1 in an instance of an IOD none of whose modules
/// has the attribute (PS3.3 C.7.6.6, the Multi-frame Module, defines it; the CT Image and
/// Secondary Capture Image IODs, A.3 and A.8.1, do not include that module: their instances are
/// single images): `DICOM_MULTI_FRAME_INVALID` at the element.
fn frames(doc: &Document, iod: u16, out: &mut Out) {
    let Some(i) = doc.top(0x0028_0008) else { return };
    if dict::iod_has_frames(iod) || doc.elements()[i].kind != Kind::Value {
        return;
    }
    let (vr, big) = (doc.elements()[i].vr, doc.elements()[i].syntax.big);
    if doc.value(i).classify(|v| integer(vr, big, v).is_some_and(|n| n > 1)) {
        out.push(Code::DICOM_MULTI_FRAME_INVALID, doc.position(i));
    }
}

/// The first value of an integer attribute (IS, or US/SS/UL/SL in the dataset's byte order).
fn integer(vr: Vr, big: bool, v: &[u8]) -> Option<i64> {
    match (&vr.0, v) {
        (b"IS", _) => {
            let first = v.split(|&b| b == b'\\').next()?;
            std::str::from_utf8(first.trim_ascii()).ok()?.trim_start_matches('+').parse::<i64>().ok()
        }
        (b"US", &[a, b, ..]) => {
            Some(i64::from(if big { u16::from_be_bytes([a, b]) } else { u16::from_le_bytes([a, b]) }))
        }
        (b"SS", &[a, b, ..]) => {
            Some(i64::from(if big { i16::from_be_bytes([a, b]) } else { i16::from_le_bytes([a, b]) }))
        }
        (b"UL", &[a, b, c, d, ..]) => {
            Some(i64::from(if big { u32::from_be_bytes([a, b, c, d]) } else { u32::from_le_bytes([a, b, c, d]) }))
        }
        (b"SL", &[a, b, c, d, ..]) => {
            Some(i64::from(if big { i32::from_be_bytes([a, b, c, d]) } else { i32::from_le_bytes([a, b, c, d]) }))
        }
        _ => None,
    }
}

/// Photometric Interpretation (0028,0004) against the encoding of the top-level Pixel Data
/// (7FE0,0010) (PS3.5 Section 8.2): encapsulated under a transfer syntax whose table of valid
/// values the generator writes (JPEG, JPEG-LS, JPEG 2000, RLE; by Samples per Pixel
/// (0028,0002)), or native (not YBR_RCT, YBR_ICT, YBR_PARTIAL_420). A term that is not one of
/// PS3.3 C.7.6.3.1.2's is not constrained. `DICOM_PHOTOMETRIC_INVALID` at the element.
fn photometric(doc: &Document, out: &mut Out) {
    let (Some(px), Some(pi)) = (doc.top(0x7FE0_0010), doc.top(0x0028_0004)) else { return };
    let els = doc.elements();
    let encapsulated = match els[px].kind {
        Kind::Encapsulated => match doc.lexed.syntax {
            Some(ts) if ts.encapsulated => Some(ts.uid),
            // Fragments under a syntax that names none, or an unknown one: the compression is
            // not known.
            _ => return,
        },
        Kind::Value => None,
        _ => return,
    };
    if els[pi].kind != Kind::Value {
        return;
    }
    // Samples per Pixel: 1 or 3 (the tables' rows), another number (no row: not constrained),
    // or absent or unreadable (any row).
    let samples = doc.top(0x0028_0002).and_then(|i| {
        let (vr, big) = (els[i].vr, els[i].syntax.big);
        let ((one, three), number) = doc.value(i).classify(|v| {
            let n = integer(vr, big, v);
            ((n == Some(1), n == Some(3)), n.is_some())
        });
        if one {
            Some(1)
        } else if three {
            Some(3)
        } else {
            number.then_some(0)
        }
    });
    let bad = doc.value(pi).classify(|v| {
        let term = trim_end(v, false).trim_ascii_start();
        dict::photometric_allowed(encapsulated, samples, term) == Some(false)
    });
    if bad {
        out.push(Code::DICOM_PHOTOMETRIC_INVALID, doc.position(pi));
    }
}

/// Type 1 and 2 attributes (and 1C and 2C ones whose condition is read and holds on the item) of
/// every item of a sequence the IOD's modules define (PS3.3's macros, as the package flattens
/// them into each module): absent (`DICOM_ATTRIBUTE_MISSING`) or type 1 without a value
/// (`DICOM_ATTRIBUTE_EMPTY`), at the item's path and the attribute's tag
/// (`(0008,1140)[1].(0008,1150)`). An attribute is required only when every module of the IOD
/// that has the sequence at that path requires it (two modules may define one sequence
/// differently); a sequence some module marks not checked (functional groups, content items) is
/// not checked. Returns whether an item held an attribute whose condition is not read.
fn items(doc: &Document, iod: u16, out: &mut Out) -> bool {
    let els = doc.elements();
    let modules: Vec<u16> = dict::iod_modules_indexed(iod).map(|(m, _, _)| m).collect();
    // Each item's children: (item index, tag) -> element index (the first of a tag).
    let mut children: std::collections::BTreeMap<(u32, u32), usize> = std::collections::BTreeMap::new();
    for (i, e) in els.iter().enumerate().skip(doc.lexed.dataset) {
        if matches!(e.kind, Kind::Item | Kind::Fragment) {
            continue;
        }
        if els.get(e.parent as usize).is_some_and(|p| p.kind == Kind::Item) {
            children.entry((e.parent, e.tag)).or_insert(i);
        }
    }
    let mut unread = false;
    for (item, e) in els.iter().enumerate().skip(doc.lexed.dataset) {
        if e.kind != Kind::Item {
            continue;
        }
        if els.get(e.parent as usize).is_none_or(|s| s.kind != Kind::Sequence) {
            continue;
        }
        let path = tag_path(els, e.parent as usize);
        let mut rules = Vec::new();
        let mut skip = false;
        for &m in &modules {
            match dict::module_item_rule(m, &path) {
                Some(dict::ItemRule::Attributes(set, attrs)) => rules.push((set, attrs)),
                Some(dict::ItemRule::NotChecked) => skip = true,
                None => {}
            }
        }
        let Some(&(_, first)) = rules.first() else { continue };
        if skip {
            continue;
        }
        let item32 = item as u32;
        let child = |tag: u32| children.get(&(item32, tag)).copied();
        for &(tag, _) in first {
            // The requirement every module having the sequence agrees on: the weakest.
            let mut need = Some(AttrType::T1);
            for &(set, attrs) in &rules {
                let ty = attrs.iter().find(|a| a.0 == tag).map(|a| a.1);
                let this = match ty {
                    Some(AttrType::T1) => Some(AttrType::T1),
                    Some(AttrType::T2) => Some(AttrType::T2),
                    Some(t @ (AttrType::T1C | AttrType::T2C)) => {
                        let mut read = false;
                        let mut holds = false;
                        for c in dict::item_conditions(set, tag) {
                            read = true;
                            holds |= condition_holds_in(doc, c, &child);
                        }
                        if !read {
                            unread = true;
                        }
                        (read && holds).then_some(if t == AttrType::T1C { AttrType::T1 } else { AttrType::T2 })
                    }
                    _ => None,
                };
                need = match (need, this) {
                    (Some(AttrType::T1), Some(t)) => Some(t),
                    (Some(AttrType::T2), Some(_)) => Some(AttrType::T2),
                    _ => None,
                };
            }
            let Some(need) = need else { continue };
            let mut p = doc.position(item);
            match child(tag) {
                None => {
                    p.push(tag, 0);
                    out.push(Code::DICOM_ATTRIBUTE_MISSING, p);
                }
                Some(i) => {
                    let c = els[i];
                    let empty = c.length == 0 || (c.kind == Kind::Sequence && c.number == 0);
                    if need == AttrType::T1 && empty {
                        out.push(Code::DICOM_ATTRIBUTE_EMPTY, doc.position(i));
                    }
                }
            }
        }
    }
    unread
}

/// True when a condition read from PS3.3 holds in an item (its attributes found by `child`).
fn condition_holds_in(doc: &Document, c: dict::Condition, child: &dyn Fn(u32) -> Option<usize>) -> bool {
    match c {
        dict::Condition::Present(t) => child(t).is_some(),
        dict::Condition::Absent(t) => child(t).is_none(),
        dict::Condition::OneOf(t, pos, values) => {
            child(t).is_some_and(|i| doc.value(i).classify(|v| value_is(v, pos, values)))
        }
    }
}

/// True when a condition read from PS3.3 holds in the top-level dataset (an attribute present
/// with or without a value; a value compared as a code string without its padding).
fn condition_holds(doc: &Document, c: dict::Condition) -> bool {
    match c {
        dict::Condition::Present(t) => doc.top(t).is_some(),
        dict::Condition::Absent(t) => doc.top(t).is_none(),
        dict::Condition::OneOf(t, pos, values) => {
            doc.top(t).is_some_and(|i| doc.value(i).classify(|v| value_is(v, pos, values)))
        }
    }
}

/// True when the code string's value `pos` (0: its only value) is one of `values` (an absent or
/// empty value is none of them).
fn value_is(v: &[u8], pos: u8, values: &[&str]) -> bool {
    let n = usize::from(pos.max(1)) - 1;
    v.split(|&b| b == b'\\').nth(n).is_some_and(|part| {
        let t = part.trim_ascii();
        !t.is_empty() && values.iter().any(|x| x.as_bytes() == t)
    })
}

/// Values outside the enumerated values the IOD's modules list for their attribute (PS3.3
/// "Enumerated Values:"; "Defined Terms" may be extended and are not checked), at any depth:
/// `DICOM_ENUMERATED_VALUE` at the element's tag path, once per element.
fn enumerated(doc: &Document, iod: u16, out: &mut Out) {
    check_enumerations(doc, &dict::iod_enumerations(iod), out);
}

/// `DICOM_ENUMERATED_VALUE` for each element whose tag path has a list its value is not in.
fn check_enumerations(doc: &Document, lists: &[dict::Enumeration], out: &mut Out) {
    if lists.is_empty() {
        return;
    }
    let last: BTreeSet<u32> = lists.iter().filter_map(|l| l.path.last().copied()).collect();
    let els = doc.elements();
    for (i, e) in els.iter().enumerate() {
        if i < doc.lexed.dataset || e.kind != Kind::Value || !last.contains(&e.tag) || doc.elided(i) {
            continue;
        }
        let path = tag_path(els, i);
        let bad = lists.iter().filter(|l| l.path == path.as_slice()).any(|l| {
            let (vr, big) = (e.vr, e.syntax.big);
            !doc.value(i).classify(|v| enum_ok(vr, big, v, l.position, l.values))
        });
        if bad {
            out.push(Code::DICOM_ENUMERATED_VALUE, doc.position(i));
        }
    }
}

/// The tags from the top level to element `i` (its sequences, then its own tag).
fn tag_path(els: &[lex::Element], i: usize) -> Vec<u32> {
    let mut path = vec![els[i].tag];
    let mut cur = els[i].parent;
    while let Some(item) = els.get(cur as usize) {
        if item.kind == Kind::Sequence {
            path.push(item.tag);
        }
        cur = item.parent;
        if path.len() > 64 {
            break;
        }
    }
    path.reverse();
    path
}

/// True when the value at `position` (0: every value) is one of `values`, or empty (a type 2
/// attribute may be; an absent value position is the VM check's). Text is compared without
/// its padding; integers (binary in the dataset's byte order, or IS) as decimal numbers; a
/// VR the lists do not hold (the element's VR differs from the dictionary's) passes.
fn enum_ok(vr: Vr, big: bool, v: &[u8], position: u8, values: &[&str]) -> bool {
    let pick = |n: usize| position == 0 || n + 1 == usize::from(position);
    let listed = |s: &[u8]| values.iter().any(|x| x.as_bytes() == s);
    let number = |n: i64| listed(n.to_string().as_bytes());
    match &vr.0 {
        b"US" | b"SS" | b"UL" | b"SL" => {
            let size = if matches!(&vr.0, b"US" | b"SS") { 2 } else { 4 };
            v.chunks_exact(size).enumerate().filter(|&(n, _)| pick(n)).all(|(_, c)| {
                let n = match (&vr.0, c) {
                    (b"US", &[a, b]) => {
                        i64::from(if big { u16::from_be_bytes([a, b]) } else { u16::from_le_bytes([a, b]) })
                    }
                    (b"SS", &[a, b]) => {
                        i64::from(if big { i16::from_be_bytes([a, b]) } else { i16::from_le_bytes([a, b]) })
                    }
                    (b"UL", &[a, b, c, d]) => {
                        i64::from(if big { u32::from_be_bytes([a, b, c, d]) } else { u32::from_le_bytes([a, b, c, d]) })
                    }
                    (_, &[a, b, c, d]) => {
                        i64::from(if big { i32::from_be_bytes([a, b, c, d]) } else { i32::from_le_bytes([a, b, c, d]) })
                    }
                    _ => return true,
                };
                number(n)
            })
        }
        b"CS" | b"SH" | b"LO" | b"UI" | b"AE" | b"IS" => {
            v.split(|&b| b == b'\\').enumerate().filter(|&(n, _)| pick(n)).all(|(_, part)| {
                let t = trim_end(part, vr == Vr::UI).trim_ascii_start();
                if t.is_empty() {
                    return true;
                }
                if vr.0 == *b"IS" {
                    return std::str::from_utf8(t.trim_ascii())
                        .ok()
                        .and_then(|s| s.trim_start_matches('+').parse::<i64>().ok())
                        .is_none_or(number);
                }
                listed(t)
            })
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_syntax() {
        assert!(date_ok(b"20240131") && !date_ok(b"2024-01-31") && !date_ok(b"20241301"));
        assert!(time_ok(b"1230") && time_ok(b"123059.123456") && !time_ok(b"12:30") && !time_ok(b"2500"));
        assert!(datetime_ok(b"20240131123059.1+0100") && !datetime_ok(b"2024013"));
        assert!(ds_ok(b" -1.5e3 ") && !ds_ok(b"abc") && !ds_ok(b"1,5"));
        assert!(is_ok(b"+12") && !is_ok(b"1.0") && !is_ok(b"99999999999"));
        assert!(uid_ok(b"1.2.840.10008") && !uid_ok(b"1.02.3") && !uid_ok(b"1..2"));
        assert!(vm_ok("1", 1) && !vm_ok("1", 2) && vm_ok("1-n", 5) && vm_ok("2-2n", 4) && !vm_ok("2-2n", 3));
        let plain = Charset::default();
        assert_eq!(check(Vr(*b"CS"), "1", b"ORIGINAL\\PRIMARY", &plain).1, Some(Code::DICOM_VM_INVALID));
        assert_eq!(check(Vr(*b"US"), "1", &[1, 0, 2], &plain).0, Some(Code::DICOM_VALUE_INVALID));
        assert_eq!(check(Vr(*b"SH"), "1", &[b'A'; 17], &plain).0, Some(Code::DICOM_VALUE_TOO_LONG));
    }

    /// A value of `n` JIS X 0208 characters (ISO 2022 IR 87): `ESC $ B`, two bytes each, `ESC ( B`.
    fn kanji(n: usize) -> Vec<u8> {
        let mut v = b"\x1b$B".to_vec();
        for _ in 0..n {
            v.extend_from_slice(b"\x3b\x33");
        }
        v.extend_from_slice(b"\x1b(B");
        v
    }

    #[test]
    fn iso2022_lengths_count_characters_not_bytes() {
        let jp = Charset::from_value(b"\\ISO 2022 IR 87");
        // 40 characters in 86 bytes: an LO of 64 characters at most holds them.
        assert_eq!(check(Vr(*b"LO"), "1", &kanji(40), &jp).0, None);
        assert_eq!(check(Vr(*b"LO"), "1", &kanji(65), &jp).0, Some(Code::DICOM_VALUE_TOO_LONG));
        // PN: a family name of 30 characters and a given name of 30 (128 bytes).
        let mut pn = kanji(30);
        pn.push(b'^');
        pn.extend_from_slice(&kanji(30));
        assert_eq!(check(Vr(*b"PN"), "1", &pn, &jp).0, None);
        // SH: 16 characters at most; 10 Korean characters (KS X 1001 in G1) are 24 bytes.
        let kr = Charset::from_value(b"\\ISO 2022 IR 149");
        let mut sh = b"\x1b$)C".to_vec();
        for _ in 0..10 {
            sh.extend_from_slice(&[0xB1, 0xE8]);
        }
        assert_eq!(check(Vr(*b"SH"), "1", &sh, &kr).0, None);
        sh.extend_from_slice(&[0xB1, 0xE8].repeat(7));
        assert_eq!(check(Vr(*b"SH"), "1", &sh, &kr).0, Some(Code::DICOM_VALUE_TOO_LONG));
        // ST: 1024 characters; 600 characters are 1206 bytes.
        assert_eq!(check(Vr(*b"ST"), "1", &kanji(600), &jp).0, None);
        assert_eq!(check(Vr(*b"ST"), "1", &kanji(1025), &jp).0, Some(Code::DICOM_VALUE_TOO_LONG));
        // UTF-8 (ISO_IR 192): 20 three-byte characters in an SH of 16 characters are too many, 16 are not.
        let utf8 = Charset::from_value(b"ISO_IR 192");
        assert_eq!(check(Vr(*b"SH"), "1", "\u{5C71}".repeat(16).as_bytes(), &utf8).0, None);
        assert_eq!(check(Vr(*b"SH"), "1", "\u{5C71}".repeat(20).as_bytes(), &utf8).0, Some(Code::DICOM_VALUE_TOO_LONG));
        // Bytes where the standard says bytes: a CS or UI counts its bytes whatever the set.
        assert_eq!(check(Vr(*b"CS"), "1", &[b'A'; 17], &jp).0, Some(Code::DICOM_VALUE_TOO_LONG));
        let uid = [b"1.".repeat(32).as_slice(), b"1"].concat();
        assert_eq!(check(Vr(*b"UI"), "1", &uid, &jp).0, Some(Code::DICOM_VALUE_TOO_LONG));
    }

    #[test]
    fn enumerated_values_by_position() {
        let sex: &[&str] = &["F", "M", "O"];
        assert!(enum_ok(Vr(*b"CS"), false, b"M ", 0, sex));
        assert!(!enum_ok(Vr(*b"CS"), false, b"X ", 0, sex));
        // Empty: a type 2 attribute may be; not an enumerated value error.
        assert!(enum_ok(Vr(*b"CS"), false, b"", 0, sex));
        // Image Type: value 1 and value 2 each against their own list; value 3 is free.
        let v1: &[&str] = &["DERIVED", "ORIGINAL"];
        let v2: &[&str] = &["PRIMARY", "SECONDARY"];
        let it = b"ORIGINAL\\PRIMARY\\AXIAL ";
        assert!(enum_ok(Vr(*b"CS"), false, it, 1, v1) && enum_ok(Vr(*b"CS"), false, it, 2, v2));
        let swapped = b"PRIMARY\\ORIGINAL";
        assert!(!enum_ok(Vr(*b"CS"), false, swapped, 1, v1) && !enum_ok(Vr(*b"CS"), false, swapped, 2, v2));
        // A value position the value does not have is the VM check's, not this one's.
        assert!(enum_ok(Vr(*b"CS"), false, b"ORIGINAL", 2, v2));
        // Binary integers in the dataset's byte order, and IS, as decimal numbers.
        let one: &[&str] = &["1"];
        assert!(enum_ok(Vr(*b"US"), false, &[1, 0], 0, one) && !enum_ok(Vr(*b"US"), false, &[3, 0], 0, one));
        assert!(enum_ok(Vr(*b"US"), true, &[0, 1], 0, one) && !enum_ok(Vr(*b"US"), true, &[1, 0], 0, one));
        assert!(enum_ok(Vr(*b"IS"), false, b" +1 ", 0, one) && !enum_ok(Vr(*b"IS"), false, b"2 ", 0, one));
        // A UI padded with NUL.
        let uids: &[&str] = &["1.2.840.10008.1.2"];
        assert!(enum_ok(Vr(*b"UI"), false, b"1.2.840.10008.1.2\0", 0, uids));
    }

    #[test]
    fn condition_values() {
        let ori: &[&str] = &["MIXED", "ORIGINAL"];
        assert!(value_is(b"ORIGINAL\\PRIMARY", 1, ori) && value_is(b"MIXED ", 1, ori));
        assert!(!value_is(b"DERIVED\\PRIMARY", 1, ori) && !value_is(b"", 1, ori) && !value_is(b"\\ORIGINAL", 1, ori));
        let yes: &[&str] = &["01"];
        assert!(value_is(b"01", 0, yes) && !value_is(b"00", 0, yes));
        // The CT IOD has 1C/2C attributes whose conditions are read.
        let ct = dict::sop_class(b"1.2.840.10008.5.1.4.1.1.2").map_or(u16::MAX, |s| s.3);
        let read = dict::iod_modules_indexed(ct)
            .flat_map(|(m, attrs, _)| attrs.iter().map(move |a| (m, a.0)))
            .filter(|&(m, t)| dict::module_conditions(m, t).next().is_some())
            .count();
        assert!(read > 0);
    }

    #[test]
    fn enumerations_of_the_ct_iod() {
        let ct = dict::sop_class(b"1.2.840.10008.5.1.4.1.1.2").map_or(u16::MAX, |s| s.3);
        let lists = dict::iod_enumerations(ct);
        let of = |path: &[u32], pos: u8| lists.iter().find(|l| l.path == path && l.position == pos).map(|l| l.values);
        // Patient Module (PS3.3 C.7.1.1): Patient's Sex.
        assert_eq!(of(&[0x0010_0040], 0), Some(&["F", "M", "O"][..]));
        // General Image (C.7.6.1.1.2): Image Type values 1 and 2; CT Image (C.8.2.1.1.3).
        assert_eq!(of(&[0x0008_0008], 1), Some(&["DERIVED", "ORIGINAL"][..]));
        assert_eq!(of(&[0x0008_0008], 2), Some(&["PRIMARY", "SECONDARY"][..]));
        assert_eq!(of(&[0x0028_0004], 0), Some(&["MONOCHROME1", "MONOCHROME2"][..]));
        // A defined term list is not an enumeration: Body Part Examined (General Series).
        assert_eq!(of(&[0x0018_0015], 0), None);
    }
}
