//! C-CDA (HL7 CDA R2.0 documents, US Realm Consolidated CDA templates).
//!
//! - [`read`]: a document over the shared XML reader: namespaces (`urn:hl7-org:v3`, `sdtc:`,
//!   `xsi:`), element names of the definitions, positions made of names and indexes;
//! - [`validate`]: the CDA base (the logical models: element order, cardinality, attributes,
//!   fixed values, data types by `xsi:type`, II, CD, TS, PQ, nullFlavor) and the C-CDA templates
//!   where their templateId is declared;
//! - [`write`]: the JSON model, the canonical XML, the value-free summary (document type,
//!   templates, sections and their entries);
//! - `base`, `tables` and `r21_tables`: the generated definitions (`tools/gen_ccda_tables.py`,
//!   provenance in PROVENANCE.md): the CDA classes, the 5.0 templates, the R2.1 templates'
//!   schematron assertions;
//! - `codec`: [`Ccda`], the registered format.
//!
//! Redaction is `crate::policy::ccda` (over the canonical writer's helpers).
//!
//! What it does not do: convert, evaluate the templates' FHIRPath invariants or value set
//! bindings.

pub mod base;
mod codec;
pub mod r21_tables;
pub mod read;
pub mod tables;
pub mod validate;
pub mod write;

pub use codec::{Ccda, is_ccda};
pub use read::Document;
