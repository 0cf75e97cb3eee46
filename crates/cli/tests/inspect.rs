//! `agent-adaptor inspect [--json] [--driver NAME]`: every driver
//! reported, credentials by name only. Random secrets are set in every key
//! variable and in fake credentials files; no 8-byte window of any of them
//! may appear in the table or the JSON.
//!
//! With `--features agent-adaptor-cli/real-clis`, the pinned CLIs
//! (`tests/clis/bin-paths.env`, from `scripts/install-clis`) are put on
//! `PATH` under their program names: each reports its binary, the pinned
//! version and an auth state.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::Read;
use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::{assert_one_line_failure, run, stderr, stdout};

/// The variables that get a random secret.
const KEY_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "OPENROUTER_API_KEY",
    "CODEX_API_KEY",
    "CODEBUDDY_API_KEY",
    "CURSOR_API_KEY",
    "COPILOT_PROVIDER_API_KEY",
];

/// A random secret: 24 bytes of `/dev/urandom`, hex.
fn random_secret() -> String {
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut bytes)
        .unwrap();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Fails when any 8-byte window of any secret is in `text`.
fn assert_no_secret(text: &str, secrets: &[String]) {
    for secret in secrets {
        for window in secret.as_bytes().windows(8) {
            let window = std::str::from_utf8(window).unwrap();
            assert!(!text.contains(window), "{window:?} of a secret in:\n{text}");
        }
    }
}

/// A home with Claude Code's and Codex's login files, holding `secret`.
fn fake_logins(home: &Path, secret: &str) {
    let claude = home.join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join(".credentials.json"),
        format!(
            r#"{{"claudeAiOauth":{{"accessToken":"sk-ant-oat01-{secret}","refreshToken":"{secret}","expiresAt":1700000000000}}}}"#
        ),
    )
    .unwrap();
    let codex = home.join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(
        codex.join("auth.json"),
        format!(r#"{{"OPENAI_API_KEY":"sk-{secret}","tokens":{{"access_token":"{secret}"}}}}"#),
    )
    .unwrap();
}

fn inspect(home: &Path, args: &[&str], env: &[(&str, &str)], path: Option<&str>) -> Output {
    let mut cmd = support::command(home);
    cmd.arg("inspect").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(path) = path {
        cmd.env("PATH", path);
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

fn drivers(out: &Output) -> Vec<Value> {
    let v: Value = serde_json::from_str(stdout(out).trim()).unwrap();
    v["drivers"].as_array().unwrap().clone()
}

fn by_name<'a>(drivers: &'a [Value], name: &str) -> &'a Value {
    drivers
        .iter()
        .find(|d| d["driver"] == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn every_driver_is_reported_and_no_secret_shows() {
    let home = tempfile::tempdir().unwrap();
    let secrets: Vec<String> = (0..=KEY_VARS.len()).map(|_| random_secret()).collect();
    fake_logins(home.path(), &secrets[KEY_VARS.len()]);
    let env: Vec<(&str, &str)> = KEY_VARS
        .iter()
        .zip(&secrets)
        .map(|(k, s)| (*k, s.as_str()))
        .collect();

    let json = inspect(home.path(), &["--json"], &env, None);
    assert_no_secret(&stdout(&json), &secrets);
    assert_no_secret(&stderr(&json), &secrets);
    let all = drivers(&json);
    let names: Vec<&str> = all.iter().map(|d| d["driver"].as_str().unwrap()).collect();
    assert_eq!(
        names[..5],
        ["claude", "codex", "gemini", "cursor", "codebuddy"]
    );
    for name in ["acp:gemini", "acp:qwen", "llm:openai", "llm:openrouter"] {
        assert!(names.contains(&name), "{name}");
    }
    let claude = by_name(&all, "claude");
    assert_eq!(claude["binary"]["found"], false);
    assert_eq!(claude["binary"]["version"]["status"], "unknown");
    assert_eq!(claude["auth"]["state"], "present");
    assert_eq!(claude["auth"]["source"], "$ANTHROPIC_API_KEY");
    assert_eq!(claude["quota"]["status"], "unavailable");
    let router = by_name(&all, "llm:openrouter");
    assert_eq!(router["binary"], Value::Null);
    assert_eq!(router["auth"]["source"], "$OPENROUTER_API_KEY");

    let table = inspect(home.path(), &[], &env, None);
    let text = stdout(&table);
    assert_no_secret(&text, &secrets);
    assert_no_secret(&stderr(&table), &secrets);
    assert!(
        text.starts_with("run would use: llm:anthropic (ANTHROPIC_API_KEY is set"),
        "{text}"
    );
    assert!(text.contains("\nDRIVER"), "{text}");
    assert!(text.contains("present ($ANTHROPIC_API_KEY)"), "{text}");

    // Without the variables, the login files decide: Claude's token has
    // expired, Codex's file holds a credential; still no secret.
    let out = inspect(home.path(), &["--json"], &[], None);
    assert_no_secret(&stdout(&out), &secrets);
    let all = drivers(&out);
    assert_eq!(by_name(&all, "claude")["auth"]["state"], "expired");
    assert_eq!(by_name(&all, "codex")["auth"]["state"], "present");
    assert_eq!(by_name(&all, "llm:openai")["auth"]["state"], "absent");
    let out = inspect(home.path(), &[], &[], None);
    assert_no_secret(&stdout(&out), &secrets);
    assert!(stdout(&out).contains("claude: auth present:"));
}

#[test]
fn one_driver_or_a_family_and_the_version_of_a_program_on_path() {
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("gemini");
    std::fs::write(&fake, "#!/bin/sh\necho 0.61.0\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let out = inspect(
        home.path(),
        &["--driver", "gemini", "--json"],
        &[("GEMINI_API_KEY", "x")],
        Some(&path),
    );
    let all = drivers(&out);
    assert_eq!(all.len(), 1);
    let gemini = &all[0];
    assert_eq!(gemini["binary"]["path"], fake.display().to_string());
    assert_eq!(gemini["binary"]["version"]["version"], "0.61.0");
    assert_eq!(gemini["auth"]["state"], "present");
    let version = gemini["health"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "version supported")
        .unwrap();
    assert_eq!(version["ok"], true);

    let out = inspect(home.path(), &["--driver", "llm", "--json"], &[], None);
    let names: Vec<Value> = drivers(&out).iter().map(|d| d["driver"].clone()).collect();
    assert_eq!(
        names,
        [
            "llm:openai",
            "llm:anthropic",
            "llm:gemini",
            "llm:openrouter"
        ]
    );
    let out = run(home.path(), &["inspect", "--driver", "llm:nope"]);
    assert_one_line_failure(&out, 2, "unknown driver \"llm:nope\"");
}

/// The pinned CLIs, on `PATH` under their program names.
#[cfg(feature = "real-clis")]
#[test]
fn the_pinned_clis_report_their_binary_version_and_auth() {
    use agent_adaptor_testkit::clis::{CLAUDE, CODEBUDDY, CODEX, COPILOT, GEMINI, OPENCODE, QWEN};

    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let pinned: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/clis/package.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let mut expected = Vec::new();
    for (driver, program, recipe) in [
        ("claude", "claude", CLAUDE),
        ("codex", "codex", CODEX),
        ("gemini", "gemini", GEMINI),
        ("codebuddy", "codebuddy", CODEBUDDY),
        ("acp:qwen", "qwen", QWEN),
        ("acp:copilot", "copilot", COPILOT),
        ("acp:opencode", "opencode", OPENCODE),
    ] {
        let binary = recipe.binary().unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&binary, bin.join(program)).unwrap();
        let package = pinned["dependencies"][recipe.npm_package]
            .as_str()
            .unwrap_or_else(|| panic!("{} is not pinned", recipe.npm_package))
            .to_owned();
        // CodeBuddy Code ships inside the pinned agent SDK, with its own
        // version in the SDK's `cli/package.json`.
        let version = if driver == "codebuddy" {
            assert_eq!(package, recipe.npm_version);
            let cli = binary.parent().unwrap().parent().unwrap();
            let manifest: Value =
                serde_json::from_str(&std::fs::read_to_string(cli.join("package.json")).unwrap())
                    .unwrap();
            manifest["version"].as_str().unwrap().to_owned()
        } else {
            package
        };
        expected.push((driver, bin.join(program), version));
    }
    let secrets: Vec<String> = KEY_VARS.iter().map(|_| random_secret()).collect();
    let env: Vec<(&str, &str)> = KEY_VARS
        .iter()
        .zip(&secrets)
        .map(|(k, s)| (*k, s.as_str()))
        .collect();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let out = inspect(home.path(), &["--json"], &env, Some(&path));
    assert_no_secret(&stdout(&out), &secrets);
    let all = drivers(&out);
    for (driver, program, version) in &expected {
        let d = by_name(&all, driver);
        assert_eq!(d["binary"]["found"], true, "{d}");
        assert_eq!(d["binary"]["path"], program.display().to_string(), "{d}");
        assert_eq!(d["binary"]["version"]["version"], version.as_str(), "{d}");
        let state = d["auth"]["state"].as_str().unwrap();
        assert!(
            ["present", "absent", "expired", "unknown"].contains(&state),
            "{d}"
        );
        let checks = d["health"].as_array().unwrap();
        let supported = checks
            .iter()
            .find(|c| c["name"] == "version supported")
            .unwrap();
        assert_eq!(supported["ok"], true, "{d}");
    }
    // The CLI drivers' keys are set: each has its credential.
    for driver in ["claude", "codex", "gemini", "codebuddy"] {
        assert_eq!(by_name(&all, driver)["auth"]["state"], "present");
    }
    // Cursor Agent is not pinned (not on npm): honestly not found.
    let cursor = by_name(&all, "cursor");
    assert_eq!(cursor["binary"]["found"], false);
    assert_eq!(cursor["binary"]["version"]["status"], "unknown");

    let table = inspect(home.path(), &[], &env, Some(&path));
    let text = stdout(&table);
    assert_no_secret(&text, &secrets);
    for (driver, _, version) in &expected {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(driver))
            .unwrap_or_else(|| panic!("no row {driver}:\n{text}"));
        assert!(line.contains(version.as_str()), "{line}");
    }
}

#[test]
fn a_fresh_machine_is_told_the_playground_runs_and_what_is_missing() {
    let home = tempfile::tempdir().unwrap();
    let out = inspect(home.path(), &[], &[], None);
    let text = stdout(&out);
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with(
            "run would use: playground (no driver is configured: set ANTHROPIC_API_KEY"
        ),
        "{text}"
    );
    assert!(first.contains("or install claude, codex"), "{first}");
    assert!(text.contains("not ready, missing:"), "{text}");
    assert!(
        text.contains("  claude: claude on PATH; credentials in $ANTHROPIC_API_KEY"),
        "{text}"
    );

    let out = inspect(home.path(), &["--json"], &[], None);
    let v: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["run_would_use"]["driver"], "playground");
    assert!(v["drivers"].as_array().is_some_and(|d| !d.is_empty()));
}
