//! The Chat Completions stream decoder: data-only `chat.completion.chunk`
//! frames, ended by `data: [DONE]`.
//!
//! Per chunk: the first `id` is the response id, the last `model` the
//! served model, `usage` (any chunk; later values win) the token counts; a
//! chunk with an `error` object is the terminal [`LlmStreamEvent::Error`]
//! (gateways such as OpenRouter, LiteLLM and vLLM send them inside a `200`
//! stream). Per choice (only choice 0: a request asks for one), in order:
//! the `finish_reason` is recorded, then `reasoning_content` (or
//! `reasoning`) becomes [`LlmStreamEvent::ReasoningDelta`], non-empty
//! `content` (a string, a number, or Mistral's typed-chunk array) becomes
//! [`LlmStreamEvent::TextDelta`], `refusal` text too, `tool_calls` fragments
//! (routed by `index`, sparse and interleaved) become
//! [`LlmStreamEvent::ToolCallDelta`]s, and `finish_reason: tool_calls`
//! emits [`LlmStreamEvent::ToolCalls`] with every call finished.
//!
//! At `[DONE]`: calls still pending survive (strictly parsed: bad JSON drops
//! the call and counts it) unless the answer was cut short (`length`,
//! `content_filter`), which discards and counts them. `stop` keeps them:
//! OpenAI ends a turn whose `tool_choice` forced a named function with
//! `stop`, and several OpenAI-protocol servers always do. Then one
//! [`LlmStreamEvent::ReasoningItem`] when reasoning streamed; then `Done`.
//! A body that ends without `[DONE]` yields no terminal event (the turn is
//! incomplete). An unparseable chunk is a `malformed_response` error.

use serde::Deserialize;
use serde_json::Value;

use crate::accumulator::ToolCallAccumulator;
use crate::error::LlmStreamError;
use crate::event::{LlmCompletionMetadata, LlmStreamEvent, disjoint_prompt_tokens};
use crate::http::{self, WireDecoder};
use crate::reasoning::{ReasoningContentPart, ReasoningText};
use crate::sse::{SseFrame, SseItem};

/// The provider family of the reasoning items this protocol yields.
const REASONING_PROVIDER: &str = "openai-protocol";

/// The decoder of one Chat Completions stream.
#[derive(Debug)]
pub(crate) struct ChatDecoder {
    /// The requested model (`Done.model`).
    model: String,
    tools: ToolCallAccumulator,
    /// The key of the call the last fragment went to (for servers that
    /// leave out `index`).
    last_tool_key: Option<String>,
    /// All reasoning text streamed.
    reasoning: String,
    /// The provider's finish reason, raw.
    finish_reason: Option<String>,
    response_id: Option<String>,
    response_model: Option<String>,
    usage: Usage,
    /// A terminal event was emitted (or the body ended): nothing more.
    ended: bool,
}

/// Token counts as reported, each the latest value seen.
#[derive(Debug, Default)]
struct Usage {
    /// Prompt tokens, cached ones included (as OpenAI reports them).
    prompt: Option<u32>,
    cached: Option<u32>,
    /// Cache writes (OpenRouter `cache_write_tokens`), included in `prompt`.
    written: Option<u32>,
    completion: Option<u32>,
    reasoning: Option<u32>,
    total: Option<u32>,
    cost: Option<f64>,
}

/// One chunk. Every field is optional and `null`-tolerant; `usage` and the
/// content are read leniently from raw JSON.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Chunk {
    id: Option<String>,
    model: Option<String>,
    #[serde(deserialize_with = "null_default")]
    choices: Vec<Choice>,
    usage: Option<Value>,
    /// A gateway's error envelope (`null` when absent).
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Choice {
    index: Option<u32>,
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Delta {
    content: Option<Value>,
    reasoning_content: Option<Value>,
    reasoning: Option<Value>,
    refusal: Option<String>,
    #[serde(deserialize_with = "null_default")]
    tool_calls: Vec<ToolCallFragment>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ToolCallFragment {
    index: Option<u32>,
    id: Option<String>,
    function: Option<FunctionFragment>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FunctionFragment {
    name: Option<String>,
    /// A JSON text piece, or (some servers) the whole arguments object.
    arguments: Option<Value>,
}

fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

impl ChatDecoder {
    /// A decoder for a call that requested `model`.
    pub(crate) fn new(model: impl Into<String>) -> Self {
        ChatDecoder {
            model: model.into(),
            tools: ToolCallAccumulator::new(),
            last_tool_key: None,
            reasoning: String::new(),
            finish_reason: None,
            response_id: None,
            response_model: None,
            usage: Usage::default(),
            ended: false,
        }
    }

    fn fail(&mut self, error: LlmStreamError, out: &mut Vec<LlmStreamEvent>) {
        self.ended = true;
        out.push(LlmStreamEvent::Error(error));
    }

    fn frame(&mut self, frame: SseFrame, out: &mut Vec<LlmStreamEvent>) {
        let data = frame.data.trim();
        match frame
            .event
            .as_deref()
            .filter(|name| !name.is_empty() && *name != "message")
        {
            None => {}
            // Not part of the protocol, but some proxies label their errors.
            Some("error") => {
                let error = match serde_json::from_str::<Value>(data) {
                    Ok(value) => envelope_error(&value),
                    Err(_) => LlmStreamError::new(if data.is_empty() {
                        "the provider sent an error event without details"
                    } else {
                        data
                    }),
                };
                self.fail(error, out);
                return;
            }
            Some(name) => {
                match serde_json::from_str::<Value>(data) {
                    Ok(value) if has_error(&value) => self.fail(envelope_error(&value), out),
                    _ => {
                        tracing::debug!(event = name, "ignoring an unknown Chat Completions event")
                    }
                }
                return;
            }
        }
        if data.is_empty() {
            // A keep-alive.
            return;
        }
        if data == "[DONE]" {
            self.done(out);
            return;
        }
        // One typed parse on the hot path; the generic value only when the
        // chunk does not fit the typed shape (an error envelope with odd
        // fields, or garbage).
        let chunk = match serde_json::from_str::<Chunk>(data) {
            Ok(chunk) => chunk,
            Err(error) => {
                match serde_json::from_str::<Value>(data) {
                    Ok(value) if has_error(&value) => self.fail(envelope_error(&value), out),
                    _ => {
                        self.ended = true;
                        out.push(http::unparseable("Chat Completions chunk", data, &error));
                    }
                }
                return;
            }
        };
        if let Some(error) = chunk.error.as_ref().filter(|error| !error.is_null()) {
            let envelope = serde_json::json!({ "error": error });
            self.fail(envelope_error(&envelope), out);
            return;
        }
        if let Err(error) = self.chunk(chunk, out) {
            self.fail(error, out);
        }
    }

    fn chunk(&mut self, chunk: Chunk, out: &mut Vec<LlmStreamEvent>) -> Result<(), LlmStreamError> {
        if self.response_id.is_none() {
            self.response_id = chunk.id.filter(|id| !id.is_empty());
        }
        if let Some(model) = chunk.model.filter(|model| !model.is_empty()) {
            self.response_model = Some(model);
        }
        if let Some(usage) = &chunk.usage {
            self.usage(usage);
        }
        for choice in chunk.choices {
            if choice.index.unwrap_or(0) != 0 {
                tracing::debug!(
                    index = choice.index,
                    "ignoring a Chat Completions choice other than 0"
                );
                continue;
            }
            self.choice(choice, out)?;
        }
        Ok(())
    }

    fn choice(
        &mut self,
        choice: Choice,
        out: &mut Vec<LlmStreamEvent>,
    ) -> Result<(), LlmStreamError> {
        // First: a terminal reason can share its chunk with the last
        // fragments.
        let finish = choice.finish_reason.filter(|reason| !reason.is_empty());
        if let Some(reason) = &finish {
            self.finish_reason = Some(reason.clone());
        }
        if let Some(delta) = choice.delta {
            let reasoning = delta
                .reasoning_content
                .filter(|v| !v.is_null())
                .or(delta.reasoning);
            if let Some(reasoning) = reasoning {
                match reasoning {
                    Value::String(text) => self.reasoning_delta(&text, out),
                    Value::Null => {}
                    // OpenRouter's `reasoning_details` twin fields and the
                    // like: the readable text comes as a string.
                    _ => tracing::debug!("ignoring non-text reasoning in a Chat Completions delta"),
                }
            }
            if let Some(content) = &delta.content {
                self.content(content, out)?;
            }
            if let Some(refusal) = &delta.refusal {
                self.text_delta(refusal, out);
            }
            for fragment in delta.tool_calls {
                self.tool_fragment(fragment, out);
            }
        }
        if finish.as_deref().map(normalize_finish_reason).as_deref() == Some("tool_calls") {
            self.tools.finish_all();
            if let Some(calls) = self.tools.take() {
                out.push(LlmStreamEvent::ToolCalls(calls));
            }
        }
        Ok(())
    }

    fn text_delta(&mut self, text: &str, out: &mut Vec<LlmStreamEvent>) {
        if !text.is_empty() {
            out.push(LlmStreamEvent::TextDelta(text.to_owned()));
        }
    }

    fn reasoning_delta(&mut self, text: &str, out: &mut Vec<LlmStreamEvent>) {
        if !text.is_empty() {
            self.reasoning.push_str(text);
            out.push(LlmStreamEvent::ReasoningDelta {
                delta: text.to_owned(),
                summary: false,
            });
        }
    }

    /// `content`: a string, a number (Cloudflare), or typed chunks
    /// (Mistral: `text` and `thinking`).
    fn content(
        &mut self,
        content: &Value,
        out: &mut Vec<LlmStreamEvent>,
    ) -> Result<(), LlmStreamError> {
        match content {
            Value::Null => {}
            Value::String(text) => self.text_delta(text, out),
            Value::Number(number) => self.text_delta(&number.to_string(), out),
            Value::Array(parts) => {
                for part in parts {
                    self.content_part(part, out)?;
                }
            }
            Value::Object(_) => self.content_part(content, out)?,
            Value::Bool(_) => {
                return Err(malformed("a Chat Completions delta has boolean content"));
            }
        }
        Ok(())
    }

    fn content_part(
        &mut self,
        part: &Value,
        out: &mut Vec<LlmStreamEvent>,
    ) -> Result<(), LlmStreamError> {
        let Value::Object(fields) = part else {
            return match part {
                Value::String(text) => {
                    self.text_delta(text, out);
                    Ok(())
                }
                _ => Err(malformed(
                    "a Chat Completions content part is neither an object nor text",
                )),
            };
        };
        match fields.get("type").and_then(Value::as_str) {
            Some("text") | None => match fields.get("text") {
                Some(Value::String(text)) => self.text_delta(text, out),
                _ => tracing::debug!("ignoring a Chat Completions content part without text"),
            },
            Some("thinking") => match fields.get("thinking") {
                Some(Value::String(text)) => self.reasoning_delta(text, out),
                Some(Value::Array(parts)) => {
                    for text in parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                    {
                        self.reasoning_delta(text, out);
                    }
                }
                _ => tracing::debug!("ignoring a Chat Completions thinking part without text"),
            },
            Some(kind) => {
                tracing::debug!(kind, "ignoring an unknown Chat Completions content part")
            }
        }
        Ok(())
    }

    fn tool_fragment(&mut self, fragment: ToolCallFragment, out: &mut Vec<LlmStreamEvent>) {
        let id = fragment.id.filter(|id| !id.is_empty());
        let key = match (fragment.index, &id) {
            (Some(index), _) => index.to_string(),
            // Servers that leave out `index` send whole calls with ids.
            (None, Some(id)) => format!("id:{id}"),
            (None, None) => self.last_tool_key.clone().unwrap_or_else(|| "0".to_owned()),
        };
        let (name, arguments) = match fragment.function {
            Some(function) => {
                let arguments = match function.arguments {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(text)) => text,
                    Some(other) => other.to_string(),
                };
                (function.name.filter(|name| !name.is_empty()), arguments)
            }
            None => (None, String::new()),
        };
        let names_the_call = id.is_some() || name.is_some();
        let delta = self
            .tools
            .delta(&key, id.as_deref(), name.as_deref(), &arguments);
        self.last_tool_key = Some(key);
        if names_the_call || !arguments.is_empty() {
            out.push(LlmStreamEvent::ToolCallDelta(delta));
        }
    }

    fn usage(&mut self, usage: &Value) {
        let count = |pointer: &str| usage.pointer(pointer).and_then(token_count);
        let seen = &mut self.usage;
        let set = |slot: &mut Option<u32>, value: Option<u32>| {
            if value.is_some() {
                *slot = value;
            }
        };
        set(&mut seen.prompt, count("/prompt_tokens"));
        // DeepSeek reports cache hits at the top level.
        set(
            &mut seen.cached,
            count("/prompt_tokens_details/cached_tokens")
                .or_else(|| count("/prompt_cache_hit_tokens")),
        );
        set(
            &mut seen.written,
            count("/prompt_tokens_details/cache_write_tokens"),
        );
        set(&mut seen.completion, count("/completion_tokens"));
        set(
            &mut seen.reasoning,
            count("/completion_tokens_details/reasoning_tokens"),
        );
        set(&mut seen.total, count("/total_tokens"));
        let cost = usage.get("cost").and_then(|cost| match cost {
            Value::Number(number) => number.as_f64(),
            Value::String(text) => text.trim().parse::<f64>().ok(),
            _ => None,
        });
        if cost.is_some() {
            seen.cost = cost;
        }
    }

    fn done(&mut self, out: &mut Vec<LlmStreamEvent>) {
        self.ended = true;
        let finish_reason = self.finish_reason.as_deref().map(normalize_finish_reason);
        match finish_reason.as_deref() {
            Some("length" | "content_filter") => {
                self.tools.discard_pending();
            }
            _ => {
                if let Some(calls) = self.tools.take() {
                    out.push(LlmStreamEvent::ToolCalls(calls));
                }
            }
        }
        if !self.reasoning.is_empty() {
            out.push(LlmStreamEvent::ReasoningItem(
                ReasoningContentPart::opaque(REASONING_PROVIDER).with_text(ReasoningText::Plain {
                    text: std::mem::take(&mut self.reasoning),
                }),
            ));
        }
        let usage = &self.usage;
        let metadata = LlmCompletionMetadata {
            prompt_tokens: usage.prompt.map(|prompt| {
                disjoint_prompt_tokens(prompt, usage.cached)
                    .saturating_sub(usage.written.unwrap_or(0))
            }),
            completion_tokens: usage.completion,
            total_tokens: usage
                .total
                .or_else(|| Some(usage.prompt?.saturating_add(usage.completion?))),
            cache_read_tokens: usage.cached,
            cache_creation_tokens: usage.written,
            reasoning_tokens: usage.reasoning,
            provider_cost_usd: usage.cost,
            model: Some(self.model.clone()).filter(|model| !model.is_empty()),
            response_model: self.response_model.take(),
            finish_reason,
            provider_finish_reason: self.finish_reason.take(),
            response_id: self.response_id.take(),
            tool_calls_dropped: self.tools.dropped(),
            ..LlmCompletionMetadata::default()
        };
        out.push(LlmStreamEvent::done(metadata));
    }
}

impl WireDecoder for ChatDecoder {
    fn item(&mut self, item: SseItem, out: &mut Vec<LlmStreamEvent>) {
        if self.ended {
            tracing::debug!("ignoring Chat Completions data after the terminal event");
            return;
        }
        match item {
            SseItem::Frame(frame) => self.frame(frame, out),
            SseItem::Stray(line) => {
                // Not SSE: a proxy's bare JSON error body is still an error.
                match serde_json::from_str::<Value>(line.trim()) {
                    Ok(value) if has_error(&value) => self.fail(envelope_error(&value), out),
                    _ => tracing::debug!(
                        bytes = line.len(),
                        "ignoring a non-SSE line in a Chat Completions stream"
                    ),
                }
            }
        }
    }

    fn finish(&mut self, _out: &mut Vec<LlmStreamEvent>) {
        if !self.ended {
            tracing::debug!("Chat Completions stream ended without [DONE]: the turn is incomplete");
        }
        self.ended = true;
    }
}

/// True when `value` carries a non-null `error`.
fn has_error(value: &Value) -> bool {
    value.get("error").is_some_and(|error| !error.is_null())
}

/// An error envelope `{"error":{message, code, type, status}}`: a string
/// `code` is the code (else a string `status`, else `type`); a numeric
/// `status`, or else a numeric `code`, is the HTTP status. OpenRouter's
/// `metadata.provider_name` and `metadata.raw` are appended to the message.
fn envelope_error(value: &Value) -> LlmStreamError {
    let (code, message) = http::error_fields(value);
    let status = http::error_status(value);
    let mut message =
        message.unwrap_or_else(|| "the provider reported an error without a message".to_owned());
    let metadata = value.get("error").and_then(|error| error.get("metadata"));
    if let Some(metadata) = metadata {
        if let Some(provider) = metadata.get("provider_name").and_then(Value::as_str) {
            message.push_str(&format!(" [provider: {provider}]"));
        }
        if let Some(raw) = metadata
            .get("raw")
            .and_then(Value::as_str)
            .filter(|raw| !raw.is_empty())
        {
            let raw: String = raw.chars().take(500).collect();
            message.push_str(&format!(" [raw: {raw}]"));
        }
    }
    LlmStreamError::provider(code, status, message)
}

fn malformed(message: &str) -> LlmStreamError {
    LlmStreamError::provider(Some("malformed_response"), None, message)
}

/// A token count: a non-negative integer (or a float some servers send).
fn token_count(value: &Value) -> Option<u32> {
    let count = value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|n| n.is_finite() && *n >= 0.0)
            .map(|n| n.round() as u64)
    })?;
    Some(u32::try_from(count).unwrap_or(u32::MAX))
}

/// A finish reason in the Chat Completions words. Servers mostly send them
/// already; legacy and foreign spellings are mapped, anything else passes
/// through lowercased.
fn normalize_finish_reason(raw: &str) -> String {
    let lower = raw.to_ascii_lowercase();
    match lower.as_str() {
        "function_call" | "tool_use" => "tool_calls".to_owned(),
        "end_turn" | "eos" | "eos_token" | "stop_sequence" => "stop".to_owned(),
        "max_tokens" | "max_output_tokens" => "length".to_owned(),
        "content_filtered" | "safety" => "content_filter".to_owned(),
        _ => lower,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use serde_json::json;

    use super::*;
    use crate::message::ToolCall;

    fn frame(event: Option<&str>, data: &str) -> SseItem {
        SseItem::Frame(SseFrame {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        })
    }

    /// Feeds data-only frames (a JSON value, or raw text for a string).
    fn decode_items(items: Vec<SseItem>) -> Vec<LlmStreamEvent> {
        let mut decoder = ChatDecoder::new("requested-model");
        let mut out = Vec::new();
        for item in items {
            decoder.item(item, &mut out);
        }
        decoder.finish(&mut out);
        out
    }

    fn decode(frames: &[Value]) -> Vec<LlmStreamEvent> {
        decode_items(
            frames
                .iter()
                .map(|value| match value {
                    Value::String(raw) => frame(None, raw),
                    other => frame(None, &other.to_string()),
                })
                .collect(),
        )
    }

    fn chunk(delta: Value, finish_reason: Option<&str>) -> Value {
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "model": "served-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        })
    }

    fn call_start(index: u32, id: &str, name: &str) -> Value {
        chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}}]}),
            None,
        )
    }

    fn call_args(index: u32, arguments: &str) -> Value {
        chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}),
            None,
        )
    }

    fn done_of(events: &[LlmStreamEvent]) -> &LlmCompletionMetadata {
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

    fn error_of(events: &[LlmStreamEvent]) -> &LlmStreamError {
        match events.last() {
            Some(LlmStreamEvent::Error(error)) => error,
            other => panic!("expected Error last, got {other:?}"),
        }
    }

    #[test]
    fn text_usage_and_identity() {
        let events = decode(&[
            chunk(json!({"role": "assistant", "content": ""}), None),
            chunk(json!({"content": "Hel"}), None),
            json!({"id": "chatcmpl-2", "choices": [
                {"index": 0, "delta": {"content": "lo"}, "finish_reason": null}]}),
            chunk(json!({}), Some("stop")),
            json!({"id": "chatcmpl-3", "model": "served-2", "choices": [], "usage": {
                "prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110,
                "prompt_tokens_details": {"cached_tokens": 20},
                "completion_tokens_details": {"reasoning_tokens": 0}, "cost": 0.0012}}),
            json!("[DONE]"),
        ]);
        assert_eq!(events.len(), 3, "{events:?}");
        assert_eq!(events[0], LlmStreamEvent::TextDelta("Hel".into()));
        assert_eq!(events[1], LlmStreamEvent::TextDelta("lo".into()));
        let done = done_of(&events);
        assert_eq!(done.prompt_tokens, Some(80));
        assert_eq!(done.cache_read_tokens, Some(20));
        assert_eq!(done.completion_tokens, Some(10));
        assert_eq!(done.total_tokens, Some(110));
        assert_eq!(done.reasoning_tokens, Some(0));
        assert_eq!(done.provider_cost_usd, Some(0.0012));
        assert_eq!(done.model.as_deref(), Some("requested-model"));
        assert_eq!(done.response_model.as_deref(), Some("served-2"));
        assert_eq!(done.response_id.as_deref(), Some("chatcmpl-1"));
        assert_eq!(done.finish_reason.as_deref(), Some("stop"));
        assert_eq!(done.provider_finish_reason.as_deref(), Some("stop"));
        assert_eq!(done.tool_calls_dropped, 0);
    }

    #[test]
    fn usage_variants_deepseek_and_openrouter_cache_writes() {
        let events = decode(&[
            json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 5,
                "prompt_cache_hit_tokens": 30}}),
            json!("[DONE]"),
        ]);
        let done = done_of(&events);
        assert_eq!(
            (done.prompt_tokens, done.cache_read_tokens),
            (Some(20), Some(30))
        );
        assert_eq!(done.total_tokens, Some(55));
        assert_eq!(done.finish_reason, None);

        let events = decode(&[
            json!({"choices": [], "usage": {"prompt_tokens": 194, "completion_tokens": 2,
                "total_tokens": 196, "cost": "0.95",
                "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 100}}}),
            json!("[DONE]"),
        ]);
        let done = done_of(&events);
        assert_eq!(done.prompt_tokens, Some(94));
        assert_eq!(done.cache_read_tokens, Some(0));
        assert_eq!(done.cache_creation_tokens, Some(100));
        assert_eq!(done.provider_cost_usd, Some(0.95));

        // No usage at all: nothing is defaulted.
        let events = decode(&[
            chunk(json!({"content": "x"}), Some("stop")),
            json!("[DONE]"),
        ]);
        let done = done_of(&events);
        assert_eq!(
            (
                done.prompt_tokens,
                done.total_tokens,
                done.provider_cost_usd
            ),
            (None, None, None)
        );
    }

    #[test]
    fn reasoning_streams_then_one_item_before_done() {
        let events = decode(&[
            chunk(json!({"reasoning_content": "Think "}), None),
            // DeepSeek/Qwen send `reasoning_content`, Groq/OpenRouter `reasoning`.
            chunk(json!({"reasoning": "more."}), None),
            // Both fields at once: `reasoning_content` wins, no duplicate.
            chunk(json!({"reasoning_content": "!", "reasoning": "!"}), None),
            chunk(json!({"content": "Answer"}), Some("stop")),
            json!("[DONE]"),
        ]);
        assert_eq!(
            events[..4],
            [
                LlmStreamEvent::ReasoningDelta {
                    delta: "Think ".into(),
                    summary: false
                },
                LlmStreamEvent::ReasoningDelta {
                    delta: "more.".into(),
                    summary: false
                },
                LlmStreamEvent::ReasoningDelta {
                    delta: "!".into(),
                    summary: false
                },
                LlmStreamEvent::TextDelta("Answer".into()),
            ]
        );
        assert_eq!(
            events[4],
            LlmStreamEvent::ReasoningItem(
                ReasoningContentPart::opaque("openai-protocol").with_text(ReasoningText::Plain {
                    text: "Think more.!".into()
                })
            )
        );
        assert_eq!(done_of(&events).finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn lenient_content_numbers_and_typed_chunks() {
        let events = decode(&[
            chunk(json!({"content": 42}), None),
            chunk(
                json!({"content": [
                    {"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]},
                    {"type": "text", "text": " and"},
                    {"type": "image_url", "image_url": {"url": "x"}},
                ]}),
                None,
            ),
            chunk(json!({"content": {"type": "text", "text": " more"}}), None),
            chunk(json!({"refusal": " no"}), Some("stop")),
            json!("[DONE]"),
        ]);
        assert_eq!(
            events[..5],
            [
                LlmStreamEvent::TextDelta("42".into()),
                LlmStreamEvent::ReasoningDelta {
                    delta: "hmm".into(),
                    summary: false
                },
                LlmStreamEvent::TextDelta(" and".into()),
                LlmStreamEvent::TextDelta(" more".into()),
                LlmStreamEvent::TextDelta(" no".into()),
            ]
        );
        let events = decode(&[chunk(json!({"content": true}), None), json!("[DONE]")]);
        assert_eq!(events.len(), 1);
        assert_eq!(
            error_of(&events).code.as_deref(),
            Some("malformed_response")
        );
    }

    #[test]
    fn malformed_json_frame_is_an_error_and_ends_the_stream() {
        let events = decode(&[
            chunk(json!({"content": "a"}), None),
            json!("{\"choices\": [ {\"delta\""),
            chunk(json!({"content": "b"}), Some("stop")),
            json!("[DONE]"),
        ]);
        assert_eq!(events.len(), 2, "{events:?}");
        let error = error_of(&events);
        assert_eq!(error.code.as_deref(), Some("malformed_response"));
        assert_eq!(error.kind(), crate::LlmErrorKind::MalformedResponse);
        assert!(
            error.message.contains("unparseable Chat Completions chunk"),
            "{}",
            error.message
        );
        // Valid JSON of the wrong shape, too.
        let events = decode(&[json!("[1, 2]")]);
        assert_eq!(
            error_of(&events).code.as_deref(),
            Some("malformed_response")
        );
        let events = decode(&[json!({"choices": "nope"})]);
        assert_eq!(
            error_of(&events).code.as_deref(),
            Some("malformed_response")
        );
    }

    #[test]
    fn parallel_sparse_interleaved_calls() {
        let events = decode(&[
            call_start(3, "call_b", "second"),
            call_start(1, "call_a", "first"),
            call_args(1, "{\"x\":"),
            call_args(3, "{\"y\":"),
            call_args(1, "1}"),
            // The finish reason shares its chunk with the last fragment.
            chunk(
                json!({"tool_calls": [{"index": 3, "function": {"arguments": "2}"}}]}),
                Some("tool_calls"),
            ),
            json!("[DONE]"),
        ]);
        let deltas: Vec<(u32, Option<String>, String)> = events
            .iter()
            .filter_map(|event| match event {
                LlmStreamEvent::ToolCallDelta(d) => {
                    Some((d.index, d.id.clone(), d.arguments.clone()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            deltas,
            vec![
                (0, Some("call_b".into()), String::new()),
                (1, Some("call_a".into()), String::new()),
                (1, Some("call_a".into()), "{\"x\":".into()),
                (0, Some("call_b".into()), "{\"y\":".into()),
                (1, Some("call_a".into()), "1}".into()),
                (0, Some("call_b".into()), "2}".into()),
            ]
        );
        assert_eq!(
            tool_calls(&events),
            vec![vec![
                ToolCall::new("call_b", "second", json!({"y": 2})),
                ToolCall::new("call_a", "first", json!({"x": 1})),
            ]]
        );
        let done = done_of(&events);
        assert_eq!(done.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(done.tool_calls_dropped, 0);
    }

    #[test]
    fn finished_call_with_invalid_json_degrades_to_empty_object() {
        let events = decode(&[
            call_start(0, "call_1", "t"),
            call_args(0, "{\"x\": tru"),
            chunk(json!({}), Some("tool_calls")),
            json!("[DONE]"),
        ]);
        assert_eq!(
            tool_calls(&events),
            vec![vec![ToolCall::new("call_1", "t", json!({}))]]
        );
        assert_eq!(done_of(&events).tool_calls_dropped, 0);
    }

    #[test]
    fn unfinished_call_with_invalid_json_is_dropped_and_counted() {
        let events = decode(&[
            call_start(0, "call_1", "good"),
            call_args(0, "{}"),
            call_start(1, "call_2", "bad"),
            call_args(1, "{\"x\":"),
            // No finish reason at all: strict parse at [DONE].
            json!("[DONE]"),
        ]);
        assert_eq!(
            tool_calls(&events),
            vec![vec![ToolCall::new("call_1", "good", json!({}))]]
        );
        let done = done_of(&events);
        assert_eq!(done.tool_calls_dropped, 1);
        assert_eq!(done.finish_reason, None, "never substituted");
    }

    #[test]
    fn cut_short_endings_discard_pending_calls_and_stop_keeps_them() {
        let events = decode(&[
            call_start(0, "call_1", "t"),
            call_args(0, "{\"x\": 1}"),
            chunk(json!({}), Some("stop")),
            json!("[DONE]"),
        ]);
        assert_eq!(
            tool_calls(&events).len(),
            1,
            "forced tool_choice ends with stop: {events:?}"
        );
        assert_eq!(done_of(&events).tool_calls_dropped, 0);
        for reason in ["length", "content_filter"] {
            let events = decode(&[
                call_start(0, "call_1", "t"),
                call_args(0, "{\"x\": 1}"),
                chunk(json!({}), Some(reason)),
                json!("[DONE]"),
            ]);
            assert!(tool_calls(&events).is_empty(), "{reason}: {events:?}");
            let done = done_of(&events);
            assert_eq!(done.tool_calls_dropped, 1, "{reason}");
            assert_eq!(done.finish_reason.as_deref(), Some(reason));
        }
    }

    #[test]
    fn calls_without_index_are_keyed_by_id() {
        let events = decode(&[
            chunk(
                json!({"tool_calls": [
                    {"id": "a", "function": {"name": "one", "arguments": {"k": 1}}},
                    {"id": "b", "function": {"name": "two", "arguments": "{}"}},
                ]}),
                Some("tool_calls"),
            ),
            json!("[DONE]"),
        ]);
        assert_eq!(
            tool_calls(&events),
            vec![vec![
                ToolCall::new("a", "one", json!({"k": 1})),
                ToolCall::new("b", "two", json!({}))
            ]]
        );
    }

    #[test]
    fn error_envelopes_keep_code_and_status() {
        // OpenRouter / LiteLLM: numeric code = HTTP status, type = code.
        let events = decode(&[
            chunk(json!({"content": "par"}), None),
            json!({"error": {"message": "slow down", "type": "rate_limit_exceeded", "code": 429}}),
            chunk(json!({"content": "never"}), None),
            json!("[DONE]"),
        ]);
        assert_eq!(events.len(), 2);
        let error = error_of(&events);
        assert_eq!(
            (error.code.as_deref(), error.status, error.message.as_str()),
            (Some("rate_limit_exceeded"), Some(429), "slow down")
        );
        // OpenAI: string code, no status.
        let events =
            decode(&[json!({"error": {"message": "m", "type": "server_error", "code": "boom"}})]);
        let error = error_of(&events);
        assert_eq!((error.code.as_deref(), error.status), (Some("boom"), None));
        // An explicit status wins over a numeric code; OpenRouter metadata kept.
        let events = decode(&[
            json!({"error": {"message": "Provider returned error", "code": 400,
            "status": 502, "metadata": {"provider_name": "Acme", "raw": "upstream 502"}}}),
        ]);
        let error = error_of(&events);
        assert_eq!((error.code.as_deref(), error.status), (None, Some(502)));
        assert_eq!(
            error.message,
            "Provider returned error [provider: Acme] [raw: upstream 502]"
        );
        // A bare string error and an empty message.
        let events = decode(&[json!({"error": "broken"})]);
        assert_eq!(error_of(&events).message, "broken");
        let events = decode(&[json!({"error": {"code": 500}})]);
        assert_eq!(error_of(&events).status, Some(500));
        // `"error": null` is no error.
        let events = decode(&[json!({"error": null, "choices": []}), json!("[DONE]")]);
        assert!(matches!(events.last(), Some(LlmStreamEvent::Done(_))));
    }

    #[test]
    fn named_events_stray_lines_and_keep_alives() {
        let events = decode_items(vec![
            frame(None, ""),
            frame(Some("ping"), "{}"),
            frame(
                Some("message"),
                &chunk(json!({"content": "a"}), None).to_string(),
            ),
            SseItem::Stray("garbage".into()),
            frame(None, "[DONE]"),
        ]);
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(events[0], LlmStreamEvent::TextDelta("a".into()));

        let events = decode_items(vec![frame(
            Some("error"),
            "{\"error\":{\"message\":\"m\",\"code\":503}}",
        )]);
        assert_eq!(error_of(&events).status, Some(503));
        let events = decode_items(vec![frame(Some("error"), "plain words")]);
        assert_eq!(error_of(&events).message, "plain words");
        let events = decode_items(vec![frame(
            Some("weird"),
            "{\"error\":{\"message\":\"m\"}}",
        )]);
        assert_eq!(error_of(&events).message, "m");
        let events = decode_items(vec![SseItem::Stray(
            "{\"error\":{\"message\":\"bare\",\"code\":401}}".into(),
        )]);
        let error = error_of(&events);
        assert_eq!((error.message.as_str(), error.status), ("bare", Some(401)));
    }

    #[test]
    fn nothing_after_the_terminal_event() {
        let events = decode(&[
            chunk(json!({"content": "a"}), Some("stop")),
            json!("[DONE]"),
            chunk(json!({"content": "late"}), None),
            json!("[DONE]"),
            json!({"error": {"message": "late"}}),
        ]);
        assert_eq!(events.len(), 2);
        assert!(matches!(events[1], LlmStreamEvent::Done(_)));

        let events = decode(&[json!({"error": {"message": "x"}}), json!("[DONE]")]);
        assert_eq!(events.len(), 1);
    }

    #[test]
    fn no_done_marker_means_no_terminal_event() {
        let events = decode(&[chunk(json!({"content": "a"}), Some("stop"))]);
        assert_eq!(events, vec![LlmStreamEvent::TextDelta("a".into())]);
    }

    #[test]
    fn finish_reasons_are_normalized_and_raw_kept() {
        let events = decode(&[
            call_start(0, "c", "t"),
            call_args(0, "{}"),
            chunk(json!({}), Some("function_call")),
            json!("[DONE]"),
        ]);
        assert_eq!(tool_calls(&events).len(), 1);
        let done = done_of(&events);
        assert_eq!(done.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            done.provider_finish_reason.as_deref(),
            Some("function_call")
        );
        assert_eq!(normalize_finish_reason("MAX_TOKENS"), "length");
        assert_eq!(normalize_finish_reason("abort"), "abort");
    }

    #[test]
    fn other_choices_are_ignored() {
        let events = decode(&[
            json!({"choices": [
                {"index": 1, "delta": {"content": "other"}},
                {"index": 0, "delta": {"content": "mine"}},
            ]}),
            json!("[DONE]"),
        ]);
        assert_eq!(events[0], LlmStreamEvent::TextDelta("mine".into()));
        assert_eq!(events.len(), 2);
    }
}
