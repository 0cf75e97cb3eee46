//! What `session/load` replays: a thread's conversation as the store holds
//! it, read by a [`HistoryReader`] the host supplies (the store keeps each
//! driver's resume state in that driver's own format; core never reads
//! it), sent as `session/update`s.

use std::sync::Arc;

use agent_adaptor_core::driver::SessionState;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionUpdate, ToolCall, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};
use serde_json::Value;

use super::update::{locations, tool_kind};

/// One entry of a stored conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryEntry {
    /// What the user said.
    User(String),
    /// What the agent answered.
    Agent(String),
    /// The agent's reasoning.
    Thought(String),
    /// A tool call.
    ToolCall {
        /// Its id.
        id: String,
        /// The tool's name.
        name: String,
        /// Its input.
        input: Option<Value>,
    },
    /// A tool call's result.
    ToolResult {
        /// The call's id.
        id: String,
        /// The output.
        output: Value,
        /// True when the tool failed.
        is_error: bool,
    },
}

/// Reads the conversation out of a thread's resume state; `None` when the
/// state holds none (a CLI driver's state is only the CLI's session id).
pub type HistoryReader = Arc<dyn Fn(&SessionState) -> Option<Vec<HistoryEntry>> + Send + Sync>;

/// The updates that replay `entries`.
pub(crate) fn replay(entries: &[HistoryEntry]) -> Vec<SessionUpdate> {
    entries
        .iter()
        .filter_map(|e| match e {
            HistoryEntry::User(t) if !t.is_empty() => Some(SessionUpdate::UserMessageChunk(
                ContentChunk::new(ContentBlock::from(t.as_str())),
            )),
            HistoryEntry::Agent(t) if !t.is_empty() => Some(SessionUpdate::AgentMessageChunk(
                ContentChunk::new(ContentBlock::from(t.as_str())),
            )),
            HistoryEntry::Thought(t) if !t.is_empty() => Some(SessionUpdate::AgentThoughtChunk(
                ContentChunk::new(ContentBlock::from(t.as_str())),
            )),
            HistoryEntry::ToolCall { id, name, input } => {
                let mut call = ToolCall::new(id.clone(), name.clone())
                    .kind(tool_kind(name))
                    .status(ToolCallStatus::InProgress)
                    .locations(locations(input.as_ref()));
                if let Some(input) = input {
                    call = call.raw_input(input.clone());
                }
                Some(SessionUpdate::ToolCall(call))
            }
            HistoryEntry::ToolResult {
                id,
                output,
                is_error,
            } => Some(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                id.clone(),
                ToolCallUpdateFields::new()
                    .status(if *is_error {
                        ToolCallStatus::Failed
                    } else {
                        ToolCallStatus::Completed
                    })
                    .raw_output(output.clone()),
            ))),
            _ => None,
        })
        .collect()
}
