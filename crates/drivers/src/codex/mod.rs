//! OpenAI Codex, over two transports that share one turn recorder
//! ([`record`]):
//!
//! * **`codex exec --json`** ([`parse`]) when `Request::streaming` is false:
//!   one JSON event per line and no text deltas, so text and reasoning
//!   lifecycles are coarse (one content frame per completed item);
//!   `turn.completed.usage` is cumulative for the thread, and a resumed turn
//!   reports its own usage by difference with the cumulative usage its
//!   checkpoint carried. exec cannot ask the host anything.
//! * **`codex app-server`** ([`appserver`]) when `Request::streaming` is
//!   true: JSON-RPC over stdio with token-level text and reasoning deltas,
//!   tool items, per-turn usage and approval requests routed to the host.
//!
//! A thread's app-server turns are served by one *resident* server
//! ([`Config::resident`], `resident.rs`): the next turn is a `turn/start`
//! on the server that ran the previous one.
//!
//! [`Config::transport`] can force one. Both produce every response layer
//! (output, complete raw streams with the official terminal, transcript,
//! usage, checkpoint, structured output, failure); the checkpoint's resume id
//! is the thread id, valid only after a successful terminal with exit 0.
//! With `Request::output_schema`, exec gets `--output-schema FILE` and the
//! app-server `turn/start.outputSchema`; the final agent message is the JSON.
//!
//! # Files
//!
//! The roles every CLI driver folder uses, plus what Codex's two transports
//! add:
//!
//! * `mod.rs` — the [`CodexDriver`]: descriptor, run policy, choosing the
//!   transport, and forming the [`Response`] from a parse.
//! * `config.rs`, [`argv`], [`policy`] — the configuration, the command
//!   lines, the run-policy table.
//! * [`wire`] — the serde types of `codex exec --json`; [`parse`] — its
//!   line parser.
//! * `transport.rs` — the one-shot processes: the command, an exec run
//!   (with its `--output-schema` file), an app-server run.
//! * `equip.rs` — what a run equips Codex with (developer instructions, MCP
//!   servers, the profile's `CODEX_HOME`, skills) in each transport's form.
//! * `resident.rs` — the resident app-servers (a thread's turns on one live
//!   server, through `crate::resident`'s pool).
//! * [`record`] — the turn recorder both parsers report facts to: one
//!   implementation of the lifecycle, transcript, usage, checkpoint and
//!   failure rules.
//! * [`appserver`] — the app-server protocol as a folder of its own: its
//!   message types (`protocol`), its line parser (`parse`), the client side
//!   of a run as a pump `Duplex` (`transport`) and whose a notification is
//!   (`scope`).

pub mod appserver;
pub mod argv;
mod config;
mod equip;
pub mod parse;
pub mod policy;
pub(crate) mod probe;
pub mod record;
mod resident;
mod transport;
pub mod wire;

/// The `codex exec --json` parser under its former name.
pub use parse as exec;

use std::path::Path;
use std::sync::Arc;

use agent_adaptor_driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, FailureCode, FingerprintError,
    HostToolChannel, McpSupport, ProfileSupport, RawBytes, RawStreams, Request, Response,
    RunContext, RunFailure, SessionCodec, StandardSessionCodec, StreamCapability, StreamPayload,
    StructuredOutput, StructuredOutputCapability, StructuredOutputSource, async_trait,
    canonical_session_config_fingerprint,
};
use agent_adaptor_process::ExitInfo;
use serde_json::Value;

use crate::resident::Pool;
use appserver::dynamic_tools;
pub use config::{Config, ENV_ALLOWLIST, Transport};
use equip::Equipment;
use record::{Parsed, Totals};

/// What both Codex transports report: the agent's todo list (exec's
/// `todo_list` item, the app-server's `turn/plan/updated`) and its MCP tool
/// calls as capability invocations. Subagents are not declared: neither
/// transport attributes a child agent's items to a scope (see
/// `docs/design.md`, Observations).
pub const OBSERVATION: agent_adaptor_driver::ObservationSupport =
    agent_adaptor_driver::ObservationSupport {
        todos: true,
        capabilities: true,
        subagents: false,
        images: false,
    };

/// exec's stream capability: a formal event protocol, whole items only.
pub const EXEC_CAPABILITY: StreamCapability = StreamCapability {
    native: true,
    token_level: false,
    reasoning: true,
    tool_call_args: false,
    hitl: false,
    observation: OBSERVATION,
};

/// The app-server's stream capability: token-level text and reasoning
/// deltas, approval requests. Tool items arrive with their complete
/// arguments (the protocol has no argument deltas, only output deltas).
pub const APP_SERVER_CAPABILITY: StreamCapability = StreamCapability {
    native: true,
    token_level: true,
    reasoning: true,
    tool_call_args: false,
    hitl: true,
    observation: OBSERVATION,
};

/// `Request::output_schema` is not JSON.
#[derive(Debug, thiserror::Error)]
#[error("the output schema is not valid JSON: {0}")]
pub struct InvalidOutputSchema(#[source] serde_json::Error);

/// A configured Codex driver. It owns a pool of resident app-servers
/// ([`Config::resident`]); clones share it, [`Driver::close_processes`]
/// (`Agent::close`) stops them, dropping the last clone stops them too.
#[derive(Debug, Clone)]
pub struct CodexDriver {
    config: Config,
    pool: Pool<resident::Loaded>,
}

/// A Codex driver.
pub fn driver(config: Config) -> CodexDriver {
    let pool = Pool::new(config.resident_idle_timeout);
    CodexDriver { config, pool }
}

impl CodexDriver {
    /// The captured configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How many resident app-servers are idle in the pool.
    pub fn idle_processes(&self) -> usize {
        self.pool.idle_len()
    }
}

#[async_trait]
impl Driver for CodexDriver {
    fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::new("codex", "OpenAI Codex");
        // The app server starts in, and its thread is rooted at, the workspace.
        d.workspace.directory = true;
        d.sessions.supports_resume = true;
        d.structured_output = StructuredOutputCapability {
            json_schema_native: true,
            // Codex follows an instruction in the prompt as well; core
            // prefers the native mode.
            json_schema_prompt_validate: true,
            works_with_run: true,
            works_with_streaming: true,
            works_with_hitl: self.config.transport != Transport::Exec,
            notes: "exec --output-schema / app-server turn/start.outputSchema".into(),
        };
        // Run policy: exactly what Codex's table translates (approvals
        // asked only through the app-server).
        policy::table(&self.config).declare(&mut d.run_policy);
        d.process.persistent = self.config.resident && self.config.transport != Transport::Exec;
        // developer_instructions (equip.rs).
        d.instructions = true;
        d.mcp = McpSupport {
            stdio: true,
            http: true,
            // Codex speaks stdio and Streamable HTTP only.
            sse: false,
            headers: true,
            bearer_token_env: true,
            tool_filter: true,
            auto_approve: true,
            // The run's servers merge with the user's (equip.rs).
            strict: false,
            required: true,
        };
        // Copied into a dedicated or clone home's skills/ (equip.rs); a
        // native-profile run with skills is refused before launch.
        d.skills = true;
        d.profiles = ProfileSupport {
            dedicated: true,
            clone: true,
        };
        d.host_tools = host_tool_channel(self.config.transport);
        d
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        self.config.validate()
    }

    fn stream_capability(&self) -> Option<StreamCapability> {
        // Describes the transport a streaming request uses.
        Some(if self.config.uses_app_server(true) {
            APP_SERVER_CAPABILITY
        } else {
            EXEC_CAPABILITY
        })
    }

    fn session_codec(&self) -> Option<Arc<dyn SessionCodec>> {
        Some(Arc::new(StandardSessionCodec::new("codex")))
    }

    fn session_config_fingerprint(&self) -> Option<Result<String, FingerprintError>> {
        Some(canonical_session_config_fingerprint(
            "codex/configured-driver/v2;session-codec/v1",
            &self.config,
        ))
    }

    async fn run(
        &self,
        ctx: RunContext,
        req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        if let std::borrow::Cow::Owned(config) =
            policy::table(&self.config).apply(&self.config, &req.policy)
        {
            // The run policy changes this run's configuration only: run it
            // as a driver so configured (sharing the resident pool), with the
            // policy already applied.
            let applied = CodexDriver {
                config,
                pool: self.pool.clone(),
            };
            let mut req = req;
            req.policy = agent_adaptor_driver::RunPolicy::default();
            return applied.run(ctx, req, sink).await;
        }
        // Only a schema core enforces natively goes to Codex; a prompt-
        // validated one is already in the prompt.
        let schema = match req.native_output_schema() {
            Some(s) => Some(
                serde_json::from_str::<Value>(&s.schema_json)
                    .map_err(|e| DriverError::Other(Box::new(InvalidOutputSchema(e))))?,
            ),
            None => None,
        };
        let cwd = req.workspace.clone().or_else(|| self.config.cwd.clone());
        let equip = match Equipment::of(&self.config, &req)? {
            Ok(equip) => equip,
            Err(failure) => return refused(&self.config, &req, sink, failure).await,
        };
        if let Some(failure) = equip::check_resumed_instructions(&req) {
            return refused(&self.config, &req, sink, failure).await;
        }
        let app_server = match self.app_server_for(&req, &equip) {
            Ok(app_server) => app_server,
            Err(failure) => return refused(&self.config, &req, sink, failure).await,
        };
        // Only the app-server declares dynamic tools (exec runs with host
        // tools were refused above).
        let declared = if app_server {
            dynamic_tools::declared(&req)
        } else {
            Vec::new()
        };
        if let Some(failure) = dynamic_tools::check_resumed(&req, &declared) {
            return refused(&self.config, &req, sink, failure).await;
        }
        if resident::eligible(&self.config, &req, app_server) {
            return resident::run(self, &ctx, &req, sink, cwd.as_deref(), schema, &equip).await;
        }
        if let Some(id) = resume_id(&req)
            && let Some(pid) = self.pool.retire(&id).await
        {
            // This run continues the thread in a process of its own, and
            // Codex allows one writer per thread ("thread … already has an
            // active writer"): the thread's resident server goes first.
            crate::resident::notice(
                sink,
                format!("stopped resident app-server pid {pid}: this run resumes its thread in a process of its own"),
                &[("pid", pid.to_string()), ("resident", "retired".into())],
            )
            .await?;
        }
        let (finished, parsed) = if app_server {
            self.run_app_server(&ctx, &req, sink, cwd.as_deref(), schema, &equip)
                .await?
        } else {
            self.run_exec(&ctx, &req, sink, cwd.as_deref(), schema.as_ref(), &equip)
                .await?
        };
        Ok(respond(
            &self.config,
            &req,
            parsed,
            (finished.stdout.clone(), finished.stderr.clone()),
            Some(&finished.exit),
            cwd.as_deref(),
            &declared,
        ))
    }

    async fn close_processes(&self) {
        self.pool.close().await;
    }

    crate::probed::probe_methods!();
}

impl CodexDriver {
    /// Whether `req` runs on the app-server: as the transport and the
    /// request choose, except that equipment too big for exec's command
    /// line goes to the app-server under `Auto` and is refused under a
    /// forced `Exec`.
    fn app_server_for(&self, req: &Request, equip: &Equipment) -> Result<bool, RunFailure> {
        let chosen = self.config.uses_app_server(req.streaming);
        if !chosen && !req.host_tools.is_empty() && self.config.transport == Transport::Auto {
            // Host tools go where their channel is (`host_tool_channel`):
            // under `Auto`, the app-server's dynamic tools.
            return Ok(true);
        }
        if chosen || equip.fits_exec_argv() {
            return Ok(chosen);
        }
        if self.config.transport == Transport::Exec {
            return Err(RunFailure::new(
                FailureCode::PolicyError,
                format!(
                    "the run's instructions and MCP servers exceed {} bytes, more than codex exec \
                     can take on its command line; use the app-server transport",
                    equip::EXEC_ARGV_BUDGET
                ),
            ));
        }
        Ok(true)
    }
}

/// How the Codex driver delivers host tools with `transport`: as the
/// app-server's dynamic tools (`appserver/dynamic_tools.rs`); `Auto` runs a
/// request with host tools on the app-server whatever its streaming flag. A
/// driver forced onto `codex exec` serves them on the run's loopback MCP
/// server (`transport.rs`, `equip::host_tools_override`).
pub fn host_tool_channel(transport: Transport) -> HostToolChannel {
    match transport {
        Transport::Auto | Transport::AppServer => HostToolChannel::DynamicTools,
        Transport::Exec => HostToolChannel::LoopbackMcp,
    }
}

/// A run refused before anything started. A streaming request still gets
/// its run lifecycle: `run.started`, then `run.error` with the failure.
async fn refused(
    cfg: &Config,
    req: &Request,
    sink: &dyn EventSink,
    failure: RunFailure,
) -> Result<Response, DriverError> {
    if req.streaming {
        sink.emit_stream(StreamPayload::run_started()).await?;
        sink.emit_stream(StreamPayload::run_error(failure.clone()))
            .await?;
    }
    Ok(Response {
        failure: Some(failure),
        provider: "codex".into(),
        model: req
            .model_override
            .clone()
            .or_else(|| cfg.model.clone())
            .unwrap_or_default(),
        ..Default::default()
    })
}

/// The thread's cumulative usage the resumed checkpoint carried.
fn previous_totals(req: &Request) -> Option<Totals> {
    req.session
        .as_ref()
        .and_then(|s| s.state.as_ref())
        .and_then(|s| Totals::from_state(&s.data))
}

/// Every layer of the response, from one parse.
///
/// `raw` is the run's stdout and stderr; `exit` how the process ended, when
/// it did (a resident server's turn leaves it running: `None`); `declared`
/// the dynamic tools the run declared or, resuming, kept.
fn respond(
    cfg: &Config,
    req: &Request,
    parsed: Parsed,
    raw: (RawBytes, RawBytes),
    exit: Option<&ExitInfo>,
    cwd: Option<&Path>,
    declared: &[Value],
) -> Response {
    let checkpoint = parsed.checkpoint.map(|mut cp| {
        if let (Some(state), Some(dir)) = (cp.state.as_mut(), cwd) {
            state
                .data
                .insert("cwd".into(), dir.to_string_lossy().into_owned());
        }
        // The instructions the thread started with stay its instructions
        // (equip::check_resumed_instructions).
        if let (Some(state), Some(mark)) = (cp.state.as_mut(), equip::instructions_mark(req)) {
            state.data.insert(equip::INSTRUCTIONS_KEY.into(), mark);
        }
        // So are its dynamic tools (appserver/dynamic_tools.rs).
        if let (Some(state), Some(mark)) = (cp.state.as_mut(), dynamic_tools::mark(declared)) {
            state.data.insert(dynamic_tools::MARK_KEY.into(), mark);
        }
        cp
    });
    let structured_output = req
        .native_output_schema()
        .filter(|_| parsed.failure.is_none())
        .map(|_| structured(&parsed.last_message));
    let mut resp = Response {
        output: parsed.output,
        summary: String::new(),
        raw: RawStreams {
            stdout: raw.0,
            stderr: raw.1,
            terminal: parsed.terminal,
        },
        transcript: parsed.transcript,
        usage: parsed.usage,
        checkpoint,
        structured_output,
        failure: parsed.failure,
        provider: "codex".into(),
        model: req
            .model_override
            .clone()
            .or_else(|| cfg.model.clone())
            .unwrap_or_default(),
        ..Default::default()
    };
    if let Some(exit) = exit {
        exit.apply_to(&mut resp);
    }
    resp
}

/// The structured output of a schema run: the final agent message, which
/// Codex's strict `json_schema` mode makes the JSON. The driver checks that
/// it parses; validation against the schema is the provider's (strict
/// mode) and core's.
fn structured(last_message: &str) -> StructuredOutput {
    let parsed = serde_json::from_str::<Value>(last_message.trim());
    StructuredOutput {
        format: "json_schema".into(),
        source: StructuredOutputSource::Native,
        raw_json: last_message.to_owned(),
        valid: parsed.is_ok(),
        validation_errors: parsed
            .as_ref()
            .err()
            .map(|e| vec![format!("the final message is not JSON: {e}")])
            .unwrap_or_default(),
        value: parsed.ok(),
        schema_hash: String::new(),
    }
}

/// The checkpoint's thread, when the request resumes one.
fn resume_id(req: &Request) -> Option<String> {
    req.session
        .as_ref()
        .and_then(|s| s.state.as_ref())
        .map(|s| s.resume_id.clone())
        .filter(|id| !id.is_empty())
}
