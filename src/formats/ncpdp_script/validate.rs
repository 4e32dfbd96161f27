//! Validation of a SCRIPT message against what is public of NCPDP SCRIPT 10.6 and 2017071:
//!
//! - the version (`Message`'s `version`/`release`, or the 2017071 version attributes);
//! - `Message` holds one `Header` and one `Body`; `Header` holds SCRIPT header elements only,
//!   each once, with `To`, `From`, `MessageID` and `SentTime` (and `RelatesToMessageID` in a
//!   message that answers another), and the `Qualifier` of `To` and `From` from its code list
//!   (required in 2017071);
//! - `Body` holds one transaction element, a message type of the version;
//! - what each message type requires of its parts ([`tables::REQUIRED`]; the 2017071 wrappers
//!   `HumanPatient`/`NonHumanPatient` and `NonVeterinarian`/`Veterinarian` looked through), an
//!   element required and empty being missing too, and the parts that occur once;
//! - leaves by name ([`tables::CHECKS`]): code lists, NCI unit codes, numbers, dates and times,
//!   NPI (Luhn), DEA number (check digit), NCPDPID (seven digits).
//!
//! Every finding is a code and an element path of the tables: never a value.
//!
//! What it does not do: element order, the cardinality of elements the tables do not list, the
//! data type of a leaf the tables do not name, the conditional rules of the implementation
//! guides, or code lists beyond those named (the NCPDP External Code List is licensed).

use crate::diag::{Code, Diagnostic, Location, Severity};

use super::read::{Document, Ns};
use super::tables::{self, Check, Version};

/// Most findings kept for one message.
pub const MAX_FINDINGS: usize = 1000;

/// What to check.
#[derive(Copy, Clone, Debug, Default)]
pub struct Options {
    /// Only what reading found (nothing for SCRIPT: reading is fatal or clean).
    pub syntax_only: bool,
    /// Warnings become errors.
    pub strict: bool,
}

struct Out {
    out: Vec<Diagnostic>,
}

impl Out {
    fn push(&mut self, code: Code, location: Location) {
        if self.out.len() < MAX_FINDINGS {
            self.out.push(Diagnostic::new(code, location));
        }
    }
}

/// True when no finding is a failure.
pub fn is_valid(findings: &[Diagnostic]) -> bool {
    !findings.iter().any(|f| f.severity.is_failure())
}

/// Validates a message.
pub fn validate(doc: &Document, options: Options) -> Vec<Diagnostic> {
    let mut o = Out { out: Vec::new() };
    if options.syntax_only {
        return o.out;
    }
    version(doc, &mut o);
    message(doc, &mut o);
    if let Some(h) = doc.header {
        header(doc, h, &mut o);
    }
    if let Some(b) = doc.body {
        body(doc, b, &mut o);
    }
    leaves(doc, &mut o);
    if options.strict {
        for d in &mut o.out {
            if d.severity == Severity::Warning {
                *d = d.with_severity(Severity::Error);
            }
        }
    }
    o.out
}

fn version(doc: &Document, o: &mut Out) {
    if doc.version != Version::Unknown {
        return;
    }
    let attr = if tables::V2017_ATTRIBUTES.iter().any(|a| doc.attr(0, a.as_bytes()).is_some()) {
        "TransportVersion"
    } else {
        "version"
    };
    o.push(Code::SCRIPT_VERSION_UNSUPPORTED, doc.attr_location(0, attr));
}

fn message(doc: &Document, o: &mut Out) {
    let tree = doc.tree();
    let (mut header, mut body) = (0u32, 0u32);
    for c in tree.children(0) {
        if doc.is(c, "Header") {
            header += 1;
            if header > 1 {
                o.push(Code::SCRIPT_ELEMENT_DUPLICATE, doc.location(c));
            }
        } else if doc.is(c, "Body") {
            body += 1;
            if body > 1 {
                o.push(Code::SCRIPT_ELEMENT_DUPLICATE, doc.location(c));
            }
        } else {
            o.push(Code::SCRIPT_ELEMENT_UNEXPECTED, doc.location(c));
        }
    }
    if header == 0 {
        o.push(Code::SCRIPT_ELEMENT_MISSING, doc.missing(0, "Header"));
    }
    if body == 0 {
        o.push(Code::SCRIPT_ELEMENT_MISSING, doc.missing(0, "Body"));
    }
}

/// True when element `e` has neither a child element nor text.
fn empty(doc: &Document, e: u32) -> bool {
    doc.tree().children(e).next().is_none() && doc.tree().texts_of(e).next().is_none()
}

fn header(doc: &Document, h: u32, o: &mut Out) {
    let tree = doc.tree();
    let mut seen = [0u32; tables::HEADER.len()];
    for c in tree.children(h) {
        let at = (doc.ns(c) == Ns::Script).then(|| tables::HEADER.iter().position(|n| n.as_bytes() == doc.local(c)));
        match at.flatten() {
            Some(i) => {
                seen[i] += 1;
                if seen[i] > 1 {
                    o.push(Code::SCRIPT_ELEMENT_DUPLICATE, doc.location(c));
                }
            }
            None => o.push(Code::SCRIPT_ELEMENT_UNEXPECTED, doc.location(c)),
        }
    }
    let responds = doc.message_type().is_some_and(|t| tables::RESPONSES.contains(&t));
    let required = tables::HEADER_REQUIRED.iter().chain(responds.then_some(&"RelatesToMessageID"));
    for name in required {
        match doc.children_named(h, name).next() {
            None => o.push(Code::SCRIPT_ELEMENT_MISSING, doc.missing(h, name)),
            Some(e) if empty(doc, e) => o.push(Code::SCRIPT_ELEMENT_MISSING, doc.location(e)),
            Some(_) => {}
        }
    }
    for name in ["To", "From"] {
        for e in doc.children_named(h, name) {
            match doc.attr(e, b"Qualifier") {
                None if doc.version == Version::V2017071 => {
                    o.push(Code::SCRIPT_QUALIFIER_INVALID, doc.attr_location(e, "Qualifier"));
                }
                None => {}
                Some(a) => {
                    let ok = doc
                        .tree()
                        .value(a.value)
                        .classify(|v| tables::PARTY_QUALIFIERS.iter().any(|q| q.as_bytes() == v));
                    if !ok {
                        o.push(Code::SCRIPT_QUALIFIER_INVALID, doc.attr_location(e, "Qualifier"));
                    }
                }
            }
        }
    }
}

fn body(doc: &Document, b: u32, o: &mut Out) {
    let tree = doc.tree();
    let mut transactions = tree.children(b).filter(|&c| doc.ns(c) == Ns::Script);
    let Some(t) = transactions.next() else {
        o.push(Code::SCRIPT_BODY_INVALID, doc.location(b));
        return;
    };
    for extra in transactions {
        o.push(Code::SCRIPT_BODY_INVALID, doc.location(extra));
    }
    if Some(t) != doc.transaction {
        return;
    }
    if doc.message_type().is_none() {
        o.push(Code::SCRIPT_MESSAGE_TYPE_UNKNOWN, doc.location(t));
        return;
    }
    // The parts, from the transaction down (a work list: no recursion on input depth).
    let mut work = vec![t];
    while let Some(e) = work.pop() {
        let name = doc.local(e);
        // A party's 2017071 wrapper holds what the party requires.
        let mut content = e;
        if let Some((_, wrappers)) = tables::WRAPPERS.iter().find(|(p, _)| p.as_bytes() == name) {
            let wrapper = tree.children(e).find(|&c| wrappers.iter().any(|w| doc.is(c, w)));
            match wrapper {
                Some(w) => content = w,
                None if doc.version == Version::V2017071 => {
                    o.push(Code::SCRIPT_ELEMENT_MISSING, doc.missing(e, wrappers[0]));
                    continue;
                }
                None => {}
            }
        }
        single(doc, content, o);
        for alternatives in tables::required(name) {
            let found = tree.children(content).find(|&c| alternatives.iter().any(|a| doc.is(c, a)));
            match found {
                None => o.push(Code::SCRIPT_ELEMENT_MISSING, doc.missing(content, alternatives[0])),
                Some(c) if empty(doc, c) && !tables::MARKERS.iter().any(|m| doc.is(c, m)) => {
                    o.push(Code::SCRIPT_ELEMENT_MISSING, doc.location(c));
                }
                Some(_) => {}
            }
        }
        for c in tree.children(content) {
            if doc.ns(c) == Ns::Script && !tables::required(doc.local(c)).is_empty() {
                work.push(c);
            }
        }
    }
}

/// The children of `e` that occur once, found more than once.
fn single(doc: &Document, e: u32, o: &mut Out) {
    let mut seen = [0u32; tables::SINGLE.len()];
    for c in doc.tree().children(e) {
        if doc.ns(c) != Ns::Script {
            continue;
        }
        if let Some(i) = tables::SINGLE.iter().position(|n| n.as_bytes() == doc.local(c)) {
            seen[i] += 1;
            if seen[i] > 1 {
                o.push(Code::SCRIPT_ELEMENT_DUPLICATE, doc.location(c));
            }
        }
    }
}

/// Every leaf the tables name, by its check.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn leaves(doc: &Document, o: &mut Out) {
    let tree = doc.tree();
    for e in 0..tree.elements().len() as u32 {
        if doc.ns(e) != Ns::Script || tree.children(e).next().is_some() {
            continue;
        }
        let parent = doc.parent(e);
        let parent_name: &[u8] = if parent == u32::MAX { b"" } else { doc.local(parent) };
        let Some(check) = tables::check_of(parent_name, doc.local(e)) else { continue };
        let mut texts = tree.texts_of(e);
        let Some(first) = texts.next() else { continue };
        let ok = match texts.next() {
            None => value_ok(check, tree.value(first.value).raw()),
            Some(_) => {
                let mut joined = Vec::new();
                for t in tree.texts_of(e) {
                    joined.extend_from_slice(tree.value(t.value).raw());
                }
                let ok = value_ok(check, &joined);
                crate::phi::wipe(&mut joined);
                ok
            }
        };
        if !ok {
            let code = match check {
                Check::Code(_) | Check::Nci | Check::Digit => Code::SCRIPT_CODE_INVALID,
                Check::Number | Check::Integer => Code::SCRIPT_NUMBER_INVALID,
                Check::Date | Check::DateTime => Code::SCRIPT_DATE_INVALID,
                Check::Npi => Code::SCRIPT_NPI_INVALID,
                Check::Dea => Code::SCRIPT_DEA_INVALID,
                Check::NcpdpId => Code::SCRIPT_NCPDPID_INVALID,
            };
            o.push(code, doc.location(e));
        }
    }
}

/// True when `v` (surrounding white space aside) passes `check`.
pub fn value_ok(check: Check, v: &[u8]) -> bool {
    let v = v.trim_ascii();
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    match check {
        Check::Code(list) => list.iter().any(|c| c.as_bytes() == v),
        Check::Nci => v.len() >= 2 && v.len() <= 8 && v[0] == b'C' && digits(&v[1..]),
        Check::Digit => v.len() == 1 && digits(v),
        Check::Integer => v.len() <= 11 && digits(v),
        Check::Number => {
            let (int, frac) = match v.iter().position(|&b| b == b'.') {
                Some(i) => (&v[..i], Some(&v[i + 1..])),
                None => (v, None),
            };
            digits(int) && frac.is_none_or(digits) && v.len() - usize::from(frac.is_some()) <= 11
        }
        Check::Date => is_date(v),
        Check::DateTime => is_date_time(v),
        Check::Npi => is_npi(v),
        Check::Dea => is_dea(v),
        Check::NcpdpId => v.len() == 7 && digits(v),
    }
}

fn number(v: &[u8]) -> Option<u32> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u32, |n, &b| n * 10 + u32::from(b - b'0')))
}

/// `YYYY-MM-DD`, a day of the calendar.
pub fn is_date(v: &[u8]) -> bool {
    if v.len() != 10 || v[4] != b'-' || v[7] != b'-' {
        return false;
    }
    let (Some(y), Some(m), Some(d)) = (number(&v[..4]), number(&v[5..7]), number(&v[8..10])) else { return false };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// `YYYY-MM-DDThh:mm:ss[.s+][Z|+hh:mm|-hh:mm]`.
pub fn is_date_time(v: &[u8]) -> bool {
    if v.len() < 19 || !is_date(&v[..10]) || v[10] != b'T' || v[13] != b':' || v[16] != b':' {
        return false;
    }
    let (Some(h), Some(mi), Some(s)) = (number(&v[11..13]), number(&v[14..16]), number(&v[17..19])) else {
        return false;
    };
    if h > 23 || mi > 59 || s > 59 {
        return false;
    }
    let mut rest = &v[19..];
    if let Some(frac) = rest.strip_prefix(b".") {
        let n = frac.iter().take_while(|b| b.is_ascii_digit()).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    match rest {
        [] | [b'Z'] => true,
        [b'+' | b'-', zone @ ..] => {
            zone.len() == 5
                && zone[2] == b':'
                && number(&zone[..2]).is_some_and(|h| h <= 14)
                && number(&zone[3..]).is_some_and(|m| m <= 59)
        }
        _ => false,
    }
}

/// Ten digits whose last is the Luhn check digit of the nine before it, prefixed 80840.
pub fn is_npi(v: &[u8]) -> bool {
    if v.len() != 10 || !v.iter().all(u8::is_ascii_digit) {
        return false;
    }
    // Luhn over 80840 + the ten digits: from the right, every second digit doubled.
    let all = b"80840".iter().chain(v.iter()).map(|b| u32::from(b - b'0')).collect::<Vec<_>>();
    let sum: u32 = all
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    sum % 10 == 0
}

/// Two letters (the second may be 9) and seven digits: the last is the ones digit of the sum
/// of the first, third and fifth digits and twice the second, fourth and sixth.
pub fn is_dea(v: &[u8]) -> bool {
    if v.len() != 9 || !v[0].is_ascii_uppercase() || !(v[1].is_ascii_uppercase() || v[1] == b'9') {
        return false;
    }
    let d = &v[2..];
    if !d.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let n = |i: usize| u32::from(d[i] - b'0');
    (n(0) + n(2) + n(4) + 2 * (n(1) + n(3) + n(5))) % 10 == n(6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_checks() {
        assert!(is_npi(b"1234567893") && !is_npi(b"1234567890") && !is_npi(b"123456789"));
        assert!(is_dea(b"AB1234563") && !is_dea(b"AB1234564") && !is_dea(b"A11234563") && is_dea(b"A91234563"));
        assert!(is_date(b"2024-02-29") && !is_date(b"2023-02-29") && !is_date(b"20240315") && !is_date(b"2024-13-01"));
        assert!(is_date_time(b"2024-03-15T10:11:12Z") && is_date_time(b"2024-03-15T10:11:12.5-05:00"));
        assert!(is_date_time(b"2024-03-15T10:11:12") && !is_date_time(b"2024-03-15T25:11:12"));
        assert!(!is_date_time(b"2024-03-15T10:11:12+0500") && !is_date_time(b"2024-03-15 10:11:12"));
        assert!(value_ok(Check::Number, b"30") && value_ok(Check::Number, b"0.5") && !value_ok(Check::Number, b"1."));
        assert!(!value_ok(Check::Number, b"-1") && !value_ok(Check::Number, b"123456789012"));
        assert!(value_ok(Check::Nci, b"C48542") && !value_ok(Check::Nci, b"48542") && !value_ok(Check::Nci, b"C"));
        assert!(value_ok(Check::NcpdpId, b" 1234567 ") && !value_ok(Check::NcpdpId, b"123456"));
        assert!(value_ok(Check::Code(tables::GENDERS), b"F") && !value_ok(Check::Code(tables::GENDERS), b"f"));
    }
}
