//! The checkpoint gate (spec §9): a driver's `valid = true` is trusted only
//! when every condition holds; otherwise it is discarded and reported.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_adaptor_core::driver::{
    Checkpoint, FailureCode, RawStreams, Response, RunFailure, SessionCodec, SessionParams,
    SessionState, StandardSessionCodec, StreamPayload, TerminalPayload,
};
use agent_adaptor_core::scripted::{ScriptedDriver, Step};
use agent_adaptor_core::{Agent, Event, Runner, notice_kind};
use common::*;

fn state(resume_id: &str) -> SessionState {
    SessionState {
        resume_id: resume_id.into(),
        display_id: resume_id.into(),
        data: BTreeMap::from([("cwd".into(), "/repo".into())]),
    }
}

/// A healthy run that claims a valid checkpoint.
fn healthy() -> Response {
    let terminal = r#"{"type":"result","session_id":"s-1"}"#;
    Response {
        raw: RawStreams {
            stdout: format!("{terminal}\n").into(),
            stderr: Default::default(),
            terminal: Some(TerminalPayload::new("result", terminal).unwrap()),
        },
        checkpoint: Some(Checkpoint::valid(state("s-1"))),
        exit_code: Some(0),
        ..Default::default()
    }
}

fn resumable(steps: Vec<Step>, resp: Response) -> ScriptedDriver {
    scripted(steps, resp).with_resume(Arc::new(StandardSessionCodec::new("scripted")), "cfg-fp")
}

/// Run and return (accepted checkpoint, rejection reasons).
async fn judge(driver: ScriptedDriver) -> (Option<Checkpoint>, Vec<String>) {
    let (events, outcome) = drain(Agent::new(driver).stream("q")).await;
    assert_envelope(&events);
    let result = match outcome {
        Ok(r) => r,
        Err(e) => *e
            .as_run_error()
            .and_then(|r| r.result.clone())
            .expect("a partial result"),
    };
    let reasons = notices(&events, notice_kind::CHECKPOINT_REJECTED)
        .first()
        .map(|n| {
            n.data.as_ref().unwrap()["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    (result.checkpoint().cloned(), reasons)
}

#[tokio::test]
async fn a_healthy_checkpoint_is_accepted() {
    let (cp, reasons) = judge(resumable(framed(vec![]), healthy())).await;
    assert_eq!(cp, Some(Checkpoint::valid(state("s-1"))));
    assert!(reasons.is_empty());
}

#[tokio::test]
async fn no_claim_means_no_checkpoint_and_no_report() {
    let mut resp = healthy();
    resp.checkpoint = Some(Checkpoint {
        state: Some(state("s-1")),
        valid: false,
    });
    let (cp, reasons) = judge(resumable(framed(vec![]), resp)).await;
    assert_eq!(cp, None);
    assert!(reasons.is_empty());
}

async fn rejected_because(driver: ScriptedDriver, expected: &str) {
    let (cp, reasons) = judge(driver).await;
    assert_eq!(cp, None, "an unhealthy checkpoint must be discarded");
    assert!(
        reasons.iter().any(|r| r.contains(expected)),
        "expected a reason containing {expected:?}, got {reasons:?}"
    );
}

#[tokio::test]
async fn non_zero_exit() {
    let mut resp = healthy();
    resp.exit_code = Some(1);
    rejected_because(resumable(framed(vec![]), resp), "exit with code 0").await;
}

#[tokio::test]
async fn a_signal() {
    let mut resp = healthy();
    resp.signal = Some("SIGKILL".into());
    rejected_because(resumable(framed(vec![]), resp), "signal").await;
}

#[tokio::test]
async fn a_process_stopped_after_its_output_keeps_its_checkpoint() {
    let mut resp = healthy();
    resp.exit_code = None;
    resp.signal = Some("SIGTERM".into());
    resp.stopped_after_output = true;
    let (cp, reasons) = judge(resumable(framed(vec![]), resp)).await;
    assert_eq!(cp, Some(Checkpoint::valid(state("s-1"))), "{reasons:?}");
}

#[tokio::test]
async fn a_business_failure() {
    let mut resp = healthy();
    resp.failure = Some(RunFailure::new(FailureCode::AgentError, "bad"));
    rejected_because(resumable(framed(vec![]), resp), "failure").await;
}

#[tokio::test]
async fn a_run_error_frame() {
    let steps = stream_steps([
        StreamPayload::run_started(),
        StreamPayload::run_error(RunFailure::new(FailureCode::AgentError, "bad")),
    ]);
    rejected_because(resumable(steps, healthy()), "terminal event").await;
}

#[tokio::test]
async fn a_missing_terminal_event() {
    let mut resp = healthy();
    resp.raw.terminal = None;
    rejected_because(resumable(framed(vec![]), resp), "terminal event").await;
}

#[tokio::test]
async fn an_empty_resume_id() {
    let mut resp = healthy();
    resp.checkpoint = Some(Checkpoint::valid(state("")));
    rejected_because(resumable(framed(vec![]), resp), "resume id").await;
}

#[tokio::test]
async fn a_driver_without_codec() {
    rejected_because(scripted(framed(vec![]), healthy()), "codec").await;
}

#[tokio::test]
async fn a_contract_violation() {
    // The driver returns normally but its transcript mirror is broken.
    let mut resp = healthy();
    resp.transcript = vec![agent_adaptor_core::driver::TranscriptItem::assistant(
        "never emitted",
    )]
    .into();
    rejected_because(resumable(framed(vec![]), resp), "driver failed").await;
}

/// A codec that loses the data map.
struct Lossy;
impl SessionCodec for Lossy {
    fn name(&self) -> &str {
        "lossy"
    }
    fn to_params(&self, state: Option<&SessionState>) -> SessionParams {
        SessionParams {
            resume_id: state.map(|s| s.resume_id.clone()).unwrap_or_default(),
            ..Default::default()
        }
    }
    fn from_params(&self, p: &SessionParams) -> Option<SessionState> {
        (!p.is_zero()).then(|| SessionState {
            resume_id: p.resume_id.clone(),
            ..Default::default()
        })
    }
    fn guard_fingerprint(&self, _: &SessionParams) -> String {
        "fp".into()
    }
}

#[tokio::test]
async fn a_codec_that_does_not_round_trip() {
    let driver = scripted(framed(vec![]), healthy()).with_resume(Arc::new(Lossy), "cfg");
    rejected_because(driver, "round-trip").await;
}

/// A codec whose guard changes on every call.
struct Drifting(AtomicU64);
impl SessionCodec for Drifting {
    fn name(&self) -> &str {
        "drifting"
    }
    fn to_params(&self, state: Option<&SessionState>) -> SessionParams {
        StandardSessionCodec::new("x").to_params(state)
    }
    fn from_params(&self, p: &SessionParams) -> Option<SessionState> {
        StandardSessionCodec::new("x").from_params(p)
    }
    fn guard_fingerprint(&self, _: &SessionParams) -> String {
        self.0.fetch_add(1, Ordering::SeqCst).to_string()
    }
}

#[tokio::test]
async fn a_non_deterministic_guard() {
    let driver =
        scripted(framed(vec![]), healthy()).with_resume(Arc::new(Drifting(AtomicU64::new(0))), "c");
    rejected_because(driver, "deterministic").await;
}

#[tokio::test]
async fn a_cancelled_run_never_yields_a_checkpoint() {
    let steps = vec![
        Step::Stream(StreamPayload::run_started()),
        Step::WaitForCancel,
    ];
    let agent = Agent::new(resumable(steps, healthy()));
    let stream = agent.stream("q");
    stream.cancel();
    let (events, outcome) = drain(stream).await;
    assert!(matches!(events.last(), Some(Event::RunFinished(_))));
    let err = outcome.unwrap_err();
    assert!(err.as_run_error().unwrap().result.is_none());
}
