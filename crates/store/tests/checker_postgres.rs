//! The shared store suite shown to fail on PostgreSQL wrapped in a store
//! that breaks one contract, and to pass the transparent wrapper (see
//! `checker_sqlite.rs`). Compiled with the `postgres-tests` feature; run
//! under `scripts/with-postgres`.
#![cfg(feature = "postgres-tests")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;

use agent_adaptor_store::{PgStore, ThreadStore};

async fn postgres() -> Arc<dyn ThreadStore> {
    Arc::new(PgStore::connect(&common::pg_url()).await.unwrap())
}

suite_checker_tests!(postgres);
