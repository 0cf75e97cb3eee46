//! The Codex app-server transport: the capture checked against the
//! binary's schema, its parser on the capture and on synthetic notification
//! sequences, fuzzing, and the driver as the JSON-RPC client of the fake CLI
//! replaying transcripts (approvals, conformance, and every failure path of
//! spec §12 for this transport: success, non-zero exit, malformed line,
//! missing checkpoint, missing terminal, cancellation — plus resume
//! rejection and unknown server requests).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod codex_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_conformance::fuzz::{FuzzConfig, fuzz_inputs};
use agent_adaptor_conformance::{CancelCase, Expect, Options, RunCase, record_run, test_driver};
use agent_adaptor_core::{Agent, Event, FailureReason, Runner};
use agent_adaptor_driver::{
    DecisionKind, DecisionResult, Driver, FailureCode, LifecycleChecker, Request, RunEvent,
    SessionContext, SessionState, StreamKind, StreamPayload, ToolScope, TranscriptKind,
};
use agent_adaptor_drivers::codex::appserver::{AppServerParser, RESUME_REJECTED};
use agent_adaptor_drivers::codex::record::{Parsed, Totals};
use agent_adaptor_drivers::codex::{self, APP_SERVER_CAPABILITY, Transport};
use agent_adaptor_drivers::exit::ExitFacts;
use agent_adaptor_drivers::pump::{ControlFrame, LineProtocol, Out};
use agent_adaptor_testkit::fixtures::{self, Capture, Direction};
use agent_adaptor_testkit::replay::{OPTS_ENV, fake_cli_binary};
use codex_support::{Dir, SchemaCheck};
use futures::StreamExt;
use serde_json::{Value, json};

const CAPTURE: &str = "codex/app-server-approval.transcript";
const THREAD: &str = "01a228cd-3b13-76f0-8ff7-e4d0aff05213";
const TURN: &str = "01a228cd-3b2f-7d03-a6c6-8fb3421da796";

fn frames(rel: &str) -> Vec<(Direction, String)> {
    match fixtures::load(rel).unwrap() {
        Capture::Transcript(frames) => frames.into_iter().map(|f| (f.dir, f.line)).collect(),
        Capture::Lines(_) => panic!("{rel} is not a transcript"),
    }
}

fn server_lines(frames: &[(Direction, String)]) -> Vec<String> {
    frames
        .iter()
        .filter(|(d, _)| *d == Direction::CliToSdk)
        .map(|(_, l)| l.clone())
        .collect()
}

// ---------------------------------------------------------------------------
// The capture against the schema.

#[test]
fn every_captured_message_validates_against_the_binary_schema() {
    let mut check = SchemaCheck::new();
    let frames = frames(CAPTURE);
    check.frames(frames.iter().map(|(d, l)| {
        let dir = match d {
            Direction::CliToSdk => Dir::Server,
            Direction::SdkToCli => Dir::Client,
        };
        (dir, l.as_str())
    }));
    assert_eq!(check.total(), frames.len());
    for schema in [
        "ClientRequest",
        "ClientNotification",
        "ServerNotification",
        "ServerRequest",
        "InitializeResponse",
        "ThreadStartResponse",
        "TurnStartResponse",
        "CommandExecutionRequestApprovalResponse",
    ] {
        assert!(check.checked.contains_key(schema), "{schema} was exercised");
    }
}

#[test]
fn the_schema_check_rejects_what_the_schema_forbids() {
    let mut check = SchemaCheck::new();
    let bad = [
        // turn/completed without its turn.
        (
            Dir::Server,
            r#"{"method":"turn/completed","params":{"threadId":"t"}}"#,
        ),
        // turn/start without its threadId.
        (
            Dir::Client,
            r#"{"id":1,"method":"turn/start","params":{"input":[]}}"#,
        ),
    ];
    for (dir, line) in bad {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check.frame(dir, line)));
        assert!(r.is_err(), "accepted: {line}");
    }
}

// ---------------------------------------------------------------------------
// The parser, sans IO.

/// Feed the server side of a transcript to a parser, playing the client's
/// part where only the client knows (the thread from the `thread/start`
/// result, the answer to each approval).
fn replay(lines: &[String], parser: &mut AppServerParser, answer: DecisionResult) -> Vec<Out> {
    let mut outs = Vec::new();
    for line in lines {
        for out in parser.line(line.as_bytes()) {
            match &out {
                Out::Control(ControlFrame::Response { result: Ok(r), .. }) => {
                    if let Some(t) = r.pointer("/thread/id").and_then(Value::as_str) {
                        outs.extend(parser.thread_opened(t));
                    }
                    if let Some(t) = r.pointer("/turn/id").and_then(Value::as_str) {
                        parser.turn_accepted(t);
                    }
                }
                Out::Control(ControlFrame::Request { id, .. }) => {
                    let decision = if answer == DecisionResult::Approved {
                        json!("accept")
                    } else {
                        json!("cancel")
                    };
                    parser.approval_answered(id, answer, &decision);
                }
                _ => {}
            }
            outs.push(out);
        }
    }
    outs
}

/// Check the lifecycle and the transcript mirror; return the payloads.
fn checked(
    mut outs: Vec<Out>,
    parser: &mut AppServerParser,
    exit: i32,
) -> (Vec<StreamPayload>, Parsed) {
    let (tail, parsed) = parser.finish(ExitFacts::exited(exit));
    outs.extend(tail);
    let mut rules = LifecycleChecker::new(APP_SERVER_CAPABILITY);
    let mut payloads = Vec::new();
    let mut items = Vec::new();
    for o in outs {
        match o {
            Out::Stream(s) => {
                rules.check(&s).unwrap_or_else(|v| panic!("{v}: {s:?}"));
                payloads.push(s);
            }
            Out::Event(RunEvent::Item(i)) => {
                i.validate().unwrap();
                items.push(Arc::unwrap_or_clone(i.into_arc()));
            }
            _ => {}
        }
    }
    rules.finish(true).unwrap();
    assert_eq!(items, parsed.transcript, "the transcript mirror");
    (payloads, parsed)
}

fn deltas(payloads: &[StreamPayload], reasoning: bool) -> Vec<String> {
    payloads
        .iter()
        .filter_map(|p| match &p.kind {
            StreamKind::TextContent { delta, .. } if !reasoning => Some(delta.clone()),
            StreamKind::ReasoningContent { delta, .. } if reasoning => Some(delta.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_capture_streams_tokens_tools_usage_and_one_terminal() {
    let lines = server_lines(&frames(CAPTURE));
    let mut parser = AppServerParser::new(true, false, None);
    let outs = replay(&lines, &mut parser, DecisionResult::Approved);
    let approvals = outs
        .iter()
        .filter(|o| matches!(o, Out::Control(ControlFrame::Request { method, .. }) if method == "item/commandExecution/requestApproval"))
        .count();
    assert_eq!(approvals, 1, "the approval request goes to the transport");
    let (payloads, p) = checked(outs, &mut parser, 0);

    assert_eq!(deltas(&payloads, false), ["Tool s", "aid hi."]);
    assert_eq!(deltas(&payloads, true), ["**Thinking** about it"]);
    assert_eq!(p.output, "Tool said hi.");
    let names: Vec<&str> = payloads.iter().map(|p| p.kind.name()).collect();
    assert_eq!(names.first(), Some(&"run.started"));
    assert_eq!(names.last(), Some(&"run.finished"));
    for k in [
        "step.started",
        "tool_call.start",
        "tool_call.end",
        "tool_call.result",
        "hitl.requested",
        "hitl.resolved",
        "reasoning.start",
        "text.end",
    ] {
        assert!(names.contains(&k), "{k} in {names:?}");
    }
    let start = payloads
        .iter()
        .find_map(|p| match &p.kind {
            StreamKind::ToolCallStart {
                tool_call_id,
                name,
                args,
                ..
            } => Some((tool_call_id, name, args)),
            _ => None,
        })
        .unwrap();
    assert_eq!(start.0, "call_bc30a7");
    assert_eq!(start.1, "command_execution");
    assert_eq!(
        start.2.as_ref().unwrap()["command"],
        "/bin/bash -lc 'touch made-by-tool.txt && echo touched'"
    );
    let result = p
        .transcript
        .as_slice()
        .unwrap()
        .iter()
        .find(|i| i.kind == TranscriptKind::ToolResult)
        .unwrap();
    assert_eq!(
        (result.text.as_str(), result.is_error),
        ("touched\n", false)
    );

    // Two model responses in the turn: their sum, from the cumulative total.
    let u = p.usage.as_ref().unwrap();
    assert_eq!(
        (
            u.input_tokens,
            u.cached_input_tokens,
            u.output_tokens,
            u.reasoning_tokens
        ),
        (Some(200), Some(40), Some(20), Some(6))
    );
    let terminal = p.terminal.as_ref().unwrap();
    assert_eq!(terminal.event, "turn/completed");
    assert_eq!(
        terminal.json.get(),
        lines
            .iter()
            .find(|l| l.contains("\"turn/completed\""))
            .unwrap()
            .as_str(),
        "the exact terminal line"
    );
    let state = p.checkpoint.as_ref().unwrap().state.as_ref().unwrap();
    assert_eq!(state.resume_id, THREAD);
    assert_eq!(state.data["usage.input_tokens"], "200");
    assert!(p.failure.is_none());
}

#[test]
fn without_payloads_the_layers_are_the_same() {
    let lines = server_lines(&frames(CAPTURE));
    let mut streaming = AppServerParser::new(true, false, None);
    let a = {
        let outs = replay(&lines, &mut streaming, DecisionResult::Approved);
        checked(outs, &mut streaming, 0).1
    };
    let mut batch = AppServerParser::new(false, false, None);
    let outs = replay(&lines, &mut batch, DecisionResult::Approved);
    assert!(outs.iter().all(|o| !matches!(o, Out::Stream(_))));
    let (_, b) = batch.finish(ExitFacts::exited(0));
    assert_eq!(a, b);
}

fn note(method: &str, params: Value) -> String {
    json!({"method": method, "params": params, "emittedAtMs": 1}).to_string()
}

fn usage(turn: &str, total: u64, last: u64) -> String {
    let b = |n: u64| json!({"totalTokens": n + n / 10, "inputTokens": n, "cachedInputTokens": n / 5, "cacheWriteInputTokens": 0, "outputTokens": n / 10, "reasoningOutputTokens": 0});
    note(
        "thread/tokenUsage/updated",
        json!({"threadId": THREAD, "turnId": turn, "tokenUsage": {"total": b(total), "last": b(last), "modelContextWindow": 1000}}),
    )
}

fn turn_completed(status: &str, error: Value) -> String {
    note(
        "turn/completed",
        json!({"threadId": THREAD, "turn": {"id": TURN, "items": [], "status": status, "error": error}}),
    )
}

fn turn_started() -> String {
    note(
        "turn/started",
        json!({"threadId": THREAD, "turn": {"id": TURN, "items": [], "status": "inProgress"}}),
    )
}

/// Play the transport's part of the handshake: `thread/start` answered with
/// [`THREAD`], `turn/start` with [`TURN`].
fn opened(parser: &mut AppServerParser) -> Vec<Out> {
    let outs = parser.thread_opened(THREAD);
    parser.turn_accepted(TURN);
    outs
}

fn run_lines(
    parser: &mut AppServerParser,
    lines: &[String],
    exit: i32,
) -> (Vec<StreamPayload>, Parsed) {
    let mut outs = opened(parser);
    for l in lines {
        outs.extend(parser.line(l.as_bytes()));
    }
    checked(outs, parser, exit)
}

#[test]
fn a_resumed_turn_reports_its_own_usage_not_the_threads() {
    // On resume Codex first replays the previous turn's usage, then reports
    // cumulative totals: the turn's usage is one response's worth.
    let lines = [
        usage("previous-turn", 100, 100),
        turn_started(),
        usage(TURN, 200, 100),
        turn_completed("completed", Value::Null),
    ];
    let mut p = AppServerParser::new(true, true, None);
    let (_, parsed) = run_lines(&mut p, &lines, 0);
    let u = parsed.usage.unwrap();
    assert_eq!((u.input_tokens, u.output_tokens), (Some(100), Some(10)));
    let data = parsed.checkpoint.unwrap().state.unwrap().data;
    assert_eq!(
        data["usage.input_tokens"], "200",
        "the cumulative total is kept"
    );

    // Without the replay, the checkpoint's totals are the baseline …
    let previous = Totals {
        input: 150,
        cached_input: 30,
        output: 15,
        reasoning: 0,
    };
    let mut p = AppServerParser::new(true, true, Some(previous));
    let (_, parsed) = run_lines(&mut p, &lines[1..], 0);
    assert_eq!(parsed.usage.unwrap().input_tokens, Some(50));
    // … and with neither, the per-response usage of the turn.
    let mut p = AppServerParser::new(true, true, None);
    let (_, parsed) = run_lines(&mut p, &lines[1..], 0);
    assert_eq!(parsed.usage.unwrap().input_tokens, Some(100));
}

#[test]
fn failed_and_interrupted_turns_are_failures_with_the_providers_message() {
    let error = json!({"message": "{\"error\":{\"code\":null,\"message\":\"mock http error 400: Bad Request\",\"param\":null,\"type\":\"invalid_request_error\"}}", "codexErrorInfo": "other"});
    let lines = [
        turn_started(),
        note(
            "error",
            json!({"error": error, "willRetry": false, "threadId": THREAD, "turnId": TURN}),
        ),
        turn_completed("failed", error.clone()),
    ];
    let mut p = AppServerParser::new(true, false, None);
    let (payloads, parsed) = run_lines(&mut p, &lines, 0);
    let f = parsed.failure.unwrap();
    assert_eq!(f.message, "mock http error 400: Bad Request");
    assert_eq!(f.code, FailureCode::AgentError);
    assert_eq!(f.metadata["status"], "failed");
    assert!(
        parsed.checkpoint.is_none(),
        "no checkpoint after a failed turn"
    );
    assert_eq!(parsed.terminal.unwrap().event, "turn/completed");
    assert!(matches!(
        payloads.last().unwrap().kind,
        StreamKind::RunError { .. }
    ));

    let lines = [turn_started(), turn_completed("interrupted", Value::Null)];
    let mut p = AppServerParser::new(true, false, None);
    let (_, parsed) = run_lines(&mut p, &lines, 0);
    assert_eq!(parsed.failure.unwrap().message, "the turn was interrupted");
    assert!(parsed.checkpoint.is_none());
}

#[test]
fn a_host_rejection_answered_with_cancel_is_a_decision_failure() {
    let request = json!({"id": 0, "method": "item/commandExecution/requestApproval", "params": {"itemId": "call_1", "threadId": THREAD, "turnId": TURN, "startedAtMs": 1, "command": "touch x", "availableDecisions": ["accept", "cancel"]}}).to_string();
    let mut p = AppServerParser::new(true, false, None);
    let mut outs = opened(&mut p);
    outs.extend(p.line(turn_started().as_bytes()));
    outs.extend(p.line(request.as_bytes()));
    p.approval_answered(&json!(0), DecisionResult::Rejected, &json!("cancel"));
    for l in [
        note(
            "serverRequest/resolved",
            json!({"threadId": THREAD, "requestId": 0}),
        ),
        turn_completed("interrupted", Value::Null),
    ] {
        outs.extend(p.line(l.as_bytes()));
    }
    let (payloads, parsed) = checked(outs, &mut p, 0);
    let f = parsed.failure.unwrap();
    assert_eq!(f.code, FailureCode::DecisionRejected);
    let hd = f.human_decision.unwrap();
    assert_eq!(
        (hd.kind, hd.decision),
        (DecisionKind::Permission, DecisionResult::Rejected)
    );
    assert_eq!(hd.request.tool_call_id, "call_1");
    assert!(payloads.iter().any(
        |p| matches!(&p.kind, StreamKind::HitlResolved(r) if r.result == DecisionResult::Rejected)
    ));
}

#[test]
fn unknown_notifications_and_items_become_custom_payloads_with_raw_json() {
    let plan = note(
        "item/completed",
        json!({"threadId": THREAD, "turnId": TURN, "item": {"type": "plan", "id": "p1", "text": "1. do it"}, "completedAtMs": 1}),
    );
    let brand_new = note("thread/somethingNew", json!({"threadId": THREAD, "x": 1}));
    let foreign = note(
        "item/agentMessage/delta",
        json!({"threadId": "another-thread", "turnId": "t", "itemId": "m", "delta": "not ours"}),
    );
    let lines = [
        turn_started(),
        plan.clone(),
        brand_new.clone(),
        foreign.clone(),
        turn_completed("completed", Value::Null),
    ];
    let mut p = AppServerParser::new(true, false, None);
    let (payloads, parsed) = run_lines(&mut p, &lines, 0);
    let customs: Vec<(&str, &Value)> = payloads
        .iter()
        .filter_map(|p| match &p.kind {
            StreamKind::Custom { name, .. } => Some((name.as_str(), p.raw.as_ref().unwrap())),
            _ => None,
        })
        .collect();
    let raw = |l: &str| serde_json::from_str::<Value>(l).unwrap();
    assert_eq!(
        customs,
        [
            ("codex.item.plan", &raw(&plan)),
            ("codex.thread/somethingNew", &raw(&brand_new)),
            ("codex.item/agentMessage/delta", &raw(&foreign)),
        ]
    );
    assert!(
        parsed.output.is_empty(),
        "another thread's text is not ours"
    );
}

#[test]
fn text_without_deltas_and_open_lifecycles_at_the_terminal_stay_valid() {
    let lines = [
        turn_started(),
        // A message that arrives whole.
        note(
            "item/completed",
            json!({"threadId": THREAD, "turnId": TURN, "item": {"type": "agentMessage", "id": "m1", "text": "whole"}, "completedAtMs": 1}),
        ),
        // A message and a command that never complete (interrupted turn).
        note(
            "item/agentMessage/delta",
            json!({"threadId": THREAD, "turnId": TURN, "itemId": "m2", "delta": "half"}),
        ),
        note(
            "item/started",
            json!({"threadId": THREAD, "turnId": TURN, "startedAtMs": 1, "item": {"type": "commandExecution", "id": "c1", "command": "sleep 9", "cwd": "/", "status": "inProgress", "commandActions": []}}),
        ),
        turn_completed("interrupted", Value::Null),
    ];
    let mut p = AppServerParser::new(true, false, None);
    let (payloads, parsed) = run_lines(&mut p, &lines, 0);
    assert_eq!(parsed.output, "whole");
    assert_eq!(deltas(&payloads, false), ["whole", "half"]);
}

#[test]
fn a_missing_terminal_or_a_bad_exit_leaves_no_checkpoint() {
    let lines = server_lines(&frames(CAPTURE));
    let cut = &lines[..lines.len() - 1];
    let mut p = AppServerParser::new(true, false, None);
    let outs = replay(cut, &mut p, DecisionResult::Approved);
    let (_, parsed) = checked(outs, &mut p, 0);
    let f = parsed.failure.unwrap();
    assert_eq!(f.metadata["reason"], "missing_terminal");
    assert!(f.message.contains("turn/completed"), "{}", f.message);
    assert!(parsed.checkpoint.is_none() && parsed.terminal.is_none());

    let mut p = AppServerParser::new(true, false, None);
    let outs = replay(&lines, &mut p, DecisionResult::Approved);
    let (_, parsed) = checked(outs, &mut p, 1);
    assert!(parsed.failure.is_none(), "the turn itself completed");
    assert!(parsed.checkpoint.is_none(), "but exit 1 is not a clean end");
}

#[test]
fn malformed_lines_are_notices_and_requests_are_always_handed_on() {
    let mut p = AppServerParser::new(true, false, None);
    for bad in ["not json", "{\"method\":", "[1,2]", "{\"id\":5}"] {
        let outs = p.line(bad.as_bytes());
        assert!(
            matches!(outs.as_slice(), [Out::Event(RunEvent::Lifecycle(_))]),
            "{bad}: {outs:?}"
        );
    }
    let outs = p.line(br#"{"id":7,"method":"item/tool/requestUserInput","params":{}}"#);
    assert!(
        matches!(outs.as_slice(), [Out::Control(ControlFrame::Request { method, .. })] if method == "item/tool/requestUserInput")
    );
}

#[test]
fn the_parser_survives_mutated_captures() {
    let seed = server_lines(&frames(CAPTURE)).join("\n").into_bytes();
    let extra = [
        turn_started(),
        turn_completed("failed", json!({"message": "boom"})),
        usage(TURN, 10, 10),
    ]
    .join("\n")
    .into_bytes();
    fuzz_inputs(
        &[&seed, &extra],
        FuzzConfig {
            cases: 300,
            ..FuzzConfig::default()
        },
        |input| {
            for payloads in [true, false] {
                let mut p = AppServerParser::new(payloads, false, None);
                let mut outs = Vec::new();
                for l in input.split(|b| *b == b'\n') {
                    for o in p.line(l) {
                        if let Out::Control(ControlFrame::Response { result: Ok(r), .. }) = &o
                            && let Some(t) = r.pointer("/thread/id").and_then(Value::as_str)
                        {
                            outs.extend(p.thread_opened(t));
                        }
                        outs.push(o);
                    }
                }
                let (tail, _) = p.finish(ExitFacts::exited(0));
                outs.extend(tail);
                let mut rules = LifecycleChecker::new(APP_SERVER_CAPABILITY);
                for o in &outs {
                    if let Out::Stream(s) = o {
                        rules.check(s).unwrap_or_else(|v| panic!("{v}"));
                    }
                }
                rules.finish(payloads).unwrap();
            }
        },
    );
}

// ---------------------------------------------------------------------------
// The driver as the client of the fake CLI.

fn on_fake(fixture: &Path, opts: &str) -> codex::CodexDriver {
    let mut cfg = codex::Config {
        command: fake_cli_binary().unwrap(),
        transport: Transport::AppServer,
        ..Default::default()
    };
    cfg.env.insert(
        OPTS_ENV.into(),
        format!("--fixture {} {opts}", fixture.display()),
    );
    codex::driver(cfg)
}

fn capture_path() -> PathBuf {
    fixtures::path(CAPTURE)
}

/// A transcript built from the capture by `edit` (which sees and returns
/// the frames), written to `dir`.
fn variant(
    dir: &Path,
    name: &str,
    edit: impl FnOnce(Vec<(Direction, String)>) -> Vec<(Direction, String)>,
) -> PathBuf {
    let frames = edit(frames(CAPTURE));
    let text: String = frames
        .iter()
        .map(|(d, l)| format!("{} {l}\n", d.prefix()))
        .collect();
    let path = dir.join(format!("{name}.transcript"));
    std::fs::write(&path, text).unwrap();
    path
}

async fn drain(
    agent: &Agent,
    prompt: &str,
    approve: bool,
) -> (
    Vec<Event>,
    Result<agent_adaptor_core::RunResult, agent_adaptor_core::Error>,
) {
    let mut stream = agent.stream(prompt);
    let mut events = Vec::new();
    while let Some(ev) = stream.next().await {
        if let Event::ApprovalRequest(req) = &ev {
            if approve {
                req.approve().unwrap();
            } else {
                req.deny("not this one").unwrap();
            }
        }
        events.push(ev);
    }
    (events, stream.result().await)
}

fn recorded(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn the_approval_reaches_the_host_and_is_answered_with_an_offered_decision() {
    let dir = tempfile::tempdir().unwrap();
    for (approve, want) in [(true, "accept"), (false, "cancel")] {
        let stdin = dir.path().join(format!("stdin-{approve}.jsonl"));
        let agent = Agent::new(on_fake(
            &capture_path(),
            &format!("--stdin-check type --record-stdin {}", stdin.display()),
        ));
        let (events, outcome) = drain(&agent, "RUNTOOL TOUCH please", approve).await;
        let approvals: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Event::ApprovalRequest(r) => Some(r),
                _ => None,
            })
            .collect();
        assert_eq!(approvals.len(), 1);
        let a = approvals[0];
        assert_eq!(a.kind, DecisionKind::Permission);
        assert_eq!(a.tool_call_id, "call_bc30a7");
        let details = a.details.as_ref().unwrap();
        assert_eq!(
            details["command"],
            "/bin/bash -lc 'touch made-by-tool.txt && echo touched'"
        );
        assert_eq!(details["cwd"], "/repo");

        // What the driver wrote: the handshake, then the answer — only an
        // offered decision (the capture offers accept, an amendment, cancel).
        let sent = recorded(&stdin);
        let methods: Vec<&str> = sent.iter().filter_map(|f| f["method"].as_str()).collect();
        assert_eq!(
            methods,
            ["initialize", "initialized", "thread/start", "turn/start"]
        );
        let answer = sent
            .iter()
            .find(|f| f["id"] == 0 && f.get("method").is_none())
            .unwrap();
        assert_eq!(answer["result"]["decision"], want);
        let mut check = SchemaCheck::new();
        let lines: Vec<String> = sent.iter().map(Value::to_string).collect();
        let server = server_lines(&frames(CAPTURE));
        check.frames(
            lines
                .iter()
                .map(|l| (Dir::Client, l.as_str()))
                .chain(server.iter().map(|l| (Dir::Server, l.as_str()))),
        );

        // The replayed turn completes either way (it was recorded with accept).
        let result = outcome.unwrap();
        assert_eq!(result.text, "Tool said hi.");
        assert_eq!(
            result.raw().terminal.as_ref().unwrap().event,
            "turn/completed"
        );
        assert_eq!(
            result
                .checkpoint()
                .unwrap()
                .state
                .as_ref()
                .unwrap()
                .resume_id,
            THREAD
        );
        let u = result.usage.as_ref().unwrap();
        assert_eq!(u.input_tokens, Some(200));
    }
}

#[tokio::test]
async fn conformance_on_the_capture() {
    let state = SessionState {
        resume_id: THREAD.into(),
        display_id: THREAD.into(),
        data: [("cwd".to_owned(), "/repo".to_owned())].into(),
    };
    let report = test_driver(
        || on_fake(&capture_path(), "--stdin-check type"),
        Options::new()
            .session_state(state)
            .session_keys(["cwd"])
            .guard_keys(["cwd"])
            .run(RunCase::new("streaming", "hi", true, Expect::Success))
            .run(RunCase::new("batch", "hi", false, Expect::Success))
            .run_timeout(Duration::from_secs(60)),
    )
    .await;
    report.assert_passed();
    assert!(
        report.passed("EVT-03") && report.passed("RSP-05"),
        "{report}"
    );
}

#[tokio::test]
async fn a_non_zero_exit_fails_without_a_checkpoint() {
    let agent = Agent::new(on_fake(&capture_path(), "--exit-code 2"));
    let (_, outcome) = drain(&agent, "hi", true).await;
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::AgentError);
    assert!(run.result.as_ref().unwrap().checkpoint().is_none());
}

#[tokio::test]
async fn a_malformed_line_is_a_notice_not_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let path = variant(dir.path(), "noisy", |mut f| {
        f.insert(2, (Direction::CliToSdk, "WARNING: not json".into()));
        f.insert(
            3,
            (Direction::CliToSdk, "{\"method\":\"turn/started\",".into()),
        );
        f
    });
    let agent = Agent::new(on_fake(&path, "--stdin-check type"));
    let (events, outcome) = drain(&agent, "hi", true).await;
    assert_eq!(outcome.unwrap().text, "Tool said hi.");
    let notices = events
        .iter()
        .filter(|e| matches!(e, Event::Notice(n) if n.kind == agent_adaptor_core::notice_kind::LIFECYCLE && n.text.contains("codex:")))
        .count();
    assert!(notices >= 2, "both bad lines are reported");
}

#[tokio::test]
async fn a_missing_terminal_fails_without_terminal_or_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let path = variant(dir.path(), "cut", |mut f| {
        f.pop();
        f
    });
    let agent = Agent::new(on_fake(&path, "--exit-after-replay"));
    let (_, outcome) = drain(&agent, "hi", true).await;
    let err = outcome.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert!(
        run.message.contains("without turn/completed"),
        "{}",
        run.message
    );
    let partial = run.result.as_ref().unwrap();
    assert!(partial.checkpoint().is_none() && partial.raw().terminal.is_none());
}

#[tokio::test]
async fn a_thread_without_an_id_gives_no_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let path = variant(dir.path(), "no-thread", |f| {
        f.into_iter()
            .map(|(d, l)| {
                if l.starts_with("{\"id\":2,\"result\"") {
                    let mut v: Value = serde_json::from_str(&l).unwrap();
                    v["result"]["thread"]["id"] = json!("");
                    (d, v.to_string())
                } else {
                    (d, l)
                }
            })
            .collect()
    });
    let trace = record_run(
        &on_fake(&path, ""),
        Request::new("run_0000000000000001", "hi"),
        Duration::from_secs(60),
    )
    .await;
    let resp = trace.response().unwrap();
    let f = resp.failure.as_ref().unwrap();
    assert_eq!(f.metadata["reason"], "request_failed");
    assert!(resp.checkpoint.is_none());
}

#[tokio::test]
async fn cancellation_interrupts_the_turn_and_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let stdin = dir.path().join("stdin.jsonl");
    // The server hangs mid-turn (after turn/started) and ignores SIGTERM.
    let lines = frames(CAPTURE);
    let upto = lines
        .iter()
        .filter(|(d, _)| *d == Direction::CliToSdk)
        .position(|(_, l)| l.contains("\"turn/started\""))
        .unwrap()
        + 1;
    let agent = Agent::new(on_fake(
        &capture_path(),
        &format!(
            "--truncate-after {upto} --hang --ignore-sigterm --record-stdin {}",
            stdin.display()
        ),
    ));
    let mut stream = agent.stream("hi");
    let mut pid = None;
    let started = std::time::Instant::now();
    while let Some(ev) = stream.next().await {
        if let Event::ProcessInfo(p) = &ev
            && p.kind == agent_adaptor_core::ProcessKind::Spawn
        {
            pid = p.metadata.get("pid").cloned();
        }
        // The turn started (a step notice): the server hangs from here.
        if matches!(&ev, Event::Notice(n) if n.kind == agent_adaptor_core::notice_kind::STEP) {
            stream.cancel();
        }
    }
    let err = stream.result().await.unwrap_err();
    assert_eq!(err.as_run_error().unwrap().reason, FailureReason::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));
    let sent = recorded(&stdin);
    let interrupt = sent
        .iter()
        .find(|f| f["method"] == "turn/interrupt")
        .expect("turn/interrupt was sent");
    assert_eq!(
        interrupt["params"],
        json!({"threadId": THREAD, "turnId": TURN})
    );
    let pid = pid.unwrap();
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z ")),
        "the server is gone"
    );
}

/// A transcript of a resume the server rejects (as 0.171 answers an unknown
/// thread id).
fn rejected_resume(dir: &Path) -> PathBuf {
    let f = frames(CAPTURE);
    let text = [
        format!("C->S {}", f[0].1),
        format!("S->C {}", f[1].1),
        "C->S {\"method\":\"initialized\"}".to_owned(),
        "C->S {\"id\":2,\"method\":\"thread/resume\",\"params\":{\"threadId\":\"01a2292b-0000-7242-8d5c-7e4f22e95d15\"}}".to_owned(),
        "S->C {\"error\":{\"code\":-32600,\"message\":\"no rollout found for thread id 01a2292b-0000-7242-8d5c-7e4f22e95d15\"},\"id\":2}".to_owned(),
    ]
    .join("\n") + "\n";
    let path = dir.join("resume-rejected.transcript");
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn an_unknown_thread_is_a_typed_resume_rejection() {
    let dir = tempfile::tempdir().unwrap();
    let path = rejected_resume(dir.path());
    let mut check = SchemaCheck::new();
    let text = std::fs::read_to_string(&path).unwrap();
    check.frames(text.lines().map(|l| match l.split_once(' ').unwrap() {
        ("C->S", f) => (Dir::Client, f),
        (_, f) => (Dir::Server, f),
    }));
    let mut req = Request::new("run_0000000000000002", "again");
    req.streaming = true;
    req.session = Some(SessionContext {
        state: Some(SessionState {
            resume_id: "01a2292b-0000-7242-8d5c-7e4f22e95d15".into(),
            ..Default::default()
        }),
        ..Default::default()
    });
    // A thread run is served by a resident server unless that is off; the
    // rejection is the same either way, and a resident one is not kept.
    for resident in [false, true] {
        let mut driver = on_fake(&path, "--stdin-check type");
        if !resident {
            let mut cfg = driver.config().clone();
            cfg.resident = false;
            driver = codex::driver(cfg);
        }
        let trace = record_run(&driver, req.clone(), Duration::from_secs(60)).await;
        let resp = trace.response().unwrap();
        let f = resp.failure.as_ref().unwrap();
        assert_eq!(f.code, FailureCode::Other(RESUME_REJECTED.into()));
        assert!(f.message.contains("no rollout found"), "{}", f.message);
        assert!(resp.checkpoint.is_none());
        if resident {
            assert_eq!(resp.exit_code, None, "the turn ended at the failure");
            assert_eq!(driver.idle_processes(), 0, "a failed turn is not kept");
        } else {
            assert_eq!(
                resp.exit_code,
                Some(0),
                "the server exits once stdin closes"
            );
        }
    }
}

#[tokio::test]
async fn an_unknown_server_request_is_answered_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let stdin = dir.path().join("stdin.jsonl");
    let path = variant(dir.path(), "ask-user", |mut f| {
        let at = f
            .iter()
            .position(|(_, l)| l.contains("\"turn/started\""))
            .unwrap()
            + 1;
        f.insert(at, (Direction::CliToSdk, json!({"id": 7, "method": "item/tool/requestUserInput", "params": {"threadId": THREAD, "turnId": TURN, "itemId": "q1", "questions": []}}).to_string()));
        f.insert(
            at + 1,
            (
                Direction::SdkToCli,
                json!({"id": 7, "error": {"code": -32601, "message": "x"}}).to_string(),
            ),
        );
        f
    });
    let agent = Agent::new(on_fake(
        &path,
        &format!("--stdin-check type --record-stdin {}", stdin.display()),
    ));
    let (_, outcome) = drain(&agent, "hi", true).await;
    assert_eq!(outcome.unwrap().text, "Tool said hi.", "the turn went on");
    let sent = recorded(&stdin);
    let answer = sent.iter().find(|f| f["id"] == 7).unwrap();
    assert_eq!(answer["error"]["code"], -32601);
}

#[tokio::test]
async fn a_tool_call_without_tools_or_without_a_call_id_is_still_answered() {
    // A run without host tools is answered an unknown-tool error the model
    // reads; a request that names no call gets a JSON-RPC error. Neither is
    // left pending, and the turn goes on.
    let dir = tempfile::tempdir().unwrap();
    let stdin = dir.path().join("stdin.jsonl");
    let path = variant(dir.path(), "tool-calls", |mut f| {
        let at = f
            .iter()
            .position(|(_, l)| l.contains("\"turn/started\""))
            .unwrap()
            + 1;
        let frames = [
            (
                Direction::CliToSdk,
                json!({"id": 8, "method": "item/tool/call", "params": {"threadId": THREAD, "turnId": TURN, "tool": "lookup", "arguments": {}}}),
            ),
            (
                Direction::SdkToCli,
                json!({"id": 8, "error": {"code": -32602, "message": "x"}}),
            ),
            (
                Direction::CliToSdk,
                json!({"id": 9, "method": "item/tool/call", "params": {"threadId": THREAD, "turnId": TURN, "callId": "call_9", "tool": "lookup", "arguments": {}}}),
            ),
            (
                Direction::SdkToCli,
                json!({"id": 9, "result": {"contentItems": [], "success": false}}),
            ),
        ];
        for (n, (d, v)) in frames.into_iter().enumerate() {
            f.insert(at + n, (d, v.to_string()));
        }
        f
    });
    let agent = Agent::new(on_fake(
        &path,
        &format!("--stdin-check type --record-stdin {}", stdin.display()),
    ));
    let (_, outcome) = drain(&agent, "hi", true).await;
    assert_eq!(outcome.unwrap().text, "Tool said hi.", "the turn went on");
    let sent = recorded(&stdin);
    let malformed = sent.iter().find(|f| f["id"] == 8).unwrap();
    assert_eq!(malformed["error"]["code"], -32602);
    let unknown = sent.iter().find(|f| f["id"] == 9).unwrap();
    assert_eq!(unknown["result"]["success"], false);
    assert_eq!(
        unknown["result"]["contentItems"][0]["text"],
        "no host tool named \"lookup\""
    );
}

/// A `dynamicToolCall` item as 0.171 sends it (observed against the mock).
fn dynamic_item(phase: &str, done: Option<(&str, bool)>) -> String {
    let (status, content, success) = match done {
        Some((text, ok)) => (
            if ok { "completed" } else { "failed" },
            json!([{"type": "inputText", "text": text}]),
            json!(ok),
        ),
        None => ("inProgress", Value::Null, Value::Null),
    };
    note(
        phase,
        json!({"threadId": THREAD, "turnId": TURN, "item": {
            "type": "dynamicToolCall", "id": "call_dyn1", "namespace": null, "tool": "lookup",
            "arguments": {"order": "A-17"}, "status": status, "contentItems": content,
            "success": success, "durationMs": null, "startedAtMs": 1, "completedAtMs": null
        }, "startedAtMs": 1}),
    )
}

fn tool_call_request() -> String {
    json!({"method": "item/tool/call", "id": 0, "params": {"threadId": THREAD, "turnId": TURN,
        "callId": "call_dyn1", "namespace": null, "tool": "lookup", "arguments": {"order": "A-17"}}})
    .to_string()
}

/// A tool call's start: name, arguments, scope.
type Start = (String, Option<Value>, ToolScope);

/// The host tool call's start and result payloads.
fn host_call(payloads: &[StreamPayload]) -> (Vec<Start>, Vec<Value>) {
    let starts = payloads
        .iter()
        .filter_map(|p| match &p.kind {
            StreamKind::ToolCallStart {
                name, args, scope, ..
            } => Some((name.clone(), args.clone(), scope.clone())),
            _ => None,
        })
        .collect();
    let results = payloads
        .iter()
        .filter_map(|p| match &p.kind {
            StreamKind::ToolCallResult { result, .. } => result.clone(),
            _ => None,
        })
        .collect();
    (starts, results)
}

#[test]
fn a_dynamic_tool_call_is_a_host_tool_call_with_its_input_and_output() {
    let mut p = AppServerParser::new(true, false, None);
    let mut outs = opened(&mut p);
    outs.extend(p.line(turn_started().as_bytes()));
    outs.extend(p.line(dynamic_item("item/started", None).as_bytes()));
    // The request goes to the transport, which runs the tool and tells the
    // parser what it answered before the item completes.
    let request = p.line(tool_call_request().as_bytes());
    assert!(
        matches!(&request[..], [Out::Control(ControlFrame::Request { method, .. })] if method == "item/tool/call")
    );
    p.host_tool_answered(
        "call_dyn1",
        agent_adaptor_driver::HostToolResult::ok(json!({"status": "shipped"})),
    );
    outs.extend(
        p.line(dynamic_item("item/completed", Some((r#"{"status":"shipped"}"#, true))).as_bytes()),
    );
    outs.extend(p.line(turn_completed("completed", Value::Null).as_bytes()));
    let (payloads, parsed) = checked(outs, &mut p, 0);
    let (starts, results) = host_call(&payloads);
    assert_eq!(
        starts,
        [(
            "lookup".to_owned(),
            Some(json!({"order": "A-17"})),
            ToolScope::Host
        )]
    );
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["output"], json!({"status": "shipped"}));
    assert_eq!(results[0]["host_status"], "ok");
    assert_eq!(results[0]["success"], true);
    let items = parsed.transcript.to_vec().unwrap();
    let call = items
        .iter()
        .find(|i| i.kind == TranscriptKind::ToolCall)
        .unwrap();
    assert_eq!(call.tool_name.as_deref(), Some("lookup"));
    assert_eq!(call.input, Some(json!({"order": "A-17"})));
    let result = items
        .iter()
        .find(|i| i.kind == TranscriptKind::ToolResult)
        .unwrap();
    assert_eq!(result.text, r#"{"status":"shipped"}"#);
    assert!(!result.is_error);
}

#[test]
fn a_failed_dynamic_tool_call_is_an_error_result_even_untold() {
    // Only the completion was seen (no start, no answer from this
    // transport): the call still starts in the host scope and ends as an
    // error with the text the model read.
    let mut p = AppServerParser::new(true, false, None);
    let mut outs = opened(&mut p);
    outs.extend(p.line(turn_started().as_bytes()));
    outs.extend(
        p.line(dynamic_item("item/completed", Some(("denied by the host", false))).as_bytes()),
    );
    outs.extend(p.line(turn_completed("completed", Value::Null).as_bytes()));
    let (payloads, parsed) = checked(outs, &mut p, 0);
    let (starts, results) = host_call(&payloads);
    assert_eq!(starts[0].2, ToolScope::Host);
    assert_eq!(results[0]["output"], Value::Null);
    assert_eq!(results[0]["host_status"], Value::Null);
    assert_eq!(results[0]["content"], "denied by the host");
    let items = parsed.transcript.to_vec().unwrap();
    let result = items
        .iter()
        .find(|i| i.kind == TranscriptKind::ToolResult)
        .unwrap();
    assert!(result.is_error);
    assert_eq!(result.text, "denied by the host");
}

#[test]
fn dynamic_tool_frames_validate_against_the_schema() {
    let mut check = SchemaCheck::new();
    check.frames([
        (Dir::Server, tool_call_request().as_str()),
        (Dir::Server, dynamic_item("item/started", None).as_str()),
        (
            Dir::Client,
            &json!({"id": 0, "result": agent_adaptor_drivers::codex::appserver::dynamic_tools::response(
                &agent_adaptor_driver::HostToolResult::ok(json!({"n": 1})),
            )})
            .to_string(),
        ),
    ]);
    assert_eq!(check.checked.get("DynamicToolCallResponse"), Some(&1));
}

#[test]
fn host_tools_go_as_dynamic_tools_where_the_app_server_runs() {
    use agent_adaptor_driver::HostToolChannel;
    for (transport, channel) in [
        (Transport::Auto, HostToolChannel::DynamicTools),
        (Transport::AppServer, HostToolChannel::DynamicTools),
        (Transport::Exec, HostToolChannel::LoopbackMcp),
    ] {
        assert_eq!(codex::host_tool_channel(transport), channel);
        let driver = codex::driver(codex::Config {
            transport,
            ..Default::default()
        });
        assert_eq!(driver.descriptor().host_tools, channel, "{transport:?}");
    }
}

#[test]
fn capability_and_descriptor_describe_the_streaming_transport() {
    let auto = codex::driver(codex::Config::default());
    assert_eq!(auto.stream_capability(), Some(APP_SERVER_CAPABILITY));
    assert!(auto.descriptor().run_policy.permission.ask);
    assert!(auto.descriptor().structured_output.json_schema_native);
    let exec = codex::driver(codex::Config {
        transport: Transport::Exec,
        ..Default::default()
    });
    assert_eq!(exec.stream_capability(), Some(codex::EXEC_CAPABILITY));
    assert!(!exec.descriptor().run_policy.permission.ask);
}

/// RUN-05: a run cancelled mid-turn (the CLI printed a little, then hangs)
/// returns within the grace, and nothing of the CLI's process group is left.
#[tokio::test]
async fn conformance_cancellation_mid_turn() {
    let report = test_driver(
        || on_fake(&capture_path(), "--truncate-after 3 --hang"),
        Options::new().cancel(CancelCase::new("cancel mid-turn", "hi", true, 2)),
    )
    .await;
    assert!(report.passed("RUN-05"), "codex app-server:\n{report}");
}

/// `turn/plan/updated` is the agent's whole todo list (a repeat left out);
/// an `mcpToolCall` item is also a capability invocation, started with the
/// call and ended with its result; both pass OBS-01–06.
#[test]
fn plan_updates_are_todo_snapshots_and_mcp_calls_are_invocations() {
    let plan = |second: &str| {
        note(
            "turn/plan/updated",
            json!({"threadId": THREAD, "turnId": TURN, "explanation": null, "plan": [
                {"step": "Read the code", "status": "completed"},
                {"step": "Fix the bug", "status": second}]}),
        )
    };
    let mcp = |method: &str, status: &str| {
        note(
            method,
            json!({"threadId": THREAD, "turnId": TURN, "item": {"type": "mcpToolCall", "id": "mcp1",
                "server": "files", "tool": "read_file", "arguments": {"path": "a"},
                "status": status, "result": null, "error": {"message": "no such file"}}}),
        )
    };
    let lines = [
        turn_started(),
        plan("pending"),
        plan("pending"),
        mcp("item/started", "inProgress"),
        mcp("item/completed", "failed"),
        plan("inProgress"),
        turn_completed("completed", Value::Null),
    ];
    let mut p = AppServerParser::new(true, false, None);
    let (payloads, _) = run_lines(&mut p, &lines, 0);
    let todos: Vec<_> = payloads
        .iter()
        .filter_map(|p| match &p.kind {
            StreamKind::TodoUpdated(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(todos.len(), 2);
    assert_eq!((todos[0].revision, todos[1].revision), (1, 2));
    assert_eq!(todos[0].items[0].content, "Read the code");
    assert_eq!(
        todos[1].items[1].status,
        agent_adaptor_driver::TodoStatus::InProgress
    );
    assert_eq!(todos[0].source.provider_protocol, "codex.turn/plan/updated");
    let caps: Vec<_> = payloads
        .iter()
        .filter_map(|p| match &p.kind {
            StreamKind::Capability(c) => Some((
                c.phase,
                c.name.as_str(),
                c.server.as_deref(),
                c.error.is_some(),
            )),
            _ => None,
        })
        .collect();
    use agent_adaptor_driver::CapabilityPhase::{Failed, Started};
    assert_eq!(
        caps,
        [
            (Started, "read_file", Some("files"), false),
            (Failed, "read_file", Some("files"), true)
        ]
    );
}
