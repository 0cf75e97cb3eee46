//! Run policy for Gemini CLI (`0.61`, flags checked against `gemini --help`
//! and its bundle):
//!
//! | policy | flag |
//! |---|---|
//! | sandbox `workspace_write` | `--sandbox` (tools run in the CLI's container / Seatbelt sandbox, which writes only to the project directory) |
//! | permission `auto_approve` | `--approval-mode yolo` |
//! | permission `auto_deny` | `--approval-mode default`: headless Gemini turns every "ask the user" into a denial (its policy engine: "non-interactive mode: ASK_USER becomes DENY") |
//!
//! Not declared: `read_only` (the closest, `--approval-mode plan`, is a
//! planning workflow and an approval mode), `unrestricted` (`--sandbox=false`
//! is overridden by a `GEMINI_SANDBOX` in the environment), web search and
//! browser (no flag; the policy engine's files would be needed), plan
//! reviews and questions (headless Gemini asks nothing), and `ask` (there is
//! no host channel).

use super::{ApprovalMode, Config};
use crate::policy::{Approvals, PolicyTable, prepend};

/// Gemini's table.
pub fn table() -> PolicyTable<Config> {
    PolicyTable {
        workspace_write: Some(|c| prepend(&mut c.extra_args, "--sandbox")),
        approvals: Approvals {
            native_auto_approve: Some(|c| c.approval_mode = ApprovalMode::Yolo),
            native_auto_deny: Some(|c| c.approval_mode = ApprovalMode::Default),
            ..Approvals::NONE
        },
        ..PolicyTable::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemini::argv::argv;
    use agent_adaptor_driver::{
        ApprovalMode as Mode, HumanDecisionPolicy, Request, RunPolicy, SandboxLevel,
    };

    #[test]
    fn sandbox_and_permission_modes() {
        let base = Config {
            approval_mode: ApprovalMode::AutoEdit,
            ..Default::default()
        };
        let policy = RunPolicy {
            sandbox: SandboxLevel::WorkspaceWrite,
            human_decision: HumanDecisionPolicy {
                permission: Mode::AutoApprove,
                ..Default::default()
            },
            ..Default::default()
        };
        let a = argv(&table().apply(&base, &policy), &Request::new("r", "p"));
        assert!(a.contains(&"--sandbox".to_owned()), "{a:?}");
        assert!(a.contains(&"--yolo".to_owned()), "{a:?}");
        assert!(!a.contains(&"auto_edit".to_owned()), "{a:?}");
        let deny = RunPolicy {
            human_decision: HumanDecisionPolicy {
                permission: Mode::AutoDeny,
                ..Default::default()
            },
            ..Default::default()
        };
        let a = argv(&table().apply(&base, &deny), &Request::new("r", "p"));
        assert!(
            !a.iter().any(|x| x == "--approval-mode" || x == "--yolo"),
            "{a:?}"
        );
    }
}
