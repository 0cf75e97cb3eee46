//! Observations: what an agent is doing, beyond its text and tool calls —
//! its todo list, the subagents it delegates to, the capabilities (MCP
//! tools, skills, subagents) it invokes, and the images it shows.
//!
//! A driver reports them only from its provider's formal protocol (Claude
//! Code's `TodoWrite` and `Task` tool calls, Codex's `todo_list` items, an
//! ACP agent's `plan` …), never guessed from text, and only when its
//! [`StreamCapability::observation`](crate::StreamCapability) declares the
//! kind (OBS-01). The [`LifecycleChecker`](crate::LifecycleChecker) judges
//! each payload against OBS-02–06 and the subagent lifecycle.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::id::LifecycleId;

/// Which observation kinds a transport reports (OBS-01). A driver may emit
/// an observation payload only for a kind declared here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ObservationSupport {
    /// `todo.updated`: whole todo-list snapshots.
    #[serde(default)]
    pub todos: bool,
    /// `subagent.*`: delegations, with the child's events attributed.
    #[serde(default)]
    pub subagents: bool,
    /// `capability.invocation`: MCP tool, skill and subagent invocations.
    #[serde(default)]
    pub capabilities: bool,
    /// `image`: images the agent shows.
    #[serde(default)]
    pub images: bool,
}

impl ObservationSupport {
    /// No observation kind declared (the default).
    pub const NONE: ObservationSupport = ObservationSupport {
        todos: false,
        subagents: false,
        capabilities: false,
        images: false,
    };

    /// Every observation kind declared.
    pub const ALL: ObservationSupport = ObservationSupport {
        todos: true,
        subagents: true,
        capabilities: true,
        images: true,
    };
}

/// The most items a todo snapshot may hold (OBS-05).
pub const MAX_TODO_ITEMS: usize = 128;

/// The longest identifier or name an observation may carry, in bytes (OBS-03).
pub const MAX_OBSERVATION_NAME: usize = 256;

/// Where an observation came from: always the provider's own protocol.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservationSource {
    /// The provider's protocol element it was read from
    /// (`"claude.TodoWrite"`, `"codex.todo_list"`, `"acp.plan"` …).
    pub provider_protocol: String,
}

impl ObservationSource {
    /// A source naming `provider_protocol`.
    pub fn new(provider_protocol: impl Into<String>) -> Self {
        ObservationSource {
            provider_protocol: provider_protocol.into(),
        }
    }
}

/// The state of one todo item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
    /// Given up.
    Cancelled,
}

/// One item of a todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// Unique within its snapshot; the provider's id, else the item's
    /// position (`"1"`, `"2"` …).
    pub id: String,
    /// What is to be done.
    pub content: String,
    /// Its state.
    pub status: TodoStatus,
    /// The present-tense form shown while in progress, when the provider
    /// has one (Claude Code's `activeForm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
    /// The provider's priority label, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
}

/// The whole todo list of one scope, as of one revision (OBS-05/06).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoSnapshot {
    /// The scope the list belongs to: `None` for the main agent, a
    /// subagent's scope id for its own list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_id: Option<String>,
    /// 1 for the scope's first snapshot, then +1 for each changed list
    /// (use [`TodoRevisions`] to number them).
    pub revision: u64,
    /// Every item, in the provider's order (at most [`MAX_TODO_ITEMS`]).
    pub items: Vec<TodoItem>,
    /// Where it was read from (written as `provider_protocol`).
    #[serde(flatten)]
    pub source: ObservationSource,
}

/// Numbers a driver's todo snapshots per scope (revision 1, 2 …) and
/// leaves out a list that did not change (OBS-06): the tool call that
/// repeated it is still reported as a tool call.
#[derive(Debug, Clone, Default)]
pub struct TodoRevisions {
    last: std::collections::HashMap<Option<String>, (u64, Vec<TodoItem>)>,
}

impl TodoRevisions {
    /// An empty numbering.
    pub fn new() -> Self {
        Self::default()
    }

    /// The snapshot of `items` for `scope_id` with its revision, or `None`
    /// when the scope's last snapshot held exactly these items.
    pub fn next(
        &mut self,
        scope_id: Option<String>,
        items: Vec<TodoItem>,
        source: ObservationSource,
    ) -> Option<TodoSnapshot> {
        let entry = self.last.entry(scope_id.clone()).or_insert((0, Vec::new()));
        if entry.0 > 0 && entry.1 == items {
            return None;
        }
        entry.0 += 1;
        entry.1 = items.clone();
        Some(TodoSnapshot {
            scope_id,
            revision: entry.0,
            items,
            source,
        })
    }
}

/// What kind of capability was invoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapabilityKind {
    /// A tool of an MCP server.
    Mcp,
    /// A skill.
    Skill,
    /// A subagent.
    Subagent,
}

impl CapabilityKind {
    /// The operation this kind's invocations use: a subagent is spawned,
    /// an MCP tool or a skill is activated (OBS-03).
    pub fn operation(self) -> CapabilityOperation {
        match self {
            CapabilityKind::Subagent => CapabilityOperation::Spawn,
            CapabilityKind::Mcp | CapabilityKind::Skill => CapabilityOperation::Activate,
        }
    }
}

/// What the invocation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapabilityOperation {
    /// An MCP tool or skill was used.
    Activate,
    /// A subagent was started.
    Spawn,
}

/// Where an invocation is in its lifecycle (OBS-04).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapabilityPhase {
    /// It began (once per scope and id).
    Started,
    /// It ended well (terminal).
    Completed,
    /// It ended in an error (terminal; `error` says why).
    Failed,
}

impl CapabilityPhase {
    /// True for `completed` and `failed`.
    pub fn is_terminal(self) -> bool {
        !matches!(self, CapabilityPhase::Started)
    }
}

/// One phase of a capability invocation (OBS-03/04).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilityInvocation {
    /// Unique within its scope; usually the tool call's id.
    pub id: String,
    /// The scope it happened in: `None` for the main agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_id: Option<String>,
    /// What was invoked (written as `capability`: a payload's `kind` is
    /// its stream kind).
    #[serde(rename = "capability")]
    pub kind: CapabilityKind,
    /// The MCP tool's, skill's or subagent's name.
    pub name: String,
    /// The MCP server, for [`CapabilityKind::Mcp`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Activate (MCP, skill) or spawn (subagent).
    pub operation: CapabilityOperation,
    /// Where in the lifecycle.
    pub phase: CapabilityPhase,
    /// The tool call that carries it, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<LifecycleId>,
    /// How long it took, on a terminal phase, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Why it failed, on `failed` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Where it was read from (written as `provider_protocol`).
    #[serde(flatten)]
    pub source: ObservationSource,
}

impl CapabilityInvocation {
    /// The `started` phase of an invocation of `kind` named `name`.
    pub fn started(
        id: impl Into<String>,
        kind: CapabilityKind,
        name: impl Into<String>,
        source: ObservationSource,
    ) -> Self {
        CapabilityInvocation {
            id: id.into(),
            scope_id: None,
            kind,
            name: name.into(),
            server: None,
            operation: kind.operation(),
            phase: CapabilityPhase::Started,
            tool_call_id: None,
            duration_ms: None,
            error: None,
            source,
        }
    }

    /// The terminal phase of this invocation: `completed`, or `failed`
    /// with `error`; same identity, the given duration.
    pub fn finished(&self, error: Option<String>, duration_ms: Option<u64>) -> Self {
        CapabilityInvocation {
            phase: if error.is_some() {
                CapabilityPhase::Failed
            } else {
                CapabilityPhase::Completed
            },
            error,
            duration_ms,
            ..self.clone()
        }
    }
}

/// What a subagent payload reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubagentPhase {
    /// The delegation started (once per scope).
    Started,
    /// Progress.
    Delta,
    /// The delegation finished (once per scope; terminal).
    Finished,
}

/// A delegation to a subagent. Every event of the child's work carries the
/// same `scope_id` in its [`Delegation`](crate::Delegation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentReport {
    /// The child's scope id (the one its tool calls carry).
    pub scope_id: String,
    /// The delegate's name (its type or description).
    pub agent: String,
    /// What happened.
    pub phase: SubagentPhase,
    /// The tool call in the parent scope that started it, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<LifecycleId>,
    /// Progress or result text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub delta: String,
    /// `true` on a `finished` that ended in an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
    /// Structured provider data (the delegation's prompt, status …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Where it was read from (written as `provider_protocol`).
    #[serde(flatten)]
    pub source: ObservationSource,
}

/// An image the agent shows (OBS-03 rules on names apply to `mime_type`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImagePayload {
    /// The assistant message it belongs to, when it belongs to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<LifecycleId>,
    /// `image/png`, `image/jpeg` …
    pub mime_type: String,
    /// The image, base64-encoded; exactly one of `data` and `uri`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// Where the image is; exactly one of `data` and `uri`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// Where it was read from (written as `provider_protocol`).
    #[serde(flatten)]
    pub source: ObservationSource,
}

/// A name or id is valid for an observation: not blank, at most
/// [`MAX_OBSERVATION_NAME`] bytes, no control characters (OBS-03).
pub fn valid_name(s: &str) -> bool {
    !s.trim().is_empty() && s.len() <= MAX_OBSERVATION_NAME && !s.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, status: TodoStatus) -> TodoItem {
        TodoItem {
            id: id.into(),
            content: format!("do {id}"),
            status,
            active_form: None,
            priority: None,
        }
    }

    #[test]
    fn revisions_start_at_one_per_scope_and_skip_unchanged_lists() {
        let mut r = TodoRevisions::new();
        let src = ObservationSource::new("test.todo");
        let a = vec![item("1", TodoStatus::Pending)];
        let b = vec![item("1", TodoStatus::Completed)];
        assert_eq!(r.next(None, a.clone(), src.clone()).unwrap().revision, 1);
        assert!(r.next(None, a.clone(), src.clone()).is_none());
        assert_eq!(r.next(None, b.clone(), src.clone()).unwrap().revision, 2);
        let child = r.next(Some("task_1".into()), a, src.clone()).unwrap();
        assert_eq!(
            (child.revision, child.scope_id.as_deref()),
            (1, Some("task_1"))
        );
        assert_eq!(r.next(None, vec![], src).unwrap().revision, 3);
    }

    #[test]
    fn invocation_finish_keeps_identity_and_picks_the_phase() {
        let s = CapabilityInvocation::started(
            "call_1",
            CapabilityKind::Subagent,
            "general-purpose",
            ObservationSource::new("claude.Task"),
        );
        assert_eq!(s.operation, CapabilityOperation::Spawn);
        let ok = s.finished(None, Some(12));
        assert_eq!(
            (ok.phase, ok.duration_ms),
            (CapabilityPhase::Completed, Some(12))
        );
        let bad = s.finished(Some("boom".into()), None);
        assert_eq!(bad.phase, CapabilityPhase::Failed);
        assert_eq!((bad.id, bad.name, bad.kind), (s.id, s.name, s.kind));
    }

    #[test]
    fn names_must_be_short_printable_and_present() {
        assert!(valid_name("fetch"));
        assert!(!valid_name(" "));
        assert!(!valid_name("a\u{7}b"));
        assert!(!valid_name(&"x".repeat(MAX_OBSERVATION_NAME + 1)));
    }
}
