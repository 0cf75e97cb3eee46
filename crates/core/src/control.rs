//! Why a run is being stopped, decided once.

use std::sync::Mutex;

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
}

/// Cancellation plus its reason; the first `stop` wins.
#[derive(Debug, Default)]
pub(crate) struct RunControl {
    pub(crate) cancel: CancellationToken,
    reason: Mutex<Option<StopReason>>,
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
        self.cancel.cancel();
    }

    /// The reason, once stopped.
    pub(crate) fn reason(&self) -> Option<StopReason> {
        self.reason
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
