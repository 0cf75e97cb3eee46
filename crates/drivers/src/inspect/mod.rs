//! Inspection: what each driver the CLI can select would find on this
//! machine — its program and version, its credentials, its directories,
//! the models its configuration names, its quota, and health checks over
//! them — as a typed, serializable [`DriverReport`].
//!
//! Covered: the CLI drivers (`claude`, `codex`, `gemini`, `cursor`,
//! `codebuddy`), every named ACP agent (`acp:NAME`) and the LLM providers
//! (`llm:openai`, `llm:anthropic`, `llm:gemini`, `llm:openrouter`).
//!
//! What it does: reads files and variables, and runs `<program>
//! --version` through the process helper with the environment a run would
//! give the program (the default allowlist, never this process's whole
//! environment) and a time budget. What it never does: call the network,
//! write a file itself, or report a secret — a credential appears as the
//! name of its variable or the path of its file; of a credentials file
//! only the token's expiry time and the presence of a refresh token are
//! read. The programs are another matter: some write their home even for
//! `--version` (Gemini CLI's `~/.gemini`, opencode's and Copilot's caches).
//!
//! ```no_run
//! # async fn f() -> Result<(), agent_adaptor_drivers::inspect::InspectError> {
//! let reports = agent_adaptor_drivers::inspect::report_all().await?;
//! for r in &reports {
//!     println!("{}: {}", r.driver, if r.healthy() { "ok" } else { "needs care" });
//! }
//! # Ok(()) }
//! ```

mod auth;
mod probe;
mod report;
mod targets;
#[cfg(test)]
mod tests;
mod version;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use report::{
    AuthReport, AuthState, BinaryReport, DirReport, DirRole, DriverKind, DriverReport, HealthCheck,
    ModelsReport, ModelsSource, QuotaStatus, VersionReport,
};

use targets::Subject;
use version::Versions;

/// The host's variables, as inspection sees them (by default this
/// process's environment).
pub type HostEnv = BTreeMap<OsString, OsString>;

/// The variables a driver's child would get.
type ChildEnv = BTreeMap<OsString, OsString>;

/// How long `<program> --version` may take.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// Why an inspection could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InspectError {
    /// No driver has this name.
    #[error("unknown driver {name:?} (expected one of: {known}, or acp / llm for all of a family)")]
    UnknownDriver {
        /// The name asked for.
        name: String,
        /// The names known, comma-separated.
        known: String,
    },
    /// An inspection task ended without a report (it panicked or its
    /// runtime shut down).
    #[error("the inspection of {driver} ended without a report: {reason}")]
    Interrupted {
        /// The driver.
        driver: String,
        /// What happened.
        reason: String,
    },
}

/// The inspection of one driver.
#[derive(Debug, Clone)]
pub struct Inspector {
    subject: Subject,
    host: Arc<HostEnv>,
    version_timeout: Duration,
}

impl Inspector {
    fn of(subject: Subject) -> Self {
        Inspector {
            subject,
            host: Arc::new(std::env::vars_os().collect()),
            version_timeout: VERSION_TIMEOUT,
        }
    }

    /// Every driver, in the CLI's order: the CLI drivers, the ACP agents,
    /// the LLM providers.
    pub fn all() -> Vec<Inspector> {
        targets::all().into_iter().map(Inspector::of).collect()
    }

    /// The names of every driver (`claude` … `acp:gemini` … `llm:openai`).
    pub fn names() -> Vec<&'static str> {
        targets::all().iter().map(|s| s.name).collect()
    }

    /// The driver called `name`.
    ///
    /// # Errors
    ///
    /// [`InspectError::UnknownDriver`] when no driver has that name.
    pub fn named(name: &str) -> Result<Inspector, InspectError> {
        targets::all()
            .into_iter()
            .find(|s| s.name == name)
            .map(Inspector::of)
            .ok_or_else(|| unknown(name))
    }

    /// The driver called `name`, or every driver of a family: `acp` (every
    /// ACP agent), `llm` (every LLM provider).
    ///
    /// # Errors
    ///
    /// [`InspectError::UnknownDriver`] when neither a driver nor a family
    /// has that name.
    pub fn matching(name: &str) -> Result<Vec<Inspector>, InspectError> {
        let family = match name {
            "acp" => Some(DriverKind::Acp),
            "llm" => Some(DriverKind::Llm),
            _ => None,
        };
        match family {
            Some(kind) => Ok(targets::all()
                .into_iter()
                .filter(|s| s.kind == kind)
                .map(Inspector::of)
                .collect()),
            None => Inspector::named(name).map(|i| vec![i]),
        }
    }

    /// The driver's name.
    pub fn driver(&self) -> &'static str {
        self.subject.name
    }

    /// Inspect as if the host's variables were `env` (tests, or a host
    /// that inspects for another environment than its own).
    pub fn with_host_env(mut self, env: HostEnv) -> Self {
        self.host = Arc::new(env);
        self
    }

    /// How long `<program> --version` may take (default
    /// [`VERSION_TIMEOUT`]).
    pub fn with_version_timeout(mut self, timeout: Duration) -> Self {
        self.version_timeout = timeout;
        self
    }

    /// Inspect the driver. Every finding, a failure included, is in the
    /// report; nothing here fails.
    pub async fn report(&self) -> DriverReport {
        self.report_with(&Versions::default()).await
    }

    async fn report_with(&self, versions: &Versions) -> DriverReport {
        probe::report(
            &self.subject,
            &self.host,
            self.version_timeout,
            SystemTime::now(),
            versions,
        )
        .await
    }
}

fn unknown(name: &str) -> InspectError {
    InspectError::UnknownDriver {
        name: name.into(),
        known: Inspector::names().join(", "),
    }
}

/// Inspect every driver, in parallel; the reports in [`Inspector::all`]'s
/// order.
///
/// # Errors
///
/// [`InspectError::Interrupted`] when an inspection task ends without its
/// report.
pub async fn report_all() -> Result<Vec<DriverReport>, InspectError> {
    report_each(&Inspector::all()).await
}

/// Inspect each of `inspectors`, in parallel (one task each, on the
/// current tokio runtime, which must have I/O and time enabled: the
/// `--version` children run on it); the reports in their order.
///
/// # Errors
///
/// [`InspectError::Interrupted`] when an inspection task ends without its
/// report.
pub async fn report_each(inspectors: &[Inspector]) -> Result<Vec<DriverReport>, InspectError> {
    let mut set = tokio::task::JoinSet::new();
    let mut ids = std::collections::HashMap::new();
    // A program two drivers start is asked for its version once.
    let versions = Arc::new(Versions::default());
    for (i, inspector) in inspectors.iter().cloned().enumerate() {
        let versions = versions.clone();
        let handle = set.spawn(async move { (i, inspector.report_with(&versions).await) });
        ids.insert(handle.id(), i);
    }
    let mut reports: Vec<Option<DriverReport>> = vec![None; inspectors.len()];
    while let Some(done) = set.join_next_with_id().await {
        match done {
            Ok((_, (i, report))) => reports[i] = Some(report),
            Err(e) => {
                let driver = ids
                    .get(&e.id())
                    .and_then(|i| inspectors.get(*i))
                    .map_or("a driver", Inspector::driver);
                return Err(InspectError::Interrupted {
                    driver: driver.into(),
                    reason: e.to_string(),
                });
            }
        }
    }
    reports
        .into_iter()
        .zip(inspectors)
        .map(|(r, i)| {
            r.ok_or_else(|| InspectError::Interrupted {
                driver: i.driver().into(),
                reason: "no report".into(),
            })
        })
        .collect()
}
