//! Anthropic Messages (`POST /v1/messages[?beta=true]`,
//! `POST /v1/messages/count_tokens`), as Claude Code consumes it.
//!
//! Streamed answer, named events: `message_start` (usage with
//! `output_tokens: 1`), `ping`; per content block `content_block_start`,
//! `content_block_delta`…, `content_block_stop` — a `thinking` block
//! (`thinking_delta`… then one `signature_delta`), a `text` block
//! (`text_delta`…), a `tool_use` block (`input_json_delta`… whose
//! `partial_json` pieces concatenate to the arguments); then
//! `message_delta` (`stop_reason` `end_turn` / `tool_use`, or `null` for
//! `NoFinishReason`; cumulative usage) and `message_stop`. Parallel tool
//! calls are one `tool_use` block each, indexed after any thinking / text
//! block. A stream error is `message_start`, `ping`, then
//! `event: error` with `{"type":"error","error":{"type":"api_error",...}}`.
//! A stream error envelope is `message_start`, `ping`, the partial text's
//! `text` block up to its `text_delta`s (no `content_block_stop`; no block
//! when the text is empty), then `event: error` with
//! `{"type":"error","error":{"type":CODE,"message"},"request_id":"req_…"}`
//! (the id of the `request-id` header) and nothing else: Anthropic sends no
//! HTTP status in the stream, its error types map 1:1 to statuses.

use serde_json::{Value, json};

use super::sse::{SseEvent, chunks};
use super::{Answer, Ctx, Envelope, TOOL_CHUNK_CHARS, Usage};

/// Anthropic's buckets are disjoint: `input_tokens` excludes the cache
/// reads, so the total input is the same as in the other protocols.
fn usage_json(usage: Usage, output_tokens: u64) -> Value {
    json!({
        "input_tokens": usage.input.saturating_sub(usage.cached),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.cached,
        "output_tokens": output_tokens,
    })
}

fn message_json(
    ctx: &Ctx<'_>,
    id: &str,
    content: Vec<Value>,
    stop_reason: Value,
    usage: Value,
) -> Value {
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": usage,
    })
}

fn signature(ctx: &Ctx<'_>) -> String {
    format!("mocksig-{}", ctx.id(""))
}

fn stop_reason(answer: &Answer) -> Value {
    if answer.no_finish_reason {
        Value::Null
    } else if answer.tools.is_empty() {
        Value::from("end_turn")
    } else {
        Value::from("tool_use")
    }
}

fn start(ctx: &Ctx<'_>, usage: Usage) -> Vec<SseEvent> {
    let message = message_json(
        ctx,
        &ctx.id("msg_"),
        Vec::new(),
        Value::Null,
        usage_json(usage, 1),
    );
    vec![
        SseEvent::named(
            "message_start",
            &json!({"type": "message_start", "message": message}),
        ),
        SseEvent::named("ping", &json!({"type": "ping"})),
    ]
}

fn block_start(index: usize, block: Value) -> SseEvent {
    SseEvent::named(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn block_delta(index: usize, delta: Value) -> SseEvent {
    SseEvent::named(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn block_stop(index: usize) -> SseEvent {
    SseEvent::named(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

/// The streamed answer; when `complete` is false it stops right after the
/// last text delta (a cut-off).
pub(crate) fn stream(ctx: &Ctx<'_>, answer: &Answer, complete: bool) -> Vec<SseEvent> {
    let usage = answer.usage();
    let mut events = start(ctx, usage);
    let mut index = 0;
    if let Some(thinking) = &answer.reasoning {
        events.push(block_start(
            index,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        ));
        for piece in chunks(thinking, ctx.text_chunk_chars) {
            events.push(block_delta(
                index,
                json!({"type": "thinking_delta", "thinking": piece}),
            ));
        }
        events.push(block_delta(
            index,
            json!({"type": "signature_delta", "signature": signature(ctx)}),
        ));
        events.push(block_stop(index));
        index += 1;
    }
    if let Some(text) = &answer.text {
        events.push(block_start(index, json!({"type": "text", "text": ""})));
        for piece in chunks(text, ctx.text_chunk_chars) {
            events.push(block_delta(
                index,
                json!({"type": "text_delta", "text": piece}),
            ));
        }
        if !complete {
            return events;
        }
        events.push(block_stop(index));
        index += 1;
    }
    for tool in &answer.tools {
        events.push(block_start(
            index,
            json!({"type": "tool_use", "id": ctx.id("toolu_"), "name": tool.name, "input": {}}),
        ));
        for piece in chunks(&tool.arguments_text, TOOL_CHUNK_CHARS) {
            events.push(block_delta(
                index,
                json!({"type": "input_json_delta", "partial_json": piece}),
            ));
        }
        events.push(block_stop(index));
        index += 1;
    }
    if !complete {
        return events;
    }
    events.push(SseEvent::named(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(answer), "stop_sequence": null},
            "usage": usage_json(usage, usage.output),
        }),
    ));
    events.push(SseEvent::named(
        "message_stop",
        &json!({"type": "message_stop"}),
    ));
    events
}

/// A stream that starts and then carries `event: error`.
pub(crate) fn stream_error(ctx: &Ctx<'_>, message: &str) -> Vec<SseEvent> {
    let mut events = start(ctx, Answer::default().usage());
    events.push(SseEvent::named(
        "error",
        &json!({"type": "error", "error": {"type": "api_error", "message": message}}),
    ));
    events
}

/// The partial text, then `event: error` (no `message_delta` /
/// `message_stop`).
pub(crate) fn stream_error_envelope(
    ctx: &Ctx<'_>,
    partial: &Answer,
    envelope: &Envelope<'_>,
) -> Vec<SseEvent> {
    let mut events = stream(ctx, partial, false);
    events.push(SseEvent::named("error", &envelope_body(ctx, envelope)));
    events
}

/// `{"type":"error","error":{"type":CODE,"message"},"request_id"}`, the
/// in-stream error event and the body of an error status alike.
pub(crate) fn envelope_body(ctx: &Ctx<'_>, envelope: &Envelope<'_>) -> Value {
    json!({
        "type": "error",
        "error": {"type": envelope.code, "message": envelope.message},
        "request_id": ctx.request_id,
    })
}

/// The non-streaming answer: a `message` object.
pub(crate) fn body(ctx: &Ctx<'_>, answer: &Answer) -> Value {
    let mut content = Vec::new();
    if let Some(thinking) = &answer.reasoning {
        content
            .push(json!({"type": "thinking", "thinking": thinking, "signature": signature(ctx)}));
    }
    if let Some(text) = &answer.text {
        content.push(json!({"type": "text", "text": text}));
    }
    for tool in &answer.tools {
        content.push(json!({
            "type": "tool_use",
            "id": ctx.id("toolu_"),
            "name": tool.name,
            "input": tool.arguments,
        }));
    }
    let usage = answer.usage();
    message_json(
        ctx,
        &ctx.id("msg_"),
        content,
        stop_reason(answer),
        usage_json(usage, usage.output),
    )
}

/// `{"type":"error","error":{"type","message"}}` with the error type the
/// real API uses for the status.
pub(crate) fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
