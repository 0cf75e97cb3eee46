//! The core side of the driver sink: receive order → sequence, lifecycle
//! enforcement, translation to public events, the transcript mirror, and the
//! routing of human decisions.

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_driver::{
    DecisionError, DecisionRequest, DecisionResponse, DecisionResult, DecisionSink, Emit,
    EventSink, LifecycleChecker, ProviderCoords, RunEvent, RunFailure, SinkError, StreamCapability,
    StreamKind, StreamPayload, TranscriptFingerprint, Usage, Violation, async_trait,
};
use chrono::Utc;
use serde_json::{Value, json};
use tokio::sync::{Mutex, MutexGuard};
use tokio::time::Instant;

use crate::approval::{Answer, ApprovalHandler, ApprovalRequest, Responder};
use crate::broker::{Batcher, Offer, Publisher, Waiting};
use crate::control::{RunControl, StopReason};
use crate::event::{Event, notice_kind};
use crate::policy::{ActiveClock, DecisionRecord, Effective};
use crate::translate::{self, Routed};

/// How human decisions are routed and decided for this run.
#[derive(Clone, Default)]
pub(crate) struct ApprovalRouting {
    pub(crate) handler: Option<ApprovalHandler>,
    /// The run's approval policy, resolved against the driver.
    pub(crate) policy: Effective,
    /// The active-execution clock, paused while a human is asked.
    pub(crate) clock: Option<Arc<ActiveClock>>,
    /// The run's thread (its "always allow" grants), for a thread run.
    pub(crate) thread: Option<crate::thread::grants::ThreadGrants>,
}

/// Everything the sink tracks, behind one FIFO lock: publication order is
/// the order in which this lock is taken.
pub(crate) struct SinkState {
    pub(crate) publisher: Publisher,
    pub(crate) lifecycle: LifecycleChecker,
    pub(crate) violations: Vec<Violation>,
    /// The fingerprint of the emitted transcript items, in order (RUN-04
    /// compares it with the returned transcript's; no copy of the items, and
    /// no per-item list, is kept).
    pub(crate) items: TranscriptFingerprint,
    pub(crate) provider: ProviderCoords,
    pub(crate) terminal_usage: Option<Usage>,
    pub(crate) terminal_error: Option<RunFailure>,
    /// Every decision settled so far (for the result).
    pub(crate) decisions: Vec<DecisionRecord>,
}

/// The sink core hands to [`Driver::run`](agent_adaptor_driver::Driver::run).
pub(crate) struct CoreSink {
    pub(crate) state: Mutex<SinkState>,
    /// Driver batches, handled outside the publication lock.
    batcher: Batcher,
    control: Arc<RunControl>,
    approvals: ApprovalRouting,
}

impl CoreSink {
    pub(crate) fn new(
        publisher: Publisher,
        capability: StreamCapability,
        control: Arc<RunControl>,
        approvals: ApprovalRouting,
    ) -> Self {
        CoreSink {
            batcher: publisher.batcher(),
            state: Mutex::new(SinkState {
                publisher,
                lifecycle: LifecycleChecker::new(capability),
                violations: Vec::new(),
                items: TranscriptFingerprint::new(),
                provider: ProviderCoords::default(),
                terminal_usage: None,
                terminal_error: None,
                decisions: Vec::new(),
            }),
            control,
            approvals,
        }
    }

    /// Publish an event core itself produced (notices, approvals).
    pub(crate) async fn publish_core(
        &self,
        build: impl FnOnce(crate::event::EventMeta) -> Event,
    ) -> Result<(), SinkError> {
        let mut st = self.state.lock().await;
        let ev = build(st.publisher.meta());
        let published = st.publisher.publish(ev).await;
        // Core's own events (notices, approval requests) reach the consumer
        // at once, even inside a driver's batch: the driver may be waiting
        // for the answer.
        self.batcher.flush();
        published.map_err(|_| SinkError::Cancelled)
    }

    /// Record a contract violation, report it as a notice, refuse the event.
    async fn reject(st: &mut SinkState, v: Violation, subject: Value) -> Result<(), SinkError> {
        st.report_violation(v.clone(), subject).await;
        Err(SinkError::Violation(v))
    }
}

impl SinkState {
    /// Record a driver contract violation and publish it as a reliable
    /// `driver.violation` notice carrying the rejected subject.
    pub(crate) async fn report_violation(&mut self, v: Violation, subject: Value) {
        tracing::warn!(clause = v.clause, detail = %v.detail, "driver contract violation");
        let ev = translate::notice(
            self.publisher.meta(),
            notice_kind::DRIVER_VIOLATION,
            v.to_string(),
            Some(json!({"clause": v.clause, "detail": v.detail, "rejected": subject})),
        );
        self.violations.push(v);
        // Delivery can only fail on cancellation; the run is failed by the
        // recorded violation either way.
        let _ = self.publisher.publish(ev).await;
    }
}

/// What the sink decided about one driver event, without waiting.
enum Accepted {
    /// Handled: delivered, dropped and counted, captured, or refused.
    Done(Result<(), SinkError>),
    /// A reliable event waiting for consumer space, or a delta giving way
    /// once before it may be dropped.
    Wait(Box<Waiting>),
    /// A contract violation to report.
    Reject(Violation, Value),
}

impl SinkState {
    fn offer(&mut self, ev: Event) -> Accepted {
        match self.publisher.offer(ev) {
            Offer::Done(done) => Accepted::Done(done.map_err(|_| SinkError::Cancelled)),
            Offer::Wait(waiting) => Accepted::Wait(waiting),
        }
    }

    fn accept_event(&mut self, event: RunEvent) -> Accepted {
        if let RunEvent::Item(item) = &event {
            if let Err(t) = item.validate() {
                let v = Violation::new(t.clause(), t.to_string());
                let subject = serde_json::to_value(item).unwrap_or(Value::Null);
                return Accepted::Reject(v, subject);
            }
            self.items.push_digest(item.digest());
        }
        if self.publisher.skip_unobserved() {
            return Accepted::Done(Ok(()));
        }
        let ev = translate::run_event(self.publisher.meta(), event);
        self.offer(ev)
    }

    fn accept_stream(&mut self, payload: StreamPayload) -> Accepted {
        if let Err(v) = self.lifecycle.check(&payload) {
            let subject = serde_json::to_value(&payload).unwrap_or(Value::Null);
            return Accepted::Reject(v, subject);
        }
        let routed_only = matches!(
            payload.kind,
            StreamKind::RunStarted | StreamKind::RunFinished { .. } | StreamKind::RunError { .. }
        );
        // Everything but the run lifecycle becomes one event: unread, it need
        // not be built.
        if !routed_only && self.publisher.skip_unobserved() {
            return Accepted::Done(Ok(()));
        }
        match translate::payload(self.publisher.meta(), payload) {
            Routed::Publish(ev) => return self.offer(ev),
            Routed::Started(coords) => self.provider = coords,
            Routed::Finished(usage) => self.terminal_usage = usage,
            Routed::Failed(failure) => self.terminal_error = Some(failure),
        }
        Accepted::Done(Ok(()))
    }
}

impl CoreSink {
    /// Finish an accepted event while holding the publication lock.
    async fn complete(
        mut st: MutexGuard<'_, SinkState>,
        accepted: Accepted,
    ) -> Result<(), SinkError> {
        match accepted {
            Accepted::Done(done) => done,
            Accepted::Wait(waiting) => st
                .publisher
                .publish_waiting(waiting)
                .await
                .map_err(|_| SinkError::Cancelled),
            Accepted::Reject(v, subject) => Self::reject(&mut st, v, subject).await,
        }
    }

    /// Run `accept` under the publication lock. The common case — lock free,
    /// room in the queue — completes synchronously and returns a ready
    /// future; only contention, backpressure or a violation build a real one.
    fn emit_with<'a, T: Send + 'a>(
        &'a self,
        input: T,
        accept: fn(&mut SinkState, T) -> Accepted,
    ) -> Emit<'a> {
        match self.state.try_lock() {
            Ok(mut st) => match accept(&mut st, input) {
                Accepted::Done(done) => Emit::ready(done),
                accepted => Emit::new(Self::complete(st, accepted)),
            },
            Err(_) => Emit::new(async move {
                let mut st = self.state.lock().await;
                let accepted = accept(&mut st, input);
                Self::complete(st, accepted).await
            }),
        }
    }
}

impl EventSink for CoreSink {
    fn emit(&self, event: RunEvent) -> Emit<'_> {
        self.emit_with(event, SinkState::accept_event)
    }

    fn emit_stream(&self, payload: StreamPayload) -> Emit<'_> {
        self.emit_with(payload, SinkState::accept_stream)
    }

    fn decisions(&self) -> Option<&dyn DecisionSink> {
        Some(self)
    }

    fn begin_batch(&self) {
        self.batcher.begin();
    }

    fn end_batch(&self) {
        self.batcher.end();
    }

    fn payloads_observed(&self) -> bool {
        self.batcher.observed()
    }
}

#[async_trait]
impl DecisionSink for CoreSink {
    async fn request_decision(
        &self,
        req: DecisionRequest,
    ) -> Result<DecisionResponse, DecisionError> {
        // What the driver emitted before asking is visible while it waits.
        self.batcher.flush();
        crate::policy::decide(self, req).await
    }
}

impl CoreSink {
    /// The run's approval routing and policy.
    pub(crate) fn approvals(&self) -> &ApprovalRouting {
        &self.approvals
    }

    /// The run's active-execution clock, if it has a budget.
    pub(crate) fn active_clock(&self) -> Option<Arc<ActiveClock>> {
        self.approvals.clock.clone()
    }

    /// Stop the run (a policy decided so).
    pub(crate) fn stop(&self, reason: StopReason) {
        self.control.stop(reason);
    }

    /// True once the run is stopping (cancelled, timed out, or stopped by
    /// a policy): nobody is asked any more.
    pub(crate) fn is_stopped(&self) -> bool {
        self.control.is_stopped()
    }

    /// Keep a settled decision for the result.
    pub(crate) async fn record_decision(&self, record: DecisionRecord) {
        self.state.lock().await.decisions.push(record);
    }

    /// Publish a core notice; fails only when the run is cancelled.
    pub(crate) async fn notice(
        &self,
        kind: &'static str,
        text: String,
        data: Value,
    ) -> Result<(), DecisionError> {
        self.publish_core(|meta| translate::notice(meta, kind, text, Some(data)))
            .await
            .map_err(|_| DecisionError::Cancelled)
    }

    /// Put one attempt of `req` to the host — the `on_approval` handler, or
    /// the event stream — and wait for the answer, the deadline (`timeout`
    /// from now; `None` waits forever) or cancellation. Sets the request's
    /// `created_at` and `deadline`.
    pub(crate) async fn ask_host(
        &self,
        req: &mut DecisionRequest,
        timeout: Option<Duration>,
    ) -> Result<Answer, DecisionError> {
        let now = Utc::now();
        req.created_at = Some(now);
        req.deadline = timeout
            .and_then(|t| chrono::Duration::from_std(t).ok())
            .map(|t| now + t);
        let expiry = timeout.map(|t| Instant::now() + t);
        let (responder, rx) = Responder::new();
        let grant: Option<Arc<str>> = self
            .approvals
            .thread
            .as_ref()
            .and_then(|_| crate::thread::grants::grant_name(req))
            .map(Arc::from);
        let build = |meta| ApprovalRequest {
            meta,
            id: req.request_id.clone(),
            kind: req.kind,
            title: req.prompt.clone(),
            source: req.source.clone(),
            tool_call_id: req.tool_call_id.clone(),
            choices: req.choices.clone(),
            details: req.payload.clone(),
            created_at: now,
            deadline: req.deadline,
            attempt: req.retry_attempt,
            responder: responder.clone(),
            grant: grant.clone(),
        };
        match &self.approvals.handler {
            Some(handler) => {
                let audit = serde_json::to_value(&*req).unwrap_or(Value::Null);
                self.notice(notice_kind::APPROVAL_REQUESTED, req.prompt.clone(), audit)
                    .await?;
                let meta = self.state.lock().await.publisher.meta();
                let call = handler(build(meta));
                let outcome = tokio::select! {
                    r = call => Some(r),
                    () = sleep_until(expiry) => None,
                    () = self.control.cancel.cancelled() => {
                        responder.expire();
                        return Err(DecisionError::Cancelled);
                    }
                };
                self.handler_answer(outcome, &responder, rx)
            }
            None => {
                self.publish_core(|meta| Event::ApprovalRequest(Box::new(build(meta))))
                    .await
                    .map_err(|_| DecisionError::Cancelled)?;
                Ok(tokio::select! {
                    a = rx => a.unwrap_or(Answer {
                        result: DecisionResult::Aborted,
                        choice: String::new(),
                        text: String::new(),
                        grant: false,
                        by_policy: false,
                    }),
                    () = sleep_until(expiry) => {
                        responder.expire();
                        timed_out()
                    }
                    () = self.control.cancel.cancelled() => {
                        responder.expire();
                        return Err(DecisionError::Cancelled);
                    }
                })
            }
        }
    }

    fn handler_answer(
        &self,
        outcome: Option<Result<(), crate::approval::BoxError>>,
        responder: &Responder,
        mut rx: tokio::sync::oneshot::Receiver<Answer>,
    ) -> Result<Answer, DecisionError> {
        match outcome {
            None => {
                responder.expire();
                Ok(rx.try_recv().unwrap_or_else(|_| timed_out()))
            }
            Some(Err(e)) => {
                responder.expire();
                let msg = e.to_string();
                self.control.stop(StopReason::ApprovalHandler(msg.clone()));
                Err(DecisionError::HandlerFailed(msg))
            }
            Some(Ok(())) => match rx.try_recv() {
                Ok(answer) => Ok(answer),
                Err(_) => {
                    responder.expire();
                    let msg = "approval handler returned without resolving the request".to_owned();
                    self.control.stop(StopReason::ApprovalHandler(msg.clone()));
                    Err(DecisionError::HandlerFailed(msg))
                }
            },
        }
    }
}

fn timed_out() -> Answer {
    Answer {
        result: DecisionResult::TimedOut,
        choice: String::new(),
        text: String::new(),
        grant: false,
        by_policy: false,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::broker;
    use crate::event::EventMeta;

    #[tokio::test]
    async fn the_uncontended_path_is_ready_at_once() {
        // Every driver event goes through emit/emit_stream: with the lock
        // free and room in the queue, the answer must be a ready value (no
        // boxed future, no allocation), already carrying the outcome.
        let meta = EventMeta::unstamped("run_x".into(), None);
        let control = Arc::new(RunControl::default());
        let (publisher, _consumer) = broker(Default::default(), control.clone(), meta, None);
        let sink = CoreSink::new(
            publisher,
            StreamCapability::FULL,
            control,
            ApprovalRouting::default(),
        );
        let f = sink.emit_stream(StreamPayload::run_started());
        assert!(f.is_ready(), "{f:?}");
        assert_eq!(f.await, Ok(()));
        let f = sink.emit(RunEvent::stdout("x"));
        assert!(f.is_ready(), "{f:?}");
        assert_eq!(f.await, Ok(()));
        // A violation is not ready: it is reported to the host first.
        let f = sink.emit_stream(StreamPayload::run_started());
        assert!(!f.is_ready(), "{f:?}");
        assert!(matches!(f.await, Err(SinkError::Violation(_))));
    }
}
