//! Resident processes for the stream-json family: a thread's turns are
//! written, one user frame each, to one live CLI started with
//! `--input-format stream-json`; a turn ends at the parser's `result` line
//! and the process stays up for the next turn of the same session
//! (`crate::resident` holds the pool and its rules).
//!
//! Per turn:
//!
//! 1. The process filed under the request's resume id is checked out. It is
//!    reused when it is alive, has the run's [`Signature`], was not marked
//!    stale, and still has its stdin; otherwise it is stopped (and waited
//!    for) and a new one is spawned with `--resume`. A new process gets
//!    `initialize` and the prompt only after answering it: what it prints
//!    before (CodeBuddy replays a resumed session's history, `result`
//!    included) is not parsed as the turn.
//! 2. Reuse writes the prompt. A write the pipe refused before accepting any
//!    byte means the process is gone: fall back, once, to a spawn with
//!    `--resume`. A write that failed after some bytes, or a process that
//!    ends during the turn, may have received the prompt: the run fails and
//!    the prompt is never written again.
//! 3. The turn's response is formed from this turn's bytes only
//!    ([`Process::take_capture`]); a successful turn with a valid checkpoint
//!    files the process under the checkpoint's resume id, any other outcome
//!    stops it.
//!
//! A spawn is reported as `RunEvent::Spawn` (`transport` = `resident`);
//! a reuse as a lifecycle notice "reused resident process pid N", so hosts
//! and tests can count spawns. The steps every protocol shares (take,
//! deliver, settle, the notices) are in `crate::resident`.

use std::path::Path;

use agent_adaptor_driver::{
    DriverError, EventSink, RawStreams, Request, Response, RunContext, RunFailure, SessionMode,
};
use agent_adaptor_driver_kit::scratch::RunScratch;
use agent_adaptor_process::Process;

use super::Family;
use super::config::Config;
use super::control;
use super::equip::{self, Equipment};
use super::parse::{ExitFacts, Out};
use super::transport::{INIT_ID, Session, command, resume_id, workspace};
use crate::pump::{self, TurnEnd, write_frame};
use crate::resident::{self, Delivery, Pool, Resident, Signature, Taken};

/// A resident process of this family; its state is the per-run files it
/// was started with (instructions, MCP config), removed when it is gone.
type Proc = Resident<Option<RunScratch>>;

/// Whether `req` is served by a resident process: the feature is on, the run
/// belongs to a thread that continues (or starts) its session, streams, has
/// no output schema and does not ask for a fresh process.
pub(super) fn eligible(cfg: &Config, req: &Request) -> bool {
    cfg.resident
        && req.streaming
        && !req.spawn
        && req.output_schema.is_none()
        && req.session.as_ref().is_some_and(|s| {
            matches!(
                s.mode,
                SessionMode::ContinueOrStart | SessionMode::ContinueOnly
            )
        })
}

/// What one turn works with.
struct Turn<'a> {
    family: &'static Family,
    cfg: &'a Config,
    pool: &'a Pool<Option<RunScratch>>,
    ctx: &'a RunContext,
    req: &'a Request,
    sink: &'a dyn EventSink,
    cwd: Option<&'a Path>,
}

/// One turn on a resident process (reused, or spawned for it).
pub(super) async fn run(
    family: &'static Family,
    cfg: &Config,
    pool: &Pool<Option<RunScratch>>,
    ctx: RunContext,
    req: Request,
    sink: &dyn EventSink,
) -> Result<Response, DriverError> {
    let cwd = workspace(cfg, &req);
    let turn = Turn {
        family,
        cfg,
        pool,
        ctx: &ctx,
        req: &req,
        sink,
        cwd: cwd.as_deref(),
    };
    let signature = turn.signature();
    if let Taken::Reusable(resident) = pool.take(resume_id(&req), &signature, sink).await? {
        let mut resident = *resident;
        resident::notice_reused(sink, &resident).await?;
        let pid = resident.pid();
        match resident::deliver(&mut resident, &control::user_frame(&req.prompt)).await {
            Delivery::Delivered => {
                let session = Session::new(family, cfg, &req, sink, &ctx.cancel);
                return turn.serve(resident, session, true).await;
            }
            Delivery::Refused(error) => {
                // Nothing reached the process: safe to start over, once.
                resident.stop().await;
                resident::notice_fallback(sink, pid, &error, "--resume").await?;
            }
            Delivery::MaybeDelivered(w) => {
                let what = format!(
                    "failed while the prompt was written ({} bytes accepted: {})",
                    w.accepted, w.error
                );
                let failure = resident::lost_failure(family.driver_type, pid, &what);
                let session = Session::new(family, cfg, &req, sink, &ctx.cancel);
                return turn.lose(resident, session, failure).await;
            }
        }
    }
    let (resident, session) = turn.spawn(signature).await?;
    turn.serve(resident, session, false).await
}

impl<'a> Turn<'a> {
    /// The signature of the process this run needs: its command line without
    /// the session (the resume id is the pool key, not part of the process)
    /// and without the per-run file paths, extended with the equipment's
    /// content (instructions, MCP servers, skills, profile).
    fn signature(&self) -> Signature {
        let mut bare = self.req.clone();
        bare.session = None;
        bare.prompt.clear();
        let cmd = command(
            self.family,
            self.cfg,
            &bare,
            true,
            self.cwd,
            &Equipment::default(),
        );
        Signature::of(
            &format!("{}/resident-process/v1", self.family.driver_type),
            &cmd,
        )
        .and(&equip::identity(self.cfg, self.req))
    }

    /// Spawn a resident process for this turn (resuming the request's
    /// session) and send it `initialize`; the session sends the prompt once
    /// the process answered (see [`Session::gate`]).
    async fn spawn(&self, signature: Signature) -> Result<(Proc, Session<'a>), DriverError> {
        let equipment = equip::prepare(self.family, self.cfg, self.req)?;
        let mut cmd = command(self.family, self.cfg, self.req, true, self.cwd, &equipment);
        cmd.close_grace(self.cfg.resident_stop_grace);
        let mut process = Process::spawn(&cmd)?;
        let Equipment {
            scratch,
            append_system_prompt,
            ..
        } = equipment;
        let stdin = process.take_stdin();
        let spawned =
            resident::spawn_event(self.family.display_name, &process, resume_id(self.req));
        // On a refusal the process is dropped, which kills its group.
        self.sink.emit(spawned).await?;
        let mut resident = Resident::new(process, stdin, signature, scratch);
        // A fresh process that cannot take its frames ends without a result
        // line, which the turn reports.
        write_frame(
            &mut resident.stdin,
            &control::initialize_frame(
                INIT_ID,
                append_system_prompt.as_deref(),
                !self.req.host_tools.is_empty(),
            ),
        )
        .await;
        let mut session =
            Session::new(self.family, self.cfg, self.req, self.sink, &self.ctx.cancel);
        session.gate(control::user_frame(&self.req.prompt));
        Ok((resident, session))
    }

    /// Run the turn to its `result` line (or the process's end) and form
    /// the response; keep or stop the process.
    async fn serve(
        &self,
        mut resident: Proc,
        mut session: Session<'_>,
        reused: bool,
    ) -> Result<Response, DriverError> {
        let ended = pump::run_turn(
            &mut resident.process,
            self.ctx,
            self.sink,
            &mut session,
            &mut resident.stdin,
        )
        .await;
        match ended {
            Err(e) => {
                resident.stop().await;
                Err(e)
            }
            Ok(TurnEnd::Terminal) => self.finish(resident, session).await,
            Ok(TurnEnd::Eof) if reused => {
                let failure = resident::lost_failure(
                    self.family.driver_type,
                    resident.pid(),
                    "ended during the turn, after the prompt was delivered",
                );
                self.lose(resident, session, failure).await
            }
            Ok(TurnEnd::Eof) => self.lose_fresh(resident, session).await,
        }
    }

    /// The turn reached its `result` line: respond with this turn's bytes;
    /// keep the process after a success with a valid checkpoint.
    async fn finish(
        &self,
        mut resident: Proc,
        mut session: Session<'_>,
    ) -> Result<Response, DriverError> {
        let captured = match resident.process.take_capture() {
            Ok(c) => c,
            Err(e) => {
                resident.stop().await;
                return Err(e.into());
            }
        };
        let (tail, parsed) = session.parser.finish_resident();
        if let Err(e) = self.deliver(tail).await {
            resident.stop().await;
            return Err(e);
        }
        let raw = RawStreams {
            stdout: captured.stdout,
            stderr: captured.stderr,
            terminal: None,
        };
        let resp = session.response(parsed, raw, self.cwd);
        let keep = resp
            .checkpoint
            .as_ref()
            .filter(|c| c.valid && resp.failure.is_none())
            .and_then(|c| c.state.as_ref())
            .map(|s| s.resume_id.clone());
        self.pool.settle(keep, resident);
        Ok(resp)
    }

    /// A reused process was lost once the prompt may have reached it: fail
    /// the turn with `failure` (never replaying the prompt) and reap it.
    async fn lose(
        &self,
        resident: Proc,
        mut session: Session<'_>,
        failure: RunFailure,
    ) -> Result<Response, DriverError> {
        let aborted = session.parser.abort(failure);
        if let Err(e) = self.deliver(aborted).await {
            resident.stop().await;
            return Err(e);
        }
        self.lose_fresh(resident, session).await
    }

    /// The process ended without a `result` line (perhaps before it
    /// answered `initialize`): reap it and report the turn as the parse saw
    /// it.
    async fn lose_fresh(
        &self,
        resident: Proc,
        mut session: Session<'_>,
    ) -> Result<Response, DriverError> {
        if let Err(e) = self.deliver(session.flush_gate()).await {
            resident.stop().await;
            return Err(e);
        }
        let Resident { process, stdin, .. } = resident;
        drop(stdin);
        let finished = process.shutdown(self.sink).await?;
        let (tail, parsed) = session.parser.finish(ExitFacts::of(&finished.exit));
        self.deliver(tail).await?;
        let raw = RawStreams {
            stdout: finished.stdout.clone(),
            stderr: finished.stderr.clone(),
            terminal: None,
        };
        let mut resp = session.response(parsed, raw, self.cwd);
        finished.exit.apply_to(&mut resp);
        Ok(resp)
    }

    /// Deliver what the parse means outside the pump (no control frames).
    async fn deliver(&self, outs: impl IntoIterator<Item = Out>) -> Result<(), DriverError> {
        for out in outs {
            pump::deliver(out, self.sink, &mut None, &mut None).await?;
        }
        Ok(())
    }
}
