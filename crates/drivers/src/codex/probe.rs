//! Codex's probes: where it keeps its configuration, model and credentials
//! (data for [`crate::probe_common`]), and its config schema.

use agent_adaptor_driver::{ConfigField, ConfigSchema, FieldKind, SkillMode};

use super::config::ENV_ALLOWLIST;
use super::{CodexDriver, Config};
use crate::probe_common::{self, CliFacts, ModelKey};

/// Codex: `CODEX_HOME` (default `~/.codex`), the model in `config.toml`'s
/// top-level `model`, credentials in `auth.json` or the API key variables.
pub(crate) static FACTS: CliFacts = CliFacts {
    driver_type: "codex",
    provider: "openai",
    home_var: "CODEX_HOME",
    home_default: &[("HOME", ".codex")],
    config_subdir: "",
    settings: "config.toml",
    model_key: ModelKey::TomlTop("model"),
    model_env: None,
    auth_env: &["OPENAI_API_KEY", "CODEX_API_KEY"],
    auth_files: &["auth.json"],
    login_hint: "run `codex login`, or set OPENAI_API_KEY",
    quota_reason: "Codex's usage windows are known only to the ChatGPT usage endpoint, which a \
                   hermetic probe does not call",
    skill_mode: SkillMode::Ephemeral,
    data_subdir: Some("sessions"),
};

crate::probed::impl_probed!(
    CodexDriver,
    facts: &FACTS,
    documented: ENV_ALLOWLIST,
    schema: config_schema(),
    // `-c model=…` is the configured model too.
    model: |config| config
        .model
        .as_deref()
        .or(config.overrides.get("model").map(String::as_str)),
);

/// The fields of [`Config`].
fn config_schema() -> ConfigSchema {
    let defaults = Config::default();
    let mut fields: Vec<ConfigField> = probe_common::common_fields("codex").into();
    fields.extend([
        ConfigField::new(
            "transport",
            "Transport",
            FieldKind::Select,
            "auto: the app-server when the request streams, exec otherwise",
        )
        .options(["auto", "exec", "app_server"])
        .default_value("auto"),
        ConfigField::new(
            "reasoning_effort",
            "Reasoning effort",
            FieldKind::Text,
            "`-c model_reasoning_effort=…`",
        ),
        ConfigField::new("sandbox", "Sandbox", FieldKind::Select, "The sandbox mode").options([
            "read-only",
            "workspace-write",
            "danger-full-access",
        ]),
        ConfigField::new(
            "approval_policy",
            "Approval policy",
            FieldKind::Select,
            "When Codex asks (untrusted: app-server only)",
        )
        .options(["never", "on-request", "untrusted"]),
        ConfigField::new(
            "overrides",
            "Config overrides",
            FieldKind::Map,
            "Other `-c key=value` overrides, both transports",
        ),
        ConfigField::new(
            "skip_git_repo_check",
            "Skip the git repository check",
            FieldKind::Toggle,
            "exec's `--skip-git-repo-check`",
        )
        .default_value(defaults.skip_git_repo_check.to_string()),
        ConfigField::new(
            "add_dirs",
            "Extra directories",
            FieldKind::List,
            "exec's `--add-dir` directories",
        ),
        probe_common::duration_field(
            "cancel_grace",
            "Cancel grace",
            "On cancel: the wait after stdin closes, and after SIGTERM",
            defaults.cancel_grace,
        ),
        ConfigField::new(
            "resident",
            "Resident processes",
            FieldKind::Toggle,
            "Keep one live app-server per thread between its turns",
        )
        .default_value(defaults.resident.to_string()),
        probe_common::duration_field(
            "resident_idle_timeout",
            "Resident idle timeout",
            "How long a resident app-server may stay idle",
            defaults.resident_idle_timeout,
        ),
        probe_common::duration_field(
            "resident_stop_grace",
            "Resident stop grace",
            "When a resident app-server is stopped: how long after its stdin closes before SIGTERM",
            defaults.resident_stop_grace,
        ),
    ]);
    ConfigSchema { fields }
}
