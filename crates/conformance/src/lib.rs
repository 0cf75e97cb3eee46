//! # agent-adaptor-conformance
//!
//! The driver conformance suite (spec §12 of the driver streaming contract):
//! every clause of the contract, each with a stable id, judged for any
//! [`Driver`] — built-in or third-party. It depends only on the driver SPI.
//!
//! ```
//! use agent_adaptor_conformance::{Expect, Options, RunCase, test_driver};
//! use agent_adaptor_conformance::reference::ReferenceDriver;
//! use agent_adaptor_driver::{SessionState};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let state = SessionState {
//!     resume_id: "session-1".into(),
//!     display_id: "session-1".into(),
//!     data: [("cwd".to_owned(), "/repo".to_owned())].into(),
//! };
//! let report = test_driver(
//!     ReferenceDriver::default,
//!     Options::new()
//!         .session_state(state)
//!         .session_keys(["cwd"])
//!         .guard_keys(["cwd"])
//!         .run(RunCase::new("streaming", "hi", true, Expect::Success))
//!         .run(RunCase::new("batch", "hi", false, Expect::Success)),
//! )
//! .await;
//! report.assert_passed();
//! # }
//! ```
//!
//! What is judged:
//!
//! * **declarations** (no run): DRV, CFG, CAP, SO, SES — on two fresh
//!   instances from the factory, so determinism across instances is checked;
//! * **run cases** ([`RunCase`]): the driver runs a resolved request against a
//!   recording sink (no core in between) — configure it through the factory
//!   to run a fake CLI or a mock server — and EVT, RUN, TRN, RSP and CASE are
//!   judged on exactly what it emitted and returned;
//! * **cancellation** ([`CancelCase`], opt-in): a run cancelled after a
//!   number of events must return within the grace period and leave no
//!   process of its group running (RUN-05);
//! * **live** ([`LiveRun`], opt-in): the same, against the real provider, plus
//!   LIV-01..03. Gate it yourself (environment variable, installed CLI) so
//!   ordinary CI never makes paid calls.
//!
//! A clause that is not judged is reported skipped, with the reason; one
//! that the SPI's types make impossible to break is reported N/A, naming
//! the construction that holds it. The
//! [`reference`](mod@reference) driver passes everything; each of its [`Fault`](reference::Fault)s
//! breaks one clause, and the suite's own tests prove every such clause fails.
//!
//! ## Clauses
#![doc = include_str!("../CLAUSES.md")]
#![forbid(unsafe_code)]

mod cancel;
pub mod carry;
pub mod catalogue;
mod equipment;
pub mod fuzz;
mod hermetic;
pub mod options;
mod probes;
mod procs;
pub mod record;
pub mod reference;
pub mod report;
mod verify;

use std::time::Duration;

use agent_adaptor_driver::{Driver, Request};

pub use options::{
    CancelCase, DEFAULT_CANCEL_GRACE, Expect, InvalidFactory, LiveRun, Options, RunCase,
};
pub use record::{Emitted, RecordingSink, Trace, record_run};
pub use report::{ClauseResult, Outcome, Report};
pub use verify::verify_trace;

const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(30);

/// Run the whole suite on drivers made by `factory`.
pub async fn test_driver<D, F>(factory: F, options: Options) -> Report
where
    D: Driver,
    F: Fn() -> D,
{
    let mut report = Report::default();
    let (a, b) = (factory(), factory());
    hermetic::check(&a, &b, &options, &mut report);
    hermetic::close_processes(&a, &mut report).await;
    carry::declarations(&a, &mut report);

    let timeout = options.run_timeout.unwrap_or(DEFAULT_RUN_TIMEOUT);
    if options.runs.is_empty() {
        for (id, _) in catalogue::CLAUSES {
            if ["EVT-", "RUN-", "TRN-", "RSP-", "CASE-"]
                .iter()
                .any(|g| id.starts_with(g))
                && *id != "RUN-05"
            {
                report.skip(id, "runs", "no run cases supplied (Options::run)");
            }
        }
    }
    for case in &options.runs {
        let driver = factory();
        let trace = record_run(&driver, case.request.clone(), timeout).await;
        verify_trace(
            &driver,
            &case.request,
            &trace,
            case.expect,
            &case.name,
            &mut report,
        );
    }

    carry::instructions_run(&factory, &options, timeout, &mut report).await;

    if options.cancels.is_empty() {
        report.skip(
            "RUN-05",
            "cancel",
            "no cancellation case supplied (Options::cancel)",
        );
    }
    for case in &options.cancels {
        let driver = factory();
        cancel::check(&driver, case, timeout, &mut report).await;
    }

    match &options.live {
        None => {
            for id in ["LIV-01", "LIV-02", "LIV-03"] {
                report.skip(id, "live", "no live run requested (opt-in)");
            }
        }
        Some(live) => {
            let driver = factory();
            let mut request = Request::new("run_live000000000000", &live.prompt);
            request.streaming = live.streaming;
            let trace = record_run(&driver, request.clone(), live.timeout).await;
            verify::contract(&driver, &request, &trace, "live", &mut report);
            verify::live(&driver, live, &trace, &mut report);
        }
    }
    report
}
