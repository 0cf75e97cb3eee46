//! Gemini CLI (`gemini -p "" --output-format stream-json`, the prompt on
//! stdin).
//!
//! stream-json is a formal NDJSON protocol with token-level assistant text
//! (`message` deltas) and whole tool calls (`tool_use` with complete
//! arguments, `tool_result`); it has no reasoning events and no approval
//! requests. Headless Gemini asks nobody: without
//! [`ApprovalMode::Yolo`] (or `auto_edit`) it only offers the model its
//! read-only tools. The terminal line is `result{status, stats}`; the resume
//! identifier is `init.session_id` (`--resume <id>`).
//!
//! What was checked against Gemini CLI 0.61.0 (offline, against the testkit
//! mock): the prompt on stdin works (see [`argv`]); the exit code 55 that
//! protocols.md §0 put down to an open stdin is the untrusted-folder exit
//! (`--skip-trust` avoids it; an open stdin is read with a 500 ms "piped
//! input" timer); API errors end with `result{status:"error"}` and an exit
//! code derived from the HTTP status (400 → 144); a bad `--resume` id exits
//! 42 with nothing on stdout.

pub mod argv;
pub mod parse;
pub mod policy;
pub mod wire;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, FingerprintError, Request, Response,
    RunContext, SessionCodec, StandardSessionCodec, StreamCapability, async_trait,
    canonical_session_config_fingerprint,
};
use serde::Serialize;

use crate::child_env::{EnvPolicy, EnvVars};
use crate::one_shot::{self, OneShot, OneShotCli};
use parse::GeminiParser;

/// The most prompt bytes Gemini CLI reads from stdin (it truncates the rest).
pub const MAX_PROMPT_BYTES: usize = 8 * 1024 * 1024;

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

/// The names the CLI is known by.
const CLI: OneShotCli<'static> = OneShotCli {
    display_name: "Gemini CLI",
    terminal: "result",
    provider: "gemini",
};

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
    "--acp",
    "--experimental-acp",
    "--list-sessions",
    "--delete-session",
];

impl Config {
    fn validate(&self) -> Result<(), ConfigError> {
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

/// A prompt larger than Gemini CLI reads from stdin ([`MAX_PROMPT_BYTES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the prompt is {len} bytes; Gemini CLI reads at most {MAX_PROMPT_BYTES} from stdin")]
pub struct PromptTooLarge {
    /// The prompt's length in bytes.
    pub len: usize,
}

/// A configured Gemini CLI driver.
#[derive(Debug, Clone)]
pub struct GeminiDriver {
    config: Config,
}

/// A Gemini CLI driver (the configuration is captured).
pub fn driver(config: Config) -> GeminiDriver {
    GeminiDriver { config }
}

#[async_trait]
impl Driver for GeminiDriver {
    fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::new("gemini", "Gemini CLI");
        d.sessions.supports_resume = true;
        d.structured_output = crate::structured::prompt_only("Gemini CLI");
        policy::table().declare(&mut d.run_policy);
        d
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        self.config.validate()
    }

    fn stream_capability(&self) -> Option<StreamCapability> {
        Some(StreamCapability {
            native: true,
            token_level: true,
            reasoning: false,
            tool_call_args: false,
            hitl: false,
        })
    }

    fn session_codec(&self) -> Option<Arc<dyn SessionCodec>> {
        Some(Arc::new(StandardSessionCodec::new("gemini")))
    }

    fn session_config_fingerprint(&self) -> Option<Result<String, FingerprintError>> {
        Some(canonical_session_config_fingerprint(
            "gemini/configured-driver/v1;session-codec/v1",
            &self.config,
        ))
    }

    async fn run(
        &self,
        ctx: RunContext,
        req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        // The run policy's flags, for this run only.
        let applied = policy::table().apply(&self.config, &req.policy);
        let cfg = &*applied;
        if req.prompt.len() > MAX_PROMPT_BYTES {
            return Err(DriverError::Other(Box::new(PromptTooLarge {
                len: req.prompt.len(),
            })));
        }
        let args = argv::argv(cfg, &req);
        let spec = OneShot {
            program: &cfg.command,
            args: &args,
            env: &cfg.env,
            env_policy: &cfg.env_policy,
            env_allowlist: ENV_ALLOWLIST,
            cwd: cfg.cwd.as_deref(),
            model: cfg.model.as_deref(),
            cancel_grace: cfg.cancel_grace,
        };
        let mut parser = GeminiParser::new(req.streaming).with_transcript(req.new_transcript());
        one_shot::run_one_shot(CLI, spec, &req, &ctx, sink, &mut parser).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_is_validated_and_fingerprinted() {
        let ok = driver(Config::default());
        assert!(ok.validate_config().is_ok());
        for bad in [
            Config {
                extra_args: vec!["--yolo".into()],
                ..Default::default()
            },
            Config {
                extra_args: vec!["--output-format=json".into()],
                ..Default::default()
            },
            Config {
                model: Some(" ".into()),
                ..Default::default()
            },
            Config {
                command: "".into(),
                ..Default::default()
            },
            Config {
                env: [("A=B".to_owned(), "x".to_owned())].into(),
                ..Default::default()
            },
        ] {
            assert!(driver(bad).validate_config().is_err());
        }
        let fp = |cfg: Config| driver(cfg).session_config_fingerprint().unwrap().unwrap();
        let base = fp(Config::default());
        assert_eq!(base, fp(Config::default()));
        for changed in [
            Config {
                model: Some("m".into()),
                ..Default::default()
            },
            Config {
                approval_mode: ApprovalMode::Yolo,
                ..Default::default()
            },
            Config {
                skip_trust: false,
                ..Default::default()
            },
            Config {
                env: [("GEMINI_API_KEY".to_owned(), "k".to_owned())].into(),
                ..Default::default()
            },
        ] {
            assert_ne!(fp(changed), base);
        }
        // The cancel grace is not provider-visible.
        assert_eq!(
            fp(Config {
                cancel_grace: Duration::from_secs(9),
                ..Default::default()
            }),
            base
        );
    }
}
