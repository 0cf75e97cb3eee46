//! The event log on PostgreSQL: 1,000 runs of 50 events, and a row that
//! does not decode. Compiled with the `postgres-tests` feature (run under
//! scripts/with-postgres).
#![cfg(feature = "postgres-tests")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;

use agent_adaptor_core::thread::EventQuery;
use agent_adaptor_store::suite::{event_log_many_runs, sample_run};
use agent_adaptor_store::{PgStore, StoreError, ThreadStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_runs_of_fifty_events_postgres() {
    let store = PgStore::connect(&common::pg_url()).await.unwrap();
    event_log_many_runs(Arc::new(store), 1_000, 50)
        .await
        .unwrap();
}

#[tokio::test]
async fn an_undecodable_row_is_corrupt_postgres() {
    let url = common::pg_url();
    let store = PgStore::connect(&url).await.unwrap();
    let key = format!("corrupt/{:016x}", rand::random::<u64>());
    store
        .append_events(&key, "r1", &sample_run("r1", 3))
        .await
        .unwrap();
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    sqlx::query("UPDATE agent_adaptor_events SET event = '[1' WHERE key = $1 AND cursor = 2")
        .bind(&key)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let err = store.events(&key, &EventQuery::since(0)).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Corrupt(ref m) if m.contains("event 2")),
        "{err:?}"
    );
}
