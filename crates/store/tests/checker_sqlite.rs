//! The shared store suite shown to fail: on SQLite wrapped in a store that
//! breaks one contract (loses an update, resolves a stale version, lets two
//! leases coexist), and to pass the same wrapper when it breaks nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;

use agent_adaptor_store::{SqliteStore, ThreadStore};

async fn sqlite() -> Arc<dyn ThreadStore> {
    Arc::new(SqliteStore::open_in_memory().await.unwrap())
}

suite_checker_tests!(sqlite);
