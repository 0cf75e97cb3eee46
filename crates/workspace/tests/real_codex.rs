//! Two concurrent REAL Codex runs (exec transport), offline against the
//! testkit mock model server, on two threads of one repository: the mock
//! scripts a shell command through Codex's own `exec_command` tool that
//! rewrites README.md in the run's working directory (the thread's
//! worktree). Neither sees the other's change; each result's change
//! summary names exactly README.md; the main checkout is untouched.
//!
//! Compiled only with `--features real-clis`.
#![cfg(feature = "real-clis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;

use agent_adaptor_core::{Agent, ChangeKind, MemoryStore, Runner};
use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_drivers::codex::{self, Config, Transport};
use agent_adaptor_testkit::clis::{CODEX, ScratchDir};
use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use agent_adaptor_workspace::{GitWorktreeSpec, WorkspaceResources, WorkspaceSpec};
use common::TempRepo;
use serde_json::json;

fn rewrite(text: &str) -> Vec<Reply> {
    vec![
        Reply::ToolCall {
            name: "exec_command".into(),
            arguments: json!({ "cmd": format!("printf '{text}\\n' > README.md") }),
        },
        Reply::Text("Edited.".into()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_threads_edit_readme_in_their_own_worktrees() {
    let t = TempRepo::new();
    let script = Script::new()
        .on_prompt("EDIT_ALPHA", rewrite("# alpha"))
        .on_prompt("EDIT_BETA", rewrite("# beta"));
    let server = MockServer::start(script).await.unwrap();
    let home = ScratchDir::new("ws-codex").unwrap();
    let env = CODEX.prepare(&server.base_url(), home.path()).unwrap();
    let base = server.base_url();
    let mut cfg = Config {
        command: CODEX.binary().unwrap_or_else(|e| panic!("{e}")),
        transport: Transport::Exec,
        model: Some(CODEX.model.into()),
        env_policy: EnvPolicy::only(["PATH", "USER"]),
        approval_policy: Some("never".into()),
        sandbox: Some("workspace-write".into()),
        ..Default::default()
    };
    for (k, v) in agent_adaptor_testkit::clis::codex_mock_overrides(&base) {
        cfg.overrides.insert(k, v);
    }
    cfg.env.extend(env);
    let resources = WorkspaceResources::new(WorkspaceSpec::GitWorktree(GitWorktreeSpec::new(
        "HEAD",
        "agent/{thread}",
    )))
    .base_dir(&t.repo);
    let agent = Agent::builder(codex::driver(cfg))
        .thread_store(Arc::new(MemoryStore::new()))
        .resources(Arc::new(resources))
        .build()
        .unwrap();

    let (alpha, beta) = (agent.thread("alpha"), agent.thread("beta"));
    let (a, b) = tokio::join!(alpha.run("EDIT_ALPHA please"), beta.run("EDIT_BETA please"));
    let (a, b) = (a.unwrap(), b.unwrap());
    for (r, key, text) in [(&a, "alpha", "# alpha\n"), (&b, "beta", "# beta\n")] {
        let ws = r.workspace().expect("a workspace report");
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
    assert_ne!(a.workspace().unwrap().path, b.workspace().unwrap().path);
    assert!(t.status().is_empty());
    assert_eq!(
        std::fs::read_to_string(t.repo.join("README.md")).unwrap(),
        "# demo\n"
    );
}
