//! The ACP driver running the other pinned ACP agents (Qwen Code, Copilot
//! CLI, opencode, the Zed adapters for Claude Code and Codex) offline
//! against the testkit mock, each started from its testkit recipe
//! (`agent_adaptor_testkit::clis`: program, arguments, environment, home
//! files) as a custom ACP command. For every agent: a text turn through
//! core (token deltas, the mock's answer, a valid checkpoint), and a shell
//! call the agent asks permission for: one `ApprovalRequest`, approved, the
//! command runs in the workspace.
//!
//! Compiled only with `--features agent-adaptor-drivers/real-clis`.
#![cfg(feature = "real-clis")]
#![cfg(feature = "acp")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod gemini_support;
#[allow(dead_code)]
mod jsonl_common;

use agent_adaptor_core::{Agent, Event, RunOptions};
use agent_adaptor_driver::DecisionKind;
use agent_adaptor_drivers::acp::{self, AcpAgent};
use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_testkit::clis::{self, CliRecipe, ScratchDir};
use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use gemini_support::{drain_with, ok, text_deltas};
use serde_json::{Value, json};

/// The command the tool turn runs, and the file it writes.
const COMMAND: &str = "echo acp-driver > driver.txt";

/// One agent: its recipe, its shell tool and that tool's arguments.
struct Row {
    recipe: CliRecipe,
    tool: &'static str,
    arguments: fn() -> Value,
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
    _server: MockServer,
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
        _server: server,
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

macro_rules! agent_tests {
    ($($module:ident => $row:expr;)*) => {$(
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
        }
    )*};
}

agent_tests! {
    qwen => Row { recipe: clis::QWEN, tool: "run_shell_command", arguments: command_and_description };
    copilot => Row { recipe: clis::COPILOT, tool: "bash", arguments: command_and_description };
    opencode => Row { recipe: clis::OPENCODE, tool: "bash", arguments: command_and_description };
    claude => Row { recipe: clis::CLAUDE_ACP, tool: "Bash", arguments: command_and_description };
    codex => Row { recipe: clis::CODEX_ACP, tool: "exec_command", arguments: escalated_cmd };
}
