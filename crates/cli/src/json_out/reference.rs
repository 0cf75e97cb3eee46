//! The guard of [`write_event`](super::write_event): the line as it was
//! first built (a `serde_json::Value` map of the envelope, overwritten by
//! the event's own fields), and a comparison of both for one event of each
//! kind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_adaptor_core::driver::{
    DecisionKind, DecisionRequest, Delegation, LifecycleId, Role, StreamPayload, ToolScope,
    TranscriptItem, Usage,
};
use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
use agent_adaptor_core::{
    Agent, CapabilityInvocation, CapabilityInvoked, CapabilityKind, Dropped, Event, EventMeta,
    EventSource, FailureReason, ImageContent, ImagePayload, Notice, ObservationSource, Phase,
    ProcessInfo, ProcessKind, RunFinished, RunStarted, Runner, SubagentKind, SubagentUpdate,
    TextDelta, Thinking, TodoItem, TodoSnapshot, TodoStatus, TodoUpdated, ToolCall, ToolResult,
};
use futures::StreamExt;
use serde_json::{Map, Value, json};

/// The line of `event` the first way: a map built through `to_value`.
fn reference_line(event: &Event) -> String {
    let mut out = Map::new();
    out.insert("type".into(), Value::String(event.kind_name().into_owned()));
    let meta = event.meta();
    out.insert("sequence".into(), json!(meta.sequence));
    out.insert("run_id".into(), json!(&*meta.run_id));
    out.insert("time".into(), json!(meta.time));
    if let Some(key) = &meta.thread_key {
        out.insert("thread_key".into(), json!(&**key));
    }
    if let Some(source) = &meta.source {
        out.insert("source".into(), json!(source));
    }
    if let Ok(Value::Object(fields)) = serde_json::to_value(event) {
        for (k, v) in fields {
            if k == "type" || k == "meta" {
                continue;
            }
            out.insert(k, v);
        }
    }
    if let Event::ProcessInfo(p) = event
        && !p.bytes.is_empty()
    {
        out.insert(
            "bytes".into(),
            Value::String(String::from_utf8_lossy(&p.bytes).into_owned()),
        );
    }
    Value::Object(out).to_string()
}

/// An envelope with every optional key present.
fn meta(sequence: u64) -> EventMeta {
    EventMeta {
        run_id: Arc::from("run-1"),
        thread_key: Some(Arc::from("thread-1")),
        sequence,
        time: chrono::Utc::now(),
        source: Some(Box::new(EventSource {
            run_id: Some("provider-run".into()),
            thread_id: Some("session-1".into()),
            turn_id: None,
        })),
    }
}

/// One event of each kind that can be built outside core (the approval
/// request comes from a run, see the test).
fn built_events() -> Vec<Event> {
    let id = LifecycleId::from("m1");
    let delegation = Some(Box::new(Delegation {
        scope_id: Some("s1".into()),
        ..Delegation::default()
    }));
    let mut metadata = BTreeMap::new();
    metadata.insert("pid".to_owned(), "42".to_owned());
    vec![
        Event::RunStarted(RunStarted { meta: meta(1) }),
        Event::TextDelta(TextDelta {
            meta: meta(2),
            message_id: id.clone(),
            text: "hé \"quoted\"\n".into(),
            role: Role::Assistant,
            phase: Phase::Content,
        }),
        Event::Thinking(Thinking {
            meta: meta(3),
            message_id: id.clone(),
            text: String::new(),
            phase: Phase::Start,
        }),
        Event::ToolCall(ToolCall {
            meta: meta(4),
            id: id.clone(),
            name: "Bash".into(),
            args: Some(json!({"command": "ls", "n": [1, 2.5, null]})),
            args_delta: String::new(),
            result: None,
            phase: Phase::Start,
            scope: ToolScope::Mcp {
                server: "docs".into(),
                tool: "lookup".into(),
            },
            delegation: delegation.clone(),
        }),
        Event::ToolResult(ToolResult {
            meta: meta(5),
            id,
            result: Some(json!("ok")),
            delegation,
        }),
        Event::ProcessInfo(ProcessInfo {
            meta: meta(6),
            kind: ProcessKind::Stdout,
            text: String::new(),
            bytes: (b"raw \xff line\n" as &'static [u8]).into(),
            metadata: metadata.clone(),
            data: None,
        }),
        Event::ProcessInfo(ProcessInfo {
            meta: meta(7),
            kind: ProcessKind::Spawn,
            text: "claude -p".into(),
            bytes: Default::default(),
            metadata,
            data: Some(json!({"pid": 42})),
        }),
        Event::Notice(Notice {
            meta: meta(8),
            kind: "transcript.item".into(),
            text: String::new(),
            item: Some(Arc::new(TranscriptItem::assistant("hello"))),
            metadata: BTreeMap::new(),
            data: None,
        }),
        Event::Dropped(Dropped {
            meta: meta(9),
            count: 3,
            by_kind: BTreeMap::from([("text.content".to_owned(), 3)]),
            first_sequence: 2,
            last_sequence: 4,
            reason: "slow_consumer".into(),
            source: "sdk.event_broker".into(),
            details: None,
        }),
        Event::SubagentUpdate(SubagentUpdate {
            meta: meta(10),
            scope_id: "toolu_task".into(),
            agent: "reviewer".into(),
            kind: SubagentKind::Delta,
            tool_call_id: Some(LifecycleId::from("toolu_task")),
            failed: false,
            delta: "…".into(),
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
                    content: "write the test".into(),
                    status: TodoStatus::InProgress,
                    active_form: Some("Writing the test".into()),
                    priority: None,
                }],
                source: ObservationSource::new("claude.TodoWrite"),
            },
        })),
        Event::CapabilityInvocation(Box::new(CapabilityInvoked {
            meta: meta(10),
            invocation: CapabilityInvocation {
                server: Some("docs".into()),
                tool_call_id: Some(LifecycleId::from("toolu_mcp")),
                ..CapabilityInvocation::started(
                    "toolu_mcp",
                    CapabilityKind::Mcp,
                    "search",
                    ObservationSource::new("claude.mcp"),
                )
            }
            .finished(Some("not found".into()), Some(12)),
        })),
        Event::ImageContent(Box::new(ImageContent {
            meta: meta(10),
            role: Role::Assistant,
            image: ImagePayload {
                message_id: None,
                mime_type: "image/png".into(),
                data: Some("iVBORw0KGgo=".into()),
                uri: None,
                source: ObservationSource::new("acp.image"),
            },
        })),
        Event::RunFinished(RunFinished {
            meta: meta(11),
            usage: Some(Usage {
                input_tokens: Some(10),
                ..Usage::default()
            }),
            failed: true,
            reason: Some(FailureReason::Cancelled),
            message: "cancelled".into(),
        }),
    ]
}

/// The events of a scripted run that asks for one approval (approved).
async fn run_events() -> Vec<Event> {
    let mut ask = DecisionRequest::new(DecisionKind::Permission, "test.shell");
    ask.prompt = "Run `ls`?".into();
    ask.tool_call_id = "t1".into();
    ask.payload = Some(json!({"command": "ls"}));
    let driver = ScriptedDriver::new(
        vec![
            Step::Stream(StreamPayload::run_started()),
            Step::Decide(ask),
            Step::Stream(StreamPayload::text_content("m1", "done")),
            Step::Stream(StreamPayload::run_finished(None)),
        ],
        Ending::Respond(Box::default()),
    );
    let agent = Agent::new(driver);
    let mut stream = agent.stream("hi");
    let mut events = Vec::new();
    while let Some(mut event) = stream.next().await {
        if let Event::ApprovalRequest(req) = &event {
            req.approve().unwrap();
        }
        *event.meta_mut() = EventMeta {
            sequence: event.meta().sequence,
            time: event.meta().time,
            ..meta(0)
        };
        events.push(event);
    }
    let _ = stream.result().await;
    events
}

#[tokio::test]
async fn each_kind_of_event_gives_the_reference_line() {
    let mut events = built_events();
    events.extend(run_events().await);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequest(_))),
        "the run asked for no approval"
    );
    for event in &events {
        let new: Value = serde_json::from_str(&super::event_line(event)).unwrap();
        let old: Value = serde_json::from_str(&reference_line(event)).unwrap();
        assert_eq!(new, old, "{}", event.kind_name());
    }
}

#[test]
fn a_line_holds_each_key_once() {
    for event in built_events() {
        let line = super::event_line(&event);
        let pairs: Vec<(String, Value)> = serde_json::from_str::<Value>(&line)
            .map(|_| {
                let mut de = serde_json::Deserializer::from_str(&line);
                keys(&mut de)
            })
            .unwrap();
        let mut names: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all, "{line}");
    }
}

/// The top-level keys of one object, in order, duplicates kept.
fn keys(de: &mut serde_json::Deserializer<serde_json::de::StrRead<'_>>) -> Vec<(String, Value)> {
    use serde::Deserializer;
    use serde::de::{MapAccess, Visitor};
    struct Pairs;
    impl<'de> Visitor<'de> for Pairs {
        type Value = Vec<(String, Value)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(pair) = map.next_entry::<String, Value>()? {
                out.push(pair);
            }
            Ok(out)
        }
    }
    de.deserialize_map(Pairs).unwrap()
}
