//! The oracles shared by every fuzz target: the grammar of the secondary channel, the no-leak
//! check, and the positions of diagnostics.
//!
//! The secondary channel is everything a value must never reach: rendered diagnostics
//! (`CODE severity location`), the failure line the CLI prints, the JSON items of validate,
//! inspect, failed records and `fmt --check` (and the `warnings` of parse), and log lines. A
//! harness gathers it in a [`Secondary`]; [`Secondary::check`] then asserts:
//!
//! - **grammar**: each line and JSON item matches the fixed grammar of registered codes,
//!   severity words, code meanings, schema names (segment ids, structure and group names) and
//!   numbers (the location grammar of `diag`);
//! - **no leak**: after blanking every vocabulary word and number, no window of 4 bytes of the
//!   input's value runs (see `values`) that holds a letter, a control byte or a byte above 0x7F
//!   occurs in what is left; in marker mode, no marker token occurs at all.
//!
//! Exceptions, by contract: the `messageType` and `version` of an inspect summary are copied from
//! MSH-9/MSH-12 when they match the standard's code patterns; they are checked against those
//! patterns and then left out of the leak check.
//!
//! A failed oracle panics (that is what libFuzzer reports); the message may quote the rendered
//! line, which is fuzz data.

use std::collections::{BTreeSet, HashSet};
use std::sync::OnceLock;

use serde_json::Value;

use crate::diag::{Code, Diagnostic, Hl7Position, Location, Severity};
use crate::formats::hl7v2::{Message, schema, segment_ids};

use super::values;

/// The secondary-channel text produced while running one input.
#[derive(Debug, Default)]
pub(super) struct Secondary {
    /// Lines that passed the grammar; the leak check runs over them.
    text: Vec<u8>,
    /// Lines already recorded (the same finding renders in several places).
    seen: HashSet<String>,
    /// Log messages: checked for markers only.
    markers_only: Vec<u8>,
}

const SEVERITIES: [Severity; 4] = [Severity::Fatal, Severity::Error, Severity::Warning, Severity::Information];

fn severity_from(s: &str) -> Option<Severity> {
    SEVERITIES.into_iter().find(|v| v.as_str() == s)
}

impl Secondary {
    fn push_line(&mut self, line: &str) {
        if self.seen.insert(line.to_owned()) {
            self.text.extend_from_slice(line.as_bytes());
            self.text.push(b'\n');
        }
    }

    /// Renders a diagnostic as the CLI's human output does (`CODE severity location`), checks its
    /// grammar and records it.
    pub(super) fn diagnostic(&mut self, d: &Diagnostic) {
        let line = format!("{} {} {}", d.code.as_str(), d.severity.as_str(), d.location);
        diagnostic_line_ok(&line);
        self.push_line(&line);
    }

    /// The failure line of `cli::output::failure`, checked and recorded.
    pub(super) fn failure(&mut self, code: Code, cause: Option<Diagnostic>) {
        let line = crate::cli::output::failure_line(code, cause);
        failure_line_ok(&line);
        if let Some(d) = cause {
            self.diagnostic(&d);
        }
        self.push_line(&line);
    }

    /// A value-free JSON item (validate, inspect, failed record, `fmt --check`); parse items pass
    /// only their `warnings`. Checks the shape and records the item.
    pub(super) fn json_item(&mut self, json: &[u8]) {
        let Ok(Value::Object(mut map)) = serde_json::from_slice::<Value>(json) else {
            panic!("a JSON item is not a JSON object");
        };
        if let Some(r) = map.get("record") {
            assert!(r.as_u64().is_some_and(|n| n >= 1), "record is not a positive number");
        }
        // A record's byte offset in the input: a number, checked here and then dropped.
        if let Some(o) = map.remove("offset") {
            assert!(o.as_u64().is_some(), "a record's offset is not a number");
        }
        let format = map.get("format").and_then(Value::as_str).unwrap_or_default().to_owned();
        assert!(crate::formats::resolve(&format).is_some(), "unknown format in a JSON item");
        if map.contains_key("model") {
            // parse: the model is the data channel; only the warnings are secondary.
            let warnings = map.remove("warnings").unwrap_or(Value::Array(Vec::new()));
            findings_ok(&warnings);
            let kept = serde_json::json!({ "format": format, "warnings": warnings });
            self.push_line(&kept.to_string());
            return;
        }
        if map.contains_key("bundle") {
            // convert: the Bundle is the data channel; only the findings are secondary.
            let findings = map.remove("findings").unwrap_or(Value::Array(Vec::new()));
            findings_ok(&findings);
            map.remove("bundle");
            map.remove("record");
            assert!(map.keys().all(|k| k == "format"), "unexpected key in a convert item");
            let kept = serde_json::json!({ "format": format, "findings": findings });
            self.push_line(&kept.to_string());
            return;
        }
        let keys: BTreeSet<String> = map.keys().cloned().collect();
        let allowed: &[&str] = if map.contains_key("error") {
            let code = map.get("error").and_then(Value::as_str).unwrap_or_default();
            assert!(Code::from_name(code).is_some(), "failed record with an unregistered code");
            if let Some(cause) = map.get("cause") {
                assert!(cause.as_str().and_then(Code::from_name).is_some(), "failed record with an unregistered cause");
            }
            if let Some(kind) = map.get("kind") {
                let known = ["unparseable", "too_large", "framing", "failed"];
                assert!(kind.as_str().is_some_and(|k| known.contains(&k)), "failed record with an unknown kind");
            }
            &["record", "format", "error", "kind", "cause"]
        } else if map.contains_key("canonical") {
            assert_eq!(map.get("canonical"), Some(&Value::Bool(false)), "fmt --check item must say false");
            &["record", "format", "canonical"]
        } else if map.contains_key("valid") {
            assert!(map.get("valid").is_some_and(Value::is_boolean), "valid is not a boolean");
            findings_ok(map.get("findings").unwrap_or(&Value::Null));
            &["record", "format", "valid", "findings"]
        } else if format == "astm" {
            astm_inspect_ok(&map);
            // Checked against the standard's fixed codes, then left out of the leak check (as
            // HL7 v2's messageType and version are).
            map.remove("version");
            map.remove("processingId");
            let values: Vec<Value> = map.into_iter().map(|(_, v)| v).collect();
            self.push_line(&Value::Array(values).to_string());
            return;
        } else if format == "ncpdp" {
            ncpdp_inspect_ok(&map);
            // Checked against the D.0 tables (segment ids, transaction codes), then left out of
            // the leak check as ASTM's are.
            for k in ["version", "transactionCode", "headerStatus", "segments", "transactions", "recordType"] {
                map.remove(k);
            }
            let values: Vec<Value> = map.into_iter().map(|(_, v)| v).collect();
            self.push_line(&Value::Array(values).to_string());
            return;
        } else if format == "dicom" {
            // Every string is checked to be a name or word of the standard's tables, then left
            // out of the leak check: a table name ("CT Image Storage") can share four bytes with
            // an input's text by chance, which proves nothing.
            dicom_inspect_ok(&Value::Object(map.clone()));
            let values: Vec<Value> = map.into_iter().map(|(_, v)| strip_strings(v)).collect();
            self.push_line(&Value::Array(values).to_string());
            return;
        } else if format == "ncpdp-script" {
            // Version, message type and part names from the SCRIPT tables only.
            script_inspect_ok(&map);
            let values: Vec<Value> = map.into_iter().map(|(_, v)| strip_keys(strip_strings(v))).collect();
            self.push_line(&Value::Array(values).to_string());
            return;
        } else if format == "ccda" {
            // Template keys, titles and section codes from the generated tables only.
            ccda_inspect_ok(&map);
            let values: Vec<Value> = map.into_iter().map(|(_, v)| strip_keys(strip_strings(v))).collect();
            self.push_line(&Value::Array(values).to_string());
            return;
        } else if format == "x12" {
            x12_inspect_ok(&map);
            let values: Vec<Value> = map.into_iter().map(|(_, v)| v).collect();
            self.push_line(&Value::Array(values).to_string());
            return;
        } else if format == "fhir" {
            // The keys are the summary struct's own (static); only the values can carry input.
            if let Some(inventory) = map.remove("inventory") {
                fhir_inventory_ok(&inventory);
                // Checked against the definitions above; left out of the leak check (a path or
                // a value set's URL can share four bytes with an input by chance).
                self.push_line(&strip_keys(strip_strings(inventory)).to_string());
            }
            fhir_inspect_ok(&map);
            let values: Vec<Value> = map.into_iter().map(|(_, v)| v).collect();
            self.push_line(&Value::Array(values).to_string());
            return;
        } else {
            if let Some(inventory) = map.remove("inventory") {
                hl7_inventory_ok(&inventory);
                // Checked against the tables above; left out of the leak check (a field's name
                // or a table code can share bytes with an input by chance).
                self.push_line(&strip_keys(strip_strings(inventory)).to_string());
            }
            inspect_ok(&mut map);
            &[
                "record",
                "format",
                "messageType",
                "version",
                "segmentCount",
                "segments",
                "warningCount",
                "errorCount",
                "inventory",
            ]
        };
        for k in &keys {
            assert!(allowed.contains(&k.as_str()), "unexpected key {k:?} in a JSON item");
        }
        self.push_line(&Value::Object(map).to_string());
    }

    /// An MCP reply envelope `{ok, status, exit, code?, message?, argument?, detected?,
    /// supported?, support?, redacted?}` without its data, checked field by field against its
    /// grammar and recorded. `message` must be the code's own meaning and `argument` a property
    /// some tool declares; both are then left out of the leak check (program text, as a
    /// diagnostic's meaning is), as are format names, which are checked against the registry.
    #[cfg(feature = "mcp")]
    pub(super) fn reply_envelope(&mut self, v: &Value) {
        let obj = v.as_object().unwrap_or_else(|| panic!("an MCP reply is not an object"));
        let code = obj.get("code").and_then(Value::as_str).and_then(Code::from_name);
        let format_name = |val: &Value| val.as_str().and_then(crate::formats::Format::from_name).is_some();
        let mut kept = serde_json::Map::new();
        for (k, val) in obj {
            let (ok, keep) = match k.as_str() {
                "ok" => (val.is_boolean(), true),
                "status" => (matches!(val.as_str(), Some("success" | "verdict" | "failed")), true),
                "exit" => (val.as_u64().is_some(), true),
                "code" => (code.is_some(), true),
                "message" => (code.is_some_and(|c| val.as_str() == Some(c.meaning())), false),
                "argument" => (
                    code == Some(Code::CLI_USAGE) && val.as_str().is_some_and(|a| declared_arguments().contains(a)),
                    false,
                ),
                "detected" => (code == Some(Code::CLI_FORMAT_UNSUPPORTED) && format_name(val), false),
                "supported" => (
                    code == Some(Code::CLI_FORMAT_UNSUPPORTED)
                        && val.as_array().is_some_and(|list| list.iter().all(format_name)),
                    false,
                ),
                "support" => (
                    code == Some(Code::CLI_FORMAT_UNSUPPORTED)
                        && matches!(val.as_str(), Some("planned" | "not_offered")),
                    true,
                ),
                "truncated" => (code.is_none() && val.is_boolean(), true),
                "cursor" => (code.is_none() && val.as_str().is_some_and(crate::ops::shape::is_cursor), false),
                "page" => (code.is_none() && page_ok(val), false),
                "finding_totals" => (
                    code.is_none()
                        && val.as_object().is_some_and(|m| {
                            m.keys().all(|k| {
                                ["total", "returned", "fatal", "error", "warning", "information"].contains(&k.as_str())
                            }) && m.values().all(|n| n.as_u64().is_some())
                        }),
                    true,
                ),
                _ => (false, false),
            };
            assert!(ok, "MCP reply field {k:?} outside the grammar");
            if keep {
                kept.insert(k.clone(), val.clone());
            }
        }
        self.push_line(&Value::Object(kept).to_string());
    }

    /// What a run logged (see `logs`): field values get both leak checks; message texts, which
    /// are program text, only the exact marker check.
    pub(super) fn log(&mut self, (messages, fields): (Vec<u8>, Vec<u8>)) {
        self.text.extend_from_slice(&fields);
        self.markers_only.extend_from_slice(&messages);
    }

    /// The no-leak check against the value runs of `input`; in marker mode, also no marker.
    pub(super) fn check(&self, input: &[u8], markers: bool) {
        self.check_runs(values::runs(input), markers);
    }

    /// As [`Secondary::check`], with the value runs given.
    pub(super) fn check_runs(&self, runs: Vec<Vec<u8>>, markers: bool) {
        let scrubbed = scrub(&self.text);
        if markers {
            let mut all = scrubbed.clone();
            all.extend_from_slice(&self.markers_only);
            let mut rest = &all[..];
            while let Some(p) = memchr::memmem::find(rest, values::MARKER_PREFIX) {
                let after = &rest[p + 3..];
                let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
                assert!(
                    !(digits > 0 && after.get(digits) == Some(&b'X')),
                    "marker leaked into the secondary channel: {}",
                    String::from_utf8_lossy(&self.text)
                );
                rest = after;
            }
        }
        if !scrubbed.iter().any(|&b| significant(b)) {
            return; // no window with a significant byte can match
        }
        for run in runs {
            for w in run.windows(4) {
                // At least three significant bytes: a window such as `t": ` (one letter and JSON
                // punctuation) also occurs in any structured reply and proves nothing.
                if w.iter().filter(|&&b| significant(b)).count() >= 3 && memchr::memmem::find(&scrubbed, w).is_some() {
                    panic!(
                        "value bytes {:?} leaked into the secondary channel: {}",
                        String::from_utf8_lossy(w),
                        String::from_utf8_lossy(&self.text)
                    );
                }
            }
        }
    }
}

/// A reply's `page`: `{items, start, returned, total}`, items a path of our own model's keys.
#[cfg(feature = "mcp")]
fn page_ok(v: &Value) -> bool {
    v.as_object().is_some_and(|m| {
        m.len() == 4
            && m.get("items").and_then(Value::as_str).is_some_and(crate::ops::shape::is_items_path)
            && ["start", "returned", "total"].iter().all(|k| m.get(*k).is_some_and(|n| n.as_u64().is_some()))
    })
}

/// Every property name some MCP tool's input schema declares, and `name`.
#[cfg(feature = "mcp")]
fn declared_arguments() -> &'static BTreeSet<String> {
    static NAMES: OnceLock<BTreeSet<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        fn walk(v: &Value, out: &mut BTreeSet<String>) {
            match v {
                Value::Object(map) => {
                    if let Some(Value::Object(props)) = map.get("properties") {
                        out.extend(props.keys().cloned());
                    }
                    map.values().for_each(|x| walk(x, out));
                }
                Value::Array(items) => items.iter().for_each(|x| walk(x, out)),
                _ => {}
            }
        }
        // `name`: the tool name of `tools/call` itself, named when no tool has it.
        let mut out = BTreeSet::from(["name".to_owned()]);
        for tool in crate::mcp::definitions() {
            walk(&Value::Object((*tool.input_schema).clone()), &mut out);
        }
        out
    })
}

/// A byte that grammar text (numbers, punctuation) never holds once vocabulary is blanked.
fn significant(b: u8) -> bool {
    b.is_ascii_alphabetic() || b >= 0x80 || (b < 0x20 && b != b'\n')
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Blanks vocabulary words and numbers; what is left should be punctuation and white space.
fn scrub(text: &[u8]) -> Vec<u8> {
    let mut out = text.to_vec();
    // A DICOM tag in a location, `(FF36,FFFF)`: a structural position (group and element
    // numbers), not a value, though its hex digits can match four bytes of a value by chance.
    let hex = |b: u8| b.is_ascii_digit() || (b'A'..=b'F').contains(&b);
    let mut j = 0;
    while j + 11 <= out.len() {
        let w = &out[j..j + 11];
        if w[0] == b'(' && w[5] == b',' && w[10] == b')' && w[1..5].iter().chain(&w[6..10]).all(|&b| hex(b)) {
            out[j..j + 11].fill(b' ');
            j += 11;
        } else {
            j += 1;
        }
    }
    let mut i = 0;
    while i < out.len() {
        if !is_word_byte(out[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < out.len() && is_word_byte(out[i]) {
            i += 1;
        }
        let word = std::str::from_utf8(&out[start..i]).unwrap_or_default();
        if is_vocabulary(word) {
            out[start..i].fill(b' ');
        }
    }
    out
}

/// The codes of the required value set `bundle-type`: inspect copies `Bundle.type` only when it
/// is one of them.
const BUNDLE_TYPES: [&str; 9] = [
    "document",
    "message",
    "transaction",
    "transaction-response",
    "batch",
    "batch-response",
    "history",
    "searchset",
    "collection",
];

fn is_vocabulary(word: &str) -> bool {
    word.bytes().all(|b| b.is_ascii_digit())
        // A finding's fingerprint: 16 lower-case hex digits of a hash.
        || (word.len() == 16 && word.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        || BUNDLE_TYPES.iter().any(|t| t.split('-').any(|w| w == word))
        || segment_ids::schema_name(word.as_bytes()).is_some()
        || vocabulary().contains(word)
        || schema_names().contains(word)
        || fhir_word(word)
        || crate::formats::x12::guide::is_name(word)
        || ccda_word(word)
        || script_word(word)
}

/// An NCPDP SCRIPT name: an element or attribute name of the SCRIPT tables, or a version.
fn script_word(word: &str) -> bool {
    use crate::formats::ncpdp_script::tables::{ATTRIBUTES, NAMES};
    matches!(word, "ncpdp" | "script") || NAMES.contains(&word) || ATTRIBUTES.contains(&word)
}

/// A C-CDA name: an element or attribute name of the CDA tables, the `template` of a
/// location's suffix (whose key is checked against the tables by the location grammar), or
/// `valueSet` and a word of a value set url of the tables (`UnitsOfMeasureCaseSensitive`).
fn ccda_word(word: &str) -> bool {
    use crate::formats::ccda::tables::{CLASSES, NAMES};
    word == "template"
        || word == "CONF"
        || word == "ccda"
        || word == "valueSet"
        || NAMES.contains(&word)
        || CLASSES.iter().any(|c| c.attrs.iter().any(|a| a.name == word))
        || crate::formats::ccda::vs_tables::VALUE_SETS
            .iter()
            .any(|v| v.url.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|w| w == word))
}

/// FHIR names: type names, element names, invariant keys (split at `-`), from the definitions.
fn fhir_names() -> &'static HashSet<&'static str> {
    use crate::formats::fhir::definitions as defs;
    static NAMES: OnceLock<HashSet<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut out = HashSet::new();
        for id in defs::all_types() {
            let t = defs::type_def(id);
            out.insert(t.name);
            out.extend(t.elements.iter().map(|e| e.name).filter(|n| !n.is_empty()));
        }
        for c in defs::constraints() {
            out.extend(c.key.split('-'));
        }
        for key in built_in_invariant_keys() {
            out.extend(key.split('-'));
        }
        // The words of a built-in profile's canonical, which a finding's `profile` names.
        for url in built_in_profile_urls() {
            out.extend(url.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()));
        }
        out
    })
}

/// The invariant keys of the built-in profiles (R4's vital signs profiles, which an Observation's
/// code implies: `vs-1`, `vs-2`...), from the generated `definitions/vitalsigns.json`.
fn built_in_invariant_keys() -> &'static HashSet<&'static str> {
    static KEYS: OnceLock<HashSet<&'static str>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let text = crate::formats::fhir::definitions::VITAL_SIGNS;
        text.match_indices("\"key\":\"")
            .filter_map(|(at, m)| {
                let rest = &text[at + m.len()..];
                rest.find('"').map(|end| &rest[..end])
            })
            .collect()
    })
}

/// The canonicals of the built-in StructureDefinitions (R4's vital signs profiles), from the
/// generated `definitions/vitalsigns.json`.
fn built_in_profile_urls() -> &'static HashSet<&'static str> {
    static URLS: OnceLock<HashSet<&'static str>> = OnceLock::new();
    URLS.get_or_init(|| {
        let text = crate::formats::fhir::definitions::VITAL_SIGNS;
        let key = "\"url\":\"";
        text.match_indices("\"url\":\"http://hl7.org/fhir/StructureDefinition/")
            .filter_map(|(at, _)| {
                let start = at + key.len();
                text[start..].find('"').map(|end| &text[start..start + end])
            })
            .collect()
    })
}

/// A FHIR name, or a choice element rendered with its type (`value` + `DateTime`).
fn fhir_word(word: &str) -> bool {
    let names = fhir_names();
    if names.contains(word) {
        return true;
    }
    word.char_indices().skip(1).any(|(i, c)| {
        if !c.is_ascii_uppercase() || !names.contains(&word[..i]) {
            return false;
        }
        let ty = &word[i..];
        let lower = format!("{}{}", c.to_ascii_lowercase(), &ty[1..]);
        names.contains(ty) || names.contains(lower.as_str())
    })
}

/// Code names, severity words, the words of code meanings, JSON keys and fixed words.
fn vocabulary() -> &'static HashSet<&'static str> {
    static WORDS: OnceLock<HashSet<&'static str>> = OnceLock::new();
    WORDS.get_or_init(|| {
        let mut w: HashSet<&'static str> = HashSet::new();
        for code in Code::ALL {
            w.insert(code.as_str());
            w.extend(
                code.meaning().split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|s| !s.is_empty()),
            );
        }
        w.extend(SEVERITIES.iter().map(|s| s.as_str()));
        w.extend(crate::formats::accepted_names());
        w.extend(crate::formats::Operation::ALL.iter().map(|o| o.as_str()));
        w.extend([
            "phiward",
            "at",
            "segment",
            "offset",
            "record",
            "format",
            "valid",
            "findings",
            "code",
            "severity",
            "location",
            "error",
            "canonical",
            "warnings",
            "segmentCount",
            "segments",
            "warningCount",
            "errorCount",
            "true",
            "false",
            "ok",
            "exit",
            "status",
            "success",
            "verdict",
            "failed",
            "data",
            "records",
            "null",
            "invariant",
            "syntax",
            "json",
            "xml",
            "fhirVersion",
            "resourceType",
            "bundleType",
            "entryCount",
            "entryResourceTypes",
            "issueCount",
            "resources",
            "containedCount",
            "elementCount",
            "unknownElementCount",
            "extensionCount",
            "profileCount",
            "kind",
            "cause",
            "line",
            "column",
            "fingerprint",
            "unparseable",
            "too_large",
            "framing",
            // The DICOM summary's keys (`inspect`), nested ones included.
            "bytes",
            "elements",
            "encapsulated",
            "error_count",
            "file_meta",
            "fragments",
            "frames",
            "items",
            "max_depth",
            "meta_elements",
            "modality",
            "name",
            "pixel_data",
            "preamble",
            "present",
            "private_creators",
            "private_groups",
            "sequences",
            "sop_class",
            "top_level_elements",
            "transfer_syntax",
            "uid",
            "warning_count",
        ]);
        w
    })
}

/// Structure ids, group names and segment ids of every version's schema.
fn schema_names() -> &'static HashSet<&'static str> {
    static NAMES: OnceLock<HashSet<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        fn nodes(out: &mut HashSet<&'static str>, list: &[schema::Node]) {
            for n in list {
                out.insert(n.name);
                out.insert(n.short_name);
                nodes(out, &n.children);
            }
        }
        let mut out = HashSet::new();
        for v in [
            schema::Version::V2_1,
            schema::Version::V2_2,
            schema::Version::V2_3,
            schema::Version::V2_3_1,
            schema::Version::V2_4,
            schema::Version::V2_5,
            schema::Version::V2_5_1,
            schema::Version::V2_6,
            schema::Version::V2_7,
            schema::Version::V2_8,
            schema::Version::V2_8_1,
            schema::Version::V2_8_2,
        ] {
            let Ok(s) = schema::try_schema(v) else { continue };
            for st in s.structures() {
                out.insert(st.id);
                nodes(&mut out, st.children());
            }
        }
        out.extend(schema::known_segment_ids());
        out
    })
}

// ---- grammar ------------------------------------------------------------------------------

fn diagnostic_line_ok(line: &str) {
    let mut parts = line.splitn(3, ' ');
    let (code, sev, loc) = (parts.next(), parts.next(), parts.next());
    assert!(code.and_then(Code::from_name).is_some(), "unregistered code in {line:?}");
    assert!(sev.and_then(severity_from).is_some(), "bad severity in {line:?}");
    assert!(loc.is_some_and(location_ok), "location outside the grammar in {line:?}");
}

fn failure_line_ok(line: &str) {
    let rest = line.strip_prefix("phiward: ").unwrap_or_else(|| panic!("failure line without prefix: {line:?}"));
    let (name, rest) = rest.split_once(": ").unwrap_or_else(|| panic!("failure line without code: {line:?}"));
    let code = Code::from_name(name).unwrap_or_else(|| panic!("unregistered code in {line:?}"));
    let rest =
        rest.strip_prefix(code.meaning()).unwrap_or_else(|| panic!("failure line meaning is not the code's: {line:?}"));
    if rest.is_empty() {
        return;
    }
    let cause = rest.strip_prefix(" (").and_then(|r| r.strip_suffix(')'));
    let (cname, loc) =
        cause.and_then(|c| c.split_once(" at ")).unwrap_or_else(|| panic!("bad failure cause in {line:?}"));
    assert!(Code::from_name(cname).is_some(), "unregistered cause code in {line:?}");
    assert!(location_ok(loc), "cause location outside the grammar in {line:?}");
}

fn findings_ok(v: &Value) {
    let list = v.as_array().unwrap_or_else(|| panic!("findings is not an array"));
    for f in list {
        let obj = f.as_object().unwrap_or_else(|| panic!("a finding is not an object"));
        for (k, v) in obj {
            let ok = match k.as_str() {
                "code" | "severity" | "location" => true,
                "line" | "column" => v.as_u64().is_some_and(|n| n >= 1),
                "fingerprint" => v.as_str().is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit())),
                // The canonical of the profile a finding is against: no package is loaded under
                // the fuzzer, so only a built-in profile (R4's vital signs) can be named.
                "profile" => v.as_str().is_some_and(|p| built_in_profile_urls().contains(p)),
                _ => false,
            };
            assert!(
                ok,
                "a finding has a key {k:?} outside code, severity, location, line, column, fingerprint, profile"
            );
        }
        let s = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or_else(|| panic!("finding without {k}"));
        diagnostic_line_ok(&format!("{} {} {}", s("code"), s("severity"), s("location")));
    }
}

/// Checks an inspect summary and removes the two pattern-checked code fields.
fn inspect_ok(map: &mut serde_json::Map<String, Value>) {
    let unknown = crate::formats::hl7v2::inspect::UNKNOWN;
    if let Some(t) = map.remove("messageType") {
        let t = t.as_str().unwrap_or_default();
        let ok = t == unknown || crate::formats::hl7v2::validate::message_type_ok(t.as_bytes(), b'^', b'&');
        assert!(ok && t.len() <= 24, "messageType does not match the pattern: {t:?}");
    }
    if let Some(v) = map.remove("version") {
        let v = v.as_str().unwrap_or_default();
        let ok = v == unknown || crate::formats::hl7v2::schema::Version::parse(v.as_bytes()).is_some();
        assert!(ok, "version is not a known version: {v:?}");
    }
    for k in ["segmentCount", "warningCount", "errorCount"] {
        assert!(map.get(k).and_then(Value::as_u64).is_some(), "inspect {k} is not a number");
    }
    let segs = map.get("segments").and_then(Value::as_object).unwrap_or_else(|| panic!("inspect segments missing"));
    for (id, n) in segs {
        assert!(
            id == "?" || segment_ids::schema_name(id.as_bytes()).is_some(),
            "inspect segment key {id:?} is not a schema id"
        );
        assert!(n.as_u64().is_some_and(|n| n >= 1), "inspect segment count is not positive");
    }
}

/// Checks an HL7 v2 inventory: segment ids, names, data types and table codes each from some
/// version's tables; counts are numbers.
fn hl7_inventory_ok(inventory: &Value) {
    use crate::formats::hl7v2::schema::{self, Version};
    let schemas: Vec<&'static schema::Schema> =
        Version::ALL.into_iter().filter_map(|v| schema::try_schema(v).ok()).collect();
    let segments = inventory.as_array().unwrap_or_else(|| panic!("HL7 inventory is not a list"));
    for seg in segments {
        let id = seg["segment"].as_str().unwrap_or_default();
        assert!(id == "?" || segment_ids::schema_name(id.as_bytes()).is_some(), "inventory segment {id:?}");
        if let Some(name) = seg.get("name") {
            let name = name.as_str().unwrap_or_default();
            assert!(
                schemas.iter().any(|s| s.segment(id.as_bytes()).is_some_and(|d| d.name == name)),
                "inventory segment name is not a table's"
            );
        }
        assert!(seg["count"].as_u64().is_some_and(|n| n >= 1), "inventory count");
        for f in seg["fields"].as_array().unwrap_or_else(|| panic!("inventory fields")) {
            let field = f["field"].as_str().unwrap_or_default();
            let n = field.strip_prefix(id).and_then(|r| r.strip_prefix('-')).and_then(number);
            let n = n.unwrap_or_else(|| panic!("inventory field {field:?} is not {id}-N"));
            let def = |s: &&schema::Schema| s.field(id.as_bytes(), n as usize).cloned();
            for (key, get) in [("name", 0), ("dataType", 1)] {
                if let Some(v) = f.get(key) {
                    let v = v.as_str().unwrap_or_default();
                    let ok =
                        schemas.iter().filter_map(def).any(|d| if get == 0 { d.name == v } else { d.data_type == v });
                    assert!(ok, "inventory field {key} is not a table's");
                }
            }
            for k in ["present", "repetitions"] {
                assert!(f[k].as_u64().is_some(), "inventory {k}");
            }
            let table = f.get("table").and_then(Value::as_str).map(|t| t.parse::<u16>().unwrap_or(u16::MAX));
            if let Some(codes) = f.get("codes").and_then(Value::as_object) {
                let table = table.unwrap_or_else(|| panic!("inventory codes without a table"));
                for (code, count) in codes {
                    let ok = schemas.iter().filter_map(|s| s.table(table)).any(|t| t.contains(code.as_bytes()));
                    assert!(ok && count.as_u64().is_some(), "inventory code is not an entry of table {table}");
                }
            }
        }
    }
}

/// Checks a FHIR inventory: resource types and element paths from the definitions, value sets
/// bundled, and codes that are entries of them.
fn fhir_inventory_ok(inventory: &Value) {
    use crate::formats::fhir::definitions as defs;
    let types = inventory.as_array().unwrap_or_else(|| panic!("FHIR inventory is not a list"));
    let path_ok = |p: &str| p.split('.').all(fhir_word);
    for t in types {
        assert!(fhir_word(t["resourceType"].as_str().unwrap_or_default()), "inventory resourceType");
        assert!(t["count"].as_u64().is_some(), "inventory count");
        for e in t["elements"].as_array().unwrap_or_else(|| panic!("inventory elements")) {
            assert!(path_ok(e["path"].as_str().unwrap_or_default()), "inventory element path");
            assert!(e["count"].as_u64().is_some(), "inventory element count");
        }
        for c in t.get("codes").and_then(Value::as_array).into_iter().flatten() {
            assert!(path_ok(c["path"].as_str().unwrap_or_default()), "inventory code path");
            let url = c["valueSet"].as_str().unwrap_or_default();
            let vs = defs::bundled_value_set(url.as_bytes()).flatten();
            let vs = vs.unwrap_or_else(|| panic!("inventory value set is not bundled"));
            for (code, n) in c.get("codes").and_then(Value::as_object).into_iter().flatten() {
                assert!(
                    vs.canonical(None, code.as_bytes()) == Some(code.as_str()),
                    "inventory code not in its value set"
                );
                assert!(n.as_u64().is_some(), "inventory code count");
            }
        }
    }
}

/// Checks a FHIR inspect summary: names from the definitions, fixed words, numbers.
fn fhir_inspect_ok(map: &serde_json::Map<String, Value>) {
    for (k, v) in map {
        assert!(k.bytes().all(|b| b.is_ascii_alphabetic()), "FHIR summary key {k:?} is not an identifier");
        match v {
            Value::String(text) => {
                let ok = matches!(text.as_str(), "fhir" | "json" | "xml" | "4.0.1")
                    || fhir_word(text)
                    || (k == "bundleType" && BUNDLE_TYPES.contains(&text.as_str()));
                assert!(ok, "FHIR summary {k} is not a schema name: {text:?}");
            }
            Value::Number(_) => {}
            Value::Object(inner) => {
                for (name, n) in inner {
                    assert!(fhir_word(name), "FHIR summary key {name:?} is not a schema name");
                    assert!(n.as_u64().is_some(), "FHIR summary count is not a number");
                }
            }
            Value::Bool(_) => {}
            _ => panic!("FHIR summary {k} has an unexpected kind"),
        }
    }
}

fn number(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0')) {
        return None;
    }
    s.parse().ok()
}

/// The location grammar of `diag`.
pub(super) fn location_ok(s: &str) -> bool {
    if s == "-" {
        return true;
    }
    if let Some(n) = s.strip_prefix("offset:") {
        return number(n).is_some();
    }
    if let Some(n) = s.strip_prefix("record:") {
        return number(n).is_some_and(|n| n >= 1);
    }
    if let Some((v2, target)) = s.split_once("->") {
        // A conversion: the v2 position, then a FHIR element path of definition names or `-`.
        return hl7_location_ok(v2) && (target == "-" || fhir_location_ok(target));
    }
    hl7_location_ok(s)
        || path_ok(s)
        || fhir_location_ok(s)
        || x12_location_ok(s)
        || astm_location_ok(s)
        || dicom_location_ok(s)
        || ncpdp_location_ok(s)
        || ccda_location_ok(s)
        || script_location_ok(s)
}

/// `Message/Body/NewRx/MedicationPrescribed[2]/Quantity/Value`, `Message/Header/To/@Qualifier`:
/// names of the SCRIPT tables (or `*`, `...`) with indexes, then an attribute of the tables.
fn script_location_ok(s: &str) -> bool {
    use crate::formats::ncpdp_script::tables::{ATTRIBUTES, NAMES};
    let (path, attr) = match s.split_once("/@") {
        Some((p, a)) => (p, Some(a)),
        None => (s, None),
    };
    if attr.is_some_and(|a| !ATTRIBUTES.contains(&a)) {
        return false;
    }
    let mut steps = path.split('/');
    if steps.next() != Some("Message") {
        return false;
    }
    steps.all(|step| {
        let (name, index) = match step.split_once('[') {
            Some((n, i)) => (n, i.strip_suffix(']').and_then(number).filter(|&i| i >= 1)),
            None => (step, Some(1)),
        };
        index.is_some() && (name == "*" || name == "..." || NAMES.contains(&name))
    })
}

/// Checks an NCPDP SCRIPT inspect summary: fixed keys; the version, the message type and the
/// part names from the tables; numbers.
fn script_inspect_ok(map: &serde_json::Map<String, Value>) {
    use crate::formats::ncpdp_script::tables::{MESSAGE_TYPES, NAMES};
    const KEYS: &[&str] = &[
        "record",
        "format",
        "version",
        "messageType",
        "elementCount",
        "medicationCount",
        "parts",
        "errorCount",
        "warningCount",
    ];
    for (k, v) in map {
        assert!(KEYS.contains(&k.as_str()), "SCRIPT summary key {k:?} is not fixed");
        match (k.as_str(), v) {
            ("format", Value::String(t)) => assert_eq!(t, "ncpdp-script"),
            ("version", Value::String(t)) => assert!(["10.6", "2017071", "unknown"].contains(&t.as_str())),
            ("messageType", Value::String(t)) => {
                assert!(t == "unknown" || MESSAGE_TYPES.iter().any(|m| m.0 == t), "SCRIPT message type {t:?}")
            }
            ("parts", Value::Object(parts)) => {
                for (name, n) in parts {
                    assert!(name == "*" || NAMES.contains(&name.as_str()), "SCRIPT part {name:?}");
                    assert!(n.is_u64(), "SCRIPT part count");
                }
            }
            (_, Value::Number(_)) => {}
            _ => panic!("SCRIPT summary value of {k:?} is not of its kind"),
        }
    }
}

/// `ClinicalDocument/component/structuredBody/component[3]/section/entry[2]/act/@moodCode/template:R:E`
/// (a fragment: from its top-level element, `component[2]/section/...`):
/// names of the CDA tables (or `*`, `...`) with indexes, then an attribute name of the tables,
/// then a template key or root of the tables, then `/valueSet:URL`, a value set of the tables.
fn ccda_location_ok(s: &str) -> bool {
    use crate::formats::ccda::tables::{CLASSES, NAMES, TEMPLATES};
    let (s, value_set) = match s.split_once("/valueSet:") {
        Some((p, v)) => (p, Some(v)),
        None => (s, None),
    };
    if value_set.is_some_and(|v| !crate::formats::ccda::vs_tables::VALUE_SETS.iter().any(|x| x.url == v)) {
        return false;
    }
    let (path, template) = match s.split_once("/template:") {
        Some((p, t)) => (p, Some(t)),
        None => (s, None),
    };
    // A 5.0 template's key or root, or an R2.1 template's assertion (`root:extension/CONF:n-n`).
    let known = |t: &str| {
        TEMPLATES.iter().any(|x| x.key == t || x.root == t)
            || crate::formats::ccda::r21_tables::R21_TEMPLATES.iter().any(|x| x.asserts.iter().any(|a| a.key == t))
    };
    if template.is_some_and(|t| !known(t)) {
        return false;
    }
    let (path, attr) = match path.split_once("/@") {
        Some((p, a)) => (p, Some(a)),
        None => (path, None),
    };
    if attr.is_some_and(|a| !CLASSES.iter().any(|c| c.attrs.iter().any(|x| x.name == a))) {
        return false;
    }
    // The root: `ClinicalDocument`, or a fragment's top-level element (`section`,
    // `component[2]`), a name of the definitions.
    let mut steps = path.split('/');
    let root_ok = steps.next().is_some_and(|root| {
        let name = root.split_once('[').map_or(root, |(n, _)| n);
        name != "*" && name != "..." && NAMES.contains(&name)
    });
    root_ok
        && path.split('/').all(|step| {
            let (name, index) = match step.split_once('[') {
                Some((n, i)) => (n, i.strip_suffix(']').and_then(number).filter(|&i| i >= 1)),
                None => (step, Some(1)),
            };
            index.is_some() && (name == "*" || name == "..." || NAMES.contains(&name))
        })
}

/// Checks a C-CDA inspect summary: fixed keys; titles, template keys and section codes of the
/// generated tables (or `unknown`); numbers and booleans.
fn ccda_inspect_ok(map: &serde_json::Map<String, Value>) {
    use crate::formats::ccda::tables::TEMPLATES;
    const KEYS: &[&str] = &[
        "record",
        "format",
        "documentType",
        "templates",
        "unknownTemplates",
        "structuredBody",
        "sections",
        "errorCount",
        "warningCount",
    ];
    let title = |t: &str| t == "unknown" || TEMPLATES.iter().any(|x| x.title == t);
    let key = |t: &str| t == "unknown" || TEMPLATES.iter().any(|x| x.key == t);
    let code = |t: &str| t == "unknown" || TEMPLATES.iter().any(|x| x.code == t);
    for (k, v) in map {
        assert!(KEYS.contains(&k.as_str()), "C-CDA summary key {k:?} is not fixed");
        match (k.as_str(), v) {
            ("format", Value::String(t)) => assert_eq!(t, "ccda"),
            ("documentType", Value::String(t)) => assert!(title(t), "C-CDA document type {t:?}"),
            ("templates", Value::Array(a)) => {
                assert!(a.iter().all(|t| t.as_str().is_some_and(key)), "C-CDA templates not from the tables")
            }
            ("sections", Value::Array(a)) => {
                for sec in a {
                    let o = sec.as_object().unwrap_or_else(|| panic!("C-CDA section is not an object"));
                    for (sk, sv) in o {
                        let ok = match (sk.as_str(), sv) {
                            ("code", Value::String(t)) => code(t),
                            ("title", Value::String(t)) => title(t),
                            ("templates", Value::Array(t)) => t.iter().all(|t| t.as_str().is_some_and(key)),
                            ("entries", Value::Object(e)) => e.iter().all(|(ek, n)| key(ek) && n.as_u64().is_some()),
                            ("entryCount", Value::Number(_)) => true,
                            _ => false,
                        };
                        assert!(ok, "C-CDA section {sk} is not from the tables");
                    }
                }
            }
            (_, Value::Number(_) | Value::Bool(_)) => {}
            _ => panic!("C-CDA summary {k} has an unexpected kind"),
        }
    }
}

/// `(0008,1140)[2].(0008,1155)/offset:1234`, `(0010,0010)`, with `...` for steps left out.
fn dicom_location_ok(s: &str) -> bool {
    let (path, offset) = match s.split_once("/offset:") {
        Some((p, o)) => (p, Some(o)),
        None => (s, None),
    };
    if offset.is_some_and(|o| number(o).is_none()) || path.is_empty() {
        return false;
    }
    let hex4 = |h: &str| h.len() == 4 && h.bytes().all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b));
    path.split("...").flat_map(|part| part.split('.')).all(|step| {
        let (tag, item) = match step.split_once('[') {
            Some((t, rest)) => (t, rest.strip_suffix(']').map(number)),
            None => (step, None),
        };
        let tag_ok = tag
            .strip_prefix('(')
            .and_then(|t| t.strip_suffix(')'))
            .and_then(|t| t.split_once(','))
            .is_some_and(|(g, e)| hex4(g) && hex4(e));
        tag_ok && item.is_none_or(|n| n.is_some_and(|n| n >= 1))
    })
}

/// A JSON value with its strings emptied (numbers, booleans and structure kept).
/// Objects become arrays of their values: for a summary whose keys were checked to be names of
/// the tables (C-CDA section keys, template keys of entry counts).
fn strip_keys(v: Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.into_iter().map(strip_keys).collect()),
        Value::Object(m) => Value::Array(m.into_iter().map(|(_, v)| strip_keys(v)).collect()),
        other => other,
    }
}

fn strip_strings(v: Value) -> Value {
    match v {
        Value::String(_) => Value::String(String::new()),
        Value::Array(a) => Value::Array(a.into_iter().map(strip_strings).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, strip_strings(v))).collect()),
        other => other,
    }
}

/// Checks a DICOM inspect summary: its strings are names and UIDs of the standard's tables,
/// defined terms or the summary's own words; everything else is numbers and booleans.
fn dicom_inspect_ok(v: &Value) {
    match v {
        Value::String(s) => assert!(crate::formats::dicom::write::is_summary_text(s), "DICOM summary text {s:?}"),
        Value::Object(m) => m.values().for_each(dicom_inspect_ok),
        Value::Array(a) => a.iter().for_each(dicom_inspect_ok),
        Value::Number(_) | Value::Bool(_) | Value::Null => {}
    }
}

/// `ISA-13`, `GS[1]/GE-01`, `ST[3]/2000B/2010BA/NM1[1]-03`, `ST[1]/segment[7]`, `CLM[1]-05.1`.
fn x12_location_ok(s: &str) -> bool {
    use crate::formats::x12::guide;
    let (body, element) = match s.rsplit_once('-') {
        Some((b, e)) if e.len() >= 2 && !e.contains('/') => (b, Some(e)),
        _ => (s, None),
    };
    if let Some(e) = element {
        let (el, comp) = match e.split_once('.') {
            Some((a, b)) => (a, Some(b)),
            None => (e, None),
        };
        // Two digits, zero-padded (`-02`), from 01.
        let two_digits = el.len() == 2 && el.bytes().all(|b| b.is_ascii_digit()) && el != "00";
        if !two_digits || comp.is_some_and(|c| number(c).is_none_or(|n| n == 0)) {
            return false;
        }
    }
    let indexed = |p: &str| -> Option<(String, bool)> {
        match p.split_once('[') {
            Some((name, rest)) => rest.strip_suffix(']').and_then(number).map(|_| (name.to_owned(), true)),
            None => Some((p.to_owned(), false)),
        }
    };
    let parts: Vec<&str> = body.split('/').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return false;
    }
    parts.iter().enumerate().all(|(i, p)| {
        let Some((name, has_index)) = indexed(p) else { return false };
        if i == 0 && has_index && (name == "GS" || name == "ST") {
            return true;
        }
        if name == "segment" {
            return has_index && i + 1 == parts.len();
        }
        guide::segment_id(name.as_bytes()).is_some() || (!has_index && guide::loop_exists(&name))
    })
}

/// Checks an X12 inspect summary: fixed keys, names from the guides' tables, numbers.
fn x12_inspect_ok(map: &serde_json::Map<String, Value>) {
    use crate::formats::x12::guide;
    for (k, v) in map {
        assert!(guide::is_name(k) || k == "record" || k == "format", "X12 summary key {k:?} is not fixed");
        match v {
            Value::String(text) => {
                assert!(text == "x12" || guide::is_name(text), "X12 summary {k} is not a name: {text:?}")
            }
            Value::Number(_) => {}
            Value::Array(items) => {
                for t in items {
                    assert!(t.as_str().is_some_and(guide::is_name), "X12 summary {k} holds a non-name");
                }
            }
            Value::Object(inner) => {
                for (name, n) in inner {
                    assert!(name == "?" || guide::is_name(name), "X12 summary key {name:?} is not a name");
                    assert!(n.as_u64().is_some(), "X12 summary count is not a number");
                }
            }
            _ => panic!("X12 summary {k} has an unexpected kind"),
        }
    }
}

/// `Type.element[n].valueQuantity`, `...` for steps left out, then optionally `/offset:N` and
/// `/invariant:key`; `-` for the empty path.
fn fhir_location_ok(s: &str) -> bool {
    let mut parts = s.split('/');
    let main = parts.next().unwrap_or_default();
    let mut seen_invariant = false;
    for q in parts {
        if let Some(n) = q.strip_prefix("offset:") {
            if number(n).is_none() || seen_invariant {
                return false;
            }
        } else if let Some(key) = q.strip_prefix("invariant:") {
            let known = crate::formats::fhir::definitions::constraints().iter().any(|c| c.key == key)
                || built_in_invariant_keys().contains(key);
            if !known || seen_invariant {
                return false;
            }
            seen_invariant = true;
        } else {
            return false;
        }
    }
    if main == "-" {
        return true;
    }
    let main = main.replace("...", ".");
    !main.is_empty()
        && main.split('.').all(|step| {
            let (name, index) = match step.split_once('[') {
                Some((n, rest)) => (n, Some(rest)),
                None => (step, None),
            };
            fhir_word(name) && index.is_none_or(|i| i.strip_suffix(']').and_then(number).is_some())
        })
}

/// `SEG[n]` or `segment[n]`, then optionally `-f`, `[r]`, `.c`, `.s`.
fn hl7_location_ok(s: &str) -> bool {
    let Some((seg, rest)) = s.split_once('[') else { return false };
    if seg != "segment" && segment_ids::schema_name(seg.as_bytes()).is_none() {
        return false;
    }
    let Some((idx, mut rest)) = rest.split_once(']') else { return false };
    if number(idx).is_none() {
        return false;
    }
    if rest.is_empty() {
        return true;
    }
    let Some(r) = rest.strip_prefix('-') else { return false };
    let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
    if number(&r[..end]).is_none_or(|n| n == 0) {
        return false;
    }
    rest = &r[end..];
    if let Some(r) = rest.strip_prefix('[') {
        let Some((rep, after)) = r.split_once(']') else { return false };
        if number(rep).is_none_or(|n| n == 0) {
            return false;
        }
        rest = after;
    }
    if rest.is_empty() {
        return true;
    }
    let Some(r) = rest.strip_prefix('.') else { return false };
    let mut parts = r.split('.');
    let comp = parts.next();
    let sub = parts.next();
    parts.next().is_none()
        && comp.and_then(number).is_some_and(|n| n > 0)
        && sub.is_none_or(|s| number(s).is_some_and(|n| n > 0))
}

/// `Structure.Group/SEG`: every name is a name of the standard's schema.
fn path_ok(s: &str) -> bool {
    let (a, b) = s.split_once('/').unwrap_or((s, ""));
    let names = schema_names();
    let name_ok = |n: &str| names.contains(n) || segment_ids::schema_name(n.as_bytes()).is_some();
    !a.is_empty() && a.split('.').all(name_ok) && (b.is_empty() || b.split('.').all(name_ok))
}

// ---- positions ----------------------------------------------------------------------------

/// A diagnostic's location is inside the input: offsets within `[0, limit]`.
pub(super) fn offset_inside(d: &Diagnostic, limit: u64) {
    let n = match d.location {
        Location::Offset(n) => n,
        Location::Fhir(p) => p.offset.map_or(0, u64::from),
        _ => 0,
    };
    assert!(n <= limit, "{} at offset {n} past the end of the input ({limit})", d.code.as_str());
}

/// An HL7 v2 position names a segment, field, repetition, component and subcomponent that exist
/// in `msg`. `MSH_FIELD_MISSING` names a field that may be absent.
pub(super) fn hl7_position_inside(msg: &Message, d: &Diagnostic) {
    let Location::Hl7(p) = d.location else { return };
    let what = d.code.as_str();
    assert!(p.index >= 1, "{what}: segment index 0");
    let seg = match p.segment {
        Some(id) => msg.segments().filter(|s| s.name() == Some(id)).nth(p.index as usize - 1),
        None => msg.segments().nth(p.index as usize - 1).filter(|s| s.name().is_none()),
    };
    let Some(seg) = seg else { panic!("{what}: no segment at {}", d.location) };
    if p.field == 0 {
        assert!(p.repetition == 0 && p.component == 0 && p.subcomponent == 0, "{what}: parts without a field");
        return;
    }
    // These codes name what is absent: the segment exists, the field (or component) may not.
    if d.code == Code::MSH_FIELD_MISSING {
        assert!(seg.is_header() && p.field >= 3, "{what}: not a header field at {}", d.location);
        return;
    }
    if d.code == Code::FIELD_REQUIRED_MISSING {
        return;
    }
    let Some(field) = seg.field(p.field) else { panic!("{what}: no field at {}", d.location) };
    if d.code == Code::COMPONENT_REQUIRED_MISSING {
        let p = Hl7Position { component: 0, subcomponent: 0, ..p };
        part_inside(field, p, what);
        return;
    }
    part_inside(field, p, what);
}

fn part_inside(field: crate::formats::hl7v2::parse::FieldRef<'_>, p: Hl7Position, what: &str) {
    if !field.is_splittable() {
        assert!(p.repetition <= 1 && p.component <= 1 && p.subcomponent <= 1, "{what}: parts of MSH-1/MSH-2");
        return;
    }
    let d = field.delimiters();
    let rep_no = p.repetition.max(1) as usize;
    let Some(rep) = field.repetitions().nth(rep_no - 1) else { panic!("{what}: no repetition {rep_no}") };
    if p.component == 0 {
        assert_eq!(p.subcomponent, 0, "{what}: subcomponent without component");
        return;
    }
    let Some(comp) = rep.split(Some(d.component)).nth(p.component as usize - 1) else {
        panic!("{what}: no component {}", p.component)
    };
    if p.subcomponent > 0 {
        let n = comp.split(Some(d.subcomponent)).count();
        assert!(p.subcomponent as usize <= n, "{what}: no subcomponent {}", p.subcomponent);
    }
}

/// `P[1]-6[2].1`, `record[7]`, `frame[3]/offset:120`.
fn astm_location_ok(s: &str) -> bool {
    use crate::formats::astm::read::RECORD_TYPES;
    if let Some(rest) = s.strip_prefix("frame[") {
        let Some((n, off)) = rest.split_once("]/offset:") else { return false };
        return number(n).is_some_and(|n| n >= 1) && number(off).is_some();
    }
    let (head, tail) = match s.split_once('-') {
        Some((h, t)) => (h, Some(t)),
        None => (s, None),
    };
    let Some((name, index)) = head.split_once('[') else { return false };
    let index_ok = index.strip_suffix(']').and_then(number).is_some_and(|n| n >= 1);
    if !index_ok || !(name == "record" || RECORD_TYPES.contains(&name)) {
        return false;
    }
    let Some(t) = tail else { return true };
    let (field, comp) = match t.split_once('.') {
        Some((f, c)) => (f, Some(c)),
        None => (t, None),
    };
    let (field, rep) = match field.split_once('[') {
        Some((f, r)) => (f, Some(r)),
        None => (field, None),
    };
    number(field).is_some_and(|n| n >= 1)
        && rep.is_none_or(|r| r.strip_suffix(']').and_then(number).is_some_and(|n| n >= 1))
        && comp.is_none_or(|c| number(c).is_some_and(|n| n >= 1))
}

/// Checks an ASTM inspect summary: fixed keys, record types, fixed codes, delimiter characters
/// (one ASCII punctuation character each), numbers and booleans.
fn astm_inspect_ok(map: &serde_json::Map<String, Value>) {
    use crate::formats::astm::read::RECORD_TYPES;
    use crate::formats::astm::write::{PROCESSING_IDS, VERSIONS};
    const KEYS: [&str; 13] = [
        "record",
        "format",
        "recordType",
        "recordCount",
        "records",
        "framed",
        "frameCount",
        "delimiters",
        "processingId",
        "version",
        "warningCount",
        "errorCount",
        "offset",
    ];
    for (k, v) in map {
        assert!(KEYS.contains(&k.as_str()), "ASTM summary key {k:?} is not fixed");
        match (k.as_str(), v) {
            ("format", Value::String(t)) => assert_eq!(t, "astm"),
            ("recordType", Value::String(t)) => assert_eq!(t, "message"),
            ("processingId", Value::String(t)) => assert!(PROCESSING_IDS.contains(&t.as_str()), "processing id {t:?}"),
            ("version", Value::String(t)) => {
                assert!(t == "unknown" || VERSIONS.contains(&t.as_str()), "ASTM version {t:?}")
            }
            ("framed", Value::Bool(_)) => {}
            ("records", Value::Object(inner)) => {
                for (name, n) in inner {
                    assert!(name == "?" || RECORD_TYPES.contains(&name.as_str()), "ASTM record type {name:?}");
                    assert!(n.as_u64().is_some(), "ASTM summary count is not a number");
                }
            }
            ("delimiters", Value::Object(inner)) => {
                for (name, c) in inner {
                    assert!(["field", "repeat", "component", "escape"].contains(&name.as_str()));
                    let c = c.as_str().unwrap_or_default();
                    assert!(c.len() == 1 && c.bytes().all(|b| b.is_ascii_punctuation()), "ASTM delimiter {c:?}");
                }
            }
            (_, Value::Number(_)) => {}
            _ => panic!("ASTM summary {k} has an unexpected kind"),
        }
    }
}

/// `header/A3`, `AM04/C2`, `transaction[2]/AM07/D7[2]`, `transaction[1]/segment[3]/field[4]`,
/// `transaction[1]`, `transmission`: ids from the D.0 tables only.
fn ncpdp_location_ok(s: &str) -> bool {
    use crate::formats::ncpdp::tables::{FIELDS, REQUEST_HEADER, RESPONSE_HEADER, SEGMENTS};
    if s == "transmission" {
        return true;
    }
    let indexed = |t: &str, name: &str, min: u64| {
        t.strip_prefix(name)
            .and_then(|r| r.strip_prefix('['))
            .and_then(|r| r.strip_suffix(']'))
            .and_then(number)
            .is_some_and(|n| n >= min)
    };
    let mut parts: Vec<&str> = s.split('/').collect();
    if parts.first().is_some_and(|p| p.starts_with("transaction[")) {
        if !indexed(parts[0], "transaction", 1) {
            return false;
        }
        parts.remove(0);
        if parts.is_empty() {
            return true;
        }
    }
    match parts.as_slice() {
        ["header", id] => REQUEST_HEADER.iter().chain(RESPONSE_HEADER).any(|h| h.0 == *id),
        [seg, rest @ ..] if rest.len() <= 1 => {
            let seg_ok = SEGMENTS.iter().any(|x| x.0 == *seg) || indexed(seg, "segment", 1);
            let field_ok = rest.first().is_none_or(|f| {
                indexed(f, "field", 1)
                    || match f.split_once('[') {
                        Some((id, _)) => FIELDS.iter().any(|x| x.0 == id) && indexed(f, id, 2),
                        None => FIELDS.iter().any(|x| x.0 == *f),
                    }
            });
            seg_ok && field_ok
        }
        _ => false,
    }
}

/// Checks an NCPDP inspect summary: fixed keys, the D.0 tables' segment ids and transaction
/// codes, numbers.
fn ncpdp_inspect_ok(map: &serde_json::Map<String, Value>) {
    use crate::formats::ncpdp::tables::{HEADER_STATUS, SEGMENTS, TRANSACTION_CODES};
    use crate::formats::ncpdp::write::UNKNOWN;
    const KEYS: [&str; 15] = [
        "record",
        "offset",
        "format",
        "recordType",
        "version",
        "transactionCode",
        "transactionCount",
        "groupCount",
        "headerStatus",
        "segments",
        "transactions",
        "segmentCount",
        "fieldCount",
        "warningCount",
        "errorCount",
    ];
    let segments_ok = |v: &Value| {
        let ids = v.as_array().expect("NCPDP segments are a list");
        for id in ids {
            let id = id.as_str().unwrap_or_default();
            assert!(id == UNKNOWN || SEGMENTS.iter().any(|s| s.0 == id), "NCPDP segment id {id:?}");
        }
    };
    for (k, v) in map {
        assert!(KEYS.contains(&k.as_str()), "NCPDP summary key {k:?} is not fixed");
        match (k.as_str(), v) {
            ("format", Value::String(t)) => assert_eq!(t, "ncpdp"),
            ("recordType", Value::String(t)) => assert!(t == "request" || t == "response", "NCPDP kind {t:?}"),
            ("version", Value::String(t)) => assert!(t == "D0" || t == UNKNOWN, "NCPDP version {t:?}"),
            ("transactionCode", Value::String(t)) => {
                assert!(t == UNKNOWN || TRANSACTION_CODES.iter().any(|c| c.0 == t), "NCPDP transaction code {t:?}")
            }
            ("headerStatus", Value::String(t)) => {
                assert!(t == UNKNOWN || HEADER_STATUS.contains(&t.as_str()), "NCPDP header status {t:?}")
            }
            ("segments", v) => segments_ok(v),
            ("transactions", Value::Array(list)) => {
                for t in list {
                    let t = t.as_object().expect("NCPDP transaction summary");
                    for (k, v) in t {
                        match k.as_str() {
                            "segments" => segments_ok(v),
                            "fieldCount" => assert!(v.as_u64().is_some()),
                            _ => panic!("NCPDP transaction summary key {k:?} is not fixed"),
                        }
                    }
                }
            }
            (_, Value::Number(_)) => {}
            _ => panic!("NCPDP summary {k} has an unexpected kind"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_grammar() {
        for ok in [
            "-",
            "offset:0",
            "offset:17",
            "record:3",
            "PID[1]",
            "PID[1]-5[1].1.2",
            "segment[7]-3",
            "ZPD[2]-1.1",
            "MSH[1]-12[1].1",
            "PID[1]-8[1]->Patient.gender",
            "ZPI[1]->-",
            "OBX[3]-5[1].2->Observation.valueQuantity",
            "transmission",
            "header/A3",
            "header/F1",
            "AM04/C2",
            "transaction[2]",
            "transaction[2]/AM07/D7",
            "transaction[1]/AM07/D2[2]",
            "transaction[1]/segment[3]/field[4]",
            "segment[2]",
        ] {
            assert!(location_ok(ok), "{ok}");
        }
        for bad in [
            "",
            "offset:",
            "offset:01",
            "record:0",
            "JOHN[1]",
            "PID[1]-",
            "PID[1]-0",
            "PID[1]-5[1].1.2.3",
            "PID[x]",
            "Doe/PID",
            "PID[1]->",
            "JOHN[1]->Patient.gender",
            "header/JO",
            "transaction[0]/AM07",
            "transaction[1]/AM99",
            "AM07/ZZ",
            "AM07/D7[1]",
            "AM07/D7/E1",
            "transaction[1]/transaction[1]",
        ] {
            assert!(!location_ok(bad), "{bad}");
        }
    }

    #[test]
    fn scrub_keeps_only_foreign_words() {
        let s = scrub(b"ESCAPE_UNKNOWN warning PID[1]-5 the input JOHN");
        let left: Vec<u8> = s.into_iter().filter(|b| b.is_ascii_alphanumeric()).collect();
        assert_eq!(left, b"JOHN");
    }
}
