//! LLM HTTP providers under one stream contract, usable on their own and as
//! a multi-step agent [`Driver`](agent::LlmDriver) (tool loop with host and
//! MCP tools, threads).
//!
//! * The vocabulary: [`LlmStreamEvent`] (see its docs for the contract),
//!   [`LlmCompletionMetadata`], [`LlmStreamError`], [`LlmError`].
//! * Where a call goes: [`Provider`] = a name, a [`ProviderEndpoint`] (base
//!   URL, [`BearerAuth`] / [`StaticHeaderAuth`]) and a [`Protocol`].
//! * The protocols: [`OpenAiChat`] (Chat Completions, any
//!   OpenAI-protocol server), [`OpenAiResponses`] (Responses),
//!   [`AnthropicMessages`] (Messages, thinking with signatures),
//!   [`GeminiGenerateContent`] (`streamGenerateContent` SSE), [`OpenRouter`].
//!   Each takes [`with_retry_config`](OpenAiChat::with_retry_config).
//! * Folding a turn: [`collect_turn`] with [`TurnLimits`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), agent_adaptor_llm::LlmError> {
//! use agent_adaptor_llm::{AnthropicMessages, LlmCallConfig, Message, Provider};
//!
//! let provider = Provider::new("anthropic", AnthropicMessages::new()).api_key("sk-ant-...");
//! let turn = provider
//!     .chat_completion(&[Message::user("Say hi")], &LlmCallConfig::new("claude-sonnet-4-5"))
//!     .await?;
//! println!("{} ({:?})", turn.text, turn.metadata.finish_reason);
//! # Ok(())
//! # }
//! ```

pub mod accumulator;
pub mod agent;
pub mod collector;
mod error;
mod event;
mod http;
mod message;
mod protocols;
mod provider;
mod reasoning;
pub mod retry;
pub mod sse;

pub use collector::{CollectedTurn, TurnLimits, TurnTiming, collect_turn, limit_stream};
pub use error::{LlmError, LlmErrorKind, LlmStreamError};
pub use event::{
    HostedToolCall, HostedToolCallStatus, LlmCompletionMetadata, LlmStreamEvent, ToolCallDelta,
    disjoint_prompt_tokens,
};
pub use message::{
    LlmCallConfig, Message, MessageRole, ReasoningEffort, ResponseFormat, ToolCall, ToolDefinition,
    fold_system_messages,
};
pub use protocols::{
    AnthropicMessages, GeminiGenerateContent, OpenAiChat, OpenAiResponses, OpenRouter,
};
pub use provider::{
    BearerAuth, LlmResponseStream, Protocol, Provider, ProviderAuth, ProviderEndpoint,
    StaticHeaderAuth,
};
pub use reasoning::{ReasoningContentPart, ReasoningText};
pub use retry::{LlmRetryConfig, RetryMetadata};
