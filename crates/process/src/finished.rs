//! What a finished process leaves behind: [`Finished`], [`ExitInfo`], [`Timeline`].

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Instant;

use agent_adaptor_driver::{RawBytes, RawStreams, Response, SinkError};

use crate::group::signal_name;

/// How the child ended (the `exit_code` / `signal` / `timed_out` fields of
/// [`Response`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExitInfo {
    /// The exit code, when the child exited normally.
    pub code: Option<i32>,
    /// The signal that ended the child, e.g. `"SIGKILL"`.
    pub signal: Option<String>,
    /// True when the [`timeout`](crate::Command::timeout) expired and the
    /// shutdown sequence stopped the child.
    pub timed_out: bool,
    /// True when the child was stopped because it did not exit within the
    /// [`exit_grace`](crate::Command::exit_grace) after its output was over
    /// (stdout at end-of-file, or [`expect_exit`](crate::Process::expect_exit)).
    /// `code`/`signal` then tell how the stop ended it (usually `SIGTERM`).
    pub stopped_after_output: bool,
}

impl ExitInfo {
    pub(crate) fn from_status(status: ExitStatus, timed_out: bool, stopped: bool) -> Self {
        ExitInfo {
            code: status.code(),
            signal: status.signal().map(signal_name),
            timed_out,
            stopped_after_output: stopped,
        }
    }

    /// Exit code 0, no signal, no timeout.
    pub fn success(&self) -> bool {
        self.code == Some(0) && self.signal.is_none() && !self.timed_out
    }

    /// The child ended as a finished conversation should: it exited with
    /// code 0 and no signal, or its output was over and it was stopped only
    /// because it did not exit on its own
    /// ([`stopped_after_output`](ExitInfo::stopped_after_output)). Whether
    /// the conversation itself succeeded is the protocol's to say.
    pub fn ended_cleanly(&self) -> bool {
        self.success() || (self.stopped_after_output && !self.timed_out)
    }

    /// Copy into the matching fields of a [`Response`].
    pub fn apply_to(&self, response: &mut Response) {
        response.exit_code = self.code;
        response.signal = self.signal.clone();
        response.timed_out = self.timed_out;
        response.stopped_after_output = self.stopped_after_output;
    }
}

/// When the lifecycle steps happened (for diagnostics and tests).
#[derive(Debug, Clone, Copy)]
pub struct Timeline {
    /// The child was spawned.
    pub spawned_at: Instant,
    /// Stdin was closed by the helper (shutdown, timeout or feed done).
    pub stdin_closed_at: Option<Instant>,
    /// The timeout expired.
    pub timed_out_at: Option<Instant>,
    /// The child's output was over while it still ran (stdout reached
    /// end-of-file, or [`expect_exit`](crate::Process::expect_exit)): the
    /// exit clock started.
    pub output_over_at: Option<Instant>,
    /// The exit grace expired with the child still running: it was stopped.
    pub exit_grace_expired_at: Option<Instant>,
    /// `SIGTERM` was sent to the group.
    pub term_sent_at: Option<Instant>,
    /// `SIGKILL` was first sent to the group (by the shutdown sequence, or
    /// because pipes stayed open after the child exited).
    pub kill_sent_at: Option<Instant>,
    /// The child's exit was observed (it was reaped).
    pub exited_at: Option<Instant>,
}

impl Timeline {
    pub(crate) fn new(spawned_at: Instant) -> Self {
        Timeline {
            spawned_at,
            stdin_closed_at: None,
            timed_out_at: None,
            output_over_at: None,
            exit_grace_expired_at: None,
            term_sent_at: None,
            kill_sent_at: None,
            exited_at: None,
        }
    }
}

/// The outcome of [`Process::finish`](crate::Process::finish) or
/// [`Process::shutdown`](crate::Process::shutdown): the child is reaped,
/// nothing of its group is left running, and the raw capture is complete.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Finished {
    /// How the child ended.
    pub exit: ExitInfo,
    /// Every stdout byte, exactly as written (memory or spill file).
    pub stdout: RawBytes,
    /// Every stderr byte, exactly as written (memory or spill file).
    pub stderr: RawBytes,
    /// When each lifecycle step happened.
    pub timeline: Timeline,
    /// The first refusal of the sink, if it refused a chunk (chunks were no
    /// longer emitted after it; the capture above is complete regardless).
    pub sink_error: Option<SinkError>,
}

impl Finished {
    /// The raw streams for [`Response::raw`]. `terminal` is `None`: only the
    /// driver's parser can recognize the official terminal event.
    pub fn raw_streams(&self) -> RawStreams {
        RawStreams {
            stdout: self.stdout.clone(),
            stderr: self.stderr.clone(),
            terminal: None,
        }
    }

    /// Like [`raw_streams`](Finished::raw_streams), by value.
    pub fn into_raw_streams(self) -> RawStreams {
        RawStreams {
            stdout: self.stdout,
            stderr: self.stderr,
            terminal: None,
        }
    }
}
