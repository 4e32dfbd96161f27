//! The configuration file of batch mode: `phiward.toml`, found in the working directory or the
//! nearest parent that has one, or named by `--config`.
//!
//! ```toml
//! format = "hl7"                 # the default --format
//! include = ["**/*.hl7"]         # default --include globs
//! exclude = ["archive/**"]       # default --exclude globs
//! strict = false
//! fail-on = "error"              # error | warning | info | never
//! jobs = 4
//! max-input-bytes = 1048576      # limits, as the options of the same names
//! max-segments = 100000
//! max-field-bytes = 65536
//!
//! [severity]                     # a code's severity in this repository
//! TABLE_VALUE_UNKNOWN = "warning"
//! ```
//!
//! Options given on the command line win. Unknown keys, unknown codes, unknown formats and
//! values of the wrong type are errors (`CLI_CONFIG_INVALID`, exit 2), named by key only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::diag::Code;

/// The file's name.
pub const FILE_NAME: &str = "phiward.toml";

/// A loaded configuration.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Config {
    /// The default format.
    pub format: Option<String>,
    /// Default include globs.
    #[serde(default)]
    pub include: Vec<String>,
    /// Default exclude globs.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// `--strict`.
    pub strict: Option<bool>,
    /// `--fail-on`.
    pub fail_on: Option<FailOnName>,
    /// `--jobs`.
    pub jobs: Option<u16>,
    /// `--max-input-bytes`.
    pub max_input_bytes: Option<u64>,
    /// `--max-segments`.
    pub max_segments: Option<u32>,
    /// `--max-field-bytes`.
    pub max_field_bytes: Option<u32>,
    /// Severities per code.
    #[serde(default)]
    pub severity: BTreeMap<String, SeverityName>,
}

/// The values of `fail-on`.
#[derive(Copy, Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FailOnName {
    /// error
    Error,
    /// warning
    Warning,
    /// info
    Info,
    /// never
    Never,
}

/// The severities a code can be given.
#[derive(Copy, Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SeverityName {
    /// error
    Error,
    /// warning
    Warning,
    /// information
    #[serde(alias = "info")]
    Information,
}

impl SeverityName {
    /// The finding severity's name.
    pub fn as_str(self) -> &'static str {
        match self {
            SeverityName::Error => "error",
            SeverityName::Warning => "warning",
            SeverityName::Information => "information",
        }
    }
}

/// The configuration file: `explicit`, else `phiward.toml` in the working directory or its
/// nearest parent that has one.
pub fn find(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    let mut dir = std::env::current_dir().ok()?;
    loop {
        let candidate = dir.join(FILE_NAME);
        if candidate.is_file() {
            return Some(candidate);
        }
        if !dir.pop() {
            return None;
        }
    }
}

/// Loads and checks a configuration file.
pub fn load(path: &Path) -> Result<Config, Code> {
    let bytes = std::fs::read(path).map_err(|_| Code::CLI_CONFIG_INVALID)?;
    let text = std::str::from_utf8(&bytes).map_err(|_| Code::CLI_CONFIG_INVALID)?;
    let config: Config = toml::from_str(text).map_err(|_| Code::CLI_CONFIG_INVALID)?;
    if config.format.as_deref().is_some_and(|f| crate::formats::resolve(f).is_none()) {
        return Err(Code::CLI_CONFIG_INVALID);
    }
    if !config.severity.keys().all(|k| Code::ALL.iter().any(|c| c.as_str() == k)) {
        return Err(Code::CLI_CONFIG_INVALID);
    }
    if config.jobs == Some(0) {
        return Err(Code::CLI_CONFIG_INVALID);
    }
    Ok(config)
}
