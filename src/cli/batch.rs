//! Batch mode of `validate` and `inspect`: many files and directories in one run (the CI gate).
//!
//! The paths are expanded (directories walked in parallel with the `ignore` crate: .gitignore,
//! .ignore and .phiwardignore honoured, `--include`/`--exclude` globs), sorted and
//! deduplicated; each file goes through `ops::run` on its own, on `--jobs` threads, into a
//! capturing sink, and becomes one [`FileResult`], which the same thread turns into its pieces
//! of every report ([`report::piece`]) and its counts. The results are written in path order,
//! each as soon as every file before it is done ([`super::ordered::map`]: a bounded reorder
//! window), then dropped: memory does not grow with the number of files, only the sorted list
//! of paths does (and, with `--write-baseline`, the baseline; with a SARIF or JUnit report, its
//! held findings or testcases). A file that cannot be read, detected or parsed is a result like
//! the others (never the end of the run).
//!
//! What it does not do: render (`report` does) or print anywhere but through `output`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use super::args::{BatchArgs, FailOn, InputArgs, ReportFormat};
use super::report;
use crate::diag::Code;
use crate::error::exit;
use crate::ops::{self, Command, Item, Request, Sink, Source};

/// What became of a file.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Read; no record invalid (`inspect`: read).
    Valid,
    /// A record is invalid or failed.
    Invalid,
    /// Its format was not recognised, or the command does not take it.
    Unsupported,
    /// It could not be read or parsed.
    Failed,
}

impl Status {
    /// The stable lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Valid => "valid",
            Status::Invalid => "invalid",
            Status::Unsupported => "unsupported",
            Status::Failed => "failed",
        }
    }
}

/// A value-free finding of a file.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The record (multi-record inputs).
    pub record: Option<u64>,
    /// The diagnostic code.
    pub code: String,
    /// `fatal`, `error`, `warning` or `information`.
    pub severity: String,
    /// The structural location (`PID-5`), or `-`.
    pub location: String,
    /// 1-based line, when placed.
    pub line: Option<u64>,
    /// 1-based column, when placed.
    pub column: Option<u64>,
    /// The stable fingerprint (the baseline's key with the path).
    pub fingerprint: String,
    /// A failed record's byte offset in the input (0-based).
    pub offset: Option<u64>,
    /// A failure's kind, for machines: `unsupported`, `undetected` (a file whose format is not
    /// built in, or not recognised), `unparseable`, `too_large`, `framing`, `failed`.
    pub kind: Option<&'static str>,
    /// The code of the fatal finding behind a failure, when it is not the failure's own code.
    pub cause: Option<String>,
    /// Known from `--baseline`: reported, never failing.
    pub baselined: bool,
}

/// One file's result.
#[derive(Debug)]
pub struct FileResult {
    /// The path as the operator gave it (or its hash under `--redact-paths`).
    pub path: String,
    /// The format read.
    pub format: Option<String>,
    /// The file's status.
    pub status: Status,
    /// Records read.
    pub records: u64,
    /// The records' value-free objects (`inspect` summaries, `validate` verdicts).
    pub objects: Vec<Value>,
    /// Findings (a failure is one finding with the failure's code).
    pub findings: Vec<Finding>,
    /// The process exit code the file alone would have had.
    pub exit: u8,
    /// The file fails the run (a new finding at or above `--fail-on`, or a new failure).
    pub fails: bool,
    /// The keyed digest of the file's bytes (`--audit-key-file` only).
    pub digest: Option<String>,
}

/// The totals of a batch run: counts over its files, never the files themselves (each file's
/// result is rendered and dropped as it comes).
#[derive(Debug, Default)]
pub struct Run {
    /// Files.
    pub files: usize,
    /// Records over all files.
    pub records: u64,
    /// Files by status: valid, invalid, unsupported, failed.
    by_status: [usize; 4],
    /// New findings (not baselined).
    pub findings: usize,
    /// Baselined findings.
    pub baselined: usize,
    /// Failing files that were read (JUnit failures).
    pub failures: usize,
    /// Failing files that failed (JUnit errors).
    pub errors: usize,
    /// Baseline entries not found again (fixed findings): `(path, code, location)`.
    pub fixed: Vec<(String, String, String)>,
    /// Milliseconds taken.
    pub millis: u128,
    /// The run's exit code.
    pub exit: u8,
}

impl Run {
    /// Files with `status`.
    pub fn count(&self, status: Status) -> usize {
        self.by_status[status as usize]
    }

    /// Adds one file's counts.
    fn add(&mut self, d: &Done) {
        self.files += 1;
        self.records += d.records;
        self.by_status[d.status as usize] += 1;
        self.findings += d.findings;
        self.baselined += d.baselined;
        if d.exit != exit::OK {
            if d.status == Status::Failed {
                self.errors += 1;
            } else {
                self.failures += 1;
            }
        }
        if rank(d.exit) > rank(self.exit) {
            self.exit = d.exit;
        }
    }
}

/// What a worker hands on for one file: its counts and its rendered report pieces. The file's
/// full result is dropped on the worker.
#[derive(Debug)]
struct Done {
    status: Status,
    records: u64,
    /// New findings.
    findings: usize,
    baselined: usize,
    /// What the file contributes to the run's exit code.
    exit: u8,
    format: Option<String>,
    /// The codes of its findings.
    codes: Vec<String>,
    digest: Option<String>,
    /// The baseline keys it matched (`--baseline`).
    matched: Vec<(String, String)>,
    /// Its baseline entries (`--write-baseline`).
    entries: Option<super::baseline::Entries>,
    /// One piece per report, in the order of `sinks`.
    pieces: Vec<report::Piece>,
}

/// How many results batch mode computes ahead of the one it writes, per job: the reorder
/// window that bounds its memory (`ordered::map`).
pub const WINDOW_PER_JOB: usize = 8;

/// Where a report goes: standard output, a file written as the run goes, or, for a report
/// file that exists and may be one of the inputs, memory written to the file at the end (so
/// the file is read as it was before the run, as when every report was written at the end; a
/// file that does not exist yet cannot be one: the walk is over when reports are created).
enum Out {
    Stdout(std::io::BufWriter<super::output::RawStdout>),
    File(std::io::BufWriter<std::fs::File>),
    Later(Vec<u8>, PathBuf),
}

impl std::io::Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Out::Stdout(w) => w.write(buf),
            Out::File(w) => w.write(buf),
            Out::Later(v, _) => v.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Out::Stdout(w) => w.flush(),
            Out::File(w) => w.flush(),
            Out::Later(..) => Ok(()),
        }
    }
}

/// A report being written, and whether writing it failed (it is then left alone).
struct ReportSink {
    report: Option<report::Report<Out>>,
    failed: bool,
}

impl ReportSink {
    fn push(&mut self, piece: report::Piece) {
        if let Some(r) = &mut self.report {
            if r.push(piece).is_err() {
                self.report = None;
                self.failed = true;
            }
        }
    }

    /// Finishes the report; false when any of it could not be written.
    fn finish(self, run: &Run) -> bool {
        let Some(r) = self.report else { return !self.failed };
        match r.finish(run) {
            Ok(Out::Later(bytes, path)) => std::fs::write(path, bytes).is_ok(),
            Ok(_) => true,
            Err(_) => false,
        }
    }
}

/// One captured record: its number, verdict, failure code and JSON object.
type Captured = (Option<u64>, Option<bool>, Option<Code>, Vec<u8>);

/// Captures the records of one file.
#[derive(Default)]
struct Capture {
    objects: Vec<Captured>,
}

impl Sink for Capture {
    fn item(&mut self, item: Item<'_>) -> std::io::Result<()> {
        if let Item::Json { record, json, valid, error, .. } = item {
            self.objects.push((record, valid, error, json.to_vec()));
        }
        Ok(())
    }
}

/// A path to process, or a failure found while walking.
#[derive(Debug)]
pub(super) enum Entry {
    File(PathBuf),
    Stdin,
    Failed(PathBuf, Code),
}

impl Entry {
    /// What orders two entries of the same key: a file before a failure, then the path's bytes.
    fn tie(&self) -> (u8, Vec<u8>) {
        match self {
            Entry::Stdin => (0, Vec::new()),
            Entry::File(p) => (1, p.as_os_str().as_encoded_bytes().to_vec()),
            Entry::Failed(p, _) => (2, p.as_os_str().as_encoded_bytes().to_vec()),
        }
    }

    fn key(&self) -> String {
        match self {
            Entry::File(p) | Entry::Failed(p, _) => p.to_string_lossy().into_owned(),
            Entry::Stdin => "-".to_owned(),
        }
    }
}

/// Runs `command` over the paths of `a` and `b`; returns the exit code.
pub fn run(
    command: Command,
    a: InputArgs,
    b: BatchArgs,
    strict: bool,
    log: Option<&super::audit::Log>,
    record: &mut super::audit::Record,
) -> u8 {
    let started = Instant::now();
    let config = match super::config::find(b.config.as_deref()).map(|p| super::config::load(&p)).transpose() {
        Ok(c) => c.unwrap_or_default(),
        Err(code) => {
            super::output::failure_with(code, "fix the key or value it names in phiward.toml (docs/ci.md)");
            return crate::error::exit_code_for(code);
        }
    };
    let (a, b, strict) = merge(a, b, strict, &config);
    let (policy, _) = match super::policy_and_key(command, &a) {
        Ok(pk) => pk,
        Err(exit) => return exit,
    };
    let limits = match &policy {
        Some(p) => p.apply_limits(a.limits.limits()),
        None => a.limits.limits(),
    };
    let baseline = match b.baseline.as_deref().map(super::baseline::load).transpose() {
        Ok(bl) => bl,
        Err(code) => {
            super::output::failure_with(code, "the --baseline file cannot be read as a baseline");
            return crate::error::exit_code_for(code);
        }
    };
    let mut paths = vec![a.input.clone()];
    paths.extend(b.more.iter().cloned());
    let entries = match expand(&paths, &b.include, &b.exclude) {
        Ok(e) => e,
        Err(()) => {
            super::output::failure_with(Code::CLI_USAGE, "an --include or --exclude glob is not valid");
            return exit::USAGE;
        }
    };
    let (format, framing) = a.format.as_deref().map_or((None, None), super::format_of);
    let jobs = jobs(b.jobs, entries.len());
    let command_name = if command == Command::Validate { "validate" } else { "inspect" };
    let console = b.output_format.unwrap_or(if a.json { ReportFormat::JsonLines } else { ReportFormat::Text });
    let inside = inputs_dirs(&paths);
    let mut formats = Vec::new();
    let mut sinks = Vec::new();
    for (format, path) in &b.report {
        let out = if path.exists() && inside.iter().any(|d| may_be_under(path, d)) {
            Out::Later(Vec::new(), path.clone())
        } else {
            match std::fs::File::create(path) {
                Ok(f) => Out::File(std::io::BufWriter::new(f)),
                Err(_) => {
                    super::output::failure(Code::CLI_OUTPUT_FAILED, None);
                    return exit::IOERR;
                }
            }
        };
        formats.push(*format);
        sinks.push(out);
    }
    if !a.quiet {
        formats.push(console);
        sinks.push(Out::Stdout(super::output::stdout_writer()));
    }
    let mut sinks: Vec<ReportSink> = formats
        .iter()
        .zip(sinks)
        .map(|(format, out)| match report::Report::new(*format, command_name, out) {
            Ok(r) => ReportSink { report: Some(r), failed: false },
            Err(_) => ReportSink { report: None, failed: true },
        })
        .collect();
    let fail_on = b.fail_on.unwrap_or(FailOn::Error);
    let write_baseline = b.write_baseline.is_some();
    let bar = progress(entries.len(), a.quiet);
    let one = |_: usize, entry: &Entry| -> Done {
        let shown = shown_path(&entry.key(), b.redact_paths);
        let ndjson = a.ndjson || matches!(entry, Entry::File(p) if is_ndjson_name(p));
        let mut r = match entry {
            Entry::Failed(_, code) => failed(shown, *code, None),
            Entry::File(_) | Entry::Stdin => {
                let source = match entry {
                    Entry::File(p) => Source::Path(p.clone()),
                    _ => Source::Stdin,
                };
                let request = Request {
                    command,
                    source,
                    format,
                    framing,
                    limits,
                    strict,
                    unsafe_show_values: false,
                    ndjson,
                    to: None,
                    convert: crate::convert::Options::default(),
                    policy: policy.clone(),
                    key: None,
                    model: crate::formats::codec::ModelShape::Positional,
                    structures: a.structures.clone(),
                    fhir: a.fhir.clone(),
                };
                let digest = match (entry, log) {
                    (Entry::File(p), Some(log)) if log.key.is_some() => {
                        std::fs::read(p).ok().and_then(|b| log.digest(&b))
                    }
                    _ => None,
                };
                let mut capture = Capture::default();
                let outcome = ops::run(request, &mut capture);
                let mut r = collect(shown, command, outcome, capture);
                r.digest = digest;
                r
            }
        };
        if !config.severity.is_empty() {
            for x in &mut r.findings {
                if let Some(s) = config.severity.get(&x.code) {
                    x.severity = s.as_str().to_owned();
                }
            }
            if command == Command::Validate && matches!(r.status, Status::Valid | Status::Invalid) {
                let failing = r.findings.iter().any(|x| severity_rank(&x.severity, strict) >= 3);
                r.status = if failing { Status::Invalid } else { Status::Valid };
            }
        }
        let matched = baseline.as_ref().map(|bl| bl.mark(&mut r)).unwrap_or_default();
        let e = file_exit(&r, fail_on, strict);
        r.fails = e != exit::OK;
        let entries = write_baseline.then(|| {
            let mut x = super::baseline::Entries::default();
            x.add(&r);
            x
        });
        let baselined = r.findings.iter().filter(|x| x.baselined).count();
        Done {
            status: r.status,
            records: r.records,
            findings: r.findings.len() - baselined,
            baselined,
            exit: e,
            codes: r.findings.iter().map(|x| x.code.clone()).collect(),
            pieces: formats.iter().map(|f| report::piece(*f, command_name, &r)).collect(),
            format: r.format,
            digest: r.digest,
            matched,
            entries,
        }
    };
    let mut run = Run::default();
    let mut matched = std::collections::BTreeSet::new();
    let mut gathered = super::baseline::Entries::default();
    let consume = |_: usize, d: Done| -> Result<(), ()> {
        run.add(&d);
        record.formats.extend(d.format);
        record.codes.extend(d.codes);
        record.inputs.extend(d.digest);
        matched.extend(d.matched);
        if let Some(e) = d.entries {
            gathered.extend(e);
        }
        for (sink, piece) in sinks.iter_mut().zip(d.pieces) {
            sink.push(piece);
        }
        if let Some(bar) = &bar {
            bar.inc(1);
        }
        Ok(())
    };
    let ran = super::ordered::map(&entries, jobs, jobs * WINDOW_PER_JOB, one, consume);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if ran.is_err() {
        super::output::failure(Code::CLI_INTERNAL, None);
        return exit::SOFTWARE;
    }
    run.fixed = baseline.as_ref().map(|bl| bl.fixed(&matched)).unwrap_or_default();
    run.millis = started.elapsed().as_millis();
    record.counts = Some(report::counts_json(&run));
    let mut written = true;
    if let Some(path) = &b.write_baseline {
        written &= super::baseline::write(path, gathered).is_ok();
    }
    for sink in sinks {
        written &= sink.finish(&run);
    }
    if !written {
        super::output::failure(Code::CLI_OUTPUT_FAILED, None);
        return exit::IOERR;
    }
    if !a.quiet {
        super::output::batch_summary(&report::summary_line(&run));
    }
    run.exit
}

/// The number of threads: `--jobs`, else the number of cores; at least 1, at most one a file.
fn jobs(asked: Option<u16>, files: usize) -> usize {
    asked
        .map(usize::from)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
        .clamp(1, files.max(1))
}

/// The inputs (files and directories) resolved, to tell a report file that may be read as one.
fn inputs_dirs(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths.iter().filter_map(|p| std::fs::canonicalize(p).ok()).collect()
}

/// Whether the file `path` (existing or not) may be the resolved input `input` or lie under it;
/// true when it cannot be told.
fn may_be_under(path: &Path, input: &Path) -> bool {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Some(name) = path.file_name() else { return true };
    std::fs::canonicalize(parent).map_or(true, |p| p.join(name).starts_with(input))
}

/// The options with the configuration file's defaults under them (the command line wins).
fn merge(mut a: InputArgs, mut b: BatchArgs, strict: bool, c: &super::config::Config) -> (InputArgs, BatchArgs, bool) {
    use super::config::FailOnName;
    if a.format.is_none() {
        a.format.clone_from(&c.format);
    }
    if b.include.is_empty() {
        b.include.clone_from(&c.include);
    }
    if b.exclude.is_empty() {
        b.exclude.clone_from(&c.exclude);
    }
    b.jobs = b.jobs.or(c.jobs);
    b.fail_on = b.fail_on.or(c.fail_on.map(|f| match f {
        FailOnName::Error => FailOn::Error,
        FailOnName::Warning => FailOn::Warning,
        FailOnName::Info => FailOn::Info,
        FailOnName::Never => FailOn::Never,
    }));
    let defaults = super::args::LimitArgs {
        max_input_bytes: crate::limits::Limits::DEFAULT_MAX_INPUT_BYTES,
        max_segments: 1_000_000,
        max_field_bytes: 64 * 1024 * 1024,
    };
    if a.limits.max_input_bytes == defaults.max_input_bytes {
        a.limits.max_input_bytes = c.max_input_bytes.unwrap_or(defaults.max_input_bytes);
    }
    if a.limits.max_segments == defaults.max_segments {
        a.limits.max_segments = c.max_segments.unwrap_or(defaults.max_segments);
    }
    if a.limits.max_field_bytes == defaults.max_field_bytes {
        a.limits.max_field_bytes = c.max_field_bytes.unwrap_or(defaults.max_field_bytes);
    }
    (a, b, strict || c.strict.unwrap_or(false))
}

/// Orders exit codes by how bad they are: 0, then 1 (findings), then the failures.
pub(super) fn rank(code: u8) -> u8 {
    match code {
        exit::OK => 0,
        exit::INVALID => 1,
        other => other,
    }
}

/// The exit a file contributes: its failure's code, 1 for a new finding at or above
/// `--fail-on`, else 0.
fn file_exit(f: &FileResult, fail_on: FailOn, strict: bool) -> u8 {
    let new = |f: &&Finding| !f.baselined;
    if f.status == Status::Failed {
        return if f.findings.iter().any(|x| new(&x)) && fail_on != FailOn::Never { f.exit } else { exit::OK };
    }
    let threshold = match fail_on {
        FailOn::Error => 3,
        FailOn::Warning => 2,
        FailOn::Info => 1,
        FailOn::Never => return exit::OK,
    };
    let failing = f.findings.iter().filter(new).any(|x| severity_rank(&x.severity, strict) >= threshold);
    if failing { exit::INVALID } else { exit::OK }
}

/// fatal and error 3, warning 2 (3 under `--strict`), information 1.
fn severity_rank(s: &str, strict: bool) -> u8 {
    match s {
        "fatal" | "error" => 3,
        "warning" if strict => 3,
        "warning" => 2,
        _ => 1,
    }
}

/// The path as shown: as given, or `sha256-` and the hex SHA-256 of the path as given.
pub fn shown_path(path: &str, redact: bool) -> String {
    if !redact {
        return path.to_owned();
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(path.as_bytes());
    let mut s = String::from("sha256-");
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A file that could not be processed: one finding with the failure's code.
fn failed(path: String, code: Code, cause: Option<crate::diag::Diagnostic>) -> FileResult {
    let status = match code {
        Code::CLI_FORMAT_UNDETECTED | Code::CLI_FORMAT_UNSUPPORTED | Code::CLI_FORMAT_AMBIGUOUS => Status::Unsupported,
        _ => Status::Failed,
    };
    let location = cause.as_ref().map_or_else(|| "-".to_owned(), |d| d.location.to_string());
    let kind = match code {
        Code::CLI_FORMAT_UNSUPPORTED => "unsupported",
        Code::CLI_FORMAT_UNDETECTED | Code::CLI_FORMAT_AMBIGUOUS => "undetected",
        _ => ops::failure_kind(code),
    };
    let finding = Finding {
        record: None,
        code: code.as_str().to_owned(),
        severity: if status == Status::Unsupported { "information" } else { "fatal" }.to_owned(),
        fingerprint: ops::failure_fingerprint("", None, code.as_str(), &location),
        location,
        line: None,
        column: None,
        offset: None,
        kind: Some(kind),
        cause: cause.as_ref().map(|d| d.code).filter(|&c| c != code).map(|c| c.as_str().to_owned()),
        baselined: false,
    };
    FileResult {
        path,
        format: None,
        status,
        records: 0,
        objects: Vec::new(),
        findings: vec![finding],
        exit: if status == Status::Unsupported { exit::OK } else { crate::error::exit_code_for(code) },
        fails: false,
        digest: None,
    }
}

/// Turns a file's outcome and captured records into its result.
fn collect(path: String, command: Command, outcome: ops::Outcome, capture: Capture) -> FileResult {
    if let Some(code) = outcome.code {
        let mut r = failed(path, code, outcome.cause);
        r.format = outcome.detected.map(|f| f.as_str().to_owned());
        return r;
    }
    let mut r = FileResult {
        path,
        format: None,
        status: Status::Valid,
        records: 0,
        objects: Vec::new(),
        findings: Vec::new(),
        exit: outcome.exit,
        fails: false,
        digest: None,
    };
    for (record, valid, error, json) in capture.objects {
        r.records += 1;
        let object: Value = serde_json::from_slice(&json).unwrap_or(Value::Null);
        if r.format.is_none() {
            r.format = object.get("format").and_then(Value::as_str).map(str::to_owned);
        }
        if let Some(code) = error {
            r.status = Status::Invalid;
            let label = object.get("format").and_then(Value::as_str).unwrap_or("");
            r.findings.push(Finding {
                record,
                code: code.as_str().to_owned(),
                severity: "fatal".to_owned(),
                location: "-".to_owned(),
                line: None,
                column: None,
                fingerprint: ops::failure_fingerprint(label, record, code.as_str(), "-"),
                offset: object.get("offset").and_then(Value::as_u64),
                kind: Some(ops::failure_kind(code)),
                cause: object.get("cause").and_then(Value::as_str).map(str::to_owned),
                baselined: false,
            });
        }
        if valid == Some(false) && command == Command::Validate {
            r.status = Status::Invalid;
        }
        let listed = object.get("findings").and_then(Value::as_array).cloned().unwrap_or_default();
        for f in listed {
            let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or("-").to_owned();
            r.findings.push(Finding {
                record,
                code: s("code"),
                severity: s("severity"),
                location: s("location"),
                line: f.get("line").and_then(Value::as_u64),
                column: f.get("column").and_then(Value::as_u64),
                fingerprint: s("fingerprint"),
                offset: None,
                kind: None,
                cause: None,
                baselined: false,
            });
        }
        r.objects.push(object);
    }
    r
}

/// Expands the paths: files as given, directories walked; sorted by path, deduplicated.
fn expand(paths: &[PathBuf], include: &[String], exclude: &[String]) -> Result<Vec<Entry>, ()> {
    let mut entries = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            entries.push(Entry::Stdin);
            continue;
        }
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => walk(p, include, exclude, &mut entries)?,
            Ok(_) => entries.push(Entry::File(p.clone())),
            Err(e) => entries.push(Entry::Failed(p.clone(), crate::error::from_read_io(&e).code())),
        }
    }
    // The walk's order depends on its threads: ties of the shown key (names that are not
    // UTF-8) are broken by the path's bytes, so that the same entry is kept whatever the walk did.
    entries.sort_by_cached_key(|e| (e.key(), e.tie()));
    entries.dedup_by(|a, b| a.key() == b.key());
    Ok(entries)
}

/// A progress bar of files done, on stderr, only for a person watching: stderr a terminal, not
/// `--quiet`, not in CI (`CI` set), more than one file. Counts only; no colour (`NO_COLOR` holds
/// by construction).
pub(super) fn progress(files: usize, quiet: bool) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if quiet || files < 2 || std::env::var_os("CI").is_some() || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::with_draw_target(Some(files as u64), indicatif::ProgressDrawTarget::stderr());
    let style = indicatif::ProgressStyle::with_template("{pos}/{len} files [{bar:30}] {elapsed}")
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    Some(bar)
}

/// A file named `*.ndjson` is read as NDJSON (one FHIR resource per line) in a walk, as
/// `--ndjson` reads a single input: a directory's files each get their own reading.
pub(super) fn is_ndjson_name(p: &Path) -> bool {
    p.extension().is_some_and(|e| e.eq_ignore_ascii_case("ndjson"))
}

/// Walks one directory (as `walk`), for `redact --out-dir`.
pub(super) fn walk_one(root: &Path, include: &[String], exclude: &[String], out: &mut Vec<Entry>) -> Result<(), ()> {
    walk(root, include, exclude, out)
}

/// Walks `root` on as many threads as there are cores (the `ignore` crate's parallel walker);
/// the entries come in no particular order: the caller sorts them.
fn walk(root: &Path, include: &[String], exclude: &[String], out: &mut Vec<Entry>) -> Result<(), ()> {
    let mut overrides = ignore::overrides::OverrideBuilder::new(root);
    for g in include {
        overrides.add(g).map_err(|_| ())?;
    }
    for g in exclude {
        overrides.add(&format!("!{g}")).map_err(|_| ())?;
    }
    let overrides = overrides.build().map_err(|_| ())?;
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let walker = ignore::WalkBuilder::new(root)
        .follow_links(true)
        .require_git(false)
        .add_custom_ignore_filename(".phiwardignore")
        .overrides(overrides)
        .threads(threads)
        .build_parallel();
    let found = std::sync::Mutex::new(Vec::new());
    walker.run(|| {
        let found = &found;
        Box::new(move |entry| {
            let entry = match entry {
                Ok(e) if e.file_type().is_some_and(|t| t.is_file()) => Some(Entry::File(e.into_path())),
                Ok(_) => None,
                Err(e) => Some(Entry::Failed(error_path(&e).unwrap_or_else(|| root.to_path_buf()), Code::CLI_NO_INPUT)),
            };
            if let Some(entry) = entry {
                found.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(entry);
            }
            ignore::WalkState::Continue
        })
    });
    out.extend(found.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner));
    Ok(())
}

/// The path a walk error is about (a symlink loop's link, an unreadable entry).
fn error_path(e: &ignore::Error) -> Option<PathBuf> {
    match e {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::Loop { child, .. } => Some(child.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => error_path(err),
        ignore::Error::Partial(errs) => errs.iter().find_map(error_path),
        _ => None,
    }
}
