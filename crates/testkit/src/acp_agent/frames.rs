//! JSON-RPC 2.0 frames of the fake agent: built from the ACP schema's
//! envelope types (`JsonRpcMessage`, `Request`, `Response`, `Notification`),
//! one NDJSON line each, and the classification of a received line.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    Error, JsonRpcMessage, Notification, Request, RequestId, Response,
};
use serde::Serialize;
use serde_json::Value;

/// One line: a request from the agent to the client.
pub fn request(id: i64, method: &str, params: impl Serialize) -> String {
    line(&JsonRpcMessage::wrap(Request {
        id: RequestId::Number(id),
        method: Arc::from(method),
        params: Some(params),
    }))
}

/// One line: the answer to the client's request `id`.
pub fn response<R: Serialize>(id: RequestId, result: Result<R, Error>) -> String {
    line(&JsonRpcMessage::wrap(Response::new(id, result)))
}

/// One line: a notification (no id, no answer expected).
pub fn notification(method: &str, params: impl Serialize) -> String {
    line(&JsonRpcMessage::wrap(Notification {
        method: Arc::from(method),
        params: Some(params),
    }))
}

fn line(frame: &impl Serialize) -> String {
    // Serializing schema types into a string cannot fail (string keys only).
    serde_json::to_string(frame).unwrap_or_else(|e| {
        format!(r#"{{"jsonrpc":"2.0","method":"fake/serialize_error","params":"{e}"}}"#)
    })
}

/// A frame the client sent, classified by its members.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// `id` and `method`: the client asks, the agent must answer.
    Request {
        /// The id to answer with.
        id: RequestId,
        /// The method name.
        method: String,
        /// The params (`null` when absent).
        params: Value,
    },
    /// `method` without `id`.
    Notification {
        /// The method name.
        method: String,
        /// The params (`null` when absent).
        params: Value,
    },
    /// `id` with `result` or `error`: the answer to one of the agent's
    /// requests.
    Response {
        /// The id of the agent's request.
        id: RequestId,
        /// The result, or the JSON-RPC error.
        result: Result<Value, Error>,
    },
}

/// Classifies one received line; `Err` says why it is not a JSON-RPC 2.0
/// frame (not JSON, no `"jsonrpc":"2.0"`, neither request nor response).
pub fn parse(text: &str) -> Result<Incoming, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if value.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err("missing \"jsonrpc\":\"2.0\"".into());
    }
    let params = value.get("params").cloned().unwrap_or(Value::Null);
    let method = value
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let id = match value.get("id") {
        Some(id) => Some(
            serde_json::from_value::<RequestId>(id.clone()).map_err(|e| format!("bad id: {e}"))?,
        ),
        None => None,
    };
    match (id, method) {
        (Some(id), Some(method)) => Ok(Incoming::Request { id, method, params }),
        (None, Some(method)) => Ok(Incoming::Notification { method, params }),
        (Some(id), None) => {
            let response: Response<Value> =
                serde_json::from_value(value).map_err(|e| format!("bad response: {e}"))?;
            Ok(match response {
                Response::Result { result, .. } => Incoming::Response {
                    id,
                    result: Ok(result),
                },
                Response::Error { error, .. } => Incoming::Response {
                    id,
                    result: Err(error),
                },
            })
        }
        (None, None) => Err("neither a request nor a response".into()),
    }
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::schema::ProtocolVersion;
    use agent_client_protocol::v1::schema::{
        AgentCapabilities, ContentBlock, ContentChunk, InitializeResponse, PermissionOption,
        PermissionOptionKind, PromptResponse, ReadTextFileRequest, RequestPermissionRequest,
        RequestPermissionResponse, SessionNotification, SessionUpdate, StopReason, ToolCallStatus,
        ToolCallUpdate, ToolCallUpdateFields,
    };
    use serde_json::json;

    use super::*;

    fn value(line: &str) -> Value {
        assert!(!line.contains('\n'), "a frame is one line: {line}");
        serde_json::from_str(line).expect("a frame is JSON")
    }

    #[test]
    fn a_response_carries_jsonrpc_and_round_trips_through_the_schema() {
        let init = InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(AgentCapabilities::new().load_session(true));
        let text = response(RequestId::Number(0), Ok(init.clone()));
        let v = value(&text);
        assert_eq!(v["jsonrpc"], "2.0");
        assert_eq!(v["id"], 0);
        assert_eq!(v["result"]["protocolVersion"], 1);
        assert_eq!(v["result"]["agentCapabilities"]["loadSession"], true);
        let back: JsonRpcMessage<Response<InitializeResponse>> =
            serde_json::from_str(&text).unwrap();
        assert_eq!(
            back.into_inner(),
            Response::Result {
                id: RequestId::Number(0),
                result: init
            }
        );
    }

    #[test]
    fn an_error_response_keeps_code_and_message() {
        let text = response::<PromptResponse>(
            RequestId::Str("p1".into()),
            Err(Error::new(-32603, "model HTTP 500")),
        );
        let v = value(&text);
        assert_eq!(
            v["error"],
            json!({"code": -32603, "message": "model HTTP 500"})
        );
        assert!(v.get("result").is_none());
        match parse(&text) {
            Ok(Incoming::Response { id, result: Err(e) }) => {
                assert_eq!(id, RequestId::Str("p1".into()));
                assert_eq!(i32::from(e.code), -32603);
                assert_eq!(e.message, "model HTTP 500");
            }
            other => panic!("not an error response: {other:?}"),
        }
    }

    #[test]
    fn a_session_update_notification_round_trips() {
        let update = SessionNotification::new(
            "s1",
            SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from("Hel"))),
        );
        let text = notification("session/update", update.clone());
        let v = value(&text);
        assert!(v.get("id").is_none());
        assert_eq!(
            v["params"]["update"]["sessionUpdate"],
            "agent_message_chunk"
        );
        assert_eq!(v["params"]["update"]["content"]["text"], "Hel");
        let Ok(Incoming::Notification { method, params }) = parse(&text) else {
            panic!("not a notification: {text}");
        };
        assert_eq!(method, "session/update");
        assert_eq!(
            serde_json::from_value::<SessionNotification>(params).unwrap(),
            update
        );
    }

    #[test]
    fn a_permission_request_round_trips_and_its_answer_parses() {
        let ask = RequestPermissionRequest::new(
            "s1",
            ToolCallUpdate::new(
                "call-1",
                ToolCallUpdateFields::new().status(ToolCallStatus::Pending),
            ),
            vec![PermissionOption::new(
                "allow_once",
                "Allow once",
                PermissionOptionKind::AllowOnce,
            )],
        );
        let text = request(7, "session/request_permission", ask.clone());
        let Ok(Incoming::Request { id, method, params }) = parse(&text) else {
            panic!("not a request: {text}");
        };
        assert_eq!(
            (id, method.as_str()),
            (RequestId::Number(7), "session/request_permission")
        );
        assert_eq!(
            serde_json::from_value::<RequestPermissionRequest>(params).unwrap(),
            ask
        );
        let answer = r#"{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}"#;
        let Ok(Incoming::Response {
            result: Ok(result), ..
        }) = parse(answer)
        else {
            panic!("not a result");
        };
        let outcome: RequestPermissionResponse = serde_json::from_value(result).unwrap();
        assert_eq!(
            serde_json::to_value(outcome.outcome).unwrap(),
            json!({"outcome": "selected", "optionId": "allow_once"})
        );
    }

    #[test]
    fn a_client_request_frame_round_trips() {
        let text = request(
            1,
            "fs/read_text_file",
            ReadTextFileRequest::new("s1", "/w/a.txt"),
        );
        let v = value(&text);
        assert_eq!(v["params"], json!({"sessionId": "s1", "path": "/w/a.txt"}));
        let stop = response(
            RequestId::Number(3),
            Ok(PromptResponse::new(StopReason::EndTurn)),
        );
        assert_eq!(value(&stop)["result"], json!({"stopReason": "end_turn"}));
    }

    #[test]
    fn frames_without_jsonrpc_or_json_are_refused() {
        assert!(parse("not json").unwrap_err().starts_with("not JSON"));
        assert!(
            parse(r#"{"id":1,"method":"initialize"}"#)
                .unwrap_err()
                .contains("jsonrpc")
        );
        assert!(parse(r#"{"jsonrpc":"2.0"}"#).is_err());
        assert!(parse(r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#).is_err());
    }
}
