//! The loopback MCP channel with a real HTTP client: the MCP handshake,
//! `tools/list` and `tools/call` with the token; 401 without it or with a
//! wrong one; 403 for a foreign `Host` or `Origin`; 413 for an oversized
//! body; concurrent calls; nothing listening once the run is over.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_adaptor_driver::{
    Emit, EventSink, HOST_TOOL_SERVER, HostToolCall, HostToolResult, HostToolSpec, HostToolStatus,
    HostToolbox, HostTools, McpTransport, RunEvent, StreamPayload, async_trait,
};
use agent_adaptor_driver_kit::host_mcp::loopback::{
    self, CallRx, LoopbackServer, MAX_BODY_BYTES, TOKEN_ENV,
};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A guard against a hang (a serialized call would wait forever), not a
/// timing assertion.
const HANG: Duration = Duration::from_secs(60);

/// Tools: `echo` answers its input; `gate` waits until `open` was called;
/// `wait` waits until its call is cancelled (and tells `cancelled`).
struct Toolbox {
    specs: Vec<HostToolSpec>,
    calls: Mutex<Vec<HostToolCall>>,
    gate: Notify,
    cancelled: Notify,
}

impl Toolbox {
    fn new() -> Arc<Toolbox> {
        let spec = |name: &str| HostToolSpec {
            name: name.into(),
            description: format!("The {name} tool."),
            input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            output_schema: None,
            trusted: false,
        };
        Arc::new(Toolbox {
            specs: vec![spec("echo"), spec("gate"), spec("open"), spec("wait")],
            calls: Mutex::new(Vec::new()),
            gate: Notify::new(),
            cancelled: Notify::new(),
        })
    }
}

#[async_trait]
impl HostToolbox for Toolbox {
    fn specs(&self) -> &[HostToolSpec] {
        &self.specs
    }

    async fn call(
        &self,
        call: HostToolCall,
        _sink: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> HostToolResult {
        self.calls.lock().unwrap().push(call.clone());
        match call.tool.as_str() {
            "echo" => HostToolResult::ok(json!({"echoed": call.input})),
            "gate" => {
                self.gate.notified().await;
                HostToolResult::ok(json!("passed"))
            }
            "open" => {
                self.gate.notify_one();
                HostToolResult::ok(json!("opened"))
            }
            "wait" => {
                cancel.cancelled().await;
                self.cancelled.notify_one();
                HostToolResult::error(HostToolStatus::Cancelled, "the call was cancelled")
            }
            _ => HostToolResult::error(HostToolStatus::UnknownTool, "no such tool"),
        }
    }
}

/// Records every event (none is expected: the toolbox emits nothing here).
#[derive(Default)]
struct Sink(Mutex<Vec<String>>);

impl EventSink for Sink {
    fn emit(&self, event: RunEvent) -> Emit<'_> {
        self.0.lock().unwrap().push(format!("{event:?}"));
        Emit::ready(Ok(()))
    }
    fn emit_stream(&self, payload: StreamPayload) -> Emit<'_> {
        self.0.lock().unwrap().push(format!("{payload:?}"));
        Emit::ready(Ok(()))
    }
}

/// An MCP client speaking Streamable HTTP by hand, so every header is the
/// test's.
struct Client {
    http: reqwest::Client,
    url: String,
    token: String,
    session: Option<String>,
}

impl Client {
    fn new(server: &LoopbackServer) -> Client {
        Client {
            http: reqwest::Client::new(),
            url: server.url().to_owned(),
            token: server.token().to_owned(),
            session: None,
        }
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {}", self.token))
            .body(body.to_string());
        if let Some(id) = &self.session {
            r = r.header("mcp-session-id", id);
        }
        r
    }

    /// The JSON-RPC message answering request `id` in a response (JSON or
    /// an SSE stream).
    async fn answer(response: reqwest::Response, id: u64) -> Value {
        assert_eq!(response.status(), StatusCode::OK);
        let text = response.text().await.unwrap();
        let messages: Vec<Value> = if text.trim_start().starts_with('{') {
            vec![serde_json::from_str(&text).unwrap()]
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect()
        };
        messages
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id} in {text:?}"))
    }

    async fn initialize(&mut self) {
        let response = self
            .post(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}}),
            )
            .send()
            .await
            .unwrap();
        self.session = response
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let init = Self::answer(response, 0).await;
        assert_eq!(init["result"]["serverInfo"]["name"], HOST_TOOL_SERVER);
        let ack = self
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .send()
            .await
            .unwrap();
        assert!(ack.status().is_success(), "{}", ack.status());
    }

    async fn request(&self, id: u64, method: &str, params: Value) -> Value {
        let response = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .send()
            .await
            .unwrap();
        Self::answer(response, id).await["result"].clone()
    }
}

/// A started server of `toolbox`'s tools, and what serves it.
async fn start(toolbox: &Arc<Toolbox>) -> (LoopbackServer, CallRx, HostTools) {
    let tools = HostTools::new(toolbox.clone());
    let (server, rx) = LoopbackServer::start(tools.specs()).await.unwrap();
    (server, rx, tools)
}

/// Run `body` while `rx` is served with `tools`.
async fn while_served<F: Future>(rx: CallRx, tools: &HostTools, sink: &Sink, body: F) -> F::Output {
    let cancel = CancellationToken::new();
    tokio::time::timeout(
        HANG,
        loopback::serving(Some(rx), tools, sink, &cancel, body),
    )
    .await
    .expect("the test hung")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_and_called_with_the_token() {
    let toolbox = Toolbox::new();
    let (server, rx, tools) = start(&toolbox).await;
    let sink = Sink::default();
    let mut client = Client::new(&server);
    let (listed, called) = while_served(rx, &tools, &sink, async {
        client.initialize().await;
        let listed = client.request(1, "tools/list", json!({})).await;
        let called = client
            .request(
                2,
                "tools/call",
                json!({"name": "echo", "arguments": {"text": "hi"}}),
            )
            .await;
        (listed, called)
    })
    .await;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "gate", "open", "wait"]);
    assert_eq!(
        listed["tools"][0]["inputSchema"]["properties"]["text"]["type"],
        "string"
    );
    assert_eq!(called["isError"], false);
    assert_eq!(
        called["structuredContent"],
        json!({"echoed": {"text": "hi"}})
    );
    let calls = toolbox.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].tool, "echo");
    assert_eq!(calls[0].input, json!({"text": "hi"}));
    assert!(!calls[0].approved, "the toolbox asks the host");
    assert!(calls[0].call_id.starts_with(HOST_TOOL_SERVER));
    // The token is nowhere but in the server's hands.
    assert!(!format!("{server:?}").contains(server.token()));
    assert!(format!("{server:?}").contains("<redacted>"));
    assert!(
        sink.0
            .lock()
            .unwrap()
            .iter()
            .all(|e| !e.contains(server.token()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_run_concurrently() {
    // `gate` finishes only once `open` ran: served one at a time, the pair
    // would hang.
    let toolbox = Toolbox::new();
    let (server, rx, tools) = start(&toolbox).await;
    let sink = Sink::default();
    let mut client = Client::new(&server);
    let (gate, open) = while_served(rx, &tools, &sink, async {
        client.initialize().await;
        let gate = client.request(1, "tools/call", json!({"name": "gate", "arguments": {}}));
        let open = async {
            // `open` is sent once `gate` is running.
            while toolbox.calls.lock().unwrap().is_empty() {
                tokio::task::yield_now().await;
            }
            client
                .request(2, "tools/call", json!({"name": "open", "arguments": {}}))
                .await
        };
        tokio::join!(gate, open)
    })
    .await;
    assert_eq!(gate["content"][0]["text"], "passed");
    assert_eq!(open["content"][0]["text"], "opened");
}

/// Wait until `toolbox` has seen `n` calls.
async fn calls_seen(toolbox: &Toolbox, n: usize) {
    while toolbox.calls.lock().unwrap().len() < n {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_cancel_and_the_clients_withdrawal_cancel_a_call_in_flight() {
    let toolbox = Toolbox::new();
    let (server, rx, tools) = start(&toolbox).await;
    let sink = Sink::default();
    let cancel = CancellationToken::new();
    let mut client = Client::new(&server);
    let wait = json!({"name": "wait", "arguments": {}});
    let body = async {
        client.initialize().await;
        // The client withdraws its call: the call's token is cancelled (the
        // withdrawn call's stream just ends).
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": wait});
        let withdrawn = async { client.post(&call).send().await.unwrap().text().await };
        let withdraw = async {
            calls_seen(&toolbox, 1).await;
            let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                              "params": {"requestId": 1, "reason": "test"}});
            let sent = client.post(&note).send().await.unwrap();
            assert!(sent.status().is_success(), "{}", sent.status());
            toolbox.cancelled.notified().await;
        };
        let (_, ()) = tokio::join!(withdrawn, withdraw);
        // The run is cancelled: the call in flight ends, answered.
        let (answer, ()) = tokio::join!(client.request(2, "tools/call", wait.clone()), async {
            calls_seen(&toolbox, 2).await;
            cancel.cancel();
        });
        answer
    };
    let answer = tokio::time::timeout(
        HANG,
        loopback::serving(Some(rx), &tools, &sink, &cancel, body),
    )
    .await
    .expect("the test hung");
    assert_eq!(answer["isError"], true);
    assert_eq!(answer["content"][0]["text"], "the call was cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_the_token_a_foreign_host_or_origin_or_a_big_body_are_refused() {
    let toolbox = Toolbox::new();
    let (server, rx, tools) = start(&toolbox).await;
    let sink = Sink::default();
    let mut client = Client::new(&server);
    let port = server
        .url()
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let statuses = while_served(rx, &tools, &sink, async {
        client.initialize().await;
        let list = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
        let status = |r: reqwest::RequestBuilder| async move { r.send().await.unwrap().status() };
        let mut out = Vec::new();
        // No token, a wrong one, the right one with another scheme.
        let mut bare = client.post(&list);
        bare = bare.header("authorization", "");
        let no_token = client
            .http
            .post(&client.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-session-id", client.session.clone().unwrap())
            .body(list.to_string());
        out.push(("no token", status(no_token).await, StatusCode::UNAUTHORIZED));
        out.push(("empty token", status(bare).await, StatusCode::UNAUTHORIZED));
        let wrong = format!("Bearer {}", "0".repeat(64));
        out.push((
            "wrong token",
            status(client.post(&list).header("authorization", wrong)).await,
            StatusCode::UNAUTHORIZED,
        ));
        out.push((
            "basic",
            status(
                client
                    .post(&list)
                    .header("authorization", format!("Basic {}", client.token)),
            )
            .await,
            StatusCode::UNAUTHORIZED,
        ));
        // A foreign Host (DNS rebinding), a Host without the port.
        for host in [format!("evil.example:{port}"), "127.0.0.1".to_owned()] {
            out.push((
                "foreign host",
                status(client.post(&list).header("host", host)).await,
                StatusCode::FORBIDDEN,
            ));
        }
        out.push((
            "localhost",
            status(
                client
                    .post(&list)
                    .header("host", format!("localhost:{port}")),
            )
            .await,
            StatusCode::OK,
        ));
        // A web page's Origin; a loopback one is fine.
        out.push((
            "foreign origin",
            status(client.post(&list).header("origin", "https://evil.example")).await,
            StatusCode::FORBIDDEN,
        ));
        out.push((
            "loopback origin",
            status(client.post(&list).header("origin", "http://localhost:3000")).await,
            StatusCode::OK,
        ));
        // A body past the limit (the token is right).
        let big = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list",
                         "params": {"pad": "x".repeat(MAX_BODY_BYTES)}});
        out.push((
            "oversized body",
            status(client.post(&big)).await,
            StatusCode::PAYLOAD_TOO_LARGE,
        ));
        // Still served after all that.
        let listed = client.request(9, "tools/list", json!({})).await;
        assert_eq!(listed["tools"].as_array().unwrap().len(), 4);
        out
    })
    .await;
    for (what, got, want) in statuses {
        assert_eq!(got, want, "{what}");
    }
    assert!(toolbox.calls.lock().unwrap().is_empty(), "no tool ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_listens_once_the_run_is_over() {
    let toolbox = Toolbox::new();
    let (server, rx, tools) = start(&toolbox).await;
    let sink = Sink::default();
    let mut client = Client::new(&server);
    while_served(rx, &tools, &sink, client.initialize()).await;
    drop(server);
    let err = client
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_connect(), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_run_has_its_own_port_and_token_for_its_mcp_config() {
    let toolbox = Toolbox::new();
    let (a, _, _) = start(&toolbox).await;
    let (b, _, _) = start(&toolbox).await;
    assert_ne!(a.url(), b.url());
    assert_ne!(a.token(), b.token());
    assert_eq!(a.token().len(), 64);
    assert!(a.token().bytes().all(|c| c.is_ascii_hexdigit()));
    assert!(a.url().starts_with("http://127.0.0.1:") && a.url().ends_with("/mcp"));
    let entry = a.mcp_server(TOKEN_ENV);
    assert_eq!(entry.name, HOST_TOOL_SERVER);
    match entry.transport {
        McpTransport::Http {
            url,
            headers,
            bearer_token_env,
        } => {
            assert_eq!(url, a.url());
            assert!(headers.is_empty());
            assert_eq!(bearer_token_env.as_deref(), Some(TOKEN_ENV));
        }
        other => panic!("{other:?}"),
    }
    // A run without host tools gets no server.
    let req = agent_adaptor_driver::Request::new("r", "p");
    assert!(LoopbackServer::for_run(&req).await.unwrap().is_none());
}
