//! The scenarios of the real-CLI proof, one `async fn(&Cli)` each,
//! run against either CLI by `real_cli_tests!`.

use std::time::{Duration, Instant};

use crate::group_watch::group_members;
use agent_adaptor_conformance::{
    Expect, LiveRun, Options, Report, RunCase, record_run, test_driver, verify_trace,
};
use agent_adaptor_core::policy::{ApprovalMode, FallbackAction, FeatureLevel, Policy};
use agent_adaptor_core::{
    DecidedBy, Event, FailureReason, Phase, ProcessKind, RunOptions, notice_kind,
};
use agent_adaptor_driver::{DecisionKind, Request, SessionContext, SessionState};
use agent_adaptor_testkit::mock::{Reply, Script};
use serde_json::{Value, json};

use super::{Cli, Harness, RUN_TIMEOUT, Run, drain, drain_with, result_text, tool_results_in};

/// The bound: the CLI and its children are gone this soon after a
/// cancel.
pub(super) const CANCEL_BOUND: Duration = Duration::from_secs(2);

// ---------------------------------------------------------------------------
// 1. Token-level streaming.

/// A text answer streams as more than one content delta through core, over
/// both transports, and the deltas and the final text are exactly the
/// scripted answer.
pub async fn streams_token_level_text(cli: &'static Cli) {
    const KEYWORD: &str = "STREAMTEXT";
    const TEXT: &str = "Token-level streaming from the mock, eight characters a delta.";
    let h = Harness::start(
        cli,
        Script::new().on_prompt(KEYWORD, vec![Reply::Text(TEXT.into())]),
    )
    .await;
    for (host_approvals, transport) in [(false, "one_shot"), (true, "control")] {
        let agent = h.agent(h.config(host_approvals));
        let run = drain(&agent, &format!("{KEYWORD}: say something"), |_, _| {}).await;
        let result = run.ok(transport);
        assert_eq!(run.transport(), transport);
        let deltas = run.text_deltas();
        assert!(
            deltas.len() > 1,
            "{} {transport}: one delta is not token-level streaming: {deltas:?}",
            cli.recipe.name
        );
        assert_eq!(
            deltas.concat(),
            TEXT,
            "{transport}: the deltas are the scripted text"
        );
        assert_eq!(result.text, TEXT, "{transport}");
    }
    let requests = h.model_requests(KEYWORD);
    assert_eq!(requests.len(), 2, "one model request per run");
    for request in requests {
        assert_eq!(
            request.json().unwrap()["stream"],
            true,
            "the CLI asked the model to stream"
        );
    }
}

// ---------------------------------------------------------------------------
// 2. A real tool round trip.

/// The read-only command: its output (`hi-from-tool`) is not in its text, so
/// finding the output in the next model request proves the command ran.
const READ_ONLY_COMMAND: &str = "printf '%s-%s\\n' hi from-tool";
const TOOL_OUTPUT: &str = "hi-from-tool";

/// The model calls the shell tool; the CLI runs the command for real and its
/// output goes back to the model in the next request; the run's events hold
/// the call and its result.
pub async fn runs_a_tool_and_returns_its_result(cli: &'static Cli) {
    const KEYWORD: &str = "RUNTOOL";
    const FINAL: &str = "The tool ran.";
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![
            Reply::ToolCall {
                name: cli.shell_tool.into(),
                arguments: json!({"command": READ_ONLY_COMMAND}),
            },
            Reply::Text(FINAL.into()),
        ],
    );
    let h = Harness::start(cli, script).await;
    let mut cfg = h.config(false);
    cfg.extra_args = cli
        .allow_read_only
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
    let run = drain(&h.agent(cfg), &format!("{KEYWORD} please"), |_, _| {}).await;
    let result = run.ok("tool round trip");
    assert_eq!(run.transport(), "one_shot");
    assert_eq!(result.text, FINAL);

    let back = tool_results_in(&h.request_after(KEYWORD, 1));
    assert!(
        back.iter().any(|t| t.contains(TOOL_OUTPUT)),
        "{}: the second model request carries the command's output; tool results: {back:?}",
        cli.recipe.name
    );

    let calls = run.tool_calls();
    let (id, _) = *calls
        .iter()
        .find(|(_, name)| *name == cli.shell_tool)
        .unwrap_or_else(|| {
            panic!(
                "no {} ToolCall: {calls:?}\n{}",
                cli.shell_tool,
                run.describe()
            )
        });
    assert!(
        run.tool_args(id).contains("from-tool"),
        "the call's arguments: {}",
        run.tool_args(id)
    );
    let tool_result = run.tool_result(id);
    assert_eq!(tool_result["is_error"], false, "{tool_result}");
    assert!(
        result_text(tool_result).contains(TOOL_OUTPUT),
        "the ToolResult holds the output: {tool_result}"
    );
}

// ---------------------------------------------------------------------------
// 3. Approvals over the control transport.

const TOUCH_COMMAND: &str = "touch made-by-tool.txt";
const TOUCHED_FILE: &str = "made-by-tool.txt";

/// The reason the host gives when it denies.
const DENIAL: &str = "denied-by-the-test";

/// What a `touch` run with host approvals left behind.
struct Touch {
    h: Harness,
    run: Run,
    /// How many approval requests reached the host.
    approvals: usize,
    /// The tool results the model got back in the follow-up request.
    back: Vec<String>,
}

/// Runs a `touch` tool call with host approvals, approving or denying the
/// one approval request.
async fn touch_with_approval(cli: &'static Cli, approve: bool) -> Touch {
    const KEYWORD: &str = "TOUCHFILE";
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![
            Reply::ToolCall {
                name: cli.shell_tool.into(),
                arguments: json!({"command": TOUCH_COMMAND}),
            },
            Reply::Text("Done touching.".into()),
        ],
    );
    let h = Harness::start(cli, script).await;
    let agent = h.agent(h.config(true));
    let mut approvals = 0;
    let run = drain(&agent, &format!("{KEYWORD} please"), |event, _| {
        if let Event::ApprovalRequest(req) = event {
            approvals += 1;
            assert_eq!(req.kind, DecisionKind::Permission, "{req:?}");
            let details = req.details.clone().unwrap_or_default();
            assert_eq!(details["tool_name"], cli.shell_tool, "{details}");
            assert_eq!(details["input"]["command"], TOUCH_COMMAND, "{details}");
            let answered = if approve {
                req.approve()
            } else {
                req.deny(DENIAL)
            };
            answered.expect("the approval is answerable once");
        }
    })
    .await;
    assert_eq!(run.transport(), "control", "{}", run.describe());
    assert_eq!(approvals, 1, "one ApprovalRequest\n{}", run.describe());
    let back = tool_results_in(&h.request_after(KEYWORD, 1));
    Touch {
        h,
        run,
        approvals,
        back,
    }
}

/// An approved tool call that changes the workspace really runs.
pub async fn approval_approved_runs_the_tool(cli: &'static Cli) {
    let Touch {
        h, run, approvals, ..
    } = touch_with_approval(cli, true).await;
    assert_eq!(approvals, 1);
    assert_eq!(run.ok("approved tool").text, "Done touching.");
    assert!(
        h.workspace().join(TOUCHED_FILE).exists(),
        "{}: the approved command ran\n{}",
        cli.recipe.name,
        run.describe()
    );
    let (id, _) = run.tool_calls()[0];
    assert_eq!(run.tool_result(id)["is_error"], false);
}

/// A denied tool call does not run, its result is an error, the model is
/// told (with the host's reason when the CLI forwards it), and the run still
/// ends: the model answers after the denial.
pub async fn approval_denied_blocks_the_tool(cli: &'static Cli) {
    let Touch {
        h,
        run,
        approvals,
        back,
    } = touch_with_approval(cli, false).await;
    assert_eq!(approvals, 1);
    assert!(
        matches!(run.events.last(), Some(Event::RunFinished(_))),
        "the run ended\n{}",
        run.describe()
    );
    assert_eq!(run.ok("denied tool").text, "Done touching.");
    assert!(
        !h.workspace().join(TOUCHED_FILE).exists(),
        "{}: the denied command did not run",
        cli.recipe.name
    );
    let (id, _) = run.tool_calls()[0];
    let tool_result = run.tool_result(id);
    assert_eq!(tool_result["is_error"], true, "{tool_result}");
    let told = cli.fixed_denial_text.unwrap_or(DENIAL);
    assert!(
        back.iter().any(|t| t.contains(told)),
        "{}: the model was told {told:?}; it got {back:?}",
        cli.recipe.name
    );
}

// ---------------------------------------------------------------------------
// 4. Resume.

/// Run 1 (through core) leaves a valid checkpoint; run 2, made directly
/// against the driver with that state, continues the same provider session:
/// the model sees the first exchange, and the session id is kept.
pub async fn resumes_the_session(cli: &'static Cli) {
    const KEYWORD: &str = "REMEMBER";
    const FIRST_PROMPT: &str = "REMEMBER the word zebra-7731";
    const FIRST: &str = "first-answer-alpha";
    const SECOND_PROMPT: &str = "Which word did I ask you to remember?";
    const SECOND: &str = "second-answer-beta";
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![Reply::Text(FIRST.into()), Reply::Text(SECOND.into())],
    );
    let h = Harness::start(cli, script).await;
    let first = drain(&h.agent(h.config(false)), FIRST_PROMPT, |_, _| {}).await;
    let result = first.ok("run 1");
    assert_eq!(result.text, FIRST);
    let checkpoint = result
        .checkpoint()
        .unwrap_or_else(|| panic!("run 1 has no valid checkpoint\n{}", first.describe()));
    assert!(checkpoint.valid);
    let state = checkpoint.state.clone().expect("a checkpoint state");
    assert!(!state.resume_id.is_empty());

    let driver = h.driver(h.config(false));
    let mut request = Request::new("run_00000000000000b2", SECOND_PROMPT);
    request.streaming = true;
    request.session = Some(SessionContext {
        state: Some(state.clone()),
        ..Default::default()
    });
    let trace = record_run(&driver, request.clone(), RUN_TIMEOUT).await;
    let mut report = Report::default();
    verify_trace(
        &driver,
        &request,
        &trace,
        Expect::Success,
        "resume",
        &mut report,
    );
    report.assert_passed();
    let response = trace.response().expect("run 2 returned a response");
    assert_eq!(response.output, SECOND);
    let resumed = response
        .checkpoint
        .as_ref()
        .and_then(|c| c.state.as_ref())
        .expect("run 2 has a checkpoint");
    assert_eq!(
        resumed.resume_id, state.resume_id,
        "the resumed run keeps the session id"
    );

    let seen = h.request_after(KEYWORD, 1);
    let body = String::from_utf8_lossy(&seen.body);
    for earlier in ["zebra-7731", FIRST, SECOND_PROMPT] {
        assert!(
            body.contains(earlier),
            "{}: run 2's model request holds {earlier:?}",
            cli.recipe.name
        );
    }
}

// ---------------------------------------------------------------------------
// 5. A provider error.

/// An HTTP 400 from the model ends in a RunError that carries the provider's
/// own message.
pub async fn http_400_is_a_run_error_with_the_providers_message(cli: &'static Cli) {
    const KEYWORD: &str = "BADREQUEST";
    // What the mock puts in the protocol's error body for a null body.
    const PROVIDER_MESSAGE: &str = "mock http error 400: Bad Request";
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![Reply::HttpError {
            status: 400,
            body: Value::Null,
            retry_after: None,
        }],
    );
    let h = Harness::start(cli, script).await;
    let run = drain(
        &h.agent(h.config(false)),
        &format!("{KEYWORD} now"),
        |_, _| {},
    )
    .await;
    let err = match &run.outcome {
        Ok(r) => panic!("a 400 succeeded with {:?}\n{}", r.text, run.describe()),
        Err(e) => e.as_run_error().expect("a RunError").clone(),
    };
    assert_eq!(err.reason, FailureReason::AgentError, "{}", err.message);
    assert!(
        err.message.contains(PROVIDER_MESSAGE),
        "{}: the message carries the provider's: {:?}",
        cli.recipe.name,
        err.message
    );
    assert!(
        err.result
            .as_ref()
            .is_some_and(|r| r.checkpoint().is_none()),
        "no checkpoint after a failure"
    );
    assert!(!h.model_requests(KEYWORD).is_empty());
}

// ---------------------------------------------------------------------------
// 6. Cancel mid-stream.

/// Polls group `pgid` from now until it has no running member or `deadline`
/// passes; returns what is left and when it was last looked at.
pub(super) async fn watch_group(pgid: u32, deadline: Instant) -> (Vec<u32>, Instant) {
    loop {
        let left = group_members(pgid);
        let now = Instant::now();
        if left.is_empty() || now >= deadline {
            return (left, now);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Cancelling after the first text delta stops the CLI and every other
/// member of its process group within 2 s, and the run fails as cancelled.
pub async fn cancel_mid_stream_kills_the_process_group(cli: &'static Cli) {
    const KEYWORD: &str = "SLOWTEXT";
    // 100 deltas, 200 ms apart: 20 s if nothing stops it.
    let text = "0123456789abcdef".repeat(50);
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![Reply::Slow {
            text: text.clone(),
            chunk_delay: Duration::from_millis(200),
        }],
    );
    let h = Harness::start(cli, script).await;
    let agent = h.agent(h.config(false));
    let mut pid: Option<u32> = None;
    let mut cancelled_at: Option<Instant> = None;
    let mut members_at_cancel = Vec::new();
    let mut watcher = None;
    let run = drain(
        &agent,
        &format!("{KEYWORD} go"),
        |event, stream| match event {
            Event::ProcessInfo(p) if p.kind == ProcessKind::Spawn => {
                pid = p.metadata.get("pid").and_then(|s| s.parse().ok());
            }
            Event::TextDelta(d) if d.phase == Phase::Content && cancelled_at.is_none() => {
                // The process helper puts the CLI in a group of its own
                // (pgid = pid): what runs in it now must be gone soon. The
                // watch runs in real time, beside the rest of the drain.
                let now = Instant::now();
                if let Some(pgid) = pid {
                    members_at_cancel = group_members(pgid);
                    watcher = Some(tokio::spawn(watch_group(pgid, now + CANCEL_BOUND)));
                }
                cancelled_at = Some(now);
                stream.cancel();
            }
            _ => {}
        },
    )
    .await;
    let cancelled_at = cancelled_at
        .unwrap_or_else(|| panic!("no text delta arrived before the end\n{}", run.describe()));
    let pid = pid.expect("the spawn event names the pid");
    assert!(
        members_at_cancel.contains(&pid),
        "the CLI ran in process group {pid} when cancelled: {members_at_cancel:?}"
    );
    let (left, seen_at) = watcher
        .expect("the group is watched from the cancel")
        .await
        .expect("the watch ends");
    let gone_after = seen_at - cancelled_at;
    assert!(
        left.is_empty(),
        "{}: processes {left:?} of group {pid} still ran {gone_after:?} after the cancel",
        cli.recipe.name
    );
    let err = match &run.outcome {
        Ok(r) => panic!("a cancelled run succeeded with {} chars", r.text.len()),
        Err(e) => e.as_run_error().expect("a RunError"),
    };
    assert_eq!(err.reason, FailureReason::Cancelled, "{}", err.message);
    assert!(
        run.text_deltas().concat().len() < text.len(),
        "the answer was cut short"
    );
    eprintln!(
        "{}: process group of {} gone {gone_after:?} after the cancel",
        cli.recipe.name,
        members_at_cancel.len()
    );
}

// ---------------------------------------------------------------------------
// 7. The conformance suite.

/// The whole conformance suite, with a live run and a streaming and a batch
/// run case, on the real CLI over one transport.
async fn conformance(cli: &'static Cli, host_approvals: bool) {
    const KEYWORD: &str = "CONFORM";
    const TEXT: &str = "Conformance answer from the mock.";
    let h = Harness::start(
        cli,
        Script::new().on_prompt(KEYWORD, vec![Reply::Text(TEXT.into())]),
    )
    .await;
    let state = SessionState {
        resume_id: "session-1".into(),
        display_id: "session-1".into(),
        data: [("cwd".to_owned(), h.workspace().display().to_string())].into(),
    };
    let prompt = format!("{KEYWORD}: answer the suite");
    let options = Options::new()
        .session_state(state)
        .session_keys(["cwd"])
        .guard_keys(["cwd"])
        .run(RunCase::new("streaming", &prompt, true, Expect::Success))
        .run(RunCase::new("batch", &prompt, false, Expect::Success))
        .run_timeout(RUN_TIMEOUT)
        .live(LiveRun {
            prompt: prompt.clone(),
            expected_output: Some(TEXT.into()),
            streaming: true,
            timeout: RUN_TIMEOUT,
        });
    let report = test_driver(|| h.driver(h.config(host_approvals)), options).await;
    report.assert_passed();
    for clause in ["LIV-01", "LIV-02", "LIV-03"] {
        assert!(report.passed(clause), "{clause} was judged\n{report}");
    }
    // The two cases and the live run really reached the mock.
    let fresh = h
        .model_requests(KEYWORD)
        .iter()
        .filter(|r| r.conversation().is_some_and(|c| c.assistant_turns == 0))
        .count();
    assert!(fresh >= 3, "{}", h.describe_requests());
}

/// Conformance over the one-shot transport (`-p`, the prompt on stdin).
pub async fn conformance_one_shot(cli: &'static Cli) {
    conformance(cli, false).await;
}

/// Conformance over the control transport (`--input-format stream-json`).
pub async fn conformance_control(cli: &'static Cli) {
    conformance(cli, true).await;
}

// ---------------------------------------------------------------------------
// 8. A thread on one resident process.

/// A thread of three turns through the SQLite store: every turn resumes the
/// same provider session (the checkpoints, and the conversation the mock
/// receives), and one process serves all three (spawns counted). A fourth
/// turn with `with_spawn` runs in a fresh process, for the latency figure.
pub async fn thread_turns_share_one_process(cli: &'static Cli) {
    const KEYWORD: &str = "THREADTURNS";
    const REPLIES: [&str; 4] = [
        "thread-reply-one",
        "thread-reply-two",
        "thread-reply-three",
        "thread-reply-four",
    ];
    let script = Script::new().on_prompt(
        KEYWORD,
        REPLIES.iter().map(|r| Reply::Text((*r).into())).collect(),
    );
    let h = Harness::start(cli, script).await;
    let dir = tempfile::tempdir().expect("a scratch directory");
    let store = agent_adaptor_store::SqliteStore::open(dir.path().join("threads.db"))
        .await
        .expect("open the SQLite store");
    let driver = h.driver(h.config(false));
    let agent = agent_adaptor_core::Agent::builder(driver.clone())
        .thread_store(std::sync::Arc::new(store))
        .build()
        .expect("an agent");
    let thread = agent.thread("real/thread-on-one-process");
    let prompts = [
        format!("{KEYWORD}: remember the word quartz-5512"),
        "And the second turn?".to_owned(),
        "And the third turn?".to_owned(),
    ];
    let mut spawns = Vec::new();
    let mut sessions = Vec::new();
    let mut took = Vec::new();
    for (n, prompt) in prompts.iter().enumerate() {
        let started = Instant::now();
        let run = drain_with(&thread, prompt, RunOptions::new(), |_, _| {}).await;
        took.push(started.elapsed());
        let result = run.ok(&format!("turn {}", n + 1));
        assert_eq!(result.text, REPLIES[n], "turn {}", n + 1);
        let resume = result
            .checkpoint()
            .and_then(|c| c.state.as_ref())
            .map(|s| s.resume_id.clone())
            .unwrap_or_else(|| panic!("turn {} has no checkpoint\n{}", n + 1, run.describe()));
        let stored = thread
            .checkpoint()
            .await
            .expect("the store answers")
            .expect("the store holds the turn's checkpoint");
        assert_eq!(stored.resume_id, resume, "the SQLite record is the turn's");
        sessions.push(resume);
        let spawned = run.spawns();
        if n == 0 {
            assert_eq!(spawned.len(), 1, "{}", run.describe());
            assert_eq!(spawned[0].1, "resident");
        } else {
            assert_eq!(
                run.reused(),
                Some(spawns[0]),
                "{}: turn {} reused the process\n{}",
                cli.recipe.name,
                n + 1,
                run.describe()
            );
        }
        spawns.extend(spawned.into_iter().map(|(pid, _)| pid));
    }
    assert_eq!(
        spawns.len(),
        1,
        "{}: three turns, one process",
        cli.recipe.name
    );
    assert!(
        sessions.iter().all(|s| *s == sessions[0]),
        "{}: every turn continued one provider session: {sessions:?}",
        cli.recipe.name
    );
    // The mock saw one conversation grow: turn N's request carries the
    // N - 1 earlier exchanges.
    let requests = h.model_requests(KEYWORD);
    assert_eq!(requests.len(), 3, "{}", h.describe_requests());
    let third = String::from_utf8_lossy(&h.request_after(KEYWORD, 2).body).into_owned();
    for earlier in [
        "quartz-5512",
        REPLIES[0],
        REPLIES[1],
        "And the second turn?",
    ] {
        assert!(
            third.contains(earlier),
            "turn 3's request holds {earlier:?}"
        );
    }

    // For comparison: a turn in a process of its own.
    let started = Instant::now();
    let fresh = drain_with(
        &thread,
        "And the fourth turn?",
        RunOptions::new().with_spawn(),
        |_, _| {},
    )
    .await;
    let fresh_took = started.elapsed();
    let result = fresh.ok("turn 4 (with_spawn)");
    assert_eq!(result.text, REPLIES[3]);
    let spawned = fresh.spawns();
    assert_eq!(spawned.len(), 1);
    assert_eq!(spawned[0].1, "one_shot");
    assert_eq!(
        result
            .checkpoint()
            .and_then(|c| c.state.as_ref())
            .map(|s| s.resume_id.clone()),
        Some(sessions[0].clone()),
        "the fresh process resumed the same session"
    );
    eprintln!(
        "{}: turn 1 (spawn) {:?}, turn 2 (resident) {:?}, turn 3 (resident) {:?}, turn 4 (with_spawn, --resume) {fresh_took:?}",
        cli.recipe.name, took[0], took[1], took[2]
    );
    assert!(driver.idle_processes() == 1);
    agent.close().await;
    assert!(
        !std::path::Path::new(&format!("/proc/{}", spawns[0])).exists(),
        "close reaped the resident process"
    );
}

// ---------------------------------------------------------------------------
// Run policy: approvals decided by core, web search flags.

/// Runs the `touch` tool call under `policy` (with `host_approvals` or not),
/// answering each approval request with `approve` (`None`: nobody may be
/// asked).
async fn touch_under_policy(
    cli: &'static Cli,
    host_approvals: bool,
    policy: Policy,
    approve: Option<bool>,
) -> Touch {
    const KEYWORD: &str = "POLICYTOUCH";
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![
            Reply::ToolCall {
                name: cli.shell_tool.into(),
                arguments: json!({"command": TOUCH_COMMAND}),
            },
            Reply::Text("Done touching.".into()),
        ],
    );
    let h = Harness::start(cli, script).await;
    let agent = h.agent(h.config(host_approvals));
    let mut approvals = 0;
    let run = drain_with(
        &agent,
        &format!("{KEYWORD} please"),
        RunOptions::new().policy(policy),
        |event, _| {
            if let Event::ApprovalRequest(req) = event {
                approvals += 1;
                match approve {
                    Some(true) => req.approve().expect("answerable"),
                    Some(false) => req.deny(DENIAL).expect("answerable"),
                    None => panic!("nobody may be asked: {req:?}"),
                }
            }
        },
    )
    .await;
    assert_eq!(run.transport(), "control", "{}", run.describe());
    let back = h
        .model_requests(KEYWORD)
        .iter()
        .find(|r| r.conversation().is_some_and(|c| c.assistant_turns == 1))
        .map(tool_results_in)
        .unwrap_or_default();
    Touch {
        h,
        run,
        approvals,
        back,
    }
}

/// `ask` with `on_reject = continue`: the human's denial reaches the CLI,
/// the tool does not run, and the model goes on (it answers after the
/// denial). The decision is in the result.
pub async fn policy_reject_continue_lets_the_model_go_on(cli: &'static Cli) {
    let policy = Policy::default()
        .permission(ApprovalMode::Ask)
        .on_reject(FallbackAction::Continue);
    let Touch {
        h,
        run,
        approvals,
        back,
    } = touch_under_policy(cli, true, policy, Some(false)).await;
    assert_eq!(approvals, 1);
    let result = run.ok("denied, continue");
    assert_eq!(result.text, "Done touching.");
    assert!(
        !h.workspace().join(TOUCHED_FILE).exists(),
        "the tool did not run"
    );
    let told = cli.fixed_denial_text.unwrap_or(DENIAL);
    assert!(back.iter().any(|t| t.contains(told)), "{back:?}");
    let [record] = result.decisions() else {
        panic!("{:?}", result.decisions())
    };
    assert_eq!(record.decided_by, DecidedBy::Human);
    assert_eq!(record.fallback, Some(FallbackAction::Continue));
    assert_eq!(record.text, DENIAL);
}

/// `on_reject = abort`: the denial stops the run with `approval_denied`,
/// and the tool never runs.
pub async fn policy_reject_abort_fails_the_run(cli: &'static Cli) {
    let policy = Policy::default().on_reject(FallbackAction::Abort);
    let Touch { h, run, .. } = touch_under_policy(cli, true, policy, Some(false)).await;
    let err = match &run.outcome {
        Err(e) => e,
        Ok(r) => panic!("the run must fail: {:?}\n{}", r.text, run.describe()),
    };
    let failure = err.as_run_error().unwrap();
    assert_eq!(
        failure.reason,
        FailureReason::ApprovalDenied,
        "{}",
        failure.message
    );
    assert_eq!(
        failure.details.as_ref().unwrap()["decision"]["text"],
        DENIAL
    );
    assert!(
        !h.workspace().join(TOUCHED_FILE).exists(),
        "the tool did not run"
    );
}

/// `auto_deny` without host approvals: the run uses the control transport,
/// core denies without asking anyone (visible as notices and in the
/// result), the tool does not run, and the model goes on.
pub async fn policy_auto_deny_asks_nobody(cli: &'static Cli) {
    let policy = Policy::default().permission(ApprovalMode::AutoDeny);
    let Touch {
        h, run, approvals, ..
    } = touch_under_policy(cli, false, policy, None).await;
    assert_eq!(approvals, 0);
    let result = run.ok("auto-deny");
    assert_eq!(result.text, "Done touching.");
    assert!(
        !h.workspace().join(TOUCHED_FILE).exists(),
        "the tool did not run"
    );
    let [record] = result.decisions() else {
        panic!("{:?}", result.decisions())
    };
    assert_eq!(
        (record.decided_by, record.mode),
        (DecidedBy::Policy, ApprovalMode::AutoDeny)
    );
    assert!(run.events.iter().any(|e| matches!(
        e,
        Event::Notice(n) if n.kind == notice_kind::APPROVAL_RESOLVED
            && n.data.as_ref().is_some_and(|d| d["decided_by"] == "policy")
    )));
}

/// The web tools a model request offers the model: declared in `tools`
/// (Anthropic `tools[].name`, Chat Completions `tools[].function.name`), or
/// listed one per line as deferred tools the model can load (Claude Code's
/// `<system-reminder>`). A tool merely named in prose (a subagent's
/// description) is not offered.
#[allow(dead_code)] // used by real_claude.rs only
fn web_tools_in(request: &agent_adaptor_testkit::mock::RecordedRequest) -> Vec<&'static str> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.extend(s.lines().map(|l| l.trim().to_owned())),
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            Value::Object(o) => {
                if let Some(name) = o
                    .get("name")
                    .or_else(|| o.get("function").and_then(|f| f.get("name")))
                    .and_then(Value::as_str)
                {
                    out.push(name.to_owned());
                }
                o.values().for_each(|v| walk(v, out));
            }
            _ => {}
        }
    }
    let mut offered = Vec::new();
    walk(&request.json().unwrap_or_default(), &mut offered);
    ["WebSearch", "WebFetch"]
        .into_iter()
        .filter(|t| offered.iter().any(|o| o == t))
        .collect()
}

/// `web_search = deny` reaches the CLI: its model request no longer offers
/// the web tools a run without the policy offers. (Claude Code only:
/// CodeBuddy Code keeps a disallowed tool declared and denies its calls.)
#[allow(dead_code)] // used by real_claude.rs only
pub async fn policy_web_search_deny_removes_the_web_tools(cli: &'static Cli) {
    const KEYWORD: &str = "WEBTOOLS";
    let h = Harness::start(
        cli,
        Script::new().on_prompt(KEYWORD, vec![Reply::Text("No web today.".into())]),
    )
    .await;
    let agent = h.agent(h.config(false));
    let baseline = drain(&agent, &format!("{KEYWORD} baseline"), |_, _| {}).await;
    baseline.ok("baseline");
    let denied = drain_with(
        &agent,
        &format!("{KEYWORD} denied"),
        RunOptions::new().policy(Policy::default().web_search(FeatureLevel::Deny)),
        |_, _| {},
    )
    .await;
    denied.ok("web search denied");
    let web_of = |tag: &str| {
        let requests = h.model_requests(&format!("{KEYWORD} {tag}"));
        assert!(!requests.is_empty(), "{tag}: {}", h.describe_requests());
        web_tools_in(&requests[0])
    };
    assert_eq!(
        web_of("baseline"),
        ["WebSearch", "WebFetch"],
        "{}: a plain run offers both web tools",
        cli.recipe.name
    );
    assert!(
        web_of("denied").is_empty(),
        "{}: web search denied",
        cli.recipe.name
    );
}
