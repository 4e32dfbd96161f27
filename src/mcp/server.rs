//! The MCP server: one struct, a `list_tools`/`call_tool` pair, served over stdio; beside the
//! tools, resources and resource templates ([`super::terminology`]), prompts
//! ([`super::prompts`]) and completions for their arguments.
//!
//! Each call is stateless: the arguments go to [`dispatch_watched`], whose reply becomes the
//! result's structured content and, serialized once as JSON, its text content. A `failed` reply
//! is marked as an error result. The server never answers a tool call with a JSON-RPC error: an
//! unknown tool or bad arguments are `failed` replies with `CLI_USAGE`, so nothing the caller
//! sent is echoed back by a protocol error message. An unknown JSON-RPC method is answered
//! "Method not found" without its name (and the transport fixes the text of every error).
//!
//! A tool call runs on a blocking thread, not on the service loop: a long call never holds up
//! `ping`, `tools/list` or `initialize`. Up to [`CALL_THREADS`] calls run at once, so a small
//! call is not queued behind a large one; each call's reply depends on its own arguments only.
//! The transport counts the bytes of the requests not yet answered ([`super::transport`]'s
//! `InFlight`, held until a call's work has stopped), so calls running and queued together
//! stay within the line limit, and memory stays a small multiple of it.
//!
//! While a call runs, the service loop watches it ([`Watch`]):
//!
//! - **Progress.** When the request carries `_meta.progressToken` and the call is still running
//!   after [`PROGRESS_AFTER`], a `notifications/progress` is sent with `progress` the number of
//!   records done (a stream's records: NDJSON lines, HL7 v2 batch messages, MLLP frames, X12
//!   transaction sets...), then again at most every [`PROGRESS_EVERY`] while that number grows.
//!   It has no `total` (a stream's length is known once it has been read) and no `message`: a
//!   count is all it says.
//! - **Cancellation.** On `notifications/cancelled` for the call, the work stops before its next
//!   record (records waiting in worker batches are dropped) and no result is sent: rmcp forgets
//!   a cancelled request, and the call's reply is discarded. The audit hook still records the
//!   call, with `CLI_OUTPUT_FAILED`.
//!
//! What it does not do: read arguments (dispatch does) or write to stdout (the transport does).

use std::sync::Arc;

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult, CompletionInfo,
    ContentBlock, CustomRequest, CustomResult, ErrorCode, GetPromptRequestParams, GetPromptResponse, Implementation,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Reference, Resource, ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig,
    Tool as McpTool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

use crate::diag::Code;
use crate::ops::shape::{Deliver, RESOURCE_MIME};

use super::dispatch::{Config, Reply, Watch, dispatch_watched};
use super::results::Results;
use super::transport::{InFlight, LineTransport, Rejected, line_limit};
use super::{prompts, terminology, tools};

/// Tool calls that run at once, each on its own blocking thread; more wait for a thread.
pub const CALL_THREADS: usize = 4;
/// A call still running this long after it started sends its first progress notification
/// (when the client gave a progress token).
pub const PROGRESS_AFTER: Duration = Duration::from_millis(200);
/// After the first, at most one progress notification per this interval, and only when more
/// records are done.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// The phiward MCP server.
#[derive(Debug, Clone)]
pub struct Server {
    config: Arc<Config>,
    tools: Arc<Vec<McpTool>>,
    /// The data of replies delivered as resources ([`results`]).
    results: Results,
}

impl Server {
    /// A server with this configuration.
    pub fn new(config: Config) -> Server {
        // A policy's `tools` list also decides what `tools/list` shows.
        let allowed = |t: &McpTool| config.policy.as_ref().is_none_or(|p| p.allows_tool(&t.name));
        let defs = tools::definitions().into_iter().filter(allowed).collect();
        Server { config: Arc::new(config), tools: Arc::new(defs), results: Results::default() }
    }

    /// The names `tools/list` shows (the policy's `tools` filter applied).
    pub fn tools_list_names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name.to_string()).collect() // value-free: static tool names
    }

    /// The server's instructions: what the tools this server shows (the policy's `tools` filter
    /// applied) do, and what the policy does to their data. Names only, never a value.
    pub fn instructions(&self) -> String {
        let names = self.tools_list_names();
        let mut text = format!(
            "phiward reads healthcare messages locally (nothing is stored or sent anywhere). Tools: {}. \
             Pass the message text in `content` (or base64 in `content_base64`); each tool's description \
             lists the formats it takes. Only the `data` of a reply can hold message values; a failed \
             reply carries a code, its fixed meaning and, for a bad argument, the argument's name.",
            if names.is_empty() { "none".to_owned() } else { names.join(", ") }
        );
        if let Some(p) = self.config.policy.as_deref() {
            if p.disclosure == crate::policy::Disclosure::Redacted {
                text.push_str(&format!(
                    " Policy {}: every value a reply returns is redacted under it first (the reply's \
                     `redacted` says so).",
                    p.name
                ));
            }
        }
        if names.iter().any(|n| n == super::terminology::FIND_EQUIVALENT || n == super::terminology::MAP_CODES) {
            text.push_str(
                " The terminology tools answer from data on this machine; licences and citations are in \
                 the resource info://licenses.",
            );
        }
        text
    }

    /// The text and MIME type of the resource at `uri` (the body of `resources/read`): a
    /// result delivered as a resource, or a terminology resource.
    pub fn read(&self, uri: &str) -> Option<(String, &'static str)> {
        if let Some(text) = self.results.get(uri) {
            return Some((text.as_str().to_owned(), RESOURCE_MIME));
        }
        terminology::read_resource(uri, &self.config.catalog)
    }

    /// True when the policy lets `tool` be called (and `tools/list` shows it).
    fn allows(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t.name == tool)
    }

    /// Runs one call to completion (the body of `tools/call`).
    pub fn call(&self, params: CallToolRequestParams) -> CallToolResult {
        self.call_watched(params, &Watch::default())
    }

    /// Runs one call, counting its records in `watch` and stopping early once it is cancelled.
    pub fn call_watched(&self, params: CallToolRequestParams, watch: &Watch) -> CallToolResult {
        let started = std::time::Instant::now();
        let listed = self.tools_list_names().into_iter().find(|n| *n == params.name);
        let reply = dispatch_watched(&params.name, params.arguments, &self.config, watch);
        // The audit record is of the reply as sent (a result the store refused is a failure).
        let (exit, code, out) = match self.deliver(reply) {
            Ok(delivered) => delivered,
            Err(code) => {
                let failed = Reply::failed(code);
                (failed.exit, failed.code, result(failed))
            }
        };
        if let Some(hook) = &self.config.on_call {
            let record = super::dispatch::CallRecord {
                tool: listed.as_deref().unwrap_or("unknown"),
                exit,
                code,
                millis: started.elapsed().as_millis() as u64,
            };
            if let Err(code) = (hook.0)(&record) {
                return result(Reply::failed(code));
            }
        }
        out
    }

    /// The `tools/call` result for a reply (with its exit code and code), its data moved to a
    /// resource of the store when the call asked for one (`deliver`): the structured content
    /// then says where (`resource`) in place of `data`, and a content block embeds the text or
    /// links to it. `Err`: the data could not be kept (`CLI_RESULT_TOO_LARGE`).
    fn deliver(&self, mut reply: Reply) -> Result<(u8, Option<Code>, CallToolResult), Code> {
        let (exit, code) = (reply.exit, reply.code);
        let how = reply.detail.shaped.deliver;
        let data = match reply.data.take() {
            Some(data) if how != Deliver::Inline => data,
            data => {
                reply.data = data;
                return Ok((exit, code, result(reply)));
            }
        };
        let text = serde_json::to_string(&data).map_err(|_| Code::CLI_INTERNAL)?;
        drop(data);
        let bytes = text.len();
        let embedded = (how == Deliver::Resource).then(|| text.clone());
        let uri = self.results.put(text).ok_or(Code::CLI_RESULT_TOO_LARGE)?;
        reply.detail.shaped.resource = Some((uri.clone(), bytes));
        let mut out = result(reply);
        out.content.push(match embedded {
            Some(text) => ContentBlock::resource(ResourceContents::text(text, uri).with_mime_type(RESOURCE_MIME)),
            None => ContentBlock::resource_link(
                Resource::new(uri, "result")
                    .with_title("The reply's data")
                    .with_mime_type(RESOURCE_MIME)
                    .with_size(bytes as u64),
            ),
        });
        Ok((exit, code, out))
    }
}

/// The `tools/call` result for a reply.
pub fn result(reply: Reply) -> CallToolResult {
    let is_error = reply.is_error();
    let value = reply.into_value();
    let text = serde_json::to_string(&value).unwrap_or_else(|_| String::from("{}"));
    let mut result = if is_error { CallToolResult::error(Vec::new()) } else { CallToolResult::success(Vec::new()) };
    result.content = vec![ContentBlock::text(text)];
    result.structured_content = Some(value);
    result
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_completions()
            .enable_prompts()
            .enable_resources()
            .enable_tools()
            .build();
        let mut info = InitializeResult::new(capabilities);
        info.server_info = Implementation::new("phiward", env!("CARGO_PKG_VERSION"));
        info.with_instructions(self.instructions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources = terminology::RESOURCES
            .iter()
            .map(|(uri, name, title, description, mime)| {
                Resource::new(*uri, *name).with_title(*title).with_description(*description).with_mime_type(*mime)
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates = terminology::TEMPLATES
            .iter()
            .map(|(uri, name, title, description, mime)| {
                ResourceTemplate::new(*uri, *name)
                    .with_title(*title)
                    .with_description(*description)
                    .with_mime_type(*mime)
            })
            .collect();
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some((text, mime)) = self.read(&request.uri) else {
            // The URI is not echoed.
            return Err(ErrorData::resource_not_found("unknown resource", None));
        };
        let contents = ResourceContents::text(text, request.uri).with_mime_type(mime);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(prompts::definitions(|t| self.allows(t))))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        // Neither the name nor an argument is echoed (the transport fixes the text too).
        match prompts::get(&request.name, request.arguments.as_ref(), |t| self.allows(t)) {
            Ok(prompt) => Ok(prompt.into()),
            Err(_) => Err(ErrorData::invalid_params("Invalid params", None)),
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let argument = request.argument.name.as_str();
        let values = match &request.r#ref {
            Reference::Resource(r) => terminology::template_completions(&r.uri, argument),
            Reference::Prompt(p) if prompts::definitions(|t| self.allows(t)).iter().any(|d| d.name == p.name) => {
                prompts::completions(&p.name, argument)
            }
            _ => None,
        };
        let Some(values) = values else {
            return Err(ErrorData::invalid_params("Invalid params", None));
        };
        let (values, total) = completions(&values, &request.argument.value);
        let has_more = values.len() < total;
        let total = u32::try_from(total).unwrap_or(u32::MAX);
        let info = CompletionInfo::with_pagination(values, Some(total), has_more)
            .map_err(|_| ErrorData::internal_error("Internal error", None))?;
        Ok(CompleteResult::new(info))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(Rejected(code)) = context.extensions.get::<Rejected>() {
            return Ok(result(Reply::failed(*code)).into());
        }
        // The request's bytes stay counted until the call's work is done, even once this future
        // has returned (a cancelled request).
        let held = context.extensions.get::<InFlight>().cloned();
        let watch = Watch::default();
        let server = self.clone();
        let worker = watch.clone();
        let mut call = tokio::task::spawn_blocking(move || {
            let r = server.call_watched(request, &worker);
            drop(held);
            r
        });
        let token = context.meta.get_progress_token();
        let mut next = tokio::time::Instant::now() + PROGRESS_AFTER;
        let mut reported: Option<u64> = None;
        loop {
            tokio::select! {
                joined = &mut call => {
                    return match joined {
                        Ok(r) => Ok(r.into()),
                        Err(_) => Ok(result(Reply::failed(Code::CLI_INTERNAL)).into()),
                    };
                }
                () = context.ct.cancelled() => {
                    // rmcp has forgotten the request: what is returned here is never sent. The
                    // work stops before its next record.
                    watch.cancel();
                    return Err(ErrorData::internal_error("Request failed", None));
                }
                () = tokio::time::sleep_until(next), if token.is_some() => {
                    let done = watch.done();
                    if let Some(token) = token.as_ref().filter(|_| reported.is_none_or(|r| done > r)) {
                        // A count only: no total, no message (a record count stays far below
                        // 2^53, exact as a float).
                        let progress = ProgressNotificationParam::new(token.clone(), done as f64);
                        // The client may have gone; the call's result says the rest.
                        let _ = context.peer.notify_progress(progress).await;
                        reported = Some(done);
                    }
                    next += PROGRESS_EVERY;
                }
            }
        }
    }

    async fn on_custom_request(
        &self,
        _request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        // rmcp's default names the method in the message: a client string.
        Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "Method not found", None))
    }
}

/// The values of `values` that complete `typed`, at most [`CompletionInfo::MAX_VALUES`]: those
/// that start with it, then those that contain it (ASCII case ignored), each in catalog order;
/// and how many matched in all. `typed` is only compared, never returned.
fn completions(values: &[&'static str], typed: &str) -> (Vec<String>, usize) {
    let typed = typed.to_ascii_lowercase();
    let lower = |v: &str| v.to_ascii_lowercase();
    let starts = values.iter().filter(|v| lower(v).starts_with(&typed));
    let contains = values.iter().filter(|v| !lower(v).starts_with(&typed) && lower(v).contains(&typed));
    let matched: Vec<&str> = starts.chain(contains).copied().collect();
    let total = matched.len();
    (matched.into_iter().take(CompletionInfo::MAX_VALUES).map(str::to_owned).collect(), total)
}

/// Serves MCP over this process's stdin and stdout until the client closes stdin.
///
/// Builds a single-threaded runtime for the service loop and [`CALL_THREADS`] blocking threads
/// on which the tool calls run. Returns the code of a failure to start or serve.
pub fn serve_stdio(config: Config) -> Result<(), Code> {
    let max_line = line_limit(config.limits.max_input_bytes);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .max_blocking_threads(CALL_THREADS)
        .build()
        .map_err(|_| Code::CLI_INTERNAL)?;
    let (transport, writer) =
        LineTransport::spawn(std::io::stdin(), std::io::stdout(), max_line).map_err(|_| Code::CLI_INTERNAL)?;
    let served = runtime.block_on(async move {
        let running = match Server::new(config).serve(transport).await {
            Ok(running) => running,
            // The client went away before initializing: nothing to serve.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            // The first message was not `initialize`: the client does not speak MCP.
            Err(_) => return Err(Code::CLI_USAGE),
        };
        running.waiting().await.map(|_| ()).map_err(|_| Code::CLI_INTERNAL)
    });
    drop(runtime);
    // Every reply has been handed to the writer; wait for it to be written.
    let _ = writer.join();
    served
}
