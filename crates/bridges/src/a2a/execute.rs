//! From a run to a task: the projection of a [`RunStream`] onto a
//! [`TaskSlot`], the input-required round trip for approvals, and the
//! reading of client messages (prompts and answers).
//!
//! | run | task |
//! |---|---|
//! | `RunStarted` | `TASK_STATE_WORKING` |
//! | assistant `TextDelta` content | `artifactUpdate` chunk of artifact `response` (`append`) |
//! | `ApprovalRequest` | `TASK_STATE_INPUT_REQUIRED`, agent message: a text part (the question and how to answer) and a data part (the request) |
//! | approval answered / timed out | `TASK_STATE_WORKING` |
//! | `result()` = `Ok` | final `response` artifact (replaces the chunks: text part + data part for structured output, `lastChunk`), then `TASK_STATE_COMPLETED` |
//! | `result()` = cancelled, or after `CancelTask` | `TASK_STATE_CANCELED` |
//! | `result()` = any other error | `TASK_STATE_FAILED`, agent message with the reason |
//!
//! | todos, subagents, capabilities, images | artifacts and `WORKING` status messages (see [`observe`](super::observe)) |
//!
//! Reasoning, the main agent's tool calls, process output and notices have
//! no A2A counterpart and are not projected.

use std::sync::Arc;

use agent_adaptor_core::driver::Role as DriverRole;
use agent_adaptor_core::{
    ApprovalError, ApprovalKind, ApprovalRequest, Error, Event, Phase, RunResult, RunStream,
    notice_kind,
};
use futures::StreamExt;
use serde_json::{Map, Value, json};

use super::observe::Observer;
use super::rpc::{ErrorCode, RpcError};
use super::shared_input::Sharing;
use super::store::TaskSlot;
use super::types::{Artifact, Message, Part, PartContent, TaskState};
use crate::public_error::public_error;

/// The id of the artifact holding a task's answer.
pub const RESPONSE_ARTIFACT_ID: &str = "response";

/// Drive `stream` to its end, projecting it onto `slot`; with `sharing`,
/// each approval is also offered to the other servers sharing the store.
pub(crate) async fn drive(slot: Arc<TaskSlot>, mut stream: RunStream, sharing: Option<Sharing>) {
    slot.attach_run(stream.handle());
    let mut streamed = false;
    let mut observer = Observer::default();
    while let Some(event) = stream.next().await {
        if observer.event(&slot, &event) {
            continue;
        }
        match event {
            Event::RunStarted(_) => slot.ensure_status(TaskState::Working),
            Event::TextDelta(d)
                if d.phase == Phase::Content
                    && d.role == DriverRole::Assistant
                    && !d.text.is_empty() =>
            {
                slot.artifact(response_artifact(vec![Part::text(d.text)]), streamed, false);
                streamed = true;
            }
            Event::ApprovalRequest(req) => {
                let message = approval_message(&slot, &req);
                let offered = sharing.as_ref().map(|s| (s.clone(), (*req).clone()));
                // Parked first: the offer ends once the task stops waiting.
                slot.await_input(*req, message);
                if let Some((sharing, req)) = offered {
                    tokio::spawn(super::shared_input::offer(sharing, slot.clone(), req));
                }
            }
            Event::Notice(n) if n.kind == notice_kind::APPROVAL_RESOLVED => {
                let id = n
                    .data
                    .as_ref()
                    .and_then(|d| d.get("request_id"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let note = (n.text != "approved" && n.text != "answered" && n.text != "rejected")
                    .then(|| {
                        agent_message(
                            &slot,
                            vec![Part::text(format!(
                                "The approval request ended without an answer ({}); the run continues.",
                                n.text
                            ))],
                        )
                    });
                slot.approval_resolved(id, note);
            }
            _ => {}
        }
    }
    let outcome = stream.result().await;
    finish(&slot, outcome, streamed);
}

fn finish(slot: &TaskSlot, outcome: Result<RunResult, Error>, streamed: bool) {
    match outcome {
        Ok(result) => {
            let mut parts = Vec::new();
            if !result.text.is_empty() || streamed {
                parts.push(Part::text(result.text.clone()));
            }
            if let Some(value) = result
                .structured_output()
                .filter(|s| s.valid)
                .and_then(|s| s.value.clone())
            {
                parts.push(Part::data(value));
            }
            slot.set_metadata(run_metadata(&result));
            if !parts.is_empty() {
                slot.artifact(response_artifact(parts), false, true);
            }
            slot.set_status(TaskState::Completed, None);
        }
        Err(e) => {
            let run_error = e.as_run_error();
            let cancelled = slot.cancel_requested()
                || run_error
                    .is_some_and(|r| r.reason == agent_adaptor_core::FailureReason::Cancelled);
            let (code, public) = public_error(&e, &slot.id);
            let (reason, message) = match run_error {
                Some(_) if code == "thread_store_unavailable" => (code, public),
                Some(r) => (r.reason.as_str().to_owned(), r.message.clone()),
                None => ("not_started".to_owned(), public),
            };
            let mut meta = Map::new();
            meta.insert("reason".into(), Value::String(reason.clone()));
            if let Some(r) = run_error.and_then(|r| r.result.as_deref()) {
                meta.insert("runId".into(), Value::String(r.run_id.clone()));
            }
            slot.set_metadata(wrap_meta(meta));
            if cancelled {
                let note = agent_message(slot, vec![Part::text("The task was canceled.")]);
                slot.set_status(TaskState::Canceled, Some(note));
            } else {
                let note = agent_message(
                    slot,
                    vec![
                        Part::text(format!("The run failed ({reason}): {message}")),
                        Part::data(json!({"reason": reason, "message": message})),
                    ],
                );
                slot.set_status(TaskState::Failed, Some(note));
            }
        }
    }
}

fn response_artifact(parts: Vec<Part>) -> Artifact {
    Artifact {
        artifact_id: RESPONSE_ARTIFACT_ID.into(),
        name: RESPONSE_ARTIFACT_ID.into(),
        parts,
        ..Artifact::default()
    }
}

fn wrap_meta(inner: Map<String, Value>) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("agentAdaptor".into(), Value::Object(inner));
    meta
}

/// `metadata.agentAdaptor` of a completed task: the run id, provider,
/// model, usage and the run's string metadata.
fn run_metadata(result: &RunResult) -> Map<String, Value> {
    let mut inner = Map::new();
    inner.insert("runId".into(), Value::String(result.run_id.clone()));
    if !result.provider.is_empty() {
        inner.insert("provider".into(), Value::String(result.provider.clone()));
    }
    if !result.model.is_empty() {
        inner.insert("model".into(), Value::String(result.model.clone()));
    }
    if let Some(usage) = result
        .usage
        .as_ref()
        .and_then(|u| serde_json::to_value(u).ok())
    {
        inner.insert("usage".into(), usage);
    }
    if !result.metadata.is_empty() {
        let m = result
            .metadata
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        inner.insert("metadata".into(), Value::Object(m));
    }
    wrap_meta(inner)
}

/// An agent message addressed to the slot's task.
fn agent_message(slot: &TaskSlot, parts: Vec<Part>) -> Message {
    Message::agent(parts).for_task(slot.id.clone(), slot.context_id.clone())
}

/// The input-required message for an approval: how to answer in words,
/// and the request itself as data.
fn approval_message(slot: &TaskSlot, req: &ApprovalRequest) -> Message {
    let how = match req.kind {
        ApprovalKind::Question if !req.choices.is_empty() => {
            let keys: Vec<_> = req.choices.iter().map(|c| c.key.as_str()).collect();
            format!(
                "Answer with one of: {} (or \"deny\" to decline).",
                keys.join(", ")
            )
        }
        ApprovalKind::Question => "Answer with your reply (or \"deny\" to decline).".to_owned(),
        _ => match req.always_allow_tool() {
            Some(tool) => format!(
                "Answer \"approve\", \"always\" (always allow {tool} in this thread) or \"deny\"."
            ),
            None => "Answer \"approve\" or \"deny\".".to_owned(),
        },
    };
    let title = if req.title.is_empty() {
        "The agent asks for a decision."
    } else {
        req.title.as_str()
    };
    let mut data = json!({
        "type": "approval_request",
        "approvalId": req.id,
        "kind": req.kind.as_str(),
        "title": req.title,
        "source": req.source,
    });
    if !req.tool_call_id.is_empty() {
        data["toolCallId"] = json!(req.tool_call_id);
    }
    if !req.choices.is_empty() {
        data["choices"] = json!(req.choices);
    }
    if let Some(d) = &req.details {
        data["details"] = d.clone();
    }
    if let Some(tool) = req.always_allow_tool() {
        data["alwaysAllowTool"] = json!(tool);
    }
    if let Some(deadline) = req.deadline {
        data["deadline"] = json!(deadline.to_rfc3339());
    }
    agent_message(
        slot,
        vec![
            Part::text(format!(
                "Approval required ({}): {title} {how}",
                req.kind.as_str()
            )),
            Part::data(data),
        ],
    )
}

/// A client's answer to an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Allow (permission, plan review).
    Approve,
    /// Allow a permission and always allow its tool in the thread.
    ApproveAlways,
    /// Refuse, with a reason.
    Deny(String),
    /// Answer a question.
    Answer(String),
}

const YES: &[&str] = &["approve", "approved", "allow", "yes", "y", "ok"];
const NO: &[&str] = &["deny", "denied", "reject", "rejected", "no", "n"];
const ALWAYS: &str = "always";

/// Read the decision in `message`: a data part
/// `{"decision": "approve"|"always"|"deny"|"answer", "reason"?, "answer"?}`
/// (or `{"answer": …}`), else its text ("approve"/"always"/"deny", or a
/// question's answer). "always" is checked by [`apply`].
pub(crate) fn decision(kind: ApprovalKind, message: &Message) -> Result<Decision, RpcError> {
    for part in &message.parts {
        let Some(Value::Object(d)) = part.as_data() else {
            continue;
        };
        let text = |k: &str| d.get(k).and_then(Value::as_str).map(str::to_owned);
        let verdict = text("decision").map(|s| s.trim().to_ascii_lowercase());
        match verdict.as_deref() {
            Some(v) if YES.contains(&v) && kind != ApprovalKind::Question => {
                return Ok(Decision::Approve);
            }
            Some(ALWAYS) if kind != ApprovalKind::Question => {
                return Ok(Decision::ApproveAlways);
            }
            Some(v) if NO.contains(&v) => {
                return Ok(Decision::Deny(text("reason").unwrap_or_default()));
            }
            Some("answer") | None if kind == ApprovalKind::Question => {
                if let Some(a) = text("answer") {
                    return Ok(Decision::Answer(a));
                }
            }
            _ => {}
        }
    }
    let text = message.text();
    let word = text.trim().to_ascii_lowercase();
    if kind == ApprovalKind::Question {
        if NO.contains(&word.as_str()) {
            return Ok(Decision::Deny(String::new()));
        }
        if !text.trim().is_empty() {
            return Ok(Decision::Answer(text.trim().to_owned()));
        }
    } else if YES.contains(&word.as_str()) {
        return Ok(Decision::Approve);
    } else if word == ALWAYS {
        return Ok(Decision::ApproveAlways);
    } else if NO.contains(&word.as_str()) {
        return Ok(Decision::Deny(String::new()));
    }
    Err(RpcError::invalid_params(format!(
        "the task waits for a {} decision: reply with the text \"approve\", \"always\" or \
         \"deny\" (questions: the answer), or a data part \
         {{\"decision\": \"approve\"|\"always\"|\"deny\", \
         \"reason\"?: …, \"answer\"?: …}}",
        kind.as_str()
    )))
}

/// Resolve `req` with `decision`.
pub(crate) fn apply(req: &ApprovalRequest, decision: &Decision) -> Result<(), RpcError> {
    let result = match decision {
        Decision::Approve => req.approve(),
        Decision::ApproveAlways => req.approve_always(),
        Decision::Deny(reason) => req.deny(if reason.is_empty() {
            "denied by the A2A client"
        } else {
            reason
        }),
        Decision::Answer(a) => req.answer(a.clone()),
    };
    result.map_err(|e| match e {
        ApprovalError::KindMismatch { .. } => RpcError::invalid_params(e.to_string()),
        // Nothing was answered: the task still waits.
        ApprovalError::NotGrantable => not_grantable(),
        _ => RpcError::new(
            ErrorCode::UnsupportedOperation,
            format!("the approval can no longer be answered: {e}"),
        ),
    })
}

/// "always" for an approval that cannot grant its tool.
pub(crate) fn not_grantable() -> RpcError {
    RpcError::invalid_params(
        "this approval cannot always allow its tool (not a thread run, or no tool named): \
         answer \"approve\" or \"deny\"",
    )
}

/// The prompt in a user message: its text parts and (as compact JSON) its
/// data parts, in order, separated by blank lines. Raw and URL parts are
/// not supported (`ContentTypeNotSupported`); an empty prompt is invalid.
pub(crate) fn prompt(message: &Message) -> Result<String, RpcError> {
    let mut pieces = Vec::new();
    for (i, part) in message.parts.iter().enumerate() {
        match &part.content {
            PartContent::Text(t) => pieces.push(t.clone()),
            PartContent::Data(v) => pieces.push(v.to_string()),
            PartContent::Raw(_) | PartContent::Url(_) => {
                return Err(RpcError::new(
                    ErrorCode::ContentTypeNotSupported,
                    format!(
                        "message.parts[{i}]: only text and data parts are supported \
                         (raw and url parts are not)"
                    ),
                ));
            }
        }
    }
    let prompt = pieces.join("\n\n");
    if prompt.trim().is_empty() {
        return Err(RpcError::invalid_params(
            "message.parts holds no text: the agent needs a non-empty prompt",
        ));
    }
    Ok(prompt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(parts: Vec<Part>) -> Message {
        Message {
            parts,
            ..Message::user_text("")
        }
    }

    #[test]
    fn decisions_read_words_and_data() {
        let p = ApprovalKind::Permission;
        let q = ApprovalKind::Question;
        assert_eq!(
            decision(p, &Message::user_text(" Approve ")).unwrap(),
            Decision::Approve
        );
        assert_eq!(
            decision(
                p,
                &msg(vec![Part::data(
                    json!({"decision": "deny", "reason": "no"})
                )])
            )
            .unwrap(),
            Decision::Deny("no".into())
        );
        assert_eq!(
            decision(q, &Message::user_text("blue")).unwrap(),
            Decision::Answer("blue".into())
        );
        assert_eq!(
            decision(q, &msg(vec![Part::data(json!({"answer": "red"}))])).unwrap(),
            Decision::Answer("red".into())
        );
        assert_eq!(
            decision(p, &Message::user_text("Always")).unwrap(),
            Decision::ApproveAlways
        );
        assert_eq!(
            decision(p, &msg(vec![Part::data(json!({"decision": "always"}))])).unwrap(),
            Decision::ApproveAlways
        );
        let e = decision(p, &Message::user_text("maybe")).unwrap_err();
        assert_eq!(e.kind(), ErrorCode::InvalidParams);
    }

    #[test]
    fn prompts_join_text_and_data_and_refuse_files() {
        let m = msg(vec![Part::text("a"), Part::data(json!({"k": 1}))]);
        assert_eq!(prompt(&m).unwrap(), "a\n\n{\"k\":1}");
        let raw = Part {
            content: PartContent::Raw("AAAA".into()),
            ..Part::text("")
        };
        assert_eq!(
            prompt(&msg(vec![raw])).unwrap_err().kind(),
            ErrorCode::ContentTypeNotSupported
        );
        assert_eq!(
            prompt(&msg(vec![Part::text("  ")])).unwrap_err().kind(),
            ErrorCode::InvalidParams
        );
    }
}
