//! The reports of batch mode: text, JSON, JSON lines, SARIF 2.1.0, JUnit XML, GitHub Actions
//! annotations, GitLab Code Quality JSON, checkstyle XML.
//!
//! Every report is value-free: paths (as given, or hashed under `--redact-paths`), format
//! names, codes with their fixed meanings, structural locations, positions, fingerprints and
//! counts. Nothing here reads a message.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::args::ReportFormat;
use super::batch::{FileResult, Finding, Run, Status};
use crate::diag::Code;

/// The report of `run` in `format`.
pub fn render(format: ReportFormat, run: &Run) -> String {
    match format {
        ReportFormat::Text => text(run),
        ReportFormat::Json => {
            let mut s = serde_json::to_string_pretty(&document(run)).unwrap_or_default();
            s.push('\n');
            s
        }
        ReportFormat::JsonLines => json_lines(run),
        ReportFormat::Sarif => {
            let mut s = serde_json::to_string_pretty(&sarif(run)).unwrap_or_default();
            s.push('\n');
            s
        }
        ReportFormat::Junit => junit(run),
        ReportFormat::Github => github(run),
        ReportFormat::Gitlab => {
            let mut s = serde_json::to_string_pretty(&gitlab(run)).unwrap_or_default();
            s.push('\n');
            s
        }
        ReportFormat::Checkstyle => checkstyle(run),
    }
}

/// The fixed meaning of a code (empty for a code this binary does not know).
fn meaning(code: &str) -> &'static str {
    Code::ALL.iter().find(|c| c.as_str() == code).map_or("", |c| c.meaning())
}

/// The one summary line on stderr.
pub fn summary_line(run: &Run) -> String {
    let findings: usize = run.files.iter().map(|f| f.findings.len()).sum();
    let baselined: usize = run.files.iter().map(|f| f.findings.iter().filter(|x| x.baselined).count()).sum();
    let mut s = format!(
        "phiward: summary: {} files, {} records: {} valid, {} invalid, {} unsupported, {} failed; {} findings",
        run.files.len(),
        run.records(),
        run.count(Status::Valid),
        run.count(Status::Invalid),
        run.count(Status::Unsupported),
        run.count(Status::Failed),
        findings - baselined,
    );
    if baselined > 0 || !run.fixed.is_empty() {
        let _ = write!(s, " new, {baselined} baselined, {} fixed", run.fixed.len());
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

fn text(run: &Run) -> String {
    let mut s = String::new();
    for f in &run.files {
        let format = f.format.as_deref().map(|x| format!(" [{x}]")).unwrap_or_default();
        let status = if run.command == "inspect" && f.status == Status::Valid { "read" } else { f.status.as_str() };
        let _ = writeln!(s, "{}: {status}{format}", f.path);
        for x in &f.findings {
            let record = x.record.map(|r| format!("record {r}: ")).unwrap_or_default();
            let mark = if x.baselined { "  (baselined)" } else { "" };
            let _ = writeln!(s, "  {record}{:<11} {:<32} {}{}{mark}", x.severity, x.code, x.location, at(x));
        }
    }
    for (path, code, location) in &run.fixed {
        let _ = writeln!(s, "{path}: fixed {code} {location}");
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
        "files": run.files.len(),
        "records": run.records(),
        "valid": run.count(Status::Valid),
        "invalid": run.count(Status::Invalid),
        "unsupported": run.count(Status::Unsupported),
        "failed": run.count(Status::Failed),
        "findings": run.files.iter().map(|f| f.findings.iter().filter(|x| !x.baselined).count()).sum::<usize>(),
        "baselined": run.files.iter().map(|f| f.findings.iter().filter(|x| x.baselined).count()).sum::<usize>(),
        "fixed": run.fixed.len(),
        "exit": run.exit,
    })
}

fn document(run: &Run) -> Value {
    let inspect = run.command == "inspect";
    json!({
        "tool": "phiward",
        "version": env!("CARGO_PKG_VERSION"),
        "command": run.command,
        "files": run.files.iter().map(|f| file_json(f, inspect)).collect::<Vec<_>>(),
        "fixed": run.fixed.iter().map(|(p, c, l)| json!({"path": p, "code": c, "location": l})).collect::<Vec<_>>(),
        "summary": summary_json(run),
    })
}

fn json_lines(run: &Run) -> String {
    let inspect = run.command == "inspect";
    let mut s = String::new();
    for f in &run.files {
        s.push_str(&file_json(f, inspect).to_string());
        s.push('\n');
    }
    s
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

fn sarif(run: &Run) -> Value {
    let mut codes: Vec<&str> = run.files.iter().flat_map(|f| f.findings.iter().map(|x| x.code.as_str())).collect();
    codes.sort_unstable();
    codes.dedup();
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
    let artifacts: Vec<Value> = run.files.iter().map(|f| json!({"location": {"uri": uri(&f.path)}})).collect();
    let mut results = Vec::new();
    for (index, f) in run.files.iter().enumerate() {
        for x in &f.findings {
            let rule = codes.binary_search(&x.code.as_str()).unwrap_or(0);
            let mut physical = json!({"artifactLocation": {"uri": uri(&f.path), "index": index}});
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
            results.push(result);
        }
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "phiward",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/phiward/phiward",
                "rules": rules,
            }},
            "artifacts": artifacts,
            "results": results,
            "columnKind": "unicodeCodePoints",
        }],
    })
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

fn junit(run: &Run) -> String {
    let failures = run.files.iter().filter(|f| f.fails && f.status != Status::Failed).count();
    let errors = run.files.iter().filter(|f| f.fails && f.status == Status::Failed).count();
    let skipped = run.count(Status::Unsupported);
    let time = format!("{:.3}", run.millis as f64 / 1000.0);
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let n = run.files.len();
    let _ = writeln!(
        s,
        "<testsuites name=\"phiward\" tests=\"{n}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{time}\">"
    );
    let _ = writeln!(
        s,
        "  <testsuite name=\"phiward {}\" tests=\"{n}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{time}\">",
        run.command
    );
    for f in &run.files {
        let _ = write!(s, "    <testcase classname=\"phiward.{}\" name=\"{}\" time=\"0\"", run.command, xml(&f.path));
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
    }
    s.push_str("  </testsuite>\n</testsuites>\n");
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

fn github(run: &Run) -> String {
    let mut s = String::new();
    for f in &run.files {
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
    }
    s
}

fn gitlab(run: &Run) -> Value {
    use sha2::Digest;
    let mut issues = Vec::new();
    for f in &run.files {
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
    }
    Value::Array(issues)
}

fn checkstyle(run: &Run) -> String {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<checkstyle version=\"4.3\">\n");
    for f in &run.files {
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
    }
    s.push_str("</checkstyle>\n");
    s
}
