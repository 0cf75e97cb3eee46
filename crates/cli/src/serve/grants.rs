//! The tools always allowed in a web chat thread: `GET
//! /api/threads/{id}/allowed-tools` lists them, `DELETE
//! /api/threads/{id}/allowed-tools/{tool}` stops allowing one (the
//! thread's next request for it asks again). A grant is made by answering
//! an approval card "Always allow `<tool>` in this thread" (an AG-UI resume
//! with `{"approved": true, "always": true}`).

use agent_adaptor_bridges::agui::agui_thread_key;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::WEB_NAMESPACE;
use super::api::{AppState, error, store_unavailable};

/// `GET /api/threads/{id}/allowed-tools`: `{"tools": [..]}`, sorted
/// (empty for a thread without grants or an unknown one).
pub(super) async fn list(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    let key = agui_thread_key(WEB_NAMESPACE, &id);
    match state.store.thread_policy(&key).await {
        Ok(policy) => axum::Json(json!({"tools": policy.always_allowed})).into_response(),
        Err(e) => store_unavailable(&e),
    }
}

/// `DELETE /api/threads/{id}/allowed-tools/{tool}`: 204, or 404
/// `not_allowed` when the tool was not always allowed there.
pub(super) async fn revoke(
    State(state): State<AppState>,
    Path((id, tool)): Path<(String, String)>,
) -> Response {
    let key = agui_thread_key(WEB_NAMESPACE, &id);
    match state.store.set_tool_allowed(&key, &tool, false).await {
        Ok(true) => {
            tracing::info!(thread = %id, tool = %tool, "web: always-allow revoked");
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(false) => error(
            StatusCode::NOT_FOUND,
            "not_allowed",
            format!("{tool:?} is not always allowed in this thread"),
        ),
        Err(e) => store_unavailable(&e),
    }
}
