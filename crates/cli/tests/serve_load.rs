//! `agent-adaptor serve` under load, with authentication on: 500 raw SSE
//! runs of one bearer-token client at once (its per-client run limit set to
//! exactly 500), plus a few AG-UI runs of browser sessions (cookies) in the
//! mix. Every stream is complete and ordered, and all 500 streams were open
//! at the same time. No timing is asserted; `agent-adaptor-bench
//! serve-load` measures the same load in a release build
//! (`docs/performance.md`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

#[path = "../../bench/src/sse_client.rs"]
mod sse_client;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use sse_client::{SseRequest, check_agui, check_raw, post_sse};
use support::server::{Server, serve_with};

/// Raw SSE runs at once.
const RUNS: usize = 500;
/// AG-UI runs (each its own browser session) in the mix.
const AGUI_RUNS: usize = 8;
/// Every bounded wait of this test.
const WAIT: Duration = Duration::from_secs(120);

/// Descriptors this process needs: a socket per stream, and the server (a
/// child, inheriting the limit) its side of each plus the playground's
/// model connections (up to two per concurrent run) and its own files.
const NEEDED_FDS: u64 = 4096;

/// Raise this process's soft `RLIMIT_NOFILE` towards [`NEEDED_FDS`] (the
/// server started afterwards inherits it); the limit now in force.
fn raise_fd_limit() -> u64 {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    if soft < NEEDED_FDS {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, NEEDED_FDS.min(hard), hard);
    }
    getrlimit(Resource::RLIMIT_NOFILE).unwrap().0
}

/// The server's `serving max_connections=N` log line, waited for.
async fn max_connections(server: &Server) -> usize {
    let deadline = Instant::now() + WAIT;
    loop {
        let log = server.log_text();
        if let Some(n) = log
            .lines()
            .find_map(|l| l.split("max_connections=").nth(1))
            .and_then(|rest| rest.split_whitespace().next())
        {
            return n.parse().unwrap();
        }
        assert!(Instant::now() < deadline, "no `serving` line: {log}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A browser session's cookie (`name=value`), bought with the token.
async fn session_cookie(server: &Server) -> String {
    let resp = server
        .client()
        .post(format!("{}/api/session", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let cookie = resp.headers()["set-cookie"].to_str().unwrap();
    cookie.split(';').next().unwrap().to_owned()
}

/// The most runs in progress at once in the server's log (its `run
/// started` / `run finished` lines, in the order they were written).
fn peak_runs_in_log(log: &str) -> usize {
    let (mut now, mut peak) = (0usize, 0usize);
    for line in log
        .lines()
        .filter(|l| l.contains("agent_adaptor_core::run:"))
    {
        if line.contains(" run started") {
            now += 1;
            peak = peak.max(now);
        } else if line.contains(" run finished") {
            now = now.saturating_sub(1);
        }
    }
    peak
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_concurrent_raw_sse_runs_with_auth_complete_in_order() {
    let fds = raise_fd_limit();
    assert!(
        fds >= 2 * RUNS as u64 + 256,
        "this test needs ~{NEEDED_FDS} file descriptors (500 client sockets here, the server's \
         side of each and its model connections); the hard limit allows {fds}: raise it (ulimit -Hn)"
    );
    let home = tempfile::tempdir().unwrap();
    let server = serve_with(home.path(), &["--max-runs-per-client", &RUNS.to_string()]);
    // The connection limit derives from the inherited descriptor limit; it
    // must leave room for every stream (else pass --max-connections).
    let max_conn = max_connections(&server).await;
    assert!(max_conn >= RUNS + AGUI_RUNS, "max_connections={max_conn}");
    let addr: SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    let bearer = format!("Bearer {}", server.token.as_ref().unwrap());

    // Every raw stream waits, after its first frame, until all 500 have
    // one: passing this gate means 500 streams, each with its run started,
    // were open at once (as this client sees them). A stream that ends
    // without a frame (refused) opens the gate, so the test fails at once.
    let (gate, _) = tokio::sync::watch::channel(false);
    let gate = Arc::new(gate);
    let arrived = Arc::new(AtomicUsize::new(0));
    let mut raw = Vec::with_capacity(RUNS);
    for i in 0..RUNS {
        let req = SseRequest {
            addr,
            path: "/sse".into(),
            headers: vec![
                ("Authorization".into(), bearer.clone()),
                ("Accept".into(), "text/event-stream".into()),
            ],
            body: json!({"prompt": format!("load {i}"), "sessionKey": format!("load-{i}")})
                .to_string(),
        };
        let (gate, arrived) = (gate.clone(), arrived.clone());
        raw.push(tokio::spawn(async move {
            let mut open = gate.subscribe();
            let hold = {
                let (gate, arrived) = (gate.clone(), arrived.clone());
                async move {
                    if arrived.fetch_add(1, Ordering::SeqCst) + 1 == RUNS {
                        gate.send_replace(true);
                    }
                    let _ = tokio::time::timeout(WAIT, open.wait_for(|o| *o)).await;
                }
            };
            let stream = tokio::time::timeout(WAIT, post_sse(&req, hold)).await;
            if !matches!(&stream, Ok(Ok(s)) if s.first_frame.is_some()) {
                gate.send_replace(true);
            }
            stream
        }));
    }
    // Browser sessions in the mix: AG-UI with a cookie each (and the
    // server's own Origin, as the page sends it).
    let mut agui = Vec::with_capacity(AGUI_RUNS);
    for i in 0..AGUI_RUNS {
        let req = SseRequest {
            addr,
            path: "/agui".into(),
            headers: vec![
                ("Cookie".into(), session_cookie(&server).await),
                ("Origin".into(), server.base.clone()),
                ("Accept".into(), "text/event-stream".into()),
            ],
            body: json!({
                "threadId": format!("load-agui-{i}"),
                "runId": format!("r-{i}"),
                "messages": [{"id": "m1", "role": "user", "content": format!("load {i}")}],
            })
            .to_string(),
        };
        agui.push(tokio::spawn(async move {
            tokio::time::timeout(WAIT, post_sse(&req, async {})).await
        }));
    }

    let mut run_ids = HashSet::new();
    let mut frames = 0usize;
    for (i, task) in raw.into_iter().enumerate() {
        let stream = task
            .await
            .unwrap()
            .unwrap_or_else(|_| panic!("raw run {i} did not end within {WAIT:?}"))
            .unwrap_or_else(|e| panic!("raw run {i}: {e}"));
        let run_id = check_raw(&stream).unwrap_or_else(|e| panic!("raw run {i}: {e}"));
        assert_eq!(
            stream.frames[0].data["meta"]["thread_key"],
            format!("sse/v1//load-{i}"),
            "raw run {i} ran on its own thread"
        );
        frames += stream.frames.len();
        run_ids.insert(run_id);
    }
    let arrived = arrived.load(Ordering::SeqCst);
    assert_eq!(arrived, RUNS, "streams with a first frame");
    assert_eq!(run_ids.len(), RUNS, "every stream is its own run");
    for (i, task) in agui.into_iter().enumerate() {
        let stream = task
            .await
            .unwrap()
            .unwrap_or_else(|_| panic!("AG-UI run {i} did not end within {WAIT:?}"))
            .unwrap_or_else(|e| panic!("AG-UI run {i}: {e}"));
        let last = check_agui(&stream).unwrap_or_else(|e| panic!("AG-UI run {i}: {e}"));
        // The playground's tool call waits for the page's answer.
        assert_eq!(
            last["outcome"]["type"], "interrupt",
            "AG-UI run {i}: {last}"
        );
    }

    // As the server saw it: each raw run was the token's, each AG-UI run a
    // session's; no request was refused.
    let log = server.log_text();
    let raw_started = log
        .lines()
        .filter(|l| l.contains("sse: run started") && l.contains("principal=token"))
        .count();
    assert_eq!(raw_started, RUNS, "raw runs the server started as `token`");
    for refusal in [
        "too many concurrent runs",
        "request refused",
        "authentication failed",
    ] {
        assert!(!log.contains(refusal), "{refusal}: {log}");
    }
    eprintln!(
        "{RUNS} raw SSE streams ({frames} frames) and {AGUI_RUNS} AG-UI streams complete; \
         at most {} runs in progress at once in the server's log",
        peak_runs_in_log(&log)
    );
}
