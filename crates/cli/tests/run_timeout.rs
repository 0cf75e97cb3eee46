//! `agent-adaptor run --timeout`: a run whose agent CLI stalls mid-turn
//! ends at the deadline as a typed failure (`deadline_exceeded`), with a
//! result line and a non-zero exit, instead of running forever.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::Value;
use support::stand_in::StandIn;
use support::{stderr, stdout};

#[test]
fn timeout_ends_a_run_whose_cli_stalls() {
    let home = tempfile::tempdir().unwrap();
    // Prints its first line, then hangs with its stdout open.
    let cli = StandIn::with_opts(
        "claude",
        "claude/print-basic.jsonl",
        "--truncate-after 1 --hang",
    );
    // `timeout` only bounds the test: without `--timeout` the run never ends.
    let out = support::command_via(home.path(), &["timeout", "-s", "KILL", "60"])
        .env("PATH", cli.path_var())
        .args([
            "run",
            "--driver",
            "claude",
            "--json",
            "--timeout",
            "1s",
            "hi",
        ])
        .output()
        .unwrap();
    assert_ne!(
        out.status.code(),
        Some(137),
        "the run hung: {}",
        stderr(&out)
    );
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "result", "{text}");
    assert_eq!(last["ok"], false);
    assert_eq!(last["failure"]["reason"], "deadline_exceeded", "{last}");
}

#[test]
fn timeout_takes_a_duration_and_refuses_anything_else() {
    let home = tempfile::tempdir().unwrap();
    let out = support::run(
        home.path(),
        &["run", "--playground", "--timeout", "5m", "hi"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = support::run(
        home.path(),
        &["run", "--playground", "--timeout", "soon", "hi"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("invalid value 'soon' for '--timeout"),
        "{}",
        stderr(&out)
    );
}
