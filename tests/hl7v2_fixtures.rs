//! Every HL7 v2 fixture through every command, checked against fixtures/hl7v2/manifest.json.
//!
//! - `validate`: the exit code matches the manifest's expectation (valid 0, invalid 1, a file
//!   that cannot be parsed 65);
//! - `inspect`: segment counts summed over records equal the manifest's (computed by the
//!   generator and cross-checked with python-hl7);
//! - `parse` succeeds on every file that has an MSH, and `fmt` output parses back to the same
//!   model (round trip), and is itself canonical (`fmt --check` exits 0 on it).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::{code, fixture, run, run_stdin};

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(fixture("hl7v2/manifest.json")).expect("manifest");
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

#[test]
fn validate_exit_codes_match_manifest() {
    let mut checked = 0;
    for entry in manifest() {
        let file = entry["file"].as_str().unwrap_or_default();
        if file.starts_with("markers/") {
            continue; // marker fixtures carry tokens in structural fields; see no_leak.rs
        }
        let expected = match entry["expect"].as_str() {
            Some("valid") => 0,
            Some("invalid") => 1,
            _ => 65,
        };
        let path = fixture(&format!("hl7v2/{file}"));
        let o = run(&["validate", "--json", path.to_str().unwrap_or_default()]);
        // A stream whose broken frame is a failed record exits 65 even when its problem is
        // "invalid" in the manifest's vocabulary.
        let got = code(&o);
        let ok = got == expected || (expected == 1 && got == 65 && file.ends_with(".mllp"));
        assert!(ok, "{file}: expected exit {expected}, got {got}");
        checked += 1;
    }
    assert!(checked >= 80, "only {checked} fixtures checked");
}

#[test]
fn inspect_segment_counts_match_manifest() {
    for entry in manifest() {
        let file = entry["file"].as_str().unwrap_or_default();
        if entry["expect"] == "parse_fails" {
            continue;
        }
        let path = fixture(&format!("hl7v2/{file}"));
        let o = run(&["inspect", "--json", path.to_str().unwrap_or_default()]);
        let mut totals: BTreeMap<String, u64> = BTreeMap::new();
        for line in lines(&o.stdout) {
            if let Some(Value::Object(segs)) = line.get("segments") {
                for (k, v) in segs {
                    *totals.entry(k.clone()).or_default() += v.as_u64().unwrap_or(0);
                }
            }
        }
        let mut expected: BTreeMap<String, u64> = BTreeMap::new();
        if let Some(Value::Object(segs)) = entry.get("segments") {
            for (k, v) in segs {
                // Ids that are neither standard nor Z are counted under "?" by inspect.
                let key = if phiward::formats::hl7v2::segment_ids::schema_name(k.as_bytes()).is_some() {
                    k.clone()
                } else {
                    "?".into()
                };
                *expected.entry(key).or_default() += v.as_u64().unwrap_or(0);
            }
        }
        assert_eq!(totals, expected, "{file}: segment counts differ");
    }
}

#[test]
fn parse_succeeds_and_fmt_round_trips() {
    for entry in manifest() {
        let file = entry["file"].as_str().unwrap_or_default();
        if entry["expect"] == "parse_fails" {
            continue;
        }
        let path = fixture(&format!("hl7v2/{file}"));
        let p = path.to_str().unwrap_or_default();
        let parsed = run(&["parse", "--json", p]);
        let stream_with_bad_frame = file.starts_with("invalid/mllp_");
        if !stream_with_bad_frame {
            assert_eq!(code(&parsed), 0, "{file}: parse failed");
        }
        let formatted = run(&["fmt", p]);
        if stream_with_bad_frame {
            continue;
        }
        assert_eq!(code(&formatted), 0, "{file}: fmt failed");
        let reparsed = run_stdin(&["parse", "--json", "-"], &formatted.stdout);
        assert_eq!(code(&reparsed), 0, "{file}: fmt output does not parse");
        let models = |out: &[u8]| -> Vec<Value> { lines(out).into_iter().map(|v| v["model"].clone()).collect() };
        assert_eq!(models(&parsed.stdout), models(&reparsed.stdout), "{file}: fmt changed the model");
        let check = run_stdin(&["fmt", "--check", "-"], &formatted.stdout);
        assert_eq!(code(&check), 0, "{file}: fmt output is not canonical");
    }
}

#[test]
fn fmt_check_flags_non_canonical_input() {
    let o = run(&["fmt", "--check", fixture("hl7v2/valid/eol_lf_trailing_newline.hl7").to_str().unwrap_or_default()]);
    assert_eq!(code(&o), 1);
}
