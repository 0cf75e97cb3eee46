//! Smoke test of the pinned ACP agents (Qwen Code, Copilot CLI, opencode, the
//! Zed adapters for Claude Code and Codex): each one, started with its
//! [`agent_adaptor_testkit::clis`] recipe, speaks ACP on stdio offline
//! against the in-process mock. For every agent:
//!
//! * a text turn: `initialize` (protocol version 1), `session/new`, one
//!   `session/prompt` whose `agent_message_chunk`s spell the mock's answer
//!   and whose result is `stopReason: end_turn`, with the model requests on
//!   the recipe's path carrying the dummy key;
//! * a shell tool call: the recipe makes the agent ask
//!   (`session/request_permission`, exactly once); answered with the
//!   `allow_once` option it offered, the command runs in the workspace.
//!
//! The driver's own tests (crates/drivers) prove the mapping to events; this
//! file proves the recipes. Compiled only with
//! `--features agent-adaptor-testkit/real-clis`.
#![cfg(feature = "real-clis")]

use std::time::Duration;

use agent_adaptor_testkit::clis::{self, CliRecipe, DUMMY_API_KEY, ScratchDir};
use agent_adaptor_testkit::mock::{MockServer, RecordedRequest, Reply, Script};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// A cold start takes up to ~10 s on a small, busy machine (opencode and
/// Qwen load large bundles).
const TIMEOUT: Duration = Duration::from_secs(120);

/// The keyword of the text turn's rule.
const TEXT: &str = "ACPTEXT";

/// The keyword of the tool turn's rule.
const TOOL: &str = "ACPTOOL";

/// The command the tool turn runs, and the file it writes in the workspace.
const COMMAND: &str = "echo acp-smoke > smoke.txt";

/// One ACP agent as this test drives it.
struct Agent {
    recipe: CliRecipe,
    /// The header carrying the API key, and its expected value.
    key_header: &'static str,
    key_value: fn() -> String,
    /// The agent's shell tool and the arguments that run [`COMMAND`].
    tool: &'static str,
    arguments: fn() -> Value,
}

fn bearer() -> String {
    format!("Bearer {DUMMY_API_KEY}")
}

fn plain_key() -> String {
    DUMMY_API_KEY.to_owned()
}

fn command_and_description() -> Value {
    json!({"command": COMMAND, "description": "Write the smoke file"})
}

static QWEN: Agent = Agent {
    recipe: clis::QWEN,
    key_header: "authorization",
    key_value: bearer,
    tool: "run_shell_command",
    arguments: command_and_description,
};

static COPILOT: Agent = Agent {
    recipe: clis::COPILOT,
    key_header: "authorization",
    key_value: bearer,
    tool: "bash",
    arguments: command_and_description,
};

static OPENCODE: Agent = Agent {
    recipe: clis::OPENCODE,
    key_header: "authorization",
    key_value: bearer,
    tool: "bash",
    arguments: command_and_description,
};

static CLAUDE_ACP: Agent = Agent {
    recipe: clis::CLAUDE_ACP,
    key_header: "x-api-key",
    key_value: plain_key,
    tool: "Bash",
    arguments: command_and_description,
};

/// Codex runs a writing command in its default `read-only` mode only with
/// approval, which the model asks for with `require_escalated`.
fn escalated_cmd() -> Value {
    json!({
        "cmd": COMMAND,
        "sandbox_permissions": "require_escalated",
        "justification": "Write the smoke file?"
    })
}

static CODEX_ACP: Agent = Agent {
    recipe: clis::CODEX_ACP,
    key_header: "authorization",
    key_value: bearer,
    tool: "exec_command",
    arguments: escalated_cmd,
};

/// A running agent: the ACP client side, minimal (numeric ids of our own;
/// every agent request but a permission request gets "method not found").
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    /// Every `session/update` notification, in order.
    updates: Vec<Value>,
    /// Every `session/request_permission` request, in order.
    permissions: Vec<Value>,
    /// The frames read, for assertion messages.
    log: Vec<String>,
}

impl Client {
    fn start(agent: &Agent, base_url: &str, home: &ScratchDir) -> Client {
        let mut command = match agent.recipe.acp_command(base_url, home.path()) {
            Ok(command) => command,
            // The error says: run scripts/install-clis.
            Err(e) => panic!("{e}"),
        };
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => panic!("{}: spawning: {e}", agent.recipe.name),
        };
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            panic!("{}: no piped stdin/stdout", agent.recipe.name);
        };
        Client {
            child,
            stdin: Some(stdin),
            lines: BufReader::new(stdout).lines(),
            next_id: 0,
            updates: Vec::new(),
            permissions: Vec::new(),
            log: Vec::new(),
        }
    }

    async fn send(&mut self, frame: Value) {
        let Some(stdin) = self.stdin.as_mut() else {
            panic!("stdin already closed");
        };
        let mut line = frame.to_string();
        line.push('\n');
        if let Err(e) = stdin.write_all(line.as_bytes()).await {
            panic!("writing to the agent: {e}\n{}", self.report());
        }
    }

    /// Sends a request and reads until its response, serving the agent's
    /// requests meanwhile. Returns the `result`; an `error` fails the test.
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let line = match self.lines.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => panic!("{method}: the agent closed stdout\n{}", self.report()),
                Err(e) => panic!("{method}: reading: {e}\n{}", self.report()),
            };
            if line.trim().is_empty() {
                continue;
            }
            self.log.push(line.clone());
            let Ok(frame) = serde_json::from_str::<Value>(&line) else {
                panic!("{method}: not a JSON frame: {line}\n{}", self.report());
            };
            assert_eq!(frame["jsonrpc"], "2.0", "{line}");
            match (frame.get("method").and_then(Value::as_str), frame.get("id")) {
                (Some("session/update"), None) => self.updates.push(frame["params"].clone()),
                (Some("session/request_permission"), Some(request_id)) => {
                    let request_id = request_id.clone();
                    let option = frame["params"]["options"]
                        .as_array()
                        .and_then(|options| options.iter().find(|o| o["kind"] == "allow_once"))
                        .map(|o| o["optionId"].clone());
                    let Some(option) = option else {
                        panic!("no allow_once option offered: {line}");
                    };
                    self.permissions.push(frame["params"].clone());
                    self.send(json!({"jsonrpc": "2.0", "id": request_id,
                        "result": {"outcome": {"outcome": "selected", "optionId": option}}}))
                        .await;
                }
                (Some(_), Some(request_id)) => {
                    let request_id = request_id.clone();
                    self.send(json!({"jsonrpc": "2.0", "id": request_id,
                        "error": {"code": -32601, "message": "method not found"}}))
                        .await;
                }
                (Some(_), None) => {}
                (None, Some(response_id)) if *response_id == json!(id) => {
                    if frame.get("error").is_some() {
                        panic!("{method} failed: {line}\n{}", self.report());
                    }
                    return frame["result"].clone();
                }
                (None, _) => panic!("unexpected response: {line}\n{}", self.report()),
            }
        }
    }

    /// The text of the `agent_message_chunk` updates from `from` on.
    fn text_since(&self, from: usize) -> String {
        self.updates[from..]
            .iter()
            .filter(|u| u["update"]["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|u| u["update"]["content"]["text"].as_str())
            .collect()
    }

    fn report(&self) -> String {
        format!("--- frames read ---\n{}", self.log.join("\n"))
    }

    /// Closes stdin, then kills the agent's whole process group (two of the
    /// agents do not exit on end of input).
    async fn stop(mut self) {
        drop(self.stdin.take());
        let pgid = self.child.id();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
        clis::kill_process_group(pgid);
    }
}

fn script(agent: &Agent, answer: &str) -> Script {
    Script::new()
        .on_prompt(TEXT, vec![Reply::Text(answer.to_owned())])
        .on_prompt(
            TOOL,
            vec![
                Reply::ToolCall {
                    name: agent.tool.to_owned(),
                    arguments: (agent.arguments)(),
                },
                Reply::Text("The smoke file is written.".to_owned()),
            ],
        )
}

/// Starts the agent, opens a session in `<home>/work`, and returns the
/// client and the session id.
async fn open_session(agent: &Agent, base_url: &str, home: &ScratchDir) -> (Client, Value) {
    let mut client = Client::start(agent, base_url, home);
    let init = client
        .call(
            "initialize",
            json!({
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
                "clientInfo": {"name": "agent-adaptor-smoke", "version": "0"}
            }),
        )
        .await;
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentCapabilities"]["loadSession"], true, "{init}");
    let work = home.path().join("work");
    let new = client
        .call(
            "session/new",
            json!({"cwd": work.to_string_lossy(), "mcpServers": []}),
        )
        .await;
    let session = new["sessionId"].clone();
    assert!(session.is_string(), "{new}");
    (client, session)
}

async fn prompt(client: &mut Client, session: &Value, text: &str) -> Value {
    client
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
}

/// The model requests the mock recorded: at least one, every one on the
/// recipe's path with the dummy key.
fn assert_talked_to_mock(agent: &Agent, requests: &[RecordedRequest]) {
    let name = agent.recipe.name;
    assert!(!requests.is_empty(), "{name}: no request reached the mock");
    let key = (agent.key_value)();
    for request in requests {
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("POST", agent.recipe.request_path),
            "{name}"
        );
        assert_eq!(request.header(agent.key_header), Some(&*key), "{name}");
    }
}

async fn answers_a_text_turn(agent: &Agent) {
    let answer = format!("acp-smoke-{}", agent.recipe.name);
    let server = match MockServer::start(script(agent, &answer)).await {
        Ok(server) => server,
        Err(e) => panic!("starting the mock: {e}"),
    };
    let home = match ScratchDir::new(agent.recipe.name) {
        Ok(home) => home,
        Err(e) => panic!("scratch home: {e}"),
    };
    let turn = async {
        let (mut client, session) = open_session(agent, &server.base_url(), &home).await;
        let from = client.updates.len();
        let result = prompt(&mut client, &session, &format!("{TEXT}: say it")).await;
        (client, from, result)
    };
    let Ok((client, from, result)) = tokio::time::timeout(TIMEOUT, turn).await else {
        panic!("{}: no answer within {TIMEOUT:?}", agent.recipe.name);
    };
    let text = client.text_since(from);
    let asked = client.permissions.len();
    let report = client.report();
    client.stop().await;
    assert_eq!(result["stopReason"], "end_turn", "{result}\n{report}");
    assert_eq!(text, answer, "{report}");
    assert_eq!(asked, 0, "{report}");
    assert_talked_to_mock(agent, &server.requests());
}

async fn asks_before_a_shell_command(agent: &Agent) {
    let server = match MockServer::start(script(agent, "unused")).await {
        Ok(server) => server,
        Err(e) => panic!("starting the mock: {e}"),
    };
    let home = match ScratchDir::new(agent.recipe.name) {
        Ok(home) => home,
        Err(e) => panic!("scratch home: {e}"),
    };
    let turn = async {
        let (mut client, session) = open_session(agent, &server.base_url(), &home).await;
        let result = prompt(&mut client, &session, &format!("{TOOL}: write it")).await;
        (client, result)
    };
    let Ok((client, result)) = tokio::time::timeout(TIMEOUT, turn).await else {
        panic!("{}: no answer within {TIMEOUT:?}", agent.recipe.name);
    };
    let permissions = client.permissions.clone();
    let report = client.report();
    client.stop().await;
    assert_eq!(result["stopReason"], "end_turn", "{result}\n{report}");
    assert_eq!(permissions.len(), 1, "{report}");
    assert_eq!(permissions[0]["toolCall"]["kind"], "execute", "{report}");
    let written = std::fs::read_to_string(home.path().join("work/smoke.txt"));
    assert_eq!(written.ok().as_deref(), Some("acp-smoke\n"), "{report}");
    assert_talked_to_mock(agent, &server.requests());
}

macro_rules! acp_smoke {
    ($($agent:ident => $text:ident, $tool:ident;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $text() {
            answers_a_text_turn(&$agent).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $tool() {
            asks_before_a_shell_command(&$agent).await;
        }
    )*};
}

acp_smoke! {
    QWEN => qwen_answers_a_text_turn, qwen_asks_before_a_shell_command;
    COPILOT => copilot_answers_a_text_turn, copilot_asks_before_a_shell_command;
    OPENCODE => opencode_answers_a_text_turn, opencode_asks_before_a_shell_command;
    CLAUDE_ACP => claude_acp_answers_a_text_turn, claude_acp_asks_before_a_shell_command;
    CODEX_ACP => codex_acp_answers_a_text_turn, codex_acp_asks_before_a_shell_command;
}
