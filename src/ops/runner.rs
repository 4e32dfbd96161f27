//! The one record path: the pieces of an input (records, framing problems, frames) run through
//! one format's codec, its policy engine and its converter, whatever the format. Generic over
//! [`Pipeline`]; the registry's dispatch (`super::dispatch`) picks the type.
//!
//! Multi-record inputs are read one record at a time; memory is bounded by the largest record
//! (times the few batches in flight when records are processed on several threads: `parse`,
//! `validate`, `inspect` and `convert` of an input read whole, see [`super::par`] and
//! [`Runner::flush_converts`]).
//!
//! Before each piece the sink is asked whether its reader has gone (`Sink::cancelled`, an MCP
//! call cancelled by its client): the run then stops there, dropping what waits in a batch.
//!
//! What it does not do: open the input, detect its format (see `super::run`), or write to
//! stdout (the sink does).

use std::io::BufRead;

use crate::phi::Scratch;

use super::json::{self, FINDING_ROOM};
use super::par;
use super::request::{Command, Item, Outcome, Request, Status};
use super::{Failure, excerpt_of};
use crate::convert::Converts;
use crate::diag::{Code, Diagnostic, Location};
use crate::error::exit;
use crate::formats::codec::{Acknowledge, Check, Codec, Detail, Framing, Kind, ModelShape, Piece, Settings, Spill};
use crate::phi::{Disclosure, Phi};
use crate::policy::{self, Redacts};

/// What the pipeline needs of a format: its codec, its policy engine, its converter.
pub trait Pipeline: Codec + Redacts + Converts {}

impl<C: Codec + Redacts + Converts> Pipeline for C {}

/// Messages per thread converted together (bounds memory: the batch's messages and Bundles).
const CONVERT_BATCH_PER_WORKER: usize = 128;

/// A message this large (bytes) is converted alone, with its Bundle written to the sink in
/// parts as it is made (when the sink takes parts and no policy redacts the Bundle): memory
/// then does not grow with the Bundle (see `hl7v2_fhir::convert_after`).
pub(super) const STREAM_CONVERT_AT: usize = 1024 * 1024;

/// True when no finding is an error or fatal.
pub(super) fn is_valid(findings: &[Diagnostic]) -> bool {
    !findings.iter().any(|d| d.severity.is_failure())
}

/// The `--policy` and `redact` settings a codec sees, from the request.
pub(super) fn settings(request: &Request) -> Settings {
    Settings {
        limits: request.limits,
        strict: request.strict,
        ndjson: request.ndjson,
        to: request.to,
        framing: request.framing,
        model: request.model,
        structures: request.structures.clone(),
        fhir: request.fhir.clone(),
        bulk_values: !matches!(request.command, Command::Parse | Command::Validate | Command::Inspect { .. }),
    }
}

/// An input as the pipeline hands it to a codec.
pub(super) enum Input<'a> {
    /// A regular file (a codec may skip bytes of it by seeking).
    File(crate::formats::file_input::FileInput),
    /// Any other input, read through a buffer.
    Stream(Box<dyn BufRead + 'a>),
}

/// Runs every piece of an input through the pipeline of format `C`.
pub(super) fn run<C: Pipeline>(
    request: &Request,
    sink: &mut dyn super::Sink,
    disclosure: Option<&Disclosure>,
    input: Input<'_>,
    first: Option<u8>,
    whole: bool,
) -> Result<Outcome, Failure> {
    let settings = settings(request);
    let (multi, pieces) = match input {
        Input::Stream(input) => C::split(input, first, &settings),
        Input::File(file) => C::split_file(file, first, &settings),
    };
    let mut runner = Runner::<C>::new(request, settings, sink, disclosure, multi);
    runner.whole = whole;
    let result = runner.pieces(pieces);
    // What was read before the end (or a failure) is written; a failure among those records
    // comes first.
    let flushed = runner.flush_pending();
    flushed.and(result)?;
    runner.finish()
}

/// A record's rendering (its JSON is in the caller's buffer).
#[derive(Debug)]
pub(super) struct Rendered {
    /// The findings it lists, for human rendering.
    pub(super) findings: Vec<Diagnostic>,
    /// The verdict (`validate`).
    pub(super) valid: Option<bool>,
}

/// Writes the object of a record for `parse`, `validate` or `inspect` into `out` (with
/// `"record":N` when `record` is given): the one rendering of a record, used by the record path
/// and by the workers of [`super::par`]. `parse` needs the operation's disclosure; `validate`
/// and `inspect` have none; `model` is the model `parse` writes. With `spill`, `parse` hands the
/// object's bytes on in parts as it writes the positional model (see
/// [`Codec::model_json_spilled`]): `out` then holds the rest of the object.
#[expect(clippy::too_many_arguments, reason = "the one rendering of a record: what it is, where, and how")]
pub(super) fn render<C: Codec>(
    command: Command,
    doc: &C::Document,
    findings: Vec<Diagnostic>,
    record: Option<u64>,
    offset: Option<u64>,
    disclosure: Option<&Disclosure>,
    model: ModelShape,
    out: &mut Vec<u8>,
    spill: Option<Spill<'_>>,
) -> Result<Rendered, Code> {
    // Positions and whole locations come from the record, computed only for what is written.
    let positions = if findings.is_empty() || matches!(command, Command::Inspect { .. }) {
        Vec::new()
    } else {
        C::positions(doc, &findings)
    };
    let full = |d: &Diagnostic, out: &mut Vec<u8>| C::full_location(doc, d, out);
    let place =
        json::Placement { format: C::NAME, record, positions: &positions, full: Some(&full), fingerprints: true };
    match command {
        Command::Parse => {
            let disclosure = disclosure.ok_or(Code::CLI_INTERNAL)?;
            match record {
                Some(r) => json::record_prefix_at(r, offset, out),
                None => out.push(b'{'),
            }
            out.extend_from_slice(b"\"format\":");
            crate::json::string(out, C::NAME);
            out.extend_from_slice(b",\"model\":");
            match (model, spill) {
                (ModelShape::Positional, Some(spill)) => C::model_json_spilled(doc, disclosure, out, spill),
                (ModelShape::Positional, None) => C::model_json(doc, disclosure, out),
                (ModelShape::Named, _) => C::named_model_json(doc, disclosure, out),
            }
            out.extend_from_slice(b",\"warnings\":");
            json::findings_json_at(&findings, &place, out);
            out.push(b'}');
            Ok(Rendered { findings, valid: None })
        }
        Command::Validate => {
            let valid = is_valid(&findings);
            let mut object = Vec::with_capacity(256);
            json::verdict_json(C::NAME, valid, &findings, &place, &mut object);
            json::numbered(record, offset, &object, out);
            Ok(Rendered { findings, valid: Some(valid) })
        }
        Command::Inspect { detail } => {
            let mut object = Vec::with_capacity(256);
            match detail {
                Detail::Summary => C::summary(doc, &findings, &mut object)?,
                Detail::Inventory => C::inventory(doc, &findings, true, &mut object)?,
                Detail::Counts => C::inventory(doc, &findings, false, &mut object)?,
            }
            json::numbered(record, offset, &object, out);
            Ok(Rendered { findings: Vec::new(), valid: None })
        }
        // Written by the record path (data with the record's bytes, or nothing).
        Command::Fmt { .. } | Command::Redact | Command::Convert | Command::Ack(_) => Err(Code::CLI_INTERNAL),
    }
}

/// Which findings a command reports.
pub(super) fn check_for(command: Command) -> Check {
    match command {
        Command::Parse | Command::Fmt { .. } => Check::Syntax,
        _ => Check::Full,
    }
}

/// A message waiting to be converted, with its record number.
struct ConvertJob<D> {
    doc: D,
    record: u64,
    /// Its Bundle goes to the sink in parts (see [`STREAM_CONVERT_AT`]).
    stream: bool,
}

/// The output of the open frame (`fmt` and `redact` write a framed stream framed).
struct Frame {
    framing: Framing,
    out: Scratch,
    /// Where its content starts in `out` (after the start bytes, when written).
    content: usize,
}

struct Runner<'r, C: Pipeline> {
    request: &'r Request,
    settings: Settings,
    redactor: Option<C::Redactor<'r>>,
    sink: &'r mut dyn super::Sink,
    /// Granted only to the commands that return data (see [`Command::discloses`]).
    disclosure: Option<&'r Disclosure>,
    /// Records seen.
    records: u64,
    /// Several records (known before the first is processed, by reading one piece ahead).
    multi: bool,
    /// The input is read whole (a file, not a pipe): its records may be spread over cores.
    whole: bool,
    stream: C::Stream,
    any_failed_record: bool,
    /// The failed records and their codes.
    failed: super::Records,
    any_invalid: bool,
    output_failed: bool,
    /// Messages read and waiting to be converted (`convert`): converted together, on all
    /// cores, and written in input order (see [`Runner::flush_converts`]).
    pending: Vec<ConvertJob<C::Document>>,
    /// How many messages may wait: 1 (none waits) for standard input, whose records are
    /// written as they come.
    batch: usize,
    /// Worker threads for a batch.
    workers: usize,
    /// `parse`, `validate`, `inspect` of a multi-record input read whole: records processed in
    /// batches on several threads (see [`par`]).
    par: Option<par::Batcher<C>>,
    frame: Option<Frame>,
    /// `ack`: the format's acknowledgment writer.
    acker: Option<Box<dyn Acknowledge<C>>>,
}

impl<'r, C: Pipeline> Runner<'r, C> {
    fn new(
        request: &'r Request,
        settings: Settings,
        sink: &'r mut dyn super::Sink,
        disclosure: Option<&'r Disclosure>,
        multi: bool,
    ) -> Self {
        let key = request.key.as_deref();
        Runner {
            request,
            settings,
            redactor: request.redaction().map(|p| C::redactor(p, key)),
            sink,
            disclosure,
            records: 0,
            multi,
            whole: false,
            stream: C::Stream::default(),
            any_failed_record: false,
            failed: super::Records::default(),
            any_invalid: false,
            output_failed: false,
            pending: Vec::new(),
            batch: 1,
            workers: 1,
            par: None,
            frame: None,
            acker: match request.command {
                Command::Ack(ack) => C::acknowledger(ack),
                _ => None,
            },
        }
    }

    /// Lets records be processed several at a time on all cores when the input is read whole
    /// (`whole`) and holds several records: `convert` (see [`Runner::flush_converts`]), and
    /// `parse`, `validate` and `inspect` without a redacting policy (see [`par`]).
    fn parallel(&mut self) {
        if !self.whole {
            return;
        }
        // Asked once per process: the answer reads several files under /proc and /sys, which
        // a run over many small files (batch mode) would otherwise pay for each file.
        static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let workers = cores.min(par::MAX_WORKERS);
        if workers <= 1 {
            return;
        }
        match self.request.command {
            Command::Convert => {
                self.workers = workers;
                self.batch = workers * CONVERT_BATCH_PER_WORKER;
            }
            Command::Parse | Command::Validate | Command::Inspect { .. } if self.request.redaction().is_none() => {
                let work = par::Work { command: self.request.command, settings: self.settings.clone() };
                let grant = self.request.command.discloses().then_some(super::grant_worker as fn() -> Disclosure);
                self.par = Some(par::Batcher::new(work, workers, grant));
            }
            _ => {}
        }
    }

    /// `Some(check)` for `fmt`, `Some(false)` for `redact` (both write the records' bytes).
    fn fmt_mode(&self) -> Option<bool> {
        match self.request.command {
            Command::Fmt { check } => Some(check),
            Command::Redact => Some(false),
            _ => None,
        }
    }

    /// True when values pass through a policy before they leave.
    fn redacting(&self) -> bool {
        self.redactor.is_some()
    }

    /// The operation's disclosure, for the steps that write values (`fmt`, `redact`, `convert`,
    /// a record passed through): granted to every command that reaches them.
    fn granted(&self) -> Result<&'r Disclosure, Failure> {
        self.disclosure.ok_or(Failure::code(Code::CLI_INTERNAL))
    }

    /// Runs every piece.
    fn pieces(&mut self, pieces: crate::formats::codec::Pieces<'_, C::Envelope>) -> Result<(), Failure> {
        let mut pieces = pieces.peekable();
        let mut first = true;
        while let Some(piece) = pieces.next() {
            if self.sink.cancelled() {
                return Err(self.cancel());
            }
            let piece = piece.map_err(|e| Failure::from(crate::error::from_read_io(&e)))?;
            if first {
                first = false;
                let envelope = matches!(piece, Piece::Record { kind: Kind::Envelope(_), .. });
                self.multi = self.multi || envelope || pieces.peek().is_some();
                // Only several records can be spread over cores: a single record (a 1 KB
                // message) never pays for asking how many there are.
                if self.multi {
                    self.parallel();
                }
            }
            match piece {
                Piece::Fail(code) => return Err(Failure::code(code)),
                Piece::Problem { code, offset, label } => {
                    self.records += 1;
                    let cause = Diagnostic::new(code, Location::Offset(offset));
                    self.failed_record(code, cause, None, label, Some(offset), &mut Vec::new())?;
                }
                Piece::FrameStart(framing) => {
                    let mut out = Scratch::default();
                    if self.fmt_mode() == Some(false) {
                        out.extend_from_slice(framing.wrap().0);
                    }
                    let content = out.len();
                    self.frame = Some(Frame { framing, out, content });
                }
                Piece::FrameEnd { clean } => {
                    if !clean && self.fmt_mode() == Some(true) {
                        self.any_invalid = true;
                    }
                    if let Some(mut frame) = self.frame.take() {
                        if self.fmt_mode() == Some(false) {
                            if frame.out.len() == frame.content {
                                frame.out.clear();
                            } else {
                                frame.out.extend_from_slice(frame.framing.wrap().1);
                            }
                        }
                        if !frame.out.is_empty() {
                            self.emit_bytes(&frame.out);
                        }
                    }
                }
                Piece::Record { kind, offset, bytes } => {
                    // A record of a frame writes into the frame's output; another into its own.
                    let mut frame = self.frame.take();
                    let mut own = crate::phi::Scratch::default();
                    let out: &mut Vec<u8> = match frame.as_mut() {
                        Some(f) => &mut f.out,
                        None => &mut own,
                    };
                    let result = self.record(kind, offset, bytes, out);
                    self.frame = frame;
                    result?;
                    if !own.is_empty() {
                        self.emit_bytes(&own);
                    }
                }
            }
        }
        Ok(())
    }

    /// Processes one record. `fmt` and `redact` output is appended to `out`.
    fn record(
        &mut self,
        kind: Kind<C::Envelope>,
        offset: u64,
        bytes: Option<Vec<u8>>,
        out: &mut Vec<u8>,
    ) -> Result<(), Failure> {
        self.records += 1;
        if self.records > self.request.limits.max_records {
            return Err(Failure::code(Code::CLI_INPUT_TOO_LARGE));
        }
        let Some(bytes) = bytes else {
            let cause = Diagnostic::new(Code::CLI_INPUT_TOO_LARGE, Location::Offset(offset));
            return self.failed_record(Code::CLI_INPUT_TOO_LARGE, cause, None, C::NAME, Some(offset), out);
        };
        if matches!(kind, Kind::Message) {
            C::on_message(&mut self.stream);
        }
        if self.par.is_some() && self.multi && matches!(kind, Kind::Message) {
            return self.queue(par::Job::Message { bytes, offset, record: self.records });
        }
        // An envelope record of a batched stream is read here, in order; its object is queued
        // behind the records before it (see `par`).
        let size = bytes.len();
        // A copy of the bytes for the operator's excerpt, or for `fmt` to pass a record that
        // fails through (codecs that keep their input give it back anyway).
        let keep =
            self.request.unsafe_show_values || (self.multi && self.fmt_mode() == Some(false) && !self.redacting());
        let mut doc = match C::read(bytes, offset, kind, &self.stream, &self.settings, keep) {
            Ok(d) => d,
            Err(fatal) => {
                let mut stream_findings = Vec::new();
                if let Kind::Envelope(e) = kind {
                    stream_findings = C::on_envelope(&mut self.stream, e, None);
                    self.any_invalid |= !stream_findings.is_empty();
                }
                if let Some(acker) = self.acker.as_mut().filter(|_| self.multi) {
                    // The acknowledgment reports the record as rejected.
                    let disclosure = self.disclosure.ok_or(Failure::code(Code::CLI_INTERNAL))?;
                    stream_findings.insert(0, fatal.cause);
                    acker.record(kind, None, &stream_findings, disclosure, out);
                    // A failed record as for `validate` (stderr, exit 65).
                    self.any_failed_record = true;
                    self.failed.fail(Code::CLI_PARSE_FAILED);
                    return Ok(());
                }
                let code = if fatal.cause.code == Code::CLI_INPUT_TOO_LARGE {
                    Code::CLI_INPUT_TOO_LARGE
                } else {
                    Code::CLI_PARSE_FAILED
                };
                return self.failed_record(code, fatal.cause, fatal.bytes, C::NAME, Some(offset), out);
            }
        };
        if self.redactor.is_some() {
            let disclosure = self.granted()?;
            let Some(r) = self.redactor.as_mut() else { return Err(Failure::code(Code::CLI_INTERNAL)) };
            if self.request.command == Command::Redact {
                if let Kind::Envelope(e) = kind {
                    C::on_envelope(&mut self.stream, e, Some(&doc));
                }
                let start = out.len();
                C::redact(r, &doc, &self.settings, disclosure, out);
                if out.len() == start && !self.multi {
                    // Nothing written for the one record of the input (a DICOM file whose bulk
                    // data was not kept, or refused for burned-in text): a failure, never an
                    // empty success.
                    let code = C::refused(r).unwrap_or(Code::CLI_INPUT_TOO_LARGE);
                    return self.unwritten(code, offset, out);
                }
                return Ok(());
            }
            // Data is redacted before anything else reads it: the record is read again from
            // its redacted bytes.
            let mut red = Vec::new();
            C::redact(r, &doc, &self.settings, disclosure, &mut red);
            doc = match C::read(red, offset, kind, &self.stream, &self.settings, false) {
                Ok(d) => d,
                Err(fatal) => {
                    return self.failed_record(Code::CLI_PARSE_FAILED, fatal.cause, None, C::NAME, Some(offset), out);
                }
            };
        }
        let command = self.request.command;
        if command == Command::Convert {
            if let Kind::Envelope(e) = kind {
                // Batch envelopes carry no patient data to convert.
                C::on_envelope(&mut self.stream, e, Some(&doc));
                return Ok(());
            }
            let stream = size >= STREAM_CONVERT_AT && self.request.redaction().is_none() && self.sink.takes_parts();
            if stream {
                // Converted alone, after the messages before it.
                self.flush_converts()?;
            }
            self.pending.push(ConvertJob { doc, record: self.records, stream });
            if stream || self.pending.len() >= self.batch {
                self.flush_converts()?;
            }
            return Ok(());
        }
        let mut findings = C::findings(&doc, kind, check_for(command), &self.settings);
        if let Kind::Envelope(e) = kind {
            findings.extend(C::on_envelope(&mut self.stream, e, Some(&doc)));
            findings.truncate(C::MAX_FINDINGS);
        }
        match command {
            Command::Parse | Command::Validate | Command::Inspect { .. } => {
                let record = self.multi.then_some(self.records);
                // A record read in part (a DICOM file broken mid-way) is a negative result.
                let partial = C::partial(&doc);
                let mut json = Scratch::with_capacity(256);
                // A large record's model goes to the sink in parts as it is written (as a large
                // message's Bundle does, see `STREAM_CONVERT_AT`), when the sink takes parts and
                // nothing is queued before it.
                let spilled = command == Command::Parse
                    && size >= STREAM_CONVERT_AT
                    && self.request.redaction().is_none()
                    && !(self.par.is_some() && self.multi)
                    && self.sink.takes_parts();
                let sink = &mut *self.sink;
                let mut failed = false;
                let mut spill = |bytes: &[u8]| failed |= sink.part(bytes).is_err();
                let rendered = render::<C>(
                    command,
                    &doc,
                    findings,
                    record,
                    Some(offset),
                    self.disclosure,
                    self.settings.model,
                    &mut json,
                    if spilled { Some(&mut spill) } else { None },
                );
                self.output_failed |= failed;
                let rendered = rendered.map_err(Failure::code)?;
                if self.par.is_some() && self.multi {
                    let job = par::Job::Rendered {
                        record: self.records,
                        json,
                        findings: rendered.findings,
                        valid: rendered.valid,
                    };
                    return self.queue(job);
                }
                if rendered.valid == Some(false) || partial {
                    self.any_invalid = true;
                }
                self.emit(&json, &rendered.findings, rendered.valid, None);
            }
            Command::Fmt { check } => {
                let disclosure = self.granted()?;
                let start = out.len();
                C::canonical(&doc, &self.settings, disclosure, out);
                if !check && out.len() == start && !self.multi {
                    return self.unwritten(Code::CLI_INPUT_TOO_LARGE, offset, out);
                }
                if check {
                    let canonical = C::is_canonical(&doc, &out[start..], &self.settings, disclosure);
                    out.truncate(start);
                    if !canonical {
                        self.any_invalid = true;
                        let mut json = Vec::new();
                        json.extend_from_slice(b"{\"format\":");
                        crate::json::string(&mut json, C::NAME);
                        json.extend_from_slice(b",\"canonical\":false}");
                        self.emit_numbered(&json, Some(offset), &[], Some(false), None);
                    }
                }
            }
            Command::Ack(_) => {
                if !is_valid(&findings) {
                    self.any_invalid = true;
                }
                let disclosure = self.granted()?;
                let Some(acker) = self.acker.as_mut() else { return Err(Failure::code(Code::CLI_INTERNAL)) };
                acker.record(kind, Some(&doc), &findings, disclosure, out);
            }
            // Handled above.
            Command::Redact | Command::Convert => {}
        }
        Ok(())
    }

    /// A record that could not be read (or a framing problem, labelled by `label`). In a
    /// single-record input the command fails (no data). In a stream the record is reported
    /// and the others go on; `fmt` passes the record's bytes through unchanged so that nothing
    /// is lost.
    #[expect(
        clippy::disallowed_methods,
        reason = "ops: grants the disclosure, reads in-memory input, passes records through on the data channel"
    )]
    fn failed_record(
        &mut self,
        code: Code,
        cause: Diagnostic,
        bytes: Option<Phi<Vec<u8>>>,
        label: &'static str,
        offset: Option<u64>,
        out: &mut Vec<u8>,
    ) -> Result<(), Failure> {
        // Records waiting in a batch come first.
        self.flush_pending()?;
        if !self.multi {
            let at = match cause.location {
                Location::Offset(o) => usize::try_from(o).unwrap_or(usize::MAX),
                _ => 0,
            };
            let excerpt = bytes.as_ref().and_then(|b| excerpt_of(self.request.unsafe_show_values, b.span().raw(), at));
            return Err(Failure { code, cause: Some(cause), excerpt, detected: None });
        }
        self.any_failed_record = true;
        self.failed.fail(code);
        if self.acker.is_some() {
            // Bytes outside any envelope the acknowledgment answers: counted (stderr and exit
            // code), never written into the acknowledgment.
            return Ok(());
        }
        if self.fmt_mode() == Some(false) {
            if let Some(r) = self.redactor.as_mut() {
                // Under a policy a record that does not parse cannot be redacted: it is left out.
                C::counts(r).fail_closed += 1;
                return Ok(());
            }
            if let Some(b) = &bytes {
                out.extend_from_slice(b.expose_value(self.granted()?));
                out.extend_from_slice(C::PASS_THROUGH_END);
            }
            return Ok(());
        }
        let mut json = Vec::new();
        json::failed_json(None, label, code, offset, Some(cause.code), &mut json);
        self.emit_numbered(&json, None, &[], Some(false), Some(code));
        Ok(())
    }

    /// The one record of the input was read but its data could not be written (a codec that
    /// did not keep all of a record, such as DICOM bulk data past its budget, writes nothing):
    /// the command fails with `CLI_INPUT_TOO_LARGE` rather than succeed with no data.
    fn unwritten(&mut self, code: Code, offset: u64, out: &mut Vec<u8>) -> Result<(), Failure> {
        let cause = Diagnostic::new(code, Location::Offset(offset));
        self.failed_record(code, cause, None, C::NAME, Some(offset), out)
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
            if let Some(written) = self.sink.json_lines(&batch.lines) {
                for out in &batch.outs {
                    if let par::Out::Json { invalid, failed, error, .. } = out {
                        self.any_invalid |= invalid;
                        self.any_failed_record |= failed;
                        if let (true, Some(code)) = (*failed, error) {
                            self.failed.fail(*code);
                        }
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
                    if let (true, Some(code)) = (failed, error) {
                        self.failed.fail(code);
                    }
                    let json = batch.lines.get(json).unwrap_or_default();
                    let item = Item::Json { record: Some(record), json, findings: &findings, valid, error };
                    if self.sink.item(item).is_err() {
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

    /// The sink's reader has gone ([`super::Sink::cancelled`]): records waiting in a batch are
    /// dropped unwritten, and the run fails as for output that could not be written.
    fn cancel(&mut self) -> Failure {
        if let Some(b) = self.par.as_mut() {
            b.abandon();
        }
        self.pending.clear();
        Failure::code(Code::CLI_OUTPUT_FAILED)
    }

    /// Writes every record waiting in a batch (`parse`, `validate`, `inspect`, `convert`):
    /// called before any other output, and at the end of the input.
    fn flush_pending(&mut self) -> Result<(), Failure> {
        if self.sink.cancelled() {
            return Err(self.cancel());
        }
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
        let disclosure = self.granted()?;
        // Without a redacting policy the Bundle is written as it is: the converter writes it
        // after the start of its record, and `write_converted` appends the rest (no copy).
        let multi = self.multi;
        let in_place = request.redaction().is_none();
        let convert = |job: &ConvertJob<C::Document>| {
            let mut prefix = Vec::new();
            if in_place {
                json::converted_record_prefix(multi, job.record, &mut prefix);
            }
            C::convert(&job.doc, &prefix, FINDING_ROOM, &request.convert, job.record, &request.limits, disclosure, None)
        };
        let records = self.records;
        let mut outcome = Ok(());
        if jobs.len() == 1 || self.workers <= 1 {
            for job in &jobs {
                if self.sink.cancelled() {
                    outcome = Err(Failure::code(Code::CLI_OUTPUT_FAILED));
                    break;
                }
                self.records = job.record;
                let converted = if job.stream {
                    // The record's object goes to the sink as the Bundle is written.
                    let mut prefix = Vec::new();
                    json::converted_record_prefix(multi, job.record, &mut prefix);
                    let sink = &mut *self.sink;
                    let mut failed = false;
                    let mut spill = |bytes: &[u8]| failed |= sink.part(bytes).is_err();
                    let converted = C::convert(
                        &job.doc,
                        &prefix,
                        FINDING_ROOM,
                        &request.convert,
                        job.record,
                        &request.limits,
                        disclosure,
                        Some(&mut spill),
                    );
                    self.output_failed |= failed;
                    converted
                } else {
                    convert(job)
                };
                outcome = self.write_converted(converted);
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
        let mut slots: Vec<Option<Result<crate::convert::Converted, Code>>> = jobs.iter().map(|_| None).collect();
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
                if outcome.is_ok() && self.sink.cancelled() {
                    outcome = Err(Failure::code(Code::CLI_OUTPUT_FAILED));
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
    fn write_converted(&mut self, converted: Result<crate::convert::Converted, Code>) -> Result<(), Failure> {
        let mut converted = converted.map_err(Failure::code)?;
        if converted.start > 0 || converted.spilled {
            // The Bundle follows the start of its record (no redacting policy): the object is
            // completed in its buffer, which `converted` wipes when dropped (after a spill, the
            // buffer holds the rest of the object: the sink has the start).
            let valid = is_valid(&converted.findings);
            self.any_invalid |= !valid;
            let json = &mut converted.out;
            json.reserve(16 + FINDING_ROOM * converted.findings.len());
            json.extend_from_slice(b",\"findings\":");
            json::findings_json(&converted.findings, json);
            json.push(b'}');
            self.emit(&converted.out, &converted.findings, None, None);
            return Ok(());
        }
        // Under a redacting policy the message was redacted by its own rules; the Bundle is
        // then redacted by the FHIR rules (ids, fullUrls and references rewritten
        // consistently). A Bundle that cannot be redacted is not released.
        let disclosure = self.granted()?;
        let mut bundle = match super::enforce_fhir_json(self.request, std::mem::take(&mut converted.out), disclosure) {
            Ok(b) => b,
            Err(code) => {
                let at = Location::Record(u32::try_from(self.records).unwrap_or(u32::MAX));
                return self.failed_record(code, Diagnostic::new(code, at), None, "fhir", None, &mut Vec::new());
            }
        };
        let valid = is_valid(&converted.findings);
        self.any_invalid |= !valid;
        // The object is written complete (with `record` in a multi-record input), without
        // copying the Bundle a second time.
        let mut json = Vec::with_capacity(bundle.len() + 128 + 160 * converted.findings.len());
        json::converted_record_prefix(self.multi, self.records, &mut json);
        // The redactor ends its document with a newline (a file's last line); inside the
        // record's object it would split the JSON line.
        json.extend_from_slice(bundle.trim_ascii_end());
        crate::phi::wipe(&mut bundle);
        json.extend_from_slice(b",\"findings\":");
        json::findings_json(&converted.findings, &mut json);
        json.push(b'}');
        self.emit(&json, &converted.findings, None, None);
        crate::phi::wipe(&mut json);
        Ok(())
    }

    /// Emits an object that already starts with its record's prefix.
    fn emit(&mut self, json: &[u8], findings: &[Diagnostic], valid: Option<bool>, error: Option<Code>) {
        let record = self.multi.then_some(self.records);
        let item = Item::Json { record, json, findings, valid, error };
        if self.sink.item(item).is_err() {
            self.output_failed = true;
        }
    }

    /// Emits an object `{...}` written without its record's prefix.
    /// `offset`: the record's byte offset in the input, when it is not in `object` already.
    fn emit_numbered(
        &mut self,
        object: &[u8],
        offset: Option<u64>,
        findings: &[Diagnostic],
        valid: Option<bool>,
        error: Option<Code>,
    ) {
        let mut json = Vec::with_capacity(object.len() + 32);
        json::numbered(self.multi.then_some(self.records), offset, object, &mut json);
        self.emit(&json, findings, valid, error);
    }

    fn emit_bytes(&mut self, bytes: &[u8]) {
        if self.sink.item(Item::Bytes(bytes)).is_err() {
            self.output_failed = true;
        }
    }

    fn finish(mut self) -> Result<Outcome, Failure> {
        let end = C::finish(&mut self.stream);
        if let Some(mut acker) = self.acker.take() {
            let disclosure = self.granted()?;
            let mut out = Scratch::default();
            acker.finish(&end, disclosure, &mut out);
            self.any_invalid |= !end.is_empty();
            if !out.is_empty() {
                self.emit_bytes(&out);
            }
        }
        if !end.is_empty() && self.request.command == Command::Validate {
            self.any_invalid = true;
            self.records += 1;
            let mut json = Vec::new();
            json::verdict_json(C::NAME, false, &end, &json::Placement::plain(C::NAME), &mut json);
            self.emit_numbered(&json, None, &end, Some(false), None);
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
        let burned_in_accepted = self.redactor.as_mut().map_or(0, |r| C::counts(r).burned_in_accepted);
        let manifest = match (self.request.command, self.request.policy.as_deref()) {
            (Command::Redact, Some(p)) if self.sink.reads_manifest() => {
                let mut counts = policy::manifest::Counts::new(p);
                if let Some(r) = self.redactor.as_mut() {
                    counts.add(C::counts(r));
                }
                Some(policy::manifest::json(p, &counts, self.request.key.is_some()))
            }
            _ => None,
        };
        let mut records = self.failed;
        records.seen = self.records;
        Ok(Outcome {
            exit,
            status,
            code: None,
            cause: None,
            excerpt: None,
            multi: self.multi,
            manifest,
            records,
            detected: None,
            burned_in_accepted,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::io::BufRead;

    use crate::formats::codec::{Check, Codec, Kind, Piece, Settings};
    use crate::formats::dicom::Dicom;
    use crate::formats::file_input::FileInput;
    use crate::phi::Disclosure;

    fn settings(bulk_values: bool) -> Settings {
        Settings::plain(bulk_values)
    }

    /// How an input reaches the splitter.
    #[derive(Copy, Clone, Debug)]
    enum Via {
        /// A stream read through.
        Stream,
        /// A regular file whose first bytes (this many) were read ahead, as `ops` reads the
        /// detection prefix: skipped bytes are sought past.
        File(usize),
    }

    /// What `parse`, `validate` and `inspect` write of one DICOM input, and the record.
    #[expect(clippy::disallowed_methods, reason = "ops: grants the disclosure `parse` has")]
    fn outputs(bytes: &[u8], bulk_values: bool, via: Via) -> (Vec<u8>, Vec<u8>) {
        let settings = settings(bulk_values);
        let (_, mut pieces) = match via {
            Via::Stream => {
                let input: Box<dyn BufRead> = Box::new(std::io::Cursor::new(bytes.to_vec()));
                Dicom::split(input, None, &settings)
            }
            Via::File(ahead) => {
                let ahead = ahead.min(bytes.len());
                let mut file = std::io::Cursor::new(bytes.to_vec());
                file.set_position(ahead as u64);
                let input = FileInput::new(bytes[..ahead].to_vec(), file, bytes.len() as u64);
                Dicom::split_file(input, None, &settings)
            }
        };
        let Some(Ok(Piece::Record { bytes: Some(record), .. })) = pieces.next() else {
            return (b"no record".to_vec(), Vec::new());
        };
        let kept = record.clone();
        let mut out = Vec::new();
        // Read in part when broken, both ways (`fmt` and `redact` refuse a broken file; the
        // elements before the break must be the same whichever bulk values the record kept).
        match crate::formats::dicom::read::read_partial(record, &settings.limits, true) {
            Err(fatal) => out.extend_from_slice(format!("{:?}", fatal.cause).as_bytes()),
            Ok(doc) => {
                for check in [Check::Syntax, Check::Full] {
                    let findings = Dicom::findings(&doc, Kind::Message, check, &settings);
                    out.extend_from_slice(format!("{findings:?}\n").as_bytes());
                    Dicom::inventory(&doc, &findings, true, &mut out).expect("inventory");
                }
                Dicom::model_json(&doc, &Disclosure::grant(), &mut out);
            }
        }
        (out, kept)
    }

    /// Every DICOM fixture gives the same findings (codes, tag paths, offsets), inspect summary
    /// and parse model whether the record keeps its bulk values (`fmt`, `redact`) or leaves them
    /// all out (`parse`, `validate`, `inspect`); a file with pixel data makes a smaller record.
    /// A regular file, whose skipped bulk values are sought past, makes the same record as the
    /// stream, wherever the read-ahead ends and wherever the file is cut short.
    #[test]
    fn structure_only_records_leave_bulk_values_out_with_the_same_output() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dicom");
        let mut files = Vec::new();
        for dir in ["valid", "invalid", "markers"] {
            for entry in std::fs::read_dir(root.join(dir)).expect("fixture folder") {
                files.push(entry.expect("entry").path());
            }
        }
        files.sort();
        assert!(files.len() > 30, "the fixtures are there");
        let aheads = [0, 1, 131, 132, 133, 300, 1000, 4096, crate::detect::PREFIX_LEN];
        let mut smaller = 0;
        for file in &files {
            let bytes = std::fs::read(file).expect("fixture");
            let (full, full_record) = outputs(&bytes, true, Via::Stream);
            let (bare, bare_record) = outputs(&bytes, false, Via::Stream);
            assert!(full == bare, "outputs differ: {}", file.display());
            assert!(bare_record.len() <= full_record.len(), "record grew: {}", file.display());
            smaller += usize::from(bare_record.len() < full_record.len());
            for ahead in aheads {
                for bulk in [false, true] {
                    let (out, record) = outputs(&bytes, bulk, Via::File(ahead));
                    let same = &record == if bulk { &full_record } else { &bare_record };
                    assert!(out == full && same, "file read ahead {ahead} differs: {}", file.display());
                }
            }
            // Cut short anywhere (in a bulk value too): the same fatal finding at the same place,
            // and the same elements read before it.
            for cut in (1..8).map(|k| bytes.len() * k / 8).chain([bytes.len().saturating_sub(1)]) {
                let part = &bytes[..cut];
                let (stream, stream_record) = outputs(part, false, Via::Stream);
                assert!(outputs(part, true, Via::Stream).0 == stream, "cut {cut} differs: {}", file.display());
                for ahead in aheads {
                    let (out, record) = outputs(part, false, Via::File(ahead));
                    assert!(
                        out == stream && record == stream_record,
                        "cut {cut} read ahead {ahead} differs: {}",
                        file.display()
                    );
                }
            }
        }
        assert!(smaller > 5, "bulk values left out of {smaller} records");
    }
}
