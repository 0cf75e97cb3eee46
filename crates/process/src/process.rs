//! [`Process`]: a running child, pulled by the caller.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use agent_adaptor_driver::{EventSink, RawBytes, RunEvent, SinkError};
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, ChildStderr, ChildStdout};
use tokio::time::Sleep;

use crate::capture::Capture;
use crate::command::{Command, StdinMode};
use crate::error::ProcessError;
use crate::finished::Finished;
use crate::ledger::Tracked;
use crate::lines::{Line, LineSplitter};
use crate::shutdown::{Lifecycle, Step};
use crate::spawn::spawn;
use crate::stdin::{SharedStdin, StdinController, StdinFeed};

/// Bytes asked for per read (a pipe hands out at most its buffer, 64 KiB).
const READ_CHUNK: usize = 64 * 1024;

/// A running child process in its own process group.
///
/// Reading is **pull-based**: output moves only while the caller awaits
/// [`next_line`](Process::next_line), [`finish`](Process::finish) or
/// [`shutdown`](Process::shutdown), each of which reads stdout and stderr
/// concurrently, appends every byte to the raw capture, emits every chunk to
/// the borrowed sink as [`RunEvent::Chunk`], writes pending
/// [`StdinMode::Bytes`] input, watches for the child's exit and runs the
/// timeout and shutdown clock. No task is spawned, so nothing outlives the
/// call or holds the sink.
///
/// Dropping a `Process` that was not finished sends `SIGKILL` to its group
/// synchronously; the killed leader is reaped by tokio's orphan reaper
/// (`kill_on_drop`).
pub struct Process {
    child: Child,
    pid: u32,
    program: String,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    out_buf: BytesMut,
    err_buf: BytesMut,
    out_cap: Capture,
    err_cap: Capture,
    lines: LineSplitter,
    /// Stream offset just past the last line handed out by `next_line`.
    consumed: u64,
    stdin: Option<Arc<SharedStdin>>,
    stdin_taken: bool,
    feed: Option<StdinFeed>,
    life: Lifecycle,
    sink_error: Option<SinkError>,
    /// The capture is incomplete or waiting failed: (what, the first error).
    failure: Option<(FailureKind, io::Error)>,
    done: bool,
    /// When the running child's descendants are next looked for (see
    /// `Group::scan`); polled in every turn, also while no output comes.
    next_scan: Pin<Box<Sleep>>,
    /// The marker and ledger record; the record goes when this is dropped,
    /// after the final sweep.
    _tracked: Tracked,
}

/// How often a running child's descendants are looked for, so that tools
/// they started in other process groups can still be stopped after the child
/// (or the tool's own parent) exits and they are re-parented out of reach.
/// A scan walks only the child's own process tree, so it is cheap; it stops
/// once the child exited, when nothing can be traced back to it any more.
const SCAN_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

#[derive(Debug, Clone, Copy)]
enum FailureKind {
    Capture,
    Io,
}

/// What one turn of the pump observed.
enum Event {
    Stdout(io::Result<usize>),
    Stderr(io::Result<usize>),
    Exit(io::Result<std::process::ExitStatus>),
    Feed(io::Result<bool>),
    Deadline,
    Scan,
    Idle,
}

impl Process {
    /// Spawn `cmd` as the leader of a new process group.
    ///
    /// Must be called inside a tokio runtime with I/O and time enabled.
    /// A missing program is [`ProcessError::NotFound`], a non-executable one
    /// [`ProcessError::PermissionDenied`]; no error carries environment values.
    pub fn spawn(cmd: &Command) -> Result<Process, ProcessError> {
        let mut tracked = Tracked::before_spawn();
        let spawned = spawn(cmd, tracked.mark())?;
        let now = Instant::now();
        let mut group = crate::group::Group::new(spawned.pid);
        if let Some(start) = tracked.spawned(spawned.pid) {
            group = group.with_mark(tracked.mark().clone(), start);
        }
        let mut life = Lifecycle::new(
            group,
            cmd.close_grace,
            cmd.term_grace,
            cmd.exit_grace,
            cmd.timeout,
            now,
        );
        let (mut stdin, mut feed) = (None, None);
        match (&cmd.stdin, spawned.stdin) {
            (StdinMode::Pipe, Some(pipe)) => stdin = Some(SharedStdin::new(pipe)),
            (StdinMode::Bytes(data), Some(pipe)) if !data.is_empty() => {
                feed = Some(StdinFeed {
                    pipe,
                    data: data.clone(),
                });
            }
            // Null, or empty bytes: the pipe (if any) is dropped here → EOF.
            _ => life.note_stdin_closed(now),
        }
        Ok(Process {
            child: spawned.child,
            pid: spawned.pid,
            program: cmd.program_name(),
            stdout: Some(spawned.stdout),
            stderr: Some(spawned.stderr),
            out_buf: BytesMut::new(),
            err_buf: BytesMut::new(),
            out_cap: Capture::new(cmd.spill_threshold, cmd.spill_dir.clone()),
            err_cap: Capture::new(cmd.spill_threshold, cmd.spill_dir.clone()),
            lines: LineSplitter::new(cmd.max_line_in_memory),
            consumed: 0,
            stdin,
            stdin_taken: false,
            feed,
            life,
            sink_error: None,
            failure: None,
            done: false,
            next_scan: Box::pin(tokio::time::sleep_until((now + SCAN_EVERY).into())),
            _tracked: tracked,
        })
    }

    /// The child's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The program, as given to [`Command::new`].
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The stdin writer, once, in [`StdinMode::Pipe`]; `None` otherwise.
    pub fn take_stdin(&mut self) -> Option<StdinController> {
        if self.stdin_taken {
            return None;
        }
        let shared = self.stdin.as_ref()?;
        self.stdin_taken = true;
        Some(StdinController::new(Arc::clone(shared)))
    }

    /// The next complete stdout line (without its `\n`), the final
    /// unterminated line at end-of-file, or `None` once stdout is at
    /// end-of-file.
    ///
    /// While waiting it reads stdout and stderr concurrently, captures every
    /// byte, and emits every chunk to `sink` as it is read, before the lines
    /// it contains are returned.
    ///
    /// # Cancellation
    ///
    /// Cancellation safe: dropping the future (e.g. in a `select!` against a
    /// cancel token) loses no byte of the raw capture and no line; call again
    /// or shut down. A chunk whose emission was interrupted is not re-sent
    /// (live chunks are at-most-once; the raw capture is the complete record).
    ///
    /// # Errors
    ///
    /// [`ProcessError::Sink`] once when the sink refuses a chunk
    /// ([`SinkError::Cancelled`]: the run is cancelled, so stop and call
    /// [`shutdown`](Process::shutdown)); capture continues and later chunks
    /// are not emitted. [`ProcessError::Capture`] when the capture cannot be
    /// kept complete (then on every call).
    pub async fn next_line(&mut self, sink: &dyn EventSink) -> Result<Option<Line>, ProcessError> {
        loop {
            if let Some(err) = self.failure_copy() {
                return Err(err);
            }
            if let Some(line) = self.ready_line() {
                return Ok(Some(line));
            }
            if self.stdout.is_none() {
                return Ok(None);
            }
            self.step(sink).await?;
        }
    }

    /// The next stdout line if one is already split and waiting — what
    /// [`next_line`](Process::next_line) would return without reading —
    /// else `None` (nothing waiting, end of stdout, or a failure, which the
    /// next `next_line` reports). Lets a reader take a burst of lines at
    /// once.
    pub fn ready_line(&mut self) -> Option<Line> {
        if self.failure.is_some() {
            return None;
        }
        let line = self.lines.pop()?;
        self.consumed = line.end();
        Some(line)
    }

    /// Hand over the raw capture so far and start a new one, for a child
    /// that serves several requests in turn (a resident process): stdout up
    /// to the end of the last line [`next_line`](Process::next_line)
    /// returned, and all of stderr read so far. Bytes already read past that
    /// line (lines not pulled yet, a partial line) stay in the capture and
    /// belong to the next hand-over; nothing is lost or duplicated. Lines
    /// still to be pulled are unaffected.
    ///
    /// [`finish`](Process::finish) and [`shutdown`](Process::shutdown) then
    /// report only what was captured after the last hand-over.
    ///
    /// # Errors
    ///
    /// [`ProcessError::Capture`] when the capture is (or becomes) incomplete.
    pub fn take_capture(&mut self) -> Result<Captured, ProcessError> {
        if let Some(err) = self.failure_copy() {
            return Err(err);
        }
        let stdout = self.out_cap.split_to(self.consumed);
        let stderr = stdout.and_then(|out| {
            let end = self.err_cap.len();
            self.err_cap.split_to(end).map(|err| (out, err))
        });
        match stderr {
            Ok((stdout, stderr)) => Ok(Captured { stdout, stderr }),
            Err(err) => Err(self.fail(FailureKind::Capture, err)),
        }
    }

    /// The conversation is over: the protocol's terminal line was seen, so
    /// the child is expected to exit on its own now. Starts the exit clock
    /// (see [`Command::exit_grace`]): if the child still runs when the grace
    /// expires, its stdin is closed and its group gets `SIGTERM`, then
    /// `SIGKILL` after `term_grace`, and the result reports
    /// [`ExitInfo::stopped_after_output`](crate::ExitInfo::stopped_after_output).
    /// The clock also starts by itself when stdout reaches end-of-file.
    ///
    /// Output is still read and captured meanwhile; like the rest of the
    /// clock it runs while the caller awaits
    /// [`next_line`](Process::next_line) or [`finish`](Process::finish).
    /// Idempotent; does nothing once the child exited or is being stopped.
    /// Not for a resident process between turns (it is meant to stay).
    pub fn expect_exit(&mut self) {
        self.life.output_over(Instant::now());
    }

    /// How the child ended, if it has (reaping it); `None` while it runs.
    /// Does not wait and reads no output.
    pub fn try_wait(&mut self) -> Option<crate::ExitInfo> {
        if !self.life.exited() {
            let open = self.stdout.is_some() || self.stderr.is_some();
            match self.child.try_wait() {
                Ok(None) => return None,
                Ok(Some(status)) => self.life.on_exit(Some(status), Instant::now(), open),
                Err(err) => {
                    self.life.on_exit(None, Instant::now(), open);
                    self.fail(FailureKind::Io, err);
                }
            }
        }
        Some(self.life.exit_info())
    }

    /// Let the child run to its end: drain both streams (emitting chunks;
    /// lines not pulled stay in the raw capture), wait for the exit, then
    /// make sure nothing of the group survives.
    ///
    /// If stdin is a [`StdinMode::Pipe`] whose controller was never taken, it
    /// is closed first (nobody could write to it). Otherwise stdin is left as
    /// is: `finish` waits for the child to exit on its own, bounded by the
    /// [`timeout`](Command::timeout) and — once its output is over (stdout
    /// at end-of-file, or [`expect_exit`](Process::expect_exit)) — by the
    /// [`exit_grace`](Command::exit_grace), after which it is stopped; use
    /// [`shutdown`](Process::shutdown) to stop it at once. After the child
    /// exits, pipes still held open (by a grandchild) get `close_grace`,
    /// then the group is killed.
    ///
    /// Each chunk waits for the sink to accept it (backpressure); the
    /// timeout and shutdown clock keeps running meanwhile, so a slow consumer
    /// delays the return but never the signals.
    ///
    /// # Errors
    ///
    /// Only when the raw capture is incomplete ([`ProcessError::Capture`]) or
    /// waiting failed ([`ProcessError::Io`]) — and even then the child is
    /// stopped and reaped first. A sink refusal is reported in
    /// [`Finished::sink_error`].
    pub async fn finish(mut self, sink: &dyn EventSink) -> Result<Finished, ProcessError> {
        self.life.group().scan();
        if !self.stdin_taken
            && let Some(stdin) = &self.stdin
        {
            stdin.close();
            self.life.note_stdin_closed(Instant::now());
        }
        self.run_to_end(sink).await
    }

    /// Stop the child (spec §4, §11): close stdin → wait `close_grace` for
    /// the exit → `SIGTERM` to the group → wait `term_grace` → `SIGKILL` to
    /// the group. Closing stdin abandons [`StdinMode::Bytes`] input not yet
    /// written. Always reaps the child, drains the pipes (bounded as in
    /// [`finish`](Process::finish)) and leaves no group member alive.
    ///
    /// # Errors
    ///
    /// As for [`finish`](Process::finish).
    pub async fn shutdown(mut self, sink: &dyn EventSink) -> Result<Finished, ProcessError> {
        // Find the descendants before stdin closes: once the child exits its
        // orphans cannot be traced back to it.
        self.life.group().scan();
        if self.life.begin_stop(Instant::now()) == Step::CloseStdin {
            self.close_stdin();
        }
        self.run_to_end(sink).await
    }

    async fn run_to_end(&mut self, sink: &dyn EventSink) -> Result<Finished, ProcessError> {
        self.lines.disable();
        while !(self.life.exited() && self.stdout.is_none() && self.stderr.is_none()) {
            // Sink and capture errors are recorded; keep draining regardless.
            let _ = self.step(sink).await;
        }
        self.feed = None;
        if let Some(stdin) = &self.stdin {
            stdin.close();
        }
        // Sweep what is left of the group (daemons that did not hold the pipes).
        self.life.group().kill();
        self.done = true;
        if let Some((kind, err)) = self.failure.take() {
            return Err(match kind {
                FailureKind::Capture => ProcessError::Capture(err),
                FailureKind::Io => ProcessError::Io(err),
            });
        }
        let empty = || Capture::new(0, None);
        Ok(Finished {
            exit: self.life.exit_info(),
            stdout: std::mem::replace(&mut self.out_cap, empty()).into_raw(),
            stderr: std::mem::replace(&mut self.err_cap, empty()).into_raw(),
            timeline: self.life.timeline(),
            sink_error: self.sink_error.clone(),
        })
    }

    /// One turn: wait for whichever comes first (output, exit, stdin
    /// progress, a deadline) and handle it. Every await is cancellation safe;
    /// bytes are captured synchronously before anything else is awaited.
    async fn step(&mut self, sink: &dyn EventSink) -> Result<(), ProcessError> {
        let deadline = self.life.next_deadline();
        let exited = self.life.exited();
        let event = tokio::select! {
            r = read_some(&mut self.stdout, &mut self.out_buf), if self.stdout.is_some() => Event::Stdout(r),
            r = read_some(&mut self.stderr, &mut self.err_buf), if self.stderr.is_some() => Event::Stderr(r),
            r = self.child.wait(), if !exited => Event::Exit(r),
            r = write_some(&mut self.feed), if self.feed.is_some() => Event::Feed(r),
            () = sleep_until(deadline), if deadline.is_some() => Event::Deadline,
            () = self.next_scan.as_mut(), if !exited => Event::Scan,
            else => Event::Idle,
        };
        match event {
            Event::Stdout(Ok(0)) => self.stdout_eof(),
            Event::Stdout(Ok(_)) => {
                let chunk = take_chunk(&mut self.out_buf);
                let offset = self.out_cap.len();
                if self.failure.is_none() {
                    let kept = self
                        .out_cap
                        .append(&chunk)
                        .and_then(|()| self.lines.feed(&chunk, offset, &mut self.out_cap));
                    if let Err(err) = kept {
                        return Err(self.fail(FailureKind::Capture, err));
                    }
                }
                self.emit(sink, RunEvent::stdout(chunk)).await?;
            }
            Event::Stderr(Ok(0)) => self.stderr = None,
            Event::Stderr(Ok(_)) => {
                let chunk = take_chunk(&mut self.err_buf);
                if self.failure.is_none()
                    && let Err(err) = self.err_cap.append(&chunk)
                {
                    return Err(self.fail(FailureKind::Capture, err));
                }
                self.emit(sink, RunEvent::stderr(chunk)).await?;
            }
            Event::Stdout(Err(err)) => {
                self.stdout_eof();
                return Err(self.fail(FailureKind::Capture, err));
            }
            Event::Stderr(Err(err)) => {
                self.stderr = None;
                return Err(self.fail(FailureKind::Capture, err));
            }
            Event::Exit(result) => {
                let open = self.stdout.is_some() || self.stderr.is_some();
                match result {
                    Ok(status) => self.life.on_exit(Some(status), Instant::now(), open),
                    Err(err) => {
                        self.life.on_exit(None, Instant::now(), open);
                        return Err(self.fail(FailureKind::Io, err));
                    }
                }
            }
            Event::Feed(Ok(false)) => {}
            Event::Feed(Ok(true) | Err(_)) => {
                // All written, or the child closed its end: either way, EOF.
                self.feed = None;
                self.life.note_stdin_closed(Instant::now());
            }
            Event::Deadline => self.on_deadline(),
            Event::Scan => {
                self.life.group().scan();
                let next = Instant::now() + SCAN_EVERY;
                self.next_scan.as_mut().reset(next.into());
            }
            Event::Idle => {}
        }
        Ok(())
    }

    /// Emit one chunk, keeping the shutdown clock running while the sink
    /// applies backpressure.
    async fn emit(&mut self, sink: &dyn EventSink, event: RunEvent) -> Result<(), ProcessError> {
        if self.sink_error.is_some() {
            return Ok(());
        }
        let mut delivery = sink.emit(event);
        loop {
            let deadline = self.life.next_deadline();
            tokio::select! {
                r = &mut delivery => {
                    return match r {
                        Ok(()) => Ok(()),
                        Err(err) => {
                            self.sink_error = Some(err.clone());
                            Err(ProcessError::Sink(err))
                        }
                    };
                }
                () = sleep_until(deadline), if deadline.is_some() => self.on_deadline(),
            }
        }
    }

    fn on_deadline(&mut self) {
        match self.life.on_deadline(Instant::now()) {
            Step::Nothing => {}
            Step::CloseStdin => self.close_stdin(),
            Step::AbandonPipes => {
                tracing::debug!(
                    pid = self.pid,
                    "output pipes held open outside the process group; no longer read"
                );
                if self.stdout.is_some() {
                    self.stdout_eof();
                }
                self.stderr = None;
            }
        }
    }

    fn stdout_eof(&mut self) {
        self.stdout = None;
        // Nothing more can be said: the child has its grace to exit.
        self.life.output_over(Instant::now());
        if self.failure.is_none() {
            let end = self.out_cap.len();
            if let Err(err) = self.lines.finish(end, &mut self.out_cap) {
                self.fail(FailureKind::Capture, err);
            }
        }
    }

    fn close_stdin(&mut self) {
        self.feed = None;
        if let Some(stdin) = &self.stdin {
            stdin.close();
        }
        self.life.note_stdin_closed(Instant::now());
    }

    /// Record the first failure; return a copy for the caller. Lines stop.
    fn fail(&mut self, kind: FailureKind, err: io::Error) -> ProcessError {
        tracing::warn!(pid = self.pid, %err, "process capture failed");
        self.lines.disable();
        if self.failure.is_none() {
            self.failure = Some((kind, err));
        }
        self.failure_copy()
            .unwrap_or(ProcessError::Io(io::Error::other("unknown failure")))
    }

    fn failure_copy(&self) -> Option<ProcessError> {
        let (kind, err) = self.failure.as_ref()?;
        let copy = io::Error::new(err.kind(), err.to_string());
        Some(match kind {
            FailureKind::Capture => ProcessError::Capture(copy),
            FailureKind::Io => ProcessError::Io(copy),
        })
    }
}

/// The raw output a [`Process`] handed over with
/// [`take_capture`](Process::take_capture): exact bytes, in memory or
/// file-backed like the complete capture.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Captured {
    /// Stdout bytes, ending with the last line pulled (and its `\n`).
    pub stdout: RawBytes,
    /// Every stderr byte read since the previous hand-over.
    pub stderr: RawBytes,
}

impl fmt::Debug for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Process")
            .field("pid", &self.pid)
            .field("program", &self.program)
            .field("exit", &self.life.exited().then(|| self.life.exit_info()))
            .field("stdout_bytes", &self.out_cap.len())
            .field("stderr_bytes", &self.err_cap.len())
            .field("stdout_open", &self.stdout.is_some())
            .field("stderr_open", &self.stderr.is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if !self.done {
            // Synchronous, best effort: no orphan survives a dropped driver
            // future. The leader is reaped by tokio: `kill_on_drop` hands
            // it to the runtime's orphan queue, drained on the next SIGCHLD.
            self.life.group().kill();
            if let Some(stdin) = &self.stdin {
                stdin.close();
            }
        }
    }
}

async fn read_some<R: AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut BytesMut,
) -> io::Result<usize> {
    match pipe {
        Some(pipe) => {
            buf.reserve(READ_CHUNK);
            pipe.read_buf(buf).await
        }
        None => std::future::pending().await,
    }
}

/// The bytes just read, as an independent chunk. A small read is copied so
/// that a chunk held downstream (e.g. in the event queue) never pins a whole
/// read buffer; the buffer is then reused.
fn take_chunk(buf: &mut BytesMut) -> Bytes {
    if buf.len() >= READ_CHUNK / 2 {
        buf.split().freeze()
    } else {
        let chunk = Bytes::copy_from_slice(buf);
        buf.clear();
        chunk
    }
}

async fn write_some(feed: &mut Option<StdinFeed>) -> io::Result<bool> {
    match feed {
        Some(feed) => feed.write_some().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}
