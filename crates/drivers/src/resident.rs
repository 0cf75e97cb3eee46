//! Resident provider processes: live CLI processes kept between the turns of
//! a provider session, so that turn N+1 of a thread is written to the
//! process that served turn N instead of paying for a new process (and a
//! resumed session) every time.
//!
//! This module owns the *pool* — which process serves which session, when it
//! is retired — and nothing about any protocol: a transport checks a
//! [`Resident`] out, speaks its protocol on it, and checks it back in (or
//! stops it). The rules, shared by every driver that pools:
//!
//! * **Key.** A process is filed under the provider's resume id (the session
//!   it serves); a run that resumes that id finds it. A process that served
//!   a first turn is filed under the id that turn's checkpoint announced.
//! * **Single writer.** [`Pool::checkout`] removes the entry, so one run at a
//!   time owns a process; [`Pool::checkin`] files it again.
//! * **Signature.** A [`Signature`] hashes everything that shapes the
//!   process (program, arguments, working directory, the complete effective
//!   environment); a run whose signature differs must stop the old process
//!   and spawn.
//! * **Staleness.** A run that resumes a session in a process of its own
//!   (`Request::spawn`, or a run the driver cannot serve resident) may change
//!   the session behind the resident's back: [`Pool::mark_stale`] makes the
//!   next checkout retire it. A provider that allows one process per session
//!   at a time retires it at once instead ([`Pool::retire`]).
//! * **Idle eviction.** An entry idle for longer than the pool's timeout is
//!   stopped by a background task (no later run is needed to notice).
//! * **Graceful stop.** Eviction, [`Pool::close`], replacement and
//!   retirement close the process's stdin, wait the process's close grace,
//!   then signal its group (`SIGTERM`, `SIGKILL`): the CLI gets to write its
//!   session files.
//!
//! The steps of a turn every transport shares are here too: [`Pool::take`]
//! (reuse a live process with the same signature, else stop it and say
//! why), [`deliver`] (write the turn's request counting what the pipe
//! accepted: nothing → fall back once to a fresh spawn that resumes the
//! session; something → the request may have been delivered and is never
//! sent again, the run fails with [`lost_failure`]), [`Pool::settle`] (keep
//! a process only after a successful turn with a valid checkpoint), and the
//! events ([`spawn_event`], [`notice_reused`], [`notice_fallback`]). The
//! transports (`streamjson/resident.rs`, `codex/persistent.rs`) add their
//! handshake and parse.
//!
//! Resident processes belong to the tokio runtime that spawned them; use a
//! pooling driver from one runtime.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use agent_adaptor_driver::{
    Emit, EventSink, FailureCode, OperationalEvent, RunEvent, RunFailure, SinkError, StreamPayload,
    canonical_session_config_fingerprint,
};
use agent_adaptor_process::{Command, PartialWrite, Process, StdinController};
use serde::Serialize;
use serde_json::json;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// Report a lifecycle notice with metadata (it lives in [`crate::exit`]).
pub use crate::exit::notice;

/// How long a resident process may stay idle before it is stopped (5 min,
/// as the Go library).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// A hash of everything that shapes a provider process. Two runs may share a
/// process only when their signatures are equal; a signature that could not
/// be computed equals none (not even itself), so it never allows a reuse.
#[derive(Clone)]
pub struct Signature(Option<String>);

impl PartialEq for Signature {
    fn eq(&self, other: &Self) -> bool {
        self.0.is_some() && self.0 == other.0
    }
}

impl Signature {
    /// The signature of the process `cmd` would start, in `domain` (e.g.
    /// `"claude/resident-process/v1"`): the program, every argument, the
    /// working directory and the complete effective environment (values
    /// included, hashed — never logged). Build `cmd` without the per-run
    /// session arguments (`--resume ID`), which the key already covers.
    pub fn of(domain: &str, cmd: &Command) -> Signature {
        let env: serde_json::Map<String, serde_json::Value> = cmd
            .effective_env()
            .into_iter()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned().into(),
                )
            })
            .collect();
        let args: Vec<String> = cmd
            .get_args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let value = json!({
            "program": cmd.get_program().to_string_lossy(),
            "args": args,
            "cwd": cmd.get_cwd().map(|d| d.to_string_lossy().into_owned()),
            "env": env,
        });
        Signature(canonical_session_config_fingerprint(domain, &value).ok())
    }

    /// This signature extended with `extra`: per-process settings a
    /// protocol sends in its handshake instead of argv (e.g. a session's
    /// model).
    pub fn and(self, extra: &impl Serialize) -> Signature {
        let hashed = self.0.and_then(|process| {
            let extra = serde_json::to_value(extra).ok()?;
            let value = json!({ "process": process, "extra": extra });
            canonical_session_config_fingerprint("agent-adaptor/resident-extra/v1", &value).ok()
        });
        Signature(hashed)
    }
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A prefix is enough to tell signatures apart in logs.
        match &self.0 {
            Some(h) => write!(f, "Signature({}…)", h.get(..12).unwrap_or(h)),
            None => f.write_str("Signature(none)"),
        }
    }
}

/// A live provider process owned by a pool or by the run that checked it out.
pub struct Resident<S> {
    /// The process (output is read only while a run pulls it).
    pub process: Process,
    /// Its stdin; `None` once a write failed (the process cannot serve again).
    pub stdin: Option<StdinController>,
    /// What the process was started with.
    pub signature: Signature,
    /// Protocol state the transport keeps with the process.
    pub state: S,
    /// Turns the process has served.
    pub turns: u64,
    /// Set by [`Pool::mark_stale`]: the session changed elsewhere.
    pub stale: bool,
}

impl<S> Resident<S> {
    /// A process just spawned, which has served no turn yet.
    pub fn new(
        process: Process,
        stdin: Option<StdinController>,
        signature: Signature,
        state: S,
    ) -> Self {
        Resident {
            process,
            stdin,
            signature,
            state,
            turns: 0,
            stale: false,
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Stop the process gracefully (close stdin → close grace → `SIGTERM` →
    /// term grace → `SIGKILL`, to the whole group) and reap it. Output it
    /// prints meanwhile is discarded.
    pub async fn stop(self) {
        drop(self.stdin);
        let _ = self.process.shutdown(&Discard).await;
    }
}

impl<S> fmt::Debug for Resident<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resident")
            .field("pid", &self.process.pid())
            .field("signature", &self.signature)
            .field("turns", &self.turns)
            .field("stale", &self.stale)
            .finish_non_exhaustive()
    }
}

/// What [`Pool::take`] found for a run.
#[derive(Debug)]
pub enum Taken<S> {
    /// A live process with the run's signature: write the turn to it.
    Reusable(Box<Resident<S>>),
    /// A process was filed under the key but cannot serve the run; it was
    /// stopped and reaped (and a lifecycle notice says why).
    Replaced {
        /// Its process id.
        pid: u32,
    },
    /// Nothing was filed under the key (or the run has no key).
    Missing,
}

/// How writing a turn's request to a reused process went.
#[derive(Debug)]
pub enum Delivery {
    /// Every byte was written.
    Delivered,
    /// The pipe refused the request before accepting any byte: nothing
    /// reached the process, so a fresh spawn may take the request instead.
    Refused(std::io::Error),
    /// The write failed after the pipe accepted some bytes: the process may
    /// have read (part of) the request, which must never be sent again.
    MaybeDelivered(PartialWrite),
}

/// Write `frame` (one line) to a reused process's stdin, counting what the
/// pipe accepted. A failed write takes the stdin away (the process cannot
/// serve again).
pub async fn deliver<S>(resident: &mut Resident<S>, frame: &str) -> Delivery {
    let Some(stdin) = resident.stdin.as_mut() else {
        return Delivery::Refused(std::io::ErrorKind::BrokenPipe.into());
    };
    match stdin.write_line_counted(frame.as_bytes()).await {
        Ok(()) => Delivery::Delivered,
        Err(w) => {
            resident.stdin = None;
            if w.accepted == 0 {
                Delivery::Refused(w.error)
            } else {
                Delivery::MaybeDelivered(w)
            }
        }
    }
}

/// The notice of a reuse: "reused resident process pid N" (`resident` =
/// `reused`, `pid`, `turn`).
pub async fn notice_reused<S>(
    sink: &dyn EventSink,
    resident: &Resident<S>,
) -> Result<(), SinkError> {
    let pid = resident.pid();
    notice(
        sink,
        format!("reused resident process pid {pid}"),
        &[
            ("pid", pid.to_string()),
            ("resident", "reused".into()),
            ("turn", (resident.turns + 1).to_string()),
        ],
    )
    .await
}

/// The notice of the one fallback after [`Delivery::Refused`].
pub async fn notice_fallback(
    sink: &dyn EventSink,
    pid: u32,
    error: &std::io::Error,
    resume_flag: &str,
) -> Result<(), SinkError> {
    notice(
        sink,
        format!("resident process pid {pid} refused the request ({error}); starting a new one with {resume_flag}"),
        &[("pid", pid.to_string()), ("resident", "fallback".into())],
    )
    .await
}

/// The [`RunEvent::Spawn`] of a resident process (`transport` =
/// `resident`, `persistent`, `pid`, `program`, `resume`).
pub fn spawn_event(name: &str, process: &Process, resume: Option<&str>) -> RunEvent {
    let mut ev = OperationalEvent::text(format!("{name} started (resident)"));
    ev.metadata.insert("pid".into(), process.pid().to_string());
    ev.metadata
        .insert("program".into(), process.program().to_owned());
    ev.metadata.insert("transport".into(), "resident".into());
    ev.metadata.insert("persistent".into(), "true".into());
    if let Some(id) = resume {
        ev.metadata.insert("resume".into(), id.to_owned());
    }
    RunEvent::Spawn(ev)
}

/// The failure of a turn whose reused process was lost after the request
/// may have reached it (`agent_error`, metadata `reason` =
/// `resident_process_lost`, `pid`): `what` says how.
pub fn lost_failure(driver_type: &str, pid: u32, what: &str) -> RunFailure {
    let mut f = RunFailure::new(
        FailureCode::AgentError,
        format!(
            "the resident {driver_type} process (pid {pid}) {what}; the prompt may have been delivered and is not replayed"
        ),
    );
    f.metadata
        .insert("reason".into(), "resident_process_lost".into());
    f.metadata.insert("pid".into(), pid.to_string());
    f
}

/// A pool of resident processes keyed by resume id. Cloning shares the pool.
pub struct Pool<S> {
    shared: Arc<Shared<S>>,
}

impl<S> Clone for Pool<S> {
    fn clone(&self) -> Self {
        Pool {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S> fmt::Debug for Pool<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("idle", &lock(&self.shared.idle).len())
            .field("idle_timeout", &self.shared.idle_timeout)
            .finish()
    }
}

struct Idle<S> {
    resident: Resident<S>,
    since: Instant,
}

struct Shared<S> {
    idle: Mutex<HashMap<String, Idle<S>>>,
    idle_timeout: Duration,
    /// Wakes the reaper: a new entry, or the pool is gone.
    wake: Arc<Notify>,
    reaper: Mutex<Option<JoinHandle<()>>>,
    /// Stops in flight (eviction, replacement), so that `close` can wait
    /// for them too.
    stopping: Mutex<Vec<JoinHandle<()>>>,
}

impl<S: Send + 'static> Pool<S> {
    /// An empty pool whose entries are stopped after `idle_timeout` idle.
    pub fn new(idle_timeout: Duration) -> Self {
        Pool {
            shared: Arc::new(Shared {
                idle: Mutex::new(HashMap::new()),
                idle_timeout,
                wake: Arc::new(Notify::new()),
                reaper: Mutex::new(None),
                stopping: Mutex::new(Vec::new()),
            }),
        }
    }

    /// How long an entry may stay idle.
    pub fn idle_timeout(&self) -> Duration {
        self.shared.idle_timeout
    }

    /// Take the process filed under `key`, if any: the caller is now its
    /// only writer, and must check it in again or stop it.
    pub fn checkout(&self, key: &str) -> Option<Resident<S>> {
        lock(&self.shared.idle).remove(key).map(|e| e.resident)
    }

    /// Check out the process filed under `key` for a run whose process
    /// must have `signature`. It is [`Taken::Reusable`] when it still runs,
    /// has that signature, is not stale and has its stdin; otherwise it is
    /// stopped and awaited (so the session is released before a new process
    /// resumes it), and a lifecycle notice on `sink` says why.
    pub async fn take(
        &self,
        key: Option<&str>,
        signature: &Signature,
        sink: &dyn EventSink,
    ) -> Result<Taken<S>, SinkError> {
        let Some(mut resident) = key.and_then(|k| self.checkout(k)) else {
            return Ok(Taken::Missing);
        };
        let why = if resident.process.try_wait().is_some() {
            "had exited"
        } else if resident.signature != *signature {
            "was started with another configuration"
        } else if resident.stale {
            "does not hold the latest session (it was continued in another process)"
        } else if resident.stdin.is_none() {
            "lost its stdin"
        } else {
            return Ok(Taken::Reusable(Box::new(resident)));
        };
        let pid = resident.pid();
        resident.stop().await;
        notice(
            sink,
            format!("resident process pid {pid} {why}; starting a new one"),
            &[("pid", pid.to_string()), ("resident", "replaced".into())],
        )
        .await?;
        Ok(Taken::Replaced { pid })
    }

    /// After a turn: file `resident` under `key` when the turn may keep it
    /// (`Some`: a success with a valid checkpoint) and it still has its
    /// stdin; otherwise stop it in the background.
    pub fn settle(&self, key: Option<String>, mut resident: Resident<S>) {
        resident.turns += 1;
        match key.filter(|k| !k.is_empty() && resident.stdin.is_some()) {
            Some(key) => self.checkin(key, resident),
            None => self.stop_in_background(resident),
        }
    }

    /// File `resident` under `key` (idle from now). A process already filed
    /// under `key` is replaced and stopped. Starts the idle reaper if it is
    /// not running. Must be called inside a tokio runtime.
    pub fn checkin(&self, key: String, resident: Resident<S>) {
        let replaced = lock(&self.shared.idle).insert(
            key,
            Idle {
                resident,
                since: Instant::now(),
            },
        );
        if let Some(old) = replaced {
            self.stop_in_background(old.resident);
        }
        self.ensure_reaper();
        self.shared.wake.notify_one();
    }

    /// The session `key` was continued outside its resident process: the
    /// next checkout must not reuse the process as it is.
    pub fn mark_stale(&self, key: &str) {
        if let Some(e) = lock(&self.shared.idle).get_mut(key) {
            e.resident.stale = true;
        }
    }

    /// Stop the process filed under `key`, if any, and wait until it is
    /// reaped; returns its pid. For providers that allow one process per
    /// session at a time (Codex: "thread … already has an active writer"),
    /// before a run continues the session in a process of its own.
    pub async fn retire(&self, key: &str) -> Option<u32> {
        let resident = self.checkout(key)?;
        let pid = resident.pid();
        resident.stop().await;
        Some(pid)
    }

    /// Stop `resident` without waiting (tracked: [`close`](Pool::close)
    /// waits for it). Must be called inside a tokio runtime.
    pub fn stop_in_background(&self, resident: Resident<S>) {
        let handle = tokio::spawn(resident.stop());
        let mut stopping = lock(&self.shared.stopping);
        stopping.retain(|h| !h.is_finished());
        stopping.push(handle);
    }

    /// Stop and reap every idle process, and wait for stops in flight.
    /// Idempotent; the pool stays usable. Processes checked out by runs in
    /// progress are not affected.
    pub async fn close(&self) {
        let idle: Vec<Resident<S>> = lock(&self.shared.idle)
            .drain()
            .map(|(_, e)| e.resident)
            .collect();
        let mut handles: Vec<JoinHandle<()>> =
            idle.into_iter().map(|r| tokio::spawn(r.stop())).collect();
        handles.append(&mut lock(&self.shared.stopping));
        for handle in handles {
            let _ = handle.await;
        }
    }

    /// The number of idle processes.
    pub fn idle_len(&self) -> usize {
        lock(&self.shared.idle).len()
    }

    fn ensure_reaper(&self) {
        let mut reaper = lock(&self.shared.reaper);
        if reaper.as_ref().is_some_and(|h| !h.is_finished()) {
            return;
        }
        let weak = Arc::downgrade(&self.shared);
        let wake = Arc::clone(&self.shared.wake);
        *reaper = Some(tokio::spawn(reap(weak, wake)));
    }
}

impl<S> Shared<S> {
    /// Remove the entries idle since before `now - idle_timeout`; return
    /// them and when the next one expires.
    fn take_expired(&self, now: Instant) -> (Vec<Resident<S>>, Option<Instant>) {
        let mut idle = lock(&self.idle);
        let expired: Vec<String> = idle
            .iter()
            .filter(|(_, e)| now.saturating_duration_since(e.since) >= self.idle_timeout)
            .map(|(k, _)| k.clone())
            .collect();
        let gone = expired
            .iter()
            .filter_map(|k| idle.remove(k))
            .map(|e| e.resident)
            .collect();
        let next = idle.values().map(|e| e.since + self.idle_timeout).min();
        (gone, next)
    }
}

/// The idle reaper: sleeps until the next expiry (or a check-in), stops what
/// expired. Holds the pool only weakly, so it ends when the pool is dropped.
async fn reap<S: Send + 'static>(pool: Weak<Shared<S>>, wake: Arc<Notify>) {
    loop {
        let next = {
            let Some(shared) = pool.upgrade() else {
                return;
            };
            let (expired, next) = shared.take_expired(Instant::now());
            if !expired.is_empty() {
                let mut stopping = lock(&shared.stopping);
                stopping.retain(|h| !h.is_finished());
                for r in expired {
                    tracing::debug!(pid = r.pid(), "stopping an idle resident process");
                    stopping.push(tokio::spawn(r.stop()));
                }
            }
            next
        };
        match next {
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at.into()) => {}
                    () = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}

impl<S> Drop for Shared<S> {
    fn drop(&mut self) {
        // Let the reaper see that the pool is gone.
        self.wake.notify_one();
        let idle: Vec<Idle<S>> = match self.idle.get_mut() {
            Ok(idle) => idle.drain().map(|(_, e)| e).collect(),
            Err(poisoned) => poisoned.into_inner().drain().map(|(_, e)| e).collect(),
        };
        if idle.is_empty() {
            return;
        }
        // Stop gracefully when a runtime can run the stops; otherwise (or if
        // the runtime is shutting down) dropping a process kills its group.
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                for e in idle {
                    let Idle { resident, .. } = e;
                    let pid = resident.pid();
                    let stdin = resident.stdin;
                    let process = resident.process;
                    rt.spawn(async move {
                        drop(stdin);
                        tracing::debug!(pid, "stopping a resident process of a dropped pool");
                        let _ = process.shutdown(&Discard).await;
                    });
                }
            }
            Err(_) => drop(idle),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A sink for output nobody will read (a process being stopped between runs).
struct Discard;

impl EventSink for Discard {
    fn emit(&self, _event: RunEvent) -> Emit<'_> {
        Emit::ready(Ok(()))
    }

    fn emit_stream(&self, _payload: StreamPayload) -> Emit<'_> {
        Emit::ready(Ok(()))
    }
}
