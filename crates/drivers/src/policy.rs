//! Run policy → a driver's own flags: the one mapping every built-in driver
//! shares. A driver supplies only its [`PolicyTable`]: for each explicit
//! policy value it honours, how its configuration changes for the run (a
//! flag, a `-c` override, a transport). The same table produces the
//! driver's declarations ([`PolicyTable::declare`]), so a descriptor
//! declares exactly what the driver translates.
//!
//! Core validated the policy against those declarations before the run, so
//! [`PolicyTable::apply`] only sees values the table has. Inherit values
//! change nothing.
//!
//! Human decisions are decided by core. A driver that can route its
//! provider's decision requests to core's decision sink (the stream-json
//! control transport, the Codex app-server) declares `route`: when the
//! run's policy sets any decision mode explicitly, the run routes, and core
//! asks the host or answers per the policy (so auto-approve and auto-deny
//! are visible as events). A driver that cannot route may still have native
//! auto modes for permissions (`--yolo`, `approval_policy=never`).
//!
//! ```
//! use agent_adaptor_driver::{FeatureLevel, RunPolicy, RunPolicyCapabilities};
//! use agent_adaptor_drivers::policy::PolicyTable;
//!
//! #[derive(Clone, Default)]
//! struct Cfg { args: Vec<String> }
//!
//! let table = PolicyTable::<Cfg> {
//!     web_deny: Some(|c| c.args.push("--no-web".into())),
//!     ..PolicyTable::NONE
//! };
//! let mut caps = RunPolicyCapabilities::default();
//! table.declare(&mut caps);
//! assert!(caps.web_search_support().deny && !caps.web_search_support().allow);
//!
//! let policy = RunPolicy { web_search: FeatureLevel::Deny, ..Default::default() };
//! assert_eq!(table.apply(&Cfg::default(), &policy).args, ["--no-web"]);
//! assert!(table.apply(&Cfg::default(), &RunPolicy::default()).args.is_empty());
//! ```

use std::borrow::Cow;

use agent_adaptor_driver::{
    ApprovalMode, FeatureLevel, FeatureSupport, HumanDecisionSupport, QuestionSupport, RunPolicy,
    RunPolicyCapabilities, SandboxLevel, SandboxSupport,
};

/// How one explicit policy value changes a driver's configuration `C` for
/// one run.
pub type Apply<C> = fn(&mut C);

/// One driver's translation of run policy. `None` = not supported (and not
/// declared).
pub struct PolicyTable<C: 'static> {
    /// Sandbox `read_only`.
    pub read_only: Option<Apply<C>>,
    /// Sandbox `workspace_write`.
    pub workspace_write: Option<Apply<C>>,
    /// Sandbox `unrestricted`.
    pub unrestricted: Option<Apply<C>>,
    /// Web search `allow`.
    pub web_allow: Option<Apply<C>>,
    /// Web search `deny`.
    pub web_deny: Option<Apply<C>>,
    /// Browser `allow`.
    pub browser_allow: Option<Apply<C>>,
    /// Browser `deny`.
    pub browser_deny: Option<Apply<C>>,
    /// Human decisions.
    pub approvals: Approvals<C>,
}

/// Which decision kinds a driver routes to core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Kinds {
    /// Permission requests.
    pub permission: bool,
    /// Plan reviews.
    pub plan_review: bool,
    /// Questions.
    pub question: bool,
}

impl Kinds {
    /// Every kind.
    pub const ALL: Kinds = Kinds {
        permission: true,
        plan_review: true,
        question: true,
    };
    /// Permission requests only.
    pub const PERMISSION: Kinds = Kinds {
        permission: true,
        plan_review: false,
        question: false,
    };
}

/// How a driver makes human decisions happen.
pub struct Approvals<C: 'static> {
    /// Route the run's decision requests (of the kinds in `routed`) to
    /// core's decision sink. Applied when the run's policy sets any mode
    /// explicitly; core then answers auto modes itself.
    pub route: Option<Apply<C>>,
    /// The kinds whose requests reach core once routed.
    pub routed: Kinds,
    /// Whether core can put a routed request to a human with this
    /// configuration (declares `ask`). Without it, routed requests can only
    /// be auto-approved or auto-denied.
    pub ask: bool,
    /// Native permission auto-approve for a run that does not route.
    pub native_auto_approve: Option<Apply<C>>,
    /// Native permission auto-deny for a run that does not route.
    pub native_auto_deny: Option<Apply<C>>,
}

impl<C: 'static> Approvals<C> {
    /// No decision support at all.
    pub const NONE: Approvals<C> = Approvals {
        route: None,
        routed: Kinds {
            permission: false,
            plan_review: false,
            question: false,
        },
        ask: false,
        native_auto_approve: None,
        native_auto_deny: None,
    };
}

impl<C: 'static> PolicyTable<C> {
    /// A table that supports nothing.
    pub const NONE: PolicyTable<C> = PolicyTable {
        read_only: None,
        workspace_write: None,
        unrestricted: None,
        web_allow: None,
        web_deny: None,
        browser_allow: None,
        browser_deny: None,
        approvals: Approvals::NONE,
    };

    /// Declare exactly what this table translates.
    pub fn declare(&self, caps: &mut RunPolicyCapabilities) {
        caps.declare_sandbox(SandboxSupport {
            read_only: self.read_only.is_some(),
            workspace_write: self.workspace_write.is_some(),
            unrestricted: self.unrestricted.is_some(),
        });
        caps.declare_web_search(FeatureSupport {
            allow: self.web_allow.is_some(),
            deny: self.web_deny.is_some(),
        });
        caps.declare_browser(FeatureSupport {
            allow: self.browser_allow.is_some(),
            deny: self.browser_deny.is_some(),
        });
        let a = &self.approvals;
        let routes = |kind: bool| a.route.is_some() && kind;
        let binary = |kind: bool, native: bool| HumanDecisionSupport {
            ask: a.ask && routes(kind),
            auto_approve: routes(kind) || (native && a.native_auto_approve.is_some()),
            auto_reject: routes(kind) || (native && a.native_auto_deny.is_some()),
            retry: false,
        };
        caps.permission = binary(a.routed.permission, true);
        caps.plan_review = binary(a.routed.plan_review, false);
        caps.question = QuestionSupport {
            ask: a.ask && routes(a.routed.question),
            auto_reject: routes(a.routed.question),
            retry: false,
        };
    }

    /// The configuration for one run under `policy`: `base` itself when the
    /// policy sets nothing this table translates, else a changed copy.
    pub fn apply<'c>(&self, base: &'c C, policy: &RunPolicy) -> Cow<'c, C>
    where
        C: Clone,
    {
        let mut steps: Vec<Apply<C>> = Vec::new();
        let sandbox = match policy.sandbox {
            SandboxLevel::Inherit => None,
            SandboxLevel::ReadOnly => self.read_only,
            SandboxLevel::WorkspaceWrite => self.workspace_write,
            SandboxLevel::Unrestricted => self.unrestricted,
        };
        let feature = |level, allow, deny| match level {
            FeatureLevel::Inherit => None,
            FeatureLevel::Allow => allow,
            FeatureLevel::Deny => deny,
        };
        steps.extend(sandbox);
        steps.extend(feature(policy.web_search, self.web_allow, self.web_deny));
        steps.extend(feature(
            policy.browser,
            self.browser_allow,
            self.browser_deny,
        ));
        let decisions = &policy.human_decision;
        if decisions.any_explicit_mode() {
            match self.approvals.route {
                Some(route) => steps.push(route),
                None => steps.extend(match decisions.permission {
                    ApprovalMode::AutoApprove => self.approvals.native_auto_approve,
                    ApprovalMode::AutoDeny => self.approvals.native_auto_deny,
                    _ => None,
                }),
            }
        }
        if steps.is_empty() {
            return Cow::Borrowed(base);
        }
        let mut cfg = base.clone();
        for step in steps {
            step(&mut cfg);
        }
        Cow::Owned(cfg)
    }
}

/// Put `flag` in front of `args` (the extra arguments of a driver whose
/// policy flags are plain CLI flags): before the host's own extra
/// arguments, which may end in positional values.
pub fn prepend(args: &mut Vec<String>, flag: &str) {
    args.insert(0, flag.to_owned());
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_adaptor_driver::{DecisionKind, HumanDecisionPolicy, QuestionMode};

    #[derive(Debug, Clone, Default, PartialEq)]
    struct Cfg {
        args: Vec<String>,
        routed: bool,
    }

    fn table(ask: bool) -> PolicyTable<Cfg> {
        PolicyTable {
            read_only: Some(|c| prepend(&mut c.args, "--ro")),
            browser_deny: Some(|c| prepend(&mut c.args, "--no-browser")),
            approvals: Approvals {
                route: Some(|c| c.routed = true),
                routed: Kinds::ALL,
                ask,
                native_auto_approve: None,
                native_auto_deny: None,
            },
            ..PolicyTable::NONE
        }
    }

    #[test]
    fn declarations_follow_the_table() {
        let mut caps = RunPolicyCapabilities::default();
        table(false).declare(&mut caps);
        assert!(caps.isolation && caps.sandbox_support().read_only);
        assert!(!caps.sandbox_support().workspace_write);
        assert!(caps.browser && caps.browser_support().deny && !caps.browser_support().allow);
        assert!(!caps.web_search);
        assert!(!caps.can_ask(DecisionKind::Permission));
        assert!(caps.supports_mode(DecisionKind::PlanReview, ApprovalMode::AutoApprove));
        assert!(caps.supports_mode(DecisionKind::Question, ApprovalMode::AutoDeny));
        table(true).declare(&mut caps);
        assert!(caps.can_ask(DecisionKind::Question));
    }

    #[test]
    fn explicit_values_apply_in_order_and_inherit_changes_nothing() {
        let base = Cfg {
            args: vec!["--user".into()],
            routed: false,
        };
        let t = table(true);
        assert!(matches!(
            t.apply(&base, &RunPolicy::default()),
            Cow::Borrowed(_)
        ));
        let policy = RunPolicy {
            sandbox: SandboxLevel::ReadOnly,
            browser: FeatureLevel::Deny,
            human_decision: HumanDecisionPolicy {
                question: QuestionMode::AutoDeny,
                ..Default::default()
            },
            ..Default::default()
        };
        let applied = t.apply(&base, &policy);
        assert_eq!(applied.args, ["--no-browser", "--ro", "--user"]);
        assert!(applied.routed);
    }

    #[test]
    fn native_permission_modes_without_routing() {
        let t = PolicyTable::<Cfg> {
            approvals: Approvals {
                native_auto_approve: Some(|c| prepend(&mut c.args, "--yolo")),
                ..Approvals::NONE
            },
            ..PolicyTable::NONE
        };
        let mut caps = RunPolicyCapabilities::default();
        t.declare(&mut caps);
        assert_eq!(
            caps.permission,
            HumanDecisionSupport {
                auto_approve: true,
                ..Default::default()
            }
        );
        assert_eq!(caps.question, QuestionSupport::default());
        let policy = RunPolicy {
            human_decision: HumanDecisionPolicy {
                permission: ApprovalMode::AutoApprove,
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(t.apply(&Cfg::default(), &policy).args, ["--yolo"]);
    }
}
