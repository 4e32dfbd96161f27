//! Multi-record inputs processed in batches on several threads (a file, or standard input
//! redirected from a file) give exactly what record-by-record processing (a pipe) gives:
//! stdout, stderr and exit code, for MLLP streams, ER7 concatenations with batches, and FHIR
//! NDJSON, each with bad records in it; and records come out numbered in input order.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::{bin, code, fixture, run_stdin};

/// Enough records for many batches (a batch holds at most 128).
const RECORDS: usize = 700;

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(fixture(rel)).expect("fixture")
}

/// Writes `bytes` to a file of its own for this test.
fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("phiward-parallel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write");
    path
}

/// Runs phiward with standard input redirected from `path` (a regular file).
fn run_redirected(args: &[&str], path: &Path) -> Output {
    let file = std::fs::File::open(path).expect("open");
    Command::new(bin()).args(args).env_remove("RUST_LOG").stdin(Stdio::from(file)).output().expect("run phiward")
}

/// The messages a stream is made of: valid ones, invalid ones, and ones that do not parse.
fn messages() -> Vec<Vec<u8>> {
    [
        "hl7v2/valid/charset_ascii_v2.5.hl7",
        "hl7v2/valid/escapes_all_v2.5.1_oru.hl7",
        "hl7v2/invalid/missing_msh9_message_type.hl7",
        "hl7v2/valid/delim_star_colon_v2.5.hl7",
        "hl7v2/invalid/msh_too_short.hl7",
        "hl7v2/invalid/bad_version_value.hl7",
        "hl7v2/valid/eol_crlf_trailing.hl7",
        "hl7v2/invalid/encoding_chars_duplicate.hl7",
        "hl7v2/valid/charset_utf8_v2.6.hl7",
    ]
    .iter()
    .map(|rel| read(rel))
    .collect()
}

fn mllp_stream() -> Vec<u8> {
    let messages = messages();
    let mut out = Vec::new();
    for i in 0..RECORDS {
        let body = match i {
            // A frame holding a batch (envelope records among messages), a count mismatch,
            // stray lines, and bytes between frames.
            150 => read("hl7v2/valid/batch_fhs_2batches_5msgs.hl7"),
            300 => read("hl7v2/invalid/bts_count_mismatch.hl7"),
            450 => read("hl7v2/invalid/no_msh.hl7"),
            _ => messages[i % messages.len()].clone(),
        };
        if i == 500 {
            out.extend_from_slice(b"between frames\r");
        }
        out.push(0x0B);
        out.extend_from_slice(&body);
        out.extend_from_slice(&[0x1C, 0x0D]);
    }
    // A last frame cut short.
    out.push(0x0B);
    out.extend_from_slice(&messages[0]);
    out
}

fn er7_stream() -> Vec<u8> {
    let messages = messages();
    let mut out = Vec::new();
    for i in 0..RECORDS {
        match i {
            200 => out.extend_from_slice(&read("hl7v2/valid/batch_fhs_bhs_3msgs.hl7")),
            400 => out.extend_from_slice(&read("hl7v2/invalid/bts_count_mismatch.hl7")),
            _ => out.extend_from_slice(&messages[i % messages.len()]),
        }
        if !out.ends_with(b"\r") && !out.ends_with(b"\n") {
            out.push(b'\r');
        }
    }
    out
}

fn ndjson_stream() -> Vec<u8> {
    let good = read("fhir/valid/patients.ndjson");
    let mixed = read("fhir/invalid/ndjson_one_bad_record.ndjson");
    let mut lines: Vec<&[u8]> = good.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    lines.extend(mixed.split(|&b| b == b'\n').filter(|l| !l.is_empty()));
    let mut out = Vec::new();
    for i in 0..RECORDS {
        match i % 50 {
            7 => out.extend_from_slice(b"{\"resourceType\":\"Patient\",\"id\":"),
            19 => out.extend_from_slice(b"   "),
            31 => out.extend_from_slice(b"[1,2,3]"),
            _ => out.extend_from_slice(lines[i % lines.len()]),
        }
        out.extend_from_slice(if i % 3 == 0 { b"\r\n" } else { b"\n" });
    }
    out
}

/// The same stdout, stderr and exit code from a file, a redirected file, and a pipe.
fn assert_batched_equals_serial(name: &str, bytes: &[u8], commands: &[&[&str]]) {
    let path = temp_file(name, bytes);
    let path_str = path.to_str().expect("utf-8 temp path");
    for args in commands {
        let mut with_path = args.to_vec();
        with_path.push(path_str);
        let mut with_stdin = args.to_vec();
        with_stdin.push("-");
        let file = crate::common::run(&with_path);
        let redirected = run_redirected(&with_stdin, &path);
        let piped = run_stdin(&with_stdin, bytes);
        for (what, batched) in [("file", &file), ("redirected", &redirected)] {
            assert_eq!(code(batched), code(&piped), "{name} {args:?}: exit code, {what} vs pipe");
            assert!(batched.stdout == piped.stdout, "{name} {args:?}: stdout differs, {what} vs pipe");
            assert_eq!(batched.stderr, piped.stderr, "{name} {args:?}: stderr, {what} vs pipe");
        }
        assert!(args.contains(&"--quiet") || !piped.stdout.is_empty(), "{name} {args:?}: no output");
        if args.contains(&"--json") {
            assert_in_order(&file.stdout, name);
        }
    }
    let _ = std::fs::remove_file(&path);
}

/// Every line is an object numbered 1, 2, 3, ... in order.
fn assert_in_order(stdout: &[u8], name: &str) {
    let mut expected = 1u64;
    for line in stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).expect("a JSON line");
        assert_eq!(v.get("record").and_then(serde_json::Value::as_u64), Some(expected), "{name}: record order");
        expected += 1;
    }
    assert!(expected > RECORDS as u64 / 2, "{name}: {} records", expected - 1);
}

const COMMANDS: &[&[&str]] = &[
    &["validate", "--json"],
    &["validate"],
    &["validate", "--json", "--strict"],
    &["validate", "--quiet"],
    &["parse", "--json"],
    &["parse"],
    &["inspect", "--json"],
    &["inspect"],
];

#[test]
fn mllp_stream_batched_equals_record_by_record() {
    let stream = mllp_stream();
    assert_batched_equals_serial("stream.mllp", &stream, COMMANDS);
    // A record over the limit, mid-stream.
    assert_batched_equals_serial(
        "stream_limited.mllp",
        &stream,
        &[&["validate", "--json", "--max-input-bytes", "600"]],
    );
}

#[test]
fn er7_stream_batched_equals_record_by_record() {
    assert_batched_equals_serial("stream.hl7", &er7_stream(), COMMANDS);
}

#[test]
fn ndjson_batched_equals_record_by_record() {
    let commands: Vec<Vec<&str>> = COMMANDS
        .iter()
        .map(|c| {
            let mut c = c.to_vec();
            c.push("--ndjson");
            c
        })
        .collect();
    let commands: Vec<&[&str]> = commands.iter().map(Vec::as_slice).collect();
    assert_batched_equals_serial("stream.ndjson", &ndjson_stream(), &commands);
}
