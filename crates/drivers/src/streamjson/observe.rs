//! What the stream-json family's formal tool calls say about the agent:
//! `TodoWrite` (its todo list), `Task`/`Agent` (a subagent, whose messages
//! carry `parent_tool_use_id` = the call's id), `Skill` and
//! `mcp__<server>__<tool>` (capability invocations), and `image` blocks.
//! The shared [`Observer`](crate::observe::Observer) makes the payloads.

use agent_adaptor_driver::{CapabilityKind, HOST_TOOL_SERVER, ObservationSupport};
use serde_json::Value;

use crate::observe::{CapabilityFact, TodoFact, str_field};

/// What the family reports: Claude Code and CodeBuddy Code both carry
/// todos, subagents, capability invocations and images in their protocol.
pub(crate) const SUPPORT: ObservationSupport = ObservationSupport::ALL;

/// The tool whose input is the whole todo list.
pub(crate) const TODO_TOOL: &str = "TodoWrite";

/// The todo list a `TodoWrite` input states (`todos[]{content, status,
/// activeForm, id?, priority?}`), or `None` when it has no `todos` array.
pub(crate) fn todo_facts(input: &Value) -> Option<Vec<TodoFact>> {
    let todos = input.get("todos")?.as_array()?;
    Some(
        todos
            .iter()
            .map(|t| TodoFact {
                id: str_field(t, "id"),
                content: str_field(t, "content").unwrap_or_default(),
                status: str_field(t, "status").unwrap_or_default(),
                active_form: str_field(t, "activeForm"),
                priority: str_field(t, "priority"),
            })
            .collect(),
    )
}

/// True for the tools that start a subagent (`Task`, renamed `Agent`).
pub(crate) fn is_subagent_tool(name: &str) -> bool {
    matches!(name, "Task" | "Agent")
}

/// The subagent a `Task`/`Agent` input names: its type, else its
/// description, else `"subagent"`.
pub(crate) fn subagent_name(input: &Value) -> String {
    ["subagent_type", "description"]
        .iter()
        .find_map(|k| str_field(input, k).filter(|s| !s.trim().is_empty()))
        .unwrap_or_else(|| "subagent".to_owned())
}

/// The capability a tool call invokes, if it invokes one: a subagent, a
/// skill (`Skill{skill}` or `Skill{command}`), or an MCP tool
/// (`mcp__<server>__<tool>`, but not the host tools' server).
pub(crate) fn capability_of(name: &str, input: &Value) -> Option<CapabilityFact> {
    if is_subagent_tool(name) {
        return Some(CapabilityFact {
            kind: CapabilityKind::Subagent,
            name: subagent_name(input),
            server: None,
        });
    }
    if name == "Skill" {
        let skill = str_field(input, "skill").or_else(|| str_field(input, "command"))?;
        return Some(CapabilityFact {
            kind: CapabilityKind::Skill,
            name: skill,
            server: None,
        });
    }
    let (server, tool) = name.strip_prefix("mcp__")?.split_once("__")?;
    if server.is_empty() || tool.is_empty() || server == HOST_TOOL_SERVER {
        return None;
    }
    Some(CapabilityFact {
        kind: CapabilityKind::Mcp,
        name: tool.to_owned(),
        server: Some(server.to_owned()),
    })
}

/// An image block's `(mime type, base64 data, uri)` from its `source`.
pub(crate) fn image_source(source: &Value) -> (String, Option<String>, Option<String>) {
    let mime = str_field(source, "media_type").unwrap_or_default();
    match source.get("type").and_then(Value::as_str) {
        Some("url") => (mime_or_guess(mime), None, str_field(source, "url")),
        _ => (mime, str_field(source, "data"), None),
    }
}

fn mime_or_guess(mime: String) -> String {
    if mime.is_empty() {
        "image/*".to_owned()
    } else {
        mime
    }
}

/// The `image` blocks of a tool result's content array.
pub(crate) fn result_images(content: &Value) -> Vec<&Value> {
    content
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("image"))
                .filter_map(|p| p.get("source"))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_calls_name_their_capability() {
        let skill = capability_of("Skill", &json!({"skill": "pdf"})).unwrap();
        assert_eq!(
            (skill.kind, skill.name.as_str()),
            (CapabilityKind::Skill, "pdf")
        );
        let mcp = capability_of("mcp__files__read_file", &json!({})).unwrap();
        assert_eq!(
            (mcp.kind, mcp.name.as_str(), mcp.server.as_deref()),
            (CapabilityKind::Mcp, "read_file", Some("files"))
        );
        let task = capability_of("Task", &json!({"subagent_type": "general-purpose"})).unwrap();
        assert_eq!(task.kind, CapabilityKind::Subagent);
        assert!(capability_of("Bash", &json!({})).is_none());
        assert!(capability_of("mcp__nounderscore", &json!({})).is_none());
        let host = format!("mcp__{HOST_TOOL_SERVER}__x");
        assert!(capability_of(&host, &json!({})).is_none());
        assert!(capability_of("Skill", &json!({})).is_none());
    }

    #[test]
    fn todo_write_input_reads_every_field() {
        let f = todo_facts(&json!({"todos": [
            {"content": "a", "status": "in_progress", "activeForm": "doing a"}
        ]}))
        .unwrap();
        assert_eq!(f[0].status, "in_progress");
        assert_eq!(f[0].active_form.as_deref(), Some("doing a"));
        assert!(todo_facts(&json!({"todos": "x"})).is_none());
    }
}
