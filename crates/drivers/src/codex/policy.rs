//! Run policy for Codex (`codex-cli 0.171`, flags checked against
//! `codex exec --help` and `codex app-server --help`):
//!
//! | policy | exec | app-server |
//! |---|---|---|
//! | sandbox `read_only` / `workspace_write` / `unrestricted` | `-s read-only` / `workspace-write` / `danger-full-access` | `thread/start.sandbox`, same values |
//! | web search `allow` / `deny` | `-c web_search="live"` / `"disabled"` | the same `-c` on `codex app-server` |
//! | any explicit decision mode | — (exec cannot ask: only a permission `auto_approve`, as `-c approval_policy=never`) | routed: approval requests go to core (`approvalPolicy` `on-request` unless configured); the `Auto` transport then uses the app-server for the run |
//!
//! Codex has no browser switch and no plan-review or question requests
//! over the app-server protocol the driver speaks, so none is declared.
//! The policy wins over the configuration's own `sandbox` for the run.

use super::{Config, Transport};
use crate::policy::{Approvals, Kinds, PolicyTable};

fn sandbox(c: &mut Config, level: &str) {
    c.sandbox = Some(level.to_owned());
}

fn web(c: &mut Config, mode: &str) {
    c.overrides
        .insert("web_search".into(), format!("\"{mode}\""));
}

fn route(c: &mut Config) {
    if c.transport == Transport::Auto {
        c.transport = Transport::AppServer;
    }
    if c.approval_policy.is_none() {
        c.approval_policy = Some("on-request".into());
    }
}

fn never_ask(c: &mut Config) {
    c.approval_policy = Some("never".into());
}

/// Codex's table for a driver configured with `cfg`.
pub fn table(cfg: &Config) -> PolicyTable<Config> {
    let exec_only = cfg.transport == Transport::Exec;
    PolicyTable {
        read_only: Some(|c| sandbox(c, "read-only")),
        workspace_write: Some(|c| sandbox(c, "workspace-write")),
        unrestricted: Some(|c| sandbox(c, "danger-full-access")),
        web_allow: Some(|c| web(c, "live")),
        web_deny: Some(|c| web(c, "disabled")),
        approvals: if exec_only {
            Approvals {
                native_auto_approve: Some(never_ask),
                ..Approvals::NONE
            }
        } else {
            Approvals {
                route: Some(route),
                routed: Kinds::PERMISSION,
                ask: true,
                native_auto_approve: None,
                native_auto_deny: None,
            }
        },
        ..PolicyTable::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codex::argv::{app_server_argv, exec_argv};
    use agent_adaptor_driver::{
        ApprovalMode, DecisionKind, FeatureLevel, HumanDecisionPolicy, Request, RunPolicy,
        RunPolicyCapabilities, SandboxLevel,
    };

    #[test]
    fn exec_and_app_server_flags() {
        let base = Config::default();
        let policy = RunPolicy {
            sandbox: SandboxLevel::ReadOnly,
            web_search: FeatureLevel::Deny,
            ..Default::default()
        };
        let applied = table(&base).apply(&base, &policy);
        let a = exec_argv(&applied, &Request::new("r", "p"), None, None, &[]);
        assert!(a.windows(2).any(|w| w == ["-s", "read-only"]), "{a:?}");
        assert!(
            a.windows(2).any(|w| w == ["-c", "web_search=\"disabled\""]),
            "{a:?}"
        );
        let a = app_server_argv(&applied);
        assert!(a.windows(2).any(|w| w == ["-c", "web_search=\"disabled\""]));
        assert_eq!(applied.sandbox.as_deref(), Some("read-only"));
    }

    #[test]
    fn decisions_route_to_the_app_server_unless_exec_is_forced() {
        let policy = RunPolicy {
            human_decision: HumanDecisionPolicy {
                permission: ApprovalMode::AutoApprove,
                ..Default::default()
            },
            ..Default::default()
        };
        let auto = Config::default();
        let routed = table(&auto).apply(&auto, &policy);
        assert_eq!(routed.transport, Transport::AppServer);
        assert_eq!(routed.approval_policy.as_deref(), Some("on-request"));
        let exec = Config {
            transport: Transport::Exec,
            ..Default::default()
        };
        let native = table(&exec).apply(&exec, &policy);
        assert_eq!(native.transport, Transport::Exec);
        assert_eq!(native.approval_policy.as_deref(), Some("never"));
        let mut caps = RunPolicyCapabilities::default();
        table(&exec).declare(&mut caps);
        assert!(!caps.can_ask(DecisionKind::Permission));
        assert!(!caps.supports_mode(DecisionKind::Permission, ApprovalMode::AutoDeny));
        assert!(caps.supports_mode(DecisionKind::Permission, ApprovalMode::AutoApprove));
        table(&auto).declare(&mut caps);
        assert!(caps.can_ask(DecisionKind::Permission));
        assert!(!caps.supports_mode(DecisionKind::Question, ApprovalMode::AutoDeny));
        assert!(!caps.browser);
    }
}
