//! `run`'s workspace and service flags (`--worktree`, `--diff`,
//! `--service`, `--service-ready`) → the agent's
//! [`WorkspaceResources`], and what the run did with them, printed.

use std::path::Path;
use std::time::Duration;

use agent_adaptor_core::RunResult;
use agent_adaptor_workspace::{
    GitWorktreeSpec, Lifecycle, OrphanState, Readiness, ServiceManager, ServiceSpec,
    WorkspaceResources, WorkspaceSpec,
};
use clap::Args;

use crate::error::CliError;
use crate::render::Renderer;

/// How long a `--service` may take to become ready.
const SERVICE_READY_TIMEOUT: Duration = Duration::from_secs(60);

/// The flags (flattened into `run`'s).
#[derive(Debug, Clone, Default, Args)]
pub struct ResourceArgs {
    /// With --worktree: the run's unified diff against the worktree's base
    /// commit (`--json`: in the result line's `workspace.changes.diff`;
    /// else printed after the answer).
    #[arg(long, requires = "worktree")]
    pub diff: bool,
    /// A service the run needs, started (in --cwd) before the agent and
    /// stopped after the run: NAME=COMMAND, the command split at spaces
    /// (use a script for anything else). Repeatable; each needs a
    /// --service-ready NAME=….
    #[arg(long = "service", value_name = "NAME=COMMAND")]
    pub services: Vec<String>,
    /// When service NAME is ready: NAME=tcp:PORT (127.0.0.1),
    /// NAME=tcp:HOST:PORT, or NAME=http://HOST:PORT/PATH (answered 2xx or
    /// 3xx). Waited for up to 60 s; a service that is not ready fails the
    /// run before the agent starts.
    #[arg(long = "service-ready", value_name = "NAME=CHECK")]
    pub ready: Vec<String>,
}

impl ResourceArgs {
    /// The services the flags name, each with its readiness check.
    ///
    /// # Errors
    ///
    /// A usage error: a malformed flag, a service without a readiness
    /// check (or the other way round), a name given twice.
    pub fn service_specs(&self, cwd: &Path) -> Result<Vec<ServiceSpec>, CliError> {
        let mut checks = std::collections::BTreeMap::new();
        for flag in &self.ready {
            let (name, check) = split("--service-ready", flag)?;
            if checks.insert(name, readiness(name, check)?).is_some() {
                return Err(CliError::usage(format!(
                    "--service-ready {name}: given twice"
                )));
            }
        }
        let mut specs = Vec::new();
        for flag in &self.services {
            let (name, command) = split("--service", flag)?;
            let mut words = command.split_whitespace();
            let program = words.next().ok_or_else(|| {
                CliError::usage(format!("--service {name}: the command is empty"))
            })?;
            let ready = checks.remove(name).ok_or_else(|| {
                CliError::usage(format!(
                    "--service {name} needs --service-ready {name}=tcp:PORT|http://…"
                ))
            })?;
            if specs.iter().any(|s: &ServiceSpec| s.name == name) {
                return Err(CliError::usage(format!("--service {name}: given twice")));
            }
            let mut spec = ServiceSpec::new(name, program, ready)
                .args(words)
                .ready_timeout(SERVICE_READY_TIMEOUT)
                .lifecycle(Lifecycle::Ephemeral);
            spec.cwd = Some(cwd.to_path_buf());
            specs.push(spec);
        }
        if let Some(name) = checks.keys().next() {
            return Err(CliError::usage(format!(
                "--service-ready {name}: no --service {name}=COMMAND"
            )));
        }
        Ok(specs)
    }
}

/// `NAME=VALUE`, both non-empty.
fn split<'a>(flag: &str, value: &'a str) -> Result<(&'a str, &'a str), CliError> {
    match value.split_once('=') {
        Some((name, rest)) if !name.trim().is_empty() && !rest.trim().is_empty() => {
            Ok((name.trim(), rest.trim()))
        }
        _ => Err(CliError::usage(format!(
            "{flag} {value:?}: expected NAME=VALUE"
        ))),
    }
}

/// `tcp:PORT`, `tcp:HOST:PORT` or an `http://` URL.
fn readiness(name: &str, check: &str) -> Result<Readiness, CliError> {
    if check.starts_with("http://") {
        return Ok(Readiness::Http(check.to_owned()));
    }
    if let Some(addr) = check.strip_prefix("tcp:") {
        let addr = if addr.parse::<u16>().is_ok() {
            format!("127.0.0.1:{addr}")
        } else {
            addr.to_owned()
        };
        let valid = addr
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
        if valid {
            return Ok(Readiness::Tcp(addr));
        }
    }
    Err(CliError::usage(format!(
        "--service-ready {name}={check}: expected tcp:PORT, tcp:HOST:PORT or http://HOST:PORT/PATH"
    )))
}

/// The run's resources: a worktree (`--worktree`; what a killed run left
/// behind is swept first and noted) or the shared `base`, and the services.
/// `None` when the run needs neither.
pub async fn resources(
    args: &ResourceArgs,
    worktree: bool,
    thread: bool,
    base: &Path,
    services: Vec<ServiceSpec>,
    mut note: impl FnMut(&str),
) -> Option<WorkspaceResources> {
    if !worktree && services.is_empty() {
        return None;
    }
    let spec = if worktree {
        // Worktrees a killed run left behind: reclaimed when they hold no
        // work, reported otherwise.
        if let Ok(report) = agent_adaptor_workspace::sweep(base, true).await
            && !report.orphans.is_empty()
        {
            note(&format!(
                "▸ {} orphaned worktree(s) found: {}",
                report.orphans.len(),
                report
                    .orphans
                    .iter()
                    .map(|o| format!("{} ({})", o.lease.path.display(), orphan_state(&o.state)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let template = if thread {
            "agent/{thread}"
        } else {
            "agent/{run_id}"
        };
        WorkspaceSpec::GitWorktree(GitWorktreeSpec::new("HEAD", template))
    } else {
        WorkspaceSpec::Shared
    };
    let mut resources = WorkspaceResources::new(spec)
        .base_dir(base)
        .with_diff(args.diff);
    let manager = ServiceManager::new();
    for spec in services {
        resources = resources.service(&manager, spec);
    }
    Some(resources)
}

fn orphan_state(state: &OrphanState) -> &'static str {
    match state {
        OrphanState::Reclaimed => "reclaimed",
        OrphanState::Missing => "missing, forgotten",
        OrphanState::KeptWork { .. } => "kept: it holds work",
        OrphanState::Reported => "reported",
    }
}

/// After a rendered run: the worktree and its change summary (the diff to
/// stdout with `--diff`), and the services the run used.
pub fn render(result: &RunResult, renderer: &mut Renderer) {
    for s in result.services() {
        renderer.dim_note(&format!(
            "▸ service {} at {} ({})",
            s.name,
            s.endpoint.as_deref().unwrap_or("-"),
            s.status
        ));
    }
    let Some(ws) = result.workspace() else { return };
    let Some(changes) = &ws.changes else { return };
    renderer.dim_note(&format!(
        "▸ worktree {} (branch {}): {} file(s) changed, +{} -{}",
        ws.path.display(),
        ws.branch.as_deref().unwrap_or("-"),
        changes.files.len(),
        changes.insertions,
        changes.deletions
    ));
    if let Some(diff) = &changes.diff {
        renderer.out(diff);
    }
}
