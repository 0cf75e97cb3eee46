//! Serde types of `codex exec --json` (protocols.md §1.3), lenient: unknown
//! event and item types decode to `Unknown`, unknown fields are ignored (the
//! exact line stays in the raw capture).

use serde::Deserialize;
use serde_json::Value;

/// One stdout line of `codex exec --json` (deserialized tag first, see
/// `wire_de.rs`).
#[derive(Debug, Clone)]
pub enum ExecEvent {
    /// The thread (session) id: the resume identifier.
    ThreadStarted {
        /// The thread id.
        thread_id: String,
    },
    /// A turn began.
    TurnStarted,
    /// An item began (command execution, MCP call, todo list …).
    ItemStarted {
        /// The item.
        item: Item,
    },
    /// An item changed.
    ItemUpdated {
        /// The item.
        item: Item,
    },
    /// An item completed (the authoritative item).
    ItemCompleted {
        /// The item.
        item: Item,
    },
    /// The turn completed: the successful terminal event.
    TurnCompleted {
        /// Cumulative usage of the thread.
        usage: Option<ExecUsage>,
    },
    /// The turn failed: the failure terminal event.
    TurnFailed {
        /// The error.
        error: Option<ErrorBody>,
    },
    /// A fatal stream error (comes before `turn.failed`).
    Error {
        /// The message.
        message: String,
    },
    /// Anything else.
    Unknown,
}

/// An error body.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ErrorBody {
    /// The message (sometimes itself a JSON document).
    pub message: String,
}

/// `turn.completed.usage` (cumulative for the thread).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ExecUsage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Cached input tokens.
    pub cached_input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Reasoning tokens.
    pub reasoning_output_tokens: u64,
}

/// A thread item: the common fields plus the type-specific ones
/// (deserialized tag first, see `wire_de.rs`).
#[derive(Debug, Clone)]
pub struct Item {
    /// A per-process counter (`item_0` …); not a stable identifier.
    pub id: String,
    /// What the item is.
    pub details: ItemDetails,
}

/// The item types (`ThreadItemDetails`).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ItemDetails {
    /// Assistant text (a JSON string with `--output-schema`).
    AgentMessage {
        /// The text.
        #[serde(default)]
        text: String,
    },
    /// Reasoning summary.
    Reasoning {
        /// The text.
        #[serde(default)]
        text: String,
    },
    /// A shell command.
    CommandExecution {
        /// The command line.
        #[serde(default)]
        command: String,
        /// Combined output.
        #[serde(default)]
        aggregated_output: String,
        /// Exit code, once finished.
        #[serde(default)]
        exit_code: Option<i64>,
        /// `in_progress`, `completed`, `failed`, `declined`.
        #[serde(default)]
        status: String,
    },
    /// File edits.
    FileChange {
        /// The changes.
        #[serde(default)]
        changes: Value,
        /// `completed`, `failed`.
        #[serde(default)]
        status: String,
    },
    /// An MCP tool call.
    McpToolCall {
        /// The server.
        #[serde(default)]
        server: String,
        /// The tool.
        #[serde(default)]
        tool: String,
        /// The arguments.
        #[serde(default)]
        arguments: Value,
        /// The result.
        #[serde(default)]
        result: Option<Value>,
        /// The error.
        #[serde(default)]
        error: Option<Value>,
        /// The status.
        #[serde(default)]
        status: String,
    },
    /// A web search.
    WebSearch {
        /// The query.
        #[serde(default)]
        query: String,
    },
    /// A non-fatal error (a warning).
    Error {
        /// The message.
        #[serde(default)]
        message: String,
    },
    /// Anything else (todo_list, plan, collab_tool_call …).
    #[serde(other)]
    Other,
}
