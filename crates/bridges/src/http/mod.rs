//! A hardened HTTP/1.1 serve loop for the bridges' routers, used instead of
//! `axum::serve`: every connection is bounded in time and number, and
//! shutdown is bounded too.
//!
//! * **Header read timeout** ([`ServerLimits::header_read_timeout`], 10 s):
//!   counted from the first byte of a request head; a client that sends
//!   part of a header and stalls is dropped.
//! * **Idle timeout** ([`ServerLimits::idle_timeout`], 60 s): a connection
//!   with no request in flight and no byte of a new one (kept alive, or
//!   fresh and silent) is closed.
//! * **Connection limit** ([`ServerLimits::max_connections`], from the
//!   `RLIMIT_NOFILE` soft limit minus a reserve): at the limit the
//!   connection idle the longest is closed to make room, or, when every
//!   connection is inside a request, accepting waits until one closes. An
//!   accept error (`EMFILE`, `ENFILE` …) never ends the loop: it closes
//!   the oldest idle connection and backs off (5 ms doubling to 1 s).
//! * **Shutdown**: when the shutdown future resolves, the listener is
//!   closed, idle connections (and ones with a half-read head) close at
//!   once, in-flight requests and streams get [`ServerLimits::grace`] to
//!   finish; then the [close hook](HttpServer::on_grace_end) runs (cancel
//!   the runs, so open streams end with their final frame), the
//!   connections still open get [`ServerLimits::close_wait`], and the rest
//!   are dropped. [`serve`](HttpServer::serve) returns within
//!   grace + close wait + about a second.
//!
//! Connection-level events (limits reached, timeouts, drops) are logged
//! with `tracing` at debug level.
//!
//! ```no_run
//! use std::time::Duration;
//! use agent_adaptor_bridges::http::{HttpServer, ServerLimits};
//! # async fn demo(router: axum::Router, stop: tokio::sync::oneshot::Receiver<()>) -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! HttpServer::new(listener, router)
//!     .limits(ServerLimits::default().grace(Duration::from_secs(5)))
//!     .on_grace_end(|| async { /* e.g. handler.shutdown(Duration::from_secs(2)).await; */ })
//!     .serve(async { let _ = stop.await; })
//!     .await;
//! # Ok(()) }
//! ```

mod conn;
mod limits;
mod registry;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::TokioTimer;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use limits::{
    DEFAULT_CLOSE_WAIT, DEFAULT_GRACE, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    FALLBACK_MAX_CONNECTIONS, MIN_FD_RESERVE, MIN_MAX_CONNECTIONS, ServerLimits, nofile_soft_limit,
};

use conn::{ConnSetup, ConnState, serve_connection};
use registry::Registry;

/// The first pause after an accept error.
const MIN_BACKOFF: Duration = Duration::from_millis(5);
/// The longest pause after repeated accept errors.
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// How long connection tasks get to notice they were dropped.
const KILL_WAIT: Duration = Duration::from_secs(1);

type CloseHook = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// An HTTP/1.1 server for one [`Router`] on one listener (see the
/// [module docs](self)).
pub struct HttpServer {
    listener: TcpListener,
    router: Router,
    limits: ServerLimits,
    on_grace_end: Option<CloseHook>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.listener.local_addr().ok())
            .field("limits", &self.limits)
            .field("on_grace_end", &self.on_grace_end.is_some())
            .finish()
    }
}

/// The listen backlog [`listen`] asks for.
pub const LISTEN_BACKLOG: u32 = 1024;

/// A listener on `addr` with a backlog of [`LISTEN_BACKLOG`] connections
/// (the kernel caps it at `net.core.somaxconn`). `TcpListener::bind` asks
/// for 128: when more clients than that connect at once, the kernel drops
/// the extra attempts and each client retries a second later (measured: a
/// 1 s p99 for the first frame of 500 simultaneous SSE runs).
pub fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

impl HttpServer {
    /// Serve `router` on `listener` with [`ServerLimits::default`].
    pub fn new(listener: TcpListener, router: Router) -> Self {
        HttpServer {
            listener,
            router,
            limits: ServerLimits::default(),
            on_grace_end: None,
        }
    }

    /// Bind `addr` (see [`listen`]) and serve `router` there.
    pub async fn bind(addr: SocketAddr, router: Router) -> io::Result<Self> {
        Ok(Self::new(listen(addr)?, router))
    }

    /// Replace the limits.
    pub fn limits(mut self, limits: ServerLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Run `hook` once during shutdown, when the drain ends (every
    /// connection finished, or the grace period passed) and before the
    /// connections still open are dropped: the place to cancel the
    /// bridges' runs (e.g. `SseHandler::shutdown`, `A2aServer::shutdown`),
    /// so open streams end with their final frame. It shares
    /// [`ServerLimits::close_wait`] with those streams.
    pub fn on_grace_end<F, Fut>(mut self, hook: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_grace_end = Some(Box::new(move || Box::pin(hook())));
        self
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serve until `shutdown` resolves, then shut down (see the
    /// [module docs](self)); returns when every connection is closed.
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send) {
        let HttpServer {
            listener,
            router,
            limits,
            on_grace_end,
        } = self;
        let mut http = http1::Builder::new();
        // hyper's own header timer runs from the moment it waits for a
        // head, idle or not; ours (below) is precise, hyper's is a backstop.
        http.timer(TokioTimer::new())
            .header_read_timeout(limits.idle_timeout + limits.header_read_timeout)
            .keep_alive(true);
        let setup = Arc::new(ConnSetup {
            router,
            http,
            header_read_timeout: limits.header_read_timeout,
            idle_timeout: limits.idle_timeout,
        });
        let registry = Arc::new(Registry::new());
        let drain = CancellationToken::new();
        let kill = CancellationToken::new();
        accept_loop(
            &listener, shutdown, &limits, &registry, &setup, &drain, &kill,
        )
        .await;
        drop(listener);
        let open = registry.len();
        tracing::debug!(open, grace = ?limits.grace, "HTTP server shutting down; draining");
        drain.cancel();
        let drained = tokio::time::timeout(limits.grace, registry.empty())
            .await
            .is_ok();
        if !drained {
            tracing::debug!(open = registry.len(), "grace period over; closing");
        }
        let _ = tokio::time::timeout(limits.close_wait, async {
            if let Some(hook) = on_grace_end {
                hook().await;
            }
            registry.empty().await;
        })
        .await;
        let open = registry.len();
        if open > 0 {
            tracing::debug!(open, "dropping the connections still open");
        }
        kill.cancel();
        let _ = tokio::time::timeout(KILL_WAIT, registry.empty()).await;
    }
}

/// Accept until `shutdown` resolves.
async fn accept_loop(
    listener: &TcpListener,
    shutdown: impl Future<Output = ()> + Send,
    limits: &ServerLimits,
    registry: &Arc<Registry>,
    setup: &Arc<ConnSetup>,
    drain: &CancellationToken,
    kill: &CancellationToken,
) {
    tokio::pin!(shutdown);
    let mut backoff = MIN_BACKOFF;
    let mut next_id = 0u64;
    loop {
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => return,
            accepted = async {
                registry.make_room(limits.max_connections).await;
                listener.accept().await
            } => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                backoff = MIN_BACKOFF;
                // Small SSE frames go out at once, not after Nagle's delay.
                let _ = stream.set_nodelay(true);
                next_id += 1;
                let conn = Arc::new(ConnState::new(
                    next_id,
                    drain.child_token(),
                    kill.child_token(),
                ));
                registry.insert(conn.clone());
                tokio::spawn(serve_connection(
                    stream,
                    peer,
                    conn,
                    registry.clone(),
                    setup.clone(),
                ));
            }
            // The peer gave up before we took it: nothing to wait for.
            Err(e) if is_connection_error(&e) => {}
            Err(e) => {
                tracing::debug!(error = %e, ?backoff, "accept failed; backing off");
                registry.evict_oldest_idle();
                tokio::select! {
                    biased;
                    () = &mut shutdown => return,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}
