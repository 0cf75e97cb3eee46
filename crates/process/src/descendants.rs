//! Finding the process groups of a process's descendants through `/proc`
//! (Linux; elsewhere none are found).
//!
//! The usual way walks down from the root through
//! `/proc/<pid>/task/<tid>/children` (`CONFIG_PROC_CHILDREN`), so its cost is
//! proportional to the root's own process tree. Where the kernel lacks those
//! files it falls back to reading `/proc/<pid>/stat` of every process on the
//! machine and following the parent links.
//!
//! Both ways find exactly the processes whose chain of parents still leads to
//! the root: a descendant whose parent already died was re-parented (to init
//! or a subreaper) and is found by neither.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use nix::unistd::{Pid, getpgid};

/// How descendants are looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// Walk down from the root through the `children` files.
    Walk,
    /// Read the parent of every process on the machine.
    FullScan,
}

impl Method {
    /// The walk where the kernel has `children` files, else the full scan
    /// (decided once per process).
    pub(crate) fn best() -> Method {
        static BEST: OnceLock<Method> = OnceLock::new();
        *BEST.get_or_init(|| {
            if std::path::Path::new("/proc/thread-self/children").exists() {
                Method::Walk
            } else {
                Method::FullScan
            }
        })
    }
}

/// The process groups of every descendant of `root` (not `root`'s own,
/// unless a descendant shares it).
pub(crate) fn descendant_groups(root: i32, method: Method) -> BTreeSet<i32> {
    match method {
        Method::Walk => walk(root),
        Method::FullScan => full_scan(root),
    }
}

/// Depth-first through the `children` file of every thread of every process
/// found so far. A process that vanishes meanwhile is skipped.
fn walk(root: i32) -> BTreeSet<i32> {
    let mut groups = BTreeSet::new();
    let mut seen = BTreeSet::from([root]);
    let mut frontier = vec![root];
    let mut text = String::new();
    while let Some(parent) = frontier.pop() {
        // A child's parent is the thread that forked it: read every thread.
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for task in tasks.filter_map(Result::ok) {
            text.clear();
            let path = task.path().join("children");
            if read_into(&path, &mut text).is_err() {
                continue;
            }
            for pid in text.split_ascii_whitespace() {
                let Ok(pid) = pid.parse::<i32>() else {
                    continue;
                };
                if pid > 1 && seen.insert(pid) {
                    if let Ok(pgid) = getpgid(Some(Pid::from_raw(pid))) {
                        groups.insert(pgid.as_raw());
                    }
                    frontier.push(pid);
                }
            }
        }
    }
    groups
}

/// Read a whole `children` file. The kernel resumes it from a position in
/// the child list on every `read`, so a child exiting in between can hide
/// another; one large read (4096 bytes hold hundreds of pids) leaves the
/// least room for that, and the next scan finds what this one missed.
fn read_into(path: &std::path::Path, text: &mut String) -> std::io::Result<()> {
    use std::io::Read;
    text.reserve(4096);
    std::fs::File::open(path)?.read_to_string(text).map(|_| ())
}

/// Every process's `(pid, ppid, pgid)` from `/proc/<pid>/stat`, then the
/// parent links followed down from `root`.
fn full_scan(root: i32) -> BTreeSet<i32> {
    let mut groups = BTreeSet::new();
    let table: Vec<(i32, i32, i32)> = crate::procfs::all_pids()
        .into_iter()
        .filter_map(crate::procfs::stat)
        .map(|s| (s.pid, s.ppid, s.pgid))
        .collect();
    let mut frontier = vec![root];
    let mut seen = BTreeSet::from([root]);
    while let Some(parent) = frontier.pop() {
        for &(pid, ppid, pgid) in &table {
            if ppid == parent && seen.insert(pid) {
                groups.insert(pgid);
                frontier.push(pid);
            }
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// A shell in its own group with two sleeping children, one of which
    /// escaped into its own session; returns it and the escaped pid once
    /// `setsid` took effect.
    fn tree() -> (std::process::Child, i32) {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("setsid sleep 30 & e=$!; sleep 30 & echo $e; wait")
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let escaped: i32 = line.trim().parse().unwrap();
        let start = Instant::now();
        while getpgid(Some(Pid::from_raw(escaped))).map(Pid::as_raw) != Ok(escaped) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "setsid never ran"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        (child, escaped)
    }

    fn stop(mut child: std::process::Child, escaped: i32) {
        use nix::sys::signal::{Signal, kill, killpg};
        let _ = kill(Pid::from_raw(escaped), Signal::SIGKILL);
        let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
        let _ = child.wait();
    }

    #[test]
    fn both_methods_find_the_escaped_group_and_the_own_group() {
        let (child, escaped) = tree();
        let root = child.id() as i32;
        let walked = descendant_groups(root, Method::Walk);
        let scanned = descendant_groups(root, Method::FullScan);
        stop(child, escaped);
        assert_eq!(walked, BTreeSet::from([root, escaped]));
        assert_eq!(scanned, walked, "the fallback finds the same groups");
    }

    #[test]
    fn a_missing_or_childless_root_has_no_descendants() {
        let mut lone = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = lone.id() as i32;
        for method in [Method::Walk, Method::FullScan] {
            assert!(descendant_groups(pid, method).is_empty(), "{method:?}");
            assert!(descendant_groups(i32::MAX, method).is_empty(), "{method:?}");
        }
        lone.kill().unwrap();
        lone.wait().unwrap();
    }
}
