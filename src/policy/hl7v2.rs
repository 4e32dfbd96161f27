//! HL7 v2 redaction: a data-channel writer that writes a message under a policy.
//!
//! Every field of every segment is decided by the first rule whose selector matches it (at the
//! field, repetition, component or subcomponent level); a value no rule matches is removed. Free
//! text (fields of type FT and TX, OBX-5 when OBX-2 is FT, TX, ST, ED or RP, NTE-3) is kept only
//! by a `keep` rule with `free_text = true`. A segment whose id is neither standard nor Z is
//! dropped; MSH-1 and MSH-2 (the delimiters) are always kept; a field of type SI or NM that a
//! `keep` rule keeps whole is dropped when its value is not a number. The output is in canonical form
//! (no trailing empty fields or parts), so it parses and redacting it again changes nothing.
//!
//! What it does not do: validate the message, or re-encode character sets.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::de::DeTable;

use super::action::{self, Action, Context};
use super::manifest::Counts;
use super::select::{self, HL7_DATE_TYPES};
use super::{Ctx, LoadError, Policy};
use crate::diag::Code;
use crate::formats::hl7v2::escape;
use crate::formats::hl7v2::parse::{Delimiters, Message};
use crate::formats::hl7v2::schema::{self, Version};
use crate::keys::Key;
use crate::phi::Disclosure;

/// An HL7 v2 rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The selector.
    pub select: select::Hl7,
    /// The action.
    pub action: Action,
    /// `keep` also keeps free text.
    pub free_text: bool,
    /// Line and column of the rule's selector in the policy file.
    pub at: (u32, u32),
}

impl Rule {
    pub(super) fn build(ctx: &Ctx<'_>, t: &DeTable<'_>, span: Range<usize>) -> Result<Rule, LoadError> {
        let parts = super::rule_parts(ctx, t, span)?;
        let select = select::Hl7::parse(parts.select).map_err(|c| ctx.err(c, parts.select_span.clone()))?;
        let ty = select.data_type();
        let allowed = match &parts.action {
            a if a.is_date_action() => ty.is_none_or(|t| HL7_DATE_TYPES.contains(&t)),
            Action::GeneralizeZip => ty.is_none_or(|t| matches!(t, "XAD" | "AD" | "ST")),
            Action::CapAge => ty.is_none_or(|t| matches!(t, "NM" | "ST" | "CQ" | "SN")),
            _ => true,
        };
        if !allowed {
            return Err(ctx.err(Code::POLICY_ACTION_NOT_ALLOWED, parts.action_span));
        }
        Ok(Rule { select, action: parts.action, free_text: parts.free_text, at: ctx.at(parts.select_span) })
    }

    /// True when the rule can decide field `n` of a segment (given its type).
    fn matches_field(&self, n: u32, ty: &str) -> bool {
        match &self.select {
            select::Hl7::Type(t) => type_matches(t, ty),
            select::Hl7::Path { field, .. } => field.is_none_or(|f| f == n),
        }
    }

    /// True when the rule decides the whole field at once.
    fn whole_field(&self) -> bool {
        match &self.select {
            select::Hl7::Type(_) => true,
            select::Hl7::Path { rep, comp, sub, .. } => rep.is_none() && comp.is_none() && sub.is_none(),
        }
    }

    fn matches_leaf(&self, r: u32, c: u32, s: u32) -> bool {
        match &self.select {
            select::Hl7::Type(_) => true,
            select::Hl7::Path { rep, comp, sub, .. } => {
                rep.is_none_or(|x| x == r) && comp.is_none_or(|x| x == c) && sub.is_none_or(|x| x == s)
            }
        }
    }
}

fn type_matches(selector: &str, ty: &str) -> bool {
    selector == ty || (selector == "DTM" && matches!(ty, "TS" | "DT"))
}

/// False for a value of a numeric type (SI, NM) that is not a number: `keep` drops it.
fn fits_type(ty: &str, raw: &[u8]) -> bool {
    match ty {
        "SI" => raw.iter().all(u8::is_ascii_digit),
        "NM" => {
            let body = raw.strip_prefix(b"-").or_else(|| raw.strip_prefix(b"+")).unwrap_or(raw);
            body.iter().filter(|b| **b == b'.').count() <= 1 && body.iter().all(|b| b.is_ascii_digit() || *b == b'.')
        }
        _ => true,
    }
}

/// True for fields holding free text.
fn is_free_text(seg: &[u8], n: u32, ty: &str) -> bool {
    matches!(ty, "FT" | "TX" | "ED" | "RP") || (seg == b"NTE" && n == 3) || (seg == b"OBX" && n == 5 && ty == "ST")
}

/// The rules that can decide one field, resolved once per segment id and version.
#[derive(Debug, Default)]
struct FieldPlan {
    /// The field's data type in the version (`""` when unknown).
    ty: &'static str,
    /// Free text.
    free: bool,
    /// Candidate rules, in policy order (`keep` rules that cannot keep free text left out).
    rules: Vec<u16>,
}

/// The plan of one segment id in one version.
#[derive(Debug, Default)]
struct SegmentPlan {
    /// The segment is dropped whole by this rule.
    drop: Option<u16>,
    /// Fields 1..=n of the definition.
    fields: Vec<FieldPlan>,
    /// Segment-level candidates (for OBX-5, whose type comes from OBX-2).
    rules: Vec<u16>,
}

/// Redacts HL7 v2 messages under one policy (and key), record after record.
#[derive(Debug)]
pub struct Redactor<'p> {
    policy: &'p Policy,
    key: Option<&'p Key>,
    /// Counts for the manifest.
    pub counts: Counts,
    plans: Vec<SegmentPlan>,
    plan_index: BTreeMap<([u8; 3], Version), usize>,
    field_rules: Vec<u16>,
    scratch: Vec<u8>,
    scratch2: Vec<u8>,
}

fn field_plan(policy: &Policy, seg_rules: &[u16], id: &[u8], n: u32, ty: &'static str, rules: &mut Vec<u16>) -> bool {
    let free = is_free_text(id, n, ty);
    rules.clear();
    for &i in seg_rules {
        let r = &policy.hl7v2[usize::from(i)];
        if r.matches_field(n, ty) && !(free && r.action == Action::Keep && !r.free_text) {
            rules.push(i);
        }
    }
    free
}

impl<'p> Redactor<'p> {
    /// A redactor.
    pub fn new(policy: &'p Policy, key: Option<&'p Key>) -> Self {
        Redactor {
            policy,
            key,
            counts: Counts::new(policy),
            plans: Vec::new(),
            plan_index: BTreeMap::new(),
            field_rules: Vec::new(),
            scratch: Vec::new(),
            scratch2: Vec::new(),
        }
    }

    fn plan(&mut self, id: [u8; 3], version: Version) -> usize {
        if let Some(&i) = self.plan_index.get(&(id, version)) {
            return i;
        }
        let policy = self.policy;
        let rules: Vec<u16> = (0..policy.hl7v2.len() as u16)
            .filter(|&i| match &policy.hl7v2[usize::from(i)].select {
                select::Hl7::Type(_) => true,
                select::Hl7::Path { segment, .. } => segment.matches(&id),
            })
            .collect();
        let drop = rules.first().copied().filter(|&f| {
            let r = &policy.hl7v2[usize::from(f)];
            matches!(r.select, select::Hl7::Path { whole_segment: true, .. }) && r.action == Action::Remove
        });
        let segdef = schema::schema(version).segment(&id);
        let count = segdef.map_or(0, |s| s.fields.len());
        let mut fields = Vec::with_capacity(count);
        for n in 1..=count as u32 {
            let ty = segdef.and_then(|s| s.field(n as usize)).map_or("", |f| f.base_data_type());
            let mut r = Vec::new();
            let free = field_plan(policy, &rules, &id, n, ty, &mut r);
            fields.push(FieldPlan { ty, free, rules: r });
        }
        self.plans.push(SegmentPlan { drop, fields, rules });
        let i = self.plans.len() - 1;
        self.plan_index.insert((id, version), i);
        i
    }

    /// Appends the redacted form of `msg` to `out`.
    #[expect(clippy::disallowed_methods, reason = "a redaction engine: a data-channel writer under the policy")]
    pub fn redact(&mut self, msg: &Message, disclosure: &Disclosure, out: &mut Vec<u8>) {
        self.counts.records += 1;
        let d = msg.delimiters();
        let msh = msg.msh();
        let version = msh
            .field(12)
            .and_then(|f| {
                f.bytes().expose_value(disclosure).split(|b| *b == d.component).next().and_then(Version::nearest)
            })
            .unwrap_or(Version::V2_5_1);
        let mut ctx = Context::new(self.key);
        if let Some(pid3) = msg.segment("PID").and_then(|s| s.field(3)) {
            let raw = pid3.bytes().expose_value(disclosure);
            let first = raw.split(|b| *b == d.repetition).next().unwrap_or_default();
            let id = first.split(|b| *b == d.component).next().unwrap_or_default();
            escape::decode(id, &d, &mut ctx.patient);
        }
        for seg in msg.segments() {
            let Some(name) = seg.name() else {
                self.counts.fail_closed += 1;
                continue;
            };
            let nb = name.as_bytes();
            if nb.len() != 3 {
                self.counts.fail_closed += 1;
                continue;
            }
            let id = [nb[0], nb[1], nb[2]];
            let pi = self.plan(id, version);
            if let Some(rule) = self.plans[pi].drop {
                self.counts.rule(usize::from(rule));
                continue;
            }
            let line_start = out.len();
            out.extend_from_slice(nb);
            let mut min_len = out.len();
            let obx2 = if nb == b"OBX" {
                seg.field(2).and_then(|f| {
                    let raw = f.bytes().expose_value(disclosure);
                    std::str::from_utf8(raw).ok().and_then(select::hl7_type_name)
                })
            } else {
                None
            };
            for field in seg.fields() {
                let n = field.position().field;
                if !field.is_splittable() {
                    if n == 2 {
                        out.push(d.field);
                        out.extend_from_slice(field.bytes().expose_value(disclosure));
                        min_len = out.len();
                    }
                    continue;
                }
                out.push(d.field);
                let raw = field.bytes().expose_value(disclosure);
                if raw.is_empty() {
                    continue;
                }
                let plan = &self.plans[pi];
                let known = if nb == b"OBX" && n == 5 { None } else { plan.fields.get((n as usize).wrapping_sub(1)) };
                let (ty, free) = match known {
                    Some(fp) => {
                        // Copied only when the field is decided part by part.
                        let whole = fp.rules.first().is_none_or(|&f| self.policy.hl7v2[usize::from(f)].whole_field());
                        self.field_rules.clear();
                        if whole {
                            self.field_rules.extend(fp.rules.first());
                        } else {
                            self.field_rules.extend_from_slice(&fp.rules);
                        }
                        (fp.ty, fp.free)
                    }
                    None => {
                        // OBX-5 is typed by OBX-2; a field past the definition has no type.
                        let ty = if nb == b"OBX" && n == 5 { obx2.unwrap_or("") } else { "" };
                        let mut r = std::mem::take(&mut self.field_rules);
                        let free = field_plan(self.policy, &plan.rules, nb, n, ty, &mut r);
                        self.field_rules = r;
                        (ty, free)
                    }
                };
                let Some(&first) = self.field_rules.first() else {
                    self.counts.fail_closed += 1;
                    if free {
                        self.counts.free_text_removed += 1;
                    }
                    continue;
                };
                let r = &self.policy.hl7v2[usize::from(first)];
                if r.whole_field() {
                    self.counts.rule(usize::from(first));
                    match r.action {
                        Action::Keep if !fits_type(ty, raw) => {
                            // A kept number that is not a number is not what the rule meant.
                            self.counts.fail_closed += 1;
                            continue;
                        }
                        Action::Keep => {
                            out.extend_from_slice(raw);
                            continue;
                        }
                        Action::Remove => continue,
                        // A fixed value replaces the whole field, not each of its parts.
                        Action::Replace(ref v) => {
                            escape_into(v.as_bytes(), &d, out);
                            continue;
                        }
                        Action::Empty => {
                            out.extend_from_slice(b"\"\"");
                            continue;
                        }
                        _ => {}
                    }
                }
                self.leaves(raw, &d, &mut ctx, r.whole_field().then_some(first), out);
            }
            if nb == b"MSH" {
                // The reference of `generalize_birth_date`: MSH-7's year as released (so that
                // redacting the output again decides the same).
                let line = out.get(line_start..).unwrap_or_default();
                ctx.reference_year = line.split(|b| *b == d.field).nth(6).and_then(action::year_number);
            }
            // Trailing empty fields.
            while out.len() > min_len && out.last() == Some(&d.field) {
                out.pop();
            }
            if out.len() == line_start + nb.len() && seg.is_header() {
                // Unreachable in practice: a header keeps MSH-2.
                out.truncate(line_start);
                continue;
            }
            out.push(b'\r');
        }
    }

    /// Writes a field leaf by leaf; `only` is the rule for every leaf when already decided.
    fn leaves(&mut self, raw: &[u8], d: &Delimiters, ctx: &mut Context<'_>, only: Option<u16>, out: &mut Vec<u8>) {
        let field_start = out.len();
        for (ri, rep) in raw.split(|b| *b == d.repetition).enumerate() {
            let rep_start = out.len();
            for (ci, comp) in rep.split(|b| *b == d.component).enumerate() {
                let comp_start = out.len();
                for (si, sub) in comp.split(|b| *b == d.subcomponent).enumerate() {
                    if !sub.is_empty() {
                        let rule = match only {
                            Some(i) => Some(i),
                            None => {
                                let (r, c, s) = (ri as u32 + 1, ci as u32 + 1, si as u32 + 1);
                                let found = self
                                    .field_rules
                                    .iter()
                                    .copied()
                                    .find(|&i| self.policy.hl7v2[usize::from(i)].matches_leaf(r, c, s));
                                match found {
                                    Some(i) => self.counts.rule(usize::from(i)),
                                    None => self.counts.fail_closed += 1,
                                }
                                found
                            }
                        };
                        if let Some(i) = rule {
                            let action = &self.policy.hl7v2[usize::from(i)].action;
                            apply(action, sub, d, ctx, &mut self.scratch, &mut self.scratch2, out);
                        }
                    }
                    out.push(d.subcomponent);
                }
                trim(out, comp_start, d.subcomponent);
                out.push(d.component);
            }
            trim(out, rep_start, d.component);
            out.push(d.repetition);
        }
        trim(out, field_start, d.repetition);
    }
}

/// Pops trailing `sep` bytes down to `start` (values never hold a bare delimiter: they are
/// escaped, so a trailing delimiter is always one this writer put there).
fn trim(out: &mut Vec<u8>, start: usize, sep: u8) {
    while out.len() > start && out.last() == Some(&sep) {
        out.pop();
    }
}

/// Applies an action to one leaf (raw, escaped bytes) and writes the result, escaped.
fn apply(
    action: &Action,
    raw: &[u8],
    d: &Delimiters,
    ctx: &mut Context<'_>,
    text: &mut Vec<u8>,
    result: &mut Vec<u8>,
    out: &mut Vec<u8>,
) {
    let decode = |text: &mut Vec<u8>| {
        text.clear();
        escape::decode(raw, d, text);
    };
    match action {
        Action::Keep => out.extend_from_slice(raw),
        Action::Remove => {}
        Action::Empty => out.extend_from_slice(b"\"\""),
        Action::Replace(s) => escape_into(s.as_bytes(), d, out),
        Action::Mask(n) => {
            decode(text);
            *result = action::mask(text, *n);
            escape_into(result, d, out);
        }
        Action::Hash => {
            decode(text);
            out.extend_from_slice(&action::hash(ctx.key, text));
        }
        Action::Pseudonym => {
            decode(text);
            out.extend_from_slice(&action::pseudonym(ctx.key, text));
        }
        Action::Sequence => {
            decode(text);
            let n = ctx.sequence(text);
            out.extend_from_slice(n.to_string().as_bytes());
        }
        Action::DateShift(days) => {
            if let Some(v) = action::shift_date(raw, ctx.shift_days(*days), false) {
                escape_into(&v, d, out);
            }
        }
        Action::GeneralizeDate => {
            if let Some(y) = action::year(raw) {
                out.extend_from_slice(y);
            }
        }
        Action::GeneralizeBirthDate => {
            if let Some(y) = action::birth_year(raw, ctx.reference_year) {
                out.extend_from_slice(y);
            }
        }
        Action::GeneralizeZip => {
            decode(text);
            if let Some(z) = action::zip(text.trim_ascii()) {
                out.extend_from_slice(&z);
            }
        }
        Action::CapAge => {
            decode(text);
            if let Some(a) = action::cap_age(text.trim_ascii(), b"90+") {
                escape_into(&a, d, out);
            }
        }
    }
}

/// Writes text with the message's delimiters escaped (and line breaks as `\X0D\`/`\X0A\`).
fn escape_into(text: &[u8], d: &Delimiters, out: &mut Vec<u8>) {
    let e = d.escape;
    for &b in text {
        let code: Option<&[u8]> = if b == d.field {
            Some(b"F")
        } else if b == d.component {
            Some(b"S")
        } else if b == d.repetition {
            Some(b"R")
        } else if b == e {
            Some(b"E")
        } else if b == d.subcomponent {
            Some(b"T")
        } else if b == b'\r' {
            Some(b"X0D")
        } else if b == b'\n' {
            Some(b"X0A")
        } else {
            None
        };
        match code {
            Some(c) => {
                out.push(e);
                out.extend_from_slice(c);
                out.push(e);
            }
            None => out.push(b),
        }
    }
}
