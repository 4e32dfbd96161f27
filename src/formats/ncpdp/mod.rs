//! NCPDP Telecommunication Standard D.0: pharmacy claim, reversal, rebill, eligibility and
//! other requests and their responses (the fixed-width transaction header, segments separated
//! by 0x1E, fields by 0x1C with two-character ids, transactions by 0x1D).
//!
//! - [`tables`]: the transaction codes, segments, field dictionary and the rules taken from the
//!   public payer sheet template;
//! - [`read`]: a transmission into a [`read::Document`] (request or response, told by where the
//!   header ends);
//! - [`validate`]: header, segments, fields and their formats;
//! - [`write`]: the JSON model, the canonical form, the value-free summary;
//! - `codec`: [`Ncpdp`], the registered format (one transmission per line).
//!
//! What it does not do: NCPDP SCRIPT (XML e-prescribing: the format `ncpdp-script`),
//! the Batch Standard, payer-specific rules, or conversion.

mod codec;
pub mod read;
pub mod tables;
pub mod validate;
pub mod write;

pub use codec::{Ncpdp, is_ncpdp};
pub use read::Document;
