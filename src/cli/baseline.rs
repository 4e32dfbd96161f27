//! Baselines: the findings of a run recorded by path and fingerprint (`--write-baseline`), so
//! that a later run (`--baseline`) fails only on new ones and reports the fixed ones.
//!
//! The file is value-free JSON: `{"version":1,"findings":[{"path","fingerprint","code",
//! "location","count"}]}`, sorted. A finding's key is its path (as shown: hashed under
//! `--redact-paths`) and its fingerprint (format, record, code, location and occurrence, see
//! `ops::json`); `count` is how many findings share the key (always 1 for fingerprinted
//! findings: the occurrence is part of the fingerprint).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use super::batch::{FileResult, Run};
use crate::diag::Code;

/// A loaded baseline.
#[derive(Debug)]
pub struct Baseline {
    /// (path, fingerprint) -> (code, location, count).
    entries: BTreeMap<(String, String), (String, String, u64)>,
}

/// Loads a baseline file; `CLI_NO_INPUT` when it cannot be read, `CLI_PARSE_FAILED` when it is
/// not one.
pub fn load(path: &Path) -> Result<Baseline, Code> {
    let bytes = std::fs::read(path).map_err(|e| crate::error::from_read_io(&e).code())?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| Code::CLI_PARSE_FAILED)?;
    if v.get("version").and_then(Value::as_u64) != Some(1) {
        return Err(Code::CLI_PARSE_FAILED);
    }
    let list = v.get("findings").and_then(Value::as_array).ok_or(Code::CLI_PARSE_FAILED)?;
    let mut entries = BTreeMap::new();
    for e in list {
        let s = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned).ok_or(Code::CLI_PARSE_FAILED);
        let count = e.get("count").and_then(Value::as_u64).unwrap_or(1);
        entries.insert((s("path")?, s("fingerprint")?), (s("code")?, s("location")?, count));
    }
    Ok(Baseline { entries })
}

impl Baseline {
    /// Marks the known findings as baselined; returns the entries not found again (fixed):
    /// `(path, code, location)`.
    pub fn apply(&self, files: &mut [FileResult]) -> Vec<(String, String, String)> {
        let mut seen: BTreeMap<(String, String), u64> = BTreeMap::new();
        for f in files.iter_mut() {
            for x in &mut f.findings {
                let key = (f.path.clone(), x.fingerprint.clone());
                if let Some((_, _, count)) = self.entries.get(&key) {
                    let n = seen.entry(key).or_insert(0);
                    if *n < *count {
                        *n += 1;
                        x.baselined = true;
                    }
                }
            }
        }
        self.entries
            .iter()
            .filter(|(k, _)| !seen.contains_key(*k))
            .map(|((path, _), (code, location, _))| (path.clone(), code.clone(), location.clone()))
            .collect()
    }
}

/// Writes the findings of `run` as a baseline.
pub fn write(path: &Path, run: &Run) -> std::io::Result<()> {
    let mut entries: BTreeMap<(String, String), (String, String, u64)> = BTreeMap::new();
    for f in &run.files {
        for x in &f.findings {
            let e = entries
                .entry((f.path.clone(), x.fingerprint.clone()))
                .or_insert_with(|| (x.code.clone(), x.location.clone(), 0));
            e.2 += 1;
        }
    }
    let findings: Vec<Value> = entries
        .into_iter()
        .map(|((path, fingerprint), (code, location, count))| {
            json!({"path": path, "fingerprint": fingerprint, "code": code, "location": location, "count": count})
        })
        .collect();
    let doc = json!({"version": 1, "tool": "phiward", "findings": findings});
    let mut text = serde_json::to_string_pretty(&doc).map_err(std::io::Error::other)?;
    text.push('\n');
    std::fs::write(path, text)
}
