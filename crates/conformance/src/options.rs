//! What the suite is told about the driver under test.

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_driver::{Driver, Request, SessionState};

/// How a run case is expected to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// `Ok(Response)` with no failure, a clean exit, and (when streaming) `run.finished`.
    Success,
    /// A business failure (`Response::failure`) or a driver error.
    Failure,
    /// Either; only the contract clauses are judged.
    Any,
}

/// One hermetic run: the driver (configured by the factory, e.g. to run a
/// fake CLI replaying a capture) executes `request`, and every EVT, RUN, TRN
/// and RSP clause is judged on what it emitted and returned.
#[derive(Debug, Clone)]
pub struct RunCase {
    /// A name for the report.
    pub name: String,
    /// The resolved request to run.
    pub request: Request,
    /// How it should end.
    pub expect: Expect,
}

impl RunCase {
    /// A run case of `prompt` with `streaming`.
    pub fn new(name: impl Into<String>, prompt: &str, streaming: bool, expect: Expect) -> Self {
        let mut request = Request::new("run_0000000000000000", prompt);
        request.streaming = streaming;
        RunCase {
            name: name.into(),
            request,
            expect,
        }
    }
}

/// The grace period a cancelled run gets by default (core's default).
pub const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(5);

/// A cancellation case (RUN-05): the driver runs `request`, the run is
/// cancelled once the driver has emitted `after_events` events (raw chunks,
/// items, payloads … all count), and the driver must return within `grace`
/// of the cancel, leaving no process of the groups it reported
/// (`RunEvent::Spawn`, metadata `pid`) running. Configure the factory so the
/// provider is still busy at that point (a prompt the fake CLI or mock
/// answers slowly).
#[derive(Debug, Clone)]
pub struct CancelCase {
    /// A name for the report.
    pub name: String,
    /// The resolved request to run.
    pub request: Request,
    /// Cancel right after this many emitted events (0: before the run).
    pub after_events: usize,
    /// How long the driver may take to return after the cancel.
    pub grace: Duration,
}

impl CancelCase {
    /// A cancellation case of `prompt` with `streaming`, cancelled after
    /// `after_events` events, with the default grace.
    pub fn new(
        name: impl Into<String>,
        prompt: &str,
        streaming: bool,
        after_events: usize,
    ) -> Self {
        let mut request = Request::new("run_0000000000000000", prompt);
        request.streaming = streaming;
        CancelCase {
            name: name.into(),
            request,
            after_events,
            grace: DEFAULT_CANCEL_GRACE,
        }
    }

    /// Another grace period.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }
}

/// An opt-in run against the real provider.
#[derive(Debug, Clone)]
pub struct LiveRun {
    /// The prompt (default `"Reply with exactly: OK"`).
    pub prompt: String,
    /// Text the output must contain (default `"OK"`).
    pub expected_output: Option<String>,
    /// Use the streaming transport.
    pub streaming: bool,
    /// Upper bound for the run (default 5 minutes).
    pub timeout: Duration,
}

impl Default for LiveRun {
    fn default() -> Self {
        LiveRun {
            prompt: "Reply with exactly: OK".into(),
            expected_output: Some("OK".into()),
            streaming: true,
            timeout: Duration::from_secs(300),
        }
    }
}

/// A factory for a driver whose configuration is invalid (for CFG-03).
pub type InvalidFactory = Arc<dyn Fn() -> Box<dyn Driver> + Send + Sync>;

/// Options of [`test_driver`](crate::test_driver).
#[derive(Clone, Default)]
pub struct Options {
    pub(crate) session_state: Option<SessionState>,
    pub(crate) session_keys: Vec<String>,
    pub(crate) guard_keys: Vec<String>,
    pub(crate) invalid_config: Option<InvalidFactory>,
    pub(crate) runs: Vec<RunCase>,
    pub(crate) cancels: Vec<CancelCase>,
    pub(crate) live: Option<LiveRun>,
    pub(crate) run_timeout: Option<Duration>,
    pub(crate) expected_model: Option<String>,
    pub(crate) required_config_fields: Vec<String>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("session_state", &self.session_state)
            .field("session_keys", &self.session_keys)
            .field("guard_keys", &self.guard_keys)
            .field("invalid_config", &self.invalid_config.is_some())
            .field("runs", &self.runs)
            .field("cancels", &self.cancels)
            .field("live", &self.live)
            .field("expected_model", &self.expected_model)
            .field("required_config_fields", &self.required_config_fields)
            .finish()
    }
}

impl Options {
    /// No options: hermetic declaration clauses only.
    pub fn new() -> Self {
        Self::default()
    }

    /// A representative resumable state for the SES clauses.
    pub fn session_state(mut self, state: SessionState) -> Self {
        self.session_state = Some(state);
        self
    }

    /// Data keys that must survive the codec round trip (SES-08).
    pub fn session_keys<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.session_keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// Data keys the guard fingerprint must depend on (SES-06).
    pub fn guard_keys<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.guard_keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// A factory for a driver with an invalid configuration (CFG-03).
    pub fn invalid_config(mut self, factory: InvalidFactory) -> Self {
        self.invalid_config = Some(factory);
        self
    }

    /// Add a hermetic run case.
    pub fn run(mut self, case: RunCase) -> Self {
        self.runs.push(case);
        self
    }

    /// Add a cancellation case (RUN-05).
    pub fn cancel(mut self, case: CancelCase) -> Self {
        self.cancels.push(case);
        self
    }

    /// Opt in to a live run against the real provider (LIV clauses).
    pub fn live(mut self, live: LiveRun) -> Self {
        self.live = Some(live);
        self
    }

    /// The model [`Driver::detect_model`]
    /// must find (CAP-05).
    pub fn expected_model(mut self, model: impl Into<String>) -> Self {
        self.expected_model = Some(model.into());
        self
    }

    /// Fields the [config schema](agent_adaptor_driver::Driver::config_schema)
    /// must have (CAP-08).
    pub fn required_config_fields<S: Into<String>>(
        mut self,
        names: impl IntoIterator<Item = S>,
    ) -> Self {
        self.required_config_fields = names.into_iter().map(Into::into).collect();
        self
    }

    /// Upper bound for each hermetic run (default 30 s).
    pub fn run_timeout(mut self, timeout: Duration) -> Self {
        self.run_timeout = Some(timeout);
        self
    }
}
