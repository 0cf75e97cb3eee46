//! A stand-in agent CLI that leaves a process tree behind, and `/proc`
//! checks that find what is left of it — by PID and start time, process
//! group, session and an environment tag, never by name (Linux). The
//! host-death tests of the CLI and `agent-adaptor-bench host-death` use it.
//!
//! The stand-in `claude` ([`TreeStandIn`]) first writes its own PID, then
//! starts a tool in its process group (`sleep 1000 &`) and a double-forked
//! daemon in a session of its own (`( setsid sleep 1002 & )`), writing each
//! PID with its start time as soon as it has it, to
//! `$AA_TEST_PIDS_DIR/<its pid>`; then it streams a valid stream-json answer
//! slowly (the testkit's fake CLI, one line every `$AA_TEST_DELAY_MS`).
//! With `AA_TEST_QUICK=1` it starts no children and answers at once.
//! Give the host `--env AA_TEST_PIDS_DIR --env AA_TEST_TAG ...` so the CLI
//! receives them; `AA_TEST_TAG` is inherited by every descendant and found
//! by [`tagged`].

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::fixtures;
use crate::replay::OPTS_ENV;

/// The `PATH` after the stand-in's directory.
pub const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// One process, by PID and start time (clock ticks after boot), so a
/// reused PID is never taken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Proc {
    /// The PID.
    pub pid: u32,
    /// Field 22 of `/proc/PID/stat`.
    pub start: u64,
}

impl Proc {
    /// Whether it still runs: the PID exists with the same start time and
    /// is not a zombie (a killed orphan may wait for a reaper).
    pub fn alive(&self) -> bool {
        stat(self.pid).is_some_and(|s| s.start == self.start && s.state != 'Z')
    }
}

/// What one run of the stand-in wrote.
#[derive(Debug, Clone, Default)]
pub struct RunPids {
    /// The stand-in itself (the host's direct child, its group leader).
    pub leader: Option<Proc>,
    /// The tool in its group.
    pub tool: Option<Proc>,
    /// The setsid daemon.
    pub daemon: Option<Proc>,
}

impl RunPids {
    /// Every process recorded.
    pub fn all(&self) -> Vec<Proc> {
        [self.leader, self.tool, self.daemon]
            .into_iter()
            .flatten()
            .collect()
    }

    /// What of this run still runs: recorded processes, members of the
    /// leader's group and of the daemon's session.
    pub fn left(&self) -> Vec<String> {
        let mut left: Vec<String> = self
            .all()
            .into_iter()
            .filter(Proc::alive)
            .map(|p| format!("pid {} (start {})", p.pid, p.start))
            .collect();
        if let Some(leader) = self.leader {
            left.extend(
                members(|s| s.pgrp == leader.pid)
                    .into_iter()
                    .map(|p| format!("pid {p} in group {}", leader.pid)),
            );
        }
        if let Some(daemon) = self.daemon {
            left.extend(
                members(|s| s.session == daemon.pid)
                    .into_iter()
                    .map(|p| format!("pid {p} in session {}", daemon.pid)),
            );
        }
        left.sort();
        left.dedup();
        left
    }
}

/// The stand-in (see the module docs); its directory is removed on drop.
pub struct TreeStandIn {
    dir: PathBuf,
}

impl Drop for TreeStandIn {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl TreeStandIn {
    /// A stand-in `claude` whose answer has `pieces` assistant lines,
    /// replayed by the fake CLI at `fake` (see
    /// [`fake_cli_binary`](crate::replay::fake_cli_binary)).
    pub fn new(fake: &Path, pieces: usize) -> io::Result<TreeStandIn> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempdir()?;
        let fixture = dir.join("answer.jsonl");
        std::fs::write(&fixture, slow_answer(pieces)?)?;
        let script = format!(
            r#"#!/bin/sh
f="$AA_TEST_PIDS_DIR/$$"
st() {{ cut -d' ' -f22 "/proc/$1/stat" 2>/dev/null; }}
echo "leader $$ $(st $$)" >> "$f"
if [ -z "$AA_TEST_QUICK" ]; then
  sleep 1000 &
  echo "tool $! $(st $!)" >> "$f"
  ( setsid sleep 1002 & echo "daemon $! $(st $!)" >> "$f" )
fi
# A resident CLI (stream-json input) answers each turn read from stdin.
case " $* " in *" --input-format stream-json "*) turns=--serve-turns ;; esac
{OPTS_ENV}="--fixture {fixture} --delay-ms ${{AA_TEST_DELAY_MS:-0}} $turns" exec {fake} "$@"
"#,
            fixture = fixture.display(),
            fake = fake.display(),
        );
        let bin = dir.join("bin");
        std::fs::create_dir(&bin)?;
        let path = bin.join("claude");
        std::fs::write(&path, script)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        Ok(TreeStandIn { dir })
    }

    /// A `PATH` value with the stand-in first.
    pub fn path_var(&self) -> String {
        format!("{}:{SYSTEM_PATH}", self.dir.join("bin").display())
    }
}

/// The `--env` flags that pass the stand-in's variables through the
/// driver's allowlist.
pub const PASS_ENV: [&str; 8] = [
    "--env",
    "AA_TEST_PIDS_DIR",
    "--env",
    "AA_TEST_TAG",
    "--env",
    "AA_TEST_DELAY_MS",
    "--env",
    "AA_TEST_QUICK",
];

/// A fresh tag for [`tagged`]: unique in this process and across
/// processes (time, PID and a counter).
pub fn new_tag() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{nanos:x}-{:x}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A new directory under the system's temporary directory.
fn tempdir() -> io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("aa-proc-tree-{}", new_tag()));
    std::fs::create_dir(&dir)?;
    Ok(dir)
}

/// The runs recorded in `pids_dir`, by the stand-in's PID.
pub fn runs(pids_dir: &Path) -> BTreeMap<u32, RunPids> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(pids_dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let Some(key) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let mut run = RunPids::default();
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            let (Some(role), Some(pid)) = (parts.next(), parts.next()) else {
                continue;
            };
            let Ok(pid) = pid.parse::<u32>() else {
                continue;
            };
            // Without a start time (the writer died first), the PID's
            // current start counts only while it carries the tag's
            // environment; `tagged` covers that case.
            let Some(start) = parts.next().and_then(|s| s.parse().ok()) else {
                continue;
            };
            let proc = Some(Proc { pid, start });
            match role {
                "leader" => run.leader = proc,
                "tool" => run.tool = proc,
                "daemon" => run.daemon = proc,
                _ => {}
            }
        }
        out.insert(key, run);
    }
    out
}

/// The fields of `/proc/PID/stat` the checks use.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    /// State letter (`R`, `S`, `Z` …).
    pub state: char,
    /// Parent PID.
    pub ppid: u32,
    /// Process group.
    pub pgrp: u32,
    /// Session.
    pub session: u32,
    /// Start time in clock ticks after boot.
    pub start: u64,
}

/// `/proc/PID/stat`, parsed; `None` when the PID does not exist.
pub fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid pgrp session ...: comm may hold spaces and ')'.
    let (_, rest) = text.rsplit_once(") ")?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        session: f.get(3)?.parse().ok()?,
        start: f.get(19)?.parse().ok()?,
    })
}

/// True once `pid` has exited as its parent sees it (`waitpid` reports
/// it): gone, or a zombie with no thread left but its leader. A killed
/// multi-threaded process shows its leader as a zombie while its other
/// threads are still exiting; until they have, the parent's `try_wait`
/// still says it runs.
pub fn exited(pid: u32) -> bool {
    match stat(pid) {
        None => true,
        Some(s) if s.state == 'Z' => {
            std::fs::read_dir(format!("/proc/{pid}/task")).map_or(true, |tasks| tasks.count() <= 1)
        }
        Some(_) => false,
    }
}

/// Every PID now running.
///
/// # Panics
///
/// When `/proc` cannot be read: a check that could not look must not pass
/// as "nothing left".
pub fn all_pids() -> Vec<u32> {
    let dir = match std::fs::read_dir("/proc") {
        Ok(dir) => dir,
        Err(err) => panic!("cannot read /proc to check processes: {err}"),
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The running (non-zombie) processes whose stat matches `pick`.
pub fn members(pick: impl Fn(&Stat) -> bool) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| stat(*pid).is_some_and(|s| s.state != 'Z' && pick(&s)))
        .collect()
}

/// The running processes whose environment holds `AA_TEST_TAG=<tag>`.
pub fn tagged(tag: &str) -> Vec<u32> {
    let needle = format!("AA_TEST_TAG={tag}");
    all_pids()
        .into_iter()
        .filter(|pid| stat(*pid).is_some_and(|s| s.state != 'Z'))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .collect()
}

/// The direct children of `parent` that run now, as [`Proc`]s.
pub fn children(parent: u32) -> Vec<Proc> {
    all_pids()
        .into_iter()
        .filter_map(|pid| {
            let s = stat(pid)?;
            (s.ppid == parent && s.state != 'Z').then_some(Proc {
                pid,
                start: s.start,
            })
        })
        .collect()
}

/// A stream-json answer: `system/init`, `pieces` assistant text lines,
/// then the `result` line (from the `print-basic` capture).
fn slow_answer(pieces: usize) -> io::Result<String> {
    let capture = std::fs::read_to_string(fixtures::path("claude/print-basic.jsonl"))?;
    let lines: Vec<&str> = capture.lines().collect();
    let bad = || io::Error::other("claude/print-basic.jsonl: unexpected shape");
    let (init, text, result) = match lines.as_slice() {
        [init, _, _, text, .., result] => (*init, *text, *result),
        _ => return Err(bad()),
    };
    let mut out = format!("{init}\n");
    let template: serde_json::Value = serde_json::from_str(text).map_err(|_| bad())?;
    for i in 0..pieces {
        let mut line = template.clone();
        line["message"]["id"] = format!("msg_piece_{i}").into();
        line["message"]["content"][0]["text"] = format!("piece {i}. ").into();
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out.push_str(result);
    out.push('\n');
    Ok(out)
}
