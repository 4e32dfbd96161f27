//! The audit log (`--audit-log FILE`): one value-free JSON line per operation, hash-chained, and
//! `phiward audit verify FILE`.
//!
//! Line 1 is the anchor: `{"v":1,"seq":0,"kind":"anchor","created":TIME,"prev":H0}` where `H0`
//! is the SHA-256 of the constant `phiward/audit/v1\0` followed by `created` (no randomness).
//! Every later line carries `seq` (one more than the line before) and `prev`, the hex SHA-256 of
//! the previous line's bytes (without its newline). Any edit, insertion, deletion or swap of a
//! line breaks the chain at a line `verify` names; a deletion of the last lines leaves a valid
//! but shorter chain, which `verify --head HASH` (the head an earlier `verify` printed, kept
//! elsewhere) detects.
//!
//! A line holds: UTC time, the command, the format(s), the policy's name and the SHA-256 of its
//! file, counts, the verdict (exit code), the distinct diagnostic codes, the duration, and, only
//! when `--audit-key-file` is given, an HMAC-SHA-256 of each input's bytes under that key. Never
//! a value, never a path.
//!
//! Appends: the log is opened (created) before the operation, so a log that cannot be written
//! stops it (`CLI_AUDIT_LOG_FAILED`, exit 74); a lock file (`FILE.lock`, created exclusively)
//! orders concurrent writers; each line is one `write_all` on an append-mode file, then synced.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::diag::Code;

/// The anchor's constant.
const ANCHOR: &[u8] = b"phiward/audit/v1\0";

/// What one operation contributes to its audit line.
#[derive(Debug, Default)]
pub struct Record {
    /// Counts (batch mode: files, records, valid, invalid, unsupported, failed).
    pub counts: Option<Value>,
    /// The formats read.
    pub formats: BTreeSet<String>,
    /// The distinct codes of the findings and failures.
    pub codes: BTreeSet<String>,
    /// Keyed digests of the inputs (only with a key).
    pub inputs: Vec<String>,
}

/// An audit log being written by this run.
#[derive(Debug)]
pub struct Log {
    path: PathBuf,
    started: Instant,
    /// `--audit-key-file`.
    pub key: Option<crate::keys::Key>,
}

/// Opens (creates) the log before the operation: fails closed.
pub fn open(path: &Path, key_file: Option<&Path>) -> Result<Log, Code> {
    let key = match key_file.map(crate::keys::Key::from_file).transpose() {
        Ok(k) => k,
        Err(e) => {
            return Err(if e.code() == Code::CLI_NO_INPUT { Code::CLI_KEY_FILE_UNREADABLE } else { e.code() });
        }
    };
    std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|_| Code::CLI_AUDIT_LOG_FAILED)?;
    Ok(Log { path: path.to_path_buf(), started: Instant::now(), key })
}

impl Log {
    /// The keyed digest of an input's bytes (hex), when a key is configured.
    pub fn digest(&self, bytes: &[u8]) -> Option<String> {
        self.key.as_ref().map(|k| hex(&k.mac("phiward/audit/input/v1", &[bytes])))
    }

    /// Appends the line of an operation.
    pub fn append(&self, op: &str, policy: Option<(&str, String)>, exit: u8, record: &Record) -> Result<(), Code> {
        let mut fields = Map::new();
        fields.insert("time".into(), json!(utc(SystemTime::now())));
        fields.insert("op".into(), json!(op));
        fields.insert("formats".into(), json!(record.formats));
        fields.insert("policy".into(), policy.map_or(Value::Null, |(n, d)| json!({"name": n, "sha256": d})));
        if let Some(c) = &record.counts {
            fields.insert("counts".into(), c.clone());
        }
        fields.insert("exit".into(), json!(exit));
        fields.insert("codes".into(), json!(record.codes));
        fields.insert("duration_ms".into(), json!(self.started.elapsed().as_millis() as u64));
        if self.key.is_some() {
            fields.insert("inputs".into(), json!(record.inputs));
        }
        append_line(&self.path, fields).map_err(|_| Code::CLI_AUDIT_LOG_FAILED)
    }
}

impl Log {
    /// Appends the line of one MCP tool call (`phiward mcp --audit-log`): the tool, its exit,
    /// its failure code, its duration.
    #[cfg(feature = "mcp")]
    pub fn append_call(&self, r: &crate::mcp::dispatch::CallRecord<'_>) -> Result<(), Code> {
        let mut fields = Map::new();
        fields.insert("time".into(), json!(utc(SystemTime::now())));
        fields.insert("op".into(), json!("mcp tool"));
        fields.insert("tool".into(), json!(r.tool));
        fields.insert("exit".into(), json!(r.exit));
        fields.insert("codes".into(), json!(r.code.map(|c| vec![c.as_str()]).unwrap_or_default()));
        fields.insert("duration_ms".into(), json!(r.millis));
        append_line(&self.path, fields).map_err(|_| Code::CLI_AUDIT_LOG_FAILED)
    }
}

/// Lower-case hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// `created`'s anchor hash.
fn anchor_hash(created: &str) -> String {
    let mut h = Sha256::new();
    h.update(ANCHOR);
    h.update(created.as_bytes());
    hex(&h.finalize())
}

/// Holds `FILE.lock` while it lives.
struct Lock(PathBuf);

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn lock(path: &Path) -> std::io::Result<Lock> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let lock = PathBuf::from(name);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&lock) {
            Ok(_) => return Ok(Lock(lock)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Appends one chained line (and the anchor first, when the log is empty).
fn append_line(path: &Path, mut fields: Map<String, Value>) -> std::io::Result<()> {
    let _lock = lock(path)?;
    let existing = std::fs::read(path)?;
    if !existing.is_empty() && !existing.ends_with(b"\n") {
        // A torn last line: never chain onto it.
        return Err(std::io::Error::other("audit log does not end with a newline"));
    }
    let mut out = Vec::new();
    let (seq, prev) = match existing.split(|&b| b == b'\n').rev().find(|l| !l.is_empty()) {
        Some(last) => {
            let v: Value = serde_json::from_slice(last).map_err(std::io::Error::other)?;
            let seq = v.get("seq").and_then(Value::as_u64).ok_or_else(|| std::io::Error::other("no seq"))?;
            (seq + 1, sha256_hex(last))
        }
        None => {
            let created = utc(SystemTime::now());
            let anchor = json!({"v": 1, "seq": 0, "kind": "anchor", "created": created, "prev": anchor_hash(&created)});
            let line = anchor.to_string();
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
            (1, sha256_hex(line.as_bytes()))
        }
    };
    fields.insert("v".into(), json!(1));
    fields.insert("seq".into(), json!(seq));
    fields.insert("prev".into(), json!(prev));
    out.extend_from_slice(Value::Object(fields).to_string().as_bytes());
    out.push(b'\n');
    let mut f = std::fs::OpenOptions::new().append(true).open(path)?;
    f.write_all(&out)?;
    f.sync_all()
}

/// The result of verifying a log: its lines and head hash, or the first broken line (1-based)
/// and why.
pub fn verify(bytes: &[u8]) -> Result<(u64, String), (u64, &'static str)> {
    if bytes.is_empty() {
        return Err((1, "the log is empty (no anchor line)"));
    }
    if !bytes.ends_with(b"\n") {
        let n = bytes.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        return Err((n, "the last line is truncated (no newline)"));
    }
    let mut prev: Option<String> = None;
    let mut count = 0u64;
    for (i, line) in bytes[..bytes.len() - 1].split(|&b| b == b'\n').enumerate() {
        let n = i as u64 + 1;
        let Ok(v) = serde_json::from_slice::<Value>(line) else { return Err((n, "the line is not JSON")) };
        if v.get("v").and_then(Value::as_u64) != Some(1) {
            return Err((n, "the line has no version 1"));
        }
        if v.get("seq").and_then(Value::as_u64) != Some(i as u64) {
            return Err((n, "the line's sequence number is not its position (a line removed, inserted or moved)"));
        }
        let claimed = v.get("prev").and_then(Value::as_str).unwrap_or("");
        let expected = match &prev {
            None => {
                if v.get("kind").and_then(Value::as_str) != Some("anchor") {
                    return Err((n, "the first line is not the anchor"));
                }
                anchor_hash(v.get("created").and_then(Value::as_str).unwrap_or(""))
            }
            Some(p) => p.clone(),
        };
        if claimed != expected {
            return Err((n, "the line does not carry the hash of the line before (a line altered, removed or moved)"));
        }
        prev = Some(sha256_hex(line));
        count += 1;
    }
    Ok((count, prev.unwrap_or_default()))
}

/// `audit verify FILE [--head HASH]`: exit 0 and `ok: N lines, head HASH`, or exit 1 and
/// `phiward: AUDIT_CHAIN_BROKEN: ... (line N: why)`.
pub fn verify_cli(file: &Path, head: Option<&str>) -> u8 {
    use crate::error::exit;
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(_) => {
            super::output::failure(Code::CLI_AUDIT_LOG_FAILED, None);
            return exit::NOINPUT;
        }
    };
    match verify(&bytes) {
        Ok((lines, last)) => {
            if let Some(h) = head {
                if !h.eq_ignore_ascii_case(&last) && !head_in(&bytes, h) {
                    super::output::failure_hint(
                        Code::AUDIT_CHAIN_BROKEN,
                        "the expected head is not in the log: lines were removed from its end",
                    );
                    return exit::INVALID;
                }
            }
            if super::output::text(&format!("ok: {lines} lines, head {last}\n")).is_err() {
                return exit::IOERR;
            }
            exit::OK
        }
        Err((line, why)) => {
            super::output::failure_hint(Code::AUDIT_CHAIN_BROKEN, &format!("line {line}: {why}"));
            exit::INVALID
        }
    }
}

/// True when `head` is the hash of a line of the log (the log has grown since it was noted).
fn head_in(bytes: &[u8], head: &str) -> bool {
    bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()).any(|l| sha256_hex(l).eq_ignore_ascii_case(head))
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` in UTC.
pub fn utc(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_of_known_instants() {
        assert_eq!(utc(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_709_210_096);
        assert_eq!(utc(t), "2024-02-29T12:34:56.000Z");
    }
}
