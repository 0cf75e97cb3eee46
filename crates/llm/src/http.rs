//! The HTTP plumbing every vendor protocol shares: one client, the request
//! with retries before the first event, error-body parsing, and the stream
//! pipeline bytes → SSE → a vendor's [`WireDecoder`] → events.

use std::collections::VecDeque;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use serde_json::Value;

use crate::error::{LlmError, LlmErrorKind};
use crate::event::LlmStreamEvent;
use crate::message::LlmCallConfig;
use crate::provider::{LlmResponseStream, ProviderEndpoint};
use crate::retry::{LlmRetryConfig, RetryMetadata, is_transient_status, parse_retry_after};
use crate::sse::{SseDecoder, SseItem};

/// The most of an error body read and kept.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// One process-wide client: connect timeout 10 s, no overall timeout (long
/// streams survive), no redirects.
fn client() -> Result<&'static reqwest::Client, Box<LlmError>> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(10))
                .pool_idle_timeout(Duration::from_secs(15))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(|error| {
            Box::new(LlmError::new(
                LlmErrorKind::Other,
                format!("cannot build the HTTP client: {error}"),
            ))
        })
}

/// What a vendor protocol sends.
#[derive(Debug, Clone)]
pub(crate) struct WireRequest {
    /// Appended to the endpoint's base URL (may carry a query).
    pub path: String,
    /// The JSON body.
    pub body: Value,
    /// Protocol headers (`anthropic-version` …); the call's extra headers
    /// and auth are added on top.
    pub headers: Vec<(String, String)>,
}

/// A vendor's stream parser: SSE items in, events out.
pub(crate) trait WireDecoder: Send + 'static {
    /// One decoded SSE item.
    fn item(&mut self, item: SseItem, out: &mut Vec<LlmStreamEvent>);
    /// The body ended cleanly. A protocol without an end marker (Gemini)
    /// emits `Done` here; the others emit nothing and the turn is incomplete.
    fn finish(&mut self, out: &mut Vec<LlmStreamEvent>);
}

/// Sends `request` with retries, and returns the event stream once its
/// first item is known.
pub(crate) async fn stream_call<D: WireDecoder>(
    endpoint: &ProviderEndpoint,
    request: WireRequest,
    config: &LlmCallConfig,
    retry: &LlmRetryConfig,
    decoder: impl Fn() -> D,
) -> Result<LlmResponseStream, LlmError> {
    let client = client().map_err(|error| *error)?;
    let url = endpoint.url(&request.path);
    let mut headers = request.headers.clone();
    headers.extend(config.extra_headers.iter().cloned());
    let headers = endpoint.headers(&headers);
    let body = Bytes::from(serde_json::to_vec(&request.body).map_err(|error| {
        LlmError::new(
            LlmErrorKind::InvalidRequest,
            format!("cannot encode the request: {error}"),
        )
    })?);
    let mut meta = RetryMetadata::default();
    let mut first_failure: Option<Instant> = None;
    loop {
        let mut builder = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.clone());
        for (name, value) in &headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let failure = match builder.send().await {
            // reqwest's text names the URL; the redacted one replaces it.
            Err(error) => LlmError::new(
                LlmErrorKind::Unavailable,
                format!(
                    "request to {} failed: {}",
                    agent_adaptor_driver::redact_url(&url),
                    error.without_url()
                ),
            ),
            Ok(response) if !response.status().is_success() => {
                let error = error_response(response).await;
                let retryable = error.status.is_some_and(is_transient_status)
                    && error.kind != LlmErrorKind::QuotaExhausted;
                if !retryable {
                    return Err(error.with_retry_metadata(finish_meta(meta, first_failure)));
                }
                error
            }
            Ok(response) => {
                let mut events = event_stream(response.bytes_stream().boxed(), decoder());
                match events.next().await {
                    // Nothing was delivered yet: a broken body is retried.
                    Some(Err(error)) => LlmError {
                        kind: LlmErrorKind::Unavailable,
                        ..error
                    },
                    // A transient provider error as the very first event
                    // (Anthropic `overloaded_error`, a gateway's 429
                    // envelope) is retried too, while a retry is allowed;
                    // otherwise the consumer gets it as the provider sent it.
                    Some(Ok(LlmStreamEvent::Error(error)))
                        if error.kind().is_transient()
                            && retry_allowed(retry, &meta, first_failure) =>
                    {
                        LlmError::from_stream(&error)
                    }
                    first => {
                        let meta = finish_meta(meta, first_failure);
                        let head = futures::stream::iter(first);
                        return Ok(with_retry_metadata(Box::pin(head.chain(events)), meta));
                    }
                }
            }
        };
        let started = *first_failure.get_or_insert_with(Instant::now);
        let wait = retry.wait(meta.attempts, failure.retry_after);
        let within_budget = started.elapsed() + wait <= retry.max_retry_elapsed;
        if meta.attempts >= retry.max_retries || !within_budget {
            let meta = finish_meta(meta, first_failure);
            let mut failure = failure.with_retry_metadata(meta);
            if !within_budget && retry.max_retries > 0 {
                failure.message = format!("{} (retry time budget exhausted)", failure.message);
            }
            return Err(failure);
        }
        tracing::debug!(attempt = meta.attempts + 1, ?wait, error = %failure, "retrying LLM call");
        tokio::time::sleep(wait).await;
        meta.attempts += 1;
        meta.total_retry_wait += wait;
        meta.reasons.push(failure.to_string());
        if failure.retry_after.is_some() {
            meta.last_retry_after = failure.retry_after;
        }
    }
}

/// True while another attempt fits the retry count and (without knowing the
/// jittered wait yet) the time budget.
fn retry_allowed(
    retry: &LlmRetryConfig,
    meta: &RetryMetadata,
    first_failure: Option<Instant>,
) -> bool {
    let spent = first_failure.map_or(Duration::ZERO, |started| started.elapsed());
    meta.attempts < retry.max_retries && spent < retry.max_retry_elapsed
}

fn finish_meta(mut meta: RetryMetadata, first_failure: Option<Instant>) -> Option<RetryMetadata> {
    let started = first_failure?;
    meta.total_retry_elapsed = started.elapsed();
    Some(meta)
}

fn with_retry_metadata(
    stream: LlmResponseStream,
    meta: Option<RetryMetadata>,
) -> LlmResponseStream {
    let Some(meta) = meta else {
        return stream;
    };
    Box::pin(stream.map_ok(move |event| match event {
        LlmStreamEvent::Done(mut metadata) => {
            metadata.retry_metadata = Some(meta.clone());
            LlmStreamEvent::Done(metadata)
        }
        other => other,
    }))
}

/// Reads an error response into a classified [`LlmError`].
async fn error_response(response: reqwest::Response) -> LlmError {
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let retry_after = parse_retry_after(
        header("retry-after").as_deref(),
        header("retry-after-ms").as_deref(),
    );
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= ERROR_BODY_LIMIT {
            body.truncate(ERROR_BODY_LIMIT);
            break;
        }
    }
    let (code, message) = parse_error_body(&body);
    let message = message.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&body).trim().to_owned();
        if text.is_empty() {
            format!("HTTP {status}")
        } else {
            text
        }
    });
    let mut error = LlmError::http(status, code, message);
    error.retry_after = retry_after;
    error
}

/// The code and message of a vendor error body: `{"error":{...}}` (OpenAI,
/// Anthropic, Gemini, gateways), a top-level `[{"error":...}]` (Gemini) or
/// `{"message"}`. The code is `error.code` when it is a string, else
/// `error.status` (Gemini's `RESOURCE_EXHAUSTED`), else `error.type`.
pub(crate) fn parse_error_body(body: &[u8]) -> (Option<String>, Option<String>) {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return (None, None);
    };
    let value = match value {
        Value::Array(items) => items.into_iter().next().unwrap_or(Value::Null),
        other => other,
    };
    error_fields(&value)
}

/// [`parse_error_body`] on a parsed value.
pub(crate) fn error_fields(value: &Value) -> (Option<String>, Option<String>) {
    let error = value.get("error").unwrap_or(value);
    if let Some(message) = error.as_str() {
        return (None, Some(message.to_owned()));
    }
    let text = |key: &str| {
        error
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let code = text("code")
        .or_else(|| text("status"))
        .or_else(|| text("type"));
    let message = text("message").or_else(|| {
        value
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    (code, message)
}

/// A numeric status inside an error object (`error.code` as a number, or
/// `error.status` / top-level `status` as a number).
pub(crate) fn error_status(value: &Value) -> Option<u16> {
    let error = value.get("error").unwrap_or(value);
    [error.get("status"), value.get("status"), error.get("code")]
        .into_iter()
        .flatten()
        .find_map(Value::as_u64)
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| (100..=599).contains(n))
}

/// bytes → SSE items → `decoder` → events. Nothing follows a terminal
/// event; a body that breaks yields one [`LlmErrorKind::Incomplete`] error.
fn event_stream<D: WireDecoder>(
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    decoder: D,
) -> LlmResponseStream {
    struct State<D> {
        body: BoxStream<'static, reqwest::Result<Bytes>>,
        sse: SseDecoder,
        decoder: D,
        queue: VecDeque<LlmStreamEvent>,
        items: Vec<SseItem>,
        events: Vec<LlmStreamEvent>,
        ended: bool,
        done: bool,
    }
    impl<D: WireDecoder> State<D> {
        fn decode(&mut self) {
            for item in self.items.drain(..) {
                self.decoder.item(item, &mut self.events);
            }
            self.queue.extend(self.events.drain(..));
        }
    }
    let state = State {
        body,
        sse: SseDecoder::new(),
        decoder,
        queue: VecDeque::new(),
        items: Vec::new(),
        events: Vec::new(),
        ended: false,
        done: false,
    };
    Box::pin(futures::stream::unfold(state, |mut state| async move {
        loop {
            if state.done {
                return None;
            }
            if let Some(event) = state.queue.pop_front() {
                if event.is_terminal() {
                    state.done = true;
                }
                return Some((Ok(event), state));
            }
            if state.ended {
                return None;
            }
            match state.body.next().await {
                Some(Ok(bytes)) => {
                    state.sse.push(&bytes, &mut state.items);
                    state.decode();
                }
                Some(Err(error)) => {
                    state.ended = true;
                    state.done = true;
                    let error = LlmError::new(
                        LlmErrorKind::Incomplete,
                        format!(
                            "the connection dropped before the terminal event: {}",
                            error.without_url()
                        ),
                    );
                    return Some((Err(error), state));
                }
                None => {
                    state.ended = true;
                    state.sse.finish(&mut state.items);
                    state.decode();
                    state.decoder.finish(&mut state.events);
                    state.queue.extend(state.events.drain(..));
                }
            }
        }
    }))
}

/// A JSON frame that does not parse, as a provider error event.
pub(crate) fn unparseable(what: &str, data: &str, error: &serde_json::Error) -> LlmStreamEvent {
    let preview: String = data.chars().take(200).collect();
    LlmStreamEvent::Error(crate::error::LlmStreamError::provider(
        Some("malformed_response"),
        None,
        format!("unparseable {what}: {error} (frame starts: {preview})"),
    ))
}
