//! Why a run is being stopped, decided once.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

/// The first reason a run was told to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// The host cancelled (or dropped the stream).
    Cancelled,
    /// The run's time budget ran out.
    DeadlineExceeded,
    /// The approval handler failed or did not resolve.
    ApprovalHandler(String),
    /// The thread's lease was lost (expired or taken over).
    LeaseLost(String),
    /// A human rejected a decision and the policy says abort.
    ApprovalDenied(Box<crate::policy::DecisionRecord>),
    /// A decision was not answered in time and the policy says abort.
    ApprovalTimeout(Box<crate::policy::DecisionRecord>),
    /// The active-execution budget (this long) ran out.
    ActiveExecutionTimeout(std::time::Duration),
    /// The thread's event log could not be written.
    EventLog(crate::thread::StoreError),
}

/// Cancellation plus its reason; the first `stop` wins.
#[derive(Debug, Default)]
pub(crate) struct RunControl {
    pub(crate) cancel: CancellationToken,
    reason: Mutex<Option<StopReason>>,
    /// Mirrors the token for the publish hot path (a load, not a lock).
    stopped: AtomicBool,
}

impl RunControl {
    /// Stop the run for `reason` (ignored when already stopping).
    pub(crate) fn stop(&self, reason: StopReason) {
        {
            let mut r = self.reason.lock().unwrap_or_else(|p| p.into_inner());
            if r.is_none() {
                *r = Some(reason);
            }
        }
        self.stopped.store(true, Ordering::Release);
        self.cancel.cancel();
    }

    /// True once `stop` was called (cheap; for hot paths).
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// The reason, once stopped.
    pub(crate) fn reason(&self) -> Option<StopReason> {
        self.reason
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
