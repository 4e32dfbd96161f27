//! Dispatch: a tool name and its raw JSON arguments in, the structured reply out.
//!
//! The message tools run through [`crate::call`] (shared with the CLI's `--input-format
//! json-lines`), the terminology tools through [`super::terminology`]. An unknown tool is a
//! `failed` reply with `CLI_USAGE` that echoes nothing of the name.
//!
//! What it does not do: talk to a transport (see [`super::server`]), log any argument, or turn
//! on `--unsafe-show-values` (there is no such door over MCP).

use serde_json::{Map, Value};

use crate::diag::Code;

use crate::call::Tool;
pub use crate::call::{CallFn, CallHook, CallRecord, Config, Detail, PolicyMark, Reply, Watch, redact_for_disclosure};

/// Runs one tool call. Never panics on any input; a panic inside an operation becomes a
/// `CLI_INTERNAL` reply.
pub fn dispatch(name: &str, arguments: Option<Map<String, Value>>, config: &Config) -> Reply {
    dispatch_watched(name, arguments, config, &Watch::default())
}

/// [`dispatch`], counting the records done in `watch` and stopping before the next record once
/// it is cancelled. A cancelled call's reply is `CLI_OUTPUT_FAILED` (its reader has gone; the
/// server sends no result for it).
pub fn dispatch_watched(name: &str, arguments: Option<Map<String, Value>>, config: &Config, watch: &Watch) -> Reply {
    if watch.is_cancelled() {
        return Reply::failed(Code::CLI_OUTPUT_FAILED);
    }
    if let Some(reply) = terminology_tool(name, arguments.as_ref(), config) {
        return reply;
    }
    let Some(tool) = Tool::from_name(name) else {
        tracing::debug!(code = Code::CLI_USAGE.as_str(), "unknown tool");
        return Reply::usage("name");
    };
    let run = std::panic::AssertUnwindSafe(|| crate::call::run(tool, arguments, config, watch));
    let mut reply = std::panic::catch_unwind(run).unwrap_or_else(|_| Reply::failed(Code::CLI_INTERNAL));
    if watch.is_cancelled() {
        // Cancelled while its last records were written or its reply shaped: no result is
        // sent, and the call is recorded as the cancelled call it is.
        reply = Reply::failed(Code::CLI_OUTPUT_FAILED);
    }
    tracing::debug!(
        tool = tool.as_str(),
        exit = reply.exit,
        code = reply.code.map_or("-", Code::as_str),
        "tool call finished"
    );
    reply
}

/// The terminology tools (`find_equivalent`, `map_codes`), with the same panic guard.
fn terminology_tool(name: &str, arguments: Option<&Map<String, Value>>, config: &Config) -> Option<Reply> {
    if name != super::terminology::FIND_EQUIVALENT && name != super::terminology::MAP_CODES {
        return None;
    }
    if config.policy.as_ref().is_some_and(|p| !p.allows_tool(name)) {
        return Some(Reply::failed(Code::POLICY_TOOL_NOT_ALLOWED));
    }
    let run = std::panic::AssertUnwindSafe(|| super::terminology::dispatch(name, arguments.cloned(), config));
    let reply = std::panic::catch_unwind(run).ok().flatten().unwrap_or_else(|| Reply::failed(Code::CLI_INTERNAL));
    tracing::debug!(tool = name, exit = reply.exit, code = reply.code.map_or("-", Code::as_str), "tool call finished");
    Some(reply)
}
