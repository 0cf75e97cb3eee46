//! Run policy as a driver sees it (spec §3 `Request.Policy`): the sandbox
//! level, web search, browser use and the human-decision policy of one run,
//! already merged by core (the call site over the agent's defaults) and
//! validated against the driver's [`RunPolicyCapabilities`] before the
//! driver is entered.
//!
//! Every dimension has an `Inherit` value, the default: "not set — keep the
//! driver's and the provider's own behaviour". Inherit never counts as an
//! explicit request, so a driver adds no flag for it. A driver translates
//! only explicit values, and only those it declares in its
//! [`Descriptor`](crate::Descriptor); core refused the run otherwise.
//!
//! ```
//! use agent_adaptor_driver::{RunPolicy, SandboxLevel, FeatureLevel};
//!
//! let policy = RunPolicy { sandbox: SandboxLevel::ReadOnly, ..Default::default() };
//! assert_eq!(policy.sandbox.as_str(), "read_only");
//! assert!(policy.web_search.is_inherit());
//! assert!(!policy.is_inherit());
//! ```
//!
//! The human-decision part ([`HumanDecisionPolicy`]) is enforced by core:
//! a driver that routes decisions through the sink's
//! [`DecisionSink`](crate::DecisionSink) gets answers that already honour
//! it (auto-approve, auto-deny, timeouts, retries). A driver only needs the
//! modes to choose a transport (for example one with a host channel when any
//! mode is explicit) or a native flag for providers that decide themselves.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::decision::DecisionKind;
use crate::descriptor::{
    FeatureSupport, HumanDecisionSupport, QuestionSupport, RunPolicyCapabilities, SandboxSupport,
};

/// How long a human has to answer when the policy sets no timeout.
pub const DEFAULT_HUMAN_DECISION_TIMEOUT: Duration = Duration::from_secs(30);

/// How many times a decision is asked again under
/// [`FallbackAction::Retry`] when the policy sets no limit.
pub const DEFAULT_HUMAN_DECISION_MAX_RETRIES: u32 = 3;

/// How much of the machine the provider's tools may touch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxLevel {
    /// Not set: the driver's own configuration decides.
    #[default]
    Inherit,
    /// Read files only; no writes, no network.
    ReadOnly,
    /// Write inside the workspace only.
    WorkspaceWrite,
    /// No sandbox.
    Unrestricted,
}

impl SandboxLevel {
    /// Every explicit level.
    pub const EXPLICIT: [SandboxLevel; 3] = [
        SandboxLevel::ReadOnly,
        SandboxLevel::WorkspaceWrite,
        SandboxLevel::Unrestricted,
    ];

    /// The wire name (`"read_only"` …; `""` for inherit).
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxLevel::Inherit => "",
            SandboxLevel::ReadOnly => "read_only",
            SandboxLevel::WorkspaceWrite => "workspace_write",
            SandboxLevel::Unrestricted => "unrestricted",
        }
    }

    /// True for [`SandboxLevel::Inherit`].
    pub fn is_inherit(&self) -> bool {
        *self == SandboxLevel::Inherit
    }
}

/// Whether an optional provider feature (web search, browser use) is on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FeatureLevel {
    /// Not set: the driver's own configuration decides.
    #[default]
    Inherit,
    /// Make the feature available (and usable without asking).
    Allow,
    /// Take the feature away.
    Deny,
}

impl FeatureLevel {
    /// Every explicit level.
    pub const EXPLICIT: [FeatureLevel; 2] = [FeatureLevel::Allow, FeatureLevel::Deny];

    /// The wire name (`"allow"`, `"deny"`; `""` for inherit).
    pub fn as_str(self) -> &'static str {
        match self {
            FeatureLevel::Inherit => "",
            FeatureLevel::Allow => "allow",
            FeatureLevel::Deny => "deny",
        }
    }

    /// True for [`FeatureLevel::Inherit`].
    pub fn is_inherit(&self) -> bool {
        *self == FeatureLevel::Inherit
    }
}

/// How permission and plan-review decisions are made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Not set: ask the host when the driver can ask, else deny.
    #[default]
    Inherit,
    /// Ask the host (the event stream or the approval handler).
    Ask,
    /// Approve without asking.
    AutoApprove,
    /// Deny without asking.
    AutoDeny,
}

impl ApprovalMode {
    /// Every explicit mode.
    pub const EXPLICIT: [ApprovalMode; 3] = [
        ApprovalMode::Ask,
        ApprovalMode::AutoApprove,
        ApprovalMode::AutoDeny,
    ];

    /// The wire name (`"ask"`, `"auto_approve"`, `"auto_deny"`; `""` for inherit).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Inherit => "",
            ApprovalMode::Ask => "ask",
            ApprovalMode::AutoApprove => "auto_approve",
            ApprovalMode::AutoDeny => "auto_deny",
        }
    }

    /// True for [`ApprovalMode::Inherit`].
    pub fn is_inherit(&self) -> bool {
        *self == ApprovalMode::Inherit
    }
}

/// How questions are handled (a question cannot be approved, only answered
/// or declined).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionMode {
    /// Not set: ask the host when the driver can ask, else decline.
    #[default]
    Inherit,
    /// Ask the host.
    Ask,
    /// Decline without asking.
    AutoDeny,
}

impl QuestionMode {
    /// Every explicit mode.
    pub const EXPLICIT: [QuestionMode; 2] = [QuestionMode::Ask, QuestionMode::AutoDeny];

    /// The wire name (`"ask"`, `"auto_deny"`; `""` for inherit).
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionMode::Inherit => "",
            QuestionMode::Ask => "ask",
            QuestionMode::AutoDeny => "auto_deny",
        }
    }

    /// True for [`QuestionMode::Inherit`].
    pub fn is_inherit(&self) -> bool {
        *self == QuestionMode::Inherit
    }

    /// The same mode as an [`ApprovalMode`].
    pub fn as_approval(self) -> ApprovalMode {
        match self {
            QuestionMode::Inherit => ApprovalMode::Inherit,
            QuestionMode::Ask => ApprovalMode::Ask,
            QuestionMode::AutoDeny => ApprovalMode::AutoDeny,
        }
    }
}

/// What happens when a human does not answer in time, or rejects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FallbackAction {
    /// Not set: continue.
    #[default]
    Inherit,
    /// Stop the run: it fails with `approval_timeout` / `approval_denied`.
    Abort,
    /// Answer the driver with the safe default (deny) and let the run go on.
    Continue,
    /// Ask again, up to `max_retries` times, then abort. Needs the driver's
    /// `retry` declaration; without it core warns once and aborts.
    Retry,
}

impl FallbackAction {
    /// The wire name (`"abort"`, `"continue"`, `"retry"`; `""` for inherit).
    pub fn as_str(self) -> &'static str {
        match self {
            FallbackAction::Inherit => "",
            FallbackAction::Abort => "abort",
            FallbackAction::Continue => "continue",
            FallbackAction::Retry => "retry",
        }
    }

    /// True for [`FallbackAction::Inherit`].
    pub fn is_inherit(&self) -> bool {
        *self == FallbackAction::Inherit
    }
}

/// How long a human has to answer one decision.
///
/// The Go library's `time.Duration` timeout maps as: zero (unset) → `None`
/// on the policy (the 30 s default), negative → [`ApprovalTimeout::Never`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalTimeout {
    /// This long (must be more than zero).
    After(Duration),
    /// No deadline: wait until answered or the run ends.
    Never,
}

impl ApprovalTimeout {
    /// The deadline as a duration (`None` = never).
    pub fn duration(self) -> Option<Duration> {
        match self {
            ApprovalTimeout::After(d) => Some(d),
            ApprovalTimeout::Never => None,
        }
    }
}

/// The human-decision policy of a run (Go: `driver.HumanDecisionPolicy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HumanDecisionPolicy {
    /// Permission requests (run a tool, a command …).
    #[serde(default, skip_serializing_if = "ApprovalMode::is_inherit")]
    pub permission: ApprovalMode,
    /// Plan reviews.
    #[serde(default, skip_serializing_if = "ApprovalMode::is_inherit")]
    pub plan_review: ApprovalMode,
    /// Questions.
    #[serde(default, skip_serializing_if = "QuestionMode::is_inherit")]
    pub question: QuestionMode,
    /// How long a human has to answer one attempt (`None`: 30 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<ApprovalTimeout>,
    /// What a timeout leads to.
    #[serde(default, skip_serializing_if = "FallbackAction::is_inherit")]
    pub on_timeout: FallbackAction,
    /// What a human rejection leads to.
    #[serde(default, skip_serializing_if = "FallbackAction::is_inherit")]
    pub on_reject: FallbackAction,
    /// How many times [`FallbackAction::Retry`] asks again (`None`: 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
}

impl HumanDecisionPolicy {
    /// True when nothing is set.
    pub fn is_inherit(&self) -> bool {
        *self == HumanDecisionPolicy::default()
    }

    /// The mode set for decisions of `kind` (questions as an [`ApprovalMode`]).
    pub fn mode(&self, kind: DecisionKind) -> ApprovalMode {
        match kind {
            DecisionKind::Permission => self.permission,
            DecisionKind::PlanReview => self.plan_review,
            DecisionKind::Question => self.question.as_approval(),
        }
    }

    /// True when any kind has an explicit mode: the host chose how this
    /// run's decisions are made, so a driver that can route decisions to
    /// core should do so (core then asks or answers per the policy).
    pub fn any_explicit_mode(&self) -> bool {
        !(self.permission.is_inherit()
            && self.plan_review.is_inherit()
            && self.question.is_inherit())
    }
}

/// The run policy a driver receives in [`Request::policy`](crate::Request::policy).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RunPolicy {
    /// The sandbox level.
    #[serde(default, skip_serializing_if = "SandboxLevel::is_inherit")]
    pub sandbox: SandboxLevel,
    /// Web search.
    #[serde(default, skip_serializing_if = "FeatureLevel::is_inherit")]
    pub web_search: FeatureLevel,
    /// Browser use.
    #[serde(default, skip_serializing_if = "FeatureLevel::is_inherit")]
    pub browser: FeatureLevel,
    /// Human decisions.
    #[serde(default, skip_serializing_if = "HumanDecisionPolicy::is_inherit")]
    pub human_decision: HumanDecisionPolicy,
}

impl RunPolicy {
    /// True when nothing is set.
    pub fn is_inherit(&self) -> bool {
        *self == RunPolicy::default()
    }
}

impl SandboxSupport {
    /// True when `level` is declared (inherit always is).
    pub fn supports(&self, level: SandboxLevel) -> bool {
        match level {
            SandboxLevel::Inherit => true,
            SandboxLevel::ReadOnly => self.read_only,
            SandboxLevel::WorkspaceWrite => self.workspace_write,
            SandboxLevel::Unrestricted => self.unrestricted,
        }
    }

    /// True when some level is declared.
    pub fn any(&self) -> bool {
        self.read_only || self.workspace_write || self.unrestricted
    }
}

impl FeatureSupport {
    /// True when `level` is declared (inherit always is).
    pub fn supports(&self, level: FeatureLevel) -> bool {
        match level {
            FeatureLevel::Inherit => true,
            FeatureLevel::Allow => self.allow,
            FeatureLevel::Deny => self.deny,
        }
    }

    /// True when some level is declared.
    pub fn any(&self) -> bool {
        self.allow || self.deny
    }

    /// Both levels.
    pub const BOTH: FeatureSupport = FeatureSupport {
        allow: true,
        deny: true,
    };
}

impl HumanDecisionSupport {
    /// True when `mode` is declared (inherit always is).
    pub fn supports(&self, mode: ApprovalMode) -> bool {
        match mode {
            ApprovalMode::Inherit => true,
            ApprovalMode::Ask => self.ask,
            ApprovalMode::AutoApprove => self.auto_approve,
            ApprovalMode::AutoDeny => self.auto_reject,
        }
    }
}

impl QuestionSupport {
    /// True when `mode` is declared (inherit always is; a question has no
    /// auto-approve).
    pub fn supports(&self, mode: QuestionMode) -> bool {
        match mode {
            QuestionMode::Inherit => true,
            QuestionMode::Ask => self.ask,
            QuestionMode::AutoDeny => self.auto_reject,
        }
    }
}

impl RunPolicyCapabilities {
    /// The sandbox levels the driver honours: the per-level declaration,
    /// or — for a driver that only sets the coarse `isolation` flag — every
    /// level.
    pub fn sandbox_support(&self) -> SandboxSupport {
        if self.sandbox_levels.any() || !self.isolation {
            self.sandbox_levels
        } else {
            SandboxSupport {
                read_only: true,
                workspace_write: true,
                unrestricted: true,
            }
        }
    }

    /// The web-search levels the driver honours (per level, or both when
    /// only the coarse `web_search` flag is set).
    pub fn web_search_support(&self) -> FeatureSupport {
        coarse(self.web_search_levels, self.web_search)
    }

    /// The browser levels the driver honours (per level, or both when only
    /// the coarse `browser` flag is set).
    pub fn browser_support(&self) -> FeatureSupport {
        coarse(self.browser_levels, self.browser)
    }

    /// Whether decisions of `kind` can be made with `mode`.
    pub fn supports_mode(&self, kind: DecisionKind, mode: ApprovalMode) -> bool {
        match kind {
            DecisionKind::Permission => self.permission.supports(mode),
            DecisionKind::PlanReview => self.plan_review.supports(mode),
            DecisionKind::Question => match mode {
                ApprovalMode::Inherit => true,
                ApprovalMode::Ask => self.question.ask,
                ApprovalMode::AutoDeny => self.question.auto_reject,
                ApprovalMode::AutoApprove => false,
            },
        }
    }

    /// Whether the driver can ask the host for decisions of `kind`.
    pub fn can_ask(&self, kind: DecisionKind) -> bool {
        self.supports_mode(kind, ApprovalMode::Ask)
    }

    /// Whether the driver honours a retry (asking again) for `kind`.
    pub fn can_retry(&self, kind: DecisionKind) -> bool {
        match kind {
            DecisionKind::Permission => self.permission.retry,
            DecisionKind::PlanReview => self.plan_review.retry,
            DecisionKind::Question => self.question.retry,
        }
    }

    /// Declare exactly `levels` for the sandbox (and the coarse flag).
    pub fn declare_sandbox(&mut self, levels: SandboxSupport) {
        self.sandbox_levels = levels;
        self.isolation = levels.any();
    }

    /// Declare exactly `levels` for web search (and the coarse flag).
    pub fn declare_web_search(&mut self, levels: FeatureSupport) {
        self.web_search_levels = levels;
        self.web_search = levels.any();
    }

    /// Declare exactly `levels` for the browser (and the coarse flag).
    pub fn declare_browser(&mut self, levels: FeatureSupport) {
        self.browser_levels = levels;
        self.browser = levels.any();
    }
}

fn coarse(levels: FeatureSupport, flag: bool) -> FeatureSupport {
    if levels.any() || !flag {
        levels
    } else {
        FeatureSupport::BOTH
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inherit_is_the_default_and_serializes_to_nothing() {
        let p = RunPolicy::default();
        assert!(p.is_inherit());
        assert_eq!(serde_json::to_string(&p).unwrap(), "{}");
        let p = RunPolicy {
            sandbox: SandboxLevel::WorkspaceWrite,
            human_decision: HumanDecisionPolicy {
                question: QuestionMode::AutoDeny,
                timeout: Some(ApprovalTimeout::Never),
                ..Default::default()
            },
            ..Default::default()
        };
        let json = serde_json::to_value(p).unwrap();
        assert_eq!(json["sandbox"], "workspace_write");
        assert_eq!(json["human_decision"]["question"], "auto_deny");
        assert_eq!(json["human_decision"]["timeout"], "never");
        assert_eq!(serde_json::from_value::<RunPolicy>(json).unwrap(), p);
    }

    #[test]
    fn coarse_flags_mean_every_level() {
        let mut caps = RunPolicyCapabilities {
            isolation: true,
            ..Default::default()
        };
        assert!(
            SandboxLevel::EXPLICIT
                .iter()
                .all(|l| caps.sandbox_support().supports(*l))
        );
        caps.declare_sandbox(SandboxSupport {
            workspace_write: true,
            ..Default::default()
        });
        assert!(!caps.sandbox_support().supports(SandboxLevel::ReadOnly));
        assert!(
            caps.sandbox_support()
                .supports(SandboxLevel::WorkspaceWrite)
        );
        assert!(caps.web_search_support().supports(FeatureLevel::Inherit));
        assert!(!caps.web_search_support().supports(FeatureLevel::Deny));
        caps.web_search = true;
        assert!(caps.web_search_support().supports(FeatureLevel::Deny));
    }

    #[test]
    fn a_question_is_never_auto_approved() {
        let caps = RunPolicyCapabilities {
            question: QuestionSupport {
                ask: true,
                auto_reject: true,
                retry: true,
            },
            ..Default::default()
        };
        assert!(!caps.supports_mode(DecisionKind::Question, ApprovalMode::AutoApprove));
        assert!(caps.supports_mode(DecisionKind::Question, ApprovalMode::AutoDeny));
        assert!(caps.can_retry(DecisionKind::Question));
        assert!(!caps.can_ask(DecisionKind::Permission));
    }
}
