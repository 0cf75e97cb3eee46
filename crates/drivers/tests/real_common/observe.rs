//! Observations from the real CLI: the model (scripted) writes a todo list,
//! updates it, and delegates to a subagent that runs a shell command; the
//! run's typed events say so, in order, with the subagent's tool call
//! attributed to its scope.

use agent_adaptor_core::{Event, Phase, SubagentKind};
use agent_adaptor_driver::TodoStatus;
use agent_adaptor_testkit::scenarios::observe::{
    CHILD_COMMAND, CHILD_OUTPUT, CLAUDE_ENV, OBSERVE_PARENT, script,
};

use super::{Cli, Harness, drain};

/// `TodoWrite` twice, then `Task` with a subagent that runs one command.
pub async fn todos_and_a_subagent_are_observed(cli: &'static Cli) {
    let script = script(cli.shell_tool);
    let h = Harness::start(cli, script).await;
    let mut cfg = h.config(false);
    for (k, v) in CLAUDE_ENV {
        cfg.env.insert((*k).into(), (*v).into());
    }
    let agent = h.agent(cfg);
    let run = drain(
        &agent,
        &format!("{OBSERVE_PARENT}: plan and delegate"),
        |_, _| {},
    )
    .await;
    run.ok("observe");
    let ev = &run.events;
    let todo_pos: Vec<usize> = (0..ev.len())
        .filter(|&i| matches!(&ev[i], Event::TodoUpdated(_)))
        .collect();
    assert_eq!(todo_pos.len(), 2, "two todo snapshots\n{}", run.describe());
    let snapshot = |i: usize| match &ev[i] {
        Event::TodoUpdated(t) => &t.snapshot,
        _ => unreachable!(),
    };
    let (first, second) = (snapshot(todo_pos[0]), snapshot(todo_pos[1]));
    assert_eq!((first.revision, second.revision), (1, 2));
    assert_eq!(
        first.items.iter().map(|i| i.status).collect::<Vec<_>>(),
        [TodoStatus::InProgress, TodoStatus::Pending]
    );
    assert_eq!(
        second.items.iter().map(|i| i.status).collect::<Vec<_>>(),
        [TodoStatus::Completed, TodoStatus::InProgress]
    );
    let started = ev
        .iter()
        .position(|e| matches!(e, Event::SubagentUpdate(s) if s.kind == SubagentKind::Started))
        .unwrap_or_else(|| panic!("no subagent start\n{}", run.describe()));
    let Event::SubagentUpdate(start) = &ev[started] else {
        unreachable!()
    };
    let scope = start.scope_id.clone();
    assert_eq!(start.agent, "general-purpose");
    let child_call = ev
        .iter()
        .position(|e| {
            matches!(e, Event::ToolCall(c) if c.phase == Phase::Start
                && c.delegation.as_ref().and_then(|d| d.scope_id.as_deref()) == Some(scope.as_str()))
        })
        .unwrap_or_else(|| panic!("no tool call attributed to {scope}\n{}", run.describe()));
    let Event::ToolCall(call) = &ev[child_call] else {
        unreachable!()
    };
    assert_eq!(call.name, cli.shell_tool);
    assert_eq!(
        call.args.as_ref().and_then(|a| a["command"].as_str()),
        Some(CHILD_COMMAND)
    );
    let child_result = ev
        .iter()
        .position(|e| {
            matches!(e, Event::ToolResult(r) if r.id == call.id
            && r.delegation.as_ref().and_then(|d| d.scope_id.as_deref()) == Some(scope.as_str()))
        })
        .unwrap_or_else(|| panic!("no attributed result\n{}", run.describe()));
    let Event::ToolResult(result) = &ev[child_result] else {
        unreachable!()
    };
    assert!(
        result
            .result
            .as_ref()
            .is_some_and(|r| r.to_string().contains(CHILD_OUTPUT)),
        "the command ran for real: {:?}",
        result.result
    );
    let finished = ev
        .iter()
        .position(|e| matches!(e, Event::SubagentUpdate(s) if s.kind == SubagentKind::Finished && s.scope_id == scope))
        .unwrap_or_else(|| panic!("no subagent finish\n{}", run.describe()));
    let Event::SubagentUpdate(end) = &ev[finished] else {
        unreachable!()
    };
    assert!(!end.failed, "{}", run.describe());
    assert!(
        todo_pos[0] < todo_pos[1]
            && todo_pos[1] < started
            && started < child_call
            && child_call < child_result
            && child_result < finished,
        "order: todos {todo_pos:?}, started {started}, call {child_call}, result {child_result}, finished {finished}"
    );
}
