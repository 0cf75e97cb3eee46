//! Signals to the child's process group — and to the groups its
//! descendants escaped into — and signal names.
//!
//! CLIs run their tools in new sessions (`setsid`), so a tool process is no
//! longer in the child's group and `killpg` alone would leave it running.
//! Every signal therefore also goes to each process group a descendant of the
//! child lives in, found through `/proc` (Linux; see `descendants`, whose
//! cost is proportional to the child's own tree). Descendants are remembered
//! across signals: once the child has died its orphans are re-parented and
//! can no longer be found from it.
//!
//! A group is signalled only while its id is still the group that was seen:
//! a process that now has the group's id but another start time took the id
//! after the group emptied (pids are reused quickly where `pid_max` is
//! 32768), and its group is left alone. A leaderless group's members carry
//! the marker, which finds them without the id.
//!
//! `SIGTERM` and `SIGKILL` also go to every process carrying the child's
//! marker (see `mark`) — double-forked daemons re-parented to init included —
//! but not the periodic scan: finding them reads all of `/proc`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::descendants::{Method, descendant_groups};
use crate::mark::{self, Mark};
use crate::procfs;

/// The child's process group (the child is its leader: `pgid == pid`), plus
/// the groups its descendants escaped into.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pgid: Option<Pid>,
    /// The start time of the child (the leader of `pgid`), when known.
    leader_start: Option<u64>,
    /// Escaped groups → the start time of their leader when first seen
    /// (`None`: it had no leader then).
    escaped: Arc<Mutex<BTreeMap<i32, Option<u64>>>>,
    /// The child's marker and start time (clock ticks since boot).
    marked: Option<Arc<[(Mark, u64)]>>,
}

impl Group {
    pub(crate) fn new(pid: u32) -> Self {
        Group {
            pgid: i32::try_from(pid)
                .ok()
                .filter(|p| *p > 1)
                .map(Pid::from_raw),
            leader_start: None,
            escaped: Arc::default(),
            marked: None,
        }
    }

    /// Also signal the processes carrying `mark` that started at or after
    /// `since` (the child's start time).
    /// It is also the child's start time: the child's own group is
    /// signalled only while its id is not another process's.
    pub(crate) fn with_mark(mut self, mark: Mark, since: u64) -> Self {
        self.marked = Some(Arc::new([(mark, since)]));
        self.leader_start = Some(since);
        self
    }

    /// Record the groups of the child's current descendants that are not
    /// the child's own group (nor ours, nor init's).
    pub(crate) fn scan(&self) {
        let Some(leader) = self.pgid else { return };
        let own = nix::unistd::getpgrp().as_raw();
        let found = descendant_groups(leader.as_raw(), Method::best());
        let mut escaped = self.escaped.lock().unwrap_or_else(|p| p.into_inner());
        for g in found
            .into_iter()
            .filter(|g| *g > 1 && *g != own && *g != leader.as_raw())
        {
            escaped
                .entry(g)
                .or_insert_with(|| procfs::stat(g).map(|s| s.start));
        }
    }

    /// Send `SIGTERM` to every member. Best effort: a group that is already
    /// gone (`ESRCH`) is not an error worth reporting.
    pub(crate) fn terminate(&self) {
        self.signal(Signal::SIGTERM);
    }

    /// Send `SIGKILL` to every member (best effort, synchronous).
    pub(crate) fn kill(&self) {
        self.signal(Signal::SIGKILL);
    }

    fn signal(&self, sig: Signal) {
        self.scan();
        let escaped: Vec<(i32, Option<u64>)> = self
            .escaped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(g, start)| (*g, *start))
            .collect();
        // The child's own group with an unknown start time is signalled as
        // before: the child may well still hold the id.
        let own = self
            .pgid
            .map(|p| (p.as_raw(), self.leader_start, self.leader_start.is_none()));
        let escaped = escaped.into_iter().map(|(g, start)| (g, start, false));
        for (pgid, start, unknown_is_ours) in own.into_iter().chain(escaped) {
            if !still_the_group(pgid, start, unknown_is_ours) {
                continue;
            }
            if let Err(err) = killpg(Pid::from_raw(pgid), sig)
                && err != nix::errno::Errno::ESRCH
            {
                tracing::debug!(pgid, signal = sig.as_str(), %err, "killpg failed");
            }
        }
        if let Some(marked) = &self.marked {
            mark::signal(marked, sig);
        }
    }
}

/// Whether the group `pgid`, whose leader had `start` when it was seen,
/// can still be that group: no process holds its id now (where `/proc`
/// cannot be read, that is what it looks like), or the one that does is
/// that leader. Without a start time (`None`), a process holding the id
/// is taken as the leader only if `unknown_is_ours` — an escaped group
/// seen without a leader is the case it is not: a process holding its id
/// now is a newcomer.
fn still_the_group(pgid: i32, start: Option<u64>, unknown_is_ours: bool) -> bool {
    match (procfs::stat(pgid), start) {
        (None, _) => true,
        (Some(now), Some(then)) => now.start == then,
        (Some(_), None) => unknown_is_ours,
    }
}

/// The conventional name of a signal number (`9` → `"SIGKILL"`); unknown
/// numbers (e.g. real-time signals) as `"SIG<n>"`.
pub(crate) fn signal_name(signo: i32) -> String {
    match Signal::try_from(signo) {
        Ok(sig) => sig.as_str().to_owned(),
        Err(_) => format!("SIG{signo}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn names() {
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(40), "SIG40");
    }

    #[test]
    fn refuses_dangerous_groups() {
        // pgid 0 would signal our own group, 1 is init; both are never targets.
        assert!(Group::new(0).pgid.is_none());
        assert!(Group::new(1).pgid.is_none());
        assert!(Group::new(u32::MAX).pgid.is_none());
    }

    #[test]
    fn a_group_id_taken_by_another_process_is_left_alone() {
        let me = std::process::id() as i32;
        let start = procfs::stat(me).unwrap().start;
        // This process holds the id with its own start time: still the group.
        assert!(still_the_group(me, Some(start), false));
        // Another start time: the id was reused, the group is not ours.
        assert!(!still_the_group(me, Some(start + 1), true));
        // Seen without a leader, the id is now held: a newcomer.
        assert!(!still_the_group(me, None, false));
        assert!(still_the_group(me, None, true));
        // Nobody holds the id: a leaderless group, still signalled.
        assert!(still_the_group(i32::MAX, Some(start), false));
    }
}
