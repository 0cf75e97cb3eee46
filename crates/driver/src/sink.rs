//! The sink a driver reports through (spec §4).

use async_trait::async_trait;

use crate::decision::DecisionSink;
use crate::event::RunEvent;
use crate::lifecycle::Violation;
use crate::stream::StreamPayload;

/// Where a driver sends everything it observes during [`Driver::run`](crate::Driver::run).
///
/// Both methods end up on the one public event stream. They are `async`
/// because delivery applies backpressure: a reliable event (a lifecycle
/// boundary, a transcript item, a tool result) waits for consumer space.
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
#[async_trait]
pub trait EventSink: Send + Sync {
    /// Report an operational event or transcript item (spec §6).
    async fn emit(&self, event: RunEvent) -> Result<(), SinkError>;

    /// Report a normalized live payload (spec §5).
    async fn emit_stream(&self, payload: StreamPayload) -> Result<(), SinkError>;

    /// The decision-capable side of the sink, when the host can answer
    /// human decisions (spec §10).
    fn decisions(&self) -> Option<&dyn DecisionSink> {
        None
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
