//! Tools the host defines and every driver delivers to its agent.
//!
//! A host gives an agent functions of its own ("look this order up", "list
//! the files of this workspace"). Core turns the host's typed definitions
//! into one [`HostToolbox`] per run and puts it on the
//! [`Request`](crate::Request) ([`Request::host_tools`](crate::Request::host_tools)).
//! A driver only *delivers* the tools, by the best channel its agent has
//! ([`HostToolChannel`], declared in the
//! [`Descriptor`](crate::Descriptor)), and hands every call to
//! [`HostToolbox::call`]. The toolbox does everything else, the same for every
//! driver: it checks the input against the tool's schema, asks the host for
//! approval when the run's policy says so (through the sink's
//! [decisions](crate::EventSink::decisions)), runs the handler with its
//! deadline, catches a panic, checks the output, and reports a host failure
//! as a lifecycle notice.
//!
//! A driver whose agent reports its own tool calls (a CLI's `tool_use`
//! lines) maps a call of the [`HOST_TOOL_SERVER`] MCP server to
//! [`ToolScope::Host`](crate::ToolScope::Host) with the tool's own name; a
//! driver that runs the tool loop itself (the LLM agent) emits the tool-call
//! lifecycle with that scope.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::sink::EventSink;

/// The MCP server name under which host tools appear to a CLI agent (Claude
/// Code shows `mcp__agent-adaptor__<tool>`). A run's own MCP servers may not
/// use it.
pub const HOST_TOOL_SERVER: &str = "agent-adaptor";

/// What the model sees of one host tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostToolSpec {
    /// The tool's name (letters, digits, `_`, `-`; 1..=64 bytes; unique in a
    /// run).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The JSON Schema of the input (an object schema).
    pub input_schema: Value,
    /// The JSON Schema of the output, when the tool declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// The tool runs without asking the host, whatever the run's approval
    /// policy (the host vouched for it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trusted: bool,
}

/// One call of a host tool, as the agent made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostToolCall {
    /// The agent's id of the call (its `tool_use` id, the JSON-RPC id …);
    /// the toolbox makes one up when empty.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The input, as the agent sent it (not yet checked).
    pub input: Value,
    /// The agent already put this call to the host's approval (Claude
    /// Code's `can_use_tool`): the toolbox does not ask again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approved: bool,
}

impl HostToolCall {
    /// A call of `tool` with `input`.
    pub fn new(call_id: impl Into<String>, tool: impl Into<String>, input: Value) -> Self {
        HostToolCall {
            call_id: call_id.into(),
            tool: tool.into(),
            input,
            approved: false,
        }
    }

    /// The agent already asked the host about this call.
    #[must_use]
    pub fn pre_approved(mut self) -> Self {
        self.approved = true;
        self
    }
}

/// How a host tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HostToolStatus {
    /// The handler returned an output that fits its schema.
    Ok,
    /// The handler refused the call; the reason is for the model.
    Rejected,
    /// The host (or the run's policy) denied the call.
    Denied,
    /// No tool of that name in this run.
    UnknownTool,
    /// The input does not fit the tool's schema; the handler did not run.
    InvalidInput,
    /// The handler's output does not fit its schema (a host failure).
    InvalidOutput,
    /// The handler failed (a host failure).
    Failed,
    /// The handler panicked (a host failure; the run goes on).
    Panicked,
    /// The handler ran past its deadline and was cancelled.
    TimedOut,
    /// The run was cancelled while the handler ran.
    Cancelled,
}

impl HostToolStatus {
    /// The wire name (`"ok"`, `"rejected"` …).
    pub fn as_str(self) -> &'static str {
        match self {
            HostToolStatus::Ok => "ok",
            HostToolStatus::Rejected => "rejected",
            HostToolStatus::Denied => "denied",
            HostToolStatus::UnknownTool => "unknown_tool",
            HostToolStatus::InvalidInput => "invalid_input",
            HostToolStatus::InvalidOutput => "invalid_output",
            HostToolStatus::Failed => "failed",
            HostToolStatus::Panicked => "panicked",
            HostToolStatus::TimedOut => "timed_out",
            HostToolStatus::Cancelled => "cancelled",
        }
    }

    /// True when the host, not the model, is at fault (the toolbox reports
    /// it as a lifecycle notice besides the model-visible error).
    pub fn is_host_failure(self) -> bool {
        matches!(
            self,
            HostToolStatus::InvalidOutput
                | HostToolStatus::Failed
                | HostToolStatus::Panicked
                | HostToolStatus::TimedOut
        )
    }
}

/// What a host tool call gives back to the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostToolResult {
    /// How the call ended.
    pub status: HostToolStatus,
    /// The text the model reads: the output's JSON, or the error.
    pub content: String,
    /// The decoded output, when the call succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

impl HostToolResult {
    /// A successful call with `output` (the model reads its JSON).
    pub fn ok(output: Value) -> Self {
        let content = match &output {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        HostToolResult {
            status: HostToolStatus::Ok,
            content,
            output: Some(output),
        }
    }

    /// A call that ended with `status` (not [`Ok`](HostToolStatus::Ok)) and
    /// the model-visible `message`.
    pub fn error(status: HostToolStatus, message: impl Into<String>) -> Self {
        HostToolResult {
            status,
            content: message.into(),
            output: None,
        }
    }

    /// True unless the call succeeded.
    pub fn is_error(&self) -> bool {
        self.status != HostToolStatus::Ok
    }
}

/// The host tools of one run: what a driver delivers and calls. Core builds
/// it; a driver never implements it (tests may).
#[async_trait]
pub trait HostToolbox: Send + Sync + 'static {
    /// The tools, in the host's order.
    fn specs(&self) -> &[HostToolSpec];

    /// Run one call to its end: schema checks, approval, handler, deadline.
    /// Never fails and never panics: every outcome is a [`HostToolResult`].
    /// `sink` is the run's (approvals and host-failure notices go through
    /// it); `cancel` is the run's cancellation (an in-flight handler is
    /// cancelled with it).
    async fn call(
        &self,
        call: HostToolCall,
        sink: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> HostToolResult;
}

/// The host tools on a [`Request`](crate::Request): none, or one toolbox.
/// Compared and printed by the tools' specs; not serialized (a toolbox is
/// code).
#[derive(Clone, Default)]
pub struct HostTools(Option<Arc<dyn HostToolbox>>);

impl HostTools {
    /// The tools of `toolbox`.
    pub fn new(toolbox: Arc<dyn HostToolbox>) -> Self {
        HostTools(Some(toolbox))
    }

    /// True when the run has no host tool.
    pub fn is_empty(&self) -> bool {
        self.specs().is_empty()
    }

    /// The tools' specs (empty when none).
    pub fn specs(&self) -> &[HostToolSpec] {
        self.0.as_deref().map_or(&[], |t| t.specs())
    }

    /// The spec of `name`.
    pub fn spec(&self, name: &str) -> Option<&HostToolSpec> {
        self.specs().iter().find(|s| s.name == name)
    }

    /// The toolbox, when there are tools.
    pub fn toolbox(&self) -> Option<&Arc<dyn HostToolbox>> {
        self.0.as_ref().filter(|t| !t.specs().is_empty())
    }

    /// Run one call (an unknown-tool error when the run has no toolbox).
    pub async fn call(
        &self,
        call: HostToolCall,
        sink: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> HostToolResult {
        match &self.0 {
            Some(toolbox) => toolbox.call(call, sink, cancel).await,
            None => HostToolResult::error(
                HostToolStatus::UnknownTool,
                format!("no host tool named {:?}", call.tool),
            ),
        }
    }
}

impl fmt::Debug for HostTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.specs().iter().map(|s| &s.name))
            .finish()
    }
}

impl PartialEq for HostTools {
    fn eq(&self, other: &Self) -> bool {
        self.specs() == other.specs()
    }
}

/// How a driver delivers host tools to its agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HostToolChannel {
    /// The driver cannot deliver host tools: core refuses a run with any.
    #[default]
    None,
    /// An in-process MCP server behind the agent's control protocol (Claude
    /// Code's and CodeBuddy's SDK MCP servers, `mcp_message`): no port, no
    /// process.
    SdkMcp,
    /// The agent's own dynamic tools (Codex app-server `item/tool/call`).
    DynamicTools,
    /// A Streamable-HTTP MCP server on 127.0.0.1 for the run, with a per-run
    /// bearer token in the agent's MCP configuration.
    LoopbackMcp,
    /// The driver runs the tool loop itself (the LLM agent).
    Native,
}

impl HostToolChannel {
    /// The wire name (`"none"`, `"sdk_mcp"` …).
    pub fn as_str(self) -> &'static str {
        match self {
            HostToolChannel::None => "none",
            HostToolChannel::SdkMcp => "sdk_mcp",
            HostToolChannel::DynamicTools => "dynamic_tools",
            HostToolChannel::LoopbackMcp => "loopback_mcp",
            HostToolChannel::Native => "native",
        }
    }

    /// True for [`None`](Self::None).
    pub fn is_none(&self) -> bool {
        matches!(self, HostToolChannel::None)
    }
}
