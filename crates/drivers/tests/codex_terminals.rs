//! The Codex app-server believes a `turn/completed` only for the thread its
//! `thread/start` opened and the turn its `turn/start` was answered with
//! (`codex exec`: a terminal only after its `thread.started`): anything else
//! is a protocol-violation notice, and a run that then ends without its own
//! terminal fails as a missing terminal that says what was ignored — never
//! `ok: true` with empty text.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::{Path, PathBuf};

use agent_adaptor_core::{Agent, Event, Runner, notice_kind};
use agent_adaptor_driver::RunEvent;
use agent_adaptor_drivers::codex::appserver::AppServerParser;
use agent_adaptor_drivers::codex::exec::ExecParser;
use agent_adaptor_drivers::codex::{self, Transport};
use agent_adaptor_drivers::exit::ExitFacts;
use agent_adaptor_drivers::pump::{LineProtocol, Out};
use agent_adaptor_drivers::terminal_guard::PROTOCOL_VIOLATION;
use agent_adaptor_testkit::replay::{OPTS_ENV, fake_cli_binary};
use futures::StreamExt;
use serde_json::json;

const THREAD: &str = "thread-ours";
const TURN: &str = "turn-ours";

fn turn_completed(thread: &str, turn: &str) -> String {
    json!({"method": "turn/completed", "params": {"threadId": thread, "turn": {"id": turn, "items": [], "status": "completed", "error": null}}, "emittedAtMs": 1}).to_string()
}

fn is_violation(out: &Out) -> bool {
    matches!(out, Out::Event(RunEvent::Lifecycle(ev)) if ev.metadata.get("reason").map(String::as_str) == Some(PROTOCOL_VIOLATION))
}

/// Feed `line`: it must be ignored (one protocol-violation notice, no end).
fn ignored(p: &mut AppServerParser, line: &str) {
    let outs = p.line(line.as_bytes());
    assert!(
        outs.iter().any(is_violation),
        "a protocol-violation notice for {line}: {outs:?}"
    );
    assert!(!LineProtocol::terminated(p), "{line} ended the run");
}

#[test]
fn a_turn_completed_is_believed_only_for_this_runs_thread_and_acknowledged_turn() {
    let mut p = AppServerParser::new(true, false, None);
    // Before thread/start was answered nothing is ours.
    ignored(&mut p, &turn_completed("unknown", "u1"));
    p.thread_opened(THREAD);
    // turn/start sent, not answered: even our thread's turn is not believed,
    // though a turn/started announced it.
    let started = json!({"method": "turn/started", "params": {"threadId": THREAD, "turn": {"id": TURN, "items": [], "status": "inProgress"}}}).to_string();
    p.line(started.as_bytes());
    ignored(&mut p, &turn_completed(THREAD, TURN));
    p.turn_accepted(TURN);
    ignored(&mut p, &turn_completed("another-thread", TURN));
    ignored(&mut p, &turn_completed(THREAD, "another-turn"));
    // Items of another turn do not become this turn's text.
    let other = json!({"method": "item/completed", "params": {"threadId": THREAD, "turnId": "another-turn", "item": {"type": "agentMessage", "id": "m0", "text": "not ours"}}}).to_string();
    p.line(other.as_bytes());
    let ours = json!({"method": "item/completed", "params": {"threadId": THREAD, "turnId": TURN, "item": {"type": "agentMessage", "id": "m1", "text": "ours"}}}).to_string();
    p.line(ours.as_bytes());
    let outs = p.line(turn_completed(THREAD, TURN).as_bytes());
    assert!(!outs.iter().any(is_violation));
    assert!(
        LineProtocol::terminated(&p),
        "our own terminal ends the run"
    );
    let (_, parsed) = p.finish(ExitFacts::exited(0));
    assert!(parsed.failure.is_none(), "{:?}", parsed.failure);
    assert_eq!(parsed.output, "ours");
}

#[test]
fn without_its_own_terminal_the_run_fails_naming_what_was_ignored() {
    let mut p = AppServerParser::new(true, false, None);
    p.thread_opened(THREAD);
    p.turn_accepted(TURN);
    ignored(&mut p, &turn_completed("another-thread", TURN));
    let (_, parsed) = p.finish(ExitFacts::exited(0));
    let f = parsed.failure.unwrap();
    assert_eq!(f.metadata["reason"], "missing_terminal");
    assert_eq!(f.metadata["ignored_terminals"], "1");
    assert!(
        f.message
            .contains("ignored a turn/completed for thread \"another-thread\""),
        "{}",
        f.message
    );
    assert!(parsed.terminal.is_none() && parsed.checkpoint.is_none());
}

#[test]
fn exec_believes_a_terminal_only_after_its_thread_started() {
    let capture = agent_adaptor_testkit::fixtures::load_path(
        &agent_adaptor_testkit::fixtures::path("codex/exec-basic.jsonl"),
    )
    .unwrap();
    let lines = capture.stdout_lines();
    let run = |lines: &[&str]| {
        let mut p = ExecParser::new(true, None);
        let mut violations = 0;
        for l in lines {
            violations += p
                .line(l.as_bytes())
                .iter()
                .filter(|o| is_violation(o))
                .count();
        }
        (violations, p.finish(ExitFacts::exited(0)).1.failure)
    };
    assert_eq!(run(&lines), (0, None), "the capture itself succeeds");
    let headless: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.contains("\"thread.started\""))
        .collect();
    let (violations, failure) = run(&headless);
    assert_eq!(violations, 1);
    let f = failure.unwrap();
    assert_eq!(f.metadata["reason"], "missing_terminal");
    assert!(
        f.message
            .contains("ignored a turn.completed before thread.started"),
        "{}",
        f.message
    );
}

// ---------------------------------------------------------------------------
// The driver against stand-in servers.

fn initialize_answered() -> Vec<String> {
    vec![
        r#"C->S {"id":1,"method":"initialize","params":{}}"#.into(),
        r#"S->C {"id":1,"result":{"userAgent":"stand-in","codexHome":"/tmp","platformFamily":"unix","platformOs":"linux"}}"#.into(),
    ]
}

fn thread_answered() -> Vec<String> {
    let mut f = initialize_answered();
    f.push(r#"C->S {"method":"initialized"}"#.into());
    f.push(r#"C->S {"id":2,"method":"thread/start","params":{}}"#.into());
    f.push(format!(
        r#"S->C {{"id":2,"result":{{"thread":{{"id":"{THREAD}"}}}}}}"#
    ));
    f.push(format!(
        r#"C->S {{"id":3,"method":"turn/start","params":{{"threadId":"{THREAD}"}}}}"#
    ));
    f
}

fn turn_answered() -> Vec<String> {
    let mut f = thread_answered();
    f.push(format!(
        r#"S->C {{"id":3,"result":{{"turn":{{"id":"{TURN}","items":[],"status":"inProgress"}}}}}}"#
    ));
    f
}

fn stand_in(dir: &Path, name: &str, mut frames: Vec<String>, bogus: &str) -> (Agent, PathBuf) {
    frames.push(format!("S->C {bogus}"));
    let path = dir.join(format!("{name}.transcript"));
    std::fs::write(&path, frames.join("\n") + "\n").unwrap();
    let stdin = dir.join(format!("{name}.stdin"));
    let mut cfg = codex::Config {
        command: fake_cli_binary().unwrap(),
        transport: Transport::AppServer,
        ..Default::default()
    };
    cfg.env.insert(
        OPTS_ENV.into(),
        format!(
            "--fixture {} --exit-after-replay --record-stdin {}",
            path.display(),
            stdin.display()
        ),
    );
    (Agent::new(codex::driver(cfg)), stdin)
}

#[tokio::test]
async fn a_stand_in_terminal_for_another_thread_or_turn_is_a_typed_failure_never_ok() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        // The issue's stand-in: initialize answered, then a terminal for an
        // unknown thread (turn/start never sent).
        (
            "before-thread",
            initialize_answered(),
            turn_completed("unknown", "u1"),
        ),
        // turn/start sent, not answered yet.
        (
            "before-turn-ack",
            thread_answered(),
            turn_completed(THREAD, TURN),
        ),
        (
            "another-thread",
            turn_answered(),
            turn_completed("another", TURN),
        ),
        (
            "another-turn",
            turn_answered(),
            turn_completed(THREAD, "another"),
        ),
    ];
    for (name, frames, bogus) in cases {
        let (agent, stdin) = stand_in(dir.path(), name, frames, &bogus);
        let mut stream = agent.stream("the prompt");
        let mut violations = Vec::new();
        while let Some(ev) = stream.next().await {
            if let Event::Notice(n) = &ev
                && n.kind == notice_kind::LIFECYCLE
                && n.metadata.get("reason").map(String::as_str) == Some(PROTOCOL_VIOLATION)
            {
                violations.push(n.data.clone());
            }
        }
        let outcome = stream.result().await;
        let err = match outcome {
            Ok(r) => panic!("{name}: ok although no terminal of ours came: {r:?}"),
            Err(e) => e,
        };
        let run = err.as_run_error().unwrap();
        assert!(
            run.message.contains("ignored a turn/completed"),
            "{name}: {}",
            run.message
        );
        assert_eq!(
            violations,
            vec![Some(json!({ "line": bogus }))],
            "{name}: one notice, the line kept"
        );
        let sent = std::fs::read_to_string(&stdin).unwrap_or_default();
        if name == "before-thread" {
            assert!(!sent.contains("turn/start"), "{name}: {sent}");
        }
    }
}
