//! The fuzz harness finds what it should, and the SPI's own wire decoders
//! survive it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use agent_adaptor_conformance::fuzz::{FuzzConfig, fuzz_inputs};
use agent_adaptor_driver::{
    DecisionRequest, LifecycleChecker, StreamCapability, StreamPayload, TranscriptItem,
};

#[test]
fn the_harness_reports_a_panicking_parser() {
    let seeds: [&[u8]; 1] = [br#"{"type":"text","text":"hello"}"#];
    let found = std::panic::catch_unwind(|| {
        fuzz_inputs(&seeds, FuzzConfig::default(), |input| {
            // A parser bug: it trusts its input to be UTF-8.
            std::str::from_utf8(input).expect("utf-8");
        })
    });
    let msg = found.expect_err("the harness must find invalid UTF-8");
    let msg = msg.downcast_ref::<String>().unwrap();
    assert!(msg.contains("failing input"), "{msg}");
}

#[test]
fn the_harness_is_deterministic() {
    let seeds: [&[u8]; 1] = [b"{\"a\":1}"];
    let collect = || {
        let mut seen = Vec::new();
        fuzz_inputs(
            &seeds,
            FuzzConfig {
                cases: 64,
                ..FuzzConfig::default()
            },
            |i| seen.push(i.to_vec()),
        );
        seen
    };
    assert_eq!(collect(), collect());
}

#[test]
fn spi_wire_decoders_never_panic() {
    let payloads = [
        StreamPayload::run_started(),
        StreamPayload::text_content("m1", "hi"),
        StreamPayload::tool_call_start("t1", "shell", Some(serde_json::json!({"cmd": "ls"}))),
        StreamPayload::custom("vendor.thing", "x").with_raw(serde_json::json!({"k": [1, 2]})),
    ];
    let texts: Vec<String> = payloads
        .iter()
        .map(|p| serde_json::to_string(p).unwrap())
        .chain([
            serde_json::to_string(&TranscriptItem::assistant("a")).unwrap(),
            serde_json::to_string(&DecisionRequest::new(
                agent_adaptor_driver::DecisionKind::Question,
                "s",
            ))
            .unwrap(),
        ])
        .collect();
    let seeds: Vec<&[u8]> = texts.iter().map(|s| s.as_bytes()).collect();
    let mut checker = LifecycleChecker::new(StreamCapability::FULL);
    fuzz_inputs(&seeds, FuzzConfig::default(), |input| {
        if let Ok(p) = serde_json::from_slice::<StreamPayload>(input) {
            // Whatever decodes must be judged without panicking.
            let _ = checker.check(&p);
        }
        let _ = serde_json::from_slice::<TranscriptItem>(input).map(|i| i.validate());
        let _ = serde_json::from_slice::<DecisionRequest>(input);
    });
}
