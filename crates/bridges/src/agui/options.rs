//! [`SseOptions`]: how the SSE handler serves runs.

use std::fmt;
use std::time::Duration;

use std::sync::Arc;

use agent_adaptor_core::thread::event_log::Retention;
use agent_adaptor_core::{RunOptions, ThreadStore};

use super::hub::ReplayLimits;

/// Default per-write deadline: a client that has not taken a frame for this
/// long is dropped and its run cancelled.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default interval of `: keep-alive` comments on an idle stream.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Default (and documented) request body limit: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
/// Default replay buffer per run: frames …
pub const DEFAULT_REPLAY_FRAMES: usize = 4096;
/// … and bytes.
pub const DEFAULT_REPLAY_BYTES: usize = 8 * 1024 * 1024;
/// Default time a finished run stays reachable for a reconnect.
pub const DEFAULT_REPLAY_RETAIN: Duration = Duration::from_secs(60);
/// Default longest wait of a run parked at an interrupt (the approval's own
/// deadline, by default 30 s, usually comes first).
pub const DEFAULT_INTERRUPT_TIMEOUT: Duration = Duration::from_secs(600);
/// Default interval at which a replay from the event log polls for the
/// run's new records.
pub const DEFAULT_LOG_POLL: Duration = Duration::from_millis(200);
/// Default longest silence of a run followed in the event log before the
/// replay ends it with `RUN_ERROR` `interrupted` (its owner died or hangs).
pub const DEFAULT_LOG_IDLE: Duration = Duration::from_secs(120);
/// How long a recorded run goes on after its last client left, waiting for
/// a reconnect here or on another host (see
/// [`SseOptions::reconnect_grace`]).
pub const DEFAULT_RECONNECT_GRACE: Duration = Duration::from_secs(3);

/// What the handler speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocol {
    /// AG-UI 1.0: POST `RunAgentInput`, AG-UI events back.
    #[default]
    Agui,
    /// Raw: POST `{"prompt", "sessionKey"?}`, our own event JSON back.
    Raw,
}

/// How an [`SseHandler`](super::SseHandler) serves runs. Start from
/// [`SseOptions::agui`] or [`SseOptions::raw`] and adjust.
#[derive(Clone)]
pub struct SseOptions {
    pub(crate) protocol: Protocol,
    pub(crate) keep_alive: Option<Duration>,
    pub(crate) cors_allowed_origin: Option<String>,
    pub(crate) write_timeout: Duration,
    pub(crate) run_options: RunOptions,
    pub(crate) bearer_token: Option<String>,
    pub(crate) max_body_bytes: usize,
    pub(crate) replay: ReplayLimits,
    pub(crate) interrupt_timeout: Duration,
    pub(crate) thread_namespace: String,
    pub(crate) event_log: Option<Arc<dyn ThreadStore>>,
    pub(crate) event_log_retention: Retention,
    pub(crate) log_poll: Duration,
    pub(crate) log_idle: Duration,
    pub(crate) reconnect_grace: Option<Duration>,
    pub(crate) desk: Option<crate::desk::Desk>,
}

impl fmt::Debug for SseOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseOptions")
            .field("protocol", &self.protocol)
            .field("keep_alive", &self.keep_alive)
            .field("cors_allowed_origin", &self.cors_allowed_origin)
            .field("write_timeout", &self.write_timeout)
            .field("run_options", &self.run_options)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("max_body_bytes", &self.max_body_bytes)
            .field("replay", &self.replay)
            .field("interrupt_timeout", &self.interrupt_timeout)
            .field("thread_namespace", &self.thread_namespace)
            .field("event_log", &self.event_log.is_some())
            .field("log_poll", &self.log_poll)
            .field("log_idle", &self.log_idle)
            .field("reconnect_grace", &self.reconnect_grace)
            .finish()
    }
}

impl Default for SseOptions {
    fn default() -> Self {
        SseOptions {
            protocol: Protocol::Agui,
            keep_alive: Some(DEFAULT_KEEP_ALIVE),
            cors_allowed_origin: None,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            run_options: RunOptions::default(),
            bearer_token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            replay: ReplayLimits {
                frames: DEFAULT_REPLAY_FRAMES,
                bytes: DEFAULT_REPLAY_BYTES,
                retain: DEFAULT_REPLAY_RETAIN,
            },
            interrupt_timeout: DEFAULT_INTERRUPT_TIMEOUT,
            thread_namespace: String::new(),
            event_log: None,
            event_log_retention: Retention::keep_all(),
            log_poll: DEFAULT_LOG_POLL,
            log_idle: DEFAULT_LOG_IDLE,
            reconnect_grace: None,
            desk: None,
        }
    }
}

impl SseOptions {
    /// AG-UI mode with the defaults.
    pub fn agui() -> Self {
        Self::default()
    }

    /// Raw mode with the defaults.
    pub fn raw() -> Self {
        Self {
            protocol: Protocol::Raw,
            ..Self::default()
        }
    }

    /// The protocol.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Write `: keep-alive` comments after this much idle time (`None`: never).
    pub fn keep_alive(mut self, every: Option<Duration>) -> Self {
        self.keep_alive = every.filter(|d| !d.is_zero());
        self
    }

    /// Send CORS headers allowing this origin (`"*"` or one origin). Without
    /// it no CORS header is sent and preflight requests are refused.
    pub fn cors_allowed_origin(mut self, origin: impl Into<String>) -> Self {
        self.cors_allowed_origin = Some(origin.into());
        self
    }

    /// The per-write deadline (default 30 s): each frame must be taken by
    /// the connection within it, else the client is dropped and, if it was
    /// the run's last client, the run is cancelled. Not a budget for a run.
    /// The request body must also arrive within it (else 408).
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.write_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Options applied to every run (merged over the agent's defaults).
    pub fn run_options(mut self, options: RunOptions) -> Self {
        self.run_options = options;
        self
    }

    /// Require `Authorization: Bearer <token>` on every request.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// The request body limit (default 1 MiB); larger bodies get 413.
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.max_body_bytes = limit;
        self
    }

    /// Record every AG-UI run this handler starts into the event log of
    /// its thread in `store` (see [`ThreadStore::append_events`]): run
    /// metadata (owner, AG-UI ids, prompt, the history snapshot sent), the
    /// core events, and the terminal frames. A reconnect that the
    /// in-memory replay buffer cannot serve (another instance, a finished
    /// run gone from memory) is then replayed from the log. A store without
    /// an event log makes such reconnects 503 `event_log_unavailable`.
    ///
    /// The same store then shares the handler's approvals with every host
    /// over it (see [`Desk`](crate::desk::Desk)): an interrupt is a store
    /// row any host answers, and the host running the agent continues the
    /// run. A store that keeps no approvals leaves them in this process.
    pub fn event_log(mut self, store: Arc<dyn ThreadStore>) -> Self {
        self.desk = Some(crate::desk::Desk::new(store.clone()));
        self.event_log = Some(store);
        self
    }

    /// How long a run goes on after its last client left before it is
    /// cancelled, waiting for a reconnect — here, or on another host
    /// replaying it from the event log (whose reader announces itself).
    /// Default: [`DEFAULT_RECONNECT_GRACE`] with an event log, zero (at
    /// once) without one.
    pub fn reconnect_grace(mut self, grace: Duration) -> Self {
        self.reconnect_grace = Some(grace);
        self
    }

    /// The grace in effect (see [`reconnect_grace`](Self::reconnect_grace)).
    pub(crate) fn grace(&self) -> Duration {
        match (self.reconnect_grace, &self.event_log) {
            (Some(g), _) => g,
            (None, Some(_)) => DEFAULT_RECONNECT_GRACE,
            (None, None) => Duration::ZERO,
        }
    }

    /// What the log keeps of each thread (default: everything): applied
    /// with [`ThreadStore::prune_events`] after each recorded run ends. A
    /// reconnect to a run pruned away gets 410.
    pub fn event_log_retention(mut self, retention: Retention) -> Self {
        self.event_log_retention = retention;
        self
    }

    /// How a replay from the event log follows a run still going: poll
    /// every `poll`, and end with `RUN_ERROR` `interrupted` after `idle`
    /// without a new record.
    pub fn log_follow(mut self, poll: Duration, idle: Duration) -> Self {
        self.log_poll = poll.max(Duration::from_millis(10));
        self.log_idle = idle;
        self
    }

    /// Keep at most `frames` frames / `bytes` bytes of each run for
    /// reconnects, and a finished run for `retain`. Frames a connected
    /// client has not read yet are never evicted (the run waits instead).
    pub fn replay(mut self, frames: usize, bytes: usize, retain: Duration) -> Self {
        self.replay = ReplayLimits {
            frames: frames.max(1),
            bytes,
            retain,
        };
        self
    }

    /// The longest a run waits parked at an interrupt (default 10 min);
    /// the approval's own deadline applies when it is earlier. An expired
    /// interrupt's run is cancelled.
    pub fn interrupt_timeout(mut self, timeout: Duration) -> Self {
        self.interrupt_timeout = timeout;
        self
    }

    /// The namespace of AG-UI thread keys (see
    /// [`agui_thread_key`](super::agui_thread_key)); empty by default.
    pub fn thread_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.thread_namespace = namespace.into();
        self
    }
}
