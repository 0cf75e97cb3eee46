//! Equipping a run of a stream-json CLI: the instructions, MCP servers,
//! skills and profile of the request, each in the CLI's own carrier.
//!
//! - Instructions: Claude Code reads `--append-system-prompt-file <file>`;
//!   CodeBuddy Code has no file form of `--append-system-prompt`, but takes
//!   `appendSystemPrompt` in the SDK's `initialize` request (the run then
//!   reads stream-json frames on stdin). Either way the text never travels
//!   on argv.
//! - MCP servers: the CLI's `{"mcpServers": …}` JSON in a per-run file,
//!   `--mcp-config <file>` (`--strict-mcp-config` on request); a bearer
//!   token is the header `Authorization: Bearer ${VAR}`, which the CLI
//!   expands from its environment, and `VAR` is passed through to the child;
//!   auto-approved tools go on the CLI's allow-list
//!   (`--allowedTools=mcp__<server>__<tool>`), so the CLI asks nobody.
//! - Profiles: a dedicated or cloned home exported through the CLI's home
//!   variable ([`Family::home_var`]).
//! - Skills: copied into `<home>/skills/<name>/` for a dedicated or cloned
//!   profile, else into a per-run directory the CLI is pointed at
//!   ([`RunSkills`]).
//!
//! The per-run files live in a [`RunScratch`] that the process keeps until
//! it exits. A resident process is chosen by [`identity`], which hashes the
//! equipment's content, never a per-run path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agent_adaptor_driver::{HOST_TOOL_SERVER, McpServer, McpTransport, Request, ToolScope};
use agent_adaptor_driver_kit::profile::{CloneSeed, prepare_home};
use agent_adaptor_driver_kit::scratch::RunScratch;
use serde_json::{Value, json};

use super::config::Config;
use super::{Family, InstructionsCarrier, RunSkills};

/// What a run's process needs beyond the family's command line.
#[derive(Debug, Default)]
pub(crate) struct Equipment {
    /// The per-run files; dropped (removed) once the process has exited.
    pub(crate) scratch: Option<RunScratch>,
    /// Flags naming the per-run files.
    pub(crate) args: Vec<String>,
    /// Environment set on top of the configuration's.
    pub(crate) env: Vec<(String, PathBuf)>,
    /// Host variables passed through (bearer tokens, by name).
    pub(crate) pass: Vec<String>,
    /// `appendSystemPrompt` for the `initialize` request.
    pub(crate) append_system_prompt: Option<String>,
}

/// Whether the run must read stream-json frames to carry its equipment
/// (CodeBuddy's instructions travel in `initialize`; host tools are an SDK
/// MCP server declared there and served over the control protocol).
pub(crate) fn needs_frames(family: &Family, req: &Request) -> bool {
    (family.instructions == InstructionsCarrier::Initialize && req.instructions.is_some())
        || !req.host_tools.is_empty()
}

/// The equipment's content, for the resident-process signature: a turn
/// with other instructions, servers, skills or profile gets a process of
/// its own.
pub(crate) fn identity(cfg: &Config, req: &Request) -> Value {
    json!({
        "instructions": req.instructions,
        "mcp": mcp_json(cfg, &req.mcp_servers),
        "mcp_strict": req.mcp_strict,
        "skills": req.skills.iter().map(|s| (&s.name, &s.fingerprint)).collect::<Vec<_>>(),
        "profile": req.profile,
        // The CLI lists the host tools once, when the process starts.
        "host_tools": req.host_tools.specs(),
    })
}

/// The run's MCP servers as `(the name in the CLI's tool names, the run's
/// name)`, longest first (a tool name is matched against them in that
/// order).
pub(crate) fn mcp_server_names(
    family: &Family,
    cfg: &Config,
    req: &Request,
) -> Vec<(String, String)> {
    let mut names: Vec<(String, String)> = cfg
        .mcp_servers
        .keys()
        .cloned()
        .chain(req.mcp_servers.iter().map(|s| s.name.clone()))
        .chain((!req.host_tools.is_empty()).then(|| HOST_TOOL_SERVER.to_owned()))
        .map(|name| (tool_prefix_name(family, &name), name))
        .collect();
    names.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
    names.dedup();
    names
}

/// A server's name as the CLI writes it in `mcp__<server>__<tool>`:
/// CodeBuddy turns `-` into `_` (observed: `aa-test` → `mcp__aa_test__lookup`).
fn tool_prefix_name(family: &Family, server: &str) -> String {
    if family.mcp_underscores {
        server.replace('-', "_")
    } else {
        server.to_owned()
    }
}

/// The CLI's name of `tool` of `server`.
pub(crate) fn mcp_tool_name(family: &Family, server: &str, tool: &str) -> String {
    format!("mcp__{}__{tool}", tool_prefix_name(family, server))
}

/// Where the tool `name` lives, and its name in the run's events:
/// `mcp__<server>__<tool>` for one of `servers` (from
/// [`mcp_server_names`]) is that server's tool (its full name kept), and
/// for the host tools' server ([`HOST_TOOL_SERVER`]) a host tool named
/// `<tool>`.
pub(crate) fn tool_scope<'n>(servers: &[(String, String)], name: &'n str) -> (ToolScope, &'n str) {
    let Some(rest) = name.strip_prefix("mcp__") else {
        return (ToolScope::Builtin, name);
    };
    servers
        .iter()
        .find_map(|(prefix, server)| {
            let tool = rest.strip_prefix(prefix.as_str())?.strip_prefix("__")?;
            (!tool.is_empty()).then(|| {
                if server == HOST_TOOL_SERVER {
                    (ToolScope::Host, tool)
                } else {
                    let scope = ToolScope::Mcp {
                        server: server.clone(),
                        tool: tool.to_owned(),
                    };
                    (scope, name)
                }
            })
        })
        .unwrap_or((ToolScope::Builtin, name))
}

/// Prepare the run's equipment: write its files, prepare the profile home
/// and copy the skills.
pub(crate) fn prepare(family: &Family, cfg: &Config, req: &Request) -> std::io::Result<Equipment> {
    let mut eq = Equipment::default();
    let home = prepare_home(
        &req.profile,
        family.driver_type,
        &native_home(family, cfg),
        &CloneSeed {
            copy: family.clone_copy,
            link: family.clone_link,
        },
    )?;
    let mcp = mcp_json(cfg, &req.mcp_servers);
    let wants_scratch =
        req.instructions.is_some() || !mcp.is_empty() || (!req.skills.is_empty() && home.is_none());
    if wants_scratch {
        eq.scratch = Some(RunScratch::new(family.driver_type)?);
    }
    if let Some(text) = &req.instructions {
        match family.instructions {
            InstructionsCarrier::AppendFile { flag, fresh } => {
                let path = scratch(&eq)?.write("instructions.md", text.as_bytes())?;
                eq.args.extend([flag.to_owned(), path_arg(&path)]);
                eq.args.extend(fresh.iter().map(|a| (*a).to_owned()));
            }
            InstructionsCarrier::Initialize => eq.append_system_prompt = Some(text.clone()),
        }
    }
    if !mcp.is_empty() {
        let file = json!({ "mcpServers": mcp }).to_string();
        let path = scratch(&eq)?.write("mcp.json", file.as_bytes())?;
        eq.args.extend(["--mcp-config".to_owned(), path_arg(&path)]);
        eq.pass.extend(
            req.mcp_servers
                .iter()
                .filter_map(|s| s.transport.bearer_token_env().map(str::to_owned)),
        );
    }
    let auto: Vec<String> = req
        .mcp_servers
        .iter()
        .flat_map(|s| {
            s.tools
                .auto_approve
                .iter()
                .map(move |t| mcp_tool_name(family, &s.name, t))
        })
        // The host tools too: their approval is the toolbox's (`host.rs`).
        .chain(
            req.host_tools
                .specs()
                .iter()
                .map(|s| mcp_tool_name(family, HOST_TOOL_SERVER, &s.name)),
        )
        .collect();
    if !auto.is_empty() {
        // The CLI's own allow-list: it runs these without a permission
        // request (so none reaches the host).
        eq.args.push(format!("--allowedTools={}", auto.join(",")));
    }
    if req.mcp_strict {
        eq.args.push("--strict-mcp-config".to_owned());
    }
    if !req.skills.is_empty() {
        let skills_dir = match &home {
            Some(home) => home.join("skills"),
            // Never the user's own home: a per-run directory.
            None => match family.run_skills {
                RunSkills::AddDir(project_dir) => {
                    // Read as a project's `<project dir>/skills/`.
                    let root = scratch(&eq)?.path().join("skills-root");
                    eq.args.extend(["--add-dir".to_owned(), path_arg(&root)]);
                    root.join(project_dir).join("skills")
                }
                RunSkills::EnvVar(var) => {
                    let dir = scratch(&eq)?.path().join("skills");
                    eq.env.push((var.to_owned(), dir.clone()));
                    dir
                }
            },
        };
        agent_adaptor_driver_kit::skills::materialize(&req.skills, &skills_dir)?;
    }
    if let Some(home) = home {
        eq.env.push((family.home_var.to_owned(), home));
    }
    Ok(eq)
}

fn scratch(eq: &Equipment) -> std::io::Result<&RunScratch> {
    eq.scratch
        .as_ref()
        .ok_or_else(|| std::io::Error::other("no run scratch directory"))
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The user's own home of the CLI: the home variable as configured or
/// inherited, else its default under `$HOME`.
fn native_home(family: &Family, cfg: &Config) -> PathBuf {
    if let Some(dir) = cfg
        .env
        .iter()
        .find(|(k, _)| k.as_str() == family.home_var)
        .map(|(_, v)| PathBuf::from(v))
    {
        return dir;
    }
    if let Some(dir) = std::env::var_os(family.home_var) {
        return PathBuf::from(dir);
    }
    let home = cfg
        .env
        .iter()
        .find(|(k, _)| k.as_str() == "HOME")
        .map(|(_, v)| PathBuf::from(v))
        .or_else(|| std::env::var_os("HOME").map(PathBuf::from))
        .unwrap_or_default();
    home.join(family.home_default)
}

/// The run's MCP servers in the CLI's format: the configuration's, then the
/// request's (a request server replaces a configured one of the same name).
fn mcp_json(cfg: &Config, servers: &[McpServer]) -> BTreeMap<String, Value> {
    let mut out = cfg.mcp_servers.clone();
    for server in servers {
        out.insert(server.name.clone(), server_json(server));
    }
    out
}

/// One server as Claude Code and CodeBuddy Code read it.
fn server_json(server: &McpServer) -> Value {
    match &server.transport {
        McpTransport::Stdio { command, args, env } => json!({
            "type": "stdio", "command": command, "args": args, "env": env,
        }),
        McpTransport::Http { url, headers, .. } | McpTransport::Sse { url, headers, .. } => {
            let mut headers = headers.clone();
            if let Some(var) = server.transport.bearer_token_env() {
                // The CLI expands `${VAR}` from its environment: the token
                // itself is never written.
                headers.insert("Authorization".into(), format!("Bearer ${{{var}}}"));
            }
            json!({ "type": server.transport.kind(), "url": url, "headers": headers })
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::streamjson::{CLAUDE, CODEBUDDY};

    #[test]
    fn mcp_tool_names_find_their_server_longest_first() {
        let mut req = Request::new("r", "p");
        req.mcp_servers = ["aa", "aa-test"]
            .map(|n| McpServer::stdio(n, "srv", Vec::<String>::new()))
            .to_vec();
        let codebuddy = mcp_server_names(&CODEBUDDY, &Config::new(&CODEBUDDY), &req);
        assert_eq!(
            tool_scope(&codebuddy, "mcp__aa_test__lookup").0,
            ToolScope::Mcp {
                server: "aa-test".into(),
                tool: "lookup".into()
            }
        );
        let names = mcp_server_names(&CLAUDE, &Config::new(&CLAUDE), &req);
        let scope = |n| tool_scope(&names, n).0;
        assert_eq!(
            scope("mcp__aa-test__lookup"),
            ToolScope::Mcp {
                server: "aa-test".into(),
                tool: "lookup".into()
            }
        );
        assert_eq!(
            scope("mcp__aa__test__x"),
            ToolScope::Mcp {
                server: "aa".into(),
                tool: "test__x".into()
            }
        );
        assert_eq!(scope("mcp__other__x"), ToolScope::Builtin);
        assert_eq!(scope("mcp__aa-test__"), ToolScope::Builtin);
        assert_eq!(scope("Bash"), ToolScope::Builtin);
    }

    /// A toolbox of one tool, `lookup`: `{"n": 1}` at once, or, for an
    /// input with `"slow": true`, a cancellation error once cancelled.
    struct Lookup(Vec<agent_adaptor_driver::HostToolSpec>);

    #[agent_adaptor_driver::async_trait]
    impl agent_adaptor_driver::HostToolbox for Lookup {
        fn specs(&self) -> &[agent_adaptor_driver::HostToolSpec] {
            &self.0
        }
        async fn call(
            &self,
            call: agent_adaptor_driver::HostToolCall,
            _sink: &dyn agent_adaptor_driver::EventSink,
            cancel: &agent_adaptor_driver::CancellationToken,
        ) -> agent_adaptor_driver::HostToolResult {
            use agent_adaptor_driver::{HostToolResult, HostToolStatus};
            if call.input["slow"] == true {
                cancel.cancelled().await;
                return HostToolResult::error(HostToolStatus::Cancelled, "cancelled");
            }
            HostToolResult::ok(json!({"n": 1}))
        }
    }

    /// A request with the host tool `lookup`.
    pub(crate) fn with_host_tool() -> Request {
        let mut req = Request::new("r", "p");
        req.host_tools = agent_adaptor_driver::HostTools::new(std::sync::Arc::new(Lookup(vec![
            agent_adaptor_driver::HostToolSpec {
                name: "lookup".into(),
                description: "Look up.".into(),
                input_schema: json!({"type": "object"}),
                output_schema: None,
                trusted: false,
            },
        ])));
        req
    }

    #[test]
    fn host_tools_are_host_scoped_allowed_and_need_frames() {
        let req = with_host_tool();
        for (family, cli_name) in [
            (&CLAUDE, "mcp__agent-adaptor__lookup"),
            (&CODEBUDDY, "mcp__agent_adaptor__lookup"),
        ] {
            let names = mcp_server_names(family, &Config::new(family), &req);
            assert_eq!(tool_scope(&names, cli_name), (ToolScope::Host, "lookup"));
            assert!(needs_frames(family, &req));
            let eq = prepare(family, &Config::new(family), &req).unwrap();
            assert!(
                eq.args.contains(&format!("--allowedTools={cli_name}")),
                "{:?}",
                eq.args
            );
            assert_ne!(
                identity(&Config::new(family), &req),
                identity(&Config::new(family), &Request::new("r", "p")),
                "a process is chosen by its host tools too"
            );
        }
        // Without host tools, the name is nobody's.
        let bare = Request::new("r", "p");
        let names = mcp_server_names(&CLAUDE, &Config::new(&CLAUDE), &bare);
        assert_eq!(
            tool_scope(&names, "mcp__agent-adaptor__lookup"),
            (ToolScope::Builtin, "mcp__agent-adaptor__lookup")
        );
        assert!(!needs_frames(&CLAUDE, &bare));
    }

    #[test]
    fn a_bearer_token_is_a_reference_never_the_value() {
        let mut server = McpServer::http("docs", "http://127.0.0.1:1/mcp");
        if let McpTransport::Http {
            bearer_token_env, ..
        } = &mut server.transport
        {
            *bearer_token_env = Some("DOCS_TOKEN".into());
        }
        let v = server_json(&server);
        assert_eq!(v["type"], "http");
        assert_eq!(v["headers"]["Authorization"], "Bearer ${DOCS_TOKEN}");
        let mut req = Request::new("r", "p");
        req.mcp_servers = vec![server];
        let eq = prepare(&CLAUDE, &Config::new(&CLAUDE), &req).unwrap();
        assert_eq!(eq.pass, ["DOCS_TOKEN"]);
        let i = eq.args.iter().position(|a| a == "--mcp-config").unwrap();
        let file = std::fs::read_to_string(&eq.args[i + 1]).unwrap();
        assert!(file.contains("${DOCS_TOKEN}"), "{file}");
    }

    #[test]
    fn identity_hashes_content_not_paths() {
        let cfg = Config::new(&CLAUDE);
        let mut req = Request::new("r", "p");
        req.instructions = Some("be brief".into());
        let a = identity(&cfg, &req);
        assert_eq!(a, identity(&cfg, &req));
        req.instructions = Some("be long".into());
        assert_ne!(a, identity(&cfg, &req));
    }
}
