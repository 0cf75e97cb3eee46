//! The observation proof through the web: the real Claude Code, offline
//! against the testkit mock model (scripted to write a todo list, update it
//! and delegate to a subagent that runs a command), behind our AG-UI
//! handler, read by the official `@ag-ui/client` 1.0 with its verifier on
//! every event (any problem or console warning fails the test). The client
//! ends with the todo list at its second revision, the subagent started and
//! finished, and the subagent's shell call tagged with its run id.
//!
//! Compiled only with `--features agent-adaptor-bridges/real-clis`; the
//! binary comes from `scripts/install-clis`.
#![cfg(feature = "real-clis")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/agui_node.rs"]
mod agui_node;
#[path = "support/auth.rs"]
mod auth;

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_bridges::agui::{SseHandler, SseOptions, SseServer};
use agent_adaptor_core::Agent;
use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_drivers::claude;
use agent_adaptor_testkit::clis::{CLAUDE, ScratchDir};
use agent_adaptor_testkit::mock::MockServer;
use agent_adaptor_testkit::scenarios::observe::{
    CHILD_COMMAND, CHILD_OUTPUT, CLAUDE_ENV, OBSERVE_PARENT, script,
};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_observations_pass_the_official_client() {
    agui_node::require_node_package("@ag-ui/client");
    let mock = MockServer::start(script("Bash")).await.unwrap();
    let home = ScratchDir::new("claude").unwrap();
    let env = CLAUDE.prepare(&mock.base_url(), home.path()).unwrap();
    let mut cfg = claude::config();
    cfg.command = CLAUDE.binary().unwrap_or_else(|e| panic!("{e}"));
    cfg.env = env
        .into_iter()
        .chain(
            [
                ("CLAUDE_CODE_MAX_RETRIES", "0"),
                ("CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK", "1"),
            ]
            .iter()
            .chain(CLAUDE_ENV)
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        )
        .collect();
    cfg.env_policy = EnvPolicy::only(["PATH", "USER"]);
    cfg.model = Some(CLAUDE.model.to_owned());
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    cfg.cwd = Some(work);

    let token = auth::token();
    let handler = SseHandler::new(
        Arc::new(Agent::new(claude::driver(cfg))),
        SseOptions::agui(),
    );
    let server = SseServer::bind_local(auth::guard(&token).layer(handler.router("/agui")))
        .await
        .unwrap();
    let options = json!({
        "prompt": format!("{OBSERVE_PARENT}: plan and delegate"),
        "threadId": "t-real-claude",
        "headers": {"Authorization": auth::bearer(&token)},
    });
    let script = agui_node::bridges_dir().join("agui/agui-client.mjs");
    let out = agui_node::run_node(
        &script,
        &[server.url("/agui"), "run".to_owned(), options.to_string()],
        Duration::from_secs(180),
    )
    .await;
    let report = out.json();
    assert_eq!(
        report["ok"],
        json!(true),
        "@ag-ui/client reported problems: {:#}\nstderr: {}",
        report["problems"],
        out.stderr
    );
    let run = &report["runs"][0];
    let types: Vec<&str> = run["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let at = |ty: &str| {
        types
            .iter()
            .position(|t| *t == ty)
            .unwrap_or_else(|| panic!("{ty} missing from {types:?}"))
    };
    assert!(
        at("ACTIVITY_SNAPSHOT") < at("SUBAGENT_STARTED")
            && at("SUBAGENT_STARTED") < at("SUBAGENT_FINISHED")
            && at("SUBAGENT_FINISHED") < at("RUN_FINISHED"),
        "{types:?}"
    );
    let messages = |role: &str| -> Vec<Value> {
        report["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == role)
            .cloned()
            .collect()
    };
    // The client holds the todo list at its last revision.
    let todo: Vec<Value> = messages("activity")
        .into_iter()
        .filter(|m| m["activityType"] == "todo")
        .collect();
    assert_eq!(todo.len(), 1, "{todo:#?}");
    assert_eq!(todo[0]["content"]["revision"], 2, "{:#}", todo[0]);
    let statuses: Vec<&Value> = todo[0]["content"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["status"])
        .collect();
    assert_eq!(statuses, [&json!("completed"), &json!("in_progress")]);
    // The subagent's shell call is its own (tagged with the subagent run
    // id, the parent's Task call id); the Task call is the main agent's.
    let started = run["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "SUBAGENT_STARTED")
        .unwrap();
    let scope = started["subagentRunId"].as_str().unwrap().to_owned();
    let assistant = messages("assistant");
    let calls: Vec<&Value> = assistant
        .iter()
        .flat_map(|m| m["toolCalls"].as_array().into_iter().flatten())
        .collect();
    let bash = calls
        .iter()
        .find(|c| c["function"]["name"] == "Bash")
        .unwrap_or_else(|| panic!("no Bash call: {calls:#?}"));
    let args: Value =
        serde_json::from_str(bash["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args["command"], CHILD_COMMAND);
    let tool = messages("tool");
    let result = tool
        .iter()
        .find(|m| m["toolCallId"] == bash["id"])
        .unwrap_or_else(|| panic!("no result for the Bash call: {tool:#?}"));
    assert_eq!(result["subagentRunId"], json!(scope), "{result:#}");
    assert!(
        result["content"].to_string().contains(CHILD_OUTPUT),
        "the command ran for real: {result:#}"
    );
    let task = calls
        .iter()
        .find(|c| c["function"]["name"] == "Task")
        .unwrap_or_else(|| panic!("no Task call: {calls:#?}"));
    assert_eq!(task["id"], json!(scope));
}
