//! ASTM E1394 / LIS2-A2 validation of one message: the frame findings the splitter carried, the
//! record types, the hierarchy (section 5 of LIS2-A2: H first; P at level 1 under H; O under a P;
//! R under an O; Q (request) at level 1 under H and not among patients; C after any record, M and
//! S anywhere after H; L last), the sequence numbers (field 2: 1, 2, ... at each level, restarting
//! at 1 under each new parent; a run of C, M or S records under one record counts from 1), the
//! number of fields of each record type (H 14, P 35, O 31, R 14, C 5, Q 13, S 21, L 3; M is the
//! manufacturer's), the date and time fields (YYYYMMDD[HH[MM[SS]]]), and the termination code
//! (L-3: N, T, R, E, Q, I, F).
//!
//! Every finding is a code and a position (record, field, repeat, component, or frame): no
//! value.
//!
//! What it does not do: check code values other than the termination code (priorities, action
//! codes, result flags are the instruments' vocabulary), field lengths, or manufacturer records.

use super::read::{Document, Rec, Type};
use crate::diag::{Code, Diagnostic, Location, Severity};

/// Most findings kept for one message.
pub const MAX_FINDINGS: usize = 1000;

/// What to check.
#[derive(Copy, Clone, Debug, Default)]
pub struct Options {
    /// Only what reading found (frame findings, unknown record types).
    pub syntax_only: bool,
    /// Warnings become errors.
    pub strict: bool,
}

/// The number of fields the standard defines for a record type (`None`: not fixed).
pub fn field_count(t: Type) -> Option<usize> {
    match t {
        Type::H => Some(14),
        Type::P => Some(35),
        Type::O => Some(31),
        Type::R => Some(14),
        Type::C => Some(5),
        Type::Q => Some(13),
        Type::S => Some(21),
        Type::L => Some(3),
        Type::M => None,
    }
}

/// The date and time fields of a record type (E1394 sections 7 to 14).
pub fn date_fields(t: Type) -> &'static [usize] {
    match t {
        Type::H => &[14],
        Type::P => &[8, 24],
        Type::O => &[7, 8, 9, 15, 23],
        Type::R => &[10, 12, 13],
        Type::Q => &[7, 8],
        Type::S => &[15, 16, 19],
        Type::C | Type::M | Type::L => &[],
    }
}

/// The termination codes of L-3.
pub const TERMINATION_CODES: &[u8] = b"NTREQIF";

/// `YYYYMMDD`, optionally followed by `HH`, `HHMM` or `HHMMSS`, a valid date and time.
pub fn is_date(v: &[u8]) -> bool {
    if !matches!(v.len(), 8 | 10 | 12 | 14) || !v.iter().all(u8::is_ascii_digit) {
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
    let time_ok = (v.len() < 10 || n(8) < 24) && (v.len() < 12 || n(10) < 60) && (v.len() < 14 || n(12) < 60);
    (1..=days).contains(&day) && time_ok
}

/// A number of up to nine digits.
fn number(v: &[u8]) -> Option<u32> {
    if v.is_empty() || v.len() > 9 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0u32, |n, &d| n.checked_mul(10)?.checked_add(u32::from(d - b'0')))
}

/// Where the hierarchy is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Level {
    Start,
    H,
    P,
    O,
    R,
    Q,
    L,
}

struct Out {
    list: Vec<Diagnostic>,
    strict: bool,
}

impl Out {
    fn push(&mut self, code: Code, at: crate::diag::AstmPosition) {
        if self.list.len() < MAX_FINDINGS {
            let mut d = Diagnostic::new(code, Location::Astm(at));
            if self.strict && d.severity == Severity::Warning {
                d = d.with_severity(Severity::Error);
            }
            self.list.push(d);
        }
    }
}

/// The findings on a message, in record order (frame findings first), at most
/// [`MAX_FINDINGS`].
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn validate(doc: &Document, options: Options) -> Vec<Diagnostic> {
    let mut out = Out { list: Vec::new(), strict: options.strict };
    for f in &doc.frame_findings {
        let d = f.diagnostic();
        out.push(
            d.code,
            match d.location {
                Location::Astm(p) => p,
                _ => continue,
            },
        );
    }
    let raw = doc.bytes().raw();
    let mut fields = Vec::new();
    let mut level = Level::Start;
    let (mut p, mut o, mut r, mut q) = (0u32, 0u32, 0u32, 0u32);
    // The run of C, M or S records: its type and count.
    let mut run: (Option<Type>, u32) = (None, 0);
    let mut after_l = false;
    let mut resume: Option<(u8, u32)> = None;
    for (i, rec) in doc.records.iter().enumerate() {
        let at = rec.position();
        let Some(kind) = rec.kind else {
            out.push(Code::ASTM_RECORD_TYPE_UNKNOWN, at);
            continue;
        };
        if options.syntax_only {
            continue;
        }
        if i == 0 && kind != Type::H {
            out.push(Code::ASTM_HEADER_MISSING, at);
        }
        doc.fields(rec, &mut fields);
        let value = |n: usize| fields.get(n - 1).map_or(&[][..], |&(a, b)| &raw[a as usize..b as usize]);
        if after_l {
            out.push(Code::ASTM_RECORD_OUT_OF_ORDER, at);
        }
        // `which` names the counter; `resume` is the count a wrong number interrupted, so that a
        // single wrong number between two right ones is one finding, not two.
        let sequence = |expected: &mut u32, which: u8, resume: &mut Option<(u8, u32)>, out: &mut Out| {
            *expected = expected.saturating_add(1);
            let back = resume.take().filter(|&(id, _)| id == which).map(|(_, e)| e.saturating_add(1));
            match number(value(2)) {
                Some(n) if n == *expected => {}
                Some(n) if Some(n) == back => *expected = n,
                Some(n) => {
                    out.push(Code::ASTM_SEQUENCE_INVALID, at.part(2, 0, 0));
                    *resume = Some((which, *expected));
                    *expected = n;
                }
                None => out.push(Code::ASTM_SEQUENCE_INVALID, at.part(2, 0, 0)),
            }
        };
        let allowed: &[Level] = match kind {
            Type::H => &[Level::Start],
            Type::P => &[Level::H, Level::P, Level::O, Level::R],
            Type::O => &[Level::P, Level::O, Level::R],
            Type::R => &[Level::O, Level::R],
            Type::Q => &[Level::H, Level::Q],
            Type::C => &[Level::H, Level::P, Level::O, Level::R, Level::Q],
            Type::M | Type::S => &[Level::H, Level::P, Level::O, Level::R, Level::Q],
            Type::L => &[Level::H, Level::P, Level::O, Level::R, Level::Q],
        };
        if !(after_l || allowed.contains(&level) || (i == 0 && kind != Type::H)) {
            out.push(Code::ASTM_RECORD_OUT_OF_ORDER, at);
        }
        match kind {
            Type::H => level = Level::H,
            Type::P => {
                level = Level::P;
                sequence(&mut p, 0, &mut resume, &mut out);
                o = 0;
            }
            Type::O => {
                level = Level::O;
                sequence(&mut o, 1, &mut resume, &mut out);
                r = 0;
            }
            Type::R => {
                level = Level::R;
                sequence(&mut r, 2, &mut resume, &mut out);
            }
            Type::Q => {
                level = Level::Q;
                sequence(&mut q, 3, &mut resume, &mut out);
            }
            Type::C | Type::M | Type::S => {
                if run.0 != Some(kind) {
                    run = (Some(kind), 0);
                }
                sequence(&mut run.1, 4, &mut resume, &mut out);
            }
            Type::L => {
                let mut one = 0;
                sequence(&mut one, 5, &mut resume, &mut out);
                level = Level::L;
                after_l = true;
                let code = value(3);
                if !(code.is_empty() || (code.len() == 1 && TERMINATION_CODES.contains(&code[0]))) {
                    out.push(Code::ASTM_TERMINATION_CODE_INVALID, at.part(3, 0, 0));
                }
            }
        }
        if !matches!(kind, Type::C | Type::M | Type::S) {
            run = (None, 0);
        }
        if let Some(max) = field_count(kind) {
            // Fields past the last one the standard defines: an error when one holds data, a
            // warning when all are empty (a trailing delimiter, as several instruments send).
            let extra = fields.get(max..).unwrap_or_default();
            let field_at = |k: usize| at.part(u16::try_from(max + 1 + k).unwrap_or(u16::MAX), 0, 0);
            if let Some(k) = extra.iter().position(|&(a, b)| b > a) {
                out.push(Code::ASTM_FIELD_TOO_MANY, field_at(k));
            } else if !extra.is_empty() {
                out.push(Code::ASTM_FIELD_EMPTY_EXTRA, field_at(0));
            }
        }
        for &n in date_fields(kind) {
            let v = value(n);
            if v.is_empty() {
                continue;
            }
            let reps = v.split(|&b| b == doc.delimiters.repeat);
            let many = memchr::memchr(doc.delimiters.repeat, v).is_some();
            for (k, rep) in reps.enumerate() {
                if !rep.is_empty() && !is_date(rep) {
                    let rep_no = if many { u16::try_from(k + 1).unwrap_or(u16::MAX) } else { 0 };
                    out.push(Code::ASTM_DATE_INVALID, at.part(n as u16, rep_no, 0));
                }
            }
        }
    }
    if !options.syntax_only && !after_l {
        if let Some(last) = doc.records.last() {
            out.push(Code::ASTM_TERMINATOR_MISSING, last.position());
        }
    }
    out.list
}

/// True when no finding is an error or fatal.
pub fn is_valid(findings: &[Diagnostic]) -> bool {
    !findings.iter().any(|d| d.severity.is_failure())
}

/// The record a finding names, by its position (for tests and positions).
pub fn record_of<'a>(doc: &'a Document, d: &Diagnostic) -> Option<&'a Rec> {
    let Location::Astm(crate::diag::AstmPosition::Record { kind, index, .. }) = d.location else { return None };
    doc.records.iter().find(|r| r.kind.map(Type::as_str) == kind && r.index == index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;

    fn codes(text: &[u8]) -> Vec<String> {
        let doc = super::super::read::read(text.to_vec(), &Limits::default()).unwrap_or_else(|_| panic!("reads"));
        validate(&doc, Options::default()).iter().map(|d| format!("{} {}", d.code.as_str(), d.location)).collect()
    }

    #[test]
    fn dates() {
        assert!(is_date(b"20240229"));
        assert!(is_date(b"20240229235959"));
        assert!(!is_date(b"20230229"));
        assert!(!is_date(b"20241301"));
        assert!(!is_date(b"2024010112601"));
        assert!(!is_date(b"202401011260"));
    }

    #[test]
    fn hierarchy_and_sequences() {
        let ok = b"H|\\^&|||A\rP|1\rO|1\rR|1\rC|1\rR|2\rO|2\rR|1\rP|2\rO|1\rL|1|N\r";
        assert!(codes(ok).is_empty(), "{:?}", codes(ok));
        assert_eq!(codes(b"H|\\^&\rP|1\rR|1\rL|1|N\r"), ["ASTM_RECORD_OUT_OF_ORDER R[1]"]);
        assert_eq!(codes(b"H|\\^&\rP|1\rO|2\rL|1|N\r"), ["ASTM_SEQUENCE_INVALID O[1]-2"]);
        // Regression (a public Cepheid GeneXpert trace with `R|647` between R 63 and R 65): one
        // wrong number between two right ones is one finding; a jump still counts on from it.
        let slip = b"H|\\^&\rP|1\rO|1\rR|1\rR|27\rR|3\rR|4\rL|1|N\r";
        assert_eq!(codes(slip), ["ASTM_SEQUENCE_INVALID R[2]-2"]);
        let jump = b"H|\\^&\rP|1\rO|1\rR|1\rR|5\rR|6\rL|1|N\r";
        assert_eq!(codes(jump), ["ASTM_SEQUENCE_INVALID R[2]-2"]);
        assert_eq!(codes(b"H|\\^&\rP|1\rL|1|X\r"), ["ASTM_TERMINATION_CODE_INVALID L[1]-3"]);
        assert_eq!(codes(b"H|\\^&\rP|1\r"), ["ASTM_TERMINATOR_MISSING P[1]"]);
        assert_eq!(codes(b"P|1\rL|1\r"), ["ASTM_HEADER_MISSING P[1]"]);
        assert_eq!(codes(b"H|\\^&\rZ|1\rL|1\r"), ["ASTM_RECORD_TYPE_UNKNOWN record[2]"]);
        assert_eq!(codes(b"H|\\^&\rP|1||||||2024x\rL|1\r"), ["ASTM_DATE_INVALID P[1]-8"]);
        assert_eq!(codes(b"H|\\^&\rL|1|N|X\r"), ["ASTM_FIELD_TOO_MANY L[1]-4"]);
        assert_eq!(codes(b"H|\\^&\rL|1|N||X\r"), ["ASTM_FIELD_TOO_MANY L[1]-5"]);
        // Regression (public Cepheid GeneXpert and FRT Manager traces): a trailing delimiter
        // after the last defined field is a warning, not an error.
        assert_eq!(codes(b"H|\\^&\rL|1|N||\r"), ["ASTM_FIELD_EMPTY_EXTRA L[1]-4"]);
    }
}
