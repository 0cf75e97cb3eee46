//! A thread reused by an incompatible agent: refused up front in strict
//! mode, else a fresh session announced by one `thread.session_replaced`
//! notice (also in the event log); `new_session` replaces on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;

use agent_adaptor_core::driver::Driver;
use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::thread::{EventQuery, MemoryStore, RecordStatus, Retention, ThreadStore};
use agent_adaptor_core::{Agent, Error, Event, RunOptions, Runner, ThreadError, notice_kind};
use common::*;

fn agent_with(driver: ScriptedDriver, store: Arc<dyn ThreadStore>) -> Agent {
    Agent::builder(driver).thread_store(store).build().unwrap()
}

/// A resumable scripted driver whose driver type is `driver_type`.
fn typed(driver_type: &str, session: &str) -> ScriptedDriver {
    let base = ScriptedDriver::resumable_reply("hi", session);
    let mut descriptor = base.descriptor().clone();
    descriptor.driver_type = driver_type.into();
    base.with_descriptor(descriptor)
}

/// A store holding thread `k`, written by a `first` driver.
async fn written_by_first(store: &Arc<MemoryStore>) -> String {
    let agent = agent_with(typed("first", "sess-1"), store.clone());
    agent.thread("k").run("one").await.unwrap();
    store.resolve("k", false).await.unwrap().unwrap().id
}

fn replaced(events: &[Event]) -> Vec<&agent_adaptor_core::Notice> {
    notices(events, notice_kind::THREAD_SESSION_REPLACED)
}

#[tokio::test]
async fn strict_mode_refuses_an_incompatible_record_before_the_driver_is_called() {
    let store = Arc::new(MemoryStore::new());
    let first_id = written_by_first(&store).await;
    let second = typed("second", "sess-2");
    let agent = agent_with(second.clone(), store.clone());
    let (events, outcome) = drain(agent.thread("k").refuse_incompatible().stream("two")).await;
    let Err(Error::Thread(ThreadError::Incompatible {
        record: Some(m),
        reason,
    })) = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(
        (m.key.as_str(), m.record_id.as_str()),
        ("k", first_id.as_str())
    );
    assert_eq!(
        (m.record_driver.as_str(), m.driver.as_str()),
        ("first", "second")
    );
    assert_eq!(m.differs, vec!["driver"]);
    assert!(reason.contains("first session"), "{reason}");
    assert!(second.recorded_requests().is_empty(), "the driver ran");
    assert!(replaced(&events).is_empty());
    // Nothing changed, and the lease is free: the original driver goes on.
    assert_eq!(store.records().len(), 1);
    let first = typed("first", "sess-1");
    agent_with(first.clone(), store.clone())
        .thread("k")
        .refuse_incompatible()
        .run("three")
        .await
        .unwrap();
    let resumed = first.recorded_requests();
    let state = resumed[0].session.as_ref().unwrap().state.as_ref();
    assert_eq!(state.unwrap().resume_id, "sess-1");
}

#[tokio::test]
async fn strict_mode_also_refuses_another_configuration_of_the_same_driver() {
    let store = Arc::new(MemoryStore::new());
    written_by_first(&store).await;
    let first = typed("first", "sess-1");
    let agent = agent_with(first.clone(), store.clone());
    let err = agent
        .thread("k")
        .refuse_incompatible()
        .run_with("two", RunOptions::new().model("another-model"))
        .await
        .unwrap_err();
    let Error::Thread(ThreadError::Incompatible {
        record: Some(m), ..
    }) = err
    else {
        panic!("{err:?}")
    };
    assert_eq!(m.differs, vec!["configuration"]);
    assert!(first.recorded_requests().is_empty());
}

#[tokio::test]
async fn continue_or_start_announces_the_replaced_session_exactly_once() {
    let store = Arc::new(MemoryStore::new());
    let first_id = written_by_first(&store).await;
    let second = typed("second", "sess-2");
    let agent = agent_with(second.clone(), store.clone());
    let (events, outcome) = drain(agent.thread("k").stream("two")).await;
    outcome.unwrap();
    let [notice] = replaced(&events)[..] else {
        panic!("{events:#?}")
    };
    let data = notice.data.as_ref().unwrap();
    assert_eq!(data["key"], "k");
    assert_eq!(data["archived_record_id"], first_id.as_str());
    assert_eq!(data["driver_type"], "first");
    assert_eq!(data["new_driver_type"], "second");
    assert_eq!(data["differs"], serde_json::json!(["driver"]));
    assert!(notice.text.contains("first session"), "{}", notice.text);
    let request = &second.recorded_requests()[0];
    assert!(request.session.as_ref().unwrap().state.is_none(), "fresh");
    // The old record is archived, the new one follows it.
    let active = store.resolve("k", false).await.unwrap().unwrap();
    assert_eq!(active.previous_id.as_deref(), Some(first_id.as_str()));
    let archived: Vec<_> = store
        .records()
        .into_iter()
        .filter(|r| r.status == RecordStatus::Archived)
        .map(|r| r.id)
        .collect();
    assert_eq!(archived, vec![first_id]);
    // The next turn continues the new session: nothing is replaced.
    let (events, outcome) = drain(agent.thread("k").stream("three")).await;
    outcome.unwrap();
    assert!(replaced(&events).is_empty(), "{events:#?}");
}

#[tokio::test]
async fn the_notice_is_in_the_thread_event_log() {
    let store = Arc::new(MemoryStore::new());
    written_by_first(&store).await;
    let agent = agent_with(typed("second", "sess-2"), store.clone());
    let thread = agent.thread("k").record_events(Retention::keep_last(100));
    thread.run("two").await.unwrap();
    let page = store.events("k", &EventQuery::since(0)).await.unwrap();
    let logged: Vec<_> = page
        .events
        .iter()
        .filter(|r| {
            matches!(&r.event, Event::Notice(n) if n.kind == notice_kind::THREAD_SESSION_REPLACED)
        })
        .collect();
    assert_eq!(logged.len(), 1, "{:#?}", page.events);
}

#[tokio::test]
async fn new_session_replaces_even_a_compatible_record() {
    let store = Arc::new(MemoryStore::new());
    let first_id = written_by_first(&store).await;
    let first = typed("first", "sess-3");
    let agent = agent_with(first.clone(), store.clone());
    let (events, outcome) = drain(agent.thread("k").new_session().stream("two")).await;
    outcome.unwrap();
    let [notice] = replaced(&events)[..] else {
        panic!("{events:#?}")
    };
    let data = notice.data.as_ref().unwrap();
    assert_eq!(data["archived_record_id"], first_id.as_str());
    assert_eq!(data["differs"], serde_json::json!([]));
    let request = &first.recorded_requests()[0];
    assert!(request.session.as_ref().unwrap().state.is_none(), "fresh");
    let active = store.resolve("k", false).await.unwrap().unwrap();
    assert_eq!(active.params.resume_id, "sess-3");
}
