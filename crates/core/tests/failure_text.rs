//! What a failed run says: the exit status in words (never `Some(1)` /
//! `None`) and the last lines of the provider's stderr, redacted, in the
//! message and in the error's details / the failure's metadata.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use agent_adaptor_core::driver::{FailureCode, RawStreams, RunFailure, StreamPayload};
use agent_adaptor_core::{Agent, RunCause, Runner};
use common::{framed, response, scripted, stream_steps};

const STDERR: &str = "starting\nError: Invalid API key sk-ant-api03-abcdef123456\n";

fn with_stderr(
    mut resp: agent_adaptor_core::driver::Response,
) -> agent_adaptor_core::driver::Response {
    resp.raw = RawStreams {
        stderr: STDERR.into(),
        ..Default::default()
    };
    resp
}

#[tokio::test]
async fn a_bad_exit_names_the_code_and_the_stderr() {
    let mut resp = with_stderr(response("", vec![]));
    resp.exit_code = Some(1);
    let agent = Agent::new(scripted(framed(vec![]), resp));
    let err = agent.run("hi").await.unwrap_err();
    let re = err.as_run_error().unwrap();
    assert!(re.message.contains("exited with code 1"), "{}", re.message);
    assert!(
        re.message.contains("Error: Invalid API key ***"),
        "{}",
        re.message
    );
    assert!(!re.message.contains("Some(") && !re.message.contains("None"));
    assert!(!re.message.contains("sk-ant"), "{}", re.message);
    let details = re.details.as_ref().unwrap();
    assert_eq!(
        details["stderr_tail"],
        "starting\nError: Invalid API key ***"
    );
    let cause = re.cause.as_ref().unwrap().to_string();
    assert_eq!(cause, "provider process exited with code 1");
}

#[tokio::test]
async fn a_signal_is_named() {
    let mut resp = response("", vec![]);
    resp.exit_code = None;
    resp.signal = Some("SIGKILL".into());
    let agent = Agent::new(scripted(framed(vec![]), resp));
    let err = agent.run("hi").await.unwrap_err();
    let re = err.as_run_error().unwrap();
    assert_eq!(re.message, "provider process failed (killed by SIGKILL)");
}

#[tokio::test]
async fn a_failure_carries_the_stderr_tail_in_its_message_only_without_a_report() {
    let fail_with = |failure: RunFailure| async move {
        let mut resp = with_stderr(response("", vec![]));
        resp.exit_code = Some(1);
        resp.failure = Some(failure.clone());
        let steps = stream_steps([
            StreamPayload::run_started(),
            StreamPayload::run_error(failure),
        ]);
        let agent = Agent::new(scripted(steps, resp));
        agent.run("hi").await.unwrap_err()
    };
    let tail = "starting\nError: Invalid API key ***";

    // The CLI ended without a terminal line: its stderr is the why.
    let mut missing = RunFailure::new(
        FailureCode::AgentError,
        "claude ended without a result line",
    );
    missing
        .metadata
        .insert("reason".into(), "missing_terminal".into());
    let err = fail_with(missing).await;
    let re = err.as_run_error().unwrap();
    assert_eq!(
        re.message,
        format!("claude ended without a result line; stderr: {tail}")
    );
    let Some(RunCause::Failure(f)) = &re.cause else {
        panic!("{:?}", re.cause)
    };
    assert_eq!(f.metadata["stderr_tail"], tail);

    // The provider reported the failure itself: its message stays its own,
    // stderr is beside it.
    let reported = RunFailure::new(FailureCode::AgentError, "mock http error 400: Bad Request");
    let err = fail_with(reported).await;
    let re = err.as_run_error().unwrap();
    assert_eq!(re.message, "mock http error 400: Bad Request");
    let Some(RunCause::Failure(f)) = &re.cause else {
        panic!("{:?}", re.cause)
    };
    assert_eq!(f.metadata["stderr_tail"], tail);
}
