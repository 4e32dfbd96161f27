//! Baselines: the findings of a run recorded by path and fingerprint (`--write-baseline`), so
//! that a later run (`--baseline`) fails only on new ones and reports the fixed ones.
//!
//! The file is value-free JSON: `{"version":1,"findings":[{"path","fingerprint","code",
//! "location","count"}]}`, sorted. A finding's key is its path (as shown: hashed under
//! `--redact-paths`) and its fingerprint (format, record, code, location and occurrence, see
//! `ops::json`); `count` is how many findings share the key (always 1 for fingerprinted
//! findings: the occurrence is part of the fingerprint).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Value, json};

use super::batch::FileResult;
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
    /// Marks the known findings of one file as baselined; returns the keys it matched.
    pub fn mark(&self, f: &mut FileResult) -> Vec<(String, String)> {
        let mut seen: BTreeMap<(String, String), u64> = BTreeMap::new();
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
        seen.into_keys().collect()
    }

    /// The entries not found again (fixed), given the keys the files matched: `(path, code,
    /// location)`, in key order.
    pub fn fixed(&self, matched: &BTreeSet<(String, String)>) -> Vec<(String, String, String)> {
        self.entries
            .iter()
            .filter(|(k, _)| !matched.contains(*k))
            .map(|((path, _), (code, location, _))| (path.clone(), code.clone(), location.clone()))
            .collect()
    }
}

/// The findings of a run as a baseline is made of: (path, fingerprint) -> (code, location,
/// count). Gathered file by file (`add`), written at the end.
#[derive(Debug, Default)]
pub struct Entries(BTreeMap<(String, String), (String, String, u64)>);

impl Entries {
    /// Adds the findings of one file.
    pub fn add(&mut self, f: &FileResult) {
        for x in &f.findings {
            let e = self
                .0
                .entry((f.path.clone(), x.fingerprint.clone()))
                .or_insert_with(|| (x.code.clone(), x.location.clone(), 0));
            e.2 += 1;
        }
    }

    /// Adds the entries gathered elsewhere (another file's).
    pub fn extend(&mut self, other: Entries) {
        for (k, (code, location, count)) in other.0 {
            self.0.entry(k).or_insert_with(|| (code, location, 0)).2 += count;
        }
    }
}

/// Writes `entries` as a baseline.
pub fn write(path: &Path, entries: Entries) -> std::io::Result<()> {
    let findings: Vec<Value> = entries
        .0
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
