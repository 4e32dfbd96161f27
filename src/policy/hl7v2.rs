//! HL7 v2 redaction: a data-channel writer that writes a message under a policy.
//!
//! Every leaf (subcomponent) of every field is decided by the first rule whose selector matches
//! it (a path at the field, repetition, component or subcomponent level; a type selector at any
//! level of the leaf's type; `@age`); a value no rule matches is removed. A `keep` writes only
//! what it proves safe (`hl7v2_keep`): codes valid for their coding system or table, numbers,
//! dates, known coding systems, states, ZIP codes, countries; free text (ST, TX, FT, a code's
//! texts, anything without a check) only with `free_text = true`; OBX-5 only when OBX-2 is,
//! exactly, a type the rule lists in `types` (or names with a type selector). A segment whose id
//! is neither standard nor Z is dropped; MSH-1 and MSH-2 (the delimiters) are always kept. The
//! output is in canonical form (no trailing empty fields or parts), so it parses and redacting
//! it again changes nothing.
//!
//! What it does not do: validate the message, or re-encode character sets.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::de::DeTable;

use super::action::{self, Action, Context};
use super::hl7v2_keep as keep;
use super::manifest::Counts;
use super::proof;
use super::select::{self, HL7_DATE_TYPES};
use super::{Ctx, LoadError, Policy};
use crate::diag::Code;
use crate::formats::hl7v2::escape;
use crate::formats::hl7v2::parse::{Delimiters, Message};
use crate::formats::hl7v2::schema::{self, Schema, Version};
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
    /// `keep` on OBX-5 (a variant-typed value): the OBX-2 types it keeps, matched exactly.
    pub types: Vec<&'static str>,
    /// The rule states why what it keeps is safe (`reason`): `policy test` counts what survives
    /// under it as documented.
    pub documented: bool,
    /// `policy test` only: the rule decides as written but writes nothing it would keep.
    pub withheld: bool,
    /// Line and column of the rule's selector in the policy file.
    pub at: (u32, u32),
}

/// The OBX-5 types a `keep` may list: values that do not identify a person by their type
/// (numbers, coded values, dates and times, which the date rules still decide). Text and
/// person, address, phone and identifier types are refused at load.
pub const HL7_VARIANT_TYPES: &[&str] =
    &["NM", "SN", "CE", "CWE", "CNE", "CF", "ID", "IS", "DT", "DTM", "TS", "TM", "NA", "MA", "NR", "CQ"];

impl Rule {
    pub(super) fn build(ctx: &Ctx<'_>, t: &DeTable<'_>, span: Range<usize>) -> Result<Rule, LoadError> {
        let parts = super::rule_parts(ctx, t, span)?;
        let select = select::Hl7::parse(parts.select).map_err(|c| ctx.err(c, parts.select_span.clone()))?;
        let ty = select.data_type();
        let allowed = match &parts.action {
            a if a.is_date_action() => ty.is_none_or(|t| HL7_DATE_TYPES.contains(&t)) && select != select::Hl7::Age,
            Action::GeneralizeZip => ty.is_none_or(|t| matches!(t, "XAD" | "AD" | "ST")),
            Action::CapAge => ty.is_none_or(|t| matches!(t, "NM" | "ST" | "CQ" | "SN")),
            _ => true,
        };
        if !allowed {
            return Err(ctx.err(Code::POLICY_ACTION_NOT_ALLOWED, parts.action_span));
        }
        let types = parts.variant_types(ctx, HL7_VARIANT_TYPES)?;
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

    /// True when the rule can decide something in field `n` of a segment it applies to.
    fn matches_field(&self, n: u32, obx5: bool) -> bool {
        match &self.select {
            select::Hl7::Type(_) => true,
            select::Hl7::Age => obx5,
            select::Hl7::Path { field, .. } => field.is_none_or(|f| f == n),
        }
    }

    /// True when the rule decides the whole field at once (a path naming no part of it).
    fn whole_field(&self) -> bool {
        match &self.select {
            select::Hl7::Type(_) | select::Hl7::Age => false,
            select::Hl7::Path { rep, comp, sub, .. } => rep.is_none() && comp.is_none() && sub.is_none(),
        }
    }

    /// True when the rule selects leaf `r`.`c`.`s` of types `types`; `age` when the leaf is a
    /// number of an age observation.
    fn matches_leaf(&self, r: u32, c: u32, s: u32, types: &[&str; 3], age: bool) -> bool {
        match &self.select {
            select::Hl7::Type(t) => types.iter().any(|ty| !ty.is_empty() && type_matches(t, ty)),
            select::Hl7::Age => age,
            select::Hl7::Path { rep, comp, sub, .. } => {
                rep.is_none_or(|x| x == r) && comp.is_none_or(|x| x == c) && sub.is_none_or(|x| x == s)
            }
        }
    }
}

fn type_matches(selector: &str, ty: &str) -> bool {
    selector == ty || (selector == "DTM" && matches!(ty, "TS" | "DT"))
}

/// The rules that can decide one field, resolved once per segment id and version.
#[derive(Debug, Default)]
struct FieldPlan {
    /// The field's data type in the version (`""` when unknown).
    ty: &'static str,
    /// The field's table.
    table: Option<u16>,
    /// Candidate rules, in policy order.
    rules: Vec<u16>,
}

/// The plan of one segment id in one version.
#[derive(Debug, Default)]
struct SegmentPlan {
    /// The segment is dropped whole by this rule.
    drop: Option<u16>,
    /// Fields 1..=n of the definition.
    fields: Vec<FieldPlan>,
    /// Segment-level candidates (for OBX-5, whose type comes from OBX-2, and fields past the
    /// definition).
    rules: Vec<u16>,
}

/// What the leaves of one field are decided with.
struct FieldCtx<'a> {
    field: keep::Field,
    schema: &'static Schema,
    version: Version,
    /// OBX-5: its type from OBX-2 (exactly), for `types`.
    variant: Option<&'static str>,
    /// OBX-5 of an age observation: the age unit.
    age: Option<Option<proof::AgeUnit>>,
    rules: &'a [u16],
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
    /// Leaves already typed: the kind of leaf `c`.`s` of a field depends only on the version's
    /// definitions and the field's (static) definition, so it is looked up once per input.
    leaves: Leaves,
}

/// A multiply-rotate hasher for [`LeafKey`]s (addresses of static tables and small positions):
/// SipHash of the key cost more than the lookup it saves.
#[derive(Default, Debug)]
struct LeafHasher(u64);

impl std::hash::Hasher for LeafHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u16(&mut self, n: u16) {
        self.write_u64(u64::from(n));
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
}

/// What a leaf's kind depends on: the schema and the field's type (by address: both are
/// `'static` table entries), the field's table and flags, and the position.
type LeafKey = (usize, usize, usize, Option<u16>, [bool; 3], u32, u32);

fn field_plan(policy: &Policy, seg_rules: &[u16], n: u32, obx5: bool, rules: &mut Vec<u16>) {
    rules.clear();
    rules.extend(seg_rules.iter().copied().filter(|&i| policy.hl7v2[usize::from(i)].matches_field(n, obx5)));
}

/// The plans and typed leaves of the last redactor on this thread, kept for the next one: they
/// are derived from the policy's rules and the versions' tables only (no value), and building
/// them again for every input cost most of a small message's redaction when each message is an
/// input of its own (`--input-format json-lines`: five times the instructions of the same
/// messages as one stream). Plans are reused only for the same policy (its address, its file's
/// SHA-256 and its rule count); typed leaves depend on the tables alone.
type Plans = (Vec<SegmentPlan>, BTreeMap<([u8; 3], Version), usize>);
type Leaves = std::collections::HashMap<LeafKey, keep::Leaf, std::hash::BuildHasherDefault<LeafHasher>>;

struct Kept {
    policy: (usize, String, usize),
    plans: Plans,
    leaves: Leaves,
}

thread_local! {
    static KEPT: std::cell::RefCell<Option<Kept>> = const { std::cell::RefCell::new(None) };
}

fn policy_identity(policy: &Policy) -> (usize, String, usize) {
    (std::ptr::from_ref(policy) as usize, policy.digest.clone(), policy.hl7v2.len())
}

impl Drop for Redactor<'_> {
    fn drop(&mut self) {
        let kept = Kept {
            policy: policy_identity(self.policy),
            plans: (std::mem::take(&mut self.plans), std::mem::take(&mut self.plan_index)),
            leaves: std::mem::take(&mut self.leaves),
        };
        // A thread being torn down has no cache to keep: nothing is lost but the reuse.
        let _ = KEPT.try_with(|k| *k.borrow_mut() = Some(kept));
    }
}

impl<'p> Redactor<'p> {
    /// A redactor (with the plans of the previous one on this thread, for the same policy).
    pub fn new(policy: &'p Policy, key: Option<&'p Key>) -> Self {
        let kept = KEPT.try_with(|k| k.borrow_mut().take()).ok().flatten();
        let (plans, leaves) = match kept {
            Some(k) if k.policy == policy_identity(policy) => (k.plans, k.leaves),
            Some(k) => ((Vec::new(), BTreeMap::new()), k.leaves),
            None => ((Vec::new(), BTreeMap::new()), Leaves::default()),
        };
        Redactor {
            policy,
            key,
            counts: Counts::new(policy),
            plans: plans.0,
            plan_index: plans.1,
            field_rules: Vec::new(),
            leaves,
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
                select::Hl7::Age => &id == b"OBX",
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
            let def = segdef.and_then(|s| s.field(n as usize));
            let mut r = Vec::new();
            field_plan(policy, &rules, n, false, &mut r);
            fields.push(FieldPlan { ty: def.map_or("", |f| f.data_type), table: def.and_then(|f| f.table), rules: r });
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
        let schema = schema::schema(version);
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
            let is_obx = nb == b"OBX";
            let field_raw = |n: u32| seg.field(n).map(|f| f.bytes().expose_value(disclosure)).unwrap_or_default();
            let (obx2, age) = if is_obx {
                (select::hl7_type_name_exact(field_raw(2)), keep::obx_age(field_raw(3), field_raw(6), &d))
            } else {
                (None, None)
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
                let obx5 = is_obx && n == 5;
                let plan = &self.plans[pi];
                let known = if obx5 { None } else { plan.fields.get((n as usize).wrapping_sub(1)) };
                let (ty, table) = match known {
                    Some(fp) => {
                        self.field_rules.clear();
                        self.field_rules.extend_from_slice(&fp.rules);
                        (fp.ty, fp.table)
                    }
                    None => {
                        // OBX-5 is typed by OBX-2; a field past the definition has no type.
                        let mut r = std::mem::take(&mut self.field_rules);
                        field_plan(self.policy, &plan.rules, n, obx5, &mut r);
                        self.field_rules = r;
                        (if obx5 { obx2.unwrap_or("") } else { "" }, None)
                    }
                };
                let Some(&first) = self.field_rules.first() else {
                    self.counts.fail_closed += 1;
                    continue;
                };
                let r = &self.policy.hl7v2[usize::from(first)];
                if r.whole_field() {
                    // A path naming the field decides every leaf alike, but for `keep` (checked
                    // leaf by leaf, below).
                    match r.action {
                        Action::Remove => {
                            self.counts.rule(usize::from(first));
                            continue;
                        }
                        // A fixed value replaces the whole field, not each of its parts.
                        Action::Replace(ref v) => {
                            self.counts.rule(usize::from(first));
                            escape_into(v.as_bytes(), &d, out);
                            continue;
                        }
                        Action::Empty => {
                            self.counts.rule(usize::from(first));
                            out.extend_from_slice(b"\"\"");
                            continue;
                        }
                        _ => {}
                    }
                }
                let units = matches!((nb, n), (b"OBX", 6) | (b"RXA", 7));
                let sub_id = is_obx && n == 4;
                let value_type = is_obx && n == 2;
                let rules = std::mem::take(&mut self.field_rules);
                let fc = FieldCtx {
                    field: keep::Field { ty, table, units, sub_id, value_type },
                    schema,
                    version,
                    variant: if obx5 { Some(obx2.unwrap_or("")) } else { None },
                    age: if obx5 { age } else { None },
                    rules: &rules,
                };
                self.leaves(raw, &d, &mut ctx, &fc, out);
                self.field_rules = rules;
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

    /// The types and kind of leaf `c`.`s` of the field (memoized).
    fn leaf(&mut self, fc: &FieldCtx<'_>, c: u32, s: u32) -> keep::Leaf {
        let f = &fc.field;
        let key = (
            std::ptr::from_ref(fc.schema) as usize,
            f.ty.as_ptr() as usize,
            f.ty.len(),
            f.table,
            [f.units, f.sub_id, f.value_type],
            c,
            s,
        );
        *self.leaves.entry(key).or_insert_with(|| keep::leaf(fc.schema, f, c, s))
    }

    /// The first rule of the field that decides leaf `r`.`c`.`s`.
    fn decide(&self, fc: &FieldCtx<'_>, r: u32, c: u32, s: u32, leaf: &keep::Leaf) -> Option<u16> {
        let age = fc.age.is_some() && leaf.types.iter().rev().find(|t| !t.is_empty()) == Some(&"NM");
        fc.rules.iter().copied().find(|&i| {
            let rule = &self.policy.hl7v2[usize::from(i)];
            if !rule.matches_leaf(r, c, s, &leaf.types, age) {
                return false;
            }
            if rule.action != Action::Keep {
                return true;
            }
            // A keep decides only what it can keep: free text with `free_text`, and a variant
            // value (OBX-5) of a type it lists (or names by a type selector).
            if leaf.kind == keep::Kind::Text && !rule.free_text {
                return false;
            }
            match (fc.variant, &rule.select) {
                (Some(ty), select::Hl7::Path { .. }) => rule.types.contains(&ty),
                (Some(""), _) => false,
                _ => true,
            }
        })
    }

    /// Writes a field leaf by leaf, each decided by the first rule that selects it.
    fn leaves(&mut self, raw: &[u8], d: &Delimiters, ctx: &mut Context<'_>, fc: &FieldCtx<'_>, out: &mut Vec<u8>) {
        let field_start = out.len();
        for (ri, rep) in raw.split(|b| *b == d.repetition).enumerate() {
            let rep_start = out.len();
            for (ci, comp) in rep.split(|b| *b == d.component).enumerate() {
                let comp_start = out.len();
                for (si, sub) in comp.split(|b| *b == d.subcomponent).enumerate() {
                    if !sub.is_empty() {
                        let (r, c, s) = (ri as u32 + 1, ci as u32 + 1, si as u32 + 1);
                        let leaf = self.leaf(fc, c, s);
                        match self.decide(fc, r, c, s, &leaf) {
                            Some(i) => {
                                self.counts.rule(usize::from(i));
                                let rule = &self.policy.hl7v2[usize::from(i)];
                                if rule.action == Action::Keep {
                                    self.keep(rule, leaf.kind, sub, rep, comp, d, fc.version, out);
                                } else if rule.action == Action::CapAge && leaf.types.contains(&"NM") {
                                    // A number stays a number: 90 years or more become 90 years.
                                    if let Some(a) = proof::cap_age(sub, fc.age.flatten()) {
                                        out.extend_from_slice(&a);
                                    }
                                } else {
                                    let action = &rule.action;
                                    apply(action, sub, d, ctx, &mut self.scratch, &mut self.scratch2, out);
                                }
                            }
                            None => {
                                self.counts.fail_closed += 1;
                                if leaf.kind == keep::Kind::Text {
                                    self.counts.free_text_removed += 1;
                                }
                            }
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

    /// `keep` of one leaf: written when its kind is proven (or free text under `free_text`).
    #[allow(clippy::too_many_arguments)]
    fn keep(
        &mut self,
        rule: &Rule,
        kind: keep::Kind,
        sub: &[u8],
        rep: &[u8],
        comp: &[u8],
        d: &Delimiters,
        version: Version,
        out: &mut Vec<u8>,
    ) {
        let system: &[u8] = match kind {
            keep::Kind::Code { system, sub: false, .. } => rep
                .split(|b| *b == d.component)
                .nth(system as usize - 1)
                .and_then(|c| c.split(|b| *b == d.subcomponent).next())
                .unwrap_or_default(),
            keep::Kind::Code { system, sub: true, .. } => {
                comp.split(|b| *b == d.subcomponent).nth(system as usize - 1).unwrap_or_default()
            }
            _ => b"",
        };
        let written = match keep::prove(kind, sub, system, version) {
            keep::Proof::Proven => true,
            keep::Proof::Text => rule.free_text,
            keep::Proof::Unproven => false,
        };
        if !written {
            self.counts.unproven += 1;
        } else if !rule.withheld {
            out.extend_from_slice(sub);
        }
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
