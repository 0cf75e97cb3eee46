//! The driver conformance suite on the toy driver, against the real
//! `toy-cli` binary: success (streaming and not), a failed result, a run
//! without its terminal line, and a cancellation mid-turn (RUN-05).
#![allow(clippy::unwrap_used)]

use agent_adaptor_conformance::{CancelCase, Expect, Options, RunCase, test_driver};
use third_party_driver::{Config, ToyDriver, driver};

fn toy(flags: &[&str]) -> ToyDriver {
    driver(Config {
        command: env!("CARGO_BIN_EXE_toy-cli").into(),
        extra_args: flags.iter().map(|f| (*f).to_owned()).collect(),
        ..Default::default()
    })
}

#[tokio::test]
async fn conformance_of_successful_runs() {
    let report = test_driver(
        || toy(&[]),
        Options::new()
            .run(RunCase::new("streaming", "hi", true, Expect::Success))
            .run(RunCase::new("batch", "hi", false, Expect::Success)),
    )
    .await;
    report.assert_passed();
}

#[tokio::test]
async fn conformance_of_failed_runs() {
    for flag in ["--fail", "--no-result"] {
        let report = test_driver(
            || toy(&[flag]),
            Options::new()
                .run(RunCase::new("streaming", "hi", true, Expect::Failure))
                .run(RunCase::new("batch", "hi", false, Expect::Failure)),
        )
        .await;
        report.assert_passed();
    }
}

#[tokio::test]
async fn conformance_of_a_cancellation_mid_turn() {
    let report = test_driver(
        || toy(&["--stall"]),
        Options::new().cancel(CancelCase::new("cancel mid-turn", "hi", true, 2)),
    )
    .await;
    assert!(report.passed("RUN-05"), "{report}");
}
