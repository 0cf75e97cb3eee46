//! Serving the mock MCP server over Streamable HTTP on 127.0.0.1, with an
//! optional bearer token.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::server::{ServeError, TestTools};

/// A bound, not yet serving, Streamable HTTP server (see [`serve_http`]).
#[derive(Debug)]
pub struct HttpServer {
    listener: tokio::net::TcpListener,
    router: axum::Router,
    url: String,
}

/// Binds `addr` (it must be `127.0.0.1`, port 0 picks a free one) for a
/// Streamable HTTP server of `tools` at `/mcp`. With `bearer_token`, every
/// request must carry `Authorization: Bearer <token>` or gets 401.
pub async fn serve_http(
    tools: TestTools,
    addr: SocketAddr,
    bearer_token: Option<String>,
) -> Result<HttpServer, ServeError> {
    if addr.ip() != Ipv4Addr::LOCALHOST {
        return Err(ServeError::NotLoopback(addr));
    }
    // No SSE priming events (an event with empty data, sent by default by
    // both the service and its session layer): the MCP SDK in Gemini CLI
    // 0.61 parses every event's data as JSON and drops the connection on one
    // ("Unexpected end of JSON input").
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.sse_retry = None;
    let service: StreamableHttpService<TestTools, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(sessions),
        StreamableHttpServerConfig::default()
            .with_sse_keep_alive(None)
            .with_sse_retry(None),
    );
    let mut router = axum::Router::new().nest_service("/mcp", service);
    if let Some(token) = bearer_token {
        let expected: Arc<str> = format!("Bearer {token}").into();
        router = router.layer(axum::middleware::from_fn_with_state(
            expected,
            require_bearer,
        ));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    Ok(HttpServer {
        listener,
        router,
        url: format!("http://{bound}/mcp"),
    })
}

impl HttpServer {
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Serves until the process ends (or the listener fails).
    pub async fn run(self) -> Result<(), ServeError> {
        axum::serve(self.listener, self.router)
            .await
            .map_err(ServeError::Http)
    }
}

/// Lets a request through only with the expected `Authorization` header.
async fn require_bearer(
    State(expected): State<Arc<str>>,
    request: Request,
    next: Next,
) -> Response {
    let authorized = request
        .headers()
        .get(header::AUTHORIZATION)
        .is_some_and(|value| value.as_bytes() == expected.as_bytes());
    if authorized {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong bearer token",
        )
            .into_response()
    }
}
