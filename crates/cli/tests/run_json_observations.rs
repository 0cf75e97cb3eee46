//! `run --json` lines of the observation events, exactly: a scripted run
//! (core's scripted driver through the real pipeline) with a todo list, a
//! subagent with a child tool call, a skill invocation and an image, each
//! event written by [`event_line`] as `run --json` writes it. The envelope
//! keys (`sequence`, `run_id`, `time`) are checked, then left out of the
//! comparison.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_adaptor_cli::json_out::event_line;
use agent_adaptor_core::driver::{
    CapabilityInvocation, CapabilityKind, Delegation, ImagePayload, ObservationSource, Response,
    StreamKind, StreamPayload, SubagentPhase, SubagentReport, TodoItem, TodoSnapshot, TodoStatus,
    ToolScope,
};
use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
use agent_adaptor_core::{Agent, Runner};
use futures::StreamExt;
use serde_json::{Value, json};

fn s(p: StreamPayload) -> Step {
    Step::Stream(p)
}

fn subagent(phase: SubagentPhase, delta: &str, failed: bool) -> Step {
    s(StreamPayload::subagent(SubagentReport {
        scope_id: "task-1".into(),
        agent: "reviewer".into(),
        phase,
        tool_call_id: Some("task-1".into()),
        delta: delta.into(),
        failed,
        data: None,
        source: ObservationSource::new("test.task"),
    }))
}

fn script() -> ScriptedDriver {
    let skill = CapabilityInvocation::started(
        "skill-1",
        CapabilityKind::Skill,
        "pdf",
        ObservationSource::new("test.skill"),
    );
    ScriptedDriver::new(
        vec![
            s(StreamPayload::run_started()),
            s(StreamPayload::todo_updated(TodoSnapshot {
                scope_id: None,
                revision: 1,
                items: vec![TodoItem {
                    id: "1".into(),
                    content: "review the change".into(),
                    status: TodoStatus::InProgress,
                    active_form: Some("Reviewing the change".into()),
                    priority: Some("high".into()),
                }],
                source: ObservationSource::new("test.todo"),
            })),
            subagent(SubagentPhase::Started, "", false),
            s(StreamKind::ToolCallStart {
                tool_call_id: "child-1".into(),
                name: "read_file".into(),
                args: Some(json!({"path": "a.txt"})),
                scope: ToolScope::Builtin,
                delegation: Box::new(Delegation {
                    scope_id: Some("task-1".into()),
                    parent_scope_id: None,
                    parent_tool_call_id: Some("task-1".into()),
                }),
            }
            .into()),
            s(StreamPayload::tool_call_end("child-1", None)),
            subagent(SubagentPhase::Delta, "read a.txt", false),
            subagent(SubagentPhase::Finished, "could not parse a.txt", true),
            s(StreamPayload::capability(skill.clone())),
            s(StreamPayload::capability(skill.finished(None, Some(7)))),
            s(StreamPayload::image(ImagePayload {
                message_id: None,
                mime_type: "image/png".into(),
                data: None,
                uri: Some("https://example.com/chart.png".into()),
                source: ObservationSource::new("test.image"),
            })),
            s(StreamPayload::run_finished(None)),
        ],
        Ending::Respond(Box::new(Response {
            output: "done".into(),
            exit_code: Some(0),
            ..Default::default()
        })),
    )
}

#[tokio::test]
async fn observation_lines_have_stable_field_names() {
    let agent = Agent::new(script());
    let mut stream = agent.stream("review");
    let mut lines = Vec::new();
    while let Some(event) = stream.next().await {
        let mut line: Value = serde_json::from_str(&event_line(&event)).unwrap();
        let obj = line.as_object_mut().unwrap();
        for key in ["sequence", "run_id", "time"] {
            assert!(obj.remove(key).is_some(), "{key} missing: {obj:?}");
        }
        lines.push(line);
    }
    stream.result().await.unwrap();
    let want = [
        json!({"type": "run.started"}),
        json!({"type": "todo.updated", "revision": 1, "provider_protocol": "test.todo",
               "items": [{"id": "1", "content": "review the change", "status": "in_progress",
                          "active_form": "Reviewing the change", "priority": "high"}]}),
        json!({"type": "subagent.started", "scope_id": "task-1", "agent": "reviewer",
               "kind": "started", "tool_call_id": "task-1", "provider_protocol": "test.task"}),
        json!({"type": "tool_call.start", "id": "child-1", "name": "read_file",
               "args": {"path": "a.txt"}, "phase": "start",
               "delegation": {"scope_id": "task-1", "parent_tool_call_id": "task-1"}}),
        json!({"type": "tool_call.end", "id": "child-1", "phase": "end"}),
        json!({"type": "subagent.delta", "scope_id": "task-1", "agent": "reviewer",
               "kind": "delta", "tool_call_id": "task-1", "delta": "read a.txt",
               "provider_protocol": "test.task"}),
        json!({"type": "subagent.finished", "scope_id": "task-1", "agent": "reviewer",
               "kind": "finished", "tool_call_id": "task-1", "failed": true,
               "delta": "could not parse a.txt", "provider_protocol": "test.task"}),
        json!({"type": "capability.invocation", "id": "skill-1", "capability": "skill",
               "name": "pdf", "operation": "activate", "phase": "started",
               "provider_protocol": "test.skill"}),
        json!({"type": "capability.invocation", "id": "skill-1", "capability": "skill",
               "name": "pdf", "operation": "activate", "phase": "completed", "duration_ms": 7,
               "provider_protocol": "test.skill"}),
        json!({"type": "image", "role": "assistant", "mime_type": "image/png",
               "uri": "https://example.com/chart.png", "provider_protocol": "test.image"}),
    ];
    for (i, w) in want.iter().enumerate() {
        assert_eq!(&lines[i], w, "line {i}");
    }
    // What follows is the run's own ending.
    assert_eq!(lines.last().unwrap()["type"], "run.finished", "{lines:#?}");
}
