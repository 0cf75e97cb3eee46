//! Golden event sequences of the OpenAI Chat Completions driver against the
//! mock model server, and the requests it sends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agent_adaptor_llm::{
    LlmCallConfig, LlmErrorKind, LlmStreamEvent, Message, OpenAiChat, Provider, ReasoningEffort,
    ResponseFormat, ToolCall, ToolDefinition,
};
use agent_adaptor_testkit::mock::{MockServer, RecordedRequest, Reply, ToolCallSpec};
use serde_json::{Value, json};

const MODEL: &str = "gpt-golden";

fn chat(server: &MockServer) -> Provider {
    common::provider(
        OpenAiChat::new().with_retry_config(common::fast_retry()),
        &format!("{}/v1", server.base_url()),
    )
}

fn config() -> LlmCallConfig {
    LlmCallConfig::new(MODEL)
}

fn weather_tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::function(
            "get_weather",
            "Looks up the weather.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ),
        ToolDefinition::function(
            "get_time",
            "Tells the time.",
            json!({"type": "object", "properties": {}}),
        ),
    ]
}

/// The only request the server saw, checked for what every call sends.
fn only_request(server: &MockServer) -> (RecordedRequest, Value) {
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "exactly one request");
    let request = requests.into_iter().next().unwrap();
    let body = checked_request(&request);
    (request, body)
}

fn checked_request(request: &RecordedRequest) -> Value {
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer test-key"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    let body = request.json().expect("a JSON body");
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": common::PROMPT},
        ])
    );
    body
}

fn done(
    items: &[Result<LlmStreamEvent, agent_adaptor_llm::LlmError>],
) -> &agent_adaptor_llm::LlmCompletionMetadata {
    match items.last() {
        Some(Ok(LlmStreamEvent::Done(metadata))) => metadata,
        other => panic!("expected Done last, got {other:?}"),
    }
}

#[tokio::test]
async fn text() {
    let server = common::server(vec![Reply::Text("Hello from the golden mock.".into())]).await;
    let items = common::run(&chat(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let metadata = done(&items);
    assert_eq!(metadata.finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        metadata.prompt_tokens,
        Some(80),
        "100 reported, 20 of them cached"
    );
    assert_eq!(metadata.cache_read_tokens, Some(20));
    let (_, body) = only_request(&server);
    assert!(body.get("tools").is_none());
    assert!(body.get("reasoning_effort").is_none());
}

#[tokio::test]
async fn reasoning() {
    let server = common::server(vec![Reply::ReasoningThenText {
        reasoning: "The user wants a greeting.".into(),
        text: "Hello there.".into(),
    }])
    .await;
    let config = config()
        .with_reasoning(ReasoningEffort::High)
        .with_max_tokens(256);
    let items = common::run(&chat(&server), &config).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let (_, body) = only_request(&server);
    assert_eq!(body["reasoning_effort"], "high");
    // Not an OpenAI host: the classic field.
    assert_eq!(body["max_tokens"], 256);
    assert!(body.get("max_completion_tokens").is_none());
}

#[tokio::test]
async fn parallel_tool_calls() {
    let server = common::server(vec![Reply::ToolCalls(vec![
        ToolCallSpec::new("get_weather", json!({"city": "Paris", "unit": "celsius"})),
        ToolCallSpec::new("get_time", json!({"zone": "Europe/Paris"})),
    ])])
    .await;
    let mut config = config().with_tools(weather_tools());
    config.parallel_tool_calls = Some(true);
    let items = common::run(&chat(&server), &config).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let calls: Vec<&Vec<ToolCall>> = items
        .iter()
        .filter_map(|item| match item {
            Ok(LlmStreamEvent::ToolCalls(calls)) => Some(calls),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1, "one full set");
    assert_eq!(calls[0].len(), 2);
    assert_eq!(
        calls[0][0].arguments,
        json!({"city": "Paris", "unit": "celsius"})
    );
    assert_eq!(calls[0][1].arguments, json!({"zone": "Europe/Paris"}));
    assert_eq!(done(&items).finish_reason.as_deref(), Some("tool_calls"));
    let (_, body) = only_request(&server);
    assert_eq!(body["parallel_tool_calls"], true);
    assert_eq!(
        body["tools"],
        json!([
            {"type": "function", "function": {
                "name": "get_weather", "description": "Looks up the weather.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            }},
            {"type": "function", "function": {
                "name": "get_time", "description": "Tells the time.",
                "parameters": {"type": "object", "properties": {}},
            }},
        ])
    );
}

#[tokio::test]
async fn error_envelope_in_200_stream() {
    let server = common::server(vec![Reply::StreamErrorEnvelope {
        partial_text: "Half an answer".into(),
        code: "provider_overloaded".into(),
        status: 502,
        message: "Upstream provider died".into(),
    }])
    .await;
    let items = common::run(&chat(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    match items.last() {
        Some(Ok(LlmStreamEvent::Error(error))) => {
            assert_eq!(error.code.as_deref(), Some("provider_overloaded"));
            assert_eq!(error.status, Some(502));
            assert_eq!(error.message, "Upstream provider died");
        }
        other => panic!("expected an Error last, got {other:?}"),
    }
    only_request(&server);
}

#[tokio::test]
async fn rate_limited_then_success_is_retried() {
    let server = common::server(vec![Reply::Attempts(vec![
        Reply::HttpError {
            status: 429,
            body: Value::Null,
            retry_after: Some(0),
        },
        Reply::Text("Second time lucky.".into()),
    ])])
    .await;
    let items = common::run(&chat(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let retry = done(&items)
        .retry_metadata
        .as_ref()
        .expect("retry metadata");
    assert_eq!(retry.attempts, 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the 429 and the retry");
    assert_eq!(
        checked_request(&requests[0]),
        checked_request(&requests[1]),
        "the same request twice"
    );
}

#[tokio::test]
async fn rate_limit_after_first_event_is_not_retried() {
    let server = common::server(vec![Reply::StreamErrorEnvelope {
        partial_text: "Partial answer".into(),
        code: "rate_limit_exceeded".into(),
        status: 429,
        message: "Slow down".into(),
    }])
    .await;
    let items = common::run(&chat(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let text: String = items
        .iter()
        .filter_map(|item| match item {
            Ok(LlmStreamEvent::TextDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Partial answer");
    match items.last() {
        Some(Ok(LlmStreamEvent::Error(error))) => {
            assert_eq!(error.status, Some(429));
            assert_eq!(error.code.as_deref(), Some("rate_limit_exceeded"));
            assert_eq!(error.kind(), LlmErrorKind::RateLimited);
        }
        other => panic!("expected an Error last, got {other:?}"),
    }
    only_request(&server);
}

#[tokio::test]
async fn cut_off_stream_is_incomplete() {
    let server = common::server(vec![Reply::CutOff {
        partial_text: "This answer never fini".into(),
    }])
    .await;
    let provider = chat(&server);
    let items = common::run(&provider, &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    match items.last() {
        Some(Err(error)) => assert_eq!(error.kind, LlmErrorKind::Incomplete),
        other => panic!("expected an Incomplete error last, got {other:?}"),
    }
    assert!(
        items[..items.len() - 1]
            .iter()
            .all(|item| matches!(item, Ok(LlmStreamEvent::TextDelta(_))))
    );

    let turn = provider
        .chat_completion(&common::prompt(), &config())
        .await
        .expect("an incomplete turn");
    assert!(!turn.complete);
    assert_eq!(turn.text, "This answer never fini");
    assert!(turn.incomplete_reason.is_some());
    assert_eq!(
        server.requests().len(),
        2,
        "one per call: nothing retried after the first event"
    );
}

#[tokio::test]
async fn missing_finish_reason_is_none() {
    let server = common::server(vec![Reply::NoFinishReason(
        "An answer without a reason.".into(),
    )])
    .await;
    let items = common::run(&chat(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let metadata = done(&items);
    assert_eq!(metadata.finish_reason, None);
    assert_eq!(metadata.provider_finish_reason, None);
    only_request(&server);
}

#[tokio::test]
async fn http_400_is_a_call_error_not_retried() {
    let server = common::server(vec![Reply::HttpError {
        status: 400,
        body: Value::Null,
        retry_after: None,
    }])
    .await;
    let items = common::run(&chat(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    match items.as_slice() {
        [Err(error)] => {
            assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
            assert_eq!(error.status, Some(400));
            assert_eq!(error.provider.as_deref(), Some("mock"));
        }
        other => panic!("expected one call error, got {other:?}"),
    }
    only_request(&server);
}

#[tokio::test]
async fn tool_round_trip_request_shape() {
    let server = common::server(vec![
        Reply::ToolCall {
            name: "get_weather".into(),
            arguments: json!({"city": "Paris"}),
        },
        Reply::Text("It is sunny in Paris.".into()),
    ])
    .await;
    let provider = chat(&server);
    let config = config()
        .with_tools(weather_tools())
        .with_temperature(0.2)
        .with_response_format(ResponseFormat::json_schema(
            "answer",
            json!({"type": "object"}),
        ));
    let first = provider
        .chat_completion(&common::prompt(), &config)
        .await
        .unwrap();
    assert!(first.complete);
    assert_eq!(first.tool_calls.len(), 1);
    let call = first.tool_calls[0].clone();
    assert_eq!(
        (call.name.as_str(), &call.arguments),
        ("get_weather", &json!({"city": "Paris"}))
    );

    let mut history = common::prompt();
    history.push(Message::assistant("").with_tool_calls(vec![call.clone()]));
    history.push(Message::tool_result(call.id.clone(), "sunny"));
    let second = provider.chat_completion(&history, &config).await.unwrap();
    assert_eq!(second.text, "It is sunny in Paris.");
    assert_eq!(second.metadata.finish_reason.as_deref(), Some("stop"));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let body = requests[1].json().unwrap();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": common::PROMPT},
            {"role": "assistant", "content": null, "tool_calls": [{
                "id": call.id, "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
            }]},
            {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
        ])
    );
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": true}})
    );
    assert!(
        body.get("parallel_tool_calls").is_none(),
        "provider default"
    );
}
