//! FHIR R4: every fixture under fixtures/fhir through every command, checked against
//! fixtures/fhir/manifest.json; round trips; JSON and XML agreement; no value on a secondary
//! channel.
//!
//! - `validate`: the exit code matches the manifest (valid 0, invalid 1, parse_fails 65/66/...),
//!   the expected codes occur, and a valid file has no finding of severity error;
//! - `inspect`: the resource type and the resources held, by type;
//! - `parse` then `fmt`: the canonical output is canonical (`fmt --check` exits 0 on it) and
//!   parses back to the same model; the XML and JSON forms of one patient give the same model;
//! - decimals keep their exact text; NDJSON gives one line per record;
//! - markers: every value of a resource replaced by a unique token; validate and inspect
//!   (valid, broken and unparseable variants) never show one, and neither does stderr.

use serde_json::Value;

use crate::common::{code, fixture, run, run_stdin};

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(fixture("fhir/manifest.json")).expect("manifest");
    match serde_json::from_str(&text) {
        Ok(Value::Array(a)) => a,
        _ => panic!("manifest is not an array"),
    }
}

fn lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not JSON: {l}")))
        .collect()
}

fn args_for<'a>(entry: &Value, cmd: &'a str, path: &'a str) -> Vec<&'a str> {
    let mut a = vec![cmd, "--json", path];
    if entry["syntax"] == "ndjson" {
        a.push("--ndjson");
    }
    a
}

#[test]
fn validate_matches_manifest() {
    let mut checked = 0;
    for entry in manifest() {
        let file = entry["file"].as_str().unwrap_or_default();
        let path = fixture(&format!("fhir/{file}"));
        let path = path.to_str().unwrap_or_default();
        let o = run(&args_for(&entry, "validate", path));
        let expected_codes: Vec<&str> =
            entry["codes"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        match entry["expect"].as_str() {
            Some("valid") | Some("invalid") => {
                let want = if entry["expect"] == "valid" { 0 } else { 1 };
                assert_eq!(code(&o), want, "{file}: {}", String::from_utf8_lossy(&o.stdout));
                let mut seen: Vec<String> = Vec::new();
                for line in lines(&o.stdout) {
                    for f in line["findings"].as_array().into_iter().flatten() {
                        seen.push(f["code"].as_str().unwrap_or_default().to_owned());
                        if want == 0 {
                            assert!(f["severity"] != "error" && f["severity"] != "fatal", "{file}: {f}");
                        }
                        assert_ne!(f["code"], "INVARIANT_UNCHECKED", "{file}: an invariant was not evaluated: {f}");
                    }
                }
                for c in &expected_codes {
                    assert!(seen.iter().any(|s| s == c), "{file}: expected {c} among {seen:?}");
                }
            }
            _ => {
                assert!(matches!(code(&o), 65 | 66 | 69), "{file}: exit {}", code(&o));
                let err = String::from_utf8_lossy(&o.stderr);
                let out = String::from_utf8_lossy(&o.stdout);
                for c in &expected_codes {
                    assert!(err.contains(c) || out.contains(c), "{file}: expected {c} in {err} / {out}");
                }
            }
        }
        checked += 1;
    }
    assert!(checked >= 60, "only {checked} fixtures");
}

#[test]
fn inspect_matches_manifest() {
    for entry in manifest() {
        if entry["expect"] == "parse_fails" {
            continue;
        }
        let file = entry["file"].as_str().unwrap_or_default();
        let path = fixture(&format!("fhir/{file}"));
        let o = run(&args_for(&entry, "inspect", path.to_str().unwrap_or_default()));
        assert_eq!(code(&o), 0, "{file}");
        for line in lines(&o.stdout) {
            assert_eq!(line["format"], "fhir");
            assert_eq!(line["resourceType"], entry["resourceType"], "{file}");
            let want = entry.get("resources").cloned().unwrap_or(Value::Object(Default::default()));
            assert_eq!(line["resources"], want, "{file}");
            assert!(line["issueCount"].is_u64(), "{file}: {line}");
            if entry["resourceType"] == "Bundle" {
                assert!(line["bundleType"].is_string() && line["entryCount"].is_u64(), "{file}: {line}");
                assert!(line["entryResourceTypes"].is_object(), "{file}: {line}");
            } else {
                assert!(line.get("bundleType").is_none() && line.get("entryResourceTypes").is_none(), "{file}");
            }
        }
    }
}

fn model_of(bytes: &[u8], extra: &[&str]) -> Value {
    let mut args = vec!["parse", "--json", "-"];
    args.extend_from_slice(extra);
    let o = run_stdin(&args, bytes);
    assert_eq!(code(&o), 0, "parse failed: {}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("parse output is JSON");
    v["model"].clone()
}

#[test]
fn fmt_is_canonical_and_round_trips() {
    for entry in manifest() {
        if entry["expect"] == "parse_fails" || entry["syntax"] == "ndjson" {
            continue;
        }
        let file = entry["file"].as_str().unwrap_or_default();
        let bytes = std::fs::read(fixture(&format!("fhir/{file}"))).expect("fixture");
        let o = run_stdin(&["fmt", "-"], &bytes);
        assert_eq!(code(&o), 0, "{file}");
        let canonical = o.stdout;
        let check = run_stdin(&["fmt", "--check", "-"], &canonical);
        assert_eq!(code(&check), 0, "{file}: fmt output is not canonical");
        if entry["expect"] == "valid" {
            assert_eq!(model_of(&canonical, &[]), model_of(&bytes, &[]), "{file}: fmt changed the model");
        }
    }
}

#[test]
fn xml_and_json_forms_agree() {
    let json = std::fs::read(fixture("fhir/valid/patient_full.json")).expect("json");
    let xml = std::fs::read(fixture("fhir/valid/patient_full.xml")).expect("xml");
    assert_eq!(model_of(&xml, &[]), model_of(&json, &[]));
}

#[test]
fn fmt_to_xml_and_back_gives_the_same_canonical_json() {
    // patient_full.json has extensions, a primitive `_element` (`given`) and a narrative.
    let bytes = std::fs::read(fixture("fhir/valid/patient_full.json")).expect("fixture");
    let canonical = run_stdin(&["fmt", "-"], &bytes);
    assert_eq!(code(&canonical), 0);
    let xml = run_stdin(&["fmt", "--to", "xml", "-"], &bytes);
    assert_eq!(code(&xml), 0, "{}", String::from_utf8_lossy(&xml.stderr));
    assert!(xml.stdout.starts_with(b"<?xml"), "not XML");
    let ok = run_stdin(&["validate", "--json", "-"], &xml.stdout);
    assert_eq!(code(&ok), 0, "{}", String::from_utf8_lossy(&ok.stdout));
    let back = run_stdin(&["fmt", "--to", "json", "-"], &xml.stdout);
    assert_eq!(code(&back), 0, "{}", String::from_utf8_lossy(&back.stderr));
    assert_eq!(String::from_utf8_lossy(&back.stdout), String::from_utf8_lossy(&canonical.stdout));
    // Only FHIR has two syntaxes.
    let hl7 = run_stdin(&["fmt", "--to", "xml", "-"], b"MSH|^~\\&|A|B|C|D|20200101||ADT^A01|1|P|2.5\r");
    assert_eq!(code(&hl7), 65);
}

#[test]
fn decimals_are_kept_exactly() {
    let path = fixture("fhir/valid/observation_decimal_exact.json");
    let o = run(&["parse", "--json", path.to_str().unwrap_or_default()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("\"value\":0.1000000000000000055511151231257827021181583404541015625"), "{text}");
}

#[test]
fn ndjson_gives_one_line_per_record() {
    let path = fixture("fhir/valid/patients.ndjson");
    let o = run(&["validate", "--json", "--ndjson", path.to_str().unwrap_or_default()]);
    let out = lines(&o.stdout);
    assert_eq!(out.len(), 3);
    assert_eq!(out[2]["record"], 3);
    let o = run(&["fmt", "--ndjson", path.to_str().unwrap_or_default()]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3);
}

/// Replaces every string value of a JSON resource (not keys, not resourceType) by a marker.
fn mark(v: &mut Value, n: &mut u32) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if k != "resourceType" {
                    mark(x, n);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| mark(x, n)),
        Value::String(s) => {
            *n += 1;
            *s = format!("ZQX{n:05}QZ");
        }
        _ => {}
    }
}

fn assert_no_marker(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    assert!(!text.contains("ZQX"), "{what} shows a value: {text}");
}

#[test]
fn no_value_reaches_a_secondary_channel() {
    for file in ["valid/patient_full.json", "valid/bundle_document.json", "valid/medication_request_contained.json"] {
        let bytes = std::fs::read(fixture(&format!("fhir/{file}"))).expect("fixture");
        let mut v: Value = serde_json::from_slice(&bytes).expect("json");
        let mut n = 0;
        mark(&mut v, &mut n);
        let marked = serde_json::to_vec(&v).expect("json");
        // Also: a marker as an unknown key, and a truncated (unparseable) copy.
        let mut unknown = v.clone();
        if let Value::Object(m) = &mut unknown {
            m.insert("ZQX99999QZ".into(), Value::String("ZQX99998QZ".into()));
        }
        let unknown = serde_json::to_vec(&unknown).expect("json");
        let truncated = marked[..marked.len() / 2].to_vec();
        for input in [&marked, &unknown, &truncated] {
            for cmd in ["validate", "inspect"] {
                for style in [&["--json"][..], &[][..]] {
                    let mut args = vec![cmd, "-"];
                    args.extend_from_slice(style);
                    let o = run_stdin(&args, input);
                    assert_no_marker(&format!("{file} {cmd} stdout"), &o.stdout);
                    assert_no_marker(&format!("{file} {cmd} stderr"), &o.stderr);
                }
            }
            for cmd in ["parse", "fmt"] {
                let o = run_stdin(&[cmd, "-"], input);
                assert_no_marker(&format!("{file} {cmd} stderr"), &o.stderr);
            }
            let o = run_stdin(&["fmt", "--check", "-"], input);
            assert_no_marker(&format!("{file} fmt --check stdout"), &o.stdout);
        }
    }
}

/// A finding the reader makes on a defined element names it (from the definitions, never the
/// input) with its index, and carries the element's line and column; only an element without a
/// definition, whose name is the input's, is located by offset.
#[test]
fn reader_findings_name_their_element() {
    let cases: &[(&str, &[u8], &str, &str)] = &[
        ("--json", b"{\"resourceType\":\"Patient\",\n\"identifier\":[]}", "JSON_ARRAY_EMPTY", "Patient.identifier"),
        ("--json", b"{\"resourceType\":\"Patient\",\n\"name\":{\"family\":\"x\"}}", "JSON_ARRAY_EXPECTED", "Patient.name"),
        ("--json", b"{\"resourceType\":\"Patient\",\n\"gender\":[\"male\"]}", "JSON_ARRAY_UNEXPECTED", "Patient.gender"),
        ("--json", b"{\"resourceType\":\"Patient\",\n\"active\":\"true\"}", "TYPE_MISMATCH", "Patient.active"),
        ("--json", b"{\"resourceType\":\"Patient\",\n\"name\":[{\"given\":[\"a\",7]}]}", "TYPE_MISMATCH", "Patient.name[0].given[1]"),
        ("--json", b"{\"resourceType\":\"Patient\",\n\"name\":[\"x\"]}", "TYPE_MISMATCH", "Patient.name[0]"),
        (
            "--json",
            b"{\"resourceType\":\"Observation\",\"status\":\"final\",\"code\":{\"text\":\"t\"},\n\"valueQuantity\":{\"value\":\"5\"}}",
            "TYPE_MISMATCH",
            "Observation.valueQuantity.value",
        ),
        (
            "--json",
            b"{\"resourceType\":\"Patient\",\n\"name\":[{\"given\":[\"a\",\"b\"],\"_given\":[null]}]}",
            "JSON_PRIMITIVE_MISMATCH",
            "Patient.name[0].given",
        ),
        (
            "--json",
            b"<Patient xmlns=\"http://hl7.org/fhir\">\n<active value=\"true\"/><id value=\"a\"/></Patient>",
            "ELEMENT_OUT_OF_ORDER",
            "Patient.id",
        ),
        ("--json", b"{\"resourceType\":\"Patient\",\n\"nickname\":\"x\"}", "UNKNOWN_ELEMENT", "Patient/offset:27"),
    ];
    for (flag, input, want_code, want_location) in cases {
        let o = run_stdin(&["validate", flag, "--format", "fhir", "-"], input);
        let out = lines(&o.stdout);
        let findings: Vec<&Value> = out.iter().flat_map(|l| l["findings"].as_array().into_iter().flatten()).collect();
        let f = findings
            .iter()
            .find(|f| f["code"] == *want_code)
            .unwrap_or_else(|| panic!("{want_code}: not found in {out:?}"));
        assert_eq!(f["location"], *want_location, "{want_code}: {f}");
        assert_eq!(f["line"], 2, "{want_code}: {f}");
        assert!(f["column"].as_u64().is_some_and(|c| c >= 1), "{want_code}: {f}");
        assert!(!f["location"].as_str().unwrap_or_default().contains("x\""), "{f}");
    }
}

/// Findings of `phiward validate --json` on one resource given on stdin: (code, severity, location).
fn findings_of(input: &[u8]) -> Vec<(String, String, String)> {
    let o = run_stdin(&["validate", "--json", "--format", "fhir", "-"], input);
    lines(&o.stdout)
        .iter()
        .flat_map(|l| l["findings"].as_array().cloned().unwrap_or_default())
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or_default().to_owned();
            (s("code"), s("severity"), s("location"))
        })
        .collect()
}

/// The (code, location) of each error finding `validate` reports for `input`.
fn errors(input: &(impl AsRef<[u8]> + ?Sized)) -> Vec<(String, String)> {
    findings_of(input.as_ref()).into_iter().filter(|(_, s, _)| s == "error").map(|(c, _, l)| (c, l)).collect()
}

/// The built-in definitions are FHIR R4's (4.0.1) exactly: an EvidenceVariable that uses the
/// characteristic elements R4 has (and R5 dropped) is valid; elements of R5 or of other
/// packages' variants of the core types are unknown.
#[test]
fn core_definitions_are_r4() {
    let ev = br#"{"resourceType":"EvidenceVariable","status":"active","characteristic":[{
"definitionCodeableConcept":{"text":"adult"},
"usageContext":[{"code":{"system":"http://terminology.hl7.org/CodeSystem/usage-context-type","code":"age"},
"valueRange":{"low":{"value":18,"unit":"a","system":"http://unitsofmeasure.org","code":"a"}}}],
"participantEffectivePeriod":{"start":"2020-01-01"},
"timeFromStart":{"value":1,"unit":"d","system":"http://unitsofmeasure.org","code":"d"},
"groupMeasure":"mean"}]}"#;
    let got = findings_of(ev);
    assert!(got.iter().all(|(_, s, _)| s != "error" && s != "fatal"), "{got:?}");
    // R4's characteristic is 1..*; R5's 0..*.
    let got = findings_of(br#"{"resourceType":"EvidenceVariable","status":"active"}"#);
    assert!(got.iter().any(|(c, s, _)| c == "CARDINALITY_MIN" && s == "error"), "{got:?}");
    for (input, location) in [
        // R5's EvidenceVariable.
        (
            &br#"{"resourceType":"EvidenceVariable","status":"active","characteristic":[{
"definitionByTypeAndValue":{"type":{"text":"t"},"valueBoolean":true}}]}"#[..],
            "EvidenceVariable.characteristic[0]/offset:",
        ),
        // R5's ResearchStudy.
        (
            &br#"{"resourceType":"ResearchStudy","status":"active",
"label":[{"value":"x"}]}"#[..],
            "ResearchStudy/offset:",
        ),
        // Not FHIR at all (a server's own additions to Meta and Binary).
        (
            &br#"{"resourceType":"Patient","meta":{
"project":{"reference":"Project/1"}}}"#[..],
            "Patient.meta/offset:",
        ),
        (
            &br#"{"resourceType":"Binary","contentType":"text/plain",
"url":"http://example.org/b"}"#[..],
            "Binary/offset:",
        ),
    ] {
        let got = findings_of(input);
        assert!(
            got.iter().any(|(c, s, l)| c == "UNKNOWN_ELEMENT" && s == "error" && l.starts_with(location)),
            "{location}: {got:?}"
        );
    }
    // app-4 as its text states ("cancelled, or no-show": the code is `noshow`), not as R4's
    // expression spells it (`'no-show'`).
    let appointment = |status: &str| {
        format!(
            "{{\"resourceType\":\"Appointment\",\"status\":\"{status}\",\"cancelationReason\":{{\"text\":\"r\"}},\"participant\":[{{\"status\":\"accepted\",\"actor\":{{\"display\":\"a\"}}}}]}}"
        )
    };
    let app4 = |status: &str| {
        findings_of(appointment(status).as_bytes())
            .into_iter()
            .any(|(c, _, l)| c == "INVARIANT_VIOLATED" && l == "Appointment/invariant:app-4")
    };
    assert!(!app4("noshow"));
    assert!(!app4("cancelled"));
    assert!(app4("booked"));
}

/// Rules the R4 cases of the FHIR test-case suite exercise (scripts/fhir-test-cases), each on a
/// synthetic resource.
#[test]
fn rules_from_the_fhir_test_case_suite() {
    let has = |input: &[u8], code: &str, severity: &str, location: &str| {
        let got = findings_of(input);
        assert!(
            got.iter().any(|(c, s, l)| c == code && s == severity && l == location),
            "{code} {severity} {location} not in {got:?}"
        );
    };
    // No error of that code (warnings such as dom-6 may occur).
    let lacks = |input: &[u8], code: &str| {
        let got = findings_of(input);
        assert!(got.iter().all(|(c, s, _)| c != code || s != "error"), "{code} in {got:?}");
    };
    // per-1: a start and an end of different precisions that agree as far as both go are not
    // shown in order (FHIRPath's comparison is empty); start before end, or at one precision, is.
    let period = |start: &str, end: &str| {
        format!(
            "{{\"resourceType\":\"Encounter\",\"status\":\"finished\",\"class\":{{\"system\":\"http://terminology.hl7.org/CodeSystem/v3-ActCode\",\"code\":\"AMB\"}},\"period\":{{\"start\":\"{start}\",\"end\":\"{end}\"}}}}"
        )
    };
    has(
        period("2023-06-21", "2023-06-21T06:20:00Z").as_bytes(),
        "INVARIANT_VIOLATED",
        "error",
        "Encounter.period/invariant:per-1",
    );
    has(
        period("2023-06-22", "2023-06-21").as_bytes(),
        "INVARIANT_VIOLATED",
        "error",
        "Encounter.period/invariant:per-1",
    );
    lacks(period("2023-06-20", "2023-06-21T06:20:00Z").as_bytes(), "INVARIANT_VIOLATED");
    lacks(period("2023-06-21T05:00:00Z", "2023-06-21T06:20:00Z").as_bytes(), "INVARIANT_VIOLATED");
    // Bundle.entry.fullUrl is an absolute URL; a urn:uuid: one is.
    let bundle = |full_url: &str| {
        format!(
            "{{\"resourceType\":\"Bundle\",\"type\":\"collection\",\"entry\":[{{\"fullUrl\":\"{full_url}\",\"resource\":{{\"resourceType\":\"Basic\",\"id\":\"b1\",\"code\":{{\"text\":\"t\"}}}}}}]}}"
        )
    };
    has(bundle("Basic/b1").as_bytes(), "URI_NOT_ABSOLUTE", "error", "Bundle.entry[0].fullUrl");
    lacks(bundle("urn:uuid:8c4b8a0e-2f55-4d3b-9a0e-6c1d2b3a4f50").as_bytes(), "URI_NOT_ABSOLUTE");
    lacks(bundle("http://example.invalid/fhir/Basic/b1").as_bytes(), "URI_NOT_ABSOLUTE");
    // ValueSet.compose.include.system / exclude.system: absolute, never `#id`.
    let value_set = |part: &str, system: &str| {
        let second = format!("{{\"system\":\"{system}\"}}");
        let (include, exclude) = if part == "include" {
            (format!(",{second}"), String::new())
        } else {
            (String::new(), format!(",\"exclude\":[{second}]"))
        };
        format!(
            "{{\"resourceType\":\"ValueSet\",\"url\":\"http://example.invalid/fhir/ValueSet/v\",\"status\":\"draft\",\"compose\":{{\"include\":[{{\"system\":\"http://example.invalid/cs\"}}{include}]{exclude}}}}}"
        )
    };
    has(value_set("include", "#c1").as_bytes(), "URI_NOT_ABSOLUTE", "error", "ValueSet.compose.include[1].system");
    has(value_set("exclude", "c1").as_bytes(), "URI_NOT_ABSOLUTE", "error", "ValueSet.compose.exclude[0].system");
    lacks(value_set("include", "urn:oid:2.999.1").as_bytes(), "URI_NOT_ABSOLUTE");
    // A searchset's resources come from a server: they have ids.
    let search = |id: &str| {
        format!(
            "{{\"resourceType\":\"Bundle\",\"type\":\"searchset\",\"entry\":[{{\"fullUrl\":\"urn:uuid:8c4b8a0e-2f55-4d3b-9a0e-6c1d2b3a4f50\",\"resource\":{{\"resourceType\":\"Basic\",{id}\"code\":{{\"text\":\"t\"}}}}}}]}}"
        )
    };
    has(search("").as_bytes(), "BUNDLE_ENTRY_ID_MISSING", "error", "Bundle.entry[0].resource");
    lacks(search("\"id\":\"b1\",").as_bytes(), "BUNDLE_ENTRY_ID_MISSING");
    let outcome = b"{\"resourceType\":\"Bundle\",\"type\":\"searchset\",\"entry\":[{\"fullUrl\":\"urn:uuid:8c4b8a0e-2f55-4d3b-9a0e-6c1d2b3a4f50\",\"resource\":{\"resourceType\":\"OperationOutcome\",\"issue\":[{\"severity\":\"information\",\"code\":\"informational\"}]}}]}";
    lacks(outcome, "BUNDLE_ENTRY_ID_MISSING");
    // A urn:uuid: reference that matches no entry: an error where the Bundle is exchanged as one
    // unit (transaction, document, ...), a warning in a collection.
    let urn = |ty: &str| {
        format!(
            "{{\"resourceType\":\"Bundle\",\"type\":\"{ty}\",\"entry\":[{{\"fullUrl\":\"urn:uuid:8c4b8a0e-2f55-4d3b-9a0e-6c1d2b3a4f50\",\"resource\":{{\"resourceType\":\"Basic\",\"id\":\"b1\",\"code\":{{\"text\":\"t\"}},\"subject\":{{\"reference\":\"urn:uuid:00000000-2f55-4d3b-9a0e-6c1d2b3a4f50\"}}}}}}]}}"
        )
    };
    has(urn("collection").as_bytes(), "REFERENCE_UNRESOLVED", "warning", "Bundle.entry[0].resource.subject.reference");
    // In a document, a relative reference resolves only by the specification's rule: the
    // referencing entry's RESTful base joined to it is an entry's fullUrl. From an entry with a
    // urn:uuid: fullUrl it resolves to nothing, even when an entry has that type and id.
    let document = |basic_url: &str| {
        format!(
            "{{\"resourceType\":\"Bundle\",\"identifier\":{{\"system\":\"urn:oid:2.999.9\",\"value\":\"d1\"}},\"type\":\"document\",\"timestamp\":\"2024-01-01T00:00:00Z\",\"entry\":[\
{{\"fullUrl\":\"{basic_url}\",\"resource\":{{\"resourceType\":\"Composition\",\"id\":\"c1\",\"status\":\"final\",\"type\":{{\"text\":\"t\"}},\"date\":\"2024-01-01\",\"author\":[{{\"reference\":\"Organization/o1\"}}],\"title\":\"t\"}}}},\
{{\"fullUrl\":\"http://example.invalid/fhir/Organization/o1\",\"resource\":{{\"resourceType\":\"Organization\",\"id\":\"o1\",\"name\":\"n\"}}}}]}}"
        )
    };
    has(
        document("urn:uuid:8c4b8a0e-2f55-4d3b-9a0e-6c1d2b3a4f50").as_bytes(),
        "REFERENCE_UNRESOLVED",
        "error",
        "Bundle.entry[0].resource.author[0].reference",
    );
    lacks(document("http://example.invalid/fhir/Composition/c1").as_bytes(), "REFERENCE_UNRESOLVED");
    // Every entry outside a transaction or batch has a fullUrl (the suite's bundle-with-extensions);
    // an outcome of a search is exempt (the official example bundle-search-warning).
    let without_full_url = |ty: &str| {
        format!(
            "{{\"resourceType\":\"Bundle\",\"type\":\"{ty}\",\"entry\":[{{\"resource\":{{\"resourceType\":\"Basic\",\"id\":\"b1\",\"code\":{{\"text\":\"t\"}}}}}}]}}"
        )
    };
    has(without_full_url("collection").as_bytes(), "BUNDLE_ENTRY_FULLURL_MISSING", "error", "Bundle.entry[0]");
    lacks(without_full_url("transaction").as_bytes(), "BUNDLE_ENTRY_FULLURL_MISSING");
    lacks(without_full_url("batch-response").as_bytes(), "BUNDLE_ENTRY_FULLURL_MISSING");
    lacks(
        b"{\"resourceType\":\"Bundle\",\"type\":\"searchset\",\"entry\":[{\"resource\":{\"resourceType\":\"OperationOutcome\",\"issue\":[{\"severity\":\"warning\",\"code\":\"informational\"}]},\"search\":{\"mode\":\"outcome\"}}]}",
        "BUNDLE_ENTRY_FULLURL_MISSING",
    );
    // Outside documents, `Type/id` from an entry whose fullUrl is a urn:uuid: names the entry
    // `urn:uuid:id`, as the reference validator resolves it; of another type, it is reported (the
    // suite's bad-bundle-reference-type-4); in a document it resolves to nothing (see above).
    let typed = |bundle_type: &str, target: &str| {
        format!(
            "{{\"resourceType\":\"Bundle\",\"type\":\"{bundle_type}\",\"entry\":[\
{{\"fullUrl\":\"urn:uuid:8c4b8a0e-2f55-4d3b-9a0e-6c1d2b3a4f50\",\"resource\":{{\"resourceType\":\"Patient\",\"generalPractitioner\":[{{\"reference\":\"Practitioner/5d9588d8-3cd6-4b32-8fb7-ad13694e069d\"}}]}}}},\
{{\"fullUrl\":\"urn:uuid:5d9588d8-3cd6-4b32-8fb7-ad13694e069d\",\"resource\":{{\"resourceType\":\"{target}\"}}}}]}}"
        )
    };
    has(
        typed("collection", "Organization").as_bytes(),
        "BUNDLE_REFERENCE_TYPE_MISMATCH",
        "error",
        "Bundle.entry[0].resource.generalPractitioner[0].reference",
    );
    lacks(typed("collection", "Practitioner").as_bytes(), "BUNDLE_REFERENCE_TYPE_MISMATCH");
    lacks(typed("transaction", "Practitioner").as_bytes(), "REFERENCE_UNRESOLVED");
    // A Coding system in the STU3 namespaces: the code cannot be checked (a warning, not an error).
    has(
        b"{\"resourceType\":\"Patient\",\"maritalStatus\":{\"coding\":[{\"system\":\"http://hl7.org/fhir/v3/MaritalStatus\",\"code\":\"M\"}]}}",
        "CODING_SYSTEM_UNKNOWN",
        "warning",
        "Patient.maritalStatus.coding[0].system",
    );
}

/// A ValueSet whose single include has `filters` (JSON), with a declared parameter `p-active`.
fn value_set_with(system: &str, filters: &str) -> Vec<u8> {
    format!(
        "{{\"resourceType\":\"ValueSet\",\"url\":\"http://example.invalid/fhir/ValueSet/v\",\"status\":\"draft\",\
         \"extension\":[{{\"url\":\"http://hl7.org/fhir/tools/StructureDefinition/valueset-parameter\",\
         \"extension\":[{{\"url\":\"name\",\"valueCode\":\"p-active\"}}]}}],\
         \"compose\":{{\"include\":[{{\"system\":\"{system}\",\"filter\":[{filters}]}}]}}}}"
    )
    .into_bytes()
}

/// A filter whose value is given by an expression.
fn by_expression(language: &str, expression: &str) -> String {
    format!(
        "{{\"property\":\"inactive\",\"op\":\"=\",\"_value\":{{\"extension\":[{{\"url\":\"http://hl7.org/fhir/StructureDefinition/cqf-expression\",\
         \"valueExpression\":{{\"language\":\"{language}\",\"expression\":\"{expression}\"}}}}]}}}}"
    )
}

/// ValueSet compose rules (valueset.rs), both directions: parameter expressions, boolean filter
/// values, SNOMED CT ECL; the reference suite's vs-params-2/3/4, vs-bad-ecl and vs-bad-props.
#[test]
fn value_set_filters_are_checked() {
    const SCT: &str = "http://snomed.info/sct";
    let codes_of = |input: &[u8]| -> Vec<String> { findings_of(input).into_iter().map(|(c, _, _)| c).collect() };
    let expression_at = "ValueSet.compose.include[0].filter[0].value.extension[0].valueExpression";
    // Valid: a declared parameter used by a FHIRPath expression, ECL, booleans.
    let good = value_set_with(
        SCT,
        &[
            by_expression("text/fhirpath", "%p-active.not() and %context.exists()"),
            r#"{"property":"constraint","op":"=","value":"(< 404684003 : 363698007 = << 39057004) OR ^ 700043003"}"#
                .into(),
            r#"{"property":"notSelectable","op":"=","value":"false"}"#.into(),
            r#"{"property":"concept","op":"exists","value":"true"}"#.into(),
        ]
        .join(","),
    );
    assert_eq!(errors(&good), Vec::<(String, String)>::new());
    assert!(!codes_of(&good).contains(&"VALUESET_PARAMETER_UNUSED".to_owned()));
    // Another language: the expression is not read, so the parameter is unused.
    let cql = value_set_with(SCT, &by_expression("text/cql", "%p-active"));
    assert_eq!(errors(&cql), vec![("VALUESET_EXPRESSION_LANGUAGE".to_owned(), expression_at.to_owned())]);
    assert!(codes_of(&cql).contains(&"VALUESET_PARAMETER_UNUSED".to_owned()));
    // Not FHIRPath: `$` names nothing.
    let broken = value_set_with(SCT, &by_expression("text/fhirpath", "$ and %p-active"));
    assert_eq!(errors(&broken), vec![("VALUESET_EXPRESSION_INVALID".to_owned(), expression_at.to_owned())]);
    // A parameter the ValueSet does not declare.
    let unknown = value_set_with(SCT, &by_expression("text/fhirpath", "%p-active2"));
    assert_eq!(errors(&unknown), vec![("VALUESET_PARAMETER_UNKNOWN".to_owned(), expression_at.to_owned())]);
    // Not ECL; the same text under another property or system is not judged.
    let ecl = r#"{"property":"constraint","op":"=","value":"404684003 << 404684003"}"#;
    assert_eq!(
        errors(&value_set_with(SCT, ecl)),
        vec![("VALUESET_FILTER_ECL_INVALID".to_owned(), "ValueSet.compose.include[0].filter[0]".to_owned())]
    );
    assert_eq!(errors(&value_set_with("http://example.invalid/cs", ecl)), Vec::<(String, String)>::new());
    // Booleans: notSelectable with =, exists with any property; `in` on notSelectable is not judged.
    let not_boolean = value_set_with(
        "http://example.invalid/cs",
        r#"{"property":"notSelectable","op":"=","value":"1"},{"property":"status","op":"exists","value":"yes"},{"property":"notSelectable","op":"in","value":"1"}"#,
    );
    assert_eq!(
        errors(&not_boolean),
        vec![
            ("VALUESET_FILTER_VALUE_TYPE".to_owned(), "ValueSet.compose.include[0].filter[0]".to_owned()),
            ("VALUESET_FILTER_VALUE_TYPE".to_owned(), "ValueSet.compose.include[0].filter[1]".to_owned()),
        ]
    );
}

/// A SearchParameter derived from a core one keeps its base resource types and its type; a
/// CapabilityStatement's searchParam whose definition is a core parameter has its type
/// (docs/fhir-profiles.md; the suite's sp-diff-base, sp-diff-type and capstmt).
#[test]
fn search_parameters_agree_with_the_core_ones() {
    let derived = |base: &str, ty: &str, from: &str| {
        format!(
            "{{\"resourceType\":\"SearchParameter\",\"url\":\"http://example.invalid/fhir/SearchParameter/s\",\"name\":\"s\",\
\"status\":\"draft\",\"description\":\"d\",\"code\":\"name\",\"derivedFrom\":\"{from}\",\"base\":[{base}],\"type\":\"{ty}\",\
\"expression\":\"Organization.name\"}}"
        )
    };
    let core = "http://hl7.org/fhir/SearchParameter/Organization-name";
    assert_eq!(errors(&derived("\"Organization\"", "string", core)), vec![]);
    assert_eq!(errors(&derived("\"Organization\"", "string", &format!("{core}|4.0.1"))), vec![]);
    assert_eq!(
        errors(&derived("\"Organization\",\"Patient\"", "string", core)),
        vec![("SEARCHPARAMETER_DERIVED_BASE".to_owned(), "SearchParameter.base[1]".to_owned())]
    );
    assert_eq!(
        errors(&derived("\"Organization\"", "token", core)),
        vec![("SEARCHPARAMETER_DERIVED_TYPE".to_owned(), "SearchParameter.type".to_owned())]
    );
    // A core parameter on Resource applies to every resource type.
    assert_eq!(errors(&derived("\"Patient\"", "token", "http://hl7.org/fhir/SearchParameter/Resource-id")), vec![]);
    // A parameter that is not one of the core's is not judged (it is not carried).
    assert_eq!(errors(&derived("\"Patient\"", "token", "http://example.invalid/fhir/SearchParameter/x")), vec![]);

    let capability = |system_type: &str, resource_type: &str| {
        format!(
            "{{\"resourceType\":\"CapabilityStatement\",\"status\":\"draft\",\"date\":\"2024-01-01\",\"kind\":\"instance\",\
\"implementation\":{{\"description\":\"d\"}},\"fhirVersion\":\"4.0.1\",\"format\":[\"json\"],\"rest\":[{{\"mode\":\"server\",\
\"resource\":[{{\"type\":\"AllergyIntolerance\",\"searchParam\":[{{\"name\":\"clinical-status\",\
\"definition\":\"http://hl7.org/fhir/SearchParameter/AllergyIntolerance-clinical-status\",\"type\":\"{resource_type}\"}},\
{{\"name\":\"own\",\"definition\":\"http://example.invalid/fhir/SearchParameter/own\",\"type\":\"date\"}}]}}],\
\"searchParam\":[{{\"name\":\"_id\",\"definition\":\"http://hl7.org/fhir/SearchParameter/Resource-id\",\"type\":\"{system_type}\"}}]}}]}}"
        )
    };
    assert_eq!(errors(&capability("token", "token")), vec![]);
    assert_eq!(
        errors(&capability("token", "date")),
        vec![(
            "CAPABILITYSTATEMENT_SEARCHPARAM_TYPE".to_owned(),
            "CapabilityStatement.rest[0].resource[0].searchParam[0]".to_owned()
        )]
    );
    assert_eq!(
        errors(&capability("string", "token")),
        vec![(
            "CAPABILITYSTATEMENT_SEARCHPARAM_TYPE".to_owned(),
            "CapabilityStatement.rest[0].searchParam[0]".to_owned()
        )]
    );
}

/// A MeasureReport population's subjectResults is a Reference(List) whose entries, one per
/// subject, number the population's count (the suite's mr-single-subj-list).
#[test]
fn measure_report_subject_lists() {
    let report = |count: u32, reference: &str, entries: usize| {
        let entry = vec!["{\"item\":{\"reference\":\"Patient/p\"}}"; entries].join(",");
        // The List is contained only where it is referenced (dom-3).
        let contained = if reference.starts_with('#') {
            format!(
                "\"contained\":[{{\"resourceType\":\"List\",\"id\":\"l1\",\"status\":\"current\",\"mode\":\"working\",\
\"entry\":[{entry}]}}],"
            )
        } else {
            String::new()
        };
        format!(
            "{{\"resourceType\":\"MeasureReport\",{contained}\"status\":\"complete\",\"type\":\"subject-list\",\
\"measure\":\"http://example.invalid/fhir/Measure/m\",\"period\":{{\"start\":\"2024-01-01\",\"end\":\"2024-12-31\"}},\
\"group\":[{{\"population\":[{{\"count\":{count},\"subjectResults\":{{\"reference\":\"{reference}\"}}}}]}}]}}"
        )
    };
    assert_eq!(errors(&report(2, "#l1", 2)), vec![]);
    assert_eq!(
        errors(&report(3, "#l1", 2)),
        vec![("MEASUREREPORT_COUNT_MISMATCH".to_owned(), "MeasureReport.group[0].population[0]".to_owned())]
    );
    // A List elsewhere (on a server) is not counted; a reference to a Patient is no List.
    assert_eq!(errors(&report(500, "List/elsewhere", 2)), vec![]);
    assert_eq!(
        errors(&report(2, "Patient/p", 2)),
        vec![(
            "MEASUREREPORT_SUBJECTS_NOT_LIST".to_owned(),
            "MeasureReport.group[0].population[0].subjectResults".to_owned()
        )]
    );
}

/// A narrative's `#` links name an id or anchor of the resource (or of the Bundle around it), as
/// the reference validator checks them; empty links and `urn:` links are no locations (the
/// suite's ab-list-slicing, bundle-enrl, message-base).
#[test]
fn narrative_links_resolve() {
    let codes = |input: &str| {
        findings_of(input.as_bytes())
            .into_iter()
            .filter(|(c, _, _)| c.starts_with("NARRATIVE_LINK"))
            .collect::<Vec<_>>()
    };
    let basic = |div: &str| {
        format!(
            "{{\"resourceType\":\"Basic\",\"id\":\"b1\",\"text\":{{\"status\":\"generated\",\"div\":\"<div xmlns=\\\"http://www.w3.org/1999/xhtml\\\">{div}</div>\"}},\
\"contained\":[{{\"resourceType\":\"Basic\",\"id\":\"c1\",\"code\":{{\"text\":\"t\"}}}}],\"code\":{{\"text\":\"t\",\"coding\":[{{\"id\":\"cd1\",\"code\":\"x\"}}]}},\
\"subject\":{{\"reference\":\"#c1\"}}}}"
        )
    };
    let div_at = "Basic.text.div".to_owned();
    let one = |code: &str, severity: &str| vec![(code.to_owned(), severity.to_owned(), div_at.clone())];
    // An anchor of the narrative, a contained resource's id, an element's id, the resource's id.
    for ok in [
        "<a name=\\\"top\\\"/><a href=\\\"#top\\\">x</a>",
        "<p id=\\\"p1\\\">y</p><a href=\\\"#p1\\\">x</a>",
        "<a href=\\\"#c1\\\">x</a>",
        "<a href=\\\"#cd1\\\">x</a>",
        "<a href=\\\"#b1\\\">x</a>",
        "<a href=\\\"#\\\">x</a><a href=\\\"https://example.invalid/x\\\">y</a>",
    ] {
        assert_eq!(codes(&basic(ok)), vec![], "{ok}");
    }
    assert_eq!(codes(&basic("<a href=\\\"#nowhere\\\">x</a>")), one("NARRATIVE_LINK_UNRESOLVED", "error"));
    assert_eq!(
        codes(&basic("<a name=\\\"p1\\\"/><p id=\\\"p1\\\">y</p><a href=\\\"#p1\\\">x</a>")),
        one("NARRATIVE_LINK_AMBIGUOUS", "warning")
    );
    assert_eq!(codes(&basic("<a href=\\\"\\\">x</a>")), one("NARRATIVE_LINK_EMPTY", "error"));
    assert_eq!(
        codes(&basic("<a href=\\\"urn:uuid:8c4b8a0e-2f55-4d3b-9a0e-6c1d2b3a4f50\\\">x</a>")),
        one("NARRATIVE_LINK_SCHEME", "error")
    );
    // In a Bundle, an anchor of another entry resolves.
    let bundle = |target: &str| {
        format!(
            "{{\"resourceType\":\"Bundle\",\"type\":\"collection\",\"entry\":[\
{{\"fullUrl\":\"urn:uuid:8c4b8a0e-2f55-4d3b-9a0e-6c1d2b3a4f50\",\"resource\":{{\"resourceType\":\"Basic\",\"id\":\"b1\",\
\"text\":{{\"status\":\"generated\",\"div\":\"<div xmlns=\\\"http://www.w3.org/1999/xhtml\\\"><a href=\\\"#{target}\\\">x</a></div>\"}},\"code\":{{\"text\":\"t\"}}}}}},\
{{\"fullUrl\":\"urn:uuid:00000000-2f55-4d3b-9a0e-6c1d2b3a4f50\",\"resource\":{{\"resourceType\":\"Basic\",\"id\":\"b2\",\
\"text\":{{\"status\":\"generated\",\"div\":\"<div xmlns=\\\"http://www.w3.org/1999/xhtml\\\"><a name=\\\"there\\\">y</a></div>\"}},\"code\":{{\"text\":\"t\"}}}}}}]}}"
        )
    };
    assert_eq!(codes(&bundle("there")), vec![]);
    assert_eq!(
        codes(&bundle("elsewhere")),
        vec![(
            "NARRATIVE_LINK_UNRESOLVED".to_owned(),
            "error".to_owned(),
            "Bundle.entry[0].resource.text.div".to_owned()
        )]
    );
}

/// Cross-version extensions, by the other version's element (hl7.fhir.xver-extensions): DSTU2's
/// `Patient.animal` is a modifier with the parts `species`, `breed`, `genderStatus`; R5's
/// `DeviceRequest.doNotPerform` a modifier boolean.
#[test]
fn cross_version_extensions_are_checked_against_the_other_versions_element() {
    let animal = "http://hl7.org/fhir/1.0/StructureDefinition/extension-Patient.animal";
    let patient = |field: &str, part: &str| {
        serde_json::json!({"resourceType": "Patient", field: [{"url": animal, "extension": [
            {"url": "species", "valueCodeableConcept": {"text": "MARKERSECRET"}},
            {"url": part, "valueCodeableConcept": {"text": "MARKERSECRET"}}]}]})
        .to_string()
    };
    let codes = |input: String| -> (i32, Vec<String>) {
        let o = run_stdin(&["validate", "--json", "-"], input.as_bytes());
        assert!(!String::from_utf8_lossy(&o.stdout).contains("MARKERSECRET"));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        let errors = v["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["severity"] == "error")
            .map(|f| format!("{} {}", f["code"].as_str().unwrap_or("-"), f["location"].as_str().unwrap_or("-")))
            .collect();
        (code(&o), errors)
    };
    assert_eq!(codes(patient("modifierExtension", "breed")), (0, vec![]));
    assert_eq!(
        codes(patient("extension", "breed")),
        (1, vec!["EXTENSION_MODIFIER_MISMATCH Patient.extension[0]".to_owned()])
    );
    assert_eq!(
        codes(patient("modifierExtension", "x-breed")),
        (1, vec!["EXTENSION_URL_INVALID Patient.modifierExtension[0].extension[1].url".to_owned()])
    );
    // A path R5 does not have, a version with no table: unknown.
    for url in [
        "http://hl7.org/fhir/5.0/StructureDefinition/extension-Patient.animal",
        "http://hl7.org/fhir/4.3/StructureDefinition/extension-Patient.animal",
    ] {
        let input =
            serde_json::json!({"resourceType": "Patient", "extension": [{"url": url, "valueString": "MARKERSECRET"}]});
        assert_eq!(codes(input.to_string()), (1, vec!["EXTENSION_UNKNOWN Patient.extension[0]".to_owned()]));
    }
    let request = |field: &str| {
        serde_json::json!({"resourceType": "DeviceRequest", "status": "completed", "intent": "order",
            "codeCodeableConcept": {"text": "MARKERSECRET"}, "subject": {"reference": "Patient/p"},
            field: [{"url": "http://hl7.org/fhir/5.0/StructureDefinition/extension-DeviceRequest.doNotPerform", "valueBoolean": true}]})
        .to_string()
    };
    assert_eq!(codes(request("modifierExtension")), (0, vec![]));
    assert_eq!(
        codes(request("extension")),
        (1, vec!["EXTENSION_MODIFIER_MISMATCH DeviceRequest.extension[0]".to_owned()])
    );
}

/// The code systems FHIR R4 defines in its own namespace, content complete, are checked in every
/// Coding whatever the binding (the reference validator's "Unknown code ... in the CodeSystem
/// 'http://hl7.org/fhir/contract-legalstate' version '4.0.1'"): contract-legalstate is bound
/// extensible, contract-asset-type example, Contract.term.asset.relationship's Coding only
/// preferred.
#[test]
fn codings_of_core_code_systems_are_checked() {
    let contract = |legal: &str, asset: &str, version: &str| {
        format!(
            "{{\"resourceType\":\"Contract\",\"legalState\":{{\"coding\":[{{\"system\":\"http://hl7.org/fhir/contract-legalstate\",\
\"code\":\"{legal}\"{version}}}]}},\"term\":[{{\"offer\":{{\"text\":\"t\"}},\"asset\":[{{\"type\":[{{\"coding\":[{{\
\"system\":\"http://hl7.org/fhir/contract-asset-type\",\"code\":\"{asset}\"}}]}}],\"relationship\":{{\
\"system\":\"http://hl7.org/fhir/resource-types\",\"code\":\"Account\"}}}}]}}]}}"
        )
    };
    assert_eq!(errors(&contract("amended", "participation", "")), vec![]);
    let unknown = |at: &str| ("CODE_UNKNOWN_IN_CODESYSTEM".to_owned(), at.to_owned());
    assert_eq!(
        errors(&contract("invalid-code-test", "participation", "")),
        vec![unknown("Contract.legalState.coding[0].code")]
    );
    assert_eq!(
        errors(&contract("amended", "Participation", "")),
        vec![unknown("Contract.term[0].asset[0].type[0].coding[0].code")],
        "case sensitive"
    );
    // The version R4's code systems have is 4.0.1; a Coding naming another is not judged.
    assert_eq!(errors(&contract("invalid-code-test", "participation", ",\"version\":\"4.0.1\"")).len(), 1);
    assert_eq!(errors(&contract("invalid-code-test", "participation", ",\"version\":\"5.0.0\"")), vec![]);
    // A nested concept is a code (issue-type: `structure` under `invalid`).
    let issue = |code: &str| {
        format!(
            "{{\"resourceType\":\"Basic\",\"code\":{{\"coding\":[{{\"system\":\"http://hl7.org/fhir/issue-type\",\"code\":\"{code}\"}}]}}}}"
        )
    };
    assert_eq!(errors(&issue("structure")), vec![]);
    assert_eq!(errors(&issue("nonsense")), vec![unknown("Basic.code.coding[0].code")]);
    // terminology.hl7.org's code systems are not R4's to judge.
    let v2 = "{\"resourceType\":\"Basic\",\"code\":{\"coding\":[{\"system\":\"http://terminology.hl7.org/CodeSystem/v2-0203\",\"code\":\"nonsense\"}]}}";
    assert_eq!(errors(v2), vec![]);
}

/// A required binding needs a code: a primitive with only an extension (a data-absent-reason)
/// has none, as the reference validator's "No code provided, and a code is required from the
/// value set"; a cross-version extension carrying the code of another version is only a
/// warning. A CodeableConcept with text and no coding: an error under a required binding, a
/// warning under an extensible one.
#[test]
fn required_bindings_need_a_code() {
    let allergy = |category: &str, clinical: &str| {
        format!(
            "{{\"resourceType\":\"AllergyIntolerance\",\"clinicalStatus\":{clinical},{category}\"patient\":{{\"reference\":\"Patient/p\"}}}}"
        )
    };
    let coded = "{\"coding\":[{\"system\":\"http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical\",\"code\":\"active\"}]}";
    assert_eq!(errors(&allergy("\"category\":[\"food\"],", coded)), vec![]);
    let absent = "\"_category\":[{\"extension\":[{\"url\":\"http://hl7.org/fhir/StructureDefinition/data-absent-reason\",\"valueCode\":\"unknown\"}]}],";
    let missing = |at: &str| ("CODE_MISSING".to_owned(), at.to_owned());
    assert_eq!(errors(&allergy(absent, coded)), vec![missing("AllergyIntolerance.category[0]")]);
    let xver = "\"_category\":[{\"extension\":[{\"url\":\"http://hl7.org/fhir/5.0/StructureDefinition/extension-AllergyIntolerance.category\",\"valueCode\":\"food\"}]}],";
    assert_eq!(errors(&allergy(xver, coded)), vec![]);
    assert!(findings_of(allergy(xver, coded).as_bytes()).contains(&(
        "CODE_MISSING".to_owned(),
        "warning".to_owned(),
        "AllergyIntolerance.category[0]".to_owned()
    )));
    // clinicalStatus is bound required: text alone is no code.
    assert_eq!(errors(&allergy("", "{\"text\":\"active\"}")), vec![missing("AllergyIntolerance.clinicalStatus")]);
    // Condition.code is bound example: text alone is fine; Condition.severity preferred too.
    let condition = "{\"resourceType\":\"Condition\",\"code\":{\"text\":\"x\"},\"severity\":{\"text\":\"y\"},\"subject\":{\"reference\":\"Patient/p\"}}";
    assert!(findings_of(condition.as_bytes()).iter().all(|(c, _, _)| c != "CODE_MISSING"));
}
