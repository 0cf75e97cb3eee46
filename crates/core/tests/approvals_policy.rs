//! Approvals under a run policy, with the scripted driver (`Step::Decide`):
//! timeouts and rejections with their fallbacks (abort, continue, retry),
//! auto modes, questions, exactly-once under a race, the active-execution
//! budget (paused tokio time), HITL audit broadcasts, and the records every
//! outcome leaves in the result or the error.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_adaptor_core::driver::{
    DecisionChoice, DecisionKind, DecisionRequest, DecisionResult, HitlRequested, HitlResolved,
    HumanDecisionSupport, QuestionSupport, RunPolicyCapabilities, StreamKind, StreamPayload,
};
use agent_adaptor_core::policy::{
    ApprovalMode, ApprovalTimeout, DecidedBy, FallbackAction, Policy, QuestionMode,
    RETRY_UNSUPPORTED_WARNING,
};
use agent_adaptor_core::scripted::{ScriptedDriver, Step};
use agent_adaptor_core::{
    Agent, ApprovalError, ApprovalRequest, Error, Event, FailureReason, RunCause, RunOptions,
    RunResult, Runner, notice_kind,
};
use common::*;
use futures::StreamExt;
use serde_json::Value;

fn permission() -> DecisionRequest {
    let mut r = DecisionRequest::new(DecisionKind::Permission, "test.shell");
    r.prompt = "Run `rm -rf build`?".into();
    r.tool_call_id = "t1".into();
    r
}

fn plan() -> DecisionRequest {
    let mut r = DecisionRequest::new(DecisionKind::PlanReview, "test.plan");
    r.prompt = "Approve this plan?".into();
    r
}

fn question() -> DecisionRequest {
    let mut r = DecisionRequest::new(DecisionKind::Question, "test.ask");
    r.prompt = "Which database?".into();
    r.choices = ["pg", "sqlite"]
        .iter()
        .map(|k| DecisionChoice {
            key: (*k).into(),
            label: k.to_uppercase(),
            description: String::new(),
        })
        .collect();
    r
}

/// Declares every mode for every kind, and retry when `retry`.
fn caps(retry: bool) -> RunPolicyCapabilities {
    let binary = HumanDecisionSupport {
        ask: true,
        auto_approve: true,
        auto_reject: true,
        retry,
    };
    RunPolicyCapabilities {
        permission: binary,
        plan_review: binary,
        question: QuestionSupport {
            ask: true,
            auto_reject: true,
            retry,
        },
        ..Default::default()
    }
}

/// A driver that asks `requests` in order, then sleeps `after` (so that a
/// run the policy stops cannot get further), then finishes.
fn driver(requests: Vec<DecisionRequest>, after: Duration, caps: RunPolicyCapabilities) -> Agent {
    let mut steps = vec![Step::Stream(StreamPayload::run_started())];
    steps.extend(requests.into_iter().map(Step::Decide));
    steps.push(Step::Sleep(after));
    steps.push(Step::Stream(StreamPayload::run_finished(None)));
    Agent::new(scripted(steps, response("done", vec![])).with_run_policy(caps))
}

fn deciding(requests: Vec<DecisionRequest>) -> Agent {
    driver(requests, Duration::ZERO, caps(false))
}

/// Drain a run, handing each approval request to `answer` (which may keep
/// it unanswered).
async fn run(
    agent: &Agent,
    opts: RunOptions,
    mut answer: impl FnMut(&ApprovalRequest),
) -> (Vec<Event>, Result<RunResult, Error>) {
    let mut stream = agent.stream_with("q", opts);
    let mut events = Vec::new();
    while let Some(ev) = stream.next().await {
        if let Event::ApprovalRequest(req) = &ev {
            answer(req);
        }
        events.push(ev);
    }
    (events, stream.result().await)
}

fn requests(events: &[Event]) -> Vec<&ApprovalRequest> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ApprovalRequest(r) => Some(&**r),
            _ => None,
        })
        .collect()
}

fn with(policy: Policy) -> RunOptions {
    RunOptions::new().policy(policy)
}

const TEN_SECONDS: ApprovalTimeout = ApprovalTimeout::After(Duration::from_secs(10));

/// Keep every request unanswered (so it times out).
fn ignore(kept: &Arc<Mutex<Vec<ApprovalRequest>>>) -> impl FnMut(&ApprovalRequest) + use<> {
    let kept = kept.clone();
    move |req| kept.lock().unwrap().push(req.clone())
}

#[tokio::test(start_paused = true)]
async fn timeout_then_abort_fails_the_run_with_approval_timeout() {
    let agent = driver(vec![permission()], Duration::from_secs(3600), caps(false));
    let kept = Arc::new(Mutex::new(Vec::new()));
    let policy = Policy::default()
        .approval_timeout(TEN_SECONDS)
        .on_timeout(FallbackAction::Abort);
    let (events, outcome) = run(&agent, with(policy), ignore(&kept)).await;
    assert_envelope(&events);
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::ApprovalTimeout);
    let Some(RunCause::ApprovalTimeout(record)) = &run.cause else {
        panic!("{:?}", run.cause)
    };
    assert_eq!(record.kind, DecisionKind::Permission);
    assert_eq!(record.result, DecisionResult::TimedOut);
    assert_eq!(record.decided_by, DecidedBy::Timeout);
    assert_eq!(record.fallback, Some(FallbackAction::Abort));
    assert_eq!(record.attempts, 1);
    assert_eq!(record.latency, Duration::from_secs(10));
    assert_eq!(record.tool_call_id, "t1");
    let details = run.details.as_ref().unwrap();
    assert_eq!(details["decision"]["result"], "timed_out");
    assert_eq!(details["decisions"].as_array().unwrap().len(), 1);
    let finished = finished(&events);
    assert_eq!(finished.reason, Some(FailureReason::ApprovalTimeout));
    // The request expired with the deadline.
    let late = kept.lock().unwrap()[0].clone();
    assert_eq!(late.approve(), Err(ApprovalError::Expired));
    let deadline = late.deadline.unwrap() - late.created_at;
    assert_eq!(deadline, chrono::Duration::seconds(10));
}

#[tokio::test(start_paused = true)]
async fn timeout_then_continue_answers_deny_and_the_run_goes_on() {
    let agent = deciding(vec![permission()]);
    let kept = Arc::new(Mutex::new(Vec::new()));
    let policy = Policy::default()
        .approval_timeout(TEN_SECONDS)
        .on_timeout(FallbackAction::Continue);
    let (events, outcome) = run(&agent, with(policy), ignore(&kept)).await;
    assert_envelope(&events);
    let result = outcome.unwrap();
    assert_eq!(result.text, "done");
    // The driver was answered with the safe default: not approved.
    assert_eq!(result.metadata["decision.0"], "timed_out");
    let [record] = result.decisions() else {
        panic!("{:?}", result.decisions())
    };
    assert_eq!(
        (record.decided_by, record.fallback, record.result),
        (
            DecidedBy::Timeout,
            Some(FallbackAction::Continue),
            DecisionResult::TimedOut
        )
    );
    assert_eq!(record.text, "no answer before the deadline");
    let resolved = notices(&events, notice_kind::APPROVAL_RESOLVED);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].data.as_ref().unwrap()["fallback"], "continue");
}

#[tokio::test]
async fn reject_then_abort_fails_the_run_with_approval_denied() {
    let agent = driver(vec![permission()], Duration::from_secs(3600), caps(false));
    let policy = Policy::default()
        .permission(ApprovalMode::Ask)
        .on_reject(FallbackAction::Abort);
    let (events, outcome) = run(&agent, with(policy), |req| req.deny("not today").unwrap()).await;
    assert_envelope(&events);
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::ApprovalDenied);
    let Some(RunCause::ApprovalDenied(record)) = &run.cause else {
        panic!("{:?}", run.cause)
    };
    assert_eq!(record.text, "not today");
    assert_eq!(record.decided_by, DecidedBy::Human);
    assert_eq!(record.mode, ApprovalMode::Ask);
    assert!(
        run.message.contains("Run `rm -rf build`?"),
        "{}",
        run.message
    );
    assert_eq!(
        run.details.as_ref().unwrap()["decision"]["fallback"],
        "abort"
    );
}

#[tokio::test]
async fn reject_then_continue_lets_the_run_go_on() {
    let agent = deciding(vec![permission(), plan()]);
    let policy = Policy::default().on_reject(FallbackAction::Continue);
    let (_, outcome) = run(&agent, with(policy), |req| req.deny("no").unwrap()).await;
    let result = outcome.unwrap();
    assert_eq!(result.metadata["decision.0"], "rejected");
    assert_eq!(result.metadata["decision.1"], "rejected");
    let kinds: Vec<_> = result.decisions().iter().map(|d| d.kind).collect();
    assert_eq!(kinds, [DecisionKind::Permission, DecisionKind::PlanReview]);
    assert!(
        result
            .decisions()
            .iter()
            .all(|d| d.fallback == Some(FallbackAction::Continue) && d.text == "no")
    );
}

#[tokio::test(start_paused = true)]
async fn retry_asks_again_up_to_max_retries_then_aborts() {
    let agent = driver(vec![permission()], Duration::from_secs(3600), caps(true));
    let kept = Arc::new(Mutex::new(Vec::new()));
    let policy = Policy::default()
        .approval_timeout(TEN_SECONDS)
        .on_timeout(FallbackAction::Retry)
        .max_retries(2);
    let (events, outcome) = run(&agent, with(policy), ignore(&kept)).await;
    let asked = requests(&events);
    let attempts: Vec<u32> = asked.iter().map(|r| r.attempt).collect();
    assert_eq!(attempts, [0, 1, 2], "the first ask and two retries");
    assert!(asked.iter().all(|r| r.id == asked[0].id), "one decision");
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::ApprovalTimeout);
    let Some(RunCause::ApprovalTimeout(record)) = &run.cause else {
        panic!("{:?}", run.cause)
    };
    assert_eq!(record.attempts, 3);
    assert_eq!(record.fallback, Some(FallbackAction::Abort));
    assert_eq!(record.latency, Duration::from_secs(30));
    let retries: Vec<&Value> = notices(&events, notice_kind::APPROVAL_RESOLVED)
        .iter()
        .filter_map(|n| n.data.as_ref())
        .filter(|d| d["fallback"] == "retry")
        .collect();
    assert_eq!(retries.len(), 2);
}

#[tokio::test]
async fn retry_after_a_rejection_can_be_approved() {
    let agent = driver(vec![permission()], Duration::ZERO, caps(true));
    let policy = Policy::default().on_reject(FallbackAction::Retry);
    let (events, outcome) = run(&agent, with(policy), |req| {
        if req.attempt == 0 {
            req.deny("ask me again").unwrap();
        } else {
            req.approve().unwrap();
        }
    })
    .await;
    assert_eq!(requests(&events).len(), 2);
    let result = outcome.unwrap();
    assert_eq!(result.metadata["decision.0"], "approved");
    let [record] = result.decisions() else {
        panic!()
    };
    assert_eq!(
        (record.attempts, record.result, record.fallback),
        (2, DecisionResult::Approved, None)
    );
}

#[tokio::test]
async fn retry_the_driver_cannot_honour_warns_once_and_aborts() {
    let agent = driver(
        vec![permission(), permission()],
        Duration::from_secs(3600),
        caps(false),
    );
    let policy = Policy::default()
        .on_reject(FallbackAction::Retry)
        .on_timeout(FallbackAction::Retry);
    let (events, outcome) = run(&agent, with(policy), |req| req.deny("no").unwrap()).await;
    let warnings: Vec<&Value> = notices(&events, notice_kind::LIFECYCLE)
        .iter()
        .filter_map(|n| n.data.as_ref())
        .filter(|d| d["warning"] == RETRY_UNSUPPORTED_WARNING)
        .collect();
    assert_eq!(warnings.len(), 1, "one warning");
    assert_eq!(warnings[0]["degraded"].as_array().unwrap().len(), 6);
    assert_eq!(requests(&events).len(), 1, "no retry, and the run stopped");
    let err = outcome.unwrap_err();
    assert_eq!(
        err.as_run_error().unwrap().reason,
        FailureReason::ApprovalDenied
    );
}

#[tokio::test]
async fn auto_modes_answer_without_asking_and_are_visible() {
    let agent = deciding(vec![permission(), plan(), question()]);
    let policy = Policy::default()
        .permission(ApprovalMode::AutoApprove)
        .plan_review(ApprovalMode::AutoDeny)
        .question(QuestionMode::AutoDeny)
        // Fallbacks apply to humans only: an auto-deny never aborts.
        .on_reject(FallbackAction::Abort);
    let (events, outcome) = run(&agent, with(policy), |_| panic!("nobody is asked")).await;
    let result = outcome.unwrap();
    assert_eq!(result.metadata["decision.0"], "approved");
    assert_eq!(result.metadata["decision.1"], "rejected");
    assert_eq!(result.metadata["decision.2"], "rejected");
    assert!(requests(&events).is_empty());
    let requested = notices(&events, notice_kind::APPROVAL_REQUESTED);
    let resolved = notices(&events, notice_kind::APPROVAL_RESOLVED);
    assert_eq!((requested.len(), resolved.len()), (3, 3));
    assert_eq!(requested[0].data.as_ref().unwrap()["mode"], "auto_approve");
    assert!(
        resolved
            .iter()
            .all(|n| n.data.as_ref().unwrap()["decided_by"] == "policy")
    );
    let modes: Vec<_> = result
        .decisions()
        .iter()
        .map(|d| (d.decided_by, d.mode, d.attempts))
        .collect();
    assert_eq!(
        modes,
        [
            (DecidedBy::Policy, ApprovalMode::AutoApprove, 0),
            (DecidedBy::Policy, ApprovalMode::AutoDeny, 0),
            (DecidedBy::Policy, ApprovalMode::AutoDeny, 0),
        ]
    );
    assert!(result.decisions()[1].text.contains("auto_deny"));
}

#[tokio::test]
async fn a_question_is_answered_with_a_choice_or_free_text() {
    let agent = deciding(vec![question(), question()]);
    let mut asked = 0;
    let (_, outcome) = run(&agent, RunOptions::new(), |req| {
        assert_eq!(req.kind, DecisionKind::Question);
        assert_eq!(req.choices.len(), 2);
        asked += 1;
        let answer = if asked == 1 {
            "sqlite"
        } else {
            "whatever the team already runs"
        };
        req.answer(answer).unwrap();
    })
    .await;
    let result = outcome.unwrap();
    let got: Vec<(&str, &str, DecisionResult)> = result
        .decisions()
        .iter()
        .map(|d| (d.choice.as_str(), d.text.as_str(), d.result))
        .collect();
    assert_eq!(
        got,
        [
            ("sqlite", "sqlite", DecisionResult::Answered),
            (
                "",
                "whatever the team already runs",
                DecisionResult::Answered
            ),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_approve_and_deny_resolve_exactly_once() {
    for round in 0..25 {
        let agent = deciding(vec![permission()]);
        let mut stream = agent.stream_with("q", RunOptions::new());
        let mut outcomes = None;
        while let Some(ev) = stream.next().await {
            if let Event::ApprovalRequest(req) = ev {
                let barrier = Arc::new(tokio::sync::Barrier::new(2));
                let (a, b) = ((*req).clone(), (*req).clone());
                let (ba, bb) = (barrier.clone(), barrier);
                let approving = tokio::spawn(async move {
                    ba.wait().await;
                    a.approve()
                });
                let denying = tokio::spawn(async move {
                    bb.wait().await;
                    b.deny("raced")
                });
                outcomes = Some((approving.await.unwrap(), denying.await.unwrap()));
            }
        }
        let (approved, denied) = outcomes.expect("the request arrived");
        let result = stream.result().await.unwrap();
        let record = &result.decisions()[0];
        match (approved, denied) {
            (Ok(()), Err(ApprovalError::AlreadyResolved)) => {
                assert_eq!(record.result, DecisionResult::Approved, "round {round}");
            }
            (Err(ApprovalError::AlreadyResolved), Ok(())) => {
                assert_eq!(record.result, DecisionResult::Rejected, "round {round}");
                assert_eq!(record.text, "raced");
            }
            other => panic!("round {round}: exactly one must win: {other:?}"),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_active_execution_budget_pauses_while_a_human_is_asked() {
    // 6 s of work, a 60 s wait for a human, 3 s of work: 9 s of a 10 s
    // budget.
    let mut steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::Sleep(Duration::from_secs(6)),
        Step::Decide(permission()),
        Step::Sleep(Duration::from_secs(3)),
        Step::Stream(StreamPayload::run_finished(None)),
    ];
    let agent = Agent::new(scripted(steps.clone(), response("done", vec![])));
    let policy = Policy::default()
        .active_execution_timeout(Duration::from_secs(10))
        .approval_timeout(ApprovalTimeout::Never);
    let mut stream = agent.stream_with("q", with(policy));
    while let Some(ev) = stream.next().await {
        if let Event::ApprovalRequest(req) = ev {
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(60)).await;
                req.approve().unwrap();
            });
        }
    }
    let result = stream.result().await.unwrap();
    assert_eq!(result.metadata["decision.0"], "approved");
    assert_eq!(result.decisions()[0].latency, Duration::from_secs(60));

    // The same work without the pause would not fit: 6 + 6 s.
    steps[3] = Step::Sleep(Duration::from_secs(6));
    let agent = Agent::new(scripted(steps, response("done", vec![])));
    let (events, outcome) = run(&agent, with(policy), |req| req.approve().unwrap()).await;
    assert_envelope(&events);
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::ActiveExecutionTimeout);
    assert!(matches!(
        run.cause,
        Some(RunCause::ActiveExecutionTimeout { limit }) if limit == Duration::from_secs(10)
    ));
    let details = run.details.as_ref().unwrap();
    assert_eq!(details["limit_ms"], 10_000);
    assert_eq!(details["decisions"][0]["result"], "approved");
}

#[tokio::test]
async fn hitl_broadcasts_become_notices() {
    let mut req = permission();
    req.request_id = "prov-1".into();
    let requested: StreamPayload = StreamKind::HitlRequested(Box::new(HitlRequested {
        request: req.clone(),
    }))
    .into();
    let resolved: StreamPayload = StreamKind::HitlResolved(Box::new(HitlResolved {
        request_id: "prov-1".into(),
        result: DecisionResult::Rejected,
        choice: String::new(),
        resolved_at: None,
        attempt: 0,
    }))
    .into();
    let agent = Agent::new(scripted(
        framed(vec![requested, resolved]),
        response("", vec![]),
    ));
    let (events, outcome) = drain(agent.stream("q")).await;
    outcome.unwrap();
    let req_notice = notices(&events, notice_kind::APPROVAL_REQUESTED);
    let res_notice = notices(&events, notice_kind::APPROVAL_RESOLVED);
    assert_eq!(req_notice.len(), 1);
    assert_eq!(req_notice[0].text, "Run `rm -rf build`?");
    assert_eq!(req_notice[0].data.as_ref().unwrap()["request_id"], "prov-1");
    assert_eq!(res_notice[0].text, "rejected");
    assert_eq!(res_notice[0].data.as_ref().unwrap()["request_id"], "prov-1");
    assert!(requests(&events).is_empty(), "a broadcast has no responder");
}

#[tokio::test]
async fn an_inherit_kind_the_driver_cannot_ask_is_denied() {
    // The driver routes plan reviews but cannot put them to a human.
    let mut declared = caps(false);
    declared.plan_review.ask = false;
    let agent = driver(vec![plan(), permission()], Duration::ZERO, declared);
    let (events, outcome) = run(&agent, RunOptions::new(), |req| req.approve().unwrap()).await;
    let result = outcome.unwrap();
    assert_eq!(result.metadata["decision.0"], "rejected");
    assert_eq!(result.metadata["decision.1"], "approved");
    assert_eq!(requests(&events).len(), 1, "only the permission was asked");
    assert_eq!(result.decisions()[0].decided_by, DecidedBy::Policy);
    assert_eq!(result.decisions()[0].mode, ApprovalMode::AutoDeny);
}

#[tokio::test]
async fn agent_defaults_and_the_call_site_merge_field_by_field() {
    let agent = Agent::builder(
        scripted(
            vec![
                Step::Stream(StreamPayload::run_started()),
                Step::Decide(permission()),
                Step::Sleep(Duration::ZERO),
                Step::Stream(StreamPayload::run_finished(None)),
            ],
            response("done", vec![]),
        )
        .with_run_policy(caps(false)),
    )
    .policy(Policy::default().on_reject(FallbackAction::Abort))
    .build()
    .unwrap();
    // The default's on_reject applies to a call that sets only the mode.
    let call = Policy::default().permission(ApprovalMode::Ask);
    let (_, outcome) = run(&agent, with(call), |req| req.deny("no").unwrap()).await;
    assert_eq!(
        outcome.unwrap_err().as_run_error().unwrap().reason,
        FailureReason::ApprovalDenied
    );
    // The call site overrides it.
    let call = Policy::default().on_reject(FallbackAction::Continue);
    let (_, outcome) = run(&agent, with(call), |req| req.deny("no").unwrap()).await;
    assert_eq!(outcome.unwrap().metadata["decision.0"], "rejected");
    // And an auto mode at the call site needs no human at all.
    let call = Policy::default().permission(ApprovalMode::AutoApprove);
    let (_, outcome) = run(&agent, with(call), |_| panic!("asked")).await;
    assert_eq!(outcome.unwrap().metadata["decision.0"], "approved");
}

#[tokio::test(start_paused = true)]
async fn the_policy_timeout_wins_over_the_legacy_option_at_the_same_scope() {
    let agent = deciding(vec![permission()]);
    let kept = Arc::new(Mutex::new(Vec::new()));
    let opts = RunOptions::new()
        .approval_timeout(Some(Duration::from_secs(99)))
        .policy(Policy::default().approval_timeout(TEN_SECONDS));
    let (_, outcome) = run(&agent, opts, ignore(&kept)).await;
    assert_eq!(
        outcome.unwrap().decisions()[0].latency,
        Duration::from_secs(10)
    );
    // The legacy option alone still sets the timeout; a call-site legacy
    // timeout beats the agent's policy timeout.
    let agent = Agent::builder(scripted(
        vec![
            Step::Stream(StreamPayload::run_started()),
            Step::Decide(permission()),
            Step::Stream(StreamPayload::run_finished(None)),
        ],
        response("", vec![]),
    ))
    .policy(Policy::default().approval_timeout(TEN_SECONDS))
    .build()
    .unwrap();
    let opts = RunOptions::new().approval_timeout(Some(Duration::from_secs(4)));
    let (_, outcome) = run(&agent, opts, ignore(&kept)).await;
    assert_eq!(
        outcome.unwrap().decisions()[0].latency,
        Duration::from_secs(4)
    );
}

#[tokio::test]
async fn the_approval_handler_path_is_decided_the_same_way() {
    let agent = driver(vec![permission()], Duration::from_secs(3600), caps(false));
    let opts = RunOptions::new()
        .policy(Policy::default().on_reject(FallbackAction::Abort))
        .approval_handler(agent_adaptor_core::deny_all("handler says no"));
    let (events, outcome) = drain(agent.stream_with("q", opts)).await;
    assert!(requests(&events).is_empty());
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::ApprovalDenied);
    assert_eq!(
        run.details.as_ref().unwrap()["decision"]["text"],
        "handler says no"
    );
}

#[tokio::test]
async fn a_driver_without_declarations_keeps_the_pre_policy_behaviour() {
    // No run-policy declarations at all: every kind is asked, as before.
    let agent = Agent::new(ScriptedDriver::new(
        vec![
            Step::Stream(StreamPayload::run_started()),
            Step::Decide(question()),
            Step::Stream(StreamPayload::run_finished(None)),
        ],
        agent_adaptor_core::scripted::Ending::Respond(Box::new(response("", vec![]))),
    ));
    let (events, outcome) = run(&agent, RunOptions::new(), |req| req.answer("pg").unwrap()).await;
    assert_eq!(requests(&events).len(), 1);
    assert_eq!(outcome.unwrap().decisions()[0].choice, "pg");
}
