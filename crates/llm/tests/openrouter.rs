//! The OpenRouter protocol: Chat Completions with OpenRouter's extras, against
//! the mock model server and (for what the mock does not send: `usage.cost`,
//! `gen-` ids, `: OPENROUTER PROCESSING` comments) a canned stream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::thread::JoinHandle;

use agent_adaptor_llm::{
    LlmCallConfig, LlmErrorKind, LlmStreamEvent, OpenRouter, Provider, ReasoningEffort,
};
use agent_adaptor_testkit::mock::{MockServer, Reply};
use serde_json::{Value, json};

const MODEL: &str = "anthropic/claude-golden";

fn openrouter(base_url: &str) -> Provider {
    common::provider(
        OpenRouter::new()
            .with_retry_config(common::fast_retry())
            .with_app("https://app.example", "Golden App"),
        base_url,
    )
}

fn mock(server: &MockServer) -> Provider {
    openrouter(&format!("{}/v1", server.base_url()))
}

/// A one-shot HTTP server on a thread: answers the first request with
/// `status` and `body` (as `text/event-stream`), then returns the raw
/// request head and body.
fn canned(status: u16, body: String) -> (String, JoinHandle<(String, Value)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/api/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line);
        }
        let mut request = vec![0; length];
        reader.read_exact(&mut request).unwrap();
        let mut stream = reader.into_inner();
        write!(
            stream,
            "HTTP/1.1 {status} X\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        stream.flush().unwrap();
        (head, serde_json::from_slice(&request).unwrap())
    });
    (base, handle)
}

fn data(value: Value) -> String {
    format!("data: {value}\n\n")
}

#[tokio::test]
async fn text_with_cost_from_a_real_shaped_stream() {
    let chunk = |delta: Value, finish: Value| {
        data(json!({
            "id": "gen-1234", "provider": "Anthropic", "model": "anthropic/claude-golden-20250101",
            "object": "chat.completion.chunk", "created": 1,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "native_finish_reason": finish}],
        }))
    };
    let body = [
        ": OPENROUTER PROCESSING\n\n".to_owned(),
        chunk(json!({"role": "assistant", "content": "", "reasoning": "Greet.",
            "reasoning_details": [{"type": "reasoning.text", "text": "Greet.", "format": "anthropic-claude-v1"}]}), Value::Null),
        ": OPENROUTER PROCESSING\n\n".to_owned(),
        chunk(json!({"role": "assistant", "content": "Hello"}), Value::Null),
        chunk(json!({"role": "assistant", "content": " there."}), Value::Null),
        chunk(json!({"role": "assistant", "content": ""}), json!("stop")),
        data(json!({
            "id": "gen-1234", "provider": "Anthropic", "model": "anthropic/claude-golden-20250101",
            "object": "chat.completion.chunk", "created": 1,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}],
            "usage": {"prompt_tokens": 194, "completion_tokens": 12, "total_tokens": 206, "cost": 0.000_95,
                "is_byok": false, "cost_details": {"upstream_inference_cost": null},
                "prompt_tokens_details": {"cached_tokens": 64, "cache_write_tokens": 100},
                "completion_tokens_details": {"reasoning_tokens": 4}},
        })),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let (base, server) = canned(200, body);
    let config = LlmCallConfig::new(MODEL).with_reasoning(ReasoningEffort::Low);
    let items = common::run(&openrouter(&base), &config).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let Some(Ok(LlmStreamEvent::Done(metadata))) = items.last() else {
        panic!("expected Done, got {items:?}");
    };
    assert_eq!(metadata.provider_cost_usd, Some(0.000_95));
    assert_eq!(
        metadata.prompt_tokens,
        Some(30),
        "194 - 64 cached - 100 written"
    );
    assert_eq!(metadata.cache_read_tokens, Some(64));
    assert_eq!(metadata.cache_creation_tokens, Some(100));
    assert_eq!(metadata.response_id.as_deref(), Some("gen-1234"));

    let (head, body) = server.join().unwrap();
    assert!(
        head.starts_with("POST /api/v1/chat/completions HTTP/1.1\r\n"),
        "{head}"
    );
    let head = head.to_ascii_lowercase();
    assert!(
        head.contains("authorization: bearer test-key\r\n"),
        "{head}"
    );
    assert!(
        head.contains("http-referer: https://app.example\r\n"),
        "{head}"
    );
    assert!(head.contains("x-title: golden app\r\n"), "{head}");
    assert_eq!(body["reasoning"], json!({"effort": "low"}));
    assert!(body.get("reasoning_effort").is_none());
}

#[tokio::test]
async fn text_and_request_shape() {
    let server = common::server(vec![Reply::Text("Hello via the router.".into())]).await;
    let config = LlmCallConfig::new(MODEL)
        .with_reasoning(ReasoningEffort::Medium)
        .with_max_tokens(64);
    let items = common::run(&mock(&server), &config).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer test-key"));
    assert_eq!(request.header("http-referer"), Some("https://app.example"));
    assert_eq!(request.header("x-title"), Some("Golden App"));
    let body = request.json().unwrap();
    assert_eq!(
        body,
        json!({
            "model": MODEL,
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": common::PROMPT},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "usage": {"include": true},
            "max_tokens": 64,
            "reasoning": {"effort": "medium"},
        })
    );
}

#[tokio::test]
async fn error_envelope_keeps_status() {
    let server = common::server(vec![Reply::StreamErrorEnvelope {
        partial_text: "Partly".into(),
        code: "provider_error".into(),
        status: 502,
        message: "Provider returned error".into(),
    }])
    .await;
    let items = common::run(&mock(&server), &LlmCallConfig::new(MODEL)).await;
    insta::assert_json_snapshot!(common::golden(&items));
    let Some(Ok(LlmStreamEvent::Error(error))) = items.last() else {
        panic!("expected an Error, got {items:?}");
    };
    assert_eq!(
        (error.code.as_deref(), error.status),
        (Some("provider_error"), Some(502))
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn payment_required_is_quota_exhausted_and_not_retried() {
    let server = common::server(vec![Reply::HttpError {
        status: 402,
        body: json!({"error": {"code": 402, "message": "Insufficient credits. Add more using https://openrouter.ai/credits"}}),
        retry_after: None,
    }])
    .await;
    let items = common::run(&mock(&server), &LlmCallConfig::new(MODEL)).await;
    let [Err(error)] = items.as_slice() else {
        panic!("expected one call error, got {items:?}");
    };
    assert_eq!(error.kind, LlmErrorKind::QuotaExhausted);
    assert_eq!(error.status, Some(402));
    assert_eq!(server.requests().len(), 1);
}

/// OpenRouter speaks Chat Completions through the same decoder: every golden
/// scenario of `tests/chat.rs` gives the same events through both protocols.
#[tokio::test]
async fn every_chat_golden_scenario_decodes_the_same_through_openrouter() {
    use agent_adaptor_llm::OpenAiChat;
    use agent_adaptor_testkit::mock::ToolCallSpec;
    let scenarios = vec![
        ("text", vec![Reply::Text("Hello there, golden.".into())]),
        (
            "reasoning",
            vec![Reply::ReasoningThenText {
                reasoning: "Think first.".into(),
                text: "Then answer.".into(),
            }],
        ),
        (
            "parallel tool calls",
            vec![Reply::ToolCalls(vec![
                ToolCallSpec::new("a", json!({"x": 1})),
                ToolCallSpec::new("b", json!({"y": [1, 2]})),
            ])],
        ),
        (
            "429 then success",
            vec![Reply::Attempts(vec![
                Reply::HttpError {
                    status: 429,
                    body: Value::Null,
                    retry_after: Some(0),
                },
                Reply::Text("after a retry".into()),
            ])],
        ),
        (
            "429 after the first event",
            vec![Reply::StreamErrorEnvelope {
                partial_text: "partial".into(),
                code: "rate_limit_exceeded".into(),
                status: 429,
                message: "slow down".into(),
            }],
        ),
        (
            "cut off",
            vec![Reply::CutOff {
                partial_text: "half".into(),
            }],
        ),
        (
            "no finish reason",
            vec![Reply::NoFinishReason("no reason given".into())],
        ),
    ];
    let config = LlmCallConfig::new(MODEL);
    for (name, replies) in scenarios {
        let chat_server = common::server(replies.clone()).await;
        let chat = common::provider(
            OpenAiChat::new().with_retry_config(common::fast_retry()),
            &format!("{}/v1", chat_server.base_url()),
        );
        let expected = common::golden(&common::run(&chat, &config).await);
        let server = common::server(replies).await;
        let got = common::golden(&common::run(&mock(&server), &config).await);
        assert_eq!(got, expected, "{name}");
        assert_eq!(
            server.requests().len(),
            chat_server.requests().len(),
            "{name}: same retries"
        );
    }
}
