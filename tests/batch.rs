//! Batch mode of `validate` and `inspect` (issue 30): many paths and directories, walks with
//! ignores and globs, one result per file in path order whatever `--jobs`, a bad file never
//! stopping the others, the CI reports (SARIF, JUnit, GitHub, GitLab, checkstyle), `--fail-on`,
//! baselines and `--redact-paths`.

use std::path::{Path, PathBuf};

use crate::common::{code, fixture, run};

const VALID: &str = "MSH|^~\\&|APP|FAC|RCV|RFAC|20240101120000||ADT^A01^ADT_A01|C1|P|2.5.1\rEVN|A01|20240101120000\rPID|1||12345^^^HOSP^MR||DOE^JANE||19700101|F\rPV1|1|I\r";

/// A fresh tree: a valid message, an invalid one (bad hex escape), a text file, and a nested
/// valid message; `name` keeps trees of different tests apart.
fn tree(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("phiward-batch-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sub")).expect("mkdir");
    std::fs::write(dir.join("b_valid.hl7"), VALID).expect("write");
    std::fs::copy(fixture("hl7v2/invalid/bad_hex_escape_nonhex.hl7"), dir.join("a_invalid.hl7")).expect("copy");
    std::fs::write(dir.join("notes.txt"), "not a message\n").expect("write");
    std::fs::write(dir.join("sub/c_valid.hl7"), VALID).expect("write");
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

fn json_doc(args: &[&str]) -> (i32, serde_json::Value) {
    let mut all = args.to_vec();
    all.extend(["--output-format", "json"]);
    let o = run(&all);
    let v = serde_json::from_slice(&o.stdout).expect("json report");
    (code(&o), v)
}

fn paths(v: &serde_json::Value) -> Vec<String> {
    v["files"].as_array().expect("files").iter().map(|f| f["path"].as_str().unwrap_or("").to_owned()).collect()
}

#[test]
fn a_directory_is_walked_in_path_order_with_one_result_per_file() {
    let dir = tree("walk");
    let (exit, v) = json_doc(&["validate", s(&dir)]);
    assert_eq!(exit, 1, "the invalid file fails the run: {v}");
    let d = s(&dir);
    assert_eq!(
        paths(&v),
        [
            format!("{d}/a_invalid.hl7"),
            format!("{d}/b_valid.hl7"),
            format!("{d}/notes.txt"),
            format!("{d}/sub/c_valid.hl7")
        ]
    );
    let status: Vec<&str> =
        v["files"].as_array().into_iter().flatten().map(|f| f["status"].as_str().unwrap_or("")).collect();
    assert_eq!(status, ["invalid", "valid", "unsupported", "valid"]);
    assert_eq!(v["files"][0]["findings"][0]["code"], "ESCAPE_HEX_INVALID");
    assert_eq!(v["summary"]["files"], 4);
    assert_eq!(v["summary"]["invalid"], 1);
    assert_eq!(v["summary"]["unsupported"], 1);
    assert_eq!(v["summary"]["exit"], 1);
    // Unsupported files alone do not fail the run.
    std::fs::remove_file(dir.join("a_invalid.hl7")).expect("rm");
    let o = run(&["validate", d]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("phiward: summary: 3 files, 2 records: 2 valid, 0 invalid, 1 unsupported, 0 failed"),
        "{err}"
    );
}

#[test]
fn one_unreadable_path_never_loses_the_others() {
    let dir = tree("unreadable");
    let missing = dir.join("smith_missing.hl7");
    let (exit, v) = json_doc(&["validate", s(&dir.join("b_valid.hl7")), s(&missing), s(&dir.join("sub"))]);
    assert_eq!(exit, 66, "a path that cannot be read is the worst verdict: {v}");
    assert_eq!(v["files"].as_array().map(Vec::len), Some(3));
    assert_eq!(v["files"][1]["status"], "failed");
    assert_eq!(v["files"][1]["findings"][0]["code"], "CLI_NO_INPUT");
    assert_eq!(v["files"][2]["status"], "valid");
}

#[cfg(unix)]
#[test]
fn a_symlink_loop_is_a_finding_not_a_crash() {
    let dir = tree("loop");
    std::os::unix::fs::symlink("..", dir.join("sub/up")).expect("symlink");
    let (exit, v) = json_doc(&["validate", s(&dir)]);
    assert_eq!(exit, 66);
    let failed: Vec<&serde_json::Value> =
        v["files"].as_array().into_iter().flatten().filter(|f| f["status"] == "failed").collect();
    assert_eq!(failed.len(), 1, "{v}");
    assert_eq!(failed[0]["findings"][0]["code"], "CLI_NO_INPUT");
    assert_eq!(v["summary"]["valid"], 2);
}

#[test]
fn output_is_identical_across_jobs() {
    let dir = tree("jobs");
    for i in 0..40 {
        let body = if i % 3 == 0 { VALID.replace("ADT^A01^ADT_A01", "adt") } else { VALID.to_owned() };
        std::fs::write(dir.join(format!("m{i:02}.hl7")), body).expect("write");
    }
    let one = run(&["validate", "--jobs", "1", "--output-format", "json-lines", s(&dir)]);
    let many = run(&["validate", "--jobs", "8", "--output-format", "json-lines", s(&dir)]);
    assert_eq!(code(&one), 1);
    assert_eq!(code(&many), 1);
    assert_eq!(one.stdout, many.stdout);
    assert_eq!(String::from_utf8_lossy(&one.stdout).lines().count(), 44);
}

#[test]
fn ignore_files_and_globs_select_the_files() {
    let dir = tree("globs");
    std::fs::write(dir.join(".phiwardignore"), "sub/\n").expect("write");
    let (_, v) = json_doc(&["validate", s(&dir)]);
    assert_eq!(v["summary"]["files"], 3, "sub/ is ignored: {v}");
    let (_, v) = json_doc(&["validate", "--include", "*.hl7", s(&dir)]);
    assert_eq!(v["summary"]["files"], 2, "only .hl7 files, sub/ still ignored: {v}");
    let (exit, v) = json_doc(&["validate", "--exclude", "a_*", "--include", "*.hl7", s(&dir)]);
    assert_eq!(v["summary"]["files"], 1, "{v}");
    assert_eq!(exit, 0);
}

#[test]
fn a_directory_to_inspect_gives_a_summary_per_file() {
    let dir = tree("inspect");
    let o = run(&["inspect", "--json", s(&dir)]);
    assert_eq!(code(&o), 0);
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).expect("json line")).collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[1]["summaries"][0]["messageType"], "ADT^A01^ADT_A01");
    assert_eq!(lines[1]["summaries"][0]["segmentCount"], 4);
}

#[test]
fn sarif_has_the_shape_of_sarif_2_1_0() {
    let dir = tree("sarif");
    let report = dir.join("out.sarif");
    let arg = format!("sarif={}", s(&report));
    let o = run(&["validate", "--quiet", "--report", &arg, s(&dir)]);
    assert_eq!(code(&o), 1);
    assert!(o.stdout.is_empty());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("json");
    assert_eq!(v["version"], "2.1.0");
    assert!(v["$schema"].as_str().is_some_and(|s| s.contains("sarif-2.1.0")));
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1);
    let driver = &runs[0]["tool"]["driver"];
    assert_eq!(driver["name"], "phiward");
    let rules = driver["rules"].as_array().expect("rules");
    let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().expect("rule id")).collect();
    assert!(ids.contains(&"ESCAPE_HEX_INVALID"));
    for r in rules {
        assert!(r["shortDescription"]["text"].as_str().is_some_and(|t| !t.is_empty()), "{r}");
    }
    let artifacts = runs[0]["artifacts"].as_array().expect("artifacts");
    let results = runs[0]["results"].as_array().expect("results");
    assert!(!results.is_empty());
    for r in results {
        let rule = r["ruleIndex"].as_u64().expect("ruleIndex") as usize;
        assert_eq!(rules[rule]["id"], r["ruleId"]);
        assert!(["none", "note", "warning", "error"].contains(&r["level"].as_str().expect("level")));
        assert!(r["message"]["text"].is_string());
        let loc = &r["locations"][0];
        let art = &loc["physicalLocation"]["artifactLocation"];
        let index = art["index"].as_u64().expect("index") as usize;
        assert_eq!(artifacts[index]["location"]["uri"], art["uri"]);
        if let Some(region) = loc["physicalLocation"].get("region") {
            assert!(region["startLine"].as_u64().is_some_and(|l| l >= 1));
        }
        assert!(loc["logicalLocations"][0]["fullyQualifiedName"].is_string());
        assert!(r["partialFingerprints"]["phiward/v1"].is_string());
    }
    let hex = results.iter().find(|r| r["ruleId"] == "ESCAPE_HEX_INVALID").expect("finding");
    assert_eq!(hex["locations"][0]["physicalLocation"]["region"]["startLine"], 5);
    assert_eq!(hex["locations"][0]["logicalLocations"][0]["fullyQualifiedName"], "OBX[1]-5[1].1.1");
}

/// Reads JUnit XML as a CI consumer does: testsuite counts against its testcases and their
/// failure, error and skipped children.
#[test]
fn junit_parses_and_its_counts_match_its_testcases() {
    use quick_xml::events::Event;
    let dir = tree("junit");
    let o = run(&["validate", "--output-format", "junit", s(&dir)]);
    assert_eq!(code(&o), 1);
    let text = String::from_utf8(o.stdout).expect("utf-8");
    let mut reader = quick_xml::Reader::from_str(&text);
    let mut suite: Vec<(String, String)> = Vec::new();
    let (mut cases, mut failures, mut skipped, mut errors) = (Vec::new(), 0, 0, 0);
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) | Event::Empty(e) => {
                let attrs: Vec<(String, String)> = e
                    .attributes()
                    .map(|a| {
                        let a = a.expect("attribute");
                        let value = String::from_utf8_lossy(&a.value).into_owned();
                        (String::from_utf8_lossy(a.key.as_ref()).into_owned(), value)
                    })
                    .collect();
                match e.name().as_ref() {
                    b"testsuite" => suite = attrs,
                    b"testcase" => cases.push(attrs.into_iter().find(|(k, _)| k == "name").expect("name").1),
                    b"failure" => failures += 1,
                    b"skipped" => skipped += 1,
                    b"error" => errors += 1,
                    _ => {}
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    let attr = |k: &str| suite.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).expect("suite attribute");
    assert_eq!(attr("tests"), cases.len().to_string());
    assert_eq!(attr("failures"), failures.to_string());
    assert_eq!(attr("skipped"), skipped.to_string());
    assert_eq!(attr("errors"), errors.to_string());
    assert_eq!((cases.len(), failures, skipped, errors), (4, 1, 1, 0));
    assert!(cases[0].ends_with("a_invalid.hl7"));
}

#[test]
fn github_annotations_follow_the_workflow_command_syntax() {
    let dir = tree("github");
    let o = run(&["validate", "--output-format", "github", s(&dir)]);
    let text = String::from_utf8(o.stdout).expect("utf-8");
    let re =
        regex_lite::Regex::new(r"^::(error|warning|notice) file=[^,:]+(,line=\d+(,col=\d+)?)?,title=[A-Z0-9_]+::\S.*$")
            .expect("regex");
    assert!(!text.is_empty());
    for line in text.lines() {
        assert!(re.is_match(line), "{line}");
    }
    assert!(text.contains(&format!("::error file={}/a_invalid.hl7,line=5,title=ESCAPE_HEX_INVALID::", s(&dir))));
}

#[test]
fn gitlab_code_quality_has_its_required_fields() {
    let dir = tree("gitlab");
    let o = run(&["validate", "--output-format", "gitlab", s(&dir)]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let issues = v.as_array().expect("array");
    assert!(!issues.is_empty());
    let mut prints = std::collections::BTreeSet::new();
    for i in issues {
        assert!(i["description"].is_string() && i["check_name"].is_string());
        assert!(["info", "minor", "major", "critical", "blocker"].contains(&i["severity"].as_str().expect("severity")));
        assert!(i["location"]["path"].is_string());
        assert!(i["location"]["lines"]["begin"].as_u64().is_some_and(|l| l >= 1));
        assert!(prints.insert(i["fingerprint"].as_str().expect("fingerprint").to_owned()), "unique fingerprints");
    }
}

#[test]
fn checkstyle_is_well_formed_with_one_file_element_per_file() {
    let dir = tree("checkstyle");
    let o = run(&["validate", "--output-format", "checkstyle", s(&dir)]);
    let text = String::from_utf8(o.stdout).expect("utf-8");
    let mut reader = quick_xml::Reader::from_str(&text);
    let mut files = 0;
    loop {
        match reader.read_event().expect("well-formed XML") {
            quick_xml::events::Event::Start(e) if e.name().as_ref() == b"file" => files += 1,
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(files, 4);
    assert!(text.contains("source=\"phiward.ESCAPE_HEX_INVALID\""));
}

#[test]
fn fail_on_sets_the_threshold() {
    let dir = tree("failon");
    let file = fixture("hl7v2/valid/v2.5_adt_a01_lf.hl7");
    let f = s(&file);
    assert_eq!(code(&run(&["validate", "--fail-on", "error", f])), 0, "warnings only");
    assert_eq!(code(&run(&["validate", "--fail-on", "warning", f])), 1);
    assert_eq!(code(&run(&["validate", "--fail-on", "info", f])), 1);
    assert_eq!(code(&run(&["validate", "--fail-on", "never", s(&dir)])), 0);
}

#[test]
fn baseline_round_trip_reports_exactly_the_new_finding_and_the_fixed_one() {
    let dir = tree("baseline");
    let base = std::env::temp_dir().join(format!("phiward-batch-baseline-{}.json", std::process::id()));
    let o = run(&["validate", "--quiet", "--write-baseline", s(&base), s(&dir)]);
    assert_eq!(code(&o), 1);
    let written: serde_json::Value = serde_json::from_slice(&std::fs::read(&base).expect("baseline")).expect("json");
    assert_eq!(written["version"], 1);
    // Re-run: everything known, the run is clean.
    let (exit, v) = json_doc(&["validate", "--baseline", s(&base), s(&dir)]);
    assert_eq!(exit, 0, "{v}");
    assert_eq!(v["summary"]["findings"], 0);
    // One new finding: exactly that one is new.
    std::fs::copy(fixture("hl7v2/invalid/bad_hex_escape_nonhex.hl7"), dir.join("sub/d_new.hl7")).expect("copy");
    let (exit, v) = json_doc(&["validate", "--baseline", s(&base), s(&dir)]);
    assert_eq!(exit, 1);
    let new: Vec<(String, String)> = v["files"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| {
            f["findings"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|x| x["baselined"] != true)
                .map(|x| (f["path"].as_str().unwrap_or("").to_owned(), x["code"].as_str().unwrap_or("").to_owned()))
        })
        .filter(|(_, c)| c != "CLI_FORMAT_UNDETECTED")
        .collect();
    assert_eq!(new.len(), 1, "{new:?}");
    assert!(new[0].0.ends_with("sub/d_new.hl7"));
    // A fixed finding: its baseline entry is reported as fixed.
    std::fs::remove_file(dir.join("sub/d_new.hl7")).expect("rm");
    std::fs::write(dir.join("a_invalid.hl7"), VALID).expect("write");
    let (exit, v) = json_doc(&["validate", "--baseline", s(&base), s(&dir)]);
    assert_eq!(exit, 0);
    assert_eq!(v["summary"]["fixed"], 1, "{v}");
    assert_eq!(v["fixed"][0]["code"], "ESCAPE_HEX_INVALID");
}

#[test]
fn redacted_paths_leave_no_file_name_anywhere() {
    let dir = tree("redactpaths");
    std::fs::write(dir.join("smith_john_adt.hl7"), VALID.replace("ADT^A01^ADT_A01", "adt")).expect("write");
    let base = dir.join("baseline.json");
    let d = s(&dir);
    let mut outputs = Vec::new();
    for format in ["text", "json", "json-lines", "sarif", "junit", "github", "gitlab", "checkstyle"] {
        let o = run(&["validate", "--redact-paths", "--output-format", format, "--exclude", "*.json", d]);
        assert_eq!(code(&o), 1, "{format}");
        outputs.push(o.stdout);
        outputs.push(o.stderr);
    }
    let o = run(&["validate", "--redact-paths", "-q", "--write-baseline", s(&base), "--exclude", "*.json", d]);
    assert_eq!(code(&o), 1);
    outputs.push(std::fs::read(&base).expect("baseline"));
    for out in outputs {
        let text = String::from_utf8_lossy(&out);
        assert!(!text.contains("smith"), "{text}");
        assert!(!text.contains("phiward-batch-redactpaths"), "{text}");
    }
}

#[test]
fn completions_and_man_page_come_from_the_command_line_definition() {
    for (shell, needle) in [("bash", "_phiward()"), ("zsh", "#compdef phiward"), ("fish", "complete -c phiward -n")] {
        let o = run(&["completions", shell]);
        assert_eq!(code(&o), 0, "{shell}");
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains(needle), "{shell}");
        assert!(text.contains("fail-on") && text.contains("audit-log"), "{shell}");
    }
    let o = run(&["man"]);
    assert_eq!(code(&o), 0);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(".TH phiward 1"));
    assert!(text.contains("validate"));
}

#[test]
fn phiward_toml_sets_defaults_found_upward_and_rejects_unknown_keys() {
    let dir = tree("config");
    std::fs::write(
        dir.join("phiward.toml"),
        "exclude = [\"notes.txt\", \"*.toml\"]\nfail-on = \"error\"\n\n[severity]\nESCAPE_HEX_INVALID = \"warning\"\n",
    )
    .expect("write");
    // Found from a subdirectory: the invalid file's only finding is a warning here.
    let o = std::process::Command::new(crate::common::bin())
        .args(["validate", "--output-format", "json", s(&dir)])
        .current_dir(dir.join("sub"))
        .output()
        .expect("run");
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["summary"]["files"], 3, "notes.txt excluded: {v}");
    assert_eq!(v["files"][0]["findings"][0]["severity"], "warning");
    assert_eq!(v["files"][0]["status"], "valid");
    // The command line wins.
    let cfg = dir.join("phiward.toml");
    let o = run(&["validate", "-q", "--config", s(&cfg), "--fail-on", "warning", s(&dir)]);
    assert_eq!(code(&o), 1);
    // Unknown keys and codes are errors, named by nothing the file holds.
    for bad in ["bogus = 1\n", "[severity]\nNO_SUCH_CODE = \"warning\"\n", "strict = \"yes\"\n"] {
        std::fs::write(&cfg, bad).expect("write");
        let o = run(&["validate", "--config", s(&cfg), s(&dir)]);
        assert_eq!(code(&o), 2, "{bad}");
        crate::common::assert_failure_line(&o, "CLI_CONFIG_INVALID");
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("NO_SUCH")
                && !String::from_utf8_lossy(&o.stderr).contains("bogus")
        );
    }
}

/// `redact PATH... --out-dir DIR`: every marker fixture redacted into the directory at its
/// relative path, byte for byte what `redact FILE` gives; a file that cannot be redacted gets
/// no output, the others do; no marker in any output or line; the output directory is not read
/// back as input.
#[test]
fn redact_out_dir_writes_each_file_as_its_own_redaction() {
    let base = std::env::temp_dir().join(format!("phiward-batch-redact-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let input = base.join("in");
    std::fs::create_dir_all(input.join("sub")).expect("mkdir");
    let mut names = Vec::new();
    for (i, dir) in ["hl7v2/markers", "redact/markers"].into_iter().enumerate() {
        for e in std::fs::read_dir(fixture(dir)).expect("markers").flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = if i == 0 { name.clone() } else { format!("sub/{name}") };
            std::fs::copy(e.path(), input.join(&rel)).expect("copy");
            names.push(rel);
        }
    }
    assert!(names.len() >= 8, "marker fixtures missing");
    std::fs::write(input.join("broken.hl7"), "MSH|^~").expect("write");
    let out = base.join("out");
    let o = run(&["redact", s(&input), "--out-dir", s(&out), "--jobs", "2"]);
    assert_eq!(code(&o), 65, "the broken file's code is the run's: {}", String::from_utf8_lossy(&o.stderr));
    assert!(!crate::no_leak::has_marker(&o.stdout) && !crate::no_leak::has_marker(&o.stderr));
    for rel in &names {
        let written = std::fs::read(out.join(rel)).unwrap_or_else(|_| panic!("{rel} not written"));
        assert!(!crate::no_leak::has_marker(&written), "{rel}: a marker left");
        let single = run(&["redact", s(&input.join(rel))]);
        assert_eq!(code(&single), 0, "{rel}");
        assert_eq!(written, single.stdout, "{rel}: differs from redact FILE");
    }
    assert!(!out.join("broken.hl7").exists(), "a file that failed is not written");
    let lines = String::from_utf8_lossy(&o.stdout);
    assert_eq!(lines.lines().count(), names.len() + 1, "{lines}");
    assert!(lines.contains("broken.hl7: not written: CLI_PARSE_FAILED"), "{lines}");
    // An output directory inside the input is not read back.
    let inner = input.join("redacted");
    let first = run(&["redact", s(&input), "--out-dir", s(&inner)]);
    let again = run(&["redact", s(&input), "--out-dir", s(&inner)]);
    assert_eq!(first.stdout, again.stdout);
    assert_eq!(String::from_utf8_lossy(&again.stdout).lines().count(), names.len() + 1);
    // Usage: a directory needs --out-dir, stdin has no name, --manifest is for one input.
    for args in [
        vec!["redact", s(&input)],
        vec!["redact", "-", "--out-dir", s(&out)],
        vec!["redact", s(&input), "--out-dir", s(&out), "--manifest", s(&base.join("m.json"))],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 2, "{args:?}");
        assert!(String::from_utf8_lossy(&o.stderr).starts_with("phiward: CLI_USAGE"), "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// `redact --out-dir` over files there already (a run again into the same folder): a longer
/// one and a shorter one each end up exactly the redaction (written over in place, then cut).
#[test]
fn redact_out_dir_writes_over_longer_and_shorter_files() {
    let base = std::env::temp_dir().join(format!("phiward-batch-rewrite-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let (input, out) = (base.join("in"), base.join("out"));
    std::fs::create_dir_all(&input).expect("mkdir");
    std::fs::create_dir_all(&out).expect("mkdir");
    let names = ["ct_explicit_le.dcm", "ct_implicit_le.dcm"];
    for name in names {
        std::fs::copy(fixture("dicom/valid").join(name), input.join(name)).expect("copy");
    }
    std::fs::write(out.join(names[0]), vec![0xAA; 1 << 20]).expect("write");
    std::fs::write(out.join(names[1]), b"abc").expect("write");
    let policy = crate::common::root().join("policy/dicom-basic.toml");
    let key = base.join("k");
    std::fs::write(&key, b"0123456789abcdef0123456789abcdef").expect("write");
    let args = ["redact", "--policy", s(&policy), "--key-file", s(&key)];
    let o = run(&[&args[..], &[s(&input), "--out-dir", s(&out)]].concat());
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    for name in names {
        let single = run(&[&args[..], &[s(&input.join(name))]].concat());
        assert_eq!(code(&single), 0, "{name}");
        assert!(std::fs::read(out.join(name)).expect("written") == single.stdout, "{name}: not the redaction");
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// A `*.ndjson` file in a walk is read as NDJSON (one record per line), as `--ndjson` reads one
/// input; the same lines in a `.json` file are not one JSON document.
#[test]
fn ndjson_files_in_a_walk_are_read_per_line() {
    let dir = std::env::temp_dir().join(format!("phiward-batch-ndjson-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let lines = "{\"resourceType\":\"Patient\",\"id\":\"a\"}\n{\"resourceType\":\"Patient\",\"id\":\"b\"}\n";
    std::fs::write(dir.join("patients.ndjson"), lines).expect("write");
    std::fs::write(dir.join("patients.json"), lines).expect("write");
    let (_, v) = json_doc(&["validate", s(&dir), "--fail-on", "never"]);
    let files = v["files"].as_array().expect("files");
    assert_eq!(files.len(), 2, "{v}");
    assert_eq!(files[1]["status"], "valid", "the .ndjson file: {v}");
    assert_eq!(files[1]["records"], 2, "{v}");
    assert_ne!(files[0]["status"], "valid", "two documents in a .json file: {v}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_record_and_a_failed_file_carry_offset_kind_cause_and_a_hashed_fingerprint() {
    let dir = std::env::temp_dir().join(format!("phiward-batch-failed-record-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let first = "{\"resourceType\":\"Patient\",\"id\":\"a\"}\n";
    let lines = format!("{first}{{\"resourceType\":\"Patient\",\n{first}");
    std::fs::write(dir.join("a.ndjson"), &lines).expect("write");
    std::fs::write(dir.join("b.json"), "{\"resourceType\":\"Patient\",").expect("write");
    std::fs::write(dir.join("c.txt"), "not a message\n").expect("write");
    let (_, v) = json_doc(&["validate", s(&dir), "--fail-on", "never"]);
    let files = v["files"].as_array().expect("files");
    assert_eq!(files.len(), 3, "{v}");
    let failed: Vec<&serde_json::Value> =
        files[0]["findings"].as_array().expect("findings").iter().filter(|f| f["code"] == "CLI_PARSE_FAILED").collect();
    assert_eq!(failed.len(), 1, "{v}");
    let f = failed[0];
    assert_eq!(f["record"], 2, "{v}");
    assert_eq!(f["offset"], first.len(), "the record's byte offset: {v}");
    assert_eq!(f["kind"], "unparseable", "{v}");
    assert_eq!(f["cause"], "MALFORMED_JSON", "{v}");
    let hex = |x: &serde_json::Value| {
        let s = x["fingerprint"].as_str().unwrap_or("");
        s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit())
    };
    assert!(hex(f), "{v}");
    let file = &files[1]["findings"][0];
    assert_eq!((file["code"].as_str(), file["kind"].as_str()), (Some("CLI_PARSE_FAILED"), Some("unparseable")), "{v}");
    assert!(hex(file), "{v}");
    let other = &files[2]["findings"][0];
    assert_eq!(
        (other["code"].as_str(), other["kind"].as_str()),
        (Some("CLI_FORMAT_UNDETECTED"), Some("undetected")),
        "{v}"
    );
    assert_ne!(file["fingerprint"], other["fingerprint"], "{v}");
    let text = run(&["validate", s(&dir), "--fail-on", "never"]);
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(
        out.contains(&format!("record 2: fatal       CLI_PARSE_FAILED                 - (offset {})", first.len())),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tree with some of everything: valid, invalid, unsupported and failed files (broken JSON, a
/// missing end block), FHIR JSON and NDJSON, nested, with findings of several codes.
fn mixed_tree(name: &str) -> PathBuf {
    let dir = tree(name);
    std::fs::create_dir_all(dir.join("sub/deeper")).expect("mkdir");
    std::fs::create_dir_all(dir.join("sub-2")).expect("mkdir");
    for (i, rel) in [
        "hl7v2/invalid/bad_hex_escape_nonhex.hl7",
        "hl7v2/valid/v2.5_adt_a01_lf.hl7",
        "hl7v2/invalid/missing_msh9_message_type.hl7",
        "hl7v2/invalid/msh_too_short.hl7",
        "hl7v2/valid/escapes_all_v2.5.1_oru.hl7",
    ]
    .iter()
    .enumerate()
    {
        std::fs::copy(fixture(rel), dir.join(format!("sub/deeper/f{i}.hl7"))).expect("copy");
        std::fs::copy(fixture(rel), dir.join(format!("sub-2/g{i}.hl7"))).expect("copy");
    }
    std::fs::write(dir.join("sub/broken.json"), "{\"resourceType\": \"Patient\", \"name\": [").expect("write");
    std::fs::write(dir.join("sub/p.json"), "{\"resourceType\": \"Patient\", \"gender\": \"nonsense\"}").expect("write");
    std::fs::write(dir.join("sub/two.ndjson"), "{\"resourceType\": \"Patient\"}\n{\"resourceType\": \"Basic\"}\n")
        .expect("write");
    std::fs::write(dir.join("cut.mllp"), b"\x0bMSH|^~\\&|A|B").expect("write");
    for i in 0..30 {
        let body = if i % 4 == 0 { VALID.replace("ADT^A01^ADT_A01", "adt") } else { VALID.to_owned() };
        std::fs::write(dir.join(format!("m{i:02}.hl7")), body).expect("write");
    }
    dir
}

/// The JUnit `time` attributes (the run's duration) set to 0.
fn untimed(bytes: &[u8]) -> String {
    let re = regex_lite::Regex::new(r#" time="[0-9.]+""#).expect("regex");
    re.replace_all(&String::from_utf8_lossy(bytes), " time=\"0\"").into_owned()
}

/// Every report format, on the console and as a report file, gives the same bytes whatever
/// `--jobs`: results are written in path order as they complete, through a reorder window.
/// The JSON formats, written piece by piece, are byte for byte what serde_json prints for the
/// whole document (what the reports were before they were streamed).
#[test]
fn every_report_format_is_identical_across_jobs_and_streamed_json_is_whole_document_json() {
    let dir = mixed_tree("formats");
    let out = std::env::temp_dir().join(format!("phiward-batch-formats-out-{}", std::process::id()));
    std::fs::create_dir_all(&out).expect("mkdir");
    let formats = ["text", "json", "json-lines", "sarif", "junit", "github", "gitlab", "checkstyle"];
    for command in ["validate", "inspect"] {
        for format in formats {
            let mut seen: Vec<(String, String)> = Vec::new();
            for jobs in ["1", "2", "7"] {
                let file = out.join(format!("{command}-{format}-{jobs}"));
                let report = format!("{format}={}", s(&file));
                let o = run(&[command, s(&dir), "--jobs", jobs, "--output-format", format, "--report", &report]);
                assert!([0, 1, 65].contains(&code(&o)), "{command} {format}: {}", String::from_utf8_lossy(&o.stderr));
                let console = untimed(&o.stdout);
                let written = untimed(&std::fs::read(&file).expect("report file"));
                assert_eq!(console, written, "{command} {format} --jobs {jobs}: console and report file");
                seen.push((jobs.to_owned(), console));
            }
            for (jobs, bytes) in &seen[1..] {
                assert_eq!(&seen[0].1, bytes, "{command} {format}: --jobs 1 and --jobs {jobs} differ");
            }
            let bytes = &seen[0].1;
            if ["json", "sarif", "gitlab"].contains(&format) {
                let v: serde_json::Value = serde_json::from_str(bytes).expect("json");
                let whole = serde_json::to_string_pretty(&v).expect("print") + "\n";
                assert_eq!(bytes, &whole, "{command} {format}: streamed bytes are the whole document's");
            }
        }
    }
    // The sarif report has results and rules; the JSON one every file.
    let sarif: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("validate-sarif-2")).expect("sarif")).expect("json");
    assert!(sarif["runs"][0]["results"].as_array().is_some_and(|r| r.len() > 5));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("validate-json-2")).expect("json")).expect("json");
    assert_eq!(json["summary"]["files"], 48, "{}", json["summary"]);
    // An empty selection: the documents with nothing in their arrays.
    for format in ["json", "sarif", "gitlab"] {
        let o = run(&["validate", s(&dir), "--include", "*.none", "--output-format", format]);
        assert_eq!(code(&o), 0);
        let text = String::from_utf8_lossy(&o.stdout);
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(text, serde_json::to_string_pretty(&v).expect("print") + "\n", "{format}");
    }
}

/// The reorder window bounds the results held at once, however many items there are and
/// however far ahead the other workers could run: the first item finishes only once every
/// item the window lets the workers take has started.
#[test]
fn the_reorder_window_bounds_the_results_held_at_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let items: Vec<usize> = (0..500).collect();
    let window = 6;
    let started = AtomicUsize::new(0);
    let mut order = Vec::new();
    let stats = phiward::cli::ordered::map(
        &items,
        4,
        window,
        |i, &x| {
            started.fetch_add(1, Ordering::SeqCst);
            if i == 0 {
                // The workers can start items 1 to window - 1 and no more while this one runs.
                while started.load(Ordering::SeqCst) < window {
                    std::thread::yield_now();
                }
            }
            x * 2
        },
        |i, r| -> Result<(), ()> {
            order.push((i, r));
            Ok(())
        },
    )
    .expect("no stop");
    assert_eq!(order, items.iter().map(|&x| (x, x * 2)).collect::<Vec<_>>(), "results in item order");
    assert_eq!(stats.consumed, 500);
    assert!(stats.peak_held <= window, "{stats:?}");
    assert!(stats.peak_held >= 1);
    // A consumer that fails stops the run.
    let stop = phiward::cli::ordered::map(&items, 3, 4, |_, &x| x, |i, _| if i == 10 { Err("full") } else { Ok(()) });
    assert_eq!(stop, Err(phiward::cli::ordered::Stop::Consumer("full")));
}

/// A report written into the tree being validated is read as it was before the run (the
/// reports are written as the run goes, but one that may be an input is held until the end).
#[test]
fn a_report_file_inside_the_tree_is_read_as_it_was() {
    let dir = tree("inside");
    let report = dir.join("sub/report.hl7");
    std::fs::write(&report, VALID).expect("write");
    let arg = format!("json-lines={}", s(&report));
    let o = run(&["validate", s(&dir), "--output-format", "json-lines", "--report", &arg, "--jobs", "2"]);
    assert_eq!(code(&o), 1);
    let written = std::fs::read(&report).expect("report");
    assert_eq!(o.stdout, written, "the report file has the console's bytes");
    let line = String::from_utf8_lossy(&written)
        .lines()
        .find(|l| l.contains("report.hl7"))
        .map(str::to_owned)
        .expect("the report file is one of the inputs");
    let v: serde_json::Value = serde_json::from_str(&line).expect("json");
    assert_eq!(v["status"], "valid", "read before it was overwritten: {v}");
    assert_eq!(v["records"], 1);
}
