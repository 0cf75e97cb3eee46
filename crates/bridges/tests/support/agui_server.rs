//! AG-UI bridge test fixtures: scripted agents, a runner that records every
//! run it starts, a server on 127.0.0.1:0, and a small SSE reader.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_adaptor_bridges::agui::{SseHandler, SseOptions, SseServer};
use agent_adaptor_bridges::guard::Guard;
use agent_adaptor_core::driver::{
    DecisionKind, DecisionRequest, FailureCode, Response, RunFailure, StreamPayload,
};
use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
use agent_adaptor_core::{
    Agent, Error, FailureReason, RunHandle, RunOptions, RunResult, RunStream, Runner,
};
use futures::StreamExt;
use serde_json::{Value, json};

/// A runner that records each run it starts (prompt and handle), so tests
/// can assert on the server side: was the driver called, was the run
/// cancelled, what did it decide.
pub struct Recorder {
    agent: Agent,
    runs: Mutex<Vec<(String, RunHandle, Instant)>>,
    /// When each run's outcome became known (set by a watcher task).
    finished: Arc<Mutex<Vec<Option<Instant>>>>,
}

impl Recorder {
    pub fn new(agent: Agent) -> Arc<Self> {
        Arc::new(Recorder {
            agent,
            runs: Mutex::new(Vec::new()),
            finished: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// How many runs were started.
    pub fn count(&self) -> usize {
        self.runs.lock().unwrap().len()
    }

    /// The prompts, in order.
    pub fn prompts(&self) -> Vec<String> {
        self.runs
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.0.clone())
            .collect()
    }

    /// The handle of run `i`.
    pub fn handle(&self, i: usize) -> RunHandle {
        self.runs.lock().unwrap()[i].1.clone()
    }

    /// The index of the run started with `prompt`.
    pub fn find(&self, prompt: &str) -> usize {
        self.runs
            .lock()
            .unwrap()
            .iter()
            .position(|r| r.0 == prompt)
            .unwrap_or_else(|| panic!("no run was started with prompt {prompt:?}"))
    }

    /// Wait (up to `within`) for run `i` to finish; its outcome and when the
    /// outcome became known (recorded by a watcher as it happened).
    pub async fn outcome(&self, i: usize, within: Duration) -> (Result<RunResult, Error>, Instant) {
        let h = self.handle(i);
        let res = tokio::time::timeout(within, h.result())
            .await
            .unwrap_or_else(|_| panic!("run {i} did not finish within {within:?}"));
        // The watcher records right after the same outcome resolves.
        for _ in 0..1000 {
            if let Some(at) = self.finished.lock().unwrap()[i] {
                return (res, at);
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("run {i} finished but its watcher recorded nothing");
    }
}

impl Runner for Recorder {
    fn stream_with(&self, prompt: &str, options: RunOptions) -> RunStream {
        let s = self.agent.stream_with(prompt, options);
        let mut runs = self.runs.lock().unwrap();
        let i = runs.len();
        runs.push((prompt.to_owned(), s.handle(), Instant::now()));
        self.finished.lock().unwrap().push(None);
        let (handle, finished) = (s.handle(), self.finished.clone());
        tokio::spawn(async move {
            let _ = handle.result().await;
            finished.lock().unwrap()[i] = Some(Instant::now());
        });
        s
    }
}

/// The failure reason of an outcome (`None` for success).
pub fn reason(outcome: &Result<RunResult, Error>) -> Option<FailureReason> {
    match outcome {
        Ok(_) => None,
        Err(e) => Some(
            e.as_run_error()
                .map(|r| r.reason.clone())
                .unwrap_or(FailureReason::Other(e.to_string())),
        ),
    }
}

/// A server with the handler at `/agui`.
pub struct TestServer {
    pub server: SseServer,
    pub handler: SseHandler,
    pub runs: Arc<Recorder>,
    pub driver: ScriptedDriver,
    pub url: String,
}

pub const PATH: &str = "/agui";

/// One "instance" of several over a shared store: a handler running
/// `driver` with `options` and the store as its event log, behind a layer
/// that takes the caller from the `x-test-principal` header (default
/// `alice`).
pub struct Instance {
    pub handler: SseHandler,
    pub server: SseServer,
    pub url: String,
}

pub async fn instance(
    store: &Arc<agent_adaptor_core::MemoryStore>,
    driver: ScriptedDriver,
    options: SseOptions,
) -> Instance {
    let agent = Agent::new(driver);
    let handler = SseHandler::new(Arc::new(agent), options.event_log(store.clone()));
    let router = handler
        .router(PATH)
        .layer(axum::middleware::from_fn(principal_from_header));
    let server = SseServer::bind_local(router).await.unwrap();
    let url = server.url(PATH);
    Instance {
        handler,
        server,
        url,
    }
}

pub async fn principal_from_header(
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let who = req
        .headers()
        .get("x-test-principal")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("alice")
        .to_owned();
    req.extensions_mut()
        .insert(agent_adaptor_bridges::Principal::new(who));
    next.run(req).await
}

pub async fn serve(driver: ScriptedDriver, options: SseOptions) -> TestServer {
    let agent = Agent::new(driver.clone());
    serve_agent(agent, driver, options).await
}

pub async fn serve_agent(agent: Agent, driver: ScriptedDriver, options: SseOptions) -> TestServer {
    serve_agent_behind(agent, driver, options, None).await
}

/// [`serve`] with `guard` in front of the handler (as `agent-adaptor
/// serve` mounts it).
pub async fn serve_guarded(
    driver: ScriptedDriver,
    options: SseOptions,
    guard: Guard,
) -> TestServer {
    let agent = Agent::new(driver.clone());
    serve_agent_behind(agent, driver, options, Some(guard)).await
}

async fn serve_agent_behind(
    agent: Agent,
    driver: ScriptedDriver,
    options: SseOptions,
    guard: Option<Guard>,
) -> TestServer {
    let runs = Recorder::new(agent);
    let handler = SseHandler::new(runs.clone(), options);
    let router = handler.router(PATH);
    let router = match guard {
        Some(guard) => guard.layer(router),
        None => router,
    };
    let server = SseServer::bind_local(router).await.unwrap();
    let url = server.url(PATH);
    TestServer {
        server,
        handler,
        runs,
        driver,
        url,
    }
}

fn respond(text: &str) -> Ending {
    Ending::Respond(Box::new(Response {
        output: text.to_owned(),
        exit_code: Some(0),
        provider: "scripted".into(),
        ..Default::default()
    }))
}

fn s(p: StreamPayload) -> Step {
    Step::Stream(p)
}

/// A plain text answer in three chunks.
pub fn text_script() -> ScriptedDriver {
    ScriptedDriver::text_chunks(&["Hello", ", ", "world"])
}

/// Reasoning, then an answer.
pub fn reasoning_script() -> ScriptedDriver {
    ScriptedDriver::new(
        vec![
            s(StreamPayload::run_started()),
            s(StreamPayload::reasoning_start("r1")),
            s(StreamPayload::reasoning_content("r1", "Let me think")),
            s(StreamPayload::reasoning_content("r1", " about it.")),
            s(StreamPayload::reasoning_end("r1")),
            s(StreamPayload::text_start("m1")),
            s(StreamPayload::text_content("m1", "42")),
            s(StreamPayload::text_end("m1")),
            s(StreamPayload::run_finished(None)),
        ],
        respond("42"),
    )
}

/// Text, a tool call with streamed arguments and its result, more text.
pub fn tool_script() -> ScriptedDriver {
    ScriptedDriver::new(
        vec![
            s(StreamPayload::run_started()),
            s(StreamPayload::step_started("turn-1")),
            s(StreamPayload::text_start("m1")),
            s(StreamPayload::text_content("m1", "Let me look.")),
            s(StreamPayload::text_end("m1")),
            s(StreamPayload::tool_call_start("call-1", "read_file", None)),
            s(StreamPayload::tool_call_args("call-1", "{\"path\":")),
            s(StreamPayload::tool_call_args("call-1", "\"a.txt\"}")),
            s(StreamPayload::tool_call_end("call-1", None)),
            s(StreamPayload::tool_call_result(
                "call-1",
                Some(json!("file contents")),
            )),
            s(StreamPayload::text_start("m2")),
            s(StreamPayload::text_content("m2", "It says: file contents")),
            s(StreamPayload::text_end("m2")),
            s(StreamPayload::step_finished("turn-1")),
            s(StreamPayload::run_finished(None)),
        ],
        respond("It says: file contents"),
    )
}

/// A permission request in the middle of an open tool call: text, the call
/// (complete arguments at start), the approval, then the call's result and
/// a final text. The decision lands in the response metadata `decision.0`.
pub fn approval_script(kind: DecisionKind) -> ScriptedDriver {
    let mut req = DecisionRequest::new(kind, "scripted.can_use_tool");
    req.tool_call_id = "call-1".into();
    req.prompt = "Allow bash to run `ls`?".into();
    req.payload = Some(json!({"tool": "bash", "input": {"command": "ls"}}));
    if kind == DecisionKind::Question {
        req.tool_call_id.clear();
        req.prompt = "Which file?".into();
        req.choices = vec![
            agent_adaptor_core::driver::DecisionChoice {
                key: "a".into(),
                label: "a.txt".into(),
                description: String::new(),
            },
            agent_adaptor_core::driver::DecisionChoice {
                key: "b".into(),
                label: "b.txt".into(),
                description: String::new(),
            },
        ];
    }
    ScriptedDriver::new(
        vec![
            s(StreamPayload::run_started()),
            s(StreamPayload::text_start("m1")),
            s(StreamPayload::text_content("m1", "I will list the files.")),
            s(StreamPayload::text_end("m1")),
            s(StreamPayload::tool_call_start(
                "call-1",
                "bash",
                Some(json!({"command": "ls"})),
            )),
            Step::Decide(req),
            s(StreamPayload::tool_call_end("call-1", None)),
            s(StreamPayload::tool_call_result(
                "call-1",
                Some(json!("a.txt\nb.txt")),
            )),
            s(StreamPayload::text_start("m2")),
            s(StreamPayload::text_content("m2", "There are two files.")),
            s(StreamPayload::text_end("m2")),
            s(StreamPayload::run_finished(None)),
        ],
        respond("There are two files."),
    )
}

/// Text, then a business failure reported by the agent.
pub fn error_script() -> ScriptedDriver {
    let failure = RunFailure::new(FailureCode::AgentError, "the model is overloaded");
    ScriptedDriver::new(
        vec![
            s(StreamPayload::run_started()),
            s(StreamPayload::text_start("m1")),
            s(StreamPayload::text_content("m1", "Partial answ")),
            s(StreamPayload::text_end("m1")),
            s(StreamPayload::run_error(failure.clone())),
        ],
        Ending::Respond(Box::new(Response {
            failure: Some(failure),
            exit_code: Some(1),
            provider: "scripted".into(),
            ..Default::default()
        })),
    )
}

/// Opens a message, sends a chunk, then the driver fails (the message is
/// left open).
pub fn crash_script() -> ScriptedDriver {
    ScriptedDriver::new(
        vec![
            s(StreamPayload::run_started()),
            s(StreamPayload::text_start("m1")),
            s(StreamPayload::text_content("m1", "Partial answ")),
        ],
        Ending::Fail("connection to the provider reset".into()),
    )
}

/// Opens a message, sends one chunk, then waits until cancelled.
pub fn hanging_script() -> ScriptedDriver {
    ScriptedDriver::new(
        vec![
            s(StreamPayload::run_started()),
            s(StreamPayload::text_start("m1")),
            s(StreamPayload::text_content("m1", "first chunk")),
            Step::WaitForCancel,
        ],
        respond("never"),
    )
}

/// `n` text chunks of `size` bytes, `gap` apart, then the end.
pub fn chunked_script(n: usize, size: usize, gap: Duration) -> ScriptedDriver {
    let mut steps = vec![
        s(StreamPayload::run_started()),
        s(StreamPayload::text_start("m1")),
    ];
    for i in 0..n {
        if !gap.is_zero() {
            steps.push(Step::Sleep(gap));
        }
        let mut chunk = format!("{i}:");
        chunk.push_str(&"x".repeat(size.saturating_sub(chunk.len())));
        steps.push(s(StreamPayload::text_content("m1", chunk)));
    }
    steps.push(s(StreamPayload::text_end("m1")));
    steps.push(s(StreamPayload::run_finished(None)));
    ScriptedDriver::new(steps, respond("chunks"))
}

/// `n` text chunks of `size` bytes as fast as possible, then the run waits
/// until it is cancelled.
pub fn flood_script(n: usize, size: usize) -> ScriptedDriver {
    let mut steps = vec![
        s(StreamPayload::run_started()),
        s(StreamPayload::text_start("m1")),
    ];
    let chunk = "y".repeat(size);
    for _ in 0..n {
        steps.push(s(StreamPayload::text_content("m1", chunk.clone())));
    }
    steps.push(Step::WaitForCancel);
    ScriptedDriver::new(steps, respond("never"))
}

/// One SSE event as read off the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub data: String,
}

impl SseEvent {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {}", self.data))
    }
}

/// Incremental SSE parser (LF framing, as we emit). Comments are counted.
#[derive(Default)]
pub struct SseParser {
    buf: String,
    pub comments: usize,
}

impl SseParser {
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buf.push_str(&String::from_utf8_lossy(chunk));
        let mut out = Vec::new();
        while let Some(end) = self.buf.find("\n\n") {
            let block: String = self.buf.drain(..end + 2).collect();
            let mut id = None;
            let mut data = Vec::new();
            let mut comment = false;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = Some(v.to_owned());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push(v.to_owned());
                } else if line.starts_with(':') {
                    comment = true;
                }
            }
            if data.is_empty() {
                if comment {
                    self.comments += 1;
                }
                continue;
            }
            out.push(SseEvent {
                id,
                data: data.join("\n"),
            });
        }
        out
    }
}

/// POST `body` (JSON) and read the whole SSE response.
pub async fn post_sse(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> (
    reqwest::StatusCode,
    reqwest::header::HeaderMap,
    Vec<SseEvent>,
    String,
) {
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = tokio::time::timeout(Duration::from_secs(30), req.send())
        .await
        .expect("response headers within 30 s")
        .expect("request sent");
    let status = resp.status();
    let headers = resp.headers().clone();
    if !status.is_success() {
        let text = resp.text().await.unwrap_or_default();
        return (status, headers, Vec::new(), text);
    }
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    let mut stream = resp.bytes_stream();
    let deadline = tokio::time::sleep(Duration::from_secs(30));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            chunk = stream.next() => match chunk {
                Some(Ok(b)) => events.extend(parser.push(&b)),
                Some(Err(e)) => panic!("SSE stream broke: {e}"),
                None => break,
            },
            () = &mut deadline => panic!("SSE stream did not end within 30 s; got {events:?}"),
        }
    }
    (status, headers, events, String::new())
}

/// A RunAgentInput with one user message.
pub fn run_input(thread: &str, run: &str, prompt: &str) -> Value {
    json!({
        "threadId": thread,
        "runId": run,
        "state": {},
        "messages": [{"id": format!("u-{run}"), "role": "user", "content": prompt}],
        "tools": [],
        "context": [],
        "forwardedProps": {}
    })
}

/// The `type`s of AG-UI events.
pub fn types(events: &[SseEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.json()["type"].as_str().unwrap_or("?").to_owned())
        .collect()
}
