//! The tools one run offers the model: the host's and its MCP servers',
//! each under one unambiguous model-visible name.
//!
//! A host tool keeps its own name; an MCP tool is `<server>__<tool>`. A name
//! that would be offered twice, or that no provider accepts (only ASCII
//! letters, digits, `_` and `-`, at most 64 bytes), is left out and
//! reported by the loop as a notice.

use std::collections::HashMap;

use agent_adaptor_driver::{HostToolSpec, ToolScope};
use serde_json::Value;

use crate::message::ToolDefinition;

/// The separator between a server's name and its tool's.
pub(super) const MCP_SEPARATOR: &str = "__";

/// Where a tool the model may call runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Target {
    /// A host tool (its own name).
    Host,
    /// Tool `tool` of the run's MCP server number `server`.
    Mcp {
        /// The index of the connection.
        server: usize,
        /// The server's name.
        server_name: String,
        /// The tool's name on the server.
        tool: String,
        /// The server's policy lets it run without asking.
        auto_approve: bool,
    },
}

impl Target {
    /// The scope of its events.
    pub(super) fn scope(&self) -> ToolScope {
        match self {
            Target::Host => ToolScope::Host,
            Target::Mcp {
                server_name, tool, ..
            } => ToolScope::Mcp {
                server: server_name.clone(),
                tool: tool.clone(),
            },
        }
    }
}

/// The offered tools of a run.
#[derive(Debug, Default)]
pub(super) struct Catalog {
    definitions: Vec<ToolDefinition>,
    targets: HashMap<String, Target>,
    /// Why a tool was left out (for the run's notices).
    pub(super) skipped: Vec<String>,
}

/// True for a name every provider accepts.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Catalog {
    /// The catalog of the host tools `specs`.
    pub(super) fn with_host_tools(specs: &[HostToolSpec]) -> Self {
        let mut catalog = Catalog::default();
        for spec in specs {
            catalog.add(
                spec.name.clone(),
                &spec.description,
                spec.input_schema.clone(),
                Target::Host,
            );
        }
        catalog
    }

    /// Offer `target` as `name`, unless the name is taken or unusable.
    pub(super) fn add(&mut self, name: String, description: &str, schema: Value, target: Target) {
        if !valid_name(&name) {
            self.skipped.push(format!(
                "tool {name:?} is not offered: a tool name has 1 to 64 ASCII letters, digits, '_' or '-'"
            ));
            return;
        }
        if self.targets.contains_key(&name) {
            self.skipped
                .push(format!("tool {name:?} is not offered: the name is taken"));
            return;
        }
        self.definitions
            .push(ToolDefinition::function(name.clone(), description, schema));
        self.targets.insert(name, target);
    }

    /// Offer tool `tool` of MCP server `server_name` (connection `server`).
    pub(super) fn add_mcp(
        &mut self,
        server: usize,
        server_name: &str,
        tool: &str,
        description: &str,
        schema: Value,
        auto_approve: bool,
    ) {
        self.add(
            format!("{server_name}{MCP_SEPARATOR}{tool}"),
            description,
            schema,
            Target::Mcp {
                server,
                server_name: server_name.to_owned(),
                tool: tool.to_owned(),
                auto_approve,
            },
        );
    }

    /// The provider's tool definitions, host tools first.
    pub(super) fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    /// Where the tool the model calls `name` runs.
    pub(super) fn target(&self, name: &str) -> Option<&Target> {
        self.targets.get(name)
    }

    /// The scope of every offered tool, by model-visible name.
    pub(super) fn scopes(&self) -> HashMap<String, ToolScope> {
        self.targets
            .iter()
            .map(|(name, target)| (name.clone(), target.scope()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_unique_and_usable_and_mcp_tools_are_prefixed() {
        let spec = HostToolSpec {
            name: "docs__lookup".into(),
            description: "host".into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            trusted: false,
        };
        let mut catalog = Catalog::with_host_tools(&[spec]);
        catalog.add_mcp(0, "docs", "lookup", "mcp", json!({"type": "object"}), false);
        catalog.add_mcp(0, "docs", "add", "mcp", json!({"type": "object"}), true);
        catalog.add_mcp(0, "docs", "a.b", "mcp", json!({"type": "object"}), false);
        let names: Vec<&str> = catalog
            .definitions()
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(names, ["docs__lookup", "docs__add"]);
        assert_eq!(catalog.target("docs__lookup"), Some(&Target::Host));
        assert_eq!(
            catalog.target("docs__add").map(Target::scope),
            Some(ToolScope::Mcp {
                server: "docs".into(),
                tool: "add".into()
            })
        );
        assert_eq!(catalog.skipped.len(), 2, "{:?}", catalog.skipped);
    }
}
