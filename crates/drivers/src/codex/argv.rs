//! The `codex exec` and `codex app-server` command lines (pure).

use std::path::Path;

use agent_adaptor_driver::Request;

use super::Config;

/// `codex exec --json …` (or `codex exec resume … <thread>`), with the
/// prompt read from stdin (`-`), never from an open pipe. `equip` is the
/// run's equipment as `-c` overrides (bounded by the driver).
pub fn exec_argv(
    cfg: &Config,
    req: &Request,
    cwd: Option<&Path>,
    schema: Option<&Path>,
    equip: &[String],
) -> Vec<String> {
    let resume = req
        .session
        .as_ref()
        .and_then(|s| s.state.as_ref())
        .map(|s| s.resume_id.as_str())
        .filter(|id| !id.is_empty());
    let mut a: Vec<String> = vec!["exec".into()];
    if resume.is_some() {
        a.push("resume".into());
    }
    a.push("--json".into());
    if cfg.skip_git_repo_check {
        a.push("--skip-git-repo-check".into());
    }
    if let Some(m) = req.model_override.as_ref().or(cfg.model.as_ref()) {
        a.extend(["-m".into(), m.clone()]);
    }
    if let Some(s) = &cfg.sandbox {
        a.extend(["-s".into(), s.clone()]);
    }
    if let Some(p) = &cfg.approval_policy {
        a.extend(["-c".into(), format!("approval_policy={p}")]);
    }
    if resume.is_none()
        && let Some(dir) = cwd
    {
        a.extend(["--cd".into(), dir.to_string_lossy().into_owned()]);
    }
    for d in &cfg.add_dirs {
        a.extend(["--add-dir".into(), d.to_string_lossy().into_owned()]);
    }
    a.extend(config_overrides(cfg));
    a.extend(equip.iter().cloned());
    if let Some(path) = schema {
        a.extend([
            "--output-schema".into(),
            path.to_string_lossy().into_owned(),
        ]);
    }
    a.extend(cfg.extra_args.iter().cloned());
    if let Some(id) = resume {
        a.push(id.to_owned());
    }
    a.push("-".into());
    a
}

/// `codex app-server` (stdio). Model, sandbox, approval policy and working
/// directory travel in `thread/start` / `thread/resume` instead.
pub fn app_server_argv(cfg: &Config) -> Vec<String> {
    let mut a: Vec<String> = vec!["app-server".into()];
    a.extend(config_overrides(cfg));
    a.extend(cfg.extra_args.iter().cloned());
    a
}

/// The `-c key=value` overrides both transports pass: the reasoning effort,
/// then [`Config::overrides`].
fn config_overrides(cfg: &Config) -> Vec<String> {
    let mut a = Vec::new();
    if let Some(e) = &cfg.reasoning_effort {
        a.extend(["-c".into(), format!("model_reasoning_effort={e}")]);
    }
    for (k, v) in &cfg.overrides {
        a.extend(["-c".into(), format!("{k}={v}")]);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_adaptor_driver::{SessionContext, SessionState};

    #[test]
    fn exec_reads_the_prompt_from_stdin() {
        let mut cfg = Config {
            model: Some("gpt-5.4".into()),
            ..Default::default()
        };
        cfg.overrides.insert("model_provider".into(), "mock".into());
        let a = exec_argv(
            &cfg,
            &Request::new("r", "p"),
            Some(Path::new("/repo")),
            None,
            &[],
        );
        assert_eq!(a[..3], ["exec", "--json", "--skip-git-repo-check"]);
        assert!(a.windows(2).any(|w| w == ["-m", "gpt-5.4"]));
        assert!(a.windows(2).any(|w| w == ["-c", "model_provider=mock"]));
        assert!(a.windows(2).any(|w| w == ["--cd", "/repo"]));
        assert_eq!(a.last().map(String::as_str), Some("-"));
    }

    #[test]
    fn resume_names_the_thread_before_the_prompt() {
        let cfg = Config::default();
        let mut req = Request::new("r", "p");
        req.session = Some(SessionContext {
            state: Some(SessionState {
                resume_id: "01a2".into(),
                ..Default::default()
            }),
            ..Default::default()
        });
        let a = exec_argv(&cfg, &req, None, Some(Path::new("/tmp/s.json")), &[]);
        assert_eq!(a[..3], ["exec", "resume", "--json"]);
        assert_eq!(a[a.len() - 2..], ["01a2", "-"]);
        assert!(
            a.windows(2)
                .any(|w| w == ["--output-schema", "/tmp/s.json"])
        );
    }

    #[test]
    fn app_server_takes_only_config_overrides() {
        let mut cfg = Config {
            model: Some("m".into()),
            sandbox: Some("workspace-write".into()),
            reasoning_effort: Some("low".into()),
            ..Default::default()
        };
        cfg.overrides.insert("model_provider".into(), "mock".into());
        let a = app_server_argv(&cfg);
        assert_eq!(
            a,
            [
                "app-server",
                "-c",
                "model_reasoning_effort=low",
                "-c",
                "model_provider=mock"
            ]
        );
    }
}
