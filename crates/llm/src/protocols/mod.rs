//! The vendor protocols. Each file owns one wire protocol: the request body it
//! builds and the [`WireDecoder`](crate::http::WireDecoder) that turns its
//! stream into [`LlmStreamEvent`](crate::LlmStreamEvent)s; HTTP, retries and
//! the stream pipeline are shared ([`crate::http`]).

mod anthropic;
mod chat;
mod gemini;
mod openrouter;
mod responses;
#[cfg(test)]
mod robustness;

pub use anthropic::AnthropicMessages;
pub use chat::OpenAiChat;
pub use gemini::GeminiGenerateContent;
pub use openrouter::OpenRouter;
pub use responses::OpenAiResponses;

/// The constructor and retry setter every protocol has.
macro_rules! protocol_common {
    ($protocol:ident) => {
        impl $protocol {
            /// The protocol with the default retry policy.
            pub fn new() -> Self {
                Self::default()
            }

            /// With a retry policy (use
            /// [`LlmRetryConfig::no_retry`](crate::LlmRetryConfig::no_retry)
            /// to own retries in the host).
            #[must_use]
            pub fn with_retry_config(mut self, retry: crate::LlmRetryConfig) -> Self {
                self.retry = retry;
                self
            }

            /// The retry policy.
            pub fn retry_config(&self) -> &crate::LlmRetryConfig {
                &self.retry
            }
        }
    };
}
pub(crate) use protocol_common;
