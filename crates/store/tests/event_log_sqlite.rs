//! The event log on a SQLite file: 1,000 runs of 50 events, and a row that
//! does not decode.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::sync::Arc;

use agent_adaptor_core::thread::EventQuery;
use agent_adaptor_store::suite::{event_log_many_runs, sample_run};
use agent_adaptor_store::{SqliteStore, StoreError, ThreadStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_runs_of_fifty_events() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("log.db")).await.unwrap();
    event_log_many_runs(Arc::new(store), 1_000, 50)
        .await
        .unwrap();
}

#[tokio::test]
async fn an_undecodable_row_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.db");
    let store = SqliteStore::open(&path).await.unwrap();
    store
        .append_events("k", "r1", &sample_run("r1", 3))
        .await
        .unwrap();
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    sqlx::query(
        "UPDATE agent_adaptor_events SET event = '{\"type\":\"text_delta\"' WHERE cursor = 2",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    let err = store.events("k", &EventQuery::since(0)).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Corrupt(ref m) if m.contains("event 2")),
        "{err:?}"
    );
    // The rows before it are still readable on their own.
    let first = store.events("k", &EventQuery::range(1, 2)).await.unwrap();
    assert_eq!(first.events.len(), 1);
}
