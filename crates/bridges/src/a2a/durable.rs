//! Tasks in a shared [`ThreadStore`]: the write-through of every task
//! change, and reading a task back on any host.
//!
//! The owning host keeps the live [`TaskSlot`] (its subscribers read it
//! without touching the store); one writer per task takes the changes the
//! slot collected since its last write, with the snapshot they lead to,
//! and writes them as one [`TaskChange`] whose update body is the JSON
//! array of those `StreamResponse`s, then notifies [`TOPIC_TASK`]. Writes
//! run beside the run's event loop (never blocking it), keep their order,
//! and the writer ends only after the terminal snapshot is written. A
//! failed write is retried with the changes collected meanwhile; after
//! [`WRITE_ATTEMPTS`] it is logged and kept as the server's
//! [`TaskStoreError`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_adaptor_core::ThreadStore;
use agent_adaptor_core::thread::durable::{NewTask, TOPIC_TASK, TaskChange, TaskRow};
use agent_adaptor_core::thread::store::StoreError;
use serde_json::Value;

use super::rpc::{ErrorCode, RpcError};
use super::store::{TaskSlot, Unsaved, trim_history};
use super::types::{StreamResponse, Task};
use crate::Principal;

/// Attempts of one write before it is given up.
pub(crate) const WRITE_ATTEMPTS: u32 = 8;
/// The first retry's delay (doubled per attempt, at most 5 s).
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Default interval at which followers on other hosts re-read a task when
/// no notification came.
pub const DEFAULT_TASK_POLL: Duration = Duration::from_millis(500);

/// Default time a finished task stays in the task store.
pub const DEFAULT_STORED_TASK_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// How often a server prunes finished tasks from the task store.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// Why the task store did not take a task change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// Creating the task failed: it was refused, nothing started.
    #[error("task {task}: the task store did not keep it: {message}")]
    Create {
        /// The task id.
        task: String,
        /// The store's error.
        message: String,
    },
    /// Writing a change failed after every retry: other hosts see the task
    /// as it was before that change.
    #[error("task {task}: the task store did not take a change: {message}")]
    Write {
        /// The task id.
        task: String,
        /// The store's error.
        message: String,
    },
    /// Pruning finished tasks failed.
    #[error("the task store could not prune finished tasks: {message}")]
    Prune {
        /// The store's error.
        message: String,
    },
    /// Reading tasks failed.
    #[error("the task store could not be read: {message}")]
    Read {
        /// The store's error.
        message: String,
    },
}

/// The server's task store and how it fared.
pub(crate) struct Durable {
    pub(crate) store: Arc<dyn ThreadStore>,
    /// Approvals shared with the other servers.
    pub(crate) desk: crate::desk::Desk,
    pub(crate) poll: Duration,
    /// The first retry's delay of a failed write.
    backoff: Duration,
    /// Cleared when the store says it cannot keep tasks: the server then
    /// keeps them in memory only, as without a store.
    enabled: AtomicBool,
    failures: AtomicU64,
    last_error: Mutex<Option<TaskStoreError>>,
}

impl Durable {
    pub(crate) fn new(store: Arc<dyn ThreadStore>, poll: Duration) -> Self {
        Durable {
            desk: crate::desk::Desk::with_poll(store.clone(), poll),
            store,
            poll: poll.max(Duration::from_millis(10)),
            backoff: FIRST_BACKOFF,
            enabled: AtomicBool::new(true),
            failures: AtomicU64::new(0),
            last_error: Mutex::new(None),
        }
    }

    /// Whether tasks go to the store.
    pub(crate) fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Log `error` and keep it as the last one.
    pub(crate) fn failed(&self, error: TaskStoreError) {
        tracing::error!(%error, "a2a: task store write-through failed");
        self.failures.fetch_add(1, Ordering::Relaxed);
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(error);
    }

    /// How many store operations failed for good.
    pub(crate) fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// The last one.
    pub(crate) fn last_error(&self) -> Option<TaskStoreError> {
        self.last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Keep the new task `slot` (submitted, not started). `Ok(false)`: the
    /// store cannot keep tasks, the server goes on in memory only.
    pub(crate) async fn create(&self, slot: &TaskSlot, key: &str) -> Result<bool, RpcError> {
        if !self.enabled() {
            return Ok(false);
        }
        let task = slot.snapshot(None);
        let new = NewTask {
            id: slot.id.clone(),
            context_id: slot.context_id.clone(),
            key: key.to_owned(),
            principal: slot.owner.digest(),
            state: task.status.state.as_str().to_owned(),
            holder: None,
            snapshot: encode(&task)?,
        };
        match self.store.create_task(new).await {
            Ok(_) => {
                self.notify(&slot.id).await;
                Ok(true)
            }
            Err(StoreError::Unsupported(what)) => {
                if self.enabled.swap(false, Ordering::AcqRel) {
                    tracing::warn!(
                        "a2a: the thread store cannot {what}: tasks stay on this server only"
                    );
                }
                Ok(false)
            }
            Err(e) => {
                let error = TaskStoreError::Create {
                    task: slot.id.clone(),
                    message: e.to_string(),
                };
                self.failed(error.clone());
                Err(RpcError::new(ErrorCode::Internal, error.to_string()))
            }
        }
    }

    /// Tell every host task `id` changed (a lost notification only delays
    /// followers until their next poll).
    pub(crate) async fn notify(&self, id: &str) {
        self.desk.notify(TOPIC_TASK, id).await;
    }

    /// Write `batch` as one change of task `id`.
    async fn write(&self, id: &str, batch: &Unsaved) -> Result<(), StoreError> {
        let snapshot = serde_json::to_value(&batch.task)
            .map_err(|e| StoreError::Invalid(format!("task {id}: {e}")))?;
        let update = if batch.updates.is_empty() {
            None
        } else {
            Some(
                serde_json::to_value(&batch.updates)
                    .map_err(|e| StoreError::Invalid(format!("task {id}: {e}")))?,
            )
        };
        let change = TaskChange {
            state: batch.task.status.state.as_str().to_owned(),
            terminal: batch.terminal(),
            holder: batch.holder.clone(),
            snapshot,
            update,
        };
        self.store.update_task(id, change).await?;
        self.notify(id).await;
        Ok(())
    }

    /// The task `id` as the store holds it, if `principal` created it
    /// (another principal's task is "not found").
    pub(crate) async fn load(
        &self,
        id: &str,
        principal: &Principal,
    ) -> Result<Option<TaskRow>, RpcError> {
        if !self.enabled() {
            return Ok(None);
        }
        let row = match self.store.task(id).await {
            Ok(row) => row,
            Err(StoreError::Unsupported(_)) => return Ok(None),
            Err(e) => return Err(read_error(&e)),
        };
        Ok(row.filter(|r| {
            let mine = r.principal == principal.digest();
            if !mine {
                tracing::warn!(
                    task = id,
                    %principal,
                    "a2a: refused access to another principal's task"
                );
            }
            mine
        }))
    }
}

impl Durable {
    /// Delete the finished tasks last changed more than `keep` ago (with
    /// their updates and push configurations); how many.
    pub(crate) async fn prune(&self, keep: Duration) -> Result<u64, TaskStoreError> {
        let keep = chrono::Duration::from_std(keep).unwrap_or(chrono::Duration::MAX);
        let before = chrono::Utc::now()
            .checked_sub_signed(keep)
            .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC);
        match self.store.prune_tasks(before).await {
            Ok(n) => Ok(n),
            Err(StoreError::Unsupported(_)) => Ok(0),
            Err(e) => Err(TaskStoreError::Prune {
                message: e.to_string(),
            }),
        }
    }
}

/// Prune finished tasks older than `keep` now and every hour, until `stop`
/// (every server sharing the store does: pruning is idempotent).
pub(crate) async fn prune_loop(
    durable: Arc<Durable>,
    keep: Duration,
    stop: tokio_util::sync::CancellationToken,
) {
    loop {
        match durable.prune(keep).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(tasks = n, "a2a: finished tasks pruned from the task store"),
            Err(e) => tracing::warn!(error = %e, "a2a: cannot prune finished tasks"),
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(PRUNE_EVERY) => {}
        }
    }
}

/// Write every change of `slot` through to the store until its terminal
/// snapshot is written (or a write is given up: then the slot stops
/// collecting changes).
pub(crate) async fn write_through(durable: Arc<Durable>, slot: Arc<TaskSlot>) {
    if write_all(&durable, &slot).await {
        slot.mark_flushed();
    } else {
        slot.unjournal();
    }
}

/// [`write_through`]; false when a write was given up.
async fn write_all(durable: &Durable, slot: &TaskSlot) -> bool {
    loop {
        let Some(mut batch) = slot.take_unsaved() else {
            slot.unsaved_changed().await;
            continue;
        };
        let mut attempt = 1;
        let mut backoff = durable.backoff;
        loop {
            match durable.write(&slot.id, &batch).await {
                Ok(()) => break,
                // Unknown, or already final (the host was declared dead and
                // the task failed): nothing later can be written either.
                Err(e @ StoreError::Invalid(_)) => {
                    durable.failed(TaskStoreError::Write {
                        task: slot.id.clone(),
                        message: e.to_string(),
                    });
                    return false;
                }
                Err(e) if attempt >= WRITE_ATTEMPTS => {
                    durable.failed(TaskStoreError::Write {
                        task: slot.id.clone(),
                        message: e.to_string(),
                    });
                    return false;
                }
                Err(e) => {
                    tracing::warn!(task = %slot.id, attempt, error = %e, "a2a: task write failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    attempt += 1;
                    if let Some(later) = slot.take_unsaved() {
                        batch.merge(later);
                    }
                }
            }
        }
        if batch.terminal() {
            return true;
        }
    }
}

/// The task a row holds, with at most `history` history messages.
pub(crate) fn row_task(row: &TaskRow, history: Option<i32>) -> Result<Task, RpcError> {
    let mut task: Task = serde_json::from_value(row.snapshot.clone()).map_err(|e| {
        RpcError::new(
            ErrorCode::Internal,
            format!(
                "task {:?}: the stored snapshot does not decode: {e}",
                row.id
            ),
        )
    })?;
    trim_history(&mut task, history);
    Ok(task)
}

/// The updates one stored update body holds (an array of them).
pub(crate) fn decode_updates(body: &Value) -> Result<Vec<StreamResponse>, serde_json::Error> {
    serde_json::from_value(body.clone())
}

fn encode(task: &Task) -> Result<Value, RpcError> {
    serde_json::to_value(task)
        .map_err(|e| RpcError::new(ErrorCode::Internal, format!("cannot encode the task: {e}")))
}

/// The JSON-RPC error of a failed store read.
pub(crate) fn read_error(e: &StoreError) -> RpcError {
    let error = TaskStoreError::Read {
        message: e.to_string(),
    };
    tracing::warn!(%error, "a2a: task store read failed");
    RpcError::new(ErrorCode::Internal, error.to_string())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU32;

    use agent_adaptor_core::MemoryStore;
    use agent_adaptor_core::driver::async_trait;
    use agent_adaptor_core::thread::durable::{Notification, Notifications, TaskUpdate};
    use agent_adaptor_core::thread::{FinalizeRequest, Lease, ThreadRecord};

    use super::*;
    use crate::a2a::types::{Artifact, Message, Part, TaskState};

    /// A [`MemoryStore`] whose task updates fail `failures` times first.
    struct Flaky {
        inner: MemoryStore,
        failures: AtomicU32,
    }

    const NO: StoreError = StoreError::Unsupported("keep threads");

    #[async_trait]
    impl ThreadStore for Flaky {
        async fn resolve(&self, _: &str, _: bool) -> Result<Option<ThreadRecord>, StoreError> {
            Err(NO)
        }
        async fn acquire_lease(&self, _: &str, _: &str, _: Duration) -> Result<Lease, StoreError> {
            Err(NO)
        }
        async fn renew_lease(&self, _: &Lease, _: Duration) -> Result<Lease, StoreError> {
            Err(NO)
        }
        async fn release_lease(&self, _: &Lease) -> Result<(), StoreError> {
            Err(NO)
        }
        async fn finalize(&self, _: FinalizeRequest) -> Result<ThreadRecord, StoreError> {
            Err(NO)
        }
        async fn create_task(&self, task: NewTask) -> Result<TaskRow, StoreError> {
            self.inner.create_task(task).await
        }
        async fn update_task(&self, id: &str, change: TaskChange) -> Result<TaskRow, StoreError> {
            let left = self.failures.load(Ordering::Acquire);
            if left > 0 {
                self.failures.store(left - 1, Ordering::Release);
                return Err(StoreError::Backend("connection reset".into()));
            }
            self.inner.update_task(id, change).await
        }
        async fn task(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
            self.inner.task(id).await
        }
        async fn task_updates(
            &self,
            id: &str,
            after: u64,
            limit: usize,
        ) -> Result<Vec<TaskUpdate>, StoreError> {
            self.inner.task_updates(id, after, limit).await
        }
        async fn notify(&self, n: &Notification) -> Result<(), StoreError> {
            self.inner.notify(n).await
        }
        async fn listen(&self) -> Result<Notifications, StoreError> {
            self.inner.listen().await
        }
    }

    /// A journaled task over a store whose updates fail `failures` times,
    /// its writer running; three changes, the last one final.
    async fn run(failures: u32) -> (Arc<Durable>, Arc<TaskSlot>) {
        let store = Arc::new(Flaky {
            inner: MemoryStore::new(),
            failures: AtomicU32::new(failures),
        });
        let mut durable = Durable::new(store, DEFAULT_TASK_POLL);
        durable.backoff = Duration::from_millis(1);
        let durable = Arc::new(durable);
        let slot = TaskSlot::new(
            "t1".into(),
            "c1".into(),
            Message::user_text("hi"),
            Principal::anonymous(),
            true,
        );
        assert!(durable.create(&slot, "a2a:c1").await.unwrap());
        let writer = tokio::spawn(write_through(durable.clone(), slot.clone()));
        slot.set_status(TaskState::Working, None);
        let chunk = Artifact {
            artifact_id: "response".into(),
            parts: vec![Part::text("done")],
            ..Artifact::default()
        };
        slot.artifact(chunk, false, true);
        slot.set_status(TaskState::Completed, None);
        writer.await.unwrap();
        (durable, slot)
    }

    #[tokio::test]
    async fn failed_writes_are_retried_in_order_and_the_final_one_lands() {
        let (durable, _slot) = run(3).await;
        let row = durable.store.task("t1").await.unwrap().unwrap();
        assert!(row.terminal);
        assert_eq!(row.state, "TASK_STATE_COMPLETED");
        assert_eq!(row_task(&row, None).unwrap().artifact_text(), "done");
        let items: Vec<StreamResponse> = durable
            .store
            .task_updates("t1", 0, 100)
            .await
            .unwrap()
            .iter()
            .flat_map(|u| decode_updates(&u.body).unwrap())
            .collect();
        let kinds: Vec<_> = items.iter().map(StreamResponse::state).collect();
        assert_eq!(
            kinds,
            [Some(TaskState::Working), None, Some(TaskState::Completed)]
        );
        assert_eq!(durable.failures(), 0);
    }

    #[tokio::test]
    async fn a_write_that_keeps_failing_is_given_up_and_reported() {
        let (durable, slot) = run(u32::MAX).await;
        assert_eq!(durable.failures(), 1);
        let error = durable.last_error().unwrap();
        assert!(
            matches!(&error, TaskStoreError::Write { task, message }
                if task == "t1" && message.contains("connection reset")),
            "{error:?}"
        );
        let row = durable.store.task("t1").await.unwrap().unwrap();
        assert_eq!(row.state, "TASK_STATE_SUBMITTED", "nothing was written");
        assert!(slot.take_unsaved().is_none(), "the slot stopped collecting");
    }
}
