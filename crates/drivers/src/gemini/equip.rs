//! A run's equipment and profile applied to the CLI's configuration: the
//! home it runs with (`GEMINI_CLI_HOME`) and the variables it inherits.
//!
//! * [`Profile::Dedicated`] / [`Profile::Clone`]: `GEMINI_CLI_HOME=<root>/gemini`
//!   (Gemini then reads `<root>/gemini/.gemini/settings.json` …). A clone is
//!   seeded from the native `~/.gemini`: `settings.json` copied,
//!   `oauth_creds.json` and `google_accounts.json` linked.
//! * Instructions, MCP servers, `mcp_strict` or skills: an overlay of that
//!   home (or of the native one) in the run's scratch ([`super::home`]).
//! * A bearer token's variable is passed through to the CLI, which expands
//!   it in the header the settings name.
//! * The run's host tools: their loopback server is one more entry of the
//!   overlay settings ([`mcp::host_entry`]).

use std::path::{Path, PathBuf};

use agent_adaptor_driver::{DriverError, HOST_TOOL_SERVER, Profile, Request};
use agent_adaptor_driver_kit::child_env::EnvPolicy;
use agent_adaptor_driver_kit::host_mcp::loopback::LoopbackServer;
use agent_adaptor_driver_kit::profile::{CloneSeed, prepare_home};

use super::home::{Equipment, RunHome, overlay};
use super::{Config, ENV_ALLOWLIST, mcp};

/// What a clone takes from the native home.
const SEED: CloneSeed<'static> = CloneSeed {
    copy: &[".gemini/settings.json"],
    link: &[".gemini/oauth_creds.json", ".gemini/google_accounts.json"],
};

/// Point `cfg` at the run's home, with the run's host-tool server `host`
/// (if any); the returned overlay (if any) must live until the CLI has
/// exited.
pub fn apply(
    cfg: &mut Config,
    req: &Request,
    host: Option<&LoopbackServer>,
) -> Result<Option<RunHome>, DriverError> {
    let other = |e: Box<dyn std::error::Error + Send + Sync>| DriverError::Other(e);
    let native = native_home(cfg);
    let profile_home = match (&req.profile, &native) {
        (Profile::Native, _) => None,
        (Profile::Clone { .. }, None) => {
            return Err(other(Box::new(super::home::HomeError::NoHome)));
        }
        (profile, native) => prepare_home(
            profile,
            "gemini",
            native.as_deref().unwrap_or(Path::new("")),
            &SEED,
        )?,
    };
    let mut mcp_servers =
        mcp::settings_entries(&req.mcp_servers).map_err(|e| other(Box::new(e)))?;
    if let Some(server) = host {
        mcp_servers.insert(HOST_TOOL_SERVER.into(), mcp::host_entry(server));
    }
    let eq = Equipment {
        instructions: req.instructions.as_deref(),
        mcp_servers,
        mcp_strict: req.mcp_strict,
        skills: &req.skills,
    };
    let run_home = if eq.is_empty() {
        None
    } else {
        let base = profile_home
            .clone()
            .or(native)
            .ok_or_else(|| other(Box::new(super::home::HomeError::NoHome)))?;
        Some(overlay(&base, &eq).map_err(|e| other(Box::new(e)))?)
    };
    if let Some(home) = run_home.as_ref().map(RunHome::path).or(profile_home) {
        cfg.env.insert(
            "GEMINI_CLI_HOME".into(),
            home.to_string_lossy().into_owned(),
        );
    }
    let tokens = mcp::token_variables(&req.mcp_servers);
    if !tokens.is_empty() {
        cfg.env_policy = passing(&cfg.env_policy, tokens);
    }
    Ok(run_home)
}

/// The home Gemini would use without us: `GEMINI_CLI_HOME`, else `HOME`
/// (the configuration's bindings first, then this process's environment).
fn native_home(cfg: &Config) -> Option<PathBuf> {
    let bound = |k: &str| cfg.env.get(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let host = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    bound("GEMINI_CLI_HOME")
        .or_else(|| {
            cfg.env_policy
                .allows(ENV_ALLOWLIST, "GEMINI_CLI_HOME")
                .then(|| host("GEMINI_CLI_HOME"))
                .flatten()
        })
        .or_else(|| bound("HOME"))
        .or_else(|| host("HOME"))
}

/// `policy` that also passes `names` from the host.
fn passing(policy: &EnvPolicy, names: impl IntoIterator<Item = String>) -> EnvPolicy {
    match policy {
        EnvPolicy::InheritAll => EnvPolicy::InheritAll,
        EnvPolicy::Allowlist { pass } => EnvPolicy::Allowlist {
            pass: pass.iter().cloned().chain(names).collect(),
        },
        EnvPolicy::Only { names: only } => EnvPolicy::Only {
            names: only.iter().cloned().chain(names).collect(),
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use agent_adaptor_driver::{McpServer, McpToolPolicy, McpTransport};

    fn config(home: &Path) -> Config {
        Config {
            env: [("HOME".to_owned(), home.display().to_string())].into(),
            env_policy: EnvPolicy::only(["PATH"]),
            ..Default::default()
        }
    }

    #[test]
    fn the_home_and_variables_of_a_run() {
        let tmp = tempfile::tempdir().unwrap();
        // Nothing to carry: the configuration is untouched.
        let mut cfg = config(tmp.path());
        assert!(
            apply(&mut cfg, &Request::new("r", "p"), None)
                .unwrap()
                .is_none()
        );
        assert_eq!(cfg, config(tmp.path()));

        // A dedicated profile alone: its home, no overlay.
        let root = tmp.path().join("profiles");
        let mut req = Request::new("r", "p");
        req.profile = Profile::Dedicated { root: root.clone() };
        assert!(apply(&mut cfg, &req, None).unwrap().is_none());
        assert_eq!(
            cfg.env.get("GEMINI_CLI_HOME").map(PathBuf::from),
            Some(root.join("gemini"))
        );

        // Instructions and a server with a bearer token: an overlay of the
        // native home, and the token's variable passed through.
        let mut cfg = config(tmp.path());
        let mut req = Request::new("r", "p");
        req.instructions = Some("text".into());
        req.mcp_servers.push(McpServer {
            name: "web".into(),
            transport: McpTransport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: Default::default(),
                bearer_token_env: Some("WEB_TOKEN".into()),
            },
            required: false,
            tools: McpToolPolicy::default(),
        });
        let home = apply(&mut cfg, &req, None).unwrap().unwrap();
        assert_eq!(
            cfg.env.get("GEMINI_CLI_HOME").map(PathBuf::from),
            Some(home.path())
        );
        assert!(home.path().join(".gemini/GEMINI.md").is_file());
        assert!(cfg.env_policy.allows(&[], "WEB_TOKEN"));
        assert!(tmp.path().join(".gemini/tmp").is_dir());
        let gone = home.path();
        drop(home);
        assert!(!gone.exists());
    }
}
