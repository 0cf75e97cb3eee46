//! Observations onto AG-UI 1.0: todo lists, capability invocations and a
//! subagent's progress become activity messages (`ACTIVITY_SNAPSHOT`, each
//! snapshot replacing the message's content), delegations become the 1.0
//! subagent lifecycle (`SUBAGENT_STARTED` → `SUBAGENT_FINISHED` /
//! `SUBAGENT_ERROR`), and the child's tool calls carry its
//! `subagentRunId`. Images have no 1.0 event for agent output: they travel
//! as `CUSTOM` [`CUSTOM_IMAGE`].
//!
//! | event | AG-UI |
//! |---|---|
//! | `TodoUpdated` | `ACTIVITY_SNAPSHOT` `todo`, id `<run>:todo[:<scope>]`: `{revision, items: [{id, content, status, activeForm?, priority?}], scopeId?}` |
//! | `CapabilityInvocation` | `ACTIVITY_SNAPSHOT` `capability`, id `<run>:capability[:<scope>]:<id>`, one per phase: `{capability, name, server?, operation, phase, toolCallId?, durationMs?, error?, scopeId?}` |
//! | `SubagentUpdate` started | `SUBAGENT_STARTED {subagentRunId: scope, name, parentToolCallId?}` |
//! | `SubagentUpdate` delta | `ACTIVITY_SNAPSHOT` `subagent`, id `<run>:subagent:<scope>`: `{agent, progress, data?}` |
//! | `SubagentUpdate` finished | `SUBAGENT_FINISHED {result?, outcome: success}`, or `SUBAGENT_ERROR {message, code: "subagent_failed"}` when failed |
//! | `ImageContent` | `CUSTOM` `agent_adaptor.image`: `{role, mimeType, data? \| uri?, messageId?}` |
//!
//! A scope's events (a todo list or invocation with a `scope_id`, a tool
//! call whose delegation names a scope) carry `subagentRunId: <scope>`.
//! An interrupt suspends the open subagents (`outcome: suspended` with the
//! interrupt's id) and the resuming AG-UI run starts them again; a run that
//! ends with subagents still open reports each as `SUBAGENT_ERROR` with
//! code `run_ended`, so the client's verifier never sees a run finish over
//! an open subagent.

use std::collections::{HashMap, HashSet};

use agent_adaptor_core::driver::TodoItem;
use agent_adaptor_core::{CapabilityInvoked, Event, ImageContent, SubagentKind, SubagentUpdate};
use serde_json::{Value, json};

use super::wire::{
    ActivitySnapshotEvent, AguiEvent, CustomEvent, EventBody, SubagentErrorEvent,
    SubagentFinishedEvent, SubagentOutcome, SubagentStartedEvent,
};

/// The `CUSTOM` event name under which an image travels.
pub const CUSTOM_IMAGE: &str = "agent_adaptor.image";
/// `activityType` of a todo list.
pub const ACTIVITY_TODO: &str = "todo";
/// `activityType` of a capability invocation.
pub const ACTIVITY_CAPABILITY: &str = "capability";
/// `activityType` of a subagent's progress.
pub const ACTIVITY_SUBAGENT: &str = "subagent";

/// A subagent that is open (or suspended by an interrupt).
#[derive(Debug, Clone)]
struct Open {
    scope: String,
    started: SubagentStartedEvent,
}

/// The observation state of one core run (it may span several AG-UI runs).
#[derive(Debug, Default)]
pub(crate) struct Observer {
    /// Subagents open in the current AG-UI run, in start order.
    open: Vec<Open>,
    /// Subagents an interrupt suspended: restarted by the next AG-UI run.
    suspended: Vec<Open>,
    /// Scopes whose subagent finished (a repeated start is dropped).
    finished: HashSet<String>,
    /// Tool call id → the subagent scope it belongs to.
    tool_scopes: HashMap<String, String>,
}

impl Observer {
    /// Map an observation event; `false` when `ev` is not one.
    pub(crate) fn event(&mut self, ev: &Event, ts: Option<i64>, out: &mut Vec<AguiEvent>) -> bool {
        match ev {
            Event::TodoUpdated(t) => {
                let s = &t.snapshot;
                let mut id = format!("{}:todo", t.meta.run_id);
                let mut content = json!({
                    "revision": s.revision,
                    "items": s.items.iter().map(todo_item).collect::<Vec<_>>(),
                });
                if let Some(scope) = &s.scope_id {
                    id = format!("{id}:{scope}");
                    content["scopeId"] = json!(scope);
                }
                out.push(activity(id, ACTIVITY_TODO, content, ts).in_subagent(s.scope_id.clone()));
            }
            Event::CapabilityInvocation(c) => out.push(capability(c, ts)),
            Event::SubagentUpdate(u) => self.subagent(u, ts, out),
            Event::ImageContent(i) => out.push(image(i, ts)),
            Event::ToolCall(c) => {
                self.remember(&c.id, c.delegation.as_deref());
                return false;
            }
            Event::ToolResult(r) => {
                self.remember(&r.id, r.delegation.as_deref());
                return false;
            }
            _ => return false,
        }
        true
    }

    fn remember(&mut self, id: &str, delegation: Option<&agent_adaptor_core::driver::Delegation>) {
        if let Some(scope) = delegation.and_then(|d| d.scope_id.clone()) {
            self.tool_scopes.insert(id.to_owned(), scope);
        }
    }

    /// Attribute the tool-call events in `out` to their subagent.
    pub(crate) fn tag(&self, out: &mut [AguiEvent]) {
        if self.tool_scopes.is_empty() {
            return;
        }
        for ev in out.iter_mut().filter(|e| e.subagent_run_id.is_none()) {
            let id = match &ev.body {
                EventBody::ToolCallStart(e) => &e.tool_call_id,
                EventBody::ToolCallArgs(e) => &e.tool_call_id,
                EventBody::ToolCallEnd(e) => &e.tool_call_id,
                EventBody::ToolCallResult(e) => &e.tool_call_id,
                _ => continue,
            };
            ev.subagent_run_id = self.tool_scopes.get(id).cloned();
        }
    }

    fn subagent(&mut self, u: &SubagentUpdate, ts: Option<i64>, out: &mut Vec<AguiEvent>) {
        let scope = &u.scope_id;
        let is_open = self.open.iter().any(|o| o.scope == *scope);
        match u.kind {
            SubagentKind::Started => {
                if is_open
                    || self.finished.contains(scope)
                    || self.suspended.iter().any(|o| o.scope == *scope)
                {
                    return;
                }
                let started = SubagentStartedEvent {
                    subagent_run_id: scope.clone(),
                    name: u.agent.clone(),
                    parent_tool_call_id: u.tool_call_id.as_ref().map(|id| id.to_string()),
                };
                out.push(AguiEvent::new(
                    EventBody::SubagentStarted(started.clone()),
                    ts,
                ));
                self.open.push(Open {
                    scope: scope.clone(),
                    started,
                });
            }
            SubagentKind::Delta => {
                if !is_open {
                    return;
                }
                let mut content = json!({"agent": u.agent, "progress": u.delta});
                if let Some(data) = &u.data {
                    content["data"] = data.clone();
                }
                let id = format!("{}:subagent:{scope}", u.meta.run_id);
                out.push(
                    activity(id, ACTIVITY_SUBAGENT, content, ts).in_subagent(Some(scope.clone())),
                );
            }
            SubagentKind::Finished => {
                let Some(pos) = self.open.iter().position(|o| o.scope == *scope) else {
                    return;
                };
                self.open.remove(pos);
                self.finished.insert(scope.clone());
                let body = if u.failed {
                    EventBody::SubagentError(SubagentErrorEvent {
                        subagent_run_id: scope.clone(),
                        message: if u.delta.is_empty() {
                            format!("subagent {} failed", u.agent)
                        } else {
                            u.delta.clone()
                        },
                        code: Some("subagent_failed".into()),
                    })
                } else {
                    EventBody::SubagentFinished(SubagentFinishedEvent {
                        subagent_run_id: scope.clone(),
                        result: (!u.delta.is_empty()).then(|| json!(u.delta)),
                        outcome: SubagentOutcome::Success {},
                    })
                };
                out.push(AguiEvent::new(body, ts));
            }
        }
    }

    /// The AG-UI run ends with `interrupt_id`: suspend every open subagent.
    pub(crate) fn suspend_all(
        &mut self,
        interrupt_id: &str,
        ts: Option<i64>,
        out: &mut Vec<AguiEvent>,
    ) {
        for open in std::mem::take(&mut self.open).into_iter().rev() {
            out.push(AguiEvent::new(
                EventBody::SubagentFinished(SubagentFinishedEvent {
                    subagent_run_id: open.scope.clone(),
                    result: None,
                    outcome: SubagentOutcome::Suspended {
                        interrupt_ids: vec![interrupt_id.to_owned()],
                    },
                }),
                ts,
            ));
            self.suspended.insert(0, open);
        }
    }

    /// A resuming AG-UI run began: start the suspended subagents again.
    pub(crate) fn resume_all(&mut self, ts: Option<i64>, out: &mut Vec<AguiEvent>) {
        for open in std::mem::take(&mut self.suspended) {
            out.push(AguiEvent::new(
                EventBody::SubagentStarted(open.started.clone()),
                ts,
            ));
            self.open.push(open);
        }
    }

    /// The core run ended: every subagent still open failed with it.
    pub(crate) fn end_all(&mut self, ts: Option<i64>, out: &mut Vec<AguiEvent>) {
        for open in std::mem::take(&mut self.open).into_iter().rev() {
            out.push(AguiEvent::new(
                EventBody::SubagentError(SubagentErrorEvent {
                    subagent_run_id: open.scope.clone(),
                    message: "the run ended before the subagent finished".into(),
                    code: Some("run_ended".into()),
                }),
                ts,
            ));
            self.finished.insert(open.scope);
        }
    }
}

fn activity(message_id: String, activity_type: &str, content: Value, ts: Option<i64>) -> AguiEvent {
    AguiEvent::new(
        EventBody::ActivitySnapshot(ActivitySnapshotEvent {
            message_id,
            activity_type: activity_type.to_owned(),
            content,
        }),
        ts,
    )
}

fn todo_item(item: &TodoItem) -> Value {
    let mut v = json!({"id": item.id, "content": item.content, "status": item.status});
    if let Some(a) = &item.active_form {
        v["activeForm"] = json!(a);
    }
    if let Some(p) = &item.priority {
        v["priority"] = json!(p);
    }
    v
}

fn capability(c: &CapabilityInvoked, ts: Option<i64>) -> AguiEvent {
    let i = &c.invocation;
    let content = crate::observation_json::capability(i);
    let id = match &i.scope_id {
        Some(scope) => format!("{}:capability:{scope}:{}", c.meta.run_id, i.id),
        None => format!("{}:capability:{}", c.meta.run_id, i.id),
    };
    activity(id, ACTIVITY_CAPABILITY, Value::Object(content), ts).in_subagent(i.scope_id.clone())
}

fn image(i: &ImageContent, ts: Option<i64>) -> AguiEvent {
    let img = &i.image;
    let mut value = json!({"role": i.role, "mimeType": img.mime_type});
    if let Some(d) = &img.data {
        value["data"] = json!(d);
    }
    if let Some(u) = &img.uri {
        value["uri"] = json!(u);
    }
    if let Some(m) = &img.message_id {
        value["messageId"] = json!(m.to_string());
    }
    AguiEvent::new(
        EventBody::Custom(CustomEvent {
            name: CUSTOM_IMAGE.to_owned(),
            value,
        }),
        ts,
    )
}
