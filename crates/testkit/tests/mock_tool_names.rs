//! Tool names reach the CLI exactly as scripted on every protocol: MCP tool
//! names carry `__`, `-` and `.` (Claude Code `mcp__<server>__<tool>`, a
//! server key like `aa-test`, dotted names), and a CLI routes the call by the
//! name, so any rewriting would break the MCP round trip.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mock_common;

use agent_adaptor_testkit::mock::{MockServer, Reply, Script, ToolCallSpec};
use mock_common::post_stream;
use serde_json::{Value, json};

const NAMES: [&str; 3] = [
    "mcp__aa-test__lookup",
    "mcp__my.server-1__add",
    "aa-test.fail",
];

/// Every string under a `name` key, anywhere in `value`.
fn names_in(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                match item {
                    Value::String(text) if key == "name" => found.push(text.clone()),
                    _ => names_in(item, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| names_in(item, found)),
        _ => {}
    }
}

#[tokio::test]
async fn mcp_style_tool_names_pass_through_every_protocol_unchanged() {
    let calls = NAMES
        .iter()
        .map(|name| ToolCallSpec::new(*name, json!({"key": "k"})))
        .collect();
    let script = Script::new().on_prompt("MCPNAMES", vec![Reply::ToolCalls(calls)]);
    let server = MockServer::start(script).await.unwrap();
    let base = server.base_url();
    let text = "MCPNAMES";
    let requests = [
        (
            format!("{base}/v1/messages"),
            json!({"model": "m", "max_tokens": 64, "stream": true,
                   "messages": [{"role": "user", "content": text}]}),
        ),
        (
            format!("{base}/v1/responses"),
            json!({"model": "m", "stream": true, "input": text}),
        ),
        (
            format!("{base}/v1/chat/completions"),
            json!({"model": "m", "stream": true,
                   "messages": [{"role": "user", "content": text}]}),
        ),
        (
            format!("{base}/v1beta/models/gemini-mock:streamGenerateContent?alt=sse"),
            json!({"contents": [{"role": "user", "parts": [{"text": text}]}]}),
        ),
    ];
    for (url, body) in requests {
        let mut found = Vec::new();
        for event in post_stream(&url, &body).await.events() {
            if let Ok(data) = serde_json::from_str::<Value>(&event.data) {
                names_in(&data, &mut found);
            }
        }
        // Each name as often as the protocol repeats it (Responses: in its
        // items and again in `response.completed`); never a rewritten one.
        let mut distinct = Vec::new();
        for name in found {
            if !distinct.contains(&name) {
                distinct.push(name);
            }
        }
        assert_eq!(distinct, NAMES, "{url}");
    }
}

/// Codex offers an MCP server's tools as a Responses `namespace` tool
/// (`mcp__aa_test`) and routes a call by `namespace` + `name`: a scripted
/// name `<namespace>::<name>` is sent that way on the Responses protocol.
#[tokio::test]
async fn a_namespaced_name_is_a_namespaced_responses_call() {
    let script = Script::new().on_prompt(
        "NSCALL",
        vec![Reply::ToolCall {
            name: "mcp__aa_test::lookup".into(),
            arguments: json!({"key": "k1"}),
        }],
    );
    let server = MockServer::start(script).await.unwrap();
    let url = format!("{}/v1/responses", server.base_url());
    let body = json!({"model": "m", "stream": true, "input": "NSCALL"});
    let mut items = Vec::new();
    for event in post_stream(&url, &body).await.events() {
        if let Ok(data) = serde_json::from_str::<Value>(&event.data)
            && data["type"] == "response.output_item.done"
        {
            items.push(data["item"].clone());
        }
    }
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["type"], "function_call");
    assert_eq!(items[0]["namespace"], "mcp__aa_test");
    assert_eq!(items[0]["name"], "lookup");
}
