//! Every driver the inspector knows, as data: the five CLI drivers (their
//! facts are the probes' [`CliFacts`]), every named ACP recipe, and the
//! LLM providers.

use crate::acp::{AcpAgent, ModelSetting, Recipe};
use crate::probe_common::CliFacts;

use super::report::DriverKind;

/// What inspection needs to know about one driver.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject {
    /// The name the CLI selects it by.
    pub name: &'static str,
    /// Its family.
    pub kind: DriverKind,
    /// A human name.
    pub display_name: &'static str,
    /// The programs looked up on the child's `PATH`, in order (empty for an
    /// HTTP API).
    pub programs: &'static [&'static str],
    /// The host variables the program documents (its allowlist).
    pub documented: &'static [&'static str],
    /// The SDK's own settings for the child.
    pub defaults: &'static [(&'static str, &'static str)],
    /// Where the program keeps configuration, models and credentials, when
    /// known.
    pub facts: Option<&'static CliFacts>,
    /// Credential variables beyond the facts' (an ACP recipe's API key, an
    /// LLM provider's key).
    pub key_env: &'static [&'static str],
    /// The variable naming the model, for an ACP recipe that has one.
    pub model_env: Option<&'static str>,
    /// The oldest version the project verified the driver against.
    pub verified: Option<&'static str>,
}

/// The CLI drivers, in the order the CLI lists them.
fn clis() -> [Subject; 5] {
    use crate::streamjson::probe::{CLAUDE_FACTS, CODEBUDDY_FACTS};
    use crate::streamjson::{CLAUDE, CODEBUDDY};
    fn cli(
        name: &'static str,
        display_name: &'static str,
        programs: &'static [&'static str],
        documented: &'static [&'static str],
        facts: &'static CliFacts,
        verified: Option<&'static str>,
    ) -> Subject {
        Subject {
            name,
            kind: DriverKind::Cli,
            display_name,
            programs,
            documented,
            defaults: &[],
            facts: Some(facts),
            key_env: &[],
            model_env: None,
            verified,
        }
    }
    [
        Subject {
            defaults: CLAUDE.env_defaults,
            ..cli(
                "claude",
                "Claude Code",
                &["claude"],
                CLAUDE.env_allowlist,
                &CLAUDE_FACTS,
                Some("2.1.332"),
            )
        },
        cli(
            "codex",
            "Codex",
            &["codex"],
            crate::codex::ENV_ALLOWLIST,
            &crate::codex::probe::FACTS,
            Some("0.171.0"),
        ),
        cli(
            "gemini",
            "Gemini CLI",
            &["gemini"],
            crate::gemini::ENV_ALLOWLIST,
            &crate::gemini::probe::FACTS,
            Some("0.61.0"),
        ),
        // Installed as `agent`, with the legacy alias `cursor-agent`; never
        // verified offline (no custom endpoint).
        cli(
            "cursor",
            "Cursor Agent",
            &["agent", "cursor-agent"],
            crate::cursor::ENV_ALLOWLIST,
            &crate::cursor::probe::FACTS,
            None,
        ),
        Subject {
            defaults: CODEBUDDY.env_defaults,
            ..cli(
                "codebuddy",
                "CodeBuddy Code",
                &["codebuddy"],
                CODEBUDDY.env_allowlist,
                &CODEBUDDY_FACTS,
                Some("2.117.0"),
            )
        },
    ]
}

/// An ACP recipe: the facts of the CLI it wraps (where it has the same
/// home and credentials), its API key variable, its version verified.
fn acp(name: &'static str, recipe: &'static Recipe) -> Subject {
    use crate::streamjson::probe::{CLAUDE_FACTS, CODEBUDDY_FACTS};
    let (facts, verified): (Option<&'static CliFacts>, _) = match name {
        "gemini" => (Some(&crate::gemini::probe::FACTS), Some("0.61.0")),
        "claude" => (Some(&CLAUDE_FACTS), Some("0.23.1")),
        "codex" => (Some(&crate::codex::probe::FACTS), Some("0.16.0")),
        "codebuddy" => (Some(&CODEBUDDY_FACTS), Some("2.117.0")),
        "cursor" => (Some(&crate::cursor::probe::FACTS), None),
        "qwen" => (None, Some("0.24.4")),
        "copilot" => (None, Some("1.0.102")),
        "opencode" => (None, Some("1.18.33")),
        _ => (None, None),
    };
    Subject {
        name: recipe.driver_type,
        kind: DriverKind::Acp,
        display_name: recipe.display_name,
        programs: std::slice::from_ref(&recipe.program),
        documented: recipe.env_allowlist,
        defaults: &[],
        facts,
        key_env: match &recipe.endpoint {
            Some(e) => std::slice::from_ref(&e.api_key),
            None => &[],
        },
        model_env: match recipe.model {
            ModelSetting::Env(var) => Some(var),
            _ => None,
        },
        verified,
    }
}

/// The LLM providers and the variable each reads its API key from.
pub(crate) static LLM_PROVIDERS: [(&str, &str, &str); 4] = [
    ("llm:openai", "OpenAI", "OPENAI_API_KEY"),
    ("llm:anthropic", "Anthropic", "ANTHROPIC_API_KEY"),
    ("llm:gemini", "Google Gemini", "GEMINI_API_KEY"),
    ("llm:openrouter", "OpenRouter", "OPENROUTER_API_KEY"),
];

fn llm(index: usize) -> Subject {
    let (name, display_name, _) = LLM_PROVIDERS[index];
    Subject {
        name,
        kind: DriverKind::Llm,
        display_name,
        programs: &[],
        documented: &[],
        defaults: &[],
        facts: None,
        key_env: std::slice::from_ref(&LLM_PROVIDERS[index].2),
        model_env: None,
        verified: None,
    }
}

/// Every driver: the CLIs, the ACP agents, the LLM providers.
pub(crate) fn all() -> Vec<Subject> {
    let mut all: Vec<Subject> = clis().into();
    all.extend(
        AcpAgent::NAMED
            .iter()
            .map(|(name, agent)| acp(name, agent.recipe())),
    );
    all.extend((0..LLM_PROVIDERS.len()).map(llm));
    all
}
