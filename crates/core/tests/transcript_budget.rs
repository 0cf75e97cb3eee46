//! The transcript memory budget: a host option that reaches the driver's
//! `Request`, a result whose transcript spilled and is still complete, and
//! the RUN-04 mirror check, which compares fingerprints and so still catches a
//! broken mirror when the transcript lives on disk.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use agent_adaptor_core::driver::{TranscriptItem, TranscriptKind};
use agent_adaptor_core::{Agent, FailureReason, RunCause, RunOptions, Runner};
use common::*;
use serde_json::json;

/// `n` distinct items of several kinds, with non-ASCII text.
fn items(n: usize) -> Vec<TranscriptItem> {
    (0..n)
        .map(|i| match i % 3 {
            0 => TranscriptItem::assistant(format!("réponse {i} — 🦀 {}", "x".repeat(200))),
            1 => TranscriptItem::tool_call(format!("t{i}"), "shell", Some(json!({"n": i}))),
            _ => TranscriptItem::tool_result(format!("t{}", i - 1), format!("out {i}"), i % 2 == 0),
        })
        .collect()
}

fn emitting(items: &[TranscriptItem]) -> Vec<agent_adaptor_core::scripted::Step> {
    let mut steps = framed(vec![]);
    for (k, i) in items.iter().enumerate() {
        steps.insert(1 + k, item(i.clone()));
    }
    steps
}

#[tokio::test]
async fn a_tiny_budget_spills_the_result_transcript_and_keeps_it_complete() {
    let expected = items(300);
    let driver = scripted(emitting(&expected), response("ok", expected.clone()));
    let agent = Agent::new(driver.clone());
    let (events, outcome) =
        drain(agent.stream_with("q", RunOptions::new().transcript_budget(4 * 1024))).await;
    assert_envelope(&events);
    let result = outcome.unwrap();
    let transcript = result.transcript();
    assert!(transcript.is_spilled(), "300 items exceed a 4 KiB budget");
    assert_eq!(transcript.budget(), 4 * 1024);
    assert_eq!(transcript.len(), 300);
    assert_eq!(transcript.to_vec().unwrap(), expected);
    // A clone of the result shares the transcript.
    assert_eq!(result.clone().transcript(), transcript);
    assert_eq!(
        driver.recorded_requests()[0].transcript_budget,
        Some(4 * 1024)
    );
}

#[tokio::test]
async fn a_transcript_item_event_shares_the_drivers_item_instead_of_copying_it() {
    use agent_adaptor_core::driver::{RunEvent, SharedItem};
    use agent_adaptor_core::notice_kind;
    let expected = items(3);
    let shared: Vec<SharedItem> = expected.iter().cloned().map(SharedItem::from).collect();
    let mut steps = framed(vec![]);
    for (k, s) in shared.iter().enumerate() {
        steps.insert(
            1 + k,
            agent_adaptor_core::scripted::Step::Emit(RunEvent::Item(s.clone())),
        );
    }
    let agent = Agent::new(scripted(steps, response("ok", expected.clone())));
    let (events, outcome) = drain(agent.stream("q")).await;
    outcome.unwrap();
    let got = notices(&events, notice_kind::TRANSCRIPT_ITEM);
    assert_eq!(got.len(), 3);
    for (notice, sent) in got.iter().zip(&shared) {
        let item = notice
            .item
            .as_ref()
            .expect("a transcript.item notice carries its item");
        assert!(
            std::sync::Arc::ptr_eq(item, sent.as_arc()),
            "the event holds the driver's item itself"
        );
        assert_eq!(**item, **sent);
    }
}

#[tokio::test]
async fn the_default_budget_keeps_a_usual_transcript_in_memory() {
    let expected = items(10);
    let driver = scripted(emitting(&expected), response("ok", expected.clone()));
    let agent = Agent::new(driver.clone());
    let result = agent.run("q").await.unwrap();
    assert!(!result.transcript().is_spilled());
    assert_eq!(*result.transcript(), expected);
    assert_eq!(driver.recorded_requests()[0].transcript_budget, None);
}

#[tokio::test]
async fn the_call_budget_wins_over_the_agent_default() {
    let driver = scripted(framed(vec![]), response("ok", vec![]));
    let agent = Agent::builder(driver.clone())
        .transcript_budget(1 << 20)
        .build()
        .unwrap();
    agent.run("q").await.unwrap();
    agent
        .run_with("q", RunOptions::new().transcript_budget(123))
        .await
        .unwrap();
    let budgets: Vec<_> = driver
        .recorded_requests()
        .iter()
        .map(|r| r.transcript_budget)
        .collect();
    assert_eq!(budgets, [Some(1 << 20), Some(123)]);
}

#[tokio::test]
async fn run_04_is_caught_with_a_spilled_transcript() {
    let emitted = items(200);
    let mut returned = emitted.clone();
    returned[57] = TranscriptItem::new(TranscriptKind::System, "not what was emitted");
    let driver = scripted(emitting(&emitted), response("x", returned.clone()));
    let (events, outcome) =
        drain(Agent::new(driver).stream_with("q", RunOptions::new().transcript_budget(0))).await;
    assert_envelope(&events);
    let err = outcome.expect_err("a broken mirror fails the run");
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::Infrastructure);
    match &run.cause {
        Some(RunCause::DriverViolation(v)) => {
            assert_eq!(v.clause, "RUN-04");
            assert_eq!(
                v.detail,
                "the 200 returned transcript items differ from the 200 emitted"
            );
        }
        other => panic!("expected RUN-04, got {other:?}"),
    }
    // The partial result keeps the complete (spilled) returned transcript.
    let partial = run.result.as_ref().unwrap().transcript();
    assert!(partial.is_spilled());
    assert_eq!(partial.to_vec().unwrap(), returned);
}

#[tokio::test]
async fn run_04_names_the_counts_when_items_are_missing() {
    let emitted = items(50);
    let driver = scripted(emitting(&emitted), response("x", emitted[..49].to_vec()));
    let (_, outcome) =
        drain(Agent::new(driver).stream_with("q", RunOptions::new().transcript_budget(0))).await;
    let err = outcome.expect_err("a short mirror fails the run");
    match &err.as_run_error().unwrap().cause {
        Some(RunCause::DriverViolation(v)) => {
            assert_eq!(v.detail, "emitted 50 transcript items but returned 49")
        }
        other => panic!("expected RUN-04, got {other:?}"),
    }
}
