//! Facts about the repository a base directory is in, and the worktree
//! operations on it (create, inspect, remove) — all through the `git` CLI.

use std::path::{Path, PathBuf};

use crate::error::WorkspaceError;
use crate::git;

/// A repository's main checkout and common git directory.
#[derive(Debug, Clone)]
pub(crate) struct Repo {
    /// The main checkout's top level.
    pub(crate) top: PathBuf,
    /// The common git dir (shared by all worktrees).
    pub(crate) common_dir: PathBuf,
}

impl Repo {
    /// The repository containing `dir`.
    pub(crate) async fn of(dir: &Path) -> Result<Repo, WorkspaceError> {
        let not_repo = || WorkspaceError::NotARepository {
            dir: dir.to_owned(),
        };
        if !dir.is_dir() {
            return Err(not_repo());
        }
        let out = git::run(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
            &[],
        )
        .await?;
        if !out.ok() {
            return Err(not_repo());
        }
        let common_dir = PathBuf::from(out.stdout.trim());
        // The main checkout is the common dir's parent for a non-bare repo.
        let top = common_dir
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(not_repo)?;
        Ok(Repo { top, common_dir })
    }

    /// Whether `refs/heads/<branch>` exists.
    pub(crate) async fn branch_exists(&self, branch: &str) -> Result<bool, WorkspaceError> {
        let r = format!("refs/heads/{branch}");
        let out = git::run(&self.top, &["show-ref", "--verify", "--quiet", &r], &[]).await?;
        Ok(out.ok())
    }

    /// Whether git accepts `branch` as a branch name.
    pub(crate) async fn valid_branch(&self, branch: &str) -> Result<bool, WorkspaceError> {
        let out = git::run(&self.top, &["check-ref-format", "--branch", branch], &[]).await?;
        Ok(out.ok())
    }

    /// Commits on `branch` that are in neither `base_ref` (as it is now)
    /// nor any remote-tracking branch: what deleting the branch would lose.
    pub(crate) async fn unmerged_commits(
        &self,
        branch: &str,
        base_ref: &str,
    ) -> Result<usize, WorkspaceError> {
        let head = format!("refs/heads/{branch}");
        let mut args = vec!["rev-list", "--count", head.as_str(), "--not", "--remotes"];
        let base = git::resolve_commit(&self.top, base_ref).await?;
        if let Some(base) = base.as_deref() {
            args.push(base);
        }
        let out = git::check(&self.top, &args, &[]).await?;
        Ok(out.trim().parse().unwrap_or(usize::MAX))
    }

    /// `git worktree remove` then `git branch -D` (the caller checked it is safe).
    pub(crate) async fn remove_worktree(
        &self,
        path: &Path,
        branch: Option<&str>,
    ) -> Result<(), WorkspaceError> {
        if path.exists() {
            let p = path.to_string_lossy();
            git::check(&self.top, &["worktree", "remove", p.as_ref()], &[]).await?;
        } else {
            git::check(&self.top, &["worktree", "prune"], &[]).await?;
        }
        if let Some(branch) = branch
            && self.branch_exists(branch).await?
        {
            git::check(&self.top, &["branch", "-D", branch], &[]).await?;
        }
        Ok(())
    }
}
