//! Two AG-UI handlers ("instances") over one memory store: an interrupt
//! parked on one is answered on the other (the run continues where it
//! runs, the answering client reads it from the log), once, by its owner
//! only, never after it expired (the same resume retried streams the run
//! again); a client that drops its stream and
//! reconnects to the other instance finds the run still going (the
//! reconnect grace, kept alive by the remote reader), while a run nobody
//! reads is cancelled after the grace; the page's explicit stop cancels at
//! once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/agui_server.rs"]
mod agui_server;

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_bridges::Principal;
use agent_adaptor_bridges::agui::{RequestError, SseOptions, agui_thread_key};
use agent_adaptor_core::driver::DecisionKind;
use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::thread::durable::ApprovalState;
use agent_adaptor_core::thread::event_log::EventQuery;
use agent_adaptor_core::{Event, MemoryStore, ThreadStore};
use agui_server::{Instance, SseEvent, SseParser, post_sse, run_input, types};
use futures::StreamExt;
use serde_json::{Value, json};

const NS: &str = "web";

async fn instance(
    store: &Arc<MemoryStore>,
    driver: ScriptedDriver,
    options: SseOptions,
) -> Instance {
    agui_server::instance(store, driver, options.thread_namespace(NS)).await
}

fn http() -> reqwest::Client {
    reqwest::Client::new()
}

const ALICE: [(&str, &str); 1] = [("x-test-principal", "alice")];

/// Start a run that parks at a permission request; its interrupt id.
async fn interrupted(on: &Instance, thread: &str) -> String {
    let (status, _, events, body) =
        post_sse(&http(), &on.url, &run_input(thread, "r1", "hi"), &ALICE).await;
    assert_eq!(status, 200, "{body}");
    let last = events.last().unwrap().json();
    assert_eq!(last["outcome"]["type"], "interrupt", "{events:?}");
    last["outcome"]["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn resume(thread: &str, run: &str, id: &str, payload: Value) -> Value {
    let mut input = run_input(thread, run, "");
    input["resume"] = json!([{"interruptId": id, "status": "resolved", "payload": payload}]);
    input
}

/// Poll (bounded) until `f` holds.
async fn eventually(what: &str, mut f: impl AsyncFnMut() -> bool) {
    for _ in 0..500 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what}: not within 10 s");
}

/// Wait until the interrupt's row exists (the host shares it right after
/// parking).
async fn shared(store: &MemoryStore, id: &str) {
    eventually("the interrupt is a store row", async || {
        store.approval(id).await.unwrap().is_some()
    })
    .await;
}

#[tokio::test]
async fn an_interrupt_answered_on_another_instance_continues_where_it_runs() {
    let store = Arc::new(MemoryStore::new());
    let script = || agui_server::approval_script(DecisionKind::Permission);
    let a = instance(&store, script(), SseOptions::agui()).await;
    let b = instance(&store, script(), SseOptions::agui()).await;
    let id = interrupted(&a, "t1").await;
    shared(&store, &id).await;
    assert_eq!(a.handler.pending_interrupts(), 1);

    let (status, headers, events, body) = post_sse(
        &http(),
        &b.url,
        &resume("t1", "r2", &id, json!({"approved": true})),
        &ALICE,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let kinds = types(&events);
    assert_eq!(kinds.first().unwrap(), "RUN_STARTED", "{kinds:?}");
    assert_eq!(events[0].json()["runId"], "r2");
    assert_eq!(kinds.last().unwrap(), "RUN_FINISHED", "{kinds:?}");
    assert_eq!(events.last().unwrap().json()["outcome"]["type"], "success");
    let text: String = events
        .iter()
        .filter(|e| e.json()["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e.json()["delta"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, "There are two files.");
    // The run continued on A (its core run id), which holds nothing now.
    let row = store.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Answered);
    assert_eq!(
        headers
            .get("x-agent-adaptor-run-id")
            .unwrap()
            .to_str()
            .unwrap(),
        row.run_id
    );
    assert_eq!(a.handler.pending_interrupts(), 0);
    assert_eq!(b.handler.pending_interrupts(), 0);

    // The same resume again (a client whose connection broke before it saw
    // the stream retries it, anywhere): the resumed run, streamed again.
    for on in [&a, &b] {
        let again = resume("t1", "r2", &id, json!({"approved": true}));
        let (status, _, events, body) = post_sse(&http(), &on.url, &again, &ALICE).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(events[0].json()["runId"], "r2");
        assert_eq!(events.last().unwrap().json()["outcome"]["type"], "success");
    }

    // The answer was taken once: neither instance takes another.
    for on in [&a, &b] {
        let (status, _, _, body) = post_sse(
            &http(),
            &on.url,
            &resume("t1", "r3", &id, json!({"approved": false})),
            &ALICE,
        )
        .await;
        assert!(
            status == 404 || status == 409 || status == 410,
            "{status} {body}"
        );
    }
}

#[tokio::test]
async fn elsewhere_only_the_owner_answers_with_a_valid_payload() {
    let store = Arc::new(MemoryStore::new());
    let script = || agui_server::approval_script(DecisionKind::Permission);
    let a = instance(&store, script(), SseOptions::agui()).await;
    let b = instance(&store, script(), SseOptions::agui()).await;
    let id = interrupted(&a, "t2").await;
    shared(&store, &id).await;

    let mallory = [("x-test-principal", "mallory")];
    let approve = resume("t2", "r2", &id, json!({"approved": true}));
    let (status, _, _, body) = post_sse(&http(), &b.url, &approve, &mallory).await;
    assert_eq!(status, 403, "{body}");
    let bad = resume("t2", "r2", &id, json!({"approved": "yes"}));
    let (status, _, _, body) = post_sse(&http(), &b.url, &bad, &ALICE).await;
    assert_eq!(status, 422, "{body}");
    // Another thread's id does not reach it.
    let elsewhere = resume("t-other", "r2", &id, json!({"approved": true}));
    let (status, _, _, body) = post_sse(&http(), &b.url, &elsewhere, &ALICE).await;
    assert_eq!(status, 404, "{body}");
    // Still pending, still answerable by its owner.
    let row = store.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Pending);
    let deny = resume("t2", "r2", &id, json!({"approved": false, "reason": "no"}));
    let (status, _, events, body) = post_sse(&http(), &b.url, &deny, &ALICE).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(types(&events).last().unwrap(), "RUN_FINISHED");
}

#[tokio::test]
async fn an_expired_interrupt_is_refused_everywhere_and_its_run_cancelled() {
    let store = Arc::new(MemoryStore::new());
    let script = || agui_server::approval_script(DecisionKind::Permission);
    let short = || SseOptions::agui().interrupt_timeout(Duration::from_millis(300));
    let a = instance(&store, script(), short()).await;
    let b = instance(&store, script(), short()).await;
    let id = interrupted(&a, "t3").await;
    shared(&store, &id).await;
    eventually("the row expires", async || {
        store.approval(&id).await.unwrap().unwrap().state == ApprovalState::Expired
    })
    .await;
    eventually("the parked run is gone", async || {
        a.handler.pending_interrupts() == 0
    })
    .await;
    let (status, _, _, body) = post_sse(
        &http(),
        &b.url,
        &resume("t3", "r2", &id, json!({"approved": true})),
        &ALICE,
    )
    .await;
    assert!(status == 409 || status == 410, "{status} {body}");
}

/// Read the first `n` events of a run, then drop the connection.
async fn read_then_drop(url: &str, body: &Value, n: usize) -> Vec<SseEvent> {
    let resp = http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .header("x-test-principal", "alice")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    let mut stream = resp.bytes_stream();
    while events.len() < n {
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("frames within 10 s")
            .expect("the stream goes on")
            .unwrap();
        events.extend(parser.push(&chunk));
    }
    events
}

/// The outcome the event log recorded for the (only) run of `thread`.
async fn logged_outcome(store: &MemoryStore, thread: &str) -> Option<String> {
    let page = store
        .events(&agui_thread_key(NS, thread), &EventQuery::since(0))
        .await
        .unwrap();
    page.events.iter().find_map(|r| match &r.event {
        Event::RunFinished(f) => Some(if f.failed {
            format!("failed: {}", f.message)
        } else {
            "ok".to_owned()
        }),
        _ => None,
    })
}

#[tokio::test]
async fn a_dropped_stream_resumed_on_another_instance_runs_to_its_end() {
    let store = Arc::new(MemoryStore::new());
    // A 4 s run, a 1.5 s grace: without B's reader announcing itself, A
    // would cancel the run long before its end.
    let slow = || agui_server::chunked_script(80, 16, Duration::from_millis(50));
    let opts = || SseOptions::agui().reconnect_grace(Duration::from_millis(1500));
    let a = instance(&store, slow(), opts()).await;
    let b = instance(&store, slow(), opts()).await;
    let first = read_then_drop(&a.url, &run_input("t4", "r1", "go"), 3).await;
    let cut = first.last().unwrap().id.clone().unwrap();
    // Reconnect to B a while later (still within the grace).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _, rest, body) = post_sse(
        &http(),
        &b.url,
        &run_input("t4", "r1", "ignored"),
        &[
            ("last-event-id", cut.as_str()),
            ("x-test-principal", "alice"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // B's reader kept the run alive on A for the whole 4 s run.
    let last = rest.last().unwrap().json();
    assert_eq!(last["type"], "RUN_FINISHED", "{rest:?}");
    assert_eq!(last["outcome"]["type"], "success");
    let chunks = rest
        .iter()
        .filter(|e| e.json()["type"] == "TEXT_MESSAGE_CONTENT")
        .count()
        + first
            .iter()
            .filter(|e| e.json()["type"] == "TEXT_MESSAGE_CONTENT")
            .count();
    assert_eq!(chunks, 80);
    assert_eq!(logged_outcome(&store, "t4").await.as_deref(), Some("ok"));
}

/// The (hanging) run of `thread` is still unfinished half a second from
/// now: nothing ended it meanwhile (a cancel reaches the log within
/// milliseconds).
async fn still_unfinished(store: &MemoryStore, thread: &str) {
    for _ in 0..10 {
        let outcome = logged_outcome(store, thread).await;
        assert_eq!(outcome, None, "the run of {thread} ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_run_nobody_reads_is_cancelled_after_the_grace() {
    let store = Arc::new(MemoryStore::new());
    let hanging = agui_server::hanging_script;
    // A generous grace: the run outlives the check below by seconds.
    let opts = SseOptions::agui().reconnect_grace(Duration::from_secs(5));
    let a = instance(&store, hanging(), opts).await;
    read_then_drop(&a.url, &run_input("t5", "r1", "go"), 2).await;
    // Not cancelled at the drop: the grace runs first …
    still_unfinished(&store, "t5").await;
    // … then it is.
    eventually("the run is cancelled", async || {
        logged_outcome(&store, "t5").await.is_some()
    })
    .await;
    let outcome = logged_outcome(&store, "t5").await.unwrap();
    assert!(outcome.contains("cancel"), "{outcome}");
}

#[tokio::test]
async fn the_owner_stops_a_run_at_once_and_nobody_else_can() {
    let store = Arc::new(MemoryStore::new());
    // A long grace: only the explicit stop can end the run in time.
    let opts = SseOptions::agui().reconnect_grace(Duration::from_secs(600));
    let a = instance(&store, agui_server::hanging_script(), opts).await;
    let events = read_then_drop(&a.url, &run_input("t6", "r1", "go"), 2).await;
    assert_eq!(events[0].json()["runId"], "r1");
    let mallory = Principal::new("mallory");
    let refused = a.handler.cancel_run("t6", "r1", &mallory);
    assert!(
        matches!(refused, Err(RequestError::Forbidden(_))),
        "{refused:?}"
    );
    still_unfinished(&store, "t6").await;
    assert!(
        a.handler
            .cancel_run("t6", "nope", &Principal::new("alice"))
            .is_err()
    );
    a.handler
        .cancel_run("t6", "r1", &Principal::new("alice"))
        .unwrap();
    eventually("the run is cancelled", async || {
        logged_outcome(&store, "t6").await.is_some()
    })
    .await;
}

#[tokio::test]
async fn a_run_recorded_interrupted_ends_its_remote_readers_at_once() {
    let store = Arc::new(MemoryStore::new());
    // Its host "dies": the run hangs, nobody ends it, and the idle limit is
    // far away (the default two minutes).
    let opts = || SseOptions::agui().reconnect_grace(Duration::from_secs(600));
    let a = instance(&store, agui_server::hanging_script(), opts()).await;
    let b = instance(&store, agui_server::hanging_script(), opts()).await;
    let first = read_then_drop(&a.url, &run_input("t7", "r1", "go"), 3).await;
    let cut = first.last().unwrap().id.clone().unwrap();
    let key = agui_thread_key(NS, "t7");
    let page = store.events(&key, &EventQuery::since(0)).await.unwrap();
    let core_run_id = page.events[0].run_id.clone();
    let reader = tokio::spawn({
        let url = b.url.clone();
        async move {
            post_sse(
                &http(),
                &url,
                &run_input("t7", "r1", "ignored"),
                &[
                    ("last-event-id", cut.as_str()),
                    ("x-test-principal", "alice"),
                ],
            )
            .await
        }
    });
    // The host that recovered the lease records the interruption.
    let now = chrono::Utc::now();
    agent_adaptor_bridges::agui::record_interruption(
        store.as_ref(),
        &agent_adaptor_core::thread::InterruptedRun {
            key: key.clone(),
            run_id: core_run_id,
            prompt: Some("go".into()),
            started_at: now,
            interrupted_at: now,
        },
    )
    .await
    .unwrap();
    let (status, _, rest, body) = reader.await.unwrap();
    assert_eq!(status, 200, "{body}");
    let last = rest.last().unwrap().json();
    assert_eq!(last["type"], "RUN_ERROR", "{rest:?}");
    assert_eq!(last["code"], "interrupted");
    a.handler
        .cancel_run("t7", "r1", &Principal::new("alice"))
        .unwrap();
}
