//! Gemini wire format of the mock server, every reply variant.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mock_common;

use std::time::{Duration, Instant};

use agent_adaptor_testkit::mock::{
    MOCK_CACHED_INPUT_TOKENS, MOCK_INPUT_TOKENS, MOCK_OUTPUT_TOKENS, MOCK_REASONING_TOKENS,
    MockServer, Protocol, Reply, Script, ToolCallSpec,
};
use mock_common::{Event, REASONING, TEXT, post_json, post_stream, squash, strings, within};
use serde_json::{Value, json};

/// A Gemini-CLI-like request: one user content with the session context and
/// the prompt as separate parts.
fn request(prompt: &str) -> Value {
    json!({
        "contents": [{
            "role": "user",
            "parts": [
                {"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"},
                {"text": prompt},
            ],
        }],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}]},
        "generationConfig": {"temperature": 1, "thinkingConfig": {"includeThoughts": true}},
    })
}

fn stream_url(server: &MockServer) -> String {
    format!(
        "{}/v1beta/models/gemini-mock:streamGenerateContent?alt=sse",
        server.base_url()
    )
}

fn generate_url(server: &MockServer) -> String {
    format!(
        "{}/v1beta/models/gemini-mock:generateContent",
        server.base_url()
    )
}

/// A name per chunk: `thought`, `text`, `functionCall`, `error`, with
/// `:STOP` when the chunk carries the finish reason.
fn kinds(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|event| {
            assert_eq!(event.event, None, "gemini chunks are data-only");
            let value = event.json();
            if value.get("error").is_some() {
                return "error".to_owned();
            }
            let candidate = &value["candidates"][0];
            assert_eq!(candidate["content"]["role"], "model");
            assert_eq!(candidate["index"], 0);
            assert_eq!(value["modelVersion"], "gemini-mock");
            assert!(value["usageMetadata"]["promptTokenCount"].is_u64());
            let parts = candidate["content"]["parts"].as_array().unwrap();
            assert_eq!(parts.len(), 1);
            let part = &parts[0];
            let mut name = if part.get("functionCall").is_some() {
                "functionCall".to_owned()
            } else if part["thought"] == true {
                "thought".to_owned()
            } else {
                assert!(part["text"].is_string());
                "text".to_owned()
            };
            if let Some(reason) = candidate.get("finishReason") {
                name.push(':');
                name.push_str(reason.as_str().unwrap());
            }
            name
        })
        .collect()
}

fn texts(events: &[Event], thought: bool) -> String {
    events
        .iter()
        .map(|e| e.json())
        .flat_map(|v| {
            v["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|part| (part["thought"] == true) == thought)
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

async fn server(replies: Vec<Reply>) -> MockServer {
    MockServer::start(Script::new().on_prompt("KEYWORD", replies))
        .await
        .unwrap()
}

#[tokio::test]
async fn text_streams_as_text_parts_with_stop_and_usage_last() {
    let server = server(vec![Reply::Text(TEXT.into())]).await;
    let streamed = post_stream(&stream_url(&server), &request("say KEYWORD")).await;
    assert_eq!(streamed.status, 200);
    assert_eq!(
        streamed.header("content-type").as_deref(),
        Some("text/event-stream")
    );
    assert_eq!(streamed.header("connection").as_deref(), Some("close"));
    assert!(!streamed.aborted);
    let events = streamed.events();
    let names = kinds(&events);
    assert!(names.len() >= 2, "several chunks");
    assert_eq!(squash(&names), strings(&["text+", "text:STOP"]));
    assert_eq!(texts(&events, false), TEXT);
    let last = events.last().unwrap().json();
    let usage = &last["usageMetadata"];
    assert_eq!(usage["promptTokenCount"], MOCK_INPUT_TOKENS);
    assert_eq!(usage["candidatesTokenCount"], MOCK_OUTPUT_TOKENS);
    assert_eq!(
        usage["totalTokenCount"],
        MOCK_INPUT_TOKENS + MOCK_OUTPUT_TOKENS
    );
    assert_eq!(usage["cachedContentTokenCount"], MOCK_CACHED_INPUT_TOKENS);
    assert!(last["responseId"].is_string());
}

#[tokio::test]
async fn reasoning_then_text_is_thought_parts_then_text() {
    let server = server(vec![Reply::ReasoningThenText {
        reasoning: REASONING.into(),
        text: TEXT.into(),
    }])
    .await;
    let events = post_stream(&stream_url(&server), &request("KEYWORD"))
        .await
        .events();
    assert_eq!(
        squash(&kinds(&events)),
        strings(&["thought+", "text+", "text:STOP"])
    );
    assert_eq!(texts(&events, true), REASONING);
    assert_eq!(texts(&events, false), TEXT);
    let usage = &events.last().unwrap().json()["usageMetadata"];
    assert_eq!(usage["thoughtsTokenCount"], MOCK_REASONING_TOKENS);
    assert_eq!(
        usage["candidatesTokenCount"],
        MOCK_OUTPUT_TOKENS - MOCK_REASONING_TOKENS
    );
}

#[tokio::test]
async fn tool_call_then_the_function_response_gets_the_next_reply() {
    let arguments = json!({"command": "echo hi-from-tool", "description": "say hi"});
    let server = server(vec![
        Reply::ToolCall {
            name: "run_shell_command".into(),
            arguments: arguments.clone(),
        },
        Reply::Text("Tool said hi.".into()),
    ])
    .await;
    let first = request("KEYWORD please");
    let events = post_stream(&stream_url(&server), &first).await.events();
    assert_eq!(kinds(&events), strings(&["functionCall:STOP"]));
    let part = events[0].json()["candidates"][0]["content"]["parts"][0].clone();
    assert_eq!(
        part,
        json!({"functionCall": {"name": "run_shell_command", "args": arguments}})
    );

    let mut follow_up = first.clone();
    let contents = follow_up["contents"].as_array_mut().unwrap();
    contents.push(json!({"role": "model", "parts": [part]}));
    contents.push(json!({"role": "user", "parts": [
        {"functionResponse": {"name": "run_shell_command", "response": {"output": "hi-from-tool"}}},
    ]}));
    let events = post_stream(&stream_url(&server), &follow_up).await.events();
    assert_eq!(texts(&events, false), "Tool said hi.");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].protocol(), Some(Protocol::Gemini));
    assert_eq!(
        requests[0].path,
        "/v1beta/models/gemini-mock:streamGenerateContent"
    );
    assert_eq!(requests[0].query.as_deref(), Some("alt=sse"));
    assert_eq!(requests[1].json().unwrap(), follow_up);
}

#[tokio::test]
async fn json_reply_is_its_compact_text() {
    let value = json!({"answer": "ok"});
    let server = server(vec![Reply::Json(value.clone())]).await;
    let events = post_stream(&stream_url(&server), &request("KEYWORD"))
        .await
        .events();
    assert_eq!(
        serde_json::from_str::<Value>(&texts(&events, false)).unwrap(),
        value
    );
}

#[tokio::test]
async fn http_errors_use_the_google_error_shape() {
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
            .on_prompt("E429", error(429, Some(1)))
            .on_prompt("E500", error(500, None)),
    )
    .await
    .unwrap();
    let (status, _, body) = post_json(&stream_url(&server), &request("E400")).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], 400);
    assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
    assert!(body["error"]["message"].is_string());
    let (status, headers, body) = post_json(&stream_url(&server), &request("E429")).await;
    assert_eq!(status, 429);
    assert_eq!(headers["retry-after"], "1");
    assert_eq!(body["error"]["status"], "RESOURCE_EXHAUSTED");
    let (status, _, body) = post_json(&generate_url(&server), &request("E500")).await;
    assert_eq!(status, 500);
    assert_eq!(body["error"]["status"], "INTERNAL");
}

#[tokio::test]
async fn stream_error_is_a_bare_error_object_in_a_200_stream() {
    let server = server(vec![Reply::StreamError {
        message: "mock sse failure".into(),
    }])
    .await;
    let streamed = post_stream(&stream_url(&server), &request("KEYWORD")).await;
    assert_eq!(streamed.status, 200);
    assert_eq!(
        streamed.header("content-type").as_deref(),
        Some("text/event-stream")
    );
    assert!(!streamed.aborted);
    // Not `data:`-framed: the @google/genai SDK recognises an error only when
    // a network read is a whole JSON object with an `error` member.
    let body: Value = serde_json::from_slice(&streamed.raw).unwrap();
    assert_eq!(
        body,
        json!({"error": {"code": 500, "message": "mock sse failure", "status": "INTERNAL"}})
    );
}

#[tokio::test]
async fn cut_off_drops_the_connection_without_finish_reason() {
    let server = server(vec![Reply::CutOff {
        partial_text: "partial answ".into(),
    }])
    .await;
    let streamed = post_stream(&stream_url(&server), &request("KEYWORD")).await;
    assert!(streamed.aborted);
    let events = streamed.events();
    assert_eq!(squash(&kinds(&events)), strings(&["text+"]));
    assert_eq!(texts(&events, false), "partial answ");
}

#[tokio::test]
async fn slow_pauses_between_chunks() {
    let delay = Duration::from_millis(5);
    let server = server(vec![Reply::Slow {
        text: TEXT.into(),
        chunk_delay: delay,
    }])
    .await;
    let started = Instant::now();
    let events = post_stream(&stream_url(&server), &request("KEYWORD"))
        .await
        .events();
    let elapsed = started.elapsed();
    assert_eq!(texts(&events, false), TEXT);
    assert!(kinds(&events).last().unwrap().ends_with(":STOP"));
    let gaps = u32::try_from(events.len() - 1).unwrap();
    assert!(elapsed >= delay * gaps, "{elapsed:?} < {gaps} x {delay:?}");
}

#[tokio::test]
async fn generate_content_answers_one_response_with_every_part() {
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
                    name: "run_shell_command".into(),
                    arguments: arguments.clone(),
                }],
            ),
    )
    .await
    .unwrap();
    let (status, headers, body) = post_json(&generate_url(&server), &request("THINK")).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/json");
    let candidate = &body["candidates"][0];
    assert_eq!(candidate["finishReason"], "STOP");
    assert_eq!(
        candidate["content"]["parts"],
        json!([{"text": REASONING, "thought": true}, {"text": TEXT}])
    );
    assert_eq!(body["usageMetadata"]["promptTokenCount"], MOCK_INPUT_TOKENS);

    let (_, _, body) = post_json(&generate_url(&server), &request("TOOL")).await;
    assert_eq!(
        body["candidates"][0]["content"]["parts"],
        json!([{"functionCall": {"name": "run_shell_command", "args": arguments}}])
    );
}

#[tokio::test]
async fn without_alt_sse_the_stream_is_a_json_array() {
    let server = server(vec![Reply::Text(TEXT.into())]).await;
    let url = format!(
        "{}/v1beta/models/gemini-mock:streamGenerateContent",
        server.base_url()
    );
    let streamed = post_stream(&url, &request("KEYWORD")).await;
    assert_eq!(streamed.status, 200);
    assert!(!streamed.aborted);
    let chunks: Vec<Value> = serde_json::from_slice(&streamed.raw).unwrap();
    assert!(chunks.len() >= 2);
    let text: String = chunks
        .iter()
        .map(|c| {
            c["candidates"][0]["content"]["parts"][0]["text"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(text, TEXT);
    assert_eq!(
        chunks.last().unwrap()["candidates"][0]["finishReason"],
        "STOP"
    );
}

#[tokio::test]
async fn count_tokens_and_model_metadata_answer() {
    let server = MockServer::start(Script::new()).await.unwrap();
    let (status, _, body) = post_json(
        &format!(
            "{}/v1beta/models/gemini-mock:countTokens",
            server.base_url()
        ),
        &request("anything"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(body["totalTokens"].as_u64().unwrap() > 0);

    let client = reqwest::Client::new();
    let model: Value = within(async {
        client
            .get(format!("{}/v1beta/models/gemini-mock", server.base_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    })
    .await;
    assert_eq!(model["name"], "models/gemini-mock");
    let list: Value = within(async {
        client
            .get(format!("{}/v1beta/models", server.base_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    })
    .await;
    assert!(list["models"][0]["name"].is_string());
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].protocol(), Some(Protocol::Gemini));
    assert_eq!(requests[1].protocol(), None);
}

// ---- parallel tool calls, error envelopes, missing finish reasons ----------

#[tokio::test]
async fn tool_calls_are_function_call_parts_in_one_candidate() {
    let calls = vec![
        ToolCallSpec::new("read_file", json!({"absolute_path": "/tmp/a.txt"})),
        ToolCallSpec::new("read_file", json!({"absolute_path": "/tmp/b.txt"})),
        ToolCallSpec::new("run_shell_command", json!({"command": "ls"})),
    ];
    let server = server(vec![
        Reply::ToolCalls(calls.clone()),
        Reply::Text("All three done.".into()),
    ])
    .await;
    let first = request("KEYWORD");
    let streamed = post_stream(&stream_url(&server), &first).await;
    assert!(!streamed.aborted);
    let events = streamed.events();
    assert_eq!(events.len(), 1, "one chunk carries every call");
    let chunk = events[0].json();
    let candidates = chunk["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 1);
    let candidate = &candidates[0];
    assert_eq!(candidate["finishReason"], "STOP");
    assert_eq!(candidate["content"]["role"], "model");
    let expected: Vec<Value> = calls
        .iter()
        .map(|c| json!({"functionCall": {"name": c.name, "args": c.arguments}}))
        .collect();
    assert_eq!(
        candidate["content"]["parts"],
        Value::Array(expected.clone())
    );
    assert_eq!(
        chunk["usageMetadata"]["totalTokenCount"],
        MOCK_INPUT_TOKENS + MOCK_OUTPUT_TOKENS
    );

    // One model content with the calls, one user content with the responses.
    let mut follow_up = first.clone();
    let contents = follow_up["contents"].as_array_mut().unwrap();
    contents.push(json!({"role": "model", "parts": expected}));
    contents.push(json!({"role": "user", "parts": calls.iter().map(|c| json!(
        {"functionResponse": {"name": c.name, "response": {"output": "ok"}}})).collect::<Vec<_>>()}));
    let events = post_stream(&stream_url(&server), &follow_up).await.events();
    assert_eq!(texts(&events, false), "All three done.");

    let (status, _, body) = post_json(&generate_url(&server), &first).await;
    assert_eq!(status, 200);
    assert_eq!(body["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        body["candidates"][0]["content"]["parts"],
        Value::Array(expected)
    );
}

#[tokio::test]
async fn stream_error_envelope_is_a_data_framed_google_error_after_the_text() {
    let server = MockServer::start(
        Script::new()
            .on_prompt(
                "PARTIAL",
                vec![Reply::StreamErrorEnvelope {
                    partial_text: "Half an answ".into(),
                    code: "RESOURCE_EXHAUSTED".into(),
                    status: 429,
                    message: "Quota exceeded".into(),
                }],
            )
            .on_prompt(
                "EMPTY",
                vec![Reply::StreamErrorEnvelope {
                    partial_text: String::new(),
                    code: "UNAVAILABLE".into(),
                    status: 503,
                    message: "The model is overloaded".into(),
                }],
            ),
    )
    .await
    .unwrap();
    let error = json!({"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}});
    let streamed = post_stream(&stream_url(&server), &request("PARTIAL")).await;
    assert_eq!(streamed.status, 200);
    assert!(!streamed.aborted, "the stream ends cleanly after the error");
    let events = streamed.events();
    assert_eq!(squash(&kinds(&events)), strings(&["text+", "error"]));
    assert_eq!(texts(&events, false), "Half an answ");
    assert_eq!(events.last().unwrap().json(), error);
    let raw = std::str::from_utf8(&streamed.raw).unwrap();
    assert!(
        raw.ends_with(&format!("data: {error}\n\n")),
        "an SSE data frame: {raw:?}"
    );

    let streamed = post_stream(&stream_url(&server), &request("EMPTY")).await;
    assert_eq!(
        std::str::from_utf8(&streamed.raw).unwrap(),
        format!(
            "data: {}\n\n",
            json!({"error": {"code": 503, "message": "The model is overloaded", "status": "UNAVAILABLE"}})
        )
    );

    // Without alt=sse the error object is the array's last element.
    let url = format!(
        "{}/v1beta/models/gemini-mock:streamGenerateContent",
        server.base_url()
    );
    let streamed = post_stream(&url, &request("PARTIAL")).await;
    let chunks: Vec<Value> = serde_json::from_slice(&streamed.raw).unwrap();
    assert_eq!(chunks.last().unwrap(), &error);
    assert!(chunks.len() >= 2);

    let (status, _, body) = post_json(&generate_url(&server), &request("PARTIAL")).await;
    assert_eq!(status, 429);
    assert_eq!(body, error);
}

#[tokio::test]
async fn no_finish_reason_has_no_finish_reason_in_any_chunk() {
    let server = server(vec![Reply::NoFinishReason(TEXT.into())]).await;
    let streamed = post_stream(&stream_url(&server), &request("KEYWORD")).await;
    assert!(!streamed.aborted, "the stream still ends cleanly");
    let events = streamed.events();
    let names = kinds(&events);
    assert!(names.len() >= 2);
    assert_eq!(squash(&names), strings(&["text+"]));
    assert_eq!(texts(&events, false), TEXT);
    for event in &events {
        let value = event.json();
        assert!(
            value["candidates"][0].get("finishReason").is_none(),
            "{value}"
        );
    }
    let usage = &events.last().unwrap().json()["usageMetadata"];
    assert_eq!(usage["candidatesTokenCount"], MOCK_OUTPUT_TOKENS);

    let (status, _, body) = post_json(&generate_url(&server), &request("KEYWORD")).await;
    assert_eq!(status, 200);
    assert!(
        body["candidates"][0].get("finishReason").is_none(),
        "{body}"
    );
    assert_eq!(
        body["candidates"][0]["content"]["parts"],
        json!([{"text": TEXT}])
    );
}
