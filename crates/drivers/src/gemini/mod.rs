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
//!
//! Equipment (instructions, MCP servers, skills) and profiles: see
//! [`equip`] and [`home`] (a per-run overlay `GEMINI_CLI_HOME`), [`mcp`]
//! (the settings format and MCP tool names).

pub mod argv;
pub mod config;
pub mod equip;
pub mod home;
pub mod mcp;
pub mod parse;
pub mod policy;
pub(crate) mod probe;
pub mod wire;

use std::sync::Arc;

use agent_adaptor_driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, FingerprintError, HOST_TOOL_SERVER,
    HostToolChannel, Request, Response, RunContext, SessionCodec, StandardSessionCodec,
    StreamCapability, async_trait, canonical_session_config_fingerprint,
};

use crate::one_shot::{self, OneShot, OneShotCli};
use agent_adaptor_driver_kit::host_mcp::loopback::{self, LoopbackServer};
pub use config::{ApprovalMode, Config, ENV_ALLOWLIST};
use parse::GeminiParser;

/// The most prompt bytes Gemini CLI reads from stdin (it truncates the rest).
pub const MAX_PROMPT_BYTES: usize = 8 * 1024 * 1024;

/// The names the CLI is known by.
const CLI: OneShotCli<'static> = OneShotCli {
    display_name: "Gemini CLI",
    terminal: "result",
    provider: "gemini",
};

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
        // The CLI process starts in the run's workspace.
        d.workspace.directory = true;
        d.sessions.supports_resume = true;
        d.structured_output = crate::structured::prompt_only("Gemini CLI");
        policy::table().declare(&mut d.run_policy);
        d.instructions = true;
        d.mcp = mcp::support();
        // The loopback MCP server, in the overlay settings (see `mcp`).
        d.host_tools = HostToolChannel::LoopbackMcp;
        d.skills = true;
        d.profiles.dedicated = true;
        d.profiles.clone = true;
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
            observation: agent_adaptor_driver::ObservationSupport::NONE,
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
        if req.prompt.len() > MAX_PROMPT_BYTES {
            return Err(DriverError::Other(Box::new(PromptTooLarge {
                len: req.prompt.len(),
            })));
        }
        // The host tools' server, started before the CLI; it stops with
        // the run.
        let (host, calls) = LoopbackServer::for_run(&req).await?.unzip();
        // The run's home and variables; the overlay lives until the end.
        let mut equipped = (*applied).clone();
        let _run_home = equip::apply(&mut equipped, &req, host.as_ref())?;
        let cfg = &equipped;
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
        let mut servers: Vec<String> = req.mcp_servers.iter().map(|s| s.name.clone()).collect();
        if host.is_some() {
            servers.push(HOST_TOOL_SERVER.into());
        }
        let mut parser = GeminiParser::new(req.streaming)
            .with_transcript(req.new_transcript())
            .with_mcp_servers(servers);
        let run = one_shot::run_one_shot(CLI, spec, &req, &ctx, sink, &mut parser);
        loopback::serving(calls, &req.host_tools, sink, &ctx.cancel, run).await
    }

    crate::probed::probe_methods!();
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
                cancel_grace: std::time::Duration::from_secs(9),
                ..Default::default()
            }),
            base
        );
    }
}
