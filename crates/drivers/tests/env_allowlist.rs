//! Every driver family gives its CLI an allowlisted environment, never the
//! host's whole one: a stand-in CLI records the environment it was started
//! with, and every name in it must be allowed by the policy (or bound by the
//! configuration).
//!
//! The test process's own environment is the "host": cargo and nextest put
//! variables such as `CARGO_MANIFEST_DIR` there, which no allowlist names.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_adaptor_core::{Agent, Runner};
use agent_adaptor_driver::Driver;
use agent_adaptor_drivers::child_env::{EnvPolicy, EnvVars};
use agent_adaptor_drivers::{claude, codebuddy, codex, cursor, gemini, streamjson};
use agent_adaptor_process::PROCESS_MARK_ENV;

/// A host variable that is set under `cargo test` and `cargo nextest` and
/// that no allowlist names.
const HOST_ONLY: &str = "CARGO_MANIFEST_DIR";

/// A stand-in CLI that writes the environment it was started with (as the
/// kernel handed it over, before the shell adds anything) to `out`, then
/// exits 1.
fn stand_in(dir: &Path, out: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("cli");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat /proc/$$/environ > '{}'\nexit 1\n",
            out.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// What the stand-in recorded: name → value.
fn recorded(out: &Path) -> BTreeMap<String, String> {
    let bytes = std::fs::read(out).expect("the stand-in CLI ran");
    bytes
        .split(|b| *b == 0)
        .filter(|kv| !kv.is_empty())
        .filter_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            kv.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
        })
        .collect()
}

/// The driver families, each built with `command`, `policy` and `bindings`,
/// with the allowlist its CLI documents.
fn drivers(
    command: &Path,
    policy: &EnvPolicy,
    bindings: &EnvVars,
) -> Vec<(&'static str, &'static [&'static str], Box<dyn Driver>)> {
    let stream_json = |mut cfg: streamjson::Config| {
        cfg.command = command.to_owned();
        cfg.env = bindings.clone();
        cfg.env_policy = policy.clone();
        cfg
    };
    vec![
        (
            "claude",
            streamjson::CLAUDE.env_allowlist,
            Box::new(claude::driver(stream_json(claude::config()))),
        ),
        (
            "codebuddy",
            streamjson::CODEBUDDY.env_allowlist,
            Box::new(codebuddy::driver(stream_json(codebuddy::config()))),
        ),
        (
            "codex",
            codex::ENV_ALLOWLIST,
            Box::new(codex::driver(codex::Config {
                command: command.to_owned(),
                env: bindings.clone(),
                env_policy: policy.clone(),
                ..Default::default()
            })),
        ),
        (
            "cursor",
            cursor::ENV_ALLOWLIST,
            Box::new(cursor::driver(cursor::Config {
                command: command.to_owned(),
                env: bindings.clone(),
                env_policy: policy.clone(),
                ..Default::default()
            })),
        ),
        (
            "gemini",
            gemini::ENV_ALLOWLIST,
            Box::new(gemini::driver(gemini::Config {
                command: command.to_owned(),
                env: bindings.clone(),
                env_policy: policy.clone(),
                ..Default::default()
            })),
        ),
    ]
}

/// Run every driver family once under `policy` and hand each recorded
/// environment to `check`.
async fn each_family(policy: EnvPolicy, check: impl Fn(&str, &[&str], &BTreeMap<String, String>)) {
    assert!(
        std::env::var_os(HOST_ONLY).is_some(),
        "the test runner sets {HOST_ONLY}"
    );
    let bindings: EnvVars = [("AA_BOUND", "bound-value")].into_iter().collect();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("env");
    let script = stand_in(dir.path(), &out);
    for (name, allowlist, driver) in drivers(&script, &policy, &bindings) {
        let _ = std::fs::remove_file(&out);
        let agent = Agent::builder_shared(driver.into()).build().unwrap();
        // The stand-in fails the run; only its environment matters.
        let _ = tokio::time::timeout(Duration::from_secs(30), agent.run("hi"))
            .await
            .expect("the run ends");
        check(name, allowlist, &recorded(&out));
    }
}

#[tokio::test]
async fn the_default_passes_only_allowlisted_host_variables() {
    each_family(EnvPolicy::default(), |name, allowlist, env| {
        let policy = EnvPolicy::default();
        let outside: Vec<&String> = env
            .keys()
            .filter(|k| *k != "AA_BOUND" && *k != PROCESS_MARK_ENV)
            .filter(|k| !policy.allows(allowlist, k))
            .collect();
        assert!(outside.is_empty(), "{name}: not allowlisted: {outside:?}");
        assert!(!env.contains_key(HOST_ONLY), "{name}");
        assert_eq!(env.get("AA_BOUND").map(String::as_str), Some("bound-value"));
        if std::env::var_os("PATH").is_some() {
            assert!(env.contains_key("PATH"), "{name}: PATH is passed");
        }
    })
    .await;
}

#[tokio::test]
async fn named_variables_pass_and_inherit_all_passes_everything() {
    each_family(EnvPolicy::passing([HOST_ONLY]), |name, _, env| {
        assert!(
            env.contains_key(HOST_ONLY),
            "{name}: a named variable passes"
        );
    })
    .await;
    each_family(EnvPolicy::InheritAll, |name, _, env| {
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy();
            assert!(env.contains_key(k.as_ref()), "{name}: {k} inherited");
        }
        assert_eq!(env.get("AA_BOUND").map(String::as_str), Some("bound-value"));
    })
    .await;
    each_family(EnvPolicy::only(["PATH"]), |name, _, env| {
        let names: Vec<&str> = env
            .keys()
            .map(String::as_str)
            .filter(|k| !k.starts_with("CLAUDE_") && !k.starts_with("CODEBUDDY_"))
            .filter(|k| *k != "DISABLE_AUTOUPDATER" && *k != PROCESS_MARK_ENV)
            .collect();
        let mut expected = vec!["AA_BOUND"];
        if std::env::var_os("PATH").is_some() {
            expected.push("PATH");
        }
        assert_eq!(
            names, expected,
            "{name}: the host's PATH and the bindings only"
        );
    })
    .await;
}

#[test]
fn no_configuration_shows_a_bound_value() {
    let bindings: EnvVars = [("API_KEY", "sk-very-secret")].into_iter().collect();
    let mut claude = claude::config();
    claude.env = bindings.clone();
    let shown = [
        format!("{claude:?}"),
        format!(
            "{:?}",
            codex::Config {
                env: bindings.clone(),
                ..Default::default()
            }
        ),
        format!(
            "{:?}",
            cursor::Config {
                env: bindings.clone(),
                ..Default::default()
            }
        ),
        format!(
            "{:?}",
            gemini::Config {
                env: bindings,
                ..Default::default()
            }
        ),
    ];
    for text in shown {
        assert!(text.contains("API_KEY"), "{text}");
        assert!(!text.contains("sk-very-secret"), "{text}");
    }
}
