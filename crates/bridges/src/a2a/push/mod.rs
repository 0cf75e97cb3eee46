//! # A2A push notifications: status changes POSTed to webhooks, safely
//!
//! Off unless the host turns it on with
//! [`A2aServerBuilder::push_notifications`](super::A2aServerBuilder::push_notifications)
//! and [`PushSettings`] that allow at least one host (`agent-adaptor serve
//! --push-allow-host HOST[:PORT]`). Then the card says
//! `capabilities.pushNotifications: true` and the server answers
//! `CreateTaskPushNotificationConfig`, `GetTaskPushNotificationConfig`,
//! `ListTaskPushNotificationConfigs` and `DeleteTaskPushNotificationConfig`,
//! and takes `configuration.taskPushNotificationConfig` in `SendMessage`
//! (registered before the run starts). Only the principal that created a
//! task manages its configs; to another one the task does not exist.
//! Configs are kept in the server's task store
//! ([`A2aServerBuilder::task_store`](super::A2aServerBuilder::task_store)),
//! as rows of their tasks, so every host sharing it sees them; push on a
//! server without one is refused
//! ([`PushSetupError::NoTaskStore`]).
//!
//! ## What is refused
//!
//! At registration, and again before every delivery, a URL is refused
//! ([`PushRefusal`], the A2A error `-32602` with `refusal` metadata) when it
//! is not `http`/`https`, carries a user or password, names a host (and
//! port) the operator did not allowlist, does not resolve, or resolves to
//! an address push must not reach — loopback, private (RFC 1918, ULA),
//! link-local (cloud metadata `169.254.169.254` included), CGNAT,
//! multicast, unspecified — unless the allowlist entry is that very IP
//! literal, or `localhost` (loopback only). The delivery connects to the
//! address that was checked (no second resolution: DNS rebinding cannot
//! switch it), never through a proxy, never follows a redirect, and gives
//! up a connection after 5 s and a request after 10 s.
//!
//! ## What is delivered
//!
//! Every status change of a task (`statusUpdate`, the final one included)
//! is POSTed once to each of its configs, in order per task, as the
//! `StreamResponse` JSON (`{"statusUpdate": {…}}`, `Content-Type:
//! application/a2a+json`). Headers:
//!
//! | header | value |
//! |---|---|
//! | `X-A2A-Notification-Token` | the config's `token` (when it has one) |
//! | `Authorization` | `<scheme> <credentials>` of the config's `authentication` (when it has one) |
//! | `X-Agent-Adaptor-Delivery` | `<task id>:<seq>` (seq 1, 2, … per task): the same on every retry |
//! | `X-Agent-Adaptor-Signature` | `t=<unix secs>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>` |
//!
//! A connect error, a timeout, a 5xx or a 429 is retried with exponential
//! backoff and jitter (6 attempts over about a minute by default); a
//! redirect or another 4xx is not. Changes wait in a bounded queue (1024 by
//! default; when full, a change is dropped and logged): a slow webhook
//! never slows the run. Failures are logged with the URL's origin only —
//! never its path, query, token or credentials. The host running the task
//! delivers (reading the configs from the store at each change);
//! [`A2aServer::shutdown`](super::A2aServer::shutdown) waits, within its
//! bound, for the queue to empty, so the final `CANCELED` goes out.
//!
//! ## Verifying a delivery (receivers)
//!
//! 1. Read the raw body bytes (before parsing JSON).
//! 2. Check `X-Agent-Adaptor-Signature` with [`verify_signature`]: the HMAC
//!    key is the server's push secret (`--push-secret-file` or
//!    `AGENT_ADAPTOR_PUSH_SECRET`), the message `"<t>.<body>"`; refuse a `t`
//!    more than a few minutes from your clock (replays).
//! 3. Check `X-A2A-Notification-Token` is the token you registered (it ties
//!    the delivery to your config).
//! 4. Drop a delivery whose `X-Agent-Adaptor-Delivery` you already
//!    processed (a retry after a lost answer).
//! 5. Answer 2xx quickly; 5xx or 429 asks for a retry.

mod config;
mod deliver;
mod policy;
mod sign;

use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::thread::{StoreError, ThreadStore};
use serde_json::Value;
use tokio::sync::Semaphore;

pub use config::{
    AuthenticationInfo, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig,
    TaskPushNotificationConfigRef,
};
pub(crate) use deliver::TaskPush;
pub use policy::{AllowedHost, BadAllowedHost, PushRefusal, PushResolver, SystemResolver};
pub use sign::{
    DEFAULT_TOLERANCE, DELIVERY_HEADER, SIGNATURE_HEADER, SignatureError, TOKEN_HEADER,
    signature_header, verify_signature,
};

use super::new_id;
use super::rpc::{ErrorCode, RpcError};
use policy::Policy;

/// The fewest bytes a push secret may have.
pub const MIN_SECRET_BYTES: usize = 16;
/// Default bound on status changes waiting for delivery (all tasks).
pub const DEFAULT_QUEUE: usize = 1024;
/// The largest delivery queue.
pub const MAX_QUEUE: usize = 1 << 20;
/// Default most configs per task.
pub const DEFAULT_MAX_CONFIGS: usize = 16;

/// How push notifications work on a server; see the [module docs](self).
/// Configs are kept in the server's task store
/// ([`A2aServerBuilder::task_store`](super::A2aServerBuilder::task_store)),
/// as rows of their tasks: push needs one.
///
/// ```
/// use std::sync::Arc;
/// use agent_adaptor_bridges::a2a::A2aServer;
/// use agent_adaptor_bridges::a2a::push::{PushSettings, PushSetupError};
/// use agent_adaptor_core::{Agent, MemoryStore, scripted::ScriptedDriver};
///
/// let settings = PushSettings::new("a long random push secret")
///     .unwrap()
///     .allow_host("hooks.example.com")
///     .unwrap();
/// assert!(settings.enabled());
/// assert!(PushSettings::new("short").is_err());
///
/// let agent = Arc::new(Agent::new(ScriptedDriver::text_reply("Hello!")));
/// let server = A2aServer::builder(agent.clone())
///     .task_store(Arc::new(MemoryStore::new()))
///     .push_notifications(settings.clone())
///     .unwrap()
///     .build();
/// assert_eq!(server.card("http://localhost").capabilities.push_notifications, Some(true));
/// // Without a task store push has nowhere to keep configs: refused.
/// let refused = A2aServer::builder(agent).push_notifications(settings);
/// assert!(matches!(refused, Err(PushSetupError::NoTaskStore)));
/// ```
#[derive(Clone)]
pub struct PushSettings {
    secret: Arc<[u8]>,
    allow: Vec<AllowedHost>,
    resolver: Arc<dyn PushResolver>,
    attempts: u32,
    first_retry: Duration,
    connect_timeout: Duration,
    timeout: Duration,
    queue: usize,
    max_configs: usize,
}

impl std::fmt::Debug for PushSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushSettings")
            .field("allow", &self.allow)
            .field("attempts", &self.attempts)
            .field("first_retry", &self.first_retry)
            .finish_non_exhaustive()
    }
}

/// Why push settings were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PushSetupError {
    /// The secret is shorter than [`MIN_SECRET_BYTES`].
    #[error("the push secret must have at least {MIN_SECRET_BYTES} bytes")]
    WeakSecret,
    /// An allowlist entry does not parse.
    #[error(transparent)]
    BadHost(#[from] BadAllowedHost),
    /// Push was turned on for a server without a task store (configs are
    /// kept there): call `task_store` before `push_notifications`.
    #[error("push notifications need a task store to keep their configs in")]
    NoTaskStore,
}

impl PushSettings {
    /// Push with deliveries signed with `secret` (at least
    /// [`MIN_SECRET_BYTES`]; surrounding whitespace is trimmed), and no host
    /// allowed yet.
    pub fn new(secret: impl AsRef<[u8]>) -> Result<Self, PushSetupError> {
        let secret = secret.as_ref().trim_ascii();
        if secret.len() < MIN_SECRET_BYTES {
            return Err(PushSetupError::WeakSecret);
        }
        Ok(PushSettings {
            secret: Arc::from(secret),
            allow: Vec::new(),
            resolver: Arc::new(SystemResolver),
            attempts: 6,
            first_retry: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(10),
            queue: DEFAULT_QUEUE,
            max_configs: DEFAULT_MAX_CONFIGS,
        })
    }

    /// Allow webhooks on `entry` (`HOST[:PORT]`, see [`AllowedHost`]).
    pub fn allow_host(mut self, entry: &str) -> Result<Self, PushSetupError> {
        self.allow.push(entry.parse()?);
        Ok(self)
    }

    /// Whether any host is allowed (push is off otherwise).
    pub fn enabled(&self) -> bool {
        !self.allow.is_empty()
    }

    /// Attempts per delivery (default 6) and the wait after the first
    /// failure (default 2 s; doubled after each, at most a minute, with
    /// jitter).
    pub fn retries(mut self, attempts: u32, first_retry: Duration) -> Self {
        self.attempts = attempts.max(1);
        self.first_retry = first_retry;
        self
    }

    /// The connect timeout (default 5 s) and the whole request's (10 s).
    pub fn timeouts(mut self, connect: Duration, request: Duration) -> Self {
        self.connect_timeout = connect;
        self.timeout = request;
        self
    }

    /// Status changes waiting for delivery, all tasks together (default
    /// [`DEFAULT_QUEUE`]; 1 to [`MAX_QUEUE`]).
    pub fn queue(mut self, changes: usize) -> Self {
        self.queue = changes.clamp(1, MAX_QUEUE);
        self
    }

    /// Most configs per task (default [`DEFAULT_MAX_CONFIGS`]). A server
    /// registers one task's configs one at a time; servers sharing the
    /// store do not wait for each other, so creates racing on several of
    /// them may pass it by one each.
    pub fn max_configs(mut self, configs: usize) -> Self {
        self.max_configs = configs.max(1);
        self
    }

    /// Resolve webhook host names with `resolver` (default: the system's;
    /// an `Arc` of one is one too, to keep a handle on it).
    pub fn resolver(mut self, resolver: impl PushResolver) -> Self {
        self.resolver = Arc::new(resolver);
        self
    }
}

/// Locks serializing registrations (a task's count, then its insert):
/// one per task id's hash.
const REGISTER_LOCKS: usize = 64;

/// The server's push machinery: the settings, the checks, the queue, and
/// the task store keeping the configs.
pub(crate) struct Pusher {
    settings: PushSettings,
    store: Arc<dyn ThreadStore>,
    policy: Policy,
    queue: Arc<Semaphore>,
    /// [`REGISTER_LOCKS`] locks: two creates for one task on this server
    /// never both pass the `max_configs` count.
    register_locks: [tokio::sync::Mutex<()>; REGISTER_LOCKS],
    hasher: std::hash::RandomState,
    /// The delivery clients.
    clients: deliver::Clients,
}

impl Pusher {
    /// Push keeping configs in the task store `store`; `None` when
    /// `settings` allow no host (push stays off).
    pub(crate) fn new(settings: PushSettings, store: Arc<dyn ThreadStore>) -> Option<Arc<Self>> {
        if !settings.enabled() {
            return None;
        }
        Some(Arc::new(Pusher {
            policy: Policy {
                allow: settings.allow.clone(),
                resolver: settings.resolver.clone(),
            },
            queue: Arc::new(Semaphore::new(settings.queue)),
            settings,
            store,
            register_locks: std::array::from_fn(|_| tokio::sync::Mutex::new(())),
            hasher: std::hash::RandomState::new(),
            clients: deliver::Clients::default(),
        }))
    }

    /// Wait, at most `within`, until every queued change was delivered or
    /// given up; whether it was.
    pub(crate) async fn drained(&self, within: Duration) -> bool {
        let all = u32::try_from(self.settings.queue).unwrap_or(u32::MAX);
        matches!(
            tokio::time::timeout(within, self.queue.acquire_many(all)).await,
            Ok(Ok(_))
        )
    }

    /// The hook of a new task.
    pub(crate) fn attach(self: &Arc<Self>, task_id: &str) -> TaskPush {
        TaskPush::new(self.clone(), task_id)
    }

    /// Task `task_id`'s configs, oldest first (rows that no longer decode
    /// are skipped).
    async fn configs(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        let rows = self.store.push_configs(task_id).await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| serde_json::from_value(row.config).ok())
            .collect())
    }

    /// Check a config from a client (URL, token, authentication): the
    /// config as it will be kept, `task_id` still to fill in.
    pub(crate) async fn prepare(&self, raw: Value) -> Result<TaskPushNotificationConfig, RpcError> {
        let mut config: TaskPushNotificationConfig = serde_json::from_value(raw)
            .map_err(|e| RpcError::invalid_params(format!("push notification config: {e}")))?;
        if config.url.is_empty() {
            return Err(RpcError::invalid_params(
                "the push notification config's url is required",
            ));
        }
        if reqwest::header::HeaderValue::from_str(&config.token).is_err() {
            return Err(refused(&PushRefusal::BadHeader("token")));
        }
        if let Some(auth) = &config.authentication {
            let value = format!("{} {}", auth.scheme, auth.credentials);
            let scheme_ok = !auth.scheme.is_empty()
                && auth
                    .scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~+".contains(&b));
            if !scheme_ok || reqwest::header::HeaderValue::from_str(&value).is_err() {
                return Err(refused(&PushRefusal::BadHeader("authentication")));
            }
        }
        self.policy
            .check(&config.url)
            .await
            .map_err(|r| refused(&r))?;
        if config.id.is_empty() {
            config.id = new_id("push-");
        }
        config.tenant.clear();
        Ok(config)
    }

    /// Keep `config` for task `task_id` (whose owner the caller checked).
    pub(crate) async fn register(
        &self,
        task_id: &str,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, RpcError> {
        config.task_id = task_id.to_owned();
        // Count and insert under the task's lock (per server: hosts sharing
        // the store each keep the bound for their own registrations).
        let stripe = (self.hasher.hash_one(task_id) % REGISTER_LOCKS as u64) as usize;
        let _guard = self.register_locks[stripe].lock().await;
        let existing = self
            .configs(task_id)
            .await
            .map_err(|e| store_error(task_id, &e))?;
        if existing.len() >= self.settings.max_configs
            && !existing.iter().any(|c| c.id == config.id)
        {
            return Err(refused(&PushRefusal::TooMany(self.settings.max_configs)));
        }
        let value = serde_json::to_value(&config)
            .map_err(|e| RpcError::new(ErrorCode::Internal, format!("cannot encode: {e}")))?;
        self.store
            .put_push_config(task_id, &config.id, value)
            .await
            .map_err(|e| store_error(task_id, &e))?;
        tracing::info!(task = %task_id, config = %config.id, "a2a push: config registered");
        Ok(config)
    }

    /// One of the four config methods, on a task whose owner the caller
    /// checked.
    pub(crate) async fn call(&self, method: &str, raw: Value) -> Result<Value, RpcError> {
        match method {
            "CreateTaskPushNotificationConfig" => {
                let task_id = task_id_of(&raw)?;
                let config = self.prepare(raw).await?;
                let config = self.register(&task_id, config).await?;
                encode(&config)
            }
            "GetTaskPushNotificationConfig" => {
                let req: TaskPushNotificationConfigRef = params(raw)?;
                required_config_id(&req.id)?;
                let configs = self
                    .configs(&req.task_id)
                    .await
                    .map_err(|e| store_error(&req.task_id, &e))?;
                let config = configs
                    .into_iter()
                    .find(|c| c.id == req.id)
                    .ok_or_else(|| config_not_found(&req))?;
                encode(&config)
            }
            "ListTaskPushNotificationConfigs" => {
                let req: ListTaskPushNotificationConfigsRequest = params(raw)?;
                if !req.page_token.is_empty() {
                    return Err(RpcError::invalid_params(
                        "pageToken: this server returns every config in one page",
                    ));
                }
                let configs = self
                    .configs(&req.task_id)
                    .await
                    .map_err(|e| store_error(&req.task_id, &e))?;
                encode(&ListTaskPushNotificationConfigsResponse {
                    configs,
                    next_page_token: String::new(),
                })
            }
            "DeleteTaskPushNotificationConfig" => {
                let req: TaskPushNotificationConfigRef = params(raw)?;
                required_config_id(&req.id)?;
                let existed = self
                    .store
                    .delete_push_config(&req.task_id, &req.id)
                    .await
                    .map_err(|e| store_error(&req.task_id, &e))?;
                if !existed {
                    return Err(config_not_found(&req));
                }
                tracing::info!(task = %req.task_id, config = %req.id, "a2a push: config deleted");
                Ok(Value::Object(Default::default()))
            }
            other => Err(RpcError::new(
                ErrorCode::MethodNotFound,
                format!("method {other:?} not found"),
            )),
        }
    }
}

/// The `taskId` every config method's params carry (required).
pub(crate) fn task_id_of(raw: &Value) -> Result<String, RpcError> {
    match raw.get("taskId").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => Ok(id.to_owned()),
        _ => Err(RpcError::invalid_params("params.taskId is required")),
    }
}

fn params<T: serde::de::DeserializeOwned>(raw: Value) -> Result<T, RpcError> {
    serde_json::from_value(raw).map_err(|e| RpcError::invalid_params(format!("params: {e}")))
}

fn encode(value: &impl serde::Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value)
        .map_err(|e| RpcError::new(ErrorCode::Internal, format!("cannot encode: {e}")))
}

fn required_config_id(id: &str) -> Result<(), RpcError> {
    if id.is_empty() {
        return Err(RpcError::invalid_params(
            "params.id (the config id) is required",
        ));
    }
    Ok(())
}

/// A refused config: `-32602` with the refusal's kind.
pub(crate) fn refused(refusal: &PushRefusal) -> RpcError {
    RpcError::invalid_params(refusal.to_string()).with_meta("refusal", refusal.kind())
}

fn config_not_found(req: &TaskPushNotificationConfigRef) -> RpcError {
    RpcError::new(
        ErrorCode::TaskNotFound,
        format!(
            "push notification config {:?} not found for task {:?}",
            req.id, req.task_id
        ),
    )
    .with_meta("taskId", req.task_id.as_str())
    .with_meta("configId", req.id.as_str())
}

fn store_error(task_id: &str, e: &StoreError) -> RpcError {
    match e {
        StoreError::Invalid(_) => RpcError::task_not_found(task_id),
        StoreError::Unsupported(_) => RpcError::new(
            ErrorCode::PushNotificationNotSupported,
            "this server's store cannot keep push notification configs",
        ),
        other => {
            tracing::warn!(task = %task_id, error = %other, "a2a push: the store failed");
            RpcError::new(ErrorCode::Internal, "the push config store failed")
        }
    }
}
