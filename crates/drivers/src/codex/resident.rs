//! Resident app-servers: a thread's turns run on one live `codex
//! app-server`. The first turn spawns it and does the whole handshake
//! (`initialize` → `initialized` → `thread/start` | `thread/resume` →
//! `turn/start`); the turn ends at `turn/completed` and the server stays up
//! with the thread loaded, so the next turn of the thread is only a
//! `turn/start` (request ids go on from the same client). The pool and the
//! rules every protocol shares (key, signature, single writer, eviction,
//! never replaying a request that may have been delivered) are
//! `crate::resident`; the stream-json family does the same in
//! `streamjson/resident.rs`.
//!
//! The signature covers the app-server command line and environment (the
//! profile's `CODEX_HOME` included) *and* the thread parameters the
//! handshake sent (working directory, approval policy, sandbox, model,
//! developer instructions, MCP servers, the dynamic tools) and the skills'
//! fingerprints: a loaded thread keeps those, so a run that needs others
//! gets a new server (which resumes the thread with them).
//!
//! Host tools are per run: a reused server answers the thread's
//! `item/tool/call`s with the *current* run's toolbox (the session of each
//! turn carries it), never an earlier run's. Their declarations are the
//! thread's, fixed at its start (`appserver/dynamic_tools.rs`): a resumed
//! run with other tools is refused before it gets here, and the declared
//! tools are in the signature too.
//!
//! Codex allows one writer per thread across processes: a server's
//! `thread/resume` of a thread another server has loaded is rejected
//! ("thread … already has an active writer"). Every path that starts a new
//! server for a thread therefore stops the old one first and waits for it:
//! replacement here, and `Pool::retire` before a run in a process of its
//! own (`with_spawn`, exec) in `codex/mod.rs`.

use std::path::Path;

use agent_adaptor_driver::{DriverError, EventSink, Request, Response, RunContext, SessionMode};
use agent_adaptor_driver_kit::host_calls::HostCalls;
use agent_adaptor_process::{Process, StdinMode};
use serde_json::Value;

use super::appserver::protocol::Client;
use super::appserver::transport::{Session, ToolCallKey};
use super::appserver::{AppServerParser, dynamic_tools};
use super::equip::Equipment;
use super::{CodexDriver, Config, argv, previous_totals, respond, resume_id};
use crate::pump::{self, TurnEnd, write_frame};
use crate::resident::{self, Delivery, Resident, Signature, Taken};

/// What a resident app-server keeps between turns.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// The JSON-RPC client (its next request id).
    client: Client,
    /// The thread the server has loaded.
    thread: String,
}

/// A resident app-server.
type Proc = Resident<Loaded>;

/// Whether `req` runs on a resident app-server: the feature is on, the run
/// uses the app-server (`app_server`), belongs to a thread that continues
/// (or starts) its session, and does not ask for a fresh process.
pub(super) fn eligible(cfg: &Config, req: &Request, app_server: bool) -> bool {
    cfg.resident
        && app_server
        && !req.spawn
        && req.session.as_ref().is_some_and(|s| {
            matches!(
                s.mode,
                SessionMode::ContinueOrStart | SessionMode::ContinueOnly
            )
        })
}

/// What one turn works with.
struct Turn<'a> {
    driver: &'a CodexDriver,
    ctx: &'a RunContext,
    req: &'a Request,
    sink: &'a dyn EventSink,
    cwd: Option<&'a Path>,
    equip: &'a Equipment,
}

/// One turn on a resident app-server (reused, or spawned for it).
pub(super) async fn run(
    driver: &CodexDriver,
    ctx: &RunContext,
    req: &Request,
    sink: &dyn EventSink,
    cwd: Option<&Path>,
    schema: Option<Value>,
    equip: &Equipment,
) -> Result<Response, DriverError> {
    let turn = Turn {
        driver,
        ctx,
        req,
        sink,
        cwd,
        equip,
    };
    let plan = driver.plan(req, cwd, schema, equip);
    // The thread parameters carry the instructions and MCP servers, the
    // command the profile's home; the skills in that home count too.
    let signature = Signature::of("codex/resident-app-server/v1", &turn.command()).and(&(
        &plan.thread,
        &plan.dynamic_tools,
        &equip.skills,
    ));
    let key = plan.resume.clone();
    if let Taken::Reusable(server) = driver.pool.take(key.as_deref(), &signature, sink).await? {
        let mut server = *server;
        resident::notice_reused(sink, &server).await?;
        let pid = server.pid();
        let parser = AppServerParser::new(req.streaming, true, previous_totals(req))
            .with_transcript(req.new_transcript());
        let client = std::mem::take(&mut server.state.client);
        let (mut session, opened, frame) = Session::resident_turn(
            parser,
            plan.clone(),
            client,
            &server.state.thread,
            turn.calls(),
        );
        for out in opened {
            pump::deliver(out, sink, &mut None, &mut None).await?;
        }
        match resident::deliver(&mut server, &frame).await {
            Delivery::Delivered => return turn.serve(server, session, true).await,
            Delivery::Refused(error) => {
                // Nothing reached the server: safe to start over, once.
                server.stop().await;
                resident::notice_fallback(sink, pid, &error, "thread/resume").await?;
            }
            Delivery::MaybeDelivered(w) => {
                let what = format!(
                    "failed while turn/start was written ({} bytes accepted: {})",
                    w.accepted, w.error
                );
                let failure = resident::lost_failure("codex", pid, &what);
                let out = session.parser.abort(failure);
                return turn.lose(server, session, out).await;
            }
        }
    }
    let parser = AppServerParser::new(req.streaming, plan.resume.is_some(), previous_totals(req))
        .with_transcript(req.new_transcript());
    let (session, setup) = Session::new(parser, plan, turn.calls());
    let server = turn.spawn(signature, &setup).await?;
    turn.serve(server, session, false).await
}

impl<'a> Turn<'a> {
    /// The run's host tool calls: served by this run's toolbox.
    fn calls(&self) -> HostCalls<'a, ToolCallKey> {
        HostCalls::new(
            self.req.host_tools.clone(),
            self.sink,
            self.ctx.cancel.clone(),
        )
    }

    /// The `codex app-server` command.
    fn command(&self) -> agent_adaptor_process::Command {
        let cfg = &self.driver.config;
        let mut cmd = self.driver.command(
            argv::app_server_argv(cfg),
            self.cwd,
            StdinMode::Pipe,
            self.equip,
        );
        cmd.close_grace(cfg.resident_stop_grace);
        cmd
    }

    /// Spawn a server for this turn and send it the first frames of the
    /// handshake (the session sends the rest as the answers come).
    async fn spawn(&self, signature: Signature, setup: &[String]) -> Result<Proc, DriverError> {
        let mut process = Process::spawn(&self.command())?;
        let stdin = process.take_stdin();
        let resume = resume_id(self.req);
        let spawned = resident::spawn_event("Codex app-server", &process, resume.as_deref());
        // On a refusal the process is dropped, which kills its group.
        self.sink.emit(spawned).await?;
        let mut server = Resident::new(process, stdin, signature, Loaded::default());
        for frame in setup {
            write_frame(&mut server.stdin, frame).await;
        }
        Ok(server)
    }

    /// Run the turn to `turn/completed` (or the server's end) and form the
    /// response; keep the server after a completed turn with a valid
    /// checkpoint.
    async fn serve(
        &self,
        mut server: Proc,
        mut session: Session<'_>,
        reused: bool,
    ) -> Result<Response, DriverError> {
        let ended = pump::run_turn(
            &mut server.process,
            self.ctx,
            self.sink,
            &mut session,
            &mut server.stdin,
        )
        .await;
        match ended {
            Err(e) => {
                server.stop().await;
                Err(e)
            }
            Ok(TurnEnd::Terminal) => self.finish(server, session).await,
            Ok(TurnEnd::Eof) if reused => {
                let failure = resident::lost_failure(
                    "codex",
                    server.pid(),
                    "ended during the turn, after turn/start was delivered",
                );
                let out = session.parser.abort(failure);
                self.lose(server, session, out).await
            }
            Ok(TurnEnd::Eof) => self.lose(server, session, Vec::new()).await,
        }
    }

    /// The turn completed: respond with this turn's bytes; file the server
    /// under the thread when the checkpoint is valid.
    async fn finish(
        &self,
        mut server: Proc,
        mut session: Session<'_>,
    ) -> Result<Response, DriverError> {
        let captured = match server.process.take_capture() {
            Ok(c) => c,
            Err(e) => {
                server.stop().await;
                return Err(e.into());
            }
        };
        let (tail, parsed) = session.parser.finish_resident();
        for out in tail {
            if let Err(e) = pump::deliver(out, self.sink, &mut None, &mut None).await {
                server.stop().await;
                return Err(e);
            }
        }
        let resp = respond(
            &self.driver.config,
            self.req,
            parsed,
            (captured.stdout, captured.stderr),
            None,
            self.cwd,
            &dynamic_tools::declared(self.req),
        );
        let keep = resp
            .checkpoint
            .as_ref()
            .filter(|c| c.valid && resp.failure.is_none())
            .and_then(|c| c.state.as_ref())
            .map(|s| s.resume_id.clone());
        server.state = Loaded {
            client: session.into_client(),
            thread: keep.clone().unwrap_or_default(),
        };
        self.driver.pool.settle(keep, server);
        Ok(resp)
    }

    /// The server ended (or was lost) before `turn/completed`: deliver
    /// `aborted` (the failure that ended the parse, if the transport ended
    /// it), reap the server and report the turn as the parse saw it.
    async fn lose(
        &self,
        server: Proc,
        mut session: Session<'_>,
        aborted: Vec<pump::Out>,
    ) -> Result<Response, DriverError> {
        for out in aborted {
            if let Err(e) = pump::deliver(out, self.sink, &mut None, &mut None).await {
                server.stop().await;
                return Err(e);
            }
        }
        let Resident { process, stdin, .. } = server;
        drop(stdin);
        let finished = process.shutdown(self.sink).await?;
        let (tail, parsed) = session
            .parser
            .finish(crate::exit::ExitFacts::of(&finished.exit));
        for out in tail {
            pump::deliver(out, self.sink, &mut None, &mut None).await?;
        }
        Ok(respond(
            &self.driver.config,
            self.req,
            parsed,
            (finished.stdout.clone(), finished.stderr.clone()),
            Some(&finished.exit),
            self.cwd,
            &dynamic_tools::declared(self.req),
        ))
    }
}
