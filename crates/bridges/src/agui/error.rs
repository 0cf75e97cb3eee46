//! Requests the SSE handler refuses before starting anything.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Why a request was refused. Every refusal happens before a run starts and
/// is answered with a 4xx status and a JSON body
/// `{"error": {"code": "...", "message": "..."}}` (a store that cannot
/// serve a replay: 503) (plus, for a pending
/// interrupt, `"interruptIds"`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// 401: the bearer token is missing or wrong.
    #[error("missing or invalid bearer token")]
    Unauthorized,
    /// 403: the run belongs to another principal (answering its interrupt,
    /// replaying its stream).
    #[error("{0}")]
    Forbidden(&'static str),
    /// 405: only POST (and OPTIONS for CORS preflight) are served.
    #[error("method not allowed: use POST")]
    MethodNotAllowed,
    /// 415: the body is not `application/json`.
    #[error("unsupported content type {0:?}: send application/json")]
    UnsupportedMediaType(String),
    /// 406: the client does not accept `text/event-stream`.
    #[error("the response is text/event-stream, which Accept {0:?} excludes")]
    NotAcceptable(String),
    /// 413: the body is larger than the limit.
    #[error("request body exceeds the limit of {limit} bytes")]
    PayloadTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// 400: the body could not be read.
    #[error("could not read the request body: {0}")]
    BodyRead(String),
    /// 408: the body did not arrive within the write timeout.
    #[error("the request body did not arrive in time")]
    BodyTimeout,
    /// 400: the body is not JSON.
    #[error("malformed JSON: {0}")]
    InvalidJson(String),
    /// 422: JSON, but not the expected shape.
    #[error("invalid request: {0}")]
    InvalidInput(String),
    /// 422: no non-empty user message (AG-UI) or prompt (raw).
    #[error("no user message: the request needs a non-empty user message")]
    MissingUserMessage,
    /// 400: `Last-Event-ID` is not a frame id.
    #[error("invalid Last-Event-ID {0:?}")]
    InvalidLastEventId(String),
    /// 409: the thread has a run waiting on an interrupt; resume it (or
    /// cancel it with a `cancelled` resume entry) first. `interrupt_ids`
    /// lists only the interrupts the caller may answer (empty when another
    /// principal's run waits).
    #[error("thread has pending interrupts; answer them with resume first")]
    PendingInterrupt {
        /// The interrupts that wait.
        interrupt_ids: Vec<String>,
    },
    /// 404: no run waits on that interrupt on this thread.
    #[error("no pending interrupt {0:?} on this thread")]
    InterruptNotFound(String),
    /// 422: the resume entries do not answer the interrupt properly.
    #[error("invalid resume: {0}")]
    InvalidResume(String),
    /// 422: `"always": true` on an interrupt that offers no
    /// `alwaysAllowTool` (not a thread run, or no tool named); the run
    /// still waits for an answer.
    #[error("interrupt {0:?} cannot always allow its tool; answer approved or denied")]
    NotGrantable(String),
    /// 409: the interrupt can no longer be answered; its run was cancelled.
    #[error("interrupt {0:?} expired; its run was cancelled")]
    InterruptExpired(String),
    /// 409: a run with this id exists already.
    #[error("run {0:?} exists already")]
    RunExists(String),
    /// 404: a reconnect names a run that is not (or no longer) known.
    #[error("run {0:?} not found (unknown, or finished too long ago)")]
    RunNotFound(String),
    /// 410: a reconnect's cursor points before the oldest frame kept.
    #[error("frames after Last-Event-ID {0:?} are no longer buffered")]
    ReplayUnavailable(String),
    /// 503: the run is not in this server's memory, and its thread store
    /// keeps no event log to replay it from.
    #[error("this server keeps no event log: the run cannot be replayed here")]
    EventLogUnavailable,
    /// 503: the thread store failed (its own words stay in the server log).
    #[error("the thread store is unavailable")]
    StoreUnavailable,
}

impl RequestError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            RequestError::Unauthorized => StatusCode::UNAUTHORIZED,
            RequestError::Forbidden(_) => StatusCode::FORBIDDEN,
            RequestError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            RequestError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            RequestError::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            RequestError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            RequestError::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            RequestError::BodyRead(_)
            | RequestError::InvalidJson(_)
            | RequestError::InvalidLastEventId(_) => StatusCode::BAD_REQUEST,
            RequestError::InvalidInput(_)
            | RequestError::MissingUserMessage
            | RequestError::InvalidResume(_)
            | RequestError::NotGrantable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            RequestError::PendingInterrupt { .. }
            | RequestError::InterruptExpired(_)
            | RequestError::RunExists(_) => StatusCode::CONFLICT,
            RequestError::InterruptNotFound(_) | RequestError::RunNotFound(_) => {
                StatusCode::NOT_FOUND
            }
            RequestError::ReplayUnavailable(_) => StatusCode::GONE,
            RequestError::EventLogUnavailable | RequestError::StoreUnavailable => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }

    /// The machine code in the JSON body.
    pub fn code(&self) -> &'static str {
        match self {
            RequestError::Unauthorized => "unauthorized",
            RequestError::Forbidden(_) => "forbidden",
            RequestError::MethodNotAllowed => "method_not_allowed",
            RequestError::UnsupportedMediaType(_) => "unsupported_media_type",
            RequestError::NotAcceptable(_) => "not_acceptable",
            RequestError::PayloadTooLarge { .. } => "payload_too_large",
            RequestError::BodyRead(_) => "body_read_failed",
            RequestError::BodyTimeout => "body_timeout",
            RequestError::InvalidJson(_) => "invalid_json",
            RequestError::InvalidInput(_) => "invalid_input",
            RequestError::MissingUserMessage => "missing_user_message",
            RequestError::InvalidLastEventId(_) => "invalid_last_event_id",
            RequestError::PendingInterrupt { .. } => "pending_interrupt",
            RequestError::InterruptNotFound(_) => "interrupt_not_found",
            RequestError::InvalidResume(_) => "invalid_resume",
            RequestError::NotGrantable(_) => "not_grantable",
            RequestError::InterruptExpired(_) => "interrupt_expired",
            RequestError::RunExists(_) => "run_exists",
            RequestError::RunNotFound(_) => "run_not_found",
            RequestError::ReplayUnavailable(_) => "replay_unavailable",
            RequestError::EventLogUnavailable => "event_log_unavailable",
            RequestError::StoreUnavailable => "thread_store_unavailable",
        }
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        let mut error = json!({"code": self.code(), "message": self.to_string()});
        if let RequestError::PendingInterrupt { interrupt_ids } = self {
            error["interruptIds"] = json!(interrupt_ids);
        }
        json!({ "error": error })
    }
}

impl IntoResponse for RequestError {
    fn into_response(self) -> Response {
        let mut resp = (self.status(), axum::Json(self.body())).into_response();
        if self == RequestError::Unauthorized {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}
