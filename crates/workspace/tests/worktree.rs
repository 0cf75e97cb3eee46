//! Git-worktree workspaces against the real `git` CLI in temp repositories.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use agent_adaptor_workspace::{
    ChangeKind, GitWorktreeSpec, ReleaseMode, Strategy, WorkspaceError, WorkspaceManager,
    WorkspaceRequest, WorkspaceSpec, summarize,
};
use common::{TempRepo, git};

fn request(
    t: &TempRepo,
    spec: GitWorktreeSpec,
    run: &str,
    thread: Option<&str>,
) -> WorkspaceRequest {
    WorkspaceRequest {
        base_dir: t.repo.clone(),
        spec: WorkspaceSpec::GitWorktree(spec),
        run_id: run.into(),
        thread: thread.map(Into::into),
    }
}

#[tokio::test]
async fn typed_errors_before_anything_is_created() {
    let t = TempRepo::new();
    let m = WorkspaceManager::new();

    let err = m
        .resolve(&request(
            &t,
            GitWorktreeSpec::new("no-such-ref", "agent/{run_id}"),
            "r1",
            None,
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(err, WorkspaceError::BaseRefNotFound { ref base_ref } if base_ref == "no-such-ref"),
        "{err:?}"
    );

    std::fs::write(t.repo.join("README.md"), "dirty\n").unwrap();
    let err = m
        .resolve(&request(
            &t,
            GitWorktreeSpec::new("HEAD", "agent/{run_id}").require_clean_base(true),
            "r1",
            None,
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(err, WorkspaceError::DirtyBase { count: 1, .. }),
        "{err:?}"
    );
    git(&t.repo, &["checkout", "--", "README.md"]);

    git(&t.repo, &["branch", "agent/taken"]);
    let err = m
        .resolve(&request(
            &t,
            GitWorktreeSpec::new("HEAD", "agent/{run_id}"),
            "taken",
            None,
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(err, WorkspaceError::BranchExists { ref branch } if branch == "agent/taken"),
        "{err:?}"
    );

    // A symlink inside the parent dir pointing elsewhere would put the
    // worktree outside it.
    let parent = t.dir.path().join("wts");
    let elsewhere = t.dir.path().join("elsewhere");
    std::fs::create_dir_all(&parent).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, parent.join("agent")).unwrap();
    let err = m
        .resolve(&request(
            &t,
            GitWorktreeSpec::new("HEAD", "agent/{run_id}").parent_dir(&parent),
            "r2",
            None,
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(err, WorkspaceError::PathOutsideParent { .. }),
        "{err:?}"
    );

    let err = m
        .resolve(&request(
            &t,
            GitWorktreeSpec::new("HEAD", "agent/{thread}"),
            "r3",
            None,
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(err, WorkspaceError::InvalidTemplate { .. }),
        "{err:?}"
    );

    let err = m
        .resolve(&WorkspaceRequest {
            base_dir: t.dir.path().join("elsewhere"),
            spec: WorkspaceSpec::GitWorktree(GitWorktreeSpec::new("HEAD", "agent/{run_id}")),
            run_id: "r4".into(),
            thread: None,
        })
        .await
        .unwrap_err();
    assert!(
        matches!(err, WorkspaceError::NotARepository { .. }),
        "{err:?}"
    );

    // Nothing was created by any refusal.
    assert_eq!(t.worktrees(), 1);
    assert!(m.leases(&t.repo).await.unwrap().is_empty());
    assert!(!t.branch_exists("agent/r1") && !t.branch_exists("agent/r2"));
}

#[tokio::test]
async fn run_worktree_reports_lease_and_changes_and_is_removed_when_clean() {
    let t = TempRepo::new();
    let m = WorkspaceManager::new();
    let lease = m
        .resolve(&request(
            &t,
            GitWorktreeSpec::new("main", "agent/{run_id}"),
            "run-7",
            None,
        ))
        .await
        .unwrap();
    assert_eq!(lease.strategy, Strategy::GitWorktree);
    assert_eq!(lease.branch.as_deref(), Some("agent/run-7"));
    assert_eq!(
        lease.base_commit.as_deref(),
        Some(git(&t.repo, &["rev-parse", "main"]).trim())
    );
    assert!(lease.path.starts_with(t.dir.path().join("repo.worktrees")));
    assert!(lease.path.join("README.md").is_file());

    std::fs::write(lease.path.join("README.md"), "# demo\nmore\n").unwrap();
    std::fs::write(lease.path.join("new.txt"), "a\nb\n").unwrap();
    std::fs::remove_file(lease.path.join("old.txt")).unwrap();
    let s = summarize(&lease, true).await.unwrap();
    let got: Vec<_> = s.files.iter().map(|f| (f.path.as_str(), f.kind)).collect();
    assert_eq!(
        got,
        [
            ("README.md", ChangeKind::Modified),
            ("new.txt", ChangeKind::Added),
            ("old.txt", ChangeKind::Deleted)
        ]
    );
    assert_eq!((s.insertions, s.deletions), (3, 1));
    assert!(s.diff.as_deref().is_some_and(|d| d.contains("+more")));
    // The worktree's own index was not touched by the summary.
    assert!(
        git(&lease.path, &["diff", "--cached", "--name-only"])
            .trim()
            .is_empty()
    );
    // The main checkout is untouched.
    assert!(t.status().is_empty());

    let err = m.release(&lease, ReleaseMode::Remove).await.unwrap_err();
    assert!(
        matches!(err, WorkspaceError::UncommittedChanges { count: 3, .. }),
        "{err:?}"
    );
    assert!(lease.path.is_dir());

    git(&lease.path, &["checkout", "--", "."]);
    std::fs::remove_file(lease.path.join("new.txt")).unwrap();
    m.release(&lease, ReleaseMode::Remove).await.unwrap();
    assert!(!lease.path.exists());
    assert!(!t.branch_exists("agent/run-7"));
    assert_eq!(t.worktrees(), 1);
    assert!(m.leases(&t.repo).await.unwrap().is_empty());
}

#[tokio::test]
async fn thread_keeps_its_worktree_and_deletion_refuses_to_lose_work() {
    let t = TempRepo::new();
    let m = WorkspaceManager::new();
    let spec = GitWorktreeSpec::new("main", "agent/{thread}");
    let first = m
        .resolve(&request(&t, spec.clone(), "turn-1", Some("th/1")))
        .await
        .unwrap();
    assert_eq!(first.branch.as_deref(), Some("agent/th-1"));
    std::fs::write(first.path.join("notes.md"), "turn one\n").unwrap();

    let second = m
        .resolve(&request(&t, spec.clone(), "turn-2", Some("th/1")))
        .await
        .unwrap();
    assert_eq!(second, first, "the second turn gets the same lease");
    assert_eq!(
        std::fs::read_to_string(second.path.join("notes.md")).unwrap(),
        "turn one\n"
    );
    assert_eq!(
        m.thread_lease(&t.repo, "th/1").await.unwrap(),
        Some(first.clone())
    );

    // Uncommitted work: refused.
    let err = m.release(&first, ReleaseMode::Remove).await.unwrap_err();
    assert!(
        matches!(err, WorkspaceError::UncommittedChanges { .. }),
        "{err:?}"
    );

    // Committed but not merged nor pushed: refused.
    git(&first.path, &["add", "-A"]);
    git(&first.path, &["commit", "-q", "-m", "turn one"]);
    let err = m.release(&first, ReleaseMode::Remove).await.unwrap_err();
    assert!(
        matches!(err, WorkspaceError::UnmergedCommits { count: 1, .. }),
        "{err:?}"
    );
    assert!(first.path.is_dir() && t.branch_exists("agent/th-1"));

    // Merged into the base: removed, with its branch.
    git(&t.repo, &["merge", "-q", "--ff-only", "agent/th-1"]);
    m.release(&first, ReleaseMode::Remove).await.unwrap();
    assert!(!first.path.exists());
    assert!(!t.branch_exists("agent/th-1"));
    assert_eq!(m.thread_lease(&t.repo, "th/1").await.unwrap(), None);
}

#[tokio::test]
async fn concurrent_worktrees_do_not_see_each_other() {
    let t = TempRepo::new();
    let m = WorkspaceManager::new();
    let spec = GitWorktreeSpec::new("HEAD", "agent/{thread}");
    let (ra, rb) = (
        request(&t, spec.clone(), "ra", Some("a")),
        request(&t, spec.clone(), "rb", Some("b")),
    );
    let (a, b) = tokio::join!(m.resolve(&ra), m.resolve(&rb));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_ne!(a.path, b.path);
    std::fs::write(a.path.join("README.md"), "# demo\nfrom a\n").unwrap();
    std::fs::write(b.path.join("README.md"), "# demo\nfrom b\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(a.path.join("README.md")).unwrap(),
        "# demo\nfrom a\n"
    );
    for lease in [&a, &b] {
        let s = summarize(lease, false).await.unwrap();
        let names: Vec<_> = s.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(names, ["README.md"]);
    }
    assert!(t.status().is_empty());
    assert_eq!(
        std::fs::read_to_string(t.repo.join("README.md")).unwrap(),
        "# demo\n"
    );
}

#[tokio::test]
async fn temp_and_shared_workspaces() {
    let t = TempRepo::new();
    let m = WorkspaceManager::new();
    let shared = m
        .resolve(&WorkspaceRequest {
            base_dir: t.repo.clone(),
            spec: WorkspaceSpec::Shared,
            run_id: "r".into(),
            thread: None,
        })
        .await
        .unwrap();
    assert_eq!(shared.path, t.repo);
    m.release(&shared, ReleaseMode::Remove).await.unwrap();
    assert!(t.repo.is_dir(), "a shared workspace is never removed");

    let temp = m
        .resolve(&WorkspaceRequest {
            base_dir: t.repo.clone(),
            spec: WorkspaceSpec::Temp,
            run_id: "r".into(),
            thread: None,
        })
        .await
        .unwrap();
    assert!(temp.path.is_dir() && temp.path != t.repo);
    m.release(&temp, ReleaseMode::Remove).await.unwrap();
    assert!(!temp.path.exists());
}
