//! A resolved workspace ([`WorkspaceLease`]) and its lease file, kept in the
//! repository's common git directory so it survives the host process.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::WorkspaceError;
use crate::owner::LeaseOwner;

/// How the lease's directory came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// The base directory, shared.
    Shared,
    /// A git worktree on its own branch.
    GitWorktree,
    /// A temporary directory.
    Temp,
    /// Left to the driver.
    DriverManaged,
}

/// A resolved workspace: where the agent runs, and what to undo afterwards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceLease {
    /// Unique id of this lease.
    pub id: String,
    /// How the directory came to be.
    pub strategy: Strategy,
    /// The directory the agent runs in.
    pub path: PathBuf,
    /// The main checkout's top level (git strategies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<PathBuf>,
    /// The worktree's branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The base ref as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_ref: Option<String>,
    /// The commit the branch started from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_commit: Option<String>,
    /// Who holds it.
    pub owner: LeaseOwner,
}

/// The lease files of one repository.
#[derive(Debug, Clone)]
pub(crate) struct LeaseDir {
    dir: PathBuf,
}

impl LeaseDir {
    /// The lease directory under a repository's common git dir.
    pub(crate) fn new(common_git_dir: &Path) -> Self {
        LeaseDir {
            dir: common_git_dir.join("agent-adaptor").join("leases"),
        }
    }

    fn file(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WorkspaceError + '_ {
        move |source| WorkspaceError::LeaseFile {
            path: path.to_owned(),
            source,
        }
    }

    /// Write (atomically: temp file + rename) a lease.
    pub(crate) fn write(&self, lease: &WorkspaceLease) -> Result<(), WorkspaceError> {
        std::fs::create_dir_all(&self.dir).map_err(Self::io(&self.dir))?;
        let path = self.file(&lease.id);
        let tmp = self.dir.join(format!(".{}.tmp", lease.id));
        let json =
            serde_json::to_vec_pretty(lease).map_err(|source| WorkspaceError::LeaseFormat {
                path: path.clone(),
                source,
            })?;
        std::fs::write(&tmp, json).map_err(Self::io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(Self::io(&path))
    }

    /// Forget a lease (absent is fine).
    pub(crate) fn remove(&self, id: &str) -> Result<(), WorkspaceError> {
        let path = self.file(id);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Self::io(&path)(e)),
            _ => Ok(()),
        }
    }

    /// Every lease recorded (unreadable files are errors, never skipped).
    pub(crate) fn list(&self) -> Result<Vec<WorkspaceLease>, WorkspaceError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Self::io(&self.dir)(e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let path = entry.map_err(Self::io(&self.dir))?.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let bytes = std::fs::read(&path).map_err(Self::io(&path))?;
            let lease = serde_json::from_slice(&bytes)
                .map_err(|source| WorkspaceError::LeaseFormat { path, source })?;
            out.push(lease);
        }
        out.sort_by(|a: &WorkspaceLease, b| a.id.cmp(&b.id));
        Ok(out)
    }

    /// The lease a thread holds, if any.
    pub(crate) fn for_thread(&self, key: &str) -> Result<Option<WorkspaceLease>, WorkspaceError> {
        Ok(self
            .list()?
            .into_iter()
            .find(|l| matches!(&l.owner, LeaseOwner::Thread { key: k } if k == key)))
    }
}
