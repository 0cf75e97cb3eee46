//! Host tools: the typed definition, the per-run toolbox (schema checks,
//! approval, deadline, panic safety, cancellation), the scopes a tool
//! attaches to, and the refusals before launch.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::driver::{
    ApprovalMode, HostToolCall, HostToolResult, HostToolStatus, McpServer, McpTransport,
    StreamPayload,
};
use agent_adaptor_core::policy::Policy;
use agent_adaptor_core::scripted::{ScriptedDriver, Step};
use agent_adaptor_core::thread::MemoryStore;
use agent_adaptor_core::{
    Agent, Error, Event, RunOptions, RunResult, Runner, Tool, ToolContext, ToolError,
};
use common::*;
use serde_json::{Value, json};
use tokio::sync::Mutex;

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    order: String,
    #[serde(default)]
    quantity: u32,
}

#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
struct Order {
    status: String,
    #[schemars(range(max = 5))]
    items: u32,
}

/// A lookup tool that records every decoded input.
fn lookup(seen: Arc<Mutex<Vec<String>>>) -> Tool {
    Tool::define(
        "lookup",
        "Look an order up.",
        move |input: Lookup, _ctx: ToolContext| {
            let seen = seen.clone();
            async move {
                seen.lock().await.push(input.order.clone());
                match input.order.as_str() {
                    "" => Err(ToolError::Reject("give an order number".into())),
                    "db-down" => Err(ToolError::Failed("the order database is down".into())),
                    "boom" => panic!("the handler blew up"),
                    _ => Ok(Order {
                        status: format!("{} shipped", input.order),
                        items: input.quantity,
                    }),
                }
            }
        },
    )
}

/// A driver that calls each of `calls` (after `run.started`) and answers
/// "done".
fn calling(calls: &[HostToolCall]) -> ScriptedDriver {
    let mut steps = vec![Step::Stream(StreamPayload::run_started())];
    steps.extend(calls.iter().cloned().map(Step::CallTool));
    steps.extend(stream_steps([
        StreamPayload::text_start("m1"),
        StreamPayload::text_content("m1", "done"),
        StreamPayload::text_end("m1"),
        StreamPayload::run_finished(None),
    ]));
    scripted(steps, response("done", vec![]))
        .with_host_tools()
        .with_run_policy(ScriptedDriver::ROUTED_DECISIONS)
}

fn call(input: Value) -> HostToolCall {
    HostToolCall::new("call-1", "lookup", input)
}

/// The recorded result of the `n`th call.
fn tool_result(result: &RunResult, n: usize) -> HostToolResult {
    let raw = result
        .metadata
        .get(&format!("tool.{n}"))
        .unwrap_or_else(|| panic!("no tool.{n} in {:?}", result.metadata));
    serde_json::from_str(raw).unwrap()
}

fn host_failures(events: &[Event]) -> Vec<&agent_adaptor_core::Notice> {
    notices(events, "lifecycle")
        .into_iter()
        .filter(|n| n.metadata.get("event").map(String::as_str) == Some("host_tool.error"))
        .collect()
}

async fn run_trusted(calls: &[HostToolCall], tool: Tool) -> (Vec<Event>, Result<RunResult, Error>) {
    let agent = Agent::builder(calling(calls))
        .tool(tool.trusted())
        .build()
        .unwrap();
    drain(agent.stream("go")).await
}

#[tokio::test]
async fn a_typed_tool_runs_with_the_decoded_input_and_its_output_is_checked() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (events, outcome) = run_trusted(
        &[call(json!({"order": "A-1", "quantity": 2}))],
        lookup(seen.clone()),
    )
    .await;
    let result = outcome.unwrap();
    assert_eq!(*seen.lock().await, ["A-1"]);
    let r = tool_result(&result, 0);
    assert_eq!(r.status, HostToolStatus::Ok);
    assert_eq!(r.output, Some(json!({"status": "A-1 shipped", "items": 2})));
    // The text the model reads is the handler's output as serialized.
    let text: serde_json::Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(text, json!({"status": "A-1 shipped", "items": 2}));
    assert!(host_failures(&events).is_empty());
}

#[tokio::test]
async fn input_failing_the_schema_is_a_model_error_and_the_handler_never_runs() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (events, outcome) = run_trusted(
        &[
            call(json!({"quantity": 1})),
            call(json!({"order": 7})),
            HostToolCall::new("c", "nope", json!({})),
        ],
        lookup(seen.clone()),
    )
    .await;
    let result = outcome.unwrap();
    assert!(seen.lock().await.is_empty(), "the handler ran");
    let missing = tool_result(&result, 0);
    assert_eq!(missing.status, HostToolStatus::InvalidInput);
    assert!(missing.content.contains("order"), "{}", missing.content);
    let wrong_type = tool_result(&result, 1);
    assert_eq!(wrong_type.status, HostToolStatus::InvalidInput);
    assert!(
        wrong_type.content.contains("/order"),
        "{}",
        wrong_type.content
    );
    let unknown = tool_result(&result, 2);
    assert_eq!(unknown.status, HostToolStatus::UnknownTool);
    // The model's mistakes are not host failures.
    assert!(host_failures(&events).is_empty());
}

#[tokio::test]
async fn a_refusal_is_for_the_model_and_a_failure_is_also_a_host_notice() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (events, outcome) = run_trusted(
        &[
            call(json!({"order": ""})),
            call(json!({"order": "db-down"})),
        ],
        lookup(seen),
    )
    .await;
    let result = outcome.unwrap();
    let rejected = tool_result(&result, 0);
    assert_eq!(rejected.status, HostToolStatus::Rejected);
    assert_eq!(rejected.content, "give an order number");
    let failed = tool_result(&result, 1);
    assert_eq!(failed.status, HostToolStatus::Failed);
    // The model reads a generic error; the host reads the cause.
    assert!(!failed.content.contains("database"), "{}", failed.content);
    let notices = host_failures(&events);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0].metadata["status"], "failed");
    assert_eq!(notices[0].metadata["tool"], "lookup");
    assert!(notices[0].text.contains("the order database is down"));
}

#[tokio::test]
async fn output_failing_its_schema_is_a_host_failure() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (events, outcome) = run_trusted(
        &[call(json!({"order": "A-1", "quantity": 9}))],
        lookup(seen.clone()),
    )
    .await;
    let result = outcome.unwrap();
    assert_eq!(*seen.lock().await, ["A-1"], "the handler ran");
    let r = tool_result(&result, 0);
    assert_eq!(r.status, HostToolStatus::InvalidOutput);
    assert_eq!(r.output, None);
    let notices = host_failures(&events);
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].metadata["status"], "invalid_output");
    assert!(notices[0].text.contains("/items"), "{}", notices[0].text);
}

#[tokio::test]
async fn a_panicking_handler_is_a_tool_error_and_the_run_goes_on() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (events, outcome) = run_trusted(
        &[
            call(json!({"order": "boom"})),
            call(json!({"order": "A-2"})),
        ],
        lookup(seen.clone()),
    )
    .await;
    let result = outcome.unwrap();
    assert_eq!(result.text, "done");
    let panicked = tool_result(&result, 0);
    assert_eq!(panicked.status, HostToolStatus::Panicked);
    assert!(
        !panicked.content.contains("blew up"),
        "{}",
        panicked.content
    );
    assert_eq!(tool_result(&result, 1).status, HostToolStatus::Ok);
    let notices = host_failures(&events);
    assert_eq!(notices.len(), 1);
    assert!(notices[0].text.contains("the handler blew up"));
}

/// A tool that waits until it is cancelled and signals the cancellation it
/// saw.
fn sleeper(cancelled: Arc<tokio::sync::Notify>, started: Arc<tokio::sync::Notify>) -> Tool {
    Tool::from_json(
        "sleep",
        "Sleep until cancelled.",
        json!({"type": "object"}),
        move |_input, ctx: ToolContext| {
            let cancelled = cancelled.clone();
            let started = started.clone();
            async move {
                // The future may be dropped at cancellation; the token is
                // what a handler doing outside work watches.
                let token = ctx.cancel.clone();
                let watcher = tokio::spawn(async move {
                    token.cancelled().await;
                    cancelled.notify_one();
                });
                started.notify_one();
                std::future::pending::<()>().await;
                drop(watcher);
                Ok(Value::Null)
            }
        },
    )
}

/// Wait until the sleeper saw its cancellation (bounded, so a token that
/// never fires fails the test instead of hanging it).
async fn wait_for(cancelled: &tokio::sync::Notify) {
    tokio::time::timeout(Duration::from_secs(10), cancelled.notified())
        .await
        .expect("the handler's token was never cancelled");
}

#[tokio::test]
async fn a_handler_past_its_deadline_is_cancelled_and_reported() {
    let cancelled = Arc::new(tokio::sync::Notify::new());
    let tool = sleeper(cancelled.clone(), Arc::default()).deadline(Duration::from_millis(50));
    let (events, outcome) = run_trusted(&[HostToolCall::new("c1", "sleep", json!({}))], tool).await;
    let result = outcome.unwrap();
    let r = tool_result(&result, 0);
    assert_eq!(r.status, HostToolStatus::TimedOut);
    assert!(r.content.contains("timed out"), "{}", r.content);
    wait_for(&cancelled).await;
    let notices = host_failures(&events);
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].metadata["status"], "timed_out");
}

#[tokio::test]
async fn cancelling_the_run_cancels_an_in_flight_handler() {
    let cancelled = Arc::new(tokio::sync::Notify::new());
    let started = Arc::new(tokio::sync::Notify::new());
    let tool = sleeper(cancelled.clone(), started.clone());
    let agent = Agent::builder(calling(&[HostToolCall::new("c1", "sleep", json!({}))]))
        .tool(tool.trusted())
        .build()
        .unwrap();
    let stream = agent.stream("go");
    let handle = stream.handle();
    let drained = tokio::spawn(drain(stream));
    started.notified().await;
    handle.cancel();
    let (_, outcome) = drained.await.unwrap();
    let error = outcome.unwrap_err();
    assert!(
        error
            .as_run_error()
            .is_some_and(|e| e.reason == agent_adaptor_core::FailureReason::Cancelled),
        "{error:?}"
    );
    wait_for(&cancelled).await;
}

#[tokio::test]
async fn every_call_is_put_to_the_host_unless_the_tool_is_trusted() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let asked = Arc::new(Mutex::new(Vec::<Value>::new()));
    let asked_in = asked.clone();
    let agent = Agent::builder(calling(&[
        call(json!({"order": "A-1"})),
        call(json!({"order": "deny-me"})),
    ]))
    .tool(lookup(seen.clone()))
    .on_approval(move |req| {
        let asked = asked_in.clone();
        async move {
            let payload = req.details.clone().unwrap_or_default();
            asked.lock().await.push(payload.clone());
            if payload["input"]["order"] == "deny-me" {
                req.deny("not that one")?;
            } else {
                req.approve()?;
            }
            Ok(())
        }
    })
    .build()
    .unwrap();
    let (_, outcome) = drain(agent.stream("go")).await;
    let result = outcome.unwrap();
    assert_eq!(tool_result(&result, 0).status, HostToolStatus::Ok);
    let denied = tool_result(&result, 1);
    assert_eq!(denied.status, HostToolStatus::Denied);
    assert!(
        denied.content.contains("not that one"),
        "{}",
        denied.content
    );
    assert_eq!(*seen.lock().await, ["A-1"], "the denied call ran");
    let asked = asked.lock().await;
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0]["tool_name"], "lookup");
    assert_eq!(asked[0]["scope"], "host");
    // The decisions are in the result's audit record.
    assert_eq!(result.decisions().len(), 2);
}

#[tokio::test]
async fn the_run_policy_gates_host_tools_and_trusted_tools_skip_it() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let deny = Policy::INHERIT.permission(ApprovalMode::AutoDeny);
    let agent = Agent::builder(calling(&[
        call(json!({"order": "A-1"})),
        HostToolCall::new("c2", "vouched", json!({"order": "A-2"})),
    ]))
    .tool(lookup(seen.clone()))
    .tool(
        Tool::define(
            "vouched",
            "A trusted copy.",
            |input: Lookup, _ctx| async move {
                Ok(Order {
                    status: input.order,
                    items: 0,
                })
            },
        )
        .trusted(),
    )
    .policy(deny)
    .build()
    .unwrap();
    let (_, outcome) = drain(agent.stream("go")).await;
    let result = outcome.unwrap();
    let denied = tool_result(&result, 0);
    assert_eq!(denied.status, HostToolStatus::Denied);
    assert!(denied.content.contains("auto_deny"), "{}", denied.content);
    assert!(seen.lock().await.is_empty());
    assert_eq!(tool_result(&result, 1).status, HostToolStatus::Ok);
    // A call the agent already put to the host is not asked again.
    let pre = Agent::builder(calling(&[call(json!({"order": "A-3"})).pre_approved()]))
        .tool(lookup(seen.clone()))
        .policy(deny)
        .build()
        .unwrap();
    let (_, outcome) = drain(pre.stream("go")).await;
    assert_eq!(tool_result(&outcome.unwrap(), 0).status, HostToolStatus::Ok);
    assert_eq!(*seen.lock().await, ["A-3"]);
}

fn described(description: &str) -> Tool {
    Tool::from_json(
        "lookup",
        description,
        json!({"type": "object"}),
        |_input, _ctx| async { Ok(Value::Null) },
    )
}

#[tokio::test]
async fn the_narrowest_scope_wins_by_name() {
    let driver = ScriptedDriver::resumable_reply("done", "s1").with_host_tools();
    let store = Arc::new(MemoryStore::new());
    let agent = Agent::builder(driver.clone())
        .tool(described("agent's"))
        .tool(Tool::from_json(
            "other",
            "agent only",
            json!({"type": "object"}),
            |_, _| async { Ok(Value::Null) },
        ))
        .thread_store(store)
        .build()
        .unwrap();
    let thread = agent.thread("t1").tool(described("thread's"));
    drain(agent.stream("a")).await.1.unwrap();
    drain(thread.stream("b")).await.1.unwrap();
    drain(thread.stream_with("c", RunOptions::new().tool(described("run's"))))
        .await
        .1
        .unwrap();
    let seen: Vec<Vec<(String, String)>> = driver
        .recorded_requests()
        .iter()
        .map(|r| {
            let mut specs: Vec<_> = r
                .host_tools
                .specs()
                .iter()
                .map(|s| (s.name.clone(), s.description.clone()))
                .collect();
            specs.sort();
            specs
        })
        .collect();
    let with = |d: &str| {
        vec![
            ("lookup".to_owned(), d.to_owned()),
            ("other".to_owned(), "agent only".to_owned()),
        ]
    };
    assert_eq!(seen, [with("agent's"), with("thread's"), with("run's")]);
}

fn refused(outcome: Result<RunResult, Error>) -> Error {
    outcome.expect_err("the run should be refused")
}

#[tokio::test]
async fn runs_with_unusable_tools_are_refused_before_launch() {
    let driver = calling(&[]);
    let run = |tool: Tool| {
        let agent = Agent::builder(driver.clone()).tool(tool).build().unwrap();
        async move { drain(agent.stream("go")).await.1 }
    };
    let bad_name = refused(
        run(Tool::from_json(
            "no spaces",
            "",
            json!({"type": "object"}),
            |_, _| async { Ok(Value::Null) },
        ))
        .await,
    );
    assert!(
        matches!(bad_name, Error::InvalidTool(ref e) if e.name == "no spaces"),
        "{bad_name}"
    );
    let not_object = refused(
        run(Tool::from_json(
            "s",
            "",
            json!({"type": "string"}),
            |_, _| async { Ok(Value::Null) },
        ))
        .await,
    );
    assert!(
        matches!(&not_object, Error::InvalidTool(e) if e.reason.contains("object")),
        "{not_object}"
    );
    let zero = refused(run(described("x").deadline(Duration::ZERO)).await);
    assert!(matches!(zero, Error::InvalidTool(_)), "{zero}");
    assert!(driver.recorded_requests().is_empty(), "the driver ran");
}

#[tokio::test]
async fn a_driver_without_a_channel_refuses_host_tools() {
    let plain = scripted(framed(vec![]), response("", vec![]));
    let agent = Agent::builder(plain.clone())
        .tool(described("x"))
        .build()
        .unwrap();
    let error = refused(drain(agent.stream("go")).await.1);
    assert!(
        matches!(&error, Error::CapabilityUnsupported { capability, .. } if *capability == "host_tools"),
        "{error}"
    );
    assert!(plain.recorded_requests().is_empty());
}

#[tokio::test]
async fn the_host_tool_server_name_is_reserved_when_tools_are_given() {
    let base = calling(&[]);
    let mut desc = agent_adaptor_core::driver::Driver::descriptor(&base);
    desc.mcp.http = true;
    let d = base.with_descriptor(desc);
    let server = McpServer {
        name: agent_adaptor_core::driver::HOST_TOOL_SERVER.into(),
        transport: McpTransport::Http {
            url: "http://127.0.0.1:9/mcp".into(),
            headers: Default::default(),
            bearer_token_env: None,
        },
        required: false,
        tools: Default::default(),
    };
    let agent = Agent::builder(d.clone())
        .mcp_server(server.clone())
        .tool(described("x"))
        .build()
        .unwrap();
    let error = refused(drain(agent.stream("go")).await.1);
    assert!(
        matches!(&error, Error::InvalidOption { option, .. } if *option == "mcp_server"),
        "{error}"
    );
    // Without host tools the name is the host's to use.
    let agent = Agent::builder(d).mcp_server(server).build().unwrap();
    drain(agent.stream("go")).await.1.unwrap();
}
