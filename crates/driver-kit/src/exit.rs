//! How a CLI process ended, as every parser judges a turn ([`ExitFacts`]),
//! and the one notice said when a CLI had to be stopped because it did not
//! exit after its output was over ([`notice_if_stopped`]).
//!
//! A CLI that printed its terminal line and then lingers (a Node CLI keeping
//! an MCP handle open) is stopped by the process helper's exit clock
//! ([`Command::exit_grace`](agent_adaptor_process::Command::exit_grace)).
//! Its turn is finished: the stop must not turn a success into a failure
//! nor discard its checkpoint, so every driver builds its exit facts here,
//! from [`ExitInfo::ended_cleanly`], and nowhere else.

use std::time::Duration;

use agent_adaptor_driver::{EventSink, OperationalEvent, RunEvent, SinkError};
use agent_adaptor_process::{ExitInfo, Finished};

/// How the CLI process ended, as a parser needs to know it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExitFacts {
    /// The exit code, when the process exited.
    pub code: Option<i32>,
    /// True when a signal ended it.
    pub signaled: bool,
    /// It ended as a finished turn should: exit code 0 and no signal, or it
    /// was stopped only because it did not exit after its output was over.
    /// Only such an end lets a successful turn claim a checkpoint.
    pub ended_cleanly: bool,
}

impl ExitFacts {
    /// The facts of a finished process.
    pub fn of(exit: &ExitInfo) -> Self {
        ExitFacts {
            code: exit.code,
            signaled: exit.signal.is_some(),
            ended_cleanly: exit.ended_cleanly(),
        }
    }

    /// A process that exited on its own with `code` (clean when 0).
    pub fn exited(code: i32) -> Self {
        ExitFacts {
            code: Some(code),
            signaled: false,
            ended_cleanly: code == 0,
        }
    }
}

/// What a CLI is called in the notices about its process.
#[derive(Debug, Clone, Copy)]
pub struct CliName<'a> {
    /// Its display name (e.g. `"Gemini CLI"`).
    pub name: &'a str,
    /// The name of its protocol's terminal line or event (e.g. `"result"`,
    /// `"turn/completed"`).
    pub terminal: &'a str,
}

/// When the process helper had to stop the CLI because it did not exit
/// within `grace` after its output was over, tell the run once: "`<CLI>` did
/// not exit within 3 s after its `<terminal>` line; stopped with SIGTERM"
/// (`reason` = `stopped_after_output`, `signal`, `grace_ms`). `terminated`
/// says whether the terminal line was seen (else the output ended at the end
/// of stdout). Nothing when the CLI exited on its own.
pub async fn notice_if_stopped(
    sink: &dyn EventSink,
    cli: CliName<'_>,
    terminated: bool,
    grace: Duration,
    finished: &Finished,
) -> Result<(), SinkError> {
    if !finished.exit.stopped_after_output {
        return Ok(());
    }
    let t = &finished.timeline;
    // The signal the stop needed: SIGKILL when SIGTERM was not enough.
    let signal = match (t.exit_grace_expired_at, t.kill_sent_at) {
        (Some(expired), Some(kill)) if kill >= expired => "SIGKILL",
        _ => "SIGTERM",
    };
    let after = if terminated {
        format!("its {} line", cli.terminal)
    } else {
        "its stdout ended".to_owned()
    };
    notice(
        sink,
        format!(
            "{} did not exit within {} after {after}; stopped with {signal}",
            cli.name,
            spell(grace)
        ),
        &[
            ("reason", "stopped_after_output".into()),
            ("signal", signal.into()),
            (
                "grace_ms",
                u64::try_from(grace.as_millis())
                    .unwrap_or(u64::MAX)
                    .to_string(),
            ),
        ],
    )
    .await
}

/// Report a lifecycle notice with metadata.
pub async fn notice(
    sink: &dyn EventSink,
    text: String,
    metadata: &[(&str, String)],
) -> Result<(), SinkError> {
    sink.emit(notice_event(text, metadata)).await
}

/// A lifecycle notice with metadata, for a protocol that returns its events
/// instead of emitting them (see [`notice`]).
pub fn notice_event(text: String, metadata: &[(&str, String)]) -> RunEvent {
    let mut ev = OperationalEvent::text(text);
    for (k, v) in metadata {
        ev.metadata.insert((*k).to_owned(), v.clone());
    }
    RunEvent::Lifecycle(ev)
}

/// `3 s`, `1.5 s`, `300 ms`.
fn spell(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{} s", d.as_secs())
    } else if d.as_secs() > 0 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_after_the_output_is_clean_a_plain_signal_is_not() {
        let stopped = ExitInfo {
            signal: Some("SIGTERM".into()),
            stopped_after_output: true,
            ..ExitInfo::default()
        };
        let facts = ExitFacts::of(&stopped);
        assert!(facts.ended_cleanly && facts.signaled && facts.code.is_none());
        let killed = ExitInfo {
            signal: Some("SIGTERM".into()),
            ..ExitInfo::default()
        };
        assert!(!ExitFacts::of(&killed).ended_cleanly);
        assert!(ExitFacts::exited(0).ended_cleanly);
        assert!(!ExitFacts::exited(1).ended_cleanly);
        assert!(!ExitFacts::default().ended_cleanly);
    }

    #[test]
    fn graces_are_spelled_for_people() {
        assert_eq!(spell(Duration::from_secs(3)), "3 s");
        assert_eq!(spell(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(spell(Duration::from_millis(300)), "300 ms");
    }
}
