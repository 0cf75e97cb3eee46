//! The A2A server: configuration, the axum router, serving.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_adaptor_core::thread::store::InterruptedRun;
use agent_adaptor_core::{Agent, RunOptions, RunStream, Runner, ThreadStore};
use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio_util::sync::CancellationToken;

use super::durable::{DEFAULT_STORED_TASK_TTL, DEFAULT_TASK_POLL, Durable, TaskStoreError};
use super::push::{PushSettings, PushSetupError, Pusher};
use super::store::TaskStore;
use super::types::{
    AGENT_CARD_PATH, AgentCapabilities, AgentCard, AgentInterface, AgentSkill, JSONRPC_BINDING,
    PROTOCOL_VERSION,
};

mod auth;
mod handlers;

pub use auth::{AuthRejection, Authorize, BearerToken, bearer_token};

/// Default request body limit: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;
/// Default bound on the tasks held (in progress and finished).
pub const DEFAULT_MAX_TASKS: usize = 1024;
/// Default time a finished task stays readable.
pub const DEFAULT_FINISHED_TASK_TTL: Duration = Duration::from_secs(3600);
/// Default path of the JSON-RPC endpoint.
pub const DEFAULT_RPC_PATH: &str = "/a2a";
/// Default interval of SSE keep-alive comments.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Default time `CancelTask` waits for the run to stop before it answers
/// with the task as it is.
pub const DEFAULT_CANCEL_WAIT: Duration = Duration::from_secs(15);

/// Maps a context id to a thread key (thread binding).
type ThreadKeyFn = Arc<dyn Fn(&str) -> String + Send + Sync>;

enum Backend {
    Runner(Arc<dyn Runner>),
    Threads(Agent),
}

/// Everything the handlers share.
pub(crate) struct Shared {
    backend: Backend,
    options: RunOptions,
    card: AgentCard,
    public_url: Option<String>,
    bound_url: OnceLock<String>,
    rpc_path: String,
    auth: Option<Arc<dyn Authorize>>,
    allow_unauthenticated: bool,
    max_body: usize,
    cancel_wait: Duration,
    keep_alive: Option<Duration>,
    thread_key: ThreadKeyFn,
    store: Arc<TaskStore>,
    /// The shared task store, when one is configured.
    durable: Option<Arc<Durable>>,
    /// Set once this server listens for cancels from other hosts (and
    /// prunes the store).
    cancels: tokio::sync::OnceCell<()>,
    /// How long finished tasks stay in the task store (`None`: forever).
    stored_ttl: Option<Duration>,
    shutdown: CancellationToken,
    /// Push notifications, when on.
    pub(crate) push: Option<Arc<Pusher>>,
}

impl Shared {
    /// The thread key a task of `context_id` runs under.
    fn task_key(&self, context_id: &str) -> String {
        (self.thread_key)(context_id)
    }

    /// Start listening for cancels other hosts request (once, before this
    /// server's first stored task).
    async fn listen_for_cancels(&self) {
        let Some(durable) = &self.durable else {
            return;
        };
        self.cancels
            .get_or_init(|| async {
                let rx = match durable.store.listen().await {
                    Ok(rx) => Some(rx),
                    Err(e) => {
                        tracing::debug!(error = %e, "a2a: no store notifications; polling for cancels");
                        None
                    }
                };
                tokio::spawn(super::remote::serve_cancels(
                    durable.clone(),
                    Arc::downgrade(&self.store),
                    rx,
                    self.shutdown.clone(),
                ));
                if let Some(keep) = self.stored_ttl {
                    tokio::spawn(super::durable::prune_loop(
                        durable.clone(),
                        keep,
                        self.shutdown.clone(),
                    ));
                }
            })
            .await;
    }

    /// Start the run for a new task.
    fn start(&self, prompt: &str, task_id: &str, context_id: &str) -> RunStream {
        let options = self
            .options
            .clone()
            .metadata("a2a.task_id", task_id)
            .metadata("a2a.context_id", context_id);
        match &self.backend {
            Backend::Runner(r) => r.stream_with(prompt, options),
            Backend::Threads(agent) => agent
                .thread(self.task_key(context_id))
                .stream_with(prompt, options),
        }
    }

    /// The card, with the JSON-RPC interface at `base` (when the configured
    /// card names none).
    fn card_for(&self, base: &str) -> AgentCard {
        let mut card = self.card.clone();
        if card.supported_interfaces.is_empty() {
            card.supported_interfaces.push(AgentInterface {
                url: format!("{}{}", base.trim_end_matches('/'), self.rpc_path),
                protocol_binding: JSONRPC_BINDING.into(),
                tenant: String::new(),
                protocol_version: PROTOCOL_VERSION.into(),
            });
        }
        card
    }
}

/// An A2A 1.0 server over a [`Runner`]. Build it with [`A2aServer::builder`]
/// (any runner) or [`A2aServer::with_threads`] (an agent whose A2A
/// contexts are threads), then [`serve_local`](Self::serve_local),
/// [`serve`](Self::serve), or mount [`router`](Self::router).
#[derive(Clone)]
pub struct A2aServer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for A2aServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aServer")
            .field("name", &self.shared.card.name)
            .field("rpc_path", &self.shared.rpc_path)
            .field("tasks", &self.shared.store.len())
            .finish()
    }
}

impl A2aServer {
    /// A server whose every task is a run of `runner`.
    pub fn builder(runner: Arc<dyn Runner>) -> A2aServerBuilder {
        A2aServerBuilder::new(Backend::Runner(runner))
    }

    /// A server whose tasks run on `agent`'s threads: the task's A2A
    /// `contextId` names the thread (key `"a2a:" + contextId` unless
    /// [`A2aServerBuilder::thread_key`] says otherwise), so the messages of
    /// one context continue one conversation. The agent needs a thread store
    /// and a driver that can resume; otherwise each task fails with the
    /// thread error. One context runs one task at a time: a task started
    /// while another task of its context still runs fails with the
    /// thread's `Busy` error.
    pub fn with_threads(agent: Agent) -> A2aServerBuilder {
        A2aServerBuilder::new(Backend::Threads(agent))
    }

    /// The axum router: the card and the JSON-RPC endpoint. The card's
    /// interface URL is the configured public URL, else the served address,
    /// else `http://` + the request's `Host`.
    pub fn router(&self) -> Router {
        Router::new()
            .route(AGENT_CARD_PATH, get(card))
            .route(&self.shared.rpc_path, post(rpc))
            .with_state(self.shared.clone())
    }

    /// The Agent Card as served when the server is reached at `base_url`.
    pub fn card(&self, base_url: &str) -> AgentCard {
        self.shared.card_for(base_url)
    }

    /// Number of tasks held (in progress, and finished but not expired).
    pub fn task_count(&self) -> usize {
        self.shared.store.len()
    }

    /// How many task store operations failed for good (writes given up
    /// after their retries, tasks the store refused); 0 without a store.
    pub fn store_failures(&self) -> u64 {
        self.shared.durable.as_ref().map_or(0, |d| d.failures())
    }

    /// The last of those failures.
    pub fn last_store_error(&self) -> Option<TaskStoreError> {
        self.shared.durable.as_ref().and_then(|d| d.last_error())
    }

    /// Delete from the task store the finished tasks last changed more
    /// than `keep` ago (every server does this hourly with its
    /// [`A2aServerBuilder::stored_task_ttl`]); how many. 0 without a store.
    pub async fn prune_stored_tasks(&self, keep: Duration) -> Result<u64, TaskStoreError> {
        match &self.shared.durable {
            Some(durable) if durable.enabled() => durable.prune(keep).await,
            _ => Ok(0),
        }
    }

    /// Runs whose host stopped (a lease sweeper's or a start's
    /// [`recover_instance`](ThreadStore::recover_instance) results): fail
    /// their tasks still in progress in the task store, unless this server
    /// runs them, with a status message saying the server running them
    /// stopped and the thread can be continued; followers on every host
    /// see the task end. A task whose holder names another run is left
    /// alone. Returns how many tasks failed; 0 without a task store.
    pub async fn runs_interrupted(&self, runs: &[InterruptedRun]) -> Result<usize, TaskStoreError> {
        match &self.shared.durable {
            Some(durable) if durable.enabled() => {
                super::remote::interrupted(durable, &self.shared.store, runs).await
            }
            _ => Ok(0),
        }
    }

    /// Close the server at once: cancel every run in progress (a task
    /// waiting for input included), end every open stream
    /// (`SendStreamingMessage`, `SubscribeToTask`) and blocking call, and
    /// refuse new requests. For hosts that mounted [`router`](Self::router)
    /// themselves ([`RunningServer::shutdown`] does this for
    /// [`serve`](Self::serve)); [`shutdown`](Self::shutdown) also waits for
    /// the runs. Idempotent.
    pub fn close(&self) {
        self.shared.store.close();
        self.shared.shutdown.cancel();
    }

    /// Close the server, letting streams show the end: cancel every run in
    /// progress (a task waiting for input included) and refuse new tasks,
    /// wait up to `within` for those tasks to reach a final state (written
    /// to the task store, when there is one; open streams deliver
    /// `TASK_STATE_CANCELED` and end) and for queued push notifications to
    /// be delivered, then end every stream and blocking call still open and
    /// refuse every request. Idempotent.
    pub async fn shutdown(&self, within: Duration) -> crate::ShutdownReport {
        let started = std::time::Instant::now();
        let tasks = self.shared.store.close();
        // Ended, and the final state in the task store for other servers.
        let waits = tasks
            .iter()
            .map(|t| async move {
                t.ended().await;
                t.flushed().await;
            })
            .collect();
        let report = crate::shutdown::wait_all(waits, within).await;
        if let Some(push) = &self.shared.push {
            push.drained(within.saturating_sub(started.elapsed())).await;
        }
        self.shared.shutdown.cancel();
        report
    }

    /// Serve on 127.0.0.1 at a free port.
    pub async fn serve_local(self) -> Result<RunningServer, ServeError> {
        self.serve(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await
    }

    /// Serve on `addr`. A non-loopback address needs an auth hook (or
    /// [`A2aServerBuilder::allow_unauthenticated`]).
    pub async fn serve(self, addr: SocketAddr) -> Result<RunningServer, ServeError> {
        if !addr.ip().is_loopback()
            && self.shared.auth.is_none()
            && !self.shared.allow_unauthenticated
        {
            return Err(ServeError::Unauthenticated { addr });
        }
        let listener =
            crate::http::listen(addr).map_err(|source| ServeError::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| ServeError::Bind { addr, source })?;
        let url = format!("http://{local}");
        let _ = self.shared.bound_url.set(url.clone());
        let router = self.router();
        let shared = self.shared.clone();
        let token = shared.shutdown.clone();
        let join = tokio::spawn(async move {
            crate::http::HttpServer::new(listener, router)
                .serve(async move { token.cancelled().await })
                .await;
            shared.store.close();
            Ok(())
        });
        Ok(RunningServer {
            addr: local,
            url,
            shutdown: self.shared.shutdown.clone(),
            join: Some(join),
        })
    }
}

/// Configures an [`A2aServer`].
pub struct A2aServerBuilder {
    backend: Backend,
    options: RunOptions,
    card: AgentCard,
    custom_skills: bool,
    public_url: Option<String>,
    rpc_path: String,
    auth: Option<Arc<dyn Authorize>>,
    allow_unauthenticated: bool,
    max_body: usize,
    max_tasks: usize,
    ttl: Duration,
    cancel_wait: Duration,
    keep_alive: Option<Duration>,
    thread_key: ThreadKeyFn,
    task_store: Option<Arc<dyn ThreadStore>>,
    task_poll: Duration,
    stored_ttl: Option<Duration>,
    push: Option<PushSettings>,
}

impl A2aServerBuilder {
    fn new(backend: Backend) -> Self {
        let card = AgentCard {
            name: "agent-adaptor".into(),
            description: "A coding agent served over A2A by agent-adaptor.".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            capabilities: AgentCapabilities {
                streaming: Some(true),
                push_notifications: Some(false),
                extended_agent_card: Some(false),
                ..AgentCapabilities::default()
            },
            default_input_modes: vec!["text/plain".into(), "application/json".into()],
            default_output_modes: vec!["text/plain".into(), "application/json".into()],
            skills: vec![AgentSkill {
                id: "run".into(),
                name: "Run a prompt".into(),
                description: "Runs the message text as a prompt of the agent and returns its \
                              answer as the artifact \"response\"; approvals the agent needs \
                              arrive as input-required."
                    .into(),
                tags: vec!["agent".into(), "coding".into()],
                ..AgentSkill::default()
            }],
            ..AgentCard::default()
        };
        A2aServerBuilder {
            backend,
            options: RunOptions::default(),
            card,
            custom_skills: false,
            public_url: None,
            rpc_path: DEFAULT_RPC_PATH.into(),
            auth: None,
            allow_unauthenticated: false,
            max_body: DEFAULT_MAX_BODY_BYTES,
            max_tasks: DEFAULT_MAX_TASKS,
            ttl: DEFAULT_FINISHED_TASK_TTL,
            cancel_wait: DEFAULT_CANCEL_WAIT,
            keep_alive: Some(DEFAULT_KEEP_ALIVE),
            thread_key: Arc::new(|context: &str| format!("a2a:{context}")),
            task_store: None,
            task_poll: DEFAULT_TASK_POLL,
            stored_ttl: Some(DEFAULT_STORED_TASK_TTL),
            push: None,
        }
    }

    /// The card's name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.card.name = name.into();
        self
    }

    /// The card's description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.card.description = description.into();
        self
    }

    /// The agent's version on the card (default: this crate's version).
    pub fn agent_version(mut self, version: impl Into<String>) -> Self {
        self.card.version = version.into();
        self
    }

    /// Add a skill. The first call replaces the default skill.
    pub fn skill(mut self, skill: AgentSkill) -> Self {
        if !self.custom_skills {
            self.card.skills.clear();
            self.custom_skills = true;
        }
        self.card.skills.push(skill);
        self
    }

    /// Edit the card freely (provider, security schemes, icons …). When
    /// `supportedInterfaces` is left empty the server fills in its JSON-RPC
    /// interface; `capabilities.streaming` should stay `true`.
    pub fn card_with(mut self, edit: impl FnOnce(&mut AgentCard)) -> Self {
        edit(&mut self.card);
        self
    }

    /// The public base URL (`https://agents.example.com`) advertised on the
    /// card, for servers behind a proxy.
    pub fn public_url(mut self, url: impl Into<String>) -> Self {
        self.public_url = Some(url.into());
        self
    }

    /// The JSON-RPC endpoint's path (default [`DEFAULT_RPC_PATH`]).
    pub fn rpc_path(mut self, path: impl Into<String>) -> Self {
        let path = path.into();
        self.rpc_path = if path.starts_with('/') {
            path
        } else {
            format!("/{path}")
        };
        self
    }

    /// Options for every run (timeout, approval timeout, model …). The
    /// server adds the metadata `a2a.task_id` and `a2a.context_id`.
    pub fn run_options(mut self, options: RunOptions) -> Self {
        self.options = options;
        self
    }

    /// Guard the JSON-RPC endpoint with `hook` (a closure over the request
    /// headers, or e.g. [`bearer_token`]).
    pub fn auth(mut self, hook: impl Authorize) -> Self {
        self.auth = Some(Arc::new(hook));
        self
    }

    /// Allow [`A2aServer::serve`] on a non-loopback address without an auth
    /// hook (for a host that authenticates in front of the server).
    pub fn allow_unauthenticated(mut self) -> Self {
        self.allow_unauthenticated = true;
        self
    }

    /// The request body limit (default [`DEFAULT_MAX_BODY_BYTES`]).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// How many tasks the store holds (default [`DEFAULT_MAX_TASKS`]).
    pub fn max_tasks(mut self, tasks: usize) -> Self {
        self.max_tasks = tasks;
        self
    }

    /// How long a finished task stays readable (default
    /// [`DEFAULT_FINISHED_TASK_TTL`]).
    pub fn finished_task_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How long `CancelTask` waits for the run to stop (default
    /// [`DEFAULT_CANCEL_WAIT`]).
    pub fn cancel_wait(mut self, wait: Duration) -> Self {
        self.cancel_wait = wait;
        self
    }

    /// SSE keep-alive comment interval; `None` disables them (default
    /// [`DEFAULT_KEEP_ALIVE`]).
    pub fn keep_alive(mut self, interval: Option<Duration>) -> Self {
        self.keep_alive = interval;
        self
    }

    /// How a context id becomes a thread key (thread binding only).
    pub fn thread_key(mut self, key: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        self.thread_key = Arc::new(key);
        self
    }

    /// Keep tasks in `store` too, for every server sharing it: each task
    /// change is written through (the live task stays in memory here), so
    /// `GetTask`, `SubscribeToTask` and `CancelTask` work on any of them,
    /// and `ListTasks` lists the caller's tasks. A store that cannot keep
    /// tasks leaves the server in memory only (logged once).
    pub fn task_store(mut self, store: Arc<dyn ThreadStore>) -> Self {
        self.task_store = Some(store);
        self
    }

    /// How often a follower of another host's task re-reads it when no
    /// notification came (default [`DEFAULT_TASK_POLL`]).
    pub fn task_poll_interval(mut self, interval: Duration) -> Self {
        self.task_poll = interval;
        self
    }

    /// How long a finished task stays in the task store (default
    /// [`DEFAULT_STORED_TASK_TTL`]; `None`: until the host prunes it, see
    /// [`A2aServer::prune_stored_tasks`]). The server prunes hourly once it
    /// has stored a task.
    pub fn stored_task_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.stored_ttl = ttl;
        self
    }

    /// Turn push notifications on (see [`push`](super::push)): only when
    /// `settings` allow at least one host; the card then says
    /// `capabilities.pushNotifications: true`. Push keeps its configs in
    /// the task store: refused ([`PushSetupError::NoTaskStore`]) unless
    /// [`task_store`](Self::task_store) was called first.
    pub fn push_notifications(mut self, settings: PushSettings) -> Result<Self, PushSetupError> {
        if self.task_store.is_none() {
            return Err(PushSetupError::NoTaskStore);
        }
        self.push = Some(settings);
        Ok(self)
    }

    /// Build the server.
    pub fn build(mut self) -> A2aServer {
        let push = self
            .push
            .zip(self.task_store.clone())
            .and_then(|(settings, store)| Pusher::new(settings, store));
        self.card.capabilities.push_notifications = Some(push.is_some());
        A2aServer {
            shared: Arc::new(Shared {
                backend: self.backend,
                options: self.options,
                card: self.card,
                public_url: self.public_url,
                bound_url: OnceLock::new(),
                rpc_path: self.rpc_path,
                auth: self.auth,
                allow_unauthenticated: self.allow_unauthenticated,
                max_body: self.max_body,
                cancel_wait: self.cancel_wait,
                keep_alive: self.keep_alive,
                thread_key: self.thread_key,
                store: Arc::new(TaskStore::new(self.max_tasks, self.ttl)),
                durable: self
                    .task_store
                    .map(|store| Arc::new(Durable::new(store, self.task_poll))),
                cancels: tokio::sync::OnceCell::new(),
                stored_ttl: self.stored_ttl,
                shutdown: CancellationToken::new(),
                push,
            }),
        }
    }
}

/// A server serving in the background. Dropping it stops it (without
/// waiting); [`shutdown`](Self::shutdown) stops it and waits.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    url: String,
    shutdown: CancellationToken,
    join: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl RunningServer {
    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL (`http://127.0.0.1:PORT`): pass it to a client.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Stop: close every stream, cancel every run in progress, and wait
    /// for the server to finish.
    pub async fn shutdown(mut self) -> std::io::Result<()> {
        self.shutdown.cancel();
        match self.join.take() {
            Some(join) => join.await.map_err(std::io::Error::other)?,
            None => Ok(()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Binding the address failed.
    #[error("cannot bind {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A non-loopback address without an auth hook.
    #[error(
        "refusing to serve A2A on {addr} without authentication: install an auth hook \
         (A2aServerBuilder::auth) or call allow_unauthenticated()"
    )]
    Unauthenticated {
        /// The address.
        addr: SocketAddr,
    },
}

/// `GET /.well-known/agent-card.json`.
async fn card(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let base = shared
        .public_url
        .clone()
        .or_else(|| shared.bound_url.get().cloned())
        .unwrap_or_else(|| {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("localhost");
            format!("http://{host}")
        });
    let mut response = axum::Json(shared.card_for(&base)).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `POST` on the RPC path.
async fn rpc(
    State(shared): State<Arc<Shared>>,
    RawQuery(query): RawQuery,
    request: axum::extract::Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let principal = crate::Principal::of(&parts.extensions);
    handlers::rpc(shared, query, parts.headers, principal, body).await
}

/// A JSON body with `status`.
pub(crate) fn json(status: StatusCode, body: serde_json::Value) -> Response {
    (status, axum::Json(body)).into_response()
}
