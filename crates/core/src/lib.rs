//! # agent-adaptor-core
//!
//! The one execution pipeline: [`Agent`] (and later `Thread`) implement
//! [`Runner`]; a run is a [`RunStream`] of typed [`Event`]s followed by one
//! authoritative outcome, [`RunResult`] or [`Error`].
//!
//! Core owns ordering, backpressure, the contract checks on what drivers
//! emit, approvals, checkpoint validation and the outcome. It never names a
//! concrete provider, bridge or store: it sees drivers only through the
//! [`agent_adaptor_driver`] SPI.
//!
//! ```
//! use agent_adaptor_core::{Agent, Event, Phase, Runner, scripted::ScriptedDriver};
//! use futures::StreamExt;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let agent = Agent::new(ScriptedDriver::text_reply("a haiku about rust"));
//! let mut stream = agent.stream("Write a haiku");
//! let mut text = String::new();
//! while let Some(ev) = stream.next().await {
//!     if let Event::TextDelta(d) = &ev {
//!         if d.phase == Phase::Content {
//!             text.push_str(&d.text);
//!         }
//!     }
//! }
//! let result = stream.result().await.unwrap();
//! assert_eq!(result.text, text);
//! # }
//! ```
//!
//! ## Guarantees
//!
//! * `RunStarted` is the first event and `RunFinished` the last, exactly once
//!   each; `EventMeta::sequence` is strictly increasing from 1.
//! * Reliable events (lifecycle boundaries, tool results, transcript items,
//!   approvals, notices, `Dropped`) are never lost in a run that was not
//!   cancelled. Only content deltas, raw chunks and subagent deltas may be
//!   dropped, and every drop is counted in one aggregated [`Dropped`].
//! * A driver that breaks the contract, panics, fails, or never sends a
//!   terminal frame still gives the host a `RunFinished` and a typed error.
//! * Dropping a `RunStream` before it ends cancels the run.
#![forbid(unsafe_code)]

pub mod agent;
pub mod approval;
mod broker;
mod checkpoint;
mod control;
mod equip;
pub mod event;
mod id;
pub mod options;
pub mod policy;
pub mod resources;
pub mod result;
mod run;
pub mod scripted;
mod sink;
pub mod stream;
pub mod structured;
mod structured_error;
pub mod thread;
pub mod tools;
mod translate;
mod wall_clock;

pub use agent::{Agent, AgentBuilder, DEFAULT_CANCEL_GRACE, Runner};
pub use approval::{
    ApprovalError, ApprovalHandler, ApprovalKind, ApprovalRequest, BoxError, approve_all, deny_all,
};
pub use broker::DEFAULT_EVENT_BUFFER;
pub use equip::InstructionsBundle;
pub use event::{
    CapabilityInvoked, Dropped, Event, EventMeta, EventSource, ImageContent, Notice, Phase,
    ProcessInfo, ProcessKind, RunFinished, RunStarted, SubagentKind, SubagentUpdate, TextDelta,
    Thinking, TodoUpdated, ToolCall, ToolResult, notice_kind,
};
pub use options::{DEFAULT_APPROVAL_TIMEOUT, RunOptions};
pub use policy::{ApprovalPolicy, DecidedBy, DecisionRecord, Policy};
pub use resources::{
    ChangeKind, ChangeSummary, FileChange, Prepared, ResourceError, ResourceRun, ResourceThread,
    RunResources, WorkspaceNeed, WorkspaceReport,
};
pub use result::{DecodeError, Error, FailureReason, RunCause, RunError, RunResult};
pub use stream::{RunHandle, RunStream};
pub use structured::{InvalidOutputSchemaError, RunAs, StructuredOutputUnsupportedError, run_as};
pub use thread::{MemoryStore, Thread, ThreadError, ThreadStore};
pub use tools::{DEFAULT_TOOL_DEADLINE, Tool, ToolContext, ToolDefinitionError, ToolError};

pub use agent_adaptor_driver as driver;
/// The id type of the message, reasoning and tool-call events.
pub use agent_adaptor_driver::LifecycleId;
/// What observations carry: todo lists, capability invocations, images.
pub use agent_adaptor_driver::{
    CapabilityInvocation, CapabilityKind, CapabilityOperation, CapabilityPhase, ImagePayload,
    ObservationSource, TodoItem, TodoSnapshot, TodoStatus,
};
/// What a run gives its agent: MCP servers, skills, the profile, and where
/// a tool lives.
pub use agent_adaptor_driver::{
    Delegation, McpConfigError, McpServer, McpToolPolicy, McpTransport, Profile, SkillHandle,
    SkillRef, ToolScope,
};
