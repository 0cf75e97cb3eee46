//! [`WorkspaceManager`]: a spec → a lease before launch, and the lease
//! released (kept or removed) after.

use std::path::{Component, Path, PathBuf};

use crate::error::WorkspaceError;
use crate::git;
use crate::lease::{LeaseDir, Strategy, WorkspaceLease};
use crate::owner::LeaseOwner;
use crate::repo::Repo;
use crate::spec::{GitWorktreeSpec, WorkspaceRequest, WorkspaceSpec};

/// What to do with a lease's directory on release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseMode {
    /// Leave the directory (and branch) for the host. A run's worktree
    /// lease is kept, owned by [`LeaseOwner::Kept`], so listings find it and
    /// [`WorkspaceManager::remove`] can delete it; other leases are
    /// forgotten.
    Keep,
    /// Remove the directory (and the worktree's branch), refusing when that
    /// would lose uncommitted changes or unmerged, unpushed commits.
    Remove,
}

/// Resolves workspace specs to leases and releases them.
///
/// Stateless: everything it must remember across a crash is in the lease
/// files under the repository's common git dir.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceManager {
    _private: (),
}

impl WorkspaceManager {
    /// A manager.
    pub fn new() -> Self {
        WorkspaceManager::default()
    }

    /// Resolve `req` to a lease. A thread that already holds a worktree gets
    /// it back (its second turn runs where the first one left off).
    ///
    /// # Errors
    ///
    /// Typed, before anything is created: not a repository, a base ref that
    /// names no commit, a dirty base when the spec requires a clean one, a
    /// path outside the parent dir, a branch that already exists.
    pub async fn resolve(&self, req: &WorkspaceRequest) -> Result<WorkspaceLease, WorkspaceError> {
        let owner = match &req.thread {
            Some(key) => LeaseOwner::Thread { key: key.clone() },
            None => LeaseOwner::this_process(&req.run_id),
        };
        let passthrough = |strategy| WorkspaceLease {
            id: lease_id(),
            strategy,
            path: req.base_dir.clone(),
            repo: None,
            branch: None,
            base_ref: None,
            base_commit: None,
            owner: owner.clone(),
        };
        match &req.spec {
            WorkspaceSpec::Shared => Ok(passthrough(Strategy::Shared)),
            WorkspaceSpec::DriverManaged => Ok(passthrough(Strategy::DriverManaged)),
            WorkspaceSpec::Temp => {
                let dir = std::env::temp_dir().join(format!("agent-adaptor-ws-{}", lease_id()));
                std::fs::create_dir(&dir).map_err(WorkspaceError::Temp)?;
                let mut lease = passthrough(Strategy::Temp);
                lease.path = dir;
                Ok(lease)
            }
            WorkspaceSpec::GitWorktree(spec) => self.resolve_worktree(req, spec, owner).await,
        }
    }

    async fn resolve_worktree(
        &self,
        req: &WorkspaceRequest,
        spec: &GitWorktreeSpec,
        owner: LeaseOwner,
    ) -> Result<WorkspaceLease, WorkspaceError> {
        let repo = Repo::of(&req.base_dir).await?;
        let leases = LeaseDir::new(&repo.common_dir);
        if let Some(key) = &req.thread
            && let Some(lease) = leases.for_thread(key)?
            && lease.path.is_dir()
        {
            return Ok(lease);
        }
        let base_commit = git::resolve_commit(&repo.top, &spec.base_ref)
            .await?
            .ok_or_else(|| WorkspaceError::BaseRefNotFound {
                base_ref: spec.base_ref.clone(),
            })?;
        if spec.require_clean_base {
            let count = git::dirty_count(&req.base_dir).await?;
            if count > 0 {
                return Err(WorkspaceError::DirtyBase {
                    dir: req.base_dir.clone(),
                    count,
                });
            }
        }
        let branch = expand_template(&spec.branch_template, req)?;
        if !repo.valid_branch(&branch).await? {
            return Err(WorkspaceError::InvalidBranchName { branch });
        }
        let parent = match &spec.parent_dir {
            Some(p) => p.clone(),
            None => default_parent(&repo.top),
        };
        let path = contained_path(&parent, &branch)?;
        if repo.branch_exists(&branch).await? {
            return Err(WorkspaceError::BranchExists { branch });
        }
        let lease = WorkspaceLease {
            id: lease_id(),
            strategy: Strategy::GitWorktree,
            path: path.clone(),
            repo: Some(repo.top.clone()),
            branch: Some(branch.clone()),
            base_ref: Some(spec.base_ref.clone()),
            base_commit: Some(base_commit.clone()),
            owner,
        };
        // The lease is on disk before the worktree exists: a crash in between
        // leaves a lease whose worktree is missing, which the sweep forgets.
        leases.write(&lease)?;
        let p = path.to_string_lossy();
        let created = git::check(
            &repo.top,
            &["worktree", "add", "-b", &branch, p.as_ref(), &base_commit],
            &[],
        )
        .await;
        if let Err(e) = created {
            leases.remove(&lease.id)?;
            return Err(e);
        }
        Ok(lease)
    }

    /// Release a lease: keep its directory, or remove it safely.
    ///
    /// # Errors
    ///
    /// [`WorkspaceError::UncommittedChanges`] or
    /// [`WorkspaceError::UnmergedCommits`] when `Remove` would lose work
    /// (nothing is removed then), or a git failure.
    pub async fn release(
        &self,
        lease: &WorkspaceLease,
        mode: ReleaseMode,
    ) -> Result<(), WorkspaceError> {
        match lease.strategy {
            Strategy::Shared | Strategy::DriverManaged => Ok(()),
            Strategy::Temp => {
                if mode == ReleaseMode::Remove {
                    std::fs::remove_dir_all(&lease.path).map_err(WorkspaceError::Temp)?;
                }
                Ok(())
            }
            Strategy::GitWorktree => {
                let repo = Repo::of(lease.repo.as_deref().unwrap_or(&lease.path)).await?;
                let leases = LeaseDir::new(&repo.common_dir);
                if mode == ReleaseMode::Remove {
                    check_removable(&repo, lease).await?;
                    repo.remove_worktree(&lease.path, lease.branch.as_deref())
                        .await?;
                } else if let LeaseOwner::Run { run_id, .. } = &lease.owner {
                    let mut kept = lease.clone();
                    kept.owner = LeaseOwner::Kept {
                        run_id: run_id.clone(),
                    };
                    return leases.write(&kept);
                }
                leases.remove(&lease.id)
            }
        }
    }

    /// The worktree lease a thread holds in the repository of `base_dir`.
    ///
    /// # Errors
    ///
    /// Not a repository, or an unreadable lease file.
    pub async fn thread_lease(
        &self,
        base_dir: &Path,
        key: &str,
    ) -> Result<Option<WorkspaceLease>, WorkspaceError> {
        let repo = Repo::of(base_dir).await?;
        LeaseDir::new(&repo.common_dir).for_thread(key)
    }

    /// Remove the kept (or orphaned) run worktree `which` names — a lease
    /// id, a branch or a worktree path — with its branch and lease; refused
    /// when that would lose work. Returns the removed lease.
    ///
    /// # Errors
    ///
    /// [`WorkspaceError::NoSuchLease`]; [`WorkspaceError::NotRemovable`]
    /// for a thread's worktree (it goes with the thread) or one a live run
    /// works in; [`WorkspaceError::UncommittedChanges`] or
    /// [`WorkspaceError::UnmergedCommits`] (nothing is removed then).
    pub async fn remove(
        &self,
        base_dir: &Path,
        which: &str,
    ) -> Result<WorkspaceLease, WorkspaceError> {
        let lease = self
            .leases(base_dir)
            .await?
            .into_iter()
            .find(|l| {
                l.id == which || l.branch.as_deref() == Some(which) || l.path == Path::new(which)
            })
            .ok_or_else(|| WorkspaceError::NoSuchLease {
                which: which.to_owned(),
            })?;
        let why = match &lease.owner {
            LeaseOwner::Thread { key } => Some(format!(
                "it belongs to thread {key:?} (deleting the thread removes it)"
            )),
            owner @ LeaseOwner::Run { run_id, .. } if owner.is_alive() => {
                Some(format!("run {run_id} still works in it"))
            }
            _ => None,
        };
        if let Some(why) = why {
            return Err(WorkspaceError::NotRemovable {
                path: lease.path.clone(),
                why,
            });
        }
        self.release(&lease, ReleaseMode::Remove).await?;
        Ok(lease)
    }

    /// Every lease recorded for the repository of `base_dir`.
    ///
    /// # Errors
    ///
    /// Not a repository, or an unreadable lease file.
    pub async fn leases(&self, base_dir: &Path) -> Result<Vec<WorkspaceLease>, WorkspaceError> {
        let repo = Repo::of(base_dir).await?;
        LeaseDir::new(&repo.common_dir).list()
    }
}

/// Refuse removal when it would lose work.
pub(crate) async fn check_removable(
    repo: &Repo,
    lease: &WorkspaceLease,
) -> Result<(), WorkspaceError> {
    if lease.path.is_dir() {
        let count = git::dirty_count(&lease.path).await?;
        if count > 0 {
            return Err(WorkspaceError::UncommittedChanges {
                path: lease.path.clone(),
                count,
            });
        }
    }
    if let (Some(branch), Some(base_ref)) = (&lease.branch, &lease.base_ref)
        && repo.branch_exists(branch).await?
    {
        let count = repo.unmerged_commits(branch, base_ref).await?;
        if count > 0 {
            return Err(WorkspaceError::UnmergedCommits {
                branch: branch.clone(),
                base_ref: base_ref.clone(),
                count,
            });
        }
    }
    Ok(())
}

/// A fresh random lease id.
fn lease_id() -> String {
    format!("ws-{:016x}", rand::random::<u64>())
}

/// `<repo>/../<name>.worktrees`.
fn default_parent(top: &Path) -> PathBuf {
    let name = top
        .file_name()
        .map_or_else(|| "repo".into(), |n| n.to_string_lossy().into_owned());
    top.parent()
        .unwrap_or(top)
        .join(format!("{name}.worktrees"))
}

/// Replace `{thread}` and `{run_id}`; characters git refuses in a ref
/// component become `-`.
fn expand_template(template: &str, req: &WorkspaceRequest) -> Result<String, WorkspaceError> {
    let bad = |why| WorkspaceError::InvalidTemplate {
        template: template.to_owned(),
        why,
    };
    let mut out = template.to_owned();
    if out.contains("{thread}") {
        let key = req
            .thread
            .as_deref()
            .ok_or_else(|| bad("uses {thread} but the run has no thread"))?;
        out = out.replace("{thread}", &sanitize(key));
    }
    out = out.replace("{run_id}", &sanitize(&req.run_id));
    if out.contains('{') || out.contains('}') {
        return Err(bad("unknown placeholder (known: {thread}, {run_id})"));
    }
    Ok(out)
}

fn sanitize(s: &str) -> String {
    let cleaned: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    cleaned.trim_matches('-').to_owned()
}

/// `parent/<branch>`, refused unless it stays inside `parent` — lexically
/// and after following any symlink among the directories that already exist.
fn contained_path(parent: &Path, branch: &str) -> Result<PathBuf, WorkspaceError> {
    let outside = |path: PathBuf| WorkspaceError::PathOutsideParent {
        path,
        parent: parent.to_owned(),
    };
    let rel = Path::new(branch);
    let path = parent.join(rel);
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(outside(path));
    }
    std::fs::create_dir_all(parent).map_err(|source| WorkspaceError::LeaseFile {
        path: parent.to_owned(),
        source,
    })?;
    let real_parent = parent
        .canonicalize()
        .map_err(|source| WorkspaceError::LeaseFile {
            path: parent.to_owned(),
            source,
        })?;
    // The deepest existing ancestor of the target must resolve inside.
    let mut probe = path.clone();
    while !probe.exists() {
        match probe.parent() {
            Some(p) => probe = p.to_path_buf(),
            None => break,
        }
    }
    let real_probe = probe
        .canonicalize()
        .map_err(|source| WorkspaceError::LeaseFile {
            path: probe.clone(),
            source,
        })?;
    if !real_probe.starts_with(&real_parent) {
        return Err(outside(path));
    }
    if path.exists() {
        return Err(WorkspaceError::PathExists { path });
    }
    Ok(path)
}
