//! OpenAI Responses API (`POST /v1/responses`, `POST /responses`), as Codex
//! consumes it.
//!
//! Streamed answer, events in order (each with `type` and an increasing
//! `sequence_number`, sent with a matching `event:` line):
//! `response.created`, `response.in_progress`; per reasoning item
//! `output_item.added`, `reasoning_summary_part.added`,
//! `reasoning_summary_text.delta`…, `reasoning_summary_text.done`,
//! `reasoning_summary_part.done`, `output_item.done`; per message item
//! `output_item.added`, `content_part.added`, `output_text.delta`…,
//! `output_text.done`, `content_part.done`, `output_item.done`; per function
//! call `output_item.added`, `function_call_arguments.delta`…,
//! `function_call_arguments.done`, `output_item.done`; then
//! `response.completed` with the whole response (output items and usage).
//! Parallel tool calls are one `function_call` item each, one after the
//! other. A tool name `<namespace>::<name>` is sent as a namespaced call,
//! `{"namespace": "<namespace>", "name": "<name>"}` (Codex offers each MCP
//! server's tools as a `namespace` tool, e.g. `mcp__aa_test`, and routes a
//! call by its namespace); other names go as they are. For `NoFinishReason` the `response` object of
//! `response.completed` (and the non-streaming body) has no `status` and no
//! `incomplete_details` field.
//! A stream error is `response.created`, `response.in_progress`,
//! `response.failed` (`response.error{code:"server_error", message}`).
//! A stream error envelope is `response.created`, `response.in_progress`,
//! the partial text's message item up to its `output_text.delta`s (when the
//! text is not empty), then an `error` event
//! `{"type":"error","code","message","param":null,"sequence_number","status"}`
//! and nothing else. OpenAI sends only `code`, `message` and `param`;
//! `status` (the HTTP status) is what gateways such as OpenRouter and
//! LiteLLM add.

use serde_json::{Map, Value, json};

use super::chat::openai_error_body;
use super::sse::{SseEvent, chunks};
use super::{Answer, Ctx, Envelope, TOOL_CHUNK_CHARS, Usage};

/// An output item with its id, ready to stream or to list.
enum Item<'a> {
    Reasoning {
        id: String,
        text: &'a str,
    },
    Message {
        id: String,
        text: &'a str,
    },
    FunctionCall {
        id: String,
        call_id: String,
        name: &'a str,
        arguments: &'a str,
    },
}

impl Item<'_> {
    fn done_json(&self) -> Value {
        match self {
            Item::Reasoning { id, text } => json!({
                "id": id,
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": text}],
            }),
            Item::Message { id, text } => json!({
                "id": id,
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }),
            Item::FunctionCall {
                id,
                call_id,
                name,
                arguments,
            } => with_namespace(
                json!({
                    "id": id,
                    "type": "function_call",
                    "status": "completed",
                    "call_id": call_id,
                    "arguments": arguments,
                }),
                name,
            ),
        }
    }
}

/// `item` (a `function_call` object) with its `name`, split into
/// `namespace` and `name` when it reads `<namespace>::<name>`.
fn with_namespace(mut item: Value, name: &str) -> Value {
    if let Value::Object(map) = &mut item {
        match name.split_once("::") {
            Some((namespace, tool)) => {
                map.insert("namespace".into(), namespace.into());
                map.insert("name".into(), tool.into());
            }
            None => {
                map.insert("name".into(), name.into());
            }
        }
    }
    item
}

fn items<'a>(ctx: &Ctx<'_>, answer: &'a Answer) -> Vec<Item<'a>> {
    let mut items = Vec::new();
    if let Some(text) = &answer.reasoning {
        items.push(Item::Reasoning {
            id: ctx.id("rs_"),
            text,
        });
    }
    if let Some(text) = &answer.text {
        items.push(Item::Message {
            id: ctx.id("msg_"),
            text,
        });
    }
    for tool in &answer.tools {
        items.push(Item::FunctionCall {
            id: ctx.id("fc_"),
            call_id: ctx.id("call_"),
            name: &tool.name,
            arguments: &tool.arguments_text,
        });
    }
    items
}

fn usage_json(usage: Usage) -> Value {
    json!({
        "input_tokens": usage.input,
        "input_tokens_details": {"cached_tokens": usage.cached},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.input + usage.output,
    })
}

fn response_json(
    ctx: &Ctx<'_>,
    id: &str,
    status: &str,
    output: Vec<Value>,
    usage: Option<Usage>,
    error: Value,
) -> Value {
    json!({
        "id": id,
        "object": "response",
        "created_at": ctx.created,
        "status": status,
        "error": error,
        "incomplete_details": null,
        "instructions": null,
        "model": ctx.model,
        "output": output,
        "parallel_tool_calls": true,
        "tool_choice": "auto",
        "tools": [],
        "store": false,
        "usage": usage.map(usage_json),
    })
}

/// Builds events with `type` and `sequence_number`.
struct Events {
    events: Vec<SseEvent>,
}

impl Events {
    fn push(&mut self, kind: &str, fields: Value) {
        let mut object = Map::new();
        object.insert("type".to_owned(), Value::from(kind));
        object.insert(
            "sequence_number".to_owned(),
            Value::from(self.events.len() as u64),
        );
        if let Value::Object(fields) = fields {
            object.extend(fields);
        }
        self.events
            .push(SseEvent::named(kind, &Value::Object(object)));
    }
}

/// The streamed answer; when `complete` is false it stops right after the
/// last text delta (a cut-off).
pub(crate) fn stream(ctx: &Ctx<'_>, answer: &Answer, complete: bool) -> Vec<SseEvent> {
    let response_id = ctx.id("resp_");
    let mut ev = Events { events: Vec::new() };
    let start = response_json(
        ctx,
        &response_id,
        "in_progress",
        Vec::new(),
        None,
        Value::Null,
    );
    ev.push("response.created", json!({ "response": start }));
    ev.push("response.in_progress", json!({ "response": start }));

    let mut output = Vec::new();
    for (output_index, item) in items(ctx, answer).iter().enumerate() {
        match item {
            Item::Reasoning { id, text } => {
                ev.push(
                    "response.output_item.added",
                    json!({"output_index": output_index, "item": {"id": id, "type": "reasoning", "summary": []}}),
                );
                ev.push(
                    "response.reasoning_summary_part.added",
                    json!({"item_id": id, "output_index": output_index, "summary_index": 0,
                           "part": {"type": "summary_text", "text": ""}}),
                );
                for delta in chunks(text, ctx.text_chunk_chars) {
                    ev.push(
                        "response.reasoning_summary_text.delta",
                        json!({"item_id": id, "output_index": output_index, "summary_index": 0, "delta": delta}),
                    );
                }
                ev.push(
                    "response.reasoning_summary_text.done",
                    json!({"item_id": id, "output_index": output_index, "summary_index": 0, "text": text}),
                );
                ev.push(
                    "response.reasoning_summary_part.done",
                    json!({"item_id": id, "output_index": output_index, "summary_index": 0,
                           "part": {"type": "summary_text", "text": text}}),
                );
            }
            Item::Message { id, text } => {
                ev.push(
                    "response.output_item.added",
                    json!({"output_index": output_index, "item": {"id": id, "type": "message",
                           "status": "in_progress", "role": "assistant", "content": []}}),
                );
                ev.push(
                    "response.content_part.added",
                    json!({"item_id": id, "output_index": output_index, "content_index": 0,
                           "part": {"type": "output_text", "text": "", "annotations": []}}),
                );
                for delta in chunks(text, ctx.text_chunk_chars) {
                    ev.push(
                        "response.output_text.delta",
                        json!({"item_id": id, "output_index": output_index, "content_index": 0,
                               "delta": delta, "logprobs": []}),
                    );
                }
                if !complete {
                    return ev.events;
                }
                ev.push(
                    "response.output_text.done",
                    json!({"item_id": id, "output_index": output_index, "content_index": 0,
                           "text": text, "logprobs": []}),
                );
                ev.push(
                    "response.content_part.done",
                    json!({"item_id": id, "output_index": output_index, "content_index": 0,
                           "part": {"type": "output_text", "text": text, "annotations": []}}),
                );
            }
            Item::FunctionCall {
                id,
                call_id,
                name,
                arguments,
            } => {
                ev.push(
                    "response.output_item.added",
                    json!({"output_index": output_index, "item": with_namespace(
                        json!({"id": id, "type": "function_call", "status": "in_progress",
                               "call_id": call_id, "arguments": ""}),
                        name,
                    )}),
                );
                for delta in chunks(arguments, TOOL_CHUNK_CHARS) {
                    ev.push(
                        "response.function_call_arguments.delta",
                        json!({"item_id": id, "output_index": output_index, "delta": delta}),
                    );
                }
                ev.push(
                    "response.function_call_arguments.done",
                    json!({"item_id": id, "output_index": output_index, "name": name, "arguments": arguments}),
                );
            }
        }
        let done = item.done_json();
        ev.push(
            "response.output_item.done",
            json!({"output_index": output_index, "item": done}),
        );
        output.push(done);
    }
    if !complete {
        return ev.events;
    }
    let completed = response_json(
        ctx,
        &response_id,
        "completed",
        output,
        Some(answer.usage()),
        Value::Null,
    );
    ev.push(
        "response.completed",
        json!({ "response": finished(completed, answer) }),
    );
    ev.events
}

/// The completed response object; for `NoFinishReason` without `status`
/// and `incomplete_details`.
fn finished(mut response: Value, answer: &Answer) -> Value {
    if answer.no_finish_reason
        && let Value::Object(object) = &mut response
    {
        object.remove("status");
        object.remove("incomplete_details");
    }
    response
}

/// The partial text, then an `error` event (no terminal `response.*`).
pub(crate) fn stream_error_envelope(
    ctx: &Ctx<'_>,
    partial: &Answer,
    envelope: &Envelope<'_>,
) -> Vec<SseEvent> {
    let mut ev = Events {
        events: stream(ctx, partial, false),
    };
    ev.push(
        "error",
        json!({
            "code": envelope.code,
            "message": envelope.message,
            "param": null,
            // Not sent by OpenAI: gateways (OpenRouter, LiteLLM) add the
            // HTTP status.
            "status": envelope.status,
        }),
    );
    ev.events
}

/// The OpenAI error body `{"error":{"message","type":CODE,"param":null,
/// "code":CODE}}` for the error status of a non-streamed envelope.
pub(crate) fn envelope_body(envelope: &Envelope<'_>) -> Value {
    json!({"error": {
        "message": envelope.message,
        "type": envelope.code,
        "param": null,
        "code": envelope.code,
    }})
}

/// A stream that starts and then fails with `response.failed`.
pub(crate) fn stream_error(ctx: &Ctx<'_>, message: &str) -> Vec<SseEvent> {
    let response_id = ctx.id("resp_");
    let mut ev = Events { events: Vec::new() };
    let start = response_json(
        ctx,
        &response_id,
        "in_progress",
        Vec::new(),
        None,
        Value::Null,
    );
    ev.push("response.created", json!({ "response": start }));
    ev.push("response.in_progress", json!({ "response": start }));
    let failed = response_json(
        ctx,
        &response_id,
        "failed",
        Vec::new(),
        None,
        json!({"code": "server_error", "message": message}),
    );
    ev.push("response.failed", json!({ "response": failed }));
    ev.events
}

/// The non-streaming answer: the completed response object.
pub(crate) fn body(ctx: &Ctx<'_>, answer: &Answer) -> Value {
    let output = items(ctx, answer).iter().map(Item::done_json).collect();
    let response = response_json(
        ctx,
        &ctx.id("resp_"),
        "completed",
        output,
        Some(answer.usage()),
        Value::Null,
    );
    finished(response, answer)
}

/// The error body for an HTTP error.
pub(crate) fn error_body(status: u16, message: &str) -> Value {
    openai_error_body(status, message)
}
