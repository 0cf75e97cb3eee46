//! The ACP parser on the real Gemini CLI `--acp` frames
//! (`fixtures/acp/gemini-acp-tool.jsonl`) and on edited copies: the event
//! mapping (text, tool calls with kind and locations, custom payloads),
//! the terminal and its usage, the stop reasons as typed failures, updates
//! of another session, the replay of a loaded session, and the payload
//! lifecycle rules.
#![cfg(feature = "acp")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use agent_adaptor_driver::{
    FailureCode, LifecycleChecker, RunEvent, StreamCapability, StreamKind, StreamPayload,
    TodoStatus,
};
use agent_adaptor_drivers::acp::parse::AcpParser;
use agent_adaptor_drivers::exit::ExitFacts;
use agent_adaptor_drivers::one_shot::{Exit, Parsed};
use agent_adaptor_drivers::pump::{ControlFrame, LineProtocol, Out};
use agent_adaptor_drivers::terminal_guard::PROTOCOL_VIOLATION;
use serde_json::{Value, json};

const SESSION: &str = "3e2a89e5-8924-4e33-a492-4d9df59b3c60";

fn fixture() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/acp/gemini-acp-tool.jsonl"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Feed `lines` as the transport would: the answer to `session/new` (id 2)
/// opens the session, the answer to `session/prompt` (id 3) is the
/// terminal; returns every output (control frames of other ids kept) and
/// the finished layers.
fn run(lines: &[String], load: bool) -> (Vec<Out>, Parsed) {
    let lines: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
    run_bytes(&lines, load)
}

/// [`run`] on raw lines.
fn run_bytes(lines: &[&[u8]], load: bool) -> (Vec<Out>, Parsed) {
    let mut p = AcpParser::new("acp:gemini", true);
    if load {
        p.loading(None);
    }
    let mut outs = Vec::new();
    for line in lines {
        for out in p.line(line) {
            match out {
                Out::Control(ControlFrame::Response { id, result }) if id == 2 => {
                    let id = result.as_ref().ok().and_then(|r| r["sessionId"].as_str());
                    outs.extend(p.session_opened(id.unwrap_or(SESSION), "session/new"));
                }
                Out::Control(ControlFrame::Response { id, result }) if id == 3 => {
                    outs.extend(p.prompt_answered(result));
                }
                other => outs.push(other),
            }
        }
    }
    let exit = Exit {
        process: ExitFacts::exited(0),
        stderr_tail: None,
    };
    let (tail, parsed) = p.finish(&exit);
    outs.extend(tail);
    (outs, parsed)
}

fn payloads(outs: &[Out]) -> Vec<&StreamPayload> {
    outs.iter()
        .filter_map(|o| match o {
            Out::Stream(p) => Some(p),
            _ => None,
        })
        .collect()
}

/// The transcript item of `kind`.
fn item(parsed: &Parsed, kind: &str) -> agent_adaptor_driver::TranscriptItem {
    parsed
        .transcript
        .iter()
        .map(|i| i.unwrap().into_owned())
        .find(|i| i.kind.as_str() == kind)
        .unwrap_or_else(|| panic!("no {kind} item"))
}

fn check_lifecycles(outs: &[Out]) {
    let cap = StreamCapability {
        native: true,
        token_level: true,
        reasoning: true,
        tool_call_args: false,
        hitl: true,
        observation: agent_adaptor_drivers::acp::parse::OBSERVATION,
    };
    let mut checker = LifecycleChecker::new(cap);
    for p in payloads(outs) {
        checker.check(p).unwrap_or_else(|e| panic!("{e}: {p:?}"));
    }
    checker.finish(true).unwrap();
}

/// `lines` with the frame whose `id` (or `sessionUpdate`) is `key` edited.
fn edited(key: &str, edit: impl Fn(&mut Value)) -> Vec<String> {
    fixture()
        .into_iter()
        .map(|l| {
            let mut v: Value = serde_json::from_str(&l).unwrap();
            let id = v["id"].as_i64().map(|i| i.to_string());
            let hit = id.as_deref() == Some(key) || v["params"]["update"]["sessionUpdate"] == key;
            if hit {
                edit(&mut v);
            }
            v.to_string()
        })
        .collect()
}

#[test]
fn the_gemini_capture_maps_to_text_a_tool_call_and_the_terminal() {
    let (outs, parsed) = run(&fixture(), false);
    check_lifecycles(&outs);
    assert_eq!(parsed.output, "Tool said hi.");
    assert!(parsed.failure.is_none(), "{:?}", parsed.failure);
    let usage = parsed.usage.clone().unwrap();
    assert_eq!(
        (usage.input_tokens, usage.output_tokens),
        (Some(200), Some(20))
    );
    assert_eq!(usage.total_tokens, Some(220));
    let cp = parsed.checkpoint.clone().unwrap();
    assert_eq!(cp.state.unwrap().resume_id, SESSION);
    let terminal = parsed.terminal.clone().unwrap();
    assert_eq!(terminal.event, "session/prompt");
    let kinds: Vec<String> = payloads(&outs)
        .iter()
        .map(|p| p.kind.name().to_owned())
        .collect();
    let start = kinds.iter().position(|k| k == "tool_call.start").unwrap();
    let end = kinds.iter().position(|k| k == "tool_call.end").unwrap();
    let text = kinds.iter().position(|k| k == "text.content").unwrap();
    assert!(start < end && end < text, "{kinds:?}");
    assert_eq!(kinds.last().unwrap(), "run.finished");
    // The tool call keeps ACP's kind and locations.
    let call = item(&parsed, "tool_call");
    assert_eq!(call.metadata["kind"], "execute");
    assert_eq!(call.metadata["locations"], "[]");
    assert_eq!(call.tool_name.as_deref(), Some("echo hi-from-tool"));
    let result = item(&parsed, "tool_result");
    assert!(!result.is_error);
    // available_commands_update is kept as a custom payload.
    assert!(payloads(&outs).iter().any(|p| matches!(&p.kind,
        StreamKind::Custom { name, .. } if name == "acp:gemini.available_commands_update")));
}

#[test]
fn stop_reasons_other_than_end_turn_are_typed_failures() {
    for (reason, code) in [
        ("cancelled", FailureCode::Cancelled),
        ("refusal", FailureCode::Other("refusal".into())),
        ("max_tokens", FailureCode::Other("max_tokens".into())),
        (
            "max_turn_requests",
            FailureCode::Other("max_turn_requests".into()),
        ),
    ] {
        let lines = edited("3", |v| v["result"]["stopReason"] = json!(reason));
        let (outs, parsed) = run(&lines, false);
        check_lifecycles(&outs);
        let f = parsed.failure.unwrap_or_else(|| panic!("{reason} fails"));
        assert_eq!(f.code, code, "{reason}");
        assert!(parsed.checkpoint.is_none_or(|c| !c.valid), "{reason}");
    }
    let lines = edited("3", |v| {
        v.as_object_mut().unwrap().remove("result");
        v["error"] =
            json!({"code": -32603, "message": "Internal error", "data": {"details": "quota"}});
    });
    let f = run(&lines, false).1.failure.unwrap();
    assert_eq!(f.code, FailureCode::AgentError);
    assert!(
        f.message.contains("Internal error") && f.message.contains("quota"),
        "{}",
        f.message
    );
}

#[test]
fn a_failed_tool_call_is_an_error_result() {
    let lines = edited("tool_call_update", |v| {
        v["params"]["update"]["status"] = json!("failed")
    });
    let (outs, parsed) = run(&lines, false);
    check_lifecycles(&outs);
    let result = item(&parsed, "tool_result");
    assert!(result.is_error);
}

#[test]
fn updates_of_another_session_are_violations_not_text() {
    let lines = edited("agent_message_chunk", |v| {
        v["params"]["sessionId"] = json!("other")
    });
    let (outs, parsed) = run(&lines, false);
    assert_eq!(parsed.output, "");
    assert!(outs.iter().any(|o| matches!(o,
        Out::Event(RunEvent::Lifecycle(ev)) if ev.metadata.get("reason").map(String::as_str) == Some(PROTOCOL_VIOLATION))));
}

#[test]
fn a_loaded_sessions_replay_is_counted_not_emitted() {
    // The updates before the answer to session/new (here: the load) are
    // the history.
    let mut lines = fixture();
    let open = lines.remove(1);
    let prompt_answer = lines.pop().unwrap();
    let history: Vec<String> = lines.drain(1..).collect();
    let mut replay = vec![lines[0].clone()];
    replay.extend(history);
    replay.push(open);
    replay.push(
        json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION,
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "new"}}}})
        .to_string(),
    );
    replay.push(prompt_answer);
    let (outs, parsed) = run(&replay, true);
    check_lifecycles(&outs);
    assert_eq!(parsed.output, "new");
    assert!(
        !payloads(&outs)
            .iter()
            .any(|p| p.kind.name() == "tool_call.start")
    );
}

#[test]
fn a_stream_without_its_terminal_fails_as_missing() {
    let mut lines = fixture();
    lines.pop();
    let (outs, parsed) = run(&lines, false);
    check_lifecycles(&outs);
    let f = parsed.failure.unwrap();
    assert!(f.is_missing_terminal(), "{f:?}");
    assert!(parsed.checkpoint.is_none_or(|c| !c.valid));
}

#[test]
fn garbage_lines_never_panic() {
    let mut p = AcpParser::new("acp:x", true);
    for line in [
        "",
        "not json",
        "{",
        "[]",
        "{\"jsonrpc\":\"2.0\"}",
        "{\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"nope\"}}}",
        "{\"method\":\"session/update\",\"params\":7}",
        "{\"id\":{},\"result\":1}",
    ] {
        let _ = p.line(line.as_bytes());
    }
    assert!(!p.terminated());
}

/// The fuzz harness: mutations of the real capture, fed as the transport
/// would (sessions opened, prompts answered), never panic and always keep
/// the payload lifecycle rules.
#[test]
fn fuzzed_frames_keep_the_lifecycle_rules() {
    use agent_adaptor_conformance::fuzz::{FuzzConfig, fuzz_inputs};
    let seed = fixture().join("\n").into_bytes();
    fuzz_inputs(
        &[&seed],
        FuzzConfig {
            cases: 400,
            ..FuzzConfig::default()
        },
        |input| {
            let lines: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
            let (outs, _) = run_bytes(&lines, false);
            check_lifecycles(&outs);
        },
    );
}

/// Qwen Code's usage: no usage in the `session/prompt` result, but each
/// model call's in the `_meta` of an empty `agent_message_chunk`; the
/// turn's usage is their sum (and the empty chunks are no text).
#[test]
fn per_call_usage_on_message_chunks_is_summed() {
    let chunk = |input: u64| {
        json!({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": SESSION,
            "update": {"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": ""},
                "_meta": {"usage": {"inputTokens": input, "outputTokens": 10,
                    "totalTokens": input + 10, "cachedReadTokens": 20}}}}})
        .to_string()
    };
    let mut lines = edited("3", |v| v["result"] = json!({"stopReason": "end_turn"}));
    let last = lines.pop().unwrap();
    lines.extend([chunk(100), chunk(150), last]);
    let (outs, parsed) = run(&lines, false);
    check_lifecycles(&outs);
    assert_eq!(parsed.output, "Tool said hi.");
    let usage = parsed.usage.unwrap();
    assert_eq!(usage.input_tokens, Some(250));
    assert_eq!(usage.output_tokens, Some(20));
    assert_eq!(usage.total_tokens, Some(270));
    assert_eq!(usage.cached_input_tokens, Some(40));
    assert_eq!(usage.reasoning_tokens, None);
}

/// A `plan` update is the whole todo list: numbered per change, a repeat
/// left out; an image chunk is an image observation; both pass OBS-05–08.
#[test]
fn plans_are_todo_snapshots_and_image_chunks_are_images() {
    let update = |u: Value| {
        json!({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": SESSION, "update": u}})
        .to_string()
    };
    let plan = |second: &str| {
        update(json!({"sessionUpdate": "plan", "entries": [
            {"content": "Read", "priority": "high", "status": "completed"},
            {"content": "Write", "priority": "low", "status": second}]}))
    };
    let image = update(json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}}));
    let mut lines = fixture();
    let last = lines.pop().unwrap();
    lines.extend([
        plan("pending"),
        plan("pending"),
        plan("in_progress"),
        image,
        last,
    ]);
    let (outs, _) = run(&lines, false);
    check_lifecycles(&outs);
    let todos: Vec<_> = payloads(&outs)
        .into_iter()
        .filter_map(|p| match &p.kind {
            StreamKind::TodoUpdated(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(todos.len(), 2, "the repeated plan is left out");
    assert_eq!((todos[0].revision, todos[1].revision), (1, 2));
    assert_eq!(todos[1].items[1].status, TodoStatus::InProgress);
    assert_eq!(todos[0].items[0].priority.as_deref(), Some("high"));
    assert_eq!(
        todos[0]
            .items
            .iter()
            .map(|i| i.id.as_str())
            .collect::<Vec<_>>(),
        ["1", "2"]
    );
    let images: Vec<_> = payloads(&outs)
        .into_iter()
        .filter_map(|p| match &p.kind {
            StreamKind::Image(i) => Some(i.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].mime_type, "image/png");
    assert_eq!(images[0].data.as_deref(), Some("iVBORw0KGgo="));
}
