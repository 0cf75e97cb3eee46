#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Golden tests of the Anthropic Messages driver against the mock server.

mod common;

use agent_adaptor_llm::{
    AnthropicMessages, LlmCallConfig, LlmErrorKind, LlmRetryConfig, LlmStreamEvent, Message,
    ReasoningEffort, ToolCall, ToolDefinition, collect_turn,
};
use agent_adaptor_testkit::mock::{MockServer, RecordedRequest, Reply, ToolCallSpec};
use serde_json::{Value, json};

const MODEL: &str = "claude-test";

fn config() -> LlmCallConfig {
    LlmCallConfig::new(MODEL)
}

fn driver() -> AnthropicMessages {
    AnthropicMessages::new().with_retry_config(common::fast_retry())
}

fn provider(server: &MockServer) -> agent_adaptor_llm::Provider {
    common::provider(driver(), &format!("{}/v1", server.base_url()))
}

fn weather_tools() -> Vec<ToolDefinition> {
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    vec![
        ToolDefinition::function("get_weather", "The weather in a city.", schema.clone()),
        ToolDefinition::function("get_time", "The time in a city.", schema),
    ]
}

/// The one request the server saw, checked for what every call sends.
fn only_request(server: &MockServer) -> (RecordedRequest, Value) {
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "requests: {requests:?}");
    let request = requests.into_iter().next().unwrap();
    assert_request_basics(&request);
    let body = request.json().expect("a JSON body");
    (request, body)
}

fn assert_request_basics(request: &RecordedRequest) {
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("test-key"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    let body = request.json().expect("a JSON body");
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["stream"], true);
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": common::PROMPT}])
    );
}

fn stream_error(
    items: &[Result<LlmStreamEvent, agent_adaptor_llm::LlmError>],
) -> agent_adaptor_llm::LlmStreamError {
    match items.last() {
        Some(Ok(LlmStreamEvent::Error(error))) => error.clone(),
        other => panic!("expected a terminal Error, got {other:?}"),
    }
}

#[tokio::test]
async fn text() {
    let server = common::server(vec![Reply::Text("Hello from the mock model.".into())]).await;
    let items = common::run(&provider(&server), &config().with_temperature(0.2)).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let (_, body) = only_request(&server);
    assert_eq!(body["max_tokens"], 8192);
    assert_eq!(body["temperature"], json!(0.2));
    assert!(body.get("tools").is_none());
    assert!(body.get("thinking").is_none());
}

#[tokio::test]
async fn reasoning() {
    let server = common::server(vec![Reply::ReasoningThenText {
        reasoning: "The user wants a greeting.".into(),
        text: "Hi there.".into(),
    }])
    .await;
    let config = config()
        .with_reasoning(ReasoningEffort::Low)
        .with_temperature(0.5);
    let items = common::run(&provider(&server), &config).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let (_, body) = only_request(&server);
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(body["max_tokens"], 2048 + 8192);
    assert!(
        body.get("temperature").is_none(),
        "no temperature with thinking"
    );
    // The item is the record: signed, so it can be replayed.
    let item = items
        .iter()
        .find_map(|item| match item {
            Ok(LlmStreamEvent::ReasoningItem(item)) => Some(item.clone()),
            _ => None,
        })
        .expect("a reasoning item");
    assert_eq!(item.provider, "anthropic");
    assert!(
        item.signature
            .as_deref()
            .is_some_and(|s| s.starts_with("mocksig-"))
    );
}

#[tokio::test]
async fn parallel_tool_calls() {
    let server = common::server(vec![Reply::ToolCalls(vec![
        ToolCallSpec::new("get_weather", json!({"city": "Paris"})),
        ToolCallSpec::new("get_time", json!({"city": "Tokyo, Japan"})),
    ])])
    .await;
    let items = common::run(&provider(&server), &config().with_tools(weather_tools())).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let (_, body) = only_request(&server);
    assert_eq!(
        body["tools"],
        json!([
            {
                "name": "get_weather",
                "description": "The weather in a city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
            {
                "name": "get_time",
                "description": "The time in a city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        ])
    );
    assert!(
        body.get("tool_choice").is_none(),
        "parallel calls are the default"
    );
}

#[tokio::test]
async fn parallel_tool_calls_off_sets_tool_choice() {
    let server = common::server(vec![Reply::Text("ok".into())]).await;
    let mut config = config().with_tools(weather_tools());
    config.parallel_tool_calls = Some(false);
    common::run(&provider(&server), &config).await;
    let (_, body) = only_request(&server);
    assert_eq!(
        body["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
}

#[tokio::test]
async fn error_envelope_in_a_200_stream() {
    let server = common::server(vec![Reply::StreamErrorEnvelope {
        partial_text: "Partial answer".into(),
        code: "overloaded_error".into(),
        status: 529,
        message: "Overloaded".into(),
    }])
    .await;
    let items = common::run(&provider(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let error = stream_error(&items);
    assert_eq!(error.code.as_deref(), Some("overloaded_error"));
    assert_eq!(error.status, Some(529));
    assert_eq!(error.kind(), LlmErrorKind::RateLimited);
    only_request(&server);
}

#[tokio::test]
async fn rate_limited_then_success() {
    let server = common::server(vec![Reply::Attempts(vec![
        Reply::HttpError {
            status: 429,
            body: Value::Null,
            retry_after: Some(0),
        },
        Reply::Text("Second time lucky.".into()),
    ])])
    .await;
    let items = common::run(&provider(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let Some(Ok(LlmStreamEvent::Done(metadata))) = items.last() else {
        panic!("expected Done, got {items:?}");
    };
    let retry = metadata.retry_metadata.as_ref().expect("retry metadata");
    assert_eq!(retry.attempts, 1);
    assert_eq!(retry.reasons.len(), 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    requests.iter().for_each(assert_request_basics);
    assert_eq!(
        requests[0].body, requests[1].body,
        "the retry resends the same request"
    );
}

#[tokio::test]
async fn rate_limited_after_the_first_event_is_not_retried() {
    let server = common::server(vec![Reply::StreamErrorEnvelope {
        partial_text: "Half an ans".into(),
        code: "rate_limit_error".into(),
        status: 429,
        message: "Number of request tokens has exceeded your per-minute rate limit".into(),
    }])
    .await;
    let items = common::run(&provider(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let text: String = items
        .iter()
        .filter_map(|item| match item {
            Ok(LlmStreamEvent::TextDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Half an ans");
    let error = stream_error(&items);
    assert_eq!(error.status, Some(429));
    assert_eq!(error.code.as_deref(), Some("rate_limit_error"));
    only_request(&server);
}

#[tokio::test]
async fn cut_off_stream_is_incomplete() {
    let server = common::server(vec![Reply::CutOff {
        partial_text: "This answer never ends".into(),
    }])
    .await;
    let provider = provider(&server);
    let items = common::run(&provider, &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    match items.last() {
        Some(Err(error)) => assert_eq!(error.kind, LlmErrorKind::Incomplete),
        other => panic!("expected an Incomplete error, got {other:?}"),
    }
    assert!(
        items[..items.len() - 1]
            .iter()
            .all(|item| matches!(item, Ok(LlmStreamEvent::TextDelta(_))))
    );

    let turn = provider
        .chat_completion(&common::prompt(), &config())
        .await
        .unwrap();
    assert!(!turn.complete);
    assert_eq!(turn.text, "This answer never ends");
    assert!(turn.incomplete_reason.is_some());

    let stream = provider
        .chat_completion_stream(&common::prompt(), &config())
        .await
        .unwrap();
    let turn = collect_turn(stream, &Default::default(), |_| {})
        .await
        .unwrap();
    assert!(!turn.complete);
    assert_eq!(
        server.requests().len(),
        3,
        "a cut-off after the first event is not retried"
    );
}

#[tokio::test]
async fn missing_finish_reason() {
    let server = common::server(vec![Reply::NoFinishReason("No reason given.".into())]).await;
    let items = common::run(&provider(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let Some(Ok(LlmStreamEvent::Done(metadata))) = items.last() else {
        panic!("expected Done, got {items:?}");
    };
    assert_eq!(metadata.finish_reason, None);
    assert_eq!(metadata.provider_finish_reason, None);
    only_request(&server);
}

#[tokio::test]
async fn http_400_is_a_call_error_and_not_retried() {
    let server = common::server(vec![Reply::HttpError {
        status: 400,
        body: Value::Null,
        retry_after: None,
    }])
    .await;
    let items = common::run(&provider(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let [Err(error)] = items.as_slice() else {
        panic!("expected one call error, got {items:?}");
    };
    assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
    assert_eq!(error.status, Some(400));
    assert_eq!(error.code.as_deref(), Some("invalid_request_error"));
    assert_eq!(error.provider.as_deref(), Some("mock"));
    only_request(&server);
}

#[tokio::test]
async fn tool_round_trip_request_shape() {
    let server = common::server(vec![
        Reply::Text("unused".into()),
        Reply::Text("Paris is sunny; Tokyo is at 9pm.".into()),
    ])
    .await;
    let history = vec![
        Message::system("Be brief."),
        Message::user(common::PROMPT),
        Message::assistant("Checking both.").with_tool_calls(vec![
            ToolCall::new("toolu_1", "get_weather", json!({"city": "Paris"})),
            ToolCall::new("toolu_2", "get_time", json!({"city": "Tokyo"})),
        ]),
        Message::tool_result("toolu_1", "sunny"),
        Message::tool_result("toolu_2", "21:00"),
    ];
    let turn = provider(&server)
        .chat_completion(&history, &config().with_tools(weather_tools()))
        .await
        .unwrap();
    assert!(turn.complete);
    assert_eq!(turn.text, "Paris is sunny; Tokyo is at 9pm.");
    assert_eq!(turn.metadata.finish_reason.as_deref(), Some("stop"));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json().unwrap();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": common::PROMPT},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {"city": "Tokyo"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "21:00"},
            ]},
        ])
    );
}

#[tokio::test]
async fn reasoning_round_trip_replays_the_signed_block() {
    let server = common::server(vec![
        Reply::ReasoningThenText {
            reasoning: "Think first.".into(),
            text: "Answer one.".into(),
        },
        Reply::Text("Answer two.".into()),
    ])
    .await;
    let provider = provider(&server);
    let config = config().with_reasoning(ReasoningEffort::Medium);
    let first = provider
        .chat_completion(&common::prompt(), &config)
        .await
        .unwrap();
    assert_eq!(first.reasoning.len(), 1);
    let signature = first.reasoning[0].signature.clone().expect("signed");
    let mut history = common::prompt();
    history.push(Message::assistant(first.text.clone()).with_reasoning(first.reasoning.clone()));
    history.push(Message::user("And again?"));
    let second = provider.chat_completion(&history, &config).await.unwrap();
    assert_eq!(second.text, "Answer two.");
    let body = server.requests()[1].json().unwrap();
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Think first.", "signature": signature},
            {"type": "text", "text": "Answer one."},
        ]})
    );
    assert_eq!(body["max_tokens"], 8192 + 8192);
}

#[tokio::test]
async fn no_retry_config_surfaces_the_first_429() {
    let server = common::server(vec![Reply::HttpError {
        status: 429,
        body: Value::Null,
        retry_after: Some(0),
    }])
    .await;
    let provider = common::provider(
        AnthropicMessages::new().with_retry_config(LlmRetryConfig::no_retry()),
        &format!("{}/v1", server.base_url()),
    );
    let items = common::run(&provider, &config()).await;
    let [Err(error)] = items.as_slice() else {
        panic!("expected one call error, got {items:?}");
    };
    assert_eq!(error.kind, LlmErrorKind::RateLimited);
    assert_eq!(error.code.as_deref(), Some("rate_limit_error"));
    only_request(&server);
}
