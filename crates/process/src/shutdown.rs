//! The lifecycle clock: timeout, the shutdown sequence (spec §4, §11;
//! protocols §0.5) and the bound on pipes held open after the child exited.
//!
//! ```text
//! running ──timeout / shutdown()──► close stdin ──close_grace──► SIGTERM group
//!         ──term_grace──► SIGKILL group
//! child exited, pipes still open ──close_grace──► SIGKILL group
//!         ──close_grace──► stop reading (pipes held outside the group)
//! running, output over (stdout EOF / expect_exit) ──exit_grace──►
//!         close stdin + SIGTERM group ──term_grace──► SIGKILL group
//! ```
//!
//! The exit clock skips `close_grace`: by the time the output is over the
//! child has had its whole grace to exit, and its stdin was usually closed
//! long before.
//!
//! This module only keeps time and sends group signals; the process reacts
//! to the [`Step`] it returns (closing stdin, abandoning pipes).

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use crate::finished::{ExitInfo, Timeline};
use crate::group::Group;

/// What the process must do after a lifecycle transition.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Nothing beyond what the lifecycle did itself.
    Nothing,
    /// Close the child's stdin.
    CloseStdin,
    /// Stop reading stdout and stderr (they are held open outside the group).
    AbandonPipes,
}

#[derive(Debug, Clone, Copy)]
enum Stop {
    Running,
    Closing(Instant),
    Terming(Instant),
    Killed,
}

#[derive(Debug, Clone, Copy)]
enum AfterExit {
    /// No pipe is open, or the child still runs.
    Idle,
    /// Waiting for end-of-file on the pipes.
    EofWait(Instant),
    /// The group was killed; reading what is left.
    Drain(Instant),
    /// Gave up on the pipes.
    Abandoned,
}

/// Timeout, shutdown escalation, and the post-exit pipe bound of one child.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    group: Group,
    close_grace: Duration,
    term_grace: Duration,
    exit_grace: Duration,
    timeout_at: Option<Instant>,
    /// When the child must have exited on its own (armed once its output is over).
    exit_by: Option<Instant>,
    stopped_after_output: bool,
    stop: Stop,
    after_exit: AfterExit,
    exit: Option<Option<ExitStatus>>,
    timed_out: bool,
    timeline: Timeline,
}

impl Lifecycle {
    pub(crate) fn new(
        group: Group,
        close_grace: Duration,
        term_grace: Duration,
        exit_grace: Duration,
        timeout: Option<Duration>,
        spawned_at: Instant,
    ) -> Self {
        Lifecycle {
            group,
            close_grace,
            term_grace,
            exit_grace,
            timeout_at: timeout.and_then(|t| spawned_at.checked_add(t)),
            exit_by: None,
            stopped_after_output: false,
            stop: Stop::Running,
            after_exit: AfterExit::Idle,
            exit: None,
            timed_out: false,
            timeline: Timeline::new(spawned_at),
        }
    }

    pub(crate) fn group(&self) -> Group {
        self.group.clone()
    }

    /// True once the child was reaped (or waiting for it failed).
    pub(crate) fn exited(&self) -> bool {
        self.exit.is_some()
    }

    pub(crate) fn timeline(&self) -> Timeline {
        self.timeline
    }

    pub(crate) fn note_stdin_closed(&mut self, now: Instant) {
        self.timeline.stdin_closed_at.get_or_insert(now);
    }

    /// How the child ended, so far as known.
    pub(crate) fn exit_info(&self) -> ExitInfo {
        match self.exit {
            Some(Some(status)) => {
                ExitInfo::from_status(status, self.timed_out, self.stopped_after_output)
            }
            _ => ExitInfo {
                timed_out: self.timed_out,
                stopped_after_output: self.stopped_after_output,
                ..ExitInfo::default()
            },
        }
    }

    /// The next instant at which [`on_deadline`](Lifecycle::on_deadline) must run.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        if self.exited() {
            return match self.after_exit {
                AfterExit::EofWait(t) | AfterExit::Drain(t) => Some(t),
                AfterExit::Idle | AfterExit::Abandoned => None,
            };
        }
        match self.stop {
            Stop::Running => match (self.timeout_at, self.exit_by) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            Stop::Closing(t) | Stop::Terming(t) => Some(t),
            Stop::Killed => None,
        }
    }

    /// The child's output is over while it may still run: start the exit
    /// clock (idempotent; nothing once the child exited or is being stopped).
    pub(crate) fn output_over(&mut self, now: Instant) {
        if self.exited() || !matches!(self.stop, Stop::Running) || self.exit_by.is_some() {
            return;
        }
        self.exit_by = Some(now.checked_add(self.exit_grace).unwrap_or(now));
        self.timeline.output_over_at = Some(now);
    }

    /// Start the shutdown sequence (idempotent; nothing once the child exited).
    pub(crate) fn begin_stop(&mut self, now: Instant) -> Step {
        if self.exited() || !matches!(self.stop, Stop::Running) {
            return Step::Nothing;
        }
        self.stop = Stop::Closing(now + self.close_grace);
        Step::CloseStdin
    }

    /// Advance past every deadline that is due at `now`.
    pub(crate) fn on_deadline(&mut self, now: Instant) -> Step {
        if self.exited() {
            return match self.after_exit {
                AfterExit::EofWait(t) if now >= t => {
                    self.kill(now);
                    self.after_exit = AfterExit::Drain(now + self.close_grace);
                    Step::Nothing
                }
                AfterExit::Drain(t) if now >= t => {
                    self.after_exit = AfterExit::Abandoned;
                    Step::AbandonPipes
                }
                _ => Step::Nothing,
            };
        }
        match self.stop {
            Stop::Running => {
                if self.timeout_at.is_some_and(|t| now >= t) {
                    self.timed_out = true;
                    self.timeline.timed_out_at = Some(now);
                    return self.begin_stop(now);
                }
                if self.exit_by.is_some_and(|t| now >= t) {
                    // The child had its grace: stop it at once (stdin, SIGTERM).
                    self.stopped_after_output = true;
                    self.timeline.exit_grace_expired_at = Some(now);
                    self.group.terminate();
                    self.timeline.term_sent_at.get_or_insert(now);
                    self.stop = Stop::Terming(now + self.term_grace);
                    return Step::CloseStdin;
                }
                Step::Nothing
            }
            Stop::Closing(t) if now >= t => {
                self.group.terminate();
                self.timeline.term_sent_at.get_or_insert(now);
                self.stop = Stop::Terming(now + self.term_grace);
                Step::Nothing
            }
            Stop::Terming(t) if now >= t => {
                self.kill(now);
                self.stop = Stop::Killed;
                Step::Nothing
            }
            _ => Step::Nothing,
        }
    }

    /// The child was reaped (`status` is `None` when waiting failed).
    pub(crate) fn on_exit(&mut self, status: Option<ExitStatus>, now: Instant, pipes_open: bool) {
        self.exit = Some(status);
        self.timeline.exited_at = Some(now);
        if pipes_open {
            self.after_exit = AfterExit::EofWait(now + self.close_grace);
        }
    }

    fn kill(&mut self, now: Instant) {
        self.group.kill();
        self.timeline.kill_sent_at.get_or_insert(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn life(timeout: Option<Duration>) -> (Lifecycle, Instant) {
        let t0 = Instant::now();
        // pid 0 → no real group is ever signalled in these tests
        let l = Lifecycle::new(
            Group::new(0),
            Duration::from_millis(100),
            Duration::from_millis(200),
            Duration::from_millis(300),
            timeout,
            t0,
        );
        (l, t0)
    }

    #[test]
    fn shutdown_escalates_close_term_kill() {
        let (mut l, t0) = life(None);
        assert_eq!(l.next_deadline(), None);
        assert_eq!(l.begin_stop(t0), Step::CloseStdin);
        assert_eq!(l.begin_stop(t0), Step::Nothing, "idempotent");
        let t1 = l.next_deadline().unwrap();
        assert_eq!(t1, t0 + Duration::from_millis(100));
        assert_eq!(l.on_deadline(t1 - Duration::from_millis(1)), Step::Nothing);
        assert!(l.timeline().term_sent_at.is_none(), "not early");
        l.on_deadline(t1);
        assert_eq!(l.timeline().term_sent_at, Some(t1));
        let t2 = l.next_deadline().unwrap();
        assert_eq!(t2, t1 + Duration::from_millis(200));
        l.on_deadline(t2);
        assert_eq!(l.timeline().kill_sent_at, Some(t2));
        assert_eq!(l.next_deadline(), None);
        assert!(!l.exit_info().timed_out);
    }

    #[test]
    fn timeout_starts_the_sequence_and_is_reported() {
        let (mut l, t0) = life(Some(Duration::from_millis(50)));
        let t = l.next_deadline().unwrap();
        assert_eq!(t, t0 + Duration::from_millis(50));
        assert_eq!(l.on_deadline(t), Step::CloseStdin);
        assert!(l.exit_info().timed_out);
        assert_eq!(l.next_deadline(), Some(t + Duration::from_millis(100)));
    }

    #[test]
    fn output_over_arms_the_exit_clock_then_term_then_kill() {
        let (mut l, t0) = life(None);
        assert_eq!(l.next_deadline(), None);
        l.output_over(t0);
        l.output_over(t0 + Duration::from_millis(50));
        let t1 = l.next_deadline().unwrap();
        assert_eq!(t1, t0 + Duration::from_millis(300), "armed once");
        assert_eq!(l.on_deadline(t1 - Duration::from_millis(1)), Step::Nothing);
        assert_eq!(l.on_deadline(t1), Step::CloseStdin);
        assert_eq!(l.timeline().term_sent_at, Some(t1), "no close_grace first");
        assert_eq!(l.timeline().output_over_at, Some(t0));
        assert_eq!(l.timeline().exit_grace_expired_at, Some(t1));
        let t2 = l.next_deadline().unwrap();
        assert_eq!(t2, t1 + Duration::from_millis(200));
        l.on_deadline(t2);
        assert_eq!(l.timeline().kill_sent_at, Some(t2));
        let info = l.exit_info();
        assert!(info.stopped_after_output && !info.timed_out);
        assert!(info.ended_cleanly());
    }

    #[test]
    fn output_over_after_exit_or_stop_does_nothing() {
        let (mut l, t0) = life(None);
        l.on_exit(None, t0, false);
        l.output_over(t0);
        assert_eq!(l.next_deadline(), None);
        let (mut l, t0) = life(None);
        l.begin_stop(t0);
        l.output_over(t0);
        assert_eq!(l.next_deadline(), Some(t0 + Duration::from_millis(100)));
    }

    #[test]
    fn a_timeout_before_the_exit_clock_wins() {
        let (mut l, t0) = life(Some(Duration::from_millis(100)));
        l.output_over(t0);
        let t = l.next_deadline().unwrap();
        assert_eq!(t, t0 + Duration::from_millis(100));
        assert_eq!(l.on_deadline(t), Step::CloseStdin);
        let info = l.exit_info();
        assert!(info.timed_out && !info.stopped_after_output);
        assert!(!info.ended_cleanly());
    }

    #[test]
    fn pipes_held_after_exit_are_bounded() {
        let (mut l, t0) = life(None);
        l.on_exit(None, t0, true);
        assert_eq!(l.begin_stop(t0), Step::Nothing);
        let t1 = l.next_deadline().unwrap();
        assert_eq!(t1, t0 + Duration::from_millis(100));
        assert_eq!(l.on_deadline(t1), Step::Nothing);
        assert_eq!(l.timeline().kill_sent_at, Some(t1));
        let t2 = l.next_deadline().unwrap();
        assert_eq!(l.on_deadline(t2), Step::AbandonPipes);
        assert_eq!(l.next_deadline(), None);
    }
}
