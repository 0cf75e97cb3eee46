//! Tasks another host runs, through the shared store: following one
//! (`SubscribeToTask`), cancelling one (`CancelTask`), listing the
//! caller's (`ListTasks`), the owner's side of a remote cancel, and
//! failing the tasks of runs whose host stopped.
//!
//! Waiters wake on the desk's notifications and re-read every poll period
//! too (a lost or lagging notification only delays them).

use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::time::Duration;

use agent_adaptor_core::thread::durable::{
    Notification, Notifications, TOPIC_CANCEL, TOPIC_TASK, TaskChange, TaskQuery, TaskRow,
};
use agent_adaptor_core::thread::store::{InterruptedRun, StoreError};
use chrono::DateTime;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::durable::{Durable, TaskStoreError, decode_updates, read_error, row_task};
use super::rpc::{ErrorCode, RpcError};
use super::store::{TaskStore, now_timestamp};
use super::types::{
    ListTasksRequest, ListTasksResponse, Message, Part, StreamResponse, Task, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use crate::Principal;
use crate::desk::Wake;

/// Updates read per store query.
const UPDATE_PAGE: usize = 256;
/// Consecutive failed reads after which a follower gives up.
const READ_FAILURES: u32 = 20;

/// A wake-up for changes of task `id` (a notification, or the poll
/// period): register it before reading the row, so a change between the
/// read and the wait is not missed.
pub(crate) async fn watch(durable: &Durable, id: &str) -> Wake {
    durable.desk.wake(TOPIC_TASK, id).await
}

/// Wait for `wake`, or `stop`; false only when `stop` fired.
async fn woken(wake: &mut Wake, stop: &CancellationToken) -> bool {
    tokio::select! {
        _ = wake.next() => true,
        () = stop.cancelled() => false,
    }
}

/// What a follower starts from: the stored snapshot, and the updates
/// after it.
pub(crate) struct Followed {
    pub(crate) snapshot: Task,
    pub(crate) updates: BoxStream<'static, StreamResponse>,
}

/// Follow task `id` from the store: its snapshot, then every later update
/// exactly once, in order, ending after the terminal one. `None`: not
/// found (or another principal's).
pub(crate) async fn follow(
    durable: Arc<Durable>,
    id: &str,
    principal: &Principal,
    stop: CancellationToken,
) -> Result<Option<(TaskRow, Followed)>, RpcError> {
    let wake = watch(&durable, id).await;
    let Some(row) = durable.load(id, principal).await? else {
        return Ok(None);
    };
    let snapshot = row_task(&row, None)?;
    struct St {
        durable: Arc<Durable>,
        id: String,
        seq: u64,
        wake: Wake,
        queue: VecDeque<StreamResponse>,
        stop: CancellationToken,
        failures: u32,
        ended: bool,
    }
    let st = St {
        durable,
        id: id.to_owned(),
        seq: row.seq,
        wake,
        queue: VecDeque::new(),
        stop,
        failures: 0,
        ended: row.terminal,
    };
    let updates = futures::stream::unfold(st, |mut st| async move {
        loop {
            if let Some(item) = st.queue.pop_front() {
                if item.state().is_some_and(TaskState::is_terminal) {
                    st.ended = true;
                    st.queue.clear();
                }
                return Some((item, st));
            }
            if st.ended {
                return None;
            }
            match st
                .durable
                .store
                .task_updates(&st.id, st.seq, UPDATE_PAGE)
                .await
            {
                Ok(updates) if !updates.is_empty() => {
                    st.failures = 0;
                    for u in updates {
                        st.seq = u.seq;
                        match decode_updates(&u.body) {
                            Ok(items) => st.queue.extend(items),
                            Err(e) => tracing::warn!(
                                task = %st.id, seq = u.seq, error = %e,
                                "a2a: a stored task update does not decode; skipped"
                            ),
                        }
                    }
                    continue;
                }
                Ok(_) => st.failures = 0,
                Err(e) => {
                    st.failures += 1;
                    tracing::warn!(task = %st.id, error = %e, "a2a: cannot read task updates");
                    if st.failures >= READ_FAILURES {
                        return None;
                    }
                }
            }
            if !woken(&mut st.wake, &st.stop).await {
                return None;
            }
            // Final without a final update (its log was pruned): end on the
            // stored snapshot.
            if let Ok(Some(row)) = st.durable.store.task(&st.id).await
                && row.terminal
                && row.seq <= st.seq
                && let Ok(task) = row_task(&row, None)
            {
                st.ended = true;
                return Some((StreamResponse::Task(task), st));
            }
        }
    })
    .boxed();
    Ok(Some((row, Followed { snapshot, updates })))
}

/// `CancelTask` of a task another host runs: note the request, tell every
/// host, and wait (up to `wait`) for the task's final state. `None`: not
/// found.
pub(crate) async fn cancel(
    durable: &Durable,
    id: &str,
    principal: &Principal,
    wait: Duration,
    stop: &CancellationToken,
) -> Result<Option<Task>, RpcError> {
    let mut wake = watch(durable, id).await;
    let Some(row) = durable.load(id, principal).await? else {
        return Ok(None);
    };
    if row.terminal {
        return Err(RpcError::new(
            ErrorCode::TaskNotCancelable,
            format!("task {id:?} is {} and cannot be canceled", row.state),
        )
        .with_meta("taskId", id));
    }
    durable
        .store
        .request_task_cancel(id)
        .await
        .map_err(|e| read_error(&e))?;
    durable.desk.notify(TOPIC_CANCEL, id).await;
    let row = wait_row(durable, &mut wake, row, Some(wait), stop, |r| r.terminal).await;
    row_task(&row, None).map(Some)
}

/// Re-read task `row` (on `wake`: notifications, else every poll) until
/// `done` holds, `wait` passes (`None`: no limit), `stop` fires, the task
/// is gone, or [`READ_FAILURES`] reads in a row failed; the last row read.
pub(crate) async fn wait_row(
    durable: &Durable,
    wake: &mut Wake,
    mut row: TaskRow,
    wait: Option<Duration>,
    stop: &CancellationToken,
    mut done: impl FnMut(&TaskRow) -> bool,
) -> TaskRow {
    let deadline = wait.map(|w| tokio::time::Instant::now() + w);
    let mut failures = 0;
    while !done(&row) {
        let woke = match deadline {
            Some(d) if d <= tokio::time::Instant::now() => break,
            Some(d) => tokio::time::timeout_at(d, woken(wake, stop))
                .await
                .unwrap_or(true),
            None => woken(wake, stop).await,
        };
        if !woke {
            break;
        }
        match durable.store.task(&row.id).await {
            Ok(Some(r)) => {
                failures = 0;
                row = r;
            }
            Ok(None) => break,
            Err(e) => {
                failures += 1;
                tracing::warn!(task = %row.id, error = %e, failures, "a2a: cannot re-read a task");
                if failures >= READ_FAILURES {
                    break;
                }
            }
        }
    }
    row
}

/// The largest `pageSize` (A2A 1.0).
const MAX_PAGE: i32 = 100;

/// `ListTasks`: the caller's tasks as the store holds them.
pub(crate) async fn list(
    durable: &Durable,
    principal: &Principal,
    req: ListTasksRequest,
) -> Result<ListTasksResponse, RpcError> {
    let page_size = match req.page_size {
        None | Some(0) => 50,
        Some(n) if (1..=MAX_PAGE).contains(&n) => n,
        Some(n) => {
            return Err(RpcError::invalid_params(format!(
                "pageSize {n} is out of range (1 to {MAX_PAGE})"
            )));
        }
    };
    if req.history_length.is_some_and(|n| n < 0) {
        return Err(RpcError::invalid_params(
            "historyLength must not be negative",
        ));
    }
    let updated_since = match req.status_timestamp_after.as_deref() {
        None | Some("") => None,
        Some(t) => Some(
            DateTime::parse_from_rfc3339(t)
                .map_err(|e| {
                    RpcError::invalid_params(format!(
                        "statusTimestampAfter {t:?} is not an ISO 8601 timestamp: {e}"
                    ))
                })?
                .to_utc(),
        ),
    };
    let query = TaskQuery {
        principal: Some(principal.digest()),
        context_id: (!req.context_id.is_empty()).then(|| req.context_id.clone()),
        state: req
            .status
            .filter(|s| *s != TaskState::Unspecified)
            .map(|s| s.as_str().to_owned()),
        updated_since,
        page_size: usize::try_from(page_size).unwrap_or(50),
        page_token: (!req.page_token.is_empty()).then(|| req.page_token.clone()),
    };
    let page = match durable.store.list_tasks(&query).await {
        Ok(page) => page,
        Err(StoreError::Invalid(m)) => {
            return Err(RpcError::invalid_params(format!("pageToken: {m}")));
        }
        Err(e) => return Err(read_error(&e)),
    };
    let mut tasks = Vec::with_capacity(page.tasks.len());
    for row in &page.tasks {
        let mut task = row_task(row, req.history_length)?;
        if !req.include_artifacts.unwrap_or(false) {
            task.artifacts.clear();
        }
        tasks.push(task);
    }
    Ok(ListTasksResponse {
        tasks,
        next_page_token: page.next_page_token.unwrap_or_default(),
        page_size,
        total_size: i32::try_from(page.total).unwrap_or(i32::MAX),
    })
}

/// The owner's side of remote cancels: cancel the local task a
/// [`TOPIC_CANCEL`] names; on a timer (and when notifications lagged)
/// re-read the rows of the local tasks in progress for a cancel request.
/// Ends at `stop` or when the server is gone.
pub(crate) async fn serve_cancels(
    durable: Arc<Durable>,
    tasks: Weak<TaskStore>,
    mut rx: Option<Notifications>,
    stop: CancellationToken,
) {
    let sweep = durable.poll * 4;
    loop {
        let next = async {
            match rx.as_mut() {
                Some(r) => r.recv().await,
                None => std::future::pending().await,
            }
        };
        let check_all = tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(sweep) => true,
            n = next => match n {
                Ok(Notification { topic, id }) if topic == TOPIC_CANCEL => {
                    let Some(tasks) = tasks.upgrade() else { return };
                    if let Some(slot) = tasks.get(&id) {
                        tracing::info!(task = %id, "a2a: cancel requested on another host");
                        let _ = slot.request_cancel();
                    }
                    false
                }
                Ok(_) => false,
                Err(RecvError::Lagged(_)) => true,
                Err(RecvError::Closed) => {
                    rx = None;
                    false
                }
            },
        };
        if !check_all {
            continue;
        }
        let Some(tasks) = tasks.upgrade() else { return };
        for slot in tasks.active() {
            if let Ok(Some(row)) = durable.store.task(&slot.id).await
                && row.cancel_requested_at.is_some()
            {
                let _ = slot.request_cancel();
            }
        }
    }
}

/// The status message of a task whose run's host stopped.
pub const INTERRUPTED_TEXT: &str = "The server running this task stopped before it \
    finished, so the task failed. Its conversation is kept: send a new message in the same \
    context to continue the thread.";

/// Fail the still-active tasks of `runs` (runs whose host stopped), unless
/// this server runs them: each gets a `FAILED` status with
/// [`INTERRUPTED_TEXT`], written and notified like any change. Returns how
/// many tasks it failed.
pub(crate) async fn interrupted(
    durable: &Durable,
    local: &TaskStore,
    runs: &[InterruptedRun],
) -> Result<usize, TaskStoreError> {
    let mut failed = 0;
    for run in runs {
        let rows = match durable.store.active_tasks(&run.key).await {
            Ok(rows) => rows,
            Err(StoreError::Unsupported(_)) => return Ok(failed),
            Err(e) => {
                return Err(TaskStoreError::Read {
                    message: e.to_string(),
                });
            }
        };
        for row in rows {
            // The holder's run part: after its first `/` (the whole holder
            // when the host did not name its process).
            let held_by_run = row.holder.as_deref().is_none_or(|h| {
                run.run_id.is_empty() || h.split_once('/').map_or(h, |(_, r)| r) == run.run_id
            });
            if !held_by_run || local.get(&row.id).is_some() {
                continue;
            }
            if fail_row(durable, &row, &run.run_id).await? {
                failed += 1;
            }
        }
    }
    Ok(failed)
}

/// Write `row`'s failure; false when it was final already.
async fn fail_row(durable: &Durable, row: &TaskRow, run_id: &str) -> Result<bool, TaskStoreError> {
    let write_error = |message: String| TaskStoreError::Write {
        task: row.id.clone(),
        message,
    };
    let mut task = row_task(row, None).map_err(|e| write_error(e.message))?;
    let message = Message::agent(vec![
        Part::text(INTERRUPTED_TEXT),
        Part::data(json!({"reason": "interrupted", "runId": run_id})),
    ])
    .for_task(row.id.clone(), row.context_id.clone());
    task.history.push(message.clone());
    let status = TaskStatus {
        state: TaskState::Failed,
        message: Some(message),
        timestamp: Some(now_timestamp()),
    };
    task.status = status.clone();
    let meta = task.metadata.get_or_insert_with(Default::default);
    let inner = meta
        .entry("agentAdaptor")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Value::Object(m) = inner {
        m.insert("reason".into(), json!("interrupted"));
        if !run_id.is_empty() {
            m.insert("runId".into(), json!(run_id));
        }
    }
    let update = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: row.id.clone(),
        context_id: row.context_id.clone(),
        status,
        metadata: None,
    });
    let encode = |v: serde_json::Result<Value>| v.map_err(|e| write_error(e.to_string()));
    let change = TaskChange {
        state: TaskState::Failed.as_str().to_owned(),
        terminal: true,
        holder: None,
        snapshot: encode(serde_json::to_value(&task))?,
        update: Some(encode(serde_json::to_value([update]))?),
    };
    match durable.store.update_task(&row.id, change).await {
        Ok(_) => {
            tracing::warn!(task = %row.id, run_id, "a2a: the task's server stopped; task failed");
            durable.notify(&row.id).await;
            Ok(true)
        }
        // Final meanwhile (its owner finished it after all).
        Err(StoreError::Invalid(_)) => Ok(false),
        Err(e) => Err(write_error(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use agent_adaptor_core::MemoryStore;
    use agent_adaptor_core::ThreadStore;
    use agent_adaptor_core::driver::async_trait;
    use agent_adaptor_core::thread::durable::NewTask;
    use agent_adaptor_core::thread::{FinalizeRequest, Lease, ThreadRecord};

    use super::*;

    /// A store whose task reads all fail (counted).
    #[derive(Default)]
    struct Unreadable {
        reads: AtomicU32,
    }

    const NO: StoreError = StoreError::Unsupported("keep threads");

    #[async_trait]
    impl ThreadStore for Unreadable {
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
        async fn task(&self, _: &str) -> Result<Option<TaskRow>, StoreError> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            Err(StoreError::Backend("connection reset".into()))
        }
    }

    #[tokio::test]
    async fn an_unbounded_wait_gives_up_after_read_failures_in_a_row() {
        let row = MemoryStore::new()
            .create_task(NewTask {
                id: "t1".into(),
                context_id: "c1".into(),
                key: "a2a:c1".into(),
                principal: "p".into(),
                state: "TASK_STATE_WORKING".into(),
                holder: None,
                snapshot: json!({}),
            })
            .await
            .unwrap();
        let store = Arc::new(Unreadable::default());
        let durable = Durable::new(store.clone(), Duration::from_millis(10));
        let mut wake = watch(&durable, "t1").await;
        let stop = CancellationToken::new();
        let waited = wait_row(&durable, &mut wake, row, None, &stop, |r| r.terminal);
        let last = tokio::time::timeout(Duration::from_secs(30), waited)
            .await
            .expect("the wait gives up");
        assert_eq!(last.state, "TASK_STATE_WORKING", "the last row read");
        assert_eq!(store.reads.load(Ordering::SeqCst), READ_FAILURES);
    }
}
