//! Reasoning artifacts: the persistable record of a thinking block.

use serde::{Deserialize, Serialize};

/// The readable part of a reasoning block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReasoningText {
    /// Verbatim chain-of-thought (Anthropic thinking, Gemini thought parts,
    /// Chat Completions `reasoning_content`).
    Plain {
        /// The text.
        text: String,
    },
    /// Provider-written summary parts (OpenAI Responses `summary_text`).
    Summary {
        /// The parts, in order.
        parts: Vec<String>,
    },
    /// Hidden by the provider (Anthropic `redacted_thinking`); the opaque
    /// payload still must be replayed.
    Redacted,
}

impl ReasoningText {
    /// The text to show: plain text, or summary parts joined by a blank line.
    pub fn display_text(&self) -> Option<String> {
        match self {
            ReasoningText::Plain { text } => Some(text.clone()),
            ReasoningText::Summary { parts } => Some(parts.join("\n\n")),
            ReasoningText::Redacted => None,
        }
    }
}

/// One completed reasoning block: readable text plus the opaque state the
/// same provider needs to accept it back in a later request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReasoningContentPart {
    /// Which provider family issued it (`anthropic`, `openai`, `google`,
    /// `openai-protocol`); replay is valid only there.
    pub provider: String,
    /// The provider's item id (OpenAI `rs_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    /// Anthropic signature or Gemini `thoughtSignature`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// OpenAI `encrypted_content`, or Anthropic redacted data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<String>,
    /// The readable text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<ReasoningText>,
    /// Gemini: the tool call a signature is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_tool_call_id: Option<String>,
}

impl ReasoningContentPart {
    /// An empty part of `provider`.
    pub fn opaque(provider: impl Into<String>) -> Self {
        ReasoningContentPart {
            provider: provider.into(),
            ..Default::default()
        }
    }

    /// With readable text.
    #[must_use]
    pub fn with_text(mut self, text: ReasoningText) -> Self {
        self.text = Some(text);
        self
    }

    /// With a signature.
    #[must_use]
    pub fn with_signature(mut self, signature: impl Into<String>) -> Self {
        self.signature = Some(signature.into());
        self
    }

    /// With an item id.
    #[must_use]
    pub fn with_item_id(mut self, id: impl Into<String>) -> Self {
        self.item_id = Some(id.into());
        self
    }

    /// With an encrypted payload.
    #[must_use]
    pub fn with_encrypted(mut self, encrypted: impl Into<String>) -> Self {
        self.encrypted = Some(encrypted.into());
        self
    }

    /// Bound to one tool call (Gemini).
    #[must_use]
    pub fn with_bound_tool_call_id(mut self, id: impl Into<String>) -> Self {
        self.bound_tool_call_id = Some(id.into());
        self
    }

    /// The readable text, if any.
    pub fn display_text(&self) -> Option<String> {
        self.text.as_ref().and_then(ReasoningText::display_text)
    }

    /// True when it carries state the provider needs back (signature,
    /// encrypted payload or item id).
    pub fn has_replay_state(&self) -> bool {
        self.signature.is_some() || self.encrypted.is_some() || self.item_id.is_some()
    }
}
