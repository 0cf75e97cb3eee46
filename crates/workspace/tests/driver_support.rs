//! Refuse, never drop: a workspace the driver does not declare it carries
//! (`Descriptor::workspace`) is refused with a typed error before anything
//! is created or spawned; `DriverManaged` reaches a driver that declares it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;

use agent_adaptor_core::driver::Descriptor;
use agent_adaptor_core::scripted::ScriptedDriver;
use agent_adaptor_core::{Agent, Error, Runner};
use agent_adaptor_workspace::{GitWorktreeSpec, WorkspaceResources, WorkspaceSpec};
use common::TempRepo;

/// A scripted driver declaring `directory` and `driver_managed` as given.
fn driver(directory: bool, driver_managed: bool) -> ScriptedDriver {
    let mut d = Descriptor::new("plain", "Ignores the workspace");
    d.workspace.directory = directory;
    d.workspace.driver_managed = driver_managed;
    ScriptedDriver::text_reply("done").with_descriptor(d)
}

fn agent(t: &TempRepo, driver: ScriptedDriver, spec: WorkspaceSpec) -> Agent {
    Agent::builder(driver)
        .resources(Arc::new(WorkspaceResources::new(spec).base_dir(&t.repo)))
        .build()
        .unwrap()
}

fn assert_refused(err: &Error, what: &str) {
    match err {
        Error::CapabilityUnsupported { driver, capability } => {
            assert_eq!(driver, "plain");
            assert_eq!(*capability, what);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn a_worktree_for_a_driver_that_ignores_the_workspace_is_refused() {
    let t = TempRepo::new();
    let d = driver(false, false);
    let spec = WorkspaceSpec::GitWorktree(GitWorktreeSpec::new("HEAD", "agent/{run_id}"));
    let err = agent(&t, d.clone(), spec).run("hi").await.unwrap_err();
    assert_refused(&err, "a workspace directory");
    assert!(d.recorded_requests().is_empty(), "the driver never ran");
    assert_eq!(t.worktrees(), 1, "no worktree was created");
    assert!(!t.dir.path().join("repo.worktrees").exists());
}

#[tokio::test]
async fn a_temp_workspace_is_refused_the_same_way() {
    let t = TempRepo::new();
    let d = driver(false, false);
    let err = agent(&t, d.clone(), WorkspaceSpec::Temp)
        .run("hi")
        .await
        .unwrap_err();
    assert_refused(&err, "a workspace directory");
    assert!(d.recorded_requests().is_empty());
}

#[tokio::test]
async fn shared_needs_nothing_of_the_driver() {
    let t = TempRepo::new();
    let d = driver(false, false);
    let r = agent(&t, d.clone(), WorkspaceSpec::Shared)
        .run("hi")
        .await
        .unwrap();
    assert_eq!(r.workspace().unwrap().strategy, "shared");
    assert_eq!(d.recorded_requests().len(), 1);
}

#[tokio::test]
async fn driver_managed_is_refused_unless_declared_and_passed_through_when_it_is() {
    let t = TempRepo::new();
    let d = driver(true, false);
    let err = agent(&t, d.clone(), WorkspaceSpec::DriverManaged)
        .run("hi")
        .await
        .unwrap_err();
    assert_refused(&err, "a driver-managed workspace");
    assert!(d.recorded_requests().is_empty());

    let d = driver(false, true);
    let r = agent(&t, d.clone(), WorkspaceSpec::DriverManaged)
        .run("hi")
        .await
        .unwrap();
    assert_eq!(r.workspace().unwrap().strategy, "driver_managed");
    let requests = d.recorded_requests();
    assert!(requests[0].driver_managed_workspace, "the driver is asked");
}

#[tokio::test]
async fn every_agent_cli_driver_declares_the_workspace_directory() {
    use agent_adaptor_core::driver::Driver;
    use agent_adaptor_drivers::{acp, claude, codebuddy, codex, cursor, gemini};
    for d in [
        claude::driver(claude::config()).descriptor(),
        codebuddy::driver(codebuddy::config()).descriptor(),
        codex::driver(codex::Config::default()).descriptor(),
        cursor::driver(cursor::Config::default()).descriptor(),
        gemini::driver(gemini::Config::default()).descriptor(),
        acp::driver(acp::Config::default()).descriptor(),
    ] {
        assert!(d.workspace.directory, "{}", d.driver_type);
        assert!(!d.workspace.driver_managed, "{}", d.driver_type);
    }
}
