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
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("secret-pw"));
        assert_cause_once(&err, "connection refused");
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

/// `err` names `cause` once, and no prefix repeats.
fn assert_cause_once(err: &str, cause: &str) {
    assert_eq!(err.matches(cause).count(), 1, "{cause:?} once in {err:?}");
    for prefix in ["thread store backend:", "store:", "connect:"] {
        assert!(
            err.matches(prefix).count() <= 1,
            "{prefix:?} repeats in {err:?}"
        );
    }
    assert!(
        !err.contains("timed out waiting for a pooled connection"),
        "{err}"
    );
}

#[test]
fn store_errors_name_their_root_cause_once() {
    let home = tempfile::tempdir().unwrap();
    let out = run(
        home.path(),
        &[
            "threads",
            "--store",
            "postgres://u:pw@no-such-host.invalid:5432/db",
            "list",
        ],
    );
    assert_one_line_failure(&out, 1, "cannot connect to the thread store");
    assert_cause_once(&support::stderr(&out), "the host name does not resolve");

    let not_a_db = home.path().join("notes.txt");
    std::fs::write(
        &not_a_db,
        "just text, not SQLite, long enough to have a header",
    )
    .unwrap();
    let store = format!("sqlite:{}", not_a_db.display());
    let out = run(home.path(), &["threads", "--store", &store, "list"]);
    assert_one_line_failure(&out, 1, "cannot open the thread store");
    assert_cause_once(&support::stderr(&out), "not a SQLite database");

    let dir = format!("sqlite:{}", home.path().display());
    let out = run(home.path(), &["threads", "--store", &dir, "list"]);
    assert_one_line_failure(&out, 1, "cannot open the thread store");
    assert_cause_once(&support::stderr(&out), "cannot open the SQLite file");
}

/// A PostgreSQL server that refuses every login with SQLSTATE 28P01, as a
/// server does for a wrong password (the throwaway server of
/// `scripts/with-postgres` trusts local users, so it cannot show this).
fn refusing_postgres() -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            // SSLRequest (answered "no") and/or the startup message.
            loop {
                let mut head = [0u8; 8];
                if conn.read_exact(&mut head).is_err() {
                    break;
                }
                let len = u32::from_be_bytes(head[..4].try_into().unwrap()) as usize;
                let code = u32::from_be_bytes(head[4..].try_into().unwrap());
                if code == 80_877_103 {
                    let _ = conn.write_all(b"N");
                    continue;
                }
                let mut rest = vec![0u8; len.saturating_sub(8)];
                let _ = conn.read_exact(&mut rest);
                let mut body = Vec::new();
                for (field, value) in [
                    (b'S', "FATAL"),
                    (b'V', "FATAL"),
                    (b'C', "28P01"),
                    (b'M', "password authentication failed for user \"someone\""),
                ] {
                    body.push(field);
                    body.extend_from_slice(value.as_bytes());
                    body.push(0);
                }
                body.push(0);
                let mut frame = vec![b'E'];
                frame.extend_from_slice(&u32::try_from(body.len() + 4).unwrap().to_be_bytes());
                frame.extend_from_slice(&body);
                let _ = conn.write_all(&frame);
                break;
            }
        }
    });
    port
}

#[test]
fn a_wrong_postgres_password_is_named() {
    let home = tempfile::tempdir().unwrap();
    let url = format!(
        "postgres://someone:wrong-pw@127.0.0.1:{}/agent_adaptor?sslmode=disable",
        refusing_postgres()
    );
    let out = run(home.path(), &["threads", "--store", &url, "list"]);
    assert_one_line_failure(&out, 1, "cannot connect to the thread store");
    let err = support::stderr(&out);
    assert_cause_once(&err, "authentication failed");
    assert!(!err.contains("wrong-pw"), "{err}");
}

/// A database the server does not have: named as such (the server of
/// `scripts/with-postgres` trusts local users, so a wrong password is not
/// refused there).
#[cfg(feature = "postgres-tests")]
#[test]
fn a_missing_postgres_database_is_named() {
    let url = std::env::var("PG_TEST_URL").expect("PG_TEST_URL (run under scripts/with-postgres)");
    let (server, _) = url.rsplit_once('/').unwrap();
    let missing = format!("{server}/no_such_database_here");
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["threads", "--store", &missing, "list"]);
    assert_one_line_failure(&out, 1, "cannot connect to the thread store");
    assert_cause_once(&support::stderr(&out), "the database does not exist");
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
    assert_clap_error(
        &out,
        "invalid value 'maybe'",
        "possible values: ask, all, none",
    );
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
    assert_clap_error(&out, "unrecognized subcommand", "Usage: agent-adaptor");
}

#[test]
fn push_flags_without_a_good_secret_or_host_are_one_line() {
    let home = tempfile::tempdir().unwrap();
    let serve = |extra: &[&str]| {
        let mut args = vec!["serve", "--playground", "--addr", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        run(home.path(), &args)
    };
    let out = serve(&["--push-allow-host", "hooks.example.com"]);
    assert_one_line_failure(
        &out,
        2,
        "--push-allow-host needs a secret to sign deliveries",
    );
    let short = home.path().join("short-secret");
    std::fs::write(&short, "too short\n").unwrap();
    let short = short.to_string_lossy().into_owned();
    let out = serve(&[
        "--push-allow-host",
        "hooks.example.com",
        "--push-secret-file",
        &short,
    ]);
    assert_one_line_failure(&out, 2, "the push secret must have at least 16 bytes");
    let out = serve(&[
        "--push-allow-host",
        "hooks.example.com",
        "--push-secret-file",
        "/nonexistent/push-secret",
    ]);
    assert_one_line_failure(&out, 2, "--push-secret-file /nonexistent/push-secret");
    let good = home.path().join("secret");
    std::fs::write(&good, "a push secret of enough bytes\n").unwrap();
    let good = good.to_string_lossy().into_owned();
    let out = serve(&[
        "--push-allow-host",
        "https://hooks.example.com",
        "--push-secret-file",
        &good,
    ]);
    assert_one_line_failure(
        &out,
        2,
        "push allowlist entry \"https://hooks.example.com\"",
    );
}

/// A clap error kept whole: exit 2, the first line says what is wrong,
/// `detail` is in the rest.
fn assert_clap_error(out: &std::process::Output, first: &str, detail: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let head = err.lines().next().unwrap_or("");
    assert!(head.starts_with("agent-adaptor: error: "), "{err}");
    assert!(head.contains(first), "{first:?} not in {err:?}");
    assert!(err.contains(detail), "{detail:?} not in {err:?}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn clap_errors_name_the_missing_argument_and_suggest_the_near_miss() {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["run", "--playground"]);
    assert_clap_error(&out, "required arguments were not provided", "<PROMPT>");
    assert_clap_error(&out, "required", "Usage: agent-adaptor run");
    let out = run(home.path(), &["threads", "fork", "a"]);
    assert_clap_error(&out, "required arguments were not provided", "<NEW>");
    let out = run(home.path(), &["runn", "hello"]);
    assert_clap_error(
        &out,
        "unrecognized subcommand 'runn'",
        "similar subcommand exists: 'run'",
    );
    let out = run(home.path(), &["run", "--jsno", "hello"]);
    assert_clap_error(
        &out,
        "unexpected argument '--jsno'",
        "similar argument exists: '--json'",
    );
}

#[test]
fn a_mistyped_driver_gets_a_suggestion() {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &["run", "--driver", "claud", "hello"]);
    assert_one_line_failure(&out, 2, "unknown driver \"claud\": did you mean 'claude'?");
    let out = run(home.path(), &["run", "--driver", "acp:qwn", "hello"]);
    assert_one_line_failure(&out, 2, "did you mean 'acp:qwen'?");
}
