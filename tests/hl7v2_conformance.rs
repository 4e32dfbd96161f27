//! HL7 v2 conformance (`src/formats/hl7v2/conformance`): every fixture under
//! fixtures/hl7v2/conformance/{valid,invalid} through `phiward validate --json`, in the default
//! mode and with `--strict`, against its `<file>.expected` sidecar (exit code, then the findings
//! in order: code, severity, location). The fixtures and sidecars are written by
//! fixtures/hl7v2/conformance/generate.py; each exercises one rule.
//!
//! Also: every conformance finding of every HL7 v2 fixture is value-free (code, severity and a
//! location of the documented grammar, nothing else).

use std::path::Path;

use serde_json::Value;

use crate::common::{code, files_under, fixture, run};

/// One mode of a sidecar: the exit code and the findings, as `CODE severity location` lines.
#[derive(Debug, PartialEq)]
struct Expectation {
    exit: i32,
    findings: Vec<String>,
}

fn sidecar(path: &Path) -> (Expectation, Expectation) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|_| panic!("missing sidecar {}", path.display()));
    let mut modes: Vec<(String, Expectation)> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let words: Vec<&str> = line.split(' ').collect();
        if let [mode @ ("default" | "strict"), "exit", n] = words.as_slice() {
            let exit = n.parse().unwrap_or_else(|_| panic!("{}: bad exit line", path.display()));
            modes.push(((*mode).to_owned(), Expectation { exit, findings: Vec::new() }));
        } else if let Some((_, e)) = modes.last_mut() {
            e.findings.push(line.to_owned());
        } else {
            panic!("{}: finding before an exit line", path.display());
        }
    }
    let mut take = |name: &str| {
        let i = modes
            .iter()
            .position(|(m, _)| m == name)
            .unwrap_or_else(|| panic!("{}: no {name} section", path.display()));
        modes.remove(i).1
    };
    let default = take("default");
    let strict = take("strict");
    (default, strict)
}

fn observe(path: &Path, strict: bool) -> Expectation {
    let p = path.to_string_lossy().into_owned();
    let mut args = vec!["validate", "--json"];
    if strict {
        args.push("--strict");
    }
    args.push(&p);
    let o = run(&args);
    let mut findings = Vec::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}"));
        for f in v["findings"].as_array().into_iter().flatten() {
            let s = |k: &str| f[k].as_str().unwrap_or_default().to_owned();
            findings.push(format!("{} {} {}", s("code"), s("severity"), s("location")));
        }
    }
    Expectation { exit: code(&o), findings }
}

fn conformance_fixtures() -> Vec<std::path::PathBuf> {
    files_under(&fixture("hl7v2/conformance"))
        .into_iter()
        .filter(|p| {
            p.extension().is_some_and(|e| e == "hl7")
                && (p.to_string_lossy().contains("/valid/") || p.to_string_lossy().contains("/invalid/"))
        })
        .collect()
}

#[test]
fn every_fixture_gives_its_expected_findings() {
    let files = conformance_fixtures();
    assert!(files.len() >= 30, "only {} conformance fixtures", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let (default, strict) = sidecar(&path.with_extension("hl7.expected"));
        for (mode, want, got) in [("default", default, observe(path, false)), ("strict", strict, observe(path, true))] {
            if want != got {
                failures.push(format!("{} ({mode}):\n  want {want:?}\n  got  {got:?}", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn valid_fixtures_pass_and_invalid_ones_fail_by_default() {
    for path in conformance_fixtures() {
        let valid = path.to_string_lossy().contains("/valid/");
        let got = observe(&path, false).exit;
        assert_eq!(got, if valid { 0 } else { 1 }, "{}", path.display());
    }
}

/// The conformance codes (the `// ---- HL7 v2 conformance` section of `src/diag.rs`).
const CONFORMANCE_CODES: &[&str] = &[
    "VERSION_UNKNOWN",
    "STRUCTURE_UNKNOWN",
    "STRUCTURE_MISMATCH",
    "SEGMENT_UNEXPECTED",
    "SEGMENT_REPEATED",
    "SEGMENT_NOT_IN_STRUCTURE",
    "SEGMENT_MISSING",
    "GROUP_MISSING",
    "FIELD_REQUIRED_MISSING",
    "FIELD_REPEATED",
    "FIELD_NOT_DEFINED",
    "FIELD_WITHDRAWN",
    "COMPONENT_REQUIRED_MISSING",
    "COMPONENT_NOT_DEFINED",
    "LENGTH_EXCEEDED",
    "DATE_INVALID",
    "DATETIME_INVALID",
    "TIME_INVALID",
    "DATETIME_PRECISION",
    "NUMBER_INVALID",
    "SEQUENCE_ID_INVALID",
    "TABLE_VALUE_UNKNOWN",
    "TRAILING_DELIMITER",
];

#[test]
fn every_conformance_code_has_a_fixture() {
    let mut seen = std::collections::BTreeSet::new();
    for path in conformance_fixtures() {
        let (default, strict) = sidecar(&path.with_extension("hl7.expected"));
        for f in default.findings.iter().chain(&strict.findings) {
            seen.insert(f.split(' ').next().unwrap_or_default().to_owned());
        }
    }
    let missing: Vec<&&str> = CONFORMANCE_CODES.iter().filter(|c| !seen.contains(**c)).collect();
    assert!(missing.is_empty(), "codes without a fixture: {missing:?}");
    for c in CONFORMANCE_CODES {
        assert!(phiward::diag::Code::from_name(c).is_some(), "{c} is not a code");
    }
}

/// A location of the documented grammar: an HL7 position or a schema path (names of upper-case
/// letters, digits and `_`), never anything taken from the message.
fn location_is_structural(loc: &str) -> bool {
    let name = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if let Some((path, seg)) = loc.split_once('/') {
        return path.split('.').all(name) && name(seg);
    }
    let Some((seg, rest)) = loc.split_once('[') else { return name(loc) };
    (name(seg) || seg == "segment")
        && rest.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'[' | b']' | b'-' | b'.'))
}

#[test]
fn findings_of_every_hl7v2_fixture_are_value_free() {
    for path in
        files_under(&fixture("hl7v2")).into_iter().filter(|p| p.extension().is_some_and(|e| e == "hl7" || e == "mllp"))
    {
        // `--strict` reports every location the default mode does, and more.
        {
            for f in observe(&path, true).findings {
                let parts: Vec<&str> = f.split(' ').collect();
                let [code, severity, location] = parts.as_slice() else {
                    panic!("{}: odd finding {f:?}", path.display())
                };
                assert!(phiward::diag::Code::from_name(code).is_some(), "{}: unknown code in {f:?}", path.display());
                assert!(
                    matches!(*severity, "fatal" | "error" | "warning" | "information"),
                    "{}: {f:?}",
                    path.display()
                );
                let ok = location_is_structural(location)
                    || *location == "-"
                    || location.starts_with("offset:")
                    || location.starts_with("record:");
                assert!(ok, "{}: location not structural in {f:?}", path.display());
            }
        }
    }
}
