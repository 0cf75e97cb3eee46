//! The stream vocabulary: [`LlmStreamEvent`], the terminal metadata
//! [`LlmCompletionMetadata`], and hosted tool progress.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::LlmStreamError;
use crate::message::ToolCall;
use crate::reasoning::ReasoningContentPart;
use crate::retry::RetryMetadata;

#[doc = include_str!("../contract.md")]
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum LlmStreamEvent {
    /// Live assistant text. The answer is the concatenation of these.
    /// Through a [`Provider`](crate::Provider) it is never empty.
    TextDelta(String),
    /// Live reasoning for the open block. `summary` marks provider-curated
    /// summaries (OpenAI Responses `summary_text`) as opposed to raw
    /// chain-of-thought.
    ReasoningDelta {
        /// The text.
        delta: String,
        /// True for a provider-written summary.
        summary: bool,
    },
    /// One completed reasoning block: the full readable text its deltas
    /// already streamed plus opaque replay state. Store it; do not also
    /// concatenate the deltas.
    ReasoningItem(ReasoningContentPart),
    /// Live tool-call argument text, for display only (an addition to the
    /// everruns vocabulary; see `docs/design.md`). The record is
    /// [`LlmStreamEvent::ToolCalls`].
    ToolCallDelta(ToolCallDelta),
    /// The full set of tool calls so far, arguments parsed. A consumer
    /// replaces its list on every such event.
    ToolCalls(Vec<ToolCall>),
    /// Progress of a tool the provider runs itself (OpenAI `web_search`).
    /// For display; never dispatch it.
    HostedToolCall(HostedToolCall),
    /// Terminal success.
    Done(Box<LlmCompletionMetadata>),
    /// Terminal failure reported by the provider.
    Error(LlmStreamError),
}

impl LlmStreamEvent {
    /// True for [`Done`](Self::Done) and [`Error`](Self::Error).
    pub fn is_terminal(&self) -> bool {
        matches!(self, LlmStreamEvent::Done(_) | LlmStreamEvent::Error(_))
    }

    /// `Done` with `metadata`.
    pub fn done(metadata: LlmCompletionMetadata) -> Self {
        LlmStreamEvent::Done(Box::new(metadata))
    }
}

/// A piece of a tool call's argument text as it streams.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCallDelta {
    /// The call's position in the answer (0-based, first-seen order).
    pub index: u32,
    /// The call id, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool name, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The argument text of this piece (may be empty on the frame that
    /// names the call).
    pub arguments: String,
}

impl ToolCallDelta {
    /// A delta for the call at `index`.
    pub fn new(
        index: u32,
        id: Option<String>,
        name: Option<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCallDelta {
            index,
            id,
            name,
            arguments: arguments.into(),
        }
    }
}

/// Progress of a provider-executed tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HostedToolCall {
    /// The provider's item id.
    pub id: String,
    /// The tool kind (`web_search_call` …).
    pub tool: String,
    /// Where it is.
    pub status: HostedToolCallStatus,
    /// A short human-readable summary (the search query …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

impl HostedToolCall {
    /// A hosted tool call.
    pub fn new(
        id: impl Into<String>,
        tool: impl Into<String>,
        status: HostedToolCallStatus,
        summary: Option<String>,
    ) -> Self {
        HostedToolCall {
            id: id.into(),
            tool: tool.into(),
            status,
            summary,
        }
    }
}

/// The state of a hosted tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostedToolCallStatus {
    /// Running.
    InProgress,
    /// Finished.
    Completed,
    /// Failed.
    Failed,
}

/// What [`LlmStreamEvent::Done`] reports. Construct with `default()` and
/// assign fields.
///
/// Token buckets are disjoint: `prompt_tokens` counts non-cached input only;
/// `cache_read_tokens` and `cache_creation_tokens` come on top of it.
/// `reasoning_tokens` is a subset of `completion_tokens`. Every `None`
/// means "the provider did not say"; nothing is defaulted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LlmCompletionMetadata {
    /// Non-cached prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u32>,
    /// Completion tokens (reasoning included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u32>,
    /// The provider's total, or input + output when it reports none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u32>,
    /// Prompt tokens read from the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u32>,
    /// Prompt tokens written to the provider's cache (Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_tokens: Option<u32>,
    /// Reasoning tokens (a subset of `completion_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u32>,
    /// Cost in US dollars, when a gateway reports it (`usage.cost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_cost_usd: Option<f64>,
    /// The model that was requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The model the provider says it served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    /// How the turn ended, in the Chat Completions vocabulary (`stop`,
    /// `length`, `tool_calls`, `content_filter`, …). `None` when the
    /// provider sent no reason: a host can fail closed on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The provider's own reason before normalization (`end_turn`,
    /// `MAX_TOKENS`, `max_output_tokens`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_finish_reason: Option<String>,
    /// The provider's response id (`chatcmpl-…`, `resp_…`, `msg_…`, `gen-…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// What the retry layer did; `None` when no retry happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_metadata: Option<RetryMetadata>,
    /// Hosted tool calls per kind (`web_search_call` → 2).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hosted_tool_calls: BTreeMap<String, u32>,
    /// Tool calls discarded because their arguments were cut off or
    /// unparseable without the provider finishing them, or because the
    /// response ended for another reason (`length`, `content_filter`).
    #[serde(default)]
    pub tool_calls_dropped: u32,
}

/// Non-cached prompt tokens from an inclusive count (OpenAI, Gemini report
/// input including cached tokens).
pub fn disjoint_prompt_tokens(reported_input: u32, cache_read: Option<u32>) -> u32 {
    reported_input.saturating_sub(cache_read.unwrap_or(0))
}
