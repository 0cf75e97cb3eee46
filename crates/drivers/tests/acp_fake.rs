//! The ACP driver against the testkit's scripted `fake-acp-agent`: the
//! faults and requests no real agent shows on demand (an unsupported
//! protocol version, malformed frames, a prompt never answered, an agent
//! that exits mid-turn, a JSON-RPC error, reads and writes outside the
//! workspace, terminals, permissions, a session loaded by a second
//! process) and an agent that is not installed. Each ends in a typed error
//! or refusal, without a hang, and leaves no process behind.
#![cfg(feature = "acp")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod gemini_support;
mod group_watch;
#[allow(dead_code)]
mod jsonl_common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::{Agent, Event, FailureReason, Notice, RunOptions, RunStream};
use agent_adaptor_driver::DecisionKind;
use agent_adaptor_drivers::acp::{self, AcpAgent};
use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_testkit::acp_agent::{
    self as fake, FakeAcpAgent, PERMISSION_CALL_ID, TEXT_CHUNKS, THOUGHT,
};
use gemini_support::{drain_with, ok, text_deltas};
use group_watch::{GroupWatch, spawned_pid};
use jsonl_common::Run;
use serde_json::Value;

/// A fake agent's scratch: its workspace, frame log and session state.
struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new() -> Fake {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        std::fs::create_dir_all(dir.path().join("state")).unwrap();
        std::fs::write(dir.path().join("outside.txt"), "outside the workspace").unwrap();
        Fake { dir }
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work").canonicalize().unwrap()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("frames.log")
    }

    /// The frames the agent received.
    fn log(&self) -> Vec<Value> {
        FakeAcpAgent::read_log(&self.log_path()).unwrap()
    }

    /// The frames the agent received with `method`.
    fn sent(&self, method: &str) -> Vec<Value> {
        self.log()
            .into_iter()
            .filter(|f| f["method"] == method)
            .collect()
    }

    fn config(&self, scenario: &[&str]) -> acp::Config {
        let mut args: Vec<String> = vec!["--scenario".into()];
        args.extend(scenario.iter().map(|s| (*s).to_owned()));
        args.extend([
            "--log".into(),
            self.log_path().display().to_string(),
            "--state".into(),
            self.dir.path().join("state").display().to_string(),
        ]);
        acp::Config {
            cwd: Some(self.work()),
            env_policy: EnvPolicy::only(["PATH"]),
            ..acp::Config::for_agent(AcpAgent::Custom {
                program: FakeAcpAgent::binary().unwrap(),
                args,
            })
        }
    }

    fn agent(&self, scenario: &[&str]) -> Agent {
        Agent::new(acp::driver(self.config(scenario)))
    }

    async fn run(&self, scenario: &[&str], prompt: &str) -> Run {
        drain_with(&self.agent(scenario), prompt, RunOptions::new(), |_, _| {}).await
    }
}

/// The agent text of a run that must have succeeded.
fn text(run: &Run) -> String {
    ok(run).text.clone()
}

/// The lifecycle notices of `kind` (their `kind` metadata).
fn notices(run: &Run, kind: &str) -> Vec<Notice> {
    run.events
        .iter()
        .filter_map(|e| match e {
            Event::Notice(n) if n.metadata.get("kind").map(String::as_str) == Some(kind) => {
                Some(n.clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_streams_text_reasoning_plan_and_usage() {
    let f = Fake::new();
    let run = f.run(&["text"], "hello").await;
    let result = ok(&run);
    assert_eq!(text_deltas(&run), TEXT_CHUNKS);
    assert_eq!(result.text, TEXT_CHUNKS.concat());
    assert!(
        run.events.iter().any(|e| matches!(e,
            Event::Thinking(t) if t.text == THOUGHT)),
        "the thought is a reasoning delta"
    );
    // The plan is the todo list, typed, revision 1, in the agent's order.
    let plans: Vec<_> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::TodoUpdated(t) => Some(&t.snapshot),
            _ => None,
        })
        .collect();
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].revision, 1);
    assert_eq!(plans[0].source.provider_protocol, "acp.plan");
    assert_eq!(plans[0].items.len(), fake::PLAN.len());
    assert_eq!(plans[0].items[0].content, fake::PLAN[0].0);
    let done: Vec<bool> = plans[0]
        .items
        .iter()
        .map(|i| i.status == agent_adaptor_driver::TodoStatus::Completed)
        .collect();
    assert_eq!(done, fake::PLAN.map(|p| p.1));
    let context = notices(&run, "acp.context");
    assert_eq!(context[0].data.as_ref().unwrap()["used"], fake::USAGE_USED);
    assert!(result.usage.as_ref().unwrap().input_tokens.is_some());
    assert!(result.checkpoint().is_some_and(|c| c.valid));
    // What the client sent: its capabilities, the session's cwd.
    let init = &f.sent("initialize")[0]["params"];
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["clientCapabilities"]["fs"]["readTextFile"], true);
    assert_eq!(init["clientCapabilities"]["terminal"], true);
    let new = &f.sent("session/new")[0]["params"];
    assert_eq!(new["cwd"], f.work().display().to_string());
    assert_eq!(f.log().iter().filter(|f| f["jsonrpc"] != "2.0").count(), 0);
}

/// A thread through the SQLite `ThreadStore`: turn 2 runs in a new process
/// that `session/load`s turn 1's session; the replayed history is not
/// emitted as turn 2's text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_turn_loads_the_session_in_a_new_process() {
    let f = Fake::new();
    let store = agent_adaptor_store::SqliteStore::open(f.dir.path().join("threads.db"))
        .await
        .unwrap();
    let agent = Agent::builder(acp::driver(f.config(&["text"])))
        .thread_store(Arc::new(store))
        .build()
        .unwrap();
    let thread = agent.thread("fake/acp");
    let first = drain_with(&thread, "first turn", RunOptions::new(), |_, _| {}).await;
    let session = ok(&first).checkpoint().unwrap().state.clone().unwrap();
    let second = drain_with(&thread, "second turn", RunOptions::new(), |_, _| {}).await;
    assert_eq!(text_deltas(&second), TEXT_CHUNKS, "not the replay");
    let resumed = ok(&second).checkpoint().unwrap().state.clone().unwrap();
    assert_eq!(resumed.resume_id, session.resume_id, "one ACP session");
    let load = f.sent("session/load");
    assert_eq!(load.len(), 1);
    assert_eq!(load[0]["params"]["sessionId"], session.resume_id.as_str());
    assert_eq!(load[0]["params"]["cwd"], f.work().display().to_string());
    assert_eq!(f.sent("session/new").len(), 1, "only the first turn");
    let replayed = notices(&second, "acp.replayed");
    assert_eq!(replayed.len(), 1, "the replay is counted, not emitted");
}

async fn permission(approve: bool) -> (Fake, Run, usize) {
    let f = Fake::new();
    let mut asked = 0;
    let run = drain_with(
        &f.agent(&["permission"]),
        "may I?",
        RunOptions::new(),
        |e, _| {
            if let Event::ApprovalRequest(req) = e {
                asked += 1;
                assert_eq!(req.kind, DecisionKind::Permission);
                assert_eq!(req.tool_call_id, PERMISSION_CALL_ID);
                let options = &req.details.as_ref().unwrap()["options"];
                assert_eq!(options.as_array().unwrap().len(), 4, "{options}");
                if approve {
                    req.approve().unwrap();
                } else {
                    req.deny("no").unwrap();
                }
            }
        },
    )
    .await;
    (f, run, asked)
}

/// The one permission answer the agent got.
fn permission_answer(f: &Fake) -> Value {
    let answers: Vec<Value> = f
        .log()
        .into_iter()
        .filter(|fr| fr["method"].is_null() && fr["result"]["outcome"].is_object())
        .collect();
    assert_eq!(answers.len(), 1, "exactly one answer: {answers:?}");
    answers[0]["result"]["outcome"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_permission_selects_an_allow_option() {
    let (f, run, asked) = permission(true).await;
    assert_eq!(asked, 1);
    assert_eq!(text(&run), fake::APPROVED);
    let outcome = permission_answer(&f);
    assert_eq!(outcome["outcome"], "selected");
    assert!(
        outcome["optionId"].as_str().unwrap().contains("allow"),
        "{outcome}"
    );
    assert!(run.events.iter().any(|e| matches!(e,
        Event::ToolResult(r) if r.id == PERMISSION_CALL_ID
            && r.result.as_ref().is_some_and(|v| v["status"] == "completed"))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_permission_selects_a_reject_option() {
    let (f, run, asked) = permission(false).await;
    assert_eq!(asked, 1);
    assert_eq!(text(&run), fake::DENIED);
    let outcome = permission_answer(&f);
    assert!(
        outcome["optionId"].as_str().unwrap().contains("reject"),
        "{outcome}"
    );
    assert!(run.events.iter().any(|e| matches!(e,
        Event::ToolResult(r) if r.id == PERMISSION_CALL_ID
            && r.result.as_ref().is_some_and(|v| v["status"] == "failed"))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_outside_the_workspace_are_refused() {
    let f = Fake::new();
    std::fs::write(f.work().join("notes.txt"), "inside 4417").unwrap();
    assert_eq!(
        text(&f.run(&["fs-read", "notes.txt"], "read").await),
        "inside 4417"
    );
    for path in ["/etc/passwd", "../outside.txt"] {
        let got = text(&f.run(&["fs-read", path], "read").await);
        assert!(
            got.starts_with("error -32602") && got.contains("outside"),
            "{path}: {got}"
        );
    }
    std::os::unix::fs::symlink(f.dir.path().join("outside.txt"), f.work().join("link")).unwrap();
    let got = text(&f.run(&["fs-read", "link"], "read").await);
    assert!(got.contains("outside"), "a link out: {got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_land_inside_and_are_refused_outside() {
    let f = Fake::new();
    let got = text(&f.run(&["fs-write", "out/new.txt"], "content-9").await);
    assert_eq!(got, fake::WRITTEN);
    let written = std::fs::read_to_string(f.work().join("out/new.txt")).unwrap();
    assert!(written.contains("content-9"), "{written}");
    let got = text(&f.run(&["fs-write", "../escaped.txt"], "nope").await);
    assert!(got.contains("outside"), "{got}");
    assert!(!f.dir.path().join("escaped.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_runs_in_the_workspace() {
    let f = Fake::new();
    let got = text(&f.run(&["terminal", "pwd"], "run it").await);
    assert_eq!(got.trim(), f.work().display().to_string());
    let methods: Vec<String> = f
        .log()
        .iter()
        .filter(|fr| fr["method"].is_null())
        .filter_map(|fr| fr["result"]["terminalId"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(methods.len(), 1, "one terminal created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupported_protocol_version_is_a_typed_failure() {
    let f = Fake::new();
    let run = f.run(&["bad-version"], "hello").await;
    let err = run.err();
    assert_eq!(
        err.reason,
        FailureReason::Other("unsupported_protocol_version".into()),
        "{}",
        err.message
    );
    assert!(err.message.contains("999"), "{}", err.message);
    assert!(f.sent("session/new").is_empty(), "no session opened");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_frames_are_notices_and_the_turn_goes_on() {
    let f = Fake::new();
    let run = f.run(&["malformed"], "hello").await;
    assert_eq!(text(&run), TEXT_CHUNKS.concat());
    let noticed: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Notice(n) => Some(n.text.clone()),
            _ => None,
        })
        .collect();
    assert!(
        noticed.iter().any(|t| t.contains("non-JSON stdout line")),
        "{noticed:?}"
    );
    assert!(
        noticed
            .iter()
            .any(|t| t.contains("without \"jsonrpc\":\"2.0\"")),
        "{noticed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_rpc_error_on_the_prompt_is_an_agent_error() {
    let f = Fake::new();
    let run = f.run(&["error"], "hello").await;
    let err = run.err();
    assert_eq!(err.reason, FailureReason::AgentError);
    assert!(err.message.contains(fake::ERROR_MESSAGE), "{}", err.message);
    assert!(err.result.as_ref().unwrap().checkpoint().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_exits_mid_turn_misses_its_terminal() {
    let f = Fake::new();
    let run = f.run(&["exit"], "hello").await;
    let err = run.err();
    assert_eq!(err.reason, FailureReason::AgentError);
    assert!(err.message.contains("session/prompt"), "{}", err.message);
    assert!(
        err.message.contains('3'),
        "the exit status: {}",
        err.message
    );
}

/// Cancel a run of `scenario` once the agent's session is open; the run
/// ends cancelled, the agent got one `session/cancel`, and nothing of its
/// process group is left (`members`: how many ran in it at the cancel, at
/// least).
async fn cancel_silent(scenario: &str, members: usize) {
    let f = Fake::new();
    let (mut pid, mut watch) = (None, None);
    let run = drain_with(
        &f.agent(&[scenario]),
        "never answered",
        RunOptions::new(),
        |e: &Event, stream: &RunStream| {
            if let Some(p) = spawned_pid(e) {
                pid = Some(p);
            }
            let opened = matches!(e, Event::Notice(n)
                if n.metadata.get("kind").map(String::as_str) == Some("acp.session"));
            if let (true, Some(p)) = (opened, pid) {
                // The session is open: the prompt is on its way.
                watch = Some(GroupWatch::of(p));
                stream.cancel();
            }
        },
    )
    .await;
    assert_eq!(run.err().reason, FailureReason::Cancelled);
    let watch = watch.expect("the run started");
    assert!(
        watch.members.len() >= members,
        "{scenario}: {:?}",
        watch.members
    );
    let left = watch.wait_gone().await;
    assert!(left.is_empty(), "{scenario}: {left:?} left");
    assert_eq!(
        f.sent("session/cancel").len(),
        1,
        "{scenario}: one session/cancel"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_a_prompt_that_is_never_answered() {
    cancel_silent("silent", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_leaves_no_child_of_the_agent() {
    cancel_silent("hang-on-cancel-child", 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_is_not_installed_is_a_spawn_error() {
    let f = Fake::new();
    let cfg = acp::Config {
        cwd: Some(f.work()),
        ..acp::Config::for_agent(AcpAgent::Custom {
            program: "/nonexistent/acp-agent".into(),
            args: vec![],
        })
    };
    let run = drain_with(
        &Agent::new(acp::driver(cfg)),
        "hello",
        RunOptions::new(),
        |_, _| {},
    )
    .await;
    let err = run.outcome.as_ref().expect_err("no agent, no run");
    let text = err.to_string();
    assert!(text.contains("/nonexistent/acp-agent"), "{text}");
    assert!(
        !run.events.iter().any(|e| spawned_pid(e).is_some()),
        "nothing started"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_suite_passes() {
    use agent_adaptor_conformance::{Expect, LiveRun, Options, RunCase, test_driver};
    let f = Fake::new();
    let state = agent_adaptor_driver::SessionState {
        resume_id: "fake-session-1".into(),
        display_id: "fake-session-1".into(),
        data: [("cwd".to_owned(), f.work().display().to_string())].into(),
    };
    let timeout = Duration::from_secs(60);
    let report = test_driver(
        || acp::driver(f.config(&["text"])),
        Options::new()
            .session_state(state)
            .session_keys(["cwd"])
            .guard_keys(["cwd"])
            .run(RunCase::new("streaming", "hello", true, Expect::Success))
            .run(RunCase::new("batch", "hello", false, Expect::Success))
            .run(RunCase::new(
                "refused",
                "[stop:refusal] hello",
                true,
                Expect::Failure,
            ))
            .run_timeout(timeout)
            .live(LiveRun {
                prompt: "hello".into(),
                expected_output: Some(TEXT_CHUNKS.concat()),
                streaming: true,
                timeout,
            }),
    )
    .await;
    report.assert_passed();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mode_change_is_a_notice_and_a_stop_reason_a_typed_failure() {
    let f = Fake::new();
    let run = f.run(&["text"], "[mode:plan] hello").await;
    ok(&run);
    let mode = notices(&run, "acp.mode");
    assert_eq!(mode.len(), 1);
    assert_eq!(mode[0].data.as_ref().unwrap()["currentModeId"], "plan");
    let run = f.run(&["text"], "[stop:max_tokens] hello").await;
    assert_eq!(run.err().reason, FailureReason::Other("max_tokens".into()));
}
