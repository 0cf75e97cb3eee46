//! Crash safety on SQLite: 50 worker processes, each holding the key's
//! lease, are killed with SIGKILL mid-finalize; after every kill the file
//! passes `PRAGMA integrity_check`, the key's records form one whole chain
//! (≤ 1 active, none torn, every acknowledged finalize present, nothing
//! from nowhere) and the dead worker's lease is taken over on expiry.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::time::Duration;

use agent_adaptor_store::suite::sample_record;
use agent_adaptor_store::{FinalizeRequest, SqliteStore, ThreadStore};
use common::{check_chain, crash_loop};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_finalize_50_times_leaves_a_consistent_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let backend = ["--sqlite".to_owned(), path.display().to_string()];
    let ttl = Duration::from_millis(200);
    let stats = crash_loop(&store, &backend, "crash/k", 50, ttl)
        .await
        .unwrap();
    eprintln!("sqlite crash loop: {stats:?}");
    assert_eq!(stats.kills, 50);
    // A worker killed at its k-th BEGIN (k = 1..=3, uniformly) had
    // acknowledged k − 1 finalizes: 50 on average over 50 workers, and 25
    // or fewer about once in 10⁵ loops.
    assert!(
        stats.acknowledged >= 25,
        "the workers finalized between their kills: {stats:?}"
    );
    assert!(
        stats.lease_still_held >= 30,
        "a killed worker's lease outlives it until expiry: {stats:?}"
    );
    assert!(
        stats.in_flight_committed + stats.in_flight_rolled_back >= 25,
        "most kills landed inside a finalize call: {stats:?}"
    );
    assert!(
        stats.in_flight_rolled_back > 0,
        "some kills landed before the in-flight finalize committed: {stats:?}"
    );
    // The store is still writable and the chain continues.
    let lease = store
        .acquire_lease("key:crash/k", "after", ttl * 10)
        .await
        .unwrap();
    let current = store.resolve("crash/k", false).await.unwrap();
    let next = sample_record("crash/k", stats.turns + 1, current.as_ref());
    store
        .finalize(FinalizeRequest {
            lease,
            record: next,
            require_key_absent: false,
        })
        .await
        .unwrap();
    let records = store.records("crash/k").await.unwrap();
    assert_eq!(check_chain("crash/k", &records), Ok(stats.turns + 1));
}
