//! What the host asks for: a [`WorkspaceSpec`] and the request around it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where a run (or a thread's turns) works.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum WorkspaceSpec {
    /// The base directory itself (today's `cwd`): nothing is created.
    Shared,
    /// A git worktree on a new branch, created from a base ref.
    GitWorktree(GitWorktreeSpec),
    /// A fresh empty temporary directory, removed on release.
    Temp,
    /// The driver provides its own isolated workspace: the manager passes
    /// the base directory through and core asks the driver for one
    /// (`Request::driver_managed_workspace`), refusing a driver that does
    /// not declare it.
    DriverManaged,
}

/// A git worktree on a new branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitWorktreeSpec {
    /// The commit-ish the branch starts from (`HEAD`, `main`, a sha …).
    pub base_ref: String,
    /// The branch name; `{thread}` and `{run_id}` are replaced by the
    /// request's thread key and run id (characters git refuses become `-`).
    pub branch_template: String,
    /// The directory worktrees are created under; default
    /// `<repo>/../<repo-name>.worktrees`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_dir: Option<PathBuf>,
    /// Refuse when the base checkout has uncommitted changes (they would
    /// not be in the worktree, which may surprise the host).
    #[serde(default)]
    pub require_clean_base: bool,
}

impl GitWorktreeSpec {
    /// A worktree from `base_ref` on branch `branch_template`.
    pub fn new(base_ref: impl Into<String>, branch_template: impl Into<String>) -> Self {
        GitWorktreeSpec {
            base_ref: base_ref.into(),
            branch_template: branch_template.into(),
            parent_dir: None,
            require_clean_base: false,
        }
    }

    /// Create worktrees under `dir`.
    pub fn parent_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.parent_dir = Some(dir.into());
        self
    }

    /// Refuse a base checkout with uncommitted changes.
    pub fn require_clean_base(mut self, yes: bool) -> Self {
        self.require_clean_base = yes;
        self
    }
}

/// One resolution request.
#[derive(Debug, Clone)]
pub struct WorkspaceRequest {
    /// The directory the host would otherwise run in (inside the repository
    /// for a git worktree).
    pub base_dir: PathBuf,
    /// What to make of it.
    pub spec: WorkspaceSpec,
    /// The run this lease is for.
    pub run_id: String,
    /// The thread key, when the run is a thread turn: the lease then
    /// belongs to the thread and is reused by its next turns.
    pub thread: Option<String>,
}
