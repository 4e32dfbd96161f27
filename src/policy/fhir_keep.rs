//! What `keep` can prove about one FHIR primitive value (see `proof`), and which numbers are
//! ages (for `@age`).
//!
//! - `boolean`, numbers, dates and times: their syntax.
//! - `code`: a `Coding.code` (and a Quantity's `code`) is valid for the `system` beside it; the
//!   value of a data-absent-reason extension is in its value set; any other code is in the value
//!   set of its element's binding (when the definitions can expand it), a MIME type
//!   (`contentType`, an Expression's `language`) or a language tag (any other `language`).
//! - `uri`: a Coding's or Quantity's `system` is a code system `proof` knows; `meta.profile` a
//!   core StructureDefinition; `Reference.type` a resource type.
//! - `string`: a Quantity's `unit` in UCUM, an Address's `state` (US or Canadian abbreviation),
//!   `country` (ISO 3166) or `postalCode` (US ZIP), a batch response's HTTP `status`.
//!
//! Everything else (names, identifiers, ids, narrative, markdown, attachments, codes of unknown
//! systems, strings without a check) is free text: kept only by a `keep` with
//! `free_text = true`.
//!
//! What it does not do: read values itself (the engine hands them over), or decide which rule
//! applies.

use crate::formats::fhir::definitions as defs;
use crate::formats::fhir::model::{Document, NONE};
use crate::formats::hl7v2::schema::Version;

use super::proof::{self, AgeUnit};

/// The verdict on one value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Proof {
    /// The check passed: keep may write it.
    Proven,
    /// The check failed: keep removes it.
    Unproven,
    /// Free text: only a `free_text` keep writes it.
    Text,
}

fn type_of(doc: &Document, i: u32) -> &'static str {
    if i == NONE {
        return "";
    }
    doc.node(i).ty.map_or("", defs::type_name)
}

/// The Quantity family (a Quantity's `value`, `unit`, `system`, `code`).
pub(super) fn is_quantity(ty: &str) -> bool {
    matches!(ty, "Quantity" | "Age" | "Duration" | "Count" | "Distance" | "MoneyQuantity" | "SimpleQuantity")
}

/// The value of the first child `name` of `parent`.
fn child<'v>(doc: &Document, parent: u32, name: &str, value: &dyn Fn(u32) -> &'v [u8]) -> Option<&'v [u8]> {
    if parent == NONE {
        return None;
    }
    doc.named(parent, name).find(|&c| doc.node(c).has_value()).map(value)
}

/// Reason phrases of the HTTP statuses a batch or transaction response carries.
const HTTP_REASONS: &[&str] = &[
    "OK",
    "Created",
    "Accepted",
    "No Content",
    "Moved Permanently",
    "Found",
    "See Other",
    "Not Modified",
    "Bad Request",
    "Unauthorized",
    "Forbidden",
    "Not Found",
    "Method Not Allowed",
    "Conflict",
    "Gone",
    "Precondition Failed",
    "Unprocessable Entity",
    "Internal Server Error",
    "Not Implemented",
    "Service Unavailable",
];

fn http_status(v: &[u8]) -> bool {
    let (code, reason) = v.split_at(v.len().min(3));
    code.len() == 3
        && code.iter().all(u8::is_ascii_digit)
        && (reason.is_empty()
            || reason.strip_prefix(b" ").is_some_and(|r| HTTP_REASONS.iter().any(|x| x.as_bytes() == r)))
}

/// Checks value `v` of node `i`; `value` reads another node's value (a `system` beside a code).
pub(super) fn prove<'v>(doc: &Document, i: u32, v: &[u8], value: &dyn Fn(u32) -> &'v [u8]) -> Proof {
    let check = |ok: bool| if ok { Proof::Proven } else { Proof::Unproven };
    let or_text = |ok: bool| if ok { Proof::Proven } else { Proof::Text };
    let node = doc.node(i);
    let name = node.name;
    let parent = node.parent;
    let parent_ty = type_of(doc, parent);
    let def = node.elem.and_then(defs::element);
    match type_of(doc, i) {
        "boolean" => check(v == b"true" || v == b"false"),
        "integer" | "positiveInt" | "unsignedInt" | "decimal" | "integer64" => check(proof::fhir_number(v)),
        "date" | "dateTime" | "instant" => check(proof::fhir_datetime(v)),
        "time" => check(proof::fhir_time(v)),
        "code" => {
            if name == "code" && (parent_ty == "Coding" || is_quantity(parent_ty)) {
                let system = child(doc, parent, "system", value).and_then(proof::fhir_system);
                return match system {
                    Some(cs) => check(proof::code_valid(cs, v, Version::V2_8_2)),
                    None => Proof::Text,
                };
            }
            if name == "value" && parent_ty == "Extension" {
                // A core extension whose value set is known: data-absent-reason.
                let url = child(doc, parent, "url", value);
                return match url {
                    Some(b"http://hl7.org/fhir/StructureDefinition/data-absent-reason") => {
                        let system = proof::fhir_system(b"http://terminology.hl7.org/CodeSystem/data-absent-reason");
                        check(system.is_some_and(|cs| proof::code_valid(cs, v, Version::V2_8_2)))
                    }
                    _ => Proof::Text,
                };
            }
            if name == "contentType" {
                return check(proof::mime(v));
            }
            if name == "language" && parent_ty == "Expression" {
                // An Expression's language is a MIME type (text/cql, text/fhirpath...), not a
                // language tag.
                return check(proof::mime(v));
            }
            if name == "language" {
                return check(proof::bcp47(v));
            }
            match def.and_then(|d| d.binding) {
                Some((_, n)) if proof::value_set_known(n) => check(proof::in_value_set(n, v)),
                _ => Proof::Text,
            }
        }
        "uri" | "url" | "canonical" => match (name, parent_ty) {
            ("system", p) if p == "Coding" || is_quantity(p) => or_text(proof::fhir_system(v).is_some()),
            ("profile", "Meta") => or_text(proof::core_profile(v)),
            ("type", "Reference") => or_text(proof::resource_type(v)),
            _ => Proof::Text,
        },
        "string" => match (name, parent_ty) {
            ("unit", p) if is_quantity(p) => or_text(proof::is_ucum(v)),
            ("state", "Address") => or_text(proof::state(v)),
            ("country", "Address") => or_text(proof::country(v)),
            ("postalCode", "Address") => or_text(proof::zip(v)),
            ("status", _) if def.is_some_and(|d| d.path == "entry.response.status") => or_text(http_status(v)),
            _ => Proof::Text,
        },
        _ => Proof::Text,
    }
}

/// The number nodes of `doc` that are ages, with their unit (years when `None`): the `value` of
/// an `Age` or of a Quantity with an age unit, and the number value (or the Quantity or Range
/// value's numbers) of an Observation or Observation.component whose code is a LOINC age code.
pub(super) fn ages<'v>(doc: &Document, value: &dyn Fn(u32) -> &'v [u8]) -> Vec<Option<Option<AgeUnit>>> {
    let n = doc.nodes().len();
    let mut out = vec![None; n];
    let unit_of = |q: u32| -> Option<AgeUnit> {
        let system = child(doc, q, "system", value);
        let code = child(doc, q, "code", value).filter(|_| system.is_none_or(|s| s == b"http://unitsofmeasure.org"));
        code.and_then(proof::age_unit).or_else(|| child(doc, q, "unit", value).and_then(proof::age_unit))
    };
    let mark_quantity = |out: &mut Vec<Option<Option<AgeUnit>>>, q: u32, forced: bool| {
        let unit = unit_of(q);
        if forced || unit.is_some() || type_of(doc, q) == "Age" {
            for v in doc.named(q, "value") {
                out[v as usize] = Some(unit);
            }
        }
    };
    for i in 0..n as u32 {
        let ty = type_of(doc, i);
        if is_quantity(ty) {
            mark_quantity(&mut out, i, false);
        }
        // An Observation or a component whose code is an age code: its value is an age.
        let observed = (doc.node(i).is_resource() && ty == "Observation")
            || (doc.node(i).name == "component" && type_of(doc, doc.resource_of(i)) == "Observation");
        if !observed {
            continue;
        }
        let age_code = doc.named(i, "code").any(|cc| {
            doc.named(cc, "coding").any(|c| {
                child(doc, c, "system", value) == Some(b"http://loinc.org")
                    && child(doc, c, "code", value).is_some_and(proof::is_loinc_age_code)
            })
        });
        if !age_code {
            continue;
        }
        for v in doc.named(i, "value") {
            match type_of(doc, v) {
                "integer" | "decimal" | "positiveInt" | "unsignedInt" => out[v as usize] = Some(None),
                t if is_quantity(t) => mark_quantity(&mut out, v, true),
                "Range" => {
                    for q in doc.named(v, "low").chain(doc.named(v, "high")) {
                        mark_quantity(&mut out, q, true);
                    }
                }
                _ => {}
            }
        }
    }
    out
}
