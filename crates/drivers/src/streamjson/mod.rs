//! The stream-json protocol family: Claude Code and CodeBuddy Code.
//!
//! Both CLIs print one JSON object per stdout line (`system`, `assistant`,
//! `user`, `stream_event`, `result`, control frames). They differ in details
//! that are data here, never copies of the parser: see [`Family`].
//!
//! A run gets a process of its own (one-shot `-p`, or the control transport
//! with [`Config::host_approvals`]), except a thread run, which is served by
//! a *resident* process kept between the thread's turns
//! ([`Config::resident`]; the pool is [`crate::resident`]).

pub mod config;
pub mod control;
pub mod driver;
pub mod parse;
pub mod policy;
mod resident;
mod transport;
pub mod wire;
mod wire_de;

pub use config::{Config, Transport, argv_with};
pub use driver::StreamJsonDriver;
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
};
