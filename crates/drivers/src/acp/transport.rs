//! The client side of one ACP run, as a [`Duplex`](crate::pump::Duplex)
//! for the shared pump: the handshake (`initialize` → `session/new` |
//! `session/load` | `session/resume` → `session/prompt`, each request sent
//! when the previous one is answered), the agent's requests (permissions to
//! the core's decision sink, files and terminals served in the workspace,
//! anything else answered `-32601` at once: an agent never waits on us), and
//! `session/cancel` on cancellation.

use std::collections::HashMap;

use agent_adaptor_driver::{
    CancellationToken, DecisionError, DecisionKind, DecisionRequest, DecisionResult, DriverError,
    EventSink, async_trait,
};
use agent_adaptor_process::StdinController;
use agent_client_protocol::v1::schema::{
    McpServer, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome,
};
use serde_json::{Value, json};

use super::client_fs::{self, RpcError, Workspace};
use super::parse::{AcpParser, RESUME_REJECTED, UNSUPPORTED_PROTOCOL};
use super::terminal::Terminals;
use super::wire::{
    self, INVALID_PARAMS, METHOD_NOT_FOUND, Open, PROTOCOL_VERSION, error_frame, error_message,
    result_frame,
};
use crate::pump::{self, ControlFrame, Controller, LineProtocol, Out, write_frame};

/// What a pending client request was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Initialize,
    Open(Open),
    Prompt,
}

/// What the run asks of the agent.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The session's working directory (the workspace root).
    pub cwd: String,
    /// The session to continue, if any.
    pub resume: Option<String>,
    /// The prompt.
    pub prompt: String,
    /// The run's MCP servers.
    pub servers: Vec<McpServer>,
}

/// The parser plus the client state machine and what it serves.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) parser: AcpParser,
    pub(crate) terminals: Terminals,
    driver: &'static str,
    plan: Plan,
    workspace: Workspace,
    cancel: CancellationToken,
    next_id: i64,
    pending: HashMap<i64, Pending>,
    prompt_sent: bool,
}

impl Session {
    /// A session and the frame to send first (`initialize`).
    pub(crate) fn new(
        driver: &'static str,
        parser: AcpParser,
        plan: Plan,
        workspace: Workspace,
        terminals: Terminals,
        cancel: CancellationToken,
    ) -> (Self, Vec<String>) {
        let mut session = Session {
            parser,
            terminals,
            driver,
            plan,
            workspace,
            cancel,
            next_id: 0,
            pending: HashMap::new(),
            prompt_sent: false,
        };
        let frame = session.request(Pending::Initialize, "initialize", &wire::initialize());
        (session, vec![frame])
    }

    fn request(&mut self, what: Pending, method: &str, params: &impl serde::Serialize) -> String {
        self.next_id += 1;
        self.pending.insert(self.next_id, what);
        wire::request(self.next_id, method, params)
    }

    async fn deliver(
        outs: Vec<Out>,
        sink: &dyn EventSink,
        stdin: &mut Option<StdinController>,
    ) -> Result<(), DriverError> {
        for out in outs {
            pump::deliver(out, sink, &mut None, stdin).await?;
        }
        Ok(())
    }

    /// The answer to `initialize`: check the version, then open the session.
    fn initialized(&mut self, result: &Value) -> Result<String, Vec<Out>> {
        let version = result.get("protocolVersion").and_then(Value::as_u64);
        if version != Some(PROTOCOL_VERSION) {
            let shown = result
                .get("protocolVersion")
                .cloned()
                .unwrap_or(Value::Null);
            return Err(self.parser.fail(
                UNSUPPORTED_PROTOCOL,
                format!("the agent speaks ACP protocol version {shown}; this client speaks {PROTOCOL_VERSION}"),
            ));
        }
        let caps = &result["agentCapabilities"];
        let how = match &self.plan.resume {
            None => Open::New,
            Some(_) if caps["loadSession"] == true => Open::Load,
            Some(_) if caps["sessionCapabilities"]["resume"].is_object() => Open::Resume,
            Some(_) => {
                return Err(self.parser.fail(
                    RESUME_REJECTED,
                    "the agent can neither load nor resume a session (no loadSession, no sessionCapabilities.resume)".into(),
                ));
            }
        };
        if how == Open::Load {
            self.parser.loading();
        }
        let params = wire::open_params(
            how,
            self.plan.resume.as_deref(),
            &self.plan.cwd,
            &self.plan.servers,
        );
        Ok(self.request(Pending::Open(how), how.method(), &params))
    }

    async fn response(
        &mut self,
        id: &Value,
        result: Result<Value, Value>,
        stdin: &mut Option<StdinController>,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        let Some(what) = id.as_i64().and_then(|i| self.pending.remove(&i)) else {
            return Ok(());
        };
        let outs = match (what, result) {
            (Pending::Initialize, Ok(result)) => match self.initialized(&result) {
                Ok(frame) => {
                    write_frame(stdin, &frame).await;
                    Vec::new()
                }
                Err(outs) => outs,
            },
            (Pending::Open(how), Ok(result)) => {
                let id = match how {
                    Open::New => result.get("sessionId").and_then(Value::as_str),
                    _ => self.plan.resume.as_deref(),
                };
                match id.filter(|id| !id.is_empty()).map(str::to_owned) {
                    Some(id) => {
                        let outs = self.parser.session_opened(&id, how.method());
                        let prompt = wire::prompt(&id, &self.plan.prompt);
                        let frame = self.request(Pending::Prompt, "session/prompt", &prompt);
                        write_frame(stdin, &frame).await;
                        self.prompt_sent = true;
                        outs
                    }
                    None => self.parser.fail(
                        "request_failed",
                        "the session/new result names no sessionId".into(),
                    ),
                }
            }
            (Pending::Prompt, result) => self.parser.prompt_answered(result),
            (Pending::Open(how), Err(e)) if how != Open::New => self.parser.fail(
                RESUME_REJECTED,
                format!("{} was rejected: {}", how.method(), error_message(&e)),
            ),
            (what, Err(e)) => {
                let method = match what {
                    Pending::Initialize => "initialize",
                    _ => "session/new",
                };
                self.parser.fail(
                    "request_failed",
                    format!("{method} was rejected: {}", error_message(&e)),
                )
            }
        };
        Self::deliver(outs, sink, stdin).await
    }

    async fn agent_request(
        &mut self,
        id: Value,
        method: String,
        params: Value,
        stdin: &mut Option<StdinController>,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        let answer = match method.as_str() {
            "session/request_permission" => {
                return self.permission(id, params, stdin, sink).await;
            }
            "fs/read_text_file" => client_fs::read_text_file(&self.workspace, params),
            "fs/write_text_file" => client_fs::write_text_file(&self.workspace, params),
            "terminal/create" => self.terminals.create(params),
            "terminal/output" => self.terminals.output(params),
            "terminal/kill" => self.terminals.kill(params),
            "terminal/release" => self.terminals.release(params).await,
            "terminal/wait_for_exit" => match self.terminals.wait(params) {
                Ok(exit) => tokio::select! {
                    status = exit => Ok(status),
                    () = self.cancel.cancelled() => return Err(DriverError::Cancelled),
                },
                Err(e) => Err(e),
            },
            _ => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("{method} is not served by agent-adaptor"),
            )),
        };
        let frame = match answer {
            Ok(result) => result_frame(&id, &result),
            Err(e) => error_frame(&id, e.code, &e.message),
        };
        write_frame(stdin, &frame).await;
        Ok(())
    }

    /// `session/request_permission`: one host decision, answered with an
    /// option the request offered (`cancelled` when none fits, after the
    /// terminal, and on cancellation).
    async fn permission(
        &mut self,
        id: Value,
        params: Value,
        stdin: &mut Option<StdinController>,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        let req: RequestPermissionRequest = match serde_json::from_value(params) {
            Ok(r) => r,
            Err(e) => {
                let frame = error_frame(&id, INVALID_PARAMS, &e.to_string());
                write_frame(stdin, &frame).await;
                return Ok(());
            }
        };
        let cancelled = RequestPermissionOutcome::Cancelled;
        if LineProtocol::terminated(&self.parser) {
            return self.answer_permission(&id, cancelled, stdin).await;
        }
        let decision = permission_request(self.driver, self.parser.session_id(), &req);
        let result = match sink.decisions() {
            Some(decisions) => match decisions.request_decision(decision).await {
                Ok(answer) => answer.result,
                Err(e) => {
                    self.answer_permission(&id, cancelled, stdin).await?;
                    self.interrupt(stdin).await;
                    return Err(match e {
                        DecisionError::Cancelled => DriverError::Cancelled,
                        other => DriverError::Decision(other),
                    });
                }
            },
            // Nobody can answer: reject, as a client without a handler would.
            None => DecisionResult::Rejected,
        };
        let outcome = match choose_option(&req, result) {
            Some(option) => {
                RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option))
            }
            None => cancelled,
        };
        self.answer_permission(&id, outcome, stdin).await
    }

    async fn answer_permission(
        &mut self,
        id: &Value,
        outcome: RequestPermissionOutcome,
        stdin: &mut Option<StdinController>,
    ) -> Result<(), DriverError> {
        let frame = result_frame(id, &RequestPermissionResponse::new(outcome));
        write_frame(stdin, &frame).await;
        Ok(())
    }
}

/// The host decision of a permission request.
fn permission_request(
    driver: &str,
    session: Option<&str>,
    req: &RequestPermissionRequest,
) -> DecisionRequest {
    let mut d = DecisionRequest::new(
        DecisionKind::Permission,
        format!("{driver}.session/request_permission"),
    );
    d.tool_call_id = req.tool_call.tool_call_id.0.to_string();
    d.thread_id = session.unwrap_or_default().to_owned();
    let title = req
        .tool_call
        .fields
        .title
        .as_deref()
        .unwrap_or("this tool call");
    d.prompt = format!("Allow {title}?");
    d.payload = Some(json!({
        "tool_call": req.tool_call,
        "options": req.options,
    }));
    d
}

/// The option answering `result`, chosen only among those offered:
/// approved → `allow_once`, else `allow_always`; anything else →
/// `reject_once`, else `reject_always`. `None` when none of those is
/// offered (the caller answers `cancelled`).
pub fn choose_option(req: &RequestPermissionRequest, result: DecisionResult) -> Option<String> {
    let kinds: &[PermissionOptionKind] = match result {
        DecisionResult::Approved => &[
            PermissionOptionKind::AllowOnce,
            PermissionOptionKind::AllowAlways,
        ],
        _ => &[
            PermissionOptionKind::RejectOnce,
            PermissionOptionKind::RejectAlways,
        ],
    };
    kinds.iter().find_map(|kind| {
        req.options
            .iter()
            .find(|o| o.kind == *kind)
            .map(|o| o.option_id.0.to_string())
    })
}

impl LineProtocol for Session {
    fn line_into(&mut self, raw: &[u8], out: &mut Vec<Out>) {
        self.parser.line_into(raw, out);
    }

    fn terminated(&self) -> bool {
        LineProtocol::terminated(&self.parser)
    }
}

#[async_trait]
impl Controller for Session {
    async fn control(
        &mut self,
        frame: ControlFrame,
        stdin: &mut Option<StdinController>,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        match frame {
            ControlFrame::Response { id, result } => self.response(&id, result, stdin, sink).await,
            ControlFrame::Request { id, method, params } => {
                self.agent_request(id, method, params, stdin, sink).await
            }
            ControlFrame::Cancel { .. } => Ok(()),
        }
    }

    async fn interrupt(&mut self, stdin: &mut Option<StdinController>) {
        if let (true, Some(session)) = (self.prompt_sent, self.parser.session_id()) {
            let frame = wire::notification("session/cancel", &wire::cancel(session));
            write_frame(stdin, &frame).await;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_offered_options_answer() {
        let req: RequestPermissionRequest = serde_json::from_value(json!({
            "sessionId": "s",
            "toolCall": {"toolCallId": "t1", "title": "rm -rf"},
            "options": [
                {"optionId": "yes-always", "name": "Always", "kind": "allow_always"},
                {"optionId": "no", "name": "No", "kind": "reject_once"},
            ],
        }))
        .unwrap();
        assert_eq!(
            choose_option(&req, DecisionResult::Approved).as_deref(),
            Some("yes-always")
        );
        assert_eq!(
            choose_option(&req, DecisionResult::Rejected).as_deref(),
            Some("no")
        );
        let only_allow: RequestPermissionRequest = serde_json::from_value(json!({
            "sessionId": "s",
            "toolCall": {"toolCallId": "t1"},
            "options": [{"optionId": "ok", "name": "Ok", "kind": "allow_once"}],
        }))
        .unwrap();
        assert_eq!(choose_option(&only_allow, DecisionResult::Rejected), None);
        let d = permission_request("acp:gemini", Some("s"), &req);
        assert_eq!(d.tool_call_id, "t1");
        assert_eq!(d.prompt, "Allow rm -rf?");
        assert_eq!(d.kind, DecisionKind::Permission);
    }
}
