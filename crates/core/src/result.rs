//! The authoritative outcome of a run: [`RunResult`], [`RunError`], [`Error`].

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_driver::{
    Checkpoint, ConfigError, DriverError, FailureCode, RawStreams, RunFailure,
    RuntimeServiceReport, StructuredOutput, Transcript, Usage, Violation,
};
use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};
use serde_json::Value;

/// Why a run did not succeed. Unknown driver failure codes are kept verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureReason {
    /// The active-execution budget ran out.
    ActiveExecutionTimeout,
    /// The agent itself failed (non-zero exit, provider error …).
    AgentError,
    /// A human denied an approval.
    ApprovalDenied,
    /// An approval was not answered in time.
    ApprovalTimeout,
    /// The host cancelled the run.
    Cancelled,
    /// The run's total time budget ran out.
    DeadlineExceeded,
    /// The SDK, the process or the driver broke (including driver contract
    /// violations and driver panics).
    Infrastructure,
    /// A policy forbade something.
    PolicyViolation,
    /// A provider-specific code, verbatim.
    Other(String),
}

impl FailureReason {
    /// The wire name (`"agent_error"` …).
    pub fn as_str(&self) -> &str {
        match self {
            FailureReason::ActiveExecutionTimeout => "active_execution_timeout",
            FailureReason::AgentError => "agent_error",
            FailureReason::ApprovalDenied => "approval_denied",
            FailureReason::ApprovalTimeout => "approval_timeout",
            FailureReason::Cancelled => "cancelled",
            FailureReason::DeadlineExceeded => "deadline_exceeded",
            FailureReason::Infrastructure => "infrastructure_error",
            FailureReason::PolicyViolation => "policy_violation",
            FailureReason::Other(s) => s,
        }
    }

    /// The reason a driver's failure code maps to.
    pub fn from_code(code: &FailureCode) -> Self {
        match code {
            FailureCode::DecisionRejected => FailureReason::ApprovalDenied,
            FailureCode::DecisionTimeout => FailureReason::ApprovalTimeout,
            FailureCode::AgentError => FailureReason::AgentError,
            FailureCode::Cancelled => FailureReason::Cancelled,
            FailureCode::PolicyError => FailureReason::PolicyViolation,
            FailureCode::Other(s) => match FailureCode::parse(s) {
                FailureCode::Other(s) => FailureReason::Other(s),
                known => FailureReason::from_code(&known),
            },
            _ => FailureReason::Other(code.as_str().to_owned()),
        }
    }
}

impl fmt::Display for FailureReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FailureReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl FailureReason {
    /// The reason a wire name names (the inverse of [`as_str`](Self::as_str));
    /// an unknown name is kept as [`Other`](Self::Other).
    pub fn parse(name: &str) -> Self {
        match name {
            "active_execution_timeout" => FailureReason::ActiveExecutionTimeout,
            "agent_error" => FailureReason::AgentError,
            "approval_denied" => FailureReason::ApprovalDenied,
            "approval_timeout" => FailureReason::ApprovalTimeout,
            "cancelled" => FailureReason::Cancelled,
            "deadline_exceeded" => FailureReason::DeadlineExceeded,
            "infrastructure_error" => FailureReason::Infrastructure,
            "policy_violation" => FailureReason::PolicyViolation,
            other => FailureReason::Other(other.to_owned()),
        }
    }
}

impl<'de> serde::Deserialize<'de> for FailureReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(FailureReason::parse(&name))
    }
}

/// The final output and audit record of a successful run (the spec's `Result`).
///
/// `text`, `summary`, [`raw`](Self::raw), [`transcript`](Self::transcript)
/// and [`services`](Self::services) are independent layers. Never rebuild one
/// from another, and never from live deltas. Cloning is cheap.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The run id.
    pub run_id: String,
    /// The model the provider reported.
    pub model: String,
    /// The provider.
    pub provider: String,
    /// The final assistant-facing text.
    pub text: String,
    /// A short formal summary, or empty.
    pub summary: String,
    /// Usage: `None` = not observed.
    pub usage: Option<Usage>,
    /// Provider metadata.
    pub metadata: BTreeMap<String, String>,
    pub(crate) raw: RawStreams,
    pub(crate) transcript: Arc<Transcript>,
    pub(crate) services: Arc<[RuntimeServiceReport]>,
    pub(crate) workspace: Option<Arc<crate::resources::WorkspaceReport>>,
    pub(crate) structured: Option<StructuredOutput>,
    pub(crate) checkpoint: Option<Checkpoint>,
    pub(crate) exit_code: Option<i32>,
    pub(crate) decisions: Arc<[crate::policy::record::DecisionRecord]>,
}

impl RunResult {
    /// The complete raw stdout/stderr and the official terminal payload.
    pub fn raw(&self) -> &RawStreams {
        &self.raw
    }

    /// The normalized transcript, complete: in memory, or partly in its
    /// spill file past the run's
    /// [`transcript_budget`](crate::RunOptions::transcript_budget).
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// Runtime services the driver observed.
    pub fn services(&self) -> &[RuntimeServiceReport] {
        &self.services
    }

    /// The workspace the run worked in and what it changed there, when the
    /// agent has [`RunResources`](crate::RunResources) that resolved one.
    pub fn workspace(&self) -> Option<&crate::resources::WorkspaceReport> {
        self.workspace.as_deref()
    }

    /// The structured output, when a schema was requested.
    pub fn structured_output(&self) -> Option<&StructuredOutput> {
        self.structured.as_ref()
    }

    /// The resume checkpoint, only when it passed core's validation (spec §9).
    pub fn checkpoint(&self) -> Option<&Checkpoint> {
        self.checkpoint.as_ref()
    }

    /// The provider's exit code, when a process ran.
    pub fn exit_code(&self) -> Option<i32> {
        self.exit_code
    }

    /// Every human decision of the run, in the order they were settled:
    /// who decided (a human, the policy, a timeout), what the driver was
    /// answered, the attempts and the fallback applied.
    pub fn decisions(&self) -> &[crate::policy::record::DecisionRecord] {
        &self.decisions
    }

    /// Decode the answer: the validated structured output when there is one,
    /// else the trimmed final text as one JSON value.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, DecodeError> {
        if let Some(so) = &self.structured {
            if !so.valid {
                return Err(DecodeError::Invalid(so.validation_errors.clone()));
            }
            if let Some(v) = &so.value {
                return serde_json::from_value(v.clone())
                    .map_err(|e| DecodeError::Json(Arc::new(e)));
            }
            return serde_json::from_str(&so.raw_json).map_err(|e| DecodeError::Json(Arc::new(e)));
        }
        serde_json::from_str(self.text.trim()).map_err(|e| DecodeError::Json(Arc::new(e)))
    }
}

/// Why [`RunResult::decode`] failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The output did not validate against the schema.
    #[error("structured output is invalid: {}", .0.join("; "))]
    Invalid(Vec<String>),
    /// The output is not the requested JSON.
    #[error("output is not the expected JSON: {0}")]
    Json(Arc<serde_json::Error>),
}

/// What exactly broke, below a [`RunError`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RunCause {
    /// The driver returned an infrastructure error.
    #[error(transparent)]
    Driver(Arc<DriverError>),
    /// The driver panicked; the panic was caught.
    #[error("driver panicked: {0}")]
    DriverPanicked(String),
    /// The driver broke the contract (the first violation; all of them are in
    /// `RunError::details` and were reported as notices).
    #[error("driver contract violation: {0}")]
    DriverViolation(Violation),
    /// The driver did not return within the grace period after cancellation
    /// and was dropped.
    #[error("driver did not stop within {0:?} after cancellation")]
    DriverUnresponsive(Duration),
    /// The driver reported a structured business failure.
    #[error("{}: {}", .0.code, .0.message)]
    Failure(Box<RunFailure>),
    /// The provider process ended badly without a structured failure.
    #[error(
        "provider process {}{}",
        agent_adaptor_driver::describe_exit(*.code, .signal.as_deref()),
        if *.timed_out { " (timed out)" } else { "" }
    )]
    Exit {
        /// The exit code.
        code: Option<i32>,
        /// The signal.
        signal: Option<String>,
        /// Whether it timed out.
        timed_out: bool,
    },
    /// The approval handler failed.
    #[error("approval handler failed: {0}")]
    ApprovalHandler(String),
    /// The thread could not be persisted (lease lost, no checkpoint …).
    #[error(transparent)]
    Thread(crate::thread::error::ThreadError),
    /// Releasing the run's resources (workspace, services) failed.
    #[error("run resources: {0}")]
    Resources(crate::resources::ResourceError),
    /// A human rejected a decision and the run policy said abort
    /// (`on_reject`).
    #[error("{} denied: {}", .0.kind.as_str(), .0.title)]
    ApprovalDenied(Box<crate::policy::record::DecisionRecord>),
    /// A decision was not answered in time and the run policy said abort
    /// (`on_timeout`, or retries exhausted).
    #[error("{} not answered in time: {}", .0.kind.as_str(), .0.title)]
    ApprovalTimeout(Box<crate::policy::record::DecisionRecord>),
    /// The active-execution budget ran out.
    #[error("active execution budget of {limit:?} exhausted")]
    ActiveExecutionTimeout {
        /// The budget.
        limit: Duration,
    },
    /// The structured output did not validate against the schema; every
    /// validation error.
    #[error("structured output is invalid: {}", .0.join("; "))]
    InvalidStructuredOutput(Vec<String>),
}

/// A run that was admitted and did not succeed.
///
/// Every failure after the driver was entered is a `RunError`; `result`
/// holds whatever partial result the driver produced (for business failures
/// and contract violations), so nothing it reported is lost.
#[derive(Debug, Clone, thiserror::Error)]
#[error("run failed ({reason}): {message}")]
pub struct RunError {
    /// Why.
    pub reason: FailureReason,
    /// A short human-readable message.
    pub message: String,
    /// Structured details (e.g. every contract violation).
    pub details: Option<Value>,
    /// The partial or complete result, when the driver produced one.
    pub result: Option<Box<RunResult>>,
    /// The underlying cause.
    #[source]
    pub cause: Option<RunCause>,
}

/// Every error `result()` can return.
///
/// Pre-start errors (the run was refused before anything started: no events
/// at all, the stream is closed at once) have their own variants; everything
/// after admission is [`Error::Run`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The run was admitted and failed.
    #[error(transparent)]
    Run(Box<RunError>),
    /// The driver's config is invalid.
    #[error(transparent)]
    InvalidDriverConfig(ConfigError),
    /// `stream` was called outside a Tokio runtime.
    #[error("agent-adaptor needs a Tokio runtime: call stream/run from within one")]
    NoRuntime,
    /// A thread run needs a thread store (`AgentBuilder::thread_store`).
    #[error("thread runs need a thread store: see AgentBuilder::thread_store")]
    ThreadStoreRequired,
    /// A thread could not be used: not found, busy, incompatible …
    #[error(transparent)]
    Thread(crate::thread::error::ThreadError),
    /// The Tokio runtime shut down before the run could finish.
    #[error("the Tokio runtime shut down before the run finished")]
    RuntimeShutdown,
    /// An option value is out of range.
    #[error("invalid option {option}: {reason}")]
    InvalidOption {
        /// The option.
        option: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A run-policy value is out of its domain (refused before anything
    /// started).
    #[error("invalid policy for driver {driver}: {field} = {value}")]
    InvalidPolicy {
        /// The driver type.
        driver: String,
        /// The policy field (`approvals.timeout` …).
        field: &'static str,
        /// The offending value.
        value: String,
    },
    /// An explicit sandbox, web-search or browser value the driver does not
    /// declare (refused before anything started).
    #[error("driver {driver} does not support {dimension} = {value}")]
    PolicyCapabilityUnsupported {
        /// The driver type.
        driver: String,
        /// `sandbox`, `web_search` or `browser`.
        dimension: &'static str,
        /// The requested value (`read_only` …).
        value: &'static str,
    },
    /// An explicit approval mode the driver does not declare for that kind
    /// (refused before anything started).
    #[error("driver {driver} does not support {mode} for {} decisions", .kind.as_str())]
    HumanDecisionModeUnsupported {
        /// The driver type.
        driver: String,
        /// The decision kind.
        kind: agent_adaptor_driver::DecisionKind,
        /// The requested mode (`ask`, `auto_approve`, `auto_deny`).
        mode: &'static str,
    },
    /// The run asks for something the driver's descriptor does not declare
    /// it can carry (refused before anything started; never dropped).
    #[error("driver {driver} cannot carry {capability}")]
    CapabilityUnsupported {
        /// The driver type.
        driver: String,
        /// What was asked for (`instructions`, `a workspace directory` …).
        capability: &'static str,
    },
    /// The run's resources (workspace, services) could not be made ready;
    /// the driver was never called. The cause is the manager's typed error.
    #[error("run resources: {0}")]
    Resources(crate::resources::ResourceError),
    /// An MCP server of the run is unusable (refused before anything
    /// started).
    #[error(transparent)]
    InvalidMcpServer(agent_adaptor_driver::McpConfigError),
    /// A host tool's definition is unusable (refused before anything
    /// started).
    #[error(transparent)]
    InvalidTool(crate::tools::ToolDefinitionError),
    /// The output schema is unusable (refused before anything started).
    #[error(transparent)]
    InvalidOutputSchema(crate::structured_error::InvalidOutputSchemaError),
    /// The driver cannot produce structured output for this run (refused
    /// before anything started).
    #[error(transparent)]
    StructuredOutputUnsupported(crate::structured_error::StructuredOutputUnsupportedError),
    /// [`run_as`](crate::run_as): the run succeeded but its output could not
    /// be decoded into the requested type.
    #[error("the run succeeded but its output could not be decoded: {error}")]
    Decode {
        /// Why decoding failed.
        error: DecodeError,
        /// The successful run's result.
        result: Box<RunResult>,
    },
}

impl Error {
    /// The run error, when the run was admitted and failed.
    pub fn as_run_error(&self) -> Option<&RunError> {
        match self {
            Error::Run(e) => Some(e),
            _ => None,
        }
    }
}

impl From<RunError> for Error {
    fn from(e: RunError) -> Self {
        Error::Run(Box::new(e))
    }
}
