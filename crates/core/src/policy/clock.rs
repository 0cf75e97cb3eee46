//! The active-execution budget: a clock that runs while the run works and
//! stands still while a human is being asked. Asks may overlap (a driver
//! may have several decisions open at once); the clock stands still from
//! the first ask until the last one ends.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::control::{RunControl, StopReason};

#[derive(Debug)]
struct State {
    /// Active time consumed up to `since` (or up to the pause).
    used: Duration,
    /// When the clock last started running; `None` while paused.
    since: Option<Instant>,
    /// Open asks.
    asks: u32,
}

/// One run's active-execution clock. It starts running when created.
#[derive(Debug)]
pub(crate) struct ActiveClock {
    limit: Duration,
    state: Mutex<State>,
    changed: Notify,
}

/// Keeps the clock paused while alive (one per open ask).
#[derive(Debug)]
pub(crate) struct Paused<'a>(&'a ActiveClock);

impl ActiveClock {
    /// A running clock with a budget of `limit`.
    pub(crate) fn new(limit: Duration) -> Self {
        ActiveClock {
            limit,
            state: Mutex::new(State {
                used: Duration::ZERO,
                since: Some(Instant::now()),
                asks: 0,
            }),
            changed: Notify::new(),
        }
    }

    /// The budget.
    pub(crate) fn limit(&self) -> Duration {
        self.limit
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Active time used so far.
    #[cfg(test)]
    pub(crate) fn used(&self) -> Duration {
        let st = self.lock();
        st.used + st.since.map_or(Duration::ZERO, |s| s.elapsed())
    }

    /// Pause until the returned guard is dropped.
    pub(crate) fn pause(&self) -> Paused<'_> {
        let mut st = self.lock();
        st.asks += 1;
        if let Some(since) = st.since.take() {
            st.used += since.elapsed();
        }
        drop(st);
        self.changed.notify_waiters();
        Paused(self)
    }

    fn resume(&self) {
        let mut st = self.lock();
        st.asks = st.asks.saturating_sub(1);
        if st.asks == 0 && st.since.is_none() {
            st.since = Some(Instant::now());
        }
        drop(st);
        self.changed.notify_waiters();
    }

    /// Resolves once the budget is used up (never while paused).
    pub(crate) async fn exhausted(&self) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let remaining = {
                let st = self.lock();
                st.since.map(|since| {
                    self.limit
                        .saturating_sub(st.used)
                        .saturating_sub(since.elapsed())
                })
            };
            match remaining {
                Some(left) if left.is_zero() => return,
                Some(left) => {
                    tokio::select! {
                        () = tokio::time::sleep(left) => {}
                        () = &mut changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        self.0.resume();
    }
}

/// Run `work` under the budget of `clock`: when it runs out, the run is
/// stopped (`active_execution_timeout`) and `work` — which observes the
/// stop through the run's cancellation — is still awaited to its end.
pub(crate) async fn budgeted<F: Future>(
    work: F,
    clock: Option<Arc<ActiveClock>>,
    control: &RunControl,
) -> F::Output {
    let Some(clock) = clock else {
        return work.await;
    };
    tokio::pin!(work);
    tokio::select! {
        biased;
        out = &mut work => return out,
        () = clock.exhausted() => {
            control.stop(StopReason::ActiveExecutionTimeout(clock.limit()));
        }
    }
    work.await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn overlapping_asks_pause_the_clock_once() {
        let clock = ActiveClock::new(Duration::from_secs(10));
        tokio::time::sleep(Duration::from_secs(3)).await;
        let first = clock.pause();
        tokio::time::sleep(Duration::from_secs(100)).await;
        let second = clock.pause();
        drop(first);
        tokio::time::sleep(Duration::from_secs(100)).await;
        assert_eq!(clock.used(), Duration::from_secs(3), "still paused");
        drop(second);
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(clock.used(), Duration::from_secs(5));
        let start = Instant::now();
        clock.exhausted().await;
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_during_the_wait_postpones_exhaustion() {
        let clock = Arc::new(ActiveClock::new(Duration::from_secs(10)));
        let start = Instant::now();
        let c = clock.clone();
        let asker = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(4)).await;
            let _p = c.pause();
            tokio::time::sleep(Duration::from_secs(60)).await;
        });
        clock.exhausted().await;
        assert_eq!(start.elapsed(), Duration::from_secs(70));
        asker.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn budgeted_work_is_stopped_and_awaited() {
        let control = RunControl::default();
        let clock = Some(Arc::new(ActiveClock::new(Duration::from_secs(1))));
        let out = budgeted(
            async {
                control.cancel.cancelled().await;
                "stopped"
            },
            clock,
            &control,
        )
        .await;
        assert_eq!(out, "stopped");
        assert_eq!(
            control.reason(),
            Some(StopReason::ActiveExecutionTimeout(Duration::from_secs(1)))
        );
    }
}
