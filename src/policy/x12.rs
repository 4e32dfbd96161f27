//! X12 redaction: a data-channel writer that writes a record (a transaction set, or an envelope
//! segment) under a policy's `[[x12]]` rules.
//!
//! Selectors: `SEG` (every element of a segment; `remove` drops a situational segment whole),
//! `SEG-NN` (an element), `SEG-NN.C` (a component), a qualifier `SEG*QUAL-NN` (the segment's
//! element 01 holds `QUAL`: `NM1*IL-09`, `REF*SY-02`, `DTP*472-03`), a loop `LOOP/SEG-NN`
//! (`2010BA/NM1-03`: the segment is in that loop or a loop inside it), and the guide's data types
//! `@AN`, `@ID` (also any element the guide gives a code list), `@DT`, `@TM`, `@R`, `@N` (N0..N9).
//!
//! Every value (element, or component of a composite) of a transaction set is decided by the
//! first rule that matches it; a value no rule matches is removed (fail closed). A value
//! removed from an element the guide requires (or one a syntax rule pairs with another) is
//! written as a placeholder of its type (`REDACTED`, `0`, the first code of its list, `19000101`,
//! `0000`), so the output is still a valid interchange. A `keep` writes only what it proves: a
//! code in the guide's list, a number, a date, or, for text, a code-like value (letters, digits,
//! `.` and `-`, not starting with three letters) unless `free_text = true`. Dates generalized
//! to the year keep their format (`CCYY0101`). A segment the guide does not place is dropped.
//! SE01 is rewritten with the number of segments written. Envelope segments (ISA, GS, GE, IEA,
//! TA1, ST, SE) are structure and kept, but ISA02 and ISA04 (authorization and security
//! information), which are written as spaces.
//!
//! What it does not do: validate the record (the validator does), or change loops.

use std::ops::Range;

use toml::de::DeTable;

use super::action::{self, Action, Context};
use super::manifest::Counts;
use super::{Ctx, LoadError, Policy};
use crate::diag::Code;
use crate::formats::x12::guide::{self, Element, Loop, Type, Usage};
use crate::formats::x12::read::{Document, RecordKind};
use crate::formats::x12::validate;
use crate::keys::Key;
use crate::phi::Disclosure;

/// The type selectors.
const TYPES: &[&str] = &["AN", "ID", "DT", "TM", "R", "N"];

/// An X12 selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Select {
    /// A position.
    Path {
        /// A loop id the segment is in (or in a loop inside it).
        lp: Option<String>,
        /// The segment id.
        seg: &'static str,
        /// The value of element 01.
        qual: Option<String>,
        /// The element (1-based).
        element: Option<u8>,
        /// The component (1-based).
        component: Option<u8>,
    },
    /// A data type of the guide.
    Type(&'static str),
}

impl Select {
    /// Parses a selector.
    pub fn parse(s: &str) -> Result<Select, Code> {
        let bad = Code::POLICY_UNKNOWN_SELECTOR;
        if let Some(t) = s.strip_prefix('@') {
            return TYPES.iter().find(|x| **x == t).map(|x| Select::Type(x)).ok_or(bad);
        }
        let (lp, rest) = match s.split_once('/') {
            Some((l, r)) => {
                if l.is_empty() || !guide::loop_exists(l) {
                    return Err(bad);
                }
                (Some(l.to_owned()), r)
            }
            None => (None, s),
        };
        let (head, pos) = match rest.split_once('-') {
            Some((h, p)) => (h, Some(p)),
            None => (rest, None),
        };
        let (seg, qual) = match head.split_once('*') {
            Some((sg, q)) => {
                if q.is_empty() || q.len() > 35 || !q.bytes().all(|b| b.is_ascii_alphanumeric()) {
                    return Err(bad);
                }
                (sg, Some(q.to_owned()))
            }
            None => (head, None),
        };
        let seg = guide::segment_id(seg.as_bytes()).ok_or(bad)?;
        let number = |t: &str| -> Result<u8, Code> {
            if t.is_empty() || t.len() > 2 || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad);
            }
            t.parse::<u8>().ok().filter(|n| *n > 0).ok_or(bad)
        };
        let (element, component) = match pos {
            None => (None, None),
            Some(p) => match p.split_once('.') {
                Some((e, c)) => (Some(number(e)?), Some(number(c)?)),
                None => (Some(number(p)?), None),
            },
        };
        Ok(Select::Path { lp, seg, qual, element, component })
    }
}

/// An X12 rule.
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
        let allowed = match (&select, &parts.action) {
            (Select::Type(t), a) if a.is_date_action() => matches!(*t, "DT" | "AN"),
            (Select::Type(t), Action::GeneralizeZip) => *t == "AN",
            _ => true,
        };
        if !allowed {
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

    /// True when a rule on the segment level would match everything `other` matches.
    pub(super) fn covers(&self, other: &Rule) -> bool {
        match (&self.select, &other.select) {
            (Select::Type(a), Select::Type(b)) => a == b,
            (
                Select::Path { lp: l1, seg: s1, qual: q1, element: e1, component: c1 },
                Select::Path { lp: l2, seg: s2, qual: q2, element: e2, component: c2 },
            ) => {
                s1 == s2
                    && (l1.is_none() || l1 == l2)
                    && (q1.is_none() || q1 == q2)
                    && (e1.is_none() || e1 == e2)
                    && (c1.is_none() || c1 == c2)
            }
            _ => false,
        }
    }
}

/// Where a value is.
struct Place<'a> {
    within: Option<&'static Loop>,
    seg: &'static str,
    qual: &'a [u8],
    element: u8,
    component: u8,
    ty: Type,
    /// The guide gives the element a code list.
    coded: bool,
}

fn loop_matches(lp: &str, within: Option<&'static Loop>) -> bool {
    within.is_some_and(|w| w.id == lp || w.path.split('/').any(|p| p == lp))
}

impl Rule {
    fn matches(&self, p: &Place<'_>) -> bool {
        match &self.select {
            Select::Type(t) => match *t {
                "N" => matches!(
                    p.ty,
                    Type::N0
                        | Type::N1
                        | Type::N2
                        | Type::N3
                        | Type::N4
                        | Type::N5
                        | Type::N6
                        | Type::N7
                        | Type::N8
                        | Type::N9
                ),
                "AN" => p.ty == Type::AN,
                "ID" => p.ty == Type::ID || p.coded,
                "DT" => p.ty == Type::DT,
                "TM" => p.ty == Type::TM,
                "R" => p.ty == Type::R,
                _ => false,
            },
            Select::Path { lp, seg, qual, element, component } => {
                *seg == p.seg
                    && lp.as_deref().is_none_or(|l| loop_matches(l, p.within))
                    && qual.as_deref().is_none_or(|q| q.as_bytes() == p.qual)
                    && element.is_none_or(|e| e == p.element)
                    && component.is_none_or(|c| c == p.component)
            }
        }
    }

    /// A segment-level rule (no element).
    fn matches_segment(&self, within: Option<&'static Loop>, seg: &'static str, qual: &[u8]) -> bool {
        match &self.select {
            Select::Path { lp, seg: s, qual: q, element: None, .. } => {
                *s == seg
                    && lp.as_deref().is_none_or(|l| loop_matches(l, within))
                    && q.as_deref().is_none_or(|q| q.as_bytes() == qual)
            }
            _ => false,
        }
    }
}

/// The redactor's state over one input.
pub struct Redactor<'p> {
    policy: &'p Policy,
    key: Option<&'p Key>,
    /// Counts for the manifest.
    pub counts: Counts,
    /// Index of the first X12 rule in the counts.
    first: usize,
}

crate::debug_placeholder!(Redactor<'p>);

impl<'p> Redactor<'p> {
    /// A redactor.
    pub fn new(policy: &'p Policy, key: Option<&'p Key>) -> Self {
        Redactor { policy, key, counts: Counts::new(policy), first: policy.hl7v2.len() + policy.fhir.len() }
    }

    /// Writes the redacted record.
    #[expect(
        clippy::disallowed_methods,
        reason = "the redaction engine: it writes values out under the operation's disclosure"
    )]
    pub fn redact(&mut self, doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
        let raw = doc.bytes().expose_value(disclosure);
        let d = doc.delimiters;
        let t = d.segment;
        let end = |out: &mut Vec<u8>| {
            out.push(t);
            if t != b'\n' {
                out.push(b'\n');
            }
        };
        let mut spans = Vec::new();
        if doc.kind != RecordKind::Set {
            for s in doc.own_segs() {
                if s.id == Some("ISA") {
                    doc.elements(s, &mut spans);
                    out.extend_from_slice(&raw[s.start as usize..s.id_end as usize]);
                    for (i, &(a, b)) in spans.iter().enumerate() {
                        out.push(d.element);
                        if i == 1 || i == 3 {
                            out.extend(std::iter::repeat_n(b' ', (b - a) as usize));
                        } else {
                            out.extend_from_slice(&raw[a as usize..b as usize]);
                        }
                    }
                } else {
                    out.extend_from_slice(&raw[s.start as usize..s.end as usize]);
                }
                end(out);
            }
            return;
        }
        self.counts.records += 1;
        let mut ctx = Context::new(self.key);
        ctx.reference_year = reference_year(doc, raw);
        let steps = validate::structure(doc).map(|(_, steps)| steps);
        let own = doc.own_segs();
        let mut written = 0u32;
        let mut seg_out = Vec::new();
        let mut value = Vec::new();
        for (i, s) in own.iter().enumerate() {
            let step = steps.as_ref().and_then(|st| st.get(i));
            match s.id {
                Some("ST") if i == 0 => {
                    out.extend_from_slice(&raw[s.start as usize..s.end as usize]);
                    end(out);
                    written += 1;
                    continue;
                }
                Some("SE") if i + 1 == own.len() => {
                    written += 1;
                    doc.elements(s, &mut spans);
                    out.extend_from_slice(b"SE");
                    out.push(d.element);
                    out.extend_from_slice(written.to_string().as_bytes());
                    for &(a, b) in spans.iter().skip(1) {
                        out.push(d.element);
                        out.extend_from_slice(&raw[a as usize..b as usize]);
                    }
                    end(out);
                    continue;
                }
                _ => {}
            }
            let (Some(id), Some(def)) = (s.id, step.and_then(|st| st.def)) else {
                // Not placed by the guide: dropped (fail closed).
                self.counts.fail_closed += 1;
                continue;
            };
            let within = step.and_then(|st| st.within);
            doc.elements(s, &mut spans);
            let qual: &[u8] = spans.first().map_or(&[], |&(a, b)| &raw[a as usize..b as usize]);
            // A segment-level rule that removes a situational segment drops it.
            if let Some(ri) = self.policy.x12.iter().position(|r| r.matches_segment(within, id, qual)) {
                if self.policy.x12[ri].action == Action::Remove && def.usage != Usage::R {
                    self.counts.rule(self.first + ri);
                    continue;
                }
            }
            seg_out.clear();
            seg_out.extend_from_slice(id.as_bytes());
            let defs = def.elements();
            let mut kept_len = seg_out.len();
            for (n, &(a, b)) in spans.iter().enumerate() {
                let v = &raw[a as usize..b as usize];
                seg_out.push(d.element);
                let Some(e) = defs.get(n) else {
                    if !v.is_empty() {
                        self.counts.fail_closed += 1;
                    }
                    continue;
                };
                let element = (n + 1).min(255) as u8;
                let paired = def.rules().iter().any(|r| r.elements.contains(&element));
                if e.ty == Type::C {
                    let comps = e.components();
                    let start = seg_out.len();
                    let mut last = start;
                    for (c, part) in v.split(|&x| x == d.component).enumerate() {
                        if c > 0 {
                            seg_out.push(d.component);
                        }
                        let Some(cd) = comps.get(c) else {
                            if !part.is_empty() {
                                self.counts.fail_closed += 1;
                            }
                            continue;
                        };
                        if part.is_empty() {
                            continue;
                        }
                        let place = Place {
                            within,
                            seg: id,
                            qual,
                            element,
                            component: (c + 1).min(255) as u8,
                            ty: cd.ty,
                            coded: !cd.codes().is_empty(),
                        };
                        value.clear();
                        self.decide(&place, cd, part, cd.usage == Usage::R, &mut ctx, &mut value);
                        seg_out.extend_from_slice(&value);
                        if !value.is_empty() {
                            last = seg_out.len();
                        }
                    }
                    seg_out.truncate(last);
                } else if !v.is_empty() {
                    let place =
                        Place { within, seg: id, qual, element, component: 0, ty: e.ty, coded: !e.codes().is_empty() };
                    value.clear();
                    let required = e.usage == Usage::R || paired;
                    match d.repetition.filter(|r| memchr::memchr(*r, v).is_some()) {
                        Some(r) => {
                            for (k, rep) in v.split(|&x| x == r).enumerate() {
                                if k > 0 {
                                    value.push(r);
                                }
                                let mut one = Vec::new();
                                self.decide(&place, e, rep, required, &mut ctx, &mut one);
                                value.extend_from_slice(&one);
                            }
                        }
                        None => self.decide(&place, e, v, required, &mut ctx, &mut value),
                    }
                    seg_out.extend_from_slice(&value);
                }
                if seg_out.last() != Some(&d.element) {
                    kept_len = seg_out.len();
                }
            }
            // No trailing separators.
            seg_out.truncate(kept_len);
            out.extend_from_slice(&seg_out);
            end(out);
            written += 1;
        }
        crate::phi::wipe(&mut seg_out);
        crate::phi::wipe(&mut value);
    }

    /// Writes the decided form of one value onto `out`.
    fn decide(
        &mut self,
        p: &Place<'_>,
        def: &Element,
        v: &[u8],
        required: bool,
        ctx: &mut Context<'_>,
        out: &mut Vec<u8>,
    ) {
        let rule = self.policy.x12.iter().position(|r| r.matches(p));
        let Some(ri) = rule else {
            self.counts.fail_closed += 1;
            placeholder(def, required, out);
            return;
        };
        self.counts.rule(self.first + ri);
        let r = &self.policy.x12[ri];
        let result: Option<Vec<u8>> = match &r.action {
            Action::Keep => {
                if proven(def, v, r.free_text) {
                    Some(v.to_vec())
                } else {
                    self.counts.unproven += 1;
                    None
                }
            }
            Action::Remove | Action::Empty => None,
            Action::Replace(text) => Some(text.as_bytes().to_vec()),
            Action::Mask(n) => Some(action::mask(v, *n)),
            Action::Hash => Some(action::hash(self.key, v)).filter(|h| !h.is_empty()),
            Action::Pseudonym => Some(action::pseudonym(self.key, v)).filter(|h| !h.is_empty()),
            Action::Sequence => {
                let n = ctx.sequence(v);
                Some(format!("{n:02}").into_bytes())
            }
            Action::DateShift(days) => {
                let shift = ctx.shift_days(*days);
                dates(v, |part| action::shift_date(part, shift, false))
            }
            Action::GeneralizeDate => dates(v, year_only),
            Action::GeneralizeBirthDate => {
                let reference = ctx.reference_year;
                dates(v, |part| {
                    let y = action::year_number(part)?;
                    let r = reference?;
                    let y = if r >= y.saturating_add(90) { r - 90 } else { y };
                    let mut o = format!("{y:04}").into_bytes();
                    o.extend_from_slice(b"0101");
                    o.resize(part.len().max(8), b'0');
                    Some(o)
                })
            }
            Action::GeneralizeZip => action::zip(v),
            Action::CapAge => action::cap_age(v, b"90"),
        };
        match result {
            Some(value) if !value.is_empty() => out.extend_from_slice(&value),
            _ => placeholder(def, required, out),
        }
    }
}

/// Applies `f` to each date of a value (`CCYYMMDD`, a range `CCYYMMDD-CCYYMMDD`, a date and
/// time `CCYYMMDDHHMM`); `None` when a part is not one.
fn dates(v: &[u8], mut f: impl FnMut(&[u8]) -> Option<Vec<u8>>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for (i, part) in v.split(|&b| b == b'-').enumerate() {
        if i > 0 {
            out.push(b'-');
        }
        if part.len() < 8 || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        out.extend_from_slice(&f(part)?);
    }
    Some(out)
}

/// `CCYYMMDD[HHMM..]` to `CCYY0101[0000..]`.
fn year_only(part: &[u8]) -> Option<Vec<u8>> {
    let y = action::year(part)?;
    let mut o = y.to_vec();
    o.extend_from_slice(b"0101");
    o.resize(part.len(), b'0');
    Some(o)
}

/// The record's reference year: GS04's, else ISA09's.
fn reference_year(doc: &Document, raw: &[u8]) -> Option<u32> {
    let mut spans = Vec::new();
    let gs = doc.context("GS")?;
    doc.elements(gs, &mut spans);
    let &(a, b) = spans.get(3)?;
    action::year_number(&raw[a as usize..b as usize])
}

/// What `keep` proves safe.
fn proven(def: &Element, v: &[u8], free_text: bool) -> bool {
    let codes = def.codes();
    if !codes.is_empty() {
        return guide::has_code(codes, v);
    }
    match def.ty {
        Type::ID => code_like(v) || free_text,
        Type::R
        | Type::N0
        | Type::N1
        | Type::N2
        | Type::N3
        | Type::N4
        | Type::N5
        | Type::N6
        | Type::N7
        | Type::N8
        | Type::N9 => {
            let body = v.strip_prefix(b"-").unwrap_or(v);
            !body.is_empty() && body.iter().all(|b| b.is_ascii_digit() || *b == b'.')
        }
        Type::DT => validate::is_date(v),
        Type::TM => validate::is_time(v),
        _ => free_text || code_like(v),
    }
}

/// A code (diagnosis, procedure, taxonomy, modifier): upper-case letters, digits, `.` and `-`,
/// at most 15, and not three letters in front (a word) unless that is all.
fn code_like(v: &[u8]) -> bool {
    !v.is_empty()
        && v.len() <= 15
        && v.iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-'))
        && (v.len() <= 3 || !v[..3].iter().all(u8::is_ascii_uppercase))
}

/// What a removed value becomes: nothing, or, when the guide requires the element, a value of
/// its type that carries nothing.
fn placeholder(def: &Element, required: bool, out: &mut Vec<u8>) {
    if !required {
        return;
    }
    let min = usize::from(def.min.max(1));
    let max = usize::from(def.max.max(1));
    match def.ty {
        _ if !def.codes().is_empty() => out.extend_from_slice(def.codes()[0].as_bytes()),
        Type::ID => out.extend(std::iter::repeat_n(b'X', min)),
        Type::R
        | Type::N0
        | Type::N1
        | Type::N2
        | Type::N3
        | Type::N4
        | Type::N5
        | Type::N6
        | Type::N7
        | Type::N8
        | Type::N9 => out.extend(std::iter::repeat_n(b'0', min)),
        Type::DT => out.extend_from_slice(if max >= 8 { b"19000101" } else { b"000101" }),
        Type::TM => out.extend_from_slice(b"0000"),
        _ => {
            let text = b"REDACTED";
            let n = text.len().min(max);
            out.extend_from_slice(&text[..n]);
            for _ in n..min {
                out.push(b'X');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors() {
        assert!(matches!(Select::parse("2010BA/NM1-03"), Ok(Select::Path { element: Some(3), .. })));
        assert!(matches!(Select::parse("NM1*IL-09"), Ok(Select::Path { qual: Some(_), element: Some(9), .. })));
        assert!(matches!(Select::parse("CLM-05.1"), Ok(Select::Path { component: Some(1), .. })));
        assert!(matches!(Select::parse("N3"), Ok(Select::Path { element: None, .. })));
        assert_eq!(Select::parse("@DT"), Ok(Select::Type("DT")));
        assert_eq!(Select::parse("QQQ-01"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        assert_eq!(Select::parse("NOLOOP/NM1-01"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        assert_eq!(Select::parse("NM1-0"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        assert!(code_like(b"E1165"));
        assert!(code_like(b"99213"));
        assert!(!code_like(b"MKR12X"));
        assert!(!code_like(b"SMITH"));
        assert_eq!(year_only(b"20240315"), Some(b"20240101".to_vec()));
        assert_eq!(dates(b"20240315-20240320", year_only), Some(b"20240101-20240101".to_vec()));
    }
}
