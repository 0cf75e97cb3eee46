//! Our A2A server driven by the official clients nobody here wrote:
//! `@a2a-js/sdk` 1.3.0 (Node) and PyPI `a2a-sdk` 1.3.0 (Python), through
//! the card, send, stream, get, cancel, subscribe and an input-required
//! round trip. The clients' scripts (tests/bridges/a2a/client.{mjs,py})
//! print the same JSON report, checked here by the same assertions.
//!
//! Auth is on, as in `agent-adaptor serve`: the server sits behind a
//! bearer-token [`Guard`](agent_adaptor_bridges::guard::Guard) (the card
//! public) and its card declares the `bearer` scheme. The JS client sends
//! the token through the SDK's `createAuthenticatingFetchWithRetry` hook,
//! the Python client through the SDK's `AuthInterceptor` (which reads the
//! card's scheme); each report lists every HTTP status the client saw.
//! Without the token each client is refused with 401 and nothing runs.
//!
//! Needs `scripts/install-bridge-clients`; without it these tests fail
//! with that hint.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/a2a_agents.rs"]
mod a2a_agents;
#[path = "support/a2a_peers.rs"]
mod a2a_peers;
#[path = "support/auth.rs"]
mod auth;

use std::sync::Arc;

use a2a_agents::{Scenarios, builder, serve_guarded};
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug)]
enum Peer {
    Js,
    Python,
}

/// Serve the scenarios behind the token guard (the card declaring the
/// bearer scheme), run `peer` on `scenario` with the token, return its
/// report and the scenarios (for call counts). Every response the client
/// got was a 200: auth never got in the way.
async fn drive(peer: Peer, scenario: &str) -> (Value, Arc<Scenarios>) {
    let (report, scenarios) = drive_with(peer, scenario, true).await;
    let statuses = report["statuses"]
        .as_array()
        .expect("the report lists statuses");
    assert!(!statuses.is_empty(), "{report}");
    assert!(statuses.iter().all(|s| s == 200), "{report}");
    (report, scenarios)
}

/// [`drive`], with or without giving the client the token.
async fn drive_with(peer: Peer, scenario: &str, with_token: bool) -> (Value, Arc<Scenarios>) {
    let scenarios = Scenarios::new();
    let token = auth::token();
    let server = serve_guarded(
        builder(&scenarios).card_with(auth::declare_bearer),
        auth::guard(&token),
    )
    .await;
    let given = with_token.then(|| token.expose());
    let report = match peer {
        Peer::Js => a2a_peers::js_client(scenario, server.url(), given).await,
        Peer::Python => a2a_peers::py_client(scenario, server.url(), given).await,
    };
    server.shutdown().await;
    (report, scenarios)
}

fn kinds(events: &Value) -> Vec<String> {
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let state = e["state"].as_str().unwrap_or("");
            format!(
                "{}{}{}",
                e["kind"].as_str().unwrap(),
                if state.is_empty() { "" } else { ":" },
                state
            )
        })
        .collect()
}

async fn card(peer: Peer) {
    let (r, _) = drive(peer, "card").await;
    assert_eq!(r["name"], "scenarios", "{r}");
    assert_eq!(r["streaming"], true);
    assert_eq!(r["binding"], "JSONRPC");
    assert_eq!(r["protocolVersion"], "1.0");
    assert!(r["url"].as_str().unwrap().ends_with("/a2a"), "{r}");
    assert_eq!(r["skills"], serde_json::json!(["run"]));
    assert_eq!(r["clientVersion"], "1.0", "the client negotiated A2A 1.0");
    assert_eq!(
        r["security"],
        json!({"schemes": {"bearer": "Bearer"}, "requirements": [["bearer"]]}),
        "the client read the declared bearer scheme"
    );
}

/// Without the token: the public card is read (200), then a send and a
/// streaming send are each refused with 401, and no agent ran.
async fn refused(peer: Peer) {
    let (r, scenarios) = drive_with(peer, "refused", false).await;
    for call in ["send", "stream"] {
        let said = format!("{} {}", r[call]["code"], r[call]["message"]).to_lowercase();
        assert!(said.contains("unauthorized"), "{call} was refused: {r}");
    }
    let statuses: Vec<u64> = r["statuses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    assert!(statuses.len() >= 3, "{r}");
    let (cards, calls) = statuses.split_at(statuses.len() - 2);
    assert_eq!(calls, [401, 401], "{r}");
    assert!(!cards.is_empty() && cards.iter().all(|s| *s == 200), "{r}");
    assert_eq!(scenarios.calls(), 0, "nothing ran");
}

async fn send(peer: Peer) {
    let (r, scenarios) = drive(peer, "send").await;
    let t = &r["task"];
    assert_eq!(t["state"], "TASK_STATE_COMPLETED", "{r}");
    assert_eq!(t["artifactIds"], serde_json::json!(["response"]));
    assert_eq!(t["artifactText"], "Hello from agent-adaptor");
    assert_eq!(t["historyLength"], 1);
    assert!(t["metadata"]["agentAdaptor"]["runId"].is_string(), "{r}");
    assert_eq!(scenarios.calls_of("hello"), 1);
}

async fn stream(peer: Peer) {
    let (r, _) = drive(peer, "stream").await;
    let events = &r["events"];
    assert_eq!(
        kinds(events),
        [
            "task:TASK_STATE_SUBMITTED",
            "statusUpdate:TASK_STATE_WORKING",
            "artifactUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate:TASK_STATE_COMPLETED",
        ],
        "{r}"
    );
    let chunks: Vec<(&str, bool, bool)> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "artifactUpdate")
        .map(|e| {
            (
                e["text"].as_str().unwrap(),
                e["append"].as_bool().unwrap(),
                e["lastChunk"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        chunks,
        [
            ("Hello", false, false),
            (" from", true, false),
            (" agent-adaptor", true, false),
            ("Hello from agent-adaptor", false, true),
        ]
    );
}

async fn get(peer: Peer) {
    let (r, _) = drive(peer, "get").await;
    assert_eq!(r["sent"]["state"], "TASK_STATE_COMPLETED", "{r}");
    assert_eq!(r["got"]["id"], r["sent"]["id"]);
    assert_eq!(r["got"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(r["got"]["artifactText"], "Hello from agent-adaptor");
    assert_eq!(r["got"]["historyLength"], 1, "historyLength was honoured");
    assert_eq!(r["missing"]["error"], "TaskNotFoundError", "{r}");
    assert_eq!(r["missing"]["code"], -32001);
}

async fn cancel(peer: Peer) {
    let (r, scenarios) = drive(peer, "cancel").await;
    let started = r["started"]["state"].as_str().unwrap();
    assert!(
        ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"].contains(&started),
        "{r}"
    );
    assert_eq!(r["canceled"]["state"], "TASK_STATE_CANCELED", "{r}");
    assert_eq!(
        r["canceled"]["metadata"]["agentAdaptor"]["reason"],
        "cancelled"
    );
    assert_eq!(r["got"]["state"], "TASK_STATE_CANCELED");
    assert_eq!(r["again"]["error"], "TaskNotCancelableError", "{r}");
    assert_eq!(r["again"]["code"], -32002);
    assert_eq!(scenarios.calls_of("hang"), 1);
}

async fn subscribe(peer: Peer) {
    let (r, scenarios) = drive(peer, "subscribe").await;
    let k = kinds(&r["events"]);
    assert!(k[0].starts_with("task:"), "{r}");
    let waiting = k
        .iter()
        .position(|e| e.ends_with("TASK_STATE_INPUT_REQUIRED"))
        .expect("the subscription showed input-required");
    assert!(
        k[waiting + 1..].contains(&"statusUpdate:TASK_STATE_WORKING".to_owned()),
        "the subscription spans the interrupt: {r}"
    );
    assert_eq!(
        k.last().unwrap(),
        "statusUpdate:TASK_STATE_COMPLETED",
        "{r}"
    );
    let last_chunk = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "artifactUpdate" && e["lastChunk"] == true)
        .expect("the final artifact");
    assert_eq!(last_chunk["text"], "listed 3 files");
    assert_eq!(r["answer"]["state"], "TASK_STATE_COMPLETED", "{r}");
    assert_eq!(
        r["answer"]["metadata"]["agentAdaptor"]["metadata"]["decision.0"],
        "approved"
    );
    assert_eq!(r["after"]["error"], "UnsupportedOperationError", "{r}");
    assert_eq!(r["after"]["code"], -32004);
    assert_eq!(scenarios.calls_of("approve"), 1);
}

/// One stream item as `kind[:state][ text]` or `artifactUpdate:id[+][!]`
/// (`+` appends, `!` is the last chunk).
fn steps(events: &Value) -> Vec<String> {
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| match e["kind"].as_str().unwrap() {
            "artifactUpdate" => format!(
                "artifactUpdate:{}{}{}",
                e["artifactId"].as_str().unwrap(),
                if e["append"] == true { "+" } else { "" },
                if e["lastChunk"] == true { "!" } else { "" }
            ),
            "statusUpdate" => {
                let text = e["text"].as_str().unwrap_or("");
                let state = e["state"].as_str().unwrap();
                if text.is_empty() {
                    format!("statusUpdate:{state}")
                } else {
                    format!("statusUpdate:{state} {text}")
                }
            }
            kind => format!("{kind}:{}", e["state"].as_str().unwrap_or("")),
        })
        .collect()
}

/// Numbers compared as numbers (Python's protobuf Struct makes every
/// number a float).
fn same(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
        }
        _ => got == want,
    }
}

async fn observe(peer: Peer) {
    use a2a_agents::observations::{ANSWER, IMAGE_DATA, SCOPE};
    let (r, scenarios) = drive(peer, "observe").await;
    assert_eq!(scenarios.calls_of("observe"), 1);
    let w = "TASK_STATE_WORKING";
    assert_eq!(
        steps(&r["events"]),
        [
            "task:TASK_STATE_SUBMITTED".to_owned(),
            format!("statusUpdate:{w}"),
            "artifactUpdate:todo".into(),
            format!("statusUpdate:{w} Todo list: 0 of 2 done."),
            "artifactUpdate:capabilities".into(),
            "artifactUpdate:subagent:task-1".into(),
            format!("statusUpdate:{w} Subagent reviewer started."),
            "artifactUpdate:subagent:task-1+".into(),
            "artifactUpdate:subagent:task-1+".into(),
            "artifactUpdate:subagent:task-1+".into(),
            "artifactUpdate:subagent:task-1+!".into(),
            format!("statusUpdate:{w} Subagent reviewer completed."),
            "artifactUpdate:capabilities+".into(),
            "artifactUpdate:capabilities+".into(),
            "artifactUpdate:capabilities+".into(),
            "artifactUpdate:todo".into(),
            format!("statusUpdate:{w} Todo list: 1 of 2 done."),
            "artifactUpdate:images".into(),
            "artifactUpdate:response".into(),
            "artifactUpdate:response!".into(),
            "statusUpdate:TASK_STATE_COMPLETED".into(),
        ],
        "{r}"
    );
    let f = &r["final"];
    assert_eq!(f["state"], "TASK_STATE_COMPLETED", "{r}");
    let artifacts = f["artifacts"].as_array().unwrap();
    let ids: Vec<&str> = artifacts
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "todo",
            "capabilities",
            "subagent:task-1",
            "images",
            "response"
        ]
    );
    let by_id = |id: &str| artifacts.iter().find(|a| a["id"] == id).unwrap();
    // The todo list holds its last revision only.
    let todo = by_id("todo");
    assert_eq!(todo["text"], "[x] review the change\n[~] report");
    let want_todo = json!([{"revision": 2, "items": [
        {"id": "1", "content": "review the change", "status": "completed"},
        {"id": "2", "content": "report", "status": "in_progress"}]}]);
    assert!(same(&todo["data"], &want_todo), "{todo}");
    // The subagent's artifact: its start, the child's tool call and result,
    // its progress, its outcome.
    let sub = by_id(&format!("subagent:{SCOPE}"));
    assert_eq!(sub["text"], "Subagent reviewer started.\nread a.txt");
    let want_sub = json!([
        {"agent": "reviewer", "scopeId": SCOPE, "status": "working", "toolCallId": SCOPE},
        {"toolCall": {"id": "child-1", "name": "read_file", "args": {"path": "a.txt"}}},
        {"toolResult": {"id": "child-1", "result": "contents of a.txt"}},
        {"status": "completed", "result": "nothing to fix"}
    ]);
    assert!(same(&sub["data"], &want_sub), "{sub}");
    // Every capability phase, appended.
    let phases: Vec<(&str, &str)> = by_id("capabilities")["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["id"].as_str().unwrap(), d["phase"].as_str().unwrap()))
        .collect();
    assert_eq!(
        phases,
        [
            (SCOPE, "started"),
            (SCOPE, "completed"),
            ("mcp-1", "started"),
            ("mcp-1", "failed")
        ]
    );
    // The image is a file part.
    assert_eq!(
        by_id("images")["files"],
        json!([{"kind": "raw", "value": IMAGE_DATA, "mediaType": "image/png", "filename": "image-1.png"}])
    );
    assert_eq!(by_id("response")["text"], ANSWER);
}

async fn input_required(peer: Peer) {
    let (r, scenarios) = drive(peer, "input_required").await;
    let first = kinds(&r["first"]);
    assert_eq!(first[0], "task:TASK_STATE_SUBMITTED", "{r}");
    assert_eq!(
        first.last().unwrap(),
        "statusUpdate:TASK_STATE_INPUT_REQUIRED"
    );
    let q = &r["question"];
    assert!(
        q["text"].as_str().unwrap().contains("Allow Bash(ls)?"),
        "{r}"
    );
    let data = &q["data"][0];
    assert_eq!(data["kind"], "permission", "{r}");
    assert_eq!(data["toolCallId"], "call-1");
    assert_eq!(data["details"]["toolName"], "Bash");
    let second = kinds(&r["second"]);
    assert_eq!(second.first().unwrap(), "task:TASK_STATE_WORKING", "{r}");
    assert_eq!(
        second.last().unwrap(),
        "statusUpdate:TASK_STATE_COMPLETED",
        "{r}"
    );
    let f = &r["final"];
    assert_eq!(f["state"], "TASK_STATE_COMPLETED");
    assert_eq!(f["artifactText"], "listed 3 files");
    assert_eq!(
        f["metadata"]["agentAdaptor"]["metadata"]["decision.0"], "approved",
        "the client's answer reached the waiting run"
    );
    assert_eq!(
        scenarios.calls_of("approve"),
        1,
        "one run, parked and resumed"
    );
}

#[tokio::test]
async fn js_client_reads_the_card() {
    card(Peer::Js).await;
}

#[tokio::test]
async fn js_client_sends() {
    send(Peer::Js).await;
}

#[tokio::test]
async fn js_client_streams() {
    stream(Peer::Js).await;
}

#[tokio::test]
async fn js_client_gets_tasks() {
    get(Peer::Js).await;
}

#[tokio::test]
async fn js_client_cancels() {
    cancel(Peer::Js).await;
}

#[tokio::test]
async fn js_client_subscribes() {
    subscribe(Peer::Js).await;
}

#[tokio::test]
async fn js_client_answers_input_required() {
    input_required(Peer::Js).await;
}

#[tokio::test]
async fn js_client_without_the_token_is_refused() {
    refused(Peer::Js).await;
}

#[tokio::test]
async fn py_client_reads_the_card() {
    card(Peer::Python).await;
}

#[tokio::test]
async fn py_client_sends() {
    send(Peer::Python).await;
}

#[tokio::test]
async fn py_client_streams() {
    stream(Peer::Python).await;
}

#[tokio::test]
async fn py_client_gets_tasks() {
    get(Peer::Python).await;
}

#[tokio::test]
async fn py_client_cancels() {
    cancel(Peer::Python).await;
}

#[tokio::test]
async fn py_client_subscribes() {
    subscribe(Peer::Python).await;
}

#[tokio::test]
async fn py_client_answers_input_required() {
    input_required(Peer::Python).await;
}

#[tokio::test]
async fn js_client_reads_observations_as_artifacts() {
    observe(Peer::Js).await;
}

#[tokio::test]
async fn py_client_reads_observations_as_artifacts() {
    observe(Peer::Python).await;
}

#[tokio::test]
async fn py_client_without_the_token_is_refused() {
    refused(Peer::Python).await;
}
