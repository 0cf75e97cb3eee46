//! Shutdown of a server hosting both bridges on the hardened serve loop,
//! with everything that used to make it hang open at once: a half-sent
//! request head, an AG-UI stream of a running run, an AG-UI run parked at
//! an approval interrupt, and an A2A `SubscribeToTask` on a task waiting
//! for approval. `serve` returns after the grace period, every run ends
//! cancelled, every stream ends (showing the cancellation) and every
//! socket is closed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/a2a_agents.rs"]
mod a2a_agents;
#[path = "support/agui_server.rs"]
mod agui_server;
#[path = "support/http_raw.rs"]
mod http_raw;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_agents::Scenarios;
use agent_adaptor_bridges::ShutdownReport;
use agent_adaptor_bridges::a2a::{
    A2aServer, Client, Message, SendMessageRequest, StreamResponse, TaskState,
};
use agent_adaptor_bridges::agui::{SseHandler, SseOptions};
use agent_adaptor_bridges::http::{HttpServer, ServerLimits};
use agent_adaptor_core::{FailureReason, RunHandle, RunOptions, RunStream, Runner};
use agui_server::{SseEvent, SseParser, reason};
use futures::StreamExt;
use http_raw::{WAIT, closed_by_server, start_with};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// The scenarios runner, recording each run's handle by prompt.
struct Recording {
    inner: Arc<Scenarios>,
    runs: Mutex<Vec<(String, RunHandle)>>,
}

impl Runner for Recording {
    fn stream_with(&self, prompt: &str, options: RunOptions) -> RunStream {
        let stream = self.inner.stream_with(prompt, options);
        self.runs
            .lock()
            .unwrap()
            .push((prompt.to_owned(), stream.handle()));
        stream
    }
}

impl Recording {
    fn run(&self, prompt: &str) -> RunHandle {
        let runs = self.runs.lock().unwrap();
        let found = runs.iter().find(|(p, _)| p == prompt);
        found.map(|(_, h)| h.clone()).expect("the run was started")
    }
}

async fn assert_cancelled(run: &RunHandle, what: &str) {
    let outcome = tokio::time::timeout(WAIT, run.result())
        .await
        .unwrap_or_else(|_| panic!("{what}: the run did not end"));
    assert_eq!(reason(&outcome), Some(FailureReason::Cancelled), "{what}");
}

fn agui_input(thread: &str, prompt: &str) -> Value {
    json!({
        "threadId": thread, "runId": format!("{thread}-r1"), "state": {}, "tools": [],
        "context": [], "forwardedProps": {},
        "messages": [{"id": "m1", "role": "user", "content": prompt}],
    })
}

/// An open AG-UI stream: its response and the events read so far.
struct AguiStream {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    parser: SseParser,
    events: Vec<SseEvent>,
}

impl AguiStream {
    async fn open(url: &str, input: &Value) -> Self {
        let resp = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(input.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        AguiStream {
            body: resp.bytes_stream().boxed(),
            parser: SseParser::default(),
            events: Vec::new(),
        }
    }

    fn types(&self) -> Vec<String> {
        self.events
            .iter()
            .map(|e| e.json()["type"].as_str().unwrap_or("").to_owned())
            .collect()
    }

    /// Read until an event of type `ty` (true), or the end (false).
    async fn until(&mut self, ty: &str) -> bool {
        tokio::time::timeout(WAIT, async {
            loop {
                if self.types().iter().any(|t| t == ty) {
                    return true;
                }
                match self.body.next().await {
                    Some(Ok(chunk)) => self.events.extend(self.parser.push(&chunk)),
                    Some(Err(_)) | None => return false,
                }
            }
        })
        .await
        .expect("the AG-UI stream stalled")
    }

    /// Read to the end of the stream.
    async fn read_to_end(&mut self) {
        let _ = self.until("never-sent").await;
    }
}

#[tokio::test]
async fn shutdown_cancels_every_run_closes_every_stream_and_returns_after_the_grace_period() {
    let runs = Arc::new(Recording {
        inner: Scenarios::new(),
        runs: Mutex::new(Vec::new()),
    });
    let no_expiry = RunOptions::new().approval_timeout(None);
    let agui = SseHandler::new(
        runs.clone(),
        SseOptions::agui().run_options(no_expiry.clone()),
    );
    let a2a = A2aServer::builder(runs.clone())
        .run_options(no_expiry)
        .build();
    let reports: Arc<Mutex<Option<(ShutdownReport, ShutdownReport)>>> = Arc::default();
    let router = agui.router("/agui").merge(a2a.router());
    // serve returns within grace + close wait + about a second, well
    // inside WAIT.
    const CLOSE_WAIT: Duration = Duration::from_secs(5);
    let limits = ServerLimits::default()
        .grace(Duration::from_millis(300))
        .close_wait(CLOSE_WAIT);
    let server = HttpServer::new(http_raw::bind().await, router)
        .limits(limits)
        .on_grace_end({
            let (agui, a2a, reports) = (agui.clone(), a2a.clone(), reports.clone());
            move || async move {
                let got = tokio::join!(agui.shutdown(CLOSE_WAIT), a2a.shutdown(CLOSE_WAIT));
                *reports.lock().unwrap() = Some(got);
            }
        });
    let mut server = start_with(server).await;
    let base = format!("http://{}", server.addr);

    // An AG-UI run streaming (it runs until cancelled).
    let mut streaming =
        AguiStream::open(&format!("{base}/agui"), &agui_input("t1", "hang on")).await;
    assert!(streaming.until("TEXT_MESSAGE_CONTENT").await);
    // An AG-UI run parked at an approval interrupt (its stream ended).
    let mut parked = AguiStream::open(
        &format!("{base}/agui"),
        &agui_input("t2", "approve the listing"),
    )
    .await;
    parked.read_to_end().await;
    assert_eq!(agui.pending_interrupts(), 1, "{:?}", parked.types());
    // An A2A task waiting for approval, and a subscription to it.
    let client = Client::connect(&base).await.unwrap();
    let first: Vec<StreamResponse> = client
        .stream(SendMessageRequest::new(Message::user_text(
            "approve the files",
        )))
        .await
        .unwrap()
        .collect_all()
        .await
        .unwrap();
    let Some(StreamResponse::Task(task)) = first.first() else {
        panic!("no task first: {first:?}");
    };
    assert_eq!(
        first.iter().filter_map(StreamResponse::state).next_back(),
        Some(TaskState::InputRequired)
    );
    let mut subscription = client.subscribe(&task.id).await.unwrap();
    let snapshot = tokio::time::timeout(WAIT, subscription.next())
        .await
        .unwrap();
    assert!(matches!(snapshot, Some(Ok(StreamResponse::Task(_)))));
    // A half-sent request head.
    let mut half = TcpStream::connect(server.addr).await.unwrap();
    half.write_all(b"POST /agui HTTP/1.1\r\nHost: ")
        .await
        .unwrap();

    server.stop();
    tokio::time::timeout(WAIT, &mut server.task)
        .await
        .expect("serve did not return")
        .unwrap();

    // Every run ended cancelled (the driver was cancelled at its wait).
    assert_cancelled(&runs.run("hang on"), "AG-UI streaming run").await;
    assert_cancelled(&runs.run("approve the listing"), "AG-UI parked run").await;
    assert_cancelled(&runs.run("approve the files"), "A2A input-required task").await;
    let (agui_report, a2a_report) = reports.lock().unwrap().expect("the close hook ran");
    assert!(
        agui_report.cancelled >= 2 && agui_report.all_ended(),
        "{agui_report:?}"
    );
    assert_eq!(a2a_report.cancelled, 1, "{a2a_report:?}");
    assert!(a2a_report.all_ended(), "{a2a_report:?}");
    assert_eq!(agui.pending_interrupts(), 0);

    // The streams showed the cancellation, then ended.
    streaming.read_to_end().await;
    let last = streaming.events.last().map(SseEvent::json).unwrap();
    assert_eq!(last["type"], "RUN_FINISHED", "{:?}", streaming.types());
    assert_eq!(last["outcome"]["type"], "cancelled", "{last}");
    let rest: Vec<_> = tokio::time::timeout(WAIT, subscription.collect::<Vec<_>>())
        .await
        .expect("the A2A subscription stayed open");
    let states: Vec<_> = rest
        .iter()
        .filter_map(|r| r.as_ref().ok().and_then(StreamResponse::state))
        .collect();
    assert_eq!(states.last(), Some(&TaskState::Canceled), "{rest:?}");
    assert!(
        closed_by_server(&mut half, WAIT).await,
        "the half-sent head stayed open"
    );

    // A run started on the closed handler (say, by a host still routing to
    // it) is cancelled at once instead of running unowned.
    let again = start_with(HttpServer::new(
        http_raw::bind().await,
        agui.router("/agui"),
    ))
    .await;
    let mut late = AguiStream::open(
        &format!("http://{}/agui", again.addr),
        &agui_input("t3", "hang later"),
    )
    .await;
    late.read_to_end().await;
    let last = late.events.last().map(SseEvent::json).unwrap();
    assert_eq!(last["outcome"]["type"], "cancelled", "{last}");
    assert_cancelled(&runs.run("hang later"), "AG-UI run after shutdown").await;
}
