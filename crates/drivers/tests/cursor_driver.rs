//! The Cursor Agent driver. The CLI cannot run offline, so it is proven on
//! hand-written, protocol-accurate fixtures (`tests/fixtures/cursor/`, whose
//! README names the source of every shape): the parser on each of them,
//! fuzzing, and the driver against the fake CLI replaying them — the
//! conformance suite and the contract's paths through core (success, error
//! result, non-zero exit without a result, malformed lines, missing
//! checkpoint, cancellation).
#![cfg(feature = "cursor")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod group_watch;
mod host_tool_common;
mod jsonl_common;

use agent_adaptor_conformance::{CancelCase, Expect, Options, RunCase, record_run, test_driver};
use agent_adaptor_core::{Agent, Event, FailureReason, RunOptions, Runner};
use agent_adaptor_driver::{
    Driver, McpServer, McpTransport, Profile, Request, SessionContext, SessionState,
    StreamCapability, StreamKind, ToolScope, TranscriptKind,
};
use agent_adaptor_drivers::cursor::parse::{CursorParsed, CursorParser};
use agent_adaptor_drivers::cursor::{self, Config};
use agent_adaptor_drivers::pump::Out;
use agent_adaptor_testkit::replay::{ArgsRecord, OPTS_ENV, fake_cli_binary};
use futures::StreamExt;
use group_watch::{GroupWatch, WithGroupMember};
use jsonl_common::{drain, exit, fixture, lines, notices, parse_with, payloads};

/// All false: coarse lifecycles only.
const CAP: StreamCapability = StreamCapability {
    native: false,
    token_level: false,
    reasoning: false,
    tool_call_args: false,
    hitl: false,
    observation: agent_adaptor_driver::ObservationSupport::NONE,
};

/// Every fixture, with the exit code it is replayed with.
const FIXTURES: [(&str, i32); 6] = [
    ("own/cursor/success.jsonl", 0),
    ("own/cursor/tool-call.jsonl", 0),
    ("own/cursor/error-result.jsonl", 1),
    ("own/cursor/exit-without-result.jsonl", 1),
    ("own/cursor/malformed-line.jsonl", 0),
    ("own/cursor/third-party-shapes.jsonl", 0),
];

fn parse_lines(
    what: &str,
    lines: &[String],
    streaming: bool,
    code: i32,
) -> (Vec<Out>, CursorParsed) {
    parse_with(
        &mut CursorParser::new(streaming),
        what,
        lines,
        CAP,
        streaming,
        code,
    )
}

fn parse(name: &str, streaming: bool, code: i32) -> (Vec<Out>, CursorParsed) {
    parse_lines(name, &lines(name), streaming, code)
}

fn items(p: &CursorParsed, kind: TranscriptKind) -> Vec<&agent_adaptor_driver::TranscriptItem> {
    p.transcript
        .as_slice()
        .unwrap()
        .iter()
        .map(|i| &**i)
        .filter(|i| i.kind == kind)
        .collect()
}

#[test]
fn every_fixture_parses_within_the_contract() {
    for (name, code) in FIXTURES {
        for streaming in [true, false] {
            let (outs, p) = parse(name, streaming, code);
            // Coarse: one content frame per text lifecycle.
            let deltas = jsonl_common::text_deltas(&outs);
            let ids: std::collections::HashSet<_> = deltas.iter().map(|(id, _)| id).collect();
            assert_eq!(ids.len(), deltas.len(), "{name}: one delta per message");
            let result_line = lines(name)
                .into_iter()
                .find(|l| l.contains(r#""type":"result""#));
            assert_eq!(
                p.terminal.as_ref().map(|t| t.json.get().to_owned()),
                result_line,
                "{name}: the exact terminal JSON"
            );
            let cp_ok = p.checkpoint.as_ref().is_some_and(|c| c.valid);
            assert_eq!(cp_ok, p.failure.is_none(), "{name}");
        }
    }
}

#[test]
fn success_text_and_checkpoint_from_the_result() {
    let (outs, p) = parse("own/cursor/success.jsonl", true, 0);
    assert_eq!(p.output, "Hello from Cursor.");
    assert_eq!(
        p.checkpoint
            .as_ref()
            .unwrap()
            .state
            .as_ref()
            .unwrap()
            .resume_id,
        "5f2c9a1e-3b7d-4e08-9c61-2d4b8f0a7e13"
    );
    assert_eq!(p.model.as_deref(), Some("Claude 4.5 Sonnet"));
    assert!(p.usage.is_none(), "the docs' result carries no usage");
    let init = items(&p, TranscriptKind::Init)[0];
    assert_eq!(init.metadata["cwd"], "/repo");
    assert_eq!(init.metadata["api_key_source"], "env");
    // The replayed prompt is not the driver's output.
    assert!(
        !p.transcript
            .as_slice()
            .unwrap()
            .iter()
            .any(|i| i.text.contains("Say hello"))
    );
    assert!(matches!(
        payloads(&outs).last().map(|s| &s.kind),
        Some(StreamKind::RunFinished { .. })
    ));
}

#[test]
fn tool_calls_between_messages() {
    let (outs, p) = parse("own/cursor/tool-call.jsonl", true, 0);
    let calls = items(&p, TranscriptKind::ToolCall);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].tool_name.as_deref(), Some("read"));
    assert_eq!(calls[0].input.as_ref().unwrap()["path"], "sales.csv");
    assert_eq!(calls[1].tool_name.as_deref(), Some("write"));
    let results = items(&p, TranscriptKind::ToolResult);
    assert_eq!(results[0].text, "region,total\nnorth,120\nsouth,80\n");
    assert!(!results[0].is_error && !results[1].is_error);
    let texts: Vec<&str> = items(&p, TranscriptKind::Assistant)
        .iter()
        .map(|i| i.text.as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "I'll read sales.csv first.",
            "Wrote summary.txt: total 200."
        ]
    );
    // Output is the official result: every message concatenated.
    assert_eq!(
        p.output,
        "I'll read sales.csv first.Wrote summary.txt: total 200."
    );
    let kinds: Vec<&str> = payloads(&outs).iter().map(|s| s.kind.name()).collect();
    assert_eq!(
        kinds,
        [
            "run.started",
            "text.start",
            "text.content",
            "text.end",
            "tool_call.start",
            "tool_call.end",
            "tool_call.result",
            "tool_call.start",
            "tool_call.end",
            "tool_call.result",
            "text.start",
            "text.content",
            "text.end",
            "run.finished",
        ]
    );
}

#[test]
fn third_party_shapes_are_understood_or_kept() {
    let (outs, p) = parse("own/cursor/third-party-shapes.jsonl", true, 0);
    let thinking = items(&p, TranscriptKind::Thinking);
    assert_eq!(thinking.len(), 1);
    assert_eq!(
        thinking[0].text,
        "The flaky test is probably in the network module."
    );
    let names: Vec<&str> = items(&p, TranscriptKind::ToolCall)
        .iter()
        .filter_map(|i| i.tool_name.as_deref())
        .collect();
    assert_eq!(
        names,
        [
            "grep",
            "shell",
            "mcp:github/search_issues",
            "todo_write",
            "semSearch"
        ]
    );
    let results = items(&p, TranscriptKind::ToolResult);
    assert!(results[1].is_error, "a shell failure");
    assert_eq!(
        results[1].text,
        "test net::retry ... FAILED\nerror: test failed"
    );
    assert_eq!(results[2].text, "#812 net::retry is flaky on CI");
    assert_eq!(results[3].text, "ok");
    // The unknown line type is a custom payload with its raw JSON.
    assert!(payloads(&outs).iter().any(|s| {
        matches!(&s.kind,
        StreamKind::Custom { name, .. } if name == "cursor.connection")
            && s.raw
                .as_ref()
                .is_some_and(|r| r["subtype"] == "reconnecting")
    }));
    // No reasoning frames: the capability says none.
    assert!(
        !payloads(&outs)
            .iter()
            .any(|s| s.kind.name().starts_with("reasoning"))
    );
    let u = p.usage.unwrap();
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cached_input_tokens,
            u.cache_creation_input_tokens
        ),
        (Some(5120), Some(310), Some(4096), Some(512))
    );
}

#[test]
fn an_error_result_fails_with_its_text() {
    let (_, p) = parse("own/cursor/error-result.jsonl", true, 1);
    let f = p.failure.unwrap();
    assert_eq!(
        f.message,
        "You've hit your usage limit for this model. Switch models or try again later."
    );
    assert_eq!(f.metadata["subtype"], "error");
    assert!(p.checkpoint.is_none());
    assert!(p.output.is_empty(), "the error text is not the output");
    // Even with exit 0, an error result is a failure.
    let (_, p) = parse("own/cursor/error-result.jsonl", false, 0);
    assert!(p.failure.is_some() && p.checkpoint.is_none());
}

#[test]
fn a_non_zero_exit_without_a_result_is_a_missing_terminal() {
    let (outs, p) = parse("own/cursor/exit-without-result.jsonl", true, 1);
    let f = p.failure.unwrap();
    assert_eq!(f.metadata["reason"], "missing_terminal");
    assert!(f.message.contains("exited with code 1"), "{}", f.message);
    assert!(p.terminal.is_none() && p.checkpoint.is_none());
    assert_eq!(p.output, "Running the test suite now.");
    assert!(matches!(
        payloads(&outs).last().map(|s| &s.kind),
        Some(StreamKind::RunError { .. })
    ));
}

#[test]
fn malformed_lines_are_notices() {
    let (outs, p) = parse("own/cursor/malformed-line.jsonl", true, 0);
    let n = notices(&outs);
    assert!(
        n.contains(&"cursor: non-JSON stdout line".to_owned()),
        "{n:?}"
    );
    assert!(
        n.iter()
            .any(|t| t.starts_with("cursor: malformed protocol line")),
        "{n:?}"
    );
    assert_eq!(p.output, "Still here after the noise.");
    assert!(p.failure.is_none() && p.checkpoint.is_some());
}

#[test]
fn a_checkpoint_needs_the_results_session_id_and_a_clean_exit() {
    // The session id of init alone is not enough: the result must carry it.
    let l: Vec<String> = lines("own/cursor/success.jsonl")
        .into_iter()
        .map(|l| {
            if l.contains(r#""type":"result""#) {
                l.replace(
                    r#","session_id":"5f2c9a1e-3b7d-4e08-9c61-2d4b8f0a7e13""#,
                    "",
                )
            } else {
                l
            }
        })
        .collect();
    let (_, p) = parse_lines("no session in result", &l, true, 0);
    assert!(p.failure.is_none());
    assert!(p.checkpoint.is_none(), "missing checkpoint");
    // A successful result with a non-zero exit.
    let (_, p) = parse("own/cursor/success.jsonl", true, 2);
    assert!(p.checkpoint.is_none());
}

#[test]
fn the_parser_survives_mutated_fixtures() {
    let seeds: Vec<&str> = FIXTURES.iter().map(|(n, _)| *n).collect();
    jsonl_common::fuzz(
        &seeds,
        CAP,
        || CursorParser::new(true),
        |p| p.finish(&exit(0)),
    );
}

// ---------------------------------------------------------------------------
// The driver against the fake CLI.

fn config(fixture_name: &str, opts: &[&str]) -> Config {
    let mut fake: Vec<String> = vec![
        "--fixture".into(),
        fixture(fixture_name).display().to_string(),
    ];
    fake.extend(opts.iter().map(|s| (*s).to_owned()));
    let mut cfg = Config {
        command: fake_cli_binary().unwrap(),
        ..Default::default()
    };
    cfg.env
        .insert(OPTS_ENV.into(), serde_json::to_string(&fake).unwrap());
    cfg
}

fn on_fake(fixture_name: &str, opts: &[&str]) -> cursor::CursorDriver {
    cursor::driver(config(fixture_name, opts))
}

#[tokio::test]
async fn conformance_on_every_fixture() {
    for (name, code) in FIXTURES {
        let expect = if code == 0 {
            Expect::Success
        } else {
            Expect::Failure
        };
        let code = code.to_string();
        let mut opts = vec!["--wait-stdin-eof", "--exit-code", &code];
        if name.ends_with("exit-without-result.jsonl") {
            opts.extend(["--stderr", "Error: connection to api2.cursor.sh lost"]);
        }
        let state = SessionState {
            resume_id: "session-1".into(),
            display_id: "session-1".into(),
            data: [("cwd".to_owned(), "/repo".to_owned())].into(),
        };
        let report = test_driver(
            || on_fake(name, &opts),
            Options::new()
                .session_state(state)
                .session_keys(["cwd"])
                .guard_keys(["cwd"])
                .run(RunCase::new("streaming", "hi", true, expect))
                .run(RunCase::new("batch", "hi", false, expect))
                .run_timeout(jsonl_common::RUN_TIMEOUT),
        )
        .await;
        report.assert_passed();
    }
}

#[tokio::test]
async fn success_through_core() {
    let dir = tempfile::tempdir().unwrap();
    let (args, stdin) = (dir.path().join("args"), dir.path().join("stdin"));
    let agent = Agent::new(on_fake(
        "own/cursor/tool-call.jsonl",
        &[
            "--wait-stdin-eof",
            "--args-out",
            &args.display().to_string(),
            "--record-stdin",
            &stdin.display().to_string(),
        ],
    ));
    let run = drain(&agent, "Summarize sales.csv into summary.txt.", |_, _| {}).await;
    let result = run.outcome.as_ref().unwrap();
    assert_eq!(
        result.text,
        "I'll read sales.csv first.Wrote summary.txt: total 200."
    );
    assert_eq!(result.provider, "cursor");
    assert_eq!(
        result
            .checkpoint()
            .unwrap()
            .state
            .as_ref()
            .unwrap()
            .resume_id,
        "8e1b7c3d-0a4f-4d92-b6e5-7f3a2c1d9e04"
    );
    let tools: Vec<&str> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall(c) if !c.name.is_empty() => Some(c.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(tools, ["read", "write"]);
    // The prompt went to stdin (then EOF), never to argv.
    assert_eq!(
        std::fs::read_to_string(&stdin).unwrap(),
        "Summarize sales.csv into summary.txt.\n"
    );
    let argv = ArgsRecord::load(&args).unwrap().args;
    assert_eq!(argv, ["-p", "--output-format", "stream-json", "--trust"]);
}

#[tokio::test]
async fn force_model_and_resume_reach_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let args = dir.path().join("args");
    let mut cfg = config(
        "own/cursor/success.jsonl",
        &["--args-out", &args.display().to_string()],
    );
    cfg.force = true;
    cfg.model = Some("gpt-5".into());
    let driver = cursor::driver(cfg);
    let mut req = Request::new("run_resume00000000", "again");
    req.streaming = true;
    req.session = Some(SessionContext {
        state: Some(SessionState {
            resume_id: "5f2c9a1e-3b7d-4e08-9c61-2d4b8f0a7e13".into(),
            ..Default::default()
        }),
        ..Default::default()
    });
    let trace = record_run(&driver, req, jsonl_common::RUN_TIMEOUT).await;
    assert!(trace.response().unwrap().failure.is_none());
    let argv = ArgsRecord::load(&args).unwrap().args;
    assert!(argv.contains(&"--force".to_owned()));
    assert!(argv.windows(2).any(|w| w == ["--model", "gpt-5"]));
    assert!(
        argv.windows(2)
            .any(|w| w == ["--resume", "5f2c9a1e-3b7d-4e08-9c61-2d4b8f0a7e13"])
    );
}

#[tokio::test]
async fn an_error_result_is_a_run_error_with_its_text() {
    let agent = Agent::new(on_fake(
        "own/cursor/error-result.jsonl",
        &["--exit-code", "1"],
    ));
    let run = drain(&agent, "hi", |_, _| {}).await;
    let err = run.err();
    assert_eq!(err.reason, FailureReason::AgentError);
    assert!(
        err.message.starts_with("You've hit your usage limit"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn an_exit_without_a_result_is_a_typed_failure_with_stderr() {
    let agent = Agent::new(on_fake(
        "own/cursor/exit-without-result.jsonl",
        &[
            "--exit-code",
            "1",
            "--stderr",
            "Error: connection to api2.cursor.sh lost",
        ],
    ));
    let run = drain(&agent, "Run the tests.", |_, _| {}).await;
    let err = run.err();
    assert_eq!(err.reason, FailureReason::AgentError);
    assert!(
        err.message.contains("without a result line"),
        "{}",
        err.message
    );
    let result = err.result.as_ref().unwrap();
    assert!(result.checkpoint().is_none());
    let failure = result
        .transcript()
        .as_slice()
        .unwrap()
        .iter()
        .find(|i| i.kind == TranscriptKind::Failure)
        .unwrap();
    assert!(failure.text.contains("exited with code 1"));
    let stderr = result.raw().stderr.to_string_lossy().unwrap();
    assert!(stderr.contains("api2.cursor.sh"));
    // The driver's own failure keeps the end of stderr.
    let driver = on_fake(
        "own/cursor/exit-without-result.jsonl",
        &[
            "--exit-code",
            "1",
            "--stderr",
            "Error: connection to api2.cursor.sh lost",
        ],
    );
    let trace = record_run(
        &driver,
        Request::new("run_stderr0000000000", "hi"),
        jsonl_common::RUN_TIMEOUT,
    )
    .await;
    let failure = trace.response().unwrap().failure.clone().unwrap();
    assert_eq!(
        failure.metadata["stderr_tail"],
        "Error: connection to api2.cursor.sh lost"
    );
    assert_eq!(failure.metadata["exit_code"], "1");
}

#[tokio::test]
async fn malformed_lines_through_core() {
    let run = drain(
        &Agent::new(on_fake("own/cursor/malformed-line.jsonl", &[])),
        "hi",
        |_, _| {},
    )
    .await;
    assert_eq!(
        run.outcome.as_ref().unwrap().text,
        "Still here after the noise."
    );
    let n = run.notices();
    assert!(n.contains(&"cursor: non-JSON stdout line"), "{n:?}");
}

#[tokio::test]
async fn a_missing_checkpoint_is_still_a_success() {
    let dir = tempfile::tempdir().unwrap();
    let l: Vec<String> = lines("own/cursor/success.jsonl")
        .into_iter()
        .map(|l| {
            l.replace(
                r#","session_id":"5f2c9a1e-3b7d-4e08-9c61-2d4b8f0a7e13""#,
                "",
            )
        })
        .collect();
    let path = jsonl_common::write_variant(dir.path(), "no-session", &l);
    let run = drain(
        &Agent::new(on_fake(&path.display().to_string(), &[])),
        "hi",
        |_, _| {},
    )
    .await;
    let result = run.outcome.as_ref().unwrap();
    assert_eq!(result.text, "Hello from Cursor.");
    assert!(result.checkpoint().is_none());
}

#[tokio::test]
async fn cancellation_stops_a_hanging_cli() {
    let member = WithGroupMember::wrapping(&fake_cli_binary().unwrap());
    let mut cfg = config(
        "own/cursor/exit-without-result.jsonl",
        &["--hang", "--ignore-sigterm"],
    );
    cfg.command = member.path.clone();
    let agent = Agent::new(cursor::driver(cfg));
    let mut pid = None;
    let mut watch = None;
    let run = drain(&agent, "hi", |e, stream| {
        pid = pid.or_else(|| group_watch::spawned_pid(e));
        // The assistant message arrived; the CLI hangs without a result
        // and ignores SIGTERM: only the kill after the grace stops it.
        if watch.is_none()
            && matches!(e, Event::Notice(n) if n.item.as_ref().is_some_and(|i| i.kind == TranscriptKind::Assistant))
        {
            watch = Some(GroupWatch::of(pid.expect("the spawn event came first")));
            stream.cancel();
        }
    })
    .await;
    assert!(matches!(run.events.last(), Some(Event::RunFinished(_))));
    assert_eq!(run.err().reason, FailureReason::Cancelled);
    let watch = watch.expect("the CLI was watched at the cancel");
    watch.assert_had_other_members();
    watch.assert_gone("cursor").await;
}

/// RUN-05: a run cancelled mid-turn (the CLI printed a little, then hangs)
/// returns within the grace, and nothing of the CLI's process group is left.
#[tokio::test]
async fn conformance_cancellation_mid_turn() {
    let report = test_driver(
        || {
            on_fake(
                "own/cursor/malformed-line.jsonl",
                &["--truncate-after", "2", "--hang"],
            )
        },
        Options::new().cancel(CancelCase::new("cancel mid-turn", "hi", true, 2)),
    )
    .await;
    assert!(report.passed("RUN-05"), "cursor:\n{report}");
}

// ---------------------------------------------------------------------------
// Equipment: MCP servers in the profile home's mcp.json, MCP tool calls.

const MCP_FIXTURE: &str = "own/cursor/mcp-tool-call.jsonl";

fn mcp_scope(server: &str, tool: &str) -> ToolScope {
    ToolScope::Mcp {
        server: server.into(),
        tool: tool.into(),
    }
}

#[test]
fn mcp_tool_calls_name_their_server_and_tool() {
    for (name, want) in [
        (MCP_FIXTURE, mcp_scope("probe", "lookup")),
        (
            "own/cursor/third-party-shapes.jsonl",
            mcp_scope("github", "search_issues"),
        ),
    ] {
        let (outs, p) = parse(name, true, 0);
        let scopes: Vec<&ToolScope> = payloads(&outs)
            .into_iter()
            .filter_map(|s| match &s.kind {
                StreamKind::ToolCallStart { scope, .. } if !scope.is_builtin() => Some(scope),
                _ => None,
            })
            .collect();
        assert_eq!(scopes, [&want], "{name}");
        let builtin = payloads(&outs)
            .into_iter()
            .filter(|s| matches!(&s.kind, StreamKind::ToolCallStart { scope, .. } if scope.is_builtin()))
            .count();
        let calls = items(&p, TranscriptKind::ToolCall).len();
        assert_eq!(builtin + 1, calls, "{name}: the other tools stay built in");
    }
    let (_, p) = parse(MCP_FIXTURE, false, 0);
    assert_eq!(
        items(&p, TranscriptKind::ToolResult)[0].text,
        "value-of-alpha"
    );
}

fn run_opts() -> RunOptions {
    RunOptions::new().timeout(jsonl_common::RUN_TIMEOUT)
}

async fn run_agent(agent: &Agent, opts: RunOptions) -> jsonl_common::Run {
    let mut stream = agent.stream_with("Look up the key alpha.", opts);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let outcome = stream.result().await;
    jsonl_common::Run { events, outcome }
}

#[tokio::test]
async fn mcp_servers_reach_the_profile_homes_mcp_json_and_calls_are_scoped() {
    let dir = tempfile::tempdir().unwrap();
    let args = dir.path().join("args");
    let root = dir.path().join("profiles");
    let agent = Agent::new(on_fake(
        MCP_FIXTURE,
        &[
            "--wait-stdin-eof",
            "--args-out",
            &args.display().to_string(),
            "--env-out",
            "HOME",
            "--env-out",
            "CURSOR_CONFIG_DIR",
            "--env-out",
            "XDG_CONFIG_HOME",
            // The bearer-token variable (set by cargo for every test
            // process) and a control that is not passed.
            "--env-out",
            "CARGO_PKG_NAME",
            "--env-out",
            "CARGO_PKG_VERSION",
        ],
    ));
    let probe = McpServer::stdio("probe", "/opt/mock-mcp-server", ["--log", "/tmp/x"]);
    let mut docs = McpServer::http("docs", "http://127.0.0.1:9/mcp");
    if let McpTransport::Http {
        bearer_token_env, ..
    } = &mut docs.transport
    {
        *bearer_token_env = Some("CARGO_PKG_NAME".into());
    }
    let opts = run_opts()
        .mcp_server(probe)
        .mcp_server(docs)
        .profile(Profile::Dedicated { root: root.clone() });
    let run = run_agent(&agent, opts).await;
    assert_eq!(
        run.outcome.as_ref().unwrap().text,
        "alpha is value-of-alpha."
    );

    let home = root.join("cursor");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.join(".cursor/mcp.json")).unwrap())
            .unwrap();
    assert_eq!(
        written,
        serde_json::json!({"mcpServers": {
            "probe": {"command": "/opt/mock-mcp-server", "args": ["--log", "/tmp/x"], "env": {}},
            "docs": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                     "headers": {"Authorization": "Bearer ${env:CARGO_PKG_NAME}"}}
        }})
    );
    let record = ArgsRecord::load(&args).unwrap();
    assert!(record.args.contains(&"--approve-mcps".to_owned()));
    let env = |k: &str| record.env[k].clone();
    assert_eq!(env("HOME"), Some(home.display().to_string()));
    assert_eq!(
        env("CURSOR_CONFIG_DIR"),
        Some(home.join(".cursor").display().to_string())
    );
    assert_eq!(
        env("XDG_CONFIG_HOME"),
        Some(home.join(".config").display().to_string())
    );
    assert_eq!(
        env("CARGO_PKG_NAME").as_deref(),
        Some("agent-adaptor-drivers")
    );
    assert_eq!(
        env("CARGO_PKG_VERSION"),
        None,
        "only the named variable passes"
    );

    let scopes: Vec<&ToolScope> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall(c) if !c.scope.is_builtin() => Some(&c.scope),
            _ => None,
        })
        .collect();
    assert_eq!(scopes, [&mcp_scope("probe", "lookup")]);
}

#[tokio::test]
async fn mcp_servers_under_the_native_profile_are_refused_before_launch() {
    let dir = tempfile::tempdir().unwrap();
    let args = dir.path().join("args");
    let agent = Agent::new(on_fake(
        MCP_FIXTURE,
        &["--args-out", &args.display().to_string()],
    ));
    let opts = run_opts().mcp_server(McpServer::stdio("probe", "srv", ["x"]));
    let run = run_agent(&agent, opts).await;
    let err = run.outcome.unwrap_err().to_string();
    assert!(err.contains("dedicated or clone profile"), "{err}");
    assert!(!args.exists(), "nothing was spawned");
}

#[test]
fn cursor_declares_what_it_carries() {
    let d = cursor::driver(Config::default()).descriptor();
    assert!(d.mcp.stdio && d.mcp.http && d.mcp.sse && d.mcp.headers && d.mcp.bearer_token_env);
    assert!(!d.mcp.strict && !d.mcp.tool_filter && !d.mcp.auto_approve && !d.mcp.required);
    assert!(d.profiles.dedicated && d.profiles.clone);
    assert!(!d.instructions && !d.skills);
}

// ---------------------------------------------------------------------------
// Host tools: the loopback server in the profile home's mcp.json.

const HOST_FIXTURE: &str = "own/cursor/host-tool-call.jsonl";

#[tokio::test]
async fn host_tools_reach_mcp_json_with_the_token_in_the_environment_only() {
    use agent_adaptor_driver::{HOST_TOOL_SERVER, HostToolChannel};
    use agent_adaptor_driver_kit::host_mcp::loopback::TOKEN_ENV;
    use agent_adaptor_drivers::cursor::equip::{CLI_CONFIG, HOST_TOOLS_PERMISSION, MCP_JSON};

    assert_eq!(
        cursor::driver(Config::default()).descriptor().host_tools,
        HostToolChannel::LoopbackMcp
    );
    let dir = tempfile::tempdir().unwrap();
    let args = dir.path().join("args");
    let root = dir.path().join("profiles");
    let agent = Agent::new(on_fake(
        HOST_FIXTURE,
        &[
            "--wait-stdin-eof",
            "--args-out",
            &args.display().to_string(),
            "--env-out",
            TOKEN_ENV,
        ],
    ));
    let (tool, _seen) = host_tool_common::lookup_tool();
    let opts = run_opts()
        .tool(tool)
        .profile(Profile::Dedicated { root: root.clone() });
    let run = run_agent(&agent, opts).await;
    assert_eq!(
        run.outcome.as_ref().unwrap().text,
        "k5 is host-value-of-k5."
    );
    host_tool_common::assert_host_call(&run.events, "k5");

    let home = root.join("cursor");
    let text = std::fs::read_to_string(home.join(MCP_JSON)).unwrap();
    let written: serde_json::Value = serde_json::from_str(&text).unwrap();
    let entry = &written["mcpServers"][HOST_TOOL_SERVER];
    assert_eq!(entry["type"], "http");
    assert_eq!(
        entry["headers"],
        serde_json::json!({"Authorization": format!("Bearer ${{env:{TOKEN_ENV}}}")})
    );
    let url = entry["url"].as_str().unwrap();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.join(CLI_CONFIG)).unwrap()).unwrap();
    assert_eq!(
        config["permissions"]["allow"],
        serde_json::json!([HOST_TOOLS_PERMISSION])
    );

    // The token: in the child's environment, nowhere else.
    let record = ArgsRecord::load(&args).unwrap();
    assert!(record.args.contains(&"--approve-mcps".to_owned()));
    let token = record.env[TOKEN_ENV].clone().expect("the token variable");
    assert_eq!(token.len(), 64);
    assert!(
        !record.args.iter().any(|a| a.contains(&token)),
        "not on argv"
    );
    assert!(
        !text.contains(&token),
        "not in the file that outlives the run"
    );
    assert!(
        !run.events.iter().any(|e| format!("{e:?}").contains(&token)),
        "not in an event"
    );
    // The server stopped with the run.
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn host_tools_under_the_native_profile_are_refused_before_launch() {
    let dir = tempfile::tempdir().unwrap();
    let args = dir.path().join("args");
    let agent = Agent::new(on_fake(
        HOST_FIXTURE,
        &["--args-out", &args.display().to_string()],
    ));
    let (tool, _seen) = host_tool_common::lookup_tool();
    let run = run_agent(&agent, run_opts().tool(tool)).await;
    let err = run.outcome.unwrap_err().to_string();
    assert!(err.contains("dedicated or clone profile"), "{err}");
    assert!(!args.exists(), "nothing was spawned");
}

#[test]
fn a_host_tool_call_is_scoped_host_with_its_own_name_and_input() {
    let (outs, p) = parse(HOST_FIXTURE, true, 0);
    let starts: Vec<(String, ToolScope)> = payloads(&outs)
        .into_iter()
        .filter_map(|s| match &s.kind {
            StreamKind::ToolCallStart { name, scope, .. } => Some((name.clone(), scope.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(starts, [("lookup".to_owned(), ToolScope::Host)]);
    let call = items(&p, TranscriptKind::ToolCall)[0];
    assert_eq!(call.tool_name.as_deref(), Some("lookup"));
}
