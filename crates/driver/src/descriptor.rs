//! What a driver declares about itself: identity and capabilities (spec §2).

use serde::{Deserialize, Serialize};

use crate::host_tool::HostToolChannel;
use crate::observation::ObservationSupport;

/// A driver's static self-description. Must be deterministic across calls and
/// across instances built from the same config (DRV-02).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Descriptor {
    /// The driver type (e.g. `"claude"`); non-empty (DRV-01).
    pub driver_type: String,
    /// A human-readable name; non-empty (DRV-01).
    pub display_name: String,
    /// Models the driver knows of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelInfo>,
    /// Resume support.
    #[serde(default)]
    pub sessions: SessionCapabilities,
    /// Process lifecycle.
    #[serde(default)]
    pub process: ProcessCapabilities,
    /// Human-decision support per kind.
    #[serde(default)]
    pub run_policy: RunPolicyCapabilities,
    /// Structured output mechanisms.
    #[serde(default)]
    pub structured_output: StructuredOutputCapability,
    /// The driver carries [`Request::instructions`](crate::Request::instructions)
    /// to the model. When `false`, a run that sets instructions is refused
    /// before anything starts: instructions are never silently dropped.
    #[serde(default)]
    pub instructions: bool,
    /// Which MCP servers the driver can give its CLI.
    #[serde(default)]
    pub mcp: McpSupport,
    /// The driver materializes [`Request::skills`](crate::Request::skills)
    /// where its CLI finds skills.
    #[serde(default)]
    pub skills: bool,
    /// Which non-native [`Profile`](crate::Profile)s the driver supports.
    #[serde(default)]
    pub profiles: ProfileSupport,
    /// How the driver delivers host tools ([`HostToolChannel::None`]: it
    /// cannot, and core refuses a run with any).
    #[serde(default, skip_serializing_if = "HostToolChannel::is_none")]
    pub host_tools: HostToolChannel,
    /// Which workspaces the driver carries. Core refuses, before anything
    /// starts, a run whose host resolved a workspace the driver would not
    /// work in: a workspace is never silently dropped.
    #[serde(default)]
    pub workspace: WorkspaceSupport,
}

/// How a driver treats the run's working directory
/// ([`Request::workspace`](crate::Request::workspace)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceSupport {
    /// The agent works in `Request::workspace` (its process starts there,
    /// its file tools are rooted there). Needed for a workspace of the
    /// host's own (a git worktree, a temporary directory).
    #[serde(default)]
    pub directory: bool,
    /// The driver provides an isolated workspace of its own when
    /// [`Request::driver_managed_workspace`](crate::Request::driver_managed_workspace)
    /// asks for one.
    #[serde(default)]
    pub driver_managed: bool,
}

impl Descriptor {
    /// A descriptor with a type and display name; every capability off.
    pub fn new(driver_type: impl Into<String>, display_name: impl Into<String>) -> Self {
        Descriptor {
            driver_type: driver_type.into(),
            display_name: display_name.into(),
            ..Default::default()
        }
    }
}

/// Which MCP servers and options a driver carries to its CLI
/// ([`McpServer`](crate::McpServer)). Core refuses a server with a
/// transport or option that is not declared, before launch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpSupport {
    /// Stdio servers.
    pub stdio: bool,
    /// Streamable HTTP servers.
    pub http: bool,
    /// Legacy HTTP+SSE servers.
    pub sse: bool,
    /// Extra headers on HTTP and SSE servers.
    pub headers: bool,
    /// A bearer token taken from a named host environment variable.
    pub bearer_token_env: bool,
    /// Per-tool allow and deny lists.
    pub tool_filter: bool,
    /// Per-tool auto-approval.
    pub auto_approve: bool,
    /// `Request::mcp_strict`: only the run's servers are loaded.
    pub strict: bool,
    /// `McpServer::required`: the run fails when the server cannot start.
    pub required: bool,
}

impl McpSupport {
    /// True when any transport is supported.
    pub fn any(&self) -> bool {
        self.stdio || self.http || self.sse
    }
}

/// Which non-native profiles a driver supports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileSupport {
    /// [`Profile::Dedicated`](crate::Profile::Dedicated).
    pub dedicated: bool,
    /// [`Profile::Clone`](crate::Profile::Clone).
    pub clone: bool,
}

/// A model a driver can run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model id passed to the provider (non-empty).
    pub id: String,
    /// A display label.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
}

/// Resume support (spec §9): `supports_resume` iff the driver returns a stable
/// [`SessionCodec`](crate::SessionCodec) *and* a stable, non-empty config
/// fingerprint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionCapabilities {
    /// The driver can resume a provider session from a checkpoint.
    pub supports_resume: bool,
}

/// Process lifecycle declarations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessCapabilities {
    /// The driver keeps provider processes alive across runs (resident
    /// processes, reused by later turns of the same provider session). Such a
    /// driver honours [`Request::spawn`](crate::Request::spawn) and reaps
    /// every process it keeps in
    /// [`Driver::close_processes`](crate::Driver::close_processes).
    pub persistent: bool,
}

/// Which answers a driver can honor for one binary decision kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HumanDecisionSupport {
    /// It can block and ask the host.
    pub ask: bool,
    /// It can be told to approve without asking.
    pub auto_approve: bool,
    /// It can be told to reject without asking.
    pub auto_reject: bool,
    /// It can retry after a rejection.
    pub retry: bool,
}

/// Which answers a driver can honor for questions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionSupport {
    /// It can block and ask the host.
    pub ask: bool,
    /// It can be told to decline questions.
    pub auto_reject: bool,
    /// It can retry.
    pub retry: bool,
}

/// Run-policy capabilities: isolation and human decisions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunPolicyCapabilities {
    /// Sandbox / isolation levels can be chosen.
    pub isolation: bool,
    /// Web search can be allowed or denied.
    pub web_search: bool,
    /// Browser use can be allowed or denied.
    pub browser: bool,
    /// Permission decisions.
    pub permission: HumanDecisionSupport,
    /// Plan-review decisions.
    pub plan_review: HumanDecisionSupport,
    /// Questions.
    pub question: QuestionSupport,
    /// The sandbox levels that can be chosen, one by one. A driver that
    /// sets only `isolation` is taken to honour every level (see
    /// [`RunPolicyCapabilities::sandbox_support`]).
    #[serde(default)]
    pub sandbox_levels: SandboxSupport,
    /// The web-search levels that can be chosen (see
    /// [`RunPolicyCapabilities::web_search_support`]).
    #[serde(default)]
    pub web_search_levels: FeatureSupport,
    /// The browser levels that can be chosen (see
    /// [`RunPolicyCapabilities::browser_support`]).
    #[serde(default)]
    pub browser_levels: FeatureSupport,
}

/// Which explicit sandbox levels a driver honours
/// ([`SandboxLevel`](crate::SandboxLevel)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSupport {
    /// `read_only`.
    pub read_only: bool,
    /// `workspace_write`.
    pub workspace_write: bool,
    /// `unrestricted`.
    pub unrestricted: bool,
}

/// Which explicit levels of an optional feature (web search, browser) a
/// driver honours ([`FeatureLevel`](crate::FeatureLevel)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureSupport {
    /// `allow`.
    pub allow: bool,
    /// `deny`.
    pub deny: bool,
}

/// Structured-output mechanisms and where they work (SO-01).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StructuredOutputCapability {
    /// The provider has a native JSON-schema mode.
    pub json_schema_native: bool,
    /// Prompt instruction plus local validation works.
    pub json_schema_prompt_validate: bool,
    /// Works with a non-streaming transport.
    pub works_with_run: bool,
    /// Works with the rich streaming transport.
    pub works_with_streaming: bool,
    /// Works while human decisions are asked.
    pub works_with_hitl: bool,
    /// Free-form notes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
}

/// How fine-grained a driver's live payloads are (spec §2).
///
/// Conservative, deterministic and stable across instances (CAP-10). It never
/// decides whether a host may call `stream`: every runner streams. A `false`
/// field is a hard negative for its event family: with `reasoning = false` a
/// driver must not emit reasoning payloads, with `tool_call_args = false` no
/// `tool_call.args`, with `hitl = false` no HITL broadcasts (EVT-12).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StreamCapability {
    /// The transport is a formal event protocol, not events guessed from text.
    pub native: bool,
    /// One message can produce many text deltas.
    pub token_level: bool,
    /// The protocol exposes a reasoning lifecycle.
    pub reasoning: bool,
    /// The protocol exposes incremental tool arguments.
    pub tool_call_args: bool,
    /// The protocol exposes human decision events.
    pub hitl: bool,
    /// The observation kinds the transport reports (OBS-01).
    #[serde(default)]
    pub observation: ObservationSupport,
}

impl StreamCapability {
    /// Every capability declared.
    pub const FULL: StreamCapability = StreamCapability {
        native: true,
        token_level: true,
        reasoning: true,
        tool_call_args: true,
        hitl: true,
        observation: ObservationSupport::ALL,
    };
}
