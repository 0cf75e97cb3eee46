//! The tools of the mock MCP server and the two ways to serve them (stdio,
//! Streamable HTTP). The `mock-mcp-server` binary is a thin shell around this.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool, tool_router};
use serde::Deserialize;

/// The text the `fail` tool answers with (as an `isError: true` result).
pub const FAIL_TEXT: &str = "tool failed on purpose";

/// The server name reported in `initialize`'s `serverInfo` unless chosen.
pub const DEFAULT_NAME: &str = "aa-test";

/// The input of the `lookup` tool.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct LookupInput {
    /// The key to look up; the answer is `value-of-<key>`.
    pub key: String,
}

/// The input of the `add` tool.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct AddInput {
    /// The first addend.
    pub a: f64,
    /// The second addend.
    pub b: f64,
}

/// The mock MCP server: the tools `lookup`, `add` and `fail`, a chosen
/// server name, and an optional call log (one JSON line per `tools/call`
/// received: `{"tool": name, "arguments": object-or-null}`).
#[derive(Debug, Clone)]
pub struct TestTools {
    name: String,
    log: Option<Arc<Mutex<PathBuf>>>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl TestTools {
    /// A server named `name` that appends its calls to `log` (if any).
    pub fn new(name: impl Into<String>, log: Option<PathBuf>) -> Self {
        Self {
            name: name.into(),
            log: log.map(|path| Arc::new(Mutex::new(path))),
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Looks a key up; answers value-of-<key>.")]
    fn lookup(&self, Parameters(LookupInput { key }): Parameters<LookupInput>) -> String {
        format!("value-of-{key}")
    }

    #[tool(description = "Adds two numbers; answers their sum.")]
    fn add(&self, Parameters(AddInput { a, b }): Parameters<AddInput>) -> String {
        (a + b).to_string()
    }

    #[tool(description = "Always fails (a tool error, isError: true).")]
    fn fail(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(FAIL_TEXT)])
    }
}

impl TestTools {
    /// Appends one call to the log file. The lock keeps concurrent calls'
    /// lines whole; the file is opened per call so a test can read it at
    /// any time.
    fn record(&self, request: &CallToolRequestParams) -> Result<(), ErrorData> {
        let Some(log) = &self.log else {
            return Ok(());
        };
        let mut line = serde_json::to_vec(&serde_json::json!({
            "tool": request.name,
            "arguments": request.arguments,
        }))
        .map_err(|e| ErrorData::internal_error(format!("call log: {e}"), None))?;
        line.push(b'\n');
        let path = log
            .lock()
            .map_err(|_| ErrorData::internal_error("call log: lock poisoned", None))?;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&*path)
            .and_then(|mut file| file.write_all(&line))
            .map_err(|e| ErrorData::internal_error(format!("call log: {e}"), None))
    }
}

impl ServerHandler for TestTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new(self.name.clone(), env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tool_router.list_all()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tool_router.get(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.record(&request)?;
        self.tool_router
            .call(ToolCallContext::new(self, request, context))
            .await
    }
}

/// Serves `tools` on this process's stdin/stdout until the client closes
/// stdin.
pub async fn serve_stdio(tools: TestTools) -> Result<(), ServeError> {
    let service = tools
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| ServeError::Start(e.to_string()))?;
    service
        .waiting()
        .await
        .map_err(|e| ServeError::Stopped(e.to_string()))?;
    Ok(())
}

/// Why serving stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The MCP session did not start (the handshake failed).
    #[error("the MCP session did not start: {0}")]
    Start(String),
    /// The MCP session ended with an error.
    #[error("the MCP session ended with an error: {0}")]
    Stopped(String),
    /// The HTTP address is not 127.0.0.1 (the mock binds only loopback).
    #[error("not 127.0.0.1: {0} (the mock MCP server binds only loopback)")]
    NotLoopback(SocketAddr),
    /// The HTTP listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The bind error.
        source: std::io::Error,
    },
    /// The HTTP server failed.
    #[error("the HTTP server failed: {0}")]
    Http(std::io::Error),
}
