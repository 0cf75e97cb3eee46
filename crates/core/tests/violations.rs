//! Drivers that break the contract: every violation is rejected, reported as
//! a `driver.violation` notice, and fails the run as an infrastructure error
//! — with `RunFinished` still last and nothing panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use agent_adaptor_core::driver::{
    DecisionKind, DecisionRequest, HitlRequested, Role, RunEvent, SinkError, StreamCapability,
    StreamKind, StreamPayload, TranscriptItem, TranscriptKind,
};
use agent_adaptor_core::scripted::{ScriptedDriver, Step};
use agent_adaptor_core::{Agent, Event, FailureReason, RunCause, Runner, notice_kind};
use common::*;

/// Run `steps` (ending in a plain response) and return the clause of the
/// first violation, after checking every generic invariant.
async fn first_violation(driver: ScriptedDriver) -> (String, Vec<Event>) {
    let (events, outcome) = drain(Agent::new(driver).stream("q")).await;
    assert_envelope(&events);
    let reported = notices(&events, notice_kind::DRIVER_VIOLATION);
    assert!(
        !reported.is_empty(),
        "the violation is reported as a notice"
    );
    let err = outcome.expect_err("a violating run fails");
    let run = err.as_run_error().expect("a RunError");
    assert_eq!(run.reason, FailureReason::Infrastructure);
    let fin = finished(&events);
    assert!(fin.failed);
    assert_eq!(fin.reason, Some(FailureReason::Infrastructure));
    let data = reported[0].data.as_ref().expect("notice data");
    let clause = data["clause"].as_str().expect("clause").to_owned();
    match &run.cause {
        Some(RunCause::DriverViolation(v)) => assert_eq!(v.clause, clause),
        other => panic!("expected DriverViolation, got {other:?}"),
    }
    assert!(
        run.details.is_some(),
        "every violation is listed in details"
    );
    (clause, events)
}

fn plain(steps: Vec<Step>) -> ScriptedDriver {
    scripted(steps, response("", vec![]))
}

#[tokio::test]
async fn second_run_started() {
    let steps = stream_steps([
        StreamPayload::run_started(),
        StreamPayload::run_started(),
        StreamPayload::run_finished(None),
    ]);
    let (clause, events) = first_violation(plain(steps)).await;
    assert_eq!(clause, "EVT-01");
    // Core's own RunStarted is still the only one the host sees.
    let starts = events
        .iter()
        .filter(|e| matches!(e, Event::RunStarted(_)))
        .count();
    assert_eq!(starts, 1);
}

#[tokio::test]
async fn payload_before_run_started() {
    let steps = stream_steps([StreamPayload::text_start("m"), StreamPayload::run_started()]);
    assert_eq!(first_violation(plain(steps)).await.0, "EVT-01");
}

#[tokio::test]
async fn frames_after_the_terminal() {
    let mut steps = framed(vec![]);
    steps.push(Step::Stream(StreamPayload::text_start("late")));
    let (clause, events) = first_violation(plain(steps)).await;
    assert_eq!(clause, "EVT-02");
    assert!(
        !events.iter().any(|e| matches!(e, Event::TextDelta(_))),
        "the late frame was not published as text"
    );
}

#[tokio::test]
async fn content_outside_an_open_message() {
    let steps = framed(vec![StreamPayload::text_content("nope", "x")]);
    assert_eq!(first_violation(plain(steps)).await.0, "EVT-03");
}

#[tokio::test]
async fn empty_text_delta() {
    let steps = framed(vec![
        StreamPayload::text_start("m"),
        StreamPayload::text_content("m", ""),
        StreamPayload::text_end("m"),
    ]);
    assert_eq!(first_violation(plain(steps)).await.0, "EVT-04");
}

#[tokio::test]
async fn tool_result_for_an_unknown_call() {
    let steps = framed(vec![StreamPayload::tool_call_result("ghost", None)]);
    assert_eq!(first_violation(plain(steps)).await.0, "EVT-05");
}

#[tokio::test]
async fn terminal_with_an_open_message() {
    let steps = framed(vec![StreamPayload::text_start("m")]);
    let (clause, events) = first_violation(plain(steps)).await;
    // The driver stops on the sink error, so the one violation is reported
    // once (end-of-run checks only judge drivers that returned normally).
    assert_eq!(clause, "EVT-11");
    let clauses: Vec<_> = notices(&events, notice_kind::DRIVER_VIOLATION)
        .iter()
        .map(|n| {
            n.data.as_ref().unwrap()["clause"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(clauses, ["EVT-11"]);
    let detail = notices(&events, notice_kind::DRIVER_VIOLATION)[0]
        .text
        .clone();
    assert!(
        detail.contains("text \"m\""),
        "names what is open: {detail}"
    );
}

#[tokio::test]
async fn reasoning_when_the_driver_declared_none() {
    let steps = framed(vec![StreamPayload::reasoning_start("r")]);
    let cap = StreamCapability {
        native: true,
        token_level: true,
        ..Default::default()
    };
    let (clause, events) = first_violation(plain(steps).with_capability(Some(cap))).await;
    assert_eq!(clause, "EVT-12");
    assert!(!events.iter().any(|e| matches!(e, Event::Thinking(_))));
}

#[tokio::test]
async fn tool_call_args_when_the_driver_declared_none() {
    let steps = framed(vec![
        StreamPayload::tool_call_start("t", "shell", None),
        StreamPayload::tool_call_args("t", "{}"),
        StreamPayload::tool_call_end("t", None),
    ]);
    let cap = StreamCapability {
        tool_call_args: false,
        ..StreamCapability::FULL
    };
    assert_eq!(
        first_violation(plain(steps).with_capability(Some(cap)))
            .await
            .0,
        "EVT-12"
    );
}

#[tokio::test]
async fn hitl_broadcast_from_a_driver_without_capabilities() {
    let hitl: StreamPayload = StreamKind::HitlRequested(Box::new(HitlRequested {
        request: DecisionRequest::new(DecisionKind::Permission, "x.tool"),
    }))
    .into();
    let steps = framed(vec![hitl]);
    assert_eq!(
        first_violation(plain(steps).with_capability(None)).await.0,
        "EVT-12"
    );
}

#[tokio::test]
async fn role_user_from_a_driver() {
    let mut start = StreamPayload::text_start("m");
    start.role = Role::User;
    let steps = framed(vec![start]);
    assert_eq!(first_violation(plain(steps)).await.0, "EVT-09");
}

#[tokio::test]
async fn missing_terminal_in_a_streaming_run() {
    let steps = stream_steps([
        StreamPayload::run_started(),
        StreamPayload::text_start("m"),
        StreamPayload::text_content("m", "cut off"),
        StreamPayload::text_end("m"),
    ]);
    let (clause, events) = first_violation(plain(steps)).await;
    assert_eq!(clause, "EVT-02");
    // The content before the gap was still delivered.
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TextDelta(d) if d.text == "cut off"))
    );
}

#[tokio::test]
async fn streaming_run_that_emits_no_lifecycle_at_all() {
    assert_eq!(first_violation(plain(vec![])).await.0, "EVT-02");
}

#[tokio::test]
async fn batch_run_without_stream_payloads_is_fine() {
    let ok = TranscriptItem::assistant("ok");
    let driver = scripted(vec![item(ok.clone())], response("ok", vec![ok])).with_capability(None);
    let (events, outcome) = drain(Agent::new(driver).stream("q")).await;
    assert_envelope(&events);
    assert_eq!(outcome.unwrap().text, "ok");
}

#[tokio::test]
async fn transcript_mirror_must_hold() {
    let steps = {
        let mut s = framed(vec![]);
        s.insert(1, item(TranscriptItem::assistant("emitted")));
        s
    };
    let resp = response("x", vec![TranscriptItem::assistant("something else")]);
    let (clause, _) = first_violation(scripted(steps, resp)).await;
    assert_eq!(clause, "RUN-04");
}

#[tokio::test]
async fn returning_items_that_were_never_emitted_breaks_the_mirror() {
    let resp = response("x", vec![TranscriptItem::assistant("never emitted")]);
    let (clause, _) = first_violation(scripted(framed(vec![]), resp)).await;
    assert_eq!(clause, "RUN-04");
}

#[tokio::test]
async fn invalid_transcript_item_is_rejected() {
    let bad = TranscriptItem::new(TranscriptKind::ToolCall, "");
    let steps = {
        let mut s = framed(vec![]);
        s.insert(1, Step::Emit(RunEvent::Item(bad.into())));
        s
    };
    let (clause, events) = first_violation(plain(steps)).await;
    assert_eq!(clause, "TRN-02");
    assert!(notices(&events, notice_kind::TRANSCRIPT_ITEM).is_empty());
}

#[tokio::test]
async fn the_rejected_payload_is_kept_in_the_notice() {
    let steps = framed(vec![StreamPayload::text_content("nope", "the lost words")]);
    let (_, events) = first_violation(plain(steps)).await;
    let notice = &notices(&events, notice_kind::DRIVER_VIOLATION)[0];
    let rejected = &notice.data.as_ref().unwrap()["rejected"];
    assert_eq!(rejected["kind"], "text.content");
    assert_eq!(rejected["delta"], "the lost words");
}

#[tokio::test]
async fn the_driver_sees_the_violation_as_a_sink_error() {
    use agent_adaptor_core::driver::{
        ConfigError, Descriptor, Driver, DriverError, EventSink, Request, Response, RunContext,
        async_trait,
    };
    use std::sync::{Arc, Mutex};
    struct Probe(Arc<Mutex<Option<SinkError>>>);
    #[async_trait]
    impl Driver for Probe {
        fn descriptor(&self) -> Descriptor {
            Descriptor::new("probe", "Probe")
        }
        fn validate_config(&self) -> Result<(), ConfigError> {
            Ok(())
        }
        fn stream_capability(&self) -> Option<StreamCapability> {
            Some(StreamCapability::FULL)
        }
        async fn run(
            &self,
            _: RunContext,
            _: Request,
            sink: &dyn EventSink,
        ) -> Result<Response, DriverError> {
            sink.emit_stream(StreamPayload::run_started()).await?;
            let err = sink
                .emit_stream(StreamPayload::text_end("never-opened"))
                .await
                .unwrap_err();
            *self.0.lock().unwrap() = Some(err.clone());
            Err(err.into())
        }
    }
    let seen = Arc::new(Mutex::new(None));
    let (events, outcome) = drain(Agent::new(Probe(seen.clone())).stream("q")).await;
    assert_envelope(&events);
    match seen.lock().unwrap().take() {
        Some(SinkError::Violation(v)) => assert_eq!(v.clause, "EVT-03"),
        other => panic!("expected a violation, got {other:?}"),
    }
    let err = outcome.unwrap_err();
    assert!(matches!(
        err.as_run_error().unwrap().cause,
        Some(RunCause::DriverViolation(_))
    ));
}
