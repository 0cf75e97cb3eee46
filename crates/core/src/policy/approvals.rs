//! The one place human decisions are decided: a driver's
//! [`DecisionRequest`] is answered by the policy (auto modes) or by the host
//! (ask), with the policy's timeout, and the timeout / rejection fallbacks
//! (abort, continue, retry) applied here and nowhere else.

use std::time::Duration;

use agent_adaptor_driver::{
    ApprovalMode, DEFAULT_HUMAN_DECISION_MAX_RETRIES, DEFAULT_HUMAN_DECISION_TIMEOUT,
    DecisionError, DecisionKind, DecisionRequest, DecisionResponse, DecisionResult, FallbackAction,
    RunPolicyCapabilities,
};
use chrono::Utc;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::record::{DecidedBy, DecisionRecord};
use super::{ApprovalPolicy, KINDS, RETRY_UNSUPPORTED_WARNING};
use crate::approval::Answer;
use crate::control::StopReason;
use crate::event::notice_kind;
use crate::sink::CoreSink;
use crate::thread::grants::grant_name;

/// The approval policy of one run, resolved against the driver's
/// declarations: no inherit left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Effective {
    modes: [ApprovalMode; 3],
    /// The mode of a host tool's permission request: core itself asks, so
    /// inherit is ask whatever the driver declares.
    host_tools: ApprovalMode,
    /// `None`: no deadline.
    timeout: Option<Duration>,
    on_timeout: [FallbackAction; 3],
    on_reject: [FallbackAction; 3],
    max_retries: u32,
    /// Kinds whose explicit retry the driver cannot honour (degraded to
    /// abort), with the fallback that asked for it.
    degraded: Vec<(DecisionKind, &'static str)>,
}

impl Default for Effective {
    /// Ask for every kind, 30 s, continue: the policy of a driver that can
    /// ask for everything when nothing is set.
    fn default() -> Self {
        Effective {
            modes: [ApprovalMode::Ask; 3],
            host_tools: ApprovalMode::Ask,
            timeout: Some(DEFAULT_HUMAN_DECISION_TIMEOUT),
            on_timeout: [FallbackAction::Continue; 3],
            on_reject: [FallbackAction::Continue; 3],
            max_retries: DEFAULT_HUMAN_DECISION_MAX_RETRIES,
            degraded: Vec::new(),
        }
    }
}

fn index(kind: DecisionKind) -> usize {
    match kind {
        DecisionKind::Permission => 0,
        DecisionKind::PlanReview => 1,
        DecisionKind::Question => 2,
    }
}

impl Effective {
    /// Resolve `policy` (already validated) for a driver declaring `caps`.
    ///
    /// An inherit mode asks, except for a kind the driver declares modes
    /// for but not `ask`: such a request (it reaches core only when the
    /// run's policy made the driver route its decisions) cannot be put to a
    /// human, so the policy answers it with the safe answer, deny. A kind
    /// without any declaration keeps the pre-policy behaviour: ask.
    /// Inherit fallbacks continue; an explicit retry the driver does not
    /// declare degrades to abort.
    pub(crate) fn resolve(policy: &ApprovalPolicy, caps: &RunPolicyCapabilities) -> Effective {
        let mut eff = Effective {
            timeout: match policy.timeout {
                None => Some(DEFAULT_HUMAN_DECISION_TIMEOUT),
                Some(t) => t.duration(),
            },
            max_retries: policy
                .max_retries
                .unwrap_or(DEFAULT_HUMAN_DECISION_MAX_RETRIES),
            host_tools: match policy.permission {
                ApprovalMode::Inherit => ApprovalMode::Ask,
                explicit => explicit,
            },
            ..Effective::default()
        };
        for kind in KINDS {
            let i = index(kind);
            eff.modes[i] = match policy.mode(kind) {
                ApprovalMode::Inherit if caps.can_ask(kind) || !declares_any(caps, kind) => {
                    ApprovalMode::Ask
                }
                ApprovalMode::Inherit => ApprovalMode::AutoDeny,
                explicit => explicit,
            };
            let asks = eff.modes[i] == ApprovalMode::Ask;
            for (slot, set, name) in [
                (&mut eff.on_timeout[i], policy.on_timeout, "on_timeout"),
                (&mut eff.on_reject[i], policy.on_reject, "on_reject"),
            ] {
                *slot = match set {
                    FallbackAction::Inherit => FallbackAction::Continue,
                    FallbackAction::Retry if !caps.can_retry(kind) => {
                        if asks {
                            eff.degraded.push((kind, name));
                        }
                        FallbackAction::Abort
                    }
                    explicit => explicit,
                };
            }
        }
        eff
    }

    /// The lifecycle notice data for the retries this driver cannot honour.
    pub(crate) fn retry_warning(&self) -> Option<(String, Value)> {
        if self.degraded.is_empty() {
            return None;
        }
        let degraded: Vec<Value> = self
            .degraded
            .iter()
            .map(|(kind, fallback)| json!({"kind": kind.as_str(), "fallback": fallback}))
            .collect();
        Some((
            "the driver cannot retry human decisions; retry degrades to abort".into(),
            json!({"warning": RETRY_UNSUPPORTED_WARNING, "degraded": degraded}),
        ))
    }
}

/// Whether the driver declares any mode for `kind`.
fn declares_any(caps: &RunPolicyCapabilities, kind: DecisionKind) -> bool {
    ApprovalMode::EXPLICIT
        .iter()
        .any(|m| caps.supports_mode(kind, *m))
}

/// What one `decide` call settled on.
struct Settled {
    answer: Answer,
    decided_by: DecidedBy,
    attempts: u32,
    fallback: Option<FallbackAction>,
}

/// Decide `req` per the run's policy. Called by the core sink for every
/// [`DecisionSink::request_decision`](agent_adaptor_driver::DecisionSink).
pub(crate) async fn decide(
    sink: &CoreSink,
    mut req: DecisionRequest,
) -> Result<DecisionResponse, DecisionError> {
    if req.kind == DecisionKind::Question && req.prompt.trim().is_empty() && req.choices.is_empty()
    {
        return Err(DecisionError::InvalidRequest(
            "a question needs a prompt or choices".into(),
        ));
    }
    if sink.is_stopped() {
        // The run is ending (cancelled, or a policy stopped it): a later
        // request is neither asked nor answered.
        return Err(DecisionError::Cancelled);
    }
    if req.request_id.is_empty() {
        req.request_id = crate::id::new_id("apr_");
    }
    let routing = sink.approvals();
    let eff = &routing.policy;
    let i = index(req.kind);
    let mode =
        if req.source == crate::tools::APPROVAL_SOURCE && req.kind == DecisionKind::Permission {
            eff.host_tools
        } else {
            eff.modes[i]
        };
    let started = Instant::now();
    // The thread's grant of this tool, when it has one: approved without
    // asking. The tool a human's "always" would grant, otherwise.
    let grant = match (&routing.thread, grant_name(&req)) {
        (Some(thread), Some(tool)) if mode == ApprovalMode::Ask => Some((thread, tool)),
        _ => None,
    };
    let granted = match &grant {
        Some((thread, tool)) if thread.allows(tool).await => Some(tool.clone()),
        _ => None,
    };
    // What the resolved notice says about the thread's grant.
    let mut grant_audit = Value::Null;

    let settled = if let Some(tool) = &granted {
        req.created_at = Some(Utc::now());
        grant_audit = json!({"tool": tool, "source": "thread"});
        let audit = json!({"request": &req, "decided_by": "policy", "thread_grant": &grant_audit});
        sink.notice(notice_kind::APPROVAL_REQUESTED, req.prompt.clone(), audit)
            .await?;
        Ok(Settled {
            answer: Answer {
                result: DecisionResult::Approved,
                choice: String::new(),
                text: String::new(),
                grant: false,
                by_policy: true,
            },
            decided_by: DecidedBy::Policy,
            attempts: 0,
            fallback: None,
        })
    } else if mode == ApprovalMode::Ask {
        ask(sink, &mut req, eff, i).await
    } else {
        let approve = mode == ApprovalMode::AutoApprove;
        req.created_at = Some(Utc::now());
        let audit = json!({"request": &req, "decided_by": "policy", "mode": mode.as_str()});
        sink.notice(notice_kind::APPROVAL_REQUESTED, req.prompt.clone(), audit)
            .await?;
        Ok(Settled {
            answer: Answer {
                result: if approve {
                    DecisionResult::Approved
                } else {
                    DecisionResult::Rejected
                },
                choice: String::new(),
                text: if approve {
                    String::new()
                } else {
                    format!("denied by the run policy ({})", mode.as_str())
                },
                grant: false,
                by_policy: true,
            },
            decided_by: DecidedBy::Policy,
            attempts: 0,
            fallback: None,
        })
    };

    let (settled, error) = match settled {
        Ok(s) => (s, None),
        Err((e, attempts)) => (
            Settled {
                answer: Answer {
                    result: DecisionResult::Aborted,
                    choice: String::new(),
                    text: e.to_string(),
                    grant: false,
                    by_policy: false,
                },
                decided_by: DecidedBy::Aborted,
                attempts,
                fallback: None,
            },
            Some(e),
        ),
    };
    if settled.answer.grant
        && settled.answer.result == DecisionResult::Approved
        && let Some((thread, tool)) = &grant
    {
        // The human answered "always": the grant is kept before the driver
        // is answered, so a failure is reported, never dropped.
        grant_audit = match thread.grant(tool).await {
            Ok(()) => json!({"tool": tool, "source": "human", "granted": true}),
            Err(e) => {
                json!({"tool": tool, "source": "human", "granted": false, "error": e.to_string()})
            }
        };
    }
    let record = DecisionRecord {
        request_id: req.request_id.clone(),
        kind: req.kind,
        source: req.source.clone(),
        tool_call_id: req.tool_call_id.clone(),
        title: req.prompt.clone(),
        mode,
        result: settled.answer.result,
        decided_by: settled.decided_by,
        attempts: settled.attempts,
        fallback: settled.fallback,
        choice: settled.answer.choice.clone(),
        text: settled.answer.text.clone(),
        latency: started.elapsed(),
    };
    sink.record_decision(record.clone()).await;
    if let Some(e) = error {
        return Err(e);
    }
    let audit = json!({
        "request_id": record.request_id,
        "kind": record.kind.as_str(),
        "result": record.result.as_str(),
        "choice": record.choice,
        "attempt": req.retry_attempt,
        "attempts": record.attempts,
        "decided_by": record.decided_by.as_str(),
        "mode": record.mode.as_str(),
        "fallback": record.fallback.map(FallbackAction::as_str),
        "latency_ms": u64::try_from(record.latency.as_millis()).unwrap_or(u64::MAX),
    });
    let mut audit = audit;
    if !grant_audit.is_null() {
        audit["thread_grant"] = grant_audit;
    }
    let aborted = record.fallback == Some(FallbackAction::Abort);
    let result = record.result;
    sink.notice(
        notice_kind::APPROVAL_RESOLVED,
        result.as_str().to_owned(),
        audit,
    )
    .await?;
    if aborted {
        // The driver has not been answered yet, so it cannot make progress
        // the policy forbids: the run stops before the answer is returned.
        let boxed = Box::new(record);
        sink.stop(if result == DecisionResult::TimedOut {
            StopReason::ApprovalTimeout(boxed)
        } else {
            StopReason::ApprovalDenied(boxed)
        });
    }
    Ok(DecisionResponse {
        request_id: req.request_id,
        result,
        choice: settled.answer.choice,
        answer: Default::default(),
        text: settled.answer.text,
    })
}

/// Who gave a host's answer: a prepared rule (`deny_all` …) or a person.
fn answerer(answer: &Answer) -> DecidedBy {
    if answer.by_policy {
        DecidedBy::Policy
    } else {
        DecidedBy::Human
    }
}

/// Ask the host until the answer settles the decision (with retries).
async fn ask(
    sink: &CoreSink,
    req: &mut DecisionRequest,
    eff: &Effective,
    i: usize,
) -> Result<Settled, (DecisionError, u32)> {
    let first_attempt = req.retry_attempt;
    let mut attempts = 0;
    loop {
        attempts += 1;
        let answer = {
            // The active-execution clock stands still while a human is asked.
            let _paused = sink.approvals().clock.as_ref().map(|c| c.pause());
            sink.ask_host(req, eff.timeout).await
        };
        let answer = answer.map_err(|e| (e, attempts))?;
        let fallback = match answer.result {
            DecisionResult::Rejected => eff.on_reject[i],
            DecisionResult::TimedOut => eff.on_timeout[i],
            _ => {
                let decided_by = if answer.result == DecisionResult::Aborted {
                    DecidedBy::Aborted
                } else {
                    answerer(&answer)
                };
                return Ok(Settled {
                    answer,
                    decided_by,
                    attempts,
                    fallback: None,
                });
            }
        };
        let decided_by = if answer.result == DecisionResult::TimedOut {
            DecidedBy::Timeout
        } else {
            answerer(&answer)
        };
        let fallback = match fallback {
            FallbackAction::Retry if req.retry_attempt - first_attempt < eff.max_retries => {
                let audit = json!({
                    "request_id": req.request_id,
                    "kind": req.kind.as_str(),
                    "result": answer.result.as_str(),
                    "attempt": req.retry_attempt,
                    "decided_by": decided_by.as_str(),
                    "fallback": "retry",
                });
                sink.notice(
                    notice_kind::APPROVAL_RESOLVED,
                    answer.result.as_str().to_owned(),
                    audit,
                )
                .await
                .map_err(|e| (e, attempts))?;
                req.retry_attempt += 1;
                continue;
            }
            FallbackAction::Retry | FallbackAction::Abort => FallbackAction::Abort,
            _ => FallbackAction::Continue,
        };
        let mut answer = answer;
        if answer.text.is_empty() && answer.result == DecisionResult::TimedOut {
            answer.text = "no answer before the deadline".into();
        }
        return Ok(Settled {
            answer,
            decided_by,
            attempts,
            fallback: Some(fallback),
        });
    }
}
