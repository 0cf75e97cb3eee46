use std::num::NonZeroUsize;
use std::time::Duration;

use serde_json::Value;

use super::*;
use crate::fixtures::{self, Frame};

fn lines(texts: &[&str]) -> Capture {
    Capture::Lines(texts.iter().map(|s| (*s).to_owned()).collect())
}

fn stdout(text: &str) -> IoEvent {
    IoEvent::Stdout(text.to_owned())
}

fn stderr(text: &str) -> IoEvent {
    IoEvent::Stderr(text.to_owned())
}

fn run(capture: &Capture, options: &Options, stdin: &[&str]) -> (Outcome, MemoryIo) {
    let mut io = MemoryIo::new(stdin.iter().copied());
    let outcome = replay(capture, options, &mut io).unwrap();
    (outcome, io)
}

fn claude_allow() -> Capture {
    fixtures::load("claude/control-can-use-tool-allow.transcript").unwrap()
}

#[test]
fn jsonl_delay_precedes_each_line_and_noise_follows_every_nth() {
    let options = Options {
        delay: Duration::from_millis(5),
        stderr: vec!["banner".into()],
        stderr_every: NonZeroUsize::new(2),
        ..Options::default()
    };
    let (outcome, io) = run(&lines(&["a", "b", "c"]), &options, &["ignored"]);
    let pause = IoEvent::Sleep(Duration::from_millis(5));
    assert_eq!(
        io.events(),
        [
            stderr("banner"),
            pause.clone(),
            stdout("a"),
            pause.clone(),
            stdout("b"),
            stderr("fake-cli: stderr noise after stdout line 2"),
            pause,
            stdout("c"),
        ]
    );
    assert_eq!(
        outcome,
        Outcome {
            reason: EndReason::Completed,
            exit_code: 0,
            hang: false
        }
    );
    assert_eq!(io.unread_stdin(), 1, "jsonl mode leaves stdin alone");
}

#[test]
fn jsonl_wait_stdin_eof_reads_everything_before_printing() {
    let options = Options {
        wait_stdin_eof: true,
        stderr: vec!["Reading additional input from stdin...".into()],
        ..Options::default()
    };
    let (_, io) = run(&lines(&["a"]), &options, &["x", "y"]);
    assert_eq!(
        io.events(),
        [
            stderr("Reading additional input from stdin..."),
            IoEvent::StdinLine("x".into()),
            IoEvent::StdinLine("y".into()),
            IoEvent::StdinEof,
            stdout("a"),
        ]
    );
}

#[test]
fn truncation_cuts_the_tail_and_keeps_the_exit_code() {
    let capture = lines(&["a", "b", "c"]);
    let mut options = Options {
        exit_code: 7,
        ..Options::default()
    };
    for (n, expected) in [(0, &b""[..]), (2, b"a\nb\n")] {
        options.truncate_after = Some(n);
        let (outcome, io) = run(&capture, &options, &[]);
        assert_eq!(
            outcome,
            Outcome {
                reason: EndReason::Truncated,
                exit_code: 7,
                hang: false
            }
        );
        assert_eq!(io.stdout_bytes(), expected);
    }
    options.truncate_after = Some(3);
    let (outcome, io) = run(&capture, &options, &[]);
    assert_eq!(outcome.reason, EndReason::Completed);
    assert_eq!(io.stdout_bytes(), b"a\nb\nc\n");
}

/// For every transcript: fed the recorded host frames, the engine reads each exactly when
/// the capture has it and writes the CLI frames in between, in capture order, then waits
/// for stdin EOF.
#[test]
fn every_transcript_interleaves_reads_and_writes_in_capture_order() {
    let transcripts: Vec<_> = fixtures::try_all()
        .unwrap()
        .into_iter()
        .filter(|(_, c)| c.is_transcript())
        .collect();
    assert!(
        transcripts.len() >= 6,
        "expected the transcripts, found {}",
        transcripts.len()
    );
    for (name, capture) in transcripts {
        let Capture::Transcript(frames) = &capture else {
            unreachable!()
        };
        let mut expected: Vec<IoEvent> = frames
            .iter()
            .map(|Frame { dir, line }| match dir {
                Direction::SdkToCli => IoEvent::StdinLine(line.clone()),
                Direction::CliToSdk => IoEvent::Stdout(line.clone()),
            })
            .collect();
        expected.push(IoEvent::StdinEof);
        let options = Options {
            stdin_check: StdinCheck::ExactJson,
            ..Options::default()
        };
        let (outcome, io) = run(&capture, &options, &capture.stdin_lines());
        assert_eq!(io.events(), expected, "{name}");
        assert_eq!(outcome.reason, EndReason::Completed, "{name}");
        assert_eq!(io.stdout_bytes(), capture.stdout_bytes(), "{name}");
    }
}

#[test]
fn transcript_stops_at_stdin_eof_with_the_configured_code() {
    let capture = claude_allow();
    let options = Options {
        exit_code: 5,
        ..Options::default()
    };
    let first = capture.stdin_lines()[0];
    let (outcome, io) = run(&capture, &options, &[first]);
    assert_eq!(
        outcome,
        Outcome {
            reason: EndReason::StdinClosed,
            exit_code: 5,
            hang: false
        }
    );
    assert!(
        io.stdout_bytes().is_empty(),
        "the first CLI frame needs two host frames"
    );
}

#[test]
fn transcript_hang_and_exit_after_replay_do_not_wait_for_eof() {
    let capture = claude_allow();
    for hang in [true, false] {
        let options = Options {
            hang,
            exit_after_replay: !hang,
            ..Options::default()
        };
        let (outcome, io) = run(&capture, &options, &capture.stdin_lines());
        assert_eq!(outcome.hang, hang);
        assert_eq!(outcome.reason, EndReason::Completed);
        assert!(!io.events().contains(&IoEvent::StdinEof));
    }
}

#[test]
fn transcript_truncation_counts_stdout_frames() {
    let capture = claude_allow();
    let options = Options {
        truncate_after: Some(3),
        ..Options::default()
    };
    let (outcome, io) = run(&capture, &options, &capture.stdin_lines());
    assert_eq!(outcome.reason, EndReason::Truncated);
    assert_eq!(
        io.stdout_bytes(),
        capture.stdout_lines()[..3]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>()
            .as_bytes()
    );
    assert_eq!(
        io.unread_stdin(),
        1,
        "the can_use_tool answer comes after the third frame"
    );
}

fn diagnostic(io: &MemoryIo) -> Value {
    let line = io.stderr_lines().last().copied().unwrap();
    serde_json::from_str(line).unwrap()
}

#[test]
fn type_check_rejects_a_wrong_type_or_control_subtype() {
    let capture = claude_allow();
    let options = Options {
        stdin_check: StdinCheck::Type,
        ..Options::default()
    };
    let user = capture.stdin_lines()[1];
    let (outcome, io) = run(&capture, &options, &[user]);
    assert_eq!(
        outcome,
        Outcome {
            reason: EndReason::StdinMismatch,
            exit_code: STDIN_MISMATCH_EXIT_CODE,
            hang: false
        }
    );
    let diag = diagnostic(&io);
    assert_eq!(diag["fake_cli"], "stdin_mismatch");
    assert_eq!(diag["expected"], "control_request/initialize");
    assert_eq!(diag["received"], "user");
    assert_eq!(diag["stdin_line"], 1);
    assert_eq!(diag["capture_line"], 1);

    let interrupt =
        r#"{"type":"control_request","request_id":"r","request":{"subtype":"interrupt"}}"#;
    let (outcome, io) = run(&capture, &options, &[interrupt]);
    assert_eq!(outcome.reason, EndReason::StdinMismatch);
    assert_eq!(diagnostic(&io)["received"], "control_request/interrupt");

    let (outcome, io) = run(&capture, &options, &["not json"]);
    assert_eq!(outcome.reason, EndReason::StdinMismatch);
    assert_eq!(diagnostic(&io)["received_text"], "not json");
}

#[test]
fn type_check_accepts_the_same_shape_with_other_content() {
    let capture = claude_allow();
    let options = Options {
        stdin_check: StdinCheck::Type,
        ..Options::default()
    };
    let init =
        r#"{"type":"control_request","request_id":"other","request":{"subtype":"initialize"}}"#;
    let user = r#"{"type":"user","message":{"role":"user","content":"something else"}}"#;
    let answer = r#"{"type":"control_response","response":{"subtype":"success","request_id":"x","response":{"behavior":"deny"}}}"#;
    let (outcome, io) = run(&capture, &options, &[init, user, answer]);
    assert_eq!(outcome.reason, EndReason::Completed);
    assert_eq!(io.stdout_bytes(), capture.stdout_bytes());
}

#[test]
fn type_check_compares_json_rpc_kind_and_method() {
    let capture = fixtures::load("codex/app-server-approval.transcript").unwrap();
    let options = Options {
        stdin_check: StdinCheck::Type,
        ..Options::default()
    };
    let recorded = capture.stdin_lines();
    let (outcome, _) = run(&capture, &options, &recorded);
    assert_eq!(outcome.reason, EndReason::Completed);

    let wrong_method = r#"{"id": 1, "method": "thread/start", "params": {}}"#;
    let (outcome, io) = run(&capture, &options, &[wrong_method]);
    assert_eq!(outcome.reason, EndReason::StdinMismatch);
    assert_eq!(diagnostic(&io)["expected"], "jsonrpc request initialize");
    assert_eq!(diagnostic(&io)["received"], "jsonrpc request thread/start");

    // The approval answer is a response; a notification in its place is a mismatch.
    let mut feed = recorded[..4].to_vec();
    feed.push(r#"{"method": "initialized"}"#);
    let (outcome, io) = run(&capture, &options, &feed);
    assert_eq!(outcome.reason, EndReason::StdinMismatch);
    assert_eq!(diagnostic(&io)["expected"], "jsonrpc response");
}

#[test]
fn exact_json_ignores_formatting_and_listed_keys_at_any_depth() {
    let capture = claude_allow();
    let recorded = capture.stdin_lines();
    let compact = |text: &str| serde_json::from_str::<Value>(text).unwrap().to_string();
    let with_other_ids = |text: &str| {
        text.replace("req_1_init", "req_9")
            .replace("2aad267d-55b6-4f31-9ca8-db4f1f5755e7", "perm-x")
    };
    let mut options = Options {
        stdin_check: StdinCheck::ExactJson,
        ..Options::default()
    };

    let reformatted: Vec<String> = recorded.iter().map(|l| compact(l)).collect();
    let (outcome, _) = run(
        &capture,
        &options,
        &reformatted.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_eq!(outcome.reason, EndReason::Completed);

    let renamed: Vec<String> = recorded.iter().map(|l| with_other_ids(l)).collect();
    let renamed: Vec<&str> = renamed.iter().map(String::as_str).collect();
    let (outcome, io) = run(&capture, &options, &renamed);
    assert_eq!(outcome.reason, EndReason::StdinMismatch);
    assert_eq!(diagnostic(&io)["received"]["request_id"], "req_9");

    options.ignore_keys = vec!["request_id".into()];
    let (outcome, io) = run(&capture, &options, &renamed);
    assert_eq!(
        outcome.reason,
        EndReason::Completed,
        "{:?}",
        io.stderr_lines()
    );
    assert_eq!(io.stdout_bytes(), capture.stdout_bytes());
}

#[test]
fn serve_turns_prints_the_capture_per_user_frame_and_answers_control_requests() {
    let options = Options {
        serve_turns: true,
        ..Options::default()
    };
    let capture = lines(&["start {{turn}}", "end {{turn}}"]);
    let init =
        r#"{"type":"control_request","request_id":"init_1","request":{"subtype":"initialize"}}"#;
    let user = r#"{"type":"user","message":{"role":"user","content":"hi"}}"#;
    let (outcome, io) = run(
        &capture,
        &options,
        &[init, user, r#"{"type":"control_response"}"#, "", user],
    );
    assert_eq!(outcome.reason, EndReason::Completed);
    let out: Vec<String> = String::from_utf8(io.stdout_bytes())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(out.len(), 5, "{out:?}");
    let reply: Value = serde_json::from_str(&out[0]).unwrap();
    assert_eq!(reply["type"], "control_response");
    assert_eq!(reply["response"]["request_id"], "init_1");
    assert_eq!(reply["response"]["subtype"], "success");
    assert_eq!(out[1..], ["start 1", "end 1", "start 2", "end 2"]);
}

#[test]
fn serve_turns_takes_plain_text_as_one_prompt_and_truncates_across_turns() {
    let served = Options {
        serve_turns: true,
        ..Options::default()
    };
    let (_, io) = run(&lines(&["t{{turn}}"]), &served, &["line one", "line two"]);
    assert_eq!(
        io.stdout_bytes(),
        b"t1\n",
        "a multi-line prompt is one turn"
    );

    let user = r#"{"type":"user"}"#;
    let truncated = Options {
        serve_turns: true,
        truncate_after: Some(3),
        ..Options::default()
    };
    let (outcome, io) = run(
        &lines(&["a{{turn}}", "b{{turn}}"]),
        &truncated,
        &[user, user, user],
    );
    assert_eq!(outcome.reason, EndReason::Truncated);
    assert_eq!(io.stdout_bytes(), b"a1\nb1\na2\n");
    assert_eq!(io.unread_stdin(), 1, "the third turn was never read");
}

#[test]
fn the_session_placeholder_follows_resume() {
    let capture = lines(&[r#"{"session_id":"{{session}}"}"#]);
    let fresh = with_session(&capture, &["-p".into()], 42);
    assert_eq!(
        fresh.stdout_lines(),
        [r#"{"session_id":"fake-session-42"}"#]
    );
    let resumed = with_session(&capture, &["--resume".into(), "s-9".into()], 42);
    assert_eq!(resumed.stdout_lines(), [r#"{"session_id":"s-9"}"#]);
}
