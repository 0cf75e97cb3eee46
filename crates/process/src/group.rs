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
//! `SIGTERM` and `SIGKILL` also go to every process carrying the child's
//! marker (see `mark`) — double-forked daemons re-parented to init included —
//! but not the periodic scan: finding them reads all of `/proc`.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::descendants::{Method, descendant_groups};
use crate::mark::{self, Mark};

/// The child's process group (the child is its leader: `pgid == pid`), plus
/// the groups its descendants escaped into.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pgid: Option<Pid>,
    escaped: Arc<Mutex<BTreeSet<i32>>>,
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
            escaped: Arc::default(),
            marked: None,
        }
    }

    /// Also signal the processes carrying `mark` that started at or after
    /// `since` (the child's start time).
    pub(crate) fn with_mark(mut self, mark: Mark, since: u64) -> Self {
        self.marked = Some(Arc::new([(mark, since)]));
        self
    }

    /// Record the groups of the child's current descendants that are not
    /// the child's own group (nor ours, nor init's).
    pub(crate) fn scan(&self) {
        let Some(leader) = self.pgid else { return };
        let own = nix::unistd::getpgrp().as_raw();
        let found = descendant_groups(leader.as_raw(), Method::best());
        let mut escaped = self.escaped.lock().unwrap_or_else(|p| p.into_inner());
        escaped.extend(
            found
                .into_iter()
                .filter(|g| *g > 1 && *g != own && *g != leader.as_raw()),
        );
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
        let escaped: Vec<i32> = self
            .escaped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .copied()
            .collect();
        for pgid in self
            .pgid
            .into_iter()
            .chain(escaped.into_iter().map(Pid::from_raw))
        {
            if let Err(err) = killpg(pgid, sig)
                && err != nix::errno::Errno::ESRCH
            {
                tracing::debug!(pgid = pgid.as_raw(), signal = sig.as_str(), %err, "killpg failed");
            }
        }
        if let Some(marked) = &self.marked {
            mark::signal(marked, sig);
        }
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
}
