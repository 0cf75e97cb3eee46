//! The checkpoint gate (spec §9): a driver's `valid = true` is only a claim.

use agent_adaptor_driver::{Checkpoint, Driver, Response};

/// What core knows about the run besides the response.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunFacts {
    /// No cancellation, deadline, driver error, panic or contract violation.
    pub(crate) clean: bool,
    /// The driver emitted `run.error`.
    pub(crate) terminal_error: bool,
}

/// The gate's verdict on a response's checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The driver claimed no valid checkpoint.
    NoClaim,
    /// Every condition holds.
    Accepted(Checkpoint),
    /// The driver claimed a valid checkpoint and these conditions failed.
    Rejected(Vec<&'static str>),
}

/// Judge `resp.checkpoint` against every condition of spec §9.
pub(crate) fn gate(driver: &dyn Driver, resp: &Response, facts: RunFacts) -> Verdict {
    let Some(cp) = resp.checkpoint.as_ref().filter(|c| c.valid) else {
        return Verdict::NoClaim;
    };
    let mut failed = Vec::new();
    // A process stopped only because it lingered after its output was over
    // ended as a finished turn should: its exit code and signal are the stop's.
    if !resp.stopped_after_output {
        if resp.exit_code.is_some_and(|c| c != 0) {
            failed.push("the provider process did not exit with code 0");
        }
        if resp.signal.is_some() {
            failed.push("the provider process was ended by a signal");
        }
    }
    if resp.timed_out {
        failed.push("the provider timed out");
    }
    if !facts.clean {
        failed.push("the run was cancelled, timed out, or the driver failed");
    }
    if resp.failure.is_some() {
        failed.push("the response carries a failure");
    }
    if resp.raw.terminal.is_none() || facts.terminal_error {
        failed.push("no explicit successful terminal event was observed");
    }
    let state = cp.state.as_ref().filter(|s| !s.resume_id.is_empty());
    if state.is_none() {
        failed.push("the state has no resume id");
    }
    if !driver.descriptor().sessions.supports_resume {
        failed.push("the driver does not declare supports_resume");
    }
    match driver.session_config_fingerprint() {
        Some(Ok(fp)) if !fp.is_empty() => {}
        _ => failed.push("the driver has no config fingerprint"),
    }
    match (driver.session_codec(), state) {
        (None, _) => failed.push("the driver has no session codec"),
        (Some(codec), Some(state)) => {
            let params = codec.to_params(Some(state));
            if codec.from_params(&params).as_ref() != Some(state) {
                failed.push("the session codec does not round-trip the state");
            }
            let guard = codec.guard_fingerprint(&params);
            if guard.is_empty() || guard != codec.guard_fingerprint(&params) {
                failed.push("the guard fingerprint is empty or not deterministic");
            }
        }
        (Some(_), None) => {}
    }
    if failed.is_empty() {
        Verdict::Accepted(cp.clone())
    } else {
        Verdict::Rejected(failed)
    }
}
