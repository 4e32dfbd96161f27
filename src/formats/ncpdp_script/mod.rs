//! NCPDP SCRIPT (XML e-prescribing), versions 10.6 and 2017071.
//!
//! - [`read`]: a message over the shared XML reader: the SCRIPT namespace, element names of the
//!   tables, positions made of names and indexes, the version and the message type;
//! - [`validate`]: the Header, the Body's transaction, the parts each message type requires,
//!   code lists, dates, numbers and identifiers (NPI, DEA number, NCPDPID);
//! - [`write`]: the JSON model, the canonical XML, the value-free summary;
//! - [`tables`]: what phiward knows of SCRIPT, from public descriptions (docs/ncpdp-script.md);
//! - `codec`: [`NcpdpScript`], the registered format.
//!
//! Redaction is `crate::policy::ncpdp_script` (over the canonical writer's helpers).
//!
//! What it does not do: validate against the licensed NCPDP XML schemas (element order, every
//! element's cardinality and type), convert, or read SCRIPT versions before 10.6 or EDIFACT
//! SCRIPT. NCPDP Telecommunication D.0 is the format `ncpdp` ([`crate::formats::ncpdp`]).

mod codec;
pub mod read;
pub mod tables;
pub mod validate;
pub mod write;

pub use codec::{NcpdpScript, is_ncpdp_script};
pub use read::Document;
