//! SQLite's shared-memory file cannot take the process down: a `-shm`
//! truncated, filled with garbage or made unwritable while a worker
//! process has the store open gives that worker typed errors at worst,
//! never SIGBUS. Each proof runs in a `store_worker` child, so a SIGBUS
//! shows as the child's death by signal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use common::turns::Turns;

/// Take turns in a worker, do `sabotage` to the database's `-shm` path
/// between them, take more turns: the worker answers every turn (`OK` or
/// a typed `ERR`) and exits normally.
fn survives(sabotage: impl Fn(&Path)) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("threads.db");
    let shm = dir.path().join("threads.db-shm");
    let mut worker = Turns::spawn(&["--sqlite", db.to_str().unwrap()], "w");
    for _ in 0..3 {
        let answer = worker.ask("turn k").unwrap();
        assert!(answer.starts_with("OK "), "{answer}");
    }
    sabotage(&shm);
    for _ in 0..3 {
        match worker.ask("turn k") {
            Ok(answer) => assert!(
                answer.starts_with("OK ") || answer.starts_with("ERR "),
                "{answer}"
            ),
            Err(status) => panic!("the worker died (signal {:?}): {status}", status.signal()),
        }
    }
    let status = worker.finish();
    assert_eq!(status.signal(), None, "{status}");
    assert!(status.success(), "{status}");
}

#[test]
fn a_truncated_shm_file_is_not_a_sigbus() {
    survives(|shm| {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(shm)
            .unwrap();
        file.set_len(0).unwrap();
    });
}

#[test]
fn a_garbage_or_read_only_shm_file_is_not_a_sigbus() {
    survives(|shm| {
        std::fs::write(shm, vec![0xa5u8; 64 * 1024]).unwrap();
        let mut perms = std::fs::metadata(shm).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o444);
        std::fs::set_permissions(shm, perms).unwrap();
    });
}

/// A file an older build left in WAL mode (with its data) is switched to a
/// rollback journal at open, so no process maps a `-shm` for it any more.
#[tokio::test]
async fn a_wal_file_from_an_older_build_is_switched_at_open() {
    use agent_adaptor_store::{SqliteStore, ThreadStore};
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
    use sqlx::{Connection, SqliteConnection};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.db");
    let store = SqliteStore::open(&path).await.unwrap();
    store
        .acquire_lease("key:k", "o", std::time::Duration::from_secs(60))
        .await
        .unwrap();
    store.close().await;
    let options = SqliteConnectOptions::new()
        .filename(&path)
        .journal_mode(SqliteJournalMode::Wal);
    let mut conn = SqliteConnection::connect_with(&options).await.unwrap();
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    conn.close().await.unwrap();

    let store = SqliteStore::open(&path).await.unwrap();
    let busy = store
        .acquire_lease("key:k", "other", std::time::Duration::from_secs(60))
        .await;
    assert!(busy.is_err(), "the lease was lost in the switch: {busy:?}");
    let mut conn = SqliteConnection::connect_with(&SqliteConnectOptions::new().filename(&path))
        .await
        .unwrap();
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_ne!(mode, "wal");
    assert!(!dir.path().join("threads.db-shm").exists());
}
