//! Bad input, versions, auth and limits of the A2A server: each refusal has
//! its status, JSON-RPC code and message, and starts nothing (no driver
//! call, no task).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/a2a_agents.rs"]
mod a2a_agents;

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::time::Duration;

use a2a_agents::{Scenarios, builder, serve};
use agent_adaptor_bridges::a2a::{
    Client, ErrorCode, Message, SendMessageRequest, SendMessageResponse, ServeError, TaskState,
    bearer_token,
};
use serde_json::{Value, json};

/// POST `body` to the RPC endpoint with `headers` (the defaults are a JSON
/// content type and `A2A-Version: 1.0`; a header given with an empty value
/// is left out).
async fn post(
    url: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, Value, reqwest::header::HeaderMap) {
    let mut all = vec![("content-type", "application/json"), ("a2a-version", "1.0")];
    for (k, v) in headers {
        all.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
        all.push((k, v));
    }
    let mut req = reqwest::Client::new()
        .post(format!("{url}/a2a"))
        .body(body.to_owned());
    for (k, v) in all.iter().filter(|(_, v)| !v.is_empty()) {
        req = req.header(*k, *v);
    }
    let res = tokio::time::timeout(Duration::from_secs(30), req.send())
        .await
        .unwrap()
        .unwrap();
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let body = res.json::<Value>().await.unwrap_or(Value::Null);
    (status, body, headers)
}

fn rpc(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string()
}

fn send(message: Value) -> String {
    rpc("SendMessage", json!({"message": message}))
}

fn user(parts: Value) -> Value {
    json!({"messageId": "m-1", "role": "ROLE_USER", "parts": parts})
}

/// name, body, headers, HTTP status, JSON-RPC code, a phrase of the message.
type Case = (
    &'static str,
    String,
    Vec<(&'static str, &'static str)>,
    u16,
    i64,
    &'static str,
);

#[tokio::test]
async fn bad_input_is_refused_before_anything_starts() {
    let scenarios = Scenarios::new();
    let server = serve(builder(&scenarios).max_body_bytes(4096)).await;
    let hello = send(user(json!([{"text": "hello"}])));
    let oversized = send(user(json!([{"text": "x".repeat(5000)}])));
    let cases: Vec<Case> = vec![
        (
            "malformed JSON",
            "{\"jsonrpc\": \"2.0\", \"id\": 1,".into(),
            vec![],
            400,
            -32700,
            "not JSON",
        ),
        (
            "wrong content type",
            hello.clone(),
            vec![("content-type", "text/plain")],
            415,
            -32600,
            "Content-Type",
        ),
        (
            "no content type",
            hello.clone(),
            vec![("content-type", "")],
            415,
            -32600,
            "Content-Type",
        ),
        (
            "oversized body",
            oversized,
            vec![],
            413,
            -32600,
            "exceeds 4096 bytes",
        ),
        (
            "a batch",
            format!("[{hello}]"),
            vec![],
            400,
            -32600,
            "batch",
        ),
        (
            "jsonrpc 1.0",
            hello.replace("\"2.0\"", "\"1.0\""),
            vec![],
            400,
            -32600,
            "jsonrpc",
        ),
        (
            "no method",
            json!({"jsonrpc": "2.0", "id": 1}).to_string(),
            vec![],
            400,
            -32600,
            "method",
        ),
        (
            "params not an object",
            json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": [1]}).to_string(),
            vec![],
            400,
            -32602,
            "params",
        ),
        (
            "unknown method",
            rpc("SendMail", json!({})),
            vec![],
            200,
            -32601,
            "SendMail",
        ),
        (
            "an A2A 0.3 method",
            rpc("message/send", json!({})),
            vec![],
            200,
            -32009,
            "0.3",
        ),
        (
            "no A2A-Version",
            hello.clone(),
            vec![("a2a-version", "")],
            200,
            -32009,
            "A2A-Version",
        ),
        (
            "A2A-Version 2.0",
            hello.clone(),
            vec![("a2a-version", "2.0")],
            200,
            -32009,
            "\"2.0\"",
        ),
        (
            "missing message",
            rpc("SendMessage", json!({})),
            vec![],
            200,
            -32602,
            "params.message is required",
        ),
        (
            "missing message (stream)",
            rpc("SendStreamingMessage", json!({})),
            vec![],
            200,
            -32602,
            "params.message is required",
        ),
        (
            "message not an object",
            rpc("SendMessage", json!({"message": "hi"})),
            vec![],
            200,
            -32602,
            "params",
        ),
        (
            "no parts",
            send(user(json!([]))),
            vec![],
            200,
            -32602,
            "at least one part",
        ),
        (
            "a part without content",
            send(user(json!([{"mediaType": "text/plain"}]))),
            vec![],
            200,
            -32602,
            "params",
        ),
        (
            "blank text",
            send(user(json!([{"text": "   "}]))),
            vec![],
            200,
            -32602,
            "non-empty prompt",
        ),
        (
            "no messageId",
            send(json!({"role": "ROLE_USER", "parts": [{"text": "hi"}]})),
            vec![],
            200,
            -32602,
            "messageId",
        ),
        (
            "an agent's message",
            send(json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]})),
            vec![],
            200,
            -32602,
            "ROLE_USER",
        ),
        (
            "a raw part",
            send(user(json!([{"raw": "AAAA", "mediaType": "image/png"}]))),
            vec![],
            200,
            -32005,
            "raw and url",
        ),
        (
            "a push config",
            rpc(
                "SendMessage",
                json!({"message": user(json!([{"text": "hi"}])), "configuration": {"taskPushNotificationConfig": {"url": "http://127.0.0.1:9/x"}}}),
            ),
            vec![],
            200,
            -32003,
            "push",
        ),
        (
            "negative historyLength",
            rpc(
                "SendMessage",
                json!({"message": user(json!([{"text": "hi"}])), "configuration": {"historyLength": -1}}),
            ),
            vec![],
            200,
            -32602,
            "historyLength",
        ),
        (
            "GetTask without id",
            rpc("GetTask", json!({})),
            vec![],
            200,
            -32602,
            "params.id",
        ),
        (
            "CancelTask of nothing",
            rpc("CancelTask", json!({"id": "nope"})),
            vec![],
            200,
            -32001,
            "nope",
        ),
        (
            "SubscribeToTask of nothing",
            rpc("SubscribeToTask", json!({"id": "nope"})),
            vec![],
            200,
            -32001,
            "nope",
        ),
        (
            "ListTasks",
            rpc("ListTasks", json!({})),
            vec![],
            200,
            -32004,
            "ListTasks",
        ),
        (
            "GetExtendedAgentCard",
            rpc("GetExtendedAgentCard", json!({})),
            vec![],
            200,
            -32004,
            "GetExtendedAgentCard",
        ),
        (
            "a push method",
            rpc(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": "t", "url": "http://127.0.0.1:9"}),
            ),
            vec![],
            200,
            -32003,
            "push",
        ),
    ];
    for (name, body, headers, status, code, needle) in cases {
        let (got_status, got, got_headers) = post(server.url(), &body, &headers).await;
        assert_eq!(got_status, status, "{name}: {got}");
        assert_eq!(got["jsonrpc"], "2.0", "{name}: {got}");
        assert_eq!(got["error"]["code"], code, "{name}: {got}");
        let message = got["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(needle),
            "{name}: {message:?} lacks {needle:?}"
        );
        assert_eq!(
            got["error"]["data"][0]["domain"], "a2a-protocol.org",
            "{name}: {got}"
        );
        assert!(
            got_headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json"),
            "{name}"
        );
        if status == 200 {
            assert_eq!(got["id"], 7, "{name}: the id is echoed");
        }
    }
    assert_eq!(scenarios.calls(), 0, "no driver was called");
    let server_tasks = post(server.url(), &rpc("GetTask", json!({"id": "m-1"})), &[]).await;
    assert_eq!(server_tasks.1["error"]["code"], -32001);

    // The same server still works, and the version may come as a query
    // parameter instead of the header.
    let res = reqwest::Client::new()
        .post(format!("{}/a2a?A2A-Version=1.0", server.url()))
        .header("content-type", "application/a2a+json; charset=utf-8")
        .body(send(user(json!([{"text": "hello"}]))))
        .send()
        .await
        .unwrap();
    let ok: Value = res.json().await.unwrap();
    assert_eq!(
        ok["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{ok}"
    );
    assert_eq!(scenarios.calls(), 1);
}

#[tokio::test]
async fn an_oversized_body_is_refused_even_without_a_content_length() {
    let scenarios = Scenarios::new();
    let server = serve(builder(&scenarios).max_body_bytes(1024)).await;
    let body = send(user(json!([{"text": "y".repeat(4096)}])));
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = body
        .into_bytes()
        .chunks(512)
        .map(|c| Ok(c.to_vec()))
        .collect();
    let res = reqwest::Client::new()
        .post(format!("{}/a2a", server.url()))
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 413);
    let got: Value = res.json().await.unwrap();
    assert_eq!(got["error"]["code"], -32600);
    assert_eq!(got["error"]["data"][0]["metadata"]["limitBytes"], "1024");
    assert_eq!(scenarios.calls(), 0);
}

#[tokio::test]
async fn the_auth_hook_guards_the_rpc_endpoint_but_not_the_card() {
    let scenarios = Scenarios::new();
    let server = serve(builder(&scenarios).auth(bearer_token("s3cret"))).await;
    let card = reqwest::get(format!("{}/.well-known/agent-card.json", server.url()))
        .await
        .unwrap();
    assert_eq!(card.status().as_u16(), 200);

    let hello = send(user(json!([{"text": "hello"}])));
    for auth in ["", "Bearer wrong", "Basic czNjcmV0"] {
        let (status, got, headers) = post(server.url(), &hello, &[("authorization", auth)]).await;
        assert_eq!(status, 401, "{auth:?}: {got}");
        assert_eq!(got["error"]["code"], -32000);
        assert_eq!(got["error"]["data"][0]["reason"], "UNAUTHENTICATED");
        assert_eq!(headers["www-authenticate"], "Bearer");
        assert!(!got.to_string().contains("s3cret"));
    }
    assert_eq!(scenarios.calls(), 0, "refused requests start nothing");

    let anonymous = Client::connect(server.url()).await.unwrap();
    let err = anonymous
        .send(SendMessageRequest::new(Message::user_text("hello")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::Unauthorized), "{err}");
    let client = Client::builder()
        .bearer_token("s3cret")
        .unwrap()
        .connect(server.url())
        .await
        .unwrap();
    let SendMessageResponse::Task(t) = client
        .send(SendMessageRequest::new(Message::user_text("hello")))
        .await
        .unwrap()
    else {
        panic!("no task")
    };
    assert_eq!(t.status.state, TaskState::Completed);
    assert_eq!(scenarios.calls(), 1);
}

#[tokio::test]
async fn serving_beyond_loopback_needs_an_auth_hook() {
    let scenarios = Scenarios::new();
    let addr: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let err = builder(&scenarios).build().serve(addr).await.unwrap_err();
    assert!(matches!(err, ServeError::Unauthenticated { .. }), "{err}");
    assert!(err.to_string().contains("auth hook"));
    let local = builder(&scenarios).build().serve_local().await.unwrap();
    assert!(local.local_addr().ip().is_loopback());
}

#[tokio::test]
async fn a_full_store_refuses_new_tasks_until_one_finishes() {
    let scenarios = Scenarios::new();
    let server = serve(builder(&scenarios).max_tasks(1)).await;
    let client = Client::connect(server.url()).await.unwrap();
    let SendMessageResponse::Task(busy) = client
        .send(SendMessageRequest::new(Message::user_text("hang")).return_immediately())
        .await
        .unwrap()
    else {
        panic!("no task")
    };
    let err = client
        .send(SendMessageRequest::new(Message::user_text("hello")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::Internal));
    assert!(err.to_string().contains("limit of 1 tasks"), "{err}");
    assert_eq!(scenarios.calls_of("hello"), 0);
    let canceled = client.cancel_task(&busy.id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let SendMessageResponse::Task(t) = client
        .send(SendMessageRequest::new(Message::user_text("hello")))
        .await
        .unwrap()
    else {
        panic!("no task")
    };
    assert_eq!(t.status.state, TaskState::Completed);
    let gone = client.get_task(&busy.id).await.unwrap_err();
    assert_eq!(
        gone.code(),
        Some(ErrorCode::TaskNotFound),
        "the finished task made room"
    );
}

#[tokio::test]
async fn finished_tasks_expire_after_their_ttl() {
    let scenarios = Scenarios::new();
    // Long enough that the first GetTask below always lands inside it, even
    // on a loaded machine; the expiry is then awaited, not slept for.
    let server = serve(builder(&scenarios).finished_task_ttl(Duration::from_secs(2))).await;
    let client = Client::connect(server.url()).await.unwrap();
    let SendMessageResponse::Task(t) = client
        .send(SendMessageRequest::new(Message::user_text("hello")))
        .await
        .unwrap()
    else {
        panic!("no task")
    };
    assert_eq!(client.get_task(&t.id).await.unwrap().id, t.id);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let err = loop {
        match client.get_task(&t.id).await {
            Err(err) => break err,
            Ok(task) => {
                assert_eq!(task.id, t.id);
                assert!(
                    std::time::Instant::now() < deadline,
                    "the finished task never expired"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert_eq!(err.code(), Some(ErrorCode::TaskNotFound));
}

#[tokio::test]
async fn a_closed_server_refuses_new_requests() {
    let scenarios = Scenarios::new();
    let server = builder(&scenarios).build();
    // A host mounting the router itself.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(axum::serve(listener, server.router()).into_future());
    let (status, _, _) = post(&url, &send(user(json!([{"text": "hello"}]))), &[]).await;
    assert_eq!(status, 200);
    server.close();
    let (status, got, _) = post(&url, &send(user(json!([{"text": "hello"}]))), &[]).await;
    assert_eq!(status, 503, "{got}");
    assert_eq!(got["error"]["code"], -32603);
    assert!(
        got["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shutting down")
    );
    assert_eq!(scenarios.calls(), 1, "only the request before close ran");
}
