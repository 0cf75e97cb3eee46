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

/// `script` under `sh -c` with a piped stdin and short shutdown graces.
fn piped(script: &str) -> agent_adaptor_process::Command {
    let mut cmd = sh(script);
    cmd.close_grace(Duration::from_millis(100))
        .term_grace(Duration::from_millis(300));
    cmd.stdin(agent_adaptor_process::StdinMode::Pipe);
    cmd
}

fn script() -> agent_adaptor_process::Command {
    // The grandchild prints its own pid, then sleeps in a new session; the
    // child waits on stdin like a CLI in the middle of a turn.
    piped("setsid sh -c 'echo $$; exec sleep 300' & cat")
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

/// A tool started by an intermediate process that exits before the
/// shutdown: seen by a periodic scan while its parent lived, it is still
/// stopped after it was re-parented (to this test, the subreaper) and can no
/// longer be traced back to the child.
#[tokio::test]
async fn a_tool_that_outlives_its_parent_is_still_stopped() {
    become_subreaper();
    // child (cat) → intermediate (waits for one stdin line) → setsid tool.
    let cmd = piped("sh -c 'setsid sh -c \"echo \\$\\$; exec sleep 300\" & read x; echo bye'; cat");
    let sink = TestSink::new();
    let mut proc = Process::spawn(&cmd).unwrap();
    let mut stdin = proc.take_stdin().unwrap();
    let tool = escaped_group(&mut proc, &sink).await;
    let parent = proc_info(tool as i32).unwrap().ppid;
    assert_ne!(parent as u32, proc.pid(), "the tool is a grandchild");
    // Past the scan period, the next pull scans before it waits; only then
    // is the intermediate told to exit.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (bye, ()) = tokio::join!(proc.next_line(&sink), async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        stdin.write_all(b"go\n").await.unwrap();
    });
    assert_eq!(bye.unwrap().unwrap().as_memory().unwrap(), b"bye");
    let start = std::time::Instant::now();
    while proc_info(tool as i32).is_some_and(|p| p.ppid == parent) {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "parent never exited"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    proc.shutdown(&sink).await.unwrap();
    wait_gone(tool, Duration::from_secs(5))
        .unwrap_or_else(|left| panic!("the orphaned tool survived: {left:?}"));
}

/// While the child is quiet and the caller only waits in `finish`, its tree
/// is still scanned: a tool started and orphaned during the quiet spell is
/// stopped when `finish` sweeps the group.
#[tokio::test]
async fn a_tool_orphaned_while_no_output_comes_is_still_stopped() {
    become_subreaper();
    // child → intermediate: on the first stdin line starts a setsid tool
    // (announcing its pid) and exits on the second.
    let cmd =
        piped("sh -c 'read x; setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!; read y'");
    let sink = TestSink::new();
    let mut proc = Process::spawn(&cmd).unwrap();
    let mut stdin = proc.take_stdin().unwrap();
    // `finish` scans once when it starts, before the tool exists; the tool
    // then lives for about six scan periods (margin for a loaded machine)
    // without any output after its pid.
    let (fin, ()) = tokio::join!(proc.finish(&sink), async {
        stdin.write_all(b"start\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        stdin.write_all(b"stop\n").await.unwrap();
    });
    let fin = fin.unwrap();
    let tool: u32 = fin
        .stdout
        .to_string_lossy()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_gone(tool, Duration::from_secs(5))
        .unwrap_or_else(|left| panic!("the orphaned tool survived: {left:?}"));
}
