//! HL7 v2 (ER7, the pipe-and-hat encoding), complete at the syntax level.
//!
//! - [`parse`]: the lexer (delimiters, segments, fields; lazy repetitions and components);
//! - [`escape`], [`charset`]: escape sequences and MSH-18 character sets;
//! - [`stream`]: splitting a byte stream into message and batch-envelope records;
//! - [`batch`]: FHS/BHS/BTS/FTS protocol and counts;
//! - [`validate`]: syntax-level findings, then [`conformance`] to the declared version's
//!   structures, fields, data types and tables; [`inspect`]: a value-free summary;
//! - [`write`] and [`fmt`]: the data-channel writers (typed JSON model, canonical ER7).
//!
//! What it does not do here: conformance profiles, and XML encoding.

pub mod batch;
pub mod charset;
mod codec;
pub mod conformance;
pub mod escape;
pub mod fmt;
pub mod inspect;
mod locate;
pub mod parse;
pub mod schema;
pub mod segment_ids;
pub mod stream;
pub mod validate;
pub mod write;

pub use codec::{Hl7, Stream};
pub use parse::{Delimiters, Message, parse};
