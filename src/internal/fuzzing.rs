//! Fuzz harness bodies, one per parser and entry point. Each `fuzz/fuzz_targets/<name>.rs` calls
//! the function of the same name; `tests/fuzz_replay.rs` replays `fuzz/corpus/` and
//! `fuzz/regressions/` through them under `cargo test`.
//!
//! Targets: [`hl7v2`] (one message: parse, validate, inspect, fmt round trip), [`mllp`]
//! (deframing), [`batch`] (record splitting and the batch protocol), [`detect`] (format sniffing)
//! [`pipeline`] (`ops::run` on bytes, every command), [`fhir_json`] and [`fhir_xml`] (one FHIR
//! resource: read, validate, inspect, canonical round trip in both syntaxes), [`x12`] (X12
//! interchanges through every command, with X12 marker injection), [`astm`] (ASTM messages,
//! framed or not, through every command, with ASTM marker injection, and the E1381 splitter
//! fed one byte at a time against the whole input), [`dicom`] (DICOM files through every
//! command, text values rewritten into markers), [`ncpdp`] (NCPDP Telecommunication D.0
//! transmissions through every command, with marker injection, canonical round trip and Safe
//! Harbor in process), [`ncpdp_script`] (NCPDP SCRIPT XML through every command, with marker
//! injection, canonical round trip and Safe Harbor in process) and, with the `mcp`
//! feature, `mcp` (the MCP tool dispatcher).
//!
//! Oracles, in every target (a failed oracle panics, which is how libFuzzer sees it):
//! - no panic and no hang (loops are bounded by the input; libFuzzer's `-timeout` backs this up);
//! - every diagnostic location lies inside the input (offsets, and HL7 positions that name an
//!   existing segment, field, repetition, component and subcomponent);
//! - round trip where a serializer exists: parse, fmt, parse gives the same model (up to the
//!   trailing empty parts that canonical form drops), and fmt is idempotent;
//! - differential: a reader that hands out one byte at a time sees the same records and frames
//!   as one that hands out the whole input;
//! - no leak: every rendered diagnostic, failure line, value-free JSON item and log line matches
//!   the grammar of codes, schema names and numbers, and no value run of the input shows in it
//!   (see `oracle`). Each target runs twice: on the input as given, and on the input with every
//!   value rewritten into a unique marker token (`MKR1X`, ...), where the check is exact.
//!
//! The harnesses stand in for `ops`: they grant a [`Disclosure`] to run the data-channel writers
//! (fmt and the model writer) for the round trip. `tests/architecture.rs` allows
//! `Disclosure::grant`, `expose_value` and `.raw()` under `src/internal/` for that reason.
//!
//! What it does not do: print anything, or run outside tests and fuzzing.

pub(crate) mod fhir_values;
mod logs;
mod oracle;
pub(crate) mod values;

use std::io::{self, BufReader};

use serde_json::Value;

use crate::diag::{Code, Diagnostic, Location, Severity};
use crate::formats::hl7v2::stream::{self, Kind};
use crate::formats::hl7v2::{self, batch, fmt, inspect, validate, write};
use crate::formats::{Format, mllp};
use crate::limits::Limits;
use crate::ops::{self, Command, Item, Outcome, Request, Sink, Source, Status};
use crate::phi::{Disclosure, Phi};

use oracle::Secondary;

/// Runs `one` on the input as given, then on its marker-injected rewrite.
fn both_modes(data: &[u8], one: fn(&[u8], bool)) {
    logs::install();
    one(data, false);
    one(&values::inject_markers(data), true);
}

/// Limits small enough that the fuzzer reaches every limit path.
fn tight_limits() -> Limits {
    Limits { max_input_bytes: 48, max_segments: 4, max_field_bytes: 16, max_depth: 4, max_records: 3 }
}

// ---- hl7v2 --------------------------------------------------------------------------------

/// One HL7 v2 message: parse, validate (tolerant and strict), inspect, fmt round trip.
pub fn hl7v2(data: &[u8]) {
    both_modes(data, hl7v2_one);
}

fn hl7v2_one(input: &[u8], markers: bool) {
    let mut sec = Secondary::default();
    let len = input.len() as u64;
    for limits in [Limits::default(), tight_limits()] {
        match hl7v2::parse(input.to_vec(), &limits) {
            Err(fatal) => {
                let expected = [
                    Code::NO_MSH_SEGMENT,
                    Code::MSH_TOO_SHORT,
                    Code::INVALID_ENCODING_CHARACTERS,
                    Code::CLI_INPUT_TOO_LARGE,
                ];
                assert!(expected.contains(&fatal.code), "unexpected fatal code {}", fatal.code.as_str());
                oracle::offset_inside(&fatal, len);
                sec.failure(Code::CLI_PARSE_FAILED, Some(fatal));
            }
            Ok(msg) => {
                message_oracles(&msg, len, &mut sec);
                round_trip(&msg);
            }
        }
    }
    sec.log(logs::take());
    sec.check(input, markers);
}

/// Validate (both modes) and inspect one parsed message; positions and rendering.
fn message_oracles(msg: &hl7v2::Message, limit: u64, sec: &mut Secondary) {
    let mut tolerant = Vec::new();
    for strict in [false, true] {
        let findings = validate::validate(msg, validate::Options { strict, ..Default::default() });
        assert!(findings.len() <= validate::MAX_FINDINGS, "more findings than MAX_FINDINGS");
        for d in &findings {
            assert!(!(strict && d.severity == Severity::Warning), "a warning survived strict mode");
            oracle::offset_inside(d, limit);
            oracle::hl7_position_inside(msg, d);
            sec.diagnostic(d);
        }
        sec.json_item(&verdict_json(&findings));
        if !strict {
            tolerant = findings;
        }
    }
    let summary = inspect::summarize(msg, &tolerant);
    assert_eq!(summary.segments.values().map(|n| *n as usize).sum::<usize>(), summary.segment_count, "inspect counts");
    assert_eq!(summary.segment_count, msg.segment_count(), "inspect segment count");
    let json = serde_json::to_vec(&summary).unwrap_or_else(|_| panic!("inspect summary does not serialize"));
    sec.json_item(&json);
}

fn verdict_json(findings: &[Diagnostic]) -> Vec<u8> {
    let mut json = Vec::new();
    json.extend_from_slice(b"{\"format\":\"hl7\",\"valid\":");
    json.extend_from_slice(if validate::is_valid(findings) { b"true" } else { b"false" });
    json.extend_from_slice(b",\"findings\":");
    ops::findings_json(findings, &mut json);
    json.push(b'}');
    json
}

/// parse, fmt, parse: the same model up to dropped trailing empties; fmt is idempotent.
#[expect(clippy::disallowed_methods, reason = "the fuzz harness stands in for ops")]
fn round_trip(msg: &hl7v2::Message) {
    // Stands in for ops (see the module doc): the writers need the capability.
    let disclosure = Disclosure::grant();
    let mut canon = Vec::new();
    fmt::canonical(msg, &disclosure, &mut canon);
    // Canonical form can be longer than the input (a final CR is added), so it is parsed under
    // the default limits: the tight ones would refuse it for its size alone.
    let again = match hl7v2::parse(canon.clone(), &Limits::default()) {
        Ok(m) => m,
        Err(d) => panic!("the canonical form does not parse: {} at {}", d.code.as_str(), d.location),
    };
    let mut canon2 = Vec::new();
    fmt::canonical(&again, &disclosure, &mut canon2);
    assert!(canon == canon2, "fmt is not idempotent");
    assert_eq!(again.segment_count(), msg.segment_count(), "fmt changed the number of segments");
    let mut before = model(msg, &disclosure);
    let after = model(&again, &disclosure);
    normalize_model(&mut before);
    assert!(before == after, "parse, fmt, parse changed the model");
    // The named model drops empty parts itself: equal as it is, and valid JSON.
    let named = named_model(msg, &disclosure);
    assert!(named == named_model(&again, &disclosure), "parse, fmt, parse changed the named model");
}

fn named_model(msg: &hl7v2::Message, disclosure: &Disclosure) -> Value {
    let mut out = Vec::new();
    write::named_model_json(msg, disclosure, &mut out);
    serde_json::from_slice(&out).unwrap_or_else(|_| panic!("the named model is not valid JSON"))
}

fn model(msg: &hl7v2::Message, disclosure: &Disclosure) -> Value {
    let mut out = Vec::new();
    write::model_json(msg, disclosure, &mut out);
    serde_json::from_slice(&out).unwrap_or_else(|_| panic!("the parse model is not valid JSON"))
}

/// Drops what canonical form drops: trailing empty fields, repetitions, components and
/// subcomponents, and collapses a list left with one part to that part.
fn normalize_model(v: &mut Value) {
    let Some(segments) = v.get_mut("segments").and_then(Value::as_array_mut) else { return };
    for seg in segments {
        let header = matches!(seg.get("id").and_then(Value::as_str), Some("MSH" | "FHS" | "BHS"));
        let Some(fields) = seg.get_mut("fields").and_then(Value::as_array_mut) else { continue };
        let fixed = if header { 2.min(fields.len()) } else { 0 };
        for f in fields.iter_mut().skip(fixed) {
            if let Some(reps) = f.as_array_mut() {
                reps.iter_mut().for_each(normalize_part);
                while reps.last().is_some_and(is_empty_text) {
                    reps.pop();
                }
            }
        }
        while fields.len() > fixed && fields.last().is_some_and(|f| f.as_array().is_some_and(Vec::is_empty)) {
            fields.pop();
        }
    }
}

fn normalize_part(p: &mut Value) {
    if let Value::Array(items) = p {
        items.iter_mut().for_each(normalize_part);
        while items.last().is_some_and(is_empty_text) {
            items.pop();
        }
        match items.len() {
            0 => *p = Value::String(String::new()),
            1 => *p = items.pop().unwrap_or_default(),
            _ => {}
        }
    }
}

fn is_empty_text(v: &Value) -> bool {
    v.as_str().is_some_and(str::is_empty)
}

// ---- mllp ---------------------------------------------------------------------------------

/// MLLP deframing.
pub fn mllp(data: &[u8]) {
    both_modes(data, mllp_one);
}

/// A frame, comparable.
#[derive(Debug, PartialEq, Eq)]
enum FrameView {
    Content { len: usize, offset: u64, end_without_cr: bool },
    Problem { code: Code, offset: u64 },
}

fn frames(reader: impl io::BufRead, limits: Limits, input_len: usize) -> Vec<FrameView> {
    let mut out = Vec::new();
    for f in mllp::Deframer::new(reader, limits) {
        let f = f.unwrap_or_else(|_| panic!("reading from memory cannot fail"));
        out.push(match f {
            mllp::Frame::Content { bytes, offset, end_without_cr } => {
                FrameView::Content { len: bytes.len(), offset, end_without_cr }
            }
            mllp::Frame::Problem { code, offset } => FrameView::Problem { code, offset },
        });
        assert!(out.len() <= input_len + 1, "the deframer does not stop");
    }
    out
}

fn mllp_one(input: &[u8], markers: bool) {
    let mut sec = Secondary::default();
    for limits in [Limits::default(), tight_limits()] {
        let whole = frames(input, limits, input.len());
        let chunked = frames(BufReader::with_capacity(1, input), limits, input.len());
        assert_eq!(whole, chunked, "frames depend on how the input is read");
        let mut last_end = 0u64;
        for f in &whole {
            match *f {
                FrameView::Content { len, offset, .. } => {
                    let start = offset as usize;
                    assert!(
                        start >= 1 && input.get(start - 1) == Some(&mllp::START),
                        "content does not follow a start block"
                    );
                    let content = input.get(start..start + len).unwrap_or_else(|| panic!("frame past the input"));
                    assert!(
                        !content.contains(&mllp::START) && !content.contains(&mllp::END),
                        "a frame holds a block byte"
                    );
                    assert_eq!(input.get(start + len), Some(&mllp::END), "content does not end at an end block");
                    assert!(offset > last_end || last_end == 0, "frames out of order");
                    last_end = offset;
                }
                FrameView::Problem { code, offset } => {
                    let expected =
                        [Code::MLLP_FRAME_TRUNCATED, Code::MLLP_DATA_OUTSIDE_FRAME, Code::CLI_INPUT_TOO_LARGE];
                    assert!(expected.contains(&code), "unexpected MLLP problem {}", code.as_str());
                    assert!((offset as usize) < input.len(), "problem offset past the input");
                    let d = Diagnostic::new(code, Location::Offset(offset));
                    sec.diagnostic(&d);
                    sec.failure(code, Some(d));
                }
            }
        }
    }
    sec.log(logs::take());
    sec.check(input, markers);
}

// ---- batch --------------------------------------------------------------------------------

/// Record splitting (`stream::Splitter`) and the batch protocol (`batch::Tracker`).
pub fn batch(data: &[u8]) {
    both_modes(data, batch_one);
}

fn split(reader: impl io::BufRead, limits: Limits, input_len: usize) -> Vec<stream::Raw> {
    let mut out = Vec::new();
    for r in stream::Splitter::new(reader, limits) {
        out.push(r.unwrap_or_else(|_| panic!("reading from memory cannot fail")));
        assert!(out.len() <= input_len + 1, "the splitter does not stop");
    }
    out
}

fn same_records(a: &[stream::Raw], b: &[stream::Raw]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.kind == y.kind && x.offset == y.offset && x.bytes == y.bytes)
}

/// Records are in order, are exactly the input bytes at their offsets, and what lies between
/// them is white space (or a leading BOM).
fn records_cover(input: &[u8], records: &[stream::Raw]) {
    let mut pos = 0usize;
    for r in records {
        let start = r.offset as usize;
        assert!(start >= pos, "records overlap or are out of order");
        let gap = &input[pos..start];
        let gap = if pos == 0 { gap.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(gap) } else { gap };
        assert!(gap.iter().all(u8::is_ascii_whitespace), "bytes lost between records");
        let Some(bytes) = &r.bytes else {
            pos = start;
            continue;
        };
        assert_eq!(input.get(start..start + bytes.len()), Some(&bytes[..]), "record bytes differ from the input");
        let body = if start == 0 { bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes) } else { bytes };
        assert!(body.iter().any(|b| !b.is_ascii_whitespace()), "a record holds only white space");
        if let Kind::Envelope(_) = r.kind {
            let line_end = body.iter().position(|&b| b == b'\r' || b == b'\n').unwrap_or(body.len());
            assert!(
                body[line_end..].iter().all(|&b| b == b'\r' || b == b'\n'),
                "an envelope record holds more than one line"
            );
        }
        pos = start + bytes.len();
    }
    let tail = &input[pos..];
    let tail = if pos == 0 { tail.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(tail) } else { tail };
    assert!(tail.iter().all(u8::is_ascii_whitespace), "bytes lost after the last record");
}

fn batch_one(input: &[u8], markers: bool) {
    let mut sec = Secondary::default();
    let len = input.len() as u64;
    let limits = Limits::default();
    let whole = split(input, limits, input.len());
    let chunked = split(BufReader::with_capacity(1, input), limits, input.len());
    assert!(same_records(&whole, &chunked), "records depend on how the input is read");
    records_cover(input, &whole);
    // The in-memory splitter (used for MLLP frame contents) agrees with the reader.
    let slices = stream::split_slice(input);
    let from_reader: Vec<(Kind, usize, usize)> =
        whole.iter().map(|r| (r.kind, r.offset as usize, r.bytes.as_ref().map_or(0, Vec::len))).collect();
    let from_slice: Vec<(Kind, usize, usize)> = slices.iter().map(|(k, r)| (*k, r.start, r.len())).collect();
    assert_eq!(from_reader, from_slice, "split_slice disagrees with the Splitter");
    let tight = split(input, tight_limits(), input.len());
    assert!(tight.windows(2).all(|w| w[0].offset < w[1].offset), "records out of order under tight limits");

    let mut tracker = batch::Tracker::default();
    let mut delims = None;
    for raw in whole {
        let Some(bytes) = raw.bytes else { continue };
        let end = raw.offset + bytes.len() as u64;
        let options = validate::Options::default();
        match raw.kind {
            Kind::Message => {
                tracker.message();
                match hl7v2::parse::parse_at(bytes, raw.offset, &limits) {
                    Ok(msg) => message_oracles(&msg, len, &mut sec),
                    Err(fatal) => {
                        assert!(
                            matches!(fatal.location, Location::Offset(n) if n >= raw.offset && n <= end),
                            "fatal outside its record"
                        );
                        sec.failure(Code::CLI_PARSE_FAILED, Some(fatal));
                    }
                }
            }
            Kind::Envelope(kind) => match hl7v2::parse::parse_envelope(bytes, raw.offset, &limits, delims) {
                Ok(msg) => {
                    if matches!(kind, stream::Envelope::Fhs | stream::Envelope::Bhs) {
                        delims = Some(msg.delimiters());
                    }
                    for d in validate::validate_envelope(&msg, options) {
                        oracle::offset_inside(&d, len);
                        oracle::hl7_position_inside(&msg, &d);
                        sec.diagnostic(&d);
                    }
                    for d in tracker.envelope(kind, Some(&msg)) {
                        if matches!(d.code, Code::BATCH_COUNT_INVALID | Code::BATCH_COUNT_MISMATCH) {
                            oracle::hl7_position_inside(&msg, &d);
                        }
                        tracker_diagnostic(&d, &mut sec);
                    }
                }
                Err(fatal) => {
                    assert!(
                        matches!(fatal.location, Location::Offset(n) if n >= raw.offset && n <= end),
                        "fatal outside its record"
                    );
                    sec.failure(Code::CLI_PARSE_FAILED, Some(fatal));
                    for d in tracker.envelope(kind, None) {
                        tracker_diagnostic(&d, &mut sec);
                    }
                }
            },
        }
    }
    for d in tracker.finish() {
        tracker_diagnostic(&d, &mut sec);
    }
    assert!(tracker.finish().is_empty(), "finish is not idempotent");
    sec.log(logs::take());
    sec.check(input, markers);
}

fn tracker_diagnostic(d: &Diagnostic, sec: &mut Secondary) {
    let Location::Hl7(p) = d.location else { panic!("a batch finding without an HL7 position") };
    // A count is located at its own field; a trailer recognised by its first three bytes may
    // have another id under the inherited separator (then `segment[1]`).
    let count = matches!(d.code, Code::BATCH_COUNT_INVALID | Code::BATCH_COUNT_MISMATCH);
    let envelope = matches!(p.segment, Some("FHS" | "BHS" | "BTS" | "FTS")) || (count && p.segment.is_none());
    assert!(envelope && p.index == 1, "batch finding not on an envelope segment");
    sec.diagnostic(d);
}

// ---- detect -------------------------------------------------------------------------------

/// Format detection.
pub fn detect(data: &[u8]) {
    logs::install();
    let mut sec = Secondary::default();
    let result = crate::detect::detect(data);
    let body = crate::detect::skip_bom_and_space(data);
    assert!(data.ends_with(body) && body.first().is_none_or(|b| !b.is_ascii_whitespace()), "skip_bom_and_space");
    match result {
        Ok(format) => {
            // The detected format is the one whose signature matches, and no other's does.
            assert!(format.sniff(body, data), "{} detected without its signature", format.as_str());
            let others = Format::ALL.iter().filter(|f| **f != format && f.sniff(body, data)).count();
            assert_eq!(others, 0, "detected although another signature matches");
        }
        Err(code) => {
            let expected = [Code::CLI_EMPTY_INPUT, Code::CLI_FORMAT_UNDETECTED, Code::CLI_FORMAT_AMBIGUOUS];
            assert!(expected.contains(&code), "unexpected detection code {}", code.as_str());
            assert!(code != Code::CLI_EMPTY_INPUT || body.is_empty(), "empty input that is not empty");
            sec.failure(code, None);
        }
    }
    // A BOM and white space in front change nothing for text formats (a binary format's
    // signature may sit at a fixed offset).
    let mut padded = b"\xEF\xBB\xBF \r\n\t".to_vec();
    padded.extend_from_slice(data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data));
    let binary = |b: &[u8]| {
        let body = crate::detect::skip_bom_and_space(b);
        Format::ALL.iter().any(|f| !f.is_text() && f.sniff(body, b))
    };
    if !binary(data) && !binary(&padded) {
        assert_eq!(crate::detect::detect(&padded), result, "leading BOM or white space changed detection");
    }
    sec.log(logs::take());
    sec.check(data, false);
}

// ---- pipeline -----------------------------------------------------------------------------

/// `ops::run` on bytes, for every command; the outcome, the failure line and the value-free
/// items are checked; parse and fmt data are the data channel and exempt (fmt output must be a
/// fixed point of fmt).
pub fn pipeline(data: &[u8]) {
    both_modes(data, pipeline_one);
}

/// A sink that keeps what it receives.
#[derive(Debug, Default)]
struct Collect {
    items: Vec<Collected>,
    bytes: Vec<u8>,
}

#[derive(Debug)]
struct Collected {
    record: Option<u64>,
    json: Vec<u8>,
    findings: Vec<Diagnostic>,
}

impl Sink for Collect {
    fn item(&mut self, item: Item<'_>) -> io::Result<()> {
        match item {
            Item::Bytes(b) => self.bytes.extend_from_slice(b),
            Item::Json { record, json, findings, .. } => {
                self.items.push(Collected { record, json: json.to_vec(), findings: findings.to_vec() })
            }
        }
        Ok(())
    }
}

fn run_op(input: &[u8], command: Command, format: Option<&str>, strict: bool) -> (Outcome, Collect) {
    let (format, framing) = format.and_then(crate::formats::resolve).map_or((None, None), |(f, fr)| (Some(f), fr));
    let request = Request {
        command,
        source: Source::Bytes(Phi::new(input.to_vec())),
        format,
        framing,
        limits: Limits::default(),
        strict,
        unsafe_show_values: false,
        ndjson: false,
        to: None,
        convert: crate::convert::Options::default(),
        policy: None,
        key: None,
        model: crate::formats::codec::ModelShape::Positional,
        structures: None,
        fhir: crate::formats::fhir::checks::Checks::default(),
    };
    let mut sink = Collect::default();
    let outcome = ops::run(request, &mut sink);
    (outcome, sink)
}

fn pipeline_one(input: &[u8], markers: bool) {
    let mut sec = Secondary::default();
    let len = input.len() as u64;
    let runs = [
        (Command::Parse, None, false),
        (Command::Validate, None, false),
        (Command::Validate, None, true),
        (Command::Inspect { detail: Default::default() }, None, false),
        (Command::Inspect { detail: crate::formats::codec::Detail::Inventory }, None, false),
        (Command::Fmt { check: false }, None, false),
        (Command::Fmt { check: true }, None, false),
        (Command::Convert, None, false),
    ];
    // Every name `--format` accepts (each registered format, and the framings' aliases).
    let forced = crate::formats::accepted_names().into_iter().map(|name| (Command::Validate, Some(name), false));
    for (command, format, strict) in runs.into_iter().chain(forced) {
        let (outcome, got) = run_op(input, command, format, strict);
        outcome_ok(&outcome, &got, command);
        if command == Command::Convert {
            converted_bundles_valid(&got);
        }
        for item in &got.items {
            sec.json_item(&item.json);
            for d in &item.findings {
                oracle::offset_inside(d, len);
                sec.diagnostic(d);
            }
        }
        if let Some(code) = outcome.code {
            if let Some(cause) = &outcome.cause {
                oracle::offset_inside(cause, len);
            }
            sec.failure(code, outcome.cause);
        }
        if command == (Command::Fmt { check: false }) && outcome.status == Status::Success && !got.bytes.is_empty() {
            fmt_fixed_point(&got.bytes);
        }
    }
    sec.log(logs::take());
    sec.check(input, markers);
}

/// Outcome invariants: status, exit code and code agree; records are numbered in order.
/// The converter's promise: whatever the message holds, its Bundle has no error of FHIR
/// validity (what it cannot map is a convert finding, never an invalid element).
fn converted_bundles_valid(got: &Collect) {
    for item in &got.items {
        for d in &item.findings {
            if matches!(d.location, Location::Fhir(_)) {
                assert!(!d.severity.is_failure(), "convert made invalid FHIR: {} at {}", d.code.as_str(), d.location);
            }
        }
    }
}

fn outcome_ok(o: &Outcome, got: &Collect, command: Command) {
    assert!(o.excerpt.is_none(), "an excerpt without --unsafe-show-values");
    match o.status {
        Status::Success => assert!(o.exit == 0 && o.code.is_none() && o.cause.is_none(), "success with a code"),
        Status::Verdict => assert!(matches!(o.exit, 1 | 65) && o.code.is_none(), "verdict with a code or a bad exit"),
        Status::Failed => {
            let code = o.code.unwrap_or_else(|| panic!("failure without a code"));
            assert_eq!(o.exit, crate::error::exit_code_for(code), "failure exit code");
            assert!(got.items.is_empty() || code == Code::CLI_INPUT_TOO_LARGE, "a failed command emitted items");
        }
    }
    let numbers: Vec<Option<u64>> = got.items.iter().map(|i| i.record).collect();
    if numbers.iter().any(Option::is_none) {
        assert!(numbers.len() <= 1, "several items without record numbers");
    } else if matches!(command, Command::Fmt { .. } | Command::Convert) {
        // Envelope records (BHS, FHS) count but give no item here.
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "records out of order");
    } else {
        let expected: Vec<Option<u64>> = (1..=numbers.len() as u64).map(Some).collect();
        assert_eq!(numbers, expected, "records not numbered 1..n");
    }
}

// ---- x12 ----------------------------------------------------------------------------------

/// X12 interchanges through `ops::run`, every command (the pipeline's oracles), on the input as
/// given and with every element value after the ISA rewritten into a unique marker token.
pub fn x12(data: &[u8]) {
    logs::install();
    pipeline_one(data, false);
    pipeline_one(&x12_markers(data), true);
}

/// The input with every element value (after the ISA, whose fixed widths are kept) replaced by
/// `MKR<n>X`; segment ids and separators are kept. Input without a readable ISA is returned as
/// it is.
fn x12_markers(data: &[u8]) -> Vec<u8> {
    let Some(isa) = crate::formats::x12::read::isa(data) else { return data.to_vec() };
    let d = isa.delimiters;
    let mut out = data[..isa.len].to_vec();
    let mut n = 0u32;
    let mut at_id = true;
    let mut in_run = false;
    for &b in &data[isa.len..] {
        let sep =
            b == d.element || b == d.component || Some(b) == d.repetition || b == d.segment || b == b'\r' || b == b'\n';
        if sep {
            if b == d.segment || b == b'\n' || b == b'\r' {
                at_id = true;
            } else if b == d.element {
                at_id = false;
            }
            in_run = false;
            out.push(b);
        } else if at_id {
            out.push(b);
        } else if !in_run {
            in_run = true;
            n += 1;
            out.extend_from_slice(values::MARKER_PREFIX);
            out.extend_from_slice(n.to_string().as_bytes());
            out.push(b'X');
        }
    }
    out
}

// ---- astm ---------------------------------------------------------------------------------

/// ASTM messages (unframed or in E1381 frames) through `ops::run`, every command (the pipeline's
/// oracles), on the input as given and with every field value rewritten into a unique marker
/// token; and the splitter fed one byte at a time gives the pieces it gives on the whole input.
pub fn astm(data: &[u8]) {
    logs::install();
    astm_split_differential(data);
    pipeline_one(data, false);
    pipeline_one(&astm_markers(data), true);
}

/// The pieces of the ASTM splitter, value-free (kind, offset, length or code).
fn astm_pieces(reader: Box<dyn io::BufRead + '_>, framed: bool, limits: Limits) -> Vec<(u8, u64, usize, Code)> {
    use crate::formats::codec::Piece;
    crate::formats::astm::split::Splitter::new(reader, framed, limits)
        .map(|p| match p {
            Ok(Piece::Record { offset, bytes, .. }) => {
                let len = bytes.as_ref().map_or(usize::MAX, Vec::len);
                if let Some(mut b) = bytes {
                    crate::phi::wipe(&mut b);
                }
                (0, offset, len, Code::CLI_INTERNAL)
            }
            Ok(Piece::Problem { code, offset, .. }) => (1, offset, 0, code),
            Ok(_) => (2, 0, 0, Code::CLI_INTERNAL),
            Err(_) => (3, 0, 0, Code::CLI_INTERNAL),
        })
        .collect()
}

fn astm_split_differential(data: &[u8]) {
    let framed =
        data.iter().find(|b| !b.is_ascii_whitespace()).is_some_and(|&b| crate::formats::astm::split::starts_framed(b));
    for limits in [Limits::default(), tight_limits()] {
        let whole = astm_pieces(Box::new(data), framed, limits);
        let one = astm_pieces(Box::new(BufReader::with_capacity(1, data)), framed, limits);
        assert!(whole == one, "the ASTM splitter depends on how the input is read");
        for &(kind, offset, _, _) in &whole {
            assert!(kind > 1 || offset <= data.len() as u64, "a piece past the end of the input");
        }
    }
}

/// The input with every field value (after a record's type; H-2 and the E1381 frame bytes
/// kept) replaced by `MKR<n>X`.
fn astm_markers(data: &[u8]) -> Vec<u8> {
    use crate::formats::astm::read::Delimiters;
    use crate::formats::astm::split::{ETB, ETX, STX};
    let d = data
        .iter()
        .position(|&b| b == b'H')
        .and_then(|i| Delimiters::of_header(data.get(i..(i + 6).min(data.len())).unwrap_or_default()))
        .unwrap_or_default();
    let mut out = Vec::with_capacity(data.len());
    let mut n = 0u32;
    let mut at_id = true;
    let mut in_run = false;
    let mut keep_next = false;
    let mut trailer = false;
    for &b in data {
        if keep_next {
            keep_next = false;
            out.push(b);
            continue;
        }
        if trailer {
            trailer = b != b'\n';
            out.push(b);
            continue;
        }
        let sep = b == d.field || b == d.component || b == d.repeat || b == d.escape || b < 0x20;
        if sep {
            match b {
                STX => keep_next = true,
                ETX | ETB => trailer = true,
                _ => {}
            }
            if b == b'\r' || b == b'\n' || b == STX {
                at_id = true;
            } else if b == d.field {
                at_id = false;
            }
            in_run = false;
            out.push(b);
        } else if at_id {
            out.push(b);
        } else if !in_run {
            in_run = true;
            n += 1;
            out.extend_from_slice(values::MARKER_PREFIX);
            out.extend_from_slice(n.to_string().as_bytes());
            out.push(b'X');
        }
    }
    out
}

// ---- ncpdp --------------------------------------------------------------------------------

/// NCPDP Telecommunication D.0 transmissions through `ops::run`, every command (the pipeline's
/// oracles), on the input as given and with every value rewritten into a unique marker token;
/// and, in process, the canonical form read again gives the same model and the same canonical
/// form, and Safe Harbor's output reads again and holds no marker.
pub fn ncpdp(data: &[u8]) {
    logs::install();
    ncpdp_round_trip(data);
    pipeline_one(data, false);
    let marked = ncpdp_markers(data);
    ncpdp_round_trip(&marked);
    pipeline_one(&marked, true);
}

#[expect(clippy::disallowed_methods, reason = "the fuzz harness stands in for ops")]
fn ncpdp_round_trip(data: &[u8]) {
    use crate::formats::ncpdp::{read, validate, write};
    let disclosure = Disclosure::grant();
    for limits in [Limits::default(), tight_limits()] {
        let line = data.split(|&b| b == b'\n').next().unwrap_or_default();
        let Ok(doc) = read::read(line.to_vec(), &limits) else { continue };
        let findings = validate::validate(&doc, validate::Options::default());
        for d in &findings {
            assert!(oracle::location_ok(&d.location.to_string()), "an NCPDP location outside the grammar");
        }
        let _ = write::summarize(&doc, &findings);
        let (mut model, mut canonical) = (Vec::new(), Vec::new());
        write::model_json(&doc, &disclosure, &mut model);
        write::canonical(&doc, &disclosure, &mut canonical);
        assert!(write::is_canonical(&doc, &canonical, &disclosure) == doc.lf_terminated);
        let again = read::read(canonical.clone(), &limits).unwrap_or_else(|_| panic!("canonical NCPDP does not read"));
        let (mut model2, mut canonical2) = (Vec::new(), Vec::new());
        write::model_json(&again, &disclosure, &mut model2);
        write::canonical(&again, &disclosure, &mut canonical2);
        assert!(model == model2, "the canonical form changed the NCPDP model");
        assert!(canonical == canonical2, "NCPDP canonical form is not a fixed point");
        let findings2 = validate::validate(&again, validate::Options::default());
        assert!(findings == findings2, "the canonical form changed the NCPDP findings");
        static SAFE_HARBOR: std::sync::OnceLock<Option<crate::policy::Policy>> = std::sync::OnceLock::new();
        let policy =
            SAFE_HARBOR.get_or_init(|| crate::policy::load(include_bytes!("../../policy/safe-harbor.toml")).ok());
        if let Some(policy) = policy {
            let mut r = crate::policy::ncpdp::Redactor::new(policy, None);
            let mut out = Vec::new();
            r.redact(&doc, &disclosure, &mut out);
            let redacted = read::read(out.clone(), &limits);
            assert!(redacted.is_ok() || limits.max_field_bytes < 64, "redacted NCPDP does not read");
            assert!(
                memchr::memmem::find(&out, values::MARKER_PREFIX).is_none()
                    || memchr::memmem::find(line, values::MARKER_PREFIX).is_none(),
                "a marker survived Safe Harbor"
            );
            crate::phi::wipe(&mut out);
        }
        crate::phi::wipe(&mut model);
        crate::phi::wipe(&mut model2);
        crate::phi::wipe(&mut canonical);
        crate::phi::wipe(&mut canonical2);
    }
}

/// The input with every field value (after its two-character id; segment ids kept) and the
/// header's processor control number, service provider id and software vendor id replaced by
/// `MKR<n>X` (the header's fields padded to their width).
fn ncpdp_markers(data: &[u8]) -> Vec<u8> {
    use crate::formats::ncpdp::read::{FIELD_SEPARATOR, GROUP_SEPARATOR, SEGMENT_SEPARATOR};
    let mut n = 0u32;
    let mut marker = |width: usize| {
        n += 1;
        let mut m = values::MARKER_PREFIX.to_vec();
        m.extend_from_slice(n.to_string().as_bytes());
        m.push(b'X');
        if width > 0 {
            m.resize(width, b' ');
            m.truncate(width);
        }
        m
    };
    let mut out = Vec::with_capacity(data.len() + 64);
    let (header, fields): (usize, &[(usize, usize)]) =
        match crate::formats::ncpdp::read::kind_of(data.split(|&b| b == b'\n').next().unwrap_or_default()) {
            Some(crate::formats::ncpdp::read::Kind::Request) => (56, &[(10, 10), (23, 15), (46, 10)]),
            Some(crate::formats::ncpdp::read::Kind::Response) => (31, &[(8, 15)]),
            None => (0, &[]),
        };
    let mut h = data[..header.min(data.len())].to_vec();
    for &(at, width) in fields {
        if at + width <= h.len() {
            h[at..at + width].copy_from_slice(&marker(width));
        }
    }
    out.extend_from_slice(&h);
    // 0: before a field's id; 1, 2: in the id; 3: in the value (a run); 4: a kept value (AM).
    let mut state = 4u8;
    let mut id = [0u8; 2];
    for &b in &data[header.min(data.len())..] {
        if matches!(b, FIELD_SEPARATOR | SEGMENT_SEPARATOR | GROUP_SEPARATOR | b'\r' | b'\n') {
            state = if b == FIELD_SEPARATOR { 0 } else { 4 };
            out.push(b);
            continue;
        }
        match state {
            0 | 1 => {
                id[usize::from(state)] = b;
                state += 1;
                out.push(b);
                if state == 2 && id == *b"AM" {
                    state = 4;
                }
            }
            2 => {
                state = 3;
                out.extend_from_slice(&marker(0));
            }
            3 => {}
            _ => out.push(b),
        }
    }
    out
}

// ---- dicom --------------------------------------------------------------------------------

/// C-CDA documents through `ops::run`, every command (the pipeline's oracles: locations by
/// grammar, inspect summaries of template names and codes only), on the input as given and with
/// every attribute value and text run (the namespace URIs kept) rewritten into a unique marker.
pub fn ccda(data: &[u8]) {
    logs::install();
    pipeline_one(data, false);
    let keep = |run: &[u8]| {
        use crate::formats::ccda::read::{SDTC_NS, V3_NS, XSI_NS};
        run == V3_NS || run == SDTC_NS || run == XSI_NS
    };
    pipeline_one(&fhir_values::xml_markers_keeping(data, &keep), true);
}

/// NCPDP SCRIPT messages through `ops::run`, every command (the pipeline's oracles: locations
/// by grammar, inspect summaries of table names only), on the input as given and with every
/// attribute value and text run (the SCRIPT and XSI namespace URIs kept) rewritten into a unique
/// marker; and, in process, canonical form read again is a fixed point with the same findings,
/// and Safe Harbor's output reads again.
pub fn ncpdp_script(data: &[u8]) {
    logs::install();
    pipeline_one(data, false);
    script_round_trip(data);
    let keep = |run: &[u8]| {
        use crate::formats::ncpdp_script::{read::XSI_NS, tables::SCRIPT_NS};
        run == SCRIPT_NS || run == XSI_NS
    };
    let marked = fhir_values::xml_markers_keeping(data, &keep);
    pipeline_one(&marked, true);
    script_round_trip(&marked);
}

#[expect(clippy::disallowed_methods, reason = "the fuzz harness stands in for ops")]
fn script_round_trip(data: &[u8]) {
    use crate::formats::ncpdp_script::{read, validate, write};
    let disclosure = Disclosure::grant();
    let limits = Limits::default();
    let Ok(doc) = read::read(data.to_vec(), &limits) else { return };
    let findings = validate::validate(&doc, validate::Options::default());
    for d in &findings {
        assert!(oracle::location_ok(&d.location.to_string()), "a SCRIPT location outside the grammar");
    }
    let mut canonical = Vec::new();
    write::canonical(&doc, &disclosure, &mut canonical);
    let again = read::read(canonical.clone(), &limits).unwrap_or_else(|_| panic!("canonical SCRIPT does not read"));
    let mut canonical2 = Vec::new();
    write::canonical(&again, &disclosure, &mut canonical2);
    assert!(canonical == canonical2, "SCRIPT canonical form is not a fixed point");
    let codes = |f: &[Diagnostic]| f.iter().map(|d| (d.code, d.location.to_string())).collect::<Vec<_>>();
    let findings2 = validate::validate(&again, validate::Options::default());
    assert!(codes(&findings) == codes(&findings2), "the canonical form changed the SCRIPT findings");
    static SAFE_HARBOR: std::sync::OnceLock<Option<crate::policy::Policy>> = std::sync::OnceLock::new();
    let policy = SAFE_HARBOR.get_or_init(|| crate::policy::load(include_bytes!("../../policy/safe-harbor.toml")).ok());
    if let Some(policy) = policy {
        let mut r = crate::policy::ncpdp_script::Redactor::new(policy, None);
        let mut out = Vec::new();
        r.redact(&doc, &disclosure, &mut out);
        // Safe Harbor keeps code-shaped values some rules name (a marker is one), so no
        // marker check here: tests/ncpdp_script.rs checks marker-filled messages.
        assert!(read::read(out.clone(), &limits).is_ok(), "redacted SCRIPT does not read");
        crate::phi::wipe(&mut out);
    }
    crate::phi::wipe(&mut canonical);
    crate::phi::wipe(&mut canonical2);
}

/// DICOM files through `ops::run`, every command (the pipeline's oracles), on the input as given
/// and with every text value the reader finds (of six bytes or more) rewritten into a unique
/// marker token of the same length.
pub fn dicom(data: &[u8]) {
    logs::install();
    pipeline_one(data, false);
    let marked = dicom_markers(data);
    pipeline_one(&marked, true);
    dicom_safe_private(data);
    dicom_safe_private(&marked);
    dicom_clean(&marked);
}

/// In process, redact the marked input under policy/dicom-clean-descriptors.toml and
/// dicom-clean-structured-content.toml (a fixed key): what is written reads again, and no text
/// value (LO, SH, ST, LT, UT, UC: what `clean` decides) holds a marker (a marker is never a word
/// of the Clean options' vocabulary nor a short number: every `clean` falls back, and neither
/// policy keeps free text otherwise). A CS is kept by the profile's code rules when its syntax
/// is valid (a marker's is), as under every DICOM policy.
#[expect(clippy::disallowed_methods, reason = "the fuzz harness stands in for ops")]
fn dicom_clean(marked: &[u8]) {
    use crate::formats::dicom::read;
    static POLICIES: std::sync::OnceLock<Vec<crate::policy::Policy>> = std::sync::OnceLock::new();
    let policies = POLICIES.get_or_init(|| {
        [
            &include_bytes!("../../policy/dicom-clean-descriptors.toml")[..],
            include_bytes!("../../policy/dicom-clean-structured-content.toml"),
        ]
        .iter()
        .map(|p| crate::policy::load(p).unwrap_or_else(|_| panic!("a shipped clean policy does not load")))
        .collect()
    });
    let limits = Limits { max_input_bytes: 1 << 20, ..Limits::default() };
    let Ok(doc) = read::read(marked.to_vec(), &limits) else { return };
    let Ok(key) = crate::keys::Key::from_bytes(b"phiward fuzz key: not a secret!!".to_vec()) else {
        panic!("a 32-byte key")
    };
    let disclosure = Disclosure::grant();
    for policy in policies {
        let mut r = crate::policy::dicom::Redactor::new(policy, Some(&key));
        let mut out = Vec::new();
        r.redact(&doc, &disclosure, &mut out);
        if out.is_empty() {
            continue;
        }
        let again = read::read(out.clone(), &Limits { max_input_bytes: 1 << 22, ..Limits::default() })
            .unwrap_or_else(|_| panic!("the clean output does not read"));
        for (i, e) in again.elements().iter().enumerate() {
            let text = matches!(&e.vr.0, b"LO" | b"SH" | b"ST" | b"LT" | b"UT" | b"UC");
            let v = again.value(i).expose_value(&disclosure);
            assert!(!text || memchr::memmem::find(v, values::MARKER_PREFIX).is_none(), "a marker cleaned-kept");
        }
        crate::phi::wipe(&mut out);
    }
}

/// In process, redact under policy/dicom-retain-safe-private.toml (a fixed key): what it writes
/// reads again, and every private block element in it has its block's creator in its dataset
/// (a kept private attribute stays readable; PS3.15 E.3.10).
#[expect(clippy::disallowed_methods, reason = "the fuzz harness stands in for ops")]
fn dicom_safe_private(data: &[u8]) {
    use crate::formats::dicom::{dict, lex::Kind as DicomKind, read};
    static POLICY: std::sync::OnceLock<Option<crate::policy::Policy>> = std::sync::OnceLock::new();
    let Some(policy) =
        POLICY.get_or_init(|| crate::policy::load(include_bytes!("../../policy/dicom-retain-safe-private.toml")).ok())
    else {
        panic!("policy/dicom-retain-safe-private.toml does not load")
    };
    let limits = Limits { max_input_bytes: 1 << 20, ..Limits::default() };
    let Ok(doc) = read::read(data.to_vec(), &limits) else { return };
    let Ok(key) = crate::keys::Key::from_bytes(b"phiward fuzz key: not a secret!!".to_vec()) else {
        panic!("a 32-byte key")
    };
    let disclosure = Disclosure::grant();
    let mut r = crate::policy::dicom::Redactor::new(policy, Some(&key));
    let mut out = Vec::new();
    r.redact(&doc, &disclosure, &mut out);
    if out.is_empty() {
        return;
    }
    let again = read::read(out.clone(), &Limits { max_input_bytes: 1 << 22, ..Limits::default() })
        .unwrap_or_else(|_| panic!("the safe private output does not read"));
    let els = again.elements();
    let creators: std::collections::BTreeSet<(u32, u32)> = els
        .iter()
        .filter(|e| e.kind != DicomKind::Item && dict::is_private_creator(e.tag))
        .map(|e| (e.parent, e.tag >> 16 << 8 | e.tag & 0xFF))
        .collect();
    for e in els {
        let low = e.tag & 0xFFFF;
        if e.kind != DicomKind::Item
            && e.kind != DicomKind::Fragment
            && dict::is_private(e.tag)
            && !dict::is_private_creator(e.tag)
        {
            assert!(low >= 0x1000, "a private element outside a block written");
            assert!(
                creators.contains(&(e.parent, e.tag >> 16 << 8 | low >> 8)),
                "a private element written without its creator"
            );
        }
    }
    crate::phi::wipe(&mut out);
}

/// The input with each text value of six bytes or more replaced by `MKR<n>X` padded with
/// spaces (lengths and structure kept). Input the reader cannot read is returned as it is.
fn dicom_markers(data: &[u8]) -> Vec<u8> {
    use crate::formats::dicom::lex::Kind;
    let mut out = data.to_vec();
    let limits = Limits { max_input_bytes: 1 << 20, ..Limits::default() };
    let Ok(doc) = crate::formats::dicom::read::read(data.to_vec(), &limits) else { return out };
    let mut n = 0u32;
    for e in doc.elements() {
        if e.kind != Kind::Value || !e.vr.is_text() || e.length < 6 || e.tag == 0x0002_0010 {
            continue;
        }
        // The value follows the header: 8 bytes (implicit VR, or a short explicit VR), 12 (a
        // long explicit VR).
        let head: u64 = if e.syntax.explicit && e.vr.long_header() { 12 } else { 8 };
        let (Ok(start), Ok(len)) = (usize::try_from(e.offset + head), usize::try_from(e.length)) else { continue };
        let Some(slot) = out.get_mut(start..start + len) else { continue };
        n += 1;
        let marker = format!("{}{n}X", String::from_utf8_lossy(values::MARKER_PREFIX));
        if marker.len() > len {
            continue;
        }
        slot.fill(b' ');
        slot[..marker.len()].copy_from_slice(marker.as_bytes());
    }
    out
}

// ---- fhir ---------------------------------------------------------------------------------

/// One FHIR JSON resource: read, validate (tolerant and strict), inspect, canonical round trip
/// (JSON, and JSON to XML to JSON). Marker mode rewrites every JSON string value.
pub fn fhir_json(data: &[u8]) {
    logs::install();
    fhir_one(data, fhir_values::json_runs(data), false);
    let marked = fhir_values::json_markers(data);
    fhir_one(&marked, fhir_values::json_runs(&marked), true);
}

/// One FHIR XML resource, as [`fhir_json`]. Marker mode rewrites every attribute value (but
/// namespace declarations) and every text run.
pub fn fhir_xml(data: &[u8]) {
    logs::install();
    fhir_one(data, fhir_values::xml_runs(data), false);
    let marked = fhir_values::xml_markers(data);
    fhir_one(&marked, fhir_values::xml_runs(&marked), true);
}

/// Limits small enough that the fuzzer reaches the FHIR readers' limit paths.
fn tight_fhir_limits() -> Limits {
    Limits { max_input_bytes: 2048, max_segments: 64, max_field_bytes: 32, max_depth: 6, max_records: 3 }
}

fn fhir_one(input: &[u8], runs: Vec<Vec<u8>>, markers: bool) {
    use crate::formats::fhir;
    let mut sec = Secondary::default();
    let len = input.len() as u64;
    for limits in [Limits::default(), tight_fhir_limits()] {
        match fhir::read(input.to_vec(), &limits) {
            Err(fatal) => {
                assert!(fatal.severity == Severity::Fatal, "a read failure that is not fatal");
                oracle::offset_inside(&fatal, len);
                sec.failure(Code::CLI_PARSE_FAILED, Some(fatal));
            }
            Ok(doc) => {
                let mut tolerant = Vec::new();
                for strict in [false, true] {
                    let findings = fhir::validate::validate(&doc, fhir::validate::Options { strict, core_only: false });
                    for d in &findings {
                        assert!(!(strict && d.severity == Severity::Warning), "a warning survived strict mode");
                        oracle::offset_inside(d, len);
                        sec.diagnostic(d);
                    }
                    if !strict {
                        tolerant = findings;
                    }
                }
                let summary = fhir::inspect::summarize(&doc, &tolerant);
                let json =
                    serde_json::to_vec(&summary).unwrap_or_else(|_| panic!("inspect summary does not serialize"));
                sec.json_item(&json);
                fhir_round_trip(&doc, fhir::validate::is_valid(&tolerant));
            }
        }
    }
    sec.log(logs::take());
    sec.check_runs(runs, markers);
}

/// Canonical form reads back and is a fixed point, in the input's syntax; a valid document the
/// reader took without findings also survives JSON to XML to JSON unchanged (an invalid one need
/// not: a boolean written as a string has no XML form that keeps the mistake).
#[expect(clippy::disallowed_methods, reason = "the fuzz harness stands in for ops")]
fn fhir_round_trip(doc: &crate::formats::fhir::Document, valid: bool) {
    use crate::formats::fhir::{self, Syntax};
    // Stands in for ops (see the module doc): the writers need the capability.
    let disclosure = Disclosure::grant();
    let mut canon = Vec::new();
    fhir::fmt::canonical(doc, &disclosure, false, &mut canon);
    let again = match fhir::read(canon.clone(), &Limits::default()) {
        Ok(d) => d,
        Err(d) => panic!("the canonical form does not read: {} at {}", d.code.as_str(), d.location),
    };
    let mut canon2 = Vec::new();
    fhir::fmt::canonical(&again, &disclosure, false, &mut canon2);
    assert!(canon == canon2, "fhir fmt is not idempotent");
    if !valid || !doc.findings().is_empty() {
        return;
    }
    // XML cannot carry white space outside the narrative's div element (it is outside the
    // XHTML element): such a div comes back trimmed, which loses nothing of the resource.
    let padded_div = (0..doc.nodes().len() as u32).any(|i| {
        let node = doc.node(i);
        node.has_value()
            && node.ty.is_some_and(|t| crate::formats::fhir::definitions::type_name(t) == "xhtml")
            && doc.value_span(i).classify(|v| {
                v.first().is_some_and(u8::is_ascii_whitespace) || v.last().is_some_and(u8::is_ascii_whitespace)
            })
    });
    if padded_div {
        return;
    }
    let mut json = Vec::new();
    fhir::fmt::canonical_as(doc, Syntax::Json, &disclosure, false, &mut json);
    let mut xml = Vec::new();
    fhir::fmt::canonical_as(doc, Syntax::Xml, &disclosure, false, &mut xml);
    let from_xml = match fhir::read(xml, &Limits::default()) {
        Ok(d) => d,
        Err(d) => panic!("the XML form does not read: {} at {}", d.code.as_str(), d.location),
    };
    let mut json2 = Vec::new();
    fhir::fmt::canonical_as(&from_xml, Syntax::Json, &disclosure, false, &mut json2);
    assert!(json == json2, "JSON to XML to JSON changed the resource");
}

// ---- mcp ----------------------------------------------------------------------------------

/// The MCP tool dispatcher (`mcp::dispatch`, feature `mcp`). An input that is a JSON object
/// `{"name": .., "arguments": {..}}` is dispatched as it is; any other input picks a tool by its
/// first byte and passes the rest as `content`. Checked: no caught panic (`CLI_INTERNAL`), the
/// reply envelope agrees with itself, failed replies and value-free data follow the grammar, and
/// no value of the arguments shows in them.
#[cfg(feature = "mcp")]
pub fn mcp(data: &[u8]) {
    logs::install();
    mcp_one(data, false);
    if !data.starts_with(b"{") {
        let mut marked = data.get(..1).unwrap_or_default().to_vec();
        marked.extend_from_slice(&values::inject_markers(data.get(1..).unwrap_or_default()));
        mcp_one(&marked, true);
    }
}

#[cfg(feature = "mcp")]
fn mcp_one(input: &[u8], markers: bool) {
    use serde_json::Map;
    const TOOLS: [&str; 5] = ["parse", "validate", "inspect", "convert", "fmt"];
    let mut runs: Vec<Vec<u8>> = Vec::new();
    let (name, arguments) = match serde_json::from_slice::<Value>(input) {
        Ok(Value::Object(mut req)) if input.starts_with(b"{") => {
            let name = req.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
            let args = match req.remove("arguments") {
                Some(Value::Object(m)) => Some(m),
                _ => None,
            };
            collect_strings(&Value::Object(req), &mut runs);
            if let Some(m) = &args {
                for (k, v) in m {
                    runs.push(k.as_bytes().to_vec());
                    match v {
                        Value::String(text) if k == "content" => runs.extend(values::runs(text.as_bytes())),
                        other => collect_strings(other, &mut runs),
                    }
                }
            }
            (name, args)
        }
        _ => {
            let tool = TOOLS[usize::from(input.first().copied().unwrap_or(0)) % TOOLS.len()];
            let content = String::from_utf8_lossy(input.get(1..).unwrap_or_default()).into_owned();
            runs.extend(values::runs(content.as_bytes()));
            let mut args = Map::new();
            args.insert("content".to_owned(), Value::String(content));
            (tool.to_owned(), Some(args))
        }
    };
    let reply = crate::mcp::dispatch(&name, arguments, &crate::mcp::Config::default());
    assert_ne!(reply.code, Some(Code::CLI_INTERNAL), "dispatch caught a panic or an internal error");
    let mut sec = Secondary::default();
    match reply.code {
        Some(code) => {
            assert!(reply.status == Status::Failed && reply.data.is_none(), "a code without a failed status");
            assert_eq!(reply.exit, crate::error::exit_code_for(code), "failed reply exit code");
        }
        None => assert!(reply.status != Status::Failed && reply.data.is_some(), "a failed reply without a code"),
    }
    let mut value = reply.into_value();
    let data = value.as_object_mut().and_then(|o| o.remove("data"));
    sec.reply_envelope(&value);
    if let Some(data) = data {
        let items = match data.get("records").and_then(Value::as_array) {
            Some(list) => list.clone(),
            None => vec![data],
        };
        for item in items {
            sec.json_item(item.to_string().as_bytes());
        }
    }
    sec.log(logs::take());
    sec.check_runs(runs, markers);
}

/// Every string (and object key) of a JSON value, as value runs.
#[cfg(feature = "mcp")]
fn collect_strings(v: &Value, out: &mut Vec<Vec<u8>>) {
    match v {
        Value::String(s) => out.push(s.as_bytes().to_vec()),
        Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out)),
        Value::Object(map) => {
            for (k, val) in map {
                out.push(k.as_bytes().to_vec());
                collect_strings(val, out);
            }
        }
        _ => {}
    }
}

/// fmt's output is canonical: `fmt --check` accepts it and fmt returns it unchanged.
fn fmt_fixed_point(canonical: &[u8]) {
    let (check, _) = run_op(canonical, Command::Fmt { check: true }, None, false);
    assert_eq!(check.status, Status::Success, "fmt --check rejects fmt's own output");
    let (_, again) = run_op(canonical, Command::Fmt { check: false }, None, false);
    assert!(again.bytes == canonical, "fmt is not idempotent through ops");
}

/// Target `policy`: policy file bytes. Loading never panics; an error is a `POLICY_*` code (or
/// `CLI_INPUT_TOO_LARGE`) at a line and column inside the input, rendered `policy:L:C`; a policy
/// that loads lints, and redacts a fixed HL7 v2 message and FHIR resource without panicking, into
/// output that parses again.
#[expect(clippy::disallowed_methods, reason = "the fuzz harness stands in for ops")]
pub fn policy(data: &[u8]) {
    match crate::policy::load(data) {
        Err(e) => {
            assert!(e.code.as_str().starts_with("POLICY_") || e.code == Code::CLI_INPUT_TOO_LARGE);
            let lines = data.iter().filter(|b| **b == b'\n').count() as u32 + 1;
            assert!(e.line <= lines, "line outside the input");
            assert!(e.column as usize <= data.len() + 1, "column outside the input");
            let shown = e.diagnostic().location.to_string();
            assert!(shown.starts_with("policy:") && shown[7..].bytes().all(|b| b.is_ascii_digit() || b == b':'));
        }
        Ok(p) => {
            let _ = crate::policy::lint::lint(&p);
            let key = crate::keys::Key::from_bytes(b"fuzzing-key-0123456789".to_vec()).ok();
            let disclosure = Disclosure::grant();
            let limits = Limits::default();
            const HL7: &[u8] = b"MSH|^~\\&|A|B|C|D|20240101120000||ADT^A01|1|P|2.5.1\rPID|1||123^^^H^MR||DOE^JANE||19500101|F|||1 ST^^CITY^ST^02139\rOBX|1|TX|X^Y||free text||||||F\rZZZ|1\r";
            if let Ok(msg) = hl7v2::parse::parse(HL7.to_vec(), &limits) {
                let mut r = crate::policy::hl7v2::Redactor::new(&p, key.as_ref());
                let mut out = Vec::new();
                r.redact(&msg, &disclosure, &mut out);
                assert!(hl7v2::parse::parse(out, &limits).is_ok(), "redacted HL7 v2 does not parse");
            }
            const FHIR: &[u8] = br#"{"resourceType":"Patient","id":"p1","name":[{"family":"Doe"}],"birthDate":"1950-01-01","address":[{"postalCode":"02139"}],"managingOrganization":{"reference":"Organization/o1"}}"#;
            if let Ok(out) =
                crate::policy::fhir::redact_fhir_json(&p, key.as_ref(), FHIR.to_vec(), &limits, &disclosure, true)
            {
                assert!(crate::formats::fhir::read(out, &limits).is_ok(), "redacted FHIR does not parse");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The oracles catch planted leaks: each case plants a value where a diagnostic, a JSON item
    //! or a log line would carry it, and the check must fail.

    use super::*;

    fn fails(f: impl FnOnce() + std::panic::UnwindSafe) -> bool {
        std::panic::catch_unwind(f).is_err()
    }

    const INPUT: &[u8] = b"MSH|^~\\&|APP|FAC|||||ADT^A01|1|P|2.5\rPID|1||123||DOEJOHN^JANE\r";

    #[test]
    fn a_value_in_a_location_is_caught() {
        let leaked: &'static str = Box::leak(String::from("DOEJOHN").into_boxed_str());
        let d = Diagnostic::new(Code::UNKNOWN_SEGMENT, Location::Path(leaked, ""));
        assert!(fails(|| Secondary::default().diagnostic(&d)));
    }

    #[test]
    fn a_value_in_a_json_item_is_caught() {
        let json = br#"{"format":"hl7","valid":true,"findings":[{"code":"Z_SEGMENT","severity":"information","location":"DOEJOHN[1]"}]}"#;
        assert!(fails(|| Secondary::default().json_item(json)));
    }

    #[test]
    fn a_value_in_a_log_field_is_caught() {
        logs::install();
        let _ = logs::take();
        tracing::debug!(segment = "xDOEJOHNx", "unknown segment");
        let mut sec = Secondary::default();
        sec.log(logs::take());
        assert!(fails(move || sec.check(INPUT, false)));
    }

    #[test]
    fn a_marker_in_a_log_message_is_caught() {
        logs::install();
        let _ = logs::take();
        let marked = values::inject_markers(INPUT);
        tracing::debug!("segment {} unknown", "MKR7X");
        let mut sec = Secondary::default();
        sec.log(logs::take());
        assert!(fails(move || sec.check(&marked, true)));
    }

    /// The ASTM harness over deterministic mutations of a framed and an unframed message
    /// (bytes flipped, control bytes inserted, cut short): no oracle fails.
    #[test]
    fn astm_survives_mutations() {
        let plain: &[u8] = b"H|\\^&|||SYN^1|||||||P|LIS2-A2|20240315101500\rP|1|ID1||ID3|DOE^JANE||19800315|F\rO|1|S1||^^^GLU|R|20240315090000\rR|1|^^^GLU|5.6|mmol/L||N||F\rC|1|I|text|G\rL|1|N\r";
        let mut framed = vec![0x05];
        for (n, rec) in plain.split_inclusive(|&b| b == b'\r').enumerate() {
            let mut body = vec![b'0' + ((n + 1) % 8) as u8];
            body.extend_from_slice(rec);
            body.push(0x03);
            let sum = crate::formats::astm::split::checksum(&body);
            framed.push(0x02);
            framed.extend_from_slice(&body);
            framed.extend_from_slice(format!("{sum:02X}\r\n").as_bytes());
        }
        framed.push(0x04);
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for seed in [plain, framed.as_slice()] {
            for _ in 0..300 {
                let mut m = seed.to_vec();
                for _ in 0..=next(3) {
                    let at = next(m.len());
                    match next(4) {
                        0 => m[at] ^= 1 << next(8),
                        1 => m.insert(at, [0x02, 0x03, 0x17, 0x04, 0x05, 0x15, b'\r', b'\n', b'|', b'H'][next(10)]),
                        2 => m.truncate(at.max(1)),
                        _ => {
                            m.remove(at);
                        }
                    }
                    if m.is_empty() {
                        m.push(b'H');
                    }
                }
                astm(&m);
            }
        }
    }

    #[test]
    fn clean_runs_pass() {
        hl7v2(INPUT);
        pipeline(INPUT);
        batch(INPUT);
        mllp(b"\x0bMSH|^~\\&|A\r\x1c\r");
        detect(INPUT);
        astm(b"H|\\^&|||A\rP|1||ID1||DOE^JANE||19800101\rL|1|N\r");
        astm(b"\x05\x021H|\\^&\r\x0370\r\n\x022L|1|N\r\x03\x30\x30\r\n\x04");
    }
}
