//! ASTM E1394 (CLSI LIS2-A2) messages between laboratory instruments and information systems,
//! with or without E1381 (CLSI LIS1-A) framing.
//!
//! - [`split`]: a stream (framed or not, many messages, many sessions) into message records, in
//!   bounded memory; E1381 frames are checked (frame numbers, checksums, ends, lengths) and their
//!   texts reassembled there, the findings carried in a small header of the record;
//! - [`read`]: a message (H .. L) into a [`read::Document`]: records as spans of one `Phi`
//!   buffer, delimiters from the H record;
//! - [`validate`]: the hierarchy, sequence numbers, field counts per record type, dates, the
//!   termination code;
//! - [`write`]: the JSON model, the canonical form, the value-free summary;
//! - `codec`: [`Astm`], the registered format.
//!
//! What it does not do: answer a sender (ACK/NAK/EOT are read and skipped, never written),
//! convert, or check the content of manufacturer (M) records.

mod codec;
pub mod read;
pub mod split;
pub mod validate;
pub mod write;

pub use codec::{Astm, Stream};
pub use read::Document;
