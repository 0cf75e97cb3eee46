//! The scripted driver is a built-in driver: it passes the conformance suite.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use agent_adaptor_conformance::{Expect, Options, RunCase, test_driver};
use agent_adaptor_core::scripted::ScriptedDriver;

#[tokio::test]
async fn the_scripted_driver_passes_the_suite() {
    let report = test_driver(
        || ScriptedDriver::text_reply("a scripted answer"),
        Options::new()
            .run(RunCase::new("streaming", "q", true, Expect::Success))
            .run(RunCase::new("batch", "q", false, Expect::Success)),
    )
    .await;
    report.assert_passed();
    for id in ["EVT-01", "EVT-02", "EVT-03", "RUN-04", "RSP-05", "CASE-01"] {
        assert!(report.passed(id), "{id}:\n{report}");
    }
}
