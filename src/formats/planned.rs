//! Signatures of the formats phiward recognises but does not build yet (the registry's
//! `planned` lines): an input that matches one is answered `CLI_FORMAT_UNSUPPORTED` rather than
//! `CLI_FORMAT_UNDETECTED`. When a format lands, its signature moves into its codec.
//!
//! Each takes the first bytes after a BOM and white space (`body`) and as they are (`raw`).

use super::sniff::xml_root;

/// NCPDP SCRIPT (XML e-prescribing; NCPDP Telecommunication D.0 is the built format `ncpdp`): a
/// root in the SCRIPT namespace.
pub fn is_ncpdp_script(body: &[u8], _raw: &[u8]) -> bool {
    xml_root(body).is_some_and(|r| r.namespace == Some(b"http://www.ncpdp.org/schema/SCRIPT"))
}
