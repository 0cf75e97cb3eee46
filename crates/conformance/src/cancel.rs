//! RUN-05: a cancelled run returns within the grace period, and no process
//! it started is left running.
//!
//! The driver runs a [`CancelCase`] against a sink that cancels
//! `ctx.cancel` once the driver has emitted `after_events` events and then,
//! as core's sink does, refuses every later emission with
//! [`SinkError::Cancelled`]. The case must keep the provider busy past that
//! point (a prompt its fake CLI or mock answers slowly): what is judged is
//! whether the driver notices the cancellation while it waits on the
//! provider, not only when the sink refuses an event.

use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_adaptor_driver::{
    CancellationToken, DecisionSink, Driver, Emit, EventSink, RunContext, RunEvent, SinkError,
    StreamPayload,
};
use futures::FutureExt;
use tokio::time::Instant;

use crate::options::CancelCase;
use crate::procs::{self, Watched};
use crate::record::{RecordingSink, panic_message};
use crate::report::Report;

/// How long after the driver returned its processes may take to finish
/// dying (a killed group member is not gone the instant the signal is sent).
const PROCESS_SETTLE: Duration = Duration::from_secs(1);

/// A sink that cancels the run after a number of emissions.
struct CancellingSink {
    after: usize,
    token: CancellationToken,
    count: AtomicUsize,
    cancelled_at: Mutex<Option<Instant>>,
    spawned: Mutex<Vec<Watched>>,
    decisions: RecordingSink,
}

impl CancellingSink {
    fn new(after: usize, token: CancellationToken) -> Self {
        CancellingSink {
            after,
            token,
            count: AtomicUsize::new(0),
            cancelled_at: Mutex::new(None),
            spawned: Mutex::new(Vec::new()),
            decisions: RecordingSink::default(),
        }
    }

    fn cancel(&self) {
        self.cancelled_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert_with(Instant::now);
        self.token.cancel();
    }

    fn note(&self, event: Option<&RunEvent>) -> Result<(), SinkError> {
        if let Some(RunEvent::Spawn(o)) = event
            && let Some(pid) = o.metadata.get("pid").and_then(|p| p.parse::<u32>().ok())
        {
            self.spawned
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Watched::new(pid));
        }
        if self.token.is_cancelled() {
            return Err(SinkError::Cancelled);
        }
        if self.count.fetch_add(1, Ordering::Relaxed) + 1 >= self.after {
            self.cancel();
        }
        Ok(())
    }

    fn cancelled_at(&self) -> Option<Instant> {
        *self.cancelled_at.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl EventSink for CancellingSink {
    fn emit(&self, event: RunEvent) -> Emit<'_> {
        Emit::ready(self.note(Some(&event)))
    }

    fn emit_stream(&self, _payload: StreamPayload) -> Emit<'_> {
        Emit::ready(self.note(None))
    }

    fn decisions(&self) -> Option<&dyn DecisionSink> {
        Some(&self.decisions)
    }
}

/// Judge RUN-05 on one cancellation case; `timeout` bounds the wait for
/// the cancel point.
pub(crate) async fn check(
    driver: &dyn Driver,
    case: &CancelCase,
    timeout: Duration,
    report: &mut Report,
) {
    let scope = case.name.as_str();
    let ctx = RunContext::new(case.request.run_id.clone());
    let sink = CancellingSink::new(case.after_events, ctx.cancel.clone());
    if case.after_events == 0 {
        sink.cancel();
    }
    let mut call =
        Box::pin(AssertUnwindSafe(driver.run(ctx, case.request.clone(), &sink)).catch_unwind());
    let mut f = Vec::new();
    let before = tokio::select! {
        biased;
        r = &mut call => Some(r),
        () = sink.token.cancelled() => None,
        () = tokio::time::sleep(timeout) => {
            f.push(format!(
                "only {} of the {} events before the cancel arrived within {timeout:?}",
                sink.count.load(Ordering::Relaxed),
                case.after_events
            ));
            sink.cancel();
            None
        }
    };
    let Some(cancelled_at) = sink.cancelled_at() else {
        f.push(format!(
            "the run {} after {} events, before the cancel after event {}: the case must keep the provider busy",
            if matches!(before, Some(Ok(_))) { "returned" } else { "panicked" },
            sink.count.load(Ordering::Relaxed),
            case.after_events
        ));
        return report.judge("RUN-05", scope, f);
    };
    let ended = match before {
        Some(r) => Ok(r),
        None => tokio::time::timeout_at(cancelled_at + case.grace, &mut call).await,
    };
    match ended {
        Ok(Ok(_)) => {}
        Ok(Err(p)) => f.push(format!(
            "the run panicked after the cancel: {}",
            panic_message(&*p)
        )),
        Err(_) => f.push(format!(
            "the run did not return within the grace period ({:?}) of the cancel",
            case.grace
        )),
    }
    // A driver that did not return is dropped, as core drops it.
    drop(call);
    let returned_at = Instant::now();
    report.judge("RUN-05", scope, f);
    let spawned = std::mem::take(&mut *sink.spawned.lock().unwrap_or_else(|p| p.into_inner()));
    let deadline = (cancelled_at + case.grace).max(returned_at + PROCESS_SETTLE);
    processes(
        &spawned,
        cancelled_at,
        deadline,
        &format!("{scope}: processes"),
        report,
    )
    .await;
}

/// The process half of RUN-05: everything `spawned` watches is gone by
/// `deadline`; what is not is reported, then stopped.
async fn processes(
    spawned: &[Watched],
    cancelled_at: Instant,
    deadline: Instant,
    scope: &str,
    report: &mut Report,
) {
    if spawned.is_empty() {
        return report.skip(
            "RUN-05",
            scope,
            "the run reported no process (RunEvent::Spawn with a pid)",
        );
    }
    loop {
        let mut f = Vec::new();
        for w in spawned {
            match procs::left(w) {
                Err(e) => return report.skip("RUN-05", scope, e),
                Ok(left) if left.is_empty() => {}
                Ok(left) => f.push((w, left)),
            }
        }
        let now = Instant::now();
        if f.is_empty() || now >= deadline {
            let findings = f
                .iter()
                .map(|(w, left)| {
                    procs::stop(w);
                    format!(
                        "{}: processes {left:?} still ran {:?} after the cancel",
                        w.describe(),
                        now - cancelled_at
                    )
                })
                .collect();
            return report.judge("RUN-05", scope, findings);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
