//! The open connections of one server: counted (for the limit and the
//! drain), and searchable for the one idle the longest (to make room).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

use super::conn::ConnState;

/// How long making room waits for a chosen connection to close before it
/// chooses another.
const EVICT_RETRY: Duration = Duration::from_millis(250);

/// The open connections.
pub(super) struct Registry {
    conns: Mutex<HashMap<u64, Arc<ConnState>>>,
    count: watch::Sender<usize>,
}

impl Registry {
    pub(super) fn new() -> Self {
        Registry {
            conns: Mutex::new(HashMap::new()),
            count: watch::channel(0).0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Arc<ConnState>>> {
        self.conns.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn insert(&self, conn: Arc<ConnState>) {
        let mut conns = self.lock();
        conns.insert(conn.id, conn);
        self.count.send_replace(conns.len());
    }

    pub(super) fn remove(&self, id: u64) {
        let mut conns = self.lock();
        conns.remove(&id);
        self.count.send_replace(conns.len());
    }

    /// Ask the connection idle the longest to close; false when none is.
    pub(super) fn evict_oldest_idle(&self) -> bool {
        let oldest = self
            .lock()
            .values()
            .filter_map(|c| c.idle_since().map(|t| (t, c.clone())))
            .min_by_key(|(t, _)| *t);
        match oldest {
            Some((_, conn)) => {
                conn.evict();
                true
            }
            None => false,
        }
    }

    /// Resolves when fewer than `max` connections are open, closing idle
    /// ones to get there.
    pub(super) async fn make_room(&self, max: usize) {
        let mut count = self.count.subscribe();
        loop {
            let open = *count.borrow_and_update();
            if open < max {
                return;
            }
            if self.evict_oldest_idle() {
                tracing::debug!(
                    open,
                    max,
                    "connection limit reached; closing the oldest idle one"
                );
            } else {
                tracing::debug!(
                    open,
                    max,
                    "connection limit reached and none is idle; waiting"
                );
            }
            // Wait for a close; retry now and then in case the chosen one
            // became busy (a request arrived as it was chosen).
            let _ = tokio::time::timeout(EVICT_RETRY, count.changed()).await;
        }
    }

    /// Resolves when no connection is open.
    pub(super) async fn empty(&self) {
        let mut count = self.count.subscribe();
        let _ = count.wait_for(|n| *n == 0).await;
    }

    /// How many connections are open.
    pub(super) fn len(&self) -> usize {
        *self.count.borrow()
    }
}
