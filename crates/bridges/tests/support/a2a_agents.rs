//! Scripted agents behind the A2A server under test. One runner answers by
//! the prompt's first word, so a single server covers every scenario:
//!
//! | first word | run |
//! |---|---|
//! | `hello` | streams "Hello from agent-adaptor" in three chunks |
//! | `hang` | one chunk, then waits until cancelled |
//! | `approve` | asks a permission (`Allow Bash(ls)?`), then "listed 3 files" |
//! | `ask` | asks a question with choices red/blue, then "noted" |
//! | `structured` | answers `{"answer": 42}` with a valid structured output |
//! | `fail` | the driver fails ("scripted failure: boom") |
//! | `observe` | todos, a subagent with a child tool call, capabilities and an image ([`observations`]) |
//!
//! Every driver records its requests, so tests can prove nothing ran.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

#[path = "observations.rs"]
pub mod observations;

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_adaptor_bridges::a2a::{A2aServer, A2aServerBuilder, RunningServer};
use agent_adaptor_bridges::guard::Guard;
use agent_adaptor_bridges::http::HttpServer;
use agent_adaptor_core::scripted::{Ending, ScriptedDriver, Step};
use agent_adaptor_core::{Agent, RunOptions, RunStream, Runner};
use agent_adaptor_driver::{
    DecisionChoice, DecisionKind, DecisionRequest, RawStreams, Response, RunEvent, StreamPayload,
    StructuredOutput, StructuredOutputSource, TerminalPayload, TranscriptItem,
};
use serde_json::json;

/// The text steps of message `m1`: start, one content per chunk, end.
pub fn text_steps(chunks: &[&str]) -> Vec<Step> {
    let mut steps = vec![Step::Stream(StreamPayload::text_start("m1"))];
    for c in chunks {
        steps.push(Step::Stream(StreamPayload::text_content("m1", *c)));
    }
    steps.push(Step::Stream(StreamPayload::text_end("m1")));
    steps
}

/// A contract-abiding run: `run.started`, `body`, the transcript item of
/// `text`, `run.finished`; the response answers `text` (and `structured`
/// as a valid structured output, when given).
pub fn scripted(
    body: Vec<Step>,
    text: &str,
    structured: Option<serde_json::Value>,
) -> ScriptedDriver {
    let item = TranscriptItem::assistant(text);
    let mut steps = vec![Step::Stream(StreamPayload::run_started())];
    steps.extend(body);
    steps.push(Step::Emit(RunEvent::Item(item.clone().into())));
    steps.push(Step::Stream(StreamPayload::run_finished(None)));
    let terminal = json!({"type": "result", "result": text}).to_string();
    let response = Response {
        output: text.into(),
        raw: RawStreams {
            stdout: format!("{terminal}\n").into(),
            stderr: Default::default(),
            terminal: TerminalPayload::new("result", &terminal).ok(),
        },
        transcript: vec![item].into(),
        structured_output: structured.map(|value| StructuredOutput {
            format: "json_schema".into(),
            source: StructuredOutputSource::PromptValidate,
            raw_json: value.to_string(),
            value: Some(value),
            valid: true,
            validation_errors: vec![],
            schema_hash: String::new(),
        }),
        exit_code: Some(0),
        provider: "scripted".into(),
        ..Default::default()
    };
    ScriptedDriver::new(steps, Ending::Respond(Box::new(response)))
}

/// The permission request of the `approve` agent.
pub fn permission() -> DecisionRequest {
    let mut req = DecisionRequest::new(DecisionKind::Permission, "scripted.can_use_tool");
    req.prompt = "Allow Bash(ls)?".into();
    req.tool_call_id = "call-1".into();
    req.payload = Some(json!({"toolName": "Bash", "input": {"command": "ls"}}));
    req
}

fn question() -> DecisionRequest {
    let mut req = DecisionRequest::new(DecisionKind::Question, "scripted.ask");
    req.prompt = "Which colour?".into();
    req.choices = ["red", "blue"]
        .iter()
        .map(|k| DecisionChoice {
            key: (*k).into(),
            label: k.to_uppercase(),
            description: String::new(),
        })
        .collect();
    req
}

/// The runner of every scenario, and its drivers (for `recorded_requests`).
pub struct Scenarios {
    agents: BTreeMap<&'static str, (Agent, ScriptedDriver)>,
}

impl Scenarios {
    /// Every agent of the table above.
    pub fn new() -> Arc<Self> {
        let then = |mut first: Vec<Step>, more: Vec<Step>| {
            first.extend(more);
            first
        };
        let drivers = [
            (
                "hello",
                scripted(
                    text_steps(&["Hello", " from", " agent-adaptor"]),
                    "Hello from agent-adaptor",
                    None,
                ),
            ),
            (
                "hang",
                ScriptedDriver::new(
                    vec![
                        Step::Stream(StreamPayload::run_started()),
                        Step::Stream(StreamPayload::text_start("m1")),
                        Step::Stream(StreamPayload::text_content("m1", "working")),
                        Step::WaitForCancel,
                    ],
                    Ending::Fail("unreachable".into()),
                ),
            ),
            (
                "approve",
                scripted(
                    then(
                        vec![Step::Decide(permission())],
                        text_steps(&["listed 3 files"]),
                    ),
                    "listed 3 files",
                    None,
                ),
            ),
            (
                "ask",
                scripted(
                    then(vec![Step::Decide(question())], text_steps(&["noted"])),
                    "noted",
                    None,
                ),
            ),
            (
                "structured",
                scripted(
                    text_steps(&["{\"answer\": 42}"]),
                    "{\"answer\": 42}",
                    Some(json!({"answer": 42})),
                ),
            ),
            ("observe", observations::observation_script()),
            (
                "fail",
                ScriptedDriver::new(
                    vec![Step::Stream(StreamPayload::run_started())],
                    Ending::Fail("boom".into()),
                ),
            ),
        ];
        let agents = drivers
            .into_iter()
            .map(|(k, d)| (k, (Agent::new(d.clone()), d)))
            .collect();
        Arc::new(Scenarios { agents })
    }

    /// Requests every driver received.
    pub fn calls(&self) -> usize {
        self.agents
            .values()
            .map(|(_, d)| d.recorded_requests().len())
            .sum()
    }

    /// Requests the driver of `name` received.
    pub fn calls_of(&self, name: &str) -> usize {
        self.agents[name].1.recorded_requests().len()
    }

    /// The requests the driver of `name` received.
    pub fn requests_of(&self, name: &str) -> Vec<agent_adaptor_driver::Request> {
        self.agents[name].1.recorded_requests()
    }
}

impl Runner for Scenarios {
    fn stream_with(&self, prompt: &str, options: RunOptions) -> RunStream {
        let word = prompt.split_whitespace().next().unwrap_or("");
        let (agent, _) = self
            .agents
            .get(word)
            .unwrap_or_else(|| &self.agents["hello"]);
        agent.stream_with(prompt, options)
    }
}

/// A server over `scenarios`, approvals waiting without a deadline.
pub fn builder(scenarios: &Arc<Scenarios>) -> A2aServerBuilder {
    A2aServer::builder(scenarios.clone())
        .name("scenarios")
        .run_options(RunOptions::new().approval_timeout(None))
}

/// Serve `builder` on 127.0.0.1.
pub async fn serve(builder: A2aServerBuilder) -> RunningServer {
    builder
        .build()
        .serve_local()
        .await
        .expect("the server starts")
}

/// A server mounted behind a [`Guard`], the way `agent-adaptor serve`
/// mounts its A2A router (the card's URL comes from the request's Host).
pub struct GuardedServer {
    server: A2aServer,
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    join: tokio::task::JoinHandle<()>,
}

impl GuardedServer {
    /// The base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Close the A2A server (runs cancelled, streams ended) and stop
    /// serving; bounded.
    pub async fn shutdown(mut self) {
        self.server.close();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(std::time::Duration::from_secs(10), &mut self.join)
            .await
            .expect("the guarded server stops within 10 s")
            .expect("the guarded server task");
    }
}

impl Drop for GuardedServer {
    fn drop(&mut self) {
        self.server.close();
        self.join.abort();
    }
}

/// Serve `builder` on 127.0.0.1 behind `guard`.
pub async fn serve_guarded(builder: A2aServerBuilder, guard: Guard) -> GuardedServer {
    let server = builder.build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let http = HttpServer::new(listener, guard.layer(server.router()));
    let join = tokio::spawn(http.serve(async move {
        let _ = stopped.await;
    }));
    GuardedServer {
        server,
        url,
        stop: Some(stop),
        join,
    }
}
