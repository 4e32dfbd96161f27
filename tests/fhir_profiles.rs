//! FHIR profiles of an IG (issue 31): `validate --ig DIR --profile URL --must-support` over the
//! synthetic package under fixtures/fhir/ig: meta.profile followed, findings naming the
//! profile's canonical, `--profile` on an instance that claims none, must-support only on
//! request, usage and load failures, and no value of the instance in any output.

use serde_json::Value;

use crate::common::{assert_failure_line, code, fixture, run};

const PROFILE: &str = "http://example.org/fhir/phiward/StructureDefinition/test-observation";
const EXTENSION: &str = "http://example.org/fhir/phiward/StructureDefinition/test-method";

fn ig() -> String {
    fixture("fhir/ig").to_string_lossy().into_owned()
}

fn instance(name: &str) -> String {
    fixture("fhir/ig/instances").join(name).to_string_lossy().into_owned()
}

/// `(code, severity, location, profile)` of each finding of a `validate --json` run.
fn findings(stdout: &[u8]) -> Vec<(String, String, String, String)> {
    let v: Value = serde_json::from_slice(stdout).expect("one JSON object");
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or("-").to_owned();
            (s("code"), s("severity"), s("location"), s("profile"))
        })
        .collect()
}

fn assert_no_marker(o: &std::process::Output) {
    for out in [&o.stdout, &o.stderr] {
        assert!(!String::from_utf8_lossy(out).contains("MARKERSECRET"), "a value reached the output");
    }
}

#[test]
fn help_shows_the_package_options() {
    let o = run(&["validate", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    for flag in ["--ig", "--package-dir", "--profile", "--must-support"] {
        assert!(help.contains(flag), "{flag} missing from validate --help");
    }
}

#[test]
fn a_conformant_instance_is_valid_against_its_meta_profile() {
    let o = run(&["validate", "--json", "--ig", &ig(), &instance("observation-valid.json")]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stdout));
    let errors: Vec<_> = findings(&o.stdout).into_iter().filter(|f| f.1 == "error").collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_no_marker(&o);
}

#[test]
fn each_rule_of_the_profile_is_found_at_its_element_and_names_the_profile() {
    let o = run(&["validate", "--json", "--ig", &ig(), &instance("observation-invalid.json")]);
    assert_eq!(code(&o), 1);
    assert_no_marker(&o);
    let found: Vec<(String, String, String, String)> = findings(&o.stdout).into_iter().filter(|f| f.3 != "-").collect();
    let expect = |c: &str, loc: &str, p: &str| (c.to_owned(), "error".to_owned(), loc.to_owned(), p.to_owned());
    for want in [
        expect("PROFILE_FIXED", "Observation.status", PROFILE),
        expect("PROFILE_PATTERN", "Observation.category[0]", PROFILE),
        expect("PROFILE_BINDING", "Observation.code", PROFILE),
        expect("SLICE_UNMATCHED", "Observation.code.coding[1]", PROFILE),
        expect("PROFILE_CARDINALITY_MIN", "Observation.subject", PROFILE),
        expect("PROFILE_INVARIANT", "Observation.valueQuantity/invariant:tob-1", PROFILE),
        expect("PROFILE_CARDINALITY_MAX", "Observation.note[0]", PROFILE),
        expect("PROFILE_TYPE", "Observation.extension[0].valueString", EXTENSION),
    ] {
        assert!(found.contains(&want), "{want:?} not in {found:?}");
    }
}

#[test]
fn profile_option_applies_a_profile_the_instance_does_not_claim() {
    let plain = instance("observation-no-profile.json");
    let without = run(&["validate", "--json", "--ig", &ig(), &plain]);
    assert_eq!(code(&without), 0);
    let with = run(&["validate", "--json", "--ig", &ig(), "--profile", PROFILE, &plain]);
    assert_eq!(code(&with), 1);
    let codes: Vec<String> = findings(&with.stdout).into_iter().map(|f| f.0).collect();
    assert!(codes.iter().any(|c| c == "PROFILE_CARDINALITY_MIN"), "{codes:?}");
    assert_no_marker(&with);
}

#[test]
fn must_support_is_reported_only_when_asked() {
    let valid = instance("observation-valid.json");
    let quiet = run(&["validate", "--json", "--ig", &ig(), &valid]);
    assert!(!findings(&quiet.stdout).iter().any(|f| f.0 == "PROFILE_MUST_SUPPORT"));
    let asked = run(&["validate", "--json", "--ig", &ig(), "--must-support", &valid]);
    assert_eq!(code(&asked), 0);
    let ms: Vec<_> = findings(&asked.stdout).into_iter().filter(|f| f.0 == "PROFILE_MUST_SUPPORT").collect();
    assert_eq!(
        ms,
        [(
            "PROFILE_MUST_SUPPORT".to_owned(),
            "information".to_owned(),
            "Observation.effective".to_owned(),
            PROFILE.to_owned()
        )]
    );
}

#[test]
fn an_unknown_meta_profile_is_a_warning_without_the_ig() {
    let o = run(&[
        "validate",
        "--json",
        "--ig",
        &instance("observation-no-profile.json"),
        &instance("observation-valid.json"),
    ]);
    let f = findings(&o.stdout);
    assert!(f.iter().any(|f| f.0 == "PROFILE_UNKNOWN" && f.1 == "warning" && f.3 == "-"), "{f:?}");
    // The IG's extension is unknown too without the IG; its url is of an example domain
    // (example.org), which the reference validator allows unless told not to.
    assert!(!f.iter().any(|f| f.0 == "PROFILE_EXTENSION_UNKNOWN"), "{f:?}");
    assert_eq!(code(&o), 0);
    let o = run(&[
        "validate",
        "--json",
        "--no-example-urls",
        "--ig",
        &instance("observation-no-profile.json"),
        &instance("observation-valid.json"),
    ]);
    let f = findings(&o.stdout);
    assert!(f.iter().any(|f| f.0 == "PROFILE_EXTENSION_UNKNOWN" && f.1 == "error"), "{f:?}");
    assert_eq!(code(&o), 1);
}

#[test]
fn a_profile_that_is_not_loaded_is_a_usage_error_naming_the_option() {
    let o =
        run(&["validate", "--ig", &ig(), "--profile", "http://example.org/none", &instance("observation-valid.json")]);
    assert_eq!(code(&o), 2);
    assert_failure_line(&o, "CLI_USAGE");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--profile") && !err.contains("example.org"), "{err}");
}

#[test]
fn a_package_that_cannot_be_read_fails_naming_the_argument_by_place() {
    let missing = fixture("fhir/ig/no-such-package.tgz").to_string_lossy().into_owned();
    let o = run(&["validate", "--ig", &ig(), "--ig", &missing, &instance("observation-valid.json")]);
    assert_failure_line(&o, "CLI_IG_UNREADABLE");
    assert!(String::from_utf8_lossy(&o.stderr).contains("occurrence 2"));
}

#[test]
fn a_code_that_a_loaded_complete_code_system_lacks_is_found_without_its_value() {
    let file = instance("observation-unknown-code.json");
    let o = run(&["validate", "--json", "--ig", &ig(), &file]);
    assert_eq!(code(&o), 1, "{}", String::from_utf8_lossy(&o.stdout));
    let found = findings(&o.stdout);
    assert!(
        found
            .iter()
            .any(|f| f.0 == "CODE_UNKNOWN_IN_CODESYSTEM" && f.1 == "error" && f.2 == "Observation.code.coding[0].code"),
        "{found:?}"
    );
    assert_no_marker(&o);
    // Without the package the code system is unknown and the code is not judged.
    let alone = run(&["validate", "--json", &file]);
    assert!(!findings(&alone.stdout).iter().any(|f| f.0 == "CODE_UNKNOWN_IN_CODESYSTEM"));
}

#[test]
fn a_loaded_extension_is_used_as_modifier_extension_exactly_when_its_definition_is_a_modifier() {
    // test-method is not a modifier: as a modifierExtension it is EXTENSION_MODIFIER_MISMATCH,
    // naming the extension's definition; as an extension (observation-valid.json) it is clean.
    let o = run(&["validate", "--json", "--ig", &ig(), &instance("observation-extension-as-modifier.json")]);
    assert_eq!(code(&o), 1, "{}", String::from_utf8_lossy(&o.stdout));
    let found = findings(&o.stdout);
    assert!(
        found.iter().any(|f| f.0 == "EXTENSION_MODIFIER_MISMATCH"
            && f.1 == "error"
            && f.2 == "Observation.modifierExtension[0]"
            && f.3 == EXTENSION),
        "{found:?}"
    );
    assert_no_marker(&o);
    let valid = run(&["validate", "--json", "--ig", &ig(), &instance("observation-valid.json")]);
    assert!(!findings(&valid.stdout).iter().any(|f| f.0 == "EXTENSION_MODIFIER_MISMATCH"));
}

#[test]
fn an_undefined_url_of_the_core_and_extensions_pack_namespace_is_unknown_with_or_without_packages() {
    // Neither R4 nor the extensions pack defines it: EXTENSION_UNKNOWN once, at the extension,
    // with the IG loaded (not also PROFILE_EXTENSION_UNKNOWN) and without.
    let file = instance("observation-core-namespace-extension.json");
    for o in [run(&["validate", "--json", "--ig", &ig(), &file]), run(&["validate", "--json", &file])] {
        assert_eq!(code(&o), 1, "{}", String::from_utf8_lossy(&o.stdout));
        let found = findings(&o.stdout);
        let unknown: Vec<_> = found.iter().filter(|f| f.0.ends_with("EXTENSION_UNKNOWN")).collect();
        assert_eq!(unknown.len(), 1, "{found:?}");
        assert_eq!(
            (unknown[0].0.as_str(), unknown[0].1.as_str(), unknown[0].2.as_str()),
            ("EXTENSION_UNKNOWN", "error", "Observation.extension[1]")
        );
        assert_no_marker(&o);
    }
}

/// A folder of files for one test (`name` keeps tests apart), written afresh.
fn scratch(name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("phiward-profiles-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    for (file, text) in files {
        std::fs::write(dir.join(file), text).expect("scratch file");
    }
    dir
}

const MEMBER_OF_VS: &str = r#"{"resourceType":"ValueSet","url":"http://example.org/fhir/ValueSet/low-criticality",
 "status":"draft","compose":{"include":[{"system":"http://hl7.org/fhir/allergy-intolerance-criticality",
 "concept":[{"code":"low"}]}]}}"#;

const MEMBER_OF_PROFILE: &str = r#"{"resourceType":"StructureDefinition",
 "url":"http://example.org/fhir/StructureDefinition/basic-member-of","name":"BasicMemberOf","status":"draft",
 "fhirVersion":"4.0.1","kind":"resource","abstract":false,"type":"Basic",
 "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Basic","derivation":"constraint",
 "differential":{"element":[{"id":"Basic.code","path":"Basic.code","constraint":[{"key":"mo-1",
 "severity":"error","human":"in the value set","expression":"memberOf('VALUESET')"}]}]}}"#;

fn basic_coded(code: &str) -> String {
    format!(
        r#"{{"resourceType":"Basic","code":{{"coding":[{{"system":"http://example.org/other","code":"MARKERSECRET"}},
        {{"system":"http://hl7.org/fhir/allergy-intolerance-criticality","code":"{code}"}}]}}}}"#
    )
}

/// A scratch folder with the value set `MEMBER_OF_VS`, `profile`, and a Basic coded `low`
/// (`in.json`, in the value set) and `high` (`out.json`, not in it).
fn basic_coded_case(name: &str, profile: &str) -> std::path::PathBuf {
    scratch(
        name,
        &[
            ("vs.json", MEMBER_OF_VS),
            ("profile.json", profile),
            ("in.json", &basic_coded("low")),
            ("out.json", &basic_coded("high")),
        ],
    )
}

/// `validate --json` of `file` of a [`basic_coded_case`] folder against `profile_url`, with the
/// folder's value set and profile loaded.
fn validate_basic(dir: &std::path::Path, profile_url: &str, file: &str) -> std::process::Output {
    let path = |f: &str| dir.join(f).to_string_lossy().into_owned();
    run(&[
        "validate",
        "--json",
        "--ig",
        &path("vs.json"),
        "--ig",
        &path("profile.json"),
        "--profile",
        profile_url,
        &path(file),
    ])
}

#[test]
fn member_of_in_a_profile_invariant_asks_the_loaded_value_set() {
    let profile = MEMBER_OF_PROFILE.replace("VALUESET", "http://example.org/fhir/ValueSet/low-criticality");
    let dir = basic_coded_case("member-of", &profile);
    let validate = |f: &str| validate_basic(&dir, "http://example.org/fhir/StructureDefinition/basic-member-of", f);
    // One of the codings is in the value set: a member.
    let inside = validate("in.json");
    assert_eq!(code(&inside), 0, "{}", String::from_utf8_lossy(&inside.stdout));
    assert!(!findings(&inside.stdout).iter().any(|f| f.0.starts_with("PROFILE_INVARIANT")));
    // None is: the invariant fails at the element.
    let outside = validate("out.json");
    assert_eq!(code(&outside), 1);
    let f = findings(&outside.stdout);
    assert!(
        f.iter().any(|f| f.0 == "PROFILE_INVARIANT" && f.1 == "error" && f.2 == "Basic.code/invariant:mo-1"),
        "{f:?}"
    );
    assert_no_marker(&outside);
}

#[test]
fn member_of_a_value_set_that_cannot_be_expanded_leaves_the_invariant_unchecked() {
    let profile = MEMBER_OF_PROFILE.replace("VALUESET", "http://example.org/fhir/ValueSet/not-loaded");
    let dir = scratch("member-of-unknown", &[("profile.json", &profile), ("out.json", &basic_coded("high"))]);
    let path = |f: &str| dir.join(f).to_string_lossy().into_owned();
    let o = run(&[
        "validate",
        "--json",
        "--ig",
        &path("profile.json"),
        "--profile",
        "http://example.org/fhir/StructureDefinition/basic-member-of",
        &path("out.json"),
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stdout));
    let unchecked: Vec<_> = findings(&o.stdout).into_iter().filter(|f| f.0 == "PROFILE_INVARIANT_UNCHECKED").collect();
    assert_eq!(unchecked.len(), 1, "{unchecked:?}");
    assert_eq!(unchecked[0].1, "information");
}

const DURATION_PROFILE: &str = r#"{"resourceType":"StructureDefinition",
 "url":"http://example.org/fhir/StructureDefinition/patient-born-recently","name":"PatientBornRecently",
 "status":"draft","fhirVersion":"4.0.1","kind":"resource","abstract":false,"type":"Patient",
 "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Patient","derivation":"constraint",
 "differential":{"element":[{"id":"Patient.birthDate","path":"Patient.birthDate",
 "minValueDuration":{"value":100,"system":"http://unitsofmeasure.org","code":"a"},
 "maxValueDuration":{"value":1,"system":"http://unitsofmeasure.org","code":"mo"}}]}}"#;

fn born(date: &str) -> String {
    format!(r#"{{"resourceType":"Patient","name":[{{"family":"MARKERSECRET"}}],"birthDate":"{date}"}}"#)
}

#[test]
fn duration_bounds_are_compared_with_now_and_said_unchecked_without_it() {
    let dir = scratch(
        "durations",
        &[
            ("profile.json", DURATION_PROFILE),
            ("old.json", &born("1925-01-30")),
            ("edge.json", &born("1925-01")),
            ("future.json", &born("2025-03-01")),
            ("ok.json", &born("2025-02-28")),
            ("day.json", &born("1925-01-31")),
        ],
    );
    let path = |f: &str| dir.join(f).to_string_lossy().into_owned();
    let validate = |f: &str, now: &[&str]| {
        let profile = path("profile.json");
        let file = path(f);
        let mut args = vec!["validate", "--json", "--ig", &profile];
        args.extend_from_slice(now);
        args.extend(["--profile", "http://example.org/fhir/StructureDefinition/patient-born-recently", &file]);
        run(&args)
    };
    // Now is 2025-01-31 (noon, UTC): 100 years before is 1925-01-31, one month after is
    // 2025-02-28 (the end of the shorter month).
    let now = ["--now", "2025-01-31T12:00:00Z"];
    let findings_of = |o: &std::process::Output| -> Vec<(String, String)> {
        findings(&o.stdout).into_iter().filter(|f| f.3 != "-").map(|f| (f.0, f.1)).collect()
    };
    let old = validate("old.json", &now);
    assert_eq!(code(&old), 1);
    assert_eq!(findings_of(&old), [("PROFILE_MIN_VALUE".to_owned(), "error".to_owned())]);
    assert_no_marker(&old);
    // A month's precision compares with the bound's month: within it.
    assert_eq!(code(&validate("edge.json", &now)), 0);
    let future = validate("future.json", &now);
    assert_eq!(findings_of(&future), [("PROFILE_MAX_VALUE".to_owned(), "error".to_owned())]);
    let ok = validate("ok.json", &now);
    assert_eq!(code(&ok), 0);
    assert!(findings_of(&ok).is_empty(), "{:?}", findings_of(&ok));
    // A date is compared with the calendar date of now's offset: 2025-01-31T21:00Z is
    // 2025-02-01 in Tokyo, whose bound is 1925-02-01.
    assert_eq!(code(&validate("day.json", &["--now", "2025-01-31T21:00:00Z"])), 0);
    let tokyo = validate("day.json", &["--now", "2025-02-01T06:00:00+09:00"]);
    assert_eq!(findings_of(&tokyo), [("PROFILE_MIN_VALUE".to_owned(), "error".to_owned())]);
    // Without --now: not compared, said once for the element (two bounds, one finding).
    let unchecked = validate("old.json", &[]);
    assert_eq!(code(&unchecked), 0);
    assert_eq!(findings_of(&unchecked), [("PROFILE_VALUE_DURATION_NO_NOW".to_owned(), "information".to_owned())]);
    // The output is the same bytes for the same input and options.
    assert_eq!(validate("old.json", &now).stdout, old.stdout);
    // A --now that is not an RFC 3339 instant with an offset is a usage error naming it.
    let bad = validate("old.json", &["--now", "2025-01-31"]);
    assert_eq!(code(&bad), 2);
    assert_failure_line(&bad, "CLI_USAGE");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--now"));
}

fn additional_binding_profile(url: &str, parts: &str) -> String {
    format!(
        r#"{{"resourceType":"StructureDefinition",
 "url":"http://example.org/fhir/StructureDefinition/basic-additional","name":"BasicAdditional","status":"draft",
 "fhirVersion":"4.0.1","kind":"resource","abstract":false,"type":"Basic",
 "baseDefinition":"http://hl7.org/fhir/StructureDefinition/Basic","derivation":"constraint",
 "differential":{{"element":[{{"id":"Basic.code","path":"Basic.code","binding":{{"strength":"example",
 "valueSet":"http://hl7.org/fhir/ValueSet/basic-resource-type","extension":[{{"url":"{url}","extension":[{parts},
 {{"url":"valueSet","valueCanonical":"http://example.org/fhir/ValueSet/low-criticality"}}]}}]}}}}]}}}}"#
    )
}

#[test]
fn additional_bindings_are_checked_by_purpose() {
    const XVER: &str = "http://hl7.org/fhir/5.0/StructureDefinition/extension-ElementDefinition.binding.additional";
    const TOOLS: &str = "http://hl7.org/fhir/tools/StructureDefinition/additional-binding";
    let purpose = |p: &str| format!(r#"{{"url":"purpose","valueCode":"{p}"}}"#);
    // (extension, parts, severity of a code outside the value set, or none)
    let cases = [
        (XVER, purpose("required"), Some("error")),
        (TOOLS, purpose("required"), Some("error")),
        (XVER, purpose("maximum"), Some("error")),
        (XVER, purpose("extensible"), Some("warning")),
        (XVER, purpose("preferred"), None),
        (XVER, purpose("minimum"), None),
        // Limited to a usage context phiward cannot know: not checked.
        (
            XVER,
            format!(
                r#"{},{{"url":"usage","valueUsageContext":{{"code":{{"system":"http://terminology.hl7.org/CodeSystem/usage-context-type","code":"focus"}},"valueCodeableConcept":{{"text":"x"}}}}}}"#,
                purpose("required")
            ),
            None,
        ),
    ];
    for (k, (url, parts, severity)) in cases.iter().enumerate() {
        let profile = additional_binding_profile(url, parts);
        let dir = basic_coded_case(&format!("additional-{k}"), &profile);
        let validate =
            |f: &str| validate_basic(&dir, "http://example.org/fhir/StructureDefinition/basic-additional", f);
        let of = |o: &std::process::Output| -> Vec<(String, String, String)> {
            findings(&o.stdout)
                .into_iter()
                .filter(|f| f.0 == "PROFILE_BINDING_ADDITIONAL")
                .map(|f| (f.0, f.1, f.2))
                .collect()
        };
        let inside = validate("in.json");
        assert!(of(&inside).is_empty(), "{k}: {:?}", of(&inside));
        let outside = validate("out.json");
        let want: Vec<(String, String, String)> = severity
            .iter()
            .map(|s| ("PROFILE_BINDING_ADDITIONAL".to_owned(), (*s).to_owned(), "Basic.code".to_owned()))
            .collect();
        assert_eq!(of(&outside), want, "{k}");
        assert_eq!(code(&outside), if *severity == Some("error") { 1 } else { 0 }, "{k}");
        assert_no_marker(&outside);
    }
}
