//! The ACP driver's configuration: its fields, defaults and validation.

use std::path::PathBuf;
use std::time::Duration;

use agent_adaptor_driver::ConfigError;
use serde::Serialize;

use super::argv::{AcpAgent, ModelSetting};
use crate::child_env::{EnvPolicy, EnvVars};
use crate::one_shot;

/// The default bound of one terminal's kept output (`terminal/create`
/// without `outputByteLimit`): 1 MiB.
pub const DEFAULT_TERMINAL_OUTPUT: usize = 1024 * 1024;

/// ACP driver configuration. Every field but the environment policy and
/// the graces is provider-visible and part of the session config
/// fingerprint (environment values included: hashed, never logged).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// Which agent, i.e. which launch recipe.
    pub agent: AcpAgent,
    /// The program to start instead of the recipe's (a full path, or the
    /// script of an npm package).
    pub command: Option<PathBuf>,
    /// The model, passed the recipe's way ([`ModelSetting`]).
    pub model: Option<String>,
    /// The working directory when the request names none; the session's
    /// `cwd` and the root every served file and terminal is confined to.
    pub cwd: Option<PathBuf>,
    /// Extra arguments, appended last.
    pub extra_args: Vec<String>,
    /// Environment bindings (API keys, base URLs; see
    /// [`Recipe::offline_env`](super::Recipe::offline_env)).
    pub env: EnvVars,
    /// Which host variables the agent inherits (default: the allowlist
    /// plus the recipe's prefixes; see [`crate::child_env`]).
    #[serde(skip)]
    pub env_policy: EnvPolicy,
    /// The most output bytes a terminal keeps when the agent names no
    /// limit (the oldest are dropped first).
    #[serde(skip)]
    pub terminal_output_limit: usize,
    /// On cancel: the wait after stdin closed before SIGTERM, and twice
    /// that before SIGKILL.
    #[serde(skip)]
    pub cancel_grace: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            agent: AcpAgent::Gemini,
            command: None,
            model: None,
            cwd: None,
            extra_args: Vec::new(),
            env: EnvVars::new(),
            env_policy: EnvPolicy::default(),
            terminal_output_limit: DEFAULT_TERMINAL_OUTPUT,
            cancel_grace: Duration::from_millis(500),
        }
    }
}

impl Config {
    /// The configuration of `agent` with everything else default.
    pub fn for_agent(agent: AcpAgent) -> Self {
        Config {
            agent,
            ..Default::default()
        }
    }

    /// Check the configuration before any run.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let recipe = self.agent.recipe();
        let err = |reason: String| ConfigError {
            driver: recipe.driver_type.into(),
            reason,
        };
        let program = match (&self.command, &self.agent) {
            (Some(c), _) => c.clone(),
            (None, AcpAgent::Custom { program, .. }) => program.clone(),
            (None, _) => PathBuf::from(recipe.program),
        };
        one_shot::validate_common(
            recipe.driver_type,
            &program,
            &self.env_policy,
            &self.env,
            &self.extra_args,
            &[],
        )?;
        if let Some(m) = &self.model {
            if m.trim().is_empty() {
                return Err(err("model is empty".into()));
            }
            if recipe.model == ModelSetting::Unsupported {
                return Err(err(format!(
                    "{} has no known way to choose a model: leave model unset",
                    recipe.display_name
                )));
            }
        }
        if self.terminal_output_limit == 0 {
            return Err(err("terminal_output_limit is 0".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_needs_a_way_to_pass_it() {
        assert!(Config::default().validate().is_ok());
        let gemini = Config {
            model: Some("m".into()),
            ..Default::default()
        };
        assert!(gemini.validate().is_ok());
        let opencode = Config {
            model: Some("m".into()),
            ..Config::for_agent(AcpAgent::Opencode)
        };
        assert!(opencode.validate().is_err());
        let empty = Config::for_agent(AcpAgent::Custom {
            program: "".into(),
            args: vec![],
        });
        assert!(empty.validate().is_err());
    }
}
