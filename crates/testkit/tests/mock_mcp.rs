//! The mock MCP server (`mock-mcp-server`), driven by `rmcp`'s client: the
//! tools it lists, their answers, the call log, and (over Streamable HTTP)
//! the bearer token.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_adaptor_testkit::mcp::{FAIL_TEXT, McpTestServer};
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

/// A generous bound on every wait (a loaded CI machine), never a timing check.
const BOUND: Duration = Duration::from_secs(60);

async fn bounded<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, future)
        .await
        .expect("the MCP exchange finished within the bound")
}

/// A fresh, empty directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mock-mcp-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn stdio_client(name: &str, log: &Path) -> RunningService<RoleClient, ()> {
    let (command, args) = McpTestServer::stdio_command(name, log).unwrap();
    let transport = TokioChildProcess::new(tokio::process::Command::new(command).configure(|c| {
        c.args(&args);
    }))
    .unwrap();
    bounded(().serve(transport)).await.unwrap()
}

async fn http_client(
    url: &str,
    token: Option<&str>,
) -> Result<RunningService<RoleClient, ()>, rmcp::service::ClientInitializeError> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    bounded(().serve(StreamableHttpClientTransport::from_config(config))).await
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    bounded(client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args)))
        .await
        .unwrap()
}

fn text(result: &CallToolResult) -> &str {
    assert_eq!(result.content.len(), 1, "one content block: {result:?}");
    &result.content[0].as_text().expect("a text block").text
}

fn schema(tools: &[Tool], name: &str) -> Value {
    let tool = tools.iter().find(|t| t.name == name).unwrap();
    Value::Object((*tool.input_schema).clone())
}

/// The three tools, their input schemas, and their answers, on any transport.
async fn check_the_tools(client: &RunningService<RoleClient, ()>) {
    let tools = bounded(client.list_all_tools()).await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "fail", "lookup"]);

    let lookup = schema(&tools, "lookup");
    assert_eq!(lookup["type"], "object");
    assert_eq!(lookup["properties"]["key"]["type"], "string");
    assert_eq!(lookup["required"], json!(["key"]));
    let add = schema(&tools, "add");
    assert_eq!(add["properties"]["a"]["type"], "number");
    assert_eq!(add["properties"]["b"]["type"], "number");
    assert_eq!(add["required"], json!(["a", "b"]));
    let fail = schema(&tools, "fail");
    assert_eq!(fail["type"], "object");
    assert_eq!(fail.get("required"), None);

    let answer = call(client, "lookup", json!({"key": "k"})).await;
    assert_eq!(text(&answer), "value-of-k");
    assert_ne!(answer.is_error, Some(true));
    let answer = call(client, "add", json!({"a": 1, "b": 2.5})).await;
    assert_eq!(text(&answer), "3.5");
    assert_ne!(answer.is_error, Some(true));
    let answer = call(client, "fail", json!({})).await;
    assert_eq!(answer.is_error, Some(true));
    assert_eq!(text(&answer), FAIL_TEXT);
}

/// What [`check_the_tools`] leaves in the call log.
fn the_logged_calls() -> Vec<Value> {
    vec![
        json!({"tool": "lookup", "arguments": {"key": "k"}}),
        json!({"tool": "add", "arguments": {"a": 1, "b": 2.5}}),
        json!({"tool": "fail", "arguments": {}}),
    ]
}

// ---- stdio -------------------------------------------------------------------

#[tokio::test]
async fn stdio_lists_the_three_tools_answers_them_and_logs_each_call() {
    let dir = scratch("stdio-tools");
    let log = dir.join("calls.jsonl");
    let client = stdio_client("my-tools", &log).await;
    assert_eq!(McpTestServer::read_log(&log).unwrap(), Vec::<Value>::new());

    check_the_tools(&client).await;

    assert_eq!(McpTestServer::read_log(&log).unwrap(), the_logged_calls());
    bounded(client.cancel()).await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn stdio_reports_the_chosen_name_and_aa_test_by_default() {
    let dir = scratch("stdio-name");
    let client = stdio_client("chosen-name", &dir.join("calls.jsonl")).await;
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "chosen-name");
    bounded(client.cancel()).await.unwrap();

    let bin = McpTestServer::binary().unwrap();
    let transport = TokioChildProcess::new(tokio::process::Command::new(bin)).unwrap();
    let client = bounded(().serve(transport)).await.unwrap();
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "aa-test");
    bounded(client.cancel()).await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn an_unknown_tool_is_a_protocol_error_and_still_logged() {
    let dir = scratch("stdio-unknown");
    let log = dir.join("calls.jsonl");
    let client = stdio_client("aa-test", &log).await;
    let called = bounded(client.call_tool(CallToolRequestParams::new("nope"))).await;
    assert!(called.is_err(), "{called:?}");
    assert_eq!(
        McpTestServer::read_log(&log).unwrap(),
        [json!({"tool": "nope", "arguments": null})]
    );
    bounded(client.cancel()).await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn read_log_of_no_file_is_no_calls_and_of_a_bad_line_an_error() {
    let dir = scratch("read-log");
    assert!(
        McpTestServer::read_log(&dir.join("absent"))
            .unwrap()
            .is_empty()
    );
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"tool\":\"add\"}\nnot json\n").unwrap();
    let error = McpTestServer::read_log(&bad).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- Streamable HTTP ---------------------------------------------------------------

const TOKEN_VAR: &str = "AA_MOCK_MCP_TOKEN";
const TOKEN: &str = "s3cret-token";

#[tokio::test]
async fn http_with_the_right_token_lists_answers_and_logs_like_stdio() {
    let dir = scratch("http-tools");
    let log = dir.join("calls.jsonl");
    let server = McpTestServer::start_http("http-tools", &log, Some((TOKEN_VAR, TOKEN)))
        .await
        .unwrap();
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    assert!(server.url.ends_with("/mcp"), "{}", server.url);

    let client = http_client(&server.url, Some(TOKEN)).await.unwrap();
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "http-tools");
    check_the_tools(&client).await;
    assert_eq!(McpTestServer::read_log(&log).unwrap(), the_logged_calls());
    bounded(client.cancel()).await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn http_without_or_with_a_wrong_token_is_refused_with_401() {
    let dir = scratch("http-refused");
    let log = dir.join("calls.jsonl");
    let server = McpTestServer::start_http("aa-test", &log, Some((TOKEN_VAR, TOKEN)))
        .await
        .unwrap();

    for token in [None, Some("wrong-token"), Some("")] {
        let refused = http_client(&server.url, token).await;
        assert!(refused.is_err(), "token {token:?} was let in");
    }
    // The status itself, on a plain initialize request.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let http = reqwest::Client::new();
    for authorization in [None, Some("Bearer wrong-token"), Some(TOKEN)] {
        let mut request = http
            .post(&server.url)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        let response = bounded(request.send()).await.unwrap();
        assert_eq!(response.status(), 401, "authorization {authorization:?}");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
    }
    let response = bounded(
        http.post(&server.url)
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {TOKEN}"))
            .json(&initialize)
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    assert!(McpTestServer::read_log(&log).unwrap().is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn http_without_a_bearer_option_needs_no_token() {
    let dir = scratch("http-open");
    let log = dir.join("calls.jsonl");
    let server = McpTestServer::start_http("aa-test", &log, None)
        .await
        .unwrap();
    let client = http_client(&server.url, None).await.unwrap();
    check_the_tools(&client).await;
    bounded(client.cancel()).await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn the_binary_refuses_a_non_loopback_address_and_an_unset_token_variable() {
    let bin = McpTestServer::binary().unwrap();
    let cases: [&[&str]; 3] = [
        &["--http", "0.0.0.0:0"],
        &[
            "--http",
            "127.0.0.1:0",
            "--bearer-token-env",
            "AA_MOCK_MCP_UNSET_VAR",
        ],
        &["--bearer-token-env", TOKEN_VAR],
    ];
    for args in cases {
        let output = bounded(
            tokio::process::Command::new(&bin)
                .args(args)
                .env_remove("AA_MOCK_MCP_UNSET_VAR")
                .env(TOKEN_VAR, TOKEN)
                .stdin(std::process::Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .unwrap();
        assert!(!output.status.success(), "{args:?} started");
        assert!(
            output.stdout.is_empty(),
            "{args:?} printed {:?}",
            output.stdout
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stderr.contains(TOKEN),
            "{args:?}: the token leaked: {stderr}"
        );
    }
}
