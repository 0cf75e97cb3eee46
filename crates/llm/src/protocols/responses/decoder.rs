//! The Responses stream decoder: a pure state machine from SSE items to
//! events (no I/O, no shared state).
//!
//! The event type is the JSON `type`, or the SSE `event:` name when a
//! gateway leaves `type` out. Every frame is turned into events, knowingly
//! ignored (lifecycle and progress events that carry nothing new), or, when
//! it does not parse, turned into a `malformed_response` error that ends the
//! stream. Unknown types are ignored for forward compatibility unless they
//! carry an `error` object.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

use crate::accumulator::ToolCallAccumulator;
use crate::error::LlmStreamError;
use crate::event::{
    HostedToolCall, HostedToolCallStatus, LlmCompletionMetadata, LlmStreamEvent,
    disjoint_prompt_tokens,
};
use crate::http::{WireDecoder, error_status, unparseable};
use crate::reasoning::{ReasoningContentPart, ReasoningText};
use crate::sse::SseItem;

use super::request::REASONING_PROVIDER;

/// Output item types the provider runs itself.
const HOSTED_TOOLS: &[&str] = &[
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_call",
    "mcp_list_tools",
    "tool_search_call",
];

/// Output item types the client would have to run, which this protocol does
/// not support (they are reported with a warning, never dispatched).
const UNSUPPORTED_CLIENT_ITEMS: &[&str] = &[
    "computer_call",
    "local_shell_call",
    "custom_tool_call",
    "mcp_approval_request",
];

/// Event types that carry nothing an event does not already say.
const NO_OP_TYPES: &[&str] = &[
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.annotation.added",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "keepalive",
    "ping",
];

/// Which streamed text a `(kind, item, index)` key belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Part {
    Text,
    Refusal,
    Reasoning,
    Summary,
}

/// The decoder state of one response.
#[derive(Debug)]
pub(crate) struct ResponsesDecoder {
    /// The model the call asked for.
    model: String,
    response_id: Option<String>,
    response_model: Option<String>,
    calls: ToolCallAccumulator,
    /// Function-call keys (item id) and call ids already emitted in
    /// `ToolCalls`; later frames for them are ignored.
    finished_calls: HashSet<String>,
    /// Function-call keys fed to the accumulator and not yet taken.
    open_calls: HashSet<String>,
    /// Keys discarded at an ending that does not keep calls, and how many of
    /// them `response.output` then listed as completed (not dropped after all).
    discarded_calls: HashSet<String>,
    rescued_calls: u32,
    /// Calls `response.output` lists as not completed that the stream never
    /// opened (dropped without passing through the accumulator).
    unseen_dropped_calls: u32,
    /// `output_index` → item key, for frames without an `item_id`.
    item_keys: BTreeMap<u64, String>,
    /// Text parts that streamed at least one delta.
    streamed: HashSet<(Part, String, u64)>,
    /// Any assistant text or refusal was streamed.
    any_text: bool,
    /// Reasoning item ids already emitted.
    reasoning_items: HashSet<String>,
    any_reasoning_item: bool,
    /// Hosted tool item ids already counted, and the counts per kind.
    hosted_seen: HashSet<String>,
    hosted_counts: BTreeMap<String, u32>,
    /// The model refused (`response.refusal.*`).
    refused: bool,
    /// A terminal event was emitted: nothing more is.
    terminated: bool,
}

impl ResponsesDecoder {
    /// A decoder for a call to `model`.
    pub(crate) fn new(model: String) -> Self {
        ResponsesDecoder {
            model,
            response_id: None,
            response_model: None,
            calls: ToolCallAccumulator::new(),
            finished_calls: HashSet::new(),
            open_calls: HashSet::new(),
            discarded_calls: HashSet::new(),
            rescued_calls: 0,
            unseen_dropped_calls: 0,
            item_keys: BTreeMap::new(),
            streamed: HashSet::new(),
            any_text: false,
            reasoning_items: HashSet::new(),
            any_reasoning_item: false,
            hosted_seen: HashSet::new(),
            hosted_counts: BTreeMap::new(),
            refused: false,
            terminated: false,
        }
    }

    fn terminate(&mut self, event: LlmStreamEvent, out: &mut Vec<LlmStreamEvent>) {
        out.push(event);
        self.terminated = true;
    }

    fn event(&mut self, kind: &str, value: &Value, out: &mut Vec<LlmStreamEvent>) {
        match kind {
            "response.output_text.delta" => self.delta(Part::Text, value, out),
            "response.refusal.delta" => {
                self.refused = true;
                self.delta(Part::Refusal, value, out);
            }
            "response.reasoning_text.delta" | "response.reasoning.delta" => {
                self.delta(Part::Reasoning, value, out);
            }
            "response.reasoning_summary_text.delta" => self.delta(Part::Summary, value, out),
            "response.output_text.done" => self.part_done(Part::Text, value, "text", out),
            "response.refusal.done" => {
                self.refused = true;
                self.part_done(Part::Refusal, value, "refusal", out);
            }
            "response.reasoning_text.done" | "response.reasoning.done" => {
                self.part_done(Part::Reasoning, value, "text", out);
            }
            "response.reasoning_summary_text.done" => {
                self.part_done(Part::Summary, value, "text", out);
            }
            "response.output_item.added" => self.item_added(value, out),
            "response.output_item.done" => self.item_done(value, out),
            "response.function_call_arguments.delta" => self.arguments_delta(value, out),
            "response.function_call_arguments.done" => self.arguments_done(value),
            "response.completed" | "response.incomplete" | "response.done" => {
                self.completed(kind, value, out);
            }
            "response.failed" => {
                let response = value.get("response").unwrap_or(&Value::Null);
                self.note_response(response);
                let error = failed_error(response);
                self.terminate(LlmStreamEvent::Error(error), out);
            }
            "error" => {
                let error = error_event(value);
                self.terminate(LlmStreamEvent::Error(error), out);
            }
            _ if NO_OP_TYPES.contains(&kind) => {
                if let Some(response) = value.get("response") {
                    self.note_response(response);
                }
            }
            _ if is_hosted_progress(kind) => {
                tracing::debug!(kind, "hosted tool progress (reported from its output item)");
            }
            _ if value.get("error").is_some_and(|error| !error.is_null()) => {
                let error = error_event(value);
                self.terminate(LlmStreamEvent::Error(error), out);
            }
            _ => tracing::debug!(kind, "unknown Responses event ignored"),
        }
    }

    /// Records the response id and served model.
    fn note_response(&mut self, response: &Value) {
        if let Some(id) = str_field(response, "id") {
            self.response_id = Some(id.to_owned());
        }
        if let Some(model) = str_field(response, "model") {
            self.response_model = Some(model.to_owned());
        }
    }

    /// The key of the item a frame refers to: its `item_id`, else the item
    /// announced at its `output_index`.
    fn frame_key(&self, value: &Value) -> String {
        if let Some(id) = str_field(value, "item_id") {
            return id.to_owned();
        }
        match value.get("output_index").and_then(Value::as_u64) {
            Some(index) => self
                .item_keys
                .get(&index)
                .cloned()
                .unwrap_or_else(|| format!("#{index}")),
            None => String::new(),
        }
    }

    fn part_key(&self, part: Part, value: &Value) -> (Part, String, u64) {
        let index_field = if part == Part::Summary {
            "summary_index"
        } else {
            "content_index"
        };
        let index = value.get(index_field).and_then(Value::as_u64).unwrap_or(0);
        (part, self.frame_key(value), index)
    }

    /// A streamed piece of text, refusal or reasoning.
    fn delta(&mut self, part: Part, value: &Value, out: &mut Vec<LlmStreamEvent>) {
        let Some(delta) = str_field(value, "delta") else {
            return;
        };
        let key = self.part_key(part, value);
        self.push_text(key, delta, out);
    }

    /// A finished text part: its text is emitted only when no delta streamed
    /// it (gateways that send only the `.done` frame).
    fn part_done(&mut self, part: Part, value: &Value, field: &str, out: &mut Vec<LlmStreamEvent>) {
        let key = self.part_key(part, value);
        if self.streamed.contains(&key) {
            return;
        }
        if let Some(text) = str_field(value, field) {
            self.push_text(key, text, out);
        }
    }

    fn push_text(&mut self, key: (Part, String, u64), text: &str, out: &mut Vec<LlmStreamEvent>) {
        if text.is_empty() {
            return;
        }
        let part = key.0;
        let first_of_later_summary =
            part == Part::Summary && key.2 > 0 && !self.streamed.contains(&key);
        self.streamed.insert(key);
        match part {
            Part::Text | Part::Refusal => {
                self.any_text = true;
                out.push(LlmStreamEvent::TextDelta(text.to_owned()));
            }
            Part::Reasoning => out.push(LlmStreamEvent::ReasoningDelta {
                delta: text.to_owned(),
                summary: false,
            }),
            Part::Summary => {
                // Summary parts are joined by a blank line in the item's
                // display text; the deltas add up to the same.
                let delta = if first_of_later_summary {
                    format!("\n\n{text}")
                } else {
                    text.to_owned()
                };
                out.push(LlmStreamEvent::ReasoningDelta {
                    delta,
                    summary: true,
                });
            }
        }
    }

    fn item_added(&mut self, value: &Value, out: &mut Vec<LlmStreamEvent>) {
        let item = value.get("item").unwrap_or(&Value::Null);
        let kind = str_field(item, "type").unwrap_or("");
        let output_index = value.get("output_index").and_then(Value::as_u64);
        let key = item_key(item, output_index);
        if let Some(index) = output_index {
            self.item_keys.insert(index, key.clone());
        }
        match kind {
            "function_call" => {
                if self.call_finished(&key, item) {
                    return;
                }
                let arguments = arguments_text(item).unwrap_or_default();
                self.open_calls.insert(key.clone());
                let delta = self.calls.delta(
                    &key,
                    str_field(item, "call_id"),
                    str_field(item, "name"),
                    &arguments,
                );
                out.push(LlmStreamEvent::ToolCallDelta(delta));
            }
            kind if HOSTED_TOOLS.contains(&kind) => self.hosted(kind, &key, item, out),
            _ => {}
        }
    }

    fn item_done(&mut self, value: &Value, out: &mut Vec<LlmStreamEvent>) {
        let item = value.get("item").unwrap_or(&Value::Null);
        let kind = str_field(item, "type").unwrap_or("");
        let output_index = value.get("output_index").and_then(Value::as_u64);
        let key = item_key(item, output_index);
        match kind {
            "function_call" => {
                let status = str_field(item, "status");
                if !matches!(status, None | Some("completed")) {
                    // A truncated call is never executed: it stays pending
                    // and unfinished, and the terminal event decides.
                    tracing::debug!(?status, "function_call item done without completing");
                    return;
                }
                if self.finish_call(&key, item) {
                    self.take_calls(out);
                }
            }
            "reasoning" => self.reasoning_item(item, out),
            "message" => self.message_item(&key, item, out),
            kind if HOSTED_TOOLS.contains(&kind) => self.hosted(kind, &key, item, out),
            kind if UNSUPPORTED_CLIENT_ITEMS.contains(&kind) => {
                tracing::warn!(kind, "output item the protocol cannot dispatch ignored");
            }
            kind => tracing::debug!(kind, "output item of unknown type ignored"),
        }
    }

    /// True when the call was already emitted (by item key or call id).
    fn call_finished(&self, key: &str, item: &Value) -> bool {
        self.finished_calls.contains(key)
            || str_field(item, "call_id").is_some_and(|id| self.finished_calls.contains(id))
    }

    /// Folds a finished function-call item in with its authoritative
    /// arguments; false when it was already emitted.
    fn finish_call(&mut self, key: &str, item: &Value) -> bool {
        if self.call_finished(key, item) {
            return false;
        }
        let call_id = str_field(item, "call_id");
        let name = str_field(item, "name");
        if self.discarded_calls.remove(key) {
            self.rescued_calls += 1;
        }
        self.open_calls.insert(key.to_owned());
        match arguments_text(item) {
            Some(arguments) => self
                .calls
                .complete_arguments(key, call_id, name, &arguments),
            None => {
                let _ = self.calls.delta(key, call_id, name, "");
                self.calls.finish(key);
            }
        }
        self.finished_calls.insert(key.to_owned());
        if let Some(call_id) = call_id {
            self.finished_calls.insert(call_id.to_owned());
        }
        true
    }

    fn arguments_delta(&mut self, value: &Value, out: &mut Vec<LlmStreamEvent>) {
        let key = self.frame_key(value);
        if self.finished_calls.contains(&key) {
            tracing::debug!("argument delta for a finished call ignored");
            return;
        }
        let Some(delta) = str_field(value, "delta") else {
            return;
        };
        self.open_calls.insert(key.clone());
        let delta = self.calls.delta(&key, None, None, delta);
        out.push(LlmStreamEvent::ToolCallDelta(delta));
    }

    fn arguments_done(&mut self, value: &Value) {
        let key = self.frame_key(value);
        if self.finished_calls.contains(&key) {
            return;
        }
        if let Some(arguments) = arguments_text(value) {
            self.open_calls.insert(key.clone());
            self.calls
                .complete_arguments(&key, None, str_field(value, "name"), &arguments);
        }
    }

    /// Emits the full set when calls were added since the last time.
    fn take_calls(&mut self, out: &mut Vec<LlmStreamEvent>) {
        self.open_calls.clear();
        if let Some(calls) = self.calls.take() {
            out.push(LlmStreamEvent::ToolCalls(calls));
        }
    }

    fn reasoning_item(&mut self, item: &Value, out: &mut Vec<LlmStreamEvent>) {
        let id = str_field(item, "id");
        if let Some(id) = id
            && !self.reasoning_items.insert(id.to_owned())
        {
            return;
        }
        let mut part = ReasoningContentPart::opaque(REASONING_PROVIDER);
        if let Some(id) = id {
            part = part.with_item_id(id);
        }
        if let Some(encrypted) = str_field(item, "encrypted_content") {
            part = part.with_encrypted(encrypted);
        }
        let parts: Vec<String> = item
            .get("summary")
            .and_then(Value::as_array)
            .map(|summary| {
                summary
                    .iter()
                    .filter_map(|entry| str_field(entry, "text"))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if !parts.is_empty() {
            part = part.with_text(ReasoningText::Summary { parts });
        }
        // Raw reasoning `content` is deliberately not kept (never persisted).
        if part.has_replay_state() || part.text.is_some() {
            self.any_reasoning_item = true;
            out.push(LlmStreamEvent::ReasoningItem(part));
        }
    }

    /// A finished message item: content parts no delta or `.done` frame
    /// streamed are emitted now.
    fn message_item(&mut self, key: &str, item: &Value, out: &mut Vec<LlmStreamEvent>) {
        let Some(content) = item.get("content").and_then(Value::as_array) else {
            return;
        };
        for (index, entry) in content.iter().enumerate() {
            let (part, field) = match str_field(entry, "type") {
                Some("output_text") => (Part::Text, "text"),
                Some("refusal") => {
                    self.refused = true;
                    (Part::Refusal, "refusal")
                }
                _ => continue,
            };
            let part_key = (part, key.to_owned(), index as u64);
            if self.streamed.contains(&part_key) {
                continue;
            }
            if let Some(text) = str_field(entry, field) {
                self.push_text(part_key, text, out);
            }
        }
    }

    fn hosted(&mut self, kind: &str, key: &str, item: &Value, out: &mut Vec<LlmStreamEvent>) {
        let status = match str_field(item, "status") {
            Some("completed") => HostedToolCallStatus::Completed,
            Some("failed" | "incomplete") => HostedToolCallStatus::Failed,
            _ => HostedToolCallStatus::InProgress,
        };
        self.count_hosted(kind, key);
        out.push(LlmStreamEvent::HostedToolCall(HostedToolCall::new(
            key,
            kind,
            status,
            hosted_summary(item),
        )));
    }

    fn count_hosted(&mut self, kind: &str, key: &str) {
        if self.hosted_seen.insert(key.to_owned()) {
            *self.hosted_counts.entry(kind.to_owned()).or_insert(0) += 1;
        }
    }

    /// `response.completed` / `.incomplete` / `.done`: reconcile the output,
    /// then `Done` (or `Error` for a failed response).
    fn completed(&mut self, kind: &str, value: &Value, out: &mut Vec<LlmStreamEvent>) {
        let response = value.get("response").unwrap_or(&Value::Null);
        self.note_response(response);
        let status = match str_field(response, "status") {
            Some(status) => Some(status),
            None if kind == "response.incomplete" => Some("incomplete"),
            None => None,
        };
        if status == Some("failed") {
            let error = failed_error(response);
            self.terminate(LlmStreamEvent::Error(error), out);
            return;
        }
        let incomplete_reason = response
            .get("incomplete_details")
            .and_then(|details| str_field(details, "reason"));
        let (mut finish_reason, provider_reason) = match status {
            None => (None, None),
            Some("completed") => (
                self.refused.then(|| "content_filter".to_owned()),
                Some("completed".to_owned()),
            ),
            Some("incomplete") => {
                let raw = incomplete_reason.unwrap_or("incomplete");
                let normalized = match raw {
                    "max_output_tokens" | "max_tokens" => "length",
                    other => other,
                };
                (Some(normalized.to_owned()), Some(raw.to_owned()))
            }
            Some(other) => (Some(other.to_owned()), Some(other.to_owned())),
        };
        // Calls still open survive only an ending that finishes them
        // (`completed`, or no status); after `length`, `content_filter` …
        // only the ones `response.output` lists as completed do.
        let keep_pending = finish_reason.is_none() && matches!(status, None | Some("completed"));
        if !keep_pending {
            self.calls.discard_pending();
            self.discarded_calls.extend(self.open_calls.drain());
        }
        self.reconcile(response, keep_pending, out);
        self.take_calls(out);
        if status == Some("completed") && finish_reason.is_none() {
            let ended_with_calls = !self.calls.emitted().is_empty();
            finish_reason = Some(
                if ended_with_calls {
                    "tool_calls"
                } else {
                    "stop"
                }
                .to_owned(),
            );
        }
        let mut metadata = LlmCompletionMetadata::default();
        if let Some(usage) = response.get("usage").filter(|usage| usage.is_object()) {
            apply_usage(&mut metadata, usage);
        }
        metadata.model = Some(self.model.clone());
        metadata.response_model = self.response_model.clone();
        metadata.response_id = self.response_id.clone();
        metadata.finish_reason = finish_reason;
        metadata.provider_finish_reason = provider_reason;
        metadata.hosted_tool_calls = self.hosted_counts.clone();
        metadata.tool_calls_dropped =
            (self.calls.dropped() + self.unseen_dropped_calls).saturating_sub(self.rescued_calls);
        self.terminate(LlmStreamEvent::done(metadata), out);
    }

    /// Emits what `response.output` holds that the stream did not announce:
    /// reasoning items, message text (only when no text streamed at all),
    /// function calls (completed ones, or ones without status when the
    /// ending keeps calls), hosted tool counts.
    fn reconcile(&mut self, response: &Value, keep_pending: bool, out: &mut Vec<LlmStreamEvent>) {
        let Some(output) = response.get("output").and_then(Value::as_array) else {
            return;
        };
        let text_streamed = self.any_text;
        let reasoning_streamed = self.any_reasoning_item;
        for (index, item) in output.iter().enumerate() {
            let key = item_key(item, Some(index as u64));
            match str_field(item, "type").unwrap_or("") {
                "function_call" => {
                    let status = str_field(item, "status");
                    let usable = status == Some("completed") || (status.is_none() && keep_pending);
                    if usable {
                        self.finish_call(&key, item);
                    } else if !self.call_finished(&key, item)
                        && !self.open_calls.contains(&key)
                        && !self.discarded_calls.contains(&key)
                    {
                        tracing::warn!(
                            ?status,
                            "truncated tool call in the response output dropped"
                        );
                        self.unseen_dropped_calls += 1;
                    }
                }
                "reasoning" if str_field(item, "id").is_some() || !reasoning_streamed => {
                    self.reasoning_item(item, out);
                }
                "message" if !text_streamed => self.message_item(&key, item, out),
                kind if HOSTED_TOOLS.contains(&kind) => self.count_hosted(kind, &key),
                _ => {}
            }
        }
    }
}

impl WireDecoder for ResponsesDecoder {
    fn item(&mut self, item: SseItem, out: &mut Vec<LlmStreamEvent>) {
        if self.terminated {
            tracing::debug!("Responses frame after the terminal event ignored");
            return;
        }
        let (event, data) = match item {
            SseItem::Frame(frame) => (frame.event, frame.data),
            SseItem::Stray(line) => {
                // Not an SSE field. A bare JSON object (a gateway's error
                // body) is read like a frame; anything else is noise.
                let line = line.trim();
                if serde_json::from_str::<Value>(line).is_ok_and(|value| value.is_object()) {
                    (None, line.to_owned())
                } else {
                    tracing::warn!(
                        bytes = line.len(),
                        "non-SSE line in a Responses stream ignored"
                    );
                    return;
                }
            }
        };
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return;
        }
        let value = match serde_json::from_str::<Value>(data) {
            Ok(value) => value,
            Err(error) => {
                let event = unparseable("Responses event", data, &error);
                self.terminate(event, out);
                return;
            }
        };
        if !value.is_object() {
            let preview: String = data.chars().take(200).collect();
            let error = LlmStreamError::provider(
                Some("malformed_response"),
                None,
                format!("Responses event is not a JSON object (frame starts: {preview})"),
            );
            self.terminate(LlmStreamEvent::Error(error), out);
            return;
        }
        let kind = str_field(&value, "type")
            .map(str::to_owned)
            .or(event)
            .unwrap_or_default();
        self.event(&kind, &value, out);
    }

    fn finish(&mut self, _out: &mut Vec<LlmStreamEvent>) {
        if !self.terminated {
            tracing::debug!("Responses stream ended without a terminal event");
        }
    }
}

/// A non-empty string field.
fn str_field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// An output item's key: its id, else its call id, else its position.
fn item_key(item: &Value, output_index: Option<u64>) -> String {
    str_field(item, "id")
        .or_else(|| str_field(item, "call_id"))
        .map(str::to_owned)
        .or_else(|| output_index.map(|index| format!("#{index}")))
        .unwrap_or_default()
}

/// `arguments` as text (gateways sometimes send an object).
fn arguments_text(value: &Value) -> Option<String> {
    match value.get("arguments")? {
        Value::String(text) => Some(text.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// `response.web_search_call.searching`, `response.mcp_call_arguments.delta` …
fn is_hosted_progress(kind: &str) -> bool {
    kind.strip_prefix("response.").is_some_and(|rest| {
        HOSTED_TOOLS
            .iter()
            .any(|tool| rest.starts_with(tool) && rest[tool.len()..].starts_with(['.', '_']))
    })
}

/// A short description of a hosted call: the search query, the MCP tool.
fn hosted_summary(item: &Value) -> Option<String> {
    let action = item.get("action").unwrap_or(&Value::Null);
    str_field(action, "query")
        .or_else(|| str_field(item, "query"))
        .or_else(|| str_field(item, "name"))
        .map(str::to_owned)
        .or_else(|| {
            let queries: Vec<&str> = item
                .get("queries")
                .and_then(Value::as_array)?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            (!queries.is_empty()).then(|| queries.join("; "))
        })
}

/// The error of a failed response object.
fn failed_error(response: &Value) -> LlmStreamError {
    let error = response.get("error").unwrap_or(&Value::Null);
    let code = str_field(error, "code").unwrap_or("processing_error");
    let message = str_field(error, "message").unwrap_or("the response failed");
    LlmStreamError::provider(Some(code), error_status(error), message)
}

/// An `error` event (OpenAI: flat `code`/`message`/`param`; gateways add
/// `status`), or any frame with an `error` object or string.
fn error_event(value: &Value) -> LlmStreamError {
    let nested = value.get("error").filter(|error| !error.is_null());
    if let Some(Value::String(message)) = nested {
        return LlmStreamError::provider(None::<String>, error_status(value), message.clone());
    }
    let (code, message) = match nested {
        // `{"error": {"code"|"type", "message"}}`: `type` is the code's
        // fallback (Anthropic-style envelopes behind a gateway).
        Some(error) => (
            str_field(error, "code").or_else(|| str_field(error, "type")),
            str_field(error, "message").or_else(|| str_field(value, "message")),
        ),
        // Flat: the `type` is the event's (`error`), not a code.
        None => (str_field(value, "code"), str_field(value, "message")),
    };
    LlmStreamError::provider(
        code,
        error_status(value),
        message.unwrap_or("the provider reported an error in the stream"),
    )
}

/// Usage: `input_tokens` includes the cached tokens (and, at gateways that
/// report them, cache writes), so the buckets are made disjoint.
fn apply_usage(metadata: &mut LlmCompletionMetadata, usage: &Value) {
    let number = |value: &Value, key: &str| {
        value
            .get(key)
            .and_then(Value::as_u64)
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    };
    let input_details = usage.get("input_tokens_details").unwrap_or(&Value::Null);
    let output_details = usage.get("output_tokens_details").unwrap_or(&Value::Null);
    let cache_read = number(input_details, "cached_tokens");
    let cache_write = number(input_details, "cache_write_tokens");
    let input = number(usage, "input_tokens");
    let output = number(usage, "output_tokens");
    metadata.prompt_tokens = input.map(|input| {
        disjoint_prompt_tokens(input, cache_read).saturating_sub(cache_write.unwrap_or(0))
    });
    metadata.cache_read_tokens = cache_read;
    metadata.cache_creation_tokens = cache_write;
    metadata.completion_tokens = output;
    metadata.reasoning_tokens = number(output_details, "reasoning_tokens");
    metadata.total_tokens = number(usage, "total_tokens").or(match (input, output) {
        (Some(input), Some(output)) => Some(input.saturating_add(output)),
        _ => None,
    });
    metadata.provider_cost_usd = usage.get("cost").and_then(Value::as_f64);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::ToolCall;
    use crate::sse::SseFrame;

    fn frame(value: &Value) -> SseItem {
        SseItem::Frame(SseFrame {
            event: value["type"].as_str().map(str::to_owned),
            data: value.to_string(),
        })
    }

    fn raw(data: &str) -> SseItem {
        SseItem::Frame(SseFrame {
            event: None,
            data: data.to_owned(),
        })
    }

    fn decode(items: Vec<SseItem>) -> Vec<LlmStreamEvent> {
        let mut decoder = ResponsesDecoder::new("gpt-test".into());
        let mut out = Vec::new();
        for item in items {
            decoder.item(item, &mut out);
        }
        decoder.finish(&mut out);
        out
    }

    fn frames(values: &[Value]) -> Vec<LlmStreamEvent> {
        decode(values.iter().map(frame).collect())
    }

    fn completed(status: Option<&str>, output: Value) -> Value {
        let mut response = json!({
            "id": "resp_1", "model": "gpt-test-2025", "output": output,
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 20},
                      "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 3},
                      "total_tokens": 110},
        });
        if let Some(status) = status {
            response["status"] = json!(status);
        }
        json!({"type": "response.completed", "response": response})
    }

    fn incomplete(reason: &str, output: Value) -> Value {
        json!({"type": "response.incomplete", "response": {
            "id": "resp_1", "status": "incomplete", "output": output,
            "incomplete_details": {"reason": reason},
        }})
    }

    fn done(events: &[LlmStreamEvent]) -> &LlmCompletionMetadata {
        match events.last() {
            Some(LlmStreamEvent::Done(metadata)) => metadata,
            other => panic!("expected Done last, got {other:?}"),
        }
    }

    fn error(events: &[LlmStreamEvent]) -> &LlmStreamError {
        match events.last() {
            Some(LlmStreamEvent::Error(error)) => error,
            other => panic!("expected Error last, got {other:?}"),
        }
    }

    fn text_delta(item: &str, delta: &str) -> Value {
        json!({"type": "response.output_text.delta", "item_id": item, "output_index": 0,
               "content_index": 0, "delta": delta})
    }

    fn call_added(item: &str, call: &str, name: &str) -> Value {
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"id": item, "type": "function_call", "status": "in_progress",
                        "call_id": call, "name": name, "arguments": ""}})
    }

    fn args_delta(item: &str, delta: &str) -> Value {
        json!({"type": "response.function_call_arguments.delta", "item_id": item,
               "output_index": 0, "delta": delta})
    }

    fn call_item(item: &str, call: &str, name: &str, arguments: &str) -> Value {
        json!({"id": item, "type": "function_call", "status": "completed", "call_id": call,
               "name": name, "arguments": arguments})
    }

    #[test]
    fn text_then_completed_with_disjoint_usage() {
        let events = frames(&[
            json!({"type": "response.created", "response": {"id": "resp_1", "model": "m", "status": "in_progress"}}),
            text_delta("msg_1", "Hel"),
            text_delta("msg_1", ""),
            text_delta("msg_1", "lo"),
            json!({"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0,
                   "content_index": 0, "text": "Hello"}),
            completed(
                Some("completed"),
                json!([{"id": "msg_1", "type": "message",
                "content": [{"type": "output_text", "text": "Hello"}]}]),
            ),
        ]);
        assert_eq!(events[0], LlmStreamEvent::TextDelta("Hel".into()));
        assert_eq!(events[1], LlmStreamEvent::TextDelta("lo".into()));
        assert_eq!(events.len(), 3, "{events:?}");
        let meta = done(&events);
        assert_eq!(meta.finish_reason.as_deref(), Some("stop"));
        assert_eq!(meta.provider_finish_reason.as_deref(), Some("completed"));
        assert_eq!(meta.prompt_tokens, Some(80));
        assert_eq!(meta.cache_read_tokens, Some(20));
        assert_eq!(meta.completion_tokens, Some(10));
        assert_eq!(meta.reasoning_tokens, Some(3));
        assert_eq!(meta.total_tokens, Some(110));
        assert_eq!(meta.model.as_deref(), Some("gpt-test"));
        assert_eq!(meta.response_model.as_deref(), Some("gpt-test-2025"));
        assert_eq!(meta.response_id.as_deref(), Some("resp_1"));
        assert_eq!(meta.tool_calls_dropped, 0);
    }

    #[test]
    fn malformed_json_frame_is_an_error_and_ends_the_stream() {
        let events = decode(vec![
            frame(&text_delta("msg_1", "Hi")),
            raw("{\"type\": \"response.output_text.delta\", \"delta\": "),
            frame(&text_delta("msg_1", "more")),
            frame(&completed(Some("completed"), json!([]))),
        ]);
        assert_eq!(events.len(), 2, "{events:?}");
        let error = error(&events);
        assert_eq!(error.code.as_deref(), Some("malformed_response"));
        assert_eq!(error.kind(), crate::LlmErrorKind::MalformedResponse);
        let not_object = decode(vec![raw("[1, 2]")]);
        assert_eq!(error_code(&not_object), Some("malformed_response"));
    }

    fn error_code(events: &[LlmStreamEvent]) -> Option<&str> {
        error(events).code.as_deref()
    }

    #[test]
    fn nothing_after_the_terminal_event() {
        let events = frames(&[
            text_delta("msg_1", "Hi"),
            completed(Some("completed"), json!([])),
            text_delta("msg_1", "late"),
            json!({"type": "error", "code": "server_error", "message": "late"}),
            completed(Some("completed"), json!([])),
        ]);
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(matches!(events[1], LlmStreamEvent::Done(_)));
    }

    #[test]
    fn finished_call_with_invalid_json_degrades_to_empty_object() {
        let events = frames(&[
            call_added("fc_1", "call_1", "run"),
            args_delta("fc_1", "{\"cmd\": "),
            json!({"type": "response.function_call_arguments.done", "item_id": "fc_1",
                   "output_index": 0, "arguments": "{\"cmd\": "}),
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": call_item("fc_1", "call_1", "run", "{\"cmd\": ")}),
            completed(
                Some("completed"),
                json!([call_item("fc_1", "call_1", "run", "{\"cmd\": ")]),
            ),
        ]);
        assert_eq!(
            events[0],
            LlmStreamEvent::ToolCallDelta(crate::ToolCallDelta::new(
                0,
                Some("call_1".into()),
                Some("run".into()),
                ""
            ))
        );
        assert_eq!(
            events[1],
            LlmStreamEvent::ToolCallDelta(crate::ToolCallDelta::new(
                0,
                Some("call_1".into()),
                Some("run".into()),
                "{\"cmd\": "
            ))
        );
        assert_eq!(
            events[2],
            LlmStreamEvent::ToolCalls(vec![ToolCall::new("call_1", "run", json!({}))])
        );
        assert_eq!(
            events.len(),
            4,
            "reconciling must not repeat the call: {events:?}"
        );
        let meta = done(&events);
        assert_eq!(meta.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(meta.tool_calls_dropped, 0);
    }

    #[test]
    fn authoritative_arguments_replace_the_streamed_ones() {
        let events = frames(&[
            call_added("fc_1", "call_1", "run"),
            args_delta("fc_1", "{\"garbled"),
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": call_item("fc_1", "call_1", "run", "{\"cmd\":\"ls\"}")}),
            completed(Some("completed"), json!([])),
        ]);
        assert_eq!(
            events[2],
            LlmStreamEvent::ToolCalls(vec![ToolCall::new("call_1", "run", json!({"cmd": "ls"}))])
        );
    }

    #[test]
    fn unfinished_call_with_invalid_json_is_dropped_and_counted() {
        let events = frames(&[
            call_added("fc_1", "call_1", "run"),
            args_delta("fc_1", "{\"cmd\": "),
            completed(Some("completed"), json!([])),
        ]);
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, LlmStreamEvent::ToolCalls(_))),
            "{events:?}"
        );
        let meta = done(&events);
        assert_eq!(meta.tool_calls_dropped, 1);
        assert_eq!(meta.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn unfinished_call_with_valid_json_survives_a_completed_response() {
        let events = frames(&[
            call_added("fc_1", "call_1", "run"),
            args_delta("fc_1", "{}"),
            completed(Some("completed"), json!([])),
        ]);
        assert_eq!(
            events[2],
            LlmStreamEvent::ToolCalls(vec![ToolCall::new("call_1", "run", json!({}))])
        );
        assert_eq!(done(&events).finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn length_ending_discards_pending_calls() {
        let events = frames(&[
            call_added("fc_1", "call_1", "run"),
            args_delta("fc_1", "{\"a\":1}"),
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"id": "fc_1", "type": "function_call", "status": "incomplete",
                            "call_id": "call_1", "name": "run", "arguments": "{\"a\":1}"}}),
            incomplete("max_output_tokens", json!([])),
        ]);
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, LlmStreamEvent::ToolCalls(_))),
            "{events:?}"
        );
        let meta = done(&events);
        assert_eq!(meta.finish_reason.as_deref(), Some("length"));
        assert_eq!(
            meta.provider_finish_reason.as_deref(),
            Some("max_output_tokens")
        );
        assert_eq!(meta.tool_calls_dropped, 1);
    }

    #[test]
    fn length_ending_keeps_calls_the_output_lists_as_completed() {
        let events = frames(&[
            call_added("fc_1", "call_1", "first"),
            args_delta("fc_1", "{\"a\":1}"),
            incomplete(
                "max_output_tokens",
                json!([
                    call_item("fc_1", "call_1", "first", "{\"a\":1}"),
                    {"id": "fc_2", "type": "function_call", "status": "incomplete",
                     "call_id": "call_2", "name": "second", "arguments": "{\"b\""},
                ]),
            ),
        ]);
        let calls: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                LlmStreamEvent::ToolCalls(calls) => Some(calls.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            calls,
            vec![vec![ToolCall::new("call_1", "first", json!({"a": 1}))]]
        );
        let meta = done(&events);
        assert_eq!(meta.finish_reason.as_deref(), Some("length"));
        // fc_1 was discarded with the pending calls and then rescued; the
        // truncated fc_2 is the one dropped.
        assert_eq!(meta.tool_calls_dropped, 1);
    }

    #[test]
    fn content_filter_ending_discards_pending_calls() {
        let events = frames(&[
            call_added("fc_1", "call_1", "run"),
            args_delta("fc_1", "{}"),
            incomplete("content_filter", json!([])),
        ]);
        let meta = done(&events);
        assert_eq!(meta.finish_reason.as_deref(), Some("content_filter"));
        assert_eq!(meta.tool_calls_dropped, 1);
    }

    #[test]
    fn calls_only_in_the_terminal_output_are_emitted_before_done() {
        let events = frames(&[completed(
            Some("completed"),
            json!([
                {"id": "msg_1", "type": "message", "content": [{"type": "output_text", "text": "Calling."}]},
                call_item("fc_1", "call_1", "a", "{\"x\":1}"),
                call_item("fc_2", "call_2", "b", "{}"),
            ]),
        )]);
        assert_eq!(events[0], LlmStreamEvent::TextDelta("Calling.".into()));
        assert_eq!(
            events[1],
            LlmStreamEvent::ToolCalls(vec![
                ToolCall::new("call_1", "a", json!({"x": 1})),
                ToolCall::new("call_2", "b", json!({})),
            ])
        );
        assert_eq!(done(&events).finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(events.len(), 3);
    }

    #[test]
    fn parallel_calls_each_emit_the_full_set() {
        let events = frames(&[
            call_added("fc_1", "call_1", "a"),
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": call_item("fc_1", "call_1", "a", "{}")}),
            json!({"type": "response.output_item.added", "output_index": 1,
                   "item": {"id": "fc_2", "type": "function_call", "call_id": "call_2", "name": "b", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{\"y\":2}"}),
            json!({"type": "response.output_item.done", "output_index": 1,
                   "item": call_item("fc_2", "call_2", "b", "{\"y\":2}")}),
            completed(
                Some("completed"),
                json!([
                    call_item("fc_1", "call_1", "a", "{}"),
                    call_item("fc_2", "call_2", "b", "{\"y\":2}")
                ]),
            ),
        ]);
        let sets: Vec<usize> = events
            .iter()
            .filter_map(|e| match e {
                LlmStreamEvent::ToolCalls(calls) => Some(calls.len()),
                _ => None,
            })
            .collect();
        assert_eq!(sets, vec![1, 2]);
        // The delta keyed by output_index only lands on the second call.
        assert!(events.iter().any(|e| matches!(e,
            LlmStreamEvent::ToolCallDelta(d) if d.index == 1 && d.arguments == "{\"y\":2}")));
    }

    #[test]
    fn missing_status_means_no_finish_reason() {
        let events = frames(&[text_delta("msg_1", "Hi"), completed(None, json!([]))]);
        let meta = done(&events);
        assert_eq!(meta.finish_reason, None);
        assert_eq!(meta.provider_finish_reason, None);
    }

    #[test]
    fn error_event_keeps_code_and_gateway_status() {
        let events = frames(&[
            text_delta("msg_1", "Par"),
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down",
                   "param": null, "sequence_number": 4, "status": 429}),
        ]);
        assert_eq!(
            *error(&events),
            LlmStreamError::provider(Some("rate_limit_exceeded"), Some(429), "slow down")
        );
        // OpenAI itself sends no status.
        let events = frames(&[
            json!({"type": "error", "code": "server_error", "message": "boom", "param": null}),
        ]);
        assert_eq!(
            *error(&events),
            LlmStreamError::provider(Some("server_error"), None, "boom")
        );
        // A flat error without a code: `type: error` is not a code.
        let events = frames(&[json!({"type": "error", "code": null, "message": "boom"})]);
        assert_eq!(error(&events).code, None);
    }

    #[test]
    fn nested_and_stray_error_objects_are_errors() {
        let nested = frames(&[
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy", "code": 529}}),
        ]);
        assert_eq!(
            *error(&nested),
            LlmStreamError::provider(Some("overloaded_error"), Some(529), "busy")
        );
        // An unknown frame carrying an error object.
        let unknown = decode(vec![raw(
            r#"{"error": {"message": "upstream died", "code": 502}}"#,
        )]);
        assert_eq!(
            *error(&unknown),
            LlmStreamError::provider(None::<String>, Some(502), "upstream died")
        );
        // A bare JSON line (not an SSE field).
        let stray = decode(vec![SseItem::Stray(
            r#"{"error": {"code": "server_error", "message": "x"}}"#.into(),
        )]);
        assert_eq!(error_code(&stray), Some("server_error"));
        let noise = decode(vec![SseItem::Stray("garbage".into())]);
        assert!(noise.is_empty());
    }

    #[test]
    fn failed_response_is_an_error() {
        let events = frames(&[json!({"type": "response.failed", "response": {
            "id": "resp_1", "status": "failed", "error": {"code": "server_error", "message": "broke"}}})]);
        assert_eq!(
            *error(&events),
            LlmStreamError::provider(Some("server_error"), None, "broke")
        );
        let events = frames(&[
            json!({"type": "response.failed", "response": {"status": "failed", "error": null}}),
        ]);
        assert_eq!(error_code(&events), Some("processing_error"));
        // A terminal frame whose status says failed.
        let events = frames(&[
            json!({"type": "response.done", "response": {"status": "failed",
            "error": {"code": "rate_limit_exceeded", "message": "m"}}}),
        ]);
        assert_eq!(error_code(&events), Some("rate_limit_exceeded"));
    }

    #[test]
    fn refusal_is_text_and_finishes_with_content_filter() {
        let events = frames(&[
            json!({"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0,
                   "content_index": 0, "delta": "I can't help"}),
            json!({"type": "response.refusal.done", "item_id": "msg_1", "output_index": 0,
                   "content_index": 0, "refusal": "I can't help"}),
            completed(
                Some("completed"),
                json!([{"id": "msg_1", "type": "message",
                "content": [{"type": "refusal", "refusal": "I can't help"}]}]),
            ),
        ]);
        assert_eq!(events[0], LlmStreamEvent::TextDelta("I can't help".into()));
        assert_eq!(events.len(), 2, "{events:?}");
        let meta = done(&events);
        assert_eq!(meta.finish_reason.as_deref(), Some("content_filter"));
        assert_eq!(meta.provider_finish_reason.as_deref(), Some("completed"));
    }

    #[test]
    fn reasoning_summary_parts_and_encrypted_item() {
        let summary = |index: u64, delta: &str| {
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1",
                   "output_index": 0, "summary_index": index, "delta": delta})
        };
        let events = frames(&[
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
            summary(0, "First"),
            summary(1, "Second"),
            summary(1, " part"),
            json!({"type": "response.reasoning_text.delta", "item_id": "rs_1", "output_index": 0,
                   "content_index": 0, "delta": "raw"}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {
                "id": "rs_1", "type": "reasoning", "encrypted_content": "gAAA",
                "summary": [{"type": "summary_text", "text": "First"},
                            {"type": "summary_text", "text": "Second part"}],
                "content": [{"type": "reasoning_text", "text": "raw"}]}}),
            completed(
                Some("completed"),
                json!([{"id": "rs_1", "type": "reasoning", "summary": []}]),
            ),
        ]);
        let deltas: String = events
            .iter()
            .filter_map(|e| match e {
                LlmStreamEvent::ReasoningDelta {
                    delta,
                    summary: true,
                } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, "First\n\nSecond part");
        assert!(events.contains(&LlmStreamEvent::ReasoningDelta {
            delta: "raw".into(),
            summary: false
        }));
        let items: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                LlmStreamEvent::ReasoningItem(item) => Some(item.clone()),
                _ => None,
            })
            .collect();
        let expected = ReasoningContentPart::opaque("openai")
            .with_item_id("rs_1")
            .with_encrypted("gAAA")
            .with_text(ReasoningText::Summary {
                parts: vec!["First".into(), "Second part".into()],
            });
        assert_eq!(items, vec![expected.clone()]);
        assert_eq!(expected.display_text().as_deref(), Some(deltas.as_str()));
        assert!(matches!(events.last(), Some(LlmStreamEvent::Done(_))));
    }

    #[test]
    fn hosted_tools_report_progress_and_are_counted() {
        let events = frames(&[
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"id": "ws_1", "type": "web_search_call", "status": "in_progress"}}),
            json!({"type": "response.web_search_call.searching", "item_id": "ws_1", "output_index": 0}),
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"id": "ws_1", "type": "web_search_call", "status": "completed",
                            "action": {"type": "search", "query": "rust sse"}}}),
            completed(
                Some("completed"),
                json!([
                    {"id": "ws_1", "type": "web_search_call", "status": "completed"},
                    {"id": "ws_2", "type": "web_search_call", "status": "completed"},
                ]),
            ),
        ]);
        assert_eq!(
            events[0],
            LlmStreamEvent::HostedToolCall(HostedToolCall::new(
                "ws_1",
                "web_search_call",
                HostedToolCallStatus::InProgress,
                None
            ))
        );
        assert_eq!(
            events[1],
            LlmStreamEvent::HostedToolCall(HostedToolCall::new(
                "ws_1",
                "web_search_call",
                HostedToolCallStatus::Completed,
                Some("rust sse".into())
            ))
        );
        let meta = done(&events);
        assert_eq!(meta.hosted_tool_calls.get("web_search_call"), Some(&2));
        assert_eq!(meta.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn done_frames_and_items_fill_in_text_no_delta_streamed() {
        let events = frames(&[
            json!({"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0,
                   "content_index": 0, "text": "Whole"}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"id": "msg_1",
                   "type": "message", "content": [{"type": "output_text", "text": "Whole"},
                                                  {"type": "output_text", "text": " more"}]}}),
            completed(
                Some("completed"),
                json!([{"id": "msg_1", "type": "message",
                "content": [{"type": "output_text", "text": "Whole"}]}]),
            ),
        ]);
        assert_eq!(
            events[..2],
            [
                LlmStreamEvent::TextDelta("Whole".into()),
                LlmStreamEvent::TextDelta(" more".into())
            ]
        );
        assert_eq!(events.len(), 3);
    }

    #[test]
    fn done_marker_event_names_and_unknown_types() {
        let events = decode(vec![
            raw("[DONE]"),
            raw(""),
            // No `type`: the SSE event name says what it is.
            SseItem::Frame(SseFrame {
                event: Some("response.output_text.delta".into()),
                data: json!({"item_id": "m", "delta": "Hi"}).to_string(),
            }),
            frame(&json!({"type": "response.future_feature", "whatever": 1})),
            frame(&json!({"type": "response.in_progress", "response": {"id": "resp_9"}})),
            frame(&json!({"type": "response.done", "response": {"status": "completed"}})),
        ]);
        assert_eq!(events[0], LlmStreamEvent::TextDelta("Hi".into()));
        assert_eq!(events.len(), 2);
        let meta = done(&events);
        assert_eq!(meta.response_id.as_deref(), Some("resp_9"));
        assert_eq!(meta.prompt_tokens, None);
    }

    #[test]
    fn clean_end_without_terminal_emits_nothing() {
        let events = frames(&[text_delta("msg_1", "Hi")]);
        assert_eq!(events, vec![LlmStreamEvent::TextDelta("Hi".into())]);
    }
}
