//! The Gemini CLI driver's configuration: its fields, defaults and validation.

use std::path::PathBuf;
use std::time::Duration;

use agent_adaptor_driver::ConfigError;
use serde::Serialize;

use crate::child_env::{EnvPolicy, EnvVars};
use crate::one_shot;

/// Which tools Gemini may run without asking (`--approval-mode`). Headless
/// Gemini cannot ask the host, so anything not approved by the mode is not
/// offered to the model at all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// No flag: only read-only tools (`read_file`, `glob`, `grep_search` …).
    #[default]
    Default,
    /// `--approval-mode auto_edit`: edit tools too.
    AutoEdit,
    /// `--yolo`: every tool, shell included, auto-approved.
    Yolo,
    /// `--approval-mode plan`: read-only planning.
    Plan,
}

/// Gemini CLI driver configuration. Every field but the cancel grace is
/// provider-visible and part of the session config fingerprint
/// (environment values included: hashed, never logged).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// The `gemini` program (or its `bundle/gemini.js`, which is executable).
    pub command: PathBuf,
    /// `-m`. Pass one: without it Gemini routes through the `auto` model,
    /// which makes extra calls first.
    pub model: Option<String>,
    /// `--yolo` / `--approval-mode`.
    pub approval_mode: ApprovalMode,
    /// `--skip-trust` (default true): headless Gemini refuses to run in a
    /// folder the user has not trusted (exit 55).
    pub skip_trust: bool,
    /// `--include-directories`.
    pub include_directories: Vec<PathBuf>,
    /// The working directory when the request names none (sessions are kept
    /// per directory: a resume must run in the same one).
    pub cwd: Option<PathBuf>,
    /// Extra arguments, appended last; flags the driver owns are rejected.
    pub extra_args: Vec<String>,
    /// Environment bindings (`GEMINI_API_KEY`, `GOOGLE_GEMINI_BASE_URL` …).
    pub env: EnvVars,
    /// Which host variables the CLI inherits (default: the allowlist plus
    /// [`ENV_ALLOWLIST`]; see [`crate::child_env`]). Not part of the
    /// session fingerprint.
    #[serde(skip)]
    pub env_policy: EnvPolicy,
    /// On cancel: the wait after stdin closed before SIGTERM, and twice
    /// that before SIGKILL.
    #[serde(skip)]
    pub cancel_grace: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            command: PathBuf::from("gemini"),
            model: None,
            approval_mode: ApprovalMode::Default,
            skip_trust: true,
            include_directories: Vec::new(),
            cwd: None,
            extra_args: Vec::new(),
            env: EnvVars::new(),
            env_policy: EnvPolicy::default(),
            cancel_grace: Duration::from_millis(500),
        }
    }
}

/// The host variables the CLI documents: Gemini CLI's API key, base URL and Vertex/Cloud settings.
pub const ENV_ALLOWLIST: &[&str] = &["GEMINI_*", "GOOGLE_*"];

/// Flags the driver sets (or must not be combined with its transport).
const OWNED: &[&str] = &[
    "-p",
    "--prompt",
    "-i",
    "--prompt-interactive",
    "-o",
    "--output-format",
    "-m",
    "--model",
    "-y",
    "--yolo",
    "--approval-mode",
    "-r",
    "--resume",
    "--session-id",
    "--session-file",
    "--skip-trust",
    "--include-directories",
    "--allowed-mcp-server-names",
    "--acp",
    "--experimental-acp",
    "--list-sessions",
    "--delete-session",
];

impl Config {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        one_shot::validate_common(
            "gemini",
            &self.command,
            &self.env_policy,
            &self.env,
            &self.extra_args,
            OWNED,
        )?;
        if self.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
            return Err(ConfigError {
                driver: "gemini".into(),
                reason: "model is empty".into(),
            });
        }
        Ok(())
    }
}
