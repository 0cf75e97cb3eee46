//! Server-sent-event framing and the timed body stream behind every
//! streamed answer.

use std::collections::VecDeque;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode, header};
use bytes::Bytes;
use serde_json::Value;

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, when the protocol names its events.
    pub(crate) event: Option<String>,
    /// The `data:` field (one line of JSON, or `[DONE]`).
    pub(crate) data: String,
    /// Sent as the bare data, without SSE framing (Gemini's mid-stream
    /// error object).
    pub(crate) bare: bool,
}

impl SseEvent {
    /// A named event (`event: NAME` + `data: JSON`).
    pub(crate) fn named(name: &str, data: &Value) -> Self {
        SseEvent {
            event: Some(name.to_owned()),
            data: data.to_string(),
            bare: false,
        }
    }

    /// A data-only event.
    pub(crate) fn data(data: &Value) -> Self {
        SseEvent {
            event: None,
            data: data.to_string(),
            bare: false,
        }
    }

    /// JSON sent as-is inside the stream body, without `data:` framing.
    pub(crate) fn bare(data: &Value) -> Self {
        SseEvent {
            event: None,
            data: data.to_string(),
            bare: true,
        }
    }

    /// A data-only event with raw text (for `[DONE]`).
    pub(crate) fn raw(data: &str) -> Self {
        SseEvent {
            event: None,
            data: data.to_owned(),
            bare: false,
        }
    }

    /// The event on the wire, blank line included.
    pub(crate) fn to_bytes(&self) -> Bytes {
        if self.bare {
            return Bytes::from(self.data.clone());
        }
        let mut out = String::with_capacity(self.data.len() + 32);
        if let Some(name) = &self.event {
            out.push_str("event: ");
            out.push_str(name);
            out.push('\n');
        }
        for line in self.data.split('\n') {
            out.push_str("data: ");
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
        Bytes::from(out)
    }
}

/// Splits text into pieces of at most `size` characters (never inside a
/// character). Empty text gives no pieces.
pub(crate) fn chunks(text: &str, size: usize) -> Vec<String> {
    let size = size.max(1);
    let mut out = Vec::new();
    let mut current = String::new();
    let mut count = 0;
    for ch in text.chars() {
        current.push(ch);
        count += 1;
        if count == size {
            out.push(std::mem::take(&mut current));
            count = 0;
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// How a streamed body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The body ends cleanly after the last frame.
    Clean,
    /// The connection drops after the last frame (no end of the chunked
    /// body), as a network failure would.
    Abort,
}

/// A body that sends `frames` with `delay` before every frame after the
/// first, then ends as `ending` says.
pub(crate) fn timed_body(frames: Vec<Bytes>, delay: Duration, ending: Ending) -> Body {
    struct State {
        frames: VecDeque<Bytes>,
        first: bool,
        delay: Duration,
        ending: Ending,
        done: bool,
    }
    let state = State {
        frames: frames.into(),
        first: true,
        delay,
        ending,
        done: false,
    };
    let stream = futures::stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        if let Some(frame) = state.frames.pop_front() {
            if !state.first && !state.delay.is_zero() {
                tokio::time::sleep(state.delay).await;
            }
            state.first = false;
            return Some((Ok(frame), state));
        }
        state.done = true;
        match state.ending {
            Ending::Clean => None,
            Ending::Abort => {
                // Give the connection a moment to flush what was sent, so the
                // client sees the partial data before the drop.
                tokio::task::yield_now().await;
                tokio::time::sleep(Duration::from_millis(10)).await;
                Some((
                    Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "mock model server: scripted cut-off",
                    )),
                    state,
                ))
            }
        }
    });
    Body::from_stream(stream)
}

/// A `200 text/event-stream` response with `Connection: close`.
pub(crate) fn sse_response(events: &[SseEvent], delay: Duration, ending: Ending) -> Response<Body> {
    let frames = events.iter().map(SseEvent::to_bytes).collect();
    let mut response = Response::new(timed_body(frames, delay, ending));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}
