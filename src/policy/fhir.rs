//! FHIR redaction: decides every value of a document under a policy and writes the document
//! with those edits (through the FHIR writers, `write::Edits`).
//!
//! Each primitive value is decided by the first rule whose selector matches it or one of its
//! ancestors (up to its nearest resource); a value no rule matches is removed, and so are elements
//! without a definition. Fail closed at every level:
//! - a `keep` writes only what it proves safe (`fhir_keep`): codes valid for their system or
//!   value set, known code systems, numbers, dates, UCUM units, states, countries; free text
//!   (strings, markdown, narrative, attachments, ids, codes of unknown systems) only with
//!   `free_text = true`;
//! - a rule (but `remove`) reaches extensions (primitive extensions included) and narrative
//!   only when it names them (`@Extension`, `*.extension`, `@Narrative`, `*.text`), whatever an
//!   ancestor's rule says; contained resources only by rules for resources;
//! - a `keep` reaches a variant-typed value (a choice element: `value[x]`,
//!   `Extension.value[x]`, `component.value[x]`, ...) below what its selector names only when it
//!   lists its type in `types` (a selector naming the type itself, `@Quantity`, `valueQuantity`,
//!   does).
//!
//! The other actions transform or remove: they need no `types`. An element is written when something under it is; a `Narrative` without its `div` is dropped
//! whole, and a kept `Extension` keeps its `url`.
//!
//! Identifiers that make a document hang together (resource ids, `fullUrl`s, references) are
//! rewritten by `sequence`, `pseudonym` or `hash` part by part: `Patient/123` becomes
//! `Patient/<new>`, `urn:uuid:...` a new UUID, `#c1` `#<new>`, an absolute URL's base the fixed
//! [`FIXED_BASE`], with the same new value for the same old one, so that references keep
//! resolving.
//!
//! What it does not do: validate (run `validate` on the output), or redact inside `div` (a
//! narrative is kept or removed whole).

use std::ops::Range;

use toml::de::DeTable;

use super::action::{self, Action, Context};
use super::fhir_keep as keep;
use super::manifest::Counts;
use super::proof;
use super::select::{self, FHIR_DATE_TYPES, Root};
use super::{Ctx, LoadError, Policy};
use crate::diag::Code;
use crate::formats::fhir::definitions as defs;
use crate::formats::fhir::model::{Document, NONE, ValueKind};
use crate::formats::fhir::write::{Edits, ValueEdit};
use crate::keys::Key;
use crate::phi::Disclosure;

/// A FHIR rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The selector.
    pub select: select::Fhir,
    /// The action.
    pub action: Action,
    /// `keep` also keeps free text.
    pub free_text: bool,
    /// The types of variant values (`value[x]` and every other choice element below what the
    /// selector names) the rule decides, matched exactly.
    pub types: Vec<&'static str>,
    /// The rule states why what it keeps is safe (`reason`): `policy test` counts what survives
    /// under it as documented.
    pub documented: bool,
    /// `policy test` only: the rule decides as written but writes nothing it would keep.
    pub withheld: bool,
    /// Line and column of the rule's selector in the policy file.
    pub at: (u32, u32),
}

/// The variant types a rule may list: values that do not identify a person by their type
/// (numbers, codes, quantities, dates, which the date rules still decide). Text, people,
/// addresses, contacts, identifiers, references and attachments are refused at load.
pub const FHIR_VARIANT_TYPES: &[&str] = &[
    "boolean",
    "integer",
    "positiveInt",
    "unsignedInt",
    "decimal",
    "code",
    "date",
    "dateTime",
    "instant",
    "time",
    "Coding",
    "CodeableConcept",
    "Quantity",
    "Age",
    "Count",
    "Distance",
    "Duration",
    "Range",
    "Ratio",
    "Period",
];

/// The fixed base of absolute references and fullUrls once their id is rewritten.
pub const FIXED_BASE: &str = "https://redacted.invalid/fhir/";

impl Rule {
    pub(super) fn build(ctx: &Ctx<'_>, t: &DeTable<'_>, span: Range<usize>) -> Result<Rule, LoadError> {
        let parts = super::rule_parts(ctx, t, span)?;
        let select = select::Fhir::parse(parts.select).map_err(|c| ctx.err(c, parts.select_span.clone()))?;
        let ty = select.data_type();
        let allowed = match &parts.action {
            Action::Empty => false,
            a if a.is_date_action() => ty.is_none_or(|t| FHIR_DATE_TYPES.contains(&t)),
            Action::GeneralizeZip => ty.is_none_or(|t| t == "string"),
            Action::CapAge => ty.is_none_or(|t| matches!(t, "Age" | "Quantity" | "decimal" | "integer")),
            _ => true,
        };
        if !allowed {
            return Err(ctx.err(Code::POLICY_ACTION_NOT_ALLOWED, parts.action_span));
        }
        let types = parts.variant_types(ctx, FHIR_VARIANT_TYPES)?;
        Ok(Rule {
            select,
            action: parts.action,
            free_text: parts.free_text,
            types,
            documented: parts.documented,
            withheld: false,
            at: ctx.at(parts.select_span),
        })
    }

    /// True when the rule names extensions (`@Extension`, a step `extension`) or narrative
    /// (`@Narrative`, a step `text` or `div`), so that it may decide what is inside them.
    fn names(&self, opaque: &str) -> bool {
        let steps = |names: &[&str]| self.select.steps.iter().any(|s| names.contains(&s.as_str()));
        match opaque {
            "Extension" => self.select.root == Root::Type("Extension") || steps(&["extension", "modifierExtension"]),
            _ => self.select.root == Root::Type("Narrative") || steps(&["text", "div"]),
        }
    }
}

/// Redacts FHIR documents under one policy (and key), record after record.
#[derive(Debug)]
pub struct Redactor<'p> {
    policy: &'p Policy,
    key: Option<&'p Key>,
    /// Counts for the manifest.
    pub counts: Counts,
}

fn type_of(doc: &Document, i: u32) -> &'static str {
    doc.node(i).ty.map_or("", defs::type_name)
}

impl<'p> Redactor<'p> {
    /// A redactor.
    pub fn new(policy: &'p Policy, key: Option<&'p Key>) -> Self {
        Redactor { policy, key, counts: Counts::new(policy) }
    }

    /// The edits for `doc` (and counts).
    #[expect(clippy::disallowed_methods, reason = "a redaction engine: a data-channel writer under the policy")]
    pub fn edits(&mut self, doc: &Document, disclosure: &Disclosure) -> Edits {
        self.counts.records += 1;
        let nodes = doc.nodes();
        let n = nodes.len();
        let mut edits = Edits { kept: vec![false; n], values: vec![ValueEdit::Same; n] };
        let mut own = vec![false; n];
        let mut ctx = Context::new(self.key);
        ctx.patient = patient_of(doc, disclosure);
        let offset = self.policy.hl7v2.len();
        let mut chain: Vec<u32> = Vec::new();
        let mut births: Vec<(u32, usize)> = Vec::new();
        let value_of = |j: u32| doc.value_span(j).expose_value(disclosure);
        let ages = if self.policy.fhir.iter().any(|r| r.select.root == Root::Age) {
            keep::ages(doc, &value_of)
        } else {
            Vec::new()
        };
        for i in 0..n as u32 {
            let node = doc.node(i);
            if node.is_unknown() {
                self.counts.fail_closed += 1;
                continue;
            }
            if !node.has_value() {
                continue;
            }
            // The chain from the node up to its nearest resource (inclusive).
            chain.clear();
            let mut cur = i;
            while cur != NONE && chain.len() < 256 {
                chain.push(cur);
                let c = doc.node(cur);
                if c.is_resource() || c.parent == NONE {
                    break;
                }
                cur = c.parent;
            }
            let value = doc.value_span(i).expose_value(disclosure);
            let proof = keep::prove(doc, i, value, &value_of);
            let free = proof == keep::Proof::Text;
            let age = ages.get(i as usize).copied().flatten();
            let found = self.policy.fhir.iter().position(|r| {
                matches(doc, &chain, r, age.is_some()) && !(free && r.action == Action::Keep && !r.free_text)
            });
            let Some(ri) = found else {
                self.counts.fail_closed += 1;
                if free {
                    self.counts.free_text_removed += 1;
                }
                continue;
            };
            self.counts.rule(offset + ri);
            let rule = &self.policy.fhir[ri];
            if rule.action == Action::GeneralizeBirthDate {
                // Decided once the record's other dates are (their released years are the
                // reference).
                births.push((i, ri));
                continue;
            }
            if rule.action == Action::Keep {
                // Keep writes what it proves (free text only under `free_text`, checked above).
                if proof == keep::Proof::Unproven {
                    self.counts.unproven += 1;
                } else if !rule.withheld {
                    own[i as usize] = true;
                }
                continue;
            }
            if let (Action::CapAge, Some(unit)) = (&rule.action, age) {
                // A number stays a number: 90 years or more become 90 years (in its unit).
                if let Some(v) = proof::cap_age(value.trim_ascii(), unit) {
                    own[i as usize] = true;
                    edits.values[i as usize] = ValueEdit::Replaced(v);
                }
                continue;
            }
            let edit = self.apply(doc, i, &rule.action, value, &mut ctx);
            if let Some(e) = edit {
                own[i as usize] = true;
                edits.values[i as usize] = e;
            }
        }
        if !births.is_empty() {
            ctx.reference_year = latest_year(doc, disclosure, &own, &edits);
            for (i, ri) in births {
                let value = doc.value_span(i).expose_value(disclosure);
                if let Some(e) = self.apply(doc, i, &self.policy.fhir[ri].action, value, &mut ctx) {
                    own[i as usize] = true;
                    edits.values[i as usize] = e;
                }
            }
        }
        // A node is written when it, or something under it, is.
        for i in (0..n).rev() {
            if own[i] {
                edits.kept[i] = true;
            }
            if edits.kept[i] {
                let p = nodes[i].parent;
                if p != NONE {
                    edits.kept[p as usize] = true;
                }
            }
        }
        if let Some(k) = edits.kept.first_mut() {
            *k = true;
        }
        // Fix-ups: a narrative needs its div; a kept extension keeps its url.
        for i in 0..n as u32 {
            if !edits.kept[i as usize] {
                continue;
            }
            let ty = type_of(doc, i);
            if ty == "Narrative" && !doc.named(i, "div").any(|c| edits.kept[c as usize]) {
                let end = (doc.node(i).end as usize).clamp(i as usize, n);
                for k in &mut edits.kept[i as usize..end] {
                    *k = false;
                }
            } else if ty == "Extension" {
                for c in doc.named(i, "url") {
                    edits.kept[c as usize] = true;
                    own[c as usize] = true;
                    if edits.values[c as usize] == ValueEdit::Removed {
                        edits.values[c as usize] = ValueEdit::Same;
                    }
                }
            }
        }
        // A value left out of a node kept for its extensions.
        for i in 0..n {
            if edits.kept[i] && !own[i] && nodes[i].has_value() {
                edits.values[i] = ValueEdit::Removed;
            }
        }
        edits
    }

    /// The edit of one value (`None`: removed).
    fn apply(
        &mut self,
        doc: &Document,
        i: u32,
        action: &Action,
        value: &[u8],
        ctx: &mut Context<'_>,
    ) -> Option<ValueEdit> {
        let node = doc.node(i);
        let ty = type_of(doc, i);
        let replaced = |v: Vec<u8>| Some(ValueEdit::Replaced(v));
        let is_ref = matches!(node.name, "reference" | "fullUrl" | "url")
            || matches!(ty, "id" | "canonical")
            || node.name == "id";
        match action {
            Action::Keep => Some(ValueEdit::Same),
            Action::Remove | Action::Empty => None,
            Action::Replace(s) => replaced(s.as_bytes().to_vec()),
            Action::Mask(k) => replaced(action::mask(value, *k)),
            Action::Hash | Action::Pseudonym | Action::Sequence if is_ref => {
                self.counts.ids_rewritten += 1;
                let key = self.key;
                let mut f = |id: &[u8], uuid: bool| -> Vec<u8> {
                    match action {
                        Action::Sequence => {
                            let n = ctx.sequence(id);
                            if uuid {
                                format!("00000000-0000-4000-8000-{n:012}").into_bytes()
                            } else {
                                n.to_string().into_bytes()
                            }
                        }
                        _ if uuid => {
                            let plain: Vec<u8> = id.iter().copied().filter(|b| *b != b'-').collect();
                            let h = action::hash(key, &plain);
                            let h = String::from_utf8_lossy(&h).into_owned();
                            let g = |r: Range<usize>| h.get(r).unwrap_or("0");
                            format!("{}-{}-{}-{}-{}", g(0..8), g(8..12), g(12..16), g(16..20), g(20..32)).into_bytes()
                        }
                        Action::Hash => action::hash(key, id),
                        _ => action::pseudonym(key, id),
                    }
                };
                rewrite_ref(value, &mut f).map(ValueEdit::Replaced)
            }
            Action::Hash => replaced(action::hash(self.key, value)),
            Action::Pseudonym => replaced(action::pseudonym(self.key, value)),
            Action::Sequence => replaced(ctx.sequence(value).to_string().into_bytes()),
            Action::DateShift(days) => {
                let v = action::shift_date(value, ctx.shift_days(*days), true)?;
                if ty == "instant" && v.len() < 20 {
                    return None;
                }
                replaced(v)
            }
            Action::GeneralizeDate => year_as(ty, action::year(value)?),
            Action::GeneralizeBirthDate => year_as(ty, action::birth_year(value, ctx.reference_year)?),
            Action::GeneralizeZip => action::zip(value.trim_ascii()).map(ValueEdit::Replaced),
            Action::CapAge => {
                let over: &[u8] = if node.value_kind == ValueKind::Number { b"90" } else { b"90+" };
                action::cap_age(value.trim_ascii(), over).map(ValueEdit::Replaced)
            }
        }
    }
}

/// Rewrites the identifier parts of a reference, `fullUrl` or id with `f` (`uuid`: the part is
/// a UUID and its replacement must be one); an absolute URL's base becomes [`FIXED_BASE`]. A
/// bare resource type (`Patient`, a transaction's `request.url`) is kept, a search
/// (`Patient?...`) is reduced to its type.
fn rewrite_ref(value: &[u8], f: &mut dyn FnMut(&[u8], bool) -> Vec<u8>) -> Option<Vec<u8>> {
    let is_type = |s: &[u8]| defs::type_id(s).is_some_and(defs::is_resource);
    if is_type(value) {
        return Some(value.to_vec());
    }
    if let Some(q) = value.iter().position(|b| *b == b'?') {
        return is_type(&value[..q]).then(|| value[..q].to_vec());
    }
    if let Some(rest) = value.strip_prefix(b"#") {
        let mut out = b"#".to_vec();
        out.extend_from_slice(&f(rest, false));
        return Some(out);
    }
    if let Some(rest) = value.strip_prefix(b"urn:uuid:") {
        let mut out = b"urn:uuid:".to_vec();
        out.extend_from_slice(&f(rest, true));
        return Some(out);
    }
    if value.starts_with(b"urn:") {
        return None;
    }
    let mut parts: Vec<&[u8]> = value.split(|b| *b == b'/').collect();
    if parts.len() >= 4 && parts[parts.len() - 2] == b"_history" {
        parts.truncate(parts.len() - 2);
    }
    if parts.len() >= 2 && is_type(parts[parts.len() - 2]) {
        let id = parts[parts.len() - 1];
        let mut out = Vec::new();
        if parts.len() > 2 {
            // An absolute (or based) reference: its base can name a site or a person's server;
            // the fixed base keeps it absolute and keeps references between entries resolving.
            out.extend_from_slice(FIXED_BASE.as_bytes());
        }
        out.extend_from_slice(parts[parts.len() - 2]);
        out.push(b'/');
        out.extend_from_slice(&f(id, false));
        return Some(out);
    }
    if value.contains(&b'/') || value.contains(&b':') {
        return None;
    }
    Some(f(value, false))
}

/// True when `rule` selects the node at `chain[0]` (the chain runs from the node up to its
/// resource); `age`: the node is a number that is an age.
fn matches(doc: &Document, chain: &[u32], rule: &Rule, age: bool) -> bool {
    let sel = &rule.select;
    // A rule reaches into extensions and narrative only when it names them, wherever they are
    // (what it writes there would release the extension's url, or the narrative); `remove`
    // releases nothing and reaches everywhere.
    let keep = rule.action == Action::Keep;
    if rule.action != Action::Remove {
        for &c in chain {
            let ty = type_of(doc, c);
            if matches!(ty, "Extension" | "Narrative") && !rule.names(ty) {
                return false;
            }
        }
    }
    if sel.root == Root::Age {
        return age;
    }
    // Try each ancestor-or-self as the selector's root.
    for (k, &a) in chain.iter().enumerate() {
        let root_ok = match sel.root {
            Root::Resource(t) => {
                let node = doc.node(a);
                (node.is_resource() || node.parent == NONE) && t.is_none_or(|t| type_of(doc, a) == t)
            }
            Root::Type(t) => type_of(doc, a) == t,
            Root::Age => false,
        };
        if !root_ok {
            continue;
        }
        // The names from the root down to the leaf: chain[k-1], ..., chain[0].
        let below = k;
        if sel.steps.len() > below {
            continue;
        }
        let ok = sel.steps.iter().enumerate().all(|(s, step)| step_matches(doc, chain[k - 1 - s], step));
        if ok && (!keep || variants_named(doc, chain, k, rule)) {
            return true;
        }
    }
    false
}

/// True when every variant-typed node (a choice element: `value[x]`, `onset[x]`, ...) from the
/// selection's root `chain[k]` down to the leaf is one the rule names with its type: the root of
/// a type selector of that type, a step spelled with the type (`valueQuantity`), or a type the
/// rule lists in `types`.
fn variants_named(doc: &Document, chain: &[u32], k: usize, rule: &Rule) -> bool {
    let named = rule.select.steps.len();
    (0..=k).all(|j| {
        let c = chain[j];
        let is_choice = doc.node(c).elem.and_then(defs::element).is_some_and(|d| d.choice);
        if !is_choice {
            return true;
        }
        let ty = type_of(doc, c);
        let explicit = if j == k {
            rule.select.root == Root::Type(ty)
        } else if j + named >= k {
            rule.select.steps[k - 1 - j] != doc.node(c).name
        } else {
            false
        };
        explicit || rule.types.contains(&ty)
    })
}

/// True when node `i` is the element `step` (`value`, or a choice spelled with its type:
/// `valueQuantity`).
fn step_matches(doc: &Document, i: u32, step: &str) -> bool {
    let name = doc.node(i).name;
    if name == step {
        return true;
    }
    let Some(rest) = step.strip_prefix(name) else { return false };
    let ty = type_of(doc, i);
    let mut chars = ty.chars();
    match chars.next() {
        Some(f) => {
            rest.len() == ty.len()
                && rest.starts_with(f.to_ascii_uppercase())
                && rest[f.len_utf8()..] == *chars.as_str()
        }
        None => false,
    }
}

/// The patient's identifier for `date_shift`: the first Patient resource's id, else the first
/// `Patient/...` reference.
/// A year kept by `generalize_date` or `generalize_birth_date`, in the form of the value's type:
/// an `instant` becomes `YYYY-01-01T00:00:00Z`, a `time` is removed.
fn year_as(ty: &str, year: &[u8]) -> Option<ValueEdit> {
    match ty {
        "instant" => {
            let mut v = year.to_vec();
            v.extend_from_slice(b"-01-01T00:00:00Z");
            Some(ValueEdit::Replaced(v))
        }
        "time" => None,
        _ => Some(ValueEdit::Replaced(year.to_vec())),
    }
}

/// The latest year of any `date`, `dateTime` or `instant` the record releases (as edited),
/// birth dates aside: the reference of `generalize_birth_date` (a birth year 90 or more years
/// before a year the record shows reveals an age over 89). Taken from the released values so
/// that redacting the output again decides the same.
#[expect(clippy::disallowed_methods, reason = "a redaction engine: a data-channel writer under the policy")]
fn latest_year(doc: &Document, disclosure: &Disclosure, own: &[bool], edits: &Edits) -> Option<u32> {
    (0..doc.nodes().len() as u32)
        .filter(|&i| own[i as usize] && matches!(type_of(doc, i), "date" | "dateTime" | "instant"))
        .filter_map(|i| match &edits.values[i as usize] {
            ValueEdit::Same => action::year_number(doc.value_span(i).expose_value(disclosure)),
            ValueEdit::Replaced(v) => action::year_number(v),
            ValueEdit::Removed => None,
        })
        .max()
}

#[expect(clippy::disallowed_methods, reason = "a redaction engine: a data-channel writer under the policy")]
fn patient_of(doc: &Document, disclosure: &Disclosure) -> Vec<u8> {
    let nodes = doc.nodes();
    for i in 0..nodes.len() as u32 {
        let n = doc.node(i);
        if n.is_resource() && type_of(doc, i) == "Patient" {
            if let Some(id) = doc.named(i, "id").next() {
                return doc.value_span(id).expose_value(disclosure).to_vec();
            }
        }
    }
    for i in 0..nodes.len() as u32 {
        if doc.node(i).name == "reference" {
            let v = doc.value_span(i).expose_value(disclosure);
            if let Some(id) = v.strip_prefix(b"Patient/") {
                return id.to_vec();
            }
        }
    }
    Vec::new()
}

/// Redacts one FHIR document: appends its redacted canonical form (JSON or XML, as read;
/// `line`: one compact JSON line).
pub fn redact(redactor: &mut Redactor<'_>, doc: &Document, disclosure: &Disclosure, line: bool, out: &mut Vec<u8>) {
    let edits = redactor.edits(doc, disclosure);
    crate::formats::fhir::fmt::canonical_edited(doc, disclosure, line, &edits, out);
}

/// The enforcement hook for FHIR JSON produced inside phiward (e.g. `convert`'s Bundle): parses
/// `json`, redacts it under `policy`, and returns the redacted FHIR JSON (pretty unless `line`).
/// Fails with a code when `json` does not parse (then nothing may be released).
pub fn redact_fhir_json(
    policy: &Policy,
    key: Option<&Key>,
    json: Vec<u8>,
    limits: &crate::limits::Limits,
    disclosure: &Disclosure,
    line: bool,
) -> Result<Vec<u8>, Code> {
    let doc = crate::formats::fhir::read(json, limits).map_err(|_| Code::CLI_INTERNAL)?;
    let mut r = Redactor::new(policy, key);
    let mut out = Vec::new();
    redact(&mut r, &doc, disclosure, line, &mut out);
    Ok(out)
}
