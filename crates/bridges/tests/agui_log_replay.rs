//! `Last-Event-ID` replay from the event log: two handlers ("instances")
//! over one memory store; a reconnect to the one that did not run the run
//! gets exactly the frames after its cursor (same ids and bytes), follows a
//! run still going, ends a silent one as interrupted, and refuses another
//! principal (403) and a pruned run (410). Every run starts with
//! `RUN_STARTED` then a `MESSAGES_SNAPSHOT` of the thread.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/agui_server.rs"]
mod agui_server;

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_bridges::agui::{SseHandler, SseOptions, SseServer, agui_thread_key};
use agent_adaptor_core::driver::DecisionKind;
use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::thread::{Lease, Retention, StoreError};
use agent_adaptor_core::{Agent, MemoryStore, ThreadStore};
use agui_server::{Instance, SseEvent, SseParser, post_sse, run_input, types};
use futures::StreamExt;
use serde_json::{Value, json};

const NS: &str = "web";

/// One "instance" over the shared log (the runner is used as is: the log
/// is keyed by the AG-UI thread all the same).
async fn instance(
    store: &Arc<MemoryStore>,
    driver: ScriptedDriver,
    follow: Option<(Duration, Duration)>,
) -> Instance {
    let mut options = SseOptions::agui().thread_namespace(NS);
    if let Some((poll, idle)) = follow {
        options = options.log_follow(poll, idle);
    }
    agui_server::instance(store, driver, options).await
}

fn http() -> reqwest::Client {
    reqwest::Client::new()
}

fn ids(events: &[SseEvent]) -> Vec<String> {
    events.iter().map(|e| e.id.clone().unwrap()).collect()
}

async fn reconnect(
    url: &str,
    thread: &str,
    run: &str,
    last: &str,
    who: &str,
) -> (u16, Vec<SseEvent>, String) {
    let (status, _, events, body) = post_sse(
        &http(),
        url,
        &run_input(thread, run, "ignored on a reconnect"),
        &[("last-event-id", last), ("x-test-principal", who)],
    )
    .await;
    (status.as_u16(), events, body)
}

#[tokio::test]
async fn another_instance_replays_exactly_the_missed_frames_of_a_finished_run() {
    let store = Arc::new(MemoryStore::new());
    let a = instance(&store, agui_server::tool_script(), None).await;
    let b = instance(&store, agui_server::tool_script(), None).await;

    let (status, _, all, _) = post_sse(
        &http(),
        &a.url,
        &run_input("t1", "r1", "read a.txt"),
        &[("x-test-principal", "alice")],
    )
    .await;
    assert_eq!(status, 200);
    let kinds = types(&all);
    assert_eq!(kinds[0], "RUN_STARTED");
    assert_eq!(kinds[1], "MESSAGES_SNAPSHOT");
    assert_eq!(kinds.last().unwrap(), "RUN_FINISHED");
    // The first run's snapshot is its own prompt, under the client's id.
    assert_eq!(
        all[1].json()["messages"],
        json!([{"role": "user", "id": "u-r1", "content": "read a.txt"}])
    );

    // Every cut point: B sends exactly what followed, byte for byte.
    for k in [0, 1, 4, all.len() - 2] {
        let last = all[k].id.clone().unwrap();
        let (status, replayed, body) = reconnect(&b.url, "t1", "r1", &last, "alice").await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(ids(&replayed), ids(&all[k + 1..]), "after {last}");
        assert_eq!(replayed, all[k + 1..].to_vec(), "after {last}");
    }
    // After the last frame there is nothing left.
    let last = all.last().unwrap().id.clone().unwrap();
    let (status, replayed, _) = reconnect(&b.url, "t1", "r1", &last, "alice").await;
    assert_eq!(status, 200);
    assert!(replayed.is_empty(), "{replayed:?}");
}

#[tokio::test]
async fn the_snapshot_holds_the_threads_history_from_the_log() {
    let store = Arc::new(MemoryStore::new());
    let a = instance(&store, agui_server::tool_script(), None).await;
    let b = instance(&store, agui_server::text_script(), None).await;
    let who = [("x-test-principal", "alice")];
    let (_, _, _, _) = post_sse(&http(), &a.url, &run_input("t2", "r1", "read a.txt"), &who).await;
    // The second run goes to the other instance: it knows the history only
    // from the log.
    let (status, _, second, _) =
        post_sse(&http(), &b.url, &run_input("t2", "r2", "thanks"), &who).await;
    assert_eq!(status, 200);
    assert_eq!(types(&second)[1], "MESSAGES_SNAPSHOT");
    let messages = second[1].json()["messages"].clone();
    assert_eq!(
        messages,
        json!([
            {"role": "user", "id": "u-r1", "content": "read a.txt"},
            {"role": "assistant", "id": "m1", "content": "Let me look.", "toolCalls": [
                {"id": "call-1", "type": "function",
                 "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}}
            ]},
            {"role": "tool", "id": "call-1-result", "content": "file contents", "toolCallId": "call-1"},
            {"role": "assistant", "id": "m2", "content": "It says: file contents"},
            {"role": "user", "id": "u-r2", "content": "thanks"}
        ])
    );
}

#[tokio::test]
async fn another_principal_gets_403_and_a_pruned_run_410() {
    let store = Arc::new(MemoryStore::new());
    let a = instance(&store, agui_server::text_script(), None).await;
    let b = instance(&store, agui_server::text_script(), None).await;
    let who = [("x-test-principal", "alice")];
    let (_, _, all, _) = post_sse(&http(), &a.url, &run_input("t3", "r1", "hi"), &who).await;
    let first = all[0].id.clone().unwrap();

    let (status, events, body) = reconnect(&b.url, "t3", "r1", &first, "mallory").await;
    assert_eq!(status, 403, "{body}");
    assert!(events.is_empty());
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["code"], "forbidden");

    // An unknown run on a log that was never pruned: 404.
    let (status, _, body) = reconnect(&b.url, "t3", "nope", &first, "alice").await;
    assert_eq!(status, 404, "{body}");

    // Prune the log down to its newest event: the run's start is gone.
    let key = agui_thread_key(NS, "t3");
    let dropped = store
        .prune_events(&key, &Retention::keep_last(1))
        .await
        .unwrap();
    assert!(dropped > 0);
    let (status, _, body) = reconnect(&b.url, "t3", "r1", &first, "alice").await;
    assert_eq!(status, 410, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["code"], "replay_unavailable");
}

#[tokio::test]
async fn the_handlers_retention_prunes_the_log_when_a_run_ends() {
    let store = Arc::new(MemoryStore::new());
    let keeping = SseHandler::new(
        Arc::new(Agent::new(agui_server::text_script())),
        SseOptions::agui()
            .thread_namespace(NS)
            .event_log(store.clone())
            .event_log_retention(Retention::keep_last(3)),
    );
    let router = keeping.router("/agui").layer(axum::middleware::from_fn(
        agui_server::principal_from_header,
    ));
    let server = SseServer::bind_local(router).await.unwrap();
    let url = server.url("/agui");
    let b = instance(&store, agui_server::text_script(), None).await;
    let who = [("x-test-principal", "alice")];
    let (_, _, first_run, _) = post_sse(&http(), &url, &run_input("t6", "r1", "hi"), &who).await;
    let (status, _, _, _) = post_sse(&http(), &url, &run_input("t6", "r2", "again"), &who).await;
    assert_eq!(status, 200);

    let key = agui_thread_key(NS, "t6");
    let page = store
        .events(&key, &agent_adaptor_core::thread::EventQuery::since(0))
        .await
        .unwrap();
    assert_eq!(page.events.len(), 3, "{:?}", page.events);
    // The newest three, all of the second run: the first run is gone.
    let runs: std::collections::BTreeSet<&str> =
        page.events.iter().map(|e| e.run_id.as_str()).collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(page.events[0].cursor > 3, "{:?}", page.events[0].cursor);
    let first = first_run[0].id.clone().unwrap();
    let (status, _, body) = reconnect(&b.url, "t6", "r1", &first, "alice").await;
    assert_eq!(status, 410, "{body}");
}

/// Reads a stream, handing each frame to `tx` as it arrives.
async fn read_into(resp: reqwest::Response, tx: tokio::sync::mpsc::UnboundedSender<SseEvent>) {
    let mut parser = SseParser::default();
    let mut stream = resp.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        for e in parser.push(&chunk) {
            if tx.send(e).is_err() {
                return;
            }
        }
    }
}

#[tokio::test]
async fn a_reconnect_follows_a_run_still_going_to_its_end() {
    let store = Arc::new(MemoryStore::new());
    let script = || agui_server::chunked_script(12, 16, Duration::from_millis(40));
    let a = instance(&store, script(), None).await;
    let b = instance(
        &store,
        script(),
        Some((Duration::from_millis(20), Duration::from_secs(30))),
    )
    .await;
    let resp = http()
        .post(&a.url)
        .header("content-type", "application/json")
        .header("x-test-principal", "alice")
        .body(run_input("t4", "r1", "count").to_string())
        .send()
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let reader = tokio::spawn(read_into(resp, tx));
    // Take the first frames from A, then reconnect to B mid-run.
    let mut seen = Vec::new();
    while seen.len() < 4 {
        seen.push(rx.recv().await.unwrap());
    }
    let last = seen.last().unwrap().id.clone().unwrap();
    let (status, replayed, body) = reconnect(&b.url, "t4", "r1", &last, "alice").await;
    assert_eq!(status, 200, "{body}");
    // A's client stayed attached; it has the whole run now.
    while let Some(e) = rx.recv().await {
        seen.push(e);
    }
    reader.await.unwrap();
    assert_eq!(types(&seen).last().unwrap(), "RUN_FINISHED");
    assert_eq!(replayed, seen[4..].to_vec());
}

/// Start a hanging run of `thread` on `a` as alice and read its first
/// four frames (RUN_STARTED, MESSAGES_SNAPSHOT, TEXT_MESSAGE_START,
/// _CONTENT); the reader task keeps the stream open.
async fn hanging_run(a: &Instance, thread: &str) -> (tokio::task::JoinHandle<()>, Vec<SseEvent>) {
    let resp = http()
        .post(&a.url)
        .header("content-type", "application/json")
        .header("x-test-principal", "alice")
        .body(run_input(thread, "r1", "wait").to_string())
        .send()
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let reader = tokio::spawn(read_into(resp, tx));
    let mut seen = Vec::new();
    while seen.len() < 4 {
        seen.push(rx.recv().await.unwrap());
    }
    (reader, seen)
}

#[tokio::test]
async fn a_run_whose_log_goes_silent_ends_as_interrupted() {
    let store = Arc::new(MemoryStore::new());
    let a = instance(&store, agui_server::hanging_script(), None).await;
    let b = instance(
        &store,
        agui_server::hanging_script(),
        Some((Duration::from_millis(20), Duration::from_millis(300))),
    )
    .await;
    let (reader, seen) = hanging_run(&a, "t5").await;
    let first = seen[0].id.clone().unwrap();
    let (status, replayed, body) = reconnect(&b.url, "t5", "r1", &first, "alice").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(replayed[..3], seen[1..4]);
    assert_eq!(
        types(&replayed[3..]),
        ["TEXT_MESSAGE_END", "RUN_ERROR"],
        "{replayed:?}"
    );
    let error = replayed.last().unwrap().json();
    assert_eq!(error["code"], "interrupted");
    reader.abort();
}

/// Save a thread record for `key` as a run's host does when the run
/// finished (its lease taken and given back).
async fn save_record(store: &MemoryStore, key: &str) {
    let lease = store
        .acquire_lease(&format!("key:{key}"), "host/run", Duration::from_secs(60))
        .await
        .unwrap();
    let now = chrono::Utc::now();
    let record = agent_adaptor_core::thread::ThreadRecord {
        id: "rec-1".into(),
        key: key.into(),
        status: agent_adaptor_core::thread::RecordStatus::Active,
        driver_type: "scripted".into(),
        fingerprint: "f".into(),
        codec: "scripted".into(),
        params: Default::default(),
        previous_id: None,
        created_at: now,
        updated_at: now,
    };
    store
        .finalize(agent_adaptor_core::thread::FinalizeRequest {
            lease: lease.clone(),
            record,
            require_key_absent: false,
        })
        .await
        .unwrap();
    store.release_lease(&lease).await.unwrap();
}

/// A host that saved the thread's record and died before it logged the
/// run's end: a reader following the log ends as interrupted once the log
/// stays silent after the record was saved, not after the (here 10 min)
/// idle limit.
#[tokio::test]
async fn a_run_saved_but_never_logged_to_its_end_ends_its_readers() {
    let store = Arc::new(MemoryStore::new());
    let a = instance(&store, agui_server::hanging_script(), None).await;
    let b = instance(
        &store,
        agui_server::hanging_script(),
        Some((Duration::from_millis(20), Duration::from_secs(600))),
    )
    .await;
    let (reader, seen) = hanging_run(&a, "t7").await;
    save_record(&store, &agui_thread_key(NS, "t7")).await;
    let first = seen[0].id.clone().unwrap();
    // Bounded: far below the idle limit, far above the settling (2 × 3 s).
    let (status, replayed, body) = tokio::time::timeout(
        Duration::from_secs(60),
        reconnect(&b.url, "t7", "r1", &first, "alice"),
    )
    .await
    .expect("the follow ends long before the idle limit");
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        types(&replayed[3..]),
        ["TEXT_MESSAGE_END", "RUN_ERROR"],
        "{replayed:?}"
    );
    assert_eq!(replayed.last().unwrap().json()["code"], "interrupted");
    reader.abort();
}

#[tokio::test]
async fn the_run_that_answers_an_interrupt_replays_from_the_whole_core_run() {
    let store = Arc::new(MemoryStore::new());
    let script = || agui_server::approval_script(DecisionKind::Permission);
    let a = instance(&store, script(), None).await;
    let b = instance(&store, script(), None).await;
    let who = [("x-test-principal", "alice")];
    let (_, _, first, _) = post_sse(&http(), &a.url, &run_input("t6", "r1", "hi"), &who).await;
    let last = first.last().unwrap().json();
    assert_eq!(last["outcome"]["type"], "interrupt");
    let id = last["outcome"]["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut resume = run_input("t6", "r2", "");
    resume["resume"] =
        json!([{"interruptId": id, "status": "resolved", "payload": {"approved": true}}]);
    let (status, _, second, _) = post_sse(&http(), &a.url, &resume, &who).await;
    assert_eq!(status, 200);
    assert_eq!(second.last().unwrap().json()["outcome"]["type"], "success");

    // Both AG-UI runs replay exactly from the other instance, the
    // interrupt frame included.
    let cut = first[0].id.clone().unwrap();
    let (status, replayed, body) = reconnect(&b.url, "t6", "r1", &cut, "alice").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(replayed, first[1..].to_vec());
    for k in [0, 2] {
        let cut = second[k].id.clone().unwrap();
        let (status, replayed, body) = reconnect(&b.url, "t6", "r2", &cut, "alice").await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(replayed, second[k + 1..].to_vec(), "after {cut}");
    }
}

/// A thread store without an event log (every call is refused).
struct NoLog;

#[agent_adaptor_core::driver::async_trait]
impl ThreadStore for NoLog {
    async fn resolve(
        &self,
        _: &str,
        _: bool,
    ) -> Result<Option<agent_adaptor_core::thread::ThreadRecord>, StoreError> {
        Err(StoreError::Unsupported("keep threads"))
    }
    async fn acquire_lease(&self, _: &str, _: &str, _: Duration) -> Result<Lease, StoreError> {
        Err(StoreError::Unsupported("keep threads"))
    }
    async fn renew_lease(&self, _: &Lease, _: Duration) -> Result<Lease, StoreError> {
        Err(StoreError::Unsupported("keep threads"))
    }
    async fn release_lease(&self, _: &Lease) -> Result<(), StoreError> {
        Err(StoreError::Unsupported("keep threads"))
    }
    async fn finalize(
        &self,
        _: agent_adaptor_core::thread::FinalizeRequest,
    ) -> Result<agent_adaptor_core::thread::ThreadRecord, StoreError> {
        Err(StoreError::Unsupported("keep threads"))
    }
}

#[tokio::test]
async fn a_store_without_an_event_log_answers_a_reconnect_with_503() {
    let agent = Agent::new(agui_server::text_script());
    let handler = SseHandler::new(
        Arc::new(agent),
        SseOptions::agui().event_log(Arc::new(NoLog)),
    );
    let server = SseServer::bind_local(handler.router("/agui"))
        .await
        .unwrap();
    let url = server.url("/agui");
    // Runs still work (unrecorded, without a snapshot) …
    let (status, _, events, _) = post_sse(&http(), &url, &run_input("t7", "r1", "hi"), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(types(&events)[..2], ["RUN_STARTED", "TEXT_MESSAGE_START"]);
    // … and a reconnect the buffer cannot serve gets a typed 503.
    let (status, _, body) = reconnect(&url, "t7", "elsewhere", "3", "alice").await;
    assert_eq!(status, 503, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["code"], "event_log_unavailable");
}
