//! The `ThreadStore` contract and the in-memory store.
//!
//! A store keeps, per host thread key, the active record (resume state,
//! compatibility fingerprint) plus archived records, and the leases that
//! make one writer at a time the rule. It holds no chat history.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use agent_adaptor_driver::{SessionParams, async_trait};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use tokio::sync::broadcast;

use super::durable::{
    AnswerRefused, ApprovalRow, NOTIFICATION_CAPACITY, NewApproval, NewTask, Notification,
    Notifications, PushConfigRow, TaskChange, TaskPage, TaskQuery, TaskRow, TaskUpdate,
};
use super::event_log::{
    EventPage, EventQuery, NewEvent, Retention, StoredEventRow, check_append, encode_event,
};
use super::memory_durable::Durable;

/// Whether a record is the key's current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordStatus {
    /// The key's current record.
    Active,
    /// Replaced by a newer record.
    Archived,
}

/// One persisted thread state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRecord {
    /// Unique record id.
    pub id: String,
    /// The host's thread key, verbatim.
    pub key: String,
    /// Active or archived.
    pub status: RecordStatus,
    /// The driver type that produced it.
    pub driver_type: String,
    /// The compatibility fingerprint (driver config, model, workspace, codec).
    pub fingerprint: String,
    /// The session codec's name.
    pub codec: String,
    /// The resume state, in the codec's portable form.
    pub params: SessionParams,
    /// The record this one replaced, if any.
    pub previous_id: Option<String>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was last written.
    pub updated_at: DateTime<Utc>,
}

/// A held lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// What is leased (`key:<thread key>`).
    pub target: String,
    /// Who holds it.
    pub owner: String,
    /// A token that changes on every acquisition.
    pub token: String,
    /// When it expires unless renewed.
    pub expires_at: DateTime<Utc>,
}

/// A lease taken by [`ThreadStore::take_run_lease`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenLease {
    /// The lease now held.
    pub lease: Lease,
    /// The run whose expired lease it replaced, recorded as interrupted.
    pub displaced: Option<InterruptedRun>,
}

/// A run whose process died while it held the key's lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptedRun {
    /// The thread key.
    pub key: String,
    /// The run's id (the lease owner's part after its first `/`).
    pub run_id: String,
    /// The prompt the run was given, when its lease kept it.
    pub prompt: Option<String>,
    /// When the run took the lease.
    pub started_at: DateTime<Utc>,
    /// When the lease was recovered.
    pub interrupted_at: DateTime<Utc>,
}

impl InterruptedRun {
    /// The record of a recovered lease on `target` held by `owner`: `None`
    /// unless `target` is a thread key's (`key:<thread key>`). The run id
    /// is `owner`'s part after its first `/` (empty when it has none).
    pub fn from_lease(
        target: &str,
        owner: &str,
        prompt: Option<String>,
        started_at: DateTime<Utc>,
        interrupted_at: DateTime<Utc>,
    ) -> Option<Self> {
        let key = target.strip_prefix("key:")?;
        let run_id = owner.split_once('/').map_or("", |(_, run)| run);
        Some(InterruptedRun {
            key: key.to_owned(),
            run_id: run_id.to_owned(),
            prompt,
            started_at,
            interrupted_at,
        })
    }
}

/// The owner prefixes [`ThreadStore::recover_instance`] works with:
/// `("{instance}@", "{instance}@{epoch}/")`. A lease whose owner starts
/// with the first but not the second belongs to a dead incarnation of the
/// instance. `Invalid` when `instance` is empty or either part holds `@` or
/// `/` (the separators).
pub fn recovery_prefixes(instance: &str, epoch: &str) -> Result<(String, String), StoreError> {
    if instance.is_empty() {
        return Err(StoreError::Invalid("empty instance id".into()));
    }
    for (what, value) in [("instance id", instance), ("epoch", epoch)] {
        if value.contains(['@', '/']) {
            return Err(StoreError::Invalid(format!(
                "{what} {value:?} contains '@' or '/'"
            )));
        }
    }
    Ok((format!("{instance}@"), format!("{instance}@{epoch}/")))
}

/// An atomic commit of a run's new record.
#[derive(Debug, Clone, PartialEq)]
pub struct FinalizeRequest {
    /// The lease on the key (validated: owner, token, unexpired).
    pub lease: Lease,
    /// The new active record for `record.key`.
    pub record: ThreadRecord,
    /// Fail with `AlreadyExists` when the key already has a record (fork).
    pub require_key_absent: bool,
}

/// A thread's policy, kept by the store beside its records: the tools a
/// human chose to always allow in this thread (see
/// [`ApprovalRequest::approve_always`](crate::ApprovalRequest::approve_always)).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadPolicy {
    /// Tool names whose permission requests are approved without asking,
    /// sorted.
    pub always_allowed: Vec<String>,
}

impl ThreadPolicy {
    /// Whether `tool` is always allowed.
    pub fn allows(&self, tool: &str) -> bool {
        self.always_allowed.iter().any(|t| t == tool)
    }
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another owner holds an unexpired lease on the target.
    #[error("thread busy: {target} is leased by another run")]
    Busy {
        /// The leased target.
        target: String,
    },
    /// The lease expired or was taken over.
    #[error("lease lost on {target}")]
    LeaseLost {
        /// The target.
        target: String,
    },
    /// The key already has a record (fork onto an occupied key).
    #[error("thread {key} already exists")]
    AlreadyExists {
        /// The key.
        key: String,
    },
    /// The backend failed.
    #[error("thread store backend: {0}")]
    Backend(String),
    /// An argument the store cannot accept (says which and why).
    #[error("thread store: invalid argument: {0}")]
    Invalid(String),
    /// A stored row does not decode (says which).
    #[error("thread store: corrupt row: {0}")]
    Corrupt(String),
    /// The store does not implement the operation (a third-party store
    /// written before it existed).
    #[error("this thread store cannot {0}")]
    Unsupported(&'static str),
}

/// Where threads live. Implementations must make `finalize` atomic and
/// enforce leases themselves (in-process mutexes are not enough for a
/// store shared by several processes).
#[async_trait]
pub trait ThreadStore: Send + Sync {
    /// The active record of `key` (or its newest archived one, when asked).
    async fn resolve(
        &self,
        key: &str,
        include_archived: bool,
    ) -> Result<Option<ThreadRecord>, StoreError>;

    /// Take the lease on `target` for `owner`: fails with `Busy` while
    /// another owner's lease is unexpired; an expired lease is taken over.
    async fn acquire_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError>;

    /// [`acquire_lease`](Self::acquire_lease), keeping `prompt` with the
    /// lease so that [`recover_instance`](Self::recover_instance) can
    /// record what a dead holder was doing. The stores of this workspace
    /// record an expired lease they take over as
    /// [`take_run_lease`](Self::take_run_lease) does. The default calls
    /// `acquire_lease` (the prompt is not kept).
    async fn acquire_run_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
        prompt: &str,
    ) -> Result<Lease, StoreError> {
        let _ = prompt;
        self.acquire_lease(target, owner, ttl).await
    }

    /// [`acquire_run_lease`](Self::acquire_run_lease) that records what it
    /// takes over: when `target`'s lease has expired, its run is recorded
    /// as an [`InterruptedRun`] and the pending approvals its owner held are
    /// expired, in the same atomic step that takes the lease (as
    /// [`recover_expired`](Self::recover_expired) would), so that no run is
    /// taken over unrecorded between a sweep and an acquisition. The
    /// default says the store cannot.
    async fn take_run_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
        prompt: &str,
    ) -> Result<TakenLease, StoreError> {
        let _ = (target, owner, ttl, prompt);
        Err(StoreError::Unsupported("record lease takeovers"))
    }

    /// Extend a held lease; `LeaseLost` if it expired or changed hands.
    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError>;

    /// Release a lease (idempotent; a stale lease is ignored).
    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError>;

    /// Atomically: check the lease, archive the key's current record, save
    /// the new one as active.
    async fn finalize(&self, request: FinalizeRequest) -> Result<ThreadRecord, StoreError>;

    /// The active record of every key, most recently updated first, at most
    /// `limit` of them (for listings: the CLI's `threads list`, the web
    /// chat's thread list). The default says the store cannot list.
    async fn list(&self, limit: usize) -> Result<Vec<ThreadRecord>, StoreError> {
        let _ = limit;
        Err(StoreError::Backend(
            "this thread store cannot list threads".into(),
        ))
    }

    /// Every record of `key`, active and archived, newest first, at most
    /// `limit` of them (for `threads show`: the sessions a key went
    /// through). The default has the newest record only.
    async fn history(&self, key: &str, limit: usize) -> Result<Vec<ThreadRecord>, StoreError> {
        let newest = self.resolve(key, true).await?;
        Ok(newest.into_iter().take(limit).collect())
    }

    /// Delete every record of `key` (active and archived) and its lease, in
    /// one atomic step, with everything else the store keeps for the key:
    /// its interrupted runs, policy, events, approvals and tasks (with
    /// their updates and push configurations); `Busy` while another owner
    /// holds an unexpired lease on `key:<key>` (a run in progress). Returns
    /// how many records were deleted (0: the key was unknown). The default
    /// says the store cannot delete.
    async fn delete(&self, key: &str) -> Result<u64, StoreError> {
        let _ = key;
        Err(StoreError::Backend(
            "this thread store cannot delete threads".into(),
        ))
    }

    /// Release every lease whose owner starts with `"{instance}@"` but not
    /// with `"{instance}@{epoch}/"` (held by an earlier, dead incarnation
    /// of this instance), expired or not, recording each lease on a
    /// `key:<thread key>` target as an [`InterruptedRun`] (run id: the
    /// owner's part after its first `/`), in one atomic step. Returns the
    /// recorded runs. `Invalid` when `instance` is empty or `instance` or
    /// `epoch` holds `@` or `/` (see [`recovery_prefixes`]). Leases of
    /// other owners are untouched. The pending approvals whose `holder` is
    /// a recovered lease's owner are expired in the same step. The default
    /// says the store cannot.
    async fn recover_instance(
        &self,
        instance: &str,
        epoch: &str,
    ) -> Result<Vec<InterruptedRun>, StoreError> {
        let _ = (instance, epoch);
        Err(StoreError::Backend(
            "this thread store cannot recover leases".into(),
        ))
    }

    /// The interrupted runs recorded for `key`, oldest first (`delete`
    /// removes them with the key's records). The default has none.
    async fn interrupted_runs(&self, key: &str) -> Result<Vec<InterruptedRun>, StoreError> {
        let _ = key;
        Ok(Vec::new())
    }

    /// `key`'s [`ThreadPolicy`] (empty for an unknown key). The default
    /// has none: nothing is always allowed.
    async fn thread_policy(&self, key: &str) -> Result<ThreadPolicy, StoreError> {
        let _ = key;
        Ok(ThreadPolicy::default())
    }

    /// Always allow `tool` in `key` (`allowed`), or stop doing so; returns
    /// whether the policy changed. Independent of the key's records (a
    /// thread's first run may grant before its first record is saved);
    /// [`delete`](Self::delete) removes it with them. `Invalid` for an
    /// empty tool name. The default says the store cannot.
    async fn set_tool_allowed(
        &self,
        key: &str,
        tool: &str,
        allowed: bool,
    ) -> Result<bool, StoreError> {
        let _ = (key, tool, allowed);
        Err(StoreError::Unsupported("keep a thread policy"))
    }

    /// Append `events` of run `run_id` to `key`'s event log, in one atomic
    /// step (all or none), each under the key's next cursor; returns the
    /// cursors, ascending. Cursors grow across runs and are never reused
    /// (not after pruning, not after [`delete`](Self::delete)). `Invalid`
    /// for an empty run id. The default says the store cannot.
    async fn append_events(
        &self,
        key: &str,
        run_id: &str,
        events: &[NewEvent],
    ) -> Result<Vec<u64>, StoreError> {
        let _ = (key, run_id, events);
        Err(StoreError::Unsupported("keep an event log"))
    }

    /// A page of `key`'s event log (see [`EventQuery`]); an unknown key
    /// has an empty log. `Corrupt` when a row does not decode. The default
    /// says the store cannot.
    async fn events(&self, key: &str, query: &EventQuery) -> Result<EventPage, StoreError> {
        let _ = (key, query);
        Err(StoreError::Unsupported("keep an event log"))
    }

    /// Drop the oldest events of `key`'s log that `retention` does not
    /// keep (always a prefix of the log: no holes); returns how many were
    /// dropped. The default says the store cannot.
    async fn prune_events(&self, key: &str, retention: &Retention) -> Result<u64, StoreError> {
        let _ = (key, retention);
        Err(StoreError::Unsupported("keep an event log"))
    }

    /// Recover every lease on a `key:<thread key>` target that has expired,
    /// whoever held it (its host stopped renewing it: it died or lost the
    /// store), recording each as an [`InterruptedRun`] and expiring the
    /// pending approvals it held, in one atomic step. Leases that have not
    /// expired are untouched. [`recover_instance`](Self::recover_instance)
    /// expires the approvals of the leases it recovers the same way. The
    /// default says the store cannot.
    async fn recover_expired(&self) -> Result<Vec<InterruptedRun>, StoreError> {
        Err(StoreError::Unsupported("recover expired leases"))
    }

    /// Keep a new pending approval; `AlreadyExists` (its `key` is the
    /// approval id) when the id is taken. The default says the store
    /// cannot.
    async fn put_approval(&self, approval: NewApproval) -> Result<ApprovalRow, StoreError> {
        let _ = approval;
        Err(StoreError::Unsupported("keep approvals"))
    }

    /// The approval `id`, in whatever state (a pending row whose deadline
    /// passed reads as pending until the next answer or listing expires
    /// it: see [`ApprovalRow::overdue`](super::durable::ApprovalRow::overdue)).
    /// The default says the store cannot.
    async fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, StoreError> {
        let _ = id;
        Err(StoreError::Unsupported("keep approvals"))
    }

    /// `key`'s pending approvals, oldest first (a pending row whose
    /// deadline passed is expired first and not listed). The default says
    /// the store cannot.
    async fn pending_approvals(&self, key: &str) -> Result<Vec<ApprovalRow>, StoreError> {
        let _ = key;
        Err(StoreError::Unsupported("keep approvals"))
    }

    /// Answer approval `id` as `principal`, once: only a `pending` row of
    /// that principal whose deadline has not passed (on the store's clock)
    /// is answered; a passed deadline expires it. The outer error is the
    /// store's, the inner says why the answer was refused. The caller then
    /// [`notify`](Self::notify)s [`TOPIC_APPROVAL`](super::durable::TOPIC_APPROVAL).
    /// The default says the store cannot.
    async fn answer_approval(
        &self,
        id: &str,
        principal: &str,
        answer: Value,
    ) -> Result<Result<ApprovalRow, AnswerRefused>, StoreError> {
        let _ = (id, principal, answer);
        Err(StoreError::Unsupported("keep approvals"))
    }

    /// Expire approval `id` if it is still pending; returns whether it was.
    /// The default says the store cannot.
    async fn expire_approval(&self, id: &str) -> Result<bool, StoreError> {
        let _ = id;
        Err(StoreError::Unsupported("keep approvals"))
    }

    /// Expire approval `id` if it is still pending and its deadline has
    /// passed on the store's clock (the clock
    /// [`answer_approval`](Self::answer_approval) checks it with); returns
    /// whether it was expired now. The default, for a store without a
    /// clock of its own, reads the row and decides on this host's clock.
    async fn expire_overdue_approval(&self, id: &str) -> Result<bool, StoreError> {
        match self.approval(id).await? {
            Some(row) if row.overdue(Utc::now()) => self.expire_approval(id).await,
            _ => Ok(false),
        }
    }

    /// Keep a new task (not terminal, `seq` 0, both times now);
    /// `AlreadyExists` (its `key` is the task id) when the id is taken.
    /// The default says the store cannot.
    async fn create_task(&self, task: NewTask) -> Result<TaskRow, StoreError> {
        let _ = task;
        Err(StoreError::Unsupported("keep tasks"))
    }

    /// Apply `change` to task `id` in one atomic step: the new state,
    /// holder and snapshot, and the update appended under the next
    /// sequence (`seq` grows by one only when `change.update` is some), and
    /// `updated_at` set to now. `Invalid` for an unknown task or one
    /// already terminal. The caller then [`notify`](Self::notify)s
    /// [`TOPIC_TASK`](super::durable::TOPIC_TASK). The default says the
    /// store cannot.
    async fn update_task(&self, id: &str, change: TaskChange) -> Result<TaskRow, StoreError> {
        let _ = (id, change);
        Err(StoreError::Unsupported("keep tasks"))
    }

    /// Task `id`. The default says the store cannot.
    async fn task(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
        let _ = id;
        Err(StoreError::Unsupported("keep tasks"))
    }

    /// Task `id`'s updates after sequence `after`, ascending, at most
    /// `limit`. The default says the store cannot.
    async fn task_updates(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<TaskUpdate>, StoreError> {
        let _ = (id, after, limit);
        Err(StoreError::Unsupported("keep tasks"))
    }

    /// A page of tasks (see [`TaskQuery`]); `Invalid` for a page token
    /// this store did not issue. The default says the store cannot.
    async fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let _ = query;
        Err(StoreError::Unsupported("keep tasks"))
    }

    /// The non-terminal tasks of thread `key` (for a host that recovered
    /// the key's run). The default says the store cannot.
    async fn active_tasks(&self, key: &str) -> Result<Vec<TaskRow>, StoreError> {
        let _ = key;
        Err(StoreError::Unsupported("keep tasks"))
    }

    /// Note a cancel request on task `id` (the first one's time is kept;
    /// a terminal task's is not noted, and `updated_at` does not change);
    /// returns the task, `None` when unknown. The caller then
    /// [`notify`](Self::notify)s [`TOPIC_CANCEL`](super::durable::TOPIC_CANCEL).
    /// The default says the store cannot.
    async fn request_task_cancel(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
        let _ = id;
        Err(StoreError::Unsupported("keep tasks"))
    }

    /// Delete terminal tasks last changed before `before`, with their
    /// updates and push configurations, and the approvals decided
    /// (answered or expired) before `before` on those tasks' threads, in one
    /// atomic step; returns how many tasks. (Other decided approvals go with
    /// their thread's `delete`.) The default says the store cannot.
    async fn prune_tasks(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let _ = before;
        Err(StoreError::Unsupported("keep tasks"))
    }

    /// Register (or replace, same task and id: the configuration changes,
    /// its `created_at` stays) a push configuration; `Invalid` for an
    /// unknown task. The default says the store cannot.
    async fn put_push_config(
        &self,
        task_id: &str,
        id: &str,
        config: Value,
    ) -> Result<PushConfigRow, StoreError> {
        let _ = (task_id, id, config);
        Err(StoreError::Unsupported("keep push configurations"))
    }

    /// Task `task_id`'s push configurations, oldest first (ties by id). The default
    /// says the store cannot.
    async fn push_configs(&self, task_id: &str) -> Result<Vec<PushConfigRow>, StoreError> {
        let _ = task_id;
        Err(StoreError::Unsupported("keep push configurations"))
    }

    /// Delete one push configuration; returns whether it existed. The
    /// default says the store cannot.
    async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        let _ = (task_id, id);
        Err(StoreError::Unsupported("keep push configurations"))
    }

    /// Send `notification` to every host listening on this store (this one
    /// included). `Invalid` for an empty topic, a topic holding `:` or an
    /// id over 1,000 bytes (see [`Notification::check`]). The default
    /// says the store cannot.
    async fn notify(&self, notification: &Notification) -> Result<(), StoreError> {
        let _ = notification;
        Err(StoreError::Unsupported("notify other hosts"))
    }

    /// Listen to every notification sent on this store from now on. The
    /// default says the store cannot.
    async fn listen(&self) -> Result<Notifications, StoreError> {
        Err(StoreError::Unsupported("notify other hosts"))
    }
}

/// `Invalid` for an empty (or blank) tool name: what every store's
/// [`set_tool_allowed`](ThreadStore::set_tool_allowed) checks first.
pub fn check_tool_name(tool: &str) -> Result<(), StoreError> {
    if tool.trim().is_empty() {
        return Err(StoreError::Invalid("an empty tool name".into()));
    }
    Ok(())
}

/// A lease as the memory store holds it: with its run's prompt and start.
pub(super) struct Held {
    pub(super) lease: Lease,
    pub(super) prompt: Option<String>,
    pub(super) started_at: DateTime<Utc>,
}

#[derive(Default)]
pub(super) struct MemoryInner {
    records: Vec<ThreadRecord>,
    pub(super) leases: HashMap<String, Held>,
    pub(super) interrupted: Vec<InterruptedRun>,
    logs: HashMap<String, EventLog>,
    /// Per key: the always-allowed tools.
    policies: HashMap<String, std::collections::BTreeSet<String>>,
    /// Approvals and tasks.
    pub(super) durable: Durable,
}

/// A key's event log in memory: its rows (as the durable stores keep
/// them, JSON text) and its newest cursor ever assigned.
#[derive(Default)]
struct EventLog {
    head: u64,
    rows: std::collections::VecDeque<StoredEventRow>,
}

impl MemoryInner {
    /// Take `target`'s lease unless another owner's lease is unexpired at
    /// `now`.
    fn acquire(
        &mut self,
        target: &str,
        owner: &str,
        ttl: Duration,
        prompt: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Lease, StoreError> {
        if let Some(held) = self.leases.get(target)
            && held.lease.owner != owner
            && held.lease.expires_at > now
        {
            return Err(StoreError::Busy {
                target: target.to_owned(),
            });
        }
        let lease = Lease {
            target: target.to_owned(),
            owner: owner.to_owned(),
            token: crate::id::new_id("lease_"),
            expires_at: expiry(ttl),
        };
        let held = Held {
            lease: lease.clone(),
            prompt: prompt.map(str::to_owned),
            started_at: now,
        };
        self.leases.insert(target.to_owned(), held);
        Ok(lease)
    }
}

/// A store in process memory: for tests and single-process hosts. Its
/// notifications reach the listeners of this store value only.
pub struct MemoryStore {
    inner: Mutex<MemoryInner>,
    notifications: broadcast::Sender<Notification>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore {
            inner: Mutex::default(),
            notifications: broadcast::Sender::new(NOTIFICATION_CAPACITY),
        }
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every record, active and archived (for audits and tests).
    pub fn records(&self) -> Vec<ThreadRecord> {
        self.lock().records.clone()
    }
}

/// Now plus `ttl`, saturating at the latest representable time (a huge TTL
/// means "never expires", not a panic).
fn expiry(ttl: Duration) -> DateTime<Utc> {
    chrono::Duration::from_std(ttl)
        .ok()
        .and_then(|d| Utc::now().checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

#[async_trait]
impl ThreadStore for MemoryStore {
    async fn resolve(
        &self,
        key: &str,
        include_archived: bool,
    ) -> Result<Option<ThreadRecord>, StoreError> {
        let inner = self.lock();
        let active = inner
            .records
            .iter()
            .rev()
            .find(|r| r.key == key && r.status == RecordStatus::Active);
        let found = match active {
            Some(r) => Some(r),
            None if include_archived => inner.records.iter().rev().find(|r| r.key == key),
            None => None,
        };
        Ok(found.cloned())
    }

    async fn acquire_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        self.lock().acquire(target, owner, ttl, None, Utc::now())
    }

    async fn acquire_run_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
        prompt: &str,
    ) -> Result<Lease, StoreError> {
        let taken = self.take_run_lease(target, owner, ttl, prompt).await?;
        Ok(taken.lease)
    }

    async fn take_run_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
        prompt: &str,
    ) -> Result<TakenLease, StoreError> {
        let mut inner = self.lock();
        let now = Utc::now();
        let mut displaced =
            inner.recover_where(|t, held| t == target && held.lease.expires_at <= now);
        let lease = inner.acquire(target, owner, ttl, Some(prompt), now)?;
        Ok(TakenLease {
            lease,
            displaced: displaced.pop(),
        })
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        let mut inner = self.lock();
        let now = Utc::now();
        match inner.leases.get_mut(&lease.target) {
            Some(held) if held.lease.token == lease.token && held.lease.expires_at > now => {
                held.lease.expires_at = expiry(ttl);
                Ok(held.lease.clone())
            }
            _ => Err(StoreError::LeaseLost {
                target: lease.target.clone(),
            }),
        }
    }

    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if inner
            .leases
            .get(&lease.target)
            .is_some_and(|held| held.lease.token == lease.token)
        {
            inner.leases.remove(&lease.target);
        }
        Ok(())
    }

    async fn finalize(&self, request: FinalizeRequest) -> Result<ThreadRecord, StoreError> {
        let mut inner = self.lock();
        let now = Utc::now();
        let lease_ok = inner.leases.get(&request.lease.target).is_some_and(|held| {
            held.lease.token == request.lease.token && held.lease.expires_at > now
        });
        if !lease_ok {
            return Err(StoreError::LeaseLost {
                target: request.lease.target.clone(),
            });
        }
        let key = request.record.key.clone();
        let exists = inner
            .records
            .iter()
            .any(|r| r.key == key && r.status == RecordStatus::Active);
        if request.require_key_absent && exists {
            return Err(StoreError::AlreadyExists { key });
        }
        for r in inner.records.iter_mut() {
            if r.key == key && r.status == RecordStatus::Active {
                r.status = RecordStatus::Archived;
                r.updated_at = now;
            }
        }
        let mut record = request.record;
        record.status = RecordStatus::Active;
        record.updated_at = now;
        inner.records.push(record.clone());
        Ok(record)
    }

    async fn list(&self, limit: usize) -> Result<Vec<ThreadRecord>, StoreError> {
        let inner = self.lock();
        let mut active: Vec<ThreadRecord> = inner
            .records
            .iter()
            .filter(|r| r.status == RecordStatus::Active)
            .cloned()
            .collect();
        active.sort_by_key(|r| std::cmp::Reverse(r.updated_at));
        active.truncate(limit);
        Ok(active)
    }

    async fn history(&self, key: &str, limit: usize) -> Result<Vec<ThreadRecord>, StoreError> {
        let inner = self.lock();
        let mut records: Vec<ThreadRecord> = inner
            .records
            .iter()
            .rev()
            .filter(|r| r.key == key)
            .cloned()
            .collect();
        // The active record first, then the archived ones, newest first.
        records.sort_by_key(|r| r.status != RecordStatus::Active);
        records.truncate(limit);
        Ok(records)
    }

    async fn delete(&self, key: &str) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        let target = format!("key:{key}");
        if inner
            .leases
            .get(&target)
            .is_some_and(|held| held.lease.expires_at > Utc::now())
        {
            return Err(StoreError::Busy { target });
        }
        inner.leases.remove(&target);
        inner.interrupted.retain(|run| run.key != key);
        inner.policies.remove(key);
        inner.durable.delete_key(key);
        if let Some(log) = inner.logs.get_mut(key) {
            log.rows.clear();
        }
        let before = inner.records.len();
        inner.records.retain(|r| r.key != key);
        Ok((before - inner.records.len()) as u64)
    }

    async fn recover_instance(
        &self,
        instance: &str,
        epoch: &str,
    ) -> Result<Vec<InterruptedRun>, StoreError> {
        let (dead, alive) = recovery_prefixes(instance, epoch)?;
        Ok(self.lock().recover_where(|_, held| {
            held.lease.owner.starts_with(&dead) && !held.lease.owner.starts_with(&alive)
        }))
    }

    async fn interrupted_runs(&self, key: &str) -> Result<Vec<InterruptedRun>, StoreError> {
        let inner = self.lock();
        Ok(inner
            .interrupted
            .iter()
            .filter(|run| run.key == key)
            .cloned()
            .collect())
    }

    async fn thread_policy(&self, key: &str) -> Result<ThreadPolicy, StoreError> {
        let inner = self.lock();
        Ok(ThreadPolicy {
            always_allowed: inner
                .policies
                .get(key)
                .map(|tools| tools.iter().cloned().collect())
                .unwrap_or_default(),
        })
    }

    async fn set_tool_allowed(
        &self,
        key: &str,
        tool: &str,
        allowed: bool,
    ) -> Result<bool, StoreError> {
        check_tool_name(tool)?;
        let mut inner = self.lock();
        if allowed {
            Ok(inner
                .policies
                .entry(key.to_owned())
                .or_default()
                .insert(tool.to_owned()))
        } else {
            let Some(tools) = inner.policies.get_mut(key) else {
                return Ok(false);
            };
            let removed = tools.remove(tool);
            if tools.is_empty() {
                inner.policies.remove(key);
            }
            Ok(removed)
        }
    }

    async fn append_events(
        &self,
        key: &str,
        run_id: &str,
        events: &[NewEvent],
    ) -> Result<Vec<u64>, StoreError> {
        check_append(run_id)?;
        let encoded = events
            .iter()
            .map(|e| encode_event(&e.event))
            .collect::<Result<Vec<_>, _>>()?;
        let mut inner = self.lock();
        let log = inner.logs.entry(key.to_owned()).or_default();
        let mut cursors = Vec::with_capacity(events.len());
        for (event, json) in events.iter().zip(encoded) {
            log.head += 1;
            cursors.push(log.head);
            log.rows.push_back(StoredEventRow {
                cursor: log.head,
                run_id: run_id.to_owned(),
                recorded_at: event.recorded_at,
                prompt: event.prompt.clone(),
                event_json: json,
            });
        }
        Ok(cursors)
    }

    async fn events(&self, key: &str, query: &EventQuery) -> Result<EventPage, StoreError> {
        let (until, rows) = {
            let inner = self.lock();
            let Some(log) = inner.logs.get(key) else {
                return EventPage::assemble(query, None, []);
            };
            let last = log.rows.back().map_or(0, |r| r.cursor);
            let (after, until) = query.bounds(last);
            let start = log.rows.partition_point(|r| r.cursor <= after);
            let rows: Vec<StoredEventRow> = log
                .rows
                .range(start..)
                .take_while(|r| until.is_none_or(|u| r.cursor < u))
                .take(query.fetch_limit())
                .cloned()
                .collect();
            (until, rows)
        };
        EventPage::assemble(query, until, rows)
    }

    async fn prune_events(&self, key: &str, retention: &Retention) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        let Some(log) = inner.logs.get_mut(key) else {
            return Ok(0);
        };
        let first_kept = retention.first_kept(log.head).unwrap_or(0);
        let cutoff = retention.cutoff(Utc::now());
        // The newest row too old to keep: it and everything before it go
        // (a prefix, even if clocks made `recorded_at` non-monotonic).
        let aged = cutoff.and_then(|c| {
            log.rows
                .iter()
                .rev()
                .find(|r| r.recorded_at < c)
                .map(|r| r.cursor + 1)
        });
        let keep_from = first_kept.max(aged.unwrap_or(0));
        let drop = log.rows.partition_point(|r| r.cursor < keep_from);
        log.rows.drain(..drop);
        Ok(drop as u64)
    }

    async fn recover_expired(&self) -> Result<Vec<InterruptedRun>, StoreError> {
        Ok(self.lock().recover_expired())
    }

    async fn put_approval(&self, approval: NewApproval) -> Result<ApprovalRow, StoreError> {
        self.lock().durable.put_approval(approval)
    }

    async fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, StoreError> {
        Ok(self.lock().durable.approval(id))
    }

    async fn pending_approvals(&self, key: &str) -> Result<Vec<ApprovalRow>, StoreError> {
        Ok(self.lock().durable.pending_approvals(key))
    }

    async fn answer_approval(
        &self,
        id: &str,
        principal: &str,
        answer: Value,
    ) -> Result<Result<ApprovalRow, AnswerRefused>, StoreError> {
        Ok(self.lock().durable.answer_approval(id, principal, answer))
    }

    async fn expire_approval(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.lock().durable.expire_approval(id))
    }

    async fn expire_overdue_approval(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.lock().durable.expire_overdue_approval(id))
    }

    async fn create_task(&self, task: NewTask) -> Result<TaskRow, StoreError> {
        self.lock().durable.create_task(task)
    }

    async fn update_task(&self, id: &str, change: TaskChange) -> Result<TaskRow, StoreError> {
        self.lock().durable.update_task(id, change)
    }

    async fn task(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
        Ok(self.lock().durable.task(id))
    }

    async fn task_updates(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<TaskUpdate>, StoreError> {
        Ok(self.lock().durable.task_updates(id, after, limit))
    }

    async fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.lock().durable.list_tasks(query)
    }

    async fn active_tasks(&self, key: &str) -> Result<Vec<TaskRow>, StoreError> {
        Ok(self.lock().durable.active_tasks(key))
    }

    async fn request_task_cancel(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
        Ok(self.lock().durable.request_task_cancel(id))
    }

    async fn prune_tasks(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        Ok(self.lock().durable.prune_tasks(before))
    }

    async fn put_push_config(
        &self,
        task_id: &str,
        id: &str,
        config: Value,
    ) -> Result<PushConfigRow, StoreError> {
        self.lock().durable.put_push_config(task_id, id, config)
    }

    async fn push_configs(&self, task_id: &str) -> Result<Vec<PushConfigRow>, StoreError> {
        Ok(self.lock().durable.push_configs(task_id))
    }

    async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        Ok(self.lock().durable.delete_push_config(task_id, id))
    }

    async fn notify(&self, notification: &Notification) -> Result<(), StoreError> {
        notification.check()?;
        // No listener is not an error: nobody waits.
        let _ = self.notifications.send(notification.clone());
        Ok(())
    }

    async fn listen(&self) -> Result<Notifications, StoreError> {
        Ok(self.notifications.subscribe())
    }
}
