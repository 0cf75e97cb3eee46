//! OpenAI Responses wire format of the mock server, every reply variant.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mock_common;

use std::time::{Duration, Instant};

use agent_adaptor_testkit::mock::{
    MOCK_CACHED_INPUT_TOKENS, MOCK_INPUT_TOKENS, MOCK_OUTPUT_TOKENS, MOCK_REASONING_TOKENS,
    MockServer, Protocol, Reply, Script, ToolCallSpec,
};
use mock_common::{REASONING, TEXT, count, post_json, post_stream, squash, strings, within};
use serde_json::{Value, json};

/// A Codex-like request: developer instructions, an environment-context user
/// message, then the prompt as its own user message.
fn request(prompt: &str, stream: bool) -> Value {
    json!({
        "model": "mock-model",
        "stream": stream,
        "store": false,
        "instructions": "You are Codex.",
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "dev"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>..</environment_context>"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]},
        ],
        "tools": [],
    })
}

fn url(server: &MockServer) -> String {
    format!("{}/v1/responses", server.base_url())
}

fn types(events: &[mock_common::Event]) -> Vec<String> {
    events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let value = e.json();
            let kind = value["type"].as_str().unwrap().to_owned();
            assert_eq!(
                e.event.as_deref(),
                Some(kind.as_str()),
                "event name = data.type"
            );
            assert_eq!(value["sequence_number"], i, "sequence numbers count up");
            kind
        })
        .collect()
}

fn deltas(events: &[mock_common::Event], kind: &str) -> String {
    events
        .iter()
        .map(|e| e.json())
        .filter(|v| v["type"] == kind)
        .map(|v| v["delta"].as_str().unwrap().to_owned())
        .collect()
}

fn last(events: &[mock_common::Event]) -> Value {
    events.last().unwrap().json()
}

async fn server(replies: Vec<Reply>) -> MockServer {
    MockServer::start(Script::new().on_prompt("KEYWORD", replies))
        .await
        .unwrap()
}

const MESSAGE_EVENTS: [&str; 7] = [
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta+",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
];

#[tokio::test]
async fn text_streams_as_a_message_item() {
    let server = server(vec![Reply::Text(TEXT.into())]).await;
    let streamed = post_stream(&url(&server), &request("say KEYWORD", true)).await;
    assert_eq!(streamed.status, 200);
    assert_eq!(
        streamed.header("content-type").as_deref(),
        Some("text/event-stream")
    );
    assert_eq!(streamed.header("connection").as_deref(), Some("close"));
    assert!(!streamed.aborted);
    let events = streamed.events();
    let kinds = types(&events);
    let mut expected = strings(&["response.created", "response.in_progress"]);
    expected.extend(strings(&MESSAGE_EVENTS));
    assert_eq!(squash(&kinds), expected);
    assert!(count(&kinds, "response.output_text.delta") >= 2);
    assert_eq!(deltas(&events, "response.output_text.delta"), TEXT);

    let created = events[0].json();
    assert_eq!(created["response"]["status"], "in_progress");
    assert_eq!(created["response"]["model"], "mock-model");
    let response_id = created["response"]["id"].as_str().unwrap().to_owned();
    let added = events[2].json();
    assert_eq!(added["output_index"], 0);
    assert_eq!(added["item"]["type"], "message");
    assert_eq!(added["item"]["role"], "assistant");
    let item_id = added["item"]["id"].clone();
    for event in &events[3..events.len() - 1] {
        let value = event.json();
        if value.get("item_id").is_some() {
            assert_eq!(value["item_id"], item_id);
        }
    }
    let done = events[events.len() - 2].json();
    assert_eq!(
        done["item"]["content"],
        json!([{"type": "output_text", "text": TEXT, "annotations": []}])
    );
    assert_eq!(done["item"]["status"], "completed");

    let completed = last(&events);
    assert_eq!(completed["response"]["id"], response_id.as_str());
    assert_eq!(completed["response"]["status"], "completed");
    assert_eq!(completed["response"]["output"], json!([done["item"]]));
    let usage = &completed["response"]["usage"];
    assert_eq!(usage["input_tokens"], MOCK_INPUT_TOKENS);
    assert_eq!(
        usage["input_tokens_details"]["cached_tokens"],
        MOCK_CACHED_INPUT_TOKENS
    );
    assert_eq!(usage["output_tokens"], MOCK_OUTPUT_TOKENS);
    assert_eq!(usage["output_tokens_details"]["reasoning_tokens"], 0);
    assert_eq!(
        usage["total_tokens"],
        MOCK_INPUT_TOKENS + MOCK_OUTPUT_TOKENS
    );
}

#[tokio::test]
async fn reasoning_then_text_is_a_reasoning_item_then_a_message() {
    let server = server(vec![Reply::ReasoningThenText {
        reasoning: REASONING.into(),
        text: TEXT.into(),
    }])
    .await;
    let events = post_stream(&url(&server), &request("KEYWORD", true))
        .await
        .events();
    let kinds = types(&events);
    let mut expected = strings(&[
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta+",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
    ]);
    expected.extend(strings(&MESSAGE_EVENTS));
    assert_eq!(squash(&kinds), expected);
    assert_eq!(
        deltas(&events, "response.reasoning_summary_text.delta"),
        REASONING
    );
    assert_eq!(deltas(&events, "response.output_text.delta"), TEXT);
    for value in events.iter().map(|e| e.json()) {
        if value["type"] == "response.reasoning_summary_text.delta" {
            assert_eq!(value["summary_index"], 0);
        }
        if value["type"] == "response.output_text.delta" {
            assert_eq!(value["output_index"], 1);
        }
    }
    let completed = last(&events);
    let output = completed["response"]["output"].as_array().unwrap();
    assert_eq!(output.len(), 2);
    assert_eq!(output[0]["type"], "reasoning");
    assert_eq!(
        output[0]["summary"],
        json!([{"type": "summary_text", "text": REASONING}])
    );
    assert_eq!(output[1]["type"], "message");
    assert_eq!(
        completed["response"]["usage"]["output_tokens_details"]["reasoning_tokens"],
        MOCK_REASONING_TOKENS
    );
}

#[tokio::test]
async fn tool_call_then_the_tool_result_gets_the_next_reply() {
    let arguments = json!({"cmd": "echo hi-from-tool", "yield_time_ms": 1000});
    let server = server(vec![
        Reply::ToolCall {
            name: "exec_command".into(),
            arguments: arguments.clone(),
        },
        Reply::Text("Tool said hi.".into()),
    ])
    .await;
    let first = request("KEYWORD please", true);
    let events = post_stream(&url(&server), &first).await.events();
    let kinds = types(&events);
    assert_eq!(
        squash(&kinds),
        strings(&[
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.function_call_arguments.delta+",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ])
    );
    let added = events[2].json();
    assert_eq!(added["item"]["type"], "function_call");
    assert_eq!(added["item"]["arguments"], "");
    let streamed_args = deltas(&events, "response.function_call_arguments.delta");
    assert_eq!(
        serde_json::from_str::<Value>(&streamed_args).unwrap(),
        arguments
    );
    let item = events[events.len() - 2].json()["item"].clone();
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["name"], "exec_command");
    assert_eq!(item["id"], added["item"]["id"]);
    let call_id = item["call_id"].as_str().unwrap().to_owned();
    assert!(call_id.starts_with("call_"));
    let args_text = item["arguments"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(args_text).unwrap(), arguments);
    assert_eq!(last(&events)["response"]["output"], json!([item]));

    // Codex sends back the call and its output.
    let mut follow_up = first.clone();
    let input = follow_up["input"].as_array_mut().unwrap();
    input.push(item.clone());
    input.push(
        json!({"type": "function_call_output", "call_id": call_id, "output": "hi-from-tool\n"}),
    );
    let events = post_stream(&url(&server), &follow_up).await.events();
    assert_eq!(
        deltas(&events, "response.output_text.delta"),
        "Tool said hi."
    );
    assert_eq!(last(&events)["type"], "response.completed");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].protocol(), Some(Protocol::Responses));
    assert_eq!(requests[1].json().unwrap(), follow_up);
}

#[tokio::test]
async fn json_reply_is_its_compact_text() {
    let value = json!({"answer": "ok"});
    let server = server(vec![Reply::Json(value.clone())]).await;
    let events = post_stream(&url(&server), &request("KEYWORD", true))
        .await
        .events();
    let text = deltas(&events, "response.output_text.delta");
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
    assert_eq!(
        last(&events)["response"]["output"][0]["content"][0]["text"],
        value.to_string()
    );
}

#[tokio::test]
async fn http_errors_use_the_openai_error_shape() {
    let error = |status, retry_after| {
        vec![Reply::HttpError {
            status,
            body: Value::Null,
            retry_after,
        }]
    };
    let server = MockServer::start(
        Script::new()
            .on_prompt("E400", error(400, None))
            .on_prompt("E429", error(429, Some(2)))
            .on_prompt("E500", error(500, None)),
    )
    .await
    .unwrap();
    let (status, headers, body) = post_json(&url(&server), &request("E400", true)).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(body["error"]["message"].is_string());
    assert!(body["error"].get("code").is_some());
    assert_eq!(headers["x-should-retry"], "false");

    let (status, headers, body) = post_json(&url(&server), &request("E429", true)).await;
    assert_eq!(status, 429);
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    assert_eq!(headers["retry-after"], "2");

    let (status, _, body) = post_json(&url(&server), &request("E500", true)).await;
    assert_eq!(status, 500);
    assert_eq!(body["error"]["type"], "server_error");
}

#[tokio::test]
async fn stream_error_is_response_failed() {
    let server = server(vec![Reply::StreamError {
        message: "mock sse failure".into(),
    }])
    .await;
    let streamed = post_stream(&url(&server), &request("KEYWORD", true)).await;
    assert_eq!(streamed.status, 200);
    assert!(!streamed.aborted);
    let events = streamed.events();
    assert_eq!(
        types(&events),
        strings(&[
            "response.created",
            "response.in_progress",
            "response.failed"
        ])
    );
    let failed = last(&events);
    assert_eq!(failed["response"]["status"], "failed");
    assert_eq!(failed["response"]["error"]["message"], "mock sse failure");
    assert_eq!(failed["response"]["error"]["code"], "server_error");
}

#[tokio::test]
async fn cut_off_drops_the_connection_without_completed() {
    let server = server(vec![Reply::CutOff {
        partial_text: "partial answ".into(),
    }])
    .await;
    let streamed = post_stream(&url(&server), &request("KEYWORD", true)).await;
    assert!(streamed.aborted);
    let events = streamed.events();
    let kinds = types(&events);
    assert_eq!(
        squash(&kinds),
        strings(&[
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta+",
        ])
    );
    assert_eq!(
        deltas(&events, "response.output_text.delta"),
        "partial answ"
    );
    assert_eq!(count(&kinds, "response.completed"), 0);
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
    let events = post_stream(&url(&server), &request("KEYWORD", true))
        .await
        .events();
    let elapsed = started.elapsed();
    assert_eq!(deltas(&events, "response.output_text.delta"), TEXT);
    assert_eq!(last(&events)["type"], "response.completed");
    let gaps = u32::try_from(events.len() - 1).unwrap();
    assert!(elapsed >= delay * gaps, "{elapsed:?} < {gaps} x {delay:?}");
}

#[tokio::test]
async fn non_streaming_answers_are_response_objects() {
    let arguments = json!({"cmd": "ls"});
    let server = MockServer::start(
        Script::new()
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
                    name: "exec_command".into(),
                    arguments: arguments.clone(),
                }],
            )
            .on_prompt(
                "FAIL",
                vec![Reply::StreamError {
                    message: "boom".into(),
                }],
            ),
    )
    .await
    .unwrap();
    let mut body = request("THINK", false);
    body.as_object_mut().unwrap().remove("stream");
    let (status, _, response) = post_json(&url(&server), &body).await;
    assert_eq!(status, 200);
    assert_eq!(response["object"], "response");
    assert_eq!(response["status"], "completed");
    assert_eq!(response["output"][0]["type"], "reasoning");
    assert_eq!(response["output"][1]["content"][0]["text"], TEXT);
    assert_eq!(
        response["usage"]["total_tokens"],
        MOCK_INPUT_TOKENS + MOCK_OUTPUT_TOKENS
    );

    let (_, _, response) = post_json(&url(&server), &request("TOOL", false)).await;
    let call = &response["output"][0];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["name"], "exec_command");
    assert!(call["call_id"].is_string());
    assert_eq!(
        serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
        arguments
    );

    let (status, _, response) = post_json(&url(&server), &request("FAIL", false)).await;
    assert_eq!(status, 500);
    assert_eq!(response["error"]["message"], "boom");
}

#[tokio::test]
async fn the_path_without_v1_and_a_plain_string_input_work() {
    let server = server(vec![Reply::Text("short".into())]).await;
    let body = json!({"model": "m", "stream": true, "input": "a KEYWORD in a string"});
    let events = within(post_stream(
        &format!("{}/responses", server.base_url()),
        &body,
    ))
    .await
    .events();
    assert_eq!(deltas(&events, "response.output_text.delta"), "short");
    assert_eq!(server.requests()[0].path, "/responses");
    assert_eq!(server.requests()[0].protocol(), Some(Protocol::Responses));
}

// ---- parallel tool calls, error envelopes, missing finish reasons ----------

#[tokio::test]
async fn tool_calls_are_one_function_call_item_each() {
    let calls = vec![
        ToolCallSpec::new(
            "exec_command",
            json!({"cmd": "cat a.txt", "yield_time_ms": 500}),
        ),
        ToolCallSpec::new("exec_command", json!({"cmd": "cat b.txt"})),
    ];
    let server = server(vec![
        Reply::ToolCalls(calls.clone()),
        Reply::Text("Both read.".into()),
    ])
    .await;
    let first = request("KEYWORD", true);
    let streamed = post_stream(&url(&server), &first).await;
    assert!(!streamed.aborted);
    let events = streamed.events();
    let kinds = types(&events);
    let per_call = [
        "response.output_item.added",
        "response.function_call_arguments.delta+",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ];
    let mut expected = strings(&["response.created", "response.in_progress"]);
    expected.extend(strings(&per_call));
    expected.extend(strings(&per_call));
    expected.push("response.completed".to_owned());
    assert_eq!(squash(&kinds), expected);

    let values: Vec<Value> = events.iter().map(|e| e.json()).collect();
    let added: Vec<&Value> = values
        .iter()
        .filter(|v| v["type"] == "response.output_item.added")
        .collect();
    let done: Vec<Value> = values
        .iter()
        .filter(|v| v["type"] == "response.output_item.done")
        .map(|v| v["item"].clone())
        .collect();
    assert_eq!(added.len(), 2);
    for (output_index, ((added, item), call)) in added.iter().zip(&done).zip(&calls).enumerate() {
        assert_eq!(added["output_index"], output_index);
        assert_eq!(added["item"]["type"], "function_call");
        assert_eq!(added["item"]["status"], "in_progress");
        assert_eq!(added["item"]["arguments"], "");
        assert_eq!(added["item"]["name"], call.name.as_str());
        let item_id = added["item"]["id"].as_str().unwrap();
        // The deltas of this item rebuild its arguments.
        let streamed_args: String = values
            .iter()
            .filter(|v| {
                v["type"] == "response.function_call_arguments.delta" && v["item_id"] == item_id
            })
            .map(|v| {
                assert_eq!(v["output_index"], output_index);
                v["delta"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(
            serde_json::from_str::<Value>(&streamed_args).unwrap(),
            call.arguments
        );
        let args_done = values
            .iter()
            .find(|v| {
                v["type"] == "response.function_call_arguments.done" && v["item_id"] == item_id
            })
            .unwrap();
        assert_eq!(args_done["arguments"], streamed_args.as_str());
        assert_eq!(args_done["name"], call.name.as_str());
        assert_eq!(item["id"], item_id);
        assert_eq!(item["status"], "completed");
        assert_eq!(item["call_id"], added["item"]["call_id"]);
        assert_eq!(item["arguments"], streamed_args.as_str());
    }
    assert_ne!(done[0]["call_id"], done[1]["call_id"]);
    let completed = last(&events);
    assert_eq!(completed["response"]["status"], "completed");
    assert_eq!(completed["response"]["output"], Value::Array(done.clone()));

    // Codex-style follow-up: both calls, then both outputs — one assistant turn.
    let mut follow_up = first.clone();
    let input = follow_up["input"].as_array_mut().unwrap();
    input.extend(done.iter().cloned());
    for item in &done {
        input.push(
            json!({"type": "function_call_output", "call_id": item["call_id"], "output": "ok"}),
        );
    }
    let events = post_stream(&url(&server), &follow_up).await.events();
    assert_eq!(deltas(&events, "response.output_text.delta"), "Both read.");
    assert_eq!(
        server.requests()[1].conversation().unwrap().assistant_turns,
        1
    );

    let (status, _, response) = post_json(&url(&server), &request("KEYWORD", false)).await;
    assert_eq!(status, 200);
    let output = response["output"].as_array().unwrap();
    assert_eq!(output.len(), 2);
    for (item, call) in output.iter().zip(&calls) {
        assert_eq!(item["type"], "function_call");
        assert_eq!(item["name"], call.name.as_str());
        let args = item["arguments"].as_str().unwrap();
        assert_eq!(serde_json::from_str::<Value>(args).unwrap(), call.arguments);
    }
}

#[tokio::test]
async fn stream_error_envelope_is_an_error_event_with_code_and_status() {
    let server = MockServer::start(
        Script::new()
            .on_prompt(
                "PARTIAL",
                vec![Reply::StreamErrorEnvelope {
                    partial_text: "Half an answ".into(),
                    code: "rate_limit_exceeded".into(),
                    status: 429,
                    message: "Too many tokens".into(),
                }],
            )
            .on_prompt(
                "EMPTY",
                vec![Reply::StreamErrorEnvelope {
                    partial_text: String::new(),
                    code: "server_is_overloaded".into(),
                    status: 503,
                    message: "Overloaded".into(),
                }],
            ),
    )
    .await
    .unwrap();
    let streamed = post_stream(&url(&server), &request("PARTIAL", true)).await;
    assert_eq!(streamed.status, 200);
    assert!(!streamed.aborted);
    let events = streamed.events();
    let kinds = types(&events);
    assert_eq!(
        squash(&kinds),
        strings(&[
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta+",
            "error",
        ])
    );
    assert_eq!(
        deltas(&events[..events.len() - 1], "response.output_text.delta"),
        "Half an answ"
    );
    let error = last(&events);
    assert_eq!(
        error,
        json!({
            "type": "error",
            "code": "rate_limit_exceeded",
            "message": "Too many tokens",
            "param": null,
            "sequence_number": events.len() - 1,
            "status": 429,
        })
    );
    assert_eq!(count(&kinds, "response.completed"), 0);
    assert_eq!(count(&kinds, "response.failed"), 0);

    let events = post_stream(&url(&server), &request("EMPTY", true))
        .await
        .events();
    assert_eq!(
        types(&events),
        strings(&["response.created", "response.in_progress", "error"])
    );
    assert_eq!(last(&events)["code"], "server_is_overloaded");
    assert_eq!(last(&events)["status"], 503);
    assert_eq!(last(&events)["sequence_number"], 2);

    let (status, _, body) = post_json(&url(&server), &request("PARTIAL", false)).await;
    assert_eq!(status, 429);
    assert_eq!(
        body,
        json!({"error": {"message": "Too many tokens", "type": "rate_limit_exceeded",
                         "param": null, "code": "rate_limit_exceeded"}})
    );
}

#[tokio::test]
async fn no_finish_reason_completes_without_status_or_incomplete_details() {
    let server = server(vec![Reply::NoFinishReason(TEXT.into())]).await;
    let streamed = post_stream(&url(&server), &request("KEYWORD", true)).await;
    assert!(!streamed.aborted);
    let events = streamed.events();
    let mut expected = strings(&["response.created", "response.in_progress"]);
    expected.extend(strings(&MESSAGE_EVENTS));
    assert_eq!(squash(&types(&events)), expected);
    assert_eq!(deltas(&events, "response.output_text.delta"), TEXT);
    let completed = last(&events);
    let response = completed["response"].as_object().unwrap();
    assert!(!response.contains_key("status"), "{completed}");
    assert!(!response.contains_key("incomplete_details"), "{completed}");
    assert_eq!(response["output"][0]["content"][0]["text"], TEXT);
    assert_eq!(response["usage"]["output_tokens"], MOCK_OUTPUT_TOKENS);

    let (status, _, body) = post_json(&url(&server), &request("KEYWORD", false)).await;
    assert_eq!(status, 200);
    let body = body.as_object().unwrap();
    assert_eq!(body["object"], "response");
    assert!(!body.contains_key("status"));
    assert!(!body.contains_key("incomplete_details"));
    assert_eq!(body["output"][0]["content"][0]["text"], TEXT);
}
