//! `agent-adaptor worktrees list|remove`: the agent worktrees of a
//! repository — a run's worktree kept after `run --worktree`, a thread's
//! worktree, one a run still works in, one a killed run left — and removing
//! a run's kept worktree once that loses nothing.

use std::path::PathBuf;

use agent_adaptor_workspace::{LeaseOwner, WorkspaceLease, WorkspaceManager};
use clap::{Args, Subcommand};
use serde_json::json;

use crate::error::CliError;

/// `agent-adaptor worktrees`.
#[derive(Debug, Clone, Args)]
pub struct WorktreesArgs {
    /// The repository (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: WorktreesCommand,
}

/// The `worktrees` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum WorktreesCommand {
    /// List the agent worktrees and who holds each.
    List,
    /// Remove a run's kept worktree and its branch: refused while it has
    /// uncommitted changes or commits neither merged into its base nor
    /// pushed (a thread's worktree goes with `threads delete`).
    Remove {
        /// The worktree's branch, path or lease id.
        which: String,
    },
}

/// Run `agent-adaptor worktrees …`.
pub async fn worktrees(args: WorktreesArgs) -> Result<(), CliError> {
    let base = match args.cwd {
        Some(d) => d,
        None => std::env::current_dir()
            .map_err(|e| CliError::failure(format!("no current directory: {e}")))?,
    };
    let manager = WorkspaceManager::new();
    match args.command {
        WorktreesCommand::List => {
            let leases = manager
                .leases(&base)
                .await
                .map_err(|e| CliError::failure(e.to_string()))?;
            if args.json {
                let rows: Vec<_> = leases.iter().map(row).collect();
                println!("{}", json!({ "worktrees": rows }));
            } else if leases.is_empty() {
                println!("no agent worktrees in {}", base.display());
            } else {
                println!("{:<28} {:<24} {:<36} PATH", "ID", "HOLDER", "BRANCH");
                for l in &leases {
                    println!(
                        "{:<28} {:<24} {:<36} {}",
                        l.id,
                        holder(&l.owner),
                        l.branch.as_deref().unwrap_or("-"),
                        l.path.display()
                    );
                }
            }
        }
        WorktreesCommand::Remove { which } => {
            let removed = manager
                .remove(&base, &which)
                .await
                .map_err(|e| CliError::failure(e.to_string()))?;
            if args.json {
                println!("{}", json!({ "removed": row(&removed) }));
            } else {
                println!(
                    "removed {} (branch {})",
                    removed.path.display(),
                    removed.branch.as_deref().unwrap_or("-")
                );
            }
        }
    }
    Ok(())
}

/// Who holds a worktree, in a few words.
fn holder(owner: &LeaseOwner) -> String {
    match owner {
        LeaseOwner::Thread { key } => format!("thread {key}"),
        LeaseOwner::Kept { .. } => "kept (run ended)".into(),
        o @ LeaseOwner::Run { .. } if o.is_alive() => "run in progress".into(),
        LeaseOwner::Run { .. } => "orphaned (run killed)".into(),
    }
}

fn row(l: &WorkspaceLease) -> serde_json::Value {
    json!({
        "id": l.id,
        "holder": holder(&l.owner),
        "owner": l.owner,
        "path": l.path,
        "branch": l.branch,
        "base_commit": l.base_commit,
    })
}
