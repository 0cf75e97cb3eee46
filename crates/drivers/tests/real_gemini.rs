//! The Gemini CLI driver against the real, pinned `gemini` (installed by
//! `scripts/install-clis`), offline: the testkit mock model server answers
//! its Gemini API requests (`GOOGLE_GEMINI_BASE_URL`, the recipe's
//! `settings.json` auth type and `-m` model; `general.maxAttempts = 1` so an
//! error is not retried with backoff). Scenarios: token-level text, a
//! read-only tool round trip in the default approval mode, a shell tool
//! under `--yolo`, API errors (HTTP 400 and 503) as run errors with the
//! provider's message, resume, cancel mid-stream (the process group is gone
//! within a few seconds), and the conformance suite with a live run.
//!
//! Compiled only with `--features agent-adaptor-drivers/real-clis`. A
//! missing binary fails with a message to run `scripts/install-clis`.
#![cfg(feature = "real-clis")]
#![cfg(feature = "gemini")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod gemini_support;
mod group_watch;
#[allow(dead_code)]
mod jsonl_common;

use std::time::{Duration, Instant};

use agent_adaptor_conformance::{Expect, LiveRun, Options, RunCase, record_run, test_driver};
use agent_adaptor_core::{Event, FailureReason, Phase, ProcessKind};
use agent_adaptor_driver::SessionState;
use agent_adaptor_drivers::gemini;
use agent_adaptor_testkit::clis::GEMINI;
use agent_adaptor_testkit::mock::{Reply, Script};
use gemini_support::{
    Harness, RUN_TIMEOUT, answers, body_contains, calls_then_answers, declared_tools, drain,
    function_responses, ok, resume_request, session_state, started_tool_call, text_deltas,
};
use group_watch::group_members;
use serde_json::{Value, json};

/// How soon after a cancel the CLI's whole process group must be gone.
const CANCEL_BOUND: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_token_level_text() {
    const KEYWORD: &str = "STREAMTEXT";
    const TEXT: &str = "Token-level streaming from the mock, eight characters a delta.";
    let h = Harness::start(answers(KEYWORD, TEXT)).await;
    let run = drain(
        &h.agent(h.config()),
        &format!("{KEYWORD}: say something"),
        |_, _| {},
    )
    .await;
    let result = ok(&run);
    let deltas = text_deltas(&run);
    assert!(deltas.len() > 1, "token-level: {deltas:?}");
    assert_eq!(deltas.concat(), TEXT);
    assert_eq!(result.text, TEXT);
    assert_eq!(result.model, GEMINI.model);
    let usage = result.usage.as_ref().unwrap();
    assert_eq!(
        (usage.input_tokens, usage.output_tokens),
        (Some(100), Some(10))
    );
    assert!(result.checkpoint().is_some_and(|c| c.valid));
    assert_eq!(h.model_requests(KEYWORD).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_a_file_with_a_read_only_tool() {
    const KEYWORD: &str = "READNOTES";
    const CONTENT: &str = "notes written by the test: 4417";
    let h = Harness::start(calls_then_answers(
        KEYWORD,
        "read_file",
        json!({"file_path": "notes.txt"}),
        "File read.",
    ))
    .await;
    std::fs::write(h.workspace().join("notes.txt"), CONTENT).unwrap();
    let run = drain(
        &h.agent(h.config()),
        &format!("{KEYWORD} please"),
        |_, _| {},
    )
    .await;
    assert_eq!(ok(&run).text, "File read.");

    let requests = h.model_requests(KEYWORD);
    assert_eq!(requests.len(), 2, "the call, then the follow-up");
    let tools = declared_tools(&requests[0]);
    assert!(tools.contains(&"read_file".to_owned()), "{tools:?}");
    assert!(
        !tools.contains(&"run_shell_command".to_owned()),
        "the default approval mode offers read-only tools only: {tools:?}"
    );
    let back = function_responses(&requests[1]);
    assert!(
        back.iter()
            .any(|r| r["name"] == "read_file" && r.to_string().contains(CONTENT)),
        "the follow-up carries the file: {back:?}"
    );
    let call = started_tool_call(&run, |c| c.name == "read_file");
    assert_eq!(call.args.as_ref().unwrap()["file_path"], "notes.txt");
    let id = &call.id;
    assert!(run.events.iter().any(|e| matches!(e,
        Event::ToolResult(r) if r.id == *id && r.result.as_ref().is_some_and(|v| v["status"] == "success"))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yolo_runs_a_shell_command() {
    const KEYWORD: &str = "RUNSHELL";
    let h = Harness::start(calls_then_answers(
        KEYWORD,
        "run_shell_command",
        json!({"command": "printf '%s-%s' hi from-shell"}),
        "Shell ran.",
    ))
    .await;
    let run = drain(&h.agent(h.yolo()), &format!("{KEYWORD} please"), |_, _| {}).await;
    assert_eq!(ok(&run).text, "Shell ran.");
    let requests = h.model_requests(KEYWORD);
    assert!(declared_tools(&requests[0]).contains(&"run_shell_command".to_owned()));
    let back = function_responses(&requests[1]);
    assert!(
        back.iter().any(|r| r.to_string().contains("hi-from-shell")),
        "the command ran: {back:?}"
    );
    assert!(
        run.events.iter().any(|e| matches!(e,
        Event::ToolResult(r) if r.result.as_ref().is_some_and(|v| v["output"] == "hi-from-shell")))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_errors_are_run_errors_with_the_providers_message() {
    for (keyword, status, message) in [
        ("BADREQUEST", 400, "mock http error 400: Bad Request"),
        (
            "UNAVAILABLE",
            503,
            "mock http error 503: Service Unavailable",
        ),
    ] {
        let script = Script::new().on_prompt(
            keyword,
            vec![Reply::HttpError {
                status,
                body: Value::Null,
                retry_after: None,
            }],
        );
        let h = Harness::start(script).await;
        let started = Instant::now();
        let run = drain(&h.agent(h.config()), &format!("{keyword} now"), |_, _| {}).await;
        let err = run.err();
        assert_eq!(err.reason, FailureReason::AgentError, "{}", err.message);
        assert_eq!(err.message, message);
        assert!(
            err.result
                .as_ref()
                .is_some_and(|r| r.checkpoint().is_none())
        );
        assert_eq!(h.model_requests(keyword).len(), 1, "no retry");
        eprintln!(
            "gemini: HTTP {status} failed the run in {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumes_the_session() {
    const KEYWORD: &str = "REMEMBER";
    const SECOND_PROMPT: &str = "Which word did I ask you to remember?";
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![
            Reply::Text("first-answer-alpha".into()),
            Reply::Text("second-answer-beta".into()),
        ],
    );
    let h = Harness::start(script).await;
    let first = drain(
        &h.agent(h.config()),
        "REMEMBER the word zebra-7731",
        |_, _| {},
    )
    .await;
    let state = session_state(&first);
    assert_eq!(state.data["cwd"], h.workspace().display().to_string());

    let driver = gemini::driver(h.config());
    let mut request = resume_request(SECOND_PROMPT, state.clone());
    request.streaming = true;
    let trace = record_run(&driver, request, RUN_TIMEOUT).await;
    let response = trace.response().expect("run 2 returned");
    assert_eq!(response.output, "second-answer-beta");
    let resumed = response
        .checkpoint
        .as_ref()
        .unwrap()
        .state
        .as_ref()
        .unwrap();
    assert_eq!(resumed.resume_id, state.resume_id, "the same session");
    let requests = h.model_requests(KEYWORD);
    let last = requests.last().unwrap();
    for earlier in ["zebra-7731", "first-answer-alpha", SECOND_PROMPT] {
        assert!(
            body_contains(last, earlier),
            "run 2's request holds {earlier:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_stream_kills_the_process_group() {
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
    let h = Harness::start(script).await;
    let (mut pid, mut at_cancel, mut cancelled_at) = (None::<u32>, Vec::new(), None);
    let run = drain(
        &h.agent(h.config()),
        &format!("{KEYWORD} go"),
        |e, stream| match e {
            Event::ProcessInfo(p) if p.kind == ProcessKind::Spawn => {
                pid = p.metadata.get("pid").and_then(|s| s.parse().ok());
            }
            Event::TextDelta(d) if d.phase == Phase::Content && cancelled_at.is_none() => {
                at_cancel = pid.map(group_members).unwrap_or_default();
                cancelled_at = Some(Instant::now());
                stream.cancel();
            }
            _ => {}
        },
    )
    .await;
    let cancelled_at = cancelled_at.expect("a text delta before the end");
    let pid = pid.expect("the spawn event names the pid");
    assert!(
        at_cancel.contains(&pid),
        "the CLI ran in group {pid}: {at_cancel:?}"
    );
    assert!(
        at_cancel.len() > 1,
        "gemini relaunches itself as a child: {at_cancel:?}"
    );
    let left = loop {
        let left = group_members(pid);
        if left.is_empty() || cancelled_at.elapsed() > CANCEL_BOUND {
            break left;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let gone = cancelled_at.elapsed();
    assert!(
        left.is_empty(),
        "{left:?} of group {pid} still run {gone:?} after the cancel"
    );
    assert_eq!(run.err().reason, FailureReason::Cancelled);
    assert!(text_deltas(&run).concat().len() < text.len(), "cut short");
    eprintln!(
        "gemini: process group of {} gone {gone:?} after the cancel",
        at_cancel.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_with_a_live_run() {
    const KEYWORD: &str = "CONFORM";
    const TEXT: &str = "Conformance answer from the mock.";
    let h = Harness::start(answers(KEYWORD, TEXT)).await;
    let state = SessionState {
        resume_id: "session-1".into(),
        display_id: "session-1".into(),
        data: [("cwd".to_owned(), h.workspace().display().to_string())].into(),
    };
    let prompt = format!("{KEYWORD}: answer the suite");
    let report = test_driver(
        || gemini::driver(h.config()),
        Options::new()
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
            }),
    )
    .await;
    report.assert_passed();
    let requests = h.model_requests(KEYWORD);
    assert_eq!(
        requests.len(),
        4,
        "two cases, EQP-02's re-run with instructions, and the live run"
    );
    // EQP-02's instructions reached the model's system instruction.
    assert!(requests.iter().any(|r| {
        r.json().unwrap_or_default()["systemInstruction"]
            .to_string()
            .contains(agent_adaptor_conformance::carry::INSTRUCTIONS)
    }));
}
