//! The loop every line-protocol CLI driver shares: spawn the CLI through the
//! process helper, feed each stdout line to the protocol's parser, deliver
//! what it means to the sink, hand control frames to the transport, stop the
//! CLI on cancellation or error, and finish.
//!
//! Protocol semantics live in the parsers; process handling lives in
//! `agent-adaptor-process`; this module only moves parsed output along.

use std::time::Duration;

use agent_adaptor_driver::{
    DriverError, EventSink, OperationalEvent, RunContext, RunEvent, StreamPayload, async_trait,
};
use agent_adaptor_process::{Command, Finished, Process, StdinController};
use serde_json::Value;

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
    /// Parse one stdout line (without its newline).
    fn line(&mut self, raw: &[u8]) -> Vec<Out>;
    /// True once the protocol's terminal event was seen.
    fn terminated(&self) -> bool;
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

/// Run `cmd` to the end, delivering everything `proto` makes of its stdout.
/// On cancellation or any error the CLI and its process group are stopped
/// (stdin closed, SIGTERM, SIGKILL) before the error is returned.
pub async fn run(
    driver_name: &str,
    cmd: &Command,
    ctx: &RunContext,
    sink: &dyn EventSink,
    proto: &mut dyn LineProtocol,
    mut controller: Option<&mut dyn Controller>,
    setup: &[String],
) -> Result<Finished, DriverError> {
    let mut proc = Process::spawn(cmd)?;
    let mut spawn = OperationalEvent::text(format!("{driver_name} started"));
    spawn.metadata.insert("pid".into(), proc.pid().to_string());
    spawn
        .metadata
        .insert("program".into(), proc.program().to_owned());
    let mut stdin = proc.take_stdin();
    let pumped = async {
        sink.emit(RunEvent::Spawn(spawn)).await?;
        for frame in setup {
            write_frame(&mut stdin, frame).await;
        }
        pump(&mut proc, ctx, sink, proto, &mut controller, &mut stdin).await
    }
    .await;
    if let Err(e) = pumped {
        drop(stdin);
        let _ = proc.shutdown(sink).await;
        return Err(e);
    }
    drop(stdin);
    Ok(proc.finish(sink).await?)
}

async fn pump(
    proc: &mut Process,
    ctx: &RunContext,
    sink: &dyn EventSink,
    proto: &mut dyn LineProtocol,
    controller: &mut Option<&mut dyn Controller>,
    stdin: &mut Option<StdinController>,
) -> Result<(), DriverError> {
    let mut terminated = false;
    loop {
        let next = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => None,
            r = proc.next_line(sink) => Some(r),
        };
        let line = match next {
            None => {
                if let Some(c) = controller.as_mut() {
                    let _ =
                        tokio::time::timeout(Duration::from_millis(200), c.interrupt(stdin)).await;
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
        for out in proto.line(&bytes) {
            deliver(out, sink, controller, stdin).await?;
        }
        if !terminated && proto.terminated() {
            terminated = true;
            match controller.as_mut() {
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

/// Deliver one parsed output.
pub async fn deliver(
    out: Out,
    sink: &dyn EventSink,
    controller: &mut Option<&mut dyn Controller>,
    stdin: &mut Option<StdinController>,
) -> Result<(), DriverError> {
    match out {
        Out::Stream(p) => sink.emit_stream(p).await?,
        Out::Event(e) => sink.emit(e).await?,
        Out::Control(frame) => {
            if let Some(c) = controller.as_mut() {
                c.control(frame, stdin, sink).await?;
            }
        }
    }
    Ok(())
}
