//! The ledger: one record file per running child, so that what a host
//! killed by `SIGKILL` left behind can be found by the next host
//! ([`sweep`](crate::sweep)).
//!
//! A record lives in `<state>/processes/<marker>.rec`, where `<state>` is
//! `$AGENT_ADAPTOR_STATE_DIR`, else `$XDG_STATE_HOME/agent-adaptor`, else
//! `$HOME/.local/state/agent-adaptor`. It is written (temp file + rename)
//! before the spawn with the host's pid, start time, boot id and pid
//! namespace, the
//! child's marker and the spawn time; after the spawn the leader's pid
//! (= its process group), session and start time are added. It is removed
//! when the [`Process`](crate::Process) is finished, shut down or dropped,
//! after the final sweep of its group and marked processes. Nothing is
//! synced to disk: a record only matters after the host died while the
//! machine kept running (the page cache survives that), and after a reboot
//! it is void anyway (another boot id).
//!
//! A state directory that cannot be found, created or written costs the
//! ledger (one warning), never a spawn.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::mark::Mark;
use crate::procfs;

/// First line of a record of this format.
const HEADER: &str = "agent-adaptor-process record";
/// The format version this crate writes and sweeps.
const VERSION: u32 = 1;
/// Extension of a record file.
pub(crate) const EXT: &str = "rec";

/// The host: this process, as named in records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Host {
    pub(crate) pid: i32,
    pub(crate) start: u64,
    pub(crate) boot_id: String,
    /// The pid namespace the pids are in (records of another are not ours
    /// to judge: their pids name other processes here).
    pub(crate) pid_ns: String,
}

impl Host {
    /// This process (once; `None` without `/proc`).
    pub(crate) fn current() -> Option<&'static Host> {
        static HOST: OnceLock<Option<Host>> = OnceLock::new();
        HOST.get_or_init(|| {
            let pid = std::process::id() as i32;
            Some(Host {
                pid,
                start: procfs::stat(pid)?.start,
                boot_id: procfs::boot_id()?,
                pid_ns: procfs::pid_namespace()?,
            })
        })
        .as_ref()
    }
}

/// The child, once spawned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Leader {
    /// Its pid, which is also its process group id.
    pub(crate) pid: i32,
    /// Its session (the host's own unless the child called `setsid`;
    /// recorded for diagnosis, never signalled).
    pub(crate) sid: i32,
    /// Its start time (clock ticks since boot).
    pub(crate) start: u64,
}

/// One record file's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) host: Host,
    pub(crate) mark: Mark,
    /// Milliseconds since the Unix epoch.
    pub(crate) spawned_at_ms: u64,
    pub(crate) leader: Option<Leader>,
}

/// What reading a record file gave.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    Record(Record),
    /// A record of another format version (a newer library): not ours to judge.
    OtherVersion,
    /// Not a record (damaged or foreign).
    Malformed,
}

impl Record {
    pub(crate) fn format(&self) -> String {
        let mut text = format!(
            "{HEADER} {VERSION}\nhost_pid={}\nhost_start={}\nboot_id={}\npid_ns={}\nmark={}\nspawned_at_ms={}\n",
            self.host.pid,
            self.host.start,
            self.host.boot_id,
            self.host.pid_ns,
            self.mark.value(),
            self.spawned_at_ms
        );
        if let Some(l) = self.leader {
            text.push_str(&format!(
                "leader_pid={}\nleader_sid={}\nleader_start={}\n",
                l.pid, l.sid, l.start
            ));
        }
        text
    }

    pub(crate) fn parse(text: &str) -> Parsed {
        let mut lines = text.lines();
        let Some(version) = lines.next().and_then(|h| h.strip_prefix(HEADER)) else {
            return Parsed::Malformed;
        };
        match version.trim().parse::<u32>() {
            Ok(VERSION) => {}
            Ok(_) => return Parsed::OtherVersion,
            Err(_) => return Parsed::Malformed,
        }
        let fields: std::collections::BTreeMap<&str, &str> =
            lines.filter_map(|l| l.split_once('=')).collect();
        let num = |k: &str| fields.get(k).and_then(|v| v.parse::<u64>().ok());
        let pid = |k: &str| {
            fields
                .get(k)
                .and_then(|v| v.parse::<i32>().ok())
                .filter(|p| *p > 0)
        };
        let text_field = |k: &str| {
            fields
                .get(k)
                .filter(|v| !v.is_empty())
                .map(|v| (*v).to_owned())
        };
        let record = (|| {
            let leader = match (
                pid("leader_pid"),
                fields.get("leader_sid"),
                num("leader_start"),
            ) {
                (Some(pid), Some(sid), Some(start)) => Some(Leader {
                    pid,
                    sid: sid.parse().ok()?,
                    start,
                }),
                (None, None, None) => None,
                _ => return None,
            };
            Some(Record {
                host: Host {
                    pid: pid("host_pid")?,
                    start: num("host_start")?,
                    boot_id: text_field("boot_id")?,
                    pid_ns: text_field("pid_ns")?,
                },
                mark: Mark::parse(fields.get("mark")?)?,
                spawned_at_ms: num("spawned_at_ms")?,
                leader,
            })
        })();
        record.map_or(Parsed::Malformed, Parsed::Record)
    }
}

/// The variable naming the state directory (see [`state_dir`]).
pub const STATE_DIR_ENV: &str = "AGENT_ADAPTOR_STATE_DIR";

/// The state directory of agent-adaptor hosts: `$AGENT_ADAPTOR_STATE_DIR`,
/// else `$XDG_STATE_HOME/agent-adaptor` (an absolute `XDG_STATE_HOME`
/// only), else `$HOME/.local/state/agent-adaptor`; `None` when no variable
/// gives one. The process ledger lives in its `processes/` directory.
pub fn state_dir() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var(STATE_DIR_ENV)
        .or_else(|| {
            var("XDG_STATE_HOME")
                .filter(|p| p.is_absolute())
                .map(|p| p.join("agent-adaptor"))
        })
        .or_else(|| var("HOME").map(|h| h.join(".local/state/agent-adaptor")))
}

/// `<state>/processes` (see [`state_dir`]).
pub(crate) fn default_dir() -> Option<PathBuf> {
    state_dir().map(|state| state.join("processes"))
}

/// Write `record` to `dir/<marker>.rec` atomically; returns the path.
pub(crate) fn write(dir: &Path, record: &Record) -> std::io::Result<PathBuf> {
    let name = record.mark.value();
    let path = dir.join(format!("{name}.{EXT}"));
    let tmp = dir.join(format!(".{name}.tmp"));
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(record.format().as_bytes()))
        .and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(err) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(err);
    }
    Ok(path)
}

/// Create `dir` (and its parents) readable by this user only.
fn create_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Warn once per process and cause.
fn warn_once(flag: &AtomicBool, message: &str, err: Option<&std::io::Error>) {
    if !flag.swap(true, Ordering::Relaxed) {
        match err {
            Some(err) => tracing::warn!(%err, "{message}"),
            None => tracing::warn!("{message}"),
        }
    }
}

/// One child's ledger entry and marker, owned by its [`Process`](crate::Process):
/// the record file is removed when this is dropped.
#[derive(Debug)]
pub(crate) struct Tracked {
    mark: Mark,
    file: Option<(PathBuf, Record)>,
}

impl Tracked {
    /// Before the spawn: sweep the ledger once per host process, make the
    /// marker, write the record (or warn once why not).
    pub(crate) fn before_spawn() -> Tracked {
        crate::sweep::sweep_once();
        let mark = Mark::new();
        let Some(host) = Host::current() else {
            // No /proc (macOS): a record could never be checked.
            return Tracked { mark, file: None };
        };
        static NO_DIR: AtomicBool = AtomicBool::new(false);
        static NOT_WRITTEN: AtomicBool = AtomicBool::new(false);
        let Some(dir) = default_dir() else {
            warn_once(
                &NO_DIR,
                "no state directory (AGENT_ADAPTOR_STATE_DIR, XDG_STATE_HOME, HOME): \
                 processes left by a killed host cannot be swept later",
                None,
            );
            return Tracked { mark, file: None };
        };
        let record = Record {
            host: host.clone(),
            mark: mark.clone(),
            spawned_at_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            leader: None,
        };
        let file = create_dir(&dir).and_then(|()| write(&dir, &record));
        match file {
            Ok(path) => Tracked {
                mark,
                file: Some((path, record)),
            },
            Err(err) => {
                warn_once(
                    &NOT_WRITTEN,
                    "the process ledger cannot be written: processes left by a killed \
                     host cannot be swept later",
                    Some(&err),
                );
                Tracked { mark, file: None }
            }
        }
    }

    pub(crate) fn mark(&self) -> &Mark {
        &self.mark
    }

    /// After the spawn: the leader's start time (for the marked sweep),
    /// and the record completed with it.
    pub(crate) fn spawned(&mut self, pid: u32) -> Option<u64> {
        let stat = procfs::stat(i32::try_from(pid).ok()?)?;
        if let Some((path, record)) = &mut self.file {
            record.leader = Some(Leader {
                pid: stat.pid,
                sid: stat.sid,
                start: stat.start,
            });
            let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            if let Err(err) = write(&dir, record) {
                tracing::debug!(%err, "process record not completed");
            }
        }
        Some(stat.start)
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Some((path, _)) = self.file.take()
            && let Err(err) = std::fs::remove_file(&path)
            && err.kind() != std::io::ErrorKind::NotFound
        {
            tracing::debug!(%err, "process record not removed");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn record(leader: Option<Leader>) -> Record {
        Record {
            host: Host {
                pid: 10,
                start: 20,
                boot_id: "b-1".into(),
                pid_ns: "pid:[1]".into(),
            },
            mark: Mark::new(),
            spawned_at_ms: 30,
            leader,
        }
    }

    #[test]
    fn records_round_trip() {
        for leader in [
            None,
            Some(Leader {
                pid: 40,
                sid: 5,
                start: 50,
            }),
        ] {
            let r = record(leader);
            assert_eq!(Record::parse(&r.format()), Parsed::Record(r));
        }
    }

    #[test]
    fn damaged_and_foreign_records_are_told_apart() {
        let r = record(None).format();
        assert_eq!(Record::parse(""), Parsed::Malformed);
        assert_eq!(
            Record::parse(&r.replace("mark=", "mork=")),
            Parsed::Malformed
        );
        assert_eq!(
            Record::parse(&r.replace("=10\n", "=0\n")),
            Parsed::Malformed
        );
        assert_eq!(
            Record::parse(&format!("{r}leader_pid=4\n")),
            Parsed::Malformed,
            "half a leader"
        );
        assert_eq!(
            Record::parse(&r.replace("record 1", "record 2")),
            Parsed::OtherVersion
        );
    }

    #[test]
    fn writes_atomically_into_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let r = record(None);
        let path = write(dir.path(), &r).unwrap();
        assert_eq!(path.extension().unwrap(), EXT);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temp file left");
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(Record::parse(&text), Parsed::Record(r));
    }
}
