//! Host tools on the real, pinned `codex app-server`, offline against the
//! testkit mock model: the run's tools are the thread's dynamic tools
//! (`thread/start.dynamicTools`, with the experimental API opted into), the
//! mock model calls one, the app-server asks the driver (`item/tool/call`)
//! and the run's toolbox answers — the typed handler runs with the decoded
//! input, its output is the `function_call_output` of the model's next
//! request, and the events show the call in the host scope with its input
//! and output. Input that fails the schema and a call the host (or the
//! policy) denies reach the model as errors without running the handler;
//! cancelling the run stops a handler in flight; a resumed thread keeps its
//! tools (each turn served by its own handler), and a turn with other tools
//! is refused.
//! Every app-server message both ways validates against the binary's schema.
#![cfg(feature = "real-clis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod codex_support;

use std::sync::{Arc, Mutex};

use agent_adaptor_core::policy::{ApprovalMode, Policy};
use agent_adaptor_core::{
    Agent, Error, Event, MemoryStore, RunOptions, RunResult, Runner, Tool, ToolScope,
};
use agent_adaptor_drivers::codex::{self, Config, Transport};
use agent_adaptor_testkit::mock::{RecordedRequest, Reply, Script};
use codex_support::harness::{Harness, RUN_TIMEOUT, check_schema};
use futures::StreamExt as _;
use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    order: String,
}

#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
struct Order {
    order: String,
    status: String,
}

/// `lookup`: records every input it runs with, answers `shipped`.
fn lookup(seen: &Arc<Mutex<Vec<Lookup>>>) -> Tool {
    let seen = seen.clone();
    Tool::define(
        "lookup",
        "The status of an order.",
        move |input: Lookup, _ctx| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(input.clone());
                Ok(Order {
                    order: input.order,
                    status: "shipped".into(),
                })
            }
        },
    )
}

/// The mock calls `lookup` with `arguments`, then answers `Done.`.
fn script(keyword: &str, arguments: Value) -> Script {
    Script::new().on_prompt(
        keyword,
        vec![
            Reply::ToolCall {
                name: "lookup".into(),
                arguments,
            },
            Reply::Text("Done.".into()),
        ],
    )
}

/// What the run answered the model's latest call: the last
/// `function_call_output` of the request that follows it.
fn function_output(next: &RecordedRequest) -> String {
    let body = next.json().unwrap();
    let item = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|i| i["type"] == "function_call_output")
        .unwrap_or_else(|| panic!("no function_call_output in {body}"))
        .clone();
    item["output"].as_str().unwrap_or_default().to_owned()
}

/// Stream `prompt` with `options` to its end: the events, the approvals it
/// asked (answered with `approve`), the outcome.
async fn stream(
    agent: &impl Runner,
    prompt: &str,
    options: RunOptions,
    approve: Option<bool>,
) -> (Vec<Event>, Vec<String>, Result<RunResult, Error>) {
    let mut s = agent.stream_with(prompt, options.timeout(RUN_TIMEOUT));
    let (mut events, mut asked) = (Vec::new(), Vec::new());
    while let Some(ev) = s.next().await {
        if let Event::ApprovalRequest(req) = &ev {
            asked.push(req.title.clone());
            match approve {
                Some(true) => req.approve().unwrap(),
                Some(false) => req.deny("not this order").unwrap(),
                None => panic!("nobody should be asked: {req:?}"),
            }
        }
        events.push(ev);
    }
    let outcome = s.result().await;
    (events, asked, outcome)
}

/// The host tool calls the events show: (name, args) at the start, the
/// result at the end.
fn host_calls(events: &[Event]) -> (Vec<(String, Option<Value>)>, Vec<Value>) {
    let mut starts = Vec::new();
    let mut results = Vec::new();
    for ev in events {
        match ev {
            Event::ToolCall(c) if c.scope == ToolScope::Host && !c.name.is_empty() => {
                starts.push((c.name.clone(), c.args.clone()));
            }
            Event::ToolCall(c) if c.scope == ToolScope::Host => {
                results.extend(c.result.clone());
            }
            Event::ToolResult(r) => results.extend(r.result.clone()),
            _ => {}
        }
    }
    (starts, results)
}

fn frames(cfg: &Config, method: &str) -> Vec<Value> {
    Harness::stdin_log(cfg)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|f| f["method"] == method)
        .collect()
}

fn stdout(result: &RunResult) -> String {
    String::from_utf8(result.raw().stdout.to_vec().unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_tool_runs_and_its_output_reaches_the_model() {
    let h = Harness::start(script("HOSTTOOL", json!({"order": "A-17"}))).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let cfg = h.config(Transport::AppServer);
    let agent = Agent::new(codex::driver(cfg.clone()));
    let options = RunOptions::new().tool(lookup(&seen));
    let (events, asked, outcome) = stream(&agent, "HOSTTOOL go", options, Some(true)).await;
    let result = outcome.unwrap();
    assert_eq!(result.text, "Done.");
    // Codex asks nobody about a dynamic tool: the toolbox asked the host.
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("lookup"), "{asked:?}");
    assert_eq!(
        *seen.lock().unwrap(),
        [Lookup {
            order: "A-17".into()
        }]
    );
    let sent = h.requests("HOSTTOOL");
    assert_eq!(sent.len(), 2);
    let output: Value = serde_json::from_str(&function_output(&sent[1])).unwrap();
    assert_eq!(output, json!({"order": "A-17", "status": "shipped"}));
    // The model was offered the tool with its schema.
    let offered = sent[0].json().unwrap()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "lookup")
        .cloned()
        .expect("lookup offered");
    assert_eq!(offered["description"], "The status of an order.");
    assert_eq!(
        offered["parameters"]["properties"]["order"]["type"],
        "string"
    );
    // The events: one host tool call with its input and output.
    let (starts, results) = host_calls(&events);
    assert_eq!(
        starts,
        [("lookup".to_owned(), Some(json!({"order": "A-17"})))]
    );
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(
        results[0]["output"],
        json!({"order": "A-17", "status": "shipped"})
    );
    assert_eq!(results[0]["host_status"], "ok");
    // The handshake opted into the experimental API and declared the tool.
    assert_eq!(
        frames(&cfg, "initialize")[0]["params"]["capabilities"]["experimentalApi"],
        true
    );
    let declared = &frames(&cfg, "thread/start")[0]["params"]["dynamicTools"];
    assert_eq!(declared[0]["name"], "lookup");
    assert_eq!(declared[0]["type"], "function");
    check_schema(&cfg, &stdout(&result));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_run_with_host_tools_goes_to_the_app_server() {
    // `Auto` sends a non-streaming run to exec, but host tools go where
    // `Auto`'s channel is: a run with tools goes to the app-server.
    let h = Harness::start(script("AUTOTOOL", json!({"order": "B-2"}))).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let cfg = h.config(Transport::Auto);
    let agent = Agent::new(codex::driver(cfg.clone()));
    let result = agent
        .run_with(
            "AUTOTOOL go",
            RunOptions::new()
                .tool(lookup(&seen).trusted())
                .timeout(RUN_TIMEOUT),
        )
        .await
        .unwrap();
    assert_eq!(result.text, "Done.");
    assert_eq!(seen.lock().unwrap().len(), 1);
    let sent = h.requests("AUTOTOOL");
    assert!(function_output(&sent[1]).contains("shipped"));
    assert_eq!(
        frames(&cfg, "thread/start").len(),
        1,
        "the app-server ran it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_failing_the_schema_reaches_the_model_as_an_error() {
    let h = Harness::start(script("BADINPUT", json!({"order": 17}))).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let cfg = h.config(Transport::AppServer);
    let agent = Agent::new(codex::driver(cfg.clone()));
    let options = RunOptions::new().tool(lookup(&seen));
    // Checked before anybody is asked: no approval either.
    let (events, asked, outcome) = stream(&agent, "BADINPUT go", options, None).await;
    let result = outcome.unwrap();
    assert_eq!(result.text, "Done.", "the turn went on");
    assert!(asked.is_empty());
    assert!(seen.lock().unwrap().is_empty(), "the handler did not run");
    let sent = h.requests("BADINPUT");
    let output = function_output(&sent[1]);
    assert!(output.starts_with("invalid input for lookup"), "{output}");
    let (starts, results) = host_calls(&events);
    assert_eq!(starts, [("lookup".to_owned(), Some(json!({"order": 17})))]);
    assert_eq!(results[0]["host_status"], "invalid_input");
    assert_eq!(results[0]["success"], false);
    check_schema(&cfg, &stdout(&result));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_host_tool_does_not_run_and_the_model_hears_why() {
    let h = Harness::start(
        Script::new()
            .on_prompt(
                "DENYPOLICY",
                vec![
                    Reply::ToolCall {
                        name: "lookup".into(),
                        arguments: json!({"order": "C-3"}),
                    },
                    Reply::Text("Denied.".into()),
                ],
            )
            .on_prompt(
                "DENYHOST",
                vec![
                    Reply::ToolCall {
                        name: "lookup".into(),
                        arguments: json!({"order": "C-4"}),
                    },
                    Reply::Text("Denied.".into()),
                ],
            ),
    )
    .await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let cfg = h.config(Transport::AppServer);
    let agent = Agent::new(codex::driver(cfg.clone()));

    // The policy denies every permission: nobody is asked.
    let options = RunOptions::new()
        .tool(lookup(&seen))
        .policy(Policy::INHERIT.permission(ApprovalMode::AutoDeny));
    let (events, asked, outcome) = stream(&agent, "DENYPOLICY go", options, None).await;
    let result = outcome.unwrap();
    assert_eq!(result.text, "Denied.");
    assert!(asked.is_empty());
    let output = function_output(&h.requests("DENYPOLICY")[1]);
    assert!(output.starts_with("denied"), "{output}");
    assert_eq!(host_calls(&events).1[0]["host_status"], "denied");

    // The host is asked and says no.
    let options = RunOptions::new().tool(lookup(&seen));
    let (events, asked, outcome) = stream(&agent, "DENYHOST go", options, Some(false)).await;
    assert_eq!(outcome.unwrap().text, "Denied.");
    assert_eq!(asked.len(), 1, "{asked:?}");
    let output = function_output(&h.requests("DENYHOST")[1]);
    assert_eq!(output, "denied: not this order");
    assert_eq!(host_calls(&events).1[0]["host_status"], "denied");

    assert!(seen.lock().unwrap().is_empty(), "the handler never ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_keeps_its_tools_and_each_turn_serves_them_with_its_own() {
    // Turn 1 starts the thread with `lookup`; turn 2 (the resident server,
    // a bare turn/start) is served by turn 2's handler; turn 3 with other
    // tools is refused before anything runs.
    let h = Harness::start(Script::new().on_prompt(
        "KEEPTOOLS",
        vec![
            Reply::ToolCall {
                name: "lookup".into(),
                arguments: json!({"order": "D-1"}),
            },
            Reply::Text("First.".into()),
            Reply::ToolCall {
                name: "lookup".into(),
                arguments: json!({"order": "D-2"}),
            },
            Reply::Text("Second.".into()),
        ],
    ))
    .await;
    let cfg = h.config(Transport::AppServer);
    let agent = Agent::builder(codex::driver(cfg.clone()))
        .thread_store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    let thread = agent.thread("real/codex-host-tools");
    let first = Arc::new(Mutex::new(Vec::new()));
    let second = Arc::new(Mutex::new(Vec::new()));
    let r1 = thread
        .run_with(
            "KEEPTOOLS go",
            RunOptions::new()
                .tool(lookup(&first).trusted())
                .timeout(RUN_TIMEOUT),
        )
        .await
        .unwrap();
    assert_eq!(r1.text, "First.");
    let r2 = thread
        .run_with(
            "and again",
            RunOptions::new()
                .tool(lookup(&second).trusted())
                .timeout(RUN_TIMEOUT),
        )
        .await
        .unwrap();
    assert_eq!(r2.text, "Second.");
    assert_eq!(first.lock().unwrap().len(), 1);
    assert_eq!(
        *second.lock().unwrap(),
        [Lookup {
            order: "D-2".into()
        }],
        "turn 2's own handler served turn 2"
    );
    assert_eq!(frames(&cfg, "thread/start").len(), 1, "one thread start");
    let sent = h.requests("KEEPTOOLS");
    assert!(function_output(&sent[3]).contains("D-2"));

    let other = Tool::define("ship", "Ship an order.", |_: Lookup, _ctx| async move {
        Ok(json!("shipped"))
    });
    let refused = thread
        .run_with(
            "and ship it",
            RunOptions::new().tool(other).timeout(RUN_TIMEOUT),
        )
        .await;
    let err = refused.expect_err("other tools on a resumed thread are refused");
    assert!(
        err.to_string()
            .contains("dynamic tools a thread started with"),
        "{err}"
    );
    assert_eq!(h.requests("KEEPTOOLS").len(), 4, "the model was not asked");
    agent.close().await;
}

/// Sets its flag when dropped: the handler's future ended, whichever way.
struct Stopped(Arc<std::sync::atomic::AtomicBool>);

impl Drop for Stopped {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_run_stops_a_handler_in_flight() {
    let h = Harness::start(script("WAITTOOL", json!({"order": "E-5"}))).await;
    let entered = Arc::new(tokio::sync::Notify::new());
    let stopped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (e, s) = (entered.clone(), stopped.clone());
    // Runs until the run is cancelled (its deadline is far away).
    let wait = Tool::define("lookup", "Waits.", move |_: Lookup, ctx| {
        let (e, guard) = (e.clone(), Stopped(s.clone()));
        async move {
            let _guard = guard;
            e.notify_one();
            ctx.cancel.cancelled().await;
            Ok(json!("never answered"))
        }
    })
    .trusted();
    let cfg = h.config(Transport::AppServer);
    let agent = Agent::new(codex::driver(cfg.clone()));
    let mut stream = agent.stream_with(
        "WAITTOOL go",
        RunOptions::new().tool(wait).timeout(RUN_TIMEOUT),
    );
    let handle = stream.handle();
    let drained = tokio::time::timeout(RUN_TIMEOUT, async {
        let mut cancelled = false;
        loop {
            tokio::select! {
                ev = stream.next() => if ev.is_none() { break },
                () = entered.notified(), if !cancelled => {
                    cancelled = true;
                    handle.cancel();
                }
            }
        }
        cancelled
    })
    .await;
    assert_eq!(
        drained,
        Ok(true),
        "the handler ran, the run was cancelled and ended"
    );
    let err = stream.result().await.unwrap_err();
    assert_eq!(
        err.as_run_error().unwrap().reason,
        agent_adaptor_core::FailureReason::Cancelled
    );
    assert!(
        stopped.load(std::sync::atomic::Ordering::SeqCst),
        "the handler in flight was stopped"
    );
    assert!(Harness::stdin_log(&cfg).contains("\"turn/interrupt\""));
    // The model never got an answer to the call.
    assert_eq!(h.requests("WAITTOOL").len(), 1);
}
