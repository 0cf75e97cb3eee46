//! A bare ACP client over an in-memory duplex for the server's tests: it
//! writes frames, reads every frame the server writes, and keeps the
//! notifications that arrived before each answer.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agent_adaptor_bridges::acp::AcpServer;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;

/// How long any one frame may take (a hang fails the test, it does not
/// time anything).
const FRAME_WAIT: Duration = Duration::from_secs(60);

/// A connected client.
pub struct AcpClient {
    to_server: Option<WriteHalf<tokio::io::DuplexStream>>,
    from_server: Lines<BufReader<ReadHalf<tokio::io::DuplexStream>>>,
    next_id: u64,
    /// The server's task (its `serve` result).
    pub serving: Option<JoinHandle<std::io::Result<()>>>,
}

impl AcpClient {
    /// Start `server` on a duplex and connect to it.
    pub fn start(server: AcpServer) -> AcpClient {
        let (client, agent_side) = tokio::io::duplex(1 << 20);
        let (agent_in, agent_out) = tokio::io::split(agent_side);
        let serving = tokio::spawn(async move { server.serve(agent_in, agent_out).await });
        let (from_server, to_server) = tokio::io::split(client);
        AcpClient {
            to_server: Some(to_server),
            from_server: BufReader::new(from_server).lines(),
            next_id: 100,
            serving: Some(serving),
        }
    }

    /// Write one raw line.
    pub async fn send_line(&mut self, line: &str) {
        let w = self.to_server.as_mut().expect("input still open");
        w.write_all(line.as_bytes()).await.unwrap();
        w.write_all(b"\n").await.unwrap();
    }

    /// Send a request; its id.
    pub async fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&frame.to_string()).await;
        id
    }

    /// Send a notification.
    pub async fn notify(&mut self, method: &str, params: Value) {
        let frame = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_line(&frame.to_string()).await;
    }

    /// Answer a request of the server's.
    pub async fn answer(&mut self, id: &Value, result: Value) {
        let frame = json!({"jsonrpc": "2.0", "id": id, "result": result});
        self.send_line(&frame.to_string()).await;
    }

    /// The next frame from the server (`None` at its end of output).
    pub async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(FRAME_WAIT, self.from_server.next_line())
            .await
            .expect("a frame from the server in time")
            .unwrap()?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
    }

    /// Frames up to (and including) the response to `id`; panics on a
    /// request from the server (use [`until`](Self::until) for those).
    pub async fn response(&mut self, id: u64) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let frame = self.next().await.expect("the server's answer");
            if frame.get("id") == Some(&json!(id)) && frame.get("method").is_none() {
                return (before, frame);
            }
            assert!(
                frame.get("id").is_none() || frame.get("method").is_none(),
                "unexpected request from the server: {frame}"
            );
            before.push(frame);
        }
    }

    /// Frames up to (and including) the first one `pick` accepts.
    pub async fn until(&mut self, pick: impl Fn(&Value) -> bool) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let frame = self.next().await.expect("a frame");
            if pick(&frame) {
                return (before, frame);
            }
            before.push(frame);
        }
    }

    /// `initialize`, then `session/new` in `cwd`: the session id.
    pub async fn new_session(&mut self, cwd: &std::path::Path) -> String {
        let id = self.send("initialize", json!({"protocolVersion": 1})).await;
        let (_, init) = self.response(id).await;
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        let id = self
            .send("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        let (_, new) = self.response(id).await;
        new["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("a session: {new}"))
            .to_owned()
    }

    /// Close the server's input; wait for it to end.
    pub async fn close(&mut self) -> std::io::Result<()> {
        // A split half keeps the duplex open: shut the writing side down.
        if let Some(mut w) = self.to_server.take() {
            w.shutdown().await.unwrap();
        }
        let serving = self.serving.take().expect("serving");
        tokio::time::timeout(FRAME_WAIT, serving)
            .await
            .expect("the server ends at end of input")
            .unwrap()
    }
}

/// The `sessionUpdate` kinds of `frames` (the `session/update`s only).
pub fn kinds(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .filter(|f| f["method"] == "session/update")
        .map(|f| {
            f["params"]["update"]["sessionUpdate"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The texts of the `agent_message_chunk`s of `frames`, in order.
pub fn message_text(frames: &[Value], kind: &str) -> Vec<String> {
    frames
        .iter()
        .filter(|f| f["params"]["update"]["sessionUpdate"] == kind)
        .map(|f| {
            f["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}
