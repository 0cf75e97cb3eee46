//! # agent-adaptor-driver — the driver SPI
//!
//! Everything a provider integration implements, and nothing else: this crate
//! depends on no other crate of agent-adaptor, so a third-party driver needs
//! only this one (plus `agent-adaptor-process` if it runs a subprocess). It is
//! to agent-adaptor what `axum-core` is to axum.
//!
//! A [`Driver`] receives a resolved [`Request`] and a borrowed [`EventSink`].
//! From **one** parse of the provider's official protocol it
//!
//! * emits normalized live payloads ([`StreamPayload`]) with
//!   [`EventSink::emit_stream`], obeying the lifecycle of spec §5
//!   ([`LifecycleChecker`] is that rule book, shared with core and the
//!   conformance suite);
//! * emits raw chunks, transcript items and operational events ([`RunEvent`])
//!   with [`EventSink::emit`];
//! * returns a [`Response`] whose every layer (output, summary, raw streams,
//!   transcript, usage, checkpoint …) is complete.
//!
//! Core owns ordering (sequence numbers, times), the event broker, approvals
//! policy, checkpoint validation and the public event stream. A driver never
//! touches those, and the types here make most misuse unrepresentable: there
//! is no sequence field to pre-assign, a run frame cannot carry a message id,
//! and the borrowed sink cannot outlive `run`.
//!
//! ```
//! use agent_adaptor_driver::*;
//!
//! struct Echo;
//!
//! #[async_trait::async_trait]
//! impl Driver for Echo {
//!     fn descriptor(&self) -> Descriptor {
//!         Descriptor::new("echo", "Echo")
//!     }
//!     fn validate_config(&self) -> Result<(), ConfigError> { Ok(()) }
//!     fn stream_capability(&self) -> Option<StreamCapability> {
//!         Some(StreamCapability { native: true, ..Default::default() })
//!     }
//!     async fn run(&self, _ctx: RunContext, req: Request, sink: &dyn EventSink)
//!         -> Result<Response, DriverError>
//!     {
//!         sink.emit_stream(StreamPayload::run_started()).await?;
//!         sink.emit_stream(StreamPayload::text_start("m1")).await?;
//!         sink.emit_stream(StreamPayload::text_content("m1", req.prompt.clone())).await?;
//!         sink.emit_stream(StreamPayload::text_end("m1")).await?;
//!         let mut transcript = req.new_transcript();
//!         let item = transcript.share(TranscriptItem::assistant(req.prompt.clone()));
//!         sink.emit(RunEvent::Item(item)).await?;
//!         sink.emit_stream(StreamPayload::run_finished(None)).await?;
//!         Ok(Response { output: req.prompt, transcript, ..Default::default() })
//!     }
//! }
//! ```
#![forbid(unsafe_code)]

pub mod decision;
pub mod descriptor;
pub mod driver;
pub mod ending;
pub mod event;
pub mod host_tool;
pub mod id;
pub mod lifecycle;
pub mod mcp;
pub mod observation;
pub mod policy;
pub mod probe;
pub mod profile;
pub mod redact;
pub mod request;
pub mod response;
pub mod session;
pub mod sink;
pub mod skill;
pub mod stream;
pub mod transcript;
pub mod usage;

pub use async_trait::async_trait;
pub use decision::{
    DecisionChoice, DecisionError, DecisionKind, DecisionRequest, DecisionResponse, DecisionResult,
    DecisionSink, HitlRequested, HitlResolved,
};
pub use descriptor::{
    Descriptor, HumanDecisionSupport, McpSupport, ModelInfo, ProcessCapabilities, ProfileSupport,
    QuestionSupport, RunPolicyCapabilities, SessionCapabilities, StreamCapability,
    StructuredOutputCapability, WorkspaceSupport,
};
pub use descriptor::{FeatureSupport, SandboxSupport};
pub use driver::{ConfigError, Driver, DriverError, RunContext};
pub use ending::{STDERR_TAIL_BYTES, STDERR_TAIL_LINES, describe_exit, stderr_tail};
pub use event::{OperationalEvent, OutputStream, RunEvent};
pub use host_tool::{
    HOST_TOOL_SERVER, HostToolCall, HostToolChannel, HostToolResult, HostToolSpec, HostToolStatus,
    HostToolbox, HostTools,
};
pub use id::LifecycleId;
pub use lifecycle::{LifecycleChecker, SeenIds, Violation};
pub use mcp::{McpConfigError, McpServer, McpToolPolicy, McpTransport};
pub use observation::{
    CapabilityInvocation, CapabilityKind, CapabilityOperation, CapabilityPhase, ImagePayload,
    ObservationSource, ObservationSupport, SubagentPhase, SubagentReport, TodoItem, TodoRevisions,
    TodoSnapshot, TodoStatus,
};
pub use policy::{
    ApprovalMode, ApprovalTimeout, DEFAULT_HUMAN_DECISION_MAX_RETRIES,
    DEFAULT_HUMAN_DECISION_TIMEOUT, FallbackAction, FeatureLevel, HumanDecisionPolicy,
    QuestionMode, RunPolicy, SandboxLevel,
};
pub use probe::{
    CheckStatus, ConfigField, ConfigSchema, DetectedModel, EnvironmentCheck, EnvironmentReport,
    FieldKind, ModelSource, ProfileReport, ProfileSource, QuotaReport, QuotaWindow, SkillEntry,
    SkillMode, SkillsReport,
};
pub use profile::Profile;
pub use redact::{redact_text, redact_url};
pub use request::{AgentIdentity, OnInvalid, OutputSchema, Request};
pub use response::{
    FailureCode, HumanDecisionFailure, MISSING_TERMINAL, RawBytes, RawSource, RawStreams, Response,
    RunFailure, RuntimeServiceReport, StructuredOutput, StructuredOutputSource, TerminalPayload,
};
pub use session::{
    Checkpoint, FingerprintError, SessionCodec, SessionContext, SessionMode, SessionParams,
    SessionState, StandardSessionCodec, canonical_json, canonical_session_config_fingerprint,
};
pub use sink::{Batch, Emit, EventSink, SinkError};
pub use skill::{SkillHandle, SkillRef};
pub use stream::{
    Delegation, ProviderCoords, ProviderDrop, Role, StreamKind, StreamPayload, ToolScope,
};
pub use tokio_util::sync::CancellationToken;
pub use transcript::{
    DEFAULT_TRANSCRIPT_BUDGET, SharedItem, Transcript, TranscriptError, TranscriptFingerprint,
    TranscriptItem, TranscriptKind, TranscriptViolation,
};
pub use usage::Usage;
