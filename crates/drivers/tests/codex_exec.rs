//! The Codex exec transport: its parser on every recorded capture, the
//! driver against the fake CLI (conformance, core pipeline, failure paths),
//! and fuzzing.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod group_watch;

use std::time::Duration;

use agent_adaptor_conformance::fuzz::{FuzzConfig, fuzz_inputs};
use agent_adaptor_conformance::{CancelCase, Expect, Options, RunCase, record_run, test_driver};
use agent_adaptor_core::{Agent, Event, FailureReason, Runner};
use agent_adaptor_driver::{
    LifecycleChecker, Request, RunEvent, SessionContext, StreamCapability, StreamKind,
    TranscriptKind,
};
use agent_adaptor_drivers::codex::exec::{ExecParsed, ExecParser};
use agent_adaptor_drivers::codex::{self, wire::ExecUsage};
use agent_adaptor_drivers::exit::ExitFacts;
use agent_adaptor_drivers::pump::{LineProtocol, Out};
use agent_adaptor_testkit::fixtures;
use agent_adaptor_testkit::replay::{OPTS_ENV, fake_cli_binary};
use group_watch::{GroupWatch, WithGroupMember};

fn parse(
    rel: &str,
    payloads: bool,
    exit: i32,
    previous: Option<ExecUsage>,
) -> (Vec<Out>, ExecParsed) {
    let capture = fixtures::load(rel).unwrap();
    let mut p = ExecParser::new(payloads, previous);
    let mut outs = Vec::new();
    for line in capture.stdout_lines() {
        outs.extend(p.line(line.as_bytes()));
    }
    let (tail, parsed) = p.finish(ExitFacts::exited(exit));
    outs.extend(tail);
    let mut rules = LifecycleChecker::new(StreamCapability {
        native: true,
        reasoning: true,
        ..Default::default()
    });
    let mut items = Vec::new();
    for o in &outs {
        match o {
            Out::Stream(s) => rules.check(s).unwrap_or_else(|v| panic!("{rel}: {v}")),
            Out::Event(RunEvent::Item(i)) => {
                i.validate().unwrap();
                items.push((**i).clone());
            }
            _ => {}
        }
    }
    if payloads {
        rules.finish(true).unwrap();
    }
    assert_eq!(items, parsed.transcript, "{rel}: mirror");
    (outs, parsed)
}

#[test]
fn basic_answer_reasoning_usage_and_checkpoint() {
    for payloads in [false, true] {
        let (outs, p) = parse("codex/exec-basic.jsonl", payloads, 0, None);
        assert_eq!(p.output, "Hello from mock.");
        let u = p.usage.unwrap();
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.reasoning_tokens),
            (Some(100), Some(10), Some(3))
        );
        assert_eq!(u.cached_input_tokens, Some(20));
        let cp = p.checkpoint.unwrap();
        assert_eq!(
            cp.state.as_ref().unwrap().resume_id,
            "01a228cc-7767-7ef2-a447-babaa3572b75"
        );
        assert_eq!(p.terminal.as_ref().unwrap().event, "turn.completed");
        // The unknown-model error item is a warning, not a failure.
        assert!(p.failure.is_none());
        assert!(
            outs.iter()
                .any(|o| matches!(o, Out::Event(RunEvent::Lifecycle(e))
            if e.metadata.get("kind").map(String::as_str) == Some("warning")))
        );
    }
}

/// Parse `rel` with payloads on, telling the parser that nobody observes
/// them from line `unobserved_from` on; check the payload lifecycle, and
/// return the payloads and the parse.
fn parse_observed(rel: &str, unobserved_from: usize) -> (Vec<StreamKind>, ExecParsed) {
    let capture = fixtures::load(rel).unwrap();
    let mut p = ExecParser::new(true, None);
    let mut outs = Vec::new();
    for (n, line) in capture.stdout_lines().into_iter().enumerate() {
        p.observe(n < unobserved_from);
        outs.extend(p.line(line.as_bytes()));
    }
    let (tail, parsed) = p.finish(ExitFacts::exited(0));
    outs.extend(tail);
    let mut rules = LifecycleChecker::new(StreamCapability::FULL);
    let mut kinds = Vec::new();
    for o in outs {
        if let Out::Stream(s) = o {
            rules
                .check(&s)
                .unwrap_or_else(|v| panic!("{rel}, unobserved from {unobserved_from}: {v}"));
            kinds.push(s.kind);
        }
    }
    rules.finish(true).unwrap();
    (kinds, parsed)
}

#[test]
fn unobserved_payloads_leave_out_lifecycles_but_nothing_else() {
    for rel in [
        "codex/exec-basic.jsonl",
        "codex/exec-tool-bypass.jsonl",
        "codex/exec-resume.jsonl",
        "codex/exec-http400.jsonl",
    ] {
        let lines = fixtures::load(rel).unwrap().stdout_lines().len();
        let (all, want) = parse_observed(rel, usize::MAX);
        // Nobody watching from the start: only the run lifecycle is built.
        let (none, got) = parse_observed(rel, 0);
        assert_eq!(got, want, "{rel}: every layer is the same");
        assert!(
            matches!(none.first(), Some(StreamKind::RunStarted)),
            "{rel}"
        );
        assert!(
            none.iter().skip(1).all(|k| matches!(
                k,
                StreamKind::RunFinished { .. } | StreamKind::RunError { .. }
            )),
            "{rel}: {none:?}"
        );
        assert_eq!(none.len(), 2, "{rel}: {none:?}");
        assert!(all.len() > none.len(), "{rel}");
        // Watching stops after any line: what was started is completed (the
        // checker above), nothing new starts, and the parse is the same.
        for from in 1..=lines {
            let (some, got) = parse_observed(rel, from);
            assert_eq!(got, want, "{rel}, unobserved from {from}");
            assert!(some.len() <= all.len(), "{rel}, unobserved from {from}");
        }
    }
}

#[test]
fn unobserved_payloads_still_end_a_run_without_its_terminal_in_failure() {
    let capture = fixtures::load("codex/exec-tool-bypass.jsonl").unwrap();
    let lines = capture.stdout_lines();
    // Cut before `turn.completed`, and after the tool started (it is open).
    let cut = lines
        .iter()
        .position(|l| l.contains("turn.completed"))
        .unwrap();
    for unobserved_from in 0..=cut {
        let mut p = ExecParser::new(true, None);
        let mut outs = Vec::new();
        for (n, line) in lines[..cut].iter().enumerate() {
            p.observe(n < unobserved_from);
            outs.extend(p.line(line.as_bytes()));
        }
        let (tail, parsed) = p.finish(ExitFacts::exited(0));
        outs.extend(tail);
        let mut rules = LifecycleChecker::new(StreamCapability::FULL);
        for o in &outs {
            if let Out::Stream(s) = o {
                rules
                    .check(s)
                    .unwrap_or_else(|v| panic!("from {unobserved_from}: {v}"));
            }
        }
        rules.finish(true).unwrap();
        let failure = parsed.failure.expect("a missing terminal is a failure");
        assert_eq!(failure.metadata["reason"], "missing_terminal");
        assert!(parsed.checkpoint.is_none());
        assert!(matches!(
            outs.iter().rev().find_map(|o| match o {
                Out::Stream(s) => Some(&s.kind),
                _ => None,
            }),
            Some(StreamKind::RunError { .. })
        ));
    }
}

#[test]
fn a_tool_call_runs_and_its_output_comes_back() {
    let (outs, p) = parse("codex/exec-tool-bypass.jsonl", true, 0, None);
    assert_eq!(p.output, "Tool said hi.");
    let result = p
        .transcript
        .as_slice()
        .unwrap()
        .iter()
        .find(|i| i.kind == TranscriptKind::ToolResult)
        .unwrap();
    assert_eq!(result.text, "hi-from-tool\n");
    assert!(!result.is_error);
    assert!(outs.iter().any(|o| matches!(o, Out::Stream(s)
        if matches!(&s.kind, StreamKind::ToolCallStart { name, .. } if name == "command_execution"))));
    assert!(outs.iter().any(
        |o| matches!(o, Out::Stream(s) if matches!(s.kind, StreamKind::ToolCallResult { .. }))
    ));
}

#[test]
fn resumed_turns_report_their_own_usage() {
    let previous = ExecUsage {
        input_tokens: 200,
        cached_input_tokens: 40,
        output_tokens: 20,
        reasoning_output_tokens: 6,
    };
    let (_, p) = parse("codex/exec-resume.jsonl", false, 0, Some(previous));
    let u = p.usage.unwrap();
    assert_eq!(
        (u.input_tokens, u.cached_input_tokens, u.output_tokens),
        (Some(200), Some(40), Some(20))
    );
    // The checkpoint carries the cumulative totals for the next turn.
    let data = &p.checkpoint.unwrap().state.unwrap().data;
    assert_eq!(data["usage.input_tokens"], "400");
}

#[test]
fn failures_are_failures_with_readable_messages() {
    for (rel, want) in [
        ("codex/exec-http400.jsonl", "mock http failure"),
        (
            "codex/exec-response-failed.jsonl",
            "stream disconnected before completion: mock sse failure",
        ),
    ] {
        let (_, p) = parse(rel, true, 1, None);
        let f = p.failure.unwrap();
        assert_eq!(f.message, want, "{rel}");
        assert!(p.checkpoint.is_none());
        assert_eq!(p.terminal.unwrap().event, "turn.failed");
    }
}

#[test]
fn output_schema_answers_are_the_json_text() {
    let (_, p) = parse("codex/exec-output-schema.jsonl", false, 0, None);
    assert_eq!(p.output, "{\"answer\": \"ok\"}");
}

#[test]
fn a_missing_terminal_is_a_failure() {
    let capture = fixtures::load("codex/exec-basic.jsonl").unwrap();
    let lines = capture.stdout_lines();
    let mut p = ExecParser::new(true, None);
    for l in &lines[..lines.len() - 1] {
        p.line(l.as_bytes());
    }
    let (_, parsed) = p.finish(ExitFacts::exited(0));
    assert_eq!(
        parsed.failure.unwrap().metadata["reason"],
        "missing_terminal"
    );
    assert!(parsed.checkpoint.is_none());
}

#[test]
fn the_parser_survives_mutated_captures() {
    let names = [
        "exec-basic",
        "exec-http400",
        "exec-resume",
        "exec-tool-bypass",
        "exec-response-failed",
    ];
    let seeds: Vec<Vec<u8>> = names
        .iter()
        .map(|n| {
            fixtures::load(format!("codex/{n}.jsonl"))
                .unwrap()
                .stdout_bytes()
        })
        .collect();
    let seeds: Vec<&[u8]> = seeds.iter().map(Vec::as_slice).collect();
    fuzz_inputs(
        &seeds,
        FuzzConfig {
            cases: 300,
            ..FuzzConfig::default()
        },
        |input| {
            let mut p = ExecParser::new(true, None);
            let mut outs = Vec::new();
            for l in input.split(|b| *b == b'\n') {
                outs.extend(p.line(l));
            }
            let (tail, parsed) = p.finish(ExitFacts::exited(0));
            outs.extend(tail);
            let mut rules = LifecycleChecker::new(StreamCapability::FULL);
            for o in &outs {
                if let Out::Stream(s) = o {
                    rules.check(s).unwrap_or_else(|v| panic!("{v}"));
                }
            }
            rules.finish(true).unwrap();
            let _ = parsed;
        },
    );
}

fn on_fake(fixture: &str, opts: &str) -> codex::CodexDriver {
    // These are the exec transport's tests: force it (a streaming request
    // would otherwise go to the app-server, codex_appserver.rs).
    let mut cfg = codex::Config {
        command: fake_cli_binary().unwrap(),
        transport: codex::Transport::Exec,
        ..Default::default()
    };
    cfg.env.insert(
        OPTS_ENV.into(),
        format!("--fixture {} {opts}", fixtures::path(fixture).display()),
    );
    codex::driver(cfg)
}

#[tokio::test]
async fn conformance_on_every_capture() {
    for (fixture, expect, opts) in [
        (
            "codex/exec-basic.jsonl",
            Expect::Success,
            "--wait-stdin-eof",
        ),
        (
            "codex/exec-tool-bypass.jsonl",
            Expect::Success,
            "--wait-stdin-eof",
        ),
        ("codex/exec-http400.jsonl", Expect::Failure, "--exit-code 1"),
        (
            "codex/exec-response-failed.jsonl",
            Expect::Failure,
            "--exit-code 1",
        ),
    ] {
        let report = test_driver(
            || on_fake(fixture, opts),
            Options::new()
                .run(RunCase::new("streaming", "hi", true, expect))
                .run(RunCase::new("batch", "hi", false, expect))
                .run_timeout(Duration::from_secs(60)),
        )
        .await;
        report.assert_passed();
    }
}

#[tokio::test]
async fn stdin_is_closed_so_codex_never_hangs() {
    // The fake CLI, like codex, prints nothing until stdin reaches EOF.
    let agent = Agent::new(on_fake("codex/exec-basic.jsonl", "--wait-stdin-eof"));
    let result = agent.run("hi").await.unwrap();
    assert_eq!(result.text, "Hello from mock.");
    assert!(result.checkpoint().is_some());
}

#[tokio::test]
async fn an_http_error_is_a_run_error_with_the_message() {
    let agent = Agent::new(on_fake("codex/exec-http400.jsonl", "--exit-code 1"));
    let err = agent.run("hi").await.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::AgentError);
    assert_eq!(run.message, "mock http failure");
}

#[tokio::test]
async fn cancellation_stops_a_hanging_codex() {
    let member = WithGroupMember::wrapping(&fake_cli_binary().unwrap());
    let mut cfg = codex::Config {
        command: member.path.clone(),
        transport: codex::Transport::Exec,
        ..Default::default()
    };
    cfg.env.insert(
        OPTS_ENV.into(),
        format!(
            "--fixture {} --hang --ignore-sigterm",
            fixtures::path("codex/exec-basic.jsonl").display()
        ),
    );
    let agent = Agent::new(codex::driver(cfg));
    let mut stream = agent.stream("hi");
    let mut events = Vec::new();
    let mut pid = None;
    let mut watch = None;
    while let Some(e) = futures::StreamExt::next(&mut stream).await {
        pid = pid.or_else(|| group_watch::spawned_pid(&e));
        // Everything was printed and the CLI hangs, ignoring SIGTERM: cancel
        // once the turn's terminal item arrived.
        if watch.is_none()
            && matches!(&e, Event::Notice(n) if n.item.as_ref().is_some_and(|i| i.kind == TranscriptKind::Result))
        {
            watch = Some(GroupWatch::of(pid.expect("the spawn event came first")));
            stream.cancel();
        }
        events.push(e);
    }
    assert!(matches!(events.last(), Some(Event::RunFinished(_))));
    let err = stream.result().await.unwrap_err();
    assert_eq!(err.as_run_error().unwrap().reason, FailureReason::Cancelled);
    let watch = watch.expect("the CLI was watched at the cancel");
    watch.assert_had_other_members();
    watch.assert_gone("codex exec").await;
}

#[tokio::test]
async fn resume_passes_the_thread_and_diffs_usage() {
    let dir = tempfile::tempdir().unwrap();
    let args = dir.path().join("args.jsonl");
    let driver = on_fake(
        "codex/exec-resume.jsonl",
        &format!("--args-out {}", args.display()),
    );
    let mut req = Request::new("run_resume00000000", "again");
    req.session = Some(SessionContext {
        state: Some(agent_adaptor_driver::SessionState {
            resume_id: "01a228cc-9bb7-7952-8aa3-50b74990c4fe".into(),
            display_id: String::new(),
            data: [
                ("usage.input_tokens".to_owned(), "200".to_owned()),
                ("usage.output_tokens".to_owned(), "20".to_owned()),
            ]
            .into(),
        }),
        ..Default::default()
    });
    let trace = record_run(&driver, req, Duration::from_secs(60)).await;
    let resp = trace.response().unwrap();
    assert_eq!(resp.usage.as_ref().unwrap().input_tokens, Some(200));
    let recorded = std::fs::read_to_string(&args).unwrap();
    assert!(
        recorded.contains("resume") && recorded.contains("01a228cc-9bb7-7952-8aa3-50b74990c4fe"),
        "{recorded}"
    );
}

#[tokio::test]
async fn a_non_zero_exit_fails_even_after_turn_completed() {
    let agent = Agent::new(on_fake("codex/exec-basic.jsonl", "--exit-code 2"));
    let err = agent.run("hi").await.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert_eq!(run.reason, FailureReason::AgentError);
    assert!(
        run.result.as_ref().unwrap().checkpoint().is_none(),
        "no checkpoint after a non-zero exit"
    );
}

#[tokio::test]
async fn a_malformed_line_is_a_notice_not_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = dir.path().join("noisy.jsonl");
    let mut lines: Vec<String> = fixtures::load("codex/exec-basic.jsonl")
        .unwrap()
        .stdout_lines()
        .iter()
        .map(|s| s.to_string())
        .collect();
    lines.insert(1, "WARNING: proceeding".into());
    lines.insert(2, "{\"type\":\"item.completed\",".into());
    std::fs::write(&fixture, lines.join("\n") + "\n").unwrap();
    let trace = record_run(
        &on_fake(fixture.to_str().unwrap(), ""),
        Request::new("run_0000000000000003", "hi"),
        Duration::from_secs(60),
    )
    .await;
    let resp = trace.response().unwrap();
    assert!(resp.failure.is_none());
    assert_eq!(resp.output, "Hello from mock.");
    assert!(resp.checkpoint.is_some());
    let notices = trace
        .events()
        .filter(|e| matches!(e, RunEvent::Lifecycle(n) if n.text.starts_with("codex: ")))
        .count();
    assert_eq!(notices, 2, "both bad lines are reported");
}

#[tokio::test]
async fn an_output_schema_goes_to_a_file_and_the_answer_is_structured() {
    let dir = tempfile::tempdir().unwrap();
    let args = dir.path().join("args.jsonl");
    let driver = on_fake(
        "codex/exec-output-schema.jsonl",
        &format!("--args-out {}", args.display()),
    );
    let mut req = Request::new("run_0000000000000004", "JSON please");
    let schema = r#"{"type":"object","properties":{"answer":{"type":"string"}}}"#;
    req.output_schema = Some(agent_adaptor_driver::OutputSchema {
        format: "json_schema".into(),
        schema_json: schema.into(),
        name: String::new(),
        description: String::new(),
        on_invalid: Default::default(),
    });
    let trace = record_run(&driver, req, Duration::from_secs(60)).await;
    let resp = trace.response().unwrap();
    let so = resp.structured_output.as_ref().unwrap();
    assert!(so.valid);
    assert_eq!(so.value, Some(serde_json::json!({"answer": "ok"})));
    let recorded: Vec<serde_json::Value> = std::fs::read_to_string(&args)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let argv: Vec<&str> = recorded.iter().filter_map(|r| r["arg"].as_str()).collect();
    let at = argv.iter().position(|a| *a == "--output-schema").unwrap();
    let file = argv[at + 1];
    assert!(
        !std::path::Path::new(file).exists(),
        "the schema file is removed after the run"
    );
}

/// Parse `lines` in bursts of `size` (`LineProtocol::lines_into`).
fn parse_in_bursts(lines: &[Vec<u8>], size: usize) -> (Vec<Out>, ExecParsed) {
    let mut p = ExecParser::new(true, None);
    let mut outs = Vec::new();
    for burst in lines.chunks(size) {
        let raws: Vec<&[u8]> = burst.iter().map(Vec::as_slice).collect();
        p.lines_into(&raws, &mut outs);
    }
    let (tail, parsed) = p.finish(ExitFacts::exited(0));
    outs.extend(tail);
    (outs, parsed)
}

#[test]
fn a_burst_means_what_its_lines_mean_one_by_one() {
    for rel in [
        "codex/exec-basic.jsonl",
        "codex/exec-tool-bypass.jsonl",
        "codex/exec-resume.jsonl",
        "codex/exec-http400.jsonl",
        "codex/exec-output-schema.jsonl",
        "codex/exec-response-failed.jsonl",
    ] {
        let mut lines: Vec<Vec<u8>> = fixtures::load(rel)
            .unwrap()
            .stdout_lines()
            .iter()
            .map(|l| l.as_bytes().to_vec())
            .collect();
        // Blank, non-JSON and malformed lines inside a burst too.
        lines.insert(1, b"   ".to_vec());
        lines.insert(2, b"not json".to_vec());
        lines.insert(3, b"{\"type\":".to_vec());
        let one_by_one = parse_in_bursts(&lines, 1);
        assert!(one_by_one.0.len() > lines.len(), "{rel}: a real parse");
        for size in [2, 3, 7, lines.len()] {
            assert_eq!(
                parse_in_bursts(&lines, size),
                one_by_one,
                "{rel}, bursts of {size}"
            );
        }
    }
}

/// RUN-05: a run cancelled mid-turn (the CLI printed a little, then hangs)
/// returns within the grace, and nothing of the CLI's process group is left.
#[tokio::test]
async fn conformance_cancellation_mid_turn() {
    let report = test_driver(
        || on_fake("codex/exec-basic.jsonl", "--truncate-after 2 --hang"),
        Options::new().cancel(CancelCase::new("cancel mid-turn", "hi", true, 2)),
    )
    .await;
    assert!(report.passed("RUN-05"), "codex exec:\n{report}");
}

/// exec's `todo_list` item (started, updated, completed) is the agent's
/// whole todo list: done items completed, the rest pending; an unchanged
/// completion is left out; an `mcp_tool_call` is a capability invocation.
#[test]
fn todo_list_items_are_todo_snapshots_and_mcp_calls_are_invocations() {
    let todo = |event: &str, done: bool| {
        serde_json::json!({"type": event, "item": {"id": "item_0", "type": "todo_list", "items": [
            {"text": "Inspect", "completed": true}, {"text": "Report", "completed": done}]}})
        .to_string()
    };
    let mcp = |event: &str, status: &str| {
        serde_json::json!({"type": event, "item": {"id": "item_1", "type": "mcp_tool_call",
            "server": "files", "tool": "read_file", "arguments": {}, "result": {"content": []},
            "error": null, "status": status}})
        .to_string()
    };
    let lines = [
        r#"{"type":"thread.started","thread_id":"t1"}"#.to_owned(),
        r#"{"type":"turn.started"}"#.to_owned(),
        todo("item.started", false),
        mcp("item.started", "in_progress"),
        mcp("item.completed", "completed"),
        todo("item.updated", true),
        todo("item.completed", true),
        r#"{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}"#.to_owned(),
    ];
    let mut p = ExecParser::new(true, None);
    let mut outs = Vec::new();
    for l in &lines {
        outs.extend(p.line(l.as_bytes()));
    }
    outs.extend(p.finish(ExitFacts::exited(0)).0);
    let mut rules = LifecycleChecker::new(codex::EXEC_CAPABILITY);
    let mut kinds = Vec::new();
    for o in outs {
        if let Out::Stream(s) = o {
            rules.check(&s).unwrap_or_else(|v| panic!("{v}: {s:?}"));
            kinds.push(s.kind);
        }
    }
    rules.finish(true).unwrap();
    let todos: Vec<_> = kinds
        .iter()
        .filter_map(|k| match k {
            StreamKind::TodoUpdated(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(todos.len(), 2);
    use agent_adaptor_driver::TodoStatus::{Completed, Pending};
    assert_eq!(
        todos
            .iter()
            .map(|t| (t.revision, t.items[1].status))
            .collect::<Vec<_>>(),
        [(1, Pending), (2, Completed)]
    );
    assert_eq!(todos[0].source.provider_protocol, "codex.todo_list");
    let caps = kinds
        .iter()
        .filter(|k| matches!(k, StreamKind::Capability(c) if c.server.as_deref() == Some("files")))
        .count();
    assert_eq!(caps, 2);
    assert!(!kinds.iter().any(|k| matches!(k, StreamKind::Custom { .. })));
}
