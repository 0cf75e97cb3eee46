//! A minimal HTTP/1.1 client for one SSE `POST`, timed frame by frame, and
//! the checks a complete, ordered stream passes.
//!
//! Shared by `agent-adaptor-bench serve-load` and the CLI's load test
//! (`crates/cli/tests/serve_load.rs` includes this file), so both open
//! streams, time them and judge them the same way. It speaks just what
//! `agent-adaptor serve` answers: a status line, headers, then a chunked
//! (or close-delimited) body of `id:`/`data:` frames.
#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One SSE request: `POST path` to `addr` with a JSON body and extra
/// headers (credentials, `Accept`).
#[derive(Clone, Debug)]
pub struct SseRequest {
    /// The server.
    pub addr: SocketAddr,
    /// E.g. `/sse`.
    pub path: String,
    /// Extra headers (name, value), sent as given.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: String,
}

/// One SSE frame: its `id:` (if any) and its `data:` parsed as JSON.
#[derive(Clone, Debug)]
pub struct Frame {
    /// The `id:` field as a number (`None` when absent or not an integer).
    pub id: Option<u64>,
    /// The `id:` field as sent (AG-UI ids may be `<sequence>.<index>`).
    pub id_text: Option<String>,
    /// The `data:` lines joined and parsed.
    pub data: Value,
}

impl Frame {
    /// `data.type` (empty when absent).
    pub fn kind(&self) -> &str {
        self.data["type"].as_str().unwrap_or("")
    }
}

/// What came back.
#[derive(Clone, Debug, Default)]
pub struct SseStream {
    /// The HTTP status.
    pub status: u16,
    /// Every frame, in arrival order.
    pub frames: Vec<Frame>,
    /// From starting to connect to the first whole frame.
    pub first_frame: Option<Duration>,
    /// From starting to connect to the end of the body.
    pub total: Duration,
    /// The body when the status was not 200 (an error document).
    pub error_body: String,
    /// Whether the client dropped the connection on purpose before the end
    /// ([`post_sse_partial`]).
    pub cut: bool,
    /// Why the body broke off before its end (the connection closed inside
    /// a chunked body, or a read failed), with the frames read until then.
    pub broken: Option<String>,
}

/// Sends `req` and reads the whole response. After the first frame arrives,
/// `hold` is awaited before reading on (a barrier, or `async {}`).
pub async fn post_sse(
    req: &SseRequest,
    hold: impl Future<Output = ()>,
) -> Result<SseStream, String> {
    let stream = read_sse(req, hold, None).await?;
    match stream.broken {
        Some(e) => Err(e),
        None => Ok(stream),
    }
}

/// Sends `req` and reads the response like [`post_sse`], but a body that
/// breaks off is returned (`broken`, with the frames before the break), not
/// an error; with `cut_after`, the client drops the connection itself once
/// that many frames arrived (`cut`). An error means no response head came.
pub async fn post_sse_partial(
    req: &SseRequest,
    cut_after: Option<usize>,
) -> Result<SseStream, String> {
    read_sse(req, async {}, cut_after).await
}

async fn read_sse(
    req: &SseRequest,
    hold: impl Future<Output = ()>,
    cut_after: Option<usize>,
) -> Result<SseStream, String> {
    let started = Instant::now();
    let mut tcp = TcpStream::connect(req.addr)
        .await
        .map_err(|e| format!("connect {}: {e}", req.addr))?;
    let _ = tcp.set_nodelay(true);
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        req.path,
        req.addr,
        req.body.len()
    );
    for (name, value) in &req.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(&req.body);
    tcp.write_all(head.as_bytes())
        .await
        .map_err(|e| format!("send: {e}"))?;

    let mut reader = Reader::new(tcp);
    let (status, chunked) = reader.head().await?;
    let mut out = SseStream {
        status,
        ..SseStream::default()
    };
    let mut body = Body::new(chunked);
    let mut hold = Some(hold);
    loop {
        while let Some(frame) = body.next_frame()? {
            out.frames.push(frame);
            if let Some(h) = hold.take() {
                out.first_frame = Some(started.elapsed());
                h.await;
            }
            if cut_after.is_some_and(|n| out.frames.len() >= n) {
                out.cut = true;
                out.total = started.elapsed();
                return Ok(out);
            }
        }
        if body.done {
            break;
        }
        match reader.read().await {
            Ok(Some(bytes)) => body.feed(&bytes)?,
            Ok(None) if chunked => {
                out.broken = Some("the connection closed inside a chunked body".into());
                break;
            }
            Ok(None) => body.done = true,
            Err(e) => {
                out.broken = Some(e);
                break;
            }
        }
    }
    if status != 200 || out.frames.is_empty() {
        out.error_body = String::from_utf8_lossy(&body.text).into_owned();
    }
    out.total = started.elapsed();
    Ok(out)
}

/// The raw SSE checks: `run_started` first, `run_finished` last, no `error`
/// frame, SSE ids and `meta.sequence` both strictly increasing, and one run
/// id throughout. The run id on success.
pub fn check_raw(stream: &SseStream) -> Result<String, String> {
    check_status(stream)?;
    let frames = &stream.frames;
    let kinds: Vec<&str> = frames.iter().map(Frame::kind).collect();
    if kinds.first() != Some(&"run_started") || kinds.last() != Some(&"run_finished") {
        return Err(format!(
            "not run_started … run_finished: {:?} … {:?}",
            kinds.first(),
            kinds.last()
        ));
    }
    if let Some(e) = frames.iter().find(|f| f.kind() == "error") {
        return Err(format!("an error frame: {}", e.data));
    }
    let run_id = frames[0].data["meta"]["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut last: Option<(u64, u64)> = None;
    for f in frames {
        let id =
            f.id.ok_or_else(|| format!("a frame without an id: {}", f.data))?;
        let seq = f.data["meta"]["sequence"]
            .as_u64()
            .ok_or_else(|| format!("a frame without meta.sequence: {}", f.data))?;
        if f.data["meta"]["run_id"].as_str() != Some(run_id.as_str()) {
            return Err(format!("a frame of another run: {}", f.data));
        }
        if let Some((pid, pseq)) = last
            && (id <= pid || seq <= pseq)
        {
            return Err(format!(
                "out of order: id {pid} then {id}, sequence {pseq} then {seq}"
            ));
        }
        last = Some((id, seq));
    }
    Ok(run_id)
}

/// The AG-UI checks: `RUN_STARTED` first, `RUN_FINISHED` last, no
/// `RUN_ERROR`. The final frame on success.
pub fn check_agui(stream: &SseStream) -> Result<Value, String> {
    check_status(stream)?;
    let kinds: Vec<&str> = stream.frames.iter().map(Frame::kind).collect();
    if kinds.first() != Some(&"RUN_STARTED") || kinds.last() != Some(&"RUN_FINISHED") {
        return Err(format!(
            "not RUN_STARTED … RUN_FINISHED: {:?} … {:?}",
            kinds.first(),
            kinds.last()
        ));
    }
    if kinds.contains(&"RUN_ERROR") {
        return Err(format!("a RUN_ERROR frame: {kinds:?}"));
    }
    Ok(stream.frames[stream.frames.len() - 1].data.clone())
}

fn check_status(stream: &SseStream) -> Result<(), String> {
    if stream.status == 200 {
        Ok(())
    } else {
        Err(format!("status {}: {}", stream.status, stream.error_body))
    }
}

/// Reads the socket, keeping what follows the response head.
struct Reader {
    tcp: TcpStream,
    buf: Vec<u8>,
}

impl Reader {
    fn new(tcp: TcpStream) -> Self {
        Reader {
            tcp,
            buf: Vec::new(),
        }
    }

    /// Bytes read, or `None` at the end.
    async fn read(&mut self) -> Result<Option<Vec<u8>>, String> {
        if !self.buf.is_empty() {
            return Ok(Some(std::mem::take(&mut self.buf)));
        }
        let mut chunk = vec![0u8; 16 * 1024];
        let n = self
            .tcp
            .read(&mut chunk)
            .await
            .map_err(|e| format!("read: {e}"))?;
        chunk.truncate(n);
        Ok((n > 0).then_some(chunk))
    }

    /// The status and whether the body is chunked.
    async fn head(&mut self) -> Result<(u16, bool), String> {
        let mut head = Vec::new();
        let end = loop {
            if let Some(i) = find(&head, b"\r\n\r\n") {
                break i;
            }
            match self.read().await? {
                Some(bytes) => head.extend_from_slice(&bytes),
                None => return Err("the connection closed before the response head".into()),
            }
        };
        self.buf = head.split_off(end + 4);
        let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
        let status = text
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("a bad status line: {text:?}"))?;
        let chunked = text
            .lines()
            .any(|l| l.starts_with("transfer-encoding:") && l.contains("chunked"));
        Ok((status, chunked))
    }
}

/// The body: de-chunked text and the frames found in it.
struct Body {
    chunked: bool,
    /// Raw bytes not yet de-chunked.
    pending: Vec<u8>,
    /// De-chunked bytes not yet cut into frames.
    text: Vec<u8>,
    done: bool,
}

impl Body {
    fn new(chunked: bool) -> Self {
        Body {
            chunked,
            pending: Vec::new(),
            text: Vec::new(),
            done: false,
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Result<(), String> {
        if !self.chunked {
            self.text.extend_from_slice(bytes);
            return Ok(());
        }
        self.pending.extend_from_slice(bytes);
        while !self.done {
            let Some(line) = find(&self.pending, b"\r\n") else {
                break;
            };
            let size_text = String::from_utf8_lossy(&self.pending[..line]).into_owned();
            let size_hex = size_text.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_hex, 16)
                .map_err(|_| format!("a bad chunk size {size_text:?}"))?;
            if self.pending.len() < line + 2 + size + 2 {
                break;
            }
            if size == 0 {
                self.done = true;
            }
            self.text
                .extend_from_slice(&self.pending[line + 2..line + 2 + size]);
            self.pending.drain(..line + 2 + size + 2);
        }
        Ok(())
    }

    /// The next whole frame (comment-only frames are skipped).
    fn next_frame(&mut self) -> Result<Option<Frame>, String> {
        while let Some(end) = find(&self.text, b"\n\n") {
            let raw: Vec<u8> = self.text.drain(..end + 2).collect();
            let raw = String::from_utf8_lossy(&raw);
            let mut id_text = None;
            let mut data = Vec::new();
            for line in raw.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id_text = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push(v.strip_prefix(' ').unwrap_or(v));
                }
            }
            if data.is_empty() {
                continue;
            }
            let data = serde_json::from_str(&data.join("\n"))
                .map_err(|e| format!("a frame that is not JSON ({e}): {raw:?}"))?;
            let id = id_text.as_deref().and_then(|t| t.parse().ok());
            return Ok(Some(Frame { id, id_text, data }));
        }
        Ok(None)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_body_cut_anywhere_gives_the_same_frames() {
        let text = "id: 1\ndata: {\"type\":\"run_started\"}\n\n: keep-alive\n\nid: 2\ndata: {\"type\":\"run_finished\"}\n\n";
        let (a, b) = text.split_at(17);
        let wire = format!("{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n", a.len(), b.len());
        for cut in 0..wire.len() {
            let mut body = Body::new(true);
            let mut frames = Vec::new();
            for part in [&wire.as_bytes()[..cut], &wire.as_bytes()[cut..]] {
                body.feed(part).unwrap();
                while let Some(f) = body.next_frame().unwrap() {
                    frames.push(f);
                }
            }
            assert!(body.done, "cut at {cut}");
            let got: Vec<(Option<u64>, &str)> = frames.iter().map(|f| (f.id, f.kind())).collect();
            assert_eq!(
                got,
                [(Some(1), "run_started"), (Some(2), "run_finished")],
                "cut at {cut}"
            );
        }
    }
}
