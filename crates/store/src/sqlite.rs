//! [`SqliteStore`]: the embedded default store, one SQLite file with a
//! rollback journal.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::driver::async_trait;
use agent_adaptor_core::thread::durable::{
    AnswerRefused, ApprovalRow, NewApproval, NewTask, Notification, Notifications, PushConfigRow,
    TaskChange, TaskPage, TaskQuery, TaskRow, TaskUpdate,
};
use agent_adaptor_core::thread::store::{
    InterruptedRun, TakenLease, check_tool_name, recovery_prefixes,
};
use agent_adaptor_core::thread::{
    EventPage, EventQuery, FinalizeRequest, Lease, NewEvent, RecordStatus, Retention, StoreError,
    ThreadPolicy, ThreadRecord, ThreadStore,
};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::{Row, Sqlite, Transaction};

use crate::durable::{Durable, Local};
use crate::error::{backend, backend_msg, settle};
use crate::record::{
    decode_params, encode_params, new_token, parse_status, sql_statements, ttl_micros,
};
use crate::recovery::Stale;

/// The embedded migrations, in order: (version, SQL).
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../migrations/sqlite/0001_threads.sql")),
    (
        2,
        include_str!("../migrations/sqlite/0002_interrupted_runs.sql"),
    ),
    (3, include_str!("../migrations/sqlite/0003_event_log.sql")),
    (
        4,
        include_str!("../migrations/sqlite/0004_thread_policy.sql"),
    ),
    (5, include_str!("../migrations/sqlite/0005_durable.sql")),
];

pub(crate) const RECORD_COLUMNS: &str = "id, key, status, driver_type, fingerprint, codec, params, \
                              previous_id, created_at, updated_at";

/// How hard SQLite works to keep a committed finalize across a power loss.
///
/// Both settings keep the file consistent when a *process* crashes (the
/// rollback journal undoes a half-written transaction); they differ only
/// on power loss or an operating-system crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `synchronous = FULL`: the journal and the file are synced on every
    /// commit; a committed finalize survives a power loss. The default.
    #[default]
    Full,
    /// `synchronous = NORMAL`: fewer syncs per commit; the last
    /// transactions before a power loss may be lost, and SQLite documents a
    /// very small chance of a corrupted file after a power loss at the
    /// wrong moment on older file systems (with a rollback journal).
    Normal,
}

/// How [`SqliteStore::open_with`] opens a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteConfig {
    /// Sync policy (default [`Durability::Full`]).
    pub durability: Durability,
    /// Connections in this process's pool (default 4, at least 1).
    pub max_connections: u32,
    /// How long a statement waits for another connection's or process's
    /// write lock before failing (default 5 s).
    pub busy_timeout: Duration,
    /// Cap on the file's size in database pages (SQLite's `max_page_count`,
    /// set on every connection; pages are 4 KiB unless the file says
    /// otherwise). A write that would grow the file past it fails with a
    /// `Backend` error ("database or disk is full"), exactly as a full disk
    /// does; the store keeps working once room is made. Default: none.
    pub max_page_count: Option<u32>,
}

impl Default for SqliteConfig {
    fn default() -> Self {
        SqliteConfig {
            durability: Durability::Full,
            max_connections: 4,
            busy_timeout: Duration::from_secs(5),
            max_page_count: None,
        }
    }
}

/// A [`ThreadStore`] in one SQLite file (rollback journal), safe to share between
/// several processes: every lease check and finalize runs in a
/// `BEGIN IMMEDIATE` transaction.
///
/// Schema (`migrations/sqlite/`): `agent_adaptor_thread_records` (one row
/// per record; a partial unique index allows one active record per key),
/// `agent_adaptor_thread_leases` (target, owner, token, expiry in UTC
/// microseconds) and `agent_adaptor_schema_migrations`.
#[derive(Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    location: Option<PathBuf>,
    /// Queues this process's writers in front of `BEGIN IMMEDIATE`. Not a
    /// correctness device (the database lock is, across processes too): it
    /// spares our own connections SQLite's busy-handler sleeps, which cost
    /// most of the throughput with several concurrent writers.
    write_gate: Arc<tokio::sync::Mutex<()>>,
    /// Notifications to this store value's listeners (SQLite is
    /// single-host: they stay in the process).
    notifications: Local,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("SqliteStore");
        match &self.location {
            Some(path) => d.field("path", path),
            None => d.field("path", &":memory:"),
        };
        d.finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Open (creating if missing) the store at `path` with the default
    /// [`SqliteConfig`], and apply pending migrations.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteConfig::default()).await
    }

    /// Open the store at `path` with `config`, and apply pending migrations.
    pub async fn open_with(
        path: impl AsRef<Path>,
        config: SqliteConfig,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let synchronous = match config.durability {
            Durability::Full => SqliteSynchronous::Full,
            Durability::Normal => SqliteSynchronous::Normal,
        };
        // A rollback journal, kept between transactions and truncated
        // (TRUNCATE: about twice the commit rate of DELETE, which creates
        // and unlinks it each time), set on every connection; see
        // `use_rollback_journal` for why not WAL. No memory-mapped I/O
        // either (`mmap_size = 0`, SQLite's default, made explicit): a file
        // truncated under a mapping is a SIGBUS too.
        let mut options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .synchronous(synchronous)
            .busy_timeout(config.busy_timeout)
            .journal_mode(SqliteJournalMode::Truncate)
            .pragma("mmap_size", "0");
        if let Some(pages) = config.max_page_count {
            options = options.pragma("max_page_count", pages.to_string());
        }
        let pool = crate::pool::discard_dirty_connections(SqlitePoolOptions::new())
            .max_connections(config.max_connections.max(1))
            .connect_with(options)
            .await
            .map_err(|e| backend("sqlite open", &e))?;
        let store = SqliteStore {
            pool,
            location: Some(path),
            write_gate: Arc::default(),
            notifications: Local::default(),
        };
        store.use_rollback_journal(config.busy_timeout).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// A private in-memory database (one connection, gone when dropped):
    /// for tests and throwaway hosts.
    pub async fn open_in_memory() -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::new().in_memory(true);
        // No discarding of dirty connections here: the one connection *is*
        // the database.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(|e| backend("sqlite open", &e))?;
        let store = SqliteStore {
            pool,
            location: None,
            write_gate: Arc::default(),
            notifications: Local::default(),
        };
        store.migrate().await?;
        Ok(store)
    }

    /// The file this store was opened on (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.location.as_deref()
    }

    /// Every record of `key`, active and archived, oldest first (for
    /// audits and tests). A record that does not decode is an error.
    pub async fn records(&self, key: &str) -> Result<Vec<ThreadRecord>, StoreError> {
        let sql = format!(
            "SELECT {RECORD_COLUMNS} FROM agent_adaptor_thread_records WHERE key = ?1 ORDER BY seq"
        );
        let rows = sqlx::query(&sql)
            .bind(key)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| backend("sqlite records", &e))?;
        rows.iter().map(decode).collect()
    }

    /// Run SQLite's `PRAGMA integrity_check`; `Ok` when the file is sound.
    pub async fn integrity_check(&self) -> Result<(), StoreError> {
        let rows: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_all(&self.pool)
            .await
            .map_err(|e| backend("sqlite integrity_check", &e))?;
        if rows.len() == 1 && rows[0] == "ok" {
            Ok(())
        } else {
            Err(backend_msg("sqlite integrity_check", rows.join("; ")))
        }
    }

    /// Close the pool, waiting for connections to finish.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Take `target`'s lease for `owner` (see `acquire_run_lease`): one
    /// upsert that succeeds on a free, expired or own lease and keeps the
    /// run's prompt and start time with it.
    /// Take a lease; with `record_takeover`, an expired lease on `target`
    /// is recovered (recorded as interrupted) in the same transaction.
    async fn acquire(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
        prompt: Option<&str>,
        record_takeover: bool,
    ) -> Result<TakenLease, StoreError> {
        const OP: &str = "sqlite acquire_lease";
        let _gate = self.write_gate.lock().await;
        let mut tx = self.begin(OP).await?;
        let now = now_micros();
        let outcome = async {
            let mut displaced = if record_takeover {
                crate::recovery::sqlite_recover_in(&mut tx, Stale::Target(target), now).await?
            } else {
                Vec::new()
            };
            let row = sqlx::query(
                "INSERT INTO agent_adaptor_thread_leases \
                     (target, owner, token, expires_at, prompt, acquired_at) \
                 VALUES (?1, ?2, ?3, ?4, ?6, ?5) \
                 ON CONFLICT (target) DO UPDATE SET owner = excluded.owner, \
                     token = excluded.token, expires_at = excluded.expires_at, \
                     prompt = excluded.prompt, acquired_at = excluded.acquired_at \
                 WHERE agent_adaptor_thread_leases.owner = excluded.owner \
                    OR agent_adaptor_thread_leases.expires_at <= ?5 \
                 RETURNING target, owner, token, expires_at",
            )
            .bind(target)
            .bind(owner)
            .bind(new_token())
            .bind(now.saturating_add(ttl_micros(ttl)))
            .bind(now)
            .bind(prompt)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| backend(OP, &e))?;
            match row {
                Some(row) => Ok(TakenLease {
                    lease: decode_lease(&row)?,
                    displaced: displaced.pop(),
                }),
                None => Err(StoreError::Busy {
                    target: target.to_owned(),
                }),
            }
        }
        .await;
        settle(tx, OP, outcome).await
    }

    /// The write gate and a `BEGIN IMMEDIATE` transaction.
    async fn begin_write(
        &self,
        op: &str,
    ) -> Result<
        (
            tokio::sync::MutexGuard<'_, ()>,
            Transaction<'static, Sqlite>,
        ),
        StoreError,
    > {
        let gate = self.write_gate.lock().await;
        Ok((gate, self.begin(op).await?))
    }

    async fn begin(&self, op: &str) -> Result<Transaction<'static, Sqlite>, StoreError> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| backend(op, &e))
    }

    /// Make sure the file has a rollback journal (`journal_mode =
    /// TRUNCATE`), switching a file that an older build left in WAL mode
    /// (the one mode stored in the file) back, retrying while another
    /// connection or process holds a lock, for up to `patience`. Not WAL:
    /// WAL's index lives in a `-shm` file that every process maps into
    /// memory, and a `-shm` truncated under the mapping kills the process
    /// with SIGBUS, where a journal that cannot be written is an error.
    async fn use_rollback_journal(&self, patience: Duration) -> Result<(), StoreError> {
        const OP: &str = "sqlite journal mode";
        let started = std::time::Instant::now();
        loop {
            let attempt: Result<String, sqlx::Error> =
                sqlx::query_scalar("PRAGMA journal_mode = TRUNCATE")
                    .fetch_one(&self.pool)
                    .await;
            match attempt {
                Ok(mode) if mode.eq_ignore_ascii_case("truncate") => return Ok(()),
                Ok(mode) => {
                    return Err(backend_msg(OP, format!("journal mode stayed {mode:?}")));
                }
                Err(e) if is_busy(&e) && started.elapsed() < patience => {
                    let pause = 5 + rand::random::<u64>() % 20;
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                }
                Err(e) => return Err(backend(OP, &e)),
            }
        }
    }

    /// Apply pending migrations in one `BEGIN IMMEDIATE` transaction.
    /// (Statements run one by one through `query`: `raw_sql`'s executor
    /// bounds would make `open`'s future unspawnable.)
    async fn migrate(&self) -> Result<(), StoreError> {
        const OP: &str = "sqlite migrate";
        let err = |e: sqlx::Error| backend(OP, &e);
        let _gate = self.write_gate.lock().await;
        let mut tx = self.begin(OP).await?;
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS agent_adaptor_schema_migrations \
             (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT",
        )
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        let current: i64 = sqlx::query_scalar(
            "SELECT COALESCE(MAX(version), 0) FROM agent_adaptor_schema_migrations",
        )
        .fetch_one(&mut *tx)
        .await
        .map_err(err)?;
        let latest = MIGRATIONS.last().map_or(0, |m| m.0);
        if current > latest {
            return Err(backend_msg(
                OP,
                format!("schema version {current} is newer than this build supports ({latest})"),
            ));
        }
        for &(version, sql) in MIGRATIONS {
            if version <= current {
                continue;
            }
            for statement in sql_statements(sql) {
                sqlx::query(statement)
                    .execute(&mut *tx)
                    .await
                    .map_err(err)?;
            }
            sqlx::query(
                "INSERT INTO agent_adaptor_schema_migrations (version, applied_at) VALUES (?1, ?2)",
            )
            .bind(version)
            .bind(Utc::now().timestamp_micros())
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        }
        tx.commit().await.map_err(err)
    }
}

/// SQLITE_BUSY or SQLITE_LOCKED (any extended code).
fn is_busy(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => db
            .code()
            .and_then(|c| c.parse::<i32>().ok())
            .is_some_and(|c| matches!(c & 0xff, 5 | 6)),
        _ => false,
    }
}

pub(crate) fn time(id: &str, micros: i64) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_micros(micros).ok_or_else(|| {
        backend_msg(
            "sqlite decode",
            format!("{id}: timestamp {micros} out of range"),
        )
    })
}

pub(crate) fn decode(row: &SqliteRow) -> Result<ThreadRecord, StoreError> {
    let err = |e: sqlx::Error| backend("sqlite decode record", &e);
    let id: String = row.try_get("id").map_err(err)?;
    let status: String = row.try_get("status").map_err(err)?;
    let params: String = row.try_get("params").map_err(err)?;
    Ok(ThreadRecord {
        key: row.try_get("key").map_err(err)?,
        status: parse_status(&id, &status)?,
        driver_type: row.try_get("driver_type").map_err(err)?,
        fingerprint: row.try_get("fingerprint").map_err(err)?,
        codec: row.try_get("codec").map_err(err)?,
        params: decode_params(&id, &params)?,
        previous_id: row.try_get("previous_id").map_err(err)?,
        created_at: time(&id, row.try_get("created_at").map_err(err)?)?,
        updated_at: time(&id, row.try_get("updated_at").map_err(err)?)?,
        id,
    })
}

fn decode_lease(row: &SqliteRow) -> Result<Lease, StoreError> {
    let err = |e: sqlx::Error| backend("sqlite decode lease", &e);
    let target: String = row.try_get("target").map_err(err)?;
    let expires_at = time(&target, row.try_get("expires_at").map_err(err)?)?;
    Ok(Lease {
        owner: row.try_get("owner").map_err(err)?,
        token: row.try_get("token").map_err(err)?,
        expires_at,
        target,
    })
}

pub(crate) fn now_micros() -> i64 {
    Utc::now().timestamp_micros()
}

#[async_trait]
impl ThreadStore for SqliteStore {
    async fn resolve(
        &self,
        key: &str,
        include_archived: bool,
    ) -> Result<Option<ThreadRecord>, StoreError> {
        // One statement is one consistent snapshot; active wins, then the
        // newest archived record when asked for.
        let sql = format!(
            "SELECT {RECORD_COLUMNS} FROM agent_adaptor_thread_records \
             WHERE key = ?1 AND (status = 'active' OR ?2) \
             ORDER BY (status = 'active') DESC, seq DESC LIMIT 1"
        );
        let row = sqlx::query(&sql)
            .bind(key)
            .bind(include_archived)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| backend("sqlite resolve", &e))?;
        row.as_ref().map(decode).transpose()
    }

    async fn acquire_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        let taken = self.acquire(target, owner, ttl, None, false).await?;
        Ok(taken.lease)
    }

    async fn acquire_run_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
        prompt: &str,
    ) -> Result<Lease, StoreError> {
        let taken = self.acquire(target, owner, ttl, Some(prompt), true).await?;
        Ok(taken.lease)
    }

    async fn take_run_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
        prompt: &str,
    ) -> Result<TakenLease, StoreError> {
        self.acquire(target, owner, ttl, Some(prompt), true).await
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        const OP: &str = "sqlite renew_lease";
        let _gate = self.write_gate.lock().await;
        let mut tx = self.begin(OP).await?;
        let now = now_micros();
        let row = sqlx::query(
            "UPDATE agent_adaptor_thread_leases SET expires_at = ?4 \
             WHERE target = ?1 AND owner = ?2 AND token = ?3 AND expires_at > ?5 \
             RETURNING target, owner, token, expires_at",
        )
        .bind(&lease.target)
        .bind(&lease.owner)
        .bind(&lease.token)
        .bind(now.saturating_add(ttl_micros(ttl)))
        .bind(now)
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| backend(OP, &e))?;
        let outcome = match row {
            Some(row) => decode_lease(&row),
            None => Err(StoreError::LeaseLost {
                target: lease.target.clone(),
            }),
        };
        settle(tx, OP, outcome).await
    }

    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        const OP: &str = "sqlite release_lease";
        let _gate = self.write_gate.lock().await;
        let mut tx = self.begin(OP).await?;
        let outcome =
            sqlx::query("DELETE FROM agent_adaptor_thread_leases WHERE target = ?1 AND token = ?2")
                .bind(&lease.target)
                .bind(&lease.token)
                .execute(&mut *tx)
                .await
                .map(|_| ())
                .map_err(|e| backend(OP, &e));
        settle(tx, OP, outcome).await
    }

    async fn finalize(&self, request: FinalizeRequest) -> Result<ThreadRecord, StoreError> {
        const OP: &str = "sqlite finalize";
        let params = encode_params(&request.record.params)?;
        // The write lock is held from BEGIN IMMEDIATE to commit: no other
        // connection or process can take the lease over or touch the key
        // meanwhile.
        let _gate = self.write_gate.lock().await;
        let mut tx = self.begin(OP).await?;
        let outcome = crate::sqlite_tx::finalize_in(&mut tx, &request, params).await;
        let updated = settle(tx, OP, outcome).await?;
        // The record as stored (times at µs), moved, not read back.
        let mut record = request.record;
        record.status = RecordStatus::Active;
        record.created_at = time(&record.id, record.created_at.timestamp_micros())?;
        record.updated_at = time(&record.id, updated)?;
        Ok(record)
    }

    async fn list(&self, limit: usize) -> Result<Vec<ThreadRecord>, StoreError> {
        let sql = format!(
            "SELECT {RECORD_COLUMNS} FROM agent_adaptor_thread_records \
             WHERE status = 'active' ORDER BY updated_at DESC, seq DESC LIMIT ?1"
        );
        let rows = sqlx::query(&sql)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| backend("sqlite list", &e))?;
        rows.iter().map(decode).collect()
    }

    async fn history(&self, key: &str, limit: usize) -> Result<Vec<ThreadRecord>, StoreError> {
        let sql = format!(
            "SELECT {RECORD_COLUMNS} FROM agent_adaptor_thread_records \
             WHERE key = ?1 ORDER BY (status = 'active') DESC, seq DESC LIMIT ?2"
        );
        let rows = sqlx::query(&sql)
            .bind(key)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| backend("sqlite history", &e))?;
        rows.iter().map(decode).collect()
    }

    async fn delete(&self, key: &str) -> Result<u64, StoreError> {
        const OP: &str = "sqlite delete";
        let _gate = self.write_gate.lock().await;
        let mut tx = self.begin(OP).await?;
        let outcome = crate::sqlite_tx::delete_in(&mut tx, key).await;
        settle(tx, OP, outcome).await
    }

    async fn recover_instance(
        &self,
        instance: &str,
        epoch: &str,
    ) -> Result<Vec<InterruptedRun>, StoreError> {
        const OP: &str = "sqlite recover_instance";
        let prefixes = recovery_prefixes(instance, epoch)?;
        let _gate = self.write_gate.lock().await;
        let mut tx = self.begin(OP).await?;
        let outcome =
            crate::recovery::sqlite_recover_in(&mut tx, Stale::Instance(&prefixes), now_micros())
                .await;
        settle(tx, OP, outcome).await
    }

    async fn interrupted_runs(&self, key: &str) -> Result<Vec<InterruptedRun>, StoreError> {
        crate::recovery::sqlite_interrupted_runs(&self.pool, key).await
    }

    async fn thread_policy(&self, key: &str) -> Result<ThreadPolicy, StoreError> {
        crate::grants::sqlite_policy(&self.pool, key).await
    }

    async fn set_tool_allowed(
        &self,
        key: &str,
        tool: &str,
        allowed: bool,
    ) -> Result<bool, StoreError> {
        const OP: &str = "sqlite set_tool_allowed";
        check_tool_name(tool)?;
        let _gate = self.write_gate.lock().await;
        let mut tx = self.begin(OP).await?;
        let outcome = crate::grants::sqlite_set_in(&mut tx, key, tool, allowed).await;
        settle(tx, OP, outcome).await
    }

    async fn append_events(
        &self,
        key: &str,
        run_id: &str,
        events: &[NewEvent],
    ) -> Result<Vec<u64>, StoreError> {
        const OP: &str = "sqlite append_events";
        let batch = crate::events::Batch::prepare(run_id, events)?;
        let _gate = self.write_gate.lock().await;
        let mut tx = self.begin(OP).await?;
        let outcome =
            crate::events::EventLog::<Sqlite>::append_in(&mut tx, key, run_id, &batch).await;
        settle(tx, OP, outcome).await
    }

    async fn events(&self, key: &str, query: &EventQuery) -> Result<EventPage, StoreError> {
        crate::events::EventLog::<Sqlite>::events(&self.pool, key, query).await
    }

    async fn prune_events(&self, key: &str, retention: &Retention) -> Result<u64, StoreError> {
        const OP: &str = "sqlite prune_events";
        let _gate = self.write_gate.lock().await;
        let mut tx = self.begin(OP).await?;
        let outcome = crate::events::EventLog::<Sqlite>::prune_in(&mut tx, key, retention).await;
        settle(tx, OP, outcome).await
    }

    async fn recover_expired(&self) -> Result<Vec<InterruptedRun>, StoreError> {
        const OP: &str = "sqlite recover_expired";
        let (_gate, mut tx) = self.begin_write(OP).await?;
        let outcome =
            crate::recovery::sqlite_recover_in(&mut tx, Stale::Expired, now_micros()).await;
        settle(tx, OP, outcome).await
    }

    async fn put_approval(&self, approval: NewApproval) -> Result<ApprovalRow, StoreError> {
        const OP: &str = "sqlite put_approval";
        let (_gate, mut tx) = self.begin_write(OP).await?;
        let outcome = Durable::<Sqlite>::put_approval(&mut tx, approval).await;
        settle(tx, OP, outcome).await
    }

    async fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, StoreError> {
        Durable::<Sqlite>::approval(&self.pool, id).await
    }

    async fn pending_approvals(&self, key: &str) -> Result<Vec<ApprovalRow>, StoreError> {
        const OP: &str = "sqlite pending_approvals";
        let (_gate, mut tx) = self.begin_write(OP).await?;
        let outcome = Durable::<Sqlite>::pending_approvals(&mut tx, key).await;
        settle(tx, OP, outcome).await
    }

    async fn answer_approval(
        &self,
        id: &str,
        principal: &str,
        answer: Value,
    ) -> Result<Result<ApprovalRow, AnswerRefused>, StoreError> {
        const OP: &str = "sqlite answer_approval";
        let (_gate, mut tx) = self.begin_write(OP).await?;
        let outcome = Durable::<Sqlite>::answer_approval(&mut tx, id, principal, &answer).await;
        settle(tx, OP, outcome).await
    }

    async fn expire_approval(&self, id: &str) -> Result<bool, StoreError> {
        const OP: &str = "sqlite expire_approval";
        let (_gate, mut tx) = self.begin_write(OP).await?;
        let outcome = Durable::<Sqlite>::expire_approval(&mut tx, id).await;
        settle(tx, OP, outcome).await
    }

    async fn expire_overdue_approval(&self, id: &str) -> Result<bool, StoreError> {
        const OP: &str = "sqlite expire_overdue_approval";
        let (_gate, mut tx) = self.begin_write(OP).await?;
        let outcome = Durable::<Sqlite>::expire_overdue_approval(&mut tx, id).await;
        settle(tx, OP, outcome).await
    }

    async fn create_task(&self, task: NewTask) -> Result<TaskRow, StoreError> {
        const OP: &str = "sqlite create_task";
        let (_gate, mut tx) = self.begin_write(OP).await?;
        let outcome = Durable::<Sqlite>::create_task(&mut tx, task).await;
        settle(tx, OP, outcome).await
    }

    async fn update_task(&self, id: &str, change: TaskChange) -> Result<TaskRow, StoreError> {
        const OP: &str = "sqlite update_task";
        let (_gate, mut tx) = self.begin_write(OP).await?;
        let outcome = Durable::<Sqlite>::update_task(&mut tx, id, change).await;
        settle(tx, OP, outcome).await
    }

    async fn task(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
        Durable::<Sqlite>::task(&self.pool, id).await
    }

    async fn task_updates(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<TaskUpdate>, StoreError> {
        Durable::<Sqlite>::task_updates(&self.pool, id, after, limit).await
    }

    async fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        Durable::<Sqlite>::list_tasks(&self.pool, query).await
    }

    async fn active_tasks(&self, key: &str) -> Result<Vec<TaskRow>, StoreError> {
        Durable::<Sqlite>::active_tasks(&self.pool, key).await
    }

    async fn request_task_cancel(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
        const OP: &str = "sqlite request_task_cancel";
        let (_gate, mut tx) = self.begin_write(OP).await?;
        let outcome = Durable::<Sqlite>::request_task_cancel(&mut tx, id).await;
        settle(tx, OP, outcome).await
    }

    async fn prune_tasks(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        const OP: &str = "sqlite prune_tasks";
        let (_gate, mut tx) = self.begin_write(OP).await?;
        let outcome = Durable::<Sqlite>::prune_tasks(&mut tx, before).await;
        settle(tx, OP, outcome).await
    }

    async fn put_push_config(
        &self,
        task_id: &str,
        id: &str,
        config: Value,
    ) -> Result<PushConfigRow, StoreError> {
        const OP: &str = "sqlite put_push_config";
        let (_gate, mut tx) = self.begin_write(OP).await?;
        let outcome = Durable::<Sqlite>::put_push_config(&mut tx, task_id, id, &config).await;
        settle(tx, OP, outcome).await
    }

    async fn push_configs(&self, task_id: &str) -> Result<Vec<PushConfigRow>, StoreError> {
        Durable::<Sqlite>::push_configs(&self.pool, task_id).await
    }

    async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        const OP: &str = "sqlite delete_push_config";
        let (_gate, mut tx) = self.begin_write(OP).await?;
        let outcome = Durable::<Sqlite>::delete_push_config(&mut tx, task_id, id).await;
        settle(tx, OP, outcome).await
    }

    async fn notify(&self, notification: &Notification) -> Result<(), StoreError> {
        self.notifications.notify(notification)
    }

    async fn listen(&self) -> Result<Notifications, StoreError> {
        Ok(self.notifications.listen())
    }
}
