//! Shared by `real_gemini.rs` and `real_gemini_equip.rs`: the Gemini CLI
//! driver running the real, pinned `gemini` (installed by
//! `scripts/install-clis`) offline against the testkit mock model server.
//! This module holds the harness (the mock, the scratch home, the driver
//! configuration), running and draining a run, and reading the model
//! requests the CLI sent.
#![allow(dead_code)] // each test binary uses a part

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_adaptor_core::{Agent, Event, Phase, RunOptions, RunResult, RunStream, Runner, ToolCall};
use agent_adaptor_driver::{Request, SessionContext, SessionState};
use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_drivers::gemini::{self, ApprovalMode};
use agent_adaptor_testkit::clis::{GEMINI, ScratchDir};
use agent_adaptor_testkit::mock::{MockServer, RecordedRequest, Reply, Script};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::jsonl_common::Run;

/// The core deadline of a run (a cold Gemini start takes 2–4 s).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The mock, a scratch home prepared by the recipe, and the driver
/// configuration that points the real CLI at both.
pub struct Harness {
    /// The mock model server the CLI talks to.
    pub server: MockServer,
    /// The scratch home (`~`) of the runs.
    pub home: ScratchDir,
    /// The `~/.gemini/settings.json` the harness wrote.
    pub settings: Value,
    binary: PathBuf,
    env: Vec<(String, String)>,
}

impl Harness {
    /// Start the mock with `script` and prepare a scratch home: the
    /// recipe's settings plus one attempt per request (Gemini retries
    /// 429/5xx with 5 s+ backoff otherwise).
    pub async fn start(script: Script) -> Harness {
        let server = MockServer::start(script).await.expect("start the mock");
        let home = ScratchDir::new("gemini-real").expect("a scratch home");
        let binary = GEMINI.binary().unwrap_or_else(|e| panic!("{e}"));
        let env = GEMINI
            .prepare(&server.base_url(), home.path())
            .unwrap_or_else(|e| panic!("{e}"));
        let path = home.path().join(".gemini/settings.json");
        let mut settings: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        settings["general"]["maxAttempts"] = json!(1);
        std::fs::write(&path, settings.to_string()).unwrap();
        Harness {
            server,
            home,
            settings,
            binary,
            env,
        }
    }

    /// The real binary the runs start.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// The recipe's environment (the mock's URL, the dummy key, the home).
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// The working directory of the runs.
    pub fn workspace(&self) -> PathBuf {
        self.home.path().join("work")
    }

    /// The native `~/.gemini` of the runs.
    pub fn native(&self) -> PathBuf {
        self.home.path().join(".gemini")
    }

    /// The real binary (`bundle/gemini.js` is executable), the recipe's
    /// environment and nothing inherited but `PATH` & co., its model.
    pub fn config(&self) -> gemini::Config {
        gemini::Config {
            command: self.binary.clone(),
            model: Some(GEMINI.model.into()),
            env: self.env.iter().cloned().collect(),
            env_policy: EnvPolicy::only(["PATH", "USER"]),
            cwd: Some(self.workspace()),
            ..Default::default()
        }
    }

    /// [`Harness::config`] under `--yolo`.
    pub fn yolo(&self) -> gemini::Config {
        gemini::Config {
            approval_mode: ApprovalMode::Yolo,
            ..self.config()
        }
    }

    /// An agent of the Gemini driver configured by `cfg`.
    pub fn agent(&self, cfg: gemini::Config) -> Agent {
        Agent::new(gemini::driver(cfg))
    }

    /// Run `prompt` with `options` on a driver configured by `cfg` and
    /// drain it.
    pub async fn run(&self, cfg: gemini::Config, prompt: &str, options: RunOptions) -> Run {
        drain_with(&self.agent(cfg), prompt, options, |_, _| {}).await
    }

    /// The model requests of the conversation whose first user text holds
    /// `keyword`, in order.
    pub fn model_requests(&self, keyword: &str) -> Vec<RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path == GEMINI.request_path)
            .filter(|r| {
                r.conversation()
                    .is_some_and(|c| c.first_user_text.contains(keyword))
            })
            .collect()
    }
}

/// A script answering the prompt holding `keyword` with `text`.
pub fn answers(keyword: &str, text: &str) -> Script {
    Script::new().on_prompt(keyword, vec![Reply::Text(text.into())])
}

/// A script answering the prompt holding `keyword` with a call of `tool`
/// with `arguments`, then (after the tool's result) with `text`.
pub fn calls_then_answers(keyword: &str, tool: &str, arguments: Value, text: &str) -> Script {
    Script::new().on_prompt(
        keyword,
        vec![
            Reply::ToolCall {
                name: tool.into(),
                arguments,
            },
            Reply::Text(text.into()),
        ],
    )
}

/// Run `prompt` under [`RUN_TIMEOUT`] and drain it.
pub async fn drain(agent: &Agent, prompt: &str, on_event: impl FnMut(&Event, &RunStream)) -> Run {
    drain_with(agent, prompt, RunOptions::new(), on_event).await
}

/// Run `prompt` with `options` under [`RUN_TIMEOUT`] and drain it, calling
/// `on_event` on every event (it may cancel).
pub async fn drain_with(
    agent: &impl Runner,
    prompt: &str,
    options: RunOptions,
    mut on_event: impl FnMut(&Event, &RunStream),
) -> Run {
    let mut stream = agent.stream_with(prompt, options.timeout(RUN_TIMEOUT));
    let collect = async {
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            on_event(&event, &stream);
            events.push(event);
        }
        let outcome = stream.result().await;
        Run { events, outcome }
    };
    tokio::time::timeout(RUN_TIMEOUT + Duration::from_secs(30), collect)
        .await
        .expect("the run ended")
}

/// The result of a run that must have succeeded (else a panic with the
/// CLI's stderr).
pub fn ok(run: &Run) -> &RunResult {
    match &run.outcome {
        Ok(r) => r,
        Err(e) => {
            let stderr = e
                .as_run_error()
                .and_then(|r| r.result.as_ref())
                .map(|r| r.raw().stderr.to_string_lossy().unwrap_or_default())
                .unwrap_or_default();
            panic!("the run failed: {e}\n--- stderr ---\n{stderr}")
        }
    }
}

/// The session state a successful run checkpointed.
pub fn session_state(run: &Run) -> SessionState {
    ok(run).checkpoint().unwrap().state.clone().unwrap()
}

/// A driver request resuming the session `state` with `prompt`.
pub fn resume_request(prompt: &str, state: SessionState) -> Request {
    let mut request = Request::new("run_00000000000000r2", prompt);
    request.session = Some(SessionContext {
        state: Some(state),
        ..Default::default()
    });
    request
}

/// The content text deltas of a run.
pub fn text_deltas(run: &Run) -> Vec<&str> {
    run.events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta(d) if d.phase == Phase::Content => Some(d.text.as_str()),
            _ => None,
        })
        .collect()
}

/// The run's first started tool call that `pred` accepts.
pub fn started_tool_call(run: &Run, pred: impl Fn(&ToolCall) -> bool) -> &ToolCall {
    run.events
        .iter()
        .find_map(|e| match e {
            Event::ToolCall(c) if c.phase == Phase::Start && pred(c) => Some(c),
            _ => None,
        })
        .expect("a started ToolCall")
}

/// The function names a Gemini request declares.
pub fn declared_tools(request: &RecordedRequest) -> Vec<String> {
    let body = request.json().unwrap_or_default();
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
        .filter_map(|f| f["name"].as_str().map(str::to_owned))
        .collect()
}

/// The `functionResponse` parts of a Gemini request.
pub fn function_responses(request: &RecordedRequest) -> Vec<Value> {
    let body = request.json().unwrap_or_default();
    body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["parts"].as_array().into_iter().flatten())
        .filter_map(|p| p.get("functionResponse").cloned())
        .collect()
}

/// The text of a request's system instruction.
pub fn system_text(request: &RecordedRequest) -> String {
    let body = request.json().unwrap_or_default();
    body["systemInstruction"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

/// The JSON of a request's `contents` (the conversation).
pub fn contents_text(request: &RecordedRequest) -> String {
    request.json().unwrap_or_default()["contents"].to_string()
}

/// Whether a request's raw body holds `needle`.
pub fn body_contains(request: &RecordedRequest, needle: &str) -> bool {
    String::from_utf8_lossy(&request.body).contains(needle)
}

/// Every file under `dir` (relative path → content).
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    out
}
