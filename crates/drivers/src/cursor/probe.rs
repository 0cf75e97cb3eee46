//! Cursor Agent's probes: where it keeps its configuration, model and
//! credentials (data for [`crate::probe_common`]), and its config schema.

use agent_adaptor_driver::{ConfigField, ConfigSchema, FieldKind, SkillMode};

use super::CursorDriver;
use super::config::{Config, ENV_ALLOWLIST};
use crate::probe_common::{self, CliFacts, ModelKey};

/// Cursor Agent: `CURSOR_CONFIG_DIR`, else `$XDG_CONFIG_HOME/cursor` (Linux),
/// else `~/.cursor`, holding `cli-config.json` (its `model` is an object
/// whose shape is not documented: a string `model` or `model.modelId` is
/// read, anything else is not detected). Credentials: the API key
/// variables; an `agent login` keeps them where a file probe does not look.
pub(crate) static FACTS: CliFacts = CliFacts {
    driver_type: "cursor",
    provider: "cursor",
    home_var: "CURSOR_CONFIG_DIR",
    home_default: &[("XDG_CONFIG_HOME", "cursor"), ("HOME", ".cursor")],
    config_subdir: "",
    settings: "cli-config.json",
    model_key: ModelKey::Json(&[&["model"], &["model", "modelId"]]),
    model_env: None,
    auth_env: &["CURSOR_API_KEY", "CURSOR_AUTH_TOKEN"],
    auth_files: &[],
    login_hint: "run `agent login`, or set CURSOR_API_KEY",
    quota_reason: "Cursor Agent reports no usage quota",
    skill_mode: SkillMode::Ephemeral,
    data_subdir: None,
};

crate::probed::impl_probed!(
    CursorDriver,
    facts: &FACTS,
    documented: ENV_ALLOWLIST,
    schema: config_schema(),
);

/// The fields of [`Config`].
fn config_schema() -> ConfigSchema {
    let defaults = Config::default();
    let mut fields: Vec<ConfigField> = probe_common::common_fields("agent").into();
    fields.extend([
        ConfigField::new("mode", "Mode", FieldKind::Select, "`--mode`")
            .options(["agent", "plan", "ask"]),
        ConfigField::new(
            "force",
            "Run every tool",
            FieldKind::Toggle,
            "`--force`: run every tool without asking",
        )
        .default_value(defaults.force.to_string()),
        ConfigField::new(
            "trust_workspace",
            "Trust the workspace",
            FieldKind::Toggle,
            "`--trust`",
        )
        .default_value(defaults.trust_workspace.to_string()),
        probe_common::duration_field(
            "cancel_grace",
            "Cancel grace",
            "On cancel: the wait after stdin closes before SIGTERM",
            defaults.cancel_grace,
        ),
    ]);
    ConfigSchema { fields }
}
