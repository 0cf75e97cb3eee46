//! Serde types of the stream-json protocol (Claude Code `-p --output-format
//! stream-json --verbose`, and CodeBuddy Code, which speaks the same family).
//!
//! Lenient by design: unknown line types, block types and SSE events decode
//! to an `Unknown`/`Other` variant, and unknown fields are ignored (the exact
//! line is always kept in the raw capture), so a newer CLI degrades to a
//! custom payload rather than a failure.

use serde::Deserialize;
use serde_json::Value;

use crate::tagged::tagged_enum;

tagged_enum! {
    /// One stdout line (deserialized tag first, see `crate::tagged`).
    #[derive(Debug, Clone)]
    pub enum Line {
        /// `system/*`: init, status, permission_denied, task and hook notes …
        "system" => System(SystemLine),
        /// One content block of an assistant API message.
        "assistant" => Assistant(AssistantLine),
        /// Tool results (and replayed user messages).
        "user" => User(UserLine),
        /// A raw Anthropic SSE event (`--include-partial-messages`).
        "stream_event" => StreamEvent(StreamEventLine),
        /// The terminal line of a turn.
        "result" => Result(ResultLine),
        /// A control request from the CLI (`can_use_tool` …).
        "control_request" => ControlRequest(ControlRequestLine),
        /// The CLI's reply to one of the host's control requests.
        "control_response" => ControlResponse(ControlResponseLine),
        /// The CLI withdrew one of its control requests.
        "control_cancel_request" => ControlCancelRequest(ControlCancelLine),
        /// Anything else (`rate_limit_event`, future types …).
        _ => Unknown,
    }
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

tagged_enum! {
    /// A content block (deserialized tag first, see `crate::tagged`).
    #[derive(Debug, Clone)]
    pub enum Block {
        /// Text.
        "text" => Text(TextBlock),
        /// Visible reasoning.
        "thinking" => Thinking(ThinkingBlock),
        /// Redacted reasoning.
        "redacted_thinking" => RedactedThinking,
        /// A tool call.
        "tool_use" => ToolUse(ToolUseBlock),
        /// A tool result.
        "tool_result" => ToolResult(ToolResultBlock),
        /// An image.
        "image" => Image(ImageBlock),
        /// Any other block type.
        _ => Other,
    }
}

/// A `text` block.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TextBlock {
    /// The text.
    pub text: String,
}

/// A `thinking` block: visible reasoning.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ThinkingBlock {
    /// The reasoning text.
    pub thinking: String,
}

/// A `tool_use` block: a tool call.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ToolUseBlock {
    /// The tool call id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its input.
    pub input: Value,
}

/// An `image` block: its `source` is `{type:"base64", media_type, data}`
/// or `{type:"url", url}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ImageBlock {
    /// Where the image is.
    pub source: Value,
}

/// A `tool_result` block.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ToolResultBlock {
    /// The tool call it answers.
    pub tool_use_id: String,
    /// A string or an array of content blocks.
    pub content: Value,
    /// True for an error result.
    pub is_error: bool,
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

tagged_enum! {
    /// A raw Anthropic streaming event (deserialized tag first, see
    /// `crate::tagged`).
    #[derive(Debug, Clone)]
    pub enum SseEvent {
        /// A message begins.
        "message_start" => MessageStart(MessageStart),
        /// A content block begins.
        "content_block_start" => ContentBlockStart(ContentBlockStart),
        /// A delta of a content block.
        "content_block_delta" => ContentBlockDelta(ContentBlockDelta),
        /// A content block ends.
        "content_block_stop" => ContentBlockStop(ContentBlockStop),
        /// Anything else (message_delta, message_stop, ping, error …).
        _ => Other,
    }
}

/// `message_start`.
#[derive(Debug, Clone, Deserialize)]
pub struct MessageStart {
    /// The message (id, model).
    pub message: ApiMessage,
}

/// `content_block_start`.
#[derive(Debug, Clone, Deserialize)]
pub struct ContentBlockStart {
    /// The block index.
    pub index: u32,
    /// The block.
    pub content_block: Block,
}

/// `content_block_delta`.
#[derive(Debug, Clone, Deserialize)]
pub struct ContentBlockDelta {
    /// The block index.
    pub index: u32,
    /// The delta.
    pub delta: Delta,
}

/// `content_block_stop`.
#[derive(Debug, Clone, Deserialize)]
pub struct ContentBlockStop {
    /// The block index.
    pub index: u32,
}

tagged_enum! {
    /// A content block delta (deserialized tag first, see `crate::tagged`).
    #[derive(Debug, Clone)]
    pub enum Delta {
        /// Text.
        "text_delta" => TextDelta(TextDelta),
        /// Reasoning text.
        "thinking_delta" => ThinkingDelta(ThinkingDelta),
        /// Tool input JSON.
        "input_json_delta" => InputJsonDelta(InputJsonDelta),
        /// Anything else (signature_delta …).
        _ => Other,
    }
}

/// `text_delta`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TextDelta {
    /// The text.
    pub text: String,
}

/// `thinking_delta`: reasoning text.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ThinkingDelta {
    /// The text.
    pub thinking: String,
}

/// `input_json_delta`: tool input JSON.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct InputJsonDelta {
    /// A fragment of the input JSON.
    pub partial_json: String,
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::tagged::assert_agree;

    #[test]
    fn a_delta_line_decodes_whatever_the_key_order() {
        for raw in [
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"hé\n"}},"session_id":"s"}"#,
            r#"{"session_id":"s","event":{"delta":{"text":"hé\n","type":"text_delta"},"index":2,"type":"content_block_delta"},"type":"stream_event"}"#,
        ] {
            let line: Line = serde_json::from_str(raw).unwrap();
            let Line::StreamEvent(e) = line else {
                panic!("{raw}")
            };
            let SseEvent::ContentBlockDelta(ContentBlockDelta {
                index: 2,
                delta: Delta::TextDelta(TextDelta { text }),
            }) = e.event
            else {
                panic!("{raw}")
            };
            assert_eq!(text, "hé\n");
        }
    }

    #[test]
    fn unknown_types_are_the_catch_all_at_every_level() {
        let line: Line = serde_json::from_str(r#"{"type":"rate_limit_event","x":[1]}"#).unwrap();
        assert!(matches!(line, Line::Unknown));
        let raw = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"x"}}}"#;
        let Line::StreamEvent(e) = serde_json::from_str(raw).unwrap() else {
            panic!()
        };
        assert!(matches!(
            e.event,
            SseEvent::ContentBlockDelta(ContentBlockDelta {
                delta: Delta::Other,
                ..
            })
        ));
        let raw = r#"{"type":"assistant","message":{"id":"m","content":[{"type":"server_tool_use"},{"type":"text","text":"t"}]}}"#;
        let Line::Assistant(a) = serde_json::from_str(raw).unwrap() else {
            panic!()
        };
        assert!(matches!(a.message.content[0], Block::Other));
        assert!(matches!(&a.message.content[1], Block::Text(t) if t.text == "t"));
    }

    #[test]
    fn malformed_lines_are_errors() {
        for raw in [
            r#"{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta"}}}"#,
            r#"{"type":"stream_event"}"#,
            r#"{"event":{}}"#,
            r#"{"type":"system","subtype":"init""#,
            r#"{"type":"unknown_thing","x":[}"#,
            r#"["system"]"#,
        ] {
            assert!(serde_json::from_str::<Line>(raw).is_err(), "{raw}");
        }
    }

    /// Every line type, fields before and after the tag, unknown and
    /// missing fields, unknown tags and malformed input: decoded tag first
    /// exactly as serde's `#[serde(tag = "type")]` derive of the same
    /// variants and structs decodes them.
    #[test]
    fn lines_agree_with_the_derived_form() {
        let cases = [
            r#"{"type":"system","subtype":"init","session_id":"s","model":"m","cwd":"/"}"#,
            r#"{"subtype":"status","status":"compacting","type":"system"}"#,
            r#"{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"t"},{"type":"thinking","thinking":"th"},{"type":"redacted_thinking","data":"x"},{"type":"tool_use","id":"c","name":"Bash","input":{"a":[1]}},{"type":"image"}]},"session_id":"s"}"#,
            r#"{"message":{"content":[{"text":"t","type":"text"},{"input":{},"name":"n","id":"c","type":"tool_use"}],"id":"m"},"parent_tool_use_id":"p","type":"assistant"}"#,
            r#"{"type":"assistant","message":{"id":"m","content":[{"type":"text"}]},"is_api_error_message":true}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c","content":[{"type":"text","text":"r"}],"is_error":true}]}}"#,
            r#"{"type":"user","message":{"content":"plain"}}"#,
            r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m","model":"x","content":[]}}}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"c","name":"n","input":{}}}}"#,
            r#"{"event":{"index":0,"delta":{"partial_json":"{\"a","type":"input_json_delta"},"type":"content_block_delta"},"type":"stream_event"}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"t"}}}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_stop","index":3}}"#,
            r#"{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"}}}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","usage":{"input_tokens":3},"total_cost_usd":0.5,"errors":["e"]}"#,
            r#"{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool"}}"#,
            r#"{"type":"control_response","response":{"subtype":"success"}}"#,
            r#"{"type":"control_cancel_request","request_id":"r"}"#,
            r#"{"type":"rate_limit_event","rate_limit_info":{}}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_stop"}}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_stop","index":"1"}}"#,
            r#"{"type":"control_request","request":{}}"#,
            r#"{"type":"result","subtype":7}"#,
            r#"{"type":"unknown","x":[1,2}"#,
            r#"{"subtype":"init"}"#,
        ];
        let ours = |c: &str| serde_json::from_str::<Line>(c).map(|l| format!("{l:?}"));
        assert_agree(&cases, ours, Line::derived_debug);
    }

    #[test]
    fn the_expecting_texts_are_serdes() {
        for (ours, derived) in [
            (
                serde_json::from_str::<Line>("7").unwrap_err(),
                Line::derived_debug("7").unwrap_err(),
            ),
            (
                serde_json::from_str::<Delta>("7").unwrap_err(),
                Delta::derived_debug("7").unwrap_err(),
            ),
        ] {
            assert_eq!(ours.to_string(), derived.to_string());
        }
    }
}
