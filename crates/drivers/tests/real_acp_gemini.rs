//! The ACP driver running the real, pinned Gemini CLI (`gemini --acp`,
//! installed by `scripts/install-clis`) offline against the testkit mock
//! model server, set up as for the stream-json Gemini driver
//! (`gemini_support`'s harness: the scratch home's `settings.json`, the
//! mock's URL and a dummy key, one attempt per model request). Scenarios:
//! token-level text, a shell tool call that asks permission (approved: it
//! runs; denied: it does not), a cancelled run whose process group is gone,
//! a two-turn thread through the SQLite `ThreadStore` (turn 2 loads turn 1's
//! session in a new process, after waiting for the next UTC minute),
//! and a model HTTP 500 as a typed failure. (The time to the first text
//! delta against the stream-json driver is `agent-adaptor-bench
//! acp-first-delta`.)
//!
//! Compiled only with `--features agent-adaptor-drivers/real-clis`.
#![cfg(feature = "real-clis")]
#![cfg(feature = "acp")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod acp_support;
mod gemini_support;
mod group_watch;
#[allow(dead_code)]
mod jsonl_common;

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::{Agent, Event, FailureReason, Phase, RunOptions};
use agent_adaptor_driver::DecisionKind;
use agent_adaptor_drivers::acp::{self, AcpAgent};
use agent_adaptor_testkit::clis::GEMINI;
use agent_adaptor_testkit::mock::{Reply, Script};
use gemini_support::{Harness, answers, calls_then_answers, drain_with, ok, text_deltas};
use group_watch::{GroupWatch, spawned_pid};
use jsonl_common::Run;
use serde_json::{Value, json};

/// The ACP driver on the harness's real `gemini`, mock and home.
fn config(h: &Harness) -> acp::Config {
    acp::Config {
        model: Some(GEMINI.model.into()),
        ..acp_support::config(
            AcpAgent::Gemini,
            h.binary(),
            h.env(),
            h.workspace(),
            Vec::new(),
        )
    }
}

fn agent(h: &Harness) -> Agent {
    Agent::new(acp::driver(config(h)))
}

async fn run(h: &Harness, prompt: &str) -> Run {
    drain_with(&agent(h), prompt, RunOptions::new(), |_, _| {}).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_token_level_text() {
    const KEYWORD: &str = "ACPTEXT";
    const TEXT: &str = "Token-level streaming over ACP, eight characters a delta.";
    let h = Harness::start(answers(KEYWORD, TEXT)).await;
    let run = run(&h, &format!("{KEYWORD}: say something")).await;
    let result = ok(&run);
    let deltas = text_deltas(&run);
    assert!(deltas.len() > 1, "token-level: {deltas:?}");
    assert_eq!(deltas.concat(), TEXT);
    assert_eq!(result.text, TEXT);
    let usage = result.usage.as_ref().expect("usage from _meta");
    assert!(usage.input_tokens.is_some_and(|n| n > 0), "{usage:?}");
    assert!(result.checkpoint().is_some_and(|c| c.valid));
    assert_eq!(h.model_requests(KEYWORD).len(), 1);
}

/// A shell call in the default approval mode: one host decision.
async fn shell_with_permission(approve: bool) -> (Harness, Run, usize) {
    const KEYWORD: &str = "ACPSHELL";
    let h = Harness::start(calls_then_answers(
        KEYWORD,
        "run_shell_command",
        json!({"command": "touch acp-marker.txt", "description": "make a marker"}),
        "Shell step over.",
    ))
    .await;
    let mut asked = 0;
    let run = drain_with(
        &agent(&h),
        &format!("{KEYWORD} please"),
        RunOptions::new(),
        |e, _| {
            if let Event::ApprovalRequest(req) = e {
                asked += 1;
                assert_eq!(req.kind, DecisionKind::Permission);
                let options = req.details.as_ref().unwrap()["options"].clone();
                assert!(!options.as_array().unwrap().is_empty(), "{options}");
                if approve {
                    req.approve().unwrap();
                } else {
                    req.deny("not now").unwrap();
                }
            }
        },
    )
    .await;
    (h, run, asked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_shell_call_runs() {
    let (h, run, asked) = shell_with_permission(true).await;
    assert_eq!(asked, 1, "one ApprovalRequest");
    assert_eq!(ok(&run).text, "Shell step over.");
    assert!(
        h.workspace().join("acp-marker.txt").exists(),
        "the command ran"
    );
    assert!(run.events.iter().any(|e| matches!(e,
        Event::ToolCall(c) if c.phase == Phase::Start)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_shell_call_does_not_run() {
    let (h, run, asked) = shell_with_permission(false).await;
    assert_eq!(asked, 1, "one ApprovalRequest");
    assert!(
        !h.workspace().join("acp-marker.txt").exists(),
        "the command did not run"
    );
    // The turn goes on: the model hears of the denial and answers.
    assert_eq!(ok(&run).text, "Shell step over.");
    assert_eq!(
        h.model_requests("ACPSHELL").len(),
        2,
        "the call, then the follow-up"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_stream_leaves_no_process() {
    const KEYWORD: &str = "ACPSLOW";
    let text = "0123456789abcdef".repeat(50);
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![Reply::Slow {
            text: text.clone(),
            chunk_delay: Duration::from_millis(200),
        }],
    );
    let h = Harness::start(script).await;
    let (mut pid, mut watch) = (None, None);
    let run = drain_with(
        &agent(&h),
        &format!("{KEYWORD} go"),
        RunOptions::new(),
        |e, stream| {
            if let Some(p) = spawned_pid(e) {
                pid = Some(p);
            }
            if let (Event::TextDelta(d), Some(p), None) = (e, pid, &watch)
                && d.phase == Phase::Content
            {
                watch = Some(GroupWatch::of(p));
                stream.cancel();
            }
        },
    )
    .await;
    assert_eq!(run.err().reason, FailureReason::Cancelled);
    let watch = watch.expect("a text delta before the end");
    assert!(
        watch.members.len() > 1,
        "gemini relaunches itself: {:?}",
        watch.members
    );
    let left = watch.wait_gone().await;
    assert!(left.is_empty(), "{left:?} still run after the cancel");
    assert!(text_deltas(&run).concat().len() < text.len(), "cut short");
}

/// A thread through the SQLite `ThreadStore`: turn 1 checkpoints the ACP
/// session; turn 2 has a new `gemini --acp` `session/load` it. Gemini
/// names a session's record after the UTC minute a process opened it and
/// loses the session when it is loaded within that minute, so turn 2 first
/// waits for the next minute (an `acp.load_wait` notice): this test takes
/// up to a minute. Gemini answers the load before its replay is over; the
/// replayed turn 1 is never turn 2's text. Turn 2's model request carries
/// turn 1's exchange.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_turn_loads_the_session_in_a_new_process() {
    const KEYWORD: &str = "ACPTHREAD";
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![
            Reply::Text("first-answer-alpha".into()),
            Reply::Text("second-answer-beta".into()),
        ],
    );
    let h = Harness::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    let store = agent_adaptor_store::SqliteStore::open(dir.path().join("threads.db"))
        .await
        .expect("open the SQLite store");
    let agent = Agent::builder(acp::driver(config(&h)))
        .thread_store(Arc::new(store))
        .build()
        .expect("an agent");
    let thread = agent.thread("real/acp-gemini");
    let first = drain_with(
        &thread,
        &format!("{KEYWORD}: remember the word zebra-7731"),
        RunOptions::new(),
        |_, _| {},
    )
    .await;
    assert_eq!(ok(&first).text, "first-answer-alpha");
    let session = ok(&first).checkpoint().unwrap().state.clone().unwrap();
    let stored = thread
        .checkpoint()
        .await
        .unwrap()
        .expect("turn 1 is stored");
    assert_eq!(stored.resume_id, session.resume_id);
    let second = drain_with(&thread, "Which word?", RunOptions::new(), |_, _| {}).await;
    assert_eq!(ok(&second).text, "second-answer-beta");
    assert_eq!(text_deltas(&second).concat(), "second-answer-beta");
    let resumed = ok(&second).checkpoint().unwrap().state.clone().unwrap();
    assert_eq!(resumed.resume_id, session.resume_id, "one ACP session");
    let notices = second.notices();
    let opened = format!("session {} opened (session/load)", session.resume_id);
    assert!(notices.iter().any(|n| n.contains(&opened)), "{notices:?}");
    assert!(
        notices.iter().any(|n| n.contains("session/load replayed")),
        "the replay, counted: {notices:?}"
    );
    let requests = h.model_requests(KEYWORD);
    assert_eq!(requests.len(), 2, "one model request a turn");
    let history = requests[1].json().unwrap().to_string();
    assert!(history.contains("zebra-7731"), "turn 1's prompt: {history}");
    assert!(
        history.contains("first-answer-alpha"),
        "turn 1's answer: {history}"
    );
    assert!(history.contains("Which word?"), "{history}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_http_500_is_a_typed_failure() {
    const KEYWORD: &str = "ACPFAIL";
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![Reply::HttpError {
            status: 500,
            body: Value::Null,
            retry_after: None,
        }],
    );
    let h = Harness::start(script).await;
    let run = run(&h, &format!("{KEYWORD} now")).await;
    let err = run.err();
    assert_eq!(err.reason, FailureReason::AgentError, "{}", err.message);
    assert!(err.message.contains("500"), "{}", err.message);
    assert!(
        err.result
            .as_ref()
            .is_some_and(|r| r.checkpoint().is_none_or(|c| !c.valid))
    );
}
