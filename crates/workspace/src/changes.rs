//! What a run changed in its worktree: files added, modified and deleted
//! against the lease's base commit (committed, staged, unstaged and
//! untracked alike), line counts, and the diff on request.

pub use agent_adaptor_core::{ChangeKind, ChangeSummary, FileChange};

use crate::error::WorkspaceError;
use crate::git;
use crate::lease::WorkspaceLease;

/// The changes in a git-worktree lease against its base commit. Uses a
/// private index file, so the worktree's own index is untouched.
///
/// # Errors
///
/// A git failure; a lease that is not a git worktree yields an empty summary.
pub async fn summarize(
    lease: &WorkspaceLease,
    with_diff: bool,
) -> Result<ChangeSummary, WorkspaceError> {
    let Some(base) = lease.base_commit.as_deref() else {
        return Ok(ChangeSummary::default());
    };
    let dir = &lease.path;
    let index = std::env::temp_dir().join(format!(
        "agent-adaptor-index-{:016x}",
        rand::random::<u64>()
    ));
    let index_s = index.to_string_lossy().into_owned();
    let env = [("GIT_INDEX_FILE", index_s.as_str())];
    let result = async {
        git::check(dir, &["read-tree", "HEAD"], &env).await?;
        git::check(dir, &["add", "-A"], &env).await?;
        let names = git::check(
            dir,
            &[
                "diff",
                "--cached",
                "--no-renames",
                "--name-status",
                "-z",
                base,
            ],
            &env,
        )
        .await?;
        let nums = git::check(
            dir,
            &["diff", "--cached", "--no-renames", "--numstat", "-z", base],
            &env,
        )
        .await?;
        let diff = if with_diff {
            Some(git::check(dir, &["diff", "--cached", "--no-renames", base], &env).await?)
        } else {
            None
        };
        Ok::<_, WorkspaceError>(build(&names, &nums, diff))
    }
    .await;
    let _ = std::fs::remove_file(&index);
    result
}

fn build(names: &str, nums: &str, diff: Option<String>) -> ChangeSummary {
    let mut files = Vec::new();
    let mut it = names.split('\0').filter(|s| !s.is_empty());
    while let (Some(status), Some(path)) = (it.next(), it.next()) {
        let kind = match status.chars().next() {
            Some('A') => ChangeKind::Added,
            Some('D') => ChangeKind::Deleted,
            _ => ChangeKind::Modified,
        };
        files.push(FileChange {
            path: path.to_owned(),
            kind,
            insertions: None,
            deletions: None,
        });
    }
    let (mut ins, mut del) = (0, 0);
    for rec in nums.split('\0').filter(|s| !s.is_empty()) {
        let mut parts = rec.splitn(3, '\t');
        let (Some(a), Some(d), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (a, d) = (a.parse::<u64>().ok(), d.parse::<u64>().ok());
        ins += a.unwrap_or(0);
        del += d.unwrap_or(0);
        if let Some(f) = files.iter_mut().find(|f| f.path == path) {
            f.insertions = a;
            f.deletions = d;
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    ChangeSummary {
        files,
        insertions: ins,
        deletions: del,
        diff,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn builds_from_name_status_and_numstat() {
        let s = build(
            "A\0new.txt\0M\0README.md\0D\0old\0",
            concat!("3\t0\tnew.txt\0", "1\t2\tREADME.md\0", "-\t-\told\0"),
            None,
        );
        assert_eq!(s.files.len(), 3);
        assert_eq!(s.files[0].path, "README.md");
        assert_eq!(s.files[0].kind, ChangeKind::Modified);
        assert_eq!(s.files[1].kind, ChangeKind::Added);
        assert_eq!(s.files[1].insertions, Some(3));
        assert_eq!(s.files[2].kind, ChangeKind::Deleted);
        assert_eq!(s.files[2].insertions, None);
        assert_eq!((s.insertions, s.deletions), (4, 2));
    }
}
