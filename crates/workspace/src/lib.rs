//! # agent-adaptor-workspace — where a run works, and what it needs running
//!
//! * **Workspaces.** A [`WorkspaceSpec`] (shared base directory, a git
//!   worktree on a new branch, a temporary directory, or driver-managed) is
//!   resolved by the [`WorkspaceManager`] to a [`WorkspaceLease`] before the
//!   agent is launched, and released (kept or removed) after. A thread's
//!   worktree is reused by its later turns and removed with the thread —
//!   only when that loses no uncommitted change and no unmerged, unpushed
//!   commit. A run's own worktree is kept after the run (it holds the run's
//!   work), tracked as [`LeaseOwner::Kept`] until [`WorkspaceManager::remove`]
//!   deletes it under the same rule. Lease files live in the repository's
//!   common git directory, so a [`sweep`] on start finds worktrees whose host
//!   process died.
//!   [`summarize`] says what a run changed against its base commit.
//! * **Services.** The [`ServiceManager`] ensures the services a run needs
//!   (command, env, readiness by TCP or HTTP) before launch, reuses them by
//!   labels, releases them by run or label, and turns what it saw into
//!   [`RuntimeServiceReport`](agent_adaptor_driver::RuntimeServiceReport)s.
//!
//! All git work goes through the `git` CLI, run by the process helper with an
//! allowlisted environment. This crate never parses provider output and
//! never touches a thread store: callers (core, the CLI) decide when.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agent_adaptor_workspace::WorkspaceError> {
//! use agent_adaptor_workspace::*;
//! let manager = WorkspaceManager::new();
//! let lease = manager
//!     .resolve(&WorkspaceRequest {
//!         base_dir: "/src/project".into(),
//!         spec: WorkspaceSpec::GitWorktree(GitWorktreeSpec::new("HEAD", "agent/{run_id}")),
//!         run_id: "run-1".into(),
//!         thread: None,
//!     })
//!     .await?;
//! // … run the agent in lease.path …
//! let changes = summarize(&lease, false).await?;
//! println!("{} files changed", changes.files.len());
//! manager.release(&lease, ReleaseMode::Keep).await?;
//! # Ok(()) }
//! ```

#![cfg(unix)]

mod changes;
mod discard;
mod error;
mod git;
mod lease;
mod manager;
mod owner;
mod repo;
mod resources;
mod services;
mod spec;
mod sweep;

pub use changes::{ChangeKind, ChangeSummary, FileChange, summarize};
pub use error::WorkspaceError;
pub use lease::{Strategy, WorkspaceLease};
pub use manager::{ReleaseMode, WorkspaceManager};
pub use owner::LeaseOwner;
pub use resources::{WorkspaceResources, report_of};
pub use services::{Lifecycle, Readiness, ServiceError, ServiceManager, ServiceRef, ServiceSpec};
pub use spec::{GitWorktreeSpec, WorkspaceRequest, WorkspaceSpec};
pub use sweep::{Orphan, OrphanState, SweepReport, sweep};
