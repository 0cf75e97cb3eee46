//! One invocation, already resolved by core (spec §3).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::host_tool::HostTools;
use crate::mcp::McpServer;
use crate::policy::RunPolicy;
use crate::profile::Profile;
use crate::response::StructuredOutputSource;
use crate::session::SessionContext;
use crate::skill::SkillRef;
use crate::transcript::Transcript;

/// A single invocation that core has resolved: options merged, workspace,
/// session and schema decided. A driver never re-reads host options.
///
/// `streaming` selects the provider-native rich-event transport. Core sets it
/// from the driver's [`StreamCapability`](crate::StreamCapability), the
/// structured-output and approval compatibility — *not* from whether the host
/// called `run` or `stream`. With `streaming = true` the payload lifecycle of
/// spec §5 must hold; either way every layer of the
/// [`Response`](crate::Response) must be complete.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Request {
    /// The SDK run id (`run_` + 16 hex digits).
    pub run_id: String,
    /// The prompt.
    pub prompt: String,
    /// Use the provider's rich streaming transport.
    pub streaming: bool,
    /// Session to resume, when the run belongs to a thread.
    pub session: Option<SessionContext>,
    /// The requested output schema.
    pub output_schema: Option<OutputSchema>,
    /// Instructions appended to the agent's system prompt, when set. Core
    /// sets them only for a driver whose descriptor declares
    /// `instructions`. A driver carries them in a file or a protocol
    /// field, never on the command line (a long text must not hit the
    /// argv length limit).
    pub instructions: Option<String>,
    /// MCP servers for the agent, validated by core and each one carried
    /// by the driver's [`McpSupport`](crate::McpSupport).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServer>,
    /// Load only [`mcp_servers`](Self::mcp_servers): none of the user's or
    /// project's own MCP servers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mcp_strict: bool,
    /// Skills to materialize where the CLI finds them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<SkillRef>,
    /// The CLI's configuration home.
    #[serde(default, skip_serializing_if = "Profile::is_native")]
    pub profile: Profile,
    /// The host's tools for this run (see [`crate::host_tool`]); empty
    /// unless the driver's descriptor declares a
    /// [`HostToolChannel`](crate::HostToolChannel). Not serialized.
    #[serde(skip)]
    pub host_tools: HostTools,
    /// A model that overrides the configured one for this run.
    pub model_override: Option<String>,
    /// The working directory for the provider.
    pub workspace: Option<PathBuf>,
    /// The host asks the driver for an isolated workspace of its own (only
    /// set for a driver whose descriptor declares
    /// [`WorkspaceSupport::driver_managed`](crate::WorkspaceSupport)).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub driver_managed_workspace: bool,
    /// Host metadata for this run.
    pub metadata: BTreeMap<String, String>,
    /// Who the agent is (for scoping host components, never for routing).
    pub agent: AgentIdentity,
    /// Force a fresh provider process for this run: a driver that keeps
    /// resident processes (see [`ProcessCapabilities::persistent`]) must
    /// neither reuse one nor keep the process it spawns for this run. This
    /// run may change the session, so a resident process of the same
    /// session must not serve it again as it is: the driver leaves it
    /// running and replaces it at the next turn, or stops it first when the
    /// provider allows only one process per session. Ignored by drivers that
    /// always spawn per run.
    ///
    /// [`ProcessCapabilities::persistent`]: crate::ProcessCapabilities::persistent
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spawn: bool,
    /// The run policy (sandbox, web search, browser, human decisions),
    /// merged and validated by core: every explicit value is one the
    /// driver's descriptor declares. Inherit values mean "keep the
    /// driver's own behaviour" and add no flag. See [`RunPolicy`].
    #[serde(default, skip_serializing_if = "RunPolicy::is_inherit")]
    pub policy: RunPolicy,
    /// How core enforces [`output_schema`](Self::output_schema), set by core
    /// together with it: [`Native`](StructuredOutputSource::Native) means the
    /// driver passes the schema to the provider's own JSON-schema mode;
    /// [`PromptValidate`](StructuredOutputSource::PromptValidate) means core
    /// already appended the instruction to the prompt and validates the
    /// final text itself, so the driver must *not* pass the schema on.
    /// `None` with a schema (a request not built by core) means native.
    /// See [`native_output_schema`](Self::native_output_schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output_source: Option<StructuredOutputSource>,
    /// How many bytes of transcript items the driver keeps in memory before
    /// its [`Transcript`] spills to a temporary file; `None` means
    /// [`DEFAULT_TRANSCRIPT_BUDGET`](crate::DEFAULT_TRANSCRIPT_BUDGET). Set
    /// by core from the host's option; a driver builds its transcript with
    /// [`new_transcript`](Self::new_transcript).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_budget: Option<usize>,
}

impl Request {
    /// A request with a run id and prompt; every other field empty.
    pub fn new(run_id: impl Into<String>, prompt: impl Into<String>) -> Self {
        Request {
            run_id: run_id.into(),
            prompt: prompt.into(),
            ..Default::default()
        }
    }

    /// An empty [`Transcript`] with this request's memory budget: what a
    /// driver records its items in and returns in
    /// [`Response::transcript`](crate::Response::transcript).
    pub fn new_transcript(&self) -> Transcript {
        Transcript::with_budget(
            self.transcript_budget
                .unwrap_or(crate::DEFAULT_TRANSCRIPT_BUDGET),
        )
    }

    /// The schema a driver passes to the provider's native JSON-schema mode:
    /// the [`output_schema`](Self::output_schema), unless core chose prompt
    /// validation for it ([`structured_output_source`](Self::structured_output_source)).
    pub fn native_output_schema(&self) -> Option<&OutputSchema> {
        match self.structured_output_source {
            Some(StructuredOutputSource::PromptValidate) => None,
            _ => self.output_schema.as_ref(),
        }
    }
}

/// The host's identity for an agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentIdentity {
    /// Agent id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// Tenant id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant_id: String,
    /// Profile id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub profile_id: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// A JSON-schema output request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    /// Always `"json_schema"`.
    pub format: String,
    /// The schema (Draft 2020-12), as JSON text.
    pub schema_json: String,
    /// A schema name for providers that want one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// A description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// What to do when the output does not validate.
    pub on_invalid: OnInvalid,
}

/// What core does with an output that fails validation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnInvalid {
    /// Fail the run (the default).
    #[default]
    FailRun,
    /// Succeed; `decode` reports the validation errors.
    ReturnInvalid,
}
