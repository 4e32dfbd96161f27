//! Command-line syntax (clap), first layer: what the user typed. [`super::run`] resolves it into
//! an `ops::Request`.
//!
//! Each command declares only the options it takes (its `--help` lists nothing else); the
//! shared groups are flattened in ([`ReadArgs`], [`PolicyArgs`], [`LimitArgs`]) and resolved
//! into one [`InputArgs`].
//!
//! What it does not do: print. clap's own error texts can quote an argument (a file named after a
//! patient), so they are never shown: `super::usage` turns a usage error into one `CLI_USAGE`
//! line that names the argument from the command's definition.

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
    /// The audit log options.
    #[command(flatten)]
    pub audit: AuditArgs,
}

// The audit log options, of every command and of the `phiward-mcp` binary.
#[derive(Debug, Args, Default)]
pub struct AuditArgs {
    /// Append one value-free, hash-chained JSON line about this run to FILE (created when
    /// missing); a log that cannot be written stops the command (docs/ci.md).
    #[arg(long, global = true, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
    /// A key file (at least 16 bytes): the audit line records an HMAC-SHA-256 of each input
    /// file under it (never without a key).
    #[arg(long, global = true, value_name = "FILE")]
    pub audit_key_file: Option<PathBuf>,
}

/// The commands.
// `defer`: a command's arguments are built only when it is the one being parsed (or its help,
// completions or man page is written), not all of them at every start: building the whole tree
// was about half of the instructions of `phiward parse --json` on a 1 KB message (issue 32).
// The nested command groups below defer theirs too. A deferred command's arguments are added
// after its variant's doc comment has set its help text, so the `Args` structs carry plain `//`
// comments: a `///` on one would become that command's `about` and replace the variant's.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Cmd {
    /// Print the message as typed JSON (the data channel). Multi-record input gives one JSON
    /// line per record.
    Parse(ParseArgs),
    /// Check the message; the verdict is the exit code (0 valid, 1 invalid). Findings are
    /// value-free: code, severity, location.
    Validate(ValidateArgs),
    /// Print a value-free summary: message type, version, segment counts, finding counts.
    Inspect(InspectArgs),
    /// Print the canonical form (CR terminators, normalized escapes, no trailing delimiters).
    Fmt(FmtArgs),
    /// Convert HL7 v2 to FHIR R4: one Bundle per message, with value-free findings. Exit 1 when
    /// a Bundle has an error finding (it is still printed).
    Convert(ConvertArgs),
    /// Print the message de-identified under a policy (Safe Harbor by default), in the same
    /// format; what no rule names is removed.
    Redact(RedactArgs),
    /// Print the acknowledgment of a received X12 interchange: a 999 of each functional group
    /// (AK2/IK3/IK4/IK5/AK9, never a copy of a bad element) or a TA1 of each interchange. Exit 1
    /// when something was not accepted (the acknowledgment is still printed).
    Ack(AckArgs),
    /// Work with policy files.
    #[command(subcommand)]
    Policy(PolicyCmd),
    /// FHIR implementation guide packages: what `--ig` and the package cache hold (value-free).
    #[command(subcommand)]
    Ig(IgCmd),
    /// Serve the Model Context Protocol over stdio (for AI agents).
    Mcp(McpArgs),
    /// Find the concepts of other code systems whose names match a term (offline, lexical
    /// score; docs/terminology.md). Exit 1 when no code system has a match.
    FindEquivalent(FindArgs),
    /// Translate codes through a FHIR R4 ConceptMap (a file, or a bundled one by URL). Exit 1
    /// when a code is unmapped.
    MapCodes(MapArgs),
    /// Terminology data: what is available, and importing what cannot be bundled.
    #[command(subcommand)]
    Terminology(TerminologyCmd),
    /// The audit log of `--audit-log`.
    #[command(subcommand)]
    Audit(AuditCmd),
    /// Print a shell completion script (e.g. `phiward completions bash > /etc/bash_completion.d/phiward`).
    Completions(CompletionsArgs),
    /// Print the man page (roff), e.g. `phiward man > phiward.1`.
    Man,
}

// `completions` options.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `audit` subcommands.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum AuditCmd {
    /// Check the hash chain: exit 0 and `ok: N lines, head HASH`, or exit 1 naming the first
    /// broken line.
    Verify(AuditVerifyArgs),
}

// `audit verify` options.
#[derive(Debug, Args)]
pub struct AuditVerifyArgs {
    /// The audit log.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// A head printed by an earlier `audit verify`: the log must still contain that line (lines
    /// removed from the end are detected).
    #[arg(long, value_name = "HASH")]
    pub head: Option<String>,
}

// `find-equivalent` options.
#[derive(Debug, Args)]
pub struct FindArgs {
    /// The term to look up, or `-` to read it from standard input (keeps it off the argument list).
    #[arg(value_name = "TERM|-")]
    pub term: String,
    /// Results per code system, 1 to 10.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u8).range(1..=10))]
    pub limit: u8,
    /// The code system the term comes from (excluded from the search).
    #[arg(long, value_enum, value_name = "SYSTEM")]
    pub source: Option<SystemArg>,
    /// A code system to search (repeatable; default: all).
    #[arg(long, value_enum, value_name = "SYSTEM")]
    pub target: Vec<SystemArg>,
    /// Compact JSON (the MCP tool's `data`).
    #[arg(long)]
    pub json: bool,
    /// Include deprecated concepts (left out by default).
    #[arg(long)]
    pub include_deprecated: bool,
    /// The data folder of imported terminology.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

/// The code systems of `find-equivalent` and the importers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum SystemArg {
    /// ICD-10-CM.
    Icd10cm,
    /// ICD-11 MMS.
    Icd11,
    /// LOINC.
    Loinc,
    /// RxNorm.
    Rxnorm,
    /// MeSH descriptors.
    Mesh,
}

impl SystemArg {
    /// The code system.
    pub fn system(self) -> crate::terminology::System {
        use crate::terminology::System;
        match self {
            SystemArg::Icd10cm => System::Icd10cm,
            SystemArg::Icd11 => System::Icd11,
            SystemArg::Loinc => System::Loinc,
            SystemArg::Rxnorm => System::Rxnorm,
            SystemArg::Mesh => System::Mesh,
        }
    }
}

/// `terminology` subcommands.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum TerminologyCmd {
    /// What is available: bundled and imported datasets, vintage, licence, citation.
    List(ListArgs),
    /// Import a file you obtained under its own licence into the data folder.
    Import(ImportArgs),
}

// `terminology list` options.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Compact JSON.
    #[arg(long)]
    pub json: bool,
    /// The data folder of imported terminology.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

// `terminology import` options.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The code system: rxnorm (RXNCONSO.RRF), loinc (Loinc.csv), icd11 (WHO linearization
    /// tab-separated file), mesh (MeSH descriptor XML, desc*.xml).
    #[arg(value_enum, value_name = "SYSTEM")]
    pub system: SystemArg,
    /// The file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The release (vintage) to record, e.g. `2026-01`; default: unknown.
    #[arg(long, value_name = "RELEASE")]
    pub vintage: Option<String>,
    /// The data folder of imported terminology.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

// `map-codes` options.
#[derive(Debug, Args)]
pub struct MapArgs {
    /// The ConceptMap: a FHIR R4 JSON file, or the URL of a bundled one (`terminology list`).
    #[arg(long, value_name = "FILE|URL")]
    pub map: String,
    /// One code to translate (with `--system`).
    #[arg(long, value_name = "CODE", requires = "system", conflicts_with_all = ["batch", "scan"])]
    pub code: Option<String>,
    /// The code system of `--code`.
    #[arg(long, value_name = "URI")]
    pub system: Option<String>,
    /// A file (or `-`) of NDJSON codings, one `{"system": ..., "code": ...}` per line.
    #[arg(long, value_name = "FILE|-", conflicts_with = "scan")]
    pub batch: Option<PathBuf>,
    /// A message (HL7 v2 or FHIR): every CWE/CE/CNE component pair and Coding element.
    #[arg(long, value_name = "FILE|-")]
    pub scan: Option<PathBuf>,
    /// Compact JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// `ig` subcommands.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum IgCmd {
    /// The packages `--ig` loads and their dependencies from the package cache (those missing
    /// too); without `--ig`, every package in the cache.
    List(IgListArgs),
    /// One package: its manifest, dependencies and every conformance resource (type, url,
    /// version).
    Info(IgInfoArgs),
}

// Where FHIR packages come from (`validate`, `ig`).
#[derive(Debug, Args, Default, Clone)]
pub struct PackageArgs {
    /// A FHIR package to validate against: a `.tgz`, an unpacked package folder, a folder of
    /// resource files, one resource file, or NAME#VERSION in the package cache. Repeatable.
    #[arg(long = "ig", value_name = "FILE|DIR|NAME#VERSION")]
    pub igs: Vec<String>,
    /// The package cache, where dependencies are found (default ~/.fhir/packages). Nothing is
    /// ever downloaded.
    #[arg(long, value_name = "DIR")]
    pub package_dir: Option<PathBuf>,
}

impl PackageArgs {
    /// The cache folder: `--package-dir`, else the conventional one.
    pub fn cache(&self) -> Option<PathBuf> {
        self.package_dir.clone().or_else(crate::structure::package::default_package_dir)
    }
}

// `ig list` options.
#[derive(Debug, Args)]
pub struct IgListArgs {
    #[command(flatten)]
    pub packages: PackageArgs,
    /// Compact JSON.
    #[arg(long)]
    pub json: bool,
}

// `ig info` options.
#[derive(Debug, Args)]
pub struct IgInfoArgs {
    /// The package: a `.tgz`, a folder, a resource file, or NAME#VERSION in the package cache.
    #[arg(value_name = "PACKAGE")]
    pub package: String,
    /// The package cache (default ~/.fhir/packages).
    #[arg(long, value_name = "DIR")]
    pub package_dir: Option<PathBuf>,
    /// Compact JSON.
    #[arg(long)]
    pub json: bool,
}

/// `policy` subcommands.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum PolicyCmd {
    /// Load and lint a policy: exit 0 when it loads with no findings, 1 otherwise.
    Check(PolicyCheckArgs),
    /// Marker audit: put a marker in every value of the samples, redact them under the policy,
    /// and report every marker that survives, by path. Exit 0 when none survives outside the
    /// keeps the policy documents (`reason`), 1 otherwise.
    Test(PolicyTestArgs),
}

// `policy test` options.
#[derive(Debug, Args)]
pub struct PolicyTestArgs {
    /// The policy file.
    #[arg(value_name = "POLICY")]
    pub file: PathBuf,
    /// A folder of sample messages (read recursively).
    #[arg(long, value_name = "DIR")]
    pub samples: PathBuf,
    /// A key file for the policy's keyed actions (default: a fixed test key).
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// The report as JSON.
    #[arg(long)]
    pub json: bool,
}

// `policy check` options.
#[derive(Debug, Args)]
pub struct PolicyCheckArgs {
    /// The policy file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Compact JSON findings.
    #[arg(long)]
    pub json: bool,
}

// `redact` options.
#[derive(Debug, Args)]
pub struct RedactArgs {
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub stream: StreamArgs,
    /// The input is NDJSON (FHIR): one resource per line, one output record per line.
    #[arg(long)]
    pub ndjson: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Write the value-free manifest (JSON) to this file (created before anything is written
    /// on standard output; removed when the command fails).
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    #[command(flatten)]
    pub line_ending: LineEndingArg,
    /// More files or directories to redact (with --out-dir).
    #[arg(value_name = "PATH")]
    pub more: Vec<PathBuf>,
    /// Write each input's redaction to this directory (its path relative to the directory
    /// given, or its file name); required with several inputs or a directory. A file any record
    /// of which cannot be redacted is not written.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// With --out-dir: only files whose path (relative to the directory walked) matches this
    /// glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// With --out-dir: skip files and directories matching this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// With --out-dir: files processed at once (default: the number of cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub jobs: Option<u16>,
    /// With --out-dir: show each path as the hex SHA-256 of the path as given.
    #[arg(long)]
    pub redact_paths: bool,
}

impl RedactArgs {
    /// Takes the tree options out (`redact PATH... --out-dir DIR`).
    pub fn take_tree(&mut self) -> super::redact_tree::TreeArgs {
        super::redact_tree::TreeArgs {
            more: std::mem::take(&mut self.more),
            out_dir: self.out_dir.take(),
            include: std::mem::take(&mut self.include),
            exclude: std::mem::take(&mut self.exclude),
            jobs: self.jobs.take(),
            redact_paths: std::mem::take(&mut self.redact_paths),
        }
    }
}

/// The names `--format` accepts: the formats built into this binary and their aliases (`mllp`),
/// read from the registry (a format that is only recognised is not offered).
fn format_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(crate::formats::built_names())
}

// What every command that reads a message takes: the input, its format, the operator's door
// and the limits.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The input file, or `-` for standard input.
    #[arg(value_name = "FILE|-")]
    pub input: PathBuf,
    /// The input format (detected from the first bytes when omitted).
    #[arg(long, value_name = "FORMAT", value_parser = format_names())]
    pub format: Option<String>,
    /// Operator door: after a parse failure, also print up to 200 bytes of the input near the
    /// failure on standard error. These bytes may contain patient data.
    #[arg(long)]
    pub unsafe_show_values: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
}

// `--input-format`, for the commands that take a record stream (`parse`, `validate`,
// `inspect`, `convert`, `redact`).
#[derive(Debug, Args, Default)]
pub struct StreamArgs {
    /// `json-lines`: the input is a stream of records, one JSON object a line (`{"id", "format"?,
    /// "content" | "content_base64"}`), and the output one result object a line in the same
    /// order (`{"id", "ok", "status", "exit", "code"?, "data"?}`; docs/scale-out.md).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub input_format: Option<InputFormat>,
}

impl StreamArgs {
    /// True for `--input-format json-lines`.
    pub fn json_lines(&self) -> bool {
        self.input_format == Some(InputFormat::JsonLines)
    }
}

/// `--input-format`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// One record a line: `{"id", "format"?, "content" | "content_base64"}`.
    JsonLines,
}

// `--policy` and `--key-file`, for the commands that return data.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// A policy file (TOML, policy/README.md): data is redacted under it when its disclosure is
    /// `redacted` (always for `redact`); its limits apply.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// A key file for the policy's keyed actions (hash, pseudonym, date_shift): at least 16
    /// bytes, e.g. `head -c 32 /dev/urandom > phiward.key`.
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
}

// `--line-ending`, for the commands that write HL7 v2 messages (`fmt`, `redact`).
#[derive(Debug, Args)]
pub struct LineEndingArg {
    /// HL7 v2 segment terminators written: `cr` (the standard), `lf` (readable on a terminal),
    /// or `auto`: LF when standard output is a terminal, CR otherwise.
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto")]
    pub line_ending: LineEnding,
}

/// `--line-ending`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum LineEnding {
    /// LF on a terminal, CR otherwise.
    Auto,
    /// CR, as the standard writes segments.
    Cr,
    /// LF.
    Lf,
}

// `parse` options.
#[derive(Debug, Args)]
pub struct ParseArgs {
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub stream: StreamArgs,
    /// Compact JSON, one object per line (per record for multi-record input).
    #[arg(long)]
    pub json: bool,
    /// The input is NDJSON (FHIR): one resource per line, one output record per line.
    #[arg(long)]
    pub ndjson: bool,
    /// HL7 v2: `positional` (fields as arrays by position, for programs) or `named` (fields and
    /// components keyed by position and name from the version's tables; docs/hl7v2-model.md).
    /// Other formats have one model, written for either.
    #[arg(long, value_enum, value_name = "MODEL", default_value = "positional")]
    pub model: ModelArg,
    #[command(flatten)]
    pub select: SelectArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

// Selection and findings filters of the commands that print a model (`parse`, `convert`): the
// MCP tools' arguments of the same names (README, "Size and selection"), per record.
#[derive(Debug, Args, Default)]
pub struct SelectArgs {
    /// HL7 v2: only these segments (comma-separated ids: PID,OBX).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub segments: Vec<String>,
    /// HL7 v2: only these fields (comma-separated: PID-5,OBX-5); the others are blanked.
    #[arg(long, value_name = "FIELDS", value_delimiter = ',')]
    pub fields: Vec<String>,
    /// FHIR: only Bundle entries and NDJSON records of these resource types (comma-separated).
    #[arg(long, value_name = "TYPES", value_delimiter = ',')]
    pub resource_types: Vec<String>,
    /// FHIR: only these elements (comma-separated: Patient.name,entry.resource.ofType(Observation).code),
    /// with each kept resource's type and id, and the findings on them.
    #[arg(long, value_name = "PATHS", value_delimiter = ',')]
    pub paths: Vec<String>,
    /// Only findings of this severity or above.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub min_severity: Option<SeverityArg>,
    /// At most this many findings per record, the most severe first.
    #[arg(long, value_name = "N")]
    pub max_findings: Option<u64>,
}

/// A finding severity, for `--min-severity`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum SeverityArg {
    /// Everything.
    Information,
    /// Warnings, errors and fatal findings.
    Warning,
    /// Errors and fatal findings.
    Error,
    /// Fatal findings only.
    Fatal,
}

impl SelectArgs {
    /// The MCP arguments these flags stand for (`None`: no selection), without a size limit.
    pub fn arguments(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        use serde_json::Value;
        let mut m = serde_json::Map::new();
        for (name, list) in [
            ("segments", &self.segments),
            ("fields", &self.fields),
            ("resource_types", &self.resource_types),
            ("paths", &self.paths),
        ] {
            if !list.is_empty() {
                m.insert(name.to_owned(), Value::from(list.clone()));
            }
        }
        if let Some(s) = self.min_severity {
            let name = match s {
                SeverityArg::Information => "information",
                SeverityArg::Warning => "warning",
                SeverityArg::Error => "error",
                SeverityArg::Fatal => "fatal",
            };
            m.insert("min_severity".to_owned(), Value::from(name));
        }
        if let Some(n) = self.max_findings {
            m.insert("max_findings".to_owned(), Value::from(n));
        }
        if m.is_empty() {
            return None;
        }
        m.insert("max_bytes".to_owned(), Value::from(0));
        Some(m)
    }
}

/// The models of `parse --model`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModelArg {
    /// Fields as arrays by position.
    Positional,
    /// Fields and components keyed by position and name.
    Named,
}

impl From<ModelArg> for crate::formats::codec::ModelShape {
    fn from(m: ModelArg) -> Self {
        match m {
            ModelArg::Positional => crate::formats::codec::ModelShape::Positional,
            ModelArg::Named => crate::formats::codec::ModelShape::Named,
        }
    }
}

// `ack` options.
#[derive(Debug, Args)]
pub struct AckArgs {
    #[command(flatten)]
    pub read: ReadArgs,
    /// The acknowledgment: `999` (implementation acknowledgment, 005010X231A1) or `ta1`
    /// (interchange acknowledgment).
    #[arg(long = "type", value_enum, value_name = "TYPE", default_value = "999")]
    pub ack_type: AckTypeArg,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// The acknowledgments of `ack --type`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum AckTypeArg {
    /// The 999 implementation acknowledgment of each functional group.
    #[value(name = "999")]
    Ack999,
    /// The TA1 interchange acknowledgment.
    Ta1,
}

impl From<AckArgs> for InputArgs {
    fn from(a: AckArgs) -> Self {
        InputArgs::new(a.read).with_policy(a.policy)
    }
}

// `inspect` options.
#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub stream: StreamArgs,
    #[command(flatten)]
    pub batch: BatchArgs,
    /// Compact JSON, one object per line (per record for multi-record input).
    #[arg(long)]
    pub json: bool,
    /// Print nothing on standard output; the exit code is the answer.
    #[arg(long, short)]
    pub quiet: bool,
    /// The input is NDJSON (FHIR): one resource per line, one output record per line.
    #[arg(long)]
    pub ndjson: bool,
    /// A policy file: its limits apply, and its ban on --unsafe-show-values (the summary is
    /// value-free, so nothing is redacted).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// How much to say: `summary` (type, version, counts) or `inventory` (HL7 v2 and FHIR: also
    /// the fields or elements present, with counts, and the codes of coded fields that are in
    /// the standard's own tables). Value-free either way.
    #[arg(long, value_enum, default_value_t = DetailArg::Summary)]
    pub detail: DetailArg,
}

/// The levels of `inspect --detail`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum DetailArg {
    /// Type, version, counts.
    Summary,
    /// The summary and the inventory of fields or elements and table codes.
    Inventory,
}

impl From<DetailArg> for crate::formats::codec::Detail {
    fn from(d: DetailArg) -> Self {
        match d {
            DetailArg::Summary => crate::formats::codec::Detail::Summary,
            DetailArg::Inventory => crate::formats::codec::Detail::Inventory,
        }
    }
}

/// What a command resolved from its arguments (the second layer: no clap here).
#[derive(Debug)]
pub struct InputArgs {
    /// The input file, or `-`.
    pub input: PathBuf,
    /// `--format`.
    pub format: Option<String>,
    /// `--json`.
    pub json: bool,
    /// `--quiet`.
    pub quiet: bool,
    /// `--ndjson`.
    pub ndjson: bool,
    /// `--unsafe-show-values`.
    pub unsafe_show_values: bool,
    /// `--policy`.
    pub policy: Option<PathBuf>,
    /// `--key-file`.
    pub key_file: Option<PathBuf>,
    /// The limits.
    pub limits: LimitArgs,
    /// HL7 v2 segment terminators as LF (`fmt`, `redact`).
    pub line_ending: LineEnding,
    /// `parse --model`.
    pub model: crate::formats::codec::ModelShape,
    /// `parse`/`convert` selection and findings filters, as MCP arguments.
    pub select: Option<serde_json::Map<String, serde_json::Value>>,
    /// `validate` (FHIR): the loaded packages and profiles.
    pub structures: Option<std::sync::Arc<crate::structure::Context>>,
    /// `validate` (FHIR): the reference validator's optional checks.
    pub fhir: crate::formats::fhir::checks::Checks,
}

impl InputArgs {
    /// The resolved arguments of a command with these options (the others off).
    pub fn new(read: ReadArgs) -> Self {
        InputArgs {
            input: read.input,
            format: read.format,
            json: false,
            quiet: false,
            ndjson: false,
            unsafe_show_values: read.unsafe_show_values,
            policy: None,
            key_file: None,
            limits: read.limits,
            line_ending: LineEnding::Cr,
            model: crate::formats::codec::ModelShape::Positional,
            select: None,
            structures: None,
            fhir: crate::formats::fhir::checks::Checks::default(),
        }
    }

    fn with_policy(self, p: PolicyArgs) -> Self {
        InputArgs { policy: p.policy, key_file: p.key_file, ..self }
    }
}

impl From<ParseArgs> for InputArgs {
    fn from(a: ParseArgs) -> Self {
        InputArgs {
            json: a.json,
            ndjson: a.ndjson,
            model: a.model.into(),
            select: a.select.arguments(),
            ..InputArgs::new(a.read)
        }
        .with_policy(a.policy)
    }
}

impl From<InspectArgs> for InputArgs {
    fn from(a: InspectArgs) -> Self {
        InputArgs { json: a.json, quiet: a.quiet, ndjson: a.ndjson, policy: a.policy, ..InputArgs::new(a.read) }
    }
}

impl From<ValidateArgs> for InputArgs {
    fn from(a: ValidateArgs) -> Self {
        InputArgs { json: a.json, quiet: a.quiet, ndjson: a.ndjson, policy: a.policy, ..InputArgs::new(a.read) }
    }
}

impl From<FmtArgs> for InputArgs {
    fn from(a: FmtArgs) -> Self {
        InputArgs {
            json: a.json,
            quiet: a.quiet,
            ndjson: a.ndjson,
            line_ending: a.line_ending.line_ending,
            ..InputArgs::new(a.read)
        }
        .with_policy(a.policy)
    }
}

impl From<RedactArgs> for InputArgs {
    fn from(a: RedactArgs) -> Self {
        InputArgs { ndjson: a.ndjson, line_ending: a.line_ending.line_ending, ..InputArgs::new(a.read) }
            .with_policy(a.policy)
    }
}

// Limits on what is read.
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

// `validate` options.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub stream: StreamArgs,
    #[command(flatten)]
    pub batch: BatchArgs,
    /// Compact JSON, one object per line (per record for multi-record input).
    #[arg(long)]
    pub json: bool,
    /// Print nothing on standard output; the exit code is the answer.
    #[arg(long, short)]
    pub quiet: bool,
    /// The input is NDJSON (FHIR): one resource per line, one output record per line.
    #[arg(long)]
    pub ndjson: bool,
    /// A policy file: its limits apply, and its ban on --unsafe-show-values (findings are
    /// value-free, so nothing is redacted).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Every deviation is an error: warnings count against the verdict, and so do HL7 v2
    /// conformance deviations the default mode tolerates (docs/hl7v2-conformance.md).
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub packages: PackageArgs,
    /// FHIR: validate the resource against this profile too (the canonical URL of a
    /// StructureDefinition that --ig loads), besides those its meta.profile names. Repeatable.
    #[arg(long = "profile", value_name = "URL")]
    pub profiles: Vec<String>,
    /// FHIR: report the absent must-support elements of the profiles (as information).
    #[arg(long)]
    pub must_support: bool,
    /// FHIR: a string or markdown value that looks like it holds an HTML tag is an error
    /// (STRING_HTML_CONTENT), as the reference validator's -security-checks.
    #[arg(long)]
    pub security_checks: bool,
    /// FHIR: raw HTML in a markdown value is an error (MARKDOWN_HTML).
    #[arg(long)]
    pub no_html_in_markdown: bool,
    /// FHIR: JSON5 comments (// and /* */) are allowed in FHIR JSON, as white space.
    #[arg(long)]
    pub allow_comments: bool,
    /// FHIR: a reference that does not resolve in the input is taken to point to a resource of
    /// the type its URL names (Patient/123), which the profiles' target types must then allow.
    #[arg(long)]
    pub assume_valid_rest_references: bool,
    /// FHIR: whether references must resolve to a resource of the input (REFERENCE_TARGET_ABSENT).
    #[arg(long, value_enum, value_name = "POLICY", default_value = "ignore")]
    pub validate_reference: ReferencePolicyArg,
    /// FHIR: validate entries of the input Bundle against a profile that --ig loads: RULE is
    /// Type (every entry of that resource type), Type:N (the N-th of them, from 0) or N (the N-th
    /// entry). Repeatable.
    #[arg(long = "bundle-profile", value_name = "RULE=URL")]
    pub bundle_profiles: Vec<String>,
    /// FHIR: a uri, url or canonical naming an example domain (example.org, acme.com) that
    /// nothing loaded answers to is an error (URL_EXAMPLE), as the reference validator's
    /// -allow-example-urls false.
    #[arg(long)]
    pub no_example_urls: bool,
    /// FHIR: the current time, an RFC 3339 instant with an offset (2026-01-31T12:00:00Z): a
    /// profile's minValueDuration/maxValueDuration bound (100 years before now) is compared with
    /// it. Without it such bounds are not compared (PROFILE_VALUE_DURATION_NO_NOW): the output
    /// depends on the input and the options only.
    #[arg(long, value_name = "DATETIME")]
    pub now: Option<String>,
    /// FHIR: an extension whose definition is not known and whose url starts with URL is not
    /// reported (PROFILE_EXTENSION_UNKNOWN), as the reference validator's
    /// -allowed-extension-domain. Repeatable.
    #[arg(long = "allow-extension-domain", value_name = "URL")]
    pub allow_extension_domains: Vec<String>,
    /// FHIR: no extension whose definition is not known is reported (PROFILE_EXTENSION_UNKNOWN),
    /// as the reference validator's -allow-any-extensions.
    #[arg(long)]
    pub allow_any_extensions: bool,
    /// FHIR: HL7's publication rules, as the reference validator's -forPublication: a canonical
    /// resource under http://hl7.org/fhir/ names its work group (HL7_WORKGROUP_MISSING); a
    /// ValueSet, CodeSystem or ConceptMap has url, version, title, name, status, experimental and
    /// description (SHAREABLE_ELEMENT_MISSING).
    #[arg(long)]
    pub for_publication: bool,
}

/// `validate --validate-reference`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum ReferencePolicyArg {
    /// References need not resolve (the default).
    #[default]
    Ignore,
    /// A reference must resolve to a resource of the input (absolute http(s) URLs aside).
    CheckExists,
    /// As check-exists (the type of a target found is always checked against the profiles).
    CheckExistsAndType,
}

impl ValidateArgs {
    /// The optional FHIR checks; `Err` names the option at fault (a malformed `--bundle-profile`,
    /// an empty `--allow-extension-domain`).
    pub fn checks(&self) -> Result<crate::formats::fhir::checks::Checks, &'static str> {
        use crate::formats::fhir::checks::{BundleProfile, Checks, ReferencePolicy};
        let bundle_profiles = self
            .bundle_profiles
            .iter()
            .map(|b| BundleProfile::parse(b).ok_or("--bundle-profile"))
            .collect::<Result<Vec<_>, _>>()?;
        if self.allow_extension_domains.iter().any(String::is_empty) {
            // An empty domain would allow every url: --allow-any-extensions says that.
            return Err("--allow-extension-domain");
        }
        Ok(Checks {
            security: self.security_checks,
            no_html_in_markdown: self.no_html_in_markdown,
            allow_comments: self.allow_comments,
            assume_valid_rest_references: self.assume_valid_rest_references,
            references: match self.validate_reference {
                ReferencePolicyArg::Ignore => ReferencePolicy::Ignore,
                ReferencePolicyArg::CheckExists => ReferencePolicy::CheckExists,
                ReferencePolicyArg::CheckExistsAndType => ReferencePolicy::CheckExistsAndType,
            },
            bundle_profiles,
            no_example_urls: self.no_example_urls,
            now: match &self.now {
                Some(text) => Some(crate::formats::fhir::now::Now::parse(text).ok_or("--now")?),
                None => None,
            },
            allowed_extension_domains: self.allow_extension_domains.clone(),
            allow_any_extensions: self.allow_any_extensions,
            for_publication: self.for_publication,
        })
    }
}

// `fmt` options.
#[derive(Debug, Args)]
pub struct FmtArgs {
    #[command(flatten)]
    pub read: ReadArgs,
    /// Print no data, only a verdict: `not canonical` (exit 1) when the input is not canonical.
    #[arg(long)]
    pub check: bool,
    /// Print nothing on standard output; the exit code is the answer (with --check).
    #[arg(long, short, requires = "check")]
    pub quiet: bool,
    /// With --check: the verdict as compact JSON, one object per line.
    #[arg(long, requires = "check")]
    pub json: bool,
    /// The input is NDJSON (FHIR): one resource per line, one output record per line.
    #[arg(long)]
    pub ndjson: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub line_ending: LineEndingArg,
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

// `mcp` options.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// A policy file (TOML, policy/README.md): redaction of every tool's data, allowed tools,
    /// limits.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// A key file for the policy's keyed actions.
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// The data folder of imported terminology (for find_equivalent).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    #[command(flatten)]
    pub limits: McpLimitArgs,
}

// The MCP server's limits: the same as the commands', but a message of at most 32 MiB by
// default. A tool's content arrives on one JSON-RPC line that must be held whole to be
// parsed: the cap keeps the server's memory bounded (a line over it is refused as soon as it
// passes it), and an agent's context could not hold a larger reply anyway.
#[derive(Debug, Args)]
pub struct McpLimitArgs {
    /// Largest message of a tool call (its content, decoded), in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 32 * 1024 * 1024)]
    pub max_input_bytes: u64,
    /// Most segments in one message.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub max_segments: u32,
    /// Longest single field, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 64 * 1024 * 1024)]
    pub max_field_bytes: u32,
}

impl McpLimitArgs {
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

// `convert` options.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub stream: StreamArgs,
    /// Compact JSON, one object per line (per record for multi-record input).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
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
    #[command(flatten)]
    pub select: SelectArgs,
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

// Many files at once (`validate`, `inspect`): more paths, directory walks, reports for CI,
// thresholds and baselines (docs/ci.md). Any of these options, a second path or a directory
// runs the command in batch mode: one record per file, a summary on stderr.
#[derive(Debug, Args, Default)]
pub struct BatchArgs {
    /// More files or directories (directories are walked recursively, honouring .gitignore,
    /// .ignore and .phiwardignore).
    #[arg(value_name = "PATH")]
    pub more: Vec<PathBuf>,
    /// Only files whose path (relative to the directory walked) matches this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Skip files and directories whose path (relative to the directory walked) matches this
    /// glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Files processed at once (default: the number of cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub jobs: Option<u16>,
    /// The console output: text (grouped by file), json, json-lines, sarif, junit, github,
    /// gitlab, checkstyle.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub output_format: Option<ReportFormat>,
    /// Also write a report to a file: `FORMAT=FILE` (repeatable), e.g. `sarif=phiward.sarif`.
    #[arg(long, value_name = "FORMAT=FILE", value_parser = parse_report)]
    pub report: Vec<(ReportFormat, PathBuf)>,
    /// Show each file path as the hex SHA-256 of the path as given (a file name can be patient
    /// data), in every output, report and baseline.
    #[arg(long)]
    pub redact_paths: bool,
    /// The least severe new finding that fails the run (exit 1): error (default), warning,
    /// info, or never.
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub fail_on: Option<FailOn>,
    /// Known findings (a file written by --write-baseline): they are reported as baselined and
    /// never fail the run; entries no longer found are reported as fixed.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Write the findings of this run as a baseline file.
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// The configuration file of batch mode (default: phiward.toml in the working directory
    /// or its nearest parent that has one; docs/ci.md).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

impl BatchArgs {
    /// True when an option of batch mode was given.
    pub fn any(&self) -> bool {
        !self.more.is_empty()
            || !self.include.is_empty()
            || !self.exclude.is_empty()
            || self.jobs.is_some()
            || self.output_format.is_some()
            || !self.report.is_empty()
            || self.redact_paths
            || self.fail_on.is_some()
            || self.baseline.is_some()
            || self.write_baseline.is_some()
            || self.config.is_some()
    }
}

/// The report formats of batch mode.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Text for people, grouped by file.
    Text,
    /// One JSON document: files, records, findings, summary.
    Json,
    /// One JSON object per file record, one a line.
    #[value(alias = "ndjson")]
    JsonLines,
    /// SARIF 2.1.0.
    Sarif,
    /// JUnit XML: a testcase per file.
    Junit,
    /// GitHub Actions workflow annotations.
    Github,
    /// GitLab Code Quality JSON.
    Gitlab,
    /// Checkstyle XML.
    Checkstyle,
}

fn parse_report(s: &str) -> Result<(ReportFormat, PathBuf), String> {
    let (name, path) = s.split_once('=').ok_or("expected FORMAT=FILE")?;
    let format = ReportFormat::from_str(name, true).map_err(|_| "unknown report format".to_owned())?;
    if path.is_empty() {
        return Err("expected FORMAT=FILE".to_owned());
    }
    Ok((format, PathBuf::from(path)))
}

/// `--fail-on`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Errors (and fatal findings).
    Error,
    /// Warnings and errors.
    Warning,
    /// Every finding.
    Info,
    /// No finding fails the run (files that cannot be read still do).
    Never,
}
