//! The `gemini` command line (pure).
//!
//! `gemini -p "" --output-format stream-json …` with the prompt written to
//! stdin, which is then closed. Gemini CLI 0.61 reads a non-TTY stdin in
//! headless mode and uses it as the prompt when `-p` is empty (`-p` is
//! "appended to input on stdin"), so the prompt never appears in argv: no
//! 128 KiB argument limit, nothing in `ps`, and a prompt that starts with
//! `-` stays a prompt. (Its stdin reader gives up after 500 ms without data
//! and truncates at 8 MiB; the driver writes the prompt at spawn, long before
//! the CLI reads it, and rejects larger prompts.)

use agent_adaptor_driver::Request;

use super::{ApprovalMode, Config};

/// The allowed MCP server name of a strict run without servers (not a
/// valid [`McpServer`](agent_adaptor_driver::McpServer) name, so no run's
/// server can have it).
pub const NO_MCP_SERVER: &str = "agent-adaptor:none";

/// The arguments of one headless run.
pub fn argv(cfg: &Config, req: &Request) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "-p".into(),
        String::new(),
        "--output-format".into(),
        "stream-json".into(),
    ];
    if let Some(m) = req.model_override.as_ref().or(cfg.model.as_ref()) {
        a.extend(["-m".into(), m.clone()]);
    }
    match cfg.approval_mode {
        ApprovalMode::Default => {}
        ApprovalMode::Yolo => a.push("--yolo".into()),
        ApprovalMode::AutoEdit => a.extend(["--approval-mode".into(), "auto_edit".into()]),
        ApprovalMode::Plan => a.extend(["--approval-mode".into(), "plan".into()]),
    }
    if cfg.skip_trust {
        a.push("--skip-trust".into());
    }
    for d in &cfg.include_directories {
        a.extend([
            "--include-directories".into(),
            d.to_string_lossy().into_owned(),
        ]);
    }
    if req.mcp_strict {
        // Only the run's servers (extensions' included); an empty list
        // would allow every server, so no servers allow a name none has.
        let mut names: Vec<&str> = req.mcp_servers.iter().map(|s| s.name.as_str()).collect();
        if !req.host_tools.is_empty() {
            // The host's tools, served to this run only.
            names.push(agent_adaptor_driver::HOST_TOOL_SERVER);
        }
        let names = if names.is_empty() {
            NO_MCP_SERVER.to_owned()
        } else {
            names.join(",")
        };
        a.extend(["--allowed-mcp-server-names".into(), names]);
    }
    if let Some(id) = resume_id(req) {
        a.extend(["--resume".into(), id.to_owned()]);
    }
    a.extend(cfg.extra_args.iter().cloned());
    a
}

/// The session to resume, when the request carries one.
pub fn resume_id(req: &Request) -> Option<&str> {
    req.session
        .as_ref()
        .and_then(|s| s.state.as_ref())
        .map(|s| s.resume_id.as_str())
        .filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_adaptor_driver::{SessionContext, SessionState};

    #[test]
    fn headless_stream_json_with_the_prompt_on_stdin() {
        let cfg = Config {
            model: Some("gemini-2.5-flash".into()),
            ..Default::default()
        };
        let a = argv(&cfg, &Request::new("r", "--not-a-flag"));
        assert_eq!(a[..4], ["-p", "", "--output-format", "stream-json"]);
        assert!(a.windows(2).any(|w| w == ["-m", "gemini-2.5-flash"]));
        assert!(a.contains(&"--skip-trust".to_owned()));
        assert!(!a.iter().any(|x| x.contains("not-a-flag")));
        assert!(!a.contains(&"--yolo".to_owned()));
    }

    #[test]
    fn strict_mcp_allows_only_the_runs_servers() {
        let cfg = Config::default();
        let mut req = Request::new("r", "p");
        assert!(!argv(&cfg, &req).contains(&"--allowed-mcp-server-names".to_owned()));
        req.mcp_strict = true;
        let flag = |req: &Request| {
            let a = argv(&cfg, req);
            let i = a.iter().position(|x| x == "--allowed-mcp-server-names");
            i.map(|i| a[i + 1].clone())
        };
        assert_eq!(flag(&req).as_deref(), Some(NO_MCP_SERVER));
        for name in ["kv", "web"] {
            req.mcp_servers.push(agent_adaptor_driver::McpServer {
                name: name.into(),
                transport: agent_adaptor_driver::McpTransport::Stdio {
                    command: "c".into(),
                    args: vec![],
                    env: Default::default(),
                },
                required: false,
                tools: Default::default(),
            });
        }
        assert_eq!(flag(&req).as_deref(), Some("kv,web"));
    }

    #[test]
    fn yolo_resume_and_overrides() {
        let cfg = Config {
            model: Some("m".into()),
            approval_mode: ApprovalMode::Yolo,
            skip_trust: false,
            include_directories: vec!["/extra".into()],
            extra_args: vec!["--debug".into()],
            ..Default::default()
        };
        let mut req = Request::new("r", "p");
        req.model_override = Some("override".into());
        req.session = Some(SessionContext {
            state: Some(SessionState {
                resume_id: "7bca92ed".into(),
                ..Default::default()
            }),
            ..Default::default()
        });
        let a = argv(&cfg, &req);
        assert!(a.windows(2).any(|w| w == ["-m", "override"]));
        assert!(a.contains(&"--yolo".to_owned()));
        assert!(!a.contains(&"--skip-trust".to_owned()));
        assert!(
            a.windows(2)
                .any(|w| w == ["--include-directories", "/extra"])
        );
        assert!(a.windows(2).any(|w| w == ["--resume", "7bca92ed"]));
        assert_eq!(a.last().map(String::as_str), Some("--debug"));
        let plan = Config {
            approval_mode: ApprovalMode::Plan,
            ..Default::default()
        };
        assert!(
            argv(&plan, &req)
                .windows(2)
                .any(|w| w == ["--approval-mode", "plan"])
        );
    }
}
