//! Explicit limits on what a parser accepts: size, counts, depth.
//!
//! Exceeding a limit is `CLI_INPUT_TOO_LARGE`, never a panic or an unbounded allocation. The
//! defaults suit real-world feeds; every limit is configurable from the command line and the MCP
//! server's start-up options.

/// Limits applied to one input (and, for streams, to each record).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest whole input read into memory, and largest single record of a stream (bytes).
    pub max_input_bytes: u64,
    /// Most segments in one HL7 v2 message (or elements in one record of another format).
    pub max_segments: u32,
    /// Longest single field (bytes).
    pub max_field_bytes: u32,
    /// Deepest nesting of structured formats (JSON/XML).
    pub max_depth: u32,
    /// Most records in one stream.
    pub max_records: u64,
}

impl Limits {
    /// 256 MiB.
    pub const DEFAULT_MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_input_bytes: Self::DEFAULT_MAX_INPUT_BYTES,
            max_segments: 1_000_000,
            max_field_bytes: 64 * 1024 * 1024,
            max_depth: 128,
            max_records: 100_000_000,
        }
    }
}
