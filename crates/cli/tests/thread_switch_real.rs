//! The real Claude Code on a thread the llm driver wrote (both against the
//! testkit mock model): refused with the exact commands that go on, then,
//! with `--new-session`, run with a visible notice; `threads show` lists
//! the archived llm session.
//!
//! Compiled only with `--features agent-adaptor-cli/real-clis`; the
//! binary comes from `scripts/install-clis` (`tests/clis/bin-paths.env`).
#![cfg(feature = "real-clis")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Output;

use agent_adaptor_testkit::clis::CLAUDE;
use agent_adaptor_testkit::mock::{MockServer, Reply, Script};
use serde_json::Value;
use support::{stderr, stdout};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_is_refused_a_llm_thread_until_new_session() {
    let script = Script::new().fallback(Reply::Text("Mock answer.".into()));
    let mock = MockServer::start(script).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let base = mock.base_url();
    let env = CLAUDE.prepare(&base, home.path()).unwrap();
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(CLAUDE.binary().unwrap(), bin.join("claude")).unwrap();
    let path = format!("{}:{}", bin.display(), support::stand_in::SYSTEM_PATH);
    let agent = |args: &[&str]| -> Output {
        support::command(home.path())
            .envs(env.clone())
            .env("PATH", &path)
            .env("CLAUDE_CODE_MAX_RETRIES", "0")
            .env("CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK", "1")
            .args(args)
            .output()
            .unwrap()
    };
    let llm_base = format!("{base}/v1");
    let out = agent(&[
        "run",
        "--driver",
        "llm",
        "--provider",
        "openai",
        "--base-url",
        &llm_base,
        "--thread",
        "t1",
        "hello",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let claude = [
        "run",
        "--driver",
        "claude",
        "--inherit-env",
        "--thread",
        "t1",
    ];
    let out = agent(&[&claude[..], &["hi"]].concat());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("thread t1 holds a llm session"), "{err}");
    assert!(
        err.contains("agent-adaptor run --driver llm --thread t1 \"…\""),
        "{err}"
    );
    assert!(
        err.contains("agent-adaptor run --driver claude --thread t1 --new-session \"…\""),
        "{err}"
    );

    let out = agent(&[&claude[..], &["--new-session", "hi"]].concat());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("new session on thread t1: the previous llm session is archived"),
        "{err}"
    );
    assert!(stdout(&out).contains("Mock answer."), "{}", stdout(&out));

    let show = agent(&["threads", "show", "t1", "--json"]);
    let show: Value = serde_json::from_str(stdout(&show).trim()).unwrap();
    let sessions: Vec<(&str, &str)> = show["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["status"].as_str().unwrap(), s["driver"].as_str().unwrap()))
        .collect();
    assert_eq!(sessions, [("active", "claude"), ("archived", "llm")]);
}
