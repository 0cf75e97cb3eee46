//! The event log's SQL bodies, once for both backends: generic over the
//! sqlx database, with its [`Dialect`] supplying what differs (placeholder
//! style, error labels, the affected-row count). The stores run the writes
//! inside their transactions (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: the
//! head row's lock serializes appenders of a key).

use std::borrow::Cow;
use std::fmt::Write;
use std::marker::PhantomData;

use agent_adaptor_core::thread::event_log::StoredEventRow;
use agent_adaptor_core::thread::{EventPage, EventQuery, EventWindow, Retention, StoreError};
use sqlx::{
    ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Row, Transaction, Type,
};

use super::{
    Batch, INSERT_CHUNK, cursor_of, cursors, cutoff_micros, keep_from, recorded_at, sql_cursor,
};
use crate::error::backend;

/// What differs between the backends' event-log SQL.
pub(crate) trait Dialect: Database {
    /// The backend's name in error labels (`sqlite`, `postgres`).
    const LABEL: &'static str;

    /// `sql`, written with PostgreSQL's `$N` placeholders, in this
    /// backend's placeholder style.
    fn sql(sql: &str) -> Cow<'_, str>;

    /// The number of rows a statement changed.
    fn rows_affected(done: &Self::QueryResult) -> u64;
}

#[cfg(feature = "sqlite")]
impl Dialect for sqlx::Sqlite {
    const LABEL: &'static str = "sqlite";

    /// SQLite's numbered placeholders are `?N` (the statements hold no
    /// other `$`: every value is bound).
    fn sql(sql: &str) -> Cow<'_, str> {
        Cow::Owned(sql.replace('$', "?"))
    }

    fn rows_affected(done: &Self::QueryResult) -> u64 {
        done.rows_affected()
    }
}

#[cfg(feature = "postgres")]
impl Dialect for sqlx::Postgres {
    const LABEL: &'static str = "postgres";

    fn sql(sql: &str) -> Cow<'_, str> {
        Cow::Borrowed(sql)
    }

    fn rows_affected(done: &Self::QueryResult) -> u64 {
        done.rows_affected()
    }
}

/// The event log of backend `DB`: `EventLog::<Sqlite>::append_in(..)`.
pub(crate) struct EventLog<DB>(PhantomData<DB>);

impl<DB> EventLog<DB>
where
    DB: Dialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB> + ColumnIndex<DB::Row>,
    for<'q> Option<&'q str>: Encode<'q, DB>,
    for<'q> String: Decode<'q, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    /// An error of operation `op` as a typed backend error.
    fn err(op: &'static str) -> impl Fn(sqlx::Error) -> StoreError {
        move |e| backend(&format!("{} {op}", DB::LABEL), &e)
    }

    /// Append `batch` to `key`'s log: bump the head, insert the rows.
    pub(crate) async fn append_in(
        tx: &mut Transaction<'static, DB>,
        key: &str,
        run_id: &str,
        batch: &Batch<'_>,
    ) -> Result<Vec<u64>, StoreError> {
        let err = Self::err("append_events");
        if batch.rows.is_empty() {
            return Ok(Vec::new());
        }
        // The head qualified by its table: PostgreSQL finds the bare
        // column ambiguous next to `excluded`; SQLite takes either.
        let bump = DB::sql(
            "INSERT INTO agent_adaptor_event_heads (key, last_cursor) VALUES ($1, $2) \
             ON CONFLICT (key) DO UPDATE SET \
             last_cursor = agent_adaptor_event_heads.last_cursor + excluded.last_cursor \
             RETURNING last_cursor",
        );
        let last: i64 = sqlx::query_scalar(&bump)
            .bind(key)
            .bind(batch.len())
            .fetch_one(&mut **tx)
            .await
            .map_err(&err)?;
        let mut cursor = last - batch.len();
        for chunk in batch.rows.chunks(INSERT_CHUNK) {
            let text = insert_sql(chunk.len());
            let sql = DB::sql(&text);
            let mut insert = sqlx::query(&sql);
            for (event, json, micros) in chunk {
                cursor += 1;
                insert = insert
                    .bind(key)
                    .bind(cursor)
                    .bind(run_id)
                    .bind(*micros)
                    .bind(event.prompt.as_deref())
                    .bind(json.as_str());
            }
            insert.execute(&mut **tx).await.map_err(&err)?;
        }
        Ok(cursors(last, batch.len()))
    }

    /// A page of `key`'s log (two statements for `Tail`: the newest cursor,
    /// then the window).
    pub(crate) async fn events(
        pool: &Pool<DB>,
        key: &str,
        query: &EventQuery,
    ) -> Result<EventPage, StoreError> {
        let err = Self::err("events");
        let last = match query.window {
            EventWindow::Tail(_) => {
                let sql = DB::sql("SELECT MAX(cursor) FROM agent_adaptor_events WHERE key = $1");
                let newest: Option<i64> = sqlx::query_scalar(&sql)
                    .bind(key)
                    .fetch_one(pool)
                    .await
                    .map_err(&err)?;
                cursor_of(newest.unwrap_or(0))?
            }
            _ => 0,
        };
        let (after, until) = query.bounds(last);
        let sql = DB::sql(
            "SELECT cursor, run_id, recorded_at, prompt, event FROM agent_adaptor_events \
             WHERE key = $1 AND cursor > $2 AND cursor < $3 ORDER BY cursor LIMIT $4",
        );
        let rows = sqlx::query(&sql)
            .bind(key)
            .bind(sql_cursor(after))
            .bind(until.map_or(i64::MAX, sql_cursor))
            .bind(i64::try_from(query.fetch_limit()).unwrap_or(i64::MAX))
            .fetch_all(pool)
            .await
            .map_err(&err)?;
        let rows = rows
            .iter()
            .map(Self::decode)
            .collect::<Result<Vec<_>, _>>()?;
        EventPage::assemble(query, until, rows)
    }

    /// One stored row; a column that does not decode is a corrupt row.
    fn decode(row: &DB::Row) -> Result<StoredEventRow, StoreError> {
        let err = |e: sqlx::Error| StoreError::Corrupt(format!("{} event row: {e}", DB::LABEL));
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
        tx: &mut Transaction<'static, DB>,
        key: &str,
        retention: &Retention,
    ) -> Result<u64, StoreError> {
        let err = Self::err("prune_events");
        let sql = DB::sql("SELECT last_cursor FROM agent_adaptor_event_heads WHERE key = $1");
        let head: Option<i64> = sqlx::query_scalar(&sql)
            .bind(key)
            .fetch_optional(&mut **tx)
            .await
            .map_err(&err)?;
        let Some(head) = head else { return Ok(0) };
        let newest_aged = match cutoff_micros(retention) {
            None => None,
            Some(cutoff) => {
                let sql = DB::sql(
                    "SELECT MAX(cursor) FROM agent_adaptor_events \
                     WHERE key = $1 AND recorded_at < $2",
                );
                let c: Option<i64> = sqlx::query_scalar(&sql)
                    .bind(key)
                    .bind(cutoff)
                    .fetch_one(&mut **tx)
                    .await
                    .map_err(&err)?;
                c.map(cursor_of).transpose()?
            }
        };
        let from = keep_from(retention, cursor_of(head)?, newest_aged);
        let sql = DB::sql("DELETE FROM agent_adaptor_events WHERE key = $1 AND cursor < $2");
        let done = sqlx::query(&sql)
            .bind(key)
            .bind(sql_cursor(from))
            .execute(&mut **tx)
            .await
            .map_err(&err)?;
        Ok(DB::rows_affected(&done))
    }
}

/// The `INSERT` of `rows` events, one `VALUES` tuple of six placeholders each.
fn insert_sql(rows: usize) -> String {
    let mut sql = String::from(
        "INSERT INTO agent_adaptor_events (key, cursor, run_id, recorded_at, prompt, event) VALUES ",
    );
    for row in 0..rows {
        let p = row * 6;
        let sep = if row == 0 { "" } else { ", " };
        // Writing to a String cannot fail.
        let _ = write!(
            sql,
            "{sep}(${}, ${}, ${}, ${}, ${}, ${})",
            p + 1,
            p + 2,
            p + 3,
            p + 4,
            p + 5,
            p + 6
        );
    }
    sql
}
