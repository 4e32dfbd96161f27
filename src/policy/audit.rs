//! `phiward policy test POLICY --samples DIR`: the marker audit of a policy, shipped with the
//! product so that a compliance team can run it on its own feeds before trusting a policy.
//!
//! For every sample (a file under DIR: HL7 v2, MLLP, batches, FHIR JSON, NDJSON or XML), every
//! value of every field, component, subcomponent, element and extension is rewritten into a
//! unique marker (`MKR1X`, `MKR2X`, ...) by the same walkers as the no-leak oracle
//! (`internal::fuzzing::values`, `fhir_values`), structure kept: segment ids, delimiters, keys,
//! `resourceType`, and declarations whose meaning a rule depends on (an OBX-2 data type, a coding
//! system name or URI a proof knows, a core profile) stay as written. The marked sample is
//! redacted under the policy, through the same pipeline as `phiward redact`; every marker in the
//! output is a survivor, located by structural path (HL7 v2 `SEG[n]-f[r].c.s`, FHIR element
//! path) and marker number, never by a value.
//!
//! A survivor is *documented* when it survives only because of a `keep` rule that states why it
//! is safe (`reason = "..."`): the sample is redacted a second time with those rules withholding
//! what they keep, and a marker that then survives no more is theirs. Any other survivor fails
//! the test (exit 1), and so does a sample that cannot be redacted once marked. A file that
//! cannot be redacted as it is (not a message, or an invalid one) is skipped and counted.
//!
//! What it does not do: judge values a marker cannot stand in for (a JSON number, a boolean: the
//! walkers leave them, and the policy's number rules decide them), or prove anything about
//! inputs unlike the samples.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::diag::{Code, Hl7Position, Location};
use crate::formats::fhir::definitions as defs;
use crate::formats::hl7v2::segment_ids;
use crate::internal::fuzzing::{fhir_values, values};
use crate::keys::Key;
use crate::limits::Limits;
use crate::ops::{self, Command, Item, Request, Sink, Source};
use crate::phi::Phi;

use super::{Action, Policy, proof};

/// Most sample files read.
pub const MAX_SAMPLES: usize = 10_000;

/// A marker that survived redaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Survivor {
    /// The sample (1-based, in the sorted order of the sample paths).
    pub sample: u32,
    /// The record within the sample's output (1-based).
    pub record: u32,
    /// The marker's number.
    pub marker: u32,
    /// Where it is in the output: a structural path made of schema names and numbers.
    pub location: String,
    /// It survives only because of a `keep` that documents why it is safe.
    pub documented: bool,
}

impl Survivor {
    /// `POLICY_MARKER_DOCUMENTED` or `POLICY_MARKER_SURVIVED`.
    pub fn code(&self) -> Code {
        if self.documented { Code::POLICY_MARKER_DOCUMENTED } else { Code::POLICY_MARKER_SURVIVED }
    }
}

/// The result of a policy test.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Samples read.
    pub samples: u32,
    /// Markers put into them.
    pub markers: u64,
    /// Every surviving marker, in sample, record and output order.
    pub survivors: Vec<Survivor>,
    /// Samples that could not be redacted once marked, with the failure's code.
    pub failed: Vec<(u32, Code)>,
    /// Files that are not messages phiward redacts (they fail unmarked too): not samples.
    pub skipped: u32,
}

impl Report {
    /// True when no marker survived outside documented keeps and every sample was redacted.
    pub fn passed(&self) -> bool {
        self.failed.is_empty() && self.survivors.iter().all(|s| s.documented)
    }

    /// Survivors outside documented keeps.
    pub fn undocumented(&self) -> usize {
        self.survivors.iter().filter(|s| !s.documented).count()
    }

    /// One line per survivor and failed sample, then a summary line.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for s in &self.survivors {
            let code = s.code();
            out.push_str(&format!(
                "sample:{} record:{} {} {} {} marker:{}\n",
                s.sample,
                s.record,
                s.location,
                code.default_severity().as_str(),
                code.as_str(),
                s.marker
            ));
        }
        for (sample, code) in &self.failed {
            out.push_str(&format!(
                "sample:{sample} - error {} cause:{}\n",
                Code::POLICY_SAMPLE_FAILED.as_str(),
                code.as_str()
            ));
        }
        out.push_str(&format!(
            "policy test: {} samples ({} files skipped), {} markers, {} survived outside documented keeps, {} in documented keeps, {} samples failed: {}\n",
            self.samples,
            self.skipped,
            self.markers,
            self.undocumented(),
            self.survivors.len() - self.undocumented(),
            self.failed.len(),
            if self.passed() { "pass" } else { "fail" }
        ));
        out
    }

    /// The report as one JSON object.
    pub fn json(&self) -> Value {
        let findings: Vec<Value> = self
            .survivors
            .iter()
            .map(|s| {
                let code = s.code();
                serde_json::json!({
                    "sample": s.sample,
                    "record": s.record,
                    "marker": s.marker,
                    "code": code.as_str(),
                    "severity": code.default_severity().as_str(),
                    "location": s.location,
                })
            })
            .chain(self.failed.iter().map(|(sample, code)| {
                serde_json::json!({
                    "sample": sample,
                    "code": Code::POLICY_SAMPLE_FAILED.as_str(),
                    "severity": Code::POLICY_SAMPLE_FAILED.default_severity().as_str(),
                    "cause": code.as_str(),
                })
            }))
            .collect();
        serde_json::json!({
            "passed": self.passed(),
            "samples": self.samples,
            "skipped": self.skipped,
            "markers": self.markers,
            "survived": self.undocumented(),
            "documented": self.survivors.len() - self.undocumented(),
            "failedSamples": self.failed.len(),
            "findings": findings,
        })
    }
}

/// The key keyed actions use in a test when none is given (the samples are markers: nothing
/// real is hashed with it).
const TEST_KEY: &[u8] = b"phiward policy test: synthetic markers only";

/// The sample files under `dir` (recursive, sorted, hidden files and folders skipped).
/// `CLI_NO_INPUT` when `dir` cannot be read or holds none.
pub fn sample_files(dir: &Path) -> Result<Vec<PathBuf>, Code> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|_| Code::CLI_NO_INPUT)?;
        for e in entries.flatten() {
            let p = e.path();
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() => out.push(p),
                _ => {}
            }
            if out.len() > MAX_SAMPLES {
                return Err(Code::CLI_INPUT_TOO_LARGE);
            }
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(Code::CLI_NO_INPUT);
    }
    Ok(out)
}

/// Runs the policy test on the files under `dir` (see the module doc).
pub fn run(policy: &Policy, key: Option<Arc<Key>>, dir: &Path, limits: &Limits) -> Result<Report, Code> {
    let files = sample_files(dir)?;
    let mut samples = Vec::with_capacity(files.len());
    for f in &files {
        let bytes = read_capped(f, limits.max_input_bytes)?;
        let ndjson = f.extension().is_some_and(|e| e.eq_ignore_ascii_case("ndjson"));
        samples.push((bytes, ndjson));
    }
    run_samples(policy, key, &samples, limits)
}

fn read_capped(path: &Path, max: u64) -> Result<Vec<u8>, Code> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|_| Code::CLI_NO_INPUT)?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes).map_err(|_| Code::CLI_NO_INPUT)?;
    if bytes.len() as u64 > max {
        return Err(Code::CLI_INPUT_TOO_LARGE);
    }
    Ok(bytes)
}

/// Runs the policy test on samples in memory (`(bytes, ndjson)`).
pub fn run_samples(
    policy: &Policy,
    key: Option<Arc<Key>>,
    samples: &[(Vec<u8>, bool)],
    limits: &Limits,
) -> Result<Report, Code> {
    let key = match key {
        Some(k) => k,
        None => Arc::new(Key::from_bytes(TEST_KEY.to_vec()).map_err(|_| Code::CLI_INTERNAL)?),
    };
    let as_is = Arc::new(policy.clone());
    let documented = policy.hl7v2.iter().any(|r| r.documented) || policy.fhir.iter().any(|r| r.documented);
    let withheld = documented.then(|| {
        let mut p = policy.clone();
        for r in p.hl7v2.iter_mut().filter(|r| r.documented && r.action == Action::Keep) {
            r.withheld = true;
        }
        for r in p.fhir.iter_mut().filter(|r| r.documented && r.action == Action::Keep) {
            r.withheld = true;
        }
        Arc::new(p)
    });
    let mut report = Report::default();
    for (i, (bytes, ndjson)) in samples.iter().enumerate() {
        let sample = i as u32 + 1;
        if redact(&as_is, &key, bytes, *ndjson, limits).is_err() {
            // Not a message phiward redacts (a README, an invalid message): nothing to test.
            report.skipped += 1;
            continue;
        }
        report.samples += 1;
        let marked = mark(bytes);
        report.markers += markers_in(&marked).len() as u64;
        let out = match redact(&as_is, &key, &marked, *ndjson, limits) {
            Ok(out) => out,
            Err(code) => {
                report.failed.push((sample, code));
                continue;
            }
        };
        let found = locate(&out);
        let still: BTreeSet<u32> = match &withheld {
            Some(p) => match redact(p, &key, &marked, *ndjson, limits) {
                Ok(o) => markers_in(&o).into_iter().collect(),
                Err(code) => {
                    report.failed.push((sample, code));
                    continue;
                }
            },
            None => found.iter().map(|f| f.1).collect(),
        };
        for (record, marker, location) in found {
            let documented = !still.contains(&marker);
            report.survivors.push(Survivor { sample, record, marker, location, documented });
        }
    }
    Ok(report)
}

/// Declarations kept as written when marking: an HL7 v2 data type id (OBX-2) or coding system
/// name, a FHIR code system URI or core profile that a proof depends on.
fn is_declaration(v: &[u8]) -> bool {
    super::select::hl7_type_name_exact(v).is_some()
        || proof::hl7_system(v).is_some()
        || proof::fhir_system(v).is_some()
        || proof::core_profile(v)
}

/// The sample with a marker in place of every value but declarations.
fn mark(bytes: &[u8]) -> Vec<u8> {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace() && *b != 0xEF && *b != 0xBB && *b != 0xBF);
    match start.map(|s| bytes[s]) {
        Some(b'{') => fhir_values::json_markers_keeping(bytes, &is_declaration),
        Some(b'<') => fhir_values::xml_markers_keeping(bytes, &is_declaration),
        _ => values::inject_markers_keeping(bytes, &is_declaration),
    }
}

/// Every marker number in `bytes` (a marker fragment counts: `MKR` and at least one digit).
fn markers_in(bytes: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    let prefix = values::MARKER_PREFIX;
    let mut i = 0;
    while let Some(p) = memchr::memmem::find(&bytes[i..], prefix) {
        let start = i + p + prefix.len();
        let digits = bytes[start..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 {
            let n = std::str::from_utf8(&bytes[start..start + digits]).ok().and_then(|t| t.parse().ok());
            out.push(n.unwrap_or(u32::MAX));
        }
        i = start;
    }
    out
}

/// Collects what `redact` writes.
struct Collect(Vec<u8>);

impl Sink for Collect {
    fn item(&mut self, item: Item<'_>) -> std::io::Result<()> {
        if let Item::Bytes(b) = item {
            self.0.extend_from_slice(b);
        }
        Ok(())
    }
}

/// Redacts `bytes` under `policy` through the same pipeline as `phiward redact`.
fn redact(policy: &Arc<Policy>, key: &Arc<Key>, bytes: &[u8], ndjson: bool, limits: &Limits) -> Result<Vec<u8>, Code> {
    let request = Request {
        command: Command::Redact,
        source: Source::Bytes(Phi::new(bytes.to_vec())),
        format: None,
        framing: None,
        limits: policy.apply_limits(*limits),
        strict: false,
        unsafe_show_values: false,
        ndjson,
        to: None,
        policy: Some(Arc::clone(policy)),
        key: Some(Arc::clone(key)),
        model: crate::formats::codec::ModelShape::Positional,
        structures: None,
        fhir: crate::formats::fhir::checks::Checks::default(),
        convert: crate::convert::Options::default(),
    };
    let mut sink = Collect(Vec::new());
    let outcome = ops::run(request, &mut sink);
    if outcome.exit != 0 {
        return Err(outcome.code.unwrap_or(Code::CLI_PARSE_FAILED));
    }
    Ok(sink.0)
}

/// Every marker of a redacted output, with its record and location. Markers the structural
/// walk cannot place (outside any value) are reported at `-`.
fn locate(out: &[u8]) -> Vec<(u32, u32, String)> {
    let start = out.iter().position(|b| !b.is_ascii_whitespace());
    let mut found = match start.map(|s| out[s]) {
        Some(b'{') => locate_json(out),
        Some(b'<') => locate_xml(out),
        _ => locate_er7(out),
    };
    let placed: BTreeSet<u32> = found.iter().map(|f| f.1).collect();
    for m in markers_in(out) {
        if !placed.contains(&m) {
            found.push((0, m, "-".to_owned()));
        }
    }
    found
}

/// HL7 v2 output (ER7, MLLP frames, batches): `SEG[n]-field[rep].comp.sub`.
fn locate_er7(out: &[u8]) -> Vec<(u32, u32, String)> {
    let mut found = Vec::new();
    let (mut field_sep, mut comp, mut rep, mut sub) = (b'|', b'^', b'~', b'&');
    let mut record = 0u32;
    let mut counts: Vec<([u8; 3], u32)> = Vec::new();
    for line in out.split(|b| matches!(b, b'\r' | b'\n' | 0x0B | 0x1C)) {
        if line.len() < 3 {
            continue;
        }
        let id = [line[0], line[1], line[2]];
        let header = matches!(&id, b"MSH" | b"BHS" | b"FHS") && line.len() >= 8;
        if header {
            field_sep = line[3];
            (comp, rep, sub) = (line[4], line[5], line[7]);
        }
        if &id == b"MSH" {
            record += 1;
            counts.clear();
        }
        let index = match counts.iter_mut().find(|(s, _)| *s == id) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                counts.push((id, 1));
                1
            }
        };
        let segment = segment_ids::schema_name(&id);
        let fields: Vec<&[u8]> = line.split(|b| *b == field_sep).collect();
        for (fi, field) in fields.iter().enumerate().skip(1) {
            // MSH-1 is the separator itself: MSH's first split part is MSH-2.
            let n = if header { fi as u32 + 1 } else { fi as u32 };
            for (ri, r) in field.split(|b| *b == rep).enumerate() {
                for (ci, c) in r.split(|b| *b == comp).enumerate() {
                    for (si, s) in c.split(|b| *b == sub).enumerate() {
                        for m in markers_in(s) {
                            let pos = Hl7Position {
                                segment,
                                index,
                                field: n,
                                repetition: ri as u32 + 1,
                                component: ci as u32 + 1,
                                subcomponent: si as u32 + 1,
                            };
                            found.push((record.max(1), m, Location::Hl7(pos).to_string()));
                        }
                    }
                }
            }
        }
    }
    found
}

/// A key or resource type as a path step: schema names only (anything else is `?`).
fn step(name: &str) -> &str {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && (defs::type_id(name.as_bytes()).is_some() || name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
    if ok { name } else { "?" }
}

/// FHIR JSON output (one document, or NDJSON lines): `Bundle.entry[2].resource(Patient).name[0].family`.
fn locate_json(out: &[u8]) -> Vec<(u32, u32, String)> {
    let mut found = Vec::new();
    let docs: Vec<&[u8]> = if out.iter().filter(|b| **b == b'\n').count() > 1
        && out.split(|b| *b == b'\n').filter(|l| !l.is_empty()).all(|l| l.first() == Some(&b'{'))
        && serde_json::from_slice::<Value>(out).is_err()
    {
        out.split(|b| *b == b'\n').filter(|l| !l.trim_ascii().is_empty()).collect()
    } else {
        vec![out]
    };
    for (i, d) in docs.iter().enumerate() {
        let Ok(v) = serde_json::from_slice::<Value>(d) else { continue };
        let root = v.get("resourceType").and_then(Value::as_str).map_or("?", step).to_owned();
        walk_json(&v, &mut root.clone(), i as u32 + 1, &mut found);
    }
    found
}

fn walk_json(v: &Value, path: &mut String, record: u32, found: &mut Vec<(u32, u32, String)>) {
    match v {
        Value::String(s) => {
            for m in markers_in(s.as_bytes()) {
                found.push((record, m, path.clone()));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk_json(item, path, record, found);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                if k == "resourceType" {
                    continue;
                }
                let len = path.len();
                path.push('.');
                path.push_str(step(k));
                if let Some(t) = item.get("resourceType").and_then(Value::as_str) {
                    path.push_str(&format!("({})", step(t)));
                }
                walk_json(item, path, record, found);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// FHIR XML output: the element path (`Bundle.entry.resource.Patient.name.family`).
fn locate_xml(out: &[u8]) -> Vec<(u32, u32, String)> {
    let mut found = Vec::new();
    let mut stack: Vec<String> = Vec::new();
    let mut i = 0;
    while i < out.len() {
        if out[i] != b'<' {
            let end = memchr::memchr(b'<', &out[i..]).map_or(out.len(), |p| i + p);
            for m in markers_in(&out[i..end]) {
                found.push((1, m, stack.join(".")));
            }
            i = end;
            continue;
        }
        let end = memchr::memchr(b'>', &out[i..]).map_or(out.len(), |p| i + p);
        let tag = &out[i + 1..end];
        if tag.first() == Some(&b'/') {
            stack.pop();
        } else if !matches!(tag.first(), Some(b'?' | b'!')) {
            let name_len = tag.iter().position(|b| b.is_ascii_whitespace() || *b == b'/').unwrap_or(tag.len());
            let name = std::str::from_utf8(&tag[..name_len]).unwrap_or("?");
            stack.push(step(name).to_owned());
            for m in markers_in(tag) {
                found.push((1, m, stack.join(".")));
            }
            if tag.last() == Some(&b'/') {
                stack.pop();
            }
        }
        i = end + 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(text: &str) -> Policy {
        super::super::load(text.as_bytes()).unwrap_or_else(|e| panic!("{} {}:{}", e.code.as_str(), e.line, e.column))
    }

    const HL7: &[u8] = b"MSH|^~\\&|A|B|C|D|20240101120000||ADT^A01|1|P|2.5.1\rPID|1||123^^^H^MR||DOE^JANE||19500101|F|||1 MAIN ST^^CITY^MA^02139^USA\rOBX|1|NM|30525-0^Age^LN||97|a^year^UCUM|||||F\r";

    #[test]
    fn a_planted_unsafe_keep_is_found_by_path() {
        let head = "[policy]\nname = \"t\"\n[[hl7v2]]\nselect = \"MSH-9\"\naction = \"keep\"\n";
        let safe = policy(head);
        let report = run_samples(&safe, None, &[(HL7.to_vec(), false)], &Limits::default()).unwrap_or_default();
        assert!(report.markers > 10, "{}", report.markers);
        assert!(report.passed(), "{}", report.text());
        let unsafe_keep =
            policy(&format!("{head}[[hl7v2]]\nselect = \"PID-5\"\naction = \"keep\"\nfree_text = true\n"));
        let report = run_samples(&unsafe_keep, None, &[(HL7.to_vec(), false)], &Limits::default()).unwrap_or_default();
        assert!(!report.passed());
        let at: Vec<&str> = report.survivors.iter().map(|s| s.location.as_str()).collect();
        assert_eq!(at, ["PID[1]-5[1].1.1", "PID[1]-5[1].2.1"], "{}", report.text());
        // Documented, the same keep passes, its survivors counted apart.
        let documented = policy(&format!(
            "{head}[[hl7v2]]\nselect = \"PID-5\"\naction = \"keep\"\nfree_text = true\nreason = \"test\"\n"
        ));
        let report = run_samples(&documented, None, &[(HL7.to_vec(), false)], &Limits::default()).unwrap_or_default();
        assert!(report.passed(), "{}", report.text());
        assert_eq!(report.survivors.len(), 2);
        assert!(!report.text().contains("DOE"));
    }

    #[test]
    fn fhir_survivors_are_located_by_element_path() {
        let json = br#"{"resourceType":"Patient","id":"p1","name":[{"family":"Doe"}],"gender":"female"}"#;
        let p = policy(
            "[policy]\nname = \"t\"\n[[fhir]]\nselect = \"Patient.name\"\naction = \"keep\"\nfree_text = true\n",
        );
        let report = run_samples(&p, None, &[(json.to_vec(), false)], &Limits::default()).unwrap_or_default();
        let at: Vec<&str> = report.survivors.iter().map(|s| s.location.as_str()).collect();
        assert_eq!(at, ["Patient.name[0].family"], "{}", report.text());
    }
}
