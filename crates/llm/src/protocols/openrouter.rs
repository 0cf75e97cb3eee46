//! OpenRouter: the Chat Completions protocol (the request builder and the
//! stream decoder of [`super::chat`], in the OpenRouter [`Dialect`]) plus
//! OpenRouter's extras: `usage: {include: true}`, `reasoning: {effort}`,
//! optional app attribution headers, `usage.cost` as
//! [`provider_cost_usd`](crate::LlmCompletionMetadata::provider_cost_usd).
//! Its in-stream error chunks (`{"error":{"code":STATUS,"message",
//! "metadata"}}`) keep their status, and an HTTP 402 (credits exhausted) is
//! [`QuotaExhausted`](crate::LlmErrorKind::QuotaExhausted), never retried.

use async_trait::async_trait;

use super::chat::{Dialect, chat_request, open_chat_stream};
use crate::error::LlmError;
use crate::message::{LlmCallConfig, Message};
use crate::provider::{LlmResponseStream, Protocol, ProviderEndpoint};
use crate::retry::LlmRetryConfig;

/// OpenRouter (Chat Completions).
///
/// Id `openrouter`, default base `https://openrouter.ai/api/v1`, bearer
/// auth.
///
/// ```
/// use agent_adaptor_llm::{OpenRouter, Provider};
///
/// let provider = Provider::new(
///     "openrouter",
///     OpenRouter::new().with_app("https://example.com", "Example"),
/// )
/// .api_key("sk-or-...");
/// assert_eq!(provider.protocol().id(), "openrouter");
/// ```
#[derive(Debug, Clone, Default)]
pub struct OpenRouter {
    retry: LlmRetryConfig,
    app: Option<AppAttribution>,
}

/// OpenRouter's app attribution (`HTTP-Referer`, `X-Title`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct AppAttribution {
    referer: String,
    title: String,
}

super::protocol_common!(OpenRouter);

impl OpenRouter {
    /// With app attribution: `HTTP-Referer: referer` and `X-Title: title` on
    /// every request (either is left out when empty).
    #[must_use]
    pub fn with_app(mut self, referer: impl Into<String>, title: impl Into<String>) -> Self {
        self.app = Some(AppAttribution {
            referer: referer.into(),
            title: title.into(),
        });
        self
    }

    fn app_headers(&self) -> Vec<(String, String)> {
        let Some(app) = &self.app else {
            return Vec::new();
        };
        [("http-referer", &app.referer), ("x-title", &app.title)]
            .into_iter()
            .filter(|(_, value)| !value.is_empty())
            .map(|(name, value)| (name.to_owned(), value.clone()))
            .collect()
    }
}

#[async_trait]
impl Protocol for OpenRouter {
    fn id(&self) -> &'static str {
        "openrouter"
    }

    fn default_base_url(&self) -> &'static str {
        "https://openrouter.ai/api/v1"
    }

    async fn chat_completion_stream(
        &self,
        endpoint: &ProviderEndpoint,
        messages: &[Message],
        config: &LlmCallConfig,
    ) -> Result<LlmResponseStream, LlmError> {
        let mut request = chat_request(Dialect::OpenRouter, endpoint, messages, config);
        request.headers.extend(self.app_headers());
        open_chat_stream(endpoint, request, config, &self.retry).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_headers_skip_empty_values() {
        assert!(OpenRouter::new().app_headers().is_empty());
        assert_eq!(
            OpenRouter::new()
                .with_app("https://a.example", "")
                .app_headers(),
            vec![("http-referer".to_owned(), "https://a.example".to_owned())]
        );
    }
}
