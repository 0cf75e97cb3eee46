//! Host killed mid-run: the next start's sweep finds every orphaned worktree
//! and removes none that holds uncommitted work.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use agent_adaptor_workspace::{OrphanState, WorkspaceManager, sweep};
use common::TempRepo;

const ROUNDS: usize = 20;

#[tokio::test]
async fn sigkilled_hosts_leave_orphans_the_sweep_finds() {
    let t = TempRepo::new();
    let mut dirty_paths = Vec::new();
    for i in 0..ROUNDS {
        let dirty = i % 2 == 0;
        let mut child = Command::new(env!("CARGO_BIN_EXE_agent-adaptor-workspace-fixture"))
            .args([
                "hold",
                t.repo.to_str().unwrap(),
                &format!("run-{i}"),
                if dirty { "1" } else { "0" },
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let path = line
            .trim()
            .strip_prefix("ready ")
            .expect("holder is ready")
            .to_owned();
        // SIGKILL: no destructor, no release.
        child.kill().unwrap();
        child.wait().unwrap();
        if dirty {
            dirty_paths.push(std::path::PathBuf::from(path));
        }
    }
    assert_eq!(t.worktrees(), ROUNDS + 1);

    // A live run's lease in this process is not an orphan.
    let live = WorkspaceManager::new()
        .resolve(&agent_adaptor_workspace::WorkspaceRequest {
            base_dir: t.repo.clone(),
            spec: agent_adaptor_workspace::WorkspaceSpec::GitWorktree(
                agent_adaptor_workspace::GitWorktreeSpec::new("HEAD", "agent/{run_id}"),
            ),
            run_id: "alive".into(),
            thread: None,
        })
        .await
        .unwrap();

    // Reporting only: nothing is removed.
    let report = sweep(&t.repo, false).await.unwrap();
    assert_eq!(report.orphans.len(), ROUNDS);
    assert_eq!(report.live, 1);
    assert_eq!(t.worktrees(), ROUNDS + 2);

    let report = sweep(&t.repo, true).await.unwrap();
    assert_eq!(report.orphans.len(), ROUNDS);
    let kept: Vec<_> = report
        .orphans
        .iter()
        .filter(|o| matches!(o.state, OrphanState::KeptWork { .. }))
        .map(|o| o.lease.path.clone())
        .collect();
    let reclaimed = report
        .orphans
        .iter()
        .filter(|o| o.state == OrphanState::Reclaimed)
        .count();
    assert_eq!(kept.len(), ROUNDS / 2);
    assert_eq!(reclaimed, ROUNDS / 2);
    let mut expected = dirty_paths.clone();
    expected.sort();
    let mut kept_sorted = kept.clone();
    kept_sorted.sort();
    assert_eq!(kept_sorted, expected);
    for p in &dirty_paths {
        assert_eq!(
            std::fs::read_to_string(p.join("WIP.txt")).unwrap(),
            "unsaved work\n"
        );
    }
    assert!(live.path.is_dir());
    // The main checkout, ROUNDS/2 kept worktrees and the live one remain.
    assert_eq!(t.worktrees(), 1 + ROUNDS / 2 + 1);
    assert!(t.status().is_empty());
}
