//! Unit tests of the observation rules (OBS-01–08) through the checker.

use serde_json::json;

use crate::descriptor::StreamCapability;
use crate::lifecycle::{LifecycleChecker, Violation};
use crate::observation::*;
use crate::stream::StreamPayload;

fn src(p: &str) -> ObservationSource {
    ObservationSource::new(p)
}

fn checker(observation: ObservationSupport) -> LifecycleChecker {
    let mut c = LifecycleChecker::new(StreamCapability {
        native: true,
        observation,
        ..Default::default()
    });
    accept(&mut c, StreamPayload::run_started());
    c
}

fn all() -> LifecycleChecker {
    checker(ObservationSupport::ALL)
}

#[track_caller]
fn accept(c: &mut LifecycleChecker, p: StreamPayload) {
    if let Err(v) = c.check(&p) {
        panic!("{} was rejected: {v}", p.kind.name());
    }
}

#[track_caller]
fn reject(c: &mut LifecycleChecker, p: StreamPayload, clause: &str) -> Violation {
    let before = format!("{c:?}");
    let v = match c.check(&p) {
        Ok(()) => panic!("{} was accepted, expected {clause}", p.kind.name()),
        Err(v) => v,
    };
    assert_eq!(v.clause, clause, "wrong clause: {v}");
    assert_eq!(format!("{c:?}"), before, "a rejection changed the state");
    v
}

fn item(id: &str, status: TodoStatus) -> TodoItem {
    TodoItem {
        id: id.into(),
        content: format!("task {id}"),
        status,
        active_form: None,
        priority: None,
    }
}

fn todos(scope: Option<&str>, revision: u64, items: Vec<TodoItem>) -> StreamPayload {
    StreamPayload::todo_updated(TodoSnapshot {
        scope_id: scope.map(str::to_owned),
        revision,
        items,
        source: src("test.todo"),
    })
}

fn mcp(id: &str) -> CapabilityInvocation {
    CapabilityInvocation {
        server: Some("docs".into()),
        ..CapabilityInvocation::started(id, CapabilityKind::Mcp, "search", src("test.mcp"))
    }
}

fn subagent(scope: &str, phase: SubagentPhase) -> StreamPayload {
    StreamPayload::subagent(SubagentReport {
        scope_id: scope.into(),
        agent: "reviewer".into(),
        phase,
        tool_call_id: Some(scope.into()),
        delta: String::new(),
        failed: false,
        data: None,
        source: src("test.task"),
    })
}

fn image(data: Option<&str>, uri: Option<&str>, mime: &str) -> StreamPayload {
    StreamPayload::image(ImagePayload {
        message_id: None,
        mime_type: mime.into(),
        data: data.map(str::to_owned),
        uri: uri.map(str::to_owned),
        source: src("test.image"),
    })
}

#[test]
fn obs01_only_declared_kinds_are_accepted() {
    let mut none = checker(ObservationSupport::NONE);
    reject(&mut none, todos(None, 1, vec![]), "OBS-01");
    reject(&mut none, StreamPayload::capability(mcp("c1")), "OBS-01");
    reject(&mut none, subagent("s1", SubagentPhase::Started), "OBS-01");
    reject(&mut none, image(Some("AA=="), None, "image/png"), "OBS-01");
    let mut only_todos = checker(ObservationSupport {
        todos: true,
        ..ObservationSupport::NONE
    });
    accept(&mut only_todos, todos(None, 1, vec![]));
    reject(
        &mut only_todos,
        subagent("s1", SubagentPhase::Started),
        "OBS-01",
    );
}

#[test]
fn obs02_observations_carry_no_raw_payload() {
    let mut c = all();
    let p = todos(None, 1, vec![]).with_raw(json!({"extra": true}));
    reject(&mut c, p, "OBS-02");
}

#[test]
fn obs03_capabilities_must_be_well_formed() {
    let mut c = all();
    let no_server = CapabilityInvocation {
        server: None,
        ..mcp("c1")
    };
    reject(&mut c, StreamPayload::capability(no_server), "OBS-03");
    let skill_with_server = CapabilityInvocation {
        server: Some("x".into()),
        ..CapabilityInvocation::started("c2", CapabilityKind::Skill, "pdf", src("t"))
    };
    reject(
        &mut c,
        StreamPayload::capability(skill_with_server),
        "OBS-03",
    );
    let wrong_op = CapabilityInvocation {
        operation: CapabilityOperation::Activate,
        ..CapabilityInvocation::started("c3", CapabilityKind::Subagent, "a", src("t"))
    };
    reject(&mut c, StreamPayload::capability(wrong_op), "OBS-03");
    let early_duration = CapabilityInvocation {
        duration_ms: Some(3),
        ..mcp("c4")
    };
    reject(&mut c, StreamPayload::capability(early_duration), "OBS-03");
    let control = CapabilityInvocation {
        name: "se\u{1b}arch".into(),
        ..mcp("c5")
    };
    reject(&mut c, StreamPayload::capability(control), "OBS-03");
    let no_source = CapabilityInvocation {
        source: src(""),
        ..mcp("c6")
    };
    reject(&mut c, StreamPayload::capability(no_source), "OBS-03");
    accept(&mut c, StreamPayload::capability(mcp("c7")));
    let failed_without_error = CapabilityInvocation {
        phase: CapabilityPhase::Failed,
        ..mcp("c7")
    };
    reject(
        &mut c,
        StreamPayload::capability(failed_without_error),
        "OBS-03",
    );
    let completed_with_error = CapabilityInvocation {
        phase: CapabilityPhase::Completed,
        error: Some("no".into()),
        ..mcp("c7")
    };
    reject(
        &mut c,
        StreamPayload::capability(completed_with_error),
        "OBS-03",
    );
    accept(
        &mut c,
        StreamPayload::capability(mcp("c7").finished(Some("boom".into()), Some(4))),
    );
}

#[test]
fn obs04_capability_lifecycles_are_complete_and_stable() {
    let mut c = all();
    accept(&mut c, StreamPayload::capability(mcp("c1")));
    reject(&mut c, StreamPayload::capability(mcp("c1")), "OBS-04");
    let renamed = CapabilityInvocation {
        name: "other".into(),
        ..mcp("c1")
    }
    .finished(None, None);
    reject(&mut c, StreamPayload::capability(renamed), "OBS-04");
    reject(
        &mut c,
        StreamPayload::capability(mcp("never").finished(None, None)),
        "OBS-04",
    );
    // The same id in another scope is another invocation.
    let scoped = CapabilityInvocation {
        scope_id: Some("task_1".into()),
        ..mcp("c1")
    };
    accept(&mut c, StreamPayload::capability(scoped.clone()));
    accept(
        &mut c,
        StreamPayload::capability(scoped.finished(None, Some(1))),
    );
    let v = reject(&mut c, StreamPayload::run_finished(None), "OBS-04");
    assert!(v.detail.contains("\"c1\""), "{v}");
    accept(
        &mut c,
        StreamPayload::capability(mcp("c1").finished(None, Some(2))),
    );
    // Terminal once: a second terminal phase finds nothing open.
    reject(
        &mut c,
        StreamPayload::capability(mcp("c1").finished(None, None)),
        "OBS-04",
    );
    accept(&mut c, StreamPayload::run_finished(None));
}

#[test]
fn obs05_todo_snapshots_are_well_formed() {
    let mut c = all();
    let dup = vec![
        item("1", TodoStatus::Pending),
        item("1", TodoStatus::Completed),
    ];
    reject(&mut c, todos(None, 1, dup), "OBS-05");
    let blank = vec![TodoItem {
        content: " ".into(),
        ..item("1", TodoStatus::Pending)
    }];
    reject(&mut c, todos(None, 1, blank), "OBS-05");
    let many = (0..=MAX_TODO_ITEMS)
        .map(|i| item(&i.to_string(), TodoStatus::Pending))
        .collect();
    reject(&mut c, todos(None, 1, many), "OBS-05");
    let mut no_source = todos(None, 1, vec![]);
    if let crate::StreamKind::TodoUpdated(t) = &mut no_source.kind {
        t.source = src("");
    }
    reject(&mut c, no_source, "OBS-05");
    accept(&mut c, todos(None, 1, vec![item("1", TodoStatus::Pending)]));
}

#[test]
fn obs06_revisions_start_at_one_per_scope_and_advance_by_one_with_a_change() {
    let mut c = all();
    let a = vec![item("1", TodoStatus::Pending)];
    let b = vec![item("1", TodoStatus::InProgress)];
    reject(&mut c, todos(None, 2, a.clone()), "OBS-06");
    reject(&mut c, todos(None, 0, a.clone()), "OBS-06");
    accept(&mut c, todos(None, 1, a.clone()));
    reject(&mut c, todos(None, 2, a.clone()), "OBS-06");
    reject(&mut c, todos(None, 3, b.clone()), "OBS-06");
    accept(&mut c, todos(None, 2, b.clone()));
    accept(&mut c, todos(Some("task_1"), 1, a));
    accept(&mut c, todos(None, 3, vec![]));
}

#[test]
fn revisions_numbered_by_todo_revisions_pass_the_checker() {
    let mut c = all();
    let mut r = TodoRevisions::new();
    let lists = [
        vec![item("1", TodoStatus::Pending)],
        vec![item("1", TodoStatus::Pending)],
        vec![item("1", TodoStatus::Completed)],
    ];
    let mut published = 0;
    for items in lists {
        if let Some(s) = r.next(None, items, src("test.todo")) {
            accept(&mut c, StreamPayload::todo_updated(s));
            published += 1;
        }
    }
    assert_eq!(published, 2);
}

#[test]
fn obs07_subagents_start_once_and_finish_before_the_run_ends() {
    let mut c = all();
    reject(&mut c, subagent("s1", SubagentPhase::Delta), "OBS-07");
    reject(&mut c, subagent("s1", SubagentPhase::Finished), "OBS-07");
    accept(&mut c, subagent("s1", SubagentPhase::Started));
    reject(&mut c, subagent("s1", SubagentPhase::Started), "OBS-07");
    accept(&mut c, subagent("s1", SubagentPhase::Delta));
    let mut failed_early = subagent("s1", SubagentPhase::Delta);
    if let crate::StreamKind::Subagent(s) = &mut failed_early.kind {
        s.failed = true;
    }
    reject(&mut c, failed_early, "OBS-07");
    reject(&mut c, StreamPayload::run_finished(None), "OBS-07");
    accept(&mut c, subagent("s1", SubagentPhase::Finished));
    reject(&mut c, subagent("s1", SubagentPhase::Started), "OBS-07");
    accept(&mut c, StreamPayload::run_finished(None));
}

#[test]
fn obs08_images_carry_an_image_type_and_exactly_one_of_data_and_uri() {
    let mut c = all();
    reject(&mut c, image(Some("AA=="), None, "text/plain"), "OBS-08");
    reject(&mut c, image(Some("AA=="), None, "image/"), "OBS-08");
    reject(&mut c, image(None, None, "image/png"), "OBS-08");
    reject(
        &mut c,
        image(Some("AA=="), Some("file:///a.png"), "image/png"),
        "OBS-08",
    );
    reject(&mut c, image(Some(""), None, "image/png"), "OBS-08");
    reject(
        &mut c,
        image(None, Some("https://u:pw@example.test/a.png"), "image/png"),
        "OBS-08",
    );
    accept(&mut c, image(Some("AA=="), None, "image/png"));
    accept(
        &mut c,
        image(None, Some("file:///tmp/a@2x.png"), "image/png"),
    );
    accept(
        &mut c,
        image(None, Some("https://example.test/a.png"), "image/jpeg"),
    );
}

#[test]
fn observation_kinds_are_reserved_names_for_custom_events() {
    let mut c = all();
    for name in [
        "todo.updated",
        "capability.invocation",
        "subagent.update",
        "image",
    ] {
        let p = StreamPayload::from(crate::StreamKind::Custom {
            name: name.into(),
            text: String::new(),
        });
        reject(&mut c, p, "EVT-15");
    }
}

#[test]
fn observation_payloads_round_trip_through_serde_with_their_kind_names() {
    let payloads = [
        todos(Some("s"), 1, vec![item("1", TodoStatus::Cancelled)]),
        StreamPayload::capability(mcp("c1").finished(Some("x".into()), Some(9))),
        subagent("s1", SubagentPhase::Finished),
        image(None, Some("https://example.test/a.png"), "image/png"),
    ];
    for p in payloads {
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["kind"], p.kind.name(), "{v}");
        assert!(v.get("source").is_none(), "the source is flattened: {v}");
        assert!(v["provider_protocol"].is_string(), "{v}");
        let back: StreamPayload = serde_json::from_value(v).unwrap();
        assert_eq!(back, p);
    }
}
