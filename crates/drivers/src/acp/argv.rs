//! Each ACP agent is a launch recipe: data, never a branch in the session
//! code. A recipe names the program and the arguments that make it speak
//! ACP on stdio, the host variables its CLI documents (for the child
//! environment allowlist), how a model is chosen, and how it is pointed at
//! an OpenAI-, Anthropic- or Gemini-compatible model server (variables the
//! driver sets; [`Recipe::offline_env`]).
//!
//! What is known of each agent comes from `protocols.md` §5–7; Gemini CLI
//! 0.61 is proven offline (`tests/real_acp_gemini.rs`).

use std::path::PathBuf;

use serde::Serialize;

use super::Config;

/// Which ACP agent a driver runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AcpAgent {
    /// Gemini CLI: `gemini --acp`.
    Gemini,
    /// Qwen Code: `qwen --acp`.
    Qwen,
    /// GitHub Copilot CLI: `copilot --acp`.
    Copilot,
    /// opencode: `opencode acp`.
    Opencode,
    /// Claude Code through Zed's adapter `@zed-industries/claude-agent-acp`.
    Claude,
    /// Codex through Zed's adapter `@zed-industries/codex-acp`.
    Codex,
    /// CodeBuddy Code: `codebuddy --acp`.
    CodeBuddy,
    /// Cursor Agent: `cursor-agent acp`.
    Cursor,
    /// Any other ACP agent: a program and its arguments.
    Custom {
        /// The program.
        program: PathBuf,
        /// Its arguments (whatever makes it speak ACP on stdio).
        args: Vec<String>,
    },
}

/// How a recipe's agent is told which model to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelSetting {
    /// A command-line flag, e.g. `-m MODEL`.
    Flag(&'static str),
    /// An environment variable.
    Env(&'static str),
    /// No known way: a configured model is refused before launch.
    Unsupported,
}

/// How a recipe's agent is pointed at a model server of the host's choice
/// (the offline tests' mock, a gateway).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// The variable holding the base URL.
    pub base_url: &'static str,
    /// What the recipe appends to the server's root URL (e.g. `/v1`).
    pub base_url_suffix: &'static str,
    /// The variable holding the API key.
    pub api_key: &'static str,
    /// Fixed variables the agent needs besides (e.g. an offline switch).
    pub fixed: &'static [(&'static str, &'static str)],
}

/// One ACP agent's launch recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recipe {
    /// The driver type (`acp:<name>`, or `acp` for a custom command).
    pub driver_type: &'static str,
    /// The display name.
    pub display_name: &'static str,
    /// The program looked up on `PATH`.
    pub program: &'static str,
    /// The arguments that make it speak ACP on stdio.
    pub args: &'static [&'static str],
    /// The host variables its CLI documents (names or `PREFIX_*`).
    pub env_allowlist: &'static [&'static str],
    /// How a model is chosen.
    pub model: ModelSetting,
    /// How it reaches a model server of the host's choice, when known.
    pub endpoint: Option<Endpoint>,
}

/// Gemini CLI (`protocols.md` §5, §7): the Gemini API through
/// `GOOGLE_GEMINI_BASE_URL`; its home's `settings.json` must select
/// `gemini-api-key` auth (as for the stream-json driver).
pub const GEMINI: Recipe = Recipe {
    driver_type: "acp:gemini",
    display_name: "Gemini CLI (ACP)",
    program: "gemini",
    args: &["--acp"],
    env_allowlist: crate::gemini::ENV_ALLOWLIST,
    model: ModelSetting::Flag("-m"),
    endpoint: Some(Endpoint {
        base_url: "GOOGLE_GEMINI_BASE_URL",
        base_url_suffix: "",
        api_key: "GEMINI_API_KEY",
        fixed: &[],
    }),
};

/// Qwen Code (§6): OpenAI Chat Completions (its `settings.json` selects
/// `openai` auth).
pub const QWEN: Recipe = Recipe {
    driver_type: "acp:qwen",
    display_name: "Qwen Code (ACP)",
    program: "qwen",
    args: &["--acp"],
    env_allowlist: &["QWEN_*", "OPENAI_*", "DASHSCOPE_*"],
    model: ModelSetting::Env("OPENAI_MODEL"),
    endpoint: Some(Endpoint {
        base_url: "OPENAI_BASE_URL",
        base_url_suffix: "/v1",
        api_key: "OPENAI_API_KEY",
        fixed: &[],
    }),
};

/// GitHub Copilot CLI (§6): its official offline mode.
pub const COPILOT: Recipe = Recipe {
    driver_type: "acp:copilot",
    display_name: "GitHub Copilot CLI (ACP)",
    program: "copilot",
    args: &["--acp"],
    env_allowlist: &["COPILOT_*", "GH_*", "GITHUB_*"],
    model: ModelSetting::Env("COPILOT_MODEL"),
    endpoint: Some(Endpoint {
        base_url: "COPILOT_PROVIDER_BASE_URL",
        base_url_suffix: "/v1",
        api_key: "COPILOT_PROVIDER_API_KEY",
        fixed: &[
            ("COPILOT_OFFLINE", "true"),
            ("COPILOT_PROVIDER_TYPE", "openai"),
            ("COPILOT_PROVIDER_WIRE_API", "completions"),
            ("COPILOT_AUTO_UPDATE", "false"),
        ],
    }),
};

/// opencode (§6): a provider is configured in `opencode.json`, not by
/// variables; no endpoint recipe yet.
pub const OPENCODE: Recipe = Recipe {
    driver_type: "acp:opencode",
    display_name: "opencode (ACP)",
    program: "opencode",
    args: &["acp"],
    env_allowlist: &["OPENCODE_*"],
    model: ModelSetting::Unsupported,
    endpoint: None,
};

/// Claude Code through `claude-agent-acp` (§7; it wraps the Claude Agent
/// SDK, which spawns `claude`). `ANTHROPIC_MODEL` alone does not choose its
/// model (its `settings.json` does), so a model is refused for now.
pub const CLAUDE: Recipe = Recipe {
    driver_type: "acp:claude",
    display_name: "Claude Code (ACP adapter)",
    program: "claude-agent-acp",
    args: &[],
    env_allowlist: &["ANTHROPIC_*", "CLAUDE_*"],
    model: ModelSetting::Unsupported,
    endpoint: Some(Endpoint {
        base_url: "ANTHROPIC_BASE_URL",
        base_url_suffix: "",
        api_key: "ANTHROPIC_API_KEY",
        fixed: &[],
    }),
};

/// Codex through `codex-acp` (§7; it links the Codex crates).
pub const CODEX: Recipe = Recipe {
    driver_type: "acp:codex",
    display_name: "Codex (ACP adapter)",
    program: "codex-acp",
    args: &[],
    env_allowlist: &["OPENAI_*", "CODEX_*"],
    model: ModelSetting::Unsupported,
    endpoint: None,
};

/// CodeBuddy Code (§4, §7).
pub const CODEBUDDY: Recipe = Recipe {
    driver_type: "acp:codebuddy",
    display_name: "CodeBuddy Code (ACP)",
    program: "codebuddy",
    args: &["--acp"],
    env_allowlist: &["CODEBUDDY_*"],
    model: ModelSetting::Flag("--model"),
    endpoint: None,
};

/// Cursor Agent (§3, §7): `cursor-agent acp` (also installed as `agent`).
pub const CURSOR: Recipe = Recipe {
    driver_type: "acp:cursor",
    display_name: "Cursor Agent (ACP)",
    program: "cursor-agent",
    args: &["acp"],
    env_allowlist: &["CURSOR_*"],
    model: ModelSetting::Flag("--model"),
    endpoint: None,
};

/// A custom command speaking ACP.
pub const CUSTOM: Recipe = Recipe {
    driver_type: "acp",
    display_name: "ACP agent",
    program: "",
    args: &[],
    env_allowlist: &[],
    model: ModelSetting::Unsupported,
    endpoint: None,
};

impl AcpAgent {
    /// Every named agent (not [`AcpAgent::Custom`]), with its CLI name
    /// (`acp:<name>`).
    pub const NAMED: [(&'static str, AcpAgent); 8] = [
        ("gemini", AcpAgent::Gemini),
        ("qwen", AcpAgent::Qwen),
        ("copilot", AcpAgent::Copilot),
        ("opencode", AcpAgent::Opencode),
        ("claude", AcpAgent::Claude),
        ("codex", AcpAgent::Codex),
        ("codebuddy", AcpAgent::CodeBuddy),
        ("cursor", AcpAgent::Cursor),
    ];

    /// The agent named `name` (`gemini`, `qwen` …).
    pub fn named(name: &str) -> Option<AcpAgent> {
        Self::NAMED
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, a)| a.clone())
    }

    /// The named agent whose recipe is `recipe` (`None` for the custom
    /// recipe).
    pub fn of_recipe(recipe: &Recipe) -> Option<AcpAgent> {
        Self::NAMED
            .iter()
            .find(|(_, a)| a.recipe() == recipe)
            .map(|(_, a)| a.clone())
    }

    /// The agent's recipe.
    pub fn recipe(&self) -> &'static Recipe {
        match self {
            AcpAgent::Gemini => &GEMINI,
            AcpAgent::Qwen => &QWEN,
            AcpAgent::Copilot => &COPILOT,
            AcpAgent::Opencode => &OPENCODE,
            AcpAgent::Claude => &CLAUDE,
            AcpAgent::Codex => &CODEX,
            AcpAgent::CodeBuddy => &CODEBUDDY,
            AcpAgent::Cursor => &CURSOR,
            AcpAgent::Custom { .. } => &CUSTOM,
        }
    }
}

impl Recipe {
    /// The variables that point the agent at the model server whose root
    /// URL is `base_url`, with `api_key`; `None` when the recipe knows no
    /// way.
    pub fn offline_env(&self, base_url: &str, api_key: &str) -> Option<Vec<(String, String)>> {
        let e = self.endpoint?;
        let url = format!("{}{}", base_url.trim_end_matches('/'), e.base_url_suffix);
        let mut env = vec![
            (e.base_url.to_owned(), url),
            (e.api_key.to_owned(), api_key.to_owned()),
        ];
        env.extend(
            e.fixed
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        Some(env)
    }
}

/// The program and arguments of a run of `cfg` (the model flag, when the
/// recipe has one, then the configured extra arguments).
pub fn command_line(cfg: &Config, model: Option<&str>) -> (PathBuf, Vec<String>) {
    let recipe = cfg.agent.recipe();
    let (program, mut args) = match &cfg.agent {
        AcpAgent::Custom { program, args } => (program.clone(), args.clone()),
        _ => (
            PathBuf::from(recipe.program),
            recipe.args.iter().map(|a| (*a).to_owned()).collect(),
        ),
    };
    let program = cfg.command.clone().unwrap_or(program);
    if let (ModelSetting::Flag(flag), Some(m)) = (recipe.model, model) {
        args.extend([flag.to_owned(), m.to_owned()]);
    }
    args.extend(cfg.extra_args.iter().cloned());
    (program, args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_agent_has_its_own_recipe() {
        let mut types: Vec<&str> = AcpAgent::NAMED
            .iter()
            .map(|(n, a)| {
                let r = a.recipe();
                assert_eq!(r.driver_type, format!("acp:{n}"));
                assert!(!r.program.is_empty());
                r.driver_type
            })
            .collect();
        types.dedup();
        assert_eq!(types.len(), 8);
        assert_eq!(AcpAgent::named("qwen"), Some(AcpAgent::Qwen));
        assert_eq!(AcpAgent::named("nope"), None);
        assert_eq!(AcpAgent::of_recipe(&CURSOR), Some(AcpAgent::Cursor));
        assert_eq!(AcpAgent::of_recipe(&CUSTOM), None);
    }

    #[test]
    fn the_command_line_follows_the_recipe() {
        let cfg = Config {
            agent: AcpAgent::Gemini,
            extra_args: vec!["--debug".into()],
            ..Default::default()
        };
        let (program, args) = command_line(&cfg, Some("gemini-2.5-flash"));
        assert_eq!(program, PathBuf::from("gemini"));
        assert_eq!(args, ["--acp", "-m", "gemini-2.5-flash", "--debug"]);
        let custom = Config {
            agent: AcpAgent::Custom {
                program: "/opt/agent".into(),
                args: vec!["serve".into(), "--stdio".into()],
            },
            ..Default::default()
        };
        let (program, args) = command_line(&custom, None);
        assert_eq!(program, PathBuf::from("/opt/agent"));
        assert_eq!(args, ["serve", "--stdio"]);
    }

    #[test]
    fn offline_settings_are_variables() {
        let env = COPILOT.offline_env("http://127.0.0.1:9/", "k").unwrap();
        assert!(env.contains(&(
            "COPILOT_PROVIDER_BASE_URL".into(),
            "http://127.0.0.1:9/v1".into()
        )));
        assert!(env.contains(&("COPILOT_OFFLINE".into(), "true".into())));
        assert!(OPENCODE.offline_env("http://x", "k").is_none());
    }
}
