//! One `session/prompt` turn: the prompt's content as our prompt text, the
//! run on the session's thread, its events as `session/update`s, its
//! approvals as permission requests, and its outcome as the answer.
//!
//! | outcome | answer |
//! |---|---|
//! | `Ok` | `{stopReason: "end_turn"}` (`_meta.agentAdaptor`: run id, usage, the run's metadata such as `decision.0`) |
//! | cancelled (`session/cancel`, or the run's reason `cancelled`) | `{stopReason: "cancelled"}` |
//! | refused before it started (an option the driver cannot carry …) | error -32602, `data {reason, message}` |
//! | failed | error -32603 `"the run failed (<reason>): <message>"`, `data {reason, message, runId}` |
//!
//! ACP's other stop reasons (`max_tokens`, `max_turn_requests`,
//! `refusal`) name outcomes our runs report as typed failures; the spec
//! reserves stop reasons for turns that ended normally, so a failure is a
//! JSON-RPC error carrying our typed reason.

use std::sync::Arc;

use agent_adaptor_core::{Error, Event, FailureReason, RunResult, Runner};
use agent_client_protocol::v1::schema::{
    ContentBlock, EmbeddedResourceResource, Error as RpcError, PromptRequest, PromptResponse,
    SessionNotification, StopReason,
};
use serde_json::{Map, Value, json};
use tokio::task::JoinSet;

use super::permission;
use super::rpc::invalid_params;
use super::server::Shared;
use super::session::{Session, TurnGuard};
use super::update::UpdateMapper;
use crate::public_error::public_error;

/// Our prompt text from ACP content: text blocks verbatim, embedded text
/// resources and resource links as text naming their URI, joined by blank
/// lines. Images, audio and binary resources are refused (not declared in
/// `promptCapabilities`).
pub(crate) fn prompt_text(blocks: &[ContentBlock]) -> Result<String, RpcError> {
    let mut pieces = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        match block {
            ContentBlock::Text(t) => pieces.push(t.text.clone()),
            ContentBlock::ResourceLink(l) => pieces.push(format!("[{}]({})", l.name, l.uri)),
            ContentBlock::Resource(r) => match &r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => {
                    pieces.push(format!("Context from {}:\n{}", t.uri, t.text));
                }
                _ => {
                    return Err(invalid_params(format!(
                        "prompt[{i}]: only text resources are supported (promptCapabilities)"
                    )));
                }
            },
            _ => {
                return Err(invalid_params(format!(
                    "prompt[{i}]: only text, resource links and embedded text resources are \
                     supported (promptCapabilities: no image, no audio)"
                )));
            }
        }
    }
    let prompt = pieces.join("\n\n");
    if prompt.trim().is_empty() {
        return Err(invalid_params("the prompt holds no text"));
    }
    Ok(prompt)
}

/// A turn ready to run: its session, its prompt text, and the turn it
/// holds (begun in the order the client's frames came, so a
/// `session/cancel` read after the prompt always finds it).
pub(crate) struct Prepared {
    session: Arc<Session>,
    text: String,
    turn: TurnGuard,
}

/// Check a `session/prompt` and begin its turn.
pub(crate) fn prepare(shared: &Shared, params: Value) -> Result<Prepared, RpcError> {
    let req: PromptRequest = super::rpc::params(params)?;
    let Some(session) = shared.sessions.get(&req.session_id.0) else {
        return Err(RpcError::session_not_found(req.session_id));
    };
    let text = prompt_text(&req.prompt)?;
    let turn = session.begin()?;
    Ok(Prepared {
        session,
        text,
        turn,
    })
}

/// Run a prepared turn and give the answer to its `session/prompt`.
pub(crate) async fn prompt(shared: &Arc<Shared>, prepared: Prepared) -> Result<Value, RpcError> {
    let Prepared {
        session,
        text,
        turn,
    } = prepared;
    let session_id = session.id.clone();
    let options = shared.run_options(&session);
    let mut stream = if shared.threads {
        let mut thread = shared.agent.thread(session.id.clone());
        if session.resume_only {
            thread = thread.resume_only();
        }
        thread.stream_with(&text, options)
    } else {
        shared.agent.stream_with(&text, options)
    };
    turn.attach(stream.handle());
    let mut mapper = UpdateMapper::default();
    let mut approvals = JoinSet::new();
    use futures::StreamExt as _;
    while let Some(event) = stream.next().await {
        if let Event::ApprovalRequest(req) = event {
            let (peer, session, ended) = (shared.peer.clone(), session.clone(), turn.over());
            approvals.spawn(async move { permission::ask(&peer, &session, *req, ended).await });
            continue;
        }
        for update in mapper.map(&event) {
            let note = SessionNotification::new(session_id.clone(), update);
            // The client is gone: the connection's end cancels the run.
            let _ = shared.peer.notify("session/update", note).await;
        }
    }
    let outcome = stream.result().await;
    let run_id = stream.run_id().to_owned();
    drop(turn);
    while approvals.join_next().await.is_some() {}
    answer(outcome, &run_id, session.cancel_requested())
}

fn answer(
    outcome: Result<RunResult, Error>,
    run_id: &str,
    cancel_requested: bool,
) -> Result<Value, RpcError> {
    match outcome {
        Ok(result) => {
            let mut meta = Map::new();
            meta.insert("runId".into(), Value::String(result.run_id.clone()));
            if let Some(usage) = result
                .usage
                .as_ref()
                .and_then(|u| serde_json::to_value(u).ok())
            {
                meta.insert("usage".into(), usage);
            }
            if !result.metadata.is_empty() {
                let m = result
                    .metadata
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect();
                meta.insert("metadata".into(), Value::Object(m));
            }
            let mut wrapped = Map::new();
            wrapped.insert("agentAdaptor".into(), Value::Object(meta));
            let response = PromptResponse::new(StopReason::EndTurn).meta(wrapped);
            serde_json::to_value(response).map_err(RpcError::into_internal_error)
        }
        Err(e) => {
            let run = e.as_run_error();
            if cancel_requested || run.is_some_and(|r| r.reason == FailureReason::Cancelled) {
                let response = PromptResponse::new(StopReason::Cancelled);
                return serde_json::to_value(response).map_err(RpcError::into_internal_error);
            }
            let (reason, message) = public_error(&e, run_id);
            match run {
                Some(r) => {
                    let message = if reason == "thread_store_unavailable" {
                        message
                    } else {
                        r.message.clone()
                    };
                    let mut data = json!({"reason": reason, "message": message});
                    data["runId"] = json!(run_id);
                    Err(
                        RpcError::new(-32603, format!("the run failed ({reason}): {message}"))
                            .data(data),
                    )
                }
                None => {
                    let (code, reason) = match refused_request(&e) {
                        Some(r) => (-32602, r.to_owned()),
                        None => (-32603, reason),
                    };
                    Err(RpcError::new(code, message.clone())
                        .data(json!({"reason": reason, "message": message})))
                }
            }
        }
    }
}

/// Pre-start refusals that say the request asked for something this
/// agent cannot do (invalid params, not a server fault).
/// Its reason code, `None` for any other error.
pub(crate) fn refused_request(e: &Error) -> Option<&'static str> {
    Some(match e {
        Error::InvalidOption { .. } => "invalid_option",
        Error::InvalidPolicy { .. } => "invalid_policy",
        Error::PolicyCapabilityUnsupported { .. } => "policy_capability_unsupported",
        Error::HumanDecisionModeUnsupported { .. } => "human_decision_mode_unsupported",
        Error::CapabilityUnsupported { .. } => "capability_unsupported",
        Error::InvalidMcpServer(_) => "invalid_mcp_server",
        _ => return None,
    })
}
