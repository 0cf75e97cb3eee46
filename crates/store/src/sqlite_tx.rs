//! The bodies of [`SqliteStore`](crate::SqliteStore)'s multi-statement
//! write transactions (`delete`, `finalize`).

use agent_adaptor_core::thread::{FinalizeRequest, RecordStatus, StoreError};
use sqlx::{Sqlite, Transaction};

use crate::durable::Durable;
use crate::error::backend;
use crate::record::status_str;
use crate::sqlite::{RECORD_COLUMNS, now_micros};

/// The body of `delete`, inside the write transaction: refuse while a run
/// holds the key's lease, else drop the lease row, every record and all
/// else the key has (interrupted runs, grants, events, approvals, tasks).
pub(crate) async fn delete_in(
    tx: &mut Transaction<'static, Sqlite>,
    key: &str,
) -> Result<u64, StoreError> {
    let err = |e: sqlx::Error| backend("sqlite delete", &e);
    let target = format!("key:{key}");
    let held: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM agent_adaptor_thread_leases WHERE target = ?1 AND expires_at > ?2",
    )
    .bind(&target)
    .bind(now_micros())
    .fetch_optional(&mut **tx)
    .await
    .map_err(err)?;
    if held.is_some() {
        return Err(StoreError::Busy { target });
    }
    sqlx::query("DELETE FROM agent_adaptor_thread_leases WHERE target = ?1")
        .bind(&target)
        .execute(&mut **tx)
        .await
        .map_err(err)?;
    sqlx::query("DELETE FROM agent_adaptor_interrupted_runs WHERE key = ?1")
        .bind(key)
        .execute(&mut **tx)
        .await
        .map_err(err)?;
    sqlx::query("DELETE FROM agent_adaptor_thread_tool_grants WHERE key = ?1")
        .bind(key)
        .execute(&mut **tx)
        .await
        .map_err(err)?;
    // The events go; the head stays, so cursors are never reused.
    sqlx::query("DELETE FROM agent_adaptor_events WHERE key = ?1")
        .bind(key)
        .execute(&mut **tx)
        .await
        .map_err(err)?;
    Durable::<Sqlite>::delete_key(tx, key).await?;
    let done = sqlx::query("DELETE FROM agent_adaptor_thread_records WHERE key = ?1")
        .bind(key)
        .execute(&mut **tx)
        .await
        .map_err(err)?;
    Ok(done.rows_affected())
}

/// The body of `finalize`, inside the write transaction; the stored
/// `updated_at` (µs). The params are not read back (no `RETURNING` of the
/// row): a large thread would cost SQLite several more copies of them.
pub(crate) async fn finalize_in(
    tx: &mut Transaction<'static, Sqlite>,
    request: &FinalizeRequest,
    params: String,
) -> Result<i64, StoreError> {
    let err = |e: sqlx::Error| backend("sqlite finalize", &e);
    let now = now_micros();
    let lease = &request.lease;
    let held: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM agent_adaptor_thread_leases \
         WHERE target = ?1 AND owner = ?2 AND token = ?3 AND expires_at > ?4",
    )
    .bind(&lease.target)
    .bind(&lease.owner)
    .bind(&lease.token)
    .bind(now)
    .fetch_optional(&mut **tx)
    .await
    .map_err(err)?;
    if held.is_none() {
        return Err(StoreError::LeaseLost {
            target: lease.target.clone(),
        });
    }
    let record = &request.record;
    if request.require_key_absent {
        let occupied: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM agent_adaptor_thread_records WHERE key = ?1 AND status = 'active'",
        )
        .bind(&record.key)
        .fetch_optional(&mut **tx)
        .await
        .map_err(err)?;
        if occupied.is_some() {
            return Err(StoreError::AlreadyExists {
                key: record.key.clone(),
            });
        }
    }
    sqlx::query(
        "UPDATE agent_adaptor_thread_records SET status = 'archived', updated_at = ?2 \
         WHERE key = ?1 AND status = 'active'",
    )
    .bind(&record.key)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(err)?;
    let sql = format!(
        "INSERT INTO agent_adaptor_thread_records ({RECORD_COLUMNS}) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
    );
    sqlx::query(&sql)
        .bind(&record.id)
        .bind(&record.key)
        .bind(status_str(RecordStatus::Active))
        .bind(&record.driver_type)
        .bind(&record.fingerprint)
        .bind(&record.codec)
        .bind(params)
        .bind(&record.previous_id)
        .bind(record.created_at.timestamp_micros())
        .bind(now)
        .execute(&mut **tx)
        .await
        .map_err(err)?;
    Ok(now)
}
