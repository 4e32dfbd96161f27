//! The reports of batch mode: text, JSON, JSON lines, SARIF 2.1.0, JUnit XML, GitHub Actions
//! annotations, GitLab Code Quality JSON, checkstyle XML.
//!
//! Every report is value-free: paths (as given, or hashed under `--redact-paths`), format
//! names, codes with their fixed meanings, structural locations, positions, fingerprints and
//! counts. Nothing here reads a message.

use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::{Value, json};

use super::args::ReportFormat;
use super::batch::{FileResult, Finding, Run, Status};
use crate::diag::Code;

/// One file's part of a report, rendered on a worker thread; [`Report::push`] writes it in
/// path order.
#[derive(Debug)]
pub enum Piece {
    /// Bytes written as they are (text, JSON lines, GitHub, checkstyle).
    Text(String),
    /// Elements of the report's one streamed JSON array (JSON's files, GitLab's issues), each
    /// pretty-printed at its depth.
    Items(Vec<String>),
    /// SARIF: the file's artifact (streamed) and its findings (held: a result's `ruleIndex`
    /// needs every code of the run).
    Sarif { artifact: String, uri: String, findings: Vec<Finding> },
    /// JUnit: the file's testcase (held: the suite's counts come first).
    Junit(String),
}

/// The part of file `f` in a `format` report.
pub fn piece(format: ReportFormat, command: &'static str, f: &FileResult) -> Piece {
    let inspect = command == "inspect";
    match format {
        ReportFormat::Text => Piece::Text(text_file(command, f)),
        ReportFormat::Json => Piece::Items(vec![pretty_at(&file_json(f, inspect), 4)]),
        ReportFormat::JsonLines => {
            let mut s = file_json(f, inspect).to_string();
            s.push('\n');
            Piece::Text(s)
        }
        ReportFormat::Sarif => {
            let uri = uri(&f.path);
            Piece::Sarif {
                artifact: pretty_at(&json!({"location": {"uri": uri}}), 8),
                uri,
                findings: f.findings.clone(),
            }
        }
        ReportFormat::Junit => Piece::Junit(junit_file(command, f)),
        ReportFormat::Github => Piece::Text(github_file(f)),
        ReportFormat::Gitlab => Piece::Items(gitlab_file(f).iter().map(|v| pretty_at(v, 2)).collect()),
        ReportFormat::Checkstyle => Piece::Text(checkstyle_file(f)),
    }
}

/// `v` pretty-printed as serde_json prints it `depth` spaces deep in a document (its first line
/// not indented: it follows a key or a separator).
fn pretty_at(v: &Value, depth: usize) -> String {
    let s = serde_json::to_string_pretty(v).unwrap_or_default();
    let pad = format!("\n{}", " ".repeat(depth));
    s.replace('\n', &pad)
}

/// A report written as the files come, in path order: a format's head when made, each file's
/// [`Piece`] as it comes, its tail (totals, fixed baseline entries) at the end. The bytes are
/// those of the whole report rendered at once. Only SARIF results and JUnit testcases are held
/// until the end (their formats put the run's codes or counts before them), as value-free
/// findings and rendered testcases.
pub struct Report<W: Write> {
    format: ReportFormat,
    command: &'static str,
    out: W,
    /// Pieces pushed.
    files: usize,
    /// Array elements written (JSON's files, GitLab's issues, SARIF's artifacts).
    items: usize,
    /// SARIF: each file's index, URI and findings, files without findings left out.
    sarif: Vec<(usize, String, Vec<Finding>)>,
    /// JUnit: the testcases.
    junit: Vec<String>,
}

impl<W: Write> Report<W> {
    /// Starts a `format` report of a `command` run on `out` (writes its head).
    pub fn new(format: ReportFormat, command: &'static str, mut out: W) -> io::Result<Self> {
        let head = match format {
            ReportFormat::Json => format!("{{\n  \"command\": {},\n  \"files\": [", Value::from(command)),
            ReportFormat::Sarif => {
                "{\n  \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\",\n  \"runs\": [\n    {\n      \"artifacts\": ["
                    .to_owned()
            }
            ReportFormat::Gitlab => "[".to_owned(),
            ReportFormat::Checkstyle => {
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<checkstyle version=\"4.3\">\n".to_owned()
            }
            ReportFormat::Text | ReportFormat::JsonLines | ReportFormat::Junit | ReportFormat::Github => String::new(),
        };
        out.write_all(head.as_bytes())?;
        Ok(Report { format, command, out, files: 0, items: 0, sarif: Vec::new(), junit: Vec::new() })
    }

    /// Writes (or, for SARIF results and JUnit, keeps) the next file's piece.
    pub fn push(&mut self, piece: Piece) -> io::Result<()> {
        let index = self.files;
        self.files += 1;
        match piece {
            Piece::Text(s) => self.out.write_all(s.as_bytes()),
            Piece::Items(items) => {
                for item in items {
                    self.item(&item)?;
                }
                Ok(())
            }
            Piece::Sarif { artifact, uri, findings } => {
                if !findings.is_empty() {
                    self.sarif.push((index, uri, findings));
                }
                self.item(&artifact)
            }
            Piece::Junit(s) => {
                self.junit.push(s);
                Ok(())
            }
        }
    }

    fn item(&mut self, item: &str) -> io::Result<()> {
        let sep = if self.items == 0 { "\n" } else { ",\n" };
        let pad = match self.format {
            ReportFormat::Json => 4,
            ReportFormat::Sarif => 8,
            _ => 2,
        };
        self.items += 1;
        write!(self.out, "{sep}{}{item}", " ".repeat(pad))
    }

    /// The closing bracket of the streamed array, `depth` spaces deep.
    fn close(&mut self, depth: usize) -> io::Result<()> {
        if self.items == 0 { self.out.write_all(b"]") } else { write!(self.out, "\n{}]", " ".repeat(depth)) }
    }

    /// Writes the tail (what needs the whole run) and flushes; returns the writer.
    pub fn finish(mut self, run: &Run) -> io::Result<W> {
        match self.format {
            ReportFormat::Text => {
                let mut s = String::new();
                for (path, code, location) in &run.fixed {
                    let _ = writeln!(s, "{path}: fixed {code} {location}");
                }
                self.out.write_all(s.as_bytes())?;
            }
            ReportFormat::Json => {
                self.close(2)?;
                let tail = json!({
                    "fixed": run.fixed.iter().map(|(p, c, l)| json!({"path": p, "code": c, "location": l})).collect::<Vec<_>>(),
                    "summary": summary_json(run),
                    "tool": "phiward",
                    "version": env!("CARGO_PKG_VERSION"),
                });
                let tail = serde_json::to_string_pretty(&tail).unwrap_or_default();
                write!(self.out, ",\n{}\n", tail.strip_prefix("{\n").unwrap_or(&tail))?;
            }
            ReportFormat::Sarif => self.sarif_tail()?,
            ReportFormat::Junit => {
                let head = junit_head(run, self.command);
                self.out.write_all(head.as_bytes())?;
                for t in std::mem::take(&mut self.junit) {
                    self.out.write_all(t.as_bytes())?;
                }
                self.out.write_all(b"  </testsuite>\n</testsuites>\n")?;
            }
            ReportFormat::Gitlab => {
                self.close(0)?;
                self.out.write_all(b"\n")?;
            }
            ReportFormat::Checkstyle => self.out.write_all(b"</checkstyle>\n")?,
            ReportFormat::JsonLines | ReportFormat::Github => {}
        }
        self.out.flush()?;
        Ok(self.out)
    }

    fn sarif_tail(&mut self) -> io::Result<()> {
        self.close(6)?;
        self.out.write_all(b",\n      \"columnKind\": \"unicodeCodePoints\",\n      \"results\": ")?;
        let held = std::mem::take(&mut self.sarif);
        let mut codes: Vec<&str> = held.iter().flat_map(|(_, _, fs)| fs.iter().map(|x| x.code.as_str())).collect();
        codes.sort_unstable();
        codes.dedup();
        let mut first = true;
        for (index, uri, findings) in &held {
            for x in findings {
                let result = sarif_result(&codes, *index, uri, x);
                let sep = if first { "[\n" } else { ",\n" };
                first = false;
                write!(self.out, "{sep}        {}", pretty_at(&result, 8))?;
            }
        }
        self.out.write_all(if first { b"[]" } else { b"\n      ]" })?;
        write!(self.out, ",\n      \"tool\": {}", pretty_at(&sarif_tool(&codes), 6))?;
        self.out.write_all(b"\n    }\n  ],\n  \"version\": \"2.1.0\"\n}\n")
    }
}

/// The fixed meaning of a code (empty for a code this binary does not know).
fn meaning(code: &str) -> &'static str {
    Code::ALL.iter().find(|c| c.as_str() == code).map_or("", |c| c.meaning())
}

/// The one summary line on stderr.
pub fn summary_line(run: &Run) -> String {
    let mut s = format!(
        "phiward: summary: {} files, {} records: {} valid, {} invalid, {} unsupported, {} failed; {} findings",
        run.files,
        run.records,
        run.count(Status::Valid),
        run.count(Status::Invalid),
        run.count(Status::Unsupported),
        run.count(Status::Failed),
        run.findings,
    );
    if run.baselined > 0 || !run.fixed.is_empty() {
        let _ = write!(s, " new, {} baselined, {} fixed", run.baselined, run.fixed.len());
    }
    let _ = write!(s, " ({} ms)", run.millis);
    s
}

fn at(f: &Finding) -> String {
    match (f.line, f.column, f.offset) {
        (Some(l), Some(c), _) => format!(" (line {l}, column {c})"),
        (Some(l), None, _) => format!(" (line {l})"),
        (None, _, Some(o)) => format!(" (offset {o})"),
        _ => String::new(),
    }
}

fn text_file(command: &str, f: &FileResult) -> String {
    let mut s = String::new();
    let format = f.format.as_deref().map(|x| format!(" [{x}]")).unwrap_or_default();
    let status = if command == "inspect" && f.status == Status::Valid { "read" } else { f.status.as_str() };
    let _ = writeln!(s, "{}: {status}{format}", f.path);
    for x in &f.findings {
        let record = x.record.map(|r| format!("record {r}: ")).unwrap_or_default();
        let mark = if x.baselined { "  (baselined)" } else { "" };
        let _ = writeln!(s, "  {record}{:<11} {:<32} {}{}{mark}", x.severity, x.code, x.location, at(x));
    }
    s
}

fn finding_json(x: &Finding) -> Value {
    let mut v = json!({"code": x.code, "severity": x.severity, "location": x.location, "fingerprint": x.fingerprint});
    if let Some(r) = x.record {
        v["record"] = json!(r);
    }
    if let Some(l) = x.line {
        v["line"] = json!(l);
    }
    if let Some(c) = x.column {
        v["column"] = json!(c);
    }
    if let Some(o) = x.offset {
        v["offset"] = json!(o);
    }
    if let Some(k) = x.kind {
        v["kind"] = json!(k);
    }
    if let Some(c) = &x.cause {
        v["cause"] = json!(c);
    }
    if x.baselined {
        v["baselined"] = json!(true);
    }
    v
}

fn file_json(f: &FileResult, inspect: bool) -> Value {
    let mut v = json!({
        "path": f.path,
        "format": f.format,
        "status": f.status.as_str(),
        "records": f.records,
        "findings": f.findings.iter().map(finding_json).collect::<Vec<_>>(),
    });
    if inspect {
        v["summaries"] = Value::Array(f.objects.clone());
    }
    v
}

/// The counts of a run (the audit line's).
pub fn counts_json(run: &Run) -> Value {
    summary_json(run)
}

fn summary_json(run: &Run) -> Value {
    json!({
        "files": run.files,
        "records": run.records,
        "valid": run.count(Status::Valid),
        "invalid": run.count(Status::Invalid),
        "unsupported": run.count(Status::Unsupported),
        "failed": run.count(Status::Failed),
        "findings": run.findings,
        "baselined": run.baselined,
        "fixed": run.fixed.len(),
        "exit": run.exit,
    })
}

/// A path as a URI reference: unreserved characters and `/` kept, the rest percent-encoded.
fn uri(path: &str) -> String {
    let mut s = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            s.push(char::from(b));
        } else {
            let _ = write!(s, "%{b:02X}");
        }
    }
    s
}

fn sarif_level(severity: &str) -> &'static str {
    match severity {
        "fatal" | "error" => "error",
        "warning" => "warning",
        _ => "note",
    }
}

/// The SARIF driver with one rule per code of the run (`codes`: sorted, distinct).
fn sarif_tool(codes: &[&str]) -> Value {
    let rules: Vec<Value> = codes
        .iter()
        .map(|c| {
            json!({
                "id": c,
                "name": c,
                "shortDescription": {"text": meaning(c)},
                "fullDescription": {"text": format!("{c}: {} (DIAGNOSTICS.md)", meaning(c))},
                "helpUri": "https://github.com/phiward/phiward/blob/main/DIAGNOSTICS.md",
            })
        })
        .collect();
    json!({"driver": {
        "name": "phiward",
        "version": env!("CARGO_PKG_VERSION"),
        "informationUri": "https://github.com/phiward/phiward",
        "rules": rules,
    }})
}

/// The SARIF result of finding `x` of the `index`th file (`uri`), `codes` the run's rules.
fn sarif_result(codes: &[&str], index: usize, uri: &str, x: &Finding) -> Value {
    let rule = codes.binary_search(&x.code.as_str()).unwrap_or(0);
    let mut physical = json!({"artifactLocation": {"uri": uri, "index": index}});
    if let Some(line) = x.line.filter(|&l| l > 0) {
        let mut region = json!({"startLine": line});
        if let Some(c) = x.column.filter(|&c| c > 0) {
            region["startColumn"] = json!(c);
        }
        physical["region"] = region;
    }
    let mut result = json!({
        "ruleId": x.code,
        "ruleIndex": rule,
        "level": sarif_level(&x.severity),
        "message": {"text": format!("{} at {}: {}", x.code, x.location, meaning(&x.code))},
        "locations": [{
            "physicalLocation": physical,
            "logicalLocations": [{"fullyQualifiedName": x.location, "kind": "element"}],
        }],
        "partialFingerprints": {"phiward/v1": x.fingerprint},
    });
    if x.baselined {
        result["suppressions"] = json!([{"kind": "external", "justification": "baseline"}]);
    }
    result
}

/// XML text and attribute escaping; control characters other than tab and newline dropped.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The JUnit document's head: the run's counts.
fn junit_head(run: &Run, command: &str) -> String {
    let failures = run.failures;
    let errors = run.errors;
    let skipped = run.count(Status::Unsupported);
    let time = format!("{:.3}", run.millis as f64 / 1000.0);
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let n = run.files;
    let _ = writeln!(
        s,
        "<testsuites name=\"phiward\" tests=\"{n}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{time}\">"
    );
    let _ = writeln!(
        s,
        "  <testsuite name=\"phiward {command}\" tests=\"{n}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{time}\">"
    );
    s
}

/// A file's JUnit testcase.
fn junit_file(command: &str, f: &FileResult) -> String {
    let mut s = String::new();
    let _ = write!(s, "    <testcase classname=\"phiward.{command}\" name=\"{}\" time=\"0\"", xml(&f.path));
    let body: String = f
        .findings
        .iter()
        .map(|x| {
            let base = if x.baselined { " (baselined)" } else { "" };
            format!("{} {} {}{}{base}\n", x.severity, x.code, x.location, at(x))
        })
        .collect();
    let first = f.findings.iter().find(|x| !x.baselined).map_or("", |x| x.code.as_str());
    if f.status == Status::Unsupported {
        let _ = writeln!(s, ">\n      <skipped message=\"{}\"/>\n    </testcase>", xml(first));
    } else if f.fails {
        let tag = if f.status == Status::Failed { "error" } else { "failure" };
        let message = format!("{} findings", f.findings.iter().filter(|x| !x.baselined).count());
        let _ = writeln!(
            s,
            ">\n      <{tag} type=\"{}\" message=\"{}\">{}</{tag}>\n    </testcase>",
            xml(first),
            xml(&message),
            xml(&body)
        );
    } else if !body.is_empty() {
        let _ = writeln!(s, ">\n      <system-out>{}</system-out>\n    </testcase>", xml(&body));
    } else {
        s.push_str("/>\n");
    }
    s
}

/// GitHub's escaping of a workflow command's data (`%`, CR, LF) and, for properties, `:` and `,`.
fn gh(s: &str, property: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            ':' if property => out.push_str("%3A"),
            ',' if property => out.push_str("%2C"),
            c => out.push(c),
        }
    }
    out
}

fn github_file(f: &FileResult) -> String {
    let mut s = String::new();
    for x in f.findings.iter().filter(|x| !x.baselined) {
        let level = match x.severity.as_str() {
            "fatal" | "error" => "error",
            "warning" => "warning",
            _ => "notice",
        };
        let mut props = format!("file={}", gh(&f.path, true));
        if let Some(l) = x.line {
            let _ = write!(props, ",line={l}");
            if let Some(c) = x.column {
                let _ = write!(props, ",col={c}");
            }
        }
        let _ = write!(props, ",title={}", gh(&x.code, true));
        let message = format!("{} at {}: {}", x.code, x.location, meaning(&x.code));
        let _ = writeln!(s, "::{level} {props}::{}", gh(&message, false));
    }
    s
}

fn gitlab_file(f: &FileResult) -> Vec<Value> {
    use sha2::Digest;
    let mut issues = Vec::new();
    for x in f.findings.iter().filter(|x| !x.baselined) {
        let severity = match x.severity.as_str() {
            "fatal" => "critical",
            "error" => "major",
            "warning" => "minor",
            _ => "info",
        };
        let digest = sha2::Sha256::digest(format!("{}\0{}", f.path, x.fingerprint).as_bytes());
        let fingerprint: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        issues.push(json!({
            "description": format!("{} at {}: {}", x.code, x.location, meaning(&x.code)),
            "check_name": x.code,
            "fingerprint": fingerprint,
            "severity": severity,
            "location": {"path": f.path, "lines": {"begin": x.line.unwrap_or(1).max(1)}},
        }));
    }
    issues
}

fn checkstyle_file(f: &FileResult) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "  <file name=\"{}\">", xml(&f.path));
    for x in f.findings.iter().filter(|x| !x.baselined) {
        let severity = match x.severity.as_str() {
            "fatal" | "error" => "error",
            "warning" => "warning",
            _ => "info",
        };
        let mut pos = String::new();
        if let Some(l) = x.line {
            let _ = write!(pos, " line=\"{l}\"");
            if let Some(c) = x.column {
                let _ = write!(pos, " column=\"{c}\"");
            }
        }
        let message = format!("{} at {}: {}", x.code, x.location, meaning(&x.code));
        let _ = writeln!(
            s,
            "    <error{pos} severity=\"{severity}\" message=\"{}\" source=\"phiward.{}\"/>",
            xml(&message),
            xml(&x.code)
        );
    }
    s.push_str("  </file>\n");
    s
}
