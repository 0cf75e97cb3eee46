//! Resident `codex app-server` processes, hermetic: the fake CLI replays a
//! transcript of one server serving several turns of a thread (built from
//! the captured approval run, approval taken out), checking each frame the
//! driver writes (`--stdin-check type`) and recording them.
//!
//! Proven here: a thread's turns share one server (spawns counted), turn 2
//! and 3 are a bare `turn/start` (no second handshake), each turn's raw
//! stdout is exactly its own lines, every frame validates against the
//! binary's schema; a server lost after `turn/start` fails the run without
//! writing it again; a server found dead falls back to a new one that
//! resumes the thread; `Agent::close` reaps.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod codex_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_adaptor_core::thread::MemoryStore;
use agent_adaptor_core::{
    Agent, Error, Event, ProcessKind, RunOptions, RunResult, RunStream, Runner, notice_kind,
};
use agent_adaptor_drivers::codex::{self, CodexDriver, Transport};
use agent_adaptor_testkit::fixtures::{self, Capture, Direction};
use agent_adaptor_testkit::replay::{OPTS_ENV, fake_cli_binary};
use codex_support::{Dir, SchemaCheck};
use futures::StreamExt;
use serde_json::Value;

const CAPTURE: &str = "codex/app-server-approval.transcript";
const THREAD: &str = "01a228cd-3b13-76f0-8ff7-e4d0aff05213";
const TURN: &str = "01a228cd-3b2f-7d03-a6c6-8fb3421da796";
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

fn frames() -> Vec<(Direction, String)> {
    match fixtures::load(CAPTURE).unwrap() {
        Capture::Transcript(frames) => frames.into_iter().map(|f| (f.dir, f.line)).collect(),
        Capture::Lines(_) => unreachable!(),
    }
}

/// The handshake of the capture: up to and including the client's
/// `turn/start` (id 3).
fn handshake() -> Vec<(Direction, String)> {
    let f = frames();
    let at = f
        .iter()
        .position(|(d, l)| *d == Direction::SdkToCli && l.contains("\"turn/start\""))
        .unwrap();
    f[..=at].to_vec()
}

/// The server's lines of turn `k` (the capture's turn, approval taken out,
/// answering `turn/start` id `2 + k`, its own turn id and answer text).
fn turn_lines(k: u64) -> Vec<String> {
    let f = frames();
    let start = handshake().len();
    let turn = format!("{}{k:04}", &TURN[..TURN.len() - 4]);
    f[start..]
        .iter()
        .filter(|(d, l)| {
            *d == Direction::CliToSdk
                && !l.contains("requestApproval")
                && !l.contains("serverRequest/resolved")
        })
        .map(|(_, l)| {
            l.replace(
                "{\"id\":3,\"result\"",
                &format!("{{\"id\":{},\"result\"", 2 + k),
            )
            .replace(TURN, &turn)
            .replace("Tool said hi.", &format!("Answer {k}."))
            .replace("Tool s", "Answer ")
            .replace("aid hi.", &format!("{k}."))
        })
        .collect()
}

/// A transcript of one server serving `turns` turns of the thread.
fn transcript(dir: &Path, turns: u64) -> PathBuf {
    let mut text = String::new();
    for (d, l) in handshake() {
        text.push_str(&format!("{} {l}\n", d.prefix()));
    }
    for k in 1..=turns {
        if k > 1 {
            let start = serde_json::json!({"id": 2 + k, "method": "turn/start", "params": {"threadId": THREAD, "input": [{"type": "text", "text": "next"}]}});
            text.push_str(&format!("SDK->CLI {start}\n"));
        }
        for l in turn_lines(k) {
            text.push_str(&format!("CLI->SDK {l}\n"));
        }
    }
    let path = dir.join("resident.transcript");
    std::fs::write(&path, text).unwrap();
    path
}

struct Fake {
    dir: tempfile::TempDir,
    transcript: PathBuf,
}

impl Fake {
    fn new(turns: u64) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let transcript = transcript(dir.path(), turns);
        Fake { dir, transcript }
    }

    fn stdin_log(&self) -> PathBuf {
        self.dir.path().join("stdin.jsonl")
    }

    fn driver(&self, opts: &str) -> CodexDriver {
        let mut cfg = codex::Config {
            command: fake_cli_binary().unwrap(),
            transport: Transport::AppServer,
            resident_stop_grace: Duration::from_millis(300),
            ..Default::default()
        };
        cfg.env.insert(
            OPTS_ENV.into(),
            format!(
                "--fixture {} --record-stdin {} {opts}",
                self.transcript.display(),
                self.stdin_log().display()
            ),
        );
        codex::driver(cfg)
    }

    /// The methods (or `response`) of the frames the driver wrote.
    fn written(&self) -> Vec<String> {
        std::fs::read_to_string(self.stdin_log())
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["method"].as_str().unwrap_or("response").to_owned()
            })
            .collect()
    }
}

fn thread_agent(driver: CodexDriver) -> Agent {
    Agent::builder(driver)
        .thread_store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap()
}

struct Run {
    events: Vec<Event>,
    outcome: Result<RunResult, Error>,
}

impl Run {
    fn ok(&self) -> &RunResult {
        self.outcome
            .as_ref()
            .unwrap_or_else(|e| panic!("the run failed: {e}"))
    }

    fn spawns(&self) -> Vec<u32> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::ProcessInfo(p) if p.kind == ProcessKind::Spawn => {
                    p.metadata["pid"].parse().ok()
                }
                _ => None,
            })
            .collect()
    }

    fn notices(&self) -> Vec<(String, String)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Notice(n) if n.kind == notice_kind::LIFECYCLE => Some((
                    n.text.clone(),
                    n.metadata.get("resident").cloned().unwrap_or_default(),
                )),
                _ => None,
            })
            .collect()
    }

    fn reused(&self) -> bool {
        self.notices().iter().any(|(_, k)| k == "reused")
    }
}

async fn drain(mut stream: RunStream) -> Run {
    let mut events = Vec::new();
    while let Some(ev) = stream.next().await {
        events.push(ev);
    }
    let outcome = stream.result().await;
    Run { events, outcome }
}

async fn turn(runner: &impl Runner, prompt: &str) -> Run {
    let run = drain(runner.stream_with(prompt, RunOptions::new().timeout(RUN_TIMEOUT)));
    tokio::time::timeout(RUN_TIMEOUT + Duration::from_secs(10), run)
        .await
        .expect("the run ends")
}

fn lines_of(result: &RunResult) -> Vec<String> {
    String::from_utf8(result.raw().stdout.to_vec().unwrap())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

async fn gone_within(pid: u32, bound: Duration) -> bool {
    let deadline = Instant::now() + bound;
    loop {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn the_built_transcript_validates_against_the_binary_schema() {
    let fake = Fake::new(3);
    let text = std::fs::read_to_string(&fake.transcript).unwrap();
    let mut check = SchemaCheck::new();
    check.frames(text.lines().map(|l| match l.split_once(' ').unwrap() {
        ("SDK->CLI", f) => (Dir::Client, f),
        (_, f) => (Dir::Server, f),
    }));
    assert_eq!(check.total(), text.lines().count());
}

#[tokio::test]
async fn a_thread_runs_on_one_app_server() {
    let fake = Fake::new(3);
    let driver = fake.driver("--stdin-check type");
    let agent = thread_agent(driver.clone());
    assert!(agent.descriptor().process.persistent);
    let thread = agent.thread("tenant/codex-thread");
    let mut pid = None;
    for k in 1..=3u64 {
        let run = turn(&thread, &format!("turn {k}")).await;
        let result = run.ok();
        assert_eq!(result.text, format!("Answer {k}."));
        if k == 1 {
            assert_eq!(run.spawns().len(), 1);
            pid = Some(run.spawns()[0]);
        } else {
            assert!(run.spawns().is_empty(), "turn {k}: {:?}", run.notices());
            assert!(run.reused(), "turn {k}: {:?}", run.notices());
        }
        let want: Vec<String> = if k == 1 {
            handshake()
                .into_iter()
                .filter(|(d, _)| *d == Direction::CliToSdk)
                .map(|(_, l)| l)
                .chain(turn_lines(1))
                .collect()
        } else {
            turn_lines(k)
        };
        assert_eq!(lines_of(result), want, "turn {k}'s raw stdout");
        assert_eq!(result.exit_code(), None);
        let state = thread.checkpoint().await.unwrap().unwrap();
        assert_eq!(state.resume_id, THREAD);
    }
    assert_eq!(
        fake.written(),
        [
            "initialize",
            "initialized",
            "thread/start",
            "turn/start",
            "turn/start",
            "turn/start"
        ],
        "one handshake, then a turn/start per turn"
    );
    assert_eq!(driver.idle_processes(), 1);
    agent.close().await;
    assert!(
        gone_within(pid.unwrap(), Duration::ZERO).await,
        "close reaped it"
    );
}

#[tokio::test]
async fn a_server_lost_after_turn_start_fails_the_run_and_never_replays_it() {
    let fake = Fake::new(2);
    // The server lines of the handshake and turn 1, then two of turn 2.
    let served = handshake()
        .iter()
        .filter(|(d, _)| *d == Direction::CliToSdk)
        .count()
        + turn_lines(1).len();
    let driver = fake.driver(&format!("--truncate-after {}", served + 2));
    let agent = thread_agent(driver);
    let thread = agent.thread("k");
    let first = turn(&thread, "one").await;
    first.ok();
    let pid = first.spawns()[0];
    let second = turn(&thread, "two").await;
    let err = match &second.outcome {
        Ok(r) => panic!("succeeded: {}", r.text),
        Err(e) => e.as_run_error().unwrap().clone(),
    };
    assert!(err.message.contains("not replayed"), "{}", err.message);
    assert!(
        err.message.contains(&format!("pid {pid}")),
        "{}",
        err.message
    );
    assert!(second.spawns().is_empty(), "no second attempt");
    let turn_starts = fake.written().iter().filter(|m| *m == "turn/start").count();
    assert_eq!(turn_starts, 2, "turn 2's turn/start was written once");
    assert_eq!(
        thread.checkpoint().await.unwrap().unwrap().resume_id,
        THREAD
    );
    agent.close().await;
}

#[tokio::test]
async fn a_server_found_dead_falls_back_to_one_that_resumes_the_thread() {
    let fake = Fake::new(1);
    let agent = thread_agent(fake.driver(""));
    let thread = agent.thread("k");
    let first = turn(&thread, "one").await;
    first.ok();
    let pid = first.spawns()[0];
    assert!(
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !agent_adaptor_testkit::proc_tree::exited(pid) {
        assert!(Instant::now() < deadline, "pid {pid} did not die");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let second = turn(&thread, "two").await;
    assert_eq!(second.ok().text, "Answer 1.", "a new server's first turn");
    assert_eq!(second.spawns().len(), 1);
    assert!(
        second
            .notices()
            .iter()
            .any(|(t, _)| t.contains(&format!("pid {pid} had exited"))),
        "{:?}",
        second.notices()
    );
    let written = fake.written();
    assert_eq!(
        &written[written.len() - 4..],
        ["initialize", "initialized", "thread/resume", "turn/start"],
        "the new server resumed the thread"
    );
    agent.close().await;
}

#[tokio::test]
async fn with_spawn_uses_a_server_of_its_own_after_retiring_the_resident() {
    let fake = Fake::new(1);
    let driver = fake.driver("");
    let agent = thread_agent(driver.clone());
    let thread = agent.thread("k");
    let first = turn(&thread, "one").await;
    first.ok();
    let resident = first.spawns()[0];
    let fresh =
        drain(thread.stream_with("two", RunOptions::new().with_spawn().timeout(RUN_TIMEOUT))).await;
    assert_eq!(fresh.ok().text, "Answer 1.");
    assert_eq!(fresh.spawns().len(), 1);
    assert!(!fresh.reused());
    assert_eq!(fresh.ok().exit_code(), Some(0), "it ran to its end");
    // Codex allows one writer per thread: the resident server went first.
    assert!(
        fresh.notices().iter().any(|(_, k)| k == "retired"),
        "{:?}",
        fresh.notices()
    );
    assert!(gone_within(resident, Duration::ZERO).await);
    assert_eq!(driver.idle_processes(), 0);
    let written = fake.written();
    assert_eq!(
        &written[written.len() - 4..],
        ["initialize", "initialized", "thread/resume", "turn/start"]
    );
    agent.close().await;
}
