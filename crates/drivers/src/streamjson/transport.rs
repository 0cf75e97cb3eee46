//! Running a stream-json CLI: spawn it through the process helper, feed
//! every stdout line to the parser, deliver what it means to the sink, answer
//! control requests, and form the response. A thread run is served by a
//! resident process instead (`resident.rs`) when the configuration allows.

use std::path::{Path, PathBuf};

use agent_adaptor_driver::{
    Batch, Checkpoint, DecisionResponse, DecisionResult, DriverError, EventSink, OperationalEvent,
    RawStreams, Request, Response, RunContext, RunEvent, StructuredOutput, StructuredOutputSource,
    Transcript,
};
use agent_adaptor_process::{Command, Line, Process, StdinController, StdinMode};
use bytes::Bytes;

use super::Family;
use super::config::{Config, Transport, argv_with};
use super::control;
use super::parse::{ControlFrame, ExitFacts, Out, Parser};
use super::resident;
use crate::exit::{CliName, notice_if_stopped};
use crate::pump::Batches;
use crate::resident::Pool;

/// One run of the CLI: resident when eligible, else a process of its own.
pub(crate) async fn run(
    family: &'static Family,
    cfg: &Config,
    pool: &Pool<()>,
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

/// A run in a process of its own (one-shot or control transport).
async fn run_once(
    family: &'static Family,
    cfg: &Config,
    ctx: RunContext,
    req: Request,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    let transport = cfg.transport();
    let frames = transport == Transport::Control;
    let cwd = workspace(cfg, &req);
    let cmd = command(family, cfg, &req, frames, cwd.as_deref());
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

    let mut session = Session::new(family, cfg, req.streaming, req.new_transcript());
    if frames && resume_id(&req).is_none() {
        // `read` sends `initialize` and leaves its answer to the parser.
        session.parser.expect_initialize_answer();
    }
    let mut stdin = proc.take_stdin();
    if let Err(e) = read(
        &mut session,
        &mut proc,
        &mut stdin,
        &ctx,
        &req,
        frames,
        sink,
    )
    .await
    {
        // Stop the CLI and its children before reporting; the error wins.
        drop(stdin);
        let _ = proc.shutdown(sink).await;
        return Err(e);
    }
    drop(stdin);
    let finished = proc.finish(sink).await?;
    let cli = CliName {
        name: family.display_name,
        terminal: "result",
    };
    let terminated = session.parser.terminated();
    notice_if_stopped(sink, cli, terminated, cmd.get_exit_grace(), &finished).await?;
    let (tail, parsed) = session.parser.finish(ExitFacts::of(&finished.exit));
    for out in tail {
        session.deliver(out, &mut None, sink).await?;
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

/// Read stdout to the end (or until cancelled), delivering everything; with
/// stdin `frames`, send the prompt as frames first and close stdin once the
/// turn's `result` arrived.
async fn read(
    session: &mut Session,
    proc: &mut Process,
    stdin: &mut Option<StdinController>,
    ctx: &RunContext,
    req: &Request,
    frames: bool,
    sink: &dyn EventSink,
) -> Result<(), DriverError> {
    if frames {
        write(stdin, &control::initialize_frame(INIT_ID)).await;
        if resume_id(req).is_some() {
            // A resumed CLI may replay the session first (CodeBuddy does).
            await_initialized(session.family, proc, stdin, ctx, sink).await?;
        }
        write(stdin, &control::user_frame(&req.prompt)).await;
    }
    let mut batch = Batches::new(sink);
    let mut over = false;
    loop {
        let next = batch.next(next_line(proc, stdin, ctx, frames, sink)).await;
        let Some(line) = next? else {
            return Ok(());
        };
        batch.open();
        session.line(&line, stdin, sink).await?;
        if session.parser.terminated() && !over {
            // The turn is over: closing stdin lets the CLI exit, and it has
            // the exit grace to do so before it is stopped.
            over = true;
            proc.expect_exit();
            if let Some(s) = stdin.take() {
                batch.close();
                s.close().await;
            }
        }
    }
}

/// The request id of the `initialize` the driver sends a CLI that reads
/// stream-json frames.
pub(super) const INIT_ID: &str = "init_1";

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

/// Read until the CLI answers `initialize` ([`INIT_ID`]), before the prompt
/// is sent. A CLI that resumes a session may first print that session's
/// history (CodeBuddy Code replays it, `result` line included): those lines
/// belong to earlier turns, so they stay in the raw capture but are not
/// parsed as this turn (a lifecycle notice counts them). Returns at end of
/// file too (the turn then reports the missing `result`).
pub(super) async fn await_initialized(
    family: &Family,
    proc: &mut Process,
    stdin: &mut Option<StdinController>,
    ctx: &RunContext,
    sink: &dyn EventSink,
) -> Result<(), DriverError> {
    let mut skipped = 0usize;
    while let Some(line) = next_line(proc, stdin, ctx, true, sink).await? {
        let bytes = match line.as_memory() {
            Some(b) => b.to_vec(),
            None => line.bytes().to_vec()?,
        };
        if is_reply_to(&bytes, INIT_ID) {
            break;
        }
        skipped += 1;
    }
    if skipped > 0 {
        crate::resident::notice(
            sink,
            format!(
                "{} printed {skipped} lines before answering initialize (a resumed session's history); they are not part of this turn",
                family.display_name
            ),
            &[("skipped_lines", skipped.to_string())],
        )
        .await?;
    }
    Ok(())
}

/// The next stdout line, or `None` at end of file. On cancellation the turn
/// is interrupted first (best effort) when the CLI reads frames.
pub(super) async fn next_line(
    proc: &mut Process,
    stdin: &mut Option<StdinController>,
    ctx: &RunContext,
    frames: bool,
    sink: &dyn EventSink,
) -> Result<Option<Line>, DriverError> {
    let next = tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => None,
        r = proc.next_line(sink) => Some(r),
    };
    match next {
        None => {
            if frames {
                // Best effort: ask the CLI to stop the turn first.
                let frame = control::interrupt_frame("interrupt_1");
                let _ = tokio::time::timeout(
                    std::time::Duration::from_millis(200),
                    write(stdin, &frame),
                )
                .await;
            }
            Err(DriverError::Cancelled)
        }
        Some(Err(e)) if e.is_cancelled() => Err(DriverError::Cancelled),
        Some(Err(e)) => Err(e.into()),
        Some(Ok(line)) => Ok(line),
    }
}

/// The command for one run: the family's argv (`frames`: stream-json input),
/// the environment, the working directory and the stdin mode.
pub(super) fn command(
    family: &Family,
    cfg: &Config,
    req: &Request,
    frames: bool,
    cwd: Option<&Path>,
) -> Command {
    let mut cmd = Command::new(&cfg.command);
    cmd.args(argv_with(family, cfg, req, frames));
    cfg.env_policy.apply(
        &mut cmd,
        family.env_allowlist,
        family.env_defaults,
        &cfg.env,
    );
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

/// Write one frame; a failed write (the CLI exited) drops the controller.
pub(super) async fn write(stdin: &mut Option<StdinController>, frame: &str) {
    if let Some(s) = stdin.as_mut()
        && s.write_line(frame.as_bytes()).await.is_err()
    {
        // The CLI closed its stdin (it exited); what it printed tells why.
        *stdin = None;
    }
}

/// The parse of one turn, and what the driver answers on the CLI's behalf.
pub(super) struct Session {
    family: &'static Family,
    /// The turn's parser.
    pub(super) parser: Parser,
    host_approvals: bool,
    /// The buffer each line is parsed into, reused from line to line.
    outs: Vec<Out>,
}

impl Session {
    /// A session whose parser records its items into `transcript`.
    pub(super) fn new(
        family: &'static Family,
        cfg: &Config,
        streaming: bool,
        transcript: Transcript,
    ) -> Self {
        Session {
            family,
            parser: Parser::new(family, streaming, streaming).with_transcript(transcript),
            host_approvals: cfg.host_approvals,
            outs: Vec::new(),
        }
    }

    /// Parse one stdout line and deliver what it means.
    pub(super) async fn line(
        &mut self,
        line: &Line,
        stdin: &mut Option<StdinController>,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        // A line in memory is parsed where it is; a spilled one is read back.
        let spilled;
        let bytes = match line.as_memory() {
            Some(b) => b,
            None => {
                spilled = line.bytes().to_vec()?;
                &spilled[..]
            }
        };
        // One batch per line: the consumer is woken once for the line.
        let _batch = Batch::new(sink);
        let mut outs = std::mem::take(&mut self.outs);
        outs.clear();
        self.parser.line_into(bytes, &mut outs);
        for out in outs.drain(..) {
            self.deliver(out, stdin, sink).await?;
        }
        self.outs = outs;
        Ok(())
    }

    /// Deliver one parsed output; control requests are answered on `stdin`.
    pub(super) async fn deliver(
        &mut self,
        out: Out,
        stdin: &mut Option<StdinController>,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
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
                    control::permission_reply(self.family, &request_id, &request, &answer)
                } else {
                    control::unsupported_reply(&request_id, &subtype)
                };
                write(stdin, &frame).await;
            }
            Out::Control(_) => {}
        }
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

/// The checkpoint's state records the working directory (a guard key).
fn with_cwd(mut cp: Checkpoint, cwd: Option<&Path>) -> Checkpoint {
    if let (Some(state), Some(dir)) = (cp.state.as_mut(), cwd) {
        state
            .data
            .insert("cwd".into(), dir.to_string_lossy().into_owned());
    }
    cp
}
