//! The configuration of a stream-json CLI driver, and its command line.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use agent_adaptor_driver::{ConfigError, HOST_TOOL_SERVER};
use serde::Serialize;
use serde_json::Value;

use super::Family;
use crate::child_env::{EnvPolicy, EnvVars};

/// How the CLI is driven, per run, when no resident process serves the run
/// (see [`Config::resident`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// `-p --output-format stream-json --verbose`, the prompt on stdin, then EOF.
    OneShot,
    /// `--input-format stream-json` with the control protocol: permission
    /// requests are routed to the host's decision sink.
    Control,
}

/// Configuration shared by the drivers of the stream-json family.
///
/// Every field is provider-visible and part of the session config
/// fingerprint (environment values included, hashed, never logged).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// The CLI binary (default: the family's program name, from `PATH`).
    pub command: PathBuf,
    /// `--model`.
    pub model: Option<String>,
    /// `--effort` (Claude: low … max).
    pub effort: Option<String>,
    /// `--max-turns`.
    pub max_turns: Option<u32>,
    /// `--permission-mode`.
    pub permission_mode: Option<String>,
    /// Route permission requests to the host (the control transport).
    pub host_approvals: bool,
    /// MCP servers in the CLI's own spec form, written with the run's
    /// servers ([`Request::mcp_servers`](agent_adaptor_driver::Request::mcp_servers),
    /// which win on a name clash) to the run's `--mcp-config` file
    /// (`{"mcpServers": {name: spec}}`).
    pub mcp_servers: BTreeMap<String, Value>,
    /// `--add-dir` directories.
    pub add_dirs: Vec<PathBuf>,
    /// The working directory when the request names none.
    pub cwd: Option<PathBuf>,
    /// Extra arguments appended last. Flags the driver owns are rejected.
    pub extra_args: Vec<String>,
    /// Environment bindings for the CLI (they win over inherited variables).
    pub env: EnvVars,
    /// Which host variables the CLI inherits (default: the allowlist plus
    /// the family's documented variables; see [`crate::child_env`]). Not
    /// part of the session fingerprint: like the inherited values, it is
    /// the host's setup, not the session's.
    #[serde(skip)]
    pub env_policy: EnvPolicy,
    /// How long the CLI may take to exit after stdin closes on cancel.
    #[serde(skip)]
    pub cancel_close_grace: Duration,
    /// How long after SIGTERM before SIGKILL on cancel.
    #[serde(skip)]
    pub cancel_term_grace: Duration,
    /// Keep one live CLI process per provider session between the turns of
    /// a thread (default on). A thread run (one whose request carries a
    /// continue-or-start or continue-only session) that streams, has no
    /// output schema and is not
    /// [`Request::spawn`](agent_adaptor_driver::Request::spawn) is served by
    /// a *resident* process: the CLI runs with `--input-format
    /// stream-json`, each turn writes one user frame, the turn ends at the
    /// `result` line and the process stays up for the next turn of the same session. Not part of
    /// the session fingerprint: it changes no provider-visible behaviour.
    #[serde(skip)]
    pub resident: bool,
    /// How long a resident process may stay idle before it is stopped
    /// (default [`DEFAULT_IDLE_TIMEOUT`](crate::resident::DEFAULT_IDLE_TIMEOUT),
    /// 5 min).
    #[serde(skip)]
    pub resident_idle_timeout: Duration,
    /// When a resident process is stopped (idle, closed, replaced, or after
    /// a failed turn): how long after its stdin closes before SIGTERM
    /// (default 2 s, so the CLI can write its session). SIGKILL follows
    /// after [`cancel_term_grace`](Config::cancel_term_grace).
    #[serde(skip)]
    pub resident_stop_grace: Duration,
}

impl Config {
    /// The defaults for `family`.
    pub fn new(family: &Family) -> Self {
        Config {
            command: PathBuf::from(family.program),
            model: None,
            effort: None,
            max_turns: None,
            permission_mode: None,
            host_approvals: false,
            mcp_servers: BTreeMap::new(),
            add_dirs: Vec::new(),
            cwd: None,
            extra_args: Vec::new(),
            env: EnvVars::new(),
            env_policy: EnvPolicy::default(),
            cancel_close_grace: Duration::from_millis(500),
            cancel_term_grace: Duration::from_millis(1000),
            resident: true,
            resident_idle_timeout: crate::resident::DEFAULT_IDLE_TIMEOUT,
            resident_stop_grace: Duration::from_secs(2),
        }
    }

    /// The transport this configuration selects.
    pub fn transport(&self) -> Transport {
        if self.host_approvals {
            Transport::Control
        } else {
            Transport::OneShot
        }
    }

    /// Reject what the driver must own.
    pub fn validate(&self, family: &Family) -> Result<(), ConfigError> {
        let err = |reason: String| ConfigError {
            driver: family.driver_type.to_owned(),
            reason,
        };
        if self.command.as_os_str().is_empty() {
            return Err(err("command is empty".into()));
        }
        for arg in &self.extra_args {
            let flag = arg.split('=').next().unwrap_or(arg);
            if OWNED_FLAGS.contains(&flag) {
                return Err(err(format!(
                    "extra_args must not contain {flag}: the driver sets it"
                )));
            }
        }
        if let Some(e) = &self.effort
            && !["low", "medium", "high", "xhigh", "max"].contains(&e.as_str())
        {
            return Err(err(format!("unknown effort {e:?}")));
        }
        if self.mcp_servers.contains_key(HOST_TOOL_SERVER) {
            return Err(err(format!(
                "mcp_servers must not name a server {HOST_TOOL_SERVER:?}: the name is the host tools' SDK MCP server"
            )));
        }
        if self.max_turns == Some(0) {
            return Err(err("max_turns must be at least 1".into()));
        }
        crate::child_env::validate(family.driver_type, &self.env_policy, &self.env)
    }
}

/// Flags the driver sets itself; `extra_args` may not contain them.
pub const OWNED_FLAGS: &[&str] = &[
    "-p",
    "--print",
    "--output-format",
    "--input-format",
    "--verbose",
    "--include-partial-messages",
    "--resume",
    "-r",
    "--continue",
    "-c",
    "--session-id",
    "--permission-prompt-tool",
    "--model",
    "--mcp-config",
    "--max-turns",
    "--permission-mode",
    "--effort",
    "--json-schema",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streamjson::CLAUDE;

    #[test]
    fn owned_flags_are_rejected() {
        let mut cfg = Config::new(&CLAUDE);
        cfg.extra_args = vec!["--output-format=json".into()];
        let e = cfg.validate(&CLAUDE).unwrap_err();
        assert!(e.reason.contains("--output-format"));
        cfg.extra_args = vec!["--fallback-model".into(), "x".into()];
        cfg.validate(&CLAUDE).unwrap();
        cfg.effort = Some("extreme".into());
        assert!(cfg.validate(&CLAUDE).is_err());
        let mut cfg = Config::new(&CLAUDE);
        cfg.mcp_servers
            .insert("agent-adaptor".into(), serde_json::json!({"type": "stdio"}));
        let e = cfg.validate(&CLAUDE).unwrap_err();
        assert!(e.reason.contains("agent-adaptor"), "{}", e.reason);
    }
}
