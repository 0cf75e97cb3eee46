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

/// A raw connection to the file, beside the store's pool.
async fn raw(path: &std::path::Path) -> sqlx::SqliteConnection {
    use sqlx::Connection;
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
    sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap()
}

/// Run `sql` (a trigger to create or drop) on a raw connection.
async fn exec(path: &std::path::Path, sql: &str) {
    sqlx::query(sql)
        .execute(&mut raw(path).await)
        .await
        .unwrap();
}

/// A trigger that makes SQLite abort *and roll back the whole
/// transaction by itself* (as it does on `SQLITE_FULL`) when `event` hits
/// `table` for a row matching `when`.
fn failing_trigger(name: &str, event: &str, table: &str, when: &str) -> String {
    format!(
        "CREATE TRIGGER {name} BEFORE {event} ON {table} WHEN {when} \
         BEGIN SELECT RAISE(ROLLBACK, 'injected fault'); END"
    )
}

fn injected<T: std::fmt::Debug>(r: &Result<T, StoreError>) -> bool {
    matches!(r, Err(StoreError::Backend(m)) if m.contains("injected fault"))
}

/// finalize, acquire, delete and recover_instance each fail half way
/// (SQLite rolls the transaction back under them): each is a typed error,
/// writes nothing, leaves no lease or lock behind, and the same store
/// (one pooled connection) serves the next call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_failing_half_way_leave_nothing_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.db");
    let config = SqliteConfig {
        max_connections: 1,
        ..SqliteConfig::default()
    };
    let store = SqliteStore::open_with(&path, config).await.unwrap();
    let records = "agent_adaptor_thread_records";
    let leases = "agent_adaptor_thread_leases";

    // finalize: the old record is archived, then the insert fails.
    let lease = store.acquire_lease("key:k", "a", TTL).await.unwrap();
    let first = store
        .finalize(request(&lease, &sample_record("k", 1, None)))
        .await
        .unwrap();
    exec(
        &path,
        &failing_trigger("f", "INSERT", records, "NEW.key = 'k'"),
    )
    .await;
    let failed = store
        .finalize(request(&lease, &sample_record("k", 2, Some(&first))))
        .await;
    assert!(injected(&failed), "{failed:?}");
    exec(&path, "DROP TRIGGER f").await;
    assert_eq!(
        store.resolve("k", false).await.unwrap(),
        Some(first.clone())
    );
    let lease = store.renew_lease(&lease, TTL).await.unwrap();
    store
        .finalize(request(&lease, &sample_record("k", 2, Some(&first))))
        .await
        .unwrap();
    store.release_lease(&lease).await.unwrap();

    // acquire: the lease upsert fails.
    exec(
        &path,
        &failing_trigger("a", "INSERT", leases, "NEW.owner = 'b'"),
    )
    .await;
    let failed = store.acquire_lease("key:k", "b", TTL).await;
    assert!(injected(&failed), "{failed:?}");
    exec(&path, "DROP TRIGGER a").await;
    let lease = store.acquire_lease("key:k", "c", TTL).await.unwrap();
    store.release_lease(&lease).await.unwrap();

    // delete: the lease row goes, then deleting the records fails.
    exec(
        &path,
        &failing_trigger("d", "DELETE", records, "OLD.key = 'k'"),
    )
    .await;
    let failed = store.delete("k").await;
    assert!(injected(&failed), "{failed:?}");
    exec(&path, "DROP TRIGGER d").await;
    assert_eq!(store.records("k").await.unwrap().len(), 2);
    assert_eq!(store.delete("k").await.unwrap(), 2);

    // recover_instance: the lease goes, then recording the run fails.
    store
        .acquire_run_lease("key:r", "host:1@e1/run-1", TTL, "the prompt")
        .await
        .unwrap();
    let interrupted = "agent_adaptor_interrupted_runs";
    exec(&path, &failing_trigger("r", "INSERT", interrupted, "1")).await;
    let failed = store.recover_instance("host:1", "e2").await;
    assert!(injected(&failed), "{failed:?}");
    exec(&path, "DROP TRIGGER r").await;
    let busy = store.acquire_lease("key:r", "other", TTL).await;
    assert!(matches!(busy, Err(StoreError::Busy { .. })), "{busy:?}");
    assert_eq!(store.interrupted_runs("r").await.unwrap(), vec![]);
    let runs = store.recover_instance("host:1", "e2").await.unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].prompt.as_deref(), Some("the prompt"));
    store.acquire_lease("key:r", "other", TTL).await.unwrap();
    store.integrity_check().await.unwrap();
}
