//! The web chat page and the thread API of `agent-adaptor serve`.

use std::sync::Arc;

use agent_adaptor_bridges::Principal;
use agent_adaptor_bridges::agui::{
    Message, SseHandler, agui_thread_key, parse_agui_thread_key, thread_history, thread_transcript,
};
use agent_adaptor_core::ThreadStore;
use agent_adaptor_core::thread::ThreadRecord;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use serde_json::{Value, json};

use super::grants;
use super::titles::{self, MAX_TITLE_CHARS};
use super::{THREAD_LIST_LIMIT, WEB_NAMESPACE, assets};
use agent_adaptor_llm::agent::session::{CODEC, HISTORY_KEY, TITLE_CHARS, TITLE_KEY};

/// What the API handlers share.
#[derive(Clone)]
pub(super) struct AppState {
    pub(super) store: Arc<dyn ThreadStore>,
    pub(super) info: Value,
    /// The AG-UI handler (to stop its runs).
    pub(super) agui: SseHandler,
}

/// The page, its files and the thread API.
pub(super) fn router(state: AppState) -> Router {
    assets::router()
        .route("/api/info", get(info))
        .route("/api/threads", get(list_threads))
        .route(
            "/api/threads/{id}",
            get(get_thread).patch(rename_thread).delete(delete_thread),
        )
        .route("/api/threads/{id}/events", get(thread_events))
        .route(
            "/api/threads/{id}/runs/{run}/cancel",
            axum::routing::post(cancel_run),
        )
        .route("/api/threads/{id}/allowed-tools", get(grants::list))
        .route(
            "/api/threads/{id}/allowed-tools/{tool}",
            delete(grants::revoke),
        )
        .with_state(state)
}

/// Stop a run the page streams (its Stop button): at once, instead of
/// after the reconnect grace a dropped stream gets. 204, or the AG-UI
/// handler's error (404 when this server does not stream it).
async fn cancel_run(
    State(state): State<AppState>,
    Path((id, run)): Path<(String, String)>,
    req: axum::extract::Request,
) -> Response {
    let principal = Principal::of(req.extensions());
    match state.agui.cancel_run(&id, &run, &principal) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn info(State(state): State<AppState>) -> Response {
    axum::Json(state.info.clone()).into_response()
}

/// A JSON error body `{"error": {code, message}}` with `status`.
pub(super) fn error(status: StatusCode, code: &str, message: String) -> Response {
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

/// The largest conversation a listing still reads for the title of a
/// record saved before titles were kept ([`TITLE_KEY`]).
const LEGACY_TITLE_MAX_BYTES: usize = 64 * 1024;

/// A short title: the one the conversation driver keeps with the thread (the first
/// user message). The conversation itself is not read, whatever its size,
/// except for an older small record without a kept title.
fn title(record: &ThreadRecord) -> Option<String> {
    if record.codec != CODEC {
        return None;
    }
    let values = &record.params.values;
    if let Some(title) = values.get(TITLE_KEY) {
        return Some(title.chars().take(TITLE_CHARS).collect());
    }
    if values.get(HISTORY_KEY)?.len() > LEGACY_TITLE_MAX_BYTES {
        return None;
    }
    let first = conversation(record)?
        .into_iter()
        .find(|m| m["role"] == "user")?;
    let text = first["text"].as_str()?.to_owned();
    Some(text.chars().take(TITLE_CHARS).collect())
}

async fn list_threads(State(state): State<AppState>) -> Response {
    let records = match state.store.list(THREAD_LIST_LIMIT).await {
        Ok(records) => records,
        Err(e) => return store_unavailable(&e),
    };
    let mut threads = Vec::new();
    for r in &records {
        let Some((ns, id)) = parse_agui_thread_key(&r.key) else {
            continue;
        };
        if ns != WEB_NAMESPACE {
            continue;
        }
        let title = match thread_title(state.store.as_ref(), &id, Some(r)).await {
            Ok(t) => t,
            Err(e) => return store_unavailable(&e),
        };
        threads.push(json!({
            "id": id,
            "key": r.key,
            "driver": r.driver_type,
            "title": title,
            "updatedAt": r.updated_at,
        }));
    }
    axum::Json(json!({"threads": threads})).into_response()
}

/// What the page calls web thread `id`: the name a person gave it, else
/// the title its record keeps, else its first prompt, else its id.
async fn thread_title(
    store: &dyn ThreadStore,
    id: &str,
    record: Option<&ThreadRecord>,
) -> Result<String, agent_adaptor_core::thread::StoreError> {
    if let Some(t) = titles::renamed(store, id).await? {
        return Ok(t);
    }
    if let Some(t) = record.and_then(title) {
        return Ok(t);
    }
    Ok(titles::first_prompt(store, id)
        .await?
        .unwrap_or_else(|| id.to_owned()))
}

/// The body of a rename.
#[derive(Debug, serde::Deserialize)]
struct Rename {
    title: String,
}

/// `PATCH /api/threads/{id}` `{"title"}`: name the thread (kept in the
/// event log; 503 `event_log_unavailable` without one).
async fn rename_thread(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Result<axum::Json<Rename>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Ok(axum::Json(Rename { title })) = body else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "expected a JSON body {\"title\": \"…\"}".into(),
        );
    };
    let title = title.trim();
    if title.is_empty() || title.chars().count() > MAX_TITLE_CHARS {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_title",
            format!("a title has 1 to {MAX_TITLE_CHARS} characters"),
        );
    }
    let key = agui_thread_key(WEB_NAMESPACE, &id);
    let known = match state.store.resolve(&key, false).await {
        Ok(Some(_)) => true,
        Ok(None) => match titles::first_prompt(state.store.as_ref(), &id).await {
            Ok(p) => p.is_some(),
            Err(e) => return store_unavailable(&e),
        },
        Err(e) => return store_unavailable(&e),
    };
    if !known {
        return error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no thread {id:?}"),
        );
    }
    match titles::rename(state.store.as_ref(), &id, title).await {
        Ok(()) => axum::Json(json!({"id": id, "title": title})).into_response(),
        Err(agent_adaptor_core::thread::StoreError::Unsupported(_)) => event_log_unavailable(),
        Err(e) => store_unavailable(&e),
    }
}

/// `DELETE /api/threads/{id}`: the thread's records, its event log and its
/// name go (409 `thread_busy` while a run holds it).
async fn delete_thread(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    let key = agui_thread_key(WEB_NAMESPACE, &id);
    match state.store.delete(&key).await {
        Ok(_) => {}
        Err(agent_adaptor_core::thread::StoreError::Busy { .. }) => {
            return error(
                StatusCode::CONFLICT,
                "thread_busy",
                "a run of this thread is in progress: stop it first".into(),
            );
        }
        Err(e) => return store_unavailable(&e),
    }
    match state.store.delete(&titles::title_key(&id)).await {
        Ok(_) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => store_unavailable(&e),
    }
}

/// 503: this server's store keeps no event log.
fn event_log_unavailable() -> Response {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "event_log_unavailable",
        "this server's thread store keeps no event log".into(),
    )
}

/// 503 with a fixed message: the store's own words stay in the log.
pub(super) fn store_unavailable(e: &agent_adaptor_core::thread::StoreError) -> Response {
    tracing::warn!(error = %e, "thread API: store failed");
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "thread_store_unavailable",
        "the thread store is unavailable; the server log has the details".into(),
    )
}

/// The page's `[{role, text}]` of a conversation the event log holds.
fn page_messages(history: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in history {
        match m {
            Message::User { content, .. } => out.push(json!({"role": "user", "text": content})),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                    out.push(json!({"role": "assistant", "text": text}));
                }
                for c in tool_calls.iter().flatten() {
                    out.push(json!({
                        "role": "tool_call",
                        "text": format!("{} {}", c.function.name, c.function.arguments),
                    }));
                }
            }
            Message::Tool { content, .. } => {
                out.push(json!({"role": "tool", "text": short(content)}));
            }
        }
    }
    out
}

/// The conversation in `key`'s event log (`None`: the store keeps no log,
/// or it is empty).
async fn logged(store: &dyn ThreadStore, key: &str) -> Result<Option<Vec<Value>>, Response> {
    match thread_history(store, key).await {
        Ok(h) if h.is_empty() => Ok(None),
        Ok(h) => Ok(Some(page_messages(&h))),
        Err(agent_adaptor_core::thread::StoreError::Unsupported(_)) => Ok(None),
        Err(e) => Err(store_unavailable(&e)),
    }
}

/// The AG-UI transcript of `key`'s event log (`None`: the store keeps no
/// log).
async fn transcript(
    store: &dyn ThreadStore,
    key: &str,
) -> Result<Option<Vec<Value>>, agent_adaptor_core::thread::StoreError> {
    match thread_transcript(store, key).await {
        Ok(t) => Ok(Some(t)),
        Err(agent_adaptor_core::thread::StoreError::Unsupported(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

async fn get_thread(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    let key = agui_thread_key(WEB_NAMESPACE, &id);
    let (record, interrupted, logged, transcript) = match tokio::join!(
        state.store.resolve(&key, false),
        state.store.interrupted_runs(&key),
        logged(state.store.as_ref(), &key),
        transcript(state.store.as_ref(), &key)
    ) {
        (Ok(r), Ok(i), Ok(l), Ok(t)) => (r, i, l, t),
        (Err(e), ..) | (_, Err(e), ..) | (.., Err(e)) => return store_unavailable(&e),
        (_, _, Err(resp), _) => return resp,
    };
    let title = match thread_title(state.store.as_ref(), &id, record.as_ref()).await {
        Ok(t) => t,
        Err(e) => return store_unavailable(&e),
    };
    // Runs a dead server process left behind, so the client sees what
    // happened to its prompt.
    let interrupted: Vec<Value> = interrupted
        .iter()
        .map(|run| {
            json!({
                "runId": run.run_id,
                "prompt": run.prompt,
                "startedAt": run.started_at,
                "interruptedAt": run.interrupted_at,
            })
        })
        .collect();
    match record {
        Some(r) => axum::Json(json!({
            "id": id,
            "key": r.key,
            "title": title,
            "driver": r.driver_type,
            "session": r.params.display_id,
            "updatedAt": r.updated_at,
            "messages": conversation(&r).or(logged),
            "transcript": transcript,
            "interrupted": interrupted,
        }))
        .into_response(),
        None if !interrupted.is_empty() || logged.is_some() => axum::Json(json!({
            "id": id,
            "key": key,
            "title": title,
            "messages": logged.unwrap_or_default(),
            "transcript": transcript,
            "interrupted": interrupted,
        }))
        .into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no thread {id:?}"),
        ),
    }
}

/// The query of [`thread_events`].
#[derive(Debug, serde::Deserialize)]
struct Since {
    /// Events after this cursor (default 0: from the start).
    #[serde(default)]
    since: u64,
}

/// Events per page of [`thread_events`].
const EVENTS_PAGE: usize = 500;

/// One page of a web thread's event log after `since`:
/// `{events: [{cursor, run_id, recorded_at, prompt?, event}], next}` where
/// `next` is the cursor to ask for next (`null`: the end, as of now).
async fn thread_events(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<Since>,
) -> Response {
    let key = agui_thread_key(WEB_NAMESPACE, &id);
    let query = agent_adaptor_core::thread::EventQuery::since(q.since).max_events(EVENTS_PAGE);
    match state.store.events(&key, &query).await {
        Ok(page) => {
            let next = page.next.as_ref().and(page.last_cursor());
            axum::Json(json!({"events": page.events, "next": next})).into_response()
        }
        Err(agent_adaptor_core::thread::StoreError::Unsupported(_)) => event_log_unavailable(),
        Err(e) => store_unavailable(&e),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;
    use std::time::Duration;

    use agent_adaptor_core::driver::SessionParams;
    use agent_adaptor_core::thread::{FinalizeRequest, MemoryStore, RecordStatus};

    use super::*;

    /// A web thread record of the conversation driver with these session values.
    fn record(id: &str, values: BTreeMap<String, String>) -> ThreadRecord {
        let now = chrono::Utc::now();
        ThreadRecord {
            id: format!("thr_{id}"),
            key: agui_thread_key(WEB_NAMESPACE, id),
            status: RecordStatus::Active,
            driver_type: "llm".into(),
            fingerprint: "fp".into(),
            codec: CODEC.into(),
            params: SessionParams {
                resume_id: "r".into(),
                display_id: "r".into(),
                values,
            },
            previous_id: None,
            created_at: now,
            updated_at: now,
        }
    }

    async fn listed(records: Vec<ThreadRecord>) -> Value {
        let store = Arc::new(MemoryStore::new());
        for record in records {
            let target = format!("key:{}", record.key);
            let lease = store
                .acquire_lease(&target, "test", Duration::from_secs(60))
                .await
                .unwrap();
            store
                .finalize(FinalizeRequest {
                    lease,
                    record,
                    require_key_absent: false,
                })
                .await
                .unwrap();
        }
        let agent = agent_adaptor_core::Agent::new(
            agent_adaptor_core::scripted::ScriptedDriver::text_reply("unused"),
        );
        let state = AppState {
            store,
            info: Value::Null,
            agui: SseHandler::with_threads(agent, agent_adaptor_bridges::agui::SseOptions::agui()),
        };
        let response = list_threads(State(state)).await;
        assert_eq!(response.status(), StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    /// The listing takes the title from the kept metadata and never reads
    /// the conversation: a history that is not even JSON (standing in for
    /// a huge one) still lists with its title.
    #[tokio::test]
    async fn a_listing_takes_titles_from_metadata_not_from_the_history() {
        let huge = BTreeMap::from([
            (HISTORY_KEY.to_owned(), "[not json".repeat(100_000)),
            (TITLE_KEY.to_owned(), "Summarise the big log".to_owned()),
        ]);
        // An older record without a kept title and a small history: its
        // title is still read from the conversation.
        let legacy = BTreeMap::from([(
            HISTORY_KEY.to_owned(),
            json!([{"role": "user", "content": "an old thread"}]).to_string(),
        )]);
        let list = listed(vec![record("big", huge), record("old", legacy)]).await;
        let titles: BTreeMap<&str, &str> = list["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["id"].as_str().unwrap(), t["title"].as_str().unwrap()))
            .collect();
        assert_eq!(titles["big"], "Summarise the big log", "{list}");
        assert_eq!(titles["old"], "an old thread", "{list}");
    }
}
