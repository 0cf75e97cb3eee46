//! What an inspection reports: typed, serializable, and free of secrets by
//! construction (credentials appear as the name of the variable or the
//! path of the file that holds them, never as a value).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The family a driver belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriverKind {
    /// An agent CLI driven through its own protocol (`claude`, `codex` …).
    Cli,
    /// An agent spoken to over the Agent Client Protocol (`acp:NAME`).
    Acp,
    /// An LLM HTTP API (`llm:PROVIDER`).
    Llm,
}

/// Everything inspection found out about one driver on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverReport {
    /// The driver's name as the CLI selects it (`claude`, `acp:qwen`,
    /// `llm:openai`).
    pub driver: String,
    /// Its family.
    pub kind: DriverKind,
    /// A human name.
    pub display_name: String,
    /// The program, for drivers that run one (`None` for an HTTP API).
    pub binary: Option<BinaryReport>,
    /// Whether credentials are there.
    pub auth: AuthReport,
    /// The directories the driver's program keeps its configuration and
    /// data in.
    pub directories: Vec<DirReport>,
    /// The models the configuration names.
    pub models: ModelsReport,
    /// The usage quota.
    pub quota: QuotaStatus,
    /// The checks, each with its verdict.
    pub health: Vec<HealthCheck>,
}

impl DriverReport {
    /// Every health check passed.
    pub fn healthy(&self) -> bool {
        self.health.iter().all(|c| c.ok)
    }
}

/// The driver's program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinaryReport {
    /// Whether an executable was found.
    pub found: bool,
    /// Where (the first match on the child's `PATH`).
    pub path: Option<PathBuf>,
    /// The program names looked for.
    pub looked_for: Vec<String>,
    /// Why it was not found.
    pub reason: Option<String>,
    /// What `<program> --version` said.
    pub version: VersionReport,
}

/// The version of a program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum VersionReport {
    /// `--version` printed one.
    Known {
        /// The version (`2.1.332`).
        version: String,
    },
    /// No version could be read.
    Unknown {
        /// Why.
        reason: String,
    },
}

impl VersionReport {
    /// The version, when known.
    pub fn version(&self) -> Option<&str> {
        match self {
            VersionReport::Known { version } => Some(version),
            VersionReport::Unknown { .. } => None,
        }
    }
}

/// Whether credentials are there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthState {
    /// A credential variable is set, or a credentials file holds a
    /// credential that has not expired.
    Present,
    /// None where the program keeps them.
    Absent,
    /// A credentials file holds a token whose expiry has passed.
    Expired,
    /// Cannot be told from files and variables (a login kept elsewhere, an
    /// unreadable file).
    Unknown,
}

/// The credential state, by the names of the sources only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthReport {
    /// The verdict.
    pub state: AuthState,
    /// The variable (`$NAME`) or file that decided it.
    pub source: Option<String>,
    /// Why, in words.
    pub reason: String,
    /// Every variable and file looked at.
    pub looked: Vec<String>,
}

/// What a directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DirRole {
    /// Settings and credentials.
    Config,
    /// Sessions and transcripts.
    Data,
}

/// A directory of the driver's program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirReport {
    /// What it holds.
    pub role: DirRole,
    /// Where.
    pub path: PathBuf,
    /// Whether it exists.
    pub exists: bool,
    /// The variable that moves it, and whether that variable set it.
    pub env_var: Option<String>,
    /// `true` when `env_var` is set for the program, `false` for its default.
    pub from_env: bool,
}

/// The models the configuration names (no network is asked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelsReport {
    /// The models (empty when no source names one).
    pub models: Vec<String>,
    /// Where they come from.
    pub source: ModelsSource,
}

/// Where a model list comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelsSource {
    /// A variable the program reads.
    Environment {
        /// Its name.
        var: String,
    },
    /// The program's settings file.
    ConfigFile {
        /// The file.
        path: PathBuf,
    },
    /// No offline source names a model.
    None {
        /// Why, and what the program does instead.
        reason: String,
    },
}

/// The usage quota.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum QuotaStatus {
    /// Not known offline.
    Unavailable {
        /// Why.
        reason: String,
    },
}

/// One health check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthCheck {
    /// What is checked (`binary on PATH`, `version supported`,
    /// `auth present` …).
    pub name: String,
    /// The verdict.
    pub ok: bool,
    /// Why.
    pub reason: String,
    /// What to do about a failure.
    pub hint: Option<String>,
}

impl HealthCheck {
    /// A check named `name` with verdict `ok`.
    pub(crate) fn new(name: &str, ok: bool, reason: impl Into<String>) -> Self {
        HealthCheck {
            name: name.into(),
            ok,
            reason: reason.into(),
            hint: None,
        }
    }

    /// With a hint, kept only for a failed check.
    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        if !self.ok {
            self.hint = Some(hint.into());
        }
        self
    }
}
