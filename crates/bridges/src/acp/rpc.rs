//! JSON-RPC 2.0 over NDJSON, the agent side: reading a client's frame, the
//! one writer every frame goes through (so frames keep the order they were
//! queued in), and the requests the server sends to the client with their
//! pending answers.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_client_protocol::v1::schema::Error as RpcError;
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

/// How many frames may wait for the writer before a sender waits.
const WRITE_QUEUE: usize = 1024;

/// One frame from the client.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A request: it gets exactly one response.
    Request {
        /// Its id, echoed in the response.
        id: Value,
        /// The method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// A notification: no response.
    Notification {
        /// The method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// A frame that cannot be served: answered with this error (and the
    /// frame's id when it had a usable one).
    Invalid {
        /// The id to answer with (`null` when none was usable).
        id: Value,
        /// Why.
        error: RpcError,
    },
    /// The answer to a request the server sent.
    Response {
        /// The id of that request.
        id: Value,
        /// Its result or error.
        outcome: Result<Value, RpcError>,
    },
}

/// Read one line. A frame that is not JSON is a parse error (-32700); JSON
/// that is not a JSON-RPC 2.0 message is an invalid request (-32600),
/// answered with the request's id when it has a usable one.
pub(crate) fn parse(line: &str) -> Incoming {
    read(line).unwrap_or_else(|(id, error)| Incoming::Invalid { id, error })
}

#[allow(clippy::result_large_err)] // private; one value per frame
fn read(line: &str) -> Result<Incoming, (Value, RpcError)> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        (
            Value::Null,
            RpcError::parse_error().data(json!(format!("the frame is not JSON: {e}"))),
        )
    })?;
    let Value::Object(mut frame) = value else {
        return Err((
            Value::Null,
            invalid_request("a frame must be one JSON-RPC 2.0 object (batches are not served)"),
        ));
    };
    let id = frame.remove("id");
    let usable_id = id
        .as_ref()
        .filter(|v| v.is_string() || v.is_number())
        .cloned();
    if frame.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((
            usable_id.unwrap_or(Value::Null),
            invalid_request("\"jsonrpc\" must be \"2.0\""),
        ));
    }
    match frame.remove("method") {
        Some(Value::String(method)) => {
            let params = frame.remove("params").unwrap_or(Value::Null);
            match (id, usable_id) {
                (None, _) => Ok(Incoming::Notification { method, params }),
                (Some(_), Some(id)) => Ok(Incoming::Request { id, method, params }),
                (Some(_), None) => Err((
                    Value::Null,
                    invalid_request("\"id\" must be a string or a number"),
                )),
            }
        }
        Some(_) => Err((
            usable_id.unwrap_or(Value::Null),
            invalid_request("\"method\" must be a string"),
        )),
        None => response(frame, usable_id),
    }
}

#[allow(clippy::result_large_err)] // private; one value per frame
fn response(
    mut frame: Map<String, Value>,
    id: Option<Value>,
) -> Result<Incoming, (Value, RpcError)> {
    let Some(id) = id else {
        return Err((
            Value::Null,
            invalid_request("a frame needs a \"method\" or, as a response, an \"id\""),
        ));
    };
    let outcome = match (frame.remove("result"), frame.remove("error")) {
        (Some(result), None) => Ok(result),
        (None, Some(error)) => Err(serde_json::from_value::<RpcError>(error)
            .unwrap_or_else(|e| RpcError::internal_error().data(json!(e.to_string())))),
        _ => {
            return Err((
                Value::Null,
                invalid_request("a response holds exactly one of \"result\" and \"error\""),
            ));
        }
    };
    Ok(Incoming::Response { id, outcome })
}

/// -32600 with a reason.
pub(crate) fn invalid_request(reason: &str) -> RpcError {
    RpcError::invalid_request().data(json!(reason))
}

/// -32602 with a reason.
pub(crate) fn invalid_params(reason: impl Into<String>) -> RpcError {
    RpcError::invalid_params().data(json!(reason.into()))
}

/// Decode `params` as `T`, or -32602 saying why not.
pub(crate) fn params<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params).map_err(|e| invalid_params(e.to_string()))
}

/// The server's side of the connection: frames out, and the requests it
/// sent that wait for the client's answer.
#[derive(Debug)]
pub(crate) struct Peer {
    out: mpsc::Sender<String>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>,
    next_id: AtomicU64,
}

/// Why a request to the client got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Closed;

impl Peer {
    /// A peer and the receiving end its writer drains.
    pub(crate) fn new() -> (Peer, mpsc::Receiver<String>) {
        let (out, rx) = mpsc::channel(WRITE_QUEUE);
        (
            Peer {
                out,
                pending: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(0),
            },
            rx,
        )
    }

    async fn send(&self, frame: Value) -> Result<(), Closed> {
        let line = serde_json::to_string(&frame).map_err(|_| Closed)?;
        self.out.send(line).await.map_err(|_| Closed)
    }

    /// Answer request `id`.
    pub(crate) async fn respond(&self, id: Value, outcome: Result<Value, RpcError>) {
        let frame = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        // A closed writer means the client is gone: nobody to tell.
        let _ = self.send(frame).await;
    }

    /// Send a notification.
    pub(crate) async fn notify(&self, method: &str, params: impl Serialize) -> Result<(), Closed> {
        let params = serde_json::to_value(params).map_err(|_| Closed)?;
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await
    }

    /// Send a request and wait for its answer (`Err(Closed)` when the
    /// connection ends first).
    pub(crate) async fn request(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> Result<Result<Value, RpcError>, Closed> {
        let params = serde_json::to_value(params).map_err(|_| Closed)?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id, tx);
        // Forgotten when this future ends, answered or not (a caller that
        // stops waiting leaves nothing behind).
        let _forget = Forget { peer: self, id };
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        rx.await.map_err(|_| Closed)
    }

    /// Deliver the client's answer to request `id`; false when no request
    /// of ours has that id (answered twice, or never asked).
    pub(crate) fn resolve(&self, id: &Value, outcome: Result<Value, RpcError>) -> bool {
        let Some(id) = id.as_u64() else {
            return false;
        };
        match self.lock().remove(&id) {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    /// Fail every request still waiting: the client is gone.
    pub(crate) fn close_pending(&self) {
        self.lock().clear();
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Removes a request's pending entry when dropped.
struct Forget<'a> {
    peer: &'a Peer,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.peer.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(e: &RpcError) -> i32 {
        serde_json::to_value(e).unwrap()["code"].as_i64().unwrap() as i32
    }

    fn refused(line: &str) -> (Value, RpcError) {
        match parse(line) {
            Incoming::Invalid { id, error } => (id, error),
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn frames_are_read_or_refused_with_the_right_code() {
        let (id, e) = refused("{not json");
        assert_eq!((id, code(&e)), (Value::Null, -32700));
        let (_, e) = refused("[1,2]");
        assert_eq!(code(&e), -32600);
        let (id, e) = refused(r#"{"id":3,"method":"initialize"}"#);
        assert_eq!((id, code(&e)), (json!(3), -32600));
        let (_, e) = refused(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#);
        assert_eq!(code(&e), -32600);
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":"a","method":"x","params":{"k":1}}"#),
            Incoming::Request { method, .. } if method == "x"
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","method":"session/cancel"}"#),
            Incoming::Notification {
                params: Value::Null,
                ..
            }
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"m"}}"#),
            Incoming::Response {
                outcome: Err(_),
                ..
            }
        ));
        let (_, e) = refused(r#"{"jsonrpc":"2.0","id":0}"#);
        assert_eq!(code(&e), -32600);
    }

    #[tokio::test]
    async fn a_request_gets_its_answer_and_an_unknown_id_is_ignored() {
        let (peer, mut rx) = Peer::new();
        let peer = std::sync::Arc::new(peer);
        let asking = tokio::spawn({
            let peer = peer.clone();
            async move { peer.request("ping", json!({})).await }
        });
        let sent: Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(sent["method"], "ping");
        assert!(!peer.resolve(&json!(99), Ok(json!(1))));
        assert!(peer.resolve(&sent["id"], Ok(json!("pong"))));
        assert_eq!(asking.await.unwrap(), Ok(Ok(json!("pong"))));
        let waiting = tokio::spawn({
            let peer = peer.clone();
            async move { peer.request("ping", json!({})).await }
        });
        let _ = rx.recv().await.unwrap();
        peer.close_pending();
        assert_eq!(waiting.await.unwrap(), Err(Closed));
    }
}
