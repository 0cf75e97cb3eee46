//! The agent loop calling the tools of the run's MCP servers (the testkit's
//! `mock-mcp-server`, over stdio and over Streamable HTTP with a bearer
//! token), with `ToolScope::Mcp` events, the server's tool policy, and a
//! required server that refuses the token.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_adaptor_core::{
    Agent, ApprovalRequest, Error, Event, Phase, RunCause, RunOptions, Runner, approve_all,
};
use agent_adaptor_driver::{McpServer, McpTransport, ToolScope};
use agent_adaptor_testkit::mcp::McpTestServer;
use agent_adaptor_testkit::mock::Reply;
use common::{Vendor, llm};
use futures::StreamExt;
use serde_json::{Value, json};

/// A variable this test process has, used as the bearer token's source
/// (tests cannot set variables; the server child gets the same value).
const TOKEN_VAR: &str = "CARGO_MANIFEST_DIR";

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("llm-mcp-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The MCP tool calls among `events`: (name, scope, result).
fn mcp_calls(events: &[Event]) -> Vec<(String, ToolScope, Option<Value>)> {
    let mut out: Vec<(String, String, ToolScope, Option<Value>)> = Vec::new();
    for event in events {
        match event {
            Event::ToolCall(c) if c.phase == Phase::Start => {
                out.push((c.id.to_string(), c.name.clone(), c.scope.clone(), None));
            }
            Event::ToolResult(r) => {
                if let Some(call) = out.iter_mut().find(|c| c.0 == r.id.as_str()) {
                    call.3.clone_from(&r.result);
                }
            }
            _ => {}
        }
    }
    out.into_iter().map(|(_, n, s, r)| (n, s, r)).collect()
}

#[tokio::test]
async fn a_stdio_server_tool_is_called_auto_approved_with_its_scope() {
    let dir = scratch("stdio");
    let log = dir.join("calls.jsonl");
    let (command, args) = McpTestServer::stdio_command("files", &log).unwrap();
    let mut server = McpServer::stdio("files", command, args);
    server.tools.auto_approve.insert("lookup".into());
    let model = common::server(vec![
        Reply::ToolCall {
            name: "files__lookup".into(),
            arguments: json!({"key": "k1"}),
        },
        Reply::Text("Found it.".into()),
    ])
    .await;
    let agent = Agent::new(llm(Vendor::Responses, &model));
    // No approval handler: an auto-approved tool does not ask.
    let mut stream = agent.stream_with(common::PROMPT, RunOptions::new().mcp_server(server));
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        assert!(
            !matches!(event, Event::ApprovalRequest(_)),
            "an auto-approved tool asked: {event:?}"
        );
        events.push(event);
    }
    let result = stream.result().await.unwrap();
    assert_eq!(result.text, "Found it.");
    assert_eq!(
        mcp_calls(&events),
        [(
            "files__lookup".to_owned(),
            ToolScope::Mcp {
                server: "files".into(),
                tool: "lookup".into()
            },
            Some(json!("value-of-k1"))
        )]
    );
    let first = String::from_utf8_lossy(&model.requests()[0].body).into_owned();
    assert!(
        first.contains("files__add") && first.contains("files__fail"),
        "{first}"
    );
    let second = String::from_utf8_lossy(&model.requests()[1].body).into_owned();
    assert!(second.contains("value-of-k1"), "{second}");
    assert_eq!(
        McpTestServer::read_log(&log).unwrap(),
        [json!({"tool": "lookup", "arguments": {"key": "k1"}})]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn an_http_server_with_a_bearer_token_is_filtered_and_asks_first() {
    let dir = scratch("http");
    let log = dir.join("calls.jsonl");
    let token = std::env::var(TOKEN_VAR).unwrap();
    let handle = McpTestServer::start_http("docs", &log, Some((TOKEN_VAR, &token)))
        .await
        .unwrap();
    let mut server = McpServer::http("docs", handle.url.clone());
    if let McpTransport::Http {
        bearer_token_env, ..
    } = &mut server.transport
    {
        *bearer_token_env = Some(TOKEN_VAR.into());
    }
    server.tools.deny.insert("fail".into());
    server.required = true;
    let model = common::server(vec![
        Reply::ToolCall {
            name: "docs__add".into(),
            arguments: json!({"a": 1, "b": 2}),
        },
        Reply::Text("Three.".into()),
    ])
    .await;
    let agent = Agent::new(llm(Vendor::Gemini, &model));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let approve = approve_all();
    let handler: agent_adaptor_core::ApprovalHandler = Arc::new(move |req: ApprovalRequest| {
        seen.lock()
            .unwrap()
            .push((req.source.clone(), req.details.clone()));
        approve(req)
    });
    let options = RunOptions::new()
        .mcp_server(server)
        .approval_handler(handler);
    let mut stream = agent.stream_with(common::PROMPT, options);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let result = stream.result().await.unwrap();
    assert_eq!(result.text, "Three.");
    let calls = mcp_calls(&events);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        calls[0].1,
        ToolScope::Mcp {
            server: "docs".into(),
            tool: "add".into()
        }
    );
    assert_eq!(calls[0].2, Some(json!("3")));
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].0, "mcp_tool");
    let first = String::from_utf8_lossy(&model.requests()[0].body).into_owned();
    assert!(
        first.contains("docs__add") && first.contains("docs__lookup"),
        "{first}"
    );
    assert!(
        !first.contains("docs__fail"),
        "a denied tool is not offered: {first}"
    );
    let second = String::from_utf8_lossy(&model.requests()[1].body).into_owned();
    assert!(second.contains('3'), "{second}");
    assert!(
        !format!("{events:?}").contains(&token),
        "the token reaches no event"
    );
    assert_eq!(McpTestServer::read_log(&log).unwrap().len(), 1);
    drop(handle);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_required_server_that_refuses_the_token_fails_the_run_before_the_model() {
    let dir = scratch("refused");
    let log = dir.join("calls.jsonl");
    let handle = McpTestServer::start_http("docs", &log, Some((TOKEN_VAR, "the-right-token")))
        .await
        .unwrap();
    let mut server = McpServer::http("docs", handle.url.clone());
    if let McpTransport::Http {
        bearer_token_env, ..
    } = &mut server.transport
    {
        // This process's value of the variable is not the server's token.
        *bearer_token_env = Some(TOKEN_VAR.into());
    }
    server.required = true;
    let model = common::server(vec![Reply::Text("never".into())]).await;
    let agent = Agent::new(llm(Vendor::Chat, &model));
    let outcome = agent
        .run_with(common::PROMPT, RunOptions::new().mcp_server(server))
        .await;
    let Err(Error::Run(run)) = outcome else {
        panic!("expected a failed run, got {outcome:?}")
    };
    let Some(RunCause::Failure(failure)) = &run.cause else {
        panic!("expected a failure, got {:?}", run.cause)
    };
    assert!(failure.message.contains("docs"), "{}", failure.message);
    assert!(model.requests().is_empty(), "the model was never called");
    drop(handle);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn an_optional_server_that_cannot_start_is_a_notice_and_the_run_goes_on() {
    let server = McpServer::stdio("gone", "/nonexistent/mcp-server", ["--x"]);
    let model = common::server(vec![Reply::Text("Fine without it.".into())]).await;
    let agent = Agent::new(llm(Vendor::Anthropic, &model));
    let mut stream = agent.stream_with(common::PROMPT, RunOptions::new().mcp_server(server));
    let mut notices = Vec::new();
    while let Some(event) = stream.next().await {
        if let Event::Notice(notice) = &event {
            notices.push(format!("{notice:?}"));
        }
    }
    let result = stream.result().await.unwrap();
    assert_eq!(result.text, "Fine without it.");
    assert!(
        notices
            .iter()
            .any(|n| n.contains("mcp.server_unavailable") && n.contains("gone")),
        "{notices:#?}"
    );
    let first = String::from_utf8_lossy(&model.requests()[0].body).into_owned();
    assert!(
        !first.contains("gone__"),
        "no tool of it is offered: {first}"
    );
}
