//! Run policy for the stream-json family (Claude Code `2.1`, CodeBuddy Code
//! `2.117`, flags checked against their `--help`):
//!
//! | policy | flag |
//! |---|---|
//! | web search `allow` | `--allowedTools=WebSearch` (available and allowed without asking) |
//! | web search `deny` | `--disallowedTools=WebSearch,WebFetch`: Claude Code no longer offers the tools to the model; CodeBuddy Code keeps them declared and denies every call (its deny rules) |
//! | browser `allow` / `deny` | `--chrome` / `--no-chrome` (Claude Code only) |
//! | any explicit decision mode | the control transport (`--input-format stream-json`, Claude also `--permission-prompt-tool stdio`): every `can_use_tool` goes to core, which asks or answers per the policy |
//!
//! Neither CLI has a sandbox level: `--sandbox` of CodeBuddy runs the whole
//! CLI in a container or a cloud VM, not a level of file-system access, and
//! Claude Code's permission modes are approval modes. So no sandbox level
//! is declared. A human can be asked only when the configuration has
//! [`host_approvals`](super::Config::host_approvals) (the host opted in to
//! answering); otherwise routed requests can only be auto-approved or
//! auto-denied by core.
//!
//! The tool lists use the `--flag=value` form: both flags take a variadic
//! list, which in the spaced form would swallow a positional argument that
//! follows.

use super::{Config, Family};
use crate::policy::{Approvals, Kinds, PolicyTable, prepend};

fn web_allow(c: &mut Config) {
    prepend(&mut c.extra_args, "--allowedTools=WebSearch");
}

fn web_deny(c: &mut Config) {
    prepend(&mut c.extra_args, "--disallowedTools=WebSearch,WebFetch");
}

fn chrome(c: &mut Config) {
    prepend(&mut c.extra_args, "--chrome");
}

fn no_chrome(c: &mut Config) {
    prepend(&mut c.extra_args, "--no-chrome");
}

fn route(c: &mut Config) {
    c.host_approvals = true;
}

/// The family's table for a driver configured with `cfg`.
pub fn table(family: &Family, cfg: &Config) -> PolicyTable<Config> {
    PolicyTable {
        web_allow: Some(web_allow),
        web_deny: Some(web_deny),
        browser_allow: family.browser_flags.then_some(chrome as fn(&mut Config)),
        browser_deny: family.browser_flags.then_some(no_chrome as fn(&mut Config)),
        approvals: Approvals {
            route: Some(route),
            routed: Kinds::ALL,
            ask: cfg.host_approvals,
            native_auto_approve: None,
            native_auto_deny: None,
        },
        ..PolicyTable::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streamjson::{CLAUDE, CODEBUDDY, argv_with};
    use agent_adaptor_driver::{
        ApprovalMode, DecisionKind, FeatureLevel, HumanDecisionPolicy, Request, RunPolicy,
        RunPolicyCapabilities,
    };

    #[test]
    fn claude_and_codebuddy_declare_what_they_translate() {
        let mut caps = RunPolicyCapabilities::default();
        table(&CLAUDE, &Config::new(&CLAUDE)).declare(&mut caps);
        assert!(caps.browser_support().allow && caps.browser_support().deny);
        assert!(caps.web_search_support().allow && caps.web_search_support().deny);
        assert!(!caps.isolation);
        assert!(!caps.can_ask(DecisionKind::Permission), "no host_approvals");
        assert!(caps.supports_mode(DecisionKind::PlanReview, ApprovalMode::AutoApprove));
        let mut caps = RunPolicyCapabilities::default();
        let mut asking = Config::new(&CODEBUDDY);
        asking.host_approvals = true;
        table(&CODEBUDDY, &asking).declare(&mut caps);
        assert!(!caps.browser);
        assert!(caps.can_ask(DecisionKind::Question));
    }

    #[test]
    fn flags_come_before_the_hosts_extra_args() {
        let mut cfg = Config::new(&CLAUDE);
        cfg.extra_args = vec!["--fallback-model".into(), "m".into()];
        let policy = RunPolicy {
            web_search: FeatureLevel::Deny,
            browser: FeatureLevel::Allow,
            human_decision: HumanDecisionPolicy {
                permission: ApprovalMode::AutoDeny,
                ..Default::default()
            },
            ..Default::default()
        };
        let applied = table(&CLAUDE, &cfg).apply(&cfg, &policy);
        assert!(applied.host_approvals);
        let argv = argv_with(&CLAUDE, &applied, &Request::new("r", "p"), true);
        let tail: Vec<&str> = argv[argv.len() - 4..].iter().map(String::as_str).collect();
        assert_eq!(
            tail,
            [
                "--chrome",
                "--disallowedTools=WebSearch,WebFetch",
                "--fallback-model",
                "m"
            ]
        );
        assert!(
            argv.windows(2)
                .any(|w| w == ["--permission-prompt-tool", "stdio"])
        );
    }
}
