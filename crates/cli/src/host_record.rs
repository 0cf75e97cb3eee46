//! Thread runs of an `agent-adaptor run` process that died (SIGKILL, OOM,
//! a closed container): their threads are freed and the runs recorded as
//! interrupted at the next start of `run`, `threads` or `serve` on the
//! same machine.
//!
//! A `run` that opens a thread store names its lease owner with an
//! instance of its own (`run-<host>-<pid>-<random>`, see
//! [`Agent`](agent_adaptor_core::Agent)`::builder().lease_owner`) and
//! keeps a record of it, `<state dir>/runs/<instance>.lock`, exclusively
//! locked for as long as the process lives. The kernel drops the lock when
//! the process dies, however it dies; so a record whose lock can be taken
//! belongs to a dead process, and
//! [`ThreadStore::recover_instance`](agent_adaptor_core::thread::store::ThreadStore::recover_instance) frees that instance's leases and
//! records each of its runs as interrupted (what `threads show` and the
//! web chat's thread API then show). A lock, unlike a PID, cannot be
//! mistaken for another process's after PID reuse.
//!
//! The state directory is `$AGENT_ADAPTOR_STATE_DIR`, else
//! `$XDG_STATE_HOME/agent-adaptor`, else `~/.local/state/agent-adaptor`
//! (the process ledger's `processes/` is beside `runs/`).
//!
//! [`sweep_dead_hosts`] is the process side: what a dead host's CLIs left
//! running (escaped daemons, tools of a group whose leader died with the
//! host) is stopped from the process ledger.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use agent_adaptor_core::thread::store::InterruptedRun;
use serde::{Deserialize, Serialize};

use crate::store::OpenedStore;

pub use agent_adaptor_process::STATE_DIR_ENV;

/// The epoch of every `run` instance (an instance lives once).
const EPOCH: &str = "0";

/// The epoch passed when recovering a dead instance: no lease of the
/// instance has it, so all of them are freed.
const RECOVERY_EPOCH: &str = "recovered";

pub use agent_adaptor_process::state_dir;

/// What a record says.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// The lease owner's instance.
    instance: String,
    /// The store it holds leases in ([`OpenedStore::identity`]).
    store: String,
    /// The process (for people reading the file).
    pid: u32,
}

/// The live process's record: locked until dropped (or the process dies),
/// removed when dropped.
pub struct HostRecord {
    instance: String,
    path: Option<PathBuf>,
    _lock: Option<File>,
}

impl HostRecord {
    /// Name this process's thread-lease instance and record it for `store`.
    /// Without a usable state directory the
    /// instance still works; only its recovery after a crash waits for the
    /// lease TTL instead (the reason is logged at debug level).
    pub fn claim(store: &OpenedStore) -> HostRecord {
        let instance = format!(
            "run-{}-{}-{:08x}",
            crate::serve::recover::hostname(),
            std::process::id(),
            rand::random::<u32>()
        );
        match write_locked(&instance, &store.identity) {
            Ok((path, lock)) => HostRecord {
                instance,
                path: Some(path),
                _lock: Some(lock),
            },
            Err(e) => {
                tracing::debug!(error = %e, "no record of this run's thread leases");
                HostRecord {
                    instance,
                    path: None,
                    _lock: None,
                }
            }
        }
    }

    /// The lease owner's instance.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The lease owner's epoch.
    pub fn epoch(&self) -> &'static str {
        EPOCH
    }
}

impl Drop for HostRecord {
    fn drop(&mut self) {
        if let Some(path) = &self.path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Stop what dead hosts left running ([`agent_adaptor_process::sweep`]),
/// logging what was stopped; a line for people when anything was.
pub fn sweep_dead_hosts() -> Option<String> {
    let report = agent_adaptor_process::sweep();
    for error in &report.errors {
        tracing::warn!(%error, "process sweep: cannot read or delete a record");
    }
    if report.stopped_nothing() {
        tracing::debug!(
            records = report.swept,
            "process sweep: nothing left by dead hosts"
        );
        return None;
    }
    tracing::warn!(
        records = report.swept,
        killed = ?report.killed,
        groups_killed = ?report.groups_killed,
        groups_left = ?report.groups_left,
        "stopped processes that a dead agent-adaptor left running"
    );
    Some(format!(
        "stopped {} process(es) and {} process group(s) that a dead agent-adaptor left running",
        report.killed.len(),
        report.groups_killed.len()
    ))
}

/// The records' directory.
fn runs_dir() -> std::io::Result<PathBuf> {
    state_dir()
        .map(|d| d.join("runs"))
        .ok_or_else(|| std::io::Error::other("no state directory (set AGENT_ADAPTOR_STATE_DIR)"))
}

/// Write the record under a temporary name, lock it, then rename it into
/// place, so nobody sees it unlocked.
fn write_locked(instance: &str, store: &str) -> std::io::Result<(PathBuf, File)> {
    let dir = runs_dir()?;
    std::fs::create_dir_all(&dir)?;
    let tmp = dir.join(format!("{instance}.tmp"));
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&tmp)?;
    file.lock()?;
    let record = Record {
        instance: instance.to_owned(),
        store: store.to_owned(),
        pid: std::process::id(),
    };
    file.write_all(&serde_json::to_vec(&record).map_err(std::io::Error::other)?)?;
    let path = dir.join(format!("{instance}.lock"));
    std::fs::rename(&tmp, &path)?;
    Ok((path, file))
}

/// Free the thread leases of every dead `run` process recorded for
/// `store`, recording their runs as interrupted; the recovered runs.
/// Records of live processes and of other stores are left alone; a
/// failure is logged and skipped (this never stops a command).
pub async fn recover_dead_runs(store: &OpenedStore) -> Vec<InterruptedRun> {
    let Ok(dir) = runs_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut recovered = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        match path.extension().and_then(|e| e.to_str()) {
            Some("lock") => {}
            // A process that died between creating and renaming its record.
            Some("tmp") => {
                if let Some(_dead) = lock_if_dead(&path) {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            }
            _ => continue,
        }
        let Some(mut file) = lock_if_dead(&path) else {
            continue;
        };
        let mut text = String::new();
        let record: Option<Record> = file
            .read_to_string(&mut text)
            .ok()
            .and_then(|_| serde_json::from_str(&text).ok());
        let Some(record) = record else {
            // Unreadable and nobody holds it: nothing can use it.
            let _ = std::fs::remove_file(&path);
            continue;
        };
        if record.store != store.identity {
            continue;
        }
        match store
            .store
            .recover_instance(&record.instance, RECOVERY_EPOCH)
            .await
        {
            Ok(runs) => {
                let _ = std::fs::remove_file(&path);
                recovered.extend(runs);
            }
            Err(e) => tracing::warn!(
                instance = %record.instance,
                error = %e,
                "cannot recover the thread leases of a dead run"
            ),
        }
    }
    recovered
}

/// `path` opened and locked when its owner is gone; `None` while a live
/// process holds it (or it cannot be opened).
fn lock_if_dead(path: &Path) -> Option<File> {
    let file = File::open(path).ok()?;
    match file.try_lock() {
        Ok(()) => Some(file),
        Err(TryLockError::WouldBlock) | Err(TryLockError::Error(_)) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_record_is_alive_and_a_released_one_is_dead() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("x.lock");
        let held = File::create(&path).unwrap_or_else(|e| panic!("{e}"));
        held.lock().unwrap_or_else(|e| panic!("{e}"));
        assert!(lock_if_dead(&path).is_none(), "a held lock reads as alive");
        drop(held);
        assert!(
            lock_if_dead(&path).is_some(),
            "a released lock reads as dead"
        );
    }
}
