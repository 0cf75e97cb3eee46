//! One driver's inspection: the child's environment, the program and its
//! version, the directories, the credentials, the models, the quota, and
//! the health checks over them.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, SystemTime};

use agent_adaptor_driver::ModelSource;

use super::auth::{self, Sources};
use super::report::{
    AuthReport, AuthState, BinaryReport, DirReport, DirRole, DriverKind, DriverReport, HealthCheck,
    ModelsReport, ModelsSource, QuotaStatus, VersionReport,
};
use super::targets::Subject;
use super::version::Versions;
use super::{ChildEnv, HostEnv};
use crate::child_env::EnvPolicy;
use crate::probe_common::{config_dir, model_in_env, native_home, resolve_program};

/// Inspect `subject` on a host whose variables are `host`.
pub(crate) async fn report(
    subject: &Subject,
    host: &HostEnv,
    timeout: Duration,
    now: SystemTime,
    versions: &Versions,
) -> DriverReport {
    if subject.kind == DriverKind::Llm {
        return llm(subject, host, now);
    }
    let env = child_env(subject, host);
    let binary = binary(subject, &env, timeout, versions).await;
    let config = subject
        .facts
        .and_then(|facts| native_home(facts, &env).map(|(home, set)| (facts, home, set)))
        .map(|(facts, home, set)| (facts, config_dir(facts, &home), set));
    let mut directories = Vec::new();
    if let Some((facts, dir, set)) = &config {
        let entry = |role, path: std::path::PathBuf| DirReport {
            role,
            exists: path.is_dir(),
            path,
            env_var: Some(facts.home_var.into()),
            from_env: *set,
        };
        directories.push(entry(DirRole::Config, dir.clone()));
        if let Some(sub) = facts.data_subdir {
            directories.push(entry(DirRole::Data, dir.join(sub)));
        }
    }
    let mut vars: Vec<&str> = subject
        .facts
        .map(|f| f.auth_env.to_vec())
        .unwrap_or_default();
    for key in subject.key_env {
        if !vars.contains(key) {
            vars.push(key);
        }
    }
    let facts = subject.facts;
    let sources = Sources {
        vars: &vars,
        files: match (&config, facts) {
            (Some((_, dir, _)), Some(f)) => f.auth_files.iter().map(|p| dir.join(p)).collect(),
            _ => Vec::new(),
        },
        complete: facts.is_some_and(|f| !f.auth_files.is_empty()) && config.is_some(),
        elsewhere: "",
    };
    let auth = auth::state(&sources, &env, now);
    let mut health = vec![
        binary_check(subject, &binary),
        version_check(subject, &binary),
        auth_check(&auth, facts.map(|f| f.login_hint), &vars),
    ];
    health.push(match &config {
        Some((_, dir, _)) => HealthCheck::new(
            "config directory",
            dir.is_dir(),
            if dir.is_dir() {
                format!("{} exists", dir.display())
            } else {
                format!("{} does not exist yet", dir.display())
            },
        )
        .hint("the CLI creates it on its first run; log in first"),
        None if facts.is_some() => HealthCheck::new(
            "config directory",
            false,
            "neither the CLI's home variable nor HOME is set for it",
        )
        .hint("pass HOME through the environment"),
        None => HealthCheck::new(
            "config directory",
            true,
            "the agent's configuration is its own; inspection knows no directory of it",
        ),
    });
    DriverReport {
        driver: subject.name.into(),
        kind: subject.kind,
        display_name: subject.display_name.into(),
        binary: Some(binary),
        auth,
        directories,
        models: models(subject, &env),
        quota: QuotaStatus::Unavailable {
            reason: match facts {
                Some(f) if subject.kind == DriverKind::Cli => f.quota_reason.into(),
                _ => "an ACP agent reports no usage quota offline".into(),
            },
        },
        health,
    }
}

/// The environment the driver's child would get: the host variables the
/// default allowlist passes (the base list and the program's documented
/// variables), then the SDK's defaults.
pub(crate) fn child_env(subject: &Subject, host: &HostEnv) -> ChildEnv {
    let policy = EnvPolicy::default();
    let mut env: ChildEnv = host
        .iter()
        .filter(|(k, _)| {
            k.to_str()
                .is_some_and(|k| policy.allows(subject.documented, k))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in subject.defaults {
        env.insert(OsString::from(k), OsString::from(v));
    }
    env
}

async fn binary(
    subject: &Subject,
    env: &ChildEnv,
    timeout: Duration,
    versions: &Versions,
) -> BinaryReport {
    let mut reasons = Vec::new();
    let found = subject.programs.iter().find_map(|p| {
        resolve_program(Path::new(p), None, env)
            .map_err(|why| reasons.push(why))
            .ok()
    });
    let version = match &found {
        Some(path) => versions.of(path, env, timeout).await,
        None => VersionReport::Unknown {
            reason: "the binary was not found".into(),
        },
    };
    BinaryReport {
        found: found.is_some(),
        reason: found.is_none().then(|| reasons.join("; ")),
        path: found,
        looked_for: subject.programs.iter().map(|p| (*p).to_owned()).collect(),
        version,
    }
}

fn binary_check(subject: &Subject, binary: &BinaryReport) -> HealthCheck {
    match &binary.path {
        Some(path) => HealthCheck::new("binary on PATH", true, format!("found {}", path.display())),
        None => HealthCheck::new(
            "binary on PATH",
            false,
            binary.reason.clone().unwrap_or_default(),
        )
        .hint(format!(
            "install {} and put `{}` on PATH",
            subject.display_name,
            subject.programs.join("` or `")
        )),
    }
}

fn version_check(subject: &Subject, binary: &BinaryReport) -> HealthCheck {
    const NAME: &str = "version supported";
    if !binary.found {
        // The binary check says why and what to do.
        return HealthCheck::new(NAME, false, "no binary to ask");
    }
    let found = match &binary.version {
        VersionReport::Known { version } => version,
        VersionReport::Unknown { reason } => {
            return HealthCheck::new(NAME, false, reason.clone())
                .hint("run the program with --version by hand to see what it says");
        }
    };
    let Some(verified) = subject.verified else {
        return HealthCheck::new(
            NAME,
            true,
            format!("{found} (no version of this driver is verified offline)"),
        );
    };
    match super::version::compare(found, verified) {
        Some(std::cmp::Ordering::Less) => HealthCheck::new(
            NAME,
            false,
            format!("{found} is older than {verified}, the oldest verified"),
        )
        .hint(format!("upgrade to {verified} or later")),
        Some(_) => HealthCheck::new(NAME, true, format!("{found} (verified: {verified})")),
        None => HealthCheck::new(
            NAME,
            false,
            format!("{found} cannot be compared with {verified}"),
        ),
    }
}

fn auth_check(auth: &AuthReport, login_hint: Option<&str>, vars: &[&str]) -> HealthCheck {
    let hint = login_hint.map(str::to_owned).unwrap_or_else(|| {
        let names: Vec<String> = vars.iter().map(|v| format!("${v}")).collect();
        if names.is_empty() {
            "log in with the agent itself".into()
        } else {
            format!("set {}", names.join(" or "))
        }
    });
    HealthCheck::new(
        "auth present",
        auth.state == AuthState::Present,
        auth.reason.clone(),
    )
    .hint(hint)
}

fn models(subject: &Subject, env: &ChildEnv) -> ModelsReport {
    if let Some(facts) = subject.facts {
        if let Some(found) = model_in_env(facts, env) {
            let source = match found.source {
                ModelSource::Environment { var } => ModelsSource::Environment { var },
                ModelSource::ConfigFile { path } => ModelsSource::ConfigFile { path },
                _ => ModelsSource::None {
                    reason: "an unexpected source".into(),
                },
            };
            return ModelsReport {
                models: vec![found.model],
                source,
            };
        }
        let settings = format!("the CLI's {}", facts.settings);
        let looked = match facts.model_env {
            Some(var) => format!("neither ${var} nor {settings} names a model"),
            None => format!("{settings} names no model"),
        };
        return none(format!("{looked}; the CLI uses its default"));
    }
    if let Some(var) = subject.model_env {
        if let Some(model) = env
            .get(std::ffi::OsStr::new(var))
            .and_then(|v| v.to_str())
            .filter(|v| !v.is_empty())
        {
            return ModelsReport {
                models: vec![model.to_owned()],
                source: ModelsSource::Environment { var: var.into() },
            };
        }
        return none(format!(
            "${var} is not set; the agent uses its default, announced when a session opens"
        ));
    }
    none("the agent announces its models when a session opens, which inspection does not do".into())
}

fn none(reason: String) -> ModelsReport {
    ModelsReport {
        models: Vec::new(),
        source: ModelsSource::None { reason },
    }
}

/// An LLM provider: its key variable in this process's environment (the
/// `llm` driver reads it from there); no program, no directory.
fn llm(subject: &Subject, host: &HostEnv, now: SystemTime) -> DriverReport {
    let sources = Sources {
        vars: subject.key_env,
        files: Vec::new(),
        complete: true,
        elsewhere: "",
    };
    let auth = auth::state(&sources, host, now);
    let key = subject.key_env.first().copied().unwrap_or_default();
    let health = vec![
        HealthCheck::new(
            "API key set",
            auth.state == AuthState::Present,
            auth.reason.clone(),
        )
        .hint(format!("set ${key}")),
    ];
    DriverReport {
        driver: subject.name.into(),
        kind: subject.kind,
        display_name: subject.display_name.into(),
        binary: None,
        auth,
        directories: Vec::new(),
        models: none(
            "the provider lists its models only through its API; inspection does not call the network"
                .into(),
        ),
        quota: QuotaStatus::Unavailable {
            reason: "the provider reports usage per response only; no offline quota".into(),
        },
        health,
    }
}
