//! In-process throughput on one core over the generated benchmark corpora (the figures issues 2
//! and 3 set targets for): HL7 v2 parse, parse + syntax validation, conformance validation,
//! parse + full validation and the whole deframe + parse + validate pipeline over the head of
//! the mixed MLLP stream; FHIR read and read + validate over the head of the NDJSON file.
//!
//! Run by `scripts/bench` (which generates the corpora and prints these rows after the
//! side-by-side table), or by hand:
//!
//! ```sh
//! cargo bench --bench in_process -- --hl7 target/bench/corpus/mixed_100mb.mllp \
//!     --fhir target/bench/corpus/fhir_100mb.ndjson [--max-mb 16] [--runs 5] [--json]
//! ```
//!
//! Everything runs on the calling thread. Each stage makes one warm-up pass over the corpus head,
//! then `--runs` timed passes; the figure is the corpus bytes divided by the median pass. Inputs
//! are copied before a pass starts, so the copies are not timed. A record that fails to parse
//! makes the run fail: the corpora are valid by construction.

use std::io::{Cursor, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use phiward::formats::fhir;
use phiward::formats::hl7v2::{self, validate};
use phiward::formats::mllp::{Deframer, Frame};
use phiward::limits::Limits;

struct Args {
    hl7: Option<PathBuf>,
    fhir: Option<PathBuf>,
    max_bytes: usize,
    runs: usize,
    json: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { hl7: None, fhir: None, max_bytes: 16_000_000, runs: 5, json: false };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--hl7" => args.hl7 = Some(PathBuf::from(value("--hl7")?)),
            "--fhir" => args.fhir = Some(PathBuf::from(value("--fhir")?)),
            "--max-mb" => {
                let mb: f64 = value("--max-mb")?.parse().map_err(|_| "--max-mb: a number".to_owned())?;
                args.max_bytes = (mb * 1e6) as usize;
            }
            "--runs" => args.runs = value("--runs")?.parse().map_err(|_| "--runs: a number".to_owned())?,
            "--json" => args.json = true,
            // `cargo bench` passes `--bench` to every bench binary.
            "--bench" => {}
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.runs == 0 {
        return Err("--runs must be at least 1".to_owned());
    }
    Ok(args)
}

/// One measured stage.
struct Stage {
    id: &'static str,
    label: &'static str,
    bytes: usize,
    records: usize,
    median: Duration,
}

impl Stage {
    fn mb_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.median.as_secs_f64()
    }
}

/// Times `pass` (which gets fresh inputs from `setup`): one warm-up, then `runs` timed passes.
fn measure<I, S, P>(runs: usize, mut setup: S, mut pass: P) -> Result<Duration, String>
where
    S: FnMut() -> I,
    P: FnMut(I) -> Result<usize, String>,
{
    std::hint::black_box(pass(setup())?);
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let input = setup();
        let start = Instant::now();
        let n = pass(input)?;
        times.push(start.elapsed());
        std::hint::black_box(n);
    }
    times.sort();
    Ok(times[times.len() / 2])
}

/// The head of an MLLP stream, cut after the last whole frame within `max` bytes.
fn mllp_head(path: &PathBuf, max: usize) -> Result<Vec<u8>, String> {
    let all = std::fs::read(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let mut end = all.len().min(max);
    if end < all.len() {
        end = all[..end].windows(2).rposition(|w| w == [0x1C, 0x0D]).map_or(0, |i| i + 2);
    }
    Ok(all[..end].to_vec())
}

/// The head of an NDJSON file, cut after the last whole line within `max` bytes.
fn ndjson_head(path: &PathBuf, max: usize) -> Result<Vec<Vec<u8>>, String> {
    let all = std::fs::read(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let mut end = all.len().min(max);
    if end < all.len() {
        end = all[..end].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    }
    Ok(all[..end].split(|&b| b == b'\n').filter(|l| !l.trim_ascii().is_empty()).map(<[u8]>::to_vec).collect())
}

fn for_each_frame(
    stream: &[u8],
    limits: Limits,
    mut f: impl FnMut(Vec<u8>) -> Result<(), String>,
) -> Result<(), String> {
    for (i, frame) in Deframer::new(Cursor::new(stream), limits).enumerate() {
        match frame.map_err(|_| "read error".to_owned())? {
            Frame::Content { bytes, .. } => f(bytes)?,
            Frame::Problem { .. } => return Err(format!("frame {} is not a whole MLLP frame", i + 1)),
        }
    }
    Ok(())
}

fn frames(stream: &[u8], limits: Limits) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    for_each_frame(stream, limits, |bytes| {
        out.push(bytes);
        Ok(())
    })?;
    Ok(out)
}

fn parsed(bytes: Vec<u8>, limits: &Limits, i: usize) -> Result<hl7v2::Message, String> {
    hl7v2::parse(bytes, limits).map_err(|_| format!("HL7 v2 record {} does not parse", i + 1))
}

/// Parses and validates every message; the number of findings.
fn parse_and_validate(msgs: Vec<Vec<u8>>, limits: &Limits, options: validate::Options) -> Result<usize, String> {
    let mut n = 0;
    for (i, m) in msgs.into_iter().enumerate() {
        n += validate::validate(&parsed(m, limits, i)?, options).len();
    }
    Ok(n)
}

const SYNTAX: validate::Options = validate::Options { strict: false, syntax_only: true };
const FULL: validate::Options = validate::Options { strict: false, syntax_only: false };

fn hl7_stages(path: &PathBuf, args: &Args, out: &mut Vec<Stage>) -> Result<(), String> {
    let limits = Limits::default();
    let stream = mllp_head(path, args.max_bytes)?;
    let msgs = frames(&stream, limits)?;
    if msgs.is_empty() {
        return Err(format!("{}: no whole MLLP frame in the first {} bytes", path.display(), args.max_bytes));
    }
    let bytes: usize = msgs.iter().map(Vec::len).sum();
    let records = msgs.len();
    let runs = args.runs;
    let copies = || msgs.clone();

    // Frames are dropped as they come, as the command-line runner does.
    let t = measure(
        runs,
        || (),
        |()| {
            let mut n = 0;
            for_each_frame(&stream, limits, |bytes| {
                n += bytes.len();
                Ok(())
            })?;
            Ok(n)
        },
    )?;
    out.push(Stage { id: "mllp-deframe", label: "MLLP deframe", bytes: stream.len(), records, median: t });

    let t = measure(runs, copies, |ms| {
        let mut n = 0;
        for (i, m) in ms.into_iter().enumerate() {
            n += parsed(m, &limits, i)?.segment_count();
        }
        Ok(n)
    })?;
    out.push(Stage { id: "hl7-parse", label: "HL7 v2 parse", bytes, records, median: t });

    let t = measure(runs, copies, |ms| parse_and_validate(ms, &limits, SYNTAX))?;
    out.push(Stage { id: "hl7-parse-syntax", label: "HL7 v2 parse + syntax validation", bytes, records, median: t });

    let pre: Vec<hl7v2::Message> =
        msgs.iter().cloned().enumerate().map(|(i, m)| parsed(m, &limits, i)).collect::<Result<_, _>>()?;
    let t = measure(runs, || (), |()| Ok(pre.iter().map(|m| validate::validate(m, FULL).len()).sum::<usize>()))?;
    out.push(Stage {
        id: "hl7-validate",
        label: "HL7 v2 validation (syntax + conformance), parsed messages",
        bytes,
        records,
        median: t,
    });
    drop(pre);

    let t = measure(runs, copies, |ms| parse_and_validate(ms, &limits, FULL))?;
    out.push(Stage {
        id: "hl7-parse-validate",
        label: "HL7 v2 parse + validation (syntax + conformance)",
        bytes,
        records,
        median: t,
    });

    let t = measure(
        runs,
        || (),
        |()| {
            let (mut n, mut i) = (0, 0);
            for_each_frame(&stream, limits, |bytes| {
                n += validate::validate(&parsed(bytes, &limits, i)?, FULL).len();
                i += 1;
                Ok(())
            })?;
            Ok(n)
        },
    )?;
    out.push(Stage {
        id: "mllp-pipeline",
        label: "MLLP deframe + parse + validation",
        bytes: stream.len(),
        records,
        median: t,
    });
    Ok(())
}

fn fhir_stages(path: &PathBuf, args: &Args, out: &mut Vec<Stage>) -> Result<(), String> {
    let limits = Limits::default();
    let lines = ndjson_head(path, args.max_bytes)?;
    if lines.is_empty() {
        return Err(format!("{}: no whole line in the first {} bytes", path.display(), args.max_bytes));
    }
    let bytes: usize = lines.iter().map(Vec::len).sum();
    let records = lines.len();
    let read = |l: Vec<u8>, i: usize| fhir::read(l, &limits).map_err(|_| format!("FHIR line {} does not read", i + 1));

    let t = measure(
        args.runs,
        || lines.clone(),
        |ls| {
            let mut n = 0;
            for (i, l) in ls.into_iter().enumerate() {
                n += usize::from(read(l, i).is_ok());
            }
            Ok(n)
        },
    )?;
    out.push(Stage { id: "fhir-read", label: "FHIR R4 JSON read", bytes, records, median: t });

    let t = measure(
        args.runs,
        || lines.clone(),
        |ls| {
            let mut n = 0;
            for (i, l) in ls.into_iter().enumerate() {
                n += fhir::validate::validate(&read(l, i)?, fhir::validate::Options::default()).len();
            }
            Ok(n)
        },
    )?;
    out.push(Stage { id: "fhir-read-validate", label: "FHIR R4 JSON read + validation", bytes, records, median: t });
    Ok(())
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    if args.hl7.is_none() && args.fhir.is_none() {
        return Err("give --hl7 FILE.mllp and/or --fhir FILE.ndjson (scripts/bench does)".to_owned());
    }
    let mut stages = Vec::new();
    if let Some(p) = &args.hl7 {
        hl7_stages(p, &args, &mut stages)?;
    }
    if let Some(p) = &args.fhir {
        fhir_stages(p, &args, &mut stages)?;
    }
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let rows: Vec<serde_json::Value> = stages
            .iter()
            .map(|s| {
                serde_json::json!({
                    "id": s.id, "label": s.label, "bytes": s.bytes, "records": s.records,
                    "median_s": s.median.as_secs_f64(), "mb_s": s.mb_s(),
                })
            })
            .collect();
        let doc = serde_json::json!({ "runs": args.runs, "threads": 1, "stages": rows });
        writeln!(stdout, "{doc}").map_err(|_| "stdout: write failed".to_owned())?;
    } else {
        for s in &stages {
            writeln!(
                stdout,
                "{:<60} {:>8.1} MB/s  ({:.1} MB, {} records, median of {} passes {:.1} ms)",
                s.label,
                s.mb_s(),
                s.bytes as f64 / 1e6,
                s.records,
                args.runs,
                s.median.as_secs_f64() * 1e3
            )
            .map_err(|_| "stdout: write failed".to_owned())?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "in_process: {e}");
            ExitCode::FAILURE
        }
    }
}
