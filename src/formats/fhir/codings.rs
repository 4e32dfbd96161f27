//! Codings against the CodeSystems the validation loaded (`--ig` packages and files, through
//! the resolver of [`super::validate::validate_with`]), as FHIR R4 states it:
//!
//! - a supplement "can't be used as a value in Coding.system": a supplement adds designations
//!   and properties to another code system and defines no codes of its own (CodeSystem.content
//!   `supplement`, or any code system with `supplements`), so a Coding whose `system` is a
//!   supplement's `url` is `CODING_SYSTEM_SUPPLEMENT` (on `system`);
//! - a code SHALL be a code of its code system: when the code system is loaded with `content`
//!   `complete` ("all the concepts defined by the code system are included"), a `code` that is
//!   none of its concepts (nested ones included; compared without case when the code system
//!   says `caseSensitive` false) is `CODE_UNKNOWN_IN_CODESYSTEM` (on `code`). A Coding whose
//!   `version` differs from the loaded code system's is not checked;
//! - the same for the code systems FHIR R4 defines in its own namespace (`http://hl7.org/fhir/`,
//!   version-locked to 4.0.1) whose content is complete, bundled ([`defs::core_code_system`]),
//!   when the validation did not load a code system of that url: the reference validator checks
//!   every Coding of a code system it holds complete, whatever the strength of the element's
//!   binding (extensible, preferred, example or none), so an unknown code of
//!   `contract-legalstate` or `resource-types` is an error there too.
//!
//! What it does not do: code systems that are neither loaded nor core (LOINC, SNOMED CT are a
//! terminology server's work; the v2 and v3 code systems of terminology.hl7.org have moved on
//! since R4), code systems in the document itself, displays, or `fragment`, `example` and
//! `not-present` content.

use crate::diag::{Code, Location};

use super::definitions as defs;
use super::model::Document;
use super::questionnaire::{self, Resolve};
use super::validate::Findings;

/// Most nesting of concepts followed.
const MAX_DEPTH: usize = 64;

/// What a loaded code system says about its codes.
enum System {
    /// Not loaded, not a CodeSystem, or content that does not list every code.
    Unchecked,
    Supplement,
    /// Content `complete`: its codes, sorted (lowercased when not case sensitive), and its version.
    Complete {
        codes: Vec<Vec<u8>>,
        case_sensitive: bool,
        version: Option<String>,
    },
    /// Not loaded, and a core code system of FHIR R4 (content complete, version 4.0.1).
    Core(&'static defs::CoreCodeSystem),
}

impl System {
    fn of(system: &[u8], value: Option<&serde_json::Value>) -> System {
        let Some(v) = value.filter(|v| v.get("resourceType").and_then(|t| t.as_str()) == Some("CodeSystem")) else {
            return defs::core_code_system(system).map_or(System::Unchecked, System::Core);
        };
        // A code system that `supplements` another is a supplement, whatever its `content`
        // says (a content other than `supplement` is its own error there).
        if v.get("supplements").is_some_and(|s| s.is_string()) {
            return System::Supplement;
        }
        match v.get("content").and_then(|c| c.as_str()) {
            Some("supplement") => System::Supplement,
            Some("complete") => {
                let case_sensitive = v.get("caseSensitive").and_then(serde_json::Value::as_bool).unwrap_or(true);
                let mut codes = Vec::new();
                collect(v, 0, case_sensitive, &mut codes);
                codes.sort_unstable();
                let version = v.get("version").and_then(|s| s.as_str()).map(str::to_owned);
                System::Complete { codes, case_sensitive, version }
            }
            _ => System::Unchecked,
        }
    }
}

/// The codes of the concepts of `v` (a CodeSystem or a concept), nested ones included.
fn collect(v: &serde_json::Value, depth: usize, case_sensitive: bool, codes: &mut Vec<Vec<u8>>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Some(concepts) = v.get("concept").and_then(|c| c.as_array()) else { return };
    for c in concepts {
        if let Some(code) = c.get("code").and_then(|s| s.as_str()) {
            codes.push(if case_sensitive { code.as_bytes().to_vec() } else { code.to_ascii_lowercase().into_bytes() });
        }
        collect(c, depth + 1, case_sensitive, codes);
    }
}

/// Checks every Coding of the document whose system the resolver knows.
pub(super) fn check(doc: &Document, resolve: Resolve<'_>, f: &mut Findings) {
    let Some(coding_ty) = defs::known_type!(b"Coding") else { return };
    // One entry per system met, resolved once.
    let mut systems: Vec<(&[u8], System)> = Vec::new();
    for i in 0..doc.nodes().len() as u32 {
        let node = doc.node(i);
        if node.ty != Some(coding_ty) || node.is_unknown() {
            continue;
        }
        let Some(system_node) = doc.named(i, "system").find(|&s| doc.node(s).has_value()) else { continue };
        let Some(system) = questionnaire::child_text(doc, i, "system") else { continue };
        let k = match systems.iter().position(|(s, _)| *s == system) {
            Some(k) => k,
            None => {
                let resolved = std::str::from_utf8(system).ok().and_then(resolve);
                systems.push((system, System::of(system, resolved)));
                systems.len() - 1
            }
        };
        let Some((_, entry)) = systems.get(k) else { continue };
        match entry {
            System::Unchecked => {}
            System::Supplement => f.push(Code::CODING_SYSTEM_SUPPLEMENT, Location::Fhir(doc.path(system_node))),
            System::Complete { codes, case_sensitive, version } => {
                let coding_version = questionnaire::child_text(doc, i, "version");
                if coding_version.is_some_and(|cv| version.as_deref().is_some_and(|v| v.as_bytes() != cv)) {
                    continue;
                }
                let Some(code_node) = doc.named(i, "code").find(|&c| doc.node(c).has_value()) else { continue };
                let Some(code) = questionnaire::child_text(doc, i, "code") else { continue };
                let known = if *case_sensitive {
                    codes.binary_search_by(|c| c.as_slice().cmp(code)).is_ok()
                } else {
                    let lower = zeroize::Zeroizing::new(code.to_ascii_lowercase());
                    codes.binary_search_by(|c| c.as_slice().cmp(lower.as_slice())).is_ok()
                };
                if !known {
                    f.push(Code::CODE_UNKNOWN_IN_CODESYSTEM, Location::Fhir(doc.path(code_node)));
                }
            }
            System::Core(cs) => {
                let coding_version = questionnaire::child_text(doc, i, "version");
                if coding_version.is_some_and(|cv| cv != defs::CORE_CODE_SYSTEM_VERSION.as_bytes()) {
                    continue;
                }
                let Some(code_node) = doc.named(i, "code").find(|&c| doc.node(c).has_value()) else { continue };
                let Some(code) = questionnaire::child_text(doc, i, "code") else { continue };
                if !cs.contains(code) {
                    f.push(Code::CODE_UNKNOWN_IN_CODESYSTEM, Location::Fhir(doc.path(code_node)));
                }
            }
        }
    }
}
