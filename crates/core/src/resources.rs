//! Run resources a host-side manager provides around the driver call: the
//! workspace a run works in (a git worktree per thread or run …) and the
//! runtime services it needs. Core owns *when* (resolved after the thread
//! lease and before the driver, released after the driver returned) and how
//! the outcome reaches [`RunResult`](crate::RunResult); the filesystem, git
//! and process work lives in a crate of its own (`agent-adaptor-workspace`)
//! behind [`RunResources`].

use std::path::PathBuf;
use std::sync::Arc;

use agent_adaptor_driver::RuntimeServiceReport;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// How one file changed against the workspace's base commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// New file.
    Added,
    /// Changed file.
    Modified,
    /// Removed file.
    Deleted,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Path relative to the workspace root.
    pub path: String,
    /// How it changed.
    pub kind: ChangeKind,
    /// Lines added (`None` for a binary file).
    pub insertions: Option<u64>,
    /// Lines removed (`None` for a binary file).
    pub deletions: Option<u64>,
}

/// Everything a run changed in its workspace against the base commit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSummary {
    /// The changed files, by path.
    pub files: Vec<FileChange>,
    /// Total lines added.
    pub insertions: u64,
    /// Total lines removed.
    pub deletions: u64,
    /// The unified diff, when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// The workspace a run worked in, and what it changed there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceReport {
    /// `shared`, `git_worktree`, `temp` or `driver_managed`.
    pub strategy: String,
    /// The directory the agent ran in.
    pub path: PathBuf,
    /// The worktree's branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The commit the branch started from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_commit: Option<String>,
    /// What the run changed (git workspaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<ChangeSummary>,
}

/// The run a [`RunResources`] call is about.
#[derive(Debug, Clone)]
pub struct ResourceRun {
    /// The run id.
    pub run_id: String,
    /// The thread key, for a thread turn.
    pub thread_key: Option<String>,
    /// The directory the run would otherwise work in
    /// ([`RunOptions::workspace`](crate::RunOptions::workspace)).
    pub base_dir: Option<PathBuf>,
}

/// What [`RunResources::prepare`] made ready.
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    /// The directory the driver runs in instead of the base dir.
    pub workspace: Option<WorkspaceReport>,
    /// The services ensured for the run (reported in
    /// [`RunResult::services`](crate::RunResult::services)).
    pub services: Vec<RuntimeServiceReport>,
}

/// The thread a [`RunResources::release_thread`] call is about.
#[derive(Debug, Clone)]
pub struct ResourceThread {
    /// The thread key.
    pub key: String,
    /// The directory the thread's runs would otherwise work in (the agent's
    /// default [`RunOptions::workspace`](crate::RunOptions::workspace)).
    pub base_dir: Option<PathBuf>,
}

/// What a [`RunResources`]'s workspace needs the driver to carry
/// ([`Descriptor::workspace`](agent_adaptor_driver::Descriptor::workspace));
/// core refuses a run whose driver does not declare it, before anything
/// starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkspaceNeed {
    /// Nothing of the driver: the run works in the base directory, as it
    /// would without the manager.
    #[default]
    None,
    /// The agent must work in the directory `prepare` resolves (a git
    /// worktree, a temporary directory).
    Directory,
    /// The driver provides the workspace itself.
    DriverManaged,
}

/// Refuse a run whose driver cannot carry what `need` asks for.
pub(crate) fn check_carried(
    need: WorkspaceNeed,
    descriptor: &agent_adaptor_driver::Descriptor,
) -> Result<(), crate::Error> {
    let missing = match need {
        WorkspaceNeed::None => None,
        WorkspaceNeed::Directory if !descriptor.workspace.directory => {
            Some("a workspace directory")
        }
        WorkspaceNeed::DriverManaged if !descriptor.workspace.driver_managed => {
            Some("a driver-managed workspace")
        }
        WorkspaceNeed::Directory | WorkspaceNeed::DriverManaged => None,
    };
    match missing {
        None => Ok(()),
        Some(capability) => Err(crate::Error::CapabilityUnsupported {
            driver: descriptor.driver_type.clone(),
            capability,
        }),
    }
}

/// A resource manager's failure, kept as its typed cause (downcast it).
pub type ResourceError = Arc<dyn std::error::Error + Send + Sync>;

/// A host-side manager of run resources (workspace, services).
///
/// `prepare` runs before the driver is entered (a failure means the driver
/// is never called); `finish` runs after the driver returned, whatever the
/// outcome, and reports the workspace with its changes.
pub trait RunResources: Send + Sync + 'static {
    /// What the workspace this manager resolves needs of the driver
    /// (checked before every run, against the driver's descriptor). The
    /// default needs nothing.
    fn workspace_need(&self) -> WorkspaceNeed {
        WorkspaceNeed::None
    }

    /// Resolve the workspace and ensure the services of `run`.
    fn prepare<'a>(
        &'a self,
        run: &'a ResourceRun,
    ) -> BoxFuture<'a, Result<Prepared, ResourceError>>;

    /// Release what `prepare` took; `succeeded` tells how the run ended.
    fn finish<'a>(
        &'a self,
        run: &'a ResourceRun,
        prepared: &'a Prepared,
        succeeded: bool,
    ) -> BoxFuture<'a, Result<Option<WorkspaceReport>, ResourceError>>;

    /// The thread is being deleted
    /// ([`Thread::delete`](crate::Thread::delete)): release what it holds
    /// across turns (its worktree). Refuse with a typed error when that
    /// would lose work; the thread's record is then kept. The default holds
    /// nothing per thread.
    fn release_thread<'a>(
        &'a self,
        thread: &'a ResourceThread,
    ) -> BoxFuture<'a, Result<(), ResourceError>> {
        let _ = thread;
        Box::pin(std::future::ready(Ok(())))
    }
}
