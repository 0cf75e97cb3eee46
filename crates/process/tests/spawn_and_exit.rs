//! Spawn errors, environment and working directory, exit reporting, timeout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use agent_adaptor_driver::DriverError;
use agent_adaptor_process::{Command, Process, ProcessError};
use common::{TestSink, sh};

#[tokio::test]
async fn missing_program_is_not_found_naming_it() {
    let err = Process::spawn(&Command::new("agent-adaptor-no-such-program-xyz")).unwrap_err();
    match &err {
        ProcessError::NotFound { program } => {
            assert_eq!(program, "agent-adaptor-no-such-program-xyz")
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
    assert!(
        err.to_string()
            .contains("agent-adaptor-no-such-program-xyz")
    );
    let err = Process::spawn(&Command::new("/nonexistent/dir/prog")).unwrap_err();
    assert!(
        matches!(err, ProcessError::NotFound { ref program } if program == "/nonexistent/dir/prog")
    );
    // and it converts into the driver's spawn error
    let d: DriverError = err.into();
    assert!(matches!(d, DriverError::Spawn { .. }));
}

#[tokio::test]
async fn non_executable_file_is_named_not_executable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not-executable.sh");
    std::fs::write(&path, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = Process::spawn(&Command::new(&path)).unwrap_err();
    match &err {
        ProcessError::NotExecutable {
            program,
            path: found,
        } => {
            assert_eq!(program, &path.display().to_string());
            assert_eq!(found, &path);
        }
        other => panic!("expected NotExecutable, got {other:?}"),
    }
    // Found on the child's PATH by name, too (execvp says only EACCES).
    let bin = dir.path().join("claude");
    std::fs::write(&bin, "#!/bin/sh\necho hi\n").unwrap();
    let mut cmd = Command::new("claude");
    cmd.env("PATH", dir.path());
    let err = Process::spawn(&cmd).unwrap_err();
    assert!(
        matches!(&err, ProcessError::NotExecutable { path, .. } if path == &bin),
        "{err:?}"
    );
    let d: DriverError = err.into();
    let shown = d.to_string();
    assert!(shown.contains("is not executable"), "{shown}");
    assert!(shown.contains(&bin.display().to_string()), "{shown}");
    assert!(
        matches!(&d, DriverError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::PermissionDenied)
    );
}

#[tokio::test]
async fn missing_interpreter_is_named_bad_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("claude");
    std::fs::write(&path, "#!/nonexistent/agent-adaptor/node --flag\nhi\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = Command::new("claude");
    cmd.env("PATH", dir.path());
    let err = Process::spawn(&cmd).unwrap_err();
    match &err {
        ProcessError::BadInterpreter {
            program,
            path: found,
            interpreter,
        } => {
            assert_eq!(program, "claude");
            assert_eq!(found, &path);
            assert_eq!(
                interpreter,
                std::path::Path::new("/nonexistent/agent-adaptor/node")
            );
        }
        other => panic!("expected BadInterpreter, got {other:?}"),
    }
    let d: DriverError = err.into();
    let shown = d.to_string();
    assert!(
        shown.contains("bad interpreter /nonexistent/agent-adaptor/node"),
        "{shown}"
    );
    assert!(shown.contains(&path.display().to_string()), "{shown}");
    // A missing program stays "not found".
    let mut cmd = Command::new("agent-adaptor-no-such-program-xyz");
    cmd.env("PATH", dir.path());
    assert!(matches!(
        Process::spawn(&cmd).unwrap_err(),
        ProcessError::NotFound { .. }
    ));
}

#[tokio::test]
async fn missing_cwd_is_reported_as_such() {
    let mut cmd = sh("true");
    cmd.cwd("/nonexistent/agent-adaptor-cwd");
    match Process::spawn(&cmd).unwrap_err() {
        ProcessError::CwdNotFound { program, cwd } => {
            assert_eq!(program, "sh");
            assert_eq!(cwd, std::path::Path::new("/nonexistent/agent-adaptor-cwd"));
        }
        other => panic!("expected CwdNotFound, got {other:?}"),
    }
}

#[tokio::test]
async fn errors_never_carry_env_values() {
    let mut cmd = Command::new("agent-adaptor-no-such-program-xyz");
    cmd.env("AA_SECRET", "sk-super-secret-value");
    let err = Process::spawn(&cmd).unwrap_err();
    assert!(!format!("{err} {err:?}").contains("sk-super-secret-value"));
    assert!(!format!("{cmd:?}").contains("sk-super-secret-value"));
}

async fn output_of(cmd: &Command) -> String {
    let sink = TestSink::new();
    let fin = Process::spawn(cmd).unwrap().finish(&sink).await.unwrap();
    assert!(fin.exit.success(), "{:?}", fin.exit);
    fin.stdout.to_string_lossy().unwrap()
}

#[tokio::test]
async fn environment_inherits_by_default_and_follows_the_recipe() {
    // The parent's PATH and HOME are visible by default.
    let parent_path = std::env::var("PATH").unwrap();
    let out = output_of(&sh("printf '%s' \"$PATH\"")).await;
    assert_eq!(out, parent_path);

    // clear → inherit PATH (present) and AA_NOT_SET (absent) → set → remove
    let mut cmd = Command::new("/usr/bin/env");
    cmd.env_clear()
        .inherit_env(["PATH", "AA_NOT_SET_ANYWHERE"])
        .env("AA_ONE", "1")
        .env("AA_TWO", "2")
        .env_remove("AA_TWO");
    let out = output_of(&cmd).await;
    let mut vars: Vec<&str> = out.lines().collect();
    vars.sort_unstable();
    // The marker is added after the recipe, always (one per child).
    let at = vars
        .iter()
        .position(|v| v.starts_with("AGENT_ADAPTOR_PROCESS_MARK="))
        .expect("the marker");
    let value = &vars.remove(at)["AGENT_ADAPTOR_PROCESS_MARK=".len()..];
    assert!(value.len() == 32 && value.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(
        vars,
        vec!["AA_ONE=1".to_owned(), format!("PATH={parent_path}")]
    );

    // without env_clear, env_remove hides one inherited variable
    let mut cmd = sh("printf '%s|%s' \"${HOME-unset}\" \"$AA_X\"");
    cmd.env_remove("HOME").env("AA_X", "x");
    assert_eq!(output_of(&cmd).await, "unset|x");
}

#[tokio::test]
async fn cwd_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = sh("pwd -P");
    cmd.cwd(dir.path());
    let want = dir.path().canonicalize().unwrap();
    assert_eq!(output_of(&cmd).await.trim_end(), want.display().to_string());
}

#[tokio::test]
async fn exit_code_is_reported() {
    let sink = TestSink::new();
    let fin = Process::spawn(&sh("echo out; echo err >&2; exit 3"))
        .unwrap()
        .finish(&sink)
        .await
        .unwrap();
    assert_eq!(fin.exit.code, Some(3));
    assert_eq!(fin.exit.signal, None);
    assert!(!fin.exit.timed_out && !fin.exit.success());
    assert_eq!(fin.stdout.to_vec().unwrap(), b"out\n");
    assert_eq!(fin.stderr.to_vec().unwrap(), b"err\n");
    let mut resp = agent_adaptor_driver::Response::default();
    fin.exit.apply_to(&mut resp);
    assert_eq!(resp.exit_code, Some(3));
    let raw = fin.into_raw_streams();
    assert!(raw.terminal.is_none());
    assert_eq!(raw.stdout.to_vec().unwrap(), b"out\n");
}

#[tokio::test]
async fn death_by_signal_is_reported_by_name() {
    let sink = TestSink::new();
    let fin = Process::spawn(&sh("echo before; kill -9 $$"))
        .unwrap()
        .finish(&sink)
        .await
        .unwrap();
    assert_eq!(fin.exit.code, None);
    assert_eq!(fin.exit.signal.as_deref(), Some("SIGKILL"));
    assert!(!fin.exit.timed_out);
    assert_eq!(fin.stdout.to_vec().unwrap(), b"before\n");
}

#[tokio::test]
async fn timeout_runs_the_shutdown_sequence_and_reports_timed_out() {
    let sink = TestSink::new();
    let mut cmd = sh("echo started; exec sleep 30");
    cmd.timeout(Some(Duration::from_millis(200)))
        .close_grace(Duration::from_millis(100))
        .term_grace(Duration::from_millis(100));
    let mut p = Process::spawn(&cmd).unwrap();
    // lines keep flowing, then stdout ends because the timeout stopped the child
    let first = p.next_line(&sink).await.unwrap().unwrap();
    assert_eq!(first.as_memory(), Some(&b"started"[..]));
    let end = tokio::time::timeout(Duration::from_secs(20), p.next_line(&sink))
        .await
        .unwrap();
    assert!(end.unwrap().is_none());
    let fin = p.finish(&sink).await.unwrap();
    assert!(fin.exit.timed_out);
    assert_eq!(
        fin.exit.signal.as_deref(),
        Some("SIGTERM"),
        "sleep dies on SIGTERM"
    );
    let t = fin.timeline;
    let timed_out_at = t.timed_out_at.unwrap();
    assert!(timed_out_at.duration_since(t.spawned_at) >= Duration::from_millis(200));
    assert!(t.stdin_closed_at.is_some());
    assert!(t.term_sent_at.unwrap() >= timed_out_at + Duration::from_millis(100));
    assert!(t.kill_sent_at.is_none());
}

#[tokio::test]
async fn timeout_also_bounds_finish() {
    let sink = TestSink::new();
    let mut cmd = sh("exec sleep 30");
    cmd.timeout(Some(Duration::from_millis(100)))
        .close_grace(Duration::from_millis(50))
        .term_grace(Duration::from_millis(50));
    let fin = tokio::time::timeout(
        Duration::from_secs(20),
        Process::spawn(&cmd).unwrap().finish(&sink),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(fin.exit.timed_out);
    assert!(!fin.exit.success());
}

#[tokio::test]
async fn a_fast_child_is_not_timed_out() {
    let sink = TestSink::new();
    let mut cmd = sh("echo quick");
    cmd.timeout(Some(Duration::from_secs(30)));
    let fin = Process::spawn(&cmd).unwrap().finish(&sink).await.unwrap();
    assert!(fin.exit.success());
    assert!(fin.timeline.timed_out_at.is_none());
}
