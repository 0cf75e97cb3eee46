//! Threads on the in-memory store: resume, failure isolation, leases,
//! resume-only, fork, incompatibility, lease loss.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::driver::{
    Checkpoint, SessionMode, SessionState, StandardSessionCodec, StreamPayload, async_trait,
};
use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
use agent_adaptor_core::thread::{
    FinalizeRequest, Lease, MemoryStore, StoreError, ThreadRecord, ThreadStore,
};
use agent_adaptor_core::{
    Agent, Error, Event, FailureReason, RunCause, RunOptions, Runner, ThreadError,
};
use common::*;

fn agent_with(driver: ScriptedDriver, store: Arc<dyn ThreadStore>) -> Agent {
    Agent::builder(driver).thread_store(store).build().unwrap()
}

#[tokio::test]
async fn the_second_turn_resumes_the_first_turns_session() {
    let driver = ScriptedDriver::resumable_reply("hello", "sess-1");
    let store = Arc::new(MemoryStore::new());
    let agent = agent_with(driver.clone(), store.clone());
    let thread = agent.thread("tenant/conv-1");
    let (events, first) = drain(thread.stream("turn one")).await;
    first.unwrap();
    assert!(
        events
            .iter()
            .all(|e| e.meta().thread_key.as_deref() == Some("tenant/conv-1"))
    );
    thread.run("turn two").await.unwrap();
    let requests = driver.recorded_requests();
    assert_eq!(requests.len(), 2);
    let s1 = requests[0].session.as_ref().unwrap();
    assert_eq!(s1.mode, SessionMode::ContinueOrStart);
    assert!(s1.state.is_none(), "the first turn starts fresh");
    let s2 = requests[1].session.as_ref().unwrap();
    assert_eq!(s2.state.as_ref().unwrap().resume_id, "sess-1");
    assert_eq!(
        thread.checkpoint().await.unwrap().unwrap().resume_id,
        "sess-1"
    );
    // One active record, the first one archived.
    let records = store.records();
    assert_eq!(records.len(), 2);
    assert_eq!(
        records
            .iter()
            .filter(|r| r.status == agent_adaptor_core::thread::RecordStatus::Active)
            .count(),
        1
    );
}

#[tokio::test]
async fn a_failed_run_never_replaces_the_active_record() {
    let store = Arc::new(MemoryStore::new());
    let good = agent_with(
        ScriptedDriver::resumable_reply("ok", "sess-good"),
        store.clone(),
    );
    good.thread("k").run("one").await.unwrap();

    // Same driver configuration, but the run fails.
    let failing = ScriptedDriver::new(
        vec![Step::Stream(StreamPayload::run_started())],
        Ending::Fail("provider down".into()),
    )
    .with_resume(
        Arc::new(StandardSessionCodec::new("scripted")),
        "scripted-config-v1",
    );
    let bad = agent_with(failing, store.clone());
    let err = bad.thread("k").run("two").await.unwrap_err();
    assert_eq!(
        err.as_run_error().unwrap().reason,
        FailureReason::Infrastructure
    );
    assert_eq!(
        good.thread("k")
            .checkpoint()
            .await
            .unwrap()
            .unwrap()
            .resume_id,
        "sess-good"
    );
    assert_eq!(store.records().len(), 1);
}

#[tokio::test]
async fn success_without_a_valid_checkpoint_keeps_the_previous_state() {
    let store = Arc::new(MemoryStore::new());
    let good = agent_with(
        ScriptedDriver::resumable_reply("ok", "sess-good"),
        store.clone(),
    );
    good.thread("k").run("one").await.unwrap();
    // Claims no checkpoint at all.
    let no_cp = ScriptedDriver::text_reply("ok").with_resume(
        Arc::new(StandardSessionCodec::new("scripted")),
        "scripted-config-v1",
    );
    let err = agent_with(no_cp, store.clone())
        .thread("k")
        .run("two")
        .await
        .unwrap_err();
    let run = err.as_run_error().unwrap();
    assert!(matches!(
        run.cause,
        Some(RunCause::Thread(ThreadError::CheckpointMissing))
    ));
    assert_eq!(
        run.result.as_ref().unwrap().text,
        "ok",
        "the answer is not lost"
    );
    assert_eq!(
        good.thread("k")
            .checkpoint()
            .await
            .unwrap()
            .unwrap()
            .resume_id,
        "sess-good"
    );
}

#[tokio::test]
async fn concurrent_runs_on_one_key_one_runs_the_other_is_busy() {
    let store = Arc::new(MemoryStore::new());
    let mut steps = vec![Step::Sleep(Duration::from_millis(200))];
    steps.extend(framed(vec![]));
    let mut resp = response("slow", vec![]);
    resp.checkpoint = Some(Checkpoint::valid(SessionState {
        resume_id: "sess-slow".into(),
        display_id: "sess-slow".into(),
        ..Default::default()
    }));
    resp.raw.terminal = agent_adaptor_core::driver::TerminalPayload::new("result", "{}").ok();
    let slow = ScriptedDriver::new(steps, Ending::Respond(Box::new(resp))).with_resume(
        Arc::new(StandardSessionCodec::new("scripted")),
        "scripted-config-v1",
    );
    let agent = agent_with(slow, store);
    let first = agent.thread("k").stream("one");
    // Let the first run take the lease.
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    let (events, second) = drain(agent.thread("k").stream("two")).await;
    assert_envelope(&events);
    assert!(
        matches!(second, Err(Error::Thread(ThreadError::Busy { .. }))),
        "{second:?}"
    );
    assert!(finished(&events).failed);
    let (_, first) = drain(first).await;
    first.unwrap();
}

#[tokio::test]
async fn resume_only_on_a_missing_key_is_not_found_and_the_driver_is_not_called() {
    let driver = ScriptedDriver::resumable_reply("hi", "s");
    let agent = agent_with(driver.clone(), Arc::new(MemoryStore::new()));
    let err = agent
        .thread("nope")
        .resume_only()
        .run("x")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Thread(ThreadError::NotFound { ref key }) if key == "nope"));
    assert!(driver.recorded_requests().is_empty());
}

#[tokio::test]
async fn fork_copies_the_state_and_leaves_the_parent_alone() {
    let driver = ScriptedDriver::resumable_reply("hi", "sess-parent");
    let store = Arc::new(MemoryStore::new());
    let agent = agent_with(driver.clone(), store.clone());
    agent.thread("parent").run("one").await.unwrap();
    let child = agent.thread("parent").fork("child");
    child.run("two").await.unwrap();
    let forked = &driver.recorded_requests()[1];
    let s = forked.session.as_ref().unwrap();
    assert_eq!(s.mode, SessionMode::Fork);
    assert_eq!(s.state.as_ref().unwrap().resume_id, "sess-parent");
    assert!(agent.thread("child").checkpoint().await.unwrap().is_some());
    assert!(agent.thread("parent").checkpoint().await.unwrap().is_some());
    // Forking onto an occupied key fails and changes nothing.
    let err = agent
        .thread("parent")
        .fork("child")
        .run("three")
        .await
        .unwrap_err();
    assert!(
        matches!(&err.as_run_error().unwrap().cause, Some(RunCause::Thread(ThreadError::AlreadyExists { key })) if key == "child"),
        "{err:?}"
    );
}

#[tokio::test]
async fn threads_need_a_store_and_a_resumable_driver_checked_before_anything_runs() {
    let driver = ScriptedDriver::text_reply("hi");
    let no_store = Agent::new(driver.clone());
    let (events, outcome) = drain(no_store.thread("k").stream("x")).await;
    assert!(events.is_empty());
    assert!(matches!(outcome, Err(Error::ThreadStoreRequired)));
    let not_resumable = agent_with(driver.clone(), Arc::new(MemoryStore::new()));
    let (events, outcome) = drain(not_resumable.thread("k").stream("x")).await;
    assert!(
        events.is_empty(),
        "rejected before any lease or driver call"
    );
    assert!(matches!(
        outcome,
        Err(Error::Thread(ThreadError::Incompatible { .. }))
    ));
    assert!(driver.recorded_requests().is_empty());
}

#[tokio::test]
async fn an_incompatible_record_starts_fresh_or_is_refused_with_resume_only() {
    let driver = ScriptedDriver::resumable_reply("hi", "sess-a");
    let store = Arc::new(MemoryStore::new());
    let agent = agent_with(driver.clone(), store);
    agent.thread("k").run("one").await.unwrap();
    // Another model: the provider session cannot be resumed.
    let other_model = RunOptions::new().model("another-model");
    agent
        .thread("k")
        .run_with("two", other_model.clone())
        .await
        .unwrap();
    let second = &driver.recorded_requests()[1];
    assert!(
        second.session.as_ref().unwrap().state.is_none(),
        "fresh session"
    );
    // Now the record matches "another-model"; resume_only with the first
    // model is refused.
    let err = agent
        .thread("k")
        .resume_only()
        .run("three")
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Thread(ThreadError::Incompatible { .. })),
        "{err:?}"
    );
}

/// A store whose renewals always fail.
struct Forgetful(MemoryStore);

#[async_trait]
impl ThreadStore for Forgetful {
    async fn resolve(&self, key: &str, a: bool) -> Result<Option<ThreadRecord>, StoreError> {
        self.0.resolve(key, a).await
    }
    async fn acquire_lease(&self, t: &str, o: &str, ttl: Duration) -> Result<Lease, StoreError> {
        self.0.acquire_lease(t, o, ttl).await
    }
    async fn renew_lease(&self, lease: &Lease, _: Duration) -> Result<Lease, StoreError> {
        Err(StoreError::LeaseLost {
            target: lease.target.clone(),
        })
    }
    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        self.0.release_lease(lease).await
    }
    async fn finalize(&self, r: FinalizeRequest) -> Result<ThreadRecord, StoreError> {
        self.0.finalize(r).await
    }
}

#[tokio::test(start_paused = true)]
async fn losing_the_lease_stops_the_run_and_persists_nothing() {
    let store = Arc::new(Forgetful(MemoryStore::new()));
    let mut steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::Sleep(Duration::from_secs(600)),
    ];
    steps.push(Step::Stream(StreamPayload::run_finished(None)));
    let driver = ScriptedDriver::new(steps, Ending::Respond(Box::new(response("", vec![]))))
        .with_resume(
            Arc::new(StandardSessionCodec::new("scripted")),
            "scripted-config-v1",
        );
    let agent = agent_with(driver, store.clone());
    let (events, outcome) = drain(agent.thread("k").stream("x")).await;
    assert!(matches!(events.last(), Some(Event::RunFinished(_))));
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert!(
        matches!(
            run.cause,
            Some(RunCause::Thread(ThreadError::LeaseLost { .. }))
        ),
        "{run:?}"
    );
    assert!(store.0.records().is_empty());
}

#[tokio::test]
async fn memory_store_leases_expire_and_can_be_taken_over() {
    let store = MemoryStore::new();
    let a = store
        .acquire_lease("key:k", "a", Duration::from_secs(60))
        .await
        .unwrap();
    assert!(matches!(
        store
            .acquire_lease("key:k", "b", Duration::from_secs(60))
            .await,
        Err(StoreError::Busy { .. })
    ));
    store.release_lease(&a).await.unwrap();
    let b = store
        .acquire_lease("key:k", "b", Duration::ZERO)
        .await
        .unwrap();
    // b's lease is already expired: c takes over, and b can no longer renew.
    let c = store
        .acquire_lease("key:k", "c", Duration::from_secs(60))
        .await
        .unwrap();
    assert!(matches!(
        store.renew_lease(&b, Duration::from_secs(60)).await,
        Err(StoreError::LeaseLost { .. })
    ));
    store
        .renew_lease(&c, Duration::from_secs(60))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_huge_lease_ttl_never_expires_and_never_panics() {
    let store = MemoryStore::new();
    let lease = store
        .acquire_lease("key:k", "a", Duration::MAX)
        .await
        .unwrap();
    assert!(lease.expires_at > chrono::Utc::now() + chrono::Duration::days(365 * 100));
    store.renew_lease(&lease, Duration::MAX).await.unwrap();
}
