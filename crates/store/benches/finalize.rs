//! Finalize throughput of the stores: one finalize = lease check, archive
//! the key's active record, insert the new one, commit.
//!
//! ```text
//! cargo bench -p agent-adaptor-store --bench finalize                         # SQLite, memory
//! bash scripts/with-postgres cargo bench -p agent-adaptor-store --bench finalize  # + PostgreSQL
//! ```
//!
//! `sequential` benches time one finalize after another on one key (the
//! latency a single thread sees); `parallel_8` benches run 8 finalizes at
//! once on 8 keys (throughput with concurrent writers); divan reports
//! items/s. Without PG_TEST_URL the PostgreSQL benches print a note and
//! measure nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench fails loudly

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_store::suite::sample_record;
use agent_adaptor_store::{
    Durability, FinalizeRequest, Lease, MemoryStore, PgStore, SqliteConfig, SqliteStore,
    ThreadStore,
};
use divan::Bencher;
use divan::counter::ItemsCount;
use futures::future::join_all;
use tokio::runtime::Runtime;

fn main() {
    divan::main();
}

const PARALLEL: usize = 8;

struct Fixture {
    runtime: Runtime,
    store: Arc<dyn ThreadStore>,
    leases: Vec<(String, Lease)>,
    _dir: Option<tempfile::TempDir>,
}

fn fixture(open: impl AsyncFnOnce(&std::path::Path) -> Arc<dyn ThreadStore>) -> Fixture {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = runtime.block_on(open(&dir.path().join("bench.db")));
    let run = format!("{:016x}", rand::random::<u64>());
    let leases = (0..PARALLEL)
        .map(|i| {
            let key = format!("bench/{run}/{i}");
            let lease = runtime
                .block_on(store.acquire_lease(
                    &format!("key:{key}"),
                    "bench",
                    Duration::from_secs(3600),
                ))
                .unwrap();
            (key, lease)
        })
        .collect();
    Fixture {
        runtime,
        store,
        leases,
        _dir: Some(dir),
    }
}

async fn finalize(store: &dyn ThreadStore, key: &str, lease: &Lease) {
    let request = FinalizeRequest {
        lease: lease.clone(),
        record: sample_record(key, 1, None),
        require_key_absent: false,
    };
    store.finalize(request).await.unwrap();
}

fn sequential(bencher: Bencher, fx: &Fixture) {
    let (key, lease) = &fx.leases[0];
    bencher
        .counter(ItemsCount::new(1usize))
        .bench_local(|| fx.runtime.block_on(finalize(&*fx.store, key, lease)));
}

fn parallel(bencher: Bencher, fx: &Fixture) {
    bencher.counter(ItemsCount::new(PARALLEL)).bench_local(|| {
        fx.runtime.block_on(join_all(
            fx.leases
                .iter()
                .map(|(key, lease)| finalize(&*fx.store, key, lease)),
        ))
    });
}

async fn sqlite(path: &std::path::Path, durability: Durability) -> Arc<dyn ThreadStore> {
    let config = SqliteConfig {
        durability,
        ..SqliteConfig::default()
    };
    Arc::new(SqliteStore::open_with(path, config).await.unwrap())
}

async fn postgres() -> Option<Arc<dyn ThreadStore>> {
    let url = std::env::var("PG_TEST_URL").ok()?;
    Some(Arc::new(PgStore::connect(&url).await.unwrap()))
}

/// SQLite file, `synchronous = FULL` (the default).
#[divan::bench(sample_count = 30, sample_size = 10)]
fn sqlite_full_sequential(b: Bencher) {
    sequential(b, &fixture(async |p| sqlite(p, Durability::Full).await));
}

/// SQLite file, `synchronous = FULL`, 8 writers.
#[divan::bench(sample_count = 30, sample_size = 2)]
fn sqlite_full_parallel_8(b: Bencher) {
    parallel(b, &fixture(async |p| sqlite(p, Durability::Full).await));
}

/// SQLite file, `synchronous = NORMAL`.
#[divan::bench(sample_count = 30, sample_size = 10)]
fn sqlite_normal_sequential(b: Bencher) {
    sequential(b, &fixture(async |p| sqlite(p, Durability::Normal).await));
}

/// SQLite in memory (no I/O: the cost of the SQL and the pool).
#[divan::bench(sample_count = 30, sample_size = 10)]
fn sqlite_memory_sequential(b: Bencher) {
    sequential(
        b,
        &fixture(async |_| {
            let store: Arc<dyn ThreadStore> =
                Arc::new(SqliteStore::open_in_memory().await.unwrap());
            store
        }),
    );
}

/// Core's in-memory reference store (baseline).
#[divan::bench(sample_count = 30, sample_size = 10)]
fn memory_store_sequential(b: Bencher) {
    sequential(
        b,
        &fixture(async |_| {
            let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
            store
        }),
    );
}

/// PostgreSQL at PG_TEST_URL, one writer.
#[divan::bench(sample_count = 30, sample_size = 10)]
fn postgres_sequential(b: Bencher) {
    let Some(fx) = pg_fixture() else { return };
    sequential(b, &fx);
}

/// PostgreSQL at PG_TEST_URL, 8 writers on 8 keys.
#[divan::bench(sample_count = 30, sample_size = 4)]
fn postgres_parallel_8(b: Bencher) {
    let Some(fx) = pg_fixture() else { return };
    parallel(b, &fx);
}

fn pg_fixture() -> Option<Fixture> {
    if std::env::var_os("PG_TEST_URL").is_none() {
        eprintln!("PG_TEST_URL is unset: run under scripts/with-postgres to bench PostgreSQL");
        return None;
    }
    Some(fixture(async |_| postgres().await.unwrap()))
}
