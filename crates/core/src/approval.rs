//! Approval requests with an exactly-once responder (streaming guide §7).

use std::sync::{Arc, Mutex};

use agent_adaptor_driver::{DecisionChoice, DecisionKind, DecisionResult};
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::event::EventMeta;

/// The kind of an approval: permission, plan review or question.
pub type ApprovalKind = DecisionKind;

/// A request for a human decision, delivered on the event stream (or to the
/// [`on_approval`](crate::AgentBuilder::on_approval) handler).
///
/// Exactly one of [`approve`](Self::approve), [`deny`](Self::deny) or
/// [`answer`](Self::answer) takes effect; every later call, on this value or
/// any clone of it, returns a stable [`ApprovalError`]. None of them blocks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The envelope.
    pub meta: EventMeta,
    /// The request id.
    pub id: String,
    /// What is asked.
    pub kind: ApprovalKind,
    /// The question put to the human.
    pub title: String,
    /// Which provider operation asks.
    pub source: String,
    /// The tool call it concerns, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_call_id: String,
    /// Offered choices (questions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<DecisionChoice>,
    /// Structured details (tool name, input …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// When it was asked.
    pub created_at: DateTime<Utc>,
    /// When it expires, if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DateTime<Utc>>,
    /// 0 for the first attempt.
    pub attempt: u32,
    /// Deserialized requests (a durable log's replay) are detached: see
    /// [`detached`](Self::detached).
    #[serde(skip)]
    pub(crate) responder: Responder,
    /// The tool [`approve_always`](Self::approve_always) would always
    /// allow: set for a thread run's permission request that names its tool.
    #[serde(skip)]
    pub(crate) grant: Option<Arc<str>>,
}

/// Why a response to an [`ApprovalRequest`] was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// The request was already answered.
    #[error("approval request already resolved")]
    AlreadyResolved,
    /// The request expired (deadline passed, run cancelled or finished).
    #[error("approval request expired")]
    Expired,
    /// `approve` on a question, or `answer` on a permission / plan review.
    #[error("{op} does not apply to a {kind:?} request")]
    KindMismatch {
        /// The request's kind.
        kind: ApprovalKind,
        /// The refused operation.
        op: &'static str,
    },
    /// The request has no responder (a copy made for replay, or deserialized).
    #[error("approval request has no responder")]
    Unavailable,
    /// `approve_always` on a request that cannot be granted for good: not
    /// a thread run, or the request names no tool.
    #[error("always allow needs a thread run's permission request that names its tool")]
    NotGrantable,
}

/// The answer a responder delivers to the waiting driver.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answer {
    pub(crate) result: DecisionResult,
    pub(crate) choice: String,
    pub(crate) text: String,
    /// Approved, and the tool is to be always allowed in the thread.
    pub(crate) grant: bool,
    /// A standing rule of the host answered (a prepared handler such as
    /// [`deny_all`]), not a person: recorded as `decided_by: policy`.
    pub(crate) by_policy: bool,
}

#[derive(Debug)]
enum Slot {
    Pending(oneshot::Sender<Answer>),
    Resolved,
    Expired,
}

/// The exactly-once responder shared by every clone of one request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Responder(Option<Arc<Mutex<Slot>>>);

impl Responder {
    /// A live responder and the receiver the waiting side holds.
    pub(crate) fn new() -> (Self, oneshot::Receiver<Answer>) {
        let (tx, rx) = oneshot::channel();
        (Responder(Some(Arc::new(Mutex::new(Slot::Pending(tx))))), rx)
    }

    fn resolve(&self, answer: Answer) -> Result<(), ApprovalError> {
        let slot = self.0.as_ref().ok_or(ApprovalError::Unavailable)?;
        let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
        match std::mem::replace(&mut *guard, Slot::Resolved) {
            Slot::Pending(tx) => {
                if tx.send(answer).is_err() {
                    // The waiter gave up between our check and the send.
                    *guard = Slot::Expired;
                    return Err(ApprovalError::Expired);
                }
                Ok(())
            }
            Slot::Resolved => Err(ApprovalError::AlreadyResolved),
            Slot::Expired => {
                *guard = Slot::Expired;
                Err(ApprovalError::Expired)
            }
        }
    }

    /// Mark the request expired unless it was already resolved.
    pub(crate) fn expire(&self) {
        if let Some(slot) = &self.0 {
            let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
            if matches!(*guard, Slot::Pending(_)) {
                *guard = Slot::Expired;
            }
        }
    }
}

impl ApprovalRequest {
    /// Approve a permission or plan-review request.
    pub fn approve(&self) -> Result<(), ApprovalError> {
        self.approve_as(false)
    }

    /// [`approve`](Self::approve) as a standing rule of the host rather
    /// than a person's answer: the decision is recorded with
    /// `decided_by: policy` (in the result's decisions and the
    /// `approval.resolved` notice).
    pub fn approve_by_policy(&self) -> Result<(), ApprovalError> {
        self.approve_as(true)
    }

    fn approve_as(&self, by_policy: bool) -> Result<(), ApprovalError> {
        if self.kind == DecisionKind::Question {
            return Err(ApprovalError::KindMismatch {
                kind: self.kind,
                op: "approve",
            });
        }
        self.responder.resolve(Answer {
            result: DecisionResult::Approved,
            choice: String::new(),
            text: String::new(),
            grant: false,
            by_policy,
        })
    }

    /// Approve a permission request and always allow its tool in this
    /// thread: the thread's later requests for the tool are approved
    /// without asking (see [`Thread::always_allowed`](crate::Thread::always_allowed)).
    /// [`ApprovalError::NotGrantable`] when [`always_allow_tool`](Self::always_allow_tool)
    /// is `None` (nothing is answered then).
    pub fn approve_always(&self) -> Result<(), ApprovalError> {
        if self.kind != DecisionKind::Permission {
            return Err(ApprovalError::KindMismatch {
                kind: self.kind,
                op: "approve_always",
            });
        }
        if self.grant.is_none() {
            return Err(ApprovalError::NotGrantable);
        }
        self.responder.resolve(Answer {
            result: DecisionResult::Approved,
            choice: String::new(),
            text: String::new(),
            grant: true,
            by_policy: false,
        })
    }

    /// The tool [`approve_always`](Self::approve_always) would always allow
    /// in this thread; `None` when it cannot be offered.
    pub fn always_allow_tool(&self) -> Option<&str> {
        self.grant.as_deref()
    }

    /// Deny (or, for a question, decline) the request, with a reason.
    pub fn deny(&self, reason: impl Into<String>) -> Result<(), ApprovalError> {
        self.deny_as(reason.into(), false)
    }

    /// [`deny`](Self::deny) as a standing rule of the host rather than a
    /// person's answer: the decision is recorded with `decided_by: policy`.
    pub fn deny_by_policy(&self, reason: impl Into<String>) -> Result<(), ApprovalError> {
        self.deny_as(reason.into(), true)
    }

    fn deny_as(&self, reason: String, by_policy: bool) -> Result<(), ApprovalError> {
        self.responder.resolve(Answer {
            result: DecisionResult::Rejected,
            choice: String::new(),
            text: reason,
            grant: false,
            by_policy,
        })
    }

    /// Answer a question: a choice key when choices were offered, else free text.
    pub fn answer(&self, answer: impl Into<String>) -> Result<(), ApprovalError> {
        if self.kind != DecisionKind::Question {
            return Err(ApprovalError::KindMismatch {
                kind: self.kind,
                op: "answer",
            });
        }
        let answer = answer.into();
        let is_choice = self.choices.iter().any(|c| c.key == answer);
        self.responder.resolve(Answer {
            result: DecisionResult::Answered,
            choice: if is_choice {
                answer.clone()
            } else {
                String::new()
            },
            text: answer,
            grant: false,
            by_policy: false,
        })
    }

    /// A copy without a responder (for recorders and replay): every response
    /// on it returns [`ApprovalError::Unavailable`].
    pub fn detached(&self) -> Self {
        let mut copy = self.clone();
        copy.responder = Responder::default();
        copy.grant = None;
        copy
    }
}

/// The error type approval handlers return.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A callback that resolves approval requests instead of the event stream.
///
/// It must resolve the request exactly once and return `Ok`. Returning an
/// error aborts the run; returning `Ok` without resolving fails it.
pub type ApprovalHandler =
    Arc<dyn Fn(ApprovalRequest) -> BoxFuture<'static, Result<(), BoxError>> + Send + Sync>;

/// A handler that approves every permission and plan review and declines
/// every question. Its decisions are the host's policy (`decided_by:
/// policy`), not a person's.
pub fn approve_all() -> ApprovalHandler {
    Arc::new(|req: ApprovalRequest| {
        Box::pin(async move {
            if req.kind == DecisionKind::Question {
                req.deny_by_policy("questions are declined by approve_all")?;
            } else {
                req.approve_by_policy()?;
            }
            Ok(())
        })
    })
}

/// A handler that denies everything with `reason`. Its decisions are the
/// host's policy (`decided_by: policy`), not a person's.
pub fn deny_all(reason: impl Into<String>) -> ApprovalHandler {
    let reason: Arc<str> = reason.into().into();
    Arc::new(move |req: ApprovalRequest| {
        let reason = reason.clone();
        Box::pin(async move {
            req.deny_by_policy(&*reason)?;
            Ok(())
        })
    })
}
