//! The Messages stream decoder: named SSE events in, [`LlmStreamEvent`]s
//! out.
//!
//! Keyed on the SSE `event:` name (the JSON `type` when a frame has none):
//! `message_start` (id, model, input usage), `content_block_start` /
//! `_delta` / `_stop` per block index, `message_delta` (stop reason, output
//! usage), `message_stop` (tool calls, then `Done`), `ping` (ignored), and
//! `error` (a terminal `Error` keeping `error.type` and its status).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::accumulator::ToolCallAccumulator;
use crate::error::LlmStreamError;
use crate::event::{HostedToolCall, HostedToolCallStatus, LlmCompletionMetadata, LlmStreamEvent};
use crate::http::{WireDecoder, error_fields, error_status, unparseable};
use crate::message::ToolCall;
use crate::reasoning::{ReasoningContentPart, ReasoningText};
use crate::sse::SseItem;

use super::request::PROVIDER;

/// One open content block.
#[derive(Debug)]
enum Block {
    Text,
    Thinking {
        text: String,
        signature: Option<String>,
    },
    Redacted {
        data: String,
    },
    /// A client tool call; `key` names it in the accumulator.
    ToolUse {
        key: String,
        /// A non-empty `input` sent whole in `content_block_start`.
        initial: Option<Value>,
        /// `input_json_delta`s arrived.
        streamed: bool,
    },
    /// A tool Anthropic runs itself (`server_tool_use`: web search …).
    ServerToolUse,
    /// A block type this decoder does not know.
    Other,
}

/// Usage as Anthropic reports it (disjoint buckets).
#[derive(Debug, Default)]
struct Usage {
    input: Option<u32>,
    cache_read: Option<u32>,
    cache_creation: Option<u32>,
    output: Option<u32>,
}

impl Usage {
    /// Takes every count `usage` carries (later frames are cumulative).
    fn apply(&mut self, usage: Option<&Value>) {
        let Some(usage) = usage else { return };
        let count = |key: &str| {
            usage
                .get(key)
                .and_then(Value::as_u64)
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
        };
        self.input = count("input_tokens").or(self.input);
        self.cache_read = count("cache_read_input_tokens").or(self.cache_read);
        self.cache_creation = count("cache_creation_input_tokens").or(self.cache_creation);
        self.output = count("output_tokens").or(self.output);
    }

    /// Input, both cache buckets and output; `None` unless input and output
    /// are known.
    fn total(&self) -> Option<u32> {
        let (input, output) = (self.input?, self.output?);
        Some(
            input
                .saturating_add(self.cache_read.unwrap_or(0))
                .saturating_add(self.cache_creation.unwrap_or(0))
                .saturating_add(output),
        )
    }
}

/// The decoder state of one stream.
#[derive(Debug)]
pub(crate) struct AnthropicDecoder {
    /// The requested model.
    model: String,
    blocks: BTreeMap<u64, Block>,
    tools: ToolCallAccumulator,
    /// The latest full set of finished tool calls, emitted before `Done`.
    calls: Option<Vec<ToolCall>>,
    usage: Usage,
    response_id: Option<String>,
    response_model: Option<String>,
    stop_reason: Option<String>,
    /// Server tool id → tool name.
    hosted_names: HashMap<String, String>,
    hosted: BTreeMap<String, u32>,
    /// A terminal event was emitted: nothing more is.
    terminated: bool,
}

impl AnthropicDecoder {
    /// A decoder for a call that requested `model`.
    pub(crate) fn new(model: String) -> Self {
        AnthropicDecoder {
            model,
            blocks: BTreeMap::new(),
            tools: ToolCallAccumulator::new(),
            calls: None,
            usage: Usage::default(),
            response_id: None,
            response_model: None,
            stop_reason: None,
            hosted_names: HashMap::new(),
            hosted: BTreeMap::new(),
            terminated: false,
        }
    }

    fn frame(&mut self, event: Option<&str>, data: &str, out: &mut Vec<LlmStreamEvent>) {
        if event == Some("ping") {
            return;
        }
        if data.trim().is_empty() {
            tracing::debug!(event, "Anthropic frame without data ignored");
            return;
        }
        let value: Value = match serde_json::from_str(data) {
            Ok(value) => value,
            Err(error) => {
                self.terminate(unparseable("Anthropic stream frame", data, &error), out);
                return;
            }
        };
        let name = event
            .filter(|name| !name.is_empty() && *name != "message")
            .or_else(|| value.get("type").and_then(Value::as_str))
            .unwrap_or("")
            .to_owned();
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        match name.as_str() {
            "message_start" => {
                let message = value.get("message").unwrap_or(&Value::Null);
                self.response_id = text(message, "id").or(self.response_id.take());
                self.response_model = text(message, "model").or(self.response_model.take());
                self.usage.apply(message.get("usage"));
            }
            "content_block_start" => {
                let block = value.get("content_block").unwrap_or(&Value::Null);
                self.block_start(index, block, out);
            }
            "content_block_delta" => {
                let delta = value.get("delta").unwrap_or(&Value::Null);
                self.block_delta(index, delta, out);
            }
            "content_block_stop" => self.block_stop(index, out),
            "message_delta" => {
                if let Some(reason) = value
                    .get("delta")
                    .and_then(|delta| delta.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop_reason = Some(reason.to_owned());
                }
                self.usage.apply(value.get("usage"));
            }
            "message_stop" => self.message_stop(out),
            "ping" => {}
            "error" => self.terminate(LlmStreamEvent::Error(stream_error(&value)), out),
            _ if carries_error(&value) => {
                self.terminate(LlmStreamEvent::Error(stream_error(&value)), out);
            }
            other => tracing::debug!(event = other, "unknown Anthropic stream event ignored"),
        }
    }

    fn block_start(&mut self, index: u64, block: &Value, out: &mut Vec<LlmStreamEvent>) {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let open = match kind {
            "text" => {
                push_text(out, block.get("text").and_then(Value::as_str).unwrap_or(""));
                Block::Text
            }
            "thinking" => {
                let text = block.get("thinking").and_then(Value::as_str).unwrap_or("");
                push_reasoning(out, text);
                Block::Thinking {
                    text: text.to_owned(),
                    signature: nonempty(block, "signature"),
                }
            }
            "redacted_thinking" => Block::Redacted {
                data: block
                    .get("data")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            },
            "tool_use" => {
                let key = index.to_string();
                let id = block.get("id").and_then(Value::as_str);
                let name = block.get("name").and_then(Value::as_str);
                out.push(LlmStreamEvent::ToolCallDelta(
                    self.tools.delta(&key, id, name, ""),
                ));
                let initial = block
                    .get("input")
                    .filter(|input| input.as_object().is_some_and(|map| !map.is_empty()))
                    .cloned();
                Block::ToolUse {
                    key,
                    initial,
                    streamed: false,
                }
            }
            "server_tool_use" => {
                let id = block
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or(kind)
                    .to_owned();
                *self.hosted.entry(name.clone()).or_insert(0) += 1;
                self.hosted_names.insert(id.clone(), name.clone());
                out.push(LlmStreamEvent::HostedToolCall(HostedToolCall::new(
                    id,
                    name,
                    HostedToolCallStatus::InProgress,
                    None,
                )));
                Block::ServerToolUse
            }
            _ if kind.ends_with("_tool_result") && block.get("tool_use_id").is_some() => {
                let id = block
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let tool = self
                    .hosted_names
                    .get(&id)
                    .cloned()
                    .unwrap_or_else(|| kind.to_owned());
                let failed = block
                    .get("content")
                    .and_then(|content| content.get("type"))
                    .and_then(Value::as_str)
                    .is_some_and(|kind| kind.ends_with("_error"));
                let status = if failed {
                    HostedToolCallStatus::Failed
                } else {
                    HostedToolCallStatus::Completed
                };
                out.push(LlmStreamEvent::HostedToolCall(HostedToolCall::new(
                    id, tool, status, None,
                )));
                Block::Other
            }
            other => {
                tracing::debug!(block = other, "unknown Anthropic content block ignored");
                Block::Other
            }
        };
        self.blocks.insert(index, open);
    }

    fn block_delta(&mut self, index: u64, delta: &Value, out: &mut Vec<LlmStreamEvent>) {
        let kind = delta.get("type").and_then(Value::as_str).unwrap_or("");
        let piece = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or("");
        match kind {
            "text_delta" => push_text(out, piece("text")),
            "thinking_delta" => {
                let text = piece("thinking");
                match self.blocks.entry(index).or_insert_with(empty_thinking) {
                    Block::Thinking { text: record, .. } => record.push_str(text),
                    _ => tracing::warn!(
                        index,
                        "thinking_delta on a non-thinking block: not recorded"
                    ),
                }
                push_reasoning(out, text);
            }
            "signature_delta" => match self.blocks.entry(index).or_insert_with(empty_thinking) {
                Block::Thinking { signature, .. } => {
                    *signature = nonempty(delta, "signature").or(signature.take());
                }
                _ => tracing::warn!(index, "signature_delta on a non-thinking block ignored"),
            },
            "input_json_delta" => {
                let json = piece("partial_json");
                let block = self.blocks.entry(index).or_insert_with(|| Block::ToolUse {
                    key: index.to_string(),
                    initial: None,
                    streamed: false,
                });
                match block {
                    Block::ToolUse { key, streamed, .. } => {
                        *streamed = true;
                        if !json.is_empty() {
                            let delta = self.tools.delta(key, None, None, json);
                            out.push(LlmStreamEvent::ToolCallDelta(delta));
                        }
                    }
                    // The input of a hosted tool: not for the host to run.
                    Block::ServerToolUse => {}
                    _ => tracing::warn!(index, "input_json_delta on a non-tool block ignored"),
                }
            }
            // Citations annotate text already streamed.
            "citations_delta" => {}
            other => tracing::debug!(delta = other, "unknown Anthropic content delta ignored"),
        }
    }

    fn block_stop(&mut self, index: u64, out: &mut Vec<LlmStreamEvent>) {
        let Some(block) = self.blocks.remove(&index) else {
            tracing::debug!(index, "content_block_stop for a block never started");
            return;
        };
        match block {
            Block::ToolUse {
                key,
                initial,
                streamed,
            } => {
                match initial {
                    Some(input) if !streamed => {
                        self.tools
                            .complete_arguments(&key, None, None, &input.to_string());
                    }
                    _ => self.tools.finish(&key),
                }
                // Convert once no other call is open (an open one would be
                // judged unfinished).
                let other_open = self
                    .blocks
                    .values()
                    .any(|b| matches!(b, Block::ToolUse { .. }));
                if !other_open && let Some(calls) = self.tools.take() {
                    self.calls = Some(calls);
                }
            }
            other => close_reasoning(other, out),
        }
    }

    fn message_stop(&mut self, out: &mut Vec<LlmStreamEvent>) {
        // Blocks still open: reasoning keeps its text; tool calls stay
        // unfinished.
        for block in std::mem::take(&mut self.blocks).into_values() {
            if !matches!(block, Block::ToolUse { .. }) {
                close_reasoning(block, out);
            }
        }
        let finish_reason = self.stop_reason.as_deref().map(normalize_stop_reason);
        if matches!(finish_reason.as_deref(), Some("length" | "content_filter")) {
            self.tools.discard_pending();
        } else if let Some(calls) = self.tools.take() {
            self.calls = Some(calls);
        }
        if let Some(calls) = self.calls.take() {
            out.push(LlmStreamEvent::ToolCalls(calls));
        }
        let metadata = LlmCompletionMetadata {
            prompt_tokens: self.usage.input,
            completion_tokens: self.usage.output,
            cache_read_tokens: self.usage.cache_read,
            cache_creation_tokens: self.usage.cache_creation,
            total_tokens: self.usage.total(),
            model: (!self.model.is_empty()).then(|| self.model.clone()),
            response_model: self.response_model.take(),
            response_id: self.response_id.take(),
            finish_reason,
            provider_finish_reason: self.stop_reason.take(),
            hosted_tool_calls: std::mem::take(&mut self.hosted),
            tool_calls_dropped: self.tools.dropped(),
            ..LlmCompletionMetadata::default()
        };
        self.terminate(LlmStreamEvent::done(metadata), out);
    }

    fn stray(&mut self, line: &str, out: &mut Vec<LlmStreamEvent>) {
        match serde_json::from_str::<Value>(line.trim()) {
            Ok(value) if carries_error(&value) => {
                self.terminate(LlmStreamEvent::Error(stream_error(&value)), out);
            }
            _ => tracing::debug!(
                bytes = line.len(),
                "non-SSE line in the Anthropic stream ignored"
            ),
        }
    }

    fn terminate(&mut self, event: LlmStreamEvent, out: &mut Vec<LlmStreamEvent>) {
        out.push(event);
        self.terminated = true;
    }
}

impl WireDecoder for AnthropicDecoder {
    fn item(&mut self, item: SseItem, out: &mut Vec<LlmStreamEvent>) {
        if self.terminated {
            return;
        }
        match item {
            SseItem::Frame(frame) => self.frame(frame.event.as_deref(), &frame.data, out),
            SseItem::Stray(line) => self.stray(&line, out),
        }
    }

    fn finish(&mut self, _out: &mut Vec<LlmStreamEvent>) {
        if !self.terminated {
            tracing::debug!("Anthropic stream ended without message_stop: the turn is incomplete");
        }
    }
}

fn empty_thinking() -> Block {
    Block::Thinking {
        text: String::new(),
        signature: None,
    }
}

/// The `ReasoningItem` of a closed thinking or redacted block.
fn close_reasoning(block: Block, out: &mut Vec<LlmStreamEvent>) {
    match block {
        Block::Thinking { text, signature } => {
            let mut item =
                ReasoningContentPart::opaque(PROVIDER).with_text(ReasoningText::Plain { text });
            match signature {
                Some(signature) => item = item.with_signature(signature),
                None => tracing::warn!(
                    "Anthropic thinking block without a signature: kept as a record, cannot be replayed"
                ),
            }
            out.push(LlmStreamEvent::ReasoningItem(item));
        }
        Block::Redacted { data } => {
            if data.is_empty() {
                tracing::warn!(
                    "Anthropic redacted_thinking block without data: cannot be replayed"
                );
            }
            let item = ReasoningContentPart::opaque(PROVIDER)
                .with_text(ReasoningText::Redacted)
                .with_encrypted(data);
            out.push(LlmStreamEvent::ReasoningItem(item));
        }
        Block::Text | Block::ToolUse { .. } | Block::ServerToolUse | Block::Other => {}
    }
}

fn push_text(out: &mut Vec<LlmStreamEvent>, text: &str) {
    if !text.is_empty() {
        out.push(LlmStreamEvent::TextDelta(text.to_owned()));
    }
}

fn push_reasoning(out: &mut Vec<LlmStreamEvent>, text: &str) {
    if !text.is_empty() {
        out.push(LlmStreamEvent::ReasoningDelta {
            delta: text.to_owned(),
            summary: false,
        });
    }
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn nonempty(value: &Value, key: &str) -> Option<String> {
    text(value, key).filter(|s| !s.is_empty())
}

/// `stop_reason` in the Chat Completions words; unknown reasons as sent.
pub(super) fn normalize_stop_reason(reason: &str) -> String {
    match reason {
        "end_turn" | "stop_sequence" | "pause_turn" => "stop",
        "max_tokens" | "model_context_window_exceeded" => "length",
        "tool_use" => "tool_calls",
        "refusal" => "content_filter",
        other => other,
    }
    .to_owned()
}

/// The HTTP status Anthropic documents for an error type.
pub(super) fn status_for_error_type(kind: &str) -> Option<u16> {
    Some(match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => return None,
    })
}

/// True when a frame carries an `error` (an object or a message).
fn carries_error(value: &Value) -> bool {
    value
        .get("error")
        .is_some_and(|error| error.is_object() || error.is_string())
}

/// An `error` frame: `error.type` is the code; the status is one the frame
/// states, else the one Anthropic documents for the type.
fn stream_error(value: &Value) -> LlmStreamError {
    let error = value.get("error").unwrap_or(value);
    let (fallback_code, fallback_message) = error_fields(value);
    let code = nonempty(error, "type").or(fallback_code);
    let status = error_status(value).or_else(|| code.as_deref().and_then(status_for_error_type));
    let message =
        fallback_message.unwrap_or_else(|| "Anthropic stream error without a message".to_owned());
    LlmStreamError::provider(code, status, message)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::sse::SseFrame;

    fn frame(event: &str, data: Value) -> SseItem {
        SseItem::Frame(SseFrame {
            event: Some(event.to_owned()),
            data: data.to_string(),
        })
    }

    fn decode(items: Vec<SseItem>) -> Vec<LlmStreamEvent> {
        let mut decoder = AnthropicDecoder::new("claude-test".into());
        let mut out = Vec::new();
        for item in items {
            decoder.item(item, &mut out);
        }
        decoder.finish(&mut out);
        out
    }

    fn start() -> SseItem {
        frame(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": "msg_1", "model": "claude-served", "usage": {
                    "input_tokens": 100, "cache_read_input_tokens": 20,
                    "cache_creation_input_tokens": 5, "output_tokens": 1,
                }
            }}),
        )
    }

    fn block_start(index: u64, block: Value) -> SseItem {
        frame(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        )
    }

    fn delta(index: u64, delta: Value) -> SseItem {
        frame(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    }

    fn text(index: u64, text: &str) -> SseItem {
        delta(index, json!({"type": "text_delta", "text": text}))
    }

    fn json_piece(index: u64, piece: &str) -> SseItem {
        delta(
            index,
            json!({"type": "input_json_delta", "partial_json": piece}),
        )
    }

    fn tool_start(index: u64, id: &str, name: &str) -> SseItem {
        block_start(
            index,
            json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
        )
    }

    fn stop(index: u64) -> SseItem {
        frame(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        )
    }

    fn message_delta(reason: Value) -> SseItem {
        frame(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 10}}),
        )
    }

    fn message_stop() -> SseItem {
        frame("message_stop", json!({"type": "message_stop"}))
    }

    fn done(events: &[LlmStreamEvent]) -> &LlmCompletionMetadata {
        match events.last() {
            Some(LlmStreamEvent::Done(metadata)) => metadata,
            other => panic!("expected Done last, got {other:?}"),
        }
    }

    fn tool_calls(events: &[LlmStreamEvent]) -> Vec<Vec<ToolCall>> {
        events
            .iter()
            .filter_map(|event| match event {
                LlmStreamEvent::ToolCalls(calls) => Some(calls.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn text_turn_with_usage_and_metadata() {
        let events = decode(vec![
            start(),
            frame("ping", json!({"type": "ping"})),
            block_start(0, json!({"type": "text", "text": ""})),
            text(0, "Hel"),
            text(0, ""),
            text(0, "lo"),
            stop(0),
            message_delta(json!("end_turn")),
            message_stop(),
        ]);
        assert_eq!(events[0], LlmStreamEvent::TextDelta("Hel".into()));
        assert_eq!(events[1], LlmStreamEvent::TextDelta("lo".into()));
        assert_eq!(
            events.len(),
            3,
            "no empty TextDelta, nothing for ping: {events:?}"
        );
        let metadata = done(&events);
        assert_eq!(metadata.prompt_tokens, Some(100));
        assert_eq!(metadata.cache_read_tokens, Some(20));
        assert_eq!(metadata.cache_creation_tokens, Some(5));
        assert_eq!(metadata.completion_tokens, Some(10));
        assert_eq!(metadata.total_tokens, Some(135));
        assert_eq!(metadata.reasoning_tokens, None);
        assert_eq!(metadata.model.as_deref(), Some("claude-test"));
        assert_eq!(metadata.response_model.as_deref(), Some("claude-served"));
        assert_eq!(metadata.response_id.as_deref(), Some("msg_1"));
        assert_eq!(metadata.finish_reason.as_deref(), Some("stop"));
        assert_eq!(metadata.provider_finish_reason.as_deref(), Some("end_turn"));
    }

    #[test]
    fn event_name_falls_back_to_json_type() {
        let bare = |data: Value| {
            SseItem::Frame(SseFrame {
                event: None,
                data: data.to_string(),
            })
        };
        let events = decode(vec![
            bare(
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
            ),
            bare(json!({"type": "message_stop"})),
        ]);
        assert_eq!(events[0], LlmStreamEvent::TextDelta("hi".into()));
        assert_eq!(done(&events).finish_reason, None);
    }

    #[test]
    fn malformed_frame_is_an_error_and_ends_the_stream() {
        let events = decode(vec![
            start(),
            SseItem::Frame(SseFrame {
                event: Some("content_block_delta".into()),
                data: "{\"type\":\"content_block_delta\",".into(),
            }),
            text(0, "late"),
            message_stop(),
        ]);
        assert_eq!(events.len(), 1, "{events:?}");
        let LlmStreamEvent::Error(error) = &events[0] else {
            panic!("expected Error, got {events:?}");
        };
        assert_eq!(error.code.as_deref(), Some("malformed_response"));
        assert_eq!(error.status, None);
    }

    #[test]
    fn empty_frames_and_unknown_events_are_ignored() {
        let events = decode(vec![
            SseItem::Frame(SseFrame {
                event: Some("ping".into()),
                data: String::new(),
            }),
            SseItem::Frame(SseFrame {
                event: None,
                data: " ".into(),
            }),
            SseItem::Stray("not sse".into()),
            frame("message_future", json!({"type": "message_future", "x": 1})),
            block_start(0, json!({"type": "future_block"})),
            delta(0, json!({"type": "future_delta", "x": 1})),
            stop(0),
            message_stop(),
        ]);
        assert_eq!(events.len(), 1, "{events:?}");
        assert!(matches!(events[0], LlmStreamEvent::Done(_)));
    }

    #[test]
    fn thinking_blocks_become_items_with_their_signature() {
        let events = decode(vec![
            start(),
            block_start(
                0,
                json!({"type": "thinking", "thinking": "", "signature": ""}),
            ),
            delta(0, json!({"type": "thinking_delta", "thinking": "Let me "})),
            delta(0, json!({"type": "thinking_delta", "thinking": "think."})),
            delta(0, json!({"type": "signature_delta", "signature": "sig-1"})),
            stop(0),
            block_start(1, json!({"type": "redacted_thinking", "data": "opaque"})),
            stop(1),
            block_start(2, json!({"type": "thinking", "thinking": "unsigned"})),
            stop(2),
            message_delta(json!("end_turn")),
            message_stop(),
        ]);
        let reasoning = |delta: &str| LlmStreamEvent::ReasoningDelta {
            delta: delta.into(),
            summary: false,
        };
        assert_eq!(events[0], reasoning("Let me "));
        assert_eq!(events[1], reasoning("think."));
        assert_eq!(
            events[2],
            LlmStreamEvent::ReasoningItem(
                ReasoningContentPart::opaque("anthropic")
                    .with_text(ReasoningText::Plain {
                        text: "Let me think.".into()
                    })
                    .with_signature("sig-1")
            )
        );
        assert_eq!(
            events[3],
            LlmStreamEvent::ReasoningItem(
                ReasoningContentPart::opaque("anthropic")
                    .with_text(ReasoningText::Redacted)
                    .with_encrypted("opaque")
            )
        );
        // The start frame's text streams too; no signature: still the record.
        assert_eq!(events[4], reasoning("unsigned"));
        assert_eq!(
            events[5],
            LlmStreamEvent::ReasoningItem(ReasoningContentPart::opaque("anthropic").with_text(
                ReasoningText::Plain {
                    text: "unsigned".into()
                }
            ))
        );
        assert!(matches!(events[6], LlmStreamEvent::Done(_)));
    }

    #[test]
    fn tool_calls_stream_deltas_then_the_full_set_before_done() {
        let events = decode(vec![
            start(),
            tool_start(0, "toolu_a", "get_weather"),
            json_piece(0, ""),
            json_piece(0, "{\"city\":"),
            json_piece(0, "\"Paris\"}"),
            stop(0),
            tool_start(1, "toolu_b", "get_time"),
            stop(1),
            message_delta(json!("tool_use")),
            message_stop(),
        ]);
        let deltas: Vec<_> = events
            .iter()
            .filter_map(|event| match event {
                LlmStreamEvent::ToolCallDelta(delta) => Some((
                    delta.index,
                    delta.id.clone().unwrap(),
                    delta.arguments.clone(),
                )),
                _ => None,
            })
            .collect();
        assert_eq!(
            deltas,
            vec![
                (0, "toolu_a".into(), String::new()),
                (0, "toolu_a".into(), "{\"city\":".into()),
                (0, "toolu_a".into(), "\"Paris\"}".into()),
                (1, "toolu_b".into(), String::new()),
            ]
        );
        assert_eq!(
            tool_calls(&events),
            vec![vec![
                ToolCall::new("toolu_a", "get_weather", json!({"city": "Paris"})),
                ToolCall::new("toolu_b", "get_time", json!({})),
            ]]
        );
        let metadata = done(&events);
        assert_eq!(metadata.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(metadata.tool_calls_dropped, 0);
    }

    #[test]
    fn whole_input_in_the_start_frame_is_used() {
        let events = decode(vec![
            block_start(
                0,
                json!({"type": "tool_use", "id": "t", "name": "n", "input": {"a": 1}}),
            ),
            stop(0),
            message_delta(json!("tool_use")),
            message_stop(),
        ]);
        assert_eq!(
            tool_calls(&events),
            vec![vec![ToolCall::new("t", "n", json!({"a": 1}))]]
        );
    }

    #[test]
    fn finished_call_with_invalid_json_degrades_to_empty_object() {
        let events = decode(vec![
            tool_start(0, "toolu_a", "broken"),
            json_piece(0, "{\"x\": tru"),
            stop(0),
            message_delta(json!("tool_use")),
            message_stop(),
        ]);
        assert_eq!(
            tool_calls(&events),
            vec![vec![ToolCall::new("toolu_a", "broken", json!({}))]]
        );
        assert_eq!(done(&events).tool_calls_dropped, 0);
    }

    #[test]
    fn unfinished_call_with_invalid_json_is_dropped_and_counted() {
        let events = decode(vec![
            tool_start(0, "toolu_a", "ok"),
            json_piece(0, "{}"),
            stop(0),
            tool_start(1, "toolu_b", "cut"),
            json_piece(1, "{\"x\": tru"),
            // No content_block_stop for block 1.
            message_delta(json!("tool_use")),
            message_stop(),
        ]);
        assert_eq!(
            tool_calls(&events),
            vec![vec![ToolCall::new("toolu_a", "ok", json!({}))]]
        );
        assert_eq!(done(&events).tool_calls_dropped, 1);
    }

    #[test]
    fn length_ending_drops_pending_calls_and_keeps_finished_ones() {
        let events = decode(vec![
            tool_start(0, "toolu_a", "done_call"),
            json_piece(0, "{\"a\":1}"),
            stop(0),
            tool_start(1, "toolu_b", "cut_call"),
            // Valid JSON so far, but the call never finished.
            json_piece(1, "{}"),
            message_delta(json!("max_tokens")),
            message_stop(),
        ]);
        assert_eq!(
            tool_calls(&events),
            vec![vec![ToolCall::new("toolu_a", "done_call", json!({"a": 1}))]]
        );
        let metadata = done(&events);
        assert_eq!(metadata.finish_reason.as_deref(), Some("length"));
        assert_eq!(
            metadata.provider_finish_reason.as_deref(),
            Some("max_tokens")
        );
        assert_eq!(metadata.tool_calls_dropped, 1);
    }

    #[test]
    fn nothing_follows_a_terminal_event() {
        let after_done = decode(vec![message_stop(), text(0, "late"), message_stop()]);
        assert_eq!(after_done.len(), 1);
        let after_error = decode(vec![
            frame(
                "error",
                json!({"type": "error", "error": {"type": "api_error", "message": "boom"}}),
            ),
            text(0, "late"),
            message_stop(),
        ]);
        assert_eq!(after_error.len(), 1);
        assert!(matches!(after_error[0], LlmStreamEvent::Error(_)));
    }

    #[test]
    fn missing_stop_reason_stays_none() {
        let events = decode(vec![
            start(),
            text(0, "hi"),
            message_delta(Value::Null),
            message_stop(),
        ]);
        let metadata = done(&events);
        assert_eq!(metadata.finish_reason, None);
        assert_eq!(metadata.provider_finish_reason, None);
    }

    #[test]
    fn clean_end_without_message_stop_emits_nothing() {
        let events = decode(vec![start(), text(0, "hi")]);
        assert_eq!(events, vec![LlmStreamEvent::TextDelta("hi".into())]);
    }

    #[test]
    fn stop_reasons_are_normalized() {
        for (raw, normalized) in [
            ("end_turn", "stop"),
            ("stop_sequence", "stop"),
            ("pause_turn", "stop"),
            ("max_tokens", "length"),
            ("model_context_window_exceeded", "length"),
            ("tool_use", "tool_calls"),
            ("refusal", "content_filter"),
            ("something_new", "something_new"),
        ] {
            assert_eq!(normalize_stop_reason(raw), normalized);
        }
    }

    #[test]
    fn error_event_keeps_type_as_code_and_its_documented_status() {
        let error_of = |data: Value| match decode(vec![frame("error", data)]).pop() {
            Some(LlmStreamEvent::Error(error)) => error,
            other => panic!("expected Error, got {other:?}"),
        };
        let overloaded = error_of(json!({
            "type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"},
            "request_id": "req_1",
        }));
        assert_eq!(
            overloaded,
            LlmStreamError::provider(Some("overloaded_error"), Some(529), "Overloaded")
        );
        for (kind, status) in [
            ("invalid_request_error", 400),
            ("authentication_error", 401),
            ("permission_error", 403),
            ("not_found_error", 404),
            ("request_too_large", 413),
            ("rate_limit_error", 429),
            ("api_error", 500),
            ("overloaded_error", 529),
        ] {
            let error = error_of(json!({"type": "error", "error": {"type": kind, "message": "m"}}));
            assert_eq!(
                (error.code.as_deref(), error.status),
                (Some(kind), Some(status))
            );
        }
        let unknown =
            error_of(json!({"type": "error", "error": {"type": "new_error", "message": "m"}}));
        assert_eq!(
            (unknown.code.as_deref(), unknown.status),
            (Some("new_error"), None)
        );
        // A status the frame states (a gateway's) wins over the table.
        let stated =
            error_of(json!({"error": {"type": "api_error", "message": "m", "status": 502}}));
        assert_eq!(stated.status, Some(502));
        let bare = error_of(json!({"error": "plain message"}));
        assert_eq!((bare.code, bare.message.as_str()), (None, "plain message"));
    }

    #[test]
    fn unknown_frames_and_stray_lines_carrying_an_error_are_errors() {
        let events = decode(vec![frame(
            "gateway_notice",
            json!({"error": {"type": "rate_limit_error", "message": "slow down"}}),
        )]);
        assert_eq!(
            events,
            vec![LlmStreamEvent::Error(LlmStreamError::provider(
                Some("rate_limit_error"),
                Some(429),
                "slow down"
            ))]
        );
        let events = decode(vec![SseItem::Stray(
            "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"down\"}}".into(),
        )]);
        assert_eq!(
            events,
            vec![LlmStreamEvent::Error(LlmStreamError::provider(
                Some("api_error"),
                Some(500),
                "down"
            ))]
        );
    }

    #[test]
    fn server_tools_are_reported_and_counted_not_dispatched() {
        let events = decode(vec![
            block_start(
                0,
                json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
            ),
            json_piece(0, "{\"query\":\"rust\"}"),
            stop(0),
            block_start(
                1,
                json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}),
            ),
            stop(1),
            message_delta(json!("end_turn")),
            message_stop(),
        ]);
        assert_eq!(
            events[0],
            LlmStreamEvent::HostedToolCall(HostedToolCall::new(
                "srvtoolu_1",
                "web_search",
                HostedToolCallStatus::InProgress,
                None
            ))
        );
        assert_eq!(
            events[1],
            LlmStreamEvent::HostedToolCall(HostedToolCall::new(
                "srvtoolu_1",
                "web_search",
                HostedToolCallStatus::Completed,
                None
            ))
        );
        assert!(tool_calls(&events).is_empty());
        assert_eq!(done(&events).hosted_tool_calls.get("web_search"), Some(&1));
    }
}
