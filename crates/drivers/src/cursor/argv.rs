//! The `agent` (Cursor Agent) command line (pure).
//!
//! `agent -p --output-format stream-json …` with the prompt written to stdin,
//! which is then closed (what vibe-kanban does, protocols.md §3; print mode
//! is also inferred from a piped stdin). The prompt never appears in argv.

use agent_adaptor_driver::Request;

use super::Config;

/// The arguments of one print-mode run.
pub fn argv(cfg: &Config, req: &Request) -> Vec<String> {
    let mut a: Vec<String> = vec!["-p".into(), "--output-format".into(), "stream-json".into()];
    if cfg.force {
        a.push("--force".into());
    }
    if cfg.trust_workspace {
        a.push("--trust".into());
    }
    if let Some(m) = req.model_override.as_ref().or(cfg.model.as_ref()) {
        a.extend(["--model".into(), m.clone()]);
    }
    if let Some(mode) = &cfg.mode {
        a.extend(["--mode".into(), mode.clone()]);
    }
    if let Some(id) = resume_id(req) {
        a.extend(["--resume".into(), id.to_owned()]);
    }
    if !req.mcp_servers.is_empty() || !req.host_tools.is_empty() {
        // The run's servers (the host tools' too) load without an
        // interactive approval.
        a.push("--approve-mcps".into());
    }
    a.extend(cfg.extra_args.iter().cloned());
    a
}

/// The chat to resume, when the request carries one.
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
    fn print_mode_stream_json_prompt_on_stdin() {
        let a = argv(&Config::default(), &Request::new("r", "the prompt"));
        assert_eq!(a[..3], ["-p", "--output-format", "stream-json"]);
        assert!(a.contains(&"--trust".to_owned()));
        assert!(!a.contains(&"--force".to_owned()));
        assert!(!a.iter().any(|x| x.contains("the prompt")));
        assert!(!a.contains(&"--approve-mcps".to_owned()));
        let mut req = Request::new("r", "p");
        req.mcp_servers = vec![agent_adaptor_driver::McpServer::stdio("s", "srv", ["x"])];
        assert!(argv(&Config::default(), &req).contains(&"--approve-mcps".to_owned()));
    }

    #[test]
    fn force_model_mode_and_resume() {
        let cfg = Config {
            force: true,
            trust_workspace: false,
            model: Some("sonnet-4.5".into()),
            mode: Some("plan".into()),
            extra_args: vec!["--workspace".into(), "/repo".into()],
            ..Default::default()
        };
        let mut req = Request::new("r", "p");
        req.session = Some(SessionContext {
            state: Some(SessionState {
                resume_id: "c0ffee".into(),
                ..Default::default()
            }),
            ..Default::default()
        });
        let a = argv(&cfg, &req);
        assert!(a.contains(&"--force".to_owned()));
        assert!(!a.contains(&"--trust".to_owned()));
        assert!(a.windows(2).any(|w| w == ["--model", "sonnet-4.5"]));
        assert!(a.windows(2).any(|w| w == ["--mode", "plan"]));
        assert!(a.windows(2).any(|w| w == ["--resume", "c0ffee"]));
        assert_eq!(a.last().map(String::as_str), Some("/repo"));
    }
}
