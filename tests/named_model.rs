//! The named HL7 v2 model (`parse --model named`, the MCP `parse` default; docs/hl7v2-model.md):
//! keys from the version's tables (PID-5's components, a type's subcomponents), Z-segments and
//! fields past the tables by position, repetitions, escapes and the HL7 null, the fallback
//! version, keys never from the input, the same values as the positional model (with and without
//! a redacting policy), determinism, and the CLI's default left positional.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::common::{files_under, fixture, run, run_stdin};
use crate::no_leak::has_marker;

/// `phiward parse --json --model <model>` of `input`: the one object printed.
fn parse(input: &[u8], model: &str, extra: &[&str]) -> Value {
    let mut args = vec!["parse", "--json", "--model", model];
    args.extend_from_slice(extra);
    args.push("-");
    let o = run_stdin(&args, input);
    assert_eq!(o.status.code(), Some(0), "parse --model {model}: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

/// The `fields` of the `n`th segment (0-based) of a parsed model.
fn fields(v: &Value, n: usize) -> &Value {
    &v["model"]["segments"][n]["fields"]
}

const ADT: &str = "MSH|^~\\&|APP|FAC|RCV|RFAC|20240101120000||ADT^A01^ADT_A01|MSG1|P|2.5.1\r\
                   PID|1||123^^^HOSP^MR~456^^^OTHER^PI||DOE&VAN&DER^JANE^Q||19800101|F|||\
                   1 MAIN ST\\T\\2ND^^TOWN^ST^12345||555\\F\\1234\r\
                   ZPI|1|alpha^beta~gamma&delta||\r\
                   OBX|1|ST|1234-5^Code^LN||\"\"\r";

#[test]
fn pid5_components_repetitions_escapes_and_nulls_are_named() {
    let v = parse(ADT.as_bytes(), "named", &[]);
    assert_eq!(v["model"]["tables"], "2.5.1");
    let pid = fields(&v, 1);
    // PID-5 repeats in the tables: an array even with one repetition; XPN components by name,
    // FN's subcomponents by name when present.
    assert_eq!(
        pid["5 patient_name"],
        json!([{
            "1 family_name": {"1 surname": "DOE", "2 own_surname_prefix": "VAN", "3 own_surname": "DER"},
            "2 given_name": "JANE",
            "3 second_and_further_given_names_or_initials_thereof": "Q"
        }])
    );
    // Two repetitions, empty components left out.
    assert_eq!(
        pid["3 patient_identifier_list"],
        json!([
            {"1 id_number": "123", "4 assigning_authority": "HOSP", "5 identifier_type_code": "MR"},
            {"1 id_number": "456", "4 assigning_authority": "OTHER", "5 identifier_type_code": "PI"}
        ])
    );
    // A field that does not repeat, of a primitive type: a string.
    assert_eq!(pid["8 administrative_sex"], "F");
    // Escapes decoded: \T\ is the subcomponent separator, \F\ the field separator.
    assert_eq!(pid["11 patient_address"][0]["1 street_address"], "1 MAIN ST&2ND");
    assert_eq!(pid["13 phone_number_home"][0]["1 telephone_number"], "555|1234");
    // Empty fields are left out.
    let keys: Vec<&String> = pid.as_object().expect("fields").keys().collect();
    assert!(!keys.iter().any(|k| k.starts_with("2 ") || k.starts_with("4 ")), "{keys:?}");
    // MSH-1 and MSH-2 as written; MSH-9 by its components.
    let msh = fields(&v, 0);
    assert_eq!(msh["1 field_separator"], "|");
    assert_eq!(msh["2 encoding_characters"], "^~\\&");
    assert_eq!(
        msh["9 message_type"],
        json!({"1 message_code": "ADT", "2 trigger_event": "A01", "3 message_structure": "ADT_A01"})
    );
    // The HL7 null is JSON null (OBX-5 repeats in 2.5.1).
    assert_eq!(fields(&v, 3)["5 observation_value"], json!([null]));
    assert_eq!(fields(&v, 3)["3 observation_identifier"]["2 text"], "Code");
}

#[test]
fn z_segments_and_fields_past_the_tables_are_keyed_by_position() {
    let v = parse(ADT.as_bytes(), "named", &[]);
    let zpi = &v["model"]["segments"][2];
    assert_eq!(zpi["id"], "ZPI");
    // Components by position; a repetition with subcomponents only: its first component's.
    assert_eq!(
        zpi["fields"],
        json!({"1": "1", "2": [{"1": "alpha", "2": "beta"}, {"1": {"1": "gamma", "2": "delta"}}]})
    );
    // PID has 39 fields in 2.5.1: the 40th has no name.
    let msg = format!("MSH|^~\\&|A|B|C|D|20240101||ADT^A01|1|P|2.5.1\rPID|1{}|past^end\r", "|".repeat(38));
    let v = parse(msg.as_bytes(), "named", &[]);
    assert_eq!(fields(&v, 1)["40"], json!({"1": "past", "2": "end"}));
    assert_eq!(fields(&v, 1).as_object().map(|f| f.len()), Some(2));
}

#[test]
fn trailing_empty_parts_do_not_change_the_shape_and_fmt_keeps_the_model() {
    // Found by the fuzz harness (parse, fmt, parse): `\&` was a component with subcomponents
    // before `fmt` and a value after it.
    let msg = "MSH|^~\\&|A|B|C|D|20240101||ADT^A01|1|P|2.5.1\r\
               PID|1||X||DOE&^JANE^^|||F^\r\
               ZPI|A^|B&|\\&|C&D^|~E\r";
    let v = parse(msg.as_bytes(), "named", &[]);
    assert_eq!(fields(&v, 1)["5 patient_name"], json!([{"1 family_name": "DOE", "2 given_name": "JANE"}]));
    assert_eq!(fields(&v, 1)["8 administrative_sex"], "F");
    assert_eq!(
        fields(&v, 2),
        &json!({"1": "A", "2": "B", "3": "\\", "4": {"1": {"1": "C", "2": "D"}}, "5": ["", "E"]})
    );
    let canonical = run_stdin(&["fmt", "-"], msg.as_bytes());
    assert_eq!(canonical.status.code(), Some(0));
    assert_eq!(parse(&canonical.stdout, "named", &[]), v, "a message and its canonical form have one model");
}

#[test]
fn an_unknown_version_falls_back_to_the_documented_one() {
    for (msh12, tables) in [
        ("2.5.1", "2.5.1"),
        ("", "2.5.1"),
        ("3.0", "2.5.1"),
        ("abc", "2.5.1"),
        ("2.9", "2.8.2"),
        ("2.5.2", "2.5.1"),
        ("2.3", "2.3"),
    ] {
        let msg = format!("MSH|^~\\&|A|B|C|D|20240101||ADT^A01|1|P|{msh12}\rPID|1||X||DOE^JANE\r");
        let v = parse(msg.as_bytes(), "named", &[]);
        assert_eq!(v["model"]["tables"], tables, "MSH-12 {msh12:?}");
        let pid5 = &fields(&v, 1)["5 patient_name"];
        // PID-5 repeats from 2.3.1 on; in 2.3 it does not: one value, no array.
        let first = if tables == "2.3" { pid5 } else { &pid5[0] };
        assert_eq!(first["2 given_name"], "JANE", "MSH-12 {msh12:?}");
    }
    // The names follow the version: PID-1 is "Set ID - Patient ID" in 2.3, "Set ID - PID" in
    // 2.5.1; MSH-9.1 is "message type" in 2.3, "message code" in 2.5.1.
    let msg = "MSH|^~\\&|A|B|C|D|20240101||ADT^A01|1|P|2.3\rPID|1||X||DOE^JANE\r";
    let v = parse(msg.as_bytes(), "named", &[]);
    assert_eq!(fields(&v, 1)["1 set_id_patient_id"], "1");
    assert_eq!(fields(&v, 1)["5 patient_name"], json!({"1 family_name": "DOE", "2 given_name": "JANE"}));
    assert_eq!(fields(&v, 0)["9 message_type"]["1 message_type"], "ADT");
}

/// Every key of a named model, at any depth of `fields`.
fn keys_of(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                out.push(k.clone());
                keys_of(x, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|x| keys_of(x, out)),
        _ => {}
    }
}

/// The values (strings but `""`, and nulls) of a model's `fields`, counted.
fn leaves(v: &Value, out: &mut BTreeMap<String, usize>) {
    match v {
        Value::Object(m) => m.values().for_each(|x| leaves(x, out)),
        Value::Array(items) => items.iter().for_each(|x| leaves(x, out)),
        Value::String(s) if s.is_empty() => {}
        Value::String(s) => *out.entry(format!("s:{s}")).or_default() += 1,
        Value::Null => *out.entry("null".to_owned()).or_default() += 1,
        other => panic!("a value that is not a string or null: {other}"),
    }
}

/// Per segment: its id and the values of its fields.
fn segment_values(v: &Value) -> Vec<(String, BTreeMap<String, usize>)> {
    v["model"]["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .map(|s| {
            let mut m = BTreeMap::new();
            leaves(&s["fields"], &mut m);
            (s["id"].as_str().expect("id").to_owned(), m)
        })
        .collect()
}

/// The objects of a `parse --json` run (one per record).
fn objects(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect()
}

#[test]
fn keys_come_from_the_tables_and_values_equal_the_positional_models() {
    let key_grammar = |k: &str| {
        let (n, name) = k.split_once(' ').unwrap_or((k, "a"));
        !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
            && !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    let mut files = files_under(&fixture("hl7v2/valid"));
    files.extend(files_under(&fixture("hl7v2/markers")));
    let mut compared = 0;
    for file in &files {
        let path = file.to_str().expect("a UTF-8 path");
        let positional = run(&["parse", "--json", "--model", "positional", path]);
        let named = run(&["parse", "--json", "--model", "named", path]);
        assert_eq!(positional.status.code(), named.status.code(), "{path}");
        let (p, n) = (objects(&positional.stdout), objects(&named.stdout));
        assert_eq!(p.len(), n.len(), "{path}");
        for (p, n) in p.iter().zip(&n) {
            if p.get("model").is_none() {
                // A failed record: the same in both.
                assert_eq!(p, n, "{path}");
                continue;
            }
            assert_eq!(p["warnings"], n["warnings"], "{path}");
            assert_eq!(p["model"]["delimiters"], n["model"]["delimiters"], "{path}");
            assert_eq!(segment_values(p), segment_values(n), "{path}: the same values, segment by segment");
            let mut keys = Vec::new();
            for s in n["model"]["segments"].as_array().expect("segments") {
                keys_of(&s["fields"], &mut keys);
            }
            for k in &keys {
                assert!(key_grammar(k), "{path}: key {k:?}");
                assert!(!has_marker(k.as_bytes()), "{path}: a key from the input");
            }
            compared += 1;
        }
    }
    assert!(compared > 40, "only {compared} records compared");
}

#[test]
fn a_redacting_policy_redacts_both_models_alike() {
    let policy = fixture("../policy/agent.toml");
    let policy = policy.to_str().expect("a UTF-8 path");
    let mut compared = 0;
    for file in files_under(&fixture("hl7v2/markers")) {
        let path = file.to_str().expect("a UTF-8 path");
        let plain = run(&["parse", "--json", "--model", "named", path]);
        let positional = run(&["parse", "--json", "--model", "positional", "--policy", policy, path]);
        let named = run(&["parse", "--json", "--model", "named", "--policy", policy, path]);
        assert_eq!(positional.status.code(), named.status.code(), "{path}");
        assert!(has_marker(&plain.stdout), "{path}: the fixture's markers show without the policy");
        assert!(!has_marker(&positional.stdout), "{path}: a marker in the positional model");
        assert!(!has_marker(&named.stdout), "{path}: a marker in the named model");
        let (p, n) = (objects(&positional.stdout), objects(&named.stdout));
        assert_eq!(p.len(), n.len(), "{path}");
        for (p, n) in p.iter().zip(&n) {
            if p.get("model").is_some() {
                assert_eq!(segment_values(p), segment_values(n), "{path}: the same redacted values");
                compared += 1;
            }
        }
    }
    assert!(compared >= 6, "only {compared} records compared");
}

#[test]
fn the_named_model_is_deterministic_and_the_cli_default_stays_positional() {
    let file = fixture("hl7v2/markers/markers_adt_a01_v2.5.1.hl7");
    let path = file.to_str().expect("a UTF-8 path");
    let a = run(&["parse", "--json", "--model", "named", path]);
    let b = run(&["parse", "--json", "--model", "named", path]);
    assert_eq!(a.stdout, b.stdout);
    assert!(a.stdout.starts_with(b"{\"format\":\"hl7\",\"model\":{\"tables\":\"2.5.1\","));
    // The fields come in position order (the CLI writes them as they come).
    let text = String::from_utf8_lossy(&a.stdout).into_owned();
    let at = |k: &str| text.find(k).unwrap_or_else(|| panic!("{k} missing"));
    assert!(at("\"3 patient_identifier_list\"") < at("\"5 patient_name\""));
    assert!(at("\"9 message_type\"") < at("\"10 message_control_id\""));
    let default = run(&["parse", "--json", path]);
    let positional = run(&["parse", "--json", "--model", "positional", path]);
    assert_eq!(default.stdout, positional.stdout);
    assert!(default.stdout.starts_with(b"{\"format\":\"hl7\",\"model\":{\"delimiters\":"));
    // A model that is not one: a usage error naming the option.
    let o = run(&["parse", "--model", "tree", path]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--model"));
    // Another format has one model: both give it.
    let fhir = fixture("fhir/valid/bundle_document.json");
    let p = fhir.to_str().expect("a UTF-8 path");
    let fhir_default = run(&["parse", "--json", p]);
    assert_eq!(fhir_default.status.code(), Some(0));
    assert_eq!(run(&["parse", "--json", "--model", "named", p]).stdout, fhir_default.stdout);
}

#[cfg(feature = "mcp")]
#[test]
fn mcp_parse_is_named_by_default_and_takes_model() {
    use phiward::mcp::{self, Config};
    let call = |args: Value| {
        let Value::Object(map) = args else { panic!("an object") };
        mcp::dispatch("parse", Some(map), &Config::default()).into_value()
    };
    let named = call(json!({"content": ADT, "max_bytes": 0}));
    assert_eq!(named["status"], "success", "{named}");
    assert_eq!(named["data"], parse(ADT.as_bytes(), "named", &[]));
    assert_eq!(named["data"]["model"]["segments"][1]["fields"]["5 patient_name"][0]["2 given_name"], "JANE");
    let positional = call(json!({"content": ADT, "max_bytes": 0, "model": "positional"}));
    assert_eq!(positional["data"], parse(ADT.as_bytes(), "positional", &[]));
    assert_eq!(call(json!({"content": ADT, "max_bytes": 0}))["data"], named["data"], "deterministic");
    for bad in [json!("tree"), json!(1), json!(["named"])] {
        let reply = call(json!({"content": ADT, "model": bad}));
        assert_eq!(reply["code"], "CLI_USAGE", "{reply}");
        assert_eq!(reply["argument"], "model");
    }
    // Paging goes over the named model's segments, and pages join into the whole.
    let batch: String =
        (0..40).map(|i| format!("MSH|^~\\&|A|B|C|D|20240101||ADT^A01|{i}|P|2.5.1\rPID|1||{i}||DOE^JANE\r")).collect();
    let whole = call(json!({"content": batch, "max_bytes": 0}));
    let mut records = Vec::new();
    let mut reply = call(json!({"content": batch, "max_bytes": 2000}));
    for _ in 0..100 {
        records.extend(reply["data"]["records"].as_array().expect("records").iter().cloned());
        let Some(cursor) = reply["cursor"].as_str().map(str::to_owned) else { break };
        reply = call(json!({"content": batch, "max_bytes": 2000, "cursor": cursor}));
    }
    assert_eq!(&records, whole["data"]["records"].as_array().expect("records"));
    assert!(records.len() == 40);
    // One record too large for a page: paged inside, over `model.segments`.
    let big: String = std::iter::once("MSH|^~\\&|A|B|C|D|20240101||ORU^R01|1|P|2.5.1\r".to_owned())
        .chain((1..=60).map(|i| format!("OBX|{i}|ST|X^Y||value number {i}\r")))
        .collect();
    let first = call(json!({"content": big, "max_bytes": 1500}));
    assert_eq!(first["truncated"], true, "{first}");
    assert_eq!(first["page"]["items"], "model.segments");
    assert!(first["data"]["model"]["segments"][1]["fields"]["5 observation_value"].is_array());
}
