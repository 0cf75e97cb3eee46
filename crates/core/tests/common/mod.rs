//! Helpers shared by the core integration tests.
#![allow(dead_code)]

use agent_adaptor_core::driver::{Response, RunEvent, StreamPayload, TranscriptItem};
use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
use agent_adaptor_core::{Error, Event, RunResult, RunStream};
use futures::StreamExt;

/// Drain a stream, then return its events and outcome.
pub async fn drain(mut stream: RunStream) -> (Vec<Event>, Result<RunResult, Error>) {
    let mut events = Vec::new();
    while let Some(ev) = stream.next().await {
        events.push(ev);
    }
    let outcome = stream.result().await;
    (events, outcome)
}

/// The envelope invariants every run must satisfy.
pub fn assert_envelope(events: &[Event]) {
    assert!(
        matches!(events.first(), Some(Event::RunStarted(_))),
        "first event must be RunStarted: {:?}",
        events.first().map(Event::kind_name)
    );
    assert!(
        matches!(events.last(), Some(Event::RunFinished(_))),
        "last event must be RunFinished: {:?}",
        events.last().map(Event::kind_name)
    );
    let starts = events
        .iter()
        .filter(|e| matches!(e, Event::RunStarted(_)))
        .count();
    let ends = events
        .iter()
        .filter(|e| matches!(e, Event::RunFinished(_)))
        .count();
    assert_eq!(
        (starts, ends),
        (1, 1),
        "exactly one RunStarted and RunFinished"
    );
    for (i, w) in events.windows(2).enumerate() {
        assert!(
            w[0].meta().sequence < w[1].meta().sequence,
            "sequence not increasing at {i}: {} then {}",
            w[0].meta().sequence,
            w[1].meta().sequence
        );
    }
    assert_eq!(events[0].meta().sequence, 1);
}

/// The `RunFinished` event of a drained run.
pub fn finished(events: &[Event]) -> &agent_adaptor_core::RunFinished {
    match events.last() {
        Some(Event::RunFinished(f)) => f,
        other => panic!("not a RunFinished: {other:?}"),
    }
}

/// Notices of `kind`.
pub fn notices<'a>(events: &'a [Event], kind: &str) -> Vec<&'a agent_adaptor_core::Notice> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Notice(n) if n.kind == kind => Some(n),
            _ => None,
        })
        .collect()
}

/// A response whose transcript is `items`, exit code 0.
pub fn response(output: &str, items: Vec<TranscriptItem>) -> Response {
    Response {
        output: output.into(),
        transcript: items.into(),
        exit_code: Some(0),
        ..Default::default()
    }
}

/// Wrap payloads as stream steps.
pub fn stream_steps(payloads: impl IntoIterator<Item = StreamPayload>) -> Vec<Step> {
    payloads.into_iter().map(Step::Stream).collect()
}

/// A driver that plays `steps` and returns `resp`.
pub fn scripted(steps: Vec<Step>, resp: Response) -> ScriptedDriver {
    ScriptedDriver::new(steps, Ending::Respond(Box::new(resp)))
}

/// `run.started`, the given middle, `run.finished`.
pub fn framed(middle: Vec<StreamPayload>) -> Vec<Step> {
    let mut v = vec![StreamPayload::run_started()];
    v.extend(middle);
    v.push(StreamPayload::run_finished(None));
    stream_steps(v)
}

/// An item step.
pub fn item(i: TranscriptItem) -> Step {
    Step::Emit(RunEvent::Item(i.into()))
}

/// The broker's and the provider's `Dropped` reports, in order.
pub fn dropped(events: &[Event]) -> Vec<&agent_adaptor_core::Dropped> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Dropped(d) => Some(d),
            _ => None,
        })
        .collect()
}
