//! [`PgStore`]: threads shared by several processes on several hosts.

use std::str::FromStr;
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
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::{Postgres, Row, Transaction};

use crate::durable::Durable;
use crate::durable::listen::PgNotifications;
use crate::error::{backend, backend_msg, scrub, settle, unique_violation};
use crate::record::{
    decode_params, encode_params, new_token, parse_status, sql_statements, status_str, ttl_micros,
};
use crate::recovery::Stale;

/// The embedded migrations, in order: (version, SQL).
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../migrations/postgres/0001_threads.sql")),
    (
        2,
        include_str!("../migrations/postgres/0002_interrupted_runs.sql"),
    ),
    (3, include_str!("../migrations/postgres/0003_event_log.sql")),
    (
        4,
        include_str!("../migrations/postgres/0004_thread_policy.sql"),
    ),
    (5, include_str!("../migrations/postgres/0005_durable.sql")),
];

/// Serializes concurrent migrations (`pg_advisory_xact_lock` key).
const MIGRATION_LOCK: i64 = 0x6167_6164_7374_6f72; // "agadstor"

/// The partial unique index that allows one active record per key.
const ONE_ACTIVE_INDEX: &str = "agent_adaptor_thread_records_one_active";

const RECORD_COLUMNS: &str = "id, key, status, driver_type, fingerprint, codec, \
                              params::text AS params, previous_id, created_at, updated_at";

/// How [`PgStore::connect_with`] sizes its pool and bounds its waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgConfig {
    /// Connections in this process's pool (default 8, at least 1).
    pub max_connections: u32,
    /// How long an operation waits for a pooled connection (default 10 s).
    pub acquire_timeout: Duration,
    /// The sessions' `lock_timeout` (default 5 s; zero disables): how long a
    /// statement waits for a row lock. An acquisition that times out behind
    /// another run's finalize is reported as `Busy`.
    pub lock_timeout: Duration,
    /// The sessions' `idle_in_transaction_session_timeout` (default 30 s;
    /// zero disables): the server ends a session of ours that stalls inside
    /// a transaction (a host that died mid-finalize), releasing its locks
    /// so the lease can be taken over once it expires.
    pub idle_in_transaction_timeout: Duration,
}

impl Default for PgConfig {
    fn default() -> Self {
        PgConfig {
            max_connections: 8,
            acquire_timeout: Duration::from_secs(10),
            lock_timeout: Duration::from_secs(5),
            idle_in_transaction_timeout: Duration::from_secs(30),
        }
    }
}

/// A [`ThreadStore`] in PostgreSQL, shared by any number of processes on
/// any number of hosts.
///
/// Lease expiry is computed with the server's `clock_timestamp()`, so hosts
/// with skewed clocks agree on it and a crashed host's lease is taken over
/// once it expires. Acquisition is one atomic upsert; `finalize` locks the
/// lease row (`SELECT … FOR UPDATE`) and the key's active record inside one
/// transaction, so a takeover waits until the finalize has committed or
/// rolled back. A partial unique index guarantees one active record per key.
///
/// This build has no TLS: `sslmode=prefer` (the default) connects in plain
/// text, `sslmode=require` fails. Use it on loopback, a private network, or
/// behind a TLS-terminating proxy.
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    endpoint: String,
    /// This store value's `LISTEN` connection, once one listens.
    notifications: Arc<PgNotifications>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Host, port and database only: never the user or password.
        f.debug_struct("PgStore")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connect to `url` (`postgres://user:password@host:port/database`)
    /// with the default [`PgConfig`] and apply pending migrations. Errors
    /// never quote the URL or its password.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, PgConfig::default()).await
    }

    /// Connect to `url` with `config` and apply pending migrations.
    pub async fn connect_with(url: &str, config: PgConfig) -> Result<Self, StoreError> {
        let hide = |e: &dyn std::fmt::Display| {
            StoreError::Backend(scrub(&format!("postgres connect: {e}"), url))
        };
        let millis = |d: Duration| format!("{}ms", d.as_millis());
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| hide(&e))?
            .application_name("agent-adaptor-store")
            .options([
                ("lock_timeout", millis(config.lock_timeout)),
                (
                    "idle_in_transaction_session_timeout",
                    millis(config.idle_in_transaction_timeout),
                ),
            ]);
        let endpoint = format!(
            "{}:{}/{}",
            options.get_host(),
            options.get_port(),
            options.get_database().unwrap_or_default()
        );
        let pool = match crate::pool::discard_dirty_connections(PgPoolOptions::new())
            .max_connections(config.max_connections.max(1))
            .acquire_timeout(config.acquire_timeout)
            .connect_with(options.clone())
            .await
        {
            Ok(pool) => pool,
            // The pool retried until its timeout and kept only that: one
            // direct attempt says why (refused, DNS, authentication …).
            Err(sqlx::Error::PoolTimedOut) => {
                let probe = tokio::time::timeout(
                    config.acquire_timeout,
                    sqlx::ConnectOptions::connect(&options),
                )
                .await;
                let why = match probe {
                    Ok(Err(e)) => crate::error::describe(&e),
                    _ => crate::error::describe(&sqlx::Error::PoolTimedOut),
                };
                return Err(hide(&why));
            }
            Err(e) => return Err(hide(&crate::error::describe(&e))),
        };
        let store = PgStore {
            pool,
            endpoint,
            notifications: Arc::default(),
        };
        store.migrate().await?;
        Ok(store)
    }

    /// Every record of `key`, active and archived, oldest first (for
    /// audits and tests). A record that does not decode is an error.
    pub async fn records(&self, key: &str) -> Result<Vec<ThreadRecord>, StoreError> {
        let sql = format!(
            "SELECT {RECORD_COLUMNS} FROM agent_adaptor_thread_records WHERE key = $1 ORDER BY seq"
        );
        let rows = sqlx::query(&sql)
            .bind(key)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| backend("postgres records", &e))?;
        rows.iter().map(decode).collect()
    }

    /// Close the pool, waiting for connections to finish.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Take `target`'s lease for `owner`, keeping the run's prompt and
    /// start time with it. One statement: the conflicting row is locked
    /// while the WHERE decides between "same owner or expired" (take it)
    /// and busy.
    async fn acquire(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
        prompt: Option<&str>,
    ) -> Result<Lease, StoreError> {
        let row = sqlx::query(ACQUIRE)
            .bind(target)
            .bind(owner)
            .bind(new_token())
            .bind(ttl_micros(ttl))
            .bind(prompt)
            .bind(None::<DateTime<Utc>>)
            .fetch_optional(&self.pool)
            .await;
        acquired(target, row)
    }

    /// `take_run_lease`: recover `target`'s expired lease and take it, in
    /// one transaction.
    async fn take(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
        prompt: &str,
    ) -> Result<TakenLease, StoreError> {
        const OP: &str = "postgres take_run_lease";
        let mut tx = self.begin(OP).await?;
        let outcome = async {
            // One instant decides expiry for the whole step: a lease that
            // expires between the recovery and the upsert must not be
            // taken over unrecorded.
            let now: DateTime<Utc> = sqlx::query_scalar("SELECT clock_timestamp()")
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| backend(OP, &e))?;
            // Lock an expired lease first (a finalize holding it past
            // lock_timeout reads as Busy, as in `acquire`).
            let expired = sqlx::query(
                "SELECT 1 FROM agent_adaptor_thread_leases \
                 WHERE target = $1 AND expires_at <= $2 FOR UPDATE",
            )
            .bind(target)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await;
            let mut displaced = match expired {
                Err(e) if is_lock_timeout(&e) => {
                    return Err(StoreError::Busy {
                        target: target.to_owned(),
                    });
                }
                Err(e) => return Err(backend(OP, &e)),
                Ok(None) => Vec::new(),
                Ok(Some(_)) => {
                    crate::recovery::pg_recover_in(&mut tx, Stale::Target(target)).await?
                }
            };
            let row = sqlx::query(ACQUIRE)
                .bind(target)
                .bind(owner)
                .bind(new_token())
                .bind(ttl_micros(ttl))
                .bind(prompt)
                .bind(now)
                .fetch_optional(&mut *tx)
                .await;
            Ok(TakenLease {
                lease: acquired(target, row)?,
                displaced: displaced.pop(),
            })
        }
        .await;
        settle(tx, OP, outcome).await
    }

    async fn begin(&self, op: &str) -> Result<Transaction<'static, Postgres>, StoreError> {
        self.pool.begin().await.map_err(|e| backend(op, &e))
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        const OP: &str = "postgres migrate";
        let mut tx = self.begin(OP).await?;
        let outcome = migrate_in(&mut tx).await;
        settle(tx, OP, outcome).await
    }
}

/// Take a lease unless another owner's lease, unexpired at `$6` (default:
/// now), holds the target.
const ACQUIRE: &str = "INSERT INTO agent_adaptor_thread_leases AS l \
         (target, owner, token, expires_at, prompt, acquired_at) \
     VALUES ($1, $2, $3, clock_timestamp() + ($4::float8 * interval '1 microsecond'), \
         $5, clock_timestamp()) \
     ON CONFLICT (target) DO UPDATE SET owner = excluded.owner, \
         token = excluded.token, expires_at = excluded.expires_at, \
         prompt = excluded.prompt, acquired_at = excluded.acquired_at \
     WHERE l.owner = excluded.owner OR l.expires_at <= COALESCE($6, clock_timestamp()) \
     RETURNING target, owner, token, expires_at";

/// The lease [`ACQUIRE`] returned, or `Busy`.
fn acquired(target: &str, row: Result<Option<PgRow>, sqlx::Error>) -> Result<Lease, StoreError> {
    let busy = || StoreError::Busy {
        target: target.to_owned(),
    };
    match row {
        // The row is locked by a finalize that outlasted lock_timeout.
        Err(e) if is_lock_timeout(&e) => Err(busy()),
        Err(e) => Err(backend("postgres acquire_lease", &e)),
        Ok(Some(row)) => decode_lease(&row),
        Ok(None) => Err(busy()),
    }
}

/// The migration body, inside its transaction. (Statements run one by one
/// through `query`: `raw_sql`'s executor bounds would make `connect`'s
/// future unspawnable.)
async fn migrate_in(tx: &mut Transaction<'static, Postgres>) -> Result<(), StoreError> {
    {
        const OP: &str = "postgres migrate";
        let err = |e: sqlx::Error| backend(OP, &e);
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(MIGRATION_LOCK)
            .execute(&mut **tx)
            .await
            .map_err(err)?;
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS agent_adaptor_schema_migrations \
         (version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())",
        )
        .execute(&mut **tx)
        .await
        .map_err(err)?;
        let current: i64 = sqlx::query_scalar(
            "SELECT COALESCE(MAX(version), 0) FROM agent_adaptor_schema_migrations",
        )
        .fetch_one(&mut **tx)
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
                    .execute(&mut **tx)
                    .await
                    .map_err(err)?;
            }
            sqlx::query("INSERT INTO agent_adaptor_schema_migrations (version) VALUES ($1)")
                .bind(version)
                .execute(&mut **tx)
                .await
                .map_err(err)?;
        }
        Ok(())
    }
}

/// SQLSTATE 55P03 `lock_not_available` (a `lock_timeout` expired).
fn is_lock_timeout(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.code().as_deref() == Some("55P03"))
}

fn decode(row: &PgRow) -> Result<ThreadRecord, StoreError> {
    let err = |e: sqlx::Error| backend("postgres decode record", &e);
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
        created_at: row.try_get::<DateTime<Utc>, _>("created_at").map_err(err)?,
        updated_at: row.try_get::<DateTime<Utc>, _>("updated_at").map_err(err)?,
        id,
    })
}

fn decode_lease(row: &PgRow) -> Result<Lease, StoreError> {
    let err = |e: sqlx::Error| backend("postgres decode lease", &e);
    Ok(Lease {
        target: row.try_get("target").map_err(err)?,
        owner: row.try_get("owner").map_err(err)?,
        token: row.try_get("token").map_err(err)?,
        expires_at: row.try_get::<DateTime<Utc>, _>("expires_at").map_err(err)?,
    })
}

#[async_trait]
impl ThreadStore for PgStore {
    async fn resolve(
        &self,
        key: &str,
        include_archived: bool,
    ) -> Result<Option<ThreadRecord>, StoreError> {
        let sql = format!(
            "SELECT {RECORD_COLUMNS} FROM agent_adaptor_thread_records \
             WHERE key = $1 AND (status = 'active' OR $2) \
             ORDER BY (status = 'active') DESC, seq DESC LIMIT 1"
        );
        let row = sqlx::query(&sql)
            .bind(key)
            .bind(include_archived)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| backend("postgres resolve", &e))?;
        row.as_ref().map(decode).transpose()
    }

    async fn acquire_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        self.acquire(target, owner, ttl, None).await
    }

    async fn acquire_run_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
        prompt: &str,
    ) -> Result<Lease, StoreError> {
        Ok(self.take(target, owner, ttl, prompt).await?.lease)
    }

    async fn take_run_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
        prompt: &str,
    ) -> Result<TakenLease, StoreError> {
        self.take(target, owner, ttl, prompt).await
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        let row = sqlx::query(
            "UPDATE agent_adaptor_thread_leases \
             SET expires_at = clock_timestamp() + ($4::float8 * interval '1 microsecond') \
             WHERE target = $1 AND owner = $2 AND token = $3 AND expires_at > clock_timestamp() \
             RETURNING target, owner, token, expires_at",
        )
        .bind(&lease.target)
        .bind(&lease.owner)
        .bind(&lease.token)
        .bind(ttl_micros(ttl))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| backend("postgres renew_lease", &e))?;
        match row {
            Some(row) => decode_lease(&row),
            None => Err(StoreError::LeaseLost {
                target: lease.target.clone(),
            }),
        }
    }

    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM agent_adaptor_thread_leases WHERE target = $1 AND token = $2")
            .bind(&lease.target)
            .bind(&lease.token)
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(|e| backend("postgres release_lease", &e))
    }

    async fn finalize(&self, request: FinalizeRequest) -> Result<ThreadRecord, StoreError> {
        const OP: &str = "postgres finalize";
        let params = encode_params(&request.record.params)?;
        let mut tx = self.begin(OP).await?;
        let outcome = finalize_in(&mut tx, &request, params).await;
        settle(tx, OP, outcome).await
    }

    async fn list(&self, limit: usize) -> Result<Vec<ThreadRecord>, StoreError> {
        let sql = format!(
            "SELECT {RECORD_COLUMNS} FROM agent_adaptor_thread_records \
             WHERE status = 'active' ORDER BY updated_at DESC, seq DESC LIMIT $1"
        );
        let rows = sqlx::query(&sql)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| backend("postgres list", &e))?;
        rows.iter().map(decode).collect()
    }

    async fn history(&self, key: &str, limit: usize) -> Result<Vec<ThreadRecord>, StoreError> {
        let sql = format!(
            "SELECT {RECORD_COLUMNS} FROM agent_adaptor_thread_records \
             WHERE key = $1 ORDER BY (status = 'active') DESC, seq DESC LIMIT $2"
        );
        let rows = sqlx::query(&sql)
            .bind(key)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| backend("postgres history", &e))?;
        rows.iter().map(decode).collect()
    }

    async fn delete(&self, key: &str) -> Result<u64, StoreError> {
        const OP: &str = "postgres delete";
        let mut tx = self.begin(OP).await?;
        let outcome = delete_in(&mut tx, key).await;
        settle(tx, OP, outcome).await
    }

    async fn recover_instance(
        &self,
        instance: &str,
        epoch: &str,
    ) -> Result<Vec<InterruptedRun>, StoreError> {
        const OP: &str = "postgres recover_instance";
        let prefixes = recovery_prefixes(instance, epoch)?;
        let mut tx = self.begin(OP).await?;
        let outcome = crate::recovery::pg_recover_in(&mut tx, Stale::Instance(&prefixes)).await;
        settle(tx, OP, outcome).await
    }

    async fn interrupted_runs(&self, key: &str) -> Result<Vec<InterruptedRun>, StoreError> {
        crate::recovery::pg_interrupted_runs(&self.pool, key).await
    }

    async fn thread_policy(&self, key: &str) -> Result<ThreadPolicy, StoreError> {
        crate::grants::pg_policy(&self.pool, key).await
    }

    async fn set_tool_allowed(
        &self,
        key: &str,
        tool: &str,
        allowed: bool,
    ) -> Result<bool, StoreError> {
        check_tool_name(tool)?;
        crate::grants::pg_set(&self.pool, key, tool, allowed).await
    }

    async fn append_events(
        &self,
        key: &str,
        run_id: &str,
        events: &[NewEvent],
    ) -> Result<Vec<u64>, StoreError> {
        const OP: &str = "postgres append_events";
        let batch = crate::events::Batch::prepare(run_id, events)?;
        let mut tx = self.begin(OP).await?;
        let outcome =
            crate::events::EventLog::<Postgres>::append_in(&mut tx, key, run_id, &batch).await;
        settle(tx, OP, outcome).await
    }

    async fn events(&self, key: &str, query: &EventQuery) -> Result<EventPage, StoreError> {
        crate::events::EventLog::<Postgres>::events(&self.pool, key, query).await
    }

    async fn prune_events(&self, key: &str, retention: &Retention) -> Result<u64, StoreError> {
        const OP: &str = "postgres prune_events";
        let mut tx = self.begin(OP).await?;
        let outcome = crate::events::EventLog::<Postgres>::prune_in(&mut tx, key, retention).await;
        settle(tx, OP, outcome).await
    }

    async fn recover_expired(&self) -> Result<Vec<InterruptedRun>, StoreError> {
        const OP: &str = "postgres recover_expired";
        let mut tx = self.begin(OP).await?;
        let outcome = crate::recovery::pg_recover_in(&mut tx, Stale::Expired).await;
        settle(tx, OP, outcome).await
    }

    async fn put_approval(&self, approval: NewApproval) -> Result<ApprovalRow, StoreError> {
        const OP: &str = "postgres put_approval";
        let mut tx = self.begin(OP).await?;
        let outcome = Durable::<Postgres>::put_approval(&mut tx, approval).await;
        settle(tx, OP, outcome).await
    }

    async fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, StoreError> {
        Durable::<Postgres>::approval(&self.pool, id).await
    }

    async fn pending_approvals(&self, key: &str) -> Result<Vec<ApprovalRow>, StoreError> {
        const OP: &str = "postgres pending_approvals";
        let mut tx = self.begin(OP).await?;
        let outcome = Durable::<Postgres>::pending_approvals(&mut tx, key).await;
        settle(tx, OP, outcome).await
    }

    async fn answer_approval(
        &self,
        id: &str,
        principal: &str,
        answer: Value,
    ) -> Result<Result<ApprovalRow, AnswerRefused>, StoreError> {
        const OP: &str = "postgres answer_approval";
        let mut tx = self.begin(OP).await?;
        let outcome = Durable::<Postgres>::answer_approval(&mut tx, id, principal, &answer).await;
        settle(tx, OP, outcome).await
    }

    async fn expire_approval(&self, id: &str) -> Result<bool, StoreError> {
        const OP: &str = "postgres expire_approval";
        let mut tx = self.begin(OP).await?;
        let outcome = Durable::<Postgres>::expire_approval(&mut tx, id).await;
        settle(tx, OP, outcome).await
    }

    async fn expire_overdue_approval(&self, id: &str) -> Result<bool, StoreError> {
        const OP: &str = "postgres expire_overdue_approval";
        let mut tx = self.begin(OP).await?;
        let outcome = Durable::<Postgres>::expire_overdue_approval(&mut tx, id).await;
        settle(tx, OP, outcome).await
    }

    async fn create_task(&self, task: NewTask) -> Result<TaskRow, StoreError> {
        const OP: &str = "postgres create_task";
        let mut tx = self.begin(OP).await?;
        let outcome = Durable::<Postgres>::create_task(&mut tx, task).await;
        settle(tx, OP, outcome).await
    }

    async fn update_task(&self, id: &str, change: TaskChange) -> Result<TaskRow, StoreError> {
        const OP: &str = "postgres update_task";
        let mut tx = self.begin(OP).await?;
        let outcome = Durable::<Postgres>::update_task(&mut tx, id, change).await;
        settle(tx, OP, outcome).await
    }

    async fn task(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
        Durable::<Postgres>::task(&self.pool, id).await
    }

    async fn task_updates(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<TaskUpdate>, StoreError> {
        Durable::<Postgres>::task_updates(&self.pool, id, after, limit).await
    }

    async fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        Durable::<Postgres>::list_tasks(&self.pool, query).await
    }

    async fn active_tasks(&self, key: &str) -> Result<Vec<TaskRow>, StoreError> {
        Durable::<Postgres>::active_tasks(&self.pool, key).await
    }

    async fn request_task_cancel(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
        const OP: &str = "postgres request_task_cancel";
        let mut tx = self.begin(OP).await?;
        let outcome = Durable::<Postgres>::request_task_cancel(&mut tx, id).await;
        settle(tx, OP, outcome).await
    }

    async fn prune_tasks(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        const OP: &str = "postgres prune_tasks";
        let mut tx = self.begin(OP).await?;
        let outcome = Durable::<Postgres>::prune_tasks(&mut tx, before).await;
        settle(tx, OP, outcome).await
    }

    async fn put_push_config(
        &self,
        task_id: &str,
        id: &str,
        config: Value,
    ) -> Result<PushConfigRow, StoreError> {
        const OP: &str = "postgres put_push_config";
        let mut tx = self.begin(OP).await?;
        let outcome = Durable::<Postgres>::put_push_config(&mut tx, task_id, id, &config).await;
        settle(tx, OP, outcome).await
    }

    async fn push_configs(&self, task_id: &str) -> Result<Vec<PushConfigRow>, StoreError> {
        Durable::<Postgres>::push_configs(&self.pool, task_id).await
    }

    async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        const OP: &str = "postgres delete_push_config";
        let mut tx = self.begin(OP).await?;
        let outcome = Durable::<Postgres>::delete_push_config(&mut tx, task_id, id).await;
        settle(tx, OP, outcome).await
    }

    async fn notify(&self, notification: &Notification) -> Result<(), StoreError> {
        PgNotifications::notify(&self.pool, notification).await
    }

    async fn listen(&self) -> Result<Notifications, StoreError> {
        self.notifications.listen(&self.pool).await
    }
}

/// The body of `delete`, inside its transaction: a lease row held by a
/// run (unexpired) refuses it; the lease row is locked first, so a run
/// cannot take it while the records go.
async fn delete_in(tx: &mut Transaction<'static, Postgres>, key: &str) -> Result<u64, StoreError> {
    let err = |e: sqlx::Error| backend("postgres delete", &e);
    let target = format!("key:{key}");
    let held: Option<bool> = sqlx::query_scalar(
        "SELECT expires_at > clock_timestamp() FROM agent_adaptor_thread_leases \
         WHERE target = $1 FOR UPDATE",
    )
    .bind(&target)
    .fetch_optional(&mut **tx)
    .await
    .map_err(|e| {
        if is_lock_timeout(&e) {
            StoreError::Busy {
                target: target.clone(),
            }
        } else {
            err(e)
        }
    })?;
    if held == Some(true) {
        return Err(StoreError::Busy { target });
    }
    sqlx::query("DELETE FROM agent_adaptor_thread_leases WHERE target = $1")
        .bind(&target)
        .execute(&mut **tx)
        .await
        .map_err(err)?;
    sqlx::query("DELETE FROM agent_adaptor_interrupted_runs WHERE key = $1")
        .bind(key)
        .execute(&mut **tx)
        .await
        .map_err(err)?;
    crate::grants::pg_delete_in(tx, key).await?;
    Durable::<Postgres>::delete_key(tx, key).await?;
    // The events go; the head stays, so cursors are never reused.
    sqlx::query("DELETE FROM agent_adaptor_events WHERE key = $1")
        .bind(key)
        .execute(&mut **tx)
        .await
        .map_err(err)?;
    let done = sqlx::query("DELETE FROM agent_adaptor_thread_records WHERE key = $1")
        .bind(key)
        .execute(&mut **tx)
        .await
        .map_err(err)?;
    Ok(done.rows_affected())
}

/// The body of `finalize`, inside its transaction.
async fn finalize_in(
    tx: &mut Transaction<'static, Postgres>,
    request: &FinalizeRequest,
    params: String,
) -> Result<ThreadRecord, StoreError> {
    let err = |e: sqlx::Error| backend("postgres finalize", &e);
    let lease = &request.lease;
    // Lock the lease row: a takeover (the acquire upsert) now waits for
    // this transaction, and the expiry is checked on the row's latest
    // version after any wait.
    let held: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM agent_adaptor_thread_leases \
         WHERE target = $1 AND owner = $2 AND token = $3 AND expires_at > clock_timestamp() \
         FOR UPDATE",
    )
    .bind(&lease.target)
    .bind(&lease.owner)
    .bind(&lease.token)
    .fetch_optional(&mut **tx)
    .await
    .map_err(err)?;
    if held.is_none() {
        return Err(StoreError::LeaseLost {
            target: lease.target.clone(),
        });
    }
    let record = &request.record;
    let occupied: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM agent_adaptor_thread_records WHERE key = $1 AND status = 'active' \
         FOR UPDATE",
    )
    .bind(&record.key)
    .fetch_optional(&mut **tx)
    .await
    .map_err(err)?;
    if request.require_key_absent && occupied.is_some() {
        return Err(StoreError::AlreadyExists {
            key: record.key.clone(),
        });
    }
    if occupied.is_some() {
        sqlx::query(
            "UPDATE agent_adaptor_thread_records \
             SET status = 'archived', updated_at = clock_timestamp() \
             WHERE key = $1 AND status = 'active'",
        )
        .bind(&record.key)
        .execute(&mut **tx)
        .await
        .map_err(err)?;
    }
    let sql = format!(
        "INSERT INTO agent_adaptor_thread_records \
         (id, key, status, driver_type, fingerprint, codec, params, previous_id, \
          created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, clock_timestamp()) \
         RETURNING {RECORD_COLUMNS}"
    );
    let row = sqlx::query(&sql)
        .bind(&record.id)
        .bind(&record.key)
        .bind(status_str(RecordStatus::Active))
        .bind(&record.driver_type)
        .bind(&record.fingerprint)
        .bind(&record.codec)
        .bind(params)
        .bind(&record.previous_id)
        .bind(record.created_at)
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| match unique_violation(&e) {
            // Another writer made the key active concurrently (it cannot
            // have held this key's lease): the caller lost the race.
            Some(ONE_ACTIVE_INDEX) if request.require_key_absent => StoreError::AlreadyExists {
                key: record.key.clone(),
            },
            Some(ONE_ACTIVE_INDEX) => StoreError::Busy {
                target: lease.target.clone(),
            },
            _ => err(e),
        })?;
    decode(&row)
}
