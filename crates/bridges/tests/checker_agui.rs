//! The AG-UI checker (`tests/bridges/agui/agui-client.mjs`: the official
//! `@ag-ui/client` with its schema enforcement and event verifier) shown to
//! fail: a tiny server here answers every run with a canned SSE stream, and
//! a stream with one protocol error makes the script report problems and
//! exit non-zero, while the same stream without the error passes. A
//! TEXT_MESSAGE_CONTENT before its TEXT_MESSAGE_START is rejected by the
//! client's own verifier; a stream that just ends after RUN_STARTED (no
//! RUN_FINISHED or RUN_ERROR) is accepted by the client and caught by the
//! script's own terminal-event check. A run that finishes while a subagent
//! is still open is rejected by the verifier (why the bridge suspends or
//! ends open subagents before every terminal).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/agui_node.rs"]
mod agui_node;

use std::time::Duration;

use axum::extract::{Json, State};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::{Value, json};

/// Events (without their ids) of a canned run, in order.
type Fixture = &'static [(&'static str, &'static str)];

/// A well-formed run: started, one text message, finished.
const WELL_FORMED: Fixture = &[
    ("RUN_STARTED", ""),
    ("TEXT_MESSAGE_START", "m1"),
    ("TEXT_MESSAGE_CONTENT", "m1"),
    ("TEXT_MESSAGE_END", "m1"),
    ("RUN_FINISHED", ""),
];

/// The message's content comes before its start.
const CONTENT_BEFORE_START: Fixture = &[
    ("RUN_STARTED", ""),
    ("TEXT_MESSAGE_CONTENT", "m1"),
    ("TEXT_MESSAGE_START", "m1"),
    ("TEXT_MESSAGE_END", "m1"),
    ("RUN_FINISHED", ""),
];

/// The stream ends without RUN_FINISHED (or RUN_ERROR).
const NO_RUN_FINISHED: Fixture = &[
    ("RUN_STARTED", ""),
    ("TEXT_MESSAGE_START", "m1"),
    ("TEXT_MESSAGE_CONTENT", "m1"),
    ("TEXT_MESSAGE_END", "m1"),
];

/// A subagent starts and finishes inside the run.
const SUBAGENT_CLOSED: Fixture = &[
    ("RUN_STARTED", ""),
    ("SUBAGENT_STARTED", "s1"),
    ("SUBAGENT_FINISHED", "s1"),
    ("RUN_FINISHED", ""),
];

/// The run finishes over an open subagent.
const SUBAGENT_LEFT_OPEN: Fixture = &[
    ("RUN_STARTED", ""),
    ("SUBAGENT_STARTED", "s1"),
    ("RUN_FINISHED", ""),
];

/// The SSE body of `fixture` for the run the request names.
async fn run(State(fixture): State<Fixture>, Json(input): Json<Value>) -> impl IntoResponse {
    let (thread_id, run_id) = (&input["threadId"], &input["runId"]);
    let body: String = fixture
        .iter()
        .map(|(ty, message)| {
            let event = match *ty {
                "RUN_STARTED" | "RUN_FINISHED" => {
                    json!({"type": ty, "threadId": thread_id, "runId": run_id})
                }
                "TEXT_MESSAGE_START" => {
                    json!({"type": ty, "messageId": message, "role": "assistant"})
                }
                "TEXT_MESSAGE_CONTENT" => json!({"type": ty, "messageId": message, "delta": "hi"}),
                "SUBAGENT_STARTED" => {
                    json!({"type": ty, "subagentRunId": message, "name": "reviewer"})
                }
                "SUBAGENT_FINISHED" => json!({"type": ty, "subagentRunId": message}),
                _ => json!({"type": ty, "messageId": message}),
            };
            format!("data: {event}\n\n")
        })
        .collect();
    ([(header::CONTENT_TYPE, "text/event-stream")], body)
}

/// Serve `fixture` on 127.0.0.1, run the checker's `run` scenario on it,
/// return its exit code and report.
async fn check(fixture: Fixture) -> (Option<i32>, Value) {
    agui_node::require_node_package("@ag-ui/client");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/", post(run))
        .with_state(fixture);
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let script = agui_node::bridges_dir().join("agui/agui-client.mjs");
    let out = agui_node::run_node(
        &script,
        &[url, "run".to_owned(), "{}".to_owned()],
        Duration::from_secs(60),
    )
    .await;
    server.abort();
    let report = out.json();
    (out.code, report)
}

/// The checker's verdict on `fixture` is a failure that names `what`.
async fn rejects(fixture: Fixture, what: &str) {
    let (code, report) = check(fixture).await;
    assert_eq!(report["ok"], false, "{report:#}");
    assert_eq!(code, Some(1), "{report:#}");
    let problems = report["problems"].to_string();
    assert!(
        problems.contains(what),
        "the problems name {what}: {report:#}"
    );
}

#[tokio::test]
async fn the_agui_checker_passes_a_well_formed_stream() {
    let (code, report) = check(WELL_FORMED).await;
    assert_eq!(report["ok"], true, "{report:#}");
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn the_agui_checker_fails_a_text_message_content_before_its_start() {
    rejects(
        CONTENT_BEFORE_START,
        "client rejected the stream: Cannot send 'TEXT_MESSAGE_CONTENT'",
    )
    .await;
}

#[tokio::test]
async fn the_agui_checker_fails_a_stream_without_run_finished() {
    rejects(NO_RUN_FINISHED, "no terminal event").await;
}

#[tokio::test]
async fn the_agui_checker_passes_a_closed_subagent_and_fails_one_left_open() {
    let (code, report) = check(SUBAGENT_CLOSED).await;
    assert_eq!(report["ok"], true, "{report:#}");
    assert_eq!(code, Some(0));
    rejects(
        SUBAGENT_LEFT_OPEN,
        "Cannot send 'RUN_FINISHED' while subagents are still active: s1",
    )
    .await;
}
