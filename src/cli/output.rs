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

/// A sink that applies the `parse`/`convert` selection and findings filters
/// ([`crate::ops::shape::Controls::apply_record`]) to each record's object before `inner`
/// renders it. Records come whole (never in parts); the object is our own JSON, re-serialized
/// (keys in order). A selection that applies to nothing stops the run before anything is written:
/// [`Shaping::rejected`] names its argument.
#[derive(Debug)]
pub struct Shaping<'a, S: Sink> {
    inner: &'a mut S,
    controls: &'a crate::ops::shape::Controls,
    rejected: Option<&'static str>,
    buf: Vec<u8>,
}

impl<'a, S: Sink> Shaping<'a, S> {
    /// Shapes what goes to `inner`.
    pub fn new(inner: &'a mut S, controls: &'a crate::ops::shape::Controls) -> Self {
        Shaping { inner, controls, rejected: None, buf: Vec::new() }
    }

    /// The argument of a selection that did not apply, if one stopped the run.
    pub fn rejected(&self) -> Option<&'static str> {
        self.rejected
    }
}

impl<S: Sink> Sink for Shaping<'_, S> {
    fn item(&mut self, item: Item<'_>) -> io::Result<()> {
        let Item::Json { record, json, findings, valid, error } = item else { return self.inner.item(item) };
        let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(json) else { return self.inner.item(item) };
        match self.controls.apply_record(&mut v) {
            Ok(true) => {
                self.buf.clear();
                serde_json::to_writer(&mut self.buf, &v).map_err(io::Error::other)?;
                self.inner.item(Item::Json { record, json: &self.buf, findings, valid, error })
            }
            Ok(false) => Ok(()),
            Err(argument) => {
                self.rejected = Some(argument);
                Err(io::ErrorKind::InvalidInput.into())
            }
        }
    }

    fn cancelled(&self) -> bool {
        self.inner.cancelled()
    }

    fn reads_manifest(&self) -> bool {
        self.inner.reads_manifest()
    }
}

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

/// Standard output without std's line buffering: `io::Stdout` is line-buffered, and every write
/// through it looks for the last newline of the bytes written (`memrchr` over a 5 MB record
/// costs about 5% of `parse --json` of the 20,000-OBX ORU^R01). This writes to a duplicate of
/// descriptor 1 instead, holding the lock of `io::Stdout` so that nothing else writes through
/// std's buffer meanwhile (it is flushed first). Where the descriptor cannot be duplicated (a
/// closed standard output, which std treats as a sink that takes everything), it writes through
/// std's handle as before.
#[derive(Debug)]
pub struct RawStdout {
    lock: io::StdoutLock<'static>,
    file: Option<std::fs::File>,
}

impl RawStdout {
    /// Standard output, locked.
    fn new() -> RawStdout {
        let mut lock = io::stdout().lock();
        // What std buffered before goes out first (nothing, in practice).
        let _ = lock.flush();
        #[cfg(unix)]
        let file = std::os::fd::AsFd::as_fd(&lock).try_clone_to_owned().ok().map(std::fs::File::from);
        #[cfg(not(unix))]
        let file = None;
        RawStdout { lock, file }
    }
}

impl Write for RawStdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.file {
            Some(f) => f.write(buf),
            None => self.lock.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.file {
            Some(f) => f.write_all(buf),
            None => self.lock.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => self.lock.flush(),
        }
    }
}

/// The stdout sink.
#[derive(Debug)]
pub struct Stdout {
    style: Style,
    out: io::BufWriter<RawStdout>,
    /// Records that were shown as valid / invalid (human summary).
    counts: (u64, u64),
    /// The pretty printing of a record whose object comes in parts ([`Sink::part`]).
    open: Option<Reindent>,
    /// The words of a positive and a negative verdict in human style (`valid`/`invalid`, or
    /// `canonical`/`not canonical` for `fmt --check`).
    words: (&'static str, &'static str),
    /// Data bytes get LF for each lone CR (HL7 v2 segment terminators on a terminal, or
    /// `--line-ending lf`).
    lf: bool,
    /// The last data byte written (a CR right after an MLLP end block stays a CR).
    last: u8,
}

impl Stdout {
    /// A sink writing in `style`.
    pub fn new(style: Style) -> Self {
        Stdout {
            style,
            out: io::BufWriter::with_capacity(64 * 1024, RawStdout::new()),
            counts: (0, 0),
            words: ("valid", "invalid"),
            lf: false,
            last: 0,
            open: None,
        }
    }

    /// The words of the verdicts (`fmt --check`: `canonical`, `not canonical`).
    pub fn with_words(self, words: (&'static str, &'static str)) -> Self {
        Stdout { words, ..self }
    }

    /// Segment terminators as LF: every CR of the data becomes LF, except a CR that follows an
    /// MLLP end block (0x1C), and a CR LF becomes one LF. HL7 v2 escapes a CR inside a value
    /// (`\X0D\`), FHIR JSON writes none outside strings nor inside, and XML reads a CR as LF:
    /// only terminators change.
    pub fn with_lf(self, lf: bool) -> Self {
        Stdout { lf, ..self }
    }

    /// Writes data bytes, with LF terminators when asked.
    fn data(&mut self, b: &[u8]) -> io::Result<()> {
        if !self.lf {
            return self.out.write_all(b);
        }
        let mut start = 0;
        for (i, &c) in b.iter().enumerate() {
            if c == b'\r' {
                let prev = if i == 0 { self.last } else { b[i - 1] };
                if prev == 0x1C {
                    continue;
                }
                self.out.write_all(&b[start..i])?;
                if b.get(i + 1) != Some(&b'\n') {
                    self.out.write_all(b"\n")?;
                }
                start = i + 1;
            }
        }
        self.out.write_all(&b[start..])?;
        if let Some(&l) = b.last() {
            self.last = l;
        }
        Ok(())
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
    fn json_lines(&mut self, lines: &[u8]) -> Option<io::Result<()>> {
        match self.style {
            // A batch is larger than the buffer: written straight through, not copied.
            Style::Json => Some(self.out.write_all(lines)),
            Style::Quiet => Some(Ok(())),
            Style::Pretty | Style::Human => None,
        }
    }

    fn takes_parts(&self) -> bool {
        matches!(self.style, Style::Json | Style::Pretty)
    }

    fn part(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self.style {
            Style::Json => self.out.write_all(bytes),
            Style::Pretty => {
                // A piece at a time: the re-indented copy stays small whatever the part.
                const PIECE: usize = 64 * 1024;
                let reindent = self.open.get_or_insert_with(Reindent::new);
                let mut buf = zeroize::Zeroizing::new(Vec::with_capacity(2 * PIECE));
                for piece in bytes.chunks(PIECE) {
                    reindent.feed(piece, &mut buf)?;
                    self.out.write_all(&buf)?;
                    crate::phi::wipe_keep(&mut buf);
                }
                Ok(())
            }
            Style::Human | Style::Quiet => Err(io::ErrorKind::Unsupported.into()),
        }
    }

    fn item(&mut self, item: Item<'_>) -> io::Result<()> {
        match item {
            Item::Bytes(b) => self.data(b),
            Item::Json { record, json, findings, valid, error } => match self.style {
                Style::Quiet => Ok(()),
                Style::Json => {
                    self.out.write_all(json)?;
                    self.out.write_all(b"\n")
                }
                Style::Pretty => {
                    // The rest of an object that came in parts, or a whole one.
                    let mut reindent = self.open.take().unwrap_or_else(Reindent::new);
                    let mut buf = zeroize::Zeroizing::new(Vec::with_capacity(json.len() + json.len() / 2));
                    reindent.feed(json, &mut buf)?;
                    reindent.finish(&mut buf)?;
                    self.out.write_all(&buf)?;
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
                            let word = if v { self.words.0 } else { self.words.1 };
                            writeln!(self.out, "{prefix}{word}")?;
                            human_findings(json, findings, &mut self.out)
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

/// Writes findings one a line, `  severity  CODE  location (line L, column C)`, from the
/// record's JSON (whole locations and positions are there), else from the diagnostics.
fn human_findings(json: &[u8], findings: &[crate::diag::Diagnostic], out: &mut impl Write) -> io::Result<()> {
    let parsed = serde_json::from_slice::<serde_json::Value>(json).ok();
    let listed = parsed.as_ref().and_then(|v| v.get("findings")).and_then(serde_json::Value::as_array);
    let Some(listed) = listed.filter(|l| l.len() == findings.len()) else {
        for d in findings {
            writeln!(out, "  {:<11} {:<32} {}", d.severity.as_str(), d.code.as_str(), d.location)?;
        }
        return Ok(());
    };
    for (d, f) in findings.iter().zip(listed) {
        let location = f.get("location").and_then(serde_json::Value::as_str).unwrap_or("-");
        let at = match (
            f.get("line").and_then(serde_json::Value::as_u64),
            f.get("column").and_then(serde_json::Value::as_u64),
        ) {
            (Some(l), Some(c)) => format!(" (line {l}, column {c})"),
            (Some(l), None) => format!(" (line {l})"),
            _ => String::new(),
        };
        let profile =
            f.get("profile").and_then(serde_json::Value::as_str).map(|p| format!(" [profile {p}]")).unwrap_or_default();
        writeln!(out, "  {:<11} {:<32} {location}{at}{profile}", d.severity.as_str(), d.code.as_str())?;
    }
    Ok(())
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

/// Re-indents JSON with serde_json's `PrettyFormatter` (two spaces), without building a value
/// tree: a scanner walks the tokens and hands the structure to the formatter, while every
/// string and number is copied byte for byte. The data is therefore exactly what `--json` gives;
/// only white space outside strings is added (`pretty_keeps_every_value` proves it).
///
/// What it does not do: validate the JSON (it comes from phiward's own writers) or re-encode
/// numbers and strings (a decimal such as `1.10` keeps its digits).
pub fn pretty(json: &[u8], out: &mut impl Write) -> io::Result<()> {
    let mut buf = zeroize::Zeroizing::new(Vec::with_capacity(json.len() + json.len() / 2));
    let mut reindent = Reindent::new();
    reindent.feed(json, &mut buf)?;
    reindent.finish(&mut buf)?;
    out.write_all(&buf)
}

/// What the scanner is inside.
#[derive(Copy, Clone, Debug)]
enum Open {
    /// An array; `first` until its first value.
    Array { first: bool },
    /// An object; `first` until its first key, `key` while a key (not a value) is expected.
    Object { first: bool, key: bool },
}

/// The token the scanner is in the middle of (a text may end inside one: the next goes on).
#[derive(Copy, Clone, Debug)]
enum Token {
    /// Between tokens.
    Between,
    /// A string (a key when `key`), after a backslash when `escaped`.
    Str { key: bool, escaped: bool },
    /// A number, `true`, `false` or `null`: up to the next delimiter, as written.
    Bare,
}

/// The token walk behind [`pretty`], over a JSON text given in parts (a large record's object
/// comes in parts: each is re-indented as it comes, the layout is that of the whole).
#[derive(Debug)]
pub(crate) struct Reindent {
    f: serde_json::ser::PrettyFormatter<'static>,
    stack: Vec<Open>,
    token: Token,
}

impl Reindent {
    pub(crate) fn new() -> Self {
        Reindent { f: serde_json::ser::PrettyFormatter::with_indent(b"  "), stack: Vec::new(), token: Token::Between }
    }

    /// Re-indents the next part of the text into `buf`.
    pub(crate) fn feed(&mut self, json: &[u8], buf: &mut Vec<u8>) -> io::Result<()> {
        use serde_json::ser::Formatter;
        let mut i = 0;
        while i < json.len() {
            match self.token {
                Token::Str { key, escaped } => {
                    // Up to the closing quote, byte for byte.
                    let mut escaped = escaped;
                    let mut end = None;
                    for (j, &c) in json.iter().enumerate().skip(i) {
                        if escaped {
                            escaped = false;
                        } else if c == b'\\' {
                            escaped = true;
                        } else if c == b'"' {
                            end = Some(j + 1);
                            break;
                        }
                    }
                    let stop = end.unwrap_or(json.len());
                    buf.extend_from_slice(&json[i..stop]);
                    i = stop;
                    match end {
                        None => self.token = Token::Str { key, escaped },
                        Some(_) => {
                            self.token = Token::Between;
                            self.end_string(key, buf)?;
                        }
                    }
                    continue;
                }
                Token::Bare => {
                    let end = json[i..].iter().position(|c| is_delimiter(*c)).map(|n| i + n);
                    let stop = end.unwrap_or(json.len());
                    buf.extend_from_slice(&json[i..stop]);
                    i = stop;
                    if end.is_some() {
                        self.token = Token::Between;
                        after_value(&mut self.f, &mut self.stack, buf)?;
                    }
                    continue;
                }
                Token::Between => {}
            }
            let b = json[i];
            i += 1;
            match b {
                b' ' | b'\t' | b'\n' | b'\r' | b',' => continue,
                b':' => {
                    self.f.end_object_key(buf)?;
                    self.f.begin_object_value(buf)?;
                    continue;
                }
                b'}' | b']' => {
                    self.stack.pop();
                    if b == b'}' {
                        self.f.end_object(buf)?;
                    } else {
                        self.f.end_array(buf)?;
                    }
                    after_value(&mut self.f, &mut self.stack, buf)?;
                    continue;
                }
                _ => {}
            }
            // A value, or a key: the formatter places it.
            let is_key = match self.stack.last_mut() {
                Some(Open::Array { first }) => {
                    self.f.begin_array_value(buf, *first)?;
                    *first = false;
                    false
                }
                Some(Open::Object { first, key: true }) => {
                    self.f.begin_object_key(buf, *first)?;
                    *first = false;
                    true
                }
                _ => false,
            };
            match b {
                b'{' => {
                    self.f.begin_object(buf)?;
                    self.stack.push(Open::Object { first: true, key: true });
                }
                b'[' => {
                    self.f.begin_array(buf)?;
                    self.stack.push(Open::Array { first: true });
                }
                b'"' => {
                    buf.push(b);
                    self.token = Token::Str { key: is_key, escaped: false };
                }
                _ => {
                    buf.push(b);
                    self.token = Token::Bare;
                }
            }
        }
        Ok(())
    }

    /// Ends the text (a token it ends inside is closed as the end of the text closes it).
    pub(crate) fn finish(&mut self, buf: &mut Vec<u8>) -> io::Result<()> {
        match std::mem::replace(&mut self.token, Token::Between) {
            Token::Str { key, .. } => self.end_string(key, buf),
            Token::Bare => after_value(&mut self.f, &mut self.stack, buf),
            Token::Between => Ok(()),
        }
    }

    /// After a string: a key waits for its value, a value is closed.
    fn end_string(&mut self, key: bool, buf: &mut Vec<u8>) -> io::Result<()> {
        if key {
            // `:` ends the key.
            if let Some(Open::Object { key, .. }) = self.stack.last_mut() {
                *key = false;
            }
            Ok(())
        } else {
            after_value(&mut self.f, &mut self.stack, buf)
        }
    }
}

/// The bytes that end a number, `true`, `false` or `null`.
fn is_delimiter(c: u8) -> bool {
    matches!(c, b',' | b'}' | b']' | b':' | b' ' | b'\t' | b'\n' | b'\r')
}

/// Closes a value inside the innermost array or object.
fn after_value(f: &mut serde_json::ser::PrettyFormatter<'_>, stack: &mut [Open], buf: &mut Vec<u8>) -> io::Result<()> {
    use serde_json::ser::Formatter;
    match stack.last_mut() {
        Some(Open::Array { .. }) => f.end_array_value(buf),
        Some(Open::Object { key, .. }) => {
            *key = true;
            f.end_object_value(buf)
        }
        None => Ok(()),
    }
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

/// After a stream some of whose records failed (the others were written): one stderr line with
/// counts and codes only, `phiward: CLI_RECORDS_FAILED: meaning (2 of 9 records: CODE, CODE)`.
pub fn records_failed(records: &crate::ops::Records) {
    let codes: Vec<&str> = records.codes.iter().map(|c| c.as_str()).collect();
    let code = Code::CLI_RECORDS_FAILED;
    let _ = writeln!(
        io::stderr().lock(),
        "phiward: {}: {} ({} of {} records: {})",
        code.as_str(),
        code.meaning(),
        records.failed,
        records.seen,
        codes.join(", ")
    );
}

/// The summary line of a batch run on stderr (counts and time only).
pub fn batch_summary(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// Prints the one stderr line of a failure with a hint built from names only (a usage error:
/// `cli::usage::hint`); a line break in it could only split the line, so there is none.
pub fn failure_hint(code: Code, hint: &str) {
    let hint: String = hint.chars().filter(|c| !c.is_control()).collect();
    let _ = writeln!(io::stderr().lock(), "phiward: {}: {} ({hint})", code.as_str(), code.meaning());
}

/// Prints a notice on stderr (names of packages and counts only: never a value).
pub fn notice(line: &str) {
    let line: String = line.chars().filter(|c| !c.is_control()).collect();
    let _ = writeln!(io::stderr().lock(), "phiward: note: {line}");
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

/// Standard output for a report written as it is made (batch mode), buffered: the caller
/// flushes it.
pub fn stdout_writer() -> io::BufWriter<RawStdout> {
    io::BufWriter::with_capacity(64 * 1024, RawStdout::new())
}

/// Prints text on stdout as it is (the human rendering of a terminology command).
pub fn text(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::pretty;

    /// Drops the white space outside strings (what `pretty` may add).
    fn squeeze(json: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let (mut in_str, mut escaped) = (false, false);
        for &c in json {
            if in_str {
                out.push(c);
                if escaped {
                    escaped = false;
                } else if c == b'\\' {
                    escaped = true;
                } else if c == b'"' {
                    in_str = false;
                }
            } else if !c.is_ascii_whitespace() {
                in_str = c == b'"';
                out.push(c);
            }
        }
        out
    }

    fn check(compact: &[u8]) {
        let mut out = Vec::new();
        pretty(compact, &mut out).expect("write to a Vec");
        assert_eq!(squeeze(&out), compact, "pretty output is the compact output plus white space");
        let a: serde_json::Value = serde_json::from_slice(compact).expect("compact parses");
        let b: serde_json::Value = serde_json::from_slice(&out).expect("pretty parses");
        assert_eq!(a, b);
    }

    /// The bug: `"DOE,  JOHN"` for the HL7 v2 value `DOE, JOHN`, `"A, B"` for `"A,B"`.
    #[test]
    fn pretty_keeps_commas_in_strings() {
        let compact = br#"{"model":{"PID":[["DOE, JOHN","A,B",",",", ,"]],"n":[1,2.50,-3e5]}}"#;
        let mut out = Vec::new();
        pretty(compact, &mut out).expect("write");
        let text = String::from_utf8(out).expect("utf-8");
        assert!(text.contains(r#""DOE, JOHN""#) && text.contains(r#""A,B""#) && text.contains("2.50"), "{text}");
        check(compact);
    }

    #[test]
    fn pretty_layout_is_serde_jsons() {
        let compact = br#"{"a":[],"b":{},"c":[1,{"d":null}],"e":"x"}"#;
        let mut out = Vec::new();
        pretty(compact, &mut out).expect("write");
        let value: serde_json::Value = serde_json::from_slice(compact).expect("parses");
        let expected = serde_json::to_vec_pretty(&value).expect("serializes");
        assert_eq!(String::from_utf8(out).expect("utf-8"), String::from_utf8(expected).expect("utf-8"));
    }

    /// Generated documents: strings made of commas, quotes, escapes, brackets, colons and
    /// non-ASCII characters, in arrays and objects nested at random (a fixed xorshift seed).
    #[test]
    fn pretty_keeps_every_value() {
        const PIECES: [&str; 16] =
            [",", ", ", "\"", "\\", "\n", "\t", "[", "]", "{", "}", ":", "é", "漢", "😀", "DOE, JOHN", " "];
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..2_000 {
            let value = generate(&mut next, 0, &PIECES);
            let compact = serde_json::to_vec(&value).expect("serializes");
            check(&compact);
        }
    }

    /// A text given in parts (cut anywhere: inside strings, escapes, numbers, between tokens)
    /// is re-indented exactly as the whole text.
    #[test]
    fn pretty_in_parts_is_pretty_of_the_whole() {
        use super::Reindent;
        const PIECES: [&str; 8] = [",", "\"", "\\", "[", "}", ":", "é", "DOE, JOHN"];
        let mut state = 0x2545_F491_4F6C_DD1D_u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..300 {
            let value = generate(&mut next, 0, &PIECES);
            let compact = serde_json::to_vec(&value).expect("serializes");
            let mut whole = Vec::new();
            pretty(&compact, &mut whole).expect("write");
            for step in [1usize, 2, 3, 7] {
                let mut reindent = Reindent::new();
                let mut parts = Vec::new();
                for chunk in compact.chunks(step) {
                    reindent.feed(chunk, &mut parts).expect("write");
                }
                reindent.finish(&mut parts).expect("write");
                assert_eq!(String::from_utf8_lossy(&parts), String::from_utf8_lossy(&whole), "step {step}");
            }
        }
    }

    fn generate(next: &mut impl FnMut(u64) -> u64, depth: u32, pieces: &[&str]) -> serde_json::Value {
        use serde_json::Value;
        let text = |next: &mut dyn FnMut(u64) -> u64| -> String {
            (0..next(6)).map(|_| pieces[next(pieces.len() as u64) as usize]).collect()
        };
        match if depth > 3 { next(4) } else { next(7) } {
            0 => Value::String(text(next)),
            1 => Value::from(next(1_000_000) as f64 / 7.0),
            2 => Value::Bool(next(2) == 0),
            3 => Value::Null,
            4 | 5 => Value::Array((0..next(4)).map(|_| generate(next, depth + 1, pieces)).collect()),
            _ => Value::Object((0..next(4)).map(|_| (text(next), generate(next, depth + 1, pieces))).collect()),
        }
    }
}
