//! No value outside the data channel.
//!
//! Every value in fixtures/hl7v2/markers carries a unique token `MKR` + 5 digits + `X`. Each
//! marker file is broken in many ways (truncated, bad delimiters, bad escapes, bad MLLP frames,
//! invalid UTF-8, values where segment ids belong) and run through every command, with and
//! without `--json`, with `RUST_LOG=trace`. Then:
//! - no marker fragment (`MKR` followed by a digit) appears on stderr, ever;
//! - none appears on stdout of `validate` and `inspect` (value-free by contract);
//! - none appears on stdout of a failed command (one whose stderr carries the failure line).

use crate::common::{files_under, fixture, run_with};

pub(crate) fn has_marker(bytes: &[u8]) -> bool {
    bytes.windows(4).any(|w| &w[..3] == b"MKR" && w[3].is_ascii_digit())
}

/// Broken variants of one input.
pub(crate) fn variants(original: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![("original".to_owned(), original.to_vec())];
    let n = original.len();
    for tenth in 1..10 {
        out.push((format!("truncated at {tenth}/10"), original[..n * tenth / 10].to_vec()));
    }
    // Bad delimiters: MSH-2 with a repeated character, an alphanumeric one, or cut short.
    if let Some(p) = find(original, b"MSH") {
        for (name, enc) in [("dup", &b"^^\\&"[..]), ("alnum", b"^~A&"), ("short", b"^~")] {
            let mut v = original.to_vec();
            let start = p + 4;
            if start + 4 <= v.len() {
                v.splice(start..start + 4, enc.iter().copied());
                out.push((format!("bad delimiters {name}"), v));
            }
        }
    }
    // Bad escapes: an escape character inserted into values, unterminated or unknown.
    for (i, ins) in [(0.3, &b"\\"[..]), (0.5, b"\\Q"), (0.7, b"\\X0\\"), (0.9, b"\\Zz")] {
        let mut v = original.to_vec();
        let at = ((n as f64) * i) as usize;
        v.splice(at..at, ins.iter().copied());
        out.push((format!("escape inserted at {i}"), v));
    }
    // Invalid UTF-8 under a UTF-8 declaration, and stray control bytes.
    let mut v = original.to_vec();
    let at = n / 2;
    v.splice(at..at, [0xC5, 0x28, 0xFF, 0x01, 0x1C]);
    out.push(("invalid bytes".to_owned(), v));
    // Values where segment ids belong: a segment whose id is a marker.
    let mut v = original.to_vec();
    v.extend_from_slice(b"\rMKR99999X|MKR99998X\rMK9|MKR99997X\r");
    out.push(("marker segment ids".to_owned(), v));
    // MLLP framing, broken: truncated frame, junk between frames, a frame inside a frame.
    let mut framed = vec![0x0B];
    framed.extend_from_slice(original);
    framed.extend_from_slice(&[0x1C, 0x0D]);
    let mut v = framed.clone();
    v.extend_from_slice(b"MKR99996X junk");
    v.extend_from_slice(&framed[..framed.len() / 2]);
    out.push(("mllp junk and truncated".to_owned(), v));
    let mut v = framed[..framed.len() / 2].to_vec();
    v.extend_from_slice(&framed);
    out.push(("mllp nested start".to_owned(), v));
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn markers_never_leave_the_data_channel() {
    let files = files_under(&fixture("hl7v2/markers"));
    let files: Vec<_> =
        files.into_iter().filter(|p| p.extension().is_some_and(|e| e == "hl7" || e == "mllp")).collect();
    assert!(files.len() >= 5, "marker fixtures missing");
    let commands: &[&[&str]] = &[
        &["parse"],
        &["parse", "--json"],
        &["validate"],
        &["validate", "--json"],
        &["validate", "--strict", "--json"],
        &["inspect"],
        &["inspect", "--json"],
        &["fmt"],
        &["fmt", "--check"],
        &["fmt", "--check", "--json"],
    ];
    let mut runs = 0;
    for file in &files {
        let original = std::fs::read(file).expect("marker fixture");
        assert!(has_marker(&original), "{} has no marker", file.display());
        for (what, input) in variants(&original) {
            for cmd in commands {
                for format in [None, Some("hl7")] {
                    let mut args: Vec<&str> = cmd.to_vec();
                    if let Some(f) = format {
                        args.extend(["--format", f]);
                    }
                    args.push("-");
                    let o = run_with(&args, Some(&input), &[("RUST_LOG", "trace")]);
                    runs += 1;
                    let ctx = format!("{} / {what} / {args:?}", file.display());
                    assert!(!has_marker(&o.stderr), "marker on stderr: {ctx}");
                    if matches!(cmd[0], "validate" | "inspect") || cmd.contains(&"--check") {
                        assert!(!has_marker(&o.stdout), "marker on a value-free stdout: {ctx}");
                    }
                    let failed = String::from_utf8_lossy(&o.stderr)
                        .lines()
                        .any(|l| l.starts_with("phiward: ") && !l.starts_with("phiward: CLI_RECORDS_FAILED: "));
                    if failed {
                        assert!(o.stdout.is_empty(), "stdout not empty on failure: {ctx}");
                    }
                    assert!(o.status.code().is_some_and(|c| [0, 1, 65].contains(&c)), "unexpected exit: {ctx}");
                }
            }
        }
    }
    assert!(runs > 1000, "only {runs} runs");
}
