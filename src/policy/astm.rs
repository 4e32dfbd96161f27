//! ASTM redaction: a data-channel writer that writes a message (H .. L) under a policy's
//! `[[astm]]` rules.
//!
//! Selectors: `P` (every field of a record type), `P.6` (a field: E1394 numbering, field 1 is the
//! record type), `P.11.4` (a component of a field), and `@date` (the date and time fields of
//! every record type, as `validate` knows them). Record types: H, P, O, R, C, Q, M, S, L.
//!
//! Every value (each component of each repeat of a field from field 3 on) is decided by the
//! first rule that matches it; a value no rule matches is removed (fail closed). Structure is
//! kept: the record type, the H record's delimiter definition (H-2) and the sequence numbers
//! (field 2) when they are numbers. A record of an unknown type is dropped. A `keep` writes only
//! what it proves: a number, a date, or a code-like value (upper-case letters, digits, `.` and
//! `-`, at most 15, not three letters in front unless that is all), unless `free_text = true`.
//! Dates generalized to the year keep their form (`YYYY0101`, zeros for the time), so the message
//! still validates. Values an action makes are escaped with the message's escape sequences
//! (`&F&`, `&S&`, `&R&`, `&E&`); trailing empty fields, repeats and components are dropped.
//!
//! What it does not do: validate the message (the validator does), or write E1381 frames (the
//! output is unframed, as `fmt` writes).

use std::ops::Range;

use toml::de::DeTable;

use super::action::{self, Action, Context};
use super::manifest::Counts;
use super::{Ctx, LoadError, Policy};
use crate::diag::Code;
use crate::formats::astm::read::{Delimiters, Document, Type};
use crate::formats::astm::validate;
use crate::keys::Key;
use crate::phi::Disclosure;

/// An ASTM selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Select {
    /// A record type, field and component.
    Path {
        /// The record type.
        kind: Type,
        /// The field (1-based; `None`: every field).
        field: Option<u16>,
        /// The component (1-based; `None`: every component).
        component: Option<u16>,
    },
    /// The date and time fields.
    Date,
}

impl Select {
    /// Parses a selector.
    pub fn parse(s: &str) -> Result<Select, Code> {
        let bad = Code::POLICY_UNKNOWN_SELECTOR;
        if s == "@date" {
            return Ok(Select::Date);
        }
        let mut parts = s.split('.');
        let kind = parts.next().and_then(Type::from_name).ok_or(bad)?;
        let number = |t: &str| -> Result<u16, Code> {
            if t.is_empty() || t.len() > 3 || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad);
            }
            t.parse::<u16>().ok().filter(|n| *n > 0).ok_or(bad)
        };
        let field = parts.next().map(number).transpose()?;
        let component = parts.next().map(number).transpose()?;
        if parts.next().is_some() {
            return Err(bad);
        }
        // Fields 1 and 2 are structure (the type; the delimiters or the sequence number).
        if field.is_some_and(|f| f < 3) {
            return Err(bad);
        }
        if let (Some(f), Some(max)) = (field, validate::field_count(kind)) {
            if usize::from(f) > max {
                return Err(bad);
            }
        }
        Ok(Select::Path { kind, field, component })
    }
}

/// An ASTM rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The selector.
    pub select: Select,
    /// The action.
    pub action: Action,
    /// `keep` also keeps free text.
    pub free_text: bool,
    /// The rule states why what it keeps is safe.
    pub documented: bool,
    /// Line and column of the selector.
    pub at: (u32, u32),
}

impl Rule {
    pub(super) fn build(ctx: &Ctx<'_>, t: &DeTable<'_>, span: Range<usize>) -> Result<Rule, LoadError> {
        let parts = super::rule_parts(ctx, t, span)?;
        let select = Select::parse(parts.select).map_err(|c| ctx.err(c, parts.select_span.clone()))?;
        if parts.action == Action::Empty || !parts.types.is_empty() {
            return Err(ctx.err(Code::POLICY_ACTION_NOT_ALLOWED, parts.action_span));
        }
        Ok(Rule {
            select,
            action: parts.action,
            free_text: parts.free_text,
            documented: parts.documented,
            at: ctx.at(parts.select_span),
        })
    }

    /// True when this rule matches everything `other` matches.
    pub(super) fn covers(&self, other: &Rule) -> bool {
        match (&self.select, &other.select) {
            (Select::Date, Select::Date) => true,
            (
                Select::Path { kind: k1, field: f1, component: c1 },
                Select::Path { kind: k2, field: f2, component: c2 },
            ) => k1 == k2 && (f1.is_none() || f1 == f2) && (c1.is_none() || c1 == c2),
            _ => false,
        }
    }

    fn matches(&self, kind: Type, field: u16, component: u16) -> bool {
        match self.select {
            Select::Date => validate::date_fields(kind).contains(&usize::from(field)),
            Select::Path { kind: k, field: f, component: c } => {
                k == kind && f.is_none_or(|f| f == field) && c.is_none_or(|c| c == component)
            }
        }
    }
}

/// The redactor's state over one input.
pub struct Redactor<'p> {
    policy: &'p Policy,
    key: Option<&'p Key>,
    /// Counts for the manifest.
    pub counts: Counts,
    /// Index of the first ASTM rule in the counts.
    first: usize,
}

crate::debug_placeholder!(Redactor<'p>);

/// Appends `v` with the delimiters escaped.
fn escaped(v: &[u8], d: &Delimiters, out: &mut Vec<u8>) {
    for &b in v {
        let e = if b == d.field {
            Some(b'F')
        } else if b == d.component {
            Some(b'S')
        } else if b == d.repeat {
            Some(b'R')
        } else if b == d.escape {
            Some(b'E')
        } else {
            None
        };
        match e {
            Some(c) => out.extend_from_slice(&[d.escape, c, d.escape]),
            None if b == b'\r' || b == b'\n' => out.push(b' '),
            None => out.push(b),
        }
    }
}

/// Drops trailing `sep` bytes of `out` after `start`.
fn trim(out: &mut Vec<u8>, start: usize, sep: u8) {
    while out.len() > start && out.last() == Some(&sep) {
        out.pop();
    }
}

impl<'p> Redactor<'p> {
    /// A redactor.
    pub fn new(policy: &'p Policy, key: Option<&'p Key>) -> Self {
        let first = policy.hl7v2.len() + policy.fhir.len() + policy.x12.len();
        Redactor { policy, key, counts: Counts::new(policy), first }
    }

    /// Writes the redacted message.
    #[expect(
        clippy::disallowed_methods,
        reason = "the redaction engine: it writes values out under the operation's disclosure"
    )]
    pub fn redact(&mut self, doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
        let raw = doc.bytes().expose_value(disclosure);
        let d = doc.delimiters;
        self.counts.records += 1;
        let mut ctx = Context::new(self.key);
        let mut spans = Vec::new();
        // The reference year: the message's date (H-14).
        if let Some(h) = doc.records.first().filter(|r| r.kind == Some(Type::H)) {
            doc.fields(h, &mut spans);
            ctx.reference_year = spans.get(13).and_then(|&(a, b)| action::year_number(&raw[a as usize..b as usize]));
        }
        let mut value = Vec::new();
        for r in &doc.records {
            let Some(kind) = r.kind else {
                self.counts.fail_closed += 1;
                continue;
            };
            doc.fields(r, &mut spans);
            let v = |n: usize| spans.get(n).map_or(&[][..], |&(a, b)| &raw[a as usize..b as usize]);
            if kind == Type::P {
                let id = if v(2).is_empty() { v(3) } else { v(2) };
                ctx.patient = id.to_vec();
            }
            let start = out.len();
            out.extend_from_slice(kind.as_str().as_bytes());
            for n in 1..spans.len() {
                out.push(d.field);
                let f = v(n);
                if n == 1 {
                    // H-2 (the delimiters) and the sequence numbers are structure.
                    if kind == Type::H || f.iter().all(u8::is_ascii_digit) {
                        out.extend_from_slice(f);
                    } else {
                        self.counts.fail_closed += 1;
                    }
                    continue;
                }
                let field = u16::try_from(n + 1).unwrap_or(u16::MAX);
                let field_start = out.len();
                for (k, rep) in f.split(|&b| b == d.repeat).enumerate() {
                    if k > 0 {
                        out.push(d.repeat);
                    }
                    let rep_start = out.len();
                    for (c, part) in rep.split(|&b| b == d.component).enumerate() {
                        if c > 0 {
                            out.push(d.component);
                        }
                        if part.is_empty() {
                            continue;
                        }
                        let component = u16::try_from(c + 1).unwrap_or(u16::MAX);
                        value.clear();
                        self.decide((kind, field, component), part, &d, &mut ctx, &mut value);
                        out.extend_from_slice(&value);
                    }
                    trim(out, rep_start, d.component);
                }
                trim(out, field_start, d.repeat);
            }
            trim(out, start, d.field);
            if kind == Type::H && spans.len() >= 2 && out.len() == start + 1 {
                // Keep the delimiter definition even when nothing else of H is written.
                out.push(d.field);
                out.extend_from_slice(v(1));
            }
            out.push(b'\r');
        }
        crate::phi::wipe(&mut value);
        crate::phi::wipe(&mut ctx.patient);
    }

    /// Writes the decided form of one value onto `out` (nothing when removed).
    fn decide(
        &mut self,
        (kind, field, component): (Type, u16, u16),
        v: &[u8],
        d: &Delimiters,
        ctx: &mut Context<'_>,
        out: &mut Vec<u8>,
    ) {
        let Some(ri) = self.policy.astm.iter().position(|r| r.matches(kind, field, component)) else {
            self.counts.fail_closed += 1;
            return;
        };
        self.counts.rule(self.first + ri);
        let r = &self.policy.astm[ri];
        let result: Option<Vec<u8>> = match &r.action {
            Action::Keep => {
                if proven(v, r.free_text) {
                    out.extend_from_slice(v);
                    return;
                }
                self.counts.unproven += 1;
                None
            }
            Action::Remove | Action::Empty => None,
            Action::Replace(text) => Some(text.as_bytes().to_vec()),
            Action::Mask(n) => Some(action::mask(v, *n)),
            Action::Hash => Some(action::hash(self.key, v)),
            Action::Pseudonym => Some(action::pseudonym(self.key, v)),
            Action::Sequence => Some(ctx.sequence(v).to_string().into_bytes()),
            Action::DateShift(days) => {
                let shift = ctx.shift_days(*days);
                date(v).then(|| action::shift_date(v, shift, false)).flatten()
            }
            Action::GeneralizeDate => date(v).then(|| year_only(v, None)).flatten(),
            Action::GeneralizeBirthDate => date(v).then(|| year_only(v, Some(ctx.reference_year))).flatten(),
            Action::GeneralizeZip => action::zip(v),
            Action::CapAge => action::cap_age(v, b"90"),
        };
        if let Some(mut value) = result {
            escaped(&value, d, out);
            crate::phi::wipe(&mut value);
        }
    }
}

/// A date or date and time of the standard's form.
fn date(v: &[u8]) -> bool {
    validate::is_date(v)
}

/// `YYYYMMDD[HHMMSS]` to `YYYY0101[000000]`; for a birth date (`Some(reference)`), removed
/// unless the reference year is known and less than 90 years later.
pub(super) fn year_only(v: &[u8], birth: Option<Option<u32>>) -> Option<Vec<u8>> {
    let y = action::year_number(v)?;
    if let Some(reference) = birth {
        let r = reference?;
        if r >= y.saturating_add(90) {
            return None;
        }
    }
    let mut o = format!("{y:04}").into_bytes();
    o.extend_from_slice(b"0101");
    o.resize(v.len(), b'0');
    Some(o)
}

/// What `keep` proves safe: a number, a date, a code-like value, or anything with `free_text`.
pub(super) fn proven(v: &[u8], free_text: bool) -> bool {
    if free_text {
        return true;
    }
    let body = v.strip_prefix(b"-").unwrap_or(v);
    let number = !body.is_empty() && body.iter().all(|b| b.is_ascii_digit() || *b == b'.');
    number || date(v) || code_like(v)
}

/// A code: upper-case letters, digits, `.` and `-`, at most 15, and not three letters in front
/// (a word) unless that is all.
fn code_like(v: &[u8]) -> bool {
    !v.is_empty()
        && v.len() <= 15
        && v.iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-'))
        && (v.len() <= 3 || !v[..3].iter().all(u8::is_ascii_uppercase))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors() {
        assert!(matches!(Select::parse("P.6"), Ok(Select::Path { kind: Type::P, field: Some(6), component: None })));
        assert!(matches!(Select::parse("P.11.4"), Ok(Select::Path { component: Some(4), .. })));
        assert!(matches!(Select::parse("C"), Ok(Select::Path { kind: Type::C, field: None, .. })));
        assert_eq!(Select::parse("@date"), Ok(Select::Date));
        assert_eq!(Select::parse("X.1"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        assert_eq!(Select::parse("P.36"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        assert_eq!(Select::parse("P.0"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        assert_eq!(Select::parse("P.2"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        assert_eq!(Select::parse("P.6.1.1"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        assert_eq!(year_only(b"20240315", None), Some(b"20240101".to_vec()));
        assert_eq!(year_only(b"20240315101112", None), Some(b"20240101000000".to_vec()));
        assert_eq!(year_only(b"19200315", Some(Some(2024))), None);
        assert_eq!(year_only(b"19800315", Some(Some(2024))), Some(b"19800101".to_vec()));
        assert_eq!(year_only(b"19800315", Some(None)), None);
        assert!(code_like(b"GLU") && !code_like(b"SMITH") && code_like(b"5.6"));
    }
}
