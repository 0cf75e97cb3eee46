//! Observations from the stream-json family (Claude Code, CodeBuddy Code):
//! `TodoWrite` → todo snapshots, `Task` → a subagent whose own tool calls are
//! attributed to it, `Skill` and `mcp__…` → capability invocations, `image`
//! blocks → images; every payload passes the lifecycle checker (OBS-01–08).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::PathBuf;

use agent_adaptor_driver::{
    CapabilityKind, CapabilityPhase, LifecycleChecker, RunEvent, StreamCapability, StreamKind,
    StreamPayload, SubagentPhase, TodoStatus,
};
use agent_adaptor_drivers::streamjson::{CLAUDE, CODEBUDDY, ExitFacts, Family, Out, Parser};

fn fixture(name: &str) -> Vec<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/streamjson")
        .join(name);
    std::fs::read(&path)
        .unwrap()
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// The payloads of a run over `lines`, checked by the lifecycle checker
/// with the family's declared capability, and the notices.
fn payloads(
    family: &'static Family,
    lines: &[Vec<u8>],
    partials: bool,
) -> (Vec<StreamPayload>, Vec<String>) {
    let mut parser = Parser::new(family, true, partials);
    let mut outs = Vec::new();
    for l in lines {
        outs.extend(parser.line(l));
    }
    outs.extend(parser.finish(ExitFacts::exited(0)).0);
    let mut ps = Vec::new();
    let mut notices = Vec::new();
    for o in outs {
        match o {
            Out::Stream(p) => ps.push(p),
            Out::Event(RunEvent::Lifecycle(e)) => notices.push(e.text.clone()),
            _ => {}
        }
    }
    let cap = StreamCapability {
        token_level: partials,
        ..StreamCapability::FULL
    };
    let mut checker = LifecycleChecker::new(cap);
    for (i, p) in ps.iter().enumerate() {
        checker
            .check(p)
            .unwrap_or_else(|v| panic!("payload #{i} {}: {v}", p.kind.name()));
    }
    checker.finish(true).unwrap();
    (ps, notices)
}

fn names(ps: &[StreamPayload]) -> Vec<String> {
    ps.iter().map(|p| p.kind.name().to_owned()).collect()
}

#[test]
fn claude_todos_subagent_skill_mcp_and_image_come_out_typed_and_in_order() {
    for family in [&CLAUDE, &CODEBUDDY] {
        let (ps, notices) = payloads(family, &fixture("claude-observe.jsonl"), false);
        assert!(notices.is_empty(), "{notices:?}");
        let todos: Vec<_> = ps
            .iter()
            .filter_map(|p| match &p.kind {
                StreamKind::TodoUpdated(t) => Some(t),
                _ => None,
            })
            .collect();
        // Three TodoWrite calls, the third repeating the second: two snapshots.
        assert_eq!(todos.len(), 2);
        assert_eq!((todos[0].revision, todos[1].revision), (1, 2));
        assert_eq!(todos[0].items[0].status, TodoStatus::InProgress);
        assert_eq!(
            todos[0].items[0].active_form.as_deref(),
            Some("Inspecting repo")
        );
        assert_eq!(
            todos[1].items.iter().map(|i| i.status).collect::<Vec<_>>(),
            [TodoStatus::Completed, TodoStatus::InProgress]
        );
        assert_eq!(todos[0].source.provider_protocol, "claude.TodoWrite");

        // The subagent: started, its child tool call attributed, finished.
        let pos =
            |pred: &dyn Fn(&StreamKind) -> bool| ps.iter().position(|p| pred(&p.kind)).unwrap();
        let started = pos(
            &|k| matches!(k, StreamKind::Subagent(s) if s.scope_id == "toolu_task1" && s.phase == SubagentPhase::Started),
        );
        let child = pos(
            &|k| matches!(k, StreamKind::ToolCallStart { tool_call_id, .. } if tool_call_id.as_str() == "toolu_child1"),
        );
        let child_result = pos(
            &|k| matches!(k, StreamKind::ToolCallResult { tool_call_id, .. } if tool_call_id.as_str() == "toolu_child1"),
        );
        let delta = pos(
            &|k| matches!(k, StreamKind::Subagent(s) if s.phase == SubagentPhase::Delta && s.delta == "Two files."),
        );
        let finished = pos(
            &|k| matches!(k, StreamKind::Subagent(s) if s.scope_id == "toolu_task1" && s.phase == SubagentPhase::Finished && !s.failed),
        );
        assert!(
            started < child && child < child_result && child_result < delta && delta < finished
        );
        let StreamKind::ToolCallStart {
            delegation, name, ..
        } = &ps[child].kind
        else {
            unreachable!()
        };
        assert_eq!(name, "Bash");
        assert_eq!(delegation.scope_id.as_deref(), Some("toolu_task1"));
        assert_eq!(
            delegation.parent_tool_call_id.as_deref(),
            Some("toolu_task1")
        );
        let StreamKind::ToolCallResult { delegation, .. } = &ps[child_result].kind else {
            unreachable!()
        };
        assert_eq!(delegation.scope_id.as_deref(), Some("toolu_task1"));

        // Capabilities: the subagent spawn, the skill, the MCP tool (failed).
        let caps: Vec<_> = ps
            .iter()
            .filter_map(|p| match &p.kind {
                StreamKind::Capability(c) => Some((c.kind, c.name.as_str(), c.phase)),
                _ => None,
            })
            .collect();
        assert_eq!(
            caps,
            [
                (
                    CapabilityKind::Subagent,
                    "general-purpose",
                    CapabilityPhase::Started
                ),
                (
                    CapabilityKind::Subagent,
                    "general-purpose",
                    CapabilityPhase::Completed
                ),
                (CapabilityKind::Skill, "pdf", CapabilityPhase::Started),
                (CapabilityKind::Skill, "pdf", CapabilityPhase::Completed),
                (CapabilityKind::Mcp, "read_file", CapabilityPhase::Started),
                (CapabilityKind::Mcp, "read_file", CapabilityPhase::Failed),
                (
                    CapabilityKind::Subagent,
                    "Explore",
                    CapabilityPhase::Started
                ),
                (CapabilityKind::Subagent, "Explore", CapabilityPhase::Failed),
            ]
        );
        let image = ps
            .iter()
            .find_map(|p| match &p.kind {
                StreamKind::Image(i) => Some(i),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            (image.mime_type.as_str(), image.data.as_deref()),
            ("image/png", Some("iVBORw0KGgo="))
        );

        // The subagent that never returned is closed as failed before the end.
        let n = names(&ps);
        let last_sub = ps
            .iter()
            .rposition(|p| matches!(&p.kind, StreamKind::Subagent(s) if s.scope_id == "toolu_task2" && s.failed))
            .unwrap();
        assert!(last_sub < n.iter().position(|k| k == "run.finished").unwrap());
    }
}

#[test]
fn token_level_runs_observe_the_same() {
    let (full, _) = payloads(&CLAUDE, &fixture("claude-observe.jsonl"), false);
    let (partial, _) = payloads(&CLAUDE, &fixture("claude-observe.jsonl"), true);
    let obs = |ps: &[StreamPayload]| {
        ps.iter()
            .filter(|p| p.kind.is_observation())
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(obs(&full), obs(&partial));
}

#[test]
fn a_malformed_todo_list_is_a_notice_and_the_tool_call_survives() {
    let lines: Vec<Vec<u8>> = [
        r#"{"type":"system","subtype":"init","session_id":"s","tools":[]}"#,
        r#"{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"TodoWrite","input":{"todos":[{"content":"","status":"pending"}]}}]},"parent_tool_use_id":null,"session_id":"s"}"#,
        r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t2","name":"TodoWrite","input":{"todos":[{"content":"a","status":"someday"}]}}]},"parent_tool_use_id":null,"session_id":"s"}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"session_id":"s"}"#,
    ]
    .iter()
    .map(|l| l.as_bytes().to_vec())
    .collect();
    let (ps, notices) = payloads(&CLAUDE, &lines, false);
    assert!(!ps.iter().any(|p| p.kind.is_observation()));
    assert_eq!(
        ps.iter()
            .filter(|p| matches!(p.kind, StreamKind::ToolCallStart { .. }))
            .count(),
        2
    );
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(notices[0].contains("has no content"), "{notices:?}");
    assert!(notices[1].contains("someday"), "{notices:?}");
}
