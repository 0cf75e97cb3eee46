//! The hardened serve loop (`agent_adaptor_bridges::http`): header and idle
//! timeouts, the connection limit, and bounded shutdown, seen from raw
//! sockets on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/http_raw.rs"]
mod http_raw;

use std::time::Duration;

use agent_adaptor_bridges::http::ServerLimits;
use http_raw::{WAIT, closed_by_server, get_on, router, router_signalling, start};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const SHORT: Duration = Duration::from_millis(300);
const LONG: Duration = Duration::from_secs(600);

fn limits() -> ServerLimits {
    ServerLimits::default()
        .header_read_timeout(LONG)
        .idle_timeout(LONG)
}

#[tokio::test]
async fn a_half_sent_request_head_is_closed_after_the_header_timeout() {
    let server = start(router(SHORT), limits().header_read_timeout(SHORT)).await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    assert!(
        closed_by_server(&mut s, WAIT).await,
        "the server kept a half-sent head open"
    );
    // The server still answers others.
    let mut ok = TcpStream::connect(server.addr).await.unwrap();
    assert_eq!(get_on(&mut ok, "/").await, (200, "ok".into()));
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let server = start(
        router(Duration::from_secs(1)),
        limits().idle_timeout(SHORT).header_read_timeout(SHORT),
    )
    .await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    // A request longer than both timeouts is not idle: it is answered.
    assert_eq!(get_on(&mut s, "/slow").await, (200, "slow".into()));
    assert_eq!(get_on(&mut s, "/").await, (200, "ok".into()));
    assert!(
        closed_by_server(&mut s, WAIT).await,
        "the server kept an idle keep-alive connection open"
    );
    // A fresh connection that never sends anything is idle too.
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    assert!(closed_by_server(&mut silent, WAIT).await);
}

#[tokio::test]
async fn at_the_connection_limit_idle_connections_make_room_for_a_request() {
    const MAX: usize = 16;
    const EXTRA: usize = 50;
    let server = start(router(SHORT), limits().max_connections(MAX)).await;
    let mut idle = Vec::new();
    for _ in 0..MAX + EXTRA {
        idle.push(TcpStream::connect(server.addr).await.unwrap());
    }
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    assert_eq!(get_on(&mut s, "/").await, (200, "ok".into()));
    // The room was made by closing idle connections, the oldest first.
    let mut closed = 0;
    for c in &mut idle {
        if closed_by_server(c, Duration::from_millis(100)).await {
            closed += 1;
        }
    }
    assert!(
        closed >= EXTRA,
        "only {closed} idle connections were closed to make room"
    );
    // A few more may go (the server keeps a slot free for the next
    // client), not all.
    assert!(closed < MAX + EXTRA, "every idle connection was closed");
}

#[tokio::test]
async fn shutdown_drops_a_half_sent_head_and_returns_after_the_grace_period() {
    let mut server = start(router(LONG), limits().grace(SHORT).close_wait(SHORT)).await;
    let mut half = TcpStream::connect(server.addr).await.unwrap();
    half.write_all(b"GET / HTTP/1.1\r\nHost: ").await.unwrap();
    // A request that would take ten minutes.
    let mut slow = TcpStream::connect(server.addr).await.unwrap();
    slow.write_all(b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut idle = TcpStream::connect(server.addr).await.unwrap();
    assert_eq!(get_on(&mut idle, "/").await, (200, "ok".into()));
    server.stop();
    tokio::time::timeout(WAIT, &mut server.task)
        .await
        .expect("serve did not return after the grace period")
        .unwrap();
    for (name, s) in [
        ("half", &mut half),
        ("slow", &mut slow),
        ("idle", &mut idle),
    ] {
        assert!(closed_by_server(s, WAIT).await, "{name} stayed open");
    }
    assert!(
        TcpStream::connect(server.addr).await.is_err(),
        "the listener is closed"
    );
}

#[tokio::test]
async fn shutdown_lets_an_in_flight_request_finish_within_the_grace_period() {
    // The request outlasts both timeouts, not the grace period.
    let (slow, started) = router_signalling(Duration::from_secs(1));
    let mut server = start(
        slow,
        limits()
            .header_read_timeout(SHORT)
            .idle_timeout(SHORT)
            .grace(WAIT),
    )
    .await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    let answer = tokio::spawn(async move { get_on(&mut s, "/slow").await });
    // Shut down once the request is in flight.
    tokio::time::timeout(WAIT, started.notified())
        .await
        .expect("the request reached its handler");
    server.stop();
    assert_eq!(answer.await.unwrap(), (200, "slow".into()));
    tokio::time::timeout(WAIT, &mut server.task)
        .await
        .expect("serve did not return once the request finished")
        .unwrap();
}
