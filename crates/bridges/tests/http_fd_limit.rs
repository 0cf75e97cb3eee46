//! The serve loop under a small file-descriptor limit (`RLIMIT_NOFILE` soft
//! limit 256, as `prlimit --nofile=256` would set): 300 idle sockets do not
//! starve it, and accept failing with `EMFILE` neither crashes nor spins it.
//!
//! The server runs in a child process (this test binary again, running only
//! [`child_server`] with `CHILD_ENV` set), so the lowered limit and the
//! 300 client sockets stay in different processes.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/http_raw.rs"]
mod http_raw;

use std::process::Stdio;
use std::time::Duration;

use agent_adaptor_bridges::http::{HttpServer, ServerLimits};
use http_raw::{WAIT, get_on, router};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::TcpStream;

/// Set in the child: which limits it serves with.
const CHILD_ENV: &str = "AGENT_ADAPTOR_HTTP_FD_CHILD";
/// The child's descriptor limit.
const FD_LIMIT: u64 = 256;
/// Idle sockets the parent opens.
const IDLE: usize = 300;

/// The server side, run only as the child of the tests below; without
/// `CHILD_ENV` it does nothing.
#[tokio::test]
async fn child_server() {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return;
    };
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let hard = getrlimit(Resource::Nofile).maximum;
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(FD_LIMIT),
            maximum: hard,
        },
    )
    .unwrap();
    let limits = match mode.as_str() {
        // Derived from the lowered limit.
        "default" => ServerLimits::default(),
        // Far above it: accept itself fails with EMFILE.
        _ => ServerLimits::default().max_connections(100_000),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("PORT {}", listener.local_addr().unwrap().port());
    // Serve until the parent closes our stdin.
    let stdin_closed = async {
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 64];
        while stdin.read(&mut buf).await.is_ok_and(|n| n > 0) {}
    };
    HttpServer::new(listener, router(Duration::ZERO))
        .limits(limits)
        .serve(stdin_closed)
        .await;
    println!("SERVED");
}

/// Start the child in `mode`, open `IDLE` idle sockets to it, then make a
/// request: it must be answered, and the child must exit cleanly when
/// told to.
async fn idle_flood_then_request(mode: &str) {
    let exe = std::env::current_exe().unwrap();
    let mut child = tokio::process::Command::new(exe)
        .args(["--exact", "child_server", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port: u16 = tokio::time::timeout(WAIT, async {
        loop {
            let line = lines.next_line().await.unwrap().expect("the child exited");
            // libtest may print "test child_server ... " before it.
            if let Some((_, p)) = line.split_once("PORT ") {
                return p.trim().parse().unwrap();
            }
        }
    })
    .await
    .expect("the child did not start");
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut idle = Vec::new();
    for _ in 0..IDLE {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    let mut s = TcpStream::connect(addr).await.unwrap();
    assert_eq!(get_on(&mut s, "/").await, (200, "ok".into()));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the server process died"
    );
    drop(child.stdin.take());
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("the server did not stop")
        .unwrap();
    assert!(status.success(), "the server exited with {status}");
    let mut rest = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        rest.push(line);
    }
    assert!(rest.iter().any(|l| l.contains("SERVED")), "{rest:?}");
}

#[tokio::test]
async fn with_256_descriptors_300_idle_sockets_do_not_starve_the_server() {
    idle_flood_then_request("default").await;
}

#[tokio::test]
async fn accept_failing_with_emfile_neither_crashes_nor_starves_the_server() {
    idle_flood_then_request("emfile").await;
}
