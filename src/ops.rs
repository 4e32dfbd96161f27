//! The single orchestrator: one request in, one [`Outcome`] out, data through a [`Sink`].
//!
//! The CLI and the MCP server both call [`run`]. The exit code and status are computed here,
//! once, so the two front doors cannot disagree. `ops` is also the only place that grants a
//! [`Disclosure`]: for `parse` and `fmt` (whose purpose is to return data), and for the
//! operator's `--unsafe-show-values` door.
//!
//! Multi-record inputs (MLLP streams, batches, concatenated messages) are processed one record at
//! a time; memory is bounded by the largest record.
//!
//! What it does not do: write to stdout or stderr (the sink and the CLI's output module do), or
//! parse command lines.

use std::io::{self, BufRead, BufReader, Read};
use std::path::PathBuf;

mod fhir;

use serde::Serialize;

use crate::detect;
use crate::diag::{Code, Diagnostic, Location};
use crate::error::{Error, exit};
use crate::formats::hl7v2::{self, batch, stream};
use crate::formats::mllp::{self, Frame};
use crate::formats::{Format, Operation};
use crate::limits::Limits;
use crate::phi::{Disclosure, Phi};

/// What to do.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// The message as typed JSON.
    Parse,
    /// A verdict with findings.
    Validate,
    /// A value-free summary.
    Inspect,
    /// Canonical form; with `check`, only say whether the input is canonical.
    Fmt {
        /// Exit 1 when the input is not canonical, instead of printing the canonical form.
        check: bool,
    },
    /// HL7 v2 to a FHIR R4 Bundle (options in [`Request::convert`]).
    Convert,
}

impl Command {
    /// The operation in the support matrix.
    pub fn operation(self) -> Operation {
        match self {
            Command::Parse => Operation::Parse,
            Command::Validate => Operation::Validate,
            Command::Inspect => Operation::Inspect,
            Command::Fmt { .. } => Operation::Fmt,
            Command::Convert => Operation::Convert,
        }
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
    /// `convert` only: the conversion options.
    pub convert: crate::convert::Options,
}

/// A FHIR syntax, for `fmt --to`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// FHIR JSON.
    Json,
    /// FHIR XML.
    Xml,
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
}

impl Outcome {
    fn failed(code: Code) -> Outcome {
        Outcome {
            exit: crate::error::exit_code_for(code),
            status: Status::Failed,
            code: Some(code),
            cause: None,
            excerpt: None,
            multi: false,
        }
    }
}

/// One item of data for the sink.
#[derive(Debug)]
pub enum Item<'a> {
    /// A JSON object for one record: parse, validate, inspect, a failed record, or a
    /// `fmt --check` result. `json` is compact and complete (it carries `record` when `record`
    /// is set).
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
    fn item(&mut self, item: Item<'_>, disclosure: &Disclosure) -> io::Result<()>;
}

/// Runs a request.
pub fn run(request: Request, sink: &mut dyn Sink) -> Outcome {
    let disclosure = Disclosure::grant();
    let show = request.unsafe_show_values;
    let result = (|| -> Result<Outcome, Failure> {
        let mut reader = open(&request.source)?;
        let prefix = fill_prefix(&mut reader)?;
        if prefix.is_empty() {
            return Err(Failure::code(Code::CLI_EMPTY_INPUT));
        }
        let format = match request.format {
            Some(f) => f,
            None => detect::detect(&prefix).map_err(|code| Failure {
                code,
                cause: None,
                excerpt: excerpt_of(show, &prefix, 0),
            })?,
        };
        if detect::skip_bom_and_space(&prefix).is_empty() && format != Format::Dicom {
            return Err(Failure::code(Code::CLI_EMPTY_INPUT));
        }
        if !format.supports(request.command.operation()) {
            return Err(Failure::code(Code::CLI_FORMAT_UNSUPPORTED));
        }
        if request.to.is_some() && (format != Format::Fhir || (request.ndjson && request.to == Some(Syntax::Xml))) {
            // Only FHIR has two syntaxes; an NDJSON record is one line of JSON.
            return Err(Failure::code(Code::CLI_FORMAT_UNSUPPORTED));
        }
        if format == Format::Fhir && request.command != Command::Convert {
            let mut runner = Runner::new(&request, sink, &disclosure, request.ndjson);
            runner.run_fhir(io::Cursor::new(prefix).chain(reader))?;
            return runner.finish();
        }
        let body = detect::skip_bom_and_space(&prefix);
        let framed = format == Format::Mllp || (format == Format::Hl7 && body.first() == Some(&mllp::START));
        let input = io::Cursor::new(prefix).chain(reader);
        let input = BufReader::with_capacity(64 * 1024, input);
        let mut runner = Runner::new(&request, sink, &disclosure, framed);
        if framed {
            runner.run_mllp(input)?;
        } else {
            runner.run_er7(input)?;
        }
        runner.finish()
    })();
    match result {
        Ok(outcome) => outcome,
        Err(f) => {
            let mut o = Outcome::failed(f.code);
            o.cause = f.cause;
            o.excerpt = f.excerpt.map(|e| (e, Disclosure::grant()));
            o
        }
    }
}

/// A failure before or instead of data.
#[derive(Debug)]
struct Failure {
    code: Code,
    cause: Option<Diagnostic>,
    excerpt: Option<Phi<Vec<u8>>>,
}

impl Failure {
    fn code(code: Code) -> Failure {
        Failure { code, cause: None, excerpt: None }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::code(e.code())
    }
}

/// Up to 200 bytes around `offset`, when the operator asked for them.
fn excerpt_of(show: bool, bytes: &[u8], offset: usize) -> Option<Phi<Vec<u8>>> {
    if !show {
        return None;
    }
    let start = offset.saturating_sub(100).min(bytes.len());
    let end = (start + 200).min(bytes.len());
    Some(Phi::new(bytes[start..end].to_vec()))
}

fn open(source: &Source) -> Result<Box<dyn Read + '_>, Failure> {
    match source {
        Source::Path(p) => {
            let file = std::fs::File::open(p).map_err(|e| Failure::from(crate::error::from_read_io(&e)))?;
            match file.metadata() {
                Ok(m) if m.is_dir() => Err(Failure::code(Code::CLI_NO_INPUT)),
                Ok(_) => Ok(Box::new(file)),
                Err(e) => Err(Failure::from(crate::error::from_read_io(&e))),
            }
        }
        Source::Stdin => Ok(Box::new(io::stdin().lock())),
        Source::Bytes(b) => Ok(Box::new(b.span().raw())),
    }
}

/// Reads up to [`detect::PREFIX_LEN`] bytes (less at end of input).
fn fill_prefix(reader: &mut dyn Read) -> Result<Vec<u8>, Failure> {
    let mut prefix = vec![0u8; detect::PREFIX_LEN];
    let mut filled = 0;
    while filled < prefix.len() {
        match reader.read(&mut prefix[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Failure::from(crate::error::from_read_io(&e))),
        }
    }
    prefix.truncate(filled);
    Ok(prefix)
}

/// One record's output.
struct Pending {
    /// The object without `record`.
    json: Vec<u8>,
    findings: Vec<Diagnostic>,
    valid: Option<bool>,
    error: Option<Code>,
}

struct Runner<'r> {
    request: &'r Request,
    sink: &'r mut dyn Sink,
    disclosure: &'r Disclosure,
    /// Records seen.
    records: u64,
    /// Several records: MLLP streams, batches, concatenations (known before the first is
    /// processed, by reading one record ahead).
    multi: bool,
    tracker: batch::Tracker,
    envelope_delims: Option<hl7v2::Delimiters>,
    any_failed_record: bool,
    any_invalid: bool,
    output_failed: bool,
}

impl<'r> Runner<'r> {
    fn new(request: &'r Request, sink: &'r mut dyn Sink, disclosure: &'r Disclosure, framed: bool) -> Self {
        Runner {
            request,
            sink,
            disclosure,
            records: 0,
            multi: framed,
            tracker: batch::Tracker::default(),
            envelope_delims: None,
            any_failed_record: false,
            any_invalid: false,
            output_failed: false,
        }
    }

    fn fmt_mode(&self) -> Option<bool> {
        match self.request.command {
            Command::Fmt { check } => Some(check),
            _ => None,
        }
    }

    fn run_er7(&mut self, input: impl BufRead) -> Result<(), Failure> {
        let limits = self.request.limits;
        let mut records = stream::Splitter::new(input, limits).peekable();
        let mut first = true;
        while let Some(raw) = records.next() {
            let raw = raw.map_err(|e| Failure::from(crate::error::from_read_io(&e)))?;
            if first {
                first = false;
                self.multi |= matches!(raw.kind, stream::Kind::Envelope(_)) || records.peek().is_some();
            }
            let mut out = Vec::new();
            self.record(raw, 0, &mut out)?;
            if !out.is_empty() {
                self.emit_bytes(&out);
            }
        }
        Ok(())
    }

    fn run_mllp(&mut self, input: impl BufRead) -> Result<(), Failure> {
        let limits = self.request.limits;
        for frame in mllp::Deframer::new(input, limits) {
            let frame = frame.map_err(|e| Failure::from(crate::error::from_read_io(&e)))?;
            match frame {
                Frame::Problem { code, offset } => {
                    self.records += 1;
                    let cause = Diagnostic::new(code, Location::Offset(offset));
                    self.failed_record(code, cause, None, "mllp", &mut Vec::new())?;
                }
                Frame::Content { bytes, offset, end_without_cr } => {
                    let mut out = Vec::new();
                    let framed_fmt = self.fmt_mode() == Some(false);
                    if framed_fmt {
                        out.push(mllp::START);
                    }
                    let before = out.len();
                    let ranges = stream::split_slice(&bytes);
                    if let [(kind, _)] = ranges.as_slice() {
                        // The common case, one message per frame: no copy.
                        let raw = stream::Raw { kind: *kind, offset: 0, bytes: Some(bytes) };
                        self.record(raw, offset, &mut out)?;
                    } else {
                        let content = Phi::new(bytes);
                        for (kind, range) in ranges {
                            let piece = content.span().slice(range.start, range.end).raw().to_vec();
                            let raw = stream::Raw { kind, offset: range.start as u64, bytes: Some(piece) };
                            self.record(raw, offset, &mut out)?;
                        }
                    }
                    if end_without_cr && self.fmt_mode() == Some(true) {
                        self.any_invalid = true;
                    }
                    if framed_fmt {
                        if out.len() == before {
                            out.clear();
                        } else {
                            out.extend_from_slice(&[mllp::END, b'\r']);
                        }
                    }
                    if !out.is_empty() {
                        self.emit_bytes(&out);
                    }
                }
            }
        }
        Ok(())
    }

    /// Processes one record. `fmt` output is appended to `out`.
    fn record(&mut self, raw: stream::Raw, base: u64, out: &mut Vec<u8>) -> Result<(), Failure> {
        self.records += 1;
        if self.records > self.request.limits.max_records {
            return Err(Failure::code(Code::CLI_INPUT_TOO_LARGE));
        }
        let offset = base + raw.offset;
        let Some(bytes) = raw.bytes else {
            let cause = Diagnostic::new(Code::CLI_INPUT_TOO_LARGE, Location::Offset(offset));
            return self.failed_record(Code::CLI_INPUT_TOO_LARGE, cause, None, "hl7", out);
        };
        let limits = &self.request.limits;
        let envelope = match raw.kind {
            stream::Kind::Message => None,
            stream::Kind::Envelope(kind) => Some(kind),
        };
        let parsed = hl7v2::parse::parse_record(bytes, offset, limits, envelope.map(|_| self.envelope_delims));
        let msg = match parsed {
            Ok(m) => m,
            Err((fatal, buf)) => {
                match envelope {
                    None => self.tracker.message(),
                    Some(kind) => self.any_invalid |= !self.tracker.envelope(kind, None).is_empty(),
                }
                let code = if fatal.code == Code::CLI_INPUT_TOO_LARGE { fatal.code } else { Code::CLI_PARSE_FAILED };
                return self.failed_record(code, fatal, Some(buf), "hl7", out);
            }
        };
        if self.request.command == Command::Convert {
            if let Some(kind) = envelope {
                // Batch envelopes (FHS/BHS/BTS/FTS) carry no patient data to convert.
                self.tracker.envelope(kind, Some(&msg));
                return Ok(());
            }
            self.tracker.message();
            let converted = crate::convert::hl7v2_fhir::convert(
                &msg,
                &self.request.convert,
                self.records,
                &self.request.limits,
                self.disclosure,
            );
            let valid = hl7v2::validate::is_valid(&converted.findings);
            self.any_invalid |= !valid;
            let mut json = Vec::with_capacity(converted.bundle.len() + 64);
            json.extend_from_slice(b"{\"format\":\"fhir\",\"bundle\":");
            json.extend_from_slice(&converted.bundle);
            json.extend_from_slice(b",\"findings\":");
            findings_json(&converted.findings, &mut json);
            json.push(b'}');
            let findings = converted.findings.clone();
            self.emit(Pending { json, findings, valid: None, error: None });
            return Ok(());
        }
        let options = hl7v2::validate::Options {
            strict: self.request.strict,
            syntax_only: matches!(self.request.command, Command::Parse | Command::Fmt { .. }),
        };
        let mut findings = match envelope {
            None => {
                self.tracker.message();
                hl7v2::validate::validate(&msg, options)
            }
            Some(kind) => {
                if matches!(kind, stream::Envelope::Fhs | stream::Envelope::Bhs) {
                    self.envelope_delims = Some(msg.delimiters());
                }
                let mut f = hl7v2::validate::validate_envelope(&msg, options);
                f.extend(self.tracker.envelope(kind, Some(&msg)));
                f
            }
        };
        findings.truncate(hl7v2::validate::MAX_FINDINGS);
        let valid = hl7v2::validate::is_valid(&findings);
        let mut json = Vec::with_capacity(256);
        match self.request.command {
            Command::Parse => {
                json.extend_from_slice(b"{\"format\":\"hl7\",\"model\":");
                hl7v2::write::model_json(&msg, self.disclosure, &mut json);
                json.extend_from_slice(b",\"warnings\":");
                findings_json(&findings, &mut json);
                json.push(b'}');
                self.emit(Pending { json, findings, valid: None, error: None });
            }
            Command::Validate => {
                self.any_invalid |= !valid;
                verdict_json("hl7", valid, &findings, &mut json);
                self.emit(Pending { json, findings, valid: Some(valid), error: None });
            }
            Command::Inspect => {
                let summary = hl7v2::inspect::summarize(&msg, &findings);
                serde_json::to_writer(&mut json, &summary).map_err(|_| Failure::code(Code::CLI_INTERNAL))?;
                self.emit(Pending { json, findings: Vec::new(), valid: None, error: None });
            }
            // Handled above, before validation.
            Command::Convert => {}
            Command::Fmt { check } => {
                let start = out.len();
                hl7v2::fmt::canonical(&msg, self.disclosure, out);
                let canonical = &out[start..] == msg.bytes().expose_value(self.disclosure);
                if check {
                    out.truncate(start);
                    if !canonical {
                        self.any_invalid = true;
                        json.extend_from_slice(b"{\"format\":\"hl7\",\"canonical\":false}");
                        self.emit(Pending { json, findings: Vec::new(), valid: Some(false), error: None });
                    }
                }
            }
        }
        Ok(())
    }

    /// A record that could not be parsed. In a single-record input, the command fails (no
    /// data). In a stream, the record is reported and the others go on; `fmt` passes the
    /// record's bytes through unchanged so that nothing is lost.
    fn failed_record(
        &mut self,
        code: Code,
        cause: Diagnostic,
        bytes: Option<Phi<Vec<u8>>>,
        format: &str,
        out: &mut Vec<u8>,
    ) -> Result<(), Failure> {
        if !self.multi {
            let at = match cause.location {
                Location::Offset(o) => o as usize,
                _ => 0,
            };
            let excerpt = bytes.as_ref().and_then(|b| excerpt_of(self.request.unsafe_show_values, b.span().raw(), at));
            return Err(Failure { code, cause: Some(cause), excerpt });
        }
        self.any_failed_record = true;
        if self.fmt_mode() == Some(false) {
            if let Some(b) = &bytes {
                out.extend_from_slice(b.expose_value(self.disclosure));
            }
            return Ok(());
        }
        let mut json = Vec::new();
        json.extend_from_slice(b"{\"format\":");
        crate::json::string(&mut json, format);
        json.extend_from_slice(b",\"error\":");
        crate::json::string(&mut json, code.as_str());
        json.push(b'}');
        self.emit(Pending { json, findings: Vec::new(), valid: Some(false), error: Some(code) });
        Ok(())
    }

    fn emit(&mut self, p: Pending) {
        let mut json = Vec::with_capacity(p.json.len() + 16);
        let record = if self.multi {
            json.extend_from_slice(format!("{{\"record\":{},", self.records).as_bytes());
            json.extend_from_slice(p.json.get(1..).unwrap_or_default());
            Some(self.records)
        } else {
            json.extend_from_slice(&p.json);
            None
        };
        let item = Item::Json { record, json: &json, findings: &p.findings, valid: p.valid, error: p.error };
        if self.sink.item(item, self.disclosure).is_err() {
            self.output_failed = true;
        }
    }

    fn emit_bytes(&mut self, bytes: &[u8]) {
        if self.sink.item(Item::Bytes(bytes), self.disclosure).is_err() {
            self.output_failed = true;
        }
    }

    fn finish(mut self) -> Result<Outcome, Failure> {
        let end = self.tracker.finish();
        if !end.is_empty() && self.request.command == Command::Validate {
            self.any_invalid = true;
            self.records += 1;
            let mut json = Vec::new();
            verdict_json("hl7", false, &end, &mut json);
            self.emit(Pending { json, findings: end, valid: Some(false), error: None });
        }
        if self.records == 0 {
            return Err(Failure::code(Code::CLI_EMPTY_INPUT));
        }
        if self.output_failed {
            return Err(Failure::code(Code::CLI_OUTPUT_FAILED));
        }
        let (exit, status) = if self.any_failed_record {
            (exit::DATAERR, Status::Verdict)
        } else if self.any_invalid {
            (exit::INVALID, Status::Verdict)
        } else {
            (exit::OK, Status::Success)
        };
        Ok(Outcome { exit, status, code: None, cause: None, excerpt: None, multi: self.multi })
    }
}

/// `[{"code":..,"severity":..,"location":..}, ...]`
pub fn findings_json(findings: &[Diagnostic], out: &mut Vec<u8>) {
    out.push(b'[');
    for (i, d) in findings.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"code\":");
        crate::json::string(out, d.code.as_str());
        out.extend_from_slice(b",\"severity\":");
        crate::json::string(out, d.severity.as_str());
        out.extend_from_slice(b",\"location\":");
        crate::json::string(out, &d.location.to_string());
        out.push(b'}');
    }
    out.push(b']');
}

fn verdict_json(format: &str, valid: bool, findings: &[Diagnostic], out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"format\":");
    crate::json::string(out, format);
    out.extend_from_slice(if valid { b",\"valid\":true,\"findings\":" } else { b",\"valid\":false,\"findings\":" });
    findings_json(findings, out);
    out.push(b'}');
}
