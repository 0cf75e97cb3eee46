//! What the harness reads from the shared PostgreSQL database: the leases
//! a killed instance held, the runs recorded as interrupted, and the
//! connections the instances use.

use sqlx::Row;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

/// The harness's own connections carry this name, so they are not counted.
const APPLICATION: &str = "agent-adaptor-bench-cluster";

/// A small pool of the harness's own.
pub async fn connect(url: &str) -> Result<PgPool, String> {
    let options: PgConnectOptions = url
        .parse::<PgConnectOptions>()
        .map_err(|e| format!("PG_TEST_URL: {e}"))?
        .application_name(APPLICATION);
    PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await
        .map_err(|e| format!("cannot connect to PostgreSQL: {e}"))
}

/// Connections to this database other than the harness's own.
pub async fn connections(pool: &PgPool) -> Result<i64, String> {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity \
         WHERE datname = current_database() AND application_name <> $1",
    )
    .bind(APPLICATION)
    .fetch_one(pool)
    .await
    .map_err(|e| format!("pg_stat_activity: {e}"))
}

/// The prompts of the runs whose leases `instance` holds.
pub async fn leased_prompts(pool: &PgPool, instance: &str) -> Result<Vec<String>, String> {
    let rows = sqlx::query(
        "SELECT COALESCE(prompt, '') AS prompt FROM agent_adaptor_thread_leases \
         WHERE starts_with(owner, $1)",
    )
    .bind(format!("{instance}@"))
    .fetch_all(pool)
    .await
    .map_err(|e| format!("leases: {e}"))?;
    rows.iter()
        .map(|r| r.try_get("prompt").map_err(|e| e.to_string()))
        .collect()
}

/// The prompts of every run recorded as interrupted.
pub async fn interrupted_prompts(pool: &PgPool) -> Result<Vec<String>, String> {
    let rows = sqlx::query(
        "SELECT COALESCE(prompt, '') AS prompt FROM agent_adaptor_interrupted_runs ORDER BY seq",
    )
    .fetch_all(pool)
    .await
    .map_err(|e| format!("interrupted runs: {e}"))?;
    rows.iter()
        .map(|r| r.try_get("prompt").map_err(|e| e.to_string()))
        .collect()
}

/// Whether a thread record's parameters (an llm thread's conversation)
/// hold `text`: the run that carried it was saved.
pub async fn saved(pool: &PgPool, text: &str) -> Result<bool, String> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM agent_adaptor_thread_records \
         WHERE strpos(params::text, $1) > 0)",
    )
    .bind(text)
    .fetch_one(pool)
    .await
    .map_err(|e| format!("thread records: {e}"))
}
