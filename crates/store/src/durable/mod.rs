//! The rows hosts share (schema v5; see
//! [`durable`](agent_adaptor_core::thread::durable)) in SQL: approvals,
//! bridge tasks with their update logs, push configurations. The bodies
//! are written once, generic over the backend (`sql.rs`); the [`Clock`]
//! says how each keeps time: SQLite as INTEGER microseconds from the
//! process clock, PostgreSQL as `TIMESTAMPTZ` from the server's
//! `clock_timestamp()`.
//!
//! Notifications: PostgreSQL's are in `listen.rs`; SQLite's stay in the
//! process ([`Local`]).

#[cfg(feature = "postgres")]
pub(crate) mod listen;
pub(crate) mod sql;

pub(crate) use sql::Durable;

use agent_adaptor_core::thread::StoreError;
use agent_adaptor_core::thread::durable::{NOTIFICATION_CAPACITY, Notification, Notifications};
use chrono::{DateTime, Utc};
use tokio::sync::broadcast;

use crate::events::sql::Dialect;

/// How a backend keeps time in the durable tables.
pub(crate) trait Clock: Dialect {
    /// A time as a column holds it.
    type Time: Send + Sync + Unpin + Copy + 'static;

    /// The statement reading the store's clock, if the server has one
    /// (`None`: the process clock).
    const NOW: Option<&'static str>;

    /// `at` as a column holds it.
    fn time(at: DateTime<Utc>) -> Self::Time;

    /// A column's time; out of range is a corrupt row.
    fn from_time(what: &str, at: Self::Time) -> Result<DateTime<Utc>, StoreError>;

    /// `sql` (PostgreSQL's dialect: `$N`, `::jsonb`, `::text`) for this
    /// backend.
    fn durable_sql(sql: &str) -> String;
}

#[cfg(feature = "sqlite")]
impl Clock for sqlx::Sqlite {
    type Time = i64;
    const NOW: Option<&'static str> = None;

    fn time(at: DateTime<Utc>) -> i64 {
        at.timestamp_micros()
    }

    fn from_time(what: &str, at: i64) -> Result<DateTime<Utc>, StoreError> {
        DateTime::from_timestamp_micros(at)
            .ok_or_else(|| StoreError::Corrupt(format!("{what}: timestamp {at} out of range")))
    }

    /// JSON is TEXT in SQLite: the casts go.
    fn durable_sql(sql: &str) -> String {
        Self::sql(&sql.replace("::jsonb", "").replace("::text", "")).into_owned()
    }
}

#[cfg(feature = "postgres")]
impl Clock for sqlx::Postgres {
    type Time = DateTime<Utc>;
    const NOW: Option<&'static str> = Some("SELECT clock_timestamp()");

    fn time(at: DateTime<Utc>) -> DateTime<Utc> {
        at
    }

    fn from_time(_: &str, at: DateTime<Utc>) -> Result<DateTime<Utc>, StoreError> {
        Ok(at)
    }

    fn durable_sql(sql: &str) -> String {
        sql.to_owned()
    }
}

/// Notifications within one process: what SQLite offers (it is
/// single-host), shared by the clones of a store value.
#[derive(Clone)]
pub(crate) struct Local(broadcast::Sender<Notification>);

impl Default for Local {
    fn default() -> Self {
        Local(broadcast::Sender::new(NOTIFICATION_CAPACITY))
    }
}

impl Local {
    /// Deliver `notification` to this store value's listeners.
    pub(crate) fn notify(&self, notification: &Notification) -> Result<(), StoreError> {
        notification.check()?;
        // No listener is not an error: nobody waits.
        let _ = self.0.send(notification.clone());
        Ok(())
    }

    /// A new listener.
    pub(crate) fn listen(&self) -> Notifications {
        self.0.subscribe()
    }
}
