//! How `agent-adaptor run` fails: an output nobody reads cancels the run
//! (exit 74), `--json` ends with a result line even when the run never
//! started, a `claude` that is not executable or names a missing
//! interpreter is called so, and the CLI's stderr reaches the failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use agent_adaptor_testkit::fixtures;
use serde_json::Value;
use support::stand_in::SYSTEM_PATH;
use support::{command, stderr, stdout};

/// The exit code of a run whose stdout could not be written.
const EXIT_OUTPUT: i32 = 74;

/// A `claude` in `dir/bin` with `script` as its body (mode `mode`); the
/// `PATH` to give the CLI.
fn fake_claude(dir: &Path, script: &str, mode: u32) -> (PathBuf, String) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let path = bin.join("claude");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    (path, format!("{}:{SYSTEM_PATH}", bin.display()))
}

/// The last stdout line, parsed.
fn last_line(out: &Output) -> Value {
    let text = stdout(out);
    let last = text
        .lines()
        .last()
        .unwrap_or_else(|| panic!("no stdout; stderr: {}", stderr(out)));
    serde_json::from_str(last).unwrap_or_else(|e| panic!("not JSON ({e}): {last}"))
}

fn no_panic(out: &Output) {
    let err = stderr(out);
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
}

#[test]
fn a_closed_stdout_cancels_the_run_and_exits_74() {
    // A CLI that answers and then never finishes: only the closed pipe can
    // end this run early.
    let home = tempfile::tempdir().unwrap();
    let fixture = fixtures::path("claude/print-basic.jsonl");
    let script = format!(
        "#!/bin/sh\nhead -n 4 '{}'\nexec sleep 1000\n",
        fixture.display()
    );
    let (_, path) = fake_claude(home.path(), &script, 0o755);
    let mut child = command(home.path())
        .env("PATH", path)
        .args(["run", "--driver", "claude", "hi"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Nobody reads the answer (`| head -0`).
    drop(child.stdout.take());
    let bound = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > bound {
            let _ = child.kill();
            panic!("the run did not stop although its stdout is closed");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(EXIT_OUTPUT), "{}", stderr(&out));
    let err = stderr(&out).to_lowercase();
    assert!(err.contains("broken pipe"), "{err}");
    assert!(stderr(&out).contains("cancel"), "{}", stderr(&out));
    no_panic(&out);
}

#[test]
fn a_full_disk_fails_the_run_with_74() {
    let home = tempfile::tempdir().unwrap();
    for json in [false, true] {
        let mut args = vec!["run", "--playground", "hello"];
        if json {
            args.push("--json");
        }
        let out = command(home.path())
            .args(&args)
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(EXIT_OUTPUT),
            "json {json}: {}",
            stderr(&out)
        );
        assert!(stderr(&out).contains("No space left"), "{}", stderr(&out));
        no_panic(&out);
    }
}

#[test]
fn json_ends_with_a_result_line_when_the_run_never_starts() {
    let home = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str, i32); 3] = [
        (
            &["run", "--json", "--driver", "claude", "hi"],
            "driver_unavailable",
            1,
        ),
        (
            &[
                "run",
                "--json",
                "--playground",
                "--store",
                "sqlite:/dev/null/x.db",
                "hi",
            ],
            "store_unavailable",
            1,
        ),
        (&["run", "--json", " "], "invalid_arguments", 2),
    ];
    for (args, reason, code) in cases {
        let out = support::run(home.path(), args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
        let last = last_line(&out);
        assert_eq!(last["type"], "result", "{last}");
        assert_eq!(last["ok"], false, "{last}");
        assert_eq!(last["failure"]["reason"], reason, "{last}");
        assert!(!last["failure"]["message"].as_str().unwrap().is_empty());
        no_panic(&out);
    }
}

#[test]
fn a_claude_that_is_not_executable_is_named_so() {
    let home = tempfile::tempdir().unwrap();
    let (file, path) = fake_claude(home.path(), "#!/bin/sh\necho hi\n", 0o644);
    let out = command(home.path())
        .env("PATH", path)
        .args(["run", "--json", "--driver", "claude", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let message = last_line(&out)["failure"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains(&format!("{} is not executable", file.display())),
        "{message}"
    );
    no_panic(&out);
}

#[test]
fn a_claude_with_a_missing_interpreter_is_named_so() {
    let home = tempfile::tempdir().unwrap();
    let script = "#!/nonexistent/agent-adaptor/node\n";
    let (file, path) = fake_claude(home.path(), script, 0o755);
    let out = command(home.path())
        .env("PATH", path)
        .args(["run", "--driver", "claude", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("bad interpreter /nonexistent/agent-adaptor/node"),
        "{err}"
    );
    assert!(err.contains(&file.display().to_string()), "{err}");
    no_panic(&out);
}

#[test]
fn the_clis_stderr_reaches_the_failure_redacted() {
    let home = tempfile::tempdir().unwrap();
    let script =
        "#!/bin/sh\necho 'Error: Invalid API key sk-ant-api03-0123456789abcdef' >&2\nexit 1\n";
    let (_, path) = fake_claude(home.path(), script, 0o755);
    let out = command(home.path())
        .env("PATH", path)
        .args(["run", "--json", "--driver", "claude", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let last = last_line(&out);
    let failure = &last["failure"];
    let message = failure["message"].as_str().unwrap();
    assert!(message.contains("exited with code 1"), "{message}");
    assert!(message.contains("Error: Invalid API key ***"), "{message}");
    assert_eq!(failure["stderr_tail"], "Error: Invalid API key ***");
    let err = stderr(&out);
    assert!(err.contains("Invalid API key ***"), "{err}");
    // (The raw stderr chunks of `--json`'s event lines are the CLI's bytes,
    // kept exactly; the failure is what is redacted.)
    assert!(!err.contains("sk-ant"), "{err}");
    assert!(!last.to_string().contains("sk-ant"), "{last}");
    no_panic(&out);
}
