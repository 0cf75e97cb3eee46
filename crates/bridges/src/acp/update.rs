//! From our events to ACP `session/update`s, one mapper per prompt turn.
//!
//! | event | update |
//! |---|---|
//! | assistant `TextDelta` content | `agent_message_chunk` (text) |
//! | `Thinking` content | `agent_thought_chunk` (text) |
//! | `ToolCall` start | `tool_call`: id, title (the tool's name), `kind` from the tool's name, `status` `in_progress` (`pending` while its arguments stream), `rawInput`, `locations` from a path argument |
//! | `ToolCall` end | `tool_call_update`: `rawInput` when the arguments streamed; `completed` with `rawOutput` when the result is attached |
//! | `ToolResult` | `tool_call_update`: `completed` (or `failed` when the run's transcript marked it an error), `rawOutput` and the result as text content |
//! | a transcript tool result marked an error | `tool_call_update` `failed` |
//!
//! Other events (process output, notices, drops, subagent progress) have
//! no ACP counterpart; approvals travel as `session/request_permission`
//! (see `permission`), the run's end as the prompt's answer.

use std::collections::{HashMap, HashSet};

use agent_adaptor_core::driver::{Role, TranscriptKind};
use agent_adaptor_core::{Event, Phase, notice_kind};
use agent_client_protocol::v1::schema::{
    Content, ContentBlock, ContentChunk, SessionUpdate, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use serde_json::Value;

/// The ACP kind of a tool, from its name (the names the drivers' CLIs use).
pub(crate) fn tool_kind(name: &str) -> ToolKind {
    let bare = name
        .rsplit("__")
        .next()
        .unwrap_or(name)
        .to_ascii_lowercase();
    match bare.as_str() {
        "read" | "read_file" | "read_many_files" | "view" | "notebookread" | "ls"
        | "list_directory" | "list_files" => ToolKind::Read,
        "edit" | "multiedit" | "write" | "write_file" | "replace" | "apply_patch"
        | "notebookedit" | "filechange" | "edit_file" => ToolKind::Edit,
        "grep" | "glob" | "search_file_content" | "search" | "codebase_search" => ToolKind::Search,
        "bash" | "shell" | "run_shell_command" | "commandexecution" | "exec_command"
        | "local_shell" | "run_terminal_cmd" => ToolKind::Execute,
        "webfetch" | "web_fetch" | "websearch" | "web_search" | "google_web_search" => {
            ToolKind::Fetch
        }
        "think" | "todowrite" | "write_todos" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// The files a tool's arguments name (`file_path`, `path`, `absolute_path`,
/// `notebook_path`).
pub(crate) fn locations(args: Option<&Value>) -> Vec<ToolCallLocation> {
    let Some(Value::Object(map)) = args else {
        return Vec::new();
    };
    ["file_path", "absolute_path", "notebook_path", "path"]
        .iter()
        .filter_map(|k| map.get(*k).and_then(Value::as_str))
        .take(1)
        .map(ToolCallLocation::new)
        .collect()
}

/// A tool result as text content.
fn result_content(result: &Value) -> Vec<ToolCallContent> {
    let text = match result {
        Value::String(s) => s.clone(),
        Value::Null => return Vec::new(),
        other => other.to_string(),
    };
    vec![ToolCallContent::Content(Content::new(ContentBlock::from(
        text,
    )))]
}

fn text_chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::from(text))
}

/// The state of one turn's mapping: each tool call's streamed arguments
/// and the calls the transcript marked failed.
#[derive(Debug, Default)]
pub(crate) struct UpdateMapper {
    args: HashMap<String, String>,
    failed: HashSet<String>,
    finished: HashSet<String>,
}

impl UpdateMapper {
    /// The updates `event` becomes (often none).
    pub(crate) fn map(&mut self, event: &Event) -> Vec<SessionUpdate> {
        match event {
            Event::TextDelta(d)
                if d.phase == Phase::Content && d.role == Role::Assistant && !d.text.is_empty() =>
            {
                vec![SessionUpdate::AgentMessageChunk(text_chunk(&d.text))]
            }
            Event::Thinking(t) if t.phase == Phase::Content && !t.text.is_empty() => {
                vec![SessionUpdate::AgentThoughtChunk(text_chunk(&t.text))]
            }
            Event::ToolCall(c) => self.tool_call(c),
            Event::ToolResult(r) => {
                let id = r.id.as_str().to_owned();
                let status = if self.failed.contains(&id) {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                self.finished.insert(id.clone());
                let mut fields = ToolCallUpdateFields::new().status(status);
                if let Some(result) = &r.result {
                    fields = fields
                        .content(result_content(result))
                        .raw_output(result.clone());
                }
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    id, fields,
                ))]
            }
            Event::Notice(n) if n.kind == notice_kind::TRANSCRIPT_ITEM => {
                let Some(item) = n.item.as_deref() else {
                    return Vec::new();
                };
                match (&item.kind, &item.tool_use_id) {
                    (TranscriptKind::ToolResult, Some(id)) if item.is_error => {
                        self.failed.insert(id.clone());
                        // A result already reported as completed turns failed.
                        if self.finished.contains(id) {
                            vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                                id.clone(),
                                ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
                            ))]
                        } else {
                            Vec::new()
                        }
                    }
                    _ => Vec::new(),
                }
            }
            _ => Vec::new(),
        }
    }

    fn tool_call(&mut self, c: &agent_adaptor_core::ToolCall) -> Vec<SessionUpdate> {
        let id = c.id.as_str().to_owned();
        match c.phase {
            Phase::Start => {
                let status = if c.args.is_some() {
                    ToolCallStatus::InProgress
                } else {
                    ToolCallStatus::Pending
                };
                let title = if c.name.is_empty() {
                    "tool".to_owned()
                } else {
                    c.name.clone()
                };
                let mut call = ToolCall::new(id, title)
                    .kind(tool_kind(&c.name))
                    .status(status)
                    .locations(locations(c.args.as_ref()));
                if let Some(args) = &c.args {
                    call = call.raw_input(args.clone());
                }
                vec![SessionUpdate::ToolCall(call)]
            }
            Phase::Content => {
                self.args.entry(id).or_default().push_str(&c.args_delta);
                Vec::new()
            }
            Phase::End => {
                let mut fields = ToolCallUpdateFields::new();
                if let Some(text) = self.args.remove(&id) {
                    let input = serde_json::from_str(&text).unwrap_or(Value::String(text));
                    let found = locations(Some(&input));
                    if !found.is_empty() {
                        fields = fields.locations(found);
                    }
                    fields = fields.raw_input(input).status(ToolCallStatus::InProgress);
                }
                if let Some(result) = &c.result {
                    self.finished.insert(id.clone());
                    let status = if self.failed.contains(&id) {
                        ToolCallStatus::Failed
                    } else {
                        ToolCallStatus::Completed
                    };
                    fields = fields
                        .status(status)
                        .content(result_content(result))
                        .raw_output(result.clone());
                }
                if fields == ToolCallUpdateFields::new() {
                    return Vec::new();
                }
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    id, fields,
                ))]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_come_from_the_cli_tool_names() {
        assert_eq!(tool_kind("Bash"), ToolKind::Execute);
        assert_eq!(tool_kind("run_shell_command"), ToolKind::Execute);
        assert_eq!(tool_kind("Read"), ToolKind::Read);
        assert_eq!(tool_kind("Edit"), ToolKind::Edit);
        assert_eq!(tool_kind("Grep"), ToolKind::Search);
        assert_eq!(tool_kind("WebFetch"), ToolKind::Fetch);
        assert_eq!(tool_kind("mcp__files__read_file"), ToolKind::Read);
        assert_eq!(tool_kind("summon"), ToolKind::Other);
    }

    #[test]
    fn a_path_argument_is_a_location() {
        let l = locations(Some(&json!({"file_path": "/w/a.rs", "content": "x"})));
        assert_eq!(l, vec![ToolCallLocation::new("/w/a.rs")]);
        assert!(locations(Some(&json!({"command": "ls"}))).is_empty());
        assert!(locations(None).is_empty());
    }
}
