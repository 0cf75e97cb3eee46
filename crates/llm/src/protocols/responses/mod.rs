//! OpenAI Responses API (`POST {base}/responses`): [`OpenAiResponses`].
//!
//! The request is built in [`request`], the stream is decoded by the pure
//! state machine in [`decoder`]; HTTP, retries and the pipeline are shared
//! ([`crate::http`]).

pub(crate) mod decoder;
mod request;

use async_trait::async_trait;

use crate::error::LlmError;
use crate::http::{self, WireRequest};
use crate::message::{LlmCallConfig, Message};
use crate::provider::{LlmResponseStream, Protocol, ProviderEndpoint};
use crate::retry::LlmRetryConfig;

use decoder::ResponsesDecoder;

/// The OpenAI Responses API (`POST {base}/responses`), stateless
/// (`store: false`): the whole conversation is sent on every call, and
/// reasoning is replayed from the `encrypted_content` of earlier
/// [`ReasoningItem`](crate::LlmStreamEvent::ReasoningItem)s of provider
/// `openai`.
///
/// How the stream maps to events:
///
/// * `response.output_text.delta` → `TextDelta`; `response.refusal.delta`
///   → `TextDelta` too (the refusal is what the model said), and the turn
///   then finishes with `content_filter`.
/// * `response.reasoning_summary_text.delta` → `ReasoningDelta { summary:
///   true }` (summary parts after the first are preceded by a blank line, so
///   the deltas add up to the item's display text);
///   `response.reasoning_text.delta` → `ReasoningDelta { summary: false }`.
/// * A finished `reasoning` item → `ReasoningItem` (provider `openai`, item
///   id, `encrypted_content`, the summary parts). Raw reasoning `content` is
///   deliberately not put in the item, so it is never persisted.
/// * `function_call` items: `ToolCallDelta`s as the arguments stream, then
///   the full `ToolCalls` set when each item is done (its arguments are
///   authoritative). The terminal `response.output` is reconciled: calls
///   never announced in the stream are emitted before `Done`.
/// * Hosted tools (`web_search_call` …) → `HostedToolCall` progress, counted
///   in `Done`.
/// * `response.completed` / `response.incomplete` / `response.done` →
///   `Done`: `finish_reason` from `response.status` (`completed` →
///   `tool_calls` when calls were emitted, `content_filter` after a refusal,
///   else `stop`; `incomplete` → `length` for `max_output_tokens`,
///   `content_filter`, or the reason verbatim (`incomplete` when none);
///   no status → `None`). Usage is made disjoint (`input_tokens` includes
///   the cached tokens).
/// * `response.failed` → `Error` (`error.code`, else `processing_error`);
///   an `error` event → `Error` with its code and, when a gateway adds it,
///   its HTTP `status`. `[DONE]` (OpenRouter) is skipped.
#[derive(Debug, Clone, Default)]
pub struct OpenAiResponses {
    retry: LlmRetryConfig,
}

super::protocol_common!(OpenAiResponses);

#[async_trait]
impl Protocol for OpenAiResponses {
    fn id(&self) -> &'static str {
        "openai-responses"
    }

    fn default_base_url(&self) -> &'static str {
        "https://api.openai.com/v1"
    }

    async fn chat_completion_stream(
        &self,
        endpoint: &ProviderEndpoint,
        messages: &[Message],
        config: &LlmCallConfig,
    ) -> Result<LlmResponseStream, LlmError> {
        let request = WireRequest {
            path: "responses".to_owned(),
            body: request::body(messages, config),
            headers: Vec::new(),
        };
        let model = config.model.clone();
        http::stream_call(endpoint, request, config, &self.retry, || {
            ResponsesDecoder::new(model.clone())
        })
        .await
    }
}
