//! FHIR R4 (4.0.1): JSON and XML reading, validation against the core definitions, inspection
//! and canonical re-serialization.
//!
//! - [`json`] and the shared [`crate::formats::xml`] reader: the syntax parsers (bounded,
//!   value-free errors);
//! - [`read_json`], [`read_xml`]: the element tree of [`model`], resolved against
//!   [`definitions`] (the generated tables of the core StructureDefinitions and value sets);
//! - [`primitive`]: the primitive types' syntax; [`fhirpath`]: the invariant engine;
//! - [`validate`]: structure, cardinality, types, primitives, bindings, Bundle references,
//!   invariants, the rules stated in prose ([`rules`]), QuestionnaireResponses against their
//!   Questionnaires ([`questionnaire`]), the core extension definitions
//!   ([`extensions`]) and UCUM codes ([`ucum`]); [`inspect`]: a value-free summary;
//! - [`write`] and [`fmt`]: the data-channel writers (FHIR JSON; canonical JSON and XML).
//!
//! Profiles: those of loaded packages ([`profile`]), and R4's vital signs profiles, which an
//! Observation's code implies ([`vital_signs`]).
//!
//! What it does not do: terminology services (value sets that
//! need SNOMED CT, LOINC, ... are not checked), FHIR versions other than R4, RDF/Turtle.

pub mod bundle;
pub mod checks;
mod codec;
mod codings;
mod conformance;
pub mod definitions;
pub mod direct;
mod ecl;
pub mod extensions;
pub mod fhirpath;
pub mod fmt;
pub mod inspect;
pub mod json;
mod locate;
mod measure;
pub mod model;
mod narrative;
pub mod now;
pub mod primitive;
pub mod profile;
pub mod questionnaire;
pub mod read_json;
pub mod read_xml;
pub mod rules;
pub mod ucum;
pub mod validate;
mod valueset;
pub mod vital_signs;
pub mod write;
mod xver;

pub use codec::{Fhir, NoEnvelope};
pub use model::{Document, Syntax};

/// Reads one FHIR resource, JSON or XML (chosen by the first byte after a BOM and white
/// space). A fatal diagnostic (syntax, limits, no resource) is an `Err`.
pub fn read(input: Vec<u8>, limits: &crate::limits::Limits) -> Result<Document, crate::diag::Diagnostic> {
    read_with(input, limits, false)
}

/// [`read`], with JSON5 comments allowed in JSON when `comments` (`--allow-comments`; see
/// [`json::parse_with`]). A comment before the value is read as JSON.
pub fn read_with(
    mut input: Vec<u8>,
    limits: &crate::limits::Limits,
    comments: bool,
) -> Result<Document, crate::diag::Diagnostic> {
    let bom = input.starts_with(b"\xEF\xBB\xBF");
    if bom {
        // Offsets stay those of the input: the mark becomes white space.
        input[..3].copy_from_slice(b"   ");
    }
    let xml = crate::detect::skip_bom_and_space(&input).first() == Some(&b'<');
    let mut doc = if xml { read_xml::read(input, limits)? } else { read_json::read_with(input, limits, comments)? };
    if bom {
        doc.findings
            .insert(0, crate::diag::Diagnostic::new(crate::diag::Code::BOM_PRESENT, crate::diag::Location::Input));
    }
    Ok(doc)
}
