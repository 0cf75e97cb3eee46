//! Observations onto an A2A task: artifacts the client can read at any
//! time (`GetTask`) and watch change (`artifactUpdate`), plus `WORKING`
//! status messages at the moments a person would want to hear about.
//!
//! | event | task |
//! |---|---|
//! | `TodoUpdated` | artifact `todo` (`todo:<scope>` for a subagent's list), replaced per revision: a text part (one `[x]`/`[~]`/`[ ]`/`[-]` line per item) and a data part `{revision, items, scopeId?}`; status message "Todo list: N of M done." |
//! | `SubagentUpdate` started | artifact `subagent:<scope>` (new): text "Subagent NAME started." and data `{agent, scopeId, toolCallId?, status: "working"}`; status message |
//! | the child's tool calls | appended to its artifact: data `{toolCall: {id, name, args?}}`, `{toolResult: {id, result}}` |
//! | `SubagentUpdate` delta | appended text part |
//! | `SubagentUpdate` finished | appended data `{status: "completed" \| "failed", result?}`, `lastChunk`; status message |
//! | `CapabilityInvocation` | artifact `capabilities`, one data part appended per phase `{id, capability, name, server?, operation, phase, toolCallId?, durationMs?, error?, scopeId?}` |
//! | `ImageContent` | artifact `images`, one file part appended per image: `raw` (the base64 data) or `url`, with its `mediaType` and a filename `image-N.<ext>` |

use std::collections::{HashMap, HashSet};

use agent_adaptor_core::driver::{Delegation, TodoItem, TodoStatus};
use agent_adaptor_core::{Event, ImageContent, Phase, SubagentKind, SubagentUpdate, TodoUpdated};
use serde_json::{Map, Value, json};

use super::store::TaskSlot;
use super::types::{Artifact, Message, Part, PartContent, TaskState};

/// The id of the artifact holding the main agent's todo list.
pub const TODO_ARTIFACT_ID: &str = "todo";
/// The id of the artifact collecting capability invocations.
pub const CAPABILITIES_ARTIFACT_ID: &str = "capabilities";
/// The id of the artifact collecting images.
pub const IMAGES_ARTIFACT_ID: &str = "images";
/// The prefix of a subagent's artifact id (`subagent:<scope>`).
pub const SUBAGENT_ARTIFACT_PREFIX: &str = "subagent:";

/// The observation state of one task's run.
#[derive(Debug, Default)]
pub(crate) struct Observer {
    /// Open subagent scopes.
    open: HashSet<String>,
    /// Tool call id → the open subagent scope it belongs to.
    tool_scopes: HashMap<String, String>,
    /// Capability phases sent so far.
    capabilities: usize,
    /// Images sent so far.
    images: usize,
}

impl Observer {
    /// Project `ev` onto `slot`; `false` when it is not an observation
    /// (a tool call of a subagent is projected and still reported `false`).
    pub(crate) fn event(&mut self, slot: &TaskSlot, ev: &Event) -> bool {
        match ev {
            Event::TodoUpdated(t) => todo(slot, t),
            Event::SubagentUpdate(u) => self.subagent(slot, u),
            Event::CapabilityInvocation(c) => {
                let i = &c.invocation;
                let mut d = Map::new();
                d.insert("id".into(), json!(i.id));
                d.extend(crate::observation_json::capability(i));
                let append = self.capabilities > 0;
                self.capabilities += 1;
                slot.artifact(
                    artifact(
                        CAPABILITIES_ARTIFACT_ID,
                        "capabilities",
                        "MCP tools, skills and subagents the agent invoked",
                        vec![Part::data(Value::Object(d))],
                    ),
                    append,
                    false,
                );
            }
            Event::ImageContent(i) => {
                let append = self.images > 0;
                self.images += 1;
                let part = image_part(i, self.images);
                slot.artifact(
                    artifact(
                        IMAGES_ARTIFACT_ID,
                        "images",
                        "Images the agent showed",
                        vec![part],
                    ),
                    append,
                    false,
                );
            }
            Event::ToolCall(c) if c.phase == Phase::Start => {
                if let Some(scope) = self.open_scope(c.delegation.as_deref()) {
                    self.tool_scopes.insert(c.id.to_string(), scope.clone());
                    let mut call = json!({"id": c.id.to_string(), "name": c.name});
                    if let Some(args) = &c.args {
                        call["args"] = args.clone();
                    }
                    append_to_subagent(slot, &scope, Part::data(json!({"toolCall": call})));
                }
                return false;
            }
            Event::ToolCall(c) if c.phase == Phase::End && c.result.is_some() => {
                self.child_result(slot, c.id.as_str(), c.result.as_ref());
                return false;
            }
            Event::ToolResult(r) => {
                if let Some(scope) = self.open_scope(r.delegation.as_deref()) {
                    self.tool_scopes.insert(r.id.to_string(), scope);
                }
                self.child_result(slot, r.id.as_str(), r.result.as_ref());
                return false;
            }
            _ => return false,
        }
        true
    }

    /// The open subagent scope a delegation names.
    fn open_scope(&self, d: Option<&Delegation>) -> Option<String> {
        d.and_then(|d| d.scope_id.clone())
            .filter(|s| self.open.contains(s))
    }

    fn child_result(&mut self, slot: &TaskSlot, id: &str, result: Option<&Value>) {
        let Some(scope) = self.tool_scopes.remove(id) else {
            return;
        };
        if self.open.contains(&scope) {
            let data =
                json!({"toolResult": {"id": id, "result": result.cloned().unwrap_or(Value::Null)}});
            append_to_subagent(slot, &scope, Part::data(data));
        }
    }

    fn subagent(&mut self, slot: &TaskSlot, u: &SubagentUpdate) {
        let scope = &u.scope_id;
        match u.kind {
            SubagentKind::Started => {
                if !self.open.insert(scope.clone()) {
                    return;
                }
                let mut data = json!({"agent": u.agent, "scopeId": scope, "status": "working"});
                if let Some(id) = &u.tool_call_id {
                    data["toolCallId"] = json!(id.to_string());
                }
                let said = format!("Subagent {} started.", u.agent);
                slot.artifact(
                    artifact(
                        &format!("{SUBAGENT_ARTIFACT_PREFIX}{scope}"),
                        &format!("subagent {}", u.agent),
                        "A subagent's work: its tool calls, progress and outcome",
                        vec![Part::text(said.clone()), Part::data(data)],
                    ),
                    false,
                    false,
                );
                working(slot, said);
            }
            SubagentKind::Delta => {
                if self.open.contains(scope) && !u.delta.is_empty() {
                    append_to_subagent(slot, scope, Part::text(u.delta.clone()));
                }
            }
            SubagentKind::Finished => {
                if !self.open.remove(scope) {
                    return;
                }
                self.tool_scopes.retain(|_, s| s != scope);
                let status = if u.failed { "failed" } else { "completed" };
                let mut data = json!({"status": status});
                if !u.delta.is_empty() {
                    data["result"] = json!(u.delta);
                }
                let id = format!("{SUBAGENT_ARTIFACT_PREFIX}{scope}");
                slot.artifact(
                    Artifact {
                        artifact_id: id,
                        parts: vec![Part::data(data)],
                        ..Artifact::default()
                    },
                    true,
                    true,
                );
                working(slot, format!("Subagent {} {status}.", u.agent));
            }
        }
    }
}

fn artifact(id: &str, name: &str, description: &str, parts: Vec<Part>) -> Artifact {
    Artifact {
        artifact_id: id.to_owned(),
        name: name.to_owned(),
        description: description.to_owned(),
        parts,
        ..Artifact::default()
    }
}

fn append_to_subagent(slot: &TaskSlot, scope: &str, part: Part) {
    slot.artifact(
        Artifact {
            artifact_id: format!("{SUBAGENT_ARTIFACT_PREFIX}{scope}"),
            parts: vec![part],
            ..Artifact::default()
        },
        true,
        false,
    );
}

/// A `WORKING` status update with an agent message.
fn working(slot: &TaskSlot, text: String) {
    let message =
        Message::agent(vec![Part::text(text)]).for_task(slot.id.clone(), slot.context_id.clone());
    slot.set_status(TaskState::Working, Some(message));
}

fn todo(slot: &TaskSlot, t: &TodoUpdated) {
    let s = &t.snapshot;
    let lines: Vec<String> = s.items.iter().map(todo_line).collect();
    let items: Vec<Value> = s.items.iter().map(todo_item).collect();
    let mut data = json!({"revision": s.revision, "items": items});
    let id = match &s.scope_id {
        Some(scope) => {
            data["scopeId"] = json!(scope);
            format!("{TODO_ARTIFACT_ID}:{scope}")
        }
        None => TODO_ARTIFACT_ID.to_owned(),
    };
    slot.artifact(
        artifact(
            &id,
            "todo",
            "The agent's todo list (replaced by each revision)",
            vec![Part::text(lines.join("\n")), Part::data(data)],
        ),
        false,
        false,
    );
    let done = s
        .items
        .iter()
        .filter(|i| i.status == TodoStatus::Completed)
        .count();
    working(
        slot,
        format!("Todo list: {done} of {} done.", s.items.len()),
    );
}

fn todo_line(item: &TodoItem) -> String {
    let mark = match item.status {
        TodoStatus::Completed => "[x]",
        TodoStatus::InProgress => "[~]",
        TodoStatus::Cancelled => "[-]",
        _ => "[ ]",
    };
    format!("{mark} {}", item.content)
}

fn todo_item(item: &TodoItem) -> Value {
    let mut v = json!({"id": item.id, "content": item.content, "status": item.status});
    if let Some(a) = &item.active_form {
        v["activeForm"] = json!(a);
    }
    if let Some(p) = &item.priority {
        v["priority"] = json!(p);
    }
    v
}

fn image_part(i: &ImageContent, n: usize) -> Part {
    let img = &i.image;
    let ext = img
        .mime_type
        .strip_prefix("image/")
        .map(|e| e.split(['+', ';']).next().unwrap_or(e))
        .filter(|e| !e.is_empty() && e.chars().all(|c| c.is_ascii_alphanumeric()))
        .unwrap_or("bin");
    let content = match (&img.data, &img.uri) {
        (Some(d), _) => PartContent::Raw(d.clone()),
        (None, Some(u)) => PartContent::Url(u.clone()),
        (None, None) => PartContent::Raw(String::new()),
    };
    Part {
        content,
        metadata: None,
        filename: format!("image-{n}.{ext}"),
        media_type: img.mime_type.clone(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use agent_adaptor_core::driver::{ImagePayload, ObservationSource, Role};
    use agent_adaptor_core::{EventMeta, ImageContent};

    use super::*;

    fn image(mime: &str, data: Option<&str>, uri: Option<&str>) -> ImageContent {
        ImageContent {
            meta: EventMeta {
                run_id: Arc::from("run_1"),
                thread_key: None,
                sequence: 1,
                time: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
                source: None,
            },
            role: Role::Assistant,
            image: ImagePayload {
                message_id: None,
                mime_type: mime.into(),
                data: data.map(str::to_owned),
                uri: uri.map(str::to_owned),
                source: ObservationSource::new("test.image"),
            },
        }
    }

    #[test]
    fn images_are_raw_or_url_file_parts_named_by_their_subtype() {
        let raw = image_part(&image("image/png", Some("AAAA"), None), 1);
        assert_eq!(
            (raw.content, raw.filename.as_str(), raw.media_type.as_str()),
            (PartContent::Raw("AAAA".into()), "image-1.png", "image/png")
        );
        let url = image_part(
            &image("image/svg+xml", None, Some("https://example.com/a.svg")),
            2,
        );
        assert_eq!(
            (url.content, url.filename.as_str()),
            (
                PartContent::Url("https://example.com/a.svg".into()),
                "image-2.svg"
            )
        );
        // A subtype that is not a plain word does not reach the file name.
        let odd = image_part(&image("image/../x", Some("AAAA"), None), 3);
        assert_eq!(odd.filename, "image-3.bin");
    }

    #[test]
    fn todo_lines_mark_each_status() {
        let line = |status| {
            todo_line(&TodoItem {
                id: "1".into(),
                content: "x".into(),
                status,
                active_form: None,
                priority: None,
            })
        };
        assert_eq!(
            [
                line(TodoStatus::Pending),
                line(TodoStatus::InProgress),
                line(TodoStatus::Completed),
                line(TodoStatus::Cancelled)
            ],
            ["[ ] x", "[~] x", "[x] x", "[-] x"]
        );
    }
}
