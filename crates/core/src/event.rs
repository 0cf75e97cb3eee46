//! The public event vocabulary (streaming guide §3).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use agent_adaptor_driver::{
    CapabilityInvocation, Delegation, ImagePayload, LifecycleId, ObservationSource, Role,
    TodoSnapshot, ToolScope, TranscriptItem, Usage,
};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::ApprovalRequest;
use crate::result::FailureReason;

/// The SDK envelope every event carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventMeta {
    /// The run this event belongs to.
    pub run_id: Arc<str>,
    /// The host's thread key; `None` for plain agent runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_key: Option<Arc<str>>,
    /// Assigned by the SDK in receive order; strictly increasing within a run,
    /// starting at 1. Restarts for every run.
    pub sequence: u64,
    /// When the SDK received the event.
    pub time: DateTime<Utc>,
    /// Provider coordinates; never authoritative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Box<EventSource>>,
}

impl EventMeta {
    /// An unstamped envelope for `run_id` (sequence 0; core stamps it).
    pub(crate) fn unstamped(run_id: Arc<str>, thread_key: Option<Arc<str>>) -> Self {
        EventMeta {
            run_id,
            thread_key,
            sequence: 0,
            time: DateTime::<Utc>::UNIX_EPOCH,
            source: None,
        }
    }
}

/// Raw provider coordinates of an event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventSource {
    /// The provider's run id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The provider's thread / session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The provider's turn id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

/// Where in a lifecycle a delta event sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Opens the lifecycle.
    Start,
    /// A content delta (droppable under the default policy).
    Content,
    /// Closes the lifecycle.
    End,
}

impl Phase {
    /// Pick the name for this phase from `[start, content, end]`.
    fn pick(self, names: [&'static str; 3]) -> &'static str {
        match self {
            Phase::Start => names[0],
            Phase::Content => names[1],
            Phase::End => names[2],
        }
    }
}

/// The run began. Always the first event, exactly once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStarted {
    /// The envelope.
    pub meta: EventMeta,
}

/// The run ended. Always the last event, exactly once. The authoritative
/// outcome is still [`RunStream::result`](crate::RunStream::result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFinished {
    /// The envelope.
    pub meta: EventMeta,
    /// Final usage, when the provider reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// True when the run did not succeed.
    pub failed: bool,
    /// Why, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<FailureReason>,
    /// A short message, when it failed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// Assistant (or host-synthesized user) text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextDelta {
    /// The envelope.
    pub meta: EventMeta,
    /// The message id (shared by every event of the message).
    pub message_id: LifecycleId,
    /// The text (empty at start/end).
    pub text: String,
    /// Who speaks.
    pub role: Role,
    /// Where in the message lifecycle.
    pub phase: Phase,
}

/// Reasoning text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thinking {
    /// The envelope.
    pub meta: EventMeta,
    /// The reasoning message id (shared by every event of the block).
    pub message_id: LifecycleId,
    /// The text (empty at start/end).
    pub text: String,
    /// Where in the lifecycle.
    pub phase: Phase,
}

/// A tool call's boundaries and argument deltas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The envelope.
    pub meta: EventMeta,
    /// The tool call id (shared by every event of the call).
    pub id: LifecycleId,
    /// The tool's name (set at start).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Complete arguments, when known at start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// An argument delta (phase content).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub args_delta: String,
    /// The result, when attached to the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Where in the lifecycle.
    pub phase: Phase,
    /// Where the tool lives (set at start): built in, an MCP server's
    /// tool (server and tool named), or a host tool.
    #[serde(default, skip_serializing_if = "ToolScope::is_builtin")]
    pub scope: ToolScope,
    /// Delegation coordinates, when the call belongs to a delegated scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation: Option<Box<Delegation>>,
}

/// A standalone tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The envelope.
    pub meta: EventMeta,
    /// The tool call id (shared by every event of the call).
    pub id: LifecycleId,
    /// The result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Delegation coordinates, when the call belongs to a delegated scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation: Option<Box<Delegation>>,
}

/// What a [`ProcessInfo`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessKind {
    /// A provider process was spawned.
    Spawn,
    /// Raw stdout bytes (droppable).
    Stdout,
    /// Raw stderr bytes (droppable).
    Stderr,
}

/// Subprocess spawn and raw output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessInfo {
    /// The envelope.
    pub meta: EventMeta,
    /// What it reports.
    pub kind: ProcessKind,
    /// Text (spawn summary).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The raw bytes (stdout/stderr), exactly as read.
    #[serde(default, skip_serializing_if = "Bytes::is_empty")]
    pub bytes: Bytes,
    /// String metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Structured data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// Well-known [`Notice::kind`] values. Unknown driver kinds pass through verbatim.
pub mod notice_kind {
    /// The provider was invoked.
    pub const INVOCATION: &str = "invocation";
    /// A lifecycle note from the driver or core.
    pub const LIFECYCLE: &str = "lifecycle";
    /// A runtime service report.
    pub const RUNTIME: &str = "runtime";
    /// A provider step started or finished (`data.phase`).
    pub const STEP: &str = "step";
    /// A transcript item (`item`).
    pub const TRANSCRIPT_ITEM: &str = "transcript.item";
    /// A provider-visible decision request (audit; no responder).
    pub const APPROVAL_REQUESTED: &str = "approval.requested";
    /// A decision was resolved (audit).
    pub const APPROVAL_RESOLVED: &str = "approval.resolved";
    /// The driver broke its contract; the payload was rejected (`data`).
    pub const DRIVER_VIOLATION: &str = "driver.violation";
    /// The driver's checkpoint failed core's validation (`data.reasons`).
    pub const CHECKPOINT_REJECTED: &str = "checkpoint.rejected";
    /// A thread run starts a fresh session over the key's existing record
    /// (incompatible, or a new session was asked for); the record is
    /// archived when the run succeeds. `data`: `key`, `archived_record_id`,
    /// `driver_type` (the record's), `new_driver_type`, `differs`,
    /// `reason`.
    pub const THREAD_SESSION_REPLACED: &str = "thread.session_replaced";
    /// A gap reported by the provider itself was seen.
    pub const PROVIDER_DROPPED: &str = "provider.dropped";
}

/// Invocation, runtime, step, transcript-item and audit information.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notice {
    /// The envelope.
    pub meta: EventMeta,
    /// The kind (see [`notice_kind`]).
    pub kind: Cow<'static, str>,
    /// Text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The transcript item, for `transcript.item`: the very item the run's
    /// transcript holds, shared (no copy is made per event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<Arc<TranscriptItem>>,
    /// String metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Structured data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// An aggregated report of events that were not delivered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    /// The envelope.
    pub meta: EventMeta,
    /// How many events were lost.
    pub count: u64,
    /// Lost events by kind name (`"text.content"` …).
    pub by_kind: BTreeMap<String, u64>,
    /// Sequence of the first lost event.
    pub first_sequence: u64,
    /// Sequence of the last lost event.
    pub last_sequence: u64,
    /// Why: `"slow_consumer"`, `"cancelled"`, or a provider's reason.
    pub reason: String,
    /// Who dropped them: `"sdk.event_broker"` or `"provider"`.
    pub source: String,
    /// Extra details (buffer size, strategy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// What a [`SubagentUpdate`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubagentKind {
    /// The delegation started.
    Started,
    /// Progress (droppable).
    Delta,
    /// The delegation finished.
    Finished,
}

/// Live delegation progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentUpdate {
    /// The envelope.
    pub meta: EventMeta,
    /// The child's scope id: every event of the child's work carries it in
    /// its `delegation.scope_id`.
    #[serde(default)]
    pub scope_id: String,
    /// The delegate's name.
    pub agent: String,
    /// What happened.
    pub kind: SubagentKind,
    /// The parent's tool call that started the delegation, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<LifecycleId>,
    /// `true` on a `finished` that ended in an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
    /// Progress text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub delta: String,
    /// Structured data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Where it was read from (written as `provider_protocol`); empty for
    /// updates a host published.
    #[serde(flatten)]
    pub origin: ObservationSource,
}

/// The whole todo list of a scope changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TodoUpdated {
    /// The envelope.
    pub meta: EventMeta,
    /// The list (its scope, revision, items and source), flattened into
    /// the event.
    #[serde(flatten)]
    pub snapshot: TodoSnapshot,
}

/// One phase of an MCP tool, skill or subagent invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapabilityInvoked {
    /// The envelope.
    pub meta: EventMeta,
    /// The invocation, flattened into the event.
    #[serde(flatten)]
    pub invocation: CapabilityInvocation,
}

/// An image shown in the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageContent {
    /// The envelope.
    pub meta: EventMeta,
    /// Who shows it: the assistant, or (host-published) the user.
    pub role: Role,
    /// The image, flattened into the event.
    #[serde(flatten)]
    pub image: ImagePayload,
}

/// One typed occurrence of a run.
///
/// Match on what you render and ignore the rest (`_ => {}`), but keep
/// draining the stream: it is how the run makes progress.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The run began.
    RunStarted(RunStarted),
    /// The run ended (always last).
    RunFinished(RunFinished),
    /// Assistant text.
    TextDelta(TextDelta),
    /// Reasoning.
    Thinking(Thinking),
    /// Tool call boundaries and argument deltas.
    ToolCall(ToolCall),
    /// A standalone tool result.
    ToolResult(ToolResult),
    /// Process spawn and raw output.
    ProcessInfo(ProcessInfo),
    /// Operational and audit information.
    Notice(Notice),
    /// A request for a human decision, with an exactly-once responder.
    ApprovalRequest(Box<ApprovalRequest>),
    /// Events were dropped.
    Dropped(Dropped),
    /// Delegation progress.
    SubagentUpdate(SubagentUpdate),
    /// A todo list changed.
    TodoUpdated(Box<TodoUpdated>),
    /// An MCP tool, skill or subagent invocation began or ended.
    CapabilityInvocation(Box<CapabilityInvoked>),
    /// An image was shown.
    ImageContent(Box<ImageContent>),
}

impl Event {
    /// The SDK envelope.
    pub fn meta(&self) -> &EventMeta {
        match self {
            Event::RunStarted(e) => &e.meta,
            Event::RunFinished(e) => &e.meta,
            Event::TextDelta(e) => &e.meta,
            Event::Thinking(e) => &e.meta,
            Event::ToolCall(e) => &e.meta,
            Event::ToolResult(e) => &e.meta,
            Event::ProcessInfo(e) => &e.meta,
            Event::Notice(e) => &e.meta,
            Event::ApprovalRequest(e) => &e.meta,
            Event::Dropped(e) => &e.meta,
            Event::SubagentUpdate(e) => &e.meta,
            Event::TodoUpdated(e) => &e.meta,
            Event::CapabilityInvocation(e) => &e.meta,
            Event::ImageContent(e) => &e.meta,
        }
    }

    /// The SDK envelope, mutable (for replay tools that restamp events).
    pub fn meta_mut(&mut self) -> &mut EventMeta {
        match self {
            Event::RunStarted(e) => &mut e.meta,
            Event::RunFinished(e) => &mut e.meta,
            Event::TextDelta(e) => &mut e.meta,
            Event::Thinking(e) => &mut e.meta,
            Event::ToolCall(e) => &mut e.meta,
            Event::ToolResult(e) => &mut e.meta,
            Event::ProcessInfo(e) => &mut e.meta,
            Event::Notice(e) => &mut e.meta,
            Event::ApprovalRequest(e) => &mut e.meta,
            Event::Dropped(e) => &mut e.meta,
            Event::SubagentUpdate(e) => &mut e.meta,
            Event::TodoUpdated(e) => &mut e.meta,
            Event::CapabilityInvocation(e) => &mut e.meta,
            Event::ImageContent(e) => &mut e.meta,
        }
    }

    /// The kind name used in [`Dropped::by_kind`] (`"text.content"`,
    /// `"process.stdout"`, `"notice.step"` …).
    pub fn kind_name(&self) -> Cow<'static, str> {
        match self {
            Event::RunStarted(_) => "run.started".into(),
            Event::RunFinished(_) => "run.finished".into(),
            Event::TextDelta(e) => e
                .phase
                .pick(["text.start", "text.content", "text.end"])
                .into(),
            Event::Thinking(e) => e
                .phase
                .pick(["thinking.start", "thinking.content", "thinking.end"])
                .into(),
            Event::ToolCall(e) => e
                .phase
                .pick(["tool_call.start", "tool_call.content", "tool_call.end"])
                .into(),
            Event::ToolResult(_) => "tool_result".into(),
            Event::ProcessInfo(e) => match e.kind {
                ProcessKind::Spawn => "process.spawn".into(),
                ProcessKind::Stdout => "process.stdout".into(),
                ProcessKind::Stderr => "process.stderr".into(),
            },
            Event::Notice(e) => format!("notice.{}", e.kind).into(),
            Event::ApprovalRequest(_) => "approval.requested".into(),
            Event::Dropped(_) => "dropped".into(),
            Event::SubagentUpdate(e) => match e.kind {
                SubagentKind::Started => "subagent.started".into(),
                SubagentKind::Delta => "subagent.delta".into(),
                SubagentKind::Finished => "subagent.finished".into(),
            },
            Event::TodoUpdated(_) => "todo.updated".into(),
            Event::CapabilityInvocation(_) => "capability.invocation".into(),
            Event::ImageContent(_) => "image".into(),
        }
    }

    /// True for the high-frequency deltas the default policy may drop:
    /// content-phase text, thinking and tool-argument deltas, raw
    /// stdout/stderr, and subagent deltas. Everything else is reliable.
    pub fn is_droppable(&self) -> bool {
        match self {
            Event::TextDelta(e) => e.phase == Phase::Content,
            Event::Thinking(e) => e.phase == Phase::Content,
            Event::ToolCall(e) => e.phase == Phase::Content,
            Event::ProcessInfo(e) => e.kind != ProcessKind::Spawn,
            Event::SubagentUpdate(e) => e.kind == SubagentKind::Delta,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn events_stay_small_enough_to_move_cheaply() {
        // Every event is moved through the broker's queue; keep the largest
        // variant bounded so a delta does not pay for a rare kind. The bound
        // is a tool call's two `Value`s at 72 bytes each (serde_json's
        // `preserve_order` map, turned on by the ACP crate).
        let size = std::mem::size_of::<super::Event>();
        assert!(size <= 336, "Event is {size} bytes");
    }
}
