//! What closing a bridge found, and the bounded wait for cancelled runs.

use std::collections::HashSet;
use std::future::Future;
use std::time::Duration;

use agent_adaptor_core::RunHandle;

/// The outcome of a bridge's `shutdown`: how many runs it cancelled, and
/// how many of them had not ended when its wait was over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Runs (or tasks) that were still going and were cancelled.
    pub cancelled: usize,
    /// Of those, the ones still running when the wait ended.
    pub unfinished: usize,
}

impl ShutdownReport {
    /// True when every cancelled run ended within the wait.
    pub fn all_ended(&self) -> bool {
        self.unfinished == 0
    }
}

/// Wait up to `within` for every run in `runs` (deduplicated by id) to end.
pub(crate) async fn wait_runs(runs: Vec<RunHandle>, within: Duration) -> ShutdownReport {
    let mut seen = HashSet::new();
    let waits: Vec<_> = runs
        .into_iter()
        .filter(|r| seen.insert(r.run_id().to_owned()))
        .map(|r| async move {
            let _ = r.result().await;
        })
        .collect();
    wait_all(waits, within).await
}

/// Wait up to `within` for every future in `waits` (one per cancelled run).
pub(crate) async fn wait_all<F>(waits: Vec<F>, within: Duration) -> ShutdownReport
where
    F: Future<Output = ()>,
{
    let cancelled = waits.len();
    let mut pending: futures::stream::FuturesUnordered<F> = waits.into_iter().collect();
    let mut ended = 0;
    let _ = tokio::time::timeout(within, async {
        use futures::StreamExt;
        while pending.next().await.is_some() {
            ended += 1;
        }
    })
    .await;
    ShutdownReport {
        cancelled,
        unfinished: cancelled - ended,
    }
}
