//! NCPDP Telecommunication D.0 validation of one transmission: the header (version D0, known
//! transaction code, the formats of BIN, qualifier, count and date of service, the count equal
//! to the number of transactions (an E1 of count 1 may have none), the header response status), bytes outside segments, the
//! segments (identification field, known ids of the transmission's kind, no duplicate in a
//! transaction, the segments the transaction code requires), the fields (two-character ids of
//! the dictionary, fields defined in their segment where phiward has the segment's list, no
//! duplicate of a field that does not repeat, required fields), and the formats of date
//! (CCYYMMDD), numeric and amount (signed overpunch) fields. The tables are in `tables`.
//!
//! Every finding is a code and a position (`transaction[2]/AM07/D7`): no value.
//!
//! What it does not do: payer-specific rules (situational segments and fields), external code
//! lists (qualifier values, reject codes), field lengths, or the counted groups' counts against
//! their occurrences.

use super::read::{Document, Kind, Segment};
use super::tables::{self, Scope};
use crate::diag::{Code, Diagnostic, Location, NcpdpField, NcpdpPosition, NcpdpSegment, Severity};

/// Most findings kept for one transmission.
pub const MAX_FINDINGS: usize = 1000;

/// What to check.
#[derive(Copy, Clone, Debug, Default)]
pub struct Options {
    /// Only what reading found (bytes outside segments, segments without an id).
    pub syntax_only: bool,
    /// Warnings become errors.
    pub strict: bool,
}

struct Out {
    list: Vec<Diagnostic>,
    strict: bool,
}

impl Out {
    fn push(&mut self, code: Code, at: NcpdpPosition) {
        if self.list.len() < MAX_FINDINGS {
            let mut d = Diagnostic::new(code, Location::Ncpdp(at));
            if self.strict && d.severity == Severity::Warning {
                d = d.with_severity(Severity::Error);
            }
            self.list.push(d);
        }
    }
}

/// A valid date CCYYMMDD.
pub fn is_date(v: &[u8]) -> bool {
    if v.len() != 8 || !v.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let n = |a: usize| u32::from(v[a] - b'0') * 10 + u32::from(v[a + 1] - b'0');
    let year = n(0) * 100 + n(2);
    let (month, day) = (n(4), n(6));
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// A signed numeric amount: digits, the last one possibly an overpunch (`{`, `A`-`I`, `}`,
/// `J`-`R`).
pub fn is_amount(v: &[u8]) -> bool {
    match v.split_last() {
        Some((&last, body)) => {
            body.iter().all(u8::is_ascii_digit) && (last.is_ascii_digit() || matches!(last, b'{' | b'}' | b'A'..=b'R'))
        }
        None => false,
    }
}

/// The value of a signed overpunch amount in its smallest unit (cents for dollar amounts), or
/// `None` when it is not one: what [`is_amount`] accepts, decoded.
pub fn overpunch(v: &[u8]) -> Option<i64> {
    let (&last, body) = v.split_last()?;
    let (digit, negative) = match last {
        b'0'..=b'9' => (last - b'0', false),
        b'{' => (0, false),
        b'A'..=b'I' => (last - b'A' + 1, false),
        b'}' => (0, true),
        b'J'..=b'R' => (last - b'J' + 1, true),
        _ => return None,
    };
    let mut n: i64 = 0;
    for &d in body {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
    }
    n = n.checked_mul(10)?.checked_add(i64::from(digit))?;
    Some(if negative { -n } else { n })
}

/// The findings on a transmission, at most [`MAX_FINDINGS`].
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn validate(doc: &Document, options: Options) -> Vec<Diagnostic> {
    let mut out = Out { list: Vec::new(), strict: options.strict };
    let raw = doc.bytes().raw();
    let v = |(a, b): (u32, u32)| &raw[a as usize..b as usize];
    for g in &doc.gaps {
        out.push(Code::NCPDP_DATA_OUTSIDE_SEGMENT, NcpdpPosition::segment(g.transaction, NcpdpSegment::None));
    }
    for s in &doc.segments {
        if s.lead.1 > s.lead.0 {
            out.push(Code::NCPDP_DATA_OUTSIDE_SEGMENT, s.position());
        }
        if !s.has_id {
            out.push(Code::NCPDP_SEGMENT_ID_MISSING, s.position());
        }
    }
    if options.syntax_only {
        return out.list;
    }
    header(doc, &mut out);
    let code = doc.header_field("A3").map(v).unwrap_or_default();
    // Segments: known for the kind, no duplicate in a part, fields.
    for t in 0..=doc.groups {
        let mut seen = [false; 32];
        for s in doc.segments_of(t) {
            let Some(def) = s.def else {
                if s.has_id {
                    out.push(Code::NCPDP_SEGMENT_UNKNOWN, s.position());
                }
                continue;
            };
            let response_segment = tables::SEGMENTS[usize::from(def)].2;
            if response_segment != (doc.kind == Kind::Response) {
                out.push(Code::NCPDP_SEGMENT_UNKNOWN, s.position());
            }
            if std::mem::replace(&mut seen[usize::from(def) % 32], true) {
                out.push(Code::NCPDP_SEGMENT_DUPLICATE, s.position());
            }
            fields(doc, s, &mut out);
        }
    }
    // Required segments.
    let required: &[(&str, Scope)] = match doc.kind {
        Kind::Request => tables::required_request(code),
        Kind::Response => tables::REQUIRED_RESPONSE,
    };
    for &(id, scope) in required {
        match scope {
            Scope::Transmission => {
                if !doc.segments.iter().any(|s| s.id() == Some(id)) {
                    out.push(Code::NCPDP_SEGMENT_REQUIRED, NcpdpPosition::segment(0, NcpdpSegment::Id(id)));
                }
            }
            Scope::EachTransaction => {
                for t in 1..=doc.groups {
                    if !doc.segments_of(t).iter().any(|s| s.id() == Some(id)) {
                        out.push(Code::NCPDP_SEGMENT_REQUIRED, NcpdpPosition::segment(t, NcpdpSegment::Id(id)));
                    }
                }
            }
        }
    }
    out.list
}

#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn header(doc: &Document, out: &mut Out) {
    let raw = doc.bytes().raw();
    for (id, _, span) in doc.header() {
        let f = &raw[span.0 as usize..span.1 as usize];
        let at = NcpdpPosition::header(id);
        let ok = match id {
            "A1" => f.iter().all(u8::is_ascii_digit),
            "A2" => {
                if f != b"D0" {
                    out.push(Code::NCPDP_VERSION_UNSUPPORTED, at);
                }
                true
            }
            "A3" => {
                if !tables::TRANSACTION_CODES.iter().any(|(c, _)| c.as_bytes() == f) {
                    out.push(Code::NCPDP_TRANSACTION_CODE_UNKNOWN, at);
                }
                true
            }
            "A9" => match f {
                [d @ b'1'..=b'4'] => {
                    // An eligibility verification may carry no transaction-level segment: count
                    // 1 and no group.
                    let e1 = doc.header_field("A3").map(|(a, b)| &raw[a as usize..b as usize]) == Some(b"E1");
                    let n = u32::from(d - b'0');
                    if n != doc.groups && !(e1 && n == 1 && doc.groups == 0) {
                        out.push(Code::NCPDP_TRANSACTION_COUNT_MISMATCH, at);
                    }
                    true
                }
                _ => false,
            },
            "B2" => f.iter().all(u8::is_ascii_digit) || f == b"  ",
            "D1" => is_date(f),
            "F1" => tables::HEADER_STATUS.iter().any(|s| s.as_bytes() == f),
            _ => true,
        };
        if !ok {
            out.push(Code::NCPDP_HEADER_FIELD_INVALID, at);
        }
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn fields(doc: &Document, s: &Segment, out: &mut Out) {
    let raw = doc.bytes().raw();
    let seg = s.position();
    let id = s.id().unwrap_or_default();
    let defined = tables::SEGMENT_FIELDS.iter().find(|(x, _)| *x == id).map(|x| x.1);
    let list = doc.fields_of(s);
    for (k, f) in list.iter().enumerate() {
        let at = seg.field(f.place());
        if f.end - f.start < 2 || !raw[f.start as usize..f.start as usize + 2].iter().all(u8::is_ascii_alphanumeric) {
            out.push(Code::NCPDP_FIELD_ID_INVALID, at);
            continue;
        }
        let Some(fid) = f.id() else {
            out.push(Code::NCPDP_FIELD_UNKNOWN, at);
            continue;
        };
        if k == 0 && fid == "AM" {
            continue;
        }
        if fid == "AM" || defined.is_some_and(|d| !d.contains(&fid)) {
            out.push(Code::NCPDP_FIELD_NOT_IN_SEGMENT, at);
        }
        let flags = f.def.map_or(0, |d| tables::flags(usize::from(d)));
        if f.occurrence == 2 && flags & tables::REPEATS == 0 {
            out.push(Code::NCPDP_FIELD_DUPLICATE, at);
        }
        let (a, b) = f.value_span();
        let value = &raw[a as usize..b as usize];
        if value.is_empty() {
            continue;
        }
        if flags & tables::DATE != 0 && !is_date(value) {
            out.push(Code::NCPDP_DATE_INVALID, at);
        } else if flags & tables::NUMBER != 0 && !value.iter().all(u8::is_ascii_digit) {
            out.push(Code::NCPDP_NUMBER_INVALID, at);
        } else if flags & tables::AMOUNT != 0 && !is_amount(value) {
            out.push(Code::NCPDP_AMOUNT_INVALID, at);
        }
    }
    if let Some((_, required)) = tables::REQUIRED_FIELDS.iter().find(|(x, _)| *x == id) {
        for r in *required {
            if !list.iter().any(|f| f.id() == Some(r)) {
                out.push(Code::NCPDP_FIELD_REQUIRED, seg.field(NcpdpField::Id(r, 0)));
            }
        }
    }
}

/// True when no finding is an error or fatal.
pub fn is_valid(findings: &[Diagnostic]) -> bool {
    !findings.iter().any(|d| d.severity.is_failure())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;

    fn header(code: &str, count: u8) -> Vec<u8> {
        let mut h = format!("610014D0{code}PCN1234567{count}01123456789012345202403150VENDOR001").into_bytes();
        h.truncate(56);
        h
    }

    fn codes(b: Vec<u8>) -> Vec<String> {
        let doc = super::super::read::read(b, &Limits::default()).unwrap_or_else(|_| panic!("reads"));
        validate(&doc, Options::default()).iter().map(|d| format!("{} {}", d.code.as_str(), d.location)).collect()
    }

    #[test]
    fn formats() {
        assert!(is_date(b"20240229") && !is_date(b"20230229") && !is_date(b"2024011"));
        assert!(
            is_amount(b"100{") && is_amount(b"1234") && is_amount(b"25J") && !is_amount(b"12.5") && !is_amount(b"")
        );
        assert_eq!(overpunch(b"100{"), Some(1000));
        assert_eq!(overpunch(b"12J"), Some(-121));
        assert_eq!(overpunch(b"12}"), Some(-120));
    }

    #[test]
    fn a_claim() {
        let body =
            b"\x1e\x1cAM04\x1cC2ID123\x1d\x1e\x1cAM07\x1cEM1\x1cD2123\x1cE103\x1cD712345678901\x1e\x1cAM11\x1cDU100{";
        let mut b = header("B1", 1);
        b.extend_from_slice(body);
        assert!(codes(b).is_empty());
        let mut b = header("B1", 2);
        b.extend_from_slice(body);
        assert_eq!(codes(b), ["NCPDP_TRANSACTION_COUNT_MISMATCH header/A9"]);
        let mut b = header("B1", 1);
        b.extend_from_slice(b"\x1e\x1cAM04\x1cC2ID123\x1d\x1e\x1cAM07\x1cEM1\x1cD2123\x1cD2124\x1cE103\x1cD7X\x1cD5X");
        assert_eq!(
            codes(b),
            [
                "NCPDP_FIELD_DUPLICATE transaction[1]/AM07/D2[2]",
                "NCPDP_NUMBER_INVALID transaction[1]/AM07/D5",
                "NCPDP_SEGMENT_REQUIRED transaction[1]/AM11"
            ]
        );
        let mut b = header("X9", 1);
        b.extend_from_slice(b"\x1e\x1cAM99\x1d\x1e\x1cAM01\x1cC419801340\x1cZZ1");
        assert_eq!(
            codes(b),
            [
                "NCPDP_TRANSACTION_CODE_UNKNOWN header/A3",
                "NCPDP_SEGMENT_UNKNOWN segment[1]",
                "NCPDP_DATE_INVALID transaction[1]/AM01/C4",
                "NCPDP_FIELD_UNKNOWN transaction[1]/AM01/field[3]"
            ]
        );
    }
}
