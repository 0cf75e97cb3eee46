//! A stand-in agent CLI for the CLI tests: a shell script named like the
//! real program (`claude`, `codebuddy` …) in a directory of its own, that
//! records the environment it was started with and then replays a capture
//! through the testkit's fake CLI, so the run is a valid one.
//!
//! ```ignore
//! let cli = StandIn::new("claude", "claude/print-basic.jsonl");
//! let out = support::command(home)
//!     .env("PATH", cli.path_var())
//!     .args(["run", "--driver", "claude", "--json", "hi"])
//!     .output()?;
//! let env = cli.recorded_env(); // name → value, as the CLI received it
//! ```
//!
//! Under `serve`, put [`StandIn::path_var`] into the server's `PATH` and
//! read [`StandIn::recorded_env`] after a run finished (each run overwrites
//! the record).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agent_adaptor_testkit::fixtures;
use agent_adaptor_testkit::replay::{OPTS_ENV, fake_cli_binary};

/// The `PATH` the tests give the CLI (no agent CLI on it).
pub const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// A stand-in CLI on a `PATH` of its own (see the module docs).
pub struct StandIn {
    dir: tempfile::TempDir,
    record: PathBuf,
}

impl StandIn {
    /// A stand-in `program` replaying `fixture` (relative to the captures
    /// directory, e.g. `"claude/print-basic.jsonl"`).
    pub fn new(program: &str, fixture: &str) -> StandIn {
        Self::with_opts(program, fixture, "")
    }

    /// Like [`new`](StandIn::new), with more fake-CLI options (e.g.
    /// `"--truncate-after 1 --hang"`: a CLI that stalls mid-turn).
    pub fn with_opts(program: &str, fixture: &str, extra: &str) -> StandIn {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("environ");
        let fake = fake_cli_binary().expect("the fake CLI builds");
        let opts = format!("--fixture {} {extra}", fixtures::path(fixture).display());
        // `/proc/$$/environ` is what the script was started with, before the
        // shell adds PWD and the like. A CLI reading stream-json input (the
        // control transport) is served turn by turn: initialize is answered
        // before the capture's result line.
        let script = format!(
            "#!/bin/sh\ncat /proc/$$/environ > {record}\n\
             case \" $* \" in *\" --input-format stream-json \"*) turns=' --serve-turns' ;; esac\n\
             {OPTS_ENV}={opts}\"$turns\" exec {fake} \"$@\"\n",
            record = quote(&record),
            opts = quote(Path::new(&opts)),
            fake = quote(&fake),
        );
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let path = bin.join(program);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        StandIn { dir, record }
    }

    /// A `PATH` value with the stand-in first, then [`SYSTEM_PATH`].
    pub fn path_var(&self) -> String {
        format!("{}:{SYSTEM_PATH}", self.dir.path().join("bin").display())
    }

    /// The environment the stand-in was last started with (name → value),
    /// without the process helper's own marker (`AGENT_ADAPTOR_PROCESS_MARK`,
    /// on every child, not part of any environment recipe); panics when it
    /// never ran.
    pub fn recorded_env(&self) -> BTreeMap<String, String> {
        let bytes = std::fs::read(&self.record).expect("the stand-in CLI ran");
        bytes
            .split(|b| *b == 0)
            .filter_map(|kv| {
                let kv = String::from_utf8_lossy(kv);
                kv.split_once('=')
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
            })
            .filter(|(k, _)| k != "AGENT_ADAPTOR_PROCESS_MARK")
            .collect()
    }

    /// Whether the stand-in ran since it was made (or last [`reset`](Self::reset)).
    pub fn ran(&self) -> bool {
        self.record.exists()
    }

    /// Forget the last record (before a run whose record is wanted).
    pub fn reset(&self) {
        let _ = std::fs::remove_file(&self.record);
    }
}

/// `path` in single quotes for `sh`.
fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}
