//! Golden event sequences of the Gemini driver against the mock server
//! (`/v1beta/models/{model}:streamGenerateContent?alt=sse`), and the
//! requests it sends.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agent_adaptor_llm::{
    GeminiGenerateContent, LlmCallConfig, LlmErrorKind, LlmStreamEvent, Message, Provider,
    ReasoningEffort, ToolDefinition,
};
use agent_adaptor_testkit::mock::{MockServer, RecordedRequest, Reply, ToolCallSpec};
use serde_json::{Value, json};

const MODEL: &str = "gemini-2.5-flash";

/// A provider for the mock at `/v1beta`, with millisecond retries.
fn gemini(server: &MockServer) -> Provider {
    common::provider(
        GeminiGenerateContent::new().with_retry_config(common::fast_retry()),
        &format!("{}/v1beta", server.base_url()),
    )
}

fn config() -> LlmCallConfig {
    LlmCallConfig::new(MODEL)
}

fn weather_tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::function(
            "get_weather",
            "The weather in a city.",
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {"city": {"type": "string"}},
                "required": ["city"]
            }),
        ),
        ToolDefinition::function(
            "get_time",
            "The time in a city.",
            json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {"city": {"type": "string"}}
            }),
        ),
    ]
}

/// The one request the server saw, checked for what every Gemini request
/// has: the streaming method with `alt=sse` on the model's path, the key in
/// `x-goog-api-key`, the golden conversation, and no `stream`/`model` body
/// fields (Google rejects unknown fields).
fn assert_gemini_request(request: &RecordedRequest) -> Value {
    assert_eq!(request.method, "POST");
    assert_eq!(
        request.path,
        format!("/v1beta/models/{MODEL}:streamGenerateContent")
    );
    assert_eq!(request.query.as_deref(), Some("alt=sse"));
    assert_eq!(request.header("x-goog-api-key"), Some("test-key"));
    assert_eq!(request.header("authorization"), None);
    let body = request.json().expect("a JSON body");
    assert_eq!(
        body["contents"],
        json!([{"role": "user", "parts": [{"text": common::PROMPT}]}])
    );
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "Be brief."}]})
    );
    assert!(body.get("stream").is_none(), "{body}");
    assert!(body.get("model").is_none(), "{body}");
    body
}

fn last_done(
    items: &[Result<LlmStreamEvent, agent_adaptor_llm::LlmError>],
) -> &agent_adaptor_llm::LlmCompletionMetadata {
    match items.last() {
        Some(Ok(LlmStreamEvent::Done(metadata))) => metadata,
        other => panic!("expected Done last, got {other:?}"),
    }
}

#[tokio::test]
async fn text() {
    let server = common::server(vec![Reply::Text("Hello from the mock model.".into())]).await;
    let items = common::run(&gemini(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = assert_gemini_request(&requests[0]);
    assert!(body.get("tools").is_none());
    assert!(body.get("generationConfig").is_none());
    let done = last_done(&items);
    assert_eq!(done.model.as_deref(), Some(MODEL));
    assert_eq!(done.response_model.as_deref(), Some(MODEL));
}

#[tokio::test]
async fn reasoning() {
    let server = common::server(vec![Reply::ReasoningThenText {
        reasoning: "The user wants a greeting.".into(),
        text: "Hi there!".into(),
    }])
    .await;
    let config = config()
        .with_reasoning(ReasoningEffort::Medium)
        .with_max_tokens(1024);
    let items = common::run(&gemini(&server), &config).await;
    insta::assert_json_snapshot!(common::golden(&items));

    let requests = server.requests();
    let body = assert_gemini_request(&requests[0]);
    assert_eq!(
        body["generationConfig"],
        json!({
            "maxOutputTokens": 1024,
            "thinkingConfig": {"thinkingBudget": 8192, "includeThoughts": true}
        })
    );
}

#[tokio::test]
async fn parallel_tool_calls() {
    let server = common::server(vec![Reply::ToolCalls(vec![
        ToolCallSpec::new("get_weather", json!({"city": "Paris"})),
        ToolCallSpec::new("get_time", json!({"city": "Tokyo"})),
    ])])
    .await;
    let config = config().with_tools(weather_tools());
    let items = common::run(&gemini(&server), &config).await;
    insta::assert_json_snapshot!(common::golden(&items));

    let requests = server.requests();
    let body = assert_gemini_request(&requests[0]);
    assert_eq!(
        body["tools"],
        json!([{"functionDeclarations": [
            {
                "name": "get_weather",
                "description": "The weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
            },
            {
                "name": "get_time",
                "description": "The time in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}
            }
        ]}])
    );
}

/// The calls of one turn go back as `functionCall` parts and their results
/// as one user turn of `functionResponse` parts; the mock counts the model
/// turn and answers with the next reply.
#[tokio::test]
async fn tool_round_trip() {
    let server = common::server(vec![
        Reply::ToolCalls(vec![
            ToolCallSpec::new("get_weather", json!({"city": "Paris"})),
            ToolCallSpec::new("get_time", json!({"city": "Tokyo"})),
        ]),
        Reply::Text("Sunny in Paris, noon in Tokyo.".into()),
    ])
    .await;
    let provider = gemini(&server);
    let config = config().with_tools(weather_tools());
    let first = provider
        .chat_completion(&common::prompt(), &config)
        .await
        .unwrap();
    assert!(first.complete);
    assert_eq!(first.metadata.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(first.tool_calls.len(), 2);

    let mut messages = common::prompt();
    messages.push(Message::assistant(first.text.clone()).with_tool_calls(first.tool_calls.clone()));
    messages.push(Message::tool_result(
        first.tool_calls[0].id.clone(),
        "sunny",
    ));
    messages.push(Message::tool_result(
        first.tool_calls[1].id.clone(),
        "{\"time\":\"12:00\"}",
    ));
    let second = provider.chat_completion(&messages, &config).await.unwrap();
    assert_eq!(second.text, "Sunny in Paris, noon in Tokyo.");
    assert_eq!(second.metadata.finish_reason.as_deref(), Some("stop"));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let body = requests[1].json().unwrap();
    assert_eq!(
        body["contents"],
        json!([
            {"role": "user", "parts": [{"text": common::PROMPT}]},
            {"role": "model", "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "get_time", "args": {"city": "Tokyo"}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"result": "sunny"}}},
                {"functionResponse": {"name": "get_time", "response": {"time": "12:00"}}}
            ]}
        ])
    );
}

/// Google's error object in a `data:` frame of a `200` stream: an `Error`
/// with the status string as code and the numeric code as status, not a
/// skipped frame, and not retried.
#[tokio::test]
async fn error_envelope_in_200_stream() {
    let server = common::server(vec![Reply::StreamErrorEnvelope {
        partial_text: String::new(),
        code: "UNAVAILABLE".into(),
        status: 503,
        message: "The model is overloaded. Please try again later.".into(),
    }])
    .await;
    let items = common::run(&gemini(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));

    assert_eq!(items.len(), 1);
    let Ok(LlmStreamEvent::Error(error)) = &items[0] else {
        panic!("expected an Error event, got {items:?}");
    };
    assert_eq!(error.code.as_deref(), Some("UNAVAILABLE"));
    assert_eq!(error.status, Some(503));
    assert_eq!(
        error.message,
        "The model is overloaded. Please try again later."
    );
    assert_eq!(error.kind(), LlmErrorKind::Unavailable);
    // Nothing was delivered before the error, so it was retried (1 + 2
    // retries); the last attempt's error reaches the consumer as sent.
    assert_eq!(server.requests().len(), 3);
}

/// A transient error that is the first event of a stream is retried, and a
/// later attempt's answer is what the consumer sees.
#[tokio::test]
async fn transient_error_as_the_first_event_is_retried() {
    let server = common::server(vec![Reply::Attempts(vec![
        Reply::StreamErrorEnvelope {
            partial_text: String::new(),
            code: "UNAVAILABLE".into(),
            status: 503,
            message: "overloaded".into(),
        },
        Reply::Text("Recovered.".into()),
    ])])
    .await;
    let items = common::run(&gemini(&server), &config()).await;
    let text: String = items
        .iter()
        .filter_map(|item| match item {
            Ok(LlmStreamEvent::TextDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Recovered.");
    let Some(Ok(LlmStreamEvent::Done(done))) = items.last() else {
        panic!("expected Done, got {items:?}");
    };
    let retry = done.retry_metadata.as_ref().expect("retry metadata");
    assert_eq!(retry.attempts, 1);
    assert!(
        retry.reasons[0].contains("UNAVAILABLE"),
        "{:?}",
        retry.reasons
    );
    assert_eq!(server.requests().len(), 2);
}

/// The bare (not `data:`-framed) error body Google sends mid-stream.
#[tokio::test]
async fn bare_stream_error_body() {
    let server = common::server(vec![Reply::StreamError {
        message: "Internal error encountered.".into(),
    }])
    .await;
    let items = common::run(&gemini(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));

    let Some(Ok(LlmStreamEvent::Error(error))) = items.last() else {
        panic!("expected an Error event, got {items:?}");
    };
    assert_eq!(error.code.as_deref(), Some("INTERNAL"));
    assert_eq!(error.status, Some(500));
    assert_eq!(error.message, "Internal error encountered.");
}

#[tokio::test]
async fn retry_429_then_success() {
    let server = common::server(vec![Reply::Attempts(vec![
        Reply::HttpError {
            status: 429,
            body: Value::Null,
            retry_after: Some(0),
        },
        Reply::Text("Second time lucky.".into()),
    ])])
    .await;
    let items = common::run(&gemini(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));

    let retry = last_done(&items)
        .retry_metadata
        .as_ref()
        .expect("retry metadata");
    assert_eq!(retry.attempts, 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body);
}

/// A `429` envelope after text was delivered: the text, then the `Error`
/// with status 429; nothing is retried.
#[tokio::test]
async fn rate_limit_after_first_event_is_not_retried() {
    let server = common::server(vec![Reply::StreamErrorEnvelope {
        partial_text: "Partial answer before the limit".into(),
        code: "RESOURCE_EXHAUSTED".into(),
        status: 429,
        message: "Resource has been exhausted (e.g. check quota).".into(),
    }])
    .await;
    let items = common::run(&gemini(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));

    let text: String = items
        .iter()
        .filter_map(|item| match item {
            Ok(LlmStreamEvent::TextDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Partial answer before the limit");
    let Some(Ok(LlmStreamEvent::Error(error))) = items.last() else {
        panic!("expected an Error last, got {items:?}");
    };
    assert_eq!(error.status, Some(429));
    assert_eq!(error.code.as_deref(), Some("RESOURCE_EXHAUSTED"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn cut_off_stream_is_incomplete() {
    let server = common::server(vec![Reply::CutOff {
        partial_text: "This answer will be cut".into(),
    }])
    .await;
    let provider = gemini(&server);
    let items = common::run(&provider, &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));

    assert!(matches!(
        items.first(),
        Some(Ok(LlmStreamEvent::TextDelta(_)))
    ));
    let Some(Err(error)) = items.last() else {
        panic!("expected an Err last, got {items:?}");
    };
    assert_eq!(error.kind, LlmErrorKind::Incomplete);
    assert!(
        !items
            .iter()
            .any(|item| matches!(item, Ok(event) if event.is_terminal()))
    );

    let turn = provider
        .chat_completion(&common::prompt(), &config())
        .await
        .unwrap();
    assert!(!turn.complete);
    assert!(turn.incomplete_reason.is_some());
    assert!(!turn.text.is_empty());
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn missing_finish_reason() {
    let server = common::server(vec![Reply::NoFinishReason("No reason given.".into())]).await;
    let items = common::run(&gemini(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));

    let done = last_done(&items);
    assert_eq!(done.finish_reason, None);
    assert_eq!(done.provider_finish_reason, None);
}

#[tokio::test]
async fn http_400_is_not_retried() {
    let server = common::server(vec![Reply::HttpError {
        status: 400,
        body: Value::Null,
        retry_after: None,
    }])
    .await;
    let items = common::run(&gemini(&server), &config()).await;
    insta::assert_json_snapshot!(common::golden(&items));

    let [Err(error)] = items.as_slice() else {
        panic!("expected one call error, got {items:?}");
    };
    assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
    assert_eq!(error.status, Some(400));
    assert_eq!(error.code.as_deref(), Some("INVALID_ARGUMENT"));
    assert_eq!(error.provider.as_deref(), Some("mock"));
    assert_eq!(server.requests().len(), 1);
}
