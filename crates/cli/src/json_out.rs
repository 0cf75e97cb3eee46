//! `run --json`: one JSON object per event, one a line, then one result
//! line.
//!
//! An event line is `{"type": KIND, "sequence": N, "run_id": ID, "time":
//! …, ["thread_key": …,] <the event's own fields>}` where `KIND` is the
//! event's kind name (`run.started`, `text.content`, `tool_call.start`,
//! `notice.approval.resolved`, `approval.requested`, `run.finished` …).
//! Raw process output (`bytes`) is given as UTF-8 text (lossy). The last
//! line is `{"type": "result", "ok": bool, "run_id", "text", "usage",
//! "failure": null | {"reason", "message", ["stderr_tail"]}, "raw": {"stdout_bytes",
//! "stderr_bytes", "terminal"}, "provider", "model", "exit_code",
//! "structured_output"}`.
//!
//! The result line comes last also when the run fails before it starts
//! ([`not_started_line`]): `ok` is false, `run_id` null, and
//! `failure.reason` says what stopped it ([`INVALID_ARGUMENTS`],
//! [`STORE_UNAVAILABLE`], [`DRIVER_UNAVAILABLE`], [`INVALID_CONFIG`]).

use agent_adaptor_core::{Error, Event, RunResult};
use serde_json::{Map, Value, json};

/// The JSON line of one event.
pub fn event_line(event: &Event) -> String {
    let mut out = Map::new();
    out.insert("type".into(), Value::String(event.kind_name().into_owned()));
    let meta = event.meta();
    out.insert("sequence".into(), json!(meta.sequence));
    out.insert("run_id".into(), json!(&*meta.run_id));
    out.insert("time".into(), json!(meta.time));
    if let Some(key) = &meta.thread_key {
        out.insert("thread_key".into(), json!(&**key));
    }
    if let Some(source) = &meta.source {
        out.insert("source".into(), json!(source));
    }
    if let Ok(Value::Object(fields)) = serde_json::to_value(event) {
        for (k, v) in fields {
            if k == "type" || k == "meta" {
                continue;
            }
            out.insert(k, v);
        }
    }
    if let Event::ProcessInfo(p) = event
        && !p.bytes.is_empty()
    {
        out.insert(
            "bytes".into(),
            Value::String(String::from_utf8_lossy(&p.bytes).into_owned()),
        );
    }
    Value::Object(out).to_string()
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
