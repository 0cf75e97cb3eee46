//! Watching a driver's CLI process and its process group through `/proc`
//! (via the testkit's `proc_tree`): the cancellation tests take a
//! [`GroupWatch`] while the CLI runs and check, once the run ended, that
//! neither the CLI nor any other member of its group is left.
#![allow(dead_code)] // each test binary uses its own part

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_adaptor_core::{Event, ProcessKind};
use agent_adaptor_testkit::proc_tree::{self, Proc};

/// How long the group may take to vanish once the run ended (the run's own
/// result waits for the kill; this only absorbs the kernel's delivery of
/// SIGKILL to the group's other members). A bound on the wait, not a claim.
pub const GONE_BOUND: Duration = Duration::from_secs(10);

/// The pid a `ProcessInfo` spawn event names, if `event` is one.
pub fn spawned_pid(event: &Event) -> Option<u32> {
    match event {
        Event::ProcessInfo(p) if p.kind == ProcessKind::Spawn => {
            p.metadata.get("pid").and_then(|s| s.parse().ok())
        }
        _ => None,
    }
}

/// The running (non-zombie) members of group `pgid`. Panics when `/proc`
/// cannot be read: an unreadable `/proc` must not pass for an empty group.
pub fn group_members(pgid: u32) -> Vec<u32> {
    assert!(
        std::fs::read_dir("/proc").is_ok(),
        "/proc cannot be read: the process group cannot be checked"
    );
    proc_tree::members(|s| s.pgrp == pgid)
}

/// A stand-in that gives the CLI's process group a second member: a script
/// that ignores SIGTERM, starts `sleep` in the background (the ignored
/// SIGTERM is inherited, so only a SIGKILL of the whole group stops it) and
/// then execs the real program with its arguments (the pid stays). Removed
/// on drop.
pub struct WithGroupMember {
    _dir: tempfile::TempDir,
    /// The script: use it as the driver's command.
    pub path: PathBuf,
}

impl WithGroupMember {
    /// The stand-in for `program`.
    pub fn wrapping(program: &Path) -> WithGroupMember {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("cli-with-group-member");
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\ntrap '' TERM\n/bin/sleep 1000 &\nexec '{}' \"$@\"\n",
                program.display()
            ),
        )
        .expect("the stand-in is written");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("the stand-in is executable");
        WithGroupMember { _dir: dir, path }
    }
}

/// A CLI seen running, with what ran in its process group at that moment.
#[derive(Debug, Clone)]
pub struct GroupWatch {
    /// The CLI, by pid and start time.
    pub leader: Proc,
    /// The running members of its group when the watch was taken.
    pub members: Vec<u32>,
}

impl GroupWatch {
    /// Takes the watch of the CLI `pid`, asserting it runs now and leads a
    /// group of its own (the process helper puts it in one).
    pub fn of(pid: u32) -> GroupWatch {
        let stat =
            proc_tree::stat(pid).unwrap_or_else(|| panic!("the CLI (pid {pid}) runs when watched"));
        assert_ne!(stat.state, 'Z', "the CLI (pid {pid}) runs when watched");
        assert_eq!(stat.pgrp, pid, "the CLI (pid {pid}) leads its own group");
        let members = group_members(pid);
        assert!(
            members.contains(&pid),
            "group {pid} holds the CLI: {members:?}"
        );
        GroupWatch {
            leader: Proc {
                pid,
                start: stat.start,
            },
            members,
        }
    }

    /// What of the watched CLI is still running: its group's running
    /// members, and the CLI itself while it runs (same pid and start time).
    pub fn left(&self) -> Vec<u32> {
        let mut left = group_members(self.leader.pid);
        if self.leader.alive() && !left.contains(&self.leader.pid) {
            left.push(self.leader.pid);
        }
        left
    }

    /// Polls until nothing of the CLI runs or [`GONE_BOUND`] passed; returns
    /// what is left (empty when everything is gone).
    pub async fn wait_gone(&self) -> Vec<u32> {
        let deadline = Instant::now() + GONE_BOUND;
        loop {
            let left = self.left();
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Asserts that the group held another member besides the CLI when
    /// watched (see [`WithGroupMember`]).
    pub fn assert_had_other_members(&self) {
        assert!(
            self.members.iter().any(|m| *m != self.leader.pid),
            "group {} held another member when watched: {:?}",
            self.leader.pid,
            self.members
        );
    }

    /// Asserts that nothing of the CLI runs any more (waiting at most
    /// [`GONE_BOUND`]); `what` names the case in the failure.
    pub async fn assert_gone(&self, what: &str) {
        let left = self.wait_gone().await;
        assert!(
            left.is_empty(),
            "{what}: processes {left:?} of the CLI's group {} (members when watched: {:?}) \
             still run {GONE_BOUND:?} after the run ended",
            self.leader.pid,
            self.members
        );
    }
}
