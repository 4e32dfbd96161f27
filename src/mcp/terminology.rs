//! The terminology tools (`find_equivalent`, `map_codes`) and resources (`info://licenses`,
//! `info://terminology`): definitions with input and output schemas, and dispatch.
//!
//! Two resource templates name one entry of the catalog each: a code system
//! ([`CODESYSTEM_TEMPLATE`], `{system}` a name of the `find_equivalent` enum: where it is served
//! from and its dataset's vintage, size, licence and citation, and the bundled ConceptMaps that
//! read or write it) and a bundled ConceptMap ([`CONCEPTMAP_TEMPLATE`], `{id}` the last segment
//! of its canonical URL: the map as FHIR R4 JSON). `completion/complete` offers their
//! arguments' values ([`template_completions`]): identifiers from the bundled catalog, never
//! patient data.
//!
//! Arguments are read from the raw JSON object by this module (never through a typed
//! deserializer whose error text would quote a value); a bad argument is a `failed` reply with
//! `CLI_USAGE` that echoes nothing. Properties the input schema does not declare are ignored.
//!
//! What it does not do: log an argument (the term and the codes are caller data, returned in
//! `data` only) or reach the network.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool as McpTool, ToolAnnotations};
use serde_json::{Map, Value, json};

use crate::diag::Code;
use crate::error::exit;
use crate::ops::Status;
use crate::terminology::find::{self, Query};
use crate::terminology::{self as term, Catalog, System};

use super::dispatch::{Config, Reply};

/// The name of the `find_equivalent` tool.
pub const FIND_EQUIVALENT: &str = "find_equivalent";
/// The name of the `map_codes` tool.
pub const MAP_CODES: &str = "map_codes";
/// The URI of the licences resource.
pub const LICENSES_URI: &str = "info://licenses";
/// The URI of the terminology listing resource.
pub const TERMINOLOGY_URI: &str = "info://terminology";

fn systems_enum() -> Vec<&'static str> {
    System::ALL.iter().map(|s| s.as_str()).collect()
}

/// The input schema of `find_equivalent`.
pub fn find_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "term": {"type": "string", "minLength": 1, "maxLength": find::MAX_TERM_BYTES,
                     "description": "The term to look up (a disease, drug, lab test...)."},
            "limit": {"type": "integer", "minimum": 1, "maximum": find::MAX_LIMIT, "default": find::DEFAULT_LIMIT,
                      "description": "Results per code system."},
            "source_terminology": {"type": "string", "enum": systems_enum(),
                                   "description": "The code system the term comes from: excluded from the search."},
            "target_terminologies": {"type": "array", "items": {"type": "string", "enum": systems_enum()},
                                     "description": "The code systems to search (default: all); the source is subtracted."},
            "include_deprecated": {"type": "boolean", "default": false,
                                   "description": "Include deprecated concepts (left out by default)."}
        },
        "required": ["term"],
        "additionalProperties": false
    })
}

fn nullable_string() -> Value {
    json!({"type": ["string", "null"]})
}

/// The schema of `find_equivalent`'s `data` (what `phiward find-equivalent --json` prints).
pub fn find_data_schema() -> Value {
    let item = json!({
        "type": "object",
        "properties": {
            "code": {"type": "string"},
            "title": {"type": "string"},
            "uri": {"type": "string"},
            "match_score": {"type": "number", "minimum": 0, "maximum": 1},
            "rank": {"type": "integer", "minimum": 1},
            "matched_label": {"type": "string"},
            "deprecated": {"type": "boolean"}
        },
        "required": ["code", "title", "uri", "match_score", "rank"]
    });
    let result = json!({
        "type": "object",
        "properties": {
            "found": {"type": "boolean"},
            "error": nullable_string(),
            "items": {"type": "array", "items": item}
        },
        "required": ["found", "error", "items"]
    });
    let provenance = json!({
        "type": "object",
        "properties": {
            "source": {"type": "string"},
            "source_url": nullable_string(),
            "data_vintage": nullable_string(),
            "retrieved_at": nullable_string(),
            "citation": nullable_string(),
            "license": nullable_string(),
            "retrieval": {"type": "null"},
            "derived": {"type": "boolean"},
            "derivation": {"type": "string"}
        },
        "required": ["source", "source_url", "data_vintage", "retrieved_at", "citation", "license", "retrieval", "derived"]
    });
    json!({
        "type": "object",
        "properties": {
            "term": {"type": "string"},
            "source_terminology": {"type": ["string", "null"], "enum": [Value::Null, "icd10cm", "icd11", "loinc", "rxnorm", "mesh"]},
            "searched_terminologies": {"type": "array", "items": {"type": "string", "enum": systems_enum()}},
            "results": {"type": "object", "additionalProperties": result},
            "groups": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "normalized_title": {"type": "string"},
                    "terminologies": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                    "members": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"terminology": {"type": "string"}, "code": {"type": "string"}, "rank": {"type": "integer"}},
                        "required": ["terminology", "code", "rank"]
                    }}
                },
                "required": ["normalized_title", "terminologies", "members"]
            }},
            "ranking": {"type": "object", "properties": {"method": {"const": "lexical"}, "note": {"type": "string"}},
                        "required": ["method", "note"]},
            "provenance": {"type": "array", "items": provenance},
            "attribution": {"type": "string"}
        },
        "required": ["term", "source_terminology", "searched_terminologies", "results", "groups", "ranking",
                     "provenance", "attribution"]
    })
}

/// The input schema of `map_codes`.
pub fn map_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "map": {"type": "string", "description": "The canonical URL of a bundled ConceptMap (see info://terminology)."},
            "conceptmap": {"type": "string", "description": "A FHIR R4 ConceptMap as JSON text (instead of `map`)."},
            "codings": {"type": "array", "maxItems": 10000, "items": {
                "type": "object",
                "properties": {"system": {"type": "string"}, "code": {"type": "string"}},
                "required": ["system", "code"]
            }, "description": "The codings to translate."},
            "content": {"type": "string", "description": "Instead of `codings`: a message (HL7 v2 or FHIR) whose \
                        CWE/CE/CNE components and Coding elements are translated."}
        },
        "additionalProperties": false
    })
}

/// The schema of `map_codes`' `data` (what `phiward map-codes --json` prints).
pub fn map_data_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "map": {"type": "string"},
            "mapped": {"type": "integer", "minimum": 0},
            "unmapped": {"type": "integer", "minimum": 0},
            "results": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "location": {"type": "string"},
                    "system": {"type": "string"},
                    "code": {"type": "string"},
                    "mapped": {"type": "boolean"},
                    "targets": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"system": {"type": "string"}, "code": {"type": "string"}, "equivalence": {"type": "string"}},
                        "required": ["system", "code", "equivalence"]
                    }}
                },
                "required": ["location", "system", "code", "mapped", "targets"]
            }},
            "findings": {"type": "array", "items": {
                "type": "object",
                "properties": {"code": {"type": "string"}, "severity": {"type": "string"}, "location": {"type": "string"}},
                "required": ["code", "severity", "location"]
            }}
        },
        "required": ["map", "mapped", "unmapped", "results", "findings"]
    })
}

fn envelope(data: Value) -> Value {
    super::tools::envelope(
        data,
        "success: exit 0; verdict: data with a negative result (nothing found, something unmapped); failed: no data.",
        Map::new(),
    )
}

fn schema_object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The two tool definitions, as `tools/list` shows them.
pub fn definitions() -> Vec<McpTool> {
    let annotations = |_: &str| ToolAnnotations::new().read_only(true).idempotent(true).open_world(false);
    let find_title = "Find equivalent concepts across code systems";
    let map_title = "Translate codes through a FHIR ConceptMap";
    vec![
        McpTool::new(
            FIND_EQUIVALENT,
            "Use this to find the codes of other code systems (ICD-10-CM, ICD-11, LOINC, RxNorm, MeSH) whose \
             names match a term, offline. Concepts are scored lexically (0 to 1, synonyms count, the matching \
             label reported), `limit` per code system, `rank` global. A code system not available offline is \
             `found: false` with how to import it. Lexical similarity is not clinical equivalence: review.",
            schema_object(find_input_schema()),
        )
        .with_title(find_title)
        .with_raw_output_schema(schema_object(envelope(find_data_schema())))
        .with_annotations(annotations(find_title)),
        McpTool::new(
            MAP_CODES,
            "Use this to translate codes through a FHIR R4 ConceptMap: a bundled one by canonical URL (`map`, \
             listed in info://terminology) or your own as JSON (`conceptmap`). Give `codings` \
             ([{system, code}]) or a message in `content` (HL7 v2 CWE/CE/CNE components, FHIR Coding \
             elements). `status` is `verdict` and `ok` false when a code is unmapped; findings are value-free.",
            schema_object(map_input_schema()),
        )
        .with_title(map_title)
        .with_raw_output_schema(schema_object(envelope(map_data_schema())))
        .with_annotations(annotations(map_title)),
    ]
}

/// Runs a terminology tool; `None` when `name` is not one.
pub fn dispatch(name: &str, arguments: Option<Map<String, Value>>, config: &Config) -> Option<Reply> {
    let args = arguments.unwrap_or_default();
    match name {
        FIND_EQUIVALENT => Some(find_equivalent(&args, &config.catalog)),
        MAP_CODES => Some(map_codes(args, config)),
        _ => None,
    }
}

fn system_arg(v: &Value) -> Result<System, Code> {
    v.as_str().and_then(System::from_name).ok_or(Code::CLI_USAGE)
}

fn read_find(args: &Map<String, Value>) -> Result<Query, Reply> {
    let term = match args.get("term") {
        Some(Value::String(s)) if s.len() > find::MAX_TERM_BYTES => {
            return Err(Reply::failed(Code::CLI_INPUT_TOO_LARGE));
        }
        Some(Value::String(s)) => s.clone(),
        _ => return Err(Reply::usage("term")),
    };
    let limit = match args.get("limit") {
        None | Some(Value::Null) => find::DEFAULT_LIMIT,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=find::MAX_LIMIT as u64).contains(&n) => n as usize,
            _ => return Err(Reply::usage("limit")),
        },
    };
    let source = match args.get("source_terminology") {
        None | Some(Value::Null) => None,
        Some(v) => Some(system_arg(v).map_err(|_| Reply::usage("source_terminology"))?),
    };
    let targets = match args.get("target_terminologies") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(system_arg)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| Reply::usage("target_terminologies"))?,
        Some(_) => return Err(Reply::usage("target_terminologies")),
    };
    let include_deprecated = match args.get("include_deprecated") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(Reply::usage("include_deprecated")),
    };
    Ok(Query { term, limit, source, targets, include_deprecated })
}

fn find_equivalent(args: &Map<String, Value>, catalog: &Catalog) -> Reply {
    let query = match read_find(args) {
        Ok(q) => q,
        Err(reply) => return reply,
    };
    let (data, any) = find::find_equivalent(&query, catalog);
    let (status, exit) = if any { (Status::Success, exit::OK) } else { (Status::Verdict, exit::INVALID) };
    Reply::with_data(status, exit, data)
}

/// `map_codes`. A message in `content` goes through the server's policy first when its
/// disclosure is `redacted`: the codes come from what `parse` would show, never from the fields
/// the policy removes (no side door around the policy).
fn map_codes(mut args: Map<String, Value>, config: &Config) -> Reply {
    let mut redacted = None;
    if let Some(Value::String(content)) = args.get_mut("content") {
        let bytes = std::mem::take(content).into_bytes();
        match super::dispatch::redact_for_disclosure(bytes.clone(), config) {
            Ok(Some((out, marker))) => {
                let mut bytes = bytes;
                zeroize::Zeroize::zeroize(&mut bytes);
                match String::from_utf8(out) {
                    Ok(text) => *content = text,
                    Err(e) => {
                        zeroize::Zeroize::zeroize(&mut e.into_bytes());
                        return Reply::failed(Code::CLI_PARSE_FAILED);
                    }
                }
                redacted = Some(marker);
            }
            Ok(None) => *content = String::from_utf8(bytes).unwrap_or_default(),
            Err(code) => {
                let mut bytes = bytes;
                zeroize::Zeroize::zeroize(&mut bytes);
                return Reply::failed(code);
            }
        }
    }
    let result = term::conceptmap::run_mcp(&args, &config.limits);
    if let Some(Value::String(content)) = args.get_mut("content") {
        zeroize::Zeroize::zeroize(content);
    }
    match result {
        Ok((data, all_mapped)) => {
            let (status, exit) =
                if all_mapped { (Status::Success, exit::OK) } else { (Status::Verdict, exit::INVALID) };
            let mut reply = Reply::with_data(status, exit, data);
            reply.detail.redacted = redacted;
            reply
        }
        Err(Code::CLI_USAGE) => {
            // The argument at fault: the map (exactly one of `map` and `conceptmap`, a string),
            // or the codes (`codings` or `content`).
            let one_map = matches!(
                (args.get("map"), args.get("conceptmap")),
                (Some(Value::String(_)), None) | (None, Some(Value::String(_)))
            );
            let argument = match (one_map, args.contains_key("codings")) {
                (false, _) if args.contains_key("conceptmap") => "conceptmap",
                (false, _) => "map",
                (true, true) => "codings",
                (true, false) => "content",
            };
            Reply::usage(argument)
        }
        Err(code) => Reply::failed(code),
    }
}

/// The resources, as `resources/list` shows them: `(uri, name, title, description, mime type)`.
pub const RESOURCES: [(&str, &str, &str, &str, &str); 3] = [
    (
        LICENSES_URI,
        "licenses",
        "Terminology licences and citations",
        "Every terminology dataset's licence, citation and notice (LOINC), bundled and imported.",
        "text/markdown",
    ),
    (
        TERMINOLOGY_URI,
        "terminology",
        "Terminology loaded",
        "What find_equivalent and map_codes can use: code systems (bundled, imported, unavailable), \
         datasets with vintage, size, licence and citation, and the bundled ConceptMaps.",
        "application/json",
    ),
    (
        super::tools::INSPECT_SCHEMA_URI,
        "inspect-schema",
        "The inspect summary of each format",
        "The JSON Schema of what inspect returns for each format (one anyOf branch per format: its \
         properties, their types, which are always there), at both detail levels.",
        "application/schema+json",
    ),
];

/// The URI template of a code system's description.
pub const CODESYSTEM_TEMPLATE: &str = "info://terminology/codesystem/{system}";
/// The URI template of a bundled ConceptMap.
pub const CONCEPTMAP_TEMPLATE: &str = "info://terminology/conceptmap/{id}";
const CODESYSTEM_PREFIX: &str = "info://terminology/codesystem/";
const CONCEPTMAP_PREFIX: &str = "info://terminology/conceptmap/";

/// The resource templates, as `resources/templates/list` shows them: `(uri template, name,
/// title, description, mime type)`.
pub const TEMPLATES: [(&str, &str, &str, &str, &str); 2] = [
    (
        CODESYSTEM_TEMPLATE,
        "codesystem",
        "Code system",
        "One code system of find_equivalent (icd10cm, icd11, loinc, rxnorm, mesh): its FHIR system URI, \
         whether it is bundled, imported or unavailable, its dataset's vintage, size, licence and \
         citation, and the bundled ConceptMaps whose groups read or write it.",
        "application/json",
    ),
    (
        CONCEPTMAP_TEMPLATE,
        "conceptmap",
        "Bundled ConceptMap",
        "One bundled ConceptMap as FHIR R4 JSON (its id is the last segment of its canonical URL): \
         each group's source and target systems and every element's targets with their equivalence. \
         map_codes translates from source to target only.",
        "application/json",
    ),
];

/// The values `completion/complete` offers for a template's argument, in catalog order: the
/// code system names, or the bundled ConceptMap ids. `None` for an unknown template or argument.
pub fn template_completions(template: &str, argument: &str) -> Option<Vec<&'static str>> {
    match (template, argument) {
        (CODESYSTEM_TEMPLATE, "system") => Some(systems_enum()),
        (CONCEPTMAP_TEMPLATE, "id") => Some(term::conceptmap::bundled_ids().into_iter().map(|(id, _)| id).collect()),
        _ => None,
    }
}

/// The text and mime type of a resource, or `None` for an unknown URI.
pub fn read_resource(uri: &str, catalog: &Catalog) -> Option<(String, &'static str)> {
    let json = |v: Value| serde_json::to_string_pretty(&v).ok().map(|t| (t, "application/json"));
    match uri {
        LICENSES_URI => Some((term::licenses_text(catalog), "text/markdown")),
        super::tools::INSPECT_SCHEMA_URI => {
            serde_json::to_string_pretty(&super::tools::inspect_schema()).ok().map(|t| (t, "application/schema+json"))
        }
        TERMINOLOGY_URI => {
            let mut listing = term::listing(catalog);
            if let Some(obj) = listing.as_object_mut() {
                obj.insert("conceptmaps".into(), Value::from(term::conceptmap::bundled_urls()));
            }
            json(listing)
        }
        _ => {
            if let Some(name) = uri.strip_prefix(CODESYSTEM_PREFIX) {
                return json(codesystem(System::from_name(name)?, catalog));
            }
            let id = uri.strip_prefix(CONCEPTMAP_PREFIX)?;
            let (id, url) = term::conceptmap::bundled_ids().into_iter().find(|(i, _)| *i == id)?;
            json(term::conceptmap::ConceptMap::bundled(url)?.to_fhir(id))
        }
    }
}

/// The description of one code system: `info://terminology/codesystem/{system}`.
fn codesystem(system: System, catalog: &Catalog) -> Value {
    let listing = term::listing(catalog);
    let entries = |key: &str| listing.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
    let origin = entries("terminologies")
        .into_iter()
        .find(|t| t["terminology"] == system.as_str())
        .and_then(|t| t.get("origin").cloned())
        .unwrap_or(Value::Null);
    // The dataset that serves it: the imported one when there is one, else the bundled one.
    let dataset = entries("datasets")
        .into_iter()
        .find(|d| d["dataset"] == system.as_str() && d["origin"] == origin)
        .unwrap_or(Value::Null);
    let uri = system.fhir_system();
    let conceptmaps: Vec<Value> = entries("conceptmaps")
        .into_iter()
        .filter(|m| {
            m["groups"].as_array().is_some_and(|gs| gs.iter().any(|g| g["source"] == uri || g["target"] == uri))
        })
        .collect();
    json!({
        "terminology": system.as_str(),
        "system": uri,
        "origin": origin,
        "dataset": dataset,
        "conceptmaps": conceptmaps,
    })
}
