//! The real Claude Code and Codex outlive no SIGKILLed `agent-adaptor
//! run`: killed while the answer streams from the testkit mock model, the
//! CLI is gone within a bounded wait (parent death signal), and once the
//! next `run` has started (its sweep) nothing it started is left — checked
//! through `/proc` by PID and start time, process group and an inherited
//! environment tag (support/tree.rs), never by name.
//!
//! Compiled only with `--features agent-adaptor-cli/real-clis`; the
//! binaries come from `scripts/install-clis` (`tests/clis/bin-paths.env`),
//! and a missing one fails with a pointer to that script.
#![cfg(feature = "real-clis")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::BufRead;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use agent_adaptor_testkit::clis::{CLAUDE, CODEX, CliRecipe};
use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use support::tree::{self, Proc, new_tag, tagged, wait_gone};

/// The prompt the mock answers slowly.
const KEYWORD: &str = "SLOWTEXT";

/// How long a real CLI may take to start streaming.
const FIRST_TEXT_BOUND: Duration = Duration::from_secs(90);

/// Codex reads its provider from `$CODEX_HOME/config.toml` (the CLI's
/// driver takes no `-c` overrides): the recipe's offline settings.
fn codex_config(base_url: &str) -> String {
    format!(
        r#"model_provider = "mock"
model = "{model}"
check_for_update_on_startup = false
[model_providers.mock]
name = "Mock"
base_url = "{base_url}/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0
[features]
plugins = false
[analytics]
enabled = false
"#,
        model = CODEX.model
    )
}

/// Run `driver` (the real CLI of `recipe`) under `agent-adaptor run`,
/// SIGKILL the host at the first streamed text, and check what is left.
async fn kill_while_streaming(recipe: CliRecipe, driver: &str) {
    // 200 pieces, 100 ms apart: 20 s if nothing stops it.
    let script = Script::new().on_prompt(
        KEYWORD,
        vec![Reply::Slow {
            text: "0123456789abcdef ".repeat(200),
            chunk_delay: Duration::from_millis(100),
        }],
    );
    let mock = MockServer::start(script).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let base = mock.base_url();
    let env = recipe.prepare(&base, home.path()).unwrap();
    if recipe.name == "codex" {
        std::fs::write(home.path().join(".codex/config.toml"), codex_config(&base)).unwrap();
    }
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(recipe.binary().unwrap(), bin.join(recipe.name)).unwrap();
    let state = home.path().join("state");
    let tag = new_tag();

    let mut host = support::command(home.path())
        .envs(env)
        .env(
            "PATH",
            format!("{}:{}", bin.display(), support::stand_in::SYSTEM_PATH),
        )
        .env("AGENT_ADAPTOR_STATE_DIR", &state)
        .env("AA_TEST_TAG", &tag)
        .env("CLAUDE_CODE_MAX_RETRIES", "0")
        .env("CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK", "1")
        .current_dir(home.path().join("work"))
        .args(["run", "--driver", driver, "--model", recipe.model])
        .args(["--json", "--inherit-env", "--approve", "none"])
        .arg(format!("{KEYWORD} go"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let host_pid = host.id();
    let (tx, rx) = mpsc::channel();
    let stdout = host.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let streaming = loop {
        match rx.recv_timeout(FIRST_TEXT_BOUND) {
            Ok(line) if line.contains(r#""type":"text.content""#) => break true,
            Ok(line) => seen.push(line),
            Err(_) => break false,
        }
    };
    assert!(streaming, "{driver}: no streamed text; events: {seen:#?}");

    // Everything the run started, by PID and start time.
    let cli: Vec<Proc> = tree::children(host_pid);
    assert_eq!(cli.len(), 1, "{driver}: one CLI under the host: {cli:?}");
    let cli = cli[0];
    let family: Vec<Proc> = tagged(&tag)
        .into_iter()
        .filter(|p| *p != host_pid)
        .filter_map(|pid| {
            Some(Proc {
                pid,
                start: tree::stat(pid)?.start,
            })
        })
        .collect();
    assert!(family.contains(&cli), "{driver}: {cli:?} carries the tag");

    eprintln!("{driver}: the run's processes at the kill: {family:?}");
    host.kill().unwrap();
    host.wait().unwrap();
    let left = wait_gone(|| Some(cli).filter(Proc::alive).into_iter().collect());
    assert!(
        left.is_empty(),
        "{driver}: the CLI {cli:?} outlived its host"
    );

    // The next start: a playground run (no CLI) with the same state.
    let out = support::command(home.path())
        .env("AGENT_ADAPTOR_STATE_DIR", &state)
        .args(["run", "--playground", "--json", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
    let left: Vec<Proc> = family.iter().copied().filter(Proc::alive).collect();
    assert!(
        left.is_empty(),
        "{driver}: left after the next start: {left:?}"
    );
    let group = tree::members(|s| s.pgrp == cli.pid);
    assert!(
        group.is_empty(),
        "{driver}: group {} left: {group:?}",
        cli.pid
    );
    let tagged = tagged(&tag);
    assert!(
        tagged.is_empty(),
        "{driver}: tagged processes left: {tagged:?}"
    );
    assert!(
        !mock.requests().is_empty(),
        "{driver} talked to the mock model"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_host_leaves_no_claude_code_behind() {
    kill_while_streaming(CLAUDE, "claude").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_host_leaves_no_codex_behind() {
    kill_while_streaming(CODEX, "codex").await;
}
