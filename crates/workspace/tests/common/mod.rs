//! Temp repositories driven by the real `git` CLI.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod editor;

use std::path::{Path, PathBuf};
use std::process::Command;

/// A temp dir holding `repo/` (one commit: README.md) — worktrees go to
/// the default `repo.worktrees/` beside it, inside the temp dir.
pub struct TempRepo {
    pub dir: tempfile::TempDir,
    pub repo: PathBuf,
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl TempRepo {
    pub fn new() -> TempRepo {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).expect("mkdir");
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README.md"), "# demo\n").expect("write");
        std::fs::write(repo.join("old.txt"), "old\n").expect("write");
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "init"]);
        TempRepo { dir, repo }
    }

    /// `git worktree list` entries (the main checkout counts as one).
    pub fn worktrees(&self) -> usize {
        git(&self.repo, &["worktree", "list", "--porcelain"])
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count()
    }

    pub fn branch_exists(&self, branch: &str) -> bool {
        !git(&self.repo, &["branch", "--list", branch])
            .trim()
            .is_empty()
    }

    pub fn status(&self) -> String {
        git(&self.repo, &["status", "--porcelain"])
    }
}
