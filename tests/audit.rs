//! The audit log (issue 30): value-free, hash-chained lines; `audit verify` detects every
//! single-line deletion, edit, insertion and swap (and, with `--head`, lines cut from the end);
//! a log that cannot be written stops the command.

use std::path::{Path, PathBuf};

use crate::common::{assert_failure_line, code, fixture, run};

const VALID: &str = "MSH|^~\\&|APP|FAC|RCV|RFAC|20240101120000||ADT^A01^ADT_A01|C1|P|2.5.1\rEVN|A01|20240101120000\rPID|1||12345^^^HOSP^MR||ZZMARKERQ^JANE||19700101|F\rPV1|1|I\r";

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("phiward-audit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// A log of `n` operations on a file named after a patient.
fn log_of(d: &Path, n: usize) -> PathBuf {
    let msg = d.join("smith_john_adt.hl7");
    std::fs::write(&msg, VALID).expect("write");
    let log = d.join("audit.log");
    for i in 0..n {
        let cmd = if i % 2 == 0 { "validate" } else { "inspect" };
        let o = run(&[cmd, "-q", "--audit-log", s(&log), s(&msg)]);
        assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    }
    log
}

fn verify(log: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["audit", "verify", s(log)];
    args.extend(extra);
    let o = run(&args);
    (code(&o), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn lines_are_chained_and_value_free() {
    let d = dir("chain");
    let log = log_of(&d, 3);
    let text = std::fs::read_to_string(&log).expect("log");
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).expect("json line")).collect();
    assert_eq!(lines.len(), 4, "anchor + 3 operations");
    assert_eq!(lines[0]["kind"], "anchor");
    assert_eq!(lines[1]["op"], "validate");
    assert_eq!(lines[2]["op"], "inspect");
    assert_eq!(lines[1]["exit"], 0);
    assert!(lines[1]["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert!(lines[1].get("inputs").is_none(), "no digest without a key");
    assert!(!text.contains("smith") && !text.contains("ZZMARKERQ") && !text.contains(s(&d)), "{text}");
    let (exit, out, _) = verify(&log, &[]);
    assert_eq!(exit, 0);
    assert!(out.starts_with("ok: 4 lines, head "), "{out}");
}

#[test]
fn batch_runs_log_counts_codes_and_keyed_digests() {
    let d = dir("batch");
    let msgs = d.join("msgs");
    std::fs::create_dir_all(&msgs).expect("mkdir");
    std::fs::write(msgs.join("smith_john_adt.hl7"), VALID).expect("write");
    std::fs::copy(fixture("hl7v2/invalid/bad_hex_escape_nonhex.hl7"), msgs.join("b.hl7")).expect("copy");
    let key = d.join("audit.key");
    std::fs::write(&key, [7u8; 32]).expect("key");
    let log = d.join("audit.log");
    let o = run(&["validate", "-q", "--redact-paths", "--audit-log", s(&log), "--audit-key-file", s(&key), s(&msgs)]);
    assert_eq!(code(&o), 1);
    let text = std::fs::read_to_string(&log).expect("log");
    let line: serde_json::Value = serde_json::from_str(text.lines().nth(1).expect("line 2")).expect("json");
    assert_eq!(line["counts"]["files"], 2);
    assert_eq!(line["counts"]["invalid"], 1);
    assert_eq!(line["exit"], 1);
    assert_eq!(line["formats"], serde_json::json!(["hl7"]));
    assert!(line["codes"].as_array().is_some_and(|c| c.contains(&serde_json::json!("ESCAPE_HEX_INVALID"))));
    let inputs = line["inputs"].as_array().expect("keyed digests");
    assert_eq!(inputs.len(), 2);
    assert!(inputs.iter().all(|i| i.as_str().is_some_and(|h| h.len() == 64)));
    assert!(!text.contains("smith") && !text.contains("ZZMARKERQ") && !text.contains(s(&d)));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("smith"));
}

/// Every single-line deletion, edit, insertion and swap of a log is detected, at a line number.
#[test]
fn every_single_line_mutation_is_detected() {
    let d = dir("mutations");
    let log = log_of(&d, 5);
    let text = std::fs::read_to_string(&log).expect("log");
    let lines: Vec<&str> = text.lines().collect();
    let (_, out, _) = verify(&log, &[]);
    let head = out.trim().rsplit(' ').next().expect("head").to_owned();
    let n = lines.len();
    let mut mutants: Vec<(String, Vec<String>)> = Vec::new();
    let owned = || lines.iter().map(|l| (*l).to_owned()).collect::<Vec<_>>();
    for i in 0..n {
        let mut del = owned();
        del.remove(i);
        mutants.push((format!("delete {i}"), del));
        let mut edit = owned();
        edit[i] = if edit[i].contains("\"exit\":0") {
            edit[i].replacen("\"exit\":0", "\"exit\":1", 1)
        } else {
            edit[i].replacen("\"v\":1", "\"v\":1,\"x\":0", 1)
        };
        mutants.push((format!("edit {i}"), edit));
        let mut dup = owned();
        dup.insert(i, lines[i].to_owned());
        mutants.push((format!("insert copy at {i}"), dup));
        let mut forged = owned();
        let fake = lines[i].replacen("\"op\":\"", "\"op\":\"x", 1).replacen(
            "\"kind\":\"anchor\"",
            "\"kind\":\"anchor\",\"y\":1",
            1,
        );
        forged.insert(i + 1, fake);
        mutants.push((format!("insert forged after {i}"), forged));
        if i + 1 < n {
            let mut swap = owned();
            swap.swap(i, i + 1);
            mutants.push((format!("swap {i}"), swap));
        }
    }
    let target = d.join("mutant.log");
    for (what, body) in &mutants {
        let mut bytes = body.join("\n");
        bytes.push('\n');
        std::fs::write(&target, bytes).expect("write");
        let (exit, out, err) = verify(&target, &["--head", &head]);
        assert_eq!(exit, 1, "{what} not detected: {out}");
        assert!(err.starts_with("phiward: AUDIT_CHAIN_BROKEN: "), "{what}: {err}");
    }
    // A torn last line.
    std::fs::write(&target, &text[..text.len() - 5]).expect("write");
    assert_eq!(verify(&target, &[]).0, 1);
    // The log as written, and grown since the head was noted, verify.
    assert_eq!(verify(&log, &["--head", &head]).0, 0);
    let msg = d.join("smith_john_adt.hl7");
    assert_eq!(code(&run(&["validate", "-q", "--audit-log", s(&log), s(&msg)])), 0);
    assert_eq!(verify(&log, &["--head", &head]).0, 0);
}

#[test]
fn a_log_that_cannot_be_written_stops_the_command() {
    let d = dir("unwritable");
    let msg = d.join("m.hl7");
    std::fs::write(&msg, VALID).expect("write");
    let log = d.join("no/such/dir/audit.log");
    let o = run(&["parse", "--audit-log", s(&log), s(&msg)]);
    assert_eq!(code(&o), 74);
    assert_failure_line(&o, "CLI_AUDIT_LOG_FAILED");
}
