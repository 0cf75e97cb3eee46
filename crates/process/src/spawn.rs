//! Starting the child: its own process group, piped output, the stdin mode,
//! the environment recipe, and typed spawn errors.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use crate::command::{Command, StdinMode};
use crate::error::ProcessError;
use crate::mark::{Mark, PROCESS_MARK_ENV};

/// A freshly spawned child and its pipes.
pub(crate) struct Spawned {
    pub(crate) child: Child,
    pub(crate) pid: u32,
    pub(crate) stdin: Option<ChildStdin>,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: ChildStderr,
}

/// Spawn `cmd` as the leader of a new process group, marked with `mark`
/// and armed with the parent-death signal.
pub(crate) fn spawn(cmd: &Command, mark: &Mark) -> Result<Spawned, ProcessError> {
    let program = cmd.program_name();
    if let Some(cwd) = &cmd.cwd
        && !cwd.is_dir()
    {
        return Err(ProcessError::CwdNotFound {
            program,
            cwd: cwd.clone(),
        });
    }

    let mut c = tokio::process::Command::new(&cmd.program);
    c.args(&cmd.args);
    if let Some(cwd) = &cmd.cwd {
        c.current_dir(cwd);
    }
    if !cmd.env_ops.is_empty() {
        let env = cmd.resolve_env(std::env::vars_os());
        c.env_clear();
        c.envs(env);
    }
    // After the recipe, so no recipe removes it; inherited by descendants.
    c.env(PROCESS_MARK_ENV, mark.value());
    crate::pdeathsig::arm(&mut c);
    c.stdin(match cmd.stdin {
        StdinMode::Null => Stdio::null(),
        StdinMode::Bytes(_) | StdinMode::Pipe => Stdio::piped(),
    });
    c.stdout(Stdio::piped());
    c.stderr(Stdio::piped());
    // Its own group, so group signals reach shells, MCP servers and every
    // other grandchild; and a dropped handle kills and reaps the leader.
    c.process_group(0);
    c.kill_on_drop(true);

    let mut child = c.spawn().map_err(|source| spawn_error(cmd, source))?;
    // From here on, an early return drops `child`, which kills it (kill_on_drop).
    let missing = |what: &str| ProcessError::Spawn {
        program: program.clone(),
        source: io::Error::other(format!("child has no {what}")),
    };
    let pid = child.id().ok_or_else(|| missing("pid"))?;
    let stdout = child.stdout.take().ok_or_else(|| missing("stdout pipe"))?;
    let stderr = child.stderr.take().ok_or_else(|| missing("stderr pipe"))?;
    let stdin = child.stdin.take();
    Ok(Spawned {
        child,
        pid,
        stdin,
        stdout,
        stderr,
    })
}

/// The typed error of a failed `spawn`. `execve` says only "permission
/// denied" for a file without execute permission and "not found" for a
/// script whose `#!` interpreter is missing; the file the program resolves
/// to tells them apart from the plain cases.
fn spawn_error(cmd: &Command, source: io::Error) -> ProcessError {
    let program = cmd.program_name();
    match source.kind() {
        io::ErrorKind::NotFound => {
            let bad = candidates(cmd)
                .into_iter()
                .find_map(|path| missing_interpreter(&path).map(|i| (path, i)));
            match bad {
                Some((path, interpreter)) => ProcessError::BadInterpreter {
                    program,
                    path,
                    interpreter,
                },
                None => ProcessError::NotFound { program },
            }
        }
        io::ErrorKind::PermissionDenied => {
            let found = candidates(cmd).into_iter().find(|p| !is_executable(p));
            match found {
                Some(path) => ProcessError::NotExecutable { program, path },
                None => ProcessError::PermissionDenied { program },
            }
        }
        _ => ProcessError::Spawn { program, source },
    }
}

/// The regular files `cmd`'s program can resolve to: the path itself (under
/// the working directory when relative), or each match on the child's
/// `PATH`, in search order.
fn candidates(cmd: &Command) -> Vec<PathBuf> {
    let program = Path::new(&cmd.program);
    let files = if cmd.program.as_bytes().contains(&b'/') {
        let path = match &cmd.cwd {
            Some(cwd) if program.is_relative() => cwd.join(program),
            _ => program.to_path_buf(),
        };
        vec![path]
    } else {
        let path = if cmd.env_ops.is_empty() {
            std::env::var_os("PATH")
        } else {
            cmd.resolve_env(std::env::vars_os())
                .remove(OsStr::new("PATH"))
        };
        path.map(|p| {
            std::env::split_paths(&p)
                .map(|dir| dir.join(program))
                .collect()
        })
        .unwrap_or_default()
    };
    files.into_iter().filter(|p| p.is_file()).collect()
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// The interpreter named by `path`'s `#!` line, when it does not exist.
fn missing_interpreter(path: &Path) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let interpreter = line
        .split(|b| b.is_ascii_whitespace())
        .find(|w| !w.is_empty())?;
    let interpreter = PathBuf::from(OsStr::from_bytes(interpreter));
    (!interpreter.exists()).then_some(interpreter)
}
