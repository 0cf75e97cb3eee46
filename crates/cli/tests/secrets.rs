//! Secrets stay where they are: an agent CLI started by `agent-adaptor run`
//! gets an allowlisted environment (plus what `--env` names, or everything
//! with `--inherit-env`), and credentials in `--base-url` are never printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_drivers::streamjson::CLAUDE;
use support::mock::MockModel;
use support::stand_in::StandIn;
use support::{stderr, stdout};

/// Secrets in the environment `agent-adaptor` runs in.
const SECRETS: [(&str, &str); 2] = [
    ("AWS_SECRET_ACCESS_KEY", "aws-very-secret"),
    ("GITHUB_TOKEN", "ghp_very_secret"),
];

/// `agent-adaptor run --driver claude --json … hi` with the stand-in on
/// `PATH` and the secrets set; the run must succeed.
fn run_claude(home: &Path, cli: &StandIn, flags: &[&str]) -> Output {
    cli.reset();
    let out = support::command(home)
        .env("PATH", cli.path_var())
        .envs(SECRETS)
        .args(["run", "--driver", "claude", "--json"])
        .args(flags)
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

#[test]
fn an_agent_cli_gets_the_allowlist_plus_what_env_names_or_everything_when_asked() {
    let home = tempfile::tempdir().unwrap();
    let cli = StandIn::new("claude", "claude/print-basic.jsonl");

    run_claude(home.path(), &cli, &[]);
    let env = cli.recorded_env();
    let outside: Vec<&String> = env
        .keys()
        .filter(|k| !EnvPolicy::default().allows(CLAUDE.env_allowlist, k))
        .collect();
    assert!(outside.is_empty(), "not allowlisted: {outside:?}");
    for (name, _) in SECRETS {
        assert!(!env.contains_key(name), "{name} reached the CLI");
    }
    assert!(!env.contains_key("AGENT_ADAPTOR_HOME"));
    assert_eq!(env.get("PATH"), Some(&cli.path_var()));
    assert_eq!(
        env.get("HOME").map(Path::new),
        Some(home.path()),
        "the allowlist passes HOME"
    );
    let allowlisted: BTreeSet<String> = env.into_keys().collect();

    run_claude(home.path(), &cli, &["--env", "GITHUB_TOKEN"]);
    let env = cli.recorded_env();
    assert_eq!(
        env.get("GITHUB_TOKEN").map(String::as_str),
        Some("ghp_very_secret")
    );
    let extra: Vec<String> = env
        .into_keys()
        .filter(|k| !allowlisted.contains(k))
        .collect();
    assert_eq!(extra, ["GITHUB_TOKEN"], "exactly the named one more");

    run_claude(home.path(), &cli, &["--inherit-env"]);
    let env = cli.recorded_env();
    for (name, value) in SECRETS {
        assert_eq!(env.get(name).map(String::as_str), Some(value));
    }
    assert!(env.contains_key("AGENT_ADAPTOR_HOME"), "everything passes");
    for (name, _) in std::env::vars() {
        assert!(env.contains_key(&name), "{name} inherited");
    }
}

#[test]
fn env_takes_names_only() {
    let home = tempfile::tempdir().unwrap();
    let out = support::run(
        home.path(),
        &["run", "--playground", "--env", "TOKEN=x", "hi"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a variable name"),
        "{}",
        stderr(&out)
    );
    let out = support::run(
        home.path(),
        &["run", "--playground", "--env", "A", "--inherit-env", "hi"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn credentials_in_the_base_url_are_never_printed() {
    let home = tempfile::tempdir().unwrap();
    let mock = MockModel::start(home.path());
    let base = format!(
        "http://user:pw-secret@127.0.0.1:{}/v1?api-key=K-secret",
        mock.port
    );
    for json in [true, false] {
        let mut args = vec![
            "run",
            "--driver",
            "llm",
            "--provider",
            "openai",
            "--base-url",
            &base,
            "--approve",
            "all",
        ];
        if json {
            args.push("--json");
        }
        args.push("hi");
        let out = support::run(home.path(), &args);
        let (stdout, stderr) = (stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let all = format!("{stdout}\n{stderr}");
        assert!(!all.contains("pw-secret"), "{all}");
        assert!(!all.contains("K-secret"), "{all}");
        if json {
            // The invocation notice names the endpoint, redacted.
            assert!(
                stdout.contains("http://***@127.0.0.1"),
                "the notice shows the redacted URL: {stdout}"
            );
        } else {
            assert!(stderr.contains("http://***@127.0.0.1"), "{stderr}");
        }
    }
    // A base URL that is refused is redacted in the error too.
    let out = support::run(
        home.path(),
        &[
            "run",
            "--driver",
            "llm",
            "--provider",
            "openai",
            "--base-url",
            "ftp://u:pw-secret@h/",
            "hi",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!stderr(&out).contains("pw-secret"), "{}", stderr(&out));
}
