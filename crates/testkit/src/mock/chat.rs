//! OpenAI Chat Completions (`POST /v1/chat/completions`,
//! `POST /chat/completions`), as CodeBuddy, Qwen Code, opencode and Copilot
//! consume it.
//!
//! Streamed answer: data-only `chat.completion.chunk` events. The first
//! chunk carries `delta.role = "assistant"`; reasoning arrives as
//! `delta.reasoning_content`, text as `delta.content`, tool calls as
//! `delta.tool_calls[0]` entries: first one chunk per call with `index`
//! (0..N), `id`, `type`, `function.name` and empty `arguments`, then the
//! `function.arguments` pieces of all calls interleaved round-robin (piece 1
//! of call 0, piece 1 of call 1, ..., piece 2 of call 0, ...; a client must
//! route pieces by `index`, as some servers interleave); then a chunk with
//! an empty delta and `finish_reason` `stop` / `tool_calls` (left out for
//! `NoFinishReason`); then, when the request has
//! `stream_options.include_usage`, a chunk with `choices: []` and `usage`
//! (other chunks carry `usage: null`); then `data: [DONE]`.
//! A stream error is the role chunk and then a chunk
//! `{"error":{"message","type":"server_error",...}}`, without `[DONE]`.
//! A stream error envelope is the role chunk, the partial text's `content`
//! deltas, then the gateway (OpenRouter / LiteLLM) error chunk
//! `{"error":{"message","type":CODE,"code":STATUS}}` (numeric `code` = the
//! HTTP status, as OpenRouter sends it), without `[DONE]`.

use serde_json::{Value, json};

use super::sse::{SseEvent, chunks};
use super::{Answer, Ctx, Envelope, TOOL_CHUNK_CHARS, Usage};

fn usage_json(usage: Usage) -> Value {
    json!({
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cached},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
    })
}

struct Chunks<'a> {
    ctx: &'a Ctx<'a>,
    id: String,
    include_usage: bool,
    events: Vec<SseEvent>,
}

impl Chunks<'_> {
    fn push(&mut self, delta: Value, finish_reason: Option<&str>) {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.ctx.created,
            "model": self.ctx.model,
            "system_fingerprint": "fp_mock",
            "choices": [{
                "index": 0,
                "delta": delta,
                "logprobs": null,
                "finish_reason": finish_reason,
            }],
        });
        if self.include_usage {
            chunk["usage"] = Value::Null;
        }
        self.events.push(SseEvent::data(&chunk));
    }
}

fn include_usage(ctx: &Ctx<'_>) -> bool {
    ctx.request
        .get("stream_options")
        .and_then(|options| options.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The streamed answer; when `complete` is false it stops right after the
/// last text delta (a cut-off).
pub(crate) fn stream(ctx: &Ctx<'_>, answer: &Answer, complete: bool) -> Vec<SseEvent> {
    let mut out = Chunks {
        ctx,
        id: ctx.id("chatcmpl-"),
        include_usage: include_usage(ctx),
        events: Vec::new(),
    };
    let tool_only = answer.text.is_none() && answer.reasoning.is_none() && !answer.tools.is_empty();
    if !tool_only {
        out.push(json!({"role": "assistant", "content": ""}), None);
    }
    if let Some(reasoning) = &answer.reasoning {
        for piece in chunks(reasoning, ctx.text_chunk_chars) {
            out.push(json!({"reasoning_content": piece}), None);
        }
    }
    if let Some(text) = &answer.text {
        for piece in chunks(text, ctx.text_chunk_chars) {
            out.push(json!({"content": piece}), None);
        }
    }
    if !complete {
        return out.events;
    }
    let pieces: Vec<Vec<String>> = answer
        .tools
        .iter()
        .map(|tool| chunks(&tool.arguments_text, TOOL_CHUNK_CHARS))
        .collect();
    for (index, tool) in answer.tools.iter().enumerate() {
        let mut first = json!({"tool_calls": [{
            "index": index,
            "id": ctx.id("call_"),
            "type": "function",
            "function": {"name": tool.name, "arguments": ""},
        }]});
        if tool_only && index == 0 {
            first["role"] = Value::from("assistant");
            first["content"] = Value::Null;
        }
        out.push(first, None);
    }
    let rounds = pieces.iter().map(Vec::len).max().unwrap_or(0);
    for round in 0..rounds {
        for (index, call_pieces) in pieces.iter().enumerate() {
            if let Some(piece) = call_pieces.get(round) {
                out.push(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                    None,
                );
            }
        }
    }
    if !answer.no_finish_reason {
        out.push(json!({}), Some(finish_reason(answer)));
    }
    if out.include_usage {
        let usage_chunk = json!({
            "id": out.id,
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "system_fingerprint": "fp_mock",
            "choices": [],
            "usage": usage_json(answer.usage()),
        });
        out.events.push(SseEvent::data(&usage_chunk));
    }
    out.events.push(SseEvent::raw("[DONE]"));
    out.events
}

fn finish_reason(answer: &Answer) -> &'static str {
    if answer.tools.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

/// The partial text, then the gateway error chunk, without `[DONE]`.
pub(crate) fn stream_error_envelope(
    ctx: &Ctx<'_>,
    partial: &Answer,
    envelope: &Envelope<'_>,
) -> Vec<SseEvent> {
    let mut events = stream(ctx, partial, false);
    events.push(SseEvent::data(&envelope_body(envelope)));
    events
}

/// `{"error":{"message","type":CODE,"code":STATUS}}`, a gateway's error
/// object (OpenRouter / LiteLLM style), sent in the stream and as the body of
/// the error status alike. The numeric `code` is the HTTP status, as
/// OpenRouter sends it; OpenAI itself puts a string code (or null) in
/// `code` and no status.
pub(crate) fn envelope_body(envelope: &Envelope<'_>) -> Value {
    json!({"error": {
        "message": envelope.message,
        "type": envelope.code,
        "code": envelope.status,
    }})
}

/// A stream that starts and then carries an `error` chunk.
pub(crate) fn stream_error(ctx: &Ctx<'_>, message: &str) -> Vec<SseEvent> {
    let mut out = Chunks {
        ctx,
        id: ctx.id("chatcmpl-"),
        include_usage: include_usage(ctx),
        events: Vec::new(),
    };
    out.push(json!({"role": "assistant", "content": ""}), None);
    let error =
        json!({"error": {"message": message, "type": "server_error", "param": null, "code": null}});
    out.events.push(SseEvent::data(&error));
    out.events
}

/// The non-streaming answer: a `chat.completion` object.
pub(crate) fn body(ctx: &Ctx<'_>, answer: &Answer) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": answer.text,
        "refusal": null,
    });
    if let Some(reasoning) = &answer.reasoning {
        message["reasoning_content"] = Value::from(reasoning.as_str());
    }
    if !answer.tools.is_empty() {
        let calls: Vec<Value> = answer
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "id": ctx.id("call_"),
                    "type": "function",
                    "function": {"name": tool.name, "arguments": tool.arguments_text},
                })
            })
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    let finish = if answer.no_finish_reason {
        Value::Null
    } else {
        Value::from(finish_reason(answer))
    };
    json!({
        "id": ctx.id("chatcmpl-"),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "system_fingerprint": "fp_mock",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish,
        }],
        "usage": usage_json(answer.usage()),
    })
}

/// The OpenAI error body `{"error":{"message","type","param","code"}}`
/// (shared with the Responses API).
pub(crate) fn openai_error_body(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        401 => ("invalid_request_error", Value::from("invalid_api_key")),
        403 => ("permission_error", Value::Null),
        404 => ("invalid_request_error", Value::from("model_not_found")),
        429 => ("requests", Value::from("rate_limit_exceeded")),
        500..=599 => ("server_error", Value::Null),
        _ => ("invalid_request_error", Value::Null),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

/// The error body for an HTTP error.
pub(crate) fn error_body(status: u16, message: &str) -> Value {
    openai_error_body(status, message)
}
