//! The host-tool scenarios: a Rust closure defined with `Tool::define`
//! reaches the real CLI as the in-process SDK MCP server `agent-adaptor`
//! (`mcp_message` control requests), the mock model calls it, and the
//! closure's output is in the model's next request.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_adaptor_core::{Event, Phase, RunOptions, Runner, Tool, ToolError};
use agent_adaptor_driver::{CancellationToken, DecisionKind, ToolScope};
use agent_adaptor_testkit::mock::{Reply, Script};
use futures::StreamExt;
use serde_json::{Value, json};

use super::scenarios::{CANCEL_BOUND, watch_group};
use super::{Cli, Harness, RUN_TIMEOUT, Run, drain_with, result_text, tool_results_in};
use crate::group_watch::group_members;

/// The host tool's input, as the model sends it.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct LookupIn {
    /// The key to look up.
    key: String,
}

/// The host tool's output.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
struct LookupOut {
    /// What the key holds.
    value: String,
}

/// The inputs the handler was called with, in order.
type Calls = Arc<Mutex<Vec<LookupIn>>>;

/// `lookup`: records its decoded input and answers `value-of-<key>`.
fn lookup(calls: &Calls) -> Tool {
    let calls = calls.clone();
    Tool::define(
        "lookup",
        "Look a key up in the host's table.",
        move |input: LookupIn, _ctx| {
            let calls = calls.clone();
            async move {
                let value = format!("value-of-{}", input.key);
                calls.lock().unwrap().push(input);
                Ok::<_, ToolError>(LookupOut { value })
            }
        },
    )
}

/// A harness whose mock calls the CLI's `lookup` host tool with `arguments`
/// for `keyword`, then answers `DONE`.
async fn calling_lookup(cli: &'static Cli, keyword: &str, arguments: Value) -> Harness {
    let script = Script::new().on_prompt(
        keyword,
        vec![
            Reply::ToolCall {
                name: cli.host_lookup.into(),
                arguments,
            },
            Reply::Text(DONE.into()),
        ],
    );
    Harness::start(cli, script).await
}

/// The model's final answer after the tool.
const DONE: &str = "Looked it up.";

impl Run {
    /// The host tool calls that started: (id, args).
    fn host_calls(&self) -> Vec<(String, Option<Value>)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::ToolCall(c) if c.phase == Phase::Start && c.scope == ToolScope::Host => {
                    Some((c.id.as_str().to_owned(), c.args.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// The one host tool call of the run: its id, after checking its name
    /// and scope.
    fn one_host_call(&self, cli: &Cli) -> String {
        let calls = self.host_calls();
        assert_eq!(
            calls.len(),
            1,
            "{}: one ToolCall with ToolScope::Host\n{}",
            cli.recipe.name,
            self.describe()
        );
        let id = calls[0].0.clone();
        assert_eq!(
            self.tool_calls(),
            [(id.as_str(), "lookup")],
            "the bare name"
        );
        id
    }

    /// The tool result of `id` says it is an error, where the CLI keeps an
    /// MCP result's `isError` ([`Cli::mcp_error_flag`]).
    fn assert_tool_error(&self, cli: &Cli, id: &str) {
        let result = self.tool_result(id);
        assert_eq!(
            result["is_error"], cli.mcp_error_flag,
            "{}: {result}",
            cli.recipe.name
        );
    }

    /// The host-failure notices (`event=host_tool.error`): their `status`.
    fn host_failures(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Notice(n)
                    if n.metadata.get("event").map(String::as_str) == Some("host_tool.error") =>
                {
                    n.metadata.get("status").cloned()
                }
                _ => None,
            })
            .collect()
    }
}

/// The closure runs with the decoded input, its output is the tool result
/// in the model's next request, the events show the call as a host tool
/// with input and output, and the host is asked exactly once (by the
/// toolbox, under the run's host-tool policy; the CLI asks nobody).
pub async fn host_tool_round_trip(cli: &'static Cli) {
    const KEYWORD: &str = "HOSTLOOKUP";
    let h = calling_lookup(cli, KEYWORD, json!({"key": "k-42"})).await;
    let calls = Calls::default();
    let agent = h.agent(h.config(false));
    let mut approvals = Vec::new();
    let run = drain_with(
        &agent,
        &format!("{KEYWORD}: look k-42 up"),
        RunOptions::new().tool(lookup(&calls)),
        |event, _| {
            if let Event::ApprovalRequest(req) = event {
                approvals.push((req.kind, req.details.clone().unwrap_or_default()));
                req.approve().expect("answerable once");
            }
        },
    )
    .await;
    assert_eq!(run.ok("host tool").text, DONE);
    assert_eq!(
        run.transport(),
        "control",
        "host tools need the control protocol"
    );
    assert_eq!(
        *calls.lock().unwrap(),
        [LookupIn { key: "k-42".into() }],
        "{}: the closure ran once with the decoded input\n{}",
        cli.recipe.name,
        run.describe()
    );
    assert_eq!(approvals.len(), 1, "asked once: {approvals:?}");
    let (kind, details) = &approvals[0];
    assert_eq!(*kind, DecisionKind::Permission);
    assert_eq!(details["tool_name"], "lookup", "{details}");
    assert_eq!(details["input"], json!({"key": "k-42"}), "{details}");
    let id = run.one_host_call(cli);
    let args: Value = serde_json::from_str(&run.tool_args(&id)).expect("JSON arguments");
    assert_eq!(args, json!({"key": "k-42"}), "the event carries the input");
    let result = run.tool_result(&id);
    assert_eq!(result["is_error"], false, "{result}");
    assert!(
        result_text(result).contains("value-of-k-42"),
        "the event carries the output: {result}"
    );
    let back = tool_results_in(&h.request_after(KEYWORD, 1));
    assert!(
        back.iter().any(|t| t.contains("value-of-k-42")),
        "{}: the model's next request carries the output; it got {back:?}",
        cli.recipe.name
    );
}

/// Input that fails the tool's schema never reaches the handler: the model
/// reads the schema error, and the run goes on to its answer.
pub async fn host_tool_bad_input_is_the_models_error(cli: &'static Cli) {
    const KEYWORD: &str = "HOSTBADINPUT";
    let h = calling_lookup(cli, KEYWORD, json!({"key": 42})).await;
    let calls = Calls::default();
    let agent = h.agent(h.config(false));
    let run = drain_with(
        &agent,
        &format!("{KEYWORD}: look 42 up"),
        RunOptions::new().tool(lookup(&calls).trusted()),
        |_, _| {},
    )
    .await;
    assert_eq!(run.ok("bad input").text, DONE);
    assert!(
        calls.lock().unwrap().is_empty(),
        "the handler was not called"
    );
    let id = run.one_host_call(cli);
    run.assert_tool_error(cli, &id);
    let back = tool_results_in(&h.request_after(KEYWORD, 1));
    assert!(
        back.iter()
            .any(|t| t.contains("key") && t.contains("string")),
        "{}: the model reads the schema error; it got {back:?}",
        cli.recipe.name
    );
    assert!(
        run.host_failures().is_empty(),
        "the model's fault, not the host's"
    );
}

/// A handler that panics is a tool error the model reads; the host gets a
/// lifecycle notice and the run still completes.
pub async fn host_tool_panic_is_a_tool_error(cli: &'static Cli) {
    const KEYWORD: &str = "HOSTPANIC";
    let h = calling_lookup(cli, KEYWORD, json!({"key": "k-1"})).await;
    let tool = Tool::define(
        "lookup",
        "Look a key up in the host's table.",
        |input: LookupIn, _ctx| async move {
            if !input.key.is_empty() {
                panic!("the host table is on fire");
            }
            Ok::<_, ToolError>(LookupOut { value: input.key })
        },
    )
    .trusted();
    let agent = h.agent(h.config(false));
    let run = drain_with(
        &agent,
        &format!("{KEYWORD}: look k-1 up"),
        RunOptions::new().tool(tool),
        |_, _| {},
    )
    .await;
    assert_eq!(run.ok("panicking handler").text, DONE);
    let id = run.one_host_call(cli);
    run.assert_tool_error(cli, &id);
    assert_eq!(run.host_failures(), ["panicked"]);
    let back = tool_results_in(&h.request_after(KEYWORD, 1));
    assert!(
        !back.is_empty() && back.iter().all(|t| !t.contains("value-of")),
        "{}: the model reads a tool error; it got {back:?}",
        cli.recipe.name
    );
}

/// Cancelling the run while a slow handler runs fires the handler's
/// cancellation token and leaves no process of the CLI behind.
pub async fn cancel_stops_a_slow_host_tool(cli: &'static Cli) {
    const KEYWORD: &str = "HOSTSLOW";
    let h = calling_lookup(cli, KEYWORD, json!({"key": "k-9"})).await;
    let (started_tx, mut started_rx) = tokio::sync::mpsc::unbounded_channel::<CancellationToken>();
    let tool = Tool::define(
        "lookup",
        "Look a key up in the host's table.",
        move |input: LookupIn, ctx| {
            let started = started_tx.clone();
            async move {
                let _ = started.send(ctx.cancel.clone());
                // Slow: answers only when cancelled, or far past the test.
                tokio::select! {
                    () = ctx.cancel.cancelled() => {}
                    () = tokio::time::sleep(Duration::from_secs(600)) => {}
                }
                Ok::<_, ToolError>(LookupOut { value: input.key })
            }
        },
    )
    .trusted();
    let agent = h.agent(h.config(false));
    let mut stream = agent.stream_with(
        &format!("{KEYWORD}: look k-9 up"),
        RunOptions::new().tool(tool).timeout(RUN_TIMEOUT),
    );
    let mut events = Vec::new();
    let mut pid: Option<u32> = None;
    let mut handler_token = None;
    let mut watcher = None;
    let drained = tokio::time::timeout(RUN_TIMEOUT + Duration::from_secs(30), async {
        loop {
            tokio::select! {
                token = started_rx.recv(), if handler_token.is_none() => {
                    let now = Instant::now();
                    let pgid = pid.expect("the CLI was spawned before it called the tool");
                    assert!(group_members(pgid).contains(&pgid), "the CLI runs when the tool does");
                    watcher = Some(tokio::spawn(watch_group(pgid, now + CANCEL_BOUND)));
                    handler_token = token;
                    stream.cancel();
                }
                event = stream.next() => {
                    let Some(event) = event else { break };
                    if let Event::ProcessInfo(p) = &event {
                        pid = pid.or_else(|| p.metadata.get("pid").and_then(|s| s.parse().ok()));
                    }
                    events.push(event);
                }
            }
        }
        stream.result().await
    })
    .await
    .expect("the cancelled run ends");
    let token = handler_token.unwrap_or_else(|| {
        panic!(
            "{}: the handler never ran; events {:?}",
            cli.recipe.name,
            events.iter().map(|e| e.kind_name()).collect::<Vec<_>>()
        )
    });
    assert!(
        token.is_cancelled(),
        "the handler's ToolContext.cancel fired"
    );
    let err = drained.expect_err("a cancelled run fails");
    assert!(
        err.as_run_error().is_some(),
        "{}: a RunError: {err}",
        cli.recipe.name
    );
    let (left, _) = watcher
        .expect("the group is watched from the cancel")
        .await
        .expect("the watch ends");
    assert!(
        left.is_empty(),
        "{}: processes {left:?} of the CLI's group outlived the cancel",
        cli.recipe.name
    );
}

/// A thread's turns with the same host tools share one resident process:
/// the SDK MCP server declared when the process started serves each turn's
/// own toolbox, and each turn's call reaches its closure.
pub async fn host_tools_on_thread_turns(cli: &'static Cli) {
    const KEYWORD: &str = "HOSTTHREAD";
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![
            Reply::ToolCall {
                name: cli.host_lookup.into(),
                arguments: json!({"key": "turn-1"}),
            },
            Reply::Text("first done".into()),
            Reply::ToolCall {
                name: cli.host_lookup.into(),
                arguments: json!({"key": "turn-2"}),
            },
            Reply::Text("second done".into()),
        ],
    );
    let h = Harness::start(cli, script).await;
    let agent = agent_adaptor_core::Agent::builder(h.driver(h.config(false)))
        .thread_store(Arc::new(agent_adaptor_core::MemoryStore::new()))
        .build()
        .expect("an agent");
    let thread = agent.thread("real/host-tools");
    let calls = Calls::default();
    let mut pids = Vec::new();
    for (n, (prompt, answer)) in [
        (format!("{KEYWORD}: look turn-1 up"), "first done"),
        ("Now look turn-2 up.".to_owned(), "second done"),
    ]
    .into_iter()
    .enumerate()
    {
        let options = RunOptions::new().tool(lookup(&calls).trusted());
        let run = drain_with(&thread, &prompt, options, |_, _| {}).await;
        assert_eq!(run.ok(&format!("turn {}", n + 1)).text, answer);
        run.one_host_call(cli);
        pids.extend(run.spawns().into_iter().map(|(pid, _)| pid));
        if n == 1 {
            assert_eq!(
                run.reused(),
                pids.first().copied(),
                "{}: the second turn reused the process\n{}",
                cli.recipe.name,
                run.describe()
            );
        }
    }
    assert_eq!(pids.len(), 1, "two turns, one process");
    assert_eq!(
        *calls.lock().unwrap(),
        [
            LookupIn {
                key: "turn-1".into()
            },
            LookupIn {
                key: "turn-2".into()
            }
        ]
    );
    let back = tool_results_in(&h.request_after(KEYWORD, 3));
    assert!(
        back.iter().any(|t| t.contains("value-of-turn-2")),
        "{}: the second turn's output reached the model; it got {back:?}",
        cli.recipe.name
    );
}
