//! Anthropic Messages (`POST {base}/messages`, `anthropic-version:
//! 2023-06-01`), streamed.
//!
//! * [`request`] builds the body: system messages folded into `system`,
//!   assistant turns as thinking blocks (replayed with their signatures),
//!   text, then `tool_use`; tool results as `tool_result` blocks of a user
//!   message; `max_tokens` always set; `thinking` from the reasoning effort.
//! * [`decoder`] turns the named SSE events into [`LlmStreamEvent`]s
//!   (a pure state machine: no I/O, no shared state).
//!
//! [`LlmStreamEvent`]: crate::LlmStreamEvent

pub(crate) mod decoder;
mod request;

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::{LlmError, LlmErrorKind};
use crate::http::{WireRequest, stream_call};
use crate::message::{LlmCallConfig, Message};
use crate::provider::{
    LlmResponseStream, Protocol, ProviderAuth, ProviderEndpoint, StaticHeaderAuth,
};
use crate::retry::LlmRetryConfig;

use decoder::AnthropicDecoder;

/// The Anthropic Messages API (`id` `anthropic`, default base
/// `https://api.anthropic.com/v1`, key in `x-api-key`).
///
/// What it sends:
///
/// * `max_tokens` is required by the API: the call's value, else 8192. With
///   reasoning on, the default is the thinking budget plus 8192; a caller's
///   `max_tokens` that does not exceed the budget shrinks the budget to
///   `max_tokens - 1`, and when that falls below Anthropic's minimum of 1024
///   thinking is left off (with a warning).
/// * [`ReasoningEffort`](crate::ReasoningEffort) becomes
///   `thinking: {type: enabled, budget_tokens}` (low 2048, medium 8192, high
///   24576); `temperature` is then not sent (the API refuses it with
///   thinking).
/// * `parallel_tool_calls == Some(false)` becomes `tool_choice: {type: auto,
///   disable_parallel_tool_use: true}`.
/// * Reasoning items issued by `anthropic` are replayed: plain text with a
///   signature as `thinking`, redacted ones as `redacted_thinking`; others
///   (another provider's, or unsigned) are skipped with a warning.
/// * Structured output: the Messages API has no `response_format`, so
///   [`LlmCallConfig::response_format`] is not sent; the agent layer
///   enforces the schema itself.
///
/// What it reports: `stop_reason` normalized (`end_turn`, `stop_sequence`,
/// `pause_turn` → `stop`; `max_tokens`, `model_context_window_exceeded` →
/// `length`; `tool_use` → `tool_calls`; `refusal` → `content_filter`; others
/// as sent, `None` when absent), usage as Anthropic reports it (already
/// disjoint; the total adds input, both cache buckets and output), and an
/// in-stream `error` event with its `error.type` as the code and the status
/// Anthropic documents for that type.
#[derive(Debug, Clone, Default)]
pub struct AnthropicMessages {
    retry: LlmRetryConfig,
}

super::protocol_common!(AnthropicMessages);

#[async_trait]
impl Protocol for AnthropicMessages {
    fn id(&self) -> &'static str {
        "anthropic"
    }

    fn default_base_url(&self) -> &'static str {
        "https://api.anthropic.com/v1"
    }

    fn default_auth(&self, key: &str) -> Arc<dyn ProviderAuth> {
        Arc::new(StaticHeaderAuth::new("x-api-key", key))
    }

    async fn chat_completion_stream(
        &self,
        endpoint: &ProviderEndpoint,
        messages: &[Message],
        config: &LlmCallConfig,
    ) -> Result<LlmResponseStream, LlmError> {
        let request = WireRequest {
            path: "messages".to_owned(),
            body: request::body(messages, config)
                .map_err(|message| LlmError::new(LlmErrorKind::InvalidRequest, message))?,
            headers: vec![(
                "anthropic-version".to_owned(),
                request::API_VERSION.to_owned(),
            )],
        };
        let model = config.model.clone();
        stream_call(endpoint, request, config, &self.retry, || {
            AnthropicDecoder::new(model.clone())
        })
        .await
    }
}
