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
