//! The request and outcome types of the pipeline, and the sink that receives data.
//!
//! What it does not do: run anything (see [`super::run`]).

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use crate::diag::{Code, Diagnostic};
use crate::formats::codec::{AckType, Framing, Syntax};
use crate::formats::{Format, Operation};
use crate::keys::Key;
use crate::limits::Limits;
use crate::phi::{Disclosure, Phi};
use crate::policy::{Disclosure as PolicyDisclosure, Policy};

/// What to do.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// The message as typed JSON.
    Parse,
    /// A verdict with findings.
    Validate,
    /// A value-free summary.
    Inspect {
        /// How much it says.
        detail: crate::formats::codec::Detail,
    },
    /// Canonical form; with `check`, only say whether the input is canonical.
    Fmt {
        /// Exit 1 when the input is not canonical, instead of printing the canonical form.
        check: bool,
    },
    /// The message de-identified under the request's policy, in the same format.
    Redact,
    /// HL7 v2 to a FHIR R4 Bundle (options in [`Request::convert`]).
    Convert,
    /// The acknowledgment of what was received (X12 999 or TA1), in the input's format.
    Ack(AckType),
}

impl Command {
    /// The operation in the support matrix.
    pub fn operation(self) -> Operation {
        match self {
            Command::Parse => Operation::Parse,
            Command::Validate => Operation::Validate,
            Command::Inspect { .. } => Operation::Inspect,
            Command::Fmt { .. } => Operation::Fmt,
            Command::Redact => Operation::Redact,
            Command::Convert => Operation::Convert,
            Command::Ack(_) => Operation::Ack,
        }
    }

    /// True for the commands whose purpose is to return data (`parse`, `fmt`, `convert`,
    /// `redact`, `ack`, which copies control numbers): only they are granted a [`Disclosure`].
    /// `validate` and `inspect` run without one, so nothing on their path can turn a value into
    /// output bytes.
    pub fn discloses(self) -> bool {
        matches!(self, Command::Parse | Command::Fmt { .. } | Command::Convert | Command::Redact | Command::Ack(_))
    }
}

/// Where the input comes from.
#[derive(Debug)]
pub enum Source {
    /// A file path (never shown anywhere: a file can be named after a patient).
    Path(PathBuf),
    /// Standard input.
    Stdin,
    /// Bytes already in memory (the MCP server).
    Bytes(Phi<Vec<u8>>),
}

/// A request.
#[derive(Debug)]
pub struct Request {
    /// The operation.
    pub command: Command,
    /// The input.
    pub source: Source,
    /// The declared format; `None` means detect.
    pub format: Option<Format>,
    /// A declared framing (`--format mllp`); `None`: the format's codec detects it.
    pub framing: Option<Framing>,
    /// Limits.
    pub limits: Limits,
    /// Warnings become errors.
    pub strict: bool,
    /// The operator asked to see the bytes near a parse failure (CLI only).
    pub unsafe_show_values: bool,
    /// The input is NDJSON: one record per line (FHIR).
    pub ndjson: bool,
    /// `fmt` only: the syntax to write (FHIR); `None` keeps the input's syntax.
    pub to: Option<Syntax>,
    /// The policy: required by `redact`; for `parse` and `fmt`, data is redacted under it when
    /// its disclosure is `redacted`.
    pub policy: Option<Arc<Policy>>,
    /// The key for keyed actions (hash, pseudonym, date_shift).
    pub key: Option<Arc<Key>>,
    /// `convert` only: the conversion options.
    pub convert: crate::convert::Options,
    /// `parse` only: the model to write (HL7 v2 has two; other formats one, written for both).
    pub model: crate::formats::codec::ModelShape,
    /// `validate` (FHIR): the loaded packages and profiles (`--ig`, `--profile`).
    pub structures: Option<Arc<crate::structure::Context>>,
    /// `validate` (FHIR): the reference validator's optional checks (`--security-checks`, ...).
    pub fhir: crate::formats::fhir::checks::Checks,
}

impl Request {
    /// The policy under which data is redacted, if any: `redact`'s, and under `--policy` the
    /// data of the other commands that return data. `validate` and `inspect` return no value,
    /// so they read the message as it is.
    pub fn redaction(&self) -> Option<&Policy> {
        let p = self.policy.as_deref()?;
        let redacts = self.command == Command::Redact || p.disclosure == PolicyDisclosure::Redacted;
        (redacts && self.command.discloses()).then_some(p)
    }
}

/// The status of an outcome.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Exit 0.
    Success,
    /// Data was produced and the result is negative (invalid, failed record, not canonical).
    Verdict,
    /// No data: the operation could not be carried out.
    Failed,
}

/// The result of a request.
#[derive(Debug)]
pub struct Outcome {
    /// The exit code of the command-line contract.
    pub exit: u8,
    /// The status.
    pub status: Status,
    /// The code, when failed (a verdict carries its findings in the data instead).
    pub code: Option<Code>,
    /// The fatal diagnostic behind a `CLI_PARSE_FAILED` (value-free).
    pub cause: Option<Diagnostic>,
    /// Bytes near the failure, only when the operator asked with `--unsafe-show-values`.
    pub excerpt: Option<(Phi<Vec<u8>>, Disclosure)>,
    /// True when the input held several records.
    pub multi: bool,
    /// `redact`: the value-free manifest (JSON).
    pub manifest: Option<Vec<u8>>,
    /// Records of the input processed (a stream's), and those that failed with the distinct
    /// codes of their failures (sorted): the CLI's summary line on stderr.
    pub records: Records,
    /// `CLI_FORMAT_UNSUPPORTED`: the format detected or named, which the operation does not
    /// take (a format name: never a value).
    pub detected: Option<crate::formats::Format>,
    /// `redact`: DICOM files written whose pixel data may show burned-in text (the policy
    /// accepts the residual risk).
    pub burned_in_accepted: u64,
}

/// Counts of a stream's records (value-free).
#[derive(Debug, Default, Clone)]
pub struct Records {
    /// Records seen.
    pub seen: u64,
    /// Records that could not be processed.
    pub failed: u64,
    /// The distinct codes of those failures, sorted.
    pub codes: Vec<Code>,
}

impl Records {
    /// Notes a failed record.
    pub fn fail(&mut self, code: Code) {
        self.failed += 1;
        if let Err(i) = self.codes.binary_search_by(|c| c.as_str().cmp(code.as_str())) {
            self.codes.insert(i, code);
        }
    }
}

impl Outcome {
    pub(super) fn failed(code: Code) -> Outcome {
        Outcome {
            exit: crate::error::exit_code_for(code),
            status: Status::Failed,
            code: Some(code),
            cause: None,
            excerpt: None,
            multi: false,
            manifest: None,
            records: Records::default(),
            detected: None,
            burned_in_accepted: 0,
        }
    }
}

/// One item of data for the sink.
#[derive(Debug)]
pub enum Item<'a> {
    /// A JSON object for one record: parse, validate, inspect, convert, a failed record, or a
    /// `fmt --check` result. `json` is compact and complete (it carries `record` when `record`
    /// is set), or the rest of an object whose start went to [`Sink::part`].
    Json {
        /// 1-based record number in a multi-record input.
        record: Option<u64>,
        /// The object.
        json: &'a [u8],
        /// The findings it lists (value-free), for human rendering.
        findings: &'a [Diagnostic],
        /// The verdict for validate, `fmt --check` and failed records.
        valid: Option<bool>,
        /// The code of a failed record.
        error: Option<Code>,
    },
    /// Canonical bytes from `fmt`.
    Bytes(&'a [u8]),
}

/// Receives the data of an operation (stdout for the CLI, the result for MCP).
pub trait Sink {
    /// Takes one item.
    fn item(&mut self, item: Item<'_>) -> io::Result<()>;

    /// Takes several records at once as compact JSON lines (each object followed by `\n`),
    /// when the sink would write each `Item::Json` as its object and a newline (or nothing);
    /// `None`, taking nothing, when it renders the items otherwise (they are then given one
    /// at a time).
    fn json_lines(&mut self, _lines: &[u8]) -> Option<io::Result<()>> {
        None
    }

    /// True when the sink takes the object of a record in parts ([`Sink::part`]), so that a
    /// large record (the Bundle of a large message) is never held whole.
    fn takes_parts(&self) -> bool {
        false
    }

    /// Takes the next bytes of the object of the next `Item::Json`, whose `json` then holds only
    /// the rest of the object. Called only when [`Sink::takes_parts`].
    fn part(&mut self, _bytes: &[u8]) -> io::Result<()> {
        Err(io::ErrorKind::Unsupported.into())
    }

    /// True once whoever waits for the data has gone (an MCP client cancelled the call): the
    /// run stops before its next record, and records already handed to worker threads are
    /// dropped unwritten. The outcome is then `CLI_OUTPUT_FAILED`, as for output that could
    /// not be written. Asked once per record; the default never stops.
    fn cancelled(&self) -> bool {
        false
    }

    /// False when nothing reads the outcome's `manifest` (`redact`'s value-free summary): the
    /// run then does not build it. The default builds it.
    fn reads_manifest(&self) -> bool {
        true
    }
}
