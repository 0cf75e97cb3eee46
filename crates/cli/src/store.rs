//! `--store`: where threads live. `sqlite:PATH` (or a bare path) opens an
//! embedded SQLite file; `postgres://…` connects to a PostgreSQL server
//! shared by several hosts. Without it, a SQLite file in the user's data
//! directory ([`default_sqlite_path`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::ThreadStore;
use agent_adaptor_core::thread::StoreError;
use agent_adaptor_store::{PgConfig, PgStore, SqliteStore};

use crate::error::CliError;

/// How long connecting to PostgreSQL may take before the command gives up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An opened thread store and how to describe it.
#[derive(Clone)]
pub struct OpenedStore {
    /// The store.
    pub store: Arc<dyn ThreadStore>,
    /// `sqlite /path/threads.db` or `postgres host:port/db` (no credentials).
    pub description: String,
    /// What names this store in records of other processes: the canonical
    /// path of a SQLite file, the redacted URL of a PostgreSQL server.
    pub identity: String,
}

/// The default SQLite file: `$AGENT_ADAPTOR_HOME/threads.db`, else
/// `$XDG_DATA_HOME/agent-adaptor/threads.db`, else
/// `~/.local/share/agent-adaptor/threads.db`, else `./.agent-adaptor/threads.db`.
pub fn default_sqlite_path() -> PathBuf {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var("AGENT_ADAPTOR_HOME") {
        return dir.join("threads.db");
    }
    if let Some(dir) = var("XDG_DATA_HOME") {
        return dir.join("agent-adaptor").join("threads.db");
    }
    if let Some(home) = var("HOME") {
        return home
            .join(".local")
            .join("share")
            .join("agent-adaptor")
            .join("threads.db");
    }
    PathBuf::from(".agent-adaptor").join("threads.db")
}

/// What a `--store` value names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL URL.
    Postgres(String),
}

impl StoreSpec {
    /// Parse a `--store` value (`None`: the default SQLite file).
    pub fn parse(value: Option<&str>) -> Result<StoreSpec, CliError> {
        let Some(value) = value else {
            return Ok(StoreSpec::Sqlite(default_sqlite_path()));
        };
        if value.starts_with("postgres://") || value.starts_with("postgresql://") {
            return Ok(StoreSpec::Postgres(value.to_owned()));
        }
        let path = value.strip_prefix("sqlite:").unwrap_or(value);
        let path = path.strip_prefix("//").unwrap_or(path);
        if path.is_empty() || value.contains("://") && !value.starts_with("sqlite:") {
            return Err(CliError::usage(format!(
                "--store {value:?}: expected sqlite:PATH or postgres://USER@HOST:PORT/DB"
            )));
        }
        Ok(StoreSpec::Sqlite(PathBuf::from(path)))
    }

    /// Open (SQLite: create if missing) or connect.
    pub async fn open(&self) -> Result<OpenedStore, CliError> {
        match self {
            StoreSpec::Sqlite(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        CliError::failure(format!(
                            "cannot create the thread store directory {}: {e}",
                            dir.display()
                        ))
                    })?;
                }
                let store = SqliteStore::open(path).await.map_err(|e| {
                    CliError::failure(format!(
                        "cannot open the thread store {}: {}",
                        path.display(),
                        cause(&e)
                    ))
                })?;
                let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
                Ok(OpenedStore {
                    store: Arc::new(store),
                    description: format!("sqlite {}", path.display()),
                    identity: format!("sqlite:{}", canonical.display()),
                })
            }
            StoreSpec::Postgres(url) => {
                let where_ = redact(url);
                let config = PgConfig {
                    acquire_timeout: CONNECT_TIMEOUT / 2,
                    ..PgConfig::default()
                };
                let connect = PgStore::connect_with(url, config);
                let store = match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
                    Ok(Ok(store)) => store,
                    Ok(Err(e)) => {
                        return Err(CliError::failure(format!(
                            "cannot connect to the thread store {where_}: {}",
                            cause(&e)
                        )));
                    }
                    Err(_) => {
                        return Err(CliError::failure(format!(
                            "cannot connect to the thread store {where_}: no answer within {}s",
                            CONNECT_TIMEOUT.as_secs()
                        )));
                    }
                };
                Ok(OpenedStore {
                    store: Arc::new(store),
                    description: format!("postgres {where_}"),
                    identity: where_,
                })
            }
        }
    }
}

/// A store failure for a message that already says "thread store": the
/// backend's own text (which names the root cause, see the store crate)
/// without the "thread store backend:" prefix, else the error.
pub fn cause(e: &StoreError) -> String {
    match e {
        StoreError::Backend(detail) => detail.clone(),
        other => other.to_string(),
    }
}

/// A PostgreSQL URL without its user info (`postgres://host:port/db`).
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "postgres".into();
    };
    let rest = match rest.rsplit_once('@') {
        Some((_, host)) => host,
        None => rest,
    };
    let rest = rest.split('?').next().unwrap_or(rest);
    format!("{scheme}://{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_values_parse() {
        assert_eq!(
            StoreSpec::parse(Some("sqlite:/tmp/x.db")).ok(),
            Some(StoreSpec::Sqlite("/tmp/x.db".into()))
        );
        assert_eq!(
            StoreSpec::parse(Some("t.db")).ok(),
            Some(StoreSpec::Sqlite("t.db".into()))
        );
        assert!(matches!(
            StoreSpec::parse(Some("postgres://u:p@h:5432/db")),
            Ok(StoreSpec::Postgres(_))
        ));
        assert!(StoreSpec::parse(Some("mysql://h/db")).is_err());
        assert!(StoreSpec::parse(Some("sqlite:")).is_err());
    }

    #[test]
    fn urls_lose_their_credentials() {
        assert_eq!(
            redact("postgres://user:secret@db.example:5432/app?sslmode=disable"),
            "postgres://db.example:5432/app"
        );
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
    }
}
