//! [`WorkspaceResources`]: the [`RunResources`] core calls around each run —
//! the workspace spec resolved to a lease before the driver, the services
//! ensured, and after the run the change summary reported and the lease
//! released (a thread's worktree stays for its next turn).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_adaptor_core::{
    Prepared, ResourceError, ResourceRun, ResourceThread, RunResources, WorkspaceNeed,
    WorkspaceReport,
};
use futures::FutureExt;
use futures::future::BoxFuture;

use crate::changes::summarize;
use crate::error::WorkspaceError;
use crate::lease::{Strategy, WorkspaceLease};
use crate::manager::{ReleaseMode, WorkspaceManager};
use crate::services::{ServiceManager, ServiceSpec};
use crate::spec::{WorkspaceRequest, WorkspaceSpec};

/// Workspaces and services for an agent's runs.
#[derive(Clone)]
pub struct WorkspaceResources {
    manager: WorkspaceManager,
    spec: WorkspaceSpec,
    base_dir: Option<PathBuf>,
    run_release: ReleaseMode,
    with_diff: bool,
    services: ServiceManager,
    service_specs: Vec<ServiceSpec>,
    leases: Arc<Mutex<HashMap<String, WorkspaceLease>>>,
}

impl std::fmt::Debug for WorkspaceResources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceResources")
            .field("spec", &self.spec)
            .field("services", &self.service_specs)
            .finish_non_exhaustive()
    }
}

impl WorkspaceResources {
    /// Runs work in what `spec` resolves to (relative to the run's
    /// workspace option, or the process's current directory). A run's own
    /// worktree is kept after the run (its branch holds the work); a
    /// thread's stays for its next turn.
    pub fn new(spec: WorkspaceSpec) -> Self {
        WorkspaceResources {
            manager: WorkspaceManager::new(),
            spec,
            base_dir: None,
            run_release: ReleaseMode::Keep,
            with_diff: false,
            services: ServiceManager::new(),
            service_specs: Vec::new(),
            leases: Arc::default(),
        }
    }

    /// The base directory when the run names none.
    pub fn base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }

    /// What to do with a (non-thread) run's workspace afterwards.
    pub fn run_release(mut self, mode: ReleaseMode) -> Self {
        self.run_release = mode;
        self
    }

    /// Put the unified diff into the change summary.
    pub fn with_diff(mut self, yes: bool) -> Self {
        self.with_diff = yes;
        self
    }

    /// Ensure `spec` before every run (reused by labels), with `services`.
    pub fn service(mut self, services: &ServiceManager, spec: ServiceSpec) -> Self {
        self.services = services.clone();
        self.service_specs.push(spec);
        self
    }

    /// The directory a run (or thread) works in: its own, else this
    /// manager's, else the process's current directory.
    fn base_of(&self, dir: Option<&PathBuf>) -> Result<PathBuf, ResourceError> {
        match dir.or(self.base_dir.as_ref()) {
            Some(d) => Ok(d.clone()),
            None => std::env::current_dir().map_err(|e| Arc::new(e) as ResourceError),
        }
    }

    /// Remove the worktree (and branch) thread `key` holds, refusing with
    /// [`WorkspaceError::UncommittedChanges`](crate::WorkspaceError) or
    /// `UnmergedCommits` when that would lose work. Outside a repository,
    /// or without a worktree, there is nothing to release.
    async fn release_thread_worktree(&self, thread: &ResourceThread) -> Result<(), ResourceError> {
        let base_dir = self.base_of(thread.base_dir.as_ref())?;
        let lease = match self.manager.thread_lease(&base_dir, &thread.key).await {
            Ok(Some(lease)) => lease,
            Ok(None) | Err(WorkspaceError::NotARepository { .. }) => return Ok(()),
            Err(e) => return Err(Arc::new(e)),
        };
        self.manager
            .release(&lease, ReleaseMode::Remove)
            .await
            .map_err(|e| Arc::new(e) as ResourceError)
    }

    async fn prepare_run(&self, run: &ResourceRun) -> Result<Prepared, ResourceError> {
        let base_dir = self.base_of(run.base_dir.as_ref())?;
        let lease = self
            .manager
            .resolve(&WorkspaceRequest {
                base_dir,
                spec: self.spec.clone(),
                run_id: run.run_id.clone(),
                thread: run.thread_key.clone(),
            })
            .await
            .map_err(|e| Arc::new(e) as ResourceError)?;
        let services = match self.services.ensure(&run.run_id, &self.service_specs).await {
            Ok(refs) => refs.iter().map(|r| r.report()).collect(),
            Err(e) => {
                let _ = self.release(&lease, run).await;
                return Err(Arc::new(e));
            }
        };
        let report = report_of(&lease);
        lock(&self.leases).insert(run.run_id.clone(), lease);
        Ok(Prepared {
            workspace: Some(report),
            services,
        })
    }

    async fn release(
        &self,
        lease: &WorkspaceLease,
        run: &ResourceRun,
    ) -> Result<(), ResourceError> {
        self.services.release_by_run(&run.run_id).await;
        if run.thread_key.is_some() {
            return Ok(());
        }
        self.manager
            .release(lease, self.run_release)
            .await
            .map_err(|e| Arc::new(e) as ResourceError)
    }

    async fn finish_run(
        &self,
        run: &ResourceRun,
    ) -> Result<Option<WorkspaceReport>, ResourceError> {
        let Some(lease) = lock(&self.leases).remove(&run.run_id) else {
            self.services.release_by_run(&run.run_id).await;
            return Ok(None);
        };
        let mut report = report_of(&lease);
        if lease.strategy == Strategy::GitWorktree {
            report.changes = Some(
                summarize(&lease, self.with_diff)
                    .await
                    .map_err(|e| Arc::new(e) as ResourceError)?,
            );
        }
        self.release(&lease, run).await?;
        Ok(Some(report))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// The lease as the run result reports it.
pub fn report_of(lease: &WorkspaceLease) -> WorkspaceReport {
    let strategy = match lease.strategy {
        Strategy::Shared => "shared",
        Strategy::GitWorktree => "git_worktree",
        Strategy::Temp => "temp",
        Strategy::DriverManaged => "driver_managed",
    };
    WorkspaceReport {
        strategy: strategy.into(),
        path: lease.path.clone(),
        branch: lease.branch.clone(),
        base_commit: lease.base_commit.clone(),
        changes: None,
    }
}

impl RunResources for WorkspaceResources {
    fn workspace_need(&self) -> WorkspaceNeed {
        match self.spec {
            WorkspaceSpec::GitWorktree(_) | WorkspaceSpec::Temp => WorkspaceNeed::Directory,
            WorkspaceSpec::DriverManaged => WorkspaceNeed::DriverManaged,
            _ => WorkspaceNeed::None,
        }
    }

    fn prepare<'a>(
        &'a self,
        run: &'a ResourceRun,
    ) -> BoxFuture<'a, Result<Prepared, ResourceError>> {
        self.prepare_run(run).boxed()
    }

    fn finish<'a>(
        &'a self,
        run: &'a ResourceRun,
        _prepared: &'a Prepared,
        _succeeded: bool,
    ) -> BoxFuture<'a, Result<Option<WorkspaceReport>, ResourceError>> {
        self.finish_run(run).boxed()
    }

    fn release_thread<'a>(
        &'a self,
        thread: &'a ResourceThread,
    ) -> BoxFuture<'a, Result<(), ResourceError>> {
        self.release_thread_worktree(thread).boxed()
    }
}
