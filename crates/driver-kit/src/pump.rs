//! The loop every line-protocol CLI driver shares: spawn the CLI through the
//! process helper, feed each stdout line to the protocol's parser, deliver
//! what it means to the sink, hand control frames to the transport, stop the
//! CLI on cancellation or error, and finish.
//!
//! Protocol semantics live in the parsers; process handling lives in
//! `agent-adaptor-process`; this module only moves parsed output along.

use std::future::Future;
use std::task::{Context, Poll};
use std::time::Duration;

use agent_adaptor_driver::{
    Batch, DriverError, Emit, EventSink, OperationalEvent, RunContext, RunEvent, StreamPayload,
    async_trait,
};
use agent_adaptor_process::{Command, Finished, Process, StdinController};
use serde_json::Value;

use crate::exit::{CliName, notice_if_stopped};

/// Most lines a protocol without a controller parses in one go (see
/// [`LineProtocol::lines_into`]): a 64 KiB read of short lines, and few
/// enough that a burst's outputs stay in cache.
const BURST: usize = 128;

/// What one stdout line means, in emission order.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// A live payload.
    Stream(StreamPayload),
    /// A transcript item or operational notice.
    Event(RunEvent),
    /// A control frame for a bidirectional transport.
    Control(ControlFrame),
}

/// A control frame from the CLI.
#[derive(Debug, Clone, PartialEq)]
pub enum ControlFrame {
    /// The CLI asks the host something.
    Request {
        /// The id to answer with (a string or a number, as the CLI sent it).
        id: Value,
        /// The method or subtype.
        method: String,
        /// The request body.
        params: Value,
    },
    /// The CLI answers one of the host's requests.
    Response {
        /// The id of the host's request.
        id: Value,
        /// The result, or the error.
        result: Result<Value, Value>,
    },
    /// The CLI withdrew one of its requests.
    Cancel {
        /// The withdrawn request.
        id: Value,
    },
}

/// A sans-IO line protocol parser.
pub trait LineProtocol: Send {
    /// Parse one stdout line (without its newline), appending what it
    /// means to `out` (a buffer the pump reuses from line to line).
    fn line_into(&mut self, raw: &[u8], out: &mut Vec<Out>);
    /// Parse one stdout line into a new vector (see
    /// [`line_into`](LineProtocol::line_into)).
    fn line(&mut self, raw: &[u8]) -> Vec<Out> {
        let mut out = Vec::new();
        self.line_into(raw, &mut out);
        out
    }
    /// Parse a burst of lines that arrived together, in order, appending
    /// to `out`: must mean exactly what [`line_into`](LineProtocol::line_into)
    /// on each line in turn means, which the default does. A protocol may
    /// first decode every line and then handle them, so each step's code
    /// stays in the instruction cache for the whole burst.
    fn lines_into(&mut self, lines: &[&[u8]], out: &mut Vec<Out>) {
        for raw in lines {
            self.line_into(raw, out);
        }
    }
    /// True once the protocol's terminal event was seen.
    fn terminated(&self) -> bool;
    /// Whether anyone can see live payloads
    /// ([`EventSink::payloads_observed`]), told before each line (or burst
    /// of lines, see [`lines_into`](LineProtocol::lines_into)). A parser
    /// may then leave out lifecycles it has not started (see there). The
    /// default ignores it.
    fn observe(&mut self, observed: bool) {
        let _ = observed;
    }
    /// Add what the protocol knows about the run (e.g. its transport) to
    /// the [`RunEvent::Spawn`] notice of [`run`] and [`run_duplex`],
    /// before it is emitted. The default adds nothing.
    fn describe_spawn(&self, spawn: &mut OperationalEvent) {
        let _ = spawn;
    }
}

/// The transport side of a bidirectional protocol.
#[async_trait]
pub trait Controller: Send {
    /// Answer (or ignore) a control frame.
    async fn control(
        &mut self,
        frame: ControlFrame,
        stdin: &mut Option<StdinController>,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError>;

    /// The run is being cancelled: ask the CLI to stop, best effort.
    async fn interrupt(&mut self, stdin: &mut Option<StdinController>);

    /// Drive the work the controller runs while the pump reads on (host
    /// tool calls it started in [`control`](Self::control), see
    /// [`HostCalls`](crate::host_calls::HostCalls)): `Ready` once some of it
    /// finished, then the pump calls [`finish_work`](Self::finish_work).
    /// The pump polls it only while it waits for the next stdout line, so it
    /// must be cancel safe (keep what finished until `finish_work`). The
    /// default has no work: `Pending`.
    fn poll_work(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let _ = cx;
        Poll::Pending
    }

    /// Answer the work that finished (write its answers on `stdin`). The
    /// default does nothing.
    async fn finish_work(
        &mut self,
        stdin: &mut Option<StdinController>,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        let _ = (stdin, sink);
        Ok(())
    }

    /// The terminal event was seen. The default closes stdin so the CLI exits.
    async fn terminated(&mut self, stdin: &mut Option<StdinController>) {
        if let Some(s) = stdin.take() {
            s.close().await;
        }
    }
}

/// Write one frame; a closed stdin (the CLI exited) drops the controller.
pub async fn write_frame(stdin: &mut Option<StdinController>, frame: &str) {
    if let Some(s) = stdin.as_mut()
        && s.write_line(frame.as_bytes()).await.is_err()
    {
        *stdin = None;
    }
}

/// A protocol whose parser and transport are one object: its answers to
/// control frames depend on (and change) what it parsed, e.g. a JSON-RPC
/// client that sends its next request when a response arrives.
pub trait Duplex: LineProtocol + Controller {}

impl<T: LineProtocol + Controller> Duplex for T {}

/// Run `cmd` to the end, delivering everything `proto` makes of its stdout.
/// On cancellation or any error the CLI and its process group are stopped
/// (stdin closed, SIGTERM, SIGKILL) before the error is returned. Once the
/// protocol's terminal line is seen (or stdout ends) the CLI has
/// [`Command::exit_grace`] to exit before it is stopped; a stop is told once
/// as a notice ([`notice_if_stopped`]) and leaves the turn's outcome to the
/// parser.
pub async fn run(
    cli: CliName<'_>,
    cmd: &Command,
    ctx: &RunContext,
    sink: &dyn EventSink,
    proto: &mut dyn LineProtocol,
    controller: Option<&mut dyn Controller>,
    setup: &[String],
) -> Result<Finished, DriverError> {
    let mut side = Split { proto, controller };
    drive(cli, cmd, ctx, sink, &mut side, setup).await
}

/// [`run`] for a [`Duplex`] protocol: the same object parses the lines and
/// answers the control frames.
pub async fn run_duplex(
    cli: CliName<'_>,
    cmd: &Command,
    ctx: &RunContext,
    sink: &dyn EventSink,
    session: &mut dyn Duplex,
    setup: &[String],
) -> Result<Finished, DriverError> {
    let mut side = Joined(session);
    drive(cli, cmd, ctx, sink, &mut side, setup).await
}

/// The two shapes of a protocol the loop accepts.
trait Side: Send {
    fn lines_into(&mut self, lines: &[&[u8]], out: &mut Vec<Out>);
    fn terminated(&self) -> bool;
    fn observe(&mut self, observed: bool);
    fn describe_spawn(&self, spawn: &mut OperationalEvent);
    fn controller(&mut self) -> Option<&mut dyn Controller>;
    fn poll_work(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match self.controller() {
            Some(c) => c.poll_work(cx),
            None => Poll::Pending,
        }
    }
}

struct Split<'p, 'c> {
    proto: &'p mut dyn LineProtocol,
    controller: Option<&'c mut dyn Controller>,
}

impl Side for Split<'_, '_> {
    fn lines_into(&mut self, lines: &[&[u8]], out: &mut Vec<Out>) {
        self.proto.lines_into(lines, out);
    }
    fn terminated(&self) -> bool {
        self.proto.terminated()
    }
    fn observe(&mut self, observed: bool) {
        self.proto.observe(observed);
    }
    fn describe_spawn(&self, spawn: &mut OperationalEvent) {
        self.proto.describe_spawn(spawn);
    }
    fn controller(&mut self) -> Option<&mut dyn Controller> {
        match &mut self.controller {
            Some(c) => Some(&mut **c),
            None => None,
        }
    }
}

struct Joined<'a>(&'a mut dyn Duplex);

impl Side for Joined<'_> {
    fn lines_into(&mut self, lines: &[&[u8]], out: &mut Vec<Out>) {
        self.0.lines_into(lines, out);
    }
    fn terminated(&self) -> bool {
        LineProtocol::terminated(&*self.0)
    }
    fn observe(&mut self, observed: bool) {
        self.0.observe(observed);
    }
    fn describe_spawn(&self, spawn: &mut OperationalEvent) {
        LineProtocol::describe_spawn(&*self.0, spawn);
    }
    fn controller(&mut self) -> Option<&mut dyn Controller> {
        Some(&mut *self.0)
    }
}

async fn drive(
    cli: CliName<'_>,
    cmd: &Command,
    ctx: &RunContext,
    sink: &dyn EventSink,
    side: &mut dyn Side,
    setup: &[String],
) -> Result<Finished, DriverError> {
    let mut proc = Process::spawn(cmd)?;
    let mut spawn = OperationalEvent::text(format!("{} started", cli.name));
    spawn.metadata.insert("pid".into(), proc.pid().to_string());
    spawn
        .metadata
        .insert("program".into(), proc.program().to_owned());
    side.describe_spawn(&mut spawn);
    let mut stdin = proc.take_stdin();
    let pumped = async {
        sink.emit(RunEvent::Spawn(spawn)).await?;
        for frame in setup {
            write_frame(&mut stdin, frame).await;
        }
        pump(&mut proc, ctx, sink, side, &mut stdin).await
    }
    .await;
    if let Err(e) = pumped {
        drop(stdin);
        let _ = proc.shutdown(sink).await;
        return Err(e);
    }
    drop(stdin);
    let finished = proc.finish(sink).await?;
    let grace = cmd.get_exit_grace();
    notice_if_stopped(sink, cli, side.terminated(), grace, &finished).await?;
    Ok(finished)
}

async fn pump(
    proc: &mut Process,
    ctx: &RunContext,
    sink: &dyn EventSink,
    side: &mut dyn Side,
    stdin: &mut Option<StdinController>,
) -> Result<(), DriverError> {
    let mut terminated = false;
    let mut batch = Batches::new(sink);
    let mut bufs = Buffers::default();
    loop {
        if !next_line(proc, ctx, sink, side, stdin, &mut batch, &mut bufs).await? {
            return Ok(());
        }
        if !terminated && side.terminated() {
            terminated = true;
            // The conversation is over: the CLI has the exit grace to exit
            // on its own before it is stopped.
            proc.expect_exit();
            batch.close();
            match side.controller() {
                Some(c) => c.terminated(stdin).await,
                None => {
                    if let Some(s) = stdin.take() {
                        s.close().await;
                    }
                }
            }
        }
    }
}

/// Read the next stdout line and deliver what it means (inside `batch`,
/// with `bufs` reused from line to line): `Ok(false)` at the end of
/// stdout. While it waits, the controller's work is driven
/// ([`Controller::poll_work`]); when some finished, it is answered
/// ([`Controller::finish_work`]) instead of a line. On cancellation the
/// protocol is asked to interrupt (best effort, 200 ms) and
/// `Err(Cancelled)` is returned.
///
/// A protocol without a controller also gets the lines already read behind
/// that one (up to [`BURST`]) in the same call: they are parsed together,
/// then delivered in order. One that answers control frames gets one line
/// at a time, so each answer precedes the next line's parse.
async fn next_line<'s>(
    proc: &mut Process,
    ctx: &RunContext,
    sink: &'s dyn EventSink,
    side: &mut dyn Side,
    stdin: &mut Option<StdinController>,
    batch: &mut Batches<'s>,
    bufs: &mut Buffers,
) -> Result<bool, DriverError> {
    let next = batch
        .next(async {
            tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => Next::Cancelled,
                () = std::future::poll_fn(|cx| side.poll_work(cx)) => Next::Work,
                r = proc.next_line(sink) => Next::Line(r),
            }
        })
        .await;
    let line = match next {
        Next::Cancelled => {
            if let Some(c) = side.controller() {
                let _ = tokio::time::timeout(Duration::from_millis(200), c.interrupt(stdin)).await;
            }
            return Err(DriverError::Cancelled);
        }
        Next::Work => {
            if let Some(c) = side.controller() {
                c.finish_work(stdin, sink).await?;
            }
            return Ok(true);
        }
        Next::Line(Err(e)) if e.is_cancelled() => return Err(DriverError::Cancelled),
        Next::Line(Err(e)) => return Err(e.into()),
        Next::Line(Ok(None)) => return Ok(false),
        Next::Line(Ok(Some(line))) => line,
    };
    let lines = &mut bufs.lines;
    lines.clear();
    lines.push(line);
    if side.controller().is_none() {
        while lines.len() < BURST {
            match proc.ready_line() {
                Some(line) => lines.push(line),
                None => break,
            }
        }
    }
    // A line in memory is parsed where it is; a spilled one is read back.
    let mut spilled = Vec::new();
    for line in lines.iter().filter(|l| l.as_memory().is_none()) {
        spilled.push(line.bytes().to_vec()?);
    }
    let mut spilled = spilled.iter();
    let mut raws = recycle(std::mem::take(&mut bufs.raws));
    raws.extend(lines.iter().map(|line| match line.as_memory() {
        Some(b) => b,
        None => spilled.next().map_or(&[][..], Vec::as_slice),
    }));
    batch.open();
    let delivered = deliver_lines(side, &raws, &mut bufs.outs, sink, stdin).await;
    bufs.raws = recycle(raws);
    delivered?;
    // Let go of the lines before the next read, so the read buffer they
    // share can be reused.
    bufs.lines.clear();
    Ok(true)
}

/// What [`next_line`] waited for.
enum Next<L> {
    /// The run was cancelled.
    Cancelled,
    /// The controller's work finished some of itself.
    Work,
    /// The next stdout line (`None` at its end).
    Line(L),
}

/// Empty `v` and hand back its allocation for slices of another lifetime.
///
/// The burst's line slices borrow that burst's lines, so the vector that
/// holds them cannot outlive it; collecting the emptied vector in place
/// keeps its allocation (a burst of [`BURST`] slices is 2 KiB, large
/// enough that allocating it for every burst makes the allocator sweep its
/// free lists).
// The filter drops every element, which is what changes their lifetime.
#[allow(clippy::unnecessary_filter_map)]
fn recycle<'b>(v: Vec<&[u8]>) -> Vec<&'b [u8]> {
    v.into_iter().filter_map(|_| None).collect()
}

/// What [`next_line`] reuses from call to call: the lines of a burst and
/// what they mean (allocated once per run, not once per burst).
#[derive(Default)]
struct Buffers {
    lines: Vec<agent_adaptor_process::Line>,
    /// The bytes of `lines` (empty between bursts, see [`recycle`]).
    raws: Vec<&'static [u8]>,
    outs: Vec<Out>,
}

/// Deliver everything some stdout lines mean, as one batch: the consumer
/// is woken once for them, not once per event. `outs` is the (empty)
/// buffer they are parsed into.
async fn deliver_lines(
    side: &mut dyn Side,
    lines: &[&[u8]],
    outs: &mut Vec<Out>,
    sink: &dyn EventSink,
    stdin: &mut Option<StdinController>,
) -> Result<(), DriverError> {
    let _batch = Batch::new(sink);
    side.observe(sink.payloads_observed());
    outs.clear();
    side.lines_into(lines, outs);
    for out in outs.drain(..) {
        // Payloads and events go straight to the sink (no future of
        // `deliver` holds them on the way): this runs for every event.
        match to_sink(out, sink) {
            Ok(emit) => emit.await?,
            Err(frame) => {
                let mut controller = side.controller();
                deliver(Out::Control(frame), sink, &mut controller, stdin).await?;
            }
        }
    }
    Ok(())
}

/// A batch that spans the stdout lines already at hand: it stays open from
/// line to line while the next line is ready at once, and is closed — the
/// consumer woken — before the reader has to wait. A CLI that prints a line
/// at a time costs one wake per line; one that floods stdout costs one wake
/// per burst (the host still wakes its consumer as its queue fills).
struct Batches<'s> {
    sink: &'s dyn EventSink,
    open: Option<Batch<'s>>,
}

impl<'s> Batches<'s> {
    /// No batch open yet.
    fn new(sink: &'s dyn EventSink) -> Self {
        Batches { sink, open: None }
    }

    /// Await `next` (the next line): when it is not ready at once, close the
    /// open batch first, so the consumer sees everything so far while the
    /// reader waits.
    async fn next<F: Future>(&mut self, next: F) -> F::Output {
        let mut next = std::pin::pin!(next);
        if self.open.is_some() {
            let polled = std::future::poll_fn(|cx| {
                Poll::Ready(match next.as_mut().poll(cx) {
                    Poll::Ready(out) => Some(out),
                    Poll::Pending => None,
                })
            })
            .await;
            if let Some(out) = polled {
                return out;
            }
            self.open = None;
        }
        next.await
    }

    /// Make sure a batch is open (before delivering a line).
    fn open(&mut self) {
        if self.open.is_none() {
            self.open = Some(Batch::new(self.sink));
        }
    }

    /// Close the open batch, if any.
    fn close(&mut self) {
        self.open = None;
    }
}

/// How [`run_turn`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    /// The protocol's terminal event: the process keeps running.
    Terminal,
    /// Stdout ended before it.
    Eof,
}

/// Drive one turn of `session` on a process that keeps running afterwards
/// (a resident process, kept between the turns of a thread): deliver what each stdout
/// line means, answer control frames on `stdin`, and return at the
/// protocol's terminal event — stdin stays open, the process is not waited
/// for — or at the end of stdout. On cancellation the session is asked to
/// interrupt (best effort) and `Err(Cancelled)` is returned; stopping the
/// process is the caller's job, as is every error's.
pub async fn run_turn(
    proc: &mut Process,
    ctx: &RunContext,
    sink: &dyn EventSink,
    session: &mut dyn Duplex,
    stdin: &mut Option<StdinController>,
) -> Result<TurnEnd, DriverError> {
    let mut side = Joined(session);
    let mut batch = Batches::new(sink);
    let mut bufs = Buffers::default();
    loop {
        if !next_line(proc, ctx, sink, &mut side, stdin, &mut batch, &mut bufs).await? {
            return Ok(TurnEnd::Eof);
        }
        if side.terminated() {
            return Ok(TurnEnd::Terminal);
        }
    }
}

/// Hand a payload or an event to the sink; a control frame comes back.
#[allow(
    clippy::result_large_err,
    reason = "a private step the caller matches at once; boxing would allocate per control frame"
)]
fn to_sink(out: Out, sink: &dyn EventSink) -> Result<Emit<'_>, ControlFrame> {
    match out {
        Out::Stream(p) => Ok(sink.emit_stream(p)),
        Out::Event(e) => Ok(sink.emit(e)),
        Out::Control(frame) => Err(frame),
    }
}

/// Deliver one parsed output.
pub async fn deliver(
    out: Out,
    sink: &dyn EventSink,
    controller: &mut Option<&mut dyn Controller>,
    stdin: &mut Option<StdinController>,
) -> Result<(), DriverError> {
    match to_sink(out, sink) {
        Ok(emit) => emit.await?,
        Err(frame) => {
            if let Some(c) = controller.as_mut() {
                c.control(frame, stdin, sink).await?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Mutex;

    use agent_adaptor_driver::Emit;

    use super::*;

    #[test]
    fn a_recycled_slice_buffer_is_empty_and_keeps_its_allocation() {
        let line = b"{}".to_vec();
        let mut v: Vec<&[u8]> = Vec::with_capacity(BURST);
        v.extend(std::iter::repeat_n(&line[..], BURST));
        let (at, cap) = (v.as_ptr() as usize, v.capacity());
        let kept: Vec<&'static [u8]> = recycle(v);
        assert!(kept.is_empty());
        assert_eq!(kept.capacity(), cap);
        assert_eq!(kept.as_ptr() as usize, at);
    }

    /// Records emissions and batch brackets, in order.
    #[derive(Default)]
    struct Log(Mutex<Vec<String>>);

    impl Log {
        fn push(&self, s: impl Into<String>) {
            self.0.lock().unwrap().push(s.into());
        }
        fn take(&self) -> Vec<String> {
            std::mem::take(&mut *self.0.lock().unwrap())
        }
    }

    impl EventSink for Log {
        fn emit(&self, _event: RunEvent) -> Emit<'_> {
            self.push("event");
            Emit::ready(Ok(()))
        }
        fn emit_stream(&self, _payload: StreamPayload) -> Emit<'_> {
            self.push("payload");
            Emit::ready(Ok(()))
        }
        fn begin_batch(&self) {
            self.push("begin");
        }
        fn end_batch(&self) {
            self.push("end");
        }
    }

    /// Every line means two payloads and an event.
    struct Three;

    impl LineProtocol for Three {
        fn line_into(&mut self, _raw: &[u8], out: &mut Vec<Out>) {
            out.extend([
                Out::Stream(StreamPayload::run_started()),
                Out::Event(RunEvent::stdout("x")),
                Out::Stream(StreamPayload::text_start("m")),
            ]);
        }
        fn terminated(&self) -> bool {
            false
        }
    }

    /// Deliver `lines` of [`Three`] through `outs`; what the sink saw.
    async fn deliver_three(lines: &[&[u8]], outs: &mut Vec<Out>) -> Vec<String> {
        let log = Log::default();
        let mut proto = Three;
        let mut side = Split {
            proto: &mut proto,
            controller: None,
        };
        deliver_lines(&mut side, lines, outs, &log, &mut None)
            .await
            .unwrap();
        log.take()
    }

    #[tokio::test]
    async fn the_events_of_one_line_are_one_batch() {
        let seen = deliver_three(&[b"{}"], &mut Vec::new()).await;
        assert_eq!(seen, ["begin", "payload", "event", "payload", "end"]);
    }

    #[tokio::test]
    async fn the_events_of_a_burst_are_one_batch_in_line_order() {
        // A buffer left with something in it is emptied first.
        let mut outs = vec![Out::Event(RunEvent::stdout("stale"))];
        let seen = deliver_three(&[b"{}", b"{}"], &mut outs).await;
        assert_eq!(
            seen,
            [
                "begin", "payload", "event", "payload", "payload", "event", "payload", "end"
            ]
        );
        assert!(outs.is_empty());
    }

    #[tokio::test]
    async fn a_batch_spans_ready_lines_and_closes_before_a_wait() {
        let log = Log::default();
        let mut batch = Batches::new(&log);
        // Nothing open yet: a pending read opens nothing and closes nothing.
        assert_eq!(batch.next(async { 1 }).await, 1);
        batch.open();
        log.push("line 1");
        // The next line is ready at once: the batch stays open.
        assert_eq!(batch.next(async { 2 }).await, 2);
        batch.open();
        log.push("line 2");
        // The next line is not ready: the batch is closed before waiting.
        let slow = async {
            tokio::task::yield_now().await;
            3
        };
        assert_eq!(batch.next(slow).await, 3);
        batch.open();
        log.push("line 3");
        batch.close();
        batch.close();
        batch.open();
        drop(batch);
        assert_eq!(
            log.take(),
            [
                "begin", "line 1", "line 2", "end", "begin", "line 3", "end", "begin", "end"
            ]
        );
    }
}
