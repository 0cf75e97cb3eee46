//! Wire-level tests of the driver SPI types: the serde shape of stream
//! payloads, transcript field rules (TRN-*), failure codes, the provider
//! terminal payload and raw byte streams.

use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_adaptor_driver::{
    DecisionKind, DecisionRequest, DecisionResult, FailureCode, HitlRequested, HitlResolved,
    ProviderCoords, ProviderDrop, RawBytes, RawSource, RawStreams, Role, RunFailure, StreamKind,
    StreamPayload, TerminalPayload, ToolScope, TranscriptItem, TranscriptKind, TranscriptViolation,
    Usage,
};
use bytes::Bytes;
use serde_json::{Value, json};

// ================================================================ StreamPayload

/// One payload of every canonical kind, with the kind name it must carry.
fn canonical_payloads() -> Vec<(&'static str, StreamPayload)> {
    let mut request = DecisionRequest::new(DecisionKind::Permission, "drv.can_use_tool");
    request.prompt = "Allow shell?".into();
    request.payload = Some(json!({"tool": "shell"}));
    vec![
        ("run.started", StreamPayload::run_started()),
        (
            "run.finished",
            StreamPayload::run_finished(Some(Usage {
                input_tokens: Some(10),
                output_tokens: Some(4),
                cost_usd: Some(0.25),
                ..Default::default()
            })),
        ),
        (
            "run.error",
            StreamPayload::run_error(RunFailure::new(FailureCode::AgentError, "exit 2")),
        ),
        ("step.started", StreamPayload::step_started("plan")),
        ("step.finished", StreamPayload::step_finished("plan")),
        ("text.start", StreamPayload::text_start("m1")),
        ("text.content", StreamPayload::text_content("m1", "hello")),
        ("text.end", StreamPayload::text_end("m1")),
        ("reasoning.start", StreamPayload::reasoning_start("r1")),
        (
            "reasoning.content",
            StreamPayload::reasoning_content("r1", "hmm"),
        ),
        ("reasoning.end", StreamPayload::reasoning_end("r1")),
        (
            "tool_call.start",
            StreamPayload::tool_call_start("t1", "shell", Some(json!({"cmd": "ls"}))),
        ),
        (
            "tool_call.args",
            StreamPayload::tool_call_args("t1", "{\"a\":"),
        ),
        (
            "tool_call.end",
            StreamPayload::tool_call_end("t1", Some(json!({"exit": 0}))),
        ),
        (
            "tool_call.result",
            StreamPayload::tool_call_result("t1", Some(json!("out"))),
        ),
        (
            "hitl.requested",
            StreamKind::HitlRequested(Box::new(HitlRequested { request })).into(),
        ),
        (
            "hitl.resolved",
            StreamKind::HitlResolved(Box::new(HitlResolved {
                request_id: "req-1".into(),
                result: DecisionResult::Approved,
                choice: "allow".into(),
                resolved_at: None,
                attempt: 1,
            }))
            .into(),
        ),
        (
            "stream.dropped",
            StreamKind::Dropped(ProviderDrop {
                dropped_count: 3,
                first_sequence: Some(10),
                last_sequence: Some(12),
                reason: "buffer full".into(),
                ..Default::default()
            })
            .into(),
        ),
    ]
}

#[track_caller]
fn serialized_kind(p: &StreamPayload) -> String {
    let v = match serde_json::to_value(p) {
        Ok(v) => v,
        Err(e) => panic!("{} does not serialize: {e}", p.kind.name()),
    };
    v["kind"]
        .as_str()
        .unwrap_or_else(|| panic!("no string kind in {v}"))
        .to_owned()
}

#[test]
fn canonical_list_covers_eighteen_distinct_kinds() {
    let names: std::collections::BTreeSet<_> =
        canonical_payloads().iter().map(|(n, _)| *n).collect();
    assert_eq!(names.len(), 18);
}

#[test]
fn kind_run_started_serializes_as_run_started() {
    assert_eq!(
        serialized_kind(&StreamPayload::run_started()),
        "run.started"
    );
}

#[test]
fn kind_run_finished_serializes_as_run_finished() {
    assert_eq!(
        serialized_kind(&StreamPayload::run_finished(None)),
        "run.finished"
    );
}

#[test]
fn kind_run_error_serializes_as_run_error() {
    let p = StreamPayload::run_error(RunFailure::new(FailureCode::Cancelled, "stop"));
    assert_eq!(serialized_kind(&p), "run.error");
}

#[test]
fn kind_step_started_serializes_as_step_started() {
    assert_eq!(
        serialized_kind(&StreamPayload::step_started("s")),
        "step.started"
    );
}

#[test]
fn kind_step_finished_serializes_as_step_finished() {
    assert_eq!(
        serialized_kind(&StreamPayload::step_finished("s")),
        "step.finished"
    );
}

#[test]
fn kind_text_start_serializes_as_text_start() {
    assert_eq!(
        serialized_kind(&StreamPayload::text_start("m")),
        "text.start"
    );
}

#[test]
fn kind_text_content_serializes_as_text_content() {
    assert_eq!(
        serialized_kind(&StreamPayload::text_content("m", "d")),
        "text.content"
    );
}

#[test]
fn kind_text_end_serializes_as_text_end() {
    assert_eq!(serialized_kind(&StreamPayload::text_end("m")), "text.end");
}

#[test]
fn kind_reasoning_start_serializes_as_reasoning_start() {
    assert_eq!(
        serialized_kind(&StreamPayload::reasoning_start("r")),
        "reasoning.start"
    );
}

#[test]
fn kind_reasoning_content_serializes_as_reasoning_content() {
    assert_eq!(
        serialized_kind(&StreamPayload::reasoning_content("r", "d")),
        "reasoning.content"
    );
}

#[test]
fn kind_reasoning_end_serializes_as_reasoning_end() {
    assert_eq!(
        serialized_kind(&StreamPayload::reasoning_end("r")),
        "reasoning.end"
    );
}

#[test]
fn kind_tool_call_start_serializes_as_tool_call_start() {
    assert_eq!(
        serialized_kind(&StreamPayload::tool_call_start("t", "n", None)),
        "tool_call.start"
    );
}

#[test]
fn kind_tool_call_args_serializes_as_tool_call_args() {
    assert_eq!(
        serialized_kind(&StreamPayload::tool_call_args("t", "{")),
        "tool_call.args"
    );
}

#[test]
fn kind_tool_call_end_serializes_as_tool_call_end() {
    assert_eq!(
        serialized_kind(&StreamPayload::tool_call_end("t", None)),
        "tool_call.end"
    );
}

#[test]
fn kind_tool_call_result_serializes_as_tool_call_result() {
    assert_eq!(
        serialized_kind(&StreamPayload::tool_call_result("t", None)),
        "tool_call.result"
    );
}

#[test]
fn kind_hitl_requested_serializes_as_hitl_requested() {
    let p: StreamPayload = StreamKind::HitlRequested(Box::new(HitlRequested {
        request: DecisionRequest::new(DecisionKind::Question, "src"),
    }))
    .into();
    assert_eq!(serialized_kind(&p), "hitl.requested");
}

#[test]
fn kind_hitl_resolved_serializes_as_hitl_resolved() {
    let p: StreamPayload = StreamKind::HitlResolved(Box::new(HitlResolved {
        request_id: "r".into(),
        result: DecisionResult::Rejected,
        choice: String::new(),
        resolved_at: None,
        attempt: 0,
    }))
    .into();
    assert_eq!(serialized_kind(&p), "hitl.resolved");
}

#[test]
fn kind_stream_dropped_serializes_as_stream_dropped() {
    let p: StreamPayload = StreamKind::Dropped(ProviderDrop::default()).into();
    assert_eq!(serialized_kind(&p), "stream.dropped");
}

#[test]
fn kind_name_equals_serialized_kind_for_every_canonical_kind() {
    for (name, p) in canonical_payloads() {
        assert_eq!(p.kind.name(), name);
        assert_eq!(serialized_kind(&p), name);
    }
}

#[test]
fn only_run_finished_and_run_error_are_terminal() {
    for (name, p) in canonical_payloads() {
        let expected = name == "run.finished" || name == "run.error";
        assert_eq!(p.kind.is_terminal(), expected, "{name}");
    }
    assert!(!StreamPayload::custom("vendor.done", "").kind.is_terminal());
}

#[test]
fn every_canonical_payload_round_trips_through_serde_json() {
    for (name, p) in canonical_payloads() {
        let text = serde_json::to_string(&p).unwrap();
        let back: StreamPayload =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e} in {text}"));
        assert_eq!(back, p, "{name}");
        let value = serde_json::to_value(&p).unwrap();
        let back: StreamPayload = serde_json::from_value(value).unwrap();
        assert_eq!(back, p, "{name}");
    }
}

#[test]
fn run_started_carries_no_message_or_tool_call_id() {
    let v = serde_json::to_value(StreamPayload::run_started()).unwrap();
    assert_eq!(v, json!({"kind": "run.started", "role": "assistant"}));
}

#[test]
fn text_content_has_exactly_its_fields() {
    let v = serde_json::to_value(StreamPayload::text_content("m1", "hi")).unwrap();
    assert_eq!(
        v,
        json!({"kind": "text.content", "message_id": "m1", "delta": "hi", "role": "assistant"})
    );
}

#[test]
fn tool_call_start_serializes_args_and_scope() {
    let v = serde_json::to_value(StreamPayload::tool_call_start(
        "t1",
        "shell",
        Some(json!({"cmd": "ls"})),
    ))
    .unwrap();
    assert_eq!(v["kind"], "tool_call.start");
    assert_eq!(v["tool_call_id"], "t1");
    assert_eq!(v["name"], "shell");
    assert_eq!(v["args"], json!({"cmd": "ls"}));
    assert_eq!(v["delegation"], json!({}));
    assert!(
        v.get("scope").is_none(),
        "a built-in tool has no scope: {v}"
    );
    let mcp = serde_json::to_value(StreamPayload::tool_call_start_in(
        "t2",
        "mcp__docs__lookup",
        None,
        ToolScope::Mcp {
            server: "docs".into(),
            tool: "lookup".into(),
        },
    ))
    .unwrap();
    assert_eq!(
        mcp["scope"],
        json!({"kind": "mcp", "server": "docs", "tool": "lookup"})
    );
    let back: StreamPayload = serde_json::from_value(mcp.clone()).unwrap();
    assert_eq!(serde_json::to_value(back).unwrap(), mcp);
    let without =
        serde_json::to_value(StreamPayload::tool_call_start("t1", "shell", None)).unwrap();
    assert!(without.get("args").is_none(), "{without}");
}

#[test]
fn run_error_serializes_its_failure() {
    let p = StreamPayload::run_error(RunFailure::new(
        FailureCode::Other("rate_limited".into()),
        "slow down",
    ));
    let v = serde_json::to_value(&p).unwrap();
    assert_eq!(v["kind"], "run.error");
    assert_eq!(v["error"]["message"], "slow down");
    assert_eq!(v["error"]["code"], "rate_limited");
}

#[test]
fn custom_payload_serializes_as_custom_and_keeps_its_own_name() {
    let p = StreamPayload::custom("vendor.rate_limit", "wait").with_raw(json!({"wait_s": 2}));
    assert_eq!(p.kind.name(), "vendor.rate_limit");
    let v = serde_json::to_value(&p).unwrap();
    assert_eq!(v["kind"], "custom");
    assert_eq!(v["name"], "vendor.rate_limit");
    assert_eq!(v["text"], "wait");
    assert_eq!(v["raw"], json!({"wait_s": 2}));
    let back: StreamPayload = serde_json::from_value(v).unwrap();
    assert_eq!(back, p);
}

#[test]
fn source_raw_and_role_round_trip() {
    let mut p = StreamPayload::text_start("m1")
        .with_source(ProviderCoords {
            run_id: Some("prov-run".into()),
            thread_id: Some("th-9".into()),
            turn_id: None,
        })
        .with_raw(json!({"native": [1, 2, 3]}));
    p.role = Role::User;
    let v = serde_json::to_value(&p).unwrap();
    assert_eq!(v["role"], "user");
    assert_eq!(
        v["source"],
        json!({"run_id": "prov-run", "thread_id": "th-9"})
    );
    assert_eq!(v["raw"], json!({"native": [1, 2, 3]}));
    let back: StreamPayload = serde_json::from_value(v).unwrap();
    assert_eq!(back, p);
}

#[test]
fn empty_source_and_raw_are_omitted() {
    let v = serde_json::to_value(StreamPayload::text_end("m1")).unwrap();
    assert!(v.get("source").is_none(), "{v}");
    assert!(v.get("raw").is_none(), "{v}");
}

#[test]
fn missing_role_deserializes_as_assistant() {
    let p: StreamPayload =
        serde_json::from_str(r#"{"kind":"text.content","message_id":"m","delta":"d"}"#).unwrap();
    assert_eq!(p, StreamPayload::text_content("m", "d"));
    assert_eq!(p.role, Role::Assistant);
}

#[test]
fn unknown_kind_and_missing_fields_are_rejected() {
    for bad in [
        r#"{"kind":"text.bogus","message_id":"m"}"#,
        r#"{"kind":"text.content","message_id":"m"}"#,
        r#"{"kind":"tool_call.start","tool_call_id":"t"}"#,
        r#"{"message_id":"m"}"#,
    ] {
        assert!(
            serde_json::from_str::<StreamPayload>(bad).is_err(),
            "accepted {bad}"
        );
    }
}

// ================================================================ TranscriptItem (TRN-*)

const ALL_KINDS: [TranscriptKind; 13] = [
    TranscriptKind::Assistant,
    TranscriptKind::Thinking,
    TranscriptKind::User,
    TranscriptKind::ToolCall,
    TranscriptKind::ToolResult,
    TranscriptKind::Init,
    TranscriptKind::Result,
    TranscriptKind::Stdout,
    TranscriptKind::Stderr,
    TranscriptKind::System,
    TranscriptKind::Summary,
    TranscriptKind::Question,
    TranscriptKind::Failure,
];

const TEXT_KINDS: [TranscriptKind; 9] = [
    TranscriptKind::Assistant,
    TranscriptKind::Thinking,
    TranscriptKind::User,
    TranscriptKind::Stdout,
    TranscriptKind::Stderr,
    TranscriptKind::System,
    TranscriptKind::Summary,
    TranscriptKind::Question,
    TranscriptKind::Failure,
];

/// An item of `kind` that satisfies every rule of its kind.
fn valid_item(kind: TranscriptKind) -> TranscriptItem {
    let mut item = TranscriptItem::new(kind, "text");
    item.tool_use_id = Some("tu-1".into());
    item.tool_name = Some("shell".into());
    item
}

#[track_caller]
fn violation(item: &TranscriptItem) -> TranscriptViolation {
    match item.validate() {
        Ok(()) => panic!("{:?} item was accepted: {item:?}", item.kind),
        Err(v) => v,
    }
}

#[test]
fn trn_valid_items_of_every_kind_pass() {
    for kind in ALL_KINDS {
        assert_eq!(valid_item(kind).validate(), Ok(()), "{kind}");
    }
    assert_eq!(TranscriptItem::assistant("hi").validate(), Ok(()));
    assert_eq!(TranscriptItem::thinking("hmm").validate(), Ok(()));
    assert_eq!(
        TranscriptItem::tool_call("t1", "shell", Some(json!({"cmd": "ls"}))).validate(),
        Ok(())
    );
    assert_eq!(
        TranscriptItem::tool_result("t1", "", false).validate(),
        Ok(())
    );
}

#[test]
fn trn01_each_text_kind_requires_text() {
    for kind in TEXT_KINDS {
        assert!(kind.requires_text(), "{kind}");
        let mut item = valid_item(kind);
        item.text.clear();
        let v = violation(&item);
        assert_eq!(v, TranscriptViolation::MissingText(kind));
        assert_eq!(v.clause(), "TRN-01");
        assert!(v.to_string().starts_with("TRN-01: "), "{v}");
        assert!(v.to_string().contains(kind.as_str()), "{v}");
    }
}

#[test]
fn trn01_non_text_kinds_do_not_require_text() {
    for kind in [
        TranscriptKind::ToolCall,
        TranscriptKind::ToolResult,
        TranscriptKind::Init,
        TranscriptKind::Result,
    ] {
        assert!(!kind.requires_text(), "{kind}");
        let mut item = valid_item(kind);
        item.text.clear();
        assert_eq!(item.validate(), Ok(()), "{kind}");
    }
}

#[test]
fn trn02_tool_call_without_name() {
    for name in [None, Some(String::new())] {
        let mut item = TranscriptItem::tool_call("t1", "shell", None);
        item.tool_name = name;
        let v = violation(&item);
        assert_eq!(v, TranscriptViolation::MissingToolName);
        assert_eq!(v.clause(), "TRN-02");
        assert!(v.to_string().starts_with("TRN-02: "), "{v}");
    }
}

#[test]
fn trn03_tool_result_without_id() {
    for id in [None, Some(String::new())] {
        let mut item = TranscriptItem::tool_result("t1", "output", false);
        item.tool_use_id = id;
        let v = violation(&item);
        assert_eq!(v, TranscriptViolation::MissingToolUseId);
        assert_eq!(v.clause(), "TRN-03");
        assert!(v.to_string().starts_with("TRN-03: "), "{v}");
    }
}

#[test]
fn trn04_delta_on_a_non_assistant_thinking_kind() {
    for kind in ALL_KINDS {
        let mut item = valid_item(kind);
        item.delta = true;
        if matches!(kind, TranscriptKind::Assistant | TranscriptKind::Thinking) {
            assert_eq!(item.validate(), Ok(()), "{kind}");
            continue;
        }
        let v = violation(&item);
        assert_eq!(v, TranscriptViolation::DeltaOnWrongKind(kind));
        assert_eq!(v.clause(), "TRN-04");
        assert!(v.to_string().starts_with("TRN-04: "), "{v}");
    }
}

#[test]
fn transcript_kind_serializes_as_its_wire_name() {
    for kind in ALL_KINDS {
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.as_str()));
        assert_eq!(kind.to_string(), kind.as_str());
        let back: TranscriptKind = serde_json::from_value(json!(kind.as_str())).unwrap();
        assert_eq!(back, kind);
    }
}

#[test]
fn transcript_item_round_trips_and_omits_empty_fields() {
    let item = TranscriptItem::assistant("hello");
    assert_eq!(
        serde_json::to_value(&item).unwrap(),
        json!({"kind": "assistant", "text": "hello"})
    );
    let mut full = TranscriptItem::tool_result("t1", "boom", true);
    full.delta = false;
    full.model = Some("m-1".into());
    full.usage = Some(Usage {
        output_tokens: Some(2),
        ..Default::default()
    });
    full.errors = vec!["e1".into()];
    full.metadata.insert("code".into(), "x".into());
    full.data = Some(json!({"k": [1]}));
    let text = serde_json::to_string(&full).unwrap();
    let back: TranscriptItem = serde_json::from_str(&text).unwrap();
    assert_eq!(back, full);
}

// ================================================================ FailureCode

#[test]
fn known_failure_codes_serialize_as_snake_case() {
    for (code, wire) in [
        (FailureCode::DecisionRejected, "decision_rejected"),
        (FailureCode::DecisionTimeout, "decision_timeout"),
        (FailureCode::AgentError, "agent_error"),
        (FailureCode::Cancelled, "cancelled"),
        (FailureCode::PolicyError, "policy_error"),
    ] {
        assert_eq!(serde_json::to_value(&code).unwrap(), json!(wire));
        assert_eq!(code.as_str(), wire);
        assert_eq!(code.to_string(), wire);
        let back: FailureCode = serde_json::from_value(json!(wire)).unwrap();
        assert_eq!(back, code);
    }
}

#[test]
fn unknown_failure_code_is_kept_verbatim() {
    let code = FailureCode::Other("rate_limited".into());
    assert_eq!(serde_json::to_string(&code).unwrap(), "\"rate_limited\"");
    assert_eq!(code.as_str(), "rate_limited");
    let back: FailureCode = serde_json::from_str("\"rate_limited\"").unwrap();
    assert_eq!(back, code);
    // Case and punctuation survive untouched.
    let odd: FailureCode = serde_json::from_str("\"Quota.Exceeded-42\"").unwrap();
    assert_eq!(odd, FailureCode::Other("Quota.Exceeded-42".into()));
    assert_eq!(
        serde_json::to_string(&odd).unwrap(),
        "\"Quota.Exceeded-42\""
    );
}

#[test]
fn failure_code_rejects_non_strings() {
    for bad in ["1", "null", "{}", "[\"agent_error\"]"] {
        assert!(
            serde_json::from_str::<FailureCode>(bad).is_err(),
            "accepted {bad}"
        );
    }
}

#[test]
fn run_failure_round_trips() {
    let mut f = RunFailure::new(FailureCode::Other("overloaded".into()), "try later");
    f.metadata.insert("status".into(), "529".into());
    let v = serde_json::to_value(&f).unwrap();
    assert_eq!(
        v,
        json!({"message": "try later", "code": "overloaded", "metadata": {"status": "529"}})
    );
    let back: RunFailure = serde_json::from_value(v).unwrap();
    assert_eq!(back, f);
}

// ================================================================ TerminalPayload

const TERMINAL_JSON: &str = "{ \"type\":\"result\",\n  \"z\" : 1,\t\"a\": [1, 2.50, 1e3, \"\\u00e9\"], \"nested\": {\"b\":null,\"a\":true} }";

#[test]
fn terminal_payload_keeps_the_exact_json_text() {
    let t = TerminalPayload::new("turn.completed", TERMINAL_JSON).unwrap();
    assert_eq!(t.event, "turn.completed");
    assert_eq!(t.json.get(), TERMINAL_JSON);
    assert_eq!(t.json.get().as_bytes(), TERMINAL_JSON.as_bytes());
    // Not a re-serialization: a parsed Value would reorder and renormalize.
    let normalized =
        serde_json::to_string(&serde_json::from_str::<Value>(TERMINAL_JSON).unwrap()).unwrap();
    assert_ne!(t.json.get(), normalized);
}

#[test]
fn terminal_payload_serializes_json_verbatim_and_round_trips() {
    let t = TerminalPayload::new("result", TERMINAL_JSON).unwrap();
    let text = serde_json::to_string(&t).unwrap();
    assert_eq!(
        text,
        format!("{{\"event\":\"result\",\"json\":{TERMINAL_JSON}}}")
    );
    let back: TerminalPayload = serde_json::from_str(&text).unwrap();
    assert_eq!(back.json.get(), TERMINAL_JSON);
    assert_eq!(back, t);
}

#[test]
fn terminal_payload_equality_is_byte_exact() {
    let a = TerminalPayload::new("e", "{\"a\":1,\"b\":2}").unwrap();
    let b = TerminalPayload::new("e", "{\"b\":2,\"a\":1}").unwrap();
    let c = TerminalPayload::new("e", "{\"a\": 1,\"b\":2}").unwrap();
    let d = TerminalPayload::new("f", "{\"a\":1,\"b\":2}").unwrap();
    assert_eq!(a, a.clone());
    assert_ne!(a, b);
    assert_ne!(a, c);
    assert_ne!(a, d);
}

#[test]
fn terminal_payload_accepts_any_json_value() {
    for text in ["null", "true", "42", "\"done\"", "[]", "{}"] {
        let t = TerminalPayload::new("e", text).unwrap();
        assert_eq!(t.json.get(), text);
    }
}

#[test]
fn terminal_payload_rejects_invalid_json() {
    for bad in [
        "",
        "   ",
        "{",
        "{\"a\":}",
        "{'a': 1}",
        "not json",
        "{\"a\":1,}",
        "{} {}",
        "[1, 2",
        "NaN",
    ] {
        assert!(TerminalPayload::new("e", bad).is_err(), "accepted {bad:?}");
    }
}

// ================================================================ RawBytes

const NOT_UTF8: [u8; 9] = [0xff, 0xfe, b'a', 0xc3, 0x28, 0x00, 0x80, b'\n', 0xe2];

#[test]
fn raw_bytes_keep_invalid_utf8_byte_exact() {
    let raw = RawBytes::from_bytes(NOT_UTF8.to_vec());
    assert_eq!(raw.len(), NOT_UTF8.len() as u64);
    assert!(!raw.is_empty());
    assert_eq!(raw.as_memory(), Some(&NOT_UTF8[..]));
    assert_eq!(raw.to_vec().unwrap(), NOT_UTF8);
    let mut read = Vec::new();
    raw.open().unwrap().read_to_end(&mut read).unwrap();
    assert_eq!(read, NOT_UTF8);
    // The lossy view replaces, the bytes do not change.
    assert!(raw.to_string_lossy().unwrap().contains('\u{fffd}'));
    assert_eq!(raw.to_vec().unwrap(), NOT_UTF8);
}

#[test]
fn raw_bytes_open_twice_reads_from_the_start_each_time() {
    let raw: RawBytes = NOT_UTF8.to_vec().into();
    for _ in 0..2 {
        let mut read = Vec::new();
        raw.open().unwrap().read_to_end(&mut read).unwrap();
        assert_eq!(read, NOT_UTF8);
    }
}

#[test]
fn raw_bytes_conversions_agree() {
    let text = "line 1\nline 2\r\n\u{e9}";
    let all = [
        RawBytes::from(text),
        RawBytes::from(text.to_owned()),
        RawBytes::from(text.as_bytes().to_vec()),
        RawBytes::from(Bytes::copy_from_slice(text.as_bytes())),
        RawBytes::from_bytes(text.as_bytes().to_vec()),
    ];
    for raw in all {
        assert_eq!(raw.len(), text.len() as u64);
        assert_eq!(raw.to_vec().unwrap(), text.as_bytes());
        assert_eq!(raw.to_string_lossy().unwrap(), text);
    }
}

#[test]
fn raw_bytes_empty_forms_agree() {
    for raw in [
        RawBytes::default(),
        RawBytes::from_bytes(Vec::new()),
        RawBytes::from(""),
        RawBytes::from(String::new()),
        RawBytes::from(Bytes::new()),
    ] {
        assert_eq!(raw.len(), 0);
        assert!(raw.is_empty());
        assert_eq!(raw.as_memory(), Some(&[][..]));
        assert!(raw.to_vec().unwrap().is_empty());
        let mut read = Vec::new();
        assert_eq!(raw.open().unwrap().read_to_end(&mut read).unwrap(), 0);
        assert_eq!(format!("{raw:?}"), "RawBytes(0 bytes)");
    }
}

#[test]
fn raw_bytes_clone_holds_the_same_bytes() {
    let raw = RawBytes::from_bytes(NOT_UTF8.to_vec());
    let copy = raw.clone();
    drop(raw);
    assert_eq!(copy.to_vec().unwrap(), NOT_UTF8);
    assert_eq!(format!("{copy:?}"), "RawBytes(9 bytes in memory)");
}

#[test]
fn raw_streams_default_is_empty_with_no_terminal() {
    let r = RawStreams::default();
    assert!(r.stdout.is_empty());
    assert!(r.stderr.is_empty());
    assert!(r.terminal.is_none());
}

/// A tiny out-of-memory source: a Vec that counts how often it is opened.
#[derive(Debug)]
struct VecSource {
    bytes: Vec<u8>,
    opens: AtomicUsize,
}

impl VecSource {
    fn new(bytes: &[u8]) -> Arc<Self> {
        Arc::new(VecSource {
            bytes: bytes.to_vec(),
            opens: AtomicUsize::new(0),
        })
    }
}

impl RawSource for VecSource {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn open(&self) -> io::Result<Box<dyn Read + Send>> {
        self.opens.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(io::Cursor::new(self.bytes.clone())))
    }
}

/// A source whose reader cannot be opened.
#[derive(Debug)]
struct BrokenSource;

impl RawSource for BrokenSource {
    fn len(&self) -> u64 {
        4
    }

    fn open(&self) -> io::Result<Box<dyn Read + Send>> {
        Err(io::Error::other("spill file gone"))
    }
}

#[test]
fn raw_bytes_read_a_custom_source() {
    let source = VecSource::new(&NOT_UTF8);
    let raw = RawBytes::from_source(source.clone());
    assert_eq!(raw.len(), NOT_UTF8.len() as u64);
    assert!(!raw.is_empty());
    assert_eq!(raw.as_memory(), None);
    assert_eq!(source.opens.load(Ordering::SeqCst), 0);

    assert_eq!(raw.to_vec().unwrap(), NOT_UTF8);
    assert_eq!(source.opens.load(Ordering::SeqCst), 1);

    let mut read = Vec::new();
    raw.open().unwrap().read_to_end(&mut read).unwrap();
    assert_eq!(read, NOT_UTF8);
    assert_eq!(source.opens.load(Ordering::SeqCst), 2);

    // A clone reads the same source.
    assert_eq!(raw.clone().to_vec().unwrap(), NOT_UTF8);
    assert_eq!(source.opens.load(Ordering::SeqCst), 3);

    let debug = format!("{raw:?}");
    assert!(debug.contains("9 bytes from VecSource"), "{debug}");
}

#[test]
fn raw_bytes_over_an_empty_custom_source() {
    let source = VecSource::new(&[]);
    assert!(RawSource::is_empty(&*source));
    let raw = RawBytes::from_source(source);
    assert!(raw.is_empty());
    assert_eq!(raw.len(), 0);
    assert!(raw.to_vec().unwrap().is_empty());
}

#[test]
fn raw_bytes_report_a_failing_source() {
    let raw = RawBytes::from_source(Arc::new(BrokenSource));
    assert_eq!(raw.len(), 4);
    assert!(!raw.is_empty());
    let err = raw.to_vec().expect_err("source cannot be opened");
    assert_eq!(err.to_string(), "spill file gone");
    assert!(raw.to_string_lossy().is_err());
    assert!(raw.open().is_err());
}
