//! OpenAI Chat Completions wire format of the mock server, every reply
//! variant.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mock_common;

use std::time::{Duration, Instant};

use agent_adaptor_testkit::mock::{
    MOCK_CACHED_INPUT_TOKENS, MOCK_INPUT_TOKENS, MOCK_OUTPUT_TOKENS, MOCK_REASONING_TOKENS,
    MockServer, Protocol, Reply, Script, ToolCallSpec,
};
use mock_common::{Event, REASONING, TEXT, count, post_json, post_stream, squash, strings, within};
use serde_json::{Value, json};

/// A CodeBuddy-like request: system message, then a user message whose
/// content is an array of text parts (a reminder, then the prompt).
fn request(prompt: &str, stream: bool, include_usage: bool) -> Value {
    let mut body = json!({
        "model": "default-model",
        "stream": stream,
        "messages": [
            {"role": "system", "content": "You are CodeBuddy Code."},
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>context</system-reminder>"},
                {"type": "text", "text": prompt},
            ]},
        ],
    });
    if include_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

fn url(server: &MockServer) -> String {
    format!("{}/chat/completions", server.base_url())
}

/// A name per chunk: `role`, `reasoning`, `content`, `tool_call_start`,
/// `tool_call_args`, `finish:<reason>`, `usage`, `error`, `[DONE]`.
fn kinds(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|event| {
            assert_eq!(event.event, None, "chat chunks are data-only");
            if event.data == "[DONE]" {
                return "[DONE]".to_owned();
            }
            let value = event.json();
            if value.get("error").is_some() {
                return "error".to_owned();
            }
            assert_eq!(value["object"], "chat.completion.chunk");
            let choices = value["choices"].as_array().unwrap();
            if choices.is_empty() {
                assert!(value["usage"].is_object());
                return "usage".to_owned();
            }
            let choice = &choices[0];
            assert_eq!(choice["index"], 0);
            let delta = &choice["delta"];
            if let Some(reason) = choice["finish_reason"].as_str() {
                return format!("finish:{reason}");
            }
            if let Some(calls) = delta.get("tool_calls") {
                return if calls[0].get("id").is_some() {
                    "tool_call_start".to_owned()
                } else {
                    "tool_call_args".to_owned()
                };
            }
            if delta.get("role").is_some() {
                return "role".to_owned();
            }
            if delta.get("reasoning_content").is_some() {
                return "reasoning".to_owned();
            }
            if delta.get("content").is_some() {
                return "content".to_owned();
            }
            panic!("unexpected chunk {value}");
        })
        .collect()
}

fn joined(events: &[Event], field: &str) -> String {
    events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter_map(|e| {
            e.json()["choices"][0]["delta"][field]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

async fn server(replies: Vec<Reply>) -> MockServer {
    MockServer::start(Script::new().on_prompt("KEYWORD", replies))
        .await
        .unwrap()
}

#[tokio::test]
async fn text_streams_as_content_deltas_then_usage_then_done() {
    let server = server(vec![Reply::Text(TEXT.into())]).await;
    let streamed = post_stream(&url(&server), &request("KEYWORD", true, true)).await;
    assert_eq!(streamed.status, 200);
    assert_eq!(
        streamed.header("content-type").as_deref(),
        Some("text/event-stream")
    );
    assert_eq!(streamed.header("connection").as_deref(), Some("close"));
    assert!(!streamed.aborted);
    let events = streamed.events();
    let names = kinds(&events);
    assert_eq!(
        squash(&names),
        strings(&["role", "content+", "finish:stop", "usage", "[DONE]"])
    );
    assert_eq!(joined(&events, "content"), TEXT);
    let first = events[0].json();
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(first["model"], "default-model");
    // Every chunk has the same id; with include_usage the others carry null usage.
    let id = first["id"].clone();
    for event in &events[..events.len() - 1] {
        let value = event.json();
        assert_eq!(value["id"], id);
        if value["choices"].as_array().unwrap().is_empty() {
            continue;
        }
        assert!(value["usage"].is_null());
    }
    let usage = &events[events.len() - 2].json()["usage"];
    assert_eq!(usage["prompt_tokens"], MOCK_INPUT_TOKENS);
    assert_eq!(usage["completion_tokens"], MOCK_OUTPUT_TOKENS);
    assert_eq!(
        usage["total_tokens"],
        MOCK_INPUT_TOKENS + MOCK_OUTPUT_TOKENS
    );
    assert_eq!(
        usage["prompt_tokens_details"]["cached_tokens"],
        MOCK_CACHED_INPUT_TOKENS
    );
}

/// `text_chunk_chars` sets the delta size (default 8 characters); the
/// script's JSON form carries it.
#[tokio::test]
async fn the_script_sets_the_size_of_text_deltas() {
    let text = "abcdefghij".repeat(10);
    let script: Script = serde_json::from_value(json!({
        "rules": [{"keyword": "KEYWORD", "replies": [text.clone()]}],
        "text_chunk_chars": 30,
    }))
    .unwrap();
    assert_eq!(
        script,
        Script::new()
            .on_prompt("KEYWORD", vec![Reply::Text(text.clone())])
            .text_chunk_chars(30)
    );
    let server = MockServer::start(script).await.unwrap();
    let events = post_stream(&url(&server), &request("KEYWORD", true, false))
        .await
        .events();
    let sizes: Vec<usize> = events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter_map(|e| {
            e.json()["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::len)
        })
        .collect();
    // The first chunk carries the role and empty content.
    assert_eq!(sizes, [0, 30, 30, 30, 10]);
    assert_eq!(joined(&events, "content"), text);
}

#[tokio::test]
async fn without_include_usage_there_is_no_usage_chunk() {
    let server = server(vec![Reply::Text(TEXT.into())]).await;
    let events = post_stream(&url(&server), &request("KEYWORD", true, false))
        .await
        .events();
    assert_eq!(
        squash(&kinds(&events)),
        strings(&["role", "content+", "finish:stop", "[DONE]"])
    );
    assert!(events[0].json().get("usage").is_none());
}

#[tokio::test]
async fn reasoning_then_text_is_reasoning_content_then_content() {
    let server = server(vec![Reply::ReasoningThenText {
        reasoning: REASONING.into(),
        text: TEXT.into(),
    }])
    .await;
    let events = post_stream(&url(&server), &request("KEYWORD", true, true))
        .await
        .events();
    assert_eq!(
        squash(&kinds(&events)),
        strings(&[
            "role",
            "reasoning+",
            "content+",
            "finish:stop",
            "usage",
            "[DONE]"
        ])
    );
    assert_eq!(joined(&events, "reasoning_content"), REASONING);
    assert_eq!(joined(&events, "content"), TEXT);
    let usage = &events[events.len() - 2].json()["usage"];
    assert_eq!(
        usage["completion_tokens_details"]["reasoning_tokens"],
        MOCK_REASONING_TOKENS
    );
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
    let first = request("KEYWORD", true, true);
    let events = post_stream(&url(&server), &first).await.events();
    assert_eq!(
        squash(&kinds(&events)),
        strings(&[
            "tool_call_start",
            "tool_call_args+",
            "finish:tool_calls",
            "usage",
            "[DONE]"
        ])
    );
    let start = events[0].json();
    let delta = &start["choices"][0]["delta"];
    assert_eq!(delta["role"], "assistant");
    assert!(delta["content"].is_null());
    let call = &delta["tool_calls"][0];
    assert_eq!(call["index"], 0);
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "Bash");
    assert_eq!(call["function"]["arguments"], "");
    let call_id = call["id"].as_str().unwrap().to_owned();
    let streamed_args: String = events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter_map(|e| {
            e.json()["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    for event in &events[1..events.len() - 3] {
        assert_eq!(
            event.json()["choices"][0]["delta"]["tool_calls"][0]["index"],
            0
        );
    }
    assert_eq!(
        serde_json::from_str::<Value>(&streamed_args).unwrap(),
        arguments
    );

    let mut follow_up = first.clone();
    let messages = follow_up["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "Bash", "arguments": streamed_args}},
    ]}));
    messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": "hi-from-tool"}));
    let events = post_stream(&url(&server), &follow_up).await.events();
    assert_eq!(joined(&events, "content"), "Tool said hi.");
    assert!(kinds(&events).contains(&"finish:stop".to_owned()));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].protocol(), Some(Protocol::ChatCompletions));
    assert_eq!(requests[1].json().unwrap(), follow_up);
}

#[tokio::test]
async fn json_reply_is_its_compact_text() {
    let value = json!({"answer": "ok"});
    let server = server(vec![Reply::Json(value.clone())]).await;
    let events = post_stream(&url(&server), &request("KEYWORD", true, false))
        .await
        .events();
    let text = joined(&events, "content");
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
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
            .on_prompt("E429", error(429, Some(3)))
            .on_prompt("E500", error(500, None)),
    )
    .await
    .unwrap();
    let (status, _, body) = post_json(&url(&server), &request("E400", true, true)).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let (status, headers, body) = post_json(&url(&server), &request("E429", true, true)).await;
    assert_eq!(status, 429);
    assert_eq!(headers["retry-after"], "3");
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    let (status, headers, body) = post_json(&url(&server), &request("E500", true, true)).await;
    assert_eq!(status, 500);
    assert_eq!(headers["x-should-retry"], "false");
    assert_eq!(body["error"]["type"], "server_error");
}

#[tokio::test]
async fn stream_error_is_an_error_chunk_without_done() {
    let server = server(vec![Reply::StreamError {
        message: "mock sse failure".into(),
    }])
    .await;
    let streamed = post_stream(&url(&server), &request("KEYWORD", true, true)).await;
    assert_eq!(streamed.status, 200);
    assert!(!streamed.aborted);
    let events = streamed.events();
    assert_eq!(kinds(&events), strings(&["role", "error"]));
    assert_eq!(events[1].json()["error"]["message"], "mock sse failure");
}

#[tokio::test]
async fn cut_off_drops_the_connection_without_finish_or_done() {
    let server = server(vec![Reply::CutOff {
        partial_text: "partial answ".into(),
    }])
    .await;
    let streamed = post_stream(&url(&server), &request("KEYWORD", true, true)).await;
    assert!(streamed.aborted);
    let events = streamed.events();
    assert_eq!(squash(&kinds(&events)), strings(&["role", "content+"]));
    assert_eq!(joined(&events, "content"), "partial answ");
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
    let events = post_stream(&url(&server), &request("KEYWORD", true, true))
        .await
        .events();
    let elapsed = started.elapsed();
    assert_eq!(joined(&events, "content"), TEXT);
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let gaps = u32::try_from(events.len() - 1).unwrap();
    assert!(elapsed >= delay * gaps, "{elapsed:?} < {gaps} x {delay:?}");

    // Without streaming the answer waits as long as the text pieces would.
    let started = Instant::now();
    let (status, _, body) = post_json(&url(&server), &request("KEYWORD", false, false)).await;
    assert_eq!(status, 200);
    assert_eq!(body["choices"][0]["message"]["content"], TEXT);
    assert!(started.elapsed() >= delay * 2);
}

#[tokio::test]
async fn non_streaming_answers_are_chat_completion_objects() {
    let arguments = json!({"command": "ls"});
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
                    name: "Bash".into(),
                    arguments: arguments.clone(),
                }],
            )
            .on_prompt(
                "CUT",
                vec![Reply::CutOff {
                    partial_text: "partial".into(),
                }],
            ),
    )
    .await
    .unwrap();
    let mut body = request("THINK", false, false);
    body.as_object_mut().unwrap().remove("stream");
    let (status, _, completion) = post_json(&url(&server), &body).await;
    assert_eq!(status, 200);
    assert_eq!(completion["object"], "chat.completion");
    let message = &completion["choices"][0]["message"];
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["content"], TEXT);
    assert_eq!(message["reasoning_content"], REASONING);
    assert_eq!(completion["choices"][0]["finish_reason"], "stop");
    assert_eq!(completion["usage"]["prompt_tokens"], MOCK_INPUT_TOKENS);

    let (_, _, completion) = post_json(&url(&server), &request("TOOL", false, false)).await;
    let message = &completion["choices"][0]["message"];
    assert!(message["content"].is_null());
    let call = &message["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "Bash");
    assert_eq!(
        serde_json::from_str::<Value>(call["function"]["arguments"].as_str().unwrap()).unwrap(),
        arguments
    );
    assert_eq!(completion["choices"][0]["finish_reason"], "tool_calls");

    let response = within(
        reqwest::Client::new()
            .post(url(&server))
            .json(&request("CUT", false, false))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    assert!(within(response.bytes()).await.is_err(), "a truncated body");
}

#[tokio::test]
async fn the_v1_path_and_string_content_work() {
    let server = server(vec![Reply::Text("short".into())]).await;
    let body =
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "KEYWORD"}]});
    let events = post_stream(&format!("{}/v1/chat/completions", server.base_url()), &body)
        .await
        .events();
    assert_eq!(joined(&events, "content"), "short");
    assert_eq!(server.requests()[0].path, "/v1/chat/completions");
}

// ---- parallel tool calls, error envelopes, missing finish reasons ----------

/// Three calls whose argument texts are several pieces long.
fn three_calls() -> Vec<ToolCallSpec> {
    vec![
        ToolCallSpec::new("read_file", json!({"path": "src/one.rs", "limit": 100})),
        ToolCallSpec::new("grep", json!({"pattern": "fn main", "path": "."})),
        ToolCallSpec::new("list", json!({})),
    ]
}

#[tokio::test]
async fn tool_calls_stream_n_indexed_calls_with_interleaved_arguments() {
    let calls = three_calls();
    let server = server(vec![
        Reply::ToolCalls(calls.clone()),
        Reply::Text("Read them all.".into()),
    ])
    .await;
    let first = request("KEYWORD", true, true);
    let streamed = post_stream(&url(&server), &first).await;
    assert!(!streamed.aborted);
    let events = streamed.events();
    let names = kinds(&events);
    assert_eq!(
        squash(&names),
        strings(&[
            "tool_call_start+",
            "tool_call_args+",
            "finish:tool_calls",
            "usage",
            "[DONE]"
        ])
    );
    assert_eq!(count(&names, "tool_call_start"), 3);
    let values: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| e.json())
        .collect();

    // One start chunk per call, indexes 0..3, each with id/type/name and
    // empty arguments; only the first carries the role.
    let mut ids = Vec::new();
    for (index, call) in calls.iter().enumerate() {
        let delta = &values[index]["choices"][0]["delta"];
        let entries = delta["tool_calls"].as_array().unwrap();
        assert_eq!(entries.len(), 1);
        let entry = &entries[0];
        assert_eq!(entry["index"], index);
        assert_eq!(entry["type"], "function");
        assert_eq!(entry["function"]["name"], call.name.as_str());
        assert_eq!(entry["function"]["arguments"], "");
        ids.push(entry["id"].as_str().unwrap().to_owned());
        if index == 0 {
            assert_eq!(delta["role"], "assistant");
            assert!(delta["content"].is_null());
        } else {
            assert!(delta.get("role").is_none());
        }
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "distinct call ids");

    // Argument pieces: routed by index they rebuild each call's arguments;
    // they arrive round-robin, not call after call.
    let mut rebuilt = vec![String::new(); calls.len()];
    let mut order = Vec::new();
    for value in &values[calls.len()..] {
        let Some(entries) = value["choices"][0]["delta"]["tool_calls"].as_array() else {
            continue;
        };
        let entry = &entries[0];
        assert!(entry.get("id").is_none());
        let index = usize::try_from(entry["index"].as_u64().unwrap()).unwrap();
        rebuilt[index].push_str(entry["function"]["arguments"].as_str().unwrap());
        order.push(index);
    }
    for (text, call) in rebuilt.iter().zip(&calls) {
        assert_eq!(serde_json::from_str::<Value>(text).unwrap(), call.arguments);
    }
    assert_eq!(
        &order[..3],
        &[0, 1, 2],
        "the first round has a piece of each call"
    );
    assert!(
        order.windows(2).any(|w| w[1] < w[0]),
        "interleaved: {order:?}"
    );
    let finish = &values[values.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(finish["choices"][0]["delta"], json!({}));

    // The client sends back one assistant message with all calls and one
    // tool message per call: one assistant turn, so the next reply.
    let mut follow_up = first.clone();
    let messages = follow_up["messages"].as_array_mut().unwrap();
    let starts: Vec<&Value> = values[..3]
        .iter()
        .map(|v| &v["choices"][0]["delta"]["tool_calls"][0])
        .collect();
    messages.push(
        json!({"role": "assistant", "content": null, "tool_calls": starts
        .iter()
        .zip(&rebuilt)
        .map(|(start, args)| json!({"id": start["id"], "type": "function",
            "function": {"name": start["function"]["name"], "arguments": args}}))
        .collect::<Vec<_>>()}),
    );
    for start in &starts {
        messages.push(json!({"role": "tool", "tool_call_id": start["id"], "content": "ok"}));
    }
    let events = post_stream(&url(&server), &follow_up).await.events();
    assert_eq!(joined(&events, "content"), "Read them all.");
    assert_eq!(
        server.requests()[1].conversation().unwrap().assistant_turns,
        1
    );

    // Without streaming: one message with the three calls.
    let (status, _, completion) = post_json(&url(&server), &request("KEYWORD", false, false)).await;
    assert_eq!(status, 200);
    let message = &completion["choices"][0]["message"];
    assert!(message["content"].is_null());
    let listed = message["tool_calls"].as_array().unwrap();
    assert_eq!(listed.len(), 3);
    for (entry, call) in listed.iter().zip(&calls) {
        assert_eq!(entry["type"], "function");
        assert!(entry["id"].as_str().unwrap().starts_with("call_"));
        assert_eq!(entry["function"]["name"], call.name.as_str());
        let args = entry["function"]["arguments"].as_str().unwrap();
        assert_eq!(serde_json::from_str::<Value>(args).unwrap(), call.arguments);
    }
    assert_eq!(completion["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn stream_error_envelope_is_the_gateway_error_chunk_after_the_partial_text() {
    let server = MockServer::start(
        Script::new()
            .on_prompt(
                "PARTIAL",
                vec![Reply::StreamErrorEnvelope {
                    partial_text: "Half an answ".into(),
                    code: "provider_overloaded".into(),
                    status: 502,
                    message: "Upstream provider died".into(),
                }],
            )
            .on_prompt(
                "EMPTY",
                vec![Reply::StreamErrorEnvelope {
                    partial_text: String::new(),
                    code: "rate_limit_exceeded".into(),
                    status: 429,
                    message: "Slow down".into(),
                }],
            ),
    )
    .await
    .unwrap();
    let streamed = post_stream(&url(&server), &request("PARTIAL", true, true)).await;
    assert_eq!(streamed.status, 200);
    assert!(!streamed.aborted, "the stream ends cleanly after the error");
    let events = streamed.events();
    assert_eq!(
        squash(&kinds(&events)),
        strings(&["role", "content+", "error"])
    );
    assert_eq!(
        joined(&events[..events.len() - 1], "content"),
        "Half an answ"
    );
    assert_eq!(
        events.last().unwrap().json(),
        json!({"error": {"message": "Upstream provider died", "type": "provider_overloaded", "code": 502}})
    );
    assert!(events.iter().all(|e| e.data != "[DONE]"));

    let events = post_stream(&url(&server), &request("EMPTY", true, false))
        .await
        .events();
    assert_eq!(kinds(&events), strings(&["role", "error"]));
    assert_eq!(
        events[1].json(),
        json!({"error": {"message": "Slow down", "type": "rate_limit_exceeded", "code": 429}})
    );

    // Without streaming: the status, with the same error object.
    let (status, _, body) = post_json(&url(&server), &request("EMPTY", false, false)).await;
    assert_eq!(status, 429);
    assert_eq!(
        body,
        json!({"error": {"message": "Slow down", "type": "rate_limit_exceeded", "code": 429}})
    );
}

#[tokio::test]
async fn no_finish_reason_sends_no_finish_chunk_but_usage_and_done() {
    let server = server(vec![Reply::NoFinishReason(TEXT.into())]).await;
    let streamed = post_stream(&url(&server), &request("KEYWORD", true, true)).await;
    assert!(!streamed.aborted);
    let events = streamed.events();
    assert_eq!(
        squash(&kinds(&events)),
        strings(&["role", "content+", "usage", "[DONE]"])
    );
    assert_eq!(joined(&events, "content"), TEXT);
    for event in &events[..events.len() - 1] {
        let value = event.json();
        for choice in value["choices"].as_array().unwrap() {
            assert!(choice["finish_reason"].is_null(), "{value}");
        }
    }
    let usage = &events[events.len() - 2].json()["usage"];
    assert_eq!(usage["completion_tokens"], MOCK_OUTPUT_TOKENS);

    let (status, _, completion) = post_json(&url(&server), &request("KEYWORD", false, false)).await;
    assert_eq!(status, 200);
    assert_eq!(completion["choices"][0]["message"]["content"], TEXT);
    let choice = completion["choices"][0].as_object().unwrap();
    assert!(choice["finish_reason"].is_null());
}
