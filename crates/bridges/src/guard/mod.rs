//! [`Guard`]: what stands in front of a server's routes so that it trusts
//! no one by default.
//!
//! Every request passes, in this order:
//!
//! 1. **Host**: the `Host` header must name `localhost`, a loopback address
//!    or a configured name — else 403 `host_not_allowed`. A web page that
//!    rebinds its own DNS name to 127.0.0.1 sends its own name and is
//!    refused (DNS rebinding).
//! 2. **Origin**: a state-changing request (not GET/HEAD/OPTIONS) whose
//!    `Origin` is not the server's own (or a configured one), or whose
//!    `Sec-Fetch-Site` is `cross-site`, gets 403 `origin_not_allowed`.
//! 3. **Authentication** (unless built with [`Guard::open`]):
//!    `Authorization: Bearer <token>` (principal `token`), or the session
//!    cookie a browser gets by posting the token once to the session path
//!    (each exchange is its own principal, `session:<id>`; see
//!    [`SESSION_COOKIE`]) — else 401 `unauthorized` with a `Bearer`
//!    challenge. Public paths (the page, the A2A card) skip this step.
//!    The [`Principal`] is put into the request's extensions, where the
//!    bridges find it.
//! 4. **Concurrent runs**: a POST to a run path while its principal already
//!    has the configured number of responses in flight there gets 429
//!    `too_many_runs` with `Retry-After`.
//!
//! Refusals are JSON, `{"error": {"code", "message"}}`, and are logged at
//! `warn` (never with a credential).
//!
//! ```
//! use agent_adaptor_bridges::guard::{Guard, Token};
//!
//! let token = Token::generate();
//! let guard = Guard::token(token)
//!     .public_get("/")
//!     .limit_runs(["/agui", "/a2a"], 16)
//!     .build();
//! let app = guard.layer(axum::Router::new());
//! # let _ = app;
//! ```

mod host;
mod limit;
mod session;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::json;

pub use session::{MIN_TOKEN_LEN, SESSION_COOKIE, Token, WeakToken};

use crate::Principal;
use host::{Allowlist, Refusal};
use limit::RunLimits;

/// The default path where a browser exchanges the token for a cookie.
pub const DEFAULT_SESSION_PATH: &str = "/api/session";

/// The default seconds a client is told to wait after a 429.
pub const DEFAULT_RETRY_AFTER_SECS: u64 = 2;

/// The principal of bearer-token requests.
pub const TOKEN_PRINCIPAL: &str = "token";

enum Auth {
    Token(Token),
    Open,
}

struct Inner {
    auth: Auth,
    allow: Allowlist,
    public: Vec<String>,
    session_path: String,
    run_paths: Vec<String>,
    runs: Option<Arc<RunLimits>>,
    retry_after: u64,
}

/// Authentication, Host/Origin checks and per-principal run limits for a
/// router (see the [module docs](self)). Cheap to clone.
#[derive(Clone)]
pub struct Guard {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("authenticated", &matches!(self.inner.auth, Auth::Token(_)))
            .field("hosts", &self.inner.allow.hosts)
            .field("origins", &self.inner.allow.origins)
            .field("public", &self.inner.public)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Guard`].
pub struct GuardBuilder {
    inner: Inner,
}

impl Guard {
    /// A guard that requires `token` (as a bearer token, or the session
    /// cookie it was exchanged for).
    pub fn token(token: Token) -> GuardBuilder {
        GuardBuilder::new(Auth::Token(token))
    }

    /// A guard without authentication: every client is the anonymous
    /// principal. Host and Origin are still checked. Only for a server that
    /// nobody else can reach (the host decides; `agent-adaptor serve`
    /// allows it on loopback addresses only).
    pub fn open() -> GuardBuilder {
        GuardBuilder::new(Auth::Open)
    }

    /// Put the guard in front of every route of `router`.
    pub fn layer(&self, router: Router) -> Router {
        router.layer(axum::middleware::from_fn_with_state(self.clone(), guard))
    }

    /// Whether requests must authenticate.
    pub fn authenticates(&self) -> bool {
        matches!(self.inner.auth, Auth::Token(_))
    }
}

impl GuardBuilder {
    fn new(auth: Auth) -> Self {
        GuardBuilder {
            inner: Inner {
                auth,
                allow: Allowlist::default(),
                public: Vec::new(),
                session_path: DEFAULT_SESSION_PATH.into(),
                run_paths: Vec::new(),
                runs: None,
                retry_after: DEFAULT_RETRY_AFTER_SECS,
            },
        }
    }

    /// Also answer requests whose `Host` names `host` (a DNS name or an IP
    /// address; loopback ones are always allowed).
    pub fn allow_host(mut self, host: impl AsRef<str>) -> Self {
        if let Some(name) = host::host_name(host.as_ref()) {
            self.inner.allow.hosts.push(name);
        }
        self
    }

    /// Also accept state-changing requests from `origin`
    /// (`scheme://host[:port]`).
    pub fn allow_origin(mut self, origin: impl AsRef<str>) -> Self {
        let origin = origin.as_ref().trim().trim_end_matches('/');
        self.inner.allow.origins.push(origin.to_ascii_lowercase());
        self
    }

    /// Serve GET/HEAD on `path` without authentication (a static page, a
    /// discovery document). Host is still checked.
    pub fn public_get(mut self, path: impl Into<String>) -> Self {
        self.inner.public.push(path.into());
        self
    }

    /// Where a POST with the bearer token gets the session cookie (default
    /// [`DEFAULT_SESSION_PATH`]).
    pub fn session_path(mut self, path: impl Into<String>) -> Self {
        self.inner.session_path = path.into();
        self
    }

    /// At most `max` POSTs in flight per principal on `paths` (each counted
    /// until its response body ends); more get 429.
    pub fn limit_runs<I, S>(mut self, paths: I, max: usize) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.inner.run_paths = paths.into_iter().map(Into::into).collect();
        self.inner.runs = Some(RunLimits::new(max));
        self
    }

    /// The `Retry-After` seconds of a 429 (default 2).
    pub fn retry_after_secs(mut self, secs: u64) -> Self {
        self.inner.retry_after = secs.max(1);
        self
    }

    /// The guard.
    pub fn build(self) -> Guard {
        Guard {
            inner: Arc::new(self.inner),
        }
    }
}

fn refuse(status: StatusCode, code: &str, message: &str) -> Response {
    let body = json!({"error": {"code": code, "message": message}});
    let mut resp = (status, axum::Json(body)).into_response();
    if status == StatusCode::UNAUTHORIZED {
        resp.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    resp
}

/// The principal `req`'s credentials prove, or why they prove none.
fn authenticate(token: &Token, req: &Request) -> Result<Principal, &'static str> {
    let headers = req.headers();
    if headers.contains_key(header::AUTHORIZATION) {
        let given = crate::secret::bearer(headers).unwrap_or("");
        return if token.matches(given) {
            Ok(Principal::new(TOKEN_PRINCIPAL))
        } else {
            Err("wrong bearer token")
        };
    }
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| session::cookie(v, SESSION_COOKIE));
    match cookie {
        Some(c) => token.session(c).ok_or("invalid session cookie"),
        None => Err("no credentials"),
    }
}

async fn guard(State(guard): State<Guard>, mut req: Request, next: Next) -> Response {
    let g = &guard.inner;
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    if let Err(refusal) = g.allow.check(&method, req.headers()) {
        let (code, message, what) = match refusal {
            Refusal::Host(h) => (
                "host_not_allowed",
                "this server does not answer that Host name",
                h,
            ),
            Refusal::Origin(o) => (
                "origin_not_allowed",
                "cross-site requests are not accepted",
                o,
            ),
        };
        tracing::warn!(%method, path, refused = what, code, "request refused");
        return refuse(StatusCode::FORBIDDEN, code, message);
    }
    let public = matches!(method, Method::GET | Method::HEAD) && g.public.contains(&path);
    let principal = match &g.auth {
        Auth::Open => Principal::anonymous(),
        Auth::Token(token) => {
            if path == g.session_path && method == Method::POST {
                return exchange(token, &req);
            }
            match authenticate(token, &req) {
                Ok(p) => p,
                Err(_) if public => Principal::anonymous(),
                Err(why) => {
                    tracing::warn!(%method, path, reason = why, "authentication failed");
                    return refuse(
                        StatusCode::UNAUTHORIZED,
                        "unauthorized",
                        "authenticate with Authorization: Bearer <token>, or open the URL \
                         printed by the server",
                    );
                }
            }
        }
    };
    if path == g.session_path && method == Method::POST {
        return StatusCode::NO_CONTENT.into_response();
    }
    let permit = match &g.runs {
        Some(runs) if method == Method::POST && g.run_paths.contains(&path) => {
            match runs.acquire(&principal) {
                Some(permit) => Some(permit),
                None => {
                    tracing::warn!(path, %principal, "too many concurrent runs");
                    let mut resp = refuse(
                        StatusCode::TOO_MANY_REQUESTS,
                        "too_many_runs",
                        "too many runs in progress for this client; retry later",
                    );
                    resp.headers_mut()
                        .insert(header::RETRY_AFTER, HeaderValue::from(g.retry_after));
                    return resp;
                }
            }
        }
        _ => None,
    };
    req.extensions_mut().insert(principal);
    let resp = next.run(req).await;
    match permit {
        None => resp,
        Some(permit) => {
            let (parts, body) = resp.into_parts();
            let body = body.into_data_stream().map(move |chunk| {
                let _held = &permit;
                chunk
            });
            Response::from_parts(parts, Body::from_stream(body))
        }
    }
}

/// POST to the session path: the bearer token buys a session cookie.
fn exchange(token: &Token, req: &Request) -> Response {
    let given = crate::secret::bearer(req.headers()).unwrap_or("");
    if !token.matches(given) {
        tracing::warn!("session exchange refused: wrong or missing token");
        return refuse(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the token is wrong: open the URL printed by the server",
        );
    }
    let (cookie, principal) = token.new_session();
    tracing::info!(%principal, "web session started");
    let value = format!("{SESSION_COOKIE}={cookie}; Path=/; HttpOnly; SameSite=Strict");
    let mut resp = (
        StatusCode::OK,
        axum::Json(json!({"principal": principal.as_str()})),
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&value) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}
