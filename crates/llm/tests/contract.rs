//! The parts of the stream contract that need no network: folding a turn
//! under limits, the Provider's filtering and limits, retry arithmetic, and
//! error classification.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agent_adaptor_llm::retry::{is_transient_status, parse_retry_after};
use agent_adaptor_llm::{
    LlmCallConfig, LlmCompletionMetadata, LlmError, LlmErrorKind, LlmResponseStream,
    LlmRetryConfig, LlmStreamError, LlmStreamEvent, Message, Protocol, Provider, ProviderEndpoint,
    ReasoningContentPart, ReasoningText, ToolCall, TurnLimits, collect_turn, limit_stream,
};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::json;

type Item = Result<LlmStreamEvent, LlmError>;

fn scripted(items: Vec<Item>) -> LlmResponseStream {
    Box::pin(futures::stream::iter(items))
}

fn done(finish: Option<&str>) -> LlmStreamEvent {
    let mut metadata = LlmCompletionMetadata::default();
    metadata.finish_reason = finish.map(str::to_owned);
    LlmStreamEvent::done(metadata)
}

fn reasoning_item(text: &str) -> LlmStreamEvent {
    LlmStreamEvent::ReasoningItem(
        ReasoningContentPart::opaque("anthropic")
            .with_signature("sig")
            .with_text(ReasoningText::Plain { text: text.into() }),
    )
}

#[tokio::test]
async fn collect_turn_folds_text_items_and_the_last_tool_call_set() {
    let call = |id: &str| ToolCall::new(id, "t", json!({}));
    let mut seen = 0;
    let turn = collect_turn(
        scripted(vec![
            Ok(LlmStreamEvent::ReasoningDelta {
                delta: "plan".into(),
                summary: false,
            }),
            Ok(reasoning_item("plan")),
            Ok(LlmStreamEvent::TextDelta("Hel".into())),
            Ok(LlmStreamEvent::TextDelta(String::new())),
            Ok(LlmStreamEvent::TextDelta("lo".into())),
            Ok(LlmStreamEvent::ToolCalls(vec![call("a")])),
            Ok(LlmStreamEvent::ToolCalls(vec![call("a"), call("b")])),
            Ok(done(Some("tool_calls"))),
        ]),
        &TurnLimits::default(),
        |_| seen += 1,
    )
    .await
    .unwrap();
    assert_eq!(seen, 8, "observe sees every event, fillers included");
    assert_eq!(turn.text, "Hello");
    assert_eq!(
        turn.reasoning.len(),
        1,
        "deltas are not folded: the item is the record"
    );
    assert_eq!(turn.reasoning_text(), "plan");
    assert_eq!(turn.tool_calls, vec![call("a"), call("b")]);
    assert!(turn.complete);
    assert_eq!(turn.metadata.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(turn.incomplete_reason, None);
}

#[tokio::test]
async fn a_stream_without_terminal_is_incomplete_or_an_error_when_required() {
    let items = || vec![Ok(LlmStreamEvent::TextDelta("partial".into()))];
    let turn = collect_turn(scripted(items()), &TurnLimits::default(), |_| {})
        .await
        .unwrap();
    assert!(!turn.complete);
    assert_eq!(turn.text, "partial");
    assert!(turn.incomplete_reason.is_some());

    let error = collect_turn(
        scripted(items()),
        &TurnLimits::default().requiring_terminal_event(),
        |_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::MalformedResponse);
}

#[tokio::test]
async fn a_dropped_connection_is_an_incomplete_turn_not_an_error() {
    let turn = collect_turn(
        scripted(vec![
            Ok(LlmStreamEvent::TextDelta("par".into())),
            Err(LlmError::new(LlmErrorKind::Incomplete, "connection reset")),
        ]),
        &TurnLimits::default(),
        |_| {},
    )
    .await
    .unwrap();
    assert!(!turn.complete);
    assert_eq!(turn.incomplete_reason.as_deref(), Some("connection reset"));
}

#[tokio::test]
async fn a_provider_error_keeps_code_and_status() {
    let error = collect_turn(
        scripted(vec![
            Ok(LlmStreamEvent::TextDelta("x".into())),
            Ok(LlmStreamEvent::Error(LlmStreamError::provider(
                Some("rate_limit_exceeded"),
                Some(429),
                "slow down",
            ))),
        ]),
        &TurnLimits::default(),
        |_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(error.code.as_deref(), Some("rate_limit_exceeded"));
    assert_eq!(error.status, Some(429));
    assert_eq!(error.kind, LlmErrorKind::RateLimited);
    assert_eq!(error.message, "slow down");
}

#[tokio::test]
async fn the_byte_cap_counts_text_and_reasoning_items() {
    let error = collect_turn(
        scripted(vec![
            Ok(reasoning_item("123456")),
            Ok(LlmStreamEvent::TextDelta("12345".into())),
            Ok(done(Some("stop"))),
        ]),
        &TurnLimits::default().with_max_response_bytes(10),
        |_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::MalformedResponse);
    assert!(error.message.contains("10-byte limit"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn time_limits_fail_as_unavailable() {
    let silent: LlmResponseStream = Box::pin(futures::stream::pending());
    let error = collect_turn(
        silent,
        &TurnLimits::default().with_first_event(Duration::from_secs(5)),
        |_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Unavailable);
    assert!(error.message.contains("no response within"), "{error}");

    let stalls: LlmResponseStream = Box::pin(
        futures::stream::iter(vec![Ok(LlmStreamEvent::TextDelta("a".into()))])
            .chain(futures::stream::pending()),
    );
    let error = collect_turn(
        stalls,
        &TurnLimits::default()
            .with_total(Duration::from_secs(5))
            .with_first_event(Duration::from_secs(1)),
        |_| {},
    )
    .await
    .unwrap_err();
    assert!(error.message.contains("did not finish within"), "{error}");
}

#[tokio::test]
async fn limit_stream_yields_the_breach_and_ends() {
    let stream = limit_stream(
        scripted(vec![Ok(LlmStreamEvent::TextDelta("x".into()))]),
        TurnLimits::default().requiring_terminal_event(),
    );
    let items: Vec<Item> = stream.collect().await;
    assert_eq!(items.len(), 2);
    assert_eq!(
        items[1].as_ref().unwrap_err().kind,
        LlmErrorKind::MalformedResponse
    );
}

/// A driver that replays events and records the endpoint it was given.
struct Replay(Vec<LlmStreamEvent>);

#[async_trait]
impl Protocol for Replay {
    fn id(&self) -> &'static str {
        "replay"
    }
    fn default_base_url(&self) -> &'static str {
        "http://127.0.0.1:9/v1"
    }
    async fn chat_completion_stream(
        &self,
        endpoint: &ProviderEndpoint,
        _messages: &[Message],
        config: &LlmCallConfig,
    ) -> Result<LlmResponseStream, LlmError> {
        assert_eq!(
            endpoint.url("/chat/completions?x=1"),
            "http://h/v1/chat/completions?k=v&x=1"
        );
        let headers = endpoint.headers(&config.extra_headers);
        assert!(headers.contains(&("authorization".into(), "Bearer key".into())));
        assert!(
            headers.contains(&("x-extra".into(), "2".into())),
            "{headers:?}"
        );
        Ok(scripted(self.0.iter().cloned().map(Ok).collect()))
    }
}

#[tokio::test]
async fn a_provider_never_yields_an_empty_text_delta() {
    let provider = Provider::new(
        "replay",
        Replay(vec![
            LlmStreamEvent::TextDelta(String::new()),
            LlmStreamEvent::TextDelta("Hi".into()),
            LlmStreamEvent::TextDelta(String::new()),
            done(None),
        ]),
    )
    .base_url("http://h/v1/?k=v")
    .api_key("key")
    .header("X-Extra", "1");
    let config = LlmCallConfig::new("m").with_header("x-extra", "2");
    let items: Vec<Item> = provider
        .chat_completion_stream(&[Message::user("hi")], &config)
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(items.len(), 2);
    assert_eq!(
        items[0].as_ref().unwrap(),
        &LlmStreamEvent::TextDelta("Hi".into())
    );
    let turn = provider
        .chat_completion(&[Message::user("hi")], &config)
        .await
        .unwrap();
    assert_eq!(
        turn.metadata.finish_reason, None,
        "a missing reason stays None"
    );
}

#[test]
fn provider_debug_never_shows_the_key() {
    let provider = Provider::new("replay", Replay(Vec::new())).api_key("sk-secret");
    let debug = format!("{provider:?}");
    assert!(!debug.contains("sk-secret"), "{debug}");
}

#[test]
fn retry_arithmetic() {
    let config = LlmRetryConfig::default();
    assert_eq!(config.max_retries, 2);
    assert_eq!(config.max_retry_elapsed, Duration::from_secs(30));
    assert_eq!(LlmRetryConfig::no_retry().max_retries, 0);
    for attempt in 0..4 {
        let base = 2f64.powi(attempt as i32);
        let wait = config.backoff(attempt).as_secs_f64();
        assert!(
            wait >= base * 0.75 - 1e-9 && wait <= base * 1.25 + 1e-9,
            "{attempt}: {wait}"
        );
    }
    assert!(
        config.backoff(20) <= Duration::from_secs(75),
        "capped at max_backoff (+jitter)"
    );
    assert_eq!(
        config.wait(0, Some(Duration::from_secs(7))),
        Duration::from_secs(7)
    );
    assert!(config.wait(0, Some(Duration::from_secs(600))) < Duration::from_secs(2));
    assert_eq!(
        parse_retry_after(Some("3"), None),
        Some(Duration::from_secs(3))
    );
    assert_eq!(
        parse_retry_after(Some("3"), Some("250")),
        Some(Duration::from_millis(250))
    );
    assert_eq!(
        parse_retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT"), None),
        None
    );
    for status in [408, 409, 429, 500, 502, 503, 529] {
        assert!(is_transient_status(status), "{status}");
    }
    for status in [400, 401, 403, 404, 413, 501] {
        assert!(!is_transient_status(status), "{status}");
    }
}

#[test]
fn classification_matches_fields_not_text() {
    use LlmErrorKind as K;
    let kind = |code: Option<&str>, status: Option<u16>, message: &str| {
        LlmStreamError::provider(code, status, message).kind()
    };
    assert_eq!(
        kind(Some("invalid_api_key"), Some(401), ""),
        K::Authentication
    );
    assert_eq!(kind(None, Some(403), ""), K::Authentication);
    assert_eq!(
        kind(Some("overloaded_error"), Some(529), ""),
        K::RateLimited
    );
    assert_eq!(kind(None, Some(429), "slow down"), K::RateLimited);
    assert_eq!(
        kind(None, Some(429), "You exceeded your current quota"),
        K::QuotaExhausted
    );
    assert_eq!(
        kind(Some("insufficient_quota"), Some(429), ""),
        K::QuotaExhausted
    );
    assert_eq!(kind(None, Some(402), ""), K::QuotaExhausted);
    assert_eq!(
        kind(Some("RESOURCE_EXHAUSTED"), Some(429), ""),
        K::RateLimited
    );
    assert_eq!(kind(None, Some(503), ""), K::Unavailable);
    assert_eq!(kind(None, Some(501), ""), K::Other);
    assert_eq!(kind(None, Some(422), ""), K::InvalidRequest);
    assert_eq!(
        kind(Some("malformed_response"), None, ""),
        K::MalformedResponse
    );
    assert_eq!(
        kind(None, None, "rate limit"),
        K::Other,
        "free text is not parsed"
    );
    let error = LlmStreamError::provider(Some("server_error"), Some(502), "upstream died");
    assert_eq!(error.to_string(), "server_error (502): upstream died");
    let http = LlmError::http(429, Some("rate_limit_exceeded".into()), "slow");
    assert!(http.is_transient());
    assert_eq!(http.to_string(), "rate_limit_exceeded (429): slow");
}
