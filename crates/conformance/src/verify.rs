//! Run clauses judged on what one driver run emitted and returned: EVT, RUN,
//! TRN, RSP, CASE.

use std::collections::BTreeMap;

use agent_adaptor_driver::{
    Driver, FailureCode, LifecycleChecker, ObservationSupport, Request, Response, RunEvent,
    Transcript, TranscriptItem, TranscriptKind,
};

use crate::hermetic::guarded;
use crate::options::Expect;
use crate::record::Trace;
use crate::report::Report;

const EVT: [&str; 13] = [
    "EVT-01", "EVT-02", "EVT-03", "EVT-04", "EVT-05", "EVT-06", "EVT-07", "EVT-08", "EVT-09",
    "EVT-11", "EVT-12", "EVT-14", "EVT-15",
];

/// The observation clauses, judged on every run's payloads.
const OBS: [&str; 8] = [
    "OBS-01", "OBS-02", "OBS-03", "OBS-04", "OBS-05", "OBS-06", "OBS-07", "OBS-08",
];

/// Judge one recorded run.
pub fn verify_trace(
    driver: &dyn Driver,
    request: &Request,
    trace: &Trace,
    expect: Expect,
    scope: &str,
    report: &mut Report,
) {
    outcome(trace, expect, scope, report);
    contract(driver, request, trace, scope, report);
}

/// The contract clauses of one recorded run (everything but CASE-01, which
/// only a hermetic run case has: a live run's outcome is LIV-01).
pub(crate) fn contract(
    driver: &dyn Driver,
    request: &Request,
    trace: &Trace,
    scope: &str,
    report: &mut Report,
) {
    lifecycle(driver, request, trace, scope, report);
    run_events(trace, scope, report);
    match trace.response() {
        Some(resp) => {
            transcript(&resp.transcript, scope, report);
            response(driver, resp, scope, report);
        }
        None => {
            for id in ["TRN-01", "TRN-02", "TRN-03", "TRN-04"] {
                report.skip(id, scope, "the run returned no response");
            }
            for id in ["RSP-01", "RSP-02", "RSP-03", "RSP-04", "RSP-05"] {
                report.skip(id, scope, "the run returned no response");
            }
        }
    }
}

fn outcome(trace: &Trace, expect: Expect, scope: &str, report: &mut Report) {
    let mut f = Vec::new();
    if let Some(p) = &trace.panicked {
        f.push(format!("run panicked: {p}"));
    }
    if trace.timed_out {
        f.push("run did not return within the timeout".to_owned());
    }
    let failed = match &trace.returned {
        Some(Ok(r)) => {
            r.failure.is_some()
                || r.exit_code.is_some_and(|c| c != 0)
                || r.signal.is_some()
                || r.timed_out
        }
        Some(Err(_)) | None => true,
    };
    match (expect, failed) {
        (Expect::Success, true) => {
            let why = match &trace.returned {
                Some(Err(e)) => format!("driver error: {e}"),
                Some(Ok(r)) => format!(
                    "{}, {}{}",
                    r.failure.as_ref().map_or_else(
                        || "no failure".to_owned(),
                        |x| format!("failure: {}", x.message)
                    ),
                    agent_adaptor_driver::describe_exit(r.exit_code, r.signal.as_deref()),
                    if r.timed_out { ", timed out" } else { "" }
                ),
                None => "no response".to_owned(),
            };
            f.push(format!("expected success, got {why}"));
        }
        (Expect::Failure, false) => f.push("expected a failure, the run succeeded".to_owned()),
        _ => {}
    }
    report.judge("CASE-01", scope, f);
}

fn lifecycle(
    driver: &dyn Driver,
    request: &Request,
    trace: &Trace,
    scope: &str,
    report: &mut Report,
) {
    let capability = guarded("stream_capability()", || driver.stream_capability())
        .ok()
        .flatten()
        .unwrap_or_default();
    let mut checker = LifecycleChecker::new(capability);
    let mut findings: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut any = false;
    // A terminal frame the checker rejected (e.g. EVT-11: sent while a
    // message was open) is that clause's finding; EVT-02 is not also blamed
    // for the run "ending without one".
    let mut terminal_sent = false;
    for (i, p) in trace.payloads().enumerate() {
        any = true;
        terminal_sent |= p.kind.is_terminal();
        if let Err(v) = checker.check(p) {
            findings
                .entry(v.clause)
                .or_default()
                .push(format!("payload #{i}: {}", v.detail));
        }
    }
    if trace.response().is_some()
        && !terminal_sent
        && let Err(v) = checker.finish(request.streaming)
    {
        findings.entry(v.clause).or_default().push(v.detail);
    }
    for id in EVT {
        match findings.remove(id) {
            Some(f) => report.judge(id, scope, f),
            None if any || request.streaming => report.pass(id, scope),
            None => report.skip(id, scope, "no stream payloads in a non-streaming run"),
        }
    }
    // OBS-01 holds for every driver (no payload of an undeclared kind);
    // the others only where the driver declares an observation kind.
    let observes = capability.observation != ObservationSupport::NONE;
    for id in OBS {
        match findings.remove(id) {
            Some(f) => report.judge(id, scope, f),
            None if (observes || id == "OBS-01") && (any || request.streaming) => {
                report.pass(id, scope)
            }
            None if any || request.streaming => {
                report.skip(id, scope, "the driver declares no observation kind")
            }
            None => report.skip(id, scope, "no stream payloads in a non-streaming run"),
        }
    }
    for (id, f) in findings {
        report.judge(id, scope, f);
    }
    report.not_applicable(
        "EVT-10",
        scope,
        "by construction: stream payloads have no sequence or timestamp fields",
    );
    report.not_applicable(
        "EVT-13",
        scope,
        "by construction: the run.* payload kinds have no message or tool-call id",
    );
}

fn run_events(trace: &Trace, scope: &str, report: &mut Report) {
    report.not_applicable(
        "RUN-01",
        scope,
        "by construction: a chunk's stream is OutputStream::{Stdout, Stderr}",
    );
    report.not_applicable(
        "RUN-03",
        scope,
        "by construction: run events have no sequence field",
    );
    let items: Vec<&TranscriptItem> = trace
        .events()
        .filter_map(|e| match e {
            RunEvent::Item(i) => Some(&**i),
            _ => None,
        })
        .collect();
    let f = items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            item.validate()
                .err()
                .map(|v| format!("item event #{i}: {v}"))
        })
        .collect();
    report.judge("RUN-02", scope, f);
    match trace.response() {
        None => report.skip("RUN-04", scope, "the run returned no response"),
        Some(resp) => {
            let returned = &resp.transcript;
            let mut f = vec![];
            let mut at = None;
            for (i, item) in returned.iter().enumerate() {
                match item {
                    Err(e) => {
                        f.push(format!("returned item #{i} cannot be read back: {e}"));
                        at = Some(i);
                        break;
                    }
                    Ok(item) if items.get(i).is_none_or(|e| **e != *item) => {
                        at = Some(i);
                        break;
                    }
                    Ok(_) => {}
                }
            }
            if at.is_none() && items.len() != returned.len() {
                at = Some(items.len().min(returned.len()));
            }
            if let Some(at) = at {
                f.push(format!(
                    "emitted {} items, returned {}; first difference at index {at}",
                    items.len(),
                    returned.len()
                ));
            }
            report.judge("RUN-04", scope, f);
        }
    }
}

fn transcript(items: &Transcript, scope: &str, report: &mut Report) {
    let mut findings: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let item = match item {
            Ok(item) => item,
            Err(e) => {
                // An item that cannot be read back breaks every field rule
                // it can no longer be checked against.
                for id in ["TRN-01", "TRN-02", "TRN-03", "TRN-04"] {
                    findings
                        .entry(id)
                        .or_default()
                        .push(format!("item #{i} cannot be read back: {e}"));
                }
                continue;
            }
        };
        if let Err(v) = item.validate() {
            findings
                .entry(v.clause())
                .or_default()
                .push(format!("item #{i}: {v}"));
        }
    }
    for id in ["TRN-01", "TRN-02", "TRN-03", "TRN-04"] {
        report.judge(id, scope, findings.remove(id).unwrap_or_default());
    }
    own_session(items, scope, report);
}

/// TRN-05: a terminal for another session is not the run's. The session is
/// the one the first init item announced; every result item that names a
/// session must name it.
fn own_session(items: &Transcript, scope: &str, report: &mut Report) {
    let named = |kind: TranscriptKind| {
        items
            .iter()
            .filter_map(Result::ok)
            .filter(move |i| i.kind == kind)
            .filter_map(|i| i.session_id.clone().filter(|s| !s.is_empty()))
    };
    let Some(ours) = named(TranscriptKind::Init).next() else {
        return report.skip("TRN-05", scope, "no init item names a session");
    };
    let results: Vec<String> = named(TranscriptKind::Result).collect();
    if results.is_empty() {
        return report.skip("TRN-05", scope, "no result item names a session");
    }
    let f = results
        .into_iter()
        .filter(|s| *s != ours)
        .map(|s| format!("a result item for session {s:?}, the init announced {ours:?}"))
        .collect();
    report.judge("TRN-05", scope, f);
}

fn response(driver: &dyn Driver, resp: &Response, scope: &str, report: &mut Report) {
    let stdout = resp.raw.stdout.to_vec().unwrap_or_default();
    let valid = resp.checkpoint.as_ref().filter(|c| c.valid);
    // RSP-01
    match valid {
        None => report.skip("RSP-01", scope, "no valid checkpoint claimed"),
        Some(cp) => {
            let mut f = Vec::new();
            if cp.state.as_ref().is_none_or(|s| s.resume_id.is_empty()) {
                f.push("valid checkpoint without a resume id".to_owned());
            }
            if resp.exit_code.is_some_and(|c| c != 0) {
                f.push("valid checkpoint after a non-zero exit".to_owned());
            }
            if resp.signal.is_some() || resp.timed_out {
                f.push("valid checkpoint after a signal or timeout".to_owned());
            }
            if resp.failure.is_some() {
                f.push("valid checkpoint with a failure".to_owned());
            }
            if resp.raw.terminal.is_none() {
                f.push("valid checkpoint without an official terminal event".to_owned());
            }
            report.judge("RSP-01", scope, f);
        }
    }
    // RSP-02
    match &resp.failure {
        None => report.skip("RSP-02", scope, "no failure"),
        Some(fail) => {
            let decision = matches!(
                fail.code,
                FailureCode::DecisionRejected | FailureCode::DecisionTimeout
            );
            let f = match (decision, fail.human_decision.is_some()) {
                (true, false) => vec![format!(
                    "code {} without a human-decision detail",
                    fail.code
                )],
                (false, true) => vec![format!("human-decision detail with code {}", fail.code)],
                _ => vec![],
            };
            report.judge("RSP-02", scope, f);
        }
    }
    // RSP-03
    let mut f = Vec::new();
    let out = resp.output.trim();
    if !out.is_empty() {
        let raw = String::from_utf8_lossy(&stdout);
        if out == raw.trim() && raw.contains('\n') {
            f.push("the output is the raw stdout".to_owned());
        }
        if let Some(t) = &resp.raw.terminal
            && out.contains(t.json.get())
        {
            f.push("the output contains the terminal JSON".to_owned());
        }
    }
    report.judge("RSP-03", scope, f);
    // RSP-04
    match valid.and_then(|c| c.state.as_ref()) {
        None => report.skip("RSP-04", scope, "no valid checkpoint claimed"),
        Some(state) => {
            let f = match guarded("checkpoint codec", || {
                driver.session_codec().map(|c| {
                    let p = c.to_params(Some(state));
                    (c.from_params(&p), c.guard_fingerprint(&p))
                })
            }) {
                Err(e) => vec![e],
                Ok(None) => vec!["valid checkpoint but the driver has no codec".to_owned()],
                Ok(Some((back, guard))) => {
                    let mut f = Vec::new();
                    if back.as_ref() != Some(state) {
                        f.push("the checkpoint state does not round-trip".to_owned());
                    }
                    if guard.is_empty() {
                        f.push("the checkpoint's guard fingerprint is empty".to_owned());
                    }
                    f
                }
            };
            report.judge("RSP-04", scope, f);
        }
    }
    // RSP-05
    match &resp.raw.terminal {
        None => report.skip("RSP-05", scope, "no terminal payload"),
        Some(t) => {
            let mut f = Vec::new();
            if t.event.trim().is_empty() {
                f.push("the terminal event name is empty".to_owned());
            }
            let json = t.json.get().as_bytes();
            if !stdout.is_empty() && !contains(&stdout, json) {
                f.push("the terminal JSON does not appear verbatim on stdout".to_owned());
            }
            report.judge("RSP-05", scope, f);
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// The LIV clauses of a live run.
pub(crate) fn live(
    driver: &dyn Driver,
    live: &crate::options::LiveRun,
    trace: &Trace,
    report: &mut Report,
) {
    let Some(resp) = trace.response() else {
        let why = match (&trace.returned, &trace.panicked) {
            (Some(Err(e)), _) => format!("driver error: {e}"),
            (_, Some(p)) => format!("run panicked: {p}"),
            _ if trace.timed_out => "run did not return within the timeout".to_owned(),
            _ => "no response".to_owned(),
        };
        report.judge("LIV-01", "live", vec![why]);
        report.skip("LIV-02", "live", "the live run returned no response");
        report.skip("LIV-03", "live", "the live run returned no response");
        return;
    };
    let mut f = Vec::new();
    if resp.exit_code.is_some_and(|c| c != 0) || resp.signal.is_some() || resp.timed_out {
        f.push(format!(
            "{}{}",
            agent_adaptor_driver::describe_exit(resp.exit_code, resp.signal.as_deref()),
            if resp.timed_out { ", timed out" } else { "" }
        ));
    }
    if let Some(fail) = &resp.failure {
        f.push(format!("failure: {}", fail.message));
    }
    if !f.is_empty() {
        // What a failed run answered, or whether it left a checkpoint, says
        // nothing more: LIV-01 is the finding.
        report.judge("LIV-01", "live", f);
        report.skip("LIV-02", "live", "the live run failed (LIV-01)");
        report.skip("LIV-03", "live", "the live run failed (LIV-01)");
        return;
    }
    report.pass("LIV-01", "live");
    match &live.expected_output {
        None => report.skip("LIV-02", "live", "no expected output given"),
        Some(want) => {
            // Diagnostics never echo provider text: sizes only.
            let f = if resp.output.contains(want.as_str()) {
                vec![]
            } else {
                vec![format!(
                    "the output ({} bytes) does not contain the expected text ({} bytes)",
                    resp.output.len(),
                    want.len()
                )]
            };
            report.judge("LIV-02", "live", f);
        }
    }
    let resumable = guarded("descriptor()", || {
        driver.descriptor().sessions.supports_resume
    })
    .unwrap_or(false);
    if !resumable {
        report.skip("LIV-03", "live", "the driver does not support resume");
    } else {
        let ok = resp
            .checkpoint
            .as_ref()
            .is_some_and(|c| c.valid && c.state.as_ref().is_some_and(|s| !s.resume_id.is_empty()));
        let f = if ok {
            vec![]
        } else {
            vec!["a resume-capable driver's live run yielded no valid checkpoint".to_owned()]
        };
        report.judge("LIV-03", "live", f);
    }
}
