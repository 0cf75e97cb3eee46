//! # agent-adaptor-store
//!
//! Durable [`ThreadStore`]s for agent-adaptor threads, over `sqlx`:
//!
//! * [`SqliteStore`] — the embedded default: one file with a rollback
//!   journal (not WAL: its memory-mapped `-shm` can SIGBUS), schema
//!   migrations embedded in the binary and applied at open. Several
//!   processes may open the same file: every lease check and every
//!   finalize runs inside a `BEGIN IMMEDIATE` transaction, so the database,
//!   not an in-process mutex, is the source of truth.
//! * [`PgStore`] — for hosts that outgrow one machine: several processes on
//!   several hosts share threads. Leases are rows with an expiry taken from
//!   the server's clock (so a crashed host's lease is taken over once it
//!   expires, whatever the hosts' clocks say); finalize locks the lease row
//!   with `SELECT … FOR UPDATE` inside its transaction.
//!
//! Both implement the contract of [`agent_adaptor_core::thread::store`]:
//! `finalize` is atomic (it validates owner + token + unexpired lease,
//! archives the key's active record and inserts the new one, or writes
//! nothing), `resolve` returns the active record or, when asked, the newest
//! archived one, all times are UTC, and errors are typed [`StoreError`]s.
//! A `Backend` error carries the backend's message but never a connection
//! string or password.
//!
//! ```
//! use std::sync::Arc;
//! use agent_adaptor_core::{Agent, Runner, scripted::ScriptedDriver};
//! use agent_adaptor_store::SqliteStore;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let dir = tempfile::tempdir().unwrap();
//! let store = SqliteStore::open(dir.path().join("threads.db")).await.unwrap();
//! let agent = Agent::builder(ScriptedDriver::resumable_reply("hi", "session-1"))
//!     .thread_store(Arc::new(store))
//!     .build()
//!     .unwrap();
//! agent.thread("tenant-7/conversation-42").run("first turn").await.unwrap();
//! # }
//! ```
//!
//! The [`suite`] module is the shared conformance suite for any
//! `ThreadStore` (this crate runs it against core's `MemoryStore`, SQLite
//! and PostgreSQL); [`thread_store_suite!`] turns it into one test per case.
//!
//! ## Schema
//!
//! Both stores keep these tables (SQL in `migrations/`, embedded and
//! applied at open/connect under a lock, version recorded in
//! `agent_adaptor_schema_migrations`; a database newer than the build is
//! refused):
//!
//! | table | rows |
//! |---|---|
//! | `agent_adaptor_thread_records` | `seq` (insertion order), `id`, `key` (verbatim), `status` (`active`/`archived`), `driver_type`, `fingerprint`, `codec`, `params` (JSON object), `previous_id`, `created_at`, `updated_at`; a partial unique index allows one `active` row per key |
//! | `agent_adaptor_thread_leases` | `target` (`key:<thread key>`), `owner`, `token` (new on every acquisition), `expires_at`, `prompt` and `acquired_at` (kept by `acquire_run_lease`; v2) |
//! | `agent_adaptor_interrupted_runs` | `seq`, `key`, `run_id`, `prompt`, `started_at`, `interrupted_at`: leases that `recover_instance` took back from a dead process (v2) |
//! | `agent_adaptor_thread_tool_grants` | `key`, `tool`, `granted_at`: the thread policy, tools always allowed per key (v4) |
//! | `agent_adaptor_approvals` | `id`, `key`, `run_id`, `holder` (the run's lease owner), `principal`, `request` (JSON), `created_at`, `deadline`, `state` (`pending`/`answered`/`expired`), `answer` (JSON), `decided_at`: approvals any host may list and answer once; recovering the holder's lease expires them (v5) |
//! | `agent_adaptor_tasks` | `id`, `context_id`, `key`, `principal`, `state`, `terminal`, `holder`, `snapshot` (JSON), `seq` (the newest update folded in), `cancel_requested_at`, `created_at`, `updated_at`: bridge tasks; listings page by `(updated_at, id)` keyset with opaque tokens (v5) |
//! | `agent_adaptor_task_updates` | `task_id`, `seq` (1, 2, 3 … per task), `body` (JSON), `at`: each task's update log (v5) |
//! | `agent_adaptor_task_push_configs` | `task_id`, `id`, `config` (JSON), `created_at`: webhooks per task (v5) |
//! | `agent_adaptor_schema_migrations` | applied versions |
//!
//! SQLite stores times as INTEGER microseconds since the Unix epoch (UTC)
//! from the process clock, JSON as TEXT; PostgreSQL as `TIMESTAMPTZ` from
//! the server's `clock_timestamp()` (approval deadlines and lease expiry
//! are judged on it), JSON as `JSONB`. TTLs are clamped to
//! [`MAX_LEASE_TTL`].
//!
//! Notifications between hosts: PostgreSQL sends
//! `pg_notify('agent_adaptor', 'topic:id')` and each store value that
//! listens keeps one `LISTEN` connection (reopened with backoff when lost;
//! what was sent meanwhile is missed, so waiters also poll). SQLite is
//! single-host: its notifications reach the listeners of the same store
//! value only.
//! PostgreSQL cannot hold NUL characters in text: a key or param containing
//! one is a `Backend` error there.
//!
//! ## Testing
//!
//! `cargo test -p agent-adaptor-store` runs the suite against
//! `MemoryStore` and SQLite, the SQLite crash loop (50 worker processes
//! killed with SIGKILL mid-finalize), a two-process SQLite race, SQLite
//! under faults (a full file, writes failing half way, a truncated `-shm`
//! in a worker process) and lease recovery from a SIGKILLed worker. The
//! PostgreSQL tests (`tests/postgres.rs`, `tests/proof_postgres.rs`) are
//! compiled only with the `postgres-tests` feature, and with it on they
//! **fail** when `PG_TEST_URL` is unset — no silent skip. `scripts/test`
//! turns the feature on and runs the tests under `scripts/with-postgres`,
//! which starts a throwaway server and exports `PG_TEST_URL`:
//!
//! ```text
//! bash scripts/with-postgres cargo test -p agent-adaptor-store --features postgres-tests
//! ```
//!
//! The `store_worker` binary is the worker those process tests spawn; it is
//! not a user-facing tool.
//!
//! ## Features
//!
//! | feature | turns on |
//! |---|---|
//! | `sqlite` (default) | `SqliteStore` (`sqlx/sqlite`) |
//! | `postgres` (default) | `PgStore` (`sqlx/postgres`) |
//! | `postgres-tests` | `postgres` and the PostgreSQL integration tests |
//!
//! The [`suite`], [`MemoryStore`] and the re-exported store contract are
//! always here. The `agent-adaptor` facade turns on only the backend the
//! host asks for.
//!
//! This crate owns the schemas and SQL of the durable stores. It must not
//! change the `ThreadStore` contract (core owns it) nor name a driver.
#![forbid(unsafe_code)]

#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod durable;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod error;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod events;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod grants;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod pool;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod record;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod recovery;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_tx;
pub mod suite;

pub use agent_adaptor_core::thread::store::InterruptedRun;
pub use agent_adaptor_core::thread::{
    FinalizeRequest, Lease, MemoryStore, RecordStatus, StoreError, ThreadRecord, ThreadStore,
};
#[cfg(feature = "postgres")]
pub use postgres::{PgConfig, PgStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{Durability, SqliteConfig, SqliteStore};

/// The longest lease TTL the SQL stores honour; longer TTLs are clamped to
/// it (100 years), so `Duration::MAX` means "until released".
pub const MAX_LEASE_TTL: std::time::Duration =
    std::time::Duration::from_secs(100 * 365 * 24 * 60 * 60);
