//! Timing-sensitive lifecycle tests: escalation, grandchildren holding the
//! pipes, drop. They run one at a time under nextest (test group
//! `process-timing` in .config/nextest.toml), and every bound is measured
//! from the instant the helper recorded for the step it follows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use agent_adaptor_process::Process;
use common::{TestSink, become_subreaper, pid_exists, sh, wait_group_gone_async};

const GRACE: Duration = Duration::from_millis(300);
const SLACK: Duration = Duration::from_millis(200);

#[tokio::test]
async fn sigterm_ignoring_child_is_killed_within_term_grace() {
    become_subreaper();
    // The trap makes SIGTERM ignored by the shell *and* (inherited across
    // fork/exec) by every `sleep` it starts, so only SIGKILL ends the group.
    let mut cmd = sh("trap '' TERM; echo ready; while :; do sleep 0.05; done");
    cmd.close_grace(GRACE).term_grace(GRACE);
    let sink = TestSink::new();
    let mut p = Process::spawn(&cmd).unwrap();
    let pid = p.pid();
    let ready = p.next_line(&sink).await.unwrap().unwrap();
    assert_eq!(ready.as_memory(), Some(&b"ready"[..]));

    let started = Instant::now();
    let fin = p.shutdown(&sink).await.unwrap();
    let total = started.elapsed();
    let t = fin.timeline;
    let term = t.term_sent_at.expect("SIGTERM sent");
    let kill = t.kill_sent_at.expect("SIGKILL sent");
    let exited = t.exited_at.expect("exit observed");

    assert_eq!(fin.exit.signal.as_deref(), Some("SIGKILL"));
    assert_eq!(fin.exit.code, None);
    assert!(!fin.exit.timed_out);
    assert!(
        term.duration_since(started) >= GRACE,
        "close_grace honoured before SIGTERM"
    );
    assert!(
        kill.duration_since(term) >= GRACE,
        "term_grace honoured before SIGKILL"
    );
    let latency = exited.duration_since(term);
    eprintln!(
        "kill latency: exit observed {:?} after SIGTERM (term_grace {:?}), {:?} after SIGKILL; shutdown took {:?}",
        latency,
        GRACE,
        exited.duration_since(kill),
        total
    );
    assert!(latency <= GRACE + SLACK, "killed {latency:?} after SIGTERM");
    assert!(!pid_exists(pid), "the child is reaped, not a zombie");
    wait_group_gone_async(pid, Duration::from_secs(2))
        .await
        .expect("group empty");
}

#[tokio::test]
async fn child_that_honours_sigterm_is_not_killed() {
    become_subreaper();
    let mut cmd = sh("echo ready; exec sleep 30");
    cmd.close_grace(GRACE).term_grace(Duration::from_secs(10));
    let sink = TestSink::new();
    let mut p = Process::spawn(&cmd).unwrap();
    let pid = p.pid();
    p.next_line(&sink).await.unwrap().unwrap();
    let fin = p.shutdown(&sink).await.unwrap();
    let t = fin.timeline;
    assert_eq!(fin.exit.signal.as_deref(), Some("SIGTERM"));
    assert!(t.kill_sent_at.is_none());
    assert!(t.exited_at.unwrap().duration_since(t.term_sent_at.unwrap()) < Duration::from_secs(5));
    assert!(!pid_exists(pid));
    wait_group_gone_async(pid, Duration::from_secs(2))
        .await
        .expect("group empty");
}

#[tokio::test]
async fn grandchild_holding_stdout_does_not_hang_finish() {
    become_subreaper();
    // The shell exits at once; its background sleep keeps stdout open.
    let mut cmd = sh("sleep 30 & echo \"grandchild $!\"");
    cmd.close_grace(GRACE);
    let sink = TestSink::new();
    let mut p = Process::spawn(&cmd).unwrap();
    let pid = p.pid();
    let line = p.next_line(&sink).await.unwrap().unwrap();
    let text = String::from_utf8(line.bytes().to_vec().unwrap()).unwrap();
    let grandchild: u32 = text.strip_prefix("grandchild ").unwrap().parse().unwrap();
    assert!(pid_exists(grandchild));

    let started = Instant::now();
    let fin = tokio::time::timeout(Duration::from_secs(20), p.finish(&sink))
        .await
        .expect("finish must not wait for the grandchild")
        .unwrap();
    let took = started.elapsed();
    let t = fin.timeline;
    assert_eq!(fin.exit.code, Some(0), "the leader itself exited normally");
    let kill = t.kill_sent_at.expect("the group was killed");
    assert!(
        kill.duration_since(t.exited_at.unwrap()) >= GRACE,
        "close_grace honoured"
    );
    assert!(
        took <= GRACE + Duration::from_secs(2),
        "finish took {took:?}"
    );
    eprintln!("finish with a pipe-holding grandchild took {took:?} (close_grace {GRACE:?})");
    assert_eq!(
        fin.stdout.to_vec().unwrap(),
        text.clone()
            .into_bytes()
            .into_iter()
            .chain([b'\n'])
            .collect::<Vec<_>>()
    );
    wait_group_gone_async(pid, Duration::from_secs(2))
        .await
        .expect("grandchild killed");
    assert!(!pid_exists(grandchild));
}

#[tokio::test]
async fn grandchild_output_within_close_grace_is_kept() {
    become_subreaper();
    let mut cmd = sh("(sleep 0.1; echo late) & echo early");
    cmd.close_grace(Duration::from_secs(5));
    let sink = TestSink::new();
    let p = Process::spawn(&cmd).unwrap();
    let pid = p.pid();
    let fin = p.finish(&sink).await.unwrap();
    assert_eq!(fin.stdout.to_vec().unwrap(), b"early\nlate\n");
    assert!(
        fin.timeline.kill_sent_at.is_none(),
        "EOF came in time, nobody was killed"
    );
    wait_group_gone_async(pid, Duration::from_secs(2))
        .await
        .expect("group empty");
}

#[tokio::test]
async fn pipes_held_outside_the_group_are_abandoned() {
    become_subreaper();
    // setsid moves the sleep into its own session: group signals cannot
    // reach it, so the helper must stop reading instead of waiting forever.
    let mut cmd = sh("setsid sleep 30 & echo \"outsider $!\"");
    cmd.close_grace(Duration::from_millis(100));
    let sink = TestSink::new();
    let p = Process::spawn(&cmd).unwrap();
    let fin = tokio::time::timeout(Duration::from_secs(20), p.finish(&sink))
        .await
        .expect("finish must give up on pipes held outside the group")
        .unwrap();
    let text = fin.stdout.to_string_lossy().unwrap();
    let outsider: i32 = text
        .trim()
        .strip_prefix("outsider ")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(fin.exit.code, Some(0));
    assert!(
        fin.timeline.kill_sent_at.is_some(),
        "the group was killed before giving up"
    );
    // clean up the process we deliberately let escape
    let outsider = nix::unistd::Pid::from_raw(outsider);
    let _ = nix::sys::signal::kill(outsider, nix::sys::signal::Signal::SIGKILL);
    let _ = nix::sys::wait::waitpid(outsider, None);
}

#[tokio::test]
async fn dropping_a_live_process_kills_its_group() {
    become_subreaper();
    let script = "trap '' TERM; sleep 30 & sleep 30 & echo ready; while :; do sleep 0.05; done";
    let sink = TestSink::new();
    let mut p = Process::spawn(&sh(script)).unwrap();
    let pid = p.pid();
    p.next_line(&sink).await.unwrap().unwrap();
    let before = running_members(pid);
    assert!(
        before.len() >= 3 && before.contains(&(pid as i32)),
        "the shell and its two background sleeps run before the drop: {before:?}"
    );
    drop(p);
    // SIGKILL was sent synchronously in drop: nothing of the group may keep
    // running, and the leader is reaped by tokio's orphan reaper.
    wait_group_gone_async(pid, Duration::from_secs(5))
        .await
        .expect("group gone after drop");
    assert!(!pid_exists(pid));
}

#[tokio::test]
async fn dropping_a_pending_next_line_future_and_the_process_kills_the_group() {
    become_subreaper();
    let sink = TestSink::new();
    let mut p = Process::spawn(&sh("sleep 30 & echo ready; exec sleep 30")).unwrap();
    let pid = p.pid();
    p.next_line(&sink).await.unwrap().unwrap();
    // The background sleep was forked before `ready` was written.
    let before = running_members(pid);
    assert!(
        before.iter().any(|m| *m != pid as i32),
        "a background member of group {pid} runs before the drop: {before:?}"
    );
    // a driver future dropped while awaiting output
    let pending = tokio::time::timeout(Duration::from_millis(50), p.next_line(&sink)).await;
    assert!(pending.is_err(), "no line was due");
    drop(p);
    wait_group_gone_async(pid, Duration::from_secs(5))
        .await
        .expect("group gone after drop");
}

#[tokio::test]
async fn a_dropped_lone_child_is_reaped() {
    // No grandchildren, no other child: nothing else will ever deliver a
    // SIGCHLD, so the helper itself must see to the reaping.
    let p = Process::spawn(&sh("exec sleep 30")).unwrap();
    let pid = p.pid();
    tokio::time::sleep(Duration::from_millis(20)).await;
    drop(p);
    let start = Instant::now();
    while pid_exists(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "pid {pid} not reaped after drop"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The running (non-zombie) members of group `pgid`.
fn running_members(pgid: u32) -> Vec<i32> {
    common::group_members(pgid)
        .into_iter()
        .filter(|p| p.state != 'Z')
        .map(|p| p.pid)
        .collect()
}

/// A sink whose every emit waits forever (a consumer that never reads).
struct StuckSink;

impl agent_adaptor_driver::EventSink for StuckSink {
    fn emit(&self, _event: agent_adaptor_driver::RunEvent) -> agent_adaptor_driver::Emit<'_> {
        agent_adaptor_driver::Emit::new(std::future::pending())
    }
    fn emit_stream(
        &self,
        _payload: agent_adaptor_driver::StreamPayload,
    ) -> agent_adaptor_driver::Emit<'_> {
        agent_adaptor_driver::Emit::new(std::future::pending())
    }
}

#[tokio::test]
async fn a_stuck_sink_does_not_stop_the_clock() {
    become_subreaper();
    let mut cmd = sh("echo hi; exec sleep 30");
    cmd.timeout(Some(Duration::from_millis(100)))
        .close_grace(Duration::from_millis(50))
        .term_grace(Duration::from_millis(50));
    let mut p = Process::spawn(&cmd).unwrap();
    let pid = p.pid();
    // The first chunk's emit never returns, yet the timeout must still stop
    // the child: it dies (a zombie until reaped) while the emit is pending.
    let stuck = tokio::time::timeout(Duration::from_secs(1), p.next_line(&StuckSink)).await;
    assert!(stuck.is_err(), "the emit is stuck by construction");
    let state = common::proc_info(pid as i32).map(|i| i.state);
    assert_eq!(
        state,
        Some('Z'),
        "the child was stopped while the sink was stuck"
    );
    // The line was captured before the stuck emit; the caller gives up on
    // the sink and shuts down with a working one.
    let sink = TestSink::new();
    assert_eq!(
        p.next_line(&sink).await.unwrap().unwrap().as_memory(),
        Some(&b"hi"[..])
    );
    let fin = p.shutdown(&sink).await.unwrap();
    assert!(fin.exit.timed_out);
    assert_eq!(fin.exit.signal.as_deref(), Some("SIGTERM"));
    assert_eq!(fin.stdout.to_vec().unwrap(), b"hi\n");
    assert!(!pid_exists(pid));
}
