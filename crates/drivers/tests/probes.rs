//! The built-in CLI drivers' probes (environment, model detection, quota,
//! config schema), each in a sandbox: the CLI's environment is an empty
//! policy plus bindings of `HOME` and `PATH` to temporary directories, so
//! nothing of the machine's real home or programs is read. The conformance
//! suite judges the probe clauses on each; the probes find what the
//! sandbox holds, read no secret value, and write nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::collections::BTreeMap;
use std::path::Path;

use agent_adaptor_conformance::{Options, test_driver};
use agent_adaptor_driver::{CheckStatus, Driver, ModelSource, Profile, ProfileSource};
use agent_adaptor_drivers::child_env::{EnvPolicy, EnvVars};
use agent_adaptor_drivers::{claude, codebuddy, codex, cursor, gemini};

/// A value that must never appear in a report.
const SECRET: &str = "sk-probe-secret-value";

/// What a sandbox of one CLI holds.
struct Case {
    /// The program name the driver looks up.
    program: &'static str,
    /// The native profile home, relative to HOME.
    home: &'static str,
    /// The settings file (relative to HOME) and its content, naming `m-file`.
    settings: (&'static str, &'static str),
    /// A credentials file (relative to HOME), when the CLI has one.
    credentials: Option<&'static str>,
    /// The credential variable.
    key_var: &'static str,
    /// The model variable, when the CLI reads one.
    model_var: Option<&'static str>,
}

const CLAUDE: Case = Case {
    program: "claude",
    home: ".claude",
    settings: (".claude/settings.json", r#"{"model":"m-file"}"#),
    credentials: Some(".claude/.credentials.json"),
    key_var: "ANTHROPIC_API_KEY",
    model_var: Some("ANTHROPIC_MODEL"),
};
const CODEBUDDY: Case = Case {
    program: "codebuddy",
    home: ".codebuddy",
    settings: (".codebuddy/settings.json", r#"{"model":"m-file"}"#),
    credentials: Some(".codebuddy/.credentials.json"),
    key_var: "CODEBUDDY_API_KEY",
    model_var: Some("CODEBUDDY_MODEL"),
};
const CODEX: Case = Case {
    program: "codex",
    home: ".codex",
    settings: (
        ".codex/config.toml",
        "model = \"m-file\"\n[profiles.x]\nmodel = \"other\"\n",
    ),
    credentials: Some(".codex/auth.json"),
    key_var: "OPENAI_API_KEY",
    model_var: None,
};
const GEMINI: Case = Case {
    program: "gemini",
    home: "",
    settings: (".gemini/settings.json", r#"{"model":{"name":"m-file"}}"#),
    credentials: Some(".gemini/oauth_creds.json"),
    key_var: "GEMINI_API_KEY",
    model_var: Some("GEMINI_MODEL"),
};
const CURSOR: Case = Case {
    program: "agent",
    home: ".cursor",
    settings: (".cursor/cli-config.json", r#"{"model":"m-file"}"#),
    credentials: None,
    key_var: "CURSOR_API_KEY",
    model_var: None,
};

/// An empty home and an empty `PATH` directory.
struct Sandbox {
    home: tempfile::TempDir,
    bin: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        Sandbox {
            home: tempfile::tempdir().unwrap(),
            bin: tempfile::tempdir().unwrap(),
        }
    }

    /// `HOME` and `PATH` bound to the sandbox, plus `extra`.
    fn env(&self, extra: &[(&str, &str)]) -> EnvVars {
        let mut env: EnvVars = [
            ("HOME", self.home.path().display().to_string()),
            ("PATH", self.bin.path().display().to_string()),
        ]
        .into_iter()
        .collect();
        env.extend(extra.iter().map(|(k, v)| (*k, *v)));
        env
    }

    fn write(&self, rel: &str, body: &str) {
        let path = self.home.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }

    /// An executable `program` on the sandbox's PATH that leaves
    /// [`Sandbox::ran`] behind if it is ever run.
    fn install(&self, program: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.bin.path().join(program);
        let script = format!("#!/bin/sh\n: > '{}'\nexit 97\n", self.ran().display());
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The marker an installed program leaves when run.
    fn ran(&self) -> std::path::PathBuf {
        self.bin.path().join("ran")
    }
}

/// Every file under `dir`, with its content.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                out.insert(p.display().to_string(), Vec::new());
                stack.push(p);
            } else {
                out.insert(p.display().to_string(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Judge one CLI's probes. `make(env, model)` builds its driver with the
/// command left at its default, an empty environment policy, `env` bound
/// and `model` configured.
async fn check<D: Driver>(case: &Case, make: impl Fn(EnvVars, Option<String>) -> D) {
    let name = case.program;
    // An empty sandbox: the CLI is not found, its home does not exist, no
    // credentials; the suite's clauses hold and are judged.
    let sandbox = Sandbox::new();
    let env = sandbox.env(&[]);
    let report = test_driver(|| make(env.clone(), None), Options::new()).await;
    report.assert_passed();
    for id in ["CAP-02", "CAP-03", "CAP-06", "CAP-07", "CAP-08", "SES-09"] {
        assert!(report.passed(id), "{name}: {id} not judged:\n{report}");
    }
    let d = make(env.clone(), None);
    if d.descriptor().skills {
        assert!(
            report.passed("CAP-09"),
            "{name}: CAP-09 not judged:\n{report}"
        );
    }
    let r = d.check_environment().unwrap();
    let level = |code: &str| r.checks.iter().find(|c| c.code == code).map(|c| c.level);
    assert_eq!(level("binary"), Some(CheckStatus::Fail), "{name}: {r:?}");
    assert_eq!(
        level("config_home"),
        Some(CheckStatus::Warn),
        "{name}: {r:?}"
    );
    assert_eq!(level("auth"), Some(CheckStatus::Warn), "{name}: {r:?}");
    assert!(!r.healthy, "{name}: {r:?}");
    assert_eq!(d.detect_model(), None, "{name}");
    // The native home is the CLI's default under HOME; a dedicated one is
    // `<root>/<driver type>` exactly when declared; skills are reported
    // exactly when declared. Nothing is created.
    let r = d.profile_report(&Profile::Native).unwrap();
    let home = sandbox.home.path().join(case.home);
    assert_eq!(
        (r.supported, r.dir.as_deref(), r.source),
        (true, Some(home.as_path()), ProfileSource::Default),
        "{name}"
    );
    let descriptor = d.descriptor();
    let root = sandbox.home.path().join("profiles");
    let r = d
        .profile_report(&Profile::Dedicated { root: root.clone() })
        .unwrap();
    assert_eq!(r.supported, descriptor.profiles.dedicated, "{name}");
    if r.supported {
        assert_eq!(r.dir, Some(root.join(&descriptor.driver_type)), "{name}");
    }
    assert!(!root.exists(), "{name} created the profile root");
    assert_eq!(d.skills(&[]).is_some(), descriptor.skills, "{name}");
    assert!(!d.quota().unwrap().available, "{name}");

    // A configured model is detected as such (CAP-05 with its opt-in).
    let report = test_driver(
        || make(env.clone(), Some("m-conf".into())),
        Options::new().expected_model("m-conf"),
    )
    .await;
    assert!(report.passed("CAP-05"), "{name}:\n{report}");

    // The CLI installed, logged in, a model in its settings: found where
    // the CLI keeps them, and nothing is written.
    sandbox.install(case.program);
    sandbox.write(case.settings.0, case.settings.1);
    if let Some(creds) = case.credentials {
        sandbox.write(creds, SECRET);
    }
    let before = snapshot(sandbox.home.path());
    let d = make(env.clone(), None);
    let r = d.check_environment().unwrap();
    let m = d.detect_model().unwrap();
    assert_eq!(before, snapshot(sandbox.home.path()), "{name} wrote");
    assert!(!sandbox.ran().exists(), "{name} ran its program");
    let expected_status = if case.credentials.is_some() {
        CheckStatus::Pass
    } else {
        CheckStatus::Warn
    };
    assert_eq!(
        (r.status, r.healthy),
        (expected_status, true),
        "{name}: {r:?}"
    );
    assert_eq!(m.model, "m-file", "{name}");
    let settings = sandbox.home.path().join(case.settings.0);
    assert_eq!(
        m.source,
        ModelSource::ConfigFile { path: settings },
        "{name}"
    );
    let report = test_driver(
        || make(env.clone(), None),
        Options::new().expected_model("m-file"),
    )
    .await;
    report.assert_passed();
    assert!(report.passed("CAP-05"), "{name}:\n{report}");

    // The model variable wins over the settings; a key variable counts as
    // credentials; neither value is shown.
    let mut extra = vec![(case.key_var, SECRET)];
    if let Some(var) = case.model_var {
        extra.push((var, "m-env"));
    }
    let d = make(sandbox.env(&extra), None);
    let r = d.check_environment().unwrap();
    assert_eq!(
        (r.status, r.healthy),
        (CheckStatus::Pass, true),
        "{name}: {r:?}"
    );
    let shown = format!("{r:?} {:?}", serde_json::to_string(&r).unwrap());
    assert!(!shown.contains(SECRET), "{name} showed a secret: {shown}");
    assert!(shown.contains(case.key_var), "{name}: {shown}");
    if let Some(var) = case.model_var {
        let m = d.detect_model().unwrap();
        assert_eq!(
            (m.model.as_str(), m.source),
            ("m-env", ModelSource::Environment { var: var.into() }),
            "{name}"
        );
    }
}

fn only() -> EnvPolicy {
    EnvPolicy::only(Vec::<String>::new())
}

#[tokio::test]
async fn claude_probes() {
    check(&CLAUDE, |env, model| {
        let mut c = claude::config();
        (c.env, c.env_policy, c.model) = (env, only(), model);
        claude::driver(c)
    })
    .await;
}

#[tokio::test]
async fn codebuddy_probes() {
    check(&CODEBUDDY, |env, model| {
        let mut c = codebuddy::config();
        (c.env, c.env_policy, c.model) = (env, only(), model);
        codebuddy::driver(c)
    })
    .await;
}

#[tokio::test]
async fn codex_probes() {
    check(&CODEX, |env, model| {
        codex::driver(codex::Config {
            env,
            env_policy: only(),
            model,
            ..Default::default()
        })
    })
    .await;
    // A `-c model=…` override is the configured model too.
    let d = codex::driver(codex::Config {
        overrides: [("model".to_owned(), "m-override".to_owned())].into(),
        env_policy: only(),
        ..Default::default()
    });
    let m = d.detect_model().unwrap();
    assert_eq!(
        (m.model.as_str(), m.source),
        ("m-override", ModelSource::Configured)
    );
}

#[tokio::test]
async fn gemini_probes() {
    check(&GEMINI, |env, model| {
        gemini::driver(gemini::Config {
            env,
            env_policy: only(),
            model,
            ..Default::default()
        })
    })
    .await;
}

#[tokio::test]
async fn cursor_probes() {
    check(&CURSOR, |env, model| {
        cursor::driver(cursor::Config {
            env,
            env_policy: only(),
            model,
            ..Default::default()
        })
    })
    .await;
}

#[tokio::test]
async fn the_home_variable_moves_the_configuration() {
    // CLAUDE_CONFIG_DIR, not HOME/.claude, holds the settings.
    let sandbox = Sandbox::new();
    sandbox.write("elsewhere/settings.json", r#"{"model":"m-moved"}"#);
    sandbox.write(".claude/settings.json", r#"{"model":"m-default"}"#);
    let dir = sandbox.home.path().join("elsewhere").display().to_string();
    let mut c = claude::config();
    (c.env, c.env_policy) = (sandbox.env(&[("CLAUDE_CONFIG_DIR", &dir)]), only());
    let d = claude::driver(c);
    assert_eq!(d.detect_model().unwrap().model, "m-moved");
    let r = d.profile_report(&Profile::Native).unwrap();
    assert_eq!(
        (r.dir.unwrap().display().to_string(), r.source),
        (dir.clone(), ProfileSource::ProcessEnv)
    );
    // Gemini's variable names the parent of `.gemini`.
    sandbox.write("g/.gemini/settings.json", r#"{"model":{"name":"m-g"}}"#);
    let g = sandbox.home.path().join("g").display().to_string();
    let d = gemini::driver(gemini::Config {
        env: sandbox.env(&[("GEMINI_CLI_HOME", &g)]),
        env_policy: only(),
        ..Default::default()
    });
    assert_eq!(d.detect_model().unwrap().model, "m-g");
}
