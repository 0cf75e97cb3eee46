//! Which driver a command uses, and what can be told about each driver
//! without running it (binary on `PATH`, credentials present).
//!
//! Without `--driver`, the first agent CLI that is on `PATH` **and** has
//! credentials is used (claude, codex, gemini, cursor, codebuddy), else the
//! `llm` driver with the first API whose key variable is set, else the
//! playground. `--driver X` never falls back: if X cannot run, the command
//! fails and says why.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_adaptor_driver::{Driver, redact_url};
use agent_adaptor_drivers::acp::argv::CUSTOM;
use agent_adaptor_drivers::acp::{self, AcpAgent, Recipe};
use agent_adaptor_drivers::child_env::EnvPolicy;
use agent_adaptor_llm::agent::LlmDriver;
use agent_adaptor_llm::{
    AnthropicMessages, GeminiGenerateContent, OpenAiChat, OpenAiResponses, OpenRouter, Provider,
};
use serde_json::Value;

use crate::args::{DriverArgs, DriverName, ProviderName};
use crate::error::CliError;
use crate::playground::Playground;

/// The driver a command runs with.
pub struct Selected {
    /// The driver.
    pub driver: Arc<dyn Driver>,
    /// Which one.
    pub name: DriverName,
    /// One line saying what runs (printed at start).
    pub label: String,
    /// The playground, when that is what runs (keeps its server alive).
    pub playground: Option<Playground>,
}

/// Where an agent CLI keeps its credentials, and what its binary is called.
struct CliFacts {
    name: DriverName,
    programs: &'static [&'static str],
    env: &'static [&'static str],
    /// (variable naming a directory, default directory under `$HOME`, file).
    files: &'static [(&'static str, &'static str, &'static str)],
}

const CLIS: [CliFacts; 5] = [
    CliFacts {
        name: DriverName::Claude,
        programs: &["claude"],
        env: &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CODE_USE_VERTEX",
        ],
        files: &[("CLAUDE_CONFIG_DIR", ".claude", ".credentials.json")],
    },
    CliFacts {
        name: DriverName::Codex,
        programs: &["codex"],
        env: &["OPENAI_API_KEY", "CODEX_API_KEY"],
        files: &[("CODEX_HOME", ".codex", "auth.json")],
    },
    CliFacts {
        name: DriverName::Gemini,
        programs: &["gemini"],
        env: &[
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GOOGLE_GENAI_USE_VERTEXAI",
            "GOOGLE_APPLICATION_CREDENTIALS",
        ],
        files: &[("", ".gemini", "oauth_creds.json")],
    },
    CliFacts {
        name: DriverName::Cursor,
        programs: &["agent", "cursor-agent"],
        env: &["CURSOR_API_KEY"],
        files: &[],
    },
    CliFacts {
        name: DriverName::Codebuddy,
        programs: &["codebuddy"],
        env: &["CODEBUDDY_API_KEY", "CODEBUDDY_AUTH_TOKEN"],
        files: &[],
    },
];

/// What is known about one driver on this machine.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Probe {
    /// The driver.
    pub driver: &'static str,
    /// The binary found on `PATH` (`None` for llm, or when missing).
    pub binary: Option<PathBuf>,
    /// The programs looked for.
    pub programs: Vec<&'static str>,
    /// Evidence of credentials: variable names that are set, files that
    /// exist (never their values).
    pub auth: Vec<String>,
    /// Where credentials were looked for.
    pub auth_sources: Vec<String>,
}

impl Probe {
    /// A binary was found and credentials are present.
    pub fn usable(&self) -> bool {
        self.binary.is_some() && !self.auth.is_empty()
    }
}

fn var_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// `program` on `PATH` (an executable file), like `which`.
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

/// `program` on `PATH` as a file, executable or not: what a run with an
/// explicit `--driver` starts, so a file that is not executable is
/// reported as such by the spawn, not as "not found".
fn file_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Probe an agent CLI driver (not `llm`).
pub fn probe_cli(name: DriverName) -> Option<Probe> {
    let facts = CLIS.iter().find(|f| f.name == name)?;
    let binary = facts.programs.iter().find_map(|p| which(p));
    let mut auth = Vec::new();
    let mut sources = Vec::new();
    for var in facts.env {
        sources.push(format!("${var}"));
        if var_set(var) {
            auth.push(format!("${var}"));
        }
    }
    for (dir_var, default_dir, file) in facts.files {
        let dir = (!dir_var.is_empty())
            .then(|| std::env::var_os(dir_var).filter(|d| !d.is_empty()))
            .flatten()
            .map(PathBuf::from)
            .or_else(|| home().map(|h| h.join(default_dir)));
        if let Some(dir) = dir {
            let path = dir.join(file);
            sources.push(path.display().to_string());
            if path.is_file() {
                auth.push(path.display().to_string());
            }
        }
    }
    Some(Probe {
        driver: name.as_str(),
        binary,
        programs: facts.programs.to_vec(),
        auth,
        auth_sources: sources,
    })
}

/// The first provider whose key variable is set.
pub fn provider_from_env() -> Option<ProviderName> {
    ProviderName::ALL.into_iter().find(|p| var_set(p.key_var()))
}

/// Build the `llm` driver for `provider`.
pub fn llm_driver(
    provider: ProviderName,
    model: Option<&str>,
    base_url: Option<&str>,
) -> Result<LlmDriver, CliError> {
    let key = std::env::var(provider.key_var()).unwrap_or_default();
    if key.is_empty() && base_url.is_none() {
        return Err(CliError::failure(format!(
            "{} is not set (the llm driver with --provider {} reads its API key from it)",
            provider.key_var(),
            provider.as_str()
        )));
    }
    let name = provider.as_str();
    let mut p = match provider {
        ProviderName::Openai => Provider::new(name, OpenAiChat::new()),
        ProviderName::OpenaiResponses => Provider::new(name, OpenAiResponses::new()),
        ProviderName::Anthropic => Provider::new(name, AnthropicMessages::new()),
        ProviderName::Gemini => Provider::new(name, GeminiGenerateContent::new()),
        ProviderName::Openrouter => Provider::new(name, OpenRouter::new()),
    };
    if let Some(url) = base_url {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(CliError::usage(format!(
                "--base-url {:?} is not an http(s) URL",
                redact_url(url)
            )));
        }
        p = p.base_url(url);
    }
    if !key.is_empty() {
        p = p.api_key(&key);
    }
    let model = model.unwrap_or(provider.default_model());
    Ok(LlmDriver::new(p, model))
}

/// A `--env` value: a variable name, or a prefix followed by `*`.
pub fn env_name(value: &str) -> Result<String, String> {
    let name = value.strip_suffix('*').unwrap_or(value);
    if agent_adaptor_drivers::child_env::valid_name(name) {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "{value:?} is not a variable name (--env takes a NAME and passes its value from this environment)"
        ))
    }
}

/// The environment policy of the agent CLI a command runs: the allowlist
/// plus the variables named by `--env`, or, with `inherit_all` (`run
/// --inherit-env`), the whole environment.
pub fn env_policy(args: &DriverArgs, inherit_all: bool) -> EnvPolicy {
    if inherit_all {
        EnvPolicy::InheritAll
    } else {
        EnvPolicy::passing(args.env.iter().cloned())
    }
}

/// Build the driver of agent CLI `name`: its binary from `PATH`, the
/// environment `env` allows, host approvals on where the CLI can route
/// them.
fn cli_driver(
    name: DriverName,
    model: Option<&str>,
    binary: PathBuf,
    env: EnvPolicy,
) -> Arc<dyn Driver> {
    use agent_adaptor_drivers::{claude, codebuddy, codex, cursor, gemini};
    let model = model.map(str::to_owned);
    match name {
        DriverName::Claude | DriverName::Codebuddy => {
            let mut config = if name == DriverName::Claude {
                claude::config()
            } else {
                codebuddy::config()
            };
            config.command = binary;
            config.model = model;
            config.env_policy = env;
            config.host_approvals = true;
            if name == DriverName::Claude {
                Arc::new(claude::driver(config))
            } else {
                Arc::new(codebuddy::driver(config))
            }
        }
        DriverName::Codex => {
            let config = codex::Config {
                command: binary,
                model,
                env_policy: env,
                ..Default::default()
            };
            Arc::new(codex::driver(config))
        }
        DriverName::Gemini => {
            let config = gemini::Config {
                command: binary,
                model,
                env_policy: env,
                ..Default::default()
            };
            Arc::new(gemini::driver(config))
        }
        DriverName::Acp(recipe) => {
            let agent = AcpAgent::of_recipe(recipe).unwrap_or(AcpAgent::Custom {
                program: binary.clone(),
                args: Vec::new(),
            });
            let config = acp::Config {
                command: Some(binary),
                model,
                env_policy: env,
                ..acp::Config::for_agent(agent)
            };
            Arc::new(acp::driver(config))
        }
        DriverName::Cursor | DriverName::Llm => {
            let config = cursor::Config {
                command: binary,
                model,
                env_policy: env,
                ..Default::default()
            };
            Arc::new(cursor::driver(config))
        }
    }
}

/// Pick and build the driver of a `run` or `serve` (see the module docs).
/// `schema` shapes the playground's answer when the playground runs. An
/// agent CLI gets the allowlisted environment plus the `--env` names.
pub async fn select(args: &DriverArgs, schema: Option<&Value>) -> Result<Selected, CliError> {
    select_with_env(args, schema, env_policy(args, false)).await
}

/// [`select`] with the agent CLI's environment policy given (`run
/// --inherit-env`).
pub async fn select_with_env(
    args: &DriverArgs,
    schema: Option<&Value>,
    env: EnvPolicy,
) -> Result<Selected, CliError> {
    if args.playground {
        return playground(schema).await;
    }
    let Some(requested) = args.driver.as_deref() else {
        if args.acp_command.is_some() {
            return Err(CliError::usage("--acp-command needs --driver acp"));
        }
        if args.provider.is_some() || args.base_url.is_some() {
            return explicit(DriverName::Llm, args, env);
        }
        return auto(args, schema, env).await;
    };
    explicit(DriverName::parse(requested)?, args, env)
}

fn explicit(name: DriverName, args: &DriverArgs, env: EnvPolicy) -> Result<Selected, CliError> {
    if let DriverName::Acp(recipe) = name {
        return acp(recipe, args, env);
    }
    if args.acp_command.is_some() {
        return Err(CliError::usage(format!(
            "--acp-command applies to --driver acp, not --driver {}",
            name.as_str()
        )));
    }
    if name == DriverName::Llm {
        let provider = match args.provider {
            Some(p) => p,
            None => provider_from_env().ok_or_else(|| {
                CliError::usage(
                    "--driver llm needs --provider openai|openai-responses|anthropic|gemini|openrouter \
                     (or one of OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY set)",
                )
            })?,
        };
        let driver = llm_driver(provider, args.model.as_deref(), args.base_url.as_deref())?;
        let label = format!(
            "llm driver: {} at {} (model {})",
            provider.as_str(),
            driver.provider().endpoint().display_url(),
            args.model.as_deref().unwrap_or(provider.default_model())
        );
        return Ok(Selected {
            driver: Arc::new(driver),
            name,
            label,
            playground: None,
        });
    }
    if args.provider.is_some() || args.base_url.is_some() {
        return Err(CliError::usage(format!(
            "--provider and --base-url apply to --driver llm, not --driver {}",
            name.as_str()
        )));
    }
    let probe = probe_cli(name)
        .ok_or_else(|| CliError::failure(format!("no facts about driver {}", name.as_str())))?;
    let binary = probe
        .binary
        .clone()
        .or_else(|| probe.programs.iter().find_map(|p| file_on_path(p)));
    let Some(binary) = binary else {
        return Err(CliError::failure(format!(
            "driver {}: `{}` was not found on PATH (install the CLI, or see `agent-adaptor inspect`)",
            name.as_str(),
            probe.programs.join("` or `")
        )));
    };
    let label = format!("{} driver: {}", name.as_str(), binary.display());
    Ok(Selected {
        driver: cli_driver(name, args.model.as_deref(), binary, env),
        name,
        label,
        playground: None,
    })
}

/// An ACP agent: a named recipe's program from `PATH`, or the
/// `--acp-command` of `--driver acp` (split like a shell).
fn acp(recipe: &'static Recipe, args: &DriverArgs, env: EnvPolicy) -> Result<Selected, CliError> {
    let name = DriverName::Acp(recipe);
    if args.provider.is_some() || args.base_url.is_some() {
        return Err(CliError::usage(format!(
            "--provider and --base-url apply to --driver llm, not --driver {}",
            name.as_str()
        )));
    }
    let (agent, command, shown) = if *recipe == CUSTOM {
        let line = args.acp_command.as_deref().ok_or_else(|| {
            CliError::usage(
                "--driver acp needs --acp-command \"CMD ARGS…\" (or use --driver acp:NAME)",
            )
        })?;
        let words =
            shell_words::split(line).map_err(|e| CliError::usage(format!("--acp-command: {e}")))?;
        let Some((program, rest)) = words.split_first() else {
            return Err(CliError::usage("--acp-command is empty"));
        };
        let agent = AcpAgent::Custom {
            program: PathBuf::from(program),
            args: rest.to_vec(),
        };
        (agent, None, program.clone())
    } else {
        if args.acp_command.is_some() {
            return Err(CliError::usage(format!(
                "--acp-command applies to --driver acp, not --driver {}",
                name.as_str()
            )));
        }
        let agent = AcpAgent::of_recipe(recipe)
            .ok_or_else(|| CliError::failure(format!("no recipe {}", recipe.driver_type)))?;
        let binary = which(recipe.program)
            .or_else(|| file_on_path(recipe.program))
            .ok_or_else(|| {
                CliError::failure(format!(
                    "driver {}: `{}` was not found on PATH (install the agent, or use --driver acp --acp-command)",
                    name.as_str(),
                    recipe.program
                ))
            })?;
        let shown = binary.display().to_string();
        (agent, Some(binary), shown)
    };
    let config = acp::Config {
        command,
        model: args.model.clone(),
        env_policy: env,
        ..acp::Config::for_agent(agent)
    };
    Ok(Selected {
        driver: Arc::new(acp::driver(config)),
        name,
        label: format!("{} driver: {shown}", name.as_str()),
        playground: None,
    })
}

/// What `run` without `--driver` picks on this machine, and why.
#[derive(Debug, Clone)]
pub enum AutoChoice {
    /// The first agent CLI on `PATH` with credentials.
    Cli {
        /// The driver.
        name: DriverName,
        /// Its binary.
        binary: PathBuf,
        /// The credentials found (variable names, files).
        auth: Vec<String>,
    },
    /// An LLM API whose key is set.
    Llm(ProviderName),
    /// Nothing is usable: the offline playground.
    Playground,
}

impl AutoChoice {
    /// Look at `PATH`, the credentials and the key variables.
    pub fn detect() -> AutoChoice {
        for facts in &CLIS {
            if let Some(probe) = probe_cli(facts.name)
                && probe.usable()
                && let Some(binary) = probe.binary.clone()
            {
                return AutoChoice::Cli {
                    name: facts.name,
                    binary,
                    auth: probe.auth,
                };
            }
        }
        match provider_from_env() {
            Some(provider) => AutoChoice::Llm(provider),
            None => AutoChoice::Playground,
        }
    }

    /// `inspect`'s verdict: the driver and why (`playground (no driver is
    /// configured: …)`).
    pub fn verdict(&self) -> (String, String) {
        match self {
            AutoChoice::Cli { name, binary, auth } => (
                name.as_str().to_owned(),
                format!(
                    "{} on PATH, credentials in {}",
                    binary.display(),
                    auth.join(", ")
                ),
            ),
            AutoChoice::Llm(p) => (
                format!("llm:{}", p.as_str()),
                format!(
                    "{} is set; no agent CLI with credentials is on PATH",
                    p.key_var()
                ),
            ),
            AutoChoice::Playground => {
                let keys: Vec<&str> =
                    ProviderName::ALL
                        .iter()
                        .map(|p| p.key_var())
                        .fold(Vec::new(), |mut v, k| {
                            if !v.contains(&k) {
                                v.push(k);
                            }
                            v
                        });
                let clis: Vec<&str> = CLIS.iter().map(|f| f.name.as_str()).collect();
                (
                    "playground".to_owned(),
                    format!(
                        "no driver is configured: set {} for an LLM API, or install {} with its credentials; the playground runs offline",
                        keys.join(" or "),
                        clis.join(", ")
                    ),
                )
            }
        }
    }
}

async fn auto(
    args: &DriverArgs,
    schema: Option<&Value>,
    env: EnvPolicy,
) -> Result<Selected, CliError> {
    if let AutoChoice::Cli { name, binary, auth } = AutoChoice::detect() {
        let label = format!(
            "{} driver: {} (picked automatically: on PATH, credentials in {})",
            name.as_str(),
            binary.display(),
            auth.join(", ")
        );
        return Ok(Selected {
            driver: cli_driver(name, args.model.as_deref(), binary, env),
            name,
            label,
            playground: None,
        });
    }
    if let Some(provider) = provider_from_env() {
        let driver = llm_driver(provider, args.model.as_deref(), None)?;
        let label = format!(
            "llm driver: {} (picked automatically: {} is set; model {})",
            provider.as_str(),
            provider.key_var(),
            args.model.as_deref().unwrap_or(provider.default_model())
        );
        return Ok(Selected {
            driver: Arc::new(driver),
            name: DriverName::Llm,
            label,
            playground: None,
        });
    }
    playground(schema).await
}

async fn playground(schema: Option<&Value>) -> Result<Selected, CliError> {
    let pg = Playground::start(schema).await.map_err(|e| {
        CliError::failure(format!("cannot start the playground's model server: {e}"))
    })?;
    Ok(Selected {
        driver: Arc::new(pg.driver.clone()),
        name: DriverName::Llm,
        label: pg.label(),
        playground: Some(pg),
    })
}
