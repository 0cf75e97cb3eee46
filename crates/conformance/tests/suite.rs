//! The suite judges itself: the reference driver passes every clause it can
//! be judged on, and each deliberate fault makes exactly its clause fail
//! (a check that cannot fail would be a defect).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use agent_adaptor_conformance::reference::{Fault, ReferenceDriver};
use agent_adaptor_conformance::{Options, Outcome, Report, catalogue, test_driver};
use common::{driver, options};

/// Clauses the suite cannot judge yet (they need a live structured run):
/// reported skipped, with no fault.
const SKIPPED: [&str; 1] = ["SO-02"];

/// Clauses the SPI's types hold: reported N/A, with no fault.
const NOT_APPLICABLE: [&str; 6] = ["DRV-03", "EVT-10", "EVT-13", "RUN-01", "RUN-03", "SO-03"];

async fn report_for(fault: Option<Fault>) -> Report {
    test_driver(move || driver(fault), options(fault)).await
}

#[tokio::test]
async fn the_reference_driver_passes_everything_that_applies() {
    let report = report_for(None).await;
    report.assert_passed();
    // Every clause of the catalogue got a verdict, and the ones the SPI can
    // express were judged, not skipped.
    for (id, _) in catalogue::CLAUSES {
        assert!(!report.clause(id).is_empty(), "{id} was never reported");
    }
    for id in [
        "DRV-01", "DRV-02", "CFG-01", "CFG-02", "CFG-03", "CAP-01", "CAP-02", "CAP-03", "CAP-04",
        "CAP-05", "CAP-06", "CAP-07", "CAP-08", "CAP-09", "CAP-10", "SES-09", "SO-01", "SES-01",
        "SES-02", "SES-03", "SES-04", "SES-05", "SES-06", "SES-07", "SES-08", "EVT-01", "EVT-02",
        "EVT-03", "EVT-04", "EVT-05", "EVT-06", "EVT-07", "EVT-08", "EVT-09", "EVT-11", "EVT-12",
        "EVT-14", "EVT-15", "RUN-02", "RUN-04", "TRN-01", "TRN-02", "TRN-03", "TRN-04", "TRN-05",
        "RSP-01", "RSP-03", "RSP-04", "RSP-05", "CASE-01", "CAP-11", "RUN-05", "LIV-01", "LIV-02",
        "LIV-03", "EQP-01", "EQP-02", "OBS-01", "OBS-02", "OBS-03", "OBS-04", "OBS-05", "OBS-06",
        "OBS-07", "OBS-08",
    ] {
        assert!(report.passed(id), "{id} did not pass:\n{report}");
    }
    // Both halves of the cancellation clause were judged: the return and
    // the stalling provider's process group.
    let run05 = report.clause("RUN-05");
    assert_eq!(run05.len(), 2, "{report}");
    assert!(run05.iter().all(|r| r.outcome == Outcome::Pass), "{report}");
}

#[tokio::test]
async fn every_judged_clause_has_a_fault_and_the_exceptions_are_what_they_say() {
    let mut missing = Vec::new();
    for (id, _) in catalogue::CLAUSES {
        let excepted = SKIPPED.contains(id) || NOT_APPLICABLE.contains(id);
        let faulted = Fault::ALL.iter().any(|f| f.clause() == *id);
        if !excepted && !faulted {
            missing.push(*id);
        }
        assert!(!(excepted && faulted), "{id} is excepted but has a fault");
    }
    assert!(
        missing.is_empty(),
        "judged clauses without a fault: {missing:?}"
    );
    // The exceptions are not a hiding place: with every opt-in, a listed
    // clause is reported only skipped (or only N/A), never judged.
    let report = report_for(None).await;
    for id in SKIPPED {
        let rs = report.clause(id);
        assert!(
            !rs.is_empty() && rs.iter().all(|r| matches!(r.outcome, Outcome::Skip(_))),
            "{id} is listed as skipped:\n{report}"
        );
    }
    for id in NOT_APPLICABLE {
        let rs = report.clause(id);
        assert!(
            !rs.is_empty()
                && rs
                    .iter()
                    .all(|r| matches!(&r.outcome, Outcome::NotApplicable(why) if why.starts_with("by construction"))),
            "{id} is listed as N/A:\n{report}"
        );
    }
}

#[tokio::test]
async fn every_fault_fails_its_clause() {
    let mut missed = Vec::new();
    for fault in Fault::ALL {
        let report = report_for(Some(fault)).await;
        if !report.failed(fault.clause()) {
            missed.push(format!("{fault:?} did not fail {}", fault.clause()));
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n"));
}

/// Clauses a fault of `clause` legitimately fails too, besides its own.
fn knock_on(clause: &str, other: &str) -> bool {
    matches!(
        (clause, other),
        // A broken or missing codec also breaks the checkpoint's round trip
        // or the resume declaration.
        ("CAP-01" | "SES-03" | "SES-04" | "SES-08", "RSP-04")
            | ("SES-01", "CAP-01")
            // A codec that drops data loses the session keys and the guard's
            // inputs too.
            | ("SES-03", "SES-06" | "SES-08" | "SES-09")
            // A drifting guard or one that ignores every key cannot follow
            // the profile alone either.
            | ("SES-05" | "SES-06", "SES-09")
            // The probes' reports name the driver type the descriptor lost.
            | ("DRV-01", "CAP-03" | "CAP-06" | "CAP-07" | "CAP-09")
            | ("SES-04", "SES-08")
            // validate_config panics on the invalid configuration as well.
            | ("CFG-01", "CFG-03")
            // An invalid transcript item is also an invalid item event; an
            // invalid item event is missing from the (valid) transcript.
            | ("TRN-01" | "TRN-02" | "TRN-03" | "TRN-04", "RUN-02")
            | ("RUN-02", "RUN-04")
            // A run that fails every time fails its run cases and the live
            // run too.
            | ("RSP-01" | "RSP-02", "CASE-01" | "LIV-01" | "EQP-02")
            | ("CASE-01", "LIV-01" | "EQP-02")
    )
}

#[tokio::test]
async fn every_fault_fails_only_its_clause_and_its_listed_knock_ons() {
    let mut wrong = Vec::new();
    for fault in Fault::ALL {
        let report = report_for(Some(fault)).await;
        let clause = fault.clause();
        for f in report.failures() {
            if f.id != clause && !knock_on(clause, f.id) {
                wrong.push(format!("{fault:?} (breaks {clause}) also failed {f}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
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
    let report = rt.block_on(report_for(Some(Fault::ContentOutsideMessage)));
    let text = report.to_string();
    assert!(text.contains("FAIL EVT-03 [streaming]"), "{text}");
    assert!(text.contains("m-none"), "{text}");
    let panic = std::panic::catch_unwind(|| report.assert_passed()).unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(msg.contains("EVT-03"));
}
