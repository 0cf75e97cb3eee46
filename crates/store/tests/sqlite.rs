//! The shared store suite against SQLite (in memory, and a file that
//! several pools share), plus what only SQLite has: its schema, the
//! archived-only fallback, integrity and multi-connection safety.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::sync::Arc;
use std::sync::OnceLock;

use agent_adaptor_store::{SqliteStore, ThreadStore};

async fn in_memory() -> Arc<dyn ThreadStore> {
    Arc::new(SqliteStore::open_in_memory().await.unwrap())
}

/// One file for the whole test binary (the cases use their own keys), kept
/// until the process exits.
fn shared_dir() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap())
}

async fn file() -> Arc<dyn ThreadStore> {
    // Each case opens its own pool on the same file, as separate processes
    // would.
    Arc::new(
        SqliteStore::open(shared_dir().path().join("threads.db"))
            .await
            .unwrap(),
    )
}

agent_adaptor_store::thread_store_suite!(sqlite_memory, in_memory);
agent_adaptor_store::thread_store_suite!(sqlite_file, file);

mod sqlite_only {
    use std::sync::Arc;
    use std::time::Duration;

    use agent_adaptor_store::suite::sample_record;
    use agent_adaptor_store::{
        FinalizeRequest, Lease, RecordStatus, SqliteStore, StoreError, ThreadStore,
    };
    use sqlx::sqlite::SqliteConnectOptions;
    use sqlx::{Connection, SqliteConnection};

    const TTL: Duration = Duration::from_secs(60);

    async fn fresh() -> (tempfile::TempDir, std::path::PathBuf, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("threads.db");
        let store = SqliteStore::open(&path).await.unwrap();
        (dir, path, store)
    }

    /// A raw connection to the file, bypassing the store.
    async fn raw(path: &std::path::Path) -> SqliteConnection {
        SqliteConnection::connect_with(&SqliteConnectOptions::new().filename(path))
            .await
            .unwrap()
    }

    fn finalize(lease: &Lease, record: &agent_adaptor_store::ThreadRecord) -> FinalizeRequest {
        FinalizeRequest {
            lease: lease.clone(),
            record: record.clone(),
            require_key_absent: false,
        }
    }

    #[tokio::test]
    async fn the_schema_itself_allows_one_active_record_per_key_and_only_json_params() {
        let (_dir, path, store) = fresh().await;
        let lease = store.acquire_lease("key:k", "o", TTL).await.unwrap();
        let r1 = store
            .finalize(finalize(&lease, &sample_record("k", 1, None)))
            .await
            .unwrap();
        let mut conn = raw(&path).await;
        let insert = |id: &'static str, status: &'static str, params: &'static str| {
            sqlx::query(
                "INSERT INTO agent_adaptor_thread_records (id, key, status, driver_type, \
                 fingerprint, codec, params, previous_id, created_at, updated_at) \
                 VALUES (?1, 'k', ?2, 'd', 'f', 'c', ?3, NULL, 0, 0)",
            )
            .bind(id)
            .bind(status)
            .bind(params)
        };
        let second_active = insert("x1", "active", "{}").execute(&mut conn).await;
        assert!(second_active.is_err(), "{second_active:?}");
        let half_written = insert("x2", "archived", "{\"resume_id\":")
            .execute(&mut conn)
            .await;
        assert!(half_written.is_err(), "{half_written:?}");
        let not_an_object = insert("x3", "archived", "[1]").execute(&mut conn).await;
        assert!(not_an_object.is_err(), "{not_an_object:?}");
        let bad_status = insert("x4", "zombie", "{}").execute(&mut conn).await;
        assert!(bad_status.is_err(), "{bad_status:?}");
        assert_eq!(store.records("k").await.unwrap(), vec![r1]);
        store.integrity_check().await.unwrap();
    }

    #[tokio::test]
    async fn resolve_falls_back_to_the_newest_archived_record_only_when_asked() {
        let (_dir, path, store) = fresh().await;
        let lease = store.acquire_lease("key:k", "o", TTL).await.unwrap();
        let r1 = store
            .finalize(finalize(&lease, &sample_record("k", 1, None)))
            .await
            .unwrap();
        let r2 = store
            .finalize(finalize(&lease, &sample_record("k", 2, Some(&r1))))
            .await
            .unwrap();
        let records = store.records("k").await.unwrap();
        assert_eq!(
            records.iter().map(|r| r.status).collect::<Vec<_>>(),
            [RecordStatus::Archived, RecordStatus::Active]
        );
        // Archive the key's active record behind the store's back.
        sqlx::query("UPDATE agent_adaptor_thread_records SET status = 'archived'")
            .execute(&mut raw(&path).await)
            .await
            .unwrap();
        assert_eq!(store.resolve("k", false).await.unwrap(), None);
        let newest = store.resolve("k", true).await.unwrap().unwrap();
        assert_eq!(newest.id, r2.id);
        assert_eq!(newest.status, RecordStatus::Archived);
    }

    #[tokio::test]
    async fn a_record_that_does_not_decode_is_an_error_never_a_partial_record() {
        let (_dir, path, store) = fresh().await;
        let lease = store.acquire_lease("key:k", "o", TTL).await.unwrap();
        store
            .finalize(finalize(&lease, &sample_record("k", 1, None)))
            .await
            .unwrap();
        sqlx::query("UPDATE agent_adaptor_thread_records SET params = '{\"values\": 5}'")
            .execute(&mut raw(&path).await)
            .await
            .unwrap();
        let got = store.resolve("k", false).await;
        assert!(matches!(got, Err(StoreError::Backend(_))), "{got:?}");
    }

    #[tokio::test]
    async fn finalize_checks_the_owner_as_well_as_the_token() {
        let (_dir, _path, store) = fresh().await;
        let lease = store.acquire_lease("key:k", "o", TTL).await.unwrap();
        let impostor = Lease {
            owner: "someone-else".into(),
            ..lease.clone()
        };
        let out = store
            .finalize(finalize(&impostor, &sample_record("k", 1, None)))
            .await;
        assert!(matches!(out, Err(StoreError::LeaseLost { .. })), "{out:?}");
        let renew = store.renew_lease(&impostor, TTL).await;
        assert!(
            matches!(renew, Err(StoreError::LeaseLost { .. })),
            "{renew:?}"
        );
        assert!(store.records("k").await.unwrap().is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn separate_pools_on_one_file_share_leases_and_records() {
        // Eight stores on one file stand in for eight processes.
        let (_dir, path, first) = fresh().await;
        let mut stores = vec![Arc::new(first)];
        for _ in 0..7 {
            stores.push(Arc::new(SqliteStore::open(&path).await.unwrap()));
        }
        let barrier = Arc::new(tokio::sync::Barrier::new(stores.len()));
        let tasks: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (s, barrier) = (s.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    let lease = s.acquire_lease("key:k", &format!("p{i}"), TTL).await?;
                    s.finalize(finalize(&lease, &sample_record("k", 1, None)))
                        .await
                })
            })
            .collect();
        let mut saved = Vec::new();
        for t in tasks {
            match t.await.unwrap() {
                Ok(r) => saved.push(r),
                Err(StoreError::Busy { .. }) => {}
                Err(e) => panic!("{e:?}"),
            }
        }
        assert_eq!(saved.len(), 1, "exactly one process wins the lease");
        for s in &stores {
            assert_eq!(s.resolve("k", false).await.unwrap().as_ref(), saved.first());
        }
    }

    #[tokio::test]
    async fn the_file_has_a_rollback_journal_and_reopening_keeps_data_and_schema() {
        let (_dir, path, store) = fresh().await;
        let lease = store.acquire_lease("key:k", "o", TTL).await.unwrap();
        let r1 = store
            .finalize(finalize(&lease, &sample_record("k", 1, None)))
            .await
            .unwrap();
        store.close().await;
        let reopened = SqliteStore::open(&path).await.unwrap();
        assert_eq!(reopened.resolve("k", false).await.unwrap(), Some(r1));
        assert_eq!(reopened.path(), Some(path.as_path()));
        let mut conn = raw(&path).await;
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            mode, "delete",
            "not WAL (a raw connection has its own rollback mode)"
        );
        let versions: Vec<i64> =
            sqlx::query_scalar("SELECT version FROM agent_adaptor_schema_migrations")
                .fetch_all(&mut conn)
                .await
                .unwrap();
        assert_eq!(versions, [1, 2, 3, 4, 5], "migrations run once");
        // The lease survived the reopen too: another owner is busy.
        let busy = reopened.acquire_lease("key:k", "other", TTL).await;
        assert!(matches!(busy, Err(StoreError::Busy { .. })), "{busy:?}");
    }

    #[tokio::test]
    async fn a_newer_schema_is_refused_and_open_errors_are_typed() {
        let (_dir, path, store) = fresh().await;
        store.close().await;
        sqlx::query("INSERT INTO agent_adaptor_schema_migrations VALUES (99, 0)")
            .execute(&mut raw(&path).await)
            .await
            .unwrap();
        let newer = SqliteStore::open(&path).await;
        assert!(
            matches!(&newer, Err(StoreError::Backend(m)) if m.contains("newer")),
            "{newer:?}"
        );
        let nowhere = SqliteStore::open("/proc/no-such-dir/threads.db").await;
        assert!(
            matches!(nowhere, Err(StoreError::Backend(_))),
            "{nowhere:?}"
        );
    }

    #[tokio::test]
    async fn an_unbounded_ttl_is_clamped_not_an_overflow() {
        let (_dir, _path, store) = fresh().await;
        let lease = store
            .acquire_lease("key:k", "a", Duration::MAX)
            .await
            .unwrap();
        assert!(lease.expires_at > chrono::Utc::now() + chrono::Duration::days(365 * 50));
        let renewed = store.renew_lease(&lease, Duration::MAX).await.unwrap();
        assert!(renewed.expires_at >= lease.expires_at);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn open_can_be_spawned_and_concurrent_opens_of_a_new_file_agree() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        let opens: Vec<_> = (0..6)
            .map(|_| tokio::spawn(SqliteStore::open(path.clone())))
            .collect();
        for open in opens {
            open.await.unwrap().unwrap();
        }
        let versions: Vec<i64> =
            sqlx::query_scalar("SELECT version FROM agent_adaptor_schema_migrations")
                .fetch_all(&mut raw(&path).await)
                .await
                .unwrap();
        assert_eq!(versions, [1, 2, 3, 4, 5]);
    }
}

/// A file at schema v1 (an older build) with a run's lease in it is
/// upgraded at open; the old lease (no prompt, no start time) is still
/// held, and `recover_instance` records it with the recovery time as its
/// start.
#[tokio::test]
async fn a_v1_file_is_upgraded_and_its_old_leases_recover() {
    use agent_adaptor_store::StoreError;
    use sqlx::sqlite::SqliteConnectOptions;
    use sqlx::{Connection, SqliteConnection};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.db");
    let options = SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true);
    let mut conn = SqliteConnection::connect_with(&options).await.unwrap();
    let v1 = include_str!("../migrations/sqlite/0001_threads.sql");
    let setup = [
        "CREATE TABLE agent_adaptor_schema_migrations \
         (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT",
        "INSERT INTO agent_adaptor_schema_migrations VALUES (1, 0)",
        "INSERT INTO agent_adaptor_thread_leases VALUES \
         ('key:old', 'host:9@e1/run-1', 'lease_x', 9223372036854775807)",
    ];
    for statement in v1.split(';').filter(|s| s.contains("CREATE")) {
        sqlx::query(statement).execute(&mut conn).await.unwrap();
    }
    for statement in setup {
        sqlx::query(statement).execute(&mut conn).await.unwrap();
    }
    conn.close().await.unwrap();

    let store = SqliteStore::open(&path).await.unwrap();
    let ttl = std::time::Duration::from_secs(60);
    let busy = store.acquire_lease("key:old", "other", ttl).await;
    assert!(matches!(busy, Err(StoreError::Busy { .. })), "{busy:?}");
    let runs = store.recover_instance("host:9", "e2").await.unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(
        (runs[0].key.as_str(), runs[0].prompt.as_deref()),
        ("old", None)
    );
    assert_eq!(runs[0].started_at, runs[0].interrupted_at);
    store.acquire_lease("key:old", "other", ttl).await.unwrap();
}
