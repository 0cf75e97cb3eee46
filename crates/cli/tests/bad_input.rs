//! Bad input ends with one clear error line, a non-zero exit and no panic
//! trace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::{assert_one_line_failure, run};

#[test]
fn an_unknown_driver_is_one_line() {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["run", "--driver", "nope", "hello"]);
    assert_one_line_failure(&out, 2, "unknown driver \"nope\"");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("claude, codex, cursor, codebuddy, gemini, llm")
    );
    let out = run(home.path(), &["inspect", "--driver", "nope"]);
    assert_one_line_failure(&out, 2, "unknown driver");
    let out = run(
        home.path(),
        &["serve", "--driver", "nope", "--addr", "127.0.0.1:0"],
    );
    assert_one_line_failure(&out, 2, "unknown driver");
}

#[test]
fn an_unreadable_schema_file_is_one_line() {
    let home = tempfile::tempdir().unwrap();
    let out = run(
        home.path(),
        &[
            "run",
            "--playground",
            "--schema",
            "/nonexistent/schema.json",
            "hello",
        ],
    );
    assert_one_line_failure(&out, 2, "cannot read schema file /nonexistent/schema.json");

    let bad = home.path().join("bad.json");
    std::fs::write(&bad, "{ not json").unwrap();
    let bad_arg = bad.to_string_lossy().into_owned();
    let out = run(
        home.path(),
        &["run", "--playground", "--schema", &bad_arg, "hello"],
    );
    assert_one_line_failure(&out, 2, "is not JSON");

    std::fs::write(&bad, "[1, 2]").unwrap();
    let out = run(
        home.path(),
        &["run", "--playground", "--schema", &bad_arg, "hello"],
    );
    assert_one_line_failure(&out, 2, "must hold one JSON object");
}

#[test]
fn an_unreachable_postgres_store_is_one_line() {
    let home = tempfile::tempdir().unwrap();
    // Nothing listens on this port; the URL's password is never printed.
    let url = format!(
        "postgres://someone:secret-pw@127.0.0.1:{}/agent_adaptor",
        support::free_port()
    );
    let started = std::time::Instant::now();
    for args in [
        vec![
            "run",
            "--playground",
            "--thread",
            "t",
            "--store",
            &url,
            "hello",
        ],
        vec!["threads", "--store", &url, "list"],
    ] {
        let out = run(home.path(), &args);
        assert_one_line_failure(
            &out,
            1,
            "cannot connect to the thread store postgres://127.0.0.1:",
        );
        assert!(!String::from_utf8_lossy(&out.stderr).contains("secret-pw"));
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn a_port_in_use_is_one_line() {
    let home = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run(home.path(), &["serve", "--playground", "--addr", &addr]);
    assert_one_line_failure(&out, 1, &format!("cannot listen on {addr}"));
    let out = run(home.path(), &["mock-model", "--addr", &addr]);
    assert_one_line_failure(&out, 1, &format!("cannot listen on {addr}"));
}

#[test]
fn other_usage_errors_are_one_line() {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["run", "--approve", "maybe", "hello"]);
    assert_one_line_failure(&out, 2, "invalid value 'maybe'");
    let out = run(
        home.path(),
        &["run", "--playground", "--cwd", "/nonexistent/dir", "hello"],
    );
    assert_one_line_failure(&out, 2, "not a directory");
    let out = run(
        home.path(),
        &[
            "run",
            "--playground",
            "--store",
            "mysql://h/db",
            "--thread",
            "t",
            "x",
        ],
    );
    assert_one_line_failure(&out, 2, "expected sqlite:PATH or postgres://");
    let out = run(
        home.path(),
        &["serve", "--playground", "--addr", "0.0.0.0:0", "--no-auth"],
    );
    assert_one_line_failure(&out, 2, "--no-auth is only allowed on a loopback address");
    let out = run(home.path(), &["frobnicate"]);
    assert_one_line_failure(&out, 2, "unrecognized subcommand");
}
