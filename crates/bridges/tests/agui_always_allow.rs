//! "Always allow <tool> in this thread" over AG-UI: a thread run's
//! permission interrupt offers `alwaysAllowTool`, a resume with
//! `{"approved": true, "always": true}` grants the tool and approves, and
//! a run outside a thread refuses `always` (typed error, the run still
//! waits) instead of treating it as a plain approval.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/asking_driver.rs"]
mod asking_driver;

use std::sync::Arc;

use agent_adaptor_bridges::agui::wire::{ResumeEntry, ResumeStatus};
use agent_adaptor_bridges::agui::{AguiRun, Interrupted, ResumeError};
use agent_adaptor_core::{Agent, MemoryStore, RunStream, Runner};
use asking_driver::asking_driver;
use futures::StreamExt;
use serde_json::{Value, json};

/// Read `stream` as AG-UI run "r1" up to its interrupt.
async fn interrupted(stream: RunStream) -> Interrupted {
    let mut run = AguiRun::new(stream, "t", "r1");
    while run.next().await.is_some() {}
    run.into_interrupted()
        .expect("the approval interrupts the run")
}

fn always(id: &str) -> ResumeEntry {
    ResumeEntry {
        interrupt_id: id.to_owned(),
        status: ResumeStatus::Resolved,
        payload: Some(json!({"approved": true, "always": true})),
    }
}

/// Resume `parked` with `entry` and read the run to its end; the
/// `RUN_FINISHED` outcome type.
async fn finish(parked: Interrupted, entry: &ResumeEntry) -> Value {
    let mut run = parked.resume(entry, "t", "r2").expect("resumed");
    let mut last = Value::Null;
    while let Some(frame) = run.next().await {
        last = serde_json::to_value(&frame.event).unwrap();
    }
    last["outcome"]["type"].clone()
}

#[tokio::test]
async fn a_thread_interrupt_offers_the_tool_and_always_grants_it() {
    let store = Arc::new(MemoryStore::new());
    let agent = Agent::builder(asking_driver())
        .thread_store(store)
        .build()
        .unwrap();
    let thread = agent.thread("t-always");
    let parked = interrupted(thread.stream("go")).await;
    let interrupt = parked.interrupt().clone();
    assert_eq!(
        interrupt.metadata.as_ref().unwrap()["alwaysAllowTool"],
        "Bash"
    );
    let schema = interrupt.response_schema.as_ref().unwrap();
    assert_eq!(schema["properties"]["always"]["type"], "boolean");
    assert_eq!(schema["required"], json!(["approved"]));
    assert_eq!(
        parked.decision(&always(&interrupt.id)),
        Ok(agent_adaptor_bridges::agui::Decision::ApproveAlways)
    );
    assert_eq!(finish(parked, &always(&interrupt.id)).await, "success");
    assert_eq!(thread.always_allowed().await.unwrap(), ["Bash"]);

    // The next turn of the thread runs Bash without an interrupt.
    let mut next = AguiRun::new(thread.stream("again"), "t", "r3");
    while next.next().await.is_some() {}
    assert!(!next.is_interrupted(), "a granted tool must not ask again");
}

#[tokio::test]
async fn always_outside_a_thread_is_refused_and_the_run_still_waits() {
    let agent = Agent::builder(asking_driver()).build().unwrap();
    let parked = interrupted(agent.stream("go")).await;
    let interrupt = parked.interrupt().clone();
    assert!(
        interrupt
            .metadata
            .as_ref()
            .unwrap()
            .get("alwaysAllowTool")
            .is_none()
    );
    let schema = interrupt.response_schema.as_ref().unwrap();
    assert!(schema["properties"].get("always").is_none());
    assert_eq!(
        parked.decision(&always(&interrupt.id)),
        Err(ResumeError::NotGrantable)
    );
    // Refused without answering: the same run is still answerable, once.
    let (err, parked) = match parked.resume(&always(&interrupt.id), "t", "r2") {
        Err(e) => e,
        Ok(_) => panic!("always must not resume a run outside a thread"),
    };
    assert_eq!(err, ResumeError::NotGrantable);
    let once = ResumeEntry {
        payload: Some(json!({"approved": true})),
        ..always(&interrupt.id)
    };
    let handle = parked.handle();
    assert_eq!(finish(*parked, &once).await, "success");
    let result = handle.result().await.unwrap();
    assert_eq!(result.metadata["decision.0"], "approved");
}
