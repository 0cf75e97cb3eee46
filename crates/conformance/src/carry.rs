//! EQP: what a run gives its agent besides the prompt (instructions, MCP
//! servers, skills, a profile) is carried or refused, never dropped.
//!
//! The refusal is core's: before launch it checks each item against the
//! driver's [`Descriptor`] and refuses what is not declared with
//! `CapabilityUnsupported`. The suite runs drivers without core, so it
//! judges the driver's half of that bargain, the part a driver can get
//! wrong:
//!
//! * **EQP-01** — the declaration core reads is coherent: an MCP option
//!   needs a transport to ride on (headers and bearer tokens a remote one),
//!   and a clone profile is a dedicated home seeded, so `clone` needs
//!   `dedicated`. (That the declaration is the same on every call and every
//!   instance is DRV-02.)
//! * **EQP-02** — a driver that declares `instructions` accepts a run that
//!   sets them: the first run case expected to succeed, re-run with
//!   instructions, still succeeds. A driver that declared a carrier and
//!   then rejected the text would turn core's promise into a failure.
//!
//! Whether a declared carrier really reaches the model cannot be seen from
//! here; each driver proves it against its CLI (real CLIs against the mock
//! model server, or recorded fixtures).

use std::time::Duration;

use agent_adaptor_driver::{Descriptor, Driver};

use crate::hermetic::guarded;
use crate::options::{Expect, Options};
use crate::record::record_run;
use crate::report::Report;

const SCOPE: &str = "equipment";

/// The instructions EQP-02 adds to a run.
pub const INSTRUCTIONS: &str = "Conformance check EQP-02: these are the run's instructions.";

/// The incoherences of `d`'s equipment declaration.
pub fn incoherences(d: &Descriptor) -> Vec<String> {
    let m = &d.mcp;
    let mut f = Vec::new();
    for (set, what) in [
        (m.tool_filter, "mcp.tool_filter"),
        (m.auto_approve, "mcp.auto_approve"),
        (m.strict, "mcp.strict"),
        (m.required, "mcp.required"),
    ] {
        if set && !m.any() {
            f.push(format!("{what} is declared without any MCP transport"));
        }
    }
    for (set, what) in [
        (m.headers, "mcp.headers"),
        (m.bearer_token_env, "mcp.bearer_token_env"),
    ] {
        if set && !(m.http || m.sse) {
            f.push(format!(
                "{what} is declared without an http or sse transport to send it on"
            ));
        }
    }
    if d.profiles.clone && !d.profiles.dedicated {
        f.push("profile.clone is declared without profile.dedicated".to_owned());
    }
    f
}

/// EQP-01.
pub(crate) fn declarations(a: &dyn Driver, report: &mut Report) {
    let f = match guarded("descriptor()", || a.descriptor()) {
        Ok(d) => incoherences(&d),
        Err(e) => vec![e],
    };
    report.judge("EQP-01", SCOPE, f);
}

/// EQP-02: a fresh driver from `factory` runs the first success case with
/// [`INSTRUCTIONS`] added.
pub(crate) async fn instructions_run<D: Driver>(
    factory: &impl Fn() -> D,
    options: &Options,
    timeout: Duration,
    report: &mut Report,
) {
    let driver = factory();
    match guarded("descriptor()", || driver.descriptor().instructions) {
        Err(e) => return report.judge("EQP-02", SCOPE, vec![e]),
        Ok(false) => {
            return report.skip(
                "EQP-02",
                SCOPE,
                "no instructions carrier declared: core refuses such runs before launch",
            );
        }
        Ok(true) => {}
    }
    let Some(case) = options.runs.iter().find(|c| c.expect == Expect::Success) else {
        return report.skip("EQP-02", SCOPE, "no run case expected to succeed");
    };
    let mut request = case.request.clone();
    request.instructions = Some(INSTRUCTIONS.to_owned());
    let trace = record_run(&driver, request, timeout).await;
    let f = match (&trace.returned, trace.response()) {
        (_, Some(r)) => match &r.failure {
            None => vec![],
            Some(failure) => vec![format!(
                "case {:?} with instructions failed: {}",
                case.name, failure.message
            )],
        },
        (Some(Err(e)), None) => vec![format!(
            "case {:?} with instructions returned an error: {e}",
            case.name
        )],
        (_, None) => vec![format!(
            "case {:?} with instructions panicked or overran {timeout:?}",
            case.name
        )],
    };
    report.judge("EQP-02", SCOPE, f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_adaptor_driver::{McpSupport, ProfileSupport};

    #[test]
    fn coherent_declarations_pass_and_each_incoherence_is_named() {
        let mut d = Descriptor::new("t", "T");
        assert!(incoherences(&d).is_empty());
        d.mcp = McpSupport {
            stdio: true,
            http: true,
            headers: true,
            bearer_token_env: true,
            strict: true,
            ..Default::default()
        };
        d.profiles = ProfileSupport {
            dedicated: true,
            clone: true,
        };
        assert!(incoherences(&d).is_empty());
        d.mcp.http = false;
        d.profiles.dedicated = false;
        let f = incoherences(&d);
        assert_eq!(f.len(), 3, "{f:?}");
        assert!(f[0].starts_with("mcp.headers"));
        assert!(f[2].starts_with("profile.clone"));
        d.mcp = McpSupport {
            required: true,
            ..Default::default()
        };
        assert!(incoherences(&d)[0].starts_with("mcp.required"));
    }
}
