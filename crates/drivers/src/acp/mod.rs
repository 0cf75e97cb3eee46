//! The Agent Client Protocol driver family: one driver for every agent that
//! speaks ACP v1 on stdio (Gemini CLI `--acp`, Qwen Code, GitHub Copilot
//! CLI, opencode, CodeBuddy, Cursor Agent, Zed's Claude Code and Codex
//! adapters, or any command), each a launch recipe ([`argv`]).
//!
//! One run is one process and one JSON-RPC session on the shared pump
//! (`transport.rs`): `initialize` (protocol v1; the client serves text files
//! and terminals), `session/new` in the workspace with the run's MCP servers
//! — or, for a thread's next turn, `session/load` of the checkpoint's
//! session (`session/resume` when the agent offers that instead) — then
//! `session/prompt`, whose answer is the terminal; a recipe's load quirks
//! ([`load`]) may first wait for the next minute, or keep counting replay
//! after the load answer. [`parse`] has the event
//! mapping. The agent's requests are served: permissions become one host
//! decision each, files ([`client_fs`]) and terminals ([`terminal`]) are
//! confined to the workspace, and anything else is refused at once.
//! Cancellation sends `session/cancel`, then the pump closes stdin and
//! stops the process group; terminals are stopped with the run.
//!
//! The message types are the official crate's v1 schema
//! (`agent_client_protocol::v1::schema`); its runtime is not used.

pub mod argv;
pub mod client_fs;
pub mod config;
pub mod load;
pub mod parse;
mod policy;
pub mod terminal;
mod transport;
pub mod wire;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use agent_adaptor_driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, FingerprintError, McpSupport,
    OperationalEvent, RawStreams, Request, Response, RunContext, RunEvent, SessionCodec,
    SessionState, StandardSessionCodec, StreamCapability, async_trait,
    canonical_session_config_fingerprint,
};
use agent_adaptor_process::{Command, StdinMode};

pub use argv::{AcpAgent, ModelSetting, Recipe};
pub use config::Config;
pub use load::LoadQuirks;
use parse::AcpParser;
use terminal::{TerminalEnv, Terminals};
use transport::{Plan, Session};

use crate::exit::CliName;
use crate::one_shot::{Exit, with_cwd};
use crate::pump;

/// A model was asked of an agent whose recipe has no way to pass one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{driver}: the agent has no known way to choose a model (asked for {model:?})")]
pub struct ModelUnsupported {
    /// The driver type.
    pub driver: &'static str,
    /// The model asked for.
    pub model: String,
}

/// A configured ACP driver.
#[derive(Debug, Clone)]
pub struct AcpDriver {
    config: Config,
}

/// An ACP driver (the configuration is captured).
pub fn driver(config: Config) -> AcpDriver {
    AcpDriver { config }
}

impl AcpDriver {
    /// The driver's recipe.
    pub fn recipe(&self) -> &'static Recipe {
        self.config.agent.recipe()
    }

    /// The process of a run in `root` with `model`.
    fn command(&self, cfg: &Config, root: &std::path::Path, model: Option<&str>) -> Command {
        let recipe = cfg.agent.recipe();
        let (program, args) = argv::command_line(cfg, model);
        let mut env = cfg.env.clone();
        if let (ModelSetting::Env(var), Some(m)) = (recipe.model, model) {
            env.insert(var.to_owned(), m.to_owned());
        }
        let mut cmd = Command::new(program);
        cmd.args(args);
        cfg.env_policy
            .apply(&mut cmd, recipe.env_allowlist, &[], &env);
        cmd.cwd(root)
            .stdin(StdinMode::Pipe)
            .close_grace(cfg.cancel_grace)
            .term_grace(cfg.cancel_grace * 2);
        cmd
    }
}

/// The session a thread's turn continues, when the request carries one.
fn prev_state(req: &Request) -> Option<&SessionState> {
    req.session
        .as_ref()
        .and_then(|s| s.state.as_ref())
        .filter(|s| !s.resume_id.is_empty())
}

/// Wait, when the recipe needs it, before a process loads `prev` (an
/// `acp.load_wait` notice says why); cancellation ends the wait.
async fn wait_for_load(
    recipe: &Recipe,
    prev: &SessionState,
    ctx: &RunContext,
    sink: &dyn EventSink,
) -> Result<(), DriverError> {
    let Some(wait) = load::wait_before_load(recipe.load, prev, SystemTime::now()) else {
        return Ok(());
    };
    let mut ev = OperationalEvent::text(format!(
        "{}: waiting {} ms for the next UTC minute before loading session {}: \
         the agent names its session records by the minute, and a load in the \
         minute the last turn ended would lose the session",
        recipe.driver_type,
        wait.as_millis(),
        prev.resume_id
    ));
    ev.metadata.insert("kind".into(), "acp.load_wait".into());
    ev.data = Some(serde_json::json!({ "waitMs": wait.as_millis() as u64 }));
    sink.emit(RunEvent::Lifecycle(ev)).await?;
    tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => Err(DriverError::Cancelled),
        () = tokio::time::sleep(wait) => Ok(()),
    }
}

#[async_trait]
impl Driver for AcpDriver {
    fn descriptor(&self) -> Descriptor {
        let recipe = self.recipe();
        let mut d = Descriptor::new(recipe.driver_type, recipe.display_name);
        // The session's cwd and the client file system are the workspace.
        d.workspace.directory = true;
        d.sessions.supports_resume = true;
        policy::table().declare(&mut d.run_policy);
        // `session/new` carries stdio, http and sse servers with headers;
        // nothing else of a server (no bearer variable: its value would
        // travel in a frame; no filters, approvals, strictness).
        d.mcp = McpSupport {
            stdio: true,
            http: true,
            sse: true,
            headers: true,
            ..Default::default()
        };
        d
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        self.config.validate()
    }

    fn stream_capability(&self) -> Option<StreamCapability> {
        Some(StreamCapability {
            native: true,
            token_level: true,
            reasoning: true,
            tool_call_args: false,
            hitl: true,
            observation: parse::OBSERVATION,
        })
    }

    fn session_codec(&self) -> Option<Arc<dyn SessionCodec>> {
        Some(Arc::new(StandardSessionCodec::new(
            self.recipe().driver_type,
        )))
    }

    fn session_config_fingerprint(&self) -> Option<Result<String, FingerprintError>> {
        Some(canonical_session_config_fingerprint(
            "acp/configured-driver/v1;session-codec/v1",
            &self.config,
        ))
    }

    async fn run(
        &self,
        ctx: RunContext,
        req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        let applied = policy::table().apply(&self.config, &req.policy);
        let cfg = &*applied;
        let recipe = cfg.agent.recipe();
        let model = req.model_override.as_deref().or(cfg.model.as_deref());
        if let (ModelSetting::Unsupported, Some(m)) = (recipe.model, model) {
            return Err(DriverError::Other(Box::new(ModelUnsupported {
                driver: recipe.driver_type,
                model: m.to_owned(),
            })));
        }
        let root = match req.workspace.clone().or_else(|| cfg.cwd.clone()) {
            Some(dir) => dir,
            None => std::env::current_dir()?,
        };
        let workspace = client_fs::Workspace::new(&root)?;
        let cmd = self.command(cfg, workspace.root(), model);
        let prev = prev_state(&req);
        if let Some(prev) = prev {
            wait_for_load(recipe, prev, &ctx, sink).await?;
        }
        let plan = Plan {
            cwd: workspace.root().to_string_lossy().into_owned(),
            resume: prev.map(|s| s.resume_id.clone()),
            replay_end: prev
                .filter(|_| recipe.load.late_replay)
                .and_then(load::ReplayEnd::of),
            prompt: req.prompt.clone(),
            servers: req.mcp_servers.iter().map(wire::mcp_server).collect(),
        };
        let parser =
            AcpParser::new(recipe.driver_type, req.streaming).with_transcript(req.new_transcript());
        let terminals = Terminals::new(
            workspace.clone(),
            TerminalEnv {
                policy: cfg.env_policy.clone(),
                allowlist: recipe.env_allowlist,
                env: cfg.env.clone(),
            },
            cfg.terminal_output_limit,
        );
        let (mut session, setup) = Session::new(
            recipe.driver_type,
            parser,
            plan,
            workspace.clone(),
            terminals,
            ctx.cancel.clone(),
        );
        let cli = CliName {
            name: recipe.display_name,
            terminal: parse::TERMINAL,
        };
        let ran = pump::run_duplex(cli, &cmd, &ctx, sink, &mut session, &setup).await;
        // No terminal outlives its run, however it ended.
        session.terminals.close_all().await;
        let finished = ran?;
        let exit = Exit::of(&finished, pump::LineProtocol::terminated(&session.parser));
        let (tail, parsed) = session.parser.finish(&exit);
        for out in tail {
            pump::deliver(out, sink, &mut None, &mut None).await?;
        }
        let root: PathBuf = workspace.root().to_path_buf();
        let mut checkpoint = with_cwd(parsed.checkpoint, Some(&root));
        if let Some(state) = checkpoint.as_mut().and_then(|c| c.state.as_mut()) {
            load::record(state, prev, &parsed.output, SystemTime::now());
        }
        let mut resp = Response {
            output: parsed.output,
            raw: RawStreams {
                stdout: finished.stdout.clone(),
                stderr: finished.stderr.clone(),
                terminal: parsed.terminal,
            },
            transcript: parsed.transcript,
            usage: parsed.usage,
            checkpoint,
            failure: parsed.failure,
            provider: recipe.driver_type.to_owned(),
            model: model.unwrap_or_default().to_owned(),
            ..Default::default()
        };
        finished.exit.apply_to(&mut resp);
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_descriptor_declares_what_the_family_honours() {
        let d = driver(Config::default()).descriptor();
        assert_eq!(d.driver_type, "acp:gemini");
        assert!(d.sessions.supports_resume);
        assert!(d.mcp.stdio && d.mcp.http && d.mcp.sse && d.mcp.headers);
        assert!(!d.mcp.bearer_token_env && !d.mcp.strict && !d.mcp.tool_filter);
        assert!(!d.instructions && !d.skills);
        let custom = driver(Config::for_agent(AcpAgent::Custom {
            program: "x".into(),
            args: vec![],
        }));
        assert_eq!(custom.descriptor().driver_type, "acp");
    }
}
