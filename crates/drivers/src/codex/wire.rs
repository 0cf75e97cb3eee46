//! Serde types of `codex exec --json` (protocols.md §1.3), lenient: unknown
//! event and item types decode to `Unknown`, unknown fields are ignored (the
//! exact line stays in the raw capture).

use serde::Deserialize;
use serde_json::Value;

/// One stdout line of `codex exec --json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type")]
pub enum ExecEvent {
    /// The thread (session) id: the resume identifier.
    #[serde(rename = "thread.started")]
    ThreadStarted {
        /// The thread id.
        #[serde(default)]
        thread_id: String,
    },
    /// A turn began.
    #[serde(rename = "turn.started")]
    TurnStarted,
    /// An item began (command execution, MCP call, todo list …).
    #[serde(rename = "item.started")]
    ItemStarted {
        /// The item.
        item: Item,
    },
    /// An item changed.
    #[serde(rename = "item.updated")]
    ItemUpdated {
        /// The item.
        item: Item,
    },
    /// An item completed (the authoritative item).
    #[serde(rename = "item.completed")]
    ItemCompleted {
        /// The item.
        item: Item,
    },
    /// The turn completed: the successful terminal event.
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        /// Cumulative usage of the thread.
        #[serde(default)]
        usage: Option<ExecUsage>,
    },
    /// The turn failed: the failure terminal event.
    #[serde(rename = "turn.failed")]
    TurnFailed {
        /// The error.
        #[serde(default)]
        error: Option<ErrorBody>,
    },
    /// A fatal stream error (comes before `turn.failed`).
    #[serde(rename = "error")]
    Error {
        /// The message.
        #[serde(default)]
        message: String,
    },
    /// Anything else.
    #[serde(other)]
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

/// A thread item: the common fields plus the type-specific ones.
#[derive(Debug, Clone, Deserialize)]
pub struct Item {
    /// A per-process counter (`item_0` …); not a stable identifier.
    #[serde(default)]
    pub id: String,
    /// What the item is.
    #[serde(flatten)]
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
