//! The MCP server: one struct, a `list_tools`/`call_tool` pair, served over stdio.
//!
//! Each call is stateless: the arguments go to [`dispatch`], whose reply becomes the result's
//! structured content and, serialized once as JSON, its text content. A `failed` reply is
//! marked as an error result. The server never answers a tool call with a JSON-RPC error: an
//! unknown tool or bad arguments are `failed` replies with `CLI_USAGE`, so nothing the caller
//! sent is echoed back by a protocol error message. An unknown JSON-RPC method is answered
//! "Method not found" without its name (and the transport fixes the text of every error).
//!
//! A tool call runs on a blocking thread, one call at a time, not on the service loop: a long
//! call never holds up `ping`, `tools/list` or `initialize`. Calls queue while one runs; the
//! transport counts the bytes of the requests not yet answered ([`super::transport::InFlight`]),
//! so the queue cannot grow past the line limit.
//!
//! What it does not do: read arguments (dispatch does) or write to stdout (the transport does).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest, CustomResult, ErrorCode,
    Implementation, InitializeResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
    ServerCapabilities, ServerConfig, Tool as McpTool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

use crate::diag::Code;

use super::dispatch::{Config, Reply, dispatch};
use super::tools;
use super::transport::{InFlight, LineTransport, Rejected, line_limit};

/// The phiward MCP server.
#[derive(Debug, Clone)]
pub struct Server {
    config: Arc<Config>,
    tools: Arc<Vec<McpTool>>,
}

impl Server {
    /// A server with this configuration.
    pub fn new(config: Config) -> Server {
        // A policy's `tools` list also decides what `tools/list` shows.
        let allowed = |t: &McpTool| config.policy.as_ref().is_none_or(|p| p.allows_tool(&t.name));
        let defs = tools::definitions().into_iter().filter(allowed).collect();
        Server { config: Arc::new(config), tools: Arc::new(defs) }
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

    /// Runs one call to completion (the body of `tools/call`).
    pub fn call(&self, params: CallToolRequestParams) -> CallToolResult {
        let started = std::time::Instant::now();
        let listed = self.tools_list_names().into_iter().find(|n| *n == params.name);
        let reply = dispatch(&params.name, params.arguments, &self.config);
        if let Some(hook) = &self.config.on_call {
            let record = super::dispatch::CallRecord {
                tool: listed.as_deref().unwrap_or("unknown"),
                exit: reply.exit,
                code: reply.code,
                millis: started.elapsed().as_millis() as u64,
            };
            if let Err(code) = (hook.0)(&record) {
                return result(Reply::failed(code));
            }
        }
        result(reply)
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
        let mut info = InitializeResult::new(ServerCapabilities::builder().enable_tools().enable_resources().build());
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
        let resources = super::terminology::RESOURCES
            .iter()
            .map(|(uri, name, title, description, mime)| {
                Resource::new(*uri, *name).with_title(*title).with_description(*description).with_mime_type(*mime)
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some(text) = super::terminology::read_resource(&request.uri, &self.config.catalog) else {
            // The URI is not echoed.
            return Err(ErrorData::resource_not_found("unknown resource", None));
        };
        let mime = super::terminology::RESOURCES.iter().find(|r| r.0 == request.uri).map_or("text/plain", |r| r.4);
        let contents = ResourceContents::text(text, request.uri).with_mime_type(mime);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(Rejected(code)) = context.extensions.get::<Rejected>() {
            return Ok(result(Reply::failed(*code)).into());
        }
        // The request's bytes stay counted until the call's work is done, even if this future
        // is dropped first (a cancelled request).
        let held = context.extensions.get::<InFlight>().cloned();
        let server = self.clone();
        let call = tokio::task::spawn_blocking(move || {
            let r = server.call(request);
            drop(held);
            r
        });
        match call.await {
            Ok(r) => Ok(r.into()),
            Err(_) => Ok(result(Reply::failed(Code::CLI_INTERNAL)).into()),
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

/// Serves MCP over this process's stdin and stdout until the client closes stdin.
///
/// Builds a single-threaded runtime for the service loop and one blocking thread on which the
/// tool calls run, one after the other. Returns the code of a failure to start or serve.
pub fn serve_stdio(config: Config) -> Result<(), Code> {
    let max_line = line_limit(config.limits.max_input_bytes);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .max_blocking_threads(1)
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
