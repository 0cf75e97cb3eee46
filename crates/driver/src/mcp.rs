//! MCP servers a run gives its agent: one portable shape ([`McpServer`]) that
//! each driver writes in its CLI's own configuration format.
//!
//! Core validates every server ([`McpServer::validate`]) and checks it
//! against the driver's [`McpSupport`](crate::McpSupport) before anything starts; a driver sees
//! only servers it declared it can carry.
//!
//! The common JSON that Claude Code, Cursor and Gemini CLI read is parsed by
//! [`McpServer::parse_config_json`]:
//!
//! ```
//! use agent_adaptor_driver::{McpServer, McpTransport};
//!
//! let servers = McpServer::parse_config_json(r#"{"mcpServers": {
//!     "files": {"command": "mcp-files", "args": ["--root", "."]},
//!     "docs":  {"type": "http", "url": "https://docs.example/mcp",
//!               "bearerTokenEnv": "DOCS_TOKEN"}
//! }}"#).unwrap();
//! assert_eq!(servers[0].name, "docs");
//! assert!(matches!(servers[1].transport, McpTransport::Stdio { .. }));
//! ```

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// One MCP server for a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServer {
    /// The server's name as the agent sees it (letters, digits, `_`, `-`;
    /// 1..=64 bytes; unique in a run).
    pub name: String,
    /// How the agent reaches it.
    pub transport: McpTransport,
    /// The run must fail when the server cannot be started or reached
    /// (drivers whose CLI has no such switch declare it unsupported).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// Which tools are offered and which run without asking.
    #[serde(default, skip_serializing_if = "McpToolPolicy::is_open")]
    pub tools: McpToolPolicy,
}

/// How an agent reaches an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpTransport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
        /// Extra environment for the server process.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint (`http` or `https`).
        url: String,
        /// Extra request headers.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
        /// The name of a host environment variable holding a bearer token.
        /// The token value is never written to a file, an argv, an event
        /// or a log: the driver passes the variable to the child and
        /// writes the CLI's own reference to it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bearer_token_env: Option<String>,
    },
    /// The legacy HTTP+SSE transport.
    Sse {
        /// The endpoint (`http` or `https`).
        url: String,
        /// Extra request headers.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
        /// As for [`McpTransport::Http`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bearer_token_env: Option<String>,
    },
}

impl McpTransport {
    /// `"stdio"`, `"http"` or `"sse"`.
    pub fn kind(&self) -> &'static str {
        match self {
            McpTransport::Stdio { .. } => "stdio",
            McpTransport::Http { .. } => "http",
            McpTransport::Sse { .. } => "sse",
        }
    }

    /// The extra headers of an HTTP or SSE server (none for stdio).
    pub fn headers(&self) -> Option<&BTreeMap<String, String>> {
        match self {
            McpTransport::Stdio { .. } => None,
            McpTransport::Http { headers, .. } | McpTransport::Sse { headers, .. } => Some(headers),
        }
    }

    /// The bearer-token variable of an HTTP or SSE server.
    pub fn bearer_token_env(&self) -> Option<&str> {
        match self {
            McpTransport::Stdio { .. } => None,
            McpTransport::Http {
                bearer_token_env, ..
            }
            | McpTransport::Sse {
                bearer_token_env, ..
            } => bearer_token_env.as_deref(),
        }
    }
}

/// Which of a server's tools the agent is offered and which run without
/// asking the host. The default offers every tool and auto-approves none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToolPolicy {
    /// Only these tools are offered (`None`: every tool the server lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<BTreeSet<String>>,
    /// These tools are never offered.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub deny: BTreeSet<String>,
    /// These tools run without asking; the others follow the run's
    /// approval policy.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub auto_approve: BTreeSet<String>,
}

impl McpToolPolicy {
    /// True for the default: every tool offered, none auto-approved.
    pub fn is_open(&self) -> bool {
        self.allow.is_none() && self.deny.is_empty() && self.auto_approve.is_empty()
    }

    /// True when an allow or deny list narrows the tools offered.
    pub fn filters(&self) -> bool {
        self.allow.is_some() || !self.deny.is_empty()
    }

    /// Whether `tool` is offered under this policy.
    pub fn offers(&self, tool: &str) -> bool {
        !self.deny.contains(tool) && self.allow.as_ref().is_none_or(|a| a.contains(tool))
    }
}

/// An MCP server that cannot be used as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mcp server {server:?}: {reason}")]
pub struct McpConfigError {
    /// The server's name (empty when the name itself is the problem).
    pub server: String,
    /// What is wrong (never a secret value).
    pub reason: String,
}

fn invalid(server: &str, reason: impl Into<String>) -> McpConfigError {
    McpConfigError {
        server: server.to_owned(),
        reason: reason.into(),
    }
}

impl McpServer {
    /// A stdio server.
    pub fn stdio(
        name: impl Into<String>,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        McpServer {
            name: name.into(),
            transport: McpTransport::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
            },
            required: false,
            tools: McpToolPolicy::default(),
        }
    }

    /// A Streamable HTTP server.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        McpServer {
            name: name.into(),
            transport: McpTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
                bearer_token_env: None,
            },
            required: false,
            tools: McpToolPolicy::default(),
        }
    }

    /// Check the server on its own: a usable name, a command or URL, well
    /// formed headers and variable names, a consistent tool policy.
    pub fn validate(&self) -> Result<(), McpConfigError> {
        let name = &self.name;
        if name.is_empty() || name.len() > 64 {
            return Err(invalid(name, "the name must be 1 to 64 bytes"));
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(invalid(
                name,
                "the name may hold only letters, digits, '_' and '-'",
            ));
        }
        match &self.transport {
            McpTransport::Stdio { command, args, env } => {
                if command.trim().is_empty() {
                    return Err(invalid(name, "a stdio server needs a command"));
                }
                if command.contains('\0') || args.iter().any(|a| a.contains('\0')) {
                    return Err(invalid(name, "the command line holds a NUL byte"));
                }
                for (key, value) in env {
                    if !is_env_name(key) || value.contains('\0') {
                        return Err(invalid(name, format!("invalid environment entry {key:?}")));
                    }
                }
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
                let rest = url
                    .strip_prefix("http://")
                    .or_else(|| url.strip_prefix("https://"));
                match rest {
                    Some(r) if !r.is_empty() && !r.starts_with('/') => {}
                    _ => {
                        return Err(invalid(
                            name,
                            "the url must be an absolute http:// or https:// url",
                        ));
                    }
                }
                if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    return Err(invalid(name, "the url holds whitespace"));
                }
                for (key, value) in headers {
                    let token = !key.is_empty()
                        && key
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                    if !token || value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                        return Err(invalid(name, format!("invalid header {key:?}")));
                    }
                }
                if let Some(var) = bearer_token_env
                    && !is_env_name(var)
                {
                    return Err(invalid(name, "bearer_token_env is not a variable name"));
                }
            }
        }
        let t = &self.tools;
        if let Some(allow) = &t.allow
            && let Some(both) = allow.intersection(&t.deny).next()
        {
            return Err(invalid(
                name,
                format!("tool {both:?} is both allowed and denied"),
            ));
        }
        if let Some(tool) = t.auto_approve.iter().find(|tool| !t.offers(tool)) {
            return Err(invalid(
                name,
                format!("tool {tool:?} is auto-approved but not offered"),
            ));
        }
        let names = t
            .allow
            .iter()
            .flatten()
            .chain(&t.deny)
            .chain(&t.auto_approve);
        if let Some(bad) = names.into_iter().find(|n| n.is_empty()) {
            return Err(invalid(name, format!("empty tool name {bad:?}")));
        }
        Ok(())
    }

    /// Validate a run's servers together: each one, and unique names.
    pub fn validate_all(servers: &[McpServer]) -> Result<(), McpConfigError> {
        let mut seen = BTreeSet::new();
        for server in servers {
            server.validate()?;
            if !seen.insert(server.name.as_str()) {
                return Err(invalid(&server.name, "two servers have this name"));
            }
        }
        Ok(())
    }

    /// Parse the common `{"mcpServers": {name: {...}}}` JSON of Claude
    /// Code, Cursor and Gemini CLI: `{"command", "args", "env"}` for stdio,
    /// `{"type": "http" | "sse", "url", "headers"}` for the others (a
    /// `url` without a `type` is Streamable HTTP). Extensions:
    /// `"bearerTokenEnv"`, `"required"`, and `"tools": {"allow", "deny",
    /// "autoApprove"}`. Servers come back sorted by name, each validated.
    pub fn parse_config_json(text: &str) -> Result<Vec<McpServer>, McpConfigError> {
        let file: wire::File = serde_json::from_str(text)
            .map_err(|e| invalid("", format!("not an mcpServers JSON document: {e}")))?;
        let mut out = Vec::with_capacity(file.mcp_servers.len());
        for (name, entry) in file.mcp_servers {
            let server = entry.into_server(name)?;
            server.validate()?;
            out.push(server);
        }
        Ok(out)
    }
}

fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The common JSON file's shape.
mod wire {
    use std::collections::{BTreeMap, BTreeSet};

    use serde::Deserialize;

    use super::{McpConfigError, McpServer, McpToolPolicy, McpTransport, invalid};

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct File {
        pub(super) mcp_servers: BTreeMap<String, Entry>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub(super) struct Entry {
        #[serde(rename = "type")]
        kind: Option<String>,
        command: Option<String>,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
        url: Option<String>,
        #[serde(default)]
        headers: BTreeMap<String, String>,
        bearer_token_env: Option<String>,
        #[serde(default)]
        required: bool,
        #[serde(default)]
        tools: Tools,
    }

    #[derive(Default, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Tools {
        allow: Option<BTreeSet<String>>,
        #[serde(default)]
        deny: BTreeSet<String>,
        #[serde(default)]
        auto_approve: BTreeSet<String>,
    }

    impl Entry {
        pub(super) fn into_server(self, name: String) -> Result<McpServer, McpConfigError> {
            let remote = |sse: bool, url: String| {
                let (headers, bearer_token_env) =
                    (self.headers.clone(), self.bearer_token_env.clone());
                if sse {
                    McpTransport::Sse {
                        url,
                        headers,
                        bearer_token_env,
                    }
                } else {
                    McpTransport::Http {
                        url,
                        headers,
                        bearer_token_env,
                    }
                }
            };
            let kind = self.kind.as_deref();
            let transport = match (kind, self.command.clone(), self.url.clone()) {
                (None | Some("stdio"), Some(command), None) => {
                    if !self.headers.is_empty() || self.bearer_token_env.is_some() {
                        return Err(invalid(
                            &name,
                            "headers and bearerTokenEnv need an http or sse server",
                        ));
                    }
                    McpTransport::Stdio {
                        command,
                        args: self.args.clone(),
                        env: self.env.clone(),
                    }
                }
                (Some("stdio") | None, None, None) => {
                    return Err(invalid(&name, "a stdio server needs a command"));
                }
                (None | Some("http" | "streamable-http" | "streamableHttp"), None, Some(url)) => {
                    remote(false, url)
                }
                (Some("sse"), None, Some(url)) => remote(true, url),
                (
                    Some(other @ ("http" | "sse" | "streamable-http" | "streamableHttp")),
                    _,
                    None,
                ) => {
                    return Err(invalid(&name, format!("a {other} server needs a url")));
                }
                (Some(other), _, _)
                    if !matches!(
                        other,
                        "stdio" | "http" | "sse" | "streamable-http" | "streamableHttp"
                    ) =>
                {
                    return Err(invalid(&name, format!("unsupported transport {other:?}")));
                }
                _ => {
                    return Err(invalid(
                        &name,
                        "give either a command (stdio) or a url (http, sse), not both",
                    ));
                }
            };
            if !matches!(transport, McpTransport::Stdio { .. })
                && (!self.args.is_empty() || !self.env.is_empty())
            {
                return Err(invalid(&name, "args and env need a stdio server"));
            }
            Ok(McpServer {
                name,
                transport,
                required: self.required,
                tools: McpToolPolicy {
                    allow: self.tools.allow,
                    deny: self.tools.deny,
                    auto_approve: self.tools.auto_approve,
                },
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_json_parses_each_transport() {
        let servers = McpServer::parse_config_json(
            r#"{"mcpServers": {
                "a": {"command": "srv", "args": ["-x"], "env": {"K": "v"}, "required": true},
                "b": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-K": "1"}},
                "c": {"type": "sse", "url": "https://h/sse", "bearerTokenEnv": "TOK",
                      "tools": {"allow": ["x", "y"], "autoApprove": ["x"]}},
                "d": {"url": "https://h/mcp"}
            }}"#,
        )
        .unwrap();
        assert_eq!(servers.len(), 4);
        assert!(servers[0].required);
        assert_eq!(servers[1].transport.kind(), "http");
        assert_eq!(servers[2].transport.kind(), "sse");
        assert_eq!(servers[2].transport.bearer_token_env(), Some("TOK"));
        assert!(servers[2].tools.offers("y") && !servers[2].tools.offers("z"));
        assert_eq!(servers[3].transport.kind(), "http");
    }

    #[test]
    fn bad_servers_are_refused_with_the_reason() {
        let cases = [
            (r#"{"mcpServers": {"a": {}}}"#, "needs a command"),
            (
                r#"{"mcpServers": {"a": {"command": " "}}}"#,
                "needs a command",
            ),
            (
                r#"{"mcpServers": {"a": {"type": "ws", "url": "ws://x"}}}"#,
                "unsupported transport",
            ),
            (r#"{"mcpServers": {"a": {"type": "http"}}}"#, "needs a url"),
            (
                r#"{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}"#,
                "not both",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "ftp://h"}}}"#,
                "absolute http",
            ),
            (
                r#"{"mcpServers": {"a b": {"command": "x"}}}"#,
                "only letters",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "http://h", "headers": {"X": "a\r\nb"}}}}"#,
                "invalid header",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "http://h", "bearerTokenEnv": "1X"}}}"#,
                "variable name",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "tools": {"allow": ["t"], "deny": ["t"]}}}}"#,
                "both allowed and denied",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "tools": {"deny": ["t"], "autoApprove": ["t"]}}}}"#,
                "not offered",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "bogus": 1}}}"#,
                "unknown field",
            ),
            (r#"{"servers": {}}"#, "not an mcpServers"),
        ];
        for (text, want) in cases {
            let err = McpServer::parse_config_json(text).unwrap_err();
            assert!(err.reason.contains(want), "{text}: {err}");
        }
        let twice = [
            McpServer::stdio("a", "x", ["1"]),
            McpServer::http("a", "http://h"),
        ];
        assert!(
            McpServer::validate_all(&twice)
                .unwrap_err()
                .reason
                .contains("two servers")
        );
    }

    #[test]
    fn the_portable_shape_round_trips_through_serde() {
        let mut s = McpServer::http("docs", "https://h/mcp");
        s.tools.deny.insert("rm".into());
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains(r#""type":"http""#), "{text}");
        assert_eq!(serde_json::from_str::<McpServer>(&text).unwrap(), s);
    }
}
