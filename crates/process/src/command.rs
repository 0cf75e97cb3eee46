//! The [`Command`] builder: what to run, with which environment, stdin and limits.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;

/// Default wait after stdin is closed before `SIGTERM` (spec §11, protocols §0.5).
pub const DEFAULT_CLOSE_GRACE: Duration = Duration::from_secs(2);
/// Default wait after `SIGTERM` before `SIGKILL`.
pub const DEFAULT_TERM_GRACE: Duration = Duration::from_secs(2);
/// Default wait for the child to exit on its own once its output is over
/// (stdout reached end-of-file, or [`Process::expect_exit`](crate::Process::expect_exit)),
/// before it is stopped (stdin closed, `SIGTERM`, `term_grace`, `SIGKILL`).
pub const DEFAULT_EXIT_GRACE: Duration = Duration::from_secs(3);
/// Default size of a raw stream held in memory before it spills to a file (4 MiB).
pub const DEFAULT_SPILL_THRESHOLD: usize = 4 * 1024 * 1024;
/// Default longest stdout line held in memory; longer lines are file-backed (1 MiB).
pub const DEFAULT_MAX_LINE_IN_MEMORY: usize = 1024 * 1024;

/// What the child reads on stdin.
#[derive(Debug, Clone, Default)]
pub enum StdinMode {
    /// `/dev/null`: the child sees end-of-file at once. The default, and the
    /// right choice for every CLI that is not speaking a stdin protocol
    /// (`codex exec` hangs on an open stdin; protocols §0.1).
    #[default]
    Null,
    /// These bytes are written, then stdin is closed (end-of-file). Writing
    /// happens while the caller pulls output (`next_line`, `finish`), so a
    /// child that answers before reading everything cannot deadlock the run.
    Bytes(Bytes),
    /// A pipe the caller writes through a
    /// [`StdinController`](crate::StdinController) from
    /// [`Process::take_stdin`](crate::Process::take_stdin) (bidirectional
    /// protocols: JSON-RPC, stream-json input, ACP).
    Pipe,
}

/// One step of the environment recipe, applied in call order at spawn.
#[derive(Clone)]
pub(crate) enum EnvOp {
    /// Drop everything collected so far.
    Clear,
    /// Copy these variables from the parent, when present there.
    Inherit(Vec<OsString>),
    /// Copy every parent variable whose name starts with one of these.
    InheritPrefixed(Vec<OsString>),
    /// Set a variable.
    Set(OsString, OsString),
    /// Remove a variable.
    Remove(OsString),
}

/// A program to run under the process helper.
///
/// # Environment
///
/// By default the child **inherits the whole parent environment**, like
/// [`std::process::Command`]. The environment methods are a recipe applied in
/// call order at spawn time, starting from that inherited set:
///
/// * [`env_clear`](Command::env_clear) empties it (start from nothing);
/// * [`inherit_env`](Command::inherit_env) copies the named variables from the
///   parent, skipping those the parent does not have;
/// * [`inherit_env_prefixed`](Command::inherit_env_prefixed) copies every
///   parent variable whose name starts with one of the given prefixes
///   (`LC_`, `ANTHROPIC_`);
/// * [`env`](Command::env) sets and [`env_remove`](Command::env_remove)
///   removes one variable.
///
/// So `env_clear().inherit_env(["PATH", "HOME"]).env("API_KEY", k)` gives the
/// child exactly `PATH`, `HOME` (when set) and `API_KEY` — plus, after the
/// recipe, [`PROCESS_MARK_ENV`](crate::PROCESS_MARK_ENV) with a value unique
/// to the child, which marks it and its descendants so that none outlives
/// the [`Process`](crate::Process) (not part of
/// [`effective_env`](Command::effective_env)). Environment values never
/// appear in `Debug` output or in errors.
///
/// # Limits
///
/// | setting | default | meaning |
/// |---|---|---|
/// | [`close_grace`](Command::close_grace) | 2 s | after stdin is closed (or after the child exited while its pipes stay open), how long to wait before signalling |
/// | [`term_grace`](Command::term_grace) | 2 s | `SIGTERM` → `SIGKILL` |
/// | [`exit_grace`](Command::exit_grace) | 3 s | once the output is over (stdout at end-of-file, or [`expect_exit`](crate::Process::expect_exit)), how long the child may keep running before it is stopped |
/// | [`spill_threshold`](Command::spill_threshold) | 4 MiB | per raw stream, bytes kept in memory before spilling to a temporary file |
/// | [`max_line_in_memory`](Command::max_line_in_memory) | 1 MiB | longer stdout lines are file-backed |
/// | [`timeout`](Command::timeout) | none | whole-process budget from spawn |
#[derive(Clone)]
pub struct Command {
    pub(crate) program: OsString,
    pub(crate) args: Vec<OsString>,
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) env_ops: Vec<EnvOp>,
    pub(crate) stdin: StdinMode,
    pub(crate) close_grace: Duration,
    pub(crate) term_grace: Duration,
    pub(crate) exit_grace: Duration,
    pub(crate) spill_threshold: usize,
    pub(crate) max_line_in_memory: usize,
    pub(crate) timeout: Option<Duration>,
    pub(crate) spill_dir: Option<PathBuf>,
}

impl Command {
    /// A command running `program` (looked up in the child's `PATH` when it
    /// has no slash), with no arguments and every default.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Command {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            cwd: None,
            env_ops: Vec::new(),
            stdin: StdinMode::Null,
            close_grace: DEFAULT_CLOSE_GRACE,
            term_grace: DEFAULT_TERM_GRACE,
            exit_grace: DEFAULT_EXIT_GRACE,
            spill_threshold: DEFAULT_SPILL_THRESHOLD,
            max_line_in_memory: DEFAULT_MAX_LINE_IN_MEMORY,
            timeout: None,
            spill_dir: None,
        }
    }

    /// Append one argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Append several arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Run the child in this working directory (default: the parent's).
    pub fn cwd(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }

    /// Start the child's environment from nothing (instead of the parent's).
    pub fn env_clear(&mut self) -> &mut Self {
        self.env_ops.push(EnvOp::Clear);
        self
    }

    /// Copy the named variables from the parent environment, each only when
    /// the parent has it. Useful after [`env_clear`](Command::env_clear).
    pub fn inherit_env<I, S>(&mut self, names: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let names = names.into_iter().map(|n| n.as_ref().to_owned()).collect();
        self.env_ops.push(EnvOp::Inherit(names));
        self
    }

    /// Copy every variable of the parent environment whose name starts with
    /// one of `prefixes` (e.g. `"LC_"` for the locale categories). An empty
    /// prefix matches nothing (use the default inheritance to pass
    /// everything).
    pub fn inherit_env_prefixed<I, S>(&mut self, prefixes: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let prefixes = prefixes
            .into_iter()
            .map(|p| p.as_ref().to_owned())
            .filter(|p| !p.is_empty())
            .collect();
        self.env_ops.push(EnvOp::InheritPrefixed(prefixes));
        self
    }

    /// Set one environment variable.
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.env_ops.push(EnvOp::Set(
            key.as_ref().to_owned(),
            value.as_ref().to_owned(),
        ));
        self
    }

    /// Remove one environment variable.
    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Self {
        self.env_ops.push(EnvOp::Remove(key.as_ref().to_owned()));
        self
    }

    /// What the child reads on stdin (default [`StdinMode::Null`]).
    pub fn stdin(&mut self, mode: StdinMode) -> &mut Self {
        self.stdin = mode;
        self
    }

    /// How long to wait for the child to exit after its stdin was closed
    /// before sending `SIGTERM` to the group; also how long pipes may stay
    /// open after the child exited before the group is killed (default 2 s).
    pub fn close_grace(&mut self, grace: Duration) -> &mut Self {
        self.close_grace = grace;
        self
    }

    /// How long to wait after `SIGTERM` before `SIGKILL` (default 2 s).
    pub fn term_grace(&mut self, grace: Duration) -> &mut Self {
        self.term_grace = grace;
        self
    }

    /// How long the child may keep running once its output is over — its
    /// stdout reached end-of-file, or the caller said the conversation is
    /// over with [`Process::expect_exit`](crate::Process::expect_exit) —
    /// before it is stopped: stdin closed and `SIGTERM` to the group at once,
    /// then `SIGKILL` after [`term_grace`](Command::term_grace) (default
    /// 3 s). The result then reports
    /// [`ExitInfo::stopped_after_output`](crate::ExitInfo::stopped_after_output).
    ///
    /// A CLI that answered and then lingers (a Node CLI keeping an MCP
    /// handle open) would otherwise keep the run from ending.
    pub fn exit_grace(&mut self, grace: Duration) -> &mut Self {
        self.exit_grace = grace;
        self
    }

    /// The [`exit_grace`](Command::exit_grace).
    pub fn get_exit_grace(&self) -> Duration {
        self.exit_grace
    }

    /// Bytes of each raw stream kept in memory before the capture spills to
    /// a temporary file (default 4 MiB).
    pub fn spill_threshold(&mut self, bytes: usize) -> &mut Self {
        self.spill_threshold = bytes;
        self
    }

    /// Longest stdout line kept in memory (default 1 MiB). Longer lines are
    /// not truncated: they are handed out file-backed.
    pub fn max_line_in_memory(&mut self, bytes: usize) -> &mut Self {
        self.max_line_in_memory = bytes;
        self
    }

    /// Whole-process time budget, counted from spawn (default none). When it
    /// expires the shutdown sequence runs and the result reports
    /// [`ExitInfo::timed_out`](crate::ExitInfo::timed_out).
    ///
    /// Like all of the process's clock, it is acted on while the caller
    /// awaits [`next_line`](crate::Process::next_line),
    /// [`finish`](crate::Process::finish) or
    /// [`shutdown`](crate::Process::shutdown) — which a driver's run loop
    /// always does. A driver blocked elsewhere (e.g. writing stdin) should
    /// `select!` against its own cancel token.
    pub fn timeout(&mut self, budget: Option<Duration>) -> &mut Self {
        self.timeout = budget;
        self
    }

    /// Directory for spill files (default: [`std::env::temp_dir`]). Spill
    /// files are unlinked at creation, so nothing is left behind.
    pub fn spill_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.spill_dir = Some(dir.as_ref().to_owned());
        self
    }

    /// The program, as given.
    pub fn get_program(&self) -> &OsStr {
        &self.program
    }

    /// The arguments, as given.
    pub fn get_args(&self) -> &[OsString] {
        &self.args
    }

    /// The working directory, if one was set.
    pub fn get_cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// The complete environment the child would get if spawned now: the
    /// recipe applied to this process's current environment, exactly as
    /// spawning does. For comparing what two commands would run with (e.g. a
    /// process signature); the values may be secrets — hash them, never log
    /// them.
    pub fn effective_env(&self) -> BTreeMap<OsString, OsString> {
        self.resolve_env(std::env::vars_os())
    }

    /// The program name for errors and logs (lossy UTF-8).
    pub(crate) fn program_name(&self) -> String {
        self.program.to_string_lossy().into_owned()
    }

    /// The environment the child will get, resolved against `parent`.
    pub(crate) fn resolve_env(
        &self,
        parent: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> BTreeMap<OsString, OsString> {
        let parent: BTreeMap<OsString, OsString> = parent.into_iter().collect();
        let mut env = parent.clone();
        for op in &self.env_ops {
            match op {
                EnvOp::Clear => env.clear(),
                EnvOp::Inherit(names) => {
                    for name in names {
                        if let Some(value) = parent.get(name) {
                            env.insert(name.clone(), value.clone());
                        }
                    }
                }
                EnvOp::InheritPrefixed(prefixes) => {
                    for (name, value) in &parent {
                        if prefixes
                            .iter()
                            .any(|p| name.as_encoded_bytes().starts_with(p.as_encoded_bytes()))
                        {
                            env.insert(name.clone(), value.clone());
                        }
                    }
                }
                EnvOp::Set(k, v) => {
                    env.insert(k.clone(), v.clone());
                }
                EnvOp::Remove(k) => {
                    env.remove(k);
                }
            }
        }
        env
    }
}

impl fmt::Debug for Command {
    /// Shows the program, arguments, directory and limits; of the environment
    /// recipe only variable *names* (values may be secrets).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: Vec<String> = self
            .env_ops
            .iter()
            .map(|op| match op {
                EnvOp::Clear => "clear".to_owned(),
                EnvOp::Inherit(names) => format!(
                    "inherit({})",
                    names
                        .iter()
                        .map(|n| n.to_string_lossy())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                EnvOp::InheritPrefixed(prefixes) => format!(
                    "inherit_prefixed({})",
                    prefixes
                        .iter()
                        .map(|n| n.to_string_lossy())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                EnvOp::Set(k, _) => format!("set({})", k.to_string_lossy()),
                EnvOp::Remove(k) => format!("remove({})", k.to_string_lossy()),
            })
            .collect();
        f.debug_struct("Command")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("env", &env)
            .field("stdin", &StdinKind(&self.stdin))
            .field("close_grace", &self.close_grace)
            .field("term_grace", &self.term_grace)
            .field("exit_grace", &self.exit_grace)
            .field("spill_threshold", &self.spill_threshold)
            .field("max_line_in_memory", &self.max_line_in_memory)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Debug of a stdin mode without its bytes (they may hold a prompt or secret).
struct StdinKind<'a>(&'a StdinMode);

impl fmt::Debug for StdinKind<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            StdinMode::Null => f.write_str("Null"),
            StdinMode::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            StdinMode::Pipe => f.write_str("Pipe"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> OsString {
        OsString::from(s)
    }

    fn parent() -> Vec<(OsString, OsString)> {
        vec![
            (os("PATH"), os("/bin")),
            (os("HOME"), os("/h")),
            (os("SECRET"), os("s")),
        ]
    }

    #[test]
    fn default_inherits_everything() {
        let env = Command::new("x").resolve_env(parent());
        assert_eq!(env.len(), 3);
    }

    #[test]
    fn clear_then_inherit_named_then_set() {
        let mut cmd = Command::new("x");
        cmd.env_clear()
            .inherit_env(["PATH", "MISSING"])
            .env("K", "v")
            .env_remove("PATH")
            .inherit_env(["HOME"]);
        let env = cmd.resolve_env(parent());
        let keys: Vec<_> = env.keys().cloned().collect();
        assert_eq!(keys, vec![os("HOME"), os("K")]);
        assert_eq!(env[&os("K")], os("v"));
    }

    #[test]
    fn inherit_prefixed_copies_matching_parent_names_only() {
        let mut parent = parent();
        parent.push((os("LC_ALL"), os("C")));
        parent.push((os("LC_TIME"), os("C")));
        parent.push((os("XLC_NOT"), os("n")));
        let mut cmd = Command::new("x");
        cmd.env_clear()
            .inherit_env_prefixed(["LC_", ""])
            .inherit_env(["PATH"]);
        let keys: Vec<_> = cmd.resolve_env(parent).into_keys().collect();
        assert_eq!(keys, vec![os("LC_ALL"), os("LC_TIME"), os("PATH")]);
    }

    #[test]
    fn debug_hides_env_values_and_stdin_bytes() {
        let mut cmd = Command::new("x");
        cmd.env("API_KEY", "sk-very-secret")
            .stdin(StdinMode::Bytes(Bytes::from_static(b"prompt-secret")));
        let dbg = format!("{cmd:?}");
        assert!(dbg.contains("API_KEY"));
        assert!(!dbg.contains("sk-very-secret"));
        assert!(!dbg.contains("prompt-secret"));
    }
}
