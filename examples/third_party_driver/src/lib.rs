//! An agent-adaptor driver for `toy-cli` (`src/bin/toy-cli.rs`), written as
//! a third party writes one: on the driver SPI (`agent-adaptor-driver`) and
//! the driver kit (`agent-adaptor-driver-kit`) only. `docs/writing-a-driver.md`
//! walks through it.
//!
//! The CLI reads the prompt on stdin and prints one JSON object per line:
//!
//! | line | becomes |
//! |---|---|
//! | `init {session}` | `run.started` (with the session), an init transcript item |
//! | `text {text}` | a delta of the open assistant message (`text.*` payloads) |
//! | `tool {id, name, args}` | the message closed; `tool_call.start`, a tool-call item |
//! | `tool_result {id, output}` | `tool_call.end` + `.result`, a tool-result item |
//! | `result {ok, error}` | the terminal line: `run.finished`, or the failure triple |
//! | anything else | a notice (not JSON) or a custom payload (unknown type) |
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::time::Duration;

use agent_adaptor_driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, FailureCode, ProviderCoords, Request,
    Response, RunContext, RunFailure, StreamCapability, StreamPayload, TranscriptItem,
    TranscriptKind, async_trait,
};
use agent_adaptor_driver_kit::child_env::{EnvPolicy, EnvVars};
use agent_adaptor_driver_kit::one_shot::{
    self, Emitter, Exit, OneShot, OneShotCli, OneShotParser, Parsed,
};
use agent_adaptor_driver_kit::pump::{LineProtocol, Out};
use serde::Deserialize;
use serde_json::Value;

/// One stdout line of `toy-cli`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line {
    Init {
        session: String,
    },
    Text {
        text: String,
    },
    Tool {
        id: String,
        name: String,
        #[serde(default)]
        args: Value,
    },
    ToolResult {
        id: String,
        output: String,
    },
    Result {
        ok: bool,
        #[serde(default)]
        error: Option<String>,
    },
    #[serde(other)]
    Unknown,
}

/// The sans-IO parser of one run: stdout lines in, what they mean out.
#[derive(Debug)]
pub struct ToyParser {
    em: Emitter,
    session: Option<String>,
}

impl ToyParser {
    /// The parser of a run of `req`.
    pub fn new(req: &Request) -> Self {
        ToyParser {
            em: Emitter::for_request("toy", req),
            session: None,
        }
    }

    fn result(&mut self, ok: bool, error: Option<String>, raw: &[u8], out: &mut Vec<Out>) {
        self.em.close_all(out);
        self.em
            .item(out, TranscriptItem::new(TranscriptKind::Result, ""));
        if ok {
            self.em.stream(out, StreamPayload::run_finished(None));
        } else {
            let message = error.unwrap_or_else(|| "toy-cli reported a failure".into());
            self.em
                .fail(out, RunFailure::new(FailureCode::AgentError, message));
        }
        self.em.terminal("result", raw);
    }
}

impl LineProtocol for ToyParser {
    fn line_into(&mut self, raw: &[u8], out: &mut Vec<Out>) {
        let Some((line, raw)) = self.em.decode::<Line>(out, raw) else {
            return;
        };
        match line {
            Line::Init { session } => {
                let source = ProviderCoords {
                    thread_id: Some(session.clone()),
                    ..Default::default()
                };
                self.em.start(out, source);
                let mut item = TranscriptItem::new(TranscriptKind::Init, "");
                item.session_id = Some(session.clone());
                self.em.item(out, item);
                self.session = Some(session);
            }
            Line::Text { text } => self.em.text(out, text),
            Line::Tool { id, name, args } => {
                if !self.em.tool_call(out, &id, &name, args) {
                    self.em.notice(out, "a repeated tool call", raw);
                }
            }
            Line::ToolResult { id, output } => {
                self.em.close_text(out);
                let result = Value::String(output.clone());
                self.em.tool_result(out, &id, output, false, result);
            }
            Line::Result { ok, error } => self.result(ok, error, raw, out),
            Line::Unknown => {
                let value: Value = serde_json::from_slice(raw).unwrap_or(Value::Null);
                let kind = value["type"].as_str().unwrap_or("unknown").to_owned();
                self.em.unknown(out, &kind, value);
            }
        }
    }

    fn terminated(&self) -> bool {
        self.em.ended()
    }
}

impl OneShotParser for ToyParser {
    fn finish(&mut self, exit: &Exit) -> (Vec<Out>, Parsed) {
        let mut out = Vec::new();
        if !self.em.ended() {
            let ignored = Default::default();
            let failure = self.em.missing_terminal(&mut out, "result", exit, &ignored);
            self.em.fail(&mut out, failure);
        }
        let output = self.em.messages().concat();
        // No resume: the driver declares none, so no checkpoint is formed.
        let parsed = self.em.finish(exit, None, output, None, None);
        (out, parsed)
    }
}

/// The driver's configuration (captured at construction).
#[derive(Debug, Clone)]
pub struct Config {
    /// The program (`toy-cli`).
    pub command: PathBuf,
    /// Extra arguments (`--fail`, `--stall` …).
    pub extra_args: Vec<String>,
    /// The working directory when the request names no workspace.
    pub cwd: Option<PathBuf>,
    /// Environment bindings for the CLI.
    pub env: EnvVars,
    /// Which host variables the CLI inherits.
    pub env_policy: EnvPolicy,
    /// On cancel: the wait after stdin closed before SIGTERM, and twice
    /// that before SIGKILL.
    pub cancel_grace: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            command: PathBuf::from("toy-cli"),
            extra_args: Vec::new(),
            cwd: None,
            env: EnvVars::new(),
            env_policy: EnvPolicy::default(),
            cancel_grace: Duration::from_millis(500),
        }
    }
}

/// The toy CLI driver.
#[derive(Debug, Clone)]
pub struct ToyDriver {
    config: Config,
}

/// A toy CLI driver for `config`.
pub fn driver(config: Config) -> ToyDriver {
    ToyDriver { config }
}

const CLI: OneShotCli<'static> = OneShotCli {
    display_name: "toy-cli",
    terminal: "result",
    provider: "toy",
};

#[async_trait]
impl Driver for ToyDriver {
    fn descriptor(&self) -> Descriptor {
        Descriptor::new("toy", "Toy CLI")
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        let c = &self.config;
        one_shot::validate_common("toy", &c.command, &c.env_policy, &c.env, &c.extra_args, &[])
    }

    fn stream_capability(&self) -> Option<StreamCapability> {
        Some(StreamCapability {
            native: true,
            token_level: true,
            ..Default::default()
        })
    }

    async fn run(
        &self,
        ctx: RunContext,
        req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        let c = &self.config;
        let spec = OneShot {
            program: &c.command,
            args: &c.extra_args,
            env: &c.env,
            env_policy: &c.env_policy,
            env_allowlist: &[],
            cwd: c.cwd.as_deref(),
            model: None,
            cancel_grace: c.cancel_grace,
        };
        let mut parser = ToyParser::new(&req);
        one_shot::run_one_shot(CLI, spec, &req, &ctx, sink, &mut parser).await
    }
}
