//! What a run asks for: [`ServiceSpec`] and its readiness check.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// How to tell that a service is ready.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Readiness {
    /// A TCP connect to `host:port` succeeds.
    Tcp(String),
    /// `GET` on an `http://` URL answers with a 2xx or 3xx status.
    Http(String),
}

impl Readiness {
    /// The address a run is told about.
    pub fn address(&self) -> &str {
        match self {
            Readiness::Tcp(a) | Readiness::Http(a) => a,
        }
    }
}

/// Whether a service outlives the runs that use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lifecycle {
    /// Kept until released by label (or the manager is dropped); reused by
    /// any run asking for the same name and labels.
    #[default]
    Shared,
    /// Stopped when the last run using it is released.
    Ephemeral,
}

/// A service a run needs before the agent starts.
#[derive(Clone)]
pub struct ServiceSpec {
    /// The service's name (reported).
    pub name: String,
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment the child gets (besides `PATH`, `HOME`, `LANG`, `TMPDIR`).
    pub env: BTreeMap<String, String>,
    /// Secret environment: reaches the child only; never reported, logged
    /// or printed (`Debug` shows the names only).
    pub secret_env: BTreeMap<String, String>,
    /// The working directory.
    pub cwd: Option<PathBuf>,
    /// The readiness check.
    pub readiness: Readiness,
    /// How long readiness may take.
    pub ready_timeout: Duration,
    /// Labels a later run reuses the service by.
    pub labels: BTreeMap<String, String>,
    /// Shared or ephemeral.
    pub lifecycle: Lifecycle,
}

impl std::fmt::Debug for ServiceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceSpec")
            .field("name", &self.name)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("secret_env", &self.secret_env.keys().collect::<Vec<_>>())
            .field("readiness", &self.readiness)
            .field("labels", &self.labels)
            .field("lifecycle", &self.lifecycle)
            .finish_non_exhaustive()
    }
}

impl ServiceSpec {
    /// A service named `name` running `command`, ready when `readiness` passes
    /// (default timeout 30 s, shared, no labels).
    pub fn new(name: impl Into<String>, command: impl Into<String>, readiness: Readiness) -> Self {
        ServiceSpec {
            name: name.into(),
            command: command.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            secret_env: BTreeMap::new(),
            cwd: None,
            readiness,
            ready_timeout: Duration::from_secs(30),
            labels: BTreeMap::new(),
            lifecycle: Lifecycle::Shared,
        }
    }

    /// Add arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Add a label.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Add a secret environment variable.
    pub fn secret_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.secret_env.insert(key.into(), value.into());
        self
    }

    /// Set the readiness timeout.
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// Set the lifecycle.
    pub fn lifecycle(mut self, lifecycle: Lifecycle) -> Self {
        self.lifecycle = lifecycle;
        self
    }
}

/// The typed errors of ensuring services.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// The readiness check is not one this manager can run.
    #[error("service {name}: readiness {what:?} is not supported (tcp host:port or http:// URL)")]
    InvalidReadiness {
        /// The service.
        name: String,
        /// The check as given.
        what: String,
    },
    /// The program could not be started.
    #[error("service {name}: could not start: {source}")]
    Spawn {
        /// The service.
        name: String,
        /// The cause.
        #[source]
        source: agent_adaptor_process::ProcessError,
    },
    /// Readiness never came (timeout, or the process exited first).
    #[error("service {name} not ready: {why}; stderr tail: {stderr_tail}")]
    NotReady {
        /// The service.
        name: String,
        /// What happened.
        why: String,
        /// The last bytes the service wrote to stderr.
        stderr_tail: String,
    },
}
