//! Two OS processes race 1,000 turns over 20 keys in one SQLite file: no
//! turn lost (the per-key chains sum to 1,000) and no turn run twice on one
//! state (every chain is linear).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use agent_adaptor_store::SqliteStore;
use common::race;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_race_1000_turns_over_20_keys_without_loss_or_double_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let backend = ["--sqlite".to_owned(), path.display().to_string()];
    let stats = race(&store, &backend, "race", 2, 500, 20).await.unwrap();
    eprintln!("sqlite race: {stats:?}");
    assert_eq!(stats.turns_found, 1000, "{stats:?}");
}
