//! The MCP server: `phiward::mcp::dispatch` called directly, and `phiward mcp` / `phiward-mcp`
//! spoken to over stdio with hand-written JSON-RPC.
//!
//! - the tool definitions (names, titles, annotations, schemas);
//! - `data` equals `phiward <tool> --json` for every fixture, and `exit` its exit code;
//! - argument errors are `failed`/`CLI_USAGE`/exit 2 and echo nothing; undeclared properties
//!   are ignored; `convert`'s data is `phiward convert --json`'s (FHIR input is unsupported);
//! - markers never leave `data` (the no-leak variants through every tool);
//! - over stdio: the exchange, malformed requests answered with their id, a line over the
//!   transport's limit answered `CLI_INPUT_TOO_LARGE` while the server keeps serving, nothing of
//!   a message on stderr under `RUST_LOG=trace`, start-up options (`--policy`, limits);
//! - fuzzed JSON-RPC method names: answered "Method not found" with a fixed text, and no name
//!   (nor a request id) on stdout or stderr; a `ping` answered while a long tool call runs;
//! - without the `mcp` feature, `phiward mcp` exits 69 with `CLI_PARSER_UNAVAILABLE`;
//! - the protocol, over a live session: progress notifications (records done, nothing else), a
//!   small call answered while a large one runs, a cancelled call stopped with no result sent,
//!   a cancelled `Watch` stopping a dispatch between records; resource templates, completions
//!   and prompts (following the policy), echoing nothing.
//!
//! The real-client acceptance test (the official Python SDK) is tests/peers/mcp_client.py.

#[cfg(feature = "mcp")]
use std::io::Write;
#[cfg(feature = "mcp")]
use std::process::{Command, Stdio};

#[cfg(feature = "mcp")]
use phiward::mcp::{self, Config, Tool};
#[cfg(feature = "mcp")]
use serde_json::{Value, json};

#[cfg(feature = "mcp")]
use crate::common::{base64, files_under, fixture, run_stdin};
#[cfg(feature = "mcp")]
use crate::no_leak::{has_marker, variants};

#[cfg(feature = "mcp")]
fn call(tool: &str, args: Value) -> Value {
    let args = match args {
        Value::Object(map) => Some(map),
        Value::Null => None,
        _ => panic!("arguments must be an object or null"),
    };
    mcp::dispatch(tool, args, &Config::default()).into_value()
}

#[cfg(feature = "mcp")]
fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("fixture is UTF-8")
}

/// What `phiward <tool> --json` gives: exit code and data (one object, or `{"records"}`).
#[cfg(feature = "mcp")]
fn cli(tool: &str, input: &[u8], format: Option<&str>, ndjson: bool) -> (i32, Option<Value>) {
    let mut args = vec![tool, "--json", "-"];
    if tool == "parse" {
        // The MCP default: the named model (the CLI's default is the positional one).
        args.extend(["--model", "named"]);
    }
    if let Some(f) = format {
        args.extend(["--format", f]);
    }
    if ndjson {
        args.push("--ndjson");
    }
    let o = run_stdin(&args, input);
    let lines: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("--json prints JSON lines"))
        .collect();
    let data = match lines.len() {
        0 => None,
        1 if lines[0].get("record").is_none() => Some(lines[0].clone()),
        _ => Some(json!({ "records": lines })),
    };
    (o.status.code().unwrap_or(-1), data)
}

#[cfg(feature = "mcp")]
#[test]
fn tools_list_shows_annotated_tools_with_schemas() {
    let tools = mcp::definitions();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["parse", "validate", "inspect", "convert", "redact", "find_equivalent", "map_codes"]);
    for t in &tools {
        let message_tool = Tool::from_name(&t.name).is_some();
        let v = serde_json::to_value(t).expect("a tool serializes");
        assert!(v["title"].as_str().is_some_and(|s| !s.is_empty()), "{} title", t.name);
        assert!(
            !message_tool || v["description"].as_str().is_some_and(|s| s.contains("Formats this build supports")),
            "{} description",
            t.name
        );
        assert_eq!(v["annotations"]["readOnlyHint"], true);
        assert_eq!(v["annotations"]["idempotentHint"], true);
        assert_eq!(v["annotations"]["openWorldHint"], false);
        assert_eq!(v["inputSchema"]["additionalProperties"], false);
        assert_eq!(v["outputSchema"]["type"], "object");
        assert_eq!(v["outputSchema"]["required"], json!(["ok", "status", "exit"]));
    }
    // Each message tool's `format` enum is what it takes in this build: built formats whose codec
    // implements its operation, and their aliases; content or content_base64 is required.
    for tool in Tool::ALL {
        let v = serde_json::to_value(&tools[Tool::ALL.iter().position(|t| *t == tool).expect("listed")]).expect("json");
        let names: Vec<String> = v["inputSchema"]["properties"]["format"]["enum"]
            .as_array()
            .expect("format enum")
            .iter()
            .map(|n| n.as_str().expect("a name").to_owned())
            .collect();
        assert!(!names.is_empty(), "{}", tool.as_str());
        for name in &names {
            let (format, _) = phiward::formats::resolve(name).expect("a name the server takes");
            assert!(format.is_built() && format.supports(tool.operation()), "{} lists {name}", tool.as_str());
        }
        for format in phiward::formats::Format::ALL {
            if format.supports(tool.operation()) {
                assert!(names.iter().any(|n| n == format.as_str()), "{} omits {}", tool.as_str(), format.as_str());
            }
        }
        assert_eq!(
            v["inputSchema"]["oneOf"],
            json!([{"required": ["content"]}, {"required": ["content_base64"]}]),
            "{}",
            tool.as_str()
        );
    }
    let convert = serde_json::to_value(&tools[3]).expect("serializes");
    assert_eq!(convert["inputSchema"]["properties"]["format"]["enum"], json!(["hl7", "mllp"]));
    let parse = serde_json::to_value(&tools[0]).expect("serializes");
    assert!(
        parse["description"].as_str().is_some_and(|d| d.contains("hl7")),
        "the support matrix is in the description"
    );
    let convert = serde_json::to_value(&tools[3]).expect("serializes");
    assert_eq!(convert["inputSchema"]["properties"]["to"]["enum"], json!(["fhir"]));
}

/// Every `$ref` of a schema (`#/$defs/<name>`), at any depth.
#[cfg(feature = "mcp")]
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => refs(x, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

/// `tools/list` fits in 32 KB (issue 34: it is the first thing an agent reads, whole): the
/// result as `definitions()` gives it and the JSON-RPC reply the server writes. The output
/// schemas share their parts through `$defs`, and every `$ref` resolves inside its own schema.
#[cfg(feature = "mcp")]
#[test]
fn tools_list_is_under_32_kb_with_schemas_whose_refs_resolve() {
    let tools = mcp::definitions();
    let result = serde_json::to_vec(&json!({ "tools": tools })).expect("serializes").len();
    assert!(result < 32_768, "tools/list result: {result} bytes");
    let mut lines = handshake();
    lines.push(line(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})));
    let (exit, replies, _) = exchange(env!("CARGO_BIN_EXE_phiward"), &["mcp"], &lines);
    assert_eq!(exit, 0);
    let wire = serde_json::to_vec(reply(&replies, 1)).expect("serializes").len();
    assert!(wire < 32_768, "tools/list reply: {wire} bytes");
    assert!(wire >= result, "the reply holds the result");
    for t in &tools {
        let v = serde_json::to_value(t).expect("a tool serializes");
        let out = &v["outputSchema"];
        let mut found = Vec::new();
        refs(out, &mut found);
        for r in &found {
            let name = r.strip_prefix("#/$defs/").unwrap_or_else(|| panic!("{}: $ref {r} outside $defs", t.name));
            assert!(out["$defs"].get(name).is_some(), "{}: $ref {r} does not resolve", t.name);
        }
        let message_tool = Tool::from_name(&t.name).is_some();
        if message_tool && t.name != "redact" {
            assert!(found.iter().any(|r| r == "#/$defs/record"), "{}: data refers to its record", t.name);
        }
        let mut input_refs = Vec::new();
        refs(&v["inputSchema"], &mut input_refs);
        assert!(input_refs.is_empty(), "{}: the input schema stands alone", t.name);
    }
    // The parse tool documents its `model` argument.
    let parse = serde_json::to_value(&tools[0]).expect("serializes");
    assert_eq!(parse["inputSchema"]["properties"]["model"]["enum"], json!(["named", "positional"]));
    assert_eq!(parse["inputSchema"]["properties"]["model"]["default"], "named");
}

/// The server's instructions follow its policy: they name the tools `tools/list` shows and no
/// other, and say that data is redacted under the policy.
#[cfg(feature = "mcp")]
#[test]
fn instructions_follow_the_policy() {
    let open = mcp::Server::new(Config::default()).instructions();
    for name in ["parse", "validate", "inspect", "convert", "redact", "find_equivalent", "map_codes"] {
        assert!(open.contains(name), "{name}");
    }
    assert!(!open.contains("Policy "), "no policy, no redaction sentence");
    let agent = std::fs::read(crate::common::root().join("policy/agent.toml")).expect("policy");
    let policy = phiward::policy::load(&agent).expect("loads");
    let server = mcp::Server::new(Config { policy: Some(std::sync::Arc::new(policy)), ..Config::default() });
    let text = server.instructions();
    let shown = server.tools_list_names();
    assert!(!shown.iter().any(|n| n == "map_codes" || n == "find_equivalent"), "{shown:?}");
    for name in &shown {
        assert!(text.contains(name.as_str()), "{name}");
    }
    for hidden in ["map_codes", "find_equivalent", "info://licenses"] {
        assert!(!text.contains(hidden), "the instructions mention {hidden}, which the policy hides");
    }
    assert!(text.contains("Policy agent"), "{text}");
}

#[cfg(feature = "mcp")]
#[test]
fn data_and_exit_equal_the_cli_json_for_every_fixture() {
    let mut files = Vec::new();
    for dir in std::fs::read_dir(fixture("")).expect("fixtures/").flatten() {
        files.extend(files_under(&dir.path().join("valid")));
        files.extend(files_under(&dir.path().join("invalid")));
    }
    assert!(files.len() > 50, "fixtures missing");
    let mut compared = 0;
    for file in &files {
        let input = std::fs::read(file).expect("fixture");
        let ndjson = file.extension().is_some_and(|e| e == "ndjson");
        let mut args = match std::str::from_utf8(&input) {
            Ok(s) => json!({ "content": s, "max_bytes": 0 }),
            Err(_) => json!({ "content_base64": base64(&input), "max_bytes": 0 }),
        };
        if ndjson {
            args["ndjson"] = json!(true);
        }
        for tool in ["parse", "validate", "inspect"] {
            let reply = call(tool, args.clone());
            let (exit, data) = cli(tool, &input, None, ndjson);
            let ctx = format!("{} / {tool}", file.display());
            assert_eq!(reply["exit"], json!(exit), "exit: {ctx}");
            match reply["status"].as_str() {
                Some("failed") => {
                    assert!(reply.get("data").is_none(), "failed has no data: {ctx}");
                    assert!(reply["code"].as_str().is_some(), "failed has a code: {ctx}");
                }
                Some("success") => {
                    assert_eq!(exit, 0, "{ctx}");
                    assert_eq!(reply.get("data"), data.as_ref(), "data: {ctx}");
                }
                Some("verdict") => {
                    assert_ne!(exit, 0, "{ctx}");
                    assert_eq!(reply.get("data"), data.as_ref(), "data: {ctx}");
                }
                other => panic!("status {other:?}: {ctx}"),
            }
            assert_eq!(reply["ok"], json!(reply["status"] == "success"), "ok: {ctx}");
            compared += 1;
        }
    }
    assert!(compared > 150);
}

#[cfg(feature = "mcp")]
#[test]
fn base64_content_gives_the_same_reply_as_text() {
    let input = std::fs::read(fixture("hl7v2/valid/charset_8859-1_v2.5.hl7")).expect("fixture");
    let reply = call("parse", json!({ "content_base64": base64(&input), "format": "hl7", "max_bytes": 0 }));
    assert_eq!(reply["status"], "success", "{reply}");
    let (_, data) = cli("parse", &input, Some("hl7"), false);
    assert_eq!(reply.get("data"), data.as_ref());
}

/// A failed reply: code, its fixed meaning, and nothing else.
#[cfg(feature = "mcp")]
fn failed(exit: u8, code: &str) -> Value {
    let meaning = phiward::diag::Code::from_name(code).expect("a registered code").meaning();
    json!({"ok": false, "status": "failed", "exit": exit, "code": code, "message": meaning})
}

/// A `CLI_USAGE` reply naming `argument`.
#[cfg(feature = "mcp")]
fn usage(argument: &str) -> Value {
    let mut v = failed(2, "CLI_USAGE");
    v["argument"] = json!(argument);
    v
}

#[cfg(feature = "mcp")]
#[test]
fn argument_errors_are_cli_usage_and_echo_nothing() {
    let msg = text(&std::fs::read(fixture("hl7v2/markers/markers_adt_a01_v2.5.1.hl7")).expect("fixture"));
    let cases: Vec<(&str, Value, &str)> = vec![
        ("MKR00001X", json!({ "content": msg }), "name"),
        ("validate", Value::Null, "content"),
        ("validate", json!({}), "content"),
        ("validate", json!({ "content": 42 }), "content"),
        ("validate", json!({ "content": ["MKR00002X"] }), "content"),
        ("parse", json!({ "content": null }), "content"),
        ("parse", json!({ "content": msg, "content_base64": "TUtS" }), "content"),
        ("parse", json!({ "content_base64": "MKR00003X!" }), "content_base64"),
        ("parse", json!({ "content_base64": ["MKR00003X"] }), "content_base64"),
        ("inspect", json!({ "content": msg, "format": "MKR00004X" }), "format"),
        ("inspect", json!({ "content": msg, "format": 3 }), "format"),
        ("convert", json!({ "content": msg, "to": "MKR00005X" }), "to"),
        ("convert", json!({ "content": msg, "bundle_type": "MKR00007X" }), "bundle_type"),
        ("convert", json!({ "content": msg, "default_timezone": "MKR00008X" }), "default_timezone"),
        ("convert", json!({ "to": "fhir" }), "content"),
        ("validate", json!({ "content": msg, "ndjson": "MKR00006X" }), "ndjson"),
        ("validate", json!({ "content": msg, "fhir_checks": "security-checks" }), "fhir_checks"),
        ("validate", json!({ "content": msg, "fhir_checks": ["MKR00009X"] }), "fhir_checks"),
        ("validate", json!({ "content": msg, "fhir_checks": [true] }), "fhir_checks"),
        ("validate", json!({ "content": msg, "fhir_checks": ["--security-checks"] }), "fhir_checks"),
        ("validate", json!({ "content": msg, "fhir_checks": ["validate-reference=MKR00010X"] }), "fhir_checks"),
        ("validate", json!({ "content": msg, "fhir_checks": ["bundle-profile=MKR00011X"] }), "fhir_checks"),
        // A well-formed rule whose profile the server does not load (it loads none).
        (
            "validate",
            json!({ "content": msg, "fhir_checks": ["bundle-profile=Patient:0=http://example.org/MKR00012X"] }),
            "fhir_checks",
        ),
    ];
    for (tool, args, argument) in cases {
        let reply = call(tool, args.clone());
        // The code, its fixed meaning and the argument's name: never the value.
        assert_eq!(reply, usage(argument), "{tool} {args}");
        assert!(!has_marker(reply.to_string().as_bytes()));
    }
}

#[cfg(feature = "mcp")]
#[test]
fn validate_declares_the_fhir_options_off_by_default() {
    let tools = mcp::definitions();
    let schema = |name: &str| {
        let t = tools.iter().find(|t| t.name == name).expect("a tool");
        serde_json::to_value(t).expect("a tool serializes")["inputSchema"].clone()
    };
    let checks = &schema("validate")["properties"]["fhir_checks"];
    assert_eq!(checks["type"], "array");
    assert!(checks["description"].as_str().is_some_and(|d| d.contains("CLI")), "{checks}");
    assert!(checks.get("default").is_none(), "none by default");
    assert!(schema("parse")["properties"].get("fhir_checks").is_none(), "validate's alone");
}

#[cfg(feature = "mcp")]
#[test]
fn validate_applies_the_fhir_options_asked() {
    let patient = json!({"resourceType": "Patient", "name": [{"text": "MKR00001X <script>"}]}).to_string();
    let plain = call("validate", json!({ "content": patient }));
    assert_eq!(plain["data"]["valid"], true, "{plain}");
    let checked = call("validate", json!({ "content": patient, "fhir_checks": ["security-checks"] }));
    assert_eq!(checked["data"]["valid"], false, "{checked}");
    let codes: Vec<&str> =
        checked["data"]["findings"].as_array().into_iter().flatten().filter_map(|f| f["code"].as_str()).collect();
    assert!(codes.contains(&"STRING_HTML_CONTENT"), "{codes:?}");
    assert!(!has_marker(checked.to_string().as_bytes()));
    let commented = format!("// MKR00002X\n{patient}");
    assert_eq!(call("validate", json!({ "content": commented }))["status"], "failed");
    let read = call("validate", json!({ "content": commented, "fhir_checks": ["allow-comments"] }));
    assert_eq!(read["data"]["valid"], true, "{read}");
}

#[cfg(feature = "mcp")]
#[test]
fn undeclared_properties_are_ignored() {
    let msg = text(&std::fs::read(fixture("hl7v2/valid/eol_cr_no_trailing.hl7")).expect("fixture"));
    let plain = call("validate", json!({ "content": msg }));
    let extra = call("validate", json!({ "content": msg, "strict": true, "MKR00001X": "MKR00002X" }));
    assert_eq!(plain, extra);
    assert_ne!(plain["status"], "failed", "{plain}");
}

#[cfg(feature = "mcp")]
#[test]
fn convert_data_is_the_cli_json() {
    for name in ["oru_r01", "adt_a01", "siu_s15"] {
        let bytes = std::fs::read(fixture(&format!("hl7v2/convert/{name}.hl7"))).expect("fixture");
        let reply = call("convert", json!({ "content": text(&bytes), "to": "fhir", "max_bytes": 0 }));
        let (exit, data) = cli("convert", &bytes, None, false);
        assert_eq!(reply["exit"], json!(exit), "{name}");
        assert_eq!(reply["data"], data.unwrap_or_default(), "{name}");
        assert_eq!(reply["status"], "success", "{name}");
    }
    let bytes = std::fs::read(fixture("hl7v2/convert/adt_a01.hl7")).expect("fixture");
    let reply =
        call("convert", json!({ "content": text(&bytes), "bundle_type": "transaction", "default_timezone": "-05:00" }));
    assert_eq!(reply["data"]["bundle"]["type"], "transaction");
    let reply = call("convert", json!({ "content": text(&bytes), "bundle_type": "document" }));
    assert_eq!(reply["code"], "CLI_USAGE");
    let fhir = std::fs::read(fixture("fhir/valid/condition.json"))
        .unwrap_or_else(|_| b"{\"resourceType\":\"Patient\"}".to_vec());
    let reply = call("convert", json!({ "content": text(&fhir) }));
    // What was detected, what convert takes, and that FHIR is built (convert does not take it).
    let mut unsupported = failed(65, "CLI_FORMAT_UNSUPPORTED");
    unsupported["detected"] = json!("fhir");
    unsupported["supported"] = json!(["hl7"]);
    unsupported["support"] = json!("not_offered");
    assert_eq!(reply, unsupported);
}

#[cfg(feature = "mcp")]
#[test]
fn content_over_the_input_limit_is_too_large() {
    let config =
        Config { limits: phiward::limits::Limits { max_input_bytes: 64, ..Default::default() }, ..Default::default() };
    let msg = text(&std::fs::read(fixture("hl7v2/valid/eol_cr_no_trailing.hl7")).expect("fixture"));
    let args = json!({ "content": msg });
    let reply = mcp::dispatch("validate", args.as_object().cloned(), &config).into_value();
    assert_eq!(reply, failed(65, "CLI_INPUT_TOO_LARGE"));
}

#[cfg(feature = "mcp")]
#[test]
fn markers_never_leave_the_data_of_an_mcp_reply() {
    let files = files_under(&fixture("hl7v2/markers"));
    assert!(files.len() >= 5, "marker fixtures missing");
    let mut calls = 0;
    for file in &files {
        let original = std::fs::read(file).expect("fixture");
        for (what, input) in variants(&original) {
            let content = match std::str::from_utf8(&input) {
                Ok(s) => json!({ "content": s }),
                Err(_) => json!({ "content_base64": base64(&input) }),
            };
            for format in [None, Some("hl7")] {
                let mut args = content.clone();
                if let Some(f) = format {
                    args["format"] = json!(f);
                }
                for tool in Tool::ALL {
                    let reply = call(tool.as_str(), args.clone());
                    calls += 1;
                    let ctx = format!("{} / {what} / {} / {format:?}", file.display(), tool.as_str());
                    let failed = reply["status"] == "failed";
                    if failed || matches!(tool, Tool::Validate | Tool::Inspect) {
                        assert!(!has_marker(reply.to_string().as_bytes()), "marker in a reply: {ctx}");
                    }
                    if tool == Tool::Convert {
                        let findings = reply["data"]["findings"].to_string();
                        assert!(!has_marker(findings.as_bytes()), "marker in a finding: {ctx}");
                    }
                    let mut outside = reply.clone();
                    outside.as_object_mut().map(|o| o.remove("data"));
                    assert!(!has_marker(outside.to_string().as_bytes()), "marker outside data: {ctx}");
                }
            }
        }
    }
    assert!(calls > 500);
}

/// Runs a server with `args`, feeds it `lines` and end of input, returns (exit, replies, stderr).
#[cfg(feature = "mcp")]
fn exchange(bin: &str, args: &[&str], lines: &[Vec<u8>]) -> (i32, Vec<Value>, String) {
    let mut child = Command::new(bin)
        .args(args)
        .env("RUST_LOG", "trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the MCP server");
    let mut stdin = child.stdin.take().expect("stdin");
    let input: Vec<u8> = lines.iter().flat_map(|l| l.iter().copied().chain([b'\n'])).collect();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait for the MCP server");
    writer.join().expect("writer");
    let replies = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("the server writes JSON lines"))
        .collect();
    (out.status.code().unwrap_or(-1), replies, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[cfg(feature = "mcp")]
fn line(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("serializes")
}

#[cfg(feature = "mcp")]
fn handshake() -> Vec<Vec<u8>> {
    vec![
        line(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})),
        line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
    ]
}

#[cfg(feature = "mcp")]
fn tool_call(id: u64, name: &str, arguments: Value) -> Vec<u8> {
    line(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}))
}

#[cfg(feature = "mcp")]
fn reply(replies: &[Value], id: u64) -> &Value {
    replies.iter().find(|r| r["id"] == json!(id)).unwrap_or_else(|| panic!("no reply to request {id}"))
}

#[cfg(feature = "mcp")]
fn structured(replies: &[Value], id: u64) -> &Value {
    let r = reply(replies, id);
    let sc = &r["result"]["structuredContent"];
    let text = r["result"]["content"][0]["text"].as_str().expect("text content");
    assert_eq!(
        &serde_json::from_str::<Value>(text).expect("text is JSON"),
        sc,
        "text content is the structured object"
    );
    assert_eq!(r["result"]["isError"], json!(sc["status"] == "failed"));
    sc
}

#[cfg(feature = "mcp")]
#[test]
fn stdio_exchange_answers_every_request_and_leaks_nothing() {
    let markers = std::fs::read(fixture("hl7v2/markers/markers_adt_a01_v2.5.1.hl7")).expect("fixture");
    let msg = text(&markers);
    let mut lines = handshake();
    lines.push(line(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})));
    lines.push(tool_call(2, "validate", json!({ "content": msg })));
    lines.push(tool_call(3, "MKR00001X", json!({ "content": msg })));
    // `arguments` that is not an object: rmcp cannot read it as a tool call.
    lines.push(tool_call(4, "parse", json!("MKR00002X")));
    // Not JSON from the middle on: the id is recovered from the head.
    let mut broken =
        br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"parse","arguments":{"content":"MKR00003X"#
            .to_vec();
    broken.extend_from_slice(b"\x01 MKR00004X");
    lines.push(broken);
    // A request that is not a tool call, malformed: a JSON-RPC error with its id, fixed text.
    lines.push(line(&json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": "MKR00005X"})));
    lines.push(b"MKR00006X not json at all".to_vec());
    lines.push(tool_call(7, "parse", json!({ "content": msg })));
    lines.push(tool_call(8, "inspect", json!({ "content": "MSH|^^^^|MKR00007X" })));
    let bin = env!("CARGO_BIN_EXE_phiward");
    let (exit, replies, stderr) = exchange(bin, &["mcp"], &lines);
    assert_eq!(exit, 0, "stderr: {}", stderr.len());
    assert_eq!(reply(&replies, 0)["result"]["serverInfo"]["name"], "phiward");
    assert_eq!(reply(&replies, 1)["result"]["tools"].as_array().map(Vec::len), Some(7));
    assert_ne!(structured(&replies, 2)["status"], "failed");
    assert_eq!(structured(&replies, 3)["code"], "CLI_USAGE");
    assert_eq!(structured(&replies, 4)["code"], "CLI_USAGE");
    assert_eq!(structured(&replies, 5)["code"], "CLI_USAGE");
    assert_eq!(reply(&replies, 6)["error"]["code"], -32600);
    let parsed = structured(&replies, 7);
    assert_eq!(parsed["status"], "success");
    assert!(has_marker(parsed["data"].to_string().as_bytes()), "parse data carries the values");
    assert_eq!(structured(&replies, 8)["status"], "failed");
    assert_eq!(replies.len(), 9, "one reply per request, none for the unreadable line");
    for r in &replies {
        if r["id"] != 7 {
            assert!(!has_marker(r.to_string().as_bytes()), "marker in reply {}", r["id"]);
        }
    }
    assert!(!has_marker(stderr.as_bytes()), "marker on stderr");
    assert!(stderr.contains("tool call finished"), "trace logging was on");
}

#[cfg(feature = "mcp")]
#[test]
fn an_oversized_request_is_too_large_and_the_server_keeps_serving() {
    let msg = text(&std::fs::read(fixture("hl7v2/markers/markers_adt_a01_v2.5.1.hl7")).expect("fixture"));
    let mut lines = handshake();
    // Over --max-input-bytes, under the transport's line limit.
    lines.push(tool_call(1, "validate", json!({ "content": msg.repeat(4) })));
    // Over the transport's line limit (1000 + 1000 / 8 + 1 MiB): never buffered whole.
    lines.push(tool_call(2, "parse", json!({ "content": msg.repeat(2 * 1024 * 1024 / msg.len()) })));
    lines.push(tool_call(3, "inspect", json!({ "content": msg[..800].to_owned() })));
    let bin = env!("CARGO_BIN_EXE_phiward");
    let (exit, replies, stderr) = exchange(bin, &["mcp", "--max-input-bytes", "1000"], &lines);
    assert_eq!(exit, 0);
    let too_large = failed(65, "CLI_INPUT_TOO_LARGE");
    assert_eq!(structured(&replies, 1), &too_large);
    assert_eq!(structured(&replies, 2), &too_large);
    assert_ne!(structured(&replies, 3)["status"], "failed");
    assert!(!has_marker(stderr.as_bytes()));
}

/// Method names a client could send: markers alone, after real prefixes, with JSON escapes,
/// control characters, non-ASCII, near misses of real methods, empty and long; a fixed seed.
#[cfg(feature = "mcp")]
fn fuzzed_method_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "MKR10000X",
        "tools/MKR10001X",
        "tools/call/MKR10002X",
        "resources/MKR10003X",
        "notifications/MKR10004X",
        "MKR10005X\"quoted\\",
        "MKR10006X\n\r\t\u{0}",
        "MKR10007X é 漢字 \u{1F600}",
        "tools/calls MKR10008X",
        "initialize MKR10009X",
        " MKR10010X ",
        "",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    names.push(format!("MKR10011X{}", "y".repeat(20_000)));
    let alphabet: Vec<char> = "abz/._-$#%{}[]\"\\:é漢\u{0}\u{7f}\u{202e} ".chars().collect();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for k in 0..40 {
        let mut name = format!("MKR{:05}X", 10_100 + k);
        for _ in 0..(k % 13) {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            name.push(alphabet[(seed >> 33) as usize % alphabet.len()]);
        }
        if k % 3 == 0 {
            name = format!("tools/{name}");
        }
        names.push(name);
    }
    names
}

/// No client-supplied method name reaches an error reply or a log line: each request with an
/// unknown method gets "Method not found" with its own id and a fixed text; notifications get
/// nothing; stderr (with `RUST_LOG=trace`) holds no name and no request id.
#[cfg(feature = "mcp")]
#[test]
fn fuzzed_method_names_are_never_echoed() {
    let names = fuzzed_method_names();
    let mut lines = handshake();
    for (k, name) in names.iter().enumerate() {
        lines.push(line(&json!({"jsonrpc": "2.0", "id": 100 + k, "method": name, "params": {"x": "MKR19999X"}})));
        lines.push(line(&json!({"jsonrpc": "2.0", "method": name})));
    }
    // A string id is echoed in its reply (JSON-RPC requires it), never logged.
    lines.push(line(&json!({"jsonrpc": "2.0", "id": "MKR19998X", "method": "MKR19997X"})));
    lines.push(line(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})));
    for bin in [env!("CARGO_BIN_EXE_phiward"), env!("CARGO_BIN_EXE_phiward-mcp")] {
        let args: &[&str] = if bin.ends_with("phiward") { &["mcp"] } else { &[] };
        let (exit, replies, stderr) = exchange(bin, args, &lines);
        assert_eq!(exit, 0);
        assert!(reply(&replies, 1)["result"].is_object(), "ping answered after the fuzzed names");
        for k in 0..names.len() {
            let r = reply(&replies, 100 + k as u64);
            assert_eq!(r["error"], json!({"code": -32601, "message": "Method not found"}), "reply {k}");
        }
        let by_string_id = replies.iter().find(|r| r["id"] == "MKR19998X").expect("a reply to the string id");
        assert_eq!(by_string_id["error"]["message"], "Method not found");
        assert_eq!(replies.len(), names.len() + 3, "one reply per request, none per notification");
        for r in &replies {
            if r["id"] != "MKR19998X" {
                assert!(!has_marker(r.to_string().as_bytes()), "marker in reply {}", r["id"]);
            }
        }
        assert!(!has_marker(stderr.as_bytes()), "a method name or request id on stderr");
    }
}

/// A `ping` sent after a long tool call is answered before that call's reply: tool calls run
/// off the service loop.
#[cfg(feature = "mcp")]
#[test]
fn a_ping_is_answered_while_a_long_call_runs() {
    let msg = text(&std::fs::read(fixture("hl7v2/markers/markers_adt_a01_v2.5.1.hl7")).expect("fixture"));
    let mut lines = handshake();
    // A batch of a few thousand messages: long enough to validate that the pings behind it are
    // read and answered while it runs.
    lines.push(tool_call(1, "validate", json!({ "content": msg.repeat(1500) })));
    for id in 2..12 {
        lines.push(line(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"})));
    }
    let (exit, replies, _) = exchange(env!("CARGO_BIN_EXE_phiward"), &["mcp"], &lines);
    assert_eq!(exit, 0);
    let position = |id: u64| replies.iter().position(|r| r["id"] == json!(id)).expect("a reply");
    assert_ne!(structured(&replies, 1)["status"], "failed");
    assert!(position(2) < position(1), "the first ping waited for the tool call");
}

#[cfg(feature = "mcp")]
#[test]
fn the_phiward_mcp_binary_serves_the_same_tools() {
    let mut lines = handshake();
    lines.push(line(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})));
    lines.push(tool_call(2, "validate", json!({ "content": "MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|1|P|2.5.1\rEVN|A01|20240101\rPID|1||1\rPV1|1|I\r" })));
    let (exit, replies, _) = exchange(env!("CARGO_BIN_EXE_phiward-mcp"), &[], &lines);
    assert_eq!(exit, 0);
    let names: Vec<Value> =
        reply(&replies, 1)["result"]["tools"].as_array().expect("tools").iter().map(|t| t["name"].clone()).collect();
    assert_eq!(
        names,
        [
            json!("parse"),
            json!("validate"),
            json!("inspect"),
            json!("convert"),
            json!("redact"),
            json!("find_equivalent"),
            json!("map_codes")
        ]
    );
    assert_ne!(structured(&replies, 2)["status"], "failed");
}

#[cfg(feature = "mcp")]
#[test]
fn a_policy_sets_limits_and_a_bad_policy_stops_the_start() {
    let dir = std::env::temp_dir().join(format!("phiward-mcp-policy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let good = dir.join("limits.toml");
    std::fs::write(&good, b"[policy]\nname = \"t\"\ndisclosure = \"full\"\n[limits]\nmax_input_bytes = 100\n")
        .expect("write");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, b"[policy]\nname = \"t\"\n[limits]\nmax_input_bytes = \"MKR00001X\"\n").expect("write");
    let bin = env!("CARGO_BIN_EXE_phiward");
    let mut lines = handshake();
    lines.push(tool_call(1, "validate", json!({ "content": format!("MSH|^~\\&|{}", "A".repeat(200)) })));
    let (exit, replies, _) = exchange(bin, &["mcp", "--policy", good.to_str().expect("utf-8 path")], &lines);
    assert_eq!(exit, 0);
    assert_eq!(structured(&replies, 1)["code"], "CLI_INPUT_TOO_LARGE");
    let (exit, replies, stderr) = exchange(bin, &["mcp", "--policy", bad.to_str().expect("utf-8 path")], &handshake());
    assert_eq!((exit, replies.len()), (2, 0));
    assert!(stderr.starts_with("phiward: POLICY_INVALID_VALUE: ") && stderr.lines().count() == 1, "{stderr}");
    assert!(!has_marker(stderr.as_bytes()));
    let missing = dir.join("missing.toml");
    let (exit, _, stderr) = exchange(bin, &["mcp", "--policy", missing.to_str().expect("utf-8 path")], &handshake());
    assert_eq!(exit, 66);
    assert!(!stderr.contains("missing.toml"), "the path is not shown");
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(not(feature = "mcp"))]
#[test]
fn without_the_feature_phiward_mcp_exits_69() {
    let o = crate::common::run(&["mcp"]);
    assert_eq!(o.status.code(), Some(69));
    crate::common::assert_failure_line(&o, "CLI_PARSER_UNAVAILABLE");
    assert!(String::from_utf8_lossy(&o.stderr).contains("feature `mcp`"));
}

#[cfg(feature = "mcp")]
#[test]
fn framed_astm_over_content_base64_is_read_like_text() {
    // E1381 frames carry control bytes (STX, ETX, ENQ, ACK, EOT): content_base64 takes them as
    // they are, and `format: "astm"` reads the frames.
    let input = std::fs::read(fixture("astm/valid/framed.astm")).expect("fixture");
    let by64 = call("parse", json!({ "content_base64": base64(&input), "format": "astm" }));
    assert_eq!(by64["status"], "success", "{by64}");
    assert!(by64.to_string().contains("\"framed\":true"), "{by64}");
    let text = call("parse", json!({ "content": String::from_utf8(input).expect("ASCII"), "format": "astm" }));
    assert_eq!(by64, text);
    let bad = std::fs::read(fixture("astm/invalid/checksum_bad.astm")).expect("fixture");
    let v = call("validate", json!({ "content_base64": base64(&bad), "format": "astm" }));
    assert_eq!(v["status"], "verdict", "{v}");
    assert!(v.to_string().contains("E1381_CHECKSUM_MISMATCH"), "{v}");
}

/// The tokens `MKR` + digits in `bytes` (the markers of the marker fixtures, and fragments).
#[cfg(feature = "mcp")]
fn marker_tokens(bytes: &[u8]) -> std::collections::BTreeSet<Vec<u8>> {
    let mut out = std::collections::BTreeSet::new();
    let mut i = 0;
    while i + 3 < bytes.len() {
        if &bytes[i..i + 3] == b"MKR" && bytes[i + 3].is_ascii_digit() {
            let end = bytes[i + 3..].iter().position(|b| !b.is_ascii_digit()).map_or(bytes.len(), |n| i + 3 + n);
            out.insert(bytes[i..end].to_vec());
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// No side door (issue 34): under every shipped policy with its `tools` line taken out (every
/// tool allowed), no tool returns a marker that the policy's own `redact` does not return. Every
/// message tool and `map_codes` (which reads codes out of a message) is called on every marker
/// fixture; `find_equivalent` reads no message (its input is the caller's own search term).
/// Under Safe Harbor and the agent policy nothing survives `redact`, so nothing comes back at all;
/// the limited data set keeps what it documents (the city), and only that.
#[cfg(feature = "mcp")]
#[test]
fn no_tool_is_a_side_door_around_the_policy() {
    let mut files = Vec::new();
    for dir in ["hl7v2/markers", "redact/markers", "dicom/markers", "ccda/markers", "ncpdp-script/markers"] {
        files.extend(files_under(&fixture(dir)));
    }
    files.extend(
        files_under(&fixture("redact/red_team"))
            .into_iter()
            .filter(|f| f.extension().is_some_and(|e| e == "hl7" || e == "json")),
    );
    assert!(files.len() >= 15, "marker fixtures missing");
    // Every shipped policy: a new one is covered without editing this test.
    let mut policies: Vec<String> = std::fs::read_dir(crate::common::root().join("policy"))
        .expect("policy folder")
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".toml").map(str::to_owned))
        .collect();
    policies.sort();
    assert!(policies.len() >= 4 && policies.iter().any(|p| p == "dicom-basic"), "{policies:?}");
    let mut checked = 0;
    for name in &policies {
        let name = name.as_str();
        let text =
            std::fs::read_to_string(crate::common::root().join("policy").join(format!("{name}.toml"))).expect("policy");
        let open: String =
            text.lines().filter(|l| !l.trim_start().starts_with("tools =")).map(|l| format!("{l}\n")).collect();
        let policy = phiward::policy::load(open.as_bytes()).expect("policy loads");
        assert!(policy.tools.is_none(), "{name}: the tools line is out");
        let config = Config {
            policy: Some(std::sync::Arc::new(policy)),
            key: Some(std::sync::Arc::new(phiward::keys::Key::from_bytes(vec![7u8; 32]).expect("key"))),
            ..Config::default()
        };
        for file in &files {
            let input = std::fs::read(file).expect("fixture");
            let content = match std::str::from_utf8(&input) {
                Ok(s) => json!({ "content": s }),
                Err(_) => json!({ "content_base64": base64(&input) }),
            };
            let redacted = mcp::dispatch("redact", content.as_object().cloned(), &config).into_value();
            let allowed = marker_tokens(redacted.to_string().as_bytes());
            if name != "limited-data-set" {
                assert!(allowed.is_empty(), "{name} {}: redact leaves markers", file.display());
            }
            let mut calls: Vec<(&str, Value)> = Tool::ALL.iter().map(|t| (t.as_str(), content.clone())).collect();
            for map in [
                "http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2",
                "http://hl7.org/fhir/ConceptMap/cm-contact-point-use-v2",
            ] {
                let mut args = content.clone();
                args["map"] = json!(map);
                calls.push(("map_codes", args));
            }
            for (tool, args) in calls {
                let reply = mcp::dispatch(tool, args.as_object().cloned(), &config).into_value();
                let ctx = format!("{name} / {} / {tool}", file.display());
                let leaked: Vec<_> =
                    marker_tokens(reply.to_string().as_bytes()).difference(&allowed).cloned().collect();
                assert!(leaked.is_empty(), "{ctx}: {} marker(s) the policy's redact removes", leaked.len());
                if reply["status"] != "failed" && !matches!(tool, "validate" | "inspect") {
                    assert_eq!(reply["redacted"]["policy"], json!(name), "{ctx}: {reply}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 100, "{checked} replies with data checked");
}

/// A batch of `n` synthetic ADT messages (invented people), one record each.
#[cfg(feature = "mcp")]
fn adt_batch(n: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        out.push_str(&format!(
            "MSH|^~\\&|SND|FAC|RCV|FAC|20240101120000||ADT^A01^ADT_A01|MSG{i:05}|P|2.5.1\r\
             EVN|A01|20240101120000\r\
             PID|1||MRN{i:05}^^^FAC^MR||Quillfeather^Odessa^J||19800101|F|||{i} Lantern Row^^Brookvale^VT^05999\r\
             PV1|1|I|WARD^1^A\r\
             OBX|1|ST|8302-2^Body height^LN||text {i}||||||F\r"
        ));
    }
    out
}

#[cfg(feature = "mcp")]
#[test]
fn default_replies_fit_a_context_window_and_cursors_walk_the_whole() {
    let batch = adt_batch(150);
    let mut paged = 0;
    for tool in ["parse", "validate", "inspect", "convert", "redact"] {
        let whole = call(tool, json!({ "content": batch, "max_bytes": 0 }));
        assert_ne!(whole["status"], "failed", "{tool}: {}", whole["code"]);
        assert!(whole.get("page").is_none(), "{tool}: no limit, no page");
        let first = call(tool, json!({ "content": batch }));
        let size = first["data"].to_string().len();
        assert!(size <= mcp::shape::DEFAULT_MAX_BYTES, "{tool}: {size} bytes by default");
        assert!(first.to_string().len() < 16 * 1024, "{tool}: the reply is over 16 KB");
        if whole["data"].to_string().len() <= mcp::shape::DEFAULT_MAX_BYTES {
            assert_eq!(first, whole, "{tool}: data under the default is whole");
            continue;
        }
        assert_eq!(first["truncated"], true, "{tool}");
        assert_eq!(first["page"]["start"], 0, "{tool}");
        paged += 1;
        // Walk the cursors: the pages put together are the whole, nothing lost or repeated.
        let (mut records, mut content) = (Vec::new(), String::new());
        let mut reply = first;
        for _ in 0..1000 {
            if let Some(list) = reply["data"]["records"].as_array() {
                records.extend(list.iter().cloned());
            }
            if let Some(text) = reply["data"]["content"].as_str() {
                content.push_str(text);
            }
            let Some(cursor) = reply.get("cursor").and_then(Value::as_str).map(str::to_owned) else { break };
            assert_eq!(reply["truncated"], true);
            reply = call(tool, json!({ "content": batch, "cursor": cursor }));
            assert_ne!(reply["status"], "failed", "{tool}: {reply}");
        }
        assert_eq!(reply["truncated"], false, "{tool}: the last page says so");
        match whole["data"]["records"].as_array() {
            Some(list) => assert_eq!(&records, list, "{tool}: pages differ from the whole"),
            None => assert_eq!(content, whole["data"]["content"].as_str().unwrap_or_default(), "{tool}"),
        }
    }
    assert!(paged >= 4, "only {paged} tools had data over the default");
}

/// A `tools/call` through the server (`Server::call`, as the transport runs it): the result's
/// structured content and its content blocks.
#[cfg(feature = "mcp")]
fn server_call(server: &mcp::Server, tool: &str, args: Value) -> (Value, Vec<Value>) {
    let Value::Object(map) = args else { panic!("arguments must be an object") };
    let params = rmcp::model::CallToolRequestParams::new(tool.to_owned()).with_arguments(map);
    let result = server.call(params);
    let structured = result.structured_content.clone().expect("structured content");
    let blocks = result.content.iter().map(|b| serde_json::to_value(b).expect("a block is JSON")).collect();
    (structured, blocks)
}

#[cfg(feature = "mcp")]
#[test]
fn large_results_come_as_an_embedded_resource_or_a_link() {
    let server = mcp::Server::new(Config::default());
    let batch = adt_batch(150);
    for tool in ["parse", "validate", "inspect", "convert", "redact"] {
        let (whole, _) = server_call(&server, tool, json!({ "content": batch, "max_bytes": 0 }));
        let data = whole["data"].to_string();
        // A link: the reply carries where the data is, not the data; reading it gives the whole.
        let (linked, blocks) = server_call(&server, tool, json!({ "content": batch, "deliver": "link" }));
        assert!(linked.get("data").is_none(), "{tool}: {linked}");
        assert_eq!((&linked["status"], &linked["exit"]), (&whole["status"], &whole["exit"]), "{tool}");
        assert!(linked.get("truncated").is_none() && linked.get("cursor").is_none(), "{tool}: not paged");
        let uri = linked["resource"]["uri"].as_str().expect("a uri").to_owned();
        assert!(uri.starts_with("phiward://result/"), "{uri}");
        assert_eq!(linked["resource"]["bytes"], data.len(), "{tool}");
        assert_eq!(linked["resource"]["mime_type"], "application/json");
        assert_eq!(blocks.len(), 2, "{tool}: the text and the link");
        assert_eq!(blocks[0]["type"], "text");
        let envelope: Value = serde_json::from_str(blocks[0]["text"].as_str().expect("text")).expect("JSON");
        assert_eq!(envelope, linked, "{tool}: the text block is the structured content");
        assert_eq!(blocks[1]["type"], "resource_link", "{tool}: {}", blocks[1]);
        assert_eq!(blocks[1]["uri"], uri.as_str());
        assert_eq!(blocks[1]["size"], data.len());
        let (read, mime) = server.read(&uri).expect("the link reads");
        assert_eq!(mime, "application/json");
        assert_eq!(read, data, "{tool}: the resource is the whole data");
        // Embedded: the same text inside the result.
        let (embedded, blocks) = server_call(&server, tool, json!({ "content": batch, "deliver": "resource" }));
        assert!(embedded.get("data").is_none(), "{tool}");
        assert_eq!(blocks.len(), 2, "{tool}");
        assert_eq!(blocks[1]["type"], "resource", "{tool}: {}", blocks[1]);
        assert_eq!(blocks[1]["resource"]["text"], data.as_str(), "{tool}");
        assert_eq!(blocks[1]["resource"]["uri"], embedded["resource"]["uri"], "{tool}");
        assert_eq!(blocks[1]["resource"]["mimeType"], "application/json");
        // Inline stays as it was: the structured content and one text block.
        let (inline, blocks) =
            server_call(&server, tool, json!({ "content": batch, "deliver": "inline", "max_bytes": 0 }));
        assert_eq!(inline, whole, "{tool}");
        assert_eq!(blocks.len(), 1);
    }
    // Selection and findings filters apply to what the resource holds.
    let (selected, _) = server_call(&server, "parse", json!({ "content": batch, "segments": ["PID"], "max_bytes": 0 }));
    let (linked, _) =
        server_call(&server, "parse", json!({ "content": batch, "segments": ["PID"], "deliver": "link" }));
    let (read, _) = server.read(linked["resource"]["uri"].as_str().expect("uri")).expect("reads");
    assert_eq!(read, selected["data"].to_string());
    // Paging does not apply to a resource; unknown ways and URIs are refused, naming nothing.
    for (args, argument) in [
        (json!({ "content": batch, "deliver": "link", "max_bytes": 100 }), "max_bytes"),
        (json!({ "content": batch, "deliver": "resource", "cursor": "records:2" }), "cursor"),
        (json!({ "content": batch, "deliver": "attachment" }), "deliver"),
        (json!({ "content": batch, "deliver": 1 }), "deliver"),
    ] {
        let (reply, _) = server_call(&server, "parse", args);
        assert_eq!(reply, usage(argument));
    }
    for uri in ["phiward://result/0", "phiward://result/999999", "phiward://result/1/..", "phiward://other/1"] {
        assert!(server.read(uri).is_none(), "{uri}");
    }
    // A failed call has no data and no resource.
    let (failed, blocks) = server_call(&server, "parse", json!({ "content": "not a message", "deliver": "link" }));
    assert_eq!(failed["status"], "failed");
    assert!(failed.get("resource").is_none() && blocks.len() == 1, "{failed}");
}

#[cfg(feature = "mcp")]
#[test]
fn a_linked_result_holds_no_more_than_the_policy_lets_out() {
    // Under a redacting policy, the resource is the redacted data the inline reply carries.
    let agent = std::fs::read(crate::common::root().join("policy/agent.toml")).expect("policy");
    let policy = phiward::policy::load(&agent).expect("loads");
    let server = mcp::Server::new(Config { policy: Some(std::sync::Arc::new(policy)), ..Config::default() });
    let mut linked_calls = 0;
    for file in files_under(&fixture("hl7v2/markers")) {
        let original = std::fs::read(&file).expect("fixture");
        for (what, input) in variants(&original).into_iter().take(4) {
            let content = String::from_utf8_lossy(&input).into_owned();
            for tool in ["parse", "convert", "redact"] {
                let ctx = format!("{} / {what} / {tool}", file.display());
                let (inline, _) = server_call(&server, tool, json!({ "content": content, "max_bytes": 0 }));
                let (linked, blocks) = server_call(&server, tool, json!({ "content": content, "deliver": "link" }));
                assert_eq!(linked.get("redacted"), inline.get("redacted"), "{ctx}");
                assert_eq!(linked["status"], inline["status"], "{ctx}");
                // Nothing but the resource holds the data: no marker in the reply or its blocks.
                assert!(!has_marker(linked.to_string().as_bytes()), "{ctx}: a marker beside the data");
                for block in &blocks {
                    assert!(!has_marker(block.to_string().as_bytes()), "{ctx}: a marker in a block");
                }
                let Some(uri) = linked["resource"]["uri"].as_str() else { continue };
                let (read, _) = server.read(uri).expect("reads");
                assert_eq!(read, inline["data"].to_string(), "{ctx}: the resource is the redacted data");
                linked_calls += 1;
            }
        }
    }
    assert!(linked_calls >= 20, "{linked_calls}");
}

#[cfg(feature = "mcp")]
#[test]
fn selection_returns_exactly_what_was_asked() {
    let batch = adt_batch(3);
    let reply =
        call("parse", json!({ "content": batch, "fields": ["PID-5", "PID-7"], "segments": ["OBX"], "max_bytes": 0 }));
    assert_eq!(reply["status"], "success", "{reply}");
    for record in reply["data"]["records"].as_array().expect("records") {
        let segments = record["model"]["segments"].as_array().expect("segments");
        let ids: Vec<&str> = segments.iter().map(|s| s["id"].as_str().unwrap_or_default()).collect();
        assert_eq!(ids, ["PID", "OBX"]);
        // The named model (the default): the fields asked for, keyed by position and name.
        let keys: Vec<&String> = segments[0]["fields"].as_object().expect("fields").keys().collect();
        assert_eq!(keys, ["5 patient_name", "7 date_time_of_birth"]);
        assert!(segments[1]["fields"].as_object().is_some_and(|f| f.len() >= 5), "OBX whole");
    }
    let reply = call(
        "parse",
        json!({ "content": batch, "fields": ["PID-5", "PID-7"], "segments": ["OBX"], "max_bytes": 0, "model": "positional" }),
    );
    assert_eq!(reply["status"], "success", "{reply}");
    for record in reply["data"]["records"].as_array().expect("records") {
        let segments = record["model"]["segments"].as_array().expect("segments");
        let ids: Vec<&str> = segments.iter().map(|s| s["id"].as_str().unwrap_or_default()).collect();
        assert_eq!(ids, ["PID", "OBX"]);
        for (i, field) in segments[0]["fields"].as_array().expect("fields").iter().enumerate() {
            let kept = i + 1 == 5 || i + 1 == 7;
            assert_eq!(field.as_array().is_some_and(|f| !f.is_empty()), kept, "PID-{}", i + 1);
        }
        assert!(segments[1]["fields"].as_array().is_some_and(|f| f.len() >= 5), "OBX whole");
    }
    // Findings: only the most severe, with the totals of all.
    let invalid = "MSH|^~\\&|A|B|C|D|2024||ZZZ^Q99|1|P|2.5.1\rPID|1||X||Y\r";
    let all = call("validate", json!({ "content": invalid }));
    let n = all["data"]["findings"].as_array().map_or(0, Vec::len);
    assert!(n >= 2, "{all}");
    let capped = call("validate", json!({ "content": invalid, "max_findings": 1, "min_severity": "warning" }));
    assert_eq!(capped["data"]["findings"].as_array().map(Vec::len), Some(1));
    assert_eq!(capped["finding_totals"]["total"], json!(n));
    assert_eq!(capped["finding_totals"]["returned"], json!(1));
    // FHIR: resource types of a Bundle.
    let bundle = json!({"resourceType": "Bundle", "type": "collection", "entry": [
        {"fullUrl": "urn:uuid:0c3f1e2a-1111-4e5e-9a7b-000000000001", "resource": {"resourceType": "Patient", "id": "a"}},
        {"fullUrl": "urn:uuid:0c3f1e2a-1111-4e5e-9a7b-000000000002", "resource": {"resourceType": "Observation", "id": "b", "status": "final", "code": {"text": "x"}}}
    ]});
    let reply = call("parse", json!({ "content": bundle.to_string(), "resource_types": ["Observation"] }));
    let entries = reply["data"]["model"]["entry"].as_array().expect("entries");
    assert_eq!(entries.len(), 1, "{reply}");
    assert_eq!(entries[0]["resource"]["resourceType"], "Observation");
    // FHIR paths: the elements named, with each kept resource's type and id, and the findings on them.
    let reply = call(
        "parse",
        json!({ "content": bundle.to_string(), "paths": ["entry.resource.ofType(Observation).status", "Patient.id"] }),
    );
    assert_eq!(
        reply["data"]["model"],
        json!({"resourceType": "Bundle", "entry": [
            {"fullUrl": "urn:uuid:0c3f1e2a-1111-4e5e-9a7b-000000000001", "resource": {"resourceType": "Patient", "id": "a"}},
            {"fullUrl": "urn:uuid:0c3f1e2a-1111-4e5e-9a7b-000000000002", "resource": {"resourceType": "Observation", "id": "b", "status": "final"}}
        ]}),
        "{reply}"
    );
    let bad = json!({"resourceType": "Patient", "gender": "nope", "active": "yes", "name": [{"family": 1}]});
    let reply = call("validate", json!({ "content": bad.to_string(), "paths": ["Patient.name"] }));
    assert_eq!(reply["argument"], "paths", "validate has no model to select in: {reply}");
    let reply = call("parse", json!({ "content": bad.to_string(), "paths": ["Patient.name"] }));
    let locations: Vec<&str> =
        reply["data"]["warnings"].as_array().into_iter().flatten().filter_map(|f| f["location"].as_str()).collect();
    assert_eq!(locations, ["Patient.name[0].family"], "{reply}");
    assert_eq!(
        call("parse", json!({ "content": bundle.to_string(), "paths": ["Patient..name"] }))["argument"],
        "paths"
    );
    assert_eq!(call("parse", json!({ "content": batch, "paths": ["Patient.name"] }))["argument"], "paths");
    // A selection that applies to nothing names its argument rather than answering with all.
    assert_eq!(call("parse", json!({ "content": bundle.to_string(), "segments": ["PID"] }))["argument"], "segments");
    assert_eq!(call("parse", json!({ "content": batch, "resource_types": ["Patient"] }))["argument"], "resource_types");
    assert_eq!(call("parse", json!({ "content": batch, "cursor": "records:99999" }))["argument"], "cursor");
}

/// `phiward mcp --audit-log`: one chained, value-free line per tool call (an unlisted tool's
/// name is `unknown`, never the client's string), and one when the server stops.
#[cfg(feature = "mcp")]
#[test]
fn audit_log_has_a_line_per_tool_call() {
    let dir = std::env::temp_dir().join(format!("phiward-mcp-audit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let log = dir.join("audit.log");
    let msg = "MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|MKR00011X|P|2.5.1\rPID|1||MKR00012X\r";
    let mut lines = handshake();
    lines.push(tool_call(2, "validate", json!({ "content": msg })));
    lines.push(tool_call(3, "MKR00013X", json!({ "content": msg })));
    let bin = env!("CARGO_BIN_EXE_phiward");
    let path = log.to_str().expect("utf-8 path");
    let (exit, _replies, _stderr) = exchange(bin, &["mcp", "--audit-log", path], &lines);
    assert_eq!(exit, 0);
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(!text.contains("MKR"), "{text}");
    let entries: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("json line")).collect();
    let mut ops: Vec<(String, String)> = entries
        .iter()
        .skip(1)
        .map(|e| (e["op"].as_str().unwrap_or("").to_owned(), e["tool"].as_str().unwrap_or("").to_owned()))
        .collect();
    // Calls run concurrently: their lines are in the order they ended; the server's is last.
    ops[..2].sort();
    assert_eq!(
        ops,
        [
            ("mcp tool".to_owned(), "unknown".to_owned()),
            ("mcp tool".to_owned(), "validate".to_owned()),
            ("mcp".to_owned(), String::new())
        ]
    );
    let unknown = entries.iter().find(|e| e["tool"] == "unknown").expect("the unknown tool's line");
    assert_eq!(unknown["codes"], json!(["CLI_USAGE"]));
    let o = crate::common::run(&["audit", "verify", path]);
    assert_eq!(crate::common::code(&o), 0);
}

/// A server spoken to one line at a time: requests are written as the test goes, and every line
/// the server writes is read as it comes (so that a test can act on a reply or a notification).
#[cfg(feature = "mcp")]
struct Session {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<Value>,
    /// Every line read so far, in order.
    seen: Vec<Value>,
}

#[cfg(feature = "mcp")]
impl Session {
    /// Starts `phiward mcp` with `args` and sends the handshake.
    fn start(args: &[&str]) -> Session {
        let mut child = Command::new(env!("CARGO_BIN_EXE_phiward"))
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the MCP server");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for l in std::io::BufReader::new(stdout).lines() {
                let Ok(l) = l else { break };
                let v: Value = serde_json::from_str(&l).expect("the server writes JSON lines");
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let mut s = Session { stdin: child.stdin.take(), child, lines, seen: Vec::new() };
        for l in handshake() {
            s.send_line(&l);
        }
        s.until(|v| v["id"] == 0);
        s
    }

    fn send_line(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line).and_then(|()| stdin.write_all(b"\n")).and_then(|()| stdin.flush()).expect("write");
    }

    fn send(&mut self, v: &Value) {
        self.send_line(&line(v));
    }

    /// Reads lines until one matches (a generous timeout only guards against a hang).
    fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let v = self.lines.recv_timeout(std::time::Duration::from_secs(300)).expect("the awaited line");
            self.seen.push(v.clone());
            if wanted(&v) {
                return v;
            }
        }
    }

    /// Closes stdin, reads the rest, and returns every line read and the exit code.
    fn finish(mut self) -> (Vec<Value>, i32) {
        drop(self.stdin.take());
        while let Ok(v) = self.lines.recv_timeout(std::time::Duration::from_secs(300)) {
            self.seen.push(v);
        }
        let status = self.child.wait().expect("wait");
        (self.seen, status.code().unwrap_or(-1))
    }
}

/// `n` FHIR Patients as NDJSON, each with a marker in its name.
#[cfg(feature = "mcp")]
fn patients_ndjson(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{{\"resourceType\":\"Patient\",\"id\":\"p{i}\",\"name\":[{{\"family\":\"MKR{:05}X\",\"given\":[\"Odessa\"]}}],\"birthDate\":\"1980-01-01\"}}\n",
                i % 100_000
            )
        })
        .collect()
}

#[cfg(feature = "mcp")]
fn call_with_progress(id: u64, name: &str, arguments: Value, token: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments, "_meta": {"progressToken": token}}})
}

#[cfg(feature = "mcp")]
fn is_progress(v: &Value, token: &str) -> bool {
    v["method"] == "notifications/progress" && v["params"]["progressToken"] == token
}

/// A long call with a progress token gets `notifications/progress` before its result: records
/// done, strictly increasing, never more than the input's records, with no total, no message
/// and nothing of the message (its names are markers). A call without a token gets none.
#[cfg(feature = "mcp")]
#[test]
fn a_long_call_reports_progress_in_records_and_nothing_else() {
    let n = 60_000;
    let input = patients_ndjson(n);
    let mut s = Session::start(&[]);
    s.send(&call_with_progress(1, "parse", json!({ "content": input, "ndjson": true }), "tok-1"));
    s.until(|v| v["id"] == 1);
    s.send_line(&tool_call(2, "validate", json!({ "content": input, "ndjson": true })));
    s.until(|v| v["id"] == 2);
    let (seen, exit) = s.finish();
    assert_eq!(exit, 0);
    let reply = seen.iter().position(|v| v["id"] == 1).expect("a result");
    let sc = &seen[reply]["result"]["structuredContent"];
    assert_eq!(sc["status"], "success", "the call completed");
    let progress: Vec<&Value> = seen.iter().filter(|v| v["method"] == "notifications/progress").collect();
    assert!(!progress.is_empty(), "no progress notification during a long call");
    assert!(seen[reply + 1..].iter().all(|v| !is_progress(v, "tok-1")), "progress after the result");
    let mut last = -1.0;
    for p in &progress {
        assert!(is_progress(p, "tok-1"), "{p}");
        let keys: Vec<&String> = p["params"].as_object().expect("params").keys().collect();
        assert_eq!(keys, ["progress", "progressToken"], "a count and the token only");
        let done = p["params"]["progress"].as_f64().expect("a number");
        assert!(done > last && done <= n as f64, "progress {done} after {last}");
        last = done;
        assert!(!has_marker(p.to_string().as_bytes()));
    }
    assert!(last > 0.0, "no record counted");
}

/// A small call is answered while a large one still runs: calls do not wait for each other.
#[cfg(feature = "mcp")]
#[test]
fn a_small_call_is_not_queued_behind_a_large_one() {
    let large = patients_ndjson(60_000);
    let small = "MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|1|P|2.5.1\rEVN|A01|20240101\rPID|1||1\rPV1|1|I\r";
    let mut s = Session::start(&[]);
    s.send_line(&tool_call(1, "parse", json!({ "content": large, "ndjson": true })));
    s.send_line(&tool_call(2, "validate", json!({ "content": small })));
    let first = s.until(|v| v["id"] == 1 || v["id"] == 2);
    assert_eq!(first["id"], 2, "the small call waited for the large one");
    assert_ne!(first["result"]["structuredContent"]["status"], "failed");
    s.until(|v| v["id"] == 1);
    let (seen, exit) = s.finish();
    assert_eq!(exit, 0);
    let large_reply = seen.iter().find(|v| v["id"] == 1).expect("the large call's result");
    assert_eq!(large_reply["result"]["structuredContent"]["status"], "success");
    // Each call's reply is its own: the same small call alone gives the same object.
    assert_eq!(first["result"]["structuredContent"], call("validate", json!({ "content": small })));
}

/// On `notifications/cancelled`, a running call stops (the audit log records it ended with
/// CLI_OUTPUT_FAILED, not a result), no result is sent for it, and the server keeps serving.
#[cfg(feature = "mcp")]
#[test]
fn a_cancelled_call_stops_and_sends_no_result() {
    let dir = std::env::temp_dir().join(format!("phiward-mcp-cancel-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let log = dir.join("audit.log");
    let n = 200_000;
    let input = patients_ndjson(n);
    let mut s = Session::start(&["--audit-log", log.to_str().expect("utf-8 path")]);
    s.send(&call_with_progress(1, "parse", json!({ "content": input, "ndjson": true }), "big"));
    // Cancelled once records are being done: the work has started.
    let started = s.until(|v| is_progress(v, "big") && v["params"]["progress"].as_f64().is_some_and(|p| p > 0.0));
    let done_then = started["params"]["progress"].as_f64().expect("a number");
    assert!(done_then < n as f64, "the call was over before it could be cancelled");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 1, "reason": "MKR00001X"}}));
    s.send_line(&tool_call(2, "validate", json!({ "content": "{\"resourceType\":\"Patient\"}" })));
    let next = s.until(|v| v["id"] == 2);
    assert_eq!(next["result"]["structuredContent"]["status"], "success", "the server keeps serving");
    let (seen, exit) = s.finish();
    assert_eq!(exit, 0);
    assert!(seen.iter().all(|v| v["id"] != 1), "a result was sent for the cancelled call");
    assert!(seen.iter().all(|v| !has_marker(v.to_string().as_bytes())));
    let text = std::fs::read_to_string(&log).expect("log");
    let entries: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("json line")).collect();
    let calls: Vec<&Value> = entries.iter().filter(|e| e["op"] == "mcp tool").collect();
    assert_eq!(calls.len(), 2, "{text}");
    // Lines are in completion order: the small validate may finish before the cancelled parse
    // has noticed.
    let parse: Vec<&&Value> = calls.iter().filter(|c| c["tool"] == "parse").collect();
    assert_eq!(parse.len(), 1, "{text}");
    assert_eq!(parse[0]["codes"], json!(["CLI_OUTPUT_FAILED"]), "the cancelled call ran to its end: {text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Cancelling a watched dispatch stops it between records: fewer records are done than the
/// input holds, and the reply is CLI_OUTPUT_FAILED with no data.
#[cfg(feature = "mcp")]
#[test]
fn a_cancelled_watch_stops_the_run_between_records() {
    let n = 200_000u64;
    let input = patients_ndjson(n as usize);
    let watch = mcp::Watch::default();
    let worker = watch.clone();
    let run = std::thread::spawn(move || {
        let args = json!({ "content": input, "ndjson": true });
        let Value::Object(args) = args else { unreachable!() };
        mcp::dispatch_watched("validate", Some(args), &Config::default(), &worker).into_value()
    });
    while watch.done() == 0 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    watch.cancel();
    let reply = run.join().expect("the call returns");
    assert_eq!(reply["code"], "CLI_OUTPUT_FAILED", "{reply}");
    assert!(reply.get("data").is_none());
    assert!(watch.done() < n, "every record was done: {}", watch.done());
    // Already cancelled: nothing runs.
    let args = json!({ "content": "{\"resourceType\":\"Patient\"}" });
    let Value::Object(args) = args else { unreachable!() };
    let before = watch.done();
    assert_eq!(
        mcp::dispatch_watched("validate", Some(args), &Config::default(), &watch).code,
        Some(phiward::diag::Code::CLI_OUTPUT_FAILED)
    );
    assert_eq!(watch.done(), before);
}

/// Resource templates for code systems and ConceptMaps, completions of their arguments from the
/// catalog, and prompts that follow the policy; nothing a client sent is echoed.
#[cfg(feature = "mcp")]
#[test]
fn templates_completions_and_prompts() {
    let req = |id: u64, method: &str, params: Value| {
        line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    };
    let complete = |id: u64, r: Value, name: &str, value: &str| {
        req(id, "completion/complete", json!({"ref": r, "argument": {"name": name, "value": value}}))
    };
    let mut lines = handshake();
    lines.push(req(1, "resources/templates/list", json!({})));
    lines.push(req(2, "resources/read", json!({"uri": "info://terminology/codesystem/loinc"})));
    lines.push(req(3, "resources/read", json!({"uri": "info://terminology/conceptmap/cm-administrative-gender-v2"})));
    lines.push(req(4, "resources/read", json!({"uri": "info://terminology/conceptmap/MKR00001X"})));
    lines.push(complete(
        5,
        json!({"type": "ref/resource", "uri": "info://terminology/conceptmap/{id}"}),
        "id",
        "cm-ADMIN",
    ));
    lines.push(complete(
        6,
        json!({"type": "ref/resource", "uri": "info://terminology/codesystem/{system}"}),
        "system",
        "lo",
    ));
    lines.push(complete(
        7,
        json!({"type": "ref/resource", "uri": "info://terminology/codesystem/{system}"}),
        "system",
        "MKR00002X",
    ));
    lines.push(complete(8, json!({"type": "ref/resource", "uri": "MKR00003X"}), "id", ""));
    lines.push(req(9, "prompts/list", json!({})));
    lines.push(req(10, "prompts/get", json!({"name": "validate_and_explain", "arguments": {"format": "hl7"}})));
    lines.push(req(11, "prompts/get", json!({"name": "validate_and_explain", "arguments": {"format": "MKR00004X"}})));
    lines.push(req(12, "prompts/get", json!({"name": "MKR00005X"})));
    lines.push(complete(13, json!({"type": "ref/prompt", "name": "deidentify_then_summarize"}), "format", "hl"));
    // Names that start with what was typed come first, then those that contain it.
    lines.push(complete(14, json!({"type": "ref/prompt", "name": "validate_and_explain"}), "format", "c"));
    let (exit, replies, stderr) = exchange(env!("CARGO_BIN_EXE_phiward"), &["mcp"], &lines);
    assert_eq!(exit, 0);
    let caps = &reply(&replies, 0)["result"]["capabilities"];
    for c in ["tools", "resources", "prompts", "completions"] {
        assert!(caps[c].is_object(), "capability {c}: {caps}");
    }
    let templates: Vec<&str> = reply(&replies, 1)["result"]["resourceTemplates"]
        .as_array()
        .expect("templates")
        .iter()
        .map(|t| t["uriTemplate"].as_str().expect("a template"))
        .collect();
    assert_eq!(templates, ["info://terminology/codesystem/{system}", "info://terminology/conceptmap/{id}"]);
    let text = |id: u64| -> Value {
        let t = reply(&replies, id)["result"]["contents"][0]["text"].as_str().expect("text");
        serde_json::from_str(t).expect("JSON")
    };
    let loinc = text(2);
    assert_eq!((loinc["terminology"].as_str(), loinc["system"].as_str()), (Some("loinc"), Some("http://loinc.org")));
    assert_eq!(loinc["origin"], "bundled");
    assert_eq!(loinc["dataset"]["dataset"], "loinc");
    let map = text(3);
    assert_eq!(map["resourceType"], "ConceptMap");
    assert_eq!(map["url"], "http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2");
    assert!(map["group"][0]["element"].as_array().is_some_and(|e| !e.is_empty()), "{map}");
    assert_eq!(reply(&replies, 4)["error"]["message"], "Resource not found");
    let values = |id: u64| reply(&replies, id)["result"]["completion"]["values"].clone();
    assert_eq!(values(5), json!(["cm-administrative-gender-v2", "cm-administrative-gender-v3"]));
    assert_eq!(reply(&replies, 5)["result"]["completion"]["total"], 2);
    assert_eq!(values(6), json!(["loinc"]));
    assert_eq!(values(7), json!([]));
    assert_eq!(reply(&replies, 8)["error"]["message"], "Invalid params");
    let prompts: Vec<&str> = reply(&replies, 9)["result"]["prompts"]
        .as_array()
        .expect("prompts")
        .iter()
        .map(|p| p["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(prompts, ["validate_and_explain", "deidentify_then_summarize"]);
    let prompt = reply(&replies, 10)["result"]["messages"][0]["content"]["text"].as_str().expect("text");
    assert!(prompt.contains("`validate`") && prompt.contains("\"hl7\""), "{prompt}");
    assert_eq!(reply(&replies, 11)["error"]["message"], "Invalid params");
    assert_eq!(reply(&replies, 12)["error"]["message"], "Invalid params");
    assert_eq!(values(13), json!(["hl7"]));
    assert_eq!(values(14), json!(["ccda", "dicom", "ncpdp", "ncpdp-script"]));
    for r in &replies {
        assert!(!has_marker(r.to_string().as_bytes()), "echoed: {r}");
    }
    assert!(!has_marker(stderr.as_bytes()));
    // Under a policy that hides `redact`, its prompt is neither listed nor given nor completed.
    let dir = std::env::temp_dir().join(format!("phiward-mcp-prompts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let policy = dir.join("no-redact.toml");
    std::fs::write(&policy, b"[policy]\nname = \"t\"\ndisclosure = \"full\"\ntools = [\"validate\"]\n").expect("write");
    let mut lines = handshake();
    lines.push(req(1, "prompts/list", json!({})));
    lines.push(req(2, "prompts/get", json!({"name": "deidentify_then_summarize"})));
    lines.push(complete(3, json!({"type": "ref/prompt", "name": "deidentify_then_summarize"}), "format", ""));
    let (exit, replies, _) =
        exchange(env!("CARGO_BIN_EXE_phiward"), &["mcp", "--policy", policy.to_str().expect("utf-8 path")], &lines);
    assert_eq!(exit, 0);
    let listed: Vec<Value> = reply(&replies, 1)["result"]["prompts"]
        .as_array()
        .expect("prompts")
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(listed, [json!("validate_and_explain")]);
    assert_eq!(reply(&replies, 2)["error"]["message"], "Invalid params");
    assert_eq!(reply(&replies, 3)["error"]["message"], "Invalid params");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The two front doors of the server take the same options (the `phiward-mcp` binary runs the
/// `mcp` command's code, the audit log included): the same `--help` option list, and
/// `--audit-log` writing the same chained lines, one per tool call and one at the end.
#[cfg(feature = "mcp")]
#[test]
fn phiward_mcp_and_phiward_mcp_command_take_the_same_options() {
    let options = |bin: &str, args: &[&str]| -> std::collections::BTreeSet<String> {
        let o = Command::new(bin).args(args).arg("--help").output().expect("run --help");
        assert_eq!(o.status.code(), Some(0));
        let re = regex_lite::Regex::new(r"--[a-z][a-z0-9-]+").expect("regex");
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        re.find_iter(&text).map(|m| m.as_str().to_owned()).filter(|o| o != "--version").collect()
    };
    let command = options(env!("CARGO_BIN_EXE_phiward"), &["mcp"]);
    let binary = options(env!("CARGO_BIN_EXE_phiward-mcp"), &[]);
    assert!(command.contains("--audit-log") && command.contains("--policy"), "{command:?}");
    assert_eq!(command, binary);
    let dir = std::env::temp_dir().join(format!("phiward-mcp-doors-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mut lines = handshake();
    lines.push(tool_call(1, "validate", json!({ "content": "MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|1|P|2.5.1\rEVN|A01|20240101\rPID|1||1\rPV1|1|I\r" })));
    let mut ops = Vec::new();
    for (bin, args) in [(env!("CARGO_BIN_EXE_phiward"), &["mcp"][..]), (env!("CARGO_BIN_EXE_phiward-mcp"), &[][..])] {
        let log = dir.join(format!("{}.log", ops.len()));
        let log_s = log.to_str().expect("utf-8 temp path");
        let mut all = args.to_vec();
        all.extend(["--audit-log", log_s]);
        let (exit, replies, _) = exchange(bin, &all, &lines);
        assert_eq!(exit, 0);
        assert_ne!(structured(&replies, 1)["status"], "failed");
        let text = std::fs::read_to_string(&log).expect("audit log written");
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("json line")).collect();
        ops.push(lines.iter().map(|l| (l["op"].clone(), l["tool"].clone())).collect::<Vec<_>>());
        let verify =
            Command::new(env!("CARGO_BIN_EXE_phiward")).args(["audit", "verify", log_s]).output().expect("verify");
        assert_eq!(verify.status.code(), Some(0), "{}", String::from_utf8_lossy(&verify.stderr));
    }
    assert_eq!(ops[0], ops[1]);
    assert!(ops[0].iter().any(|(op, tool)| op == "mcp tool" && tool == "validate"), "{:?}", ops[0]);
}

/// The inspect output schema declares, per format, exactly what `inspect` writes: over every
/// fixture, at both detail levels, each summary has its format's required properties, no
/// property the schema does not declare, and each of the declared kind; every format this
/// build inspects has its schema and is seen.
#[cfg(feature = "mcp")]
#[test]
fn inspect_output_schema_matches_every_format() {
    use std::collections::{BTreeMap, BTreeSet};
    let specs: BTreeMap<&str, &str> = mcp::INSPECT_SUMMARIES.iter().copied().collect();
    let inspected: BTreeSet<&str> = Tool::Inspect.format_names().into_iter().collect();
    for f in phiward::formats::Format::ALL {
        if f.supports(phiward::formats::Operation::Inspect) {
            assert!(specs.contains_key(f.as_str()), "no inspect schema for {}", f.as_str());
        }
    }
    let mut seen = BTreeSet::new();
    let mut checked = 0;
    let mut problems = BTreeSet::new();
    for dir in std::fs::read_dir(fixture("")).expect("fixtures/").flatten() {
        let mut files = files_under(&dir.path().join("valid"));
        files.extend(files_under(&dir.path().join("invalid")));
        for file in files {
            let input = std::fs::read(&file).expect("fixture");
            let mut args = match std::str::from_utf8(&input) {
                Ok(s) => json!({ "content": s, "max_bytes": 0 }),
                Err(_) => json!({ "content_base64": base64(&input), "max_bytes": 0 }),
            };
            if file.extension().is_some_and(|e| e == "ndjson") {
                args["ndjson"] = json!(true);
            }
            for detail in ["summary", "inventory"] {
                args["detail"] = json!(detail);
                let reply = call("inspect", args.clone());
                let Some(data) = reply.get("data") else { continue };
                let records = match data.get("records").and_then(Value::as_array) {
                    Some(r) => r.clone(),
                    None => vec![data.clone()],
                };
                for r in records.iter().filter(|r| r.get("error").is_none()) {
                    let ctx = format!("{} ({detail})", file.display());
                    let format = r["format"].as_str().expect("format");
                    let spec = specs.get(format).unwrap_or_else(|| panic!("format {format} has no schema: {ctx}"));
                    assert!(inspected.contains(format), "{ctx}");
                    seen.insert(format.to_owned());
                    let mut declared = BTreeMap::new();
                    for item in spec.split_whitespace() {
                        let (name, kind) = item.split_once(':').expect("name:kind");
                        declared.insert(name, kind);
                    }
                    let obj = r.as_object().expect("an object");
                    for (key, value) in obj {
                        if ["format", "record", "offset"].contains(&key.as_str()) {
                            continue;
                        }
                        let Some(kind) = declared.get(key.as_str()) else {
                            problems.insert(format!("{format}: {key} undeclared"));
                            continue;
                        };
                        let ok = match kind.trim_end_matches('?') {
                            "n" => value.as_u64().is_some(),
                            "z" => value.is_null() || value.as_u64().is_some(),
                            "m" => value.as_object().is_some_and(|m| m.values().all(|v| v.as_u64().is_some())),
                            "s" => value.is_string(),
                            "b" => value.is_boolean(),
                            "a" => value.is_array(),
                            _ => value.is_object(),
                        };
                        if !ok {
                            problems.insert(format!("{format}: {key} is not of kind {kind}"));
                        }
                    }
                    for (name, kind) in &declared {
                        if !kind.ends_with('?') && !obj.contains_key(*name) {
                            problems.insert(format!("{format}: {name} missing"));
                        }
                    }
                    if detail == "inventory" && (format == "hl7" || format == "fhir") {
                        assert!(obj.contains_key("inventory"), "no inventory: {ctx}");
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    let expected: BTreeSet<String> = specs.keys().map(|s| (*s).to_owned()).collect();
    assert_eq!(seen, expected, "every format's schema is exercised by a fixture");
    assert!(checked > 100, "{checked}");
}
