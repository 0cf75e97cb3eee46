//! A `ThreadStore` that wraps a real one and breaks exactly one contract,
//! to show the shared suite (`agent_adaptor_store::suite`) fails on a store
//! that is wrong in that way. [`Fault::None`] passes every call through, so
//! the same wrapper on the same backend is shown to pass.

use agent_adaptor_core::thread::durable::{
    AnswerRefused, ApprovalRow, NewApproval, NewTask, Notification, Notifications, PushConfigRow,
    TaskChange, TaskPage, TaskQuery, TaskRow, TaskUpdate,
};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_adaptor_core::driver::async_trait;
use agent_adaptor_core::thread::{
    EventPage, EventQuery, NewEvent, Retention, TakenLease, ThreadPolicy,
};
use agent_adaptor_store::suite::{self, Failure};
use agent_adaptor_store::{
    FinalizeRequest, InterruptedRun, Lease, RecordStatus, StoreError, ThreadRecord, ThreadStore,
};

/// The contract the wrapper breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// None: every call goes to the wrapped store.
    None,
    /// `finalize` of a record that replaces another answers success but
    /// writes nothing (the update is lost).
    LosesUpdate,
    /// `resolve` answers the first record it ever answered for a key
    /// (a stale version).
    StaleResolve,
    /// A lease held by another owner does not make `acquire_lease` busy:
    /// the newcomer gets a lease of its own (two leases coexist).
    LeasesCoexist,
    /// `append_events` of several events writes only the first half but
    /// answers the cursors of all (a torn batch).
    TornAppend,
}

/// The wrapper.
pub struct Broken {
    inner: Arc<dyn ThreadStore>,
    fault: Fault,
    seen: Mutex<HashMap<(String, bool), ThreadRecord>>,
}

impl Broken {
    /// `inner`, broken by `fault`.
    pub fn wrap(inner: Arc<dyn ThreadStore>, fault: Fault) -> Arc<dyn ThreadStore> {
        Arc::new(Broken {
            inner,
            fault,
            seen: Mutex::new(HashMap::new()),
        })
    }

    fn coexisting(
        &self,
        result: Result<Lease, StoreError>,
        target: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        match result {
            Err(StoreError::Busy { .. }) if self.fault == Fault::LeasesCoexist => Ok(Lease {
                target: target.to_owned(),
                owner: owner.to_owned(),
                token: format!("forged-{:016x}", rand::random::<u64>()),
                expires_at: chrono::Utc::now()
                    + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::MAX),
            }),
            other => other,
        }
    }
}

#[async_trait]
impl ThreadStore for Broken {
    async fn resolve(
        &self,
        key: &str,
        include_archived: bool,
    ) -> Result<Option<ThreadRecord>, StoreError> {
        let fresh = self.inner.resolve(key, include_archived).await?;
        if self.fault != Fault::StaleResolve {
            return Ok(fresh);
        }
        let mut seen = self.seen.lock().unwrap();
        match fresh {
            Some(record) => Ok(Some(
                seen.entry((key.to_owned(), include_archived))
                    .or_insert(record)
                    .clone(),
            )),
            None => Ok(None),
        }
    }

    async fn acquire_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        let result = self.inner.acquire_lease(target, owner, ttl).await;
        self.coexisting(result, target, owner, ttl)
    }

    async fn acquire_run_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
        prompt: &str,
    ) -> Result<Lease, StoreError> {
        let result = self
            .inner
            .acquire_run_lease(target, owner, ttl, prompt)
            .await;
        self.coexisting(result, target, owner, ttl)
    }

    async fn take_run_lease(
        &self,
        target: &str,
        owner: &str,
        ttl: Duration,
        prompt: &str,
    ) -> Result<TakenLease, StoreError> {
        match self.inner.take_run_lease(target, owner, ttl, prompt).await {
            Ok(taken) => Ok(taken),
            Err(e) => self
                .coexisting(Err(e), target, owner, ttl)
                .map(|lease| TakenLease {
                    lease,
                    displaced: None,
                }),
        }
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        self.inner.renew_lease(lease, ttl).await
    }

    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        self.inner.release_lease(lease).await
    }

    async fn finalize(&self, request: FinalizeRequest) -> Result<ThreadRecord, StoreError> {
        if self.fault == Fault::LosesUpdate && request.record.previous_id.is_some() {
            let mut record = request.record;
            record.status = RecordStatus::Active;
            return Ok(record);
        }
        self.inner.finalize(request).await
    }

    async fn list(&self, limit: usize) -> Result<Vec<ThreadRecord>, StoreError> {
        self.inner.list(limit).await
    }

    async fn history(&self, key: &str, limit: usize) -> Result<Vec<ThreadRecord>, StoreError> {
        self.inner.history(key, limit).await
    }

    async fn delete(&self, key: &str) -> Result<u64, StoreError> {
        self.inner.delete(key).await
    }

    async fn recover_instance(
        &self,
        instance: &str,
        epoch: &str,
    ) -> Result<Vec<InterruptedRun>, StoreError> {
        self.inner.recover_instance(instance, epoch).await
    }

    async fn interrupted_runs(&self, key: &str) -> Result<Vec<InterruptedRun>, StoreError> {
        self.inner.interrupted_runs(key).await
    }

    async fn append_events(
        &self,
        key: &str,
        run_id: &str,
        events: &[NewEvent],
    ) -> Result<Vec<u64>, StoreError> {
        if self.fault == Fault::TornAppend && events.len() > 1 {
            // Writes the first half, answers as if all were written.
            let half = self
                .inner
                .append_events(key, run_id, &events[..events.len() / 2])
                .await?;
            let first = half.first().copied().unwrap_or(1);
            return Ok((first..first + events.len() as u64).collect());
        }
        self.inner.append_events(key, run_id, events).await
    }

    async fn events(&self, key: &str, query: &EventQuery) -> Result<EventPage, StoreError> {
        self.inner.events(key, query).await
    }

    async fn prune_events(&self, key: &str, retention: &Retention) -> Result<u64, StoreError> {
        self.inner.prune_events(key, retention).await
    }

    async fn thread_policy(&self, key: &str) -> Result<ThreadPolicy, StoreError> {
        self.inner.thread_policy(key).await
    }

    async fn set_tool_allowed(
        &self,
        key: &str,
        tool: &str,
        allowed: bool,
    ) -> Result<bool, StoreError> {
        self.inner.set_tool_allowed(key, tool, allowed).await
    }

    // The rows hosts share pass through unbroken.

    async fn recover_expired(&self) -> Result<Vec<InterruptedRun>, StoreError> {
        self.inner.recover_expired().await
    }

    async fn put_approval(&self, a: NewApproval) -> Result<ApprovalRow, StoreError> {
        self.inner.put_approval(a).await
    }

    async fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, StoreError> {
        self.inner.approval(id).await
    }

    async fn pending_approvals(&self, key: &str) -> Result<Vec<ApprovalRow>, StoreError> {
        self.inner.pending_approvals(key).await
    }

    async fn answer_approval(
        &self,
        id: &str,
        p: &str,
        answer: Value,
    ) -> Result<Result<ApprovalRow, AnswerRefused>, StoreError> {
        self.inner.answer_approval(id, p, answer).await
    }

    async fn expire_approval(&self, id: &str) -> Result<bool, StoreError> {
        self.inner.expire_approval(id).await
    }

    async fn expire_overdue_approval(&self, id: &str) -> Result<bool, StoreError> {
        self.inner.expire_overdue_approval(id).await
    }

    async fn create_task(&self, t: NewTask) -> Result<TaskRow, StoreError> {
        self.inner.create_task(t).await
    }

    async fn update_task(&self, id: &str, c: TaskChange) -> Result<TaskRow, StoreError> {
        self.inner.update_task(id, c).await
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

    async fn list_tasks(&self, q: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.inner.list_tasks(q).await
    }

    async fn active_tasks(&self, key: &str) -> Result<Vec<TaskRow>, StoreError> {
        self.inner.active_tasks(key).await
    }

    async fn request_task_cancel(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
        self.inner.request_task_cancel(id).await
    }

    async fn prune_tasks(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        self.inner.prune_tasks(before).await
    }

    async fn put_push_config(
        &self,
        t: &str,
        id: &str,
        c: Value,
    ) -> Result<PushConfigRow, StoreError> {
        self.inner.put_push_config(t, id, c).await
    }

    async fn push_configs(&self, t: &str) -> Result<Vec<PushConfigRow>, StoreError> {
        self.inner.push_configs(t).await
    }

    async fn delete_push_config(&self, t: &str, id: &str) -> Result<bool, StoreError> {
        self.inner.delete_push_config(t, id).await
    }

    async fn notify(&self, n: &Notification) -> Result<(), StoreError> {
        self.inner.notify(n).await
    }

    async fn listen(&self) -> Result<Notifications, StoreError> {
        self.inner.listen().await
    }
}

/// Run the whole suite on `inner` broken by `fault`: with [`Fault::None`]
/// it must pass; with a fault it must fail, and among the failed cases
/// must be every one of `expected` (the cases that test that contract).
pub async fn suite_judges(inner: Arc<dyn ThreadStore>, fault: Fault, expected: &[&str]) {
    let outcome = suite::run_all(Broken::wrap(inner, fault)).await;
    if fault == Fault::None {
        assert_eq!(outcome, Ok(()), "the transparent wrapper passes the suite");
        return;
    }
    let failures: Vec<Failure> = outcome.expect_err("the suite must fail on a broken store");
    let failed: Vec<&str> = failures.iter().map(|f| f.case).collect();
    for case in expected {
        assert!(
            failed.contains(case),
            "{fault:?}: the suite did not fail {case}; failures: {failures:#?}"
        );
    }
}

/// One test per [`Fault`] on stores from `$factory` (an
/// `async fn() -> Arc<dyn ThreadStore>`): the suite passes the transparent
/// wrapper and fails each broken one on the cases that test its contract.
#[macro_export]
macro_rules! suite_checker_tests {
    ($factory:path) => {
        use $crate::common::broken::{Fault, suite_judges};

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_suite_passes_the_transparent_wrapper() {
            suite_judges($factory().await, Fault::None, &[]).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_suite_fails_a_store_that_loses_an_update() {
            suite_judges(
                $factory().await,
                Fault::LosesUpdate,
                &[
                    "finalize_archives_and_rebinds",
                    "concurrent_turns_lose_nothing",
                    "agent_two_turns_resume",
                ],
            )
            .await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_suite_fails_a_store_that_resolves_a_stale_version() {
            suite_judges(
                $factory().await,
                Fault::StaleResolve,
                &[
                    "finalize_archives_and_rebinds",
                    "resolve_with_and_without_archived",
                    "agent_two_turns_resume",
                ],
            )
            .await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_suite_fails_a_store_that_lets_two_leases_coexist() {
            suite_judges(
                $factory().await,
                Fault::LeasesCoexist,
                &[
                    "lease_busy_renew_release",
                    "concurrent_acquires_exactly_one_wins",
                    "agent_concurrent_runs_one_is_busy",
                ],
            )
            .await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_suite_fails_a_store_that_tears_an_append() {
            suite_judges(
                $factory().await,
                Fault::TornAppend,
                &[
                    "event_log_cursors_and_since",
                    "event_log_windows_and_paging",
                    "event_log_concurrent_appenders",
                ],
            )
            .await;
        }
    };
}
