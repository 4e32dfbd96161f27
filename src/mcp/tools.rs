//! The message tools (`parse`, `validate`, `inspect`, `convert`, `redact`): names, titles, descriptions,
//! annotations, input schemas and output schemas, as `tools/list` shows them.
//!
//! The descriptions name the formats each operation supports in this build: they are read from
//! the support matrix ([`Format::supports`]), so they cannot drift from what the tools do.
//!
//! The output schema is the reply envelope of [`super::dispatch::Reply`]: `ok`, `status`,
//! `exit`, `code` (failed only) and `data` (absent when failed), where `data` is what
//! `phiward <tool> --json` prints for the same input: one object, or `{"records": [...]}` for a
//! multi-record input.
//!
//! What it does not do: run anything (see [`super::dispatch`]) or validate arguments against
//! these schemas (arguments are read by our own code, which ignores undeclared properties).

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool as McpTool, ToolAnnotations};
use serde_json::{Map, Value, json};

use crate::formats::Format;

pub use crate::call::Tool;

impl Tool {
    fn title(self) -> &'static str {
        match self {
            Tool::Parse => "Parse a healthcare message",
            Tool::Validate => "Validate a healthcare message",
            Tool::Inspect => "Summarize a healthcare message",
            Tool::Convert => "Convert a healthcare message to FHIR R4",
            Tool::Redact => "De-identify a healthcare message",
        }
    }

    fn description(self) -> String {
        let what = match self {
            Tool::Parse => {
                "Use this when you need a message's contents as JSON, escapes decoded. HL7 v2 comes \
                 named (`\"5 patient_name\": [{\"1 family_name\": ...}]`; `model: positional` for \
                 arrays). `data` is `{format, model, warnings}` (or `{records}`). It carries values, \
                 as do convert, redact and map_codes: under a redacting policy, redacted (see \
                 `redacted`)."
            }
            Tool::Validate => {
                "Use this to check whether a message conforms to its standard. `data` is `{format, \
                 valid, findings}` (or `{records}`); a finding is a code, a severity and a location \
                 (`PID[1]-5[1].1`), never a value. An invalid message is status `verdict`, `ok` false."
            }
            Tool::Inspect => {
                "Use this for a quick look at a message without its contents: type, version, segment \
                 or resource counts, finding counts. `data` is a value-free summary (or `{records}`)."
            }
            Tool::Convert => {
                "Use this to turn an HL7 v2 message into a FHIR R4 Bundle. `data` is `{format, bundle, \
                 findings}`; the value-free findings list what was not mapped. `bundle_type`: message \
                 (default), collection, transaction; `default_timezone` (+HH:MM) for times without an \
                 offset, else reduced to their date."
            }
            Tool::Redact => {
                "Use this to de-identify a message before you store, show or pass it on, under the \
                 server's policy (HIPAA Safe Harbor without one; never a weaker one). `data` is \
                 `{policy, content}`: the redacted message in its own format (a record that cannot \
                 be parsed left out), or `content_base64` when not UTF-8."
            }
        };
        // The formats, then the aliases `format` also takes (mllp: HL7 v2 in MLLP frames).
        let formats = self.format_names();
        let formats = if formats.is_empty() { "none yet".to_owned() } else { formats.join(", ") };
        format!(
            "{what} Give `content` (or `content_base64`) and `format` if known. Formats this build \
             supports for {}: {formats}. Local and read-only; large data is paged (`cursor`) or a resource (`deliver`).",
            self.as_str()
        )
    }

    /// The names `format` takes for this tool: the formats whose codec implements its operation
    /// in this build, and the aliases of those formats.
    pub fn format_names(self) -> Vec<&'static str> {
        let op = self.operation();
        Format::ALL
            .iter()
            .filter(|f| f.supports(op))
            .map(|f| f.as_str())
            .chain(crate::formats::ALIASES.iter().filter(|(_, f, _)| f.supports(op)).map(|(name, _, _)| *name))
            .collect()
    }

    /// The JSON Schema of the tool's arguments.
    pub fn input_schema(self) -> Value {
        let content = json!({"type": "string", "description": "The message as text."});
        let base64 = json!({
            "type": "string",
            "contentEncoding": "base64",
            "description": "Binary or non-UTF-8 input, as base64."
        });
        let format = json!({
            "type": "string",
            "enum": self.format_names(),
            "description": "The input format; omitted: detected."
        });
        let mut schema = match self {
            Tool::Convert => json!({
                "type": "object",
                "properties": {
                    "content": content,
                    "content_base64": base64,
                    "format": format,
                    "to": {"type": "string", "enum": ["fhir"], "default": "fhir"},
                    "bundle_type": {
                        "type": "string",
                        "enum": ["message", "collection", "transaction"],
                        "default": "message",
                        "description": "transaction: PUT entries by deterministic id."
                    },
                    "default_timezone": {"type": "string", "pattern": "^([+-][0-9]{2}:[0-9]{2}|Z)$"}
                },
                "oneOf": [{"required": ["content"]}, {"required": ["content_base64"]}],
                "additionalProperties": false
            }),
            _ => json!({
                "type": "object",
                "properties": {
                    "content": content,
                    "content_base64": base64,
                    "format": format,
                    "ndjson": {"type": "boolean", "default": false, "description": "FHIR NDJSON: a record per line."}
                },
                "oneOf": [{"required": ["content"]}, {"required": ["content_base64"]}],
                "additionalProperties": false
            }),
        };
        if let Some(Value::Object(props)) = schema.get_mut("properties")
            && let Value::Object(shape) = shape_properties()
        {
            props.extend(shape);
            if self == Tool::Inspect {
                props.insert(
                    "detail".to_owned(),
                    json!({
                        "type": "string",
                        "enum": ["summary", "inventory"],
                        "default": "summary",
                        "description": "inventory (HL7 v2, FHIR): also fields/elements present, with counts and table codes."
                    }),
                );
            }
            if self == Tool::Validate {
                props.extend(fhir_check_properties());
            }
            if self == Tool::Parse {
                props.insert(
                    "model".to_owned(),
                    json!({
                        "type": "string",
                        "enum": ["named", "positional"],
                        "default": "named",
                        "description": "HL7 v2: named (keyed \"5 patient_name\" from the version's tables) \
                                        or positional (arrays). Other formats: their one model."
                    }),
                );
            }
        }
        schema
    }

    /// The JSON Schema of the tool's structured result: the envelope, its `data`, and the
    /// definitions they share (`$defs`: a record's object, the findings, the format names).
    pub fn output_schema(self) -> Value {
        let findings = json!({"$ref": "#/$defs/findings"});
        let (properties, required): (Value, &[&str]) = match self {
            Tool::Parse => (
                json!({
                    "format": {"type": "string"},
                    "model": {
                        "type": "object",
                        "description": "The message. HL7 v2 named: {tables, delimiters, segments: [{id, fields: \
                                        {\"<position> <name>\": value}}]}; positional: {delimiters, segments: \
                                        [{id, fields: [[repetition]]}]} (docs/hl7v2-model.md); other formats: \
                                        their own model."
                    },
                    "warnings": findings
                }),
                &["format", "model", "warnings"],
            ),
            Tool::Validate => (
                json!({"format": {"type": "string"}, "valid": {"type": "boolean"}, "findings": findings}),
                &["format", "valid", "findings"],
            ),
            Tool::Convert => (
                json!({
                    "format": {"type": "string"},
                    "bundle": {"type": "object", "description": "A FHIR R4 Bundle."},
                    "findings": findings
                }),
                &["format", "bundle", "findings"],
            ),
            Tool::Inspect => (json!({"format": {"type": "string"}}), &["format"]),
            Tool::Redact => {
                let data = json!({
                    "type": "object",
                    "properties": {
                        "policy": {"type": "string", "description": "The policy applied."},
                        "content": {"type": "string", "description": "The redacted message."},
                        "content_base64": {
                            "type": "string",
                            "contentEncoding": "base64",
                            "description": "Instead of content when the bytes are not UTF-8."
                        }
                    },
                    "required": ["policy"],
                    "oneOf": [{"required": ["content"]}, {"required": ["content_base64"]}]
                });
                return with_resource(envelope(data, STATUS, Map::new()));
            }
        };
        let mut properties = properties;
        if let Some(props) = properties.as_object_mut() {
            props.insert("record".to_owned(), json!({"type": "integer", "minimum": 1}));
            props.insert("offset".to_owned(), json!({"type": "integer", "minimum": 0}));
        }
        let mut record = json!({"type": "object", "properties": properties, "required": required});
        let mut shared = Map::new();
        if self == Tool::Inspect
            && let Some(obj) = record.as_object_mut()
        {
            // The per-format schemas would take tools/list over 32 KB: they are a resource.
            obj.insert(
                "description".to_owned(),
                Value::from(format!("A value-free summary; each format's schema: resource {INSPECT_SCHEMA_URI}.")),
            );
        }
        shared.insert("record".to_owned(), record);
        if self != Tool::Inspect {
            shared.insert("findings".to_owned(), findings_schema());
        }
        shared.insert("failed_record".to_owned(), failed_record_schema());
        with_resource(envelope(with_records(), STATUS, shared))
    }

    /// The tool as `tools/list` shows it.
    pub fn definition(self) -> McpTool {
        // Read-only (so `destructiveHint` does not apply); the title is the tool's own.
        let annotations = ToolAnnotations::new().read_only(true).idempotent(true).open_world(false);
        McpTool::new(self.as_str(), self.description(), schema_object(self.input_schema()))
            .with_title(self.title())
            .with_raw_output_schema(schema_object(self.output_schema()))
            .with_annotations(annotations)
    }
}

/// `validate`'s optional FHIR checks: the CLI's options without their `--`
/// (`security-checks`, `validate-reference=check-exists`, `bundle-profile=RULE=URL`; see
/// `formats::fhir::checks::Checks::from_args` and docs/fhir-profiles.md). One array, not a
/// property per option, and the items' type left to the description: `tools/list` stays under
/// 32 KB.
fn fhir_check_properties() -> Map<String, Value> {
    let mut props = Map::new();
    props.insert("fhir_checks".to_owned(), json!({"type": "array", "description": "FHIR: the CLI's options, no --"}));
    props
}

/// Every tool definition, in `tools/list` order.
pub fn definitions() -> Vec<McpTool> {
    let mut tools: Vec<McpTool> = Tool::ALL.into_iter().map(Tool::definition).collect();
    tools.extend(super::terminology::definitions());
    tools
}

/// A message tool's envelope with `resource`: where the data went under `deliver`.
fn with_resource(mut schema: Value) -> Value {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        let resource = json!({
            "type": "object",
            "required": ["uri", "mime_type", "bytes"],
            "description": "deliver resource/link: in place of data."
        });
        props.insert("resource".to_owned(), resource);
    }
    schema
}

/// What `status` means for the message tools.
const STATUS: &str = "verdict: data, a negative result; failed: no data.";

/// The reply envelope of every tool around its `data` schema ([`super::dispatch::Reply`]), with
/// the definitions `data` refers to (`defs`) and the format names.
pub(super) fn envelope(data: Value, status_description: &str, mut defs: Map<String, Value>) -> Value {
    let formats: Vec<&str> = Format::ALL.iter().map(|f| f.as_str()).collect();
    defs.insert("format".to_owned(), json!({"type": "string", "enum": formats}));
    json!({
        "type": "object",
        "description": "Failed: code, message; argument (CLI_USAGE); detected, supported, support \
                        (CLI_FORMAT_UNSUPPORTED; planned: not built yet). Paged: truncated, cursor, page.",
        "properties": {
            "ok": {"type": "boolean"},
            "status": {"type": "string", "enum": ["success", "verdict", "failed"], "description": status_description},
            "exit": {"type": "integer", "minimum": 0, "maximum": 255, "description": "The CLI's exit code."},
            "code": {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$"},
            "message": {"type": "string"},
            "argument": {"type": "string"},
            "detected": {"$ref": "#/$defs/format"},
            "supported": {"type": "array", "items": {"$ref": "#/$defs/format"}},
            "support": {"type": "string", "enum": ["planned", "not_offered"]},
            "redacted": {
                "type": "object",
                "required": ["policy", "sha256"],
                "description": "The data was redacted under this policy."
            },
            "truncated": {"type": "boolean"},
            "cursor": {"type": "string"},
            "page": {"type": "object", "required": ["items", "start", "returned", "total"]},
            "finding_totals": {
                "type": "object",
                "required": ["total", "returned"],
                "description": "Findings: total, per severity, returned."
            },
            "data": data
        },
        "required": ["ok", "status", "exit"],
        "additionalProperties": false,
        "$defs": defs
    })
}

/// The summary `inspect` writes for each format, as `property:kind` (`?`: absent when it does
/// not apply); kinds: `s` string, `n` count, `z` count or null, `m` counts by name, `b`
/// boolean, `a` array, `o` object (DICOM's summary keeps the snake_case names it was published
/// with). `inventory` is there with `detail: inventory` (HL7 v2, FHIR). Kept in step with the
/// summaries by the test `inspect_output_schema_matches_every_format`.
pub const INSPECT_SUMMARIES: &[(&str, &str)] = &[
    ("hl7", "messageType:s? version:s? segmentCount:n segments:m warningCount:n errorCount:n inventory:a?"),
    (
        "fhir",
        "syntax:s fhirVersion:s resourceType:s bundleType:s? entryCount:n? entryResourceTypes:m? resources:m \
         containedCount:n elementCount:n unknownElementCount:n extensionCount:n profileCount:n warningCount:n \
         errorCount:n issueCount:n inventory:a?",
    ),
    (
        "x12",
        "recordType:s group:n? set:n? transactionSets:m? implementationGuides:a segmentCount:n segments:m \
         loopCounts:m? warningCount:n errorCount:n",
    ),
    (
        "dicom",
        "preamble:b file_meta:b transfer_syntax:o sop_class:o modality:s elements:n meta_elements:n \
         top_level_elements:n sequences:n items:n max_depth:n private_groups:n private_creators:n pixel_data:o \
         frames:z warning_count:n error_count:n",
    ),
    ("ccda", "documentType:s templates:a unknownTemplates:n structuredBody:b sections:a errorCount:n warningCount:n"),
    (
        "ncpdp",
        "recordType:s version:s? transactionCode:s transactionCount:n? groupCount:n headerStatus:s? segments:a \
         transactions:a segmentCount:n fieldCount:n warningCount:n errorCount:n",
    ),
    ("ncpdp-script", "version:s messageType:s elementCount:n medicationCount:n parts:m errorCount:n warningCount:n"),
    (
        "astm",
        "recordType:s recordCount:n records:m framed:b frameCount:n delimiters:o? processingId:s? version:s? \
         warningCount:n errorCount:n",
    ),
];

/// The resource holding the schema of each format's `inspect` summary.
pub const INSPECT_SCHEMA_URI: &str = "info://schema/inspect";

/// The JSON Schema of an `inspect` record, one `anyOf` branch per format (the resource
/// [`INSPECT_SCHEMA_URI`]).
pub fn inspect_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "phiward inspect: the summary of one record, per format",
        "type": "object",
        "properties": {
            "format": {"type": "string"},
            "record": {"type": "integer", "minimum": 1},
            "offset": {"type": "integer", "minimum": 0}
        },
        "required": ["format"],
        "anyOf": inspect_schemas(),
        "$defs": {
            "n": {"type": "integer", "minimum": 0},
            "m": {"type": "object", "additionalProperties": {"$ref": "#/$defs/n"}}
        }
    })
}

/// The `anyOf` of the inspect record: one schema per format this build inspects.
fn inspect_schemas() -> Value {
    let mut out = Vec::new();
    for (format, spec) in INSPECT_SUMMARIES {
        let mut properties = Map::new();
        let mut required = vec![Value::from("format")];
        properties.insert("format".to_owned(), json!({"const": format}));
        for item in spec.split_whitespace() {
            let Some((name, kind)) = item.split_once(':') else { continue };
            let (kind, optional) = match kind.strip_suffix('?') {
                Some(k) => (k, true),
                None => (kind, false),
            };
            let schema = match kind {
                "n" => json!({"$ref": "#/$defs/n"}),
                "z" => json!({"type": ["integer", "null"], "minimum": 0}),
                "m" => json!({"$ref": "#/$defs/m"}),
                "s" => json!({"type": "string"}),
                "b" => json!({"type": "boolean"}),
                "a" => json!({"type": "array"}),
                _ => json!({"type": "object"}),
            };
            properties.insert(name.to_owned(), schema);
            if !optional {
                required.push(Value::from(name));
            }
        }
        out.push(json!({"properties": properties, "required": required}));
    }
    Value::Array(out)
}

/// The size and selection arguments every message tool takes ([`super::shape`]).
fn shape_properties() -> Value {
    json!({
        "max_bytes": {
            "type": "integer",
            "minimum": 0,
            "default": super::shape::DEFAULT_MAX_BYTES,
            "description": "Most bytes of data per reply (0: no limit); the rest is paged."
        },
        "cursor": {"type": "string", "description": "A reply's cursor (same arguments): the next page."},
        "deliver": {
            "enum": super::shape::Deliver::NAMES,
            "description": "resource/link: the data whole as a resource (embedded/linked)."
        },
        "min_severity": {"type": "string", "enum": ["information", "warning", "error", "fatal"]},
        "max_findings": {"type": "integer", "minimum": 0, "description": "Per record, most severe first."},
        "segments": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[A-Z][A-Z0-9]{2}$"},
            "description": "HL7 v2: only these segments."
        },
        "fields": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[A-Z][A-Z0-9]{2}-[1-9][0-9]{0,2}$"},
            "description": "HL7 v2: only these fields (PID-5)."
        },
        "resource_types": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[A-Za-z]{1,64}$"},
            "description": "FHIR: only these resource types."
        },
        "paths": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_.()]*$"},
            "description": "FHIR: only these elements (Patient.name, entry.resource.ofType(Observation).code)."
        }
    })
}

fn schema_object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(map) => Arc::new(map),
        // The schemas above are object literals.
        _ => Arc::new(JsonObject::new()),
    }
}

fn findings_schema() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "severity": {"type": "string", "enum": ["fatal", "error", "warning", "information"]},
                "location": {"type": "string"},
                "line": {"type": "integer", "minimum": 1},
                "column": {"type": "integer", "minimum": 1},
                "fingerprint": {"type": "string", "pattern": "^[0-9a-f]{16}$"}
            },
            "required": ["code", "severity", "location"]
        }
    })
}

/// A record that could not be read, in `{"records": [...]}`.
fn failed_record_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "record": {"type": "integer", "minimum": 1},
            "format": {"type": "string"},
            "error": {"type": "string"},
            "kind": {"type": "string", "enum": ["unparseable", "too_large", "framing", "failed"]},
            "offset": {"type": "integer", "minimum": 0},
            "cause": {"type": "string"}
        },
        "required": ["record", "format", "error", "kind"]
    })
}

/// `data`: one record's object (`#/$defs/record`), or `{"records": [...]}` whose items are
/// records with their number, or failed records.
fn with_records() -> Value {
    json!({
        "anyOf": [
            {"$ref": "#/$defs/record"},
            {
                "type": "object",
                "properties": {"records": {"type": "array", "items": {"anyOf": [
                    {"$ref": "#/$defs/record", "required": ["record"]},
                    {"$ref": "#/$defs/failed_record"}
                ]}}},
                "required": ["records"]
            }
        ]
    })
}
