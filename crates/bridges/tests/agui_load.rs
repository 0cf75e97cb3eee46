//! Load and disconnects: 500 concurrent SSE clients on scripted runs (every
//! stream complete and ordered; p99 first-frame latency printed), and a
//! client that disconnects mid-run gets its run cancelled within 1 s — with
//! a scripted driver, and with a CLI process (the testkit's fake CLI behind
//! the Codex driver; not the real Codex) whose pid must be gone within 1 s.
//! The 1 s bounds are why this binary runs alone, in the serial
//! `process-timing` test group (.config/nextest.toml).
//!
//! Reproduce the latency figure:
//! `cargo nextest run -p agent-adaptor-bridges --test agui_load --no-capture`
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/agui_server.rs"]
mod agui_server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_adaptor_bridges::agui::{FrameId, SseHandler, SseOptions, SseServer};
use agent_adaptor_core::{Agent, FailureReason};
use agent_adaptor_drivers::codex;
use agent_adaptor_testkit::fixtures;
use agent_adaptor_testkit::replay::{OPTS_ENV, fake_cli_binary};
use agui_server::{PATH, Recorder, SseEvent, SseParser, reason, run_input, serve};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::Barrier;

const CLIENTS: usize = 500;
const CHUNKS: usize = 10;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One client: POST, read the whole stream; (response-headers latency,
/// first-frame latency, events).
async fn one_client(
    client: reqwest::Client,
    url: String,
    i: usize,
    barrier: Arc<Barrier>,
) -> (Duration, Duration, Vec<SseEvent>) {
    barrier.wait().await;
    let start = Instant::now();
    let resp = client
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(
            run_input(
                &format!("load-{i}"),
                &format!("run-{i}"),
                &format!("client-{i}"),
            )
            .to_string(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("client {i}: {e}"));
    assert_eq!(resp.status().as_u16(), 200, "client {i}");
    let headers = start.elapsed();
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    let mut first = None;
    let mut body = resp.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.unwrap_or_else(|e| panic!("client {i}: stream broke: {e}"));
        events.extend(parser.push(&chunk));
        if first.is_none() && !events.is_empty() {
            first = Some(start.elapsed());
        }
    }
    let first = first.unwrap_or_else(|| panic!("client {i}: no frame"));
    (headers, first, events)
}

/// Complete and ordered: ids strictly increasing, RUN_STARTED first, exactly
/// one terminal and it is last, the text whole.
fn check_stream(i: usize, events: &[SseEvent]) {
    let ids: Vec<FrameId> = events
        .iter()
        .map(|e| e.id.as_deref().unwrap().parse().unwrap())
        .collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "client {i}: ids {ids:?}"
    );
    let evs: Vec<serde_json::Value> = events.iter().map(SseEvent::json).collect();
    assert_eq!(evs[0]["type"], "RUN_STARTED", "client {i}");
    assert_eq!(evs[0]["runId"], format!("run-{i}"), "client {i}");
    let terminals = evs
        .iter()
        .filter(|e| e["type"] == "RUN_FINISHED" || e["type"] == "RUN_ERROR")
        .count();
    assert_eq!(terminals, 1, "client {i}");
    assert_eq!(evs.last().unwrap()["type"], "RUN_FINISHED", "client {i}");
    assert_eq!(
        evs.last().unwrap()["outcome"]["type"],
        "success",
        "client {i}"
    );
    let text: String = evs
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    let expected: String = (0..CHUNKS)
        .map(|c| format!("{c}:{}", "x".repeat(30)))
        .collect();
    assert_eq!(text, expected, "client {i}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_concurrent_clients_get_complete_ordered_streams() {
    let t = serve(
        agui_server::chunked_script(CHUNKS, 32, Duration::from_millis(5)),
        SseOptions::agui(),
    )
    .await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(CLIENTS)
        .build()
        .unwrap();
    let barrier = Arc::new(Barrier::new(CLIENTS));
    let started = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|i| {
            tokio::spawn(one_client(
                client.clone(),
                t.url.clone(),
                i,
                barrier.clone(),
            ))
        })
        .collect();
    let mut latencies = Vec::with_capacity(CLIENTS);
    let mut header_latencies = Vec::with_capacity(CLIENTS);
    for (i, task) in tasks.into_iter().enumerate() {
        let (headers, first, events) = tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .unwrap_or_else(|_| panic!("client {i} did not finish within 120 s"))
            .unwrap();
        check_stream(i, &events);
        latencies.push(first);
        header_latencies.push(headers);
    }
    let wall = started.elapsed();
    latencies.sort();
    header_latencies.sort();
    let report = format!(
        "agui_load: {CLIENTS} concurrent AG-UI SSE clients, {} frames each, all complete and ordered in {wall:?}; \
         first-frame latency p50 {:?}, p99 {:?}, max {:?} (response headers: p50 {:?}, p99 {:?})",
        CHUNKS + 4,
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        latencies[latencies.len() - 1],
        percentile(&header_latencies, 50.0),
        percentile(&header_latencies, 99.0),
    );
    println!("{report}");
    eprintln!("{report}");
    // Every run was a separate agent run, and every one succeeded.
    assert_eq!(t.runs.count(), CLIENTS);
    for i in 0..CLIENTS {
        let (outcome, _) = t.runs.outcome(i, Duration::from_secs(10)).await;
        assert!(outcome.is_ok(), "run {i}: {:?}", reason(&outcome));
    }
}

type Body = std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>;

/// Read `resp` until an event satisfies `until`; that event and the still
/// open body (dropping it hangs up).
async fn read_until(
    resp: reqwest::Response,
    until: impl Fn(&serde_json::Value) -> bool,
) -> (serde_json::Value, Body) {
    let mut parser = SseParser::default();
    let mut body: Body = Box::pin(resp.bytes_stream());
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(30), body.next())
            .await
            .expect("an event within 30 s")
            .expect("the stream is open")
            .unwrap();
        for e in parser.push(&chunk) {
            let v = e.json();
            if until(&v) {
                return (v, body);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_run_gets_its_run_cancelled_within_a_second() {
    const N: usize = 50;
    let t = serve(agui_server::hanging_script(), SseOptions::agui()).await;
    let client = reqwest::Client::new();
    let tasks: Vec<_> = (0..N)
        .map(|i| {
            let (client, url) = (client.clone(), t.url.clone());
            tokio::spawn(async move {
                let resp = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(run_input("t", &format!("r-{i}"), &format!("client-{i}")).to_string())
                    .send()
                    .await
                    .unwrap();
                let (_, stream) = read_until(resp, |e| e["type"] == "TEXT_MESSAGE_CONTENT").await;
                // Mid-run: the agent waits until cancelled. Hang up.
                drop(stream);
                Instant::now()
            })
        })
        .collect();
    let mut worst = Duration::ZERO;
    for (i, task) in tasks.into_iter().enumerate() {
        let hung_up = task.await.unwrap();
        let run = t.runs.find(&format!("client-{i}"));
        let (outcome, at) = t.runs.outcome(run, Duration::from_secs(10)).await;
        assert_eq!(
            reason(&outcome),
            Some(FailureReason::Cancelled),
            "client {i}"
        );
        let after = at.saturating_duration_since(hung_up);
        assert!(
            after < Duration::from_secs(1),
            "client {i}: run cancelled {after:?} after the disconnect"
        );
        worst = worst.max(after);
    }
    println!("agui_load: {N} disconnects, worst disconnect → run cancelled: {worst:?}");
}

fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A zombie is dead; only its parent's reaping is left.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnect_kills_the_fake_cli_process_behind_the_codex_driver_within_a_second() {
    // The Codex driver runs the testkit's fake CLI (a child process, not
    // the real Codex), which prints its capture slowly (3 s per line) and
    // then would hang forever. On cancel
    // the driver closes stdin, waits its cancel grace, then signals the
    // process group: that grace (500 ms by default) is most of the time to
    // the kill, so it is set to 250 ms here to leave the bridge's share
    // (tens of ms) a margin under a loaded CI machine.
    let mut cfg = codex::Config {
        command: fake_cli_binary().unwrap(),
        transport: codex::Transport::Exec,
        cancel_grace: Duration::from_millis(250),
        ..Default::default()
    };
    cfg.env.insert(
        OPTS_ENV.into(),
        format!(
            "--fixture {} --delay-ms 3000 --hang",
            fixtures::path("codex/exec-basic.jsonl").display()
        ),
    );
    let runs = Recorder::new(Agent::new(codex::driver(cfg)));
    let handler = SseHandler::new(runs.clone(), SseOptions::raw());
    let server = SseServer::bind_local(handler.router(PATH)).await.unwrap();
    for round in 0..3 {
        let resp = reqwest::Client::new()
            .post(server.url(PATH))
            .header("content-type", "application/json")
            .body(json!({"prompt": format!("round-{round}")}).to_string())
            .send()
            .await
            .unwrap();
        let (spawn, stream) = read_until(resp, |e| {
            e["type"] == "process_info" && e["kind"] == "spawn"
        })
        .await;
        let pid: u32 = spawn["metadata"]["pid"].as_str().unwrap().parse().unwrap();
        assert!(!process_gone(pid), "the CLI (pid {pid}) runs mid-run");
        drop(stream);
        let hung_up = Instant::now();
        while !process_gone(pid) {
            assert!(
                hung_up.elapsed() < Duration::from_secs(10),
                "pid {pid} still alive 10 s after the disconnect"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let gone_after = hung_up.elapsed();
        println!(
            "agui_load: round {round}: CLI pid {pid} gone {gone_after:?} after the disconnect"
        );
        assert!(
            gone_after < Duration::from_secs(1),
            "pid {pid} was gone only {gone_after:?} after the disconnect"
        );
        let run = runs.find(&format!("round-{round}"));
        let (outcome, _) = runs.outcome(run, Duration::from_secs(10)).await;
        assert_eq!(reason(&outcome), Some(FailureReason::Cancelled));
    }
}
