//! What several hosts over one store share besides threads: pending
//! approvals, bridge tasks (A2A) with their update logs and push
//! configurations, and notifications between the hosts.
//!
//! These are rows a store keeps for the bridges; core gives them meaning
//! only where a run's lifetime is concerned:
//!
//! * an [`ApprovalRow`] is a pending approval any host may list and answer
//!   ([`ThreadStore::answer_approval`](super::ThreadStore::answer_approval)
//!   is a conditional write: only a `pending`, unexpired row is answered,
//!   once); the host running the agent learns the answer from a
//!   [`Notification`] (or by polling the row) and hands it to the live
//!   [`ApprovalRequest`](crate::ApprovalRequest). Its `holder` is the run's
//!   lease owner: when that run's lease is recovered (its host died), the
//!   row is expired in the same step — never approved late.
//! * a [`TaskRow`] is a bridge task's current snapshot (an opaque JSON
//!   document the bridge owns) with an append-only log of its updates
//!   ([`TaskUpdate`]), so a subscriber on any host reads the snapshot and
//!   then every later update exactly once, in order.
//! * a [`PushConfigRow`] is a webhook registered for a task.
//! * a [`Notification`] is a short message (`topic`, `id`) from one host to
//!   every host listening on the same store: PostgreSQL carries it with
//!   `LISTEN/NOTIFY`; the in-process stores deliver it to listeners of the
//!   same store value only (SQLite stays single-host; waiters there also
//!   poll).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::store::StoreError;

/// Where a durable approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    /// Waiting for an answer.
    Pending,
    /// Answered (see [`ApprovalRow::answer`]).
    Answered,
    /// Its deadline passed, its run ended or its host died: never answered.
    Expired,
}

impl ApprovalState {
    /// The stored name (`pending`, `answered`, `expired`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Answered => "answered",
            ApprovalState::Expired => "expired",
        }
    }

    /// From the stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => ApprovalState::Pending,
            "answered" => ApprovalState::Answered,
            "expired" => ApprovalState::Expired,
            _ => return None,
        })
    }
}

/// A pending (or answered, or expired) approval as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRow {
    /// The approval's id (the bridge's interrupt id; unique).
    pub id: String,
    /// The thread key of the run that asks.
    pub key: String,
    /// The core run id.
    pub run_id: String,
    /// The run's lease owner (`{instance}@{epoch}/{run}`): recovering that
    /// lease expires the row.
    pub holder: String,
    /// Who may answer (an opaque principal digest the bridge chose).
    pub principal: String,
    /// The request as the bridge shows it (opaque JSON).
    pub request: Value,
    /// When it was asked (the store's clock).
    pub created_at: DateTime<Utc>,
    /// When it expires unanswered (then it is denied).
    pub deadline: Option<DateTime<Utc>>,
    /// Where it stands.
    pub state: ApprovalState,
    /// The answer (opaque JSON the bridge chose), once answered.
    pub answer: Option<Value>,
    /// When it was answered or expired.
    pub decided_at: Option<DateTime<Utc>>,
}

/// A new approval to keep (the store sets `created_at`, state `pending`).
#[derive(Debug, Clone, PartialEq)]
pub struct NewApproval {
    /// See [`ApprovalRow::id`].
    pub id: String,
    /// See [`ApprovalRow::key`].
    pub key: String,
    /// See [`ApprovalRow::run_id`].
    pub run_id: String,
    /// See [`ApprovalRow::holder`].
    pub holder: String,
    /// See [`ApprovalRow::principal`].
    pub principal: String,
    /// See [`ApprovalRow::request`].
    pub request: Value,
    /// See [`ApprovalRow::deadline`].
    pub deadline: Option<DateTime<Utc>>,
}

/// Why an answer was not recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerRefused {
    /// No such approval.
    #[error("no such approval")]
    NotFound,
    /// The row's principal is another one.
    #[error("another client's approval")]
    Forbidden,
    /// Already answered.
    #[error("approval already answered")]
    AlreadyAnswered,
    /// Expired (deadline passed, run ended, host died).
    #[error("approval expired")]
    Expired,
}

impl ApprovalRow {
    /// Whether the row is pending with its deadline passed at `now` (it
    /// is expired by the next read or answer).
    pub fn overdue(&self, now: DateTime<Utc>) -> bool {
        self.state == ApprovalState::Pending && self.deadline.is_some_and(|d| d <= now)
    }
}

/// A bridge task's current state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRow {
    /// The task id (unique).
    pub id: String,
    /// The bridge's grouping (A2A: the context id).
    pub context_id: String,
    /// The thread key the task runs in.
    pub key: String,
    /// Who created it (an opaque principal digest): only it may read it.
    pub principal: String,
    /// The bridge's state name (A2A: `TASK_STATE_WORKING`, …).
    pub state: String,
    /// Whether `state` is final (no later update will come).
    pub terminal: bool,
    /// The lease owner of the run behind it, while one runs.
    pub holder: Option<String>,
    /// The snapshot (opaque JSON the bridge owns).
    pub snapshot: Value,
    /// The sequence of the newest update folded into `snapshot` (0: none).
    pub seq: u64,
    /// When a cancel was requested (any host), if one was.
    pub cancel_requested_at: Option<DateTime<Utc>>,
    /// When it was created (the store's clock).
    pub created_at: DateTime<Utc>,
    /// When it last changed (the store's clock).
    pub updated_at: DateTime<Utc>,
}

/// One update of a task, in its log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskUpdate {
    /// 1, 2, 3, … per task.
    pub seq: u64,
    /// The update (opaque JSON the bridge owns).
    pub body: Value,
    /// When it was written (the store's clock).
    pub at: DateTime<Utc>,
}

/// A change to a task: the new snapshot and state, with the update that
/// led there (appended to the task's log under the next sequence, in the
/// same atomic step).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskChange {
    /// The new state name.
    pub state: String,
    /// Whether it is final.
    pub terminal: bool,
    /// The new holder (`None` clears it).
    pub holder: Option<String>,
    /// The new snapshot.
    pub snapshot: Value,
    /// The update to append, if any (a snapshot-only change appends none).
    pub update: Option<Value>,
}

/// Which tasks to list, newest change first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskQuery {
    /// Only this principal's tasks (required by every bridge; `None` lists
    /// all, for operators).
    pub principal: Option<String>,
    /// Only tasks of this context.
    pub context_id: Option<String>,
    /// Only tasks in this state.
    pub state: Option<String>,
    /// Only tasks changed at or after this time.
    pub updated_since: Option<DateTime<Utc>>,
    /// At most this many (the store clamps it to 1..=1000; 0 means 50).
    pub page_size: usize,
    /// Continue after the page that returned this token.
    pub page_token: Option<String>,
}

impl TaskQuery {
    /// The page size the stores use: `page_size` clamped to 1..=1000, 50
    /// for 0.
    pub fn limit(&self) -> usize {
        match self.page_size {
            0 => 50,
            n => n.min(1000),
        }
    }

    /// The position [`page_token`](Self::page_token) continues after:
    /// `(updated_at, id)` of the previous page's last task. `Invalid` for
    /// a token no store issued.
    pub fn after(&self) -> Result<Option<(DateTime<Utc>, String)>, StoreError> {
        self.page_token
            .as_deref()
            .map(decode_page_token)
            .transpose()
    }

    /// Whether `task` matches the filters (not the page position).
    pub fn matches(&self, task: &TaskRow) -> bool {
        self.principal.as_ref().is_none_or(|p| *p == task.principal)
            && self
                .context_id
                .as_ref()
                .is_none_or(|c| *c == task.context_id)
            && self.state.as_ref().is_none_or(|s| *s == task.state)
            && self.updated_since.is_none_or(|t| task.updated_at >= t)
    }
}

const PAGE_TOKEN_PREFIX: &str = "tp1.";

/// The opaque token of the page after `last` (the last task of a page):
/// its change time (microseconds) and id.
pub fn page_token_after(last: &TaskRow) -> String {
    let hex: String = last.id.bytes().map(|b| format!("{b:02x}")).collect();
    format!(
        "{PAGE_TOKEN_PREFIX}{}.{hex}",
        last.updated_at.timestamp_micros()
    )
}

fn decode_page_token(token: &str) -> Result<(DateTime<Utc>, String), StoreError> {
    let invalid = || StoreError::Invalid("a page token this store did not issue".into());
    let rest = token.strip_prefix(PAGE_TOKEN_PREFIX).ok_or_else(invalid)?;
    let (micros, hex) = rest.split_once('.').ok_or_else(invalid)?;
    let micros: i64 = micros.parse().map_err(|_| invalid())?;
    let at = DateTime::from_timestamp_micros(micros).ok_or_else(invalid)?;
    if hex.len() % 2 != 0 || !hex.is_ascii() {
        return Err(invalid());
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| invalid())?;
    let id = String::from_utf8(bytes).map_err(|_| invalid())?;
    Ok((at, id))
}

/// Whether a task changed at `updated_at` with `id` comes after the
/// position `(at, after_id)` in the listing order (newest change first,
/// ties by id ascending).
pub fn listed_after(
    updated_at: DateTime<Utc>,
    id: &str,
    at: DateTime<Utc>,
    after_id: &str,
) -> bool {
    updated_at < at || (updated_at == at && id > after_id)
}

/// One page of tasks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskPage {
    /// The tasks, newest change first (ties: id ascending).
    pub tasks: Vec<TaskRow>,
    /// The token of the next page; `None` on the last one.
    pub next_page_token: Option<String>,
    /// How many tasks match the query in all.
    pub total: u64,
}

/// A webhook registered for a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PushConfigRow {
    /// The task.
    pub task_id: String,
    /// The configuration's id (unique per task).
    pub id: String,
    /// The configuration (opaque JSON the bridge owns: URL, token, …).
    pub config: Value,
    /// When it was registered.
    pub created_at: DateTime<Utc>,
}

/// A message between hosts sharing a store.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Notification {
    /// What it is about: [`TOPIC_APPROVAL`], [`TOPIC_TASK`],
    /// [`TOPIC_CANCEL`], or a bridge's own (no `:`).
    pub topic: String,
    /// Which one (an approval id, a task id …; at most 1,000 bytes).
    pub id: String,
}

impl Notification {
    /// A notification on `topic` about `id`.
    pub fn new(topic: impl Into<String>, id: impl Into<String>) -> Self {
        Notification {
            topic: topic.into(),
            id: id.into(),
        }
    }

    /// `Invalid` for an empty topic, a topic holding `:` or an id over
    /// 1,000 bytes: what every store's
    /// [`notify`](super::ThreadStore::notify) checks first.
    pub fn check(&self) -> Result<(), StoreError> {
        if self.topic.is_empty() || self.topic.contains(':') {
            return Err(StoreError::Invalid(format!(
                "notification topic {:?} is empty or holds ':'",
                self.topic
            )));
        }
        if self.id.len() > 1000 {
            return Err(StoreError::Invalid(format!(
                "notification id of {} bytes (at most 1000)",
                self.id.len()
            )));
        }
        Ok(())
    }

    /// The wire form `topic:id` (PostgreSQL's `NOTIFY` payload).
    pub fn payload(&self) -> String {
        format!("{}:{}", self.topic, self.id)
    }

    /// From the wire form `topic:id`; `None` without a `:`.
    pub fn from_payload(payload: &str) -> Option<Self> {
        let (topic, id) = payload.split_once(':')?;
        Some(Notification::new(topic, id))
    }
}

/// How many notifications a store buffers per listener before the
/// slowest loses the oldest.
pub const NOTIFICATION_CAPACITY: usize = 1024;

/// An approval was answered or expired.
pub const TOPIC_APPROVAL: &str = "approval";
/// A task changed.
pub const TOPIC_TASK: &str = "task";
/// A task's cancel was requested.
pub const TOPIC_CANCEL: &str = "cancel";

/// The receiving end of [`ThreadStore::listen`](super::ThreadStore::listen):
/// every notification sent on the store after the call, from any host.
/// Lagging receivers lose the oldest ones (`RecvError::Lagged`): a waiter
/// re-reads its row then, as it does on a timer anyway.
pub type Notifications = tokio::sync::broadcast::Receiver<Notification>;

/// A new task to keep (the store sets the times; `seq` starts at 0).
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    /// See [`TaskRow::id`].
    pub id: String,
    /// See [`TaskRow::context_id`].
    pub context_id: String,
    /// See [`TaskRow::key`].
    pub key: String,
    /// See [`TaskRow::principal`].
    pub principal: String,
    /// See [`TaskRow::state`].
    pub state: String,
    /// See [`TaskRow::holder`].
    pub holder: Option<String>,
    /// See [`TaskRow::snapshot`].
    pub snapshot: Value,
}
