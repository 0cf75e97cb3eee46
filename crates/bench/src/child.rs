//! The measured side: one contender per process (`agent-adaptor-bench child
//! …`), which prints one [`ChildReport`] JSON line on stdout and exits.
//!
//! Every contender spawns the fake CLI with the same flags (see
//! [`fake_opts`]), writes the prompt `hi` on its stdin and reads its stdout
//! to the end. What differs is what happens to each line:
//!
//! * [`Contender::Limit`] — `BufRead::read_until(b'\n')` and
//!   `serde_json::from_slice::<Value>`, nothing else, on one thread with
//!   blocking std I/O: the least any consumer must do.
//! * [`Contender::LimitStream`] — the limit's loop in a tokio task on a
//!   multi-thread runtime, reading tokio's pipe, each parsed line handed
//!   (in batches of the lines already read) through a bounded channel to a
//!   consumer on the `block_on` thread: what handing the parsed output
//!   itself to another thread costs, before any event is built.
//! * [`Contender::AaRun`] / [`Contender::AaRunBlocking`] — `agent.run("hi")`
//!   end to end on a multi-thread tokio runtime (default mode, or
//!   `blocking_events()`), which keeps the complete raw stdout (spilled to a
//!   file beyond 4 MiB) and the transcript.
//! * [`Contender::AaStream`] / [`Contender::AaStreamBlocking`] —
//!   `agent.stream("hi")` with a consumer that reads every event, then
//!   `result()`.
//! * [`Contender::AaStreamCurrentThread`] — the same on a `current_thread`
//!   runtime: the run task and the consumer share one thread, so no event
//!   crosses threads (a diagnostic for the cost of those hand-overs).
//! * [`Contender::AaCliJson`] — the release `agent-adaptor run --driver
//!   claude --json` with the fake CLI as `claude`, its stdout drained (what
//!   a host in another language does; see [`cli_json`](crate::cli_json)).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use agent_adaptor_core::{Agent, Event, Phase, RunResult, Runner};
use agent_adaptor_drivers::{claude, codex};
use agent_adaptor_testkit::replay::OPTS_ENV;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::usage::{self, Usage};
use crate::workload::{Kind, STAMP_PREFIX};

/// The prompt every contender sends.
pub const PROMPT: &str = "hi";

/// A Rust contender (the SDKs are Node scripts, see `tests/bench/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Contender {
    /// The raw pipe: read lines, `serde_json` each, nothing else.
    #[serde(rename = "limit")]
    Limit,
    /// `agent.run()`, default (non-blocking) event mode.
    #[serde(rename = "aa-run")]
    AaRun,
    /// `agent.run()` with `blocking_events()`.
    #[serde(rename = "aa-run-blocking")]
    AaRunBlocking,
    /// `agent.stream()` and a consumer reading every event, default mode.
    #[serde(rename = "aa-stream")]
    AaStream,
    /// `agent.stream()` and a consumer reading every event, blocking mode.
    #[serde(rename = "aa-stream-blocking")]
    AaStreamBlocking,
    /// `agent.stream()` on a `current_thread` runtime, default mode.
    #[serde(rename = "aa-stream-current-thread")]
    AaStreamCurrentThread,
    /// The limit's work in a tokio task, each parsed line handed to a
    /// consumer on another thread.
    #[serde(rename = "limit-stream")]
    LimitStream,
    /// The `agent-adaptor` binary, `run --json`, its stdout drained
    /// (Claude only).
    #[serde(rename = "aa-cli-json")]
    AaCliJson,
    /// The official SDK of the workload's CLI (a Node process).
    #[serde(rename = "sdk")]
    Sdk,
}

impl Contender {
    /// Every contender, in the bench's interleaving order.
    pub const ALL: [Contender; 9] = [
        Contender::Limit,
        Contender::LimitStream,
        Contender::AaRun,
        Contender::AaRunBlocking,
        Contender::AaStream,
        Contender::AaStreamBlocking,
        Contender::AaStreamCurrentThread,
        Contender::AaCliJson,
        Contender::Sdk,
    ];

    /// The name used on the command line and in the results.
    pub fn as_str(self) -> &'static str {
        match self {
            Contender::Limit => "limit",
            Contender::LimitStream => "limit-stream",
            Contender::AaRun => "aa-run",
            Contender::AaRunBlocking => "aa-run-blocking",
            Contender::AaStream => "aa-stream",
            Contender::AaStreamBlocking => "aa-stream-blocking",
            Contender::AaStreamCurrentThread => "aa-stream-current-thread",
            Contender::AaCliJson => "aa-cli-json",
            Contender::Sdk => "sdk",
        }
    }

    /// Whether this contender runs the workloads of `kind` (the CLI's
    /// Codex driver speaks the app-server protocol, which the Codex
    /// workload, an `exec` stream, is not).
    pub fn runs(self, kind: Kind) -> bool {
        self != Contender::AaCliJson || kind == Kind::Claude
    }

    /// Parses [`Contender::as_str`].
    pub fn parse(s: &str) -> Option<Contender> {
        Contender::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// What one contender process reports (one JSON line on stdout).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ChildReport {
    /// Whether the run completed successfully.
    pub ok: bool,
    /// Why not.
    pub error: Option<String>,
    /// Events (messages) delivered to the consumer; `None` for `run()`,
    /// which delivers none to the host.
    pub events: Option<u64>,
    /// Events the broker dropped (default mode only).
    pub dropped: u64,
    /// Lines the limit parsed.
    pub lines: Option<u64>,
    /// The raw stdout length kept in the result (agent-adaptor).
    pub raw_stdout_bytes: Option<u64>,
    /// Whether that raw stdout is held in memory (else spilled to a file).
    pub raw_in_memory: Option<bool>,
    /// Transcript items in the result (agent-adaptor).
    pub transcript_items: Option<u64>,
    /// This process alone (the fake CLI is not included), at exit.
    pub usage: Usage,
    /// Latency mode: receive time minus write time of each stamped text, ns.
    pub latencies_ns: Vec<i64>,
}

/// Where and how a contender finds its fake CLI.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The workload's protocol.
    pub kind: Kind,
    /// The `fake-cli` binary.
    pub fake: PathBuf,
    /// The workload file.
    pub workload: PathBuf,
    /// `--delay-ms` for the fake CLI (latency runs).
    pub delay_ms: u64,
    /// Collect latencies of stamped texts.
    pub latency: bool,
    /// The `agent-adaptor` binary ([`Contender::AaCliJson`]).
    pub cli: Option<PathBuf>,
}

/// The fake CLI's own flags, as the JSON array [`OPTS_ENV`] takes: replay
/// `workload` once per turn (a plain-text prompt on stdin is one turn, a
/// stream-json `user` frame too, and `control_request`s are answered), so
/// that every contender, whatever it writes on stdin, gets the same bytes.
pub fn fake_opts(workload: &Path, delay_ms: u64) -> String {
    // The fake CLI reads a relative fixture path relative to the captures
    // directory: always pass an absolute one.
    let workload = std::path::absolute(workload).unwrap_or_else(|_| workload.to_path_buf());
    let mut opts = vec![
        "--fixture".to_owned(),
        workload.display().to_string(),
        "--serve-turns".to_owned(),
    ];
    if delay_ms > 0 {
        opts.push("--delay-ms".to_owned());
        opts.push(delay_ms.to_string());
    }
    serde_json::to_string(&opts).unwrap_or_default()
}

/// Wall-clock now, ns since the Unix epoch (the fake CLI's stamp clock).
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// The write time stamped at the start of `text`, if any.
pub fn stamp_of(text: &str) -> Option<i64> {
    let rest = text.strip_prefix(STAMP_PREFIX)?;
    let end = rest.find(';')?;
    rest[..end].parse().ok()
}

/// Runs one contender and returns its report (the usage is filled in last).
pub fn run(contender: Contender, setup: &Setup) -> ChildReport {
    if contender == Contender::AaCliJson {
        // Its usage is the CLI's (and the fake CLI's), set by `cli_json`.
        return crate::cli_json::run(setup).unwrap_or_else(|error| ChildReport {
            error: Some(error),
            ..ChildReport::default()
        });
    }
    let mut report = match contender {
        Contender::Limit => limit(setup),
        Contender::LimitStream => limit_stream(setup),
        Contender::Sdk => Err("the SDK contenders are Node scripts (tests/bench)".to_owned()),
        other => agent_adaptor(other, setup),
    }
    .unwrap_or_else(|error| ChildReport {
        error: Some(error),
        ..ChildReport::default()
    });
    report.usage = usage::this_process();
    report
}

fn limit(setup: &Setup) -> Result<ChildReport, String> {
    let mut child = Command::new(&setup.fake)
        .env(OPTS_ENV, fake_opts(&setup.workload, setup.delay_ms))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", setup.fake.display()))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    stdin
        .write_all(format!("{PROMPT}\n").as_bytes())
        .map_err(|e| e.to_string())?;
    drop(stdin);
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::with_capacity(64 * 1024);
    let mut report = ChildReport::default();
    let mut lines = 0u64;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let value: Value = serde_json::from_slice(text).map_err(|e| e.to_string())?;
        lines += 1;
        received(&mut report, setup, &value);
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    Ok(ended(report, status, lines))
}

/// A raw-pipe contender got `value`: its latency, when measured.
fn received(report: &mut ChildReport, setup: &Setup, value: &Value) {
    if setup.latency
        && let Some(sent) = stamped_line(setup.kind, value)
    {
        report.latencies_ns.push(now_ns() - sent);
    }
    std::hint::black_box(value);
}

/// A raw-pipe contender's report once the fake CLI exited with `status`
/// after `lines` lines.
fn ended(mut report: ChildReport, status: std::process::ExitStatus, lines: u64) -> ChildReport {
    report.ok = status.success();
    if !status.success() {
        report.error = Some(format!("fake CLI exited with {status}"));
    }
    report.lines = Some(lines);
    report.events = Some(lines);
    report
}

/// Lines a [`Contender::LimitStream`] batch holds at most.
const LIMIT_STREAM_BATCH: usize = 1024;

fn limit_stream(setup: &Setup) -> Result<ChildReport, String> {
    let rt = runtime()?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<Value>>(LIMIT_STREAM_BATCH);
    let mut cmd = tokio::process::Command::new(&setup.fake);
    cmd.env(OPTS_ENV, fake_opts(&setup.workload, setup.delay_ms))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let reader = rt.spawn(read_batches(cmd, tx));
    let mut report = ChildReport::default();
    let lines = rt.block_on(async {
        let mut lines = 0u64;
        while let Some(batch) = rx.recv().await {
            for value in batch {
                lines += 1;
                received(&mut report, setup, &value);
            }
        }
        lines
    });
    let status = rt.block_on(reader).map_err(|e| e.to_string())??;
    Ok(ended(report, status, lines))
}

/// [`Contender::LimitStream`]'s reader task: the limit's loop on tokio's
/// pipe, each parsed line pushed into a batch that is sent on as soon as no
/// further complete line is buffered (or it is full).
async fn read_batches(
    mut cmd: tokio::process::Command,
    tx: tokio::sync::mpsc::Sender<Vec<Value>>,
) -> Result<std::process::ExitStatus, String> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("spawn {:?}: {e}", cmd.as_std().get_program()))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    stdin
        .write_all(format!("{PROMPT}\n").as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    drop(stdin);
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut reader = tokio::io::BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::with_capacity(64 * 1024);
    let mut batch = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        batch.push(serde_json::from_slice::<Value>(text).map_err(|e| e.to_string())?);
        let more = reader.buffer().contains(&b'\n');
        if (!more || batch.len() >= LIMIT_STREAM_BATCH)
            && tx.send(std::mem::take(&mut batch)).await.is_err()
        {
            break;
        }
    }
    // Every line was sent with its batch: the last one found no line after it.
    child.wait().await.map_err(|e| e.to_string())
}

/// The stamp of a Claude text delta or a Codex agent message line.
fn stamped_line(kind: Kind, v: &Value) -> Option<i64> {
    let text = match kind {
        Kind::Claude => v.pointer("/event/delta/text"),
        Kind::Codex => v.pointer("/item/text"),
    };
    text.and_then(Value::as_str).and_then(stamp_of)
}

/// The agent for `setup`, in default or blocking event mode.
pub fn agent(setup: &Setup, blocking: bool) -> Result<Agent, String> {
    let opts = fake_opts(&setup.workload, setup.delay_ms);
    let builder = match setup.kind {
        Kind::Claude => {
            let mut cfg = claude::config();
            cfg.command = setup.fake.clone();
            cfg.env.insert(OPTS_ENV.into(), opts);
            Agent::builder(claude::driver(cfg))
        }
        Kind::Codex => {
            let mut cfg = codex::Config {
                command: setup.fake.clone(),
                transport: codex::Transport::Exec,
                ..Default::default()
            };
            cfg.env.insert(OPTS_ENV.into(), opts);
            Agent::builder(codex::driver(cfg))
        }
    };
    let builder = if blocking {
        builder.blocking_events()
    } else {
        builder
    };
    builder.build().map_err(|e| e.to_string())
}

/// A multi-thread tokio runtime with the default worker count.
pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

fn agent_adaptor(contender: Contender, setup: &Setup) -> Result<ChildReport, String> {
    let blocking = matches!(
        contender,
        Contender::AaRunBlocking | Contender::AaStreamBlocking
    );
    let agent = agent(setup, blocking)?;
    let rt = if contender == Contender::AaStreamCurrentThread {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?
    } else {
        runtime()?
    };
    let mut report = ChildReport::default();
    let outcome = match contender {
        Contender::AaRun | Contender::AaRunBlocking => {
            rt.block_on(async { agent.run(PROMPT).await })
        }
        _ => {
            let (tally, outcome) = rt.block_on(consume(&agent, setup.latency));
            report.events = Some(tally.events);
            report.dropped = tally.dropped;
            report.latencies_ns = tally.latencies_ns;
            outcome
        }
    };
    match outcome {
        Ok(result) => {
            report.ok = true;
            describe(&mut report, &result);
        }
        Err(e) => report.error = Some(e.to_string()),
    }
    Ok(report)
}

fn describe(report: &mut ChildReport, result: &RunResult) {
    let raw = &result.raw().stdout;
    report.raw_stdout_bytes = Some(raw.len());
    report.raw_in_memory = Some(raw.as_memory().is_some());
    report.transcript_items = Some(result.transcript().len() as u64);
}

/// What a stream consumer saw.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Events received (a `Dropped` report included).
    pub events: u64,
    /// Events the broker reported dropped.
    pub dropped: u64,
    /// `Dropped` reports among the events.
    pub dropped_reports: u64,
    /// Latencies of stamped text deltas, ns.
    pub latencies_ns: Vec<i64>,
}

/// Streams one run, reading every event, then awaits its result.
pub async fn consume(
    agent: &Agent,
    latency: bool,
) -> (Tally, Result<RunResult, agent_adaptor_core::Error>) {
    // Inside the runtime: `stream` starts the run at once.
    let mut stream = agent.stream(PROMPT);
    let mut tally = Tally::default();
    while let Some(event) = stream.next().await {
        tally.events += 1;
        match &event {
            Event::Dropped(d) => {
                tally.dropped += d.count;
                tally.dropped_reports += 1;
            }
            Event::TextDelta(d) if latency && d.phase == Phase::Content => {
                if let Some(sent) = stamp_of(&d.text) {
                    tally.latencies_ns.push(now_ns() - sent);
                }
            }
            _ => {}
        }
        std::hint::black_box(&event);
    }
    let outcome = stream.result().await;
    (tally, outcome)
}
