//! Observations from the real, pinned Codex, offline against the testkit
//! mock model: the model (scripted) calls Codex's `update_plan` tool twice;
//! on both transports the run reports each plan as a typed todo snapshot
//! (exec: the `todo_list` item; app-server: `turn/plan/updated`), revision
//! 1 then 2, with the statuses the model set. The pinned Codex offers the
//! tool only with `-c tools.update_plan.enabled=true`.
#![cfg(feature = "real-clis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod codex_support;

use agent_adaptor_core::{Agent, Event, RunOptions, Runner};
use agent_adaptor_driver::TodoStatus;
use agent_adaptor_drivers::codex::{self, Transport};
use agent_adaptor_testkit::mock::{Reply, Script};
use codex_support::harness::{Harness, RUN_TIMEOUT};
use futures::StreamExt as _;
use serde_json::json;

fn plan(second: &str) -> Reply {
    Reply::ToolCall {
        name: "update_plan".into(),
        arguments: json!({"plan": [
            {"step": "Read the code", "status": "completed"},
            {"step": "Fix the bug", "status": second}
        ]}),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_plan_calls_are_todo_snapshots_on_both_transports() {
    // exec's `todo_list` items know only done or not: the step in progress
    // is pending there; the app-server's plan has the three states.
    for (transport, keyword, in_progress) in [
        (Transport::Exec, "PLANEXEC", TodoStatus::Pending),
        (Transport::AppServer, "PLANAPP", TodoStatus::InProgress),
    ] {
        let script = Script::new().on_prompt(
            keyword,
            vec![
                plan("in_progress"),
                plan("completed"),
                Reply::Text("Planned.".into()),
            ],
        );
        let h = Harness::start(script).await;
        let mut cfg = h.config(transport);
        // The pinned Codex offers `update_plan` only when it is enabled.
        cfg.overrides
            .insert("tools.update_plan.enabled".into(), "true".into());
        let agent = Agent::new(codex::driver(cfg));
        let mut s = agent.stream_with(
            &format!("{keyword}: plan it"),
            RunOptions::new().timeout(RUN_TIMEOUT),
        );
        let mut events = Vec::new();
        while let Some(ev) = s.next().await {
            events.push(ev);
        }
        let result = s.result().await;
        let todos: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Event::TodoUpdated(t) => Some(t.snapshot.clone()),
                _ => None,
            })
            .collect();
        assert!(result.is_ok(), "{transport:?}: {result:?}");
        assert_eq!(
            todos.iter().map(|t| t.revision).collect::<Vec<_>>(),
            [1, 2],
            "{transport:?}: {} events",
            events.len()
        );
        assert_eq!(
            todos[0].items.iter().map(|i| i.status).collect::<Vec<_>>(),
            [TodoStatus::Completed, in_progress],
            "{transport:?}"
        );
        assert_eq!(todos[1].items[1].status, TodoStatus::Completed);
        assert_eq!(todos[0].items[1].content, "Fix the bug");
    }
}
