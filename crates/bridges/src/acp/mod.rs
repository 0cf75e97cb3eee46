//! # ACP: every driver served to editors over the Agent Client Protocol
//!
//! [`AcpServer`] is an ACP agent (protocol v1, JSON-RPC 2.0 as NDJSON
//! lines with `"jsonrpc":"2.0"`) over any [`Agent`](agent_adaptor_core::Agent):
//! an editor (Zed, JetBrains, Neovim, Emacs) or any ACP client drives Claude
//! Code, Codex, the LLM agent … through one protocol. `agent-adaptor acp`
//! serves it on stdio. Messages are the official crate's v1 schema types
//! (`agent_client_protocol::v1::schema`); the loop is our own.
//!
//! ```
//! use agent_adaptor_bridges::acp::AcpServer;
//! use agent_adaptor_core::{Agent, scripted::ScriptedDriver};
//! use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
//!
//! # #[tokio::main] async fn main() {
//! let server = AcpServer::new(Agent::new(ScriptedDriver::text_reply("Hello!")));
//! let (client, agent_side) = tokio::io::duplex(64 * 1024);
//! let (agent_in, agent_out) = tokio::io::split(agent_side);
//! let serving = tokio::spawn(async move { server.serve(agent_in, agent_out).await });
//! let (from_agent, mut to_agent) = tokio::io::split(client);
//! to_agent
//!     .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n")
//!     .await
//!     .unwrap();
//! let mut lines = BufReader::new(from_agent).lines();
//! let answer: serde_json::Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
//! assert_eq!(answer["result"]["protocolVersion"], 1);
//! to_agent.shutdown().await.unwrap(); // end of input ends the server
//! serving.await.unwrap().unwrap();
//! # }
//! ```
//!
//! | method | what the server does |
//! |---|---|
//! | `initialize` | protocol version 1 (whatever the client asked; it closes if it cannot speak 1); `agentCapabilities`: `loadSession` with threads, `promptCapabilities.embeddedContext`, `mcpCapabilities` `http`/`sse` as the driver carries them |
//! | `session/new {cwd, mcpServers}` | a session (id `acp-<hex>`, the thread key with threads); `cwd` absolute and an existing directory, canonicalised (else -32602); each MCP server and the cwd checked as a run would be: a server the driver cannot carry is -32602 naming the capability (`mcp.http` …); `additionalDirectories` refused |
//! | `session/prompt` | a run on the session's thread (see `prompt`): updates stream as `session/update`, approvals as `session/request_permission`, the answer is the stop reason or a typed error; a second prompt while one runs is -32600 |
//! | `session/cancel` | cancels the session's turn: the run and its processes end, the prompt answers `stopReason: cancelled`, a permission request still open is denied |
//! | `session/load {sessionId, cwd, mcpServers}` | (threads only) the stored thread, or -32002 when none; its conversation replayed as `session/update` (`user_message_chunk`, `agent_message_chunk`, `agent_thought_chunk`, `tool_call` …) **before** the answer, as far as the [`HistoryReader`] reads it; the next prompt continues the thread and refuses a record that no longer matches (another cwd …) |
//! | `authenticate` | `{}` (nothing to authenticate: the driver's own credentials are used) |
//! | anything else | -32601; a frame that is not JSON -32700; not JSON-RPC 2.0 -32600; bad params -32602 |
//!
//! Events become updates in `update` (text → `agent_message_chunk`,
//! reasoning → `agent_thought_chunk`, tool calls → `tool_call` /
//! `tool_call_update` with kind, status, `rawInput`, `rawOutput` and
//! locations); approvals become permission requests in `permission`.
//! The server never writes anything but frames to its output; it logs with
//! `tracing`. End of input ends the server: every turn is cancelled and
//! waited for (at most [`DEFAULT_CLOSE_WAIT`]).

mod history;
mod permission;
mod prompt;
mod rpc;
mod server;
mod session;
mod update;

pub use history::{HistoryEntry, HistoryReader};
pub use server::{AcpServer, DEFAULT_APPROVAL_TIMEOUT, DEFAULT_CLOSE_WAIT};
pub use session::MAX_SESSIONS;
