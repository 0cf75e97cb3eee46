//! Signals to the child's process group, and signal names.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The child's process group (the child is its leader: `pgid == pid`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Group {
    pgid: Option<Pid>,
}

impl Group {
    pub(crate) fn new(pid: u32) -> Self {
        Group {
            pgid: i32::try_from(pid)
                .ok()
                .filter(|p| *p > 1)
                .map(Pid::from_raw),
        }
    }

    /// Send `SIGTERM` to every member. Best effort: a group that is already
    /// gone (`ESRCH`) is not an error worth reporting.
    pub(crate) fn terminate(self) {
        self.signal(Signal::SIGTERM);
    }

    /// Send `SIGKILL` to every member (best effort, synchronous).
    pub(crate) fn kill(self) {
        self.signal(Signal::SIGKILL);
    }

    fn signal(self, sig: Signal) {
        if let Some(pgid) = self.pgid
            && let Err(err) = killpg(pgid, sig)
            && err != nix::errno::Errno::ESRCH
        {
            tracing::debug!(pgid = pgid.as_raw(), signal = sig.as_str(), %err, "killpg failed");
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
