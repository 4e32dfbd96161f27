//! Rules on conformance resources themselves that the FHIR R4 specification states in prose
//! (each one checked by the reference validator too), on every CodeSystem and SearchParameter
//! of a document (contained and Bundle entries included):
//!
//! - `CodeSystem.property.code` is what a concept's `property.code` refers to ("a code that is
//!   used to identify the property"), so two properties SHALL NOT share a code, nor the `uri`
//!   that says what the property means: `CODESYSTEM_PROPERTY_DUPLICATE` (on the second);
//! - a property whose `uri` is one of the concept properties R4 defines
//!   (`http://hl7.org/fhir/concept-properties#inactive`, `#deprecated`, `#notSelectable`,
//!   `#parent`, `#child`) has the type that code system gives it (boolean, dateTime, boolean,
//!   code, code): otherwise `CODESYSTEM_PROPERTY_TYPE` (on the property);
//! - a concept's `property` is "a property value for this concept": its `value[x]` has the type
//!   of the property it names (`code`, `Coding`, `string`, `integer`, `boolean`, `dateTime`,
//!   `decimal`; the first definition of that code counts): otherwise
//!   `CODESYSTEM_CONCEPT_PROPERTY_TYPE`; a code the code system defines no property for is
//!   `CODESYSTEM_PROPERTY_UNDEFINED`, a warning (tools cannot tell what it means);
//! - a code system with `supplements` is a supplement, and `content` `supplement` is how it says
//!   so (CodeSystem.content, "this code system is a supplement"): any other content is
//!   `CODESYSTEM_SUPPLEMENT_CONTENT` (on `content`);
//! - a `composite` SearchParameter is built from its `component`s, "the parts of a composite
//!   search parameter": fewer than two is `SEARCHPARAMETER_COMPOSITE_COMPONENTS` (on the
//!   resource);
//! - a StructureDefinition whose `derivation` is `constraint` "adds additional rules to an
//!   existing concrete type": every `differential.element.path` of one that constrains a core
//!   type names an element of that type (a choice as `value[x]` or renamed for one of its types,
//!   `valueQuantity`; through the data types of the elements): otherwise
//!   `STRUCTUREDEFINITION_PATH_UNKNOWN` (on the `path`). A path through an element of several
//!   types, or of a resource type, is not judged. A slicing's discriminator `path` is "a
//!   FHIRPath expression ... relative to the element that is being sliced": its first step names
//!   an element of the sliced element (or the stem of one of its choices, `value`): otherwise
//!   `STRUCTUREDEFINITION_DISCRIMINATOR_PATH_UNKNOWN` (on the discriminator); paths starting with
//!   `$this`, a function (`resolve()`, `extension(...)`, `ofType(...)`) are not judged;
//! - `StructureDefinition.type` is "the type this structure describes": a relative one is
//!   relative to `http://hl7.org/fhir/StructureDefinition` ("string" is
//!   `http://hl7.org/fhir/StructureDefinition/string`), so it names a type of the specification
//!   (a core type, or one of R4's logical models: Definition, Event, FiveWs, MetadataResource,
//!   Request), and "absolute URLs are only allowed in logical models": otherwise
//!   `STRUCTUREDEFINITION_TYPE_UNKNOWN` (on `type`);
//! - an element type's `profile` "applies to the datatype this element refers to" (R4
//!   ElementDefinition.type.profile), and a StructureDefinition is about its `type` (a
//!   `specialization` defines that type): a profile that is a core type's own definition
//!   (`http://hl7.org/fhir/StructureDefinition/Count`, whose type is Count) on an element of a
//!   type that is not that type nor derived from it (`Quantity`: Count specializes Quantity, not
//!   the other way) is `STRUCTUREDEFINITION_TYPE_PROFILE_WRONG` (on the `profile`), in the
//!   differential and the snapshot. Profiles of other canonicals (core profiles such as
//!   SimpleQuantity, extension definitions, packages' profiles), `Reference` elements (whose
//!   targets are `targetProfile`) and elements of type `Resource` or `DomainResource` are not
//!   judged here.
//!
//! - a SearchParameter's `derivedFrom` names "the definition from which this search parameter is
//!   derived"; when that is one of R4's core search parameters (`definitions/searchparams.txt`,
//!   generated from the R4 build), a derived parameter applies to resources the original does
//!   (each `base` one of its bases, or the original's base is `Resource`): otherwise
//!   `SEARCHPARAMETER_DERIVED_BASE` (on the `base`), and is searched the same way (its `type` the
//!   original's): otherwise `SEARCHPARAMETER_DERIVED_TYPE` (on `type`), as the reference
//!   validator reports both;
//! - a CapabilityStatement's `searchParam` (of a resource, or of the whole system) whose
//!   `definition` is a core search parameter has that parameter's `type` ("the type of value a
//!   search parameter refers to", which the definition fixes): otherwise
//!   `CAPABILITYSTATEMENT_SEARCHPARAM_TYPE` (on the `searchParam`).
//!
//! What it does not do: rules that need another resource (a supplement's base code system, the
//! code system a ValueSet filter's property is defined in, a search parameter of a package that
//! a SearchParameter derives from or a CapabilityStatement names), nor the FHIRPath of a search
//! parameter's `expression` against its base types.

use crate::diag::{Code, Location};

use super::definitions as defs;
use super::model::Document;
use super::validate::Findings;

/// The concept properties R4 defines (`http://hl7.org/fhir/concept-properties`) and their types.
const CONCEPT_PROPERTIES: [(&[u8], &[u8]); 5] = [
    (b"http://hl7.org/fhir/concept-properties#inactive", b"boolean"),
    (b"http://hl7.org/fhir/concept-properties#deprecated", b"dateTime"),
    (b"http://hl7.org/fhir/concept-properties#notSelectable", b"boolean"),
    (b"http://hl7.org/fhir/concept-properties#parent", b"code"),
    (b"http://hl7.org/fhir/concept-properties#child", b"code"),
];

/// The property types of R4 (`property-type`), each the name of the `value[x]` type it asks for.
const PROPERTY_TYPES: [&str; 7] = ["code", "Coding", "string", "integer", "boolean", "dateTime", "decimal"];

/// R4's core search parameters, generated (`tools/gen_fhir_tables.py`): a line per parameter,
/// `id<TAB>type<TAB>base,base...`, sorted by id; the canonical is [`CORE_SP`] and the id.
static SEARCH_PARAMS: &str = include_str!("definitions/searchparams.txt");

/// The canonical prefix of the core search parameters.
const CORE_SP: &[u8] = b"http://hl7.org/fhir/SearchParameter/";

/// The core search parameters, `(id, type, bases)`, decoded on first use.
fn search_params() -> &'static [(&'static str, &'static str, &'static str)] {
    static TABLE: std::sync::OnceLock<Vec<(&str, &str, &str)>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        SEARCH_PARAMS
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let mut parts = l.split('\t');
                Some((parts.next()?, parts.next()?, parts.next()?))
            })
            .collect()
    })
}

/// The type and base resource types (comma separated) of the core search parameter a canonical
/// names (`http://hl7.org/fhir/SearchParameter/<id>`, a `|version` aside).
pub fn core_search_parameter(canonical: &[u8]) -> Option<(&'static str, &'static str)> {
    let url = canonical.split(|&b| b == b'|').next()?;
    let id = url.strip_prefix(CORE_SP)?;
    let table = search_params();
    let k = table.binary_search_by(|(i, _, _)| i.as_bytes().cmp(id)).ok()?;
    Some((table[k].1, table[k].2))
}

/// Runs the rules over every CodeSystem, SearchParameter, StructureDefinition and
/// CapabilityStatement of the document.
pub(super) fn check(doc: &Document, f: &mut Findings) {
    let (Some(code_system), Some(search_parameter), Some(structure_definition), Some(capability_statement)) = (
        defs::known_type!(b"CodeSystem"),
        defs::known_type!(b"SearchParameter"),
        defs::known_type!(b"StructureDefinition"),
        defs::known_type!(b"CapabilityStatement"),
    ) else {
        return;
    };
    for r in 0..doc.nodes().len() as u32 {
        let node = doc.node(r);
        if !node.is_resource() || node.is_unknown() {
            continue;
        }
        if node.ty == Some(code_system) {
            check_code_system(doc, r, f);
        } else if node.ty == Some(search_parameter) {
            check_search_parameter(doc, r, f);
        } else if node.ty == Some(structure_definition) {
            check_structure_definition(doc, r, f);
        } else if node.ty == Some(capability_statement) {
            check_capability_statement(doc, r, f);
        }
    }
}

/// The value of the first child `name` of node `i` that has one.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn value_of<'a>(doc: &'a Document, i: u32, name: &'a str) -> Option<(u32, &'a [u8])> {
    doc.named(i, name).find(|&c| doc.node(c).has_value() && !doc.node(c).is_unknown()).map(|c| (c, doc.value(c)))
}

fn check_code_system(doc: &Document, r: u32, f: &mut Findings) {
    // (code, type) of each property, in order; the first definition of a code counts.
    let mut defined: Vec<(&[u8], Option<&[u8]>)> = Vec::new();
    let mut uris: Vec<&[u8]> = Vec::new();
    for p in doc.named(r, "property") {
        let code = value_of(doc, p, "code").map(|(_, v)| v);
        let ty = value_of(doc, p, "type").map(|(_, v)| v);
        let uri = value_of(doc, p, "uri").map(|(_, v)| v);
        let duplicate_code = code.is_some_and(|c| defined.iter().any(|&(d, _)| d == c));
        let duplicate_uri = uri.is_some_and(|u| uris.contains(&u));
        if duplicate_code || duplicate_uri {
            f.push(Code::CODESYSTEM_PROPERTY_DUPLICATE, Location::Fhir(doc.path(p)));
        }
        if let (Some(uri), Some(ty)) = (uri, ty) {
            if CONCEPT_PROPERTIES.iter().any(|&(u, t)| u == uri && t != ty) {
                f.push(Code::CODESYSTEM_PROPERTY_TYPE, Location::Fhir(doc.path(p)));
            }
        }
        if let Some(code) = code.filter(|_| !duplicate_code) {
            defined.push((code, ty));
        }
        if let Some(uri) = uri {
            uris.push(uri);
        }
    }
    // Concepts nest (`concept.concept`): every concept of the resource, not of a contained one.
    for c in r + 1..doc.node(r).end {
        let node = doc.node(c);
        if node.name != "concept" || node.is_unknown() || doc.resource_of(c) != r {
            continue;
        }
        for p in doc.named(c, "property") {
            let Some((_, code)) = value_of(doc, p, "code") else { continue };
            let Some(&(_, ty)) = defined.iter().find(|&&(d, _)| d == code) else {
                f.push(Code::CODESYSTEM_PROPERTY_UNDEFINED, Location::Fhir(doc.path(p)));
                continue;
            };
            // A type outside the code list is CODE_INVALID already.
            let Some(expected) = ty.and_then(|t| PROPERTY_TYPES.iter().find(|n| n.as_bytes() == t)) else { continue };
            let Some(value) = doc.named(p, "value").find(|&v| !doc.node(v).is_unknown()) else { continue };
            if doc.node(value).ty.is_some_and(|t| defs::type_name(t) != *expected) {
                f.push(Code::CODESYSTEM_CONCEPT_PROPERTY_TYPE, Location::Fhir(doc.path(p)));
            }
        }
    }
    if doc.named(r, "supplements").any(|s| doc.node(s).has_value()) {
        if let Some((content, v)) = value_of(doc, r, "content") {
            if v != b"supplement" {
                f.push(Code::CODESYSTEM_SUPPLEMENT_CONTENT, Location::Fhir(doc.path(content)));
            }
        }
    }
}

fn check_search_parameter(doc: &Document, r: u32, f: &mut Findings) {
    let composite = value_of(doc, r, "type").is_some_and(|(_, v)| v == b"composite");
    if composite && doc.named(r, "component").count() < 2 {
        f.push(Code::SEARCHPARAMETER_COMPOSITE_COMPONENTS, Location::Fhir(doc.path(r)));
    }
    let Some((ty, bases)) = value_of(doc, r, "derivedFrom").and_then(|(_, v)| core_search_parameter(v)) else {
        return;
    };
    if !bases.split(',').any(|b| b == "Resource") {
        for b in doc.named(r, "base") {
            let node = doc.node(b);
            if node.is_unknown() || !node.has_value() {
                continue;
            }
            if !bases.split(',').any(|x| x.as_bytes() == plain(doc, b)) {
                f.push(Code::SEARCHPARAMETER_DERIVED_BASE, Location::Fhir(doc.path(b)));
            }
        }
    }
    if let Some((t, v)) = value_of(doc, r, "type") {
        if v != ty.as_bytes() {
            f.push(Code::SEARCHPARAMETER_DERIVED_TYPE, Location::Fhir(doc.path(t)));
        }
    }
}

/// The value of a primitive node (a code of the document compared with the core tables).
#[expect(
    clippy::disallowed_methods,
    reason = "a validator: it compares a code with the core search parameters; what it returns is value-free"
)]
fn plain(doc: &Document, i: u32) -> &[u8] {
    doc.value(i)
}

fn check_capability_statement(doc: &Document, r: u32, f: &mut Findings) {
    for rest in doc.named(r, "rest") {
        let system = doc.named(rest, "searchParam");
        let of_resources = doc.named(rest, "resource").flat_map(|res| doc.named(res, "searchParam"));
        for p in system.chain(of_resources) {
            let Some((ty, _)) = value_of(doc, p, "definition").and_then(|(_, v)| core_search_parameter(v)) else {
                continue;
            };
            if value_of(doc, p, "type").is_some_and(|(_, v)| v != ty.as_bytes()) {
                f.push(Code::CAPABILITYSTATEMENT_SEARCHPARAM_TYPE, Location::Fhir(doc.path(p)));
            }
        }
    }
}

/// The logical models R4 defines (`kind` logical, a relative `type`).
const R4_LOGICAL_MODELS: [&[u8]; 5] = [b"Definition", b"Event", b"FiveWs", b"MetadataResource", b"Request"];

fn check_structure_definition(doc: &Document, r: u32, f: &mut Findings) {
    if let Some((at, ty)) = value_of(doc, r, "type") {
        let logical = value_of(doc, r, "kind").is_some_and(|(_, k)| k == b"logical");
        let known =
            if ty.contains(&b':') { logical } else { defs::type_id(ty).is_some() || R4_LOGICAL_MODELS.contains(&ty) };
        if !known {
            f.push(Code::STRUCTUREDEFINITION_TYPE_UNKNOWN, Location::Fhir(doc.path(at)));
        }
    }
    for part in ["differential", "snapshot"] {
        for d in doc.named(r, part) {
            for e in doc.named(d, "element") {
                for t in doc.named(e, "type") {
                    check_type_profiles(doc, t, f);
                }
            }
        }
    }
    if value_of(doc, r, "derivation").is_none_or(|(_, v)| v != b"constraint") {
        return;
    }
    let Some(ty) = value_of(doc, r, "type").and_then(|(_, v)| defs::type_id(v)) else {
        return;
    };
    for d in doc.named(r, "differential") {
        for e in doc.named(d, "element") {
            let Some((at, path)) = value_of(doc, e, "path") else { continue };
            if element_path_exists(ty, path) == Some(false) {
                f.push(Code::STRUCTUREDEFINITION_PATH_UNKNOWN, Location::Fhir(doc.path(at)));
                continue;
            }
            for slicing in doc.named(e, "slicing") {
                for discriminator in doc.named(slicing, "discriminator") {
                    let Some((_, d)) = value_of(doc, discriminator, "path") else { continue };
                    if discriminator_step_unknown(ty, path, d) {
                        let location = Location::Fhir(doc.path(discriminator));
                        f.push(Code::STRUCTUREDEFINITION_DISCRIMINATOR_PATH_UNKNOWN, location);
                    }
                }
            }
        }
    }
}

/// True when the first step of discriminator path `d` of the element at `path` (of core type
/// `ty`) names no element of it, as the core definitions tell (neither `step` nor `step[x]`);
/// false when it does or cannot be told (`$this`, a function, a path not judged).
fn discriminator_step_unknown(ty: defs::TypeId, path: &[u8], d: &[u8]) -> bool {
    let step = d.split(|&b| b == b'.').next().unwrap_or_default();
    if step.is_empty() || step.starts_with(b"$") || step.contains(&b'(') {
        return false;
    }
    let under = |suffix: &[u8]| {
        let mut p = Vec::with_capacity(path.len() + step.len() + 4);
        p.extend_from_slice(path);
        p.push(b'.');
        p.extend_from_slice(step);
        p.extend_from_slice(suffix);
        element_path_exists(ty, &p)
    };
    under(b"") == Some(false) && under(b"[x]") == Some(false)
}

/// The core definitions' own canonicals, `http://hl7.org/fhir/StructureDefinition/` and a type
/// name.
const CORE_SD: &[u8] = b"http://hl7.org/fhir/StructureDefinition/";

/// `STRUCTUREDEFINITION_TYPE_PROFILE_WRONG` on each `profile` of an element type (node `t`)
/// that is the definition of a core type the type's `code` neither is nor derives from.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn check_type_profiles(doc: &Document, t: u32, f: &mut Findings) {
    let Some((_, code)) = value_of(doc, t, "code") else { return };
    // `Reference` elements name their targets' profiles in `targetProfile`; an element of an
    // abstract resource type (`Bundle.entry.resource`) is where resource profiles go.
    if matches!(code, b"Reference" | b"Resource" | b"DomainResource") {
        return;
    }
    let Some(code) = defs::type_id(code) else { return };
    for p in doc.named(t, "profile") {
        let node = doc.node(p);
        if !node.has_value() || node.is_unknown() {
            continue;
        }
        let value = doc.value(p);
        let canonical = value.split(|&b| b == b'|').next().unwrap_or(value);
        let Some(name) = canonical.strip_prefix(CORE_SD) else { continue };
        let Some(profiled) = defs::type_id(name) else { continue };
        if !defs::derives_from(code, defs::type_name(profiled)) {
            f.push(Code::STRUCTUREDEFINITION_TYPE_PROFILE_WRONG, Location::Fhir(doc.path(p)));
        }
    }
}

/// Whether `path` (`Observation.code.coding.system`, `Observation.value[x]`,
/// `Observation.valueQuantity.unit`) names an element of core type `ty`: `None` when that cannot
/// be told from the core definitions alone (a path that does not start with the type's name, or
/// goes on through an element of several types or a resource).
fn element_path_exists(ty: defs::TypeId, path: &[u8]) -> Option<bool> {
    let mut segs = path.split(|&b| b == b'.');
    if segs.next()? != defs::type_name(ty).as_bytes() {
        return None;
    }
    let mut ctx = defs::ElemRef { ty, idx: 0 };
    let mut segs = segs.peekable();
    while let Some(seg) = segs.next() {
        let (r, concrete) = match seg.strip_suffix(b"[x]") {
            Some(stem) => {
                let def = defs::type_def(ctx.ty);
                let found = defs::children(ctx).iter().copied().find(|&c| {
                    def.elements.get(usize::from(c)).is_some_and(|el| el.choice && el.name.as_bytes() == stem)
                });
                match found {
                    Some(idx) => (defs::ElemRef { ty: ctx.ty, idx }, None),
                    None => return Some(false),
                }
            }
            None => match defs::child(ctx, seg) {
                Some(found) => found,
                None => return Some(false),
            },
        };
        if segs.peek().is_none() {
            break;
        }
        if !defs::children(r).is_empty() {
            ctx = r;
            continue;
        }
        let el = defs::element(r)?;
        let next = match (concrete, el.types.as_slice()) {
            (Some(t), _) => t,
            (None, [defs::TypeRef::Type(t)]) => *t,
            _ => return None,
        };
        ctx = defs::ElemRef { ty: next, idx: 0 };
    }
    Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differential_paths_name_elements_of_the_core_type() {
        let obs = defs::type_id(b"Observation").expect("Observation");
        for ok in [
            "Observation",
            "Observation.code.coding.system",
            "Observation.value[x]",
            "Observation.valueQuantity",
            "Observation.valueQuantity.unit",
            "Observation.component.value[x]",
            "Observation.component.code.coding.extension.value[x]",
            "Observation.status.extension",
            "Observation.referenceRange.low.value",
        ] {
            assert_eq!(element_path_exists(obs, ok.as_bytes()), Some(true), "{ok}");
        }
        for bad in [
            "Observation.valueBla",
            "Observation.code.codings",
            "Observation.valueQuantity.bla",
            "Observation.flavour[x]",
        ] {
            assert_eq!(element_path_exists(obs, bad.as_bytes()), Some(false), "{bad}");
        }
        // Not judged: another type's path, an element of several types, a resource.
        assert_eq!(element_path_exists(obs, b"Patient.name"), None);
        assert_eq!(element_path_exists(obs, b"Observation.value[x].unit"), None);
        let bundle = defs::type_id(b"Bundle").expect("Bundle");
        assert_eq!(element_path_exists(bundle, b"Bundle.entry.resource.id"), None);
        // Through a content reference (`Questionnaire.item.item`).
        let q = defs::type_id(b"Questionnaire").expect("Questionnaire");
        assert_eq!(element_path_exists(q, b"Questionnaire.item.item.linkId"), Some(true));
    }

    /// Regression (observation-bad-profile of the reference suite): a type profile that is a core
    /// type's own definition applies to that type only; core profiles, other canonicals, and a
    /// profile of the type an element's type derives from are not reported.
    #[test]
    fn type_profiles_name_a_definition_of_the_elements_type() {
        let sd = |code: &str, profile: &str| {
            let json = format!(
                r#"{{"resourceType":"StructureDefinition","url":"http://example.invalid/sd","name":"X","status":"draft","kind":"resource","abstract":false,"type":"Observation","baseDefinition":"http://hl7.org/fhir/StructureDefinition/Observation","derivation":"constraint","differential":{{"element":[{{"id":"Observation.value[x]","path":"Observation.value[x]","type":[{{"code":"{code}","profile":["{profile}"]}}]}}]}}}}"#
            );
            let doc = crate::formats::fhir::read(json.into_bytes(), &crate::limits::Limits::default()).expect("reads");
            let mut f = Findings::new(false);
            check(&doc, &mut f);
            f.into_list().iter().filter(|d| d.code == Code::STRUCTUREDEFINITION_TYPE_PROFILE_WRONG).count()
        };
        let core = "http://hl7.org/fhir/StructureDefinition/";
        assert_eq!(sd("Quantity", &format!("{core}Count")), 1);
        assert_eq!(sd("Quantity", &format!("{core}Count|4.0.1")), 1);
        assert_eq!(sd("string", &format!("{core}Quantity")), 1);
        assert_eq!(sd("Quantity", &format!("{core}Quantity")), 0);
        assert_eq!(sd("Quantity", &format!("{core}SimpleQuantity")), 0);
        assert_eq!(sd("Count", &format!("{core}Quantity")), 0);
        assert_eq!(sd("Quantity", "http://example.invalid/StructureDefinition/Count"), 0);
        assert_eq!(sd("Reference", &format!("{core}Patient")), 0);
        assert_eq!(sd("Resource", &format!("{core}Patient")), 0);
    }

    /// Regression (StructureDefinition-Slice23 of the reference suite): a discriminator's first
    /// step names an element of the sliced element; `$this`, functions, choice stems and paths
    /// through elements not judged pass.
    #[test]
    fn discriminator_paths_start_with_an_element_of_the_sliced_one() {
        let audit = defs::type_id(b"AuditEvent").expect("AuditEvent");
        let obs = defs::type_id(b"Observation").expect("Observation");
        assert!(discriminator_step_unknown(audit, b"AuditEvent.agent.extension", b"type"));
        assert!(!discriminator_step_unknown(audit, b"AuditEvent.agent.extension", b"url"));
        assert!(!discriminator_step_unknown(audit, b"AuditEvent.agent", b"type"));
        assert!(!discriminator_step_unknown(audit, b"AuditEvent.agent.extension", b"value"));
        assert!(!discriminator_step_unknown(obs, b"Observation.component", b"code.coding.code"));
        assert!(discriminator_step_unknown(obs, b"Observation.component", b"coding.code"));
        for skipped in [&b"$this"[..], b"resolve().code", b"extension('http://x').value", b""] {
            assert!(!discriminator_step_unknown(obs, b"Observation.component", skipped));
        }
        assert!(!discriminator_step_unknown(obs, b"Observation.value[x]", b"$this"));
        let bundle = defs::type_id(b"Bundle").expect("Bundle");
        assert!(!discriminator_step_unknown(bundle, b"Bundle.entry.resource", b"meta"));
    }

    /// Regression (logical-boo-bad1 of the reference suite): a relative type names a type of the
    /// specification; an absolute one is a logical model's only.
    #[test]
    fn types_are_the_specifications_or_a_logical_models_url() {
        let sd = |kind: &str, ty: &str| {
            let json = format!(
                r#"{{"resourceType":"StructureDefinition","url":"http://example.invalid/sd","name":"X","status":"draft","kind":"{kind}","abstract":false,"type":"{ty}","baseDefinition":"http://hl7.org/fhir/StructureDefinition/Base","derivation":"specialization"}}"#
            );
            let doc = crate::formats::fhir::read(json.into_bytes(), &crate::limits::Limits::default()).expect("reads");
            let mut f = Findings::new(false);
            check(&doc, &mut f);
            f.into_list().iter().filter(|d| d.code == Code::STRUCTUREDEFINITION_TYPE_UNKNOWN).count()
        };
        assert_eq!(sd("logical", "Boo"), 1);
        assert_eq!(sd("resource", "Boo"), 1);
        assert_eq!(sd("resource", "http://example.org/StructureDefinition/Boo"), 1);
        assert_eq!(sd("logical", "http://example.org/StructureDefinition/Boo"), 0);
        assert_eq!(sd("logical", "Event"), 0);
        assert_eq!(sd("resource", "Patient"), 0);
        assert_eq!(sd("complex-type", "Count"), 0);
    }

    /// The built-in tables are R4's (`hl7.fhir.r4.examples` 4.0.1): EvidenceVariable has R4's
    /// elements, not R5's, and elements other packages add are not there.
    #[test]
    fn the_core_types_are_r4s() {
        let ev = defs::type_id(b"EvidenceVariable").expect("EvidenceVariable");
        for r4 in [
            "EvidenceVariable.characteristic.definition[x]",
            "EvidenceVariable.characteristic.definitionCodeableConcept",
            "EvidenceVariable.characteristic.usageContext",
            "EvidenceVariable.characteristic.participantEffective[x]",
            "EvidenceVariable.characteristic.timeFromStart.value",
            "EvidenceVariable.characteristic.groupMeasure",
        ] {
            assert_eq!(element_path_exists(ev, r4.as_bytes()), Some(true), "{r4}");
        }
        for r5 in ["EvidenceVariable.characteristic.definitionByTypeAndValue", "EvidenceVariable.characteristic.linkId"]
        {
            assert_eq!(element_path_exists(ev, r5.as_bytes()), Some(false), "{r5}");
        }
        for (ty, path) in [
            ("Binary", "Binary.url"),
            ("ResearchStudy", "ResearchStudy.label"),
            ("DeviceDefinition", "DeviceDefinition.classification"),
            ("ObservationDefinition", "ObservationDefinition.publisher"),
            ("Patient", "Patient.meta.project"),
        ] {
            let id = defs::type_id(ty.as_bytes()).expect("core type");
            assert_eq!(element_path_exists(id, path.as_bytes()), Some(false), "{path}");
        }
    }
}
