//! The probes every CLI driver shares (environment, model detection, quota,
//! config schema), over each CLI's facts as data ([`CliFacts`]).
//!
//! Hermetic by construction: the probes compute the environment the CLI
//! child *would* get (the driver's [`EnvPolicy`] over this process's
//! variables, then the SDK defaults and the configuration's bindings, as a
//! spawn does), look the program up on that `PATH` without executing it,
//! and read the CLI's settings file. No process, no network, no write.
//! Credentials are reported by the name of the variable or file that holds
//! them; a value is never read (a credentials file is only tested for
//! existence) nor shown.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use agent_adaptor_driver::{
    ConfigField, Descriptor, DetectedModel, EnvironmentCheck, EnvironmentReport, FieldKind,
    ModelSource, Profile, ProfileReport, ProfileSource, QuotaReport, SkillEntry, SkillMode,
    SkillRef, SkillsReport,
};
use agent_adaptor_process::Command;

use crate::child_env::{EnvPolicy, EnvVars};

/// How a CLI's settings file names the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModelKey {
    /// A JSON file; the first of these paths (object keys) that holds a
    /// non-empty string.
    #[cfg_attr(
        not(any(
            feature = "claude",
            feature = "codebuddy",
            feature = "cursor",
            feature = "gemini"
        )),
        allow(dead_code)
    )]
    Json(&'static [&'static [&'static str]]),
    /// A TOML file's top-level string key (Codex; unused in a build
    /// without it).
    #[cfg_attr(not(feature = "codex"), allow(dead_code))]
    TomlTop(&'static str),
}

/// Where a CLI keeps its configuration, how it finds its model and its
/// credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CliFacts {
    /// The driver type.
    pub driver_type: &'static str,
    /// Who serves the models (`anthropic`, `openai` …).
    pub provider: &'static str,
    /// The variable that moves the CLI's profile home.
    pub home_var: &'static str,
    /// Where the home is when the variable is unset: candidates relative to
    /// `HOME` (or to an `XDG_*` variable, `("XDG_CONFIG_HOME", "cursor")`),
    /// the first whose base variable is set.
    pub home_default: &'static [(&'static str, &'static str)],
    /// The configuration directory, relative to the home (`""`: the home
    /// itself; Gemini's home variable names the parent of `.gemini`).
    pub config_subdir: &'static str,
    /// The settings file, relative to the configuration directory.
    pub settings: &'static str,
    /// How the settings name the model.
    pub model_key: ModelKey,
    /// A variable the CLI reads the model from, before its settings.
    pub model_env: Option<&'static str>,
    /// Variables that carry credentials (only their presence is checked).
    pub auth_env: &'static [&'static str],
    /// Credential files, relative to the configuration directory (only
    /// their existence is checked).
    pub auth_files: &'static [&'static str],
    /// How a user logs in, for the hint.
    pub login_hint: &'static str,
    /// Why the quota is not known to a hermetic probe.
    pub quota_reason: &'static str,
    /// How the driver gives skills to the CLI, when its descriptor
    /// declares them.
    pub skill_mode: SkillMode,
    /// Where the CLI keeps its sessions, relative to the configuration
    /// directory (`None`: not known).
    pub data_subdir: Option<&'static str>,
}

/// What the probes need of a driver's configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Setup<'a> {
    /// The program.
    pub command: &'a Path,
    /// The configured working directory.
    pub cwd: Option<&'a Path>,
    /// The configured model (or a model override), if any.
    pub model: Option<&'a str>,
    /// Which host variables the child inherits.
    pub env_policy: &'a EnvPolicy,
    /// The CLI's documented variables.
    pub documented: &'a [&'a str],
    /// The SDK's own settings for the child.
    pub defaults: &'a [(&'a str, &'a str)],
    /// The configuration's bindings.
    pub env: &'a EnvVars,
}

/// The environment the child would get.
pub(crate) fn child_env(setup: &Setup<'_>) -> BTreeMap<OsString, OsString> {
    let mut cmd = Command::new(setup.command);
    setup
        .env_policy
        .apply(&mut cmd, setup.documented, setup.defaults, setup.env);
    cmd.effective_env()
}

fn var<'e>(env: &'e BTreeMap<OsString, OsString>, name: &str) -> Option<&'e OsString> {
    env.get(&OsString::from(name)).filter(|v| !v.is_empty())
}

/// The program `command` resolves to for a child with `env`: the path
/// itself when it names a directory, else the first executable regular
/// file of that name on the child's `PATH`. Never executed.
pub(crate) fn resolve_program(
    command: &Path,
    cwd: Option<&Path>,
    env: &BTreeMap<OsString, OsString>,
) -> Result<PathBuf, String> {
    if command.components().count() > 1 || command.is_absolute() {
        let path = match cwd {
            Some(dir) if command.is_relative() => dir.join(command),
            _ => command.to_path_buf(),
        };
        return if !path.is_file() {
            Err(format!("{} does not exist", path.display()))
        } else if !is_executable(&path) {
            Err(format!("{} is not executable", path.display()))
        } else {
            Ok(path)
        };
    }
    let Some(path) = var(env, "PATH") else {
        return Err(format!(
            "{} is not a path and the CLI gets no PATH",
            command.display()
        ));
    };
    std::env::split_paths(path)
        .map(|dir| dir.join(command))
        .find(|p| p.is_file() && is_executable(p))
        .ok_or_else(|| format!("{} is not on the CLI's PATH", command.display()))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// The CLI's profile home for a child with `env`, and whether it comes from
/// its variable (`true`) or the default.
pub(crate) fn native_home(
    facts: &CliFacts,
    env: &BTreeMap<OsString, OsString>,
) -> Option<(PathBuf, bool)> {
    if let Some(dir) = var(env, facts.home_var) {
        return Some((PathBuf::from(dir), true));
    }
    facts
        .home_default
        .iter()
        .find_map(|(base, rel)| {
            var(env, base).map(|b| {
                let b = PathBuf::from(b);
                if rel.is_empty() { b } else { b.join(rel) }
            })
        })
        .map(|dir| (dir, false))
}

/// The configuration directory under a profile home.
pub(crate) fn config_dir(facts: &CliFacts, home: &Path) -> PathBuf {
    if facts.config_subdir.is_empty() {
        home.to_path_buf()
    } else {
        home.join(facts.config_subdir)
    }
}

/// The environment checks: the program, the configuration home, the
/// credentials.
pub(crate) fn check_environment(facts: &CliFacts, setup: &Setup<'_>) -> EnvironmentReport {
    let env = child_env(setup);
    let mut checks = Vec::with_capacity(4);
    checks.push(match resolve_program(setup.command, setup.cwd, &env) {
        Ok(path) => EnvironmentCheck::pass("binary", format!("found {}", path.display())),
        Err(why) => EnvironmentCheck::fail("binary", why).with_hint(format!(
            "install the {} CLI, or set the driver's `command` to its path",
            facts.driver_type
        )),
    });
    let Some((home, _)) = native_home(facts, &env) else {
        checks.push(
            EnvironmentCheck::warn(
                "config_home",
                format!("neither {} nor HOME is set for the CLI", facts.home_var),
            )
            .with_hint("pass HOME through the environment policy, or bind it"),
        );
        return EnvironmentReport::from_checks(facts.driver_type, checks);
    };
    let dir = config_dir(facts, &home);
    checks.push(match std::fs::read_dir(&dir) {
        Ok(_) => EnvironmentCheck::pass("config_home", format!("{} is readable", dir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => EnvironmentCheck::warn(
            "config_home",
            format!("{} does not exist yet", dir.display()),
        )
        .with_hint("the CLI creates it on its first run; log in first"),
        Err(e) => EnvironmentCheck::fail(
            "config_home",
            format!("{} cannot be read: {}", dir.display(), e.kind()),
        ),
    });
    checks.push(auth(facts, &env, &dir));
    if let Some(check) = settings_check(facts, &dir) {
        checks.push(check);
    }
    EnvironmentReport::from_checks(facts.driver_type, checks)
}

fn auth(facts: &CliFacts, env: &BTreeMap<OsString, OsString>, dir: &Path) -> EnvironmentCheck {
    if let Some(name) = facts.auth_env.iter().find(|n| var(env, n).is_some()) {
        return EnvironmentCheck::pass("auth", format!("credentials from ${name}"));
    }
    if let Some(file) = facts
        .auth_files
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.is_file())
    {
        return EnvironmentCheck::pass("auth", format!("credentials file {}", file.display()));
    }
    let mut looked: Vec<String> = facts.auth_env.iter().map(|n| format!("${n}")).collect();
    looked.extend(
        facts
            .auth_files
            .iter()
            .map(|f| dir.join(f).display().to_string()),
    );
    EnvironmentCheck::warn(
        "auth",
        format!(
            "no credentials found ({}); the CLI may keep them elsewhere",
            looked.join(", ")
        ),
    )
    .with_hint(facts.login_hint)
}

fn settings_check(facts: &CliFacts, dir: &Path) -> Option<EnvironmentCheck> {
    let path = dir.join(facts.settings);
    let text = read_small(&path)?;
    let valid = match facts.model_key {
        ModelKey::Json(_) => serde_json::from_str::<serde_json::Value>(&text).is_ok(),
        ModelKey::TomlTop(_) => true,
    };
    Some(if valid {
        EnvironmentCheck::pass("settings", format!("{} is readable", path.display()))
    } else {
        EnvironmentCheck::warn("settings", format!("{} is not valid JSON", path.display()))
    })
}

/// The largest settings file a probe reads.
const MAX_SETTINGS_BYTES: u64 = 1 << 20;

pub(crate) fn read_small(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_SETTINGS_BYTES {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The model a run would use: the configured one, else the CLI's model
/// variable, else its settings file.
pub(crate) fn detect_model(facts: &CliFacts, setup: &Setup<'_>) -> Option<DetectedModel> {
    let found = |model: String, source| DetectedModel {
        model,
        provider: facts.provider.into(),
        source,
    };
    if let Some(m) = setup.model.filter(|m| !m.trim().is_empty()) {
        return Some(found(m.to_owned(), ModelSource::Configured));
    }
    model_in_env(facts, &child_env(setup))
}

/// The model the CLI would pick by itself in a child with `env`: its
/// model variable, else its settings file (no configured model).
pub(crate) fn model_in_env(
    facts: &CliFacts,
    env: &BTreeMap<OsString, OsString>,
) -> Option<DetectedModel> {
    let found = |model: String, source| DetectedModel {
        model,
        provider: facts.provider.into(),
        source,
    };
    if let Some(name) = facts.model_env
        && let Some(m) = var(env, name).and_then(|v| v.to_str())
    {
        let source = ModelSource::Environment { var: name.into() };
        return Some(found(m.to_owned(), source));
    }
    let (home, _) = native_home(facts, env)?;
    let path = config_dir(facts, &home).join(facts.settings);
    let text = read_small(&path)?;
    let model = match facts.model_key {
        ModelKey::Json(paths) => json_model(&text, paths),
        ModelKey::TomlTop(key) => toml_top_string(&text, key),
    }?;
    Some(found(model, ModelSource::ConfigFile { path }))
}

fn json_model(text: &str, paths: &[&[&str]]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    paths.iter().find_map(|path| {
        path.iter()
            .try_fold(&v, |v, key| v.get(key))
            .and_then(|v| v.as_str())
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
    })
}

/// A top-level `key = "value"` (or `'value'`) of a TOML document: the
/// lines before the first table header. Enough for `model = "gpt-5"`; a
/// value in another form is not detected.
pub(crate) fn toml_top_string(text: &str, key: &str) -> Option<String> {
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            return None;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if k.trim().trim_matches('"') != key {
            continue;
        }
        let v = v.trim();
        let quote = v.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let rest = &v[1..];
        let end = rest.find(quote)?;
        let value = &rest[..end];
        return (!value.trim().is_empty() && !value.contains('\\')).then(|| value.to_owned());
    }
    None
}

/// The home the CLI runs with under `profile`: `<root>/<driver type>` for
/// a non-native profile the descriptor declares (the driver exports it
/// through the CLI's home variable); natively, the variable's value in the
/// child's environment, else the CLI's default. A home is named, never
/// created.
pub(crate) fn profile_report(
    facts: &CliFacts,
    setup: &Setup<'_>,
    descriptor: &Descriptor,
    profile: &Profile,
) -> ProfileReport {
    let declared = match profile {
        Profile::Native => true,
        Profile::Dedicated { .. } => descriptor.profiles.dedicated,
        Profile::Clone { .. } => descriptor.profiles.clone,
    };
    if !declared {
        return ProfileReport::unsupported(facts.driver_type);
    }
    let (dir, source) = match profile.home(facts.driver_type) {
        Some(home) => (home, ProfileSource::Option),
        None => match native_home(facts, &child_env(setup)) {
            Some((dir, true)) => (dir, ProfileSource::ProcessEnv),
            Some((dir, false)) => (dir, ProfileSource::Default),
            // Neither the variable nor HOME: no home can be named.
            None => return ProfileReport::unsupported(facts.driver_type),
        },
    };
    ProfileReport {
        driver_type: facts.driver_type.into(),
        supported: true,
        dir: Some(dir),
        env_var: Some(facts.home_var.into()),
        source,
    }
}

/// The skills a run with `selection` offers: the selection itself, in the
/// CLI's mode, when the descriptor declares skills; `None` otherwise.
pub(crate) fn skills(
    facts: &CliFacts,
    descriptor: &Descriptor,
    selection: &[SkillRef],
) -> Option<SkillsReport> {
    descriptor.skills.then(|| SkillsReport {
        driver_type: facts.driver_type.into(),
        mode: facts.skill_mode,
        skills: selection
            .iter()
            .map(|s| SkillEntry {
                name: s.name.clone(),
                description: s.description.clone(),
                fingerprint: s.fingerprint.clone(),
            })
            .collect(),
    })
}

/// The quota, honestly unavailable.
pub(crate) fn quota(facts: &CliFacts) -> QuotaReport {
    QuotaReport::unavailable(facts.driver_type, facts.quota_reason)
}

/// The configuration fields every CLI driver has, by their names in its
/// `Config`: `command`, `model`, `cwd`, `extra_args`, `env`, `env_policy`.
pub(crate) fn common_fields(program: &str) -> [ConfigField; 6] {
    [
        ConfigField::new(
            "command",
            "Command",
            FieldKind::Text,
            "The CLI program: a name looked up on the CLI's PATH, or a path",
        )
        .default_value(program),
        ConfigField::new(
            "model",
            "Model",
            FieldKind::Text,
            "The model; without it the CLI's own default or settings",
        ),
        ConfigField::new(
            "cwd",
            "Working directory",
            FieldKind::Text,
            "The working directory when the request names none",
        ),
        ConfigField::new(
            "extra_args",
            "Extra arguments",
            FieldKind::List,
            "Arguments appended last; flags the driver owns are rejected",
        ),
        ConfigField::new(
            "env",
            "Environment",
            FieldKind::Map,
            "Variables set for the CLI (they win over inherited ones)",
        ),
        ConfigField::new(
            "env_policy",
            "Inherited environment",
            FieldKind::Select,
            "Which host variables the CLI inherits",
        )
        .options(["allowlist", "only", "inherit_all"])
        .default_value("allowlist"),
    ]
}

/// A duration field (`cancel_grace` …) with its default.
pub(crate) fn duration_field(
    name: &str,
    label: &str,
    description: &str,
    default: std::time::Duration,
) -> ConfigField {
    ConfigField::new(name, label, FieldKind::Duration, description)
        .default_value(format!("{}ms", default.as_millis()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_top_level_toml_string_is_read_and_tables_end_the_search() {
        let doc = "# c\nmodel_provider = \"x\"\nmodel = \"gpt-5\" # chosen\n[profiles.a]\nmodel = \"o3\"\n";
        assert_eq!(toml_top_string(doc, "model").as_deref(), Some("gpt-5"));
        assert_eq!(toml_top_string("[a]\nmodel = \"o3\"\n", "model"), None);
        assert_eq!(
            toml_top_string("model = 'lit'\n", "model").as_deref(),
            Some("lit")
        );
        assert_eq!(toml_top_string("model = 3\n", "model"), None);
        assert_eq!(toml_top_string("model = \"\"\n", "model"), None);
    }

    #[test]
    fn a_json_model_is_found_at_the_first_path_that_names_one() {
        let paths: &[&[&str]] = &[&["model", "name"], &["model"]];
        assert_eq!(
            json_model(r#"{"model":{"name":"g-2"}}"#, paths).as_deref(),
            Some("g-2")
        );
        assert_eq!(
            json_model(r#"{"model":"legacy"}"#, paths).as_deref(),
            Some("legacy")
        );
        assert_eq!(json_model(r#"{"model":{"name":""}}"#, paths), None);
        assert_eq!(json_model("not json", paths), None);
    }

    static FACTS: CliFacts = CliFacts {
        driver_type: "tool",
        provider: "p",
        home_var: "TOOL_HOME",
        home_default: &[("HOME", ".tool")],
        config_subdir: "",
        settings: "settings.json",
        model_key: ModelKey::Json(&[&["model"]]),
        model_env: None,
        auth_env: &[],
        auth_files: &[],
        login_hint: "log in",
        quota_reason: "none",
        skill_mode: SkillMode::Persistent,
        data_subdir: None,
    };

    #[test]
    fn declared_profiles_and_skills_are_reported_undeclared_ones_are_not() {
        let env: EnvVars = [("HOME", "/h"), ("TOOL_HOME", "/t")].into_iter().collect();
        let policy = EnvPolicy::only(Vec::<String>::new());
        let setup = Setup {
            command: Path::new("tool"),
            cwd: None,
            model: None,
            env_policy: &policy,
            documented: &[],
            defaults: &[],
            env: &env,
        };
        let mut d = Descriptor::new("tool", "Tool");
        let root = PathBuf::from("/r");
        let dedicated = Profile::Dedicated { root: root.clone() };
        let native = profile_report(&FACTS, &setup, &d, &Profile::Native);
        assert_eq!(
            (native.dir, native.source),
            (Some(PathBuf::from("/t")), ProfileSource::ProcessEnv)
        );
        assert!(!profile_report(&FACTS, &setup, &d, &dedicated).supported);
        assert!(skills(&FACTS, &d, &[]).is_none());
        d.profiles.dedicated = true;
        d.skills = true;
        let r = profile_report(&FACTS, &setup, &d, &dedicated);
        assert_eq!(
            (r.dir, r.source, r.env_var.as_deref()),
            (
                Some(root.join("tool")),
                ProfileSource::Option,
                Some("TOOL_HOME")
            )
        );
        assert!(!profile_report(&FACTS, &setup, &d, &Profile::Clone { root }).supported);
        let skill = SkillRef {
            name: "a".into(),
            description: "d".into(),
            dir: PathBuf::from("/nowhere/a"),
            fingerprint: "f".into(),
        };
        let r = skills(&FACTS, &d, std::slice::from_ref(&skill)).unwrap();
        assert_eq!(r.mode, SkillMode::Persistent);
        assert_eq!(
            (r.skills[0].name.as_str(), r.skills[0].fingerprint.as_str()),
            ("a", "f")
        );
    }

    #[test]
    fn a_program_is_looked_up_on_the_childs_path_without_running_it() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("tool");
        std::fs::write(&bin, "#!/bin/sh\nexit 3\n").unwrap();
        let env: BTreeMap<OsString, OsString> =
            [(OsString::from("PATH"), dir.path().as_os_str().to_owned())].into();
        // Not executable yet: not found.
        assert!(resolve_program(Path::new("tool"), None, &env).is_err());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
            assert_eq!(resolve_program(Path::new("tool"), None, &env).unwrap(), bin);
        }
        assert!(resolve_program(Path::new("tool"), None, &BTreeMap::new()).is_err());
        let err = resolve_program(Path::new("./missing"), Some(dir.path()), &env).unwrap_err();
        assert!(err.contains("does not exist"), "{err}");
    }
}
