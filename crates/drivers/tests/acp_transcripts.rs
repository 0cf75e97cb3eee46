//! Every recorded ACP transcript (`fixtures/acp/*.transcript`: Qwen Code,
//! Copilot CLI, opencode, CodeBuddy and the Zed adapters for Claude Code and
//! Codex, recorded offline against the mock) replayed through the ACP
//! parser, turn by turn, as the transport would feed it: the answer to
//! `session/new` or `session/load` opens the session, the answer to
//! `session/prompt` ends the turn. Each turn must obey the payload
//! lifecycle, show no protocol violation, end at its terminal, and end as
//! the recording did: a plain or approved turn with text and no failure, a
//! `-cancel` recording cancelled, an `-error` recording failed.
#![cfg(feature = "acp")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::collections::HashMap;
use std::path::PathBuf;

use agent_adaptor_driver::{FailureCode, LifecycleChecker, RunEvent, StreamCapability};
use agent_adaptor_drivers::acp::parse::AcpParser;
use agent_adaptor_drivers::exit::ExitFacts;
use agent_adaptor_drivers::one_shot::{Exit, Parsed};
use agent_adaptor_drivers::pump::{ControlFrame, LineProtocol, Out};
use agent_adaptor_drivers::terminal_guard::PROTOCOL_VIOLATION;
use serde_json::Value;

fn transcripts() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "transcript"))
        .collect();
    out.sort();
    out
}

/// One replayed turn: what the parser emitted and concluded.
struct Turn {
    outs: Vec<Out>,
    parsed: Parsed,
}

/// Replay one transcript: `C->A` frames say which of our requests an
/// answer belongs to, `A->C` frames are fed to a parser per turn.
fn replay(text: &str) -> Vec<Turn> {
    let mut methods: HashMap<String, String> = HashMap::new();
    let mut session = String::new();
    let mut parser: Option<AcpParser> = None;
    let mut outs = Vec::new();
    let mut turns = Vec::new();
    for line in text.lines() {
        if let Some(frame) = line.strip_prefix("C->A ") {
            let v: Value = serde_json::from_str(frame).unwrap();
            let Some(method) = v["method"].as_str() else {
                continue; // our answer to one of the agent's requests
            };
            if let Some(id) = v.get("id") {
                methods.insert(id.to_string(), method.to_owned());
            }
            match method {
                "session/load" => {
                    // A load answer names no session: the request does.
                    session = v["params"]["sessionId"].as_str().unwrap().to_owned();
                    let mut p = AcpParser::new("acp:test", true);
                    p.loading(None);
                    parser = Some(p);
                }
                "session/new" => parser = Some(AcpParser::new("acp:test", true)),
                "session/prompt" if parser.is_none() => {
                    // A later turn of the same process: the session is open.
                    let mut p = AcpParser::new("acp:test", true);
                    outs.extend(p.session_opened(&session, "session/new"));
                    parser = Some(p);
                }
                _ => {}
            }
            continue;
        }
        let frame = line
            .strip_prefix("A->C ")
            .unwrap_or_else(|| panic!("{line}"));
        let Some(p) = parser.as_mut() else {
            continue; // the answer to initialize
        };
        for out in p.line(frame.as_bytes()) {
            let Out::Control(ControlFrame::Response { id, result }) = &out else {
                outs.push(out);
                continue;
            };
            match methods.get(&id.to_string()).map(String::as_str) {
                Some(method @ ("session/new" | "session/load")) => {
                    if let Some(id) = result.as_ref().ok().and_then(|r| r["sessionId"].as_str()) {
                        session = id.to_owned();
                    }
                    outs.extend(p.session_opened(&session, method));
                }
                Some("session/prompt") => {
                    outs.extend(p.prompt_answered(result.clone()));
                    let exit = Exit {
                        process: ExitFacts::exited(0),
                        stderr_tail: None,
                    };
                    let (tail, parsed) = p.finish(&exit);
                    outs.extend(tail);
                    turns.push(Turn {
                        outs: std::mem::take(&mut outs),
                        parsed,
                    });
                    parser = None;
                    break;
                }
                _ => outs.push(out),
            }
        }
    }
    turns
}

fn check(name: &str, turn: &Turn) {
    let cap = StreamCapability {
        native: true,
        token_level: true,
        reasoning: true,
        tool_call_args: false,
        hitl: true,
        observation: agent_adaptor_drivers::acp::parse::OBSERVATION,
    };
    let mut checker = LifecycleChecker::new(cap);
    for out in &turn.outs {
        match out {
            Out::Stream(p) => checker
                .check(p)
                .unwrap_or_else(|e| panic!("{name}: {e}: {p:?}")),
            Out::Event(RunEvent::Lifecycle(ev)) => assert_ne!(
                ev.metadata.get("reason").map(String::as_str),
                Some(PROTOCOL_VIOLATION),
                "{name}: {ev:?}"
            ),
            _ => {}
        }
    }
    checker
        .finish(true)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(turn.parsed.terminal.is_some(), "{name}: no terminal");
}

#[test]
fn every_recorded_transcript_replays_as_it_was_recorded() {
    let files = transcripts();
    assert!(files.len() >= 20, "the recordings are missing: {files:?}");
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let turns = replay(&std::fs::read_to_string(&path).unwrap());
        assert!(!turns.is_empty(), "{name}: no turn");
        for turn in &turns {
            check(&name, turn);
        }
        let last = &turns.last().unwrap().parsed;
        if name.ends_with("-cancel.transcript") {
            let failure = last.failure.as_ref().unwrap_or_else(|| panic!("{name}"));
            assert_eq!(failure.code, FailureCode::Cancelled, "{name}");
        } else if name.ends_with("-error.transcript") {
            assert!(last.failure.is_some(), "{name}: a model error must fail");
        } else {
            for turn in &turns {
                let p = &turn.parsed;
                assert!(p.failure.is_none(), "{name}: {:?}", p.failure);
                assert!(!p.output.is_empty(), "{name}: a turn without text");
                assert!(p.checkpoint.as_ref().is_some_and(|c| c.valid), "{name}");
            }
        }
    }
}
