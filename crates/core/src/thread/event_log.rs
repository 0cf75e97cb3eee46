//! The durable event log of a thread: every event of every run, in order,
//! under a host cursor that only grows.
//!
//! A store assigns each appended event the key's next cursor (1, 2, 3, …
//! across all runs of the key; never reused, not even after pruning or
//! deleting). Readers page through the log with an [`EventQuery`]; a page
//! is always a contiguous, ascending slice of the query's window, cut by
//! the query's bounds, with the query that continues it.
//!
//! Stores keep each event as its JSON text ([`encode_event`]); a row that
//! does not decode is a [`StoreError::Corrupt`], never skipped.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::store::StoreError;
use crate::event::Event;

/// Default bound on the events of one page.
pub const DEFAULT_MAX_EVENTS: usize = 1_000;
/// Default bound on the bytes (event JSON) of one page.
pub const DEFAULT_MAX_BYTES: usize = 4 * 1024 * 1024;

/// One event as the log holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordedEvent {
    /// The host cursor: strictly increasing per thread key across runs.
    pub cursor: u64,
    /// The run that emitted the event.
    pub run_id: String,
    /// When the recorder took it.
    pub recorded_at: DateTime<Utc>,
    /// The user's prompt, on the first record of a run only (so that a
    /// history can show the user's turns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The event.
    pub event: Event,
}

/// One event to append (the store assigns its cursor).
#[derive(Debug, Clone)]
pub struct NewEvent {
    /// When the recorder took it.
    pub recorded_at: DateTime<Utc>,
    /// The run's prompt, on the run's first record only.
    pub prompt: Option<String>,
    /// The event.
    pub event: Event,
}

impl NewEvent {
    /// `event`, recorded now, without a prompt.
    pub fn now(event: Event) -> Self {
        NewEvent {
            recorded_at: Utc::now(),
            prompt: None,
            event,
        }
    }

    /// The same, carrying the run's `prompt` (for the run's first record).
    #[must_use]
    pub fn with_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = Some(prompt.into());
        self
    }
}

/// Which cursors a query covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventWindow {
    /// Every event with a cursor greater than this one (`Since(0)`: all).
    Since(u64),
    /// Cursors `from..to` (half-open, like a Rust range).
    Range {
        /// The first cursor.
        from: u64,
        /// One past the last cursor.
        to: u64,
    },
    /// The last `n` events of the log.
    Tail(u64),
}

/// A bounded read of a key's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventQuery {
    /// The cursors covered.
    pub window: EventWindow,
    /// At most this many events per page (at least one is returned when
    /// the window holds any; 0 is read as 1).
    pub max_events: usize,
    /// At most this many bytes of event JSON per page; the first event of
    /// a page is returned even when it alone is larger (so paging always
    /// progresses).
    pub max_bytes: usize,
}

impl EventQuery {
    fn new(window: EventWindow) -> Self {
        EventQuery {
            window,
            max_events: DEFAULT_MAX_EVENTS,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }

    /// Events after `cursor`.
    pub fn since(cursor: u64) -> Self {
        Self::new(EventWindow::Since(cursor))
    }

    /// Events with cursors in `from..to`.
    pub fn range(from: u64, to: u64) -> Self {
        Self::new(EventWindow::Range { from, to })
    }

    /// The last `n` events.
    pub fn tail(n: u64) -> Self {
        Self::new(EventWindow::Tail(n))
    }

    /// Bound the page's event count.
    #[must_use]
    pub fn max_events(mut self, n: usize) -> Self {
        self.max_events = n;
        self
    }

    /// Bound the page's bytes of event JSON.
    #[must_use]
    pub fn max_bytes(mut self, n: usize) -> Self {
        self.max_bytes = n;
        self
    }

    /// The window as cursors: `(after, until)` — the page covers cursors
    /// greater than `after` and less than `until` (`None`: no end).
    /// `last` is the key's newest cursor (only `Tail` needs it; stores
    /// look it up for `Tail` windows only).
    pub fn bounds(&self, last: u64) -> (u64, Option<u64>) {
        match self.window {
            EventWindow::Since(c) => (c, None),
            EventWindow::Range { from, to } => (from.saturating_sub(1), Some(to)),
            EventWindow::Tail(n) => (last.saturating_sub(n), Some(last.saturating_add(1))),
        }
    }

    /// How many rows a store should fetch for a page: one more than the
    /// event bound, so that [`EventPage::assemble`] sees whether more follow.
    pub fn fetch_limit(&self) -> usize {
        self.max_events.max(1).saturating_add(1)
    }
}

/// One row as a store read it: cursor, run id, time, prompt, event JSON.
#[derive(Debug, Clone)]
pub struct StoredEventRow {
    /// The cursor.
    pub cursor: u64,
    /// The run id.
    pub run_id: String,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
    /// The run's prompt (first record of a run).
    pub prompt: Option<String>,
    /// The event's JSON text ([`encode_event`]).
    pub event_json: String,
}

/// A page of a key's log.
#[derive(Debug, Clone)]
pub struct EventPage {
    /// Ascending, contiguous in the log (no holes but pruned ones).
    pub events: Vec<RecordedEvent>,
    /// The query that continues this page when the bounds cut it
    /// (`None`: the window was returned to its end as of now).
    pub next: Option<EventQuery>,
}

impl EventPage {
    /// Whether the bounds cut the page (see [`next`](Self::next)).
    pub fn truncated(&self) -> bool {
        self.next.is_some()
    }

    /// The newest cursor on the page, if any.
    pub fn last_cursor(&self) -> Option<u64> {
        self.events.last().map(|e| e.cursor)
    }

    /// Build a page from a store's rows: `rows` are the window's first
    /// rows in ascending order, at most [`EventQuery::fetch_limit`] of
    /// them; `until` is the window's end from [`EventQuery::bounds`]. The
    /// page is cut at the query's event and byte bounds; every row kept
    /// is decoded (`Corrupt` when one does not decode).
    pub fn assemble(
        query: &EventQuery,
        until: Option<u64>,
        rows: impl IntoIterator<Item = StoredEventRow>,
    ) -> Result<EventPage, StoreError> {
        let max_events = query.max_events.max(1);
        let mut events = Vec::new();
        let mut bytes = 0usize;
        let mut cut = false;
        for row in rows {
            let over_bytes = !events.is_empty() && bytes + row.event_json.len() > query.max_bytes;
            if events.len() >= max_events || over_bytes {
                cut = true;
                break;
            }
            bytes += row.event_json.len();
            events.push(RecordedEvent {
                cursor: row.cursor,
                event: decode_event(row.cursor, &row.event_json)?,
                run_id: row.run_id,
                recorded_at: row.recorded_at,
                prompt: row.prompt,
            });
        }
        let next = match (cut, events.last()) {
            (true, Some(last)) => {
                let window = match until {
                    None => EventWindow::Since(last.cursor),
                    Some(to) => EventWindow::Range {
                        from: last.cursor + 1,
                        to,
                    },
                };
                Some(EventQuery { window, ..*query })
            }
            _ => None,
        };
        Ok(EventPage { events, next })
    }
}

/// How much of a key's log to keep. Both limits apply when both are set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    /// Keep at most the newest this many events.
    pub keep_last: Option<u64>,
    /// Drop events recorded longer ago than this.
    pub max_age: Option<Duration>,
}

impl Retention {
    /// Keep everything.
    pub fn keep_all() -> Self {
        Retention::default()
    }

    /// Keep the newest `n` events.
    pub fn keep_last(n: u64) -> Self {
        Retention {
            keep_last: Some(n),
            max_age: None,
        }
    }

    /// The same, also dropping events older than `age`.
    #[must_use]
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = Some(age);
        self
    }

    /// The oldest `recorded_at` kept, as of `now` (`None`: no age limit;
    /// an age beyond the representable range keeps everything).
    pub fn cutoff(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let age = chrono::Duration::from_std(self.max_age?).ok()?;
        now.checked_sub_signed(age)
    }

    /// The lowest cursor kept by `keep_last`, given the key's newest
    /// cursor `last` (`None`: no count limit).
    pub fn first_kept(&self, last: u64) -> Option<u64> {
        let n = self.keep_last?;
        Some(last.saturating_sub(n).saturating_add(1))
    }
}

/// `event` as the JSON text the stores keep.
pub fn encode_event(event: &Event) -> Result<String, StoreError> {
    serde_json::to_string(event)
        .map_err(|e| StoreError::Invalid(format!("event not encodable: {e}")))
}

/// The event of the row at `cursor`, from its JSON text; `Corrupt` when
/// it does not decode.
pub fn decode_event(cursor: u64, json: &str) -> Result<Event, StoreError> {
    serde_json::from_str(json).map_err(|e| StoreError::Corrupt(format!("event {cursor}: {e}")))
}

/// Checks a store runs before an append: a non-empty run id.
pub fn check_append(run_id: &str) -> Result<(), StoreError> {
    if run_id.is_empty() {
        return Err(StoreError::Invalid("empty run id".into()));
    }
    Ok(())
}

#[cfg(test)]
#[path = "event_log_tests.rs"]
mod tests;
