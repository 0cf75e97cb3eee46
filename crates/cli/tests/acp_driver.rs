//! `--driver acp:NAME` and `--driver acp --acp-command "CMD ARGS…"`: the
//! usage errors (a missing or misplaced `--acp-command`, an unknown agent,
//! an agent not on `PATH`), and a run through the testkit's
//! `fake-acp-agent` named by `--acp-command` (quoted arguments kept whole).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use agent_adaptor_testkit::acp_agent::{FakeAcpAgent, TEXT_CHUNKS};
use support::{assert_one_line_failure, run, stdout};

#[test]
fn acp_usage_errors_are_one_line() {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["run", "--driver", "acp", "hello"]);
    assert_one_line_failure(&out, 2, "--driver acp needs --acp-command");
    let out = run(
        home.path(),
        &[
            "run",
            "--driver",
            "gemini",
            "--acp-command",
            "agent --acp",
            "hello",
        ],
    );
    assert_one_line_failure(&out, 2, "--acp-command applies to --driver acp");
    let out = run(
        home.path(),
        &[
            "run",
            "--driver",
            "acp:qwen",
            "--acp-command",
            "agent",
            "hello",
        ],
    );
    assert_one_line_failure(&out, 2, "--acp-command applies to --driver acp");
    let out = run(home.path(), &["run", "--acp-command", "agent", "hello"]);
    assert_one_line_failure(&out, 2, "--acp-command needs --driver acp");
    let out = run(
        home.path(),
        &[
            "run",
            "--driver",
            "acp",
            "--acp-command",
            "agent 'unclosed",
            "hello",
        ],
    );
    assert_one_line_failure(&out, 2, "--acp-command");
    let out = run(home.path(), &["run", "--driver", "acp:nope", "hello"]);
    assert_one_line_failure(&out, 2, "unknown ACP agent \"nope\"");
    // The isolated PATH holds no agent: a failure naming the program.
    let out = run(home.path(), &["run", "--driver", "acp:copilot", "hello"]);
    assert_one_line_failure(&out, 1, "`copilot` was not found on PATH");
}

#[test]
fn a_custom_acp_command_runs_the_agent() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeAcpAgent::binary().unwrap();
    let log = home.path().join("frames log.jsonl");
    let line = format!(
        "{} --scenario text --log '{}'",
        fake.display(),
        log.display()
    );
    let out = run(
        home.path(),
        &["run", "--driver", "acp", "--acp-command", &line, "hello"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout(&out).contains(&TEXT_CHUNKS.concat()),
        "{}",
        stdout(&out)
    );
    // The quoted path with a space reached the agent whole.
    let frames = FakeAcpAgent::read_log(&log).unwrap();
    assert!(frames.iter().any(|f| f["method"] == "session/prompt"));
}
