//! JSON-RPC 2.0 envelopes and the A2A error codes (spec §5.4, §9.5).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The `domain` of the `google.rpc.ErrorInfo` detail A2A errors carry.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";
const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// A JSON-RPC / A2A error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// -32700: the body is not JSON.
    ParseError,
    /// -32600: the JSON is not a valid request object (also: wrong content
    /// type, oversized body).
    InvalidRequest,
    /// -32601: no such method.
    MethodNotFound,
    /// -32602: the params are invalid (a missing message, an empty prompt …).
    InvalidParams,
    /// -32603: the server failed.
    Internal,
    /// -32000: the auth hook refused the request (implementation-defined
    /// server error; HTTP 401/403).
    Unauthorized,
    /// -32001: no such task (or it expired).
    TaskNotFound,
    /// -32002: the task already reached a terminal state.
    TaskNotCancelable,
    /// -32003: push notifications are not supported.
    PushNotificationNotSupported,
    /// -32004: the operation is not supported (on this task, in this state).
    UnsupportedOperation,
    /// -32005: a part's media type is not supported.
    ContentTypeNotSupported,
    /// -32006: an agent's response broke the spec.
    InvalidAgentResponse,
    /// -32007: no extended card is configured.
    ExtendedAgentCardNotConfigured,
    /// -32008: a required extension was not declared by the client.
    ExtensionSupportRequired,
    /// -32009: the requested `A2A-Version` is not supported.
    VersionNotSupported,
    /// Any other code, verbatim.
    Other(i64),
}

impl ErrorCode {
    /// The numeric code.
    pub fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::Internal => -32603,
            ErrorCode::Unauthorized => -32000,
            ErrorCode::TaskNotFound => -32001,
            ErrorCode::TaskNotCancelable => -32002,
            ErrorCode::PushNotificationNotSupported => -32003,
            ErrorCode::UnsupportedOperation => -32004,
            ErrorCode::ContentTypeNotSupported => -32005,
            ErrorCode::InvalidAgentResponse => -32006,
            ErrorCode::ExtendedAgentCardNotConfigured => -32007,
            ErrorCode::ExtensionSupportRequired => -32008,
            ErrorCode::VersionNotSupported => -32009,
            ErrorCode::Other(c) => c,
        }
    }

    /// The code for a number.
    pub fn from_code(code: i64) -> Self {
        match code {
            -32700 => ErrorCode::ParseError,
            -32600 => ErrorCode::InvalidRequest,
            -32601 => ErrorCode::MethodNotFound,
            -32602 => ErrorCode::InvalidParams,
            -32603 => ErrorCode::Internal,
            -32000 => ErrorCode::Unauthorized,
            -32001 => ErrorCode::TaskNotFound,
            -32002 => ErrorCode::TaskNotCancelable,
            -32003 => ErrorCode::PushNotificationNotSupported,
            -32004 => ErrorCode::UnsupportedOperation,
            -32005 => ErrorCode::ContentTypeNotSupported,
            -32006 => ErrorCode::InvalidAgentResponse,
            -32007 => ErrorCode::ExtendedAgentCardNotConfigured,
            -32008 => ErrorCode::ExtensionSupportRequired,
            -32009 => ErrorCode::VersionNotSupported,
            other => ErrorCode::Other(other),
        }
    }

    /// The `ErrorInfo.reason` (`"TASK_NOT_FOUND"` …).
    pub fn reason(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "PARSE_ERROR",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::MethodNotFound => "METHOD_NOT_FOUND",
            ErrorCode::InvalidParams => "INVALID_PARAMS",
            ErrorCode::Internal => "INTERNAL_ERROR",
            ErrorCode::Unauthorized => "UNAUTHENTICATED",
            ErrorCode::TaskNotFound => "TASK_NOT_FOUND",
            ErrorCode::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            ErrorCode::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            ErrorCode::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            ErrorCode::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            ErrorCode::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            ErrorCode::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            ErrorCode::ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            ErrorCode::VersionNotSupported => "VERSION_NOT_SUPPORTED",
            ErrorCode::Other(_) => "UNKNOWN",
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("JSON-RPC error {code}: {message}")]
pub struct RpcError {
    /// The numeric code (see [`ErrorCode`]).
    pub code: i64,
    /// A human-readable message.
    #[serde(default)]
    pub message: String,
    /// Details: for A2A errors, a list whose first item is a
    /// `google.rpc.ErrorInfo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with `code` and `message`, and an `ErrorInfo` detail naming
    /// the reason.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        RpcError {
            code: code.code(),
            message: message.into(),
            data: Some(json!([{
                "@type": ERROR_INFO_TYPE,
                "reason": code.reason(),
                "domain": ERROR_DOMAIN,
            }])),
        }
    }

    /// Add `key: value` to the `ErrorInfo` metadata (string values, as
    /// `google.rpc.ErrorInfo` has them).
    pub fn with_meta(mut self, key: &str, value: impl Into<String>) -> Self {
        if let Some(Value::Array(items)) = &mut self.data
            && let Some(Value::Object(info)) = items.first_mut()
        {
            let meta = info
                .entry("metadata")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(m) = meta {
                m.insert(key.to_owned(), Value::String(value.into()));
            }
        }
        self
    }

    /// The code as an [`ErrorCode`].
    pub fn kind(&self) -> ErrorCode {
        ErrorCode::from_code(self.code)
    }

    /// Shorthand: invalid params.
    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        RpcError::new(ErrorCode::InvalidParams, message)
    }

    /// Shorthand: task not found.
    pub(crate) fn task_not_found(id: &str) -> Self {
        RpcError::new(ErrorCode::TaskNotFound, format!("task {id:?} not found"))
            .with_meta("taskId", id)
    }
}

/// A JSON-RPC success response.
pub(crate) fn success(id: &Value, result: impl Serialize) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A JSON-RPC error response.
pub(crate) fn failure(id: &Value, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

/// A parsed request envelope.
#[derive(Debug)]
pub(crate) struct Envelope {
    pub(crate) id: Value,
    pub(crate) method: String,
    pub(crate) params: Value,
}

/// Check a decoded body against JSON-RPC 2.0 (spec §9.3). On failure,
/// returns the id (when one could be read) and an invalid-request error.
#[allow(
    clippy::result_large_err,
    reason = "once per HTTP request, answered at once by the caller"
)]
pub(crate) fn envelope(body: Value) -> Result<Envelope, (Value, RpcError)> {
    let invalid = |id: Value, msg: &str| (id, RpcError::new(ErrorCode::InvalidRequest, msg));
    let mut obj = match body {
        Value::Object(o) => o,
        Value::Array(_) => {
            return Err(invalid(Value::Null, "batch requests are not supported"));
        }
        _ => {
            return Err(invalid(
                Value::Null,
                "the body must be a JSON-RPC 2.0 request object",
            ));
        }
    };
    let id = match obj.remove("id") {
        None | Some(Value::Null) => Value::Null,
        Some(v @ (Value::String(_) | Value::Number(_))) => v,
        Some(_) => {
            return Err(invalid(
                Value::Null,
                "id must be a string, a number or null",
            ));
        }
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id, "jsonrpc must be exactly \"2.0\""));
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) if !m.is_empty() => m,
        _ => return Err(invalid(id, "method must be a non-empty string")),
    };
    let params = match obj.remove("params") {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(p @ Value::Object(_)) => p,
        Some(_) => {
            return Err((
                id,
                RpcError::invalid_params("params must be an object (by-name parameters)"),
            ));
        }
    };
    Ok(Envelope { id, method, params })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_are_checked_field_by_field() {
        let ok = envelope(json!({"jsonrpc": "2.0", "id": 7, "method": "GetTask"})).unwrap();
        assert_eq!((ok.id, ok.method.as_str()), (json!(7), "GetTask"));
        let (id, e) = envelope(json!({"jsonrpc": "1.0", "id": "a", "method": "x"})).unwrap_err();
        assert_eq!((id, e.kind()), (json!("a"), ErrorCode::InvalidRequest));
        let (_, e) = envelope(json!([1])).unwrap_err();
        assert!(e.message.contains("batch"));
        let (_, e) =
            envelope(json!({"jsonrpc": "2.0", "id": 1, "method": "m", "params": [1]})).unwrap_err();
        assert_eq!(e.kind(), ErrorCode::InvalidParams);
    }

    #[test]
    fn errors_carry_an_error_info_detail() {
        let e = RpcError::task_not_found("t1");
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["code"], -32001);
        assert_eq!(v["data"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(v["data"][0]["metadata"]["taskId"], "t1");
        assert_eq!(ErrorCode::from_code(-32009), ErrorCode::VersionNotSupported);
    }
}
