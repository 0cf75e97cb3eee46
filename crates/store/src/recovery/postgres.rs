//! Lease recovery in PostgreSQL.

use agent_adaptor_core::thread::StoreError;
use agent_adaptor_core::thread::store::InterruptedRun;
use chrono::{DateTime, Utc};
use sqlx::postgres::{PgPool, PgRow};
use sqlx::{Postgres, Row, Transaction};

use super::{Recovered, Stale, interrupted, owners};
use crate::durable::Durable;
use crate::error::backend;

/// Lease recovery for PostgreSQL, inside its transaction (see the SQLite
/// one; prefixes are compared with `starts_with`; expiry on the server's
/// clock).
pub(crate) async fn pg_recover_in(
    tx: &mut Transaction<'static, Postgres>,
    stale: Stale<'_>,
) -> Result<Vec<InterruptedRun>, StoreError> {
    const OP: &str = "postgres recover leases";
    let err = |e: sqlx::Error| backend(OP, &e);
    let now: DateTime<Utc> = sqlx::query_scalar("SELECT clock_timestamp()")
        .fetch_one(&mut **tx)
        .await
        .map_err(err)?;
    let query = match stale {
        Stale::Instance((dead, alive)) => sqlx::query(
            "DELETE FROM agent_adaptor_thread_leases \
             WHERE starts_with(owner, $2) AND NOT starts_with(owner, $3) \
             RETURNING target, owner, prompt, COALESCE(acquired_at, $1) AS started_at",
        )
        .bind(now)
        .bind(dead)
        .bind(alive),
        Stale::Expired => sqlx::query(
            "DELETE FROM agent_adaptor_thread_leases \
             WHERE starts_with(target, 'key:') AND expires_at <= $1 \
             RETURNING target, owner, prompt, COALESCE(acquired_at, $1) AS started_at",
        )
        .bind(now),
        Stale::Target(target) => sqlx::query(
            "DELETE FROM agent_adaptor_thread_leases \
             WHERE target = $2 AND expires_at <= $1 \
             RETURNING target, owner, prompt, COALESCE(acquired_at, $1) AS started_at",
        )
        .bind(now)
        .bind(target),
    };
    let rows = query.fetch_all(&mut **tx).await.map_err(err)?;
    let leases = rows
        .iter()
        .map(|row: &PgRow| {
            Ok((
                row.try_get("target").map_err(err)?,
                row.try_get("owner").map_err(err)?,
                row.try_get("prompt").map_err(err)?,
                row.try_get("started_at").map_err(err)?,
            ))
        })
        .collect::<Result<Vec<Recovered>, StoreError>>()?;
    Durable::<Postgres>::expire_held_by(tx, &owners(&leases), now).await?;
    let runs = interrupted(leases, now);
    for run in &runs {
        sqlx::query(
            "INSERT INTO agent_adaptor_interrupted_runs \
             (key, run_id, prompt, started_at, interrupted_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&run.key)
        .bind(&run.run_id)
        .bind(&run.prompt)
        .bind(run.started_at)
        .bind(now)
        .execute(&mut **tx)
        .await
        .map_err(err)?;
    }
    Ok(runs)
}

/// `interrupted_runs` for PostgreSQL.
pub(crate) async fn pg_interrupted_runs(
    pool: &PgPool,
    key: &str,
) -> Result<Vec<InterruptedRun>, StoreError> {
    let err = |e: sqlx::Error| backend("postgres interrupted_runs", &e);
    let rows = sqlx::query(
        "SELECT key, run_id, prompt, started_at, interrupted_at \
         FROM agent_adaptor_interrupted_runs WHERE key = $1 ORDER BY seq",
    )
    .bind(key)
    .fetch_all(pool)
    .await
    .map_err(err)?;
    rows.iter()
        .map(|row| {
            Ok(InterruptedRun {
                key: row.try_get("key").map_err(err)?,
                run_id: row.try_get("run_id").map_err(err)?,
                prompt: row.try_get("prompt").map_err(err)?,
                started_at: row.try_get("started_at").map_err(err)?,
                interrupted_at: row.try_get("interrupted_at").map_err(err)?,
            })
        })
        .collect()
}
