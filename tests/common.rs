//! Shared helpers for the integration tests.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A path under fixtures/.
pub fn fixture(rel: &str) -> PathBuf {
    root().join("fixtures").join(rel)
}

/// The phiward binary built for this test run.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_phiward"))
}

/// Runs phiward with `args`, stdin from `stdin` when given, and extra environment.
pub fn run_with(args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.env_remove("RUST_LOG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.spawn().expect("spawn phiward");
    if let Some(data) = stdin {
        let mut pipe = child.stdin.take().expect("stdin pipe");
        let data = data.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&data);
        });
    }
    child.wait_with_output().expect("wait phiward")
}

/// Runs phiward with `args`.
pub fn run(args: &[&str]) -> Output {
    run_with(args, None, &[])
}

/// Runs phiward on bytes given on stdin.
pub fn run_stdin(args: &[&str], input: &[u8]) -> Output {
    run_with(args, Some(input), &[])
}

/// True when every error of `validate`'s human output (`text`) is one made against R4's vital
/// signs profiles, which an Observation's code implies: redaction cannot keep an Observation
/// conformant to them (Safe Harbor cuts `effectiveDateTime` to the year where vs-1 asks for the
/// day, and removes free text such as a Quantity's `unit`, 1..1 there; see policy/README.md),
/// and not every vital sign of the marker fixtures carries what they require. The redaction
/// tests check that redacted output keeps the core validity.
pub fn errors_only_against_vital_signs(text: &str) -> bool {
    const VITAL_SIGNS: [&str; 11] = [
        "vitalsigns",
        "vitalspanel",
        "resprate",
        "heartrate",
        "oxygensat",
        "bodytemp",
        "bodyheight",
        "headcircum",
        "bodyweight",
        "bmi",
        "bp",
    ];
    text.lines().filter(|l| l.trim_start().starts_with("error") || l.trim_start().starts_with("fatal")).all(|l| {
        VITAL_SIGNS.iter().any(|v| l.ends_with(&format!("[profile http://hl7.org/fhir/StructureDefinition/{v}]")))
    })
}

/// The exit code (-1 when killed by a signal).
pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Asserts the failure contract: exactly one stderr line `phiward: CODE: ...`, nothing on stdout.
pub fn assert_failure_line(o: &Output, expected_code: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "stderr must be one line, got {err:?}");
    assert!(
        lines[0].starts_with(&format!("phiward: {expected_code}: ")),
        "stderr {err:?} does not carry {expected_code}"
    );
    assert!(o.stdout.is_empty(), "stdout must be empty on failure");
}

/// Every file under a directory, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// True when stderr is empty, or is the one summary line of a stream whose failed records were
/// reported in its output (`phiward: CLI_RECORDS_FAILED: ...`).
pub fn stderr_clean_or_records_failed(stderr: &[u8]) -> bool {
    let err = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = err.lines().collect();
    lines.is_empty() || (lines.len() == 1 && lines[0].starts_with("phiward: CLI_RECORDS_FAILED: "))
}

/// Standard base64 (padded), for records that are not UTF-8.
#[allow(dead_code, reason = "used by some of the test modules")]
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
