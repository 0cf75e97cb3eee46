//! Gemini API (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`,
//! `:generateContent`, `:countTokens`, `GET /v1beta/models[/{model}]`), as
//! Gemini CLI consumes it.
//!
//! Streamed answer: data-only `GenerateContentResponse` chunks
//! `{"candidates":[{"content":{"role":"model","parts":[..]},"index":0}],
//! "usageMetadata":{..},"modelVersion":..,"responseId":..}` — reasoning as
//! parts `{"text":..,"thought":true}` (one part a chunk), text as parts
//! `{"text":..}` (one part a chunk), tool calls as parts
//! `{"functionCall":{"name","args"}}`, all of them in one chunk (one
//! candidate), as Gemini sends parallel calls. The last chunk carries
//! `finishReason: "STOP"` (no chunk has one for `NoFinishReason`) and the
//! full usage (`promptTokenCount`, `candidatesTokenCount`,
//! `totalTokenCount`, `cachedContentTokenCount`, `thoughtsTokenCount`);
//! earlier chunks carry only the prompt count.
//! Without `alt=sse` the same chunks come as one streamed JSON array.
//! A stream error is a 200 stream whose only body chunk is the bare JSON
//! `{"error":{"code":500,"message","status":"INTERNAL"}}` (not `data:`
//! framed, as Google's servers send it; the SDK throws an `ApiError` on it).
//! A stream error envelope is the partial text's chunks (no `finishReason`)
//! and then a `data:` frame `{"error":{"code":STATUS,"message","status":CODE}}`
//! (Google's error object: numeric `code` = HTTP status, string `status`
//! such as `RESOURCE_EXHAUSTED`), then the stream ends (without `alt=sse`
//! the error object is the array's last element).

use serde_json::{Value, json};

use super::sse::{SseEvent, chunks};
use super::{Answer, Ctx, Envelope, Usage};

fn full_usage(usage: Usage) -> Value {
    let mut value = json!({
        "promptTokenCount": usage.input,
        "candidatesTokenCount": usage.output - usage.reasoning,
        "totalTokenCount": usage.input + usage.output,
        "cachedContentTokenCount": usage.cached,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": usage.input}],
    });
    if usage.reasoning > 0 {
        value["thoughtsTokenCount"] = Value::from(usage.reasoning);
    }
    value
}

/// One `GenerateContentResponse`; `last` is the answer of the final chunk
/// (full usage, and `finishReason` unless it has none).
fn chunk(ctx: &Ctx<'_>, response_id: &str, parts: Vec<Value>, last: Option<&Answer>) -> Value {
    let mut candidate = json!({
        "content": {"role": "model", "parts": parts},
        "index": 0,
    });
    let usage = match last {
        Some(answer) => {
            if !answer.no_finish_reason {
                candidate["finishReason"] = Value::from("STOP");
            }
            full_usage(answer.usage())
        }
        None => {
            json!({"promptTokenCount": Usage::default().input, "totalTokenCount": Usage::default().input})
        }
    };
    json!({
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": ctx.model,
        "responseId": response_id,
    })
}

fn function_calls(answer: &Answer) -> Vec<Value> {
    answer
        .tools
        .iter()
        .map(|tool| json!({"functionCall": {"name": tool.name, "args": tool.arguments}}))
        .collect()
}

/// The parts of the answer grouped by streamed chunk: one reasoning or text
/// piece a chunk, all function calls in one chunk.
fn chunk_parts(ctx: &Ctx<'_>, answer: &Answer) -> Vec<Vec<Value>> {
    let mut groups = Vec::new();
    if let Some(reasoning) = &answer.reasoning {
        for piece in chunks(reasoning, ctx.text_chunk_chars) {
            groups.push(vec![json!({"text": piece, "thought": true})]);
        }
    }
    if let Some(text) = &answer.text {
        for piece in chunks(text, ctx.text_chunk_chars) {
            groups.push(vec![json!({"text": piece})]);
        }
    }
    if !answer.tools.is_empty() {
        groups.push(function_calls(answer));
    }
    groups
}

/// The streamed answer; when `complete` is false no chunk has a
/// `finishReason` (a cut-off).
pub(crate) fn stream(ctx: &Ctx<'_>, answer: &Answer, complete: bool) -> Vec<SseEvent> {
    let response_id = ctx.id("");
    let mut groups = chunk_parts(ctx, answer);
    if groups.is_empty() {
        groups.push(vec![json!({"text": ""})]);
    }
    let count = groups.len();
    groups
        .into_iter()
        .enumerate()
        .map(|(i, parts)| {
            let last = (complete && i + 1 == count).then_some(answer);
            SseEvent::data(&chunk(ctx, &response_id, parts, last))
        })
        .collect()
}

/// The partial text's chunks (none when it is empty), then a `data:`
/// frame with Google's error object.
pub(crate) fn stream_error_envelope(
    ctx: &Ctx<'_>,
    partial: &Answer,
    envelope: &Envelope<'_>,
) -> Vec<SseEvent> {
    let mut events = if partial.text.is_some() {
        stream(ctx, partial, false)
    } else {
        Vec::new()
    };
    events.push(SseEvent::data(&envelope_body(envelope)));
    events
}

/// `{"error":{"code":STATUS,"message","status":CODE}}`.
pub(crate) fn envelope_body(envelope: &Envelope<'_>) -> Value {
    json!({"error": {
        "code": envelope.status,
        "message": envelope.message,
        "status": envelope.code,
    }})
}

/// A stream whose only body chunk is a bare (not `data:`-framed) error
/// object, as Google's servers send a mid-stream error: the `@google/genai`
/// SDK only recognises an error when one network read parses as JSON with an
/// `error` member.
pub(crate) fn stream_error(_ctx: &Ctx<'_>, message: &str) -> Vec<SseEvent> {
    vec![SseEvent::bare(&error_body(500, message))]
}

/// The non-streaming answer: one `GenerateContentResponse` with every part.
pub(crate) fn body(ctx: &Ctx<'_>, answer: &Answer) -> Value {
    let mut parts = Vec::new();
    if let Some(reasoning) = &answer.reasoning {
        parts.push(json!({"text": reasoning, "thought": true}));
    }
    if let Some(text) = &answer.text {
        parts.push(json!({"text": text}));
    }
    parts.extend(function_calls(answer));
    chunk(ctx, &ctx.id(""), parts, Some(answer))
}

/// The Google error body `{"error":{"code","message","status"}}`.
pub(crate) fn error_body(status: u16, message: &str) -> Value {
    let name = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        500..=599 => "INTERNAL",
        _ => "FAILED_PRECONDITION",
    };
    json!({"error": {"code": status, "message": message, "status": name}})
}

/// Metadata of one model (`GET /v1beta/models/{model}`); also answers an
/// OpenAI-style `GET /v1/models/{id}`.
pub(crate) fn model_info(model: &str) -> Value {
    json!({
        "name": format!("models/{model}"),
        "baseModelId": model,
        "version": "001",
        "displayName": model,
        "description": "agent-adaptor mock model",
        "inputTokenLimit": 1_048_576,
        "outputTokenLimit": 65_536,
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
        "thinking": true,
        "id": model,
        "object": "model",
        "created": 0,
        "owned_by": "agent-adaptor-mock",
    })
}
