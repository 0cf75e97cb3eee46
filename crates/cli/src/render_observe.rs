//! How the human output shows observations: a todo list as checkboxes, a
//! subagent's start and finish as one line each.

use agent_adaptor_core::driver::{TodoSnapshot, TodoStatus};
use agent_adaptor_core::{SubagentKind, SubagentUpdate};

/// The lines of a todo snapshot: a heading with its revision, then one
/// checkbox per item (`[x]` done, `[~]` in progress, shown in its
/// present-tense form when it has one, `[ ]` pending, `[-]` cancelled).
pub fn todo_lines(t: &TodoSnapshot) -> Vec<String> {
    let scope = t
        .scope_id
        .as_deref()
        .map(|s| format!(" of {s}"))
        .unwrap_or_default();
    let mut lines = vec![format!("todo{scope} (revision {})", t.revision)];
    lines.extend(t.items.iter().map(|i| {
        let (mark, text) = match i.status {
            TodoStatus::Completed => ("[x]", &i.content),
            TodoStatus::InProgress => ("[~]", i.active_form.as_ref().unwrap_or(&i.content)),
            TodoStatus::Pending => ("[ ]", &i.content),
            TodoStatus::Cancelled => ("[-]", &i.content),
        };
        format!("  {mark} {}", super::render::preview(text, 100))
    }));
    lines
}

/// The line of a subagent's start or finish (`None` for progress).
pub fn subagent_line(s: &SubagentUpdate) -> Option<String> {
    let what = match (s.kind, s.failed) {
        (SubagentKind::Started, _) => "started",
        (SubagentKind::Finished, false) => "finished",
        (SubagentKind::Finished, true) => "failed",
        (SubagentKind::Delta, _) => return None,
    };
    Some(format!("subagent {} {what}", s.agent))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_adaptor_core::driver::{ObservationSource, TodoItem};

    fn item(content: &str, status: TodoStatus, active: Option<&str>) -> TodoItem {
        TodoItem {
            id: content.into(),
            content: content.into(),
            status,
            active_form: active.map(str::to_owned),
            priority: None,
        }
    }

    #[test]
    fn todos_are_checkboxes_with_the_revision() {
        let t = TodoSnapshot {
            scope_id: None,
            revision: 2,
            items: vec![
                item("Plan", TodoStatus::Completed, None),
                item("Build", TodoStatus::InProgress, Some("Building")),
                item("Ship", TodoStatus::Pending, None),
                item("Gold-plate", TodoStatus::Cancelled, None),
            ],
            source: ObservationSource::new("test"),
        };
        assert_eq!(
            todo_lines(&t),
            [
                "todo (revision 2)",
                "  [x] Plan",
                "  [~] Building",
                "  [ ] Ship",
                "  [-] Gold-plate"
            ]
        );
    }

    #[test]
    fn subagents_show_start_and_end_only() {
        let mut s: SubagentUpdate = serde_json::from_value(serde_json::json!({
            "meta": {"run_id": "r", "sequence": 1, "time": "2026-01-01T00:00:00Z"},
            "scope_id": "t1", "agent": "general-purpose", "kind": "started",
            "provider_protocol": "test"
        }))
        .unwrap();
        assert_eq!(
            subagent_line(&s).unwrap(),
            "subagent general-purpose started"
        );
        s.kind = SubagentKind::Finished;
        s.failed = true;
        assert_eq!(
            subagent_line(&s).unwrap(),
            "subagent general-purpose failed"
        );
        s.kind = SubagentKind::Delta;
        assert_eq!(subagent_line(&s), None);
    }
}
