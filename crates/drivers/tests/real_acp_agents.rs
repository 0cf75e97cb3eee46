//! The ACP driver running the other pinned ACP agents (Qwen Code, Copilot
//! CLI, opencode, the Zed adapters for Claude Code and Codex) offline
//! against the testkit mock, each started from its testkit recipe
//! (`agent_adaptor_testkit::clis`: program, arguments, environment, home
//! files) as a custom ACP command. For every agent: a text turn through
//! core (token deltas, the mock's answer, a valid checkpoint); a shell call
//! the agent asks permission for (one `ApprovalRequest`, approved, the
//! command runs in the workspace); a two-turn thread through the SQLite
//! `ThreadStore` (turn 2 loads the session in a new process; the model sees
//! turn 1); a cancel mid-stream that leaves no process; and a model HTTP
//! error as a typed agent error (not Copilot: it answers model errors as
//! text with `end_turn`).
//!
//! Compiled only with `--features agent-adaptor-drivers/real-clis`.
#![cfg(feature = "real-clis")]
#![cfg(feature = "acp")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod gemini_support;
mod group_watch;
#[allow(dead_code)]
mod jsonl_common;

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::{Agent, Event, FailureReason, Phase, RunOptions};
use agent_adaptor_driver::DecisionKind;
use agent_adaptor_drivers::acp::{self, AcpAgent};
use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_testkit::clis::{self, CliRecipe, ScratchDir};
use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use gemini_support::{drain_with, ok, text_deltas};
use group_watch::{GroupWatch, spawned_pid};
use serde_json::{Value, json};

/// The command the tool turn runs, and the file it writes.
const COMMAND: &str = "echo acp-driver > driver.txt";

/// One agent: its recipe, its shell tool and that tool's arguments.
struct Row {
    recipe: CliRecipe,
    tool: &'static str,
    arguments: fn() -> Value,
    /// A model HTTP status the agent reports as a JSON-RPC error after one
    /// request (Qwen and opencode retry a 5xx for about a minute, so 400),
    /// and what the error's text says of it (codex-acp names the status
    /// class); `None`: Copilot answers every model error as text and
    /// `end_turn`, which no ACP client can tell from an answer.
    http_error: Option<(u16, &'static str)>,
}

fn command_and_description() -> Value {
    json!({"command": COMMAND, "description": "Write the file"})
}

fn escalated_cmd() -> Value {
    json!({
        "cmd": COMMAND,
        "sandbox_permissions": "require_escalated",
        "justification": "Write the file?"
    })
}

/// The mock, a scratch home prepared by the recipe, and the driver
/// configuration running the recipe's command.
struct Setup {
    server: MockServer,
    home: ScratchDir,
    config: acp::Config,
}

async fn setup(row: &Row, script: Script) -> Setup {
    let server = MockServer::start(script).await.unwrap();
    let home = ScratchDir::new(row.recipe.name).unwrap();
    let cmd = row
        .recipe
        .acp_command(&server.base_url(), home.path())
        .unwrap_or_else(|e| panic!("{e}"));
    let std = cmd.as_std();
    let program = std.get_program().into();
    let args = std
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let env = std
        .get_envs()
        .filter_map(|(k, v)| {
            v.map(|v| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
        })
        .filter(|(k, _)| k != "PATH")
        .collect();
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let config = acp::Config {
        env,
        env_policy: EnvPolicy::only(["PATH"]),
        cwd: Some(work),
        ..acp::Config::for_agent(AcpAgent::Custom { program, args })
    };
    Setup {
        server,
        home,
        config,
    }
}

async fn text_turn(row: &Row) {
    const KEYWORD: &str = "DRIVERTEXT";
    const TEXT: &str = "An answer through the ACP driver, a few deltas long.";
    let s = setup(
        row,
        Script::new().on_prompt(KEYWORD, vec![Reply::Text(TEXT.into())]),
    )
    .await;
    let agent = Agent::new(acp::driver(s.config.clone()));
    let run = drain_with(
        &agent,
        &format!("{KEYWORD} hello"),
        RunOptions::new(),
        |_, _| {},
    )
    .await;
    let result = ok(&run);
    let name = row.recipe.name;
    assert!(result.text.contains(TEXT), "{name}: {:?}", result.text);
    assert!(text_deltas(&run).concat().contains(TEXT), "{name}");
    assert!(result.checkpoint().is_some_and(|c| c.valid), "{name}");
}

async fn approved_shell_call(row: &Row) {
    const KEYWORD: &str = "DRIVERTOOL";
    let s = setup(
        row,
        Script::new().on_prompt(
            KEYWORD,
            vec![
                Reply::ToolCall {
                    name: row.tool.into(),
                    arguments: (row.arguments)(),
                },
                Reply::Text("Done.".into()),
            ],
        ),
    )
    .await;
    let agent = Agent::new(acp::driver(s.config.clone()));
    let mut asked = 0;
    let run = drain_with(
        &agent,
        &format!("{KEYWORD} please"),
        RunOptions::new(),
        |e, _| {
            if let Event::ApprovalRequest(req) = e {
                asked += 1;
                assert_eq!(req.kind, DecisionKind::Permission);
                req.approve().unwrap();
            }
        },
    )
    .await;
    let name = row.recipe.name;
    ok(&run);
    assert_eq!(asked, 1, "{name}: one ApprovalRequest");
    let written = s.home.path().join("work/driver.txt");
    assert!(written.exists(), "{name}: the approved command ran");
}

/// A thread of two turns through the SQLite `ThreadStore`: turn 2 is a new
/// process that `session/load`s turn 1's session (the replay is not turn
/// 2's output) and the model sees turn 1.
async fn thread_turns(row: &Row) {
    const KEYWORD: &str = "DRIVERTHREAD";
    let s = setup(
        row,
        Script::new().on_prompt(
            KEYWORD,
            vec![
                Reply::Text("first-answer-alpha".into()),
                Reply::Text("second-answer-beta".into()),
            ],
        ),
    )
    .await;
    let store = agent_adaptor_store::SqliteStore::open(s.home.path().join("threads.db"))
        .await
        .unwrap();
    let agent = Agent::builder(acp::driver(s.config.clone()))
        .thread_store(Arc::new(store))
        .build()
        .unwrap();
    let thread = agent.thread("real/acp-agent");
    let name = row.recipe.name;
    let first = drain_with(
        &thread,
        &format!("{KEYWORD}: remember zebra-7731"),
        RunOptions::new(),
        |_, _| {},
    )
    .await;
    assert!(ok(&first).text.contains("first-answer-alpha"), "{name}");
    let session = ok(&first).checkpoint().unwrap().state.clone().unwrap();
    let second = drain_with(&thread, "Which word?", RunOptions::new(), |_, _| {}).await;
    let text = &ok(&second).text;
    assert!(text.contains("second-answer-beta"), "{name}: {text:?}");
    assert!(
        !text.contains("first-answer-alpha"),
        "{name}: the replay leaked: {text:?}"
    );
    let resumed = ok(&second).checkpoint().unwrap().state.clone().unwrap();
    assert_eq!(resumed.resume_id, session.resume_id, "{name}: one session");
    let last = s
        .server
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.method == "POST" && r.path == row.recipe.request_path)
        .expect("a model request");
    let body = String::from_utf8_lossy(&last.body);
    for earlier in ["zebra-7731", "first-answer-alpha", "Which word?"] {
        assert!(body.contains(earlier), "{name}: turn 2 carries {earlier:?}");
    }
}

/// Cancel at the first text delta of a slow answer: the run ends cancelled
/// and nothing of the agent's process group is left.
async fn cancel_mid_stream(row: &Row) {
    const KEYWORD: &str = "DRIVERSLOW";
    let text = "0123456789abcdef".repeat(50);
    let s = setup(
        row,
        Script::new().on_prompt(
            KEYWORD,
            vec![Reply::Slow {
                text: text.clone(),
                chunk_delay: Duration::from_millis(200),
            }],
        ),
    )
    .await;
    let agent = Agent::new(acp::driver(s.config.clone()));
    let (mut pid, mut watch) = (None, None);
    let run = drain_with(
        &agent,
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
    let name = row.recipe.name;
    assert_eq!(run.err().reason, FailureReason::Cancelled, "{name}");
    let watch = watch.expect("a text delta before the end");
    let left = watch.wait_gone().await;
    assert!(
        left.is_empty(),
        "{name}: {left:?} still run after the cancel"
    );
}

/// A model HTTP error ends the run as an agent error naming the status.
async fn model_error(row: &Row) {
    const KEYWORD: &str = "DRIVERFAIL";
    let name = row.recipe.name;
    let Some((status, said)) = row.http_error else {
        panic!("{name} has no typed model error to test");
    };
    let s = setup(
        row,
        Script::new().on_prompt(
            KEYWORD,
            vec![Reply::HttpError {
                status,
                body: Value::Null,
                retry_after: None,
            }],
        ),
    )
    .await;
    let agent = Agent::new(acp::driver(s.config.clone()));
    let run = drain_with(
        &agent,
        &format!("{KEYWORD} now"),
        RunOptions::new(),
        |_, _| {},
    )
    .await;
    let err = run.err();
    assert_eq!(
        err.reason,
        FailureReason::AgentError,
        "{name}: {}",
        err.message
    );
    assert!(err.message.contains(said), "{name}: {}", err.message);
}

macro_rules! agent_tests {
    ($($module:ident => $row:expr $(, model_error $error:ident)?;)*) => {$(
        mod $module {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn text_turn() {
                super::text_turn(&$row).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn approved_shell_call() {
                super::approved_shell_call(&$row).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn thread_turns() {
                super::thread_turns(&$row).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn cancel_mid_stream() {
                super::cancel_mid_stream(&$row).await;
            }

            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $error() {
                    super::model_error(&$row).await;
                }
            )?
        }
    )*};
}

agent_tests! {
    qwen => Row { recipe: clis::QWEN, tool: "run_shell_command", arguments: command_and_description, http_error: Some((400, "400")) }, model_error model_error_is_typed;
    copilot => Row { recipe: clis::COPILOT, tool: "bash", arguments: command_and_description, http_error: None };
    opencode => Row { recipe: clis::OPENCODE, tool: "bash", arguments: command_and_description, http_error: Some((400, "400")) }, model_error model_error_is_typed;
    claude => Row { recipe: clis::CLAUDE_ACP, tool: "Bash", arguments: command_and_description, http_error: Some((500, "500")) }, model_error model_error_is_typed;
    codex => Row { recipe: clis::CODEX_ACP, tool: "exec_command", arguments: escalated_cmd, http_error: Some((500, "internal_server_error")) }, model_error model_error_is_typed;
}
