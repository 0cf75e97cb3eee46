//! Running a stream-json CLI in a process of its own: the [`Session`] is the
//! parser plus the answers to control requests, a
//! [`Duplex`](crate::pump::Duplex) that the shared pump drives (spawn,
//! reading, cancellation, the exit grace); this file sets it up and forms
//! the response. A thread run is served by a resident process instead
//! (`resident.rs`, the same session on [`pump::run_turn`]) when the
//! configuration allows.

use std::path::{Path, PathBuf};
use std::task::{Context, Poll};

use agent_adaptor_driver::{
    CancellationToken, Checkpoint, DecisionResponse, DecisionResult, DriverError, EventSink,
    OperationalEvent, RawStreams, Request, Response, RunContext, StructuredOutput,
    StructuredOutputSource, async_trait,
};
use agent_adaptor_process::{Command, StdinController, StdinMode};
use bytes::Bytes;
use serde_json::Value;

use super::Family;
use super::argv::argv_with;
use super::config::{Config, Transport};
use super::control;
use super::equip::{self, Equipment};
use super::host::HostServer;
use super::parse::{ControlFrame, ExitFacts, Out, Parser};
use super::resident;
use crate::exit::CliName;
use crate::pump::{self, Controller, LineProtocol, write_frame};
use crate::resident::Pool;
use agent_adaptor_driver_kit::scratch::RunScratch;

/// One run of the CLI: resident when eligible, else a process of its own.
pub(crate) async fn run(
    family: &'static Family,
    cfg: &Config,
    pool: &Pool<Option<RunScratch>>,
    ctx: RunContext,
    req: Request,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    // The run policy's flags and transport, for this run only.
    let applied = super::policy::table(family, cfg).apply(cfg, &req.policy);
    let cfg = &*applied;
    if resident::eligible(cfg, &req) {
        return resident::run(family, cfg, pool, ctx, req, sink).await;
    }
    if let Some(id) = resume_id(&req) {
        // This run continues the session in a process of its own: a
        // resident process of the session no longer knows all of it.
        pool.mark_stale(id);
    }
    run_once(family, cfg, ctx, req, sink).await
}

/// The resume id the request continues, if any.
pub(super) fn resume_id(req: &Request) -> Option<&str> {
    req.session
        .as_ref()
        .and_then(|s| s.state.as_ref())
        .map(|s| s.resume_id.as_str())
        .filter(|id| !id.is_empty())
}

/// The working directory of a run.
pub(super) fn workspace(cfg: &Config, req: &Request) -> Option<PathBuf> {
    req.workspace.clone().or_else(|| cfg.cwd.clone())
}

/// A run in a process of its own (one-shot or control transport), driven
/// by the shared pump.
async fn run_once(
    family: &'static Family,
    cfg: &Config,
    ctx: RunContext,
    req: Request,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    let frames = cfg.transport() == Transport::Control || equip::needs_frames(family, &req);
    let cwd = workspace(cfg, &req);
    // The run's files live until the process has exited (end of this fn).
    let equipment = equip::prepare(family, cfg, &req)?;
    let cmd = command(family, cfg, &req, frames, cwd.as_deref(), &equipment);
    let mut session = Session::new(family, cfg, &req, sink, &ctx.cancel);
    session.frames = frames;
    let mut setup = Vec::new();
    if frames {
        setup.push(control::initialize_frame(
            INIT_ID,
            equipment.append_system_prompt.as_deref(),
            !req.host_tools.is_empty(),
        ));
        let prompt = control::user_frame(&req.prompt);
        if resume_id(&req).is_some() {
            // A resumed CLI may replay the session first (CodeBuddy does):
            // the prompt waits for the answer to `initialize`.
            session.gate(prompt);
        } else {
            // The parser sees the answer to `initialize`.
            session.parser.expect_initialize_answer();
            setup.push(prompt);
        }
    }
    let cli = CliName {
        name: family.display_name,
        terminal: "result",
    };
    let finished = pump::run_duplex(cli, &cmd, &ctx, sink, &mut session, &setup).await?;
    let gate = session.flush_gate();
    let (tail, parsed) = session.parser.finish(ExitFacts::of(&finished.exit));
    for out in gate.into_iter().chain(tail) {
        pump::deliver(out, sink, &mut None, &mut None).await?;
    }
    let structured = req
        .native_output_schema()
        .and(parsed.structured_output.clone())
        .map(native_structured_output);
    let mut resp = session.response(
        parsed,
        RawStreams {
            stdout: finished.stdout.clone(),
            stderr: finished.stderr.clone(),
            terminal: None,
        },
        cwd.as_deref(),
    );
    finished.exit.apply_to(&mut resp);
    resp.structured_output = structured;
    Ok(resp)
}

/// What the CLI reported as `result.structured_output` (it validated the
/// tool call against the schema itself; core validates again). A run whose
/// model never called the tool reports none, and core reads the final text.
fn native_structured_output(value: serde_json::Value) -> StructuredOutput {
    StructuredOutput {
        format: "json_schema".into(),
        source: StructuredOutputSource::Native,
        raw_json: value.to_string(),
        value: Some(value),
        valid: true,
        validation_errors: Vec::new(),
        schema_hash: String::new(),
    }
}

/// The request id of the `initialize` the driver sends a CLI that reads
/// stream-json frames.
pub(super) const INIT_ID: &str = "init_1";

/// True for a `control_request` line (the CLI asks the host).
fn is_control_request(line: &[u8]) -> bool {
    crate::json_line::from_line::<serde_json::Value>(line.trim_ascii())
        .is_ok_and(|v| v.get("type").and_then(serde_json::Value::as_str) == Some("control_request"))
}

/// True for the `control_response` line answering request `id`.
fn is_reply_to(line: &[u8], id: &str) -> bool {
    let Ok(v) = crate::json_line::from_line::<serde_json::Value>(line.trim_ascii()) else {
        return false;
    };
    v.get("type").and_then(serde_json::Value::as_str) == Some("control_response")
        && v.pointer("/response/request_id")
            .and_then(serde_json::Value::as_str)
            == Some(id)
}

/// The command for one run: the family's argv (`frames`: stream-json input)
/// and the equipment's flags, the environment, the working directory and
/// the stdin mode.
pub(super) fn command(
    family: &Family,
    cfg: &Config,
    req: &Request,
    frames: bool,
    cwd: Option<&Path>,
    equipment: &Equipment,
) -> Command {
    let mut cmd = Command::new(&cfg.command);
    cmd.args(argv_with(family, cfg, req, frames));
    cmd.args(&equipment.args);
    cfg.env_policy.apply(
        &mut cmd,
        family.env_allowlist,
        family.env_defaults,
        &cfg.env,
    );
    // A bearer token's variable reaches the CLI, which expands it in the
    // MCP config's header; the value is never written anywhere by us.
    cmd.inherit_env(equipment.pass.iter());
    // A dedicated or cloned profile's home wins over a configured one.
    for (key, value) in &equipment.env {
        cmd.env(key, value);
    }
    if let Some(dir) = cwd {
        cmd.cwd(dir);
    }
    cmd.stdin(if frames {
        StdinMode::Pipe
    } else {
        StdinMode::Bytes(Bytes::from(req.prompt.clone().into_bytes()))
    });
    cmd.close_grace(cfg.cancel_close_grace)
        .term_grace(cfg.cancel_term_grace);
    cmd
}

/// The parse of one turn, and what the driver answers on the CLI's behalf:
/// a [`Duplex`](crate::pump::Duplex) for the shared pump. `'s` is the run's
/// sink, which the host tools' answers in flight use.
pub(super) struct Session<'s> {
    family: &'static Family,
    /// The turn's parser.
    pub(super) parser: Parser,
    host_approvals: bool,
    /// The CLI reads stream-json frames (control or resident transport):
    /// cancellation sends it an interrupt.
    pub(super) frames: bool,
    /// Open until the CLI answers `initialize`.
    gate: Option<Gate>,
    /// The run's host tools, an SDK MCP server (`host.rs`).
    host: Option<HostServer<'s>>,
}

/// The wait for the answer to `initialize` ([`INIT_ID`]) before the prompt
/// is sent. A CLI that resumes a session may first print that session's
/// history (CodeBuddy Code replays it, `result` line included): those lines
/// belong to earlier turns, so they stay in the raw capture but are not
/// parsed as this turn (a lifecycle notice counts them).
struct Gate {
    /// The lines printed before the answer.
    skipped: usize,
    /// The prompt, written once the answer came.
    prompt_frame: String,
}

impl<'s> Session<'s> {
    /// A session for `req`: its parser streams when the request does,
    /// records the request's transcript and knows the run's MCP servers;
    /// it serves the run's host tools (`sink` and `cancel` are the run's).
    pub(super) fn new(
        family: &'static Family,
        cfg: &Config,
        req: &Request,
        sink: &'s dyn EventSink,
        cancel: &CancellationToken,
    ) -> Self {
        let streaming = req.streaming;
        Session {
            family,
            parser: Parser::new(family, streaming, streaming)
                .with_transcript(req.new_transcript())
                .with_mcp_servers(equip::mcp_server_names(family, cfg, req)),
            host_approvals: cfg.host_approvals,
            frames: true,
            gate: None,
            host: HostServer::of(family, req, sink, cancel),
        }
    }

    /// Wait for the answer to `initialize` (sent by the caller) before
    /// writing `prompt_frame`, parsing nothing before it.
    pub(super) fn gate(&mut self, prompt_frame: String) {
        self.gate = Some(Gate {
            skipped: 0,
            prompt_frame,
        });
    }

    /// Stdout ended with the gate open: the notice of the lines it skipped,
    /// if any.
    pub(super) fn flush_gate(&mut self) -> Option<Out> {
        let gate = self.gate.take()?;
        self.skipped_notice(gate.skipped)
    }

    fn skipped_notice(&self, skipped: usize) -> Option<Out> {
        (skipped > 0).then(|| {
            Out::Event(crate::exit::notice_event(
                format!(
                    "{} printed {skipped} lines before answering initialize (a resumed session's history); they are not part of this turn",
                    self.family.display_name
                ),
                &[("skipped_lines", skipped.to_string())],
            ))
        })
    }

    /// Answer a `control_request` on `stdin`: `can_use_tool` goes to the
    /// host's decisions (when it may answer) unless it is about a host tool,
    /// `mcp_message` to the host tools' server (answered when ready, see
    /// [`Controller::poll_work`]), anything else is unsupported.
    async fn answer(
        &mut self,
        id: &str,
        method: &str,
        request: &Value,
        stdin: &mut Option<StdinController>,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        let host = self.host.as_mut();
        let frame = if let Some(allow) = host
            .as_ref()
            .filter(|_| method == "can_use_tool")
            .and_then(|h| h.permission(id, request))
        {
            allow
        } else if method == "mcp_message" {
            match host {
                Some(host) => match host.message(id, request) {
                    Some(now) => now,
                    None => return Ok(()),
                },
                None => control::error_frame(id, "this run has no SDK MCP server"),
            }
        } else if method == "can_use_tool" {
            let decision = control::decision_for(self.family, request);
            let decisions = sink.decisions().filter(|_| self.host_approvals);
            let answer = match decisions {
                Some(decisions) => decisions.request_decision(decision).await?,
                // Nobody may answer: deny, as the CLI would without a handler.
                None => DecisionResponse {
                    request_id: decision.request_id,
                    result: DecisionResult::Rejected,
                    choice: String::new(),
                    answer: Default::default(),
                    text: "no host decision channel".into(),
                },
            };
            control::permission_reply(self.family, id, request, &answer)
        } else {
            control::unsupported_reply(id, method)
        };
        write_frame(stdin, &frame).await;
        Ok(())
    }

    /// The response of a finished parse: every layer but the exit facts.
    pub(super) fn response(
        &self,
        parsed: super::Parsed,
        mut raw: RawStreams,
        cwd: Option<&Path>,
    ) -> Response {
        raw.terminal = parsed.terminal;
        Response {
            output: parsed.output,
            raw,
            transcript: parsed.transcript,
            usage: parsed.usage,
            checkpoint: parsed.checkpoint.map(|cp| with_cwd(cp, cwd)),
            failure: parsed.failure,
            provider: self.family.driver_type.to_owned(),
            model: parsed.model,
            ..Default::default()
        }
    }
}

impl LineProtocol for Session<'_> {
    fn line_into(&mut self, raw: &[u8], out: &mut Vec<Out>) {
        let Some(gate) = self.gate.as_mut() else {
            return self.parser.line_into(raw, out);
        };
        if is_control_request(raw) {
            // Not history: the CLI asks now (its SDK MCP client connects
            // before it answers `initialize`) and waits for the answer.
            return self.parser.line_into(raw, out);
        }
        if !is_reply_to(raw, INIT_ID) {
            gate.skipped += 1;
            return;
        }
        let skipped = gate.skipped;
        out.extend(self.skipped_notice(skipped));
        out.push(Out::Control(ControlFrame::Response {
            id: Value::from(INIT_ID),
            result: Ok(Value::Null),
        }));
    }

    fn terminated(&self) -> bool {
        self.parser.terminated()
    }

    fn describe_spawn(&self, spawn: &mut OperationalEvent) {
        let transport = if self.frames { "control" } else { "one_shot" };
        spawn.metadata.insert("transport".into(), transport.into());
    }
}

#[async_trait]
impl Controller for Session<'_> {
    async fn control(
        &mut self,
        frame: ControlFrame,
        stdin: &mut Option<StdinController>,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        match frame {
            ControlFrame::Request { id, method, params } => {
                let id = id.as_str().unwrap_or_default();
                self.answer(id, &method, &params, stdin, sink).await?;
            }
            ControlFrame::Response { id, .. } if self.gate.is_some() && id == INIT_ID => {
                if let Some(gate) = self.gate.take() {
                    write_frame(stdin, &gate.prompt_frame).await;
                }
            }
            ControlFrame::Cancel { id } => {
                if let (Some(host), Some(id)) = (self.host.as_mut(), id.as_str()) {
                    host.withdraw(id);
                }
            }
            ControlFrame::Response { .. } => {}
        }
        Ok(())
    }

    fn poll_work(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match self.host.as_mut() {
            Some(host) => host.poll_work(cx),
            None => Poll::Pending,
        }
    }

    async fn finish_work(
        &mut self,
        stdin: &mut Option<StdinController>,
        _sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        let frames = self
            .host
            .as_mut()
            .map(HostServer::finished)
            .unwrap_or_default();
        for frame in frames {
            write_frame(stdin, &frame).await;
        }
        Ok(())
    }

    async fn interrupt(&mut self, stdin: &mut Option<StdinController>) {
        if self.frames {
            // Best effort (the pump bounds it): ask the CLI to stop the turn.
            write_frame(stdin, &control::interrupt_frame("interrupt_1")).await;
        }
    }
}

/// The checkpoint's state records the working directory (a guard key).
fn with_cwd(mut cp: Checkpoint, cwd: Option<&Path>) -> Checkpoint {
    if let (Some(state), Some(dir)) = (cp.state.as_mut(), cwd) {
        state
            .data
            .insert("cwd".into(), dir.to_string_lossy().into_owned());
    }
    cp
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use agent_adaptor_driver::{Emit, RunEvent, StreamPayload};

    use super::*;
    use crate::streamjson::CLAUDE;

    /// A sink that takes everything and can answer no decision.
    struct Null;

    impl EventSink for Null {
        fn emit(&self, _event: RunEvent) -> Emit<'_> {
            Emit::ready(Ok(()))
        }
        fn emit_stream(&self, _payload: StreamPayload) -> Emit<'_> {
            Emit::ready(Ok(()))
        }
    }

    fn gated() -> Session<'static> {
        let cfg = Config::new(&CLAUDE);
        let mut req = Request::new("r", "p");
        req.streaming = true;
        let mut session = Session::new(&CLAUDE, &cfg, &req, &Null, &CancellationToken::new());
        session.gate(control::user_frame("now"));
        session
    }

    fn lines(session: &mut Session, lines: &[&str]) -> Vec<Out> {
        let mut out = Vec::new();
        for l in lines {
            session.line_into(l.as_bytes(), &mut out);
        }
        out
    }

    const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s1"}"#;
    const RESULT: &str =
        r#"{"type":"result","subtype":"success","session_id":"s1","result":"ok","is_error":false}"#;
    const ANSWER: &str = r#"{"type":"control_response","response":{"subtype":"success","request_id":"init_1","response":{}}}"#;

    fn skipped(out: &Out) -> Option<String> {
        match out {
            Out::Event(RunEvent::Lifecycle(ev)) => ev.metadata.get("skipped_lines").cloned(),
            _ => None,
        }
    }

    #[tokio::test]
    async fn lines_before_the_answer_are_skipped_and_counted_and_a_later_result_is_believed() {
        let mut session = gated();
        // A replayed history, its result line included, is not this turn.
        let out = lines(&mut session, &[INIT, "", RESULT, "not json"]);
        assert!(out.is_empty(), "{out:?}");
        assert!(!LineProtocol::terminated(&session));
        let mut out = lines(&mut session, &[ANSWER]);
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(skipped(&out[0]).as_deref(), Some("4"));
        let Some(Out::Control(frame)) = out.pop() else {
            panic!("no answer frame");
        };
        assert!(matches!(&frame, ControlFrame::Response { id, result: Ok(_) } if id == INIT_ID));
        // The answer opens the gate (the prompt goes to stdin, gone here).
        session.control(frame, &mut None, &Null).await.unwrap();
        assert!(session.flush_gate().is_none());
        let out = lines(&mut session, &[INIT, RESULT]);
        assert!(LineProtocol::terminated(&session), "{out:?}");
        assert!(out.iter().all(|o| skipped(o).is_none()));
    }

    #[test]
    fn equipment_flags_env_and_passed_variables_reach_the_command() {
        use crate::child_env::EnvPolicy;
        let mut cfg = Config::new(&CLAUDE);
        cfg.env_policy = EnvPolicy::only(Vec::<String>::new());
        cfg.env
            .insert("CLAUDE_CONFIG_DIR".into(), "/configured".into());
        let equipment = Equipment {
            args: vec!["--mcp-config".into(), "/run/mcp.json".into()],
            env: vec![("CLAUDE_CONFIG_DIR".into(), "/profile/claude".into())],
            // A bearer token's variable (PATH stands in: the test process
            // has it) passes even a policy that passes nothing.
            pass: vec!["PATH".into()],
            ..Equipment::default()
        };
        let req = Request::new("r", "p");
        let cmd = command(&CLAUDE, &cfg, &req, false, None, &equipment);
        let args: Vec<String> = cmd
            .get_args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(
            args.windows(2)
                .any(|w| w == ["--mcp-config", "/run/mcp.json"])
        );
        let env = cmd.effective_env();
        let get = |k: &str| env.get(std::ffi::OsStr::new(k)).cloned();
        assert_eq!(get("CLAUDE_CONFIG_DIR"), Some("/profile/claude".into()));
        assert_eq!(get("PATH"), std::env::var_os("PATH"));
        let bare = command(&CLAUDE, &cfg, &req, false, None, &Equipment::default());
        assert!(
            !bare
                .effective_env()
                .contains_key(std::ffi::OsStr::new("PATH"))
        );
    }

    #[test]
    fn a_control_request_before_the_answer_is_parsed_not_skipped() {
        let mut session = gated();
        let ask = r#"{"type":"control_request","request_id":"m1","request":{"subtype":"mcp_message","server_name":"agent-adaptor","message":{"jsonrpc":"2.0","id":0,"method":"initialize"}}}"#;
        let out = lines(&mut session, &[INIT, ask]);
        assert!(
            matches!(&out[..], [Out::Control(ControlFrame::Request { method, .. })] if method == "mcp_message"),
            "{out:?}"
        );
        let notice = session.flush_gate();
        assert_eq!(notice.as_ref().and_then(skipped).as_deref(), Some("1"));
    }

    #[tokio::test]
    async fn mcp_messages_are_answered_and_a_withdrawn_call_never() {
        use serde_json::json;
        let req = crate::streamjson::equip::tests::with_host_tool();
        let cfg = Config::new(&CLAUDE);
        let mut session = Session::new(&CLAUDE, &cfg, &req, &Null, &CancellationToken::new());
        let host = session.host.as_mut().unwrap();
        let to = |server: &str, message: Value| json!({"server_name": server, "message": message});
        let body = |frame: &str| -> Value {
            let v: Value = serde_json::from_str(frame).unwrap();
            v["response"].clone()
        };
        // Answered at once: a list, a notification's ack (no id), another
        // server's refusal.
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let now = body(&host.message("a", &to("agent-adaptor", list)).unwrap());
        assert_eq!(now["request_id"], "a");
        assert_eq!(
            now["response"]["mcp_response"]["result"]["tools"][0]["name"],
            "lookup"
        );
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let ack = body(&host.message("b", &to("agent-adaptor", note)).unwrap());
        assert_eq!(
            ack["response"]["mcp_response"],
            json!({"jsonrpc": "2.0", "result": {}})
        );
        let refused = body(&host.message("x", &to("elsewhere", json!({}))).unwrap());
        assert_eq!(refused["subtype"], "error");
        // Calls run in flight; a withdrawn one is cancelled and never answered.
        let call = |id: u64, input: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lookup", "arguments": input}});
        assert!(
            host.message("c", &to("agent-adaptor", call(2, json!({}))))
                .is_none()
        );
        let slow = call(3, json!({"slow": true}));
        assert!(host.message("d", &to("agent-adaptor", slow)).is_none());
        host.withdraw("d");
        // Both finish at once (the withdrawn one is cancelled already).
        std::future::poll_fn(|cx| session.poll_work(cx)).await;
        let frames = session.host.as_mut().unwrap().finished();
        let waker = std::task::Waker::noop();
        assert!(
            session
                .poll_work(&mut Context::from_waker(waker))
                .is_pending(),
            "nothing left in flight"
        );
        assert_eq!(frames.len(), 1, "{frames:?}");
        let answer = body(&frames[0]);
        assert_eq!(answer["request_id"], "c");
        let reply = &answer["response"]["mcp_response"];
        assert_eq!(reply["id"], 2);
        assert_eq!(reply["result"]["structuredContent"], json!({"n": 1}));
        // A host tool's permission is granted without asking (the toolbox
        // asks); another tool's is not the server's.
        let host = session.host.as_ref().unwrap();
        let ask = json!({"subtype": "can_use_tool", "tool_name": "mcp__agent-adaptor__lookup", "input": {"k": 1}});
        let allow = body(&host.permission("p", &ask).unwrap());
        assert_eq!(allow["response"]["behavior"], "allow");
        let bash = json!({"tool_name": "Bash", "input": {}});
        assert!(host.permission("p", &bash).is_none());
    }

    #[test]
    fn the_end_of_stdout_with_the_gate_open_still_gives_the_notice() {
        let mut session = gated();
        assert!(lines(&mut session, &[INIT, RESULT]).is_empty());
        let notice = session.flush_gate();
        assert_eq!(notice.as_ref().and_then(skipped).as_deref(), Some("2"));
        assert!(session.flush_gate().is_none(), "told once");
        // Nothing skipped, nothing told.
        assert!(gated().flush_gate().is_none());
    }
}
