//! NCPDP SCRIPT redaction: the canonical XML of a message (as `fmt` writes it) with every
//! attribute value and every text node decided by a policy's `[[ncpdp-script]]` rules.
//!
//! Selectors: `NAME` (an element: its own text), `NAME@ATTR` (an unprefixed attribute of an
//! element), each optionally behind one context step, `PARENT/NAME...` (the element's parent) or
//! `ANCESTOR//NAME...` (any ancestor); `*` for any element or attribute name. `@date`: the text
//! of the time elements (`Date`, `DateTime`, `SentTime`).
//!
//! An element selected by a `remove` rule is left out with its subtree; by an `empty` rule it is
//! written empty (`<NAME/>`). Any other action on an element applies to its own text. Every
//! attribute value and text node is decided by the first rule that selects it; one no rule
//! selects is removed (fail closed): the attribute is dropped, the text emptied. Structure is
//! kept: element names and the SCRIPT namespace (and `xsi:` declared when used). Elements and
//! attributes of other namespaces are dropped. `keep` writes what it proves: a number, a date,
//! or a code-like value (letters, digits, `.`, `-`, `_`, at most 64, no space), unless
//! `free_text = true`. Dates generalized to the year keep their form (`YYYY-01-01`,
//! `YYYY-01-01T00:00:00`), so the message still validates. The reference year of
//! `generalize_birth_date` is the year of the Header's `SentTime`.
//!
//! What it does not do: validate the output (the validator does), or keep a value whose rule
//! cannot prove it safe.

use std::ops::Range;

use toml::de::DeTable;

use super::action::{self, Action, Context};
use super::manifest::Counts;
use super::{Ctx, LoadError, Policy};
use crate::diag::Code;
use crate::formats::ncpdp_script::read::{Document, Ns};
use crate::formats::ncpdp_script::validate::{is_date, is_date_time};
use crate::formats::ncpdp_script::write::{Prefixes, attr_escaped, prefixes, root_declarations, text_escaped};
use crate::keys::Key;
use crate::phi::Disclosure;

/// The elements whose text is a point in time.
const TIME_ELEMENTS: &[&[u8]] = &[b"Date", b"DateTime", b"SentTime"];

/// One step of a selector: an element or attribute name (`None`: any).
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

/// A SCRIPT selector.
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
    /// The text of time elements.
    Date,
}

impl Select {
    /// Parses a selector.
    pub fn parse(s: &str) -> Result<Select, Code> {
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
            Some((e, a)) => (Step::parse(e)?, Some(Step::parse(a)?)),
            None => (Step::parse(rest)?, None),
        };
        Ok(Select::Path { within, element, attr })
    }
}

/// A SCRIPT rule.
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
    /// An unprefixed attribute by name.
    Attr(&'a [u8]),
}

/// The redactor's state over one input.
pub struct Redactor<'p> {
    policy: &'p Policy,
    key: Option<&'p Key>,
    /// Counts for the manifest.
    pub counts: Counts,
    /// Index of the first SCRIPT rule in the counts.
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
            + policy.ncpdp.len()
            + policy.ccda.len();
        Redactor { policy, key, counts: Counts::new(policy), first }
    }

    /// Writes the redacted message.
    #[expect(
        clippy::disallowed_methods,
        reason = "the redaction engine: it writes values out under the operation's disclosure"
    )]
    pub fn redact(&mut self, doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
        self.counts.records += 1;
        let mut ctx = Context::new(self.key);
        // The reference year: the Header's SentTime.
        if let Some(h) = doc.header
            && let Some(t) = doc.children_named(h, "SentTime").next()
            && let Some(text) = doc.tree().texts_of(t).next()
        {
            ctx.reference_year =
                action::year_number(doc.tree().value(text.value).expose_value(disclosure).trim_ascii());
        }
        let mut p = prefixes(doc, disclosure);
        p.only_script();
        let mut w = Walk { doc, p, disclosure, ctx };
        out.extend_from_slice(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        self.element(&mut w, 0, 0, false, out);
        crate::phi::wipe(&mut w.ctx.patient);
    }

    /// The first rule selecting `target` of element `e`.
    fn rule_for(&self, w: &Walk<'_, '_>, e: u32, target: Target<'_>) -> Option<usize> {
        let doc = w.doc;
        let name = doc.local(e);
        let parent = doc.parent(e);
        self.policy.ncpdp_script.iter().position(|r| match &r.select {
            Select::Date => matches!(target, Target::Element) && TIME_ELEMENTS.contains(&name),
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
                            while at != u32::MAX {
                                if s.matches(doc.local(at)) {
                                    found = true;
                                    break;
                                }
                                at = doc.parent(at);
                            }
                            found
                        }
                    }
            }
        })
    }

    /// The decided form of one value (`None`: removed).
    fn decide(&mut self, ri: Option<usize>, v: &[u8], ctx: &mut Context<'_>) -> Option<Vec<u8>> {
        let Some(ri) = ri else {
            self.counts.fail_closed += 1;
            return None;
        };
        self.counts.rule(self.first + ri);
        let r = &self.policy.ncpdp_script[ri];
        let t = v.trim_ascii();
        let dated = is_date(t) || is_date_time(t);
        match &r.action {
            Action::Keep => {
                if proven(v, r.free_text) {
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
                dated.then(|| action::shift_date(t, shift, true)).flatten()
            }
            Action::GeneralizeDate => dated.then(|| year_only(t, None)).flatten(),
            Action::GeneralizeBirthDate => dated.then(|| year_only(t, Some(ctx.reference_year))).flatten(),
            Action::GeneralizeZip => action::zip(t),
            Action::CapAge => action::cap_age(t, b"90"),
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
        if tree.elements().get(e as usize).is_none() {
            return;
        }
        if doc.ns(e) != Ns::Script {
            self.counts.fail_closed += 1;
            return;
        }
        // The element itself: removed, or emptied.
        let own = if e == 0 { None } else { self.rule_for(w, e, Target::Element) };
        let whole =
            own.map(|ri| &self.policy.ncpdp_script[ri].action).filter(|a| matches!(a, Action::Remove | Action::Empty));
        if let Some(a) = whole {
            let empty = *a == Action::Empty;
            self.counts.rule(self.first + own.unwrap_or(0));
            if !empty {
                return;
            }
        }
        let name = doc.local(e);
        if !inline {
            out.extend(std::iter::repeat_n(b' ', depth * 2));
        }
        out.push(b'<');
        out.extend_from_slice(name);
        if e == 0 {
            root_declarations(&w.p, out);
        }
        let first = tree.elements().get(e as usize).map_or(0, |x| x.attrs.start as usize);
        let mut attrs: Vec<(usize, &crate::formats::xml::Attr)> =
            tree.attrs_of(e).iter().enumerate().map(|(k, a)| (first + k, a)).collect();
        attrs.sort_by(|a, b| {
            (doc.attr_ns(a.0) != Ns::None, doc.attr_local(a.1))
                .cmp(&(doc.attr_ns(b.0) != Ns::None, doc.attr_local(b.1)))
        });
        for (k, a) in attrs {
            let local = doc.attr_local(a);
            let v = tree.value(a.value).expose_value(w.disclosure);
            let ans = doc.attr_ns(k);
            if ans == Ns::Xsi && local == b"type" && w.p.xsi() {
                if v.len() <= 64
                    && !v.is_empty()
                    && v.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b':'))
                {
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
            if ans != Ns::None {
                self.counts.fail_closed += 1;
                continue;
            }
            let ri = self.rule_for(w, e, Target::Attr(local));
            if let Some(mut value) = self.decide(ri, v, &mut w.ctx) {
                out.push(b' ');
                out.extend_from_slice(local);
                out.extend_from_slice(b"=\"");
                attr_escaped(out, &value);
                out.push(b'"');
                crate::phi::wipe(&mut value);
            }
        }
        if whole.is_some() {
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
            if let Some(value) = self.decide(ri, v, &mut w.ctx) {
                texts.push((t.before, value));
            }
        }
        let children: Vec<u32> = tree.children(e).filter(|&c| doc.ns(c) == Ns::Script).collect();
        let other = tree.children(e).count() - children.len();
        self.counts.fail_closed += other as u64;
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
                out.extend_from_slice(name);
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
                out.extend_from_slice(name);
                out.push(b'>');
                closed = true;
            }
        }
        if !closed {
            out.truncate(mark);
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

/// A date or date-time to its year in the same form (`YYYY-01-01`, `YYYY-01-01T00:00:00`); for a
/// birth date (`Some(reference)`), removed unless the reference year is known and less than 90
/// years later.
fn year_only(v: &[u8], birth: Option<Option<u32>>) -> Option<Vec<u8>> {
    let y = action::year_number(v)?;
    if let Some(reference) = birth {
        let r = reference?;
        if r >= y.saturating_add(90) {
            return None;
        }
    }
    let time = if v.len() > 10 { "T00:00:00" } else { "" };
    Some(format!("{y:04}-01-01{time}").into_bytes())
}

/// What `keep` proves safe: a number, a date, a code-like value, or anything with `free_text`.
fn proven(v: &[u8], free_text: bool) -> bool {
    if free_text {
        return true;
    }
    let t = v.trim_ascii();
    let number = !t.is_empty() && t.iter().all(|b| b.is_ascii_digit() || *b == b'.');
    number
        || is_date(t)
        || is_date_time(t)
        || (!t.is_empty()
            && t.len() <= 64
            && t.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_and_values() {
        assert_eq!(Select::parse("@date"), Ok(Select::Date));
        assert!(matches!(
            Select::parse("Header/To@Qualifier"),
            Ok(Select::Path { within: Within::Parent(_), attr: Some(_), .. })
        ));
        assert!(matches!(
            Select::parse("Patient//Address"),
            Ok(Select::Path { within: Within::Ancestor(_), attr: None, .. })
        ));
        assert!(Select::parse("*@*").is_ok());
        for bad in ["", "a b", "a@", "@x", "a/b/c", "a@b c", "1x"] {
            assert_eq!(Select::parse(bad), Err(Code::POLICY_UNKNOWN_SELECTOR), "{bad}");
        }
        assert_eq!(year_only(b"2024-03-15", None), Some(b"2024-01-01".to_vec()));
        assert_eq!(year_only(b"2024-03-15T10:11:12Z", None), Some(b"2024-01-01T00:00:00".to_vec()));
        assert_eq!(year_only(b"1920-03-15", Some(Some(2024))), None);
        assert_eq!(year_only(b"1980-03-15", Some(Some(2024))), Some(b"1980-01-01".to_vec()));
        assert!(proven(b"C48542", false) && proven(b"30", false) && proven(b"2024-03-15", false));
        assert!(!proven(b"Alice Testperson", false) && proven(b"Alice Testperson", true));
    }
}
