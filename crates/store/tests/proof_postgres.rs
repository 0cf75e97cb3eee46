//! PostgreSQL under real processes: (a) 50 workers killed with SIGKILL
//! mid-finalize leave a consistent store; (b) two OS processes race 1,000
//! turns over 20 keys: no turn lost (the per-key chains sum to 1,000) and
//! no turn run twice on one state (every chain is linear).
//!
//! Compiled with the `postgres-tests` feature; needs PG_TEST_URL (fails
//! without it). See tests/postgres.rs.
#![cfg(feature = "postgres-tests")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::time::Duration;

use agent_adaptor_store::PgStore;
use common::{crash_loop, pg_url, race, rand_u64};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_finalize_50_times_leaves_a_consistent_store() {
    let store = PgStore::connect(&pg_url()).await.unwrap();
    let key = format!("crash/{:016x}", rand_u64());
    let backend = ["--pg".to_owned(), pg_url()];
    let stats = crash_loop(&store, &backend, &key, 50, Duration::from_millis(200))
        .await
        .unwrap();
    eprintln!("postgres crash loop: {stats:?}");
    assert_eq!(stats.kills, 50);
    assert!(stats.lease_still_held >= 30, "{stats:?}");
    assert!(
        stats.in_flight_committed + stats.in_flight_rolled_back >= 25,
        "most kills landed inside a finalize call: {stats:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_race_1000_turns_over_20_keys_without_loss_or_double_runs() {
    let store = PgStore::connect(&pg_url()).await.unwrap();
    let prefix = format!("race/{:016x}", rand_u64());
    let backend = ["--pg".to_owned(), pg_url()];
    let stats = race(&store, &backend, &prefix, 2, 500, 20).await.unwrap();
    eprintln!("postgres race: {stats:?}");
    assert_eq!(stats.turns_found, 1000, "{stats:?}");
}
