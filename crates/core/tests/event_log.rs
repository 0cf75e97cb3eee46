//! The event log recorder: every event of every run of a recorded thread
//! reaches the store's log, in order; a failed write fails the run.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::driver::async_trait;
use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::thread::{
    EventPage, EventQuery, FinalizeRequest, Lease, MemoryStore, NewEvent, Retention, StoreError,
    ThreadRecord, ThreadStore,
};
use agent_adaptor_core::{Agent, Error, Event, RunCause, Runner, ThreadError};
use common::*;

fn agent_with(driver: ScriptedDriver, store: Arc<dyn ThreadStore>) -> Agent {
    Agent::builder(driver).thread_store(store).build().unwrap()
}

async fn all_events(
    store: &dyn ThreadStore,
    key: &str,
) -> Vec<agent_adaptor_core::thread::RecordedEvent> {
    store
        .events(key, &EventQuery::since(0).max_events(100_000))
        .await
        .unwrap()
        .events
}

#[tokio::test]
async fn every_event_of_every_run_is_recorded_in_order() {
    let store = Arc::new(MemoryStore::new());
    let agent = agent_with(
        ScriptedDriver::resumable_reply("one two three", "s1"),
        store.clone(),
    );
    let thread = agent.thread("k").record_events(Retention::keep_all());
    let (first, outcome) = drain(thread.stream("first prompt")).await;
    outcome.unwrap();
    let (second, outcome) = drain(thread.stream("second prompt")).await;
    outcome.unwrap();

    let log = all_events(&*store, "k").await;
    assert_eq!(log.len(), first.len() + second.len());
    for (i, rec) in log.iter().enumerate() {
        assert_eq!(rec.cursor, i as u64 + 1);
    }
    let streamed: Vec<(String, u64, String)> = first
        .iter()
        .chain(&second)
        .map(|e| {
            (
                e.meta().run_id.to_string(),
                e.meta().sequence,
                e.kind_name().into_owned(),
            )
        })
        .collect();
    let recorded: Vec<(String, u64, String)> = log
        .iter()
        .map(|r| {
            (
                r.run_id.clone(),
                r.event.meta().sequence,
                r.event.kind_name().into_owned(),
            )
        })
        .collect();
    assert_eq!(recorded, streamed);
    let prompts: Vec<(u64, &str)> = log
        .iter()
        .filter_map(|r| r.prompt.as_deref().map(|p| (r.cursor, p)))
        .collect();
    let second_start = first.len() as u64 + 1;
    assert_eq!(
        prompts,
        vec![(1, "first prompt"), (second_start, "second prompt")]
    );
    assert!(matches!(log[0].event, Event::RunStarted(_)));
    assert!(matches!(log.last().unwrap().event, Event::RunFinished(_)));
}

#[tokio::test]
async fn a_run_nobody_reads_still_records_its_deltas() {
    let store = Arc::new(MemoryStore::new());
    let words = "a b c d e f g h";
    let agent = agent_with(ScriptedDriver::resumable_reply(words, "s1"), store.clone());
    agent
        .thread("k")
        .record_events(Retention::keep_all())
        .run("p")
        .await
        .unwrap();
    let text: String = all_events(&*store, "k")
        .await
        .iter()
        .filter_map(|r| match &r.event {
            Event::TextDelta(d) => Some(d.text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(text, words);
}

#[tokio::test]
async fn retention_prunes_after_each_run() {
    let store = Arc::new(MemoryStore::new());
    let agent = agent_with(ScriptedDriver::resumable_reply("x y", "s1"), store.clone());
    let thread = agent.thread("k").record_events(Retention::keep_last(5));
    thread.run("one").await.unwrap();
    thread.run("two").await.unwrap();
    let log = all_events(&*store, "k").await;
    assert_eq!(log.len(), 5);
    let newest = log.last().unwrap().cursor;
    assert!(newest > 5, "cursors keep growing: {newest}");
    assert_eq!(log.first().unwrap().cursor, newest - 4);
}

#[tokio::test]
async fn an_unrecorded_thread_writes_no_log() {
    let store = Arc::new(MemoryStore::new());
    let agent = agent_with(ScriptedDriver::resumable_reply("x", "s1"), store.clone());
    agent.thread("k").run("p").await.unwrap();
    assert!(all_events(&*store, "k").await.is_empty());
}

#[tokio::test]
async fn a_busy_run_records_nothing() {
    let store = Arc::new(MemoryStore::new());
    store
        .acquire_lease("key:k", "someone-else", Duration::from_secs(60))
        .await
        .unwrap();
    let agent = agent_with(ScriptedDriver::resumable_reply("x", "s1"), store.clone());
    let err = agent
        .thread("k")
        .record_events(Retention::keep_all())
        .run("p")
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Thread(ThreadError::Busy { .. })),
        "{err:?}"
    );
    assert!(all_events(&*store, "k").await.is_empty());
}

/// A store whose event log refuses writes after `ok` appends.
struct FailingLog {
    inner: MemoryStore,
    ok: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl ThreadStore for FailingLog {
    async fn resolve(&self, key: &str, a: bool) -> Result<Option<ThreadRecord>, StoreError> {
        self.inner.resolve(key, a).await
    }
    async fn acquire_lease(&self, t: &str, o: &str, ttl: Duration) -> Result<Lease, StoreError> {
        self.inner.acquire_lease(t, o, ttl).await
    }
    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        self.inner.renew_lease(lease, ttl).await
    }
    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        self.inner.release_lease(lease).await
    }
    async fn finalize(&self, r: FinalizeRequest) -> Result<ThreadRecord, StoreError> {
        self.inner.finalize(r).await
    }
    async fn append_events(
        &self,
        key: &str,
        run_id: &str,
        events: &[NewEvent],
    ) -> Result<Vec<u64>, StoreError> {
        use std::sync::atomic::Ordering;
        let left = self.ok.load(Ordering::SeqCst);
        if left == 0 {
            return Err(StoreError::Backend("disk full".into()));
        }
        self.ok.store(left - 1, Ordering::SeqCst);
        self.inner.append_events(key, run_id, events).await
    }
    async fn events(&self, key: &str, q: &EventQuery) -> Result<EventPage, StoreError> {
        self.inner.events(key, q).await
    }
}

#[tokio::test]
async fn a_failed_write_fails_the_run_and_saves_no_record() {
    for ok in [0, 1] {
        let store = Arc::new(FailingLog {
            inner: MemoryStore::new(),
            ok: ok.into(),
        });
        let agent = agent_with(
            ScriptedDriver::resumable_reply("a b c", "s1"),
            store.clone(),
        );
        let (events, outcome) = drain(
            agent
                .thread("k")
                .record_events(Retention::keep_all())
                .stream("p"),
        )
        .await;
        let err = outcome.unwrap_err();
        let run = err.as_run_error().expect("a run error");
        assert!(
            matches!(run.cause, Some(RunCause::Thread(ThreadError::EventLog(_)))),
            "{run:?}"
        );
        match events.last() {
            Some(Event::RunFinished(f)) => assert!(f.failed, "{f:?}"),
            other => panic!("the stream ends with RunFinished: {other:?}"),
        }
        if ok == 0 {
            // Failing before the record is saved saves nothing (a failure
            // writing the closing `RunFinished` comes after the save).
            assert!(store.inner.records().is_empty(), "nothing persisted");
        }
        // What was written is a prefix of the run, starting at its start.
        let log = all_events(&store.inner, "k").await;
        if let Some(first) = log.first() {
            assert!(matches!(first.event, Event::RunStarted(_)));
        }
    }
}
