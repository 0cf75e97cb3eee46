//! The run's MCP servers, reached with the `rmcp` client: connect (stdio
//! child process or Streamable HTTP), list the tools, call one, close.
//!
//! A stdio server is a child of this process (killed when the run's
//! connection drops), with the server's extra environment on top of this
//! process's. An HTTP server gets the server's headers and, with
//! `bearer_token_env`, `Authorization: Bearer` with the value of that
//! variable of this process; the value never reaches an event or an
//! error. This build's HTTP client speaks plain `http://` (no TLS): an
//! `https://` server is refused with that reason.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use agent_adaptor_driver::{CancellationToken, McpServer, McpTransport};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

/// How long connecting to a server and listing its tools may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long closing a connection may take.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// One connected server.
pub(super) struct Connection {
    /// The server as the run gave it.
    pub(super) server: McpServer,
    /// Its tools (before the policy's filter).
    pub(super) tools: Vec<Tool>,
    client: RunningService<RoleClient, ()>,
}

/// What a tool call gave back: the text for the model, and whether the
/// tool reported an error.
pub(super) struct McpOutcome {
    pub(super) text: String,
    pub(super) is_error: bool,
}

/// Connects to `server` and lists its tools; the error is a reason fit for
/// a notice (never a secret).
pub(super) async fn connect(
    server: &McpServer,
    cancel: &CancellationToken,
) -> Result<Connection, String> {
    let work = async {
        let client = match &server.transport {
            McpTransport::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env).kill_on_drop(true);
                let (transport, _) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| format!("cannot start {command:?}: {e}"))?;
                ().serve(transport)
                    .await
                    .map_err(|e| format!("the MCP handshake failed: {e}"))?
            }
            McpTransport::Http {
                url,
                headers,
                bearer_token_env,
            } => {
                if url.starts_with("https://") {
                    return Err(
                        "https MCP servers are not supported by this build's client (plain http only)"
                            .to_owned(),
                    );
                }
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(var) = bearer_token_env {
                    let token = std::env::var(var)
                        .ok()
                        .filter(|t| !t.is_empty())
                        .ok_or_else(|| format!("bearer_token_env {var} is not set"))?;
                    config = config.auth_header(token);
                }
                let mut custom = HashMap::new();
                for (key, value) in headers {
                    let name = HeaderName::from_bytes(key.as_bytes())
                        .map_err(|_| format!("invalid header name {key:?}"))?;
                    let value = HeaderValue::from_str(value)
                        .map_err(|_| format!("invalid value of header {key:?}"))?;
                    custom.insert(name, value);
                }
                config = config.custom_headers(custom);
                ().serve(StreamableHttpClientTransport::from_config(config))
                    .await
                    .map_err(|e| format!("the MCP handshake failed: {e}"))?
            }
            McpTransport::Sse { .. } => {
                return Err("the legacy SSE transport is not supported".to_owned());
            }
        };
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        Ok(Connection {
            server: server.clone(),
            tools,
            client,
        })
    };
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err("the run was cancelled".to_owned()),
        outcome = tokio::time::timeout(CONNECT_TIMEOUT, work) => outcome.unwrap_or_else(|_| {
            Err(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()))
        }),
    }
}

impl Connection {
    /// Calls `tool` with `input` (an object; anything else is refused
    /// before the call); `None` when the run was cancelled meanwhile.
    pub(super) async fn call(
        &self,
        tool: &str,
        input: &Value,
        cancel: &CancellationToken,
    ) -> Option<McpOutcome> {
        let Value::Object(arguments) = input else {
            return Some(McpOutcome {
                text: format!("the input of {tool} must be a JSON object"),
                is_error: true,
            });
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone());
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => return None,
            outcome = self.client.call_tool(params) => outcome,
        };
        Some(match outcome {
            Ok(result) => outcome_of(&result),
            Err(e) => McpOutcome {
                text: format!("the MCP server {} failed: {e}", self.server.name),
                is_error: true,
            },
        })
    }

    /// Closes the connection (a stdio server's process ends with it).
    pub(super) async fn close(self) {
        let _ = tokio::time::timeout(CLOSE_TIMEOUT, self.client.cancel()).await;
    }
}

/// The text of a result: its text blocks, else each block's JSON, else the
/// structured content.
fn outcome_of(result: &CallToolResult) -> McpOutcome {
    let texts: Vec<String> = result
        .content
        .iter()
        .map(|block| match block.as_text() {
            Some(text) => text.text.clone(),
            None => serde_json::to_string(block).unwrap_or_default(),
        })
        .collect();
    let mut text = texts.join("\n");
    if text.is_empty()
        && let Some(structured) = &result.structured_content
    {
        text = structured.to_string();
    }
    McpOutcome {
        text,
        is_error: result.is_error == Some(true),
    }
}
