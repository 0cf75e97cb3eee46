//! The `Driver` trait and its run context (spec §1).

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::decision::DecisionError;
use crate::descriptor::{Descriptor, StreamCapability};
use crate::probe::{
    ConfigSchema, DetectedModel, EnvironmentReport, ProfileReport, QuotaReport, SkillsReport,
};
use crate::profile::Profile;
use crate::request::Request;
use crate::response::Response;
use crate::session::{FingerprintError, SessionCodec};
use crate::sink::{EventSink, SinkError};
use crate::skill::SkillRef;

/// One provider integration.
///
/// A driver validates its own (construction-time) config, runs the provider,
/// parses its official protocol, and from that one parse forms the live
/// payloads, the transcript and every layer of the [`Response`].
///
/// Optional capabilities are methods with defaults returning `None`.
#[async_trait]
pub trait Driver: Send + Sync + 'static {
    /// Who the driver is and what it supports. Deterministic (DRV-02).
    fn descriptor(&self) -> Descriptor;

    /// Validate the config captured at construction. Called by core before
    /// every launch; an error refuses the run before anything starts.
    fn validate_config(&self) -> Result<(), ConfigError>;

    /// Execute one resolved request, reporting through `sink`.
    ///
    /// Before returning, every reader, parser and process wait must have
    /// finished. On cancellation (`ctx.cancel`), stop the provider promptly
    /// and return; an `Err` means an infrastructure failure and invalidates
    /// any checkpoint. Business failures go in [`Response::failure`].
    async fn run(
        &self,
        ctx: RunContext,
        req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError>;

    /// Live-payload granularity, when the driver emits normalized payloads.
    /// `None` means no capability at all (every hard negative applies).
    fn stream_capability(&self) -> Option<StreamCapability> {
        None
    }

    /// The session codec, for drivers that can resume.
    fn session_codec(&self) -> Option<Arc<dyn SessionCodec>> {
        None
    }

    /// A deterministic fingerprint of every provider-visible construction
    /// value, for drivers that can resume.
    fn session_config_fingerprint(&self) -> Option<Result<String, FingerprintError>> {
        None
    }

    /// Stop and reap every provider process the driver keeps between runs
    /// (drivers that declare
    /// [`ProcessCapabilities::persistent`](crate::ProcessCapabilities::persistent)).
    ///
    /// Idempotent, and the driver stays usable: a later run spawns anew.
    /// Processes serving a run in progress are not affected (they are
    /// stopped or kept when that run ends, as usual). The default does
    /// nothing, which is right for a driver that keeps no process.
    async fn close_processes(&self) {}

    /// Check, without running anything, whether a run can work: the
    /// program is found, its configuration home is readable, credentials
    /// are present (by name). Hermetic: local files only (see
    /// [`crate::probe`]).
    fn check_environment(&self) -> Option<EnvironmentReport> {
        None
    }

    /// The model a run would use when the request names none: the
    /// configured one, else what the CLI's own settings say. Hermetic.
    fn detect_model(&self) -> Option<DetectedModel> {
        None
    }

    /// The provider's usage quota. Hermetic: a driver whose quota is only
    /// known to a remote endpoint reports it unavailable.
    fn quota(&self) -> Option<QuotaReport> {
        None
    }

    /// The fields of the driver's configuration.
    fn config_schema(&self) -> Option<ConfigSchema> {
        None
    }

    /// The configuration home the CLI would run with under `profile`, and
    /// the variable that points it there. Pure: the home is named, not
    /// created.
    fn profile_report(&self, profile: &Profile) -> Option<ProfileReport> {
        let _ = profile;
        None
    }

    /// The skills a run with `selection` would offer, and how they reach
    /// the CLI. A driver whose descriptor declares
    /// [`skills`](crate::Descriptor::skills) answers with a mode
    /// (CAP-02); the answer echoes the selection (CAP-09) and reads none of
    /// the skills' files.
    fn skills(&self, selection: &[SkillRef]) -> Option<SkillsReport> {
        let _ = selection;
        None
    }
}

/// Per-run context handed to [`Driver::run`].
#[derive(Debug, Clone)]
pub struct RunContext {
    /// The SDK run id.
    pub run_id: String,
    /// Cancelled when the host cancels, the deadline passes or the stream is dropped.
    pub cancel: CancellationToken,
    /// When the run's time budget ends, if it has one.
    pub deadline: Option<Instant>,
}

impl RunContext {
    /// A context with a fresh cancellation token and no deadline.
    pub fn new(run_id: impl Into<String>) -> Self {
        RunContext {
            run_id: run_id.into(),
            cancel: CancellationToken::new(),
            deadline: None,
        }
    }

    /// True once the run is cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// A driver's construction config is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid config for driver {driver}: {reason}")]
pub struct ConfigError {
    /// The driver type.
    pub driver: String,
    /// What is wrong (never a secret value).
    pub reason: String,
}

/// An infrastructure failure of [`Driver::run`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// The run was cancelled and the driver stopped.
    #[error("run cancelled")]
    Cancelled,
    /// The provider program could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program that failed to start.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// I/O with the provider failed.
    #[error("provider i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The provider broke its own protocol beyond recovery.
    #[error("provider protocol: {0}")]
    Protocol(String),
    /// The sink refused an event.
    #[error(transparent)]
    Sink(#[from] SinkError),
    /// A human decision could not be obtained.
    #[error(transparent)]
    Decision(#[from] DecisionError),
    /// Anything else.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}
