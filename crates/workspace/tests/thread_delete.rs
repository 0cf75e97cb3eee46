//! Deleting a thread through the library (`Thread::delete`) releases its
//! worktree: removed with its branch when that loses nothing, refused with
//! a typed error — and the thread kept — when it holds work.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;

use agent_adaptor_core::driver::Driver;
use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::{Agent, Error, MemoryStore, Runner, Thread};
use agent_adaptor_workspace::{
    GitWorktreeSpec, WorkspaceError, WorkspaceManager, WorkspaceResources, WorkspaceSpec,
};
use common::editor::Editor;
use common::{TempRepo, git};

fn agent(t: &TempRepo, driver: impl Driver) -> Agent {
    let spec = WorkspaceSpec::GitWorktree(GitWorktreeSpec::new("HEAD", "agent/{thread}"));
    Agent::builder(driver)
        .thread_store(Arc::new(MemoryStore::new()))
        .resources(Arc::new(WorkspaceResources::new(spec).base_dir(&t.repo)))
        .build()
        .unwrap()
}

/// The typed cause of a refused delete.
fn refusal(err: &Error) -> &WorkspaceError {
    let Error::Resources(cause) = err else {
        panic!("unexpected {err:?}")
    };
    cause
        .downcast_ref::<WorkspaceError>()
        .unwrap_or_else(|| panic!("not a workspace error: {cause:?}"))
}

async fn has_record(thread: &Thread) -> bool {
    thread.checkpoint().await.unwrap().is_some()
}

#[tokio::test]
async fn deleting_a_clean_thread_removes_its_worktree_and_branch() {
    let t = TempRepo::new();
    // A scripted reply changes nothing in the worktree.
    let agent = agent(&t, ScriptedDriver::resumable_reply("done", "s1"));
    let thread = agent.thread("clean");
    let ws = thread.run("hi").await.unwrap().workspace().unwrap().clone();
    assert!(ws.path.is_dir());
    assert!(t.branch_exists("agent/clean"));

    assert_eq!(thread.delete().await.unwrap(), 1, "one record deleted");
    assert!(!ws.path.exists(), "the worktree is removed");
    assert!(!t.branch_exists("agent/clean"), "its branch is deleted");
    assert_eq!(t.worktrees(), 1);
    assert!(!has_record(&thread).await);
    let m = WorkspaceManager::new();
    assert!(m.thread_lease(&t.repo, "clean").await.unwrap().is_none());
}

#[tokio::test]
async fn deleting_a_thread_with_work_is_refused_and_keeps_the_thread() {
    let t = TempRepo::new();
    let agent = agent(&t, Editor(ScriptedDriver::resumable_reply("done", "s1")));
    let thread = agent.thread("busy");
    let ws = thread
        .run("an edit")
        .await
        .unwrap()
        .workspace()
        .unwrap()
        .clone();

    // Uncommitted change: refused, nothing deleted.
    let err = thread.delete().await.unwrap_err();
    assert!(
        matches!(refusal(&err), WorkspaceError::UncommittedChanges { .. }),
        "{err:?}"
    );
    assert!(has_record(&thread).await, "the thread record is kept");
    assert!(ws.path.join("README.md").is_file());

    // Committed on the branch but neither merged nor pushed: refused.
    git(&ws.path, &["commit", "-qam", "agent work"]);
    let err = thread.delete().await.unwrap_err();
    assert!(
        matches!(refusal(&err), WorkspaceError::UnmergedCommits { .. }),
        "{err:?}"
    );
    assert!(has_record(&thread).await);
    assert!(t.branch_exists("agent/busy"));

    // Merged into the base: the work is safe, the delete goes through.
    git(&t.repo, &["merge", "-q", "--ff-only", "agent/busy"]);
    assert_eq!(thread.delete().await.unwrap(), 1);
    assert!(!ws.path.exists());
    assert!(!t.branch_exists("agent/busy"));
    assert!(!has_record(&thread).await);
}

#[tokio::test]
async fn deleting_without_resources_deletes_the_record_only() {
    let driver = ScriptedDriver::resumable_reply("done", "s1");
    let agent = Agent::builder(driver)
        .thread_store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    let thread = agent.thread("plain");
    thread.run("hi").await.unwrap();
    assert_eq!(thread.delete().await.unwrap(), 1);
    assert_eq!(thread.delete().await.unwrap(), 0, "already gone");
}
