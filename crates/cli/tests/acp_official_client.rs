//! `agent-adaptor acp` driven by the official ACP client library
//! `@agentclientprotocol/sdk` (pinned in tests/bridges/package.json; its
//! schema checks run on every message) through
//! `tests/bridges/acp/acp-client.mjs`: initialize, a new session, a prompt
//! whose updates arrive in order, permission requests answered (allow and
//! reject), a cancelled prompt, and — after the server was restarted over
//! the same SQLite store — `session/load` of the earlier session (its
//! conversation replayed) and a prompt that continues it. The agent is the
//! library's LLM agent against the testkit mock model.
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

fn script() -> Script {
    Script::new()
        .on_prompt(
            "FIRSTKEY",
            vec![
                Reply::Text("Hello there, friend.".into()),
                Reply::ToolCall {
                    name: "list_files".into(),
                    arguments: json!({"path": "."}),
                },
                Reply::Text("Listed the files.".into()),
                Reply::ToolCall {
                    name: "list_files".into(),
                    arguments: json!({"path": "."}),
                },
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_drives_the_llm_agent_and_loads_after_a_restart() {
    let mock = MockServer::start(script()).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("marker-file.txt"), "x").unwrap();
    let store = format!("sqlite:{}", home.path().join("threads.db").display());
    let base = format!("{}/v1", mock.base_url());
    let command = json!([
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
    ]);

    let first = client(json!({
        "command": command,
        "env": env(home.path()),
        "cwd": work,
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
    assert_eq!(allowed["updates"][call]["toolKind"], "read");
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
        "command": command,
        "env": env(home.path()),
        "cwd": work,
        "steps": [
            {"op": "load", "sessionId": session},
            {"op": "prompt", "text": "are you back?"},
        ],
    }))
    .await;
    let steps = second["steps"].as_array().unwrap();
    let replay = &steps[0];
    assert!(replay["error"].is_null(), "{replay:#}");
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
    assert_eq!(steps[1]["stopReason"], "end_turn", "{:#}", steps[1]);
    assert_eq!(texts(&steps[1], "agent_message_chunk"), "Welcome back.");
    // The continued turn sent the whole conversation to the model.
    let last = String::from_utf8_lossy(&mock.requests().last().unwrap().body).into_owned();
    assert!(
        last.contains(FIRST)
            && last.contains("Listed the files.")
            && last.contains("are you back?"),
        "{last}"
    );
}
