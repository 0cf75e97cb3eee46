//! Approvals: the event-stream path with its exactly-once responder, the
//! callback path, deadlines, and cancellation releasing a waiting driver.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_adaptor_core::driver::{DecisionChoice, DecisionKind, DecisionRequest, StreamPayload};
use agent_adaptor_core::scripted::Step;
use agent_adaptor_core::{
    Agent, ApprovalError, ApprovalRequest, Event, FailureReason, RunCause, RunOptions, Runner,
    approve_all, deny_all, notice_kind,
};
use common::*;
use futures::StreamExt;

fn permission() -> DecisionRequest {
    let mut r = DecisionRequest::new(DecisionKind::Permission, "test.shell");
    r.prompt = "Run `rm -rf build`?".into();
    r.tool_call_id = "t1".into();
    r.payload = Some(serde_json::json!({"command": "rm -rf build"}));
    r
}

fn question() -> DecisionRequest {
    let mut r = DecisionRequest::new(DecisionKind::Question, "test.ask");
    r.prompt = "Which database?".into();
    r.choices = vec![
        DecisionChoice {
            key: "pg".into(),
            label: "PostgreSQL".into(),
            description: String::new(),
        },
        DecisionChoice {
            key: "sqlite".into(),
            label: "SQLite".into(),
            description: String::new(),
        },
    ];
    r
}

fn deciding(requests: Vec<DecisionRequest>) -> Agent {
    let mut steps = vec![Step::Stream(StreamPayload::run_started())];
    steps.extend(requests.into_iter().map(Step::Decide));
    steps.push(Step::Stream(StreamPayload::run_finished(None)));
    Agent::new(scripted(steps, response("", vec![])))
}

/// Drain a stream, answering each approval with `answer`.
async fn answer_with(
    agent: &Agent,
    opts: RunOptions,
    answer: impl Fn(&ApprovalRequest),
) -> (
    Vec<Event>,
    Result<agent_adaptor_core::RunResult, agent_adaptor_core::Error>,
) {
    let mut stream = agent.stream_with("q", opts);
    let mut events = Vec::new();
    while let Some(ev) = stream.next().await {
        if let Event::ApprovalRequest(req) = &ev {
            answer(req);
        }
        events.push(ev);
    }
    let outcome = stream.result().await;
    (events, outcome)
}

#[tokio::test]
async fn approval_on_the_stream_is_exactly_once() {
    let agent = deciding(vec![permission()]);
    let (events, outcome) = answer_with(&agent, RunOptions::new(), |req| {
        assert_eq!(req.kind, DecisionKind::Permission);
        assert_eq!(req.title, "Run `rm -rf build`?");
        assert_eq!(req.tool_call_id, "t1");
        assert!(req.id.starts_with("apr_"));
        assert!(
            req.deadline.is_some(),
            "the default timeout sets a deadline"
        );
        let copy = req.clone();
        assert_eq!(
            req.answer("x"),
            Err(ApprovalError::KindMismatch {
                kind: DecisionKind::Permission,
                op: "answer"
            })
        );
        req.approve().unwrap();
        assert_eq!(req.approve(), Err(ApprovalError::AlreadyResolved));
        assert_eq!(copy.deny("late"), Err(ApprovalError::AlreadyResolved));
        assert_eq!(req.detached().approve(), Err(ApprovalError::Unavailable));
    })
    .await;
    let result = outcome.unwrap();
    assert_eq!(result.metadata["decision.0"], "approved");
    assert_envelope(&events);
    let resolved = notices(&events, notice_kind::APPROVAL_RESOLVED);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].text, "approved");
}

#[tokio::test]
async fn denial_reaches_the_driver() {
    let agent = deciding(vec![permission()]);
    let (_, outcome) = answer_with(&agent, RunOptions::new(), |req| {
        req.deny("not today").unwrap()
    })
    .await;
    assert_eq!(outcome.unwrap().metadata["decision.0"], "rejected");
}

#[tokio::test]
async fn questions_are_answered_not_approved() {
    let agent = deciding(vec![question()]);
    let (_, outcome) = answer_with(&agent, RunOptions::new(), |req| {
        assert_eq!(
            req.approve(),
            Err(ApprovalError::KindMismatch {
                kind: DecisionKind::Question,
                op: "approve"
            })
        );
        assert_eq!(req.choices.len(), 2);
        req.answer("pg").unwrap();
    })
    .await;
    assert_eq!(outcome.unwrap().metadata["decision.0"], "answered");
}

#[tokio::test]
async fn a_question_without_prompt_or_choices_is_refused() {
    let bad = DecisionRequest::new(DecisionKind::Question, "test.ask");
    let agent = deciding(vec![bad]);
    let (events, outcome) = answer_with(&agent, RunOptions::new(), |_| {
        panic!("an invalid request must not reach the host")
    })
    .await;
    assert_envelope(&events);
    let err = outcome.unwrap_err();
    assert_eq!(
        err.as_run_error().unwrap().reason,
        FailureReason::Infrastructure
    );
}

#[tokio::test(start_paused = true)]
async fn unanswered_requests_time_out_and_expire() {
    let agent = deciding(vec![permission()]);
    let kept = Arc::new(std::sync::Mutex::new(None));
    let keep = kept.clone();
    let opts = RunOptions::new().approval_timeout(Some(Duration::from_secs(10)));
    let (_, outcome) = answer_with(&agent, opts, move |req| {
        *keep.lock().unwrap() = Some(req.clone());
    })
    .await;
    assert_eq!(outcome.unwrap().metadata["decision.0"], "timed_out");
    let late = kept.lock().unwrap().take().unwrap();
    assert_eq!(late.approve(), Err(ApprovalError::Expired));
}

#[tokio::test]
async fn cancel_releases_a_driver_waiting_for_a_decision() {
    let agent = deciding(vec![permission()]);
    let opts = RunOptions::new().approval_timeout(None);
    let mut stream = agent.stream_with("q", opts);
    let mut pending = None;
    while let Some(ev) = stream.next().await {
        if let Event::ApprovalRequest(req) = ev {
            pending = Some(req);
            stream.cancel();
        }
    }
    let err = stream.result().await.unwrap_err();
    assert_eq!(err.as_run_error().unwrap().reason, FailureReason::Cancelled);
    let req = pending.expect("the request was delivered");
    assert_eq!(req.approve(), Err(ApprovalError::Expired));
}

#[tokio::test]
async fn on_approval_callback_resolves_off_stream() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let agent = deciding(vec![permission(), question()]);
    let opts = RunOptions::new().on_approval(move |req: ApprovalRequest| {
        let counter = counter.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            match req.kind {
                DecisionKind::Question => req.answer("sqlite")?,
                _ => req.approve()?,
            }
            Ok(())
        }
    });
    let (events, outcome) = drain(agent.stream_with("q", opts)).await;
    let result = outcome.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(result.metadata["decision.0"], "approved");
    assert_eq!(result.metadata["decision.1"], "answered");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequest(_))),
        "handled requests do not appear on the stream"
    );
    assert_eq!(notices(&events, notice_kind::APPROVAL_REQUESTED).len(), 2);
    assert_eq!(notices(&events, notice_kind::APPROVAL_RESOLVED).len(), 2);
}

#[tokio::test]
async fn ready_made_handlers() {
    let agent = deciding(vec![permission(), question()]);
    let opts = RunOptions::new().approval_handler(approve_all());
    let result = agent.run_with("q", opts).await.unwrap();
    assert_eq!(result.metadata["decision.0"], "approved");
    assert_eq!(result.metadata["decision.1"], "rejected");
    let opts = RunOptions::new().approval_handler(deny_all("policy"));
    let (events, result) = drain(agent.stream_with("q", opts)).await;
    let result = result.unwrap();
    assert_eq!(result.metadata["decision.0"], "rejected");
    // A prepared handler is the host's policy, not a person.
    assert!(
        result
            .decisions()
            .iter()
            .all(|d| d.decided_by == agent_adaptor_core::DecidedBy::Policy),
        "{:?}",
        result.decisions()
    );
    let resolved = notices(&events, notice_kind::APPROVAL_RESOLVED);
    assert_eq!(resolved.len(), 2);
    assert!(
        resolved
            .iter()
            .all(|n| n.data.as_ref().unwrap()["decided_by"] == "policy")
    );
}

#[tokio::test]
async fn a_failing_handler_aborts_the_run_with_its_cause() {
    let agent = deciding(vec![permission()]);
    let opts = RunOptions::new().on_approval(|_req: ApprovalRequest| async move {
        Err::<(), _>("approval service is down".into())
    });
    let (events, outcome) = drain(agent.stream_with("q", opts)).await;
    assert_envelope(&events);
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::AgentError);
    match &run.cause {
        Some(RunCause::ApprovalHandler(msg)) => assert_eq!(msg, "approval service is down"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_handler_that_never_resolves_fails_the_run() {
    let agent = deciding(vec![permission()]);
    let opts = RunOptions::new().on_approval(|_req: ApprovalRequest| async move { Ok(()) });
    let (_, outcome) = drain(agent.stream_with("q", opts)).await;
    let err = outcome.unwrap_err();
    assert!(matches!(
        err.as_run_error().unwrap().cause,
        Some(RunCause::ApprovalHandler(_))
    ));
}

#[tokio::test]
async fn agent_default_handler_applies_and_the_call_site_wins() {
    let agent = Agent::builder(scripted(
        vec![
            Step::Stream(StreamPayload::run_started()),
            Step::Decide(permission()),
            Step::Stream(StreamPayload::run_finished(None)),
        ],
        response("", vec![]),
    ))
    .approval_handler(deny_all("agent default"))
    .build()
    .unwrap();
    assert_eq!(
        agent.run("q").await.unwrap().metadata["decision.0"],
        "rejected"
    );
    let opts = RunOptions::new().approval_handler(approve_all());
    let result = agent.run_with("q", opts).await.unwrap();
    assert_eq!(result.metadata["decision.0"], "approved");
}
