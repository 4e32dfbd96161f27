//! Validation of a FHIR resource against the profiles of loaded implementation guides.
//!
//! Each resource of the document (the root, contained resources, Bundle entries) is checked
//! against the profiles its `meta.profile` names that are loaded (`PROFILE_UNKNOWN`, a warning,
//! for one that is not), against the global profiles of its type that the loaded
//! ImplementationGuides declare (`ImplementationGuide.global`), and the root against `--profile`
//! too. The walk follows the profile's
//! snapshot (see `structure::conformance`) down the element tree:
//!
//! - cardinality of every element the profile names (`PROFILE_CARDINALITY_MIN`/`MAX`; what the
//!   core already reports is not repeated), the types of choice elements (`PROFILE_TYPE`);
//! - `fixed[x]` (exact, `PROFILE_FIXED`) and `pattern[x]` (contained, `PROFILE_PATTERN`);
//! - bindings by strength (`PROFILE_BINDING`: required an error, extensible a warning) to value
//!   sets expanded from the packages or the core tables; one that cannot be expanded offline is
//!   reported once as information (`CONFORMANCE_VALUESET_UNEXPANDABLE`); additional bindings
//!   (`PROFILE_BINDING_ADDITIONAL`: purposes `required` and `maximum` an error, `extensible` a
//!   warning; the others, and those limited by `usage`, not checked);
//! - slicing: each repetition is matched to a slice by the discriminators (value, pattern,
//!   exists, type, profile; paths of element names, `$this`, `resolve()` to the resource a
//!   reference points to in the same Bundle or among the contained resources, and, failing
//!   those, full conformance to the slice), then checked against the slice; slice cardinality
//!   (`SLICE_CARDINALITY_MIN`/`MAX`), closed and openAtEnd rules (`SLICE_UNMATCHED`), order
//!   (`SLICE_ORDER`); a required slice left empty comes with the failures, as information at
//!   their own locations, of each item that matched every discriminator but the profile;
//! - type profiles of elements (`Quantity` as SimpleQuantity, a Bundle entry's resource as a
//!   Composition profile) and, for every extension whose definition is loaded, that definition:
//!   its contexts and context invariants (`PROFILE_EXTENSION_CONTEXT`), `modifierExtension`
//!   exactly when it is a modifier (`EXTENSION_MODIFIER_MISMATCH`), value types, nested parts;
//!   an extension that is neither loaded nor a core, extensions pack or cross-version one is
//!   `PROFILE_EXTENSION_UNKNOWN`: an error, as the reference validator reports it, unless its
//!   options allow it (`super::extensions::unknown_allowed`: example domains, DICOM's, the tools
//!   IG's, `--allow-extension-domain`, `--allow-any-extensions`); in the core's namespace, and
//!   for a cross-version url with no definition, the core's check reports it
//!   (`EXTENSION_UNKNOWN`), withdrawn when a loaded package defines it;
//! - invariants of the profile (those not of the core) through the FHIRPath engine, whose
//!   `memberOf()` asks the value sets expanded offline (`PROFILE_INVARIANT`,
//!   `PROFILE_INVARIANT_UNCHECKED`);
//! - must-support elements that are absent, only when asked (`PROFILE_MUST_SUPPORT`).
//!
//! Every finding carries the profile's canonical (a [`crate::diag::ProfileId`]); the location is
//! the element's path, value-free.
//!
//! - references that resolve in the document: the target's type among the target profiles'
//!   (`PROFILE_REFERENCE_TARGET`); with `--assume-valid-rest-references`, also those that do
//!   not, by the type their URL names ([`super::checks`]);
//! - `--bundle-profile`: the entries of the root Bundle a rule selects, against its profile.
//!
//! While it decides whether an item fits a slice (a `profile` discriminator, or conformance to
//! the whole slice), a reference that resolves in the document fits only when its target
//! conforms to one of its loaded target profiles (a Composition whose subject is a Patient
//! lacking what the Patient profile requires is no Composition of the Bundle's profile).
//!
//! What it does not do: conformance of a reference's target to its `targetProfile` outside
//! slicing, terminology servers (SNOMED CT, LOINC
//! value sets with filters are unexpandable), reslicing, `conformsTo()` and the
//! `%terminologies` functions in invariants.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use crate::diag::{Code, Diagnostic, Location, ProfileId, Severity};
use crate::formats::xml::{NsId, XML_NAMESPACE};
use crate::structure::conformance::{self, ContextKind, DiscriminatorKind, Element, Slicing, Snapshot, Strength};
use crate::structure::{Conformance, Context};

use super::checks::Checks;
use super::definitions::{self as defs, ElemRef};
use super::fhirpath::{self, eval::NavCache, parse};
use super::model::{Document, NONE};
use super::validate::{Findings, Options};

/// Most element visits for one document (a bound on what nested type profiles and slice
/// matching can cost).
const MAX_VISITS: u64 = 2_000_000;

/// Validates `doc` against the profiles of `ctx`: the findings of the profile checks only.
pub fn check(doc: &Document, ctx: &Context) -> Vec<Diagnostic> {
    let mut f = Findings::new(false);
    check_into(doc, ctx, Options::default(), &Checks::default(), &mut f);
    f.into_list()
}

/// [`check`], adding to `f`, with the options of `checks` that concern profiles
/// (`--assume-valid-rest-references`, `--bundle-profile`).
pub(super) fn check_into(doc: &Document, ctx: &Context, _options: Options, checks: &Checks, f: &mut Findings) {
    run(doc, ctx, true, checks, f);
}

/// The profiles every validation applies, packages loaded or not: the vital signs profile of each
/// Observation with a vital sign code ([`super::vital_signs`]; the profiles are built in).
pub(super) fn check_implied(doc: &Document, f: &mut Findings) {
    let any = (0..doc.nodes().len() as u32)
        .any(|r| doc.node(r).is_resource() && super::vital_signs::implied_profile(doc, r).is_some());
    if any {
        static NOTHING_LOADED: OnceLock<Context> = OnceLock::new();
        run(doc, NOTHING_LOADED.get_or_init(Context::default), false, &Checks::default(), f);
    }
}

/// Checks each resource against its profiles: those its `meta.profile` claims and `--profile`
/// (the root), when `loaded` (packages are loaded: `ctx`), and its implied vital signs profile;
/// then, when `loaded`, every extension against its definition.
fn run(doc: &Document, ctx: &Context, loaded: bool, checks: &Checks, f: &mut Findings) {
    let nav = NavCache::default();
    // `--bundle-profile`: the profiles of the root Bundle's entries.
    let mut by_rule: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    if loaded {
        for rule in &checks.bundle_profiles {
            for r in rule.select(doc) {
                by_rule.entry(r).or_default().push(rule.profile.clone());
            }
        }
    }
    let mut c = Checker {
        doc,
        conf: &ctx.conformance,
        must_support: ctx.must_support,
        assume_valid_rest_references: checks.assume_valid_rest_references,
        now: checks.now,
        checks,
        f: std::mem::replace(f, Findings::new(false)),
        nav: &nav,
        compiled: BTreeMap::new(),
        reported: BTreeSet::new(),
        visits: 0,
        bundles: RefCell::new(BTreeMap::new()),
        conformed: BTreeMap::new(),
        matching: 0,
    };
    for r in 0..doc.nodes().len() as u32 {
        let node = doc.node(r);
        if !node.is_resource() || node.is_unknown() {
            continue;
        }
        let mut urls: Vec<(String, Option<u32>)> = Vec::new();
        if loaded {
            for meta in doc.named(r, "meta") {
                for p in doc.named(meta, "profile") {
                    if let Some(v) = text(doc, p) {
                        urls.push((v.to_owned(), Some(p)));
                    }
                }
            }
            if r == 0 {
                urls.extend(ctx.profiles.iter().map(|u| (u.clone(), None)));
            }
            let ty = type_of(doc, r);
            if ty == "StructureDefinition" {
                c.fixed_against_base(r);
            }
            urls.extend(
                ctx.conformance.global_profiles().iter().filter(|(t, _)| t == ty).map(|(_, u)| (u.clone(), None)),
            );
            if let Some(rules) = by_rule.get(&r) {
                urls.extend(rules.iter().map(|u| (u.clone(), None)));
            }
        }
        if let Some(implied) = super::vital_signs::implied_profile(doc, r) {
            // A claimed `bodytemp|4.0.1` is the same profile.
            if !urls.iter().any(|(u, _)| u.split('|').next() == Some(implied)) {
                urls.push((implied.to_owned(), None));
            }
        }
        let mut seen = BTreeSet::new();
        for (url, at) in urls {
            if !seen.insert(url.clone()) {
                continue;
            }
            c.against(r, &url, at);
        }
    }
    if loaded {
        c.extensions();
    }
    *f = c.f;
}

/// The items of one child group of an element: the nodes, the slice each matched (by index
/// into the group's slices; empty when the group has no slices) and the slicing they were
/// matched under.
struct Items<'a> {
    nodes: &'a [u32],
    slice_of: &'a [Option<usize>],
    slicing: &'a Slicing,
}

struct Checker<'d> {
    doc: &'d Document,
    conf: &'d Conformance,
    must_support: bool,
    /// `--assume-valid-rest-references`: a reference that does not resolve is of the type its
    /// URL names.
    assume_valid_rest_references: bool,
    /// `--now`: what `minValueDuration`/`maxValueDuration` are relative to.
    now: Option<super::now::Now>,
    /// The options, of which the unknown extensions' (`--allow-extension-domain`...).
    checks: &'d Checks,
    f: Findings,
    nav: &'d NavCache<'d>,
    compiled: BTreeMap<String, Option<Arc<parse::Expr>>>,
    /// `(code, key)` already reported once per document (unexpandable value sets, unchecked
    /// invariants).
    reported: BTreeSet<(Code, String)>,
    visits: u64,
    /// Per Bundle node, its entries' resources by `fullUrl` and by type and id (built when a
    /// reference into it is first resolved).
    bundles: RefCell<BTreeMap<u32, Rc<BundleIndex<'d>>>>,
    /// Whether a node conforms to a profile (or one of its elements), once computed: a
    /// resource referred to from many places is checked against a target profile once.
    conformed: BTreeMap<(u32, String, Option<String>), bool>,
    /// How many conformance questions (does this item fit that slice?) are being answered:
    /// while one is, a reference that resolves in the document fits only when its target
    /// conforms to one of the element's target profiles.
    matching: u32,
}

/// A Bundle's entries by `fullUrl` and by `(type, id)`; the first entry wins.
#[derive(Default)]
struct BundleIndex<'d> {
    by_url: BTreeMap<&'d [u8], u32>,
    by_type_id: BTreeMap<(&'static str, &'d [u8]), u32>,
}

/// The text of a primitive node's value (a canonical URL, a code), when it is UTF-8.
#[expect(
    clippy::disallowed_methods,
    reason = "a validator: it compares values with a profile's; what it returns is value-free"
)]
fn value(doc: &Document, i: u32) -> &[u8] {
    doc.value(i)
}

/// A decoded value of a narrative's XHTML (an attribute), compared with a profile's codes.
#[expect(
    clippy::disallowed_methods,
    reason = "a validator: it compares a narrative's language and class attributes with a profile's codes; what it returns is value-free"
)]
fn xml_value(tree: &crate::formats::xml::Tree, span: crate::formats::xml::Span) -> &[u8] {
    tree.value(span).raw()
}

fn text(doc: &Document, i: u32) -> Option<&str> {
    doc.node(i).has_value().then(|| std::str::from_utf8(value(doc, i)).ok()).flatten()
}

/// A key interned for the life of the process (an invariant key of a loaded profile).
fn intern_key(key: &str) -> &'static &'static str {
    static KEYS: OnceLock<Mutex<BTreeMap<String, &'static &'static str>>> = OnceLock::new();
    let mut keys =
        KEYS.get_or_init(|| Mutex::new(BTreeMap::new())).lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(k) = keys.get(key) {
        return k;
    }
    let leaked: &'static str = Box::leak(key.to_owned().into_boxed_str());
    let boxed: &'static &'static str = Box::leak(Box::new(leaked));
    keys.insert(key.to_owned(), boxed);
    boxed
}

/// The JSON name of node `c` (`valueQuantity` for a choice).
fn json_name_is(doc: &Document, c: u32, name: &str) -> bool {
    let node = doc.node(c);
    if node.is_unknown() {
        return false;
    }
    let Some(rest) = name.strip_prefix(node.name) else { return false };
    if rest.is_empty() {
        return true;
    }
    let choice = node.elem.and_then(defs::element).is_some_and(|d| d.choice);
    if !choice {
        return false;
    }
    let Some(t) = node.ty else { return false };
    let tn = defs::type_name(t);
    let mut cs = rest.chars();
    let mut tc = tn.chars();
    match (cs.next(), tc.next()) {
        (Some(a), Some(b)) => a == b.to_ascii_uppercase() && cs.as_str() == tc.as_str(),
        _ => false,
    }
}

/// The core definition of child `name` of node `n`.
fn core_child_of(doc: &Document, n: u32, name: &str) -> Option<ElemRef> {
    let ctx = doc.node(n).ctx?;
    let def = defs::type_def(ctx.ty);
    defs::children(ctx)
        .iter()
        .copied()
        .find(|&c| def.elements.get(usize::from(c)).is_some_and(|d| d.name == name))
        .map(|idx| ElemRef { ty: ctx.ty, idx })
}

/// The type name of node `i` (`Quantity`, `Patient`).
fn type_of(doc: &Document, i: u32) -> &'static str {
    doc.node(i).ty.map_or("", defs::type_name)
}

impl<'d> Checker<'d> {
    fn push(&mut self, code: Code, severity: Severity, location: Location, profile: Option<ProfileId>) {
        self.f.push_profiled(code, severity, location, profile);
    }

    fn once(&mut self, code: Code, key: &str) -> bool {
        self.reported.insert((code, key.to_owned()))
    }

    /// StructureDefinition node `r`, a specialization of a loaded base: the same `type` as the
    /// base's is `STRUCTUREDEFINITION_SPECIALIZATION_TYPE` (a specialization defines a new
    /// type). A constraint on a loaded base: a differential element
    /// that fixes a primitive to another value than the base's snapshot fixes it to is
    /// `STRUCTUREDEFINITION_FIXED_CONFLICT` (a constraint only narrows what its base allows,
    /// and a fixed value allows that value alone: an extension derived from another cannot fix
    /// `Extension.url` to its own URL). Elements are matched by id (by path without one).
    fn fixed_against_base(&mut self, r: u32) {
        let doc = self.doc;
        let first = |i: u32, name: &str| doc.named(i, name).next().and_then(|c| text(doc, c));
        if first(r, "derivation") == Some("specialization") {
            // "This structure is a specialization of another type": it defines a new type.
            let base = first(r, "baseDefinition").and_then(|b| self.conf.structure_definition(b));
            let base_type = base.and_then(|b| b.get("type")).and_then(Value::as_str);
            if let (Some(bt), Some((at, ty))) =
                (base_type, doc.named(r, "type").find_map(|t| text(doc, t).map(|v| (t, v))))
            {
                if bt == ty {
                    self.push(
                        Code::STRUCTUREDEFINITION_SPECIALIZATION_TYPE,
                        Severity::Error,
                        Location::Fhir(doc.path(at)),
                        None,
                    );
                }
            }
            return;
        }
        if first(r, "derivation") != Some("constraint") {
            return;
        }
        let Some(snap) = first(r, "baseDefinition").and_then(|base| self.conf.snapshot(base)) else { return };
        let pid = crate::structure::profile_id(&snap.url);
        for d in doc.named(r, "differential") {
            for e in doc.named(d, "element") {
                let Some(k) = first(e, "id").or_else(|| first(e, "path")).and_then(|id| snap.find(id)) else {
                    continue;
                };
                let Some(Value::String(fixed)) = &snap.elements[k].fixed else { continue };
                for x in doc.named(e, "fixed") {
                    if doc.node(x).has_value() && value(doc, x) != fixed.as_bytes() {
                        let location = Location::Fhir(doc.path(x));
                        self.push(Code::STRUCTUREDEFINITION_FIXED_CONFLICT, Severity::Error, location, pid);
                    }
                }
            }
        }
    }

    /// Checks resource node `r` against profile `url` (`at`: the `meta.profile` node naming it).
    fn against(&mut self, r: u32, url: &str, at: Option<u32>) {
        let bare = url.split('|').next().unwrap_or(url);
        let loaded = self.conf.structure_definition(url).is_some();
        if !loaded && bare.starts_with(conformance::CORE_SD) {
            // A core profile: the core validation covers it.
            return;
        }
        let location = Location::Fhir(self.doc.path(at.unwrap_or(r)));
        let Some(snap) = self.conf.snapshot(url) else {
            let code = if loaded { Code::PROFILE_SNAPSHOT_FAILED } else { Code::PROFILE_UNKNOWN };
            let profile = if loaded { crate::structure::profile_id(bare) } else { None };
            self.push(code, code.default_severity(), location, profile);
            return;
        };
        let pid = crate::structure::profile_id(&snap.url);
        if !snap.complete {
            self.push(Code::PROFILE_SNAPSHOT_FAILED, Severity::Warning, location, pid);
        }
        self.node(r, &snap, 0, pid, 0);
    }

    /// Checks node `n` against element `e` of `snap`.
    fn node(&mut self, n: u32, snap: &Arc<Snapshot>, e: usize, pid: Option<ProfileId>, depth: u32) {
        self.node_with(n, snap, e, pid, depth, true);
    }

    /// [`Self::node`]; `follow_reference`: an element without children of its own in the
    /// snapshot takes those of the element its `contentReference` names. A sliced element's
    /// items that match a slice are checked against the slice instead (which carries the
    /// reference too), as the reference validator matches each item to one definition.
    fn node_with(
        &mut self,
        n: u32,
        snap: &Arc<Snapshot>,
        e: usize,
        pid: Option<ProfileId>,
        depth: u32,
        follow_reference: bool,
    ) {
        self.visits += 1;
        if self.visits > MAX_VISITS || depth > conformance::MAX_DEPTH {
            return;
        }
        let Some(el) = snap.elements.get(e) else { return };
        self.element(n, snap, el, pid, depth);
        let mut groups_at = e;
        if follow_reference && snap.groups_of(e).is_empty() {
            if let Some(target) = el.content_reference.as_deref().and_then(|c| c.rsplit_once('#')).map(|(_, p)| p) {
                if let Some(k) = snap.elements.iter().position(|x| x.id == target) {
                    groups_at = k;
                }
            }
        }
        // The snapshot outlives the walk below (a second handle: `self` is borrowed mutably).
        let held = Arc::clone(snap);
        let groups = held.groups_of(groups_at);
        if groups.is_empty() {
            return;
        }
        // The node's known children, walked once (a profile has a group for each of its
        // elements; a node has few children).
        let doc = self.doc;
        let children: Vec<(&str, u32)> = doc
            .children(n)
            .filter_map(|c| {
                let node = doc.node(c);
                (!node.is_unknown()).then_some((node.name, c))
            })
            .collect();
        for g in groups {
            let instances: Vec<u32> = children.iter().filter(|(name, _)| *name == g.name).map(|&(_, c)| c).collect();
            if instances.is_empty() && self.inert_when_absent(&held, g) {
                continue;
            }
            let default;
            let slicing = match g.base.and_then(|b| held.elements[b].slicing.as_ref()) {
                Some(s) => s,
                None => {
                    default = default_slicing(&g.name);
                    &default
                }
            };
            // The slice each item matches (none when the group has no slices).
            let assigned: Vec<Option<usize>> = if g.slices.is_empty() {
                Vec::new()
            } else {
                instances
                    .iter()
                    .map(|&c| (0..g.slices.len()).find(|&k| self.matches(c, snap, g.slices[k], slicing, pid, depth)))
                    .collect()
            };
            let items = Items { nodes: &instances, slice_of: &assigned, slicing };
            if let Some(b) = g.base {
                self.group_base(n, snap, b, &items, pid, depth);
            }
            if !g.slices.is_empty() {
                self.slices(n, snap, g, &items, pid, depth);
            }
        }
    }

    /// True when group `g` reports nothing for a node without any of its items: neither the
    /// element nor a slice asks for one (`min` 0), and none is a must support that is reported.
    fn inert_when_absent(&self, snap: &Snapshot, g: &conformance::Group) -> bool {
        let quiet =
            |e: usize| snap.elements.get(e).is_none_or(|el| el.min == 0 && !(self.must_support && el.must_support));
        g.base.is_none_or(quiet) && g.slices.iter().all(|&s| quiet(s))
    }

    /// The core definition of child `name` of node `n`.
    fn core_child(&self, n: u32, name: &str) -> Option<ElemRef> {
        core_child_of(self.doc, n, name)
    }

    fn missing_location(&self, n: u32, name: &str) -> Location {
        Location::Fhir(match self.core_child(n, name) {
            Some(r) => self.doc.path_of_missing(n, r),
            None => self.doc.path(n),
        })
    }

    fn group_base(
        &mut self,
        n: u32,
        snap: &Arc<Snapshot>,
        b: usize,
        items: &Items<'_>,
        pid: Option<ProfileId>,
        depth: u32,
    ) {
        let (instances, assigned) = (items.nodes, items.slice_of);
        let el = &snap.elements[b];
        let count = instances.len() as u32;
        let name = el.name();
        // The core's own cardinality, looked up only when the count is outside the profile's.
        let doc = self.doc;
        let core = || core_child_of(doc, n, name).and_then(defs::element);
        if count < el.min && core().is_none_or(|d| d.min < el.min) {
            let loc = self.missing_location(n, name);
            self.push(Code::PROFILE_CARDINALITY_MIN, Severity::Error, loc, pid);
        }
        if count > el.max && core().is_none_or(|d| d.max > el.max) {
            let at = instances.get(el.max as usize).copied().unwrap_or(n);
            self.push(Code::PROFILE_CARDINALITY_MAX, Severity::Error, Location::Fhir(self.doc.path(at)), pid);
        }
        if count == 0 && self.must_support && el.must_support {
            let loc = self.missing_location(n, name);
            self.push(Code::PROFILE_MUST_SUPPORT, Severity::Information, loc, pid);
        }
        if el.is_choice() && !el.types.is_empty() {
            for &c in instances {
                let tn = type_of(self.doc, c);
                if !el.types.iter().any(|t| t.code == tn || t.code == "*") {
                    self.push(Code::PROFILE_TYPE, Severity::Error, Location::Fhir(self.doc.path(c)), pid);
                }
            }
        }
        for (k, &c) in instances.iter().enumerate() {
            let in_slice = assigned.get(k).is_some_and(Option::is_some);
            self.node_with(c, snap, b, pid, depth + 1, !in_slice);
        }
    }

    fn slices(
        &mut self,
        n: u32,
        snap: &Arc<Snapshot>,
        g: &conformance::Group,
        items: &Items<'_>,
        pid: Option<ProfileId>,
        depth: u32,
    ) {
        let (instances, assigned, slicing) = (items.nodes, items.slice_of, items.slicing);
        let mut counts = vec![0u32; g.slices.len()];
        let mut extra: Vec<Option<u32>> = vec![None; g.slices.len()];
        let mut last = 0usize;
        let mut unmatched_seen = false;
        let mut unmatched: Vec<u32> = Vec::new();
        for (&c, &m) in instances.iter().zip(assigned) {
            match m {
                Some(k) => {
                    counts[k] += 1;
                    if counts[k] == snap.elements[g.slices[k]].max.saturating_add(1) {
                        extra[k] = Some(c);
                    }
                    if slicing.ordered && k < last {
                        self.push(Code::SLICE_ORDER, Severity::Error, Location::Fhir(self.doc.path(c)), pid);
                    }
                    last = last.max(k);
                    if slicing.open_at_end && unmatched_seen {
                        self.push(Code::SLICE_UNMATCHED, Severity::Error, Location::Fhir(self.doc.path(c)), pid);
                    }
                    self.node(c, snap, g.slices[k], pid, depth + 1);
                }
                None => {
                    unmatched_seen = true;
                    unmatched.push(c);
                    if slicing.closed {
                        self.push(Code::SLICE_UNMATCHED, Severity::Error, Location::Fhir(self.doc.path(c)), pid);
                    }
                }
            }
        }
        for (k, &s) in g.slices.iter().enumerate() {
            let el = &snap.elements[s];
            if counts[k] < el.min {
                let loc = self.missing_location(n, &g.name);
                self.push(Code::SLICE_CARDINALITY_MIN, Severity::Error, loc, pid);
                for &c in &unmatched {
                    self.explain(c, snap, s, slicing, depth);
                }
            }
            if let Some(at) = extra[k] {
                self.push(Code::SLICE_CARDINALITY_MAX, Severity::Error, Location::Fhir(self.doc.path(at)), pid);
            }
            if counts[k] == 0 && self.must_support && el.must_support {
                let loc = self.missing_location(n, &g.name);
                self.push(Code::PROFILE_MUST_SUPPORT, Severity::Information, loc, pid);
            }
        }
    }

    /// True when node `c` conforms to element `e` of `snap` (checked into scratch findings).
    fn conforms(&mut self, c: u32, snap: &Arc<Snapshot>, e: usize, pid: Option<ProfileId>, depth: u32) -> bool {
        let saved = std::mem::replace(&mut self.f, Findings::new(false));
        self.matching += 1;
        self.node(c, snap, e, pid, depth + 1);
        self.matching -= 1;
        let scratch = std::mem::replace(&mut self.f, saved);
        !scratch.has_failure()
    }

    /// True when node `c` conforms to profile `url`.
    fn conforms_to(&mut self, c: u32, url: &str, depth: u32) -> bool {
        self.conforms_to_element(c, url, None, depth)
    }

    /// True when node `c` conforms to profile `url`, or to its element `element` (the
    /// `elementdefinition-profile-element` extension).
    fn conforms_to_element(&mut self, c: u32, url: &str, element: Option<&str>, depth: u32) -> bool {
        let key = (c, url.to_owned(), element.map(str::to_owned));
        if let Some(&known) = self.conformed.get(&key) {
            return known;
        }
        // A question asked again while it is being answered (resources that refer to each
        // other) is taken to hold; the answer being computed decides.
        self.conformed.insert(key.clone(), true);
        let fits = self.conforms_to_uncached(c, url, element, depth);
        self.conformed.insert(key, fits);
        fits
    }

    fn conforms_to_uncached(&mut self, c: u32, url: &str, element: Option<&str>, depth: u32) -> bool {
        let Some(snap) = self.conf.snapshot(url) else {
            // A core type's profile, or one not loaded: nothing to contradict.
            return true;
        };
        let e = match element {
            Some(id) => match snap.find(id) {
                Some(e) => e,
                // An element the profile does not have: nothing to check against.
                None => return true,
            },
            None => 0,
        };
        if e == 0 && self.doc.node(c).is_resource() && snap.type_name != type_of(self.doc, c) {
            return false;
        }
        let pid = crate::structure::profile_id(&snap.url);
        self.conforms(c, &snap, e, pid, depth)
    }

    /// Whether Reference node `n` points to a resource type one of `targets` (target profiles)
    /// constrains, when it resolves in the document (a contained resource, a Bundle entry). A
    /// reference leaving the document is not judged by the type its URL names: the reference
    /// validator does so only when told to assume REST references valid, an option phiward does
    /// not have.
    fn target_allowed(&self, n: u32, targets: &[&str]) -> bool {
        let doc = self.doc;
        let mut names = Vec::with_capacity(targets.len());
        for t in targets {
            match self.type_of_profile(t) {
                Some(name) if name == "Resource" || name == "DomainResource" => return true,
                Some(name) => names.push(name),
                None => return true,
            }
        }
        match self.resolve(n) {
            Some(r) => names.iter().any(|name| name == type_of(doc, r)),
            None if self.assume_valid_rest_references => {
                // The type the URL names (`Patient/123`), as the reference validator takes it
                // with `assumeValidRestReferences`; a URL naming none is not judged.
                let named = doc
                    .named(n, "reference")
                    .find(|&x| doc.node(x).has_value())
                    .and_then(|x| super::checks::type_and_id(value(doc, x)));
                named.is_none_or(|(ty, _)| names.iter().any(|name| name == ty))
            }
            None => true,
        }
    }

    /// Whether the resource Reference node `n` resolves to in the document conforms to one of
    /// `targets` (target profiles) that is loaded and constrains its type; true when it leaves
    /// the document, when no target is a loaded profile (the core definitions are checked
    /// apart), or when none constrains its type (the type is `target_allowed`'s question).
    fn target_conforms(&mut self, n: u32, targets: &[&str], depth: u32) -> bool {
        if targets.is_empty() {
            return true;
        }
        let Some(r) = self.resolve(n) else { return true };
        let ty = type_of(self.doc, r);
        let loaded: Vec<String> = targets
            .iter()
            .filter(|t| !t.starts_with(conformance::CORE_SD))
            .filter(|t| self.conf.snapshot(t).is_some_and(|s| s.type_name == ty))
            .map(|t| (*t).to_owned())
            .collect();
        if loaded.is_empty() || targets.iter().any(|t| t.starts_with(conformance::CORE_SD)) {
            return true;
        }
        loaded.iter().any(|p| self.conforms_to(r, p, depth + 1))
    }

    /// The type a profile constrains (`Observation` for a loaded Observation profile or the core
    /// `http://hl7.org/fhir/StructureDefinition/Observation`).
    fn type_of_profile(&self, url: &str) -> Option<String> {
        if let Some(snap) = self.conf.snapshot(url) {
            return Some(snap.type_name.clone());
        }
        // A core type's definition; a core profile that is not loaded (`vitalsigns`) is unknown.
        let bare = url.split('|').next().unwrap_or(url);
        let name = bare.strip_prefix(conformance::CORE_SD)?.trim_start_matches('/');
        defs::type_id(name.as_bytes()).map(|_| name.to_owned())
    }

    /// Why node `c`, which matches every discriminator of a slice but its profile, did not
    /// match: its failures against the slice's profiles, reported as information at their own
    /// locations (as the reference validator's hints), so that a missing required slice comes
    /// with the reasons the item meant for it was not counted.
    fn explain(&mut self, c: u32, snap: &Arc<Snapshot>, slice: usize, slicing: &Slicing, depth: u32) {
        if !slicing.discriminators.iter().any(|(k, _)| *k == DiscriminatorKind::Profile) {
            return;
        }
        for (kind, path) in &slicing.discriminators {
            if *kind != DiscriminatorKind::Profile
                && self.discriminate(c, snap, slice, *kind, path, depth) != Some(true)
            {
                return;
            }
        }
        for (kind, path) in &slicing.discriminators {
            if *kind != DiscriminatorKind::Profile {
                continue;
            }
            let Some(nodes) = self.at_path(c, path) else { continue };
            let profiles: Vec<String> = match path.strip_suffix("resolve()") {
                Some(prefix) => {
                    let prefix = prefix.strip_suffix('.').unwrap_or(prefix);
                    let Some(t) = snap.descend(slice, prefix) else { continue };
                    snap.elements[t].types.iter().flat_map(|t| t.target_profiles.iter().cloned()).collect()
                }
                None => {
                    let Some(t) = snap.descend(slice, path) else { continue };
                    snap.elements[t].types.iter().flat_map(|t| t.profiles.iter().cloned()).collect()
                }
            };
            for &n in &nodes {
                for p in &profiles {
                    let Some(psnap) = self.conf.snapshot(p) else { continue };
                    if self.doc.node(n).is_resource() && psnap.type_name != type_of(self.doc, n) {
                        continue;
                    }
                    let ppid = crate::structure::profile_id(&psnap.url);
                    let saved = std::mem::replace(&mut self.f, Findings::new(false));
                    self.node(n, &psnap, 0, ppid, depth + 1);
                    let scratch = std::mem::replace(&mut self.f, saved);
                    for d in scratch.into_list() {
                        if d.severity.is_failure() {
                            self.push(d.code, Severity::Information, d.location, d.profile);
                        }
                    }
                }
            }
        }
    }

    /// The nodes reached from `c` by a discriminator path; `None` for a path outside the
    /// supported forms.
    fn at_path(&self, c: u32, path: &str) -> Option<Vec<u32>> {
        let mut set = vec![c];
        // Each step fills `next` from `set`, and the two trade places (one allocation each).
        let mut next = Vec::new();
        for step in path.split('.') {
            if step.is_empty() || step == "$this" {
                continue;
            }
            if step.contains('(') && step != "resolve()" {
                return None;
            }
            next.clear();
            if step == "resolve()" {
                next.extend(set.iter().filter_map(|&n| self.resolve(n)));
            } else {
                for &n in &set {
                    next.extend(self.doc.children(n).filter(|&k| json_name_is(self.doc, k, step)));
                }
            }
            std::mem::swap(&mut set, &mut next);
        }
        Some(set)
    }

    /// The resource Reference node `c` points to inside the document: `#id`, a resource
    /// contained in the same resource; otherwise an entry of the innermost Bundle holding `c`,
    /// by `fullUrl`, by `Type/id`, or by a RESTful `fullUrl` ending in `/Type/id`. `None` when
    /// it points outside the document.
    fn resolve(&self, c: u32) -> Option<u32> {
        let doc = self.doc;
        let target = doc.named(c, "reference").find(|&x| doc.node(x).has_value()).map(|x| value(doc, x))?;
        let id_of = |r: u32| doc.named(r, "id").find(|&i| doc.node(i).has_value()).map(|i| value(doc, i));
        if let Some(id) = target.strip_prefix(b"#") {
            let mut r = doc.resource_of(c);
            if doc.node(r).name == "contained" && doc.node(r).parent != NONE {
                r = doc.resource_of(doc.node(r).parent);
            }
            return doc.named(r, "contained").find(|&k| doc.node(k).ty.is_some() && id_of(k) == Some(id));
        }
        let mut b = doc.node(c).parent;
        while b != NONE && !(doc.node(b).is_resource() && type_of(doc, b) == "Bundle") {
            b = doc.node(b).parent;
        }
        if b == NONE {
            return None;
        }
        let index = self.bundle_index(b);
        if let Some(&r) = index.by_url.get(target) {
            return Some(r);
        }
        // A relative reference `Type/id` (a version after `/_history/` aside) matches an entry's
        // resource by type and id.
        if target.contains(&b':') {
            return None;
        }
        let bare = match memchr::memmem::find(target, b"/_history/") {
            Some(k) => &target[..k],
            None => target,
        };
        let mut parts = bare.rsplitn(2, |&x| x == b'/');
        let (Some(id), Some(ty)) = (parts.next(), parts.next()) else { return None };
        let ty = std::str::from_utf8(ty).ok()?;
        let ty = defs::type_id(ty.as_bytes()).map(defs::type_name)?;
        index.by_type_id.get(&(ty, id)).copied()
    }

    /// The index of Bundle node `b`'s entries, built once.
    fn bundle_index(&self, b: u32) -> Rc<BundleIndex<'d>> {
        if let Some(ix) = self.bundles.borrow().get(&b) {
            return Rc::clone(ix);
        }
        let doc = self.doc;
        let mut ix = BundleIndex::default();
        for e in doc.named(b, "entry") {
            let Some(r) = doc.named(e, "resource").find(|&r| doc.node(r).ty.is_some()) else { continue };
            if let Some(u) = doc.named(e, "fullUrl").find(|&u| doc.node(u).has_value()) {
                ix.by_url.entry(value(doc, u)).or_insert(r);
            }
            if let Some(id) = doc.named(r, "id").find(|&i| doc.node(i).has_value()) {
                ix.by_type_id.entry((type_of(doc, r), value(doc, id))).or_insert(r);
            }
        }
        let ix = Rc::new(ix);
        self.bundles.borrow_mut().insert(b, Rc::clone(&ix));
        ix
    }

    fn matches(
        &mut self,
        c: u32,
        snap: &Arc<Snapshot>,
        slice: usize,
        slicing: &Slicing,
        pid: Option<ProfileId>,
        depth: u32,
    ) -> bool {
        if slicing.discriminators.is_empty() {
            return self.conforms(c, snap, slice, pid, depth);
        }
        for (kind, path) in &slicing.discriminators {
            let decided = self.discriminate(c, snap, slice, *kind, path, depth);
            match decided {
                Some(true) => {}
                Some(false) => return false,
                None => return self.conforms(c, snap, slice, pid, depth),
            }
        }
        true
    }

    /// One discriminator: `None` when it cannot be decided here (the caller then checks
    /// conformance to the whole slice).
    fn discriminate(
        &mut self,
        c: u32,
        snap: &Arc<Snapshot>,
        slice: usize,
        kind: DiscriminatorKind,
        path: &str,
        depth: u32,
    ) -> Option<bool> {
        let nodes = self.at_path(c, path)?;
        if let Some(prefix) = path.strip_suffix("resolve()") {
            // The resources referred to, against the reference element's target profiles.
            let prefix = prefix.strip_suffix('.').unwrap_or(prefix);
            let te = &snap.elements[snap.descend(slice, prefix)?];
            let targets: Vec<String> = te.types.iter().flat_map(|t| t.target_profiles.iter().cloned()).collect();
            if targets.is_empty() {
                return None;
            }
            return match kind {
                DiscriminatorKind::Type => {
                    let names: Vec<String> = targets.iter().filter_map(|p| self.type_of_profile(p)).collect();
                    Some(nodes.iter().any(|&n| names.iter().any(|t| t == type_of(self.doc, n))))
                }
                DiscriminatorKind::Profile => {
                    Some(nodes.iter().any(|&n| targets.iter().any(|p| self.conforms_to(n, p, depth + 1))))
                }
                DiscriminatorKind::Value | DiscriminatorKind::Exists => None,
            };
        }
        let target = snap.descend(slice, path);
        let slice_el = &snap.elements[slice];
        match kind {
            DiscriminatorKind::Value => {
                let te = target.map(|t| &snap.elements[t]);
                let url_value;
                let v = match te.and_then(|t| t.fixed.as_ref().or(t.pattern.as_ref())) {
                    Some(v) => v,
                    None if path == "url" => {
                        let url = slice_el.types.iter().find_map(|t| t.profiles.first())?;
                        url_value = Value::String(url.clone());
                        &url_value
                    }
                    None if te.is_some_and(|t| t.binding.is_none()) => {
                        // Fixed inside required slices on the way (R4's `bp`): each such value
                        // is in some node at the path.
                        let values = snap.values_through_slices(slice, path);
                        if values.is_empty() {
                            return None;
                        }
                        return Some(
                            values.iter().all(|v| nodes.iter().any(|&n| value_matches(self.doc, n, v, false, 0))),
                        );
                    }
                    None => {
                        let (strength, vs) = te.and_then(|t| t.binding.clone())?;
                        if strength != Strength::Required {
                            return None;
                        }
                        let exp = self.conf.expansion(&vs)?;
                        return Some(nodes.iter().any(|&n| self.in_expansion(n, &exp) == Some(true)));
                    }
                };
                Some(nodes.iter().any(|&n| value_matches(self.doc, n, v, false, 0)))
            }
            DiscriminatorKind::Exists => {
                let te = &snap.elements[target?];
                if te.min >= 1 {
                    Some(!nodes.is_empty())
                } else if te.max == 0 {
                    Some(nodes.is_empty())
                } else {
                    None
                }
            }
            DiscriminatorKind::Type => {
                let te = &snap.elements[target?];
                if te.types.is_empty() {
                    return None;
                }
                Some(nodes.iter().any(|&n| {
                    let tn = type_of(self.doc, n);
                    te.types.iter().any(|t| t.code == tn)
                }))
            }
            DiscriminatorKind::Profile => {
                let te = &snap.elements[target?];
                let profiles: Vec<(String, Option<String>)> = te
                    .types
                    .iter()
                    .flat_map(|t| t.profile_targets().map(|(p, e)| (p.to_owned(), e.map(str::to_owned))))
                    .collect();
                if profiles.is_empty() {
                    return None;
                }
                for &n in &nodes {
                    for (p, e) in &profiles {
                        if self.conforms_to_element(n, p, e.as_deref(), depth + 1) {
                            return Some(true);
                        }
                    }
                }
                Some(false)
            }
        }
    }

    /// The checks of one element on one node: fixed, pattern, binding, invariants, type
    /// profiles.
    fn element(&mut self, n: u32, snap: &Arc<Snapshot>, el: &Element, pid: Option<ProfileId>, depth: u32) {
        let doc = self.doc;
        if let Some(v) = &el.fixed {
            if !value_matches(doc, n, v, true, 0) {
                self.push(Code::PROFILE_FIXED, Severity::Error, Location::Fhir(doc.path(n)), pid);
            }
        }
        if let Some(v) = &el.pattern {
            if !value_matches(doc, n, v, false, 0) {
                self.push(Code::PROFILE_PATTERN, Severity::Error, Location::Fhir(doc.path(n)), pid);
            }
        }
        if let Some((strength, vs)) = &el.binding {
            if *strength != Strength::Other {
                self.binding(n, *strength, vs, pid);
            }
        }
        for ab in &el.additional_bindings {
            self.additional_binding(n, ab, pid);
        }
        for (bound, code, below) in
            [(&el.min_value, Code::PROFILE_MIN_VALUE, true), (&el.max_value, Code::PROFILE_MAX_VALUE, false)]
        {
            let Some((kind, v)) = bound else { continue };
            let ord = match kind.as_str() {
                "Quantity" => quantity_order(doc, n, v),
                "Duration" => self.duration_order(n, v, below, snap, el, pid),
                _ => primitive_order(doc, n, kind, v),
            };
            let out = if below { ord == Some(Ordering::Less) } else { ord == Some(Ordering::Greater) };
            if out {
                self.push(code, Severity::Error, Location::Fhir(doc.path(n)), pid);
            }
        }
        if type_of(doc, n) == "Reference" {
            let targets: Vec<&str> = el
                .types
                .iter()
                .filter(|t| t.code == "Reference")
                .flat_map(|t| t.target_profiles.iter().map(String::as_str))
                .collect();
            if !targets.is_empty() && !self.target_allowed(n, &targets) {
                self.push(Code::PROFILE_REFERENCE_TARGET, Severity::Error, Location::Fhir(doc.path(n)), pid);
            } else if self.matching > 0 && !self.target_conforms(n, &targets, depth) {
                // Only while matching: the item does not fit (the finding goes to scratch).
                self.push(Code::PROFILE_REFERENCE_TARGET, Severity::Error, Location::Fhir(doc.path(n)), pid);
            }
        }
        if el.max_length.is_some() || el.min_length.is_some() {
            if let Some(len) = doc.node(n).has_value().then(|| text(doc, n)).flatten().map(|t| t.chars().count() as u64)
            {
                if el.max_length.is_some_and(|m| len > m) || el.min_length.is_some_and(|m| len < m) {
                    self.push(Code::PROFILE_LENGTH, Severity::Error, Location::Fhir(doc.path(n)), pid);
                }
            }
        }
        if (el.must_have_value || !el.value_alternatives.is_empty())
            && !doc.node(n).has_value()
            && doc.node(n).ty.is_some_and(|t| defs::kind(t) == defs::Kind::Primitive)
        {
            // A primitive with extensions only: R5's value controls (R4's cross-version
            // extensions), as the reference validator applies them.
            let alternative = || {
                doc.named(n, "extension").any(|x| {
                    doc.named(x, "url")
                        .any(|u| text(doc, u).is_some_and(|u| el.value_alternatives.iter().any(|a| a == u)))
                })
            };
            if el.must_have_value || !alternative() {
                self.push(Code::PROFILE_VALUE_ABSENT, Severity::Error, Location::Fhir(doc.path(n)), pid);
            }
        }
        if (el.narrative_language.is_some() || el.narrative_source.is_some()) && type_of(doc, n) == "Narrative" {
            self.narrative(n, el, pid);
        }
        for c in el.constraints.iter().filter(|c| !c.core) {
            self.invariant(n, c, pid);
        }
        // Type profiles (an extension's definition is checked on its own, see `extensions`).
        let tn = type_of(doc, n);
        let is_resource = doc.node(n).is_resource();
        let mut wanted: Vec<(String, Option<String>)> = Vec::new();
        for t in &el.types {
            if t.code == "Extension" || t.profiles.is_empty() {
                continue;
            }
            let backbone = t.code == "BackboneElement" && doc.node(n).ty.is_none();
            if t.code == tn || backbone || (is_resource && (t.code == "Resource" || t.code == "DomainResource")) {
                wanted.extend(
                    t.profile_targets()
                        .filter(|(p, e)| {
                            !p.starts_with(conformance::CORE_SD)
                                && (e.is_some() || p.split('|').next() != Some(snap.url.as_str()))
                        })
                        .map(|(p, e)| (p.to_owned(), e.map(str::to_owned))),
                );
            }
        }
        // A resource whose element's type profiles are all core resource definitions
        // (`Bundle.entry.resource` profiled as `.../StructureDefinition/DocumentManifest`) is one
        // of those types.
        if is_resource {
            let mut core_types: Vec<String> = Vec::new();
            let mut other = false;
            for t in el.types.iter().filter(|t| t.code == "Resource" || t.code == "DomainResource") {
                for p in &t.profiles {
                    match p.starts_with(conformance::CORE_SD).then(|| self.type_of_profile(p)).flatten() {
                        Some(name) if name != "Resource" && name != "DomainResource" => core_types.push(name),
                        _ => other = true,
                    }
                }
            }
            if !other && !core_types.is_empty() && !core_types.iter().any(|t| t == tn) {
                self.push(Code::PROFILE_TYPE, Severity::Error, Location::Fhir(doc.path(n)), pid);
            }
        }
        match wanted.as_slice() {
            [] => {}
            [(one, e)] => self.type_profile(n, one, e.as_deref(), depth),
            many => {
                let fits = many.iter().any(|(p, e)| self.conforms_to_element(n, p, e.as_deref(), depth + 1));
                if !fits {
                    self.type_profile(n, &many[0].0, many[0].1.as_deref(), depth);
                }
            }
        }
    }

    /// The narrative controls of a profile on a Narrative `n`, read from its XHTML `div`:
    /// language sections (the `div`'s child elements with `lang` or `xml:lang`) required,
    /// prohibited, or required for the resource's language or a given one
    /// (`narrative-language-control`), and content attributed to a source by its `class`
    /// (`narrative-source-control`: every child element of the `div`, or of each language
    /// section, classed `boilerplate`, `generated`, `original`, `extensions` or `additional`,
    /// and no bare text), at the severity the extension gives. One finding per rule, at the
    /// `div`; languages and texts are compared, never reported.
    fn narrative(&mut self, n: u32, el: &Element, pid: Option<ProfileId>) {
        let doc = self.doc;
        let Some(div) = doc.children(n).find(|&c| doc.node(c).name == "div" && doc.node(c).has_value()) else {
            return;
        };
        let xhtml = value(doc, div);
        let limits =
            crate::limits::Limits { max_input_bytes: xhtml.len() as u64 + 1, ..crate::limits::Limits::default() };
        // A div that is not well-formed is the base validation's finding.
        let Ok(tree) = crate::formats::xml::parse(xhtml, &limits) else { return };
        let attr = |e: u32, name: &[u8], xml_ns: bool| {
            tree.attrs_of(e)
                .iter()
                .find(|a| {
                    let ns_ok = if xml_ns { tree.namespace_is(a.ns, XML_NAMESPACE) } else { a.ns == NsId::NONE };
                    ns_ok && a.local.of(xhtml) == name
                })
                .map(|a| xml_value(&tree, a.value))
        };
        let lang = |e: u32| attr(e, b"lang", true).or_else(|| attr(e, b"lang", false));
        let sections: Vec<(u32, &[u8])> = tree.children(0).filter_map(|c| Some((c, lang(c)?))).collect();
        let at = || Location::Fhir(doc.path(div));
        if let Some(control) = el.narrative_language.as_deref() {
            let wanted: Option<&[u8]> = match control {
                "_yes" | "_no" => None,
                "_resource" => {
                    let r = doc.resource_of(n);
                    doc.children(r)
                        .find(|&c| doc.node(c).name == "language" && doc.node(c).has_value())
                        .map(|c| value(doc, c))
                }
                other => Some(other.as_bytes()),
            };
            let bad = match control {
                "_yes" => sections.is_empty(),
                "_no" => !sections.is_empty(),
                _ => wanted.is_some_and(|w| !sections.iter().any(|(_, l)| l.eq_ignore_ascii_case(w))),
            };
            if bad {
                self.push(Code::PROFILE_NARRATIVE_LANGUAGE, Severity::Error, at(), pid);
            }
        }
        if let Some(level) = el.narrative_source.as_deref() {
            let severity = match level {
                "error" | "fatal" => Severity::Error,
                "information" => Severity::Information,
                _ => Severity::Warning,
            };
            let containers: Vec<u32> =
                if sections.is_empty() { vec![0] } else { sections.iter().map(|&(c, _)| c).collect() };
            let sourced = |e: u32| {
                attr(e, b"class", false).is_some_and(|class| {
                    class.split(u8::is_ascii_whitespace).any(|t| {
                        [&b"boilerplate"[..], b"generated", b"original", b"extensions", b"additional"].contains(&t)
                    })
                })
            };
            let unsourced =
                containers.iter().any(|&c| tree.texts_of(c).next().is_some() || tree.children(c).any(|e| !sourced(e)));
            if unsourced {
                self.push(Code::PROFILE_NARRATIVE_SOURCE, severity, at(), pid);
            }
        }
    }

    fn type_profile(&mut self, n: u32, url: &str, element: Option<&str>, depth: u32) {
        let Some(snap) = self.conf.snapshot(url) else {
            // A profile the element's type names that is not loaded: the element cannot be
            // checked against it, an error as the reference validator reports ("Unknown
            // profile"); a profile of the R4 core that is not built in is the core's check.
            if !url.starts_with(conformance::CORE_SD) {
                let pid = crate::structure::profile_id(url.split('|').next().unwrap_or(url));
                self.push(Code::PROFILE_UNKNOWN, Severity::Error, Location::Fhir(self.doc.path(n)), pid);
            }
            return;
        };
        let e = match element {
            Some(id) => match snap.find(id) {
                Some(e) => e,
                None => return,
            },
            None => 0,
        };
        let pid = crate::structure::profile_id(&snap.url);
        self.node(n, &snap, e, pid, depth + 1);
    }

    /// How a `date`, `dateTime` or `instant` node orders against a `minValueDuration`
    /// (`below`) or `maxValueDuration` bound: now minus or plus the duration ([`super::now`]).
    /// Without `--now` the bound is not compared, and that is said once per profile element
    /// (`PROFILE_VALUE_DURATION_NO_NOW`).
    fn duration_order(
        &mut self,
        n: u32,
        duration: &Value,
        below: bool,
        snap: &Snapshot,
        el: &Element,
        pid: Option<ProfileId>,
    ) -> Option<Ordering> {
        let doc = self.doc;
        if !matches!(type_of(doc, n), "date" | "dateTime" | "instant") {
            return None;
        }
        let text = text(doc, n)?;
        let Some(now) = self.now else {
            let key = format!("{}#{}", snap.url, el.id);
            if self.once(Code::PROFILE_VALUE_DURATION_NO_NOW, &key) {
                self.push(Code::PROFILE_VALUE_DURATION_NO_NOW, Severity::Information, Location::Fhir(doc.path(n)), pid);
            }
            return None;
        };
        now.bound(duration, below)?.order_of(text)
    }

    /// Whether a code-bearing node is in an expansion; `None` without a code.
    fn in_expansion(&self, n: u32, exp: &conformance::Expansion) -> Option<bool> {
        in_expansion(self.doc, n, exp)
    }

    /// An additional binding (R5's `binding.additional`, R4's extensions), by its purpose, as
    /// the reference validator checks them: `required` and `maximum` (the codes shall come from
    /// the value set) an error when the element (none of its codings) is not in it, `extensible`
    /// a warning. The others say what systems support or show (`minimum`, `current`,
    /// `preferred`, `ui`, `starter`, `component`) and are not checked; neither is a binding
    /// limited to usage contexts (`usage`: phiward does not know the context of the data). With
    /// `any`, one repetition of the element in the value set is enough.
    fn additional_binding(&mut self, n: u32, ab: &conformance::AdditionalBinding, pid: Option<ProfileId>) {
        let doc = self.doc;
        let severity = match ab.purpose.as_str() {
            "required" | "maximum" => Severity::Error,
            "extensible" => Severity::Warning,
            _ => return,
        };
        if ab.has_usage
            || !matches!(type_of(doc, n), "code" | "string" | "uri" | "Coding" | "Quantity" | "CodeableConcept")
        {
            return;
        }
        let Some(exp) = self.expansion_or_note(n, &ab.value_set, pid) else {
            return;
        };
        if self.in_expansion(n, &exp) != Some(false) {
            return;
        }
        let node = doc.node(n);
        if ab.any && node.parent != NONE {
            // Another repetition of the element in the value set meets the binding.
            let name = node.name;
            if doc
                .children(node.parent)
                .any(|c| c != n && doc.node(c).name == name && self.in_expansion(c, &exp) == Some(true))
            {
                return;
            }
        }
        self.push(Code::PROFILE_BINDING_ADDITIONAL, severity, Location::Fhir(doc.path(n)), pid);
    }

    /// The offline expansion of the value set `vs` a binding at node `n` names; when there is
    /// none, `CONFORMANCE_VALUESET_UNEXPANDABLE` once per value set (information).
    fn expansion_or_note(
        &mut self,
        n: u32,
        vs: &str,
        pid: Option<ProfileId>,
    ) -> Option<std::sync::Arc<conformance::Expansion>> {
        let exp = self.conf.expansion(vs);
        if exp.is_none() {
            let bare = vs.split('|').next().unwrap_or(vs);
            if self.once(Code::CONFORMANCE_VALUESET_UNEXPANDABLE, bare) {
                let at = Location::Fhir(self.doc.path(n));
                self.push(Code::CONFORMANCE_VALUESET_UNEXPANDABLE, Severity::Information, at, pid);
            }
        }
        exp
    }

    fn binding(&mut self, n: u32, strength: Strength, vs: &str, pid: Option<ProfileId>) {
        let doc = self.doc;
        if !matches!(type_of(doc, n), "code" | "string" | "uri" | "Coding" | "Quantity" | "CodeableConcept") {
            return;
        }
        let bare = vs.split('|').next().unwrap_or(vs);
        // The same value set as the core binding: the core validation checks it.
        let core =
            doc.node(n).elem.and_then(defs::element).and_then(|d| d.binding).and_then(|(_, k)| defs::value_set(k));
        if core.is_some_and(|c| c.url == bare) {
            return;
        }
        let Some(exp) = self.expansion_or_note(n, vs, pid) else {
            return;
        };
        if self.in_expansion(n, &exp) == Some(false) {
            let severity = if strength == Strength::Required { Severity::Error } else { Severity::Warning };
            self.push(Code::PROFILE_BINDING, severity, Location::Fhir(doc.path(n)), pid);
        }
    }

    fn invariant(&mut self, n: u32, c: &conformance::Constraint, pid: Option<ProfileId>) {
        let doc = self.doc;
        let expr = match self.compiled.get(c.expression.as_str()) {
            Some(e) => e.clone(),
            None => {
                let e = parse::compile(&c.expression).ok().map(Arc::new);
                self.compiled.insert(c.expression.clone(), e.clone());
                e
            }
        };
        let result = match expr {
            Some(e) => {
                fhirpath::env_for(doc, n, self.nav).with_value_sets(Box::new(StoreValueSets(self.conf))).run(&e).ok()
            }
            None => None,
        };
        match result {
            Some(Some(true) | None) => {}
            Some(Some(false)) => {
                let mut path = doc.path(n);
                path.invariant = Some(intern_key(&c.key));
                let severity = if c.error { Severity::Error } else { Severity::Warning };
                self.push(Code::PROFILE_INVARIANT, severity, Location::Fhir(path), pid);
            }
            None => {
                if self.once(Code::PROFILE_INVARIANT_UNCHECKED, &c.key) {
                    let mut path = doc.path(n);
                    path.invariant = Some(intern_key(&c.key));
                    self.push(Code::PROFILE_INVARIANT_UNCHECKED, Severity::Information, Location::Fhir(path), pid);
                }
            }
        }
    }

    /// False when `contextInvariant` `c` of an extension's definition, evaluated on node
    /// `parent` (the element the extension is on), is false. An empty result, or an expression
    /// the engine cannot evaluate, does not show the rule broken.
    fn context_invariant_holds(&mut self, parent: u32, c: &str) -> bool {
        let expr = self.compiled.entry(c.to_owned()).or_insert_with(|| parse::compile(c).ok().map(Arc::new)).clone();
        !matches!(expr.map(|e| fhirpath::env_for(self.doc, parent, self.nav).run(&e)), Some(Ok(Some(false))))
    }

    /// True when an extension whose parent is node `parent` is used where context `c` allows.
    fn in_context(&mut self, parent: u32, kind: ContextKind, c: &str) -> bool {
        let doc = self.doc;
        match kind {
            ContextKind::Element => super::extensions::in_context(doc, parent, c),
            ContextKind::Extension => {
                // On the extension of that URL, or on its value.
                let mut e = parent;
                if doc.node(e).name == "value" && doc.node(e).parent != NONE {
                    e = doc.node(e).parent;
                }
                let p = doc.node(e);
                !p.is_unknown()
                    && (p.name == "extension" || p.name == "modifierExtension")
                    && doc.named(e, "url").find_map(|u| text(doc, u)) == Some(c)
            }
            ContextKind::FhirPath => {
                let expr =
                    self.compiled.entry(c.to_owned()).or_insert_with(|| parse::compile(c).ok().map(Arc::new)).clone();
                // From the resource holding the parent; an expression the engine cannot
                // evaluate allows the use (no finding it cannot stand by).
                let resource = doc.resource_of(parent);
                match expr.map(|e| fhirpath::env_for(doc, resource, self.nav).nodes(&e)) {
                    Some(Ok(nodes)) => nodes.contains(&parent),
                    _ => true,
                }
            }
        }
    }

    /// Every extension whose definition is loaded, against it; unknown ones reported.
    fn extensions(&mut self) {
        let doc = self.doc;
        for i in 0..doc.nodes().len() as u32 {
            let node = doc.node(i);
            if node.is_unknown() || !(node.name == "extension" || node.name == "modifierExtension") {
                continue;
            }
            if type_of(doc, i) != "Extension" {
                continue;
            }
            let Some(url) = doc.named(i, "url").find_map(|u| text(doc, u)) else { continue };
            let decided_by_core = super::extensions::decided_by_core(url.as_bytes());
            if !url.contains(':') || (decided_by_core && !super::extensions::core_reports_unknown(url.as_bytes())) {
                // A part of a complex extension, or a core, extensions pack or cross-version
                // extension (checked by the core).
                continue;
            }
            let snap = self.conf.snapshot(url);
            if decided_by_core {
                // The core's check reported it unknown (`EXTENSION_UNKNOWN`: undefined in the
                // core's namespace, or no element of the version a cross-version url names): a
                // loaded package that defines it (a newer extensions pack) makes it known.
                if snap.is_some() {
                    self.f.retract(Code::EXTENSION_UNKNOWN, Location::Fhir(doc.path(i)));
                } else {
                    continue;
                }
            }
            let Some(snap) = snap else {
                // Defined nowhere: an error, as the reference validator reports it, unless its
                // options allow it (example domains, `--allow-extension-domain`...).
                if !super::extensions::unknown_allowed(url.as_bytes(), self.checks) {
                    self.push(Code::PROFILE_EXTENSION_UNKNOWN, Severity::Error, Location::Fhir(doc.path(i)), None);
                }
                continue;
            };
            let pid = crate::structure::profile_id(&snap.url);
            let parent = node.parent;
            // Outside every context, or where a context invariant is false.
            if parent != NONE
                && ((!snap.contexts.is_empty()
                    && !snap.contexts.iter().any(|(kind, c)| self.in_context(parent, *kind, c)))
                    || !snap.context_invariants.iter().all(|c| self.context_invariant_holds(parent, c)))
            {
                self.push(Code::PROFILE_EXTENSION_CONTEXT, Severity::Error, Location::Fhir(doc.path(i)), pid);
            }
            // `modifierExtension` exactly when the definition is a modifier (its root's
            // `isModifier`), as for the core's definitions.
            if snap.elements.first().is_some_and(|root| root.is_modifier) != (node.name == "modifierExtension") {
                self.push(Code::EXTENSION_MODIFIER_MISMATCH, Severity::Error, Location::Fhir(doc.path(i)), pid);
            }
            self.node(i, &snap, 0, pid, 0);
        }
    }
}

/// Whether a code-bearing node is in an expansion: a code, string or uri by its value, a
/// Coding or Quantity by system and code, a CodeableConcept when one of its codings is; `None`
/// without a code.
fn in_expansion(doc: &Document, n: u32, exp: &conformance::Expansion) -> Option<bool> {
    let coding = |i: u32| -> Option<bool> {
        let code = doc.named(i, "code").find(|&c| doc.node(c).has_value())?;
        let system = doc.named(i, "system").find(|&c| doc.node(c).has_value());
        Some(exp.contains(system.map(|s| value(doc, s)), value(doc, code)))
    };
    match type_of(doc, n) {
        "code" | "string" | "uri" => doc.node(n).has_value().then(|| exp.contains(None, value(doc, n))),
        "Coding" | "Quantity" => coding(n),
        "CodeableConcept" => {
            let mut any = None;
            for c in doc.named(n, "coding") {
                if let Some(hit) = coding(c) {
                    any = Some(any.unwrap_or(false) || hit);
                }
            }
            any
        }
        _ => None,
    }
}

/// `memberOf()` for the invariants of profiles: the value sets the conformance store expands
/// offline (loaded packages and files, the built-in core expansions).
struct StoreValueSets<'d>(&'d Conformance);

impl std::fmt::Debug for StoreValueSets<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreValueSets")
    }
}

impl fhirpath::eval::ValueSets for StoreValueSets<'_> {
    fn member_of(&self, doc: &Document, n: u32, canonical: &str) -> Option<bool> {
        let exp = self.0.expansion(canonical)?;
        // A node with no code (a CodeableConcept with text only) is no member.
        Some(in_expansion(doc, n, &exp).unwrap_or(false))
    }
}

/// How a primitive node's value orders against a profile's `minValue[x]`/`maxValue[x]` of type
/// `kind`: numbers by value; dates, date-times, instants and times by their text when both have
/// the same form (length), which orders ISO 8601 values of one precision and offset. `None`
/// when they cannot be compared (another type, other precisions, a duration).
fn primitive_order(doc: &Document, n: u32, kind: &str, bound: &Value) -> Option<Ordering> {
    let t = text(doc, n)?;
    match kind {
        "Integer" | "Decimal" | "PositiveInt" | "UnsignedInt" | "Integer64" => {
            let a: f64 = t.parse().ok()?;
            let b = match bound {
                Value::Number(x) => x.as_f64()?,
                Value::String(x) => x.parse().ok()?,
                _ => return None,
            };
            a.partial_cmp(&b)
        }
        "Date" | "DateTime" | "Instant" | "Time" => {
            let b = bound.as_str()?;
            (b.len() == t.len()).then(|| t.cmp(b))
        }
        _ => None,
    }
}

/// How a Quantity node orders against a profile's `minValueQuantity`/`maxValueQuantity`: in the
/// same unit, or in UCUM units that differ only by a metric prefix (`g` and `kg`). `None` when
/// the units cannot be compared that way.
fn quantity_order(doc: &Document, n: u32, bound: &Value) -> Option<Ordering> {
    let child = |name: &str| doc.named(n, name).find(|&c| doc.node(c).has_value()).and_then(|c| text(doc, c));
    let value: f64 = child("value")?.parse().ok()?;
    let bound_value = bound.get("value")?.as_f64()?;
    let code = child("code");
    let bound_code = bound.get("code").and_then(Value::as_str);
    let system = child("system");
    let bound_system = bound.get("system").and_then(Value::as_str);
    let (a, b) = match (code, bound_code) {
        (None, None) => (value, bound_value),
        (Some(c), Some(bc)) if c == bc && system == bound_system => (value, bound_value),
        (Some(c), Some(bc)) => {
            const UCUM: &str = "http://unitsofmeasure.org";
            if system != Some(UCUM) || bound_system != Some(UCUM) {
                return None;
            }
            let (fa, base_a) = super::ucum::prefixed(c.as_bytes())?;
            let (fb, base_b) = super::ucum::prefixed(bc.as_bytes())?;
            if base_a != base_b {
                return None;
            }
            (value * fa, bound_value * fb)
        }
        _ => return None,
    };
    a.partial_cmp(&b)
}

/// The slicing assumed when a profile slices without saying how: extensions by url, choices by
/// type.
fn default_slicing(name: &str) -> Slicing {
    let discriminators = if name == "extension" || name == "modifierExtension" {
        vec![(DiscriminatorKind::Value, "url".to_owned())]
    } else {
        vec![(DiscriminatorKind::Type, "$this".to_owned())]
    };
    Slicing { discriminators, ordered: false, closed: false, open_at_end: false }
}

/// True when node `i` holds `v`: exactly (`fixed[x]`: the same elements, no more) or as a
/// pattern (`pattern[x]`: at least those).
fn value_matches(doc: &Document, i: u32, v: &Value, exact: bool, depth: u32) -> bool {
    if depth > 32 {
        return false;
    }
    let node = doc.node(i);
    match v {
        Value::String(s) => node.has_value() && value(doc, i) == s.as_bytes(),
        Value::Bool(b) => node.has_value() && value(doc, i) == if *b { &b"true"[..] } else { &b"false"[..] },
        Value::Number(n) => {
            node.has_value()
                && std::str::from_utf8(value(doc, i))
                    .ok()
                    .and_then(|t| t.parse::<f64>().ok())
                    .zip(n.as_f64())
                    .is_some_and(|(a, b)| a == b)
        }
        Value::Object(map) => {
            for (k, vv) in map {
                if k.starts_with('_') || k == "resourceType" {
                    continue;
                }
                let kids: Vec<u32> = doc.children(i).filter(|&c| json_name_is(doc, c, k)).collect();
                let ok = match vv {
                    Value::Array(items) => {
                        if exact {
                            kids.len() == items.len()
                                && kids.iter().zip(items).all(|(&c, item)| value_matches(doc, c, item, true, depth + 1))
                        } else {
                            items.iter().all(|item| kids.iter().any(|&c| value_matches(doc, c, item, false, depth + 1)))
                        }
                    }
                    other => {
                        (!exact || kids.len() == 1)
                            && kids.iter().any(|&c| value_matches(doc, c, other, exact, depth + 1))
                    }
                };
                if !ok {
                    return false;
                }
            }
            if exact {
                return doc.children(i).all(|c| map.keys().any(|k| json_name_is(doc, c, k)));
            }
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::structure::SourceId;

    fn context(resources: &[&str], profiles: &[&str]) -> Context {
        let mut conformance = Conformance::new();
        for r in resources {
            conformance.add_json(r.as_bytes(), SourceId(0)).expect("adds");
        }
        Context { conformance, profiles: profiles.iter().map(|p| (*p).to_owned()).collect(), must_support: false }
    }

    fn findings(ctx: &Context, input: &str) -> Vec<String> {
        let doc = crate::formats::fhir::read(input.as_bytes().to_vec(), &Limits::default()).expect("reads");
        check(&doc, ctx)
            .iter()
            .map(|d| {
                let p = d.profile.and_then(crate::structure::profile_canonical).unwrap_or("-");
                format!("{} {} {} {}", d.code.as_str(), d.severity.as_str(), d.location, p)
            })
            .collect()
    }

    const OBS: &str = r#"{"resourceType":"StructureDefinition","url":"http://example.org/obs","type":"Observation",
        "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Observation","derivation":"constraint",
        "differential":{"element":[
          {"id":"Observation.status","path":"Observation.status","fixedCode":"final"},
          {"id":"Observation.category","path":"Observation.category","min":1,"patternCodeableConcept":{"coding":[{"system":"http://example.org/cat","code":"vital"}]}},
          {"id":"Observation.subject","path":"Observation.subject","min":1},
          {"id":"Observation.code","path":"Observation.code","binding":{"strength":"required","valueSet":"http://example.org/vs"}},
          {"id":"Observation.code.coding","path":"Observation.code.coding","slicing":{"discriminator":[{"type":"value","path":"system"}],"rules":"closed"}},
          {"id":"Observation.code.coding:ex","path":"Observation.code.coding","sliceName":"ex","min":1,"max":"1"},
          {"id":"Observation.code.coding:ex.system","path":"Observation.code.coding.system","fixedUri":"http://example.org/cs"},
          {"id":"Observation.value[x]","path":"Observation.value[x]","type":[{"code":"Quantity"}],
           "constraint":[{"key":"ex-1","severity":"error","human":"positive","expression":"value > 0"}]},
          {"id":"Observation.note","path":"Observation.note","max":"0"}
        ]}}"#;
    const CS: &str = r#"{"resourceType":"CodeSystem","url":"http://example.org/cs","content":"complete","concept":[{"code":"a"},{"code":"b"}]}"#;
    const VS: &str = r#"{"resourceType":"ValueSet","url":"http://example.org/vs","compose":{"include":[{"system":"http://example.org/cs","concept":[{"code":"a"}]}]}}"#;

    fn obs(body: &str) -> String {
        format!(r#"{{"resourceType":"Observation","meta":{{"profile":["http://example.org/obs"]}},{body}}}"#)
    }

    /// Regression (patient-ig-bad of the reference suite): a loaded ImplementationGuide's global
    /// profile applies to every resource of its type (the root and contained ones), named in
    /// `meta.profile` or not; resources of other types and a guide without `global` add nothing.
    #[test]
    fn global_profiles_of_loaded_guides_apply_to_their_type() {
        let sd = r#"{"resourceType":"StructureDefinition","url":"http://example.org/pat","type":"Patient",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Patient","derivation":"constraint",
            "differential":{"element":[{"id":"Patient.name","path":"Patient.name","min":1}]}}"#;
        let ig = r#"{"resourceType":"ImplementationGuide","url":"http://example.org/ig","status":"active",
            "packageId":"example.ig","fhirVersion":["4.0.1"],"global":[{"type":"Patient","profile":"http://example.org/pat"}]}"#;
        let plain = r#"{"resourceType":"ImplementationGuide","url":"http://example.org/ig2","status":"active",
            "packageId":"example.ig2","fhirVersion":["4.0.1"]}"#;
        let patient = r##"{"resourceType":"Patient","active":true,"contained":[{"resourceType":"Patient","id":"p"}],"link":[{"other":{"reference":"#p"},"type":"seealso"}]}"##;
        let p = "http://example.org/pat";
        assert_eq!(
            findings(&context(&[sd, ig], &[]), patient),
            [
                format!("PROFILE_CARDINALITY_MIN error Patient.name {p}"),
                format!("PROFILE_CARDINALITY_MIN error Patient.contained[0].name {p}"),
            ]
        );
        assert!(findings(&context(&[sd, plain], &[]), patient).is_empty());
        let named = r#"{"resourceType":"Patient","name":[{"family":"x"}]}"#;
        assert!(findings(&context(&[sd, ig], &[]), named).is_empty());
        let other = r#"{"resourceType":"Organization","name":"o"}"#;
        assert!(findings(&context(&[sd, ig], &[]), other).is_empty());
    }

    /// Regression (ext-derived of the reference suite): an extension derived from a loaded one
    /// cannot fix `Extension.url` (or another fixed primitive) to another value; the same value,
    /// an element the base leaves free, and a base that is not loaded are not reported.
    #[test]
    fn a_derived_definition_keeps_its_bases_fixed_values() {
        let base = r#"{"resourceType":"StructureDefinition","url":"http://example.org/ext-base","type":"Extension","kind":"complex-type",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Extension","derivation":"constraint",
            "differential":{"element":[{"id":"Extension.url","path":"Extension.url","fixedUri":"http://example.org/ext-base"},
            {"id":"Extension.value[x]","path":"Extension.value[x]","type":[{"code":"string"}]}]}}"#;
        let derived = |url: &str, string: &str| {
            format!(
                r#"{{"resourceType":"StructureDefinition","url":"http://example.org/ext-derived","name":"D","status":"draft","kind":"complex-type","abstract":false,"type":"Extension","baseDefinition":"http://example.org/ext-base","derivation":"constraint","differential":{{"element":[{{"id":"Extension.url","path":"Extension.url","fixedUri":"{url}"}},{{"id":"Extension.value[x]","path":"Extension.value[x]","fixedString":"{string}"}}]}}}}"#
            )
        };
        let ctx = context(&[base], &[]);
        assert_eq!(
            findings(&ctx, &derived("http://example.org/ext-derived", "s")),
            [
                "STRUCTUREDEFINITION_FIXED_CONFLICT error StructureDefinition.differential.element[0].fixedUri http://example.org/ext-base"
            ]
        );
        assert!(findings(&ctx, &derived("http://example.org/ext-base", "s")).is_empty());
        // Regression (logical-boo-bad2): a specialization of a loaded logical model defines a
        // new type, not the base's.
        let foo = r#"{"resourceType":"StructureDefinition","url":"http://example.org/Foo","type":"http://example.org/Foo","kind":"logical",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Base","derivation":"specialization",
            "differential":{"element":[{"id":"Foo","path":"Foo"}]}}"#;
        let boo = |ty: &str| {
            format!(
                r#"{{"resourceType":"StructureDefinition","url":"http://example.org/Boo","name":"Boo","status":"draft","kind":"logical","abstract":false,"type":"{ty}","baseDefinition":"http://example.org/Foo","derivation":"specialization"}}"#
            )
        };
        let ctx = context(&[foo], &[]);
        assert_eq!(
            findings(&ctx, &boo("http://example.org/Foo")),
            ["STRUCTUREDEFINITION_SPECIALIZATION_TYPE error StructureDefinition.type -"]
        );
        assert!(findings(&ctx, &boo("http://example.org/Boo")).is_empty());
        assert!(findings(&context(&[], &[]), &derived("http://example.org/ext-derived", "s")).is_empty());
    }

    #[test]
    fn a_conformant_instance_has_no_finding() {
        let ctx = context(&[OBS, CS, VS], &[]);
        let f = findings(
            &ctx,
            &obs(
                r#""status":"final","category":[{"coding":[{"system":"http://example.org/cat","code":"vital","display":"x"}]}],"code":{"coding":[{"system":"http://example.org/cs","code":"a"}]},"subject":{"reference":"Patient/1"},"valueQuantity":{"value":3}"#,
            ),
        );
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn cardinality_fixed_pattern_binding_slices_type_and_invariant() {
        let ctx = context(&[OBS, CS, VS], &[]);
        let f = findings(
            &ctx,
            &obs(
                r#""status":"preliminary","category":[{"coding":[{"system":"http://example.org/cat","code":"other"}]}],"code":{"coding":[{"system":"http://example.org/cs","code":"b"},{"system":"http://other","code":"z"}]},"valueQuantity":{"value":-1},"note":[{"text":"n"}]"#,
            ),
        );
        let p = "http://example.org/obs";
        assert_eq!(
            f,
            [
                format!("PROFILE_FIXED error Observation.status {p}"),
                format!("PROFILE_PATTERN error Observation.category[0] {p}"),
                format!("PROFILE_BINDING error Observation.code {p}"),
                format!("SLICE_UNMATCHED error Observation.code.coding[1] {p}"),
                format!("PROFILE_CARDINALITY_MIN error Observation.subject {p}"),
                format!("PROFILE_INVARIANT error Observation.valueQuantity/invariant:ex-1 {p}"),
                format!("PROFILE_CARDINALITY_MAX error Observation.note[0] {p}"),
            ]
        );
        let g = findings(
            &ctx,
            &obs(
                r#""status":"final","category":[{"coding":[{"system":"http://example.org/cat","code":"vital"}]}],"code":{"coding":[{"system":"http://other","code":"a"}]},"subject":{"reference":"Patient/1"},"valueString":"s""#,
            ),
        );
        assert_eq!(
            g,
            [
                format!("PROFILE_BINDING error Observation.code {p}"),
                format!("SLICE_UNMATCHED error Observation.code.coding[0] {p}"),
                format!("SLICE_CARDINALITY_MIN error Observation.code.coding {p}"),
                format!("PROFILE_TYPE error Observation.valueString {p}"),
            ]
        );
    }

    #[test]
    fn slicing_by_pattern_and_type_and_extensions_by_definition() {
        let profile = r#"{"resourceType":"StructureDefinition","url":"http://example.org/pat","type":"Patient",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Patient","derivation":"constraint",
            "differential":{"element":[
              {"id":"Patient.identifier","path":"Patient.identifier","slicing":{"discriminator":[{"type":"pattern","path":"type"}],"rules":"open"}},
              {"id":"Patient.identifier:mrn","path":"Patient.identifier","sliceName":"mrn","min":1,"max":"1","patternIdentifier":{"type":{"coding":[{"code":"MR"}]}}},
              {"id":"Patient.identifier:mrn.type","path":"Patient.identifier.type","patternCodeableConcept":{"coding":[{"code":"MR"}]}},
              {"id":"Patient.extension:eye","path":"Patient.extension","sliceName":"eye","min":1,"type":[{"code":"Extension","profile":["http://example.org/eye"]}]}
            ]}}"#;
        let ext = r#"{"resourceType":"StructureDefinition","url":"http://example.org/eye","type":"Extension",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Extension","derivation":"constraint",
            "context":[{"type":"element","expression":"Patient"}],
            "differential":{"element":[
              {"id":"Extension.url","path":"Extension.url","fixedUri":"http://example.org/eye"},
              {"id":"Extension.value[x]","path":"Extension.value[x]","min":1,"type":[{"code":"code"}]}
            ]}}"#;
        let ctx = context(&[profile, ext], &["http://example.org/pat"]);
        let ok = findings(
            &ctx,
            r#"{"resourceType":"Patient","extension":[{"url":"http://example.org/eye","valueCode":"blue"}],"identifier":[{"type":{"coding":[{"code":"MR"}]},"value":"1"},{"value":"2"}]}"#,
        );
        assert!(ok.is_empty(), "{ok:?}");
        let bad = findings(
            &ctx,
            r#"{"resourceType":"Patient","extension":[{"url":"http://extensions.test/unknown","valueCode":"x"}],"identifier":[{"type":{"coding":[{"code":"MR"}]}},{"type":{"coding":[{"code":"MR"}]}}],"name":[{"extension":[{"url":"http://example.org/eye","valueString":"blue"}]}]}"#,
        );
        let p = "http://example.org/pat";
        let e = "http://example.org/eye";
        assert_eq!(
            bad,
            [
                format!("SLICE_CARDINALITY_MIN error Patient.extension {p}"),
                format!("SLICE_CARDINALITY_MAX error Patient.identifier[1] {p}"),
                "PROFILE_EXTENSION_UNKNOWN error Patient.extension[0] -".to_owned(),
                format!("PROFILE_EXTENSION_CONTEXT error Patient.name[0].extension[0] {e}"), // value-free: a test expectation; `e` is a canonical URL constant
                format!("PROFILE_TYPE error Patient.name[0].extension[0].valueString {e}"), // value-free: a test expectation; `e` is a canonical URL constant
            ]
        );
        // An unknown meta.profile is a warning without a profile property.
        let unknown =
            findings(&context(&[], &[]), r#"{"resourceType":"Patient","meta":{"profile":["http://example.org/x"]}}"#);
        assert_eq!(unknown, ["PROFILE_UNKNOWN warning Patient.meta.profile[0] -"]);
    }

    /// A document Bundle profile slicing `entry` by resource type and profile, with a
    /// Composition profile that slices its section entries by the profile of the resource each
    /// refers to (`resolve()`), one item each.
    const DOC_BUNDLE: &str = r#"{"resourceType":"StructureDefinition","url":"http://example.org/docb","type":"Bundle",
        "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Bundle","derivation":"constraint",
        "differential":{"element":[
          {"id":"Bundle.entry","path":"Bundle.entry","slicing":{"discriminator":[{"type":"type","path":"resource"},{"type":"profile","path":"resource"}],"rules":"open"}},
          {"id":"Bundle.entry:composition","path":"Bundle.entry","sliceName":"composition","min":1,"max":"1"},
          {"id":"Bundle.entry:composition.resource","path":"Bundle.entry.resource","min":1,"type":[{"code":"Composition","profile":["http://example.org/comp"]}]}
        ]}}"#;
    const COMP: &str = r#"{"resourceType":"StructureDefinition","url":"http://example.org/comp","type":"Composition",
        "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Composition","derivation":"constraint",
        "differential":{"element":[
          {"id":"Composition.section","path":"Composition.section","min":1},
          {"id":"Composition.section.entry","path":"Composition.section.entry","slicing":{"discriminator":[{"type":"profile","path":"resolve()"}],"rules":"open"}},
          {"id":"Composition.section.entry:first","path":"Composition.section.entry","sliceName":"first","min":0,"max":"1","type":[{"code":"Reference","targetProfile":["http://example.org/obs-final"]}]},
          {"id":"Composition.section.entry:second","path":"Composition.section.entry","sliceName":"second","min":0,"max":"1","type":[{"code":"Reference","targetProfile":["http://example.org/obs-prelim"]}]}
        ]}}"#;
    const OBS_FINAL: &str = r#"{"resourceType":"StructureDefinition","url":"http://example.org/obs-final","type":"Observation",
        "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Observation","derivation":"constraint",
        "differential":{"element":[{"id":"Observation.status","path":"Observation.status","fixedCode":"final"}]}}"#;
    const OBS_PRELIM: &str = r#"{"resourceType":"StructureDefinition","url":"http://example.org/obs-prelim","type":"Observation",
        "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Observation","derivation":"constraint",
        "differential":{"element":[{"id":"Observation.status","path":"Observation.status","fixedCode":"preliminary"}]}}"#;

    fn document(section: &str, entries: &str) -> String {
        let comp = format!(
            r#"{{"resourceType":"Composition","status":"final","type":{{"text":"t"}},"date":"2020-01-01","author":[{{"display":"a"}}],"title":"t"{section}}}"#
        );
        format!(
            r#"{{"resourceType":"Bundle","meta":{{"profile":["http://example.org/docb"]}},"type":"document","identifier":{{"value":"1"}},"timestamp":"2020-01-01T00:00:00Z",
            "entry":[{{"fullUrl":"urn:uuid:00000000-0000-0000-0000-000000000001","resource":{comp}}}{entries}]}}"#
        )
    }

    #[test]
    fn resolve_discriminators_match_the_resource_referred_to() {
        let ctx = context(&[DOC_BUNDLE, COMP, OBS_FINAL, OBS_PRELIM], &[]);
        let obs = |n: u32, status: &str| {
            format!(
                r#",{{"fullUrl":"urn:uuid:00000000-0000-0000-0000-00000000000{n}","resource":{{"resourceType":"Observation","id":"o{n}","status":"{status}","code":{{"text":"c"}}}}}}"#
            )
        };
        // One entry for each slice (by fullUrl and by Type/id): each matches its own.
        let both = document(
            r#","section":[{"entry":[{"reference":"urn:uuid:00000000-0000-0000-0000-000000000002"},{"reference":"Observation/o3"}]}]"#,
            &(obs(2, "final") + &obs(3, "preliminary")),
        );
        assert!(findings(&ctx, &both).is_empty(), "{:?}", findings(&ctx, &both));
        // Two entries for the one-item slice: the second is one too many, so the Composition
        // fails its profile and the Bundle's composition slice is empty (the reason given).
        let two = document(
            r#","section":[{"entry":[{"reference":"urn:uuid:00000000-0000-0000-0000-000000000002"},{"reference":"urn:uuid:00000000-0000-0000-0000-000000000003"}]}]"#,
            &(obs(2, "final") + &obs(3, "final")),
        );
        assert_eq!(
            findings(&ctx, &two),
            [
                "SLICE_CARDINALITY_MIN error Bundle.entry http://example.org/docb",
                "SLICE_CARDINALITY_MAX information Bundle.entry[0].resource.section[0].entry[1] http://example.org/comp"
            ]
        );
        // A reference that leaves the Bundle matches no slice (the slicing is open).
        let outside = document(r#","section":[{"entry":[{"reference":"Observation/elsewhere"}]}]"#, "");
        assert!(findings(&ctx, &outside).is_empty(), "{:?}", findings(&ctx, &outside));
    }

    #[test]
    fn a_missing_slice_comes_with_why_the_item_meant_for_it_did_not_match() {
        let ctx = context(&[DOC_BUNDLE, COMP, OBS_FINAL, OBS_PRELIM], &[]);
        // The Composition has no section: it fails its profile, so entry:composition is empty;
        // the reason is given as information at the Composition's own element.
        let bad = document("", "");
        assert_eq!(
            findings(&ctx, &bad),
            [
                "SLICE_CARDINALITY_MIN error Bundle.entry http://example.org/docb".to_owned(),
                "PROFILE_CARDINALITY_MIN information Bundle.entry[0].resource.section http://example.org/comp"
                    .to_owned(),
            ]
        );
        // A Patient in the Bundle is not explained: its type matches no slice.
        let patient =
            r#",{"fullUrl":"urn:uuid:00000000-0000-0000-0000-000000000009","resource":{"resourceType":"Patient"}}"#;
        assert_eq!(findings(&ctx, &document("", patient)).len(), 2);
        let good = document(
            r#","section":[{"title":"s","text":{"status":"generated","div":"<div xmlns=\"http://www.w3.org/1999/xhtml\">x</div>"}}]"#,
            "",
        );
        assert!(findings(&ctx, &good).is_empty(), "{:?}", findings(&ctx, &good));
    }

    #[test]
    fn narrative_language_sections_and_source_classes() {
        let profile = |id: &str, url: &str, code: &str| {
            format!(
                r#"{{"resourceType":"StructureDefinition","url":"http://example.org/{id}","type":"Patient",
                "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Patient","derivation":"constraint",
                "differential":{{"element":[{{"id":"Patient.text","path":"Patient.text",
                  "extension":[{{"url":"http://hl7.org/fhir/StructureDefinition/{url}","valueCode":"{code}"}}]}}]}}}}"#
            )
        };
        let patient = |lang: &str, div: &str| {
            let language = if lang.is_empty() { String::new() } else { format!(r#""language":"{lang}","#) };
            format!(
                r#"{{"resourceType":"Patient",{language}"text":{{"status":"generated","div":"<div xmlns=\"http://www.w3.org/1999/xhtml\">{div}</div>"}}}}"#
            )
        };
        let none = r#"<p>x</p>"#;
        let de_pt = r#"<div lang=\"de\" xml:lang=\"de\">x</div><div lang=\"pt\">y</div>"#;
        let de_en = r#"<div xml:lang=\"de\">x</div><div xml:lang=\"en\">y</div>"#;
        let run = |id: &str, url: &str, code: &str, input: &str| {
            let ctx = context(&[&profile(id, url, code)], &[&format!("http://example.org/{id}")]);
            findings(&ctx, input)
        };
        let lang = "narrative-language-control";
        let at = |code: &str, sev: &str, id: &str| format!("{code} {sev} Patient.text.div http://example.org/{id}");
        assert!(run("no", lang, "_no", &patient("", none)).is_empty());
        assert_eq!(run("no", lang, "_no", &patient("", de_pt)), [at("PROFILE_NARRATIVE_LANGUAGE", "error", "no")]);
        assert!(run("yes", lang, "_yes", &patient("", de_pt)).is_empty());
        assert_eq!(run("yes", lang, "_yes", &patient("", none)), [at("PROFILE_NARRATIVE_LANGUAGE", "error", "yes")]);
        assert!(run("rl", lang, "_resource", &patient("en", de_en)).is_empty());
        assert_eq!(
            run("rl", lang, "_resource", &patient("en", de_pt)),
            [at("PROFILE_NARRATIVE_LANGUAGE", "error", "rl")]
        );
        assert!(run("pt", lang, "pt", &patient("", de_pt)).is_empty());
        assert_eq!(run("en", lang, "en", &patient("", de_pt)), [at("PROFILE_NARRATIVE_LANGUAGE", "error", "en")]);
        let src = "narrative-source-control";
        let sourced = r#"<h1 class=\"boilerplate\">a</h1><p class=\"x generated\">b</p>"#;
        assert!(run("src", src, "error", &patient("", sourced)).is_empty());
        for (div, what) in [
            (r#"bare text<p class=\"generated\">b</p>"#, "bare text"),
            (r#"<p class=\"original\">a</p><p>b</p>"#, "an element without a class"),
        ] {
            assert_eq!(
                run("src", src, "error", &patient("", div)),
                [at("PROFILE_NARRATIVE_SOURCE", "error", "src")],
                "{what}"
            );
            assert_eq!(
                run("srcw", src, "warning", &patient("", div)),
                [at("PROFILE_NARRATIVE_SOURCE", "warning", "srcw")]
            );
        }
        // Inside language sections, their children are what must be attributed.
        let sections = r#"<div lang=\"de\"><p class=\"generated\">x</p></div><div lang=\"en\"><p>y</p></div>"#;
        assert_eq!(run("src", src, "error", &patient("", sections)), [at("PROFILE_NARRATIVE_SOURCE", "error", "src")]);
    }

    #[test]
    fn value_ranges_and_lengths() {
        let profile = r#"{"resourceType":"StructureDefinition","url":"http://example.org/range","type":"Observation",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Observation","derivation":"constraint",
            "differential":{"element":[
              {"id":"Observation.id","path":"Observation.id","maxLength":8,
               "extension":[{"url":"http://hl7.org/fhir/StructureDefinition/minLength","valueInteger":3}]},
              {"id":"Observation.value[x]","path":"Observation.value[x]","type":[{"code":"Quantity"}],
               "minValueQuantity":{"value":1,"system":"http://unitsofmeasure.org","code":"kg"},
               "maxValueQuantity":{"value":2,"system":"http://unitsofmeasure.org","code":"kg"}},
              {"id":"Observation.component.value[x]","path":"Observation.component.value[x]","type":[{"code":"integer"}],
               "minValueInteger":0,"maxValueInteger":10},
              {"id":"Observation.effective[x]","path":"Observation.effective[x]","type":[{"code":"dateTime"}],
               "minValueDateTime":"2020-01-01"}
            ]}}"#;
        let ctx = context(&[profile], &["http://example.org/range"]);
        let obs = |id: &str, qty: &str, comp: &str, eff: &str| {
            format!(
                r#"{{"resourceType":"Observation","id":"{id}","status":"final","code":{{"text":"c"}},"effectiveDateTime":"{eff}",
                "valueQuantity":{qty},"component":[{{"code":{{"text":"c"}},"valueInteger":{comp}}}]}}"#
            )
        };
        let q =
            |v: &str, code: &str| format!(r#"{{"value":{v},"system":"http://unitsofmeasure.org","code":"{code}"}}"#);
        assert!(findings(&ctx, &obs("abcd", &q("1500", "g"), "10", "2020-01-01")).is_empty());
        let p = "http://example.org/range";
        assert_eq!(
            findings(&ctx, &obs("ab", &q("999", "g"), "11", "2019-12-31")),
            [
                format!("PROFILE_LENGTH error Observation.id {p}"),
                format!("PROFILE_MIN_VALUE error Observation.effectiveDateTime {p}"),
                format!("PROFILE_MIN_VALUE error Observation.valueQuantity {p}"),
                format!("PROFILE_MAX_VALUE error Observation.component[0].valueInteger {p}"),
            ]
        );
        assert_eq!(
            findings(&ctx, &obs("abcdefghi", &q("2.5", "kg"), "-1", "2021")),
            [
                format!("PROFILE_LENGTH error Observation.id {p}"),
                format!("PROFILE_MAX_VALUE error Observation.valueQuantity {p}"),
                format!("PROFILE_MIN_VALUE error Observation.component[0].valueInteger {p}"),
            ]
        );
        // Units that a prefix does not relate, and dates of another precision: not compared.
        assert!(findings(&ctx, &obs("abcd", &q("5", "[lb_av]"), "1", "2019")).is_empty());
    }

    #[test]
    fn extension_contexts_of_each_kind() {
        let ext = |url: &str, contexts: &str| {
            format!(
                r#"{{"resourceType":"StructureDefinition","url":"{url}","type":"Extension","context":[{contexts}],
                "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Extension","derivation":"constraint",
                "differential":{{"element":[{{"id":"Extension.url","path":"Extension.url","fixedUri":"{url}"}}]}}}}"#
            )
        };
        let a = ext(
            "http://example.org/a",
            r#"{"type":"element","expression":"DomainResource.text"},{"type":"element","expression":"BackboneElement"},
               {"type":"fhirpath","expression":"Patient.address.where(use = 'home')"},
               {"type":"extension","expression":"http://example.org/b"},{"type":"element","expression":"CanonicalResource"}"#,
        );
        let b = ext("http://example.org/b", r#"{"type":"element","expression":"Patient"}"#);
        let ctx = context(&[&a, &b], &[]);
        let on = |json: &str| findings(&ctx, json);
        let x = r#"{"url":"http://example.org/a","valueBoolean":true}"#;
        // Allowed: the text of a DomainResource, a backbone element, a home address, inside
        // extension b (and on its value), a canonical resource.
        for ok in [
            format!(
                r#"{{"resourceType":"Patient","text":{{"extension":[{x}],"status":"generated","div":"<div xmlns=\"http://www.w3.org/1999/xhtml\">x</div>"}}}}"#
            ),
            format!(r#"{{"resourceType":"Patient","contact":[{{"extension":[{x}],"name":{{"text":"n"}}}}]}}"#),
            format!(r#"{{"resourceType":"Patient","address":[{{"use":"home","extension":[{x}],"city":"c"}}]}}"#),
            format!(r#"{{"resourceType":"Patient","extension":[{{"url":"http://example.org/b","extension":[{x}]}}]}}"#),
            format!(r#"{{"resourceType":"CodeSystem","extension":[{x}],"status":"draft","content":"not-present"}}"#),
        ] {
            let f: Vec<String> = on(&ok).into_iter().filter(|f| f.contains("CONTEXT")).collect();
            assert!(f.is_empty(), "{ok}: {f:?}");
        }
        // Not allowed: a work address, the Patient itself, a data type that is no backbone.
        let a_url = "http://example.org/a";
        for (bad, at) in [
            (
                format!(r#"{{"resourceType":"Patient","address":[{{"use":"work","extension":[{x}],"city":"c"}}]}}"#),
                "Patient.address[0].extension[0]",
            ),
            (format!(r#"{{"resourceType":"Patient","extension":[{x}]}}"#), "Patient.extension[0]"),
            (
                format!(r#"{{"resourceType":"Patient","name":[{{"extension":[{x}],"text":"n"}}]}}"#),
                "Patient.name[0].extension[0]",
            ),
        ] {
            assert!(
                on(&bad).contains(&format!("PROFILE_EXTENSION_CONTEXT error {at} {a_url}")),
                "{bad}: {:?}",
                on(&bad)
            );
        }
    }

    /// `contextInvariant` (R4 StructureDefinition): every rule, evaluated on the element the
    /// extension is on, must hold; an empty result does not show it broken.
    #[test]
    fn extension_context_invariants_hold_on_the_element_the_extension_is_on() {
        let def = r#"{"resourceType":"StructureDefinition","url":"http://example.org/ci","type":"Extension",
            "context":[{"type":"element","expression":"Patient"}],"contextInvariant":["Patient.active.not()","gender.exists()"],
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Extension","derivation":"constraint",
            "differential":{"element":[{"id":"Extension.url","path":"Extension.url","fixedUri":"http://example.org/ci"}]}}"#;
        let ctx = context(&[def], &[]);
        let patient = |rest: &str| {
            format!(
                r#"{{"resourceType":"Patient","extension":[{{"url":"http://example.org/ci","valueBoolean":true}}]{rest}}}"#
            )
        };
        let context_findings = |json: &str| -> Vec<String> {
            findings(&ctx, json).into_iter().filter(|f| f.starts_with("PROFILE_EXTENSION_CONTEXT")).collect()
        };
        assert!(context_findings(&patient(r#","active":false,"gender":"other""#)).is_empty());
        // `active` absent: the first rule is empty, not false.
        assert!(context_findings(&patient(r#","gender":"other""#)).is_empty());
        let broken = ["PROFILE_EXTENSION_CONTEXT error Patient.extension[0] http://example.org/ci".to_owned()];
        assert_eq!(context_findings(&patient(r#","active":true,"gender":"other""#)), broken);
        assert_eq!(context_findings(&patient(r#","active":false"#)), broken);
    }

    #[test]
    fn a_type_profile_may_name_one_element_of_a_library_profile() {
        // A library of section definitions, and a document profile whose sections each take one
        // of them (the elementdefinition-profile-element extension).
        let library = r#"{"resourceType":"StructureDefinition","url":"http://example.org/lib","type":"Composition",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Composition","derivation":"constraint",
            "differential":{"element":[
              {"id":"Composition.section","path":"Composition.section","slicing":{"discriminator":[{"type":"pattern","path":"code"}],"rules":"open"}},
              {"id":"Composition.section:a","path":"Composition.section","sliceName":"a"},
              {"id":"Composition.section:a.code","path":"Composition.section.code","min":1,"patternCodeableConcept":{"coding":[{"system":"http://example.org/s","code":"A"}]}},
              {"id":"Composition.section:a.title","path":"Composition.section.title","min":1}
            ]}}"#;
        let document = r#"{"resourceType":"StructureDefinition","url":"http://example.org/doc","type":"Composition",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Composition","derivation":"constraint",
            "differential":{"element":[
              {"id":"Composition.section","path":"Composition.section","slicing":{"discriminator":[{"type":"pattern","path":"code"}],"rules":"closed"}},
              {"id":"Composition.section:sa","path":"Composition.section","sliceName":"sa","min":1,"max":"1",
               "type":[{"code":"BackboneElement","profile":["http://example.org/lib"],
                 "_profile":[{"extension":[{"url":"http://hl7.org/fhir/StructureDefinition/elementdefinition-profile-element","valueString":"Composition.section:a"}]}]}]}
            ]}}"#;
        let ctx = context(&[library, document], &["http://example.org/doc"]);
        let comp = |section: &str| {
            format!(
                r#"{{"resourceType":"Composition","status":"final","type":{{"text":"t"}},"date":"2020","author":[{{"display":"a"}}],"title":"t","section":[{section}]}}"#
            )
        };
        let good = comp(
            r#"{"code":{"coding":[{"system":"http://example.org/s","code":"A"}]},"title":"s","text":{"status":"generated","div":"<div xmlns=\"http://www.w3.org/1999/xhtml\">x</div>"}}"#,
        );
        assert!(findings(&ctx, &good).is_empty(), "{:?}", findings(&ctx, &good));
        // The section matches the slice but lacks the title its library element requires.
        let untitled = comp(
            r#"{"code":{"coding":[{"system":"http://example.org/s","code":"A"}]},"text":{"status":"generated","div":"<div xmlns=\"http://www.w3.org/1999/xhtml\">x</div>"}}"#,
        );
        let f = findings(&ctx, &untitled);
        assert!(f.iter().any(|x| x.starts_with("SLICE_CARDINALITY_MIN error Composition.section")), "{f:?}");
    }

    #[test]
    fn a_reference_that_resolves_must_reach_a_target_profile_type() {
        let profile = r#"{"resourceType":"StructureDefinition","url":"http://example.org/obs-subj","type":"Observation",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Observation","derivation":"constraint",
            "differential":{"element":[{"id":"Observation.subject","path":"Observation.subject",
              "type":[{"code":"Reference","targetProfile":["http://hl7.org/fhir/StructureDefinition/Patient"]}]}]}}"#;
        let ctx = context(&[profile], &[]);
        let bundle = |reference: &str| {
            format!(
                r#"{{"resourceType":"Bundle","type":"collection","entry":[
                {{"fullUrl":"urn:uuid:00000000-0000-0000-0000-000000000001","resource":{{"resourceType":"Observation","meta":{{"profile":["http://example.org/obs-subj"]}},
                  "status":"final","code":{{"text":"c"}},"subject":{{"reference":"{reference}"}}}}}},
                {{"fullUrl":"urn:uuid:00000000-0000-0000-0000-000000000002","resource":{{"resourceType":"Group","id":"g","type":"person","actual":true}}}},
                {{"fullUrl":"urn:uuid:00000000-0000-0000-0000-000000000003","resource":{{"resourceType":"Patient","id":"p"}}}}]}}"#
            )
        };
        let p = "http://example.org/obs-subj";
        assert_eq!(
            findings(&ctx, &bundle("urn:uuid:00000000-0000-0000-0000-000000000002")),
            [format!("PROFILE_REFERENCE_TARGET error Bundle.entry[0].resource.subject {p}")]
        );
        assert!(findings(&ctx, &bundle("Group/g")).iter().any(|f| f.starts_with("PROFILE_REFERENCE_TARGET")));
        assert!(findings(&ctx, &bundle("urn:uuid:00000000-0000-0000-0000-000000000003")).is_empty());
        // Leaving the Bundle: not judged by the type its URL names.
        let outside = findings(&ctx, &bundle("Group/elsewhere"));
        assert!(!outside.iter().any(|f| f.starts_with("PROFILE_REFERENCE_TARGET")), "{outside:?}");
    }

    /// The suite's bundle-conformsto: an entry fits a slice by a profile discriminator only
    /// when the resources its references reach in the Bundle conform to their target profiles.
    #[test]
    fn a_slice_by_profile_needs_the_references_targets_to_conform() {
        let patient = r#"{"resourceType":"StructureDefinition","url":"http://example.org/pat-id","type":"Patient",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Patient","derivation":"constraint",
            "differential":{"element":[{"id":"Patient.identifier","path":"Patient.identifier","min":1}]}}"#;
        let comp = r#"{"resourceType":"StructureDefinition","url":"http://example.org/comp","type":"Composition",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Composition","derivation":"constraint",
            "differential":{"element":[{"id":"Composition.subject","path":"Composition.subject",
              "type":[{"code":"Reference","targetProfile":["http://example.org/pat-id"]}]}]}}"#;
        let bundle = r#"{"resourceType":"StructureDefinition","url":"http://example.org/bundle","type":"Bundle",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Bundle","derivation":"constraint",
            "differential":{"element":[
              {"id":"Bundle.entry","path":"Bundle.entry","slicing":{"discriminator":[{"type":"profile","path":"resource"}],"rules":"open"}},
              {"id":"Bundle.entry:comp","path":"Bundle.entry","sliceName":"comp","min":1,"max":"1"},
              {"id":"Bundle.entry:comp.resource","path":"Bundle.entry.resource","type":[{"code":"Composition","profile":["http://example.org/comp"]}]}]}}"#;
        let ctx = context(&[patient, comp, bundle], &[]);
        let doc = |identifier: &str| {
            format!(
                r#"{{"resourceType":"Bundle","meta":{{"profile":["http://example.org/bundle"]}},"type":"collection","entry":[
                {{"fullUrl":"http://example.org/fhir/Composition/c","resource":{{"resourceType":"Composition","id":"c","status":"final",
                  "type":{{"text":"t"}},"date":"2024-01-01","author":[{{"reference":"Patient/p"}}],"title":"t","subject":{{"reference":"Patient/p"}}}}}},
                {{"fullUrl":"http://example.org/fhir/Patient/p","resource":{{"resourceType":"Patient","id":"p"{identifier}}}}}]}}"#
            )
        };
        let with = findings(&ctx, &doc(r#","identifier":[{"value":"1"}]"#));
        assert!(!with.iter().any(|f| f.starts_with("SLICE_CARDINALITY_MIN")), "{with:?}");
        let without = findings(&ctx, &doc(""));
        assert!(without.iter().any(|f| f.starts_with("SLICE_CARDINALITY_MIN error Bundle")), "{without:?}");
    }

    /// The suite's bundle-ihe-bad: an entry's resource profiled as a core resource definition
    /// is of that type.
    #[test]
    fn a_resource_profiled_as_a_core_type_is_of_that_type() {
        let bundle = r#"{"resourceType":"StructureDefinition","url":"http://example.org/manifests","type":"Bundle",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Bundle","derivation":"constraint",
            "differential":{"element":[{"id":"Bundle.entry.resource","path":"Bundle.entry.resource","min":1,
              "type":[{"code":"Resource","profile":["http://hl7.org/fhir/StructureDefinition/DocumentManifest"]}]}]}}"#;
        let ctx = context(&[bundle], &["http://example.org/manifests"]);
        let doc = |resource: &str| {
            format!(
                r#"{{"resourceType":"Bundle","type":"collection","entry":[{{"fullUrl":"http://example.org/fhir/{resource}/x","resource":{{"resourceType":"{resource}","id":"x"}}}}]}}"#
            )
        };
        let p = "http://example.org/manifests";
        assert_eq!(findings(&ctx, &doc("Patient")), [format!("PROFILE_TYPE error Bundle.entry[0].resource {p}")]);
        assert!(!findings(&ctx, &doc("DocumentManifest")).iter().any(|f| f.starts_with("PROFILE_TYPE")));
    }

    #[test]
    fn an_unknown_extension_is_an_error_unless_the_reference_validator_allows_it() {
        let ctx = context(&[], &[]);
        let with_checks = |url: &str, checks: &Checks| -> Vec<String> {
            let input = format!(r#"{{"resourceType":"Patient","extension":[{{"url":"{url}","valueCode":"x"}}]}}"#);
            let doc = crate::formats::fhir::read(input.into_bytes(), &Limits::default()).expect("reads");
            let mut f = Findings::new(false);
            check_into(&doc, &ctx, Options::default(), checks, &mut f);
            f.into_list()
                .iter()
                .map(|d| format!("{} {} {}", d.code.as_str(), d.severity.as_str(), d.location))
                .collect()
        };
        let with = |url: &str| with_checks(url, &Checks::default());
        let unknown = ["PROFILE_EXTENSION_UNKNOWN error Patient.extension[0]"];
        assert_eq!(with("http://hl7.org/fhir/uv/ips/StructureDefinition/not-defined"), unknown);
        assert_eq!(with("urn:oid:1.2.3.4"), unknown);
        // A look-alike of HL7's namespace is not it.
        assert_eq!(with("http://hl7.org/fhirx/StructureDefinition/x"), unknown);
        // Allowed: example domains (unless --no-example-urls), DICOM's, the tools IG's.
        let no_examples = Checks { no_example_urls: true, ..Checks::default() };
        assert_eq!(with("https://fhir.example.org/x"), Vec::<String>::new());
        assert_eq!(with_checks("https://fhir.example.org/x", &no_examples), unknown);
        assert_eq!(with("http://www.acme.com/ext"), Vec::<String>::new());
        assert_eq!(with("http://dicom.nema.org/x"), Vec::<String>::new());
        assert_eq!(with("http://hl7.org/fhir/tools/StructureDefinition/not-defined"), Vec::<String>::new());
        // --allow-extension-domain (a prefix of the url) and --allow-any-extensions.
        let domain = Checks { allowed_extension_domains: vec!["https://fhir.nhs.uk/".to_owned()], ..Checks::default() };
        assert_eq!(with_checks("https://fhir.nhs.uk/StructureDefinition/x", &domain), Vec::<String>::new());
        assert_eq!(with_checks("https://fhir.nhs.uk.example.net/x", &domain), unknown);
        let any = Checks { allow_any_extensions: true, ..Checks::default() };
        assert_eq!(with_checks("urn:oid:1.2.3.4", &any), Vec::<String>::new());
        // The core and extensions pack namespace and the cross-version urls: a known definition
        // is the core's check, an unknown one its EXTENSION_UNKNOWN (see the next test), neither
        // is reported here.
        assert_eq!(with("http://hl7.org/fhir/StructureDefinition/organization-brand"), Vec::<String>::new());
        assert_eq!(with("http://hl7.org/fhir/StructureDefinition/not-defined"), Vec::<String>::new());
        assert_eq!(with("http://hl7.org/fhir/5.0/StructureDefinition/extension-Patient.x"), Vec::<String>::new());
    }

    #[test]
    fn an_unknown_core_namespace_extension_is_reported_once_and_withdrawn_when_a_package_defines_it() {
        let url = "http://hl7.org/fhir/StructureDefinition/invented-newer-extension";
        let input = format!(r#"{{"resourceType":"Patient","extension":[{{"url":"{url}","valueCode":"x"}}]}}"#);
        let doc = crate::formats::fhir::read(input.into_bytes(), &Limits::default()).expect("reads");
        let all = |ctx: Option<&Context>| {
            super::super::validate::validate_with(&doc, Options::default(), &Checks::default(), ctx, &|_: &str| None)
                .iter()
                .filter(|d| d.code.as_str().contains("EXTENSION"))
                .map(|d| format!("{} {} {}", d.code.as_str(), d.severity.as_str(), d.location))
                .collect::<Vec<_>>()
        };
        let unknown = ["EXTENSION_UNKNOWN error Patient.extension[0]"];
        // Nothing loaded, and a package loaded that does not define it: the core's finding alone.
        assert_eq!(all(None), unknown);
        assert_eq!(all(Some(&context(&[], &[]))), unknown);
        // A loaded package (a newer extensions pack) that defines it: known, checked by it.
        let def = format!(
            r#"{{"resourceType":"StructureDefinition","url":"{url}","type":"Extension","kind":"complex-type","abstract":false,
              "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Extension","derivation":"constraint",
              "context":[{{"type":"element","expression":"Patient"}}],
              "differential":{{"element":[{{"id":"Extension","path":"Extension"}},
                {{"id":"Extension.url","path":"Extension.url","fixedUri":"{url}"}},
                {{"id":"Extension.value[x]","path":"Extension.value[x]","type":[{{"code":"code"}}]}}]}}}}"#
        );
        assert_eq!(all(Some(&context(&[&def], &[]))), Vec::<String>::new());
    }

    #[test]
    fn a_loaded_extension_definition_says_whether_it_is_a_modifier() {
        let def = |url: &str, modifier: bool| {
            format!(
                r#"{{"resourceType":"StructureDefinition","url":"{url}","type":"Extension","kind":"complex-type","abstract":false,
                  "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Extension","derivation":"constraint",
                  "context":[{{"type":"element","expression":"Patient"}}],
                  "differential":{{"element":[{{"id":"Extension","path":"Extension","isModifier":{modifier}}},
                    {{"id":"Extension.url","path":"Extension.url","fixedUri":"{url}"}},
                    {{"id":"Extension.value[x]","path":"Extension.value[x]","type":[{{"code":"code"}}]}}]}}}}"#
            )
        };
        let (plain, modifier) = ("http://example.org/plain", "http://example.org/modifier");
        let ctx = context(&[&def(plain, false), &def(modifier, true)], &[]);
        let with = |name: &str, url: &str| {
            findings(&ctx, &format!(r#"{{"resourceType":"Patient","{name}":[{{"url":"{url}","valueCode":"x"}}]}}"#))
        };
        assert_eq!(with("extension", plain), Vec::<String>::new());
        assert_eq!(with("modifierExtension", modifier), Vec::<String>::new());
        assert_eq!(
            with("modifierExtension", plain),
            [format!("EXTENSION_MODIFIER_MISMATCH error Patient.modifierExtension[0] {plain}")]
        );
        assert_eq!(
            with("extension", modifier),
            [format!("EXTENSION_MODIFIER_MISMATCH error Patient.extension[0] {modifier}")]
        );
    }

    #[test]
    fn must_support_only_when_asked() {
        let profile = r#"{"resourceType":"StructureDefinition","url":"http://example.org/ms","type":"Patient",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Patient","derivation":"constraint",
            "differential":{"element":[{"id":"Patient.birthDate","path":"Patient.birthDate","mustSupport":true}]}}"#;
        let mut ctx = context(&[profile], &["http://example.org/ms"]);
        assert!(findings(&ctx, r#"{"resourceType":"Patient"}"#).is_empty());
        ctx.must_support = true;
        assert_eq!(
            findings(&ctx, r#"{"resourceType":"Patient"}"#),
            ["PROFILE_MUST_SUPPORT information Patient.birthDate http://example.org/ms"]
        );
    }

    #[test]
    fn value_controls_of_r5_on_a_primitive_with_extensions_only() {
        let profile = |ext: &str, value: &str| {
            format!(
                r#"{{"resourceType":"StructureDefinition","url":"http://example.org/vc","type":"Patient",
                "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Patient","derivation":"constraint",
                "differential":{{"element":[{{"id":"Patient.active","path":"Patient.active","min":1,
                "extension":[{{"url":"http://hl7.org/fhir/5.0/StructureDefinition/extension-ElementDefinition.{ext}",{value}}}]}}]}}}}"#
            )
        };
        let dar = r#"{"resourceType":"Patient","_active":{"extension":[{"url":"http://hl7.org/fhir/StructureDefinition/data-absent-reason","valueCode":"unknown"}]}}"#;
        let masked = r#"{"resourceType":"Patient","_active":{"extension":[{"url":"http://hl7.org/fhir/StructureDefinition/iso21090-nullFlavor","valueCode":"MSK"}]}}"#;
        let present = r#"{"resourceType":"Patient","active":true}"#;
        let must = profile("mustHaveValue", r#""valueBoolean":true"#);
        let ctx = context(&[&must], &["http://example.org/vc"]);
        assert_eq!(findings(&ctx, dar), ["PROFILE_VALUE_ABSENT error Patient.active http://example.org/vc"]);
        assert!(findings(&ctx, present).is_empty());
        let alternatives = profile(
            "valueAlternatives",
            r#""valueCanonical":"http://hl7.org/fhir/StructureDefinition/data-absent-reason""#,
        );
        let ctx = context(&[&alternatives], &["http://example.org/vc"]);
        assert!(findings(&ctx, dar).is_empty());
        assert!(findings(&ctx, present).is_empty());
        assert_eq!(findings(&ctx, masked), ["PROFILE_VALUE_ABSENT error Patient.active http://example.org/vc"]);
    }

    #[test]
    fn a_type_profile_that_is_not_loaded_is_an_error() {
        let profile = r#"{"resourceType":"StructureDefinition","url":"http://example.org/tp","type":"Patient",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Patient","derivation":"constraint",
            "differential":{"element":[{"id":"Patient.identifier","path":"Patient.identifier",
            "type":[{"code":"Identifier","profile":["http://example.org/not-loaded"]}]}]}}"#;
        let ctx = context(&[profile], &["http://example.org/tp"]);
        assert_eq!(
            findings(&ctx, r#"{"resourceType":"Patient","identifier":[{"value":"1"}]}"#),
            ["PROFILE_UNKNOWN error Patient.identifier[0] http://example.org/not-loaded"]
        );
        assert!(findings(&ctx, r#"{"resourceType":"Patient"}"#).is_empty());
    }

    /// `Parameters.parameter.part` reuses `Parameters.parameter`'s children (`contentReference`):
    /// a profile that slices `part` and constrains each slice's `name` has those children from
    /// the base definition, and an item matched to a slice is checked against the slice, not
    /// against the profile's rules for the top-level parameter.
    #[test]
    fn slices_of_a_content_referenced_element_have_the_referenced_children() {
        const PARAMS: &str = r#"{"resourceType":"StructureDefinition","url":"http://example.org/params","type":"Parameters",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Parameters","derivation":"constraint",
            "differential":{"element":[
              {"id":"Parameters.parameter.name","path":"Parameters.parameter.name","patternString":"outer"},
              {"id":"Parameters.parameter.part","path":"Parameters.parameter.part","min":2,
               "slicing":{"discriminator":[{"type":"value","path":"$this.name"}],"rules":"closed"}},
              {"id":"Parameters.parameter.part:a","path":"Parameters.parameter.part","sliceName":"a","min":1,"max":"1"},
              {"id":"Parameters.parameter.part:a.name","path":"Parameters.parameter.part.name","fixedString":"a"},
              {"id":"Parameters.parameter.part:a.value[x]","path":"Parameters.parameter.part.value[x]","min":1,"type":[{"code":"boolean"}]},
              {"id":"Parameters.parameter.part:a.part","path":"Parameters.parameter.part.part","max":"0"},
              {"id":"Parameters.parameter.part:b","path":"Parameters.parameter.part","sliceName":"b","min":1,"max":"1"},
              {"id":"Parameters.parameter.part:b.name","path":"Parameters.parameter.part.name","fixedString":"b"}
            ]}}"#;
        let ctx = context(&[PARAMS], &["http://example.org/params"]);
        let p = "http://example.org/params";
        let good = r#"{"resourceType":"Parameters","parameter":[{"name":"outer","part":[
            {"name":"a","valueBoolean":true},{"name":"b","valueString":"x"}]}]}"#;
        assert!(findings(&ctx, good).is_empty(), "{:?}", findings(&ctx, good));
        let bad =
            r#"{"resourceType":"Parameters","parameter":[{"name":"outer","part":[{"name":"a","valueString":"x"}]}]}"#;
        assert_eq!(
            findings(&ctx, bad),
            [
                format!("PROFILE_CARDINALITY_MIN error Parameters.parameter[0].part {p}"),
                format!("PROFILE_TYPE error Parameters.parameter[0].part[0].valueString {p}"),
                format!("SLICE_CARDINALITY_MIN error Parameters.parameter[0].part {p}"),
            ]
        );
        let nested = r#"{"resourceType":"Parameters","parameter":[{"name":"outer","part":[
            {"name":"a","valueBoolean":true,"part":[{"name":"a","valueBoolean":true}]},{"name":"b"}]}]}"#;
        assert!(
            findings(&ctx, nested)
                .contains(&format!("PROFILE_CARDINALITY_MAX error Parameters.parameter[0].part[0].part[0] {p}")),
            "{:?}",
            findings(&ctx, nested)
        );
    }
}
