//! Fail closed for real (issue 36): one regression test per red-team finding, on the crafted
//! messages of fixtures/redact/red_team (markers `MKR` + digits where identifiers hide), under
//! the shipped Safe Harbor and limited data set policies; and `phiward policy test`, the marker
//! audit shipped with the product (shipped policies pass it on the project's fixtures, a planted
//! unsafe keep is found).

use serde_json::Value;

use crate::common::{code, errors_only_against_vital_signs, fixture, root, run, run_stdin};
use crate::no_leak::has_marker;

const POLICIES: [&str; 2] = ["safe-harbor", "limited-data-set"];

fn policy(name: &str) -> String {
    root().join("policy").join(format!("{name}.toml")).to_string_lossy().into_owned()
}

fn red_team(file: &str) -> String {
    fixture(&format!("redact/red_team/{file}")).to_string_lossy().into_owned()
}

/// `phiward redact FILE --policy P`: exit 0, and the bytes.
fn redact(file: &str, policy_name: &str) -> Vec<u8> {
    let o = run(&["redact", &red_team(file), "--policy", &policy(policy_name)]);
    assert_eq!(code(&o), 0, "{file} {policy_name}: {}", String::from_utf8_lossy(&o.stderr));
    assert!(!has_marker(&o.stderr));
    o.stdout
}

/// The HL7 v2 segments of `out`, as text.
fn segments(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out).split('\r').filter(|l| !l.is_empty()).map(str::to_owned).collect()
}

/// Field `n` of a segment line.
fn field(line: &str, n: usize) -> &str {
    line.split('|').nth(n).unwrap_or("")
}

/// The OBX segment whose OBX-1 is `set_id`.
fn obx(segs: &[String], set_id: &str) -> String {
    segs.iter().find(|l| l.starts_with("OBX|") && field(l, 1) == set_id).cloned().unwrap_or_default()
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

const ORU: &str = "oru_hiding_places_v2.5.1.hl7";
const BUNDLE: &str = "bundle_hiding_places.json";

/// Finding: OBX-5 kept verbatim under identifying OBX-2 types (XPN, XAD, XTN, CX, XCN, XON, EI,
/// HD, TM...) and under empty, unknown (`ZZ`), lower-case, padded and composite OBX-2 values.
#[test]
fn obx5_is_kept_only_for_a_listed_type_matched_exactly() {
    let input = String::from_utf8(std::fs::read(red_team(ORU)).expect("read")).expect("utf-8");
    let input = segments(input.as_bytes());
    for p in POLICIES {
        let out = redact(ORU, p);
        assert!(!has_marker(&out), "{p}: a marker survived");
        let segs = segments(&out);
        let mut checked = 0;
        for line in input.iter().filter(|l| l.starts_with("OBX|")) {
            let ty = field(line, 2);
            let kept = obx(&segs, field(line, 1));
            let value = field(&kept, 5);
            match ty {
                "NM" | "SN" | "CWE" | "CE" | "DR" => {}
                // A timing: its dates reduced to years, nothing else.
                "TQ" => assert!(value.is_empty() || value == "^^^2024", "{p}: TQ kept {value}"),
                _ => {
                    assert_eq!(value, "", "{p}: OBX-5 kept under OBX-2 {ty:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked >= 20, "{checked}");
        // What the rule lists is kept when valid: a number, a SNOMED CT code (its text goes).
        assert_eq!(field(&obx(&segs, "27"), 5), "72");
        assert_eq!(field(&obx(&segs, "28"), 5), "260415000^^SCT");
    }
}

/// Finding: the text of DG1-4, PR1-4 and OBX-7 was kept ("SSN 123-45-6789" survived).
#[test]
fn free_text_in_dg1_4_pr1_4_and_obx7_is_removed() {
    for p in POLICIES {
        let out = redact(ORU, p);
        assert!(!contains(&out, "123-45-6789"), "{p}");
        let segs = segments(&out);
        let dg1 = segs.iter().find(|l| l.starts_with("DG1")).expect("DG1");
        assert_eq!(field(dg1, 4), "", "{p}");
        assert_eq!(field(dg1, 3), "I10^^I10", "{p}: the ICD-10 code stays, its text goes");
        let pr1 = segs.iter().find(|l| l.starts_with("PR1")).expect("PR1");
        assert_eq!(field(pr1, 4), "", "{p}");
        assert_eq!(field(&obx(&segs, "27"), 7), "", "{p}: OBX-7");
    }
}

/// Finding: ages 95 and 97 were kept (no age cap in the HL7 v2 rules): by LOINC age code, by
/// age unit, as a structured numeric.
#[test]
fn hl7_ages_over_89_become_90() {
    for p in POLICIES {
        let segs = segments(&redact(ORU, p));
        assert_eq!(field(&obx(&segs, "30"), 5), "90", "{p}: 95 by LOINC 30525-0");
        assert_eq!(field(&obx(&segs, "31"), 5), "90", "{p}: 97 by LOINC 21612-7");
        assert_eq!(field(&obx(&segs, "32"), 5), ">^90", "{p}: SN >97");
    }
}

/// Finding: kept coded fields (OBX-3, OBR-4, SPM-4...) kept whatever their components held.
#[test]
fn kept_coded_fields_keep_only_valid_codes() {
    let out = redact(ORU, "safe-harbor");
    let segs = segments(&out);
    // Texts go, codes valid for their system stay, a code that is not one goes.
    assert_eq!(field(&obx(&segs, "1"), 3), "8302-2^^LN");
    let obr = segs.iter().find(|l| l.starts_with("OBR")).expect("OBR");
    assert_eq!(field(obr, 4), "24323-8^^LN");
    let spm = segs.iter().find(|l| l.starts_with("SPM")).expect("SPM");
    assert_eq!(field(spm, 4), "^^SCT");
    assert_eq!(field(&obx(&segs, "25"), 5), "^^LN", "a marker where a LOINC code belongs");
    // Counted in the manifest.
    let dir = std::env::temp_dir().join(format!("phiward-fail-closed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let m = dir.join("manifest.json");
    let o = run(&["redact", &red_team(ORU), "--manifest", m.to_str().expect("utf-8")]);
    assert_eq!(code(&o), 0);
    let v: Value = serde_json::from_slice(&std::fs::read(&m).expect("manifest")).expect("JSON");
    assert!(v["unprovenRemovals"].as_u64().unwrap_or(0) >= 2, "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Finding: full dates inside DR and TQ were kept.
#[test]
fn dates_inside_any_type_become_years() {
    let segs = segments(&redact(ORU, "safe-harbor"));
    assert_eq!(field(&obx(&segs, "29"), 5), "2024^2024", "DR");
    let tq1 = segs.iter().find(|l| l.starts_with("TQ1")).expect("TQ1");
    assert_eq!((field(tq1, 7), field(tq1, 8)), ("2024", "2024"));
}

fn bundle(p: &str) -> (Vec<u8>, Value) {
    let out = redact(BUNDLE, p);
    let v: Value = serde_json::from_slice(&out).expect("JSON");
    (out, v)
}

fn resource<'v>(bundle: &'v Value, ty: &str, n: usize) -> &'v Value {
    bundle["entry"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| &e["resource"])
        .filter(|r| r["resourceType"] == ty)
        .nth(n)
        .unwrap_or(&Value::Null)
}

/// Finding: a kept element kept everything under it: extensions inside a kept Coding and on
/// `_gender` kept a HumanName, an Address, a `mailto:` email and a 9-digit number.
#[test]
fn extensions_inside_kept_elements_are_removed() {
    for p in POLICIES {
        let (out, v) = bundle(p);
        assert!(!has_marker(&out), "{p}");
        for gone in ["123456789", "mailto", "\"extension\"", "_gender", "display"] {
            assert!(!contains(&out, gone), "{p}: {gone} survived");
        }
        let patient = resource(&v, "Patient", 0);
        assert_eq!(patient["gender"], "female", "{p}: the kept code stays");
        assert_eq!(resource(&v, "Observation", 0)["code"]["coding"][0]["code"], "8302-2");
    }
}

/// Finding: a contained Questionnaire was kept whole, with its narrative.
#[test]
fn a_contained_questionnaire_is_not_kept_whole() {
    for p in POLICIES {
        let (out, v) = bundle(p);
        assert!(!contains(&out, "\"div\""), "{p}: narrative kept");
        let response = resource(&v, "QuestionnaireResponse", 0);
        let contained = &response["contained"][0];
        assert_eq!(contained["resourceType"], "Questionnaire");
        assert!(contained["item"][0].get("text").is_none(), "{p}");
        // Link ids are numbered, and the contained form is still referenced.
        assert!(contained["item"][0]["linkId"].as_str().is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit())));
        assert_eq!(response["questionnaire"], format!("#{}", contained["id"].as_str().unwrap_or("-")));
    }
}

/// Finding: `Location.position` (GPS) was kept.
#[test]
fn geographic_coordinates_are_removed() {
    for p in POLICIES {
        let (out, v) = bundle(p);
        assert!(!contains(&out, "position") && !contains(&out, "37.77"), "{p}");
        assert_eq!(resource(&v, "Location", 0)["status"], "active");
    }
}

/// Finding: an age of 97 as a plain Quantity or a Range was kept (only type Age was capped).
#[test]
fn fhir_ages_over_89_become_90_in_every_type() {
    for p in POLICIES {
        let (_, v) = bundle(p);
        assert_eq!(resource(&v, "Observation", 1)["valueQuantity"]["value"], 90, "{p}: LOINC age code");
        let range = &resource(&v, "Observation", 2)["valueRange"];
        assert_eq!((&range["low"]["value"], &range["high"]["value"]), (&Value::from(90), &Value::from(90)), "{p}");
        assert_eq!(resource(&v, "Observation", 3)["valueQuantity"]["value"], 90, "{p}: UCUM a");
        assert_eq!(resource(&v, "Condition", 0)["onsetAge"]["value"], 90, "{p}: Age");
        // Not an age: a height keeps its value.
        assert_eq!(resource(&v, "Observation", 0)["valueQuantity"]["value"], 170, "{p}");
    }
}

/// Finding: absolute reference and fullUrl bases kept their host and path.
#[test]
fn absolute_reference_and_fullurl_bases_are_replaced() {
    for p in POLICIES {
        let (out, v) = bundle(p);
        assert!(!contains(&out, "hospital.example.org"), "{p}");
        for e in v["entry"].as_array().expect("entries") {
            let url = e["fullUrl"].as_str().unwrap_or("");
            assert!(url.starts_with("https://redacted.invalid/fhir/"), "{p}: {url}");
        }
        let subject = resource(&v, "Observation", 0)["subject"]["reference"].as_str().unwrap_or("");
        assert!(subject.starts_with("https://redacted.invalid/fhir/Patient/"), "{p}: {subject}");
    }
}

/// Finding: `Quantity.unit`, `linkId`, `Coding.display` kept free text; value[x] strings.
#[test]
fn free_text_in_units_link_ids_displays_and_values_is_not_kept() {
    for p in POLICIES {
        let (_, v) = bundle(p);
        let q = &resource(&v, "Observation", 0)["valueQuantity"];
        assert!(q.get("unit").is_none(), "{p}: a unit that is not UCUM");
        assert_eq!(q["code"], "cm", "{p}");
        assert!(resource(&v, "Observation", 0)["component"][0].get("valueString").is_none(), "{p}");
        assert_eq!(resource(&v, "Observation", 1)["valueQuantity"]["unit"], "a", "{p}: a UCUM unit stays");
        let item = &resource(&v, "QuestionnaireResponse", 0)["item"][0];
        assert!(item.get("answer").is_none() && item.get("text").is_none(), "{p}");
    }
}

/// The redacted outputs still parse and validate.
#[test]
fn red_team_outputs_parse_and_validate() {
    for p in POLICIES {
        let o = run_stdin(&["validate", "--format", "fhir", "-"], &redact(BUNDLE, p));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(code(&o) == 0 || errors_only_against_vital_signs(&text), "{p}: {text}");
        let o = run_stdin(&["parse", "--format", "hl7", "-"], &redact(ORU, p));
        assert_eq!(code(&o), 0, "{p}");
    }
}

// ---- policy test ---------------------------------------------------------------------------

fn policy_test(policy_path: &str, dir: &str) -> (i32, Value, Vec<u8>) {
    let o = run(&["policy", "test", policy_path, "--samples", dir, "--json"]);
    assert!(!has_marker(&o.stdout) && !has_marker(&o.stderr), "a marker in the report");
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (code(&o), v, o.stderr)
}

/// The shipped policies pass `policy test` on the project's fixtures: no marker survives
/// outside the fields they document as kept (the limited data set documents the city). Every
/// policy under policy/ (the DICOM ones too: they keep nothing of these formats); a new one is
/// covered without editing this test.
#[test]
fn shipped_policies_pass_the_policy_test_on_the_fixtures() {
    let mut names: Vec<String> = std::fs::read_dir(crate::common::root().join("policy"))
        .expect("policy folder")
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".toml").map(str::to_owned))
        .collect();
    names.sort();
    assert!(names.len() >= 13 && names.iter().any(|n| n == "dicom-research"), "{names:?}");
    for name in names.iter().map(String::as_str) {
        let mut markers = 0;
        for dir in ["hl7v2/valid", "hl7v2/markers", "fhir/valid", "redact/markers", "redact/red_team"] {
            let d = fixture(dir).to_string_lossy().into_owned();
            let (exit, v, err) = policy_test(&policy(name), &d);
            assert_eq!(exit, 0, "{name} {dir}: {v} {}", String::from_utf8_lossy(&err));
            assert_eq!(v["survived"], 0, "{name} {dir}");
            assert_eq!(v["failedSamples"], 0, "{name} {dir}");
            markers += v["markers"].as_u64().unwrap_or(0);
            if name != "limited-data-set" {
                assert_eq!(v["documented"], 0, "{name} {dir}");
            }
            for f in v["findings"].as_array().into_iter().flatten() {
                let at = f["location"].as_str().unwrap_or("");
                assert!(at.ends_with("-11[1].3.1") || at.ends_with("-11[2].3.1") || at.ends_with(".city"), "{at}");
            }
        }
        assert!(markers > 5000, "{name}: {markers} markers");
    }
}

/// `policy test` finds a planted unsafe keep (a name kept as free text, an SSN, a FHIR name)
/// in a copy of Safe Harbor, by path and marker number, without a value.
#[test]
fn policy_test_finds_a_planted_unsafe_keep() {
    let shipped = std::fs::read_to_string(policy("safe-harbor")).expect("policy");
    let head_end = shipped.find("[[hl7v2]]").expect("rules");
    let planted = "[[hl7v2]]\nselect = \"PID-5\"\naction = \"keep\"\nfree_text = true\n\
                   [[hl7v2]]\nselect = \"PID-19\"\naction = \"keep\"\nfree_text = true\n\
                   [[fhir]]\nselect = \"Patient.name\"\naction = \"keep\"\nfree_text = true\n";
    let unsafe_policy = format!("{}{planted}{}", &shipped[..head_end], &shipped[head_end..]);
    let dir = std::env::temp_dir().join(format!("phiward-policy-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let p = dir.join("planted.toml");
    std::fs::write(&p, unsafe_policy).expect("write");
    let samples = fixture("redact/markers").to_string_lossy().into_owned();
    let (exit, v, _) = policy_test(p.to_str().expect("utf-8"), &samples);
    assert_eq!(exit, 1, "{v}");
    let at: Vec<&str> =
        v["findings"].as_array().expect("findings").iter().filter_map(|f| f["location"].as_str()).collect();
    assert!(at.iter().any(|l| l.starts_with("PID[1]-5[")), "{at:?}");
    assert!(at.iter().any(|l| l.starts_with("PID[1]-19[")), "{at:?}");
    assert!(at.iter().any(|l| l.contains("(Patient).name[0].family")), "{at:?}");
    assert!(v["findings"].as_array().expect("findings").iter().all(|f| f["code"] == "POLICY_MARKER_SURVIVED"));
    // The human report: one line per survivor, value-free, exit 1.
    let o = run(&["policy", "test", p.to_str().expect("utf-8"), "--samples", &samples]);
    assert_eq!(code(&o), 1);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines().any(|l| l.starts_with("sample:1 record:1 PID[1]-5[1].1.1 error POLICY_MARKER_SURVIVED marker:"))
    );
    assert!(text.trim_end().ends_with(": fail"), "{text}");
    // Documented with a reason, the same keeps pass; their survivors are counted apart.
    let documented = std::fs::read_to_string(&p)
        .expect("read")
        .replace("free_text = true\n", "free_text = true\nreason = \"planted\"\n");
    std::fs::write(&p, documented).expect("write");
    let (exit, v, _) = policy_test(p.to_str().expect("utf-8"), &samples);
    assert_eq!(exit, 0, "{v}");
    assert!(v["documented"].as_u64().unwrap_or(0) > 3, "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A keep cannot list an identifying variant type, nor document what it does not keep.
#[test]
fn a_keep_cannot_list_identifying_types() {
    let dir = std::env::temp_dir().join(format!("phiward-policy-types-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    for (body, expected) in [
        ("[[hl7v2]]\nselect = \"OBX-5\"\naction = \"keep\"\ntypes = [\"XPN\"]\n", "POLICY_ACTION_NOT_ALLOWED"),
        ("[[fhir]]\nselect = \"Observation\"\naction = \"keep\"\ntypes = [\"string\"]\n", "POLICY_ACTION_NOT_ALLOWED"),
        ("[[hl7v2]]\nselect = \"PID-5\"\naction = \"remove\"\nreason = \"x\"\n", "POLICY_INVALID_VALUE"),
    ] {
        let p = dir.join("p.toml");
        std::fs::write(&p, format!("[policy]\nname = \"t\"\n{body}")).expect("write");
        let o = run(&["policy", "check", p.to_str().expect("utf-8")]);
        assert_eq!(code(&o), 1, "{body}");
        assert!(String::from_utf8_lossy(&o.stdout).contains(expected), "{body}");
        let o = run(&["policy", "test", p.to_str().expect("utf-8"), "--samples", dir.to_str().expect("utf-8")]);
        assert_eq!(code(&o), 2, "{body}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
