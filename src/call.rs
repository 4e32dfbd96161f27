//! A message tool call: a tool (`parse`, `validate`, `inspect`, `convert`, `redact`), its raw
//! JSON arguments, and the result object `{ok, status, exit, code?, data?}`. The MCP server's
//! replies and the CLI's `--input-format json-lines` output lines are both built here, by the
//! same code, so the two front doors cannot disagree (docs/scale-out.md).
//!
//! Arguments are read by this module from the raw JSON object, never through a typed
//! deserializer whose error text would quote the offending value. A problem with the arguments
//! (missing or non-string `content`, a `format` outside the enum, bad base64) is a `failed`
//! reply with `CLI_USAGE` that echoes neither the name nor the value. Properties the input
//! schema does not declare are ignored here (the json-lines reader refuses them before).
//!
//! The reply's `data` is built from the very bytes `ops` hands to its sink, which are the bytes
//! the CLI's `--json` prints.
//!
//! A call can be watched (a [`Watch`]): the sink counts the records it takes (a number,
//! nothing else of them), and stops the run before its next record once the watch is cancelled.
//!
//! What it does not do: talk to a transport or read a stream (`mcp`, `cli`), log any argument,
//! or turn on `--unsafe-show-values`.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde_json::{Map, Value};
use zeroize::Zeroize;

use crate::diag::Code;
use crate::error::exit_code_for;
use crate::formats::codec::ModelShape;
use crate::formats::{Format, Operation};
use crate::limits::Limits;
use crate::ops::{self, Command, Item, Request, Sink, Source, Status};
use crate::phi::Phi;

/// One of the message tools.
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
}

/// The configuration shared by every call (the MCP server's start-up options, or the CLI's
/// options of a json-lines run).
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Limits applied to each call's input.
    pub limits: Limits,
    /// The policy (`--policy`): which tools may be called, and whether data is redacted.
    pub policy: Option<std::sync::Arc<crate::policy::Policy>>,
    /// The key for the policy's keyed actions.
    pub key: Option<std::sync::Arc<crate::keys::Key>>,
    /// The terminology available to `find_equivalent` (bundled, and imported in the data folder).
    pub catalog: std::sync::Arc<crate::terminology::Catalog>,
    /// Called after each tool call with its value-free record (`--audit-log`); an error
    /// replaces the call's reply with a failure of that code (fail closed).
    pub on_call: Option<CallHook>,
    /// `validate`: warnings count against the verdict (the CLI's `--strict`; off over MCP).
    pub strict: bool,
    /// `validate` (FHIR): the loaded packages and profiles (the CLI's `--ig`, `--profile`).
    pub structures: Option<Arc<crate::structure::Context>>,
    /// The policy's `tools` list (the MCP tools an agent may call) does not apply: the CLI's
    /// json-lines run, which answers to the operator as the single-record CLI does.
    pub every_tool: bool,
    /// `convert`: the base of every call's options (the CLI's `--naming-systems` and
    /// `--id-key-file`, shared); the call's arguments set the rest.
    pub convert: crate::convert::Options,
}

/// A value-free record of one tool call: the tool (a listed tool's name, or `unknown`), its
/// exit code, its failure code, its duration.
#[derive(Debug)]
pub struct CallRecord<'a> {
    /// The tool's name, or `unknown`.
    pub tool: &'a str,
    /// The CLI's exit code for the same call.
    pub exit: u8,
    /// The failure's code.
    pub code: Option<Code>,
    /// Milliseconds taken.
    pub millis: u64,
}

/// The function behind a [`CallHook`].
pub type CallFn = dyn Fn(&CallRecord<'_>) -> Result<(), Code> + Send + Sync;

/// The function of [`Config::on_call`].
#[derive(Clone)]
pub struct CallHook(pub std::sync::Arc<CallFn>);

impl std::fmt::Debug for CallHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallHook")
    }
}

/// What a running call shares with the server: the records done so far and whether the client
/// cancelled the call. Value-free by construction: a count and a flag. Clones share the state.
#[derive(Clone, Debug, Default)]
pub struct Watch {
    done: Arc<AtomicU64>,
    cancelled: Arc<AtomicBool>,
}

impl Watch {
    /// Records whose result the call's sink has taken (a stream's records, in input order;
    /// `redact` counts each piece of output it writes, a record or an MLLP frame).
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Asks the call to stop before its next record.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// True once [`Watch::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    pub(crate) fn record_done(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }
}

/// A structured reply: the `structuredContent` of a `tools/call` result.
#[derive(Debug)]
pub struct Reply {
    /// The status.
    pub status: Status,
    /// The CLI's exit code for the same call.
    pub exit: u8,
    /// The code, only when failed.
    pub code: Option<Code>,
    /// The data, absent when failed: what `phiward <tool> --json` prints.
    pub data: Option<Value>,
    /// What an agent needs to act on a failure, and the redaction a reply's data went through:
    /// names and digests only, never a value.
    pub detail: Detail,
}

/// A policy's name and the SHA-256 of its file: what a reply's `redacted` says.
pub type PolicyMark = (String, String);

/// The value-free details of a reply beside its code and data.
#[derive(Debug, Default)]
pub struct Detail {
    /// `CLI_USAGE`: the name of the argument at fault (never its value).
    pub argument: Option<&'static str>,
    /// `CLI_FORMAT_UNSUPPORTED`: the format detected or named, and the tool's operation.
    pub unsupported: Option<(Format, Operation)>,
    /// The data was redacted under this policy: its name and the SHA-256 of its file.
    pub redacted: Option<PolicyMark>,
    /// What the size and selection arguments left out ([`super::shape`]).
    pub shaped: Box<crate::ops::shape::Shaped>,
}

impl Reply {
    /// A failed reply with this code.
    pub fn failed(code: Code) -> Reply {
        Reply {
            status: Status::Failed,
            exit: exit_code_for(code),
            code: Some(code),
            data: None,
            detail: Detail::default(),
        }
    }

    /// A `CLI_USAGE` reply naming the argument at fault.
    pub fn usage(argument: &'static str) -> Reply {
        Reply { detail: Detail { argument: Some(argument), ..Detail::default() }, ..Reply::failed(Code::CLI_USAGE) }
    }

    /// A reply with data.
    pub fn with_data(status: Status, exit: u8, data: Value) -> Reply {
        Reply { status, exit, code: None, data: Some(data), detail: Detail::default() }
    }

    /// True when the MCP result is marked as an error (status `failed`).
    pub fn is_error(&self) -> bool {
        self.status == Status::Failed
    }

    /// The structured object: `{ok, status, exit, code?, message?, argument?, detected?,
    /// supported?, support?, redacted?, truncated?, cursor?, page?, finding_totals?, resource?,
    /// data?}`.
    pub fn into_value(self) -> Value {
        let mut obj = Map::new();
        obj.insert("ok".to_owned(), Value::Bool(self.status == Status::Success));
        obj.insert("status".to_owned(), Value::from(status_name(self.status)));
        obj.insert("exit".to_owned(), Value::from(self.exit));
        if let Some(code) = self.code {
            obj.insert("code".to_owned(), Value::from(code.as_str()));
            obj.insert("message".to_owned(), Value::from(code.meaning()));
        }
        if let Some(argument) = self.detail.argument {
            obj.insert("argument".to_owned(), Value::from(argument));
        }
        if let Some((format, operation)) = self.detail.unsupported {
            obj.insert("detected".to_owned(), Value::from(format.as_str()));
            let supported: Vec<&str> =
                Format::ALL.iter().filter(|f| f.supports(operation)).map(|f| f.as_str()).collect();
            obj.insert("supported".to_owned(), Value::from(supported));
            // `planned`: the format is recognised and not built yet; `not_offered`: it is built
            // and this tool does not take it.
            let support = if !format.is_built() { "planned" } else { "not_offered" };
            obj.insert("support".to_owned(), Value::from(support));
        }
        if let Some((policy, sha256)) = self.detail.redacted {
            let mut r = Map::new();
            r.insert("policy".to_owned(), Value::from(policy));
            r.insert("sha256".to_owned(), Value::from(sha256));
            obj.insert("redacted".to_owned(), Value::Object(r));
        }
        if let Some(page) = &self.detail.shaped.page {
            obj.insert("truncated".to_owned(), Value::Bool(page.cursor.is_some()));
            if let Some(cursor) = &page.cursor {
                obj.insert("cursor".to_owned(), Value::from(cursor.clone()));
            }
            obj.insert("page".to_owned(), page.to_value());
        }
        if let Some(totals) = &self.detail.shaped.findings {
            obj.insert("finding_totals".to_owned(), totals.to_value());
        }
        if let Some((uri, bytes)) = &self.detail.shaped.resource {
            let mut r = Map::new();
            r.insert("uri".to_owned(), Value::from(uri.as_str()));
            r.insert("mime_type".to_owned(), Value::from(crate::ops::shape::RESOURCE_MIME));
            r.insert("bytes".to_owned(), Value::from(*bytes));
            obj.insert("resource".to_owned(), Value::Object(r));
        }
        if let Some(data) = self.data {
            obj.insert("data".to_owned(), data);
        }
        Value::Object(obj)
    }
}

impl Reply {
    /// Writes the object of [`Reply::into_value`] with a json-lines record's `id` (null when
    /// none) and, when given, its `line` beside the other keys: the bytes `serde_json` writes
    /// for that tree (compact, keys in sorted order: its `Map` without `preserve_order`), written
    /// without building the tree. Fails only when a `data` value cannot be written as JSON.
    pub fn write_record(self, id: Option<&Value>, line: Option<u64>, out: &mut Vec<u8>) -> serde_json::Result<()> {
        // The keys in sorted order: argument, code, cursor, data, detected, exit, finding_totals,
        // id, line, message, ok, page, redacted, status, support, supported, truncated.
        let mut obj = Keys { out, first: true };
        if let Some(argument) = self.detail.argument {
            obj.key("argument")?;
            serde_json::to_writer(&mut *obj.out, argument)?;
        }
        if let Some(code) = self.code {
            obj.key("code")?;
            serde_json::to_writer(&mut *obj.out, code.as_str())?;
        }
        let page = self.detail.shaped.page.as_ref();
        if let Some(cursor) = page.and_then(|p| p.cursor.as_ref()) {
            obj.key("cursor")?;
            serde_json::to_writer(&mut *obj.out, cursor)?;
        }
        if let Some(data) = &self.data {
            obj.key("data")?;
            serde_json::to_writer(&mut *obj.out, data)?;
        }
        if let Some((format, _)) = self.detail.unsupported {
            obj.key("detected")?;
            serde_json::to_writer(&mut *obj.out, format.as_str())?;
        }
        obj.key("exit")?;
        serde_json::to_writer(&mut *obj.out, &self.exit)?;
        if let Some(totals) = &self.detail.shaped.findings {
            obj.key("finding_totals")?;
            serde_json::to_writer(&mut *obj.out, &totals.to_value())?;
        }
        obj.key("id")?;
        serde_json::to_writer(&mut *obj.out, id.unwrap_or(&Value::Null))?;
        if let Some(line) = line {
            obj.key("line")?;
            serde_json::to_writer(&mut *obj.out, &line)?;
        }
        if let Some(code) = self.code {
            obj.key("message")?;
            serde_json::to_writer(&mut *obj.out, code.meaning())?;
        }
        obj.key("ok")?;
        serde_json::to_writer(&mut *obj.out, &(self.status == Status::Success))?;
        if let Some(page) = page {
            obj.key("page")?;
            serde_json::to_writer(&mut *obj.out, &page.to_value())?;
        }
        if let Some((policy, sha256)) = &self.detail.redacted {
            obj.key("redacted")?;
            obj.out.extend_from_slice(b"{\"policy\":");
            serde_json::to_writer(&mut *obj.out, policy)?;
            obj.out.extend_from_slice(b",\"sha256\":");
            serde_json::to_writer(&mut *obj.out, sha256)?;
            obj.out.push(b'}');
        }
        obj.key("status")?;
        serde_json::to_writer(&mut *obj.out, status_name(self.status))?;
        if let Some((format, operation)) = self.detail.unsupported {
            let support = if !format.is_built() { "planned" } else { "not_offered" };
            obj.key("support")?;
            serde_json::to_writer(&mut *obj.out, support)?;
            let supported: Vec<&str> =
                Format::ALL.iter().filter(|f| f.supports(operation)).map(|f| f.as_str()).collect();
            obj.key("supported")?;
            serde_json::to_writer(&mut *obj.out, &supported)?;
        }
        if let Some(page) = page {
            obj.key("truncated")?;
            serde_json::to_writer(&mut *obj.out, &page.cursor.is_some())?;
        }
        obj.out.push(b'}');
        if let Some(data) = self.data {
            scrub_value(Some(data));
        }
        Ok(())
    }
}

/// A status as the result object names it.
fn status_name(status: Status) -> &'static str {
    match status {
        Status::Success => "success",
        Status::Verdict => "verdict",
        Status::Failed => "failed",
    }
}

/// The writer of an object's keys, in the order given.
struct Keys<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl Keys<'_> {
    fn key(&mut self, key: &'static str) -> serde_json::Result<()> {
        self.out.push(if self.first { b'{' } else { b',' });
        self.first = false;
        serde_json::to_writer(&mut *self.out, key)?;
        self.out.push(b':');
        Ok(())
    }
}

/// Runs one message tool call: the arguments read, the request run through `ops`, the reply
/// built. The caller guards against panics (`mcp::dispatch`, the json-lines reader).
pub fn run(tool: Tool, arguments: Option<Map<String, Value>>, config: &Config, watch: &Watch) -> Reply {
    if !config.every_tool && config.policy.as_ref().is_some_and(|p| !p.allows_tool(tool.as_str())) {
        return Reply::failed(Code::POLICY_TOOL_NOT_ALLOWED);
    }
    let mut args = arguments.unwrap_or_default();
    let controls = match crate::ops::shape::Controls::read(&mut args) {
        Ok(c) => c,
        Err(argument) => {
            scrub(args);
            return Reply::usage(argument);
        }
    };
    let input = match read_arguments(tool, &mut args, config) {
        Ok(input) => input,
        Err(e) => {
            scrub(args);
            return e.reply();
        }
    };
    scrub(args);
    let command = match tool {
        Tool::Parse => Command::Parse,
        Tool::Validate => Command::Validate,
        Tool::Inspect => Command::Inspect { detail: input.detail },
        Tool::Convert => Command::Convert,
        Tool::Redact => Command::Redact,
    };
    // `redact` applies the server's policy; without one, Safe Harbor (as the CLI's default).
    let policy = match (tool, &config.policy) {
        (Tool::Redact, None) => match crate::policy::load(crate::policy::SAFE_HARBOR.as_bytes()) {
            Ok(p) => Some(std::sync::Arc::new(p)),
            Err(_) => return Reply::failed(Code::CLI_INTERNAL),
        },
        _ => config.policy.clone(),
    };
    let policy_name = policy.as_ref().map(|p| p.name.clone()).unwrap_or_default();
    let request = Request {
        command,
        source: Source::Bytes(input.bytes),
        format: input.format,
        framing: input.framing,
        limits: config.limits,
        strict: config.strict,
        unsafe_show_values: false,
        ndjson: input.ndjson,
        to: None,
        convert: input.convert,
        policy,
        key: config.key.clone(),
        model: input.model,
        structures: config.structures.clone(),
        fhir: input.fhir,
    };
    let redacted = request.redaction().map(|p| (p.name.clone(), p.digest.clone()));
    let mut sink = Collect { keep_bytes: tool == Tool::Redact, watch: Some(watch.clone()), ..Collect::default() };
    let outcome = ops::run(request, &mut sink);
    if let Some(code) = outcome.code {
        let mut reply = Reply { exit: outcome.exit, ..Reply::failed(code) };
        reply.detail.unsupported = outcome.detected.map(|f| (f, tool.operation()));
        return reply;
    }
    let mut data = if tool == Tool::Redact {
        sink.into_redacted(&policy_name)
    } else {
        match sink.into_data(outcome.multi) {
            Ok(data) => data,
            Err(code) => return Reply::failed(code),
        }
    };
    let shaped = match controls.apply(&mut data) {
        Ok(shaped) => shaped,
        Err(argument) => return Reply::usage(argument),
    };
    let mut reply = Reply::with_data(outcome.status, outcome.exit, data);
    reply.detail.redacted = redacted;
    reply.detail.shaped = Box::new(shaped);
    reply
}

/// Redacts `bytes` under the server's policy when its disclosure is `redacted` (what `parse`
/// would show), for the tools that read a message without going through `ops` for their data
/// (`map_codes`). `Ok(None)`: no redaction applies. A message that cannot be redacted is a
/// failure: its codes are never read from the unredacted bytes (fail closed).
pub fn redact_for_disclosure(bytes: Vec<u8>, config: &Config) -> Result<Option<(Vec<u8>, PolicyMark)>, Code> {
    let Some(policy) = config.policy.clone() else { return Ok(None) };
    if policy.disclosure != crate::policy::Disclosure::Redacted {
        return Ok(None);
    }
    let marker = (policy.name.clone(), policy.digest.clone());
    let request = Request {
        command: Command::Redact,
        source: Source::Bytes(Phi::new(bytes)),
        format: None,
        framing: None,
        limits: config.limits,
        strict: false,
        unsafe_show_values: false,
        ndjson: false,
        to: None,
        convert: crate::convert::Options::default(),
        policy: Some(policy),
        key: config.key.clone(),
        model: ModelShape::Positional,
        structures: None,
        fhir: crate::formats::fhir::checks::Checks::default(),
    };
    let mut sink = Collect { keep_bytes: true, ..Collect::default() };
    let outcome = ops::run(request, &mut sink);
    if let Some(code) = outcome.code {
        sink.bytes.zeroize();
        return Err(code);
    }
    if outcome.records.failed > 0 {
        // A record left out of the redacted output is not read either; say so rather than
        // answer for part of the input as if it were the whole.
        sink.bytes.zeroize();
        return Err(Code::CLI_RECORDS_FAILED);
    }
    Ok(Some((std::mem::take(&mut sink.bytes), marker)))
}

/// A problem with the arguments: its code, and the argument's name when one is at fault.
struct ArgError {
    code: Code,
    argument: Option<&'static str>,
}

impl ArgError {
    fn usage(argument: &'static str) -> ArgError {
        ArgError { code: Code::CLI_USAGE, argument: Some(argument) }
    }

    fn reply(self) -> Reply {
        let mut reply = Reply::failed(self.code);
        reply.detail.argument = self.argument;
        reply
    }
}

impl From<Code> for ArgError {
    fn from(code: Code) -> ArgError {
        ArgError { code, argument: None }
    }
}

/// The input of a call, as read from its arguments.
struct Input {
    bytes: Phi<Vec<u8>>,
    format: Option<Format>,
    /// A framing named by an alias (`mllp`).
    framing: Option<crate::formats::codec::Framing>,
    /// One record per line (FHIR NDJSON), as the CLI's `--ndjson`.
    ndjson: bool,
    /// `convert` options (`bundle_type`, `default_timezone`).
    convert: crate::convert::Options,
    /// `parse`: the model (named unless `model` asks for the positional one).
    model: ModelShape,
    /// `inspect`: how much it says (`detail`).
    detail: crate::formats::codec::Detail,
    /// `validate` (FHIR): the reference validator's optional checks (`security_checks`, ...).
    fhir: crate::formats::fhir::checks::Checks,
}

/// Reads the declared properties; ignores the others.
fn read_arguments(tool: Tool, args: &mut Map<String, Value>, config: &Config) -> Result<Input, ArgError> {
    let limits = &config.limits;
    let content = args.remove("content");
    let base64 = args.remove("content_base64");
    let bytes = match (content, base64) {
        (Some(Value::String(text)), None) => text.into_bytes(),
        (None, Some(Value::String(mut encoded))) => {
            let decoded = decode_base64(encoded.as_bytes(), limits);
            encoded.zeroize();
            decoded.map_err(|code| match code {
                Code::CLI_USAGE => ArgError::usage("content_base64"),
                code => ArgError::from(code),
            })?
        }
        (content, base64) => {
            // Neither, both, or one that is not a string: name the one at fault.
            let argument = if content.is_none() && base64.is_some() { "content_base64" } else { "content" };
            scrub_value(content);
            scrub_value(base64);
            return Err(ArgError::usage(argument));
        }
    };
    let bytes = Phi::new(bytes);
    if bytes.classify(|b| b.len() as u64 > limits.max_input_bytes) {
        return Err(Code::CLI_INPUT_TOO_LARGE.into());
    }
    if tool == Tool::Convert {
        match args.get("to") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s == "fhir" => {}
            Some(_) => return Err(ArgError::usage("to")),
        }
    }
    let (format, framing) = match args.get("format") {
        None | Some(Value::Null) => (None, None),
        Some(Value::String(s)) => {
            let (f, framing) = crate::formats::resolve(s).ok_or(ArgError::usage("format"))?;
            (Some(f), framing)
        }
        Some(_) => return Err(ArgError::usage("format")),
    };
    let ndjson = match (tool, args.get("ndjson")) {
        (Tool::Convert, _) | (_, None | Some(Value::Null)) => false,
        (_, Some(Value::Bool(b))) => *b,
        (_, Some(_)) => return Err(ArgError::usage("ndjson")),
    };
    let mut convert = crate::convert::Options::default();
    if tool == Tool::Convert {
        convert = config.convert.clone();
        convert.bundle_type = match args.get("bundle_type") {
            None | Some(Value::Null) => crate::convert::BundleType::Message,
            Some(Value::String(s)) if s == "message" => crate::convert::BundleType::Message,
            Some(Value::String(s)) if s == "collection" => crate::convert::BundleType::Collection,
            Some(Value::String(s)) if s == "transaction" => crate::convert::BundleType::Transaction,
            Some(_) => return Err(ArgError::usage("bundle_type")),
        };
        convert.default_offset_minutes = match args.get("default_timezone") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(crate::convert::parse_offset(s).ok_or(ArgError::usage("default_timezone"))?),
            Some(_) => return Err(ArgError::usage("default_timezone")),
        };
    }
    let model = match (tool, args.get("model")) {
        (Tool::Parse, Some(Value::String(s))) => ModelShape::from_name(s).ok_or(ArgError::usage("model"))?,
        (Tool::Parse, Some(v)) if !v.is_null() => return Err(ArgError::usage("model")),
        _ => ModelShape::Named,
    };
    let detail = match (tool, args.get("detail")) {
        (Tool::Inspect, Some(Value::String(s))) => {
            crate::formats::codec::Detail::from_name(s).ok_or(ArgError::usage("detail"))?
        }
        (Tool::Inspect, Some(v)) if !v.is_null() => return Err(ArgError::usage("detail")),
        _ => crate::formats::codec::Detail::Summary,
    };
    let fhir = if tool == Tool::Validate { fhir_checks(args, config)? } else { Default::default() };
    Ok(Input { bytes, format, framing, ndjson, convert, model, detail, fhir })
}

/// `validate`'s optional FHIR checks: `fhir_checks`, an array of the CLI's options spelled
/// without their `--` (`security-checks`, `validate-reference=check-exists`,
/// `bundle-profile=Patient:0=URL`, ...; see [`crate::formats::fhir::checks::Checks::from_args`]),
/// a `bundle-profile`'s profile one the server's `--ig` loads. Anything else is a usage error
/// naming `fhir_checks`.
fn fhir_checks(args: &Map<String, Value>, config: &Config) -> Result<crate::formats::fhir::checks::Checks, ArgError> {
    use crate::formats::fhir::checks::Checks;
    let bad = || ArgError::usage("fhir_checks");
    let checks = match args.get("fhir_checks") {
        None | Some(Value::Null) => Checks::default(),
        Some(Value::Array(items)) => {
            let names = items.iter().map(Value::as_str).collect::<Option<Vec<&str>>>().ok_or_else(bad)?;
            Checks::from_args(names).ok_or_else(bad)?
        }
        Some(_) => return Err(bad()),
    };
    let loaded =
        |url: &str| config.structures.as_ref().is_some_and(|c| c.conformance.structure_definition(url).is_some());
    if checks.bundle_profiles.iter().any(|b| !loaded(&b.profile)) {
        return Err(bad());
    }
    Ok(checks)
}

/// The tool arguments that ask for `checks` (the CLI's options of a json-lines run, given to
/// every record).
pub fn checks_arguments(checks: &crate::formats::fhir::checks::Checks) -> Map<String, Value> {
    let mut out = Map::new();
    if !checks.is_default() {
        out.insert("fhir_checks".to_owned(), Value::Array(checks.to_args().into_iter().map(Value::from).collect()));
    }
    out
}

/// Zeroizes the strings of the arguments that were not consumed, then drops them.
fn scrub(args: Map<String, Value>) {
    for (_, v) in args {
        scrub_value(Some(v));
    }
}

fn scrub_value(v: Option<Value>) {
    match v {
        Some(Value::String(mut s)) => s.zeroize(),
        Some(Value::Array(items)) => items.into_iter().for_each(|v| scrub_value(Some(v))),
        Some(Value::Object(map)) => scrub(map),
        _ => {}
    }
}

/// Encodes standard base64 (padded).
fn encode_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (padding optional, ASCII white space ignored). Stops at the input
/// limit instead of allocating past it.
fn decode_base64(text: &[u8], limits: &Limits) -> Result<Vec<u8>, Code> {
    fn sextet(b: u8) -> Option<u32> {
        match b {
            b'A'..=b'Z' => Some(u32::from(b - b'A')),
            b'a'..=b'z' => Some(u32::from(b - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(b - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let cap = usize::try_from(limits.max_input_bytes).unwrap_or(usize::MAX);
    let mut out = Vec::with_capacity((text.len() / 4 * 3).min(cap.saturating_add(3)));
    let mut acc = 0u32;
    let mut n = 0u8;
    let mut padding = 0u8;
    for &b in text {
        if b.is_ascii_whitespace() {
            continue;
        }
        if b == b'=' {
            padding += 1;
            continue;
        }
        let Some(v) = (if padding == 0 { sextet(b) } else { None }) else {
            out.zeroize();
            return Err(Code::CLI_USAGE);
        };
        acc = (acc << 6) | v;
        n += 1;
        if n == 4 {
            out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]);
            acc = 0;
            n = 0;
            if out.len() > cap {
                out.zeroize();
                return Err(Code::CLI_INPUT_TOO_LARGE);
            }
        }
    }
    let ok = match n {
        0 => padding == 0,
        2 => {
            out.push((acc >> 4) as u8);
            padding == 0 || padding == 2
        }
        3 => {
            out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]);
            padding == 0 || padding == 1
        }
        _ => false,
    };
    acc.zeroize();
    if ok {
        Ok(out)
    } else {
        out.zeroize();
        Err(Code::CLI_USAGE)
    }
}

/// Collects the JSON objects of a run (one per record), as the CLI's `--json` would print them,
/// or (`redact`) the bytes it writes.
#[derive(Default)]
struct Collect {
    objects: Vec<Vec<u8>>,
    /// Keep the bytes items (`redact`'s output); otherwise they are not a tool's data.
    keep_bytes: bool,
    bytes: Vec<u8>,
    /// Counts the items taken; says when the call was cancelled.
    watch: Option<Watch>,
}

impl Sink for Collect {
    fn cancelled(&self) -> bool {
        self.watch.as_ref().is_some_and(Watch::is_cancelled)
    }

    /// A reply carries no manifest.
    fn reads_manifest(&self) -> bool {
        false
    }

    fn item(&mut self, item: Item<'_>) -> io::Result<()> {
        if let Some(w) = &self.watch {
            if w.is_cancelled() {
                // The reader has gone: the run stops here (records already on worker threads
                // come in after the runner's own check).
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            w.record_done();
        }
        match item {
            Item::Json { json, .. } => {
                self.objects.push(json.to_vec());
                Ok(())
            }
            Item::Bytes(b) if self.keep_bytes => {
                self.bytes.extend_from_slice(b);
                Ok(())
            }
            // Canonical bytes (`fmt`) are not a tool's data.
            Item::Bytes(_) => Ok(()),
        }
    }
}

impl Collect {
    /// `redact`'s data: `{policy, content}`, or `content_base64` when the bytes are not UTF-8.
    fn into_redacted(mut self, policy: &str) -> Value {
        let mut obj = Map::new();
        obj.insert("policy".to_owned(), Value::from(policy));
        let bytes = std::mem::take(&mut self.bytes);
        match String::from_utf8(bytes) {
            Ok(text) => {
                obj.insert("content".to_owned(), Value::String(text));
            }
            Err(e) => {
                let mut bytes = e.into_bytes();
                obj.insert("content_base64".to_owned(), Value::String(encode_base64(&bytes)));
                bytes.zeroize();
            }
        }
        Value::Object(obj)
    }

    /// One object, or `{"records": [...]}` for a multi-record input.
    fn into_data(mut self, multi: bool) -> Result<Value, Code> {
        let mut values = Vec::with_capacity(self.objects.len());
        let mut parsed = Ok(());
        for json in &mut self.objects {
            // The objects are our own JSON: a failure here is a bug, reported without text.
            match serde_json::from_slice::<Value>(json) {
                Ok(v) => values.push(v),
                Err(_) => parsed = Err(Code::CLI_INTERNAL),
            }
            json.zeroize();
        }
        parsed?;
        if !multi && values.len() == 1 {
            return Ok(values.pop().unwrap_or(Value::Null));
        }
        let mut obj = Map::new();
        obj.insert("records".to_owned(), Value::Array(values));
        Ok(Value::Object(obj))
    }
}

impl std::fmt::Debug for Collect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Collect({} objects)", self.objects.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(policy: &Arc<crate::policy::Policy>, key: &Arc<crate::keys::Key>, message: &str) -> Value {
        let config = Config { policy: Some(Arc::clone(policy)), key: Some(Arc::clone(key)), ..Config::default() };
        let mut args = Map::new();
        args.insert("content".to_owned(), Value::from(message));
        run(Tool::Redact, Some(args), &config, &Watch::default()).into_value()
    }

    /// The HL7 v2 redactor keeps its plans for the next input on the thread: a redaction under
    /// one policy must not use another's, whatever ran before it on the thread.
    #[test]
    fn redactions_alternating_policies_on_one_thread_are_each_policys_own() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let load = |p: &str| Arc::new(crate::policy::load_file(&root.join(p)).expect("a shipped policy"));
        let policies = [
            load("fixtures/scale_out/keyed.toml"),
            load("policy/safe-harbor.toml"),
            load("fixtures/redact/golden/pseudonym/policy.toml"),
        ];
        let key = Arc::new(crate::keys::Key::from_file(&root.join("fixtures/redact/golden/test.key")).expect("key"));
        let message =
            std::fs::read_to_string(root.join("fixtures/redact/golden/pseudonym/input.hl7")).expect("fixture");
        let fresh: Vec<Value> = policies
            .iter()
            .map(|p| {
                let (p, key, message) = (Arc::clone(p), Arc::clone(&key), message.clone());
                std::thread::spawn(move || redact(&p, &key, &message)).join().expect("no panic")
            })
            .collect();
        assert!(fresh[0] != fresh[1] && fresh[1] != fresh[2], "the policies give different redactions");
        for round in 0..3 {
            for (i, p) in policies.iter().enumerate() {
                assert_eq!(redact(p, &key, &message), fresh[i], "policy {i}, round {round}");
            }
        }
    }

    /// `write_record` writes the bytes `serde_json` writes for `into_value` with `id` and `line`
    /// inserted (what the json-lines stage wrote before it stopped building the tree), for
    /// every tool, data and failure, the redaction marker and the shaping fields.
    #[test]
    fn a_record_written_directly_is_the_bytes_of_its_value_tree() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let read = |p: &str| std::fs::read(root.join("fixtures").join(p)).expect("fixture");
        let text = |p: &str| Value::from(String::from_utf8(read(p)).expect("UTF-8 fixture"));
        let policy = Arc::new(crate::policy::load_file(&root.join("fixtures/scale_out/keyed.toml")).expect("policy"));
        let key = Arc::new(crate::keys::Key::from_file(&root.join("fixtures/redact/golden/test.key")).expect("key"));
        let keyed = Config { policy: Some(policy), key: Some(key), every_tool: true, ..Config::default() };
        let plain = Config::default();
        let hl7 = text("hl7v2/valid/charset_ascii_v2.5.hl7");
        let invalid = text("hl7v2/invalid/bad_version_value.hl7");
        let fhir = text("fhir/valid/bundle_document.json");
        let x12 = text("x12/valid/835.x12");
        let binary = Value::from(encode_base64(&[0x4d, 0x53, 0x48, 0x7c, 0xff, 0x0d]));
        type Case<'a> = (Tool, &'a Config, Vec<(&'static str, Value)>);
        let cases: Vec<Case<'_>> = vec![
            (Tool::Redact, &keyed, vec![("content", hl7.clone())]),
            (Tool::Redact, &plain, vec![("content", hl7.clone())]),
            (Tool::Redact, &plain, vec![("content", fhir.clone())]),
            (Tool::Redact, &plain, vec![("content_base64", binary)]),
            (Tool::Validate, &plain, vec![("content", hl7.clone())]),
            (Tool::Validate, &plain, vec![("content", invalid.clone())]),
            (Tool::Validate, &plain, vec![("content", invalid.clone()), ("max_findings", Value::from(1))]),
            (Tool::Validate, &plain, vec![("content", x12.clone())]),
            (Tool::Inspect, &plain, vec![("content", fhir.clone())]),
            (Tool::Parse, &plain, vec![("content", hl7.clone()), ("max_bytes", Value::from(600))]),
            (Tool::Parse, &keyed, vec![("content", hl7.clone())]),
            (Tool::Convert, &plain, vec![("content", hl7.clone())]),
            (Tool::Convert, &plain, vec![("content", x12)]),
            (Tool::Validate, &plain, vec![("content", Value::from("not a message"))]),
            (Tool::Validate, &plain, vec![("content", hl7), ("format", Value::from("no such format"))]),
            (Tool::Validate, &plain, vec![]),
        ];
        let ids = [None, Some(Value::from("r1")), Some(Value::from(7))];
        let mut seen = std::collections::BTreeSet::new();
        for (i, (tool, config, args)) in cases.iter().enumerate() {
            let call = || {
                let args: Map<String, Value> = args.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
                run(*tool, Some(args), config, &Watch::default())
            };
            let id = ids[i % ids.len()].clone();
            let line = (i % 2 == 0).then_some(i as u64 + 1);
            let mut tree = call().into_value();
            if let Value::Object(obj) = &mut tree {
                obj.insert("id".to_owned(), id.clone().unwrap_or(Value::Null));
                if let Some(n) = line {
                    obj.insert("line".to_owned(), Value::from(n));
                }
            }
            seen.extend(tree.as_object().into_iter().flat_map(|o| o.keys().cloned()));
            let want = serde_json::to_vec(&tree).expect("a tree of our own writes");
            let mut got = Vec::new();
            call().write_record(id.as_ref(), line, &mut got).expect("written");
            assert!(
                got == want,
                "case {i} ({tool:?}): {} != {}",
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want)
            );
        }
        for key in ["argument", "code", "cursor", "data", "detected", "finding_totals", "line", "page", "redacted"] {
            assert!(seen.contains(key), "no case writes `{key}`");
        }
    }

    #[test]
    fn base64_round_trips() {
        let limits = Limits::default();
        assert_eq!(decode_base64(b"TVNIfA==", &limits), Ok(b"MSH|".to_vec()));
        for n in 0..8usize {
            let bytes: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(77) ^ 0xA5).collect();
            assert_eq!(decode_base64(encode_base64(&bytes).as_bytes(), &limits), Ok(bytes));
        }
        assert_eq!(encode_base64(b"MSH|"), "TVNIfA==");
        assert_eq!(decode_base64(b"TVNIfF4", &limits), Ok(b"MSH|^".to_vec()));
        assert_eq!(decode_base64(b"TVNI\nfF5+", &limits), Ok(b"MSH|^~".to_vec()));
        assert_eq!(decode_base64(b"", &limits), Ok(Vec::new()));
        assert_eq!(decode_base64(b"TVNIfA=x", &limits), Err(Code::CLI_USAGE));
        assert_eq!(decode_base64(b"T", &limits), Err(Code::CLI_USAGE));
        assert_eq!(decode_base64(b"TV-I", &limits), Err(Code::CLI_USAGE));
        let small = Limits { max_input_bytes: 2, ..Limits::default() };
        assert_eq!(decode_base64(b"TVNIfF5+", &small), Err(Code::CLI_INPUT_TOO_LARGE));
    }
}
