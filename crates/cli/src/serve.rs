//! `agent-adaptor serve`: one HTTP server with
//!
//! | path | what |
//! |---|---|
//! | `GET /` | the web chat (one self-contained page, [`INDEX_HTML`]) |
//! | `POST /agui` | AG-UI 1.0 over SSE; `threadId` → thread `agui/v1/web/<threadId>` |
//! | `POST /sse` | raw SSE (our own events); `sessionKey` → thread, verbatim |
//! | `GET /.well-known/agent-card.json`, `POST /a2a` | A2A 1.0 (contexts are threads `a2a:<contextId>`) |
//! | `GET /api/info` | what runs: driver label, playground or not, store |
//! | `GET /api/threads` | the web chat's threads, newest first |
//! | `GET /api/threads/{id}` | one of them: record and, for llm threads, the conversation |
//!
//! Threads live in the SQLite file printed at start, or in the PostgreSQL
//! server given with `--store postgres://…` (several `serve` instances on
//! several hosts may share it: a thread is served by whichever instance
//! gets the request, one run at a time per thread).

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_bridges::a2a::A2aServer;
use agent_adaptor_bridges::agui::{SseHandler, SseOptions, agui_thread_key, parse_agui_thread_key};
use agent_adaptor_core::thread::ThreadRecord;
use agent_adaptor_core::{Agent, RunOptions, ThreadStore};
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use crate::args::ServeArgs;
use crate::chat::{CODEC, HISTORY_KEY};
use crate::error::CliError;
use crate::select::select;
use crate::store::StoreSpec;

/// The web chat page.
pub const INDEX_HTML: &str = include_str!("web/index.html");

/// The AG-UI thread namespace of the web chat.
pub const WEB_NAMESPACE: &str = "web";

/// How long a person has to answer an approval in the web chat.
const APPROVAL_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// How many threads the page lists.
const THREAD_LIST_LIMIT: usize = 100;

#[derive(Clone)]
struct AppState {
    store: Arc<dyn ThreadStore>,
    info: Value,
}

/// Run `agent-adaptor serve` until Ctrl-C / SIGTERM.
pub async fn serve(args: ServeArgs) -> Result<(), CliError> {
    if !args.addr.ip().is_loopback() && !args.allow_unauthenticated {
        return Err(CliError::usage(format!(
            "refusing to serve on {} without authentication: use a loopback address, or \
             --allow-unauthenticated behind a proxy that authenticates",
            args.addr
        )));
    }
    // Listen first: a taken port is reported before anything starts.
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|e| CliError::failure(format!("cannot listen on {}: {e}", args.addr)))?;
    let local = listener
        .local_addr()
        .map_err(|e| CliError::failure(format!("cannot listen on {}: {e}", args.addr)))?;
    if let Some(dir) = &args.cwd
        && !dir.is_dir()
    {
        return Err(CliError::usage(format!(
            "--cwd {}: not a directory",
            dir.display()
        )));
    }
    let store = StoreSpec::parse(args.store.as_deref())?.open().await?;
    let selected = select(&args.driver, None).await?;

    let mut defaults = RunOptions::new();
    if let Some(dir) = &args.cwd {
        defaults = defaults.workspace(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()));
    }
    if let Some(model) = &args.driver.model {
        defaults = defaults.model(model.clone());
    }
    let agent = Agent::builder_shared(selected.driver.clone())
        .thread_store(store.store.clone())
        .cancel_grace(Duration::from_secs(2))
        .defaults(defaults)
        .build()
        .map_err(|e| CliError::failure(e.to_string()))?;
    let run_options = RunOptions::new().approval_timeout(Some(APPROVAL_TIMEOUT));

    let agui = SseHandler::with_threads(
        agent.clone(),
        SseOptions::agui()
            .thread_namespace(WEB_NAMESPACE)
            .interrupt_timeout(APPROVAL_TIMEOUT)
            .run_options(run_options.clone()),
    );
    // Raw SSE is one-way: nobody can answer an approval there, so it is
    // denied at once (visible in the events) instead of waiting.
    let raw = SseHandler::with_threads(
        agent.clone(),
        SseOptions::raw().run_options(RunOptions::new().approval_handler(
            agent_adaptor_core::deny_all("raw SSE has no answer channel (use /agui or /a2a)"),
        )),
    );
    let a2a = A2aServer::with_threads(agent.clone())
        .name("agent-adaptor")
        .description(format!("agent-adaptor serve: {}", selected.label))
        .public_url(format!("http://{local}"))
        .run_options(run_options)
        .build();
    let state = AppState {
        store: store.store.clone(),
        info: json!({
            "driver": selected.name.as_str(),
            "label": selected.label,
            "playground": selected.playground.is_some(),
            "store": store.description,
        }),
    };
    let app = router(state)
        .merge(agui.router("/agui"))
        .merge(raw.router("/sse"))
        .merge(a2a.router());

    println!("agent-adaptor serve: http://{local}/");
    println!("  {}", selected.label);
    println!("  threads: {}", store.description);
    println!(
        "  AG-UI POST /agui · raw SSE POST /sse · A2A POST /a2a (card /.well-known/agent-card.json)"
    );

    let served = axum::serve(listener, app)
        .with_graceful_shutdown(wait_for_shutdown())
        .await;
    a2a.close();
    agent.close().await;
    served.map_err(|e| CliError::failure(format!("server failed: {e}")))
}

/// Wait for Ctrl-C (SIGINT) or SIGTERM.
pub async fn wait_for_shutdown() {
    use tokio::signal::unix::{SignalKind, signal};
    let int = signal(SignalKind::interrupt()).ok();
    let term = signal(SignalKind::terminate()).ok();
    let wait = |s: Option<tokio::signal::unix::Signal>| async move {
        match s {
            Some(mut s) => {
                s.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = wait(int) => {}
        () = wait(term) => {}
    }
}

fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/api/info", get(info))
        .route("/api/threads", get(list_threads))
        .route("/api/threads/{id}", get(get_thread))
        .with_state(state)
}

async fn index() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        INDEX_HTML,
    )
        .into_response()
}

async fn info(State(state): State<AppState>) -> Response {
    axum::Json(state.info.clone()).into_response()
}

fn error(status: StatusCode, code: &str, message: String) -> Response {
    (
        status,
        axum::Json(json!({"error": {"code": code, "message": message}})),
    )
        .into_response()
}

/// The conversation of an llm thread, as `[{role, text}]` (tool calls and
/// results included as text).
pub fn conversation(record: &ThreadRecord) -> Option<Vec<Value>> {
    if record.codec != CODEC {
        return None;
    }
    let text = record.params.values.get(HISTORY_KEY)?;
    let messages: Vec<Value> = serde_json::from_str(text).ok()?;
    let mut out = Vec::new();
    for m in messages {
        let role = m
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let content = m.get("content").and_then(Value::as_str).unwrap_or("");
        if !content.is_empty() {
            let text = if role == "tool" {
                short(content)
            } else {
                content.to_owned()
            };
            out.push(json!({"role": role, "text": text}));
        }
        if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
            for c in calls {
                out.push(json!({
                    "role": "tool_call",
                    "text": format!(
                        "{} {}",
                        c.get("name").and_then(Value::as_str).unwrap_or("tool"),
                        c.get("arguments").cloned().unwrap_or(Value::Null)
                    ),
                }));
            }
        }
    }
    Some(out)
}

/// At most three lines of `text`, each at most 120 characters.
fn short(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(3)
        .map(|l| l.chars().take(120).collect())
        .collect();
    if lines.len() > 3 {
        out.push(format!("… ({} lines)", lines.len()));
    }
    out.join("\n")
}

/// A short title: the first user message of an llm thread.
fn title(record: &ThreadRecord) -> Option<String> {
    let first = conversation(record)?
        .into_iter()
        .find(|m| m["role"] == "user")?;
    let text = first["text"].as_str()?.to_owned();
    Some(text.chars().take(60).collect())
}

async fn list_threads(State(state): State<AppState>) -> Response {
    match state.store.list(THREAD_LIST_LIMIT).await {
        Ok(records) => {
            let threads: Vec<Value> = records
                .iter()
                .filter_map(|r| {
                    let (ns, id) = parse_agui_thread_key(&r.key)?;
                    (ns == WEB_NAMESPACE).then(|| {
                        json!({
                            "id": id,
                            "key": r.key,
                            "driver": r.driver_type,
                            "title": title(r).unwrap_or_else(|| id.clone()),
                            "updatedAt": r.updated_at,
                        })
                    })
                })
                .collect();
            axum::Json(json!({"threads": threads})).into_response()
        }
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, "store", e.to_string()),
    }
}

async fn get_thread(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    let key = agui_thread_key(WEB_NAMESPACE, &id);
    match state.store.resolve(&key, false).await {
        Ok(Some(r)) => axum::Json(json!({
            "id": id,
            "key": r.key,
            "driver": r.driver_type,
            "session": r.params.display_id,
            "updatedAt": r.updated_at,
            "messages": conversation(&r),
        }))
        .into_response(),
        Ok(None) => error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no thread {id:?}"),
        ),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, "store", e.to_string()),
    }
}
