//! `agent-adaptor threads list|show|fork|revoke|delete`: the thread store,
//! read and edited without running anything.

use agent_adaptor_workspace::{
    WorkspaceLease, WorkspaceManager, WorkspaceResources, WorkspaceSpec,
};
use std::time::Duration;

use agent_adaptor_core::thread::{
    EventQuery, FinalizeRequest, RecordStatus, StoreError, ThreadRecord,
};
use agent_adaptor_core::{Error, ResourceThread, RunResources};
use serde_json::{Value, json};

use crate::args::{ThreadsArgs, ThreadsCommand};
use crate::error::CliError;
use crate::host_record::recover_dead_runs;
use crate::serve::conversation;
use crate::store::{OpenedStore, StoreSpec};
use agent_adaptor_llm::agent::session::CODEC;

/// How many threads `list` shows.
const LIST_LIMIT: usize = 1000;
/// How many of a thread's records (sessions) `show` lists.
const HISTORY_LIMIT: usize = 100;

/// Run `agent-adaptor threads …`.
pub async fn threads(args: ThreadsArgs) -> Result<(), CliError> {
    let opened = StoreSpec::parse(args.store.as_deref())?.open().await?;
    // Threads a dead `run` still holds are freed, its runs marked interrupted.
    recover_dead_runs(&opened).await;
    let store = opened.store.clone();
    let failed = |what: &str, e: StoreError| {
        CliError::failure(format!("{what}: {}", crate::store::cause(&e)))
    };
    match args.command {
        ThreadsCommand::List => {
            let records = store
                .list(LIST_LIMIT)
                .await
                .map_err(|e| failed("cannot list threads", e))?;
            if args.json {
                let rows: Vec<Value> = records.iter().map(summary).collect();
                println!("{}", json!({"store": opened.description, "threads": rows}));
            } else if records.is_empty() {
                println!("no threads in {}", opened.description);
            } else {
                println!("{:<40} {:<10} {:<20} SESSION", "KEY", "DRIVER", "UPDATED");
                for r in &records {
                    println!(
                        "{:<40} {:<10} {:<20} {}",
                        r.key,
                        r.driver_type,
                        r.updated_at.format("%Y-%m-%d %H:%M:%S"),
                        r.params.display_id
                    );
                }
            }
        }
        ThreadsCommand::Show {
            key,
            events: true,
            since,
            tail,
        } => {
            let query = match (since, tail) {
                (_, Some(n)) => EventQuery::tail(n),
                (since, None) => EventQuery::since(since.unwrap_or(0)),
            };
            crate::thread_events::show_events(&opened, &key, query, args.json).await?
        }
        ThreadsCommand::Show { key, .. } => {
            let worktree = thread_worktree(args.cwd.as_deref(), &key).await;
            show(&opened, &key, args.json, worktree.as_ref()).await?;
        }
        ThreadsCommand::Fork { key, new } => {
            let record = store
                .resolve(&key, false)
                .await
                .map_err(|e| failed("cannot read the thread", e))?
                .ok_or_else(|| CliError::failure(format!("no active thread {key:?}")))?;
            if record.codec != CODEC {
                return Err(CliError::failure(format!(
                    "{key:?} is a {} thread: its history lives in the provider's session, which only the \
                     provider can fork; run: agent-adaptor run --driver {} --thread {new:?} --fork-from {key:?} PROMPT",
                    record.driver_type, record.driver_type
                )));
            }
            let forked = copy(&*store, &record, &new)
                .await
                .map_err(|e| failed("cannot fork the thread", e))?;
            if args.json {
                println!("{}", summary(&forked));
            } else {
                println!("forked {key:?} to {new:?}");
            }
        }
        ThreadsCommand::Revoke { key, tool } => {
            crate::thread_policy::revoke(&opened, &key, &tool, args.json).await?
        }
        ThreadsCommand::Delete { key } => {
            // The thread's worktree goes first, and only when that loses no
            // work; a refusal keeps the thread too.
            let n = delete(&opened, args.cwd.as_deref(), &key).await?;
            if n == 0 {
                return Err(CliError::failure(format!(
                    "no thread {key:?} in {}",
                    opened.description
                )));
            }
            if args.json {
                println!("{}", json!({"key": key, "deleted_records": n}));
            } else {
                println!(
                    "deleted {key:?} ({n} record{})",
                    if n == 1 { "" } else { "s" }
                );
            }
        }
    }
    Ok(())
}

/// `threads show KEY`: the record (active, else the newest archived one),
/// every session the key went through (its records, archived ones too),
/// its conversation when the store keeps it, and the runs whose process
/// died while they held the thread. A thread whose only run was
/// interrupted has no record, only those runs.
async fn show(
    opened: &OpenedStore,
    key: &str,
    json_out: bool,
    worktree: Option<&WorkspaceLease>,
) -> Result<(), CliError> {
    let failed = |e: StoreError| CliError::failure(format!("cannot read the thread: {e}"));
    let record = opened.store.resolve(key, true).await.map_err(failed)?;
    let interrupted = opened.store.interrupted_runs(key).await.map_err(failed)?;
    let allowed = crate::thread_policy::always_allowed(opened, key).await?;
    let sessions = opened
        .store
        .history(key, HISTORY_LIMIT)
        .await
        .map_err(failed)?;
    if record.is_none() && interrupted.is_empty() && allowed.is_empty() {
        return Err(CliError::failure(format!(
            "no thread {key:?} in {}",
            opened.description
        )));
    }
    let messages = record.as_ref().and_then(conversation);
    if json_out {
        let mut v = match &record {
            Some(r) => summary(r),
            None => json!({ "key": key }),
        };
        v["record"] = json!(record);
        v["messages"] = json!(messages);
        v["interrupted"] = json!(interrupted);
        v["always_allowed"] = json!(allowed);
        v["sessions"] = sessions.iter().map(session_summary).collect();
        v["worktree"] = json!(
            worktree
                .map(|l| json!({"path": l.path, "branch": l.branch, "base_commit": l.base_commit}))
        );
        println!("{v}");
        return Ok(());
    }
    println!("key:      {key}");
    if let Some(l) = worktree {
        println!("worktree: {}", l.path.display());
        println!("branch:   {}", l.branch.as_deref().unwrap_or(""));
    }
    if let Some(record) = &record {
        println!(
            "status:   {}",
            match record.status {
                RecordStatus::Active => "active",
                RecordStatus::Archived => "archived (no active record)",
            }
        );
        println!("driver:   {}", record.driver_type);
        println!("session:  {}", record.params.display_id);
        println!("created:  {}", record.created_at);
        println!("updated:  {}", record.updated_at);
    } else {
        println!("status:   no record (no run of it finished)");
    }
    println!("{}", crate::thread_policy::show_line(&allowed));
    if sessions.len() > 1 {
        println!("sessions: (newest first)");
        for r in &sessions {
            println!(
                "  {:<8} {:<10} {:<24} session {} (updated {})",
                status_name(r.status),
                r.driver_type,
                r.id,
                r.params.display_id,
                r.updated_at.format("%Y-%m-%d %H:%M:%S")
            );
        }
    }
    for run in &interrupted {
        println!(
            "interrupted: run {} started {} (its process died){}",
            run.run_id,
            run.started_at,
            run.prompt
                .as_deref()
                .map(|p| format!(": {}", preview(p)))
                .unwrap_or_default()
        );
    }
    match messages {
        Some(ms) => {
            println!();
            for m in ms {
                println!(
                    "{:>9}: {}",
                    m["role"].as_str().unwrap_or(""),
                    m["text"].as_str().unwrap_or("")
                );
            }
        }
        None if record.is_some() => {
            println!("(the conversation is kept by the provider's own session)")
        }
        None => {}
    }
    Ok(())
}

/// A prompt on one line, at most 80 characters.
fn preview(prompt: &str) -> String {
    let line = crate::error::one_line(prompt);
    match line.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// A record in `threads show --json`'s `sessions`.
fn session_summary(r: &ThreadRecord) -> Value {
    let mut v = summary(r);
    v["id"] = json!(r.id);
    v["status"] = json!(status_name(r.status));
    v
}

fn status_name(status: RecordStatus) -> &'static str {
    match status {
        RecordStatus::Active => "active",
        RecordStatus::Archived => "archived",
    }
}

fn summary(r: &ThreadRecord) -> Value {
    json!({
        "key": r.key,
        "driver": r.driver_type,
        "codec": r.codec,
        "session": r.params.display_id,
        "created_at": r.created_at,
        "updated_at": r.updated_at,
    })
}

/// Copy `record` to `new_key` (which must not exist), under a lease.
async fn copy(
    store: &dyn agent_adaptor_core::ThreadStore,
    record: &ThreadRecord,
    new_key: &str,
) -> Result<ThreadRecord, StoreError> {
    let owner = format!("agent-adaptor-cli-{}", std::process::id());
    let lease = store
        .acquire_lease(&format!("key:{new_key}"), &owner, Duration::from_secs(60))
        .await?;
    let now = chrono::Utc::now();
    let mut copy = record.clone();
    copy.id = format!("rec_fork_{:016x}", rand::random::<u64>());
    copy.key = new_key.to_owned();
    copy.previous_id = Some(record.id.clone());
    copy.created_at = now;
    copy.updated_at = now;
    let outcome = store
        .finalize(FinalizeRequest {
            lease: lease.clone(),
            record: copy,
            require_key_absent: true,
        })
        .await;
    let _ = store.release_lease(&lease).await;
    outcome
}

/// Delete thread `key` through core's path: its worktree in the repository
/// of `cwd` (default: the current directory) is released first.
async fn delete(
    opened: &OpenedStore,
    cwd: Option<&std::path::Path>,
    key: &str,
) -> Result<u64, CliError> {
    let base = match cwd {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| CliError::failure(format!("no current directory: {e}")))?,
    };
    let resources = WorkspaceResources::new(WorkspaceSpec::Shared).base_dir(base);
    let thread = ResourceThread {
        key: key.to_owned(),
        base_dir: None,
    };
    let resources: &dyn RunResources = &resources;
    agent_adaptor_core::thread::delete(&*opened.store, Some(resources), &thread, None)
        .await
        .map_err(|e| match e {
            Error::Resources(cause) => {
                CliError::failure(format!("thread {key:?} not deleted: {cause}"))
            }
            e => CliError::failure(format!("cannot delete the thread: {e}")),
        })
}

/// The git worktree thread `key` holds in the repository of `cwd` (default:
/// the current directory); `None` outside a repository or without one.
async fn thread_worktree(cwd: Option<&std::path::Path>, key: &str) -> Option<WorkspaceLease> {
    let dir = match cwd {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().ok()?,
    };
    let manager = WorkspaceManager::new();
    manager.thread_lease(&dir, key).await.ok()?
}
