//! The A2A 1.0 client (JSON-RPC binding).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::rpc::{ErrorCode, RpcError};
use super::sse::SseDecoder;
use super::types::{
    AGENT_CARD_PATH, AgentCard, CancelTaskRequest, GetTaskRequest, ListTasksRequest,
    ListTasksResponse, PROTOCOL_VERSION, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, VERSION_HEADER,
};

/// Largest SSE event the client accepts (16 MiB).
const MAX_EVENT_BYTES: usize = 16 << 20;
/// How much of an unexpected body an error quotes.
const BODY_QUOTE: usize = 2048;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The URL is not usable.
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// A header value is not valid.
    #[error("invalid header {0}")]
    InvalidHeader(String),
    /// The HTTP exchange failed (connect, I/O, TLS …).
    #[error("HTTP request failed: {0}")]
    Http(#[from] reqwest::Error),
    /// A non-success HTTP status without a JSON-RPC error body.
    #[error("HTTP status {status}: {body}")]
    Status {
        /// The status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The server answered with a JSON-RPC error; match on
    /// [`RpcError::kind`].
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// A body did not decode as the expected type.
    #[error("cannot decode {what}: {source}")]
    Decode {
        /// What was decoded.
        what: &'static str,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// The server broke the protocol (wrong id, missing result, not SSE …).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// The card has no JSON-RPC interface for A2A 1.0.
    #[error(
        "the agent card declares no JSON-RPC interface for A2A {PROTOCOL_VERSION} (it declares: {found})"
    )]
    NoJsonRpcInterface {
        /// The interfaces it declares (`binding@version url`).
        found: String,
    },
}

impl ClientError {
    /// The A2A error code, when the server answered with a JSON-RPC error.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Rpc(e) => Some(e.kind()),
            _ => None,
        }
    }
}

/// Configures a [`Client`].
#[derive(Debug, Default)]
pub struct ClientBuilder {
    http: Option<reqwest::Client>,
    headers: HeaderMap,
}

impl ClientBuilder {
    /// Use this HTTP client (timeouts, proxies, TLS roots …).
    pub fn http_client(mut self, http: reqwest::Client) -> Self {
        self.http = Some(http);
        self
    }

    /// Send `name: value` with every request (e.g. an API key).
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, ClientError> {
        let n = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ClientError::InvalidHeader(format!("name {name:?}")))?;
        let v = HeaderValue::from_str(value)
            .map_err(|_| ClientError::InvalidHeader(format!("value of {name}")))?;
        self.headers.insert(n, v);
        Ok(self)
    }

    /// Send `Authorization: Bearer <token>` with every request.
    pub fn bearer_token(self, token: &str) -> Result<Self, ClientError> {
        self.header("authorization", &format!("Bearer {token}"))
    }

    /// Fetch the card at `base_url` and connect to its JSON-RPC interface.
    pub async fn connect(self, base_url: &str) -> Result<Client, ClientError> {
        let http = self.http.clone().unwrap_or_default();
        let card = fetch_card(&http, &self.headers, base_url).await?;
        self.from_card(card)
    }

    /// Connect to the JSON-RPC interface of a card already at hand.
    pub fn from_card(self, card: AgentCard) -> Result<Client, ClientError> {
        let endpoint = card
            .jsonrpc_interface()
            .map(|i| i.url.clone())
            .ok_or_else(|| ClientError::NoJsonRpcInterface {
                found: card
                    .supported_interfaces
                    .iter()
                    .map(|i| format!("{}@{} {}", i.protocol_binding, i.protocol_version, i.url))
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        reqwest::Url::parse(&endpoint).map_err(|e| ClientError::InvalidUrl {
            url: endpoint.clone(),
            reason: e.to_string(),
        })?;
        Ok(Client {
            http: self.http.unwrap_or_default(),
            card,
            endpoint,
            headers: self.headers,
            next_id: AtomicU64::new(1),
        })
    }
}

/// Fetch the Agent Card from `base_url` (or from `base_url` itself when it
/// names a `.json` document).
async fn fetch_card(
    http: &reqwest::Client,
    headers: &HeaderMap,
    base_url: &str,
) -> Result<AgentCard, ClientError> {
    let url = if base_url.ends_with(".json") {
        base_url.to_owned()
    } else {
        format!("{}{AGENT_CARD_PATH}", base_url.trim_end_matches('/'))
    };
    reqwest::Url::parse(&url).map_err(|e| ClientError::InvalidUrl {
        url: url.clone(),
        reason: e.to_string(),
    })?;
    let response = http
        .get(&url)
        .headers(headers.clone())
        .header(VERSION_HEADER, PROTOCOL_VERSION)
        .header(ACCEPT, "application/json")
        .send()
        .await?;
    let status = response.status();
    let body = response.bytes().await?;
    if !status.is_success() {
        return Err(ClientError::Status {
            status: status.as_u16(),
            body: quote(&body),
        });
    }
    serde_json::from_slice(&body).map_err(|source| ClientError::Decode {
        what: "the agent card",
        source,
    })
}

fn quote(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    match text.char_indices().nth(BODY_QUOTE) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.into_owned(),
    }
}

/// An A2A 1.0 client for one agent. Every request carries
/// `A2A-Version: 1.0`.
#[derive(Debug)]
pub struct Client {
    http: reqwest::Client,
    card: AgentCard,
    endpoint: String,
    headers: HeaderMap,
    next_id: AtomicU64,
}

impl Client {
    /// Configure a client.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Fetch the card at `base_url` and connect with default settings.
    pub async fn connect(base_url: &str) -> Result<Client, ClientError> {
        ClientBuilder::default().connect(base_url).await
    }

    /// Fetch the Agent Card at `base_url` (`{base_url}/.well-known/agent-card.json`,
    /// or `base_url` itself when it names a `.json` document).
    pub async fn fetch_card(base_url: &str) -> Result<AgentCard, ClientError> {
        fetch_card(&reqwest::Client::new(), &HeaderMap::new(), base_url).await
    }

    /// The agent's card.
    pub fn card(&self) -> &AgentCard {
        &self.card
    }

    /// The JSON-RPC endpoint in use.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// `SendMessage`: by default the server answers once the task is
    /// terminal or waits for input (see
    /// [`SendMessageRequest::return_immediately`]).
    pub async fn send(
        &self,
        request: SendMessageRequest,
    ) -> Result<SendMessageResponse, ClientError> {
        self.call("SendMessage", &request, "a SendMessage result")
            .await
    }

    /// `SendStreamingMessage`: the task, then its updates until it is
    /// terminal or waits for input.
    pub async fn stream(&self, request: SendMessageRequest) -> Result<UpdateStream, ClientError> {
        self.call_stream("SendStreamingMessage", &request).await
    }

    /// `GetTask` with the full history.
    pub async fn get_task(&self, id: &str) -> Result<Task, ClientError> {
        self.get_task_with(GetTaskRequest {
            id: id.to_owned(),
            ..GetTaskRequest::default()
        })
        .await
    }

    /// `GetTask`.
    pub async fn get_task_with(&self, request: GetTaskRequest) -> Result<Task, ClientError> {
        self.call("GetTask", &request, "a task").await
    }

    /// `CancelTask`: the task as the server reports it after cancelling.
    pub async fn cancel_task(&self, id: &str) -> Result<Task, ClientError> {
        let request = CancelTaskRequest {
            id: id.to_owned(),
            ..CancelTaskRequest::default()
        };
        self.call("CancelTask", &request, "a task").await
    }

    /// `ListTasks`: a page of the caller's tasks.
    pub async fn list_tasks(
        &self,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, ClientError> {
        self.call("ListTasks", &request, "a task list").await
    }

    /// `SubscribeToTask`: the task, then its updates until it is terminal.
    pub async fn subscribe(&self, id: &str) -> Result<UpdateStream, ClientError> {
        let request = SubscribeToTaskRequest {
            id: id.to_owned(),
            ..SubscribeToTaskRequest::default()
        };
        self.call_stream("SubscribeToTask", &request).await
    }

    fn post(
        &self,
        method: &str,
        params: &impl Serialize,
        accept: &str,
    ) -> (u64, reqwest::RequestBuilder) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let builder = self
            .http
            .post(&self.endpoint)
            .headers(self.headers.clone())
            .header(VERSION_HEADER, PROTOCOL_VERSION)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept)
            .json(&body);
        (id, builder)
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
        what: &'static str,
    ) -> Result<T, ClientError> {
        let (id, request) = self.post(method, params, "application/json");
        let response = request.send().await?;
        let status = response.status();
        let body = response.bytes().await?;
        let value: Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(_) if !status.is_success() => {
                return Err(ClientError::Status {
                    status: status.as_u16(),
                    body: quote(&body),
                });
            }
            Err(source) => {
                return Err(ClientError::Decode {
                    what: "a JSON-RPC response",
                    source,
                });
            }
        };
        let result = unwrap_response(value, id)?;
        serde_json::from_value(result).map_err(|source| ClientError::Decode { what, source })
    }

    async fn call_stream(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<UpdateStream, ClientError> {
        let (id, request) = self.post(method, params, "text/event-stream");
        let response = request.send().await?;
        let status = response.status();
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            // An error answered before the stream began.
            let body = response.bytes().await?;
            return match serde_json::from_slice::<Value>(&body) {
                Ok(v) if v.get("error").is_some() => {
                    Err(unwrap_response(v, id).err().unwrap_or_else(|| {
                        ClientError::Protocol("an error response without an error".into())
                    }))
                }
                _ if !status.is_success() => Err(ClientError::Status {
                    status: status.as_u16(),
                    body: quote(&body),
                }),
                _ => Err(ClientError::Protocol(format!(
                    "{method} answered without an event stream: {}",
                    quote(&body)
                ))),
            };
        }
        let state = StreamState {
            bytes: response.bytes_stream().boxed(),
            decoder: SseDecoder::new(MAX_EVENT_BYTES),
            ready: VecDeque::new(),
            id,
            done: false,
        };
        let inner = futures::stream::unfold(state, |mut st| async move {
            loop {
                if let Some(item) = st.ready.pop_front() {
                    if item.is_err() {
                        st.done = true;
                        st.ready.clear();
                    }
                    return Some((item, st));
                }
                if st.done {
                    return None;
                }
                match st.bytes.next().await {
                    Some(Ok(chunk)) => match st.decoder.feed(&chunk) {
                        Ok(frames) => {
                            let id = st.id;
                            st.ready
                                .extend(frames.into_iter().map(|f| frame(&f.data, id)));
                        }
                        Err(e) => st.ready.push_back(Err(ClientError::Protocol(format!(
                            "an SSE event exceeded {} bytes",
                            e.0
                        )))),
                    },
                    Some(Err(e)) => st.ready.push_back(Err(ClientError::Http(e))),
                    None => {
                        st.done = true;
                        if let Some(f) = st.decoder.finish() {
                            st.ready.push_back(frame(&f.data, st.id));
                        }
                    }
                }
            }
        });
        Ok(UpdateStream {
            inner: inner.boxed(),
        })
    }
}

type ByteStream = futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>;

struct StreamState {
    bytes: ByteStream,
    decoder: SseDecoder,
    ready: VecDeque<Result<StreamResponse, ClientError>>,
    id: u64,
    done: bool,
}

/// One SSE event: a JSON-RPC response carrying a `StreamResponse`.
fn frame(data: &str, id: u64) -> Result<StreamResponse, ClientError> {
    let value: Value = serde_json::from_str(data).map_err(|source| ClientError::Decode {
        what: "an SSE event",
        source,
    })?;
    let result = unwrap_response(value, id)?;
    serde_json::from_value(result).map_err(|source| ClientError::Decode {
        what: "a stream response",
        source,
    })
}

/// The `result` of a JSON-RPC response to request `id`, or its error.
fn unwrap_response(mut value: Value, id: u64) -> Result<Value, ClientError> {
    if value.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(ClientError::Protocol(
            "a response without \"jsonrpc\": \"2.0\"".into(),
        ));
    }
    if let Some(error) = value.get_mut("error").map(Value::take) {
        let error: RpcError =
            serde_json::from_value(error).map_err(|source| ClientError::Decode {
                what: "a JSON-RPC error",
                source,
            })?;
        return Err(ClientError::Rpc(error));
    }
    let got = value.get("id").cloned().unwrap_or(Value::Null);
    if got != json!(id) {
        return Err(ClientError::Protocol(format!(
            "response id {got} does not match request id {id}"
        )));
    }
    value
        .get_mut("result")
        .map(Value::take)
        .ok_or_else(|| ClientError::Protocol("a response with neither result nor error".into()))
}

/// The updates of a streamed task: `Ok` items in server order; an `Err`
/// ends the stream.
pub struct UpdateStream {
    inner: futures::stream::BoxStream<'static, Result<StreamResponse, ClientError>>,
}

impl std::fmt::Debug for UpdateStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UpdateStream")
    }
}

impl Stream for UpdateStream {
    type Item = Result<StreamResponse, ClientError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.poll_next_unpin(cx)
    }
}

impl UpdateStream {
    /// Read to the end; the items, or the first error.
    pub async fn collect_all(mut self) -> Result<Vec<StreamResponse>, ClientError> {
        let mut items = Vec::new();
        while let Some(item) = self.next().await {
            items.push(item?);
        }
        Ok(items)
    }
}
