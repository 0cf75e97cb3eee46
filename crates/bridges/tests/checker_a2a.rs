//! The A2A checkers (the official clients' scripts,
//! `tests/bridges/a2a/client.{mjs,py}`) shown to fail: a tiny proxy here
//! sits between the client and our real A2A server and breaks one thing
//! in the JSON-RPC answer to `SendMessage`; the client must then fail
//! (exit non-zero, naming the violation), while through the same proxy
//! breaking nothing it passes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/a2a_agents.rs"]
mod a2a_agents;
#[path = "support/a2a_peers.rs"]
mod a2a_peers;

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::IntoResponse;
use serde_json::{Value, json};

/// What the proxy breaks in the answer to `SendMessage`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Break {
    /// Nothing: the real exchange.
    Nothing,
    /// The response's JSON-RPC id is not the request's.
    WrongId,
    /// The task's status has a state the spec does not define.
    InvalidState,
    /// The response has neither `result` nor `error`.
    NoResult,
}

#[derive(Clone)]
struct Proxy {
    upstream: String,
    own: String,
    fault: Break,
    http: reqwest::Client,
}

/// Forward one request upstream; the card names the proxy instead of the
/// upstream, and the JSON-RPC answer to `SendMessage` is broken per `fault`.
async fn forward(
    State(proxy): State<Proxy>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let mut request = proxy
        .http
        .request(method, format!("{}{uri}", proxy.upstream))
        .body(body.clone());
    for name in [header::CONTENT_TYPE, header::ACCEPT] {
        if let Some(value) = headers.get(&name) {
            request = request.header(name, value);
        }
    }
    for (name, value) in &headers {
        if name.as_str().starts_with("a2a-") {
            request = request.header(name, value);
        }
    }
    let response = request.send().await.unwrap();
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_owned();
    let text = response
        .text()
        .await
        .unwrap()
        .replace(&proxy.upstream, &proxy.own);
    let is_send =
        serde_json::from_slice::<Value>(&body).is_ok_and(|b| b["method"] == "SendMessage");
    let text = if is_send && proxy.fault != Break::Nothing {
        let mut answer: Value = serde_json::from_str(&text).unwrap();
        match proxy.fault {
            Break::Nothing => {}
            Break::WrongId => answer["id"] = json!("not-the-request-id"),
            Break::InvalidState => {
                answer["result"]["task"]["status"]["state"] = json!("TASK_STATE_BOGUS")
            }
            Break::NoResult => {
                answer.as_object_mut().unwrap().remove("result");
            }
        }
        answer.to_string()
    } else {
        text
    };
    (status, [(header::CONTENT_TYPE, content_type)], text)
}

#[derive(Clone, Copy, Debug)]
enum Peer {
    Js,
    Python,
}

/// Our server behind a proxy breaking `fault`; run `peer`'s `send`
/// scenario through it. Returns the client's exit code, stdout and stderr.
async fn send_through(peer: Peer, fault: Break) -> a2a_peers::Output {
    let scenarios = a2a_agents::Scenarios::new();
    let server = a2a_agents::serve(a2a_agents::builder(&scenarios)).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let own = format!("http://{}", listener.local_addr().unwrap());
    let proxy = Proxy {
        upstream: server.url().trim_end_matches('/').to_owned(),
        own: own.clone(),
        fault,
        http: reqwest::Client::new(),
    };
    let app = axum::Router::new().fallback(forward).with_state(proxy);
    let serving = tokio::spawn(async move { axum::serve(listener, app).await });
    let (program, script) = match peer {
        Peer::Js => (a2a_peers::node(), a2a_peers::script("client.mjs")),
        Peer::Python => (a2a_peers::python(), a2a_peers::script("client.py")),
    };
    let out = a2a_peers::run(
        &program,
        &[script.to_str().unwrap(), "send", &own],
        None,
        Duration::from_secs(90),
    )
    .await;
    serving.abort();
    server.shutdown().await.unwrap();
    out
}

/// Through the proxy breaking nothing, `peer` completes the task.
async fn passes(peer: Peer) {
    let report = send_through(peer, Break::Nothing).await.json();
    assert_eq!(report["task"]["state"], "TASK_STATE_COMPLETED", "{report}");
}

/// Through the proxy breaking `fault`, `peer` fails, saying `what`.
async fn rejects(peer: Peer, fault: Break, what: &str) {
    let out = send_through(peer, fault).await;
    assert_ne!(out.code, Some(0), "{peer:?} accepted {fault:?}: {out:?}");
    assert!(
        out.stderr.contains(what),
        "{peer:?} failed on {fault:?} without saying {what:?}: {out:?}"
    );
}

#[tokio::test]
async fn the_js_client_passes_the_real_exchange() {
    passes(Peer::Js).await;
}

#[tokio::test]
async fn the_py_client_passes_the_real_exchange() {
    passes(Peer::Python).await;
}

#[tokio::test]
async fn the_js_client_fails_a_wrong_json_rpc_id() {
    rejects(Peer::Js, Break::WrongId, "JSON-RPC response ID mismatch").await;
}

#[tokio::test]
async fn the_py_client_fails_a_wrong_json_rpc_id() {
    rejects(
        Peer::Python,
        Break::WrongId,
        "JSON-RPC response id mismatch",
    )
    .await;
}

#[tokio::test]
async fn the_js_client_fails_an_invalid_task_state() {
    rejects(Peer::Js, Break::InvalidState, "invalid task state").await;
}

#[tokio::test]
async fn the_py_client_fails_an_invalid_task_state() {
    rejects(Peer::Python, Break::InvalidState, "invalid task state").await;
}

#[tokio::test]
async fn the_js_client_fails_an_answer_without_result() {
    rejects(
        Peer::Js,
        Break::NoResult,
        "Cannot read properties of undefined",
    )
    .await;
}

#[tokio::test]
async fn the_py_client_fails_an_answer_without_result() {
    rejects(
        Peer::Python,
        Break::NoResult,
        "neither 'result' nor 'error'",
    )
    .await;
}
