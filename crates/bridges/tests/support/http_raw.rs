//! Raw-socket helpers for the HTTP serve-loop tests: a tiny router, a
//! server on 127.0.0.1:0, and byte-level HTTP/1.1 requests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::Duration;

use agent_adaptor_bridges::http::{HttpServer, ServerLimits};
use axum::Router;
use axum::routing::get;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A generous bound on every wait of these tests.
pub const WAIT: Duration = Duration::from_secs(20);

/// `GET /` answers `ok`; `GET /slow` answers `slow` after `slow`.
pub fn router(slow: Duration) -> Router {
    router_signalling(slow).0
}

/// [`router`], and a [`Notify`](tokio::sync::Notify) that gets a permit
/// each time a `GET /slow` starts (so a test knows a request is in flight).
pub fn router_signalling(slow: Duration) -> (Router, std::sync::Arc<tokio::sync::Notify>) {
    let started = std::sync::Arc::new(tokio::sync::Notify::new());
    let signal = started.clone();
    let router = Router::new().route("/", get(|| async { "ok" })).route(
        "/slow",
        get(move || {
            let signal = signal.clone();
            async move {
                signal.notify_one();
                tokio::time::sleep(slow).await;
                "slow"
            }
        }),
    );
    (router, started)
}

/// A server in the background, stopped by `stop`.
pub struct Running {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    pub task: JoinHandle<()>,
}

impl Running {
    /// Fire the shutdown signal.
    pub fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// Serve `router` on 127.0.0.1 with `limits`.
pub async fn start(router: Router, limits: ServerLimits) -> Running {
    start_with(HttpServer::new(bind().await, router).limits(limits)).await
}

/// A listener on 127.0.0.1 at a free port.
pub async fn bind() -> tokio::net::TcpListener {
    tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()
}

/// Serve `server` in the background.
pub async fn start_with(server: HttpServer) -> Running {
    let addr = server.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(server.serve(async move {
        let _ = rx.await;
    }));
    Running {
        addr,
        stop: Some(tx),
        task,
    }
}

/// Send a keep-alive `GET path` on `s` and read one response: its status
/// and body (the response must carry a Content-Length).
pub async fn get_on(s: &mut TcpStream, path: &str) -> (u16, String) {
    let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    tokio::time::timeout(WAIT, read_response(s))
        .await
        .expect("no response in time")
}

async fn read_response(s: &mut TcpStream) -> (u16, String) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed before a full response: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).into_owned();
        let Some(end) = text.find("\r\n\r\n") else {
            continue;
        };
        let head = &text[..end];
        let len: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .expect("a content-length");
        if buf.len() >= end + 4 + len {
            let status = head.split(' ').nth(1).unwrap().parse().unwrap();
            return (status, text[end + 4..end + 4 + len].to_owned());
        }
    }
}

/// Wait (up to `within`) until the server closes `s`: true when it did
/// (EOF or reset), false when it was still open at the end.
pub async fn closed_by_server(s: &mut TcpStream, within: Duration) -> bool {
    let mut chunk = [0u8; 1024];
    let outcome = tokio::time::timeout(within, async {
        loop {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    outcome.is_ok()
}
