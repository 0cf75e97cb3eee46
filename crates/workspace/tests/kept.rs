//! A finished run's worktree is kept (it holds the run's work) and tracked:
//! listed as `Kept`, never swept, removed by `WorkspaceManager::remove`
//! only when that loses nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;

use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::{Agent, Runner};
use agent_adaptor_workspace::{
    GitWorktreeSpec, LeaseOwner, WorkspaceError, WorkspaceManager, WorkspaceRequest,
    WorkspaceResources, WorkspaceSpec, sweep,
};
use common::editor::Editor;
use common::{TempRepo, git};

fn worktree_spec(template: &str) -> WorkspaceSpec {
    WorkspaceSpec::GitWorktree(GitWorktreeSpec::new("HEAD", template))
}

#[tokio::test]
async fn a_runs_kept_worktree_is_listed_not_swept_and_removed_safely() {
    let t = TempRepo::new();
    let agent = Agent::builder(Editor(ScriptedDriver::text_reply("done")))
        .resources(Arc::new(
            WorkspaceResources::new(worktree_spec("agent/{run_id}")).base_dir(&t.repo),
        ))
        .build()
        .unwrap();
    let r = agent.run("an edit").await.unwrap();
    let ws = r.workspace().unwrap().clone();
    let branch = ws.branch.clone().unwrap();

    let m = WorkspaceManager::new();
    let leases = m.leases(&t.repo).await.unwrap();
    assert_eq!(leases.len(), 1, "the kept worktree is tracked");
    assert!(
        matches!(&leases[0].owner, LeaseOwner::Kept { run_id } if *run_id == r.run_id),
        "{:?}",
        leases[0].owner
    );
    assert_eq!(leases[0].path, ws.path);

    // The start-up sweep leaves it alone, even reclaiming.
    let report = sweep(&t.repo, true).await.unwrap();
    assert!(report.orphans.is_empty(), "{report:?}");
    assert_eq!(report.live, 1);
    assert!(ws.path.is_dir());

    // It holds the run's uncommitted edit: refused.
    let err = m.remove(&t.repo, &branch).await.unwrap_err();
    assert!(
        matches!(err, WorkspaceError::UncommittedChanges { .. }),
        "{err:?}"
    );
    git(&ws.path, &["commit", "-qam", "run work"]);
    let err = m
        .remove(&t.repo, ws.path.to_str().unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(err, WorkspaceError::UnmergedCommits { .. }),
        "{err:?}"
    );
    assert!(ws.path.is_dir() && t.branch_exists(&branch));

    // Merged: removed by its lease id, branch and lease with it.
    git(&t.repo, &["merge", "-q", "--ff-only", &branch]);
    let removed = m.remove(&t.repo, &leases[0].id).await.unwrap();
    assert_eq!(removed.path, ws.path);
    assert!(!ws.path.exists());
    assert!(!t.branch_exists(&branch));
    assert!(m.leases(&t.repo).await.unwrap().is_empty());
}

#[tokio::test]
async fn remove_refuses_what_is_not_a_finished_runs() {
    let t = TempRepo::new();
    let m = WorkspaceManager::new();
    let err = m.remove(&t.repo, "agent/none").await.unwrap_err();
    assert!(matches!(err, WorkspaceError::NoSuchLease { .. }), "{err:?}");

    let thread = m
        .resolve(&WorkspaceRequest {
            base_dir: t.repo.clone(),
            spec: worktree_spec("agent/{thread}"),
            run_id: "r1".into(),
            thread: Some("t1".into()),
        })
        .await
        .unwrap();
    let err = m.remove(&t.repo, "agent/t1").await.unwrap_err();
    assert!(
        matches!(&err, WorkspaceError::NotRemovable { why, .. } if why.contains("thread \"t1\"")),
        "{err:?}"
    );
    assert!(thread.path.is_dir());

    // A run of this (live) process still works in it.
    let running = m
        .resolve(&WorkspaceRequest {
            base_dir: t.repo.clone(),
            spec: worktree_spec("agent/{run_id}"),
            run_id: "r2".into(),
            thread: None,
        })
        .await
        .unwrap();
    let err = m.remove(&t.repo, "agent/r2").await.unwrap_err();
    assert!(
        matches!(&err, WorkspaceError::NotRemovable { why, .. } if why.contains("still works")),
        "{err:?}"
    );
    assert!(running.path.is_dir());
}
