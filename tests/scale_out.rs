//! `--input-format json-lines`, the record-stream contract of a pipe stage (docs/scale-out.md):
//! one answer per input line in input order, bad lines answered and the stream going on, each
//! record's result equal to the single-record CLI's (every command, several formats), keyed
//! redaction independent of order and partitioning, and no marker outside `data` and `id`.

use serde_json::{Value, json};

use crate::common::{base64, files_under, fixture, run_stdin, run_with};
use crate::no_leak::{has_marker, variants};

fn unbase64(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut acc, mut n) = (0u32, 0);
    for b in text.bytes().filter(|&b| b != b'=') {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            _ => 63,
        };
        acc = (acc << 6) | u32::from(v);
        n += 1;
        if n == 4 {
            out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]);
            (acc, n) = (0, 0);
        }
    }
    match n {
        2 => out.push((acc >> 4) as u8),
        3 => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
        _ => {}
    }
    out
}

/// One input line for a record.
fn record_line(id: Value, bytes: &[u8], format: Option<&str>) -> String {
    let mut line = match std::str::from_utf8(bytes) {
        Ok(s) => json!({"id": id, "content": s}),
        Err(_) => json!({"id": id, "content_base64": base64(bytes)}),
    };
    if let Some(f) = format {
        line["format"] = json!(f);
    }
    line.to_string()
}

/// Runs a json-lines command over `lines`; returns the exit code, the answers and stderr.
fn stream(args: &[&str], lines: &[String], env: &[(&str, &str)]) -> (i32, Vec<Value>, String) {
    let mut input = lines.join("\n");
    input.push('\n');
    let mut all = args.to_vec();
    all.extend(["--input-format", "json-lines", "-"]);
    let o = run_with(&all, Some(input.as_bytes()), env);
    let answers: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("every output line is a JSON object");
            // The bytes `serde_json` writes for the result object (compact, keys sorted): the
            // line is written without building that tree, and must not differ from it by a byte.
            assert_eq!(serde_json::to_string(&v).expect("a value writes"), l, "an output line as serde_json writes it");
            v
        })
        .collect();
    (o.status.code().unwrap_or(-1), answers, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// What the single-record CLI gives for one record: exit code, its data as the result object
/// holds it (`--json` lines; the bytes for `redact`) and its failure code from stderr.
struct Single {
    exit: i32,
    data: Option<Value>,
    redacted: Vec<u8>,
    code: Option<String>,
}

fn single(command: &str, extra: &[&str], bytes: &[u8]) -> Single {
    let mut args = vec![command];
    if command != "redact" {
        args.push("--json");
    }
    args.extend(extra);
    args.push("-");
    let o = run_stdin(&args, bytes);
    let err = String::from_utf8_lossy(&o.stderr);
    let code = err
        .lines()
        .find_map(|l| l.strip_prefix("phiward: ").and_then(|r| r.split(':').next()))
        .filter(|c| *c != "CLI_RECORDS_FAILED")
        .map(str::to_owned);
    let lines: Vec<Value> = if command == "redact" {
        Vec::new()
    } else {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("--json prints JSON lines"))
            .collect()
    };
    let data = match lines.len() {
        0 => None,
        1 if lines[0].get("record").is_none() => Some(lines[0].clone()),
        _ => Some(json!({ "records": lines })),
    };
    Single { exit: o.status.code().unwrap_or(-1), data, redacted: o.stdout, code }
}

/// Fixtures of several formats: (bytes, path).
fn sample_records() -> Vec<(Vec<u8>, String)> {
    let mut files = Vec::new();
    for (dir, n) in [
        ("hl7v2/valid", 8),
        ("hl7v2/invalid", 3),
        ("fhir/valid", 6),
        ("x12/valid", 3),
        ("astm/valid", 2),
        ("ncpdp/valid", 2),
        ("dicom/valid", 1),
        ("ccda/valid", 1),
    ] {
        // NDJSON needs `--ndjson`, which applies to every record of a run: left out here.
        let chosen = files_under(&fixture(dir)).into_iter().filter(|p| p.extension().is_none_or(|e| e != "ndjson"));
        files.extend(chosen.take(n));
    }
    files.into_iter().map(|p| (std::fs::read(&p).expect("fixture"), p.display().to_string())).collect()
}

#[test]
fn every_line_is_answered_once_in_order_and_bad_lines_do_not_stop_the_stream() {
    let msg = std::fs::read(fixture("hl7v2/valid/charset_ascii_v2.5.hl7")).expect("fixture");
    let good = |id: Value| record_line(id, &msg, None);
    let lines = vec![
        good(json!("a")),
        "not json".to_owned(),
        good(json!(2)),
        r#"{"id": "b", "content": "MSH|^~\\&|", "content_base64": "TVNI"}"#.to_owned(),
        r#"{"content": "x"}"#.to_owned(),
        r#"{"id": "c"}"#.to_owned(),
        r#"{"id": "d", "content_base64": "!!!"}"#.to_owned(),
        r#"{"id": "e", "content": "x", "surplus": 1}"#.to_owned(),
        r#"{"id": "f", "format": "nope", "content": "x"}"#.to_owned(),
        r#"{"id": "g", "format": "hl7", "content": "not a message"}"#.to_owned(),
        r#"{"id": {"nested": 1}, "content": "x"}"#.to_owned(),
        String::new(),
        "[1, 2]".to_owned(),
        good(json!(1.5)),
        good(json!("last")),
    ];
    let (exit, answers, stderr) = stream(&["validate"], &lines, &[]);
    assert_eq!(exit, 0, "every line answered: exit 0 ({stderr})");
    assert_eq!(answers.len(), lines.len(), "one answer per line");
    let ids: Vec<Value> = answers.iter().map(|a| a["id"].clone()).collect();
    assert_eq!(
        ids,
        vec![
            json!("a"),
            Value::Null,
            json!(2),
            json!("b"),
            Value::Null,
            json!("c"),
            json!("d"),
            json!("e"),
            json!("f"),
            json!("g"),
            Value::Null,
            Value::Null,
            Value::Null,
            json!(1.5),
            json!("last")
        ],
        "ids echoed as given, in input order"
    );
    let expect = [
        (0, "success", None, None),
        (1, "failed", Some("CLI_USAGE"), None),
        (2, "success", None, None),
        (3, "failed", Some("CLI_USAGE"), Some("content")),
        (4, "failed", Some("CLI_USAGE"), Some("id")),
        (5, "failed", Some("CLI_USAGE"), Some("content")),
        (6, "failed", Some("CLI_USAGE"), Some("content_base64")),
        (7, "failed", Some("CLI_USAGE"), None),
        (8, "failed", Some("CLI_USAGE"), Some("format")),
        (9, "failed", Some("CLI_PARSE_FAILED"), None),
        (10, "failed", Some("CLI_USAGE"), Some("id")),
        (11, "failed", Some("CLI_USAGE"), None),
        (12, "failed", Some("CLI_USAGE"), None),
        (13, "success", None, None),
        (14, "success", None, None),
    ];
    for (i, status, code, argument) in expect {
        let a = &answers[i];
        assert_eq!(a["status"], json!(status), "line {}: {a}", i + 1);
        assert_eq!(a["ok"], json!(status == "success"), "line {}", i + 1);
        assert_eq!(a.get("code").and_then(Value::as_str), code, "line {}: {a}", i + 1);
        assert_eq!(a.get("argument").and_then(Value::as_str), argument, "line {}: {a}", i + 1);
        if status == "failed" {
            assert!(a.get("data").is_none(), "a failure has no data: line {}", i + 1);
        }
        // A line that could not be read as a record says where it is; a record says nothing
        // beyond its id.
        let line_fault = code == Some("CLI_USAGE");
        assert_eq!(a.get("line"), line_fault.then(|| json!(i + 1)).as_ref(), "line {}: {a}", i + 1);
    }
    assert_eq!(answers[9]["exit"], json!(65));
    assert_eq!(answers[1]["exit"], json!(2));
    let summary: Vec<&str> = stderr.lines().collect();
    assert_eq!(summary.len(), 1, "one summary line: {stderr}");
    assert!(
        summary[0].starts_with("phiward: CLI_RECORDS_FAILED: ") && summary[0].contains("(11 of 15 records"),
        "{stderr}"
    );
}

#[test]
fn a_line_over_the_limit_is_skipped_unread_and_answered() {
    let msg = std::fs::read(fixture("hl7v2/valid/charset_ascii_v2.5.hl7")).expect("fixture");
    let big = "X".repeat(5000);
    let lines = vec![
        record_line(json!(1), &msg, None),
        format!(r#"{{"id": 2, "content": "{big}"}}"#),
        record_line(json!(3), &msg, None),
    ];
    // Each record may hold 1,000 bytes; a line may hold twice that and 64 KiB of JSON: the
    // long line is 5 KB past it only with a smaller limit, so push it over with a long id.
    let huge = format!(r#"{{"id": "{}", "content": "x"}}"#, "9".repeat(200_000));
    let lines = [lines, vec![huge, record_line(json!(5), &msg, None)]].concat();
    let (exit, answers, _) = stream(&["validate", "--max-input-bytes", "1000"], &lines, &[]);
    assert_eq!(exit, 0);
    assert_eq!(answers.len(), 5);
    assert_eq!(answers[0]["status"], json!("success"));
    // Within the line limit, the content is over the record limit: the record's own failure.
    assert_eq!(answers[1]["code"], json!("CLI_INPUT_TOO_LARGE"));
    assert_eq!(answers[1]["id"], json!(2));
    assert_eq!(answers[2]["status"], json!("success"));
    // Over the line limit: not read, so no id; its line number says which.
    assert_eq!(answers[3]["code"], json!("CLI_INPUT_TOO_LARGE"));
    assert_eq!(answers[3]["id"], Value::Null);
    assert_eq!(answers[3]["line"], json!(4));
    assert_eq!(answers[4]["id"], json!(5));
    assert_eq!(answers[4]["status"], json!("success"));
}

#[test]
fn each_result_equals_the_single_record_cli_for_every_command() {
    let records = sample_records();
    assert!(records.len() >= 20, "fixtures missing");
    let hl7_only = |path: &str| path.contains("/hl7v2/");
    let mut compared = 0;
    for command in ["validate", "inspect", "parse", "convert", "redact"] {
        let chosen: Vec<&(Vec<u8>, String)> =
            records.iter().filter(|(_, p)| command != "convert" || hl7_only(p)).collect();
        let lines: Vec<String> =
            chosen.iter().enumerate().map(|(i, (bytes, _))| record_line(json!(i), bytes, None)).collect();
        let (exit, answers, stderr) = stream(&[command], &lines, &[]);
        assert_eq!(exit, 0, "{command}: {stderr}");
        assert_eq!(answers.len(), lines.len(), "{command}: one answer per line");
        for (i, ((bytes, path), answer)) in chosen.iter().zip(&answers).enumerate() {
            let ctx = format!("{command} {path}");
            assert_eq!(answer["id"], json!(i), "{ctx}: order");
            let cli = single(command, &[], bytes);
            assert_eq!(answer["exit"], json!(cli.exit), "{ctx}: exit");
            if answer["status"] == "failed" {
                assert_eq!(answer.get("code").and_then(Value::as_str), cli.code.as_deref(), "{ctx}: code");
                assert!(answer.get("data").is_none(), "{ctx}");
                continue;
            }
            if command == "redact" {
                let data = &answer["data"];
                let bytes = match data.get("content").and_then(Value::as_str) {
                    Some(text) => text.as_bytes().to_vec(),
                    None => unbase64(data["content_base64"].as_str().expect("content or content_base64")),
                };
                assert_eq!(bytes, cli.redacted, "{ctx}: the redacted bytes");
                assert_eq!(data["policy"], json!("safe-harbor"), "{ctx}");
            } else if cli.data.is_none() {
                // A stream of no message (an empty batch): nothing on the CLI's stdout, no
                // record in the result.
                assert_eq!(answer["data"], json!({"records": []}), "{ctx}: data");
            } else {
                assert_eq!(answer.get("data"), cli.data.as_ref(), "{ctx}: data");
            }
            compared += 1;
        }
    }
    assert!(compared > 80, "compared {compared}");
}

#[test]
fn command_options_apply_to_every_record_as_on_the_single_record_cli() {
    let msg = std::fs::read(fixture("hl7v2/valid/charset_ascii_v2.5.hl7")).expect("fixture");
    let adt = std::fs::read(fixture("hl7v2/convert/adt_a01.hl7")).expect("fixture");
    let dir = std::env::temp_dir().join(format!("phiward-scale-out-ns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let table = dir.join("naming.txt");
    std::fs::write(&table, "MERCYHOSP http://mercy.example.org/fhir/sid/mrn\n").expect("table");
    let table = table.to_str().expect("utf-8 path");
    let key = fixture("redact/golden/test.key");
    let key = key.to_str().expect("utf-8 path");
    // The converter's files are read once and shared by the records: ids keyed, systems named.
    let convert_files = ["--naming-systems", table, "--id-key-file", key];
    let lines = vec![record_line(json!("x"), &adt, None), record_line(json!("y"), &adt, None)];
    let (exit, answers, _) = stream(&[&["convert"][..], &convert_files].concat(), &lines, &[]);
    assert_eq!(exit, 0);
    let cli = single("convert", &convert_files, &adt);
    assert_eq!(cli.exit, 0);
    let bundle = answers[0]["data"]["bundle"].to_string();
    assert!(bundle.contains("http://mercy.example.org/fhir/sid/mrn"), "the naming systems applied");
    assert_ne!(answers[0]["data"], single("convert", &[], &adt).data.expect("converted"), "the key applied");
    for a in &answers {
        assert_eq!(a.get("data"), cli.data.as_ref(), "the same for every record");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let lines = vec![record_line(json!("x"), &msg, None)];
    for (command, options) in [
        ("parse", &["--model", "named"][..]),
        ("parse", &["--segments", "PID"][..]),
        ("inspect", &["--detail", "inventory"][..]),
        ("validate", &["--strict"][..]),
        ("convert", &["--bundle-type", "collection", "--default-timezone", "-05:00"][..]),
        ("parse", &["--format", "hl7"][..]),
    ] {
        let (exit, answers, _) = stream(&[&[command][..], options].concat(), &lines, &[]);
        assert_eq!(exit, 0);
        let cli = single(command, options, &msg);
        assert_eq!(answers[0]["exit"], json!(cli.exit), "{command} {options:?}");
        assert_eq!(answers[0].get("data"), cli.data.as_ref(), "{command} {options:?}");
    }
}

/// Synthetic ADT messages: `n` of them over `patients` patients, marker values in the names.
fn synthetic(n: usize, patients: usize) -> Vec<(String, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let p = i % patients;
            let msg = format!(
                "MSH|^~\\&|APP|FAC|RCV|RFAC|2024{:02}{:02}103000||ADT^A01^ADT_A01|MSG{i:06}|P|2.5.1\r\
                 PID|1||PAT{p:05}^^^HOSP^MR||MKR{:05}X^JANE||19{:02}0315|F|||1 MAIN ST^^SPRINGFIELD^MA^01103||||||ACCT{p:04}\r\
                 PV1|1|I|W^1^1\r",
                1 + i % 12,
                1 + i % 28,
                i % 100_000,
                40 + p % 50,
            );
            (format!("r{i}"), msg.into_bytes())
        })
        .collect()
}

#[test]
fn keyed_redaction_is_the_same_whatever_the_order_and_the_split() {
    let policy = fixture("scale_out/keyed.toml");
    let key = fixture("redact/golden/test.key");
    let policy = policy.to_str().expect("utf-8 path");
    let key = key.to_str().expect("utf-8 path");
    let args = ["redact", "--policy", policy, "--key-file", key];
    let mut records = synthetic(40, 7);
    for (name, p) in
        [("fhir", "redact/golden/fhir_all_actions/input.json"), ("marker", "redact/markers/bundle_people.json")]
    {
        records.push((name.to_owned(), std::fs::read(fixture(p)).expect("fixture")));
    }
    let run = |recs: &[(String, Vec<u8>)]| -> Vec<(String, Value)> {
        let lines: Vec<String> = recs.iter().map(|(id, b)| record_line(json!(id), b, None)).collect();
        let (exit, answers, stderr) = stream(&args, &lines, &[]);
        assert_eq!(exit, 0, "{stderr}");
        assert_eq!(answers.len(), recs.len());
        recs.iter()
            .zip(answers)
            .map(|((id, _), a)| {
                assert_eq!(a["id"], json!(id), "order");
                (id.clone(), a)
            })
            .collect()
    };
    let mut whole = run(&records);
    whole.sort_by(|a, b| a.0.cmp(&b.0));
    // Reversed, and in three partitions of different sizes in a shuffled order.
    let mut reversed = records.clone();
    reversed.reverse();
    let mut other = run(&reversed);
    let mut parts = Vec::new();
    let mut shuffled = records.clone();
    shuffled.sort_by_key(|(id, _)| id.bytes().rev().collect::<Vec<u8>>());
    for chunk in [&shuffled[..5], &shuffled[5..23], &shuffled[23..]] {
        parts.extend(run(chunk));
    }
    for run in [&mut other, &mut parts] {
        run.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(run.len(), whole.len());
        for (a, b) in run.iter().zip(&whole) {
            assert_eq!(a, b, "the result of {} depends on its neighbours", a.0);
        }
    }
    // The same patient has the same pseudonym in every record, and different patients differ.
    let mut by_patient = std::collections::BTreeMap::new();
    for (i, (_, a)) in run(&records[..40]).into_iter().enumerate() {
        let content = a["data"]["content"].as_str().expect("HL7 v2 content").to_owned();
        let pid = content.split('\r').find(|s| s.starts_with("PID")).expect("PID kept").to_owned();
        let pseudonym = pid.split('|').nth(3).expect("PID-3").to_owned();
        assert_eq!(pseudonym.len(), 16, "a pseudonym: {pid}");
        by_patient.entry(i % 7).or_insert_with(std::collections::BTreeSet::new).insert(pseudonym);
    }
    assert_eq!(by_patient.len(), 7);
    let distinct: std::collections::BTreeSet<_> = by_patient.values().flatten().collect();
    assert!(by_patient.values().all(|s| s.len() == 1), "one pseudonym per patient: {by_patient:?}");
    assert_eq!(distinct.len(), 7, "patients have distinct pseudonyms");
    // And each equals the single-record CLI's bytes.
    for ((id, bytes), (_, a)) in records.iter().zip(&run(&records)).take(6) {
        let cli = single("redact", &args[1..], bytes);
        assert_eq!(a["data"]["content"].as_str().map(str::as_bytes), Some(&cli.redacted[..]), "{id}");
    }
}

#[test]
fn markers_stay_in_data_and_id() {
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    for file in files_under(&fixture("hl7v2/markers")).into_iter().chain(files_under(&fixture("redact/markers"))) {
        let bytes = std::fs::read(&file).expect("fixture");
        inputs.extend(variants(&bytes).into_iter().map(|(_, v)| v));
    }
    let mut lines: Vec<String> = inputs.iter().enumerate().map(|(i, b)| record_line(json!(i), b, None)).collect();
    // Lines broken around a marker: not JSON, an unknown field named by a marker, a bad base64
    // holding one, a format named by one, both contents, a marker where the id belongs.
    lines.extend([
        "MKR90001X not json".to_owned(),
        r#"{"id": "u", "MKR90002X": 1, "content": "x"}"#.to_owned(),
        r#"{"id": "v", "content_base64": "MKR90003X!"}"#.to_owned(),
        r#"{"id": "w", "format": "MKR90004X", "content": "x"}"#.to_owned(),
        r#"{"id": "x", "content": "MKR90005X", "content_base64": "MKR90006X"}"#.to_owned(),
        r#"{"id": ["MKR90007X"], "content": "MKR90008X"}"#.to_owned(),
        r#"{"id": "y", "content": "MKR90009X"#.to_owned(),
    ]);
    assert!(lines.len() > 100);
    for command in ["validate", "inspect", "parse", "convert", "redact"] {
        let (exit, answers, stderr) = stream(&[command], &lines, &[("RUST_LOG", "trace")]);
        assert_eq!(exit, 0, "{command}");
        assert_eq!(answers.len(), lines.len(), "{command}");
        assert!(!has_marker(stderr.as_bytes()), "{command}: a marker on stderr: {stderr}");
        for a in &answers {
            let mut rest = a.clone();
            let obj = rest.as_object_mut().expect("an object");
            obj.remove("data");
            obj.remove("id");
            assert!(!has_marker(rest.to_string().as_bytes()), "{command}: a marker outside data and id: {rest}");
            if matches!(command, "validate" | "inspect") {
                assert!(!has_marker(a.to_string().as_bytes()) || a["id"].to_string().contains("MKR"), "{command}: {a}");
            }
        }
    }
}

#[test]
fn options_a_stream_does_not_take_are_usage_errors() {
    let dir = fixture("hl7v2/valid");
    let dir = dir.to_str().expect("utf-8 path");
    for args in [
        &["validate", "--input-format", "json-lines", "-", "--report", "sarif=x.sarif"][..],
        &["validate", "--input-format", "json-lines", "-", "--quiet"],
        &["redact", "--input-format", "json-lines", "-", "--manifest", "m.json"],
        &["redact", "--input-format", "json-lines", "-", "--line-ending", "lf"],
        &["parse", "--input-format", "json-lines", "-", "--unsafe-show-values"],
    ] {
        let o = run_stdin(args, b"");
        crate::common::assert_failure_line(&o, "CLI_USAGE");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
    let o = run_stdin(&["inspect", "--input-format", "json-lines", dir], b"");
    crate::common::assert_failure_line(&o, "CLI_NO_INPUT");
    let o = run_stdin(&["parse", "--input-format", "xml-lines", "-"], b"");
    crate::common::assert_failure_line(&o, "CLI_USAGE");
    // An empty stream is answered by nothing, successfully.
    let o = run_stdin(&["validate", "--input-format", "json-lines", "-"], b"");
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stdout.is_empty() && o.stderr.is_empty());
}

#[test]
fn each_pipe_process_appends_one_audit_line_of_counts_and_the_chain_verifies() {
    let dir = std::env::temp_dir().join(format!("phiward-scale-out-audit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let log = dir.join("executor-1.audit.jsonl");
    let log = log.to_str().expect("utf-8 path");
    let msg = std::fs::read(fixture("hl7v2/markers/markers_adt_a01_v2.5.1.hl7")).expect("fixture");
    let lines = vec![record_line(json!("a"), &msg, None), "MKR90010X".to_owned(), record_line(json!("b"), &msg, None)];
    // Two partitions on one executor: two processes, one log.
    for _ in 0..2 {
        let (exit, answers, _) = stream(&["redact", "--audit-log", log], &lines, &[]);
        assert_eq!((exit, answers.len()), (0, 3));
    }
    let text = std::fs::read(log).expect("the log");
    assert!(!has_marker(&text), "a marker in the audit log");
    let entries: Vec<Value> =
        String::from_utf8_lossy(&text).lines().map(|l| serde_json::from_str(l).expect("JSON lines")).collect();
    assert_eq!(entries.len(), 3, "the anchor and one line per process");
    for e in &entries[1..] {
        assert_eq!(e["op"], json!("redact"));
        assert_eq!(e["counts"], json!({"lines": 3, "success": 2, "verdict": 0, "failed": 1}), "{e}");
        assert_eq!(e["codes"], json!(["CLI_USAGE"]), "{e}");
        assert_eq!(e["exit"], json!(0));
    }
    let o = crate::common::run(&["audit", "verify", log]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("ok: 3 lines, head "));
    let _ = std::fs::remove_dir_all(&dir);
}
