//! NCPDP Telecommunication D.0 redaction: a data-channel writer that writes a transmission under
//! a policy's `[[ncpdp]]` rules.
//!
//! Selectors: `AM01` (every field of a segment), `AM01.CA` (a field of a segment, by its D.0
//! field id), `header.D1` (a header field: `A1` BIN, `A4` processor control number, `B2` and
//! `B1` service provider id qualifier and id, `D1` date of service, `AK` software vendor), and
//! `@date` (the date fields `validate` knows, and the header's date of service).
//!
//! Every field value is decided by the first rule that matches it; a value no rule matches is
//! removed (fail closed): a segment field is left out, a header field is written as spaces (the
//! header is fixed-width). Structure is kept: the header's version, transaction code, count and
//! response status, the segment identification fields, the separators and the transactions. A
//! segment whose id is not one of D.0, a field whose id is not one of the dictionary and bytes
//! outside segments are dropped. A `keep` writes only what it proves: a number, an amount, a
//! date, or a code-like value (upper-case letters, digits, `.` and `-`, at most 15, not three
//! letters in front unless that is all), unless `free_text = true`. Dates generalized to the year
//! keep their form (`CCYY0101`). A value an action makes is written in the field's width in the
//! header (padded with spaces or cut), and with the separators and line ends as spaces. A segment
//! field's trailing spaces are padding and dropped before its rule decides it.
//!
//! What it does not do: validate the transmission (the validator does), or fix counts of
//! counted groups whose fields a policy removed.

use std::ops::Range;

use toml::de::DeTable;

use super::action::{self, Action, Context};
use super::astm::{proven, year_only};
use super::manifest::Counts;
use super::{Ctx, LoadError, Policy};
use crate::diag::Code;
use crate::formats::ncpdp::read::{Document, FIELD_SEPARATOR, GROUP_SEPARATOR, Kind, SEGMENT_SEPARATOR};
use crate::formats::ncpdp::{tables, validate};
use crate::keys::Key;
use crate::phi::Disclosure;

/// The header fields a rule may select (the others are structure).
pub const HEADER_FIELDS: &[&str] = &["A1", "A4", "B2", "B1", "D1", "AK"];

/// An NCPDP selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Select {
    /// A header field.
    Header(&'static str),
    /// A segment (`AMnn`) and a field (`None`: every field).
    Field {
        /// The segment id.
        segment: &'static str,
        /// The field id.
        field: Option<&'static str>,
    },
    /// The date fields.
    Date,
}

impl Select {
    /// Parses a selector.
    pub fn parse(s: &str) -> Result<Select, Code> {
        let bad = Code::POLICY_UNKNOWN_SELECTOR;
        if s == "@date" {
            return Ok(Select::Date);
        }
        let (head, field) = match s.split_once('.') {
            Some((h, f)) => (h, Some(f)),
            None => (s, None),
        };
        if head == "header" {
            let f = field.ok_or(bad)?;
            return HEADER_FIELDS.iter().copied().find(|h| *h == f).map(Select::Header).ok_or(bad);
        }
        let segment = tables::segment_by_id(head).map(|i| tables::SEGMENTS[i].0).ok_or(bad)?;
        let field = match field {
            None => None,
            Some("AM") => return Err(bad),
            Some(f) => Some(tables::field(f.as_bytes()).map(|i| tables::FIELDS[i].0).ok_or(bad)?),
        };
        Ok(Select::Field { segment, field })
    }
}

/// An NCPDP rule.
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

/// Where a value is: the header (`None`) or a segment, and the field id.
type Place<'a> = (Option<&'a str>, &'a str);

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
            (Select::Header(a), Select::Header(b)) => a == b,
            (Select::Field { segment: s1, field: f1 }, Select::Field { segment: s2, field: f2 }) => {
                s1 == s2 && (f1.is_none() || f1 == f2)
            }
            _ => false,
        }
    }

    fn matches(&self, (segment, field): Place<'_>) -> bool {
        match self.select {
            Select::Date => match segment {
                None => field == "D1",
                Some(_) => tables::contains(tables::DATES, field),
            },
            Select::Header(h) => segment.is_none() && h == field,
            Select::Field { segment: s, field: f } => segment == Some(s) && f.is_none_or(|f| f == field),
        }
    }
}

/// The redactor's state over one input.
pub struct Redactor<'p> {
    policy: &'p Policy,
    key: Option<&'p Key>,
    /// Counts for the manifest.
    pub counts: Counts,
    /// Index of the first NCPDP rule in the counts.
    first: usize,
}

crate::debug_placeholder!(Redactor<'p>);

/// Appends `v` with the separators, line ends and other control characters as spaces.
fn clean(v: &[u8], out: &mut Vec<u8>) {
    out.extend(v.iter().map(|&b| if b < 0x20 || b == 0x7F { b' ' } else { b }));
}

impl<'p> Redactor<'p> {
    /// A redactor.
    pub fn new(policy: &'p Policy, key: Option<&'p Key>) -> Self {
        let first = policy.hl7v2.len() + policy.fhir.len() + policy.x12.len() + policy.astm.len() + policy.dicom.len();
        Redactor { policy, key, counts: Counts::new(policy), first }
    }

    /// Writes the redacted transmission, followed by LF.
    #[expect(
        clippy::disallowed_methods,
        reason = "the redaction engine: it writes values out under the operation's disclosure"
    )]
    pub fn redact(&mut self, doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
        let raw = doc.bytes().expose_value(disclosure);
        let v = |(a, b): (u32, u32)| &raw[a as usize..b as usize];
        self.counts.records += 1;
        let mut ctx = Context::new(self.key);
        ctx.reference_year = doc.header_field("D1").and_then(|s| action::year_number(v(s)));
        let cy = tables::field(b"CY");
        let c2 = tables::field(b"C2");
        for s in &doc.segments {
            for f in doc.fields_of(s) {
                let d = f.def.map(usize::from);
                if ctx.patient.is_empty() && d.is_some() && (d == cy || d == c2) {
                    ctx.patient = v(f.value_span()).to_vec();
                }
            }
        }
        let mut value = Vec::new();
        // The header, fixed-width.
        for (id, _, span) in doc.header() {
            let f = v(span);
            let width = f.len();
            let start = out.len();
            if matches!(id, "A2" | "A3" | "A9" | "F1") {
                out.extend_from_slice(f);
                continue;
            }
            value.clear();
            let trimmed = &f[..f.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1)];
            if !trimmed.is_empty() {
                self.decide((None, id), trimmed, &mut ctx, &mut value);
            }
            clean(&value[..value.len().min(width)], out);
            out.resize(start + width, b' ');
        }
        if !doc.gaps.is_empty() {
            self.counts.fail_closed += doc.gaps.len() as u64;
        }
        for t in 0..=doc.groups {
            if t > 0 {
                out.push(GROUP_SEPARATOR);
            }
            for s in doc.segments_of(t) {
                let Some(seg) = s.id().filter(|_| {
                    let response = s.def.and_then(|d| tables::SEGMENTS.get(usize::from(d))).is_some_and(|x| x.2);
                    response == (doc.kind == Kind::Response)
                }) else {
                    self.counts.fail_closed += 1;
                    continue;
                };
                out.push(SEGMENT_SEPARATOR);
                out.push(FIELD_SEPARATOR);
                out.extend_from_slice(seg.as_bytes());
                for (k, f) in doc.fields_of(s).iter().enumerate() {
                    if k == 0 {
                        continue;
                    }
                    let Some(id) = f.id().filter(|id| *id != "AM") else {
                        self.counts.fail_closed += 1;
                        continue;
                    };
                    // Trailing spaces are padding (fixed-width senders): they carry nothing.
                    let val = v(f.value_span());
                    let val = &val[..val.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1)];
                    if val.is_empty() {
                        continue;
                    }
                    value.clear();
                    self.decide((Some(seg), id), val, &mut ctx, &mut value);
                    if value.is_empty() {
                        continue;
                    }
                    out.push(FIELD_SEPARATOR);
                    out.extend_from_slice(id.as_bytes());
                    clean(&value, out);
                }
            }
        }
        out.push(b'\n');
        crate::phi::wipe(&mut value);
        crate::phi::wipe(&mut ctx.patient);
    }

    /// Writes the decided form of one value onto `out` (nothing when removed).
    fn decide(&mut self, place: Place<'_>, v: &[u8], ctx: &mut Context<'_>, out: &mut Vec<u8>) {
        let Some(ri) = self.policy.ncpdp.iter().position(|r| r.matches(place)) else {
            self.counts.fail_closed += 1;
            return;
        };
        self.counts.rule(self.first + ri);
        let r = &self.policy.ncpdp[ri];
        let date = validate::is_date(v);
        let result: Option<Vec<u8>> = match &r.action {
            Action::Keep => {
                if proven(v, r.free_text) || validate::is_amount(v) {
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
                date.then(|| action::shift_date(v, shift, false)).flatten()
            }
            Action::GeneralizeDate => date.then(|| year_only(v, None)).flatten(),
            Action::GeneralizeBirthDate => date.then(|| year_only(v, Some(ctx.reference_year))).flatten(),
            Action::GeneralizeZip => action::zip(v),
            Action::CapAge => action::cap_age(v, b"90"),
        };
        if let Some(mut value) = result {
            out.extend_from_slice(&value);
            crate::phi::wipe(&mut value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors() {
        assert_eq!(Select::parse("AM01.CA"), Ok(Select::Field { segment: "AM01", field: Some("CA") }));
        assert_eq!(Select::parse("AM07"), Ok(Select::Field { segment: "AM07", field: None }));
        assert_eq!(Select::parse("header.D1"), Ok(Select::Header("D1")));
        assert_eq!(Select::parse("@date"), Ok(Select::Date));
        assert_eq!(Select::parse("header.A3"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        assert_eq!(Select::parse("header"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        assert_eq!(Select::parse("AM99.CA"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        assert_eq!(Select::parse("AM01.ZZ"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        assert_eq!(Select::parse("AM01.AM"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        assert_eq!(Select::parse("AM01.CA.1"), Err(Code::POLICY_UNKNOWN_SELECTOR));
    }
}
