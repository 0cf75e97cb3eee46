//! Normalized live payloads a driver sends through [`EventSink::emit_stream`](crate::EventSink::emit_stream).
//!
//! This is spec §5 of the driver streaming contract. The Go contract carries
//! `Sequence`, `Seq` and `Timestamp` fields that a driver "must leave zero"; in
//! Rust those fields do not exist, so a driver cannot pre-assign ordering at
//! all (core stamps [`EventMeta`-level](crate) ordering on receipt):
//!
//! ```compile_fail
//! use agent_adaptor_driver::StreamPayload;
//! let mut p = StreamPayload::text_start("m1");
//! p.sequence = 7; // no such field: ordering is core's alone
//! ```
//!
//! Likewise a run frame cannot carry a message or tool-call id (EVT-13), and a
//! text frame cannot lack one, because each [`StreamKind`] variant has exactly
//! the fields its row of the spec table names.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::decision::{HitlRequested, HitlResolved};
use crate::id::LifecycleId;
use crate::observation::{CapabilityInvocation, ImagePayload, SubagentReport, TodoSnapshot};
use crate::response::RunFailure;
use crate::usage::Usage;

/// Who authored a text lifecycle (spec §5.1).
///
/// Drivers always leave this at [`Role::Assistant`]; [`Role::User`] is only
/// synthesized by a bridge or host above the driver. Core rejects a driver
/// payload that claims `User` (EVT-09).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The assistant (the zero value; the only role a driver may use).
    #[default]
    Assistant,
    /// A human turn, synthesized above the driver.
    User,
}

/// Provider-side coordinates of a payload. Never authoritative: core places
/// them in the event's `source`, and its own `sequence` orders the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderCoords {
    /// The provider's own run id, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The provider's thread / session / conversation id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The provider's turn id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

impl ProviderCoords {
    /// True when no coordinate is set.
    pub fn is_empty(&self) -> bool {
        self.run_id.is_none() && self.thread_id.is_none() && self.turn_id.is_none()
    }
}

/// Where a tool lives: built into the agent, on one of the run's MCP
/// servers, or in the host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolScope {
    /// The agent's own tool (shell, edit, search ...).
    #[default]
    Builtin,
    /// A tool of an MCP server.
    Mcp {
        /// The server's name (as the run named it).
        server: String,
        /// The tool's name on that server.
        tool: String,
    },
    /// A tool the host defined.
    Host,
}

impl ToolScope {
    /// True for [`Builtin`](Self::Builtin).
    pub fn is_builtin(&self) -> bool {
        matches!(self, ToolScope::Builtin)
    }
}

/// Where a tool call sits in a tree of delegations (subagents).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delegation {
    /// The scope (agent/subagent) the call belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_id: Option<String>,
    /// The parent scope, for a nested agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_scope_id: Option<String>,
    /// The tool call in the parent scope that spawned this scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
}

/// A provider-reported gap in its own stream (spec §5, `StreamDropped`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderDrop {
    /// How many provider events were lost.
    pub dropped_count: u64,
    /// Lost events by kind name, when the provider says.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_kind: BTreeMap<String, u64>,
    /// Provider sequence of the first lost event, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_sequence: Option<u64>,
    /// Provider sequence of the last lost event, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sequence: Option<u64>,
    /// Why the provider dropped them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// The canonical stream kinds of spec §5, each with exactly its own fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // built once per payload and moved into the sink
pub enum StreamKind {
    /// `run.started`: once per run and first.
    #[serde(rename = "run.started")]
    RunStarted,
    /// `run.finished`: the normal terminal frame.
    #[serde(rename = "run.finished")]
    RunFinished {
        /// Usage the provider reported for the run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// `run.error`: the failure terminal frame; the message must not be empty.
    #[serde(rename = "run.error")]
    RunError {
        /// The failure.
        error: RunFailure,
    },
    /// `step.started`: opens a named provider step.
    #[serde(rename = "step.started")]
    StepStarted {
        /// The step's name (required).
        name: String,
    },
    /// `step.finished`: closes a named provider step.
    #[serde(rename = "step.finished")]
    StepFinished {
        /// The step's name (required).
        name: String,
    },
    /// `text.start`: opens an assistant message.
    #[serde(rename = "text.start")]
    TextStart {
        /// The message id.
        message_id: LifecycleId,
    },
    /// `text.content`: a non-empty delta inside an open message.
    #[serde(rename = "text.content")]
    TextContent {
        /// The message id.
        message_id: LifecycleId,
        /// The text (non-empty).
        delta: String,
    },
    /// `text.end`: closes the message.
    #[serde(rename = "text.end")]
    TextEnd {
        /// The message id.
        message_id: LifecycleId,
    },
    /// `reasoning.start`: opens a reasoning (thinking) lifecycle.
    #[serde(rename = "reasoning.start")]
    ReasoningStart {
        /// The reasoning message id.
        message_id: LifecycleId,
    },
    /// `reasoning.content`: a non-empty reasoning delta.
    #[serde(rename = "reasoning.content")]
    ReasoningContent {
        /// The reasoning message id.
        message_id: LifecycleId,
        /// The text (non-empty).
        delta: String,
    },
    /// `reasoning.end`: closes the reasoning lifecycle.
    #[serde(rename = "reasoning.end")]
    ReasoningEnd {
        /// The reasoning message id.
        message_id: LifecycleId,
    },
    /// `tool_call.start`: opens a tool call.
    #[serde(rename = "tool_call.start")]
    ToolCallStart {
        /// The tool call id.
        tool_call_id: LifecycleId,
        /// The tool's name.
        name: String,
        /// The complete arguments, when the protocol gives them at once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        args: Option<Value>,
        /// Where the tool lives.
        #[serde(default, skip_serializing_if = "ToolScope::is_builtin")]
        scope: ToolScope,
        /// Delegation coordinates.
        #[serde(default)]
        delegation: Box<Delegation>,
    },
    /// `tool_call.args`: an argument delta; only with `ToolCallArgs = true`.
    #[serde(rename = "tool_call.args")]
    ToolCallArgs {
        /// The tool call id.
        tool_call_id: LifecycleId,
        /// The argument text (non-empty).
        delta: String,
    },
    /// `tool_call.end`: closes the tool call.
    #[serde(rename = "tool_call.end")]
    ToolCallEnd {
        /// The tool call id.
        tool_call_id: LifecycleId,
        /// The result, when the protocol attaches it to the close.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
    },
    /// `tool_call.result`: a standalone result for a known tool call.
    #[serde(rename = "tool_call.result")]
    ToolCallResult {
        /// The tool call id (must be known).
        tool_call_id: LifecycleId,
        /// The result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        /// Delegation coordinates.
        #[serde(default)]
        delegation: Box<Delegation>,
    },
    /// `hitl.requested`: a read-only audit broadcast (no responder).
    #[serde(rename = "hitl.requested")]
    HitlRequested(Box<HitlRequested>),
    /// `hitl.resolved`: a read-only audit broadcast.
    #[serde(rename = "hitl.resolved")]
    HitlResolved(Box<HitlResolved>),
    /// `stream.dropped`: loss reported by the provider itself.
    #[serde(rename = "stream.dropped")]
    Dropped(ProviderDrop),
    /// `todo.updated`: the whole todo list of a scope (OBS-05/06).
    #[serde(rename = "todo.updated")]
    TodoUpdated(Box<TodoSnapshot>),
    /// `capability.invocation`: one phase of an MCP tool, skill or
    /// subagent invocation (OBS-03/04).
    #[serde(rename = "capability.invocation")]
    Capability(Box<CapabilityInvocation>),
    /// `subagent.update`: a delegation started, progressed or finished
    /// (OBS-07).
    #[serde(rename = "subagent.update")]
    Subagent(Box<SubagentReport>),
    /// `image`: an image the agent shows (OBS-08).
    #[serde(rename = "image")]
    Image(Box<ImagePayload>),
    /// An unknown formal provider event. Core turns it into a `Notice`; events
    /// with audit value must never be swallowed.
    #[serde(rename = "custom")]
    Custom {
        /// The provider's own name for the event (must not be empty).
        name: String,
        /// Free text, when the event has some.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        text: String,
    },
}

impl StreamKind {
    /// The canonical kind name (`"text.content"` …); custom kinds use their own name.
    pub fn name(&self) -> &str {
        match self {
            StreamKind::RunStarted => "run.started",
            StreamKind::RunFinished { .. } => "run.finished",
            StreamKind::RunError { .. } => "run.error",
            StreamKind::StepStarted { .. } => "step.started",
            StreamKind::StepFinished { .. } => "step.finished",
            StreamKind::TextStart { .. } => "text.start",
            StreamKind::TextContent { .. } => "text.content",
            StreamKind::TextEnd { .. } => "text.end",
            StreamKind::ReasoningStart { .. } => "reasoning.start",
            StreamKind::ReasoningContent { .. } => "reasoning.content",
            StreamKind::ReasoningEnd { .. } => "reasoning.end",
            StreamKind::ToolCallStart { .. } => "tool_call.start",
            StreamKind::ToolCallArgs { .. } => "tool_call.args",
            StreamKind::ToolCallEnd { .. } => "tool_call.end",
            StreamKind::ToolCallResult { .. } => "tool_call.result",
            StreamKind::HitlRequested(_) => "hitl.requested",
            StreamKind::HitlResolved(_) => "hitl.resolved",
            StreamKind::Dropped(_) => "stream.dropped",
            StreamKind::TodoUpdated(_) => "todo.updated",
            StreamKind::Capability(_) => "capability.invocation",
            StreamKind::Subagent(_) => "subagent.update",
            StreamKind::Image(_) => "image",
            StreamKind::Custom { name, .. } => name,
        }
    }

    /// True for the observation kinds (todos, capabilities, subagents,
    /// images).
    pub fn is_observation(&self) -> bool {
        matches!(
            self,
            StreamKind::TodoUpdated(_)
                | StreamKind::Capability(_)
                | StreamKind::Subagent(_)
                | StreamKind::Image(_)
        )
    }

    /// True for `run.finished` and `run.error`.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            StreamKind::RunFinished { .. } | StreamKind::RunError { .. }
        )
    }
}

#[doc = include_str!("../contract/stream.md")]
///
/// Build one with the constructors ([`StreamPayload::text_content`] …) and
/// refine it with [`with_source`](Self::with_source) / [`with_raw`](Self::with_raw).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamPayload {
    /// What happened, with the fields of that kind.
    #[serde(flatten)]
    pub kind: StreamKind,
    /// Always [`Role::Assistant`] from a driver (EVT-09).
    #[serde(default)]
    pub role: Role,
    /// Provider coordinates, kept as the event's source.
    #[serde(default, skip_serializing_if = "ProviderCoords::is_empty")]
    pub source: ProviderCoords,
    /// Provider fields that cannot be normalized, kept for audit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Value>,
}

impl From<StreamKind> for StreamPayload {
    fn from(kind: StreamKind) -> Self {
        StreamPayload {
            kind,
            role: Role::Assistant,
            source: ProviderCoords::default(),
            raw: None,
        }
    }
}

impl StreamPayload {
    /// `todo.updated` (number snapshots with
    /// [`TodoRevisions`](crate::TodoRevisions)).
    pub fn todo_updated(snapshot: TodoSnapshot) -> Self {
        StreamKind::TodoUpdated(Box::new(snapshot)).into()
    }
    /// `capability.invocation`.
    pub fn capability(invocation: CapabilityInvocation) -> Self {
        StreamKind::Capability(Box::new(invocation)).into()
    }
    /// `subagent.update`.
    pub fn subagent(report: SubagentReport) -> Self {
        StreamKind::Subagent(Box::new(report)).into()
    }
    /// `image`.
    pub fn image(image: ImagePayload) -> Self {
        StreamKind::Image(Box::new(image)).into()
    }
    /// `run.started`.
    pub fn run_started() -> Self {
        StreamKind::RunStarted.into()
    }
    /// `run.finished` with optional usage.
    pub fn run_finished(usage: Option<Usage>) -> Self {
        StreamKind::RunFinished { usage }.into()
    }
    /// `run.error`.
    pub fn run_error(error: RunFailure) -> Self {
        StreamKind::RunError { error }.into()
    }
    /// `step.started`.
    pub fn step_started(name: impl Into<String>) -> Self {
        StreamKind::StepStarted { name: name.into() }.into()
    }
    /// `step.finished`.
    pub fn step_finished(name: impl Into<String>) -> Self {
        StreamKind::StepFinished { name: name.into() }.into()
    }
    /// `text.start`.
    pub fn text_start(message_id: impl Into<LifecycleId>) -> Self {
        StreamKind::TextStart {
            message_id: message_id.into(),
        }
        .into()
    }
    /// `text.content`.
    pub fn text_content(message_id: impl Into<LifecycleId>, delta: impl Into<String>) -> Self {
        StreamKind::TextContent {
            message_id: message_id.into(),
            delta: delta.into(),
        }
        .into()
    }
    /// `text.end`.
    pub fn text_end(message_id: impl Into<LifecycleId>) -> Self {
        StreamKind::TextEnd {
            message_id: message_id.into(),
        }
        .into()
    }
    /// `reasoning.start`.
    pub fn reasoning_start(message_id: impl Into<LifecycleId>) -> Self {
        StreamKind::ReasoningStart {
            message_id: message_id.into(),
        }
        .into()
    }
    /// `reasoning.content`.
    pub fn reasoning_content(message_id: impl Into<LifecycleId>, delta: impl Into<String>) -> Self {
        StreamKind::ReasoningContent {
            message_id: message_id.into(),
            delta: delta.into(),
        }
        .into()
    }
    /// `reasoning.end`.
    pub fn reasoning_end(message_id: impl Into<LifecycleId>) -> Self {
        StreamKind::ReasoningEnd {
            message_id: message_id.into(),
        }
        .into()
    }
    /// `tool_call.start`.
    pub fn tool_call_start(
        tool_call_id: impl Into<LifecycleId>,
        name: impl Into<String>,
        args: Option<Value>,
    ) -> Self {
        StreamKind::ToolCallStart {
            tool_call_id: tool_call_id.into(),
            name: name.into(),
            args,
            scope: ToolScope::Builtin,
            delegation: Box::default(),
        }
        .into()
    }
    /// `tool_call.start` of a tool that is not built in (an MCP or host
    /// tool).
    pub fn tool_call_start_in(
        tool_call_id: impl Into<LifecycleId>,
        name: impl Into<String>,
        args: Option<Value>,
        scope: ToolScope,
    ) -> Self {
        StreamKind::ToolCallStart {
            tool_call_id: tool_call_id.into(),
            name: name.into(),
            args,
            scope,
            delegation: Box::default(),
        }
        .into()
    }
    /// `tool_call.args`.
    pub fn tool_call_args(tool_call_id: impl Into<LifecycleId>, delta: impl Into<String>) -> Self {
        StreamKind::ToolCallArgs {
            tool_call_id: tool_call_id.into(),
            delta: delta.into(),
        }
        .into()
    }
    /// `tool_call.end`.
    pub fn tool_call_end(tool_call_id: impl Into<LifecycleId>, result: Option<Value>) -> Self {
        StreamKind::ToolCallEnd {
            tool_call_id: tool_call_id.into(),
            result,
        }
        .into()
    }
    /// `tool_call.result`.
    pub fn tool_call_result(tool_call_id: impl Into<LifecycleId>, result: Option<Value>) -> Self {
        StreamKind::ToolCallResult {
            tool_call_id: tool_call_id.into(),
            result,
            delegation: Box::default(),
        }
        .into()
    }
    /// A custom provider event.
    pub fn custom(name: impl Into<String>, text: impl Into<String>) -> Self {
        StreamKind::Custom {
            name: name.into(),
            text: text.into(),
        }
        .into()
    }

    /// Attach provider coordinates.
    pub fn with_source(mut self, source: ProviderCoords) -> Self {
        self.source = source;
        self
    }

    /// Attach unnormalized provider fields.
    pub fn with_raw(mut self, raw: Value) -> Self {
        self.raw = Some(raw);
        self
    }
}
