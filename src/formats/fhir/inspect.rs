//! A value-free summary of one FHIR resource: its type, the syntax it was read in, counts of
//! elements and of the resources it holds by type (Bundle entries, contained resources), the
//! Bundle type (only when it is a code of the required value set), the entries' resources by
//! type (`entryResourceTypes`), and finding counts (`issueCount`: every finding, information
//! included).
//!
//! What it does not report: ids, URLs (`fullUrl`, profiles, references), codes other than the
//! Bundle type, or any other value. Profile URLs are counted, not shown.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::diag::{Diagnostic, Severity};

use super::definitions as defs;
use super::model::{Document, Syntax};

/// The summary; serialized as the `inspect` data.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Always `fhir`.
    pub format: &'static str,
    /// `json` or `xml`.
    pub syntax: &'static str,
    /// The FHIR version the definitions are for.
    pub fhir_version: &'static str,
    /// The root resource's type.
    pub resource_type: &'static str,
    /// `Bundle.type`, when it is a code of the bundle-type value set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle_type: Option<&'static str>,
    /// Bundle entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry_count: Option<usize>,
    /// The resources of the Bundle's entries (`entry.resource`), by type; Bundle only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry_resource_types: Option<BTreeMap<&'static str, u32>>,
    /// Resources held inside the root (entries, contained, parameters), by type.
    pub resources: BTreeMap<&'static str, u32>,
    /// Contained resources (at any depth).
    pub contained_count: usize,
    /// Element instances with a definition.
    pub element_count: usize,
    /// Elements without a definition.
    pub unknown_element_count: usize,
    /// Extensions and modifier extensions.
    pub extension_count: usize,
    /// `meta.profile` entries (the URLs are not shown).
    pub profile_count: usize,
    /// Findings of severity warning.
    pub warning_count: usize,
    /// Findings of severity error or fatal.
    pub error_count: usize,
    /// All findings, whatever their severity (information included).
    pub issue_count: usize,
}

/// Summarizes a document, given its validation findings.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn summarize(doc: &Document, findings: &[Diagnostic]) -> Summary {
    let root = doc.node(0);
    let resource_type = root.ty.map(defs::type_name).unwrap_or("");
    let is_bundle = resource_type == "Bundle";
    let bundle_type = if is_bundle {
        doc.named(0, "type").next().and_then(|t| {
            let vs = doc
                .node(t)
                .elem
                .and_then(defs::element)
                .and_then(|d| d.binding)
                .and_then(|(_, v)| defs::value_set(v))?;
            vs.canonical(None, doc.value(t))
        })
    } else {
        None
    };
    let mut resources = BTreeMap::new();
    let (mut elements, mut unknown, mut extensions, mut contained) = (0, 0, 0, 0);
    for (i, n) in doc.nodes().iter().enumerate() {
        if n.is_unknown() {
            unknown += 1;
            continue;
        }
        elements += 1;
        if i > 0 && n.is_resource() {
            if let Some(t) = n.ty {
                *resources.entry(defs::type_name(t)).or_insert(0) += 1;
            }
            if n.name == "contained" {
                contained += 1;
            }
        }
        if n.name == "extension" || n.name == "modifierExtension" {
            extensions += 1;
        }
    }
    let entry_resource_types = is_bundle.then(|| {
        let mut by_type = BTreeMap::new();
        for r in doc.named(0, "entry").flat_map(|e| doc.named(e, "resource")) {
            let n = doc.node(r);
            if n.is_unknown() || !n.is_resource() {
                continue;
            }
            if let Some(t) = n.ty {
                *by_type.entry(defs::type_name(t)).or_insert(0) += 1;
            }
        }
        by_type
    });
    let profile_count = doc.named(0, "meta").flat_map(|m| doc.named(m, "profile")).count();
    Summary {
        format: "fhir",
        syntax: match doc.syntax() {
            Syntax::Json => "json",
            Syntax::Xml => "xml",
        },
        fhir_version: "4.0.1",
        resource_type,
        bundle_type,
        entry_count: is_bundle.then(|| doc.named(0, "entry").count()),
        entry_resource_types,
        resources,
        contained_count: contained,
        element_count: elements,
        unknown_element_count: unknown,
        extension_count: extensions,
        profile_count,
        warning_count: findings.iter().filter(|f| f.severity == Severity::Warning).count(),
        error_count: findings.iter().filter(|f| f.severity.is_failure()).count(),
        issue_count: findings.len(),
    }
}

/// The inventory (`inspect --detail inventory`): the summary and, per resource type (the root
/// and every resource it holds), the elements present and the codes of bound elements.
#[derive(Clone, Debug, Serialize)]
pub struct Inventory {
    /// The summary's properties.
    #[serde(flatten)]
    pub summary: Summary,
    /// By resource type, in order of first appearance.
    pub inventory: Vec<ResourceInventory>,
}

/// One resource type of the inventory.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInventory {
    /// The resource type.
    pub resource_type: &'static str,
    /// How many resources of the type.
    pub count: u32,
    /// Its elements present (`Patient.name.given`, no index), in order of first appearance,
    /// with how many times.
    pub elements: Vec<ElementCount>,
    /// Elements without a definition (their names are not shown).
    #[serde(skip_serializing_if = "is_zero")]
    pub unknown_elements: u32,
    /// The codes of elements bound to a value set of the specification.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub codes: Vec<CodeCount>,
}

/// An element path and its count.
#[derive(Clone, Debug, Serialize)]
pub struct ElementCount {
    /// `Patient.name.given`.
    pub path: String,
    /// Instances.
    pub count: u32,
}

/// The codes found at one bound element.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeCount {
    /// The bound element (`Observation.status`, `Observation.category`).
    pub path: String,
    /// The value set of its binding.
    pub value_set: &'static str,
    /// The codes that are in the value set, as the value set spells them, with their counts.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub codes: BTreeMap<&'static str, u32>,
    /// Codes not in the value set (counted, never shown), and every code when codes are not shown.
    #[serde(skip_serializing_if = "is_zero")]
    pub other_codes: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// `Patient.name.given`: the resource type and the element names from the resource down to
/// node `i` (schema names only).
fn element_path(doc: &Document, resource: u32, i: u32) -> String {
    let mut names = Vec::new();
    let mut at = i;
    while at != resource && (at as usize) < doc.nodes().len() {
        let n = doc.node(at);
        names.push(n.name);
        at = n.parent;
    }
    let mut path = String::from(doc.node(resource).ty.map(defs::type_name).unwrap_or(""));
    for name in names.iter().rev() {
        path.push('.');
        path.push_str(name);
    }
    path
}

/// The binding of node `i`, or of the CodeableConcept above a Coding: the value set, when
/// the specification bundles it, and the node whose path names the bound element.
fn bound(doc: &Document, i: u32) -> Option<(&'static defs::ValueSet, u32)> {
    let here =
        |j: u32| doc.node(j).elem.and_then(defs::element).and_then(|d| d.binding).and_then(|(_, v)| defs::value_set(v));
    if let Some(vs) = here(i) {
        return Some((vs, i));
    }
    let n = doc.node(i);
    let is_coding = n.ty.is_some_and(|t| defs::type_name(t) == "Coding");
    let parent = n.parent;
    if is_coding && (parent as usize) < doc.nodes().len() {
        let p = doc.node(parent);
        if p.ty.is_some_and(|t| defs::type_name(t) == "CodeableConcept") {
            return here(parent).map(|vs| (vs, parent));
        }
    }
    None
}

/// The inventory of a document, given its validation findings. With `codes` false, no code is
/// shown (each counts under `otherCodes`).
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn inventory(doc: &Document, findings: &[Diagnostic], codes: bool) -> Inventory {
    let summary = summarize(doc, findings);
    let mut order: Vec<&'static str> = Vec::new();
    let mut by_type: BTreeMap<&'static str, ResourceInventory> = BTreeMap::new();
    let mut element_index: BTreeMap<(&'static str, String), usize> = BTreeMap::new();
    let mut code_index: BTreeMap<(&'static str, String), usize> = BTreeMap::new();
    for (i, n) in doc.nodes().iter().enumerate() {
        let i = i as u32;
        let resource = doc.resource_of(i);
        let Some(rtype) = doc.node(resource).ty.map(defs::type_name) else { continue };
        let entry = by_type.entry(rtype).or_insert_with(|| {
            order.push(rtype);
            ResourceInventory {
                resource_type: rtype,
                count: 0,
                elements: Vec::new(),
                unknown_elements: 0,
                codes: Vec::new(),
            }
        });
        if i == resource {
            entry.count += 1;
            continue;
        }
        if n.is_unknown() {
            entry.unknown_elements += 1;
            continue;
        }
        // A resource inside another (entry.resource, contained) is counted under its own type.
        if n.is_resource() {
            continue;
        }
        let path = element_path(doc, resource, i);
        match element_index.get(&(rtype, path.clone())) {
            Some(&k) => entry.elements[k].count += 1,
            None => {
                element_index.insert((rtype, path.clone()), entry.elements.len());
                entry.elements.push(ElementCount { path, count: 1 });
            }
        }
        let Some((vs, at)) = bound(doc, i) else { continue };
        let is_coding = n.ty.is_some_and(|t| defs::type_name(t) == "Coding");
        let found = if is_coding {
            let system = doc.named(i, "system").next().map(|s| doc.value(s));
            let Some(code) = doc.named(i, "code").next() else { continue };
            vs.canonical(system, doc.value(code))
        } else if n.ty.is_some_and(|t| defs::type_name(t) == "code") {
            vs.canonical(None, doc.value(i))
        } else {
            continue;
        };
        let bound_path = element_path(doc, resource, at);
        let k = match code_index.get(&(rtype, bound_path.clone())) {
            Some(&k) => k,
            None => {
                code_index.insert((rtype, bound_path.clone()), entry.codes.len());
                entry.codes.push(CodeCount {
                    path: bound_path,
                    value_set: vs.url,
                    codes: BTreeMap::new(),
                    other_codes: 0,
                });
                entry.codes.len() - 1
            }
        };
        let c = &mut entry.codes[k];
        match found {
            Some(code) if codes => *c.codes.entry(code).or_insert(0) += 1,
            _ => c.other_codes += 1,
        }
    }
    let inventory = order.into_iter().filter_map(|t| by_type.remove(t)).collect();
    Inventory { summary, inventory }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Elements by path with counts, resources by type, and only codes of the specification's
    /// value sets.
    #[test]
    fn the_inventory_lists_elements_and_shows_only_value_set_codes() {
        let bundle = br#"{"resourceType":"Bundle","type":"collection","entry":[
            {"fullUrl":"urn:uuid:1","resource":{"resourceType":"Patient","gender":"female","name":[{"family":"Doe","given":["Jane","Q"]}],"birthDate":"1970-01-01"}},
            {"fullUrl":"urn:uuid:2","resource":{"resourceType":"Observation","status":"final","category":[{"coding":[{"system":"http://terminology.hl7.org/CodeSystem/observation-category","code":"vital-signs"}]}],"code":{"text":"Secret text"}}},
            {"fullUrl":"urn:uuid:3","resource":{"resourceType":"Patient","gender":"zzsecret"}}]}"#;
        let Ok(doc) = crate::formats::fhir::read(bundle.to_vec(), &crate::limits::Limits::default()) else {
            panic!("the test Bundle reads")
        };
        let json = serde_json::to_value(inventory(&doc, &[], true)).expect("serializes");
        let types: Vec<_> =
            json["inventory"].as_array().expect("list").iter().map(|r| r["resourceType"].clone()).collect();
        assert_eq!(types, ["Bundle", "Patient", "Observation"]);
        let patient = &json["inventory"][1];
        assert_eq!(patient["count"], 2);
        let count = |r: &serde_json::Value, path: &str| {
            r["elements"].as_array().and_then(|e| e.iter().find(|x| x["path"] == path)).map(|x| x["count"].clone())
        };
        assert_eq!(count(patient, "Patient.name.given"), Some(2.into()));
        assert_eq!(count(patient, "Patient.gender"), Some(2.into()));
        assert_eq!(count(&json["inventory"][0], "Bundle.entry.fullUrl"), Some(3.into()));
        let gender = &patient["codes"][0];
        assert_eq!(gender["path"], "Patient.gender");
        assert_eq!(gender["codes"], serde_json::json!({"female": 1}));
        assert_eq!(gender["otherCodes"], 1);
        let obs = &json["inventory"][2];
        let category = obs["codes"]
            .as_array()
            .and_then(|c| c.iter().find(|x| x["path"] == "Observation.category"))
            .expect("category");
        assert_eq!(category["codes"], serde_json::json!({"vital-signs": 1}));
        let text = json.to_string();
        for value in ["Doe", "Jane", "1970", "Secret", "zzsecret", "urn:uuid"] {
            assert!(!text.contains(value), "{value} in {text}");
        }
        let counts = serde_json::to_value(inventory(&doc, &[], false)).expect("serializes");
        assert!(counts["inventory"][1]["codes"][0].get("codes").is_none());
        assert_eq!(counts["inventory"][1]["codes"][0]["otherCodes"], 2);
    }
}
