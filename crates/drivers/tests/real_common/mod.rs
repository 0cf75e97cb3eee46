//! Shared by `real_claude.rs` and `real_codebuddy.rs`: the stream-json driver
//! running the real, pinned CLI (installed by `scripts/install-clis`) offline
//! against the testkit mock model server.
//!
//! Every scenario is one `async fn(&Cli)` in [`scenarios`]; a test file
//! describes its CLI in a [`Cli`] row and expands `real_cli_tests!`, which
//! makes one `#[tokio::test]` per scenario. What differs between the CLIs is
//! data in the row, never a branch in a scenario. This module holds the
//! harness: the mock, the scratch home, the driver configuration, and the
//! reading of a run's events.

mod equip;
mod host_tools;
#[allow(dead_code)] // Claude Code only: CodeBuddy has no TodoWrite
mod observe;
mod scenarios;

pub use equip::*;
pub use host_tools::*;
#[allow(unused_imports)]
pub use observe::*;
pub use scenarios::*;

use std::path::PathBuf;
use std::time::Duration;

use agent_adaptor_core::{
    Agent, Error, Event, Phase, ProcessKind, RunOptions, RunResult, RunStream, Runner,
};
use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_drivers::streamjson::{Config, StreamJsonDriver};
use agent_adaptor_testkit::clis::{CliRecipe, ScratchDir};
use agent_adaptor_testkit::mock::{MockServer, RecordedRequest, Script};
use futures::StreamExt;
use serde_json::{Value, json};

/// The core deadline of every run: a hang fails the test instead of blocking
/// CI (a cold CodeBuddy start alone takes ~4 s on a small machine).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The outer bound of a drain, past [`RUN_TIMEOUT`] so that the core deadline
/// fires first and the failure carries the partial result.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(150);

/// One CLI of the stream-json family, as these tests drive it.
pub struct Cli {
    /// The offline recipe: binary, environment, directories.
    pub recipe: CliRecipe,
    /// The family's default configuration.
    pub config: fn() -> Config,
    /// The family's driver constructor.
    pub driver: fn(Config) -> StreamJsonDriver,
    /// `Config::model` (CodeBuddy takes none: it sends `default-model`).
    pub model: Option<&'static str>,
    /// Environment on top of the recipe's (retry switches).
    pub env: &'static [(&'static str, &'static str)],
    /// The shell tool the CLI declares to the model.
    pub shell_tool: &'static str,
    /// Extra arguments that let the one-shot transport run the read-only
    /// command of [`scenarios::runs_a_tool_and_returns_its_result`] without a prompt.
    pub allow_read_only: &'static [&'static str],
    /// The CLI's own text the model gets for a tool call the host denied,
    /// when the CLI does not forward the host's reason (`None`: it does).
    pub fixed_denial_text: Option<&'static str>,
    /// Environment that makes the CLI list MCP tools in the request's
    /// `tools` rather than defer them behind its tool search.
    pub load_mcp_tools: &'static [(&'static str, &'static str)],
    /// The CLI's name of the `lookup` tool of the MCP server `aa-test`.
    pub mcp_lookup: &'static str,
    /// The CLI's name of the host tool `lookup` (the SDK MCP server
    /// `agent-adaptor`).
    pub host_lookup: &'static str,
    /// Whether the CLI's `tool_result` keeps an MCP tool result's `isError`
    /// (CodeBuddy 2.117 reports every MCP result with `is_error: false`,
    /// even a JSON-RPC error; the model still reads the error text).
    pub mcp_error_flag: bool,
    /// The CLI's user-scope MCP configuration, relative to the scratch home
    /// (inside the configuration home the recipe points the CLI at).
    pub user_mcp_file: &'static str,
}

/// One `#[tokio::test]` per scenario of [`scenarios`], for the [`Cli`] named
/// by the argument (a `static`).
macro_rules! real_cli_tests {
    ($cli:path) => {
        real_cli_tests!(@cases $cli;
            streams_token_level_text,
            runs_a_tool_and_returns_its_result,
            approval_approved_runs_the_tool,
            approval_denied_blocks_the_tool,
            resumes_the_session,
            http_400_is_a_run_error_with_the_providers_message,
            cancel_mid_stream_kills_the_process_group,
            conformance_one_shot,
            conformance_control,
            thread_turns_share_one_process,
            policy_reject_continue_lets_the_model_go_on,
            policy_reject_abort_fails_the_run,
            policy_auto_deny_asks_nobody,
            instructions_reach_the_system_prompt,
            instructions_of_200_kb_still_launch,
            mcp_stdio_tool_round_trip,
            mcp_http_bearer_token_from_env,
            mcp_config_of_200_kb_still_launches,
            mcp_strict_loads_only_the_runs_servers,
            profiles_leave_the_users_home_untouched,
            skills_are_offered_to_the_model,
            a_resumed_turn_gets_its_own_instructions,
            a_thread_turn_with_other_instructions_gets_a_fresh_process,
            host_tool_round_trip,
            host_tool_bad_input_is_the_models_error,
            host_tool_panic_is_a_tool_error,
            cancel_stops_a_slow_host_tool,
            host_tools_on_thread_turns,
        );
    };
    (@cases $cli:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                real_common::$case(&$cli).await;
            }
        )*
    };
}

/// A mock server with `script`, a scratch home prepared for the CLI, and
/// driver configurations pointing at both.
pub struct Harness {
    cli: &'static Cli,
    server: MockServer,
    home: ScratchDir,
    binary: PathBuf,
    env: Vec<(String, String)>,
}

impl Harness {
    async fn start(cli: &'static Cli, script: Script) -> Harness {
        let server = MockServer::start(script).await.expect("start the mock");
        let home = ScratchDir::new(cli.recipe.name).expect("a scratch home");
        let binary = cli.recipe.binary().unwrap_or_else(|e| panic!("{e}"));
        let env = cli
            .recipe
            .prepare(&server.base_url(), home.path())
            .unwrap_or_else(|e| panic!("{e}"));
        Harness {
            cli,
            server,
            home,
            binary,
            env,
        }
    }

    /// `<home>/work`, the CLI's working directory.
    fn workspace(&self) -> PathBuf {
        self.home.path().join("work")
    }

    /// The driver configuration: the real binary, the recipe's environment
    /// and nothing inherited, the recipe's model, the control transport when
    /// `host_approvals`.
    fn config(&self, host_approvals: bool) -> Config {
        let mut cfg = (self.cli.config)();
        cfg.command = self.binary.clone();
        cfg.env = self
            .env
            .iter()
            .cloned()
            .chain(
                self.cli
                    .env
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
            )
            .collect();
        cfg.env_policy = EnvPolicy::only(["PATH", "USER"]);
        cfg.model = self.cli.model.map(str::to_owned);
        cfg.cwd = Some(self.workspace());
        cfg.host_approvals = host_approvals;
        cfg
    }

    fn driver(&self, cfg: Config) -> StreamJsonDriver {
        (self.cli.driver)(cfg)
    }

    fn agent(&self, cfg: Config) -> Agent {
        Agent::new(self.driver(cfg))
    }

    /// The model requests (on the recipe's path) of the conversation whose
    /// first user message holds `keyword`, in order.
    fn model_requests(&self, keyword: &str) -> Vec<RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path == self.cli.recipe.request_path)
            .filter(|r| {
                r.conversation()
                    .is_some_and(|c| c.first_user_text.contains(keyword))
            })
            .collect()
    }

    /// The first model request of `keyword`'s conversation that already holds
    /// `turns` assistant turns.
    fn request_after(&self, keyword: &str, turns: usize) -> RecordedRequest {
        let requests = self.model_requests(keyword);
        requests
            .iter()
            .find(|r| r.conversation().is_some_and(|c| c.assistant_turns == turns))
            .cloned()
            .unwrap_or_else(|| {
                panic!(
                    "{}: no request with {turns} assistant turn(s) for {keyword}; saw {}",
                    self.cli.recipe.name,
                    self.describe_requests()
                )
            })
    }

    fn describe_requests(&self) -> String {
        let seen: Vec<String> = self
            .server
            .requests()
            .iter()
            .map(|r| {
                let turns = r.conversation().map(|c| c.assistant_turns);
                format!("{} {} (assistant turns {turns:?})", r.method, r.path)
            })
            .collect();
        format!("{seen:?}")
    }
}

/// Everything one run through core produced.
struct Run {
    events: Vec<Event>,
    outcome: Result<RunResult, Error>,
}

impl Run {
    /// The result of a run that must have succeeded.
    fn ok(&self, what: &str) -> &RunResult {
        match &self.outcome {
            Ok(result) => result,
            Err(e) => panic!("{what}: the run failed: {e}\n{}", self.describe()),
        }
    }

    /// The processes the run spawned: (pid, transport).
    fn spawns(&self) -> Vec<(u32, String)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::ProcessInfo(p) if p.kind == ProcessKind::Spawn => Some((
                    p.metadata.get("pid")?.parse().ok()?,
                    p.metadata.get("transport").cloned().unwrap_or_default(),
                )),
                _ => None,
            })
            .collect()
    }

    /// The pid of the resident process the run reused (its lifecycle notice).
    fn reused(&self) -> Option<u32> {
        self.events.iter().find_map(|e| match e {
            Event::Notice(n)
                if n.metadata.get("resident").map(String::as_str) == Some("reused") =>
            {
                n.metadata.get("pid")?.parse().ok()
            }
            _ => None,
        })
    }

    /// The transport the driver reported in its spawn event (`one_shot`,
    /// `control`).
    fn transport(&self) -> &str {
        self.events
            .iter()
            .find_map(|e| match e {
                Event::ProcessInfo(p) if p.kind == ProcessKind::Spawn => {
                    p.metadata.get("transport").map(String::as_str)
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("no spawn event\n{}", self.describe()))
    }

    /// The content text deltas, in order.
    fn text_deltas(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta(d) if d.phase == Phase::Content => Some(d.text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool call starts: (id, name).
    fn tool_calls(&self) -> Vec<(&str, &str)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::ToolCall(c) if c.phase == Phase::Start => {
                    Some((c.id.as_str(), c.name.as_str()))
                }
                _ => None,
            })
            .collect()
    }

    /// The complete arguments of tool call `id` as seen on the stream (the
    /// arguments at start, or the concatenated argument deltas).
    fn tool_args(&self, id: &str) -> String {
        let mut text = String::new();
        for e in &self.events {
            if let Event::ToolCall(c) = e
                && c.id == id
            {
                if let Some(args) = &c.args {
                    text.push_str(&args.to_string());
                }
                text.push_str(&c.args_delta);
            }
        }
        text
    }

    /// The standalone result of tool call `id`.
    fn tool_result(&self, id: &str) -> &Value {
        self.events
            .iter()
            .find_map(|e| match e {
                Event::ToolResult(r) if r.id == id => r.result.as_ref(),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no ToolResult for {id}\n{}", self.describe()))
    }

    fn describe(&self) -> String {
        let kinds: Vec<String> = self
            .events
            .iter()
            .map(|e| e.kind_name().into_owned())
            .collect();
        let result = match &self.outcome {
            Ok(r) => Some(r),
            Err(e) => e.as_run_error().and_then(|r| r.result.as_deref()),
        };
        let (stdout, stderr) = result.map_or_else(Default::default, |r| {
            (
                r.raw().stdout.to_string_lossy().unwrap_or_default(),
                r.raw().stderr.to_string_lossy().unwrap_or_default(),
            )
        });
        format!(
            "events: {kinds:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            tail(&stdout, 6000),
            tail(&stderr, 3000)
        )
    }
}

fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// Start `prompt` on `agent` under [`RUN_TIMEOUT`] and drain it, calling
/// `on_event` for every event (it may answer approvals or cancel).
async fn drain(agent: &Agent, prompt: &str, on_event: impl FnMut(&Event, &RunStream)) -> Run {
    drain_with(agent, prompt, RunOptions::new(), on_event).await
}

/// [`drain`] on any runner (an agent or a thread), with `options` (the
/// timeout is always [`RUN_TIMEOUT`]).
async fn drain_with(
    runner: &impl Runner,
    prompt: &str,
    options: RunOptions,
    mut on_event: impl FnMut(&Event, &RunStream),
) -> Run {
    let mut stream = runner.stream_with(prompt, options.timeout(RUN_TIMEOUT));
    let collect = async {
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            on_event(&event, &stream);
            events.push(event);
        }
        let outcome = stream.result().await;
        Run { events, outcome }
    };
    tokio::time::timeout(DRAIN_TIMEOUT, collect)
        .await
        .unwrap_or_else(|_| panic!("the run did not end within {DRAIN_TIMEOUT:?}"))
}

/// The text of every tool result a model request carries back (Anthropic
/// `tool_result` blocks, Chat Completions `role: tool` messages).
fn tool_results_in(request: &RecordedRequest) -> Vec<String> {
    fn text(content: &Value) -> String {
        match content {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts.iter().map(text).collect::<Vec<_>>().join("\n"),
            Value::Object(o) => o.get("text").map_or_else(|| content.to_string(), text),
            other => other.to_string(),
        }
    }
    fn walk(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(o) => {
                if o.get("type") == Some(&json!("tool_result"))
                    || o.get("role") == Some(&json!("tool"))
                {
                    out.push(o.get("content").map(text).unwrap_or_default());
                }
                o.values().for_each(|v| walk(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&request.json().unwrap_or_default(), &mut out);
    out
}

/// The text of a `ToolResult` event's `{"content", "is_error"}` payload.
fn result_text(result: &Value) -> String {
    match &result["content"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
