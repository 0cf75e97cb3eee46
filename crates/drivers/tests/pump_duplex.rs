//! The shared line pump, driven with a [`Duplex`] over `/bin/sh`: what
//! every CLI driver with a controller (Codex app-server, the stream-json
//! family) relies on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
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

/// Answers the line `ask` only once it has read the line after it: an
/// answer a pump could only give by reading on while it is pending.
#[derive(Default)]
struct LateAnswer {
    lines: Vec<Vec<u8>>,
    pending: Option<tokio::sync::oneshot::Receiver<String>>,
    release: Option<tokio::sync::oneshot::Sender<String>>,
    answer: Option<String>,
}

impl LineProtocol for LateAnswer {
    fn line_into(&mut self, raw: &[u8], _out: &mut Vec<Out>) {
        self.lines.push(raw.to_vec());
        if raw == b"ask" {
            let (tx, rx) = tokio::sync::oneshot::channel();
            self.pending = Some(rx);
            self.release = Some(tx);
        } else if let Some(tx) = self.release.take() {
            let _ = tx.send("answer-1".into());
        }
    }
    fn terminated(&self) -> bool {
        false
    }
}

#[async_trait]
impl Controller for LateAnswer {
    async fn control(
        &mut self,
        _frame: ControlFrame,
        _stdin: &mut Option<StdinController>,
        _sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        Ok(())
    }
    async fn interrupt(&mut self, _stdin: &mut Option<StdinController>) {}
    fn poll_work(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        let Some(rx) = self.pending.as_mut() else {
            return std::task::Poll::Pending;
        };
        std::pin::Pin::new(rx).poll(cx).map(|answer| {
            self.pending = None;
            self.answer = answer.ok();
        })
    }
    async fn finish_work(
        &mut self,
        stdin: &mut Option<StdinController>,
        _sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        if let Some(answer) = self.answer.take() {
            pump::write_frame(stdin, &answer).await;
        }
        Ok(())
    }
}

#[tokio::test]
async fn an_answer_in_flight_is_written_while_the_pump_reads_on() {
    // The fake CLI asks, goes on printing, and only then waits for the answer.
    let cmd = sh("echo ask; echo later; read answer; echo \"got $answer\"");
    let ctx = RunContext::new("r");
    let sink = Events::default();
    let mut session = LateAnswer::default();
    let ran = tokio::time::timeout(
        BOUND,
        pump::run_duplex(CLI, &cmd, &ctx, &sink, &mut session, &[]),
    )
    .await
    .expect("the answer was written while the pump read on");
    ran.unwrap();
    assert_eq!(
        session.lines,
        [b"ask".to_vec(), b"later".to_vec(), b"got answer-1".to_vec()]
    );
}
