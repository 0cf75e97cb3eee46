//! PostgreSQL notifications: `pg_notify('agent_adaptor', 'topic:id')`
//! out, one `LISTEN agent_adaptor` connection per store value in (started
//! by the first [`listen`](agent_adaptor_core::thread::ThreadStore::listen)),
//! feeding a broadcast every listener of the value subscribes to. A lost
//! connection is logged and reopened with backoff; what was sent
//! meanwhile is missed (the contract allows it: waiters also poll).

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use agent_adaptor_core::thread::StoreError;
use agent_adaptor_core::thread::durable::{NOTIFICATION_CAPACITY, Notification, Notifications};
use sqlx::PgPool;
use sqlx::postgres::{PgListener, PgPoolOptions};
use tokio::sync::broadcast;

use crate::error::backend;

/// The `LISTEN` channel.
pub(crate) const CHANNEL: &str = "agent_adaptor";

/// The longest pause between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// How often an idle listener checks that its store value still exists.
const LIVENESS: Duration = Duration::from_secs(30);

/// A store value's listener, started on first use.
#[derive(Default)]
pub(crate) struct PgNotifications {
    sender: Mutex<Option<Arc<broadcast::Sender<Notification>>>>,
}

impl PgNotifications {
    /// Send `notification` to every host listening on the database.
    pub(crate) async fn notify(
        pool: &PgPool,
        notification: &Notification,
    ) -> Result<(), StoreError> {
        notification.check()?;
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(notification.payload())
            .execute(pool)
            .await
            .map_err(|e| backend("postgres notify", &e))?;
        Ok(())
    }

    /// A new listener; the first call connects (and fails if it cannot).
    /// The `LISTEN` connection is its own (a one-connection pool with the
    /// store's options), not one of the store's pool: a store configured
    /// with a single connection keeps it for its queries.
    pub(crate) async fn listen(&self, pool: &PgPool) -> Result<Notifications, StoreError> {
        if let Some(sender) = self.lock().as_ref() {
            return Ok(sender.subscribe());
        }
        let own = PgPoolOptions::new()
            .max_connections(1)
            .connect_lazy_with((*pool.connect_options()).clone());
        let first = connect(&own).await?;
        let mut slot = self.lock();
        // Another caller may have started one meanwhile: use theirs.
        if let Some(sender) = slot.as_ref() {
            return Ok(sender.subscribe());
        }
        let sender = Arc::new(broadcast::Sender::new(NOTIFICATION_CAPACITY));
        let receiver = sender.subscribe();
        let weak = Arc::downgrade(&sender);
        *slot = Some(sender);
        drop(slot);
        tokio::spawn(async move {
            let mut listener = first;
            loop {
                // The lost connection goes back (closed) before the next
                // is taken from the one-connection pool.
                forward(listener, &weak).await;
                match reconnect(&own, &weak).await {
                    Some(again) => listener = again,
                    None => return,
                }
            }
        });
        Ok(receiver)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<broadcast::Sender<Notification>>>> {
        self.sender.lock().unwrap_or_else(|p| p.into_inner())
    }
}

async fn connect(pool: &PgPool) -> Result<PgListener, StoreError> {
    let err = |e: sqlx::Error| backend("postgres listen", &e);
    let mut listener = PgListener::connect_with(pool).await.map_err(err)?;
    // No silent reconnection inside sqlx: a lost connection surfaces here
    // and is logged.
    listener.ignore_pool_close_event(false);
    listener.listen(CHANNEL).await.map_err(err)?;
    Ok(listener)
}

/// Forward notifications until the connection fails or the store value
/// is gone; then let the connection go.
async fn forward(mut listener: PgListener, weak: &Weak<broadcast::Sender<Notification>>) {
    loop {
        let next = tokio::time::timeout(LIVENESS, listener.try_recv()).await;
        let Some(sender) = weak.upgrade() else {
            return;
        };
        match next {
            // Idle: check again.
            Err(_) => continue,
            Ok(Ok(Some(message))) => {
                if let Some(n) = Notification::from_payload(message.payload()) {
                    let _ = sender.send(n);
                }
            }
            Ok(Ok(None)) => {
                tracing::warn!(
                    "postgres notifications: the connection was lost; \
                     listeners may miss notifications until it is back"
                );
                return;
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %backend("postgres listen", &e), "postgres notifications failed");
                return;
            }
        }
    }
}

/// Connect again, pausing longer after each failure; `None` when the
/// store value is gone.
async fn reconnect(
    pool: &PgPool,
    weak: &Weak<broadcast::Sender<Notification>>,
) -> Option<PgListener> {
    let mut pause = Duration::from_millis(100);
    loop {
        weak.upgrade()?;
        match connect(pool).await {
            Ok(listener) => {
                tracing::info!("postgres notifications: listening again");
                return Some(listener);
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in = ?pause, "postgres notifications: reconnect failed");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_BACKOFF);
            }
        }
    }
}
