//! The lease sweeper: every third of the lease TTL, recover the expired
//! leases of any host sharing the store (it died, or lost the store, and
//! stopped renewing), so their threads are free again and their pending
//! approvals expire; log each interrupted run and tell the bridges.

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::thread::{InterruptedRun, StoreError, ThreadStore};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use super::recover::log_interrupted;

/// How many sweeps a slow subscriber may fall behind before it loses the
/// oldest.
const CAPACITY: usize = 64;

/// Recovers expired leases on a timer and broadcasts what it recovered.
pub struct Sweeper {
    store: Arc<dyn ThreadStore>,
    every: Duration,
    interrupted: broadcast::Sender<Vec<InterruptedRun>>,
}

impl Sweeper {
    /// A sweeper of `store` for leases of `ttl` (it sweeps every third).
    pub fn new(store: Arc<dyn ThreadStore>, ttl: Duration) -> Self {
        Sweeper {
            store,
            every: (ttl / 3).max(Duration::from_millis(100)),
            interrupted: broadcast::Sender::new(CAPACITY),
        }
    }

    /// The runs each sweep interrupted (one message per sweep that found
    /// some): a bridge subscribes to fail the tasks of those runs.
    pub fn subscribe(&self) -> broadcast::Receiver<Vec<InterruptedRun>> {
        self.interrupted.subscribe()
    }

    /// The agent's [`on_recovered`](agent_adaptor_core::AgentBuilder::on_recovered)
    /// hook: the run whose expired lease a thread run took over is logged,
    /// recorded in its thread's log and broadcast like a sweep's.
    pub fn hook(&self) -> agent_adaptor_core::thread::OnRecovered {
        let store = self.store.clone();
        let interrupted = self.interrupted.clone();
        Arc::new(move |runs: Vec<InterruptedRun>| {
            let store = store.clone();
            let interrupted = interrupted.clone();
            tokio::spawn(async move {
                log_interrupted(
                    store.as_ref(),
                    &runs,
                    "a run whose host stopped renewing its lease was interrupted; its thread's next run took the lease over",
                )
                .await;
                let _ = interrupted.send(runs);
            });
        })
    }

    /// One sweep: recover, log, broadcast. Returns the recovered runs.
    pub async fn sweep(&self) -> Result<Vec<InterruptedRun>, StoreError> {
        let runs = self.store.recover_expired().await?;
        if !runs.is_empty() {
            log_interrupted(
                self.store.as_ref(),
                &runs,
                "a run whose host stopped renewing its lease was interrupted; its thread is free again",
            )
            .await;
            // No subscriber is not an error.
            let _ = self.interrupted.send(runs.clone());
        }
        Ok(runs)
    }

    /// Sweep on a timer until the task is aborted. A store that cannot
    /// recover expired leases stops the sweeper (logged once); other
    /// failures are logged and the next sweep tries again.
    pub fn spawn(self) -> JoinHandle<()> {
        tokio::spawn(async move {
            let mut timer = tokio::time::interval(self.every);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                timer.tick().await;
                match self.sweep().await {
                    Ok(_) => {}
                    Err(StoreError::Unsupported(what)) => {
                        tracing::info!(what, "the thread store cannot {what}: no lease sweeper");
                        return;
                    }
                    Err(e) => tracing::warn!(error = %e, "lease sweep failed"),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;
    use std::time::Duration;

    use agent_adaptor_core::thread::{MemoryStore, ThreadStore};

    use super::Sweeper;

    #[tokio::test]
    async fn a_sweep_frees_expired_leases_only_and_tells_subscribers() {
        let store = Arc::new(MemoryStore::new());
        store
            .acquire_run_lease("key:dead", "h1@e1/run-1", Duration::from_millis(1), "p")
            .await
            .unwrap();
        store
            .acquire_lease("key:alive", "h2@e1/run-2", Duration::from_secs(60))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let sweeper = Sweeper::new(store.clone(), Duration::from_secs(3));
        let mut told = sweeper.subscribe();
        let runs = sweeper.sweep().await.unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(
            (runs[0].key.as_str(), runs[0].run_id.as_str()),
            ("dead", "run-1")
        );
        assert_eq!(told.try_recv().unwrap(), runs);
        // The thread's log says where the run stopped, under its own id.
        let log = store
            .events("dead", &agent_adaptor_core::thread::EventQuery::since(0))
            .await
            .unwrap();
        assert_eq!(log.events.len(), 1);
        assert_eq!(log.events[0].run_id, "run-1/interrupted");
        match &log.events[0].event {
            agent_adaptor_core::Event::Notice(n) => {
                assert_eq!(n.kind, agent_adaptor_bridges::agui::INTERRUPTION_NOTICE);
            }
            other => panic!("{other:?}"),
        }
        assert!(sweeper.sweep().await.unwrap().is_empty());
        assert!(told.try_recv().is_err(), "an empty sweep tells nobody");
        let busy = store
            .acquire_lease("key:alive", "other", Duration::from_secs(60))
            .await;
        assert!(busy.is_err(), "the unexpired lease stays");
    }
}
