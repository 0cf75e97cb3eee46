//! The Codex driver's configuration and its validation.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use agent_adaptor_driver::ConfigError;
use serde::Serialize;

use crate::child_env::{EnvPolicy, EnvVars};

/// Which Codex transport a run uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// `codex app-server` when `Request::streaming` is set, `codex exec
    /// --json` otherwise (spec §3: the request chooses).
    #[default]
    Auto,
    /// Always `codex exec --json` (no deltas, no host approvals).
    Exec,
    /// Always `codex app-server` (token-level deltas, host approvals).
    AppServer,
}

/// Codex driver configuration. Every field except the cancel grace is
/// provider-visible and part of the session config fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// The `codex` binary.
    pub command: PathBuf,
    /// Which transport runs use.
    pub transport: Transport,
    /// The model (exec `-m`; app-server `thread/start.model`).
    pub model: Option<String>,
    /// `-c model_reasoning_effort=…`.
    pub reasoning_effort: Option<String>,
    /// `read-only`, `workspace-write` or `danger-full-access` (exec `-s`;
    /// app-server `thread/start.sandbox`).
    pub sandbox: Option<String>,
    /// `never`, `on-request` or (app-server only) `untrusted` (exec
    /// `-c approval_policy=…`; app-server `thread/start.approvalPolicy`).
    /// Only the app-server can ask the host: with exec, a command that needs
    /// approval is declined by Codex itself.
    pub approval_policy: Option<String>,
    /// Other `-c key=value` overrides (model providers …), both transports.
    pub overrides: BTreeMap<String, String>,
    /// exec's `--skip-git-repo-check` (default true: hosts run outside git
    /// repos); the app-server does not check.
    pub skip_git_repo_check: bool,
    /// exec's `--add-dir` directories.
    pub add_dirs: Vec<PathBuf>,
    /// The working directory when the request names none.
    pub cwd: Option<PathBuf>,
    /// Extra arguments, appended for both transports (they must suit the
    /// transport that runs); flags the driver owns are rejected.
    pub extra_args: Vec<String>,
    /// Environment bindings (they win over inherited variables).
    pub env: EnvVars,
    /// Which host variables the CLI inherits (default: the allowlist plus
    /// [`ENV_ALLOWLIST`]; see [`crate::child_env`]). Not part of the
    /// session fingerprint.
    #[serde(skip)]
    pub env_policy: EnvPolicy,
    /// Grace after stdin closes / after SIGTERM, on cancel.
    #[serde(skip)]
    pub cancel_grace: Duration,
    /// Keep one live `codex app-server` per thread between the turns of a
    /// thread (default on). A thread run (its request carries a
    /// continue-or-start or continue-only session) that uses the app-server
    /// and is not `Request::spawn` is served by a *resident* process: turn
    /// N+1 is a `turn/start` on the server that ran turn N, where the thread
    /// is still loaded. Not part of the session fingerprint.
    #[serde(skip)]
    pub resident: bool,
    /// How long a resident app-server may stay idle before it is stopped
    /// (default [`DEFAULT_IDLE_TIMEOUT`](crate::resident::DEFAULT_IDLE_TIMEOUT),
    /// 5 min).
    #[serde(skip)]
    pub resident_idle_timeout: Duration,
    /// When a resident app-server is stopped: how long after its stdin
    /// closes before SIGTERM (default 2 s); SIGKILL follows after
    /// `2 × cancel_grace`.
    #[serde(skip)]
    pub resident_stop_grace: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            command: PathBuf::from("codex"),
            transport: Transport::Auto,
            model: None,
            reasoning_effort: None,
            sandbox: None,
            approval_policy: None,
            overrides: BTreeMap::new(),
            skip_git_repo_check: true,
            add_dirs: Vec::new(),
            cwd: None,
            extra_args: Vec::new(),
            env: EnvVars::new(),
            env_policy: EnvPolicy::default(),
            cancel_grace: Duration::from_millis(500),
            resident: true,
            resident_idle_timeout: crate::resident::DEFAULT_IDLE_TIMEOUT,
            resident_stop_grace: Duration::from_secs(2),
        }
    }
}

/// The host variables Codex documents: its API key and base URL
/// (`OPENAI_*`) and its own settings (`CODEX_*`, e.g. `CODEX_HOME`). A
/// custom model provider's `env_key` variable is the host's to pass.
pub const ENV_ALLOWLIST: &[&str] = &["OPENAI_*", "CODEX_*"];

/// Flags the driver sets itself.
const OWNED: &[&str] = &[
    "--json",
    "-m",
    "--model",
    "-s",
    "--sandbox",
    "--cd",
    "-C",
    "--output-schema",
    "resume",
    "--skip-git-repo-check",
    "app-server",
    "--listen",
];

impl Config {
    /// Reject what no transport can run.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let err = |reason: String| ConfigError {
            driver: "codex".into(),
            reason,
        };
        if self.command.as_os_str().is_empty() {
            return Err(err("command is empty".into()));
        }
        if let Some(arg) = self
            .extra_args
            .iter()
            .find(|a| OWNED.contains(&a.split('=').next().unwrap_or(a)))
        {
            return Err(err(format!(
                "extra_args must not contain {arg}: the driver sets it"
            )));
        }
        if let Some(s) = &self.sandbox
            && !["read-only", "workspace-write", "danger-full-access"].contains(&s.as_str())
        {
            return Err(err(format!("unknown sandbox {s:?}")));
        }
        match self.approval_policy.as_deref() {
            None | Some("never" | "on-request") => {}
            Some("untrusted") if self.transport == Transport::AppServer => {}
            Some("untrusted") => {
                return Err(err(
                    "approval_policy \"untrusted\" is rejected by codex exec; \
                     use transport AppServer"
                        .into(),
                ));
            }
            Some(other) => return Err(err(format!("unknown approval_policy {other:?}"))),
        }
        crate::child_env::validate("codex", &self.env_policy, &self.env)
    }

    /// Whether a run with `streaming` uses the app-server.
    pub(crate) fn uses_app_server(&self, streaming: bool) -> bool {
        match self.transport {
            Transport::Auto => streaming,
            Transport::Exec => false,
            Transport::AppServer => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untrusted_needs_the_app_server() {
        let mut cfg = Config {
            approval_policy: Some("untrusted".into()),
            ..Default::default()
        };
        assert!(cfg.validate().is_err());
        cfg.transport = Transport::AppServer;
        assert!(cfg.validate().is_ok());
        cfg.approval_policy = Some("sometimes".into());
        assert!(cfg.validate().is_err());
    }

    #[test]
    fn the_request_picks_the_transport_unless_forced() {
        let auto = Config::default();
        assert!(auto.uses_app_server(true) && !auto.uses_app_server(false));
        let exec = Config {
            transport: Transport::Exec,
            ..Default::default()
        };
        assert!(!exec.uses_app_server(true));
        let server = Config {
            transport: Transport::AppServer,
            ..Default::default()
        };
        assert!(server.uses_app_server(false));
    }
}
