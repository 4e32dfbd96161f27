//! The core extension definitions of FHIR R4 (the 393 `StructureDefinition`s of extensions
//! published with the specification: `patient-birthTime`, `data-absent-reason`,
//! `patient-animal`, ...) and those of the FHIR extensions pack (`hl7.fhir.uv.extensions.r4`,
//! which the reference validator loads with every R4 validation: 291 more, `individual-pronouns`,
//! `patient-bornStatus`, ...), and the checks of an extension that names one of them:
//!
//! - where it is used: the parent element matches one of the definition's contexts (a type or
//!   a type it derives from, an element path, `Element` for any element), otherwise
//!   `EXTENSION_CONTEXT_INVALID` (on the extension);
//! - as `modifierExtension` exactly when the definition is a modifier, otherwise
//!   `EXTENSION_MODIFIER_MISMATCH`;
//! - its value: present when the definition requires one (`CARDINALITY_MIN` on `value[x]`),
//!   absent for a complex extension (`CARDINALITY_MAX`), of a type the definition allows
//!   (`EXTENSION_TYPE_INVALID` on the value); no nested extension where the definition allows
//!   none (`CARDINALITY_MAX`);
//! - the parts of a complex extension (nested extensions with a relative url): each one a part
//!   the definition names (`EXTENSION_URL_INVALID` on its url otherwise), each part within its
//!   cardinality, and each part's value as above.
//!
//! And for every extension: the url of an extension that is not the part of another one is an
//! absolute URI ("the definition SHALL be a URI for the Structure Definition defining the
//! extension", Extension.url), otherwise `EXTENSION_URL_INVALID`; a url in the namespace of the
//! core and the pack (`http://hl7.org/fhir/StructureDefinition/`) that neither defines is
//! `EXTENSION_UNKNOWN` (the reference validator's "could not be found so is not allowed here":
//! that namespace is HL7's, and its definitions are all known). A cross-version url is checked
//! against the definition [`super::xver`] makes of it as above (its context aside), and is
//! `EXTENSION_UNKNOWN` when there is none. Urls of other namespaces (an IG's: US Core's,
//! Synthea's) that nothing defines are `PROFILE_EXTENSION_UNKNOWN`, packages loaded or not
//! ([`report_unknown`] without packages, [`super::profile`] with them), unless the reference
//! validator's `allowUnknownExtension` holds ([`unknown_allowed`]; docs/fhir-profiles.md,
//! "Unknown extensions").
//!
//! The tables: `definitions/extensions.txt` comes from the same generator and package as the
//! structure tables (`tools/gen_fhir_tables.py`), `definitions/extensions-pack.txt` from the
//! extensions pack (`tools/gen_fhir_extpack.py`: the pack's definitions of urls the core does
//! not define; a url both define keeps the core's); provenance in `definitions/PROVENANCE.md`.
//! Both are text decoded together on the first extension checked.
//!
//! What it does not do: extensions of implementation guides (not loaded), the invariants and
//! bindings of the extension definitions, or parts of parts.

use std::sync::OnceLock;

use crate::diag::{Code, Location};

use super::definitions::{self as defs, ElemRef, TypeId, TypeRef};
use super::model::{Document, NONE};
use super::rules::child_value;
use super::validate::Findings;

static TABLE: &str = include_str!("definitions/extensions.txt");
/// The extensions pack's definitions of the urls `TABLE` does not hold (same format).
static PACK: &str = include_str!("definitions/extensions-pack.txt");

/// The namespace of the core extensions and of the extensions pack.
const CORE_NAMESPACE: &[u8] = b"http://hl7.org/fhir/StructureDefinition/";

/// What an extension (or a part of a complex one) may hold.
#[derive(Debug)]
struct Shape {
    value_min: u32,
    value_max: u32,
    /// The allowed value types; `None` when any type goes (a type the tables do not know).
    types: Option<Vec<TypeId>>,
    /// Maximum number of nested extensions.
    ext_max: u32,
}

/// A part of a complex extension.
#[derive(Debug)]
struct Part {
    url: &'static str,
    min: u32,
    max: u32,
    shape: Shape,
}

/// A core or extensions pack extension definition (or a cross-version one, made per use).
#[derive(Debug)]
struct Definition {
    /// The url (empty for a cross-version definition, which is not looked up by it).
    url: &'static str,
    modifier: bool,
    /// Context expressions; `*` for any.
    contexts: Vec<&'static str>,
    shape: Shape,
    parts: Vec<Part>,
}

fn max_of(s: &str) -> u32 {
    if s == "*" { u32::MAX } else { s.parse().unwrap_or(u32::MAX) }
}

fn shape(fields: &[&'static str]) -> Shape {
    let field = |k: usize| fields.get(k).copied().unwrap_or("");
    let types = match field(2) {
        "-" => Some(Vec::new()),
        list => list.split(',').map(|t| defs::type_id(t.as_bytes())).collect::<Option<Vec<_>>>(),
    };
    Shape { value_min: field(0).parse().unwrap_or(0), value_max: max_of(field(1)), types, ext_max: max_of(field(3)) }
}

/// The definitions of the core and of the pack, sorted by url (decoded on first use); a url
/// both tables held would keep the core's.
fn definitions() -> &'static [Definition] {
    static DEFS: OnceLock<Vec<Definition>> = OnceLock::new();
    DEFS.get_or_init(|| {
        let mut out: Vec<Definition> = Vec::new();
        for line in TABLE.lines().chain(PACK.lines()).filter(|l| !l.starts_with('#')) {
            let f: Vec<&'static str> = line.split('\t').collect();
            match f.first().copied() {
                Some("X") if f.len() >= 8 => out.push(Definition {
                    url: f[1],
                    modifier: f[2] == "m",
                    contexts: f[3].split(',').collect(),
                    shape: shape(&f[4..]),
                    parts: Vec::new(),
                }),
                Some("S") if f.len() >= 8 => {
                    if let Some(d) = out.last_mut() {
                        d.parts.push(Part {
                            url: f[1],
                            min: f[2].parse().unwrap_or(0),
                            max: max_of(f[3]),
                            shape: shape(&f[4..]),
                        });
                    }
                }
                _ => {}
            }
        }
        // Stable: of equal urls, the core's (read first) is kept.
        out.sort_by(|a, b| a.url.cmp(b.url));
        out.dedup_by(|later, first| later.url == first.url);
        out
    })
}

fn find(url: &[u8]) -> Option<&'static Definition> {
    let url = url.split(|&b| b == b'|').next().unwrap_or(url);
    let defs = definitions();
    defs.binary_search_by(|d| d.url.as_bytes().cmp(url)).ok().and_then(|k| defs.get(k))
}

/// True when `url` names a core or extensions pack extension definition.
pub(super) fn is_known(url: &[u8]) -> bool {
    find(url).is_some()
}

/// True when `url` is in the namespace of the core and pack extensions
/// (`http://hl7.org/fhir/StructureDefinition/`), where every definition is known.
pub(super) fn in_core_namespace(url: &[u8]) -> bool {
    url.starts_with(CORE_NAMESPACE)
}

/// True when the core's check ([`check`]) decides on an extension of `url`: a core or pack
/// definition, a url of their namespace (known to be undefined when neither defines it), a
/// cross-version url ([`super::xver`]).
pub(super) fn decided_by_core(url: &[u8]) -> bool {
    is_known(url) || in_core_namespace(url) || super::xver::matching(url)
}

/// True when the core's check reports an extension of `url` unknown (`EXTENSION_UNKNOWN`): a url
/// of the core's namespace that neither the core nor the pack defines, a cross-version url
/// with no definition (a loaded package that defines it withdraws that finding).
pub(super) fn core_reports_unknown(url: &[u8]) -> bool {
    !is_known(url)
        && (if super::xver::matching(url) { super::xver::element(url).is_none() } else { in_core_namespace(url) })
}

/// The reference validator's `allowUnknownExtension`: an extension whose definition is not
/// known is allowed (not reported) when its url contains an example domain (`example.org`,
/// `acme.com`) while example URLs are allowed (no `--no-example-urls`), contains `nema.org`
/// (DICOM's), is one of the FHIR tools IG's (`http://hl7.org/fhir/tools/StructureDefinition/`),
/// starts with a domain of `--allow-extension-domain`, or when `--allow-any-extensions` is set.
pub(super) fn unknown_allowed(url: &[u8], checks: &super::checks::Checks) -> bool {
    let contains = |needle: &[u8]| memchr::memmem::find(url, needle).is_some();
    checks.allow_any_extensions
        || (!checks.no_example_urls && super::checks::is_example_url(url))
        || contains(b"nema.org")
        || url.starts_with(b"http://hl7.org/fhir/tools/StructureDefinition/")
        || checks.allowed_extension_domains.iter().any(|d| url.starts_with(d.as_bytes()))
}

/// Every extension of a validation with no package loaded whose url no core check decides on
/// ([`decided_by_core`]) and no option allows ([`unknown_allowed`]): `PROFILE_EXTENSION_UNKNOWN`,
/// an error, the reference validator's "could not be found so is not allowed here" (with
/// packages, [`super::profile`] reports it when no loaded package defines the url either). A
/// relative url is a part of a complex extension (or `EXTENSION_URL_INVALID` at the top).
pub(super) fn report_unknown(doc: &Document, checks: &super::checks::Checks, f: &mut Findings) {
    let Some(e) = elems() else { return };
    for i in 0..doc.nodes().len() as u32 {
        let node = doc.node(i);
        if node.is_unknown() || node.ty != Some(e.extension) || node.parent == NONE {
            continue;
        }
        let Some((_, url)) = child_value(doc, i, e.url) else { continue };
        if super::rules::is_absolute_uri(url) && !decided_by_core(url) && !unknown_allowed(url, checks) {
            f.push(Code::PROFILE_EXTENSION_UNKNOWN, Location::Fhir(doc.path(i)));
        }
    }
}

/// The number of core and pack extension definitions, and of their parts (for the
/// documentation test).
pub fn counts() -> (usize, usize) {
    let d = definitions();
    (d.len(), d.iter().map(|d| d.parts.len()).sum())
}

/// The elements of `Extension` the checks look at, resolved once.
struct Elems {
    extension: TypeId,
    url: ElemRef,
    value: ElemRef,
    nested: ElemRef,
}

fn elems() -> Option<&'static Elems> {
    static E: OnceLock<Option<Elems>> = OnceLock::new();
    E.get_or_init(|| {
        let extension = defs::type_id(b"Extension")?;
        let root = ElemRef { ty: extension, idx: 0 };
        let named = |name: &str| {
            defs::children(root)
                .iter()
                .map(|&idx| ElemRef { ty: extension, idx })
                .find(|&e| defs::element(e).is_some_and(|d| d.name == name))
        };
        Some(Elems { extension, url: named("url")?, value: named("value")?, nested: named("extension")? })
    })
    .as_ref()
}

/// The `Extension` type (the validator calls [`check`] for nodes of it).
pub(super) fn extension_type() -> Option<TypeId> {
    elems().map(|e| e.extension)
}

/// Checks the extension node `i`.
pub(super) fn check(doc: &Document, i: u32, f: &mut Findings) {
    let Some(e) = elems() else { return };
    let node = doc.node(i);
    if node.parent == NONE {
        return;
    }
    // A missing url is CARDINALITY_MIN already.
    let Some((url_node, url)) = child_value(doc, i, e.url) else { return };
    let parent = doc.node(node.parent);
    if parent.ty == Some(e.extension) && !super::rules::is_absolute_uri(url) {
        // A part of a complex extension: checked with its extension when that one is known.
        return;
    }
    if !super::rules::is_absolute_uri(url) {
        f.push(Code::EXTENSION_URL_INVALID, Location::Fhir(doc.path(url_node)));
        return;
    }
    let Some(def) = find(url) else {
        if super::xver::matching(url) {
            // A cross-version extension: its definition made from the other version's element.
            // Where it is used is not checked (see `xver`).
            match xver_definition(url) {
                Some(def) => check_against(doc, i, &def, true, e, f),
                None => f.push(Code::EXTENSION_UNKNOWN, Location::Fhir(doc.path(i))),
            }
        } else if in_core_namespace(url) {
            f.push(Code::EXTENSION_UNKNOWN, Location::Fhir(doc.path(i)));
        }
        return;
    };
    let in_context = def.contexts.iter().any(|c| in_context(doc, node.parent, c));
    check_against(doc, i, def, in_context, e, f);
}

/// The definition of a cross-version extension ([`super::xver`]), as the reference validator
/// makes it; `None` when its version or path has none.
fn xver_definition(url: &[u8]) -> Option<Definition> {
    let element = super::xver::element(url)?;
    let (shape, parts) = if element.is_complex() {
        let parts: Vec<Part> = element
            .parts()
            .map(|name| Part {
                url: name,
                min: 0,
                max: u32::MAX,
                shape: Shape {
                    value_min: 1,
                    value_max: 1,
                    types: super::xver::part(url, name).and_then(super::xver::Element::value_types),
                    ext_max: 0,
                },
            })
            .collect();
        // No typed child: no sub-extension is defined, none is allowed.
        let ext_max = if parts.is_empty() { 0 } else { u32::MAX };
        (Shape { value_min: 0, value_max: 0, types: Some(Vec::new()), ext_max }, parts)
    } else {
        (Shape { value_min: 1, value_max: 1, types: element.value_types(), ext_max: 0 }, Vec::new())
    };
    Some(Definition { url: "", modifier: element.modifier, contexts: Vec::new(), shape, parts })
}

/// Extension node `i` against its definition `def` (`in_context`: the use is in one of its
/// contexts).
fn check_against(doc: &Document, i: u32, def: &Definition, in_context: bool, e: &Elems, f: &mut Findings) {
    let node = doc.node(i);
    if (node.name == "modifierExtension") != def.modifier {
        f.push(Code::EXTENSION_MODIFIER_MISMATCH, Location::Fhir(doc.path(i)));
    }
    if !in_context {
        f.push(Code::EXTENSION_CONTEXT_INVALID, Location::Fhir(doc.path(i)));
    }
    check_shape(doc, i, &def.shape, e, f);
    if def.parts.is_empty() {
        return;
    }
    let mut counts = vec![0u32; def.parts.len()];
    for c in doc.children(i) {
        if doc.node(c).elem != Some(e.nested) {
            continue;
        }
        let Some((part_url_node, part_url)) = child_value(doc, c, e.url) else { continue };
        if super::rules::is_absolute_uri(part_url) {
            // Another extension inside this one (open slicing): checked on its own.
            continue;
        }
        let Some(k) = def.parts.iter().position(|p| p.url.as_bytes() == part_url) else {
            f.push(Code::EXTENSION_URL_INVALID, Location::Fhir(doc.path(part_url_node)));
            continue;
        };
        let part = &def.parts[k];
        counts[k] += 1;
        if counts[k] == part.max.saturating_add(1) {
            f.push(Code::CARDINALITY_MAX, Location::Fhir(doc.path(c)));
        }
        check_shape(doc, c, &part.shape, e, f);
    }
    if def.parts.iter().zip(&counts).any(|(p, &n)| n < p.min) {
        f.push(Code::CARDINALITY_MIN, Location::Fhir(doc.path_of_missing(i, e.nested)));
    }
}

/// The value and nested extensions of extension node `i` against `shape`.
fn check_shape(doc: &Document, i: u32, shape: &Shape, e: &Elems, f: &mut Findings) {
    let mut value = None;
    let mut first_nested = None;
    for c in doc.children(i) {
        let n = doc.node(c);
        if n.elem == Some(e.value) && value.is_none() {
            value = Some(c);
        } else if n.elem == Some(e.nested) && first_nested.is_none() {
            first_nested = Some(c);
        }
    }
    match value {
        None if shape.value_min > 0 => f.push(Code::CARDINALITY_MIN, Location::Fhir(doc.path_of_missing(i, e.value))),
        None => {}
        Some(v) if shape.value_max == 0 => f.push(Code::CARDINALITY_MAX, Location::Fhir(doc.path(v))),
        Some(v) => {
            let ty = doc.node(v).ty;
            if let (Some(types), Some(ty)) = (&shape.types, ty) {
                if !types.contains(&ty) {
                    f.push(Code::EXTENSION_TYPE_INVALID, Location::Fhir(doc.path(v)));
                }
            }
        }
    }
    if let (Some(c), 0) = (first_nested, shape.ext_max) {
        f.push(Code::CARDINALITY_MAX, Location::Fhir(doc.path(c)));
    }
}

/// True when the element `parent` is in context `ctx`: `*` or `Element` (any element), a type
/// the element's type is or derives from (`Quantity` for an `Age`, `Resource` for a resource),
/// or the element's path in its type (`Patient.birthDate`; a content reference's target path
/// too: `Questionnaire.item` for a nested item).
pub(super) fn in_context(doc: &Document, parent: u32, ctx: &str) -> bool {
    if ctx == "*" || ctx == "Element" {
        return true;
    }
    let p = doc.node(parent);
    let Some((head, rest)) = ctx.split_once('.') else {
        if p.ty.is_some_and(|t| defs::derives_from(t, ctx)) {
            return true;
        }
        // R5's interfaces, as R4 extensions name them: a resource with a canonical url and a
        // status (CodeSystem, ValueSet, StructureDefinition, Questionnaire...).
        if matches!(ctx, "CanonicalResource" | "MetadataResource") {
            return p.is_resource()
                && p.ty.is_some_and(|t| {
                    let root = ElemRef { ty: t, idx: 0 };
                    defs::child(root, b"url").is_some() && defs::child(root, b"status").is_some()
                });
        }
        // An element defined inline (`Patient.contact`) is a BackboneElement.
        return ctx == "BackboneElement"
            && p.ty.is_none()
            && p.elem.and_then(defs::element).is_some_and(|d| d.types.contains(&TypeRef::Backbone));
    };
    let Some(elem) = p.elem else { return false };
    // A path on an ancestor type (`DomainResource.text`) covers the types derived from it.
    if !defs::derives_from(elem.ty, head) {
        return false;
    }
    let Some(def) = defs::element(elem) else { return false };
    if def.path == rest {
        return true;
    }
    def.content_ref.and_then(|c| defs::element(ElemRef { ty: elem.ty, idx: c })).is_some_and(|t| t.path == rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;

    /// The extension findings of validating `input` (code and location).
    fn findings(input: &str) -> Vec<String> {
        let doc = crate::formats::fhir::read(input.as_bytes().to_vec(), &Limits::default()).expect("reads");
        super::super::validate::validate(&doc, Default::default())
            .iter()
            .filter(|d| d.code.as_str().starts_with("EXTENSION") || d.code.as_str().starts_with("CARDINALITY"))
            .filter(|d| d.code != Code::PROFILE_EXTENSION_UNKNOWN)
            .map(|d| format!("{} {}", d.code.as_str(), d.location))
            .collect()
    }

    const BIRTH_TIME: &str = "http://hl7.org/fhir/StructureDefinition/patient-birthTime";

    #[test]
    fn contexts_by_type_path_derivation_and_content_reference() {
        // An Age is a Quantity (a context by type); a nested item reuses Questionnaire.item.
        let ok = r#"{"resourceType":"Observation","status":"final","code":{"text":"x"},
            "valueQuantity":{"value":1,"extension":[{"url":"http://hl7.org/fhir/StructureDefinition/iso21090-uncertainty","valueDecimal":0.1}]}}"#;
        assert_eq!(findings(ok), Vec::<String>::new());
        let age = r#"{"resourceType":"Condition","subject":{"reference":"Patient/p"},
            "onsetAge":{"value":4,"extension":[{"url":"http://hl7.org/fhir/StructureDefinition/iso21090-uncertainty","valueDecimal":0.5}]}}"#;
        assert_eq!(findings(age), Vec::<String>::new());
        let q = r#"{"resourceType":"Questionnaire","status":"draft","item":[{"linkId":"1","type":"group","item":[{"linkId":"1.1","type":"string",
            "extension":[{"url":"http://hl7.org/fhir/StructureDefinition/questionnaire-hidden","valueBoolean":true}]}]}]}"#;
        assert_eq!(findings(q), Vec::<String>::new());
        let misplaced = format!(
            r#"{{"resourceType":"Patient","name":[{{"family":"X","extension":[{{"url":"{BIRTH_TIME}","valueDateTime":"1970"}}]}}]}}"#
        );
        assert_eq!(findings(&misplaced), ["EXTENSION_CONTEXT_INVALID Patient.name[0].extension[0]"]);
    }

    #[test]
    fn values_parts_and_urls() {
        let no_value = format!(
            r#"{{"resourceType":"Patient","birthDate":"1970","_birthDate":{{"extension":[{{"url":"{BIRTH_TIME}","extension":[{{"url":"x","valueString":"y"}}]}}]}}}}"#
        );
        assert_eq!(
            findings(&no_value),
            [
                "CARDINALITY_MIN Patient.birthDate.extension[0].value",
                "CARDINALITY_MAX Patient.birthDate.extension[0].extension[0]"
            ]
        );
        let animal = r#"{"resourceType":"Patient","extension":[{"url":"http://hl7.org/fhir/StructureDefinition/patient-animal","valueString":"dog",
            "extension":[{"url":"species","valueString":"dog"},{"url":"breed","valueCodeableConcept":{"text":"a"}},{"url":"breed","valueCodeableConcept":{"text":"b"}}]}]}"#;
        assert_eq!(
            findings(animal),
            [
                "CARDINALITY_MAX Patient.extension[0].valueString",
                "EXTENSION_TYPE_INVALID Patient.extension[0].extension[0].valueString",
                "CARDINALITY_MAX Patient.extension[0].extension[2]",
            ]
        );
        // A relative url inside an extension that is not a core one is not checked; at the top it is.
        let local = r#"{"resourceType":"Patient","extension":[{"url":"http://example.invalid/x","extension":[{"url":"part","valueString":"v"}]},{"url":"local-name","valueString":"v"}]}"#;
        assert_eq!(findings(local), ["EXTENSION_URL_INVALID Patient.extension[1].url"]);
    }

    #[test]
    fn the_extensions_pack_and_its_namespace() {
        let sd = "http://hl7.org/fhir/StructureDefinition/";
        let patient = |ext: &str| format!(r#"{{"resourceType":"Patient","extension":[{ext}]}}"#);
        // A pack definition: its context, value type and parts are checked like the core's.
        assert_eq!(
            findings(&patient(&format!(r#"{{"url":"{sd}patient-bornStatus","valueCode":"born"}}"#))),
            Vec::<String>::new()
        );
        assert_eq!(
            findings(&patient(&format!(r#"{{"url":"{sd}patient-bornStatus","valueBoolean":true}}"#))),
            ["EXTENSION_TYPE_INVALID Patient.extension[0].valueBoolean"]
        );
        let org = format!(
            r#"{{"resourceType":"Organization","name":"x","extension":[{{"url":"{sd}individual-pronouns","extension":[{{"url":"value","valueCodeableConcept":{{"text":"x"}}}}]}}]}}"#
        );
        assert_eq!(findings(&org), ["EXTENSION_CONTEXT_INVALID Organization.extension[0]"]);
        // Defined by neither, in their namespace (a version suffix does not change that).
        assert_eq!(
            findings(&patient(&format!(r#"{{"url":"{sd}patient-not-defined|5.0.0","valueCode":"x"}}"#))),
            ["EXTENSION_UNKNOWN Patient.extension[0]"]
        );
        // Other namespaces (an IG's) are not this check's (see `report_unknown`).
        for url in [
            "http://hl7.org/fhir/us/core/StructureDefinition/us-core-birthsex",
            "http://hl7.org/fhir/StructureDefinitionX/x",
        ] {
            assert_eq!(findings(&patient(&format!(r#"{{"url":"{url}","valueCode":"x"}}"#))), Vec::<String>::new());
        }
        // A cross-version url with no definition (no such path in R5, no table for 4.3).
        for url in [
            "http://hl7.org/fhir/5.0/StructureDefinition/extension-Patient.x",
            "http://hl7.org/fhir/4.3/StructureDefinition/extension-Patient.animal",
        ] {
            assert_eq!(
                findings(&patient(&format!(r#"{{"url":"{url}","valueCode":"x"}}"#))),
                ["EXTENSION_UNKNOWN Patient.extension[0]"]
            );
        }
        // The url R4's own expansions use that nothing defines (USED_BY_R4 in the generator).
        let vs = format!(
            r#"{{"resourceType":"ValueSet","status":"draft","expansion":{{"timestamp":"2019-11-01T09:29:23+11:00","contains":[{{"system":"http://example.invalid/cs","code":"1",
              "extension":[{{"url":"{sd}valueset-definition","valueString":"x"}}]}}]}}}}"#
        );
        assert_eq!(findings(&vs), Vec::<String>::new());
    }

    #[test]
    fn cross_version_extensions_by_the_other_versions_element() {
        let xver = |v: &str, path: &str| format!("http://hl7.org/fhir/{v}/StructureDefinition/extension-{path}");
        let animal = xver("1.0", "Patient.animal");
        let parts = r#"[{"url":"species","valueCodeableConcept":{"text":"dog"}},{"url":"breed","valueCodeableConcept":{"text":"x"}}]"#;
        // DSTU2's Patient.animal is a modifier: a modifierExtension, not an extension.
        let as_modifier =
            format!(r#"{{"resourceType":"Patient","modifierExtension":[{{"url":"{animal}","extension":{parts}}}]}}"#);
        assert_eq!(findings(&as_modifier), Vec::<String>::new());
        let as_extension =
            format!(r#"{{"resourceType":"Patient","extension":[{{"url":"{animal}","extension":{parts}}}]}}"#);
        assert_eq!(findings(&as_extension), ["EXTENSION_MODIFIER_MISMATCH Patient.extension[0]"]);
        // The STU3 ballot's (1.4) is no modifier.
        let ballot = xver("1.4", "Patient.animal");
        assert_eq!(
            findings(&format!(
                r#"{{"resourceType":"Patient","extension":[{{"url":"{ballot}","extension":{parts}}}]}}"#
            )),
            Vec::<String>::new()
        );
        // A part the element does not have; a part's value of another type; a value on a complex one.
        let bad = format!(
            r#"{{"resourceType":"Patient","modifierExtension":[{{"url":"{animal}","valueString":"x","extension":[{{"url":"x-breed","valueCodeableConcept":{{"text":"x"}}}},{{"url":"species","valueString":"dog"}}]}}]}}"#
        );
        assert_eq!(
            findings(&bad),
            [
                "CARDINALITY_MAX Patient.modifierExtension[0].valueString",
                "EXTENSION_URL_INVALID Patient.modifierExtension[0].extension[0].url",
                "EXTENSION_TYPE_INVALID Patient.modifierExtension[0].extension[1].valueString",
            ]
        );
        // R5's DeviceRequest.doNotPerform: a modifier boolean.
        let dnp = xver("5.0", "DeviceRequest.doNotPerform");
        let request = |name: &str, value: &str| {
            format!(
                r#"{{"resourceType":"DeviceRequest","status":"completed","intent":"order","codeCodeableConcept":{{"text":"x"}},"subject":{{"reference":"Patient/p"}},"{name}":[{{"url":"{dnp}",{value}}}]}}"#
            )
        };
        assert_eq!(findings(&request("modifierExtension", r#""valueBoolean":true"#)), Vec::<String>::new());
        assert_eq!(
            findings(&request("extension", r#""valueBoolean":true"#)),
            ["EXTENSION_MODIFIER_MISMATCH DeviceRequest.extension[0]"]
        );
        assert_eq!(
            findings(&request("modifierExtension", r#""valueString":"true""#)),
            ["EXTENSION_TYPE_INVALID DeviceRequest.modifierExtension[0].valueString"]
        );
        assert_eq!(
            findings(&request("modifierExtension", r#""extension":[{"url":"x","valueString":"y"}]"#)),
            [
                "CARDINALITY_MIN DeviceRequest.modifierExtension[0].value",
                "CARDINALITY_MAX DeviceRequest.modifierExtension[0].extension[0]"
            ]
        );
    }

    #[test]
    fn table_decodes() {
        let (n, parts) = counts();
        // 393 of the core, 291 of the pack, 1 used by R4 (the core's 4 not in the pack included).
        assert!(n >= 680, "{n}");
        assert!(parts >= 300, "{parts}");
        assert!(definitions().windows(2).all(|w| w[0].url < w[1].url), "sorted, one per url");
        let d = find(b"http://hl7.org/fhir/StructureDefinition/patient-birthTime|4.0.1").expect("birthTime");
        assert_eq!(d.contexts, ["Patient.birthDate"]);
        assert_eq!(d.shape.types.as_ref().map(Vec::len), Some(1));
        let animal = find(b"http://hl7.org/fhir/StructureDefinition/patient-animal").expect("animal");
        assert_eq!(animal.shape.value_max, 0);
        assert_eq!(
            animal.parts.iter().map(|p| (p.url, p.min)).collect::<Vec<_>>(),
            [("species", 1), ("breed", 0), ("genderStatus", 0)]
        );
        // Every value type of every definition is a known type.
        assert!(
            definitions().iter().all(|d| d.shape.types.is_some() && d.parts.iter().all(|p| p.shape.types.is_some()))
        );
    }
}
