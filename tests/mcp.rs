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
//! - without the `mcp` feature, `phiward mcp` exits 69 with `CLI_PARSER_UNAVAILABLE`.
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
use crate::common::{files_under, fixture, run_stdin};
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
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
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
    let mut files = files_under(&fixture("hl7v2/markers"));
    files.extend(files_under(&fixture("redact/markers")));
    files.extend(
        files_under(&fixture("redact/red_team"))
            .into_iter()
            .filter(|f| f.extension().is_some_and(|e| e == "hl7" || e == "json")),
    );
    assert!(files.len() >= 10, "marker fixtures missing");
    let mut checked = 0;
    for name in ["safe-harbor", "limited-data-set", "agent"] {
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
    let ops: Vec<(String, String)> = entries
        .iter()
        .skip(1)
        .map(|e| (e["op"].as_str().unwrap_or("").to_owned(), e["tool"].as_str().unwrap_or("").to_owned()))
        .collect();
    assert_eq!(
        ops,
        [
            ("mcp tool".to_owned(), "validate".to_owned()),
            ("mcp tool".to_owned(), "unknown".to_owned()),
            ("mcp".to_owned(), String::new())
        ]
    );
    assert_eq!(entries[2]["codes"], json!(["CLI_USAGE"]));
    let o = crate::common::run(&["audit", "verify", path]);
    assert_eq!(crate::common::code(&o), 0);
}
