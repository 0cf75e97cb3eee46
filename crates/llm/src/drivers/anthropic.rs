//! Stub: to be implemented.

use async_trait::async_trait;

use crate::error::{LlmError, LlmErrorKind};
use crate::message::{LlmCallConfig, Message};
use crate::provider::{ChatDriver, LlmResponseStream, ProviderEndpoint};
use crate::retry::LlmRetryConfig;

/// Stub.
#[derive(Debug, Clone, Default)]
pub struct AnthropicDriver {
    retry: LlmRetryConfig,
}

super::driver_common!(AnthropicDriver);

#[async_trait]
impl ChatDriver for AnthropicDriver {
    fn id(&self) -> &'static str {
        "anthropic"
    }

    fn default_base_url(&self) -> &'static str {
        "https://api.anthropic.com/v1"
    }

    async fn chat_completion_stream(
        &self,
        _endpoint: &ProviderEndpoint,
        _messages: &[Message],
        _config: &LlmCallConfig,
    ) -> Result<LlmResponseStream, LlmError> {
        Err(LlmError::new(LlmErrorKind::Other, "not implemented"))
    }
}
