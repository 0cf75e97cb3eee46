//! The start-up sweep: leases whose owning host process is gone (it was
//! killed mid-run) are found, and reclaimed only when that loses nothing.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::WorkspaceError;
use crate::lease::{LeaseDir, WorkspaceLease};
use crate::manager::check_removable;
use crate::repo::Repo;

/// What became of one orphaned lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum OrphanState {
    /// Clean and fully merged: worktree, branch and lease removed.
    Reclaimed,
    /// Found but left alone (reclaiming was not asked for).
    Reported,
    /// Kept: removing it would lose work (uncommitted changes or commits
    /// neither merged nor pushed). The reason is the refusal's text.
    KeptWork {
        /// Why it was kept.
        reason: String,
    },
    /// The worktree directory no longer exists; the lease was forgotten.
    Missing,
}

/// One orphaned lease and what the sweep did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Orphan {
    /// The lease as recorded.
    pub lease: WorkspaceLease,
    /// What happened to it.
    pub state: OrphanState,
}

/// Everything one sweep found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepReport {
    /// Leases whose owner is gone.
    pub orphans: Vec<Orphan>,
    /// Leases whose owner still runs, that belong to a thread, or that a
    /// finished run's host kept.
    pub live: usize,
}

/// Find the leases of `base_dir`'s repository whose owning host process is
/// gone. With `reclaim`, remove those that hold no work; never remove one
/// with uncommitted changes or unmerged, unpushed commits.
///
/// # Errors
///
/// Not a repository, an unreadable lease file, or a git failure.
pub async fn sweep(base_dir: &Path, reclaim: bool) -> Result<SweepReport, WorkspaceError> {
    let repo = Repo::of(base_dir).await?;
    let leases = LeaseDir::new(&repo.common_dir);
    let mut report = SweepReport::default();
    for lease in leases.list()? {
        if lease.owner.is_alive() {
            report.live += 1;
            continue;
        }
        let state = if !lease.path.is_dir() {
            repo.remove_worktree(&lease.path, None).await?;
            match check_removable(&repo, &lease).await {
                Ok(()) => {
                    repo.remove_worktree(&lease.path, lease.branch.as_deref())
                        .await?;
                }
                Err(WorkspaceError::UnmergedCommits { .. }) => {}
                Err(e) => return Err(e),
            }
            leases.remove(&lease.id)?;
            OrphanState::Missing
        } else {
            match check_removable(&repo, &lease).await {
                Err(
                    e @ (WorkspaceError::UncommittedChanges { .. }
                    | WorkspaceError::UnmergedCommits { .. }),
                ) => OrphanState::KeptWork {
                    reason: e.to_string(),
                },
                Err(e) => return Err(e),
                Ok(()) if reclaim => {
                    repo.remove_worktree(&lease.path, lease.branch.as_deref())
                        .await?;
                    leases.remove(&lease.id)?;
                    OrphanState::Reclaimed
                }
                Ok(()) => OrphanState::Reported,
            }
        };
        report.orphans.push(Orphan { lease, state });
    }
    Ok(report)
}
