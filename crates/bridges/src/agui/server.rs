//! [`SseHandler`]: the axum handler, and [`SseServer`]: a bind helper.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use agent_adaptor_core::{Agent, RunStream, Runner};
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::error::RequestError;
use super::hub::{Hub, Hubs, hub_key};
use super::interrupts::InterruptRegistry;
use super::options::{Protocol, SseOptions};
use super::presence::Presence;
use super::record::{RunMeta, history, read_all, unsupported};
use super::replay::{Follow, follow};
use super::run::{AguiRun, FrameId, ResumeError};
use super::shared::Answered;
use super::source::{Parking, RawRun, Recording, Source, produce};
use super::sse;
use super::thread_key::{agui_thread_key, raw_thread_key};
use super::wire::RunAgentInput;
use crate::Principal;

/// The response header that names the core run id of a stream (raw-mode
/// clients use it, or any event's `meta.run_id`, to reconnect).
pub const RUN_ID_HEADER: &str = "x-agent-adaptor-run-id";

/// The address the bind helpers use by default: loopback only.
pub const DEFAULT_BIND_ADDR: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// What runs the prompts.
#[derive(Clone)]
enum Target {
    /// Any runner, used as is (a host-pinned `Thread` stays pinned).
    Runner(Arc<dyn Runner>),
    /// An agent whose runs bind to threads by session identity.
    Agent(Agent),
}

impl Target {
    fn stream(&self, prompt: &str, session: Option<&str>, options: &SseOptions) -> RunStream {
        let opts = options.run_options.clone();
        match (self, session) {
            (Target::Runner(r), _) => r.stream_with(prompt, opts),
            (Target::Agent(a), Some(key)) => a.thread(key).stream_with(prompt, opts),
            (Target::Agent(a), None) => a.stream_with(prompt, opts),
        }
    }
}

pub(super) struct Shared {
    target: Target,
    pub(super) options: SseOptions,
    pub(super) hubs: Arc<Hubs>,
    pub(super) interrupts: InterruptRegistry,
    /// This handler's name in the answers it records (see
    /// [`shared`](super::shared)).
    pub(super) nonce: String,
}

/// An SSE endpoint over a [`Runner`]: AG-UI 1.0 or raw mode (see the
/// [module docs](super) for the wire contract). Cheap to clone.
///
/// ```no_run
/// use std::sync::Arc;
/// use agent_adaptor_bridges::agui::{SseHandler, SseOptions, SseServer};
/// use agent_adaptor_core::{Agent, scripted::ScriptedDriver};
///
/// # #[tokio::main] async fn main() -> std::io::Result<()> {
/// let agent = Agent::new(ScriptedDriver::text_reply("hello"));
/// let handler = SseHandler::new(Arc::new(agent), SseOptions::agui());
/// let server = SseServer::bind_local(handler.router("/agui")).await?; // 127.0.0.1, any port
/// println!("POST RunAgentInput to {}", server.url("/agui"));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SseHandler {
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for SseHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseHandler")
            .field("options", &self.shared.options)
            .field("runs", &self.shared.hubs.len())
            .field("pending_interrupts", &self.shared.interrupts.len())
            .finish()
    }
}

impl SseHandler {
    /// Serve `runner` as it is: every run goes to `runner` (a `Thread` you
    /// pass stays pinned to its key; AG-UI `threadId` / raw `sessionKey`
    /// only label the stream).
    pub fn new(runner: Arc<dyn Runner>, options: SseOptions) -> Self {
        Self::with_target(Target::Runner(runner), options)
    }

    /// Serve `agent` with thread binding: an AG-UI `threadId` runs on
    /// `agent.thread(agui_thread_key(namespace, threadId))`, a raw
    /// `sessionKey` on `agent.thread(raw_thread_key(namespace, sessionKey))`
    /// (so it can never name another bridge's thread), a raw request
    /// without one on the agent itself. The agent needs a thread store
    /// (otherwise those runs fail with `thread_store_required`).
    pub fn with_threads(agent: Agent, options: SseOptions) -> Self {
        Self::with_target(Target::Agent(agent), options)
    }

    fn with_target(target: Target, options: SseOptions) -> Self {
        SseHandler {
            shared: Arc::new(Shared {
                target,
                options,
                hubs: Arc::new(Hubs::default()),
                interrupts: InterruptRegistry::default(),
                nonce: crate::a2a::new_id("agui_"),
            }),
        }
    }

    /// A router serving this handler at `path` (POST; OPTIONS for CORS
    /// preflight when CORS is configured).
    pub fn router(&self, path: &str) -> Router {
        Router::new()
            .route(path, axum::routing::any(route))
            .with_state(self.clone())
    }

    /// Handle one request (for hosts that mount the handler themselves).
    pub async fn handle(&self, req: Request) -> Response {
        let mut resp = match *req.method() {
            Method::POST => match self.serve(req).await {
                Ok(r) => r,
                Err(e) => e.into_response(),
            },
            Method::OPTIONS if self.shared.options.cors_allowed_origin.is_some() => preflight(),
            _ => {
                let mut r = RequestError::MethodNotAllowed.into_response();
                r.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("POST"));
                r
            }
        };
        if let Some(origin) = &self.shared.options.cors_allowed_origin {
            cors(resp.headers_mut(), origin);
        }
        resp
    }

    /// Runs currently known (streaming, or finished and kept for replay).
    pub fn runs(&self) -> usize {
        self.shared.hubs.len()
    }

    /// Runs parked at an interrupt, waiting for a resume.
    pub fn pending_interrupts(&self) -> usize {
        self.shared.interrupts.len()
    }

    /// Cancel AG-UI run `run_id` of `thread_id`, streaming on this host,
    /// for `principal` (who started it): the explicit stop of a client that
    /// would otherwise leave the run its reconnect grace. `RunNotFound`
    /// when this host does not stream it, `Forbidden` for another
    /// principal's run. A finished run is left alone.
    pub fn cancel_run(
        &self,
        thread_id: &str,
        run_id: &str,
        principal: &Principal,
    ) -> Result<(), RequestError> {
        let key = hub_key(thread_id, run_id);
        let hub = self
            .shared
            .hubs
            .get(&key)
            .ok_or_else(|| RequestError::RunNotFound(run_id.to_owned()))?;
        if !hub.owned_by(principal) {
            return Err(RequestError::Forbidden(
                "this run belongs to another client: only it may stop it",
            ));
        }
        if let Some(run) = hub.run() {
            tracing::info!(run = run_id, "agui: run stopped by its client");
            run.cancel();
        }
        Ok(())
    }

    /// Close the handler (server shutdown): cancel every run it streams and
    /// every run parked at an interrupt (core cancels the driver, which
    /// stops its process); each attached stream gets its final frames (AG-UI:
    /// `RUN_FINISHED` with outcome `cancelled`) and ends. Then wait up to
    /// `within` for those runs to end. A run started afterwards is cancelled
    /// at once. Idempotent.
    pub async fn shutdown(&self, within: std::time::Duration) -> crate::ShutdownReport {
        let mut runs = self.shared.hubs.close();
        runs.extend(self.shared.interrupts.close());
        crate::shutdown::wait_runs(runs, within).await
    }

    async fn serve(&self, req: Request) -> Result<Response, RequestError> {
        let opts = &self.shared.options;
        let headers = req.headers().clone();
        check_auth(&headers, opts.bearer_token.as_deref())?;
        let principal = Principal::of(req.extensions());
        check_content_type(&headers)?;
        check_accept(&headers)?;
        let cursor = last_event_id(&headers)?;
        // A client that never finishes its body must not hold a task forever.
        let body = tokio::time::timeout(
            opts.write_timeout,
            read_body(req.into_body(), opts.max_body_bytes, &headers),
        )
        .await
        .map_err(|_| RequestError::BodyTimeout)??;
        match opts.protocol {
            Protocol::Agui => self.serve_agui(&body, cursor, principal).await,
            Protocol::Raw => self.serve_raw(&body, cursor, principal),
        }
    }

    /// What to record of a new AG-UI run (with the snapshot it sends), when
    /// an event log is configured and the store keeps one.
    async fn recording(
        &self,
        input: &RunAgentInput,
        prompt: &str,
        principal: &Principal,
    ) -> Option<Recording> {
        let s = &self.shared;
        let store = s.options.event_log.clone()?;
        let key = agui_thread_key(&s.options.thread_namespace, &input.thread_id);
        let records = match read_all(store.as_ref(), &key).await {
            Ok(r) => r,
            Err(e) => {
                if !unsupported(&e) {
                    tracing::warn!(
                        "agui: the event log could not be read; the run is not recorded"
                    );
                }
                return None;
            }
        };
        let user_message_id = input.prompt_message_id();
        let mut snapshot = history(&records);
        snapshot.push(super::wire::Message::User {
            id: user_message_id
                .clone()
                .unwrap_or_else(|| format!("{}-user", input.run_id)),
            content: prompt.to_owned(),
        });
        Some(Recording {
            store,
            key,
            meta: RunMeta {
                owner: principal.digest(),
                thread_id: input.thread_id.clone(),
                run_id: input.run_id.clone(),
                user_message_id,
                snapshot: Some(snapshot),
                resumed_at: None,
            },
            prompt: Some(prompt.to_owned()),
            retention: s.options.event_log_retention,
        })
    }

    /// What to record of an AG-UI run that resumes an interrupted one.
    fn resume_recording(
        &self,
        input: &RunAgentInput,
        principal: &Principal,
        ts: i64,
    ) -> Option<Recording> {
        let s = &self.shared;
        Some(Recording {
            store: s.options.event_log.clone()?,
            key: agui_thread_key(&s.options.thread_namespace, &input.thread_id),
            meta: RunMeta {
                owner: principal.digest(),
                thread_id: input.thread_id.clone(),
                run_id: input.run_id.clone(),
                user_message_id: None,
                snapshot: None,
                resumed_at: Some(ts),
            },
            prompt: None,
            retention: s.options.event_log_retention,
        })
    }

    async fn serve_agui(
        &self,
        body: &[u8],
        cursor: Option<FrameId>,
        principal: Principal,
    ) -> Result<Response, RequestError> {
        let s = &self.shared;
        let input: RunAgentInput = parse_json(body)?;
        let key = hub_key(&input.thread_id, &input.run_id);
        if let Some(cursor) = cursor {
            return match self.reconnect(&key, &input.run_id, Some(cursor), &principal) {
                Err(RequestError::RunNotFound(_)) if s.options.event_log.is_some() => {
                    self.replay_from_log(&input, cursor, principal).await
                }
                other => other,
            };
        }
        let resume = input.resume.as_deref().unwrap_or_default();
        let prompt = if resume.is_empty() {
            if let Some(interrupt_ids) = s.interrupts.pending_for(&input.thread_id, &principal) {
                return Err(RequestError::PendingInterrupt { interrupt_ids });
            }
            Some(input.prompt().ok_or(RequestError::MissingUserMessage)?)
        } else if resume.len() != 1 {
            return Err(RequestError::InvalidResume(format!(
                "expected one entry answering the pending interrupt, got {}",
                resume.len()
            )));
        } else {
            None
        };
        let mut recording = match &prompt {
            Some(p) => self.recording(&input, p, &principal).await,
            None => None,
        };
        let hub = Hub::new(s.options.replay, principal.digest());
        if !s.hubs.insert(&key, &hub) {
            if let Some(entry) = resume.first()
                && self.is_retried_resume(&input, entry, &principal).await
            {
                // This resume runs here already: the client never saw it.
                return self.reconnect(&key, &input.run_id, None, &principal);
            }
            return Err(RequestError::RunExists(input.run_id));
        }
        let run = match (prompt, resume.first()) {
            (Some(prompt), _) => {
                let session = match s.target {
                    Target::Agent(_) => Some(agui_thread_key(
                        &s.options.thread_namespace,
                        &input.thread_id,
                    )),
                    Target::Runner(_) => None,
                };
                let stream = s.target.stream(&prompt, session.as_deref(), &s.options);
                let mut run = AguiRun::with_interrupt_limit(
                    stream,
                    input.thread_id.clone(),
                    input.run_id.clone(),
                    Some(s.options.interrupt_timeout),
                );
                if let Some(snapshot) = recording.as_ref().and_then(|r| r.meta.snapshot.clone()) {
                    run.set_snapshot(snapshot);
                }
                run
            }
            (None, Some(entry)) => {
                let answered = self.answer_interrupt(&input, entry, &principal).await;
                let parked = match answered {
                    Ok(Answered::Here(parked)) => *parked,
                    Ok(Answered::Elsewhere { core_run_id }) => {
                        s.hubs.remove(&key, &hub);
                        return Ok(self.follow_resumed(&input, principal, &core_run_id));
                    }
                    Err(e) => {
                        s.hubs.remove(&key, &hub);
                        return Err(e);
                    }
                };
                let ts = chrono::Utc::now().timestamp_millis();
                match parked.resume_at(
                    entry,
                    input.thread_id.clone(),
                    input.run_id.clone(),
                    Some(ts),
                ) {
                    Ok(run) => {
                        recording = self.resume_recording(&input, &principal, ts);
                        tracing::info!(
                            interrupt = %entry.interrupt_id,
                            status = ?entry.status,
                            answered_by = %principal,
                            "agui: interrupt answered"
                        );
                        run
                    }
                    Err((e, parked)) => {
                        // Expired or already answered: it can never be
                        // answered now; cancel its run.
                        parked.handle().cancel();
                        drop(parked);
                        s.hubs.remove(&key, &hub);
                        return Err(match e {
                            ResumeError::InvalidPayload(m) => RequestError::InvalidResume(m),
                            ResumeError::NotGrantable => {
                                RequestError::NotGrantable(entry.interrupt_id.clone())
                            }
                            _ => RequestError::InterruptExpired(entry.interrupt_id.clone()),
                        });
                    }
                }
            }
            (None, None) => {
                s.hubs.remove(&key, &hub);
                return Err(RequestError::MissingUserMessage);
            }
        };
        let run_id = run.handle().run_id().to_owned();
        Ok(self.start(
            hub,
            key,
            Source::Agui(Box::new(run)),
            (&run_id, &principal),
            recording,
        ))
    }

    /// Replay a run this server does not hold from the event log.
    async fn replay_from_log(
        &self,
        input: &RunAgentInput,
        cursor: FrameId,
        principal: Principal,
    ) -> Result<Response, RequestError> {
        let s = &self.shared;
        let Some(store) = s.options.event_log.clone() else {
            return Err(RequestError::EventLogUnavailable);
        };
        let key = agui_thread_key(&s.options.thread_namespace, &input.thread_id);
        let found = super::replay::find(store.as_ref(), &key, &input.run_id, &principal).await?;
        let core_run_id = found.core_run_id.clone();
        let hub = Hub::new(s.options.replay, principal.digest());
        let sub = hub
            .attach(None)
            .map_err(|_| RequestError::ReplayUnavailable(cursor.to_string()))?;
        tracing::info!(run = %input.run_id, %cursor, "agui: replaying a run from the event log");
        tokio::spawn(follow(store, key, found, Some(cursor), hub, self.follow()));
        Ok(sse_response(
            sse::body(sub, s.options.write_timeout, s.options.keep_alive),
            &core_run_id,
        ))
    }

    /// The SSE response reading `sub` (core run `run_id`).
    pub(super) fn stream_response(&self, sub: super::hub::Subscription, run_id: &str) -> Response {
        let o = &self.shared.options;
        sse_response(sse::body(sub, o.write_timeout, o.keep_alive), run_id)
    }

    /// How replays from the log follow a run.
    pub(super) fn follow(&self) -> Follow {
        let o = &self.shared.options;
        let grace = o.grace();
        Follow {
            poll: o.log_poll,
            idle: o.log_idle,
            announce: o
                .desk
                .clone()
                .filter(|_| !grace.is_zero())
                .map(|d| (d, super::presence::announce_every(grace))),
        }
    }

    fn serve_raw(
        &self,
        body: &[u8],
        cursor: Option<FrameId>,
        principal: Principal,
    ) -> Result<Response, RequestError> {
        let s = &self.shared;
        let input: RawInput = parse_json(body)?;
        if let Some(cursor) = cursor {
            let run_id = input.run_id.ok_or_else(|| {
                RequestError::InvalidInput("a reconnect (Last-Event-ID) needs \"runId\"".into())
            })?;
            return self.reconnect(
                &format!("raw\u{0}{run_id}"),
                &run_id,
                Some(cursor),
                &principal,
            );
        }
        let prompt = input
            .prompt
            .filter(|p| !p.trim().is_empty())
            .ok_or(RequestError::MissingUserMessage)?;
        let session = match (&s.target, input.session_key.as_deref()) {
            (Target::Agent(_), Some(k)) => Some(raw_thread_key(&s.options.thread_namespace, k)),
            _ => None,
        };
        let stream = s.target.stream(&prompt, session.as_deref(), &s.options);
        let run_id = stream.run_id().to_owned();
        let key = format!("raw\u{0}{run_id}");
        let hub = Hub::new(s.options.replay, principal.digest());
        // Run ids are unique, so the key is free.
        s.hubs.insert(&key, &hub);
        Ok(self.start(
            hub,
            key,
            Source::Raw(RawRun::new(stream)),
            (&run_id, &principal),
            None,
        ))
    }

    /// Attach the first client, spawn the producer, answer with the stream.
    fn start(
        &self,
        hub: Arc<Hub>,
        key: String,
        source: Source,
        (run_id, principal): (&str, &Principal),
        recording: Option<Recording>,
    ) -> Response {
        let s = &self.shared;
        // A fresh hub has no frames yet, so attaching cannot hit a gap.
        let sub = match hub.attach(None) {
            Ok(sub) => sub,
            Err(_) => return RequestError::ReplayUnavailable(String::new()).into_response(),
        };
        tracing::info!(run_id, %principal, "sse: run started");
        self.spawn_producer(hub, key, source, run_id, recording);
        sse_response(
            sse::body(sub, s.options.write_timeout, s.options.keep_alive),
            run_id,
        )
    }

    /// Spawn the producer of `hub` (core run `run_id`).
    pub(super) fn spawn_producer(
        &self,
        hub: Arc<Hub>,
        key: String,
        source: Source,
        run_id: &str,
        recording: Option<Recording>,
    ) {
        let s = &self.shared;
        let owner = hub.owner().to_owned();
        if let Some(run) = source.handle() {
            hub.set_run(run);
        }
        let presence = Presence {
            desk: s.options.desk.clone(),
            grace: s.options.grace(),
            run_id: run_id.to_owned(),
        };
        tokio::spawn(produce(
            hub,
            source,
            Parking {
                registry: s.interrupts.clone(),
                fallback: s.options.interrupt_timeout,
                owner,
                share: self.share_hook(),
            },
            presence,
            s.hubs.clone(),
            key,
            s.options.replay.retain,
            recording,
        ));
    }

    fn reconnect(
        &self,
        key: &str,
        name: &str,
        cursor: Option<FrameId>,
        principal: &Principal,
    ) -> Result<Response, RequestError> {
        let s = &self.shared;
        let hub = s
            .hubs
            .get(key)
            .ok_or_else(|| RequestError::RunNotFound(name.to_owned()))?;
        if !hub.owned_by(principal) {
            tracing::warn!(run = name, %principal, "sse: refused a replay of another principal's run");
            return Err(RequestError::Forbidden(
                "this run belongs to another client: only it may replay the stream",
            ));
        }
        let sub = match cursor {
            Some(cursor) => hub.attach(Some(cursor)),
            None => hub.attach_from_start(),
        }
        .map_err(|_| {
            RequestError::ReplayUnavailable(cursor.map(|c| c.to_string()).unwrap_or_default())
        })?;
        Ok(sse_response(
            sse::body(sub, s.options.write_timeout, s.options.keep_alive),
            name,
        ))
    }
}

async fn route(State(handler): State<SseHandler>, req: Request) -> Response {
    handler.handle(req).await
}

/// The raw-mode POST body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawInput {
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    session_key: Option<String>,
    /// Only for a reconnect: the run to attach to.
    #[serde(default)]
    run_id: Option<String>,
}

fn sse_response(body: Body, run_id: &str) -> Response {
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    if let Ok(v) = HeaderValue::from_str(run_id) {
        h.insert(RUN_ID_HEADER, v);
    }
    resp
}

fn preflight() -> Response {
    let mut resp = StatusCode::NO_CONTENT.into_response();
    let h = resp.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("POST, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("content-type, accept, authorization, last-event-id"),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    resp
}

fn cors(h: &mut HeaderMap, origin: &str) {
    if let Ok(v) = HeaderValue::from_str(origin) {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
    }
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(RUN_ID_HEADER),
    );
    if origin != "*" {
        h.insert(header::VARY, HeaderValue::from_static("origin"));
    }
}

fn check_auth(headers: &HeaderMap, token: Option<&str>) -> Result<(), RequestError> {
    let Some(token) = token else {
        return Ok(());
    };
    let given = crate::secret::bearer(headers).unwrap_or("");
    if crate::secret::constant_time_eq(given.as_bytes(), token.as_bytes()) {
        Ok(())
    } else {
        Err(RequestError::Unauthorized)
    }
}

fn media_type(v: &str) -> String {
    v.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

fn check_content_type(headers: &HeaderMap) -> Result<(), RequestError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    if media_type(&ct) == "application/json" {
        Ok(())
    } else {
        Err(RequestError::UnsupportedMediaType(ct))
    }
}

fn check_accept(headers: &HeaderMap) -> Result<(), RequestError> {
    let values: Vec<String> = headers
        .get_all(header::ACCEPT)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    if values.is_empty() {
        return Ok(());
    }
    let ok = values.iter().flat_map(|v| v.split(',')).any(|range| {
        matches!(
            media_type(range).as_str(),
            "text/event-stream" | "text/*" | "*/*"
        )
    });
    if ok {
        Ok(())
    } else {
        Err(RequestError::NotAcceptable(values.join(", ")))
    }
}

fn last_event_id(headers: &HeaderMap) -> Result<Option<FrameId>, RequestError> {
    let Some(v) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let s = String::from_utf8_lossy(v.as_bytes()).into_owned();
    s.parse()
        .map(Some)
        .map_err(|_| RequestError::InvalidLastEventId(s))
}

async fn read_body(body: Body, limit: usize, headers: &HeaderMap) -> Result<Bytes, RequestError> {
    let too_large = RequestError::PayloadTooLarge { limit };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large);
    }
    let mut buf = BytesMut::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| RequestError::BodyRead(e.to_string()))?;
        if buf.len() + chunk.len() > limit {
            return Err(too_large);
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, RequestError> {
    serde_json::from_slice(body).map_err(|e| {
        if e.is_data() {
            RequestError::InvalidInput(e.to_string())
        } else {
            RequestError::InvalidJson(e.to_string())
        }
    })
}

/// A running SSE server (see [`SseServer::bind_local`]). Dropping it stops
/// the server.
#[derive(Debug)]
pub struct SseServer {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl SseServer {
    /// Serve `router` on `addr`.
    pub async fn bind(router: Router, addr: SocketAddr) -> std::io::Result<Self> {
        let listener = crate::http::listen(addr)?;
        let addr = listener.local_addr()?;
        let server = crate::http::HttpServer::new(listener, router);
        let task = tokio::spawn(server.serve(std::future::pending()));
        Ok(SseServer { addr, task })
    }

    /// Serve `router` on 127.0.0.1 at a free port (the safe default: only
    /// local clients; put it behind your own proxy and auth to go wider).
    pub async fn bind_local(router: Router) -> std::io::Result<Self> {
        Self::bind(router, SocketAddr::new(DEFAULT_BIND_ADDR, 0)).await
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for SseServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
