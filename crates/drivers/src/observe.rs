//! Observations from formal protocol facts, shared by every driver family.
//!
//! A family's parser reads its own wire (Claude's `TodoWrite` input, Codex's
//! `todo_list` item, an ACP `plan`) into [`TodoFact`]s, tool names, scope
//! ids and image blocks; an [`Observer`] turns them into observation
//! payloads that keep OBS-03–08: todo lists numbered per scope and repeated
//! lists left out, every capability invocation and subagent started once
//! and finished once (the ones still open when the run ends are finished
//! as failed by [`Observer::finish`]), names checked. A fact that cannot
//! make a valid observation comes back as an [`ObserveError`] for the
//! family to report as a notice — the tool call that carried it is still
//! reported as a tool call.

use std::collections::{HashMap, HashSet};

use agent_adaptor_driver::observation::{MAX_TODO_ITEMS, valid_name};
use agent_adaptor_driver::{
    CapabilityInvocation, CapabilityKind, Delegation, ImagePayload, LifecycleId, ObservationSource,
    ObservationSupport, OperationalEvent, RunEvent, StreamPayload, SubagentPhase, SubagentReport,
    TodoItem, TodoRevisions, TodoStatus,
};
use serde_json::Value;

/// Why a protocol fact made no observation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObserveError {
    /// A todo list with more than [`MAX_TODO_ITEMS`] items.
    #[error("todo list with {0} items (at most {MAX_TODO_ITEMS})")]
    TooManyTodos(usize),
    /// A todo item without content.
    #[error("todo item {0} has no content")]
    EmptyTodo(usize),
    /// A todo item whose status is none the protocol defines.
    #[error("todo item {index} has the unknown status {status:?}")]
    UnknownStatus {
        /// Its position (from 1).
        index: usize,
        /// The status as sent.
        status: String,
    },
    /// Two todo items with one id, or an id that is blank or overlong.
    #[error("todo item id {0:?} is blank, overlong or repeated")]
    BadTodoId(String),
    /// A name or id that is blank, overlong or unprintable (OBS-03).
    #[error("{what} {value:?} is blank, overlong or unprintable")]
    BadName {
        /// Which name.
        what: &'static str,
        /// Its value, cut short.
        value: String,
    },
    /// An image block that is not an `image/*` with exactly one of data and uri.
    #[error("image block with mime type {0:?} and not exactly one of data and uri")]
    BadImage(String),
}

/// One todo item as a protocol states it, before it is checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TodoFact {
    /// The provider's id, when it has one (else the item's position).
    pub id: Option<String>,
    /// What is to be done.
    pub content: String,
    /// The provider's status word (`pending`, `in_progress`, `completed`,
    /// `cancelled`, in snake or camel case).
    pub status: String,
    /// The in-progress form, when the provider has one.
    pub active_form: Option<String>,
    /// The provider's priority label, when it has one.
    pub priority: Option<String>,
}

/// A provider's status word as a [`TodoStatus`].
pub fn todo_status(word: &str) -> Option<TodoStatus> {
    match word {
        "pending" => Some(TodoStatus::Pending),
        "in_progress" | "inProgress" | "in-progress" => Some(TodoStatus::InProgress),
        "completed" => Some(TodoStatus::Completed),
        "cancelled" | "canceled" => Some(TodoStatus::Cancelled),
        _ => None,
    }
}

/// Check `facts` and make them a todo list: ids from the provider or the
/// position, statuses mapped, nothing blank, at most [`MAX_TODO_ITEMS`].
pub fn todo_items(facts: Vec<TodoFact>) -> Result<Vec<TodoItem>, ObserveError> {
    if facts.len() > MAX_TODO_ITEMS {
        return Err(ObserveError::TooManyTodos(facts.len()));
    }
    let mut ids = HashSet::with_capacity(facts.len());
    let mut items = Vec::with_capacity(facts.len());
    for (i, f) in facts.into_iter().enumerate() {
        let index = i + 1;
        if f.content.trim().is_empty() {
            return Err(ObserveError::EmptyTodo(index));
        }
        let status = todo_status(&f.status).ok_or_else(|| ObserveError::UnknownStatus {
            index,
            status: short(&f.status),
        })?;
        let id = f.id.unwrap_or_else(|| index.to_string());
        if !valid_name(&id) || !ids.insert(id.clone()) {
            return Err(ObserveError::BadTodoId(short(&id)));
        }
        items.push(TodoItem {
            id,
            content: f.content,
            status,
            active_form: f.active_form.filter(|a| !a.trim().is_empty()),
            priority: f.priority.filter(|p| !p.trim().is_empty()),
        });
    }
    Ok(items)
}

/// The notice that reports why a fact of `driver`'s protocol made no
/// observation.
pub fn notice(driver: &str, error: &ObserveError) -> RunEvent {
    let mut ev = OperationalEvent::text(format!("{driver}: no observation: {error}"));
    ev.metadata
        .insert("kind".into(), "observation.refused".into());
    RunEvent::Lifecycle(ev)
}

/// A string field of a JSON object, when it is one.
pub fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn short(s: &str) -> String {
    s.chars().take(64).collect()
}

fn name(what: &'static str, value: &str) -> Result<(), ObserveError> {
    if valid_name(value) {
        Ok(())
    } else {
        Err(ObserveError::BadName {
            what,
            value: short(value),
        })
    }
}

/// What a capability invocation is, as read from a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapabilityFact {
    /// MCP tool, skill or subagent.
    pub kind: CapabilityKind,
    /// The tool's, skill's or subagent's name.
    pub name: String,
    /// The MCP server, for an MCP tool.
    pub server: Option<String>,
}

/// The observation state of one run: todo revisions, open invocations and
/// subagents. Only the kinds `support` declares come out (OBS-01).
#[derive(Debug, Clone, Default)]
pub struct Observer {
    support: ObservationSupport,
    revisions: TodoRevisions,
    open_capabilities: HashMap<String, CapabilityInvocation>,
    started_capabilities: HashSet<String>,
    open_subagents: HashMap<String, SubagentReport>,
    started_subagents: HashSet<String>,
}

impl Observer {
    /// An observer emitting the kinds `support` declares.
    pub fn new(support: ObservationSupport) -> Self {
        Observer {
            support,
            ..Self::default()
        }
    }

    /// The todo list of `scope` (`None`: the main agent) as of now, or
    /// `None` when todos are not declared or the list did not change.
    pub fn todos(
        &mut self,
        scope: Option<String>,
        facts: Vec<TodoFact>,
        source: &str,
    ) -> Result<Option<StreamPayload>, ObserveError> {
        if !self.support.todos {
            return Ok(None);
        }
        if let Some(s) = &scope {
            name("scope id", s)?;
        }
        let items = todo_items(facts)?;
        Ok(self
            .revisions
            .next(scope, items, ObservationSource::new(source))
            .map(StreamPayload::todo_updated))
    }

    /// The `started` phase of the invocation carried by tool call `call`,
    /// in `scope`; `None` when not declared or already started.
    pub fn capability_started(
        &mut self,
        call: &str,
        scope: Option<String>,
        fact: CapabilityFact,
        source: &str,
    ) -> Result<Option<StreamPayload>, ObserveError> {
        if !self.support.capabilities || self.started_capabilities.contains(call) {
            return Ok(None);
        }
        name("tool call id", call)?;
        name("capability name", &fact.name)?;
        if let Some(s) = &scope {
            name("scope id", s)?;
        }
        match (&fact.server, fact.kind) {
            (Some(s), CapabilityKind::Mcp) => name("MCP server", s)?,
            (None, CapabilityKind::Mcp) => {
                return Err(ObserveError::BadName {
                    what: "MCP server",
                    value: String::new(),
                });
            }
            _ => {}
        }
        let mut inv = CapabilityInvocation::started(
            call,
            fact.kind,
            fact.name,
            ObservationSource::new(source),
        );
        inv.scope_id = scope;
        inv.server = fact.server.filter(|_| fact.kind == CapabilityKind::Mcp);
        inv.tool_call_id = Some(LifecycleId::from(call));
        self.started_capabilities.insert(call.to_owned());
        self.open_capabilities.insert(call.to_owned(), inv.clone());
        Ok(Some(StreamPayload::capability(inv)))
    }

    /// The terminal phase of the invocation tool call `call` started, if
    /// one is open: failed with `error`, else completed.
    pub fn capability_finished(
        &mut self,
        call: &str,
        error: Option<String>,
        duration_ms: Option<u64>,
    ) -> Option<StreamPayload> {
        let open = self.open_capabilities.remove(call)?;
        let error = error.map(|e| {
            if e.trim().is_empty() {
                "failed".to_owned()
            } else {
                e
            }
        });
        Some(StreamPayload::capability(open.finished(error, duration_ms)))
    }

    /// A subagent scope `scope` started by tool call `call` (`agent`: its
    /// type or description); `None` when not declared or already started.
    pub fn subagent_started(
        &mut self,
        scope: &str,
        agent: &str,
        call: Option<&str>,
        data: Option<Value>,
        source: &str,
    ) -> Result<Option<StreamPayload>, ObserveError> {
        if !self.support.subagents || self.started_subagents.contains(scope) {
            return Ok(None);
        }
        name("subagent scope", scope)?;
        name("subagent name", agent)?;
        let report = SubagentReport {
            scope_id: scope.to_owned(),
            agent: agent.to_owned(),
            phase: SubagentPhase::Started,
            tool_call_id: call.map(LifecycleId::from),
            delta: String::new(),
            failed: false,
            data,
            source: ObservationSource::new(source),
        };
        self.started_subagents.insert(scope.to_owned());
        self.open_subagents.insert(scope.to_owned(), report.clone());
        Ok(Some(StreamPayload::subagent(report)))
    }

    /// True while subagent `scope` is open.
    pub fn in_subagent(&self, scope: &str) -> bool {
        self.open_subagents.contains_key(scope)
    }

    /// Where a tool call made inside subagent `scope` sits: that scope, and
    /// the tool call that started it.
    pub fn delegation(&self, scope: &str) -> Option<Delegation> {
        let open = self.open_subagents.get(scope)?;
        Some(Delegation {
            scope_id: Some(scope.to_owned()),
            parent_scope_id: None,
            parent_tool_call_id: open.tool_call_id.as_deref().map(str::to_owned),
        })
    }

    /// Progress text of subagent `scope`, if it is open and `text` is not
    /// blank.
    pub fn subagent_delta(&self, scope: &str, text: &str) -> Option<StreamPayload> {
        let open = self.open_subagents.get(scope)?;
        (!text.trim().is_empty()).then(|| {
            StreamPayload::subagent(SubagentReport {
                phase: SubagentPhase::Delta,
                delta: text.to_owned(),
                data: None,
                ..open.clone()
            })
        })
    }

    /// The end of subagent `scope`, with its result text, if it is open.
    pub fn subagent_finished(
        &mut self,
        scope: &str,
        failed: bool,
        result: String,
    ) -> Option<StreamPayload> {
        let open = self.open_subagents.remove(scope)?;
        Some(StreamPayload::subagent(SubagentReport {
            phase: SubagentPhase::Finished,
            delta: result,
            failed,
            data: None,
            ..open
        }))
    }

    /// An image (`data` base64, or `uri`) of `mime_type`; `None` when
    /// images are not declared.
    pub fn image(
        &self,
        message_id: Option<&str>,
        mime_type: &str,
        data: Option<String>,
        uri: Option<String>,
        source: &str,
    ) -> Result<Option<StreamPayload>, ObserveError> {
        if !self.support.images {
            return Ok(None);
        }
        let data = data.filter(|d| !d.is_empty());
        let uri = uri.filter(|u| !u.is_empty());
        let mime_ok = mime_type
            .strip_prefix("image/")
            .is_some_and(|s| !s.is_empty())
            && valid_name(mime_type);
        if !mime_ok || data.is_some() == uri.is_some() {
            return Err(ObserveError::BadImage(short(mime_type)));
        }
        Ok(Some(StreamPayload::image(ImagePayload {
            message_id: message_id
                .filter(|m| !m.trim().is_empty())
                .map(LifecycleId::from),
            mime_type: mime_type.to_owned(),
            data,
            uri,
            source: ObservationSource::new(source),
        })))
    }

    /// The run ended: every invocation and subagent still open finishes as
    /// failed, so no lifecycle is left open (OBS-04/07).
    pub fn finish(&mut self) -> Vec<StreamPayload> {
        let mut calls: Vec<String> = self.open_capabilities.keys().cloned().collect();
        calls.sort();
        let mut out: Vec<StreamPayload> = calls
            .iter()
            .filter_map(|c| {
                self.capability_finished(c, Some("the run ended before it finished".into()), None)
            })
            .collect();
        let mut scopes: Vec<String> = self.open_subagents.keys().cloned().collect();
        scopes.sort();
        out.extend(scopes.iter().filter_map(|s| {
            self.subagent_finished(s, true, "the run ended before it finished".into())
        }));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_adaptor_driver::{CapabilityPhase, StreamKind};

    fn fact(content: &str, status: &str) -> TodoFact {
        TodoFact {
            content: content.into(),
            status: status.into(),
            ..TodoFact::default()
        }
    }

    #[test]
    fn todo_lists_are_checked_numbered_and_repeats_left_out() {
        let mut o = Observer::new(ObservationSupport::ALL);
        let a = vec![fact("a", "pending"), fact("b", "in_progress")];
        let p = o.todos(None, a.clone(), "t.todo").unwrap().unwrap();
        let StreamKind::TodoUpdated(t) = p.kind else {
            panic!("not a todo: {p:?}")
        };
        assert_eq!(t.revision, 1);
        assert_eq!(
            t.items.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(),
            ["1", "2"]
        );
        assert_eq!(t.items[1].status, TodoStatus::InProgress);
        assert!(o.todos(None, a, "t.todo").unwrap().is_none());
        assert_eq!(
            o.todos(None, vec![fact("a", "weird")], "t.todo"),
            Err(ObserveError::UnknownStatus {
                index: 1,
                status: "weird".into()
            })
        );
        assert_eq!(
            o.todos(None, vec![fact(" ", "pending")], "t.todo"),
            Err(ObserveError::EmptyTodo(1))
        );
        let many = vec![fact("x", "pending"); MAX_TODO_ITEMS + 1];
        assert_eq!(
            o.todos(None, many, "t.todo"),
            Err(ObserveError::TooManyTodos(MAX_TODO_ITEMS + 1))
        );
    }

    #[test]
    fn undeclared_kinds_make_nothing() {
        let mut o = Observer::new(ObservationSupport::NONE);
        assert!(
            o.todos(None, vec![fact("a", "pending")], "t")
                .unwrap()
                .is_none()
        );
        assert!(
            o.subagent_started("s", "general", None, None, "t")
                .unwrap()
                .is_none()
        );
        assert!(
            o.image(None, "image/png", Some("AA==".into()), None, "t")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn invocations_and_subagents_open_once_and_close_at_the_end() {
        let mut o = Observer::new(ObservationSupport::ALL);
        let skill = CapabilityFact {
            kind: CapabilityKind::Skill,
            name: "pdf".into(),
            server: None,
        };
        assert!(
            o.capability_started("c1", None, skill.clone(), "t")
                .unwrap()
                .is_some()
        );
        assert!(
            o.capability_started("c1", None, skill, "t")
                .unwrap()
                .is_none()
        );
        let done = o.capability_finished("c1", None, None).unwrap();
        let StreamKind::Capability(c) = done.kind else {
            panic!("{done:?}")
        };
        assert_eq!(c.phase, CapabilityPhase::Completed);
        assert!(o.capability_finished("c1", None, None).is_none());
        let bad_mcp = CapabilityFact {
            kind: CapabilityKind::Mcp,
            name: "x".into(),
            server: None,
        };
        assert!(o.capability_started("c2", None, bad_mcp, "t").is_err());

        o.subagent_started("task_1", "general-purpose", Some("task_1"), None, "t")
            .unwrap()
            .unwrap();
        let d = o.delegation("task_1").unwrap();
        assert_eq!(d.scope_id.as_deref(), Some("task_1"));
        assert_eq!(d.parent_tool_call_id.as_deref(), Some("task_1"));
        let end = o.finish();
        assert_eq!(end.len(), 1);
        let StreamKind::Subagent(s) = &end[0].kind else {
            panic!("{end:?}")
        };
        assert!(s.failed && s.phase == SubagentPhase::Finished);
        assert!(o.finish().is_empty());
    }

    #[test]
    fn images_need_an_image_mime_and_one_source() {
        let o = Observer::new(ObservationSupport::ALL);
        assert!(
            o.image(None, "image/png", Some("AA==".into()), None, "t")
                .unwrap()
                .is_some()
        );
        assert!(
            o.image(None, "text/plain", Some("AA==".into()), None, "t")
                .is_err()
        );
        assert!(o.image(None, "image/png", None, None, "t").is_err());
        assert!(
            o.image(
                None,
                "image/png",
                Some("AA==".into()),
                Some("file:///x".into()),
                "t"
            )
            .is_err()
        );
    }
}
