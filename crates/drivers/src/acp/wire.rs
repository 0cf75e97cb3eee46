//! ACP's JSON-RPC 2.0 frames: one JSON object per line, **with**
//! `"jsonrpc":"2.0"` (protocols.md §7). What a line is
//! ([`Frame::kind`]), and the frames the client writes. The message bodies
//! are the official schema's v1 types (`agent_client_protocol::v1::schema`),
//! serialized as they are; nothing here re-declares a protocol message.

use agent_adaptor_driver::{McpServer as RunMcpServer, McpTransport};
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, EnvVariable, FileSystemCapabilities,
    HttpHeader, Implementation, InitializeRequest, LoadSessionRequest, McpServer, McpServerHttp,
    McpServerSse, McpServerStdio, NewSessionRequest, PromptRequest, ResumeSessionRequest,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The only protocol version the family speaks (ACP v1).
pub const PROTOCOL_VERSION: u64 = 1;
/// JSON-RPC "method not found": the answer to every agent request the
/// client does not serve.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "invalid params".
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC "internal error".
pub const INTERNAL_ERROR: i64 = -32603;
/// ACP's "resource not found" (a file that does not exist).
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// One stdout line, decoded only as far as JSON-RPC goes.
#[derive(Debug, Deserialize)]
pub struct Frame {
    /// The protocol marker (`"2.0"`).
    #[serde(default)]
    pub jsonrpc: Option<String>,
    /// The request id (requests and responses).
    #[serde(default)]
    pub id: Option<Value>,
    /// The method (requests and notifications).
    #[serde(default)]
    pub method: Option<String>,
    /// The parameters.
    #[serde(default)]
    pub params: Option<Value>,
    /// A successful response's result (`null` reads as `None`).
    #[serde(default)]
    pub result: Option<Value>,
    /// An error response's error.
    #[serde(default)]
    pub error: Option<Value>,
}

/// What a [`Frame`] is.
#[derive(Debug)]
pub enum FrameKind {
    /// The agent asks the client (`id` and `method`).
    Request {
        /// The id to answer.
        id: Value,
        /// The method.
        method: String,
        /// The parameters (`null` when absent).
        params: Value,
    },
    /// A notification (`method`, no `id`).
    Notification {
        /// The method.
        method: String,
        /// The parameters (`null` when absent).
        params: Value,
    },
    /// The answer to one of the client's requests.
    Response {
        /// The client's request id.
        id: Value,
        /// The result, or the error object.
        result: Result<Value, Value>,
    },
    /// Neither: no method and no id.
    Invalid,
}

impl Frame {
    /// What the frame is.
    pub fn kind(self) -> FrameKind {
        let params = self.params.unwrap_or(Value::Null);
        match (self.id.filter(|id| !id.is_null()), self.method) {
            (Some(id), Some(method)) => FrameKind::Request { id, method, params },
            (None, Some(method)) => FrameKind::Notification { method, params },
            (Some(id), None) => FrameKind::Response {
                id,
                result: match self.error {
                    Some(e) => Err(e),
                    None => Ok(self.result.unwrap_or(Value::Null)),
                },
            },
            (None, None) => FrameKind::Invalid,
        }
    }
}

/// A request frame of the client.
pub fn request(id: i64, method: &str, params: &impl Serialize) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A notification frame of the client.
pub fn notification(method: &str, params: &impl Serialize) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// The client's successful answer to agent request `id`.
pub fn result_frame(id: &Value, result: &impl Serialize) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// The client's error answer to agent request `id`.
pub fn error_frame(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// The text of a JSON-RPC error object (its `message`, else the object).
pub fn error_message(error: &Value) -> String {
    match error.get("message").and_then(Value::as_str) {
        Some(m) => match error.get("data") {
            Some(data) if !data.is_null() => format!("{m} ({data})"),
            _ => m.to_owned(),
        },
        None => error.to_string(),
    }
}

/// `initialize`: protocol v1, and what the client serves: text files
/// (read and write) and terminals.
pub fn initialize() -> InitializeRequest {
    let fs = FileSystemCapabilities::new()
        .read_text_file(true)
        .write_text_file(true);
    InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(ClientCapabilities::new().fs(fs).terminal(true))
        .client_info(Implementation::new(
            "agent-adaptor",
            env!("CARGO_PKG_VERSION"),
        ))
}

/// How the session is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// `session/new`.
    New,
    /// `session/load` (the agent replays the history first).
    Load,
    /// `session/resume` (no replay).
    Resume,
}

impl Open {
    /// The method name.
    pub fn method(self) -> &'static str {
        match self {
            Open::New => "session/new",
            Open::Load => "session/load",
            Open::Resume => "session/resume",
        }
    }
}

/// The params of `how` for the session `id` (none for a new one), in `cwd`
/// with the run's MCP servers.
pub fn open_params(how: Open, id: Option<&str>, cwd: &str, servers: &[McpServer]) -> Value {
    let servers = servers.to_vec();
    let id = id.unwrap_or_default().to_owned();
    let value = match how {
        Open::New => serde_json::to_value(NewSessionRequest::new(cwd).mcp_servers(servers)),
        Open::Load => serde_json::to_value(LoadSessionRequest::new(id, cwd).mcp_servers(servers)),
        Open::Resume => {
            serde_json::to_value(ResumeSessionRequest::new(id, cwd).mcp_servers(servers))
        }
    };
    value.unwrap_or(Value::Null)
}

/// `session/prompt` with the prompt as one text block.
pub fn prompt(session: &str, text: &str) -> PromptRequest {
    PromptRequest::new(
        session.to_owned(),
        vec![ContentBlock::from(text.to_owned())],
    )
}

/// `session/cancel`.
pub fn cancel(session: &str) -> CancelNotification {
    CancelNotification::new(session.to_owned())
}

/// A run's MCP server as ACP's `McpServer` (stdio, http or sse, with its
/// headers). A bearer token named by a host variable is not carried (the
/// descriptor does not declare it, so core refuses such a server first):
/// its value would travel in a frame.
pub fn mcp_server(server: &RunMcpServer) -> McpServer {
    let headers = |h: &std::collections::BTreeMap<String, String>| -> Vec<HttpHeader> {
        h.iter().map(|(k, v)| HttpHeader::new(k, v)).collect()
    };
    match &server.transport {
        McpTransport::Stdio { command, args, env } => McpServer::Stdio(
            McpServerStdio::new(&server.name, command)
                .args(args.clone())
                .env(env.iter().map(|(k, v)| EnvVariable::new(k, v)).collect()),
        ),
        McpTransport::Http {
            url, headers: h, ..
        } => McpServer::Http(McpServerHttp::new(&server.name, url).headers(headers(h))),
        McpTransport::Sse {
            url, headers: h, ..
        } => McpServer::Sse(McpServerSse::new(&server.name, url).headers(headers(h))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn kind(line: &str) -> FrameKind {
        serde_json::from_str::<Frame>(line).unwrap().kind()
    }

    #[test]
    fn frames_are_told_apart() {
        assert!(matches!(
            kind(r#"{"jsonrpc":"2.0","id":3,"method":"fs/read_text_file","params":{}}"#),
            FrameKind::Request { method, .. } if method == "fs/read_text_file"
        ));
        assert!(matches!(
            kind(r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#),
            FrameKind::Notification { .. }
        ));
        assert!(matches!(
            kind(r#"{"jsonrpc":"2.0","id":1,"result":null}"#),
            FrameKind::Response {
                result: Ok(Value::Null),
                ..
            }
        ));
        assert!(matches!(
            kind(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}"#),
            FrameKind::Response { result: Err(_), .. }
        ));
        assert!(matches!(kind(r#"{"jsonrpc":"2.0"}"#), FrameKind::Invalid));
    }

    #[test]
    fn the_client_declares_files_and_terminals() {
        let v = serde_json::to_value(initialize()).unwrap();
        assert_eq!(v["protocolVersion"], 1);
        assert_eq!(v["clientCapabilities"]["fs"]["readTextFile"], true);
        assert_eq!(v["clientCapabilities"]["fs"]["writeTextFile"], true);
        assert_eq!(v["clientCapabilities"]["terminal"], true);
        let frame: Value = serde_json::from_str(&request(1, "initialize", &initialize())).unwrap();
        assert_eq!(frame["jsonrpc"], "2.0");
    }

    #[test]
    fn mcp_servers_keep_their_transport() {
        let server = RunMcpServer {
            name: "kv".into(),
            transport: McpTransport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: [("X-A".to_owned(), "b".to_owned())].into(),
                bearer_token_env: None,
            },
            required: false,
            tools: Default::default(),
        };
        let v = serde_json::to_value(mcp_server(&server)).unwrap();
        assert_eq!(v["type"], "http");
        assert_eq!(v["headers"][0]["name"], "X-A");
        let p = open_params(Open::Load, Some("s1"), "/w", &[mcp_server(&server)]);
        assert_eq!(p["sessionId"], "s1");
        assert_eq!(p["cwd"], "/w");
        assert_eq!(p["mcpServers"][0]["name"], "kv");
    }
}
