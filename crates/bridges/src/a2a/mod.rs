//! # A2A 1.0: a server over any [`Runner`](agent_adaptor_core::Runner), and a client
//!
//! This module follows **A2A 1.0** (proto package `lf.a2a.v1`, JSON-RPC
//! binding, spec §9): PascalCase methods, ProtoJSON bodies, the
//! `A2A-Version: 1.0` service parameter, SSE for streams. It was checked
//! against the official clients `@a2a-js/sdk` 1.3.0 (npm) and `a2a-sdk`
//! 1.3.0 (PyPI), and our [`Client`] against the `a2a-sdk` reference server.
//! A2A 0.3 (slash method names, `kind` discriminators) is not served: both
//! 1.3 SDKs speak 1.0 to a server whose card declares `protocolVersion`
//! `"1.0"`, so no alias is needed; a 0.3 method name gets
//! `VersionNotSupported` (-32009) rather than "method not found".
//!
//! ```
//! use std::sync::Arc;
//! use agent_adaptor_bridges::a2a::{
//!     A2aServer, Client, Message, SendMessageRequest, SendMessageResponse, TaskState,
//! };
//! use agent_adaptor_core::{Agent, scripted::ScriptedDriver};
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = Agent::new(ScriptedDriver::text_reply("Hello!"));
//! let server = A2aServer::builder(Arc::new(agent)).name("greeter").build();
//! let running = server.serve_local().await?; // 127.0.0.1, a free port
//!
//! let client = Client::connect(running.url()).await?;
//! let reply = client.send(SendMessageRequest::new(Message::user_text("hi"))).await?;
//! let SendMessageResponse::Task(task) = reply else { panic!("a task") };
//! assert_eq!(task.status.state, TaskState::Completed);
//! assert_eq!(task.artifact_text(), "Hello!");
//! running.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! ## Server
//!
//! * `GET /.well-known/agent-card.json`: the Agent Card (name, description,
//!   skills, `capabilities.streaming = true`, `capabilities.pushNotifications`
//!   when push is on, one `JSONRPC` interface with `protocolVersion "1.0"` at
//!   the RPC path, default `/a2a`).
//! * `POST /a2a`: JSON-RPC 2.0 with `SendMessage`, `SendStreamingMessage`,
//!   `GetTask`, `CancelTask`, `SubscribeToTask`, and `ListTasks` with a
//!   task store (below; without one it answers `UnsupportedOperation`).
//!   `GetExtendedAgentCard` answers `UnsupportedOperation` (-32004). The
//!   push-notification methods (`Create`/`Get`/`Delete`
//!   `TaskPushNotificationConfig`, `ListTaskPushNotificationConfigs`) work
//!   when push is on ([`push`], [`A2aServerBuilder::push_notifications`]),
//!   else answer `PushNotificationNotSupported` (-32003).
//! * Every message without `taskId` starts a task and a run of the prompt
//!   (its text parts, and its data parts as JSON, joined by blank lines).
//!   The run becomes the task like this:
//!
//! | run | task |
//! |---|---|
//! | `RunStarted` | `TASK_STATE_WORKING` |
//! | assistant `TextDelta` content | an `artifactUpdate` chunk of the artifact `"response"` (`append` after the first) |
//! | `ApprovalRequest` | `TASK_STATE_INPUT_REQUIRED` with an agent message (below) |
//! | the approval answered, or timed out | `TASK_STATE_WORKING` (with a note when it timed out) |
//! | `result()` is `Ok` | the final `"response"` artifact replaces the chunks (`lastChunk`): the text as a text part, a valid structured output as a data part; then `TASK_STATE_COMPLETED` |
//! | `result()` is cancelled, or `CancelTask` was called | `TASK_STATE_CANCELED` |
//! | `result()` is any other error | `TASK_STATE_FAILED`, an agent message with the reason |
//!
//!   Reasoning, tool calls, process output and notices have no A2A
//!   counterpart and are not projected. A finished task's
//!   `metadata.agentAdaptor` holds the run id, provider, model, usage and
//!   the run's metadata (e.g. `decision.0 = approved`).
//! * Approvals: the task goes `TASK_STATE_INPUT_REQUIRED` with an agent
//!   message (a text part saying how to answer, a data part with the
//!   request); the client answers with a message carrying the same `taskId`
//!   (text `"approve"` / `"deny"`, a question's answer, or a data part
//!   `{"decision": …}`); the run, parked on the request, continues. The
//!   run's approval timeout (default 30 s, set it with
//!   [`A2aServerBuilder::run_options`]) still applies.
//! * `CancelTask` cancels the run (core stops the driver and kills its
//!   processes) and answers with the task once it is `CANCELED`.
//! * A task lives independently of any stream: a client that disconnects
//!   does not cancel it; `SubscribeToTask` re-attaches.
//! * Streams: `SendStreamingMessage` closes after a terminal or
//!   input-required state; `SubscribeToTask` stays open until a terminal
//!   state. Each SSE `data:` is a JSON-RPC response whose `result` is a
//!   `StreamResponse`; the first is always the task.
//! * Shutdown: [`A2aServer::shutdown`] cancels every task in progress (one
//!   waiting for input too), waits (bounded) until they are `CANCELED` —
//!   open streams show it — then ends every stream still open;
//!   [`A2aServer::close`] does the same without waiting. Afterwards new
//!   tasks are refused. [`A2aServer::serve`] runs on the hardened
//!   [`http`](crate::http) serve loop.
//!
//! ### Versions, errors and bad input
//!
//! | request | HTTP | JSON-RPC error |
//! |---|---|---|
//! | auth hook refuses | 401 / 403 | -32000 |
//! | `Content-Type` not `application/json` / `application/a2a+json` | 415 | -32600 |
//! | body over the limit (default 1 MiB, [`DEFAULT_MAX_BODY_BYTES`]) | 413 | -32600 |
//! | body is not JSON | 400 | -32700 |
//! | not a JSON-RPC 2.0 request object (batch, `jsonrpc` ≠ `"2.0"` …) | 400 | -32600 |
//! | unknown method | 200 | -32601 |
//! | `A2A-Version` missing (= 0.3, spec §3.6.2) or not `1.0` | 200 | -32009 |
//! | params invalid (no `message`, no parts, empty prompt, wrong role …) | 200 | -32602 |
//! | raw / URL parts | 200 | -32005 |
//! | push config refused (URL, host, address …; `refusal` metadata) | 200 | -32602 |
//! | push config method or `taskPushNotificationConfig` while push is off | 200 | -32003 |
//! | unknown task | 200 | -32001 |
//! | `CancelTask` on a terminal task | 200 | -32002 |
//! | `SubscribeToTask` on a terminal task, message to a finished task | 200 | -32004 |
//!
//! Errors inside a well-formed JSON-RPC call are HTTP 200 with the error
//! object (with a `google.rpc.ErrorInfo` detail), as the reference server
//! does: the PyPI client raises its typed error only for a 200 response.
//! In every error case nothing is started.
//!
//! ### Binding and auth
//!
//! [`A2aServer::serve_local`] binds 127.0.0.1. [`A2aServer::serve`] on a
//! non-loopback address refuses to start unless an auth hook is installed
//! ([`A2aServerBuilder::auth`], e.g. [`bearer_token`]) or
//! [`A2aServerBuilder::allow_unauthenticated`] says so. The hook guards the
//! JSON-RPC endpoint; the Agent Card stays public (it is for discovery).
//! [`A2aServer::router`] gives the axum router to mount elsewhere (add any
//! tower layer, e.g. for asynchronous auth).
//!
//! ### Limits
//!
//! The live tasks are in memory, at most [`DEFAULT_MAX_TASKS`] of them; a
//! finished task is forgotten [`DEFAULT_FINISHED_TASK_TTL`] after it
//! finished (both configurable). When every slot holds a task in progress,
//! a new message is refused (-32603) and nothing starts.
//!
//! ### Several servers over one store
//!
//! With [`A2aServerBuilder::task_store`] (`agent-adaptor serve` passes its
//! thread store) every task change is also written to the store (the
//! snapshot and the updates, in order, batched per task, beside the run;
//! notified to every server sharing the store), the principal kept as its
//! [`digest`](crate::Principal::digest). The live task stays in memory on
//! the server running it, so its own subscribers never wait on the store.
//! On any other server sharing the store:
//!
//! * `GetTask` reads the stored snapshot (`historyLength` applies);
//! * `SubscribeToTask` streams the stored snapshot, then every later update
//!   exactly once, in order, until the final one — woken by the store's
//!   notifications, re-reading every [`DEFAULT_TASK_POLL`] anyway;
//! * `CancelTask` notes the request in the store and notifies; the owning
//!   server cancels its run, and the response follows the task to its final
//!   state (bounded by [`A2aServerBuilder::cancel_wait`]);
//! * a message answering a task's `TASK_STATE_INPUT_REQUIRED` is checked
//!   as the owner would check it, recorded on the task's approval row (the
//!   owner keeps each approval there through the [`Desk`](crate::desk::Desk))
//!   and applied by the owner; the reply follows the task from the store;
//! * `ListTasks` lists the caller's tasks, newest change first (`contextId`,
//!   `status`, `statusTimestampAfter` — compared with the task's last
//!   change —, `pageSize` 1–100, default 50, `pageToken`, `historyLength`,
//!   `includeArtifacts`; `nextPageToken` and `totalSize`).
//!
//! When a server dies its runs' leases are recovered;
//! [`A2aServer::runs_interrupted`] fails their tasks ([`INTERRUPTED_TEXT`]),
//! and followers anywhere see the end. A write the store keeps refusing is
//! retried, then logged and counted ([`A2aServer::store_failures`],
//! [`TaskStoreError`]); a store that cannot keep tasks leaves the server
//! in memory only. Finished tasks leave the store after
//! [`DEFAULT_STORED_TASK_TTL`] ([`A2aServerBuilder::stored_task_ttl`]).
//!
//! ## Client
//!
//! [`Client`] fetches the card, picks its 1.0 JSON-RPC interface, sends
//! `A2A-Version: 1.0` on every request, and offers `send`, `stream` (a
//! [`futures::Stream`] of [`StreamResponse`]), `get_task`, `cancel_task`,
//! `subscribe` and `list_tasks`, with typed errors ([`ClientError`], [`ErrorCode`]).

mod client;
mod durable;
mod execute;
mod observe;
pub mod push;
mod remote;
mod rpc;
mod server;
mod shared_input;
mod sse;
mod store;
mod types;

pub use client::{Client, ClientBuilder, ClientError, UpdateStream};
pub use durable::{DEFAULT_STORED_TASK_TTL, DEFAULT_TASK_POLL, TaskStoreError};
pub use execute::RESPONSE_ARTIFACT_ID;
pub use observe::{
    CAPABILITIES_ARTIFACT_ID, IMAGES_ARTIFACT_ID, SUBAGENT_ARTIFACT_PREFIX, TODO_ARTIFACT_ID,
};
pub use remote::INTERRUPTED_TEXT;
pub use rpc::{ERROR_DOMAIN, ErrorCode, RpcError};
pub use server::{
    A2aServer, A2aServerBuilder, AuthRejection, Authorize, BearerToken, DEFAULT_CANCEL_WAIT,
    DEFAULT_FINISHED_TASK_TTL, DEFAULT_KEEP_ALIVE, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_TASKS,
    DEFAULT_RPC_PATH, RunningServer, ServeError, bearer_token,
};
pub use types::{
    AGENT_CARD_PATH, AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill,
    Artifact, CancelTaskRequest, GetTaskRequest, JSONRPC_BINDING, ListTasksRequest,
    ListTasksResponse, Message, Metadata, PROTOCOL_VERSION, Part, PartContent, Role,
    SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent, VERSION_HEADER,
};

/// A fresh random id: `prefix` and 32 hex digits.
pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}{:032x}", rand::random::<u128>())
}
