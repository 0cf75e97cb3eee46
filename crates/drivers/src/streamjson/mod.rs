//! The stream-json protocol family: Claude Code and CodeBuddy Code.
//!
//! Both CLIs print one JSON object per stdout line (`system`, `assistant`,
//! `user`, `stream_event`, `result`, control frames). They differ in details
//! that are data here, never copies of the parser: see [`Family`].
//!
//! A run gets a process of its own (one-shot `-p`, or the control transport
//! with [`Config::host_approvals`], host tools, or CodeBuddy's
//! instructions), except a thread run, which is served by
//! a *resident* process kept between the thread's turns
//! ([`Config::resident`]; the pool is [`crate::resident`]).
//!
//! The files have the roles every driver folder gives them:
//!
//! - `mod.rs`: the family's data ([`Family`], [`CLAUDE`], [`CODEBUDDY`])
//!   and the [`StreamJsonDriver`];
//! - `config.rs`: the [`Config`] and its validation;
//! - `argv.rs`: the command line;
//! - `wire.rs`: the line types as the CLIs print them;
//! - `parse.rs`: the sans-IO [`Parser`] (lines → payloads, items, control
//!   frames, the response layers);
//! - `control.rs`: the frames the host writes and the permission mapping;
//! - `host.rs`: the run's host tools, an in-process SDK MCP server;
//! - `policy.rs`: the run policy's translation into flags;
//! - `transport.rs`: a run in a process of its own, a [`pump::Duplex`]
//!   session driven by the shared pump;
//! - `resident.rs`: a thread's turns on one resident process.
//!
//! `claude/` and `codebuddy/` are recipes over this family (its data and
//! their defaults), not drivers of their own.
//!
//! [`pump::Duplex`]: crate::pump::Duplex

use std::sync::Arc;

use agent_adaptor_driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, FingerprintError, HostToolChannel,
    McpSupport, ProfileSupport, Request, Response, RunContext, SessionCodec, StandardSessionCodec,
    StreamCapability, StructuredOutputCapability, async_trait,
    canonical_session_config_fingerprint,
};

use agent_adaptor_driver_kit::scratch::RunScratch;

use crate::resident::Pool;

pub mod argv;
pub mod config;
pub mod control;
mod equip;
mod host;
mod observe;
pub mod parse;
pub mod policy;
pub(crate) mod probe;
mod resident;
mod transport;
pub mod wire;

pub use argv::argv_with;
pub use config::{Config, Transport};
pub use parse::{ControlFrame, ExitFacts, Out, Parsed, Parser};

/// How a CLI of the family expects a permission reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionReply {
    /// Claude: `{"behavior":"allow","updatedInput":…}` / `{"behavior":"deny","message":…}`.
    Behavior,
    /// CodeBuddy: `{"allowed":true,"updatedInput":…}` / `{"allowed":false,"reason":…}`.
    /// A Claude-shaped reply is treated as a denial by CodeBuddy.
    Allowed,
}

/// How a CLI of the family takes text appended to its system prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstructionsCarrier {
    /// A flag naming a file (Claude: `--append-system-prompt-file`), and
    /// the flags that make the CLI render the system prompt afresh on
    /// every request.
    AppendFile {
        /// The flag.
        flag: &'static str,
        /// Passed with it. Claude records a conversation's first system
        /// prompt and replays it on resume, even when a later launch
        /// passes other text (observed with 2.1.332): a resumed turn would
        /// keep the instructions of the turn that started the session.
        fresh: &'static [&'static str],
    },
    /// `appendSystemPrompt` in the SDK's `initialize` request (CodeBuddy,
    /// whose `--append-system-prompt` has no file form): the run reads
    /// stream-json frames on stdin.
    Initialize,
}

/// Where a CLI of the family reads a run's skills when the run uses the
/// user's own home (a dedicated or cloned home has its `skills/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunSkills {
    /// A per-run directory passed as `--add-dir`, whose
    /// `<project dir>/skills/` the CLI reads like a project's (Claude:
    /// `.claude`).
    AddDir(&'static str),
    /// A per-run skills directory named by this variable (CodeBuddy:
    /// `CODEBUDDY_SESSION_SKILL_DIRS`, read as project skills; it ignores
    /// skills under `--add-dir`).
    EnvVar(&'static str),
}

/// What distinguishes one CLI of the family from another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Family {
    /// The driver type, also the prefix of custom payload kinds.
    pub driver_type: &'static str,
    /// The human-readable name.
    pub display_name: &'static str,
    /// The default program name.
    pub program: &'static str,
    /// The permission reply shape.
    pub permission: PermissionReply,
    /// The flag that turns on `can_use_tool` requests, if one is needed.
    pub permission_prompt_flag: Option<&'static str>,
    /// Whether `-p` is also passed with `--input-format stream-json`.
    pub print_flag_with_control: bool,
    /// Environment the SDKs set for the CLI (quiet, no self-update).
    pub env_defaults: &'static [(&'static str, &'static str)],
    /// The host variables the CLI documents, passed through by the default
    /// [`EnvPolicy`](crate::child_env::EnvPolicy) (names or `PREFIX_*`).
    pub env_allowlist: &'static [&'static str],
    /// Whether the CLI has `--chrome` / `--no-chrome` (browser use).
    pub browser_flags: bool,
    /// Whether `--json-schema` is the family's native structured output:
    /// the CLI gives the model the schema (its `StructuredOutput` tool's
    /// input schema) and reports `result.structured_output`. Otherwise core
    /// puts the schema into the prompt and validates the final text.
    pub native_json_schema: bool,
    /// The CLI writes a server's `-` as `_` in its tool names
    /// (`mcp__<server>__<tool>`).
    pub mcp_underscores: bool,
    /// Whether `--allowedTools=mcp__<server>__<tool>` spares the host an
    /// approval on every transport. CodeBuddy 2.117 still sends
    /// `can_use_tool` for an allowed MCP tool on the control transport
    /// (observed), so it does not carry auto-approval.
    pub mcp_auto_approve: bool,
    /// How instructions reach the system prompt.
    pub instructions: InstructionsCarrier,
    /// The variable that names the CLI's configuration home.
    pub home_var: &'static str,
    /// The home's default, relative to `$HOME`.
    pub home_default: &'static str,
    /// Where a run's skills go under the native profile.
    pub run_skills: RunSkills,
    /// What a cloned profile copies from the user's home (settings).
    pub clone_copy: &'static [&'static str],
    /// What a cloned profile links from the user's home (credentials).
    pub clone_link: &'static [&'static str],
}

/// Claude Code.
pub static CLAUDE: Family = Family {
    driver_type: "claude",
    display_name: "Claude Code",
    program: "claude",
    permission: PermissionReply::Behavior,
    permission_prompt_flag: Some("--permission-prompt-tool"),
    print_flag_with_control: true,
    env_defaults: &[
        ("CLAUDE_CODE_ENTRYPOINT", "sdk-rs"),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
    ],
    // Claude Code's settings: its API and auth (`ANTHROPIC_*`), its own
    // switches (`CLAUDE_*`, `DISABLE_*`), and the limits it reads.
    env_allowlist: &[
        "ANTHROPIC_*",
        "CLAUDE_*",
        "DISABLE_*",
        "MAX_THINKING_TOKENS",
        "MAX_MCP_OUTPUT_TOKENS",
        "MCP_TIMEOUT",
        "MCP_TOOL_TIMEOUT",
        "BASH_DEFAULT_TIMEOUT_MS",
        "BASH_MAX_TIMEOUT_MS",
        "BASH_MAX_OUTPUT_LENGTH",
    ],
    browser_flags: true,
    native_json_schema: true,
    mcp_underscores: false,
    mcp_auto_approve: true,
    instructions: InstructionsCarrier::AppendFile {
        flag: "--append-system-prompt-file",
        fresh: &["--system-prompt-snapshot", "off"],
    },
    home_var: "CLAUDE_CONFIG_DIR",
    home_default: ".claude",
    run_skills: RunSkills::AddDir(".claude"),
    clone_copy: &["settings.json"],
    clone_link: &[".credentials.json"],
};

/// CodeBuddy Code.
pub static CODEBUDDY: Family = Family {
    driver_type: "codebuddy",
    display_name: "CodeBuddy Code",
    program: "codebuddy",
    permission: PermissionReply::Allowed,
    permission_prompt_flag: None,
    print_flag_with_control: false,
    env_defaults: &[
        ("CODEBUDDY_CODE_ENTRYPOINT", "sdk-rs"),
        ("CODEBUDDY_DISABLE_AUTO_MEMORY", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
    ],
    env_allowlist: &["CODEBUDDY_*", "DISABLE_*"],
    browser_flags: false,
    // 0.3.201 accepts `--json-schema` but never shows the model the schema:
    // its `StructuredOutput` tool takes an untyped `{"data": {...}}`, the
    // first request carries no trace of the schema, and whatever the tool
    // gets is reported as `result.structured_output` unchecked (observed
    // against the mock). Prompt validation tells the model the shape.
    native_json_schema: false,
    mcp_underscores: true,
    mcp_auto_approve: false,
    instructions: InstructionsCarrier::Initialize,
    home_var: "CODEBUDDY_CONFIG_DIR",
    home_default: ".codebuddy",
    run_skills: RunSkills::EnvVar("CODEBUDDY_SESSION_SKILL_DIRS"),
    clone_copy: &["settings.json"],
    clone_link: &[],
};

/// A configured stream-json CLI driver. Build one with
/// [`claude::driver`](crate::claude::driver) or
/// [`codebuddy::driver`](crate::codebuddy::driver).
///
/// The driver owns a pool of resident processes (see [`Config::resident`]);
/// clones share it. [`Driver::close_processes`] (`Agent::close`) stops them;
/// dropping the last clone stops them too (gracefully when a tokio runtime
/// is at hand, else by killing their process groups).
#[derive(Debug, Clone)]
pub struct StreamJsonDriver {
    family: &'static Family,
    config: Config,
    pool: Pool<Option<RunScratch>>,
}

impl StreamJsonDriver {
    /// A driver for `family` with `config` (captured; later changes to the
    /// caller's copy do not affect it).
    pub fn new(family: &'static Family, config: Config) -> Self {
        let pool = Pool::new(config.resident_idle_timeout);
        StreamJsonDriver {
            family,
            config,
            pool,
        }
    }

    /// How many resident processes are idle in the pool (none is serving a
    /// run).
    pub fn idle_processes(&self) -> usize {
        self.pool.idle_len()
    }

    /// The captured configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }
}

/// Where the family's `--json-schema` is native ([`Family::native_json_schema`]),
/// it works on every transport: observed with Claude Code 2.1.332 on
/// one-shot stream-json (with and without partial messages) and on the
/// control transport, where the CLI's own `StructuredOutput` tool is never
/// routed to the host as a permission request. Every family can follow a
/// prompt instruction.
fn structured_output_capability(family: &Family) -> StructuredOutputCapability {
    StructuredOutputCapability {
        json_schema_native: family.native_json_schema,
        json_schema_prompt_validate: true,
        works_with_run: true,
        works_with_streaming: true,
        works_with_hitl: true,
        notes: if family.native_json_schema {
            "--json-schema: a StructuredOutput tool, reported as result.structured_output".into()
        } else {
            "prompt instruction, final text validated by core (--json-schema does not show the \
             model the schema)"
                .into()
        },
    }
}

#[async_trait]
impl Driver for StreamJsonDriver {
    fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::new(self.family.driver_type, self.family.display_name);
        // The CLI process starts in the run's workspace.
        d.workspace.directory = true;
        d.sessions.supports_resume = true;
        d.process.persistent = self.config.resident;
        d.structured_output = structured_output_capability(self.family);
        // Run policy: exactly what the family's table translates (asking
        // a human only with host approvals).
        policy::table(self.family, &self.config).declare(&mut d.run_policy);
        // Instructions travel as a file (Claude) or in `initialize`
        // (CodeBuddy): never on argv.
        d.instructions = true;
        d.mcp = McpSupport {
            stdio: true,
            http: true,
            headers: true,
            bearer_token_env: true,
            auto_approve: self.family.mcp_auto_approve,
            strict: true,
            ..McpSupport::default()
        };
        d.skills = true;
        // An in-process SDK MCP server over the control protocol, on both
        // CLIs (`host.rs`).
        d.host_tools = HostToolChannel::SdkMcp;
        d.profiles = ProfileSupport {
            dedicated: true,
            clone: true,
        };
        d
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        self.config.validate(self.family)
    }

    fn stream_capability(&self) -> Option<StreamCapability> {
        Some(StreamCapability {
            native: true,
            token_level: true,
            reasoning: true,
            tool_call_args: true,
            hitl: self.config.host_approvals,
            observation: observe::SUPPORT,
        })
    }

    fn session_codec(&self) -> Option<Arc<dyn SessionCodec>> {
        Some(Arc::new(StandardSessionCodec::new(self.family.driver_type)))
    }

    fn session_config_fingerprint(&self) -> Option<Result<String, FingerprintError>> {
        let domain = format!(
            "{}/configured-driver/v1;session-codec/v1",
            self.family.driver_type
        );
        Some(canonical_session_config_fingerprint(&domain, &self.config))
    }

    async fn run(
        &self,
        ctx: RunContext,
        req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        transport::run(self.family, &self.config, &self.pool, ctx, req, sink).await
    }

    async fn close_processes(&self) {
        self.pool.close().await;
    }

    crate::probed::probe_methods!();
}
