//! The tools the `llm` driver offers the model. Every call is approved by a
//! human (or the `--approve` policy) before it runs.
//!
//! There is one, read-only: `list_files`, the entries of a directory inside
//! the workspace.

use std::path::{Component, Path, PathBuf};

use agent_adaptor_llm::ToolDefinition;
use serde_json::{Value, json};

/// The name of the directory-listing tool.
pub const LIST_FILES: &str = "list_files";

/// At most this many entries are listed.
const MAX_ENTRIES: usize = 200;

/// The tool definitions sent to the model.
pub fn definitions() -> Vec<ToolDefinition> {
    vec![ToolDefinition::function(
        LIST_FILES,
        "List the entries of a directory inside the workspace (read-only).",
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "A directory relative to the workspace; \".\" for its root."
                }
            },
            "required": ["path"]
        }),
    )]
}

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text given back to the model.
    pub text: String,
    /// True when the call failed.
    pub is_error: bool,
}

impl ToolOutput {
    fn ok(text: String) -> Self {
        ToolOutput {
            text,
            is_error: false,
        }
    }

    fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: true,
        }
    }
}

/// Run tool `name` with `arguments` inside `workspace`.
pub fn run(name: &str, arguments: &Value, workspace: &Path) -> ToolOutput {
    match name {
        LIST_FILES => {
            let path = arguments.get("path").and_then(Value::as_str).unwrap_or(".");
            list_files(workspace, path)
        }
        other => ToolOutput::error(format!("unknown tool {other:?}")),
    }
}

/// The entries of `relative` inside `workspace`, one a line, directories
/// with a trailing `/`, sorted.
fn list_files(workspace: &Path, relative: &str) -> ToolOutput {
    let Some(dir) = inside(workspace, relative) else {
        return ToolOutput::error(format!(
            "{relative:?} is not a path inside the workspace (use a relative path without ..)"
        ));
    };
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) => return ToolOutput::error(format!("cannot list {relative:?}: {e}")),
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| {
            let mut name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                name.push('/');
            }
            name
        })
        .collect();
    names.sort();
    let total = names.len();
    names.truncate(MAX_ENTRIES);
    let mut text = names.join("\n");
    if total > MAX_ENTRIES {
        text.push_str(&format!("\n… and {} more", total - MAX_ENTRIES));
    }
    if total == 0 {
        text = "(empty directory)".into();
    }
    ToolOutput::ok(text)
}

/// `workspace/relative` when `relative` is a plain relative path (no root,
/// no `..`).
fn inside(workspace: &Path, relative: &str) -> Option<PathBuf> {
    let rel = Path::new(relative);
    let plain = rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    plain.then(|| workspace.join(rel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_files_lists_a_directory_and_refuses_to_leave_the_workspace() {
        let dir = std::env::temp_dir().join(format!("aa-cli-tools-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).ok();
        std::fs::write(dir.join("a.txt"), "x").ok();
        let out = run(LIST_FILES, &json!({"path": "."}), &dir);
        assert!(!out.is_error, "{out:?}");
        assert_eq!(out.text, "a.txt\nsub/");
        assert!(run(LIST_FILES, &json!({"path": "../"}), &dir).is_error);
        assert!(run(LIST_FILES, &json!({"path": "/etc"}), &dir).is_error);
        assert!(run("rm", &json!({}), &dir).is_error);
        std::fs::remove_dir_all(&dir).ok();
    }
}
