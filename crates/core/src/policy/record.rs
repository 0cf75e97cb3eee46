//! What core records of each human decision of a run
//! ([`DecisionRecord`], [`DecidedBy`]): a leaf, so that the result and
//! error types can hold records without importing the policy.

use std::time::Duration;

use agent_adaptor_driver::{ApprovalMode, DecisionKind, DecisionResult, FallbackAction};
use serde::{Serialize, Serializer};

/// Who (or what) settled a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DecidedBy {
    /// A human answered (on the stream or through the approval handler).
    Human,
    /// The policy answered without asking (auto-approve / auto-deny).
    Policy,
    /// Nobody answered before the deadline.
    Timeout,
    /// The wait ended without an answer: the run was cancelled, the
    /// approval handler failed, or every copy of the request was dropped.
    Aborted,
}

impl DecidedBy {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DecidedBy::Human => "human",
            DecidedBy::Policy => "policy",
            DecidedBy::Timeout => "timeout",
            DecidedBy::Aborted => "aborted",
        }
    }
}

/// The outcome of one human decision of a run, as core decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecisionRecord {
    /// The request id (the same for every attempt).
    pub request_id: String,
    /// The kind.
    pub kind: DecisionKind,
    /// Which provider operation asked.
    pub source: String,
    /// The tool call it concerned, if any.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tool_call_id: String,
    /// The question put to the human.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// The effective mode (never inherit).
    pub mode: ApprovalMode,
    /// What the driver was answered.
    pub result: DecisionResult,
    /// Who settled it.
    pub decided_by: DecidedBy,
    /// How many times the host was asked (0 for a policy answer).
    pub attempts: u32,
    /// The fallback applied after a timeout or a rejection: `continue` (the
    /// run went on with the deny) or `abort` (the run was stopped; also
    /// after the retries ran out). `None` when no fallback applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<FallbackAction>,
    /// The chosen choice key (questions).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub choice: String,
    /// Free text: a typed answer, or the reason of a denial.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// From the first ask to the outcome.
    #[serde(rename = "latency_ms", serialize_with = "millis")]
    pub latency: Duration,
}

fn millis<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
