//! A run's MCP servers in Gemini CLI's `settings.json` format, and the
//! server and tool behind an MCP tool name.
//!
//! | [`McpServer`] | Gemini `mcpServers.<name>` |
//! |---|---|
//! | stdio | `command`, `args`, `env` |
//! | Streamable HTTP | `url`, `type: "http"`, `headers` (`httpUrl` is deprecated in 0.61) |
//! | SSE | `url`, `type: "sse"`, `headers` (a `url` without `type` is Streamable HTTP) |
//! | `bearer_token_env: NAME` | header `Authorization: Bearer ${NAME}` (the settings loader expands `$NAME` / `${NAME}` from the CLI's environment; `NAME` is passed through to it) |
//! | `tools.allow` / `tools.deny` | `includeTools` / `excludeTools` |
//!
//! Not carried: per-tool auto-approval (Gemini's `trust` covers a whole
//! server) and `required` (Gemini reports a server that fails to start and
//! goes on). Because the loader expands `$VAR` in every settings string, a
//! value holding `$` followed by a name or `{` would not reach the server
//! as written: it is refused ([`McpValueExpands`]).
//!
//! Gemini names an MCP tool `mcp_<server>_<tool>` (characters outside
//! `[A-Za-z0-9_.:-]` become `_`, names over 63 characters are shortened),
//! in the model's function declarations and in stream-json `tool_use`
//! events alike. [`resolve_tool`] maps such a name back to one of the run's
//! servers only when exactly one server's prefix matches.
//!
//! The run's host tools are one more server, [`HOST_TOOL_SERVER`] on the
//! run's loopback MCP server ([`host_entry`]): its token is a literal header
//! of the overlay settings (a private file of the run's scratch, removed
//! with it), never an environment variable the CLI's own children inherit;
//! `trust: true` spares the user a confirmation Gemini cannot ask headless
//! anyway (the host's toolbox asks the host, per the run's policy). Its
//! tools resolve to [`ToolScope::Host`] under their own names.

use std::collections::BTreeSet;

use agent_adaptor_driver::{HOST_TOOL_SERVER, McpServer, McpSupport, McpTransport, ToolScope};
use agent_adaptor_driver_kit::host_mcp::loopback::LoopbackServer;
use serde_json::{Map, Value, json};

/// What the driver carries.
pub fn support() -> McpSupport {
    McpSupport {
        stdio: true,
        http: true,
        sse: true,
        headers: true,
        bearer_token_env: true,
        tool_filter: true,
        auto_approve: false,
        strict: true,
        required: false,
    }
}

/// A server value Gemini's settings loader would rewrite (`$NAME`,
/// `${NAME}`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "gemini: a value of MCP server {server:?} holds `$` before a name or `{{`, which Gemini CLI would expand from its environment"
)]
pub struct McpValueExpands {
    /// The server.
    pub server: String,
}

/// The `mcpServers` entries of `servers`.
pub fn settings_entries(servers: &[McpServer]) -> Result<Map<String, Value>, McpValueExpands> {
    servers
        .iter()
        .map(|s| Ok((s.name.clone(), entry(s)?)))
        .collect()
}

/// The host variables the CLI needs for the servers' bearer tokens.
pub fn token_variables(servers: &[McpServer]) -> BTreeSet<String> {
    servers
        .iter()
        .filter_map(|s| match &s.transport {
            McpTransport::Http {
                bearer_token_env, ..
            }
            | McpTransport::Sse {
                bearer_token_env, ..
            } => bearer_token_env.clone(),
            McpTransport::Stdio { .. } => None,
        })
        .collect()
}

fn entry(server: &McpServer) -> Result<Value, McpValueExpands> {
    let expands = || McpValueExpands {
        server: server.name.clone(),
    };
    let mut v = match &server.transport {
        McpTransport::Stdio { command, args, env } => {
            if expanding(command) || args.iter().chain(env.values()).any(|s| expanding(s)) {
                return Err(expands());
            }
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
            if expanding(url) || headers.values().any(|s| expanding(s)) {
                return Err(expands());
            }
            let mut headers: Map<String, Value> = headers
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            if let Some(name) = bearer_token_env {
                headers.insert("Authorization".into(), format!("Bearer ${{{name}}}").into());
            }
            let kind = match server.transport {
                McpTransport::Http { .. } => "http",
                _ => "sse",
            };
            json!({"url": url, "type": kind, "headers": headers})
        }
    };
    if let Some(allow) = &server.tools.allow {
        v["includeTools"] = json!(allow);
    }
    if !server.tools.deny.is_empty() {
        v["excludeTools"] = json!(server.tools.deny);
    }
    Ok(v)
}

/// The `mcpServers` entry of the run's loopback server of host tools.
pub fn host_entry(server: &LoopbackServer) -> Value {
    json!({
        "url": server.url(),
        "type": "http",
        "headers": {"Authorization": format!("Bearer {}", server.token())},
        "trust": true,
    })
}

/// `$` followed by a name character or `{`: what Gemini's
/// `resolveEnvVarsInString` rewrites.
fn expanding(s: &str) -> bool {
    s.as_bytes()
        .windows(2)
        .any(|w| w[0] == b'$' && (w[1] == b'{' || w[1] == b'_' || w[1].is_ascii_alphanumeric()))
}

/// The scope of a tool Gemini called `name` and the name to report: a tool
/// of [`HOST_TOOL_SERVER`] (when among `servers`) is [`ToolScope::Host`]
/// under its own name; any other as [`resolve_tool`] says, under Gemini's
/// name.
pub fn resolve(name: &str, servers: &[String]) -> (ToolScope, String) {
    match resolve_tool(name, servers) {
        ToolScope::Mcp { server, tool } if server == HOST_TOOL_SERVER => (ToolScope::Host, tool),
        scope => (scope, name.to_owned()),
    }
}

/// The scope of a tool Gemini called `name`: one of `servers` (the run's)
/// when exactly one server's `mcp_<server>_` prefix matches, else
/// [`ToolScope::Builtin`]. The tool is the rest of the name, as the model
/// saw it.
pub fn resolve_tool(name: &str, servers: &[String]) -> ToolScope {
    let mut found = servers.iter().filter_map(|server| {
        let prefix = if server.starts_with("mcp_") {
            format!("{server}_")
        } else {
            format!("mcp_{server}_")
        };
        name.strip_prefix(&prefix)
            .filter(|tool| !tool.is_empty())
            .map(|tool| (server, tool))
    });
    match (found.next(), found.next()) {
        (Some((server, tool)), None) => ToolScope::Mcp {
            server: server.clone(),
            tool: tool.to_owned(),
        },
        _ => ToolScope::Builtin,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use agent_adaptor_driver::McpToolPolicy;

    fn server(name: &str, transport: McpTransport) -> McpServer {
        McpServer {
            name: name.into(),
            transport,
            required: false,
            tools: McpToolPolicy::default(),
        }
    }

    #[test]
    fn each_transport_in_geminis_format() {
        let mut stdio = server(
            "kv",
            McpTransport::Stdio {
                command: "srv".into(),
                args: vec!["--log".into(), "50$ each".into()],
                env: [("K".to_owned(), "v".to_owned())].into(),
            },
        );
        stdio.tools.allow = Some(["lookup".to_owned()].into());
        stdio.tools.deny = ["fail".to_owned()].into();
        let http = server(
            "web",
            McpTransport::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                headers: [("X-A".to_owned(), "1".to_owned())].into(),
                bearer_token_env: Some("WEB_TOKEN".into()),
            },
        );
        let sse = server(
            "old",
            McpTransport::Sse {
                url: "http://127.0.0.1:9/sse".into(),
                headers: Default::default(),
                bearer_token_env: None,
            },
        );
        let all = [stdio, http, sse];
        let m = settings_entries(&all).unwrap();
        assert_eq!(
            m["kv"],
            json!({"command": "srv", "args": ["--log", "50$ each"], "env": {"K": "v"},
                   "includeTools": ["lookup"], "excludeTools": ["fail"]})
        );
        assert_eq!(
            m["web"],
            json!({"url": "http://127.0.0.1:9/mcp", "type": "http",
                   "headers": {"X-A": "1", "Authorization": "Bearer ${WEB_TOKEN}"}})
        );
        assert_eq!(
            m["old"],
            json!({"url": "http://127.0.0.1:9/sse", "type": "sse", "headers": {}})
        );
        assert_eq!(token_variables(&all), ["WEB_TOKEN".to_owned()].into());
        for bad in ["$HOME", "x${Y}"] {
            let s = server(
                "b",
                McpTransport::Stdio {
                    command: "c".into(),
                    args: vec![bad.into()],
                    env: Default::default(),
                },
            );
            assert!(settings_entries(&[s]).is_err(), "{bad}");
        }
    }

    #[test]
    fn mcp_tool_names_resolve_only_when_unambiguous() {
        let servers = ["kv".to_owned(), "a".to_owned(), "a_b".to_owned()];
        assert_eq!(
            resolve_tool("mcp_kv_lookup", &servers),
            ToolScope::Mcp {
                server: "kv".into(),
                tool: "lookup".into()
            }
        );
        assert_eq!(resolve_tool("mcp_a_b_x", &servers), ToolScope::Builtin);
        assert_eq!(resolve_tool("read_file", &servers), ToolScope::Builtin);
        assert_eq!(resolve_tool("mcp_other_x", &servers), ToolScope::Builtin);
        assert_eq!(resolve_tool("mcp_kv_", &servers), ToolScope::Builtin);
        // Host tools only when the run serves them.
        let name = format!("mcp_{HOST_TOOL_SERVER}_lookup");
        assert_eq!(resolve(&name, &servers), (ToolScope::Builtin, name.clone()));
        let with_host = [HOST_TOOL_SERVER.to_owned(), "kv".to_owned()];
        assert_eq!(
            resolve(&name, &with_host),
            (ToolScope::Host, "lookup".into())
        );
        assert_eq!(
            resolve("mcp_kv_lookup", &with_host).1,
            "mcp_kv_lookup",
            "an MCP tool keeps Gemini's name"
        );
    }
}
