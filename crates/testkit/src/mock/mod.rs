//! The scripted mock model server.
//!
//! [`MockServer`] listens on 127.0.0.1 and speaks the four model wire
//! protocols the real CLIs use, so they run offline in tests:
//!
//! | protocol | paths | client |
//! |---|---|---|
//! | [`Protocol::Responses`] | `POST /v1/responses`, `POST /responses` | Codex (`model_providers.<id>.base_url = <url>/v1`) |
//! | [`Protocol::ChatCompletions`] | `POST /v1/chat/completions`, `POST /chat/completions` | CodeBuddy (`CODEBUDDY_BASE_URL`), Qwen, opencode, Copilot |
//! | [`Protocol::AnthropicMessages`] | `POST /v1/messages[?beta=true]`, `POST /v1/messages/count_tokens` | Claude Code (`ANTHROPIC_BASE_URL`) |
//! | [`Protocol::Gemini`] | `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`, `:generateContent`, `:countTokens` | Gemini CLI (`GOOGLE_GEMINI_BASE_URL`) |
//!
//! Also answered: `GET /v1/models`, `GET /models`, `GET /v1beta/models`
//! (a one-model listing whose shape satisfies OpenAI, Anthropic and Gemini
//! readers) and `GET /v1beta/models/{model}`. Anything else is a 404 with a
//! JSON body. Every request is recorded ([`MockServer::requests`]).
//!
//! The [`Script`] picks a [`Reply`] per request from the conversation in its
//! body (see [`Script::on_prompt`]). Responses, Chat and Anthropic stream
//! when the body says `"stream": true` and answer one JSON object otherwise;
//! Gemini streams for `:streamGenerateContent`. Streams are
//! `text/event-stream` with `Connection: close`.
//!
//! What each reply becomes (details in each protocol's source file):
//!
//! | reply | Responses | Chat Completions | Anthropic | Gemini |
//! |---|---|---|---|---|
//! | `Text` | a `message` item, `output_text.delta`s, `response.completed` | `content` deltas, `finish_reason: stop`, usage chunk, `[DONE]` | a `text` block of `text_delta`s, `end_turn` | text parts, `finishReason: STOP` |
//! | `ReasoningThenText` | a `reasoning` item (summary deltas) then the message | `reasoning_content` deltas then `content` | a `thinking` block (`thinking_delta`s + `signature_delta`) then text | `thought: true` parts then text |
//! | `ToolCall` | a `function_call` item (`call_id`, argument deltas) | `tool_calls` deltas, `finish_reason: tool_calls` | a `tool_use` block (`input_json_delta`s), `tool_use` | a `functionCall` part |
//! | `Json` | like `Text` with the value's compact JSON text | same | same | same |
//! | `HttpError` | the status with `{"error":{...}}` | same | `{"type":"error","error":{...}}` | `{"error":{"code","message","status"}}` |
//! | `StreamError` | `response.failed` | an `{"error":{...}}` chunk, no `[DONE]` | `event: error` | a bare (not `data:`) `{"error":{...}}` body |
//! | `CutOff` | stops after the text deltas, connection dropped | same | same | same |
//! | `Slow` | like `Text`, a pause between events | same | same | same |
//! | `ToolCalls` | N `function_call` items, one after the other, all in `response.completed`'s `output` | N calls in `tool_calls` deltas (`index` 0..N): the N start chunks, then the argument pieces round-robin across calls; `finish_reason: tool_calls` | N `tool_use` blocks after any thinking/text block, `stop_reason: tool_use` | N `functionCall` parts in one chunk (one candidate), `finishReason: STOP` |
//! | `StreamErrorEnvelope` | the partial text's deltas, then `event: error` `{"type":"error","code":CODE,"message","param":null,"sequence_number","status":STATUS}` (`status` is what gateways such as OpenRouter/LiteLLM add; OpenAI sends no status) | `content` deltas, then `{"error":{"message","type":CODE,"code":STATUS}}` (the OpenRouter/LiteLLM gateway chunk), no `[DONE]` | the text block's deltas, then `event: error` `{"type":"error","error":{"type":CODE,"message"},"request_id":"req_…"}` | text chunks, then `data: {"error":{"code":STATUS,"message","status":CODE}}` |
//! | `NoFinishReason` | like `Text`, but `response.completed`'s `response` has no `status` and no `incomplete_details` | like `Text` without the `finish_reason` chunk (usage chunk and `[DONE]` still sent) | like `Text`, `message_delta` with `stop_reason: null`, then `message_stop` | like `Text`, no `finishReason` in any chunk |
//! | `Attempts` | the attempt due for this request, rendered as above | same | same | same |
//!
//! None of the `StreamErrorEnvelope` streams has a terminal success event
//! (no `response.completed`, `[DONE]`, `message_stop` or `finishReason`);
//! each ends cleanly right after the error. The partial text is left out
//! when empty.
//!
//! Non-streaming requests get the same content as one JSON object; a
//! `StreamError` becomes an HTTP 500 in the protocol's error shape, a
//! `StreamErrorEnvelope` the HTTP `status` with the protocol's error body
//! built from `code` and `message` (Responses
//! `{"error":{"message","type":CODE,"param":null,"code":CODE}}`, Chat the
//! gateway object above, Anthropic the error event's object, Gemini
//! `{"error":{"code":STATUS,"message","status":CODE}}`), a
//! `NoFinishReason` leaves out the same field as its stream (Chat
//! `finish_reason: null`, Anthropic `stop_reason: null`), a
//! `CutOff` sends half of the JSON and drops the connection, and `Slow`
//! waits `chunk_delay` per text piece before answering. Usage is always
//! [`MOCK_INPUT_TOKENS`] in ([`MOCK_CACHED_INPUT_TOKENS`] of them cached) and
//! [`MOCK_OUTPUT_TOKENS`] out ([`MOCK_REASONING_TOKENS`] of them reasoning
//! when the reply has reasoning).
//!
//! [`Reply::Attempts`] is resolved per request: every `Attempts` value in
//! the script keeps its own count of the requests that selected it (in the
//! running server; nested lists are flattened), so a client's retry with the
//! same history can get "429, then success". Every other scripted reply is
//! chosen by the conversation alone ([`Script::on_prompt`]).
//!
//! # With the real CLIs
//!
//! Checked against Claude Code 2.1.332, Codex 0.171.0, Gemini CLI 0.61.0 and
//! CodeBuddy 2.117.0 (every reply variant, tool round trips included). What
//! the CLIs do on their side:
//!
//! * Claude Code retries a 5xx (9 retries seen) with growing backoff, and
//!   after an in-stream `event: error` it repeats the call without streaming
//!   (that request gets the same reply again: an HTTP 500 for a
//!   `StreamError`). Set `CLAUDE_CODE_MAX_RETRIES=0` and
//!   `CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK=1` for one request per error.
//!   A 400 makes it retry a few times at once with fewer request features.
//! * Gemini CLI retries 429/5xx and stream errors with 5 s+ backoff; set
//!   `"general": {"maxAttempts": 1}` in `~/.gemini/settings.json`.
//! * Codex honours `request_max_retries=0` / `stream_max_retries=0`.
//! * CodeBuddy made one request per HTTP error or stream error, but after a
//!   `CutOff` (dropped connection) it printed `aborted` twice and then hung
//!   without a `result` line: give such a test a deadline.
//!
//! # Example
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
//! let script = Script::new().on_prompt(
//!     "RUNTOOL",
//!     vec![
//!         Reply::ToolCall {
//!             name: "Bash".into(),
//!             arguments: serde_json::json!({"command": "echo hi"}),
//!         },
//!         Reply::Text("Tool said hi.".into()),
//!     ],
//! );
//! let server = MockServer::start(script).await?;
//! // ANTHROPIC_BASE_URL=server.base_url() claude -p "RUNTOOL please" ...
//! let _requests = server.requests();
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod anthropic;
mod chat;
pub mod conversation;
mod gemini;
mod record;
mod responses;
mod script;
mod sse;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Response, StatusCode, header};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

pub use conversation::Conversation;
pub use record::RecordedRequest;
pub use script::{Reply, Rule, Script, ToolCallSpec};

use record::{Route, Streaming, gemini_model_and_method, route};
use sse::{Ending, SseEvent, sse_response, timed_body};

/// Input tokens reported in every answer's usage.
pub const MOCK_INPUT_TOKENS: u64 = 100;
/// Of the input tokens, how many are reported as cached (cache reads).
pub const MOCK_CACHED_INPUT_TOKENS: u64 = 20;
/// Output tokens reported in every answer's usage.
pub const MOCK_OUTPUT_TOKENS: u64 = 10;
/// Of the output tokens, how many are reasoning tokens when the reply has
/// reasoning (0 otherwise).
pub const MOCK_REASONING_TOKENS: u64 = 3;

/// Characters per streamed text / reasoning delta (unless the script sets
/// [`Script::text_chunk_chars`]).
pub const TEXT_CHUNK_CHARS: usize = 8;
/// Characters per streamed tool-argument delta.
const TOOL_CHUNK_CHARS: usize = 16;
/// The largest request body the server reads.
const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

/// A model wire protocol the mock speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// OpenAI Responses API (Codex).
    Responses,
    /// OpenAI Chat Completions (CodeBuddy, Qwen Code, opencode, Copilot).
    ChatCompletions,
    /// Anthropic Messages (Claude Code).
    AnthropicMessages,
    /// Google Gemini API (Gemini CLI).
    Gemini,
}

/// Token usage of one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Usage {
    input: u64,
    cached: u64,
    output: u64,
    reasoning: u64,
}

impl Default for Usage {
    fn default() -> Self {
        Usage {
            input: MOCK_INPUT_TOKENS,
            cached: MOCK_CACHED_INPUT_TOKENS,
            output: MOCK_OUTPUT_TOKENS,
            reasoning: 0,
        }
    }
}

/// A tool call to render.
#[derive(Debug, Clone, Default)]
struct ToolSpec {
    name: String,
    arguments: Value,
    /// `arguments` as compact JSON text.
    arguments_text: String,
}

impl ToolSpec {
    fn new(name: &str, arguments: &Value) -> Self {
        ToolSpec {
            name: name.to_owned(),
            arguments: arguments.clone(),
            arguments_text: arguments.to_string(),
        }
    }
}

/// The content of one model answer, protocol-neutral.
#[derive(Debug, Clone, Default)]
struct Answer {
    reasoning: Option<String>,
    text: Option<String>,
    /// The tool calls, in order (several for parallel calls).
    tools: Vec<ToolSpec>,
    /// The terminal frame carries no finish / stop reason
    /// ([`Reply::NoFinishReason`]).
    no_finish_reason: bool,
}

impl Answer {
    fn text(text: String) -> Self {
        Answer {
            text: Some(text),
            ..Answer::default()
        }
    }

    fn usage(&self) -> Usage {
        Usage {
            reasoning: if self.reasoning.is_some() {
                MOCK_REASONING_TOKENS
            } else {
                0
            },
            ..Usage::default()
        }
    }

    /// How many text pieces a stream of this answer has (for `Slow` without
    /// streaming).
    fn pieces(&self) -> usize {
        let text = self
            .text
            .as_deref()
            .map_or(0, |t| sse::chunks(t, TEXT_CHUNK_CHARS).len());
        let reasoning = self
            .reasoning
            .as_deref()
            .map_or(0, |t| sse::chunks(t, TEXT_CHUNK_CHARS).len());
        (text + reasoning).max(1)
    }
}

/// An in-stream error envelope ([`Reply::StreamErrorEnvelope`]).
struct Envelope<'a> {
    code: &'a str,
    status: u16,
    message: &'a str,
}

/// Unique ids: a per-server random part and a counter.
#[derive(Debug)]
struct Ids {
    seed: u64,
    counter: AtomicU64,
}

impl Ids {
    fn new() -> Self {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        Ids {
            seed: hasher.finish() & 0xff_ffff_ffff,
            counter: AtomicU64::new(1),
        }
    }

    fn next(&self, prefix: &str) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("{prefix}{:010x}{n:06}", self.seed)
    }
}

/// What a protocol renderer needs about the request.
struct Ctx<'a> {
    model: String,
    created: u64,
    ids: &'a Ids,
    request: &'a Value,
    /// The id also sent in the `request-id` / `x-request-id` headers.
    request_id: &'a str,
    /// Characters per streamed text / reasoning delta.
    text_chunk_chars: usize,
}

impl Ctx<'_> {
    fn id(&self, prefix: &str) -> String {
        self.ids.next(prefix)
    }
}

/// Server state shared with the request handler.
#[derive(Debug)]
struct Shared {
    script: Script,
    requests: Mutex<Vec<RecordedRequest>>,
    count: watch::Sender<usize>,
    ids: Ids,
    /// Requests served so far per [`Reply::Attempts`], keyed by the reply's
    /// address inside `script` (which never moves or changes).
    attempts: Mutex<HashMap<usize, usize>>,
    /// What an empty `Attempts` fallback answers: the default fallback.
    default_reply: Reply,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Vec<RecordedRequest>> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn record(&self, request: RecordedRequest) {
        let count = {
            let mut requests = self.lock();
            requests.push(request);
            requests.len()
        };
        self.count.send_replace(count);
    }

    /// The reply this request gets: `reply` itself, or for an
    /// [`Reply::Attempts`] the attempt due (which advances its counter).
    /// Never returns an `Attempts`.
    fn resolve<'a>(&'a self, reply: &'a Reply) -> &'a Reply {
        let Reply::Attempts(list) = reply else {
            return reply;
        };
        let mut flat = Vec::new();
        flatten_attempts(list, &mut flat);
        if flat.is_empty() {
            // Like an empty rule: the fallback (and when the fallback itself
            // is an empty `Attempts`, the default fallback).
            return match &self.script.fallback {
                fallback @ Reply::Attempts(_) if !std::ptr::eq(fallback, reply) => {
                    self.resolve(fallback)
                }
                Reply::Attempts(_) => &self.default_reply,
                fallback => fallback,
            };
        }
        let key = std::ptr::from_ref(reply).addr();
        let served = {
            let mut attempts = self
                .attempts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let counter = attempts.entry(key).or_insert(0);
            let served = *counter;
            *counter += 1;
            served
        };
        flat[served.min(flat.len() - 1)]
    }
}

/// The replies of an `Attempts` list with nested `Attempts` flattened in
/// place.
fn flatten_attempts<'a>(replies: &'a [Reply], out: &mut Vec<&'a Reply>) {
    for reply in replies {
        match reply {
            Reply::Attempts(inner) => flatten_attempts(inner, out),
            other => out.push(other),
        }
    }
}

/// A running mock model server on 127.0.0.1. Dropping it stops serving.
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Binds 127.0.0.1 on a free port and serves `script` in a background
    /// task of the current tokio runtime.
    pub async fn start(script: Script) -> std::io::Result<MockServer> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), script).await
    }

    /// Like [`MockServer::start`] on a chosen address (port 0 picks a free
    /// port).
    pub async fn start_on(addr: SocketAddr, script: Script) -> std::io::Result<MockServer> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (count, _) = watch::channel(0);
        let shared = Arc::new(Shared {
            script,
            requests: Mutex::new(Vec::new()),
            count,
            ids: Ids::new(),
            attempts: Mutex::new(HashMap::new()),
            default_reply: Script::new().fallback,
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stopped.await;
            });
            if let Err(error) = serve.await {
                tracing::warn!(%error, "mock model server stopped with an error");
            }
        });
        Ok(MockServer {
            addr,
            shared,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// `"http://127.0.0.1:PORT"` (no trailing slash).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().clone()
    }

    /// Waits until at least `count` requests have been received and returns
    /// them all (wrap it in a timeout).
    pub async fn wait_for_requests(&self, count: usize) -> Vec<RecordedRequest> {
        let mut receiver = self.shared.count.subscribe();
        // The sender lives in `self.shared`, so this only ends when the count
        // is reached.
        let _ = receiver.wait_for(|received| *received >= count).await;
        self.requests()
    }

    /// Stops accepting connections, lets in-flight responses finish for up
    /// to one second, then stops everything.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(Duration::from_secs(1), &mut task)
                .await
                .is_err()
        {
            task.abort();
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn error_body(protocol: Protocol, status: u16, message: &str) -> Value {
    match protocol {
        Protocol::Responses => responses::error_body(status, message),
        Protocol::ChatCompletions => chat::error_body(status, message),
        Protocol::AnthropicMessages => anthropic::error_body(status, message),
        Protocol::Gemini => gemini::error_body(status, message),
    }
}

/// An HTTP error in the protocol's shape (or with `body` verbatim when it is
/// not null).
fn http_error(
    protocol: Protocol,
    status: u16,
    body: &Value,
    retry_after: Option<u64>,
) -> Response<Body> {
    let code = status_code(status);
    let body = if body.is_null() {
        let reason = code.canonical_reason().unwrap_or("error");
        error_body(
            protocol,
            code.as_u16(),
            &format!("mock http error {}: {reason}", code.as_u16()),
        )
    } else {
        body.clone()
    };
    let mut response = json_response(code, &body);
    let headers = response.headers_mut();
    match retry_after {
        Some(seconds) => {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        None => {
            headers.insert("x-should-retry", HeaderValue::from_static("false"));
        }
    }
    response
}

/// `status` as an HTTP status; invalid codes become 500.
fn status_code(status: u16) -> StatusCode {
    StatusCode::from_u16(status)
        .ok()
        .filter(|code| code.as_u16() >= 100)
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn not_found(method: &str, path: &str) -> Response<Body> {
    let message = format!("mock model server: no route for {method} {path}");
    // One body that reads as an error in each protocol's shape.
    let body = json!({
        "type": "error",
        "error": {
            "type": "not_found_error",
            "code": 404,
            "status": "NOT_FOUND",
            "message": message,
        },
    });
    json_response(StatusCode::NOT_FOUND, &body)
}

fn list_models() -> Response<Body> {
    let model = "mock-model";
    let body = json!({
        "object": "list",
        "data": [{
            "id": model,
            "object": "model",
            "type": "model",
            "created": 0,
            "created_at": "2025-01-01T00:00:00Z",
            "display_name": "Mock model",
            "owned_by": "agent-adaptor-mock",
        }],
        "has_more": false,
        "first_id": model,
        "last_id": model,
        "models": [gemini::model_info(model)],
    });
    json_response(StatusCode::OK, &body)
}

/// A rough token count of a request body (4 bytes a token, at least 1).
fn count_tokens(protocol: Protocol, body: &[u8]) -> Response<Body> {
    let tokens = (body.len() / 4).max(1) as u64;
    let value = match protocol {
        Protocol::Gemini => json!({
            "totalTokens": tokens,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": tokens}],
        }),
        _ => json!({ "input_tokens": tokens }),
    };
    json_response(StatusCode::OK, &value)
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let method = parts.method.as_str().to_owned();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().map(str::to_owned);
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let (body, body_error) = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => (bytes, None),
        Err(error) => (Bytes::new(), Some(error.to_string())),
    };
    shared.record(RecordedRequest {
        method: method.clone(),
        path: path.clone(),
        query: query.clone(),
        headers,
        body: body.clone(),
    });

    let route = route(&method, &path);
    let protocol = match &route {
        Route::Model(protocol, _) | Route::CountTokens(protocol) => Some(*protocol),
        _ => None,
    };
    let request_id = shared.ids.next("req_");
    if let (Some(protocol), Some(error)) = (protocol, &body_error) {
        let message = format!("mock model server: could not read the request body: {error}");
        let body = error_body(protocol, 400, &message);
        return json_response(StatusCode::BAD_REQUEST, &body);
    }
    let mut response = match route {
        Route::NotFound => not_found(&method, &path),
        Route::ListModels => list_models(),
        Route::GeminiModel(model) => json_response(StatusCode::OK, &gemini::model_info(&model)),
        Route::CountTokens(protocol) => match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(_)) => count_tokens(protocol, &body),
            _ => bad_json(protocol),
        },
        Route::Model(protocol, streaming) => {
            let call = ModelCall {
                protocol,
                streaming,
                path: &path,
                query: query.as_deref(),
                request_id: &request_id,
            };
            model_call(&shared, &call, &body).await
        }
    };
    if protocol.is_some()
        && let Ok(value) = HeaderValue::from_str(&request_id)
    {
        response.headers_mut().insert("request-id", value.clone());
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

fn bad_json(protocol: Protocol) -> Response<Body> {
    let body = error_body(
        protocol,
        400,
        "mock model server: the request body is not a JSON object",
    );
    json_response(StatusCode::BAD_REQUEST, &body)
}

/// Where a model call came in.
struct ModelCall<'a> {
    protocol: Protocol,
    streaming: Streaming,
    path: &'a str,
    query: Option<&'a str>,
    request_id: &'a str,
}

async fn model_call(shared: &Shared, call: &ModelCall<'_>, body: &[u8]) -> Response<Body> {
    let ModelCall {
        protocol,
        streaming,
        path,
        query,
        request_id,
    } = *call;
    let request: Value = match serde_json::from_slice(body) {
        Ok(value @ Value::Object(_)) => value,
        _ => return bad_json(protocol),
    };
    let stream = match streaming {
        Streaming::ByBody => request
            .get("stream")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        Streaming::Stream => true,
        Streaming::NoStream => false,
    };
    let model = match protocol {
        Protocol::Gemini => gemini_model_and_method(path).map(|(model, _)| model.to_owned()),
        _ => request
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned),
    }
    .unwrap_or_else(|| "mock-model".to_owned());
    let conversation = conversation::conversation(protocol, &request);
    let (reply, _rule) = shared.script.select(conversation.as_ref());
    let reply = shared.resolve(reply);
    let ctx = Ctx {
        model,
        created: now_secs(),
        ids: &shared.ids,
        request: &request,
        request_id,
        text_chunk_chars: shared
            .script
            .text_chunk_chars
            .unwrap_or(TEXT_CHUNK_CHARS)
            .max(1),
    };
    // Gemini streams as SSE only with `alt=sse`; otherwise as a JSON array.
    let gemini_array = protocol == Protocol::Gemini
        && !query
            .unwrap_or("")
            .split('&')
            .any(|pair| pair.eq_ignore_ascii_case("alt=sse"));
    render(protocol, &ctx, reply, stream, gemini_array).await
}

async fn render(
    protocol: Protocol,
    ctx: &Ctx<'_>,
    reply: &Reply,
    stream: bool,
    gemini_array: bool,
) -> Response<Body> {
    let (answer, complete, delay) = match reply {
        Reply::HttpError {
            status,
            body,
            retry_after,
        } => return http_error(protocol, *status, body, *retry_after),
        Reply::StreamError { message } => {
            if !stream {
                let body = error_body(protocol, 500, message);
                return json_response(StatusCode::INTERNAL_SERVER_ERROR, &body);
            }
            let events = match protocol {
                Protocol::Responses => responses::stream_error(ctx, message),
                Protocol::ChatCompletions => chat::stream_error(ctx, message),
                Protocol::AnthropicMessages => anthropic::stream_error(ctx, message),
                Protocol::Gemini => gemini::stream_error(ctx, message),
            };
            return events_response(&events, Duration::ZERO, true, gemini_array);
        }
        Reply::StreamErrorEnvelope {
            partial_text,
            code,
            status,
            message,
        } => {
            let envelope = Envelope {
                code,
                status: *status,
                message,
            };
            if !stream {
                let body = match protocol {
                    Protocol::Responses => responses::envelope_body(&envelope),
                    Protocol::ChatCompletions => chat::envelope_body(&envelope),
                    Protocol::AnthropicMessages => anthropic::envelope_body(ctx, &envelope),
                    Protocol::Gemini => gemini::envelope_body(&envelope),
                };
                return json_response(status_code(*status), &body);
            }
            let partial = if partial_text.is_empty() {
                Answer::default()
            } else {
                Answer::text(partial_text.clone())
            };
            let events = match protocol {
                Protocol::Responses => responses::stream_error_envelope(ctx, &partial, &envelope),
                Protocol::ChatCompletions => chat::stream_error_envelope(ctx, &partial, &envelope),
                Protocol::AnthropicMessages => {
                    anthropic::stream_error_envelope(ctx, &partial, &envelope)
                }
                Protocol::Gemini => gemini::stream_error_envelope(ctx, &partial, &envelope),
            };
            return events_response(&events, Duration::ZERO, true, gemini_array);
        }
        Reply::Text(text) => (Answer::text(text.clone()), true, Duration::ZERO),
        Reply::NoFinishReason(text) => (
            Answer {
                no_finish_reason: true,
                ..Answer::text(text.clone())
            },
            true,
            Duration::ZERO,
        ),
        Reply::ReasoningThenText { reasoning, text } => (
            Answer {
                reasoning: Some(reasoning.clone()),
                ..Answer::text(text.clone())
            },
            true,
            Duration::ZERO,
        ),
        Reply::ToolCall { name, arguments } => (
            Answer {
                tools: vec![ToolSpec::new(name, arguments)],
                ..Answer::default()
            },
            true,
            Duration::ZERO,
        ),
        Reply::ToolCalls(calls) => (
            Answer {
                tools: calls
                    .iter()
                    .map(|call| ToolSpec::new(&call.name, &call.arguments))
                    .collect(),
                ..Answer::default()
            },
            true,
            Duration::ZERO,
        ),
        // `Shared::resolve` never hands an `Attempts` to `render`; answer
        // like the default fallback should one get here.
        Reply::Attempts(_) => (Answer::text("OK".to_owned()), true, Duration::ZERO),
        Reply::Json(value) => (Answer::text(value.to_string()), true, Duration::ZERO),
        Reply::CutOff { partial_text } => {
            (Answer::text(partial_text.clone()), false, Duration::ZERO)
        }
        Reply::Slow { text, chunk_delay } => (Answer::text(text.clone()), true, *chunk_delay),
    };
    if stream {
        let events = match protocol {
            Protocol::Responses => responses::stream(ctx, &answer, complete),
            Protocol::ChatCompletions => chat::stream(ctx, &answer, complete),
            Protocol::AnthropicMessages => anthropic::stream(ctx, &answer, complete),
            Protocol::Gemini => gemini::stream(ctx, &answer, complete),
        };
        return events_response(&events, delay, complete, gemini_array);
    }
    let body = match protocol {
        Protocol::Responses => responses::body(ctx, &answer),
        Protocol::ChatCompletions => chat::body(ctx, &answer),
        Protocol::AnthropicMessages => anthropic::body(ctx, &answer),
        Protocol::Gemini => gemini::body(ctx, &answer),
    };
    if !complete {
        let text = body.to_string();
        let mut cut = text.len() / 2;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let frames = vec![Bytes::copy_from_slice(&text.as_bytes()[..cut])];
        let mut response = Response::new(timed_body(frames, Duration::ZERO, Ending::Abort));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        return response;
    }
    if !delay.is_zero() {
        let pieces = u32::try_from(answer.pieces()).unwrap_or(u32::MAX);
        tokio::time::sleep(delay.saturating_mul(pieces)).await;
    }
    json_response(StatusCode::OK, &body)
}

/// A streamed answer: SSE, or for Gemini without `alt=sse` a streamed JSON
/// array of the same chunks.
fn events_response(
    events: &[SseEvent],
    delay: Duration,
    complete: bool,
    gemini_array: bool,
) -> Response<Body> {
    let ending = if complete {
        Ending::Clean
    } else {
        Ending::Abort
    };
    if !gemini_array {
        return sse_response(events, delay, ending);
    }
    let mut frames: Vec<Bytes> = events
        .iter()
        .enumerate()
        .map(|(i, event)| {
            let separator = if i == 0 { "[" } else { ",\r\n" };
            Bytes::from(format!("{separator}{}", event.data))
        })
        .collect();
    if complete {
        frames.push(Bytes::from_static(b"]"));
    }
    let mut response = Response::new(timed_body(frames, delay, ending));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}
