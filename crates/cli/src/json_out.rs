//! `run --json`: one JSON object per event, one a line, then one result
//! line.
//!
//! An event line is `{"type": KIND, "sequence": N, "run_id": ID, "time":
//! …, ["thread_key": …,] <the event's own fields>}` where `KIND` is the
//! event's kind name (`run.started`, `text.content`, `tool_call.start`,
//! `notice.approval.resolved`, `approval.requested`, `run.finished` …).
//! Raw process output (`bytes`) is given as UTF-8 text (lossy). A line's
//! keys are a set: their order is not part of the format (an event's own
//! field wins over an envelope key of the same name, as `source` of
//! `dropped` and `approval.requested`). Each line is written in one
//! serializer pass, straight from the event ([`write_event`]). The last
//! line is `{"type": "result", "ok": bool, "run_id", "text", "usage",
//! "failure": null | {"reason", "message", ["stderr_tail"]}, "raw": {"stdout_bytes",
//! "stderr_bytes", "terminal"}, "provider", "model", "exit_code",
//! "structured_output", "workspace": null | {"strategy", "path", "branch",
//! "base_commit", "changes": {"files": [{"path", "kind", "insertions",
//! "deletions"}], "insertions", "deletions", ["diff"] (`--diff`)}}, "services": [{"name",
//! "status", "endpoint", "health"}]}`.
//!
//! Observation lines (their field names are stable; optional fields are
//! left out when empty):
//!
//! | `type` | fields |
//! |---|---|
//! | `todo.updated` | `revision` (1, 2 … per scope), `items: [{id, content, status: pending\|in_progress\|completed\|cancelled, active_form?, priority?}]` (the whole list), `scope_id?` (a subagent's list), `provider_protocol` |
//! | `subagent.started` / `subagent.delta` / `subagent.finished` | `scope_id`, `agent`, `kind` (`started`\|`delta`\|`finished`), `tool_call_id?` (the parent's call), `failed?` (`true` on a failed finish), `delta?` (progress or result text), `data?`, `provider_protocol` |
//! | `capability.invocation` | `id`, `capability: mcp\|skill\|subagent`, `name`, `server?` (MCP), `operation: activate\|spawn`, `phase: started\|completed\|failed`, `tool_call_id?`, `duration_ms?`, `error?`, `scope_id?`, `provider_protocol` |
//! | `image` | `role`, `mime_type`, `data?` (base64) or `uri?`, `message_id?`, `provider_protocol` |
//!
//! A subagent's own tool calls are ordinary `tool_call.*` / `tool_result`
//! lines whose `delegation` names its scope: `{scope_id, parent_scope_id?,
//! parent_tool_call_id?}`.
//!
//! The result line comes last also when the run fails before it starts
//! ([`not_started_line`]): `ok` is false, `run_id` null, and
//! `failure.reason` says what stopped it ([`INVALID_ARGUMENTS`],
//! [`STORE_UNAVAILABLE`], [`DRIVER_UNAVAILABLE`], [`INVALID_CONFIG`]).

mod fields;
#[cfg(test)]
mod reference;

use agent_adaptor_core::{Error, Event, RunResult};
use fields::{ENVELOPE, FieldsInto};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value, json};

/// The JSON line of one event (without the newline); see
/// [`write_event`].
pub fn event_line(event: &Event) -> String {
    let mut buf = Vec::with_capacity(256);
    write_event(&mut buf, event);
    // Only `serde_json` wrote `buf`: it is UTF-8.
    String::from_utf8(buf).unwrap_or_default()
}

/// Append the JSON line of `event` to `buf`, without the newline: one
/// serializer pass, the event's own fields written straight from the event
/// (see the [module docs](self) for the keys; their order is not part of
/// the format).
pub fn write_event(buf: &mut Vec<u8>, event: &Event) {
    let start = buf.len();
    if write_line(buf, event, true).is_err() {
        // Not an event struct (no variant is one today): the envelope alone.
        buf.truncate(start);
        let _ = write_line(buf, event, false);
    }
}

fn write_line(buf: &mut Vec<u8>, event: &Event, with_fields: bool) -> serde_json::Result<()> {
    let meta = event.meta();
    let mut ser = serde_json::Serializer::new(buf);
    let mut map = ser.serialize_map(None)?;
    map.serialize_entry("type", &*event.kind_name())?;
    let mut seen = 0u8;
    if with_fields {
        let bytes = match event {
            Event::ProcessInfo(p) => Some(&p.bytes[..]),
            _ => None,
        };
        event.serialize(FieldsInto {
            map: &mut map,
            bytes,
            seen: &mut seen,
        })?;
    }
    let unseen = |key: &str| {
        ENVELOPE
            .iter()
            .position(|k| *k == key)
            .is_some_and(|i| seen & (1 << i) == 0)
    };
    if unseen("sequence") {
        map.serialize_entry("sequence", &meta.sequence)?;
    }
    if unseen("run_id") {
        map.serialize_entry("run_id", &*meta.run_id)?;
    }
    if unseen("time") {
        map.serialize_entry("time", &meta.time)?;
    }
    if let Some(key) = meta.thread_key.as_deref()
        && unseen("thread_key")
    {
        map.serialize_entry("thread_key", key)?;
    }
    if let Some(source) = &meta.source
        && unseen("source")
    {
        map.serialize_entry("source", source)?;
    }
    map.end()
}

fn result_fields(r: &RunResult, out: &mut Map<String, Value>) {
    out.insert("run_id".into(), json!(r.run_id));
    out.insert("text".into(), json!(r.text));
    out.insert("usage".into(), json!(r.usage));
    out.insert("provider".into(), json!(r.provider));
    out.insert("model".into(), json!(r.model));
    out.insert("exit_code".into(), json!(r.exit_code()));
    let raw = r.raw();
    out.insert(
        "raw".into(),
        json!({
            "stdout_bytes": raw.stdout.len(),
            "stderr_bytes": raw.stderr.len(),
            "terminal": raw.terminal.as_ref().map(|t| t.event.clone()),
        }),
    );
    out.insert(
        "structured_output".into(),
        match r.structured_output() {
            Some(so) => json!({
                "valid": so.valid,
                "value": so.value,
                "errors": so.validation_errors,
            }),
            None => Value::Null,
        },
    );
    if let Some(cp) = r.checkpoint().and_then(|c| c.state.as_ref()) {
        out.insert("session".into(), json!(cp.display_id));
    }
    out.insert("workspace".into(), json!(r.workspace()));
    out.insert("services".into(), json!(r.services()));
}

/// `failure.reason` of a run refused for its arguments (empty prompt,
/// unreadable schema, bad `--cwd` or `--store`).
pub const INVALID_ARGUMENTS: &str = "invalid_arguments";
/// `failure.reason` of a run whose thread store could not be opened.
pub const STORE_UNAVAILABLE: &str = "store_unavailable";
/// `failure.reason` of a run whose driver could not be chosen or built
/// (the CLI's binary missing, no credentials, an unknown driver).
pub const DRIVER_UNAVAILABLE: &str = "driver_unavailable";
/// `failure.reason` of a run whose agent config was refused.
pub const INVALID_CONFIG: &str = "invalid_config";

/// The result line of a run that failed before it started.
pub fn not_started_line(reason: &str, message: &str) -> String {
    json!({
        "type": "result",
        "ok": false,
        "run_id": null,
        "text": "",
        "usage": null,
        "failure": {"reason": reason, "message": message},
    })
    .to_string()
}

/// The final line: the run's outcome.
pub fn result_line(outcome: &Result<RunResult, Error>, run_id: &str) -> String {
    let mut out = Map::new();
    out.insert("type".into(), json!("result"));
    match outcome {
        Ok(r) => {
            out.insert("ok".into(), json!(true));
            result_fields(r, &mut out);
            out.insert("failure".into(), Value::Null);
        }
        Err(e) => {
            out.insert("ok".into(), json!(false));
            out.insert("run_id".into(), json!(run_id));
            let mut failure = Map::new();
            match e.as_run_error() {
                Some(re) => {
                    if let Some(partial) = &re.result {
                        result_fields(partial, &mut out);
                    }
                    failure.insert("reason".into(), json!(re.reason.as_str()));
                    failure.insert("message".into(), json!(re.message));
                    if let Some(tail) = re.details.as_ref().and_then(|d| d.get("stderr_tail")) {
                        failure.insert("stderr_tail".into(), tail.clone());
                    }
                }
                None => {
                    failure.insert("reason".into(), json!("refused"));
                    failure.insert("message".into(), json!(e.to_string()));
                }
            }
            out.entry("text").or_insert(json!(""));
            out.entry("usage").or_insert(Value::Null);
            out.insert("failure".into(), Value::Object(failure));
        }
    }
    Value::Object(out).to_string()
}
