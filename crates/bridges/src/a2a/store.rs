//! The in-memory task store: bounded, with a time-to-live for finished tasks.
//!
//! Each task is a [`TaskSlot`]: the current [`Task`] snapshot plus a
//! broadcast of its updates. Every change is applied to the snapshot and
//! broadcast under the slot's lock, so a subscriber that takes the snapshot
//! and a receiver together sees every later change exactly once, in order.
//!
//! A journaled slot (a server with a task store) also collects its changes
//! since the last write, under the same lock, for the write-through in
//! [`durable`](super::durable): the writer takes them together with the
//! snapshot they lead to, so each stored snapshot matches its update log.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use agent_adaptor_core::{ApprovalRequest, RunHandle};
use chrono::{SecondsFormat, Utc};
use tokio::sync::{Notify, broadcast, watch};

use super::push::TaskPush;
use super::rpc::{ErrorCode, RpcError};
use super::types::{
    Artifact, Message, PartContent, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use crate::Principal;

/// Updates buffered per subscriber before it is considered lagging (a
/// lagging subscriber gets a fresh task snapshot instead of the lost items).
const UPDATE_BUFFER: usize = 1024;
/// Messages kept in a task's history (the oldest are dropped).
const HISTORY_LIMIT: usize = 256;

/// The current time as an A2A timestamp (ISO 8601, UTC, milliseconds).
pub(crate) fn now_timestamp() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// One task: its snapshot, its live updates, and the run behind it.
pub(crate) struct TaskSlot {
    pub(crate) id: String,
    pub(crate) context_id: String,
    /// Who created the task: only it may read, answer, cancel or follow it.
    pub(crate) owner: Principal,
    inner: Mutex<Inner>,
    updates: broadcast::Sender<StreamResponse>,
    state: watch::Sender<TaskState>,
    /// Whether changes are collected for the store's write-through.
    journaled: AtomicBool,
    /// Signalled on every collected change.
    changed: Notify,
    /// Set once nothing more will be written (the final change was, or
    /// the write-through gave up or never ran).
    flushed: watch::Sender<bool>,
    /// Push notifications of its status changes, when on.
    push: OnceLock<TaskPush>,
}

struct Inner {
    task: Task,
    run: Option<RunHandle>,
    pending: Option<ApprovalRequest>,
    cancel_requested: bool,
    /// The server is shutting down: a run attached now is cancelled at once.
    closing: bool,
    finished_at: Option<Instant>,
    /// Updates not yet written to the task store (journaled slots only).
    unsaved: Vec<StreamResponse>,
    /// The snapshot changed since the last write.
    dirty: bool,
    /// The run's lease owner, once known.
    holder: Option<String>,
}

/// Changes a journaled slot collected since the last write: its updates,
/// in order, and the snapshot they lead to.
pub(crate) struct Unsaved {
    pub(crate) updates: Vec<StreamResponse>,
    pub(crate) task: Task,
    pub(crate) holder: Option<String>,
}

impl Unsaved {
    /// Whether the snapshot is final.
    pub(crate) fn terminal(&self) -> bool {
        self.task.status.state.is_terminal()
    }

    /// Fold `later` (collected after `self`) into this batch.
    pub(crate) fn merge(&mut self, later: Unsaved) {
        self.updates.extend(later.updates);
        self.task = later.task;
        self.holder = later.holder;
    }
}

/// What a subscriber starts from: the snapshot, then every later update.
pub(crate) struct Subscription {
    pub(crate) snapshot: Task,
    pub(crate) updates: broadcast::Receiver<StreamResponse>,
    pub(crate) state: watch::Receiver<TaskState>,
}

impl TaskSlot {
    /// A submitted task whose history starts with `first`; `journaled`:
    /// collect its changes for a task store.
    pub(crate) fn new(
        id: String,
        context_id: String,
        first: Message,
        owner: Principal,
        journaled: bool,
    ) -> Arc<Self> {
        let task = Task {
            id: id.clone(),
            context_id: context_id.clone(),
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: Some(now_timestamp()),
            },
            artifacts: Vec::new(),
            history: vec![first],
            metadata: None,
        };
        Arc::new(TaskSlot {
            id,
            context_id,
            owner,
            inner: Mutex::new(Inner {
                task,
                run: None,
                pending: None,
                cancel_requested: false,
                closing: false,
                finished_at: None,
                unsaved: Vec::new(),
                dirty: false,
                holder: None,
            }),
            updates: broadcast::channel(UPDATE_BUFFER).0,
            state: watch::channel(TaskState::Submitted).0,
            journaled: AtomicBool::new(journaled),
            changed: Notify::new(),
            flushed: watch::channel(!journaled).0,
            push: OnceLock::new(),
        })
    }

    /// Push every later status change (set before the run starts).
    pub(crate) fn set_push(&self, push: TaskPush) {
        let _ = self.push.set(push);
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current task, with at most `history_length` history messages.
    pub(crate) fn snapshot(&self, history_length: Option<i32>) -> Task {
        let mut task = self.lock().task.clone();
        trim_history(&mut task, history_length);
        task
    }

    /// The current state.
    pub(crate) fn state(&self) -> TaskState {
        *self.state.borrow()
    }

    /// The snapshot and every later update.
    pub(crate) fn subscribe(&self) -> Subscription {
        let inner = self.lock();
        self.subscribe_locked(&inner)
    }

    /// Note a change for the write-through (journaled slots only).
    fn journal(&self, inner: &mut Inner, update: Option<&StreamResponse>) {
        if !self.journaled.load(Ordering::Acquire) {
            return;
        }
        if let Some(u) = update {
            inner.unsaved.push(u.clone());
        }
        inner.dirty = true;
        self.changed.notify_one();
    }

    /// Stop collecting changes (nobody writes them any more).
    pub(crate) fn unjournal(&self) {
        let mut inner = self.lock();
        self.journaled.store(false, Ordering::Release);
        inner.unsaved = Vec::new();
        inner.dirty = false;
        self.flushed.send_replace(true);
    }

    /// The write-through wrote the final change.
    pub(crate) fn mark_flushed(&self) {
        self.flushed.send_replace(true);
    }

    /// Resolves once the task's final change is in the task store (at once
    /// for a task that is not written through).
    pub(crate) async fn flushed(&self) {
        let mut flushed = self.flushed.subscribe();
        let _ = flushed.wait_for(|f| *f).await;
    }

    /// The changes collected since the last call, if any.
    pub(crate) fn take_unsaved(&self) -> Option<Unsaved> {
        let mut inner = self.lock();
        if !inner.dirty {
            return None;
        }
        inner.dirty = false;
        Some(Unsaved {
            updates: std::mem::take(&mut inner.unsaved),
            task: inner.task.clone(),
            holder: inner.holder.clone(),
        })
    }

    /// Resolves after a change was collected (at once if one came since
    /// the last wait).
    pub(crate) async fn unsaved_changed(&self) {
        self.changed.notified().await;
    }

    /// The run's lease owner, once known.
    pub(crate) fn holder(&self) -> Option<String> {
        self.lock().holder.clone()
    }

    /// Resolves once the task no longer waits on approval `id` (answered,
    /// timed out, or the task ended).
    pub(crate) async fn input_settled(&self, id: &str) {
        let mut state = self.state.subscribe();
        loop {
            if self.lock().pending.as_ref().is_none_or(|p| p.id != id) {
                return;
            }
            if state.changed().await.is_err() {
                return;
            }
        }
    }

    fn subscribe_locked(&self, inner: &Inner) -> Subscription {
        Subscription {
            snapshot: inner.task.clone(),
            updates: self.updates.subscribe(),
            state: self.state.subscribe(),
        }
    }

    fn status_locked(&self, inner: &mut Inner, state: TaskState, message: Option<Message>) {
        if inner.task.status.state.is_terminal() {
            return;
        }
        if let Some(m) = &message {
            push_history(&mut inner.task, m.clone());
        }
        let status = TaskStatus {
            state,
            message,
            timestamp: Some(now_timestamp()),
        };
        inner.task.status = status.clone();
        if state.is_terminal() {
            inner.finished_at = Some(Instant::now());
            inner.run = None;
            inner.pending = None;
            inner.holder = None;
        }
        let event = TaskStatusUpdateEvent {
            task_id: self.id.clone(),
            context_id: self.context_id.clone(),
            status,
            metadata: None,
        };
        if let Some(push) = self.push.get() {
            push.status_changed(&event);
        }
        let update = StreamResponse::StatusUpdate(event);
        self.journal(inner, Some(&update));
        // No receiver is not an error: nobody is watching right now.
        let _ = self.updates.send(update);
        self.state.send_replace(state);
    }

    /// Move to `state` (ignored once the task is terminal).
    pub(crate) fn set_status(&self, state: TaskState, message: Option<Message>) {
        let mut inner = self.lock();
        self.status_locked(&mut inner, state, message);
    }

    /// Move to `state` unless the task is already in it.
    pub(crate) fn ensure_status(&self, state: TaskState) {
        let mut inner = self.lock();
        if inner.task.status.state != state {
            self.status_locked(&mut inner, state, None);
        }
    }

    /// Set the task's metadata (before the final status).
    pub(crate) fn set_metadata(&self, metadata: super::types::Metadata) {
        let mut inner = self.lock();
        inner.task.metadata = Some(metadata);
        self.journal(&mut inner, None);
    }

    /// Add or extend an artifact and broadcast the change.
    pub(crate) fn artifact(&self, artifact: Artifact, append: bool, last_chunk: bool) {
        let mut inner = self.lock();
        if inner.task.status.state.is_terminal() {
            return;
        }
        let existing = inner
            .task
            .artifacts
            .iter_mut()
            .find(|a| a.artifact_id == artifact.artifact_id);
        match existing {
            Some(a) if append => append_parts(a, &artifact),
            Some(a) => *a = artifact.clone(),
            None => inner.task.artifacts.push(artifact.clone()),
        }
        let update = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: self.id.clone(),
            context_id: self.context_id.clone(),
            artifact,
            append,
            last_chunk,
            metadata: None,
        });
        self.journal(&mut inner, Some(&update));
        let _ = self.updates.send(update);
    }

    /// Attach the run (cancelling it at once if a cancel came first); its
    /// lease owner becomes the task's holder in the store.
    pub(crate) fn attach_run(&self, run: RunHandle) {
        let mut inner = self.lock();
        if inner.cancel_requested || inner.closing {
            run.cancel();
        }
        if !inner.task.status.state.is_terminal() {
            if let Some(holder) = run.lease_holder() {
                inner.holder = Some(holder.to_owned());
                self.journal(&mut inner, None);
            }
            inner.run = Some(run);
        }
    }

    /// Ask the run to stop. Fails with `TaskNotCancelable` once terminal.
    pub(crate) fn request_cancel(&self) -> Result<(), RpcError> {
        let mut inner = self.lock();
        let state = inner.task.status.state;
        if state.is_terminal() {
            return Err(RpcError::new(
                ErrorCode::TaskNotCancelable,
                format!(
                    "task {:?} is {} and cannot be canceled",
                    self.id,
                    state.as_str()
                ),
            )
            .with_meta("taskId", self.id.as_str()));
        }
        inner.cancel_requested = true;
        if let Some(run) = &inner.run {
            run.cancel();
        }
        Ok(())
    }

    /// True once a client asked to cancel.
    pub(crate) fn cancel_requested(&self) -> bool {
        self.lock().cancel_requested
    }

    /// Park the task on `request`: input-required with `message`.
    pub(crate) fn await_input(&self, request: ApprovalRequest, message: Message) {
        let mut inner = self.lock();
        if inner.task.status.state.is_terminal() {
            return;
        }
        tracing::info!(
            task = %self.id,
            approval = %request.id,
            owner = %self.owner,
            "a2a: approval asked"
        );
        inner.pending = Some(request);
        self.status_locked(&mut inner, TaskState::InputRequired, Some(message));
    }

    /// The approval `request_id` was resolved inside the run (answered, or
    /// timed out): drop it and, if the task still waits, resume working.
    pub(crate) fn approval_resolved(&self, request_id: &str, message: Option<Message>) {
        let mut inner = self.lock();
        if inner.pending.as_ref().is_some_and(|p| p.id == request_id) {
            inner.pending = None;
        }
        if inner.pending.is_none() && inner.task.status.state == TaskState::InputRequired {
            self.status_locked(&mut inner, TaskState::Working, message);
        }
    }

    /// Answer the pending approval with `reply` (the client's message):
    /// `apply` resolves the request; on success the task is working again
    /// and the subscription starts from that state.
    pub(crate) fn answer(
        &self,
        reply: Message,
        apply: impl FnOnce(&ApprovalRequest) -> Result<(), RpcError>,
    ) -> Result<Subscription, RpcError> {
        let mut inner = self.lock();
        let state = inner.task.status.state;
        if state.is_terminal() {
            return Err(RpcError::new(
                ErrorCode::UnsupportedOperation,
                format!(
                    "task {:?} is {} and accepts no further messages",
                    self.id,
                    state.as_str()
                ),
            )
            .with_meta("taskId", self.id.as_str()));
        }
        let Some(pending) = inner.pending.clone() else {
            return Err(RpcError::new(
                ErrorCode::UnsupportedOperation,
                format!(
                    "task {:?} is {} and is not waiting for input; send a new message \
                     (without taskId) to start another task",
                    self.id,
                    state.as_str()
                ),
            )
            .with_meta("taskId", self.id.as_str()));
        };
        apply(&pending)?;
        inner.pending = None;
        push_history(&mut inner.task, reply);
        self.status_locked(&mut inner, TaskState::Working, None);
        Ok(self.subscribe_locked(&inner))
    }

    fn expired(&self, now: Instant, ttl: Duration) -> bool {
        self.lock()
            .finished_at
            .is_some_and(|t| now.duration_since(t) >= ttl)
    }

    fn finished_at(&self) -> Option<Instant> {
        self.lock().finished_at
    }

    /// Cancel the run (server shutdown), also one attached later; true when
    /// the task was still in progress.
    fn close(&self) -> bool {
        let mut inner = self.lock();
        if inner.task.status.state.is_terminal() {
            return false;
        }
        inner.closing = true;
        if let Some(run) = &inner.run {
            run.cancel();
        }
        true
    }

    /// Resolves once the task is in a terminal state.
    pub(crate) async fn ended(&self) {
        let mut state = self.state.subscribe();
        let _ = state.wait_for(|s| s.is_terminal()).await;
    }
}

fn push_history(task: &mut Task, message: Message) {
    task.history.push(message);
    if task.history.len() > HISTORY_LIMIT {
        let excess = task.history.len() - HISTORY_LIMIT;
        task.history.drain(..excess);
    }
}

/// Apply `historyLength` (spec §3.2.4): unset = all, 0 = none, n = last n.
pub(crate) fn trim_history(task: &mut Task, history_length: Option<i32>) {
    if let Some(n) = history_length {
        let keep = usize::try_from(n.max(0)).unwrap_or(0);
        let len = task.history.len();
        if len > keep {
            task.history.drain(..len - keep);
        }
    }
}

/// Append `chunk`'s parts to `artifact`, merging text into a trailing text
/// part so a streamed answer stays one part.
fn append_parts(artifact: &mut Artifact, chunk: &Artifact) {
    for part in &chunk.parts {
        match (artifact.parts.last_mut(), &part.content) {
            (
                Some(super::types::Part {
                    content: PartContent::Text(have),
                    ..
                }),
                PartContent::Text(more),
            ) => have.push_str(more),
            _ => artifact.parts.push(part.clone()),
        }
    }
}

/// Every task, bounded in number; finished tasks expire after a TTL.
pub(crate) struct TaskStore {
    tasks: Mutex<HashMap<String, Arc<TaskSlot>>>,
    max_tasks: usize,
    ttl: Duration,
    closed: AtomicBool,
}

impl TaskStore {
    /// A store of at most `max_tasks` tasks whose finished tasks live `ttl`.
    pub(crate) fn new(max_tasks: usize, ttl: Duration) -> Self {
        TaskStore {
            tasks: Mutex::new(HashMap::new()),
            max_tasks: max_tasks.max(1),
            ttl,
            closed: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<TaskSlot>>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Add a task. When the store is full, expired and then the oldest
    /// finished tasks make room; when every task is still in progress the
    /// insert fails (and nothing is started).
    pub(crate) fn insert(&self, slot: Arc<TaskSlot>) -> Result<(), RpcError> {
        let mut tasks = self.lock();
        if self.closed.load(Ordering::Acquire) {
            return Err(RpcError::new(
                ErrorCode::Internal,
                "the A2A server is shutting down",
            ));
        }
        let now = Instant::now();
        tasks.retain(|_, s| !s.expired(now, self.ttl));
        if tasks.len() >= self.max_tasks {
            let oldest = tasks
                .iter()
                .filter_map(|(id, s)| s.finished_at().map(|t| (t, id.clone())))
                .min();
            match oldest {
                Some((_, id)) => {
                    tasks.remove(&id);
                }
                None => {
                    return Err(RpcError::new(
                        ErrorCode::Internal,
                        format!(
                            "the server is at its limit of {} tasks in progress; retry later",
                            self.max_tasks
                        ),
                    ));
                }
            }
        }
        tasks.insert(slot.id.clone(), slot);
        Ok(())
    }

    /// The task `id`, unless it does not exist or expired.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<TaskSlot>> {
        let mut tasks = self.lock();
        let slot = tasks.get(id)?.clone();
        if slot.expired(Instant::now(), self.ttl) {
            tasks.remove(id);
            return None;
        }
        Some(slot)
    }

    /// The tasks still in progress.
    pub(crate) fn active(&self) -> Vec<Arc<TaskSlot>> {
        self.lock()
            .values()
            .filter(|s| !s.state().is_terminal())
            .cloned()
            .collect()
    }

    /// Number of tasks held (including finished, unexpired ones).
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Server shutdown: refuse new tasks, cancel every run in progress
    /// (a task waiting for input included). Returns the tasks that were in
    /// progress. Idempotent.
    pub(crate) fn close(&self) -> Vec<Arc<TaskSlot>> {
        let tasks = self.lock();
        // Set under the lock: an insert either came before (and is closed
        // here) or sees the flag.
        self.closed.store(true, Ordering::Release);
        tasks.values().filter(|s| s.close()).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::Part;

    fn slot(id: &str) -> Arc<TaskSlot> {
        TaskSlot::new(
            id.into(),
            "ctx".into(),
            Message::user_text("hi"),
            Principal::anonymous(),
            false,
        )
    }

    #[test]
    fn subscribers_see_the_snapshot_then_every_update_in_order() {
        let s = slot("t1");
        let mut sub = s.subscribe();
        assert_eq!(sub.snapshot.status.state, TaskState::Submitted);
        s.set_status(TaskState::Working, None);
        let chunk = |t: &str| Artifact {
            artifact_id: "a".into(),
            parts: vec![Part::text(t)],
            ..Artifact::default()
        };
        s.artifact(chunk("Hel"), false, false);
        s.artifact(chunk("lo"), true, false);
        s.set_status(TaskState::Completed, None);
        s.set_status(TaskState::Failed, None); // ignored: terminal
        let states: Vec<_> = std::iter::from_fn(|| sub.updates.try_recv().ok())
            .map(|u| u.state())
            .collect();
        assert_eq!(
            states,
            [
                Some(TaskState::Working),
                None,
                None,
                Some(TaskState::Completed)
            ]
        );
        assert_eq!(s.snapshot(None).artifact_text(), "Hello");
        assert_eq!(s.state(), TaskState::Completed);
        assert!(s.request_cancel().is_err());
    }

    #[tokio::test]
    async fn a_closed_store_refuses_tasks_and_cancels_a_run_attached_late() {
        use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
        use agent_adaptor_core::{Agent, FailureReason, Runner};
        let store = TaskStore::new(8, Duration::from_secs(3600));
        let early = slot("early");
        store.insert(early.clone()).unwrap();
        store.insert(slot("done")).unwrap();
        store
            .get("done")
            .unwrap()
            .set_status(TaskState::Completed, None);
        let closed = store.close();
        assert_eq!(closed.len(), 1, "only the task in progress");
        assert_eq!(closed[0].id, "early");
        let refused = store.insert(slot("late")).unwrap_err();
        assert_eq!(refused.kind(), ErrorCode::Internal);
        // Its run starts only now (the request was already past the store).
        let agent = Agent::new(ScriptedDriver::new(
            vec![Step::WaitForCancel],
            Ending::Fail("unreachable".into()),
        ));
        let stream = agent.stream("wait");
        early.attach_run(stream.handle());
        let outcome = tokio::time::timeout(Duration::from_secs(30), stream.handle().result())
            .await
            .unwrap();
        let reason = outcome
            .unwrap_err()
            .as_run_error()
            .map(|r| r.reason.clone());
        assert_eq!(reason, Some(FailureReason::Cancelled));
    }

    #[test]
    fn history_length_keeps_the_most_recent_messages() {
        let s = slot("t1");
        s.set_status(
            TaskState::Working,
            Some(Message::agent(vec![Part::text("a")])),
        );
        assert_eq!(s.snapshot(None).history.len(), 2);
        assert_eq!(s.snapshot(Some(1)).history[0].text(), "a");
        assert!(s.snapshot(Some(0)).history.is_empty());
    }

    #[test]
    fn the_store_is_bounded_and_finished_tasks_expire() {
        let store = TaskStore::new(2, Duration::from_secs(3600));
        store.insert(slot("a")).unwrap();
        store.insert(slot("b")).unwrap();
        let err = store.insert(slot("c")).unwrap_err();
        assert_eq!(err.kind(), ErrorCode::Internal);
        store
            .get("a")
            .unwrap()
            .set_status(TaskState::Completed, None);
        store.insert(slot("c")).unwrap();
        assert!(store.get("a").is_none(), "the finished task made room");
        assert_eq!(store.len(), 2);

        let short = TaskStore::new(10, Duration::ZERO);
        short.insert(slot("x")).unwrap();
        assert!(short.get("x").is_some(), "unfinished tasks never expire");
        short.get("x").unwrap().set_status(TaskState::Failed, None);
        assert!(short.get("x").is_none());
    }
}
