//! Who holds a lease, and whether that holder is still alive (a host that
//! was SIGKILLed leaves its leases behind; the sweep finds them).

use serde::{Deserialize, Serialize};

/// The holder of a lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LeaseOwner {
    /// One run in one host process; orphaned when that process is gone.
    Run {
        /// The run id.
        run_id: String,
        /// The host process id.
        pid: u32,
        /// The host process start time (clock ticks since boot, from
        /// `/proc/<pid>/stat`), so a reused pid is not mistaken for the
        /// owner; `None` where it cannot be read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start_time: Option<u64>,
    },
    /// A durable thread: the lease lives until the thread is deleted.
    Thread {
        /// The thread key.
        key: String,
    },
    /// A finished run's worktree, kept for the host (it holds the run's
    /// work): listed, never swept, removed by
    /// [`WorkspaceManager::remove`](crate::WorkspaceManager::remove).
    Kept {
        /// The run that worked in it.
        run_id: String,
    },
}

impl LeaseOwner {
    /// The owner for `run_id` in this process.
    pub(crate) fn this_process(run_id: &str) -> Self {
        let pid = std::process::id();
        LeaseOwner::Run {
            run_id: run_id.to_owned(),
            pid,
            start_time: start_time(pid),
        }
    }

    /// Whether a run owner's process still runs (a thread or kept owner
    /// is always "alive": only deleting the thread, or removing the
    /// worktree, ends it).
    pub fn is_alive(&self) -> bool {
        match self {
            LeaseOwner::Thread { .. } | LeaseOwner::Kept { .. } => true,
            LeaseOwner::Run {
                pid,
                start_time: recorded,
                ..
            } => {
                if !pid_exists(*pid) {
                    return false;
                }
                match (recorded, start_time(*pid)) {
                    (Some(a), Some(b)) => *a == b,
                    _ => true,
                }
            }
        }
    }
}

#[cfg(unix)]
fn pid_exists(pid: u32) -> bool {
    use nix::errno::Errno;
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    match kill(Pid::from_raw(raw), None) {
        Ok(()) | Err(Errno::EPERM) => !is_zombie(pid),
        Err(_) => false,
    }
}

#[cfg(not(unix))]
fn pid_exists(_pid: u32) -> bool {
    true
}

/// `/proc/<pid>/stat` fields after the command name (which may hold spaces).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    Some(after.split_whitespace().map(str::to_owned).collect())
}

/// A zombie (killed, not yet reaped by its parent) is gone for our purpose.
fn is_zombie(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|f| f.first().is_some_and(|s| s == "Z" || s == "X"))
}

/// Field 22 of `/proc/<pid>/stat` (index 19 after the name).
fn start_time(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}
