//! The loopback channel: a run's host tools as a Streamable-HTTP MCP server
//! on 127.0.0.1, for a CLI that takes MCP servers from its configuration
//! and has no in-process channel (Gemini CLI, Cursor Agent, `codex exec`).
//!
//! One server per run, on a port the system picks:
//!
//! * every request must carry `Authorization: Bearer <token>`, a per-run
//!   token of 256 bits from the system's CSPRNG (401 otherwise). The token
//!   reaches the CLI only through its MCP configuration (a file in the run's
//!   scratch, or a variable that configuration names), never argv; this
//!   module never logs it and [`LoopbackServer`]'s `Debug` redacts it;
//! * the `Host` header must be `127.0.0.1:<port>` or `localhost:<port>`,
//!   and an `Origin`, when present, a loopback `http(s)` origin (403
//!   otherwise: DNS rebinding, a web page);
//! * a request body may hold [`MAX_BODY_BYTES`] (413 beyond).
//!
//! The HTTP side never runs a tool: the sink is borrowed by the driver's
//! `run`, so each `tools/call` is forwarded ([`CallRx`]) to the run, which
//! calls the [`HostTools`] and answers. [`serve_calls`] does both (it accepts
//! the connections and runs the calls, concurrently), inside the run's own
//! future: no task of it outlives the run. A driver joins it with its pump
//! through [`serving`]:
//!
//! ```no_run
//! # use agent_adaptor_driver::{EventSink, Request, RunContext};
//! # use agent_adaptor_driver_kit::host_mcp::loopback::{self, LoopbackServer};
//! # async fn pump() -> u32 { 0 }
//! # async fn run(req: Request, ctx: RunContext, sink: &dyn EventSink) -> std::io::Result<()> {
//! let host = LoopbackServer::for_run(&req).await?;
//! // … write host.as_ref().map(|(server, _)| server.url()) into the CLI's MCP config …
//! let (server, calls) = host.unzip();
//! let out = loopback::serving(calls, &req.host_tools, sink, &ctx.cancel, pump()).await;
//! drop(server);
//! # Ok(()) }
//! ```

use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_adaptor_driver::{
    EventSink, HOST_TOOL_SERVER, HostToolCall, HostToolResult, HostToolSpec, HostToolStatus,
    HostTools, McpServer, McpToolPolicy, McpTransport, Request,
};
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use http::{HeaderValue, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rand::RngCore;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{call_result, tool_json};

/// The most bytes one request body may hold (413 beyond).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The variable a CLI's MCP configuration names for the token when the
/// token travels in the child's environment (`bearer_token_env`).
pub const TOKEN_ENV: &str = "AGENT_ADAPTOR_HOST_TOOL_TOKEN";

/// The MCP endpoint's path.
const PATH: &str = "/mcp";

/// How many forwarded calls wait for the run before the HTTP side waits.
const QUEUE: usize = 64;

/// One run's loopback MCP server: its address and token. Dropping it stops
/// the MCP sessions; the listener closes with [`serve_calls`]' future (or
/// the [`CallRx`], when never served).
pub struct LoopbackServer {
    url: String,
    token: String,
    _stop: DropGuard,
}

/// The calls the HTTP side forwards to the run, and the listener it
/// accepts connections on: what [`serve_calls`] serves.
pub struct CallRx {
    listener: TcpListener,
    service: StreamableHttpService<HostToolHandler, LocalSessionManager>,
    authorization: Arc<HeaderValue>,
    calls: mpsc::Receiver<Forwarded>,
}

/// One `tools/call`, waiting for the run's answer.
struct Forwarded {
    call: HostToolCall,
    /// Cancelled when the client withdraws the call.
    withdrawn: CancellationToken,
    reply: oneshot::Sender<HostToolResult>,
}

impl LoopbackServer {
    /// Bind a server of `specs` on `127.0.0.1:0`.
    ///
    /// # Errors
    ///
    /// The listener could not be bound.
    pub async fn start(specs: &[HostToolSpec]) -> std::io::Result<(LoopbackServer, CallRx)> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        let port = listener.local_addr()?.port();
        let token = new_token();
        let stop = CancellationToken::new();
        let (tx, calls) = mpsc::channel(QUEUE);
        let handler = HostToolHandler {
            tools: Arc::new(specs.iter().filter_map(rmcp_tool).collect()),
            calls: tx,
            next_id: Arc::new(AtomicU64::new(1)),
        };
        // No SSE priming or keep-alive events (an event with empty data):
        // the MCP SDK in Gemini CLI 0.61 parses every event's data as JSON.
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.sse_retry = None;
        let config =
            StreamableHttpServerConfig::default()
                .with_sse_keep_alive(None)
                .with_sse_retry(None)
                .with_allowed_hosts([format!("127.0.0.1:{port}"), format!("localhost:{port}")])
                .with_allowed_origins(["http", "https"].iter().flat_map(|s| {
                    ["127.0.0.1", "localhost", "[::1]"].map(|h| format!("{s}://{h}:*"))
                }))
                .enforce_origin_validation()
                .with_max_request_body_bytes(MAX_BODY_BYTES)
                .with_cancellation_token(stop.clone());
        let service =
            StreamableHttpService::new(move || Ok(handler.clone()), Arc::new(sessions), config);
        let authorization =
            HeaderValue::from_str(&format!("Bearer {token}")).map_err(std::io::Error::other)?;
        let server = LoopbackServer {
            url: format!("http://127.0.0.1:{port}{PATH}"),
            token,
            _stop: stop.drop_guard(),
        };
        Ok((
            server,
            CallRx {
                listener,
                service,
                authorization: Arc::new(authorization),
                calls,
            },
        ))
    }

    /// The server of `req`'s host tools, or `None` when the run has none.
    ///
    /// # Errors
    ///
    /// The listener could not be bound.
    pub async fn for_run(req: &Request) -> std::io::Result<Option<(LoopbackServer, CallRx)>> {
        if req.host_tools.is_empty() {
            return Ok(None);
        }
        Self::start(req.host_tools.specs()).await.map(Some)
    }

    /// The MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bearer token. Write it only into the CLI's MCP configuration
    /// (a private file) or the child's environment: never argv, an event or
    /// a log.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The server as one of the run's MCP servers ([`HOST_TOOL_SERVER`],
    /// Streamable HTTP, the token in the variable `token_env` of the
    /// child's environment), for the carriers that write a `McpServer`.
    pub fn mcp_server(&self, token_env: &str) -> McpServer {
        McpServer {
            name: HOST_TOOL_SERVER.into(),
            transport: McpTransport::Http {
                url: self.url.clone(),
                headers: Default::default(),
                bearer_token_env: Some(token_env.into()),
            },
            required: true,
            tools: McpToolPolicy::default(),
        }
    }
}

impl fmt::Debug for LoopbackServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackServer")
            .field("url", &self.url)
            .field("token", &"<redacted>")
            .finish()
    }
}

impl fmt::Debug for CallRx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallRx")
            .field("listener", &self.listener.local_addr().ok())
            .finish_non_exhaustive()
    }
}

/// 256 random bits from the thread's CSPRNG (ChaCha, seeded by the OS), in
/// hex.
fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A spec as an rmcp tool (the JSON of [`tool_json`]); a spec whose
/// schema is not an object is left out (the toolbox's specs always are).
fn rmcp_tool(spec: &HostToolSpec) -> Option<Tool> {
    serde_json::from_value(tool_json(spec)).ok()
}

/// Serve `rx` until this future is dropped: accept its connections and run
/// each forwarded call through `tools` (with the run's `sink` and
/// `cancel`), concurrently. A call the client withdraws is cancelled.
pub async fn serve_calls(
    rx: CallRx,
    tools: &HostTools,
    sink: &dyn EventSink,
    cancel: &CancellationToken,
) -> Infallible {
    let CallRx {
        listener,
        service,
        authorization,
        mut calls,
    } = rx;
    let mut connections = FuturesUnordered::new();
    let mut running = FuturesUnordered::new();
    let mut open = true;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                // A failed accept (a connection reset before it was taken,
                // too many files) leaves the listener usable.
                if let Ok((stream, _)) = accepted {
                    // Small request/answer frames: no Nagle delay.
                    let _ = stream.set_nodelay(true);
                    connections.push(connection(stream, service.clone(), authorization.clone()));
                }
            }
            Some(()) = connections.next(), if !connections.is_empty() => {}
            forwarded = calls.recv(), if open => match forwarded {
                Some(f) => running.push(run_call(f, tools, sink, cancel)),
                // Cannot happen while the service (holding the sender) lives.
                None => open = false,
            },
            Some(()) = running.next(), if !running.is_empty() => {}
        }
    }
}

/// Run `run` to its end while serving `calls` (when there are any);
/// returns `run`'s output. Serving stops when `run` ends.
pub async fn serving<F: Future>(
    calls: Option<CallRx>,
    tools: &HostTools,
    sink: &dyn EventSink,
    cancel: &CancellationToken,
    run: F,
) -> F::Output {
    let Some(calls) = calls else {
        return run.await;
    };
    let mut run = pin!(run);
    let mut serve = pin!(serve_calls(calls, tools, sink, cancel));
    tokio::select! {
        biased;
        out = &mut run => out,
        never = &mut serve => match never {},
    }
}

/// One forwarded call to its end; the answer goes back unless the HTTP
/// side gave up on it.
async fn run_call(
    f: Forwarded,
    tools: &HostTools,
    sink: &dyn EventSink,
    cancel: &CancellationToken,
) {
    let Forwarded {
        call,
        withdrawn,
        mut reply,
    } = f;
    let token = cancel.child_token();
    let mut call = pin!(tools.call(call, sink, &token));
    let result = tokio::select! {
        result = &mut call => result,
        () = withdrawn.cancelled() => { token.cancel(); call.await }
        () = reply.closed() => { token.cancel(); call.await }
    };
    let _ = reply.send(result);
}

/// One HTTP/1 connection, every request checked for the bearer token before
/// the MCP service sees it.
async fn connection(
    stream: tokio::net::TcpStream,
    service: StreamableHttpService<HostToolHandler, LocalSessionManager>,
    authorization: Arc<HeaderValue>,
) {
    let svc = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
        let service = service.clone();
        let authorization = authorization.clone();
        async move {
            Ok::<_, Infallible>(if authorized(request.headers(), &authorization) {
                service.handle(request).await
            } else {
                unauthorized()
            })
        }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), svc)
        .await;
}

/// Whether `headers` carry exactly `expected` as `Authorization` (compared
/// in constant time).
fn authorized(headers: &http::HeaderMap, expected: &HeaderValue) -> bool {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    match (values.next(), values.next()) {
        (Some(got), None) => constant_time_eq(got.as_bytes(), expected.as_bytes()),
        _ => false,
    }
}

/// Equal bytes, in a time that depends only on the lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 401 with `WWW-Authenticate: Bearer`.
fn unauthorized() -> http::Response<BoxBody<Bytes, Infallible>> {
    let mut response = http::Response::new(
        Full::new(Bytes::from_static(
            b"Unauthorized: missing or wrong bearer token",
        ))
        .boxed(),
    );
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// The MCP side: lists the run's tools and forwards each call to the run.
#[derive(Clone)]
struct HostToolHandler {
    tools: Arc<Vec<Tool>>,
    calls: mpsc::Sender<Forwarded>,
    next_id: Arc<AtomicU64>,
}

impl ServerHandler for HostToolHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new(HOST_TOOL_SERVER, env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items((*self.tools).clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let input = request
            .arguments
            .map_or_else(|| serde_json::Value::Object(Default::default()), Into::into);
        let call = HostToolCall::new(
            format!("{HOST_TOOL_SERVER}-{n}"),
            Cow::into_owned(request.name),
            input,
        );
        let (reply, answer) = oneshot::channel();
        let forwarded = Forwarded {
            call,
            withdrawn: context.ct.clone(),
            reply,
        };
        let result = match self.calls.send(forwarded).await {
            Ok(()) => answer.await.ok(),
            Err(_) => None,
        }
        .unwrap_or_else(|| HostToolResult::error(HostToolStatus::Cancelled, "the run has ended"));
        let result: CallToolResult = serde_json::from_value(call_result(&result))
            .map_err(|e| ErrorData::internal_error(format!("tool result: {e}"), None))?;
        Ok(result.into())
    }
}
