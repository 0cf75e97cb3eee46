//! The single execution pipeline: one task per run that publishes
//! `RunStarted`, drives the driver, enforces the contract at the end, gates
//! the checkpoint, forms the outcome, and closes the stream with `RunFinished`.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_adaptor_driver::{
    Driver, DriverError, RawBytes, Request, Response, RunContext, RunFailure, SinkError, Violation,
    describe_exit, stderr_tail,
};
use futures::FutureExt;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::broker::{BrokerConfig, broker};
use crate::checkpoint::{RunFacts, Verdict, gate};
use crate::control::{RunControl, StopReason};
use crate::event::{Event, EventMeta, RunFinished, RunStarted, notice_kind};
use crate::result::{Error, FailureReason, RunCause, RunError, RunResult};
use crate::sink::{ApprovalRouting, CoreSink, SinkState};
use crate::stream::{Outcome, RunStream};
use crate::thread::recorder::Recorder;
use crate::thread::{ActiveThread, ThreadError, ThreadPlan};
use crate::translate;

/// Everything one run needs, resolved.
pub(crate) struct Launch {
    pub(crate) driver: Arc<dyn Driver>,
    pub(crate) request: Request,
    pub(crate) timeout: Option<Duration>,
    pub(crate) approvals: ApprovalRouting,
    pub(crate) broker: BrokerConfig,
    pub(crate) cancel_grace: Duration,
    pub(crate) thread_key: Option<Arc<str>>,
    pub(crate) thread: Option<ThreadPlan>,
    /// The agent's resource manager (workspace, services), if any.
    pub(crate) resources: Option<Arc<dyn crate::resources::RunResources>>,
    /// The compiled schema and mechanism of a structured-output run.
    pub(crate) structured: Option<crate::structured::Prepared>,
    /// The run's skill handles, alive until the run ends.
    pub(crate) skills: Vec<Arc<dyn agent_adaptor_driver::SkillHandle>>,
}

/// A stream that failed before it started: no events, `result` is `err`.
pub(crate) fn refused(run_id: Arc<str>, err: Error) -> RunStream {
    let (tx, rx) = watch::channel(Some(Arc::new(Err(err))));
    drop(tx);
    RunStream::new(run_id, Arc::new(RunControl::default()), rx, None, None)
}

/// Admit the run: spawn its task and return the stream at once.
pub(crate) fn start(launch: Launch) -> RunStream {
    let run_id: Arc<str> = launch.request.run_id.as_str().into();
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return refused(run_id, Error::NoRuntime);
    };
    let control = Arc::new(RunControl::default());
    let holder = launch
        .thread
        .as_ref()
        .map(|plan| Arc::from(plan.holder(&run_id)));
    let (tx, rx) = watch::channel(None);
    let template = EventMeta::unstamped(run_id.clone(), launch.thread_key.clone());
    let spec = launch
        .thread
        .as_ref()
        .and_then(|plan| plan.recorder_spec(&run_id, &launch.request.prompt));
    let (recorder, tap) = match spec {
        Some(spec) => {
            let (recorder, tap) = Recorder::spawn(&runtime, spec, control.clone());
            (Some(recorder), Some(tap))
        }
        None => (None, None),
    };
    let (publisher, consumer) = broker(launch.broker, control.clone(), template, tap);
    let capability = launch.driver.stream_capability().unwrap_or_default();
    let sink = CoreSink::new(
        publisher,
        capability,
        control.clone(),
        launch.approvals.clone(),
    );
    runtime.spawn(execute(launch, sink, control.clone(), tx, recorder));
    RunStream::new(run_id, control, rx, Some(consumer), holder)
}

/// How the driver call ended.
enum Driven {
    Returned(Box<Result<Response, DriverError>>),
    Panicked(String),
    Unresponsive(Duration),
}

async fn execute(
    mut launch: Launch,
    sink: CoreSink,
    control: Arc<RunControl>,
    outcome_tx: watch::Sender<Outcome>,
    mut recorder: Option<Recorder>,
) {
    // The skills' directories stay alive until the run has ended.
    let _skills = std::mem::take(&mut launch.skills);
    // Core's own RunStarted is always first; the queue is empty, so it is
    // delivered even if the run was cancelled before this task ran.
    let _ = sink
        .publish_core(|meta| {
            tracing::info!(
                run_id = %meta.run_id,
                thread = meta.thread_key.as_deref().unwrap_or(""),
                "run started"
            );
            Event::RunStarted(RunStarted { meta })
        })
        .await;
    // An explicit retry the driver cannot honour degrades to abort: one
    // warning, up front.
    if let Some((text, data)) = sink.approvals().policy.retry_warning() {
        let _ = sink
            .publish_core(|meta| translate::notice(meta, notice_kind::LIFECYCLE, text, Some(data)))
            .await;
    }

    // A thread run takes its lease and resolves its record before the
    // driver is entered; failing that, the driver is never called.
    let thread = match launch.thread.take() {
        None => None,
        Some(plan) => match plan.begin(&mut launch.request).await {
            Ok(active) => {
                if let Some(replaced) = &active.replaced {
                    let (text, data) = replaced.notice();
                    let _ = sink
                        .publish_core(|meta| {
                            translate::notice(
                                meta,
                                notice_kind::THREAD_SESSION_REPLACED,
                                text,
                                Some(data),
                            )
                        })
                        .await;
                }
                Some(active)
            }
            Err(e) => {
                if let Some(r) = &mut recorder {
                    r.go(false);
                }
                let mut st = sink.state.lock().await;
                let outcome = Err(Error::Thread(e));
                let finished = finished_event(st.publisher.meta(), &outcome, &st);
                outcome_tx.send_replace(Some(Arc::new(outcome)));
                st.publisher.finish(finished);
                return;
            }
        },
    };

    // Resources (workspace, services) are made ready after the thread lease
    // and before the driver; failing that, the driver is never called.
    let resources = match launch.resources.take() {
        None => None,
        Some(manager) => {
            let run = crate::resources::ResourceRun {
                run_id: launch.request.run_id.to_string(),
                thread_key: launch.thread_key.as_deref().map(str::to_owned),
                base_dir: launch.request.workspace.clone(),
            };
            match manager.prepare(&run).await {
                Ok(prepared) => {
                    if let Some(ws) = &prepared.workspace {
                        launch.request.workspace = Some(ws.path.clone());
                    }
                    Some((manager, run, prepared))
                }
                Err(e) => {
                    if let Some(r) = &mut recorder {
                        r.go(false);
                    }
                    if let Some(t) = thread {
                        let _ = t.finish(None, false).await;
                    }
                    let mut st = sink.state.lock().await;
                    let outcome = Err(Error::Resources(e));
                    let finished = finished_event(st.publisher.meta(), &outcome, &st);
                    outcome_tx.send_replace(Some(Arc::new(outcome)));
                    st.publisher.finish(finished);
                    return;
                }
            }
        }
    };

    if let Some(r) = &mut recorder {
        r.go(true);
    }
    let deadline = launch.timeout.map(|t| Instant::now() + t);
    let streaming = launch.request.streaming;
    // A child token: the driver observes core's cancellation, but cannot
    // cancel core's run by cancelling its own token.
    let ctx = RunContext {
        run_id: launch.request.run_id.clone(),
        cancel: control.cancel.child_token(),
        deadline,
    };
    let driving = drive(
        &*launch.driver,
        ctx,
        launch.request,
        &sink,
        &control,
        deadline,
        launch.cancel_grace,
    );
    // The active-execution budget stops the run when it runs out.
    let driving = crate::policy::budgeted(driving, sink.active_clock(), &control);
    let driven = match &thread {
        None => driving.await,
        Some(t) => {
            tokio::select! {
                biased;
                d = driving => d,
                () = t.keep_alive(&control) => unreachable_keep_alive(),
            }
        }
    };

    let mut st = sink.state.lock().await;
    let stop = control.reason();
    if let (Driven::Returned(returned), None) = (&driven, &stop)
        && let Ok(resp) = &**returned
    {
        end_of_run_checks(&mut st, resp, streaming).await;
    }
    let mut outcome = conclude(&*launch.driver, &mut st, driven, stop, launch.timeout).await;
    if let Some(prepared) = &launch.structured {
        outcome = crate::structured::finish(prepared, outcome);
    }
    if let Some((manager, run, prepared)) = resources {
        outcome = release_resources(&*manager, &run, &prepared, outcome).await;
    }
    // Everything recorded so far is written before the record is saved:
    // a run whose log failed saves nothing.
    if let Some(r) = &recorder
        && outcome.is_ok()
        && let Err(e) = r.flush().await
    {
        outcome = event_log_failure(outcome, e);
    }
    if let Some(t) = thread {
        outcome = persist(t, outcome).await;
    }
    let finished = finished_event(st.publisher.meta(), &outcome, &st);
    let mut sealed = st.publisher.seal(finished);
    if let Some(r) = recorder
        && let Err(e) = r.finish().await
        && !is_event_log_failure(&outcome)
    {
        outcome = event_log_failure(outcome, e);
        if let Some(last) = sealed.finished_mut() {
            *last = finished_event(last.meta().clone(), &outcome, &st);
        }
    }
    // The outcome is set before the stream closes: a closed stream means
    // `result()` is ready.
    outcome_tx.send_replace(Some(Arc::new(outcome)));
    st.publisher.close(sealed);
}

/// Whether the run already failed for its event log.
fn is_event_log_failure(outcome: &Result<RunResult, Error>) -> bool {
    matches!(outcome, Err(Error::Run(run))
        if matches!(run.cause, Some(RunCause::Thread(ThreadError::EventLog(_)))))
}

/// The run failed because its event log could not be written (a result
/// it had is kept in the error).
fn event_log_failure(
    outcome: Result<RunResult, Error>,
    e: crate::thread::StoreError,
) -> Result<RunResult, Error> {
    let result = match outcome {
        Ok(r) => Some(r),
        Err(Error::Run(run)) => run.result.map(|r| *r),
        Err(_) => None,
    };
    let e = ThreadError::EventLog(e);
    fail(
        FailureReason::Infrastructure,
        e.to_string(),
        Some(RunCause::Thread(e)),
        result,
        None,
    )
}

/// Release the run's resources and attach what they report to the result
/// (a failed run's partial result too); a release failure fails the run.
async fn release_resources(
    manager: &dyn crate::resources::RunResources,
    run: &crate::resources::ResourceRun,
    prepared: &crate::resources::Prepared,
    outcome: Result<RunResult, Error>,
) -> Result<RunResult, Error> {
    let released = manager.finish(run, prepared, outcome.is_ok()).await;
    let attach = |r: &mut RunResult, ws: Option<crate::resources::WorkspaceReport>| {
        if !prepared.services.is_empty() {
            let services: Vec<_> = prepared
                .services
                .iter()
                .chain(r.services.iter())
                .cloned()
                .collect();
            r.services = services.into();
        }
        r.workspace = ws.or_else(|| prepared.workspace.clone()).map(Arc::new);
    };
    match (outcome, released) {
        (Ok(mut r), Ok(ws)) => {
            attach(&mut r, ws);
            Ok(r)
        }
        (Ok(mut r), Err(e)) => {
            attach(&mut r, None);
            fail(
                FailureReason::Infrastructure,
                format!("releasing the run's resources failed: {e}"),
                Some(RunCause::Resources(e)),
                Some(r),
                None,
            )
        }
        (Err(Error::Run(mut run_err)), released) => {
            if let Some(r) = run_err.result.as_deref_mut() {
                attach(r, released.ok().flatten());
            }
            Err(Error::Run(run_err))
        }
        (Err(e), _) => Err(e),
    }
}

/// `keep_alive` never returns: it renews, or stops the run and waits.
fn unreachable_keep_alive() -> Driven {
    Driven::Panicked("lease keep-alive returned".into())
}

/// Save a successful thread run's validated checkpoint; a failed run, or a
/// success without a valid checkpoint, leaves the previous record active.
async fn persist(
    thread: ActiveThread,
    outcome: Result<RunResult, Error>,
) -> Result<RunResult, Error> {
    match outcome {
        Ok(result) => {
            let state = result.checkpoint().and_then(|c| c.state.as_ref());
            match thread.finish(state, true).await {
                Ok(()) => Ok(result),
                Err(e) => fail(
                    FailureReason::Infrastructure,
                    e.to_string(),
                    Some(RunCause::Thread(e)),
                    Some(result),
                    None,
                ),
            }
        }
        Err(e) => {
            let _ = thread.finish(None, false).await;
            Err(e)
        }
    }
}

async fn drive(
    driver: &dyn Driver,
    ctx: RunContext,
    request: Request,
    sink: &CoreSink,
    control: &RunControl,
    deadline: Option<Instant>,
    grace: Duration,
) -> Driven {
    let call = AssertUnwindSafe(driver.run(ctx, request, sink)).catch_unwind();
    tokio::pin!(call);
    let returned = |r: Result<Result<Response, DriverError>, Box<dyn Any + Send>>| match r {
        Ok(r) => Driven::Returned(Box::new(r)),
        Err(panic) => Driven::Panicked(panic_message(&*panic)),
    };
    tokio::select! {
        biased;
        r = &mut call => return returned(r),
        () = control.cancel.cancelled() => {}
        () = sleep_until(deadline) => control.stop(StopReason::DeadlineExceeded),
    }
    // Stopping: the driver was told through its token; give it the grace
    // period to stop the provider and return, then drop it.
    match tokio::time::timeout(grace, &mut call).await {
        Ok(r) => returned(r),
        Err(_) => Driven::Unresponsive(grace),
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// Contract checks that need the whole run: a missing terminal frame and the
/// transcript mirror (RUN-04).
async fn end_of_run_checks(st: &mut SinkState, resp: &Response, streaming: bool) {
    if let Err(v) = st.lifecycle.finish(streaming) {
        st.report_violation(v, Value::Null).await;
    }
    let (emitted, returned) = (st.items, resp.transcript.fingerprint());
    if emitted != returned {
        let detail = if emitted.len() == returned.len() {
            format!(
                "the {} returned transcript items differ from the {} emitted",
                returned.len(),
                emitted.len()
            )
        } else {
            format!(
                "emitted {} transcript items but returned {}",
                emitted.len(),
                returned.len()
            )
        };
        let v = Violation::new("RUN-04", detail);
        st.report_violation(v, Value::Null).await;
    }
}

/// What the driver's response says about how the run ended, besides the result.
struct Ending {
    failure: Option<RunFailure>,
    exit_code: Option<i32>,
    signal: Option<String>,
    timed_out: bool,
    /// Stopped only because it lingered after its output was over.
    stopped_after_output: bool,
    /// The provider's stderr: its last lines go into a failure's message.
    stderr: RawBytes,
}

/// A failed run's message with the last lines of the provider's stderr
/// appended (redacted, bounded: [`stderr_tail`]), and those lines as the
/// error's `details.stderr_tail`. The one place every CLI driver's failure
/// meets its stderr (a failure the provider reported itself keeps its own
/// message and gets only the details).
fn with_stderr(message: String, stderr: &RawBytes) -> (String, Option<String>, Option<Value>) {
    match stderr_tail(stderr) {
        Some(tail) => {
            let message = format!("{message}; stderr: {tail}");
            let details = json!({ "stderr_tail": &tail });
            (message, Some(tail), Some(details))
        }
        None => (message, None, None),
    }
}

fn fail(
    reason: FailureReason,
    message: String,
    cause: Option<RunCause>,
    result: Option<RunResult>,
    details: Option<Value>,
) -> Result<RunResult, Error> {
    Err(Error::from(RunError {
        reason,
        message,
        details,
        result: result.map(Box::new),
        cause,
    }))
}

fn driver_cause(e: DriverError) -> RunCause {
    match e {
        DriverError::Sink(SinkError::Violation(v)) => RunCause::DriverViolation(v),
        e => RunCause::Driver(Arc::new(e)),
    }
}

/// Form the authoritative outcome. Precedence: a stop (cancel, deadline,
/// handler abort) → contract violations → panic → driver error → business
/// failure → bad exit → success.
async fn conclude(
    driver: &dyn Driver,
    st: &mut SinkState,
    driven: Driven,
    stop: Option<StopReason>,
    timeout: Option<Duration>,
) -> Result<RunResult, Error> {
    let mut result = None;
    let mut ending = None;
    let mut cause = None;
    match driven {
        Driven::Returned(returned) => match *returned {
            Ok(resp) => {
                ending = Some(Ending {
                    failure: resp.failure.clone().or_else(|| st.terminal_error.clone()),
                    exit_code: resp.exit_code,
                    signal: resp.signal.clone(),
                    timed_out: resp.timed_out,
                    stopped_after_output: resp.stopped_after_output,
                    stderr: resp.raw.stderr.clone(),
                });
                let checkpoint = judge_checkpoint(driver, &resp, stop.is_none(), st).await;
                result = Some(build_result(resp, checkpoint, st));
            }
            Err(e) => {
                if !(stop.is_some() && is_cancellation(&e)) {
                    cause = Some(driver_cause(e));
                }
            }
        },
        Driven::Panicked(msg) => cause = Some(RunCause::DriverPanicked(msg)),
        Driven::Unresponsive(grace) => cause = Some(RunCause::DriverUnresponsive(grace)),
    }
    match stop {
        Some(StopReason::Cancelled) => {
            return fail(
                FailureReason::Cancelled,
                "run cancelled".into(),
                cause,
                result,
                None,
            );
        }
        Some(StopReason::DeadlineExceeded) => {
            let limit = timeout.unwrap_or_default();
            let msg = format!("run exceeded its timeout of {limit:?}");
            return fail(FailureReason::DeadlineExceeded, msg, cause, result, None);
        }
        Some(StopReason::ApprovalHandler(msg)) => {
            let cause = Some(RunCause::ApprovalHandler(msg.clone()));
            return fail(FailureReason::AgentError, msg, cause, result, None);
        }
        Some(StopReason::ApprovalDenied(record)) => {
            let details = Some(json!({"decision": &*record, "decisions": &st.decisions}));
            let cause = RunCause::ApprovalDenied(record);
            let msg = cause.to_string();
            return fail(
                FailureReason::ApprovalDenied,
                msg,
                Some(cause),
                result,
                details,
            );
        }
        Some(StopReason::ApprovalTimeout(record)) => {
            let details = Some(json!({"decision": &*record, "decisions": &st.decisions}));
            let cause = RunCause::ApprovalTimeout(record);
            let msg = cause.to_string();
            return fail(
                FailureReason::ApprovalTimeout,
                msg,
                Some(cause),
                result,
                details,
            );
        }
        Some(StopReason::ActiveExecutionTimeout(limit)) => {
            let details = Some(json!({
                "limit_ms": u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                "decisions": &st.decisions,
            }));
            let cause = RunCause::ActiveExecutionTimeout { limit };
            let msg = cause.to_string();
            return fail(
                FailureReason::ActiveExecutionTimeout,
                msg,
                Some(cause),
                result,
                details,
            );
        }
        Some(StopReason::EventLog(e)) => {
            let e = ThreadError::EventLog(e);
            let msg = e.to_string();
            return fail(
                FailureReason::Infrastructure,
                msg,
                Some(RunCause::Thread(e)),
                result,
                None,
            );
        }
        Some(StopReason::LeaseLost(key)) => {
            let e = ThreadError::LeaseLost { key };
            let msg = e.to_string();
            return fail(
                FailureReason::Infrastructure,
                msg,
                Some(RunCause::Thread(e)),
                result,
                None,
            );
        }
        None => {}
    }
    if let Some(first) = st.violations.first().cloned() {
        let details = json!({
            "violations": st.violations.iter()
                .map(|v| json!({"clause": v.clause, "detail": v.detail}))
                .collect::<Vec<_>>(),
            "driver_error": cause.as_ref().map(|c| c.to_string()),
        });
        let msg = format!("driver contract violation: {first}");
        let cause = Some(RunCause::DriverViolation(first));
        return fail(
            FailureReason::Infrastructure,
            msg,
            cause,
            result,
            Some(details),
        );
    }
    if let Some(cause) = cause {
        let msg = cause.to_string();
        return fail(FailureReason::Infrastructure, msg, Some(cause), None, None);
    }
    let (Some(result), Some(ending)) = (result, ending) else {
        let msg = "driver produced no response".to_owned();
        return fail(FailureReason::Infrastructure, msg, None, None, None);
    };
    if let Some(mut f) = ending.failure {
        let reason = FailureReason::from_code(&f.code);
        // The provider's own report of a failure is its message; stderr
        // (warnings, stack traces) is kept beside it. A CLI that ended
        // without saying why has its stderr in the message.
        let (msg, tail, details) = if f.is_missing_terminal() {
            with_stderr(f.message.clone(), &ending.stderr)
        } else {
            let (_, tail, details) = with_stderr(String::new(), &ending.stderr);
            (f.message.clone(), tail, details)
        };
        if let Some(tail) = tail {
            f.metadata.entry("stderr_tail".into()).or_insert(tail);
        }
        return fail(
            reason,
            msg,
            Some(RunCause::Failure(Box::new(f))),
            Some(result),
            details,
        );
    }
    let Ending {
        exit_code: code,
        signal,
        timed_out,
        stopped_after_output,
        stderr,
        ..
    } = ending;
    // A process stopped after its output was over (it answered, then did
    // not exit) is no failure: its code and signal are those of the stop.
    let bad_exit = code.is_some_and(|c| c != 0) || signal.is_some();
    if (bad_exit && !stopped_after_output) || timed_out {
        let timed_out_text = if timed_out { ", timed out" } else { "" };
        let msg = format!(
            "provider process failed ({}{timed_out_text})",
            describe_exit(code, signal.as_deref())
        );
        let (msg, _, details) = with_stderr(msg, &stderr);
        let cause = Some(RunCause::Exit {
            code,
            signal,
            timed_out,
        });
        return fail(FailureReason::AgentError, msg, cause, Some(result), details);
    }
    Ok(result)
}

fn is_cancellation(e: &DriverError) -> bool {
    matches!(
        e,
        DriverError::Cancelled | DriverError::Sink(SinkError::Cancelled)
    ) || matches!(
        e,
        DriverError::Decision(agent_adaptor_driver::DecisionError::Cancelled)
    )
}

async fn judge_checkpoint(
    driver: &dyn Driver,
    resp: &Response,
    not_stopped: bool,
    st: &mut SinkState,
) -> Option<agent_adaptor_driver::Checkpoint> {
    let facts = RunFacts {
        clean: not_stopped && st.violations.is_empty(),
        terminal_error: st.terminal_error.is_some(),
    };
    match gate(driver, resp, facts) {
        Verdict::NoClaim => None,
        Verdict::Accepted(cp) => Some(cp),
        Verdict::Rejected(reasons) => {
            let ev = translate::notice(
                st.publisher.meta(),
                notice_kind::CHECKPOINT_REJECTED,
                "the driver's checkpoint failed validation and was discarded".into(),
                Some(json!({ "reasons": reasons })),
            );
            let _ = st.publisher.publish(ev).await;
            None
        }
    }
}

fn build_result(
    resp: Response,
    checkpoint: Option<agent_adaptor_driver::Checkpoint>,
    st: &SinkState,
) -> RunResult {
    RunResult {
        run_id: st.publisher.run_id().to_string(),
        model: resp.model,
        provider: resp.provider,
        text: resp.output,
        summary: resp.summary,
        usage: resp.usage.or_else(|| st.terminal_usage.clone()),
        metadata: resp.metadata,
        raw: resp.raw,
        transcript: Arc::new(resp.transcript),
        services: resp.runtime_services.into(),
        workspace: None,
        structured: resp.structured_output,
        checkpoint,
        exit_code: resp.exit_code,
        decisions: st.decisions.clone().into(),
    }
}

fn finished_event(meta: EventMeta, outcome: &Result<RunResult, Error>, st: &SinkState) -> Event {
    let (usage, failed, reason, message) = match outcome {
        Ok(r) => (r.usage.clone(), false, None, String::new()),
        Err(e) => {
            let run = e.as_run_error();
            let usage = run
                .and_then(|r| r.result.as_ref())
                .and_then(|r| r.usage.clone())
                .or_else(|| st.terminal_usage.clone());
            let reason = run.map_or(FailureReason::Infrastructure, |r| r.reason.clone());
            let message = run.map_or_else(|| e.to_string(), |r| r.message.clone());
            (usage, true, Some(reason), message)
        }
    };
    tracing::info!(
        run_id = %meta.run_id,
        thread = meta.thread_key.as_deref().unwrap_or(""),
        failed,
        reason = reason.as_ref().map_or("", FailureReason::as_str),
        "run finished"
    );
    Event::RunFinished(RunFinished {
        meta,
        usage,
        failed,
        reason,
        message,
    })
}
