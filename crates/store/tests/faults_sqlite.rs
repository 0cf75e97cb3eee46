//! SQLite under faults: a full database, and what a write that fails half
//! way leaves behind.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::time::Duration;

use agent_adaptor_store::suite::sample_record;
use agent_adaptor_store::{
    FinalizeRequest, Lease, SqliteConfig, SqliteStore, StoreError, ThreadRecord, ThreadStore,
};

const TTL: Duration = Duration::from_secs(60);

fn request(lease: &Lease, record: &ThreadRecord) -> FinalizeRequest {
    FinalizeRequest {
        lease: lease.clone(),
        record: record.clone(),
        require_key_absent: false,
    }
}

fn is_full(e: &StoreError) -> bool {
    matches!(e, StoreError::Backend(m) if m.contains("full"))
}

/// Finalize ever bigger records on `key` until the capped file is full;
/// returns the typed error that said so.
async fn fill(store: &SqliteStore, lease: &Lease, key: &str) -> StoreError {
    let mut previous = None;
    for turn in 1..=500 {
        let mut record = sample_record(key, turn, previous.as_ref());
        record
            .params
            .values
            .insert("payload".into(), "x".repeat(16 * 1024));
        match store.finalize(request(lease, &record)).await {
            Ok(saved) => previous = Some(saved),
            Err(e) => return e,
        }
    }
    panic!("the capped file never filled up");
}

/// One pooled connection, so the connection that saw the failure is the
/// one every later call gets (with several, later calls would fail only
/// now and then).
async fn capped(path: &std::path::Path) -> SqliteStore {
    let config = SqliteConfig {
        max_connections: 1,
        max_page_count: Some(64),
        ..SqliteConfig::default()
    };
    SqliteStore::open_with(path, config).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_database_fails_writes_then_recovers_without_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let store = capped(&dir.path().join("threads.db")).await;
    let lease = store.acquire_lease("key:filler", "o", TTL).await.unwrap();
    let failure = fill(&store, &lease, "filler").await;
    assert!(is_full(&failure), "{failure:?}");

    // Room is made: the filler thread goes (its lease first).
    store.release_lease(&lease).await.unwrap();
    assert!(store.delete("filler").await.unwrap() > 0);

    // The same store serves later runs on other threads.
    let lease = store.acquire_lease("key:after", "o", TTL).await.unwrap();
    let saved = store
        .finalize(request(&lease, &sample_record("after", 1, None)))
        .await
        .unwrap();
    store.release_lease(&lease).await.unwrap();
    let listed = store.list(10).await.unwrap();
    assert_eq!(listed, vec![saved]);
    store.integrity_check().await.unwrap();
}
