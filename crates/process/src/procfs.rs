//! Reading `/proc` (Linux): a process's stat line (state, parent, group,
//! session, start time), the list of processes, the boot id, and whether a
//! process's environment carries an entry. Where there is no `/proc`
//! (macOS) every read fails and nothing is found.

use std::io::Read;

/// The fields of `/proc/<pid>/stat` this crate uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub(crate) pid: i32,
    /// `R`, `S`, `D`, `Z` (zombie), `X` (dead) …
    pub(crate) state: char,
    pub(crate) ppid: i32,
    pub(crate) pgid: i32,
    pub(crate) sid: i32,
    /// Start time in clock ticks since boot (field 22). Together with the
    /// pid and the boot id it names one process for good: a reused pid has
    /// a later start time.
    pub(crate) start: u64,
}

impl Stat {
    /// A zombie or a dead task: it runs no code any more.
    pub(crate) fn is_dead(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// `/proc/<pid>/stat`, if the process exists.
pub(crate) fn stat(pid: i32) -> Option<Stat> {
    if pid <= 0 {
        return None;
    }
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

/// Parse a stat line. The command name may contain spaces and parentheses:
/// the fields start after the last `)`.
pub(crate) fn parse_stat(pid: i32, text: &str) -> Option<Stat> {
    let rest = text.get(text.rfind(')')? + 2..)?;
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    let sid = fields.next()?.parse().ok()?;
    // Fields 7..=21 (tty_nr … itrealvalue), then starttime (22).
    let start = fields.nth(15)?.parse().ok()?;
    Some(Stat {
        pid,
        state,
        ppid,
        pgid,
        sid,
        start,
    })
}

/// The pid of every process on the machine (that `/proc` shows us).
pub(crate) fn all_pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid > 0)
        .collect()
}

/// The id of the current boot (`/proc/sys/kernel/random/boot_id`): start
/// times are only comparable within one boot.
pub(crate) fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

/// This process's pid namespace (`pid:[4026531836]`): pids and `/proc`
/// mean something only inside one.
pub(crate) fn pid_namespace() -> Option<String> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    link.to_str().map(str::to_owned)
}

/// True when the environment `pid` was started with holds exactly `entry`
/// (`NAME=value`) as one of its entries. Only processes of our own user can
/// be read; others (and vanished ones) are `false`.
pub(crate) fn environ_contains(pid: i32, entry: &[u8], buf: &mut Vec<u8>) -> bool {
    buf.clear();
    let read =
        std::fs::File::open(format!("/proc/{pid}/environ")).and_then(|mut f| f.read_to_end(buf));
    read.is_ok() && buf.split(|b| *b == 0).any(|e| e == entry)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn parses_a_stat_line_with_a_hostile_name() {
        let line = "4242 (a) b (c) R 1 4242 4240 34816 4242 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615";
        let s = parse_stat(4242, line).unwrap();
        assert_eq!(
            (s.state, s.ppid, s.pgid, s.sid, s.start),
            ('R', 1, 4242, 4240, 987654)
        );
        assert!(parse_stat(1, "garbage").is_none());
    }

    #[test]
    fn reads_our_own_process() {
        let me = std::process::id() as i32;
        let s = stat(me).unwrap();
        assert_eq!(s.pid, me);
        assert!(!s.is_dead());
        assert!(s.start > 0);
        assert!(boot_id().is_some());
        assert!(pid_namespace().unwrap().starts_with("pid:"));
        assert!(all_pids().contains(&me));
        let mut buf = Vec::new();
        let (name, value) = std::env::vars().next().unwrap();
        let entry = format!("{name}={value}");
        assert!(environ_contains(me, entry.as_bytes(), &mut buf));
        assert!(!environ_contains(me, b"NO_SUCH_VARIABLE=1", &mut buf));
    }
}
