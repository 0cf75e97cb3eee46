//! Nothing outlives its host: a tool (`sleep 1000`) and a double-forked
//! `setsid` daemon are gone after finish, shutdown and drop; the direct
//! child dies with a `SIGKILL`ed host (parent-death signal) and the ledger
//! sweep stops the rest. Every process is identified by pid **and** start
//! time, never by name.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_adaptor_process::{Process, StdinMode, sweep_dir};
use common::{TestSink, sh};

/// One process, for good: pid and start time (clock ticks since boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Proc {
    pid: i32,
    start: u64,
}

/// `(state, start)` from `/proc/<pid>/stat`.
fn stat(pid: i32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = text.get(text.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split(' ').collect();
    Some((
        fields.first()?.chars().next()?,
        fields.get(19)?.parse().ok()?,
    ))
}

impl Proc {
    fn of(pid: i32) -> Proc {
        let (_, start) = stat(pid).unwrap_or_else(|| panic!("{pid} is not running"));
        Proc { pid, start }
    }

    /// Still this process, and not a zombie.
    fn alive(&self) -> bool {
        stat(self.pid).is_some_and(|(state, start)| start == self.start && state != 'Z')
    }
}

/// Wait (bounded) until none of `procs` is alive; the survivors otherwise.
fn wait_dead(procs: &[Proc], within: Duration) -> Result<Duration, Vec<Proc>> {
    let t0 = Instant::now();
    loop {
        let left: Vec<Proc> = procs.iter().copied().filter(Proc::alive).collect();
        if left.is_empty() {
            return Ok(t0.elapsed());
        }
        if t0.elapsed() > within {
            return Err(left);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Fail naming the survivors of `procs` after `within`, after killing them
/// (a failing run leaves nothing behind).
#[track_caller]
fn assert_dead(procs: &[Proc], within: Duration, what: &str) -> Duration {
    match wait_dead(procs, within) {
        Ok(took) => took,
        Err(left) => {
            for p in &left {
                if p.alive() {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(p.pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
            panic!("survived {what}: {left:?}");
        }
    }
}

/// The tree: the child starts a tool in its own group and a double-forked
/// `setsid` daemon (re-parented to init at once), prints their pids, then
/// runs `tail` (e.g. `cat` to wait on stdin, or nothing to exit).
fn tree(tail: &str) -> agent_adaptor_process::Command {
    let mut cmd = sh(&format!(
        "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!
         ( setsid sh -c 'echo $$; exec sleep 1002 </dev/null >/dev/null 2>&1' & )
         {tail}"
    ));
    cmd.close_grace(Duration::from_millis(100))
        .term_grace(Duration::from_millis(300))
        .stdin(StdinMode::Pipe);
    cmd
}

/// The tool and the daemon a [`tree`] announced.
async fn announced(proc: &mut Process, sink: &TestSink) -> [Proc; 2] {
    let mut pids = Vec::new();
    for _ in 0..2 {
        let line = proc.next_line(sink).await.unwrap().expect("a pid line");
        let text = String::from_utf8(line.as_memory().unwrap().to_vec()).unwrap();
        pids.push(Proc::of(text.trim().parse().unwrap()));
    }
    [pids[0], pids[1]]
}

#[tokio::test]
async fn the_tool_and_the_setsid_daemon_are_gone_after_finish() {
    let sink = TestSink::new();
    let mut proc = Process::spawn(&tree("exit 0")).unwrap();
    let tree = announced(&mut proc, &sink).await;
    proc.finish(&sink).await.unwrap();
    assert_dead(&tree, Duration::from_secs(5), "finish");
}

#[tokio::test]
async fn the_tool_and_the_setsid_daemon_are_gone_after_shutdown() {
    let sink = TestSink::new();
    let mut proc = Process::spawn(&tree("cat")).unwrap();
    let tree = announced(&mut proc, &sink).await;
    proc.shutdown(&sink).await.unwrap();
    assert_dead(&tree, Duration::from_secs(5), "shutdown");
}

#[tokio::test]
async fn the_tool_and_the_setsid_daemon_are_gone_after_drop() {
    let sink = TestSink::new();
    let mut proc = Process::spawn(&tree("cat")).unwrap();
    let tree = announced(&mut proc, &sink).await;
    drop(proc);
    assert_dead(&tree, Duration::from_secs(5), "drop");
}

// ---------------------------------------------------------------------------
// A host of its own: this test binary, re-run in host mode.

const HOST_MODE: &str = "OUTLIVE_HOST_MODE";

/// The host: spawns a [`tree`], prints `tree <leader> <tool> <daemon>` and
/// the number of ledger records, then either hangs (to be killed) or shuts
/// the child down and prints the number of records left. Does nothing when
/// this binary runs as a test suite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_mode_entry_point() {
    let Ok(mode) = std::env::var(HOST_MODE) else {
        return;
    };
    let records = || {
        let dir = PathBuf::from(std::env::var("AGENT_ADAPTOR_STATE_DIR").unwrap());
        count_records(&dir.join("processes"))
    };
    let sink = TestSink::new();
    // A leader that ignores the end of its stdin (the host's death closes
    // the pipes) and never writes: only a signal stops it.
    let mut proc = Process::spawn(&tree("exec sleep 1001")).unwrap();
    let [tool, daemon] = announced(&mut proc, &sink).await;
    println!(
        "tree {} {} {} records {}",
        proc.pid(),
        tool.pid,
        daemon.pid,
        records()
    );
    if mode == "shutdown" {
        proc.shutdown(&sink).await.unwrap();
        println!("after records {}", records());
    } else {
        // Bounded: the test kills us long before.
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
}

fn count_records(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "rec"))
            .count()
    })
}

/// A host process in `mode` with its own state directory, and the lines it
/// printed up to (and including) the `tree` line.
struct Host {
    child: std::process::Child,
    out: std::io::BufReader<std::process::ChildStdout>,
    tree: [Proc; 3],
    records: usize,
}

impl Host {
    fn start(mode: &str, state: &Path) -> Host {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "host_mode_entry_point", "--nocapture"])
            .env(HOST_MODE, mode)
            .env("AGENT_ADAPTOR_STATE_DIR", state)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let fields = read_until(&mut out, "tree ");
        let num = |i: usize| fields[i].parse::<i32>().unwrap();
        let tree = [Proc::of(num(1)), Proc::of(num(2)), Proc::of(num(3))];
        assert_eq!(fields[4], "records");
        Host {
            child,
            out,
            tree,
            records: fields[5].parse().unwrap(),
        }
    }
}

/// The words of the first line starting with `prefix` (a host that dies
/// first closes its stdout, and this fails).
fn read_until(out: &mut impl BufRead, prefix: &str) -> Vec<String> {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the host ended early"
        );
        if line.starts_with(prefix) {
            return line.split_whitespace().map(str::to_owned).collect();
        }
    }
}

#[test]
fn a_host_keeps_a_record_while_its_child_runs_and_removes_it_after() {
    let state = tempfile::tempdir().unwrap();
    let mut host = Host::start("shutdown", state.path());
    assert_eq!(host.records, 1, "one record per running child");
    let after = read_until(&mut host.out, "after ");
    assert_eq!(after, ["after", "records", "0"]);
    assert!(host.child.wait().unwrap().success());
    assert_dead(&host.tree, Duration::from_secs(5), "the host's shutdown");
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// `SIGKILL` the host: its direct child dies with it (parent-death signal);
/// the tool and the daemon survive it and are stopped by the next sweep of
/// the ledger, which deletes the record. `OUTLIVE_RUNS=n` repeats it and
/// prints the times (not asserted).
#[test]
fn a_killed_host_takes_its_child_along_and_the_sweep_takes_the_rest() {
    let runs: usize = std::env::var("OUTLIVE_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let (mut to_child, mut to_all) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let state = tempfile::tempdir().unwrap();
        let ledger = state.path().join("processes");
        let mut host = Host::start("hang", state.path());
        assert_eq!(count_records(&ledger), 1);
        let [leader, tool, daemon] = host.tree;
        let t0 = Instant::now();
        host.child.kill().unwrap();
        host.child.wait().unwrap();
        let direct = wait_dead(&[leader], Duration::from_secs(5));
        to_child.push(t0.elapsed());
        if direct.is_err() {
            sweep_dir(&ledger); // clean up, then fail
            assert_dead(&host.tree, Duration::from_secs(5), "the sweep");
            panic!("the direct child outlived its host");
        }
        // Only the sweep stops these (asserted once they are gone).
        let outlived_the_host = tool.alive() && daemon.alive();
        let report = sweep_dir(&ledger);
        assert_eq!(report.swept, 1, "{report:?}");
        // The daemon only by its marker; the tool by its marker or with its
        // group (while the zombie leader still names it).
        assert!(report.killed.contains(&(daemon.pid as u32)), "{report:?}");
        assert_dead(&host.tree, Duration::from_secs(5), "the sweep");
        to_all.push(t0.elapsed());
        assert!(
            outlived_the_host,
            "the tool or the daemon died with the host"
        );
        assert_eq!(count_records(&ledger), 0, "the record is deleted");
    }
    let max = |v: &[Duration]| v.iter().max().copied().unwrap_or_default();
    eprintln!(
        "host SIGKILL → direct child gone: median {:?}, max {:?}; → last descendant gone \
         (sweep at once): median {:?}, max {:?} ({runs} runs)",
        median(&mut to_child.clone()),
        max(&to_child),
        median(&mut to_all.clone()),
        max(&to_all),
    );
}

// ---------------------------------------------------------------------------
// The ledger sweep on hand-written records.

/// A `sleep 30` in a process group of its own, optionally marked.
fn lone_sleep(mark: Option<&str>) -> (std::process::Child, Proc) {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new("sleep");
    cmd.arg("30").process_group(0);
    if let Some(mark) = mark {
        cmd.env(agent_adaptor_process::PROCESS_MARK_ENV, mark);
    }
    let child = cmd.spawn().unwrap();
    if let Some(mark) = mark {
        // The sweep finds a marked process by its environment: wait until
        // the kernel shows the new program's (a loaded machine may still be
        // in the exec when spawn returns).
        let environ = format!("/proc/{}/environ", child.id());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read(&environ)
            .map(|e| e.windows(mark.len()).any(|w| w == mark.as_bytes()))
            .unwrap_or(false)
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the mark never showed"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    let p = Proc::of(child.id() as i32);
    (child, p)
}

fn pid_ns() -> String {
    let link = std::fs::read_link("/proc/self/ns/pid").unwrap();
    link.to_str().unwrap().to_owned()
}

/// A marker no other test uses (tests run concurrently, and a sweep kills
/// whatever carries a dead host's marker).
fn fresh_mark() -> String {
    format!("{:032x}", rand::random::<u128>())
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap()
        .trim()
        .to_owned()
}

/// This test process as a record's host; `dead` shifts its start time, which
/// is what a reused pid looks like.
fn me(dead: bool) -> Proc {
    let p = Proc::of(std::process::id() as i32);
    Proc {
        start: p.start + u64::from(dead),
        ..p
    }
}

/// Write a record (format version 1) for a child whose group leader is
/// `leader` and whose marker is `mark`.
fn record(dir: &Path, host: Proc, boot: &str, mark: &str, leader: Proc) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("{mark}.rec"));
    std::fs::write(
        &path,
        format!(
            "agent-adaptor-process record 1\nhost_pid={}\nhost_start={}\nboot_id={boot}\n\
             pid_ns={}\nmark={mark}\nspawned_at_ms=1\nleader_pid={}\nleader_sid=1\n\
             leader_start={}\n",
            host.pid,
            host.start,
            pid_ns(),
            leader.pid,
            leader.start
        ),
    )
    .unwrap();
    path
}

fn still_running(child: &mut std::process::Child) -> bool {
    std::thread::sleep(Duration::from_millis(50));
    child.try_wait().unwrap().is_none()
}

fn stop(mut child: std::process::Child) {
    let _ = child.kill();
    child.wait().unwrap();
}

/// PID reuse: a dead host's record names a group whose leader's pid now
/// belongs to an unrelated process (another start time): left alone. The
/// same record with the right start time kills the group.
#[test]
fn a_recorded_group_whose_leader_pid_was_reused_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (mut unrelated, u) = lone_sleep(None);
    let (mut ours, o) = lone_sleep(None);
    let reused = Proc {
        start: u.start.saturating_sub(1),
        ..u
    };
    let a = record(dir.path(), me(true), &boot_id(), &fresh_mark(), reused);
    let b = record(dir.path(), me(true), &boot_id(), &fresh_mark(), o);
    let report = sweep_dir(dir.path());
    assert_eq!(report.swept, 2, "{report:?}");
    assert_eq!(report.groups_left, [u.pid as u32], "{report:?}");
    assert_eq!(report.groups_killed, [o.pid as u32], "{report:?}");
    assert!(
        still_running(&mut unrelated),
        "an unrelated process was hit"
    );
    assert!(ours.wait().unwrap().code().is_none(), "killed by a signal");
    assert!(!a.exists() && !b.exists(), "both records deleted");
    stop(unrelated);
}

/// A live host's records are never touched: not its group, not its marked
/// processes, not the file. A record of another boot is deleted without
/// signalling anything; one of another pid namespace is left alone.
#[test]
fn records_of_a_live_host_or_another_boot_are_not_acted_on() {
    let dir = tempfile::tempdir().unwrap();
    let mark = fresh_mark();
    let (mut leader, l) = lone_sleep(None);
    let (mut marked, _) = lone_sleep(Some(&mark));
    let live = record(dir.path(), me(false), &boot_id(), &mark, l);
    let report = sweep_dir(dir.path());
    assert_eq!((report.live, report.swept), (1, 0), "{report:?}");
    assert!(report.stopped_nothing(), "{report:?}");
    assert!(live.exists());
    assert!(still_running(&mut leader) && still_running(&mut marked));

    std::fs::remove_file(&live).unwrap();
    let other = record(
        dir.path(),
        me(true),
        "00000000-0000-0000-0000-000000000000",
        &mark,
        l,
    );
    let report = sweep_dir(dir.path());
    assert_eq!(report.other_boot, 1, "{report:?}");
    assert!(report.stopped_nothing(), "{report:?}");
    assert!(!other.exists(), "deleted");
    assert!(still_running(&mut leader) && still_running(&mut marked));

    // A dead host of another pid namespace: its pids mean nothing here.
    let foreign = record(dir.path(), me(true), &boot_id(), &mark, l);
    let text = std::fs::read_to_string(&foreign).unwrap();
    std::fs::write(&foreign, text.replace(&pid_ns(), "pid:[1]")).unwrap();
    let report = sweep_dir(dir.path());
    assert_eq!(report.other_namespace, 1, "{report:?}");
    assert!(report.stopped_nothing() && foreign.exists(), "{report:?}");
    assert!(still_running(&mut leader) && still_running(&mut marked));
    stop(leader);
    stop(marked);
}

/// A dead host's marked processes are stopped wherever they live; damaged
/// files are deleted, a newer format is left for its own library.
#[test]
fn a_dead_hosts_marked_processes_are_stopped_and_damaged_files_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let mark = fresh_mark();
    let (mut marked, m) = lone_sleep(Some(&mark));
    let gone = Proc { pid: i32::MAX, ..m };
    record(dir.path(), me(true), &boot_id(), &mark, gone);
    let damaged = dir.path().join("x.rec");
    std::fs::write(&damaged, "not a record").unwrap();
    let newer = dir.path().join("y.rec");
    std::fs::write(&newer, "agent-adaptor-process record 2\n").unwrap();
    let report = sweep_dir(dir.path());
    assert_eq!(report.killed, [m.pid as u32], "{report:?}");
    assert_eq!(report.unreadable, 2, "{report:?}");
    assert!(
        marked.wait().unwrap().code().is_none(),
        "killed by a signal"
    );
    assert!(!damaged.exists() && newer.exists());
}

/// The next host's first spawn sweeps the ledger: what a `SIGKILL`ed host
/// left is stopped without anyone calling `sweep`.
#[test]
fn the_next_hosts_first_spawn_sweeps_what_a_killed_host_left() {
    let state = tempfile::tempdir().unwrap();
    let mut killed = Host::start("hang", state.path());
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    let [_, tool, daemon] = killed.tree;
    let left_running = tool.alive() && daemon.alive();
    let mut next = Host::start("shutdown", state.path());
    assert_dead(
        &[tool, daemon],
        Duration::from_secs(5),
        "the next host's start",
    );
    assert!(
        left_running,
        "the sweep, not the host's death, stopped them"
    );
    assert_eq!(next.records, 1, "only the next host's own record is left");
    read_until(&mut next.out, "after ");
    assert!(next.child.wait().unwrap().success());
    assert_dead(
        &next.tree,
        Duration::from_secs(5),
        "the next host's shutdown",
    );
}

/// A state directory that cannot be created costs the ledger, never the
/// spawn: the host runs its child without a record, and shutdown still
/// stops the whole tree.
#[test]
fn an_unusable_state_directory_is_no_spawn_failure() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let mut host = Host::start("shutdown", &file);
    assert_eq!(host.records, 0);
    read_until(&mut host.out, "after ");
    assert!(host.child.wait().unwrap().success());
    assert_dead(&host.tree, Duration::from_secs(5), "the host's shutdown");
}
