//! Cursor Agent (`agent -p --output-format stream-json`, legacy binary name
//! `cursor-agent`; the prompt on stdin).
//!
//! stream-json is NDJSON with one line per *complete* assistant message
//! (the text between two tool calls) and `tool_call` `started`/`completed`
//! pairs; the terminal line is `result`, whose top-level `session_id` is the
//! resume identifier (`--resume <id>`). Cursor cannot be pointed at a local
//! model server, so this driver is proven against protocol-accurate fixtures
//! replayed by the testkit's fake CLI (`tests/fixtures/cursor/README.md`
//! names the source of every shape).
//!
//! Its stream capability is all false: text arrives whole (no token-level
//! deltas), reasoning only in undocumented `thinking` lines, no incremental
//! tool arguments and no approval requests — print mode either runs a tool
//! (`--force`, or the allow rules of `~/.cursor/cli-config.json`) or refuses
//! it. The lifecycles it emits are coarse. `--stream-partial-output` is not
//! supported (its line forms are only known from a forum thread; guessing
//! which copies are deltas would duplicate text), so the flag is rejected.

pub mod argv;
pub mod config;
pub mod equip;
pub mod parse;
pub mod policy;
pub(crate) mod probe;
pub mod wire;

use std::sync::Arc;

use agent_adaptor_driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, FingerprintError, HostToolChannel,
    McpSupport, ProfileSupport, Request, Response, RunContext, SessionCodec, StandardSessionCodec,
    StreamCapability, async_trait, canonical_session_config_fingerprint,
};

use crate::one_shot::{self, OneShot, OneShotCli};
use agent_adaptor_driver_kit::host_mcp::loopback::{self, LoopbackServer, TOKEN_ENV};
pub use config::{Config, ENV_ALLOWLIST};
use parse::CursorParser;

/// The names the CLI is known by.
const CLI: OneShotCli<'static> = OneShotCli {
    display_name: "Cursor Agent",
    terminal: "result",
    provider: "cursor",
};

/// A configured Cursor Agent driver.
#[derive(Debug, Clone)]
pub struct CursorDriver {
    config: Config,
}

/// A Cursor Agent driver (the configuration is captured).
pub fn driver(config: Config) -> CursorDriver {
    CursorDriver { config }
}

#[async_trait]
impl Driver for CursorDriver {
    fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::new("cursor", "Cursor Agent");
        // The CLI process starts in the run's workspace.
        d.workspace.directory = true;
        d.sessions.supports_resume = true;
        d.structured_output = crate::structured::prompt_only("Cursor Agent");
        policy::table().declare(&mut d.run_policy);
        // MCP servers in the profile home's mcp.json (see `equip`); no
        // instructions or skills carrier.
        d.mcp = McpSupport {
            stdio: true,
            http: true,
            sse: true,
            headers: true,
            bearer_token_env: true,
            ..McpSupport::default()
        };
        d.profiles = ProfileSupport {
            dedicated: true,
            clone: true,
        };
        // The loopback MCP server in the profile home's mcp.json (`equip`).
        d.host_tools = HostToolChannel::LoopbackMcp;
        d
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        self.config.validate()
    }

    fn stream_capability(&self) -> Option<StreamCapability> {
        // Coarse lifecycles only (see the module docs).
        Some(StreamCapability::default())
    }

    fn session_codec(&self) -> Option<Arc<dyn SessionCodec>> {
        Some(Arc::new(StandardSessionCodec::new("cursor")))
    }

    fn session_config_fingerprint(&self) -> Option<Result<String, FingerprintError>> {
        Some(canonical_session_config_fingerprint(
            "cursor/configured-driver/v1;session-codec/v1",
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
        let args = argv::argv(cfg, &req);
        // The host tools' server, started before the CLI; it stops with
        // the run.
        let (host, calls) = LoopbackServer::for_run(&req).await?.unzip();
        // Held until the run ends: the profile home's claim.
        let equipped =
            equip::equip(&req, host.as_ref()).map_err(|e| DriverError::Other(Box::new(e)))?;
        let mut env = cfg.env.clone();
        env.extend(equipped.env.iter().cloned());
        if let Some(server) = &host {
            // Named by mcp.json; never argv.
            env.insert(TOKEN_ENV.into(), server.token().into());
        }
        let env_policy = cfg.env_policy.with_passed(&equipped.pass);
        let spec = OneShot {
            program: &cfg.command,
            args: &args,
            env: &env,
            env_policy: &env_policy,
            env_allowlist: ENV_ALLOWLIST,
            cwd: cfg.cwd.as_deref(),
            model: cfg.model.as_deref(),
            cancel_grace: cfg.cancel_grace,
        };
        let mut parser = CursorParser::new(req.streaming).with_transcript(req.new_transcript());
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
        assert!(driver(Config::default()).validate_config().is_ok());
        for bad in [
            Config {
                extra_args: vec!["--stream-partial-output".into()],
                ..Default::default()
            },
            Config {
                extra_args: vec!["--output-format=json".into()],
                ..Default::default()
            },
            Config {
                mode: Some("yolo".into()),
                ..Default::default()
            },
            Config {
                command: "".into(),
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
                force: true,
                ..Default::default()
            },
            Config {
                model: Some("gpt-5".into()),
                ..Default::default()
            },
            Config {
                trust_workspace: false,
                ..Default::default()
            },
            Config {
                env: [("CURSOR_API_KEY".to_owned(), "k".to_owned())].into(),
                ..Default::default()
            },
        ] {
            assert_ne!(fp(changed), base);
        }
        let d = driver(Config::default());
        assert_eq!(d.stream_capability(), Some(StreamCapability::default()));
        assert!(d.descriptor().sessions.supports_resume);
    }
}
