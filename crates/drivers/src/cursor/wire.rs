//! Serde types of `agent -p --output-format stream-json` (protocols.md §3:
//! cursor.com/docs/cli/reference/output-format, plus the shapes third-party
//! parsers handle, vibe-kanban `crates/executors/src/executors/cursor.rs`).
//! Lenient: an unknown line type decodes to [`Line::Unknown`], unknown
//! fields are ignored (the exact line stays in the raw capture), and the
//! parts whose shape varies by tool stay JSON values.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A field that must never cost the line (see the Gemini wire types).
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// One stdout line.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    /// `system` (`subtype:"init"`: the session announcement).
    System {
        /// `init`.
        #[serde(default)]
        subtype: String,
        /// The session (chat) id.
        #[serde(default)]
        session_id: Option<String>,
        /// The model's display name.
        #[serde(default)]
        model: Option<String>,
        /// The working directory.
        #[serde(default)]
        cwd: Option<String>,
        /// `env`, `flag` or `login`.
        #[serde(default, rename = "apiKeySource")]
        api_key_source: Option<String>,
        /// `default` …
        #[serde(default, rename = "permissionMode")]
        permission_mode: Option<String>,
    },
    /// The replayed prompt.
    User {},
    /// A complete assistant message (the text between two tool calls).
    Assistant {
        /// The message.
        #[serde(default)]
        message: Message,
    },
    /// Reasoning text (`subtype` `delta` or `completed`; third-party parsers).
    Thinking {
        /// `delta` or `completed`.
        #[serde(default)]
        subtype: String,
        /// The text of a delta.
        #[serde(default)]
        text: String,
    },
    /// A tool call started or completed.
    ToolCall {
        /// `started` or `completed`.
        #[serde(default)]
        subtype: String,
        /// The call id.
        #[serde(default)]
        call_id: String,
        /// `{"<kind>ToolCall": {"args": …, "result": …}}`, or
        /// `{"function": {"name", "arguments"}}`.
        #[serde(default)]
        tool_call: Value,
    },
    /// The terminal event.
    Result {
        /// `success` (anything else is a failure).
        #[serde(default)]
        subtype: String,
        /// True for a failed run.
        #[serde(default)]
        is_error: bool,
        /// The whole assistant text (the concatenation of every message), or
        /// the error text of a failed run.
        #[serde(default, deserialize_with = "lenient")]
        result: Option<String>,
        /// The session (chat) id: the resume identifier.
        #[serde(default, deserialize_with = "lenient")]
        session_id: Option<String>,
        /// Token usage, when reported (not in the docs; some builds send it).
        #[serde(default, deserialize_with = "lenient")]
        usage: Option<ResultUsage>,
    },
    /// Anything else.
    #[serde(other)]
    Unknown,
}

/// `assistant.message`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Message {
    /// Content blocks (`{"type":"text","text":…}`; others are kept raw).
    pub content: Vec<Value>,
}

/// `result.usage` (camelCase, as third-party captures show it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ResultUsage {
    /// Input tokens.
    pub input_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
    /// Cache reads.
    pub cache_read_tokens: Option<u64>,
    /// Cache writes.
    pub cache_write_tokens: Option<u64>,
}
