//! Approvals as `session/request_permission`.
//!
//! A permission or plan review is offered as `allow_once` ("Allow"),
//! `allow_always` ("Always allow") and `reject_once` ("Reject"). When the
//! request can be granted for the thread (a session served as a thread,
//! a request naming its tool: [`ApprovalRequest::always_allow_tool`]),
//! "Always allow `<tool>` in this thread" answers with
//! [`ApprovalRequest::approve_always`]: the grant is the thread's, kept in
//! its store and honoured by core for every later run of the thread.
//! Otherwise "Always allow" is remembered for the tool for the rest of the
//! session: its next requests are approved without asking. A question with choices offers each choice as
//! an `allow_once` option (`choice:<key>`) and a `reject_once` "Decline"; a
//! free-form question cannot be answered by picking an option and is
//! declined at once. A `cancelled` outcome, an option that was not offered,
//! an error answer, the connection closing, or the turn ending first all
//! deny the request.

use agent_adaptor_core::{ApprovalKind, ApprovalRequest};
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, ToolCallUpdate, ToolCallUpdateFields,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::rpc::Peer;
use super::session::Session;
use super::update::{locations, tool_kind};

const ALLOW: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT: &str = "reject_once";
const CHOICE: &str = "choice:";

/// The tool a request is about (its `tool_name`), if the driver said.
fn tool_name(req: &ApprovalRequest) -> Option<&str> {
    let details = req.details.as_ref()?;
    ["tool_name", "toolName", "name", "tool"]
        .iter()
        .find_map(|k| details.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
}

/// The key "always allow" is remembered under.
fn always_key(req: &ApprovalRequest) -> Option<String> {
    tool_name(req).map(|t| format!("{}\u{0}{t}", req.kind.as_str()))
}

/// The `session/request_permission` params for `req`, or `None` for a
/// request no option can answer (a free-form question).
pub(crate) fn request_for(
    session_id: &str,
    req: &ApprovalRequest,
) -> Option<RequestPermissionRequest> {
    let options = match req.kind {
        ApprovalKind::Question if req.choices.is_empty() => return None,
        ApprovalKind::Question => {
            let mut options: Vec<_> = req
                .choices
                .iter()
                .map(|c| {
                    let name = if c.label.is_empty() { &c.key } else { &c.label };
                    PermissionOption::new(
                        format!("{CHOICE}{}", c.key),
                        name.clone(),
                        PermissionOptionKind::AllowOnce,
                    )
                })
                .collect();
            options.push(PermissionOption::new(
                REJECT,
                "Decline",
                PermissionOptionKind::RejectOnce,
            ));
            options
        }
        _ => vec![
            PermissionOption::new(ALLOW, "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(
                ALLOW_ALWAYS,
                match req.always_allow_tool() {
                    Some(tool) => format!("Always allow {tool} in this thread"),
                    None => "Always allow".to_owned(),
                },
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
        ],
    };
    let id = if req.tool_call_id.is_empty() {
        req.id.clone()
    } else {
        req.tool_call_id.clone()
    };
    let input = req.details.as_ref().and_then(|d| d.get("input")).cloned();
    let mut fields = ToolCallUpdateFields::new().title(if req.title.is_empty() {
        "The agent asks for a decision".to_owned()
    } else {
        req.title.clone()
    });
    if let Some(name) = tool_name(req) {
        fields = fields.kind(tool_kind(name));
    }
    let found = locations(input.as_ref());
    if !found.is_empty() {
        fields = fields.locations(found);
    }
    if let Some(input) = input {
        fields = fields.raw_input(input);
    }
    Some(RequestPermissionRequest::new(
        session_id.to_owned(),
        ToolCallUpdate::new(id, fields),
        options,
    ))
}

/// What the client's answer means for `req`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Allow once.
    Allow,
    /// Allow, and every later request for the same tool in this thread
    /// (when it can be granted) or else this session.
    AllowAlways,
    /// A question's choice.
    Choose(String),
    /// Refuse, with the reason the run records.
    Deny(String),
}

/// Read the client's answer to the permission request for `req`.
pub(crate) fn verdict(req: &ApprovalRequest, answer: Result<Value, String>) -> Verdict {
    let value = match answer {
        Ok(v) => v,
        Err(e) => return Verdict::Deny(format!("the ACP client answered with an error: {e}")),
    };
    let response: RequestPermissionResponse = match serde_json::from_value(value) {
        Ok(r) => r,
        Err(e) => return Verdict::Deny(format!("the ACP client's answer is malformed: {e}")),
    };
    let selected = match response.outcome {
        RequestPermissionOutcome::Selected(s) => s.option_id.0.to_string(),
        RequestPermissionOutcome::Cancelled => {
            return Verdict::Deny("cancelled by the ACP client".into());
        }
        _ => return Verdict::Deny("the ACP client's outcome is not known".into()),
    };
    match (req.kind, selected.as_str()) {
        (_, REJECT) => Verdict::Deny("rejected by the ACP client".into()),
        (ApprovalKind::Question, s) => match s.strip_prefix(CHOICE) {
            Some(key) if req.choices.iter().any(|c| c.key == key) => Verdict::Choose(key.into()),
            _ => Verdict::Deny(format!("the ACP client chose an option not offered: {s:?}")),
        },
        (_, ALLOW) => Verdict::Allow,
        (_, ALLOW_ALWAYS) => Verdict::AllowAlways,
        (_, s) => Verdict::Deny(format!("the ACP client chose an option not offered: {s:?}")),
    }
}

/// Ask the client about `req` and resolve it with the answer; the turn
/// ending or being cancelled first (`turn_over`) denies it.
pub(crate) async fn ask(
    peer: &Peer,
    session: &Session,
    req: ApprovalRequest,
    turn_over: CancellationToken,
) {
    let key = always_key(&req);
    if req.kind != ApprovalKind::Question
        && key.as_deref().is_some_and(|k| session.always_allowed(k))
    {
        let _ = req.approve();
        return;
    }
    let Some(params) = request_for(&session.id, &req) else {
        let _ = req.deny(
            "an ACP client answers by picking an option; a free-form question cannot be asked",
        );
        return;
    };
    let answer = tokio::select! {
        a = peer.request("session/request_permission", params) => a,
        () = turn_over.cancelled() => {
            let _ = req.deny("the prompt turn was cancelled or ended before the ACP client answered");
            return;
        }
    };
    let answer = match answer {
        Ok(a) => a.map_err(|e| e.message),
        Err(_) => Err("the connection closed".to_owned()),
    };
    // Refusals here only mean the request expired meanwhile (the run was
    // cancelled or timed out): nothing is left to resolve.
    let _ = match verdict(&req, answer) {
        Verdict::Allow => req.approve(),
        // The thread keeps the grant (core approves its later requests).
        Verdict::AllowAlways if req.always_allow_tool().is_some() => req.approve_always(),
        Verdict::AllowAlways => {
            if let Some(k) = key {
                session.allow_always(k);
            }
            req.approve()
        }
        Verdict::Choose(key) => req.answer(key),
        Verdict::Deny(reason) => req.deny(reason),
    };
}
