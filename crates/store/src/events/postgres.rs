//! The event log's PostgreSQL bodies (run by [`PgStore`](crate::PgStore)
//! inside its transactions; the head row's lock serializes appenders of a key).

use agent_adaptor_core::thread::event_log::StoredEventRow;
use agent_adaptor_core::thread::{EventPage, EventQuery, EventWindow, Retention, StoreError};
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Postgres, QueryBuilder, Row, Transaction};

use super::{
    Batch, INSERT_CHUNK, cursor_of, cursors, cutoff_micros, keep_from, recorded_at, sql_cursor,
};
use crate::error::backend;

/// Append `batch` to `key`'s log: bump the head, insert the rows.
pub(crate) async fn append_in(
    tx: &mut Transaction<'static, Postgres>,
    key: &str,
    run_id: &str,
    batch: &Batch<'_>,
) -> Result<Vec<u64>, StoreError> {
    let err = |e: sqlx::Error| backend("postgres append_events", &e);
    if batch.rows.is_empty() {
        return Ok(Vec::new());
    }
    let last: i64 = sqlx::query_scalar(
        "INSERT INTO agent_adaptor_event_heads (key, last_cursor) VALUES ($1, $2) \
         ON CONFLICT (key) DO UPDATE SET last_cursor = agent_adaptor_event_heads.last_cursor + excluded.last_cursor \
         RETURNING last_cursor",
    )
    .bind(key)
    .bind(batch.len())
    .fetch_one(&mut **tx)
    .await
    .map_err(err)?;
    let mut cursor = last - batch.len();
    for chunk in batch.rows.chunks(INSERT_CHUNK) {
        let mut insert = QueryBuilder::<Postgres>::new(
            "INSERT INTO agent_adaptor_events (key, cursor, run_id, recorded_at, prompt, event) ",
        );
        insert.push_values(chunk, |mut row, (event, json, micros)| {
            cursor += 1;
            row.push_bind(key)
                .push_bind(cursor)
                .push_bind(run_id)
                .push_bind(*micros)
                .push_bind(event.prompt.as_deref())
                .push_bind(json.as_str());
        });
        insert.build().execute(&mut **tx).await.map_err(err)?;
    }
    Ok(cursors(last, batch.len()))
}

/// A page of `key`'s log (two statements for `Tail`: the newest cursor,
/// then the window).
pub(crate) async fn events(
    pool: &PgPool,
    key: &str,
    query: &EventQuery,
) -> Result<EventPage, StoreError> {
    let err = |e: sqlx::Error| backend("postgres events", &e);
    let last = match query.window {
        EventWindow::Tail(_) => {
            let newest: Option<i64> =
                sqlx::query_scalar("SELECT MAX(cursor) FROM agent_adaptor_events WHERE key = $1")
                    .bind(key)
                    .fetch_one(pool)
                    .await
                    .map_err(err)?;
            cursor_of(newest.unwrap_or(0))?
        }
        _ => 0,
    };
    let (after, until) = query.bounds(last);
    let rows = sqlx::query(
        "SELECT cursor, run_id, recorded_at, prompt, event FROM agent_adaptor_events \
         WHERE key = $1 AND cursor > $2 AND cursor < $3 ORDER BY cursor LIMIT $4",
    )
    .bind(key)
    .bind(sql_cursor(after))
    .bind(until.map_or(i64::MAX, sql_cursor))
    .bind(i64::try_from(query.fetch_limit()).unwrap_or(i64::MAX))
    .fetch_all(pool)
    .await
    .map_err(err)?;
    let rows = rows.iter().map(decode).collect::<Result<Vec<_>, _>>()?;
    EventPage::assemble(query, until, rows)
}

fn decode(row: &PgRow) -> Result<StoredEventRow, StoreError> {
    let err = |e: sqlx::Error| StoreError::Corrupt(format!("postgres event row: {e}"));
    let cursor = cursor_of(row.try_get("cursor").map_err(err)?)?;
    Ok(StoredEventRow {
        cursor,
        run_id: row.try_get("run_id").map_err(err)?,
        recorded_at: recorded_at(cursor, row.try_get("recorded_at").map_err(err)?)?,
        prompt: row.try_get("prompt").map_err(err)?,
        event_json: row.try_get("event").map_err(err)?,
    })
}

/// Drop the prefix of `key`'s log that `retention` does not keep.
pub(crate) async fn prune_in(
    tx: &mut Transaction<'static, Postgres>,
    key: &str,
    retention: &Retention,
) -> Result<u64, StoreError> {
    let err = |e: sqlx::Error| backend("postgres prune_events", &e);
    let head: Option<i64> =
        sqlx::query_scalar("SELECT last_cursor FROM agent_adaptor_event_heads WHERE key = $1")
            .bind(key)
            .fetch_optional(&mut **tx)
            .await
            .map_err(err)?;
    let Some(head) = head else { return Ok(0) };
    let newest_aged = match cutoff_micros(retention) {
        None => None,
        Some(cutoff) => {
            let c: Option<i64> = sqlx::query_scalar(
                "SELECT MAX(cursor) FROM agent_adaptor_events WHERE key = $1 AND recorded_at < $2",
            )
            .bind(key)
            .bind(cutoff)
            .fetch_one(&mut **tx)
            .await
            .map_err(err)?;
            c.map(cursor_of).transpose()?
        }
    };
    let from = keep_from(retention, cursor_of(head)?, newest_aged);
    let done = sqlx::query("DELETE FROM agent_adaptor_events WHERE key = $1 AND cursor < $2")
        .bind(key)
        .bind(sql_cursor(from))
        .execute(&mut **tx)
        .await
        .map_err(err)?;
    Ok(done.rows_affected())
}
