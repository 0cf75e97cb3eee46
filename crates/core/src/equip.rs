//! What a run gives its agent besides the prompt: instructions (an agent's
//! bundle and the run's own text), MCP servers, skills and the profile.
//!
//! Everything is checked against the driver's [`Descriptor`] before anything
//! starts: an item the driver cannot carry is a typed refusal, never a
//! silent drop. The durable part (the bundle, MCP servers, skills, profile)
//! is fingerprinted into a thread's compatibility fingerprint.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use agent_adaptor_driver::{
    Descriptor, HOST_TOOL_SERVER, HostTools, McpServer, Profile, Request, SkillHandle,
    canonical_session_config_fingerprint,
};
use sha2::{Digest, Sha256};

use crate::Error;

/// Instructions an agent always carries: a text, or a file read at every
/// launch (so an edit reaches the next run). Its content is part of a
/// thread's compatibility fingerprint. The run's own
/// [`instructions`](crate::RunOptions::instructions) are appended after it.
#[derive(Clone, PartialEq, Eq)]
pub enum InstructionsBundle {
    /// The text itself.
    Text(String),
    /// A UTF-8 file.
    File(PathBuf),
}

impl fmt::Debug for InstructionsBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstructionsBundle::Text(t) => write!(f, "Text({} bytes)", t.len()),
            InstructionsBundle::File(p) => f.debug_tuple("File").field(p).finish(),
        }
    }
}

impl InstructionsBundle {
    /// The bundle's text (the file read now).
    pub fn load(&self) -> Result<String, Error> {
        match self {
            InstructionsBundle::Text(t) => Ok(t.clone()),
            InstructionsBundle::File(path) => {
                std::fs::read_to_string(path).map_err(|e| Error::InvalidOption {
                    option: "instructions_bundle",
                    reason: format!("cannot read {}: {e}", path.display()),
                })
            }
        }
    }
}

/// The equipment options of one scope (run call or agent default).
#[derive(Clone, Default)]
pub(crate) struct EquipOptions {
    pub(crate) bundle: Option<InstructionsBundle>,
    pub(crate) mcp_servers: Vec<McpServer>,
    pub(crate) mcp_strict: Option<bool>,
    pub(crate) skills: Vec<Arc<dyn SkillHandle>>,
    pub(crate) profile: Option<Profile>,
    pub(crate) tools: Vec<crate::tools::Tool>,
}

impl fmt::Debug for EquipOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EquipOptions")
            .field("bundle", &self.bundle)
            .field(
                "mcp_servers",
                &self.mcp_servers.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .field("mcp_strict", &self.mcp_strict)
            .field(
                "skills",
                &self
                    .skills
                    .iter()
                    .map(|s| &s.reference().name)
                    .collect::<Vec<_>>(),
            )
            .field("profile", &self.profile)
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl EquipOptions {
    /// `self` over `defaults`: the bundle, strictness and profile of the
    /// call win; MCP servers merge by name (the call's wins); skills merge
    /// by name (the call's wins).
    pub(crate) fn over(&self, defaults: &EquipOptions) -> EquipOptions {
        let mut mcp_servers: Vec<McpServer> = defaults
            .mcp_servers
            .iter()
            .filter(|d| !self.mcp_servers.iter().any(|s| s.name == d.name))
            .cloned()
            .collect();
        mcp_servers.extend(self.mcp_servers.iter().cloned());
        let mut skills: Vec<Arc<dyn SkillHandle>> = defaults
            .skills
            .iter()
            .filter(|d| {
                !self
                    .skills
                    .iter()
                    .any(|s| s.reference().name == d.reference().name)
            })
            .cloned()
            .collect();
        skills.extend(self.skills.iter().cloned());
        EquipOptions {
            bundle: self.bundle.clone().or_else(|| defaults.bundle.clone()),
            mcp_servers,
            mcp_strict: self.mcp_strict.or(defaults.mcp_strict),
            skills,
            profile: self.profile.clone().or_else(|| defaults.profile.clone()),
            tools: crate::tools::merge(&self.tools, &defaults.tools),
        }
    }
}

/// The equipment of an admitted run: the skill handles it keeps alive and
/// the fingerprint of its durable part.
pub(crate) struct Equipped {
    /// Held until the run ends (a skill's directory must outlive the run).
    pub(crate) skills: Vec<Arc<dyn SkillHandle>>,
    /// The fingerprint of the bundle, MCP servers, skills and profile.
    pub(crate) fingerprint: String,
}

fn unsupported(d: &Descriptor, capability: &'static str) -> Error {
    Error::CapabilityUnsupported {
        driver: d.driver_type.clone(),
        capability,
    }
}

/// Check the equipment against the driver and put it on the request:
/// every refusal comes before anything starts.
pub(crate) fn equip(
    eq: &EquipOptions,
    run_instructions: Option<&str>,
    d: &Descriptor,
    request: &mut Request,
) -> Result<Equipped, Error> {
    let bundle = eq
        .bundle
        .as_ref()
        .map(InstructionsBundle::load)
        .transpose()?;
    let instructions = match (bundle.as_deref(), run_instructions) {
        (None, None) => None,
        (Some(b), None) => Some(b.to_owned()),
        (None, Some(r)) => Some(r.to_owned()),
        (Some(b), Some(r)) => Some(format!("{b}\n\n{r}")),
    };
    if instructions.is_some() && !d.instructions {
        return Err(unsupported(d, "instructions"));
    }
    McpServer::validate_all(&eq.mcp_servers).map_err(Error::InvalidMcpServer)?;
    let m = &d.mcp;
    for server in &eq.mcp_servers {
        let t = &server.transport;
        let (carried, what) = match t.kind() {
            "stdio" => (m.stdio, "mcp.stdio"),
            "http" => (m.http, "mcp.http"),
            _ => (m.sse, "mcp.sse"),
        };
        let checks = [
            (carried, what),
            (
                t.headers().is_none_or(|h| h.is_empty()) || m.headers,
                "mcp.headers",
            ),
            (
                t.bearer_token_env().is_none() || m.bearer_token_env,
                "mcp.bearer_token_env",
            ),
            (!server.tools.filters() || m.tool_filter, "mcp.tool_filter"),
            (
                server.tools.auto_approve.is_empty() || m.auto_approve,
                "mcp.auto_approve",
            ),
            (!server.required || m.required, "mcp.required"),
        ];
        if let Some((_, capability)) = checks.iter().find(|(ok, _)| !ok) {
            return Err(unsupported(d, capability));
        }
    }
    let strict = eq.mcp_strict.unwrap_or(false);
    if strict && !m.strict {
        return Err(unsupported(d, "mcp.strict"));
    }
    if !eq.skills.is_empty() && !d.skills {
        return Err(unsupported(d, "skills"));
    }
    let mut names = std::collections::BTreeSet::new();
    for skill in &eq.skills {
        if !names.insert(skill.reference().name.as_str()) {
            return Err(Error::InvalidOption {
                option: "skill",
                reason: format!("two skills are named {:?}", skill.reference().name),
            });
        }
    }
    let profile = eq.profile.clone().unwrap_or_default();
    match &profile {
        Profile::Dedicated { .. } if !d.profiles.dedicated => {
            return Err(unsupported(d, "profile.dedicated"));
        }
        Profile::Clone { .. } if !d.profiles.clone => {
            return Err(unsupported(d, "profile.clone"));
        }
        _ => {}
    }
    if !eq.tools.is_empty() {
        if d.host_tools.is_none() {
            return Err(unsupported(d, "host_tools"));
        }
        if eq.mcp_servers.iter().any(|s| s.name == HOST_TOOL_SERVER) {
            return Err(Error::InvalidOption {
                option: "mcp_server",
                reason: format!("the name {HOST_TOOL_SERVER:?} is reserved for the host's tools"),
            });
        }
        let toolbox =
            crate::tools::Toolbox::new(&request.run_id, &eq.tools).map_err(Error::InvalidTool)?;
        request.host_tools = HostTools::new(std::sync::Arc::new(toolbox));
    }
    let fingerprint = fingerprint(bundle.as_deref(), &eq.mcp_servers, &eq.skills, &profile);
    request.instructions = instructions;
    request.mcp_servers = eq.mcp_servers.clone();
    request.mcp_strict = strict;
    request.skills = eq.skills.iter().map(|s| s.reference().clone()).collect();
    request.profile = profile;
    Ok(Equipped {
        skills: eq.skills.clone(),
        fingerprint,
    })
}

/// The durable equipment's fingerprint: the bundle's content, the MCP
/// servers, the skills' content fingerprints and the profile. The run's own
/// instructions are not in it (they may change from turn to turn). Empty
/// when there is no durable equipment at all.
fn fingerprint(
    bundle: Option<&str>,
    servers: &[McpServer],
    skills: &[Arc<dyn SkillHandle>],
    profile: &Profile,
) -> String {
    if bundle.is_none() && servers.is_empty() && skills.is_empty() && profile.is_native() {
        return String::new();
    }
    let bundle = bundle.map(|b| {
        let digest = Sha256::digest(b.as_bytes());
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    });
    let mut servers: Vec<&McpServer> = servers.iter().collect();
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    let mut skills: Vec<(&str, &str)> = skills
        .iter()
        .map(|s| {
            let r = s.reference();
            (r.name.as_str(), r.fingerprint.as_str())
        })
        .collect();
    skills.sort();
    let value = serde_json::json!({
        "bundle": bundle,
        "mcp": servers,
        "skills": skills,
        "profile": profile,
    });
    canonical_session_config_fingerprint("agent-adaptor/equipment/v1", &value).unwrap_or_default()
}
