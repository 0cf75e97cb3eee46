//! The ACP driver running each real, pinned ACP agent (Qwen Code, GitHub
//! Copilot CLI, opencode, Zed's adapters for Claude Code and Codex, CodeBuddy Code;
//! installed by `scripts/install-clis`) offline against the testkit mock,
//! each set up by its testkit recipe (`acp_support`). Every scenario is one
//! function run for every agent of [`CASES`] (a module per agent, so each
//! case is its own test): token-level text; a shell tool call that asks
//! permission, approved (it ran) and denied (it did not), one host decision
//! each; a cancelled run whose process group is gone; a two-turn thread
//! through the SQLite `ThreadStore` (the second turn's model request holds
//! the first turn); a model HTTP error.
//!
//! Gemini CLI over ACP has its own file (`real_acp_gemini.rs`).
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

use acp_support::AcpHarness;
use agent_adaptor_core::{Event, FailureReason, Phase, RunOptions};
use agent_adaptor_driver::DecisionKind;
use agent_adaptor_drivers::acp::AcpAgent;
use agent_adaptor_testkit::clis::{self, CliRecipe};
use agent_adaptor_testkit::mock::{Reply, Script};
use gemini_support::{drain_with, ok, text_deltas};
use group_watch::{GroupWatch, spawned_pid};
use jsonl_common::Run;
use serde_json::{Value, json};

/// How an agent reports a model HTTP error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ModelError {
    /// A JSON-RPC error answering `session/prompt`: a typed failure.
    Typed,
    /// Copilot CLI: the error's text as an `agent_message_chunk`, then
    /// `stopReason: end_turn` — nothing in ACP tells it from an answer.
    TextThenEndTurn,
    /// CodeBuddy: `stopReason: refusal` (the error only in the result's
    /// `_meta`), a typed `refusal` failure.
    Refusal,
}

/// How an agent ends a turn whose permission the host denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Denied {
    /// `end_turn`: the run succeeds.
    EndTurn,
    /// `stopReason: cancelled` (Codex's `abort` option; CodeBuddy's
    /// `reject`), a cancelled run.
    Cancelled,
}

/// One ACP agent as these tests drive it.
struct Case {
    recipe: &'static CliRecipe,
    agent: AcpAgent,
    /// The agent's shell tool, and its arguments running a command.
    tool: &'static str,
    arguments: fn(&str) -> Value,
    /// Whether the agent reports token usage (Codex's adapter reports only
    /// the context window's use, an `acp.context` notice).
    usage: bool,
    /// The status of the failure scenario's model error, and what the
    /// failure's message says of it.
    error_status: u16,
    error_says: &'static str,
    model_error: ModelError,
    denied: Denied,
    /// Whether a session's first prompt also sends a title request (with the
    /// prompt in it) to the model.
    title_request: bool,
}

fn command_and_description(command: &str) -> Value {
    json!({"command": command, "description": "Write a marker file"})
}

/// Codex runs a writing command in its default `read-only` mode only with
/// approval, which the model asks for with `require_escalated`.
fn escalated_cmd(command: &str) -> Value {
    json!({
        "cmd": command,
        "sandbox_permissions": "require_escalated",
        "justification": "Write a marker file?"
    })
}

// Qwen Code and opencode retry an HTTP 5xx for about a minute before they
// fail the turn; a 400 fails at once, so their failure scenario uses 400.
static QWEN: Case = Case {
    recipe: &clis::QWEN,
    agent: AcpAgent::Qwen,
    tool: "run_shell_command",
    arguments: command_and_description,
    usage: true,
    error_status: 400,
    error_says: "400",
    model_error: ModelError::Typed,
    denied: Denied::EndTurn,
    title_request: false,
};

static COPILOT: Case = Case {
    recipe: &clis::COPILOT,
    agent: AcpAgent::Copilot,
    tool: "bash",
    arguments: command_and_description,
    usage: true,
    error_status: 500,
    error_says: "500",
    model_error: ModelError::TextThenEndTurn,
    denied: Denied::EndTurn,
    title_request: false,
};

static OPENCODE: Case = Case {
    recipe: &clis::OPENCODE,
    agent: AcpAgent::Opencode,
    tool: "bash",
    arguments: command_and_description,
    usage: true,
    error_status: 400,
    error_says: "400",
    model_error: ModelError::Typed,
    denied: Denied::EndTurn,
    title_request: false,
};

static CLAUDE: Case = Case {
    recipe: &clis::CLAUDE_ACP,
    agent: AcpAgent::Claude,
    tool: "Bash",
    arguments: command_and_description,
    usage: true,
    error_status: 500,
    error_says: "500",
    model_error: ModelError::Typed,
    denied: Denied::EndTurn,
    title_request: false,
};

static CODEX: Case = Case {
    recipe: &clis::CODEX_ACP,
    agent: AcpAgent::Codex,
    tool: "exec_command",
    arguments: escalated_cmd,
    usage: false,
    error_status: 500,
    error_says: "internal_server_error",
    model_error: ModelError::Typed,
    denied: Denied::Cancelled,
    title_request: false,
};

/// CodeBuddy's token usage is only in its `usage_update`'s `_meta.usage`
/// (an `acp.context` notice here).
static CODEBUDDY: Case = Case {
    recipe: &clis::CODEBUDDY_ACP,
    agent: AcpAgent::CodeBuddy,
    tool: "Bash",
    arguments: command_and_description,
    usage: false,
    error_status: 500,
    error_says: "refusal",
    model_error: ModelError::Refusal,
    denied: Denied::Cancelled,
    title_request: true,
};

/// Every agent of this file, for the table's own check.
static CASES: [&Case; 6] = [&QWEN, &COPILOT, &OPENCODE, &CLAUDE, &CODEX, &CODEBUDDY];

async fn start(case: &Case, script: Script) -> AcpHarness {
    AcpHarness::start(case.recipe, case.agent.clone(), script).await
}

async fn run(h: &AcpHarness, prompt: &str) -> Run {
    drain_with(&h.agent(), prompt, RunOptions::new(), |_, _| {}).await
}

async fn text(case: &Case) {
    const KEYWORD: &str = "ACPTEXT";
    const TEXT: &str = "Token-level streaming over ACP, eight characters a delta.";
    let h = start(
        case,
        Script::new().on_prompt(KEYWORD, vec![Reply::Text(TEXT.into())]),
    )
    .await;
    let run = run(&h, &format!("{KEYWORD}: say something")).await;
    let result = ok(&run);
    let deltas = text_deltas(&run);
    assert!(deltas.len() > 1, "token-level: {deltas:?}");
    assert_eq!(deltas.concat(), TEXT);
    assert_eq!(result.text, TEXT);
    assert!(result.checkpoint().is_some_and(|c| c.valid));
    let usage = result.usage.as_ref().filter(|u| u.input_tokens.is_some());
    assert_eq!(usage.is_some(), case.usage, "usage: {:?}", result.usage);
}

/// A shell call the agent asks permission for: one host decision,
/// answered `approve`.
async fn shell_with_permission(case: &Case, approve: bool) -> (AcpHarness, Run, usize) {
    const KEYWORD: &str = "ACPSHELL";
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![
            Reply::ToolCall {
                name: case.tool.into(),
                arguments: (case.arguments)("echo acp > acp-marker.txt"),
            },
            Reply::Text("Shell step over.".into()),
        ],
    );
    let h = start(case, script).await;
    let mut asked = 0;
    let run = drain_with(
        &h.agent(),
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

async fn approved_tool_runs(case: &Case) {
    let (h, run, asked) = shell_with_permission(case, true).await;
    assert_eq!(asked, 1, "one ApprovalRequest");
    assert_eq!(ok(&run).text, "Shell step over.");
    assert!(
        h.workspace().join("acp-marker.txt").exists(),
        "the command ran"
    );
    assert!(run.events.iter().any(|e| matches!(e,
        Event::ToolCall(c) if c.phase == Phase::Start)));
}

async fn denied_tool_does_not_run(case: &Case) {
    let (h, run, asked) = shell_with_permission(case, false).await;
    assert_eq!(asked, 1, "one ApprovalRequest");
    assert!(
        !h.workspace().join("acp-marker.txt").exists(),
        "the command did not run"
    );
    let results: Vec<&Value> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult(r) => r.result.as_ref(),
            _ => None,
        })
        .collect();
    match case.denied {
        Denied::EndTurn => {
            ok(&run);
            // The call ends as a failed tool call.
            assert_eq!(results.len(), 1, "{results:?}");
            assert_eq!(results[0]["status"], "failed", "{}", results[0]);
        }
        Denied::Cancelled => assert_eq!(run.err().reason, FailureReason::Cancelled),
    }
}

async fn cancel_leaves_no_process(case: &Case) {
    const KEYWORD: &str = "ACPSLOW";
    let text = "0123456789abcdef".repeat(50);
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![Reply::Slow {
            text: text.clone(),
            chunk_delay: Duration::from_millis(200),
        }],
    );
    let h = start(case, script).await;
    let (mut pid, mut watch) = (None, None);
    let run = drain_with(
        &h.agent(),
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
    let left = watch.wait_gone().await;
    assert!(left.is_empty(), "{left:?} still run after the cancel");
    assert!(text_deltas(&run).concat().len() < text.len(), "cut short");
}

/// Turn 1 checkpoints the ACP session in the SQLite store; turn 2 starts a
/// new process that reopens it (`session/load`, or `session/resume`), and
/// its model request carries turn 1.
async fn thread_resumes(case: &Case) {
    const KEYWORD: &str = "ACPTHREAD";
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![
            Reply::Text("first-answer-alpha".into()),
            Reply::Text("second-answer-beta".into()),
        ],
    );
    let h = start(case, script).await;
    let dir = tempfile::tempdir().unwrap();
    let store = agent_adaptor_store::SqliteStore::open(dir.path().join("threads.db"))
        .await
        .expect("open the SQLite store");
    let agent = agent_adaptor_core::Agent::builder(agent_adaptor_drivers::acp::driver(h.config()))
        .thread_store(Arc::new(store))
        .build()
        .expect("an agent");
    let thread = agent.thread(format!("real/acp-{}", case.recipe.name));
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
    assert_eq!(ok(&second).text, "second-answer-beta", "no replayed text");
    let resumed = ok(&second).checkpoint().unwrap().state.clone().unwrap();
    assert_eq!(resumed.resume_id, session.resume_id, "one session");
    let reopened = second
        .notices()
        .into_iter()
        .find(|n| n.contains(&format!("session {} opened", session.resume_id)))
        .map(str::to_owned);
    assert!(
        reopened
            .as_deref()
            .is_some_and(|n| n.contains("session/load") || n.contains("session/resume")),
        "turn 2 reopened turn 1's session: {reopened:?}"
    );
    let requests = h.model_requests(KEYWORD);
    let last = requests.last().expect("turn 2's model request");
    let body = String::from_utf8_lossy(&last.body);
    assert!(body.contains("Which word?"), "turn 2's prompt");
    assert!(
        body.contains("zebra-7731"),
        "turn 1's prompt in the history"
    );
    assert!(
        body.contains("first-answer-alpha"),
        "turn 1's answer in the history"
    );
}

async fn model_error(case: &Case) {
    const KEYWORD: &str = "ACPFAIL";
    let status = case.error_status;
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![Reply::HttpError {
            status,
            body: Value::Null,
            retry_after: None,
        }],
    );
    let h = start(case, script).await;
    let run = run(&h, &format!("{KEYWORD} now")).await;
    match case.model_error {
        ModelError::Typed => {
            let err = run.err();
            assert_eq!(err.reason, FailureReason::AgentError, "{}", err.message);
            assert!(err.message.contains(case.error_says), "{}", err.message);
            assert!(
                err.result
                    .as_ref()
                    .is_some_and(|r| r.checkpoint().is_none_or(|c| !c.valid))
            );
        }
        ModelError::Refusal => {
            let err = run.err();
            assert_eq!(
                err.reason,
                FailureReason::Other("refusal".into()),
                "{}",
                err.message
            );
            assert!(err.message.contains(case.error_says), "{}", err.message);
        }
        ModelError::TextThenEndTurn => {
            // The honest current behaviour (docs/carriers.md, "ACP agents"):
            // the run succeeds and its text is the agent's error message.
            let text = &ok(&run).text;
            assert!(text.starts_with("Error:"), "{text}");
            assert!(text.contains(case.error_says), "{text}");
        }
    }
    // One model request (and CodeBuddy's title request): none of these
    // statuses is retried.
    let expected = 1 + usize::from(case.title_request);
    assert_eq!(h.model_requests(KEYWORD).len(), expected);
}

/// One test per scenario and agent: `<agent>::<scenario>`.
macro_rules! agents {
    ($($name:ident => $case:expr;)*) => {$(
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn text() {
                super::text(&$case).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn approved_tool_runs() {
                super::approved_tool_runs(&$case).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn denied_tool_does_not_run() {
                super::denied_tool_does_not_run(&$case).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn cancel_leaves_no_process() {
                super::cancel_leaves_no_process(&$case).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn thread_resumes() {
                super::thread_resumes(&$case).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn model_error() {
                super::model_error(&$case).await;
            }
        }
    )*};
}

agents! {
    qwen => QWEN;
    copilot => COPILOT;
    opencode => OPENCODE;
    claude => CLAUDE;
    codex => CODEX;
    codebuddy => CODEBUDDY;
}

/// The table covers every testkit ACP recipe, each once.
#[test]
fn every_acp_recipe_has_a_case() {
    let names: Vec<&str> = CASES.iter().map(|c| c.recipe.name).collect();
    let recipes: Vec<&str> = clis::ACP_AGENTS.iter().map(|r| r.name).collect();
    assert_eq!(names, recipes);
}
