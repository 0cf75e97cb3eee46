//! Golden event sequences of the OpenAI Responses protocol against the mock
//! server, and the requests it sends.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agent_adaptor_llm::{
    LlmCallConfig, LlmErrorKind, LlmRetryConfig, LlmStreamEvent, OpenAiResponses, Provider,
    ReasoningEffort, ToolDefinition,
};
use agent_adaptor_testkit::mock::{MockServer, RecordedRequest, Reply, ToolCallSpec};
use serde_json::{Value, json};

const MODEL: &str = "gpt-golden";

fn config() -> LlmCallConfig {
    LlmCallConfig::new(MODEL)
}

/// The protocol with fast retries, at the mock's `/v1`.
fn provider_for(server: &MockServer) -> Provider {
    let driver = OpenAiResponses::new().with_retry_config(common::fast_retry());
    common::provider(driver, &format!("{}/v1", server.base_url()))
}

/// The one request the server saw, checked for what every call sends.
fn only_request(server: &MockServer) -> RecordedRequest {
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "exactly one request");
    let request = requests.into_iter().next().unwrap();
    assert_common_request(&request);
    request
}

fn assert_common_request(request: &RecordedRequest) {
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.header("authorization"), Some("Bearer test-key"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    let body = request.json().expect("a JSON body");
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
    assert_eq!(body["instructions"], "Be brief.");
    assert_eq!(
        body["input"],
        json!([{"type": "message", "role": "user", "content": common::PROMPT}])
    );
}

fn stream_error(
    events: &[Result<LlmStreamEvent, agent_adaptor_llm::LlmError>],
) -> agent_adaptor_llm::LlmStreamError {
    match events.last() {
        Some(Ok(LlmStreamEvent::Error(error))) => error.clone(),
        other => panic!("expected a terminal Error, got {other:?}"),
    }
}

fn done_retries(events: &[Result<LlmStreamEvent, agent_adaptor_llm::LlmError>]) -> Option<u32> {
    match events.last() {
        Some(Ok(LlmStreamEvent::Done(metadata))) => {
            metadata.retry_metadata.as_ref().map(|m| m.attempts)
        }
        other => panic!("expected Done, got {other:?}"),
    }
}

#[tokio::test]
async fn text() {
    let server = common::server(vec![Reply::Text("Hello from the Responses mock.".into())]).await;
    let items = common::run(&provider_for(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let body = only_request(&server).json().unwrap();
    for absent in [
        "tools",
        "reasoning",
        "include",
        "temperature",
        "max_output_tokens",
        "text",
    ] {
        assert!(body.get(absent).is_none(), "{absent} not sent: {body}");
    }
}

#[tokio::test]
async fn reasoning() {
    let server = common::server(vec![Reply::ReasoningThenText {
        reasoning: "The user wants a short greeting.".into(),
        text: "Hi there.".into(),
    }])
    .await;
    let config = config().with_reasoning(ReasoningEffort::Medium);
    let items = common::run(&provider_for(&server), &config).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let body = only_request(&server).json().unwrap();
    assert_eq!(
        body["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
}

#[tokio::test]
async fn parallel_tool_calls() {
    let server = common::server(vec![Reply::ToolCalls(vec![
        ToolCallSpec::new("get_weather", json!({"city": "Paris", "unit": "celsius"})),
        ToolCallSpec::new("get_time", json!({"timezone": "Europe/Paris"})),
    ])])
    .await;
    let weather = json!({"type": "object", "properties": {"city": {"type": "string"},
                         "unit": {"type": "string"}}, "required": ["city"]});
    let time = json!({"type": "object", "properties": {"timezone": {"type": "string"}},
                      "required": ["timezone"], "additionalProperties": false});
    let mut config = config().with_tools(vec![
        ToolDefinition::function("get_weather", "Current weather", weather.clone()),
        ToolDefinition::function("get_time", "Current time", time.clone()),
    ]);
    config.parallel_tool_calls = Some(true);
    let items = common::run(&provider_for(&server), &config).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let body = only_request(&server).json().unwrap();
    assert_eq!(
        body["tools"],
        json!([
            {"type": "function", "name": "get_weather", "description": "Current weather",
             "parameters": weather, "strict": false},
            {"type": "function", "name": "get_time", "description": "Current time",
             "parameters": time, "strict": true},
        ])
    );
    assert_eq!(body["parallel_tool_calls"], true);
}

#[tokio::test]
async fn error_envelope_in_a_200_stream() {
    let server = common::server(vec![Reply::StreamErrorEnvelope {
        partial_text: "Partial answer".into(),
        code: "server_error".into(),
        status: 502,
        message: "upstream provider failed".into(),
    }])
    .await;
    let items = common::run(&provider_for(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let error = stream_error(&items);
    assert_eq!(error.code.as_deref(), Some("server_error"));
    assert_eq!(error.status, Some(502));
    assert_eq!(error.message, "upstream provider failed");
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
        Reply::Text("Recovered after a retry.".into()),
    ])])
    .await;
    let items = common::run(&provider_for(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    assert_eq!(done_retries(&items), Some(1));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the 429 and the retry");
    for request in &requests {
        assert_common_request(request);
    }
}

#[tokio::test]
async fn rate_limited_after_the_first_event_is_not_retried() {
    let server = common::server(vec![Reply::StreamErrorEnvelope {
        partial_text: "Half an ans".into(),
        code: "rate_limit_exceeded".into(),
        status: 429,
        message: "Rate limit reached".into(),
    }])
    .await;
    let items = common::run(&provider_for(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    assert!(
        matches!(&items[0], Ok(LlmStreamEvent::TextDelta(_))),
        "partial text first"
    );
    let error = stream_error(&items);
    assert_eq!(error.status, Some(429));
    assert_eq!(error.code.as_deref(), Some("rate_limit_exceeded"));
    assert_eq!(error.kind(), LlmErrorKind::RateLimited);
    only_request(&server);
}

#[tokio::test]
async fn cut_off_stream_is_incomplete() {
    let server = common::server(vec![Reply::CutOff {
        partial_text: "This answer never fini".into(),
    }])
    .await;
    let provider = provider_for(&server);
    let items = common::run(&provider, &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    match items.last() {
        Some(Err(error)) => assert_eq!(error.kind, LlmErrorKind::Incomplete),
        other => panic!("expected an Incomplete error, got {other:?}"),
    }
    let turn = provider
        .chat_completion(&common::prompt(), &config())
        .await
        .expect("an incomplete turn is not a call error");
    assert!(!turn.complete);
    assert_eq!(turn.text, "This answer never fini");
    assert!(turn.incomplete_reason.is_some());
    // One request per call: the drop came after the first event.
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn missing_finish_reason_stays_none() {
    let server = common::server(vec![Reply::NoFinishReason(
        "Complete text, no status.".into(),
    )])
    .await;
    let items = common::run(&provider_for(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));
    match items.last() {
        Some(Ok(LlmStreamEvent::Done(metadata))) => {
            assert_eq!(metadata.finish_reason, None);
            assert_eq!(metadata.provider_finish_reason, None);
        }
        other => panic!("expected Done, got {other:?}"),
    }
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
    let items = common::run(&provider_for(&server), &config()).await;
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
async fn no_retry_config_reaches_the_host_at_once() {
    let server = common::server(vec![Reply::HttpError {
        status: 429,
        body: Value::Null,
        retry_after: Some(0),
    }])
    .await;
    let driver = OpenAiResponses::new().with_retry_config(LlmRetryConfig::no_retry());
    let provider = common::provider(driver, &format!("{}/v1", server.base_url()));
    let items = common::run(&provider, &config()).await;
    match items.as_slice() {
        [Err(error)] => assert_eq!(error.kind, LlmErrorKind::RateLimited),
        other => panic!("expected one call error, got {other:?}"),
    }
    only_request(&server);
}
