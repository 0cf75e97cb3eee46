//! Google Gemini (`models/{model}:streamGenerateContent?alt=sse`).
//!
//! * [`request`] builds the `GenerateContentRequest`: `contents` (user /
//!   model turns; tool calls as `functionCall` parts, results as
//!   `functionResponse` parts, Gemini thought signatures replayed),
//!   `systemInstruction`, `tools`, `generationConfig`.
//! * [`decode`] turns the SSE stream of `GenerateContentResponse` chunks
//!   into events. Gemini has no end marker, so `Done` is emitted at a clean
//!   end of the body; errors Google puts inside a `200` stream (a `data:`
//!   frame or a bare JSON object) become [`LlmStreamEvent::Error`] with the
//!   provider's status string as code and its numeric code as HTTP status.
//!
//! [`LlmStreamEvent::Error`]: crate::LlmStreamEvent::Error

pub(crate) mod decode;
mod request;

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::LlmError;
use crate::http::stream_call;
use crate::message::{LlmCallConfig, Message};
use crate::provider::{
    LlmResponseStream, Protocol, ProviderAuth, ProviderEndpoint, StaticHeaderAuth,
};
use crate::retry::LlmRetryConfig;

use decode::GeminiDecoder;

/// The reasoning provider family Gemini thought signatures belong to.
const PROVIDER: &str = "google";

/// The Gemini API protocol (`streamGenerateContent` with `alt=sse`), keyed by
/// `x-goog-api-key`.
///
/// ```
/// use agent_adaptor_llm::{GeminiGenerateContent, Provider};
///
/// let provider = Provider::new("gemini", GeminiGenerateContent::new()).api_key("AIza...");
/// assert_eq!(
///     provider.endpoint().base_url(),
///     "https://generativelanguage.googleapis.com/v1beta"
/// );
/// ```
#[derive(Debug, Clone, Default)]
pub struct GeminiGenerateContent {
    retry: LlmRetryConfig,
}

super::protocol_common!(GeminiGenerateContent);

#[async_trait]
impl Protocol for GeminiGenerateContent {
    fn id(&self) -> &'static str {
        "gemini"
    }

    fn default_base_url(&self) -> &'static str {
        "https://generativelanguage.googleapis.com/v1beta"
    }

    fn default_auth(&self, key: &str) -> Arc<dyn ProviderAuth> {
        Arc::new(StaticHeaderAuth::new("x-goog-api-key", key))
    }

    async fn chat_completion_stream(
        &self,
        endpoint: &ProviderEndpoint,
        messages: &[Message],
        config: &LlmCallConfig,
    ) -> Result<LlmResponseStream, LlmError> {
        let request = request::build(messages, config);
        let model = config.model.clone();
        stream_call(endpoint, request, config, &self.retry, || {
            GeminiDecoder::new(model.clone())
        })
        .await
    }
}
