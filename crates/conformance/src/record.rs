//! Running a driver directly — no core in between — and recording exactly
//! what it emitted, asked and returned.

use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::time::Duration;

use agent_adaptor_driver::{
    DecisionError, DecisionKind, DecisionRequest, DecisionResponse, DecisionResult, DecisionSink,
    Driver, DriverError, Emit, EventSink, Request, Response, RunContext, RunEvent, StreamPayload,
    async_trait,
};
use futures::FutureExt;

/// One thing the driver emitted, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Emitted {
    /// Through `emit_stream`.
    Stream(StreamPayload),
    /// Through `emit`.
    Event(RunEvent),
}

/// Everything one driver run produced.
#[derive(Debug)]
pub struct Trace {
    /// Emissions in call order.
    pub emitted: Vec<Emitted>,
    /// Decision requests, in order.
    pub decisions: Vec<DecisionRequest>,
    /// What `run` returned; `None` when it panicked or overran the timeout.
    pub returned: Option<Result<Response, DriverError>>,
    /// The panic message, when `run` panicked.
    pub panicked: Option<String>,
    /// True when `run` did not return within the timeout (it was cancelled,
    /// then dropped).
    pub timed_out: bool,
}

impl Trace {
    /// The stream payloads, in order.
    pub fn payloads(&self) -> impl Iterator<Item = &StreamPayload> {
        self.emitted.iter().filter_map(|e| match e {
            Emitted::Stream(p) => Some(p),
            Emitted::Event(_) => None,
        })
    }

    /// The run events, in order.
    pub fn events(&self) -> impl Iterator<Item = &RunEvent> {
        self.emitted.iter().filter_map(|e| match e {
            Emitted::Event(e) => Some(e),
            Emitted::Stream(_) => None,
        })
    }

    /// The response, when `run` returned one.
    pub fn response(&self) -> Option<&Response> {
        match &self.returned {
            Some(Ok(r)) => Some(r),
            _ => None,
        }
    }
}

/// A sink that records everything and answers decisions: permissions and
/// plan reviews are approved, questions get their first choice (or "yes").
#[derive(Debug, Default)]
pub struct RecordingSink {
    emitted: Mutex<Vec<Emitted>>,
    decisions: Mutex<Vec<DecisionRequest>>,
}

impl RecordingSink {
    fn push(&self, e: Emitted) {
        self.emitted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e);
    }

    /// Take what was recorded.
    pub fn take(&self) -> (Vec<Emitted>, Vec<DecisionRequest>) {
        let emitted = std::mem::take(&mut *self.emitted.lock().unwrap_or_else(|p| p.into_inner()));
        let decisions =
            std::mem::take(&mut *self.decisions.lock().unwrap_or_else(|p| p.into_inner()));
        (emitted, decisions)
    }
}

impl EventSink for RecordingSink {
    fn emit(&self, event: RunEvent) -> Emit<'_> {
        self.push(Emitted::Event(event));
        Emit::ready(Ok(()))
    }

    fn emit_stream(&self, payload: StreamPayload) -> Emit<'_> {
        self.push(Emitted::Stream(payload));
        Emit::ready(Ok(()))
    }

    fn decisions(&self) -> Option<&dyn DecisionSink> {
        Some(self)
    }
}

#[async_trait]
impl DecisionSink for RecordingSink {
    async fn request_decision(
        &self,
        request: DecisionRequest,
    ) -> Result<DecisionResponse, DecisionError> {
        let (result, choice) = match request.kind {
            DecisionKind::Question => (
                DecisionResult::Answered,
                request
                    .choices
                    .first()
                    .map_or_else(|| "yes".to_owned(), |c| c.key.clone()),
            ),
            _ => (DecisionResult::Approved, String::new()),
        };
        let request_id = if request.request_id.is_empty() {
            format!(
                "dec_{}",
                self.decisions
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .len()
            )
        } else {
            request.request_id.clone()
        };
        self.decisions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request);
        Ok(DecisionResponse {
            request_id,
            result,
            text: choice.clone(),
            choice,
            answer: Default::default(),
        })
    }
}

/// Run `driver` on `request` with a recording sink, bounded by `timeout`
/// (then the run is cancelled, given one more second, and dropped).
pub async fn record_run(driver: &dyn Driver, request: Request, timeout: Duration) -> Trace {
    let sink = RecordingSink::default();
    let ctx = RunContext::new(request.run_id.clone());
    let cancel = ctx.cancel.clone();
    let call = AssertUnwindSafe(driver.run(ctx, request, &sink)).catch_unwind();
    tokio::pin!(call);
    let mut timed_out = false;
    let outcome = match tokio::time::timeout(timeout, &mut call).await {
        Ok(r) => Some(r),
        Err(_) => {
            timed_out = true;
            cancel.cancel();
            tokio::time::timeout(Duration::from_secs(1), &mut call)
                .await
                .ok()
        }
    };
    let (returned, panicked) = match outcome {
        Some(Ok(r)) => (Some(r), None),
        Some(Err(panic)) => (None, Some(panic_message(&*panic))),
        None => (None, None),
    };
    let (emitted, decisions) = sink.take();
    Trace {
        emitted,
        decisions,
        returned,
        panicked,
        timed_out,
    }
}

/// A panic payload as text.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
