//! Human-in-the-loop decisions (spec §10).
//!
//! A driver that must block on a human asks the sink:
//!
//! ```
//! # use agent_adaptor_driver::*;
//! # async fn example(sink: &dyn EventSink) -> Result<(), DriverError> {
//! if let Some(decisions) = sink.decisions() {
//!     let mut req = DecisionRequest::new(DecisionKind::Permission, "mydriver.tool");
//!     req.prompt = "Allow this operation?".into();
//!     let resp = decisions.request_decision(req).await?;
//!     if resp.result != DecisionResult::Approved {
//!         // stop or steer the provider
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! Core assigns the request id, time and deadline, enforces the approval
//! policy and routes the request to the host. A driver never keeps a second
//! host channel of its own.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What kind of decision a human is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Allow or deny an operation (a tool call, a command).
    Permission,
    /// Approve or reject a plan.
    PlanReview,
    /// Answer a question (free text or one of `choices`).
    Question,
}

impl DecisionKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::Permission => "permission",
            DecisionKind::PlanReview => "plan_review",
            DecisionKind::Question => "question",
        }
    }
}

/// One choice offered with a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionChoice {
    /// The machine key returned as the answer.
    pub key: String,
    /// The label shown to the human.
    pub label: String,
    /// A longer description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// A request for a human decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRequest {
    /// Assigned by core when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub request_id: String,
    /// Assigned by core.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub run_id: String,
    /// The provider thread, when known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub thread_id: String,
    /// The decision kind.
    pub kind: DecisionKind,
    /// Which provider operation asks (e.g. `"claude.can_use_tool"`).
    pub source: String,
    /// The tool call the decision is about.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_call_id: String,
    /// The question put to the human.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prompt: String,
    /// Structured details (tool name, input …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    /// Offered choices (questions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<DecisionChoice>,
    /// The provider's default, when it has one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub default_decision: String,
    /// Assigned by core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    /// Assigned by core from the approval policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DateTime<Utc>>,
    /// 0 for the first attempt.
    #[serde(default)]
    pub retry_attempt: u32,
}

impl DecisionRequest {
    /// A request of `kind` from `source`, every other field empty.
    pub fn new(kind: DecisionKind, source: impl Into<String>) -> Self {
        DecisionRequest {
            request_id: String::new(),
            run_id: String::new(),
            thread_id: String::new(),
            kind,
            source: source.into(),
            tool_call_id: String::new(),
            prompt: String::new(),
            payload: None,
            choices: Vec::new(),
            default_decision: String::new(),
            created_at: None,
            deadline: None,
            retry_attempt: 0,
        }
    }
}

/// How a decision ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionResult {
    /// Approved.
    Approved,
    /// Rejected.
    Rejected,
    /// A question was answered.
    Answered,
    /// Nobody answered before the deadline.
    TimedOut,
    /// The run was cancelled or the handler failed.
    Aborted,
}

impl DecisionResult {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionResult::Approved => "approved",
            DecisionResult::Rejected => "rejected",
            DecisionResult::Answered => "answered",
            DecisionResult::TimedOut => "timed_out",
            DecisionResult::Aborted => "aborted",
        }
    }
}

/// The answer to a [`DecisionRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionResponse {
    /// The request this answers.
    pub request_id: String,
    /// How it ended.
    pub result: DecisionResult,
    /// The chosen choice key, for questions.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub choice: String,
    /// Structured answer fields.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub answer: BTreeMap<String, Value>,
    /// Free text (a denial reason, a typed answer).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// Audit broadcast of a provider-visible decision request (no responder).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HitlRequested {
    /// The request as the provider showed it.
    pub request: DecisionRequest,
}

/// Audit broadcast of a provider-visible decision outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HitlResolved {
    /// The request id.
    pub request_id: String,
    /// The outcome.
    pub result: DecisionResult,
    /// The chosen choice key.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub choice: String,
    /// When it was resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<DateTime<Utc>>,
    /// The attempt number.
    #[serde(default)]
    pub attempt: u32,
}

/// Why a decision could not be obtained.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecisionError {
    /// The run was cancelled while waiting.
    #[error("run cancelled while waiting for a decision")]
    Cancelled,
    /// The approval handler failed; the run is aborted.
    #[error("approval handler failed: {0}")]
    HandlerFailed(String),
    /// The request itself was invalid (e.g. a question with neither prompt nor choices).
    #[error("invalid decision request: {0}")]
    InvalidRequest(String),
}

/// The decision-capable side of the sink (spec §10, `DecisionCapableSink`).
#[async_trait]
pub trait DecisionSink: Send + Sync {
    /// Ask the host for a decision and wait for it. Honors cancellation and
    /// the policy's deadline: a timeout returns `Ok` with
    /// [`DecisionResult::TimedOut`].
    async fn request_decision(
        &self,
        request: DecisionRequest,
    ) -> Result<DecisionResponse, DecisionError>;
}
