//! Helpers shared by the mock server tests: a small SSE parser over a
//! reqwest byte stream, and request helpers with a time limit.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

/// No single test step may take longer than this (the mock answers in
/// milliseconds; this only turns a hang into a failure).
pub const LIMIT: Duration = Duration::from_secs(20);

/// Runs `future` under [`LIMIT`].
pub async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .expect("test step timed out")
}

/// One parsed server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The `event:` field.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

impl Event {
    /// The data as JSON (panics when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {}", self.data))
    }
}

/// A whole streamed response.
#[derive(Debug)]
pub struct Streamed {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: reqwest::header::HeaderMap,
    /// The raw body bytes received (up to a drop).
    pub raw: Vec<u8>,
    /// Whether the body ended with a transport error (connection dropped)
    /// instead of a clean end.
    pub aborted: bool,
}

impl Streamed {
    /// The body parsed as SSE events.
    pub fn events(&self) -> Vec<Event> {
        parse_sse(std::str::from_utf8(&self.raw).expect("body is not UTF-8"))
    }

    /// A header value as a string.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| v.to_str().expect("header is not ASCII").to_owned())
    }
}

/// Parses an SSE body: events are separated by blank lines; `event:` and
/// `data:` fields (one optional space after the colon); comments and other
/// fields are ignored. A trailing event without its blank line is kept too
/// (a cut-off stream).
pub fn parse_sse(body: &str) -> Vec<Event> {
    let mut events = Vec::new();
    let mut event: Option<String> = None;
    let mut data: Vec<String> = Vec::new();
    let mut flush = |event: &mut Option<String>, data: &mut Vec<String>| {
        if event.is_some() || !data.is_empty() {
            events.push(Event {
                event: event.take(),
                data: data.join("\n"),
            });
            data.clear();
        }
    };
    for line in body.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            flush(&mut event, &mut data);
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => event = Some(value.to_owned()),
            "data" => data.push(value.to_owned()),
            _ => {}
        }
    }
    flush(&mut event, &mut data);
    events
}

/// POSTs JSON and reads the whole body as a stream, noting a dropped
/// connection.
pub async fn post_stream(url: &str, body: &Value) -> Streamed {
    within(async {
        let response = reqwest::Client::new()
            .post(url)
            .json(body)
            .send()
            .await
            .expect("request failed");
        read_stream(response).await
    })
    .await
}

/// Reads a response body to its end or its transport error.
pub async fn read_stream(response: reqwest::Response) -> Streamed {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let mut raw = Vec::new();
    let mut aborted = false;
    let mut stream = response.bytes_stream();
    while let Some(item) = stream.next().await {
        match item {
            Ok(bytes) => raw.extend_from_slice(&bytes),
            Err(_) => {
                aborted = true;
                break;
            }
        }
    }
    Streamed {
        status,
        headers,
        raw,
        aborted,
    }
}

/// POSTs JSON and returns status, headers and the body parsed as JSON.
pub async fn post_json(url: &str, body: &Value) -> (u16, reqwest::header::HeaderMap, Value) {
    within(async {
        let response = reqwest::Client::new()
            .post(url)
            .json(body)
            .send()
            .await
            .expect("request failed");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("body failed");
        let json = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {text}"));
        (status, headers, json)
    })
    .await
}

/// Collapses runs of the same name into one entry ending in `+` when the run
/// is longer than one: `[a, d, d, d, b]` becomes `[a, d+, b]`.
pub fn squash(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut previous: Option<&String> = None;
    for name in names {
        if previous == Some(name) {
            if let Some(last) = out.last_mut()
                && !last.ends_with('+')
            {
                last.push('+');
            }
        } else {
            out.push(name.clone());
        }
        previous = Some(name);
    }
    out
}

/// `&["a", "b"]` as owned strings.
pub fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

/// How many times `name` occurs.
pub fn count(names: &[String], name: &str) -> usize {
    names.iter().filter(|n| n.as_str() == name).count()
}

/// Text long enough to be streamed as several deltas.
pub const TEXT: &str = "Hello from the mock model server.";
/// Reasoning text for `ReasoningThenText`.
pub const REASONING: &str = "**Thinking** about the answer first.";
