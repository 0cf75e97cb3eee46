//! Anthropic Messages wire format of the mock server, every reply variant.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mock_common;

use std::time::{Duration, Instant};

use agent_adaptor_testkit::mock::{
    MOCK_CACHED_INPUT_TOKENS, MOCK_INPUT_TOKENS, MOCK_OUTPUT_TOKENS, MockServer, Protocol, Reply,
    Script, ToolCallSpec,
};
use mock_common::{REASONING, TEXT, count, post_json, post_stream, squash, strings, within};
use serde_json::{Value, json};

/// A Claude-Code-like request: the prompt is the second text block after a
/// system reminder.
fn request(prompt: &str, stream: bool) -> Value {
    json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": stream,
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "messages": [{
            "role": "user",
            "content": [
                {"type": "text", "text": "<system-reminder>\nEnvironment...\n</system-reminder>"},
                {"type": "text", "text": prompt},
            ],
        }],
    })
}

fn url(server: &MockServer) -> String {
    format!("{}/v1/messages?beta=true", server.base_url())
}

fn types(events: &[mock_common::Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let kind = e.json()["type"].as_str().unwrap().to_owned();
            assert_eq!(
                e.event.as_deref(),
                Some(kind.as_str()),
                "event name = data.type"
            );
            kind
        })
        .collect()
}

/// Concatenates the deltas of one kind (`text_delta` -> `text`, ...).
fn deltas(events: &[mock_common::Event], delta_type: &str, field: &str) -> String {
    events
        .iter()
        .map(|e| e.json())
        .filter(|v| v["type"] == "content_block_delta" && v["delta"]["type"] == delta_type)
        .map(|v| v["delta"][field].as_str().unwrap().to_owned())
        .collect()
}

async fn server(replies: Vec<Reply>) -> MockServer {
    MockServer::start(Script::new().on_prompt("KEYWORD", replies))
        .await
        .unwrap()
}

#[tokio::test]
async fn text_streams_as_text_deltas_in_one_block() {
    let server = server(vec![Reply::Text(TEXT.into())]).await;
    let streamed = post_stream(&url(&server), &request("please KEYWORD now", true)).await;
    assert_eq!(streamed.status, 200);
    assert_eq!(
        streamed.header("content-type").as_deref(),
        Some("text/event-stream")
    );
    assert_eq!(streamed.header("connection").as_deref(), Some("close"));
    assert!(!streamed.aborted);
    let events = streamed.events();
    let kinds = types(&events);
    assert_eq!(
        squash(&kinds),
        strings(&[
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta+",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ])
    );
    assert!(count(&kinds, "content_block_delta") >= 2, "several deltas");
    assert_eq!(deltas(&events, "text_delta", "text"), TEXT);

    let start = events[0].json();
    assert_eq!(start["message"]["role"], "assistant");
    assert_eq!(start["message"]["model"], "claude-sonnet-4-5");
    assert_eq!(start["message"]["content"], json!([]));
    assert!(start["message"]["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(
        start["message"]["usage"]["input_tokens"],
        MOCK_INPUT_TOKENS - MOCK_CACHED_INPUT_TOKENS,
        "disjoint from the cache reads"
    );
    let block = events[2].json();
    assert_eq!(block["index"], 0);
    assert_eq!(block["content_block"], json!({"type": "text", "text": ""}));
    let message_delta = events[events.len() - 2].json();
    assert_eq!(message_delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(message_delta["usage"]["output_tokens"], MOCK_OUTPUT_TOKENS);
    assert_eq!(
        message_delta["usage"]["cache_read_input_tokens"],
        MOCK_CACHED_INPUT_TOKENS
    );
}

#[tokio::test]
async fn reasoning_then_text_is_a_thinking_block_with_signature_then_text() {
    let server = server(vec![Reply::ReasoningThenText {
        reasoning: REASONING.into(),
        text: TEXT.into(),
    }])
    .await;
    let events = post_stream(&url(&server), &request("KEYWORD", true))
        .await
        .events();
    let kinds = types(&events);
    assert_eq!(
        squash(&kinds),
        strings(&[
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta+",
            "content_block_stop",
            "content_block_start",
            "content_block_delta+",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ])
    );
    let values: Vec<Value> = events.iter().map(|e| e.json()).collect();
    assert_eq!(
        values[2]["content_block"],
        json!({"type": "thinking", "thinking": "", "signature": ""})
    );
    assert_eq!(deltas(&events, "thinking_delta", "thinking"), REASONING);
    // Exactly one signature delta, the last delta of the thinking block.
    let thinking_deltas: Vec<&Value> = values
        .iter()
        .filter(|v| v["type"] == "content_block_delta" && v["index"] == 0)
        .collect();
    let last = thinking_deltas.last().unwrap();
    assert_eq!(last["delta"]["type"], "signature_delta");
    assert!(!last["delta"]["signature"].as_str().unwrap().is_empty());
    assert_eq!(
        values
            .iter()
            .filter(|v| v["delta"]["type"] == "signature_delta")
            .count(),
        1
    );
    let text_start = values
        .iter()
        .rfind(|v| v["type"] == "content_block_start")
        .unwrap();
    assert_eq!(text_start["index"], 1);
    assert_eq!(text_start["content_block"]["type"], "text");
    assert_eq!(deltas(&events, "text_delta", "text"), TEXT);
}

#[tokio::test]
async fn tool_call_then_the_tool_result_gets_the_next_reply() {
    let arguments = json!({"command": "echo hi-from-tool", "description": "Say hi"});
    let server = server(vec![
        Reply::ToolCall {
            name: "Bash".into(),
            arguments: arguments.clone(),
        },
        Reply::Text("Tool said hi.".into()),
    ])
    .await;
    let first = request("RUN KEYWORD", true);
    let events = post_stream(&url(&server), &first).await.events();
    let kinds = types(&events);
    assert_eq!(
        squash(&kinds),
        strings(&[
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta+",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ])
    );
    let block = events[2].json()["content_block"].clone();
    assert_eq!(block["type"], "tool_use");
    assert_eq!(block["name"], "Bash");
    assert_eq!(block["input"], json!({}));
    let tool_id = block["id"].as_str().unwrap().to_owned();
    assert!(tool_id.starts_with("toolu_"));
    let partial = deltas(&events, "input_json_delta", "partial_json");
    assert_eq!(serde_json::from_str::<Value>(&partial).unwrap(), arguments);
    assert_eq!(
        events[events.len() - 2].json()["delta"]["stop_reason"],
        "tool_use"
    );

    // The CLI runs the tool and sends the result back.
    let mut follow_up = first.clone();
    let messages = follow_up["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": tool_id, "name": "Bash", "input": arguments},
    ]}));
    messages.push(json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tool_id, "content": "hi-from-tool", "is_error": false},
    ]}));
    let events = post_stream(&url(&server), &follow_up).await.events();
    assert_eq!(deltas(&events, "text_delta", "text"), "Tool said hi.");
    assert_eq!(
        events[events.len() - 2].json()["delta"]["stop_reason"],
        "end_turn"
    );

    // Past the end, the last reply repeats.
    let mut third = follow_up.clone();
    let messages = third["messages"].as_array_mut().unwrap();
    messages
        .push(json!({"role": "assistant", "content": [{"type": "text", "text": "Tool said hi."}]}));
    messages.push(json!({"role": "user", "content": "and again"}));
    let events = post_stream(&url(&server), &third).await.events();
    assert_eq!(deltas(&events, "text_delta", "text"), "Tool said hi.");

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests
            .iter()
            .all(|r| r.protocol() == Some(Protocol::AnthropicMessages))
    );
    assert_eq!(requests[1].json().unwrap(), follow_up);
}

#[tokio::test]
async fn json_reply_is_its_compact_text() {
    let value = json!({"answer": "ok", "items": [1, 2, 3]});
    let server = server(vec![Reply::Json(value.clone())]).await;
    let events = post_stream(&url(&server), &request("KEYWORD", true))
        .await
        .events();
    let text = deltas(&events, "text_delta", "text");
    assert_eq!(text, value.to_string());
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
}

#[tokio::test]
async fn http_errors_use_the_anthropic_error_shape() {
    let server = MockServer::start(
        Script::new()
            .on_prompt(
                "E400",
                vec![Reply::HttpError {
                    status: 400,
                    body: Value::Null,
                    retry_after: None,
                }],
            )
            .on_prompt(
                "E429",
                vec![Reply::HttpError {
                    status: 429,
                    body: Value::Null,
                    retry_after: Some(7),
                }],
            )
            .on_prompt(
                "E500",
                vec![Reply::HttpError {
                    status: 500,
                    body: Value::Null,
                    retry_after: None,
                }],
            )
            .on_prompt(
                "CUSTOM",
                vec![Reply::HttpError {
                    status: 400,
                    body: json!({"type": "error", "error": {"type": "invalid_request_error", "message": "custom"}}),
                    retry_after: None,
                }],
            ),
    )
    .await
    .unwrap();

    let (status, headers, body) = post_json(&url(&server), &request("E400", true)).await;
    assert_eq!(status, 400);
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(body["error"]["message"].as_str().unwrap().contains("400"));
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["x-should-retry"], "false");
    assert!(headers.get("retry-after").is_none());
    assert!(headers.contains_key("request-id"));

    let (status, headers, body) = post_json(&url(&server), &request("E429", true)).await;
    assert_eq!(status, 429);
    assert_eq!(body["error"]["type"], "rate_limit_error");
    assert_eq!(headers["retry-after"], "7");
    assert!(headers.get("x-should-retry").is_none());

    let (status, _, body) = post_json(&url(&server), &request("E500", false)).await;
    assert_eq!(status, 500);
    assert_eq!(body["error"]["type"], "api_error");

    let (status, _, body) = post_json(&url(&server), &request("CUSTOM", true)).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["message"], "custom");
}

#[tokio::test]
async fn stream_error_is_an_error_event_after_message_start() {
    let server = server(vec![Reply::StreamError {
        message: "mock sse failure".into(),
    }])
    .await;
    let streamed = post_stream(&url(&server), &request("KEYWORD", true)).await;
    assert_eq!(streamed.status, 200);
    assert!(!streamed.aborted);
    let events = streamed.events();
    assert_eq!(types(&events), strings(&["message_start", "ping", "error"]));
    assert_eq!(
        events[2].json(),
        json!({"type": "error", "error": {"type": "api_error", "message": "mock sse failure"}})
    );

    // Without streaming (Claude Code's fallback) it is an HTTP 500.
    let (status, _, body) = post_json(&url(&server), &request("KEYWORD", false)).await;
    assert_eq!(status, 500);
    assert_eq!(body["error"]["message"], "mock sse failure");
}

#[tokio::test]
async fn cut_off_drops_the_connection_after_the_text() {
    let server = server(vec![Reply::CutOff {
        partial_text: "partial answ".into(),
    }])
    .await;
    let streamed = post_stream(&url(&server), &request("KEYWORD", true)).await;
    assert!(streamed.aborted, "the body must end with a transport error");
    let events = streamed.events();
    let kinds = types(&events);
    assert_eq!(
        squash(&kinds),
        strings(&[
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta+"
        ])
    );
    assert_eq!(deltas(&events, "text_delta", "text"), "partial answ");
    assert_eq!(count(&kinds, "message_stop"), 0);

    // Without streaming: half a JSON body, then the drop.
    let response = within(
        reqwest::Client::new()
            .post(url(&server))
            .json(&request("KEYWORD", false))
            .send(),
    )
    .await
    .unwrap();
    assert!(within(response.bytes()).await.is_err());
}

#[tokio::test]
async fn slow_pauses_between_events() {
    let delay = Duration::from_millis(5);
    let server = server(vec![Reply::Slow {
        text: TEXT.into(),
        chunk_delay: delay,
    }])
    .await;
    let started = Instant::now();
    let streamed = post_stream(&url(&server), &request("KEYWORD", true)).await;
    let elapsed = started.elapsed();
    let events = streamed.events();
    assert_eq!(deltas(&events, "text_delta", "text"), TEXT);
    assert_eq!(
        types(&events).last().map(String::as_str),
        Some("message_stop")
    );
    let gaps = u32::try_from(events.len() - 1).unwrap();
    assert!(elapsed >= delay * gaps, "{elapsed:?} < {gaps} x {delay:?}");
}

#[tokio::test]
async fn non_streaming_answers_are_message_objects() {
    let arguments = json!({"command": "ls"});
    let server = MockServer::start(
        Script::new()
            .on_prompt("TEXT", vec![Reply::Text(TEXT.into())])
            .on_prompt(
                "THINK",
                vec![Reply::ReasoningThenText {
                    reasoning: REASONING.into(),
                    text: TEXT.into(),
                }],
            )
            .on_prompt(
                "TOOL",
                vec![Reply::ToolCall {
                    name: "Bash".into(),
                    arguments: arguments.clone(),
                }],
            ),
    )
    .await
    .unwrap();

    // `stream` omitted: the API default is a single JSON answer.
    let mut body = request("TEXT", false);
    body.as_object_mut().unwrap().remove("stream");
    let (status, headers, message) = post_json(&url(&server), &body).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["content"], json!([{"type": "text", "text": TEXT}]));
    assert_eq!(message["stop_reason"], "end_turn");
    assert_eq!(message["usage"]["output_tokens"], MOCK_OUTPUT_TOKENS);

    let (_, _, message) = post_json(&url(&server), &request("THINK", false)).await;
    assert_eq!(message["content"][0]["type"], "thinking");
    assert_eq!(message["content"][0]["thinking"], REASONING);
    assert!(message["content"][0]["signature"].is_string());
    assert_eq!(message["content"][1], json!({"type": "text", "text": TEXT}));

    let (_, _, message) = post_json(&url(&server), &request("TOOL", false)).await;
    assert_eq!(message["content"][0]["type"], "tool_use");
    assert_eq!(message["content"][0]["name"], "Bash");
    assert_eq!(message["content"][0]["input"], arguments);
    assert_eq!(message["stop_reason"], "tool_use");
}

#[tokio::test]
async fn count_tokens_and_query_are_recorded() {
    let server = MockServer::start(Script::new()).await.unwrap();
    let (status, _, body) = post_json(
        &format!("{}/v1/messages/count_tokens?beta=true", server.base_url()),
        &request("anything", false),
    )
    .await;
    assert_eq!(status, 200);
    assert!(body["input_tokens"].as_u64().unwrap() > 0);
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/messages/count_tokens");
    assert_eq!(requests[0].query.as_deref(), Some("beta=true"));
    assert_eq!(requests[0].protocol(), Some(Protocol::AnthropicMessages));
}

// ---- parallel tool calls, error envelopes, missing finish reasons ----------

#[tokio::test]
async fn tool_calls_are_one_tool_use_block_each() {
    let calls = vec![
        ToolCallSpec::new("Read", json!({"file_path": "/tmp/a.txt", "limit": 20})),
        ToolCallSpec::new("Bash", json!({"command": "ls -la", "description": "List"})),
    ];
    let server = server(vec![
        Reply::ToolCalls(calls.clone()),
        Reply::Text("Done with both.".into()),
    ])
    .await;
    let first = request("KEYWORD", true);
    let streamed = post_stream(&url(&server), &first).await;
    assert!(!streamed.aborted);
    let events = streamed.events();
    let kinds = types(&events);
    assert_eq!(
        squash(&kinds),
        strings(&[
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta+",
            "content_block_stop",
            "content_block_start",
            "content_block_delta+",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ])
    );
    let values: Vec<Value> = events.iter().map(|e| e.json()).collect();
    let starts: Vec<&Value> = values
        .iter()
        .filter(|v| v["type"] == "content_block_start")
        .collect();
    let mut blocks = Vec::new();
    for (index, (start, call)) in starts.iter().zip(&calls).enumerate() {
        assert_eq!(start["index"], index);
        let block = &start["content_block"];
        assert_eq!(block["type"], "tool_use");
        assert_eq!(block["name"], call.name.as_str());
        assert_eq!(block["input"], json!({}));
        assert!(block["id"].as_str().unwrap().starts_with("toolu_"));
        let partial: String = values
            .iter()
            .filter(|v| v["type"] == "content_block_delta" && v["index"] == index)
            .map(|v| {
                assert_eq!(v["delta"]["type"], "input_json_delta");
                v["delta"]["partial_json"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(
            serde_json::from_str::<Value>(&partial).unwrap(),
            call.arguments
        );
        let stops = values
            .iter()
            .filter(|v| v["type"] == "content_block_stop" && v["index"] == index)
            .count();
        assert_eq!(stops, 1);
        blocks.push(
            json!({"type": "tool_use", "id": block["id"], "name": block["name"],
                           "input": call.arguments}),
        );
    }
    assert_ne!(blocks[0]["id"], blocks[1]["id"]);
    assert_eq!(values[values.len() - 2]["delta"]["stop_reason"], "tool_use");

    // One assistant message with both blocks, one user message with both
    // results: the next reply.
    let mut follow_up = first.clone();
    let messages = follow_up["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": blocks}));
    messages.push(
        json!({"role": "user", "content": blocks.iter().map(|b| json!(
        {"type": "tool_result", "tool_use_id": b["id"], "content": "ok"})).collect::<Vec<_>>()}),
    );
    let events = post_stream(&url(&server), &follow_up).await.events();
    assert_eq!(deltas(&events, "text_delta", "text"), "Done with both.");

    let (status, _, message) = post_json(&url(&server), &request("KEYWORD", false)).await;
    assert_eq!(status, 200);
    let content = message["content"].as_array().unwrap();
    assert_eq!(content.len(), 2);
    for (block, call) in content.iter().zip(&calls) {
        assert_eq!(block["type"], "tool_use");
        assert_eq!(block["name"], call.name.as_str());
        assert_eq!(block["input"], call.arguments);
    }
    assert_eq!(message["stop_reason"], "tool_use");
}

#[tokio::test]
async fn stream_error_envelope_is_an_error_event_with_the_request_id() {
    let server = MockServer::start(
        Script::new()
            .on_prompt(
                "PARTIAL",
                vec![Reply::StreamErrorEnvelope {
                    partial_text: "Half an answ".into(),
                    code: "overloaded_error".into(),
                    status: 529,
                    message: "Overloaded".into(),
                }],
            )
            .on_prompt(
                "EMPTY",
                vec![Reply::StreamErrorEnvelope {
                    partial_text: String::new(),
                    code: "rate_limit_error".into(),
                    status: 429,
                    message: "Rate limited".into(),
                }],
            ),
    )
    .await
    .unwrap();
    let streamed = post_stream(&url(&server), &request("PARTIAL", true)).await;
    assert_eq!(streamed.status, 200);
    assert!(!streamed.aborted);
    let request_id = streamed.header("request-id").unwrap();
    assert!(request_id.starts_with("req_"));
    let events = streamed.events();
    let kinds = types(&events);
    assert_eq!(
        squash(&kinds),
        strings(&[
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta+",
            "error",
        ])
    );
    assert_eq!(deltas(&events, "text_delta", "text"), "Half an answ");
    assert_eq!(
        events.last().unwrap().json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
               "request_id": request_id})
    );
    assert_eq!(count(&kinds, "message_delta"), 0);
    assert_eq!(count(&kinds, "message_stop"), 0);

    let streamed = post_stream(&url(&server), &request("EMPTY", true)).await;
    let events = streamed.events();
    assert_eq!(types(&events), strings(&["message_start", "ping", "error"]));
    assert_eq!(
        events[2].json(),
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"},
               "request_id": streamed.header("request-id").unwrap()})
    );

    let (status, headers, body) = post_json(&url(&server), &request("PARTIAL", false)).await;
    assert_eq!(status, 529);
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
               "request_id": headers["request-id"].to_str().unwrap()})
    );
}

#[tokio::test]
async fn no_finish_reason_is_a_null_stop_reason_then_message_stop() {
    let server = server(vec![Reply::NoFinishReason(TEXT.into())]).await;
    let streamed = post_stream(&url(&server), &request("KEYWORD", true)).await;
    assert!(!streamed.aborted);
    let events = streamed.events();
    assert_eq!(
        squash(&types(&events)),
        strings(&[
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta+",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ])
    );
    assert_eq!(deltas(&events, "text_delta", "text"), TEXT);
    let message_delta = events[events.len() - 2].json();
    let delta = message_delta["delta"].as_object().unwrap();
    assert!(delta.contains_key("stop_reason"));
    assert!(delta["stop_reason"].is_null());
    assert_eq!(message_delta["usage"]["output_tokens"], MOCK_OUTPUT_TOKENS);

    let (status, _, message) = post_json(&url(&server), &request("KEYWORD", false)).await;
    assert_eq!(status, 200);
    assert_eq!(message["content"], json!([{"type": "text", "text": TEXT}]));
    let message = message.as_object().unwrap();
    assert!(message.contains_key("stop_reason"));
    assert!(message["stop_reason"].is_null());
}
