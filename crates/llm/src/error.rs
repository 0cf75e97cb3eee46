//! Errors: [`LlmStreamError`] (a provider's terminal error inside a stream),
//! [`LlmError`] (a call that failed: before the stream, or a broken stream),
//! and their shared classifier [`LlmErrorKind`].
//!
//! Classification matches on fields (code, then status, then a few quota
//! phrases in the message), never on display text, and keeps the provider's
//! own code and status.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::retry::RetryMetadata;

/// What kind of failure an error is, for a host deciding what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LlmErrorKind {
    /// Bad or missing credentials (401/403, `invalid_api_key`).
    Authentication,
    /// Too many requests for now (429, `rate_limit_exceeded`, overloaded).
    RateLimited,
    /// Out of quota or credits: waiting does not help (`insufficient_quota`, 402).
    QuotaExhausted,
    /// The provider is down or timed out (408/409/5xx except 501).
    Unavailable,
    /// The request was rejected (other 4xx, `invalid_request_error`).
    InvalidRequest,
    /// The response broke the protocol: unparseable, over a limit, or (with
    /// `require_terminal_event`) no terminal event.
    MalformedResponse,
    /// The stream ended (the connection dropped) before its terminal event,
    /// after events were delivered; nothing was retried.
    Incomplete,
    /// Anything else.
    Other,
}

impl LlmErrorKind {
    /// Classifies a provider error code (OpenAI, Anthropic, Gemini words).
    pub fn from_code(code: &str) -> Option<LlmErrorKind> {
        let code = code.to_ascii_lowercase();
        Some(match code.as_str() {
            "insufficient_quota" | "billing_hard_limit_reached" | "usage_limit_reached" => {
                LlmErrorKind::QuotaExhausted
            }
            "invalid_api_key"
            | "authentication_error"
            | "permission_error"
            | "permission_denied"
            | "unauthenticated" => LlmErrorKind::Authentication,
            "rate_limit_exceeded"
            | "rate_limit_error"
            | "overloaded_error"
            | "resource_exhausted"
            | "too_many_requests" => LlmErrorKind::RateLimited,
            "server_error"
            | "api_error"
            | "processing_error"
            | "timeout"
            | "unavailable"
            | "internal"
            | "deadline_exceeded"
            | "service_unavailable" => LlmErrorKind::Unavailable,
            "invalid_request_error"
            | "model_not_found"
            | "not_found_error"
            | "invalid_argument"
            | "failed_precondition"
            | "not_found"
            | "request_too_large"
            | "context_length_exceeded" => LlmErrorKind::InvalidRequest,
            "malformed_response" => LlmErrorKind::MalformedResponse,
            _ => return None,
        })
    }

    /// Classifies an HTTP status; quota wording in `message` wins (a 429
    /// that says "quota" is not retryable).
    pub fn from_status(status: u16, message: &str) -> LlmErrorKind {
        if mentions_quota(message) {
            return LlmErrorKind::QuotaExhausted;
        }
        match status {
            401 | 403 => LlmErrorKind::Authentication,
            402 => LlmErrorKind::QuotaExhausted,
            429 => LlmErrorKind::RateLimited,
            408 | 409 => LlmErrorKind::Unavailable,
            501 => LlmErrorKind::Other,
            500..=599 => LlmErrorKind::Unavailable,
            400..=499 => LlmErrorKind::InvalidRequest,
            _ => LlmErrorKind::Other,
        }
    }

    /// Code first, then status, then `Other`.
    pub fn classify(code: Option<&str>, status: Option<u16>, message: &str) -> LlmErrorKind {
        if mentions_quota(message) {
            return LlmErrorKind::QuotaExhausted;
        }
        code.and_then(LlmErrorKind::from_code)
            .or_else(|| status.map(|status| LlmErrorKind::from_status(status, message)))
            .unwrap_or(LlmErrorKind::Other)
    }

    /// True for kinds a later attempt may fix (rate limits, outages).
    pub fn is_transient(self) -> bool {
        matches!(self, LlmErrorKind::RateLimited | LlmErrorKind::Unavailable)
    }
}

fn mentions_quota(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    [
        "insufficient_quota",
        "exceeded your current quota",
        "usage limit",
        "insufficient credits",
    ]
    .iter()
    .any(|phrase| lower.contains(phrase))
}

/// A provider's error inside a stream (the payload of
/// [`LlmStreamEvent::Error`](crate::LlmStreamEvent::Error)), with the
/// provider's own code and HTTP status, including those of an error envelope
/// a gateway sends inside a `200` stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LlmStreamError {
    /// The provider's stable error code (`rate_limit_exceeded`,
    /// `overloaded_error`, `RESOURCE_EXHAUSTED` …).
    pub code: Option<String>,
    /// The HTTP status the provider attached (or, for Anthropic, the status
    /// its documented error type stands for).
    pub status: Option<u16>,
    /// The provider's message.
    pub message: String,
}

impl LlmStreamError {
    /// An error with a message only.
    pub fn new(message: impl Into<String>) -> Self {
        LlmStreamError {
            code: None,
            status: None,
            message: message.into(),
        }
    }

    /// An error with the provider's code and status.
    pub fn provider(
        code: Option<impl Into<String>>,
        status: Option<u16>,
        message: impl Into<String>,
    ) -> Self {
        LlmStreamError {
            code: code.map(Into::into),
            status,
            message: message.into(),
        }
    }

    /// The classification: code, then status, then quota wording.
    pub fn kind(&self) -> LlmErrorKind {
        LlmErrorKind::classify(self.code.as_deref(), self.status, &self.message)
    }
}

impl fmt::Display for LlmStreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.code, self.status) {
            (Some(code), Some(status)) => write!(f, "{code} ({status}): {}", self.message),
            (Some(code), None) => write!(f, "{code}: {}", self.message),
            (None, Some(status)) => write!(f, "({status}): {}", self.message),
            (None, None) => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for LlmStreamError {}

/// A failed call: the request could not be made or was refused, the stream
/// broke, a limit was exceeded, or the provider's in-stream error when
/// converted with [`LlmError::from_stream`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{}", self.describe())]
#[non_exhaustive]
pub struct LlmError {
    /// The classification.
    pub kind: LlmErrorKind,
    /// What happened, in words (the provider's message when there is one).
    pub message: String,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
    /// The provider's error code, when it sent one.
    pub code: Option<String>,
    /// The provider's `Retry-After`, when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<Duration>,
    /// The retries made before giving up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_metadata: Option<RetryMetadata>,
    /// The provider name, when the call went through a [`Provider`](crate::Provider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

impl LlmError {
    /// An error of `kind`.
    pub fn new(kind: LlmErrorKind, message: impl Into<String>) -> Self {
        LlmError {
            kind,
            message: message.into(),
            status: None,
            code: None,
            retry_after: None,
            retry_metadata: None,
            provider: None,
        }
    }

    /// An HTTP error response, classified from code and status.
    pub fn http(status: u16, code: Option<String>, message: impl Into<String>) -> Self {
        let message = message.into();
        let kind = code
            .as_deref()
            .and_then(LlmErrorKind::from_code)
            .filter(|_| !mentions_quota(&message))
            .unwrap_or_else(|| LlmErrorKind::from_status(status, &message));
        LlmError {
            status: Some(status),
            code,
            ..LlmError::new(kind, message)
        }
    }

    /// A response that broke the protocol.
    pub fn malformed(message: impl Into<String>) -> Self {
        LlmError::new(LlmErrorKind::MalformedResponse, message)
    }

    /// The provider's in-stream error as a call error (fields kept).
    pub fn from_stream(error: &LlmStreamError) -> Self {
        LlmError {
            status: error.status,
            code: error.code.clone(),
            ..LlmError::new(error.kind(), error.message.clone())
        }
    }

    /// With the retries made.
    #[must_use]
    pub fn with_retry_metadata(mut self, metadata: Option<RetryMetadata>) -> Self {
        self.retry_metadata = metadata;
        self
    }

    /// True when a later attempt may succeed.
    pub fn is_transient(&self) -> bool {
        self.kind.is_transient()
    }

    fn describe(&self) -> String {
        let mut out = String::new();
        if let Some(provider) = &self.provider {
            out.push_str(&format!("provider '{provider}': "));
        }
        match (&self.code, self.status) {
            (Some(code), Some(status)) => out.push_str(&format!("{code} ({status}): ")),
            (Some(code), None) => out.push_str(&format!("{code}: ")),
            (None, Some(status)) => out.push_str(&format!("({status}): ")),
            (None, None) => {}
        }
        out.push_str(&self.message);
        out
    }
}
