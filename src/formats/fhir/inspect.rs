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
