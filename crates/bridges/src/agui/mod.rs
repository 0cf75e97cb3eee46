//! AG-UI 1.0 over SSE, and a raw SSE mode.
//!
//! **Versions followed:** the AG-UI protocol **1.0** ([`PROTOCOL_VERSION`]),
//! as published in the npm packages `@ag-ui/core` / `@ag-ui/client`
//! **1.0.0** ([`AGUI_CORE_VERSION`]). The interop tests run the official
//! `@ag-ui/client` 1.0.0 (`HttpAgent` and its verifier) against this
//! bridge; `tests/bridges/package-lock.json` pins it and a test fails when
//! that pin leaves the 1.0 line. Reasoning uses the 1.0 `REASONING_*`
//! events (never the removed `THINKING_*`).
//!
//! # Mapping ([`AguiRun`])
//!
//! | our [`Event`](agent_adaptor_core::Event) | AG-UI |
//! |---|---|
//! | `RunStarted` | `RUN_STARTED {threadId, runId}` (echoing the request) — always first |
//! | `TextDelta` start / content / end | `TEXT_MESSAGE_START` (role) / `_CONTENT` / `_END` |
//! | `Thinking` start / content / end | `REASONING_START` + `REASONING_MESSAGE_START` / `REASONING_MESSAGE_CONTENT` / `REASONING_MESSAGE_END` + `REASONING_END` (span id = message id) |
//! | `ToolCall` start / content / end | `TOOL_CALL_START` / `TOOL_CALL_ARGS` / `TOOL_CALL_END`; complete arguments known at start are sent as one `TOOL_CALL_ARGS` before the end |
//! | `ToolCall` end with a result, `ToolResult` | `TOOL_CALL_RESULT {messageId: "<toolCallId>-result", content}` (a string result as is, other JSON as its text), once per call |
//! | `Notice` of kind `step` | `STEP_STARTED` / `STEP_FINISHED` |
//! | `Notice` of kind `thread.session_replaced` | `CUSTOM {name: "agent_adaptor.thread.session_replaced", value: <the notice's data>}` (a thread run started a fresh session over the key's record) |
//! | `Dropped` | `CUSTOM {name: "agent_adaptor.dropped", value}` |
//! | `ApprovalRequest` | `RUN_FINISHED {outcome: {type: "interrupt", interrupts: [..]}}` (below) |
//! | `RunFinished` + the run's outcome | `RUN_FINISHED {outcome: success, result, usage}` (`metadata.agentAdaptor.costUsd` when the provider reports a cost: `TokenUsage` is closed); a cancelled run `outcome: cancelled`; any other error `RUN_ERROR {message, code}` where `code` is the failure reason (`agent_error`, `approval_denied` …) |
//! | process output, other notices, subagent progress | nothing (the raw mode carries them) |
//!
//! Lifecycles are completed (a delta without its start opens it) and
//! deduplicated (a repeated start, an end of something not open, a second
//! result are dropped); everything still open is closed before the one
//! terminal event. Optional fields are omitted, never `null`; timestamps are
//! integer milliseconds; frames are LF-only, one compact JSON `data:` line.
//!
//! # Approvals as interrupts
//!
//! AG-UI has no mid-run channel back to the agent, so an approval ends the
//! AG-UI run: `RUN_FINISHED` with outcome
//! `{type: "interrupt", interrupts: [{id, reason, message?, toolCallId?,
//! responseSchema, expiresAt?, metadata}]}` where `id` is the approval id,
//! `reason` is `tool_approval`, `plan_review` or `question`, and
//! `responseSchema` says what to answer: `{"approved": bool, "reason"?:
//! string}`, or for a question `{"answer": string}`. The core run — and the
//! agent's CLI process — keeps waiting, parked by interrupt id. The client
//! answers with a **new** AG-UI run on the same thread whose
//! `RunAgentInput.resume` is `[{interruptId, status: "resolved", payload}]`
//! (or `status: "cancelled"`, which denies); that run streams the rest of
//! the same core run under its own `runId`. The parked run is cancelled at
//! `expiresAt`: the approval's deadline (core's approval timeout, 30 s by
//! default) or [`SseOptions::interrupt_timeout`], whichever is first. While
//! a thread has a parked run, a new run without `resume` is refused (409
//! `pending_interrupt`, listing the ids).
//!
//! # HTTP ([`SseHandler`])
//!
//! * AG-UI mode: `POST` a `RunAgentInput` (`Content-Type: application/json`);
//!   the prompt is the last non-empty user message's text. Raw mode: `POST`
//!   `{"prompt": "...", "sessionKey"?: "..."}`; each SSE event is our own
//!   event JSON (`{"type": "text_delta", "meta": {...}, ...}`), and a run
//!   refused before it started sends one `{"type": "error", "code",
//!   "message"}` event. SSE is one-way: in raw mode an approval request is
//!   an informational event only (core's approval deadline then applies);
//!   hosts that need raw-mode approvals install an `on_approval` handler in
//!   [`SseOptions::run_options`]. `RunAgentInput` fields other than
//!   `threadId`, `runId`, `messages` and `resume` (`state`, `tools`,
//!   `context`, `forwardedProps`, `protocolVersion`) are accepted and not
//!   used.
//! * Response: `text/event-stream`, header `x-agent-adaptor-run-id` (the
//!   core run id), `: keep-alive` comments after [`DEFAULT_KEEP_ALIVE`] of
//!   silence.
//! * SSE ids: the raw mode uses `EventMeta::sequence`; the AG-UI mode uses
//!   [`FrameId`]: `"<sequence>"` or `"<sequence>.<index>"` when one event
//!   gives several frames, strictly increasing.
//! * Reconnect: repeat the request with `Last-Event-ID` (AG-UI: same
//!   `threadId`/`runId`; raw: `{"runId": "<core run id>"}`) to get every
//!   frame after that id of a run that is still running or finished less
//!   than [`DEFAULT_REPLAY_RETAIN`] ago. Each run keeps a bounded replay
//!   buffer ([`DEFAULT_REPLAY_FRAMES`] frames / [`DEFAULT_REPLAY_BYTES`]);
//!   a cursor older than the buffer gets 410.
//! * Event log ([`SseOptions::event_log`]): every AG-UI run is recorded in
//!   its thread's log (owner as a digest, AG-UI ids, prompt, the snapshot
//!   sent, the core events, the ending frames), each batch before its
//!   frames go out. A reconnect the buffer cannot serve — another instance
//!   over the same store, or a run gone from memory — is replayed from the
//!   log with the same ids, then follows the run by polling until its end
//!   (silence past [`DEFAULT_LOG_IDLE`]: `RUN_ERROR` `interrupted`). Another
//!   principal 403, never logged 404, pruned 410, a store without a log 503
//!   `event_log_unavailable`. With a log, `RUN_STARTED` is followed by a
//!   `MESSAGES_SNAPSHOT` of the thread ([`history`]) and the current prompt.
//!   [`thread_transcript`] derives every run of a thread's log again (the
//!   same frames, prompts and interrupt decisions): a client's history.
//! * A run lives while a client reads it: when the last one disconnects
//!   (or stops reading for [`DEFAULT_WRITE_TIMEOUT`], the per-write
//!   deadline), the run is cancelled, which stops its CLI process — at
//!   once without an event log; with one, after
//!   [`SseOptions::reconnect_grace`] ([`DEFAULT_RECONNECT_GRACE`]) without
//!   a reader, here or on another host replaying it from the log (that
//!   reader announces itself through the store's notifications).
//!   [`SseHandler::cancel_run`] stops a run at once (a client's explicit
//!   Stop).
//! * Shared interrupts (with an event log whose store keeps approvals,
//!   see [`desk`](crate::desk)): a parked run's interrupt is a pending
//!   approval row; a resume reaching another host is checked against the
//!   row (owner, thread, payload), recorded once, and streamed from the
//!   log while the run's host continues the run under the client's new
//!   run id. An expired row is refused everywhere and its run cancelled.
//! * Shutdown ([`SseHandler::shutdown`]): every run streaming and every
//!   run parked at an interrupt is cancelled; attached streams get the
//!   final `RUN_FINISHED` (outcome `cancelled`) and end; the call waits,
//!   bounded, for the runs to end. A run started afterwards is cancelled at
//!   once.
//! * Thread binding ([`SseHandler::with_threads`]): AG-UI `threadId` →
//!   [`agui_thread_key`] (a collision-free tuple encoding), raw `sessionKey`
//!   → [`raw_thread_key`] (the same encoding under its own prefix).
//! * Ownership: each run belongs to the [`Principal`](crate::Principal) that
//!   started it (a request extension the host's authentication sets). Only
//!   that principal may answer its interrupts (else 403) or replay it with
//!   `Last-Event-ID` (else 403); a pending interrupt's id is disclosed only
//!   to it.
//! * Optional bearer-token auth; CORS headers only when an origin is
//!   configured; [`SseServer`] binds 127.0.0.1 by default.
//! * Bad input is refused before anything starts, with a 4xx status and
//!   `{"error": {"code", "message"}}` ([`RequestError`]): wrong content type
//!   415, malformed JSON 400, wrong shape or no user message 422, body over
//!   [`DEFAULT_MAX_BODY_BYTES`] (1 MiB) 413, a body that does not arrive
//!   within the write timeout 408, bad token 401.

mod error;
mod hub;
mod interrupts;
mod mapper;
mod observe;
mod options;
mod presence;
mod record;
mod replay;
mod run;
mod server;
mod shared;
mod source;
mod sse;
mod thread_key;
mod transcript;
pub mod wire;

pub use error::RequestError;
pub use mapper::{
    CUSTOM_DROPPED, CUSTOM_SESSION_REPLACED, REASON_PLAN_REVIEW, REASON_QUESTION,
    REASON_TOOL_APPROVAL,
};
pub use observe::{ACTIVITY_CAPABILITY, ACTIVITY_SUBAGENT, ACTIVITY_TODO, CUSTOM_IMAGE};
pub use options::{
    DEFAULT_INTERRUPT_TIMEOUT, DEFAULT_KEEP_ALIVE, DEFAULT_LOG_IDLE, DEFAULT_LOG_POLL,
    DEFAULT_MAX_BODY_BYTES, DEFAULT_RECONNECT_GRACE, DEFAULT_REPLAY_BYTES, DEFAULT_REPLAY_FRAMES,
    DEFAULT_REPLAY_RETAIN, DEFAULT_WRITE_TIMEOUT, Protocol, SseOptions,
};
pub use record::{INTERRUPTION_NOTICE, history, record_interruption, thread_history};
pub use run::{AguiFrame, AguiRun, BadFrameId, Decision, FrameId, Interrupted, ResumeError};
pub use server::{DEFAULT_BIND_ADDR, RUN_ID_HEADER, SseHandler, SseServer};
pub use thread_key::{
    AGUI_THREAD_KEY_PREFIX, RAW_THREAD_KEY_PREFIX, agui_thread_key, parse_agui_thread_key,
    parse_raw_thread_key, raw_thread_key,
};
pub use transcript::{thread_transcript, transcript};
pub use wire::{AGUI_CORE_VERSION, AguiEvent, EventBody, Message, PROTOCOL_VERSION};
