//! `agent-adaptor inspect`: for each driver, is its binary on `PATH`, which
//! version, are credentials present (names of variables and files only,
//! never values), and which models — "unknown" wherever the answer would be
//! a guess.

use std::time::Duration;

use serde_json::{Value, json};

use crate::args::{DriverName, InspectArgs, ProviderName};
use crate::error::CliError;
use crate::select::{env_allowlist, probe_cli, provider_from_env};
use agent_adaptor_drivers::child_env::EnvPolicy;

/// How long `--version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// `binary --version`, first line; `None` when it fails or hangs. The CLI
/// gets the environment a run would give it (the allowlist), not this one.
async fn version(binary: &std::path::Path, name: DriverName) -> Option<String> {
    let mut cmd = tokio::process::Command::new(binary);
    cmd.env_clear()
        .envs(EnvPolicy::default().host_env(env_allowlist(name)))
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(VERSION_TIMEOUT, cmd.output())
        .await
        .ok()?
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}

async fn inspect_cli(name: DriverName) -> Value {
    let Some(probe) = probe_cli(name) else {
        return json!({"driver": name.as_str()});
    };
    let version = match &probe.binary {
        Some(b) => version(b, name).await,
        None => None,
    };
    json!({
        "driver": name.as_str(),
        "binary": probe.binary.as_ref().map(|b| b.display().to_string()),
        "looked_for": probe.programs,
        "version": version.unwrap_or_else(|| if probe.binary.is_some() { "unknown".into() } else { "-".into() }),
        "auth": if probe.auth.is_empty() { Value::String("not found".into()) } else { json!(probe.auth) },
        "auth_sources": probe.auth_sources,
        "models": "unknown (the CLI offers no model listing the adaptor reads)",
        "usable": probe.usable(),
    })
}

fn inspect_llm() -> Value {
    let providers: Vec<Value> = ProviderName::ALL
        .iter()
        .map(|p| {
            json!({
                "provider": p.as_str(),
                "key_variable": p.key_var(),
                "key_set": std::env::var_os(p.key_var()).is_some_and(|v| !v.is_empty()),
                "default_model": p.default_model(),
            })
        })
        .collect();
    json!({
        "driver": "llm",
        "binary": Value::Null,
        "version": env!("CARGO_PKG_VERSION"),
        "auth": match provider_from_env() {
            Some(p) => json!([format!("${}", p.key_var())]),
            None => Value::String("not found".into()),
        },
        "providers": providers,
        "models": "unknown (pass --model; the default is per provider)",
        "usable": provider_from_env().is_some(),
        "playground": "always available offline (run with no driver, or --playground)",
    })
}

/// Run `agent-adaptor inspect`.
pub async fn inspect(args: InspectArgs) -> Result<(), CliError> {
    let names: Vec<DriverName> = match &args.driver {
        Some(d) => vec![DriverName::parse(d)?],
        None => DriverName::ALL.to_vec(),
    };
    let mut reports = Vec::new();
    for name in names {
        reports.push(if name == DriverName::Llm {
            inspect_llm()
        } else {
            inspect_cli(name).await
        });
    }
    if args.json {
        println!("{}", json!({"drivers": reports}));
        return Ok(());
    }
    for r in &reports {
        let get = |k: &str| match &r[k] {
            Value::String(s) => s.clone(),
            Value::Null => "-".into(),
            Value::Array(a) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| v.to_string())
                })
                .collect::<Vec<_>>()
                .join(", "),
            other => other.to_string(),
        };
        println!("{}", r["driver"].as_str().unwrap_or(""));
        println!("  binary:  {}", get("binary"));
        println!("  version: {}", get("version"));
        println!("  auth:    {}", get("auth"));
        println!("  models:  {}", get("models"));
        println!("  usable:  {}", get("usable"));
        if let Some(providers) = r["providers"].as_array() {
            for p in providers {
                println!(
                    "  provider {:<17} {} {}",
                    p["provider"].as_str().unwrap_or(""),
                    p["key_variable"].as_str().unwrap_or(""),
                    if p["key_set"] == true {
                        "set"
                    } else {
                        "not set"
                    }
                );
            }
        }
    }
    Ok(())
}
