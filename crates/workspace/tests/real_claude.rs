//! Two concurrent REAL Claude Code runs, offline against the testkit mock
//! model server, on two threads of one repository: the mock scripts a
//! `Read` then a `Write` of README.md through the CLI's own tools. Each run
//! works in its thread's worktree; neither sees the other's change; each
//! result's change summary names exactly README.md; the main checkout is
//! untouched.
//!
//! Compiled only with `--features real-clis`.
#![cfg(feature = "real-clis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;

use agent_adaptor_core::{Agent, ChangeKind, MemoryStore, Runner};
use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_drivers::claude;
use agent_adaptor_testkit::clis::{self, ScratchDir};
use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use agent_adaptor_workspace::{GitWorktreeSpec, WorkspaceResources, WorkspaceSpec};
use common::TempRepo;
use serde_json::json;

fn edit(readme: &std::path::Path, content: &str) -> Vec<Reply> {
    let path = readme.to_str().unwrap();
    vec![
        Reply::ToolCall {
            name: "Read".into(),
            arguments: json!({ "file_path": path }),
        },
        Reply::ToolCall {
            name: "Write".into(),
            arguments: json!({ "file_path": path, "content": content }),
        },
        Reply::Text("Edited.".into()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_threads_edit_readme_in_their_own_worktrees() {
    let t = TempRepo::new();
    // The worktree of thread `k` is `<repo>.worktrees/agent/<k>` (the
    // default parent dir and this branch template).
    let wt = |k: &str| t.dir.path().join("repo.worktrees").join("agent").join(k);
    let script = Script::new()
        .on_prompt(
            "EDIT_ALPHA",
            edit(&wt("alpha").join("README.md"), "# alpha\n"),
        )
        .on_prompt("EDIT_BETA", edit(&wt("beta").join("README.md"), "# beta\n"));
    let server = MockServer::start(script).await.unwrap();
    let home = ScratchDir::new("claude").unwrap();
    let binary = clis::CLAUDE.binary().unwrap_or_else(|e| panic!("{e}"));
    let env = clis::CLAUDE
        .prepare(&server.base_url(), home.path())
        .unwrap();

    let mut cfg = claude::config();
    cfg.command = binary;
    cfg.env = env
        .into_iter()
        .chain([
            ("CLAUDE_CODE_MAX_RETRIES".into(), "0".into()),
            (
                "CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK".into(),
                "1".into(),
            ),
        ])
        .collect();
    cfg.env_policy = EnvPolicy::only(["PATH", "USER"]);
    cfg.model = Some(clis::CLAUDE.model.into());
    cfg.permission_mode = Some("acceptEdits".into());
    let resources = WorkspaceResources::new(WorkspaceSpec::GitWorktree(GitWorktreeSpec::new(
        "HEAD",
        "agent/{thread}",
    )))
    .base_dir(&t.repo);
    let agent = Agent::builder(claude::driver(cfg))
        .thread_store(Arc::new(MemoryStore::new()))
        .resources(Arc::new(resources))
        .build()
        .unwrap();

    let (alpha, beta) = (agent.thread("alpha"), agent.thread("beta"));
    let (a, b) = tokio::join!(alpha.run("EDIT_ALPHA please"), beta.run("EDIT_BETA please"));
    let (a, b) = (a.unwrap(), b.unwrap());

    for (r, key, text) in [(&a, "alpha", "# alpha\n"), (&b, "beta", "# beta\n")] {
        let ws = r.workspace().expect("a workspace report");
        assert_eq!(ws.path, wt(key));
        assert_eq!(ws.branch.as_deref(), Some(format!("agent/{key}").as_str()));
        let changes = ws.changes.as_ref().unwrap();
        let files: Vec<_> = changes
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.kind))
            .collect();
        assert_eq!(files, [("README.md", ChangeKind::Modified)], "{key}");
        assert_eq!(
            std::fs::read_to_string(ws.path.join("README.md")).unwrap(),
            text
        );
    }
    // The main checkout is untouched.
    assert!(t.status().is_empty());
    assert_eq!(
        std::fs::read_to_string(t.repo.join("README.md")).unwrap(),
        "# demo\n"
    );
}
