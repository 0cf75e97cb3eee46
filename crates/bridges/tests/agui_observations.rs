//! Observations over AG-UI, frame by frame: a scripted run with a todo
//! list, a subagent with a child tool call, capability invocations and an
//! image, read off the wire as the bridge sends it. Timestamps are checked
//! to be integers, then left out of the comparison; activity message ids
//! carry the core run id (the `x-agent-adaptor-run-id` header).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/agui_server.rs"]
mod agui_server;
#[path = "support/observations.rs"]
mod observations;

use agent_adaptor_bridges::agui::{RUN_ID_HEADER, SseOptions};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observations_become_activities_subagent_events_and_a_custom_image() {
    let t = agui_server::serve(observations::observation_script(), SseOptions::agui()).await;
    let (status, headers, events, body) = agui_server::post_sse(
        &reqwest::Client::new(),
        &t.url,
        &agui_server::run_input("t-obs", "r-obs", "review it"),
        &[],
    )
    .await;
    assert!(status.is_success(), "{status}: {body}");
    let run = headers[RUN_ID_HEADER].to_str().unwrap().to_owned();
    let frames: Vec<Value> = events
        .iter()
        .map(|e| {
            let mut v = e.json();
            let ts = v.as_object_mut().unwrap().remove("timestamp");
            assert!(ts.as_ref().is_some_and(Value::is_i64), "{v}");
            v
        })
        .collect();
    let todo_id = format!("{run}:todo");
    let expected = vec![
        json!({"type": "RUN_STARTED", "threadId": "t-obs", "runId": "r-obs"}),
        json!({"type": "ACTIVITY_SNAPSHOT", "messageId": todo_id, "activityType": "todo",
               "content": {"revision": 1, "items": [
                   {"id": "1", "content": "review the change", "status": "in_progress"},
                   {"id": "2", "content": "report", "status": "pending"}]}}),
        json!({"type": "TOOL_CALL_START", "toolCallId": "task-1", "toolCallName": "Task"}),
        json!({"type": "ACTIVITY_SNAPSHOT", "messageId": format!("{run}:capability:task-1"),
               "activityType": "capability",
               "content": {"capability": "subagent", "name": "reviewer", "operation": "spawn",
                           "phase": "started", "toolCallId": "task-1"}}),
        json!({"type": "SUBAGENT_STARTED", "subagentRunId": "task-1", "name": "reviewer",
               "parentToolCallId": "task-1"}),
        json!({"type": "TOOL_CALL_START", "toolCallId": "child-1", "toolCallName": "read_file",
               "subagentRunId": "task-1"}),
        json!({"type": "TOOL_CALL_ARGS", "toolCallId": "child-1", "delta": "{\"path\":\"a.txt\"}",
               "subagentRunId": "task-1"}),
        json!({"type": "TOOL_CALL_END", "toolCallId": "child-1", "subagentRunId": "task-1"}),
        json!({"type": "TOOL_CALL_RESULT", "messageId": "child-1-result", "toolCallId": "child-1",
               "content": "contents of a.txt", "role": "tool", "subagentRunId": "task-1"}),
        json!({"type": "ACTIVITY_SNAPSHOT", "messageId": format!("{run}:subagent:task-1"),
               "activityType": "subagent", "content": {"agent": "reviewer", "progress": "read a.txt"},
               "subagentRunId": "task-1"}),
        json!({"type": "SUBAGENT_FINISHED", "subagentRunId": "task-1", "result": "nothing to fix",
               "outcome": {"type": "success"}}),
        json!({"type": "ACTIVITY_SNAPSHOT", "messageId": format!("{run}:capability:task-1"),
               "activityType": "capability",
               "content": {"capability": "subagent", "name": "reviewer", "operation": "spawn",
                           "phase": "completed", "toolCallId": "task-1", "durationMs": 5}}),
        json!({"type": "TOOL_CALL_ARGS", "toolCallId": "task-1", "delta": "{\"description\":\"review\"}"}),
        json!({"type": "TOOL_CALL_END", "toolCallId": "task-1"}),
        json!({"type": "TOOL_CALL_RESULT", "messageId": "task-1-result", "toolCallId": "task-1",
               "content": "nothing to fix", "role": "tool"}),
        json!({"type": "ACTIVITY_SNAPSHOT", "messageId": format!("{run}:capability:mcp-1"),
               "activityType": "capability",
               "content": {"capability": "mcp", "name": "search", "server": "docs",
                           "operation": "activate", "phase": "started", "toolCallId": "mcp-1"}}),
        json!({"type": "ACTIVITY_SNAPSHOT", "messageId": format!("{run}:capability:mcp-1"),
               "activityType": "capability",
               "content": {"capability": "mcp", "name": "search", "server": "docs",
                           "operation": "activate", "phase": "failed", "toolCallId": "mcp-1",
                           "error": "index offline"}}),
        json!({"type": "ACTIVITY_SNAPSHOT", "messageId": todo_id, "activityType": "todo",
               "content": {"revision": 2, "items": [
                   {"id": "1", "content": "review the change", "status": "completed"},
                   {"id": "2", "content": "report", "status": "in_progress"}]}}),
        json!({"type": "CUSTOM", "name": "agent_adaptor.image",
               "value": {"role": "assistant", "mimeType": "image/png", "data": observations::IMAGE_DATA}}),
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": observations::ANSWER}),
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m1"}),
        json!({"type": "RUN_FINISHED", "threadId": "t-obs", "runId": "r-obs",
               "result": observations::ANSWER, "outcome": {"type": "success"}}),
    ];
    for (i, (got, want)) in frames.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "frame {i}");
    }
    assert_eq!(frames.len(), expected.len(), "{frames:#?}");
}
