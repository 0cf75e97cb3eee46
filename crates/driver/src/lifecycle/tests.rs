//! Unit tests of [`LifecycleChecker`]: one group per EVT-* clause it enforces.

use serde_json::json;

use super::*;
use crate::decision::{DecisionKind, DecisionRequest, DecisionResult, HitlRequested, HitlResolved};
use crate::response::{FailureCode, RunFailure};
use crate::stream::ProviderDrop;
use crate::usage::Usage;

// ---------------------------------------------------------------- helpers

fn full() -> LifecycleChecker {
    LifecycleChecker::new(StreamCapability::FULL)
}

/// A full-capability checker that already accepted `run.started`.
fn running() -> LifecycleChecker {
    let mut c = full();
    accept(&mut c, StreamPayload::run_started());
    c
}

#[track_caller]
fn accept(c: &mut LifecycleChecker, p: StreamPayload) {
    if let Err(v) = c.check(&p) {
        panic!("{} was rejected: {v}", p.kind.name());
    }
}

/// Check that `p` is rejected with `clause`, and that the rejection did not
/// touch the checker's state.
#[track_caller]
fn reject(c: &mut LifecycleChecker, p: StreamPayload, clause: &str) -> Violation {
    let before = format!("{c:?}");
    let (started, terminated) = (c.started(), c.terminated());
    let v = match c.check(&p) {
        Ok(()) => panic!("{} was accepted, expected {clause}", p.kind.name()),
        Err(v) => v,
    };
    assert_eq!(v.clause, clause, "wrong clause for {}: {v}", p.kind.name());
    assert_eq!(
        format!("{c:?}"),
        before,
        "rejected {} changed state",
        p.kind.name()
    );
    assert_eq!(c.started(), started);
    assert_eq!(c.terminated(), terminated);
    v
}

fn finished() -> StreamPayload {
    StreamPayload::run_finished(None)
}

fn run_error(message: &str) -> StreamPayload {
    StreamPayload::run_error(RunFailure::new(FailureCode::AgentError, message))
}

fn hitl_requested(source: &str) -> StreamPayload {
    StreamKind::HitlRequested(Box::new(HitlRequested {
        request: DecisionRequest::new(DecisionKind::Permission, source),
    }))
    .into()
}

fn hitl_resolved(request_id: &str) -> StreamPayload {
    StreamKind::HitlResolved(Box::new(HitlResolved {
        request_id: request_id.to_owned(),
        result: DecisionResult::Approved,
        choice: String::new(),
        resolved_at: None,
        attempt: 0,
    }))
    .into()
}

fn dropped(count: u64) -> StreamPayload {
    StreamKind::Dropped(ProviderDrop {
        dropped_count: count,
        ..Default::default()
    })
    .into()
}

fn as_user(mut p: StreamPayload) -> StreamPayload {
    p.role = Role::User;
    p
}

/// One payload of every kind, each valid on its own field rules.
fn one_of_each() -> Vec<StreamPayload> {
    vec![
        StreamPayload::run_started(),
        finished(),
        run_error("boom"),
        StreamPayload::step_started("s"),
        StreamPayload::step_finished("s"),
        StreamPayload::text_start("m"),
        StreamPayload::text_content("m", "x"),
        StreamPayload::text_end("m"),
        StreamPayload::reasoning_start("r"),
        StreamPayload::reasoning_content("r", "x"),
        StreamPayload::reasoning_end("r"),
        StreamPayload::tool_call_start("t", "shell", None),
        StreamPayload::tool_call_args("t", "{"),
        StreamPayload::tool_call_end("t", None),
        StreamPayload::tool_call_result("t", None),
        hitl_requested("drv.tool"),
        hitl_resolved("req-1"),
        dropped(1),
        StreamPayload::custom("vendor.event", ""),
    ]
}

// ---------------------------------------------------------------- basics

#[test]
fn violation_display_is_clause_then_detail() {
    let v = Violation::new("EVT-03", "text.end for \"m\", which is not open");
    assert_eq!(
        v.to_string(),
        "EVT-03: text.end for \"m\", which is not open"
    );
}

#[test]
fn fresh_checker_is_neither_started_nor_terminated() {
    let c = full();
    assert!(!c.started());
    assert!(!c.terminated());
}

// ---------------------------------------------------------------- EVT-01

#[test]
fn evt01_run_started_is_accepted_first() {
    let mut c = full();
    accept(&mut c, StreamPayload::run_started());
    assert!(c.started());
    assert!(!c.terminated());
}

#[test]
fn evt01_second_run_started_is_rejected() {
    let mut c = running();
    let v = reject(&mut c, StreamPayload::run_started(), "EVT-01");
    assert!(v.detail.contains("second run.started"), "{v}");
    // The run is still healthy after the rejection.
    accept(&mut c, StreamPayload::text_start("m1"));
    accept(&mut c, StreamPayload::text_end("m1"));
    accept(&mut c, finished());
}

#[test]
fn evt01_every_other_kind_before_run_started_is_rejected() {
    for p in one_of_each().into_iter().skip(1) {
        let mut c = full();
        let name = p.kind.name().to_owned();
        let v = reject(&mut c, p, "EVT-01");
        assert!(
            v.detail.contains(&format!("{name} before run.started")),
            "{v}"
        );
        assert!(!c.started());
    }
}

#[test]
fn evt01_rejected_early_payload_does_not_burn_its_id() {
    let mut c = full();
    reject(&mut c, StreamPayload::text_start("m1"), "EVT-01");
    reject(
        &mut c,
        StreamPayload::tool_call_start("t1", "shell", None),
        "EVT-01",
    );
    accept(&mut c, StreamPayload::run_started());
    accept(&mut c, StreamPayload::text_start("m1"));
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    accept(&mut c, StreamPayload::text_end("m1"));
    accept(&mut c, StreamPayload::tool_call_end("t1", None));
    accept(&mut c, finished());
    assert_eq!(c.finish(true), Ok(()));
}

#[test]
fn evt01_terminal_before_run_started_does_not_terminate() {
    let mut c = full();
    reject(&mut c, finished(), "EVT-01");
    reject(&mut c, run_error("boom"), "EVT-01");
    assert!(!c.terminated());
    accept(&mut c, StreamPayload::run_started());
    accept(&mut c, finished());
    assert!(c.terminated());
}

// ---------------------------------------------------------------- EVT-02

#[test]
fn evt02_every_kind_after_run_finished_is_rejected() {
    for p in one_of_each() {
        let mut c = running();
        accept(&mut c, finished());
        let name = p.kind.name().to_owned();
        let v = reject(&mut c, p, "EVT-02");
        assert!(
            v.detail
                .contains(&format!("{name} after the terminal frame")),
            "{v}"
        );
        assert!(c.terminated());
    }
}

#[test]
fn evt02_every_kind_after_run_error_is_rejected() {
    for p in one_of_each() {
        let mut c = running();
        accept(&mut c, run_error("provider exited 1"));
        reject(&mut c, p, "EVT-02");
        assert!(c.terminated());
    }
}

#[test]
fn evt02_run_finished_with_usage_terminates() {
    let mut c = running();
    let usage = Usage {
        input_tokens: Some(3),
        output_tokens: Some(5),
        ..Default::default()
    };
    accept(&mut c, StreamPayload::run_finished(Some(usage)));
    assert!(c.terminated());
}

#[test]
fn evt02_run_error_with_empty_message_is_rejected() {
    let mut c = running();
    for message in ["", " ", "\n\t "] {
        let v = reject(&mut c, run_error(message), "EVT-02");
        assert!(v.detail.contains("run.error"), "{v}");
        assert!(!c.terminated());
    }
    // The run can still end properly afterwards.
    accept(&mut c, run_error("real failure"));
    assert!(c.terminated());
    assert_eq!(c.finish(true), Ok(()));
}

#[test]
fn evt02_run_error_with_other_code_and_message_is_accepted() {
    let mut c = running();
    accept(
        &mut c,
        StreamPayload::run_error(RunFailure::new(
            FailureCode::Other("rate_limited".into()),
            "slow down",
        )),
    );
    assert!(c.terminated());
}

#[test]
fn evt02_finish_streaming_with_nothing_emitted() {
    let c = full();
    let v = c.finish(true).expect_err("streaming run emitted nothing");
    assert_eq!(v.clause, "EVT-02");
    assert!(v.detail.contains("no run.started"), "{v}");
}

#[test]
fn evt02_finish_non_streaming_with_nothing_emitted_is_ok() {
    assert_eq!(full().finish(false), Ok(()));
}

#[test]
fn evt02_finish_after_run_started_without_terminal() {
    let c = running();
    for streaming in [true, false] {
        let v = c.finish(streaming).expect_err("no terminal frame");
        assert_eq!(v.clause, "EVT-02");
        assert!(
            v.detail.contains("without run.finished or run.error"),
            "{v}"
        );
    }
}

#[test]
fn evt02_finish_after_a_rejected_terminal_still_fails() {
    let mut c = running();
    accept(&mut c, StreamPayload::text_start("m1"));
    reject(&mut c, finished(), "EVT-11");
    let v = c.finish(true).expect_err("terminal was rejected");
    assert_eq!(v.clause, "EVT-02");
}

#[test]
fn evt02_finish_after_terminal_is_ok() {
    for terminal in [finished(), run_error("boom")] {
        let mut c = running();
        accept(&mut c, terminal);
        assert_eq!(c.finish(true), Ok(()));
        assert_eq!(c.finish(false), Ok(()));
    }
}

// ---------------------------------------------------------------- EVT-03

#[test]
fn evt03_text_start_without_message_id() {
    let mut c = running();
    for id in ["", "   "] {
        let v = reject(&mut c, StreamPayload::text_start(id), "EVT-03");
        assert!(v.detail.contains("text.start without message_id"), "{v}");
    }
}

#[test]
fn evt03_text_start_twice_while_open() {
    let mut c = running();
    accept(&mut c, StreamPayload::text_start("m1"));
    let v = reject(&mut c, StreamPayload::text_start("m1"), "EVT-03");
    assert!(v.detail.contains("opened twice"), "{v}");
    // The first lifecycle is intact: content and end still work.
    accept(&mut c, StreamPayload::text_content("m1", "hi"));
    accept(&mut c, StreamPayload::text_end("m1"));
    accept(&mut c, finished());
}

#[test]
fn evt03_text_start_reopening_a_closed_id() {
    let mut c = running();
    accept(&mut c, StreamPayload::text_start("m1"));
    accept(&mut c, StreamPayload::text_end("m1"));
    reject(&mut c, StreamPayload::text_start("m1"), "EVT-03");
    // Nothing was reopened: the run can terminate.
    accept(&mut c, finished());
}

#[test]
fn evt03_text_content_on_unknown_id() {
    let mut c = running();
    accept(&mut c, StreamPayload::text_start("m1"));
    let v = reject(&mut c, StreamPayload::text_content("m2", "hi"), "EVT-03");
    assert!(v.detail.contains("\"m2\""), "{v}");
    assert!(v.detail.contains("not open"), "{v}");
}

#[test]
fn evt03_text_content_after_end() {
    let mut c = running();
    accept(&mut c, StreamPayload::text_start("m1"));
    accept(&mut c, StreamPayload::text_end("m1"));
    reject(&mut c, StreamPayload::text_content("m1", "late"), "EVT-03");
}

#[test]
fn evt03_text_end_on_unknown_id_and_double_end() {
    let mut c = running();
    reject(&mut c, StreamPayload::text_end("m1"), "EVT-03");
    accept(&mut c, StreamPayload::text_start("m1"));
    accept(&mut c, StreamPayload::text_end("m1"));
    reject(&mut c, StreamPayload::text_end("m1"), "EVT-03");
}

#[test]
fn evt03_rejected_text_start_leaves_the_id_free() {
    let mut c = running();
    reject(&mut c, as_user(StreamPayload::text_start("m1")), "EVT-09");
    accept(&mut c, StreamPayload::text_start("m1"));
    accept(&mut c, StreamPayload::text_end("m1"));
    accept(&mut c, finished());
}

#[test]
fn evt03_different_message_ids_interleave() {
    let mut c = running();
    accept(&mut c, StreamPayload::text_start("a"));
    accept(&mut c, StreamPayload::text_start("b"));
    accept(&mut c, StreamPayload::text_content("a", "1"));
    accept(&mut c, StreamPayload::text_content("b", "2"));
    accept(&mut c, StreamPayload::text_end("a"));
    accept(&mut c, StreamPayload::text_content("b", "3"));
    reject(&mut c, StreamPayload::text_content("a", "4"), "EVT-03");
    accept(&mut c, StreamPayload::text_end("b"));
    accept(&mut c, finished());
}

#[test]
fn evt03_coarse_text_lifecycle_without_content_is_valid() {
    let mut c = running();
    accept(&mut c, StreamPayload::text_start("m1"));
    accept(&mut c, StreamPayload::text_end("m1"));
    accept(&mut c, finished());
    assert_eq!(c.finish(true), Ok(()));
}

// ---------------------------------------------------------------- EVT-04

#[test]
fn evt04_text_content_with_empty_delta() {
    let mut c = running();
    accept(&mut c, StreamPayload::text_start("m1"));
    let v = reject(&mut c, StreamPayload::text_content("m1", ""), "EVT-04");
    assert!(v.detail.contains("empty delta"), "{v}");
    // The message is still open and accepts a real delta.
    accept(&mut c, StreamPayload::text_content("m1", "hello"));
    accept(&mut c, StreamPayload::text_end("m1"));
}

#[test]
fn evt04_whitespace_delta_is_content() {
    let mut c = running();
    accept(&mut c, StreamPayload::text_start("m1"));
    accept(&mut c, StreamPayload::text_content("m1", " "));
    accept(&mut c, StreamPayload::text_content("m1", "\n"));
}

#[test]
fn evt04_empty_delta_on_unknown_id_reports_the_lifecycle_first() {
    let mut c = running();
    reject(&mut c, StreamPayload::text_content("nope", ""), "EVT-03");
}

// ---------------------------------------------------------------- EVT-05

#[test]
fn evt05_tool_call_start_without_id() {
    let mut c = running();
    for id in ["", "  "] {
        let v = reject(
            &mut c,
            StreamPayload::tool_call_start(id, "shell", None),
            "EVT-05",
        );
        assert!(v.detail.contains("tool_call_id"), "{v}");
    }
}

#[test]
fn evt05_tool_call_start_without_name() {
    let mut c = running();
    for name in ["", " "] {
        let v = reject(
            &mut c,
            StreamPayload::tool_call_start("t1", name, None),
            "EVT-05",
        );
        assert!(v.detail.contains("without name"), "{v}");
    }
    // The rejected starts did not register "t1".
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    accept(&mut c, StreamPayload::tool_call_end("t1", None));
    accept(&mut c, finished());
}

#[test]
fn evt05_tool_call_opened_twice() {
    let mut c = running();
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    let v = reject(
        &mut c,
        StreamPayload::tool_call_start("t1", "shell", None),
        "EVT-05",
    );
    assert!(v.detail.contains("opened twice"), "{v}");
    accept(&mut c, StreamPayload::tool_call_end("t1", None));
    // Reopening a closed tool call is rejected as well.
    reject(
        &mut c,
        StreamPayload::tool_call_start("t1", "shell", None),
        "EVT-05",
    );
    accept(&mut c, finished());
}

#[test]
fn evt05_tool_call_args_on_unknown_or_closed_id() {
    let mut c = running();
    let v = reject(&mut c, StreamPayload::tool_call_args("t1", "{"), "EVT-05");
    assert!(v.detail.contains("not open"), "{v}");
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    accept(&mut c, StreamPayload::tool_call_end("t1", None));
    reject(&mut c, StreamPayload::tool_call_args("t1", "{"), "EVT-05");
}

#[test]
fn evt05_tool_call_args_with_empty_delta() {
    let mut c = running();
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    let v = reject(&mut c, StreamPayload::tool_call_args("t1", ""), "EVT-05");
    assert!(v.detail.contains("empty delta"), "{v}");
    accept(&mut c, StreamPayload::tool_call_args("t1", "{\"cmd\":"));
    accept(&mut c, StreamPayload::tool_call_args("t1", "\"ls\"}"));
    accept(&mut c, StreamPayload::tool_call_end("t1", None));
}

#[test]
fn evt05_tool_call_end_on_unknown_id_and_double_end() {
    let mut c = running();
    let v = reject(&mut c, StreamPayload::tool_call_end("t1", None), "EVT-05");
    assert!(v.detail.contains("not open"), "{v}");
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    accept(&mut c, StreamPayload::tool_call_end("t1", None));
    reject(&mut c, StreamPayload::tool_call_end("t1", None), "EVT-05");
}

#[test]
fn evt05_tool_call_result_needs_a_known_id() {
    let mut c = running();
    let v = reject(
        &mut c,
        StreamPayload::tool_call_result("ghost", Some(json!("ok"))),
        "EVT-05",
    );
    assert!(v.detail.contains("unknown"), "{v}");
    // A rejected result does not count as "the" result.
    accept(
        &mut c,
        StreamPayload::tool_call_start("ghost", "shell", None),
    );
    accept(&mut c, StreamPayload::tool_call_end("ghost", None));
    accept(
        &mut c,
        StreamPayload::tool_call_result("ghost", Some(json!("ok"))),
    );
}

#[test]
fn evt05_tool_call_result_while_open_and_after_end() {
    let mut c = running();
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    accept(
        &mut c,
        StreamPayload::tool_call_result("t1", Some(json!(1))),
    );
    accept(&mut c, StreamPayload::tool_call_end("t1", None));
    accept(&mut c, StreamPayload::tool_call_start("t2", "read", None));
    accept(&mut c, StreamPayload::tool_call_end("t2", None));
    accept(&mut c, StreamPayload::tool_call_result("t2", None));
    accept(&mut c, finished());
}

// ---------------------------------------------------------------- EVT-06

#[test]
fn evt06_reasoning_start_without_message_id() {
    let mut c = running();
    for id in ["", "\t"] {
        let v = reject(&mut c, StreamPayload::reasoning_start(id), "EVT-06");
        assert!(
            v.detail.contains("reasoning.start without message_id"),
            "{v}"
        );
    }
}

#[test]
fn evt06_reasoning_opened_twice_and_reopened() {
    let mut c = running();
    accept(&mut c, StreamPayload::reasoning_start("r1"));
    reject(&mut c, StreamPayload::reasoning_start("r1"), "EVT-06");
    accept(&mut c, StreamPayload::reasoning_content("r1", "hmm"));
    accept(&mut c, StreamPayload::reasoning_end("r1"));
    reject(&mut c, StreamPayload::reasoning_start("r1"), "EVT-06");
    accept(&mut c, finished());
}

#[test]
fn evt06_reasoning_content_on_unknown_or_closed_id() {
    let mut c = running();
    reject(
        &mut c,
        StreamPayload::reasoning_content("r1", "x"),
        "EVT-06",
    );
    accept(&mut c, StreamPayload::reasoning_start("r1"));
    accept(&mut c, StreamPayload::reasoning_end("r1"));
    reject(
        &mut c,
        StreamPayload::reasoning_content("r1", "x"),
        "EVT-06",
    );
}

#[test]
fn evt06_reasoning_content_with_empty_delta() {
    let mut c = running();
    accept(&mut c, StreamPayload::reasoning_start("r1"));
    let v = reject(&mut c, StreamPayload::reasoning_content("r1", ""), "EVT-06");
    assert!(v.detail.contains("empty delta"), "{v}");
    accept(&mut c, StreamPayload::reasoning_content("r1", "think"));
    accept(&mut c, StreamPayload::reasoning_end("r1"));
}

#[test]
fn evt06_reasoning_end_on_unknown_id_and_double_end() {
    let mut c = running();
    reject(&mut c, StreamPayload::reasoning_end("r1"), "EVT-06");
    accept(&mut c, StreamPayload::reasoning_start("r1"));
    accept(&mut c, StreamPayload::reasoning_end("r1"));
    reject(&mut c, StreamPayload::reasoning_end("r1"), "EVT-06");
}

#[test]
fn evt06_text_and_reasoning_lifecycles_are_separate() {
    let mut c = running();
    accept(&mut c, StreamPayload::text_start("m1"));
    accept(&mut c, StreamPayload::reasoning_start("m1"));
    accept(&mut c, StreamPayload::text_end("m1"));
    // Closing the text did not close the reasoning of the same id.
    let v = reject(&mut c, finished(), "EVT-11");
    assert!(v.detail.contains("reasoning \"m1\""), "{v}");
    assert!(!v.detail.contains("text \"m1\""), "{v}");
    accept(&mut c, StreamPayload::reasoning_end("m1"));
    accept(&mut c, finished());
}

// ---------------------------------------------------------------- EVT-07

#[test]
fn evt07_step_without_name() {
    let mut c = running();
    for name in ["", "  "] {
        let v = reject(&mut c, StreamPayload::step_started(name), "EVT-07");
        assert!(v.detail.contains("step.started without name"), "{v}");
        let v = reject(&mut c, StreamPayload::step_finished(name), "EVT-07");
        assert!(v.detail.contains("step.finished without name"), "{v}");
    }
}

#[test]
fn evt07_step_finished_never_started() {
    let mut c = running();
    let v = reject(&mut c, StreamPayload::step_finished("plan"), "EVT-07");
    assert!(v.detail.contains("never started"), "{v}");
    accept(&mut c, StreamPayload::step_started("plan"));
    accept(&mut c, StreamPayload::step_finished("plan"));
    reject(&mut c, StreamPayload::step_finished("plan"), "EVT-07");
    accept(&mut c, finished());
}

#[test]
fn evt07_nested_steps_with_the_same_name() {
    let mut c = running();
    accept(&mut c, StreamPayload::step_started("turn"));
    accept(&mut c, StreamPayload::step_started("turn"));
    accept(&mut c, StreamPayload::step_finished("turn"));
    // One of the two is still open.
    let v = reject(&mut c, finished(), "EVT-11");
    assert!(v.detail.contains("step \"turn\""), "{v}");
    accept(&mut c, StreamPayload::step_finished("turn"));
    // A third finish has nothing left to close.
    reject(&mut c, StreamPayload::step_finished("turn"), "EVT-07");
    accept(&mut c, finished());
    assert_eq!(c.finish(true), Ok(()));
}

#[test]
fn evt07_a_step_name_can_be_reused_after_it_closed() {
    let mut c = running();
    for _ in 0..3 {
        accept(&mut c, StreamPayload::step_started("tick"));
        accept(&mut c, StreamPayload::step_finished("tick"));
    }
    accept(&mut c, finished());
}

#[test]
fn evt07_differently_named_steps_interleave() {
    let mut c = running();
    accept(&mut c, StreamPayload::step_started("a"));
    accept(&mut c, StreamPayload::step_started("b"));
    accept(&mut c, StreamPayload::step_finished("a"));
    reject(&mut c, StreamPayload::step_finished("a"), "EVT-07");
    accept(&mut c, StreamPayload::step_finished("b"));
    accept(&mut c, finished());
}

// ---------------------------------------------------------------- EVT-08

#[test]
fn evt08_hitl_requested_needs_a_source() {
    let mut c = running();
    for source in ["", " "] {
        let v = reject(&mut c, hitl_requested(source), "EVT-08");
        assert!(v.detail.contains("hitl.requested without source"), "{v}");
    }
    accept(&mut c, hitl_requested("drv.can_use_tool"));
}

#[test]
fn evt08_hitl_resolved_needs_a_request_id() {
    let mut c = running();
    for id in ["", "  "] {
        let v = reject(&mut c, hitl_resolved(id), "EVT-08");
        assert!(v.detail.contains("hitl.resolved without request_id"), "{v}");
    }
    accept(&mut c, hitl_resolved("req-1"));
}

// ---------------------------------------------------------------- EVT-09

#[test]
fn evt09_role_user_is_rejected_for_every_kind() {
    for p in one_of_each().into_iter().skip(1) {
        let mut c = running();
        let name = p.kind.name().to_owned();
        let v = reject(&mut c, as_user(p), "EVT-09");
        assert!(v.detail.contains(&name), "{v}");
        assert!(v.detail.contains("role user"), "{v}");
    }
}

#[test]
fn evt09_role_user_run_started_does_not_start_the_run() {
    let mut c = full();
    reject(&mut c, as_user(StreamPayload::run_started()), "EVT-09");
    assert!(!c.started());
    accept(&mut c, StreamPayload::run_started());
}

#[test]
fn evt09_role_user_terminal_does_not_terminate() {
    let mut c = running();
    reject(&mut c, as_user(finished()), "EVT-09");
    reject(&mut c, as_user(run_error("boom")), "EVT-09");
    assert!(!c.terminated());
    accept(&mut c, finished());
}

// ---------------------------------------------------------------- EVT-11

#[test]
fn evt11_terminal_while_text_open() {
    for terminal in [finished(), run_error("boom")] {
        let mut c = running();
        accept(&mut c, StreamPayload::text_start("m1"));
        let name = terminal.kind.name().to_owned();
        let v = reject(&mut c, terminal, "EVT-11");
        assert!(v.detail.contains(&name), "{v}");
        assert!(v.detail.contains("text \"m1\""), "{v}");
        assert!(!c.terminated());
    }
}

#[test]
fn evt11_terminal_while_reasoning_open() {
    let mut c = running();
    accept(&mut c, StreamPayload::reasoning_start("r1"));
    let v = reject(&mut c, finished(), "EVT-11");
    assert!(v.detail.contains("reasoning \"r1\""), "{v}");
}

#[test]
fn evt11_terminal_while_tool_call_open() {
    let mut c = running();
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    let v = reject(&mut c, run_error("boom"), "EVT-11");
    assert!(v.detail.contains("tool call \"t1\""), "{v}");
}

#[test]
fn evt11_terminal_while_step_open() {
    let mut c = running();
    accept(&mut c, StreamPayload::step_started("plan"));
    let v = reject(&mut c, finished(), "EVT-11");
    assert!(v.detail.contains("step \"plan\""), "{v}");
}

#[test]
fn evt11_detail_names_everything_open_and_only_that() {
    let mut c = running();
    accept(&mut c, StreamPayload::text_start("m1"));
    accept(&mut c, StreamPayload::text_start("m2"));
    accept(&mut c, StreamPayload::text_end("m2"));
    accept(&mut c, StreamPayload::reasoning_start("r1"));
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    accept(&mut c, StreamPayload::tool_call_start("t2", "read", None));
    accept(&mut c, StreamPayload::tool_call_end("t2", None));
    accept(&mut c, StreamPayload::step_started("plan"));
    let v = reject(&mut c, finished(), "EVT-11");
    for open in [
        "text \"m1\"",
        "reasoning \"r1\"",
        "tool call \"t1\"",
        "step \"plan\"",
    ] {
        assert!(v.detail.contains(open), "{open} missing from {v}");
    }
    for closed in ["\"m2\"", "\"t2\""] {
        assert!(!v.detail.contains(closed), "{closed} is closed: {v}");
    }
}

#[test]
fn evt11_closing_everything_after_a_rejected_terminal_then_terminating_works() {
    let mut c = running();
    accept(&mut c, StreamPayload::text_start("m1"));
    accept(&mut c, StreamPayload::reasoning_start("r1"));
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    accept(&mut c, StreamPayload::step_started("plan"));
    reject(&mut c, finished(), "EVT-11");
    // The rejected terminal did not end the run: lifecycles continue.
    accept(&mut c, StreamPayload::text_content("m1", "more"));
    accept(&mut c, StreamPayload::text_end("m1"));
    reject(&mut c, run_error("boom"), "EVT-11");
    accept(&mut c, StreamPayload::reasoning_end("r1"));
    accept(&mut c, StreamPayload::tool_call_end("t1", None));
    let v = reject(&mut c, finished(), "EVT-11");
    assert!(v.detail.contains("step \"plan\""), "{v}");
    assert!(!v.detail.contains("text"), "{v}");
    accept(&mut c, StreamPayload::step_finished("plan"));
    accept(&mut c, finished());
    assert!(c.terminated());
    assert_eq!(c.finish(true), Ok(()));
}

// ---------------------------------------------------------------- EVT-12

#[test]
fn evt12_reasoning_forbidden_without_capability() {
    let mut c = LifecycleChecker::new(StreamCapability::default());
    accept(&mut c, StreamPayload::run_started());
    for p in [
        StreamPayload::reasoning_start("r1"),
        StreamPayload::reasoning_content("r1", "x"),
        StreamPayload::reasoning_end("r1"),
    ] {
        let v = reject(&mut c, p, "EVT-12");
        assert!(v.detail.contains("reasoning = false"), "{v}");
    }
    accept(&mut c, finished());
}

#[test]
fn evt12_tool_call_args_forbidden_without_capability() {
    let mut c = LifecycleChecker::new(StreamCapability::default());
    accept(&mut c, StreamPayload::run_started());
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    let v = reject(&mut c, StreamPayload::tool_call_args("t1", "{"), "EVT-12");
    assert!(v.detail.contains("tool_call_args = false"), "{v}");
    // The tool call itself is unaffected.
    accept(
        &mut c,
        StreamPayload::tool_call_end("t1", Some(json!("done"))),
    );
    accept(&mut c, finished());
}

#[test]
fn evt12_hitl_forbidden_without_capability() {
    let mut c = LifecycleChecker::new(StreamCapability::default());
    accept(&mut c, StreamPayload::run_started());
    let v = reject(&mut c, hitl_requested("drv.tool"), "EVT-12");
    assert!(v.detail.contains("hitl = false"), "{v}");
    let v = reject(&mut c, hitl_resolved("req-1"), "EVT-12");
    assert!(v.detail.contains("hitl = false"), "{v}");
}

#[test]
fn evt12_each_capability_only_gates_its_own_family() {
    let only_reasoning = StreamCapability {
        reasoning: true,
        ..Default::default()
    };
    let mut c = LifecycleChecker::new(only_reasoning);
    accept(&mut c, StreamPayload::run_started());
    accept(&mut c, StreamPayload::reasoning_start("r1"));
    accept(&mut c, StreamPayload::reasoning_end("r1"));
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    reject(&mut c, StreamPayload::tool_call_args("t1", "{"), "EVT-12");
    reject(&mut c, hitl_requested("drv.tool"), "EVT-12");

    let only_args = StreamCapability {
        tool_call_args: true,
        ..Default::default()
    };
    let mut c = LifecycleChecker::new(only_args);
    accept(&mut c, StreamPayload::run_started());
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    accept(&mut c, StreamPayload::tool_call_args("t1", "{"));
    reject(&mut c, StreamPayload::reasoning_start("r1"), "EVT-12");
    reject(&mut c, hitl_resolved("req-1"), "EVT-12");

    let only_hitl = StreamCapability {
        hitl: true,
        ..Default::default()
    };
    let mut c = LifecycleChecker::new(only_hitl);
    accept(&mut c, StreamPayload::run_started());
    accept(&mut c, hitl_requested("drv.tool"));
    accept(&mut c, hitl_resolved("req-1"));
    reject(
        &mut c,
        StreamPayload::reasoning_content("r1", "x"),
        "EVT-12",
    );
}

#[test]
fn evt12_native_and_token_level_false_do_not_forbid_a_coarse_text_lifecycle() {
    let mut c = LifecycleChecker::new(StreamCapability::default());
    accept(&mut c, StreamPayload::run_started());
    accept(&mut c, StreamPayload::step_started("turn"));
    accept(&mut c, StreamPayload::text_start("m1"));
    accept(&mut c, StreamPayload::text_content("m1", "whole answer"));
    accept(&mut c, StreamPayload::text_end("m1"));
    accept(
        &mut c,
        StreamPayload::tool_call_start("t1", "shell", Some(json!({"cmd": "ls"}))),
    );
    accept(
        &mut c,
        StreamPayload::tool_call_end("t1", Some(json!("a b"))),
    );
    accept(&mut c, StreamPayload::step_finished("turn"));
    accept(&mut c, finished());
    assert_eq!(c.finish(true), Ok(()));
}

// ---------------------------------------------------------------- EVT-14

#[test]
fn evt14_args_delta_after_complete_args() {
    let mut c = running();
    accept(
        &mut c,
        StreamPayload::tool_call_start("t1", "shell", Some(json!({"cmd": "ls"}))),
    );
    let v = reject(&mut c, StreamPayload::tool_call_args("t1", "{"), "EVT-14");
    assert!(v.detail.contains("after complete args"), "{v}");
    accept(&mut c, StreamPayload::tool_call_end("t1", None));
    // A sibling call without complete args may stream them.
    accept(&mut c, StreamPayload::tool_call_start("t2", "shell", None));
    accept(&mut c, StreamPayload::tool_call_args("t2", "{}"));
    accept(&mut c, StreamPayload::tool_call_end("t2", None));
}

#[test]
fn evt14_second_standalone_result() {
    let mut c = running();
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    accept(&mut c, StreamPayload::tool_call_end("t1", None));
    accept(
        &mut c,
        StreamPayload::tool_call_result("t1", Some(json!("ok"))),
    );
    let v = reject(
        &mut c,
        StreamPayload::tool_call_result("t1", Some(json!("again"))),
        "EVT-14",
    );
    assert!(v.detail.contains("second result"), "{v}");
}

#[test]
fn evt14_standalone_result_after_result_on_end() {
    let mut c = running();
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    accept(
        &mut c,
        StreamPayload::tool_call_end("t1", Some(json!("ok"))),
    );
    reject(
        &mut c,
        StreamPayload::tool_call_result("t1", Some(json!("again"))),
        "EVT-14",
    );
}

#[test]
fn evt14_end_without_result_leaves_room_for_one_result() {
    let mut c = running();
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    accept(&mut c, StreamPayload::tool_call_end("t1", None));
    accept(&mut c, StreamPayload::tool_call_result("t1", None));
    reject(
        &mut c,
        StreamPayload::tool_call_result("t1", None),
        "EVT-14",
    );
}

#[test]
fn evt14_results_are_counted_per_tool_call() {
    let mut c = running();
    accept(&mut c, StreamPayload::tool_call_start("t1", "shell", None));
    accept(&mut c, StreamPayload::tool_call_start("t2", "shell", None));
    accept(&mut c, StreamPayload::tool_call_end("t1", Some(json!(1))));
    accept(&mut c, StreamPayload::tool_call_end("t2", None));
    accept(
        &mut c,
        StreamPayload::tool_call_result("t2", Some(json!(2))),
    );
    reject(
        &mut c,
        StreamPayload::tool_call_result("t1", None),
        "EVT-14",
    );
    reject(
        &mut c,
        StreamPayload::tool_call_result("t2", None),
        "EVT-14",
    );
}

// ---------------------------------------------------------------- EVT-15

#[test]
fn evt15_custom_kind_with_empty_name() {
    let mut c = running();
    for name in ["", "   "] {
        let v = reject(&mut c, StreamPayload::custom(name, "text"), "EVT-15");
        assert!(v.detail.contains("non-canonical name"), "{v}");
    }
}

#[test]
fn evt15_custom_kind_with_a_canonical_name() {
    let mut c = running();
    for name in CANONICAL {
        let v = reject(&mut c, StreamPayload::custom(name, ""), "EVT-15");
        assert!(v.detail.contains(name), "{v}");
    }
    // The list the checker uses covers every canonical kind name.
    for p in one_of_each() {
        if !matches!(p.kind, StreamKind::Custom { .. }) {
            assert!(CANONICAL.contains(&p.kind.name()), "{}", p.kind.name());
        }
    }
}

#[test]
fn evt15_custom_kind_with_own_name_is_accepted() {
    let mut c = running();
    accept(
        &mut c,
        StreamPayload::custom("codex.rate_limit", "slow down"),
    );
    accept(
        &mut c,
        StreamPayload::custom("vendor.ping", "").with_raw(json!({"n": 1})),
    );
    accept(&mut c, finished());
}

// ---------------------------------------------------------------- stream.dropped

#[test]
fn dropped_is_accepted_between_start_and_terminal_even_with_open_lifecycles() {
    let mut c = running();
    accept(&mut c, dropped(0));
    accept(&mut c, StreamPayload::text_start("m1"));
    accept(&mut c, dropped(7));
    accept(&mut c, StreamPayload::text_end("m1"));
    accept(&mut c, finished());
    reject(&mut c, dropped(1), "EVT-02");
}

// ---------------------------------------------------------------- a full run

#[test]
fn long_valid_interleaved_sequence_is_accepted() {
    let mut c = full();
    let seq = vec![
        StreamPayload::run_started(),
        StreamPayload::step_started("turn-1"),
        StreamPayload::reasoning_start("r1"),
        StreamPayload::reasoning_content("r1", "The user wants "),
        StreamPayload::text_start("m1"),
        StreamPayload::reasoning_content("r1", "a listing."),
        StreamPayload::text_content("m1", "Let me "),
        StreamPayload::reasoning_end("r1"),
        StreamPayload::text_content("m1", "look."),
        StreamPayload::tool_call_start("call-1", "shell", None),
        StreamPayload::tool_call_start("call-2", "read_file", None),
        StreamPayload::tool_call_args("call-1", "{\"cmd\":"),
        StreamPayload::tool_call_args("call-2", "{\"path\":\"a\"}"),
        StreamPayload::text_end("m1"),
        StreamPayload::tool_call_args("call-1", "\"ls\"}"),
        hitl_requested("drv.can_use_tool"),
        dropped(3),
        hitl_resolved("req-1"),
        StreamPayload::tool_call_end("call-1", Some(json!({"stdout": "a\nb\n"}))),
        StreamPayload::custom("vendor.rate_limit", "slowing down").with_raw(json!({"wait": 2})),
        StreamPayload::tool_call_end("call-2", None),
        StreamPayload::tool_call_result("call-2", Some(json!("contents of a"))),
        StreamPayload::text_start("m2"),
        StreamPayload::text_content("m2", "Here are "),
        StreamPayload::text_content("m2", "the files."),
        StreamPayload::text_end("m2"),
        StreamPayload::step_finished("turn-1"),
        StreamPayload::run_finished(Some(Usage {
            input_tokens: Some(120),
            output_tokens: Some(40),
            ..Default::default()
        })),
    ];
    for p in seq {
        accept(&mut c, p);
        assert!(c.started());
    }
    assert!(c.terminated());
    assert_eq!(c.finish(true), Ok(()));
    assert_eq!(c.finish(false), Ok(()));
}

#[test]
fn evt14_result_on_end_after_a_standalone_result() {
    let mut c = LifecycleChecker::new(StreamCapability::FULL);
    c.check(&StreamPayload::run_started()).unwrap();
    c.check(&StreamPayload::tool_call_start("t1", "shell", None))
        .unwrap();
    c.check(&StreamPayload::tool_call_result(
        "t1",
        Some(serde_json::json!("ok")),
    ))
    .unwrap();
    let v = c
        .check(&StreamPayload::tool_call_end(
            "t1",
            Some(serde_json::json!("again")),
        ))
        .unwrap_err();
    assert_eq!(v.clause, "EVT-14");
    // The rejected end left the call open: a plain end still closes it.
    c.check(&StreamPayload::tool_call_end("t1", None)).unwrap();
    c.check(&StreamPayload::run_finished(None)).unwrap();
}

#[test]
fn failure_code_parse_never_hides_a_known_code() {
    use crate::response::FailureCode;
    assert_eq!(FailureCode::parse("agent_error"), FailureCode::AgentError);
    assert_eq!(
        FailureCode::parse("rate_limited"),
        FailureCode::Other("rate_limited".into())
    );
}
