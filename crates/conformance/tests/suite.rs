//! The suite judges itself: the reference driver passes every clause it can
//! be judged on, and each deliberate fault makes exactly its clause fail
//! (a check that cannot fail would be a defect).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::sync::Arc;

use agent_adaptor_conformance::reference::{Fault, ReferenceConfig, ReferenceDriver};
use agent_adaptor_conformance::{Expect, Options, Outcome, RunCase, catalogue, test_driver};
use agent_adaptor_driver::SessionState;

fn options() -> Options {
    let state = SessionState {
        resume_id: "session-1".into(),
        display_id: "session-1".into(),
        data: [("cwd".to_owned(), "/repo".to_owned())].into(),
    };
    Options::new()
        .session_state(state)
        .session_keys(["cwd"])
        .guard_keys(["cwd"])
        .invalid_config(Arc::new(|| {
            Box::new(ReferenceDriver::new(ReferenceConfig {
                model: String::new(),
                ..Default::default()
            }))
        }))
        .run(RunCase::new("streaming", "hi", true, Expect::Success))
        .run(RunCase::new("batch", "hi", false, Expect::Success))
}

#[tokio::test]
async fn the_reference_driver_passes_everything_that_applies() {
    let report = test_driver(ReferenceDriver::default, options()).await;
    report.assert_passed();
    // Every clause of the catalogue got a verdict, and the ones the SPI can
    // express were judged, not skipped.
    for (id, _) in catalogue::CLAUSES {
        assert!(!report.clause(id).is_empty(), "{id} was never reported");
    }
    for id in [
        "DRV-01", "DRV-02", "CFG-01", "CFG-02", "CFG-03", "CAP-01", "CAP-04", "CAP-10", "SO-01",
        "SES-01", "SES-02", "SES-03", "SES-04", "SES-05", "SES-06", "SES-07", "SES-08", "EVT-01",
        "EVT-02", "EVT-03", "EVT-04", "EVT-05", "EVT-06", "EVT-07", "EVT-08", "EVT-09", "EVT-11",
        "EVT-12", "EVT-14", "EVT-15", "RUN-02", "RUN-04", "TRN-01", "TRN-02", "TRN-03", "TRN-04",
        "TRN-05", "RSP-01", "RSP-03", "RSP-04", "RSP-05", "CASE-01",
    ] {
        assert!(report.passed(id), "{id} did not pass:\n{report}");
    }
}

#[tokio::test]
async fn every_fault_fails_its_clause() {
    let mut missed = Vec::new();
    for fault in Fault::ALL {
        let report = test_driver(|| ReferenceDriver::default().with_fault(fault), options()).await;
        if !report.failed(fault.clause()) {
            missed.push(format!("{fault:?} did not fail {}", fault.clause()));
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n"));
}

#[tokio::test]
async fn every_fault_leaves_the_unrelated_declaration_clauses_alone() {
    // A run-time fault must not be blamed on the declarations, and the other
    // way round: faults stay attributable.
    for fault in Fault::ALL {
        let report = test_driver(|| ReferenceDriver::default().with_fault(fault), options()).await;
        let clause = fault.clause();
        for f in report.failures() {
            let same_group = f.id.split('-').next() == clause.split('-').next();
            let knock_on = matches!(
                (clause, f.id),
                // Faults whose consequences legitimately show elsewhere: a
                // broken codec or missing codec also breaks the checkpoint's
                // round trip or the resume declaration; an invalid transcript
                // item is also an invalid item event; a failed run case
                // fails its expectation.
                ("CAP-01" | "SES-03" | "SES-04", "RSP-04")
                    | ("SES-01", "CAP-01")
                    | ("TRN-01" | "TRN-02" | "TRN-03" | "TRN-04", "RUN-02")
                    | ("RSP-01" | "RSP-02", "CASE-01")
            );
            assert!(
                same_group || knock_on,
                "{fault:?} (breaks {clause}) also failed {}:\n{f}",
                f.id
            );
        }
    }
}

#[tokio::test]
async fn a_panicking_driver_is_reported_not_propagated() {
    let report = test_driver(
        || ReferenceDriver::default().with_fault(Fault::PanicInValidate),
        Options::new(),
    )
    .await;
    let cfg = report.clause("CFG-01");
    assert!(matches!(&cfg[0].outcome, Outcome::Fail(f) if f[0].contains("exploded")));
}

#[tokio::test]
async fn without_run_cases_the_run_clauses_are_skipped_with_a_reason() {
    let report = test_driver(ReferenceDriver::default, Options::new()).await;
    for r in report.clause("EVT-03") {
        assert!(matches!(&r.outcome, Outcome::Skip(why) if why.contains("no run cases")));
    }
    report.assert_passed();
}

#[test]
fn the_report_prints_every_finding() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let report = rt.block_on(test_driver(
        || ReferenceDriver::default().with_fault(Fault::ContentOutsideMessage),
        options(),
    ));
    let text = report.to_string();
    assert!(text.contains("FAIL EVT-03 [streaming]"), "{text}");
    assert!(text.contains("m-none"), "{text}");
    let panic = std::panic::catch_unwind(|| report.assert_passed()).unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(msg.contains("EVT-03"));
}
