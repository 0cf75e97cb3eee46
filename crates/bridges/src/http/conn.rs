//! One connection: its shared state (requests in flight, when it went idle,
//! when a request head started arriving), the IO wrapper and service that
//! keep that state, and the task that serves it under the deadlines.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response};
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::registry::Registry;

struct Phase {
    /// Requests whose response body is not yet finished.
    in_flight: usize,
    /// When the last request finished (or the connection opened).
    idle_since: Instant,
    /// When the first byte of a request head arrived, while none was in
    /// flight.
    head_started: Option<Instant>,
    /// Chosen to make room; not chosen again.
    evicting: bool,
}

/// What the registry and the connection task know of one connection.
pub(super) struct ConnState {
    pub(super) id: u64,
    phase: Mutex<Phase>,
    changed: Notify,
    /// Stop taking requests: close at once when no request is in flight,
    /// else after it (drain, or eviction).
    pub(super) graceful: CancellationToken,
    /// Drop the connection now.
    pub(super) kill: CancellationToken,
}

impl ConnState {
    pub(super) fn new(id: u64, graceful: CancellationToken, kill: CancellationToken) -> Self {
        ConnState {
            id,
            phase: Mutex::new(Phase {
                in_flight: 0,
                idle_since: Instant::now(),
                head_started: None,
                evicting: false,
            }),
            changed: Notify::new(),
            graceful,
            kill,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// When it went idle, if it is idle and not already being evicted.
    pub(super) fn idle_since(&self) -> Option<Instant> {
        let p = self.lock();
        (p.in_flight == 0 && !p.evicting).then_some(p.idle_since)
    }

    /// Mark it as chosen for eviction and ask it to close.
    pub(super) fn evict(&self) {
        self.lock().evicting = true;
        self.graceful.cancel();
    }

    fn on_read(&self) {
        let mut p = self.lock();
        if p.in_flight == 0 && p.head_started.is_none() {
            p.head_started = Some(Instant::now());
            drop(p);
            self.changed.notify_one();
        }
    }

    fn begin_request(self: &Arc<Self>) -> RequestGuard {
        let mut p = self.lock();
        p.in_flight += 1;
        p.head_started = None;
        drop(p);
        self.changed.notify_one();
        RequestGuard { conn: self.clone() }
    }

    fn head_in_progress(&self) -> bool {
        let p = self.lock();
        p.in_flight == 0 && p.head_started.is_some()
    }

    /// The next deadline, if any: a head that must complete, an idle
    /// connection that must see a request, or (once asked to close at
    /// `closing`) an idle one that must be gone. None while a request is in
    /// flight: a response or stream is never cut by these.
    fn deadline(
        &self,
        header: Duration,
        idle: Duration,
        closing: Option<Instant>,
    ) -> Option<(Instant, Expiry)> {
        let p = self.lock();
        if p.in_flight > 0 {
            return None;
        }
        Some(match (p.head_started, closing) {
            (Some(t), _) => (t + header, Expiry::Header),
            // hyper closes it itself once the last response is flushed.
            (None, Some(c)) => (c.max(p.idle_since) + header, Expiry::Linger),
            (None, None) => (p.idle_since + idle, Expiry::Idle),
        })
    }
}

/// Held from the moment a request head is parsed until its response body is
/// finished (or dropped).
struct RequestGuard {
    conn: Arc<ConnState>,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let mut p = self.conn.lock();
        p.in_flight = p.in_flight.saturating_sub(1);
        if p.in_flight == 0 {
            p.idle_since = Instant::now();
        }
        drop(p);
        self.conn.changed.notify_one();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expiry {
    Header,
    Idle,
    Linger,
}

/// The socket, noting when bytes of a new request head arrive.
struct TrackedIo {
    inner: TcpStream,
    conn: Arc<ConnState>,
}

impl AsyncRead for TrackedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.conn.on_read();
        }
        polled
    }
}

impl AsyncWrite for TrackedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// A response body that keeps its request counted as in flight until it
/// is finished or dropped.
struct Tracked {
    body: Body,
    _guard: RequestGuard,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The router, seen by hyper, counting requests in flight.
#[derive(Clone)]
struct Service {
    router: Router,
    conn: Arc<ConnState>,
}

type ServiceFuture = Pin<Box<dyn Future<Output = Result<Response<Tracked>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for Service {
    type Response = Response<Tracked>;
    type Error = Infallible;
    type Future = ServiceFuture;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let guard = self.conn.begin_request();
        let mut router = self.router.clone();
        Box::pin(async move {
            let ready = futures::future::poll_fn(|cx| {
                tower_service::Service::<Request<Incoming>>::poll_ready(&mut router, cx)
            })
            .await;
            let response = match ready {
                Ok(()) => match tower_service::Service::call(&mut router, req).await {
                    Ok(r) => r,
                    Err(never) => match never {},
                },
                Err(never) => match never {},
            };
            Ok(response.map(|body| Tracked {
                body,
                _guard: guard,
            }))
        })
    }
}

/// Everything a connection task needs besides its socket.
pub(super) struct ConnSetup {
    pub(super) router: Router,
    pub(super) http: http1::Builder,
    pub(super) header_read_timeout: Duration,
    pub(super) idle_timeout: Duration,
}

/// Removes the connection from the registry when its task ends (however).
struct Registered {
    registry: Arc<Registry>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.registry.remove(self.id);
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Serve `stream` until it closes, times out or is told to close.
pub(super) async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    conn: Arc<ConnState>,
    registry: Arc<Registry>,
    setup: Arc<ConnSetup>,
) {
    let _registered = Registered {
        registry,
        id: conn.id,
    };
    let io = TokioIo::new(TrackedIo {
        inner: stream,
        conn: conn.clone(),
    });
    let service = Service {
        router: setup.router.clone(),
        conn: conn.clone(),
    };
    let served = setup.http.serve_connection(io, service);
    tokio::pin!(served);
    // Set once the connection was asked to close: once idle it then has one
    // header timeout to go (flushing its last response) before it is dropped.
    let mut closing_since: Option<Instant> = None;
    loop {
        let changed = conn.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let deadline = conn.deadline(setup.header_read_timeout, setup.idle_timeout, closing_since);
        tokio::select! {
            result = served.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
                }
                return;
            }
            () = conn.kill.cancelled() => {
                tracing::debug!(%peer, "HTTP connection dropped (shutdown)");
                return;
            }
            () = conn.graceful.cancelled(), if closing_since.is_none() => {
                if conn.head_in_progress() {
                    tracing::debug!(%peer, "closing a connection with a half-read request head");
                    return;
                }
                served.as_mut().graceful_shutdown();
                closing_since = Some(Instant::now());
            }
            () = sleep_until(deadline.map(|d| d.0)) => match deadline.map(|d| d.1) {
                Some(Expiry::Header) => {
                    tracing::debug!(%peer, timeout = ?setup.header_read_timeout,
                        "request head not received in time; closing the connection");
                    return;
                }
                Some(Expiry::Idle) => {
                    tracing::debug!(%peer, timeout = ?setup.idle_timeout,
                        "idle connection timed out; closing it");
                    served.as_mut().graceful_shutdown();
                    closing_since = Some(Instant::now());
                }
                Some(Expiry::Linger) | None => {
                    tracing::debug!(%peer, "connection did not close in time; dropping it");
                    return;
                }
            },
            () = &mut changed => {}
        }
    }
}
