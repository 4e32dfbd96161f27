//! NCPDP SCRIPT (XML e-prescribing, 10.6 and 2017071): every fixture under fixtures/ncpdp-script
//! through validate against its manifest (codes and exact locations); every command on every
//! valid fixture (parse: version, message type and the tree; inspect: value-free counts; fmt: a
//! fixed point that keeps the model); detection by root and namespace; no value in any finding
//! (marker fixtures through validate and inspect); Safe Harbor over marker-filled messages (no
//! marker on any channel, the output validates, deterministic, idempotent), every valid fixture
//! redacted without a new error under every shipped policy that has SCRIPT rules, fail closed
//! without rules; the mutation test (each kind of damage at many places, found at its element).

use std::collections::BTreeSet;

use phiward::formats::ncpdp_script::{read, validate};
use phiward::limits::Limits;
use serde_json::Value;

use crate::common::{code, fixture, root, run, run_stdin};

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(fixture("ncpdp-script/manifest.json")).expect("manifest");
    serde_json::from_str::<Vec<Value>>(&text).expect("manifest JSON")
}

fn path_of(file: &str) -> String {
    fixture(&format!("ncpdp-script/{file}")).to_string_lossy().into_owned()
}

/// The JSON lines of an output.
fn lines(out: &[u8]) -> Vec<Value> {
    serde_json::Deserializer::from_slice(out)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|_| panic!("not JSON lines: {}", String::from_utf8_lossy(out)))
}

/// Every `CODE location` of a validate --json output (failed records: their cause).
fn findings(o: &std::process::Output) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for v in lines(&o.stdout) {
        for f in v.get("findings").and_then(Value::as_array).into_iter().flatten() {
            let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            out.insert(format!("{} {}", s("code"), s("location")));
        }
        for k in ["error", "cause"] {
            if let Some(e) = v.get(k).and_then(Value::as_str) {
                out.insert(e.to_owned());
            }
        }
    }
    // A single record that cannot be read: `phiward: CLI_PARSE_FAILED: ... (CODE at LOCATION)`.
    let err = String::from_utf8_lossy(&o.stderr);
    if let Some(cause) = err.rsplit_once('(').and_then(|(_, c)| c.trim_end().strip_suffix(')'))
        && let Some((c, l)) = cause.split_once(" at ")
    {
        out.insert(format!("{c} {l}"));
    }
    out
}

/// The error and fatal findings of a validate --json output.
fn errors(out: &[u8]) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for v in lines(out) {
        for f in v["findings"].as_array().into_iter().flatten() {
            if matches!(f["severity"].as_str(), Some("error" | "fatal")) {
                set.insert(format!(
                    "{} {}",
                    f["code"].as_str().unwrap_or_default(),
                    f["location"].as_str().unwrap_or_default()
                ));
            }
        }
    }
    set
}

/// Words of the fixtures' identifying values: none may be in a finding.
const VALUES: &[&str] = &["TESTPERSON", "ALICE", "ELM", "SPRINGTOWN", "MRN00042", "555", "DRSMITH", "RX-ORDER"];

#[test]
fn fixtures_against_the_manifest() {
    let m = manifest();
    assert!(m.len() >= 55, "{}", m.len());
    let mut codes_seen = BTreeSet::new();
    for e in &m {
        let file = e["file"].as_str().expect("file");
        let o = run(&["validate", "--json", &path_of(file)]);
        let got = findings(&o);
        for c in e["codes"].as_array().expect("codes") {
            let c = c.as_str().expect("code");
            assert!(got.iter().any(|g| g.split(' ').next() == Some(c)), "{file}: {c} not found in {got:?}");
            codes_seen.insert(c.to_owned());
        }
        for l in e["locations"].as_array().expect("locations") {
            let l = l.as_str().expect("location");
            assert!(got.contains(l), "{file}: {l} not found in {got:?}");
        }
        match e["expect"].as_str().expect("expect") {
            "valid" => {
                assert_eq!(code(&o), 0, "{file}: {got:?}");
                let listed: Vec<&str> =
                    e["codes"].as_array().expect("codes").iter().filter_map(Value::as_str).collect();
                assert!(got.iter().all(|g| listed.iter().any(|c| g.starts_with(c))), "{file}: {got:?}");
            }
            _ => {
                assert_ne!(code(&o), 0, "{file}: exit 0");
                // One kind of damage per fixture: every finding is of a listed code.
                let listed: Vec<&str> =
                    e["codes"].as_array().expect("codes").iter().filter_map(Value::as_str).collect();
                assert!(got.iter().all(|g| listed.iter().any(|c| g.contains(c))), "{file}: {got:?}");
            }
        }
        for g in &got {
            for word in VALUES {
                assert!(!g.contains(word), "{file}: {g}");
            }
        }
    }
    for c in phiward::diag::Code::ALL.iter().map(|c| c.as_str()).filter(|c| c.starts_with("SCRIPT_")) {
        assert!(codes_seen.contains(c), "no fixture triggers {c}");
    }
}

#[test]
fn every_command_on_every_valid_fixture() {
    let mut types = BTreeSet::new();
    for e in manifest().iter().filter(|e| e["expect"] == "valid") {
        let file = e["file"].as_str().expect("file");
        let path = path_of(file);
        let o = run(&["parse", "--json", &path]);
        assert_eq!(code(&o), 0, "{file}");
        let model = &lines(&o.stdout)[0];
        let model = model.get("model").unwrap_or(model);
        let version = model["version"].as_str().expect("version");
        assert!(["10.6", "2017071"].contains(&version), "{file}: {version}");
        assert!(file.contains(if version == "10.6" { "10_6" } else { "" }), "{file}: {version}");
        let message_type = model["messageType"].as_str().expect("messageType").to_owned();
        assert_ne!(message_type, "unknown", "{file}");
        assert_eq!(model["message"]["name"], "Message", "{file}");
        let body = model["message"]["children"].as_array().expect("children").iter().find(|c| c["name"] == "Body");
        assert_eq!(body.expect("Body")["children"][0]["name"].as_str(), Some(message_type.as_str()), "{file}");
        types.insert(message_type.clone());
        // inspect: value-free, the same message type.
        let o = run(&["inspect", "--json", &path]);
        assert_eq!(code(&o), 0, "{file}");
        let s = &lines(&o.stdout)[0];
        assert_eq!(s["format"], "ncpdp-script");
        assert_eq!(s["version"].as_str(), Some(version), "{file}");
        assert_eq!(s["messageType"].as_str(), Some(message_type.as_str()), "{file}");
        assert!(s["elementCount"].as_u64().unwrap_or(0) > 5, "{file}");
        let text = String::from_utf8_lossy(&o.stdout);
        for word in VALUES {
            assert!(!text.contains(word), "{file}: inspect shows {word}");
        }
        // fmt: canonical; a fixed point with the same model.
        let f = run(&["fmt", &path]);
        assert_eq!(code(&f), 0, "{file}");
        let again = run_stdin(&["fmt", "--format", "ncpdp-script", "-"], &f.stdout);
        assert!(again.stdout == f.stdout, "{file}: fmt not a fixed point");
        let check = run_stdin(&["fmt", "--check", "--format", "ncpdp-script", "-"], &f.stdout);
        assert_eq!(code(&check), 0, "{file}: canonical output not canonical");
        let p2 = run_stdin(&["parse", "--json", "--format", "ncpdp-script", "-"], &f.stdout);
        let m2 = &lines(&p2.stdout)[0];
        assert_eq!(m2.get("model").unwrap_or(m2), model, "{file}: fmt changed the model");
    }
    for t in [
        "NewRx",
        "RefillRequest",
        "RxRenewalRequest",
        "RxChangeRequest",
        "CancelRx",
        "RxFill",
        "Status",
        "Error",
        "Verify",
    ] {
        assert!(types.contains(t), "no valid fixture of {t}");
    }
    // The medications of an RxHistoryResponse are counted.
    let o = run(&["inspect", "--json", &path_of("valid/rxhistoryresponse_2017071.xml")]);
    assert_eq!(lines(&o.stdout)[0]["medicationCount"], 2);
    assert_eq!(lines(&o.stdout)[0]["parts"]["MedicationDispensed"], 2);
}

#[test]
fn detection_by_root_and_namespace() {
    let text = std::fs::read(fixture("ncpdp-script/valid/newrx_2017071.xml")).expect("fixture");
    let o = run_stdin(&["validate", "--json", "-"], &text);
    assert_eq!(code(&o), 0);
    assert_eq!(lines(&o.stdout)[0]["format"], "ncpdp-script");
    // Another namespace: not SCRIPT.
    let other = String::from_utf8(text.clone()).expect("UTF-8").replace("http://www.ncpdp.org/schema/SCRIPT", "urn:x");
    let o = run_stdin(&["validate", "-"], other.as_bytes());
    assert_eq!(code(&o), 65);
    assert!(String::from_utf8_lossy(&o.stderr).contains("CLI_FORMAT_UNDETECTED"));
    // Told to read it as SCRIPT: the root is not in the SCRIPT namespace.
    let o = run_stdin(&["validate", "--format", "ncpdp-script", "-"], other.as_bytes());
    assert_eq!(code(&o), 65);
    assert!(String::from_utf8_lossy(&o.stderr).contains("SCRIPT_ROOT_INVALID"));
    // Telecom D.0 is another format.
    let o = run_stdin(&["validate", "--format", "ncpdp", "-"], &text);
    assert_ne!(code(&o), 0);
}

/// Marker-filled messages: no marker in validate or inspect output, and Safe Harbor leaves none
/// on any channel; the output validates with no error, is deterministic and a fixed point; names
/// are replaced, dates are years in their form, codes and provider ids kept.
#[test]
fn safe_harbor_leaves_no_marker_and_stays_valid() {
    for file in [
        "markers/newrx_10_6.xml",
        "markers/newrx_2017071.xml",
        "markers/rxhistoryresponse_10_6.xml",
        "markers/rxhistoryresponse_2017071.xml",
    ] {
        let path = path_of(file);
        let original = std::fs::read(&path).expect("fixture");
        assert!(crate::no_leak::has_marker(&original), "{file} has no marker");
        for cmd in ["validate", "inspect"] {
            let o = run(&[cmd, "--json", &path]);
            assert!(!crate::no_leak::has_marker(&o.stdout) && !crate::no_leak::has_marker(&o.stderr), "{file}: {cmd}");
        }
        let dir = std::env::temp_dir().join(format!("phiward-script-redact-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let manifest = dir.join(format!("{}.manifest.json", file.replace('/', "_")));
        let manifest_s = manifest.to_string_lossy().into_owned();
        let o = run(&["redact", "--manifest", &manifest_s, &path]);
        assert_eq!(code(&o), 0, "{file}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(!crate::no_leak::has_marker(&o.stdout), "{file}: marker in the output");
        assert!(!crate::no_leak::has_marker(&o.stderr), "{file}: marker on stderr");
        let m = std::fs::read(&manifest).expect("manifest");
        assert!(!crate::no_leak::has_marker(&m), "{file}: marker in the manifest");
        let m: Value = serde_json::from_slice(&m).expect("manifest JSON");
        assert!(m["failClosedRemovals"].as_u64().unwrap_or(0) > 0, "{file}: {m}");
        let _ = std::fs::remove_dir_all(&dir);
        let text = String::from_utf8(o.stdout.clone()).expect("UTF-8");
        phiward::formats::xml::parse(text.as_bytes(), &Limits::default()).expect("well-formed output");
        let v = run_stdin(&["validate", "--json", "--format", "ncpdp-script", "-"], &o.stdout);
        assert!(errors(&v.stdout).is_empty(), "{file}: {:?}", errors(&v.stdout));
        assert!(text.contains("<LastName>REDACTED</LastName>"), "{file}: names not replaced");
        assert!(text.contains("<Date>1980-01-01</Date>"), "{file}: birth date not its year");
        assert!(text.contains("<SentTime>2024-01-01T00:00:00</SentTime>"), "{file}: SentTime not its year");
        assert!(text.contains("<NPI>1497758544</NPI>") && text.contains("<DEANumber>AB1234563</DEANumber>"));
        assert!(text.contains("<Gender>F</Gender>") && text.contains("C48542"), "{file}: codes not kept");
        for gone in ["MiddleName>", "<MedicalRecordIdentificationNumberEHR", "PrescriberOrderNumber>R"] {
            assert!(!text.contains(gone), "{file}: {gone} left");
        }
        // Determinism and a fixed point.
        let again = run(&["redact", &path]);
        assert!(again.stdout == o.stdout, "{file}: not deterministic");
        let twice = run_stdin(&["redact", "--format", "ncpdp-script", "-"], &o.stdout);
        assert!(twice.stdout == o.stdout, "{file}: redact is not idempotent");
    }
}

/// Every valid fixture redacts without an error finding under each shipped policy with SCRIPT
/// rules; a policy without SCRIPT rules removes every value (fail closed) and writes structure.
#[test]
fn shipped_policies_redact_every_valid_fixture() {
    let policies = ["safe-harbor.toml", "limited-data-set.toml", "agent.toml"];
    for p in policies {
        let text = std::fs::read_to_string(root().join("policy").join(p)).expect("policy");
        assert!(text.contains("[[ncpdp-script]]"), "{p} has no SCRIPT rules");
    }
    for entry in manifest().iter().filter(|e| e["expect"] == "valid") {
        let file = entry["file"].as_str().expect("file");
        for p in policies {
            let policy = root().join("policy").join(p).to_string_lossy().into_owned();
            let o = run(&["redact", "--policy", &policy, &path_of(file)]);
            assert_eq!(code(&o), 0, "{file} {p}: {}", String::from_utf8_lossy(&o.stderr));
            let v = run_stdin(&["validate", "--json", "--format", "ncpdp-script", "-"], &o.stdout);
            assert!(errors(&v.stdout).is_empty(), "{file} {p}: {:?}", errors(&v.stdout));
            let out = String::from_utf8_lossy(&o.stdout);
            for word in ["TESTPERSON", "ELM STREET", "5550100"] {
                assert!(!out.contains(word), "{file} {p}: {word} left");
            }
        }
    }
    let dir = std::env::temp_dir().join(format!("phiward-script-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let empty = dir.join("empty.toml");
    std::fs::write(&empty, "[policy]\nname = \"nothing\"\n").expect("policy");
    let o = run(&["redact", "--policy", &empty.to_string_lossy(), &path_of("valid/newrx_2017071.xml")]);
    assert_eq!(code(&o), 0);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("<NewRx>") && out.contains("<LastName/>") && !out.contains("atorvastatin"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A keyed hash of the patient's identifier: the same key gives the same bytes, another key
/// others; without a key the policy is refused.
#[test]
fn keyed_actions_are_deterministic() {
    let dir = std::env::temp_dir().join(format!("phiward-script-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let policy = dir.join("p.toml");
    std::fs::write(
        &policy,
        "[policy]\nname = \"t\"\n[[ncpdp-script]]\nselect = \"Identification//*\"\naction = \"hash\"\n[[ncpdp-script]]\nselect = \"@date\"\naction = \"date_shift\"\ndays = 30\n",
    )
    .expect("policy");
    let (k1, k2) = (dir.join("k1"), dir.join("k2"));
    std::fs::write(&k1, b"first-key-0123456789abcdefghijkl").expect("key");
    std::fs::write(&k2, b"other-key-0123456789abcdefghijkl").expect("key");
    let p = policy.to_string_lossy().into_owned();
    let input = path_of("valid/newrx_10_6.xml");
    let r = |k: &std::path::Path| run(&["redact", "--policy", &p, "--key-file", &k.to_string_lossy(), &input]);
    let (a, b, c) = (r(&k1), r(&k1), r(&k2));
    assert_eq!(code(&a), 0, "{}", String::from_utf8_lossy(&a.stderr));
    assert!(a.stdout == b.stdout && a.stdout != c.stdout);
    assert!(!String::from_utf8_lossy(&a.stdout).contains("MRN00042"));
    let none = run(&["redact", "--policy", &p, &input]);
    assert_ne!(code(&none), 0);
    assert!(String::from_utf8_lossy(&none.stderr).contains("POLICY_KEY_REQUIRED"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each kind of damage, applied at every element it can apply to, is found at that element (the
/// mutation test, in process).
#[test]
fn mutations_are_found_at_their_element() {
    let limits = Limits::default();
    let mut tried = 0;
    let mut found = 0;
    for file in [
        "valid/newrx_10_6.xml",
        "valid/newrx_2017071.xml",
        "valid/rxfill_2017071.xml",
        "valid/rxhistoryresponse_10_6.xml",
    ] {
        let text = std::fs::read_to_string(fixture(&format!("ncpdp-script/{file}"))).expect("fixture");
        // (element, replacement text, code): the n-th occurrence of `<E>` gets a bad value.
        let kinds: &[(&str, &str, &str)] = &[
            ("Date", "2024-02-30", "SCRIPT_DATE_INVALID"),
            ("SentTime", "yesterday", "SCRIPT_DATE_INVALID"),
            ("NPI", "1234567890", "SCRIPT_NPI_INVALID"),
            ("DEANumber", "AB1234560", "SCRIPT_DEA_INVALID"),
            ("NCPDPID", "12345", "SCRIPT_NCPDPID_INVALID"),
            ("Gender", "X", "SCRIPT_CODE_INVALID"),
            ("DaysSupply", "3O", "SCRIPT_NUMBER_INVALID"),
            ("Substitutions", "10", "SCRIPT_CODE_INVALID"),
        ];
        for (element, bad, expected) in kinds {
            let open = format!("<{element}>");
            let close = format!("</{element}>");
            let count = text.matches(&open).count();
            for n in 0..count {
                let start = text.match_indices(&open).nth(n).map(|(i, _)| i + open.len()).expect("open");
                let end = start + text[start..].find(&close).expect("close");
                let mut damaged = text.clone();
                damaged.replace_range(start..end, bad);
                tried += 1;
                let doc = read::read(damaged.into_bytes(), &limits).expect("reads");
                let f = validate::validate(&doc, validate::Options::default());
                let hit = f
                    .iter()
                    .any(|d| d.code.as_str() == *expected && d.location.to_string().ends_with(&format!("/{element}")));
                if hit {
                    found += 1;
                } else {
                    panic!(
                        "{file}: {element} #{n} = {bad}: {:?}",
                        f.iter().map(|d| d.code.as_str()).collect::<Vec<_>>()
                    );
                }
            }
        }
        // Removing a required element is found as missing, at its parent's path.
        for element in ["MessageID", "SentTime", "DrugDescription", "LastName"] {
            let open = format!("<{element}>");
            let close = format!("</{element}>");
            let Some(start) = text.find(&open) else { continue };
            let end = start + text[start..].find(&close).expect("close") + close.len();
            let mut damaged = text.clone();
            damaged.replace_range(start..end, "");
            tried += 1;
            let doc = read::read(damaged.into_bytes(), &limits).expect("reads");
            let f = validate::validate(&doc, validate::Options::default());
            if f.iter().any(|d| {
                d.code.as_str() == "SCRIPT_ELEMENT_MISSING" && d.location.to_string().ends_with(&format!("/{element}"))
            }) {
                found += 1;
            }
        }
    }
    assert!(tried >= 50, "{tried}");
    assert!(found * 100 >= tried * 99, "{found} of {tried}");
}

/// The MCP tools take `format: "ncpdp-script"` (and detect it): validate and inspect give the
/// CLI's verdict and summary, redact gives Safe Harbor's output; a marker-filled message leaves no
/// marker in any reply but parse's data.
#[cfg(feature = "mcp")]
#[test]
fn mcp_tools_take_ncpdp_script() {
    use phiward::mcp::{self, Config};
    let call = |tool: &str, args: Value| {
        let Value::Object(map) = args else { panic!("an object") };
        mcp::dispatch(tool, Some(map), &Config::default()).into_value()
    };
    let bytes = std::fs::read(fixture("ncpdp-script/markers/newrx_2017071.xml")).expect("fixture");
    let content = String::from_utf8(bytes.clone()).expect("UTF-8");
    for format in [Some("ncpdp-script"), None] {
        let mut args = serde_json::json!({ "content": content });
        if let Some(f) = format {
            args["format"] = Value::from(f);
        }
        let v = call("validate", args.clone());
        assert_eq!(v["ok"], true, "{v}");
        assert_eq!(v["data"]["valid"], true, "{v}");
        assert!(!crate::no_leak::has_marker(v.to_string().as_bytes()));
        let i = call("inspect", args.clone());
        assert_eq!(i["data"]["messageType"], "NewRx", "{i}");
        assert_eq!(i["data"]["version"], "2017071", "{i}");
        assert!(!crate::no_leak::has_marker(i.to_string().as_bytes()));
        let r = call("redact", args.clone());
        assert_eq!(r["status"], "success", "{r}");
        assert!(!crate::no_leak::has_marker(r.to_string().as_bytes()), "redact reply holds a marker");
        let p = call("parse", args);
        let d = &p["data"];
        assert_eq!(d.get("model").unwrap_or(d)["messageType"], "NewRx", "{p}");
    }
    let o = run_stdin(&["inspect", "--json", "-"], &bytes);
    let cli = &lines(&o.stdout)[0];
    let i = call("inspect", serde_json::json!({ "content": content }));
    assert_eq!(&i["data"], cli);
}
