//! The Cursor Agent driver's configuration: its fields, defaults and validation.

use std::path::PathBuf;
use std::time::Duration;

use agent_adaptor_driver::ConfigError;
use serde::Serialize;

use crate::child_env::{EnvPolicy, EnvVars};
use crate::one_shot;

/// Cursor Agent driver configuration. Every field but the cancel grace is
/// provider-visible and part of the session config fingerprint
/// (environment values included: hashed, never logged).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// The program: `agent` (older installs: `cursor-agent`).
    pub command: PathBuf,
    /// `--model`.
    pub model: Option<String>,
    /// `--mode agent|plan|ask`.
    pub mode: Option<String>,
    /// `--force`: run every tool without asking (print mode cannot ask the
    /// host; without it only what `cli-config.json` allows runs).
    pub force: bool,
    /// `--trust` (default true): trust the workspace without the interactive
    /// prompt headless mode cannot show.
    pub trust_workspace: bool,
    /// The working directory when the request names none.
    pub cwd: Option<PathBuf>,
    /// Extra arguments, appended last; flags the driver owns are rejected.
    pub extra_args: Vec<String>,
    /// Environment bindings (`CURSOR_API_KEY` …).
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
            command: PathBuf::from("agent"),
            model: None,
            mode: None,
            force: false,
            trust_workspace: true,
            cwd: None,
            extra_args: Vec::new(),
            env: EnvVars::new(),
            env_policy: EnvPolicy::default(),
            cancel_grace: Duration::from_millis(500),
        }
    }
}

/// The host variables the CLI documents: Cursor Agent's API key and settings.
pub const ENV_ALLOWLIST: &[&str] = &["CURSOR_*"];

/// Flags the driver sets, or that change the protocol it parses.
const OWNED: &[&str] = &[
    "-p",
    "--print",
    "--output-format",
    "--stream-partial-output",
    "--force",
    "--yolo",
    "--trust",
    "--model",
    "-m",
    "--mode",
    "--resume",
    "--approve-mcps",
];

impl Config {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        one_shot::validate_common(
            "cursor",
            &self.command,
            &self.env_policy,
            &self.env,
            &self.extra_args,
            OWNED,
        )?;
        if let Some(m) = &self.mode
            && !["agent", "plan", "ask"].contains(&m.as_str())
        {
            return Err(ConfigError {
                driver: "cursor".into(),
                reason: format!("unknown mode {m:?} (agent, plan or ask)"),
            });
        }
        Ok(())
    }
}
