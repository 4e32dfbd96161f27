//! C-CDA redaction: the canonical XML of a document (as `fmt` writes it) with every attribute
//! value and every text node decided by a policy's `[[ccda]]` rules.
//!
//! Selectors: `NAME` (an element: its own text), `NAME@ATTR` (an attribute of an element), each
//! optionally behind one context step, `PARENT/NAME...` (the element's parent) or
//! `ANCESTOR//NAME...` (any ancestor); `*` for any element or attribute name; `sdtc:` for the
//! SDTC extension attributes (`sdtc:valueSet`). `@date`: the `value` of the time elements
//! (`effectiveTime`, `birthTime`, `time`, `low`, `high`, `center`, `sdtc:deceasedTime`, and any
//! element of `xsi:type` TS or IVL_TS).
//!
//! An element selected by a `remove` rule is left out with its subtree; by an `empty` rule it is
//! written as `<NAME nullFlavor="MSK"/>` (its `xsi:type` kept), or as an empty `<text/>` for a
//! section's narrative block, whose class has no nullFlavor. Any other action on an element
//! applies to its own text. Every attribute value and text node is decided by the first rule
//! that selects it; one no rule selects is removed (fail closed): the attribute is dropped, the
//! text emptied. An element of CDA or SDTC that loses every value this way is written with
//! `nullFlavor="MSK"` (outside narrative blocks), so a data type still has its value or its
//! flavor of null. Structure is kept: element names, `xsi:type` (when it is a type name), the
//! namespace declarations of CDA, SDTC and XSI. Elements of other namespaces are dropped.
//! `keep` writes what it proves: a number, a date, or a code-like value (letters, digits, `.`,
//! `-`, `_`, at most 64, no space; of a `value` attribute only a number, a date, `true` or
//! `false`; of a `unit` a UCUM unit without `{annotation}`), unless `free_text = true`. Dates generalized to the year are
//! written as the year alone (`YYYY`, a valid TS). The reference year of
//! `generalize_birth_date` is the year of the document's `effectiveTime`.
//!
//! What it does not do: keep a narrative block as it came (a `keep` on `section/text` keeps its
//! own text; the markup's text and attributes need their own rules), or validate the output
//! (the validator does).

use std::ops::Range;

use toml::de::DeTable;

use super::action::{self, Action, Context};
use super::manifest::Counts;
use super::{Ctx, LoadError, Policy};
use crate::diag::Code;
use crate::formats::ccda::read::{Document, Ns, SDTC_NS, V3_NS, XSI_NS};
use crate::formats::ccda::write::{Prefixes, attr_escaped, prefix_of, prefixes, sorted_attrs, text_escaped};
use crate::keys::Key;
use crate::phi::Disclosure;

/// The elements whose `value` is a point in time.
const TIME_ELEMENTS: &[&[u8]] = &[b"effectiveTime", b"birthTime", b"time", b"low", b"high", b"center", b"deceasedTime"];

/// One step of a selector: an element name (`None`: any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step(Option<String>);

impl Step {
    fn parse(s: &str) -> Result<Step, Code> {
        if s == "*" {
            return Ok(Step(None));
        }
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            && s.as_bytes()[0].is_ascii_alphabetic();
        if ok { Ok(Step(Some(s.to_owned()))) } else { Err(Code::POLICY_UNKNOWN_SELECTOR) }
    }

    fn matches(&self, name: &[u8]) -> bool {
        self.0.as_ref().is_none_or(|n| n.as_bytes() == name)
    }

    fn covers(&self, other: &Step) -> bool {
        self.0.is_none() || self.0 == other.0
    }
}

/// The context of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Within {
    /// Anywhere.
    Any,
    /// The element's parent.
    Parent(Step),
    /// Any ancestor of the element.
    Ancestor(Step),
}

/// A C-CDA selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Select {
    /// An element (its own text) or one of its attributes.
    Path {
        /// Where the element is.
        within: Within,
        /// The element.
        element: Step,
        /// The attribute (`None`: the element); `Some(Step(None))`: any attribute.
        attr: Option<Step>,
    },
    /// The `value` of time elements.
    Date,
}

impl Select {
    /// Parses a selector.
    pub fn parse(s: &str) -> Result<Select, Code> {
        let bad = Code::POLICY_UNKNOWN_SELECTOR;
        if s == "@date" {
            return Ok(Select::Date);
        }
        let (within, rest) = if let Some((a, r)) = s.split_once("//") {
            (Within::Ancestor(Step::parse(a)?), r)
        } else if let Some((p, r)) = s.split_once('/') {
            (Within::Parent(Step::parse(p)?), r)
        } else {
            (Within::Any, s)
        };
        let (element, attr) = match rest.split_once('@') {
            Some((e, a)) => {
                let a = a.strip_prefix("sdtc:").map_or_else(|| a.to_owned(), |x| format!("sdtc:{x}"));
                let step = if a == "*" {
                    Step(None)
                } else if a.strip_prefix("sdtc:").unwrap_or(&a).bytes().all(|b| b.is_ascii_alphanumeric())
                    && !a.is_empty()
                    && a.len() <= 64
                {
                    Step(Some(a))
                } else {
                    return Err(bad);
                };
                (Step::parse(e)?, Some(step))
            }
            None => (Step::parse(rest)?, None),
        };
        Ok(Select::Path { within, element, attr })
    }
}

/// A C-CDA rule.
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
        if !parts.types.is_empty() {
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
                Select::Path { within: w1, element: e1, attr: a1 },
                Select::Path { within: w2, element: e2, attr: a2 },
            ) => {
                let within = match (w1, w2) {
                    (Within::Any, _) => true,
                    (Within::Parent(p1), Within::Parent(p2)) | (Within::Ancestor(p1), Within::Ancestor(p2)) => {
                        p1.covers(p2)
                    }
                    (Within::Ancestor(p1), Within::Parent(p2)) => p1.covers(p2),
                    _ => false,
                };
                let attr = match (a1, a2) {
                    (None, None) => true,
                    (Some(x), Some(y)) => x.covers(y),
                    _ => false,
                };
                within && attr && e1.covers(e2)
            }
            _ => false,
        }
    }
}

/// What a rule is asked about.
#[derive(Copy, Clone)]
enum Target<'a> {
    /// An element (its text, or itself for `remove` and `empty`).
    Element,
    /// An attribute by qualified name (`sdtc:` prefixed for SDTC).
    Attr(&'a [u8]),
}

/// The redactor's state over one input.
pub struct Redactor<'p> {
    policy: &'p Policy,
    key: Option<&'p Key>,
    /// Counts for the manifest.
    pub counts: Counts,
    /// Index of the first C-CDA rule in the counts.
    first: usize,
}

crate::debug_placeholder!(Redactor<'p>);

struct Walk<'a, 'k> {
    doc: &'a Document,
    p: Prefixes<'a>,
    disclosure: &'a Disclosure,
    ctx: Context<'k>,
}

impl<'p> Redactor<'p> {
    /// A redactor.
    pub fn new(policy: &'p Policy, key: Option<&'p Key>) -> Self {
        let first = policy.hl7v2.len()
            + policy.fhir.len()
            + policy.x12.len()
            + policy.astm.len()
            + policy.dicom.len()
            + policy.ncpdp.len();
        Redactor { policy, key, counts: Counts::new(policy), first }
    }

    /// Writes the redacted document.
    #[expect(
        clippy::disallowed_methods,
        reason = "the redaction engine: it writes values out under the operation's disclosure"
    )]
    pub fn redact(&mut self, doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
        self.counts.records += 1;
        let mut ctx = Context::new(self.key);
        // The reference year: the document's effectiveTime.
        if let Some(t) = doc.children_named(0, b"effectiveTime").next()
            && let Some(a) = doc.attr(t, Ns::None, b"value")
        {
            ctx.reference_year = action::year_number(doc.tree().value(a.value).expose_value(disclosure));
        }
        let mut p = prefixes(doc, disclosure);
        p.other.clear();
        let mut w = Walk { doc, p, disclosure, ctx };
        out.extend_from_slice(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        for &r in doc.roots() {
            self.element(&mut w, r, 0, false, out);
        }
        crate::phi::wipe(&mut w.ctx.patient);
    }

    /// The first rule selecting `target` of element `e`.
    fn rule_for(&self, w: &Walk<'_, '_>, e: u32, target: Target<'_>) -> Option<usize> {
        let doc = w.doc;
        let name = doc.local(e);
        let parent = doc.nodes().get(e as usize).map_or(u32::MAX, |n| n.parent);
        self.policy.ccda.iter().position(|r| match &r.select {
            Select::Date => {
                matches!(target, Target::Attr(b"value"))
                    && (TIME_ELEMENTS.contains(&name) || {
                        doc.attr(e, Ns::Xsi, b"type").is_some_and(|a| {
                            #[expect(clippy::disallowed_methods, reason = "a type name, structure")]
                            let t = doc.tree().value(a.value).expose_value(w.disclosure);
                            t == b"TS" || t == b"IVL_TS"
                        })
                    })
            }
            Select::Path { within, element, attr } => {
                let target_ok = match (attr, target) {
                    (None, Target::Element) => true,
                    (Some(a), Target::Attr(q)) => a.matches(q),
                    _ => false,
                };
                target_ok
                    && element.matches(name)
                    && match within {
                        Within::Any => true,
                        Within::Parent(s) => parent != u32::MAX && s.matches(doc.local(parent)),
                        Within::Ancestor(s) => {
                            let mut at = parent;
                            let mut found = false;
                            while let Some(n) = doc.nodes().get(at as usize) {
                                if s.matches(doc.local(at)) {
                                    found = true;
                                    break;
                                }
                                at = n.parent;
                            }
                            found
                        }
                    }
            }
        })
    }

    /// The decided form of one value (`None`: removed).
    fn decide(&mut self, ri: Option<usize>, v: &[u8], attr: &[u8], ctx: &mut Context<'_>) -> Option<Vec<u8>> {
        let Some(ri) = ri else {
            self.counts.fail_closed += 1;
            return None;
        };
        self.counts.rule(self.first + ri);
        let r = &self.policy.ccda[ri];
        match &r.action {
            Action::Keep => {
                if proven(v, r.free_text, attr) {
                    return Some(v.to_vec());
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
                is_ts(v).then(|| action::shift_date(v, shift, false)).flatten()
            }
            Action::GeneralizeDate => is_ts(v).then(|| year(v, None)).flatten(),
            Action::GeneralizeBirthDate => is_ts(v).then(|| year(v, Some(ctx.reference_year))).flatten(),
            Action::GeneralizeZip => action::zip(v),
            Action::CapAge => action::cap_age(v, b"90"),
        }
    }

    /// Writes element `e` as decided.
    #[expect(
        clippy::disallowed_methods,
        reason = "the redaction engine: it writes values out under the operation's disclosure"
    )]
    fn element(&mut self, w: &mut Walk<'_, '_>, e: u32, depth: usize, inline: bool, out: &mut Vec<u8>) {
        let doc = w.doc;
        let tree = doc.tree();
        let Some(el) = tree.elements().get(e as usize) else { return };
        let ns = doc.ns(e);
        if !matches!(ns, Ns::V3 | Ns::Sdtc) {
            self.counts.fail_closed += 1;
            return;
        }
        let node = doc.nodes().get(e as usize).copied();
        let narrative = node.is_some_and(|n| n.narrative);
        let section_text = !narrative
            && doc.local(e) == b"text"
            && node.is_some_and(|n| doc.nodes().get(n.parent as usize).is_some() && doc.local(n.parent) == b"section");
        // The element itself: removed, or emptied.
        let own = if doc.is_root(e) { None } else { self.rule_for(w, e, Target::Element) };
        let whole = own.map(|ri| &self.policy.ccda[ri].action).filter(|a| matches!(a, Action::Remove | Action::Empty));
        if let Some(a) = whole {
            let empty = *a == Action::Empty;
            self.counts.rule(self.first + own.unwrap_or(0));
            if !empty || narrative {
                return;
            }
        }
        let mut name = prefix_of(&w.p, el.ns, ns).into_bytes();
        name.extend_from_slice(doc.local(e));
        if !inline {
            out.extend(std::iter::repeat_n(b' ', depth * 2));
        }
        out.push(b'<');
        out.extend_from_slice(&name);
        if doc.is_root(e) {
            out.extend_from_slice(b" xmlns=\"");
            out.extend_from_slice(V3_NS);
            out.push(b'"');
            if w.p.sdtc {
                out.extend_from_slice(b" xmlns:sdtc=\"");
                out.extend_from_slice(SDTC_NS);
                out.push(b'"');
            }
            if w.p.xsi {
                out.extend_from_slice(b" xmlns:xsi=\"");
                out.extend_from_slice(XSI_NS);
                out.push(b'"');
            }
        }
        let first = el.attrs.start as usize;
        let attrs = sorted_attrs(doc, &w.p, e);
        let mut written = 0usize;
        let mut dropped = 0usize;
        for (_, q, a) in &attrs {
            let k = tree.attrs_of(e).iter().position(|x| std::ptr::eq(x, *a)).map_or(first, |k| first + k);
            let v = tree.value(a.value).expose_value(w.disclosure);
            let ans = doc.attr_ns(k);
            let local = doc.attr_local(a);
            if ans == Ns::Xsi && local == b"type" {
                if v.len() <= 32 && !v.is_empty() && v.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_') {
                    out.extend_from_slice(b" xsi:type=\"");
                    out.extend_from_slice(v);
                    out.push(b'"');
                } else {
                    self.counts.fail_closed += 1;
                }
                continue;
            }
            if whole.is_some() {
                continue;
            }
            let qual: Vec<u8> = match ans {
                Ns::None => local.to_vec(),
                Ns::Sdtc => [b"sdtc:".as_slice(), local].concat(),
                _ => {
                    self.counts.fail_closed += 1;
                    dropped += 1;
                    continue;
                }
            };
            let ri = self.rule_for(w, e, Target::Attr(&qual));
            match self.decide(ri, v, &qual, &mut w.ctx) {
                Some(mut value) => {
                    out.push(b' ');
                    out.extend_from_slice(q);
                    out.extend_from_slice(b"=\"");
                    attr_escaped(out, &value);
                    out.push(b'"');
                    crate::phi::wipe(&mut value);
                    written += 1;
                }
                None => dropped += 1,
            }
        }
        if whole.is_some() {
            if !section_text {
                out.extend_from_slice(b" nullFlavor=\"MSK\"");
            }
            out.extend_from_slice(b"/>");
            if !inline {
                out.push(b'\n');
            }
            return;
        }
        // The element's own text, decided once per text node.
        let mut texts: Vec<(u32, Vec<u8>)> = Vec::new();
        for t in tree.texts_of(e) {
            let v = tree.value(t.value).expose_value(w.disclosure);
            let ri = self.rule_for(w, e, Target::Element);
            match self.decide(ri, v, b"", &mut w.ctx) {
                Some(value) => texts.push((t.before, value)),
                None => dropped += 1,
            }
        }
        let children: Vec<u32> = tree.children(e).filter(|&c| matches!(doc.ns(c), Ns::V3 | Ns::Sdtc)).collect();
        let other = tree.children(e).count() - children.len();
        self.counts.fail_closed += other as u64;
        let null = dropped > 0 && written == 0 && !narrative && !section_text;
        let mark = out.len();
        let mut closed = false;
        if !texts.is_empty() || inline {
            out.push(b'>');
            let mut it = texts.iter_mut().peekable();
            for &c in &children {
                while let Some((_, t)) = it.next_if(|(before, _)| *before <= c) {
                    text_escaped(out, t);
                }
                self.element(w, c, depth + 1, true, out);
            }
            for (_, t) in it {
                text_escaped(out, t);
            }
            if out.len() > mark + 1 {
                out.extend_from_slice(b"</");
                out.extend_from_slice(&name);
                out.push(b'>');
                closed = true;
            }
        } else {
            out.extend_from_slice(b">\n");
            for &c in &children {
                self.element(w, c, depth + 1, false, out);
            }
            if out.len() > mark + 2 {
                out.extend(std::iter::repeat_n(b' ', depth * 2));
                out.extend_from_slice(b"</");
                out.extend_from_slice(&name);
                out.push(b'>');
                closed = true;
            }
        }
        if !closed {
            // Nothing written inside: an empty element, with its null flavor when it lost every
            // value.
            out.truncate(mark);
            if null {
                out.extend_from_slice(b" nullFlavor=\"MSK\"");
            }
            out.extend_from_slice(b"/>");
        }
        for (_, t) in &mut texts {
            crate::phi::wipe(t);
        }
        if !inline {
            out.push(b'\n');
        }
    }
}

/// A TS value: `YYYY[MM[DD[HH[MM[SS[.S+]]]]]][+|-ZZZZ]`.
fn is_ts(v: &[u8]) -> bool {
    let body = match v.iter().position(|b| *b == b'+' || *b == b'-') {
        Some(i) => {
            let zone = &v[i + 1..];
            if zone.len() != 4 || !zone.iter().all(u8::is_ascii_digit) {
                return false;
            }
            &v[..i]
        }
        None => v,
    };
    let (digits, frac) = match body.iter().position(|b| *b == b'.') {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    digits.len() >= 4
        && digits.len() <= 14
        && digits.len() % 2 == 0
        && digits.iter().all(u8::is_ascii_digit)
        && frac.is_none_or(|f| !f.is_empty() && digits.len() == 14 && f.iter().all(u8::is_ascii_digit))
}

/// A TS to its year; for a birth date (`Some(reference)`), removed unless the reference year is
/// known and less than 90 years later.
fn year(v: &[u8], birth: Option<Option<u32>>) -> Option<Vec<u8>> {
    let y = action::year_number(v)?;
    if let Some(reference) = birth {
        let r = reference?;
        if r >= y.saturating_add(90) {
            return None;
        }
    }
    Some(format!("{y:04}").into_bytes())
}

/// What `keep` proves safe: a number, a TS, a code-like value (of a `value` attribute: only
/// `true` and `false`, the values of BL; of a `unit` attribute: a UCUM unit without
/// annotations), or anything with `free_text`. `attr`: the attribute's name (empty for text).
fn proven(v: &[u8], free_text: bool, attr: &[u8]) -> bool {
    if free_text {
        return true;
    }
    let body = v.strip_prefix(b"-").unwrap_or(v);
    let number = !body.is_empty() && body.iter().all(|b| b.is_ascii_digit() || *b == b'.');
    if attr == b"value" {
        return number || is_ts(v) || v == b"true" || v == b"false";
    }
    if attr == b"unit" {
        return !v.is_empty()
            && v.len() <= 20
            && v.iter().all(|b| b.is_ascii_alphanumeric() || b"/.[]%*^-".contains(b));
    }
    number
        || is_ts(v)
        || (!v.is_empty()
            && v.len() <= 64
            && v.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_and_values() {
        assert_eq!(Select::parse("@date"), Ok(Select::Date));
        assert!(matches!(
            Select::parse("patientRole/id@extension"),
            Ok(Select::Path { within: Within::Parent(_), attr: Some(_), .. })
        ));
        assert!(matches!(
            Select::parse("recordTarget//addr"),
            Ok(Select::Path { within: Within::Ancestor(_), attr: None, .. })
        ));
        assert!(matches!(Select::parse("*@sdtc:valueSet"), Ok(Select::Path { attr: Some(Step(Some(_))), .. })));
        assert!(Select::parse("*@*").is_ok());
        for bad in ["", "a b", "a@", "@x", "a/b/c", "a@b c", "1x"] {
            assert_eq!(Select::parse(bad), Err(Code::POLICY_UNKNOWN_SELECTOR), "{bad}");
        }
        assert!(is_ts(b"2024") && is_ts(b"20240315") && is_ts(b"20240315101112-0500") && is_ts(b"20240315101112.123"));
        assert!(is_ts(b"202403") && !is_ts(b"2024031") && !is_ts(b"20240315-05"));
        assert_eq!(year(b"20240315101112-0500", None), Some(b"2024".to_vec()));
        assert_eq!(year(b"19200315", Some(Some(2024))), None);
        assert_eq!(year(b"19800315", Some(Some(2024))), Some(b"1980".to_vec()));
        assert!(proven(b"2.16.840.1.113883.6.1", false, b"root") && proven(b"34133-9", false, b"code"));
        assert!(!proven(b"John Smith", false, b"") && !proven(b"MRN0042", false, b"value"));
        assert!(proven(b"false", false, b"value") && proven(b"mm[Hg]", false, b"unit"));
        assert!(proven(b"mg/dL", false, b"unit") && !proven(b"{John}", false, b"unit"));
    }
}
