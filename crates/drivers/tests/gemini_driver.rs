//! The Gemini CLI driver: its parser on every capture (the shared ones and
//! this crate's recordings of Gemini CLI 0.61 against the mock), fuzzing,
//! and the driver against the fake CLI — the conformance suite on every
//! capture and the contract's paths through core (success, non-zero exit,
//! malformed lines, missing checkpoint, missing terminal, cancellation).
#![cfg(feature = "gemini")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod group_watch;
mod jsonl_common;

use agent_adaptor_conformance::{CancelCase, Expect, Options, RunCase, record_run, test_driver};
use agent_adaptor_core::{Agent, Event, FailureReason};
use agent_adaptor_driver::{
    DriverError, Request, SessionContext, SessionState, StreamCapability, StreamKind,
    TranscriptKind,
};
use agent_adaptor_drivers::gemini::parse::{GeminiParsed, GeminiParser};
use agent_adaptor_drivers::gemini::{self, ApprovalMode};
use agent_adaptor_drivers::pump::Out;
use agent_adaptor_testkit::replay::{ArgsRecord, OPTS_ENV, fake_cli_binary};
use group_watch::{GroupWatch, WithGroupMember};
use jsonl_common::{drain, exit, feed, fixture, lines, notices, parse_with, payloads, text_deltas};

const CAP: StreamCapability = StreamCapability {
    native: true,
    token_level: true,
    reasoning: false,
    tool_call_args: false,
    hitl: false,
    observation: agent_adaptor_driver::ObservationSupport::NONE,
};

/// Every capture, with the exit code it was recorded with.
const CAPTURES: [(&str, i32); 8] = [
    ("gemini/stream-basic.jsonl", 0),
    ("gemini/stream-tool-yolo.jsonl", 0),
    ("gemini/stream-api-error.jsonl", 1),
    ("own/gemini/stream-read-file.jsonl", 0),
    ("own/gemini/stream-tool-error.jsonl", 0),
    ("own/gemini/stream-http-400.jsonl", 144),
    ("own/gemini/stream-sse-error.jsonl", 244),
    ("own/gemini/stream-empty-response.jsonl", 0),
];

fn parse_lines(
    what: &str,
    lines: &[String],
    streaming: bool,
    code: i32,
) -> (Vec<Out>, GeminiParsed) {
    parse_with(
        &mut GeminiParser::new(streaming),
        what,
        lines,
        CAP,
        streaming,
        code,
    )
}

fn parse(name: &str, streaming: bool, code: i32) -> (Vec<Out>, GeminiParsed) {
    parse_lines(name, &lines(name), streaming, code)
}

#[test]
fn every_capture_parses_within_the_contract() {
    for (name, code) in CAPTURES {
        for streaming in [true, false] {
            let (_, p) = parse(name, streaming, code);
            let result_line = lines(name)
                .into_iter()
                .find(|l| l.contains(r#""type":"result""#));
            match (&p.terminal, result_line) {
                (Some(t), Some(line)) => {
                    assert_eq!(t.event, "result");
                    assert_eq!(t.json.get(), line, "{name}: the exact terminal JSON");
                }
                (None, None) => {}
                (t, l) => panic!("{name}: terminal {t:?} vs result line {l:?}"),
            }
            let cp_ok = p.checkpoint.as_ref().is_some_and(|c| c.valid);
            assert_eq!(
                cp_ok,
                p.failure.is_none(),
                "{name}: a checkpoint exactly on success"
            );
        }
    }
}

#[test]
fn text_usage_and_checkpoint_of_a_plain_answer() {
    let (outs, p) = parse("gemini/stream-basic.jsonl", true, 0);
    assert_eq!(p.output, "Hello from mock.");
    let u = p.usage.unwrap();
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cached_input_tokens,
            u.total_tokens
        ),
        (Some(100), Some(10), Some(0), Some(110))
    );
    let state = p.checkpoint.unwrap().state.unwrap();
    assert_eq!(state.resume_id, "7bca92ed-bc76-40a5-95fd-2232a766183e");
    assert_eq!(p.model.as_deref(), Some("gemini-mock"));
    // The run's provider coordinates come from init; the user prompt is not
    // mirrored.
    let first = payloads(&outs)[0];
    assert_eq!(
        first.source.thread_id.as_deref(),
        Some("7bca92ed-bc76-40a5-95fd-2232a766183e")
    );
    assert!(
        !p.transcript
            .as_slice()
            .unwrap()
            .iter()
            .any(|i| i.text == "say hello")
    );
}

#[test]
fn deltas_of_one_message_share_one_lifecycle() {
    let (outs, p) = parse("own/gemini/stream-read-file.jsonl", true, 0);
    let deltas = text_deltas(&outs);
    assert_eq!(deltas.len(), 2, "token-level: {deltas:?}");
    assert_eq!(deltas[0].0, deltas[1].0, "one message");
    assert_eq!(format!("{}{}", deltas[0].1, deltas[1].1), "File read.");
    let texts: Vec<_> = p
        .transcript
        .as_slice()
        .unwrap()
        .iter()
        .filter(|i| i.kind == TranscriptKind::Assistant)
        .collect();
    assert_eq!(texts.len(), 1);
    assert_eq!(texts[0].text, "File read.");
    assert_eq!(p.output, "File read.");
    let u = p.usage.unwrap();
    assert_eq!(u.cached_input_tokens, Some(40));
}

#[test]
fn tool_calls_open_with_their_arguments_and_close_with_their_results() {
    let (outs, p) = parse("gemini/stream-tool-yolo.jsonl", true, 0);
    let id = "run_shell_command__run_shell_command_1795981079536_0";
    assert!(payloads(&outs).iter().any(|s| matches!(&s.kind,
        StreamKind::ToolCallStart { tool_call_id, name, args, .. }
            if tool_call_id == id && name == "run_shell_command"
                && args.as_ref().is_some_and(|a| a["command"] == "echo hi-from-tool"))));
    assert!(payloads(&outs).iter().any(|s| matches!(&s.kind,
        StreamKind::ToolCallResult { tool_call_id, result, .. }
            if tool_call_id == id && result.as_ref().is_some_and(|r| r["output"] == "hi-from-tool"))));
    let result = p
        .transcript
        .as_slice()
        .unwrap()
        .iter()
        .find(|i| i.kind == TranscriptKind::ToolResult)
        .unwrap();
    assert_eq!(
        (result.text.as_str(), result.is_error),
        ("hi-from-tool", false)
    );
    assert_eq!(p.output, "Tool said hi.");

    // A failed tool is an error result; the run goes on and succeeds.
    let (_, p) = parse("own/gemini/stream-tool-error.jsonl", true, 0);
    let result = p
        .transcript
        .as_slice()
        .unwrap()
        .iter()
        .find(|i| i.kind == TranscriptKind::ToolResult)
        .unwrap();
    assert!(result.is_error);
    assert_eq!(result.text, "File not found: /tmp/gx/home/work/missing.txt");
    assert!(p.failure.is_none() && p.checkpoint.is_some());
}

#[test]
fn api_errors_fail_with_the_providers_message() {
    for (name, code, want) in [
        (
            "own/gemini/stream-http-400.jsonl",
            144,
            "mock http error 400: Bad Request",
        ),
        ("own/gemini/stream-sse-error.jsonl", 244, "mock sse failure"),
        (
            "own/gemini/stream-empty-response.jsonl",
            0,
            "The model returned an empty response with no text or thoughts. This may be a transient API issue; please try again.",
        ),
    ] {
        let (outs, p) = parse(name, true, code);
        let f = p.failure.unwrap();
        assert_eq!(f.message, want, "{name}");
        assert_eq!(f.metadata["status"], "error");
        assert!(p.checkpoint.is_none(), "{name}");
        assert!(
            p.terminal.is_some(),
            "{name}: the error result is the terminal"
        );
        assert!(matches!(
            payloads(&outs).last().map(|s| &s.kind),
            Some(StreamKind::RunError { .. })
        ));
    }
    // The raw `[API Error: …]` text is kept beside the readable message.
    let (_, p) = parse("own/gemini/stream-http-400.jsonl", false, 144);
    let f = p.failure.unwrap();
    assert!(f.metadata["provider_message"].starts_with("[API Error: {"));
    assert_eq!(f.metadata["error_type"], "unknown");
    // The invalid-stream error event is also a warning notice.
    let (outs, _) = parse("own/gemini/stream-empty-response.jsonl", false, 0);
    assert!(notices(&outs).iter().any(|n| n.contains("empty response")));
}

#[test]
fn no_result_line_is_a_missing_terminal() {
    // The shared API-error capture is empty: exit 1, nothing on stdout.
    let (_, p) = parse("gemini/stream-api-error.jsonl", true, 1);
    let f = p.failure.unwrap();
    assert_eq!(f.metadata["reason"], "missing_terminal");
    assert_eq!(f.metadata["exit_code"], "1");
    assert!(p.terminal.is_none() && p.checkpoint.is_none());
    // A run cut off before its result, even with exit 0.
    let mut l = lines("gemini/stream-basic.jsonl");
    l.pop();
    let (_, p) = parse_lines("truncated", &l, true, 0);
    assert_eq!(p.failure.unwrap().metadata["reason"], "missing_terminal");
    assert!(p.checkpoint.is_none());
}

#[test]
fn a_checkpoint_needs_a_session_id_a_success_and_a_clean_exit() {
    // Non-zero exit after a successful result: no checkpoint (core fails the
    // run on the exit code).
    let (_, p) = parse("gemini/stream-basic.jsonl", true, 1);
    assert!(p.checkpoint.is_none() && p.failure.is_none());
    // No session id in init: nothing to resume.
    let l: Vec<String> = lines("gemini/stream-basic.jsonl")
        .into_iter()
        .map(|l| {
            l.replace(
                r#""session_id":"7bca92ed-bc76-40a5-95fd-2232a766183e","#,
                "",
            )
        })
        .collect();
    let (_, p) = parse_lines("no session", &l, true, 0);
    assert!(p.failure.is_none());
    assert!(p.checkpoint.is_none(), "missing checkpoint");
    // Killed by a signal.
    let (_, p) = feed(
        &mut GeminiParser::new(true),
        &lines("gemini/stream-basic.jsonl"),
        |p| {
            p.finish(&agent_adaptor_drivers::one_shot::Exit {
                process: agent_adaptor_drivers::exit::ExitFacts {
                    code: None,
                    signaled: true,
                    ended_cleanly: false,
                },
                stderr_tail: None,
            })
        },
    );
    assert!(p.checkpoint.is_none());
}

/// The basic capture with noise: a banner, a truncated JSON line, an
/// unknown event type, and a line after the result.
fn noisy_lines() -> Vec<String> {
    let mut l = lines("gemini/stream-basic.jsonl");
    l.insert(1, "Loaded cached credentials.".into());
    l.insert(2, r#"{"type":"message","role":"assist"#.into());
    l.insert(
        3,
        r#"{"type":"thought","subject":"Greeting","description":"say hi"}"#.into(),
    );
    l.push(r#"{"type":"message","role":"assistant","content":"late","delta":true}"#.into());
    l
}

#[test]
fn noise_becomes_notices_and_unknown_events_custom_payloads() {
    let (outs, p) = parse_lines("noisy", &noisy_lines(), true, 0);
    let n = notices(&outs);
    assert!(
        n.iter().any(|t| t == "gemini: non-JSON stdout line"),
        "{n:?}"
    );
    assert!(
        n.iter()
            .any(|t| t.starts_with("gemini: malformed protocol line")),
        "{n:?}"
    );
    assert!(
        n.iter().any(|t| t == "gemini: line after the result line"),
        "{n:?}"
    );
    assert!(payloads(&outs).iter().any(|s| matches!(&s.kind,
        StreamKind::Custom { name, .. } if name == "gemini.thought")
        && s.raw.as_ref().is_some_and(|r| r["subject"] == "Greeting")));
    assert_eq!(p.output, "Hello from mock.");
    assert!(p.failure.is_none() && p.checkpoint.is_some());
    // Without payloads the unknown event is a notice that keeps its JSON.
    let (outs, _) = parse_lines("noisy batch", &noisy_lines(), false, 0);
    assert!(outs.iter().any(|o| matches!(o,
        Out::Event(agent_adaptor_driver::RunEvent::Lifecycle(e))
            if e.data.as_ref().is_some_and(|d| d["type"] == "thought"))));
}

#[test]
fn the_parser_survives_mutated_captures() {
    let seeds: Vec<&str> = CAPTURES.iter().map(|(n, _)| *n).collect();
    jsonl_common::fuzz(
        &seeds,
        CAP,
        || GeminiParser::new(true),
        |p| p.finish(&exit(0)),
    );
}

// ---------------------------------------------------------------------------
// The driver against the fake CLI.

fn config(fixture_name: &str, opts: &[&str]) -> gemini::Config {
    let mut fake: Vec<String> = vec![
        "--fixture".into(),
        fixture(fixture_name).display().to_string(),
    ];
    fake.extend(opts.iter().map(|s| (*s).to_owned()));
    let mut cfg = gemini::Config {
        command: fake_cli_binary().unwrap(),
        model: Some("gemini-2.5-flash".into()),
        ..Default::default()
    };
    cfg.env
        .insert(OPTS_ENV.into(), serde_json::to_string(&fake).unwrap());
    cfg
}

fn on_fake(fixture_name: &str, opts: &[&str]) -> gemini::GeminiDriver {
    gemini::driver(config(fixture_name, opts))
}

fn on_fake_path(path: &std::path::Path, opts: &[&str]) -> gemini::GeminiDriver {
    on_fake(&path.display().to_string(), opts)
}

#[tokio::test]
async fn conformance_on_every_capture() {
    for (name, code) in CAPTURES {
        let expect = if lines(name)
            .iter()
            .any(|l| l.contains(r#""status":"success""#))
        {
            Expect::Success
        } else {
            Expect::Failure
        };
        let code = code.to_string();
        let state = SessionState {
            resume_id: "session-1".into(),
            display_id: "session-1".into(),
            data: [("cwd".to_owned(), "/repo".to_owned())].into(),
        };
        let report = test_driver(
            || on_fake(name, &["--wait-stdin-eof", "--exit-code", &code]),
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
async fn success_through_core_streams_text_and_leaves_a_checkpoint() {
    let agent = Agent::new(on_fake(
        "own/gemini/stream-read-file.jsonl",
        &["--wait-stdin-eof"],
    ));
    let run = drain(&agent, "READ the notes", |_, _| {}).await;
    let result = run.outcome.as_ref().unwrap();
    assert_eq!(result.text, "File read.");
    assert_eq!(result.provider, "gemini");
    assert_eq!(result.model, "gemini-2.5-flash");
    let deltas = run
        .events
        .iter()
        .filter(|e| matches!(e, Event::TextDelta(d) if !d.text.is_empty()))
        .count();
    assert_eq!(deltas, 2);
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, Event::ToolCall(c) if c.name == "read_file"))
    );
    let cp = result.checkpoint().unwrap();
    assert_eq!(
        cp.state.as_ref().unwrap().resume_id,
        "b32b899e-f36b-4db2-988c-6129089183e0"
    );
}

#[tokio::test]
async fn the_prompt_goes_to_stdin_and_never_to_argv() {
    let dir = tempfile::tempdir().unwrap();
    let (args, stdin) = (dir.path().join("args"), dir.path().join("stdin"));
    let prompt = "--looks-like-a-flag\nsecond line";
    let agent = Agent::new(on_fake(
        "gemini/stream-basic.jsonl",
        &[
            "--wait-stdin-eof",
            "--args-out",
            &args.display().to_string(),
            "--record-stdin",
            &stdin.display().to_string(),
        ],
    ));
    let run = drain(&agent, prompt, |_, _| {}).await;
    run.outcome.as_ref().unwrap();
    assert_eq!(
        std::fs::read_to_string(&stdin).unwrap(),
        format!("{prompt}\n")
    );
    let argv = ArgsRecord::load(&args).unwrap().args;
    assert_eq!(argv[..4], ["-p", "", "--output-format", "stream-json"]);
    assert!(argv.windows(2).any(|w| w == ["-m", "gemini-2.5-flash"]));
    assert!(!argv.iter().any(|a| a.contains("looks-like")), "{argv:?}");
}

#[tokio::test]
async fn resume_passes_the_session_and_keeps_the_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let args = dir.path().join("args");
    let mut cfg = config(
        "gemini/stream-basic.jsonl",
        &["--args-out", &args.display().to_string()],
    );
    cfg.approval_mode = ApprovalMode::Yolo;
    cfg.cwd = Some(dir.path().to_path_buf());
    let driver = gemini::driver(cfg);
    let mut req = Request::new("run_resume00000000", "again");
    req.streaming = true;
    req.session = Some(SessionContext {
        state: Some(SessionState {
            resume_id: "7bca92ed-bc76-40a5-95fd-2232a766183e".into(),
            ..Default::default()
        }),
        ..Default::default()
    });
    let trace = record_run(&driver, req, jsonl_common::RUN_TIMEOUT).await;
    let resp = trace.response().unwrap();
    let argv = ArgsRecord::load(&args).unwrap().args;
    assert!(
        argv.windows(2)
            .any(|w| w == ["--resume", "7bca92ed-bc76-40a5-95fd-2232a766183e"])
    );
    assert!(argv.contains(&"--yolo".to_owned()));
    let state = resp.checkpoint.as_ref().unwrap().state.as_ref().unwrap();
    assert_eq!(state.data["cwd"], dir.path().display().to_string());
}

#[tokio::test]
async fn an_api_error_is_a_run_error_with_the_providers_message() {
    let agent = Agent::new(on_fake(
        "own/gemini/stream-http-400.jsonl",
        &["--exit-code", "144"],
    ));
    let run = drain(&agent, "FAIL now", |_, _| {}).await;
    let err = run.err();
    assert_eq!(err.reason, FailureReason::AgentError);
    assert_eq!(err.message, "mock http error 400: Bad Request");
    assert!(
        err.result
            .as_ref()
            .is_some_and(|r| r.checkpoint().is_none())
    );
}

#[tokio::test]
async fn a_non_zero_exit_fails_the_run_without_a_checkpoint() {
    let agent = Agent::new(on_fake("gemini/stream-basic.jsonl", &["--exit-code", "3"]));
    let run = drain(&agent, "hi", |_, _| {}).await;
    let err = run.err();
    assert_eq!(err.reason, FailureReason::AgentError, "{}", err.message);
    assert!(
        err.result
            .as_ref()
            .is_some_and(|r| r.checkpoint().is_none())
    );
}

#[tokio::test]
async fn malformed_lines_are_notices_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = jsonl_common::write_variant(dir.path(), "noisy", &noisy_lines());
    let run = drain(&Agent::new(on_fake_path(&path, &[])), "hi", |_, _| {}).await;
    assert_eq!(run.outcome.as_ref().unwrap().text, "Hello from mock.");
    let n = run.notices();
    assert!(n.contains(&"gemini: non-JSON stdout line"), "{n:?}");
    assert!(
        n.iter()
            .any(|t| t.starts_with("gemini: malformed protocol line")),
        "{n:?}"
    );
}

#[tokio::test]
async fn without_a_session_id_the_run_succeeds_without_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let l: Vec<String> = lines("gemini/stream-basic.jsonl")
        .into_iter()
        .map(|l| {
            l.replace(
                r#""session_id":"7bca92ed-bc76-40a5-95fd-2232a766183e","#,
                "",
            )
        })
        .collect();
    let path = jsonl_common::write_variant(dir.path(), "no-session", &l);
    let run = drain(&Agent::new(on_fake_path(&path, &[])), "hi", |_, _| {}).await;
    let result = run.outcome.as_ref().unwrap();
    assert_eq!(result.text, "Hello from mock.");
    assert!(result.checkpoint().is_none());
}

#[tokio::test]
async fn a_crash_before_the_result_is_a_typed_failure() {
    let agent = Agent::new(on_fake(
        "gemini/stream-basic.jsonl",
        &[
            "--truncate-after",
            "3",
            "--exit-code",
            "42",
            "--stderr",
            "Error resuming session",
        ],
    ));
    let run = drain(&agent, "hi", |_, _| {}).await;
    let err = run.err();
    assert_eq!(err.reason, FailureReason::AgentError);
    assert!(
        err.message.contains("without a result line"),
        "{}",
        err.message
    );
    let failure = err
        .result
        .as_ref()
        .and_then(|r| {
            r.transcript()
                .as_slice()
                .unwrap()
                .iter()
                .find(|i| i.kind == TranscriptKind::Failure)
                .cloned()
        })
        .unwrap();
    assert!(
        failure.text.contains("exited with code 42"),
        "{}",
        failure.text
    );
}

#[tokio::test]
async fn cancellation_stops_a_hanging_cli() {
    let member = WithGroupMember::wrapping(&fake_cli_binary().unwrap());
    let mut cfg = config("gemini/stream-basic.jsonl", &["--hang", "--ignore-sigterm"]);
    cfg.command = member.path.clone();
    let agent = Agent::new(gemini::driver(cfg));
    let mut pid = None;
    let mut watch = None;
    let run = drain(&agent, "hi", |e, stream| {
        pid = pid.or_else(|| group_watch::spawned_pid(e));
        // Everything was printed and the CLI hangs, ignoring SIGTERM:
        // cancel on the result; only the kill after the grace stops it.
        if watch.is_none()
            && matches!(e, Event::Notice(n) if n.item.as_ref().is_some_and(|i| i.kind == TranscriptKind::Result))
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
    watch.assert_gone("gemini").await;
}

#[tokio::test]
async fn a_prompt_gemini_would_truncate_is_refused() {
    let driver = on_fake("gemini/stream-basic.jsonl", &[]);
    let req = Request::new(
        "run_big0000000000000",
        "x".repeat(gemini::MAX_PROMPT_BYTES + 1),
    );
    let trace = record_run(&driver, req, jsonl_common::RUN_TIMEOUT).await;
    let Some(Err(DriverError::Other(e))) = &trace.returned else {
        panic!("expected a typed error: {:?}", trace.returned);
    };
    let too_large = e.downcast_ref::<gemini::PromptTooLarge>().unwrap();
    assert_eq!(too_large.len, gemini::MAX_PROMPT_BYTES + 1);
    assert!(trace.emitted.is_empty(), "nothing ran");
}

/// RUN-05: a run cancelled mid-turn (the CLI printed a little, then hangs)
/// returns within the grace, and nothing of the CLI's process group is left.
#[tokio::test]
async fn conformance_cancellation_mid_turn() {
    let report = test_driver(
        || {
            on_fake(
                "gemini/stream-basic.jsonl",
                &["--truncate-after", "2", "--hang"],
            )
        },
        Options::new().cancel(CancelCase::new("cancel mid-turn", "hi", true, 2)),
    )
    .await;
    assert!(report.passed("RUN-05"), "gemini:\n{report}");
}
