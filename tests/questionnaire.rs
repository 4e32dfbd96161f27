//! QuestionnaireResponses against their Questionnaires, over the `questionnaire` module of the
//! FHIR test-case suite (`../shared/fhir-test-cases`, see its SOURCE.md): each case's
//! supporting files (XML read and written as JSON by `ops::conformance_json`) are handed to
//! `validate_with` through the resolver hook, by canonical `url` or `url|version`, as a
//! conformance store will hand them; the verdict is compared with the reference validator's
//! expected outcome (invalid when it holds an error or fatal issue). The agreement is a floor
//! that only moves up. Skipped when the shared folder is absent.

use std::path::{Path, PathBuf};

use phiward::formats::fhir::validate::{self, Options};
use phiward::limits::Limits;

use crate::common::root;

/// Cases of the module that agree with the reference (of the usable ones): a floor.
const FLOOR: usize = 85;

fn suite() -> Option<PathBuf> {
    let dir = root().join("..").join("shared").join("fhir-test-cases");
    dir.join("manifest.json").is_file().then_some(dir)
}

/// The reference verdict of a case: `Some(true)` when valid; `None` without an outcome.
fn reference_valid(suite: &Path, java: &serde_json::Value) -> Option<bool> {
    let outcome = match java {
        serde_json::Value::String(p) => {
            let bytes = std::fs::read(suite.join("outcomes").join(p)).ok()?;
            serde_json::from_slice::<serde_json::Value>(&bytes).ok()?
        }
        serde_json::Value::Object(o) => {
            if let Some(n) = o.get("errorCount").and_then(serde_json::Value::as_u64) {
                return Some(n == 0);
            }
            o.get("outcome")?.clone()
        }
        _ => return None,
    };
    let issues = outcome.get("issue").and_then(serde_json::Value::as_array).map_or(&[][..], Vec::as_slice);
    Some(!issues.iter().any(|i| matches!(i.get("severity").and_then(|s| s.as_str()), Some("error" | "fatal"))))
}

/// A supporting file as a JSON resource (XML converted).
fn resource(path: &Path) -> Option<serde_json::Value> {
    let bytes = std::fs::read(path).ok()?;
    let json = phiward::ops::conformance_json(bytes, &Limits::default()).ok()?;
    serde_json::from_slice(&json).ok()
}

/// The resource of `resources` with canonical `canonical` (`url` or `url|version`).
fn find<'a>(resources: &'a [serde_json::Value], canonical: &str) -> Option<&'a serde_json::Value> {
    let (url, version) = match canonical.split_once('|') {
        Some((u, v)) => (u, Some(v)),
        None => (canonical, None),
    };
    resources.iter().find(|r| {
        r.get("url").and_then(|u| u.as_str()) == Some(url)
            && version.is_none_or(|v| r.get("version").and_then(|x| x.as_str()) == Some(v))
    })
}

/// phiward's verdict on a case file with its supporting resources.
fn phiward_valid(file: &Path, resources: &[serde_json::Value]) -> bool {
    let Ok(bytes) = std::fs::read(file) else { return false };
    let Ok(doc) = phiward::formats::fhir::read(bytes, &Limits::default()) else { return false };
    let resolve = |canonical: &str| find(resources, canonical);
    validate::is_valid(&validate::validate_with(
        &doc,
        Options::default(),
        &phiward::formats::fhir::checks::Checks::default(),
        None,
        &resolve,
    ))
}

#[test]
fn questionnaire_cases_of_the_suite_agree_with_the_reference() {
    let Some(suite) = suite() else { return };
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(suite.join("manifest.json")).expect("manifest")).expect("manifest JSON");
    let cases = manifest.get("test-cases").and_then(|c| c.as_array()).expect("test-cases");
    let mut usable = 0;
    let mut agree = 0;
    let mut disagree = Vec::new();
    for case in cases {
        let text = |k: &str| case.get(k).and_then(|v| v.as_str()).unwrap_or_default();
        if text("module") != "questionnaire"
            || !text("version").starts_with("4.0")
            || case.get("use-test").and_then(|v| v.as_bool()) == Some(false)
        {
            continue;
        }
        let file = suite.join("validator").join(text("file"));
        let Some(expected) = case.get("java").and_then(|j| reference_valid(&suite, j)) else { continue };
        if !file.is_file() {
            continue;
        }
        usable += 1;
        let resources: Vec<serde_json::Value> = case
            .get("supporting")
            .and_then(|s| s.as_array())
            .map(|s| {
                s.iter().filter_map(|p| p.as_str()).filter_map(|p| resource(&suite.join("validator").join(p))).collect()
            })
            .unwrap_or_default();
        if phiward_valid(&file, &resources) == expected {
            agree += 1;
        } else {
            disagree.push(format!("{} (reference {})", text("name"), if expected { "valid" } else { "invalid" }));
        }
    }
    assert!(usable >= 90, "only {usable} usable questionnaire cases");
    assert!(agree >= FLOOR, "{agree}/{usable} questionnaire cases agree (floor {FLOOR}); disagreements: {disagree:#?}");
}
