//! Single clauses, judged closely: the cancellation clause's two halves,
//! EVT-02's attribution, N/A reporting and the live clauses' order.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::time::Duration;

use agent_adaptor_conformance::reference::{Fault, ReferenceDriver, STALL_PROMPT};
use agent_adaptor_conformance::{
    CancelCase, ClauseResult, Expect, LiveRun, Options, Outcome, RunCase, test_driver,
};
use common::{driver, options};

fn findings(rs: &[&ClauseResult]) -> String {
    rs.iter()
        .filter_map(|r| match &r.outcome {
            Outcome::Fail(f) => Some(f.join("\n")),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn a_driver_that_ignores_the_cancellation_fails_run_05_on_its_return() {
    let fault = Some(Fault::IgnoresCancel);
    let report = test_driver(move || driver(fault), options(fault)).await;
    let run05 = report.clause("RUN-05");
    let text = findings(&run05);
    assert!(
        text.contains("did not return within the grace period"),
        "{report}"
    );
    // Dropped (as core drops it), its provider process was stopped.
    assert!(
        run05
            .iter()
            .any(|r| r.scope == "cancel: processes" && r.outcome == Outcome::Pass),
        "{report}"
    );
}

#[tokio::test]
async fn a_driver_that_leaves_its_provider_running_fails_run_05_and_the_group_is_stopped() {
    let fault = Some(Fault::LeavesProcessBehind);
    let report = test_driver(move || driver(fault), options(fault)).await;
    let process = report
        .clause("RUN-05")
        .into_iter()
        .find(|r| r.scope == "cancel: processes")
        .cloned()
        .unwrap_or_else(|| panic!("no process verdict:\n{report}"));
    let Outcome::Fail(f) = &process.outcome else {
        panic!("the abandoned provider was not found:\n{report}");
    };
    assert!(f[0].contains("still ran"), "{report}");
    // The return itself was in time: only the process half failed.
    let ret = report.clause("RUN-05");
    assert!(
        ret.iter()
            .any(|r| r.scope == "cancel" && r.outcome == Outcome::Pass),
        "{report}"
    );
    // The suite stopped what it found (the group is named in the finding).
    let group: u32 = f[0]
        .split_whitespace()
        .nth(2)
        .and_then(|g| g.parse().ok())
        .unwrap_or_else(|| panic!("no group in {f:?}"));
    let gone = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        !std::fs::read_to_string(format!("/proc/{group}/stat")).is_ok_and(|s| {
            s.rsplit_once(") ")
                .is_some_and(|(_, r)| !r.starts_with('Z'))
        })
    });
    assert!(
        gone,
        "process {group} still runs after the suite stopped it"
    );
}

#[tokio::test]
async fn a_cancel_case_that_ends_before_its_cancel_point_fails() {
    let report = test_driver(
        ReferenceDriver::default,
        Options::new().cancel(CancelCase::new("too short", "hi", true, 10_000)),
    )
    .await;
    let text = findings(&report.clause("RUN-05"));
    assert!(text.contains("must keep the provider busy"), "{report}");
}

#[tokio::test]
async fn without_a_cancel_case_run_05_is_skipped_with_a_reason() {
    let report = test_driver(
        ReferenceDriver::default,
        Options::new().run(RunCase::new("batch", "hi", false, Expect::Success)),
    )
    .await;
    let run05 = report.clause("RUN-05");
    assert_eq!(run05.len(), 1, "{report}");
    assert!(matches!(&run05[0].outcome, Outcome::Skip(why) if why.contains("Options::cancel")));
}

#[tokio::test]
async fn a_cancel_before_the_run_starts_is_honoured() {
    let report = test_driver(
        ReferenceDriver::default,
        Options::new().cancel(CancelCase::new("at once", STALL_PROMPT, false, 0)),
    )
    .await;
    assert!(report.passed("RUN-05"), "{report}");
}

#[tokio::test]
async fn a_terminal_rejected_by_another_clause_is_not_reported_missing() {
    // run.finished sent while a message is open: EVT-11's finding, and
    // EVT-02 (the run did end with a terminal frame) holds.
    let fault = Some(Fault::OpenAtTerminal);
    let report = test_driver(move || driver(fault), options(fault)).await;
    assert!(report.failed("EVT-11"), "{report}");
    assert!(report.passed("EVT-02"), "{report}");
    // Without any terminal frame EVT-02 still fails.
    let fault = Some(Fault::NoTerminal);
    let report = test_driver(move || driver(fault), options(fault)).await;
    let text = findings(&report.clause("EVT-02"));
    assert!(
        text.contains("without run.finished or run.error"),
        "{report}"
    );
}

#[tokio::test]
async fn by_construction_clauses_are_printed_as_not_applicable_with_their_reason() {
    let report = test_driver(|| driver(None), options(None)).await;
    let text = report.to_string();
    for id in ["DRV-03", "EVT-10", "EVT-13", "RUN-01", "RUN-03", "SO-03"] {
        assert!(!report.passed(id), "{id} is reported passed:\n{text}");
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("N/A  {id} ")))
            .unwrap_or_else(|| panic!("no N/A line for {id}:\n{text}"));
        assert!(line.contains(": by construction"), "{line}");
    }
    report.assert_passed();
}

#[tokio::test]
async fn a_failed_live_run_is_liv_01_alone() {
    let fault = Some(Fault::FailsTheExactReply);
    let report = test_driver(move || driver(fault), options(fault)).await;
    assert!(report.failed("LIV-01"), "{report}");
    for id in ["LIV-02", "LIV-03"] {
        let rs = report.clause(id);
        assert!(
            rs.iter()
                .all(|r| matches!(&r.outcome, Outcome::Skip(why) if why.contains("LIV-01"))),
            "{report}"
        );
    }
    // The live run is not a hermetic run case: no CASE-01 verdict for it.
    assert!(
        report.clause("CASE-01").iter().all(|r| r.scope != "live"),
        "{report}"
    );
}

#[tokio::test]
async fn the_live_answer_must_contain_the_expected_text() {
    let live = LiveRun {
        expected_output: Some("something else".into()),
        ..LiveRun::default()
    };
    let report = test_driver(|| driver(None), Options::new().live(live)).await;
    assert!(report.failed("LIV-02"), "{report}");
    assert!(report.passed("LIV-01"), "{report}");
}
