//! What a Cursor Agent run is equipped with besides the prompt: its profile
//! home and the MCP servers written there.
//!
//! Cursor Agent reads MCP servers from `mcp.json`: the project's
//! `.cursor/mcp.json` (and those of parent directories) and the global
//! `~/.cursor/mcp.json`. The driver never writes into the user's project or
//! home, so it carries servers only under a dedicated or clone profile: the
//! CLI runs with `HOME` at the profile home (`<root>/cursor`), so `~/.cursor`
//! is the profile's, with `CURSOR_CONFIG_DIR` (the documented override of
//! the CLI configuration directory) and `XDG_CONFIG_HOME` pointing into it
//! too. The run's servers are written to `<home>/.cursor/mcp.json` at each
//! launch (a home holds exactly its current run's servers); a bearer token
//! travels as Cursor's `${env:NAME}` header interpolation, its variable
//! passed through to the child. Under the native profile a run with MCP
//! servers is refused before anything starts.
//!
//! The run's host tools are one more server of that `mcp.json`,
//! [`HOST_TOOL_SERVER`](agent_adaptor_driver::HOST_TOOL_SERVER) at the
//! run's loopback MCP server, its token as
//! `${env:AGENT_ADAPTOR_HOST_TOOL_TOKEN}` set in the child's environment
//! (the file outlives the run; the token dies with it), and its tools
//! allowed without Cursor's own confirmation (`Mcp(agent-adaptor:*)` in the
//! profile's `cli-config.json` `permissions.allow`: the host's toolbox asks
//! the host, per the run's policy). Each run's server has its own port, so
//! runs with host tools do not share a profile home at the same time.
//!
//! Project `mcp.json` files are still read by the CLI, so strict isolation
//! is not declared; nor are per-tool filters, approvals or `required`.
//! Instructions and skills have no carrier the driver owns (Cursor reads
//! rules and `AGENTS.md` from the workspace only): both stay refused.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

use agent_adaptor_driver::{McpServer, McpTransport, Request};
use agent_adaptor_driver_kit::host_mcp::loopback::{LoopbackServer, TOKEN_ENV};
use agent_adaptor_driver_kit::profile::{CloneSeed, prepare_home};
use agent_adaptor_driver_kit::scratch::write_private;
use serde_json::{Map, Value, json};

/// Where the MCP servers are written, relative to the profile home.
pub const MCP_JSON: &str = ".cursor/mcp.json";

/// The CLI configuration (permissions), relative to the profile home.
pub const CLI_CONFIG: &str = ".cursor/cli-config.json";

/// The permission that lets the host's tools run without Cursor asking.
pub const HOST_TOOLS_PERMISSION: &str = "Mcp(agent-adaptor:*)";

/// What a clone profile takes from the user's home: the CLI settings
/// (copied) and the stored login, wherever this CLI version keeps it
/// (linked, never copied; a missing candidate is skipped).
const SEED: CloneSeed<'static> = CloneSeed {
    copy: &[".cursor/cli-config.json"],
    link: &[".config/cursor/auth.json", ".cursor/auth.json"],
};

/// A Cursor Agent run that cannot be equipped as asked.
#[derive(Debug, thiserror::Error)]
pub enum EquipError {
    /// MCP servers (host tools too) need a home the driver owns.
    #[error(
        "cursor carries MCP servers and host tools only under a dedicated or clone profile: \
         its mcp.json lives in the user's project or home otherwise"
    )]
    McpNeedsProfile,
    /// The profile's `cli-config.json` is not a JSON object: the host tools'
    /// permission cannot be added.
    #[error("the profile's {} is not a JSON object: {reason}", path.display())]
    BadCliConfig {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Another run of this process uses the same profile home with other
    /// MCP servers (the home has one `mcp.json`).
    #[error(
        "profile home {} is in use by a run with other MCP servers",
        home.display()
    )]
    HomeInUse {
        /// The profile home.
        home: PathBuf,
    },
    /// The profile home or its `mcp.json` could not be written.
    #[error("cannot prepare the profile home {}: {source}", home.display())]
    Io {
        /// The profile home.
        home: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A run's equipment, ready for the command: the environment it adds, the
/// host variables it passes through, and the claim on its profile home
/// (held until the run ends).
#[derive(Debug, Default)]
pub struct Equipped {
    /// Bindings: `HOME`, `CURSOR_CONFIG_DIR`, `XDG_CONFIG_HOME` under a
    /// profile; none under the native one.
    pub env: Vec<(String, String)>,
    /// Host variables to pass through (bearer-token variables).
    pub pass: Vec<String>,
    _claim: Option<Claim>,
}

/// Render `servers` as Cursor's `mcp.json`.
pub fn mcp_json(servers: &[McpServer]) -> Value {
    let mut map = Map::new();
    for s in servers {
        let entry = match &s.transport {
            McpTransport::Stdio { command, args, env } => {
                json!({"command": command, "args": args, "env": env})
            }
            McpTransport::Http {
                url,
                headers,
                bearer_token_env,
            }
            | McpTransport::Sse {
                url,
                headers,
                bearer_token_env,
            } => {
                let mut headers = headers.clone();
                if let Some(var) = bearer_token_env {
                    headers.insert("Authorization".into(), format!("Bearer ${{env:{var}}}"));
                }
                json!({"type": s.transport.kind(), "url": url, "headers": headers})
            }
        };
        map.insert(s.name.clone(), entry);
    }
    json!({ "mcpServers": map })
}

/// The environment that gives the CLI `home` as its home.
pub fn home_env(home: &Path) -> Vec<(String, String)> {
    let at = |rel: &str| home.join(rel).display().to_string();
    vec![
        ("HOME".into(), home.display().to_string()),
        ("CURSOR_CONFIG_DIR".into(), at(".cursor")),
        ("XDG_CONFIG_HOME".into(), at(".config")),
    ]
}

/// Prepare the run's profile home and its `mcp.json`, with the run's
/// host-tool server `host` (if any). Nothing is written under the native
/// profile (where MCP servers and host tools are refused).
pub fn equip(req: &Request, host: Option<&LoopbackServer>) -> Result<Equipped, EquipError> {
    if req.profile.is_native() {
        if !req.mcp_servers.is_empty() || host.is_some() {
            return Err(EquipError::McpNeedsProfile);
        }
        return Ok(Equipped::default());
    }
    let native = std::env::var_os("HOME").map(PathBuf::from);
    let seed = if native.is_some() {
        SEED
    } else {
        CloneSeed::default()
    };
    let native = native.unwrap_or_default();
    let io = |home: &Path| {
        let home = home.to_owned();
        move |source| EquipError::Io { home, source }
    };
    let planned = req.profile.home("cursor").unwrap_or_default();
    let home = prepare_home(&req.profile, "cursor", &native, &seed)
        .map_err(io(&planned))?
        .unwrap_or(planned);
    let mut servers = req.mcp_servers.clone();
    servers.extend(host.map(|h| h.mcp_server(TOKEN_ENV)));
    let text = serde_json::to_string_pretty(&mcp_json(&servers)).unwrap_or_default();
    let claim = Claim::take(&home, &text)?;
    if host.is_some() {
        allow_host_tools(&home.join(CLI_CONFIG))?;
    }
    write_atomic(&home.join(MCP_JSON), text.as_bytes()).map_err(io(&home))?;
    let pass = req
        .mcp_servers
        .iter()
        .filter_map(|s| s.transport.bearer_token_env())
        .map(str::to_owned)
        .collect();
    Ok(Equipped {
        env: home_env(&home),
        pass,
        _claim: Some(claim),
    })
}

/// Add [`HOST_TOOLS_PERMISSION`] to `permissions.allow` of the CLI
/// configuration at `path` (created when missing; the rest is kept).
fn allow_host_tools(path: &Path) -> Result<(), EquipError> {
    let bad = |reason: String| EquipError::BadCliConfig {
        path: path.to_owned(),
        reason,
    };
    let mut config = match fs::read_to_string(path) {
        Ok(text) => serde_json::from_str::<Value>(&text).map_err(|e| bad(e.to_string()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(source) => {
            return Err(EquipError::Io {
                home: path.to_owned(),
                source,
            });
        }
    };
    let allow = config
        .as_object_mut()
        .ok_or_else(|| bad("not an object".into()))?
        .entry("permissions")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| bad("permissions is not an object".into()))?
        .entry("allow")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(|| bad("permissions.allow is not an array".into()))?;
    if allow.iter().any(|p| p == HOST_TOOLS_PERMISSION) {
        return Ok(());
    }
    allow.push(HOST_TOOLS_PERMISSION.into());
    let text = serde_json::to_string_pretty(&config).unwrap_or_default();
    write_atomic(path, text.as_bytes()).map_err(|source| EquipError::Io {
        home: path.to_owned(),
        source,
    })
}

/// Write `contents` to `path` (`0600`) by renaming a sibling into place, so
/// a CLI starting meanwhile reads the old file or the new one, whole.
fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        agent_adaptor_driver_kit::scratch::create_private_dir_all(dir)?;
    }
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_extension(format!("json.{}-{n}.tmp", std::process::id()));
    let written = write_private(&tmp, contents).and_then(|()| fs::rename(&tmp, path));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// The profile homes in use by this process's runs: each with its
/// `mcp.json` text and how many runs hold it.
static ACTIVE: LazyLock<Mutex<HashMap<PathBuf, (String, usize)>>> = LazyLock::new(Default::default);

/// A run's hold on a profile home: runs with the same MCP servers share a
/// home; a run with other servers is refused while the home is held.
#[derive(Debug)]
struct Claim {
    home: PathBuf,
}

impl Claim {
    fn take(home: &Path, text: &str) -> Result<Claim, EquipError> {
        let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        match active.get_mut(home) {
            Some((held, _)) if held != text => {
                return Err(EquipError::HomeInUse {
                    home: home.to_owned(),
                });
            }
            Some((_, count)) => *count += 1,
            None => {
                active.insert(home.to_owned(), (text.to_owned(), 1));
            }
        }
        Ok(Claim {
            home: home.to_owned(),
        })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, count)) = active.get_mut(&self.home) {
            *count -= 1;
            if *count == 0 {
                active.remove(&self.home);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use agent_adaptor_driver::Profile;

    #[test]
    fn every_transport_renders_in_cursors_format() {
        let mut stdio = McpServer::stdio("files", "mcp-files", ["--root", "."]);
        if let McpTransport::Stdio { env, .. } = &mut stdio.transport {
            env.insert("LEVEL".into(), "debug".into());
        }
        let mut http = McpServer::http("docs", "https://docs.example/mcp");
        if let McpTransport::Http {
            headers,
            bearer_token_env,
            ..
        } = &mut http.transport
        {
            headers.insert("X-Team".into(), "core".into());
            *bearer_token_env = Some("DOCS_TOKEN".into());
        }
        let sse = McpServer {
            name: "events".into(),
            transport: McpTransport::Sse {
                url: "http://127.0.0.1:9/sse".into(),
                headers: Default::default(),
                bearer_token_env: None,
            },
            required: false,
            tools: Default::default(),
        };
        let v = mcp_json(&[stdio, http, sse]);
        assert_eq!(
            v,
            json!({"mcpServers": {
                "files": {"command": "mcp-files", "args": ["--root", "."], "env": {"LEVEL": "debug"}},
                "docs": {"type": "http", "url": "https://docs.example/mcp",
                         "headers": {"X-Team": "core", "Authorization": "Bearer ${env:DOCS_TOKEN}"}},
                "events": {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {}}
            }})
        );
    }

    #[test]
    fn native_refuses_servers_and_a_home_is_shared_only_with_the_same_servers() {
        let mut req = Request::new("r", "p");
        assert!(equip(&req, None).unwrap().env.is_empty());
        req.mcp_servers = vec![McpServer::stdio("a", "srv", ["1"])];
        assert!(matches!(
            equip(&req, None),
            Err(EquipError::McpNeedsProfile)
        ));

        let root = tempfile::tempdir().unwrap();
        req.profile = Profile::Dedicated {
            root: root.path().to_owned(),
        };
        let first = equip(&req, None).unwrap();
        let home = root.path().join("cursor");
        assert!(
            first
                .env
                .contains(&("HOME".into(), home.display().to_string()))
        );
        let same = equip(&req, None).unwrap();
        let mut other = req.clone();
        other.mcp_servers = vec![McpServer::stdio("b", "srv", ["2"])];
        assert!(matches!(
            equip(&other, None),
            Err(EquipError::HomeInUse { .. })
        ));
        drop((first, same));
        let written = equip(&other, None).unwrap();
        let text = fs::read_to_string(home.join(MCP_JSON)).unwrap();
        assert!(text.contains("\"b\"") && !text.contains("\"a\""), "{text}");
        drop(written);
    }

    #[test]
    fn the_host_tools_permission_is_added_once_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CLI_CONFIG);
        assert_eq!(
            HOST_TOOLS_PERMISSION,
            format!("Mcp({}:*)", agent_adaptor_driver::HOST_TOOL_SERVER)
        );
        allow_host_tools(&path).unwrap();
        let read = || serde_json::from_str::<Value>(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            read(),
            json!({"permissions": {"allow": [HOST_TOOLS_PERMISSION]}})
        );
        fs::write(
            &path,
            r#"{"version": 1, "permissions": {"allow": ["Shell(ls)"], "deny": ["Shell(rm)"]}}"#,
        )
        .unwrap();
        allow_host_tools(&path).unwrap();
        allow_host_tools(&path).unwrap();
        assert_eq!(
            read(),
            json!({"version": 1, "permissions": {"allow": ["Shell(ls)", HOST_TOOLS_PERMISSION],
                   "deny": ["Shell(rm)"]}})
        );
        for bad in [
            "[1]",
            "{\"permissions\": 3}",
            "{\"permissions\": {\"allow\": {}}}",
            "no json",
        ] {
            fs::write(&path, bad).unwrap();
            assert!(
                matches!(
                    allow_host_tools(&path),
                    Err(EquipError::BadCliConfig { .. })
                ),
                "{bad}"
            );
        }
    }
}
