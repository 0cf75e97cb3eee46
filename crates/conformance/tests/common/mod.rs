//! The options every suite test judges the reference driver with.

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_conformance::reference::{Fault, ReferenceConfig, ReferenceDriver, STALL_PROMPT};
use agent_adaptor_conformance::{CancelCase, Expect, LiveRun, Options, RunCase};
use agent_adaptor_driver::SessionState;

/// Every opt-in, for the reference driver with `fault` (the invalid
/// configuration has the same fault: it is the driver under test).
pub fn options(fault: Option<Fault>) -> Options {
    let state = SessionState {
        resume_id: "session-1".into(),
        display_id: "session-1".into(),
        data: [("cwd".to_owned(), "/repo".to_owned())].into(),
    };
    Options::new()
        .session_state(state)
        .session_keys(["cwd"])
        .guard_keys(["cwd"])
        .invalid_config(Arc::new(move || {
            let d = ReferenceDriver::new(ReferenceConfig {
                model: String::new(),
                ..Default::default()
            });
            Box::new(match fault {
                Some(f) => d.with_fault(f),
                None => d,
            })
        }))
        .run(RunCase::new("streaming", "hi", true, Expect::Success))
        .run(RunCase::new("batch", "hi", false, Expect::Success))
        // The stalling provider emits its spawn and first line, then waits.
        .cancel(CancelCase::new("cancel", STALL_PROMPT, true, 2).grace(Duration::from_secs(3)))
        .live(LiveRun::default())
}

/// The reference driver, with `fault`.
pub fn driver(fault: Option<Fault>) -> ReferenceDriver {
    match fault {
        Some(f) => ReferenceDriver::default().with_fault(f),
        None => ReferenceDriver::default(),
    }
}
