//! Running a stream-json CLI: spawn it through the process helper, feed
//! every stdout line to the parser, deliver what it means to the sink, answer
//! control requests, and form the response.

use agent_adaptor_driver::{
    DecisionResponse, DecisionResult, DriverError, EventSink, OperationalEvent, RawStreams,
    Request, Response, RunContext, RunEvent,
};
use agent_adaptor_process::{Command, Process, StdinController, StdinMode};
use bytes::Bytes;

use super::Family;
use super::config::{Config, Transport, argv};
use super::control;
use super::parse::{ControlFrame, ExitFacts, Out, Parser};

/// One run of the CLI.
pub(crate) async fn run(
    family: &'static Family,
    cfg: &Config,
    ctx: RunContext,
    req: Request,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    let transport = cfg.transport();
    let cwd = req.workspace.clone().or_else(|| cfg.cwd.clone());
    let cmd = command(family, cfg, &req, transport, cwd.as_deref());
    let mut proc = Process::spawn(&cmd)?;
    let mut spawn = OperationalEvent::text(format!("{} started", family.display_name));
    spawn.metadata.insert("pid".into(), proc.pid().to_string());
    spawn
        .metadata
        .insert("program".into(), proc.program().to_owned());
    spawn.metadata.insert(
        "transport".into(),
        match transport {
            Transport::OneShot => "one_shot".into(),
            Transport::Control => "control".into(),
        },
    );
    sink.emit(RunEvent::Spawn(spawn)).await?;

    let mut session = Session {
        family,
        parser: Parser::new(family, req.streaming, req.streaming),
        stdin: proc.take_stdin(),
    };
    if let Err(e) = session.read(&mut proc, &ctx, &req, transport, sink).await {
        // Stop the CLI and its children before reporting; the error wins.
        session.stdin = None;
        let _ = proc.shutdown(sink).await;
        return Err(e);
    }
    session.stdin = None;
    let finished = proc.finish(sink).await?;
    let (tail, parsed) = session.parser.finish(ExitFacts {
        code: finished.exit.code,
        signaled: finished.exit.signal.is_some(),
    });
    for out in tail {
        session.deliver(out, sink).await?;
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
        raw: RawStreams {
            stdout: finished.stdout.clone(),
            stderr: finished.stderr.clone(),
            terminal: parsed.terminal,
        },
        transcript: parsed.transcript,
        usage: parsed.usage,
        checkpoint,
        failure: parsed.failure,
        provider: family.driver_type.to_owned(),
        model: parsed.model,
        ..Default::default()
    };
    finished.exit.apply_to(&mut resp);
    Ok(resp)
}

fn command(
    family: &Family,
    cfg: &Config,
    req: &Request,
    transport: Transport,
    cwd: Option<&std::path::Path>,
) -> Command {
    let mut cmd = Command::new(&cfg.command);
    cmd.args(argv(family, cfg, req));
    if !cfg.inherit_env {
        cmd.env_clear()
            .inherit_env(["PATH", "HOME", "USER", "LANG", "TMPDIR"]);
    }
    for (k, v) in family.env_defaults {
        cmd.env(k, v);
    }
    for (k, v) in &cfg.env {
        cmd.env(k, v);
    }
    if let Some(dir) = cwd {
        cmd.cwd(dir);
    }
    cmd.stdin(match transport {
        Transport::OneShot => StdinMode::Bytes(Bytes::from(req.prompt.clone().into_bytes())),
        Transport::Control => StdinMode::Pipe,
    });
    cmd.close_grace(cfg.cancel_close_grace)
        .term_grace(cfg.cancel_term_grace);
    cmd
}

struct Session {
    family: &'static Family,
    parser: Parser,
    stdin: Option<StdinController>,
}

impl Session {
    /// Read stdout to the end (or until cancelled), delivering everything.
    async fn read(
        &mut self,
        proc: &mut Process,
        ctx: &RunContext,
        req: &Request,
        transport: Transport,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        if transport == Transport::Control {
            self.write(&control::initialize_frame("init_1")).await;
            self.write(&control::user_frame(&req.prompt)).await;
        }
        loop {
            let next = tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => None,
                r = proc.next_line(sink) => Some(r),
            };
            let line = match next {
                None => {
                    if transport == Transport::Control {
                        // Best effort: ask the CLI to stop the turn first.
                        let frame = control::interrupt_frame("interrupt_1");
                        let write = self.write(&frame);
                        let _ = tokio::time::timeout(std::time::Duration::from_millis(200), write)
                            .await;
                    }
                    return Err(DriverError::Cancelled);
                }
                Some(Err(e)) if e.is_cancelled() => return Err(DriverError::Cancelled),
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(None)) => return Ok(()),
                Some(Ok(Some(line))) => line,
            };
            let bytes = match line.as_memory() {
                Some(b) => b.to_vec(),
                None => line.bytes().to_vec()?,
            };
            for out in self.parser.line(&bytes) {
                self.deliver(out, sink).await?;
            }
            if self.parser.terminated() && self.stdin.is_some() {
                // The turn is over: closing stdin lets the CLI exit.
                if let Some(s) = self.stdin.take() {
                    s.close().await;
                }
            }
        }
    }

    async fn write(&mut self, frame: &str) {
        if let Some(s) = self.stdin.as_mut()
            && s.write_line(frame.as_bytes()).await.is_err()
        {
            // The CLI closed its stdin (it exited); what it printed tells why.
            self.stdin = None;
        }
    }

    async fn deliver(&mut self, out: Out, sink: &dyn EventSink) -> Result<(), DriverError> {
        match out {
            Out::Stream(p) => sink.emit_stream(p).await?,
            Out::Event(e) => sink.emit(e).await?,
            Out::Control(ControlFrame::Request {
                request_id,
                request,
            }) => {
                let subtype = request
                    .get("subtype")
                    .and_then(|s| s.as_str())
                    .unwrap_or_default()
                    .to_owned();
                let frame = if subtype == "can_use_tool" {
                    let decision = control::decision_for(self.family, &request);
                    let answer = match sink.decisions() {
                        Some(decisions) => decisions.request_decision(decision).await?,
                        // Nobody can answer: deny, as the CLI would without a handler.
                        None => DecisionResponse {
                            request_id: decision.request_id,
                            result: DecisionResult::Rejected,
                            choice: String::new(),
                            answer: Default::default(),
                            text: "no host decision channel".into(),
                        },
                    };
                    control::permission_reply(self.family, &request_id, &request, &answer)
                } else {
                    control::unsupported_reply(&request_id, &subtype)
                };
                self.write(&frame).await;
            }
            Out::Control(_) => {}
        }
        Ok(())
    }
}
