//! Host tools on the stream-json family: the run's in-process SDK MCP
//! server (protocols.md §2.5, §4).
//!
//! - Declared in the `initialize` request as `sdkMcpServers:
//!   ["agent-adaptor"]`, the field both CLIs read (CodeBuddy's SDK sends
//!   only it; Claude Code 2.1.332 takes it as well as the Python SDK's
//!   `--mcp-config` entry `{"type": "sdk"}`, observed). So a run with host
//!   tools always reads stream-json frames on stdin.
//! - The CLI's MCP client then sends `control_request`s of subtype
//!   `mcp_message` (`server_name`, `message`); each is answered with
//!   `{"mcp_response": <JSON-RPC reply>}` by the kit's in-process server
//!   ([`inproc::respond`]), an ack `{"jsonrpc": "2.0", "result": {}}` for a
//!   notification (both CLIs wait for an answer to every control request).
//!   A tool call runs concurrently with the reading of stdout (a handler
//!   may take its time; the CLI keeps writing: [`HostCalls`]), and a
//!   `control_cancel_request` cancels the call it withdraws (no answer is
//!   written, as the SDKs do).
//! - Approval applies once, in the toolbox: the host tools are on the
//!   CLI's allow-list (`--allowedTools`, `equip.rs`), and a `can_use_tool`
//!   that still comes for one (CodeBuddy Code 2.117 asks for allowed MCP
//!   tools on the control transport) is allowed here without asking
//!   anyone; the toolbox then asks per the run's host-tool policy, after
//!   the input's schema check.

use std::task::{Context, Poll};

use agent_adaptor_driver::{
    CancellationToken, DecisionResponse, DecisionResult, EventSink, HOST_TOOL_SERVER, HostTools,
    Request,
};
use agent_adaptor_driver_kit::host_calls::HostCalls;
use agent_adaptor_driver_kit::host_mcp::inproc::{self, Dispatch};
use serde_json::{Value, json};

use super::Family;
use super::control;
use super::equip::mcp_tool_name;

/// A call in flight: the control request that carries it, and its
/// JSON-RPC id.
type Key = (String, Value);

/// The SDK MCP server of one run (or one turn of a resident process).
pub(super) struct HostServer<'s> {
    family: &'static Family,
    tools: HostTools,
    calls: HostCalls<'s, Key>,
    /// Each call in flight's own cancellation, by control request id.
    cancels: Vec<(String, CancellationToken)>,
    /// The control requests the CLI withdrew (their answers are not
    /// written).
    withdrawn: Vec<String>,
    /// The CLI's names of the tools (`mcp__agent-adaptor__lookup`).
    names: Vec<String>,
}

impl<'s> HostServer<'s> {
    /// The server of `req`'s host tools, none when it has none. `sink` and
    /// `cancel` are the run's.
    pub(super) fn of(
        family: &'static Family,
        req: &Request,
        sink: &'s dyn EventSink,
        cancel: &CancellationToken,
    ) -> Option<Self> {
        (!req.host_tools.is_empty()).then(|| HostServer {
            family,
            tools: req.host_tools.clone(),
            calls: HostCalls::new(req.host_tools.clone(), sink, cancel.clone()),
            cancels: Vec::new(),
            withdrawn: Vec::new(),
            names: req
                .host_tools
                .specs()
                .iter()
                .map(|s| mcp_tool_name(family, HOST_TOOL_SERVER, &s.name))
                .collect(),
        })
    }

    /// The reply to a `can_use_tool` request when it asks about a host
    /// tool: allowed at once (the toolbox asks the host, see the module
    /// docs); `None` for any other tool.
    pub(super) fn permission(&self, request_id: &str, request: &Value) -> Option<String> {
        let tool = request.get("tool_name").and_then(Value::as_str)?;
        self.names.iter().any(|n| n == tool).then(|| {
            let allow = DecisionResponse {
                request_id: String::new(),
                result: DecisionResult::Approved,
                choice: String::new(),
                answer: Default::default(),
                text: String::new(),
            };
            control::permission_reply(self.family, request_id, request, &allow)
        })
    }

    /// Take an `mcp_message` request: the frame to write at once, or `None`
    /// for a tool call, which runs in flight (answered by
    /// [`finished`](Self::finished)). One for another server is refused.
    pub(super) fn message(&mut self, request_id: &str, request: &Value) -> Option<String> {
        let server = request.get("server_name").and_then(Value::as_str);
        if server != Some(HOST_TOOL_SERVER) {
            return Some(control::error_frame(
                request_id,
                &format!("SDK MCP server not found: {}", server.unwrap_or_default()),
            ));
        }
        let message = request.get("message").cloned().unwrap_or(Value::Null);
        match inproc::dispatch(&self.tools, &message) {
            Dispatch::Reply(reply) => Some(mcp_response(request_id, reply)),
            Dispatch::Call { id, call } => {
                let own = self.calls.start((request_id.to_owned(), id), call);
                self.cancels.push((request_id.to_owned(), own));
                None
            }
        }
    }

    /// The CLI withdrew request `id`: cancel its call (its handler's
    /// cancellation fires); no answer is written.
    pub(super) fn withdraw(&mut self, id: &str) {
        if let Some(i) = self.cancels.iter().position(|(r, _)| r == id) {
            let (r, own) = self.cancels.swap_remove(i);
            own.cancel();
            self.withdrawn.push(r);
        }
    }

    /// Drive the calls in flight: `Ready` once some finished.
    pub(super) fn poll_work(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.calls.poll_ready(cx)
    }

    /// The frames of the calls finished so far (none for a withdrawn one).
    pub(super) fn finished(&mut self) -> Vec<String> {
        let mut frames = Vec::new();
        for ((request_id, id), result) in self.calls.take() {
            self.cancels.retain(|(r, _)| *r != request_id);
            if let Some(i) = self.withdrawn.iter().position(|r| *r == request_id) {
                self.withdrawn.swap_remove(i);
                continue;
            }
            let reply = inproc::call_reply(id, &result);
            frames.push(mcp_response(&request_id, Some(reply)));
        }
        frames
    }
}

/// The control response carrying `reply`: a notification gets no JSON-RPC
/// reply, but its control request an ack without an id (an id would collide
/// with a request's).
fn mcp_response(request_id: &str, reply: Option<Value>) -> String {
    let reply = reply.unwrap_or_else(|| json!({"jsonrpc": "2.0", "result": {}}));
    control::success_frame(request_id, json!({ "mcp_response": reply }))
}
