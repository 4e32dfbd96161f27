//! C-CDA (HL7 CDA R2.0 documents, US Realm Consolidated CDA templates).
//!
//! - [`read`]: a document over the shared XML reader: namespaces (`urn:hl7-org:v3`, `sdtc:`,
//!   `xsi:`), element names of the definitions, positions made of names and indexes;
//! - [`validate`]: the CDA base (the logical models: element order, cardinality, attributes,
//!   fixed values, data types by `xsi:type`, II, CD, TS, PQ, nullFlavor, value set bindings)
//!   and the C-CDA templates where their templateId is declared (their bindings included);
//! - [`write`]: the JSON model, the canonical XML, the value-free summary (document type,
//!   templates, sections and their entries);
//! - `base`, `tables`, `r21_tables` and `vs_tables`: the generated definitions
//!   (`tools/gen_ccda_tables.py`, provenance in PROVENANCE.md; not rustfmt'ed, so that the
//!   generator's bytes are the committed ones): the CDA classes, the 5.0 templates, the R2.1
//!   templates' schematron assertions, the value sets of the bindings;
//! - `codec`: [`Ccda`], the registered format.
//!
//! Redaction is `crate::policy::ccda` (over the canonical writer's helpers).
//!
//! What it does not do: convert, evaluate the templates' FHIRPath invariants, expand a value
//! set that is not bundled (VSAC's, LOINC's, SNOMED CT's: reported once, information).

pub mod base;
mod codec;
#[rustfmt::skip]
pub mod r21_tables;
pub mod read;
#[rustfmt::skip]
pub mod tables;
pub mod validate;
#[rustfmt::skip]
pub mod vs_tables;
pub mod write;

pub use codec::{Ccda, is_ccda};
pub use read::Document;
