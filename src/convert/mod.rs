//! Conversion between formats. Today: HL7 v2 to FHIR R4 ([`hl7v2_fhir`]).
//!
//! A converter is a data-channel writer: it reads message values (through one file,
//! `hl7v2_fhir/read.rs`, that holds the [`crate::phi::Disclosure`] lent by `ops`) and writes a
//! FHIR Bundle. Its findings are [`crate::diag::Diagnostic`]s (value-free by construction): the
//! v2 position and the FHIR element path, never a value.
//!
//! What it does not do: decide whether data may be disclosed (`ops` does), or print.

mod engine;
pub mod hl7v2_fhir;
pub mod naming;

pub use engine::Converts;
pub use hl7v2_fhir::Converted;

use crate::keys::Key;

/// The Bundle type to write.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum BundleType {
    /// `message`: MessageHeader first (the default).
    #[default]
    Message,
    /// `collection`.
    Collection,
    /// `transaction`: every entry has a `request` (PUT by its deterministic id).
    Transaction,
}

impl BundleType {
    /// The FHIR code.
    pub fn as_str(self) -> &'static str {
        match self {
            BundleType::Message => "message",
            BundleType::Collection => "collection",
            BundleType::Transaction => "transaction",
        }
    }
}

/// Conversion options (resolved from the command line or the MCP arguments). Cloned per record
/// of a json-lines stream: the naming systems and the key are shared, not copied.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The Bundle type.
    pub bundle_type: BundleType,
    /// Assigning authority to identifier system URI (`--naming-systems`).
    pub naming: std::sync::Arc<naming::NamingSystems>,
    /// The key for resource ids (`--id-key-file`).
    pub key: Option<std::sync::Arc<Key>>,
    /// Offset in minutes applied to timestamps without one (`--default-timezone`).
    pub default_offset_minutes: Option<i16>,
}

/// Parses `±HH:MM` (or `Z`) into minutes east of UTC; `None` when malformed.
pub fn parse_offset(text: &str) -> Option<i16> {
    if text == "Z" {
        return Some(0);
    }
    let b = text.as_bytes();
    if b.len() != 6 || b[3] != b':' || !(b[0] == b'+' || b[0] == b'-') {
        return None;
    }
    let digits = [b[1], b[2], b[4], b[5]];
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let h = i16::from((b[1] - b'0') * 10 + (b[2] - b'0'));
    let m = i16::from((b[4] - b'0') * 10 + (b[5] - b'0'));
    if h > 14 || m > 59 || (h == 14 && m > 0) {
        return None;
    }
    let total = h * 60 + m;
    Some(if b[0] == b'-' { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets() {
        assert_eq!(parse_offset("+05:30"), Some(330));
        assert_eq!(parse_offset("-04:00"), Some(-240));
        assert_eq!(parse_offset("Z"), Some(0));
        assert_eq!(parse_offset("+15:00"), None);
        assert_eq!(parse_offset("0500"), None);
    }
}
