//! Serde types of the stream-json protocol (Claude Code `-p --output-format
//! stream-json --verbose`, and CodeBuddy Code, which speaks the same family).
//!
//! Lenient by design: unknown line types, block types and SSE events decode
//! to an `Unknown`/`Other` variant, and unknown fields are ignored (the exact
//! line is always kept in the raw capture), so a newer CLI degrades to a
//! custom payload rather than a failure.

use serde::Deserialize;
use serde_json::Value;

/// One stdout line (deserialized tag first, see `wire_de.rs`).
#[derive(Debug, Clone)]
pub enum Line {
    /// `system/*`: init, status, permission_denied, task and hook notes …
    System(SystemLine),
    /// One content block of an assistant API message.
    Assistant(AssistantLine),
    /// Tool results (and replayed user messages).
    User(UserLine),
    /// A raw Anthropic SSE event (`--include-partial-messages`).
    StreamEvent(StreamEventLine),
    /// The terminal line of a turn.
    Result(ResultLine),
    /// A control request from the CLI (`can_use_tool` …).
    ControlRequest(ControlRequestLine),
    /// The CLI's reply to one of the host's control requests.
    ControlResponse(ControlResponseLine),
    /// The CLI withdrew one of its control requests.
    ControlCancelRequest(ControlCancelLine),
    /// Anything else (`rate_limit_event`, future types …).
    Unknown,
}

/// A `system` line.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SystemLine {
    /// `init`, `status`, `permission_denied`, …
    pub subtype: String,
    /// The session id.
    pub session_id: Option<String>,
    /// The model (init).
    pub model: Option<String>,
    /// The working directory (init).
    pub cwd: Option<String>,
    /// The tool (permission_denied).
    pub tool_name: Option<String>,
    /// The tool call (permission_denied).
    pub tool_use_id: Option<String>,
    /// The message (permission_denied).
    pub message: Option<String>,
    /// The status (status).
    pub status: Option<String>,
}

/// An `assistant` line.
#[derive(Debug, Clone, Deserialize)]
pub struct AssistantLine {
    /// The API message (one content block per line).
    pub message: ApiMessage,
    /// Set inside sub-agents.
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
    /// The session id.
    #[serde(default)]
    pub session_id: Option<String>,
    /// A synthetic message that reports an API error.
    #[serde(default)]
    pub is_api_error_message: bool,
}

/// An Anthropic API message.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ApiMessage {
    /// The API message id.
    pub id: String,
    /// The model.
    pub model: Option<String>,
    /// The content blocks.
    pub content: Vec<Block>,
}

/// A content block (deserialized tag first, see `wire_de.rs`).
#[derive(Debug, Clone)]
pub enum Block {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// Visible reasoning.
    Thinking {
        /// The reasoning text.
        thinking: String,
    },
    /// Redacted reasoning.
    RedactedThinking {},
    /// A tool call.
    ToolUse {
        /// The tool call id.
        id: String,
        /// The tool.
        name: String,
        /// Its input.
        input: Value,
    },
    /// A tool result.
    ToolResult {
        /// The tool call it answers.
        tool_use_id: String,
        /// A string or an array of content blocks.
        content: Value,
        /// True for an error result.
        is_error: bool,
    },
    /// Any other block type.
    Other,
}

/// A `user` line.
#[derive(Debug, Clone, Deserialize)]
pub struct UserLine {
    /// The user message.
    pub message: UserMessage,
    /// Set inside sub-agents.
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
}

/// A user message: a string or content blocks.
#[derive(Debug, Clone, Deserialize)]
pub struct UserMessage {
    /// The content.
    #[serde(default)]
    pub content: UserContent,
}

/// User content.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    /// Plain text.
    Text(String),
    /// Content blocks.
    Blocks(Vec<Block>),
}

impl Default for UserContent {
    fn default() -> Self {
        UserContent::Blocks(Vec::new())
    }
}

/// A `stream_event` line.
#[derive(Debug, Clone, Deserialize)]
pub struct StreamEventLine {
    /// The SSE event.
    pub event: SseEvent,
    /// Set inside sub-agents.
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
}

/// A raw Anthropic streaming event (deserialized tag first, see `wire_de.rs`).
#[derive(Debug, Clone)]
pub enum SseEvent {
    /// A message begins.
    MessageStart {
        /// The message (id, model).
        message: ApiMessage,
    },
    /// A content block begins.
    ContentBlockStart {
        /// The block index.
        index: u32,
        /// The block.
        content_block: Block,
    },
    /// A delta of a content block.
    ContentBlockDelta {
        /// The block index.
        index: u32,
        /// The delta.
        delta: Delta,
    },
    /// A content block ends.
    ContentBlockStop {
        /// The block index.
        index: u32,
    },
    /// Anything else (message_delta, message_stop, ping, error …).
    Other,
}

/// A content block delta (deserialized tag first, see `wire_de.rs`).
#[derive(Debug, Clone)]
pub enum Delta {
    /// Text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// Reasoning text.
    ThinkingDelta {
        /// The text.
        thinking: String,
    },
    /// Tool input JSON.
    InputJsonDelta {
        /// A fragment of the input JSON.
        partial_json: String,
    },
    /// Anything else (signature_delta …).
    Other,
}

/// The `result` line.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ResultLine {
    /// `success`, `error_max_turns`, `error_during_execution`, …
    pub subtype: String,
    /// True when the turn failed (even with subtype `success`).
    pub is_error: bool,
    /// The final text, or the error text.
    pub result: Option<String>,
    /// The session id: the resume identifier of a successful turn.
    pub session_id: Option<String>,
    /// Token usage of the run.
    pub usage: Option<ResultUsage>,
    /// Cost in US dollars.
    pub total_cost_usd: Option<f64>,
    /// Error strings.
    pub errors: Vec<String>,
    /// The HTTP status of an API error.
    pub api_error_status: Option<u16>,
    /// The structured output (`--json-schema`).
    pub structured_output: Option<Value>,
    /// Why the turn ended (`completed`, `max_turns`, `api_error` …).
    pub terminal_reason: Option<String>,
}

/// Usage on the result line.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ResultUsage {
    /// Input tokens.
    pub input_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
    /// Tokens read from the prompt cache.
    pub cache_read_input_tokens: Option<u64>,
    /// Tokens written to the prompt cache.
    pub cache_creation_input_tokens: Option<u64>,
}

/// A control request from the CLI.
#[derive(Debug, Clone, Deserialize)]
pub struct ControlRequestLine {
    /// The id to answer with.
    pub request_id: String,
    /// The request (`subtype`, …).
    pub request: Value,
}

/// A control response from the CLI.
#[derive(Debug, Clone, Deserialize)]
pub struct ControlResponseLine {
    /// The response envelope.
    pub response: Value,
}

/// A withdrawn control request.
#[derive(Debug, Clone, Deserialize)]
pub struct ControlCancelLine {
    /// The withdrawn request.
    pub request_id: String,
}
