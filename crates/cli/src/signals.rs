//! The signals that stop a command: Ctrl-C (SIGINT), SIGTERM and SIGHUP
//! (the terminal or the SSH session closed) are handled alike: the run is
//! cancelled, its CLI's process group stopped, and the command exits with
//! `128 + signal number`, as shells report it.

use tokio::signal::unix::{Signal, SignalKind, signal};

/// Which signal asked the command to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM (a supervisor, `kill`).
    Terminate,
    /// SIGHUP (the terminal or SSH session went away).
    Hangup,
}

impl Stop {
    /// How a person names it: `Ctrl-C`, `SIGTERM`, `SIGHUP`.
    pub fn name(self) -> &'static str {
        match self {
            Stop::Interrupt => "Ctrl-C",
            Stop::Terminate => "SIGTERM",
            Stop::Hangup => "SIGHUP",
        }
    }

    /// The exit code: 128 + the signal number (130, 143, 129).
    pub fn exit_code(self) -> u8 {
        128 + match self {
            Stop::Interrupt => 2,
            Stop::Terminate => 15,
            Stop::Hangup => 1,
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP as one repeatable event. Once created, none
/// of them ends the process by the default action any more.
pub struct Signals {
    hooks: [(Stop, Option<Signal>); 3],
}

impl Default for Signals {
    fn default() -> Self {
        Self::new()
    }
}

impl Signals {
    /// Hook all three (a signal that cannot be hooked is never reported).
    pub fn new() -> Self {
        Signals {
            hooks: [
                (Stop::Interrupt, signal(SignalKind::interrupt()).ok()),
                (Stop::Terminate, signal(SignalKind::terminate()).ok()),
                (Stop::Hangup, signal(SignalKind::hangup()).ok()),
            ],
        }
    }

    /// The next of the three to arrive (never, when none could be hooked).
    pub async fn recv(&mut self) -> Stop {
        let [(a, sa), (b, sb), (c, sc)] = &mut self.hooks;
        tokio::select! {
            Some(()) = next(sa) => *a,
            Some(()) = next(sb) => *b,
            Some(()) = next(sc) => *c,
            else => std::future::pending().await,
        }
    }
}

/// The next delivery of `hook`; `None` when it is not hooked.
async fn next(hook: &mut Option<Signal>) -> Option<()> {
    match hook {
        Some(s) => s.recv().await,
        None => None,
    }
}

/// Wait for Ctrl-C (SIGINT), SIGTERM or SIGHUP; which one came.
pub async fn wait_for_shutdown() -> Stop {
    Signals::new().recv().await
}
