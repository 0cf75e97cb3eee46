//! Property tests of the broker through the whole pipeline: random payload
//! sequences, random consumer speeds, random cancellation points, small
//! buffers, both drop and blocking modes, single- and multi-threaded runtimes,
//! with and without driver batches (some left open, as a buggy driver might).
//!
//! Invariants checked on every case:
//! * `RunStarted` first, `RunFinished` last, sequence strictly increasing;
//! * every sequence number is accounted for: delivered, or counted in
//!   exactly one broker `Dropped` report (so `Dropped` totals equal the
//!   number of dropped events exactly, also by kind);
//! * without cancellation no reliable event is lost, and they arrive in
//!   emission order; only droppable kinds are ever dropped;
//! * blocking mode drops nothing (without cancellation);
//! * no task outlives the run.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use agent_adaptor_core::driver::{RunEvent, StreamPayload, TranscriptItem};
use agent_adaptor_core::scripted::Step;
use agent_adaptor_core::{Agent, Event, FailureReason, Runner};
use common::{response, scripted};
use futures::StreamExt;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Text(usize),
    Reasoning(usize),
    Tool { args: usize, result: bool },
    Item,
    Stdout(usize),
    Step,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0usize..12).prop_map(Op::Text),
        (0usize..6).prop_map(Op::Reasoning),
        (0usize..5, any::<bool>()).prop_map(|(args, result)| Op::Tool { args, result }),
        Just(Op::Item),
        (1usize..8).prop_map(Op::Stdout),
        Just(Op::Step),
    ]
}

/// What the script emits, and what the host should see of it.
struct Plan {
    steps: Vec<Step>,
    items: Vec<TranscriptItem>,
    /// Kind names of reliable events, in emission order.
    reliable: Vec<String>,
    /// Droppable events emitted, by kind name.
    droppable: BTreeMap<String, u64>,
}

/// An op, and whether the driver brackets its events in a batch.
type Batched = (Op, bool);

fn plan(ops: &[Batched], leave_open: bool) -> Plan {
    let mut p = Plan {
        steps: vec![Step::Stream(StreamPayload::run_started())],
        items: Vec::new(),
        reliable: Vec::new(),
        droppable: BTreeMap::new(),
    };
    let stream = |p: &mut Plan, payload: StreamPayload, kind: &str, reliable: bool| {
        p.steps.push(Step::Stream(payload));
        if reliable {
            p.reliable.push(kind.to_owned());
        } else {
            *p.droppable.entry(kind.to_owned()).or_default() += 1;
        }
    };
    for (n, (op, batched)) in ops.iter().enumerate() {
        let id = format!("id{n}");
        if *batched {
            p.steps.push(Step::BeginBatch);
        }
        match op {
            Op::Text(k) => {
                stream(&mut p, StreamPayload::text_start(&id), "text.start", true);
                for i in 0..*k {
                    let d = StreamPayload::text_content(&id, format!("w{i} "));
                    stream(&mut p, d, "text.content", false);
                }
                stream(&mut p, StreamPayload::text_end(&id), "text.end", true);
            }
            Op::Reasoning(k) => {
                stream(
                    &mut p,
                    StreamPayload::reasoning_start(&id),
                    "thinking.start",
                    true,
                );
                for i in 0..*k {
                    let d = StreamPayload::reasoning_content(&id, format!("r{i}"));
                    stream(&mut p, d, "thinking.content", false);
                }
                stream(
                    &mut p,
                    StreamPayload::reasoning_end(&id),
                    "thinking.end",
                    true,
                );
            }
            Op::Tool { args, result } => {
                let start = StreamPayload::tool_call_start(&id, "shell", None);
                stream(&mut p, start, "tool_call.start", true);
                for i in 0..*args {
                    let d = StreamPayload::tool_call_args(&id, format!("{{{i}"));
                    stream(&mut p, d, "tool_call.content", false);
                }
                stream(
                    &mut p,
                    StreamPayload::tool_call_end(&id, None),
                    "tool_call.end",
                    true,
                );
                if *result {
                    let r = StreamPayload::tool_call_result(&id, Some(serde_json::json!(n)));
                    stream(&mut p, r, "tool_result", true);
                }
            }
            Op::Item => {
                let item = TranscriptItem::assistant(format!("item {n}"));
                p.items.push(item.clone());
                p.steps.push(Step::Emit(RunEvent::Item(item.into())));
                p.reliable.push("notice.transcript.item".into());
            }
            Op::Stdout(k) => {
                for i in 0..*k {
                    p.steps
                        .push(Step::Emit(RunEvent::stdout(format!("line {n}.{i}\n"))));
                    *p.droppable.entry("process.stdout".into()).or_default() += 1;
                }
            }
            Op::Step => {
                stream(
                    &mut p,
                    StreamPayload::step_started(&id),
                    "notice.step",
                    true,
                );
                stream(
                    &mut p,
                    StreamPayload::step_finished(&id),
                    "notice.step",
                    true,
                );
            }
        }
        if *batched {
            p.steps.push(Step::EndBatch);
        }
    }
    if leave_open {
        p.steps.push(Step::BeginBatch);
    }
    p.steps
        .push(Step::Stream(StreamPayload::run_finished(None)));
    p
}

#[derive(Debug, Clone)]
struct Case {
    ops: Vec<Batched>,
    /// The driver ends with a batch it never closes.
    leave_open: bool,
    buffer: usize,
    blocking: bool,
    /// Yields before each read, cycled.
    speeds: Vec<u8>,
    /// Cancel after reading this many events.
    cancel_after: Option<usize>,
    multi_thread: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec((op(), any::<bool>()), 0..24),
        prop::bool::weighted(0.2),
        1usize..12,
        any::<bool>(),
        prop::collection::vec(0u8..6, 1..8),
        prop::option::weighted(0.3, 0usize..80),
        prop::bool::weighted(0.25),
    )
        .prop_map(
            |(ops, leave_open, buffer, blocking, speeds, cancel_after, multi_thread)| Case {
                ops,
                leave_open,
                buffer,
                blocking,
                speeds,
                cancel_after,
                multi_thread,
            },
        )
}

/// What a case exercised (so the suite can prove it covered drops and cancels).
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    dropped: bool,
    cancelled_mid_run: bool,
}

async fn check(case: Case) -> Result<Seen, TestCaseError> {
    let p = plan(&case.ops, case.leave_open);
    let driver = scripted(p.steps.clone(), response("", p.items.clone()));
    let mut builder = Agent::builder(driver).event_buffer(case.buffer);
    if case.blocking {
        builder = builder.blocking_events();
    }
    let agent = builder
        .build()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut stream = agent.stream("q");
    let mut events = Vec::new();
    let mut cancelled = false;
    loop {
        let yields = case.speeds[events.len() % case.speeds.len()];
        for _ in 0..yields {
            tokio::task::yield_now().await;
        }
        if case.cancel_after == Some(events.len()) {
            stream.cancel();
            cancelled = true;
        }
        match stream.next().await {
            Some(ev) => events.push(ev),
            None => break,
        }
    }
    let outcome = stream.result().await;

    // Envelope (a panic inside a proptest case is reported as a failure).
    common::assert_envelope(&events);
    let Some(Event::RunFinished(fin)) = events.last() else {
        return Err(TestCaseError::fail("last event is not RunFinished"));
    };

    // Every sequence number is delivered or counted exactly once.
    let reports = common::dropped(&events);
    let dropped_total: u64 = reports.iter().map(|d| d.count).sum();
    prop_assert_eq!(
        events.len() as u64 + dropped_total,
        fin.meta.sequence,
        "delivered + dropped must equal the last sequence number"
    );
    for d in &reports {
        prop_assert_eq!(d.source.as_str(), "sdk.event_broker");
        prop_assert_eq!(d.by_kind.values().sum::<u64>(), d.count);
        prop_assert!(d.first_sequence <= d.last_sequence);
        prop_assert!(
            d.last_sequence < d.meta.sequence,
            "a report follows its gap"
        );
    }
    let mut dropped_by_kind: BTreeMap<String, u64> = BTreeMap::new();
    for d in &reports {
        for (k, n) in &d.by_kind {
            *dropped_by_kind.entry(k.clone()).or_default() += n;
        }
    }

    if !cancelled {
        let outcome = outcome.map_err(|e| TestCaseError::fail(format!("run failed: {e}")))?;
        prop_assert_eq!(outcome.transcript(), &p.items[..]);
        // Only droppable kinds were dropped, and exactly the ones missing.
        let mut delivered_droppable: BTreeMap<String, u64> = BTreeMap::new();
        for e in events.iter().filter(|e| e.is_droppable()) {
            *delivered_droppable
                .entry(e.kind_name().into_owned())
                .or_default() += 1;
        }
        for (kind, emitted) in &p.droppable {
            let got = delivered_droppable.get(kind).copied().unwrap_or(0);
            let lost = dropped_by_kind.get(kind).copied().unwrap_or(0);
            prop_assert_eq!(got + lost, *emitted, "kind {}", kind);
        }
        for kind in dropped_by_kind.keys() {
            prop_assert!(
                p.droppable.contains_key(kind),
                "reliable kind {} dropped",
                kind
            );
        }
        // Every reliable event arrived, in order.
        let reliable: Vec<String> = events
            .iter()
            .filter(|e| {
                !e.is_droppable()
                    && !matches!(
                        e,
                        Event::RunStarted(_) | Event::RunFinished(_) | Event::Dropped(_)
                    )
            })
            .map(|e| e.kind_name().into_owned())
            .collect();
        prop_assert_eq!(&reliable, &p.reliable);
        if case.blocking {
            prop_assert!(reports.is_empty(), "blocking mode dropped events");
        }
        prop_assert!(!fin.failed);
    } else if let Err(e) = &outcome {
        let run = e
            .as_run_error()
            .ok_or_else(|| TestCaseError::fail("not a RunError"))?;
        prop_assert_eq!(&run.reason, &FailureReason::Cancelled);
        prop_assert_eq!(fin.reason.as_ref(), Some(&FailureReason::Cancelled));
    }

    // No task outlives the run (bounded wait for a worker thread to finish
    // dropping the task it just completed).
    let metrics = tokio::runtime::Handle::current().metrics();
    for _ in 0..2000 {
        if metrics.num_alive_tasks() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    prop_assert_eq!(metrics.num_alive_tasks(), 0, "a task outlived the run");
    Ok(Seen {
        dropped: dropped_total > 0,
        cancelled_mid_run: cancelled && fin.failed,
    })
}

#[test]
fn broker_invariants_hold() {
    use proptest::test_runner::{Config, TestRunner};
    use std::sync::{Arc, Mutex};
    let seen = Arc::new(Mutex::new((0usize, 0usize, 0usize)));
    let tally = seen.clone();
    let mut runner = TestRunner::new(Config {
        cases: 300,
        ..Config::default()
    });
    let verdict = runner.run(&case(), move |case| {
        let rt = if case.multi_thread {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        }
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let s = rt.block_on(check(case))?;
        let mut t = tally.lock().unwrap();
        t.0 += 1;
        t.1 += usize::from(s.dropped);
        t.2 += usize::from(s.cancelled_mid_run);
        Ok(())
    });
    if let Err(e) = verdict {
        panic!("{e}");
    }
    // The generator must actually reach the interesting paths.
    let (cases, dropped, cancelled) = *seen.lock().unwrap();
    assert!(cases >= 300, "ran {cases} cases");
    assert!(
        dropped >= 10,
        "only {dropped} of {cases} cases dropped events"
    );
    assert!(
        cancelled >= 10,
        "only {cancelled} of {cases} cases cancelled mid-run"
    );
}

/// The worked example of the streaming guide, made deterministic: a buffer of
/// one, a consumer far slower than the driver, on one thread.
#[tokio::test(flavor = "current_thread")]
async fn slow_consumer_gets_one_aggregated_report_per_gap() {
    let mut steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::Stream(StreamPayload::text_start("m")),
    ];
    for i in 0..10 {
        steps.push(Step::Stream(StreamPayload::text_content(
            "m",
            format!("{i}"),
        )));
    }
    steps.push(Step::Stream(StreamPayload::text_end("m")));
    steps.push(Step::Stream(StreamPayload::run_finished(None)));
    let agent = Agent::builder(scripted(steps, response("", vec![])))
        .event_buffer(1)
        .build()
        .unwrap();
    let mut stream = agent.stream("q");
    // Slow: the consumer yields a hundred times before each read. Nothing
    // in the script waits but for space for its reliable events, and a
    // delta on a full buffer gives way only once per full spell, so the
    // driver runs ahead.
    let mut events = Vec::new();
    loop {
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        match stream.next().await {
            Some(ev) => events.push(ev),
            None => break,
        }
    }
    let outcome = stream.result().await;
    outcome.unwrap();
    common::assert_envelope(&events);
    let reports = common::dropped(&events);
    let lost: u64 = reports.iter().map(|d| d.count).sum();
    let delivered = events
        .iter()
        .filter(
            |e| matches!(e, Event::TextDelta(d) if d.phase == agent_adaptor_core::Phase::Content),
        )
        .count() as u64;
    assert!(lost > 0, "a buffer of one with a lazy consumer must drop");
    assert_eq!(lost + delivered, 10);
    for d in &reports {
        assert_eq!(d.reason, "slow_consumer");
        assert_eq!(d.by_kind.keys().collect::<Vec<_>>(), ["text.content"]);
    }
    // The text lifecycle boundaries were never dropped.
    let boundaries = events
        .iter()
        .filter(
            |e| matches!(e, Event::TextDelta(d) if d.phase != agent_adaptor_core::Phase::Content),
        )
        .count();
    assert_eq!(boundaries, 2);
}

/// A consumer on the publisher's own thread (`current_thread`) that reads
/// as fast as it can loses nothing, even to a batch many times the buffer:
/// a delta that finds the buffer full gives way once, and the consumer
/// drains meanwhile. (Before, it could not run until the driver yielded for
/// some other reason, and every delta past the buffer was dropped.)
#[tokio::test(flavor = "current_thread")]
async fn a_consumer_on_the_publishers_thread_keeps_up_with_a_flood() {
    const DELTAS: usize = 500;
    let mut steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::BeginBatch,
        Step::Stream(StreamPayload::text_start("m")),
    ];
    for i in 0..DELTAS {
        steps.push(Step::Stream(StreamPayload::text_content(
            "m",
            format!("{i}"),
        )));
    }
    steps.push(Step::Stream(StreamPayload::text_end("m")));
    steps.push(Step::EndBatch);
    steps.push(Step::Stream(StreamPayload::run_finished(None)));
    let agent = Agent::builder(scripted(steps, response("", vec![])))
        .event_buffer(16)
        .build()
        .unwrap();
    let (events, outcome) = common::drain(agent.stream("q")).await;
    outcome.unwrap();
    common::assert_envelope(&events);
    assert!(common::dropped(&events).is_empty(), "nothing dropped");
    let texts: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta(d) if d.phase == agent_adaptor_core::Phase::Content => {
                Some(d.text.clone())
            }
            _ => None,
        })
        .collect();
    let want: Vec<String> = (0..DELTAS).map(|i| i.to_string()).collect();
    assert_eq!(texts, want, "every delta, in order");
}
