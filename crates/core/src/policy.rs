//! Run policy: the sandbox level, web search, browser use, human-decision
//! approvals and the active-execution budget of a run (reference §2.3).
//!
//! A [`Policy`] is set as an agent default
//! ([`AgentBuilder::policy`](crate::AgentBuilder::policy)) and per call
//! ([`RunOptions::policy`](crate::RunOptions::policy)); the call site wins
//! **field by field**, an `Inherit` (or `None`) field meaning "not set".
//!
//! Before anything is touched — no lease, no workspace, no driver call —
//! core checks the merged policy:
//!
//! 1. out-of-domain values → [`Error::InvalidPolicy`];
//! 2. an explicit sandbox, web-search or browser value the driver's
//!    [`Descriptor`] does not declare → [`Error::PolicyCapabilityUnsupported`];
//! 3. an explicit approval mode the descriptor's `run_policy` does not
//!    declare → [`Error::HumanDecisionModeUnsupported`].
//!
//! Inherit values never count as explicit requests. The driver receives the
//! merged policy in [`Request::policy`](agent_adaptor_driver::Request::policy)
//! and translates it into its own flags.
//!
//! Decisions are made in one place, core: an asked decision gets the
//! policy's timeout; a timeout leads to `on_timeout`, a human rejection to
//! `on_reject` (abort → the run fails with `approval_timeout` /
//! `approval_denied`; continue → the driver gets the deny and the run goes
//! on; retry → ask again up to `max_retries`, then abort); auto modes answer
//! without asking. Every outcome is a [`DecisionRecord`] in
//! [`RunResult::decisions`](crate::RunResult::decisions).
//!
//! ```
//! use agent_adaptor_core::policy::{ApprovalMode, FallbackAction, Policy, SandboxLevel};
//!
//! let agent_default = Policy::WORKSPACE_WRITE;
//! let call = Policy::default()
//!     .permission(ApprovalMode::Ask)
//!     .on_reject(FallbackAction::Abort);
//! let merged = call.over(&agent_default);
//! assert_eq!(merged.sandbox, SandboxLevel::WorkspaceWrite);
//! assert_eq!(merged.approvals.permission, ApprovalMode::Ask);
//! ```

mod approvals;
mod clock;
pub(crate) mod record;

use std::time::Duration;

use agent_adaptor_driver::{DecisionKind, Descriptor, RunPolicy};
use serde::{Deserialize, Serialize};

use crate::result::Error;

pub(crate) use approvals::{Effective, decide};
pub(crate) use clock::{ActiveClock, budgeted};

pub use agent_adaptor_driver::{
    ApprovalMode, ApprovalTimeout, DEFAULT_HUMAN_DECISION_MAX_RETRIES,
    DEFAULT_HUMAN_DECISION_TIMEOUT, FallbackAction, FeatureLevel, QuestionMode, SandboxLevel,
};
pub use record::{DecidedBy, DecisionRecord};

/// The approval part of a [`Policy`] (the SPI's `HumanDecisionPolicy`).
pub type ApprovalPolicy = agent_adaptor_driver::HumanDecisionPolicy;

/// The lifecycle-notice warning core emits once when a run asks for
/// [`FallbackAction::Retry`] that the driver does not declare; the retry
/// degrades to abort.
pub const RETRY_UNSUPPORTED_WARNING: &str = "human_decision_retry_unsupported";

/// How a run may act and how its human decisions are made.
///
/// Every field's default is "inherit": the driver's own behaviour. See the
/// [module docs](self).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Policy {
    /// The sandbox level.
    #[serde(default, skip_serializing_if = "SandboxLevel::is_inherit")]
    pub sandbox: SandboxLevel,
    /// Web search.
    #[serde(default, skip_serializing_if = "FeatureLevel::is_inherit")]
    pub web_search: FeatureLevel,
    /// Browser use.
    #[serde(default, skip_serializing_if = "FeatureLevel::is_inherit")]
    pub browser: FeatureLevel,
    /// Human decisions: modes per kind, timeout, fallbacks, retries.
    #[serde(default, skip_serializing_if = "ApprovalPolicy::is_inherit")]
    pub approvals: ApprovalPolicy,
    /// A budget for the run's *active* execution: its clock starts when the
    /// run is admitted and pauses while a human is being asked (overlapping
    /// asks pause it once). When it runs out the run is stopped and fails
    /// with `active_execution_timeout`. `None`: no budget. Must be more than
    /// zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_execution_timeout: Option<Duration>,
}

const INHERIT_APPROVALS: ApprovalPolicy = ApprovalPolicy {
    permission: ApprovalMode::Inherit,
    plan_review: ApprovalMode::Inherit,
    question: QuestionMode::Inherit,
    timeout: None,
    on_timeout: FallbackAction::Inherit,
    on_reject: FallbackAction::Inherit,
    max_retries: None,
};

const fn sandboxed(sandbox: SandboxLevel) -> Policy {
    Policy {
        sandbox,
        web_search: FeatureLevel::Inherit,
        browser: FeatureLevel::Inherit,
        approvals: INHERIT_APPROVALS,
        active_execution_timeout: None,
    }
}

impl Policy {
    /// Nothing set.
    pub const INHERIT: Policy = sandboxed(SandboxLevel::Inherit);
    /// Preset: read-only sandbox.
    pub const READ_ONLY: Policy = sandboxed(SandboxLevel::ReadOnly);
    /// Preset: writes inside the workspace only.
    pub const WORKSPACE_WRITE: Policy = sandboxed(SandboxLevel::WorkspaceWrite);
    /// Preset: no sandbox.
    pub const UNRESTRICTED: Policy = sandboxed(SandboxLevel::Unrestricted);
    /// Preset: deny every permission and plan review and decline every
    /// question without asking. Strict: the driver must declare auto-deny
    /// for all three kinds.
    pub const APPROVALS_AUTO_DENY: Policy = Policy {
        approvals: ApprovalPolicy {
            permission: ApprovalMode::AutoDeny,
            plan_review: ApprovalMode::AutoDeny,
            question: QuestionMode::AutoDeny,
            ..INHERIT_APPROVALS
        },
        ..Policy::INHERIT
    };

    /// Set the sandbox level.
    pub fn sandbox(mut self, level: SandboxLevel) -> Self {
        self.sandbox = level;
        self
    }

    /// Allow or deny web search.
    pub fn web_search(mut self, level: FeatureLevel) -> Self {
        self.web_search = level;
        self
    }

    /// Allow or deny browser use.
    pub fn browser(mut self, level: FeatureLevel) -> Self {
        self.browser = level;
        self
    }

    /// How permission requests are decided.
    pub fn permission(mut self, mode: ApprovalMode) -> Self {
        self.approvals.permission = mode;
        self
    }

    /// How plan reviews are decided.
    pub fn plan_review(mut self, mode: ApprovalMode) -> Self {
        self.approvals.plan_review = mode;
        self
    }

    /// How questions are handled.
    pub fn question(mut self, mode: QuestionMode) -> Self {
        self.approvals.question = mode;
        self
    }

    /// How long a human has to answer one attempt (default 30 s).
    pub fn approval_timeout(mut self, timeout: ApprovalTimeout) -> Self {
        self.approvals.timeout = Some(timeout);
        self
    }

    /// What an unanswered decision leads to (default: continue with deny).
    pub fn on_timeout(mut self, action: FallbackAction) -> Self {
        self.approvals.on_timeout = action;
        self
    }

    /// What a human rejection leads to (default: continue with the deny).
    pub fn on_reject(mut self, action: FallbackAction) -> Self {
        self.approvals.on_reject = action;
        self
    }

    /// How many times a retry asks again (default 3).
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.approvals.max_retries = Some(retries);
        self
    }

    /// The active-execution budget (see the field).
    pub fn active_execution_timeout(mut self, budget: Duration) -> Self {
        self.active_execution_timeout = Some(budget);
        self
    }

    /// `self` over `defaults`, field by field: every field set here wins,
    /// an inherit (`None`) field takes the default's.
    pub fn over(&self, defaults: &Policy) -> Policy {
        fn pick<T: Copy + PartialEq + Default>(mine: T, theirs: T) -> T {
            if mine == T::default() { theirs } else { mine }
        }
        let (a, d) = (&self.approvals, &defaults.approvals);
        Policy {
            sandbox: pick(self.sandbox, defaults.sandbox),
            web_search: pick(self.web_search, defaults.web_search),
            browser: pick(self.browser, defaults.browser),
            approvals: ApprovalPolicy {
                permission: pick(a.permission, d.permission),
                plan_review: pick(a.plan_review, d.plan_review),
                question: pick(a.question, d.question),
                timeout: a.timeout.or(d.timeout),
                on_timeout: pick(a.on_timeout, d.on_timeout),
                on_reject: pick(a.on_reject, d.on_reject),
                max_retries: a.max_retries.or(d.max_retries),
            },
            active_execution_timeout: self
                .active_execution_timeout
                .or(defaults.active_execution_timeout),
        }
    }

    /// The part a driver sees.
    pub fn run_policy(&self) -> RunPolicy {
        RunPolicy {
            sandbox: self.sandbox,
            web_search: self.web_search,
            browser: self.browser,
            human_decision: self.approvals,
        }
    }

    /// Check this (merged) policy against a driver's descriptor; see the
    /// [module docs](self) for the order of the checks and the errors.
    pub fn validate(&self, descriptor: &Descriptor) -> Result<(), Error> {
        let driver = &descriptor.driver_type;
        let invalid = |field: &'static str, value: String| Error::InvalidPolicy {
            driver: driver.clone(),
            field,
            value,
        };
        if let Some(ApprovalTimeout::After(d)) = self.approvals.timeout
            && !representable(d)
        {
            return Err(invalid("approvals.timeout", format!("{d:?}")));
        }
        if let Some(d) = self.active_execution_timeout
            && !representable(d)
        {
            return Err(invalid("active_execution_timeout", format!("{d:?}")));
        }

        let caps = &descriptor.run_policy;
        let unsupported =
            |dimension: &'static str, value: &'static str| Error::PolicyCapabilityUnsupported {
                driver: driver.clone(),
                dimension,
                value,
            };
        if !caps.sandbox_support().supports(self.sandbox) {
            return Err(unsupported("sandbox", self.sandbox.as_str()));
        }
        if !caps.web_search_support().supports(self.web_search) {
            return Err(unsupported("web_search", self.web_search.as_str()));
        }
        if !caps.browser_support().supports(self.browser) {
            return Err(unsupported("browser", self.browser.as_str()));
        }

        for kind in KINDS {
            let mode = self.approvals.mode(kind);
            if !caps.supports_mode(kind, mode) {
                return Err(Error::HumanDecisionModeUnsupported {
                    driver: driver.clone(),
                    kind,
                    mode: mode.as_str(),
                });
            }
        }
        Ok(())
    }
}

/// Every decision kind, in a fixed order.
pub(crate) const KINDS: [DecisionKind; 3] = [
    DecisionKind::Permission,
    DecisionKind::PlanReview,
    DecisionKind::Question,
];

/// A timeout or budget is in the domain when it is more than zero and a
/// deadline that far away can be represented (chrono for the request's
/// `deadline`, tokio for the timer).
fn representable(d: Duration) -> bool {
    !d.is_zero()
        && chrono::Duration::from_std(d)
            .ok()
            .and_then(|c| chrono::Utc::now().checked_add_signed(c))
            .is_some()
        && tokio::time::Instant::now().checked_add(d).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_site_wins_field_by_field() {
        let defaults = Policy::READ_ONLY
            .web_search(FeatureLevel::Deny)
            .permission(ApprovalMode::AutoDeny)
            .approval_timeout(ApprovalTimeout::After(Duration::from_secs(5)))
            .max_retries(1)
            .active_execution_timeout(Duration::from_secs(60));
        let call = Policy::default()
            .sandbox(SandboxLevel::WorkspaceWrite)
            .permission(ApprovalMode::Ask)
            .on_timeout(FallbackAction::Retry);
        let m = call.over(&defaults);
        assert_eq!(m.sandbox, SandboxLevel::WorkspaceWrite);
        assert_eq!(m.web_search, FeatureLevel::Deny);
        assert_eq!(m.browser, FeatureLevel::Inherit);
        assert_eq!(m.approvals.permission, ApprovalMode::Ask);
        assert_eq!(
            m.approvals.timeout,
            Some(ApprovalTimeout::After(Duration::from_secs(5)))
        );
        assert_eq!(m.approvals.on_timeout, FallbackAction::Retry);
        assert_eq!(m.approvals.max_retries, Some(1));
        assert_eq!(m.active_execution_timeout, Some(Duration::from_secs(60)));
        assert_eq!(Policy::default().over(&Policy::default()), Policy::INHERIT);
    }

    #[test]
    fn presets() {
        assert_eq!(Policy::UNRESTRICTED.sandbox, SandboxLevel::Unrestricted);
        let a = Policy::APPROVALS_AUTO_DENY.approvals;
        assert_eq!(
            (a.permission, a.plan_review, a.question),
            (
                ApprovalMode::AutoDeny,
                ApprovalMode::AutoDeny,
                QuestionMode::AutoDeny
            )
        );
        assert!(Policy::INHERIT.run_policy().is_inherit());
    }

    #[test]
    fn out_of_domain_durations() {
        assert!(!representable(Duration::ZERO));
        assert!(!representable(Duration::MAX));
        assert!(representable(Duration::from_millis(1)));
    }
}
