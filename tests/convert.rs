//! `phiward convert` (HL7 v2 to FHIR R4), on the messages of fixtures/hl7v2/convert (one per
//! message type the converter is built for; invented people only):
//!
//! - every Bundle: exit 0, no error finding from phiward's validator, MessageHeader first,
//!   ids and fullUrls unique, every reference resolves inside the Bundle, two runs identical,
//!   for each Bundle type; `transaction` entries are PUTs by id;
//! - golden outputs (fixtures/hl7v2/convert/golden/, compared as parsed JSON);
//! - multi-record input: one line per record, a broken record does not lose the others;
//! - keyed ids (`--id-key-file`), naming systems, `--default-timezone`, unknown codes kept;
//! - usage errors; markers in every value never reach a finding or stderr.
//!
//! The independent validator (@medplum/core) runs in tests/peers/convert_medplum.mjs.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::{code, files_under, fixture, run, run_stdin, run_with};
use crate::no_leak::has_marker;

fn messages() -> Vec<std::path::PathBuf> {
    let files: Vec<_> = files_under(&fixture("hl7v2/convert"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "hl7") && !p.to_string_lossy().contains("/golden/"))
        .collect();
    assert!(files.len() >= 22, "convert fixtures missing");
    files
}

fn convert(args: &[&str], input: &[u8]) -> (i32, Vec<Value>) {
    let mut all = vec!["convert", "--json"];
    all.extend_from_slice(args);
    all.push("-");
    let o = run_stdin(&all, input);
    assert!(crate::common::stderr_clean_or_records_failed(&o.stderr), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    let lines = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("convert --json prints JSON lines"))
        .collect();
    (code(&o), lines)
}

fn references(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("reference", Value::String(s)) => out.push(s.clone()),
                    _ => references(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, out)),
        _ => {}
    }
}

/// The checks every converted Bundle passes.
fn check_bundle(out: &Value, bundle_type: &str, ctx: &str) {
    assert_eq!(out["format"], "fhir", "{ctx}");
    let errors: Vec<_> = out["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["severity"] == "error" || f["severity"] == "fatal")
        .collect();
    assert!(errors.is_empty(), "{ctx}: error findings {errors:?}");
    let bundle = &out["bundle"];
    assert_eq!(bundle["resourceType"], "Bundle");
    assert_eq!(bundle["type"], bundle_type, "{ctx}");
    let entries = bundle["entry"].as_array().expect("entries");
    if bundle_type == "message" {
        assert_eq!(entries[0]["resource"]["resourceType"], "MessageHeader", "{ctx}");
    }
    let mut full_urls = BTreeSet::new();
    let mut ids = BTreeSet::new();
    for e in entries {
        let full = e["fullUrl"].as_str().expect("fullUrl").to_owned();
        let id = e["resource"]["id"].as_str().expect("id");
        assert_eq!(full, format!("urn:uuid:{id}"), "{ctx}");
        assert!(full_urls.insert(full), "{ctx}: duplicate fullUrl");
        assert!(ids.insert(id.to_owned()), "{ctx}: duplicate id");
        if bundle_type == "transaction" {
            assert_eq!(e["request"]["method"], "PUT", "{ctx}");
            let url = format!("{}/{id}", e["resource"]["resourceType"].as_str().unwrap_or_default());
            assert_eq!(e["request"]["url"], Value::String(url), "{ctx}");
        }
    }
    let mut refs = Vec::new();
    references(&bundle["entry"], &mut refs);
    for r in refs {
        assert!(full_urls.contains(&r), "{ctx}: reference does not resolve");
    }
}

#[test]
fn every_message_type_converts_to_a_valid_deterministic_bundle() {
    let mut resources = 0;
    for file in messages() {
        let input = std::fs::read(&file).expect("fixture");
        for ty in ["message", "collection", "transaction"] {
            let (c1, a) = convert(&["--bundle-type", ty], &input);
            let (c2, b) = convert(&["--bundle-type", ty], &input);
            let ctx = format!("{} ({ty})", file.display());
            assert_eq!((c1, c2), (0, 0), "{ctx}: exit");
            assert_eq!(a, b, "{ctx}: two runs differ");
            assert_eq!(a.len(), 1, "{ctx}");
            check_bundle(&a[0], ty, &ctx);
            resources += a[0]["bundle"]["entry"].as_array().map_or(0, Vec::len);
        }
        // Byte-identical, not only equal as JSON.
        let args = ["convert", "--json", file.to_str().unwrap_or_default()];
        assert_eq!(run(&args).stdout, run(&args).stdout);
    }
    assert!(resources > 500, "only {resources} resources");
}

#[test]
fn golden_outputs() {
    for name in ["adt_a01", "oru_r01", "vxu_v04", "siu_s12", "mdm_t02"] {
        let input = std::fs::read(fixture(&format!("hl7v2/convert/{name}.hl7"))).expect("fixture");
        let (_, out) = convert(&["--default-timezone", "-05:00"], &input);
        let golden = fixture(&format!("hl7v2/convert/golden/{name}.json"));
        if std::env::var_os("PHIWARD_BLESS").is_some() {
            let text = serde_json::to_string_pretty(&out[0]).unwrap_or_default();
            std::fs::write(&golden, text + "\n").expect("write golden");
        }
        let expected: Value = serde_json::from_slice(&std::fs::read(&golden).expect("golden")).expect("golden JSON");
        assert_eq!(out[0], expected, "{name} differs from its golden output (PHIWARD_BLESS=1 rewrites)");
    }
}

#[test]
fn multi_record_input_gives_one_line_per_record_and_keeps_going() {
    let mut input = std::fs::read(fixture("hl7v2/convert/adt_a01.hl7")).expect("fixture");
    input.extend_from_slice(b"MSH|^~\\&|BROKEN\r");
    input.extend(std::fs::read(fixture("hl7v2/convert/oru_r01.hl7")).expect("fixture"));
    input.extend_from_slice(b"MSH|^^^^|\r");
    input.extend(std::fs::read(fixture("hl7v2/convert/vxu_v04.hl7")).expect("fixture"));
    let (c, lines) = convert(&[], &input);
    assert_eq!(c, 65, "a failed record makes the exit 65");
    assert_eq!(lines.len(), 5);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["record"], i as u64 + 1);
    }
    assert_eq!(lines[3]["error"], "CLI_PARSE_FAILED");
    for i in [0, 2, 4] {
        check_bundle(&lines[i], "message", &format!("record {}", i + 1));
    }
    // The MLLP framing of the same messages gives the same Bundles.
    let mut framed = Vec::new();
    for name in ["adt_a01", "oru_r01"] {
        framed.push(0x0B);
        framed.extend(std::fs::read(fixture(&format!("hl7v2/convert/{name}.hl7"))).expect("fixture"));
        framed.extend_from_slice(&[0x1C, 0x0D]);
    }
    let (c, lines) = convert(&[], &framed);
    assert_eq!(c, 0);
    assert_eq!(lines.len(), 2);
    // Under a redacting policy each record stays one JSON line (the redacted Bundle used to
    // keep the redactor's final newline inside the record's object).
    let policy = fixture("../policy/safe-harbor.toml");
    let policy = policy.to_str().expect("utf-8 path");
    let (c, lines) = convert(&["--policy", policy], &input);
    assert_eq!(c, 65);
    assert_eq!(lines.len(), 5, "one JSON line per record");
    for i in [0, 2, 4] {
        assert_eq!(lines[i]["record"], i as u64 + 1);
        assert_eq!(lines[i]["bundle"]["resourceType"], "Bundle");
    }
}

fn patient_ids(out: &Value) -> Vec<String> {
    out["bundle"]["entry"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["resource"]["resourceType"] == "Patient")
        .map(|e| e["resource"]["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn keyed_ids_follow_the_patient_not_the_message() {
    let dir = std::env::temp_dir().join(format!("phiward-convert-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let key = dir.join("key");
    let other = dir.join("other");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").expect("key");
    std::fs::write(&other, "fedcba9876543210fedcba9876543210\n").expect("key");
    let a = std::fs::read(fixture("hl7v2/convert/adt_a01.hl7")).expect("fixture");
    let b = std::fs::read(fixture("hl7v2/convert/adt_a08.hl7")).expect("fixture");
    let k = key.to_string_lossy().into_owned();
    let o = other.to_string_lossy().into_owned();
    let (_, ka) = convert(&["--id-key-file", &k], &a);
    let (_, kb) = convert(&["--id-key-file", &k], &b);
    let (_, oa) = convert(&["--id-key-file", &o], &a);
    let (_, ua) = convert(&[], &a);
    let (_, ub) = convert(&[], &b);
    // Same PID-3 in two messages: the same Patient id with a key...
    assert_eq!(patient_ids(&ka[0]), patient_ids(&kb[0]));
    // ...another key gives another id, and without a key ids are per message.
    assert_ne!(patient_ids(&ka[0]), patient_ids(&oa[0]));
    assert_ne!(patient_ids(&ua[0]), patient_ids(&ub[0]));
    check_bundle(&ka[0], "message", "keyed");
    let short = dir.join("short");
    std::fs::write(&short, "short").expect("key");
    let s = short.to_string_lossy().into_owned();
    let out = run(&["convert", "--id-key-file", &s, fixture("hl7v2/convert/adt_a01.hl7").to_str().unwrap_or_default()]);
    crate::common::assert_failure_line(&out, "CLI_KEY_INVALID");
    let _ = std::fs::remove_dir_all(&dir);
}

fn codes_at(out: &Value, code: &str) -> Vec<String> {
    out["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["code"] == code)
        .map(|f| f["location"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn naming_systems_give_identifier_systems() {
    let dir = std::env::temp_dir().join(format!("phiward-convert-ns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let table = dir.join("naming.txt");
    std::fs::write(
        &table,
        "# authority uri\nMERCYHOSP http://mercy.example.org/fhir/sid/mrn\nUSSSA http://hl7.org/fhir/sid/us-ssn\n",
    )
    .expect("table");
    let t = table.to_string_lossy().into_owned();
    let input = std::fs::read(fixture("hl7v2/convert/adt_a01.hl7")).expect("fixture");
    let (_, without) = convert(&[], &input);
    let (_, with) = convert(&["--naming-systems", &t], &input);
    assert!(codes_at(&without[0], "CONVERT_IDENTIFIER_SYSTEM_UNKNOWN").iter().any(|l| l.starts_with("PID[1]-3[1]")));
    assert!(!codes_at(&with[0], "CONVERT_IDENTIFIER_SYSTEM_UNKNOWN").iter().any(|l| l.starts_with("PID[1]-3[")));
    let text = serde_json::to_string(&with[0]["bundle"]).unwrap_or_default();
    assert!(text.contains("http://mercy.example.org/fhir/sid/mrn"));
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "MERCYHOSP not a uri\n").expect("table");
    let b = bad.to_string_lossy().into_owned();
    let out =
        run(&["convert", "--naming-systems", &b, fixture("hl7v2/convert/adt_a01.hl7").to_str().unwrap_or_default()]);
    crate::common::assert_failure_line(&out, "CLI_NAMING_SYSTEMS_INVALID");
    let _ = std::fs::remove_dir_all(&dir);
}

const NO_OFFSET: &[u8] = b"MSH|^~\\&|A|B|C|D|20260301101500||ADT^A04^ADT_A01|TZ1|P|2.5.1\rPID|1||X1^^^H^MR||DOE^JANE||19700101|X\rPV1|1|O|||||||||||||||||V1|||||||||||||||||||||||||202603011015\r";

#[test]
fn timestamps_without_offset_use_the_default_or_become_dates() {
    let (_, plain) = convert(&[], NO_OFFSET);
    let enc = plain[0]["bundle"]["entry"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["resource"]["resourceType"] == "Encounter")
        .cloned()
        .unwrap_or_default();
    assert_eq!(enc["resource"]["period"]["start"], "2026-03-01");
    assert!(
        codes_at(&plain[0], "CONVERT_TIMEZONE_MISSING").iter().any(|l| l == "PV1[1]-44[1]->Encounter.period.start")
    );
    assert!(plain[0]["bundle"].get("timestamp").is_none(), "an instant needs an offset");
    let (_, tz) = convert(&["--default-timezone", "+02:00"], NO_OFFSET);
    let enc = tz[0]["bundle"]["entry"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["resource"]["resourceType"] == "Encounter")
        .cloned()
        .unwrap_or_default();
    assert_eq!(enc["resource"]["period"]["start"], "2026-03-01T10:15:00+02:00");
    assert_eq!(tz[0]["bundle"]["timestamp"], "2026-03-01T10:15:00+02:00");
    // The host's zone never matters.
    let o = run_with(&["convert", "--json", "-"], Some(NO_OFFSET), &[("TZ", "Asia/Kolkata")]);
    assert_eq!(serde_json::from_slice::<Value>(&o.stdout).ok(), Some(plain[0].clone()));
}

/// The first entry of a converted record whose resource has type `ty` (null when there is none).
fn entry_of(out: &Value, ty: &str) -> Value {
    out["bundle"]["entry"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["resource"]["resourceType"] == ty)
        .cloned()
        .unwrap_or_default()
}

/// The Patient entry of a converted record (null when there is none).
fn patient_entry(out: &Value) -> Value {
    entry_of(out, "Patient")
}

#[test]
fn unknown_codes_are_reported_and_never_coerced() {
    let (_, out) = convert(&[], NO_OFFSET);
    assert!(codes_at(&out[0], "CONVERT_CODE_UNMAPPED").iter().any(|l| l == "PID[1]-8[1]->Patient.gender"));
    let patient = patient_entry(&out[0]);
    assert!(patient["resource"].get("gender").is_none(), "never coerced");
    // Not kept as an extension of `_gender`: a required-bound primitive with no value is
    // invalid (CODE_MISSING), so the optional element is left out.
    assert!(patient["resource"].get("_gender").is_none(), "no extension-only code");
    check_bundle(&out[0], "message", "unknown PID-8");
}

#[test]
fn unknown_equipment_type_keeps_a_valid_contact_point() {
    // XTN-3 outside table 0202 (an invented person): reported, and the telecom is kept with
    // system `other` so that it stays valid (cpt-2: a value needs a system).
    let msg = b"MSH|^~\\&|A|B|C|D|20240101120000+0000||ADT^A01^ADT_A01|X1|P|2.3\rEVN|A01|20240101120000+0000\r\
PID|1||123^^^H^MR||Testperson^Ada||19800101|F|||1 Main St^^Town^ST^12345||(555)555-0100^^7|(555)555-0199\rPV1|1|I\r";
    let (status, out) = convert(&[], msg);
    assert_eq!(status, 0);
    check_bundle(&out[0], "message", "unknown equipment type");
    assert!(codes_at(&out[0], "CONVERT_CODE_UNMAPPED").iter().any(|l| l == "PID[1]-13[1].3->Patient.telecom"));
    let patient = patient_entry(&out[0]);
    assert_eq!(patient["resource"]["telecom"][0]["system"], "other");
    assert_eq!(patient["resource"]["telecom"][1]["system"], "phone");
}

fn appointment(out: &Value) -> Value {
    entry_of(out, "Appointment")["resource"].clone()
}

#[test]
fn appointment_times_come_from_sch_tq1_or_ais_and_stay_valid() {
    // FHIR needs start and end together (app-2), and both unless proposed, cancelled or
    // waitlist (app-3). Invented schedules, one timing source each.
    let msh = "MSH|^~\\&|A|B|C|D|20240101120000-0500||SIU^S12^SIU_S12|S1|P|2.5.1\r";
    let pid = "PID|1||123^^^H^MR||Testperson^Ada||19800101|F\rRGS|1\r";
    // (SCH and TQ1, AIS, the times expected, the status expected)
    type Case<'a> = (&'a str, &'a str, Option<(&'a str, &'a str)>, &'a str);
    let cases: [Case<'_>; 5] = [
        // TQ1-7/8 (the timing segment of 2.5 and later).
        (
            "SCH|P1|F1\rTQ1|||||||20240105090000-0500|20240105093000-0500\r",
            "AIS|1||CHK^Checkup^L\r",
            Some(("2024-01-05T09:00:00-05:00", "2024-01-05T09:30:00-05:00")),
            "booked",
        ),
        // AIS-4 with its duration (AIS-7/8): the end is derived.
        (
            "SCH|P1|F1\r",
            "AIS|1||CHK^Checkup^L|20240105233000-0500|||45|MIN\r",
            Some(("2024-01-05T23:30:00-05:00", "2024-01-06T00:15:00-05:00")),
            "booked",
        ),
        // SCH-11 start and SCH-9/10 duration in hours.
        (
            "SCH|P1|F1|||||||2|HR|^^^20240105090000+0100\r",
            "AIS|1||CHK^Checkup^L\r",
            Some(("2024-01-05T09:00:00+01:00", "2024-01-05T11:00:00+01:00")),
            "booked",
        ),
        // A start without an end or duration: left out, and the appointment is proposed.
        ("SCH|P1|F1\r", "AIS|1||CHK^Checkup^L|20240105090000-0500\r", None, "proposed"),
        // No time at all, SCH-25 booked: proposed, SCH-25 kept as originalText.
        ("SCH|P1|F1|||||||||||||||||||||||Booked\r", "AIS|1||CHK^Checkup^L\r", None, "proposed"),
    ];
    for (i, (sch, ais, times, status)) in cases.into_iter().enumerate() {
        let msg = format!("{msh}{sch}{pid}{ais}");
        let (code, out) = convert(&[], msg.as_bytes());
        assert_eq!(code, 0, "case {i}");
        check_bundle(&out[0], "message", &format!("case {i}"));
        let a = appointment(&out[0]);
        assert_eq!(a["status"], status, "case {i}");
        let incomplete = codes_at(&out[0], "CONVERT_TIMING_INCOMPLETE");
        match times {
            Some((start, end)) => {
                assert_eq!((a["start"].as_str(), a["end"].as_str()), (Some(start), Some(end)), "case {i}");
                assert!(incomplete.is_empty(), "case {i}");
            }
            None => {
                assert!(a.get("start").is_none() && a.get("end").is_none(), "case {i}");
                assert!(incomplete.iter().any(|l| l == "SCH[1]->Appointment.status"), "case {i}: {incomplete:?}");
            }
        }
    }
    let (_, out) = convert(&[], format!("{msh}SCH|P1|F1|||||||||||||||||||||||Booked\r{pid}").as_bytes());
    assert_eq!(appointment(&out[0])["_status"]["extension"][0]["valueString"], "Booked");
}

#[test]
fn usage_errors() {
    let f = fixture("hl7v2/convert/adt_a01.hl7");
    let f = f.to_str().unwrap_or_default();
    for args in [
        vec!["convert", "--no-such-flag", f],
        vec!["convert", "--to", "cda", f],
        vec!["convert", "--bundle-type", "document", f],
        vec!["convert", "--default-timezone", "CET", f],
        vec!["convert", "--default-timezone", "+5", f],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 2, "{args:?}");
        crate::common::assert_failure_line(&o, "CLI_USAGE");
    }
    let o = run(&["convert", fixture("fhir/valid").join("condition.json").to_str().unwrap_or_default()]);
    if code(&o) != 66 {
        crate::common::assert_failure_line(&o, "CLI_FORMAT_UNSUPPORTED");
    }
}

/// Replaces every value of an ER7 message (every component and subcomponent, MSH-1/2 and the
/// segment ids aside) with a unique marker.
fn mark(input: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(input);
    let mut n = 0;
    let mut out = String::new();
    for seg in text.split('\r').filter(|s| !s.is_empty()) {
        let fields: Vec<&str> = seg.split('|').collect();
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                out.push('|');
            }
            let keep = i == 0 || (fields[0] == "MSH" && (i == 1 || i == 8 || i == 11));
            if keep {
                out.push_str(f);
                continue;
            }
            let mut token = String::new();
            for ch in f.chars() {
                if "^~&".contains(ch) {
                    if !token.is_empty() {
                        n += 1;
                        out.push_str(&format!("MKR{n:05}X"));
                        token.clear();
                    }
                    out.push(ch);
                } else {
                    token.push(ch);
                }
            }
            if !token.is_empty() {
                n += 1;
                out.push_str(&format!("MKR{n:05}X"));
            }
        }
        out.push('\r');
    }
    out.into_bytes()
}

#[test]
fn markers_never_reach_a_finding_or_stderr() {
    let mut inputs: Vec<Vec<u8>> = messages().iter().map(|f| mark(&std::fs::read(f).expect("fixture"))).collect();
    inputs.extend(files_under(&fixture("hl7v2/markers")).iter().map(|f| std::fs::read(f).expect("marker fixture")));
    let mut findings = 0;
    for input in &inputs {
        assert!(has_marker(input));
        for args in [
            &["convert", "--json", "-"][..],
            &["convert", "-"][..],
            &["convert", "--json", "--default-timezone", "Z", "-"][..],
        ] {
            let o = run_with(args, Some(input), &[("RUST_LOG", "trace")]);
            assert!(!has_marker(&o.stderr), "marker on stderr");
            if args.contains(&"--json") {
                for line in String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.trim().is_empty()) {
                    let v: Value = serde_json::from_str(line).expect("JSON line");
                    let f = serde_json::to_string(&v["findings"]).unwrap_or_default();
                    assert!(!has_marker(f.as_bytes()), "marker in a finding");
                    findings += v["findings"].as_array().map_or(0, Vec::len);
                }
            }
        }
    }
    assert!(findings > 500, "only {findings} findings checked");
}

/// Every HL7 v2 fixture of the repository (valid, invalid, conformance, markers, MLLP streams)
/// converts without a panic or a hang: exit 0, 1 or 65, and on failure only the failure line.
#[test]
fn every_hl7_fixture_converts_or_fails_cleanly() {
    let mut runs = 0;
    for file in files_under(&fixture("hl7v2")) {
        let name = file.to_string_lossy().into_owned();
        if !(name.ends_with(".hl7") || name.ends_with(".mllp") || name.ends_with(".txt")) {
            continue;
        }
        let o = run(&["convert", "--json", &name]);
        runs += 1;
        let c = code(&o);
        assert!([0, 1, 65].contains(&c), "{name}: exit {c}");
        if o.stdout.is_empty() {
            // A batch without messages converts to nothing; anything else is a failure line.
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.is_empty() || (err.starts_with("phiward: ") && err.lines().count() == 1), "{name}: {err}");
        } else {
            assert!(crate::common::stderr_clean_or_records_failed(&o.stderr), "{name}: stderr with data");
            for line in String::from_utf8_lossy(&o.stdout).lines() {
                let v: Value = serde_json::from_str(line).expect("JSON line");
                assert!(v.get("bundle").is_some() || v.get("error").is_some(), "{name}");
            }
        }
    }
    assert!(runs > 100, "only {runs} fixtures");
}

/// Regression: a second PID (a second merge of an ADT^A40) must not attach its MRG to the first
/// patient.
#[test]
fn a_second_patient_is_reported_not_merged_into_the_first() {
    let mut input = std::fs::read(fixture("hl7v2/convert/adt_a40.hl7")).expect("fixture");
    input.extend_from_slice(b"PID|1||PATID3001^^^MERCYHOSP^MR||OTHER^PERSON\rMRG|PATID3000^^^MERCYHOSP^MR\r");
    let (c, out) = convert(&[], &input);
    assert_eq!(c, 0);
    check_bundle(&out[0], "message", "a40 twice");
    let unmapped = codes_at(&out[0], "CONVERT_SEGMENT_UNMAPPED");
    assert!(unmapped.contains(&"PID[2]->-".to_owned()) && unmapped.contains(&"MRG[2]->-".to_owned()), "{unmapped:?}");
    assert_eq!(patient_ids(&out[0]).len(), 2, "the survivor and the first merged patient only");
}

#[test]
fn evn_becomes_a_provenance_or_is_reported() {
    // EVN to Provenance (the IG's EVN[Provenance] map). Invented people and places.
    let pid = "PID|1||123^^^H^MR||Testperson^Ada||19800101|F\rPV1|1|I\r";
    // EVN-4 reason, EVN-6 occurred, EVN-7 facility, no operator: the agent is the sending
    // facility (MSH-4), as author.
    let msg = format!(
        "MSH|^~\\&|APP|FAC^1.2.3^ISO|C|D|20240101120000-0500||ADT^A01^ADT_A01|E1|P|2.5.1\r\
         EVN|A01|20240101115900-0500|20240102|01^Patient request^HL70062||20240101115500-0500|WARD^9.8.7^ISO\r{pid}"
    );
    let (status, out) = convert(&[], msg.as_bytes());
    assert_eq!(status, 0);
    check_bundle(&out[0], "message", "EVN with reason, occurred and facility");
    let p = entry_of(&out[0], "Provenance")["resource"].clone();
    assert_eq!(p["recorded"], "2024-01-01T11:59:00-05:00");
    assert_eq!(p["occurredDateTime"], "2024-01-01T11:55:00-05:00");
    assert_eq!(p["reason"][0]["coding"][0]["code"], "01");
    assert_eq!(p["reason"][0]["coding"][0]["system"], "http://terminology.hl7.org/CodeSystem/v2-0062");
    assert_eq!(p["activity"]["coding"][0]["display"], "event - ADT^A01");
    assert_eq!(p["agent"][0]["type"]["coding"][0]["code"], "author");
    let targets: Vec<&str> =
        p["target"].as_array().expect("target").iter().filter_map(|t| t["reference"].as_str()).collect();
    let patient = patient_entry(&out[0])["fullUrl"].as_str().unwrap_or_default().to_owned();
    let encounter = entry_of(&out[0], "Encounter")["fullUrl"].as_str().unwrap_or_default().to_owned();
    assert_eq!(targets, [patient.as_str(), encounter.as_str()]);
    let sender = p["agent"][0]["who"]["reference"].as_str().unwrap_or_default();
    let org = out[0]["bundle"]["entry"].as_array().expect("entries").iter().find(|e| e["fullUrl"] == sender).cloned();
    assert_eq!(org.map(|e| e["resource"]["resourceType"].clone()), Some(Value::from("Organization")));
    let location = p["location"]["reference"].as_str().unwrap_or_default();
    assert!(out[0]["bundle"]["entry"].as_array().expect("entries").iter().any(|e| e["fullUrl"] == location
        && e["resource"]["resourceType"] == "Location"
        && e["resource"]["name"] == "WARD"));
    // EVN-3 (planned) has no place in Provenance: reported; the mapped fields are not.
    let unmapped = codes_at(&out[0], "CONVERT_FIELD_UNMAPPED");
    assert!(unmapped.iter().any(|l| l == "EVN[1]-3->-"), "{unmapped:?}");
    assert!(
        !unmapped.iter().any(|l| l.starts_with("EVN[1]-2") || l.starts_with("EVN[1]-4") || l.starts_with("EVN[1]-6"))
    );

    // No time to the second with an offset (EVN-2 a date, MSH-7 not used then) and no sender:
    // no Provenance; EVN's fields are reported.
    let msg = format!("MSH|^~\\&|APP||C|D|20240101120000-0500||ADT^A01^ADT_A01|E2|P|2.5.1\rEVN|A01|20240101\r{pid}");
    let (status, out) = convert(&[], msg.as_bytes());
    assert_eq!(status, 0);
    check_bundle(&out[0], "message", "EVN without a recorded instant");
    assert!(entry_of(&out[0], "Provenance").is_null());
    assert!(codes_at(&out[0], "CONVERT_FIELD_UNMAPPED").iter().any(|l| l == "EVN[1]-2->-"));
    assert!(codes_at(&out[0], "CONVERT_PRECISION_INSUFFICIENT").iter().any(|l| l.starts_with("EVN[1]-2")));
}

#[test]
fn aip_and_ail_become_appointment_participants() {
    // Invented schedule: a booked practitioner, a pending room, and an AIP with neither
    // resource nor type (app-1: a participant needs one), which is reported instead.
    let msg = b"MSH|^~\\&|A|B|C|D|20240101120000-0500||SIU^S12^SIU_S12|S1|P|2.5.1\r\
SCH|P1|F1||||||||||^^30^20240105090000-0500^20240105093000-0500\rPID|1||123^^^H^MR||Testperson^Ada||19800101|F\r\
RGS|1\rAIS|1||CHK^Checkup^L\rAIP|1||77^Doctor^Dana|D^Doctor||20240105090000-0500|||30|MIN||Booked\r\
AIL|1||CLINIC^RM3|||20240105090000-0500||||||Waitlist\rAIP|2|||||||||||Booked\r";
    let (status, out) = convert(&[], msg);
    assert_eq!(status, 0);
    check_bundle(&out[0], "message", "AIP and AIL");
    let parts = appointment(&out[0])["participant"].as_array().expect("participants").clone();
    assert_eq!(parts.len(), 3, "the patient, the practitioner, the room");
    assert_eq!(parts[1]["status"], "accepted");
    assert_eq!(parts[1]["type"][0]["coding"][0]["code"], "D");
    assert_eq!(parts[1]["period"]["end"], "2024-01-05T09:30:00-05:00");
    assert_eq!(parts[2]["status"], "tentative");
    assert!(parts[2]["period"]["end"].is_null(), "no duration, no end");
    assert!(codes_at(&out[0], "CONVERT_SEGMENT_UNMAPPED").iter().any(|l| l.starts_with("AIP[2]")));
}

#[test]
fn pid_18_becomes_the_encounters_account() {
    // An invented patient and account number.
    let msg = b"MSH|^~\\&|A|B|C|D|20240101120000-0500||ADT^A01^ADT_A01|X9|P|2.5.1\rEVN|A01\r\
PID|1||123^^^H^MR||Testperson^Ada||19800101|F||||||||||ACC9^^^H^AN\rPV1|1|I\r";
    let (status, out) = convert(&[], msg);
    assert_eq!(status, 0);
    check_bundle(&out[0], "message", "account");
    let account = entry_of(&out[0], "Account");
    assert_eq!(account["resource"]["identifier"][0]["value"], "ACC9");
    assert_eq!(account["resource"]["status"], "active");
    assert_eq!(account["resource"]["subject"][0]["reference"], patient_entry(&out[0])["fullUrl"]);
    assert_eq!(entry_of(&out[0], "Encounter")["resource"]["account"][0]["reference"], account["fullUrl"]);
    // An account number without its id number is reported, and no Account is made.
    let msg = b"MSH|^~\\&|A|B|C|D|20240101120000-0500||ADT^A01^ADT_A01|X9|P|2.5.1\rEVN|A01\r\
PID|1||123^^^H^MR||Testperson^Ada||19800101|F||||||||||^^^H^AN\rPV1|1|I\r";
    let (_, out) = convert(&[], msg);
    assert!(entry_of(&out[0], "Account").is_null());
    assert!(codes_at(&out[0], "CONVERT_FIELD_UNMAPPED").iter().any(|l| l.starts_with("PID[1]-18")));
}

#[test]
fn obx_producer_performers_method_device_and_analysis_time() {
    // Invented lab, director and analyzer. OBX-15 producer, 17 method, 18 device, 19 analysis
    // time, 20 site, 21 instance id, 23/24 performing organization with its address, 25 its
    // medical director; MSH-11 processing id and mode.
    let head = "MSH|^~\\&|A|B|C|D|20240101120000-0500||ORU^R01^ORU_R01|R7|P^T|2.5.1\r\
PID|1||123^^^H^MR||Testperson^Ada||19800101|F\rOBR|1|P1|F1|24356-8^UA^LN|||20240101110000-0500||||||||||||||20240101115000-0500|||F\r";
    let obx = |n: u32, director: &str| {
        format!(
            "OBX|{n}|ST|5778-6^Color^LN||Amber||||||F|||20240101110000-0500|LABX^Lab X^L||MTH^Dipstick^L~MTH2^Other^L|\
AN7^LABX|20240101113000-0500|87612001^Blood^SCT|OB{n}^LABX||Lab X Reference^L^^^^CLIA&2.16.840.1.113883.4.7&ISO^XX^^^05D777|\
1 Test Way^^Town^ST^00000|{director}\r"
        )
    };
    let msg = format!("{head}{}{}", obx(1, "55^Director^Dee"), obx(2, ""));
    let (status, out) = convert(&["--default-timezone", "Z"], msg.as_bytes());
    assert_eq!(status, 0);
    check_bundle(&out[0], "message", "OBX producers");
    let entries = out[0]["bundle"]["entry"].as_array().expect("entries").clone();
    let by_url = |url: &Value| entries.iter().find(|e| &e["fullUrl"] == url).map(|e| e["resource"].clone());
    let obs: Vec<Value> = entries
        .iter()
        .filter(|e| e["resource"]["resourceType"] == "Observation")
        .map(|e| e["resource"].clone())
        .collect();
    assert_eq!(obs.len(), 2);
    let o = &obs[0];
    assert_eq!(o["extension"][0]["url"], "http://hl7.org/fhir/StructureDefinition/observation-analysis-date-time");
    assert_eq!(o["extension"][0]["valueDateTime"], "2024-01-01T11:30:00-05:00");
    assert_eq!(o["identifier"][0]["value"], "OB1");
    assert_eq!(o["identifier"][0]["type"]["coding"][0]["code"], "FILL");
    assert_eq!(o["method"]["coding"][0]["code"], "MTH");
    assert_eq!(o["bodySite"]["coding"][0]["code"], "87612001");
    let device = by_url(&o["device"]["reference"]).expect("device");
    assert_eq!(device["resourceType"], "Device");
    assert_eq!(device["identifier"][0]["value"], "AN7");
    // Performers: the producer Organization, then the director's PractitionerRole in the
    // performing Organization (OBX-25 valued); without a director, that Organization itself.
    let producer = by_url(&o["performer"][0]["reference"]).expect("producer");
    assert_eq!((producer["name"].as_str(), producer["identifier"][0]["value"].as_str()), (Some("Lab X"), Some("LABX")));
    let role = by_url(&o["performer"][1]["reference"]).expect("role");
    assert_eq!(role["resourceType"], "PractitionerRole");
    assert_eq!(role["code"][0]["coding"][0]["code"], "MDIR");
    let performing = by_url(&role["organization"]["reference"]).expect("performing organization");
    assert_eq!(performing["name"], "Lab X Reference");
    assert_eq!(performing["identifier"][0]["system"], "urn:oid:2.16.840.1.113883.4.7");
    assert_eq!(performing["identifier"][0]["value"], "05D777");
    assert_eq!(performing["address"][0]["city"], "Town");
    assert_eq!(by_url(&role["practitioner"]["reference"]).expect("director")["resourceType"], "Practitioner");
    assert_eq!(obs[1]["performer"][0]["reference"], o["performer"][0]["reference"], "one producer, shared");
    assert_eq!(obs[1]["performer"][1]["reference"], role["organization"]["reference"], "shared");
    assert_eq!(obs[1]["device"]["reference"], o["device"]["reference"], "one device, shared");
    // One method in FHIR: the second repetition is reported; the mapped fields are not.
    let unmapped = codes_at(&out[0], "CONVERT_FIELD_UNMAPPED");
    assert!(unmapped.iter().any(|l| l.starts_with("OBX[1]-17[2]")), "{unmapped:?}");
    assert!(!unmapped.iter().any(|l| {
        ["-15", "-18", "-19", "-20", "-21", "-23", "-24", "-25", "MSH[1]-11"]
            .iter()
            .any(|f| l.starts_with(&format!("OBX[1]{f}")) || l.starts_with(f))
    }));
    let header = entry_of(&out[0], "MessageHeader")["resource"].clone();
    assert_eq!(header["meta"]["tag"][0]["code"], "P");
    assert_eq!(header["meta"]["tag"][0]["system"], "http://terminology.hl7.org/CodeSystem/v2-0103");
    assert_eq!(header["meta"]["tag"][1]["code"], "T");
}

#[test]
fn a_doubled_escape_in_msh_2_is_read_converted_and_said() {
    // MSH-2 `^~\\&` (the escape character written twice, as in samples copied out of source
    // code): read as `^~\&`; the Bundle is made, the repair is a warning; validate says error.
    let msg = b"MSH|^~\\\\&|A|B|C|D|20240101120000-0500||ADT^A01^ADT_A01|D2|P|2.6\rEVN|A01\r\
PID|1||123^^^H^MR||Testperson^Ada||19800101|F\rPV1|1|I\r";
    let (status, out) = convert(&[], msg);
    assert_eq!(status, 0);
    check_bundle(&out[0], "message", "doubled escape");
    assert_eq!(codes_at(&out[0], "ENCODING_CHARACTERS_DOUBLED_ESCAPE"), ["MSH[1]-2->-"]);
    assert_eq!(patient_entry(&out[0])["resource"]["name"][0]["family"], "Testperson");
    let o = run_stdin(&["validate", "--json", "-"], msg);
    assert_eq!(code(&o), 1);
    assert!(String::from_utf8_lossy(&o.stdout).contains("ENCODING_CHARACTERS_DOUBLED_ESCAPE"));
}

#[test]
fn pv1_admission_hospitalization_codes_and_pending_location() {
    // The IG's PV1[Encounter] fields beyond the basics, on the A01 fixture (invented people).
    let input = std::fs::read(fixture("hl7v2/convert/adt_a01.hl7")).expect("fixture");
    let (status, out) = convert(&["--default-timezone", "Z"], &input);
    assert_eq!(status, 0);
    check_bundle(&out[0], "message", "PV1");
    let e = entry_of(&out[0], "Encounter")["resource"].clone();
    assert_eq!(e["status"], "in-progress", "an admission with an admit time and no discharge");
    assert!(e["period"]["start"].is_string() && e["period"]["end"].is_null());
    let types: Vec<&str> =
        e["type"].as_array().expect("type").iter().filter_map(|t| t["coding"][0]["system"].as_str()).collect();
    assert_eq!(
        types,
        ["http://terminology.hl7.org/CodeSystem/v2-0007", "http://terminology.hl7.org/CodeSystem/v2-0018"]
    );
    let h = &e["hospitalization"];
    assert_eq!(h["preAdmissionIdentifier"]["value"], "PRE77");
    assert_eq!(h["reAdmission"]["coding"][0]["code"], "R");
    assert_eq!(h["dietPreference"][0]["coding"][0]["code"], "N");
    assert_eq!(h["specialCourtesy"][0]["coding"][0]["code"], "Y");
    assert_eq!(h["specialArrangement"][0]["coding"][0]["code"], "A0");
    let ids: Vec<&str> = e["identifier"].as_array().expect("ids").iter().filter_map(|i| i["value"].as_str()).collect();
    assert_eq!(ids, ["VIS0001", "ALT55"]);
    let statuses: Vec<&str> =
        e["location"].as_array().expect("locations").iter().filter_map(|l| l["status"].as_str()).collect();
    assert_eq!(statuses, ["active", "reserved"]);
    let part = e["participant"].as_array().expect("participants").last().cloned().unwrap_or_default();
    assert_eq!(part["type"][0]["coding"][0]["code"], "PART");
    let unmapped = codes_at(&out[0], "CONVERT_FIELD_UNMAPPED");
    assert!(!unmapped.iter().any(|l| l.starts_with("PV1")), "{unmapped:?}");
}

#[test]
fn control_characters_become_spaces_and_are_reported() {
    // A raw 0x01 in a name, and a hex escape of 0x02 in another field: FHIR strings cannot hold
    // them. Each becomes a space, the Bundle stays valid, the fields are reported.
    let msg = b"MSH|^~\\&|A|B|C|D|20240101120000-0500||ADT^A01^ADT_A01|C1|P|2.5.1\rEVN|A01\r\
PID|1||123^^^H^MR||Test\x01person^Ada||19800101|F|||1 Main\\X02\\St^^Town\rPV1|1|I\r";
    let (status, out) = convert(&[], msg);
    assert_eq!(status, 0);
    check_bundle(&out[0], "message", "control characters");
    let p = &patient_entry(&out[0])["resource"];
    assert_eq!(p["name"][0]["family"], "Test person");
    assert_eq!(p["address"][0]["line"][0], "1 Main St");
    assert_eq!(codes_at(&out[0], "CONVERT_CONTROL_CHARACTER_REPLACED"), ["PID[1]-5->-", "PID[1]-11->-"]);
}

#[test]
fn a_pv1_after_a_second_patient_gives_no_encounter_reference() {
    // The PV1 comes after a second PID: it belongs to the other patient and is reported; no
    // resource may point at an Encounter that is not in the Bundle (an EVN's Provenance did).
    let msg = b"MSH|^~\\&|A|B|C|D|20240101120000-0500||ADT^A01^ADT_A01|P2|P|2.5.1\r\
EVN|A01|20240101115900-0500\rPID|1||123^^^H^MR||Testperson^Ada\rPID|1||124^^^H^MR||Testperson^Bo\rPV1|1|I\r";
    let (status, out) = convert(&["--default-timezone", "Z"], msg);
    assert_eq!(status, 0);
    check_bundle(&out[0], "message", "second patient before PV1");
    assert!(entry_of(&out[0], "Encounter").is_null());
    assert!(codes_at(&out[0], "CONVERT_SEGMENT_UNMAPPED").iter().any(|l| l.starts_with("PV1[1]")));
}

#[test]
fn codes_keep_single_spaces_only() {
    // A code with a double space and a tab inside (CWE-1 of OBX-3), and a processing id with a
    // control character: FHIR `code` allows single spaces only.
    let msg = b"MSH|^~\\&|A|B|C|D|20240101120000-0500||ORU^R01^ORU_R01|W1|P\x01D|2.5.1\r\
PID|1||123^^^H^MR||Testperson^Ada\rOBR|1|P1|F1|CBC^Count^L\rOBX|1|ST|AB  C\tD^Odd^L||x|||A\xc2\x85\xc2\x85B|||F\r";
    let (status, out) = convert(&[], msg);
    assert_eq!(status, 0);
    check_bundle(&out[0], "message", "white space in codes");
    let obs = entry_of(&out[0], "Observation")["resource"].clone();
    assert_eq!(obs["code"]["coding"][0]["code"], "AB C D");
    assert_eq!(obs["interpretation"][0]["coding"][0]["code"], "A B", "U+0085 is white space too");
    let header = entry_of(&out[0], "MessageHeader")["resource"].clone();
    assert_eq!(header["meta"]["tag"][0]["code"], "P D");
}

#[test]
fn a_required_code_made_of_delimiters_only_is_absent_and_reported() {
    // OBX-3 and OBR-4 hold only delimiters: FHIR requires the codes, so the data-absent-reason
    // extension stands in, and the fields are reported.
    let msg = b"MSH|^~\\&|A|B|C|D|20240101120000-0500||ORU^R01^ORU_R01|E1|P|2.5.1\r\
PID|1||123^^^H^MR||Testperson^Ada\rOBR|1|P1|F1|^^\rOBX|1|ST|^~^||x||||||F\r";
    let (status, out) = convert(&[], msg);
    assert_eq!(status, 0);
    check_bundle(&out[0], "message", "codes of delimiters only");
    let missing = codes_at(&out[0], "CONVERT_VALUE_MISSING");
    assert!(missing.iter().any(|l| l == "OBX[1]-3->Observation.code"), "{missing:?}");
    assert!(missing.iter().any(|l| l == "OBR[1]-4->DiagnosticReport.code"), "{missing:?}");
}

#[test]
fn an_appointment_without_patient_or_resources_keeps_a_participant() {
    // SCH alone: FHIR needs a participant; one of unknown type stands in, and the missing
    // patient is reported.
    let msg = b"MSH|^~\\&|A|B|C|D|20240101120000-0500||SIU^S12^SIU_S12|S9|P|2.5.1\r\
SCH|P1|F1||||||||||^^30^20240105090000-0500^20240105093000-0500\r";
    let (status, out) = convert(&[], msg);
    assert_eq!(status, 0);
    check_bundle(&out[0], "message", "appointment alone");
    let parts = appointment(&out[0])["participant"].as_array().expect("participants").clone();
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0]["status"], "needs-action");
    assert!(codes_at(&out[0], "CONVERT_VALUE_MISSING").iter().any(|l| l.ends_with("->Appointment.participant")));
}

#[test]
fn an_end_before_its_start_and_an_inverted_range_are_reported_not_written() {
    // PV1-45 before PV1-44, and an SN range 10-5: FHIR has no such period (per-1) or range
    // (rng-2). The end is left out and the range kept as text, both reported.
    let msg = b"MSH|^~\\&|A|B|C|D|20240101120000-0500||ORU^R01^ORU_R01|V1|P|2.5.1\r\
PID|1||123^^^H^MR||Testperson^Ada\rPV1|1|I||||||||||||||||||||||||||||||||||||||||||20240105120000-0500|20240101120000-0500\r\
OBR|1|P1|F1|CBC^Count^L\rOBX|1|SN|X^Y^L||^10^-^5|mg||||F\r";
    let (status, out) = convert(&[], msg);
    assert_eq!(status, 0);
    check_bundle(&out[0], "message", "inverted period and range");
    let e = entry_of(&out[0], "Encounter")["resource"].clone();
    assert!(e["period"]["start"].is_string() && e["period"]["end"].is_null());
    let obs = entry_of(&out[0], "Observation")["resource"].clone();
    assert!(obs["valueRange"].is_null() && obs["valueString"].is_string());
    let invalid = codes_at(&out[0], "CONVERT_VALUE_INVALID");
    assert!(invalid.iter().any(|l| l.starts_with("PV1[1]-45")), "{invalid:?}");
    assert!(invalid.iter().any(|l| l.starts_with("OBX[1]-5")), "{invalid:?}");
}

/// Regression (a public Japanese RDE^O11 sample): an insurance company id that is the null
/// value `""`, and no company name, names no payer: no Organization without a name or an
/// identifier (org-1), and the required Coverage.payor is said to be missing.
#[test]
fn an_insurer_given_as_the_null_value_makes_no_empty_organization() {
    let input = b"MSH|^~\\&|SEND||RECEIVE||20160821161523+0900||ADT^A08^ADT_A01|MSG1|P|2.5\r\
                  PID|||1000000001^^^^PI||Invented^Taro||19601224|M\r\
                  IN1|1|06^Invented plan^L|\"\"\r";
    let (c, out) = convert(&[], input);
    assert_eq!(c, 0, "{out:?}");
    check_bundle(&out[0], "message", "IN1-3 null");
    let entries = out[0]["bundle"]["entry"].as_array().expect("entries");
    assert!(!entries.iter().any(|e| e["resource"]["resourceType"] == "Organization"), "no Organization: {entries:?}");
    assert_eq!(codes_at(&out[0], "CONVERT_VALUE_MISSING"), ["IN1[1]-3->Coverage.payor"]);
}

/// A unit that claims UCUM and is not a UCUM expression (mcg, mEq) is kept without the UCUM
/// system (the validator would report UCUM_CODE_INVALID), and said; a valid one keeps it.
#[test]
fn units_that_claim_ucum_and_are_not_lose_the_system() {
    let input = b"MSH|^~\\&|A|B|C|D|20240101120000+0100||ORU^R01^ORU_R01|MSG1|P|2.5.1\r\
                  PID|1||123^^^H^MR||Invented^Pat||19700101|M\r\
                  OBR|1|||24356-8^Urinalysis^LN\r\
                  OBX|1|NM|2345-7^Glucose^LN||94|mcg/dL^mcg/dL^UCUM|||||F\r\
                  OBX|2|NM|2345-7^Glucose^LN||94|mg/dL^mg/dL^UCUM|||||F\r\
                  OBX|3|CWE|2345-7^Glucose^LN||mEq^milliequivalent^UCUM||||||F\r";
    let (c, out) = convert(&[], input);
    assert_eq!(c, 0, "{out:?}");
    check_bundle(&out[0], "message", "UCUM units");
    let obs: Vec<Value> = out[0]["bundle"]["entry"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["resource"].clone())
        .filter(|r| r["resourceType"] == "Observation")
        .collect();
    assert_eq!(obs[0]["valueQuantity"], serde_json::json!({"value": 94, "unit": "mcg/dL"}));
    assert_eq!(obs[1]["valueQuantity"]["system"], "http://unitsofmeasure.org");
    assert_eq!(obs[2]["valueCodeableConcept"]["coding"][0].get("system"), None);
    assert_eq!(
        codes_at(&out[0], "CONVERT_UNIT_NOT_UCUM"),
        ["OBX[1]-6[1].1->Observation.valueQuantity", "OBX[3]-5[1].1->Observation.valueCodeableConcept"]
    );
}

/// MSH-18 names the ISO 8859 part the bytes are in: each part decodes by its own table (before,
/// every part but 1 was read as Latin-1, and a Polish name came out garbled).
#[test]
fn iso_8859_parts_decode_by_their_own_tables() {
    let input = b"MSH|^~\\&|A|B|C|D|20240101120000+0100||ADT^A04^ADT_A01|MSG1|P|2.5|||||POL|8859/2\r\
                  EVN|A04|20240101120000+0100\r\
                  PID|1||123^^^H^MR||\xa3\xf3d\xbc^Zofia||19700101|F\r\
                  PV1|1|O\r";
    let (c, out) = convert(&[], input);
    assert_eq!(c, 0, "{out:?}");
    check_bundle(&out[0], "message", "8859/2");
    let patient = patient_entry(&out[0]);
    assert_eq!(patient["resource"]["name"][0]["family"], "Łódź");
}

/// The PID fields of later v2 versions and of the IG's PID[Patient] map: PID-40 telecom,
/// PID-12 county as the district of the one address, PID-26 and PID-39 citizenship and PID-28
/// nationality as core extensions with a `code` part, PID-33 as `meta.lastUpdated` (an instant:
/// seconds and an offset, else said).
#[test]
fn later_pid_fields_map_as_the_ig_says() {
    let input = b"MSH|^~\\&|A|B|C|D|20240101120000+0100||ADT^A08^ADT_A01|MSG1|P|2.8\r\
                  PID|1||123^^^H^MR||Invented^Pat||19700101|M|||1 Main St^^Town^ST^00000^USA^H|||||||||||||||USA^United States^ISO3166||CAN^Canada^ISO3166|||||20240101103000+0100||||||TRIBE1^Invented tribe^L|^NET^Internet^pat@example.org\r";
    let (c, out) = convert(&[], input);
    assert_eq!(c, 0, "{out:?}");
    check_bundle(&out[0], "message", "PID later fields");
    let p = &patient_entry(&out[0])["resource"];
    assert_eq!(p["telecom"], serde_json::json!([{"system": "email", "value": "pat@example.org"}]));
    assert_eq!(p["meta"]["lastUpdated"], "2024-01-01T10:30:00+01:00");
    let ext = p["extension"].as_array().expect("extensions");
    let of = |url: &str| -> Vec<Value> {
        ext.iter().filter(|e| e["url"].as_str().is_some_and(|u| u.ends_with(url))).cloned().collect()
    };
    let citizenship = of("patient-citizenship");
    assert_eq!(citizenship.len(), 2, "PID-26 and PID-39: {ext:?}");
    assert_eq!(citizenship[0]["extension"][0]["url"], "code");
    assert_eq!(citizenship[0]["extension"][0]["valueCodeableConcept"]["coding"][0]["code"], "USA");
    assert_eq!(citizenship[1]["extension"][0]["valueCodeableConcept"]["coding"][0]["code"], "TRIBE1");
    assert_eq!(of("patient-nationality")[0]["extension"][0]["valueCodeableConcept"]["coding"][0]["code"], "CAN");
    let unmapped = codes_at(&out[0], "CONVERT_FIELD_UNMAPPED");
    for n in [12, 26, 28, 33, 39, 40] {
        assert!(
            !unmapped.iter().any(|l| l.starts_with(&format!("PID[1]-{n}->"))),
            "PID-{n} said unmapped: {unmapped:?}"
        );
    }
    // PID-12 with two addresses, one of which has its own county: an address of its own.
    let two = b"MSH|^~\\&|A|B|C|D|20240101120000+0100||ADT^A08^ADT_A01|MSG2|P|2.8\r\
                PID|1||124^^^H^MR||Invented^Second||19700101|M|||1 Main St^^Town^ST^00000^USA^H^^C1~2 Side St^^Town^ST^00000^USA^M|C2\r";
    let (c, out) = convert(&[], two);
    assert_eq!(c, 0, "{out:?}");
    let addresses = patient_entry(&out[0])["resource"]["address"].clone();
    assert_eq!(addresses.as_array().map(Vec::len), Some(3), "{addresses}");
    assert_eq!(addresses[0]["district"], "C1");
    assert_eq!(addresses[2], serde_json::json!({"district": "C2"}));
}

/// DG1-6 and DG1-15 name the Condition in the Encounter's `diagnosis` (use and rank); OBR-24
/// is the DiagnosticReport's category, OBR-6 the ServiceRequest's occurrence.
#[test]
fn diagnosis_use_and_rank_and_report_category() {
    let adt = b"MSH|^~\\&|A|B|C|D|20240101120000+0100||ADT^A01^ADT_A01|MSG1|P|2.5.1\r\
                PID|1||123^^^H^MR||Invented^Pat||19700101|M\r\
                PV1|1|I|W1^R1^B1\r\
                DG1|1||I10^Hypertension^I10||20240101|A|||||||||1\r\
                DG1|2||E11^Diabetes^I10||20240101|W|||||||||x\r";
    let (c, out) = convert(&["--default-timezone", "Z"], adt);
    assert_eq!(c, 0, "{out:?}");
    check_bundle(&out[0], "message", "DG1 diagnosis");
    let enc = &entry_of(&out[0], "Encounter")["resource"];
    let diagnosis = enc["diagnosis"].as_array().expect("Encounter.diagnosis");
    assert_eq!(diagnosis.len(), 2);
    assert_eq!(diagnosis[0]["rank"], 1);
    let roles: Vec<&str> =
        diagnosis[0]["use"]["coding"].as_array().expect("codings").iter().filter_map(|c| c["code"].as_str()).collect();
    assert_eq!(roles, ["A", "AD"]);
    assert_eq!(diagnosis[1].get("rank"), None);
    assert_eq!(codes_at(&out[0], "CONVERT_VALUE_INVALID"), ["DG1[2]-15[1]->Encounter.diagnosis.rank"]);
    let conditions: Vec<String> = out[0]["bundle"]["entry"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["resource"]["resourceType"] == "Condition")
        .map(|e| e["fullUrl"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(diagnosis[0]["condition"]["reference"], conditions[0].as_str());

    let oru = b"MSH|^~\\&|A|B|C|D|20240101120000+0100||ORU^R01^ORU_R01|MSG1|P|2.5.1\r\
                PID|1||123^^^H^MR||Invented^Pat||19700101|M\r\
                OBR|1|||24356-8^Urinalysis^LN||20240101090000+0100||||||||||||||||||CH|F\r\
                OBX|1|NM|2345-7^Glucose^LN||94|mg/dL|||||F\r";
    let (c, out) = convert(&[], oru);
    assert_eq!(c, 0, "{out:?}");
    check_bundle(&out[0], "message", "OBR-24");
    let dr = &entry_of(&out[0], "DiagnosticReport")["resource"];
    assert_eq!(
        dr["category"][0]["coding"][0],
        serde_json::json!({"system": "http://terminology.hl7.org/CodeSystem/v2-0074", "code": "CH"})
    );
    assert_eq!(entry_of(&out[0], "ServiceRequest")["resource"]["occurrenceDateTime"], "2024-01-01T09:00:00+01:00");
}

/// FT/TX formatting commands become plain text in a FHIR string: highlighting and fill/indent
/// commands vanish, `\.br\` and `\.sp n\` break lines, `\.sk n\` skips spaces; a literal escape
/// character (`\E\`) stays one.
#[test]
fn formatted_text_becomes_plain_text() {
    let input = b"MSH|^~\\&|A|B|C|D|20240101120000+0100||ORU^R01^ORU_R01|MSG1|P|2.5.1\r\
                  PID|1||123^^^H^MR||Invented^Pat||19700101|M\r\
                  OBR|1|||24356-8^Urinalysis^LN\r\
                  OBX|1|FT|18782-3^Study observation^LN||IMPRESSION:\\.br\\\\H\\Lung-RADS 2\\N\\: benign.\\.sp 2\\\\.in +4\\Path \\E\\H\\E\\ kept.||||||F\r";
    let (c, out) = convert(&[], input);
    assert_eq!(c, 0, "{out:?}");
    check_bundle(&out[0], "message", "FT text");
    let obs = &entry_of(&out[0], "Observation")["resource"];
    assert_eq!(obs["valueString"], "IMPRESSION:\nLung-RADS 2: benign.\n\nPath \\H\\ kept.");
}

/// The IG's maps for MSH-17 (sender country), the first SFT (MessageHeader.source software and
/// version), PL-7/PL-8 (building and floor Locations in the chain), PV2-1/13/25, PD1-3, NK1-33
/// and IN1-5/7/9/15/16/18/19 (payer address and phone, group name, plan type, a subscriber
/// who is not the patient).
#[test]
fn more_ig_maps_on_adt_segments() {
    let input = b"MSH|^~\\&|APP|FAC|RCV|RFAC|20240101120000+0100||ADT^A01^ADT_A01|MSG1|P|2.5.1|||||DEU\r\
                  SFT|Invented Soft|4.2|InventedADT|B123\r\
                  SFT|Other Soft|1.0|Other|B9\r\
                  PID|1||123^^^H^MR||Invented^Pat||19700101|M\r\
                  PD1|||Invented Clinic^^CL1\r\
                  NK1|1|Invented^Kin|SPO||||||||||||||||||||||||||||||NK77^^^H^MR\r\
                  PV1|1|I|W1^R1^B1^HOSP^^^MAIN^4\r\
                  PV2|W0^R0^B0^HOSP||FLU^Influenza||||||||||Invented^Referrer^^^^^^^^^^^^NPI1||||||||||||2\r\
                  IN1|1|PLAN1|INS1^^^H|Invented Insurance|1 Ins Rd^^Town^ST^00000||^WPN^PH^^^555^5550100|GRP1|Invented Group||||||HMO^HMO^HL70086|Invented^Spouse|SPO|19710202|2 Home St^^Town^ST^00000\r";
    let (c, out) = convert(&["--default-timezone", "Z"], input);
    assert_eq!(c, 0, "{out:?}");
    check_bundle(&out[0], "message", "more IG maps");
    let b = &out[0]["bundle"];
    let entries = b["entry"].as_array().expect("entries");
    let by_url = |u: &str| -> Value {
        entries.iter().find(|e| e["fullUrl"] == u).map(|e| e["resource"].clone()).unwrap_or_default()
    };
    let mh = &entries[0]["resource"];
    assert_eq!(mh["source"]["software"], "InventedADT");
    assert_eq!(mh["source"]["version"], "4.2");
    let sender = by_url(mh["sender"]["reference"].as_str().expect("sender"));
    assert_eq!(sender["address"], serde_json::json!([{"country": "DEU"}]));
    // Bed -> room -> ward -> floor -> building -> facility.
    let enc = &entry_of(&out[0], "Encounter")["resource"];
    let mut chain = Vec::new();
    let mut at = enc["location"][0]["location"]["reference"].as_str().map(str::to_owned);
    while let Some(u) = at {
        let l = by_url(&u);
        chain.push(l["physicalType"]["coding"][0]["code"].as_str().unwrap_or_default().to_owned());
        at = l["partOf"]["reference"].as_str().map(str::to_owned);
    }
    assert_eq!(chain, ["bd", "ro", "wa", "lvl", "bu", "si"]);
    let planned: Vec<&Value> =
        enc["location"].as_array().expect("locations").iter().filter(|l| l["status"] == "planned").collect();
    assert_eq!(planned.len(), 1, "PV2-1");
    assert!(
        enc["participant"].as_array().expect("participants").iter().any(|p| p["type"][0]["coding"][0]["code"] == "REF")
    );
    let priorities: Vec<&str> =
        enc["priority"]["coding"].as_array().expect("priority").iter().filter_map(|c| c["code"].as_str()).collect();
    assert_eq!(priorities, ["2", "UR"]);
    let patient = &patient_entry(&out[0])["resource"];
    let gp = by_url(patient["generalPractitioner"][0]["reference"].as_str().expect("PD1-3"));
    assert_eq!(gp["resourceType"], "Organization");
    let kin = entries
        .iter()
        .map(|e| &e["resource"])
        .find(|r| r["resourceType"] == "RelatedPerson" && r["identifier"].is_array())
        .expect("NK1");
    assert_eq!(kin["identifier"][0]["value"], "NK77");
    let coverage = &entry_of(&out[0], "Coverage")["resource"];
    assert_eq!(coverage["type"]["coding"][0]["code"], "HMO");
    assert_eq!(coverage["class"][1]["name"], "Invented Group");
    let payer = by_url(coverage["payor"][0]["reference"].as_str().expect("payor"));
    assert_eq!(payer["address"][0]["line"][0], "1 Ins Rd");
    assert_eq!(payer["telecom"][0]["value"], "555 5550100");
    let subscriber = by_url(coverage["subscriber"]["reference"].as_str().expect("subscriber"));
    assert_eq!(subscriber["resourceType"], "RelatedPerson");
    assert_eq!(subscriber["birthDate"], "1971-02-02");
    assert_eq!(subscriber["name"][0]["family"], "Invented");
    let unmapped = codes_at(&out[0], "CONVERT_FIELD_UNMAPPED");
    for f in [
        "MSH[1]-17->",
        "PD1[1]-3->",
        "NK1[1]-33->",
        "PV2[1]-1->",
        "PV2[1]-13->",
        "PV2[1]-25->",
        "IN1[1]-5->",
        "IN1[1]-7->",
        "IN1[1]-9->",
        "IN1[1]-15->",
        "IN1[1]-16->",
        "IN1[1]-18->",
        "IN1[1]-19->",
    ] {
        assert!(!unmapped.iter().any(|l| l.starts_with(f)), "{f} said unmapped: {unmapped:?}");
    }
    // The second SFT has no place in MessageHeader.source: reported.
    assert!(
        codes_at(&out[0], "CONVERT_SEGMENT_UNMAPPED").iter().any(|l| l.starts_with("SFT[2]")),
        "{:?}",
        out[0]["findings"]
    );
}

/// Order timing and requester: a TQ1 between ORC and OBR (OML) or after OBR (ORU) gives the
/// ServiceRequest's occurrence and priority; ORC-21/22 with an ordering provider make a
/// PractitionerRole in that Organization; ORC-29 is `locationCode`; OBR-11 G a reflex order;
/// OBR-8 with OBR-7 the report's effectivePeriod.
#[test]
fn order_timing_requester_and_report_period() {
    let oml = b"MSH|^~\\&|A|B|C|D|20240101120000+0100||OML^O21^OML_O21|MSG1|P|2.5.1\r\
                PID|1||123^^^H^MR||Invented^Pat||19700101|M\r\
                ORC|NW|PL1||||||||||DOC1^Invented^Orderer|||||||||Invented Lab Org^^^^^^^^^ORG9|9 Lab St^^Town^ST^00000|||||||O^Outpatient^HL70482\r\
                TQ1|1||||||20240102080000+0100||S\r\
                OBR|1|PL1||24356-8^Urinalysis^LN|||||||G\r";
    let (c, out) = convert(&[], oml);
    assert_eq!(c, 0, "{out:?}");
    check_bundle(&out[0], "message", "OML timing");
    let sr = &entry_of(&out[0], "ServiceRequest")["resource"];
    assert_eq!(sr["occurrenceDateTime"], "2024-01-02T08:00:00+01:00");
    assert_eq!(sr["priority"], "stat");
    assert_eq!(sr["intent"], "reflex-order");
    assert_eq!(sr["locationCode"][0]["coding"][0]["code"], "O");
    let entries = out[0]["bundle"]["entry"].as_array().expect("entries");
    let by_url =
        |u: &str| entries.iter().find(|e| e["fullUrl"] == u).map(|e| e["resource"].clone()).unwrap_or_default();
    let role = by_url(sr["requester"]["reference"].as_str().expect("requester"));
    assert_eq!(role["resourceType"], "PractitionerRole");
    let org = by_url(role["organization"]["reference"].as_str().expect("organization"));
    assert_eq!(org["name"], "Invented Lab Org");
    assert_eq!(org["address"][0]["line"][0], "9 Lab St");
    assert!(codes_at(&out[0], "CONVERT_SEGMENT_UNMAPPED").is_empty(), "{:?}", out[0]["findings"]);
    let unmapped = codes_at(&out[0], "CONVERT_FIELD_UNMAPPED");
    for f in ["ORC[1]-21->", "ORC[1]-22->", "ORC[1]-29->", "TQ1[1]-7->", "TQ1[1]-9->", "OBR[1]-11->"] {
        assert!(!unmapped.iter().any(|l| l.starts_with(f)), "{f} said unmapped: {unmapped:?}");
    }

    let oru = b"MSH|^~\\&|A|B|C|D|20240101120000+0100||ORU^R01^ORU_R01|MSG2|P|2.5.1\r\
                PID|1||123^^^H^MR||Invented^Pat||19700101|M\r\
                OBR|1|||24356-8^Urinalysis^LN|||20240101090000+0100|20240101093000+0100|||||||||||||||||F\r\
                TQ1|1||||||20240101080000+0100|20240101083000+0100|PRN\r\
                OBX|1|NM|2345-7^Glucose^LN||94|mg/dL|||||F\r";
    let (c, out) = convert(&[], oru);
    assert_eq!(c, 0, "{out:?}");
    check_bundle(&out[0], "message", "ORU timing");
    let dr = &entry_of(&out[0], "DiagnosticReport")["resource"];
    assert_eq!(
        dr["effectivePeriod"],
        serde_json::json!({"start": "2024-01-01T09:00:00+01:00", "end": "2024-01-01T09:30:00+01:00"})
    );
    let sr = &entry_of(&out[0], "ServiceRequest")["resource"];
    assert_eq!(sr["occurrencePeriod"]["end"], "2024-01-01T08:30:00+01:00");
    // PRN (as needed) has no RequestPriority: kept beside the element and reported.
    assert_eq!(sr.get("priority"), None);
    assert_eq!(codes_at(&out[0], "CONVERT_CODE_UNMAPPED"), ["TQ1[1]-9[1]->ServiceRequest.priority"]);
}

/// OBR-46/47 become orderDetail only beside a code (prr-1); with OBR-4 the null value they are
/// reported, and the Bundle stays valid.
#[test]
fn order_detail_needs_a_code() {
    let input = b"MSH|^~\\&|A|B|C|D|20240101120000+0100||ORM^O01|M1|P|2.3\r\
                  PID|1||1^^^H^MR||Invented^Pat\r\
                  ORC|NW|1\r\
                  OBR|1|1||\"\"||||||||||||||||||||||||||||||||||||||||||A^Detail^L\r";
    let (c, out) = convert(&[], input);
    assert_eq!(c, 0, "{out:?}");
    check_bundle(&out[0], "message", "orderDetail without code");
    assert_eq!(entry_of(&out[0], "ServiceRequest")["resource"].get("orderDetail"), None);
    assert!(
        codes_at(&out[0], "CONVERT_FIELD_UNMAPPED").iter().any(|l| l.starts_with("OBR[1]-46->")),
        "{:?}",
        out[0]["findings"]
    );
}

/// An order without SPM: OBR-14 and OBR-15 (the specimen fields of older messages) make a
/// Specimen (the IG's OBR[Specimen]); with an SPM they are reported, the SPM is the specimen.
#[test]
fn obr_specimen_fields_make_a_specimen_without_spm() {
    let head = "MSH|^~\\&|A|B|C|D|20240101120000+0100||ORU^R01^ORU_R01|MSG1|P|2.3\r\
                PID|1||123^^^H^MR||Invented^Pat||19700101|M\r\
                OBR|1|||24356-8^Urinalysis^LN|||20240101090000+0100|||||||20240101100000+0100|UR&Urine&HL70070^^Clean catch^BLDV&Vein&HL70163^XX||||||||||F\r\
                OBX|1|NM|2345-7^Glucose^LN||94|mg/dL|||||F\r";
    let (c, out) = convert(&[], head.as_bytes());
    assert_eq!(c, 0, "{out:?}");
    check_bundle(&out[0], "message", "OBR specimen");
    let sp = &entry_of(&out[0], "Specimen")["resource"];
    assert_eq!(
        sp["type"]["coding"][0],
        serde_json::json!({"system": "http://terminology.hl7.org/CodeSystem/v2-0070", "code": "UR", "display": "Urine"})
    );
    assert_eq!(sp["receivedTime"], "2024-01-01T10:00:00+01:00");
    assert_eq!(sp["collection"]["collectedDateTime"], "2024-01-01T09:00:00+01:00");
    assert_eq!(sp["collection"]["method"]["text"], "Clean catch");
    assert_eq!(sp["collection"]["bodySite"]["coding"][0]["code"], "BLDV");
    assert_eq!(sp["request"][0]["reference"], entry_of(&out[0], "ServiceRequest")["fullUrl"]);
    assert_eq!(codes_at(&out[0], "CONVERT_COMPONENT_UNMAPPED"), ["OBR[1]-15[1].5->Specimen"]);
    let unmapped = codes_at(&out[0], "CONVERT_FIELD_UNMAPPED");
    assert!(!unmapped.iter().any(|l| l.starts_with("OBR[1]-14->") || l.starts_with("OBR[1]-15->")), "{unmapped:?}");

    let with_spm = format!("{head}SPM|1|||BLD^Blood^HL70487\r");
    let (c, out) = convert(&[], with_spm.as_bytes());
    assert_eq!(c, 0, "{out:?}");
    let specimens = out[0]["bundle"]["entry"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["resource"]["resourceType"] == "Specimen")
        .count();
    assert_eq!(specimens, 1, "the SPM's only");
    let unmapped = codes_at(&out[0], "CONVERT_FIELD_UNMAPPED");
    assert!(unmapped.iter().any(|l| l.starts_with("OBR[1]-15->")), "{unmapped:?}");
}

/// A single ORU^R01 of at least `min_bytes`: the OBX segments of a fixture repeated (renumbered,
/// with an NTE note on every seventh), MSH to OBR and the segments after the results once.
fn large_oru(min_bytes: usize) -> (Vec<u8>, usize) {
    let text = std::fs::read(fixture("hl7v2/valid/v2.5.1_oru_r01_many_obx.hl7")).expect("fixture");
    let segments: Vec<&[u8]> = text.split(|&b| b == b'\r' || b == b'\n').filter(|s| !s.is_empty()).collect();
    let first = segments.iter().position(|s| s.starts_with(b"OBX")).expect("an OBX");
    let last = segments.iter().rposition(|s| s.starts_with(b"OBX")).expect("an OBX");
    let mut out = Vec::with_capacity(min_bytes + 4096);
    for s in &segments[..first] {
        out.extend_from_slice(s);
        out.push(b'\r');
    }
    let mut n = 0usize;
    while out.len() < min_bytes {
        for s in &segments[first..=last] {
            n += 1;
            let rest = s.splitn(3, |&b| b == b'|').nth(2).unwrap_or_default();
            out.extend_from_slice(format!("OBX|{n}|").as_bytes());
            out.extend_from_slice(rest);
            out.push(b'\r');
            if n % 7 == 0 {
                out.extend_from_slice(format!("NTE|1|L|Note {n}\r").as_bytes());
            }
        }
    }
    for s in &segments[last + 1..] {
        out.extend_from_slice(s);
        out.push(b'\r');
    }
    (out, n)
}

/// Issue 36: `convert` memory does not grow with the Bundle. A 40 MB ORU^R01 (about 190,000
/// Observations, a Bundle of about 180 MB; 8 MB in debug builds) converts under an address-space
/// limit (`ulimit -v`) of 768 MiB, which holding its Bundle would pass (1.4 GB of RSS before the
/// fix), and the whole record reaches stdout: the Bundle, an entry per Observation, then the
/// findings. No timing is measured.
#[cfg(target_os = "linux")]
#[test]
fn a_large_message_converts_in_bounded_memory() {
    use std::io::Read;
    let size = if cfg!(debug_assertions) { 8 } else { 40 } * 1024 * 1024;
    let (message, observations) = large_oru(size);
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("convert_large_oru.hl7");
    std::fs::write(&path, &message).expect("write the message");
    drop(message);
    for json in [true, false] {
        let mut args = vec!["convert"];
        if json {
            args.push("--json");
        }
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 786432 && exec \"$0\" \"$@\"")
            .arg(crate::common::bin())
            .args(&args)
            .arg(&path)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        // Read as it comes (not held): the start, the end, and the entries counted.
        let mut stdout = child.stdout.take().expect("stdout");
        let (mut head, mut tail, mut total, mut entries) = (Vec::new(), Vec::new(), 0usize, 0usize);
        let needle: &[u8] = if json { b"{\"fullUrl\":" } else { b"\"fullUrl\": " };
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = stdout.read(&mut buf).expect("read stdout");
            if n == 0 {
                break;
            }
            total += n;
            if head.len() < 256 {
                head.extend_from_slice(&buf[..n.min(256)]);
            }
            // The tail keeps the last bytes, so that a needle across two reads is seen once.
            let keep = tail.len().min(needle.len() - 1);
            let mut window = tail[tail.len() - keep..].to_vec();
            window.extend_from_slice(&buf[..n]);
            entries += window.windows(needle.len()).filter(|w| *w == needle).count();
            tail.extend_from_slice(&buf[..n]);
            // The findings (up to 1,000) end the record.
            let excess = tail.len().saturating_sub(1 << 20);
            tail.drain(..excess);
        }
        let mut stderr = String::new();
        child.stderr.take().expect("stderr").read_to_string(&mut stderr).expect("read stderr");
        let status = child.wait().expect("wait");
        assert!(status.success(), "json {json}: {status:?}, stderr: {stderr}");
        assert!(total > size, "json {json}: {total} bytes");
        let head = String::from_utf8_lossy(&head).split_whitespace().collect::<String>();
        assert!(head.starts_with(r#"{"format":"fhir","bundle":{"resourceType":"Bundle""#), "{head}");
        let tail = String::from_utf8_lossy(&tail).split_whitespace().collect::<String>();
        assert!(tail.contains(r#""findings":["#) && tail.ends_with('}'), "json {json}");
        assert!(entries > observations, "json {json}: {entries} entries for {observations} OBX");
    }
    let _ = std::fs::remove_file(&path);
}
