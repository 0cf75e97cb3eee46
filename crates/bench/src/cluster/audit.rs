//! The checks of a cluster run, from what the clients saw, the mock model's
//! request log and the store: no turn lost, none run twice, the killed
//! instance's runs interrupted, every other run completed, every stream
//! ended by exactly one terminal event.

use std::collections::HashMap;

use agent_adaptor_testkit::mock::RecordedRequest;
use serde::Serialize;
use serde_json::Value;

use super::load::{Outcome, TurnReport};

/// One named check.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// What it checks.
    pub name: &'static str,
    /// Whether it held.
    pub passed: bool,
    /// The counts, or the first few violations.
    pub detail: String,
}

/// What the store and the mock said after the load.
pub struct Evidence<'a> {
    /// The mock model's request log.
    pub requests: &'a [RecordedRequest],
    /// The prompts of the runs recorded as interrupted.
    pub interrupted: &'a [String],
    /// The prompts of the runs the killed instance held when it died.
    pub killed: &'a [String],
    /// The tags of broken or interrupted turns whose run is recorded
    /// finished in the store (the instance died after saving it, before the
    /// client read the end).
    pub saved: &'a [String],
    /// The killed instance's index, if one was killed.
    pub victim: Option<usize>,
    /// Whether every run the killed instance held was recorded interrupted
    /// within the bound (the takeover measurement).
    pub taken_over: Option<bool>,
}

/// Every check of one phase.
pub fn checks(turns: &[TurnReport], ev: &Evidence<'_>) -> Vec<Check> {
    let calls = model_calls(ev.requests, turns);
    let recorded = |tag: &str| ev.interrupted.iter().any(|p| p.contains(tag));
    let mut out = Vec::new();

    let twice: Vec<String> = turns
        .iter()
        .filter(|t| calls.get(t.tag.as_str()).copied().unwrap_or(0) > 1)
        .map(|t| {
            format!(
                "{} reached the model {} times",
                t.tag,
                calls[t.tag.as_str()]
            )
        })
        .collect();
    out.push(check(
        "no turn ran twice (its prompt reached the model at most once)",
        &twice,
        || {
            format!(
                "{} turns, {} first model calls",
                turns.len(),
                calls.values().sum::<usize>()
            )
        },
    ));

    let mut lost = Vec::new();
    let mut unstarted = 0;
    for t in turns {
        let reached = calls.get(t.tag.as_str()).copied().unwrap_or(0) > 0;
        match &t.outcome {
            Outcome::Completed if recorded(&t.tag) => {
                lost.push(format!("{} completed and is recorded interrupted", t.tag));
            }
            Outcome::Completed => {}
            Outcome::Interrupted | Outcome::Broken if recorded(&t.tag) => {}
            Outcome::Interrupted | Outcome::Broken if ev.saved.contains(&t.tag) => {}
            Outcome::Broken if !reached => unstarted += 1,
            Outcome::Interrupted | Outcome::Broken => {
                lost.push(format!(
                    "{} ({:?}) is not recorded interrupted",
                    t.tag, t.outcome
                ));
            }
            Outcome::Failed(_) | Outcome::CancelledByCut => {}
        }
    }
    out.push(check(
        "no turn lost (completed, or recorded interrupted)",
        &lost,
        || format!("{unstarted} turns broken by the kill before their run started"),
    ));

    let failed: Vec<String> = turns
        .iter()
        .filter_map(|t| match &t.outcome {
            Outcome::Failed(why) => Some(format!("{}: {why}", t.tag)),
            Outcome::Interrupted | Outcome::Broken if Some(t.node) != ev.victim => {
                Some(format!("{} on a live instance: {:?}", t.tag, t.outcome))
            }
            _ => None,
        })
        .collect();
    out.push(check(
        "every run not on the killed instance completed",
        &failed,
        || {
            let done = turns
                .iter()
                .filter(|t| t.outcome == Outcome::Completed)
                .count();
            format!("{done} completed")
        },
    ));

    let streams: Vec<String> = turns.iter().flat_map(|t| t.stream_errors.clone()).collect();
    out.push(check(
        "every stream read ends with exactly one terminal event",
        &streams,
        || "all".into(),
    ));

    if ev.victim.is_some() {
        let missing: Vec<String> = ev
            .killed
            .iter()
            .filter(|p| !ev.interrupted.contains(p))
            .map(|p| format!("{p:?} not recorded interrupted"))
            .collect();
        let mut missing = missing;
        if ev.taken_over == Some(false) {
            missing.push("not all within the bound".into());
        }
        out.push(check(
            "every run the killed instance held is recorded interrupted",
            &missing,
            || format!("{} runs held at the kill", ev.killed.len()),
        ));
    }
    out
}

fn check(name: &'static str, violations: &[String], ok: impl FnOnce() -> String) -> Check {
    let detail = if violations.is_empty() {
        ok()
    } else {
        let first: Vec<&str> = violations.iter().take(5).map(String::as_str).collect();
        format!("{} violations, e.g. {}", violations.len(), first.join("; "))
    };
    Check {
        name,
        passed: violations.is_empty(),
        detail,
    }
}

/// How many model requests began each turn: requests that offer tools and
/// whose last message is the user's, carrying the turn's tag. (Requests
/// that follow a tool call end with its result; a CLI's side requests,
/// titles or quota probes, offer no tools.)
fn model_calls<'a>(
    requests: &[RecordedRequest],
    turns: &'a [TurnReport],
) -> HashMap<&'a str, usize> {
    let mut by_tag: HashMap<&str, usize> = HashMap::new();
    let tags: Vec<&str> = turns.iter().map(|t| t.tag.as_str()).collect();
    for req in requests {
        let Some(text) = req.json().as_ref().and_then(first_call_prompt) else {
            continue;
        };
        for tag in tags.iter().filter(|tag| text.contains(**tag)) {
            *by_tag.entry(*tag).or_default() += 1;
        }
    }
    by_tag
}

/// The user message that starts a model turn, as text.
fn first_call_prompt(body: &Value) -> Option<String> {
    let tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let last = body["messages"].as_array().and_then(|m| m.last())?;
    if !tools || last["role"] != "user" {
        return None;
    }
    // A tool result in a user message (Anthropic) is no new turn.
    let results = last["content"]
        .as_array()
        .is_some_and(|c| c.iter().any(|p| p["type"] == "tool_result"));
    (!results).then(|| last["content"].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::load::Protocol;
    use serde_json::json;

    fn turn(tag: &str, outcome: Outcome, node: usize) -> TurnReport {
        TurnReport {
            thread: 0,
            turn: 0,
            protocol: Protocol::Agui,
            tag: tag.into(),
            outcome,
            ttff_ms: None,
            node,
            approvals: (0, 0),
            resumes: (0, 0),
            stream_errors: Vec::new(),
        }
    }

    fn request(body: serde_json::Value) -> RecordedRequest {
        RecordedRequest {
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            query: None,
            headers: Vec::new(),
            body: body.to_string().into(),
        }
    }

    fn first_call(prompt: &str) -> RecordedRequest {
        request(json!({"tools": [{"type": "function"}],
            "messages": [{"role": "system", "content": "x"}, {"role": "user", "content": prompt}]}))
    }

    fn verdicts(turns: &[TurnReport], ev: &Evidence<'_>) -> Vec<(&'static str, bool)> {
        checks(turns, ev)
            .into_iter()
            .map(|c| (c.name, c.passed))
            .collect()
    }

    #[test]
    fn a_prompt_sent_twice_or_a_lost_run_fails_and_a_recorded_one_passes() {
        let turns = [
            turn("[p t0 k0]", Outcome::Completed, 0),
            turn("[p t1 k0]", Outcome::Broken, 1),
        ];
        // A follow-up after a tool result and a side request without tools
        // start no turn.
        let tool_result = request(json!({"tools": [{"type": "function"}],
            "messages": [{"role": "user", "content": "hello [p t0 k0]"}, {"role": "tool", "content": "a.txt"}]}));
        let side =
            request(json!({"messages": [{"role": "user", "content": "title: hello [p t0 k0]"}]}));
        let once = [
            first_call("hello [p t0 k0]"),
            tool_result,
            side,
            first_call("hello [p t1 k0]"),
        ];
        let recorded = ["hello [p t1 k0]".to_owned()];
        let ev = Evidence {
            requests: &once,
            interrupted: &recorded,
            killed: &recorded,
            saved: &[],
            victim: Some(1),
            taken_over: Some(true),
        };
        assert!(
            verdicts(&turns, &ev).iter().all(|(_, ok)| *ok),
            "{:?}",
            checks(&turns, &ev)
        );

        let twice = [first_call("hello [p t0 k0]"), first_call("hello [p t0 k0]")];
        let ev = Evidence {
            requests: &twice,
            ..ev
        };
        let failed: Vec<_> = verdicts(&turns, &ev)
            .into_iter()
            .filter(|(_, ok)| !ok)
            .collect();
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert!(failed[0].0.starts_with("no turn ran twice"));

        // The broken turn reached the model but nothing recorded it.
        let ev = Evidence {
            requests: &once,
            interrupted: &[],
            ..ev
        };
        let failed: Vec<_> = verdicts(&turns, &ev)
            .into_iter()
            .filter(|(_, ok)| !ok)
            .collect();
        let names: Vec<_> = failed.iter().map(|(n, _)| *n).collect();
        assert!(
            names.iter().any(|n| n.starts_with("no turn lost")),
            "{names:?}"
        );
        assert!(
            names.iter().any(|n| n.starts_with("every run the killed")),
            "{names:?}"
        );
    }

    #[test]
    fn a_failed_turn_or_a_broken_one_on_a_live_instance_fails() {
        let turns = [
            turn("[p t0 k0]", Outcome::Failed("status 500".into()), 0),
            turn("[p t1 k0]", Outcome::Interrupted, 0),
        ];
        let recorded = ["hello [p t1 k0]".to_owned()];
        let ev = Evidence {
            requests: &[],
            interrupted: &recorded,
            killed: &[],
            saved: &[],
            victim: Some(1),
            taken_over: Some(true),
        };
        let c = checks(&turns, &ev);
        let every = c
            .iter()
            .find(|c| c.name.starts_with("every run not on"))
            .map(|c| (c.passed, c.detail.clone()));
        let (passed, detail) = every.unwrap_or_default();
        assert!(!passed);
        assert!(detail.starts_with("2 violations"), "{detail}");
    }
}
