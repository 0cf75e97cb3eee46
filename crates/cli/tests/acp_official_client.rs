//! `agent-adaptor acp` driven by the official ACP client library
//! `@agentclientprotocol/sdk` (pinned in tests/bridges/package.json; its
//! schema checks run on every message) through
//! `tests/bridges/acp/acp-client.mjs`: initialize, a new session, a prompt
//! whose updates arrive in order, permission requests answered (allow and
//! reject), a cancelled prompt, and — after the server was restarted over
//! the same SQLite store — `session/load` of the earlier session (its
//! conversation replayed where the store holds it) and a prompt that
//! continues it. The agents: the library's LLM agent, and (with the
//! `real-clis` feature) the real Claude Code, both against the testkit mock
//! model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../bridges/tests/support/agui_node.rs"]
mod node;
mod support;

use std::path::Path;
use std::time::Duration;

use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use serde_json::{Value, json};

/// How long one client run may take (a hang fails, nothing is timed).
const CLIENT_BOUND: Duration = Duration::from_secs(120);

const FIRST: &str = "FIRSTKEY hello";
const SLOW: &str = "SLOWKEY go";

/// The mock's script; `tool` is the tool call the agent asks permission
/// for (the LLM agent's `list_files`, Claude Code's `Bash`).
fn script(tool: &Reply) -> Script {
    Script::new()
        .on_prompt(
            "FIRSTKEY",
            vec![
                Reply::Text("Hello there, friend.".into()),
                tool.clone(),
                Reply::Text("Listed the files.".into()),
                tool.clone(),
                Reply::Text("Understood, no listing.".into()),
                Reply::Text("Welcome back.".into()),
            ],
        )
        .on_prompt(
            "SLOWKEY",
            vec![Reply::Slow {
                text: "slow words ".repeat(300),
                chunk_delay: Duration::from_millis(100),
            }],
        )
}

/// The environment of the server under test: isolated, no credentials.
fn env(home: &Path) -> Value {
    json!({
        "HOME": home,
        "AGENT_ADAPTOR_HOME": home.join("agent-adaptor"),
        "AGENT_ADAPTOR_STATE_DIR": home.join("state"),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "NO_COLOR": "1",
    })
}

async fn client(plan: Value) -> Value {
    node::require_node_package("@agentclientprotocol/sdk");
    let script = node::bridges_dir().join("acp/acp-client.mjs");
    let out = node::run_node(&script, &[plan.to_string()], CLIENT_BOUND).await;
    let report = out.json();
    assert!(
        report["ok"] == true,
        "the official client reported problems: {report:#}\nstderr:\n{}",
        out.stderr
    );
    report
}

fn texts(step: &Value, kind: &str) -> String {
    step["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["kind"] == kind)
        .map(|u| u["text"].as_str().unwrap_or_default())
        .collect()
}

fn kinds(step: &Value) -> Vec<&str> {
    step["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["kind"].as_str().unwrap())
        .collect()
}

/// One agent under test: how the server is started, and what it shows.
struct Subject {
    /// `agent-adaptor acp …` and its arguments.
    command: Value,
    /// The server's environment.
    env: Value,
    /// The sessions' cwd.
    work: std::path::PathBuf,
    /// The ACP kind of the tool call that asks permission.
    tool_kind: &'static str,
    /// Whether the store holds the conversation (a load replays it).
    replays: bool,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_drives_the_llm_agent_and_loads_after_a_restart() {
    let tool = Reply::ToolCall {
        name: "list_files".into(),
        arguments: json!({"path": "."}),
    };
    let mock = MockServer::start(script(&tool)).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("marker-file.txt"), "x").unwrap();
    let store = format!("sqlite:{}", home.path().join("threads.db").display());
    let base = format!("{}/v1", mock.base_url());
    let subject = Subject {
        command: json!([
            support::bin(),
            "acp",
            "--driver",
            "llm",
            "--provider",
            "openai",
            "--base-url",
            base,
            "--store",
            store,
            "--cwd",
            work,
        ]),
        env: env(home.path()),
        work,
        tool_kind: "read",
        replays: true,
    };
    scenario(&subject, &mock).await;
}

#[cfg(feature = "real-clis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_drives_claude_code_and_loads_after_a_restart() {
    use agent_adaptor_testkit::clis::CLAUDE;
    let tool = Reply::ToolCall {
        name: "Bash".into(),
        arguments: json!({"command": "touch made-by-tool.txt", "description": "Make a file"}),
    };
    let mock = MockServer::start(script(&tool)).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let recipe_env = CLAUDE.prepare(&mock.base_url(), home.path()).unwrap();
    let work = home.path().join("work");
    std::fs::write(work.join("marker-file.txt"), "x").unwrap();
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(CLAUDE.binary().unwrap(), bin.join("claude")).unwrap();
    let mut env = env(home.path());
    for (k, v) in recipe_env {
        env[k] = json!(v);
    }
    env["PATH"] = json!(format!(
        "{}:{}",
        bin.display(),
        support::stand_in::SYSTEM_PATH
    ));
    env["CLAUDE_CODE_MAX_RETRIES"] = json!("0");
    env["CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK"] = json!("1");
    let store = format!("sqlite:{}", home.path().join("threads.db").display());
    let subject = Subject {
        command: json!([
            support::bin(),
            "acp",
            "--driver",
            "claude",
            "--model",
            CLAUDE.model,
            "--inherit-env",
            "--store",
            store,
        ]),
        env,
        work,
        tool_kind: "execute",
        // Claude Code's thread state is its session id: nothing to replay.
        replays: false,
    };
    scenario(&subject, &mock).await;
}

/// Two server processes over one store, each driven by the official
/// client: the first runs the prompts, the second loads the first session
/// and continues it.
async fn scenario(subject: &Subject, mock: &MockServer) {
    let first = client(json!({
        "command": subject.command,
        "env": subject.env,
        "cwd": subject.work,
        "steps": [
            {"op": "new"},
            {"op": "prompt", "text": FIRST},
            {"op": "prompt", "text": "list the files please", "permission": "allow_once"},
            {"op": "prompt", "text": "and again", "permission": "reject_once"},
            {"op": "new"},
            {"op": "prompt", "text": SLOW, "cancelAt": "update"},
        ],
    }))
    .await;
    let init = &first["init"];
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    let steps = first["steps"].as_array().unwrap();
    let session = steps[0]["sessionId"].as_str().unwrap().to_owned();

    // Text in order, as chunks.
    assert_eq!(steps[1]["stopReason"], "end_turn", "{:#}", steps[1]);
    assert!(kinds(&steps[1]).iter().all(|k| *k == "agent_message_chunk"));
    assert!(kinds(&steps[1]).len() > 1, "streamed in pieces");
    assert_eq!(
        texts(&steps[1], "agent_message_chunk"),
        "Hello there, friend."
    );

    // Allowed: one permission request, the tool ran, then the answer.
    let allowed = &steps[2];
    assert_eq!(allowed["stopReason"], "end_turn", "{allowed:#}");
    assert_eq!(allowed["permissions"].as_array().unwrap().len(), 1);
    let ids: Vec<&str> = allowed["permissions"][0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["allow_once", "allow_always", "reject_once"]);
    let k = kinds(allowed);
    let call = k
        .iter()
        .position(|k| *k == "tool_call")
        .expect("a tool call");
    let done = allowed["updates"]
        .as_array()
        .unwrap()
        .iter()
        .position(|u| u["kind"] == "tool_call_update" && u["status"] == "completed")
        .expect("the tool call completed");
    let answer = k.iter().rposition(|k| *k == "agent_message_chunk").unwrap();
    assert!(call < done && done < answer, "{k:?}");
    assert_eq!(allowed["updates"][call]["toolKind"], subject.tool_kind);
    assert_eq!(texts(allowed, "agent_message_chunk"), "Listed the files.");

    // Rejected: asked once, the model heard the refusal and answered.
    let rejected = &steps[3];
    assert_eq!(rejected["stopReason"], "end_turn", "{rejected:#}");
    assert_eq!(rejected["permissions"].as_array().unwrap().len(), 1);
    assert_eq!(
        texts(rejected, "agent_message_chunk"),
        "Understood, no listing."
    );

    // Cancelled at its first update.
    let cancelled = &steps[5];
    assert_eq!(cancelled["stopReason"], "cancelled", "{cancelled:#}");
    assert!(!cancelled["updates"].as_array().unwrap().is_empty());

    // A new server process over the same store loads the first session.
    let second = client(json!({
        "command": subject.command,
        "env": subject.env,
        "cwd": subject.work,
        "steps": [
            {"op": "load", "sessionId": session},
            {"op": "prompt", "text": "are you back?"},
        ],
    }))
    .await;
    let steps = second["steps"].as_array().unwrap();
    let replay = &steps[0];
    assert!(replay["error"].is_null(), "{replay:#}");
    if subject.replays {
        assert_eq!(
            kinds(replay).first(),
            Some(&"user_message_chunk"),
            "{replay:#}"
        );
        assert!(
            texts(replay, "user_message_chunk").contains(FIRST),
            "{replay:#}"
        );
        let said = texts(replay, "agent_message_chunk");
        assert!(
            said.contains("Hello there, friend.") && said.contains("Listed the files."),
            "{said}"
        );
        assert!(kinds(replay).contains(&"tool_call"), "{replay:#}");
    } else {
        assert!(kinds(replay).is_empty(), "{replay:#}");
    }
    assert_eq!(steps[1]["stopReason"], "end_turn", "{:#}", steps[1]);
    assert_eq!(texts(&steps[1], "agent_message_chunk"), "Welcome back.");
    // The continued turn sent the whole conversation to the model.
    let requests = mock.requests();
    let last = requests
        .iter()
        .rev()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .find(|b| b.contains("are you back?"))
        .expect("the continued turn reached the model");
    assert!(
        last.contains(FIRST) && last.contains("Listed the files."),
        "{last}"
    );
}
