//! Workspaces and services through core: an Agent with
//! [`WorkspaceResources`] runs each thread turn in the thread's worktree and
//! reports the lease and the changes in `RunResult::workspace()`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::{Agent, ChangeKind, Error, MemoryStore, RunOptions, Runner};
use agent_adaptor_workspace::{
    GitWorktreeSpec, Readiness, ReleaseMode, ServiceManager, ServiceSpec, WorkspaceError,
    WorkspaceManager, WorkspaceResources, WorkspaceSpec,
};
use common::TempRepo;
use common::editor::Editor;

const FIXTURE: &str = env!("CARGO_BIN_EXE_agent-adaptor-workspace-fixture");

fn agent(t: &TempRepo, resources: WorkspaceResources) -> Agent {
    Agent::builder(Editor(ScriptedDriver::resumable_reply("done", "s1")))
        .thread_store(Arc::new(MemoryStore::new()))
        .resources(Arc::new(resources.base_dir(&t.repo)))
        .build()
        .unwrap()
}

#[tokio::test]
async fn thread_turns_share_one_worktree_and_report_changes() {
    let t = TempRepo::new();
    let agent = agent(
        &t,
        WorkspaceResources::new(WorkspaceSpec::GitWorktree(GitWorktreeSpec::new(
            "HEAD",
            "agent/{thread}",
        ))),
    );
    let thread = agent.thread("t1");
    let first = thread.run("turn one").await.unwrap();
    let ws = first.workspace().expect("a workspace report").clone();
    assert_eq!(ws.strategy, "git_worktree");
    assert_eq!(ws.branch.as_deref(), Some("agent/t1"));
    assert_eq!(
        ws.base_commit.as_deref(),
        Some(common::git(&t.repo, &["rev-parse", "HEAD"]).trim())
    );
    let changes = ws.changes.as_ref().unwrap();
    assert_eq!(changes.files.len(), 1);
    assert_eq!(
        (changes.files[0].path.as_str(), changes.files[0].kind),
        ("README.md", ChangeKind::Modified)
    );
    assert_eq!(changes.insertions, 1);

    let second = thread.run("turn two").await.unwrap();
    let ws2 = second.workspace().unwrap();
    assert_eq!(
        ws2.path, ws.path,
        "the second turn runs in the same worktree"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path.join("README.md")).unwrap(),
        "# demo\nturn one\nturn two\n"
    );
    assert_eq!(ws2.changes.as_ref().unwrap().insertions, 2);
    // The main checkout is untouched.
    assert!(t.status().is_empty());
    assert_eq!(
        std::fs::read_to_string(t.repo.join("README.md")).unwrap(),
        "# demo\n"
    );

    // Deleting the thread's worktree refuses while it holds uncommitted work.
    let m = WorkspaceManager::new();
    let lease = m.thread_lease(&t.repo, "t1").await.unwrap().unwrap();
    let err = m.release(&lease, ReleaseMode::Remove).await.unwrap_err();
    assert!(
        matches!(err, WorkspaceError::UncommittedChanges { .. }),
        "{err:?}"
    );
    assert!(ws.path.is_dir());
}

#[tokio::test]
async fn resolve_failure_means_the_driver_is_never_called() {
    let t = TempRepo::new();
    let driver = ScriptedDriver::text_reply("done");
    let agent = Agent::builder(driver.clone())
        .resources(Arc::new(
            WorkspaceResources::new(WorkspaceSpec::GitWorktree(GitWorktreeSpec::new(
                "nope",
                "agent/{run_id}",
            )))
            .base_dir(&t.repo),
        ))
        .build()
        .unwrap();
    let err = agent.run("hi").await.unwrap_err();
    let Error::Resources(cause) = &err else {
        panic!("unexpected {err:?}")
    };
    assert!(
        matches!(
            cause.downcast_ref::<WorkspaceError>(),
            Some(WorkspaceError::BaseRefNotFound { .. })
        ),
        "{cause:?}"
    );
    assert!(driver.recorded_requests().is_empty());
    assert_eq!(t.worktrees(), 1);
}

#[tokio::test]
async fn services_are_ready_before_the_driver_and_reported() {
    let t = TempRepo::new();
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let services = ServiceManager::new();
    let spec = ServiceSpec::new("web", FIXTURE, Readiness::Tcp(addr.clone()))
        .args(["listen", &addr, count.to_str().unwrap()])
        .label("repo", "demo")
        .secret_env("SERVICE_TOKEN", "s3cr3t-value");
    let agent = agent(
        &t,
        WorkspaceResources::new(WorkspaceSpec::Shared).service(&services, spec),
    );
    for _ in 0..3 {
        let r = agent.run_with("hi", RunOptions::new()).await.unwrap();
        assert_eq!(r.services().len(), 1);
        assert_eq!(r.services()[0].name, "web");
        assert_eq!(r.services()[0].endpoint.as_deref(), Some(addr.as_str()));
        assert!(!format!("{:?}", r.services()).contains("s3cr3t"));
        assert_eq!(r.workspace().unwrap().strategy, "shared");
    }
    assert_eq!(
        std::fs::read_to_string(&count).unwrap(),
        "start\n",
        "started once for three runs"
    );

    // A service that never becomes ready fails the run before the driver.
    let driver = ScriptedDriver::text_reply("done");
    let stall = ServiceSpec::new("db", FIXTURE, Readiness::Tcp("127.0.0.1:1".into()))
        .args(["stall"])
        .ready_timeout(Duration::from_millis(500));
    let agent = Agent::builder(driver.clone())
        .resources(Arc::new(
            WorkspaceResources::new(WorkspaceSpec::Shared)
                .base_dir(&t.repo)
                .service(&ServiceManager::new(), stall),
        ))
        .build()
        .unwrap();
    let err = agent.run("hi").await.unwrap_err();
    assert!(err.to_string().contains("boom: cannot bind"), "{err}");
    assert!(driver.recorded_requests().is_empty());
}
