//! The typed errors of workspace resolution and release.

use std::path::PathBuf;

/// Why a workspace could not be resolved, released or inspected.
///
/// Every variant is raised **before** any agent process is spawned when it
/// comes from [`WorkspaceManager::resolve`](crate::WorkspaceManager::resolve).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// The base directory is not inside a git repository.
    #[error("{dir} is not inside a git repository")]
    NotARepository {
        /// The directory that was asked for.
        dir: PathBuf,
    },
    /// The base ref does not name a commit.
    #[error("base ref {base_ref:?} does not name a commit")]
    BaseRefNotFound {
        /// The ref as given.
        base_ref: String,
    },
    /// The spec requires a clean base checkout and it has uncommitted changes.
    #[error("the base checkout {dir} has uncommitted changes ({count} paths)")]
    DirtyBase {
        /// The base checkout.
        dir: PathBuf,
        /// How many paths `git status` lists.
        count: usize,
    },
    /// The worktree path would leave the parent directory.
    #[error("worktree path {path} is outside the parent directory {parent}")]
    PathOutsideParent {
        /// The computed worktree path.
        path: PathBuf,
        /// The configured parent directory.
        parent: PathBuf,
    },
    /// Something already exists where the worktree would be created.
    #[error("worktree path {path} already exists")]
    PathExists {
        /// The computed worktree path.
        path: PathBuf,
    },
    /// The branch the template names already exists.
    #[error("branch {branch:?} already exists")]
    BranchExists {
        /// The branch name.
        branch: String,
    },
    /// The branch template expands to something git refuses as a branch name.
    #[error("branch name {branch:?} is not a valid git branch name")]
    InvalidBranchName {
        /// The expanded name.
        branch: String,
    },
    /// The template uses `{thread}` but the request has no thread key, or an
    /// unknown placeholder.
    #[error("branch template {template:?}: {why}")]
    InvalidTemplate {
        /// The template as given.
        template: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Removal refused: the worktree has uncommitted changes.
    #[error("worktree {path} has uncommitted changes ({count} paths); not removed")]
    UncommittedChanges {
        /// The worktree.
        path: PathBuf,
        /// How many paths `git status` lists.
        count: usize,
    },
    /// Removal refused: the branch has commits that are neither merged into
    /// the base ref nor pushed to any remote.
    #[error(
        "branch {branch:?} has {count} commits not merged into {base_ref:?} nor pushed; not removed"
    )]
    UnmergedCommits {
        /// The branch.
        branch: String,
        /// The base ref it was compared against.
        base_ref: String,
        /// How many commits would be lost.
        count: usize,
    },
    /// No lease has that id, branch or path.
    #[error("no agent worktree {which:?} (not a lease id, branch or worktree path)")]
    NoSuchLease {
        /// What was asked for.
        which: String,
    },
    /// The worktree is not the caller's to remove.
    #[error("worktree {path} not removed: {why}")]
    NotRemovable {
        /// The worktree.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// A git command failed.
    #[error("git {args} failed (exit {code:?}): {stderr}")]
    Git {
        /// The git arguments (no secrets: workspace commands carry none).
        args: String,
        /// The exit code, if the process exited.
        code: Option<i32>,
        /// The tail of git's stderr.
        stderr: String,
    },
    /// `git` could not be spawned.
    #[error("could not run git: {0}")]
    Spawn(#[source] agent_adaptor_process::ProcessError),
    /// A lease file could not be read or written.
    #[error("lease file {path}: {source}")]
    LeaseFile {
        /// The lease file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A lease file holds something that is not a lease.
    #[error("lease file {path} is not a lease: {source}")]
    LeaseFormat {
        /// The lease file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// The spec is one this manager does not resolve (e.g. driver-managed).
    #[error("workspace spec {0} is resolved by the driver, not the manager")]
    NotManaged(&'static str),
    /// A temporary directory could not be created.
    #[error("temporary workspace: {0}")]
    Temp(#[source] std::io::Error),
}
