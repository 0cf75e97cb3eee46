//! A thread's whole history as the AG-UI client saw it live: every AG-UI
//! run of the event log derived again by the replay's own mapper (the same
//! frames, with the same ids, as a `Last-Event-ID` reconnect), with each
//! run's prompt and the answer given to each interrupt in between.
//!
//! A page that renders live frames renders this with the same code, so a
//! reloaded thread shows the same cards as before: text, reasoning, tool
//! calls with their input and output, interrupts and their decisions,
//! errors and usage, in the order they happened.

use agent_adaptor_core::thread::event_log::RecordedEvent;
use agent_adaptor_core::thread::store::StoreError;
use agent_adaptor_core::{Event, ThreadStore};
use serde_json::{Value, json};

use super::record::{read_all, run_meta};
use super::replay::{Found, LogFrames};

/// The notice kind core records when an approval is decided.
const APPROVAL_RESOLVED: &str = "approval.resolved";

/// The transcript of `key`'s event log ([`transcript`]); `Unsupported`
/// when the store keeps no log.
pub async fn thread_transcript(
    store: &dyn ThreadStore,
    key: &str,
) -> Result<Vec<Value>, StoreError> {
    Ok(transcript(&read_all(store, key).await?))
}

/// The items of a log, oldest first, each one of
///
/// * `{"kind": "prompt", "runId", "text"}`: the user's prompt of a run;
/// * `{"kind": "decision", "runId", "interruptId", "result", "reason"?}`:
///   how an interrupt was answered (`result` as core records it:
///   `approved`, `rejected`, …; `alwaysAllowed: <tool>` when the answer
///   always allowed the tool in the thread), just before the run that
///   resumed it;
/// * `{"kind": "frame", "runId", "id", "event"}`: one AG-UI event.
///
/// A run whose records stop without its end (a later run began) ends with
/// `RUN_ERROR` `interrupted`, as a reconnect would show it; the log's
/// newest run may still be going and ends where its records end.
pub fn transcript(records: &[RecordedEvent]) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, rec) in records.iter().enumerate() {
        let Some(meta) = run_meta(rec) else { continue };
        let run_id = meta.run_id.clone();
        if let Some(prompt) = &rec.prompt {
            out.push(json!({"kind": "prompt", "runId": run_id, "text": prompt}));
        }
        // The core run's records from its first one (a resumed AG-UI run
        // is derived from the whole core run).
        let Some(first) = records[..=i].iter().position(|r| r.run_id == rec.run_id) else {
            continue;
        };
        let core: Vec<&RecordedEvent> = records[first..]
            .iter()
            .take_while(|r| r.run_id == rec.run_id)
            .collect();
        if meta.resumed_at.is_some() {
            out.extend(decisions(&core, rec.cursor, &run_id));
        }
        let mut frames = LogFrames::new(&Found {
            meta,
            core_run_id: rec.run_id.clone(),
            start: records[first].cursor,
        });
        let stopped = records.get(first + core.len());
        for r in core.into_iter().chain(stopped) {
            for (id, text) in frames.record(r) {
                let event: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                out.push(
                    json!({"kind": "frame", "runId": run_id, "id": id.to_string(), "event": event}),
                );
            }
            if frames.done() {
                break;
            }
        }
    }
    out
}

/// The tool a person's "always allow" answer granted in the thread, from
/// an `approval.resolved` notice's `thread_grant`.
fn human_grant(data: &Value) -> Option<&str> {
    let grant = data.get("thread_grant")?;
    let human = grant.get("source").and_then(Value::as_str) == Some("human");
    let granted = grant.get("granted").and_then(Value::as_bool) == Some(true);
    (human && granted).then(|| grant.get("tool").and_then(Value::as_str))?
}

/// The approval decisions recorded after the resumed run's notice at
/// `cursor` and before the core run's next AG-UI run.
fn decisions(core: &[&RecordedEvent], cursor: u64, run_id: &str) -> Vec<Value> {
    core.iter()
        .filter(|r| r.cursor > cursor)
        .take_while(|r| run_meta(r).is_none())
        .filter_map(|r| match &r.event {
            Event::Notice(n) if n.kind == APPROVAL_RESOLVED => {
                let data = n.data.clone().unwrap_or(Value::Null);
                let mut item = json!({
                    "kind": "decision",
                    "runId": run_id,
                    "interruptId": data.get("request_id").cloned().unwrap_or(Value::Null),
                    "result": data.get("result").cloned().unwrap_or_else(|| json!(n.text)),
                });
                if let Some(reason) = data.get("reason").filter(|r| !r.is_null()) {
                    item["reason"] = reason.clone();
                }
                if let Some(tool) = human_grant(&data) {
                    item["alwaysAllowed"] = json!(tool);
                }
                Some(item)
            }
            _ => None,
        })
        .collect()
}
