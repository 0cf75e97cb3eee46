//! Mock server behaviour shared by all protocols: recording, rule selection,
//! fallback, conversation extraction, odd requests, the script file format
//! and the server's lifecycle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mock_common;

use std::time::Duration;

use agent_adaptor_testkit::mock::conversation::{Conversation, conversation};
use agent_adaptor_testkit::mock::{MockServer, Protocol, Reply, Script, ToolCallSpec};
use mock_common::{post_json, post_stream, within};
use serde_json::{Value, json};

fn chat(messages: Value) -> Value {
    json!({"model": "m", "stream": false, "messages": messages})
}

fn answer(body: &Value) -> String {
    body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn every_request_is_recorded_in_order_with_method_path_query_headers_body() {
    let server = MockServer::start(Script::new()).await.unwrap();
    let base = server.base_url();
    assert_eq!(base, format!("http://{}", server.addr()));
    assert!(base.starts_with("http://127.0.0.1:"));
    assert!(!base.ends_with('/'));

    let first = chat(json!([{"role": "user", "content": "one"}]));
    let client = reqwest::Client::new();
    within(
        client
            .post(format!("{base}/v1/chat/completions"))
            .header("authorization", "Bearer sk-test")
            .header("x-custom", "yes")
            .json(&first)
            .send(),
    )
    .await
    .unwrap();
    within(client.get(format!("{base}/nowhere?x=1")).send())
        .await
        .unwrap();
    let second = json!({"model": "c", "messages": [{"role": "user", "content": "two"}]});
    within(
        client
            .post(format!("{base}/v1/messages?beta=true"))
            .json(&second)
            .send(),
    )
    .await
    .unwrap();

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].query, None);
    assert_eq!(requests[0].json().unwrap(), first);
    assert_eq!(requests[0].body, serde_json::to_vec(&first).unwrap());
    assert_eq!(requests[0].header("Authorization"), Some("Bearer sk-test"));
    assert!(
        requests[0]
            .headers
            .contains(&("x-custom".to_owned(), "yes".to_owned()))
    );
    assert_eq!(requests[0].protocol(), Some(Protocol::ChatCompletions));
    assert_eq!(requests[0].conversation().unwrap().first_user_text, "one");
    assert_eq!(requests[1].method, "GET");
    assert_eq!(requests[1].path, "/nowhere");
    assert_eq!(requests[1].query.as_deref(), Some("x=1"));
    assert!(requests[1].body.is_empty());
    assert_eq!(requests[1].json(), None);
    assert_eq!(requests[1].protocol(), None);
    assert_eq!(requests[2].path, "/v1/messages");
    assert_eq!(requests[2].protocol(), Some(Protocol::AnthropicMessages));
    assert_eq!(requests[2].json().unwrap(), second);

    // wait_for_requests returns at once when enough arrived.
    assert_eq!(within(server.wait_for_requests(3)).await.len(), 3);
}

#[tokio::test]
async fn wait_for_requests_wakes_when_the_count_is_reached() {
    let server = MockServer::start(Script::new()).await.unwrap();
    let url = format!("{}/chat/completions", server.base_url());
    let waiter = server.wait_for_requests(2);
    let sender = async {
        post_json(&url, &chat(json!([{"role": "user", "content": "a"}]))).await;
        post_json(&url, &chat(json!([{"role": "user", "content": "b"}]))).await;
    };
    let (requests, ()) = within(async { tokio::join!(waiter, sender) }).await;
    assert_eq!(requests.len(), 2);
}

#[tokio::test]
async fn the_first_matching_rule_wins_and_unmatched_requests_get_the_fallback() {
    let server = MockServer::start(
        Script::new()
            .on_prompt("ALPHA", vec![Reply::Text("alpha answer".into())])
            .on_prompt("BETA", vec![Reply::Text("beta answer".into())])
            .on_prompt("ALPHA", vec![Reply::Text("never".into())])
            .fallback(Reply::Text("fallback answer".into())),
    )
    .await
    .unwrap();
    let url = format!("{}/v1/chat/completions", server.base_url());
    let ask = |text: &str| chat(json!([{"role": "user", "content": text}]));

    let (_, _, body) = post_json(&url, &ask("<reminder/> please ALPHA now")).await;
    assert_eq!(answer(&body), "alpha answer");
    let (_, _, body) = post_json(&url, &ask("BETA and ALPHA")).await;
    assert_eq!(answer(&body), "alpha answer", "rules are tried in order");
    let (_, _, body) = post_json(&url, &ask("just BETA")).await;
    assert_eq!(answer(&body), "beta answer");
    let (_, _, body) = post_json(&url, &ask("generate a title")).await;
    assert_eq!(answer(&body), "fallback answer");
    let (_, _, body) = post_json(&url, &ask("alpha in lower case")).await;
    assert_eq!(
        answer(&body),
        "fallback answer",
        "keywords are case-sensitive"
    );

    // A keyword that only appears after an assistant turn does not count.
    let later = chat(json!([
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": "ALPHA"},
    ]));
    let (_, _, body) = post_json(&url, &later).await;
    assert_eq!(answer(&body), "fallback answer");
}

#[tokio::test]
async fn the_default_fallback_is_ok() {
    let server = MockServer::start(Script::new()).await.unwrap();
    let (status, _, body) = post_json(
        &format!("{}/chat/completions", server.base_url()),
        &chat(json!([{"role": "user", "content": "anything"}])),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(answer(&body), "OK");
}

#[tokio::test]
async fn replies_advance_with_assistant_turns_and_the_last_repeats() {
    let server = MockServer::start(Script::new().on_prompt(
        "STEP",
        vec![
            Reply::Text("zero".into()),
            Reply::Text("one".into()),
            Reply::Text("two".into()),
        ],
    ))
    .await
    .unwrap();
    let url = format!("{}/chat/completions", server.base_url());
    let mut messages = vec![json!({"role": "user", "content": "STEP"})];
    for expected in ["zero", "one", "two", "two", "two"] {
        let (_, _, body) = post_json(&url, &chat(Value::Array(messages.clone()))).await;
        let text = answer(&body);
        assert_eq!(text, expected);
        messages.push(json!({"role": "assistant", "content": text}));
        messages.push(json!({"role": "user", "content": "next"}));
    }
}

#[tokio::test]
async fn a_rule_with_no_replies_uses_the_fallback() {
    let server = MockServer::start(
        Script::new()
            .on_prompt("EMPTY", vec![])
            .fallback(Reply::Text("fb".into())),
    )
    .await
    .unwrap();
    let (_, _, body) = post_json(
        &format!("{}/chat/completions", server.base_url()),
        &chat(json!([{"role": "user", "content": "EMPTY"}])),
    )
    .await;
    assert_eq!(answer(&body), "fb");
}

#[tokio::test]
async fn unknown_paths_get_a_json_404_and_are_recorded() {
    let server = MockServer::start(Script::new()).await.unwrap();
    let (status, headers, body) = post_json(
        &format!("{}/v2/unknown", server.base_url()),
        &json!({"a": 1}),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(headers["content-type"], "application/json");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v2/unknown")
    );
    // GET on a model endpoint is not a model call either.
    let response = within(
        reqwest::Client::new()
            .get(format!("{}/v1/messages", server.base_url()))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 404);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v2/unknown");
    assert_eq!(requests[0].json().unwrap(), json!({"a": 1}));
}

#[tokio::test]
async fn malformed_bodies_get_a_protocol_shaped_400_not_a_panic() {
    let server = MockServer::start(Script::new()).await.unwrap();
    let base = server.base_url();
    let client = reqwest::Client::new();
    let cases = [
        ("/v1/messages", "{not json", "type"),
        ("/v1/responses", "[1, 2]", "error"),
        ("/chat/completions", "", "error"),
        (
            "/v1beta/models/m:streamGenerateContent?alt=sse",
            "\"text\"",
            "error",
        ),
        ("/v1/messages/count_tokens", "nope", "type"),
    ];
    for (path, body, key) in cases {
        let response = within(
            client
                .post(format!("{base}{path}"))
                .header("content-type", "application/json")
                .body(body)
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(response.status(), 400, "{path}");
        let json: Value = within(response.json()).await.unwrap();
        assert!(json.get(key).is_some(), "{path}: {json}");
    }
    // Odd but valid JSON shapes are not errors: no conversation -> fallback.
    let (status, _, body) = post_json(
        &format!("{base}/v1/chat/completions"),
        &json!({"model": "m", "messages": "not an array"}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(answer(&body), "OK");
    assert_eq!(server.requests().len(), cases.len() + 1);
    // The server still works.
    let (status, _, _) = post_json(
        &format!("{base}/v1/chat/completions"),
        &chat(json!([{"role": "user", "content": "ok"}])),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn model_listings_answer_for_openai_and_anthropic_readers() {
    let server = MockServer::start(Script::new()).await.unwrap();
    for path in ["/v1/models", "/models"] {
        let body: Value = within(async {
            reqwest::get(format!("{}{path}", server.base_url()))
                .await
                .unwrap()
                .json()
                .await
                .unwrap()
        })
        .await;
        assert_eq!(body["object"], "list");
        assert!(body["data"][0]["id"].is_string());
        assert_eq!(body["data"][0]["type"], "model");
        assert_eq!(body["has_more"], false);
    }
}

#[tokio::test]
async fn shutdown_and_drop_stop_serving() {
    let server = MockServer::start(Script::new()).await.unwrap();
    let url = format!("{}/chat/completions", server.base_url());
    post_json(&url, &chat(json!([{"role": "user", "content": "x"}]))).await;
    within(server.shutdown()).await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    assert!(
        within(client.post(&url).json(&json!({})).send())
            .await
            .is_err()
    );

    let server = MockServer::start(Script::new()).await.unwrap();
    let url = format!("{}/chat/completions", server.base_url());
    drop(server);
    // The listener closes when the aborted serve task is dropped; give the
    // runtime a turn to run that.
    tokio::task::yield_now().await;
    assert!(
        within(client.post(&url).json(&json!({})).send())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_slow_stream_in_flight_does_not_block_shutdown_for_long() {
    let server = MockServer::start(Script::new().fallback(Reply::Slow {
        text: "x".repeat(400),
        chunk_delay: Duration::from_millis(50),
    }))
    .await
    .unwrap();
    let url = format!("{}/chat/completions", server.base_url());
    let body =
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "x"}]});
    let response = within(reqwest::Client::new().post(&url).json(&body).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let started = std::time::Instant::now();
    within(server.shutdown()).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(response);
}

// ---- conversation extraction -------------------------------------------

fn conv(protocol: Protocol, body: Value) -> Conversation {
    conversation(protocol, &body).unwrap()
}

#[test]
fn anthropic_conversation_reads_strings_and_text_blocks_and_counts_assistant_turns() {
    let c = conv(
        Protocol::AnthropicMessages,
        json!({"messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>r</system-reminder>"},
                {"type": "image", "source": {}},
                {"type": "text", "text": "the KEY prompt"},
            ]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "out"}]},
            {"role": "assistant", "content": "text"},
            {"role": "user", "content": "later"},
        ]}),
    );
    assert_eq!(
        c.first_user_text,
        "<system-reminder>r</system-reminder>\nthe KEY prompt"
    );
    assert_eq!(c.assistant_turns, 2);
    let c = conv(
        Protocol::AnthropicMessages,
        json!({"messages": [{"role": "user", "content": "plain"}]}),
    );
    assert_eq!(c.first_user_text, "plain");
    assert_eq!(c.assistant_turns, 0);
}

#[test]
fn responses_conversation_joins_user_messages_before_the_first_answer_and_groups_items() {
    let c = conv(
        Protocol::Responses,
        json!({"input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "dev"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<env/>"}]},
            {"role": "user", "content": "the KEY prompt"},
            {"type": "reasoning", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "run"}]},
            {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            {"type": "function_call", "call_id": "c2", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c2", "output": "ok"},
        ]}),
    );
    assert_eq!(c.first_user_text, "<env/>\nthe KEY prompt");
    // reasoning + message + call is one turn; the second call another.
    assert_eq!(c.assistant_turns, 2);
    let c = conv(Protocol::Responses, json!({"input": "just a string"}));
    assert_eq!(c.first_user_text, "just a string");
    assert_eq!(c.assistant_turns, 0);
}

#[test]
fn chat_conversation_skips_system_and_counts_assistant_messages() {
    let c = conv(
        Protocol::ChatCompletions,
        json!({"messages": [
            {"role": "system", "content": "sys KEY"},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}]},
            {"role": "user", "content": "b"},
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "tool", "tool_call_id": "x", "content": "out"},
            {"role": "assistant", "content": "done"},
        ]}),
    );
    assert_eq!(c.first_user_text, "a\nb");
    assert_eq!(c.assistant_turns, 2);
}

#[test]
fn gemini_conversation_reads_parts_and_counts_model_contents() {
    let c = conv(
        Protocol::Gemini,
        json!({"contents": [
            {"parts": [{"text": "<session_context/>"}, {"text": "KEY"}]},
            {"role": "model", "parts": [{"text": "thinking", "thought": true}, {"functionCall": {"name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
            {"role": "model", "parts": [{"text": "done"}]},
        ]}),
    );
    assert_eq!(c.first_user_text, "<session_context/>\nKEY");
    assert_eq!(c.assistant_turns, 2);
}

#[test]
fn bodies_without_a_conversation_give_none() {
    assert_eq!(conversation(Protocol::ChatCompletions, &json!({})), None);
    assert_eq!(
        conversation(Protocol::Responses, &json!({"input": 5})),
        None
    );
    assert_eq!(
        conversation(Protocol::Gemini, &json!({"contents": {}})),
        None
    );
}

// ---- script file format ----------------------------------------------------

#[test]
fn scripts_deserialize_from_the_documented_json_shape() {
    let text = r#"{
        "rules": [
            {"keyword": "RUNTOOL", "replies": [
                {"tool_call": {"name": "Bash", "arguments": {"command": "echo hi"}}},
                "Tool said hi."
            ]},
            {"keyword": "ALL", "replies": [
                {"text": "t"},
                {"reasoning_then_text": {"reasoning": "r", "text": "t"}},
                {"json": {"answer": "ok"}},
                {"http_error": {"status": 429, "body": null, "retry_after": 1}},
                {"http_error": {"status": 400}},
                {"stream_error": {"message": "m"}},
                {"cut_off": {"partial_text": "p"}},
                {"slow": {"text": "s", "chunk_delay_ms": 15}}
            ]}
        ],
        "fallback": {"text": "FB"}
    }"#;
    let script: Script = serde_json::from_str(text).unwrap();
    let expected = Script::new()
        .on_prompt(
            "RUNTOOL",
            vec![
                Reply::ToolCall {
                    name: "Bash".into(),
                    arguments: json!({"command": "echo hi"}),
                },
                Reply::Text("Tool said hi.".into()),
            ],
        )
        .on_prompt(
            "ALL",
            vec![
                Reply::Text("t".into()),
                Reply::ReasoningThenText {
                    reasoning: "r".into(),
                    text: "t".into(),
                },
                Reply::Json(json!({"answer": "ok"})),
                Reply::HttpError {
                    status: 429,
                    body: Value::Null,
                    retry_after: Some(1),
                },
                Reply::HttpError {
                    status: 400,
                    body: Value::Null,
                    retry_after: None,
                },
                Reply::StreamError {
                    message: "m".into(),
                },
                Reply::CutOff {
                    partial_text: "p".into(),
                },
                Reply::Slow {
                    text: "s".into(),
                    chunk_delay: Duration::from_millis(15),
                },
            ],
        )
        .fallback(Reply::Text("FB".into()));
    assert_eq!(script, expected);

    // It serializes back to the same shape.
    let again: Script = serde_json::from_str(&serde_json::to_string(&script).unwrap()).unwrap();
    assert_eq!(again, script);

    // Everything is optional at the top level.
    assert_eq!(serde_json::from_str::<Script>("{}").unwrap(), Script::new());
    // Typos are errors, not silently ignored.
    assert!(serde_json::from_str::<Script>(r#"{"rule": []}"#).is_err());
    assert!(serde_json::from_str::<Reply>(r#"{"txt": "x"}"#).is_err());
}

#[test]
fn new_reply_variants_round_trip_through_the_script_json() {
    let text = r#"{
        "rules": [
            {"keyword": "NEW", "replies": [
                {"tool_calls": [
                    {"name": "read", "arguments": {"path": "a"}},
                    {"name": "ping"}
                ]},
                {"stream_error_envelope": {"partial_text": "Hal", "code": "rate_limit_exceeded",
                                           "status": 429, "message": "slow down"}},
                {"stream_error_envelope": {"code": "overloaded_error", "status": 529,
                                           "message": "busy"}},
                {"no_finish_reason": "no reason"},
                {"attempts": [
                    {"http_error": {"status": 429, "retry_after": 0}},
                    {"attempts": ["nested"]},
                    "done"
                ]},
                {"attempts": []}
            ]}
        ]
    }"#;
    let script: Script = serde_json::from_str(text).unwrap();
    let replies = vec![
        Reply::ToolCalls(vec![
            ToolCallSpec::new("read", json!({"path": "a"})),
            ToolCallSpec::new("ping", Value::Null),
        ]),
        Reply::StreamErrorEnvelope {
            partial_text: "Hal".into(),
            code: "rate_limit_exceeded".into(),
            status: 429,
            message: "slow down".into(),
        },
        Reply::StreamErrorEnvelope {
            partial_text: String::new(),
            code: "overloaded_error".into(),
            status: 529,
            message: "busy".into(),
        },
        Reply::NoFinishReason("no reason".into()),
        Reply::Attempts(vec![
            Reply::HttpError {
                status: 429,
                body: Value::Null,
                retry_after: Some(0),
            },
            Reply::Attempts(vec![Reply::Text("nested".into())]),
            Reply::Text("done".into()),
        ]),
        Reply::Attempts(vec![]),
    ];
    assert_eq!(script, Script::new().on_prompt("NEW", replies.clone()));

    // Each serializes to its snake_case key and back to the same value.
    let keys = [
        "tool_calls",
        "stream_error_envelope",
        "stream_error_envelope",
        "no_finish_reason",
        "attempts",
        "attempts",
    ];
    for (reply, key) in replies.iter().zip(keys) {
        let value = serde_json::to_value(reply).unwrap();
        let object = value.as_object().unwrap();
        assert_eq!(object.keys().collect::<Vec<_>>(), vec![key], "{value}");
        assert_eq!(
            &serde_json::from_value::<Reply>(value.clone()).unwrap(),
            reply
        );
    }
    assert_eq!(
        serde_json::to_value(&replies[0]).unwrap(),
        json!({"tool_calls": [{"name": "read", "arguments": {"path": "a"}},
                              {"name": "ping", "arguments": null}]})
    );
    assert_eq!(
        serde_json::to_value(&replies[1]).unwrap(),
        json!({"stream_error_envelope": {"partial_text": "Hal", "code": "rate_limit_exceeded",
                                         "status": 429, "message": "slow down"}})
    );
    assert_eq!(
        serde_json::to_value(&replies[3]).unwrap(),
        json!({"no_finish_reason": "no reason"})
    );
    assert_eq!(
        serde_json::to_value(&replies[4]).unwrap(),
        json!({"attempts": [
            {"http_error": {"status": 429, "body": null, "retry_after": 0}},
            {"attempts": [{"text": "nested"}]},
            {"text": "done"}
        ]})
    );
    let again: Script = serde_json::from_str(&serde_json::to_string(&script).unwrap()).unwrap();
    assert_eq!(again, script);

    // Typos and missing fields are errors.
    assert!(
        serde_json::from_str::<Reply>(r#"{"tool_calls": [{"name": "x", "args": {}}]}"#).is_err()
    );
    assert!(serde_json::from_str::<Reply>(r#"{"tool_calls": {"name": "x"}}"#).is_err());
    assert!(
        serde_json::from_str::<Reply>(
            r#"{"stream_error_envelope": {"code": "c", "message": "m"}}"#
        )
        .is_err()
    );
    assert!(serde_json::from_str::<Reply>(r#"{"attempts": "x"}"#).is_err());
}

// ---- per-request attempts -------------------------------------------------

#[tokio::test]
async fn attempts_answer_a_429_then_the_text_to_identical_requests() {
    let server = MockServer::start(Script::new().on_prompt(
        "RETRY",
        vec![Reply::Attempts(vec![
            Reply::HttpError {
                status: 429,
                body: Value::Null,
                retry_after: Some(1),
            },
            Reply::Text("recovered".into()),
        ])],
    ))
    .await
    .unwrap();
    let url = format!("{}/v1/chat/completions", server.base_url());
    // A client retrying: the same body twice.
    let body = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true},
                      "messages": [{"role": "user", "content": "RETRY please"}]});

    let (status, headers, error) = post_json(&url, &body).await;
    assert_eq!(status, 429);
    assert_eq!(headers["retry-after"], "1");
    assert_eq!(error["error"]["code"], "rate_limit_exceeded");
    assert_eq!(server.requests().len(), 1);

    let streamed = post_stream(&url, &body).await;
    assert_eq!(streamed.status, 200);
    let events = streamed.events();
    let text: String = events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter_map(|e| {
            e.json()["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, "recovered");
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let finish = events.iter().filter(|e| e.data != "[DONE]").find_map(|e| {
        e.json()["choices"][0]["finish_reason"]
            .as_str()
            .map(str::to_owned)
    });
    assert_eq!(finish.as_deref(), Some("stop"));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].json().unwrap(), requests[1].json().unwrap());

    // Past the end the last attempt repeats.
    let (status, _, completion) = post_json(
        &url,
        &json!({"model": "m", "messages": [{"role": "user", "content": "RETRY please"}]}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(answer(&completion), "recovered");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn attempts_count_per_reply_flatten_nesting_and_fall_back_when_empty() {
    let text = |t: &str| Reply::Text(t.to_owned());
    let server = MockServer::start(
        Script::new()
            .on_prompt(
                "ONE",
                vec![
                    Reply::Attempts(vec![text("one-a"), text("one-b")]),
                    // Only requests reaching this turn advance its counter.
                    Reply::Attempts(vec![text("turn1-a"), text("turn1-b")]),
                ],
            )
            .on_prompt(
                "NEST",
                vec![Reply::Attempts(vec![
                    text("n1"),
                    Reply::Attempts(vec![text("n2"), Reply::Attempts(vec![text("n3")])]),
                    Reply::Attempts(vec![]),
                    text("n4"),
                ])],
            )
            .on_prompt("EMPTY", vec![Reply::Attempts(vec![])])
            .fallback(Reply::Attempts(vec![text("fb-a"), text("fb-b")])),
    )
    .await
    .unwrap();
    let url = format!("{}/chat/completions", server.base_url());
    let ask = |prompt: &str| chat(json!([{"role": "user", "content": prompt}]));
    let get = |body: Value| {
        let url = url.clone();
        async move { answer(&post_json(&url, &body).await.2) }
    };
    let turn1 = chat(json!([
        {"role": "user", "content": "ONE"},
        {"role": "assistant", "content": "one-a"},
        {"role": "user", "content": "more"},
    ]));

    assert_eq!(get(ask("ONE")).await, "one-a");
    assert_eq!(get(turn1.clone()).await, "turn1-a");
    assert_eq!(get(ask("NEST")).await, "n1");
    assert_eq!(get(ask("ONE")).await, "one-b");
    assert_eq!(get(ask("NEST")).await, "n2");
    assert_eq!(get(ask("NEST")).await, "n3");
    assert_eq!(get(ask("NEST")).await, "n4");
    assert_eq!(get(ask("NEST")).await, "n4");
    assert_eq!(get(ask("ONE")).await, "one-b");
    assert_eq!(get(turn1).await, "turn1-b");
    // An empty list is the fallback, itself an Attempts with its own count.
    assert_eq!(get(ask("EMPTY")).await, "fb-a");
    assert_eq!(get(ask("unmatched")).await, "fb-b");
    assert_eq!(get(ask("EMPTY")).await, "fb-b");
    assert_eq!(server.requests().len(), 13);

    // A fresh server starts counting again.
    let server = MockServer::start(
        Script::new()
            .on_prompt(
                "X",
                vec![Reply::Attempts(vec![text("first"), text("second")])],
            )
            .fallback(Reply::Attempts(vec![])),
    )
    .await
    .unwrap();
    let url = format!("{}/chat/completions", server.base_url());
    assert_eq!(answer(&post_json(&url, &ask("X")).await.2), "first");
    // An empty Attempts fallback answers like the default fallback.
    assert_eq!(answer(&post_json(&url, &ask("none")).await.2), "OK");
}

// ---- the binary ------------------------------------------------------------

#[tokio::test]
async fn the_binary_prints_its_url_and_serves_the_script_file() {
    use tokio::io::{AsyncBufReadExt, BufReader};

    let dir = std::env::temp_dir().join(format!("mock-model-server-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script_path = dir.join("script.json");
    let script = Script::new().on_prompt("BIN", vec![Reply::Text("from the binary".into())]);
    std::fs::write(&script_path, serde_json::to_string(&script).unwrap()).unwrap();

    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mock-model-server"))
        .arg("--port")
        .arg("0")
        .arg("--script")
        .arg(&script_path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    within(BufReader::new(stdout).read_line(&mut line))
        .await
        .unwrap();
    let url = line
        .trim_end()
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let body = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true},
                      "messages": [{"role": "user", "content": "BIN please"}]});
    let streamed = post_stream(&format!("{url}/chat/completions"), &body).await;
    let text: String = streamed
        .events()
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter_map(|e| {
            e.json()["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, "from the binary");
    assert_eq!(streamed.events().last().unwrap().data, "[DONE]");

    child.kill().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn the_binary_rejects_a_bad_script_file() {
    let dir = std::env::temp_dir().join(format!("mock-model-server-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script_path = dir.join("bad.json");
    std::fs::write(&script_path, r#"{"rules": [{"keyword": 1}]}"#).unwrap();
    let output = within(
        tokio::process::Command::new(env!("CARGO_BIN_EXE_mock-model-server"))
            .arg("--script")
            .arg(&script_path)
            .stdin(std::process::Stdio::null())
            .output(),
    )
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(String::from_utf8_lossy(&output.stderr).contains("not a valid script"));
    std::fs::remove_dir_all(&dir).unwrap();
}
