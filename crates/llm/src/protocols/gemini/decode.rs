//! The stream decoder: `GenerateContentResponse` chunks → events.
//!
//! * Parts of `candidates[0].content.parts`: text → `TextDelta`;
//!   `thought: true` text → `ReasoningDelta` (accumulated for the
//!   `ReasoningItem`); `functionCall` (always whole) → a `ToolCallDelta`
//!   with its argument JSON, the call kept for `ToolCalls` under Gemini's id
//!   or `call_{n}`; a `thoughtSignature` on a call → a `ReasoningItem` bound
//!   to that call, on any other part → the unbound item's signature.
//! * `finishReason` (the first one other than `FINISH_REASON_UNSPECIFIED`)
//!   is kept raw and normalized at the end; content after it is ignored,
//!   usage still read. `usageMetadata` is a running snapshot: the last one
//!   counts.
//! * Gemini has no end marker: at a clean end of the body (or a `[DONE]`)
//!   come the tool calls (when the answer ended with `STOP` or no reason;
//!   otherwise they are discarded and counted), the unbound reasoning item,
//!   and `Done`.
//! * Errors: an `error` object in a `data:` frame, or a bare JSON body (a
//!   non-SSE object, possibly pretty-printed over several lines or wrapped
//!   in `[...]`, buffered until it parses), becomes `Error` with Google's
//!   `status` string as code and its numeric `code` as HTTP status. A
//!   `promptFeedback.blockReason` is an `Error` with that reason as code.
//!   Unparseable JSON is an `Error` with code `malformed_response`.
//!
//! A pure state machine; nothing follows a terminal event.

use serde_json::{Map, Value};

use super::PROVIDER;
use crate::accumulator::ToolCallAccumulator;
use crate::error::LlmStreamError;
use crate::event::{LlmCompletionMetadata, LlmStreamEvent, disjoint_prompt_tokens};
use crate::http::{WireDecoder, error_fields, error_status, unparseable};
use crate::reasoning::{ReasoningContentPart, ReasoningText};
use crate::sse::SseItem;

/// The most non-SSE text buffered while waiting for it to parse.
const STRAY_LIMIT: usize = 256 * 1024;

/// The decoder of one Gemini stream.
#[derive(Debug)]
pub(crate) struct GeminiDecoder {
    /// The requested model (`Done.model`).
    model: String,
    tools: ToolCallAccumulator,
    /// `functionCall` parts seen (the next call's index).
    calls: u32,
    /// Thought text not yet in a `ReasoningItem`.
    thoughts: String,
    /// An unbound thought signature not yet in a `ReasoningItem`.
    signature: Option<String>,
    /// The raw `finishReason`.
    finish: Option<String>,
    /// The last `usageMetadata`.
    usage: Option<Value>,
    response_model: Option<String>,
    response_id: Option<String>,
    /// Non-SSE lines waiting to form one JSON value.
    stray: String,
    /// A terminal event was emitted.
    ended: bool,
}

impl WireDecoder for GeminiDecoder {
    fn item(&mut self, item: SseItem, out: &mut Vec<LlmStreamEvent>) {
        if self.ended {
            tracing::debug!("Gemini stream item after the terminal event ignored");
            return;
        }
        match item {
            SseItem::Stray(line) => self.stray_line(&line, out),
            SseItem::Frame(frame) => {
                if self.flush_stray(out) {
                    self.frame(&frame.data, out);
                }
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<LlmStreamEvent>) {
        if !self.ended && self.flush_stray(out) {
            self.end(out);
        }
    }
}

impl GeminiDecoder {
    /// A decoder for a call to `model`.
    pub(crate) fn new(model: String) -> Self {
        GeminiDecoder {
            model,
            tools: ToolCallAccumulator::new(),
            calls: 0,
            thoughts: String::new(),
            signature: None,
            finish: None,
            usage: None,
            response_model: None,
            response_id: None,
            stray: String::new(),
            ended: false,
        }
    }

    fn fail(&mut self, event: LlmStreamEvent, out: &mut Vec<LlmStreamEvent>) {
        out.push(event);
        self.ended = true;
    }

    fn malformed(&mut self, message: String, out: &mut Vec<LlmStreamEvent>) {
        let error = LlmStreamError::provider(Some("malformed_response"), None, message);
        self.fail(LlmStreamEvent::Error(error), out);
    }

    /// A line outside SSE framing: the start or continuation of a bare JSON
    /// body (Google's error object), else an unknown SSE field (ignored, as
    /// SSE requires).
    fn stray_line(&mut self, line: &str, out: &mut Vec<LlmStreamEvent>) {
        let trimmed = line.trim();
        if self.stray.is_empty() {
            if trimmed.is_empty() {
                return;
            }
            if !trimmed.starts_with(['{', '[']) {
                tracing::debug!(
                    bytes = line.len(),
                    "unknown SSE field in the Gemini stream ignored"
                );
                return;
            }
        }
        self.stray.push_str(line);
        self.stray.push('\n');
        if self.stray.len() > STRAY_LIMIT {
            self.malformed(
                format!("a non-SSE body of over {STRAY_LIMIT} bytes in the Gemini stream"),
                out,
            );
            return;
        }
        if trimmed.ends_with(['}', ']'])
            && let Ok(value) = serde_json::from_str::<Value>(&self.stray)
        {
            self.stray.clear();
            self.value(value, out);
        }
    }

    /// Settles buffered non-SSE text before anything else: it either parses
    /// now or is malformed. False when a terminal event was emitted.
    fn flush_stray(&mut self, out: &mut Vec<LlmStreamEvent>) -> bool {
        if self.stray.is_empty() {
            return !self.ended;
        }
        let text = std::mem::take(&mut self.stray);
        match serde_json::from_str::<Value>(&text) {
            Ok(value) => self.value(value, out),
            Err(error) => self.fail(unparseable("Gemini non-SSE body", text.trim(), &error), out),
        }
        !self.ended
    }

    fn frame(&mut self, data: &str, out: &mut Vec<LlmStreamEvent>) {
        let data = data.trim();
        if data.is_empty() {
            tracing::debug!("empty Gemini frame (keep-alive) ignored");
            return;
        }
        if data == "[DONE]" {
            self.end(out);
            return;
        }
        match serde_json::from_str::<Value>(data) {
            Ok(value) => self.value(value, out),
            Err(error) => self.fail(unparseable("Gemini stream chunk", data, &error), out),
        }
    }

    /// One parsed JSON value: a response chunk, a list of them (the body
    /// without `alt=sse`), or an error object.
    fn value(&mut self, value: Value, out: &mut Vec<LlmStreamEvent>) {
        match value {
            Value::Array(chunks) => {
                for chunk in chunks {
                    if self.ended {
                        break;
                    }
                    self.value(chunk, out);
                }
            }
            Value::Object(chunk) => self.chunk(&chunk, out),
            other => {
                let preview: String = other.to_string().chars().take(200).collect();
                self.malformed(
                    format!("a Gemini stream chunk that is not an object: {preview}"),
                    out,
                );
            }
        }
    }

    fn chunk(&mut self, chunk: &Map<String, Value>, out: &mut Vec<LlmStreamEvent>) {
        if chunk.contains_key("error") {
            self.error(chunk, out);
            return;
        }
        if let Some(feedback) = chunk.get("promptFeedback")
            && let Some(reason) = feedback.get("blockReason").and_then(Value::as_str)
            && !reason.is_empty()
        {
            let detail = feedback
                .get("blockReasonMessage")
                .and_then(Value::as_str)
                .map(|text| format!(": {text}"))
                .unwrap_or_default();
            let error = LlmStreamError::provider(
                Some(reason),
                None,
                format!("Gemini blocked the prompt ({reason}){detail}"),
            );
            self.fail(LlmStreamEvent::Error(error), out);
            return;
        }
        let text = |key: &str| {
            chunk
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        if let Some(model) = text("modelVersion") {
            self.response_model = Some(model);
        }
        if let Some(id) = text("responseId") {
            self.response_id = Some(id);
        }
        if let Some(usage) = chunk.get("usageMetadata").filter(|usage| usage.is_object()) {
            self.usage = Some(usage.clone());
        }
        if let Some(candidates) = chunk.get("candidates").and_then(Value::as_array) {
            let first = candidates
                .iter()
                .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
                .or(candidates.first());
            if candidates.len() > 1 {
                tracing::debug!(
                    count = candidates.len(),
                    "Gemini candidates after the first ignored"
                );
            }
            if let Some(candidate) = first {
                self.candidate(candidate, out);
            }
        }
        let known = [
            "candidates",
            "usageMetadata",
            "modelVersion",
            "responseId",
            "promptFeedback",
            "createTime",
        ];
        if !chunk.keys().any(|key| known.contains(&key.as_str())) {
            tracing::debug!(keys = ?chunk.keys().collect::<Vec<_>>(), "unknown Gemini chunk ignored");
        }
    }

    /// Google's error object: `status` (`RESOURCE_EXHAUSTED`) is the code,
    /// the numeric `code` the HTTP status.
    fn error(&mut self, chunk: &Map<String, Value>, out: &mut Vec<LlmStreamEvent>) {
        let value = Value::Object(chunk.clone());
        let (code, message) = error_fields(&value);
        let status = error_status(&value);
        let message = message.unwrap_or_else(|| {
            let preview: String = value["error"].to_string().chars().take(200).collect();
            format!("Gemini stream error: {preview}")
        });
        let error = LlmStreamError::provider(code, status, message);
        self.fail(LlmStreamEvent::Error(error), out);
    }

    fn candidate(&mut self, candidate: &Value, out: &mut Vec<LlmStreamEvent>) {
        if let Some(parts) = candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
        {
            if self.finish.is_some() {
                if !parts.is_empty() {
                    tracing::debug!(
                        parts = parts.len(),
                        "Gemini content after the finish reason ignored"
                    );
                }
            } else {
                for part in parts {
                    self.part(part, out);
                }
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str)
            && !reason.is_empty()
            && reason != "FINISH_REASON_UNSPECIFIED"
            && self.finish.is_none()
        {
            self.finish = Some(reason.to_owned());
        }
    }

    fn part(&mut self, part: &Value, out: &mut Vec<LlmStreamEvent>) {
        let signature = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        if let Some(call) = part.get("functionCall") {
            self.function_call(call, signature, out);
            return;
        }
        let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
        match part.get("text").and_then(Value::as_str) {
            Some(text) if thought => {
                if !text.is_empty() {
                    self.thoughts.push_str(text);
                    out.push(LlmStreamEvent::ReasoningDelta {
                        delta: text.to_owned(),
                        summary: false,
                    });
                }
            }
            Some(text) => {
                if !text.is_empty() {
                    out.push(LlmStreamEvent::TextDelta(text.to_owned()));
                }
            }
            None if signature.is_some() || thought => {}
            None => {
                let kind = part.as_object().and_then(|p| p.keys().next().cloned());
                tracing::debug!(?kind, "unsupported Gemini part ignored");
            }
        }
        if let Some(signature) = signature {
            // A second unbound signature: the first one's item is complete.
            if self
                .signature
                .as_deref()
                .is_some_and(|held| held != signature)
            {
                self.flush_reasoning(out);
            }
            self.signature = Some(signature.to_owned());
        }
    }

    fn function_call(
        &mut self,
        call: &Value,
        signature: Option<&str>,
        out: &mut Vec<LlmStreamEvent>,
    ) {
        let index = self.calls;
        self.calls += 1;
        let key = index.to_string();
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map_or_else(|| format!("call_{index}"), str::to_owned);
        let name = call
            .get("name")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty());
        match call.get("args") {
            // Arguments as JSON text (some gateways): parsed when the calls
            // are taken; the call arrived whole, so bad JSON becomes `{}`.
            Some(Value::String(text)) => {
                let delta = self.tools.delta(&key, Some(&id), name, text);
                out.push(LlmStreamEvent::ToolCallDelta(delta));
                self.tools.finish(&key);
            }
            args => {
                let args = match args {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(args) => args.clone(),
                };
                let delta = self.tools.delta(&key, Some(&id), name, &args.to_string());
                out.push(LlmStreamEvent::ToolCallDelta(delta));
                match name {
                    Some(name) => self.tools.push_complete(&key, Some(&id), name, args),
                    // Dropped (and counted) when the calls are taken.
                    None => self.tools.finish(&key),
                }
            }
        }
        if let Some(signature) = signature {
            let mut item = ReasoningContentPart::opaque(PROVIDER)
                .with_signature(signature)
                .with_bound_tool_call_id(id);
            let thoughts = std::mem::take(&mut self.thoughts);
            if !thoughts.is_empty() {
                item = item.with_text(ReasoningText::Plain { text: thoughts });
            }
            out.push(LlmStreamEvent::ReasoningItem(item));
        }
    }

    /// The unbound reasoning so far (thought text and/or signature) as an item.
    fn flush_reasoning(&mut self, out: &mut Vec<LlmStreamEvent>) {
        let thoughts = std::mem::take(&mut self.thoughts);
        let signature = self.signature.take();
        if thoughts.is_empty() && signature.is_none() {
            return;
        }
        let mut item = ReasoningContentPart::opaque(PROVIDER);
        if !thoughts.is_empty() {
            item = item.with_text(ReasoningText::Plain { text: thoughts });
        }
        if let Some(signature) = signature {
            item = item.with_signature(signature);
        }
        out.push(LlmStreamEvent::ReasoningItem(item));
    }

    /// The end of the answer (clean end of the body, or `[DONE]`).
    fn end(&mut self, out: &mut Vec<LlmStreamEvent>) {
        self.ended = true;
        match self.finish.as_deref() {
            None | Some("STOP") => {
                if let Some(calls) = self.tools.take() {
                    out.push(LlmStreamEvent::ToolCalls(calls));
                }
            }
            Some(_) => {
                self.tools.discard_pending();
            }
        }
        self.flush_reasoning(out);
        out.push(LlmStreamEvent::done(self.metadata()));
    }

    fn metadata(&self) -> LlmCompletionMetadata {
        let mut metadata = LlmCompletionMetadata {
            model: Some(self.model.clone()).filter(|model| !model.is_empty()),
            response_model: self.response_model.clone(),
            response_id: self.response_id.clone(),
            provider_finish_reason: self.finish.clone(),
            finish_reason: self
                .finish
                .as_deref()
                .map(|raw| normalize_finish_reason(raw, !self.tools.emitted().is_empty())),
            tool_calls_dropped: self.tools.dropped(),
            ..LlmCompletionMetadata::default()
        };
        let Some(usage) = &self.usage else {
            return metadata;
        };
        let count = |key: &str| {
            usage
                .get(key)
                .and_then(Value::as_u64)
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
        };
        let prompt = count("promptTokenCount");
        let cached = count("cachedContentTokenCount");
        let candidates = count("candidatesTokenCount");
        let thoughts = count("thoughtsTokenCount");
        // `promptTokenCount` includes the cached tokens; thoughts are
        // counted apart from `candidatesTokenCount`.
        let completion = match (candidates, thoughts) {
            (None, None) => None,
            (candidates, thoughts) => Some(
                candidates
                    .unwrap_or(0)
                    .saturating_add(thoughts.unwrap_or(0)),
            ),
        };
        metadata.prompt_tokens = prompt.map(|prompt| disjoint_prompt_tokens(prompt, cached));
        metadata.cache_read_tokens = cached;
        metadata.completion_tokens = completion;
        metadata.reasoning_tokens = thoughts;
        metadata.total_tokens = count("totalTokenCount").or_else(|| match (prompt, completion) {
            (None, None) => None,
            (prompt, completion) => {
                Some(prompt.unwrap_or(0).saturating_add(completion.unwrap_or(0)))
            }
        });
        metadata
    }
}

/// Gemini's `finishReason` in the Chat Completions words.
fn normalize_finish_reason(raw: &str, had_tool_calls: bool) -> String {
    match raw {
        "STOP" if had_tool_calls => "tool_calls".into(),
        "STOP" => "stop".into(),
        "MAX_TOKENS" => "length".into(),
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => "content_filter".into(),
        other => other.to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::event::ToolCallDelta;
    use crate::message::ToolCall;
    use crate::sse::{SseDecoder, SseFrame};

    fn frame(data: &Value) -> SseItem {
        SseItem::Frame(SseFrame {
            event: None,
            data: data.to_string(),
        })
    }

    fn raw(data: &str) -> SseItem {
        SseItem::Frame(SseFrame {
            event: None,
            data: data.to_owned(),
        })
    }

    fn decode(items: Vec<SseItem>) -> Vec<LlmStreamEvent> {
        let mut decoder = GeminiDecoder::new("gemini-test".into());
        let mut out = Vec::new();
        for item in items {
            decoder.item(item, &mut out);
        }
        decoder.finish(&mut out);
        out
    }

    /// Raw body bytes through the SSE decoder, then the Gemini decoder.
    fn decode_wire(wire: &str) -> Vec<LlmStreamEvent> {
        let mut sse = SseDecoder::new();
        let mut items = Vec::new();
        sse.push(wire.as_bytes(), &mut items);
        sse.finish(&mut items);
        decode(items)
    }

    fn parts(parts: Value) -> Value {
        json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]})
    }

    fn last(parts: Value, reason: &str) -> Value {
        json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": reason, "index": 0}]})
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

    #[test]
    fn text_usage_and_metadata() {
        let events = decode(vec![
            frame(&parts(json!([{"text": "Hel"}]))),
            frame(&parts(json!([{"text": ""}]))),
            frame(&json!({
                "candidates": [{"content": {"parts": [{"text": "lo"}]}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 100, "cachedContentTokenCount": 20, "candidatesTokenCount": 7,
                    "thoughtsTokenCount": 3, "totalTokenCount": 110},
                "modelVersion": "gemini-2.5-flash-001",
                "responseId": "resp-1",
            })),
        ]);
        assert_eq!(events[0], LlmStreamEvent::TextDelta("Hel".into()));
        assert_eq!(events[1], LlmStreamEvent::TextDelta("lo".into()));
        assert_eq!(events.len(), 3, "no empty TextDelta: {events:?}");
        let metadata = done(&events);
        assert_eq!(metadata.finish_reason.as_deref(), Some("stop"));
        assert_eq!(metadata.provider_finish_reason.as_deref(), Some("STOP"));
        assert_eq!(metadata.prompt_tokens, Some(80));
        assert_eq!(metadata.cache_read_tokens, Some(20));
        assert_eq!(metadata.completion_tokens, Some(10));
        assert_eq!(metadata.reasoning_tokens, Some(3));
        assert_eq!(metadata.total_tokens, Some(110));
        assert_eq!(metadata.model.as_deref(), Some("gemini-test"));
        assert_eq!(
            metadata.response_model.as_deref(),
            Some("gemini-2.5-flash-001")
        );
        assert_eq!(metadata.response_id.as_deref(), Some("resp-1"));
    }

    #[test]
    fn malformed_json_frame_is_an_error_and_ends_the_stream() {
        let events = decode(vec![
            frame(&parts(json!([{"text": "a"}]))),
            raw("{\"candidates\": [tru"),
            frame(&parts(json!([{"text": "b"}]))),
        ]);
        assert_eq!(events.len(), 2, "{events:?}");
        let error = error(&events);
        assert_eq!(error.code.as_deref(), Some("malformed_response"));
        assert_eq!(error.kind(), crate::LlmErrorKind::MalformedResponse);
    }

    #[test]
    fn nothing_after_terminal() {
        let events = decode(vec![
            frame(
                &json!({"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}),
            ),
            frame(&last(json!([{"text": "late"}]), "STOP")),
            SseItem::Stray("{\"error\":{}}".into()),
        ]);
        assert_eq!(events.len(), 1, "{events:?}");
        let error = error(&events);
        assert_eq!(
            (error.code.as_deref(), error.status),
            (Some("UNAVAILABLE"), Some(503))
        );

        let events = decode(vec![
            raw("[DONE]"),
            frame(&parts(json!([{"text": "late"}]))),
        ]);
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(done(&events).finish_reason, None);
    }

    #[test]
    fn data_error_frame_keeps_code_and_status() {
        let events = decode(vec![
            frame(&parts(json!([{"text": "partial"}]))),
            frame(
                &json!({"error": {"code": 429, "message": "Quota later", "status": "RESOURCE_EXHAUSTED"}}),
            ),
        ]);
        assert_eq!(events[0], LlmStreamEvent::TextDelta("partial".into()));
        let error = error(&events);
        assert_eq!(error.code.as_deref(), Some("RESOURCE_EXHAUSTED"));
        assert_eq!(error.status, Some(429));
        assert_eq!(error.message, "Quota later");
        assert_eq!(error.kind(), crate::LlmErrorKind::RateLimited);
    }

    #[test]
    fn bare_error_body_pretty_printed_in_a_list() {
        let wire = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}]}}]}\n\n[{\n  \"error\": {\n    \"code\": 500,\n    \"message\": \"Internal error: retry\",\n    \"status\": \"INTERNAL\"\n  }\n}\n]\n";
        let events = decode_wire(wire);
        assert_eq!(events[0], LlmStreamEvent::TextDelta("Hi".into()));
        assert_eq!(events.len(), 2, "{events:?}");
        let error = error(&events);
        assert_eq!(error.code.as_deref(), Some("INTERNAL"));
        assert_eq!(error.status, Some(500));
        assert_eq!(error.message, "Internal error: retry");
    }

    #[test]
    fn bare_error_body_without_line_end() {
        let events =
            decode_wire("{\"error\":{\"code\":500,\"message\":\"boom\",\"status\":\"INTERNAL\"}}");
        let error = error(&events);
        assert_eq!(
            (error.code.as_deref(), error.status),
            (Some("INTERNAL"), Some(500))
        );
    }

    #[test]
    fn json_array_body_without_sse_framing_is_decoded() {
        // What Gemini sends without `alt=sse`: one JSON array of chunks.
        let first = parts(json!([{"text": "Hel"}]));
        let second = last(json!([{"text": "lo"}]), "STOP");
        let events = decode_wire(&format!("[{first},\r\n{second}]"));
        assert_eq!(
            events[..2],
            [
                LlmStreamEvent::TextDelta("Hel".into()),
                LlmStreamEvent::TextDelta("lo".into())
            ]
        );
        assert_eq!(done(&events).finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn unparseable_leftover_is_malformed() {
        let events = decode_wire("data: {\"candidates\":[]}\n\n{\"error\": {\"code\": 500,\n");
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(error(&events).code.as_deref(), Some("malformed_response"));

        // A frame arriving while the buffered text still does not parse.
        let events = decode_wire("{\"error\": \n\ndata: {\"candidates\":[]}\n\n");
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(error(&events).code.as_deref(), Some("malformed_response"));

        // Unknown SSE fields are not JSON: ignored.
        let events = decode_wire("retry-hint: 5\ndata: {\"candidates\":[]}\n\n");
        assert_eq!(done(&events).finish_reason, None);
    }

    #[test]
    fn blocked_prompt_is_an_error() {
        let events = decode(vec![frame(&json!({
            "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []},
            "usageMetadata": {"promptTokenCount": 4, "totalTokenCount": 4}
        }))]);
        assert_eq!(events.len(), 1);
        let error = error(&events);
        assert_eq!(error.code.as_deref(), Some("SAFETY"));
        assert_eq!(error.status, None);
    }

    #[test]
    fn whole_calls_with_ids_and_signatures() {
        let events = decode(vec![
            frame(&parts(json!([{"text": "Let me think.", "thought": true}]))),
            frame(&last(
                json!([
                    {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "sig-1"},
                    {"functionCall": {"name": "get_time", "id": "fc-9"}},
                ]),
                "STOP",
            )),
        ]);
        assert_eq!(
            events,
            vec![
                LlmStreamEvent::ReasoningDelta {
                    delta: "Let me think.".into(),
                    summary: false
                },
                LlmStreamEvent::ToolCallDelta(ToolCallDelta::new(
                    0,
                    Some("call_0".into()),
                    Some("get_weather".into()),
                    "{\"city\":\"Paris\"}"
                )),
                LlmStreamEvent::ReasoningItem(
                    ReasoningContentPart::opaque("google")
                        .with_signature("sig-1")
                        .with_bound_tool_call_id("call_0")
                        .with_text(ReasoningText::Plain {
                            text: "Let me think.".into()
                        })
                ),
                LlmStreamEvent::ToolCallDelta(ToolCallDelta::new(
                    1,
                    Some("fc-9".into()),
                    Some("get_time".into()),
                    "{}"
                )),
                LlmStreamEvent::ToolCalls(vec![
                    ToolCall::new("call_0", "get_weather", json!({"city": "Paris"})),
                    ToolCall::new("fc-9", "get_time", json!({})),
                ]),
                events[5].clone(),
            ]
        );
        let metadata = done(&events);
        assert_eq!(metadata.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(metadata.provider_finish_reason.as_deref(), Some("STOP"));
        assert_eq!(metadata.tool_calls_dropped, 0);
    }

    #[test]
    fn unbound_reasoning_item_at_the_end() {
        let events = decode(vec![
            frame(&parts(json!([{"text": "Plan", "thought": true}]))),
            frame(&parts(json!([{"text": " more", "thought": true}]))),
            frame(&last(
                json!([{"text": "Answer"}, {"text": "", "thoughtSignature": "sig-z"}]),
                "STOP",
            )),
        ]);
        assert_eq!(events.len(), 5, "{events:?}");
        assert_eq!(
            events[3],
            LlmStreamEvent::ReasoningItem(
                ReasoningContentPart::opaque("google")
                    .with_text(ReasoningText::Plain {
                        text: "Plan more".into()
                    })
                    .with_signature("sig-z")
            )
        );
        assert_eq!(done(&events).finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn finished_call_with_invalid_json_arguments_degrades_to_empty_object() {
        // Arguments as JSON text (some gateways) that do not parse: Gemini
        // calls always arrive whole, so the call is finished and kept.
        let events = decode(vec![frame(&last(
            json!([{"functionCall": {"name": "lookup", "args": "{\"q\": "}}]),
            "STOP",
        ))]);
        assert_eq!(
            events[0],
            LlmStreamEvent::ToolCallDelta(ToolCallDelta::new(
                0,
                Some("call_0".into()),
                Some("lookup".into()),
                "{\"q\": "
            ))
        );
        assert_eq!(
            events[1],
            LlmStreamEvent::ToolCalls(vec![ToolCall::new("call_0", "lookup", json!({}))])
        );
        assert_eq!(done(&events).tool_calls_dropped, 0);
    }

    #[test]
    fn unfinished_call_is_dropped_and_counted() {
        // A call Gemini never named cannot be completed: dropped, counted.
        let events = decode(vec![frame(&last(
            json!([
                {"functionCall": {"args": {"x": 1}}},
                {"functionCall": {"name": "ok", "args": {}}},
            ]),
            "STOP",
        ))]);
        let calls: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                LlmStreamEvent::ToolCalls(calls) => Some(calls.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(calls, vec![vec![ToolCall::new("call_1", "ok", json!({}))]]);
        assert_eq!(done(&events).tool_calls_dropped, 1);
    }

    #[test]
    fn length_ending_drops_pending_calls() {
        let events = decode(vec![
            frame(&parts(json!([{"text": "Calling"}]))),
            frame(&last(
                json!([{"functionCall": {"name": "a", "args": {}}}, {"functionCall": {"name": "b", "args": {}}}]),
                "MAX_TOKENS",
            )),
        ]);
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, LlmStreamEvent::ToolCalls(_))),
            "{events:?}"
        );
        let metadata = done(&events);
        assert_eq!(metadata.finish_reason.as_deref(), Some("length"));
        assert_eq!(
            metadata.provider_finish_reason.as_deref(),
            Some("MAX_TOKENS")
        );
        assert_eq!(metadata.tool_calls_dropped, 2);
    }

    #[test]
    fn finish_reasons_normalized_and_content_after_finish_ignored() {
        for (raw, want) in [
            ("SAFETY", "content_filter"),
            ("RECITATION", "content_filter"),
            ("BLOCKLIST", "content_filter"),
            ("PROHIBITED_CONTENT", "content_filter"),
            ("SPII", "content_filter"),
            ("MALFORMED_FUNCTION_CALL", "malformed_function_call"),
            ("OTHER", "other"),
        ] {
            let events = decode(vec![frame(&last(json!([]), raw))]);
            let metadata = done(&events);
            assert_eq!(metadata.finish_reason.as_deref(), Some(want), "{raw}");
            assert_eq!(metadata.provider_finish_reason.as_deref(), Some(raw));
        }
        let events = decode(vec![
            frame(&last(json!([{"text": "a"}]), "FINISH_REASON_UNSPECIFIED")),
            frame(&last(json!([{"text": "b"}]), "STOP")),
            frame(&parts(json!([{"text": "after"}]))),
            frame(&json!({"usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2}})),
        ]);
        assert_eq!(
            events[..2],
            [
                LlmStreamEvent::TextDelta("a".into()),
                LlmStreamEvent::TextDelta("b".into())
            ]
        );
        assert_eq!(events.len(), 3, "{events:?}");
        let metadata = done(&events);
        assert_eq!(metadata.finish_reason.as_deref(), Some("stop"));
        assert_eq!(metadata.completion_tokens, Some(2));
        assert_eq!(metadata.total_tokens, Some(7));
    }

    #[test]
    fn unknown_chunks_and_parts_are_ignored() {
        let events = decode(vec![
            frame(&json!({"somethingNew": {"x": 1}})),
            frame(&parts(
                json!([{"executableCode": {"code": "print(1)"}}, {"text": "ok"}]),
            )),
            raw(""),
        ]);
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(events[0], LlmStreamEvent::TextDelta("ok".into()));
        assert_eq!(done(&events).finish_reason, None);

        let events = decode(vec![raw("42")]);
        assert_eq!(error(&events).code.as_deref(), Some("malformed_response"));
    }
}
