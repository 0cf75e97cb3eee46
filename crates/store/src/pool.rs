//! Pool hygiene shared by the SQL stores: a connection that comes back
//! from a failed transaction is discarded, never reused.

use sqlx::pool::PoolOptions;
use sqlx::{Connection, Database};

/// `options` with release and acquire checks that close any pooled
/// connection still inside a transaction.
///
/// A transaction whose `COMMIT` or `ROLLBACK` failed leaves sqlx's
/// transaction depth above zero. SQLite, for one, rolls a transaction back
/// by itself on `SQLITE_FULL`, so the later `ROLLBACK` fails ("no
/// transaction is active") and the connection would go back to the pool
/// marked as inside a transaction: every later `BEGIN` on it fails
/// (`attempted to call begin_with at non-zero transaction depth`). Closing
/// such a connection (which also rolls back whatever the database still
/// holds, releasing its locks) lets the store recover by itself.
pub(crate) fn discard_dirty_connections<DB: Database>(options: PoolOptions<DB>) -> PoolOptions<DB> {
    options
        .after_release(|conn, _meta| {
            Box::pin(async move {
                // A dropped transaction queues its rollback: the ping waits
                // for it, so the depth read next is the settled one.
                conn.ping().await?;
                let clean = !conn.is_in_transaction();
                if !clean {
                    tracing::warn!(
                        "thread store: discarding a pooled connection left inside a failed transaction"
                    );
                }
                Ok(clean)
            })
        })
        .before_acquire(|conn, _meta| Box::pin(async move { Ok(!conn.is_in_transaction()) }))
}
