//! Command-line syntax (clap), first layer: what the user typed. [`super::run`] resolves it into
//! an `ops::Request`.
//!
//! What it does not do: print. clap's own error texts can quote an argument (a file named after a
//! patient), so they are never shown: a usage error becomes `CLI_USAGE` with a fixed message.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// phiward: parse, validate, inspect and re-format healthcare messages without leaking patient
/// data outside the data channel.
#[derive(Debug, Parser)]
#[command(name = "phiward", version, about, long_about = None, disable_help_subcommand = true)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Cmd,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Print the message as typed JSON (the data channel). Multi-record input gives one JSON
    /// line per record.
    Parse(InputArgs),
    /// Check the message; the verdict is the exit code (0 valid, 1 invalid). Findings are
    /// value-free: code, severity, location.
    Validate(ValidateArgs),
    /// Print a value-free summary: message type, version, segment counts, finding counts.
    Inspect(InputArgs),
    /// Print the canonical form (CR terminators, normalized escapes, no trailing delimiters).
    Fmt(FmtArgs),
    /// Convert HL7 v2 to FHIR R4: one Bundle per message, with value-free findings. Exit 1 when
    /// a Bundle has an error finding (it is still printed).
    Convert(ConvertArgs),
    /// Serve the Model Context Protocol over stdio (for AI agents).
    Mcp(McpArgs),
}

/// The formats accepted by `--format`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// HL7 v2 (ER7), including FHS/BHS batches.
    Hl7,
    /// FHIR R4 (JSON or XML).
    Fhir,
    /// ASC X12.
    X12,
    /// DICOM Part 10.
    Dicom,
    /// C-CDA.
    Ccda,
    /// NCPDP SCRIPT.
    Ncpdp,
    /// ASTM E1394.
    Astm,
    /// HL7 v2 in MLLP frames.
    Mllp,
}

/// Input and output options shared by every command that reads a message.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// The input file, or `-` for standard input.
    #[arg(value_name = "FILE|-")]
    pub input: PathBuf,
    /// The input format (detected from the first bytes when omitted).
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Compact JSON, one object per line (per record for multi-record input).
    #[arg(long)]
    pub json: bool,
    /// Print nothing on standard output except requested data (parse, fmt); the exit code tells.
    #[arg(long, short)]
    pub quiet: bool,
    /// The input is NDJSON (FHIR): one resource per line, one output record per line.
    #[arg(long)]
    pub ndjson: bool,
    /// Operator door: after a parse failure, also print up to 200 bytes of the input near the
    /// failure on standard error. These bytes may contain patient data.
    #[arg(long)]
    pub unsafe_show_values: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Limits on what is read.
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// Largest input (or record of a stream) read into memory, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = crate::limits::Limits::DEFAULT_MAX_INPUT_BYTES)]
    pub max_input_bytes: u64,
    /// Most segments in one message.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub max_segments: u32,
    /// Longest single field, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 64 * 1024 * 1024)]
    pub max_field_bytes: u32,
}

impl LimitArgs {
    /// The resolved limits.
    pub fn limits(&self) -> crate::limits::Limits {
        crate::limits::Limits {
            max_input_bytes: self.max_input_bytes,
            max_segments: self.max_segments,
            max_field_bytes: self.max_field_bytes,
            ..crate::limits::Limits::default()
        }
    }
}

/// `validate` options.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Every deviation is an error: warnings count against the verdict, and so do HL7 v2
    /// conformance deviations the default mode tolerates (docs/hl7v2-conformance.md).
    #[arg(long)]
    pub strict: bool,
}

/// `fmt` options.
#[derive(Debug, Args)]
pub struct FmtArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Print nothing but a verdict: exit 1 when the input is not canonical.
    #[arg(long)]
    pub check: bool,
    /// FHIR only: write this syntax (JSON in, XML out or the reverse); the default keeps the
    /// input's syntax. Any other format fails with CLI_FORMAT_UNSUPPORTED.
    #[arg(long, value_enum, value_name = "SYNTAX")]
    pub to: Option<SyntaxArg>,
}

/// The syntaxes accepted by `fmt --to`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum SyntaxArg {
    /// FHIR JSON.
    Json,
    /// FHIR XML.
    Xml,
}

/// `mcp` options.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// A policy file (sets limits; the redaction policy language extends it).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// `convert` options.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// The target format (FHIR R4, the only one).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "fhir")]
    pub to: TargetArg,
    /// The Bundle type: message (MessageHeader first), collection, or transaction (PUT entries).
    #[arg(long, value_enum, default_value = "message")]
    pub bundle_type: BundleTypeArg,
    /// Assigning authority to identifier system URI, one `AUTHORITY URI` a line
    /// (docs/convert.md). Without it, identifiers have no system and a finding says so.
    #[arg(long, value_name = "FILE")]
    pub naming_systems: Option<PathBuf>,
    /// A secret key file (at least 16 bytes): resource ids become keyed HMACs of the resource's
    /// identifiers, stable across messages. Without it, ids derive from MSH-10 and positions.
    #[arg(long, value_name = "FILE")]
    pub id_key_file: Option<PathBuf>,
    /// The offset (`+HH:MM`, `-HH:MM` or `Z`) of timestamps that have none. Without it, such
    /// timestamps are reduced to their date, and a finding says so. Never the host's zone.
    #[arg(long, value_name = "OFFSET", value_parser = parse_offset_arg, allow_hyphen_values = true)]
    pub default_timezone: Option<i16>,
}

fn parse_offset_arg(s: &str) -> Result<i16, &'static str> {
    crate::convert::parse_offset(s).ok_or("expected +HH:MM, -HH:MM or Z")
}

/// `convert --to`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum TargetArg {
    /// FHIR R4 (JSON).
    Fhir,
}

/// `convert --bundle-type`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum BundleTypeArg {
    /// `message`: MessageHeader first.
    Message,
    /// `collection`.
    Collection,
    /// `transaction`: each entry has a PUT request by its id.
    Transaction,
}
