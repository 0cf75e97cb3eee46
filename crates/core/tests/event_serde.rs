//! Every public event survives a JSON round trip (what a durable event log
//! stores and replays): serialize, deserialize, serialize again — the same
//! JSON, for every kind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_adaptor_core::driver::{Delegation, Role, ToolScope, TranscriptItem, Usage};
use agent_adaptor_core::{
    ApprovalError, ApprovalKind, CapabilityInvocation, CapabilityInvoked, CapabilityKind, Dropped,
    Event, EventMeta, EventSource, FailureReason, ImageContent, ImagePayload, LifecycleId, Notice,
    ObservationSource, Phase, ProcessInfo, ProcessKind, RunFinished, RunStarted, SubagentKind,
    SubagentUpdate, TextDelta, Thinking, TodoItem, TodoSnapshot, TodoStatus, TodoUpdated, ToolCall,
    ToolResult,
};
use bytes::Bytes;
use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

fn meta(sequence: u64) -> EventMeta {
    EventMeta {
        run_id: "run_1".into(),
        thread_key: Some("t1".into()),
        sequence,
        time: Utc
            .with_ymd_and_hms(2026, 12, 2, 10, 0, sequence as u32)
            .unwrap(),
        source: Some(Box::new(EventSource {
            run_id: None,
            thread_id: Some("sess".into()),
            turn_id: None,
        })),
    }
}

fn one_of_each() -> Vec<Event> {
    let id = LifecycleId::from("m1");
    vec![
        Event::RunStarted(RunStarted { meta: meta(1) }),
        Event::TextDelta(TextDelta {
            meta: meta(2),
            message_id: id.clone(),
            text: "hé".into(),
            role: Role::Assistant,
            phase: Phase::Content,
        }),
        Event::Thinking(Thinking {
            meta: meta(3),
            message_id: id,
            text: String::new(),
            phase: Phase::End,
        }),
        Event::ToolCall(ToolCall {
            meta: meta(4),
            id: "t1".into(),
            name: "search".into(),
            args: Some(json!({"q": "x", "n": 2})),
            args_delta: String::new(),
            result: None,
            phase: Phase::Start,
            scope: ToolScope::Mcp {
                server: "docs".into(),
                tool: "search".into(),
            },
            delegation: Some(Box::new(Delegation {
                scope_id: Some("task_1".into()),
                parent_scope_id: None,
                parent_tool_call_id: Some("task_1".into()),
            })),
        }),
        Event::ToolResult(ToolResult {
            meta: meta(5),
            id: "t1".into(),
            result: Some(json!({"ok": true})),
            delegation: None,
        }),
        Event::ProcessInfo(ProcessInfo {
            meta: meta(6),
            kind: ProcessKind::Stdout,
            text: String::new(),
            bytes: Bytes::from_static(b"{\"type\":\"x\"}\n\xff"),
            metadata: BTreeMap::new(),
            data: None,
        }),
        Event::Notice(Notice {
            meta: meta(7),
            kind: "transcript.item".into(),
            text: String::new(),
            item: Some(Arc::new(TranscriptItem::assistant("hi"))),
            metadata: BTreeMap::from([("k".to_owned(), "v".to_owned())]),
            data: None,
        }),
        Event::Dropped(Dropped {
            meta: meta(8),
            count: 2,
            by_kind: BTreeMap::from([("text.content".to_owned(), 2)]),
            first_sequence: 2,
            last_sequence: 3,
            reason: "slow_consumer".into(),
            source: "sdk.event_broker".into(),
            details: Some(json!({"buffer": 1})),
        }),
        Event::SubagentUpdate(SubagentUpdate {
            meta: meta(9),
            scope_id: "task_1".into(),
            agent: "Explore".into(),
            kind: SubagentKind::Started,
            tool_call_id: Some("task_1".into()),
            failed: false,
            delta: String::new(),
            data: None,
            origin: ObservationSource::new("claude.Task"),
        }),
        Event::TodoUpdated(Box::new(TodoUpdated {
            meta: meta(10),
            snapshot: TodoSnapshot {
                scope_id: None,
                revision: 1,
                items: vec![TodoItem {
                    id: "1".into(),
                    content: "write".into(),
                    status: TodoStatus::Pending,
                    active_form: None,
                    priority: None,
                }],
                source: ObservationSource::new("codex.todo_list"),
            },
        })),
        Event::CapabilityInvocation(Box::new(CapabilityInvoked {
            meta: meta(11),
            invocation: CapabilityInvocation::started(
                "c1",
                CapabilityKind::Skill,
                "pdf",
                ObservationSource::new("claude.Skill"),
            )
            .finished(Some("failed".into()), Some(5)),
        })),
        Event::ImageContent(Box::new(ImageContent {
            meta: meta(12),
            role: Role::Assistant,
            image: ImagePayload {
                message_id: None,
                mime_type: "image/png".into(),
                data: None,
                uri: Some("file:///tmp/a.png".into()),
                source: ObservationSource::new("acp.image"),
            },
        })),
        Event::RunFinished(RunFinished {
            meta: meta(13),
            usage: Some(Usage {
                input_tokens: Some(3),
                ..Usage::default()
            }),
            failed: true,
            reason: Some(FailureReason::Other("provider_quota".into())),
            message: "quota".into(),
        }),
    ]
}

#[test]
fn every_kind_round_trips_through_json() {
    let events = one_of_each();
    for event in &events {
        let first = serde_json::to_value(event).unwrap();
        let back: Event = serde_json::from_value(first.clone())
            .unwrap_or_else(|e| panic!("{} did not decode: {e}\n{first}", event.kind_name()));
        assert_eq!(back.kind_name(), event.kind_name());
        assert_eq!(back.meta(), event.meta());
        assert_eq!(serde_json::to_value(&back).unwrap(), first);
    }
}

#[test]
fn well_known_failure_reasons_decode_to_their_variants() {
    for reason in [
        FailureReason::Cancelled,
        FailureReason::Infrastructure,
        FailureReason::ApprovalTimeout,
        FailureReason::Other("x".into()),
    ] {
        let v = serde_json::to_value(&reason).unwrap();
        assert_eq!(serde_json::from_value::<FailureReason>(v).unwrap(), reason);
    }
}

#[test]
fn a_replayed_approval_request_cannot_be_answered() {
    let json = json!({
        "type": "approval_request",
        "meta": {"run_id": "run_1", "sequence": 4, "time": "2026-12-02T10:00:00Z"},
        "id": "req_1",
        "kind": "permission",
        "title": "Allow Bash?",
        "source": "claude.can_use_tool",
        "created_at": "2026-12-02T10:00:00Z",
        "attempt": 0
    });
    let Event::ApprovalRequest(req) = serde_json::from_value::<Event>(json).unwrap() else {
        panic!("not an approval request");
    };
    assert_eq!(req.kind, ApprovalKind::Permission);
    assert_eq!(req.approve(), Err(ApprovalError::Unavailable));
}

#[test]
fn malformed_events_are_errors_not_panics() {
    for bad in [
        json!({"type": "no_such_kind", "meta": {}}),
        json!({"type": "text_delta"}),
        json!({"type": "todo_updated", "meta": {"run_id": "r", "sequence": 1, "time": "2026-12-02T10:00:00Z"}, "revision": "one"}),
        Value::Null,
    ] {
        assert!(serde_json::from_value::<Event>(bad).is_err());
    }
}
