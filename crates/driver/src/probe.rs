//! What a driver can tell about itself without running: its environment,
//! the model it would use, the configuration home a profile gives it, its
//! quota, the fields of its configuration and the skills a run would see.
//!
//! Each is an optional [`Driver`](crate::Driver) method with a default
//! returning `None` (the driver does not probe that). A probe is
//! *hermetic*: it reads local files and its own configuration only — no
//! network, no process, no write — so it is cheap, deterministic and safe
//! to call from an inspection command or the conformance suite
//! (CAP-02/03/05–09). A probe that cannot know something says so (an
//! unavailable quota, a warning check); it never makes a value up. No
//! report carries a secret: a credential is reported by the name of the
//! variable or file that holds it, never by its value.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How well one environment check went, and a report's overall status.
/// Ordered from best to worst, so the worst of several is their `max`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Nothing to worry about.
    #[default]
    Pass,
    /// A run may work, but something is missing or unusual.
    Warn,
    /// A run cannot work as configured.
    Fail,
}

/// One finding of an environment probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvironmentCheck {
    /// A stable, non-empty code (`"binary"`, `"config_home"`, `"auth"` …).
    pub code: String,
    /// How it went.
    pub level: CheckStatus,
    /// What was found (paths and variable names, never a secret value).
    pub message: String,
    /// What to do about it, when there is something to do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl EnvironmentCheck {
    /// A check at `level`.
    pub fn new(code: impl Into<String>, level: CheckStatus, message: impl Into<String>) -> Self {
        EnvironmentCheck {
            code: code.into(),
            level,
            message: message.into(),
            hint: None,
        }
    }

    /// A passed check.
    pub fn pass(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(code, CheckStatus::Pass, message)
    }

    /// A warning.
    pub fn warn(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(code, CheckStatus::Warn, message)
    }

    /// A failed check.
    pub fn fail(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(code, CheckStatus::Fail, message)
    }

    /// The same check with a hint.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// What [`Driver::check_environment`](crate::Driver::check_environment)
/// found (CAP-03).
///
/// Laws: `status` is the worst check level (`Pass` without checks);
/// `healthy` is `status != Fail`; every check has a non-empty code.
/// [`EnvironmentReport::from_checks`] keeps them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvironmentReport {
    /// The reporting driver's type (its descriptor's).
    pub driver_type: String,
    /// The overall status.
    pub status: CheckStatus,
    /// Whether a run can be attempted.
    pub healthy: bool,
    /// One line for humans.
    pub summary: String,
    /// The findings, in the order they were made.
    pub checks: Vec<EnvironmentCheck>,
}

impl EnvironmentReport {
    /// A report whose status, health and summary follow from `checks`.
    pub fn from_checks(driver_type: impl Into<String>, checks: Vec<EnvironmentCheck>) -> Self {
        let status = checks
            .iter()
            .map(|c| c.level)
            .max()
            .unwrap_or(CheckStatus::Pass);
        let count = |level| checks.iter().filter(|c| c.level == level).count();
        let summary = match status {
            CheckStatus::Pass => format!("ready ({} checks passed)", checks.len()),
            CheckStatus::Warn => format!("usable with {} warning(s)", count(CheckStatus::Warn)),
            CheckStatus::Fail => {
                format!("not usable: {} check(s) failed", count(CheckStatus::Fail))
            }
        };
        EnvironmentReport {
            driver_type: driver_type.into(),
            status,
            healthy: status != CheckStatus::Fail,
            summary,
            checks,
        }
    }
}

/// Where a detected model comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum ModelSource {
    /// The driver's own configuration.
    Configured,
    /// An environment variable the CLI reads.
    Environment {
        /// Its name.
        var: String,
    },
    /// The CLI's own settings file.
    ConfigFile {
        /// The file.
        path: PathBuf,
    },
}

/// The model a run would use when the request names none (CAP-05).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetectedModel {
    /// The model id (non-empty).
    pub model: String,
    /// Who serves it (`"anthropic"`, `"openai"` …), when known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,
    /// Where it was found.
    pub source: ModelSource,
}

/// Where a profile report's home comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProfileSource {
    /// The CLI's home variable, set in the child's environment (a binding
    /// of the driver's configuration, or inherited from the host).
    ProcessEnv,
    /// The CLI's default location (under the user's home).
    Default,
    /// The profile option: a dedicated or cloned home the driver owns.
    Option,
    /// The driver cannot run under this profile.
    Unsupported,
}

/// Which configuration home the CLI would run with under a profile (CAP-06).
///
/// Laws: `supported` ⇔ `source != Unsupported`; a supported report names
/// its `dir`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileReport {
    /// The reporting driver's type.
    pub driver_type: String,
    /// Whether the driver runs under this profile.
    pub supported: bool,
    /// The home directory (it may not exist yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// The variable that points the CLI at `dir`, when the CLI has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_var: Option<String>,
    /// Where `dir` comes from.
    pub source: ProfileSource,
}

impl ProfileReport {
    /// A report that the driver cannot run under the profile.
    pub fn unsupported(driver_type: impl Into<String>) -> Self {
        ProfileReport {
            driver_type: driver_type.into(),
            supported: false,
            dir: None,
            env_var: None,
            source: ProfileSource::Unsupported,
        }
    }
}

/// One usage window of a quota.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaWindow {
    /// A non-empty label (`"5h"`, `"weekly"` …).
    pub label: String,
    /// How much is used, 0–100, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_percent: Option<u8>,
    /// When the window resets (RFC 3339), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<String>,
}

/// The provider's usage quota, as far as a hermetic probe knows it (CAP-07).
///
/// Laws: an unavailable report has no windows and says why; window labels
/// are non-empty; `used_percent` is at most 100.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaReport {
    /// The reporting driver's type.
    pub driver_type: String,
    /// Whether the windows are known.
    pub available: bool,
    /// Why the quota is unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The windows, when available.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<QuotaWindow>,
}

impl QuotaReport {
    /// An honest "not known", with the reason.
    pub fn unavailable(driver_type: impl Into<String>, reason: impl Into<String>) -> Self {
        QuotaReport {
            driver_type: driver_type.into(),
            available: false,
            reason: Some(reason.into()),
            windows: Vec::new(),
        }
    }
}

/// The kind of value a configuration field takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FieldKind {
    /// One line of text (a name, a path, a URL).
    Text,
    /// Free text over several lines.
    Textarea,
    /// A number.
    Number,
    /// On or off.
    Toggle,
    /// One of [`ConfigField::options`].
    Select,
    /// A list of texts.
    List,
    /// Name → value pairs.
    Map,
    /// A duration.
    Duration,
}

/// One field of a driver's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigField {
    /// The field's name in the configuration (non-empty, unique).
    pub name: String,
    /// A label for forms.
    pub label: String,
    /// Its kind.
    pub kind: FieldKind,
    /// Whether a value must be given (no usable default).
    pub required: bool,
    /// What it does.
    pub description: String,
    /// The default, as text, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// The accepted values of a [`FieldKind::Select`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

impl ConfigField {
    /// A field without a default.
    pub fn new(
        name: impl Into<String>,
        label: impl Into<String>,
        kind: FieldKind,
        description: impl Into<String>,
    ) -> Self {
        ConfigField {
            name: name.into(),
            label: label.into(),
            kind,
            required: false,
            description: description.into(),
            default: None,
            options: Vec::new(),
        }
    }

    /// The same field, required.
    #[must_use]
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// The same field with a default.
    #[must_use]
    pub fn default_value(mut self, default: impl Into<String>) -> Self {
        self.default = Some(default.into());
        self
    }

    /// The same field, a select among `options`.
    #[must_use]
    pub fn options<S: Into<String>>(mut self, options: impl IntoIterator<Item = S>) -> Self {
        self.kind = FieldKind::Select;
        self.options = options.into_iter().map(Into::into).collect();
        self
    }
}

/// The fields of a driver's configuration (CAP-08): names non-empty and
/// unique.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigSchema {
    /// The fields, in the configuration's order.
    pub fields: Vec<ConfigField>,
}

impl ConfigSchema {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&ConfigField> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// How a driver gives skills to its CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SkillMode {
    /// Materialized for the run in a location the driver owns, removed
    /// when the run ends.
    Ephemeral,
    /// Materialized in the profile's home, kept for later runs.
    Persistent,
    /// The driver gives no skills (only a driver without skill support
    /// says so).
    Unsupported,
}

/// One skill a run would offer its agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// The skill's name (its directory name in the CLI's skills folder).
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its content fingerprint.
    pub fingerprint: String,
}

/// The skills a run with a given selection would offer (CAP-02, CAP-09).
///
/// Echo laws: the entries are the selection's skills, in order, with their
/// names, descriptions and fingerprints unchanged — so an empty selection
/// gives no entries. The report is computed from the selection alone: the
/// skills' directories are not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillsReport {
    /// The reporting driver's type.
    pub driver_type: String,
    /// How the skills reach the CLI.
    pub mode: SkillMode,
    /// The skills, in selection order.
    pub skills: Vec<SkillEntry>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_environment_report_takes_the_worst_level() {
        let r = EnvironmentReport::from_checks("x", vec![]);
        assert_eq!((r.status, r.healthy), (CheckStatus::Pass, true));
        let r = EnvironmentReport::from_checks(
            "x",
            vec![
                EnvironmentCheck::pass("a", "ok"),
                EnvironmentCheck::warn("b", "hm"),
            ],
        );
        assert_eq!((r.status, r.healthy), (CheckStatus::Warn, true));
        assert!(r.summary.contains("1 warning"), "{}", r.summary);
        let r = EnvironmentReport::from_checks(
            "x",
            vec![
                EnvironmentCheck::fail("a", "no").with_hint("install it"),
                EnvironmentCheck::warn("b", "hm"),
            ],
        );
        assert_eq!((r.status, r.healthy), (CheckStatus::Fail, false));
        assert_eq!(r.checks[0].hint.as_deref(), Some("install it"));
    }

    #[test]
    fn reports_serialize_in_snake_case() {
        let m = DetectedModel {
            model: "m".into(),
            provider: String::new(),
            source: ModelSource::Environment { var: "X".into() },
        };
        let v = serde_json::to_value(&m).unwrap_or_default();
        assert_eq!(v["source"]["kind"], "environment");
        let q = QuotaReport::unavailable("x", "offline");
        let v = serde_json::to_value(&q).unwrap_or_default();
        assert_eq!(v["available"], false);
        assert!(v.get("windows").is_none());
    }
}
