//! Running the `git` CLI through the process helper, with an allowlisted
//! environment (no host secrets reach git).

use std::path::Path;

use agent_adaptor_process::{Command, Process, StdinMode};

use crate::discard::Discard;
use crate::error::WorkspaceError;

/// What a finished git command printed.
pub(crate) struct GitOutput {
    /// Exit code (`None` when a signal ended it).
    pub(crate) code: Option<i32>,
    /// Stdout, lossy UTF-8.
    pub(crate) stdout: String,
    /// Stderr, lossy UTF-8.
    pub(crate) stderr: String,
}

impl GitOutput {
    pub(crate) fn ok(&self) -> bool {
        self.code == Some(0)
    }
}

/// The environment variables git may see from the host.
const ALLOWED_ENV: [&str; 6] = ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER"];

/// Run `git args…` in `cwd`, returning its output whatever the exit code.
pub(crate) async fn run(
    cwd: &Path,
    args: &[&str],
    extra_env: &[(&str, &str)],
) -> Result<GitOutput, WorkspaceError> {
    let mut cmd = Command::new("git");
    cmd.args(args)
        .cwd(cwd)
        .env_clear()
        .inherit_env(ALLOWED_ENV)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(StdinMode::Null);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let process = Process::spawn(&cmd).map_err(WorkspaceError::Spawn)?;
    let finished = process
        .finish(&Discard)
        .await
        .map_err(WorkspaceError::Spawn)?;
    let text = |raw: &agent_adaptor_driver::RawBytes| {
        raw.to_vec()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    };
    Ok(GitOutput {
        code: finished.exit.code,
        stdout: text(&finished.stdout),
        stderr: text(&finished.stderr),
    })
}

/// Run git and fail with [`WorkspaceError::Git`] unless it exits 0.
pub(crate) async fn check(
    cwd: &Path,
    args: &[&str],
    extra_env: &[(&str, &str)],
) -> Result<String, WorkspaceError> {
    let out = run(cwd, args, extra_env).await?;
    if out.ok() {
        Ok(out.stdout)
    } else {
        Err(failed(args, &out))
    }
}

/// The typed error for a failed git command (stderr tail only).
pub(crate) fn failed(args: &[&str], out: &GitOutput) -> WorkspaceError {
    let stderr = out.stderr.trim();
    let tail_start = stderr.char_indices().rev().nth(1999).map_or(0, |(i, _)| i);
    WorkspaceError::Git {
        args: args.join(" "),
        code: out.code,
        stderr: stderr[tail_start..].to_owned(),
    }
}

/// The number of paths `git status --porcelain` lists in `dir`.
pub(crate) async fn dirty_count(dir: &Path) -> Result<usize, WorkspaceError> {
    let out = check(
        dir,
        &["status", "--porcelain", "--untracked-files=all"],
        &[],
    )
    .await?;
    Ok(out.lines().filter(|l| !l.trim().is_empty()).count())
}

/// The commit `rev` names, or `None` when it names none.
pub(crate) async fn resolve_commit(
    dir: &Path,
    rev: &str,
) -> Result<Option<String>, WorkspaceError> {
    let spec = format!("{rev}^{{commit}}");
    let out = run(dir, &["rev-parse", "--verify", "--quiet", &spec], &[]).await?;
    Ok(out.ok().then(|| out.stdout.trim().to_owned()))
}
