//! The event log in SQL: what the SQLite and PostgreSQL bodies share.
//!
//! Tables (migration v3): `agent_adaptor_event_heads` (per key, the newest
//! cursor ever assigned, so cursors are never reused) and
//! `agent_adaptor_events` (one row per event, primary key `(key, cursor)`,
//! the event as its JSON text, `recorded_at` in UTC microseconds). An
//! append bumps the head and inserts the rows in one transaction: a writer
//! killed mid-append leaves the log as it was (a prefix of the run, never a
//! torn batch or a hole).

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

use agent_adaptor_core::thread::event_log::{Retention, check_append, encode_event};
use agent_adaptor_core::thread::{NewEvent, StoreError};
use chrono::{DateTime, Utc};

/// Rows per `INSERT` statement (6 parameters each: far below both
/// backends' parameter limits).
pub(crate) const INSERT_CHUNK: usize = 500;

/// A batch ready to insert: each event's JSON text and time.
pub(crate) struct Batch<'a> {
    pub(crate) rows: Vec<(&'a NewEvent, String, i64)>,
}

impl<'a> Batch<'a> {
    /// Check the run id and encode every event (before any write).
    pub(crate) fn prepare(run_id: &str, events: &'a [NewEvent]) -> Result<Self, StoreError> {
        check_append(run_id)?;
        let rows = events
            .iter()
            .map(|e| Ok((e, encode_event(&e.event)?, e.recorded_at.timestamp_micros())))
            .collect::<Result<_, StoreError>>()?;
        Ok(Batch { rows })
    }

    /// The batch's size as a cursor increment.
    pub(crate) fn len(&self) -> i64 {
        i64::try_from(self.rows.len()).unwrap_or(i64::MAX)
    }
}

/// The cursors `last - n + 1 ..= last` of an append of `n` whose head is
/// now `last`.
pub(crate) fn cursors(last: i64, n: i64) -> Vec<u64> {
    (last - n + 1..=last).map(|c| c as u64).collect()
}

/// A cursor as SQL holds it (saturating: no log gets near `i64::MAX`).
pub(crate) fn sql_cursor(cursor: u64) -> i64 {
    i64::try_from(cursor).unwrap_or(i64::MAX)
}

/// A stored cursor; a negative one is a corrupt row.
pub(crate) fn cursor_of(cursor: i64) -> Result<u64, StoreError> {
    u64::try_from(cursor).map_err(|_| StoreError::Corrupt(format!("event cursor {cursor}")))
}

/// A stored `recorded_at`; out of range is a corrupt row.
pub(crate) fn recorded_at(cursor: u64, micros: i64) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_micros(micros).ok_or_else(|| {
        StoreError::Corrupt(format!("event {cursor}: timestamp {micros} out of range"))
    })
}

/// The lowest cursor `retention` keeps, given the key's head and the
/// newest cursor recorded before the age cutoff (everything up to it goes:
/// pruning always drops a prefix).
pub(crate) fn keep_from(retention: &Retention, head: u64, newest_aged: Option<u64>) -> u64 {
    let by_count = retention.first_kept(head).unwrap_or(0);
    let by_age = newest_aged.map_or(0, |c| c + 1);
    by_count.max(by_age)
}

/// The age cutoff in microseconds, when the retention has one.
pub(crate) fn cutoff_micros(retention: &Retention) -> Option<i64> {
    retention.cutoff(Utc::now()).map(|t| t.timestamp_micros())
}
