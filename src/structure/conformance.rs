//! The conformance store: the StructureDefinitions, ValueSets and CodeSystems of the loaded
//! packages, indexed by canonical URL and version, with the snapshots and value-set expansions
//! the profile checks need, each computed once and cached.
//!
//! - [`Conformance::add_json`] takes one resource (a Bundle of resources is taken entry by
//!   entry); [`Conformance::resolve`] finds one by `url` or `url|version`.
//! - [`Conformance::snapshot`]: a profile's own snapshot when it has one; otherwise one
//!   generated from its differential over its base (the base chain through the loaded
//!   packages, ending in the built-in R4 core definitions): the differential's elements replace
//!   or refine the base's by element id, a new slice starts from the element it slices, and an
//!   element inside a data type starts from that type's core definition. A type-specific choice
//!   path (`Observation.valueQuantity`) is read as `value[x]` restricted to that type.
//! - [`Conformance::expansion`]: a value set's `expansion.contains`, or its `compose`: the
//!   concepts listed, whole code systems that are loaded (`content: complete`), other value sets
//!   included, and the excludes. A filter or a code system that is not loaded makes the value set
//!   unexpandable (`None`); a core value set not in the packages is looked up in the built-in
//!   tables.
//!
//! Canonical URLs and element ids are conformance metadata, not patient data.
//!
//! What it does not do: fetch anything (no network), terminology beyond the loaded code
//! systems (no SNOMED CT subsumption, no filters), snapshot generation for logical models'
//! own types, or reslicing beyond treating `slice/reslice` as a slice name.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use crate::diag::Code;
use crate::formats::fhir::definitions::{self as defs, TypeRef};

/// Which package (or `--ig` argument) a resource came from.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SourceId(pub u32);

/// How deep a base chain (or a nesting of type profiles) may go.
pub const MAX_DEPTH: u32 = 24;

/// Most concepts an expansion holds.
const MAX_EXPANSION: usize = 200_000;

#[derive(Debug)]
struct Resource {
    resource_type: String,
    url: String,
    version: Option<String>,
    /// Kept for the record (the package a definition came from).
    #[allow(dead_code)]
    source: SourceId,
    /// The resource, parsed on first use (`None`: its text is not a JSON object).
    json: OnceLock<Option<Value>>,
    /// Where the text comes from until it is parsed.
    raw: Raw,
}

/// The largest resource file read when first resolved (the packages' `max_resource_bytes`).
const MAX_FILE_BYTES: u64 = super::package::Limits::DEFAULT_MAX_RESOURCE_BYTES;

/// A package file's bytes, `None` when it cannot be read or is larger than [`MAX_FILE_BYTES`].
fn read_capped(path: &std::path::Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    std::fs::File::open(path).ok()?.take(MAX_FILE_BYTES + 1).read_to_end(&mut out).ok()?;
    (out.len() as u64 <= MAX_FILE_BYTES).then_some(out)
}

/// The text of a resource not parsed yet: a package's dependencies hold thousands of
/// definitions of which a validation uses a few, so each is indexed by its head and parsed when
/// first resolved.
#[derive(Debug)]
enum Raw {
    /// Parsed when added (an entry of a Bundle).
    Parsed,
    /// The bytes (JSON), read with the package.
    Bytes(Vec<u8>),
    /// A file of an unpacked package, read when first resolved.
    File(std::path::PathBuf),
}

impl Resource {
    fn value(&self) -> Option<&Value> {
        self.json
            .get_or_init(|| {
                let parsed = match &self.raw {
                    Raw::Parsed => None,
                    Raw::Bytes(b) => serde_json::from_slice::<Value>(b).ok(),
                    Raw::File(p) => read_capped(p).and_then(|b| serde_json::from_slice::<Value>(&b).ok()),
                };
                // serde's error text may quote the text: dropped; a resource that does not parse
                // is absent.
                parsed.filter(Value::is_object)
            })
            .as_ref()
    }
}

impl Resource {
    /// The top-level member `key` of the resource: from the parsed resource when it is parsed,
    /// else read from its text without building the rest (a package's ImplementationGuide,
    /// megabytes listing every resource, is read for its `global` alone). `None` when the text
    /// is not a JSON object (as [`Resource::value`]) or has no such member.
    fn member(&self, key: &str) -> Option<Value> {
        if let Some(parsed) = self.json.get() {
            return parsed.as_ref()?.get(key).cloned();
        }
        let read;
        let bytes: &[u8] = match &self.raw {
            Raw::Parsed => return None,
            Raw::Bytes(b) => b,
            Raw::File(p) => {
                read = read_capped(p)?;
                &read
            }
        };
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let found = serde::de::Deserializer::deserialize_map(&mut de, Member(key)).ok()?;
        // The whole text is one value, as `serde_json::from_slice` requires.
        de.end().ok()?;
        found
    }
}

/// Reads one member of a JSON object, skipping the others' values without building them (the
/// last of duplicate keys wins, as in a parsed `Value`).
struct Member<'k>(&'k str);

impl<'de> serde::de::Visitor<'de> for Member<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Option<Value>, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == self.0 {
                found = Some(map.next_value::<Value>()?);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// The binding strengths a profile check enforces.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Strength {
    /// Codes SHALL come from the value set.
    Required,
    /// Codes SHALL come from the value set when one fits.
    Extensible,
    /// Preferred or example: not checked.
    Other,
}

/// One type an element allows.
#[derive(Clone, Debug, Default)]
pub struct ElemType {
    /// The type code (`Quantity`, `Reference`, `Extension`).
    pub code: String,
    /// `type.profile`.
    pub profiles: Vec<String>,
    /// `type.targetProfile`.
    pub target_profiles: Vec<String>,
    /// Per profile of `profiles`, the element of that profile the type is checked against when
    /// the `elementdefinition-profile-element` extension names one (`Composition.section:codeA`
    /// of a library of section definitions); `None`: the profile's root.
    pub profile_elements: Vec<Option<String>>,
}

impl ElemType {
    /// `(profile, element id)` of each `type.profile`.
    pub fn profile_targets(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.profiles
            .iter()
            .enumerate()
            .map(|(i, p)| (p.as_str(), self.profile_elements.get(i).and_then(Option::as_deref)))
    }
}

/// The extension of `type.profile` naming the element of the profile that applies.
const PROFILE_ELEMENT_EXTENSION: &str = "http://hl7.org/fhir/StructureDefinition/elementdefinition-profile-element";

/// A discriminator's type.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DiscriminatorKind {
    /// By fixed/pattern value (value and pattern).
    Value,
    /// By presence.
    Exists,
    /// By type.
    Type,
    /// By conformance to a profile.
    Profile,
}

/// An element's slicing.
#[derive(Clone, Debug)]
pub struct Slicing {
    /// `(type, path)`.
    pub discriminators: Vec<(DiscriminatorKind, String)>,
    /// The slices are in order.
    pub ordered: bool,
    /// `closed`.
    pub closed: bool,
    /// `openAtEnd`.
    pub open_at_end: bool,
}

/// An invariant of a profile.
#[derive(Clone, Debug)]
pub struct Constraint {
    /// Its key.
    pub key: String,
    /// Severity error (otherwise warning).
    pub error: bool,
    /// The FHIRPath expression.
    pub expression: String,
    /// One of the R4 core's invariants (the same key and expression): the core validation
    /// evaluates it, a profile check need not.
    pub core: bool,
}

/// One element of a snapshot.
#[derive(Clone, Debug, Default)]
pub struct Element {
    /// `Observation.component:systolic.code`.
    pub id: String,
    /// `Observation.component.code`.
    pub path: String,
    /// The slice name, for a slice.
    pub slice_name: Option<String>,
    /// Minimum cardinality.
    pub min: u32,
    /// Maximum (`u32::MAX` for `*`).
    pub max: u32,
    /// Allowed types.
    pub types: Vec<ElemType>,
    /// `fixed[x]`.
    pub fixed: Option<Value>,
    /// `pattern[x]`.
    pub pattern: Option<Value>,
    /// The binding, with its value set's canonical.
    pub binding: Option<(Strength, String)>,
    /// Invariants.
    pub constraints: Vec<Constraint>,
    /// The slicing of the element.
    pub slicing: Option<Slicing>,
    /// `mustSupport`.
    pub must_support: bool,
    /// `isModifier` (on an extension definition's root: the extension is a modifier one).
    pub is_modifier: bool,
    /// `contentReference` (`#Questionnaire.item`).
    pub content_reference: Option<String>,
    /// `minValue[x]`: the type suffix (`Quantity`, `Integer`, `Date`...) and the value.
    pub min_value: Option<(String, Value)>,
    /// `maxValue[x]`.
    pub max_value: Option<(String, Value)>,
    /// `maxLength` (characters of a string value).
    pub max_length: Option<u64>,
    /// The `minLength` extension of the element definition.
    pub min_length: Option<u64>,
    /// The `narrative-language-control` extension (on a Narrative): `_yes` (language sections
    /// required), `_no` (prohibited), `_resource` (a section in the resource's language), or a
    /// language whose section is required.
    pub narrative_language: Option<String>,
    /// The `narrative-source-control` extension (on a Narrative): the severity (`error`,
    /// `warning`, `information`) of content without a source class.
    pub narrative_source: Option<String>,
    /// R5's `mustHaveValue` (in R4 the cross-version extension): a primitive here must have a
    /// value, not only extensions.
    pub must_have_value: bool,
    /// R5's `valueAlternatives` (in R4 the cross-version extension): the extensions that may
    /// stand in for an absent primitive value; one of them must then be present.
    pub value_alternatives: Vec<String>,
    /// R5's additional bindings (`binding.additional`; in R4 the cross-version extension or the
    /// tools' `additional-binding`).
    pub additional_bindings: Vec<AdditionalBinding>,
}

/// One additional binding of an element: a value set with a purpose beside the binding's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdditionalBinding {
    /// `purpose`: `required`, `extensible`, `maximum`, `minimum`, `current`, `preferred`, `ui`,
    /// `starter`, `component`.
    pub purpose: String,
    /// `valueSet` (a canonical).
    pub value_set: String,
    /// `any`: one of the repetitions of the element meeting the binding is enough.
    pub any: bool,
    /// `usage`: the binding applies only in some usage contexts.
    pub has_usage: bool,
}

/// The extensions of `ElementDefinition.binding` that carry an additional binding in R4.
const ADDITIONAL_BINDING_EXTENSIONS: [&str; 2] = [
    "http://hl7.org/fhir/5.0/StructureDefinition/extension-ElementDefinition.binding.additional",
    "http://hl7.org/fhir/tools/StructureDefinition/additional-binding",
];

/// The additional bindings of a `binding` object (its extensions, R4's form; `additional`, R5's).
fn additional_bindings(binding: &Value) -> Vec<AdditionalBinding> {
    let mut out = Vec::new();
    let exts = binding.get("extension").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    for x in exts {
        if !ADDITIONAL_BINDING_EXTENSIONS.contains(&x.get("url").and_then(Value::as_str).unwrap_or("")) {
            continue;
        }
        let parts = x.get("extension").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let part =
            |name: &'static str| parts.iter().filter(move |p| p.get("url").and_then(Value::as_str) == Some(name));
        let purpose = part("purpose").find_map(|p| p.get("valueCode").and_then(Value::as_str));
        let value_set = part("valueSet")
            .find_map(|p| p.get("valueCanonical").or_else(|| p.get("valueUri")).and_then(Value::as_str));
        let (Some(purpose), Some(value_set)) = (purpose, value_set) else { continue };
        out.push(AdditionalBinding {
            purpose: purpose.to_owned(),
            value_set: value_set.to_owned(),
            any: part("any").any(|p| p.get("valueBoolean").and_then(Value::as_bool) == Some(true)),
            has_usage: part("usage").next().is_some(),
        });
    }
    for a in binding.get("additional").and_then(Value::as_array).map_or(&[][..], Vec::as_slice) {
        let (Some(purpose), Some(value_set)) =
            (a.get("purpose").and_then(Value::as_str), a.get("valueSet").and_then(Value::as_str))
        else {
            continue;
        };
        out.push(AdditionalBinding {
            purpose: purpose.to_owned(),
            value_set: value_set.to_owned(),
            any: a.get("any").and_then(Value::as_bool) == Some(true),
            has_usage: a.get("usage").is_some(),
        });
    }
    out
}

impl Element {
    /// The last path segment, without `[x]` (`value` for `value[x]`).
    pub fn name(&self) -> &str {
        let last = self.path.rsplit('.').next().unwrap_or(&self.path);
        last.strip_suffix("[x]").unwrap_or(last)
    }

    /// True for a choice element (`value[x]`).
    pub fn is_choice(&self) -> bool {
        self.path.ends_with("[x]")
    }
}

/// How an extension definition's context names where the extension may be used.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ContextKind {
    /// An element path (`Patient.address`) or a type (`Patient`, `BackboneElement`).
    Element,
    /// Inside the extension of this URL.
    Extension,
    /// Where a FHIRPath expression from the resource leads (`Patient.address.where(use = 'home')`).
    FhirPath,
}

/// The children of an element that share one name: the element and its slices.
#[derive(Clone, Debug)]
pub struct Group {
    /// The element name (`value` for `value[x]`).
    pub name: String,
    /// The element itself (not a slice), when the snapshot has it.
    pub base: Option<usize>,
    /// Its slices, in definition order.
    pub slices: Vec<usize>,
}

/// A snapshot: the elements in definition order, and the tree over them.
#[derive(Debug)]
pub struct Snapshot {
    /// The profile's canonical URL.
    pub url: String,
    /// The type it constrains (`Observation`, `Extension`).
    pub type_name: String,
    /// The elements; 0 is the root.
    pub elements: Vec<Element>,
    /// Per element: its child groups.
    pub groups: Vec<Vec<Group>>,
    /// For an extension definition: its contexts (`Patient`, `Observation.code`, `Element`, an
    /// extension's URL, a FHIRPath expression).
    pub contexts: Vec<(ContextKind, String)>,
    /// For an extension definition: its `contextInvariant`s, FHIRPath expressions evaluated
    /// on the element the extension is on, all of which must hold.
    pub context_invariants: Vec<String>,
    /// False when the snapshot was generated and a differential element found no base.
    pub complete: bool,
}

impl Snapshot {
    fn build(
        url: String,
        type_name: String,
        elements: Vec<Element>,
        contexts: Vec<(ContextKind, String)>,
        complete: bool,
    ) -> Self {
        let by_id: BTreeMap<&str, usize> = elements.iter().enumerate().map(|(i, e)| (e.id.as_str(), i)).collect();
        let mut groups: Vec<Vec<Group>> = vec![Vec::new(); elements.len()];
        for (i, e) in elements.iter().enumerate().skip(1) {
            let Some((parent_id, last)) = split_id(&e.id) else { continue };
            let Some(&p) = by_id.get(parent_id) else { continue };
            let (name, slice) = match last.split_once(':') {
                Some((n, s)) => (n, Some(s)),
                None => (last, None),
            };
            let name = name.strip_suffix("[x]").unwrap_or(name);
            let list = &mut groups[p];
            let k = match list.iter().position(|g| g.name == name) {
                Some(k) => k,
                None => {
                    list.push(Group { name: name.to_owned(), base: None, slices: Vec::new() });
                    list.len() - 1
                }
            };
            if slice.is_some() {
                list[k].slices.push(i);
            } else if list[k].base.is_none() {
                list[k].base = Some(i);
            }
        }
        Snapshot { url, type_name, elements, groups, contexts, context_invariants: Vec::new(), complete }
    }

    /// The index of the element with id `id`.
    pub fn find(&self, id: &str) -> Option<usize> {
        self.elements.iter().position(|e| e.id == id)
    }

    /// The child groups of element `i`.
    pub fn groups_of(&self, i: usize) -> &[Group] {
        self.groups.get(i).map_or(&[], |g| g.as_slice())
    }

    /// The element below `i` reached by a dotted path of names (`code.coding`), following the
    /// element itself and not its slices.
    pub fn descend(&self, i: usize, path: &str) -> Option<usize> {
        let mut cur = i;
        for step in path.split('.').filter(|s| !s.is_empty() && *s != "$this") {
            let step = step.strip_suffix("[x]").unwrap_or(step);
            let g = self.groups_of(cur).iter().find(|g| g.name == step)?;
            cur = g.base?;
        }
        Some(cur)
    }
}

impl Snapshot {
    /// The `fixed[x]` or `pattern[x]` values of the elements below `i` at a dotted path of names,
    /// reached through the element on each step and its required slices (`min` at least 1):
    /// where a profile fixes a discriminator's value inside a slice of a sliced element (R4's
    /// `bp` slices `component` by `code.coding.code` and fixes it in
    /// `component:SystolicBP.code.coding:SBPCode.code`).
    pub fn values_through_slices(&self, i: usize, path: &str) -> Vec<&Value> {
        let steps: Vec<&str> = path.split('.').filter(|s| !s.is_empty() && *s != "$this").collect();
        let mut out = Vec::new();
        self.collect_values(i, &steps, &mut out, 0);
        out
    }

    fn collect_values<'s>(&'s self, cur: usize, steps: &[&str], out: &mut Vec<&'s Value>, depth: u32) {
        if depth > MAX_DEPTH {
            return;
        }
        let Some((step, rest)) = steps.split_first() else {
            if let Some(v) = self.elements.get(cur).and_then(|e| e.fixed.as_ref().or(e.pattern.as_ref())) {
                out.push(v);
            }
            return;
        };
        let step = step.strip_suffix("[x]").unwrap_or(step);
        let Some(g) = self.groups_of(cur).iter().find(|g| g.name == *step) else { return };
        for &k in g.base.iter().chain(g.slices.iter().filter(|&&s| self.elements[s].min >= 1)) {
            self.collect_values(k, rest, out, depth + 1);
        }
    }
}

/// `(parent id, last segment)` of an element id, splitting at the last `.` outside a slice name.
fn split_id(id: &str) -> Option<(&str, &str)> {
    // Slice names may not hold `.` in practice; the last `.` separates the segment.
    let k = id.rfind('.')?;
    Some((&id[..k], &id[k + 1..]))
}

/// A value set's codes.
#[derive(Debug)]
pub enum Expansion {
    /// Expanded from the loaded packages: `(system, code)`.
    Codes(BTreeSet<(String, String)>),
    /// A core value set of the built-in tables.
    Core(&'static defs::ValueSet),
}

impl Expansion {
    /// True when `code` (in `system`, or in any when `None`) is in the expansion.
    pub fn contains(&self, system: Option<&[u8]>, code: &[u8]) -> bool {
        match self {
            Expansion::Core(vs) => vs.contains(system, code),
            Expansion::Codes(set) => match system {
                Some(s) => {
                    let (Ok(s), Ok(c)) = (std::str::from_utf8(s), std::str::from_utf8(code)) else { return false };
                    set.contains(&(s.to_owned(), c.to_owned()))
                }
                None => set.iter().any(|(_, c)| c.as_bytes() == code),
            },
        }
    }
}

/// True when version `full` (`0.2.1`) is of the series a partial version names (`0.2`): `full`
/// starts with it and goes on with `.` (`0.20` is not of `0.2`).
fn in_series(full: &str, partial: &str) -> bool {
    full.strip_prefix(partial).is_some_and(|rest| rest.starts_with('.'))
}

/// The order of two versions by their dot-separated parts, numbers as numbers (`0.2.10` after
/// `0.2.9`), other parts as text; a missing version first.
fn version_order(a: &Option<String>, b: &Option<String>) -> std::cmp::Ordering {
    let (Some(a), Some(b)) = (a, b) else { return a.is_some().cmp(&b.is_some()) };
    let mut pa = a.split('.');
    let mut pb = b.split('.');
    loop {
        match (pa.next(), pb.next()) {
            (None, None) => return std::cmp::Ordering::Equal,
            (None, Some(_)) => return std::cmp::Ordering::Less,
            (Some(_), None) => return std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => {
                let o = match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(x), Ok(y)) => x.cmp(&y),
                    _ => x.cmp(y),
                };
                if o.is_ne() {
                    return o;
                }
            }
        }
    }
}

/// The conformance resources of the loaded packages.
#[derive(Debug, Default)]
pub struct Conformance {
    resources: Vec<Resource>,
    by_url: BTreeMap<String, Vec<usize>>,
    snapshots: Mutex<BTreeMap<String, Option<Arc<Snapshot>>>>,
    expansions: Mutex<BTreeMap<String, Option<Arc<Expansion>>>>,
    /// [`Conformance::global_profiles`], gathered on first use (reset by each addition).
    globals: OnceLock<Vec<(String, String)>>,
}

/// The profile checks' settings: the store, `--profile` and `--must-support`.
#[derive(Debug, Default)]
pub struct Context {
    /// The loaded conformance resources.
    pub conformance: Conformance,
    /// Profiles the root resource is checked against (`--profile`), besides its `meta.profile`.
    pub profiles: Vec<String>,
    /// Report absent must-support elements.
    pub must_support: bool,
}

impl Conformance {
    /// An empty store.
    pub fn new() -> Self {
        Conformance::default()
    }

    /// The number of resources held.
    pub fn len(&self) -> usize {
        self.resources.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty()
    }

    /// Adds one resource (JSON), or each resource of a Bundle. Resources without a `url` are
    /// skipped; a text that is not a JSON object with a `resourceType` is
    /// `CONFORMANCE_RESOURCE_INVALID` (the serde error, which may quote text, is dropped).
    pub fn add_json(&mut self, bytes: &[u8], source: SourceId) -> Result<(), Code> {
        self.add_bytes(bytes.to_vec(), source)
    }

    /// Adds one resource (JSON) as [`Conformance::add_json`] does, taking its bytes: a resource
    /// whose head (`resourceType`, `url`, `version`) reads at once is indexed and parsed when
    /// first resolved; a Bundle, or a text whose head does not read, is parsed now.
    pub fn add_bytes(&mut self, bytes: Vec<u8>, source: SourceId) -> Result<(), Code> {
        let scan = super::package::scan_head(&bytes, true);
        match scan.head {
            Some(h) if scan.complete && h.resource_type != "Bundle" => {
                let Some(url) = h.url else { return Ok(()) };
                self.push(h.resource_type, url, h.version, source, Raw::Bytes(bytes), OnceLock::new());
                Ok(())
            }
            _ => {
                let json: Value = serde_json::from_slice(&bytes).map_err(|_| Code::CONFORMANCE_RESOURCE_INVALID)?;
                self.add_value(json, source, 0)
            }
        }
    }

    /// Adds the resource of an unpacked package's file from its head, read when first resolved.
    pub fn add_file(&mut self, path: std::path::PathBuf, head: super::package::Head, source: SourceId) {
        if let Some(url) = head.url {
            self.push(head.resource_type, url, head.version, source, Raw::File(path), OnceLock::new());
        }
    }

    fn push(
        &mut self,
        resource_type: String,
        url: String,
        version: Option<String>,
        source: SourceId,
        raw: Raw,
        json: OnceLock<Option<Value>>,
    ) {
        let k = self.resources.len();
        self.globals = OnceLock::new();
        self.by_url.entry(url.clone()).or_default().push(k);
        self.resources.push(Resource { resource_type, url, version, source, json, raw });
    }

    fn add_value(&mut self, json: Value, source: SourceId, depth: u32) -> Result<(), Code> {
        let Some(rt) = json.get("resourceType").and_then(Value::as_str).map(str::to_owned) else {
            return Err(Code::CONFORMANCE_RESOURCE_INVALID);
        };
        if rt == "Bundle" && depth < 2 {
            if let Value::Object(mut map) = json {
                if let Some(Value::Array(entries)) = map.remove("entry") {
                    for mut e in entries {
                        if let Some(r) = e.get_mut("resource").map(Value::take) {
                            // An entry that is not a resource is left out.
                            let _ = self.add_value(r, source, depth + 1);
                        }
                    }
                }
            }
            return Ok(());
        }
        let Some(url) = json.get("url").and_then(Value::as_str).map(str::to_owned) else { return Ok(()) };
        let version = json.get("version").and_then(Value::as_str).map(str::to_owned);
        let parsed = OnceLock::new();
        let _ = parsed.set(Some(json));
        self.push(rt, url, version, source, Raw::Parsed, parsed);
        Ok(())
    }

    /// The resource of type `resource_type` (`""`: any) with canonical `canonical`
    /// (`url|version` picks that version; a bare url the first one added).
    /// A resource not loaded may be one built in (R4's vital signs profiles: see [`built_in`]).
    pub fn resolve(&self, resource_type: &str, canonical: &str) -> Option<&Value> {
        match self.resolve_index(resource_type, canonical) {
            Some(k) => self.resources[k].value(),
            None => built_in(resource_type, canonical),
        }
    }

    fn resolve_index(&self, resource_type: &str, canonical: &str) -> Option<usize> {
        let (url, version) = match canonical.split_once('|') {
            Some((u, v)) => (u, Some(v)),
            None => (canonical, None),
        };
        let list = self.by_url.get(url)?;
        let fits = |k: &usize| {
            let r = &self.resources[*k];
            resource_type.is_empty() || r.resource_type == resource_type
        };
        if let Some(v) = version {
            if let Some(&k) =
                list.iter().filter(|k| fits(k)).find(|&&k| self.resources[k].version.as_deref() == Some(v))
            {
                return Some(k);
            }
            // A partial version (`0.2`) names the latest of its series (`0.2.1`, not `0.1.3`):
            // the semver reading of a version with fewer parts, as the FHIR versioning rules
            // spell it out from R5 on and the reference validator applies to R4.
            let latest = list
                .iter()
                .copied()
                .filter(|k| fits(k))
                .filter(|&k| self.resources[k].version.as_deref().is_some_and(|full| in_series(full, v)))
                .fold(None::<usize>, |best, k| match best {
                    Some(b) if !version_order(&self.resources[k].version, &self.resources[b].version).is_gt() => {
                        Some(b)
                    }
                    _ => Some(k),
                });
            if latest.is_some() {
                return latest;
            }
        }
        list.iter().copied().find(|k| fits(k))
    }

    /// A StructureDefinition.
    pub fn structure_definition(&self, canonical: &str) -> Option<&Value> {
        self.resolve("StructureDefinition", canonical)
    }

    /// A ValueSet.
    pub fn value_set(&self, canonical: &str) -> Option<&Value> {
        self.resolve("ValueSet", canonical)
    }

    /// A CodeSystem.
    pub fn code_system(&self, canonical: &str) -> Option<&Value> {
        self.resolve("CodeSystem", canonical)
    }

    /// The global profiles of the loaded ImplementationGuides, `(resource type, profile)` in
    /// load order: ImplementationGuide.global is "a set of profiles that all resources covered
    /// by this implementation guide must conform to", so each resource of that type is checked
    /// against it (as the reference validator does with the guides it loads).
    pub fn global_profiles(&self) -> &[(String, String)] {
        self.globals.get_or_init(|| {
            let mut out = Vec::new();
            for r in self.resources.iter().filter(|r| r.resource_type == "ImplementationGuide") {
                let Some(Value::Array(globals)) = r.member("global") else { continue };
                for g in &globals {
                    if let (Some(ty), Some(profile)) =
                        (g.get("type").and_then(Value::as_str), g.get("profile").and_then(Value::as_str))
                    {
                        out.push((ty.to_owned(), profile.to_owned()));
                    }
                }
            }
            out
        })
    }

    /// The canonical URLs of the StructureDefinitions held, in order.
    pub fn structure_urls(&self) -> impl Iterator<Item = &str> {
        self.resources.iter().filter(|r| r.resource_type == "StructureDefinition").map(|r| r.url.as_str())
    }

    /// The snapshot of profile `canonical` (loaded, or a core type's), cached; `None` when it
    /// is not loaded or has neither a snapshot nor a differential with a known base.
    pub fn snapshot(&self, canonical: &str) -> Option<Arc<Snapshot>> {
        self.snapshot_at(canonical, 0)
    }

    fn snapshot_at(&self, canonical: &str, depth: u32) -> Option<Arc<Snapshot>> {
        if let Some(s) = lock(&self.snapshots).get(canonical) {
            return s.clone();
        }
        let made = if depth > MAX_DEPTH { None } else { self.make_snapshot(canonical, depth).map(Arc::new) };
        lock(&self.snapshots).insert(canonical.to_owned(), made.clone());
        made
    }

    fn make_snapshot(&self, canonical: &str, depth: u32) -> Option<Snapshot> {
        let Some(sd) = self.structure_definition(canonical) else {
            let name = canonical.strip_prefix(CORE_SD)?;
            return core_snapshot(name);
        };
        let url = sd.get("url").and_then(Value::as_str).unwrap_or(canonical).to_owned();
        let type_name = sd.get("type").and_then(Value::as_str).unwrap_or("").to_owned();
        let contexts = sd
            .get("context")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| {
                        let expression = c.get("expression").and_then(Value::as_str)?.to_owned();
                        let kind = match c.get("type").and_then(Value::as_str) {
                            Some("extension") => ContextKind::Extension,
                            Some("fhirpath") => ContextKind::FhirPath,
                            _ => ContextKind::Element,
                        };
                        Some((kind, expression))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let context_invariants: Vec<String> = sd
            .get("contextInvariant")
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        let mut snap = match sd.pointer("/snapshot/element").and_then(Value::as_array) {
            Some(elems) if !elems.is_empty() => {
                let elements: Vec<Element> = elems.iter().map(|e| parse_element(e, None)).collect();
                Snapshot::build(url, type_name, elements, contexts, true)
            }
            _ => {
                let base_url = sd.get("baseDefinition").and_then(Value::as_str)?;
                let base = self.snapshot_at(base_url, depth + 1)?;
                let diff =
                    sd.pointer("/differential/element").and_then(Value::as_array).map_or(&[][..], |v| v.as_slice());
                let (elements, complete) = merge(&base, diff, &type_name);
                Snapshot::build(url, type_name, elements, contexts, complete)
            }
        };
        snap.context_invariants = context_invariants;
        Some(snap)
    }

    /// The expansion of value set `canonical` (cached); `None` when it cannot be expanded
    /// offline.
    pub fn expansion(&self, canonical: &str) -> Option<Arc<Expansion>> {
        self.expansion_at(canonical, 0)
    }

    fn expansion_at(&self, canonical: &str, depth: u32) -> Option<Arc<Expansion>> {
        if let Some(e) = lock(&self.expansions).get(canonical) {
            return e.clone();
        }
        let made = if depth > MAX_DEPTH { None } else { self.expand(canonical, depth).map(Arc::new) };
        lock(&self.expansions).insert(canonical.to_owned(), made.clone());
        made
    }

    fn expand(&self, canonical: &str, depth: u32) -> Option<Expansion> {
        let Some(vs) = self.value_set(canonical) else {
            let url = canonical.split('|').next().unwrap_or(canonical);
            return defs::value_set_by_url(url).map(Expansion::Core);
        };
        let mut codes = BTreeSet::new();
        if let Some(contains) = vs.pointer("/expansion/contains").and_then(Value::as_array) {
            collect_contains(contains, &mut codes, 0);
            return Some(Expansion::Codes(codes));
        }
        let compose = vs.get("compose")?;
        for inc in compose.get("include").and_then(Value::as_array).map_or(&[][..], |v| v.as_slice()) {
            self.part(inc, depth, &mut codes, true)?;
        }
        for exc in compose.get("exclude").and_then(Value::as_array).map_or(&[][..], |v| v.as_slice()) {
            self.part(exc, depth, &mut codes, false)?;
        }
        Some(Expansion::Codes(codes))
    }

    /// One `include` (`add`) or `exclude` of a compose; `None` when it cannot be expanded.
    fn part(&self, part: &Value, depth: u32, codes: &mut BTreeSet<(String, String)>, add: bool) -> Option<()> {
        if part.get("filter").and_then(Value::as_array).is_some_and(|f| !f.is_empty()) {
            return None;
        }
        let system = part.get("system").and_then(Value::as_str);
        let mut these: BTreeSet<(String, String)> = BTreeSet::new();
        let mut whole_system = false;
        if let Some(system) = system {
            if let Some(concepts) = part.get("concept").and_then(Value::as_array) {
                for c in concepts {
                    if let Some(code) = c.get("code").and_then(Value::as_str) {
                        these.insert((system.to_owned(), code.to_owned()));
                    }
                }
            } else {
                whole_system = true;
                if add {
                    let cs = self.code_system(system)?;
                    if cs.get("content").and_then(Value::as_str).is_some_and(|c| c != "complete") {
                        return None;
                    }
                    let concepts = cs.get("concept").and_then(Value::as_array).map_or(&[][..], |v| v.as_slice());
                    collect_concepts(system, concepts, &mut these, 0);
                }
            }
        }
        let mut value_sets = part.get("valueSet").and_then(Value::as_array).map_or(&[][..], |v| v.as_slice()).iter();
        if let Some(first) = value_sets.next() {
            // The intersection of the value sets (and of the system's codes, when given).
            let mut acc: Option<BTreeSet<(String, String)>> = if system.is_some() { Some(these) } else { None };
            for vs in std::iter::once(first).chain(value_sets) {
                let url = vs.as_str()?;
                let Expansion::Codes(set) = &*self.expansion_at(url, depth + 1)? else { return None };
                acc = Some(match acc {
                    None => set.clone(),
                    Some(a) => a.intersection(set).cloned().collect(),
                });
            }
            these = acc.unwrap_or_default();
            whole_system = false;
        }
        if add {
            codes.extend(these);
            if codes.len() > MAX_EXPANSION {
                return None;
            }
        } else if whole_system {
            if let Some(s) = system {
                codes.retain(|(sys, _)| sys != s);
            }
        } else {
            for c in &these {
                codes.remove(c);
            }
        }
        Some(())
    }
}

/// The conformance resources built into phiward, by canonical: R4's vital signs profiles and the
/// value sets they bind (the R4 specification holds an Observation with a vital sign code to its
/// profile: `formats::fhir::vital_signs`). `canonical` may carry the version they have (4.0.1); a
/// loaded resource of the same canonical comes first. Each resource is decoded the first time it
/// is asked for (a validation of one Observation decodes its one profile, not all of them).
fn built_in(resource_type: &str, canonical: &str) -> Option<&'static Value> {
    let (url, version) = match canonical.split_once('|') {
        Some((u, v)) => (u, Some(v)),
        None => (canonical, None),
    };
    let r = built_in_index().get(url)?.get()?;
    let fits_type = resource_type.is_empty() || r.get("resourceType").and_then(Value::as_str) == Some(resource_type);
    let fits_version = version.is_none_or(|v| r.get("version").and_then(Value::as_str) == Some(v));
    (fits_type && fits_version).then_some(r)
}

/// One built-in resource: its line of `vitalsigns.json`, decoded on first use.
struct BuiltIn {
    text: &'static str,
    value: OnceLock<Option<Value>>,
}

impl BuiltIn {
    fn get(&self) -> Option<&Value> {
        self.value.get_or_init(|| serde_json::from_str(self.text).ok()).as_ref()
    }
}

/// The built-in resources by url. The generated file (`tools/gen_fhir_tables.py`) holds one
/// resource a line, each opening with its `resourceType` and `url`: the index reads those two
/// and leaves the rest for [`BuiltIn::get`]; a line written otherwise is decoded whole to find its
/// url. A file that cannot be read leaves the index short and the `built_in_resources_read` test
/// fails.
fn built_in_index() -> &'static BTreeMap<String, BuiltIn> {
    static INDEX: OnceLock<BTreeMap<String, BuiltIn>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index = BTreeMap::new();
        for line in defs::VITAL_SIGNS.lines() {
            let text = line.trim().trim_end_matches(',');
            if !text.starts_with('{') {
                continue;
            }
            let entry = BuiltIn { text, value: OnceLock::new() };
            let url = match leading_url(text) {
                Some(url) => url.to_owned(),
                None => match entry.get().and_then(|v| v.get("url")).and_then(Value::as_str) {
                    Some(url) => url.to_owned(),
                    None => continue,
                },
            };
            // As a decoded list collected by url: a later resource of the same url wins.
            index.insert(url, entry);
        }
        index
    })
}

/// The url of a generated line `{"resourceType":"T","url":"U",...`, when it opens so (a url
/// with no escapes).
fn leading_url(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("{\"resourceType\":\"")?;
    let (rt, rest) = rest.split_once('"')?;
    if rt.contains('\\') {
        return None;
    }
    let rest = rest.strip_prefix(",\"url\":\"")?;
    let (url, _) = rest.split_once('"')?;
    (!url.contains('\\')).then_some(url)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere cannot leave a cache half-written (inserts are single calls).
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn collect_contains(list: &[Value], out: &mut BTreeSet<(String, String)>, depth: u32) {
    if depth > 32 {
        return;
    }
    for c in list {
        if let (Some(s), Some(code)) = (c.get("system").and_then(Value::as_str), c.get("code").and_then(Value::as_str))
        {
            out.insert((s.to_owned(), code.to_owned()));
        }
        if let Some(sub) = c.get("contains").and_then(Value::as_array) {
            collect_contains(sub, out, depth + 1);
        }
    }
}

fn collect_concepts(system: &str, list: &[Value], out: &mut BTreeSet<(String, String)>, depth: u32) {
    if depth > 32 {
        return;
    }
    for c in list {
        if let Some(code) = c.get("code").and_then(Value::as_str) {
            out.insert((system.to_owned(), code.to_owned()));
        }
        if let Some(sub) = c.get("concept").and_then(Value::as_array) {
            collect_concepts(system, sub, out, depth + 1);
        }
    }
}

/// The canonical prefix of the core StructureDefinitions.
pub const CORE_SD: &str = "http://hl7.org/fhir/StructureDefinition/";

fn max_of(v: &Value) -> Option<u32> {
    let s = v.as_str()?;
    Some(if s == "*" { u32::MAX } else { s.parse().unwrap_or(u32::MAX) })
}

/// The value of the first key of `e` that starts with `prefix` and goes on with a capital
/// (`fixedUri`, `patternCodeableConcept`).
fn typed_value(e: &Value, prefix: &str) -> Option<Value> {
    let map = e.as_object()?;
    map.iter()
        .find(|(k, _)| k.strip_prefix(prefix).is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase())))
        .map(|(_, v)| v.clone())
}

/// Reads an ElementDefinition; with `base`, the fields it leaves out come from `base`.
fn parse_element(e: &Value, base: Option<&Element>) -> Element {
    let mut out = base.cloned().unwrap_or_default();
    let path = e.get("path").and_then(Value::as_str).unwrap_or("").to_owned();
    let slice_name = e.get("sliceName").and_then(Value::as_str).map(str::to_owned);
    out.id = match e.get("id").and_then(Value::as_str) {
        Some(id) => id.to_owned(),
        None => match &slice_name {
            Some(s) => format!("{path}:{s}"),
            None => path.clone(),
        },
    };
    out.path = path;
    if slice_name.is_some() {
        out.slice_name = slice_name;
    }
    if base.is_none() {
        out.max = u32::MAX;
    }
    if let Some(m) = e.get("min").and_then(Value::as_u64) {
        out.min = u32::try_from(m).unwrap_or(u32::MAX);
    }
    if let Some(m) = e.get("max").and_then(max_of) {
        out.max = m;
    }
    if let Some(types) = e.get("type").and_then(Value::as_array) {
        out.types = types
            .iter()
            .map(|t| {
                let strings = |k: &str| -> Vec<String> {
                    t.get(k)
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                        .unwrap_or_default()
                };
                let profiles = strings("profile");
                // `_profile[i].extension`: the element of profile i that applies.
                let profile_elements = (0..profiles.len())
                    .map(|i| {
                        t.pointer(&format!("/_profile/{i}/extension"))
                            .and_then(Value::as_array)?
                            .iter()
                            .find(|x| x.get("url").and_then(Value::as_str) == Some(PROFILE_ELEMENT_EXTENSION))?
                            .get("valueString")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    })
                    .collect();
                ElemType {
                    code: t.get("code").and_then(Value::as_str).unwrap_or("").to_owned(),
                    profiles,
                    target_profiles: strings("targetProfile"),
                    profile_elements,
                }
            })
            .collect();
    }
    if let Some(v) = typed_value(e, "fixed") {
        out.fixed = Some(v);
    }
    if let Some(v) = typed_value(e, "pattern") {
        out.pattern = Some(v);
    }
    if let Some(b) = e.get("binding") {
        let strength = match b.get("strength").and_then(Value::as_str) {
            Some("required") => Strength::Required,
            Some("extensible") => Strength::Extensible,
            _ => Strength::Other,
        };
        if let Some(vs) = b.get("valueSet").and_then(Value::as_str) {
            out.binding = Some((strength, vs.to_owned()));
        }
        out.additional_bindings = additional_bindings(b);
    }
    if let Some(cs) = e.get("constraint").and_then(Value::as_array) {
        for c in cs {
            let (Some(key), Some(expression)) =
                (c.get("key").and_then(Value::as_str), c.get("expression").and_then(Value::as_str))
            else {
                continue;
            };
            if out.constraints.iter().any(|k| k.key == key) {
                continue;
            }
            let error = c.get("severity").and_then(Value::as_str) != Some("warning");
            let core = defs::constraints().iter().any(|c| c.key == key && c.expression == expression);
            out.constraints.push(Constraint { key: key.to_owned(), error, expression: expression.to_owned(), core });
        }
    }
    if let Some(s) = e.get("slicing") {
        let discriminators = s
            .get("discriminator")
            .and_then(Value::as_array)
            .map(|ds| {
                ds.iter()
                    .filter_map(|d| {
                        let kind = match d.get("type").and_then(Value::as_str)? {
                            "value" | "pattern" => DiscriminatorKind::Value,
                            "exists" => DiscriminatorKind::Exists,
                            "type" => DiscriminatorKind::Type,
                            "profile" => DiscriminatorKind::Profile,
                            _ => return None,
                        };
                        Some((kind, d.get("path").and_then(Value::as_str)?.to_owned()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let rules = s.get("rules").and_then(Value::as_str).unwrap_or("open");
        out.slicing = Some(Slicing {
            discriminators,
            ordered: s.get("ordered").and_then(Value::as_bool).unwrap_or(false),
            closed: rules == "closed",
            open_at_end: rules == "openAtEnd",
        });
    }
    if let Some(ms) = e.get("mustSupport").and_then(Value::as_bool) {
        out.must_support = ms;
    }
    if let Some(m) = e.get("isModifier").and_then(Value::as_bool) {
        out.is_modifier = m;
    }
    if let Some(c) = e.get("contentReference").and_then(Value::as_str) {
        out.content_reference = Some(c.to_owned());
    }
    if let Some(v) = typed_entry(e, "minValue") {
        out.min_value = Some(v);
    }
    if let Some(v) = typed_entry(e, "maxValue") {
        out.max_value = Some(v);
    }
    if let Some(n) = e.get("maxLength").and_then(Value::as_u64) {
        out.max_length = Some(n);
    }
    let min_length = e.get("extension").and_then(Value::as_array).and_then(|exts| {
        exts.iter()
            .find(|x| x.get("url").and_then(Value::as_str) == Some(MIN_LENGTH_EXTENSION))
            .and_then(|x| x.get("valueInteger"))
            .and_then(Value::as_u64)
    });
    if min_length.is_some() {
        out.min_length = min_length;
    }
    let code_of = |url: &str| {
        e.get("extension").and_then(Value::as_array).and_then(|exts| {
            exts.iter()
                .find(|x| x.get("url").and_then(Value::as_str) == Some(url))
                .and_then(|x| x.get("valueCode"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
    };
    if let Some(c) = code_of(NARRATIVE_LANGUAGE_EXTENSION) {
        out.narrative_language = Some(c);
    }
    if let Some(c) = code_of(NARRATIVE_SOURCE_EXTENSION) {
        out.narrative_source = Some(c);
    }
    let extensions = e.get("extension").and_then(Value::as_array).map_or(&[][..], |v| v.as_slice());
    let with_url =
        |url: &'static str| extensions.iter().filter(move |x| x.get("url").and_then(Value::as_str) == Some(url));
    let must_have_value = e
        .get("mustHaveValue")
        .and_then(Value::as_bool)
        .or_else(|| with_url(MUST_HAVE_VALUE_EXTENSION).find_map(|x| x.get("valueBoolean").and_then(Value::as_bool)));
    if let Some(b) = must_have_value {
        out.must_have_value = b;
    }
    let alternatives: Vec<String> = e
        .get("valueAlternatives")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_else(|| {
            with_url(VALUE_ALTERNATIVES_EXTENSION)
                .filter_map(|x| x.get("valueCanonical").and_then(Value::as_str).map(str::to_owned))
                .collect()
        });
    if !alternatives.is_empty() {
        out.value_alternatives = alternatives;
    }
    out
}

/// R5's `ElementDefinition.mustHaveValue`, as R4 carries it (a cross-version extension).
const MUST_HAVE_VALUE_EXTENSION: &str =
    "http://hl7.org/fhir/5.0/StructureDefinition/extension-ElementDefinition.mustHaveValue";

/// R5's `ElementDefinition.valueAlternatives`, as R4 carries it (a cross-version extension).
const VALUE_ALTERNATIVES_EXTENSION: &str =
    "http://hl7.org/fhir/5.0/StructureDefinition/extension-ElementDefinition.valueAlternatives";

/// The extension of a Narrative's element definition that controls its language sections.
const NARRATIVE_LANGUAGE_EXTENSION: &str = "http://hl7.org/fhir/StructureDefinition/narrative-language-control";

/// The extension of a Narrative's element definition that asks for source classes.
const NARRATIVE_SOURCE_EXTENSION: &str = "http://hl7.org/fhir/StructureDefinition/narrative-source-control";

/// The extension giving an element definition's minimum length.
const MIN_LENGTH_EXTENSION: &str = "http://hl7.org/fhir/StructureDefinition/minLength";

/// `(type suffix, value)` of a choice property such as `minValueQuantity`.
fn typed_entry(e: &Value, prefix: &str) -> Option<(String, Value)> {
    e.as_object()?.iter().find_map(|(k, v)| {
        let rest = k.strip_prefix(prefix)?;
        rest.starts_with(|c: char| c.is_ascii_uppercase()).then(|| (rest.to_owned(), v.clone()))
    })
}

/// The snapshot of a core type from the built-in definitions (its own elements; those of its
/// data types are not expanded).
fn core_snapshot(name: &str) -> Option<Snapshot> {
    let ty = defs::type_id(name.as_bytes())?;
    let elements = core_elements(ty, name, name);
    if elements.is_empty() {
        return None;
    }
    Some(Snapshot::build(format!("{CORE_SD}{name}"), name.to_owned(), elements, Vec::new(), true))
}

/// The elements of core type `ty` as [`Element`]s, with paths and ids under `prefix`.
fn core_elements(ty: defs::TypeId, path_prefix: &str, id_prefix: &str) -> Vec<Element> {
    let def = defs::type_def(ty);
    def.elements
        .iter()
        .map(|e| {
            let (path, id) = if e.path.is_empty() {
                (path_prefix.to_owned(), id_prefix.to_owned())
            } else {
                (format!("{path_prefix}.{}", e.path), format!("{id_prefix}.{}", e.path))
            };
            let mut el = core_element(e, path, id);
            // `#Parameters.parameter`: the element whose children this one reuses.
            el.content_reference = e.content_ref.and_then(|k| def.elements.get(usize::from(k))).map(|t| {
                if t.path.is_empty() { format!("#{path_prefix}") } else { format!("#{path_prefix}.{}", t.path) }
            });
            el
        })
        .collect()
}

fn core_element(e: &defs::ElementDef, path: String, id: String) -> Element {
    let types = e
        .types
        .iter()
        .map(|t| ElemType {
            code: match t {
                TypeRef::Type(id) => defs::type_name(*id).to_owned(),
                TypeRef::Backbone => "BackboneElement".to_owned(),
                TypeRef::Resource => "Resource".to_owned(),
            },
            ..ElemType::default()
        })
        .collect();
    Element { id, path, min: e.min, max: e.max, types, ..Element::default() }
}

/// The core definition of the element at `rel` (a dotted path of names) inside type `ty`.
fn core_element_in(ty_name: &str, rel: &str) -> Option<&'static defs::ElementDef> {
    let ty = defs::type_id(ty_name.as_bytes())?;
    defs::type_def(ty).elements.iter().find(|e| e.path == rel)
}

/// Rewrites a type-specific choice segment (`valueQuantity`) of `path` under a parent whose
/// element `value[x]` exists, as `(path with value[x], slice name)`.
fn choice_slice(elements: &[Element], parent_path: &str, last: &str) -> Option<(String, String)> {
    for e in elements {
        let Some(rest) = e.path.strip_prefix(parent_path).and_then(|r| r.strip_prefix('.')) else { continue };
        let Some(stem) = rest.strip_suffix("[x]") else { continue };
        if rest.contains('.') {
            continue;
        }
        if let Some(ty) = last.strip_prefix(stem) {
            if ty.starts_with(|c: char| c.is_ascii_uppercase()) {
                return Some((format!("{parent_path}.{stem}[x]"), last.to_owned()));
            }
        }
    }
    None
}

/// The differential `diff` over the snapshot `base`: `(elements, complete)`.
fn merge(base: &Snapshot, diff: &[Value], type_name: &str) -> (Vec<Element>, bool) {
    let mut elements = base.elements.clone();
    // A base of another type (a logical model, or `Element` for a data type profile) is rebased.
    if let Some(root) = elements.first().map(|e| e.path.clone()) {
        if !type_name.is_empty() && root != type_name && !type_name.contains('/') {
            for e in &mut elements {
                e.path = rebase(&e.path, &root, type_name);
                e.id = rebase(&e.id, &root, type_name);
            }
        }
    }
    let mut complete = true;
    // For differentials without ids: the slice each sliced path is in, as the elements go.
    let mut current_slice: BTreeMap<String, String> = BTreeMap::new();
    for d in diff {
        let Some(path) = d.get("path").and_then(Value::as_str) else { continue };
        let mut d = d.clone();
        if d.get("id").and_then(Value::as_str).is_none() {
            let id = inferred_id(path, d.get("sliceName").and_then(Value::as_str), &mut current_slice);
            if let Some(obj) = d.as_object_mut() {
                obj.insert("id".into(), Value::String(id));
            }
        }
        let path = path.to_owned();
        let path = path.as_str();
        // `Observation.valueQuantity`: `value[x]` restricted to that type (a choice renamed, as
        // the profiling rules allow when one type is used).
        if let Some((parent, last)) = path.rsplit_once('.') {
            if !last.ends_with("[x]") && !elements.iter().any(|e| e.path == path) {
                if let Some((choice_path, ty)) = choice_slice(&elements, parent, last) {
                    let id = d.get("id").and_then(Value::as_str).map(str::to_owned);
                    let parent_id = id.as_deref().and_then(split_id).map_or(parent.to_owned(), |(p, _)| p.to_owned());
                    let stem = choice_path.rsplit('.').next().unwrap_or("").to_owned();
                    let ty_name = ty.strip_prefix(stem.trim_end_matches("[x]")).unwrap_or("").to_owned();
                    if let Some(obj) = d.as_object_mut() {
                        obj.insert("path".into(), Value::String(choice_path.clone()));
                        obj.insert("id".into(), Value::String(format!("{parent_id}.{stem}")));
                        if !obj.contains_key("type") {
                            let lower =
                                ty_name.get(..1).map(|f| format!("{}{}", f.to_ascii_lowercase(), &ty_name[1..]));
                            let code = defs::type_id(ty_name.as_bytes())
                                .or_else(|| lower.as_deref().and_then(|l| defs::type_id(l.as_bytes())))
                                .map_or(ty_name.clone(), |t| defs::type_name(t).to_owned());
                            obj.insert("type".into(), serde_json::json!([{ "code": code }]));
                        }
                    }
                }
            }
        }
        let id = match d.get("id").and_then(Value::as_str) {
            Some(id) => id.to_owned(),
            None => {
                let p = d.get("path").and_then(Value::as_str).unwrap_or("");
                match d.get("sliceName").and_then(Value::as_str) {
                    Some(s) => format!("{p}:{s}"),
                    None => p.to_owned(),
                }
            }
        };
        if let Some(k) = elements.iter().position(|e| e.id == id) {
            let merged = parse_element(&d, Some(&elements[k]));
            elements[k] = merged;
            continue;
        }
        // A new element: a slice (from the element it slices) or an element inside a data type
        // (from the type's core definition).
        let Some((parent_id, last)) = split_id(&id) else {
            complete = false;
            continue;
        };
        let from: Option<Element> = match last.split_once(':') {
            Some((name, _)) => {
                let sliced = format!("{parent_id}.{name}");
                elements.iter().find(|e| e.id == sliced).cloned().map(|mut e| {
                    e.slicing = None;
                    e.min = 0;
                    e
                })
            }
            None if elements.iter().any(|e| e.id == unsliced(&id)) => {
                let u = unsliced(&id);
                elements.iter().find(|e| e.id == u).cloned().map(|mut e| {
                    e.slicing = None;
                    e
                })
            }
            None => {
                let parent = elements.iter().find(|e| e.id == parent_id);
                // Inside an element that reuses another's children (`Parameters.parameter.part`,
                // `#Parameters.parameter`): that element's child of the same name, as the base
                // defines it (the differential's constraints on it apply at its own level only).
                let referenced = parent
                    .and_then(|p| p.content_reference.as_deref())
                    .and_then(|c| c.rsplit_once('#'))
                    .map(|(_, target)| format!("{target}.{last}"))
                    .and_then(|child| base.elements.iter().chain(elements.iter()).find(|e| e.id == child).cloned())
                    .map(|mut e| {
                        e.slicing = None;
                        e
                    });
                referenced.or_else(|| {
                    parent.and_then(|p| {
                        let name = last;
                        p.types.iter().find_map(|t| {
                            let code =
                                if t.code == "BackboneElement" || t.code.is_empty() { "Element" } else { &t.code };
                            core_element_in(code, name).map(|def| core_element(def, String::new(), String::new()))
                        })
                    })
                })
            }
        };
        let Some(mut from) = from else {
            complete = false;
            continue;
        };
        from.constraints.clear();
        from.fixed = None;
        from.pattern = None;
        from.binding = None;
        from.must_support = false;
        let new = parse_element(&d, Some(&from));
        // After the parent's subtree.
        let at = elements
            .iter()
            .rposition(|e| e.id == parent_id || e.id.starts_with(&format!("{parent_id}.")))
            .map_or(elements.len(), |k| k + 1);
        elements.insert(at, new);
    }
    (elements, complete)
}

/// The id of a differential element that has none: its path, with the slice names of the
/// slices it is inside (the last slice declared at each sliced path before it).
fn inferred_id(path: &str, slice_name: Option<&str>, current: &mut BTreeMap<String, String>) -> String {
    let segs: Vec<&str> = path.split('.').collect();
    let mut id = String::new();
    for (k, seg) in segs.iter().enumerate() {
        if k > 0 {
            id.push('.');
        }
        id.push_str(seg);
        if k + 1 < segs.len() {
            if let Some(name) = current.get(&segs[..=k].join(".")) {
                id.push(':');
                id.push_str(name);
            }
        }
    }
    // A slice (or the element itself again) ends the slices declared below it.
    current.retain(|p, _| !(p.starts_with(path) && p.len() > path.len() && p.as_bytes()[path.len()] == b'.'));
    match slice_name {
        Some(name) => {
            id.push(':');
            id.push_str(name);
            current.insert(path.to_owned(), name.to_owned());
        }
        None => {
            current.remove(path);
        }
    }
    id
}

/// An element id without its slice names (`Observation.component:a.code` →
/// `Observation.component.code`).
fn unsliced(id: &str) -> String {
    id.split('.').map(|seg| seg.split(':').next().unwrap_or(seg)).collect::<Vec<_>>().join(".")
}

fn rebase(s: &str, from: &str, to: &str) -> String {
    match s.strip_prefix(from) {
        Some(rest) if rest.is_empty() || rest.starts_with('.') || rest.starts_with(':') => format!("{to}{rest}"),
        _ => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(resources: &[&str]) -> Conformance {
        let mut c = Conformance::new();
        for r in resources {
            c.add_json(r.as_bytes(), SourceId(0)).expect("adds");
        }
        c
    }

    #[test]
    fn global_profiles_are_read_without_parsing_the_guide_and_as_a_parsed_guide_gives_them() {
        let ig = |globals: &str| {
            format!(
                r#"{{"resourceType":"ImplementationGuide","url":"http://example.org/ig","version":"1","definition":{{"resource":[{{"reference":{{"reference":"StructureDefinition/x"}}}}]}},{globals}}}"#
            )
        };
        // The last of two `global` members wins, as in a parsed object.
        let two = ig(r#""global":[{"type":"Patient","profile":"http://example.org/a"}],"x":[1,{"y":"global"}],
            "global":[{"type":"Observation","profile":"http://example.org/b"},{"type":"Patient"}]"#);
        let c = store(&[&two]);
        assert_eq!(c.global_profiles(), [("Observation".to_owned(), "http://example.org/b".to_owned())]);
        assert!(c.resources[0].json.get().is_none(), "the guide is not parsed");
        let parsed: Value = serde_json::from_str(&two).expect("test input");
        assert_eq!(c.resources[0].member("global"), parsed.get("global").cloned());
        // A text that is not one JSON object gives none, as when parsed.
        let broken = ig(r#""global":[{"type":"Patient","profile":"http://example.org/a"}]"#) + " {}";
        let mut c = Conformance::new();
        c.push(
            "ImplementationGuide".into(),
            "u".into(),
            None,
            SourceId(0),
            Raw::Bytes(broken.into_bytes()),
            OnceLock::new(),
        );
        assert!(c.global_profiles().is_empty());
    }

    #[test]
    fn generates_a_snapshot_from_a_differential() {
        let c = store(&[r#"{"resourceType":"StructureDefinition","url":"http://example.org/p","type":"Observation",
            "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Observation","derivation":"constraint",
            "differential":{"element":[
              {"id":"Observation.subject","path":"Observation.subject","min":1},
              {"id":"Observation.code.coding","path":"Observation.code.coding","slicing":{"discriminator":[{"type":"value","path":"system"}],"rules":"closed"}},
              {"id":"Observation.code.coding:loinc","path":"Observation.code.coding","sliceName":"loinc","min":1},
              {"id":"Observation.code.coding:loinc.system","path":"Observation.code.coding.system","fixedUri":"http://loinc.org"},
              {"path":"Observation.valueQuantity","min":0}
            ]}}"#]);
        let s = c.snapshot("http://example.org/p").expect("snapshot");
        assert!(s.complete);
        let subject = s.find("Observation.subject").expect("subject");
        assert_eq!(s.elements[subject].min, 1);
        let slice = s.find("Observation.code.coding:loinc").expect("slice");
        assert_eq!(s.elements[slice].min, 1);
        let system = s.find("Observation.code.coding:loinc.system").expect("system");
        assert_eq!(s.elements[system].fixed.as_ref().and_then(Value::as_str), Some("http://loinc.org"));
        let value = s.find("Observation.value[x]").expect("value[x]");
        assert_eq!(s.elements[value].types.iter().map(|t| t.code.as_str()).collect::<Vec<_>>(), ["Quantity"]);
        let code = s.find("Observation.code").expect("code");
        let groups = s.groups_of(code);
        let coding = groups.iter().find(|g| g.name == "coding").expect("coding group");
        assert_eq!(coding.slices, [slice]);
        // The core chain: unknown profiles have no snapshot; core types do.
        assert!(c.snapshot("http://example.org/none").is_none());
        assert!(c.snapshot("http://hl7.org/fhir/StructureDefinition/Patient").is_some());
    }

    #[test]
    fn expands_compose_with_systems_and_excludes() {
        let c = store(&[
            r#"{"resourceType":"CodeSystem","url":"http://example.org/cs","content":"complete","concept":[{"code":"a","concept":[{"code":"a1"}]},{"code":"b"}]}"#,
            r#"{"resourceType":"ValueSet","url":"http://example.org/vs","compose":{"include":[{"system":"http://example.org/cs"},{"system":"http://other","concept":[{"code":"z"}]}],"exclude":[{"system":"http://example.org/cs","concept":[{"code":"b"}]}]}}"#,
            r#"{"resourceType":"ValueSet","url":"http://example.org/snomed","compose":{"include":[{"system":"http://snomed.info/sct","filter":[{"property":"concept","op":"is-a","value":"1"}]}]}}"#,
        ]);
        let e = c.expansion("http://example.org/vs").expect("expands");
        assert!(e.contains(Some(b"http://example.org/cs"), b"a1"));
        assert!(!e.contains(Some(b"http://example.org/cs"), b"b"));
        assert!(e.contains(None, b"z"));
        assert!(c.expansion("http://example.org/snomed").is_none());
        assert!(c.expansion("http://hl7.org/fhir/ValueSet/administrative-gender").is_some());
    }

    #[test]
    fn built_in_resources_read() {
        let store = Conformance::new();
        for name in ["vitalsigns", "vitalspanel", "resprate", "heartrate", "oxygensat", "bodytemp", "bodyheight"]
            .into_iter()
            .chain(["headcircum", "bodyweight", "bmi", "bp"])
        {
            let url = format!("{CORE_SD}{name}");
            let snap = store.snapshot(&url).expect("a built-in vital signs profile");
            assert!(snap.complete && snap.elements.len() > 40, "{name}");
        }
        assert!(store.structure_definition("http://hl7.org/fhir/StructureDefinition/bodytemp|4.0.1").is_some());
        assert!(store.structure_definition("http://hl7.org/fhir/StructureDefinition/bodytemp|3.0.2").is_none());
        let units = store.expansion("http://hl7.org/fhir/ValueSet/ucum-bodytemp|4.0.1").expect("enumerated units");
        assert!(units.contains(Some(b"http://unitsofmeasure.org"), b"Cel"));
        assert!(!units.contains(Some(b"http://unitsofmeasure.org"), b"kg"));
        // The index read from each line's opening holds every resource of the file, each decoded
        // to what decoding the whole file gives.
        let list: Vec<Value> = serde_json::from_str(defs::VITAL_SIGNS).expect("the generated JSON reads");
        let index = built_in_index();
        assert_eq!(index.len(), list.len());
        for r in &list {
            let url = r.get("url").and_then(Value::as_str).expect("a url");
            assert_eq!(index.get(url).and_then(BuiltIn::get), Some(r), "{url}");
        }
        assert_eq!(leading_url(r#"{"resourceType":"ValueSet","url":"http://a/b","x":1}"#), Some("http://a/b"));
        assert_eq!(leading_url(r#"{"url":"http://a/b","resourceType":"ValueSet"}"#), None);
        assert_eq!(leading_url(r#"{"resourceType":"ValueSet","url":"http://a\"b"}"#), None);
    }

    #[test]
    fn resolves_versions() {
        let c = store(&[
            r#"{"resourceType":"ValueSet","url":"http://example.org/v","version":"1"}"#,
            r#"{"resourceType":"ValueSet","url":"http://example.org/v","version":"2"}"#,
        ]);
        let v = |canonical: &str| c.resolve("", canonical).and_then(|r| r.get("version")).and_then(Value::as_str);
        assert_eq!(v("http://example.org/v|2"), Some("2"));
        assert_eq!(v("http://example.org/v"), Some("1"));
        // Regression (profile-version-reference-test-instance of the reference suite): a partial
        // version names the latest of its series, not the first one loaded.
        let c = store(&[
            r#"{"resourceType":"ValueSet","url":"http://example.org/p","version":"0.1.3"}"#,
            r#"{"resourceType":"ValueSet","url":"http://example.org/p","version":"0.2.10"}"#,
            r#"{"resourceType":"ValueSet","url":"http://example.org/p","version":"0.2.9"}"#,
            r#"{"resourceType":"ValueSet","url":"http://example.org/p","version":"0.20.0"}"#,
        ]);
        let p = |canonical: &str| c.resolve("", canonical).and_then(|r| r.get("version")).and_then(Value::as_str);
        assert_eq!(p("http://example.org/p|0.2"), Some("0.2.10"));
        assert_eq!(p("http://example.org/p|0.2.9"), Some("0.2.9"));
        assert_eq!(p("http://example.org/p|0.20"), Some("0.20.0"));
        assert_eq!(p("http://example.org/p|0"), Some("0.20.0"));
        assert_eq!(p("http://example.org/p|0.3"), Some("0.1.3"), "no version of the series: the first one loaded");
        assert!(c.resolve("StructureDefinition", "http://example.org/v").is_none());
        assert_eq!(Conformance::new().add_json(b"[1]", SourceId(0)), Err(Code::CONFORMANCE_RESOURCE_INVALID));
    }

    #[test]
    fn resources_are_parsed_when_first_resolved() {
        let dir = std::env::temp_dir().join(format!("phiward-conformance-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch folder");
        let file = dir.join("ValueSet-v.json");
        std::fs::write(
            &file,
            br#"{"resourceType":"ValueSet","url":"http://example.org/f","version":"3","status":"active"}"#,
        )
        .expect("write");
        let mut c = Conformance::new();
        let head = |url: &str| crate::structure::package::Head {
            resource_type: "ValueSet".to_owned(),
            url: Some(url.to_owned()),
            version: Some("3".to_owned()),
        };
        c.add_file(file.clone(), head("http://example.org/f"), SourceId(0));
        // A file that no longer parses is absent, not a panic.
        let broken = dir.join("ValueSet-broken.json");
        std::fs::write(&broken, b"{\"resourceType\":").expect("write");
        c.add_file(broken, head("http://example.org/broken"), SourceId(0));
        // Bytes: indexed by their head, parsed on use.
        c.add_bytes(
            br#"{"resourceType":"CodeSystem","url":"http://example.org/b","concept":[{"code":"x"}]}"#.to_vec(),
            SourceId(0),
        )
        .expect("adds");
        assert_eq!(c.len(), 3);
        assert_eq!(
            c.value_set("http://example.org/f|3").and_then(|v| v.get("status")).and_then(Value::as_str),
            Some("active")
        );
        assert!(c.value_set("http://example.org/broken").is_none());
        assert!(c.code_system("http://example.org/b").and_then(|v| v.get("concept")).is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
