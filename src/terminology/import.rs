//! Importers (stub, filled below).
use super::System;
use crate::diag::Code;
use std::path::PathBuf;
/// stub
pub fn import(_s: System, _f: &Path, _d: &PathBuf, _v: Option<&str>) -> Result<Value, Code> {
    Err(Code::TERMINOLOGY_FILE_INVALID)
}
use serde_json::Value;
use std::path::Path;

/// Reads a dataset's manifest from its folder.
pub fn read_manifest(dir: &Path) -> Option<Value> {
    let text = read_bounded(&dir.join("manifest.json"), 1024 * 1024)?;
    serde_json::from_str(&text).ok()
}

/// Reads a UTF-8 file of at most `max` bytes.
pub fn read_bounded(path: &Path, max: usize) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    let mut buf = Vec::new();
    f.take(max as u64 + 1).read_to_end(&mut buf).ok()?;
    if buf.len() > max {
        return None;
    }
    String::from_utf8(buf).ok()
}

/// Reads a file of at most `max` bytes; `CLI_NO_INPUT` when it cannot be read,
/// `CLI_INPUT_TOO_LARGE` when it is larger.
pub fn read_bounded_bytes(path: &Path, max: usize) -> Result<Vec<u8>, Code> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| crate::error::from_read_io(&e).code())?;
    let mut buf = Vec::new();
    f.take(max as u64 + 1).read_to_end(&mut buf).map_err(|e| crate::error::from_read_io(&e).code())?;
    if buf.len() > max {
        return Err(Code::CLI_INPUT_TOO_LARGE);
    }
    Ok(buf)
}
