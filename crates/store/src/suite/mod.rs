//! The shared `ThreadStore` test-suite: one set of cases that every store
//! must pass — core's `MemoryStore`, [`SqliteStore`](crate::SqliteStore),
//! [`PgStore`](crate::PgStore), or a third party's.
//!
//! Each case is a public `async fn(Arc<dyn ThreadStore>) -> Result<(), String>`
//! (the error names the file, line and what differed). Cases use keys of
//! their own (random suffixes), so one store — even one shared database —
//! can serve every case, concurrently.
//!
//! Two ways to run them:
//!
//! * [`thread_store_suite!`](crate::thread_store_suite) generates one
//!   `#[tokio::test]` per case from an `async fn() -> Arc<dyn ThreadStore>`
//!   factory (the test crate needs `tokio` with the `macros` and
//!   `rt-multi-thread` features):
//!
//!   ```
//!   use std::sync::Arc;
//!   use agent_adaptor_store::{MemoryStore, ThreadStore};
//!
//!   async fn memory() -> Arc<dyn ThreadStore> {
//!       Arc::new(MemoryStore::new())
//!   }
//!   agent_adaptor_store::thread_store_suite!(memory_store, memory);
//!   # fn main() {}
//!   ```
//!
//! * [`run_all`] runs every case in turn and collects the failures:
//!
//!   ```
//!   use std::sync::Arc;
//!   use agent_adaptor_store::{MemoryStore, suite};
//!   # #[tokio::main] async fn main() {
//!   suite::run_all(Arc::new(MemoryStore::new())).await.unwrap();
//!   # }
//!   ```
//!
//! The cases: leases (busy, renew, release, same-owner re-acquisition,
//! expiry takeover), finalize (archives and rebinds, stale or expired lease
//! writes nothing, fork onto an occupied key), resolve (with and without
//! archived records), listing and deletion, concurrency (many tasks
//! acquire at once: exactly one wins; many tasks take turns: no turn lost),
//! and end to end through core
//! (`Agent::builder(…).thread_store(store)`: two turns resume, concurrent
//! runs on one key, resume-only on a missing key, fork, failed runs);
//! lease recovery after a holder's process died (`recover_instance`,
//! interrupted runs) and a finalize that fails half way; the event log
//! (cursors across runs, `since`/range/tail paging, retention by count and
//! age, concurrent appenders, cursors never reused after `delete`); the
//! thread policy (grants per key, revocation, dropped by `delete`); the
//! rows hosts share: approvals (answered once, deadlines, expired with
//! their holder's lease by `recover_expired` and `recover_instance`),
//! tasks (update log, terminal states, listings and page tokens, cancel
//! requests, pruning with decided approvals, push configurations), both
//! dropped by `delete`, and notifications.

mod agent;
mod cases;
mod cleanup;
mod durable;
mod event_log;
mod policy;
mod recovery;
mod tasks;

use std::sync::Arc;

use agent_adaptor_core::thread::ThreadStore;
use futures::future::BoxFuture;

pub use agent::{
    agent_concurrent_runs_one_is_busy, agent_failed_run_keeps_the_record, agent_fork_copies_state,
    agent_resume_only_missing_is_not_found, agent_two_turns_resume,
};
pub use cases::{
    concurrent_acquires_exactly_one_wins, concurrent_turns_lose_nothing,
    finalize_archives_and_rebinds, finalize_with_stale_lease_writes_nothing,
    fork_onto_occupied_key_already_exists, lease_busy_renew_release, lease_expiry_takeover,
    lease_same_owner_reacquires, list_and_delete, resolve_with_and_without_archived, sample_record,
    turn_of,
};
pub use cleanup::delete_drops_approvals_and_tasks;
pub use durable::{
    approval_answered_once, approval_deadline_expires, notify_reaches_listeners, receive,
    recover_expired_expires_held_approvals, recover_instance_expires_approvals,
    take_run_lease_records_the_takeover,
};
pub use event_log::{
    event_log_concurrent_appenders, event_log_cursors_and_since, event_log_many_runs,
    event_log_retention, event_log_windows_and_paging, read_all, sample_event, sample_run,
};
pub use policy::thread_policy_grant_revoke_delete;
pub use recovery::{
    failed_finalize_leaves_nothing_locked, recover_instance_frees_dead_incarnations,
    recover_instance_rejects_separators, recovered_prompt_is_the_current_holders,
};
pub use tasks::{tasks_list_filters_and_paging, tasks_updates_terminal_and_prune};

/// A case's outcome: `Err` says where and what differed.
pub type Outcome = Result<(), String>;

/// A case of the suite.
pub type Case = fn(Arc<dyn ThreadStore>) -> BoxFuture<'static, Outcome>;

/// Calls `$mac!($($arg)*; case, case, …)` with every case name, so the case
/// list lives in one place. Implementation detail of
/// [`thread_store_suite!`](crate::thread_store_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __thread_store_cases {
    ($mac:path; $($arg:tt)*) => {
        $mac!($($arg)*;
            lease_busy_renew_release,
            lease_same_owner_reacquires,
            lease_expiry_takeover,
            finalize_archives_and_rebinds,
            finalize_with_stale_lease_writes_nothing,
            fork_onto_occupied_key_already_exists,
            resolve_with_and_without_archived,
            list_and_delete,
            concurrent_acquires_exactly_one_wins,
            concurrent_turns_lose_nothing,
            recover_instance_frees_dead_incarnations,
            recovered_prompt_is_the_current_holders,
            recover_instance_rejects_separators,
            failed_finalize_leaves_nothing_locked,
            event_log_cursors_and_since,
            event_log_windows_and_paging,
            event_log_retention,
            event_log_concurrent_appenders,
            thread_policy_grant_revoke_delete,
            approval_answered_once,
            approval_deadline_expires,
            recover_expired_expires_held_approvals,
            recover_instance_expires_approvals,
            take_run_lease_records_the_takeover,
            tasks_updates_terminal_and_prune,
            tasks_list_filters_and_paging,
            delete_drops_approvals_and_tasks,
            notify_reaches_listeners,
            agent_two_turns_resume,
            agent_concurrent_runs_one_is_busy,
            agent_resume_only_missing_is_not_found,
            agent_fork_copies_state,
            agent_failed_run_keeps_the_record
        );
    };
}

macro_rules! case_table {
    (; $($case:ident),*) => {
        /// Every case of the suite, by name.
        pub const CASES: &[(&str, Case)] = &[
            $((stringify!($case), |store| Box::pin($case(store)))),*
        ];
    };
}
__thread_store_cases!(case_table;);

/// Generate one `#[tokio::test]` per suite case in a module named `$name`,
/// each on a store from `$factory` (an `async fn() -> Arc<dyn ThreadStore>`
/// in scope at the call site). Needs `tokio` with `macros` and
/// `rt-multi-thread` in the calling crate.
#[macro_export]
macro_rules! thread_store_suite {
    ($name:ident, $factory:path) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $crate::__thread_store_cases!($crate::thread_store_suite; @tests $factory);
        }
    };
    (@tests $factory:path; $($case:ident),*) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let store = $factory().await;
                if let Err(message) = $crate::suite::$case(store).await {
                    panic!("{}: {}", stringify!($case), message);
                }
            }
        )*
    };
}

/// A failed case of [`run_all`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The case's name.
    pub case: &'static str,
    /// Where and what differed.
    pub message: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.case, self.message)
    }
}

/// Run every case against `store`, one after the other; `Err` lists the
/// cases that failed.
pub async fn run_all(store: Arc<dyn ThreadStore>) -> Result<(), Vec<Failure>> {
    let mut failures = Vec::new();
    for (case, run) in CASES {
        if let Err(message) = run(store.clone()).await {
            failures.push(Failure { case, message });
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures)
    }
}

/// `return Err("file:line: message")` unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!("{}:{}: {}", file!(), line!(), format!($($fmt)+)));
        }
    };
}
pub(crate) use ensure;

/// A store call that must succeed: its error becomes the case's failure.
pub(crate) fn must<T>(
    result: Result<T, agent_adaptor_core::thread::StoreError>,
    what: &str,
) -> Result<T, String> {
    result.map_err(|e| format!("{what}: unexpected error {e:?}"))
}

/// A key no other case (or run) uses.
pub(crate) fn unique_key(case: &str) -> String {
    format!("suite/{case}/{:016x}", rand::random::<u64>())
}
