//! Normalized transcript items (spec §6) and their field rules (TRN-*), and
//! [`Transcript`], the list of them a run returns.

mod digest;
mod list;
mod shared;
mod spill;
#[cfg(test)]
mod tests;

pub use digest::TranscriptFingerprint;
pub use list::{DEFAULT_TRANSCRIPT_BUDGET, Iter, Transcript, TranscriptError};
pub use shared::SharedItem;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::usage::Usage;

/// The kind of a [`TranscriptItem`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TranscriptKind {
    /// Assistant text.
    Assistant,
    /// Reasoning text.
    Thinking,
    /// A user turn (only from a bridge or host, never replayed by a driver).
    User,
    /// A tool call (needs `tool_name`).
    ToolCall,
    /// A tool result (needs `tool_use_id`).
    ToolResult,
    /// The provider's session announcement.
    Init,
    /// The provider's terminal result.
    Result,
    /// A line of stdout that carried meaning.
    Stdout,
    /// A line of stderr that carried meaning.
    Stderr,
    /// A system message.
    System,
    /// A formal summary.
    Summary,
    /// A question put to the human (choices in `data["choices"]`).
    Question,
    /// A failure (code in `metadata["code"]`).
    Failure,
}

impl TranscriptKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TranscriptKind::Assistant => "assistant",
            TranscriptKind::Thinking => "thinking",
            TranscriptKind::User => "user",
            TranscriptKind::ToolCall => "tool_call",
            TranscriptKind::ToolResult => "tool_result",
            TranscriptKind::Init => "init",
            TranscriptKind::Result => "result",
            TranscriptKind::Stdout => "stdout",
            TranscriptKind::Stderr => "stderr",
            TranscriptKind::System => "system",
            TranscriptKind::Summary => "summary",
            TranscriptKind::Question => "question",
            TranscriptKind::Failure => "failure",
        }
    }

    /// Kinds whose item must carry text (TRN-01).
    pub fn requires_text(self) -> bool {
        matches!(
            self,
            TranscriptKind::Assistant
                | TranscriptKind::Thinking
                | TranscriptKind::User
                | TranscriptKind::Stdout
                | TranscriptKind::Stderr
                | TranscriptKind::System
                | TranscriptKind::Summary
                | TranscriptKind::Question
                | TranscriptKind::Failure
        )
    }
}

impl fmt::Display for TranscriptKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One normalized semantic item of a run's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptItem {
    /// What the item is.
    pub kind: TranscriptKind,
    /// Its text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// True when the item is a partial delta (only assistant/thinking, TRN-04).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delta: bool,
    /// The tool call id this item belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// The tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Tool input (or result payload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// True for an error result.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Model named by the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider session id named by this item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Usage reported on this item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Cost reported on this item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Provider subtype (e.g. `"success"`, `"error_max_turns"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtype: Option<String>,
    /// Error strings reported on this item.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Free-form string metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Structured extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl TranscriptItem {
    /// An item of `kind` with `text` and every other field empty.
    pub fn new(kind: TranscriptKind, text: impl Into<String>) -> Self {
        TranscriptItem {
            kind,
            text: text.into(),
            delta: false,
            tool_use_id: None,
            tool_name: None,
            input: None,
            is_error: false,
            model: None,
            session_id: None,
            usage: None,
            cost_usd: None,
            subtype: None,
            errors: Vec::new(),
            metadata: BTreeMap::new(),
            data: None,
        }
    }

    /// An assistant text item.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(TranscriptKind::Assistant, text)
    }

    /// A thinking item.
    pub fn thinking(text: impl Into<String>) -> Self {
        Self::new(TranscriptKind::Thinking, text)
    }

    /// A tool call item.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, input: Option<Value>) -> Self {
        let mut item = Self::new(TranscriptKind::ToolCall, "");
        item.tool_use_id = Some(id.into());
        item.tool_name = Some(name.into());
        item.input = input;
        item
    }

    /// A tool result item.
    pub fn tool_result(id: impl Into<String>, text: impl Into<String>, is_error: bool) -> Self {
        let mut item = Self::new(TranscriptKind::ToolResult, text);
        item.tool_use_id = Some(id.into());
        item.is_error = is_error;
        item
    }

    /// A 64-bit digest of every field, fast and stable within a process
    /// (never store it). Equal items have equal digests; a
    /// [`TranscriptFingerprint`] folds them, and core compares the emitted
    /// items' with [`Transcript::fingerprint`] (RUN-04).
    pub fn digest(&self) -> u64 {
        digest::digest(self)
    }

    /// Check the field rules of this item's kind (TRN-01 … TRN-04).
    pub fn validate(&self) -> Result<(), TranscriptViolation> {
        if self.kind.requires_text() && self.text.is_empty() {
            return Err(TranscriptViolation::MissingText(self.kind));
        }
        if self.kind == TranscriptKind::ToolCall
            && self.tool_name.as_deref().is_none_or(str::is_empty)
        {
            return Err(TranscriptViolation::MissingToolName);
        }
        if self.kind == TranscriptKind::ToolResult
            && self.tool_use_id.as_deref().is_none_or(str::is_empty)
        {
            return Err(TranscriptViolation::MissingToolUseId);
        }
        if self.delta
            && !matches!(
                self.kind,
                TranscriptKind::Assistant | TranscriptKind::Thinking
            )
        {
            return Err(TranscriptViolation::DeltaOnWrongKind(self.kind));
        }
        Ok(())
    }
}

/// A transcript item that breaks its kind's field rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptViolation {
    /// TRN-01: a text-bearing kind without text.
    #[error("TRN-01: {0} item has no text")]
    MissingText(TranscriptKind),
    /// TRN-02: a tool call without a tool name.
    #[error("TRN-02: tool_call item has no tool_name")]
    MissingToolName,
    /// TRN-03: a tool result without a tool-use id.
    #[error("TRN-03: tool_result item has no tool_use_id")]
    MissingToolUseId,
    /// TRN-04: a delta item of a kind other than assistant/thinking.
    #[error("TRN-04: delta set on a {0} item")]
    DeltaOnWrongKind(TranscriptKind),
}

impl TranscriptViolation {
    /// The conformance clause id (`"TRN-01"` …).
    pub fn clause(&self) -> &'static str {
        match self {
            TranscriptViolation::MissingText(_) => "TRN-01",
            TranscriptViolation::MissingToolName => "TRN-02",
            TranscriptViolation::MissingToolUseId => "TRN-03",
            TranscriptViolation::DeltaOnWrongKind(_) => "TRN-04",
        }
    }
}
