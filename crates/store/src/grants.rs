//! The thread policy (`agent_adaptor_thread_tool_grants`, schema v4): the
//! tools always allowed per thread key, for SQLite and PostgreSQL.

use agent_adaptor_core::thread::{StoreError, ThreadPolicy};
use sqlx::Transaction;
#[cfg(feature = "postgres")]
use sqlx::{PgPool, Postgres};
#[cfg(feature = "sqlite")]
use sqlx::{Sqlite, SqlitePool};

use crate::error::backend;
#[cfg(feature = "sqlite")]
use crate::sqlite::now_micros;

/// `thread_policy` for SQLite.
#[cfg(feature = "sqlite")]
pub(crate) async fn sqlite_policy(
    pool: &SqlitePool,
    key: &str,
) -> Result<ThreadPolicy, StoreError> {
    let always_allowed = sqlx::query_scalar(
        "SELECT tool FROM agent_adaptor_thread_tool_grants WHERE key = ?1 ORDER BY tool",
    )
    .bind(key)
    .fetch_all(pool)
    .await
    .map_err(|e| backend("sqlite thread_policy", &e))?;
    Ok(ThreadPolicy { always_allowed })
}

/// The body of `set_tool_allowed` for SQLite, inside the write transaction.
#[cfg(feature = "sqlite")]
pub(crate) async fn sqlite_set_in(
    tx: &mut Transaction<'static, Sqlite>,
    key: &str,
    tool: &str,
    allowed: bool,
) -> Result<bool, StoreError> {
    let query = if allowed {
        sqlx::query(
            "INSERT INTO agent_adaptor_thread_tool_grants (key, tool, granted_at) \
             VALUES (?1, ?2, ?3) ON CONFLICT (key, tool) DO NOTHING",
        )
        .bind(key)
        .bind(tool)
        .bind(now_micros())
    } else {
        sqlx::query("DELETE FROM agent_adaptor_thread_tool_grants WHERE key = ?1 AND tool = ?2")
            .bind(key)
            .bind(tool)
    };
    let done = query
        .execute(&mut **tx)
        .await
        .map_err(|e| backend("sqlite set_tool_allowed", &e))?;
    Ok(done.rows_affected() > 0)
}

/// `thread_policy` for PostgreSQL.
#[cfg(feature = "postgres")]
pub(crate) async fn pg_policy(pool: &PgPool, key: &str) -> Result<ThreadPolicy, StoreError> {
    let always_allowed = sqlx::query_scalar(
        "SELECT tool FROM agent_adaptor_thread_tool_grants WHERE key = $1 ORDER BY tool",
    )
    .bind(key)
    .fetch_all(pool)
    .await
    .map_err(|e| backend("postgres thread_policy", &e))?;
    Ok(ThreadPolicy { always_allowed })
}

/// `set_tool_allowed` for PostgreSQL (one statement).
#[cfg(feature = "postgres")]
pub(crate) async fn pg_set(
    pool: &PgPool,
    key: &str,
    tool: &str,
    allowed: bool,
) -> Result<bool, StoreError> {
    let sql = if allowed {
        "INSERT INTO agent_adaptor_thread_tool_grants (key, tool, granted_at) \
         VALUES ($1, $2, clock_timestamp()) ON CONFLICT (key, tool) DO NOTHING"
    } else {
        "DELETE FROM agent_adaptor_thread_tool_grants WHERE key = $1 AND tool = $2"
    };
    let done = sqlx::query(sql)
        .bind(key)
        .bind(tool)
        .execute(pool)
        .await
        .map_err(|e| backend("postgres set_tool_allowed", &e))?;
    Ok(done.rows_affected() > 0)
}

/// Part of `delete` for PostgreSQL, inside its transaction: the key's
/// grants go with its records.
#[cfg(feature = "postgres")]
pub(crate) async fn pg_delete_in(
    tx: &mut Transaction<'static, Postgres>,
    key: &str,
) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM agent_adaptor_thread_tool_grants WHERE key = $1")
        .bind(key)
        .execute(&mut **tx)
        .await
        .map_err(|e| backend("postgres delete", &e))?;
    Ok(())
}
