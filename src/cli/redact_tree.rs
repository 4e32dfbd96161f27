//! `phiward redact PATH... --out-dir DIR`: redacts many files into a directory.
//!
//! Each file (directories walked as `validate PATH...` walks them: .gitignore, .ignore,
//! .phiwardignore, `--include`/`--exclude`) is redacted under the one policy and key, and its
//! output written to `DIR/<path relative to the directory given>` (a file given by itself:
//! `DIR/<its name>`). Fail closed, file by file: a file any record of which cannot be redacted
//! gets no output at all (not the records that could be), and the run says so; the others are
//! written. Nothing is written over an input, two inputs never share an output, and the output
//! directory is never read as input. Stdout gets one value-free line per file (the path as given,
//! or hashed with `--redact-paths`, and a status or code); stderr the summary.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::args::InputArgs;
use super::batch::{Entry, shown_path, walk_one};
use crate::diag::Code;
use crate::error::exit;
use crate::ops::{self, Command, Item, Request, Sink, Source};

/// The tree options of `redact`.
#[derive(Debug, Default)]
pub struct TreeArgs {
    pub more: Vec<PathBuf>,
    pub out_dir: Option<PathBuf>,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub jobs: Option<u16>,
    pub redact_paths: bool,
}

impl TreeArgs {
    /// True when an option of tree mode was given.
    pub fn any(&self) -> bool {
        !self.more.is_empty()
            || self.out_dir.is_some()
            || !self.include.is_empty()
            || !self.exclude.is_empty()
            || self.jobs.is_some()
            || self.redact_paths
    }
}

/// One input and where its output goes.
struct Job {
    entry: Entry,
    out: Option<PathBuf>,
    /// Set when the output path cannot be used (shared with another input, or an input).
    refused: Option<Code>,
}

/// Captures the redacted bytes of one file.
#[derive(Default)]
struct Bytes(Vec<u8>);

impl Sink for Bytes {
    fn item(&mut self, item: Item<'_>) -> std::io::Result<()> {
        if let Item::Bytes(b) = item {
            self.0.extend_from_slice(b);
        }
        Ok(())
    }

    /// A file's manifest is not written under `--out-dir` (`--manifest` is for one input).
    fn reads_manifest(&self) -> bool {
        false
    }
}

/// Writes `bytes` as the file `out`, creating its folder (once per folder: `made` lists those
/// made or found already). A file there already is written over in place and then cut to the
/// new length, not truncated first: on ext4, a file truncated to zero and written again is
/// flushed to disk when it is closed (`auto_da_alloc`), and its freed blocks discarded, which
/// made rewriting an output folder several times slower than writing it. The file holds the
/// new bytes, and only those, once this returns `Ok` (and is emptied when writing fails).
fn write_out(out: &Path, bytes: &[u8], made: &Mutex<BTreeSet<PathBuf>>) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(parent) = out.parent() {
        let known = made.lock().map(|m| m.contains(parent)).unwrap_or(false);
        if !known {
            std::fs::create_dir_all(parent)?;
            if let Ok(mut m) = made.lock() {
                m.insert(parent.to_path_buf());
            }
        }
    }
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(out)?;
    let before = file.metadata()?.len();
    let len = bytes.len() as u64;
    match file.write_all(bytes) {
        // Cut only when the file was longer: ext4 truncates (and flushes) even to the same size.
        Ok(()) if before > len => file.set_len(len),
        Ok(()) => Ok(()),
        // Not part new, part old: emptied (the run reports the file not written).
        Err(e) => {
            let _ = file.set_len(0);
            Err(e)
        }
    }
}

/// Runs `redact` over the paths into `--out-dir`; returns the exit code.
pub fn run(
    a: InputArgs,
    t: TreeArgs,
    line_ending_given: bool,
    manifest_given: bool,
    record: &mut super::audit::Record,
) -> u8 {
    let Some(out_dir) = t.out_dir.clone() else {
        super::output::failure_hint(
            Code::CLI_USAGE,
            "--out-dir DIR is required to redact several files or a directory",
        );
        return exit::USAGE;
    };
    if line_ending_given || manifest_given {
        let name = if manifest_given { "--manifest" } else { "--line-ending" };
        super::output::failure_hint(Code::CLI_USAGE, &format!("{name} is for one input, not for --out-dir"));
        return exit::USAGE;
    }
    let mut roots = vec![a.input.clone()];
    roots.extend(t.more.iter().cloned());
    if roots.iter().any(|r| r.as_os_str() == "-") {
        super::output::failure_hint(Code::CLI_USAGE, "standard input (-) has no name to write under --out-dir");
        return exit::USAGE;
    }
    let (policy, key) = match super::policy_and_key(Command::Redact, &a) {
        Ok(pk) => pk,
        Err(exit) => return exit,
    };
    let limits = match &policy {
        Some(p) => p.apply_limits(a.limits.limits()),
        None => a.limits.limits(),
    };
    if std::fs::create_dir_all(&out_dir).is_err() {
        super::output::failure_with(Code::CLI_OUTPUT_FAILED, "the --out-dir directory cannot be created");
        return exit::IOERR;
    }
    let out_canon = std::fs::canonicalize(&out_dir).unwrap_or_else(|_| out_dir.clone());
    let mut jobs = Vec::new();
    for root in &roots {
        let mut entries = Vec::new();
        let base: Option<&Path> = match std::fs::metadata(root) {
            Ok(m) if m.is_dir() => {
                if walk_one(root, &t.include, &t.exclude, &mut entries).is_err() {
                    super::output::failure_with(Code::CLI_USAGE, "an --include or --exclude glob is not valid");
                    return exit::USAGE;
                }
                Some(root)
            }
            Ok(_) => {
                entries.push(Entry::File(root.clone()));
                None
            }
            Err(e) => {
                entries.push(Entry::Failed(root.clone(), crate::error::from_read_io(&e).code()));
                None
            }
        };
        for entry in entries {
            let path = match &entry {
                Entry::File(p) | Entry::Failed(p, _) => p.clone(),
                Entry::Stdin => continue,
            };
            // The output directory (when inside a directory walked) is not input.
            if std::fs::canonicalize(&path).is_ok_and(|c| c.starts_with(&out_canon)) {
                continue;
            }
            let rel = match base {
                Some(b) => path.strip_prefix(b).map(Path::to_path_buf).ok(),
                None => path.file_name().map(PathBuf::from),
            };
            jobs.push(Job { entry, out: rel.map(|r| out_dir.join(r)), refused: None });
        }
    }
    jobs.sort_by_key(|j| j.entry_key());
    jobs.dedup_by(|x, y| x.entry_key() == y.entry_key());
    // Two inputs with one output, or an output that is an input: neither is written.
    let inputs: BTreeSet<PathBuf> =
        jobs.iter().filter_map(|j| j.input_path()).filter_map(|p| std::fs::canonicalize(p).ok()).collect();
    let mut seen = BTreeSet::new();
    let mut shared = BTreeSet::new();
    for j in &jobs {
        if let Some(o) = &j.out
            && !seen.insert(o.clone())
        {
            shared.insert(o.clone());
        }
    }
    for j in &mut jobs {
        match &j.out {
            None => j.refused = Some(Code::CLI_OUTPUT_FAILED),
            Some(o) if shared.contains(o) => j.refused = Some(Code::CLI_OUTPUT_FAILED),
            Some(o) if std::fs::canonicalize(o).is_ok_and(|c| inputs.contains(&c)) => {
                j.refused = Some(Code::CLI_OUTPUT_FAILED);
            }
            Some(_) => {}
        }
    }
    let (format, framing) = a.format.as_deref().map_or((None, None), super::format_of);
    let workers = t
        .jobs
        .map(usize::from)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
        .clamp(1, jobs.len().max(1));
    let next = AtomicUsize::new(0);
    let made = Mutex::new(BTreeSet::new());
    let bar = super::batch::progress(jobs.len(), a.quiet);
    // Ok(true): written, a DICOM file whose possible burned-in text the policy accepts.
    let one = |job: &Job| -> Result<bool, Code> {
        if let Some(code) = job.refused {
            return Err(code);
        }
        let path = match &job.entry {
            Entry::File(p) => p.clone(),
            Entry::Failed(_, code) => return Err(*code),
            Entry::Stdin => return Err(Code::CLI_USAGE),
        };
        let request = Request {
            command: Command::Redact,
            source: Source::Path(path.clone()),
            format,
            framing,
            limits,
            strict: false,
            unsafe_show_values: false,
            ndjson: a.ndjson || super::batch::is_ndjson_name(&path),
            to: None,
            convert: crate::convert::Options::default(),
            policy: policy.clone(),
            key: key.clone(),
            model: crate::formats::codec::ModelShape::Positional,
            structures: None,
            fhir: crate::formats::fhir::checks::Checks::default(),
        };
        let mut bytes = Bytes::default();
        let outcome = ops::run(request, &mut bytes);
        let result = match (outcome.code, outcome.records.failed) {
            (Some(code), _) => Err(code),
            // Fail closed per file: a file with a record left out is not written at all.
            (None, n) if n > 0 => Err(Code::CLI_RECORDS_FAILED),
            (None, _) => {
                let out = job.out.as_deref().ok_or(Code::CLI_OUTPUT_FAILED)?;
                write_out(out, &bytes.0, &made).map_err(|_| Code::CLI_OUTPUT_FAILED)?;
                Ok(outcome.burned_in_accepted > 0)
            }
        };
        crate::phi::wipe(&mut bytes.0);
        result
    };
    let mut results: Vec<(usize, Result<bool, Code>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        mine.push((i, one(job)));
                        if let Some(bar) = &bar {
                            bar.inc(1);
                        }
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    results.sort_by_key(|(i, _)| *i);
    let mut lines = String::new();
    let (mut written, mut failed) = (0usize, 0usize);
    let mut code = exit::OK;
    for (i, result) in &results {
        let shown = shown_path(&jobs[*i].entry_key(), t.redact_paths);
        match result {
            Ok(accepted) => {
                written += 1;
                let note = if *accepted { " (burned-in annotation: residual risk accepted)" } else { "" };
                lines.push_str(&format!("{shown}: redacted{note}\n"));
            }
            Err(c) => {
                failed += 1;
                record.codes.insert(c.as_str().to_owned());
                lines.push_str(&format!("{shown}: not written: {}: {}\n", c.as_str(), c.meaning()));
                let e = crate::error::exit_code_for(*c);
                if super::batch::rank(e) > super::batch::rank(code) {
                    code = e;
                }
            }
        }
    }
    record.counts = Some(serde_json::json!({ "files": results.len(), "redacted": written, "failed": failed }));
    if !a.quiet && super::output::text(&lines).is_err() {
        super::output::failure(Code::CLI_OUTPUT_FAILED, None);
        return exit::IOERR;
    }
    if !a.quiet {
        super::output::batch_summary(&format!(
            "phiward: {} files: {written} redacted, {failed} not written",
            results.len()
        ));
    }
    code
}

impl Job {
    fn entry_key(&self) -> String {
        match &self.entry {
            Entry::File(p) | Entry::Failed(p, _) => p.to_string_lossy().into_owned(),
            Entry::Stdin => "-".to_owned(),
        }
    }

    fn input_path(&self) -> Option<&Path> {
        match &self.entry {
            Entry::File(p) => Some(p),
            _ => None,
        }
    }
}
