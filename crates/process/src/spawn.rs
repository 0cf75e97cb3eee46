//! Starting the child: its own process group, piped output, the stdin mode,
//! the environment recipe, and typed spawn errors.

use std::io;
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

    let mut child = c
        .spawn()
        .map_err(|source| spawn_error(program.clone(), source))?;
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

fn spawn_error(program: String, source: io::Error) -> ProcessError {
    match source.kind() {
        io::ErrorKind::NotFound => ProcessError::NotFound { program },
        io::ErrorKind::PermissionDenied => ProcessError::PermissionDenied { program },
        _ => ProcessError::Spawn { program, source },
    }
}
