//! Who still reads a run: a run whose clients all left is cancelled only
//! after a grace with no reader, here or — through the desk's
//! notifications — on another host replaying it from the event log.

use std::time::Duration;

use tokio::time::Instant;

use super::hub::Hub;
use crate::desk::Desk;

/// The notification topic a remote reader sends, with the core run id.
pub(crate) const TOPIC_READER: &str = "reader";

/// How a run's producer decides that nobody reads it any more.
#[derive(Clone, Debug)]
pub(crate) struct Presence {
    /// Where remote readers announce themselves (none: local readers only).
    pub(crate) desk: Option<Desk>,
    /// How long a run without a reader goes on (zero: it is cancelled as
    /// soon as its last client leaves).
    pub(crate) grace: Duration,
    /// The core run id remote readers name.
    pub(crate) run_id: String,
}

impl Presence {
    /// Whether frames must be read as they come (no grace: a run nobody
    /// reads ends at once).
    pub(crate) fn must_be_read(&self) -> bool {
        self.grace.is_zero()
    }

    /// Resolves once the run has had no reader for the grace: no client
    /// attached here and no reader's notice from another host.
    pub(crate) async fn deserted(&self, hub: &Hub) {
        loop {
            hub.abandoned().await;
            if self.grace.is_zero() {
                return;
            }
            let mut wake = match &self.desk {
                Some(desk) => Some(desk.wake(TOPIC_READER, &self.run_id).await),
                None => None,
            };
            let mut deadline = Instant::now() + self.grace;
            loop {
                let heard = async {
                    match wake.as_mut() {
                        Some(w) => w.next().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = hub.attached() => break,
                    notified = heard => {
                        if notified {
                            deadline = Instant::now() + self.grace;
                        }
                    }
                    () = tokio::time::sleep_until(deadline) => {
                        tracing::debug!(run_id = %self.run_id, "no reader within the grace");
                        return;
                    }
                }
            }
        }
    }
}

/// How often a remote reader announces itself: three times per grace.
pub(crate) fn announce_every(grace: Duration) -> Duration {
    (grace / 3).max(Duration::from_millis(50))
}
