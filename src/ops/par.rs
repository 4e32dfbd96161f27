//! Records of a stream processed on all cores: the pure per-record work of `parse`, `validate`
//! and `inspect` (parse the record, validate it, build its JSON and findings, or its failure),
//! and a small pool of worker threads that does it in batches while the main thread reads the
//! next records and writes the finished ones, in input order.
//!
//! The main thread keeps everything stateful and ordered: reading and deframing, record
//! numbers, `max_records`, the batch `Tracker` and envelope records (read and rendered there,
//! in input order, as the stream's state requires; their finished objects join the batch, so
//! that an interchange of few transaction sets does not hold the workers back), the sink, the
//! verdict flags. A batch is bounded by records and by
//! input bytes, and at most [`IN_FLIGHT_PER_WORKER`] batches per worker wait, so memory stays
//! bounded whatever the stream's length.
//!
//! A panic in a worker is caught per record and handed to the main thread, which writes the
//! records before it and resumes the panic there (the CLI and MCP turn it into
//! `CLI_INTERNAL`, printing nothing of its payload): the same as when the record is processed
//! on the main thread. Once the operation has failed or its sink is cancelled (an MCP client
//! cancelled the call), the batches still queued are answered empty, unprocessed.
//!
//! What it does not do: `fmt`, `redact` (the redactor keeps counts), `convert` (see
//! `Runner::flush_converts`), single-record inputs, or live streams (a pipe or a terminal is
//! processed record by record, so that each record is written as it arrives).

use std::any::Any;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use super::json;
use super::request::Command;
use super::runner::{check_for, render};
use crate::diag::{Code, Diagnostic};
use crate::formats::codec::{Codec, Kind, Settings};
use crate::phi::Disclosure;

/// Most worker threads.
pub(super) const MAX_WORKERS: usize = 8;
/// Most records in one batch.
const MAX_BATCH_RECORDS: usize = 128;
/// Most input bytes in one batch (a batch closes at the record that reaches it).
const MAX_BATCH_BYTES: usize = 256 * 1024;
/// Batches that may be sent and not yet written, per worker.
const IN_FLIGHT_PER_WORKER: u64 = 2;

/// What a worker needs to know of the request (no value; the conformance store is shared).
#[derive(Clone, Debug)]
pub(super) struct Work {
    pub(super) command: Command,
    pub(super) settings: Settings,
}

/// One record of a multi-record input (its `Debug` shows the record number only).
pub(super) enum Job {
    /// A message record, to read and process on a worker.
    Message {
        /// The record's bytes.
        bytes: Vec<u8>,
        /// Where it starts in the input.
        offset: u64,
        /// Its number.
        record: u64,
    },
    /// A record processed on the main thread (an envelope record, which reads and updates the
    /// stream's state): its finished object, written after the records queued before it.
    Rendered {
        /// Its number.
        record: u64,
        /// Its complete JSON object (it starts with `{"record":N,`).
        json: crate::phi::Scratch,
        findings: Vec<Diagnostic>,
        valid: Option<bool>,
    },
}

impl Job {
    /// The bytes the job holds (a batch is bounded by them).
    fn size(&self) -> usize {
        match self {
            Job::Message { bytes, .. } => bytes.len(),
            Job::Rendered { json, .. } => json.len(),
        }
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Message { record, .. } => write!(f, "Job(record {record})"),
            Job::Rendered { record, .. } => write!(f, "Job(rendered record {record})"),
        }
    }
}

/// The results of a batch: the records' JSON objects, each followed by a newline, in one
/// buffer (no allocation per record; written with one call when the sink takes JSON lines).
#[derive(Debug, Default)]
pub(super) struct Finished {
    /// The objects of the records whose result is `Out::Json`, in order, each followed by `\n`.
    pub(super) lines: Vec<u8>,
    pub(super) outs: Vec<Out>,
}

impl Finished {
    /// Processes a batch (`bytes`: its input bytes, to size the buffer once).
    fn of<C: Codec>(batch: Vec<Job>, bytes: usize, work: &Work, disclosure: Option<&Disclosure>) -> Finished {
        // The JSON of a record is about 1.7 times its bytes (and rarely more than twice).
        let mut lines = Vec::with_capacity(bytes.saturating_mul(2).saturating_add(batch.len() * 64));
        let outs = batch.into_iter().map(|job| process::<C>(job, work, disclosure, &mut lines)).collect();
        Finished { lines, outs }
    }

    /// Every result is a record's object: `lines` is the whole output of the batch.
    pub(super) fn all_json(&self) -> bool {
        self.outs.iter().all(|o| matches!(o, Out::Json { .. }))
    }
}

/// A record's result.
pub(super) enum Out {
    /// The record's complete JSON object (it starts with `{"record":N,`), at `json` in the
    /// batch's `lines`.
    Json {
        record: u64,
        json: std::ops::Range<usize>,
        findings: Vec<Diagnostic>,
        valid: Option<bool>,
        error: Option<Code>,
        /// The record makes the verdict negative (`validate`).
        invalid: bool,
        /// The record could not be parsed.
        failed: bool,
    },
    /// The operation fails with this code (nothing more is written).
    Internal(Code),
    /// The work panicked: the payload, to resume on the main thread (never shown).
    Panicked(Box<dyn Any + Send>),
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Out::Json { record, .. } => write!(f, "Json(record {record})"),
            Out::Internal(code) => write!(f, "Internal({})", code.as_str()),
            Out::Panicked(_) => f.write_str("Panicked"),
        }
    }
}

/// Does one record's work, catching a panic; a record's object is appended to `lines`,
/// followed by a newline.
fn process<C: Codec>(job: Job, work: &Work, disclosure: Option<&Disclosure>, lines: &mut Vec<u8>) -> Out {
    let start = lines.len();
    let run = std::panic::AssertUnwindSafe(|| message::<C>(job, work, disclosure, lines));
    let out = std::panic::catch_unwind(run).unwrap_or_else(Out::Panicked);
    match out {
        Out::Json { .. } => lines.push(b'\n'),
        // Nothing of a record that failed so is kept.
        Out::Internal(_) | Out::Panicked(_) => lines.truncate(start),
    }
    out
}

/// One message record: read, findings, rendering (as the record path does it); or a record
/// rendered on the main thread, copied.
fn message<C: Codec>(job: Job, work: &Work, disclosure: Option<&Disclosure>, lines: &mut Vec<u8>) -> Out {
    let (bytes, offset, record) = match job {
        Job::Message { bytes, offset, record } => (bytes, offset, record),
        Job::Rendered { record, json, findings, valid } => {
            let start = lines.len();
            lines.extend_from_slice(&json);
            return Out::Json {
                record,
                json: start..lines.len(),
                findings,
                valid,
                error: None,
                invalid: valid == Some(false),
                failed: false,
            };
        }
    };
    // A message inherits nothing from the stream (envelope records are read on the main thread).
    let stream = C::Stream::default();
    let doc = match C::read(bytes, offset, Kind::Message, &stream, &work.settings, false) {
        Ok(doc) => doc,
        Err(fatal) => {
            let code = if fatal.cause.code == Code::CLI_INPUT_TOO_LARGE {
                Code::CLI_INPUT_TOO_LARGE
            } else {
                Code::CLI_PARSE_FAILED
            };
            let start = lines.len();
            json::failed_json(Some(record), C::NAME, code, Some(offset), Some(fatal.cause.code), lines);
            return Out::Json {
                record,
                json: start..lines.len(),
                findings: Vec::new(),
                valid: Some(false),
                error: Some(code),
                invalid: false,
                failed: true,
            };
        }
    };
    let findings = C::findings(&doc, Kind::Message, check_for(work.command), &work.settings);
    // A record read in part is a negative result (see `Codec::partial`).
    let partial = C::partial(&doc);
    let start = lines.len();
    match render::<C>(
        work.command,
        &doc,
        findings,
        Some(record),
        Some(offset),
        disclosure,
        work.settings.model,
        lines,
        None,
    ) {
        Ok(r) => Out::Json {
            record,
            json: start..lines.len(),
            findings: r.findings,
            valid: r.valid,
            error: None,
            invalid: r.valid == Some(false) || partial,
            failed: false,
        },
        Err(code) => Out::Internal(code),
    }
}

/// A batch: its id, its records, their bytes.
type Batch = (u64, Vec<Job>, usize);
type Done = (u64, Finished);

/// Worker threads, started on the first full batch and joined when dropped.
#[derive(Debug)]
struct Pool {
    jobs: Option<mpsc::Sender<Batch>>,
    done: mpsc::Receiver<Done>,
    threads: Vec<JoinHandle<()>>,
    /// Set when the operation has failed or was cancelled: the batches still queued are
    /// answered empty rather than processed.
    abandoned: Arc<AtomicBool>,
}

impl Pool {
    /// `grant` lends each worker the disclosure of this operation (granted by `ops` to the
    /// commands that return data; `None` for the others).
    fn start<C: Codec>(workers: usize, work: Work, grant: Option<fn() -> Disclosure>) -> Pool {
        let (jobs, queue) = mpsc::channel::<Batch>();
        let queue = Arc::new(Mutex::new(queue));
        let (results, done) = mpsc::channel::<Done>();
        let abandoned = Arc::new(AtomicBool::new(false));
        let threads = (0..workers)
            .filter_map(|_| {
                let queue = Arc::clone(&queue);
                let abandoned = Arc::clone(&abandoned);
                let results = results.clone();
                let disclosure = grant.map(|g| g());
                let work = work.clone();
                let worker = move || {
                    loop {
                        // The lock is held only to take a batch (no panic can poison it; a
                        // poisoned lock still holds a usable queue).
                        let next = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
                        let Ok((id, batch, bytes)) = next else { break };
                        let finished = if abandoned.load(Ordering::Relaxed) {
                            Finished::default()
                        } else {
                            Finished::of::<C>(batch, bytes, &work, disclosure.as_ref())
                        };
                        if results.send((id, finished)).is_err() {
                            break;
                        }
                    }
                };
                std::thread::Builder::new().name("phiward-worker".into()).spawn(worker).ok()
            })
            .collect();
        Pool { jobs: Some(jobs), done, threads, abandoned }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Closing the queue ends the workers once they are idle.
        self.jobs = None;
        for t in self.threads.drain(..) {
            // A worker catches every panic of the work; nothing else in it can fail.
            let _ = t.join();
        }
    }
}

/// Collects records into batches, sends them to the pool, and gives back finished batches in
/// input order.
#[derive(Debug)]
pub(super) struct Batcher<C> {
    work: Work,
    workers: usize,
    /// Lends a worker (or this thread, for a short input) the disclosure of this operation
    /// (`None`: the command returns no data).
    grant: Option<fn() -> Disclosure>,
    batch: Vec<Job>,
    batch_bytes: usize,
    pool: Option<Pool>,
    /// Id of the next batch sent.
    next_id: u64,
    /// Id of the next batch to write.
    next_write: u64,
    /// Batches finished out of order.
    ready: BTreeMap<u64, Finished>,
    codec: PhantomData<fn() -> C>,
}

impl<C: Codec> Batcher<C> {
    pub(super) fn new(work: Work, workers: usize, grant: Option<fn() -> Disclosure>) -> Batcher<C> {
        Batcher {
            work,
            workers,
            grant,
            batch: Vec::new(),
            batch_bytes: 0,
            pool: None,
            next_id: 0,
            next_write: 0,
            ready: BTreeMap::new(),
            codec: PhantomData,
        }
    }

    /// Adds a record; returns the batches now finished, in order (often none).
    pub(super) fn push(&mut self, job: Job) -> Vec<Finished> {
        self.batch_bytes += job.size();
        self.batch.push(job);
        if self.batch.len() < MAX_BATCH_RECORDS && self.batch_bytes < MAX_BATCH_BYTES {
            return Vec::new();
        }
        if self.pool.is_none() {
            self.pool = Some(Pool::start::<C>(self.workers, self.work.clone(), self.grant));
        }
        if !self.send() {
            return self.inline();
        }
        // Write what is finished; wait while too many batches are in flight.
        let in_flight_max = IN_FLIGHT_PER_WORKER * self.workers as u64;
        let mut out = Vec::new();
        self.collect(false);
        self.take_ready(&mut out);
        while self.next_id - self.next_write >= in_flight_max {
            if !self.collect(true) {
                self.lost(&mut out);
                break;
            }
            self.take_ready(&mut out);
        }
        out
    }

    /// Every record pushed, finished, in order.
    pub(super) fn drain(&mut self) -> Vec<Finished> {
        if !self.batch.is_empty() {
            // A short input (no pool yet) is not worth a thread.
            if self.pool.is_none() {
                return self.inline();
            }
            // The last records go out in one part per worker, so that the workers finish
            // together rather than one of them working through the whole rest alone.
            let per = self.batch.len().div_ceil(self.workers.max(1));
            let mut rest = std::mem::take(&mut self.batch);
            while !rest.is_empty() {
                let tail = rest.split_off(per.min(rest.len()));
                self.batch_bytes = rest.iter().map(Job::size).sum();
                self.batch = rest;
                if !self.send() {
                    self.batch.extend(tail);
                    self.batch_bytes = self.batch.iter().map(Job::size).sum();
                    return self.inline();
                }
                rest = tail;
            }
        }
        self.drain_sent()
    }

    /// Forgets every record pushed and not yet written (the operation has failed or was
    /// cancelled); the workers skip the batches still queued.
    pub(super) fn abandon(&mut self) {
        if let Some(pool) = &self.pool {
            pool.abandoned.store(true, Ordering::Relaxed);
        }
        self.batch.clear();
        self.batch_bytes = 0;
        self.ready.clear();
        self.next_write = self.next_id;
    }

    /// Sends the batch; false when no worker can take it (the batch stays here).
    fn send(&mut self) -> bool {
        let Some(jobs) = self.pool.as_ref().filter(|p| !p.threads.is_empty()).and_then(|p| p.jobs.as_ref()) else {
            return false;
        };
        let batch = std::mem::take(&mut self.batch);
        match jobs.send((self.next_id, batch, self.batch_bytes)) {
            Ok(()) => {
                self.batch_bytes = 0;
                self.next_id += 1;
                true
            }
            Err(mpsc::SendError((_, batch, _))) => {
                self.batch = batch;
                false
            }
        }
    }

    /// Processes the batch on this thread, after every batch sent.
    fn inline(&mut self) -> Vec<Finished> {
        let mut out = self.drain_sent();
        let disclosure = self.grant.map(|g| g());
        let batch = std::mem::take(&mut self.batch);
        let bytes = std::mem::take(&mut self.batch_bytes);
        out.push(Finished::of::<C>(batch, bytes, &self.work, disclosure.as_ref()));
        out
    }

    /// Every batch sent, finished, in order.
    fn drain_sent(&mut self) -> Vec<Finished> {
        let mut out = Vec::new();
        loop {
            self.take_ready(&mut out);
            if self.next_write == self.next_id {
                return out;
            }
            if !self.collect(true) {
                self.lost(&mut out);
                return out;
            }
        }
    }

    /// Every worker is gone with batches unfinished (not expected: a worker catches the
    /// panics of the work): the operation fails.
    fn lost(&mut self, out: &mut Vec<Finished>) {
        out.push(Finished { lines: Vec::new(), outs: vec![Out::Internal(Code::CLI_INTERNAL)] });
        self.abandon();
    }

    /// Receives finished batches (waiting for one when `wait`); false when none can come.
    fn collect(&mut self, wait: bool) -> bool {
        let Some(pool) = self.pool.as_ref() else { return false };
        if wait {
            match pool.done.recv() {
                Ok((id, outs)) => {
                    self.ready.insert(id, outs);
                }
                Err(_) => return false,
            }
        }
        while let Ok((id, outs)) = pool.done.try_recv() {
            self.ready.insert(id, outs);
        }
        true
    }

    fn take_ready(&mut self, out: &mut Vec<Finished>) {
        while let Some(outs) = self.ready.remove(&self.next_write) {
            out.push(outs);
            self.next_write += 1;
        }
    }
}
