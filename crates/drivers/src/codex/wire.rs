//! Serde types of `codex exec --json` (protocols.md §1.3), lenient: unknown
//! event and item types decode to `Unknown`, unknown fields are ignored (the
//! exact line stays in the raw capture).

use serde::Deserialize;
use serde_json::Value;

use crate::tagged::{self, Fields, Tagged, tagged_enum};

tagged_enum! {
    /// One stdout line of `codex exec --json` (deserialized tag first, see
    /// `crate::tagged`).
    #[derive(Debug, Clone)]
    pub enum ExecEvent {
        /// The thread (session) id: the resume identifier.
        "thread.started" => ThreadStarted(ThreadStarted),
        /// A turn began.
        "turn.started" => TurnStarted,
        /// An item began (command execution, MCP call, todo list …).
        "item.started" => ItemStarted(ItemEvent),
        /// An item changed.
        "item.updated" => ItemUpdated(ItemEvent),
        /// An item completed (the authoritative item).
        "item.completed" => ItemCompleted(ItemEvent),
        /// The turn completed: the successful terminal event.
        "turn.completed" => TurnCompleted(TurnCompleted),
        /// The turn failed: the failure terminal event.
        "turn.failed" => TurnFailed(TurnFailed),
        /// A fatal stream error (comes before `turn.failed`).
        "error" => Error(StreamError),
        /// Anything else.
        _ => Unknown,
    }
}

/// `thread.started`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ThreadStarted {
    /// The thread id.
    pub thread_id: String,
}

/// `item.started`, `item.updated`, `item.completed`.
#[derive(Debug, Clone, Deserialize)]
pub struct ItemEvent {
    /// The item.
    pub item: Item,
}

/// `turn.completed`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TurnCompleted {
    /// Cumulative usage of the thread.
    pub usage: Option<ExecUsage>,
}

/// `turn.failed`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TurnFailed {
    /// The error.
    pub error: Option<ErrorBody>,
}

/// `error`: a fatal stream error.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct StreamError {
    /// The message.
    pub message: String,
}

/// An error body.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ErrorBody {
    /// The message (sometimes itself a JSON document).
    pub message: String,
}

/// `turn.completed.usage` (cumulative for the thread).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ExecUsage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Cached input tokens.
    pub cached_input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Reasoning tokens.
    pub reasoning_output_tokens: u64,
}

/// A thread item: the common `id` plus the type-specific fields, decoded
/// in one pass, tag first (see `crate::tagged::variant_with_id`).
#[derive(Debug, Clone)]
pub struct Item {
    /// A per-process counter (`item_0` …); not a stable identifier.
    pub id: String,
    /// What the item is.
    pub details: ItemDetails,
}

impl<'de> Tagged<'de> for Item {
    const EXPECTING: &'static str = "struct Item";

    fn variant<F: Fields<'de>>(tag: &str, fields: F) -> Result<Self, F::Error> {
        let (id, details) = tagged::variant_with_id(tag, fields)?;
        Ok(Item { id, details })
    }
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        tagged::deserialize(d)
    }
}

tagged_enum! {
    /// The item types (`ThreadItemDetails`).
    #[derive(Debug, Clone)]
    pub enum ItemDetails {
        /// Assistant text (a JSON string with `--output-schema`).
        "agent_message" => AgentMessage(AgentMessage),
        /// Reasoning summary.
        "reasoning" => Reasoning(Reasoning),
        /// A shell command.
        "command_execution" => CommandExecution(CommandExecution),
        /// File edits.
        "file_change" => FileChange(FileChange),
        /// An MCP tool call.
        "mcp_tool_call" => McpToolCall(McpToolCall),
        /// A web search.
        "web_search" => WebSearch(WebSearch),
        /// A non-fatal error (a warning).
        "error" => Error(ItemError),
        /// The agent's todo list (started, updated, completed).
        "todo_list" => TodoList(TodoList),
        /// Anything else (todo_list, plan, collab_tool_call …).
        _ => Other,
    }
}

/// `agent_message`: assistant text.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AgentMessage {
    /// The text (a JSON string with `--output-schema`).
    pub text: String,
}

/// `reasoning`: a reasoning summary.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Reasoning {
    /// The text.
    pub text: String,
}

/// `command_execution`: a shell command.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CommandExecution {
    /// The command line.
    pub command: String,
    /// Combined output.
    pub aggregated_output: String,
    /// Exit code, once finished.
    pub exit_code: Option<i64>,
    /// `in_progress`, `completed`, `failed`, `declined`.
    pub status: String,
}

/// `file_change`: file edits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct FileChange {
    /// The changes.
    pub changes: Value,
    /// `completed`, `failed`.
    pub status: String,
}

/// `todo_list`: the agent's whole todo list.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TodoList {
    /// The items, in order.
    pub items: Vec<TodoListItem>,
}

/// One item of a `todo_list`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TodoListItem {
    /// What is to be done.
    pub text: String,
    /// Whether it is done.
    pub completed: bool,
}

impl TodoList {
    /// The list as todo facts: done or pending (exec has no in-progress state).
    pub fn facts(&self) -> Vec<crate::observe::TodoFact> {
        self.items
            .iter()
            .map(|i| crate::observe::TodoFact {
                content: i.text.clone(),
                status: if i.completed { "completed" } else { "pending" }.to_owned(),
                ..Default::default()
            })
            .collect()
    }
}

/// `mcp_tool_call`: an MCP tool call.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct McpToolCall {
    /// The server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// The arguments.
    pub arguments: Value,
    /// The result.
    pub result: Option<Value>,
    /// The error.
    pub error: Option<Value>,
    /// The status.
    pub status: String,
}

/// `web_search`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct WebSearch {
    /// The query.
    pub query: String,
}

/// `error` item: a non-fatal error (a warning).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ItemError {
    /// The message.
    pub message: String,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::tagged::assert_agree;

    /// `json` decoded as the derived `#[serde(flatten)]` form of `Item`
    /// would: the `id` (a string, `""` when absent) and the details by
    /// serde's own tagged derive, as `Debug`.
    fn derived_item(json: &str) -> Result<(String, String), String> {
        let v: Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
        let id = match v.get("id") {
            None => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => return Err(format!("id {other}")),
        };
        let details = ItemDetails::derived_debug(json).map_err(|e| e.to_string())?;
        Ok((id, details))
    }

    #[test]
    fn items_agree_with_the_derived_form() {
        let cases = [
            r#"{"id":"item_1","type":"agent_message","text":"hé"}"#,
            r#"{"type":"reasoning","id":"item_2","text":"r"}"#,
            r#"{"text":"t","type":"agent_message"}"#,
            r#"{"id":"i","type":"command_execution","command":"ls","aggregated_output":"a","exit_code":0,"status":"completed"}"#,
            r#"{"id":"i","type":"command_execution","exit_code":null,"status":"in_progress"}"#,
            r#"{"status":"completed","id":"i","command":"ls","type":"command_execution","exit_code":1}"#,
            r#"{"id":"i","type":"file_change","changes":[{"path":"a","kind":"add"}],"status":"completed"}"#,
            r#"{"id":"i","type":"mcp_tool_call","server":"s","tool":"t","arguments":{"a":1},"result":{"content":[]},"error":null,"status":"completed"}"#,
            r#"{"id":"i","type":"web_search","query":"q"}"#,
            r#"{"id":"i","type":"error","message":"m"}"#,
            r#"{"id":"i","type":"todo_list","items":[{"text":"x","completed":false}]}"#,
            r#"{"type":"todo_list","id":"i"}"#,
            r#"{"id":"a\"b","type":"agent_message","text":"t"}"#,
            r#"{"i\u0064":"x","type":"web_search","query":"q"}"#,
            r#"{"type":"web_search","i\u0064":"x","qu\u0065ry":"q"}"#,
            r#"{"type":"web_search","query":"q","id":"x"}"#,
            r#"{"id":7,"type":"agent_message","text":"t"}"#,
            r#"{"type":"agent_message","id":7,"text":"t"}"#,
            r#"{"id":"i","type":"agent_message","text":7}"#,
            r#"{"id":"i"}"#,
            r#"{"id":"i","type":"agent_message","text":"t""#,
            r#"{"id":"i","type":"todo_list","items":[}"#,
        ];
        let ours =
            |c: &str| serde_json::from_str::<Item>(c).map(|i| (i.id, format!("{:?}", i.details)));
        assert_agree(&cases, ours, derived_item);
    }

    #[test]
    fn a_duplicate_item_id_is_an_error() {
        let e =
            serde_json::from_str::<Item>(r#"{"id":"a","type":"web_search","id":"b"}"#).unwrap_err();
        assert!(e.to_string().contains("duplicate field `id`"), "{e}");
    }

    #[test]
    fn events_agree_with_the_derived_form() {
        let cases = [
            r#"{"type":"thread.started","thread_id":"t"}"#,
            r#"{"thread_id":"t","type":"thread.started"}"#,
            r#"{"type":"thread.started"}"#,
            r#"{"type":"turn.started","x":1}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":3,"cached_input_tokens":1}}"#,
            r#"{"type":"turn.completed"}"#,
            r#"{"type":"turn.failed","error":{"message":"m"}}"#,
            r#"{"type":"error","message":"boom"}"#,
            r#"{"type":"session.configured","x":[1]}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":"3"}}"#,
            r#"{"type":"session.configured","x":[1}"#,
            r#"{"thread_id":"t"}"#,
        ];
        let ours = |c: &str| serde_json::from_str::<ExecEvent>(c).map(|e| format!("{e:?}"));
        assert_agree(&cases, ours, ExecEvent::derived_debug);
    }

    #[test]
    fn events_decode_and_unknown_ones_are_caught() {
        let e: ExecEvent = serde_json::from_str(
            r#"{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"done"}}"#,
        )
        .unwrap();
        let ExecEvent::ItemCompleted(ItemEvent { item }) = e else {
            panic!()
        };
        assert_eq!(item.id, "item_3");
        assert!(matches!(item.details, ItemDetails::AgentMessage(m) if m.text == "done"));
        let e: ExecEvent =
            serde_json::from_str(r#"{"type":"turn.completed","usage":{"input_tokens":3}}"#)
                .unwrap();
        assert!(matches!(
            e,
            ExecEvent::TurnCompleted(TurnCompleted { usage: Some(u) }) if u.input_tokens == 3
        ));
        let e: ExecEvent = serde_json::from_str(r#"{"type":"turn.started","x":1}"#).unwrap();
        assert!(matches!(e, ExecEvent::TurnStarted));
        let e: ExecEvent = serde_json::from_str(r#"{"type":"session.configured"}"#).unwrap();
        assert!(matches!(e, ExecEvent::Unknown));
        for bad in [
            r#"{"type":"item.completed"}"#,
            r#"{"type":"item.completed","item":{"id":"x"}}"#,
            r#"{"thread_id":"t"}"#,
            r#"{"type":"thread.started","thread_id":"t""#,
        ] {
            assert!(serde_json::from_str::<ExecEvent>(bad).is_err(), "{bad}");
        }
    }
}
