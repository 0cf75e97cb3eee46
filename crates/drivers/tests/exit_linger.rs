//! Every run ends: a CLI that prints its whole answer — terminal line
//! included — and then never exits (a Node CLI holding an MCP handle open)
//! is stopped after the exit grace, and the run is still a success with its
//! text and checkpoint, a notice saying the CLI had to be stopped, and no
//! process of the CLI left.
//!
//! The stand-in wraps the fake CLI: it records its own pid, replays a real
//! capture, then loops `sleep 1` forever (recording each sleep's pid), its
//! stdout still open — or, in the variant, closed together with stderr.
//! What is left is checked by pid and process group in /proc, never by
//! name. Each run is bounded by a tokio timeout, so the old behaviour (a run
//! that never ends) fails instead of hanging.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_adaptor_core::{Agent, Event, FailureReason, RunResult, Runner};
use agent_adaptor_driver::Driver;
use agent_adaptor_drivers::child_env::EnvVars;
use agent_adaptor_drivers::{claude, codex, cursor, gemini};
use agent_adaptor_testkit::fixtures;
use agent_adaptor_testkit::replay::{OPTS_ENV, fake_cli_binary};
use futures::StreamExt;

/// Far above exit grace (3 s) + term grace: only a run that never ends reaches it.
const BOUND: Duration = Duration::from_secs(30);

/// The stand-in: record `$$`, replay, then stay forever (optionally with
/// stdout and stderr closed), recording every child's pid.
const LINGERS: &str = r#"#!/bin/sh
echo $$ >> "$PIDS_FILE"
"$REPLAY" "$@"
if [ -n "$CLOSE_OUTPUT" ]; then exec >&- 2>&-; fi
while :; do
  sleep 1 &
  echo $! >> "$PIDS_FILE"
  wait $!
done
"#;

/// How the stand-in ends its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// Stdout stays open while it loops.
    Open,
    /// `exec >&- 2>&-`, then loops.
    Closed,
}

struct StandIn {
    dir: tempfile::TempDir,
}

impl StandIn {
    fn new() -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("cli");
        std::fs::write(&script, LINGERS).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        StandIn { dir }
    }

    fn command(&self) -> PathBuf {
        self.dir.path().join("cli")
    }

    fn pids_file(&self) -> PathBuf {
        self.dir.path().join("pids")
    }

    /// The environment the stand-in needs: the fake CLI with `opts`.
    fn bind(&self, env: &mut EnvVars, opts: String, tail: Tail) {
        env.insert(
            "REPLAY".into(),
            fake_cli_binary().unwrap().display().to_string(),
        );
        env.insert("PIDS_FILE".into(), self.pids_file().display().to_string());
        if tail == Tail::Closed {
            env.insert("CLOSE_OUTPUT".into(), "1".into());
        }
        env.insert(OPTS_ENV.into(), opts);
    }

    /// Every pid the stand-in recorded (itself first).
    fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.pids_file())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }
}

/// `(state, pgid)` of a live (non-zombie) process, from /proc.
fn live(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let _ppid = f.next()?;
    let pgid = f.next()?.parse().ok()?;
    (state != 'Z').then_some((state, pgid))
}

/// Every live process whose process group is `pgid`.
fn group(pgid: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| live(*pid).is_some_and(|(_, g)| g == pgid))
        .collect()
}

/// Nothing the stand-in recorded, and nothing of its process group, is
/// alive (a short bounded wait: the group is swept before the run returns,
/// but a killed process may take a moment to leave /proc).
/// `looped`: the stand-in got as far as its endless loop (it recorded a
/// child's pid besides its own).
async fn assert_nothing_left(stand_in: &StandIn, looped: bool) {
    let pids = stand_in.pids();
    let least = if looped { 2 } else { 1 };
    assert!(pids.len() >= least, "the stand-in ran: {pids:?}");
    let leader = pids[0];
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let alive: Vec<i32> = pids
            .iter()
            .copied()
            .filter(|p| live(*p).is_some())
            .chain(group(leader))
            .collect();
        if alive.is_empty() {
            return;
        }
        assert!(
            Instant::now() < until,
            "processes of the stand-in are left: {alive:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Run `prompt` to its end (approving any approval), bounded by [`BOUND`].
async fn run(driver: impl Driver, prompt: &str) -> (Vec<Event>, RunResult) {
    let agent = Agent::new(driver);
    let ran = tokio::time::timeout(BOUND, async {
        let mut stream = agent.stream(prompt);
        let mut events = Vec::new();
        while let Some(ev) = stream.next().await {
            if let Event::ApprovalRequest(req) = &ev {
                req.approve().unwrap();
            }
            events.push(ev);
        }
        (events, stream.result().await)
    })
    .await;
    let (events, outcome) = ran.expect("the run ended (a lingering CLI hung it)");
    let result = outcome.unwrap_or_else(|e| panic!("the run failed: {e}"));
    (events, result)
}

/// The one notice that the CLI had to be stopped.
fn assert_stopped_notice(events: &[Event], cli: &str, terminal: &str) {
    let stops: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Notice(n)
                if n.metadata.get("reason").map(String::as_str) == Some("stopped_after_output") =>
            {
                Some(n)
            }
            _ => None,
        })
        .collect();
    assert_eq!(stops.len(), 1, "one notice: {stops:?}");
    let n = stops[0];
    assert_eq!(
        n.text,
        format!("{cli} did not exit within 3 s after its {terminal} line; stopped with SIGTERM")
    );
    assert_eq!(
        n.metadata.get("signal").map(String::as_str),
        Some("SIGTERM")
    );
}

/// The stand-in's environment and the config of each family.
fn claude_on(
    s: &StandIn,
    fixture: &str,
    tail: Tail,
) -> agent_adaptor_drivers::streamjson::StreamJsonDriver {
    let mut cfg = claude::config();
    cfg.command = s.command();
    let opts = format!("--fixture {}", fixtures::path(fixture).display());
    s.bind(&mut cfg.env, opts, tail);
    claude::driver(cfg)
}

async fn claude_case(tail: Tail) {
    let s = StandIn::new();
    let (events, result) = run(claude_on(&s, "claude/print-basic.jsonl", tail), "hi").await;
    assert!(!result.text.is_empty(), "the answer is kept");
    assert!(result.raw().terminal.is_some());
    assert!(result.checkpoint().is_some(), "a valid checkpoint");
    assert_stopped_notice(&events, "Claude Code", "result");
    assert_nothing_left(&s, true).await;
}

#[tokio::test]
async fn claude_code_answering_and_never_exiting_is_stopped_and_succeeds() {
    claude_case(Tail::Open).await;
}

#[tokio::test]
async fn claude_code_closing_its_output_and_staying_is_stopped_and_succeeds() {
    claude_case(Tail::Closed).await;
}

fn gemini_on(s: &StandIn, tail: Tail) -> gemini::GeminiDriver {
    let mut cfg = gemini::Config {
        command: s.command(),
        model: Some("gemini-2.5-flash".into()),
        ..Default::default()
    };
    let fixture = fixtures::path("gemini/stream-basic.jsonl");
    let opts = serde_json::to_string(&["--fixture", &fixture.display().to_string()]).unwrap();
    s.bind(&mut cfg.env, opts, tail);
    gemini::driver(cfg)
}

async fn gemini_case(tail: Tail) {
    let s = StandIn::new();
    let (events, result) = run(gemini_on(&s, tail), "hi").await;
    assert!(!result.text.is_empty());
    assert!(result.checkpoint().is_some(), "a valid checkpoint");
    assert_stopped_notice(&events, "Gemini CLI", "result");
    assert_nothing_left(&s, true).await;
}

#[tokio::test]
async fn gemini_cli_answering_and_never_exiting_is_stopped_and_succeeds() {
    gemini_case(Tail::Open).await;
}

#[tokio::test]
async fn gemini_cli_closing_its_output_and_staying_is_stopped_and_succeeds() {
    gemini_case(Tail::Closed).await;
}

fn cursor_on(s: &StandIn, tail: Tail) -> cursor::CursorDriver {
    let mut cfg = cursor::Config {
        command: s.command(),
        ..Default::default()
    };
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cursor/success.jsonl");
    let opts = serde_json::to_string(&["--fixture", &fixture.display().to_string()]).unwrap();
    s.bind(&mut cfg.env, opts, tail);
    cursor::driver(cfg)
}

#[tokio::test]
async fn cursor_agent_answering_and_never_exiting_is_stopped_and_succeeds() {
    let s = StandIn::new();
    let (events, result) = run(cursor_on(&s, Tail::Open), "hi").await;
    assert!(!result.text.is_empty());
    assert!(result.checkpoint().is_some(), "a valid checkpoint");
    assert_stopped_notice(&events, "Cursor Agent", "result");
    assert_nothing_left(&s, true).await;
}

fn codex_on(
    s: &StandIn,
    transport: codex::Transport,
    fixture: &str,
    tail: Tail,
) -> codex::CodexDriver {
    let mut cfg = codex::Config {
        command: s.command(),
        transport,
        ..Default::default()
    };
    let opts = format!("--fixture {}", fixtures::path(fixture).display());
    s.bind(&mut cfg.env, opts, tail);
    codex::driver(cfg)
}

async fn codex_exec_case(tail: Tail) {
    let s = StandIn::new();
    let driver = codex_on(&s, codex::Transport::Exec, "codex/exec-basic.jsonl", tail);
    let (events, result) = run(driver, "hi").await;
    assert!(!result.text.is_empty());
    assert!(result.checkpoint().is_some(), "a valid checkpoint");
    assert_stopped_notice(&events, "Codex", "turn.completed");
    assert_nothing_left(&s, true).await;
}

#[tokio::test]
async fn codex_exec_answering_and_never_exiting_is_stopped_and_succeeds() {
    codex_exec_case(Tail::Open).await;
}

#[tokio::test]
async fn codex_exec_closing_its_output_and_staying_is_stopped_and_succeeds() {
    codex_exec_case(Tail::Closed).await;
}

async fn codex_app_server_case(tail: Tail) {
    let s = StandIn::new();
    let driver = codex_on(
        &s,
        codex::Transport::AppServer,
        "codex/app-server-approval.transcript",
        tail,
    );
    let (events, result) = run(driver, "RUNTOOL TOUCH please").await;
    assert_eq!(result.text, "Tool said hi.");
    assert!(result.checkpoint().is_some(), "a valid checkpoint");
    assert_stopped_notice(&events, "Codex app-server", "turn/completed");
    assert_nothing_left(&s, true).await;
}

#[tokio::test]
async fn codex_app_server_answering_and_never_exiting_is_stopped_and_succeeds() {
    codex_app_server_case(Tail::Open).await;
}

#[tokio::test]
async fn codex_app_server_closing_its_output_and_staying_is_stopped_and_succeeds() {
    codex_app_server_case(Tail::Closed).await;
}

// ---------------------------------------------------------------------------
// The run-level deadline (`Agent::builder(..).timeout(..)`): a CLI that
// stops mid-turn and never prints its terminal line ends at the deadline
// with a typed `deadline_exceeded`, and nothing of it is left.

/// Run `prompt` on `driver` with a run timeout of 1 s; the typed failure.
async fn run_past_deadline(driver: impl Driver, prompt: &str) -> FailureReason {
    let agent = Agent::builder(driver)
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let outcome = tokio::time::timeout(BOUND, agent.run(prompt))
        .await
        .expect("the deadline ended the run");
    let err = match outcome {
        Ok(r) => panic!("a run past its deadline succeeded: {:?}", r.text),
        Err(e) => e,
    };
    err.as_run_error()
        .unwrap_or_else(|| panic!("not a RunError: {err}"))
        .reason
        .clone()
}

/// The stand-in prints the capture's first line, then hangs (stdout open).
const STALLS: &str = "--truncate-after 1 --hang";

#[tokio::test]
async fn the_run_deadline_ends_every_cli_driver_mid_turn() {
    let s = StandIn::new();
    let mut cfg = claude::config();
    cfg.command = s.command();
    let opts = format!(
        "--fixture {} {STALLS}",
        fixtures::path("claude/print-basic.jsonl").display()
    );
    s.bind(&mut cfg.env, opts, Tail::Open);
    let reason = run_past_deadline(claude::driver(cfg), "hi").await;
    assert_eq!(reason, FailureReason::DeadlineExceeded, "claude");
    assert_nothing_left(&s, false).await;

    for (name, fixture) in [
        ("gemini", fixtures::path("gemini/stream-basic.jsonl")),
        (
            "cursor",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cursor/success.jsonl"),
        ),
    ] {
        let s = StandIn::new();
        let fixture = fixture.display().to_string();
        let opts =
            serde_json::to_string(&["--fixture", &fixture, "--truncate-after", "1", "--hang"])
                .unwrap();
        let reason = if name == "gemini" {
            let mut cfg = gemini::Config {
                command: s.command(),
                model: Some("gemini-2.5-flash".into()),
                ..Default::default()
            };
            s.bind(&mut cfg.env, opts, Tail::Open);
            run_past_deadline(gemini::driver(cfg), "hi").await
        } else {
            let mut cfg = cursor::Config {
                command: s.command(),
                ..Default::default()
            };
            s.bind(&mut cfg.env, opts, Tail::Open);
            run_past_deadline(cursor::driver(cfg), "hi").await
        };
        assert_eq!(reason, FailureReason::DeadlineExceeded, "{name}");
        assert_nothing_left(&s, false).await;
    }

    for (transport, fixture) in [
        (codex::Transport::Exec, "codex/exec-basic.jsonl"),
        (
            codex::Transport::AppServer,
            "codex/app-server-approval.transcript",
        ),
    ] {
        let s = StandIn::new();
        let mut cfg = codex::Config {
            command: s.command(),
            transport,
            ..Default::default()
        };
        let opts = format!("--fixture {} {STALLS}", fixtures::path(fixture).display());
        s.bind(&mut cfg.env, opts, Tail::Open);
        let reason = run_past_deadline(codex::driver(cfg), "hi").await;
        assert_eq!(reason, FailureReason::DeadlineExceeded, "{transport:?}");
        assert_nothing_left(&s, false).await;
    }
}
