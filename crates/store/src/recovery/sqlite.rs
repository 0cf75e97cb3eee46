//! Lease recovery in SQLite.

use agent_adaptor_core::thread::StoreError;
use agent_adaptor_core::thread::store::InterruptedRun;
use sqlx::sqlite::{SqlitePool, SqliteRow};
use sqlx::{Row, Sqlite, Transaction};

use super::{Recovered, Stale, interrupted, owners};
use crate::durable::Durable;
use crate::error::backend;
use crate::sqlite::time;

/// Lease recovery for SQLite, inside its write transaction: delete the
/// `stale` leases (a dead incarnation's: owner starts with `dead`, not
/// with `alive`; or every expired one on a thread key), record them and
/// expire their owners' pending approvals. Prefixes are compared with
/// `substr`, not `LIKE`, so an instance id holding `%` or `_` matches only
/// itself.
pub(crate) async fn sqlite_recover_in(
    tx: &mut Transaction<'static, Sqlite>,
    stale: Stale<'_>,
    now: i64,
) -> Result<Vec<InterruptedRun>, StoreError> {
    const OP: &str = "sqlite recover leases";
    let err = |e: sqlx::Error| backend(OP, &e);
    let query = match stale {
        Stale::Instance((dead, alive)) => sqlx::query(
            "DELETE FROM agent_adaptor_thread_leases \
             WHERE substr(owner, 1, length(?1)) = ?1 AND substr(owner, 1, length(?2)) <> ?2 \
             RETURNING target, owner, prompt, COALESCE(acquired_at, ?3) AS started_at",
        )
        .bind(dead)
        .bind(alive),
        Stale::Expired => sqlx::query(
            "DELETE FROM agent_adaptor_thread_leases \
             WHERE substr(target, 1, 4) = 'key:' AND expires_at <= ?1 \
             RETURNING target, owner, prompt, COALESCE(acquired_at, ?1) AS started_at",
        ),
        Stale::Target(_) => sqlx::query(
            "DELETE FROM agent_adaptor_thread_leases \
             WHERE target = ?2 AND expires_at <= ?1 \
             RETURNING target, owner, prompt, COALESCE(acquired_at, ?1) AS started_at",
        ),
    };
    let query = match stale {
        Stale::Target(target) => query.bind(now).bind(target),
        _ => query.bind(now),
    };
    let rows = query.fetch_all(&mut **tx).await.map_err(err)?;
    let leases = rows
        .iter()
        .map(|row: &SqliteRow| {
            let target: String = row.try_get("target").map_err(err)?;
            let started_at = time(&target, row.try_get("started_at").map_err(err)?)?;
            Ok((
                target,
                row.try_get("owner").map_err(err)?,
                row.try_get("prompt").map_err(err)?,
                started_at,
            ))
        })
        .collect::<Result<Vec<Recovered>, StoreError>>()?;
    let at = time("recovery", now)?;
    Durable::<Sqlite>::expire_held_by(tx, &owners(&leases), at).await?;
    let runs = interrupted(leases, at);
    for run in &runs {
        sqlx::query(
            "INSERT INTO agent_adaptor_interrupted_runs \
             (key, run_id, prompt, started_at, interrupted_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .bind(&run.key)
        .bind(&run.run_id)
        .bind(&run.prompt)
        .bind(run.started_at.timestamp_micros())
        .bind(now)
        .execute(&mut **tx)
        .await
        .map_err(err)?;
    }
    Ok(runs)
}

/// `interrupted_runs` for SQLite.
pub(crate) async fn sqlite_interrupted_runs(
    pool: &SqlitePool,
    key: &str,
) -> Result<Vec<InterruptedRun>, StoreError> {
    let err = |e: sqlx::Error| backend("sqlite interrupted_runs", &e);
    let rows = sqlx::query(
        "SELECT key, run_id, prompt, started_at, interrupted_at \
         FROM agent_adaptor_interrupted_runs WHERE key = ?1 ORDER BY seq",
    )
    .bind(key)
    .fetch_all(pool)
    .await
    .map_err(err)?;
    rows.iter()
        .map(|row| {
            let run_id: String = row.try_get("run_id").map_err(err)?;
            Ok(InterruptedRun {
                key: row.try_get("key").map_err(err)?,
                prompt: row.try_get("prompt").map_err(err)?,
                started_at: time(&run_id, row.try_get("started_at").map_err(err)?)?,
                interrupted_at: time(&run_id, row.try_get("interrupted_at").map_err(err)?)?,
                run_id,
            })
        })
        .collect()
}
