//! DICOM validation: the file meta rules (PS3.10 7.1), the encoding rules the lexer leaves to
//! a verdict (even lengths, ascending tags, private creators, the explicit VR against the
//! dictionary's), each value against its VR (PS3.5 6.2: syntax and length) and its value
//! multiplicity (PS3.6), and the IOD of the SOP class (PS3.3 Annex A: the type 1 and 2
//! attributes of the mandatory modules, top level).
//!
//! What it does not do: evaluate conditions stated in prose (conditional modules, type 1C and
//! 2C attributes: reported once as `DICOM_CONDITION_UNCHECKED`), check attributes inside
//! sequences against their macros, or check enumerated values.

use std::collections::BTreeSet;

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
    let utf8 = write::charset(doc).is_utf8();
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
        let (syntax, multiplicity) = doc.value(i).classify(|v| check(e.vr, vm, v, utf8));
        for code in [syntax, multiplicity].into_iter().flatten() {
            out.push(code, doc.position(i));
        }
    }
}

/// The value's syntax and length against its VR, and its multiplicity against `vm`.
fn check(vr: Vr, vm: &str, v: &[u8], utf8: bool) -> (Option<Code>, Option<Code>) {
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
        return ((chars(v, utf8) > max).then_some(Code::DICOM_VALUE_TOO_LONG), None);
    }
    let mut syntax = None;
    let mut n = 0;
    for part in v.split(|&b| b == b'\\') {
        n += 1;
        if syntax.is_none() {
            syntax = one(vr, part, utf8);
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

fn chars(v: &[u8], utf8: bool) -> usize {
    if utf8 { v.iter().filter(|&&b| b & 0xC0 != 0x80).count() } else { v.len() }
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
fn one(vr: Vr, v: &[u8], utf8: bool) -> Option<Code> {
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
    let n = if matches!(&vr.0, b"LO" | b"SH" | b"PN") { chars(v, utf8) } else { v.len() };
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
        return;
    };
    let mut conditions = false;
    let mut seen = BTreeSet::new();
    for (attrs, usage, _stated) in dict::iod_modules(iod) {
        match usage {
            Usage::Conditional => conditions = true,
            Usage::User => {}
            Usage::Mandatory => {
                for &(tag, ty) in attrs {
                    let ty = dict::iod_override(iod, tag).unwrap_or(ty);
                    match ty {
                        AttrType::T1C | AttrType::T2C => conditions = true,
                        AttrType::T3 => {}
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
    if conditions {
        out.push(Code::DICOM_CONDITION_UNCHECKED, DicomPosition::new(u64::MAX));
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
        assert_eq!(check(Vr(*b"CS"), "1", b"ORIGINAL\\PRIMARY", false).1, Some(Code::DICOM_VM_INVALID));
        assert_eq!(check(Vr(*b"US"), "1", &[1, 0, 2], false).0, Some(Code::DICOM_VALUE_INVALID));
        assert_eq!(check(Vr(*b"SH"), "1", &[b'A'; 17], false).0, Some(Code::DICOM_VALUE_TOO_LONG));
    }
}
