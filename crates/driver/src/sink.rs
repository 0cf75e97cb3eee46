//! The sink a driver reports through (spec §4).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::decision::DecisionSink;
use crate::event::RunEvent;
use crate::lifecycle::Violation;
use crate::stream::StreamPayload;

/// Where a driver sends everything it observes during [`Driver::run`](crate::Driver::run).
///
/// Both methods end up on the one public event stream. They return a future
/// ([`Emit`]) because delivery applies backpressure: a reliable event (a
/// lifecycle boundary, a transcript item, a tool result) waits for consumer
/// space. In the common case — room in the queue — a sink answers with
/// [`Emit::ready`], which costs no allocation; one that must wait returns
/// [`Emit::new`] with its `async` block.
///
/// The sink is *borrowed* for the duration of `run`, so a driver cannot keep
/// it, and cannot call it after `run` returns — a detached task holding the
/// sink does not compile:
///
/// ```compile_fail
/// use agent_adaptor_driver::{EventSink, StreamPayload};
/// fn leak(sink: &dyn EventSink) {
///     // `tokio::spawn` needs `'static`; the borrowed sink is not.
///     std::thread::spawn(move || { let _ = sink.emit_stream(StreamPayload::run_started()); });
/// }
/// ```
///
/// Every error means "stop": [`SinkError::Cancelled`] when the run was
/// cancelled, [`SinkError::Violation`] when the payload broke the contract
/// (a driver bug, already reported to the host).
///
/// A sink that implements both methods with `async` code:
///
/// ```
/// use agent_adaptor_driver::{Emit, EventSink, RunEvent, StreamPayload};
/// struct Log(std::sync::Mutex<Vec<String>>);
/// impl EventSink for Log {
///     fn emit(&self, event: RunEvent) -> Emit<'_> {
///         // Already done: no future to build.
///         self.0.lock().unwrap().push(event.kind_name().to_owned());
///         Emit::ready(Ok(()))
///     }
///     fn emit_stream(&self, payload: StreamPayload) -> Emit<'_> {
///         // Work that awaits goes in an `async` block.
///         Emit::new(async move {
///             tokio::task::yield_now().await;
///             self.0.lock().unwrap().push(payload.kind.name().to_owned());
///             Ok(())
///         })
///     }
/// }
/// ```
pub trait EventSink: Send + Sync {
    /// Report an operational event or transcript item (spec §6).
    fn emit(&self, event: RunEvent) -> Emit<'_>;

    /// Report a normalized live payload (spec §5).
    fn emit_stream(&self, payload: StreamPayload) -> Emit<'_>;

    /// The decision-capable side of the sink, when the host can answer
    /// human decisions (spec §10).
    fn decisions(&self) -> Option<&dyn DecisionSink> {
        None
    }

    /// Open a batch: the events emitted until the matching
    /// [`end_batch`](Self::end_batch) belong together (typically everything
    /// one stdout line produced), so the host may hand them to its consumer
    /// at once instead of one by one, and may stamp them with the time the
    /// batch opened as their receive time (their input was read then).
    /// Batches nest; order, backpressure and every contract check are
    /// unchanged. Prefer the [`Batch`] guard, which
    /// also ends the batch on an early return or when the future is dropped.
    ///
    /// The default does nothing: a driver that never opens a batch, or a
    /// sink that ignores them, behaves as if each event were its own batch.
    fn begin_batch(&self) {}

    /// Close the batch [`begin_batch`](Self::begin_batch) opened; the
    /// outermost close hands what is pending to the consumer. An unmatched
    /// close is ignored.
    fn end_batch(&self) {}

    /// Whether anyone can still see this run's live payloads.
    ///
    /// `false` once the host knows no consumer will read them (for example
    /// `run()`, which only returns the result). It never turns back to
    /// `true`. While it is `false` a driver may leave out whole lifecycles
    /// it has not started yet — text, reasoning, tool call, step — and
    /// standalone payloads (custom, HITL audit), and so save building them.
    /// Everything else is unchanged: `run.started` first, a lifecycle that
    /// was started is completed as usual, exactly one terminal frame, every
    /// transcript item and operational event, and every layer of the
    /// response. The payload stream stays valid (spec §5); it only has
    /// fewer lifecycles.
    ///
    /// The default is `true`: a driver that never asks loses nothing.
    fn payloads_observed(&self) -> bool {
        true
    }
}

/// The outcome of [`EventSink::emit`] / [`EventSink::emit_stream`]: a future
/// that is either complete already ([`Emit::ready`], no allocation: the
/// common case) or boxed work still to do ([`Emit::new`]).
///
/// Await it once. Polled again after it completed, it answers `Ok(())`
/// (the event was delivered, or refused, on the first completion).
#[must_use = "the event may not be delivered until this is awaited"]
pub struct Emit<'a>(EmitState<'a>);

enum EmitState<'a> {
    Ready(Option<Result<(), SinkError>>),
    Pending(Pin<Box<dyn Future<Output = Result<(), SinkError>> + Send + 'a>>),
}

impl<'a> Emit<'a> {
    /// Already delivered (or refused): the result, without a future to run.
    pub fn ready(result: Result<(), SinkError>) -> Self {
        Emit(EmitState::Ready(Some(result)))
    }

    /// Delivery still to do: `work` is boxed and run when awaited.
    pub fn new(work: impl Future<Output = Result<(), SinkError>> + Send + 'a) -> Self {
        Emit(EmitState::Pending(Box::pin(work)))
    }

    /// True when the result is known without running anything.
    pub fn is_ready(&self) -> bool {
        matches!(self.0, EmitState::Ready(_))
    }
}

impl Future for Emit<'_> {
    type Output = Result<(), SinkError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.0 {
            EmitState::Ready(result) => Poll::Ready(result.take().unwrap_or(Ok(()))),
            EmitState::Pending(work) => {
                let out = work.as_mut().poll(cx);
                if out.is_ready() {
                    self.0 = EmitState::Ready(None);
                }
                out
            }
        }
    }
}

impl fmt::Debug for Emit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            EmitState::Ready(result) => f.debug_tuple("Emit::Ready").field(result).finish(),
            EmitState::Pending(_) => f.write_str("Emit::Pending"),
        }
    }
}

/// A batch of events on a sink, open for as long as the guard lives (see
/// [`EventSink::begin_batch`]).
///
/// Hold it around the delivery of what one unit of input produced, not
/// across waits for outside input: a host defers handing events to its
/// consumer while a batch is open (it still does so when it has to wait for
/// space, when a human decision is requested, and when its queue fills up).
///
/// ```
/// use agent_adaptor_driver::{Batch, EventSink, SinkError, StreamPayload};
/// async fn deliver(sink: &dyn EventSink, line: Vec<StreamPayload>) -> Result<(), SinkError> {
///     let _batch = Batch::new(sink);
///     for payload in line {
///         sink.emit_stream(payload).await?;
///     }
///     Ok(())
/// }
/// ```
#[must_use = "the batch ends when the guard is dropped"]
pub struct Batch<'a> {
    sink: &'a dyn EventSink,
}

impl<'a> Batch<'a> {
    /// Open a batch on `sink`.
    pub fn new(sink: &'a dyn EventSink) -> Self {
        sink.begin_batch();
        Batch { sink }
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        self.sink.end_batch();
    }
}

impl fmt::Debug for Batch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch").finish_non_exhaustive()
    }
}

/// Why a sink refused an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SinkError {
    /// The run was cancelled: stop the provider and return.
    #[error("run cancelled")]
    Cancelled,
    /// The event broke the driver contract and was rejected.
    #[error("driver contract violation: {0}")]
    Violation(Violation),
}
