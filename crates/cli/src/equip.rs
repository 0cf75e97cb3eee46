//! The equipment flags of `run` and `serve`: instructions, MCP servers,
//! skills and the profile. Every file is read and checked here, before a
//! driver is chosen or anything starts, so a bad one is a one-line usage
//! error (exit 2). What a driver cannot carry is refused by core, also
//! before launch, with its `CapabilityUnsupported` message.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agent_adaptor_core::{InstructionsBundle, RunOptions};
use agent_adaptor_driver::{McpServer, Profile};
use agent_adaptor_skills::Skill;
use clap::{Args, ValueEnum};

use crate::error::CliError;

/// Which configuration home the agent CLI runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileKind {
    /// The user's own (what running the CLI by hand uses).
    Native,
    /// A home of its own under the profile root, started empty.
    Dedicated,
    /// Like dedicated, seeded once from the user's settings and login.
    Clone,
}

/// The equipment flags (shared by `run` and `serve`).
#[derive(Debug, Clone, Default, Args)]
pub struct EquipArgs {
    /// Text appended to the agent's system prompt. A driver whose CLI has
    /// no place for it refuses the run before it starts.
    #[arg(long, value_name = "TEXT")]
    pub instructions: Option<String>,
    /// A UTF-8 file of instructions, read at every launch (before
    /// `--instructions` when both are given).
    #[arg(long, value_name = "PATH")]
    pub instructions_file: Option<PathBuf>,
    /// MCP servers in the common `{"mcpServers": {NAME: {"command", "args",
    /// "env"} | {"type": "http"|"sse", "url", "headers", "bearerTokenEnv"}}}`
    /// JSON (repeatable; servers merge by name, a later file wins).
    #[arg(long = "mcp-config", value_name = "PATH")]
    pub mcp_config: Vec<PathBuf>,
    /// Load only the `--mcp-config` servers, none of the user's or the
    /// project's own.
    #[arg(long)]
    pub mcp_strict: bool,
    /// A skill: a directory holding SKILL.md, a SKILL.md file, or a zip,
    /// tar or tar.gz archive of one (repeatable).
    #[arg(long = "skill", value_name = "PATH")]
    pub skills: Vec<PathBuf>,
    /// The agent CLI's configuration home: native (the user's own),
    /// dedicated (`<profile root>/<driver>`, started empty and kept) or
    /// clone (dedicated, seeded once from the user's settings and login).
    #[arg(long, value_enum, value_name = "KIND")]
    pub profile: Option<ProfileKind>,
    /// Where dedicated and clone homes live (default:
    /// `$XDG_DATA_HOME/agent-adaptor/profiles`, else
    /// `~/.local/share/agent-adaptor/profiles`).
    #[arg(long, value_name = "DIR", requires = "profile")]
    pub profile_root: Option<PathBuf>,
}

/// The equipment the flags name, loaded and checked.
#[derive(Debug, Default)]
pub struct Equipment {
    instructions: Option<String>,
    bundle: Option<InstructionsBundle>,
    mcp_servers: Vec<McpServer>,
    mcp_strict: bool,
    skills: Vec<Skill>,
    profile: Option<Profile>,
}

impl EquipArgs {
    /// Read and check every file the flags name.
    pub fn load(&self) -> Result<Equipment, CliError> {
        let bundle = match &self.instructions_file {
            Some(path) => {
                let bundle = InstructionsBundle::File(absolute(path));
                bundle.load().map_err(|_| {
                    CliError::usage(format!(
                        "--instructions-file {}: cannot be read as UTF-8 text",
                        path.display()
                    ))
                })?;
                Some(bundle)
            }
            None => None,
        };
        let mut servers: BTreeMap<String, McpServer> = BTreeMap::new();
        for path in &self.mcp_config {
            for server in read_mcp_config(path)? {
                servers.insert(server.name.clone(), server);
            }
        }
        let skills = self
            .skills
            .iter()
            .map(|path| {
                Skill::load(path)
                    .map_err(|e| CliError::usage(format!("--skill {}: {e}", path.display())))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let profile = match self.profile {
            None => None,
            Some(ProfileKind::Native) => Some(Profile::Native),
            Some(kind) => {
                let root = match &self.profile_root {
                    Some(root) => absolute(root),
                    None => default_profile_root().ok_or_else(|| {
                        CliError::usage(
                            "--profile: no profile root (neither XDG_DATA_HOME nor HOME is set); \
                             give --profile-root DIR",
                        )
                    })?,
                };
                Some(if kind == ProfileKind::Clone {
                    Profile::Clone { root }
                } else {
                    Profile::Dedicated { root }
                })
            }
        };
        Ok(Equipment {
            instructions: self.instructions.clone(),
            bundle,
            mcp_servers: servers.into_values().collect(),
            mcp_strict: self.mcp_strict,
            skills,
            profile,
        })
    }
}

impl Equipment {
    /// `options` with this equipment (for `run`: the run's options; for
    /// `serve`: the agent's defaults).
    pub fn apply(&self, mut options: RunOptions) -> RunOptions {
        if let Some(bundle) = &self.bundle {
            options = options.instructions_bundle(bundle.clone());
        }
        if let Some(text) = &self.instructions {
            options = options.instructions(text.clone());
        }
        for server in &self.mcp_servers {
            options = options.mcp_server(server.clone());
        }
        if self.mcp_strict {
            options = options.mcp_strict(true);
        }
        for skill in &self.skills {
            options = options.skill(skill.clone());
        }
        if let Some(profile) = &self.profile {
            options = options.profile(profile.clone());
        }
        options
    }
}

/// The servers of one `--mcp-config` file.
fn read_mcp_config(path: &Path) -> Result<Vec<McpServer>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("--mcp-config {}: {e}", path.display())))?;
    McpServer::parse_config_json(&text)
        .map_err(|e| CliError::usage(format!("--mcp-config {}: {e}", path.display())))
}

/// The default profile root: `$XDG_DATA_HOME/agent-adaptor/profiles`, else
/// `$HOME/.local/share/agent-adaptor/profiles`.
pub fn default_profile_root() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("XDG_DATA_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".local/share")))
        .map(|data| data.join("agent-adaptor/profiles"))
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn mcp_configs_merge_by_name_and_a_bad_one_names_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        let b = dir.path().join("b.json");
        std::fs::write(
            &a,
            r#"{"mcpServers": {"x": {"command": "one"}, "y": {"url": "http://h/mcp"}}}"#,
        )
        .unwrap();
        std::fs::write(&b, r#"{"mcpServers": {"x": {"command": "two"}}}"#).unwrap();
        let args = EquipArgs {
            mcp_config: vec![a.clone(), b],
            ..Default::default()
        };
        let eq = args.load().unwrap();
        let names: Vec<&str> = eq.mcp_servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["x", "y"]);
        assert_eq!(eq.mcp_servers[0], McpServer::stdio("x", "two", [""; 0]));

        std::fs::write(&a, r#"{"mcpServers": {"x": {}}}"#).unwrap();
        let err = EquipArgs {
            mcp_config: vec![a.clone()],
            ..Default::default()
        }
        .load()
        .unwrap_err();
        assert_eq!(err.code, crate::error::EXIT_USAGE);
        assert!(err.message.contains(&a.display().to_string()), "{err}");
        assert!(err.message.contains("needs a command"), "{err}");
    }

    #[test]
    fn profiles_take_the_root_or_the_default() {
        let args = EquipArgs {
            profile: Some(ProfileKind::Clone),
            profile_root: Some("/srv/p".into()),
            ..Default::default()
        };
        assert_eq!(
            args.load().unwrap().profile,
            Some(Profile::Clone {
                root: "/srv/p".into()
            })
        );
        let native = EquipArgs {
            profile: Some(ProfileKind::Native),
            ..Default::default()
        };
        assert_eq!(native.load().unwrap().profile, Some(Profile::Native));
    }
}
