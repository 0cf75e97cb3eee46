//! Gemini CLI's probes: where it keeps its configuration, model and
//! credentials (data for [`crate::probe_common`]), and its config schema.

use agent_adaptor_driver::{ConfigField, ConfigSchema, FieldKind, SkillMode};

use super::GeminiDriver;
use super::config::{Config, ENV_ALLOWLIST};
use crate::probe_common::{self, CliFacts, ModelKey};

/// Gemini CLI: its home is `GEMINI_CLI_HOME` (default the user's home), its
/// configuration `<home>/.gemini`; the model is `GEMINI_MODEL`, else
/// `settings.json` `model.name` (a string `model` in older settings), as
/// its bundle reads them; credentials are the API key variables or the
/// OAuth login's `oauth_creds.json`.
pub(crate) static FACTS: CliFacts = CliFacts {
    driver_type: "gemini",
    provider: "google",
    home_var: "GEMINI_CLI_HOME",
    home_default: &[("HOME", "")],
    config_subdir: ".gemini",
    settings: "settings.json",
    model_key: ModelKey::Json(&[&["model", "name"], &["model"]]),
    model_env: Some("GEMINI_MODEL"),
    auth_env: &[
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ],
    auth_files: &["oauth_creds.json"],
    login_hint: "run `gemini` once and log in, or set GEMINI_API_KEY",
    quota_reason: "Gemini CLI reports no usage quota a hermetic probe can read",
    skill_mode: SkillMode::Ephemeral,
    data_subdir: Some("tmp"),
};

crate::probed::impl_probed!(
    GeminiDriver,
    facts: &FACTS,
    documented: ENV_ALLOWLIST,
    schema: config_schema(),
);

/// The fields of [`Config`].
fn config_schema() -> ConfigSchema {
    let defaults = Config::default();
    let mut fields: Vec<ConfigField> = probe_common::common_fields("gemini").into();
    fields.extend([
        ConfigField::new(
            "approval_mode",
            "Approval mode",
            FieldKind::Select,
            "Which tools run without asking (`--approval-mode` / `--yolo`)",
        )
        .options(["default", "auto_edit", "yolo", "plan"])
        .default_value("default"),
        ConfigField::new(
            "skip_trust",
            "Skip the folder trust check",
            FieldKind::Toggle,
            "`--skip-trust`",
        )
        .default_value(defaults.skip_trust.to_string()),
        ConfigField::new(
            "include_directories",
            "Extra directories",
            FieldKind::List,
            "`--include-directories`",
        ),
        probe_common::duration_field(
            "cancel_grace",
            "Cancel grace",
            "On cancel: the wait after stdin closes before SIGTERM",
            defaults.cancel_grace,
        ),
    ]);
    ConfigSchema { fields }
}
