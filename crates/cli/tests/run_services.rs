//! `run --service NAME=CMD --service-ready NAME=CHECK`: the service is
//! ready before the agent starts, reported in the result line, and stopped
//! after the run; bad flags are usage errors before anything starts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::Value;
use support::{assert_one_line_failure, bin, free_port, run, stderr, stdout};

#[test]
fn a_service_is_ready_before_the_run_reported_and_stopped_after() {
    let home = tempfile::tempdir().unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    // The CLI's own mock model server is the service.
    let service = format!("model={} mock-model --addr {addr}", bin().display());
    let ready = format!("model=tcp:{port}");
    let out = run(
        home.path(),
        &[
            "run",
            "--playground",
            "--json",
            "--service",
            &service,
            "--service-ready",
            &ready,
            "hi",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let last: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    let services = last["services"].as_array().unwrap();
    assert_eq!(services.len(), 1, "{last}");
    assert_eq!(services[0]["name"], "model");
    assert_eq!(services[0]["endpoint"], addr.as_str());
    assert_eq!(services[0]["status"], "running");
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "the service is stopped with the run"
    );
}

#[test]
fn a_service_that_never_gets_ready_fails_the_run_before_the_agent() {
    let home = tempfile::tempdir().unwrap();
    let port = free_port();
    // `false` exits at once: never ready.
    let out = run(
        home.path(),
        &[
            "run",
            "--playground",
            "--json",
            "--service",
            "db=false",
            "--service-ready",
            &format!("db=tcp:{port}"),
            "hi",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let last: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(last["ok"], false);
    let message = last["failure"]["message"].as_str().unwrap();
    assert!(message.contains("service db not ready"), "{last}");
    assert_eq!(last["raw"], Value::Null, "no agent ran: {last}");
}

#[test]
fn malformed_service_flags_are_usage_errors() {
    let home = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (&["--service", "web=serve"][..], "needs --service-ready web"),
        (
            &["--service-ready", "web=tcp:1"][..],
            "no --service web=COMMAND",
        ),
        (
            &["--service", "web=serve", "--service-ready", "web=udp:1"][..],
            "expected tcp:PORT",
        ),
        (&["--service", "web"][..], "expected NAME=VALUE"),
    ] {
        let out = run(
            home.path(),
            &[&["run", "--playground"][..], args, &["hi"]].concat(),
        );
        assert_one_line_failure(&out, 2, needle);
    }
}
