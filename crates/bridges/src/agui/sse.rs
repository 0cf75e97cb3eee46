//! SSE framing, and the pump that moves one subscriber's frames into an
//! HTTP response body under a per-write deadline.

use std::convert::Infallible;
use std::fmt::Display;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use tokio::sync::mpsc;

use super::hub::Subscription;

/// The keep-alive comment.
pub(crate) const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// One SSE event: `id: <id>\ndata: <json>\n\n` (LF only; the JSON is one
/// line because serde escapes control characters in strings).
pub(crate) fn frame(id: impl Display, json: &str) -> Bytes {
    Bytes::from(format!("id: {id}\ndata: {json}\n\n"))
}

/// A response body fed by `sub`. Each frame must be taken by the
/// connection within `write_timeout`; a stalled or closed connection ends
/// the pump, which detaches the subscriber.
pub(crate) fn body(
    sub: Subscription,
    write_timeout: Duration,
    keep_alive: Option<Duration>,
) -> Body {
    // Capacity 1: a send completes only when hyper has taken the previous
    // frame, so the deadline measures the connection, not a queue.
    let (tx, rx) = mpsc::channel::<Bytes>(1);
    tokio::spawn(pump(sub, tx, write_timeout, keep_alive));
    Body::from_stream(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<Bytes, Infallible>(b), rx))
    }))
}

async fn idle(keep_alive: Option<Duration>) {
    match keep_alive {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

async fn pump(
    mut sub: Subscription,
    tx: mpsc::Sender<Bytes>,
    write_timeout: Duration,
    keep_alive: Option<Duration>,
) {
    loop {
        let next = tokio::select! {
            biased;
            () = tx.closed() => return,
            f = sub.next() => f,
            () = idle(keep_alive) => Some(Bytes::from_static(KEEP_ALIVE)),
        };
        let Some(bytes) = next else {
            return;
        };
        match tokio::time::timeout(write_timeout, tx.send(bytes)).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return,
            Err(_) => {
                tracing::debug!(
                    ?write_timeout,
                    "SSE write deadline passed; dropping the client"
                );
                return;
            }
        }
    }
}
