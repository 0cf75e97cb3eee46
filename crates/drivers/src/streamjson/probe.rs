//! The probes of the stream-json family: where Claude Code and CodeBuddy
//! Code keep their configuration, models and credentials (data for
//! [`crate::probe_common`]), and the family's config schema.

use agent_adaptor_driver::{ConfigField, ConfigSchema, FieldKind, SkillMode};

use super::{CLAUDE, Config, Family, StreamJsonDriver};
use crate::probe_common::{self, CliFacts, ModelKey, Setup};
use crate::probed::{Probed, setup_of};

/// Claude Code: `CLAUDE_CONFIG_DIR` (default `~/.claude`), the model in
/// `settings.json` `model` unless `ANTHROPIC_MODEL` is set, credentials in
/// `.credentials.json` (Linux; the macOS keychain is not visible to a file
/// probe) or the API key variables.
pub(crate) static CLAUDE_FACTS: CliFacts = CliFacts {
    driver_type: "claude",
    provider: "anthropic",
    home_var: "CLAUDE_CONFIG_DIR",
    home_default: &[("HOME", ".claude")],
    config_subdir: "",
    settings: "settings.json",
    model_key: ModelKey::Json(&[&["model"]]),
    model_env: Some("ANTHROPIC_MODEL"),
    auth_env: &[
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_OAUTH_TOKEN",
    ],
    auth_files: &[".credentials.json"],
    login_hint: "run `claude` once and log in, or set ANTHROPIC_API_KEY",
    quota_reason: "Claude Code's usage is known only to Anthropic's usage endpoint, which a \
                   hermetic probe does not call",
    skill_mode: SkillMode::Ephemeral,
    data_subdir: Some("projects"),
};

/// CodeBuddy Code: `CODEBUDDY_CONFIG_DIR` (default `~/.codebuddy`), the
/// model in `settings.json` `model` unless `CODEBUDDY_MODEL` is set
/// (read in its bundle), credentials in `.credentials.json` or the API
/// key variables.
pub(crate) static CODEBUDDY_FACTS: CliFacts = CliFacts {
    driver_type: "codebuddy",
    provider: "codebuddy",
    home_var: "CODEBUDDY_CONFIG_DIR",
    home_default: &[("HOME", ".codebuddy")],
    config_subdir: "",
    settings: "settings.json",
    model_key: ModelKey::Json(&[&["model"]]),
    model_env: Some("CODEBUDDY_MODEL"),
    auth_env: &["CODEBUDDY_API_KEY", "CODEBUDDY_AUTH_TOKEN"],
    auth_files: &[".credentials.json"],
    login_hint: "run `codebuddy` once and log in, or set CODEBUDDY_API_KEY",
    quota_reason: "CodeBuddy Code reports no usage quota",
    skill_mode: SkillMode::Ephemeral,
    data_subdir: Some("projects"),
};

impl Probed for StreamJsonDriver {
    /// The facts of the family's CLI.
    fn facts(&self) -> &'static CliFacts {
        if self.family.driver_type == CLAUDE.driver_type {
            &CLAUDE_FACTS
        } else {
            &CODEBUDDY_FACTS
        }
    }

    fn setup(&self) -> Setup<'_> {
        Setup {
            defaults: self.family.env_defaults,
            ..setup_of!(&self.config, self.family.env_allowlist)
        }
    }

    fn schema(&self) -> ConfigSchema {
        config_schema(self.family)
    }
}

/// The fields of [`Config`].
fn config_schema(family: &Family) -> ConfigSchema {
    let defaults = Config::new(family);
    let mut fields: Vec<ConfigField> = probe_common::common_fields(family.program).into();
    fields.extend([
        ConfigField::new("effort", "Effort", FieldKind::Select, "`--effort`")
            .options(["low", "medium", "high", "xhigh", "max"]),
        ConfigField::new("max_turns", "Max turns", FieldKind::Number, "`--max-turns`"),
        ConfigField::new(
            "permission_mode",
            "Permission mode",
            FieldKind::Text,
            "`--permission-mode`",
        ),
        ConfigField::new(
            "host_approvals",
            "Host approvals",
            FieldKind::Toggle,
            "Route permission requests to the host (the control transport)",
        )
        .default_value("false"),
        ConfigField::new(
            "mcp_servers",
            "MCP servers",
            FieldKind::Map,
            "MCP servers in the CLI's own `--mcp-config` form",
        ),
        ConfigField::new(
            "add_dirs",
            "Extra directories",
            FieldKind::List,
            "`--add-dir` directories",
        ),
        probe_common::duration_field(
            "cancel_close_grace",
            "Close grace",
            "On cancel: how long the CLI may take to exit after stdin closes",
            defaults.cancel_close_grace,
        ),
        probe_common::duration_field(
            "cancel_term_grace",
            "Terminate grace",
            "On cancel: how long after SIGTERM before SIGKILL",
            defaults.cancel_term_grace,
        ),
        ConfigField::new(
            "resident",
            "Resident processes",
            FieldKind::Toggle,
            "Keep one live CLI process per provider session between a thread's turns",
        )
        .default_value(defaults.resident.to_string()),
        probe_common::duration_field(
            "resident_idle_timeout",
            "Resident idle timeout",
            "How long a resident process may stay idle",
            defaults.resident_idle_timeout,
        ),
        probe_common::duration_field(
            "resident_stop_grace",
            "Resident stop grace",
            "When a resident process is stopped: how long after its stdin closes before SIGTERM",
            defaults.resident_stop_grace,
        ),
    ]);
    ConfigSchema { fields }
}
