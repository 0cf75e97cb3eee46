//! The ACP server: the line loop over a byte stream pair, and the methods
//! other than `session/prompt` (`initialize`, `session/new`,
//! `session/load`, `session/cancel`, `authenticate`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::{Agent, McpServer, McpToolPolicy, McpTransport, RunOptions};
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, Error as RpcError, Implementation, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities,
    McpServer as AcpMcpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    SessionNotification,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::history::{HistoryReader, replay};
use super::prompt::{prepare, prompt, refused_request};
use super::rpc::{self, Incoming, Peer, invalid_params};
use super::session::{Session, Sessions};
use crate::public_error::public_error;

/// How long a person has to answer a permission request by default.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// How long, after the client's end of the connection closed, runs still
/// in progress get to end after they were cancelled.
pub const DEFAULT_CLOSE_WAIT: Duration = Duration::from_secs(10);

/// An ACP agent (protocol v1) over one [`Agent`]: every session is a
/// thread of it (with [`AcpServer::with_threads`]) or a series of
/// independent runs ([`AcpServer::new`]).
#[derive(Clone)]
pub struct AcpServer {
    agent: Agent,
    threads: bool,
    run_options: RunOptions,
    history: Option<HistoryReader>,
    name: String,
    title: Option<String>,
    close_wait: Duration,
}

impl std::fmt::Debug for AcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpServer")
            .field("threads", &self.threads)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl AcpServer {
    /// Sessions without memory: each prompt is a new run of `agent`
    /// (`loadSession` is not offered).
    pub fn new(agent: Agent) -> Self {
        AcpServer {
            agent,
            threads: false,
            run_options: RunOptions::new().approval_timeout(Some(DEFAULT_APPROVAL_TIMEOUT)),
            history: None,
            name: "agent-adaptor".into(),
            title: None,
            close_wait: DEFAULT_CLOSE_WAIT,
        }
    }

    /// Sessions as threads of `agent` (it needs a thread store): the
    /// session id is the thread key, a prompt continues the thread, and
    /// `session/load` is offered.
    pub fn with_threads(agent: Agent) -> Self {
        AcpServer {
            threads: true,
            ..AcpServer::new(agent)
        }
    }

    /// Options of every run (under each session's `cwd` and MCP servers);
    /// the default sets only the approval timeout,
    /// [`DEFAULT_APPROVAL_TIMEOUT`]. An approval handler here would answer
    /// approvals instead of the client.
    #[must_use]
    pub fn run_options(mut self, options: RunOptions) -> Self {
        self.run_options = options;
        self
    }

    /// How `session/load` reads a stored conversation (without it, a load
    /// replays nothing and the next prompt still continues the thread).
    #[must_use]
    pub fn history(mut self, reader: HistoryReader) -> Self {
        self.history = Some(reader);
        self
    }

    /// The `agentInfo` the client is told: our name and a title (e.g. the
    /// driver's label).
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// How long runs get to end once the client's side closed (default
    /// [`DEFAULT_CLOSE_WAIT`]).
    #[must_use]
    pub fn close_wait(mut self, wait: Duration) -> Self {
        self.close_wait = wait;
        self
    }

    /// Serve one client: read its frames from `input` until end of file,
    /// write ours to `output`. At the end every turn in progress is
    /// cancelled (its processes end) and waited for, at most the close
    /// wait. Errors are only I/O errors of `input`.
    pub async fn serve<R, W>(&self, input: R, output: W) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (peer, rx) = Peer::new();
        let gone = CancellationToken::new();
        let writer = tokio::spawn(write_frames(rx, output, gone.clone()));
        let shared = Arc::new(Shared {
            agent: self.agent.clone(),
            threads: self.threads,
            run_options: self.run_options.clone(),
            history: self.history.clone(),
            info: Implementation::new(self.name.clone(), env!("CARGO_PKG_VERSION"))
                .title(self.title.clone()),
            peer: Arc::new(peer),
            sessions: Sessions::default(),
        });
        let mut tasks = JoinSet::new();
        let mut reader = BufReader::new(input);
        let mut line = Vec::new();
        let outcome = loop {
            line.clear();
            let read = tokio::select! {
                r = reader.read_until(b'\n', &mut line) => r,
                () = gone.cancelled() => break Ok(()),
            };
            match read {
                Ok(0) => break Ok(()),
                Ok(_) => {}
                Err(e) => break Err(e),
            }
            // Reap what finished, so a long connection holds no dead tasks.
            while tasks.try_join_next().is_some() {}
            let text = String::from_utf8_lossy(&line);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            match rpc::parse(text) {
                Incoming::Invalid { id, error } => shared.peer.respond(id, Err(error)).await,
                Incoming::Response { id, outcome } => {
                    if !shared.peer.resolve(&id, outcome) {
                        tracing::debug!(%id, "acp: a response to no request of ours");
                    }
                }
                Incoming::Notification { method, params } => {
                    notification(&shared, &method, params);
                }
                Incoming::Request { id, method, params } if method == "session/prompt" => {
                    match prepare(&shared, params) {
                        Ok(prepared) => {
                            let shared = shared.clone();
                            tasks.spawn(async move {
                                let outcome = prompt(&shared, prepared).await;
                                shared.peer.respond(id, outcome).await;
                            });
                        }
                        Err(e) => shared.peer.respond(id, Err(e)).await,
                    }
                }
                Incoming::Request { id, method, params } => {
                    let shared = shared.clone();
                    tasks.spawn(async move {
                        let outcome = request(&shared, &method, params).await;
                        shared.peer.respond(id, outcome).await;
                    });
                }
            }
        };
        // The client is gone: cancel every turn, end every wait for its
        // answers, let the runs end (their processes are killed within the
        // agent's cancel grace).
        shared.sessions.cancel_all();
        shared.peer.close_pending();
        let drained = tokio::time::timeout(self.close_wait, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!("acp: runs still ending after the close wait; aborted");
            tasks.shutdown().await;
        }
        drop(shared);
        let _ = writer.await;
        outcome
    }
}

/// What every handler of one connection shares.
pub(crate) struct Shared {
    pub(crate) agent: Agent,
    pub(crate) threads: bool,
    run_options: RunOptions,
    history: Option<HistoryReader>,
    info: Implementation,
    pub(crate) peer: Arc<Peer>,
    pub(crate) sessions: Sessions,
}

impl Shared {
    /// The options of a run in `session`.
    pub(crate) fn run_options(&self, session: &Session) -> RunOptions {
        let mut options = self.run_options.clone().workspace(session.cwd.clone());
        for server in &session.mcp_servers {
            options = options.mcp_server(server.clone());
        }
        options
    }
}

/// Write each queued frame as one line; flush when the queue is empty.
/// A failed write means the client is gone (`gone` is cancelled).
async fn write_frames<W: AsyncWrite + Unpin>(
    mut rx: mpsc::Receiver<String>,
    mut out: W,
    gone: CancellationToken,
) {
    while let Some(mut frame) = rx.recv().await {
        frame.push('\n');
        let mut ok = out.write_all(frame.as_bytes()).await.is_ok();
        while ok && let Ok(mut next) = rx.try_recv() {
            next.push('\n');
            ok = out.write_all(next.as_bytes()).await.is_ok();
        }
        if !ok || out.flush().await.is_err() {
            gone.cancel();
            return;
        }
    }
    let _ = out.shutdown().await;
}

fn notification(shared: &Shared, method: &str, params: Value) {
    match method {
        "session/cancel" => match serde_json::from_value::<CancelNotification>(params) {
            Ok(n) => {
                if let Some(session) = shared.sessions.get(&n.session_id.0) {
                    session.cancel();
                }
            }
            Err(e) => tracing::debug!(error = %e, "acp: a malformed session/cancel"),
        },
        // `$/cancel_request` and unknown notifications: nothing to do.
        other => tracing::debug!(method = other, "acp: notification ignored"),
    }
}

async fn request(shared: &Arc<Shared>, method: &str, params: Value) -> Result<Value, RpcError> {
    match method {
        "initialize" => initialize(shared, params),
        "authenticate" => Ok(json!({})),
        "session/new" => new_session(shared, params),
        "session/load" if shared.threads => load_session(shared, params).await,
        _ => Err(RpcError::method_not_found().data(json!(method))),
    }
}

fn initialize(shared: &Shared, params: Value) -> Result<Value, RpcError> {
    // Any version asked is answered with 1, the one we speak (the client
    // closes the connection if it cannot speak it).
    let _asked: InitializeRequest = rpc::params(params)?;
    let mcp = shared.agent.descriptor().mcp;
    let capabilities = AgentCapabilities::new()
        .load_session(shared.threads)
        .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
        .mcp_capabilities(McpCapabilities::new().http(mcp.http).sse(mcp.sse));
    let response = InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(capabilities)
        .agent_info(shared.info.clone());
    serde_json::to_value(response).map_err(RpcError::into_internal_error)
}

/// The canonical form of a session's `cwd`: absolute, an existing
/// directory.
fn session_cwd(cwd: &Path) -> Result<PathBuf, RpcError> {
    if !cwd.is_absolute() {
        return Err(invalid_params(format!(
            "cwd must be an absolute path: {}",
            cwd.display()
        )));
    }
    let dir = std::fs::canonicalize(cwd)
        .map_err(|e| invalid_params(format!("cwd {}: {e}", cwd.display())))?;
    if !dir.is_dir() {
        return Err(invalid_params(format!(
            "cwd {} is not a directory",
            cwd.display()
        )));
    }
    Ok(dir)
}

/// Our MCP servers from ACP's. Every one is checked against what the
/// driver carries before the session exists: a server it cannot carry is
/// a refusal naming the capability, never dropped.
fn mcp_servers(servers: Vec<AcpMcpServer>) -> Result<Vec<McpServer>, RpcError> {
    let mut ours = Vec::with_capacity(servers.len());
    for server in servers {
        let (name, transport) = match server {
            AcpMcpServer::Stdio(s) => (
                s.name,
                McpTransport::Stdio {
                    command: s.command.to_string_lossy().into_owned(),
                    args: s.args,
                    env: s.env.into_iter().map(|v| (v.name, v.value)).collect(),
                },
            ),
            AcpMcpServer::Http(s) => (
                s.name,
                McpTransport::Http {
                    url: s.url,
                    headers: s.headers.into_iter().map(|h| (h.name, h.value)).collect(),
                    bearer_token_env: None,
                },
            ),
            AcpMcpServer::Sse(s) => (
                s.name,
                McpTransport::Sse {
                    url: s.url,
                    headers: s.headers.into_iter().map(|h| (h.name, h.value)).collect(),
                    bearer_token_env: None,
                },
            ),
            _ => {
                return Err(invalid_params(
                    "mcpServers: a transport this server does not know",
                ));
            }
        };
        ours.push(McpServer {
            name,
            transport,
            required: false,
            tools: McpToolPolicy::default(),
        });
    }
    Ok(ours)
}

/// Check a session's equipment the way its runs will be checked.
fn preflight(shared: &Shared, session: &Session) -> Result<(), RpcError> {
    shared
        .agent
        .preflight(&shared.run_options(session))
        .map_err(|e| {
            let reason = refused_request(&e).unwrap_or("invalid_driver_config");
            let (_, message) = public_error(&e, "");
            RpcError::new(-32602, message.clone())
                .data(json!({"reason": reason, "message": message}))
        })
}

fn new_session(shared: &Shared, params: Value) -> Result<Value, RpcError> {
    let req: NewSessionRequest = rpc::params(params)?;
    if !req.additional_directories.is_empty() {
        return Err(invalid_params(
            "additionalDirectories are not supported: a run has one workspace",
        ));
    }
    let cwd = session_cwd(&req.cwd)?;
    let servers = mcp_servers(req.mcp_servers)?;
    let id = format!("acp-{:032x}", rand::random::<u128>());
    let session = Session::new(id.clone(), cwd, servers, false);
    preflight(shared, &session)?;
    shared.sessions.insert(session)?;
    serde_json::to_value(NewSessionResponse::new(id)).map_err(RpcError::into_internal_error)
}

async fn load_session(shared: &Shared, params: Value) -> Result<Value, RpcError> {
    let req: LoadSessionRequest = rpc::params(params)?;
    let cwd = session_cwd(&req.cwd)?;
    let servers = mcp_servers(req.mcp_servers)?;
    let id = req.session_id.0.to_string();
    if id.is_empty() {
        return Err(invalid_params("sessionId is empty"));
    }
    let session = Session::new(id.clone(), cwd, servers, true);
    preflight(shared, &session)?;
    let state = shared
        .agent
        .thread(id.clone())
        .checkpoint()
        .await
        .map_err(|e| {
            let (reason, message) = public_error(&e, "");
            RpcError::new(-32603, message.clone())
                .data(json!({"reason": reason, "message": message}))
        })?;
    let Some(state) = state else {
        return Err(RpcError::session_not_found(req.session_id));
    };
    let entries = shared
        .history
        .as_ref()
        .and_then(|read| read(&state))
        .unwrap_or_default();
    // The session is registered (refused if a prompt runs) before the
    // replay, so the replay is never interleaved with a turn's updates.
    shared.sessions.insert(session)?;
    for update in replay(&entries) {
        let note = SessionNotification::new(id.clone(), update);
        if shared.peer.notify("session/update", note).await.is_err() {
            break;
        }
    }
    serde_json::to_value(LoadSessionResponse::new()).map_err(RpcError::into_internal_error)
}
