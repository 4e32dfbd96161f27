//! The single orchestrator: one request in, one [`Outcome`] out, data through a [`Sink`].
//!
//! The CLI and the MCP server both call [`run`]. The exit code and status are computed here,
//! once, so the two front doors cannot disagree. `ops` is also the only place that grants a
//! [`Disclosure`]: for `parse` and `fmt` (whose purpose is to return data), and for the
//! operator's `--unsafe-show-values` door.
//!
//! Multi-record inputs (MLLP streams, batches, concatenated messages, NDJSON) are read one record
//! at a time; memory is bounded by the largest record (times the few batches in flight when
//! records are processed on several threads: `parse`, `validate`, `inspect` and `convert` of an
//! input read whole, see `par`).
//!
//! What it does not do: write to stdout or stderr (the sink and the CLI's output module do), or
//! parse command lines.

use std::io::{self, BufRead, BufReader, Read};
use std::path::PathBuf;

mod fhir;
mod par;

use serde::Serialize;

use crate::detect;
use crate::diag::{Code, Diagnostic, Location};
use crate::error::{Error, exit};
use crate::formats::hl7v2::{self, batch, stream};
use crate::formats::mllp::{self, Frame};
use crate::formats::{Format, Operation};
use crate::keys::Key;
use crate::limits::Limits;
use crate::phi::{Disclosure, Phi};
use crate::policy::{self, Disclosure as PolicyDisclosure, Policy};
use std::sync::Arc;

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
    /// The message de-identified under the request's policy, in the same format.
    Redact,
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
            Command::Redact => Operation::Redact,
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
    /// The policy: required by `redact`; for `parse` and `fmt`, data is redacted under it when
    /// its disclosure is `redacted`.
    pub policy: Option<Arc<Policy>>,
    /// The key for keyed actions (hash, pseudonym, date_shift).
    pub key: Option<Arc<Key>>,
    /// `convert` only: the conversion options.
    pub convert: crate::convert::Options,
}

impl Request {
    /// The policy under which data is redacted, if any.
    fn redaction(&self) -> Option<&Policy> {
        let p = self.policy.as_deref()?;
        (self.command == Command::Redact || p.disclosure == PolicyDisclosure::Redacted).then_some(p)
    }
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
    /// `redact`: the value-free manifest (JSON).
    pub manifest: Option<Vec<u8>>,
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
            manifest: None,
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

    /// Takes several records at once as compact JSON lines (each object followed by `\n`),
    /// when the sink would write each `Item::Json` as its object and a newline (or nothing);
    /// `None`, taking nothing, when it renders the items otherwise (they are then given one
    /// at a time).
    fn json_lines(&mut self, _lines: &[u8], _disclosure: &Disclosure) -> Option<io::Result<()>> {
        None
    }
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
        if request.command == Command::Redact && request.policy.is_none() {
            return Err(Failure::code(Code::CLI_USAGE));
        }
        if let Some(p) = request.redaction() {
            p.check_key(request.key.is_some()).map_err(|e| Failure::code(e.code))?;
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
            runner.parallel(batchable_source(&request.source));
            runner.run_fhir(io::Cursor::new(prefix).chain(reader))?;
            return runner.finish();
        }
        let body = detect::skip_bom_and_space(&prefix);
        let framed = format == Format::Mllp || (format == Format::Hl7 && body.first() == Some(&mllp::START));
        let input = io::Cursor::new(prefix).chain(reader);
        let input = BufReader::with_capacity(64 * 1024, input);
        let mut runner = Runner::new(&request, sink, &disclosure, framed);
        runner.parallel(batchable_source(&request.source));
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

/// True when the input is read whole, not a live stream: a file, bytes in memory, or standard
/// input redirected from a regular file. Only such inputs are processed in batches on several
/// threads; a pipe or a terminal gets each record's output as the record arrives.
fn batchable_source(source: &Source) -> bool {
    match source {
        Source::Path(_) | Source::Bytes(_) => true,
        Source::Stdin => stdin_is_file(),
    }
}

#[cfg(unix)]
fn stdin_is_file() -> bool {
    use std::os::fd::AsFd;
    let Ok(fd) = io::stdin().as_fd().try_clone_to_owned() else { return false };
    std::fs::File::from(fd).metadata().is_ok_and(|m| m.is_file())
}

#[cfg(not(unix))]
fn stdin_is_file() -> bool {
    false
}

/// Lends a worker thread the disclosure of the operation it works for.
fn grant_worker() -> Disclosure {
    Disclosure::grant()
}

/// Messages per thread converted together (bounds memory: the batch's messages and Bundles).
const CONVERT_BATCH_PER_WORKER: usize = 128;

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
    hl7_redactor: Option<policy::hl7v2::Redactor<'r>>,
    fhir_redactor: Option<policy::fhir::Redactor<'r>>,
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
    /// Messages parsed and waiting to be converted (`convert`): converted together, on all
    /// cores, and written in input order (see [`Runner::flush_converts`]).
    pending: Vec<ConvertJob>,
    /// How many messages may wait: 1 (none waits) for standard input, whose records are
    /// written as they come.
    batch: usize,
    /// Worker threads for a batch.
    workers: usize,
    /// `parse`, `validate`, `inspect` of a multi-record input read whole: records processed in
    /// batches on several threads (see [`par`]).
    par: Option<par::Batcher>,
}

/// A message waiting to be converted, with its record number.
struct ConvertJob {
    msg: hl7v2::parse::Message,
    record: u64,
}

impl<'r> Runner<'r> {
    fn new(request: &'r Request, sink: &'r mut dyn Sink, disclosure: &'r Disclosure, framed: bool) -> Self {
        let key = request.key.as_deref();
        Runner {
            request,
            hl7_redactor: request.redaction().map(|p| policy::hl7v2::Redactor::new(p, key)),
            fhir_redactor: request.redaction().map(|p| policy::fhir::Redactor::new(p, key)),
            sink,
            disclosure,
            records: 0,
            multi: framed,
            tracker: batch::Tracker::default(),
            envelope_delims: None,
            any_failed_record: false,
            any_invalid: false,
            output_failed: false,
            pending: Vec::new(),
            batch: 1,
            workers: 1,
            par: None,
        }
    }

    /// Lets records be processed several at a time on all cores when the input is read whole
    /// (`whole`): `convert` (see [`Runner::flush_converts`]), and `parse`, `validate` and
    /// `inspect` without a redacting policy (see [`par`]).
    fn parallel(&mut self, whole: bool) {
        if !whole {
            return;
        }
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(par::MAX_WORKERS);
        if workers <= 1 {
            return;
        }
        match self.request.command {
            Command::Convert => {
                self.workers = workers;
                self.batch = workers * CONVERT_BATCH_PER_WORKER;
            }
            Command::Parse | Command::Validate | Command::Inspect if self.request.redaction().is_none() => {
                let work = par::Work {
                    command: self.request.command,
                    strict: self.request.strict,
                    limits: self.request.limits,
                };
                self.par = Some(par::Batcher::new(work, workers, grant_worker));
            }
            _ => {}
        }
    }

    /// Hands a record to the batch, and writes the records finished meanwhile.
    fn queue(&mut self, job: par::Job) -> Result<(), Failure> {
        let Some(batcher) = self.par.as_mut() else { return Ok(()) };
        let done = batcher.push(job);
        self.write_outs(done)
    }

    /// Writes finished records, in order.
    fn write_outs(&mut self, batches: Vec<par::Finished>) -> Result<(), Failure> {
        for batch in batches {
            self.write_batch(batch)?;
        }
        Ok(())
    }

    /// Writes the records of a finished batch: with one call when the sink takes JSON lines
    /// and every record has its object.
    fn write_batch(&mut self, batch: par::Finished) -> Result<(), Failure> {
        if batch.all_json() {
            if let Some(written) = self.sink.json_lines(&batch.lines, self.disclosure) {
                for out in &batch.outs {
                    if let par::Out::Json { invalid, failed, .. } = out {
                        self.any_invalid |= invalid;
                        self.any_failed_record |= failed;
                    }
                }
                if written.is_err() {
                    self.output_failed = true;
                }
                return Ok(());
            }
        }
        for out in batch.outs {
            match out {
                par::Out::Json { record, json, findings, valid, error, invalid, failed } => {
                    self.any_invalid |= invalid;
                    self.any_failed_record |= failed;
                    let json = batch.lines.get(json).unwrap_or_default();
                    let item = Item::Json { record: Some(record), json, findings: &findings, valid, error };
                    if self.sink.item(item, self.disclosure).is_err() {
                        self.output_failed = true;
                    }
                }
                par::Out::Internal(code) => {
                    if let Some(b) = self.par.as_mut() {
                        b.abandon();
                    }
                    return Err(Failure::code(code));
                }
                par::Out::Panicked(payload) => {
                    if let Some(b) = self.par.as_mut() {
                        b.abandon();
                    }
                    std::panic::resume_unwind(payload);
                }
            }
        }
        Ok(())
    }

    /// Writes every record waiting in a batch (`parse`, `validate`, `inspect`, `convert`):
    /// called before any other output, and at the end of the input.
    fn flush_pending(&mut self) -> Result<(), Failure> {
        if let Some(b) = self.par.as_mut() {
            let done = b.drain();
            self.write_outs(done)?;
        }
        self.flush_converts()
    }

    /// Converts the waiting messages (in parallel when there are several) and writes their
    /// records in input order. Called when the batch is full, before any other record is
    /// written, and at the end of the input.
    fn flush_converts(&mut self) -> Result<(), Failure> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let jobs = std::mem::take(&mut self.pending);
        // The request and the disclosure outlive the runner's borrow: the workers read them
        // while this thread writes.
        let request = self.request;
        let disclosure = self.disclosure;
        // Without a redacting policy the Bundle is written as it is: the converter writes it
        // after the start of its record, and `write_converted` appends the rest (no copy).
        let multi = self.multi;
        let in_place = request.redaction().is_none();
        let convert = |job: &ConvertJob| {
            let mut prefix = Vec::new();
            if in_place {
                converted_record_prefix(multi, job.record, &mut prefix);
            }
            crate::convert::hl7v2_fhir::convert_after(
                &prefix,
                FINDING_ROOM,
                &job.msg,
                &request.convert,
                job.record,
                &request.limits,
                disclosure,
            )
        };
        let records = self.records;
        let mut outcome = Ok(());
        if jobs.len() == 1 || self.workers <= 1 {
            for job in &jobs {
                self.records = job.record;
                outcome = self.write_converted(convert(job));
                if outcome.is_err() {
                    break;
                }
            }
            self.records = records;
            return outcome;
        }
        // The messages are taken in input order by index, by `workers - 1` helper threads and
        // by this thread, which converts one whenever the next Bundle to write is not ready:
        // one thread per core (a third would only take turns), and writing overlaps converting.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let (done, arrived) = std::sync::mpsc::channel();
        let mut slots: Vec<Option<crate::convert::hl7v2_fhir::Converted>> = jobs.iter().map(|_| None).collect();
        let mut written = 0usize;
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..self.workers.min(jobs.len()))
                .map(|_| {
                    let done = done.clone();
                    let (next, jobs, convert) = (&next, &jobs, &convert);
                    scope.spawn(move || {
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(job) = jobs.get(i) else { break };
                            if done.send((i, convert(job))).is_err() {
                                break;
                            }
                        }
                    })
                })
                .collect();
            drop(done);
            loop {
                while let Ok((i, converted)) = arrived.try_recv() {
                    if let Some(slot) = slots.get_mut(i) {
                        *slot = Some(converted);
                    }
                }
                while outcome.is_ok()
                    && let Some(converted) = slots.get_mut(written).and_then(Option::take)
                {
                    self.records = jobs.get(written).map_or(records, |j| j.record);
                    outcome = self.write_converted(converted);
                    written += 1;
                }
                if outcome.is_err() {
                    // Nothing more is written: the helpers stop at their next message.
                    next.store(jobs.len(), std::sync::atomic::Ordering::Relaxed);
                    break;
                }
                if written == jobs.len() {
                    break;
                }
                // The next Bundle to write is not ready: convert a message here, or wait.
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if let Some(job) = jobs.get(i) {
                    // A panic here is caught as in a helper: the message stays unconverted and is
                    // converted again below, once the records before it are written.
                    let converted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| convert(job)));
                    if let (Ok(converted), Some(slot)) = (converted, slots.get_mut(i)) {
                        *slot = Some(converted);
                    }
                    continue;
                }
                match arrived.recv() {
                    Ok((i, converted)) => {
                        if let Some(slot) = slots.get_mut(i) {
                            *slot = Some(converted);
                        }
                    }
                    // Every helper is gone: what they left is converted below.
                    Err(_) => break,
                }
            }
            for h in helpers {
                // A helper that panicked left its messages unconverted: they are converted
                // again below, on this thread, where a panic is the CLI's to handle.
                let _ = h.join();
            }
        });
        // What a panicked worker left, in order, then everything after it.
        while outcome.is_ok() && written < jobs.len() {
            let Some(job) = jobs.get(written) else { break };
            let converted = slots.get_mut(written).and_then(Option::take).unwrap_or_else(|| convert(job));
            self.records = job.record;
            outcome = self.write_converted(converted);
            written += 1;
        }
        self.records = records;
        outcome
    }

    /// Writes one converted message (the record number is `self.records`).
    fn write_converted(&mut self, mut converted: crate::convert::hl7v2_fhir::Converted) -> Result<(), Failure> {
        if converted.start > 0 {
            // The Bundle follows the start of its record (no redacting policy): the object is
            // completed in its buffer, which `converted` wipes when dropped.
            let valid = hl7v2::validate::is_valid(&converted.findings);
            self.any_invalid |= !valid;
            let json = &mut converted.out;
            json.reserve(16 + FINDING_ROOM * converted.findings.len());
            json.extend_from_slice(b",\"findings\":");
            findings_json(&converted.findings, json);
            json.push(b'}');
            self.emit_complete(&converted.out, &converted.findings, None, None);
            return Ok(());
        }
        // Under a redacting policy the message was redacted by the HL7 v2 rules; the Bundle is
        // then redacted by the FHIR rules (ids, fullUrls and references rewritten
        // consistently). A Bundle that cannot be redacted is not released.
        let mut bundle = match enforce_fhir_json(self.request, std::mem::take(&mut converted.out), self.disclosure) {
            Ok(b) => b,
            Err(code) => {
                let at = Location::Record(u32::try_from(self.records).unwrap_or(u32::MAX));
                return self.failed_record(code, Diagnostic::new(code, at), None, "fhir", &mut Vec::new());
            }
        };
        let valid = hl7v2::validate::is_valid(&converted.findings);
        self.any_invalid |= !valid;
        // The object is written complete (with `record` in a multi-record input): what `emit`
        // gives, without copying the Bundle a second time.
        let mut json = Vec::with_capacity(bundle.len() + 128 + 160 * converted.findings.len());
        converted_record_prefix(self.multi, self.records, &mut json);
        // The redactor ends its document with a newline (a file's last line); inside the
        // record's object it would split the JSON line.
        json.extend_from_slice(bundle.trim_ascii_end());
        crate::phi::wipe(&mut bundle);
        json.extend_from_slice(b",\"findings\":");
        findings_json(&converted.findings, &mut json);
        json.push(b'}');
        self.emit_complete(&json, &converted.findings, None, None);
        crate::phi::wipe(&mut json);
        Ok(())
    }

    fn fmt_mode(&self) -> Option<bool> {
        match self.request.command {
            Command::Fmt { check } => Some(check),
            Command::Redact => Some(false),
            _ => None,
        }
    }

    /// True when values pass through a policy before they leave.
    fn redacting(&self) -> bool {
        self.hl7_redactor.is_some()
    }

    fn run_er7(&mut self, input: impl BufRead) -> Result<(), Failure> {
        let result = self.run_er7_records(input);
        // What was read before the end (or a failure) is written; a failure among those records
        // comes first.
        let flushed = self.flush_pending();
        flushed.and(result)
    }

    fn run_er7_records(&mut self, input: impl BufRead) -> Result<(), Failure> {
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
        let result = self.run_mllp_frames(input);
        let flushed = self.flush_pending();
        flushed.and(result)
    }

    fn run_mllp_frames(&mut self, input: impl BufRead) -> Result<(), Failure> {
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
        if self.par.is_some() && self.multi {
            if envelope.is_none() {
                self.tracker.message();
                return self.queue(par::Job::Hl7 { bytes, offset, record: self.records });
            }
            // An envelope record is processed here, after the records before it.
            self.flush_pending()?;
        }
        let parsed = hl7v2::parse::parse_record(bytes, offset, limits, envelope.map(|_| self.envelope_delims));
        let mut msg = match parsed {
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
        if let Some(r) = self.hl7_redactor.as_mut() {
            if self.request.command == Command::Redact {
                if envelope.is_none() {
                    self.tracker.message();
                }
                r.redact(&msg, self.disclosure, out);
                return Ok(());
            }
            let mut red = Vec::with_capacity(msg.bytes().expose_value(self.disclosure).len());
            r.redact(&msg, self.disclosure, &mut red);
            let again = hl7v2::parse::parse_record(red, offset, limits, envelope.map(|_| self.envelope_delims));
            msg = match again {
                Ok(m) => m,
                Err((fatal, _)) => return self.failed_record(Code::CLI_PARSE_FAILED, fatal, None, "hl7", out),
            };
        }
        if self.request.command == Command::Convert {
            if let Some(kind) = envelope {
                // Batch envelopes (FHS/BHS/BTS/FTS) carry no patient data to convert.
                self.tracker.envelope(kind, Some(&msg));
                return Ok(());
            }
            self.tracker.message();
            self.pending.push(ConvertJob { msg, record: self.records });
            if self.pending.len() >= self.batch {
                self.flush_converts()?;
            }
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
                // `record` is written first, so that `emit` has nothing to copy.
                let mut json = self.record_prefix();
                json.extend_from_slice(b"\"format\":\"hl7\",\"model\":");
                hl7v2::write::model_json(&msg, self.disclosure, &mut json);
                json.extend_from_slice(b",\"warnings\":");
                findings_json(&findings, &mut json);
                json.push(b'}');
                self.emit_complete(&json, &findings, None, None);
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
            Command::Redact => {}
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
        // Records waiting in a batch come first.
        self.flush_pending()?;
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
            if self.redacting() {
                // Under a policy a record that does not parse cannot be redacted: it is left out.
                if let Some(r) = self.hl7_redactor.as_mut() {
                    r.counts.fail_closed += 1;
                }
                return Ok(());
            }
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

    /// The start of a record's object: `{"record":N,` in a multi-record input, else `{`.
    fn record_prefix(&self) -> Vec<u8> {
        let mut json = Vec::with_capacity(256);
        self.push_record_prefix(&mut json);
        json
    }

    /// Appends [`Runner::record_prefix`] to `json`.
    fn push_record_prefix(&self, json: &mut Vec<u8>) {
        record_prefix_for(self.multi, self.records, json);
    }

    /// Emits an object that starts with [`Runner::record_prefix`].
    fn emit_complete(&mut self, json: &[u8], findings: &[Diagnostic], valid: Option<bool>, error: Option<Code>) {
        let record = self.multi.then_some(self.records);
        let item = Item::Json { record, json, findings, valid, error };
        if self.sink.item(item, self.disclosure).is_err() {
            self.output_failed = true;
        }
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
        let manifest = match (self.request.command, self.request.policy.as_deref()) {
            (Command::Redact, Some(p)) => {
                let mut counts = policy::manifest::Counts::new(p);
                if let Some(r) = &self.hl7_redactor {
                    counts.add(&r.counts);
                }
                if let Some(r) = &self.fhir_redactor {
                    counts.add(&r.counts);
                }
                Some(policy::manifest::json(p, &counts, self.request.key.is_some()))
            }
            _ => None,
        };
        Ok(Outcome { exit, status, code: None, cause: None, excerpt: None, multi: self.multi, manifest })
    }
}

/// Enforcement for FHIR JSON that phiward produces itself (the hook for `convert`'s Bundle):
/// under a policy whose disclosure is `redacted` the JSON is redacted by the FHIR rules (ids,
/// fullUrls and references rewritten consistently); otherwise it is returned as is. On failure
/// nothing may be released (the caller fails the record with the code).
pub fn enforce_fhir_json(request: &Request, json: Vec<u8>, disclosure: &Disclosure) -> Result<Vec<u8>, Code> {
    match request.redaction() {
        None => Ok(json),
        Some(p) => policy::fhir::redact_fhir_json(p, request.key.as_deref(), json, &request.limits, disclosure, true),
    }
}

/// Appends the start of a record's object (see [`Runner::record_prefix`]) for record `record`
/// of an input with several records (`multi`) or one.
fn record_prefix_for(multi: bool, record: u64, json: &mut Vec<u8>) {
    if multi {
        json.extend_from_slice(b"{\"record\":");
        crate::diag::decimal(record, json);
        json.push(b',');
    } else {
        json.push(b'{');
    }
}

/// Bytes reserved for a finding written by [`findings_json`] (most take 80 to 120).
const FINDING_ROOM: usize = 128;

/// Appends what a converted record's object holds before its Bundle:
/// `{"record":N,"format":"fhir","bundle":` (as [`Runner::write_converted`] writes it).
fn converted_record_prefix(multi: bool, record: u64, json: &mut Vec<u8>) {
    record_prefix_for(multi, record, json);
    json.extend_from_slice(b"\"format\":\"fhir\",\"bundle\":");
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
        location_json(&d.location, out);
        out.push(b'}');
    }
    out.push(b']');
}

/// A location as a JSON string: HL7 v2 positions (most findings of a stream) are written
/// directly, byte for byte what `Location`'s `Display` gives, without a `String` per finding.
fn location_json(location: &Location, out: &mut Vec<u8>) {
    // `convert`'s findings (`PID[1]-3[1].4->Patient.identifier`): the position, then the path.
    let (p, target) = match location {
        Location::Hl7(p) => (Some(p), None),
        Location::Convert(p, path) => (Some(p), Some(*path)),
        _ => (None, None),
    };
    if let Some(p) = p {
        let id = p.segment.unwrap_or("segment");
        let plain_target = target.is_none_or(|t| !t.bytes().any(crate::json::needs_escape));
        if plain_target && id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            out.push(b'"');
            out.extend_from_slice(id.as_bytes());
            out.push(b'[');
            decimal(p.index, out);
            out.push(b']');
            if p.field > 0 {
                out.push(b'-');
                decimal(p.field, out);
                if p.repetition > 0 {
                    out.push(b'[');
                    decimal(p.repetition, out);
                    out.push(b']');
                }
                if p.component > 0 {
                    out.push(b'.');
                    decimal(p.component, out);
                    if p.subcomponent > 0 {
                        out.push(b'.');
                        decimal(p.subcomponent, out);
                    }
                }
            }
            if let Some(t) = target {
                out.extend_from_slice(b"->");
                out.extend_from_slice(t.as_bytes());
            }
            out.push(b'"');
            return;
        }
    }
    out.push(b'"');
    if let Location::Fhir(path) = location {
        // The path's text written directly (FHIR findings of converted Bundles are many), then
        // checked to need no escape (names of the definitions never do); else written again
        // through `Display`.
        let start = out.len();
        path.write_text(out);
        if !out[start..].iter().any(|&b| crate::json::needs_escape(b)) {
            out.push(b'"');
            return;
        }
        out.truncate(start);
    }
    // Writing into a byte buffer cannot fail.
    let _ = std::fmt::Write::write_fmt(&mut crate::json::Escaped(out), format_args!("{location}"));
    out.push(b'"');
}

/// `n` in decimal.
fn decimal(n: u32, out: &mut Vec<u8>) {
    crate::diag::decimal(u64::from(n), out);
}

fn verdict_json(format: &str, valid: bool, findings: &[Diagnostic], out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"format\":");
    crate::json::string(out, format);
    out.extend_from_slice(if valid { b",\"valid\":true,\"findings\":" } else { b",\"valid\":false,\"findings\":" });
    findings_json(findings, out);
    out.push(b'}');
}

/// `map-codes --scan`: every coding of a message, with its structural location. HL7 v2 (ER7):
/// the CE/CWE/CNE fields of the message's version (MSH-12), each repetition's identifier and
/// coding system (components 1 and 3) and alternate ones (4 and 6), the system name mapped to
/// its URI where HL7 table 0396 has one (`LN` → `http://loinc.org`). FHIR JSON: every object
/// with string `system` and `code`, located `coding:N` (document order). The codings are data
/// for the data channel (the caller's own message); this is why it lives here, where a
/// `Disclosure` is granted.
pub fn scan_codings(
    path: &std::path::Path,
    limits: &Limits,
) -> Result<Vec<crate::terminology::conceptmap::Coding>, Code> {
    let max = usize::try_from(limits.max_input_bytes).unwrap_or(usize::MAX);
    let bytes = crate::terminology::import::read_bounded_bytes(path, max)?;
    scan_codings_in(bytes, limits)
}

/// [`scan_codings`] of a message in memory (the MCP `map_codes` tool's `content`).
pub fn scan_codings_in(bytes: Vec<u8>, limits: &Limits) -> Result<Vec<crate::terminology::conceptmap::Coding>, Code> {
    use crate::diag::{Hl7Position, Location};
    use crate::formats::hl7v2::schema;
    use crate::terminology::conceptmap::Coding;

    if bytes.len() as u64 > limits.max_input_bytes {
        return Err(Code::CLI_INPUT_TOO_LARGE);
    }
    let disclosure = Disclosure::grant();
    let format = detect::detect(&bytes)?;
    let mut out = Vec::new();
    match format {
        Format::Hl7 => {
            let message = crate::formats::hl7v2::parse(bytes, limits).map_err(|_| Code::CLI_PARSE_FAILED)?;
            let version = message
                .msh()
                .field(12)
                .and_then(|f| f.at(1, 1, 1))
                .and_then(|v| schema::Version::nearest(v.expose_value(&disclosure)))
                .unwrap_or(schema::Version::V2_5_1);
            let schema = schema::try_schema(version).map_err(|_| Code::CLI_INTERNAL)?;
            for seg in message.segments() {
                let Some(def) = schema.segment(seg.id().expose_value(&disclosure)) else { continue };
                for field in seg.fields() {
                    let position = field.position();
                    let Some(fdef) = def.field(position.field as usize) else { continue };
                    if !matches!(fdef.base_data_type(), "CE" | "CWE" | "CNE") {
                        continue;
                    }
                    if !field.is_splittable() {
                        continue;
                    }
                    let delimiters = field.delimiters();
                    // One pass over repetitions and components (no `at`, which rescans).
                    for (r, rep) in field.repetitions().enumerate() {
                        let components: Vec<&[u8]> = rep
                            .split(Some(delimiters.component))
                            .take(6)
                            .map(|c| {
                                c.split(Some(delimiters.subcomponent))
                                    .next()
                                    .map(|s| s.bytes.expose_value(&disclosure))
                                    .unwrap_or_default()
                            })
                            .collect();
                        for (code_c, system_c) in [(1u32, 3u32), (4, 6)] {
                            let value = |c: u32| components.get(c as usize - 1).copied().unwrap_or_default();
                            let (code, system) = (value(code_c), value(system_c));
                            if code.is_empty() {
                                continue;
                            }
                            let (Ok(code), Ok(system)) = (std::str::from_utf8(code), std::str::from_utf8(system))
                            else {
                                continue;
                            };
                            let repetition = u32::try_from(r + 1).unwrap_or(u32::MAX);
                            let p: Hl7Position = position.field(position.field, repetition).component(code_c, 0);
                            out.push(Coding {
                                location: Location::Hl7(p).to_string(),
                                system: v2_system_uri(system),
                                code: code.to_owned(),
                            });
                        }
                    }
                }
            }
        }
        Format::Fhir if detect::skip_bom_and_space(&bytes).first() == Some(&b'{') => {
            let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| Code::CLI_PARSE_FAILED)?;
            let mut stack = vec![&value];
            while let Some(v) = stack.pop() {
                match v {
                    serde_json::Value::Object(map) => {
                        if let (Some(serde_json::Value::String(system)), Some(serde_json::Value::String(code))) =
                            (map.get("system"), map.get("code"))
                        {
                            out.push(Coding {
                                location: format!("coding:{}", out.len() + 1),
                                system: system.clone(),
                                code: code.clone(),
                            });
                        }
                        stack.extend(map.values().rev());
                    }
                    serde_json::Value::Array(items) => stack.extend(items.iter().rev()),
                    _ => {}
                }
            }
        }
        _ => return Err(Code::CLI_FORMAT_UNSUPPORTED),
    }
    Ok(out)
}

/// The URI of an HL7 v2 coding system name (table 0396), or the name itself.
fn v2_system_uri(name: &str) -> String {
    let uri = match name {
        "LN" => "http://loinc.org",
        "I10" | "I10C" | "ICD10CM" => "http://hl7.org/fhir/sid/icd-10-cm",
        "RXNORM" => "http://www.nlm.nih.gov/research/umls/rxnorm",
        "UCUM" => "http://unitsofmeasure.org",
        "MSH" => "http://id.nlm.nih.gov/mesh",
        _ => {
            if let Some(n) = name.strip_prefix("HL7").filter(|n| n.len() == 4 && n.bytes().all(|b| b.is_ascii_digit()))
            {
                return format!("http://terminology.hl7.org/CodeSystem/v2-{n}");
            }
            name
        }
    };
    uri.to_owned()
}

#[cfg(test)]
mod tests {
    use crate::diag::{Hl7Position, Location};

    #[test]
    fn locations_are_written_as_displayed() {
        let base = Hl7Position::segment(Some("OBX"), 12);
        for p in [
            base,
            base.field(5, 0),
            base.field(10, 2),
            base.field(6, 1).component(3, 0),
            base.field(6, 1).component(3, 14),
        ] {
            for p in [p, Hl7Position { segment: None, ..p }] {
                for location in
                    [Location::Hl7(p), Location::Convert(p, "Patient.identifier"), Location::Convert(p, "-")]
                {
                    let mut fast = Vec::new();
                    super::location_json(&location, &mut fast);
                    let mut slow = Vec::new();
                    crate::json::string(&mut slow, &location.to_string());
                    assert_eq!(fast, slow);
                }
            }
        }
        let mut out = Vec::new();
        super::decimal(4_294_967_295, &mut out);
        assert_eq!(out, b"4294967295");
    }

    /// The FHIR invariants decided natively agree with the FHIRPath engine on every element of
    /// the Bundles the converter makes of every HL7 v2 fixture (all three Bundle types).
    #[test]
    fn native_invariants_agree_on_converted_bundles() {
        use crate::convert::{BundleType, Options};
        use crate::formats::hl7v2::{parse, stream};
        let limits = crate::limits::Limits::default();
        let disclosure = crate::phi::Disclosure::grant();
        let mut files = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/hl7v2"))];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("fixtures") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "hl7") {
                    files.push(path);
                }
            }
        }
        let mut docs = Vec::new();
        for path in files {
            let bytes = std::fs::read(&path).expect("read");
            for (kind, range) in stream::split_slice(&bytes) {
                if !matches!(kind, stream::Kind::Message) {
                    continue;
                }
                let Ok(msg) = parse::parse(bytes[range].to_vec(), &limits) else { continue };
                for bundle_type in [BundleType::Message, BundleType::Collection, BundleType::Transaction] {
                    let opts = Options { bundle_type, ..Options::default() };
                    let converted = crate::convert::hl7v2_fhir::convert(&msg, &opts, 1, &limits, &disclosure);
                    if let Ok(doc) = crate::formats::fhir::read(converted.bundle().to_vec(), &limits) {
                        docs.push((path.display().to_string(), doc));
                    }
                }
            }
        }
        assert!(docs.len() > 100, "{}", docs.len());
        let decided = crate::formats::fhir::fhirpath::natives_agree(&docs);
        for key in [
            "dom-2", "dom-3", "dom-4", "dom-5", "dom-6", "ext-1", "bdl-1", "bdl-2", "bdl-3", "bdl-4", "bdl-5", "bdl-7",
            "bdl-8", "bdl-9", "bdl-10", "bdl-11", "bdl-12", "ref-1", "obs-6", "obs-7", "qty-3", "cpt-2",
        ] {
            assert!(decided.get(key).copied().unwrap_or(0) > 0, "{key} never decided natively");
        }
    }
}
