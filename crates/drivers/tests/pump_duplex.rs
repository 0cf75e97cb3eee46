//! The shared line pump, driven with a [`Duplex`] over `/bin/sh`: what
//! every CLI driver with a controller (Codex app-server, the stream-json
//! family) relies on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;
use std::time::Duration;

use agent_adaptor_driver::{
    DriverError, Emit, EventSink, RunContext, RunEvent, StreamPayload, async_trait,
};
use agent_adaptor_drivers::exit::CliName;
use agent_adaptor_drivers::pump::{self, ControlFrame, Controller, LineProtocol, Out};
use agent_adaptor_process::{Command, StdinController, StdinMode};

const CLI: CliName<'static> = CliName {
    name: "Fake CLI",
    terminal: "end",
};

/// A bound on every wait: far above what any step needs.
const BOUND: Duration = Duration::from_secs(5);

/// Records what it is given; every `line_into` keeps the raw bytes.
#[derive(Default)]
struct Recorder {
    lines: Vec<Vec<u8>>,
    interrupts: usize,
    /// How long `interrupt` takes (it never gives up by itself).
    interrupt_sleep: Duration,
    /// Cancel this token once a line was read.
    cancel_on_line: Option<agent_adaptor_driver::CancellationToken>,
}

impl LineProtocol for Recorder {
    fn line_into(&mut self, raw: &[u8], _out: &mut Vec<Out>) {
        self.lines.push(raw.to_vec());
        if let Some(c) = &self.cancel_on_line {
            c.cancel();
        }
    }
    fn terminated(&self) -> bool {
        false
    }
}

#[async_trait]
impl Controller for Recorder {
    async fn control(
        &mut self,
        _frame: ControlFrame,
        _stdin: &mut Option<StdinController>,
        _sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        Ok(())
    }
    async fn interrupt(&mut self, _stdin: &mut Option<StdinController>) {
        self.interrupts += 1;
        tokio::time::sleep(self.interrupt_sleep).await;
    }
}

#[derive(Default)]
struct Events(Mutex<Vec<RunEvent>>);

impl EventSink for Events {
    fn emit(&self, event: RunEvent) -> Emit<'_> {
        self.0.lock().unwrap().push(event);
        Emit::ready(Ok(()))
    }
    fn emit_stream(&self, _payload: StreamPayload) -> Emit<'_> {
        Emit::ready(Ok(()))
    }
}

fn sh(script: &str) -> Command {
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", script])
        .stdin(StdinMode::Pipe)
        .close_grace(Duration::from_millis(100))
        .term_grace(Duration::from_millis(100));
    cmd
}

#[tokio::test]
async fn cancel_bounds_a_slow_interrupt_and_asks_once() {
    let ctx = RunContext::new("r");
    let mut session = Recorder {
        interrupt_sleep: Duration::from_secs(10),
        cancel_on_line: Some(ctx.cancel.clone()),
        ..Default::default()
    };
    // One line, then a CLI that never ends by itself.
    let cmd = sh("echo first; exec sleep 30");
    let sink = Events::default();
    let ran = tokio::time::timeout(
        BOUND,
        pump::run_duplex(CLI, &cmd, &ctx, &sink, &mut session, &[]),
    )
    .await
    .expect("the pump gave the interrupt no bound");
    assert!(matches!(ran, Err(DriverError::Cancelled)), "{ran:?}");
    assert_eq!(session.interrupts, 1);
    assert_eq!(session.lines, [b"first".to_vec()]);
}

#[tokio::test]
async fn a_spilled_line_reaches_the_protocol_byte_exact() {
    let long = "x".repeat(100) + "\u{e9}{\"a\":1}" + &"y".repeat(50);
    let mut cmd = sh(&format!("printf '%s\\n' short '{long}' after"));
    cmd.max_line_in_memory(16);
    let ctx = RunContext::new("r");
    let sink = Events::default();
    let mut session = Recorder::default();
    let ran = tokio::time::timeout(
        BOUND,
        pump::run_duplex(CLI, &cmd, &ctx, &sink, &mut session, &[]),
    )
    .await
    .expect("the fake CLI ends by itself");
    ran.unwrap();
    assert_eq!(
        session.lines,
        [
            b"short".to_vec(),
            long.as_bytes().to_vec(),
            b"after".to_vec()
        ]
    );
}

/// A controller whose requests are work the pump drives while it reads on:
/// `call-<name>` lines start a call; `slow` finishes only once `fast` was
/// answered, so a pump that awaited a call before reading on would never
/// answer either.
#[derive(Default)]
struct Worker {
    lines: Vec<String>,
    running: futures::stream::FuturesUnordered<futures::future::BoxFuture<'static, String>>,
    done: Vec<String>,
    release_slow: std::sync::Arc<tokio::sync::Notify>,
    ended: bool,
}

impl LineProtocol for Worker {
    fn line_into(&mut self, raw: &[u8], out: &mut Vec<Out>) {
        let line = String::from_utf8_lossy(raw).into_owned();
        if let Some(name) = line.strip_prefix("call-") {
            out.push(Out::Control(ControlFrame::Request {
                id: serde_json::Value::Null,
                method: name.to_owned(),
                params: serde_json::Value::Null,
            }));
        }
        self.ended |= line == "end";
        self.lines.push(line);
    }
    fn terminated(&self) -> bool {
        self.ended
    }
}

#[async_trait]
impl Controller for Worker {
    async fn control(
        &mut self,
        frame: ControlFrame,
        _stdin: &mut Option<StdinController>,
        _sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        if let ControlFrame::Request { method, .. } = frame {
            let release = self.release_slow.clone();
            self.running.push(Box::pin(async move {
                if method == "slow" {
                    release.notified().await;
                }
                method
            }));
        }
        Ok(())
    }
    async fn interrupt(&mut self, _stdin: &mut Option<StdinController>) {}
    fn poll_work(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        use futures::StreamExt as _;
        while let std::task::Poll::Ready(Some(name)) = self.running.poll_next_unpin(cx) {
            self.done.push(name);
        }
        if self.done.is_empty() {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    }
    async fn finish_work(
        &mut self,
        stdin: &mut Option<StdinController>,
        _sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        for name in std::mem::take(&mut self.done) {
            pump::write_frame(stdin, &name).await;
            if name == "fast" {
                self.release_slow.notify_one();
            }
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_controllers_work_runs_while_the_pump_reads_on() {
    // The CLI asks for two calls, then echoes the answers in the order they
    // come: the fast one first although it was asked second.
    let cmd = sh(
        "echo call-slow; echo call-fast; read a; echo \"got $a\"; read b; echo \"got $b\"; echo end",
    );
    let ctx = RunContext::new("r");
    let sink = Events::default();
    let mut session = Worker::default();
    let ran = tokio::time::timeout(
        BOUND,
        pump::run_duplex(CLI, &cmd, &ctx, &sink, &mut session, &[]),
    )
    .await
    .expect("a slow call held up the pump");
    ran.unwrap();
    assert_eq!(
        session.lines,
        ["call-slow", "call-fast", "got fast", "got slow", "end"]
    );
}
