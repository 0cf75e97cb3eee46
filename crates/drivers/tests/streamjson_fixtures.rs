//! The stream-json parser on every recorded Claude and CodeBuddy capture, in
//! every mode: the lifecycle is valid, the transcript mirror holds, the
//! terminal JSON is the exact `result` line, and each capture's meaning
//! (answer, failure, usage, checkpoint, token-level deltas) comes out right.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::PathBuf;

use agent_adaptor_driver::{
    FailureCode, LifecycleChecker, RunEvent, StreamCapability, StreamKind, StreamPayload,
    TranscriptItem, TranscriptKind,
};
use agent_adaptor_drivers::streamjson::{
    CLAUDE, CODEBUDDY, ExitFacts, Family, Out, Parsed, Parser,
};

fn capture(rel: &str) -> Vec<Vec<u8>> {
    let dir = std::env::var_os("AGENT_ADAPTOR_FIXTURES").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/cli-captures"),
        PathBuf::from,
    );
    let bytes = std::fs::read(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

struct Run {
    payloads: Vec<StreamPayload>,
    items: Vec<TranscriptItem>,
    notices: Vec<RunEvent>,
    parsed: Parsed,
    result_line: Option<String>,
}

fn run(family: &'static Family, rel: &str, payloads: bool, partials: bool, exit: i32) -> Run {
    let lines = capture(rel);
    let mut parser = Parser::new(family, payloads, partials);
    let mut outs = Vec::new();
    for l in &lines {
        outs.extend(parser.line(l));
    }
    let (tail, parsed) = parser.finish(ExitFacts::exited(exit));
    outs.extend(tail);
    let mut run = Run {
        payloads: Vec::new(),
        items: Vec::new(),
        notices: Vec::new(),
        parsed,
        result_line: lines
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .find(|l| l.contains("\"type\":\"result\"")),
    };
    for o in outs {
        match o {
            Out::Stream(p) => run.payloads.push(p),
            Out::Event(RunEvent::Item(i)) => run
                .items
                .push(std::sync::Arc::unwrap_or_clone(i.into_arc())),
            Out::Event(e) => run.notices.push(e),
            Out::Control(_) => {}
        }
    }
    // Contract checks common to every capture and mode.
    let mut rules = LifecycleChecker::new(StreamCapability::FULL);
    for (i, p) in run.payloads.iter().enumerate() {
        rules
            .check(p)
            .unwrap_or_else(|v| panic!("{rel} payload #{i} {}: {v}", p.kind.name()));
    }
    if payloads {
        rules.finish(true).unwrap_or_else(|v| panic!("{rel}: {v}"));
    } else {
        assert!(run.payloads.is_empty(), "{rel}: payloads while off");
    }
    assert_eq!(run.items, run.parsed.transcript, "{rel}: transcript mirror");
    for item in &run.items {
        item.validate().unwrap_or_else(|v| panic!("{rel}: {v}"));
    }
    if let (Some(t), Some(line)) = (&run.parsed.terminal, &run.result_line) {
        assert_eq!(t.event, "result");
        assert_eq!(
            t.json.get(),
            line.as_str(),
            "{rel}: terminal JSON is the exact line"
        );
    }
    run
}

/// Every mode a capture can be parsed in: payloads off; payloads from whole
/// messages; and token-level when the capture has `stream_event` lines.
fn all_modes(family: &'static Family, rel: &str, exit: i32) -> Vec<Run> {
    let partial = capture(rel)
        .iter()
        .any(|l| String::from_utf8_lossy(l).contains("\"type\":\"stream_event\""));
    let mut runs = vec![
        run(family, rel, false, false, exit),
        run(family, rel, true, false, exit),
    ];
    if partial {
        runs.push(run(family, rel, true, true, exit));
    }
    runs
}

fn text_deltas(r: &Run) -> Vec<String> {
    r.payloads
        .iter()
        .filter_map(|p| match &p.kind {
            StreamKind::TextContent { delta, .. } => Some(delta.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn claude_basic() {
    for r in all_modes(&CLAUDE, "claude/print-basic.jsonl", 0) {
        assert_eq!(r.parsed.output, "Hello from mock.");
        assert!(r.parsed.failure.is_none());
        let usage = r.parsed.usage.as_ref().unwrap();
        assert_eq!(
            (usage.input_tokens, usage.output_tokens),
            (Some(100), Some(12))
        );
        assert_eq!(usage.cost_usd, Some(0.00064));
        let cp = r
            .parsed
            .checkpoint
            .as_ref()
            .expect("a successful result gives a checkpoint");
        assert!(cp.valid);
        assert_eq!(
            cp.state.as_ref().unwrap().resume_id,
            "1aa0c6ec-0eea-4dba-903f-e28b44bf2f35"
        );
        assert_eq!(r.parsed.model, "claude-opus-5-5");
        let kinds: Vec<_> = r.items.iter().map(|i| i.kind).collect();
        assert_eq!(
            kinds,
            [
                TranscriptKind::Init,
                TranscriptKind::Thinking,
                TranscriptKind::Assistant,
                TranscriptKind::Result
            ]
        );
    }
}

#[test]
fn claude_partial_messages_stream_token_level() {
    let r = run(
        &CLAUDE,
        "claude/print-partial-permission-denied.jsonl",
        true,
        true,
        0,
    );
    assert_eq!(text_deltas(&r), ["Running it.", "Tool s", "aid hi."]);
    let args: Vec<_> = r
        .payloads
        .iter()
        .filter_map(|p| match &p.kind {
            StreamKind::ToolCallArgs { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(args.len(), 1);
    assert!(args[0].contains("touch made-by-tool.txt"));
    // The denied tool's result comes back as an error result.
    let result = r
        .items
        .iter()
        .find(|i| i.kind == TranscriptKind::ToolResult)
        .unwrap();
    assert!(result.is_error);
    assert_eq!(r.parsed.output, "Tool said hi.");
    // The denial notice is kept, not swallowed.
    assert!(r.notices.iter().any(|n| matches!(n,
        RunEvent::Lifecycle(o) if o.metadata.get("subtype").map(String::as_str) == Some("permission_denied"))));
    // Without partials the same capture gives whole-message text, never both.
    let whole = run(
        &CLAUDE,
        "claude/print-partial-permission-denied.jsonl",
        true,
        false,
        0,
    );
    assert_eq!(text_deltas(&whole), ["Running it.", "Tool said hi."]);
}

#[test]
fn claude_tool_call_and_result() {
    for r in all_modes(&CLAUDE, "claude/print-tool-autoallowed.jsonl", 0) {
        assert_eq!(r.parsed.output, "Tool said hi.");
        let call = r
            .items
            .iter()
            .find(|i| i.kind == TranscriptKind::ToolCall)
            .unwrap();
        assert_eq!(call.tool_name.as_deref(), Some("Bash"));
        let res = r
            .items
            .iter()
            .find(|i| i.kind == TranscriptKind::ToolResult)
            .unwrap();
        assert_eq!(res.text, "hi-from-tool");
        assert!(!res.is_error);
        if !r.payloads.is_empty() {
            assert!(r.payloads.iter().any(|p| matches!(&p.kind,
                StreamKind::ToolCallResult { tool_call_id, .. } if tool_call_id == "toolu_3a3736928f")));
        }
    }
}

#[test]
fn claude_api_error_is_a_failure_without_checkpoint() {
    for r in all_modes(&CLAUDE, "claude/print-api-error-400.jsonl", 1) {
        let f = r
            .parsed
            .failure
            .as_ref()
            .expect("is_error with subtype success is a failure");
        assert_eq!(f.code, FailureCode::AgentError);
        assert!(f.message.contains("API Error: 400"), "{}", f.message);
        assert_eq!(
            f.metadata.get("api_error_status").map(String::as_str),
            Some("400")
        );
        assert!(r.parsed.checkpoint.is_none());
        assert!(
            !r.parsed.output.contains("API Error"),
            "the synthetic error message is not the answer"
        );
        if !r.payloads.is_empty() {
            assert!(matches!(
                r.payloads.last().unwrap().kind,
                StreamKind::RunError { .. }
            ));
        }
    }
}

#[test]
fn claude_max_turns() {
    for r in all_modes(&CLAUDE, "claude/print-error-max-turns.jsonl", 1) {
        let f = r.parsed.failure.as_ref().unwrap();
        assert_eq!(f.code, FailureCode::Other("max_turns".into()));
        assert_eq!(f.message, "Reached maximum number of turns (1)");
        assert!(r.parsed.checkpoint.is_none());
    }
}

#[test]
fn claude_json_schema_keeps_the_structured_output() {
    for r in all_modes(&CLAUDE, "claude/print-json-schema.jsonl", 0) {
        assert_eq!(
            r.parsed.structured_output,
            Some(serde_json::json!({"answer": "ok"}))
        );
    }
}

#[test]
fn claude_resume_keeps_the_session() {
    for r in all_modes(&CLAUDE, "claude/print-resume.jsonl", 0) {
        assert!(r.parsed.checkpoint.is_some());
        assert_eq!(r.parsed.output, "Tool said hi.");
    }
}

#[test]
fn codebuddy_basic_and_partial() {
    for rel in [
        "codebuddy/print-basic.jsonl",
        "codebuddy/print-partial.jsonl",
    ] {
        for r in all_modes(&CODEBUDDY, rel, 0) {
            assert_eq!(r.parsed.output, "Hello from mock chat.", "{rel}");
            assert!(r.parsed.failure.is_none());
            assert!(r.parsed.checkpoint.is_some());
            // CodeBuddy's extra top-level line type is kept, not swallowed.
            let custom = r.payloads.iter().any(|p| {
                matches!(&p.kind,
                StreamKind::Custom { name, .. } if name == "codebuddy.file-history-snapshot")
            });
            let noticed = r.notices.iter().any(|n| {
                matches!(n, RunEvent::Lifecycle(o)
                if o.text.contains("file-history-snapshot"))
            });
            assert!(custom || noticed, "{rel}");
        }
    }
}

#[test]
fn codebuddy_api_error_fails_even_with_exit_code_zero() {
    for r in all_modes(&CODEBUDDY, "codebuddy/print-api-error.jsonl", 0) {
        let f = r.parsed.failure.as_ref().unwrap();
        assert!(f.message.contains("400 mock http failure"));
        assert!(
            r.parsed.checkpoint.is_none(),
            "exit 0 does not make it healthy"
        );
    }
}

#[test]
fn codebuddy_tool_results_at_top_level() {
    // CodeBuddy sets parent_tool_use_id to the tool's own id at top level.
    for r in all_modes(
        &CODEBUDDY,
        "codebuddy/print-tool-denied-noninteractive.jsonl",
        0,
    ) {
        let res = r
            .items
            .iter()
            .find(|i| i.kind == TranscriptKind::ToolResult)
            .unwrap();
        assert!(!res.metadata.contains_key("parent_tool_use_id"));
        assert_eq!(r.parsed.output, "Tool said hi.");
        if !r.payloads.is_empty() {
            assert!(
                r.payloads
                    .iter()
                    .any(|p| matches!(p.kind, StreamKind::ToolCallResult { .. }))
            );
        }
    }
}

#[test]
fn a_missing_result_line_is_a_failure_with_a_closed_lifecycle() {
    let lines = capture("claude/print-partial-permission-denied.jsonl");
    for cut in [3usize, 6, 9, 20] {
        let mut parser = Parser::new(&CLAUDE, true, true);
        let mut payloads = Vec::new();
        for l in &lines[..cut] {
            payloads.extend(parser.line(l).into_iter().filter_map(|o| match o {
                Out::Stream(p) => Some(p),
                _ => None,
            }));
        }
        let (tail, parsed) = parser.finish(ExitFacts::exited(1));
        payloads.extend(tail.into_iter().filter_map(|o| match o {
            Out::Stream(p) => Some(p),
            _ => None,
        }));
        let mut rules = LifecycleChecker::new(StreamCapability::FULL);
        for p in &payloads {
            rules.check(p).unwrap_or_else(|v| panic!("cut {cut}: {v}"));
        }
        rules.finish(true).unwrap();
        let f = parsed.failure.expect("no result line is a failure");
        assert_eq!(
            f.metadata.get("reason").map(String::as_str),
            Some("missing_terminal")
        );
        assert!(parsed.checkpoint.is_none());
        assert!(parsed.terminal.is_none());
    }
}

#[test]
fn noise_and_malformed_lines_are_notices_never_fatal() {
    let mut parser = Parser::new(&CLAUDE, true, false);
    let mut outs = Vec::new();
    outs.extend(parser.line(b"[claude-code:unrecognized_model] {\"model\":\"x\"}"));
    outs.extend(parser.line(b"{\"type\":\"assistant\",\"message\":"));
    outs.extend(parser.line(&[0xff, 0xfe, b'{']));
    outs.extend(parser.line(b"{\"type\":\"rate_limit_event\",\"rate_limit_info\":{}}"));
    let notices = outs
        .iter()
        .filter(|o| matches!(o, Out::Event(RunEvent::Lifecycle(_))))
        .count();
    assert_eq!(notices, 3);
    assert!(outs.iter().any(|o| matches!(o, Out::Stream(p)
        if matches!(&p.kind, StreamKind::Custom { name, .. } if name == "claude.rate_limit_event"))));
    let (_, parsed) = parser.finish(ExitFacts::default());
    assert!(parsed.failure.is_some());
}

#[test]
fn control_requests_are_handed_to_the_transport() {
    let mut parser = Parser::new(&CLAUDE, true, false);
    let outs = parser.line(
        br#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash"}}"#,
    );
    assert!(
        matches!(&outs[..], [Out::Control(agent_adaptor_drivers::streamjson::ControlFrame::Request { id, .. })] if id == "r1")
    );
}
