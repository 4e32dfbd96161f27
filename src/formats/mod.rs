//! The formats phiward knows, and which operations each one implements.
//!
//! The support matrix is derived from the format modules themselves: each declares the
//! operations it implements (`OPERATIONS`), and [`Format::supports`] reads those declarations.
//! The CLI's `CLI_FORMAT_UNSUPPORTED` and the MCP tool descriptions both come from here, so the
//! matrix cannot drift from the code.
//!
//! Architecture Invariant: `formats/` depends only on `phi`, `diag`, `limits` (and `detect` for
//! delimiter rules); it knows nothing of `policy`, `convert`, `ops`, `cli` or `mcp`.

pub mod fhir;
pub mod hl7v2;
pub mod mllp;
pub mod xml;

use serde::Serialize;

/// A message format.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// HL7 v2 ER7 (pipe-delimited), single messages, concatenations and FHS/BHS batches.
    Hl7,
    /// HL7 v2 in MLLP frames (0x0B ... 0x1C 0x0D), one or more per stream.
    Mllp,
    /// FHIR R4, JSON or XML.
    Fhir,
    /// ASC X12.
    X12,
    /// DICOM Part 10 files.
    Dicom,
    /// HL7 C-CDA (CDA R2 XML).
    Ccda,
    /// NCPDP SCRIPT XML.
    Ncpdp,
    /// ASTM E1394 laboratory records.
    Astm,
}

/// An operation on a parsed input.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    /// The message as typed JSON (data channel).
    Parse,
    /// A value-free verdict with findings.
    Validate,
    /// A value-free summary.
    Inspect,
    /// Canonical re-serialization.
    Fmt,
    /// Conversion to FHIR R4.
    Convert,
    /// De-identification under a policy (same format out).
    Redact,
}

impl Operation {
    /// Every operation, in a stable order.
    pub const ALL: [Operation; 6] = [
        Operation::Parse,
        Operation::Validate,
        Operation::Inspect,
        Operation::Fmt,
        Operation::Convert,
        Operation::Redact,
    ];

    /// The stable lower-case name, as on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Parse => "parse",
            Operation::Validate => "validate",
            Operation::Inspect => "inspect",
            Operation::Fmt => "fmt",
            Operation::Convert => "convert",
            Operation::Redact => "redact",
        }
    }
}

impl Format {
    /// Every format, in a stable order.
    pub const ALL: [Format; 8] = [
        Format::Hl7,
        Format::Mllp,
        Format::Fhir,
        Format::X12,
        Format::Dicom,
        Format::Ccda,
        Format::Ncpdp,
        Format::Astm,
    ];

    /// The stable lower-case name, as in `--format` and in output JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Hl7 => "hl7",
            Format::Mllp => "mllp",
            Format::Fhir => "fhir",
            Format::X12 => "x12",
            Format::Dicom => "dicom",
            Format::Ccda => "ccda",
            Format::Ncpdp => "ncpdp",
            Format::Astm => "astm",
        }
    }

    /// Looks a format up by its stable name.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// The operations this build implements for the format, as declared by its module.
    pub fn operations(self) -> &'static [Operation] {
        match self {
            Format::Hl7 => hl7v2::OPERATIONS,
            Format::Mllp => mllp::OPERATIONS,
            Format::Fhir => fhir::OPERATIONS,
            Format::X12 | Format::Dicom | Format::Ccda | Format::Ncpdp | Format::Astm => &[],
        }
    }

    /// True when the operation is implemented for the format.
    pub fn supports(self, op: Operation) -> bool {
        self.operations().contains(&op)
    }
}
