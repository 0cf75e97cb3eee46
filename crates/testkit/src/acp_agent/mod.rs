//! `fake-acp-agent`: a scripted ACP agent (protocol v1, NDJSON JSON-RPC
//! 2.0 on stdio, frames built from `agent_client_protocol::v1::schema`)
//! for the faults no real agent shows on demand, and the helpers that find
//! it and read its log.
//!
//! ```text
//! fake-acp-agent [--scenario NAME [ARG]] [--log FILE] [--state DIR]
//! ```
//!
//! Every scenario answers `initialize` (`loadSession: true`),
//! `session/new` (ids `fake-session-N`) and `session/load` (replays each
//! earlier turn as a `user_message_chunk` and an `agent_message_chunk`,
//! then answers; an unknown id is error -32002), ignores notifications
//! (`session/cancel` included) and answers any other method with -32601.
//! What `session/prompt` does depends on the scenario:
//!
//! | scenario | `session/prompt` |
//! |---|---|
//! | `text` (default) | [`THOUGHT`] as `agent_thought_chunk`, the three [`TEXT_CHUNKS`], a `usage_update` ([`USAGE_USED`]/[`USAGE_SIZE`]), a `plan` ([`PLAN`]), then `end_turn` with Gemini-shaped usage in `_meta`; prompt keywords: `[stop:REASON]` ([`STOP`]) ends with that stop reason, `[mode:ID]` ([`MODE`]) first sends a `current_mode_update`, [`WAIT_FOR_CANCEL`] stops after the thought and first delta until `session/cancel`, then ends `cancelled` |
//! | `permission` | `tool_call` [`PERMISSION_CALL_ID`] (kind `execute`, `pending`), then `session/request_permission` offering `allow_once`, `allow_always`, `reject_once`, `reject_always`; allowed: `tool_call_update` `completed` and text [`APPROVED`]; rejected: `failed` and [`DENIED`]; a `cancelled` outcome: stop reason `cancelled`; an option not offered: error -32602 |
//! | `fs-read PATH` | `fs/read_text_file` for PATH (joined to the session's cwd when relative; `..` kept); the content, or `error CODE: MESSAGE`, as text |
//! | `fs-write PATH` | `fs/write_text_file` of the prompt's text to PATH; [`WRITTEN`] or `error CODE: MESSAGE` |
//! | `terminal CMD` | `terminal/create` (CMD split on whitespace) → `wait_for_exit` → `output` → `release`; the output, or the first error, as text |
//! | `bad-version` | (`initialize` answers protocol version [`BAD_PROTOCOL_VERSION`]); otherwise `text` |
//! | `malformed` | (after answering `session/new`: the line [`NOT_JSON_LINE`] and a `session/update` with text [`MALFORMED_TEXT`] that lacks `"jsonrpc"`); otherwise `text` |
//! | `silent` | never answered; the agent does not exit at the end of stdin either |
//! | `hang-on-cancel-child` | like `silent`, with a `sleep 600` started at launch in the agent's process group (stdio on `/dev/null`; find it with [`proc_tree::children`](crate::proc_tree::children) of the agent's PID before it goes) |
//! | `error` | error [`ERROR_CODE`] [`ERROR_MESSAGE`] |
//! | `exit` | the first text chunk, then exit status [`EXIT_STATUS`] |
//!
//! `--log FILE` appends every frame received, one JSON line each (a line
//! that is not JSON as `{"unparsed": line}`); read it with
//! [`FakeAcpAgent::read_log`]. `--state DIR` keeps sessions in
//! `DIR/sessions.json`, so a second process can load the first one's.

mod agent;
mod conn;
mod frames;
mod keywords;
mod scenario;
mod sessions;
mod turn;

use std::path::{Path, PathBuf};

pub use agent::{Exit, run};
pub use keywords::{MODE, STOP, WAIT_FOR_CANCEL};
pub use scenario::{Options, Scenario, USAGE};

/// The environment variable that overrides the path of `fake-acp-agent`.
pub const BINARY_ENV: &str = "AGENT_ADAPTOR_FAKE_ACP_AGENT";

/// The `agent_thought_chunk` of a `text` turn.
pub const THOUGHT: &str = "Thinking about the prompt.";
/// The three `agent_message_chunk`s of a `text` turn.
pub const TEXT_CHUNKS: [&str; 3] = ["Hello", " from the", " fake agent."];
/// The `used` of a `text` turn's `usage_update`.
pub const USAGE_USED: u64 = 1234;
/// The `size` of a `text` turn's `usage_update`.
pub const USAGE_SIZE: u64 = 200_000;
/// The plan of a `text` turn: each entry's content and whether it is
/// completed (else in progress).
pub const PLAN: [(&str, bool); 2] = [("Read the prompt", true), ("Answer it", false)];
/// The `toolCallId` of the `permission` scenario's tool call.
pub const PERMISSION_CALL_ID: &str = "fake-call-1";
/// The text after an allowed permission.
pub const APPROVED: &str = "approved";
/// The text after a rejected permission.
pub const DENIED: &str = "denied";
/// The text after a successful `fs/write_text_file`.
pub const WRITTEN: &str = "written";
/// The protocol version of the `bad-version` scenario.
pub const BAD_PROTOCOL_VERSION: u16 = 999;
/// The line that is not JSON of the `malformed` scenario.
pub const NOT_JSON_LINE: &str = "fake-acp-agent: this line is not JSON";
/// The text of the `malformed` scenario's frame without `"jsonrpc"`.
pub const MALFORMED_TEXT: &str = "frame without jsonrpc";
/// The JSON-RPC error code of the `error` scenario.
pub const ERROR_CODE: i32 = -32603;
/// The JSON-RPC error message of the `error` scenario.
pub const ERROR_MESSAGE: &str = "model HTTP 500";
/// The exit status of the `exit` scenario.
pub const EXIT_STATUS: u8 = 3;

/// Finding `fake-acp-agent` and reading its log from tests.
#[derive(Debug, Clone, Copy)]
pub struct FakeAcpAgent;

impl FakeAcpAgent {
    /// The path of the `fake-acp-agent` binary, built first when missing or
    /// stale (found like [`fake_cli_binary`](crate::replay::fake_cli_binary)).
    /// [`BINARY_ENV`] overrides it.
    pub fn binary() -> std::io::Result<PathBuf> {
        crate::bins::testkit_binary("fake-acp-agent", BINARY_ENV)
    }

    /// The frames logged at `path` (`--log`), oldest first; no file yet is
    /// no frames.
    pub fn read_log(path: &Path) -> std::io::Result<Vec<serde_json::Value>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        text.lines()
            .map(|line| {
                serde_json::from_str(line)
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
            })
            .collect()
    }
}
