//! The multi-step agent loop through core, against the mock model server:
//! host tools on every protocol (a parallel pair, then one more call, then
//! the answer), the step limit, cancellation during a slow tool, and a
//! denied call the model is told about.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_adaptor_core::Phase;
use agent_adaptor_core::{
    Agent, ApprovalHandler, ApprovalRequest, Error, Event, RunOptions, RunResult, RunStream,
    Runner, Tool, ToolError,
};
use agent_adaptor_driver::{ToolScope, TranscriptKind};
use agent_adaptor_llm::agent::STEP_LIMIT_CODE;
use agent_adaptor_testkit::mock::{MockServer, Reply, ToolCallSpec};
use common::{VENDORS, llm};
use futures::StreamExt;
use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct AddInput {
    a: i64,
    b: i64,
}

#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
}

#[derive(Debug, Clone, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct UpperInput {
    text: String,
}

/// The inputs each handler was called with.
#[derive(Default, Clone)]
struct Seen {
    add: Arc<Mutex<Vec<AddInput>>>,
    upper: Arc<Mutex<Vec<UpperInput>>>,
}

fn tools(seen: &Seen) -> (Tool, Tool) {
    let add_seen = seen.add.clone();
    let add = Tool::define("add", "Add two integers.", move |input: AddInput, _ctx| {
        add_seen.lock().unwrap().push(input.clone());
        async move {
            Ok(Sum {
                sum: input.a + input.b,
            })
        }
    });
    let upper_seen = seen.upper.clone();
    let upper = Tool::define(
        "upper",
        "Upper-case a text.",
        move |input: UpperInput, _ctx| {
            upper_seen.lock().unwrap().push(input.clone());
            async move { Ok::<_, ToolError>(input.text.to_uppercase()) }
        },
    );
    (add, upper)
}

async fn drain(mut stream: RunStream) -> (Vec<Event>, Result<RunResult, Error>) {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let outcome = stream.result().await;
    (events, outcome)
}

/// One tool call as the events showed it.
#[derive(Debug, Default)]
struct SeenCall {
    id: String,
    name: String,
    scope: ToolScope,
    args: Option<Value>,
    args_delta: String,
    result: Option<Value>,
}

/// The tool calls of `events`, in order: (name, scope, args, result).
fn tool_calls(events: &[Event]) -> Vec<(String, ToolScope, Value, Option<Value>)> {
    let mut calls: Vec<SeenCall> = Vec::new();
    for event in events {
        match event {
            Event::ToolCall(c) => {
                let id = c.id.to_string();
                let position = match calls.iter().position(|s| s.id == id) {
                    Some(position) => position,
                    None => {
                        calls.push(SeenCall {
                            id,
                            ..SeenCall::default()
                        });
                        calls.len() - 1
                    }
                };
                let seen = &mut calls[position];
                if c.phase == Phase::Start {
                    seen.name.clone_from(&c.name);
                    seen.scope = c.scope.clone();
                    seen.args.clone_from(&c.args);
                }
                seen.args_delta.push_str(&c.args_delta);
            }
            Event::ToolResult(r) => {
                if let Some(seen) = calls.iter_mut().find(|s| s.id == r.id.as_str()) {
                    seen.result.clone_from(&r.result);
                }
            }
            _ => {}
        }
    }
    calls
        .into_iter()
        .map(|s| {
            let args = s
                .args
                .unwrap_or_else(|| serde_json::from_str(&s.args_delta).unwrap_or(Value::Null));
            (s.name, s.scope, args, s.result)
        })
        .collect()
}

/// The body of the `n`-th recorded model request, as text.
fn request_body(server: &MockServer, n: usize) -> String {
    let requests = server.requests();
    String::from_utf8_lossy(&requests[n].body).into_owned()
}

#[tokio::test]
async fn three_steps_with_a_parallel_pair_on_every_protocol() {
    for vendor in VENDORS {
        let server = common::server(vec![
            Reply::ToolCalls(vec![
                ToolCallSpec::new("add", json!({"a": 2, "b": 3})),
                ToolCallSpec::new("upper", json!({"text": "abc"})),
            ]),
            Reply::ToolCall {
                name: "upper".into(),
                arguments: json!({"text": "second step"}),
            },
            Reply::Text("All done.".into()),
        ])
        .await;
        let seen = Seen::default();
        let (add, upper) = tools(&seen);
        let agent = Agent::builder(llm(vendor, &server))
            .tool(add.trusted())
            .tool(upper.trusted())
            .build()
            .unwrap();
        let (events, outcome) = drain(agent.stream(common::PROMPT)).await;
        let result = outcome.unwrap_or_else(|e| panic!("{vendor:?}: {e}"));
        assert_eq!(result.text, "All done.", "{vendor:?}");

        // Each handler ran with its decoded input.
        assert_eq!(
            *seen.add.lock().unwrap(),
            [AddInput { a: 2, b: 3 }],
            "{vendor:?}"
        );
        assert_eq!(
            *seen.upper.lock().unwrap(),
            [
                UpperInput { text: "abc".into() },
                UpperInput {
                    text: "second step".into()
                }
            ],
            "{vendor:?}"
        );

        // Each output is in the next request; three model calls in all.
        assert_eq!(server.requests().len(), 3, "{vendor:?}");
        let second = request_body(&server, 1);
        assert!(
            second.contains("sum") && second.contains('5'),
            "{vendor:?}: {second}"
        );
        assert!(second.contains("ABC"), "{vendor:?}: {second}");
        let third = request_body(&server, 2);
        assert!(third.contains("SECOND STEP"), "{vendor:?}: {third}");
        assert!(
            third.contains("ABC"),
            "{vendor:?}: the whole conversation: {third}"
        );

        // The events: three host tool calls with their args and results, in
        // the model's order; run.finished last with the summed usage.
        let calls = tool_calls(&events);
        let names: Vec<&str> = calls.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(names, ["add", "upper", "upper"], "{vendor:?}");
        assert!(
            calls.iter().all(|c| c.1 == ToolScope::Host),
            "{vendor:?}: {calls:?}"
        );
        assert_eq!(calls[0].2, json!({"a": 2, "b": 3}), "{vendor:?}");
        assert_eq!(calls[0].3, Some(json!({"sum": 5})), "{vendor:?}");
        assert_eq!(calls[1].3, Some(json!("ABC")), "{vendor:?}");
        assert_eq!(calls[2].2, json!({"text": "second step"}), "{vendor:?}");
        assert_eq!(calls[2].3, Some(json!("SECOND STEP")), "{vendor:?}");
        let usage = result.usage.clone().expect("usage");
        assert_eq!(
            usage.output_tokens,
            Some(30),
            "{vendor:?}: three steps of 10"
        );
        match events.last() {
            Some(Event::RunFinished(finished)) => {
                assert_eq!(finished.usage.as_ref(), Some(&usage), "{vendor:?}");
            }
            other => panic!("{vendor:?}: {other:?}"),
        }
        let kinds: Vec<TranscriptKind> = result
            .transcript()
            .as_slice()
            .unwrap()
            .iter()
            .map(|i| i.kind)
            .filter(|k| matches!(k, TranscriptKind::ToolCall | TranscriptKind::ToolResult))
            .collect();
        assert_eq!(
            kinds,
            [
                TranscriptKind::ToolCall,
                TranscriptKind::ToolCall,
                TranscriptKind::ToolResult,
                TranscriptKind::ToolResult,
                TranscriptKind::ToolCall,
                TranscriptKind::ToolResult
            ],
            "{vendor:?}"
        );
    }
}

#[tokio::test]
async fn a_model_still_calling_tools_at_the_step_limit_fails_the_run() {
    let call = || Reply::ToolCall {
        name: "add".into(),
        arguments: json!({"a": 1, "b": 1}),
    };
    let server = common::server(vec![call(), call(), call(), Reply::Text("late".into())]).await;
    let seen = Seen::default();
    let (add, _) = tools(&seen);
    let driver = llm(common::Vendor::Chat, &server).max_steps(2);
    let agent = Agent::builder(driver).tool(add.trusted()).build().unwrap();
    let outcome = agent.run(common::PROMPT).await;
    let Err(Error::Run(run)) = outcome else {
        panic!("expected a failed run, got {outcome:?}")
    };
    let Some(agent_adaptor_core::RunCause::Failure(failure)) = &run.cause else {
        panic!("expected a business failure, got {:?}", run.cause)
    };
    assert_eq!(failure.code.as_str(), STEP_LIMIT_CODE);
    assert_eq!(
        failure.metadata.get("max_steps").map(String::as_str),
        Some("2")
    );
    assert_eq!(server.requests().len(), 2, "no third model call");
    assert_eq!(seen.add.lock().unwrap().len(), 2, "both steps' calls ran");
}

#[tokio::test]
async fn cancelling_during_a_slow_tool_cancels_the_handler_and_the_run() {
    let server = common::server(vec![
        Reply::ToolCall {
            name: "slow".into(),
            arguments: json!({}),
        },
        Reply::Text("never".into()),
    ])
    .await;
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = Arc::new(Mutex::new(Some(started_tx)));
    // The handler's cancellation token, kept to check it fired (the
    // handler's future itself is dropped when the run is cancelled).
    let token = Arc::new(Mutex::new(None));
    let kept = token.clone();
    let slow = Tool::from_json(
        "slow",
        "Takes a long while.",
        json!({"type": "object"}),
        move |_input, ctx| {
            *kept.lock().unwrap() = Some(ctx.cancel.clone());
            let started = started_tx.lock().unwrap().take();
            async move {
                if let Some(tx) = started {
                    let _ = tx.send(());
                }
                ctx.cancel.cancelled().await;
                Ok(json!("too late"))
            }
        },
    )
    .trusted()
    .deadline(Duration::from_secs(600));
    let agent = Agent::builder(llm(common::Vendor::Anthropic, &server))
        .tool(slow)
        .build()
        .unwrap();
    let mut stream = agent.stream(common::PROMPT);
    let handle = stream.handle();
    let drained = tokio::spawn(async move {
        while stream.next().await.is_some() {}
        stream.result().await
    });
    started_rx.await.expect("the handler started");
    handle.cancel();
    match drained.await.unwrap() {
        Err(Error::Run(run)) => assert_eq!(run.reason.as_str(), "cancelled"),
        other => panic!("expected cancellation, got {other:?}"),
    }
    let token = token.lock().unwrap().clone().expect("the handler ran");
    assert!(token.is_cancelled(), "the handler's token fired");
    assert_eq!(server.requests().len(), 1, "no model call after the cancel");
}

/// Approves `add`, denies everything else with "not this one"; counts the
/// requests in `asked`.
fn approve_only_add(asked: Arc<Mutex<usize>>) -> ApprovalHandler {
    Arc::new(move |req: ApprovalRequest| {
        *asked.lock().unwrap() += 1;
        Box::pin(async move {
            let tool = req
                .details
                .as_ref()
                .and_then(|d| d.get("tool_name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if tool == "add" {
                req.approve()?;
            } else {
                req.deny("not this one")?;
            }
            Ok(())
        })
    })
}

#[tokio::test]
async fn a_denied_call_is_told_to_the_model_and_the_run_goes_on() {
    for vendor in [common::Vendor::Chat, common::Vendor::Gemini] {
        let server = common::server(vec![
            Reply::ToolCalls(vec![
                ToolCallSpec::new("add", json!({"a": 4, "b": 4})),
                ToolCallSpec::new("upper", json!({"text": "secret"})),
            ]),
            Reply::Text("Answered without upper.".into()),
        ])
        .await;
        let seen = Seen::default();
        let (add, upper) = tools(&seen);
        let agent = Agent::builder(llm(vendor, &server))
            .tool(add)
            .tool(upper)
            .build()
            .unwrap();
        let asked = Arc::new(Mutex::new(0));
        let options = RunOptions::new().approval_handler(approve_only_add(asked.clone()));
        let (_, outcome) = drain(agent.stream_with(common::PROMPT, options)).await;
        let result = outcome.unwrap_or_else(|e| panic!("{vendor:?}: {e}"));
        assert_eq!(result.text, "Answered without upper.");
        assert_eq!(seen.add.lock().unwrap().len(), 1, "{vendor:?}");
        assert!(
            seen.upper.lock().unwrap().is_empty(),
            "{vendor:?}: never ran"
        );
        assert_eq!(
            *asked.lock().unwrap(),
            2,
            "{vendor:?}: both calls were put to the host"
        );
        let second = request_body(&server, 1);
        assert!(second.contains("did not allow"), "{vendor:?}: {second}");
        assert!(second.contains("not this one"), "{vendor:?}: {second}");
        assert!(
            second.contains("sum"),
            "{vendor:?}: the approved one ran: {second}"
        );
    }
}
