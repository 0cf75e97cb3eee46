//! Shared helpers of the integration tests: a collecting sink and /proc probes.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_adaptor_driver::{Emit, EventSink, OutputStream, RunEvent, SinkError, StreamPayload};
use agent_adaptor_process::Command;

/// What the sink saw.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub chunks: usize,
    pub bytes: u64,
}

/// A sink that collects (or only counts) raw chunks, and can start refusing
/// with `SinkError::Cancelled` after a number of chunks.
#[derive(Default)]
pub struct TestSink {
    seen: Mutex<Seen>,
    discard: bool,
    cancel_after: Option<usize>,
    refused: AtomicUsize,
}

impl TestSink {
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts chunks and bytes but keeps no bytes (for the RSS tests).
    pub fn discarding() -> Self {
        TestSink {
            discard: true,
            ..Self::default()
        }
    }

    /// Accepts `n` chunks, then refuses every emit with `Cancelled`.
    pub fn cancelling_after(n: usize) -> Self {
        TestSink {
            cancel_after: Some(n),
            ..Self::default()
        }
    }

    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap().clone()
    }

    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }
}

impl EventSink for TestSink {
    fn emit(&self, event: RunEvent) -> Emit<'_> {
        Emit::ready(self.take(event))
    }

    fn emit_stream(&self, _payload: StreamPayload) -> Emit<'_> {
        panic!("the process helper must never emit stream payloads");
    }
}

impl TestSink {
    fn take(&self, event: RunEvent) -> Result<(), SinkError> {
        let RunEvent::Chunk { stream, bytes } = event else {
            panic!(
                "the process helper emits only chunks, got {}",
                event.kind_name()
            );
        };
        assert!(!bytes.is_empty(), "empty chunk emitted");
        let mut seen = self.seen.lock().unwrap();
        if self.cancel_after.is_some_and(|n| seen.chunks >= n) {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return Err(SinkError::Cancelled);
        }
        seen.chunks += 1;
        seen.bytes += bytes.len() as u64;
        if !self.discard {
            match stream {
                OutputStream::Stdout => seen.stdout.extend_from_slice(&bytes),
                OutputStream::Stderr => seen.stderr.extend_from_slice(&bytes),
            }
        }
        Ok(())
    }
}

/// `sh -c script`.
pub fn sh(script: &str) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(script);
    cmd
}

/// One /proc entry.
#[derive(Debug, Clone, Copy)]
pub struct ProcInfo {
    pub pid: i32,
    pub state: char,
    pub ppid: i32,
    pub pgid: i32,
}

/// Parse `/proc/<pid>/stat` (the command name may contain spaces and parens).
pub fn proc_info(pid: i32) -> Option<ProcInfo> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgid = f.next()?.parse().ok()?;
    Some(ProcInfo {
        pid,
        state,
        ppid,
        pgid,
    })
}

/// Every process (zombies included) whose process group is `pgid`.
pub fn group_members(pgid: u32) -> Vec<ProcInfo> {
    let pgid = pgid as i32;
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(proc_info)
        .filter(|p| p.pgid == pgid)
        .collect()
}

/// True while `/proc/<pid>` exists (running or zombie).
pub fn pid_exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Make this test process the reaper of orphaned grandchildren, so that a
/// killed grandchild's zombie is ours to reap (instead of waiting for init,
/// which in some containers reaps only every few seconds).
pub fn become_subreaper() {
    nix::sys::prctl::set_child_subreaper(true).unwrap();
}

/// Reap zombies of group `pgid` that were re-parented to us (never `leader`,
/// which belongs to tokio and must be reaped by the library).
pub fn reap_adopted(pgid: u32) {
    let me = std::process::id() as i32;
    for p in group_members(pgid) {
        if p.state == 'Z' && p.ppid == me && p.pid != pgid as i32 {
            let _ = nix::sys::wait::waitpid(
                nix::unistd::Pid::from_raw(p.pid),
                Some(nix::sys::wait::WaitPidFlag::WNOHANG),
            );
        }
    }
}

/// Wait until no process of group `pgid` exists any more (live processes
/// must die; zombies adopted by us are reaped). Returns the survivors on
/// timeout.
pub fn wait_group_gone(pgid: u32, within: Duration) -> Result<(), Vec<ProcInfo>> {
    let start = Instant::now();
    loop {
        reap_adopted(pgid);
        let left = group_members(pgid);
        if left.is_empty() {
            return Ok(());
        }
        if start.elapsed() > within {
            return Err(left);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Open file descriptors of this process.
pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// A value from /proc/self/status, in KiB (e.g. "VmHWM", "VmRSS").
pub fn status_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Deterministic pseudo-random bytes (xorshift), every value 0..=255.
pub fn pseudo_random(len: usize, mut seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        out.extend_from_slice(&seed.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Split like the helper does: on `\n` only, final unterminated piece kept.
pub fn split_lines(data: &[u8]) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = data.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    if lines.last().is_some_and(Vec::is_empty) {
        lines.pop();
    }
    lines
}

/// Byte equality without dumping megabytes on failure.
#[track_caller]
pub fn assert_same(got: &[u8], want: &[u8]) {
    if got != want {
        let at = got
            .iter()
            .zip(want)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        panic!(
            "bytes differ: got {} bytes, want {}; first difference at {at}",
            got.len(),
            want.len()
        );
    }
}

/// [`wait_group_gone`] without blocking a runtime worker.
pub async fn wait_group_gone_async(pgid: u32, within: Duration) -> Result<(), Vec<ProcInfo>> {
    let start = Instant::now();
    loop {
        reap_adopted(pgid);
        let left = group_members(pgid);
        if left.is_empty() {
            return Ok(());
        }
        if start.elapsed() > within {
            return Err(left);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The open descriptors of this process with their targets (for diagnostics).
pub fn fd_list() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let target = std::fs::read_link(e.path()).ok()?;
            Some(format!(
                "{} -> {}",
                e.file_name().to_string_lossy(),
                target.display()
            ))
        })
        .collect();
    out.sort();
    out
}
