//! The MCP server's `--policy FILE`, as far as it goes today: limits.
//!
//! A policy is a JSON object. Until the redaction policy language exists, the only thing it can
//! decide is limits, each of which can only tighten the command line's (or its default):
//!
//! ```json
//! {"limits": {"maxInputBytes": 1048576, "maxSegments": 10000, "maxFieldBytes": 65536,
//!             "maxDepth": 64, "maxRecords": 1000}}
//! ```
//!
//! Unknown keys are refused, so that a policy written for a later version is not silently
//! half-applied. A file that is missing is `CLI_NO_INPUT`; one that does not load is
//! `CLI_USAGE`. The file's text and serde's error message are never shown (a policy can name
//! things that should not travel).
//!
//! What it does not do: redaction (the redaction issue replaces this module with `policy/`).

use std::io::Read;
use std::path::Path;

use serde::Deserialize;
use zeroize::Zeroize;

use crate::diag::Code;
use crate::limits::Limits;

/// Largest policy file read.
const MAX_POLICY_BYTES: u64 = 1024 * 1024;

/// A loaded policy.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Policy {
    #[serde(default)]
    limits: PolicyLimits,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PolicyLimits {
    max_input_bytes: Option<u64>,
    max_segments: Option<u32>,
    max_field_bytes: Option<u32>,
    max_depth: Option<u32>,
    max_records: Option<u64>,
}

impl Policy {
    /// Each limit is the smaller of `limits` and the policy's.
    pub(super) fn apply(&self, limits: Limits) -> Limits {
        let p = &self.limits;
        Limits {
            max_input_bytes: p.max_input_bytes.map_or(limits.max_input_bytes, |v| v.min(limits.max_input_bytes)),
            max_segments: p.max_segments.map_or(limits.max_segments, |v| v.min(limits.max_segments)),
            max_field_bytes: p.max_field_bytes.map_or(limits.max_field_bytes, |v| v.min(limits.max_field_bytes)),
            max_depth: p.max_depth.map_or(limits.max_depth, |v| v.min(limits.max_depth)),
            max_records: p.max_records.map_or(limits.max_records, |v| v.min(limits.max_records)),
        }
    }
}

/// Loads a policy file.
pub(super) fn load(path: &Path) -> Result<Policy, Code> {
    let file = std::fs::File::open(path).map_err(|e| crate::error::from_read_io(&e).code())?;
    let mut text = Vec::new();
    let read = file.take(MAX_POLICY_BYTES + 1).read_to_end(&mut text);
    let parsed = match read {
        Err(_) => Err(Code::CLI_NO_INPUT),
        Ok(_) if text.len() as u64 > MAX_POLICY_BYTES => Err(Code::CLI_INPUT_TOO_LARGE),
        Ok(_) => serde_json::from_slice::<Policy>(&text).map_err(|_| Code::CLI_USAGE),
    };
    text.zeroize();
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_only_tighten() {
        let p: Policy =
            serde_json::from_str(r#"{"limits":{"maxInputBytes":10,"maxRecords":1000000000000}}"#).unwrap_or_default();
        let l = p.apply(Limits::default());
        assert_eq!(l.max_input_bytes, 10);
        assert_eq!(l.max_records, Limits::default().max_records);
        assert!(serde_json::from_str::<Policy>(r#"{"redact":true}"#).is_err());
    }
}
