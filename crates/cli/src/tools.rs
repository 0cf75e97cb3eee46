//! The host tools the CLI gives the `llm` agent. Every call is approved by a
//! human (or the `--approve` policy) before it runs: the tools are not
//! trusted.
//!
//! There is one, read-only: [`LIST_FILES`], the entries of a directory
//! inside the workspace.

use std::path::{Component, Path, PathBuf};

use agent_adaptor_core::{Tool, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::args::DriverName;

/// The name of the directory-listing tool.
pub const LIST_FILES: &str = "list_files";

/// At most this many entries are listed.
const MAX_ENTRIES: usize = 200;

/// The input of [`LIST_FILES`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListFilesInput {
    /// A directory relative to the workspace; "." for its root.
    pub path: String,
}

/// The host tools for driver `name` working in `workspace`: `list_files`
/// for the `llm` agent, none for an agent CLI (which has its own).
pub fn host_tools(name: DriverName, workspace: &Path) -> Vec<Tool> {
    match name {
        DriverName::Llm => vec![list_files(workspace.to_path_buf())],
        _ => Vec::new(),
    }
}

/// The workspace of a command: `--cwd` (canonical), else the current
/// directory.
pub fn workspace(cwd: Option<&Path>) -> PathBuf {
    match cwd {
        Some(dir) => std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    }
}

/// The `list_files` tool over `workspace`.
pub fn list_files(workspace: PathBuf) -> Tool {
    Tool::define(
        LIST_FILES,
        "List the entries of a directory inside the workspace (read-only).",
        move |input: ListFilesInput, _ctx| {
            let listed = list(&workspace, &input.path);
            async move { listed.map_err(ToolError::Reject) }
        },
    )
}

/// The entries of `relative` inside `workspace`, one a line, directories
/// with a trailing `/`, sorted; the refusal the model reads otherwise.
pub fn list(workspace: &Path, relative: &str) -> Result<String, String> {
    let Some(dir) = inside(workspace, relative) else {
        return Err(format!(
            "{relative:?} is not a path inside the workspace (use a relative path without ..)"
        ));
    };
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("cannot list {relative:?}: {e}"))?;
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
    if total == 0 {
        return Ok("(empty directory)".into());
    }
    names.truncate(MAX_ENTRIES);
    let mut text = names.join("\n");
    if total > MAX_ENTRIES {
        text.push_str(&format!("\n… and {} more", total - MAX_ENTRIES));
    }
    Ok(text)
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
        assert_eq!(list(&dir, "."), Ok("a.txt\nsub/".to_owned()));
        assert!(list(&dir, "../").is_err());
        assert!(list(&dir, "/etc").is_err());
        assert!(list(&dir, "missing").is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn only_the_llm_agent_gets_the_tool_and_it_asks_first() {
        let tools = host_tools(DriverName::Llm, Path::new("."));
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name(), LIST_FILES);
        assert!(!tools[0].spec().trusted);
        assert!(tools[0].check().is_ok());
        assert!(host_tools(DriverName::Claude, Path::new(".")).is_empty());
    }
}
