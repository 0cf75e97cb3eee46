//! PostgreSQL notifications survive a lost `LISTEN` connection: the store
//! reconnects (with backoff) and later notifications arrive again. Its own
//! test binary: it kills every listening backend, which would make other
//! tests' listeners miss messages.
#![cfg(feature = "postgres-tests")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::time::Duration;

use agent_adaptor_core::thread::durable::{Notification, TOPIC_APPROVAL};
use agent_adaptor_store::{PgStore, ThreadStore};
use sqlx::{Connection, PgConnection};
use tokio::sync::broadcast::error::RecvError;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_whose_connection_is_killed_reconnects_and_receives_again() {
    let url = std::env::var("PG_TEST_URL").expect("PG_TEST_URL (run under scripts/with-postgres)");
    let store = PgStore::connect(&url).await.unwrap();
    let mut listener = store.listen().await.unwrap();
    let mut admin = PgConnection::connect(&url).await.unwrap();
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()",
    )
    .fetch_all(&mut admin)
    .await
    .unwrap();
    assert!(killed.iter().any(|k| *k), "no listening backend to kill");

    // Notify until one gets through (bounded: 30 s): those sent while the
    // store reconnects are missed, as the contract allows.
    let mut received = None;
    'outer: for i in 0..300 {
        let sent = Notification::new(TOPIC_APPROVAL, format!("after-kill-{i}"));
        store.notify(&sent).await.unwrap();
        let wait = tokio::time::timeout(Duration::from_millis(100), listener.recv()).await;
        match wait {
            Ok(Ok(n)) => {
                received = Some(n);
                break 'outer;
            }
            Ok(Err(RecvError::Lagged(_))) | Err(_) => continue,
            Ok(Err(RecvError::Closed)) => panic!("the listener closed"),
        }
    }
    let got = received.expect("no notification after the connection was killed");
    assert!(got.id.starts_with("after-kill-"), "{got:?}");
}
