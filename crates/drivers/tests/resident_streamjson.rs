//! Resident processes of the stream-json drivers, hermetic: the fake CLI
//! serves turns (`--serve-turns`) the way Claude Code and CodeBuddy Code do
//! with `--input-format stream-json`, and records its stdin and argv.
//!
//! Proven here: a thread's turns share one process (spawns counted) and each
//! turn's raw stdout is exactly its own lines; a changed signature replaces
//! the process; `with_spawn` uses a fresh process and leaves the resident
//! alone (which then no longer serves the changed session as is); idle
//! eviction and `Agent::close` reap; a process found dead, or refusing the
//! prompt before taking a byte, falls back once to a spawn with `--resume`;
//! a process lost after the prompt was delivered fails the run and the
//! prompt is never written again; a failed turn is not kept.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_adaptor_conformance::{Expect, Report, record_run, verify_trace};
use agent_adaptor_core::thread::MemoryStore;
use agent_adaptor_core::{
    Agent, Error, Event, ProcessKind, RunOptions, RunResult, RunStream, Runner, notice_kind,
};
use agent_adaptor_driver::{Driver, Request, RunEvent, SessionContext};
use agent_adaptor_drivers::streamjson::{Config, StreamJsonDriver};
use agent_adaptor_drivers::{claude, codebuddy};
use agent_adaptor_testkit::fixtures;
use agent_adaptor_testkit::replay::{ArgsRecord, OPTS_ENV, fake_cli_binary};
use futures::StreamExt;
use serde_json::Value;

const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// A served fixture, and where the fake records its stdin and argv.
struct Fake {
    dir: tempfile::TempDir,
    fixture: PathBuf,
}

impl Fake {
    /// `capture` (a `.jsonl` under the captures directory) with its session
    /// id replaced by `{{session}}` and `text` by `Answer {{turn}}.`.
    fn new(capture: &str, session: &str, text: &str) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let fixture = dir.path().join("turn.jsonl");
        let lines: Vec<String> = fixtures::load(capture)
            .unwrap()
            .stdout_lines()
            .iter()
            .map(|l| {
                l.replace(session, "{{session}}")
                    .replace(text, "Answer {{turn}}.")
            })
            .collect();
        std::fs::write(&fixture, lines.join("\n") + "\n").unwrap();
        Fake { dir, fixture }
    }

    fn claude() -> Fake {
        Fake::new(
            "claude/print-basic.jsonl",
            "1aa0c6ec-0eea-4dba-903f-e28b44bf2f35",
            "Hello from mock.",
        )
    }

    fn codebuddy() -> Fake {
        Fake::new(
            "codebuddy/print-partial.jsonl",
            "126c626f-d7e0-4037-94ea-a740ae3ad1b9",
            "Hello from mock chat.",
        )
    }

    fn stdin_log(&self) -> PathBuf {
        self.dir.path().join("stdin.jsonl")
    }

    fn args_log(&self) -> PathBuf {
        self.dir.path().join("args.jsonl")
    }

    /// `cfg` running the fake on this fixture with `opts` on top.
    fn config(&self, mut cfg: Config, opts: &str) -> Config {
        cfg.command = fake_cli_binary().unwrap();
        cfg.env.insert(
            OPTS_ENV.into(),
            format!(
                "--fixture {} --serve-turns --record-stdin {} --args-out {} {opts}",
                self.fixture.display(),
                self.stdin_log().display(),
                self.args_log().display()
            ),
        );
        cfg.resident_stop_grace = Duration::from_millis(300);
        cfg
    }

    /// The lines the fake prints for `turn` of session `session`.
    fn turn_lines(&self, turn: u64, session: &str) -> Vec<String> {
        std::fs::read_to_string(&self.fixture)
            .unwrap()
            .lines()
            .map(|l| {
                l.replace("{{turn}}", &turn.to_string())
                    .replace("{{session}}", session)
            })
            .collect()
    }

    /// Every line the fakes read on stdin, parsed.
    fn stdin_frames(&self) -> Vec<Value> {
        std::fs::read_to_string(self.stdin_log())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or(Value::String(l.to_owned())))
            .collect()
    }

    /// The argv of the last fake started.
    fn last_args(&self) -> Vec<String> {
        ArgsRecord::load(&self.args_log()).unwrap().args
    }
}

fn thread_agent(driver: StreamJsonDriver) -> Agent {
    Agent::builder(driver)
        .thread_store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap()
}

/// Everything one run through core produced.
struct Run {
    events: Vec<Event>,
    outcome: Result<RunResult, Error>,
}

impl Run {
    fn ok(&self) -> &RunResult {
        match &self.outcome {
            Ok(r) => r,
            Err(e) => panic!("the run failed: {e}\n{:?}", self.kinds()),
        }
    }

    fn kinds(&self) -> Vec<String> {
        self.events
            .iter()
            .map(|e| e.kind_name().into_owned())
            .collect()
    }

    /// The pids of the processes the run spawned, with their transport.
    fn spawns(&self) -> Vec<(u32, String)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::ProcessInfo(p) if p.kind == ProcessKind::Spawn => Some((
                    p.metadata["pid"].parse().unwrap(),
                    p.metadata["transport"].clone(),
                )),
                _ => None,
            })
            .collect()
    }

    /// The lifecycle notices, as (text, `resident` metadata).
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

    /// The pid of the resident process the run reused, if it reused one.
    fn reused(&self) -> Option<u32> {
        self.events.iter().find_map(|e| match e {
            Event::Notice(n)
                if n.kind == notice_kind::LIFECYCLE
                    && n.metadata.get("resident").map(String::as_str) == Some("reused") =>
            {
                n.metadata["pid"].parse().ok()
            }
            _ => None,
        })
    }
}

async fn drain(mut stream: RunStream) -> Run {
    let collect = async {
        let mut events = Vec::new();
        while let Some(ev) = stream.next().await {
            events.push(ev);
        }
        let outcome = stream.result().await;
        Run { events, outcome }
    };
    tokio::time::timeout(RUN_TIMEOUT + Duration::from_secs(10), collect)
        .await
        .expect("the run ends")
}

async fn turn(runner: &impl Runner, prompt: &str) -> Run {
    drain(runner.stream_with(prompt, RunOptions::new().timeout(RUN_TIMEOUT))).await
}

/// Running (not a zombie, not gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

/// Gone from the process table (reaped), within `bound`.
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

fn session_of(pid: u32) -> String {
    format!("fake-session-{pid}")
}

fn lines_of(raw: &[u8]) -> Vec<String> {
    String::from_utf8(raw.to_vec())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

async fn three_turns_share_one_process(fake: &Fake, driver: StreamJsonDriver) {
    let agent = thread_agent(driver.clone());
    assert!(agent.descriptor().process.persistent);
    let thread = agent.thread("tenant/conversation");
    let mut pid = None;
    for n in 1..=3u64 {
        let run = turn(&thread, &format!("prompt number {n}")).await;
        let result = run.ok();
        assert_eq!(result.text, format!("Answer {n}."));
        match n {
            1 => {
                let spawns = run.spawns();
                assert_eq!(spawns.len(), 1, "the first turn spawns");
                assert_eq!(spawns[0].1, "resident");
                pid = Some(spawns[0].0);
                assert_eq!(run.reused(), None);
            }
            _ => {
                assert!(
                    run.spawns().is_empty(),
                    "turn {n} spawned: {:?}",
                    run.spawns()
                );
                assert_eq!(run.reused(), pid, "turn {n} reused the process");
            }
        }
        let pid = pid.unwrap();
        // This turn's bytes, exactly: the fake's lines for turn n (the first
        // turn also has the reply to `initialize`).
        let got = lines_of(&result.raw().stdout.to_vec().unwrap());
        let want = fake.turn_lines(n, &session_of(pid));
        let body = if n == 1 {
            let reply: Value = serde_json::from_str(&got[0]).unwrap();
            assert_eq!(reply["type"], "control_response");
            &got[1..]
        } else {
            &got[..]
        };
        assert_eq!(body, &want[..], "turn {n}'s raw stdout");
        assert!(
            result.raw().stdout.to_vec().unwrap().ends_with(b"\n"),
            "the terminal line's newline belongs to the turn"
        );
        assert!(result.raw().terminal.is_some());
        assert_eq!(result.exit_code(), None, "the process did not exit");
        let state = thread.checkpoint().await.unwrap().expect("a checkpoint");
        assert_eq!(
            state.resume_id,
            session_of(pid),
            "the same session each turn"
        );
        assert!(alive(pid));
    }
    let frames = fake.stdin_frames();
    let types: Vec<&str> = frames.iter().map(|f| f["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["control_request", "user", "user", "user"]);
    assert_eq!(frames[3]["message"]["content"], "prompt number 3");
    assert_eq!(driver.idle_processes(), 1);
    agent.close().await;
    assert!(
        gone_within(pid.unwrap(), Duration::ZERO).await,
        "close reaped it"
    );
    assert_eq!(driver.idle_processes(), 0);
}

#[tokio::test]
async fn claude_thread_turns_share_one_process() {
    let fake = Fake::claude();
    let driver = claude::driver(fake.config(claude::config(), ""));
    three_turns_share_one_process(&fake, driver).await;
}

#[tokio::test]
async fn codebuddy_thread_turns_share_one_process() {
    let fake = Fake::codebuddy();
    let driver = codebuddy::driver(fake.config(codebuddy::config(), ""));
    three_turns_share_one_process(&fake, driver).await;
}

fn spawned(events: &[RunEvent]) -> Vec<u32> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Spawn(o) => o.metadata["pid"].parse().ok(),
            _ => None,
        })
        .collect()
}

fn lifecycle_texts(events: &[RunEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Lifecycle(o) => Some(o.text.clone()),
            _ => None,
        })
        .collect()
}

/// Run `req` on the driver directly and judge it with the conformance
/// clauses.
async fn judged(
    driver: &StreamJsonDriver,
    req: &Request,
) -> (Vec<RunEvent>, agent_adaptor_driver::Response) {
    let trace = record_run(driver, req.clone(), RUN_TIMEOUT).await;
    let mut report = Report::default();
    verify_trace(
        driver,
        req,
        &trace,
        Expect::Success,
        "resident",
        &mut report,
    );
    report.assert_passed();
    let events = trace.events().cloned().collect();
    (events, trace.response().unwrap().clone())
}

fn thread_request(run: &str, prompt: &str, resume: Option<&str>, model: Option<&str>) -> Request {
    let mut req = Request::new(run, prompt);
    req.streaming = true;
    req.model_override = model.map(str::to_owned);
    req.session = Some(SessionContext {
        state: resume.map(|id| agent_adaptor_driver::SessionState {
            resume_id: id.to_owned(),
            ..Default::default()
        }),
        ..Default::default()
    });
    req
}

#[tokio::test]
async fn a_changed_signature_replaces_the_process() {
    let fake = Fake::claude();
    let driver = claude::driver(fake.config(claude::config(), ""));
    let first = thread_request("run_00000000000000a1", "one", None, None);
    let (events, resp) = judged(&driver, &first).await;
    let old = spawned(&events)[0];
    let session = resp.checkpoint.unwrap().state.unwrap().resume_id;
    assert_eq!(session, session_of(old));

    // Another model: another command line, another process.
    let second = thread_request(
        "run_00000000000000a2",
        "two",
        Some(&session),
        Some("other-model"),
    );
    let (events, resp) = judged(&driver, &second).await;
    let new = spawned(&events);
    assert_eq!(new.len(), 1, "a new process");
    assert_ne!(new[0], old);
    assert!(
        !Path::new(&format!("/proc/{old}")).exists(),
        "the old process was stopped and reaped before the new one started"
    );
    assert!(
        lifecycle_texts(&events)
            .iter()
            .any(|t| t.contains(&format!("pid {old} was started with another configuration"))),
        "{:?}",
        lifecycle_texts(&events)
    );
    let args = fake.last_args();
    assert!(
        args.windows(2).any(|w| w == ["--model", "other-model"]),
        "{args:?}"
    );
    assert!(
        args.windows(2).any(|w| w == ["--resume", session.as_str()]),
        "{args:?}"
    );
    assert_eq!(resp.checkpoint.unwrap().state.unwrap().resume_id, session);

    // The same configuration again: the new process is reused.
    let third = thread_request(
        "run_00000000000000a3",
        "three",
        Some(&session),
        Some("other-model"),
    );
    let (events, resp) = judged(&driver, &third).await;
    assert!(spawned(&events).is_empty());
    assert_eq!(resp.output, "Answer 2.");
    driver.close_processes().await;
    assert!(!alive(new[0]));
}

#[tokio::test]
async fn with_spawn_runs_in_a_fresh_process_and_leaves_the_resident_alone() {
    let fake = Fake::claude();
    let driver = claude::driver(fake.config(claude::config(), ""));
    let agent = thread_agent(driver.clone());
    let thread = agent.thread("k");
    let first = turn(&thread, "one").await;
    first.ok();
    let resident = first.spawns()[0].0;

    let fresh =
        drain(thread.stream_with("two", RunOptions::new().with_spawn().timeout(RUN_TIMEOUT))).await;
    let result = fresh.ok();
    let spawns = fresh.spawns();
    assert_eq!(spawns.len(), 1);
    assert_ne!(spawns[0].0, resident);
    assert_eq!(spawns[0].1, "one_shot", "a process of its own");
    assert_eq!(fresh.reused(), None);
    assert_eq!(result.exit_code(), Some(0), "the fresh process exited");
    assert!(
        gone_within(spawns[0].0, Duration::ZERO).await,
        "and was not kept"
    );
    assert!(alive(resident), "the resident process is left alone");
    assert_eq!(driver.idle_processes(), 1);
    assert_eq!(
        result
            .checkpoint()
            .unwrap()
            .state
            .as_ref()
            .unwrap()
            .resume_id,
        session_of(resident),
        "the fresh process resumed the thread's session"
    );

    // The session moved on without the resident process: it is replaced,
    // not reused as it is.
    let third = turn(&thread, "three").await;
    third.ok();
    let spawns = third.spawns();
    assert_eq!(spawns.len(), 1, "{:?}", third.notices());
    assert!(
        third
            .notices()
            .iter()
            .any(|(t, _)| t.contains("does not hold the latest session")),
        "{:?}",
        third.notices()
    );
    assert!(gone_within(resident, Duration::from_secs(5)).await);
    assert!(
        fake.last_args()
            .windows(2)
            .any(|w| w == ["--resume", session_of(resident).as_str()])
    );
}

#[tokio::test]
async fn an_idle_process_is_evicted() {
    let fake = Fake::claude();
    let mut cfg = fake.config(claude::config(), "");
    cfg.resident_idle_timeout = Duration::from_millis(200);
    let driver = claude::driver(cfg);
    let agent = thread_agent(driver.clone());
    let thread = agent.thread("k");
    let first = turn(&thread, "one").await;
    first.ok();
    let pid = first.spawns()[0].0;
    // No run comes along: the background reaper stops it.
    assert!(gone_within(pid, Duration::from_secs(20)).await, "evicted");
    assert_eq!(driver.idle_processes(), 0);
    // The thread goes on in a new process, resuming its session.
    let second = turn(&thread, "two").await;
    assert_eq!(second.ok().text, "Answer 1.");
    assert_eq!(second.spawns().len(), 1);
    assert!(
        fake.last_args()
            .windows(2)
            .any(|w| w == ["--resume", session_of(pid).as_str()])
    );
}

#[tokio::test]
async fn close_reaps_every_pooled_process_and_the_agent_stays_usable() {
    let fake = Fake::claude();
    let driver = claude::driver(fake.config(claude::config(), ""));
    let agent = thread_agent(driver.clone());
    let (a, b) = (agent.thread("a"), agent.thread("b"));
    let pa = turn(&a, "one").await.spawns()[0].0;
    let pb = turn(&b, "one").await.spawns()[0].0;
    assert_ne!(pa, pb);
    assert_eq!(driver.idle_processes(), 2);
    agent.close().await;
    for pid in [pa, pb] {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "pid {pid} reaped"
        );
    }
    assert_eq!(driver.idle_processes(), 0);
    agent.close().await; // idempotent
    let again = turn(&a, "two").await;
    again.ok();
    assert_eq!(again.spawns().len(), 1, "a new process after close");
    agent.close().await;
}

#[tokio::test]
async fn a_process_found_dead_falls_back_to_a_spawn_with_resume() {
    let fake = Fake::claude();
    let driver = claude::driver(fake.config(claude::config(), ""));
    let agent = thread_agent(driver);
    let thread = agent.thread("k");
    let first = turn(&thread, "one").await;
    first.ok();
    let pid = first.spawns()[0].0;
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !agent_adaptor_testkit::proc_tree::exited(pid) {
        assert!(Instant::now() < deadline, "pid {pid} did not die");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let second = turn(&thread, "two").await;
    let result = second.ok();
    assert_eq!(result.text, "Answer 1.", "served by a new process");
    let spawns = second.spawns();
    assert_eq!(spawns.len(), 1);
    assert!(
        second
            .notices()
            .iter()
            .any(|(t, _)| t.contains(&format!("pid {pid} had exited"))),
        "{:?}",
        second.notices()
    );
    let session = session_of(pid);
    assert!(
        fake.last_args()
            .windows(2)
            .any(|w| w == ["--resume", session.as_str()]),
        "{:?}",
        fake.last_args()
    );
    assert_eq!(
        thread.checkpoint().await.unwrap().unwrap().resume_id,
        session
    );
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the dead one was reaped"
    );
    agent.close().await;
}

#[tokio::test]
async fn a_process_lost_after_the_prompt_fails_the_run_and_never_replays_it() {
    let fake = Fake::claude();
    // The fake prints the reply to `initialize` and turn 1 (1 + 5 lines),
    // then two lines of turn 2, and exits.
    let driver = claude::driver(fake.config(claude::config(), "--truncate-after 8"));
    let agent = thread_agent(driver);
    let thread = agent.thread("k");
    let first = turn(&thread, "one").await;
    first.ok();
    let pid = first.spawns()[0].0;

    let second = turn(&thread, "the second prompt").await;
    let err = match &second.outcome {
        Ok(r) => panic!("succeeded: {}", r.text),
        Err(e) => e.as_run_error().expect("a run error").clone(),
    };
    assert!(err.message.contains("not replayed"), "{}", err.message);
    assert!(
        err.message.contains(&format!("pid {pid}")),
        "{}",
        err.message
    );
    assert_eq!(second.reused(), Some(pid));
    assert!(second.spawns().is_empty(), "no second attempt");
    let partial = err.result.as_ref().expect("the turn's response");
    assert!(partial.checkpoint().is_none());
    assert_eq!(
        lines_of(&partial.raw().stdout.to_vec().unwrap()),
        fake.turn_lines(2, &session_of(pid))[..2],
        "the raw stdout is the turn's two lines"
    );
    let prompts: Vec<Value> = fake
        .stdin_frames()
        .into_iter()
        .filter(|f| f["message"]["content"] == "the second prompt")
        .collect();
    assert_eq!(prompts.len(), 1, "written once, never replayed");
    // The thread keeps its last good checkpoint; the next turn resumes it.
    let state = thread.checkpoint().await.unwrap().unwrap();
    assert_eq!(state.resume_id, session_of(pid));
    let third = turn(&thread, "three").await;
    third.ok();
    assert_eq!(third.spawns().len(), 1);
    agent.close().await;
}

/// A CLI that serves one turn, closing its stdin before it answers, then
/// idles: the next prompt is refused by the pipe before any byte is taken.
const CLOSES_STDIN: &str = r#"#!/bin/sh
read -r init
printf '%s\n' '{"type":"control_response","response":{"subtype":"success","request_id":"init_1","response":{}}}'
read -r user
exec 0<&-
cat "$TURN_FILE"
exec sleep 60
"#;

/// A config running the shell script `body` as the CLI, with `TURN_FILE`
/// holding the fake's turn-1 lines of session `sess-fixed`.
fn script_config(fake: &Fake, body: &str) -> Config {
    let script = fake.dir.path().join("cli.sh");
    std::fs::write(&script, body).unwrap();
    let mut perms = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&script, perms).unwrap();
    let turn_file = fake.dir.path().join("turn-fixed.jsonl");
    let turn = fake.turn_lines(1, "sess-fixed").join("\n") + "\n";
    std::fs::write(&turn_file, turn).unwrap();
    let mut cfg = claude::config();
    cfg.command = script;
    cfg.env
        .insert("TURN_FILE".into(), turn_file.display().to_string());
    cfg.resident_stop_grace = Duration::from_millis(200);
    cfg
}

#[tokio::test]
async fn a_prompt_refused_before_any_byte_falls_back_once() {
    let fake = Fake::claude();
    let agent = thread_agent(claude::driver(script_config(&fake, CLOSES_STDIN)));
    let thread = agent.thread("k");
    let first = turn(&thread, "one").await;
    first.ok();
    let pid = first.spawns()[0].0;
    assert!(alive(pid), "it idles with its stdin closed");

    let second = turn(&thread, "two").await;
    assert_eq!(second.ok().text, "Answer 1.");
    assert_eq!(second.reused(), Some(pid), "it was tried first");
    assert!(
        second
            .notices()
            .iter()
            .any(|(t, k)| k == "fallback" && t.contains("refused the request")),
        "{:?}",
        second.notices()
    );
    assert_eq!(second.spawns().len(), 1, "one fallback spawn");
    assert!(gone_within(pid, Duration::from_secs(5)).await);
    agent.close().await;
}

#[tokio::test]
async fn a_failed_turn_does_not_keep_its_process() {
    let fake = Fake::new(
        "claude/print-api-error-400.jsonl",
        "b1923e23-5b02-4b8d-a717-8d66c1464b32",
        "API Error: 400",
    );
    let driver = claude::driver(fake.config(claude::config(), ""));
    let agent = thread_agent(driver.clone());
    let thread = agent.thread("k");
    let run = turn(&thread, "one").await;
    let err = run.outcome.as_ref().unwrap_err();
    assert!(
        err.as_run_error().unwrap().message.contains("Answer 1."),
        "{err}"
    );
    let pid = run.spawns()[0].0;
    assert!(
        gone_within(pid, Duration::from_secs(10)).await,
        "stopped, not kept"
    );
    assert_eq!(driver.idle_processes(), 0);
}

/// A CLI that, resuming, first prints the session's history (a whole
/// earlier turn, `result` line included), then answers `initialize`, then
/// serves turns — as CodeBuddy Code does with `--input-format stream-json`.
const REPLAYS_HISTORY: &str = r#"#!/bin/sh
sed 's/Answer 1\./History answer./' "$TURN_FILE"
read -r init
printf '%s\n' '{"type":"control_response","response":{"subtype":"success","request_id":"init_1","response":{}}}'
while read -r user; do cat "$TURN_FILE"; done
"#;

#[tokio::test]
async fn a_resumed_sessions_replayed_history_is_not_the_turn() {
    let fake = Fake::claude();
    let driver = claude::driver(script_config(&fake, REPLAYS_HISTORY));
    let req = thread_request("run_00000000000000b1", "now", Some("sess-fixed"), None);
    let (events, resp) = judged(&driver, &req).await;
    assert_eq!(
        resp.output, "Answer 1.",
        "the turn, not the replayed history"
    );
    assert!(
        lifecycle_texts(&events)
            .iter()
            .any(|t| t.contains("printed 5 lines before answering initialize")),
        "{:?}",
        lifecycle_texts(&events)
    );
    let raw = lines_of(&resp.raw.stdout.to_vec().unwrap());
    assert_eq!(
        raw.len(),
        5 + 1 + 5,
        "history, the reply to initialize, the turn"
    );
    assert!(raw[4].contains("History answer."));
    assert_eq!(driver.idle_processes(), 1);
    driver.close_processes().await;
}

#[tokio::test]
async fn the_control_transport_skips_a_replayed_history_too() {
    // Host approvals without resident processes: a resumed run in a process
    // of its own (the control transport) meets the same replay.
    let fake = Fake::claude();
    let mut cfg = script_config(&fake, REPLAYS_HISTORY);
    cfg.host_approvals = true;
    cfg.resident = false;
    let driver = claude::driver(cfg);
    let req = thread_request("run_00000000000000c1", "now", Some("sess-fixed"), None);
    let (events, resp) = judged(&driver, &req).await;
    assert_eq!(
        resp.output, "Answer 1.",
        "the turn, not the replayed history"
    );
    assert!(
        lifecycle_texts(&events)
            .iter()
            .any(|t| t.contains("printed 5 lines before answering initialize")),
        "{:?}",
        lifecycle_texts(&events)
    );
    assert_eq!(
        resp.exit_code,
        Some(0),
        "a process of its own, run to its end"
    );
    assert_eq!(driver.idle_processes(), 0);
}
