//! Which processes a cancelled run left running (RUN-05).
//!
//! A driver reports each process it starts with `RunEvent::Spawn`, its pid
//! in the `pid` metadata. The process helper starts a provider in a process
//! group of its own, so what must be gone is the whole group. A process
//! that shares the suite's own group is watched by itself (the suite never
//! signals its own group). On Linux the members are read from `/proc`
//! (zombies, which only wait to be reaped, do not count); on other Unixes a
//! signal-0 probe tells whether anything of the group is left. A platform
//! where neither works says so — it never answers "gone".

/// One spawned process, and the group it is judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Watched {
    /// The reported pid.
    pub pid: u32,
    /// Its process group, when that is not the suite's own.
    pub group: Option<u32>,
}

impl Watched {
    /// Watch `pid`, looking its group up now (while it runs).
    pub(crate) fn new(pid: u32) -> Self {
        Watched {
            pid,
            group: group_of(pid),
        }
    }

    /// What is being watched, for a finding.
    pub(crate) fn describe(&self) -> String {
        match self.group {
            Some(g) => format!("process group {g} (of pid {})", self.pid),
            None => format!("pid {} (in the suite's own process group)", self.pid),
        }
    }
}

#[cfg(unix)]
fn group_of(pid: u32) -> Option<u32> {
    use nix::unistd::{Pid, getpgid, getpgrp};
    let raw = i32::try_from(pid).ok()?;
    // A process already gone: judge the group the process helper would
    // have given it (its own pid).
    let group = getpgid(Some(Pid::from_raw(raw))).unwrap_or(Pid::from_raw(raw));
    (group != getpgrp()).then(|| group.as_raw().unsigned_abs())
}

#[cfg(not(unix))]
fn group_of(_pid: u32) -> Option<u32> {
    None
}

/// The running members of what `w` watches; an error when they cannot be
/// seen on this machine.
#[cfg(target_os = "linux")]
pub(crate) fn left(w: &Watched) -> Result<Vec<u32>, String> {
    let dir = std::fs::read_dir("/proc").map_err(|e| format!("cannot read /proc: {e}"))?;
    let mut found = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue; // gone while we looked
        };
        // pid (comm) state ppid pgrp …: comm may hold spaces and ')'.
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() == Some(&"Z") {
            continue;
        }
        let member = match w.group {
            Some(g) => fields.get(2).and_then(|s| s.parse::<u32>().ok()) == Some(g),
            None => pid == w.pid,
        };
        if member {
            found.push(pid);
        }
    }
    Ok(found)
}

/// The running members of what `w` watches; an error when they cannot be
/// seen on this machine.
#[cfg(all(unix, not(target_os = "linux")))]
pub(crate) fn left(w: &Watched) -> Result<Vec<u32>, String> {
    use nix::errno::Errno;
    use nix::sys::signal::{kill, killpg};
    use nix::unistd::Pid;
    let raw = i32::try_from(w.group.unwrap_or(w.pid)).map_err(|e| e.to_string())?;
    let probe = match w.group {
        Some(_) => killpg(Pid::from_raw(raw), None),
        None => kill(Pid::from_raw(raw), None),
    };
    match probe {
        Ok(()) | Err(Errno::EPERM) => Ok(vec![w.group.unwrap_or(w.pid)]),
        Err(Errno::ESRCH) => Ok(Vec::new()),
        Err(e) => Err(format!("cannot probe {}: {e}", w.describe())),
    }
}

/// The running members of what `w` watches; an error when they cannot be
/// seen on this machine.
#[cfg(not(unix))]
pub(crate) fn left(_w: &Watched) -> Result<Vec<u32>, String> {
    Err("process groups cannot be inspected on this platform".into())
}

/// Stop what a broken driver left behind (SIGKILL to its group, or to the
/// process itself when it shares the suite's group), so the suite does not
/// litter the machine.
#[cfg(unix)]
pub(crate) fn stop(w: &Watched) {
    use nix::sys::signal::{Signal, kill, killpg};
    use nix::unistd::Pid;
    if w.group.unwrap_or(w.pid) <= 1 {
        return; // never init, never "every process"
    }
    match w.group {
        Some(g) => {
            if let Ok(g) = i32::try_from(g) {
                let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
            }
        }
        None => {
            if let Ok(p) = i32::try_from(w.pid) {
                let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
            }
        }
    }
}

/// Stop what a broken driver left behind (nothing can be done here).
#[cfg(not(unix))]
pub(crate) fn stop(_w: &Watched) {}
