//! A worker process SIGKILLed while it holds a run lease: the key stays
//! busy (the lease's TTL is an hour) until another process recovers the
//! dead incarnation of the instance, which frees the key at once and
//! returns the run with its prompt.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use agent_adaptor_store::{StoreError, ThreadStore};
use common::turns::Turns;

const PROMPT: &str = "refactor the parser, keep \"quotes\" — ünï";

/// `backend` (worker arguments) and `store` (this process's view of the
/// same database): kill a holder, recover, check.
async fn killed_holder_is_recovered(backend: &[&str], store: &dyn ThreadStore, tag: &str) {
    let instance = format!("127.0.0.1:{tag}");
    let key = format!("recover-process/{tag}");
    let target = format!("key:{key}");
    let mut worker = Turns::spawn(backend, &format!("{instance}@epoch-1/run-7"));
    let answer = worker.ask(&format!("hold {key} {PROMPT}")).unwrap();
    assert_eq!(answer, "HELD");
    let status = worker.kill();
    assert_eq!(status.signal(), Some(9), "{status}");

    let ttl = Duration::from_secs(60);
    let busy = store.acquire_lease(&target, "next", ttl).await;
    assert!(matches!(busy, Err(StoreError::Busy { .. })), "{busy:?}");
    let runs = store.recover_instance(&instance, "epoch-2").await.unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(
        (
            runs[0].key.as_str(),
            runs[0].run_id.as_str(),
            runs[0].prompt.as_deref()
        ),
        (key.as_str(), "run-7", Some(PROMPT))
    );
    let lease = store.acquire_lease(&target, "next", ttl).await.unwrap();
    assert_eq!(store.interrupted_runs(&key).await.unwrap(), runs);
    store.release_lease(&lease).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_killed_holders_lease_is_recovered_by_the_next_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.db");
    let store = agent_adaptor_store::SqliteStore::open(&path).await.unwrap();
    let backend = ["--sqlite", path.to_str().unwrap()];
    killed_holder_is_recovered(&backend, &store, "sqlite").await;
}

#[cfg(feature = "postgres-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_killed_holders_lease_is_recovered_by_the_next_process() {
    let url = common::pg_url();
    let store = agent_adaptor_store::PgStore::connect(&url).await.unwrap();
    let tag = format!("pg-{:016x}", common::rand_u64());
    killed_holder_is_recovered(&["--pg", &url], &store, &tag).await;
}
