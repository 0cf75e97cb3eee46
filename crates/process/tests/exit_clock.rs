//! The exit clock: a child whose output is over (the caller saw the
//! protocol's terminal line, or stdout reached end-of-file) gets
//! `exit_grace` to exit on its own, then is stopped (stdin closed, SIGTERM,
//! `term_grace`, SIGKILL) — `finish` never waits without bound.
//!
//! Every wait is bounded by a tokio timeout far above grace + term_grace, so
//! a regression fails instead of hanging.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use agent_adaptor_process::{Command, DEFAULT_EXIT_GRACE, Process};
use common::{TestSink, become_subreaper, pid_exists, sh, wait_group_gone_async};

const GRACE: Duration = Duration::from_millis(300);
/// Far above any grace here: only a hang reaches it.
const BOUND: Duration = Duration::from_secs(20);

fn lingering(script: &str) -> Command {
    let mut cmd = sh(script);
    cmd.exit_grace(GRACE).term_grace(GRACE).close_grace(GRACE);
    cmd
}

/// Prints its answer, then never exits, its stdout still open.
const PRINTS_AND_LOOPS: &str = "echo answer; echo done; while :; do sleep 1; done";
/// Prints its answer, closes stdout and stderr, and keeps running.
const CLOSES_AND_STAYS: &str = "echo answer; exec >&- 2>&-; while :; do sleep 1; done";

#[test]
fn the_default_exit_grace_is_three_seconds() {
    assert_eq!(DEFAULT_EXIT_GRACE, Duration::from_secs(3));
    assert_eq!(Command::new("x").get_exit_grace(), DEFAULT_EXIT_GRACE);
}

#[tokio::test]
async fn a_child_that_lingers_after_its_terminal_line_is_stopped() {
    become_subreaper();
    let sink = TestSink::new();
    let mut p = Process::spawn(&lingering(PRINTS_AND_LOOPS)).unwrap();
    let pid = p.pid();
    let ended = tokio::time::timeout(BOUND, async {
        loop {
            let line = p.next_line(&sink).await.unwrap().expect("a line");
            if line.as_memory() == Some(&b"done"[..]) {
                break;
            }
        }
        // The driver saw the terminal line: the conversation is over.
        p.expect_exit();
        // It keeps reading to the end of stdout, which the stop brings.
        while p.next_line(&sink).await.unwrap().is_some() {}
        p.finish(&sink).await.unwrap()
    })
    .await
    .expect("the run ended (it hung before the exit clock)");
    assert!(ended.exit.stopped_after_output, "{:?}", ended.exit);
    assert_eq!(ended.exit.signal.as_deref(), Some("SIGTERM"));
    assert!(ended.exit.ended_cleanly() && !ended.exit.success());
    assert!(!ended.exit.timed_out);
    let t = ended.timeline;
    let armed = t.output_over_at.expect("the clock was armed");
    let expired = t.exit_grace_expired_at.expect("the grace expired");
    assert!(
        expired.duration_since(armed) >= GRACE,
        "the grace was given"
    );
    assert_eq!(t.term_sent_at, Some(expired));
    assert_eq!(ended.stdout.to_vec().unwrap(), b"answer\ndone\n");
    assert!(!pid_exists(pid));
    wait_group_gone_async(pid, Duration::from_secs(5))
        .await
        .expect("nothing of the group is left");
}

#[tokio::test]
async fn a_child_that_closes_its_output_and_stays_is_stopped() {
    become_subreaper();
    let sink = TestSink::new();
    let mut p = Process::spawn(&lingering(CLOSES_AND_STAYS)).unwrap();
    let pid = p.pid();
    let ended = tokio::time::timeout(BOUND, async {
        // No expect_exit: end-of-file on stdout arms the clock by itself.
        while p.next_line(&sink).await.unwrap().is_some() {}
        p.finish(&sink).await.unwrap()
    })
    .await
    .expect("the run ended (it hung before the exit clock)");
    assert!(ended.exit.stopped_after_output, "{:?}", ended.exit);
    assert!(ended.exit.ended_cleanly());
    assert!(ended.timeline.output_over_at.is_some());
    assert_eq!(ended.stdout.to_vec().unwrap(), b"answer\n");
    wait_group_gone_async(pid, Duration::from_secs(5))
        .await
        .expect("nothing of the group is left");
}

#[tokio::test]
async fn a_child_ignoring_sigterm_is_killed_after_term_grace() {
    become_subreaper();
    let sink = TestSink::new();
    let script = "trap '' TERM; echo answer; exec >&- 2>&-; while :; do sleep 0.1; done";
    let mut p = Process::spawn(&lingering(script)).unwrap();
    let pid = p.pid();
    let ended = tokio::time::timeout(BOUND, async {
        while p.next_line(&sink).await.unwrap().is_some() {}
        p.finish(&sink).await.unwrap()
    })
    .await
    .expect("the run ended");
    assert!(ended.exit.stopped_after_output);
    assert_eq!(ended.exit.signal.as_deref(), Some("SIGKILL"));
    assert!(ended.timeline.kill_sent_at.is_some());
    wait_group_gone_async(pid, Duration::from_secs(5))
        .await
        .expect("nothing of the group is left");
}

#[tokio::test]
async fn a_child_that_exits_within_the_grace_is_not_stopped() {
    let sink = TestSink::new();
    let mut cmd = sh("echo answer; exec >&- 2>&-; sleep 0.2; exit 0");
    cmd.exit_grace(Duration::from_secs(10));
    let mut p = Process::spawn(&cmd).unwrap();
    p.expect_exit();
    let ended = tokio::time::timeout(BOUND, async {
        while p.next_line(&sink).await.unwrap().is_some() {}
        p.finish(&sink).await.unwrap()
    })
    .await
    .expect("the run ended");
    assert!(ended.exit.success(), "{:?}", ended.exit);
    assert!(!ended.exit.stopped_after_output);
    assert!(ended.timeline.term_sent_at.is_none());
}
