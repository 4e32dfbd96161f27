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
use serde_json::{Value, json};

use crate::formats::{Format, Operation};

/// One of the tools.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Tool {
    /// The message as typed JSON.
    Parse,
    /// A verdict with value-free findings.
    Validate,
    /// A value-free summary.
    Inspect,
    /// Conversion to a FHIR R4 Bundle.
    Convert,
    /// De-identification under the server's policy (Safe Harbor without one), same format out.
    Redact,
}

impl Tool {
    /// Every tool, in `tools/list` order.
    pub const ALL: [Tool; 5] = [Tool::Parse, Tool::Validate, Tool::Inspect, Tool::Convert, Tool::Redact];

    /// The tool name.
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::Parse => "parse",
            Tool::Validate => "validate",
            Tool::Inspect => "inspect",
            Tool::Convert => "convert",
            Tool::Redact => "redact",
        }
    }

    /// Looks a tool up by name (exact match).
    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The operation of the support matrix this tool runs.
    pub fn operation(self) -> Operation {
        match self {
            Tool::Parse => Operation::Parse,
            Tool::Validate => Operation::Validate,
            Tool::Inspect => Operation::Inspect,
            Tool::Convert => Operation::Convert,
            Tool::Redact => Operation::Redact,
        }
    }

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
                "Use this when you need the contents of a message as structured JSON: every segment, \
                 field, repetition and component, with escapes decoded. The reply's `data` is \
                 `{format, model, warnings}` (or `{records: [...]}` for a stream or batch). Its data \
                 carries the message's values (as do convert, redact and map_codes; under a redacting \
                 policy all four return redacted values and the reply says so in `redacted`)."
            }
            Tool::Validate => {
                "Use this to check whether a message conforms to its standard before sending, storing \
                 or converting it. The reply's `data` is `{format, valid, findings}` (or \
                 `{records: [...]}`); each finding is a code, a severity and a structural location \
                 (such as `PID[1]-5[1].1`), never a value. `status` is `verdict` and `ok` false when the \
                 message is invalid."
            }
            Tool::Inspect => {
                "Use this for a quick look at what a message is without reading its contents: message \
                 type, version, segment counts and finding counts. The reply's `data` is a value-free \
                 summary (or `{records: [...]}`)."
            }
            Tool::Convert => {
                "Use this to turn an HL7 v2 message into a FHIR R4 Bundle (one per message). The reply's \
                 `data` is `{format, bundle, findings}`: the findings are value-free and list what was \
                 not mapped (v2 position -> FHIR element). `to` may only be `fhir`; `bundle_type` is \
                 message (default), collection or transaction; `default_timezone` (+HH:MM) applies to \
                 times without an offset, which are otherwise reduced to their date."
            }
            Tool::Redact => {
                "Use this to de-identify a message before you store it, show it or pass it on: the \
                 server's redaction policy is applied (HIPAA Safe Harbor when the server runs without \
                 one), and you cannot choose a weaker one. The reply's `data` is `{policy, content}`: \
                 the policy's name and the redacted message in its own format (MLLP frames, batches \
                 and NDJSON lines stay as they are; a record that cannot be parsed is left out), or \
                 `content_base64` instead of `content` when the redacted bytes are not UTF-8."
            }
        };
        // The formats, then the aliases `format` also takes (mllp: HL7 v2 in MLLP frames).
        let formats = self.format_names();
        let formats = if formats.is_empty() { "none yet".to_owned() } else { formats.join(", ") };
        let input = "Pass the message as text in `content` (or as base64 in `content_base64` for binary \
                     input), and `format` when you know it (omitted means detect).";
        format!(
            "{what} {input} Formats this build supports for {}: {formats}. Local and read-only: \
             nothing is stored or sent anywhere. A reply with status `failed` carries only a code \
             (for example CLI_PARSE_FAILED, CLI_FORMAT_UNSUPPORTED) and the CLI exit code.",
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
        let content = json!({
            "type": "string",
            "description": "The message as text (HL7 v2 segments separated by CR or LF, FHIR JSON or \
                            XML, ...). Required unless `content_base64` is given."
        });
        let mut schema = match self {
            Tool::Convert => json!({
                "type": "object",
                "properties": {
                    "content": content,
                    "content_base64": {
                        "type": "string",
                        "contentEncoding": "base64",
                        "description": "The message as base64 (standard alphabet, padded), for bytes \
                                        that are not UTF-8 (an ISO 8859-1 message, MLLP frames). Give \
                                        either this or `content`, not both."
                    },
                    "format": {
                        "type": "string",
                        "enum": self.format_names(),
                        "description": "The input format; omit it to detect the format."
                    },
                    "to": {
                        "type": "string",
                        "enum": ["fhir"],
                        "default": "fhir",
                        "description": "The target format: FHIR R4 (the only one)."
                    },
                    "bundle_type": {
                        "type": "string",
                        "enum": ["message", "collection", "transaction"],
                        "default": "message",
                        "description": "The Bundle type (transaction: PUT entries by deterministic id)."
                    },
                    "default_timezone": {
                        "type": "string",
                        "pattern": "^([+-][0-9]{2}:[0-9]{2}|Z)$",
                        "description": "Offset for timestamps without one; without it they are reduced to \
                                        their date (and reported)."
                    }
                },
                "oneOf": [{"required": ["content"]}, {"required": ["content_base64"]}],
                "additionalProperties": false
            }),
            _ => json!({
                "type": "object",
                "properties": {
                    "content": content,
                    "content_base64": {
                        "type": "string",
                        "contentEncoding": "base64",
                        "description": "The message as base64 (standard alphabet, padded), for binary \
                                        formats such as DICOM or for bytes that are not UTF-8. Give \
                                        either this or `content`, not both."
                    },
                    "format": {
                        "type": "string",
                        "enum": self.format_names(),
                        "description": "The message format; omit it to detect the format from the \
                                        first bytes."
                    },
                    "ndjson": {
                        "type": "boolean",
                        "default": false,
                        "description": "The content is NDJSON (FHIR): one resource per line, one \
                                        record per line in `data.records`."
                    }
                },
                "oneOf": [{"required": ["content"]}, {"required": ["content_base64"]}],
                "additionalProperties": false
            }),
        };
        if let Some(Value::Object(props)) = schema.get_mut("properties")
            && let Value::Object(shape) = shape_properties()
        {
            props.extend(shape);
            if self == Tool::Parse {
                props.insert(
                    "model".to_owned(),
                    json!({
                        "type": "string",
                        "enum": ["named", "positional"],
                        "default": "named",
                        "description": "HL7 v2: named (fields keyed \"5 patient_name\", components by \
                                        name, from the version's tables) or positional (arrays by \
                                        position). Other formats have one model, given for either."
                    }),
                );
            }
        }
        schema
    }

    /// The JSON Schema of the tool's structured result.
    pub fn output_schema(self) -> Value {
        let data = match self {
            Tool::Parse => {
                let one = json!({
                    "type": "object",
                    "properties": {
                        "format": {"type": "string"},
                        "model": {"type": "object"},
                        "warnings": findings_schema()
                    },
                    "required": ["format", "model", "warnings"]
                });
                with_records(one)
            }
            Tool::Validate => {
                let one = json!({
                    "type": "object",
                    "properties": {
                        "format": {"type": "string"},
                        "valid": {"type": "boolean"},
                        "findings": findings_schema()
                    },
                    "required": ["format", "valid", "findings"]
                });
                with_records(one)
            }
            Tool::Inspect => {
                let one = json!({
                    "type": "object",
                    "properties": {"format": {"type": "string"}},
                    "required": ["format"]
                });
                with_records(one)
            }
            Tool::Convert => {
                let one = json!({
                    "type": "object",
                    "properties": {
                        "format": {"type": "string"},
                        "bundle": {"type": "object"},
                        "findings": findings_schema()
                    },
                    "required": ["format", "bundle", "findings"]
                });
                with_records(one)
            }
            Tool::Redact => json!({
                "type": "object",
                "properties": {
                    "policy": {"type": "string", "description": "The name of the policy applied."},
                    "content": {"type": "string", "description": "The redacted message."},
                    "content_base64": {
                        "type": "string",
                        "contentEncoding": "base64",
                        "description": "The redacted message as base64, when its bytes are not UTF-8."
                    }
                },
                "required": ["policy"],
                "oneOf": [{"required": ["content"]}, {"required": ["content_base64"]}]
            }),
        };
        envelope(data, "success: exit 0; verdict: data with a negative result; failed: no data.")
    }

    /// The tool as `tools/list` shows it.
    pub fn definition(self) -> McpTool {
        let annotations = ToolAnnotations::with_title(self.title())
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false);
        McpTool::new(self.as_str(), self.description(), schema_object(self.input_schema()))
            .with_title(self.title())
            .with_raw_output_schema(schema_object(self.output_schema()))
            .with_annotations(annotations)
    }
}

/// Every tool definition, in `tools/list` order.
pub fn definitions() -> Vec<McpTool> {
    let mut tools: Vec<McpTool> = Tool::ALL.into_iter().map(Tool::definition).collect();
    tools.extend(super::terminology::definitions());
    tools
}

/// The reply envelope of every tool around its `data` schema ([`super::dispatch::Reply`]).
pub(super) fn envelope(data: Value, status_description: &str) -> Value {
    let formats: Vec<&str> = Format::ALL.iter().map(|f| f.as_str()).collect();
    json!({
        "type": "object",
        "properties": {
            "ok": {"type": "boolean", "description": "True when status is success."},
            "status": {
                "type": "string",
                "enum": ["success", "verdict", "failed"],
                "description": status_description
            },
            "exit": {
                "type": "integer",
                "minimum": 0,
                "maximum": 255,
                "description": "The exit code of `phiward` on the command line for the same call."
            },
            "code": {
                "type": "string",
                "pattern": "^[A-Z][A-Z0-9_]*$",
                "description": "Only when failed: the stable code (see DIAGNOSTICS.md)."
            },
            "message": {
                "type": "string",
                "description": "Only when failed: what the code means (fixed text, never a value)."
            },
            "argument": {
                "type": "string",
                "description": "CLI_USAGE: the name of the argument at fault (never its value)."
            },
            "detected": {
                "type": "string",
                "enum": formats,
                "description": "CLI_FORMAT_UNSUPPORTED: the format detected or named."
            },
            "supported": {
                "type": "array",
                "items": {"type": "string", "enum": formats},
                "description": "CLI_FORMAT_UNSUPPORTED: the formats this tool takes in this build."
            },
            "support": {
                "type": "string",
                "enum": ["planned", "not_offered"],
                "description": "CLI_FORMAT_UNSUPPORTED: planned, the format is recognised and not built yet; \
                                not_offered, the format is built and this tool does not take it."
            },
            "redacted": {
                "type": "object",
                "properties": {
                    "policy": {"type": "string", "description": "The policy's name."},
                    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "SHA-256 of the policy file."}
                },
                "required": ["policy", "sha256"],
                "description": "Present when the data was redacted under a policy (the server's, or Safe Harbor for redact)."
            },
            "truncated": {"type": "boolean", "description": "More data follows: pass `cursor` for it."},
            "cursor": {"type": "string", "description": "The next page's `cursor` argument."},
            "page": {
                "type": "object",
                "additionalProperties": {"type": ["string", "integer"]},
                "required": ["items", "start", "returned", "total"],
                "description": "The page held: items (the list's path in data), start, returned, total."
            },
            "finding_totals": {
                "type": "object",
                "additionalProperties": {"type": "integer"},
                "required": ["total", "returned"],
                "description": "All findings (total, per severity) and those returned."
            },
            "data": data
        },
        "required": ["ok", "status", "exit"],
        "additionalProperties": false
    })
}

/// The size and selection arguments every message tool takes ([`super::shape`]).
fn shape_properties() -> Value {
    json!({
        "max_bytes": {
            "type": "integer",
            "minimum": 0,
            "default": super::shape::DEFAULT_MAX_BYTES,
            "description": "Most bytes of data per reply (0: no limit); more is paged (`cursor`)."
        },
        "cursor": {"type": "string", "description": "A reply's `cursor`, same other arguments: the next page."},
        "min_severity": {"type": "string", "enum": ["information", "warning", "error", "fatal"]},
        "max_findings": {"type": "integer", "minimum": 0, "description": "Per record, most severe first."},
        "segments": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[A-Z][A-Z0-9]{2}$"},
            "description": "HL7 v2: only these segments and their findings."
        },
        "fields": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[A-Z][A-Z0-9]{2}-[1-9][0-9]{0,2}$"},
            "description": "HL7 v2 (`PID-5`): only these fields (others empty) and their findings."
        },
        "resource_types": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[A-Za-z]{1,64}$"},
            "description": "FHIR: only Bundle entries and NDJSON records of these types."
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
                "line": {"type": "integer", "minimum": 1, "description": "1-based line of the element (FHIR) or segment (HL7 v2) in the record"},
                "column": {"type": "integer", "minimum": 1, "description": "1-based column, in characters, of the element (FHIR)"},
                "fingerprint": {"type": "string", "pattern": "^[0-9a-f]{16}$", "description": "stable per finding of an input record (not of a converted Bundle): format, record, code, location and occurrence (baselines)"}
            },
            "required": ["code", "severity", "location"]
        }
    })
}

/// `one`, or `{"records": [...]}` whose items are `one` or a failed record, each with `record`.
fn with_records(one: Value) -> Value {
    let failed_record = json!({
        "type": "object",
        "properties": {
            "record": {"type": "integer", "minimum": 1},
            "format": {"type": "string"},
            "error": {"type": "string"},
            "kind": {"type": "string", "enum": ["unparseable", "too_large", "framing", "failed"]},
            "offset": {"type": "integer", "minimum": 0, "description": "byte offset of the record in the input"},
            "cause": {"type": "string", "description": "the code of the fatal finding behind the failure"}
        },
        "required": ["record", "format", "error", "kind"]
    });
    let mut item = one.clone();
    if let Some(obj) = item.as_object_mut() {
        if let Some(Value::Object(props)) = obj.get_mut("properties") {
            props.insert("record".to_owned(), json!({"type": "integer", "minimum": 1}));
            props.insert(
                "offset".to_owned(),
                json!({"type": "integer", "minimum": 0, "description": "byte offset of the record in the input"}),
            );
        }
        if let Some(Value::Array(req)) = obj.get_mut("required") {
            req.push(Value::from("record"));
        }
    }
    json!({
        "anyOf": [
            one,
            {
                "type": "object",
                "properties": {"records": {"type": "array", "items": {"anyOf": [item, failed_record]}}},
                "required": ["records"]
            }
        ]
    })
}
