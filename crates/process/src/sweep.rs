//! Sweeping the ledger: stopping what hosts that died (e.g. by `SIGKILL`)
//! left running.

use std::path::Path;
use std::sync::OnceLock;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::ledger::{self, Host, Parsed, Record};
use crate::{mark, procfs};

/// What a [`sweep`] or [`sweep_dir`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SweepReport {
    /// Records of dead hosts that were handled and deleted.
    pub swept: usize,
    /// Processes carrying a dead host's child marker, sent `SIGKILL`.
    pub killed: Vec<u32>,
    /// Recorded process groups sent `SIGKILL`: their leader still had its
    /// recorded start time.
    pub groups_killed: Vec<u32>,
    /// Recorded process groups left alone because their leader's pid now
    /// names another process (a different start time: the pid was reused).
    pub groups_left: Vec<u32>,
    /// Records of hosts that still run: never touched.
    pub live: usize,
    /// Records from an earlier boot: deleted, nothing signalled.
    pub other_boot: usize,
    /// Records of a host in another pid namespace (another container
    /// sharing the directory): its pids mean nothing here, left alone.
    pub other_namespace: usize,
    /// Damaged files, deleted; and records of another format version, left
    /// alone.
    pub unreadable: usize,
    /// What could not be done (a directory or file that cannot be read or
    /// deleted), as text.
    pub errors: Vec<String>,
}

impl SweepReport {
    /// True when the sweep signalled nothing.
    pub fn stopped_nothing(&self) -> bool {
        self.killed.is_empty() && self.groups_killed.is_empty()
    }
}

/// Sweep the default ledger directory (`$AGENT_ADAPTOR_STATE_DIR/processes`,
/// else `$XDG_STATE_HOME/agent-adaptor/processes`, else
/// `$HOME/.local/state/agent-adaptor/processes`); an empty report when there
/// is none. See [`sweep_dir`].
///
/// [`Process::spawn`](crate::Process::spawn) runs this once per host
/// process, before its first child; a host (`run`, `serve`) may call it at
/// start to clean up sooner.
pub fn sweep() -> SweepReport {
    match ledger::default_dir() {
        Some(dir) => sweep_dir(&dir),
        None => SweepReport::default(),
    }
}

/// Stop what dead hosts recorded in `dir` left running, and delete their
/// records.
///
/// For every record whose host is dead (no such pid, a zombie, or a pid
/// with another start time): `SIGKILL` to every process that carries the
/// child's marker and started at or after it, and to the recorded process
/// group if — and only if — its leader's pid still has the recorded start
/// time; a group whose leader's pid now names an unrelated process is left
/// alone ([`SweepReport::groups_left`]). A record from another boot is
/// deleted without signalling anything (its pids mean nothing now); one
/// from another pid namespace is left alone. Records of a live host are
/// never touched. Never signals this process.
///
/// Linux only (it reads `/proc`); elsewhere there are no records.
pub fn sweep_dir(dir: &Path) -> SweepReport {
    let mut report = SweepReport::default();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return report,
        Err(err) => {
            report.errors.push(format!("{}: {err}", dir.display()));
            return report;
        }
    };
    let boot = procfs::boot_id();
    let pid_ns = procfs::pid_namespace();
    let mut dead = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != ledger::EXT) {
            continue; // temp files of a record being written, anything else
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => {
                report.errors.push(format!("{}: {err}", path.display()));
                continue;
            }
        };
        let record = match Record::parse(&text) {
            Parsed::Record(record) => record,
            Parsed::OtherVersion => {
                report.unreadable += 1;
                continue;
            }
            Parsed::Malformed => {
                report.unreadable += 1;
                remove(&path, &mut report);
                continue;
            }
        };
        if boot.as_deref() != Some(record.host.boot_id.as_str()) {
            report.other_boot += 1;
            remove(&path, &mut report);
            continue;
        }
        if pid_ns.as_deref() != Some(record.host.pid_ns.as_str()) {
            report.other_namespace += 1;
            continue;
        }
        if host_alive(&record.host) {
            report.live += 1;
            continue;
        }
        stop_group(&record, &mut report);
        dead.push((path, record));
    }
    // One look through /proc for the markers of every dead host.
    let marks: Vec<_> = dead
        .iter()
        .map(|(_, r)| (r.mark.clone(), r.leader.map_or(r.host.start, |l| l.start)))
        .collect();
    report.killed.extend(
        mark::signal(&marks, Signal::SIGKILL)
            .into_iter()
            .map(i32::unsigned_abs),
    );
    // Only now: a record must outlast what it names.
    for (path, _) in dead {
        report.swept += 1;
        remove(&path, &mut report);
    }
    report.killed.sort_unstable();
    report.killed.dedup();
    if !report.stopped_nothing() {
        tracing::info!(
            killed = ?report.killed,
            groups = ?report.groups_killed,
            "stopped processes left by a host that died"
        );
    }
    report
}

/// Run [`sweep`] once per host process (the first spawn).
pub(crate) fn sweep_once() {
    static SWEPT: OnceLock<()> = OnceLock::new();
    SWEPT.get_or_init(|| {
        let report = sweep();
        if !report.errors.is_empty() {
            tracing::debug!(errors = ?report.errors, "process ledger sweep incomplete");
        }
    });
}

/// The host of a record still runs: same pid, same start time, not a zombie.
fn host_alive(host: &Host) -> bool {
    procfs::stat(host.pid).is_some_and(|s| s.start == host.start && !s.is_dead())
}

/// `SIGKILL` the group a dead host's record names, if its leader is still
/// the recorded process.
fn stop_group(record: &Record, report: &mut SweepReport) {
    let Some(leader) = record.leader else { return };
    let own_group = nix::unistd::getpgrp().as_raw();
    match procfs::stat(leader.pid) {
        Some(s) if s.start == leader.start => {
            let ours = leader.pid <= 1 || leader.pid == own_group;
            if !ours && killpg(Pid::from_raw(leader.pid), Signal::SIGKILL).is_ok() {
                report.groups_killed.push(leader.pid.unsigned_abs());
            }
        }
        Some(_) => report.groups_left.push(leader.pid.unsigned_abs()),
        // The leader is gone (the parent-death signal): its group's other
        // members carry the marker.
        None => {}
    }
}

fn remove(path: &Path, report: &mut SweepReport) {
    if let Err(err) = std::fs::remove_file(path)
        && err.kind() != std::io::ErrorKind::NotFound
    {
        report.errors.push(format!("{}: {err}", path.display()));
    }
}
