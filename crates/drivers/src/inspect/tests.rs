//! Inspection over fake homes and fake programs: credentials present,
//! absent, expired, unreadable; models from settings and variables; the
//! version a program prints, or why none; no secret in any report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::version::{compare, parse};
use super::*;

/// A secret no report may contain.
const SECRET: &str = "sk-test-Zq8XvW3kPp0rNn4TtYy";

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write `text` to `rel` under the home (parents created).
    fn file(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// An executable script `bin/<name>` running `body` under /bin/sh.
    fn program(&self, name: &str, body: &str) -> PathBuf {
        let path = self.file(&format!("bin/{name}"), &format!("#!/bin/sh\n{body}\n"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// The host's variables: `HOME` here, `PATH` its `bin` only, plus `vars`.
    fn env(&self, vars: &[(&str, &str)]) -> HostEnv {
        let mut env = HostEnv::new();
        env.insert("HOME".into(), self.path().into());
        env.insert("PATH".into(), self.path().join("bin").into());
        for (k, v) in vars {
            env.insert((*k).into(), (*v).into());
        }
        env
    }
}

async fn inspect(name: &str, env: HostEnv) -> DriverReport {
    Inspector::named(name)
        .unwrap()
        .with_host_env(env)
        .with_version_timeout(Duration::from_secs(20))
        .report()
        .await
}

fn check<'r>(report: &'r DriverReport, name: &str) -> &'r HealthCheck {
    report
        .health
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name:?} in {:?}", report.health))
}

fn assert_no_secret(report: &DriverReport) {
    let json = serde_json::to_string(report).unwrap();
    assert!(!json.contains(SECRET), "{json}");
    assert!(!json.contains(&SECRET[..10]), "{json}");
    assert!(!format!("{report:?}").contains(SECRET));
}

fn future_ms() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    (now + Duration::from_secs(3 * 3600)).as_millis() as u64
}

#[tokio::test]
async fn an_empty_home_has_no_binary_no_credentials_and_says_why() {
    let home = Home::new();
    let r = inspect("claude", home.env(&[])).await;
    assert_eq!(r.kind, DriverKind::Cli);
    let binary = r.binary.as_ref().unwrap();
    assert!(!binary.found);
    assert!(
        binary
            .reason
            .as_deref()
            .unwrap()
            .contains("not on the CLI's PATH")
    );
    assert!(matches!(binary.version, VersionReport::Unknown { .. }));
    assert_eq!(r.auth.state, AuthState::Absent);
    assert!(r.auth.looked.contains(&"$ANTHROPIC_API_KEY".to_owned()));
    let config = &r.directories[0];
    assert_eq!(
        (
            config.role,
            config.path.clone(),
            config.exists,
            config.from_env
        ),
        (DirRole::Config, home.path().join(".claude"), false, false)
    );
    assert_eq!(r.directories[1].role, DirRole::Data);
    assert!(r.models.models.is_empty());
    assert!(matches!(r.models.source, ModelsSource::None { .. }));
    assert!(matches!(r.quota, QuotaStatus::Unavailable { .. }));
    for name in ["binary on PATH", "auth present", "config directory"] {
        let c = check(&r, name);
        assert!(!c.ok && c.hint.is_some(), "{c:?}");
    }
    // No binary, no version: the binary check carries the hint.
    let c = check(&r, "version supported");
    assert_eq!(
        (c.ok, c.reason.as_str(), &c.hint),
        (false, "no binary to ask", &None)
    );
    assert!(!r.healthy());
}

#[tokio::test]
async fn a_live_oauth_file_is_present_and_its_token_never_shows() {
    let home = Home::new();
    home.file(
        ".claude/.credentials.json",
        &format!(
            r#"{{"claudeAiOauth":{{"accessToken":"{SECRET}","refreshToken":"{SECRET}","expiresAt":{}}}}}"#,
            future_ms()
        ),
    );
    home.file(".claude/settings.json", r#"{"model":"opus-test"}"#);
    let r = inspect("claude", home.env(&[])).await;
    assert_eq!(r.auth.state, AuthState::Present, "{:?}", r.auth);
    assert!(r.auth.reason.contains("expires in 2 h") || r.auth.reason.contains("expires in 3 h"));
    assert_eq!(r.models.models, ["opus-test"]);
    assert_eq!(
        r.models.source,
        ModelsSource::ConfigFile {
            path: home.path().join(".claude/settings.json")
        }
    );
    assert!(check(&r, "auth present").ok);
    assert!(check(&r, "config directory").ok);
    assert_no_secret(&r);
}

#[tokio::test]
async fn an_expired_token_is_expired_and_fails_its_check() {
    let home = Home::new();
    home.file(
        ".claude/.credentials.json",
        &format!(
            r#"{{"claudeAiOauth":{{"accessToken":"{SECRET}","refreshToken":"{SECRET}","expiresAt":1700000000000}}}}"#
        ),
    );
    let r = inspect("claude", home.env(&[])).await;
    assert_eq!(r.auth.state, AuthState::Expired);
    assert!(r.auth.reason.contains("refresh token"), "{}", r.auth.reason);
    let c = check(&r, "auth present");
    assert!(!c.ok && c.hint.as_deref().unwrap().contains("log in"));
    assert_no_secret(&r);

    // Gemini's OAuth file: `expiry_date` in milliseconds, no refresh token.
    home.file(
        ".gemini/oauth_creds.json",
        &format!(r#"{{"access_token":"{SECRET}","expiry_date":1700000000000}}"#),
    );
    let r = inspect("gemini", home.env(&[])).await;
    assert_eq!(r.auth.state, AuthState::Expired);
    assert!(!r.auth.reason.contains("refresh"));
    assert_no_secret(&r);
}

#[tokio::test]
async fn a_key_variable_is_present_by_name_only() {
    let home = Home::new();
    home.file(".claude/settings.json", r#"{"model":"from-settings"}"#);
    let r = inspect(
        "claude",
        home.env(&[
            ("ANTHROPIC_API_KEY", SECRET),
            ("ANTHROPIC_MODEL", "from-env"),
        ]),
    )
    .await;
    assert_eq!(r.auth.state, AuthState::Present);
    assert_eq!(r.auth.source.as_deref(), Some("$ANTHROPIC_API_KEY"));
    // The model variable wins over the settings, as in the CLI.
    assert_eq!(r.models.models, ["from-env"]);
    assert_eq!(
        r.models.source,
        ModelsSource::Environment {
            var: "ANTHROPIC_MODEL".into()
        }
    );
    assert_no_secret(&r);
    // An empty variable is no credential.
    let r = inspect("claude", home.env(&[("ANTHROPIC_API_KEY", "")])).await;
    assert_eq!(r.auth.state, AuthState::Absent);
}

#[tokio::test]
async fn codex_reads_its_moved_home_model_and_login() {
    let home = Home::new();
    let codex = home.path().join("elsewhere");
    home.file("elsewhere/config.toml", "model = \"gpt-test\"\n[x]\n");
    home.file(
        "elsewhere/auth.json",
        &format!(r#"{{"OPENAI_API_KEY":null,"tokens":{{"access_token":"{SECRET}"}}}}"#),
    );
    let env = home.env(&[("CODEX_HOME", codex.to_str().unwrap())]);
    let r = inspect("codex", env.clone()).await;
    assert_eq!(r.auth.state, AuthState::Present, "{:?}", r.auth);
    assert_eq!(
        r.auth.source,
        Some(codex.join("auth.json").display().to_string())
    );
    assert_eq!(r.models.models, ["gpt-test"]);
    let config = &r.directories[0];
    assert_eq!(
        (&config.path, config.from_env, config.env_var.as_deref()),
        (&codex, true, Some("CODEX_HOME"))
    );
    assert_eq!(r.directories[1].path, codex.join("sessions"));
    assert!(!r.directories[1].exists);
    assert_no_secret(&r);

    // A logged-out auth.json holds no credential.
    home.file("elsewhere/auth.json", r#"{"OPENAI_API_KEY":null}"#);
    assert_eq!(
        inspect("codex", env.clone()).await.auth.state,
        AuthState::Absent
    );
    // A file that is not JSON cannot be judged.
    home.file("elsewhere/auth.json", "not json");
    let r = inspect("codex", env).await;
    assert_eq!(r.auth.state, AuthState::Unknown);
    assert!(r.auth.reason.contains("not JSON"));
}

#[tokio::test]
async fn cursor_without_a_key_is_unknown_not_absent() {
    let home = Home::new();
    let r = inspect("cursor", home.env(&[])).await;
    assert_eq!(r.auth.state, AuthState::Unknown);
    assert_eq!(r.binary.unwrap().looked_for, ["agent", "cursor-agent"]);
}

#[tokio::test]
async fn the_version_comes_from_the_program_run_with_the_allowlisted_environment() {
    let home = Home::new();
    // Prints its version only when a variable outside the allowlist did not
    // reach it.
    home.program(
        "gemini",
        r#"[ -z "$NOT_ALLOWED" ] && [ "$1" = --version ] && echo "gemini v9.10.11 (build 7)""#,
    );
    let r = inspect("gemini", home.env(&[("NOT_ALLOWED", "x")])).await;
    let binary = r.binary.as_ref().unwrap();
    assert!(binary.found);
    assert_eq!(
        binary.path.as_deref(),
        Some(&*home.path().join("bin/gemini"))
    );
    assert_eq!(binary.version.version(), Some("9.10.11"));
    let c = check(&r, "version supported");
    assert!(c.ok && c.reason.contains("verified: 0.61.0"), "{c:?}");

    home.program("gemini", "echo 0.1.0");
    let r = inspect("gemini", home.env(&[])).await;
    let c = check(&r, "version supported");
    assert!(!c.ok, "{c:?}");
    assert_eq!(c.hint.as_deref(), Some("upgrade to 0.61.0 or later"));
}

#[tokio::test]
async fn a_program_without_a_version_is_unknown_with_the_reason() {
    let home = Home::new();
    home.program("codex", &format!("echo {SECRET}; exit 3"));
    let r = inspect("codex", home.env(&[])).await;
    assert_eq!(
        r.binary.as_ref().unwrap().version,
        VersionReport::Unknown {
            reason: "`--version` exited with code 3".into()
        }
    );
    assert_no_secret(&r);

    home.program("codex", &format!("echo {SECRET}"));
    let r = inspect("codex", home.env(&[])).await;
    assert_eq!(
        r.binary.as_ref().unwrap().version,
        VersionReport::Unknown {
            reason: "`--version` printed no version".into()
        }
    );
    assert!(!check(&r, "version supported").ok);
    assert_no_secret(&r);

    home.program("codex", "exec /bin/sleep 30");
    let r = Inspector::named("codex")
        .unwrap()
        .with_host_env(home.env(&[]))
        .with_version_timeout(Duration::from_millis(300))
        .report()
        .await;
    let VersionReport::Unknown { reason } = &r.binary.as_ref().unwrap().version else {
        panic!("{r:?}");
    };
    assert!(reason.contains("no answer within 300ms"), "{reason}");
}

#[tokio::test]
async fn an_acp_agent_without_facts_reads_its_key_and_model_variables() {
    let home = Home::new();
    let r = inspect(
        "acp:qwen",
        home.env(&[("OPENAI_API_KEY", SECRET), ("OPENAI_MODEL", "qwen-test")]),
    )
    .await;
    assert_eq!(r.kind, DriverKind::Acp);
    assert_eq!(r.auth.state, AuthState::Present);
    assert_eq!(r.models.models, ["qwen-test"]);
    assert!(r.directories.is_empty());
    assert!(check(&r, "config directory").ok);
    assert_no_secret(&r);
    let r = inspect("acp:opencode", home.env(&[])).await;
    assert_eq!(r.auth.state, AuthState::Unknown);
    // An ACP agent wrapping a CLI shares its home.
    let r = inspect("acp:claude", home.env(&[])).await;
    assert_eq!(r.directories[0].path, home.path().join(".claude"));
}

#[tokio::test]
async fn an_llm_provider_reports_its_key_variable_only() {
    let home = Home::new();
    let env = home.env(&[("OPENROUTER_API_KEY", SECRET)]);
    let r = inspect("llm:openrouter", env.clone()).await;
    assert_eq!(r.kind, DriverKind::Llm);
    assert!(r.binary.is_none());
    assert_eq!(r.auth.state, AuthState::Present);
    assert!(r.healthy());
    assert_no_secret(&r);
    let r = inspect("llm:openai", env).await;
    assert_eq!(r.auth.state, AuthState::Absent);
    assert_eq!(
        check(&r, "API key set").hint.as_deref(),
        Some("set $OPENAI_API_KEY")
    );
}

#[tokio::test]
async fn every_driver_is_reported_in_order_in_parallel() {
    let home = Home::new();
    let inspectors: Vec<Inspector> = Inspector::all()
        .into_iter()
        .map(|i| i.with_host_env(home.env(&[])))
        .collect();
    let reports = report_each(&inspectors).await.unwrap();
    let names: Vec<&str> = reports.iter().map(|r| r.driver.as_str()).collect();
    assert_eq!(names, Inspector::names());
    for expected in [
        "claude",
        "codex",
        "gemini",
        "cursor",
        "codebuddy",
        "acp:qwen",
        "acp:copilot",
        "llm:openai",
        "llm:anthropic",
        "llm:gemini",
        "llm:openrouter",
    ] {
        assert!(names.contains(&expected), "{expected}");
    }
}

#[test]
fn names_and_families_resolve_and_an_unknown_name_is_a_typed_error() {
    assert_eq!(Inspector::matching("llm").unwrap().len(), 4);
    assert_eq!(
        Inspector::matching("acp").unwrap().len(),
        crate::acp::AcpAgent::NAMED.len()
    );
    assert_eq!(Inspector::matching("codex").unwrap()[0].driver(), "codex");
    let err = Inspector::matching("nope").unwrap_err();
    assert!(matches!(&err, InspectError::UnknownDriver { name, .. } if name == "nope"));
    assert!(err.to_string().contains("llm:openrouter"), "{err}");
}

#[test]
fn versions_are_read_from_what_the_clis_print() {
    for (text, want) in [
        ("2.1.332 (Claude Code)", Some("2.1.332")),
        ("codex-cli 0.171.0", Some("0.171.0")),
        (
            "GitHub Copilot CLI 1.0.102.\nRun 'copilot update'",
            Some("1.0.102"),
        ),
        ("v0.61.0", Some("0.61.0")),
        ("tool 1.2", Some("1.2")),
        ("tool 1.2.3-beta.1", Some("1.2.3-beta.1")),
        ("no version here 1. 2.x", None),
        ("", None),
    ] {
        assert_eq!(parse(text).as_deref(), want, "{text:?}");
    }
    use std::cmp::Ordering::*;
    assert_eq!(compare("2.1.332", "2.1.40"), Some(Greater));
    assert_eq!(compare("0.61.0", "0.61.0"), Some(Equal));
    assert_eq!(compare("1.2", "1.2.1"), Some(Less));
    assert_eq!(compare("x", "1.0.0"), None);
}

#[tokio::test]
async fn a_program_two_drivers_start_is_asked_once_per_inspection() {
    let home = Home::new();
    home.program("gemini", r#"echo x >> "$HOME/asked"; echo 0.61.0"#);
    let inspectors: Vec<Inspector> = ["gemini", "acp:gemini"]
        .into_iter()
        .map(|n| Inspector::named(n).unwrap().with_host_env(home.env(&[])))
        .collect();
    let reports = report_each(&inspectors).await.unwrap();
    for r in &reports {
        assert_eq!(r.binary.as_ref().unwrap().version.version(), Some("0.61.0"));
    }
    let asked = std::fs::read_to_string(home.path().join("asked")).unwrap();
    assert_eq!(asked.lines().count(), 1);
    // A lone report asks again.
    inspectors[0].report().await;
    let asked = std::fs::read_to_string(home.path().join("asked")).unwrap();
    assert_eq!(asked.lines().count(), 2);
}
