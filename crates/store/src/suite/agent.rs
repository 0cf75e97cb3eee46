//! End-to-end cases: the store behind core's thread runs
//! (`Agent::builder(ScriptedDriver …).thread_store(store)`).

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::driver::{
    Checkpoint, RawStreams, Response, RunEvent, SessionMode, SessionState, StandardSessionCodec,
    StreamPayload, TerminalPayload, TranscriptItem,
};
use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
use agent_adaptor_core::thread::ThreadStore;
use agent_adaptor_core::{Agent, Error, Event, RunCause, Runner, ThreadError};
use futures::StreamExt;

use super::{Outcome, ensure, must, unique_key};

/// The codec name and config fingerprint of `ScriptedDriver::resumable_reply`,
/// so the drivers built here share its records.
const CODEC: &str = "scripted";
const CONFIG: &str = "scripted-config-v1";

fn agent(driver: ScriptedDriver, store: &Arc<dyn ThreadStore>) -> Result<Agent, String> {
    Agent::builder(driver)
        .thread_store(store.clone())
        .build()
        .map_err(|e| format!("building the agent: {e}"))
}

fn run_error(e: Error) -> String {
    format!("the run failed: {e:?}")
}

/// A resumable reply that holds the run open for `pause` after its first
/// text delta (so a test can act while the lease is held).
fn slow_reply(text: &str, session: &str, pause: Duration) -> ScriptedDriver {
    let item = TranscriptItem::assistant(text.to_owned());
    let steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::Stream(StreamPayload::text_start("m1")),
        Step::Stream(StreamPayload::text_content("m1", text)),
        Step::Sleep(pause),
        Step::Stream(StreamPayload::text_end("m1")),
        Step::Emit(RunEvent::Item(item.clone().into())),
        Step::Stream(StreamPayload::run_finished(None)),
    ];
    let terminal = serde_json::json!({"type": "result", "result": text}).to_string();
    let response = Response {
        output: text.to_owned(),
        raw: RawStreams {
            stdout: format!("{terminal}\n").into(),
            stderr: Default::default(),
            terminal: TerminalPayload::new("result", &terminal).ok(),
        },
        transcript: vec![item].into(),
        exit_code: Some(0),
        provider: "scripted".into(),
        checkpoint: Some(Checkpoint::valid(SessionState {
            resume_id: session.to_owned(),
            display_id: session.to_owned(),
            data: Default::default(),
        })),
        ..Default::default()
    };
    ScriptedDriver::new(steps, Ending::Respond(Box::new(response)))
        .with_resume(Arc::new(StandardSessionCodec::new(CODEC)), CONFIG)
}

/// Two turns on one key: the second resumes the first's session; the
/// store keeps one active record that links to the first.
pub async fn agent_two_turns_resume(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("agent-turns");
    let driver = ScriptedDriver::resumable_reply("hello", "sess-1");
    let agent = agent(driver.clone(), &store)?;
    let thread = agent.thread(key.clone());
    thread.run("turn one").await.map_err(run_error)?;
    let first = must(store.resolve(&key, false).await, "resolve")?
        .ok_or("the first turn saved no record")?;
    thread.run("turn two").await.map_err(run_error)?;
    let requests = driver.recorded_requests();
    ensure!(requests.len() == 2, "{} driver calls", requests.len());
    let s1 = requests[0]
        .session
        .as_ref()
        .ok_or("turn one had no session")?;
    ensure!(s1.state.is_none(), "the first turn starts fresh: {s1:?}");
    let s2 = requests[1]
        .session
        .as_ref()
        .ok_or("turn two had no session")?;
    let resumed = s2.state.as_ref().map(|s| s.resume_id.as_str());
    ensure!(resumed == Some("sess-1"), "turn two resumed {resumed:?}");
    let second = must(store.resolve(&key, false).await, "resolve")?
        .ok_or("the second turn saved no record")?;
    ensure!(second.id != first.id, "a new record per turn");
    ensure!(
        second.previous_id.as_deref() == Some(first.id.as_str()),
        "the new record links to the old one: {second:?}"
    );
    ensure!(
        second.codec == CODEC && second.params.resume_id == "sess-1",
        "record: {second:?}"
    );
    let checkpoint = thread.checkpoint().await.map_err(run_error)?;
    ensure!(
        checkpoint.as_ref().map(|s| s.resume_id.as_str()) == Some("sess-1"),
        "checkpoint: {checkpoint:?}"
    );
    Ok(())
}

/// Two concurrent runs on one key: exactly one runs; the other fails fast
/// with `Error::Thread(ThreadError::Busy)`.
pub async fn agent_concurrent_runs_one_is_busy(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("agent-busy");
    let driver = slow_reply("slow", "sess-slow", Duration::from_millis(500));
    let agent = agent(driver.clone(), &store)?;
    let mut first = agent.thread(key.clone()).stream("one");
    // The driver runs only once the lease is held: its first text delta
    // proves it.
    loop {
        match first.next().await {
            Some(Event::TextDelta(_)) => break,
            Some(_) => {}
            None => return Err("the first run ended before its text".into()),
        }
    }
    let second = agent.thread(key.clone()).run("two").await;
    ensure!(
        matches!(&second, Err(Error::Thread(ThreadError::Busy { key: k })) if *k == key),
        "the second run: {second:?}"
    );
    while first.next().await.is_some() {}
    first.result().await.map_err(run_error)?;
    ensure!(
        driver.recorded_requests().len() == 1,
        "the busy run never reached the driver"
    );
    let saved = must(store.resolve(&key, false).await, "resolve")?;
    ensure!(
        saved.as_ref().map(|r| r.params.resume_id.as_str()) == Some("sess-slow"),
        "the running turn was saved: {saved:?}"
    );
    // The lease was released: the key is usable again.
    agent.thread(key).run("three").await.map_err(run_error)?;
    Ok(())
}

/// `resume_only` on a missing key: `NotFound`, the driver is not called,
/// nothing is written.
pub async fn agent_resume_only_missing_is_not_found(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("agent-missing");
    let driver = ScriptedDriver::resumable_reply("hi", "s");
    let agent = agent(driver.clone(), &store)?;
    let outcome = agent.thread(key.clone()).resume_only().run("x").await;
    ensure!(
        matches!(&outcome, Err(Error::Thread(ThreadError::NotFound { key: k })) if *k == key),
        "resume_only on a missing key: {outcome:?}"
    );
    ensure!(driver.recorded_requests().is_empty(), "the driver ran");
    let saved = must(store.resolve(&key, true).await, "resolve")?;
    ensure!(saved.is_none(), "a record appeared: {saved:?}");
    Ok(())
}

/// A fork hands the driver the parent's state, saves the child under its
/// own key and leaves the parent untouched; forking onto an occupied key
/// fails with `AlreadyExists` and changes nothing.
pub async fn agent_fork_copies_state(store: Arc<dyn ThreadStore>) -> Outcome {
    let parent_key = unique_key("agent-parent");
    let child_key = unique_key("agent-child");
    let driver = ScriptedDriver::resumable_reply("hi", "sess-parent");
    let agent = agent(driver.clone(), &store)?;
    agent
        .thread(parent_key.clone())
        .run("one")
        .await
        .map_err(run_error)?;
    let parent =
        must(store.resolve(&parent_key, false).await, "resolve")?.ok_or("no parent record")?;
    let fork = agent.thread(parent_key.clone()).fork(child_key.clone());
    fork.run("two").await.map_err(run_error)?;
    let requests = driver.recorded_requests();
    let session = requests
        .get(1)
        .and_then(|r| r.session.as_ref())
        .ok_or("the fork had no session")?;
    ensure!(session.mode == SessionMode::Fork, "mode {:?}", session.mode);
    let state = session.state.as_ref().map(|s| s.resume_id.as_str());
    ensure!(state == Some("sess-parent"), "fork state {state:?}");
    let child =
        must(store.resolve(&child_key, false).await, "resolve")?.ok_or("no child record")?;
    ensure!(
        child.params.resume_id == "sess-parent",
        "child record: {child:?}"
    );
    let parent_after = must(store.resolve(&parent_key, false).await, "resolve")?;
    ensure!(
        parent_after.as_ref() == Some(&parent),
        "the parent changed: {parent_after:?}"
    );
    let again = agent
        .thread(parent_key)
        .fork(child_key.clone())
        .run("three")
        .await;
    let cause = again
        .as_ref()
        .err()
        .and_then(Error::as_run_error)
        .and_then(|r| r.cause.as_ref());
    ensure!(
        matches!(cause, Some(RunCause::Thread(ThreadError::AlreadyExists { key })) if *key == child_key),
        "fork onto an occupied key: {again:?}"
    );
    let child_after = must(store.resolve(&child_key, false).await, "resolve")?;
    ensure!(
        child_after.as_ref() == Some(&child),
        "the child changed: {child_after:?}"
    );
    Ok(())
}

/// A failed run (same driver configuration) never replaces the record.
pub async fn agent_failed_run_keeps_the_record(store: Arc<dyn ThreadStore>) -> Outcome {
    let key = unique_key("agent-failed");
    let good = agent(ScriptedDriver::resumable_reply("ok", "sess-good"), &store)?;
    good.thread(key.clone())
        .run("one")
        .await
        .map_err(run_error)?;
    let before = must(store.resolve(&key, true).await, "resolve")?;
    let failing = ScriptedDriver::new(
        vec![Step::Stream(StreamPayload::run_started())],
        Ending::Fail("provider down".into()),
    )
    .with_resume(Arc::new(StandardSessionCodec::new(CODEC)), CONFIG);
    let outcome = agent(failing, &store)?.thread(key.clone()).run("two").await;
    ensure!(outcome.is_err(), "the failing run succeeded: {outcome:?}");
    let after = must(store.resolve(&key, true).await, "resolve")?;
    ensure!(
        before.is_some() && after == before,
        "the record changed: {before:?} → {after:?}"
    );
    // The failed run released its lease.
    good.thread(key).run("three").await.map_err(run_error)?;
    Ok(())
}
