//! The agent's lease TTL: validated at build, used to take and renew a
//! thread run's lease (every third of it), and the run's lease holder as
//! bridges see it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_adaptor_core::driver::{StandardSessionCodec, StreamPayload, async_trait};
use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
use agent_adaptor_core::thread::{
    FinalizeRequest, InterruptedRun, Lease, MemoryStore, StoreError, ThreadRecord, ThreadStore,
};
use agent_adaptor_core::{Agent, Error, Runner};
use common::*;

/// A memory store that notes every lease call: (what, owner, ttl).
#[derive(Default)]
struct Noting {
    store: MemoryStore,
    calls: Mutex<Vec<(&'static str, String, Duration)>>,
}

impl Noting {
    fn note(&self, what: &'static str, owner: &str, ttl: Duration) {
        self.calls
            .lock()
            .unwrap()
            .push((what, owner.to_owned(), ttl));
    }
}

#[async_trait]
impl ThreadStore for Noting {
    async fn resolve(&self, key: &str, a: bool) -> Result<Option<ThreadRecord>, StoreError> {
        self.store.resolve(key, a).await
    }
    async fn acquire_lease(&self, t: &str, o: &str, ttl: Duration) -> Result<Lease, StoreError> {
        self.note("acquire", o, ttl);
        self.store.acquire_lease(t, o, ttl).await
    }
    async fn acquire_run_lease(
        &self,
        t: &str,
        o: &str,
        ttl: Duration,
        prompt: &str,
    ) -> Result<Lease, StoreError> {
        self.note("acquire_run", o, ttl);
        self.store.acquire_run_lease(t, o, ttl, prompt).await
    }
    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        self.note("renew", &lease.owner, ttl);
        self.store.renew_lease(lease, ttl).await
    }
    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        self.store.release_lease(lease).await
    }
    async fn finalize(&self, r: FinalizeRequest) -> Result<ThreadRecord, StoreError> {
        self.store.finalize(r).await
    }
    async fn delete(&self, key: &str) -> Result<u64, StoreError> {
        self.store.delete(key).await
    }
    async fn recover_expired(&self) -> Result<Vec<InterruptedRun>, StoreError> {
        self.note("recover_expired", "", Duration::ZERO);
        self.store.recover_expired().await
    }
    async fn interrupted_runs(&self, key: &str) -> Result<Vec<InterruptedRun>, StoreError> {
        self.store.interrupted_runs(key).await
    }
}

fn slow_driver(run_for: Duration) -> ScriptedDriver {
    let steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::Sleep(run_for),
        Step::Stream(StreamPayload::run_finished(None)),
    ];
    ScriptedDriver::new(steps, Ending::Respond(Box::new(response("", vec![])))).with_resume(
        Arc::new(StandardSessionCodec::new("scripted")),
        "scripted-config-v1",
    )
}

#[test]
fn build_refuses_a_lease_ttl_under_one_second() {
    let refused = Agent::builder(slow_driver(Duration::ZERO))
        .lease_ttl(Duration::from_millis(999))
        .build();
    assert!(
        matches!(
            refused,
            Err(Error::InvalidOption {
                option: "lease_ttl",
                ..
            })
        ),
        "{refused:?}"
    );
    Agent::builder(slow_driver(Duration::ZERO))
        .lease_ttl(Duration::from_secs(1))
        .build()
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_thread_run_takes_and_renews_its_lease_with_the_agents_ttl() {
    let store = Arc::new(Noting::default());
    let agent = Agent::builder(slow_driver(Duration::from_secs(100)))
        .thread_store(store.clone())
        .lease_owner("host:1", "e7")
        .lease_ttl(Duration::from_secs(30))
        .build()
        .unwrap();
    let stream = agent.thread("k").stream("x");
    let holder = format!("host:1@e7/{}", stream.run_id());
    assert_eq!(stream.lease_holder(), Some(holder.as_str()));
    assert_eq!(stream.handle().lease_holder(), Some(holder.as_str()));
    // The scripted run leaves no checkpoint: the run fails after it ran.
    let (_, _failed) = drain(stream).await;
    let calls = store.calls.lock().unwrap().clone();
    let ttl = Duration::from_secs(30);
    assert_eq!(calls[0], ("acquire_run", holder.clone(), ttl));
    // 100 s of run, a renewal every 10 s.
    let renewals = calls.iter().filter(|c| c.0 == "renew").count();
    assert!((9..=10).contains(&renewals), "{calls:?}");
    assert!(
        calls.iter().all(|c| c.1 == holder && c.2 == ttl),
        "{calls:?}"
    );

    agent.thread("k").delete().await.unwrap();
    let last = store.calls.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last.0, "acquire");
    assert!(last.1.starts_with("host:1@e7/delete_"), "{last:?}");
    assert_eq!(last.2, ttl);
}

#[tokio::test]
async fn a_run_outside_a_thread_has_no_lease_holder() {
    let agent = Agent::builder(slow_driver(Duration::ZERO)).build().unwrap();
    let stream = agent.stream("x");
    assert_eq!(stream.lease_holder(), None);
    let (_, outcome) = drain(stream).await;
    outcome.unwrap();
}

/// A hook that notes the interrupted runs it is handed, as `key:run id`.
fn noting_hook() -> (
    Arc<Mutex<Vec<String>>>,
    agent_adaptor_core::thread::OnRecovered,
) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let noted = seen.clone();
    let hook = Arc::new(move |runs: Vec<InterruptedRun>| {
        noted
            .lock()
            .unwrap()
            .extend(runs.into_iter().map(|r| format!("{}:{}", r.key, r.run_id)));
    });
    (seen, hook)
}

/// Leave an expired lease of a dead host's run on key `k`.
async fn dead_holder(store: &dyn ThreadStore) {
    store
        .acquire_run_lease(
            "key:k",
            "dead@e1/run-1",
            Duration::from_millis(1),
            "lost turn",
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
}

/// Leave a dead holder's expired lease on `k`, run the thread's next turn
/// with an `on_recovered` hook, and check the hook was handed that run.
async fn next_turn_after_a_dead_holder(store: Arc<dyn ThreadStore>) {
    dead_holder(store.as_ref()).await;
    let (seen, hook) = noting_hook();
    let agent = Agent::builder(ScriptedDriver::resumable_reply("hi", "s1"))
        .thread_store(store)
        .on_recovered(hook)
        .build()
        .unwrap();
    agent.thread("k").run("next turn").await.unwrap();
    assert_eq!(*seen.lock().unwrap(), ["k:run-1"]);
}

/// With an `on_recovered` hook, a thread run that takes over the expired
/// lease a dead host left on its key records it in the same store step
/// (interrupted, handed to the hook) instead of taking it over silently.
#[tokio::test]
async fn a_thread_run_records_the_dead_holder_it_takes_over() {
    let store = Arc::new(MemoryStore::new());
    next_turn_after_a_dead_holder(store.clone()).await;
    let recorded = store.interrupted_runs("k").await.unwrap();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].prompt.as_deref(), Some("lost turn"));
}

/// With a store that cannot record takeovers, the hooked run recovers
/// every expired lease before it takes its own.
#[tokio::test]
async fn without_take_run_lease_the_run_recovers_expired_leases_first() {
    let store = Arc::new(Noting::default());
    next_turn_after_a_dead_holder(store.clone()).await;
    let calls: Vec<&str> = store.calls.lock().unwrap().iter().map(|c| c.0).collect();
    assert_eq!(
        calls[..3],
        ["acquire_run", "recover_expired", "acquire_run"]
    );
    assert_eq!(store.interrupted_runs("k").await.unwrap().len(), 1);
}
