//! The reference driver's observations: a todo list, a skill invocation, a
//! subagent and an image, each well formed — or, with an OBS fault, broken
//! the way its clause forbids.

use agent_adaptor_driver::{
    CapabilityInvocation, CapabilityKind, ImagePayload, ObservationSource, StreamPayload,
    SubagentPhase, SubagentReport, TodoItem, TodoSnapshot, TodoStatus,
};
use serde_json::json;

use super::Fault;

fn source() -> ObservationSource {
    ObservationSource::new("reference.observe")
}

fn todo(revision: u64, content: &str) -> StreamPayload {
    StreamPayload::todo_updated(TodoSnapshot {
        scope_id: None,
        revision,
        items: vec![TodoItem {
            id: "1".into(),
            content: content.into(),
            status: TodoStatus::InProgress,
            active_form: None,
            priority: None,
        }],
        source: source(),
    })
}

fn subagent(phase: SubagentPhase) -> StreamPayload {
    StreamPayload::subagent(SubagentReport {
        scope_id: "sub-1".into(),
        agent: "helper".into(),
        phase,
        tool_call_id: None,
        delta: String::new(),
        failed: false,
        data: None,
        source: source(),
    })
}

/// The observation payloads of a run (inserted after the tool call), with
/// `fault` applied when it is an OBS fault.
pub(super) fn payloads(fault: Option<Fault>) -> Vec<StreamPayload> {
    let mut skill =
        CapabilityInvocation::started("cap-1", CapabilityKind::Skill, "summarize", source());
    if fault == Some(Fault::BlankCapabilityName) {
        skill.name = " ".into();
    }
    let done = skill.finished(None, Some(3));
    let mut todo1 = todo(1, "Answer the prompt");
    if fault == Some(Fault::RawOnObservation) {
        todo1 = todo1.with_raw(json!({"provider": "field"}));
    }
    let mut p = vec![
        todo1,
        StreamPayload::capability(skill),
        StreamPayload::capability(done),
        subagent(SubagentPhase::Started),
        subagent(SubagentPhase::Finished),
        StreamPayload::image(ImagePayload {
            message_id: None,
            mime_type: "image/png".into(),
            data: (fault != Some(Fault::ImageWithoutData)).then(|| "iVBORw0KGgo=".into()),
            uri: None,
            source: source(),
        }),
    ];
    match fault {
        Some(Fault::UnfinishedCapability) => {
            p.remove(2);
        }
        Some(Fault::EmptyTodoItem) => p.push(todo(2, "")),
        Some(Fault::RepeatedTodoRevision) => p.push(todo(1, "Answer it again")),
        Some(Fault::SubagentFinishedTwice) => p.push(subagent(SubagentPhase::Finished)),
        _ => {}
    }
    p
}
