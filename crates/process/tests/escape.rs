//! Descendants that leave the child's process group (tools that CLIs run in
//! a new session with `setsid`) are still stopped: shutdown and drop signal
//! every group a descendant of the child lives in.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::time::Duration;

use agent_adaptor_process::Process;
use common::*;

/// The process group the `setsid` grandchild announced on stdout.
async fn escaped_group(proc: &mut Process, sink: &TestSink) -> u32 {
    let line = proc.next_line(sink).await.unwrap().unwrap();
    let text = String::from_utf8(line.as_memory().unwrap().to_vec()).unwrap();
    let pid: u32 = text.trim().parse().unwrap();
    let info = proc_info(pid as i32).expect("the grandchild is running");
    assert_eq!(info.pgid, pid as i32, "setsid made it a group leader");
    assert_ne!(info.pgid as u32, proc.pid(), "it left the child's group");
    pid
}

/// Wait until `pid` is gone, reaping it if it was re-parented to us (the
/// test is the subreaper); `Err` with its state if it is still alive.
fn wait_gone(pid: u32, within: Duration) -> Result<(), ProcInfo> {
    let start = std::time::Instant::now();
    loop {
        let _ = nix::sys::wait::waitpid(
            nix::unistd::Pid::from_raw(pid as i32),
            Some(nix::sys::wait::WaitPidFlag::WNOHANG),
        );
        match proc_info(pid as i32) {
            None => return Ok(()),
            Some(p) if start.elapsed() > within => return Err(p),
            Some(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

fn script() -> agent_adaptor_process::Command {
    // The grandchild prints its own pid, then sleeps in a new session; the
    // child waits on stdin like a CLI in the middle of a turn.
    let mut cmd = sh("setsid sh -c 'echo $$; exec sleep 300' & cat");
    cmd.close_grace(Duration::from_millis(100))
        .term_grace(Duration::from_millis(300));
    cmd.stdin(agent_adaptor_process::StdinMode::Pipe);
    cmd
}

#[tokio::test]
async fn shutdown_stops_descendants_in_other_groups() {
    become_subreaper();
    let sink = TestSink::new();
    let mut proc = Process::spawn(&script()).unwrap();
    let grandchild = escaped_group(&mut proc, &sink).await;
    let child = proc.pid();
    proc.shutdown(&sink).await.unwrap();
    wait_group_gone(child, Duration::from_secs(5)).unwrap();
    wait_gone(grandchild, Duration::from_secs(5))
        .unwrap_or_else(|left| panic!("the escaped tool survived: {left:?}"));
}

#[tokio::test]
async fn dropping_a_process_stops_descendants_in_other_groups() {
    become_subreaper();
    let sink = TestSink::new();
    let mut proc = Process::spawn(&script()).unwrap();
    let grandchild = escaped_group(&mut proc, &sink).await;
    drop(proc);
    wait_gone(grandchild, Duration::from_secs(5))
        .unwrap_or_else(|left| panic!("the escaped tool survived: {left:?}"));
}
