//! Running the tool calls of one model turn: all of them at once, the
//! results in the model's order.
//!
//! A host tool call goes to the run's toolbox, which does the checks, the
//! approval, the deadline and the cancellation. An MCP tool call is put to
//! the host as a permission decision (source [`MCP_APPROVAL_SOURCE`])
//! unless its server's policy auto-approves the tool, then sent to the
//! server. A denial is told to the model as the tool's result, with the
//! advice to answer without it; the run goes on.

use agent_adaptor_driver::{
    CancellationToken, DecisionKind, DecisionRequest, DecisionResult, EventSink, HostToolCall,
    HostToolStatus, Request, StreamPayload,
};
use futures::future::join_all;
use serde_json::{Value, json};

use super::mcp::Connection;
use super::tools::{Catalog, Target};
use crate::message::ToolCall;

/// The decision source of an MCP tool's approval request.
pub const MCP_APPROVAL_SOURCE: &str = "mcp_tool";

/// What one call gives back to the model.
#[derive(Debug, Clone)]
pub(super) struct CallResult {
    /// The text the model reads.
    pub(super) content: String,
    /// The decoded output, when the tool gave one.
    pub(super) output: Option<Value>,
    /// The call failed (or was denied).
    pub(super) is_error: bool,
}

impl CallResult {
    fn error(content: impl Into<String>) -> Self {
        CallResult {
            content: content.into(),
            output: None,
            is_error: true,
        }
    }

    /// What the `tool_call.result` payload carries: the decoded output, or
    /// the text.
    fn payload(&self) -> Value {
        self.output
            .clone()
            .unwrap_or_else(|| Value::String(self.content.clone()))
    }
}

/// The model-visible result of a denied call.
fn denied(why: &str) -> CallResult {
    CallResult::error(format!(
        "The user did not allow this tool call ({why}). Do not retry it; answer without it."
    ))
}

/// The borrowed parts of a run a call needs.
pub(super) struct Tools<'a> {
    pub(super) catalog: &'a Catalog,
    pub(super) connections: &'a [Connection],
    pub(super) req: &'a Request,
    pub(super) sink: &'a dyn EventSink,
    pub(super) cancel: &'a CancellationToken,
    /// Emit `tool_call.result` payloads.
    pub(super) payloads: bool,
}

impl Tools<'_> {
    /// Runs every call concurrently; the results come back in the calls'
    /// order. Each result's payload is emitted as soon as it is known.
    pub(super) async fn run_all(&self, calls: &[(String, ToolCall)]) -> Vec<CallResult> {
        join_all(calls.iter().map(|(id, call)| self.run_one(id, call))).await
    }

    async fn run_one(&self, id: &str, call: &ToolCall) -> CallResult {
        let result = match self.catalog.target(&call.name) {
            None => CallResult::error(format!("no tool named {:?} in this run", call.name)),
            Some(Target::Host) => self.host(id, call).await,
            Some(Target::Mcp {
                server,
                server_name,
                tool,
                auto_approve,
            }) => {
                self.mcp(id, call, *server, server_name, tool, *auto_approve)
                    .await
            }
        };
        if self.payloads {
            // Fails only once the run is cancelled; the loop sees that.
            let _ = self
                .sink
                .emit_stream(StreamPayload::tool_call_result(
                    id.to_owned(),
                    Some(result.payload()),
                ))
                .await;
        }
        result
    }

    async fn host(&self, id: &str, call: &ToolCall) -> CallResult {
        let outcome = self
            .req
            .host_tools
            .call(
                HostToolCall::new(id, call.name.clone(), call.arguments.clone()),
                self.sink,
                self.cancel,
            )
            .await;
        if outcome.status == HostToolStatus::Denied {
            return denied(&outcome.content);
        }
        CallResult {
            is_error: outcome.is_error(),
            content: outcome.content,
            output: outcome.output,
        }
    }

    async fn mcp(
        &self,
        id: &str,
        call: &ToolCall,
        server: usize,
        server_name: &str,
        tool: &str,
        auto_approve: bool,
    ) -> CallResult {
        if !auto_approve && let Err(why) = self.approve(id, call, server_name, tool).await {
            return denied(&why);
        }
        let Some(connection) = self.connections.get(server) else {
            return CallResult::error(format!("the MCP server {server_name} is not connected"));
        };
        match connection.call(tool, &call.arguments, self.cancel).await {
            Some(outcome) => CallResult {
                content: outcome.text,
                output: None,
                is_error: outcome.is_error,
            },
            None => CallResult::error("cancelled"),
        }
    }

    /// Ask the host about an MCP tool call; the reason when it is not
    /// approved.
    async fn approve(
        &self,
        id: &str,
        call: &ToolCall,
        server_name: &str,
        tool: &str,
    ) -> Result<(), String> {
        let Some(decisions) = self.sink.decisions() else {
            return Err("denied: the run cannot ask the host".to_owned());
        };
        let mut request = DecisionRequest::new(DecisionKind::Permission, MCP_APPROVAL_SOURCE);
        request.tool_call_id = id.to_owned();
        request.prompt = format!("Allow {} {}?", call.name, call.arguments);
        request.payload = Some(json!({
            "tool_name": call.name,
            "input": call.arguments,
            "scope": "mcp",
            "server": server_name,
            "tool": tool,
        }));
        match decisions.request_decision(request).await {
            Ok(answer) if answer.result == DecisionResult::Approved => Ok(()),
            Ok(answer) if answer.text.is_empty() => Err(format!(
                "denied: the host answered {}",
                answer.result.as_str()
            )),
            Ok(answer) => Err(format!("denied: {}", answer.text)),
            Err(e) => Err(format!("denied: {e}")),
        }
    }
}
