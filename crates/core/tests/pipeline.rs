//! The execution pipeline end to end: run ≡ stream, outcomes, pre-start
//! errors, cancellation, deadlines, panics and unresponsive drivers.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_adaptor_core::driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, FailureCode, Request, Response,
    RunContext, RunEvent, RunFailure, StreamCapability, StreamPayload, TranscriptItem, Usage,
    async_trait,
};
use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
use agent_adaptor_core::{
    Agent, Error, Event, FailureReason, Phase, RunCause, RunOptions, Runner, notice_kind,
};
use common::*;
use futures::StreamExt;

#[tokio::test]
async fn run_and_stream_give_the_same_result() {
    let driver = ScriptedDriver::text_reply("the same answer both ways");
    let agent = Agent::new(driver);
    let via_run = agent.run("q").await.expect("run succeeds");
    let (events, via_stream) = drain(agent.stream("q")).await;
    let via_stream = via_stream.expect("stream succeeds");
    assert_envelope(&events);
    assert_eq!(via_run.text, via_stream.text);
    assert_eq!(via_run.summary, via_stream.summary);
    assert_eq!(via_run.transcript(), via_stream.transcript());
    assert_eq!(
        via_run.raw().stdout.to_vec().unwrap(),
        via_stream.raw().stdout.to_vec().unwrap()
    );
    assert_eq!(via_run.raw().terminal, via_stream.raw().terminal);
    assert!(via_run.raw().terminal.is_some());
    assert_ne!(
        via_run.run_id, via_stream.run_id,
        "every run gets its own id"
    );
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta(d) if d.phase == Phase::Content => Some(d.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, via_stream.text);
}

#[tokio::test]
async fn run_id_is_available_at_once_and_matches_every_event() {
    let agent = Agent::new(ScriptedDriver::text_reply("hi"));
    let stream = agent.stream("q");
    let id = stream.run_id().to_owned();
    assert!(id.starts_with("run_") && id.len() == 20, "{id}");
    let (events, outcome) = drain(stream).await;
    assert_eq!(outcome.unwrap().run_id, id);
    assert!(events.iter().all(|e| *e.meta().run_id == id));
}

#[tokio::test]
async fn result_is_repeatable_and_concurrent() {
    let agent = Agent::new(ScriptedDriver::text_reply("x y z"));
    let stream = agent.stream("q");
    let handle = stream.handle();
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            let h = handle.clone();
            tokio::spawn(async move { h.result().await.map(|r| r.text) })
        })
        .collect();
    let (_, first) = drain(stream).await;
    let first = first.unwrap().text;
    for w in waiters {
        assert_eq!(w.await.unwrap().unwrap(), first);
    }
    assert_eq!(handle.result().await.unwrap().text, first);
    assert_eq!(handle.try_result().unwrap().unwrap().text, first);
}

#[tokio::test]
async fn finish_returns_the_result_whether_or_not_other_handles_hold_it() {
    let agent = Agent::new(ScriptedDriver::text_reply("x y z"));
    // The last holder: the result is moved out of the run.
    assert_eq!(agent.stream("q").finish().await.unwrap().text, "x y z");
    // Another handle still holds it: `finish` clones, and the handle keeps
    // its own copy.
    let stream = agent.stream("q");
    let handle = stream.handle();
    assert_eq!(stream.finish().await.unwrap().text, "x y z");
    assert_eq!(handle.result().await.unwrap().text, "x y z");
    assert_eq!(handle.try_result().unwrap().unwrap().text, "x y z");
}

// A current-thread runtime (the default of `tokio::test`): the run task
// starts only once `run()` has said that nobody will read the stream.
#[tokio::test]
async fn run_tells_the_driver_that_nobody_observes_payloads() {
    let steps = || {
        let mut steps = framed(vec![]);
        steps.insert(1, Step::NoteObserved);
        steps
    };
    let agent = Agent::new(scripted(steps(), response("ok", vec![])));
    let result = agent.run("q").await.unwrap();
    assert_eq!(result.metadata["observed.0"], "false");
    let agent = Agent::new(scripted(steps(), response("ok", vec![])));
    let (_, outcome) = drain(agent.stream("q")).await;
    assert_eq!(outcome.unwrap().metadata["observed.0"], "true");
}

#[tokio::test]
async fn invalid_driver_config_is_a_pre_start_error_with_no_events() {
    let agent = Agent::new(ScriptedDriver::text_reply("x").with_invalid_config("model is empty"));
    let (events, outcome) = drain(agent.stream("q")).await;
    assert!(events.is_empty(), "pre-start errors publish nothing");
    match outcome {
        Err(Error::InvalidDriverConfig(ConfigError { driver, reason })) => {
            assert_eq!(driver, "scripted");
            assert_eq!(reason, "model is empty");
        }
        other => panic!("expected InvalidDriverConfig, got {other:?}"),
    }
}

#[test]
fn stream_outside_a_runtime_is_a_typed_error() {
    let agent = Agent::new(ScriptedDriver::text_reply("x"));
    let stream = agent.stream("q");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (events, outcome) = rt.block_on(drain(stream));
    assert!(events.is_empty());
    assert!(matches!(outcome, Err(Error::NoRuntime)), "{outcome:?}");
}

#[test]
fn zero_event_buffer_is_rejected_at_build() {
    let err = Agent::builder(ScriptedDriver::text_reply("x"))
        .event_buffer(0)
        .build()
        .unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidOption {
            option: "event_buffer",
            ..
        }
    ));
}

/// A driver that records the request it was given.
struct Recorder {
    seen: Arc<Mutex<Option<Request>>>,
    capability: Option<StreamCapability>,
}

#[async_trait]
impl Driver for Recorder {
    fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::new("recorder", "Recorder");
        d.instructions = true; // it carries them (it records the request)
        d
    }
    fn validate_config(&self) -> Result<(), ConfigError> {
        Ok(())
    }
    fn stream_capability(&self) -> Option<StreamCapability> {
        self.capability
    }
    async fn run(
        &self,
        _ctx: RunContext,
        req: Request,
        _sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        *self.seen.lock().unwrap() = Some(req);
        Ok(Response::default())
    }
}

#[tokio::test]
async fn call_options_win_over_agent_defaults_and_reach_the_driver() {
    let seen = Arc::new(Mutex::new(None));
    let agent = Agent::builder(Recorder {
        seen: seen.clone(),
        capability: None,
    })
    .model("agent-model")
    .instructions("agent instructions")
    .metadata("team", "core")
    .metadata("tier", "default")
    .build()
    .unwrap();
    let opts = RunOptions::new()
        .model("call-model")
        .metadata("tier", "call")
        .workspace("/tmp/ws");
    agent.run_with("the prompt", opts).await.unwrap();
    let req = seen.lock().unwrap().take().unwrap();
    assert_eq!(req.prompt, "the prompt");
    assert_eq!(req.model_override.as_deref(), Some("call-model"));
    assert_eq!(req.instructions.as_deref(), Some("agent instructions"));
    assert_eq!(
        req.workspace.as_deref(),
        Some(std::path::Path::new("/tmp/ws"))
    );
    assert_eq!(req.metadata.get("team").map(String::as_str), Some("core"));
    assert_eq!(req.metadata.get("tier").map(String::as_str), Some("call"));
    assert!(!req.streaming, "no stream capability: batch transport");

    // The agent's defaults were not mutated by the call.
    agent.run("again").await.unwrap();
    let req = seen.lock().unwrap().take().unwrap();
    assert_eq!(req.model_override.as_deref(), Some("agent-model"));
    assert_eq!(
        req.metadata.get("tier").map(String::as_str),
        Some("default")
    );
}

#[tokio::test]
async fn streaming_is_chosen_from_capability_not_from_the_verb() {
    let seen = Arc::new(Mutex::new(None));
    let agent = Agent::new(Recorder {
        seen: seen.clone(),
        capability: Some(StreamCapability::default()),
    });
    // Streaming=true and no lifecycle at all is a violation; this test only
    // looks at the request the driver got.
    let _ = agent.run("q").await;
    assert!(seen.lock().unwrap().take().unwrap().streaming);
}

#[tokio::test]
async fn driver_error_is_an_infrastructure_run_error() {
    let driver = ScriptedDriver::new(
        vec![Step::Emit(RunEvent::stderr("boom\n"))],
        Ending::Fail("provider exploded".into()),
    )
    .with_capability(None);
    let (events, outcome) = drain(Agent::new(driver).stream("q")).await;
    assert_envelope(&events);
    let err = outcome.unwrap_err();
    let run = err.as_run_error().expect("a RunError");
    assert_eq!(run.reason, FailureReason::Infrastructure);
    assert!(matches!(run.cause, Some(RunCause::Driver(_))));
    assert!(run.message.contains("provider exploded"), "{}", run.message);
    let fin = finished(&events);
    assert!(fin.failed);
    assert_eq!(fin.reason, Some(FailureReason::Infrastructure));
    // The stderr chunk emitted before the failure was delivered.
    assert!(events.iter().any(|e| matches!(e,
        Event::ProcessInfo(p) if p.bytes.as_ref() == b"boom\n")));
}

#[tokio::test]
async fn driver_panic_is_contained() {
    let mut steps = framed(vec![]);
    steps.insert(1, Step::Panic("driver bug".into()));
    let (events, outcome) =
        drain(Agent::new(scripted(steps, response("", vec![]))).stream("q")).await;
    assert_envelope(&events);
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::Infrastructure);
    match &run.cause {
        Some(RunCause::DriverPanicked(msg)) => assert_eq!(msg, "driver bug"),
        other => panic!("expected DriverPanicked, got {other:?}"),
    }
}

#[tokio::test]
async fn business_failure_keeps_the_partial_result() {
    let failure = RunFailure::new(FailureCode::Other("rate_limited".into()), "slow down");
    let mut resp = response("partial", vec![TranscriptItem::assistant("partial")]);
    resp.failure = Some(failure.clone());
    let steps = vec![
        Step::Stream(StreamPayload::run_started()),
        item(TranscriptItem::assistant("partial")),
        Step::Stream(StreamPayload::run_error(failure)),
    ];
    let (events, outcome) = drain(Agent::new(scripted(steps, resp)).stream("q")).await;
    assert_envelope(&events);
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::Other("rate_limited".into()));
    assert_eq!(run.message, "slow down");
    let partial = run.result.as_ref().expect("partial result kept");
    assert_eq!(partial.text, "partial");
    assert_eq!(partial.transcript().len(), 1);
    assert_eq!(
        finished(&events).reason,
        Some(FailureReason::Other("rate_limited".into()))
    );
}

#[tokio::test]
async fn run_error_frame_without_response_failure_still_fails_the_run() {
    let failure = RunFailure::new(FailureCode::AgentError, "model refused");
    let steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::Stream(StreamPayload::run_error(failure)),
    ];
    let (_, outcome) = drain(Agent::new(scripted(steps, response("", vec![]))).stream("q")).await;
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::AgentError);
    assert_eq!(run.message, "model refused");
}

#[tokio::test]
async fn a_process_stopped_after_its_output_is_a_success() {
    let mut resp = response("the answer", vec![]);
    resp.exit_code = None;
    resp.signal = Some("SIGTERM".into());
    resp.stopped_after_output = true;
    let (events, outcome) = drain(Agent::new(scripted(framed(vec![]), resp)).stream("q")).await;
    assert_envelope(&events);
    assert_eq!(outcome.unwrap().text, "the answer");
}

#[tokio::test]
async fn non_zero_exit_without_failure_is_an_agent_error() {
    let mut resp = response("", vec![]);
    resp.exit_code = Some(3);
    let (events, outcome) = drain(Agent::new(scripted(framed(vec![]), resp)).stream("q")).await;
    assert_envelope(&events);
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::AgentError);
    assert!(matches!(
        run.cause,
        Some(RunCause::Exit { code: Some(3), .. })
    ));
    assert!(run.result.is_some());
}

#[tokio::test]
async fn usage_from_the_terminal_frame_reaches_result_and_run_finished() {
    let usage = Usage {
        input_tokens: Some(10),
        output_tokens: Some(2),
        ..Default::default()
    };
    let steps = stream_steps([
        StreamPayload::run_started(),
        StreamPayload::run_finished(Some(usage.clone())),
    ]);
    let (events, outcome) =
        drain(Agent::new(scripted(steps, response("", vec![]))).stream("q")).await;
    assert_eq!(outcome.unwrap().usage, Some(usage.clone()));
    assert_eq!(finished(&events).usage, Some(usage));
}

#[tokio::test]
async fn cancel_stops_the_run_and_reports_cancelled() {
    let mut steps = vec![Step::Stream(StreamPayload::run_started())];
    steps.push(Step::WaitForCancel);
    let agent = Agent::new(scripted(steps, response("", vec![])));
    let mut stream = agent.stream("q");
    let first = stream.next().await.unwrap();
    assert!(matches!(first, Event::RunStarted(_)));
    stream.cancel();
    stream.cancel(); // idempotent
    let (events, outcome) = drain(stream).await;
    assert!(matches!(events.last(), Some(Event::RunFinished(_))));
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::Cancelled);
    assert!(run.cause.is_none(), "a cooperative stop has no extra cause");
    assert_eq!(finished(&events).reason, Some(FailureReason::Cancelled));
}

#[tokio::test]
async fn dropping_the_stream_cancels_the_run() {
    let steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::WaitForCancel,
    ];
    let agent = Agent::new(scripted(steps, response("", vec![])));
    let stream = agent.stream("q");
    let handle = stream.handle();
    drop(stream);
    let err = handle.result().await.unwrap_err();
    assert_eq!(err.as_run_error().unwrap().reason, FailureReason::Cancelled);
}

#[tokio::test(start_paused = true)]
async fn timeout_cancels_with_deadline_exceeded() {
    let steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::Sleep(Duration::from_secs(3600)),
    ];
    let agent = Agent::new(scripted(steps, response("", vec![])));
    let opts = RunOptions::new().timeout(Duration::from_secs(5));
    let (events, outcome) = drain(agent.stream_with("q", opts)).await;
    assert_envelope(&events);
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::DeadlineExceeded);
    assert_eq!(
        finished(&events).reason,
        Some(FailureReason::DeadlineExceeded)
    );
}

#[tokio::test(start_paused = true)]
async fn a_driver_that_ignores_cancellation_is_dropped_after_the_grace() {
    let steps = vec![Step::Stream(StreamPayload::run_started()), Step::Hang];
    let agent = Agent::builder(scripted(steps, response("", vec![])))
        .cancel_grace(Duration::from_secs(2))
        .build()
        .unwrap();
    let stream = agent.stream("q");
    stream.cancel();
    let (events, outcome) = drain(stream).await;
    assert_envelope(&events);
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::Cancelled);
    assert!(
        matches!(run.cause, Some(RunCause::DriverUnresponsive(d)) if d == Duration::from_secs(2)),
        "{:?}",
        run.cause
    );
}

#[tokio::test]
async fn operational_events_become_process_info_and_notices() {
    use agent_adaptor_core::driver::OperationalEvent;
    let steps = vec![
        Step::Emit(RunEvent::Spawn(OperationalEvent::text("pid 42"))),
        Step::Emit(RunEvent::Invocation(OperationalEvent::text("claude -p"))),
        Step::Emit(RunEvent::Runtime(OperationalEvent::text("mcp up"))),
        Step::Emit(RunEvent::Lifecycle(OperationalEvent::text("retrying"))),
        Step::Emit(RunEvent::stdout(&b"\xff\xferaw"[..])),
    ];
    let driver = scripted(steps, response("", vec![])).with_capability(None);
    let (events, outcome) = drain(Agent::new(driver).stream("q")).await;
    outcome.unwrap();
    assert_envelope(&events);
    let kinds: Vec<_> = events.iter().map(|e| e.kind_name().into_owned()).collect();
    assert_eq!(
        kinds,
        [
            "run.started",
            "process.spawn",
            "notice.invocation",
            "notice.runtime",
            "notice.lifecycle",
            "process.stdout",
            "run.finished"
        ]
    );
    match &events[5] {
        Event::ProcessInfo(p) => assert_eq!(p.bytes.as_ref(), b"\xff\xferaw"),
        other => panic!("{other:?}"),
    }
    assert_eq!(notices(&events, notice_kind::LIFECYCLE)[0].text, "retrying");
}

#[tokio::test]
async fn provider_coordinates_land_in_the_source_not_the_sequence() {
    use agent_adaptor_core::driver::ProviderCoords;
    let coords = ProviderCoords {
        thread_id: Some("sess-9".into()),
        turn_id: Some("turn-1".into()),
        ..Default::default()
    };
    let steps = stream_steps([
        StreamPayload::run_started().with_source(coords.clone()),
        StreamPayload::text_start("m").with_source(coords.clone()),
        StreamPayload::text_content("m", "hi").with_source(coords),
        StreamPayload::text_end("m"),
        StreamPayload::run_finished(None),
    ]);
    let (events, outcome) =
        drain(Agent::new(scripted(steps, response("hi", vec![]))).stream("q")).await;
    outcome.unwrap();
    let src = events[1].meta().source.as_ref().expect("source kept");
    assert_eq!(src.thread_id.as_deref(), Some("sess-9"));
    assert_eq!(src.turn_id.as_deref(), Some("turn-1"));
    assert!(events[3].meta().source.is_none());
    assert_envelope(&events);
}

#[tokio::test]
async fn custom_and_provider_drop_kinds_are_not_swallowed() {
    use agent_adaptor_core::driver::{ProviderDrop, StreamKind};
    let steps = framed(vec![
        StreamPayload::custom("codex.rate_limits", "80% used")
            .with_raw(serde_json::json!({"primary": 80})),
        StreamKind::Dropped(ProviderDrop {
            dropped_count: 4,
            reason: "provider_buffer".into(),
            ..Default::default()
        })
        .into(),
    ]);
    let (events, outcome) =
        drain(Agent::new(scripted(steps, response("", vec![]))).stream("q")).await;
    outcome.unwrap();
    let custom = notices(&events, "codex.rate_limits");
    assert_eq!(custom.len(), 1);
    assert_eq!(custom[0].text, "80% used");
    assert_eq!(custom[0].data, Some(serde_json::json!({"primary": 80})));
    let reports = dropped(&events);
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].count, 4);
    assert_eq!(reports[0].source, "provider");
    assert_eq!(reports[0].reason, "provider_buffer");
}

#[tokio::test]
async fn decode_reads_the_final_text_as_json() {
    let agent = Agent::new(ScriptedDriver::text_chunks(&["{\"ok\":", " true}"]));
    let result = agent.run("q").await.unwrap();
    #[derive(serde::Deserialize)]
    struct Answer {
        ok: bool,
    }
    assert!(result.decode::<Answer>().unwrap().ok);
    assert!(result.decode::<Vec<u8>>().is_err());
}

#[tokio::test]
async fn runner_is_object_safe() {
    let agent: Arc<dyn Runner> = Arc::new(Agent::new(ScriptedDriver::text_reply("dyn")));
    assert_eq!(agent.run("q").await.unwrap().text, "dyn");
}

#[tokio::test]
async fn cancel_releases_a_publisher_blocked_on_a_full_buffer() {
    // Blocking mode, a buffer of one, and a consumer that never reads: the
    // driver blocks on its second event until the host cancels.
    let mut payloads = vec![StreamPayload::run_started(), StreamPayload::text_start("m")];
    payloads.extend((0..50).map(|i| StreamPayload::text_content("m", format!("{i}"))));
    payloads.push(StreamPayload::text_end("m"));
    payloads.push(StreamPayload::run_finished(None));
    let agent = Agent::builder(scripted(stream_steps(payloads), response("", vec![])))
        .event_buffer(1)
        .blocking_events()
        .build()
        .unwrap();
    let stream = agent.stream("q");
    let handle = stream.handle();
    // Let the run fill the buffer and block.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        stream.queued_events(),
        1,
        "the buffer is full and the driver waits"
    );
    assert!(
        handle.try_result().is_none(),
        "the run is blocked, not finished"
    );
    handle.cancel();
    let err = handle.result().await.unwrap_err();
    assert_eq!(err.as_run_error().unwrap().reason, FailureReason::Cancelled);
    // Everything numbered is accounted for, and RunFinished is still last.
    let (events, _) = drain(stream).await;
    assert_envelope(&events);
    let lost: u64 = dropped(&events).iter().map(|d| d.count).sum();
    assert_eq!(
        events.len() as u64 + lost,
        events.last().unwrap().meta().sequence
    );
    assert_eq!(finished(&events).reason, Some(FailureReason::Cancelled));
}
