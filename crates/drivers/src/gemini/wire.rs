//! Serde types of `gemini -p … --output-format stream-json` (protocols.md
//! §5; Gemini CLI 0.61 `packages/core/src/output/stream-json-formatter.ts`
//! and `nonInteractiveCli.ts`), lenient: an unknown event type decodes to
//! [`Event::Unknown`], unknown fields are ignored (the exact line stays in
//! the raw capture), missing fields take their defaults.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A field that must never cost the line: a value of the wrong shape is
/// `None` rather than a decoding error (the terminal line must be
/// recognized even when its details are odd).
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// One stdout line.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The session announcement (first line): the resume identifier.
    Init {
        /// The session id (`--resume <id>` continues it).
        #[serde(default)]
        session_id: String,
        /// The model in use.
        #[serde(default)]
        model: Option<String>,
    },
    /// A message: the replayed user prompt, or an assistant text chunk.
    Message {
        /// `user` or `assistant`.
        #[serde(default)]
        role: String,
        /// The text.
        #[serde(default)]
        content: String,
        /// True for an assistant chunk to be concatenated with the next.
        #[serde(default)]
        delta: bool,
    },
    /// The model called a tool (complete arguments).
    ToolUse {
        /// The tool's name (`read_file`, `run_shell_command` …).
        #[serde(default)]
        tool_name: String,
        /// The call id, unique within the session.
        #[serde(default)]
        tool_id: String,
        /// The arguments.
        #[serde(default)]
        parameters: Value,
    },
    /// A tool finished.
    ToolResult {
        /// The call id.
        #[serde(default)]
        tool_id: String,
        /// `success` or `error`.
        #[serde(default)]
        status: String,
        /// The display output (absent for some tools).
        #[serde(default)]
        output: Option<String>,
        /// The error, when `status` is `error`.
        #[serde(default, deserialize_with = "lenient")]
        error: Option<ErrorBody>,
    },
    /// A warning or error that does not end the run by itself (loop
    /// detected, blocked execution, an invalid model stream before an error
    /// `result`).
    Error {
        /// `warning` or `error`.
        #[serde(default)]
        severity: String,
        /// The text.
        #[serde(default)]
        message: String,
    },
    /// The terminal event.
    Result {
        /// `success` or `error`.
        #[serde(default)]
        status: String,
        /// The error (absent after an invalid stream, whose message came in
        /// an `error` event).
        #[serde(default, deserialize_with = "lenient")]
        error: Option<ErrorBody>,
        /// Token accounting of this invocation.
        #[serde(default, deserialize_with = "lenient")]
        stats: Option<Stats>,
        /// The session, when the line names one (0.61 does not; `init`
        /// does).
        #[serde(default, deserialize_with = "lenient")]
        session_id: Option<String>,
    },
    /// Anything else.
    #[serde(other)]
    Unknown,
}

/// `{type, message}` of a failed tool or run.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ErrorBody {
    /// The error class (`unknown`, `file_not_found`, `FatalToolExecutionError` …).
    #[serde(rename = "type")]
    pub kind: String,
    /// The message. API errors read `[API Error: …]`, often wrapping the
    /// provider's JSON error document.
    pub message: String,
}

/// `result.stats`: this invocation's totals over every model it called
/// (not cumulative across a resumed session).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Stats {
    /// Prompt tokens (cached ones included).
    pub input_tokens: u64,
    /// Candidate (output) tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the cache.
    pub cached: u64,
    /// All tokens.
    pub total_tokens: u64,
    /// Tool calls made.
    pub tool_calls: u64,
}
