//! Options: per-call [`RunOptions`], and the same shared options as agent
//! defaults on [`AgentBuilder`](crate::AgentBuilder). The call site wins;
//! metadata merges by key. Agent defaults are never mutated by a call.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::approval::{ApprovalHandler, ApprovalRequest, BoxError};

/// Default time a human has to answer an approval.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(30);

/// Options for one call of `run` / `stream`. Every one of them can also be
/// set as an agent default on [`AgentBuilder`](crate::AgentBuilder).
#[derive(Clone, Default)]
pub struct RunOptions {
    pub(crate) model: Option<String>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) instructions: Option<String>,
    pub(crate) workspace: Option<PathBuf>,
    pub(crate) metadata: BTreeMap<String, String>,
    pub(crate) on_approval: Option<ApprovalHandler>,
    pub(crate) approval_timeout: Option<Option<Duration>>,
    pub(crate) spawn: bool,
    /// Structured output (per call only; see `structured.rs`).
    pub(crate) schema: crate::structured::SchemaSpec,
    /// Run policy (merged field by field; see `policy.rs`).
    pub(crate) policy: crate::policy::Policy,
    /// Transcript memory budget in bytes (`None`: the driver crate's default).
    pub(crate) transcript_budget: Option<usize>,
    /// Instructions bundle, MCP servers, skills and profile (see `equip.rs`).
    pub(crate) equip: crate::equip::EquipOptions,
}

impl fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunOptions")
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .field("instructions", &self.instructions.as_ref().map(|_| ".."))
            .field("workspace", &self.workspace)
            .field("metadata_keys", &self.metadata.keys().collect::<Vec<_>>())
            .field("on_approval", &self.on_approval.is_some())
            .field("approval_timeout", &self.approval_timeout)
            .field("spawn", &self.spawn)
            .field("schema", &self.schema)
            .field("policy", &self.policy)
            .field("transcript_budget", &self.transcript_budget)
            .field("equip", &self.equip)
            .finish()
    }
}

impl RunOptions {
    /// No options: every value comes from the agent's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// `self` over `defaults`: set values win, metadata merges by key.
    pub(crate) fn over(&self, defaults: &RunOptions) -> RunOptions {
        let mut metadata = defaults.metadata.clone();
        metadata.extend(self.metadata.iter().map(|(k, v)| (k.clone(), v.clone())));
        RunOptions {
            model: self.model.clone().or_else(|| defaults.model.clone()),
            timeout: self.timeout.or(defaults.timeout),
            instructions: self
                .instructions
                .clone()
                .or_else(|| defaults.instructions.clone()),
            workspace: self
                .workspace
                .clone()
                .or_else(|| defaults.workspace.clone()),
            metadata,
            on_approval: self
                .on_approval
                .clone()
                .or_else(|| defaults.on_approval.clone()),
            approval_timeout: self.approval_timeout.or(defaults.approval_timeout),
            spawn: self.spawn || defaults.spawn,
            schema: self.schema.clone(),
            policy: self.scoped_policy().over(&defaults.scoped_policy()),
            transcript_budget: self.transcript_budget.or(defaults.transcript_budget),
            equip: self.equip.over(&defaults.equip),
        }
    }

    /// This scope's policy, with the legacy
    /// [`approval_timeout`](Self::approval_timeout) as its approval timeout
    /// when the policy sets none.
    fn scoped_policy(&self) -> crate::policy::Policy {
        let mut policy = self.policy;
        if policy.approvals.timeout.is_none() {
            policy.approvals.timeout = self.approval_timeout.map(|t| match t {
                Some(d) => crate::policy::ApprovalTimeout::After(d),
                None => crate::policy::ApprovalTimeout::Never,
            });
        }
        policy
    }

    /// Run this call in a fresh provider process: a driver that keeps
    /// resident processes between turns (its descriptor declares
    /// `process.persistent`) neither reuses one for this run nor keeps the
    /// process it spawns (`Request::spawn`). The thread's resident process
    /// does not serve the thread again as it is (this run changed the
    /// session): Claude Code and CodeBuddy leave it running and replace it
    /// at the next turn; Codex, which allows one process per thread, stops
    /// it before this run. Drivers that always spawn ignore it.
    pub fn with_spawn(mut self) -> Self {
        self.spawn = true;
        self
    }
}

/// Generates the shared option setters on a type with a `RunOptions` at `$field`.
macro_rules! shared_option_setters {
    ($ty:ty, |$s:ident| $access:expr) => {
        impl $ty {
            fn shared_options_mut(&mut self) -> &mut $crate::RunOptions {
                let $s = self;
                $access
            }

            /// Use this model instead of the driver's configured one.
            pub fn model(mut self, model: impl Into<String>) -> Self {
                self.shared_options_mut().model = Some(model.into());
                self
            }

            /// Total wall-time budget for the run; when it passes the run is
            /// cancelled and fails with `deadline_exceeded`.
            pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
                self.shared_options_mut().timeout = Some(timeout);
                self
            }

            /// Instructions for the model (for an LLM driver, the system
            /// message). A driver whose descriptor does not declare
            /// `instructions` refuses the run before it starts
            /// ([`Error::CapabilityUnsupported`](crate::Error::CapabilityUnsupported)).
            pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
                self.shared_options_mut().instructions = Some(instructions.into());
                self
            }

            /// The provider's working directory.
            pub fn workspace(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
                self.shared_options_mut().workspace = Some(dir.into());
                self
            }

            /// One metadata entry (merged by key; the call site wins).
            pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
                self.shared_options_mut()
                    .metadata
                    .insert(key.into(), value.into());
                self
            }

            /// Resolve approvals with a callback instead of the event stream.
            ///
            /// The callback must resolve the request exactly once and return
            /// `Ok`; an error aborts the run.
            pub fn on_approval<F, Fut>(mut self, handler: F) -> Self
            where
                F: Fn($crate::ApprovalRequest) -> Fut + Send + Sync + 'static,
                Fut: std::future::Future<Output = Result<(), $crate::approval::BoxError>>
                    + Send
                    + 'static,
            {
                self.shared_options_mut().on_approval =
                    Some($crate::options::boxed_handler(handler));
                self
            }

            /// Install a prepared handler (e.g. [`approve_all`](crate::approve_all)).
            pub fn approval_handler(mut self, handler: $crate::ApprovalHandler) -> Self {
                self.shared_options_mut().on_approval = Some(handler);
                self
            }

            /// How long a human has to answer (default 30 s); `None` waits forever.
            /// A timeout set in the [`policy`](Self::policy) at the same
            /// scope takes precedence.
            pub fn approval_timeout(mut self, timeout: Option<std::time::Duration>) -> Self {
                self.shared_options_mut().approval_timeout = Some(timeout);
                self
            }

            /// The run policy: sandbox, web search, browser, approvals and
            /// the active-execution budget. Merged field by field: what the
            /// call sets wins over the agent's default, inherit fields take
            /// the default's (see [`Policy`](crate::policy::Policy)). Setting
            /// it again replaces the earlier value at this scope.
            pub fn policy(mut self, policy: $crate::policy::Policy) -> Self {
                self.shared_options_mut().policy = policy;
                self
            }

            /// Instructions the agent always carries, before the run's own
            /// [`instructions`](Self::instructions): a text or a file (read
            /// at every launch). Its content is part of a thread's
            /// compatibility fingerprint.
            pub fn instructions_bundle(mut self, bundle: $crate::InstructionsBundle) -> Self {
                self.shared_options_mut().equip.bundle = Some(bundle);
                self
            }

            /// Give the agent an MCP server (merged by name with the
            /// agent's; the call's wins). The driver writes it in its CLI's
            /// own format in a per-run location; a transport or option the
            /// driver cannot carry refuses the run before it starts
            /// ([`Error::CapabilityUnsupported`](crate::Error::CapabilityUnsupported)),
            /// an invalid server with
            /// [`Error::InvalidMcpServer`](crate::Error::InvalidMcpServer).
            pub fn mcp_server(mut self, server: agent_adaptor_driver::McpServer) -> Self {
                self.shared_options_mut().equip.mcp_servers.push(server);
                self
            }

            /// Load only the run's MCP servers: none of the user's or
            /// project's own (Claude Code `--strict-mcp-config`).
            pub fn mcp_strict(mut self, strict: bool) -> Self {
                self.shared_options_mut().equip.mcp_strict = Some(strict);
                self
            }

            /// Give the agent a skill (merged by name with the agent's; the
            /// call's wins). The handle is kept alive until the run ends.
            pub fn skill(
                mut self,
                skill: impl agent_adaptor_driver::SkillHandle + 'static,
            ) -> Self {
                self.shared_options_mut()
                    .equip
                    .skills
                    .push(std::sync::Arc::new(skill));
                self
            }

            /// Give the agent a host tool (merged by name with the agent's
            /// and the thread's; the narrower scope wins). A driver that
            /// cannot deliver host tools refuses the run before it starts
            /// ([`Error::CapabilityUnsupported`](crate::Error::CapabilityUnsupported));
            /// an unusable definition with
            /// [`Error::InvalidTool`](crate::Error::InvalidTool).
            pub fn tool(mut self, tool: $crate::Tool) -> Self {
                let tools = &mut self.shared_options_mut().equip.tools;
                tools.retain(|t| t.name() != tool.name());
                tools.push(tool);
                self
            }

            /// The CLI's configuration home (default
            /// [`Profile::Native`](agent_adaptor_driver::Profile::Native)).
            /// Part of a thread's compatibility fingerprint.
            pub fn profile(mut self, profile: agent_adaptor_driver::Profile) -> Self {
                self.shared_options_mut().equip.profile = Some(profile);
                self
            }

            /// How many bytes of transcript items the driver keeps in
            /// memory (by estimate) before the run's
            /// [`Transcript`](agent_adaptor_driver::Transcript) spills the
            /// oldest ones to an unlinked temporary file; the result still
            /// holds the complete transcript. Default
            /// [`DEFAULT_TRANSCRIPT_BUDGET`](agent_adaptor_driver::DEFAULT_TRANSCRIPT_BUDGET)
            /// (2 MiB).
            pub fn transcript_budget(mut self, bytes: usize) -> Self {
                self.shared_options_mut().transcript_budget = Some(bytes);
                self
            }
        }
    };
}

pub(crate) use shared_option_setters;

shared_option_setters!(RunOptions, |o| o);

/// Box a closure into an [`ApprovalHandler`].
pub(crate) fn boxed_handler<F, Fut>(handler: F) -> ApprovalHandler
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), BoxError>> + Send + 'static,
{
    Arc::new(move |req| -> BoxFuture<'static, Result<(), BoxError>> { Box::pin(handler(req)) })
}
