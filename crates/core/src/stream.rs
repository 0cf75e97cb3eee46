//! [`RunStream`]: one running invocation.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use tokio::sync::watch;

use crate::broker::Consumer;
use crate::control::{RunControl, StopReason};
use crate::event::Event;
use crate::result::{Error, RunResult};

/// The run's outcome, once set. Shared behind an `Arc`: every
/// [`RunHandle::result`] clones it, but [`RunStream::finish`] (what `run()`
/// returns) moves it out when nobody else holds it — a result's text can be
/// megabytes.
pub(crate) type Outcome = Option<Arc<Result<RunResult, Error>>>;

/// A cloneable handle on a run: its id, its outcome, and cancellation.
/// Use it to await the result or cancel from another task.
#[derive(Clone)]
pub struct RunHandle {
    run_id: Arc<str>,
    lease_holder: Option<Arc<str>>,
    control: Arc<RunControl>,
    outcome: watch::Receiver<Outcome>,
}

impl std::fmt::Debug for RunHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHandle")
            .field("run_id", &self.run_id)
            .field("finished", &self.outcome.borrow().is_some())
            .finish()
    }
}

impl RunHandle {
    /// The SDK run id, available at once.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The owner a thread run takes its key's lease with
    /// (`{instance}@{epoch}/{run id}`, or the run id alone when the host
    /// did not name its process; see
    /// [`AgentBuilder::lease_owner`](crate::AgentBuilder::lease_owner)):
    /// what a bridge keeps as the holder of the run's durable approvals
    /// and tasks, so that recovering the lease expires them. `None` for a
    /// run outside a thread (and for a thread run refused before it
    /// started).
    pub fn lease_holder(&self) -> Option<&str> {
        self.lease_holder.as_deref()
    }

    /// Cancel the run. Idempotent; releases blocked publishers and approval
    /// waits. Buffered events stay readable until the stream ends.
    pub fn cancel(&self) {
        if self.outcome.borrow().is_none() {
            self.control.stop(StopReason::Cancelled);
        }
    }

    /// The authoritative outcome. Waits for the run to finish; may be called
    /// repeatedly and concurrently, always with the same answer.
    ///
    /// A run applies backpressure: unless you drain the event stream (or
    /// drop it, which cancels), the run may never finish.
    pub async fn result(&self) -> Result<RunResult, Error> {
        let mut rx = self.outcome.clone();
        let waited = rx.wait_for(Option::is_some).await.map(|v| v.clone());
        match waited {
            Ok(Some(outcome)) => (*outcome).clone(),
            // The sender is dropped only after the outcome is set; a closed
            // channel with no outcome means the run task itself was aborted
            // (runtime shut down).
            Ok(None) | Err(_) => match rx.borrow().clone() {
                Some(outcome) => (*outcome).clone(),
                None => Err(lost()),
            },
        }
    }

    /// [`result`](Self::result), moving the outcome out instead of cloning
    /// it when this is the last handle on the run.
    async fn into_result(self) -> Result<RunResult, Error> {
        let mut rx = self.outcome;
        drop(self.control);
        // The run task sets the outcome once and then lets go of the
        // channel (it has nothing left to await), so `changed` ends right
        // after the outcome is set; a task aborted by a runtime shutdown
        // lets go too.
        while rx.changed().await.is_ok() {}
        let outcome = rx.borrow().clone();
        drop(rx);
        match outcome {
            Some(shared) => Arc::try_unwrap(shared).unwrap_or_else(|shared| (*shared).clone()),
            None => Err(lost()),
        }
    }

    /// The outcome, if the run already finished.
    pub fn try_result(&self) -> Option<Result<RunResult, Error>> {
        self.outcome.borrow().as_deref().cloned()
    }
}

fn lost() -> Error {
    Error::RuntimeShutdown
}

/// One running invocation: a [`Stream`] of [`Event`]s plus the outcome.
///
/// * [`run_id`](Self::run_id) is available at once.
/// * The stream yields `RunStarted` first and `RunFinished` last, then ends;
///   when it has ended, [`result`](Self::result) is ready.
/// * Dropping a `RunStream` before it ended cancels the run.
/// * A pre-start error (invalid config, no runtime …) gives an empty stream
///   and the error from `result`.
pub struct RunStream {
    events: Option<Consumer>,
    handle: RunHandle,
    ended: bool,
}

impl std::fmt::Debug for RunStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunStream")
            .field("run_id", &self.handle.run_id)
            .field("ended", &self.ended)
            .finish()
    }
}

impl RunStream {
    pub(crate) fn new(
        run_id: Arc<str>,
        control: Arc<RunControl>,
        outcome: watch::Receiver<Outcome>,
        events: Option<Consumer>,
        lease_holder: Option<Arc<str>>,
    ) -> Self {
        RunStream {
            events,
            handle: RunHandle {
                run_id,
                lease_holder,
                control,
                outcome,
            },
            ended: false,
        }
    }

    /// The SDK run id.
    pub fn run_id(&self) -> &str {
        self.handle.run_id()
    }

    /// The run's lease holder; see [`RunHandle::lease_holder`].
    pub fn lease_holder(&self) -> Option<&str> {
        self.handle.lease_holder()
    }

    /// Cancel the run (idempotent). Keep reading until the stream ends, then
    /// call [`result`](Self::result) for the cancellation outcome.
    pub fn cancel(&self) {
        self.handle.cancel();
    }

    /// The authoritative outcome; see [`RunHandle::result`].
    pub async fn result(&self) -> Result<RunResult, Error> {
        self.handle.result().await
    }

    /// A cloneable handle for other tasks.
    pub fn handle(&self) -> RunHandle {
        self.handle.clone()
    }

    /// Events buffered and not yet read. (Named so it does not clash with
    /// `StreamExt::buffered`.)
    pub fn queued_events(&self) -> usize {
        self.events.as_ref().map_or(0, Consumer::buffered)
    }

    /// Drain every event, then return the outcome: exactly what
    /// [`Runner::run`](crate::Runner::run) does.
    pub async fn finish(mut self) -> Result<RunResult, Error> {
        if let Some(events) = &self.events {
            // Nobody can read the events now: deltas need not be queued.
            events.unobserved();
        }
        while self.next().await.is_some() {}
        // Dropping the stream after the drain cancels nothing.
        let handle = self.handle.clone();
        drop(self);
        handle.into_result().await
    }
}

impl Stream for RunStream {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let Some(events) = &mut self.events else {
            self.ended = true;
            return Poll::Ready(None);
        };
        let polled = events.poll_next(cx);
        if let Poll::Ready(None) = polled {
            self.ended = true;
        }
        polled
    }
}

impl futures::stream::FusedStream for RunStream {
    fn is_terminated(&self) -> bool {
        self.ended
    }
}

impl Drop for RunStream {
    fn drop(&mut self) {
        let drained = self.ended || self.events.as_ref().is_none_or(Consumer::is_terminated);
        if !drained {
            self.handle.cancel();
        }
    }
}
