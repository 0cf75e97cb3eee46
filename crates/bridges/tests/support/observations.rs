//! A scripted run that shows every observation kind: a todo list (two
//! revisions), a subagent (its start, a child tool call with its result,
//! progress, its end) under the parent's `Task` call with the matching
//! capability invocation, an MCP tool invocation, and an image.
#![allow(dead_code)]

use agent_adaptor_core::driver::{
    CapabilityInvocation, CapabilityKind, Delegation, ImagePayload, ObservationSource, Response,
    StreamKind, StreamPayload, SubagentPhase, SubagentReport, TodoItem, TodoSnapshot, TodoStatus,
    ToolScope,
};
use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
use serde_json::json;

/// The subagent's scope id (the parent's `Task` call id).
pub const SCOPE: &str = "task-1";
/// The final answer.
pub const ANSWER: &str = "Done: the review found nothing.";
/// The image's base64 data.
pub const IMAGE_DATA: &str = "iVBORw0KGgo=";

fn s(p: StreamPayload) -> Step {
    Step::Stream(p)
}

fn src(p: &str) -> ObservationSource {
    ObservationSource::new(p)
}

fn item(id: &str, content: &str, status: TodoStatus) -> TodoItem {
    TodoItem {
        id: id.into(),
        content: content.into(),
        status,
        active_form: None,
        priority: None,
    }
}

fn todos(revision: u64, items: Vec<TodoItem>) -> Step {
    s(StreamPayload::todo_updated(TodoSnapshot {
        scope_id: None,
        revision,
        items,
        source: src("test.todo"),
    }))
}

fn subagent(phase: SubagentPhase, delta: &str) -> Step {
    s(StreamPayload::subagent(SubagentReport {
        scope_id: SCOPE.into(),
        agent: "reviewer".into(),
        phase,
        tool_call_id: Some(SCOPE.into()),
        delta: delta.into(),
        failed: false,
        data: None,
        source: src("test.task"),
    }))
}

fn child() -> Box<Delegation> {
    Box::new(Delegation {
        scope_id: Some(SCOPE.into()),
        parent_scope_id: None,
        parent_tool_call_id: Some(SCOPE.into()),
    })
}

/// The observation run (see the module docs).
pub fn observation_script() -> ScriptedDriver {
    let task = CapabilityInvocation {
        tool_call_id: Some(SCOPE.into()),
        ..CapabilityInvocation::started(
            SCOPE,
            CapabilityKind::Subagent,
            "reviewer",
            src("test.task"),
        )
    };
    let mcp = CapabilityInvocation {
        server: Some("docs".into()),
        tool_call_id: Some("mcp-1".into()),
        ..CapabilityInvocation::started("mcp-1", CapabilityKind::Mcp, "search", src("test.mcp"))
    };
    let steps = vec![
        s(StreamPayload::run_started()),
        todos(
            1,
            vec![
                item("1", "review the change", TodoStatus::InProgress),
                item("2", "report", TodoStatus::Pending),
            ],
        ),
        s(StreamPayload::tool_call_start(
            SCOPE,
            "Task",
            Some(json!({"description": "review"})),
        )),
        s(StreamPayload::capability(task.clone())),
        subagent(SubagentPhase::Started, ""),
        s(StreamKind::ToolCallStart {
            tool_call_id: "child-1".into(),
            name: "read_file".into(),
            args: Some(json!({"path": "a.txt"})),
            scope: ToolScope::Builtin,
            delegation: child(),
        }
        .into()),
        s(StreamPayload::tool_call_end("child-1", None)),
        s(StreamKind::ToolCallResult {
            tool_call_id: "child-1".into(),
            result: Some(json!("contents of a.txt")),
            delegation: child(),
        }
        .into()),
        subagent(SubagentPhase::Delta, "read a.txt"),
        subagent(SubagentPhase::Finished, "nothing to fix"),
        s(StreamPayload::capability(task.finished(None, Some(5)))),
        s(StreamPayload::tool_call_end(SCOPE, None)),
        s(StreamPayload::tool_call_result(
            SCOPE,
            Some(json!("nothing to fix")),
        )),
        s(StreamPayload::capability(mcp.clone())),
        s(StreamPayload::capability(
            mcp.finished(Some("index offline".into()), None),
        )),
        todos(
            2,
            vec![
                item("1", "review the change", TodoStatus::Completed),
                item("2", "report", TodoStatus::InProgress),
            ],
        ),
        s(StreamPayload::image(ImagePayload {
            message_id: None,
            mime_type: "image/png".into(),
            data: Some(IMAGE_DATA.into()),
            uri: None,
            source: src("test.image"),
        })),
        s(StreamPayload::text_start("m1")),
        s(StreamPayload::text_content("m1", ANSWER)),
        s(StreamPayload::text_end("m1")),
        s(StreamPayload::run_finished(None)),
    ];
    ScriptedDriver::new(
        steps,
        Ending::Respond(Box::new(Response {
            output: ANSWER.to_owned(),
            exit_code: Some(0),
            provider: "scripted".into(),
            ..Default::default()
        })),
    )
}

/// A subagent whose child tool call needs an approval: the decision comes
/// while the subagent is open (over AG-UI: the run ends with an interrupt
/// and the subagent is suspended; the resuming run continues it).
pub fn subagent_approval_script() -> ScriptedDriver {
    let mut req = agent_adaptor_core::driver::DecisionRequest::new(
        agent_adaptor_core::driver::DecisionKind::Permission,
        "scripted.can_use_tool",
    );
    req.tool_call_id = "child-1".into();
    req.prompt = "Allow the reviewer to read a.txt?".into();
    let steps = vec![
        s(StreamPayload::run_started()),
        s(StreamPayload::tool_call_start(
            SCOPE,
            "Task",
            Some(json!({})),
        )),
        subagent(SubagentPhase::Started, ""),
        s(StreamKind::ToolCallStart {
            tool_call_id: "child-1".into(),
            name: "read_file".into(),
            args: Some(json!({"path": "a.txt"})),
            scope: ToolScope::Builtin,
            delegation: child(),
        }
        .into()),
        Step::Decide(req),
        s(StreamPayload::tool_call_end("child-1", None)),
        s(StreamKind::ToolCallResult {
            tool_call_id: "child-1".into(),
            result: Some(json!("contents of a.txt")),
            delegation: child(),
        }
        .into()),
        subagent(SubagentPhase::Finished, "nothing to fix"),
        s(StreamPayload::tool_call_end(SCOPE, None)),
        s(StreamPayload::tool_call_result(
            SCOPE,
            Some(json!("nothing to fix")),
        )),
        s(StreamPayload::text_start("m1")),
        s(StreamPayload::text_content("m1", ANSWER)),
        s(StreamPayload::text_end("m1")),
        s(StreamPayload::run_finished(None)),
    ];
    ScriptedDriver::new(
        steps,
        Ending::Respond(Box::new(Response {
            output: ANSWER.to_owned(),
            exit_code: Some(0),
            provider: "scripted".into(),
            ..Default::default()
        })),
    )
}
