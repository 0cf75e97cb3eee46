//! OpenAI Chat Completions (`POST {base}/chat/completions`), the protocol of
//! OpenAI and of every OpenAI-compatible server (vLLM, LiteLLM, DeepSeek,
//! Groq, Ollama, …) and gateway (OpenRouter reuses it through a
//! [`Dialect`]).
//!
//! * [`request`] builds the body: messages in place (Chat Completions keeps
//!   system messages inline), assistant tool calls with JSON-text
//!   arguments, tool results by `tool_call_id`, tools, sampling and output
//!   settings, structured output, `stream_options.include_usage`.
//! * [`decoder`] turns the data-only chunk stream into events: a pure state
//!   machine, one [`ChatDecoder`](decoder::ChatDecoder) per attempt.
//!
//! Reasoning is not replayed: Chat Completions has no input field for it
//! (DeepSeek rejects its own `reasoning_content` in the history), so the
//! `ReasoningItem`s this protocol emits (provider `openai-protocol`) carry
//! readable text only.

pub(crate) mod decoder;
mod request;

use async_trait::async_trait;

use crate::error::LlmError;
use crate::http::{self, WireRequest};
use crate::message::{LlmCallConfig, Message};
use crate::provider::{LlmResponseStream, Protocol, ProviderEndpoint};
use crate::retry::LlmRetryConfig;

pub(crate) use decoder::ChatDecoder;

/// Which flavour of the protocol a request is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// OpenAI and OpenAI-compatible servers: `reasoning_effort`, and
    /// `max_completion_tokens` for OpenAI's own hosts (`max_tokens`
    /// elsewhere).
    OpenAi,
    /// OpenRouter: `reasoning: {effort}`, `usage: {include: true}`,
    /// `max_tokens`.
    OpenRouter,
}

/// The request for `messages` under `config`, in `dialect`.
pub(crate) fn chat_request(
    dialect: Dialect,
    endpoint: &ProviderEndpoint,
    messages: &[Message],
    config: &LlmCallConfig,
) -> WireRequest {
    WireRequest {
        path: "chat/completions".to_owned(),
        body: request::body(dialect, endpoint.base_url(), messages, config),
        headers: Vec::new(),
    }
}

/// Sends a Chat Completions request and streams its answer.
pub(crate) async fn open_chat_stream(
    endpoint: &ProviderEndpoint,
    request: WireRequest,
    config: &LlmCallConfig,
    retry: &LlmRetryConfig,
) -> Result<LlmResponseStream, LlmError> {
    let model = config.model.clone();
    http::stream_call(endpoint, request, config, retry, move || {
        ChatDecoder::new(model.clone())
    })
    .await
}

/// OpenAI Chat Completions, for OpenAI and every OpenAI-protocol server.
///
/// Id `openai-chat`, default base `https://api.openai.com/v1`, bearer auth.
/// Point it at another server with [`Provider::base_url`](crate::Provider::base_url).
///
/// ```
/// use agent_adaptor_llm::{OpenAiChat, Provider};
///
/// let vllm = Provider::new("vllm", OpenAiChat::new())
///     .base_url("http://127.0.0.1:8000/v1")
///     .api_key("token");
/// assert_eq!(vllm.protocol().id(), "openai-chat");
/// ```
#[derive(Debug, Clone, Default)]
pub struct OpenAiChat {
    retry: LlmRetryConfig,
}

super::protocol_common!(OpenAiChat);

#[async_trait]
impl Protocol for OpenAiChat {
    fn id(&self) -> &'static str {
        "openai-chat"
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
        let request = chat_request(Dialect::OpenAi, endpoint, messages, config);
        open_chat_stream(endpoint, request, config, &self.retry).await
    }
}
