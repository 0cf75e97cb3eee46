//! The desk: what the bridges of several hosts over one thread store tell
//! each other, and the pending approvals they share.
//!
//! * [`Desk::ask`] keeps a pending approval as a store row
//!   ([`ApprovalRow`]) and returns a [`Ticket`] the run's host waits on;
//!   [`Desk::answer`] (on any host) answers the row once and notifies
//!   ([`Desk::answer_checked`]: after the checks every bridge makes). The
//!   waiting host learns it from the store's notifications
//!   ([`ThreadStore::listen`]; PostgreSQL `LISTEN/NOTIFY`) and, whatever
//!   happens to those, by reading the row again every poll period. A
//!   passed deadline expires the row (the run is then denied); a run that
//!   ends first expires it ([`Ticket::expire`]); a host that dies has its
//!   rows expired by the store with its lease. A row is never answered
//!   after it expired.
//! * [`Desk::wake`] is the same wake-up for anything else a bridge follows
//!   across hosts (a task's updates, a run's readers): it fires on a
//!   matching notification or after the poll period.
//!
//! A store without notifications is followed by polling alone; one whose
//! listener cannot start (or stopped) is polled until a later wake starts
//! it again.

mod answer;

pub use answer::NotAnswered;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_adaptor_core::ThreadStore;
use agent_adaptor_core::thread::durable::{
    AnswerRefused, ApprovalRow, ApprovalState, NewApproval, Notification, TOPIC_APPROVAL,
};
use agent_adaptor_core::thread::store::StoreError;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::sync::broadcast::error::RecvError;

/// How often a waiter reads its row again without a notification.
pub const DEFAULT_POLL: Duration = Duration::from_millis(500);

type Topic = (String, String);

struct Inner {
    store: Arc<dyn ThreadStore>,
    poll: Duration,
    /// Per (topic, id): the waiters to wake, and how many there are.
    waiters: Mutex<HashMap<Topic, (Arc<Notify>, usize)>>,
    /// Whether the listener task runs (or when to try starting it again).
    listening: tokio::sync::Mutex<Listening>,
}

/// Where starting the desk's listener stands.
#[derive(Debug, Clone, Copy)]
enum Listening {
    /// Not tried yet, or failed: try again at the first wake from this
    /// instant on.
    Retry(tokio::time::Instant),
    /// The listener task runs, or the store has no notifications: waiters
    /// poll.
    Settled,
}

/// Shared approvals and cross-host wake-ups over one thread store. Cheap
/// to clone.
#[derive(Clone)]
pub struct Desk {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Desk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desk")
            .field("poll", &self.inner.poll)
            .finish_non_exhaustive()
    }
}

/// How a pending approval ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    /// Answered (on this host or another): the row, with its answer.
    Answered(Box<ApprovalRow>),
    /// Expired: its deadline passed, or it was expired elsewhere (its run
    /// ended, its host was taken over).
    Expired,
}

impl Desk {
    /// A desk over `store`, reading rows again every [`DEFAULT_POLL`].
    pub fn new(store: Arc<dyn ThreadStore>) -> Self {
        Self::with_poll(store, DEFAULT_POLL)
    }

    /// A desk that reads rows again every `poll` (at least 10 ms).
    pub fn with_poll(store: Arc<dyn ThreadStore>, poll: Duration) -> Self {
        Desk {
            inner: Arc::new(Inner {
                store,
                poll: poll.max(Duration::from_millis(10)),
                waiters: Mutex::new(HashMap::new()),
                listening: tokio::sync::Mutex::new(Listening::Retry(tokio::time::Instant::now())),
            }),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn ThreadStore> {
        &self.inner.store
    }

    /// Keep `approval` pending and return the ticket to wait on.
    pub async fn ask(&self, approval: NewApproval) -> Result<Ticket, StoreError> {
        let id = approval.id.clone();
        // Listen before the row exists: an answer right after cannot be missed.
        let wake = self.wake(TOPIC_APPROVAL, &id).await;
        self.inner.store.put_approval(approval).await?;
        Ok(Ticket {
            desk: self.clone(),
            id,
            wake,
        })
    }

    /// Answer approval `id` as `principal` (the digest the row keeps) and
    /// tell the host waiting on it. The inner error says why the store
    /// refused the answer.
    pub async fn answer(
        &self,
        id: &str,
        principal: &str,
        answer: Value,
    ) -> Result<Result<ApprovalRow, AnswerRefused>, StoreError> {
        let answered = self
            .inner
            .store
            .answer_approval(id, principal, answer)
            .await?;
        if answered.is_ok() {
            self.notify(TOPIC_APPROVAL, id).await;
        }
        Ok(answered)
    }

    /// The approval `id`, in whatever state.
    pub async fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, StoreError> {
        self.inner.store.approval(id).await
    }

    /// Tell every host that `(topic, id)` changed. Best effort: a failure
    /// is logged (the hosts' polling catches up).
    pub async fn notify(&self, topic: &str, id: &str) {
        let n = Notification::new(topic, id);
        match self.inner.store.notify(&n).await {
            Ok(()) => {}
            Err(StoreError::Unsupported(_)) => self.wake_local(&(n.topic, n.id)),
            Err(e) => {
                tracing::warn!(topic, error = %e, "desk: a notification could not be sent; other hosts poll");
                self.wake_local(&(n.topic, n.id));
            }
        }
    }

    /// A wake-up for `(topic, id)`: fires on a matching notification, or
    /// after the poll period.
    pub async fn wake(&self, topic: &str, id: &str) -> Wake {
        self.listen().await;
        let key = (topic.to_owned(), id.to_owned());
        let notify = {
            let mut waiters = self.waiters();
            let entry = waiters
                .entry(key.clone())
                .or_insert_with(|| (Arc::new(Notify::new()), 0));
            entry.1 += 1;
            entry.0.clone()
        };
        Wake {
            desk: self.clone(),
            key,
            notify,
        }
    }

    fn waiters(&self) -> MutexGuard<'_, HashMap<Topic, (Arc<Notify>, usize)>> {
        self.inner.waiters.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wake_local(&self, key: &Topic) {
        if let Some((notify, _)) = self.waiters().get(key) {
            notify.notify_waiters();
        }
    }

    fn wake_all(&self) {
        for (notify, _) in self.waiters().values() {
            notify.notify_waiters();
        }
    }

    /// Start the listener, once it works: a store that failed to listen
    /// is asked again by the first wake a poll period later (waiters poll
    /// meanwhile); one without notifications is never asked again.
    async fn listen(&self) {
        let mut listening = self.inner.listening.lock().await;
        let Listening::Retry(at) = *listening else {
            return;
        };
        if tokio::time::Instant::now() < at {
            return;
        }
        *listening = match self.inner.store.listen().await {
            Ok(rx) => {
                tokio::spawn(dispatch(Arc::downgrade(&self.inner), rx));
                Listening::Settled
            }
            Err(StoreError::Unsupported(_)) => Listening::Settled,
            Err(e) => {
                tracing::warn!(error = %e, "desk: cannot listen to the store; polling, trying again later");
                Listening::Retry(tokio::time::Instant::now() + self.inner.poll)
            }
        };
    }
}

/// Wake the waiters of each notification until the desk is gone.
async fn dispatch(
    inner: std::sync::Weak<Inner>,
    mut rx: agent_adaptor_core::thread::durable::Notifications,
) {
    loop {
        let received = rx.recv().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let desk = Desk { inner };
        match received {
            Ok(n) => desk.wake_local(&(n.topic, n.id)),
            // Some were lost: everyone reads again.
            Err(RecvError::Lagged(_)) => desk.wake_all(),
            Err(RecvError::Closed) => {
                tracing::warn!(
                    "desk: the store's notifications stopped; polling, listening again later"
                );
                *desk.inner.listening.lock().await =
                    Listening::Retry(tokio::time::Instant::now() + desk.inner.poll);
                desk.wake_all();
                return;
            }
        }
    }
}

/// A registered wake-up (see [`Desk::wake`]). Dropping it unregisters.
pub struct Wake {
    desk: Desk,
    key: Topic,
    notify: Arc<Notify>,
}

impl std::fmt::Debug for Wake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wake").field("key", &self.key).finish()
    }
}

impl Wake {
    /// Resolves on a matching notification (`true`) or after the poll
    /// period (`false`); starts the desk's listener if it is due another
    /// try. Cancel-safe. A notification sent while nobody
    /// awaited is covered by the next poll.
    pub async fn next(&mut self) -> bool {
        // A listener that could not start is tried again meanwhile.
        self.desk.listen().await;
        let notified = self.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        tokio::time::timeout(self.desk.inner.poll, notified)
            .await
            .is_ok()
    }

    /// The poll period.
    pub fn poll(&self) -> Duration {
        self.desk.inner.poll
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        let mut waiters = self.desk.waiters();
        if let Some(entry) = waiters.get_mut(&self.key) {
            entry.1 -= 1;
            if entry.1 == 0 {
                waiters.remove(&self.key);
            }
        }
    }
}

/// A pending approval this host waits on (see [`Desk::ask`]).
#[derive(Debug)]
pub struct Ticket {
    desk: Desk,
    id: String,
    wake: Wake,
}

impl Ticket {
    /// The approval's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Wait until the approval is answered or expires. A passed deadline
    /// expires the row here (the store's clock decides, as it does for
    /// answers: an answer that won the race stands). A store failure is
    /// retried every poll period (logged), never taken for an answer.
    pub async fn settled(&mut self) -> Settled {
        loop {
            match self.check().await {
                Ok(Some(settled)) => return settled,
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(approval = %self.id, error = %e, "desk: reading a pending approval failed; retrying");
                }
            }
            self.wake.next().await;
        }
    }

    async fn check(&self) -> Result<Option<Settled>, StoreError> {
        let store = &self.desk.inner.store;
        let Some(row) = store.approval(&self.id).await? else {
            // Deleted with its thread (a pending row is never pruned):
            // nobody can answer it any more.
            return Ok(Some(Settled::Expired));
        };
        match row.state {
            ApprovalState::Answered => Ok(Some(Settled::Answered(Box::new(row)))),
            ApprovalState::Expired => Ok(Some(Settled::Expired)),
            ApprovalState::Pending => {
                // The store's clock decides whether the deadline passed.
                if row.deadline.is_some() && store.expire_overdue_approval(&self.id).await? {
                    self.desk.notify(TOPIC_APPROVAL, &self.id).await;
                    return Ok(Some(Settled::Expired));
                }
                // Not due, or answered meanwhile: the next read says which.
                Ok(None)
            }
        }
    }

    /// The run ended without an answer: expire the row (unless it was
    /// answered meanwhile; a failure is logged).
    pub async fn expire(&self) {
        match self.desk.inner.store.expire_approval(&self.id).await {
            Ok(true) => self.desk.notify(TOPIC_APPROVAL, &self.id).await,
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(approval = %self.id, error = %e, "desk: an approval could not be expired");
            }
        }
    }
}
