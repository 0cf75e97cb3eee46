//! SPI payloads → public events (the translation table of the contract).
//!
//! Pure functions: they decide what a payload becomes, nothing else. The
//! lifecycle was already checked by the sink.

use std::borrow::Cow;
use std::collections::BTreeMap;

use agent_adaptor_driver::{
    Delegation, LifecycleId, OperationalEvent, OutputStream, ProviderCoords, RunEvent, RunFailure,
    StreamKind, StreamPayload, SubagentPhase, ToolScope, Usage,
};
use serde_json::{Value, json};

use crate::event::{
    CapabilityInvoked, Dropped, Event, EventMeta, EventSource, ImageContent, Notice, Phase,
    ProcessInfo, ProcessKind, SubagentKind, SubagentUpdate, TextDelta, Thinking, TodoUpdated,
    ToolCall, ToolResult, notice_kind,
};

/// What a driver payload turns into.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "`Publish` is the common case; boxing it would allocate once per event"
)]
pub(crate) enum Routed {
    /// A public event to publish.
    Publish(Event),
    /// The driver's `run.started`: core already published its own; keep the
    /// provider coordinates.
    Started(ProviderCoords),
    /// The driver's `run.finished`: keep the usage for the final event.
    Finished(Option<Usage>),
    /// The driver's `run.error`: keep the failure.
    Failed(RunFailure),
}

fn source_of(coords: ProviderCoords) -> Option<Box<EventSource>> {
    if coords.is_empty() {
        None
    } else {
        Some(Box::new(EventSource {
            run_id: coords.run_id,
            thread_id: coords.thread_id,
            turn_id: coords.turn_id,
        }))
    }
}

fn delegation_of(delegation: Box<Delegation>) -> Option<Box<Delegation>> {
    (*delegation != Delegation::default()).then_some(delegation)
}

pub(crate) fn notice(
    meta: EventMeta,
    kind: impl Into<Cow<'static, str>>,
    text: String,
    data: Option<Value>,
) -> Event {
    Event::Notice(Notice {
        meta,
        kind: kind.into(),
        text,
        item: None,
        metadata: BTreeMap::new(),
        data,
    })
}

fn tool_call(meta: EventMeta, id: LifecycleId, phase: Phase) -> ToolCall {
    ToolCall {
        meta,
        id,
        name: String::new(),
        args: None,
        args_delta: String::new(),
        result: None,
        phase,
        scope: ToolScope::Builtin,
        delegation: None,
    }
}

/// Translate a stream payload.
pub(crate) fn payload(mut meta: EventMeta, p: StreamPayload) -> Routed {
    let StreamPayload {
        kind,
        role,
        source,
        raw,
    } = p;
    if let StreamKind::RunStarted = kind {
        return Routed::Started(source);
    }
    meta.source = source_of(source);
    // Moves `meta` in: no per-event clone of the envelope.
    let text = |meta: EventMeta, message_id: LifecycleId, text: String, phase: Phase| {
        Event::TextDelta(TextDelta {
            meta,
            message_id,
            text,
            role,
            phase,
        })
    };
    let thinking = |meta: EventMeta, message_id: LifecycleId, text: String, phase: Phase| {
        Event::Thinking(Thinking {
            meta,
            message_id,
            text,
            phase,
        })
    };
    let ev = match kind {
        // Routed above; kept total without a panic path.
        StreamKind::RunStarted => return Routed::Started(ProviderCoords::default()),
        StreamKind::RunFinished { usage } => return Routed::Finished(usage),
        StreamKind::RunError { error } => return Routed::Failed(error),
        StreamKind::StepStarted { name } => notice(
            meta,
            notice_kind::STEP,
            name,
            Some(json!({"phase": "started"})),
        ),
        StreamKind::StepFinished { name } => notice(
            meta,
            notice_kind::STEP,
            name,
            Some(json!({"phase": "finished"})),
        ),
        StreamKind::TextStart { message_id } => text(meta, message_id, String::new(), Phase::Start),
        StreamKind::TextContent { message_id, delta } => {
            text(meta, message_id, delta, Phase::Content)
        }
        StreamKind::TextEnd { message_id } => text(meta, message_id, String::new(), Phase::End),
        StreamKind::ReasoningStart { message_id } => {
            thinking(meta, message_id, String::new(), Phase::Start)
        }
        StreamKind::ReasoningContent { message_id, delta } => {
            thinking(meta, message_id, delta, Phase::Content)
        }
        StreamKind::ReasoningEnd { message_id } => {
            thinking(meta, message_id, String::new(), Phase::End)
        }
        StreamKind::ToolCallStart {
            tool_call_id,
            name,
            args,
            scope,
            delegation,
        } => {
            let mut call = tool_call(meta, tool_call_id, Phase::Start);
            call.name = name;
            call.args = args;
            call.scope = scope;
            call.delegation = delegation_of(delegation);
            Event::ToolCall(call)
        }
        StreamKind::ToolCallArgs {
            tool_call_id,
            delta,
        } => {
            let mut call = tool_call(meta, tool_call_id, Phase::Content);
            call.args_delta = delta;
            Event::ToolCall(call)
        }
        StreamKind::ToolCallEnd {
            tool_call_id,
            result,
        } => {
            let mut call = tool_call(meta, tool_call_id, Phase::End);
            call.result = result;
            Event::ToolCall(call)
        }
        StreamKind::ToolCallResult {
            tool_call_id,
            result,
            delegation,
        } => Event::ToolResult(ToolResult {
            meta,
            id: tool_call_id,
            result,
            delegation: delegation_of(delegation),
        }),
        StreamKind::HitlRequested(req) => notice(
            meta,
            notice_kind::APPROVAL_REQUESTED,
            req.request.prompt.clone(),
            serde_json::to_value(&req.request).ok(),
        ),
        StreamKind::HitlResolved(res) => notice(
            meta,
            notice_kind::APPROVAL_RESOLVED,
            res.result.as_str().to_owned(),
            serde_json::to_value(&*res).ok(),
        ),
        StreamKind::Dropped(d) => Event::Dropped(Dropped {
            meta,
            count: d.dropped_count,
            by_kind: d.by_kind,
            first_sequence: d.first_sequence.unwrap_or(0),
            last_sequence: d.last_sequence.unwrap_or(0),
            reason: if d.reason.is_empty() {
                "provider".into()
            } else {
                d.reason
            },
            source: "provider".into(),
            details: raw,
        }),
        StreamKind::TodoUpdated(snapshot) => Event::TodoUpdated(Box::new(TodoUpdated {
            meta,
            snapshot: *snapshot,
        })),
        StreamKind::Capability(invocation) => {
            Event::CapabilityInvocation(Box::new(CapabilityInvoked {
                meta,
                invocation: *invocation,
            }))
        }
        StreamKind::Subagent(r) => {
            let r = *r;
            Event::SubagentUpdate(SubagentUpdate {
                meta,
                scope_id: r.scope_id,
                agent: r.agent,
                kind: match r.phase {
                    SubagentPhase::Started => SubagentKind::Started,
                    SubagentPhase::Delta => SubagentKind::Delta,
                    SubagentPhase::Finished => SubagentKind::Finished,
                },
                tool_call_id: r.tool_call_id,
                failed: r.failed,
                delta: r.delta,
                data: r.data,
                origin: r.source,
            })
        }
        StreamKind::Image(image) => Event::ImageContent(Box::new(ImageContent {
            meta,
            role,
            image: *image,
        })),
        StreamKind::Custom { name, text } => {
            return Routed::Publish(notice(meta, name, text, raw));
        }
        // A kind added to the SPI later and not yet mapped: keep it as a
        // notice so nothing with audit value is swallowed.
        other => notice(
            meta,
            other.name().to_owned(),
            String::new(),
            serde_json::to_value(&other).ok(),
        ),
    };
    Routed::Publish(ev)
}

/// Translate an operational event.
pub(crate) fn run_event(meta: EventMeta, ev: RunEvent) -> Event {
    let op = |meta: EventMeta, kind: &'static str, o: OperationalEvent| {
        Event::Notice(Notice {
            meta,
            kind: kind.into(),
            text: o.text,
            item: None,
            metadata: o.metadata,
            data: o.data,
        })
    };
    match ev {
        RunEvent::Chunk { stream, bytes } => Event::ProcessInfo(ProcessInfo {
            meta,
            kind: match stream {
                OutputStream::Stdout => ProcessKind::Stdout,
                OutputStream::Stderr => ProcessKind::Stderr,
            },
            text: String::new(),
            bytes,
            metadata: BTreeMap::new(),
            data: None,
        }),
        RunEvent::Item(item) => Event::Notice(Notice {
            meta,
            kind: notice_kind::TRANSCRIPT_ITEM.into(),
            text: String::new(),
            item: Some(item.into_arc()),
            metadata: BTreeMap::new(),
            data: None,
        }),
        RunEvent::Spawn(o) => Event::ProcessInfo(ProcessInfo {
            meta,
            kind: ProcessKind::Spawn,
            text: o.text,
            bytes: Default::default(),
            metadata: o.metadata,
            data: o.data,
        }),
        RunEvent::Invocation(o) => op(meta, notice_kind::INVOCATION, o),
        RunEvent::Runtime(o) => op(meta, notice_kind::RUNTIME, o),
        RunEvent::Lifecycle(o) => op(meta, notice_kind::LIFECYCLE, o),
        other => op(meta, other.kind_name(), OperationalEvent::default()),
    }
}

#[cfg(test)]
mod tests {
    use agent_adaptor_driver::{
        CapabilityInvocation, CapabilityKind, ImagePayload, ObservationSource, SubagentPhase,
        SubagentReport, TodoItem, TodoSnapshot, TodoStatus,
    };

    use super::*;

    fn meta() -> EventMeta {
        EventMeta::unstamped("run_1".into(), Some("t1".into()))
    }

    fn published(p: StreamPayload) -> Event {
        match payload(meta(), p) {
            Routed::Publish(e) => e,
            other => panic!("not published: {other:?}"),
        }
    }

    #[test]
    fn observations_become_their_typed_events_losslessly() {
        let snapshot = TodoSnapshot {
            scope_id: Some("task_1".into()),
            revision: 2,
            items: vec![TodoItem {
                id: "1".into(),
                content: "write".into(),
                status: TodoStatus::InProgress,
                active_form: Some("Writing".into()),
                priority: Some("high".into()),
            }],
            source: ObservationSource::new("claude.TodoWrite"),
        };
        let Event::TodoUpdated(t) = published(StreamPayload::todo_updated(snapshot.clone())) else {
            panic!("not a todo event");
        };
        assert_eq!(t.snapshot, snapshot);
        assert_eq!(t.meta.thread_key.as_deref(), Some("t1"));

        let inv = CapabilityInvocation::started(
            "call_1",
            CapabilityKind::Skill,
            "pdf",
            ObservationSource::new("claude.Skill"),
        );
        let Event::CapabilityInvocation(c) = published(StreamPayload::capability(inv.clone()))
        else {
            panic!("not a capability event");
        };
        assert_eq!(c.invocation, inv);

        let report = SubagentReport {
            scope_id: "toolu_9".into(),
            agent: "Explore".into(),
            phase: SubagentPhase::Finished,
            tool_call_id: Some("toolu_9".into()),
            delta: "done".into(),
            failed: true,
            data: Some(json!({"status": "error"})),
            source: ObservationSource::new("claude.Task"),
        };
        let Event::SubagentUpdate(s) = published(StreamPayload::subagent(report)) else {
            panic!("not a subagent event");
        };
        assert_eq!(
            (s.scope_id.as_str(), s.agent.as_str(), s.kind, s.failed),
            ("toolu_9", "Explore", SubagentKind::Finished, true)
        );
        assert_eq!(s.tool_call_id.as_deref(), Some("toolu_9"));
        assert_eq!(
            (s.delta.as_str(), s.data),
            ("done", Some(json!({"status": "error"})))
        );
        assert_eq!(s.origin.provider_protocol, "claude.Task");

        let image = ImagePayload {
            message_id: Some("m1".into()),
            mime_type: "image/png".into(),
            data: Some("AA==".into()),
            uri: None,
            source: ObservationSource::new("acp.image"),
        };
        let Event::ImageContent(i) = published(StreamPayload::image(image.clone())) else {
            panic!("not an image event");
        };
        assert_eq!(
            (i.image, i.role),
            (image, agent_adaptor_driver::Role::Assistant)
        );
    }
}
