//! Encoding shared by the SQL stores: statuses, params, tokens, TTLs.

use std::time::Duration;

use agent_adaptor_core::driver::SessionParams;
use agent_adaptor_core::thread::{RecordStatus, StoreError};

use crate::MAX_LEASE_TTL;
use crate::error::backend_msg;

/// The column value of a status.
pub(crate) fn status_str(status: RecordStatus) -> &'static str {
    match status {
        RecordStatus::Active => "active",
        RecordStatus::Archived => "archived",
    }
}

/// A status column value back to the enum.
pub(crate) fn parse_status(id: &str, value: &str) -> Result<RecordStatus, StoreError> {
    match value {
        "active" => Ok(RecordStatus::Active),
        "archived" => Ok(RecordStatus::Archived),
        other => Err(backend_msg(
            "decode record",
            format!("record {id} has unknown status {other:?}"),
        )),
    }
}

/// Params as the JSON text stored in the `params` column.
pub(crate) fn encode_params(params: &SessionParams) -> Result<String, StoreError> {
    serde_json::to_string(params).map_err(|e| backend_msg("encode params", e))
}

/// The `params` column back to params; a record that does not decode is
/// reported, never returned half-read.
pub(crate) fn decode_params(id: &str, json: &str) -> Result<SessionParams, StoreError> {
    serde_json::from_str(json).map_err(|e| {
        backend_msg(
            "decode record",
            format!("record {id} has invalid params: {e}"),
        )
    })
}

/// A fresh lease token (128 random bits).
pub(crate) fn new_token() -> String {
    format!("lease_{:032x}", rand::random::<u128>())
}

/// A TTL in microseconds, clamped to [`MAX_LEASE_TTL`].
pub(crate) fn ttl_micros(ttl: Duration) -> i64 {
    let micros = ttl.min(MAX_LEASE_TTL).as_micros();
    i64::try_from(micros).unwrap_or(i64::MAX)
}

/// The statements of a migration script: split on `;` (the scripts keep
/// semicolons out of strings and comments), dropping chunks that hold only
/// whitespace and `--` comments.
pub(crate) fn sql_statements(script: &'static str) -> Vec<&'static str> {
    script
        .split(';')
        .filter(|chunk| {
            chunk
                .lines()
                .map(str::trim)
                .any(|line| !line.is_empty() && !line.starts_with("--"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_are_clamped_and_tokens_are_unique() {
        assert_eq!(ttl_micros(Duration::from_millis(1)), 1000);
        assert_eq!(ttl_micros(Duration::MAX), ttl_micros(MAX_LEASE_TTL));
        assert_ne!(new_token(), new_token());
    }

    #[test]
    fn migration_scripts_split_into_their_statements() {
        let sqlite = sql_statements(include_str!("../migrations/sqlite/0001_threads.sql"));
        let postgres = sql_statements(include_str!("../migrations/postgres/0001_threads.sql"));
        assert_eq!(sqlite.len(), 4);
        assert_eq!(postgres.len(), 4);
        for statement in sqlite.iter().chain(&postgres) {
            let first = statement
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with("--"));
            assert!(
                first.is_some_and(|l| l.starts_with("CREATE ")),
                "a statement starts mid-comment: {statement}"
            );
        }
        let sqlite = sql_statements(include_str!(
            "../migrations/sqlite/0002_interrupted_runs.sql"
        ));
        let postgres = sql_statements(include_str!(
            "../migrations/postgres/0002_interrupted_runs.sql"
        ));
        assert_eq!((sqlite.len(), postgres.len()), (4, 4));
        assert_eq!(
            sql_statements("-- only a comment;\n  ;"),
            Vec::<&str>::new()
        );
    }

    #[test]
    fn statuses_round_trip_and_garbage_is_an_error() {
        for s in [RecordStatus::Active, RecordStatus::Archived] {
            assert_eq!(parse_status("r", status_str(s)), Ok(s));
        }
        assert!(matches!(
            parse_status("r", "zombie"),
            Err(StoreError::Backend(_))
        ));
        assert!(matches!(
            decode_params("r", "{\"resume_id\":"),
            Err(StoreError::Backend(_))
        ));
    }
}
