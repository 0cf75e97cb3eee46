//! The two raw-pipe contenders (`limit`, `limit-stream`) on output that is
//! not what they expect: a typed error in the report, never a panic or a
//! hang. Nothing here looks at a timing.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use agent_adaptor_testkit::replay::fake_cli_binary;
use serde_json::Value;

/// Runs `contender` on `workload` and returns its report.
fn child(contender: &str, workload: &Path) -> Value {
    child_with(contender, workload, &fake_cli_binary().unwrap())
}

/// [`child`] with `fake` as the CLI.
fn child_with(contender: &str, workload: &Path, fake: &Path) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_agent-adaptor-bench"))
        .args([
            "child",
            "--contender",
            contender,
            "--kind",
            "codex",
            "--fake",
        ])
        .arg(fake)
        .arg("--workload")
        .arg(workload)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{contender}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

/// Codex exec lines the workloads are made of.
const THREAD_STARTED: &str = r#"{"type":"thread.started","thread_id":"t"}"#;
const TURN_STARTED: &str = r#"{"type":"turn.started"}"#;

/// The two raw-pipe contenders.
const BOTH: [&str; 2] = ["limit", "limit-stream"];

/// Runs `contender` with `fake` as the CLI, checks that it failed, and
/// returns its report and error text.
fn failed(contender: &str, workload: &Path, fake: &Path) -> (Value, String) {
    let report = child_with(contender, workload, fake);
    assert_eq!(report["ok"], false, "{contender}: {report}");
    let error = report["error"].as_str().unwrap_or_default().to_owned();
    (report, error)
}

fn workload(name: &str, lines: &[&str]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "agent-adaptor-bench-raw-pipe-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("workload.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn a_line_that_is_not_json_ends_both_with_an_error() {
    let path = workload("malformed", &[THREAD_STARTED, "not json {", TURN_STARTED]);
    for contender in BOTH {
        let (report, error) = failed(contender, &path, &fake_cli_binary().unwrap());
        assert!(error.contains("expected"), "{contender}: {report}");
    }
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn well_formed_lines_are_all_counted_by_both() {
    let path = workload(
        "counted",
        &[
            THREAD_STARTED,
            TURN_STARTED,
            r#"{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}"#,
        ],
    );
    for contender in BOTH {
        let report = child(contender, &path);
        assert_eq!(report["ok"], true, "{contender}: {report}");
        assert_eq!(report["lines"], 3, "{contender}: {report}");
        assert_eq!(report["events"], 3, "{contender}: {report}");
    }
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn a_cli_that_cannot_be_spawned_is_an_error_naming_it() {
    let path = workload("missing", &[TURN_STARTED]);
    let missing = path.with_file_name("no-such-cli");
    for contender in BOTH {
        let (report, error) = failed(contender, &path, &missing);
        assert!(
            error.contains("spawn") && error.contains("no-such-cli"),
            "{contender}: {report}"
        );
    }
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn a_cli_that_exits_non_zero_fails_after_every_line_was_read() {
    let path = workload("exit", &[THREAD_STARTED, TURN_STARTED]);
    // The fake CLI replays the workload, then its wrapper exits with 3.
    let wrapper = path.with_file_name("exits-3.sh");
    let fake = fake_cli_binary().unwrap();
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\n'{}' \"$@\"\nexit 3\n", fake.display()),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    for contender in BOTH {
        let (report, error) = failed(contender, &path, &wrapper);
        assert_eq!(report["lines"], 2, "{contender}: {report}");
        assert!(error.contains("exit status: 3"), "{contender}: {report}");
    }
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
