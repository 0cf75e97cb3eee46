//! The session-scoped terminals of the JSONL families (stream-json for
//! Claude Code and CodeBuddy, Gemini CLI, Cursor Agent): a `result` line is
//! believed only after the run's own init line and only for the session that
//! init announced. Anything else is a protocol-violation notice, the run goes
//! on, and a run that then ends without its own terminal fails as a missing
//! terminal naming what was ignored. Built on the real captures, edited.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

#[allow(dead_code)] // this binary uses only `lines`
mod jsonl_common;

use agent_adaptor_core::{Agent, Event, Runner, notice_kind};
use agent_adaptor_driver::{RunEvent, RunFailure};
use agent_adaptor_drivers::claude;
use agent_adaptor_drivers::cursor::parse::CursorParser;
use agent_adaptor_drivers::gemini::parse::GeminiParser;
use agent_adaptor_drivers::one_shot::Exit;
use agent_adaptor_drivers::pump::Out as PumpOut;
use agent_adaptor_drivers::streamjson::{CLAUDE, CODEBUDDY, ExitFacts, Family, Out, Parser};
use agent_adaptor_drivers::terminal_guard::PROTOCOL_VIOLATION;
use agent_adaptor_testkit::replay::{OPTS_ENV, fake_cli_binary};
use futures::StreamExt;
use jsonl_common::lines;
use serde_json::{Value, json};

/// `lines` with the line whose `type` (and `subtype`) match dropped or
/// edited by `edit` (which returns `None` to drop it).
fn edited(lines: &[String], kind: &str, edit: impl Fn(Value) -> Option<Value>) -> Vec<String> {
    let (ty, sub) = kind.split_once('/').unwrap_or((kind, ""));
    lines
        .iter()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let hit = v["type"] == ty && (sub.is_empty() || v["subtype"] == sub);
            if hit {
                edit(v).map(|v| v.to_string())
            } else {
                Some(l.clone())
            }
        })
        .collect()
}

fn other_session(mut v: Value) -> Option<Value> {
    v["session_id"] = json!("someone-elses-session");
    Some(v)
}

fn is_violation(ev: &RunEvent) -> bool {
    matches!(ev, RunEvent::Lifecycle(n) if n.metadata.get("reason").map(String::as_str) == Some(PROTOCOL_VIOLATION))
}

/// The failure must be the missing terminal naming the ignored line.
fn missing_naming(what: &str, f: Option<RunFailure>, ignored: &str) {
    let f = f.unwrap_or_else(|| panic!("{what}: believed a terminal that is not the run's"));
    assert_eq!(f.metadata["reason"], "missing_terminal", "{what}");
    assert!(f.message.contains(ignored), "{what}: {}", f.message);
    assert_eq!(f.metadata["ignored_terminals"], "1", "{what}");
}

// ---------------------------------------------------------------------------
// stream-json (Claude Code, CodeBuddy)

fn stream_json(family: &'static Family, lines: &[String]) -> (usize, Option<RunFailure>, String) {
    let mut p = Parser::new(family, true, false);
    let mut violations = 0;
    for l in lines {
        for o in p.line(l.as_bytes()) {
            if matches!(&o, Out::Event(ev) if is_violation(ev)) {
                violations += 1;
            }
        }
    }
    let (_, parsed) = p.finish(ExitFacts::exited(0));
    (violations, parsed.failure, parsed.output)
}

#[test]
fn stream_json_believes_only_a_result_of_its_own_init_session() {
    for (family, capture) in [
        (&CLAUDE, "claude/print-basic.jsonl"),
        (&CODEBUDDY, "codebuddy/print-basic.jsonl"),
    ] {
        let base = lines(capture);
        let (v, f, _) = stream_json(family, &base);
        assert!(
            f.is_none() && v == 0,
            "{capture}: the capture itself succeeds"
        );

        let no_init = edited(&base, "system/init", |_| None);
        let (v, f, _) = stream_json(family, &no_init);
        assert_eq!(v, 1, "{capture}: a notice");
        missing_naming(capture, f, "ignored a result line before system/init");

        let foreign = edited(&base, "result", other_session);
        let (v, f, _) = stream_json(family, &foreign);
        assert_eq!(v, 1, "{capture}: a notice");
        missing_naming(
            capture,
            f,
            "ignored a result line for session \"someone-elses-session\"",
        );

        // A stray terminal before the real one: ignored, the run goes on.
        let stray = foreign
            .iter()
            .rfind(|l| l.contains("someone-elses"))
            .unwrap();
        let mut both = base.clone();
        let at = both.len() - 1;
        both.insert(at, stray.clone());
        let (v, f, output) = stream_json(family, &both);
        assert_eq!(v, 1);
        assert!(f.is_none(), "{capture}: {f:?}");
        assert!(!output.is_empty());
    }
}

#[tokio::test]
async fn a_claude_stand_in_with_a_result_for_another_session_is_a_typed_failure() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = edited(&lines("claude/print-basic.jsonl"), "result", other_session);
    let path = dir.path().join("foreign.jsonl");
    std::fs::write(&path, foreign.join("\n") + "\n").unwrap();
    let mut cfg = claude::config();
    cfg.command = fake_cli_binary().unwrap();
    cfg.env
        .insert(OPTS_ENV.into(), format!("--fixture {}", path.display()));
    let agent = Agent::new(claude::driver(cfg));
    let mut stream = agent.stream("hi");
    let mut violations = 0;
    while let Some(ev) = stream.next().await {
        if let Event::Notice(n) = &ev
            && n.kind == notice_kind::LIFECYCLE
            && n.metadata.get("reason").map(String::as_str) == Some(PROTOCOL_VIOLATION)
        {
            violations += 1;
        }
    }
    let err = stream.result().await.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert!(
        run.message.contains("ignored a result line"),
        "{}",
        run.message
    );
    assert_eq!(violations, 1);
}

const CONTROL: &str = "claude/control-can-use-tool-allow.transcript";

fn is_init_answer(l: &str) -> bool {
    l.contains("\"control_response\"") && l.contains("\"req_1_init\"")
}

#[test]
fn the_control_transport_believes_a_result_only_after_initialize_was_answered() {
    let run = |lines: &[String]| {
        let mut p = Parser::new(&CLAUDE, true, false);
        p.expect_initialize_answer();
        let mut violations = 0;
        for l in lines {
            for o in p.line(l.as_bytes()) {
                violations += usize::from(matches!(&o, Out::Event(ev) if is_violation(ev)));
            }
        }
        let exit = ExitFacts::exited(0);
        (violations, p.finish(exit).1.failure)
    };
    let base = lines(CONTROL);
    assert!(base.iter().any(|l| is_init_answer(l)));
    assert_eq!(run(&base), (0, None), "the capture itself succeeds");
    let unanswered: Vec<String> = base.into_iter().filter(|l| !is_init_answer(l)).collect();
    let (violations, f) = run(&unanswered);
    assert_eq!(violations, 1);
    missing_naming(
        CONTROL,
        f,
        "ignored a result line before initialize was answered",
    );
}

#[tokio::test]
async fn a_control_stand_in_that_never_answers_initialize_is_a_typed_failure() {
    let dir = tempfile::tempdir().unwrap();
    let capture = agent_adaptor_testkit::fixtures::path(CONTROL);
    let text = std::fs::read_to_string(capture).unwrap();
    let kept: Vec<&str> = text.lines().filter(|l| !is_init_answer(l)).collect();
    let path = dir.path().join("unanswered.transcript");
    std::fs::write(&path, kept.join("\n") + "\n").unwrap();
    let mut cfg = claude::config();
    cfg.command = fake_cli_binary().unwrap();
    cfg.host_approvals = true;
    // An ignored result leaves stdin open (the turn is not over): the
    // stand-in exits after its last line rather than waiting for EOF.
    cfg.env.insert(
        OPTS_ENV.into(),
        format!("--fixture {} --exit-after-replay", path.display()),
    );
    let agent = Agent::new(claude::driver(cfg));
    let mut stream = agent.stream("RUNTOOL TOUCH please");
    while let Some(ev) = stream.next().await {
        if let Event::ApprovalRequest(req) = &ev {
            req.approve().unwrap();
        }
    }
    let err = stream.result().await.unwrap_err();
    let run = err.as_run_error().unwrap();
    assert!(
        run.message
            .contains("ignored a result line before initialize was answered"),
        "{}",
        run.message
    );
}

// ---------------------------------------------------------------------------
// Gemini CLI and Cursor Agent (the pump's parsers)

fn pump_run<P: agent_adaptor_drivers::pump::LineProtocol>(
    mut p: P,
    lines: &[String],
    finish: impl FnOnce(&mut P) -> Option<RunFailure>,
) -> (usize, Option<RunFailure>) {
    let mut violations = 0;
    for l in lines {
        for o in p.line(l.as_bytes()) {
            if matches!(&o, PumpOut::Event(ev) if is_violation(ev)) {
                violations += 1;
            }
        }
    }
    (violations, finish(&mut p))
}

fn clean() -> Exit {
    Exit {
        process: ExitFacts::exited(0),
        ..Exit::default()
    }
}

#[test]
fn gemini_believes_only_a_result_after_its_init_and_of_its_session() {
    let gemini = |lines: &[String]| {
        pump_run(GeminiParser::new(true), lines, |p| {
            p.finish(&clean()).1.failure
        })
    };
    let base = lines("gemini/stream-basic.jsonl");
    assert_eq!(gemini(&base), (0, None));

    let (v, f) = gemini(&edited(&base, "init", |_| None));
    assert_eq!(v, 1);
    missing_naming("gemini", f, "ignored a result line before init");

    // 0.61's result names no session; one that names another is not ours.
    let (v, f) = gemini(&edited(&base, "result", other_session));
    assert_eq!(v, 1);
    missing_naming("gemini", f, "for session \"someone-elses-session\"");
}

#[test]
fn cursor_believes_only_a_result_after_its_init_and_of_its_session() {
    let cursor = |lines: &[String]| {
        pump_run(CursorParser::new(true), lines, |p| {
            p.finish(&clean()).1.failure
        })
    };
    let base = lines("own/cursor/success.jsonl");
    assert_eq!(cursor(&base), (0, None));

    let (v, f) = cursor(&edited(&base, "system/init", |_| None));
    assert_eq!(v, 1);
    missing_naming("cursor", f, "ignored a result line before system/init");

    let (v, f) = cursor(&edited(&base, "result", other_session));
    assert_eq!(v, 1);
    missing_naming("cursor", f, "for session \"someone-elses-session\"");
}
