//! OpenAI Codex (`codex exec --json`).
//!
//! exec prints one JSON event per line and has no text deltas: the driver
//! emits coarse text and reasoning lifecycles from completed items, and
//! declares its stream capability accordingly. `turn.completed.usage` is
//! cumulative for the thread; a resumed turn reports its own usage by
//! difference with the cumulative usage its checkpoint carried.

pub mod argv;
pub mod exec;
pub mod wire;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, FingerprintError, RawStreams, Request,
    Response, RunContext, SessionCodec, StandardSessionCodec, StreamCapability, async_trait,
    canonical_session_config_fingerprint,
};
use agent_adaptor_process::{Command, StdinMode};
use bytes::Bytes;
use serde::Serialize;

use crate::pump;
use exec::{ExecParser, USAGE_KEYS};
use wire::ExecUsage;

/// Codex driver configuration. Every field is provider-visible and part of
/// the session config fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// The `codex` binary.
    pub command: PathBuf,
    /// `-m`.
    pub model: Option<String>,
    /// `-c model_reasoning_effort=…`.
    pub reasoning_effort: Option<String>,
    /// `-s read-only|workspace-write|danger-full-access`.
    pub sandbox: Option<String>,
    /// `-c approval_policy=never|on-request` (exec cannot ask the host).
    pub approval_policy: Option<String>,
    /// Other `-c key=value` overrides (model providers …).
    pub overrides: BTreeMap<String, String>,
    /// `--skip-git-repo-check` (default true: hosts run outside git repos).
    pub skip_git_repo_check: bool,
    /// `--add-dir` directories.
    pub add_dirs: Vec<PathBuf>,
    /// The working directory when the request names none.
    pub cwd: Option<PathBuf>,
    /// Extra arguments; flags the driver owns are rejected.
    pub extra_args: Vec<String>,
    /// Environment bindings.
    pub env: BTreeMap<String, String>,
    /// Inherit the parent environment (default true).
    pub inherit_env: bool,
    /// Grace after stdin closes / after SIGTERM, on cancel.
    #[serde(skip)]
    pub cancel_grace: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            command: PathBuf::from("codex"),
            model: None,
            reasoning_effort: None,
            sandbox: None,
            approval_policy: None,
            overrides: BTreeMap::new(),
            skip_git_repo_check: true,
            add_dirs: Vec::new(),
            cwd: None,
            extra_args: Vec::new(),
            env: BTreeMap::new(),
            inherit_env: true,
            cancel_grace: Duration::from_millis(500),
        }
    }
}

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
];

impl Config {
    fn validate(&self) -> Result<(), ConfigError> {
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
        if self.approval_policy.as_deref() == Some("untrusted") {
            return Err(err(
                "approval_policy \"untrusted\" is rejected by codex exec".into(),
            ));
        }
        Ok(())
    }
}

/// A configured Codex driver.
#[derive(Debug, Clone)]
pub struct CodexDriver {
    config: Config,
}

/// A Codex driver.
pub fn driver(config: Config) -> CodexDriver {
    CodexDriver { config }
}

#[async_trait]
impl Driver for CodexDriver {
    fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::new("codex", "OpenAI Codex");
        d.sessions.supports_resume = true;
        d
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        self.config.validate()
    }

    fn stream_capability(&self) -> Option<StreamCapability> {
        // exec: a formal event protocol, but whole items only.
        Some(StreamCapability {
            native: true,
            token_level: false,
            reasoning: true,
            tool_call_args: false,
            hitl: false,
        })
    }

    fn session_codec(&self) -> Option<Arc<dyn SessionCodec>> {
        Some(Arc::new(StandardSessionCodec::new("codex")))
    }

    fn session_config_fingerprint(&self) -> Option<Result<String, FingerprintError>> {
        Some(canonical_session_config_fingerprint(
            "codex/configured-driver/v1;session-codec/v1",
            &self.config,
        ))
    }

    async fn run(
        &self,
        ctx: RunContext,
        req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        let cfg = &self.config;
        let cwd = req.workspace.clone().or_else(|| cfg.cwd.clone());
        let previous = previous_usage(&req);
        let mut cmd = Command::new(&cfg.command);
        cmd.args(argv::exec_argv(cfg, &req, cwd.as_deref(), None));
        if !cfg.inherit_env {
            cmd.env_clear()
                .inherit_env(["PATH", "HOME", "USER", "LANG", "TMPDIR"]);
        }
        for (k, v) in &cfg.env {
            cmd.env(k, v);
        }
        if let Some(dir) = &cwd {
            cmd.cwd(dir);
        }
        cmd.stdin(StdinMode::Bytes(Bytes::from(
            req.prompt.clone().into_bytes(),
        )))
        .close_grace(cfg.cancel_grace)
        .term_grace(cfg.cancel_grace * 2);
        let mut parser = ExecParser::new(req.streaming, previous);
        let finished = pump::run("Codex", &cmd, &ctx, sink, &mut parser, None, &[]).await?;
        let (tail, parsed) = parser.finish(finished.exit.code, finished.exit.signal.is_some());
        for out in tail {
            pump::deliver(out, sink, &mut None, &mut None).await?;
        }
        let checkpoint = parsed.checkpoint.map(|mut cp| {
            if let (Some(state), Some(dir)) = (cp.state.as_mut(), cwd.as_ref()) {
                state
                    .data
                    .insert("cwd".into(), dir.to_string_lossy().into_owned());
            }
            cp
        });
        let mut resp = Response {
            output: parsed.output,
            summary: String::new(),
            raw: RawStreams {
                stdout: finished.stdout.clone(),
                stderr: finished.stderr.clone(),
                terminal: parsed.terminal,
            },
            transcript: parsed.transcript,
            usage: parsed.usage,
            checkpoint,
            failure: parsed.failure,
            provider: "codex".into(),
            model: req
                .model_override
                .clone()
                .or_else(|| cfg.model.clone())
                .unwrap_or_default(),
            ..Default::default()
        };
        finished.exit.apply_to(&mut resp);
        Ok(resp)
    }
}

/// The thread's cumulative usage before this turn, from the resumed state.
fn previous_usage(req: &Request) -> Option<ExecUsage> {
    let data = &req.session.as_ref()?.state.as_ref()?.data;
    let get = |k: &str| data.get(k).and_then(|v| v.parse::<u64>().ok());
    Some(ExecUsage {
        input_tokens: get(USAGE_KEYS[0])?,
        cached_input_tokens: get(USAGE_KEYS[1]).unwrap_or(0),
        output_tokens: get(USAGE_KEYS[2]).unwrap_or(0),
        reasoning_output_tokens: get(USAGE_KEYS[3]).unwrap_or(0),
    })
}
