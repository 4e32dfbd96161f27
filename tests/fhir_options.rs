//! `validate`'s optional FHIR checks, the reference validator's options (docs/fhir-profiles.md,
//! "Options of the reference validator"): each one off by default, and each changing a verdict
//! both ways (what it reports, what it leaves alone); a malformed value is `CLI_USAGE` naming the
//! option; no value of the input in any output (the inputs carry `MARKERSECRET`). The profiles
//! are those of fixtures/fhir/options: `options-observation` allows only a Patient as
//! `Observation.subject`, `options-patient` requires a name.

use serde_json::Value;

use crate::common::{code, fixture, run, run_stdin};

const OBSERVATION: &str = "http://example.org/fhir/phiward/StructureDefinition/options-observation";
const PATIENT: &str = "http://example.org/fhir/phiward/StructureDefinition/options-patient";

fn profiles() -> String {
    fixture("fhir/options").to_string_lossy().into_owned()
}

/// `validate --json ARGS -` on `input`: the exit code and `(code, location)` of each error.
fn validate(args: &[&str], input: &str) -> (i32, Vec<(String, String)>) {
    let mut all = vec!["validate", "--json"];
    all.extend_from_slice(args);
    all.push("-");
    let o = run_stdin(&all, input.as_bytes());
    for out in [&o.stdout, &o.stderr] {
        assert!(!String::from_utf8_lossy(out).contains("MARKERSECRET"), "a value reached the output");
    }
    let errors = serde_json::from_slice::<Value>(&o.stdout)
        .ok()
        .and_then(|v| v["findings"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| (f["code"].as_str().unwrap_or("-").to_owned(), f["location"].as_str().unwrap_or("-").to_owned()))
        .collect();
    (code(&o), errors)
}

fn error(c: &str, at: &str) -> (String, String) {
    (c.to_owned(), at.to_owned())
}

fn patient_named(text: &str) -> String {
    serde_json::json!({"resourceType": "Patient", "id": "p", "name": [{"text": text}]}).to_string()
}

#[test]
fn help_shows_the_options() {
    let o = run(&["validate", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    for flag in [
        "--security-checks",
        "--no-html-in-markdown",
        "--allow-comments",
        "--assume-valid-rest-references",
        "--validate-reference",
        "--bundle-profile",
        "--no-example-urls",
        "--allow-extension-domain",
        "--allow-any-extensions",
        "--for-publication",
    ] {
        assert!(help.contains(flag), "{flag} missing from validate --help");
    }
}

#[test]
fn security_checks_report_strings_that_look_like_html() {
    let script = patient_named("MARKERSECRET <script>MARKERSECRET</script>");
    assert_eq!(validate(&[], &script), (0, vec![]));
    assert_eq!(
        validate(&["--security-checks"], &script),
        (1, vec![error("STRING_HTML_CONTENT", "Patient.name[0].text")])
    );
    // Angle brackets that are no tag by the reference validator's test.
    assert_eq!(validate(&["--security-checks"], &patient_named("MARKERSECRET a < b > c")), (0, vec![]));
}

#[test]
fn no_html_in_markdown_reports_raw_html_only_in_markdown() {
    let note = |t: &str| {
        serde_json::json!({"resourceType": "Communication", "status": "completed", "note": [{"text": t}]}).to_string()
    };
    let html = note("MARKERSECRET <resource type>\\<id>");
    assert_eq!(validate(&[], &html).0, 0);
    assert_eq!(
        validate(&["--no-html-in-markdown"], &html).1,
        vec![error("MARKDOWN_HTML", "Communication.note[0].text")]
    );
    // An autolink is markdown, and a string is not markdown.
    assert_eq!(validate(&["--no-html-in-markdown"], &note("MARKERSECRET <https://example.org>")).0, 0);
    assert_eq!(validate(&["--no-html-in-markdown"], &patient_named("MARKERSECRET <b>")).0, 0);
}

#[test]
fn allow_comments_reads_json5_comments() {
    let leading = "// MARKERSECRET\n{\"resourceType\": \"Patient\", \"id\": \"p\"}";
    let inside = "{\"resourceType\": \"Patient\", /* MARKERSECRET */ \"id\": \"p\"\n // MARKERSECRET\n}";
    for input in [leading, inside] {
        assert_ne!(validate(&[], input).0, 0, "JSON has no comments");
        assert_eq!(validate(&["--allow-comments"], input), (0, vec![]));
    }
    // An unterminated comment is still malformed JSON.
    let open = "{\"resourceType\": \"Patient\" /* MARKERSECRET }";
    assert_eq!(validate(&["--allow-comments"], open).0, 65);
}

fn observation(subject: &str) -> String {
    serde_json::json!({
        "resourceType": "Observation",
        "meta": {"profile": [OBSERVATION]},
        "status": "final",
        "code": {"text": "MARKERSECRET"},
        "subject": {"reference": subject, "display": "MARKERSECRET"}
    })
    .to_string()
}

#[test]
fn assume_valid_rest_references_checks_the_type_a_url_names() {
    let ig = profiles();
    let group = observation("Group/MARKERSECRET");
    assert_eq!(validate(&["--ig", &ig], &group), (0, vec![]));
    assert_eq!(
        validate(&["--ig", &ig, "--assume-valid-rest-references"], &group),
        (1, vec![error("PROFILE_REFERENCE_TARGET", "Observation.subject")])
    );
    for fine in ["Patient/MARKERSECRET", "http://example.org/fhir/Patient/1/_history/2", "urn:uuid:MARKERSECRET"] {
        assert_eq!(
            validate(&["--ig", &ig, "--assume-valid-rest-references"], &observation(fine)),
            (0, vec![]),
            "{fine}"
        );
    }
}

fn parameters(beneficiary: &str) -> String {
    serde_json::json!({
        "resourceType": "Parameters",
        "parameter": [
            {"name": "MemberPatient", "resource": {"resourceType": "Patient", "id": "1"}},
            {"name": "Coverage", "resource": {
                "resourceType": "Coverage", "id": "c", "status": "active",
                "beneficiary": {"reference": beneficiary},
                "payor": [{"reference": "http://example.org/fhir/Organization/MARKERSECRET"}]
            }}
        ]
    })
    .to_string()
}

#[test]
fn validate_reference_check_exists_requires_a_target_in_the_input() {
    let absent = parameters("Patient/MARKERSECRET");
    assert_eq!(validate(&[], &absent), (0, vec![]));
    for policy in ["check-exists", "check-exists-and-type"] {
        assert_eq!(
            validate(&["--validate-reference", policy], &absent),
            (1, vec![error("REFERENCE_TARGET_ABSENT", "Parameters.parameter[1].resource.beneficiary")]),
            "{policy}"
        );
        // Patient/1 is a resource of the input; the payor's absolute URL is another server's.
        assert_eq!(validate(&["--validate-reference", policy], &parameters("Patient/1")), (0, vec![]));
    }
    assert_eq!(validate(&["--validate-reference", "ignore"], &absent), (0, vec![]));
    assert_eq!(validate(&["--validate-reference", "MARKERSECRET"], &absent).0, 2);
}

fn bundle() -> String {
    serde_json::json!({
        "resourceType": "Bundle",
        "type": "collection",
        "entry": [
            {"fullUrl": "http://example.org/fhir/Patient/a", "resource": {"resourceType": "Patient", "id": "a", "name": [{"text": "MARKERSECRET"}]}},
            {"fullUrl": "http://example.org/fhir/Patient/b", "resource": {"resourceType": "Patient", "id": "b", "gender": "other"}}
        ]
    })
    .to_string()
}

#[test]
fn bundle_profile_validates_the_entries_a_rule_selects() {
    let ig = profiles();
    let input = bundle();
    assert_eq!(validate(&["--ig", &ig], &input), (0, vec![]));
    let missing = (1, vec![error("PROFILE_CARDINALITY_MIN", "Bundle.entry[1].resource.name")]);
    for rule in ["Patient:1", "Patient", "1"] {
        assert_eq!(
            validate(&["--ig", &ig, "--bundle-profile", &format!("{rule}={PATIENT}")], &input),
            missing,
            "{rule}"
        );
    }
    for rule in ["Patient:0", "0", "Patient:2", "Observation"] {
        assert_eq!(
            validate(&["--ig", &ig, "--bundle-profile", &format!("{rule}={PATIENT}")], &input),
            (0, vec![]),
            "{rule}"
        );
    }
    // A malformed rule, and a profile --ig does not load, are usage errors naming the option.
    for (args, _why) in [
        (vec!["--ig", ig.as_str(), "--bundle-profile", "MARKERSECRET"], "no URL"),
        (vec!["--ig", ig.as_str(), "--bundle-profile", "Nothing:0=http://x"], "no resource type"),
        (vec!["--bundle-profile", "Patient:0=http://example.org/none"], "not loaded"),
    ] {
        let mut all = vec!["validate", "--json"];
        all.extend(args);
        all.push("-");
        let o = run_stdin(&all, input.as_bytes());
        assert_eq!(code(&o), 2);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains("CLI_USAGE") && stderr.contains("--bundle-profile"), "{stderr}");
        assert!(!stderr.contains("MARKERSECRET"));
    }
}

#[test]
fn the_options_reach_a_json_lines_run() {
    let line = serde_json::json!({"id": "1", "content": patient_named("MARKERSECRET <script>")}).to_string() + "\n";
    let o = run_stdin(&["validate", "--input-format", "json-lines", "--security-checks", "-"], line.as_bytes());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("STRING_HTML_CONTENT"), "{out}");
    assert!(!out.contains("MARKERSECRET"));
    // The profiles of --ig reach every record's --bundle-profile.
    let line = serde_json::json!({"id": "2", "content": bundle()}).to_string() + "\n";
    let rule = format!("Patient:1={PATIENT}");
    let ig = profiles();
    let args = ["validate", "--input-format", "json-lines", "--ig", &ig, "--bundle-profile", &rule, "-"];
    let o = run_stdin(&args, line.as_bytes());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("PROFILE_CARDINALITY_MIN"), "{out}");
    assert!(!out.contains("MARKERSECRET"));
}

#[test]
fn no_example_urls_reports_links_to_example_domains() {
    let doc = |url: &str| {
        serde_json::json!({
            "resourceType": "DocumentReference",
            "status": "current",
            "content": [{"attachment": {"url": url, "title": "MARKERSECRET"}}]
        })
        .to_string()
    };
    let example = doc("http://repository.example.org/fhir/MARKERSECRET");
    // Off by default: R4 allows any URL.
    assert_eq!(validate(&[], &example).0, 0);
    assert_eq!(
        validate(&["--no-example-urls"], &example),
        (1, vec![error("URL_EXAMPLE", "DocumentReference.content[0].attachment.url")])
    );
    // A resource's own canonical is its identity, not a link.
    let own = r#"{"resourceType": "ValueSet", "url": "http://example.org/fhir/ValueSet/v", "status": "draft"}"#;
    assert_eq!(validate(&["--no-example-urls"], own), (0, vec![]));
    // Another domain is a link like any other.
    assert_eq!(validate(&["--no-example-urls"], &doc("https://records.hospital.test/MARKERSECRET")), (0, vec![]));
    // An example URL that a loaded package defines resolves: the options profiles' canonicals.
    let ig = profiles();
    let claimed = serde_json::json!({
        "resourceType": "Patient",
        "meta": {"profile": [PATIENT]},
        "name": [{"text": "MARKERSECRET"}]
    })
    .to_string();
    assert_eq!(validate(&["--ig", &ig, "--no-example-urls"], &claimed), (0, vec![]));
    assert_eq!(validate(&["--no-example-urls"], &claimed).1, vec![error("URL_EXAMPLE", "Patient.meta.profile[0]")]);
}

#[test]
fn unknown_extensions_are_errors_unless_an_option_allows_them() {
    let patient = |url: &str| {
        serde_json::json!({
            "resourceType": "Patient",
            "extension": [{"url": url, "valueString": "MARKERSECRET"}],
            "name": [{"text": "MARKERSECRET"}]
        })
        .to_string()
    };
    let nhs = patient("https://fhir.nhs.uk/StructureDefinition/Extension-Invented");
    let us_core = patient("http://hl7.org/fhir/us/core/StructureDefinition/us-core-birthsex");
    let unknown = (1, vec![error("PROFILE_EXTENSION_UNKNOWN", "Patient.extension[0]")]);
    // By default, packages loaded or not: defined nowhere phiward looks is an error.
    assert_eq!(validate(&[], &nhs), unknown);
    assert_eq!(validate(&["--ig", &profiles()], &nhs), unknown);
    assert_eq!(validate(&[], &us_core), unknown);
    // --allow-extension-domain: the urls it starts, with packages or without; others still.
    let domain = ["--allow-extension-domain", "https://fhir.nhs.uk/StructureDefinition"];
    assert_eq!(validate(&domain, &nhs), (0, vec![]));
    let ig = profiles();
    assert_eq!(validate(&[&domain[..], &["--ig", &ig]].concat(), &nhs), (0, vec![]));
    assert_eq!(validate(&domain, &us_core), unknown);
    let both =
        ["--allow-extension-domain", "https://fhir.nhs.uk/", "--allow-extension-domain", "http://hl7.org/fhir/us/"];
    assert_eq!(validate(&both, &us_core), (0, vec![]));
    // --allow-any-extensions: none is reported.
    assert_eq!(validate(&["--allow-any-extensions"], &us_core), (0, vec![]));
    // An example domain is allowed, unless example URLs are not.
    let example = patient("http://example.org/fhir/StructureDefinition/invented");
    assert_eq!(validate(&[], &example), (0, vec![]));
    assert!(
        validate(&["--no-example-urls"], &example)
            .1
            .contains(&error("PROFILE_EXTENSION_UNKNOWN", "Patient.extension[0]"))
    );
    // An empty domain would allow everything: a usage error naming the option.
    let o = run_stdin(&["validate", "--allow-extension-domain", "", "-"], nhs.as_bytes());
    assert_eq!(code(&o), 2);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("CLI_USAGE") && stderr.contains("--allow-extension-domain"), "{stderr}");
    // The MCP spelling reaches a json-lines run as every record's option.
    let line = serde_json::json!({"id": "1", "content": us_core}).to_string() + "\n";
    let o = run_stdin(&["validate", "--input-format", "json-lines", "--allow-any-extensions", "-"], line.as_bytes());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("PROFILE_EXTENSION_UNKNOWN"), "{out}");
    assert!(!out.contains("MARKERSECRET"));
}

/// `--for-publication`: a canonical resource HL7 publishes names its work group, and a
/// shareable ValueSet, CodeSystem or ConceptMap has its identifying elements.
#[test]
fn for_publication_applies_hl7_publication_rules() {
    let cs = |extension: &str, url: &str| {
        format!(
            "{{\"resourceType\":\"CodeSystem\",{extension}\"url\":\"{url}\",\"version\":\"1.0.0\",\"name\":\"N\",\"title\":\"T\",\
\"status\":\"draft\",\"experimental\":false,\"description\":\"d\",\"content\":\"complete\",\"concept\":[{{\"code\":\"a\"}}]}}"
        )
    };
    let wg = "\"extension\":[{\"url\":\"http://hl7.org/fhir/StructureDefinition/structuredefinition-wg\",\"valueCode\":\"fhir\"}],";
    let hl7 = "http://hl7.org/fhir/narrative-status-test";
    assert_eq!(validate(&[], &cs("", hl7)), (0, vec![]), "not without the option");
    assert_eq!(validate(&["--for-publication"], &cs("", hl7)), (1, vec![error("HL7_WORKGROUP_MISSING", "CodeSystem")]));
    assert_eq!(validate(&["--for-publication"], &cs(wg, hl7)), (0, vec![]));
    // Not HL7's: no work group asked for.
    assert_eq!(validate(&["--for-publication"], &cs("", "https://records.hospital.test/cs")), (0, vec![]));
    // A shareable code system HL7 publishes lacks no identifying element.
    let bare = format!(
        "{{\"resourceType\":\"CodeSystem\",{wg}\"url\":\"{hl7}\",\"status\":\"draft\",\"content\":\"complete\"}}"
    );
    assert_eq!(
        validate(&["--for-publication"], &bare),
        (
            1,
            ["version", "title", "experimental", "description"]
                .iter()
                .map(|e| error("SHAREABLE_ELEMENT_MISSING", &format!("CodeSystem.{e}")))
                .collect()
        )
    );
    let local = "{\"resourceType\":\"CodeSystem\",\"url\":\"https://records.hospital.test/cs\",\"status\":\"draft\",\"content\":\"complete\"}";
    assert_eq!(validate(&["--for-publication"], local), (0, vec![]), "warnings only when not HL7's");
}
