//! Push notification test pieces: resolvers, webhook receivers on
//! 127.0.0.1 that record what they get, and an A2A server whose principal
//! comes from an `x-test-principal` header.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_adaptor_bridges::Principal;
use agent_adaptor_bridges::a2a::push::{PushResolver, SystemResolver};
use agent_adaptor_bridges::a2a::{A2aServer, A2aServerBuilder};
use agent_adaptor_bridges::http::HttpServer;
use async_trait::async_trait;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The header naming the test request's principal.
pub const PRINCIPAL_HEADER: &str = "x-test-principal";

/// Resolves the names it was given to fixed addresses, others as the system
/// does.
pub struct FixedNames(pub Vec<(&'static str, IpAddr)>);

#[async_trait]
impl PushResolver for FixedNames {
    async fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<IpAddr>> {
        match self.0.iter().find(|(n, _)| *n == host) {
            Some((_, ip)) => Ok(vec![*ip]),
            None => SystemResolver.resolve(host, port).await,
        }
    }
}

/// A name that first resolves to a public address, then to 127.0.0.1 (DNS
/// rebinding); counts its lookups.
#[derive(Default)]
pub struct Rebinding(pub std::sync::atomic::AtomicUsize);

#[async_trait]
impl PushResolver for Rebinding {
    async fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<IpAddr>> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let ip = if n == 0 { "93.184.216.34" } else { "127.0.0.1" };
        Ok(vec![ip.parse().unwrap()])
    }
}

/// One request a receiver got.
#[derive(Debug, Clone)]
pub struct Hit {
    /// Its headers.
    pub headers: HeaderMap,
    /// Its raw body.
    pub body: Bytes,
}

impl Hit {
    /// A header as text ("" when absent).
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// The pushed status's state.
    pub fn state(&self) -> String {
        self.json()["statusUpdate"]["status"]["state"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

/// A webhook receiver on 127.0.0.1.
pub struct Receiver {
    /// `127.0.0.1:PORT`.
    pub authority: String,
    hits: Arc<Mutex<Vec<Hit>>>,
    join: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.join.abort();
    }
}

impl Receiver {
    /// A receiver answering its `n`th request (0-based) with `respond(n)`.
    pub async fn start(respond: impl Fn(usize) -> Response + Send + Sync + 'static) -> Self {
        let hits = Arc::new(Mutex::new(Vec::new()));
        let respond = Arc::new(respond);
        let recorded = hits.clone();
        let app = axum::Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
            let recorded = recorded.clone();
            let respond = respond.clone();
            async move {
                let n = {
                    let mut hits = recorded.lock().unwrap();
                    hits.push(Hit { headers, body });
                    hits.len() - 1
                };
                respond(n)
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let authority = listener.local_addr().unwrap().to_string();
        let join = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Receiver {
            authority,
            hits,
            join,
        }
    }

    /// A receiver answering 200 to everything.
    pub async fn ok() -> Self {
        Self::start(|_| StatusCode::OK.into_response()).await
    }

    /// `http://127.0.0.1:PORT/hook`.
    pub fn url(&self) -> String {
        format!("http://{}/hook", self.authority)
    }

    /// What it got so far.
    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    /// Wait (bounded: 30 s) until it got `n` requests.
    pub async fn wait_for(&self, n: usize) -> Vec<Hit> {
        for _ in 0..600 {
            let hits = self.hits();
            if hits.len() >= n {
                return hits;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("expected {n} requests, got {:?}", self.hits());
    }
}

/// An A2A server whose requests' principal is the [`PRINCIPAL_HEADER`].
pub struct Served {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    server: A2aServer,
    join: tokio::task::JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.server.close();
        self.join.abort();
    }
}

impl Served {
    /// Serve `builder` on 127.0.0.1.
    pub async fn start(builder: A2aServerBuilder) -> Self {
        let server = builder.build();
        let router = server.router().layer(axum::middleware::from_fn(
            |mut req: axum::extract::Request, next: axum::middleware::Next| async move {
                if let Some(p) = req
                    .headers()
                    .get(PRINCIPAL_HEADER)
                    .and_then(|v| v.to_str().ok())
                {
                    let p = Principal::new(p);
                    req.extensions_mut().insert(p);
                }
                next.run(req).await
            },
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let join = tokio::spawn(HttpServer::new(listener, router).serve(std::future::pending()));
        Served { url, server, join }
    }

    /// One JSON-RPC call as `principal`: the whole response object.
    pub async fn rpc(&self, principal: &str, method: &str, params: Value) -> Value {
        reqwest::Client::new()
            .post(format!("{}/a2a", self.url))
            .header("A2A-Version", "1.0")
            .header(PRINCIPAL_HEADER, principal)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// The server (to shut it down).
    pub fn server(&self) -> &A2aServer {
        &self.server
    }

    /// The card.
    pub async fn card(&self) -> Value {
        reqwest::get(format!("{}/.well-known/agent-card.json", self.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

/// A user message with `text`, as JSON.
pub fn user_message(text: &str) -> Value {
    json!({
        "messageId": format!("m-{}", rand_id()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    })
}

fn rand_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    N.fetch_add(1, Ordering::Relaxed)
}

/// The error's `refusal` metadata ("" when none).
pub fn refusal(response: &Value) -> &str {
    response["error"]["data"][0]["metadata"]["refusal"]
        .as_str()
        .unwrap_or("")
}
