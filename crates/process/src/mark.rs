//! The marker in every child's environment, and finding (and signalling)
//! the processes that carry one.
//!
//! Every child gets [`PROCESS_MARK_ENV`]`=<128-bit random hex>`, which its
//! descendants inherit wherever they are re-parented: a double-forked
//! `setsid` daemon whose parent chain no longer leads to the child still
//! carries it. Finding them reads `/proc/<pid>/stat` of every process and
//! `/proc/<pid>/environ` only of those started at or after the child, so it
//! is run at the end of a process (and by the ledger sweep), never in the
//! periodic descendant scan. A process that replaced its environment
//! (`env -i`) is not found this way (the process-group signals still reach
//! it if it stayed in a group we know). Linux only: elsewhere nothing is
//! found.

use std::collections::BTreeSet;
use std::io::Read;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::procfs;

/// The environment variable that marks every child of this crate and its
/// descendants: `AGENT_ADAPTOR_PROCESS_MARK=<32 hex digits>`, unique per
/// spawned [`Process`](crate::Process). Set after the
/// [`Command`](crate::Command)'s environment recipe, so a recipe cannot
/// remove it.
pub const PROCESS_MARK_ENV: &str = "AGENT_ADAPTOR_PROCESS_MARK";

/// How many times a sweep looks again after signalling what it found (a
/// daemon may fork between a look and the signal).
const ROUNDS: usize = 8;

/// One child's marker value (32 lowercase hex digits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mark(String);

impl Mark {
    /// A fresh random marker.
    pub(crate) fn new() -> Mark {
        let mut bytes = [0u8; 16];
        let random = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
        if random.is_err() {
            bytes = fallback_random();
        }
        Mark(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// A marker read back from a record; `None` unless it is 32 hex digits.
    pub(crate) fn parse(text: &str) -> Option<Mark> {
        (text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| Mark(text.to_ascii_lowercase()))
    }

    pub(crate) fn value(&self) -> &str {
        &self.0
    }

    /// `NAME=value`, as it appears in `/proc/<pid>/environ`.
    fn entry(&self) -> Vec<u8> {
        format!("{PROCESS_MARK_ENV}={}", self.0).into_bytes()
    }
}

/// 128 bits from the standard library's per-process random hash keys, the
/// time and a counter, for a system without `/dev/urandom`.
fn fallback_random() -> [u8; 16] {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut out = [0u8; 16];
    for half in out.chunks_mut(8) {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_u32(std::process::id());
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        half.copy_from_slice(&h.finish().to_le_bytes());
    }
    out
}

/// The processes (not zombies) that carry one of `marks`, each started at
/// or after that marker's child (`since`, clock ticks since boot); never
/// this process.
pub(crate) fn find(marks: &[(Mark, u64)]) -> Vec<procfs::Stat> {
    let entries: Vec<(Vec<u8>, u64)> = marks.iter().map(|(m, since)| (m.entry(), *since)).collect();
    let Some(earliest) = marks.iter().map(|(_, since)| *since).min() else {
        return Vec::new();
    };
    let me = std::process::id() as i32;
    let mut buf = Vec::new();
    procfs::all_pids()
        .into_iter()
        .filter(|pid| *pid != me && *pid > 1)
        .filter_map(procfs::stat)
        .filter(|s| s.start >= earliest && !s.is_dead())
        .filter(|s| {
            entries.iter().any(|(entry, since)| {
                s.start >= *since && procfs::environ_contains(s.pid, entry, &mut buf)
            })
        })
        .collect()
}

/// Send `sig` to every process [`find`] finds for `marks`; for `SIGKILL`,
/// look again until nothing new turns up (bounded). Returns the pids
/// signalled.
///
/// A pid is signalled right after its environment was read; it could only
/// name another process if this one exited and the pid was reused in
/// between — the same window every pid-based `kill` has.
pub(crate) fn signal(marks: &[(Mark, u64)], sig: Signal) -> BTreeSet<i32> {
    let rounds = if sig == Signal::SIGKILL { ROUNDS } else { 1 };
    let mut signalled = BTreeSet::new();
    for _ in 0..rounds {
        let mut fresh = false;
        for s in find(marks) {
            match kill(Pid::from_raw(s.pid), sig) {
                Ok(()) => fresh |= signalled.insert(s.pid),
                Err(err) if err != nix::errno::Errno::ESRCH => {
                    tracing::debug!(pid = s.pid, signal = sig.as_str(), %err, "kill failed");
                }
                Err(_) => {}
            }
        }
        if !fresh {
            break;
        }
    }
    signalled
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn markers_are_random_hex_and_round_trip() {
        let (a, b) = (Mark::new(), Mark::new());
        assert_ne!(a, b);
        assert_eq!(a.value().len(), 32);
        assert_eq!(Mark::parse(a.value()), Some(a.clone()));
        assert!(Mark::parse("xyz").is_none());
        assert!(Mark::parse(&"g".repeat(32)).is_none());
        let f = fallback_random();
        assert_ne!(f, fallback_random());
    }

    #[test]
    fn finds_and_kills_a_marked_process_and_nothing_else() {
        let mark = Mark::new();
        let other = Mark::new();
        let since = procfs::stat(std::process::id() as i32).unwrap().start;
        let spawn = |m: &Mark| {
            std::process::Command::new("sleep")
                .arg("30")
                .env(PROCESS_MARK_ENV, m.value())
                .spawn()
                .unwrap()
        };
        let (mut ours, mut theirs) = (spawn(&mark), spawn(&other));
        let found: Vec<i32> = find(&[(mark.clone(), since)])
            .iter()
            .map(|s| s.pid)
            .collect();
        assert_eq!(found, vec![ours.id() as i32]);
        let late = procfs::stat(ours.id() as i32).unwrap().start + 1;
        assert!(find(&[(mark.clone(), late)]).is_empty(), "started before");
        let killed = signal(&[(mark, since)], Signal::SIGKILL);
        assert_eq!(killed, BTreeSet::from([ours.id() as i32]));
        assert!(ours.wait().unwrap().code().is_none(), "killed by a signal");
        assert!(
            theirs.try_wait().unwrap().is_none(),
            "another marker is left alone"
        );
        theirs.kill().unwrap();
        theirs.wait().unwrap();
    }
}
