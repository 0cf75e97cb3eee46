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
//!   The answers are worked out concurrently with the reading of stdout (a
//!   handler may take its time; the CLI keeps writing) and a
//!   `control_cancel_request` drops the answer it withdraws.
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
use agent_adaptor_driver_kit::host_mcp::inproc::{self, InFlight};
use serde_json::{Value, json};

use super::Family;
use super::control;
use super::equip::mcp_tool_name;

/// The SDK MCP server of one run (or one turn of a resident process).
pub(super) struct HostServer<'s> {
    family: &'static Family,
    tools: HostTools,
    sink: &'s dyn EventSink,
    cancel: CancellationToken,
    in_flight: InFlight<'s>,
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
            sink,
            cancel: cancel.clone(),
            in_flight: InFlight::new(),
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

    /// Take an `mcp_message` request: its answer is worked out in flight;
    /// one for another server is refused at once (the frame to write).
    pub(super) fn message(&mut self, request_id: &str, request: &Value) -> Option<String> {
        let server = request.get("server_name").and_then(Value::as_str);
        if server != Some(HOST_TOOL_SERVER) {
            return Some(control::error_frame(
                request_id,
                &format!("SDK MCP server not found: {}", server.unwrap_or_default()),
            ));
        }
        let message = request.get("message").cloned().unwrap_or(Value::Null);
        let (tools, sink, cancel) = (self.tools.clone(), self.sink, self.cancel.clone());
        self.in_flight.push(request_id, async move {
            inproc::respond(&tools, &message, sink, &cancel).await
        });
        None
    }

    /// The CLI withdrew request `id`: drop its answer (none is written).
    pub(super) fn withdraw(&mut self, id: &str) {
        self.in_flight.cancel(id);
    }

    /// Drive the answers in flight: `Ready` once some finished.
    pub(super) fn poll_work(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.in_flight.poll_ready(cx)
    }

    /// The frames of the answers finished so far.
    pub(super) fn finished(&mut self) -> Vec<String> {
        self.in_flight
            .take()
            .into_iter()
            .map(|(id, reply)| {
                // A notification gets no JSON-RPC reply, but its control
                // request an ack without an id (an id would collide with a
                // request's).
                let reply = reply.unwrap_or_else(|| json!({"jsonrpc": "2.0", "result": {}}));
                control::success_frame(&id, json!({ "mcp_response": reply }))
            })
            .collect()
    }
}
