//! One run's SSE frames: a bounded replay buffer that live subscribers read
//! by cursor, and the registry that finds a run again for a reconnect.
//!
//! The producer (one task per run) appends encoded frames; it waits while
//! the buffer is over its limits and the oldest frame is still unread by an
//! attached subscriber, so a slow client slows the run down instead of
//! losing frames (the core broker's own policy then applies). A run lives
//! while at least one client is attached: when the last one leaves before
//! the end, [`Hub::abandoned`] fires and the producer cancels the run.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_adaptor_core::RunHandle;
use bytes::Bytes;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::run::FrameId;
use crate::Principal;

/// The registry key of AG-UI run `run_id` of `thread_id`.
pub(crate) fn hub_key(thread_id: &str, run_id: &str) -> String {
    format!("agui\u{0}{thread_id}\u{0}{run_id}")
}

/// How much of a run is kept for reconnects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReplayLimits {
    /// At most this many frames …
    pub(crate) frames: usize,
    /// … and this many bytes (a single larger frame is still kept).
    pub(crate) bytes: usize,
    /// How long a finished run stays reachable.
    pub(crate) retain: Duration,
}

struct Stored {
    id: FrameId,
    bytes: Bytes,
}

struct Inner {
    frames: VecDeque<Stored>,
    /// Absolute index of `frames[0]`.
    base: u64,
    total_bytes: usize,
    /// The id of the last frame evicted, if any.
    evicted_last: Option<FrameId>,
    finished: bool,
    /// Subscriber id → absolute index of its next frame.
    subs: HashMap<u64, u64>,
    next_sub: u64,
}

/// The frames of one run.
pub(crate) struct Hub {
    inner: Mutex<Inner>,
    /// Frames were appended, or the run finished.
    appended: Notify,
    /// A subscriber read a frame or left.
    progress: Notify,
    limits: ReplayLimits,
    /// Who started the run (its principal's [`digest`](crate::Principal::digest)): the only
    /// principal that may replay it.
    owner: String,
    /// The core run its producer reads.
    run: std::sync::OnceLock<RunHandle>,
}

/// The requested cursor lies before the oldest frame still kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gap;

/// Every subscriber left before the run finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Abandoned;

impl Hub {
    pub(crate) fn new(limits: ReplayLimits, owner: String) -> Arc<Self> {
        Arc::new(Hub {
            inner: Mutex::new(Inner {
                frames: VecDeque::new(),
                base: 0,
                total_bytes: 0,
                evicted_last: None,
                finished: false,
                subs: HashMap::new(),
                next_sub: 0,
            }),
            appended: Notify::new(),
            progress: Notify::new(),
            limits,
            owner,
            run: std::sync::OnceLock::new(),
        })
    }

    /// Who started the run (a digest).
    pub(crate) fn owner(&self) -> &str {
        &self.owner
    }

    /// Name the core run the producer reads.
    pub(crate) fn set_run(&self, run: RunHandle) {
        let _ = self.run.set(run);
    }

    /// The core run the producer reads.
    pub(crate) fn run(&self) -> Option<&RunHandle> {
        self.run.get()
    }

    /// Whether `principal` started the run.
    pub(crate) fn owned_by(&self, principal: &Principal) -> bool {
        principal.digest() == self.owner
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Attach a reader that starts after `after` (or at the first frame).
    pub(crate) fn attach(self: &Arc<Self>, after: Option<FrameId>) -> Result<Subscription, Gap> {
        let inner = self.lock();
        let start = match after {
            None => inner.base,
            Some(cursor) => {
                if inner.evicted_last.is_some_and(|e| e > cursor) {
                    return Err(Gap);
                }
                let skipped = inner.frames.iter().take_while(|f| f.id <= cursor).count();
                inner.base + skipped as u64
            }
        };
        Ok(self.subscribe(inner, start))
    }

    /// Attach a reader at the run's very first frame: `Gap` once any frame
    /// was evicted.
    pub(crate) fn attach_from_start(self: &Arc<Self>) -> Result<Subscription, Gap> {
        let inner = self.lock();
        if inner.evicted_last.is_some() {
            return Err(Gap);
        }
        let start = inner.base;
        Ok(self.subscribe(inner, start))
    }

    fn subscribe(self: &Arc<Self>, mut inner: MutexGuard<'_, Inner>, start: u64) -> Subscription {
        let id = inner.next_sub;
        inner.next_sub += 1;
        inner.subs.insert(id, start);
        drop(inner);
        self.progress.notify_waiters();
        Subscription {
            hub: self.clone(),
            id,
        }
    }

    /// Append a frame, waiting while the buffer is full of frames some
    /// subscriber has not read. Without a subscriber the oldest frames
    /// make room (a reconnect within the grace finds the newest; the event
    /// log keeps them all) unless `must_be_read`, when it fails.
    pub(crate) async fn push(
        &self,
        id: FrameId,
        bytes: Bytes,
        must_be_read: bool,
    ) -> Result<(), Abandoned> {
        let mut bytes = Some(bytes);
        loop {
            let progressed = self.progress.notified();
            tokio::pin!(progressed);
            progressed.as_mut().enable();
            {
                let mut inner = self.lock();
                if must_be_read && inner.subs.is_empty() {
                    return Err(Abandoned);
                }
                let incoming = bytes.as_ref().map_or(0, Bytes::len);
                let over = |i: &Inner| {
                    i.frames.len() + 1 > self.limits.frames
                        || i.total_bytes + incoming > self.limits.bytes
                };
                let slowest = inner.subs.values().copied().min().unwrap_or(u64::MAX);
                while over(&inner) && inner.base < slowest {
                    let Some(old) = inner.frames.pop_front() else {
                        break;
                    };
                    inner.base += 1;
                    inner.total_bytes -= old.bytes.len();
                    inner.evicted_last = Some(old.id);
                }
                if inner.frames.is_empty() || !over(&inner) {
                    let Some(bytes) = bytes.take() else {
                        return Ok(());
                    };
                    inner.total_bytes += bytes.len();
                    inner.frames.push_back(Stored { id, bytes });
                    drop(inner);
                    self.appended.notify_waiters();
                    return Ok(());
                }
            }
            progressed.await;
        }
    }

    /// No more frames will come.
    pub(crate) fn finish(&self) {
        self.lock().finished = true;
        self.appended.notify_waiters();
    }

    /// Resolves once a subscriber is attached.
    pub(crate) async fn attached(&self) {
        loop {
            let progressed = self.progress.notified();
            tokio::pin!(progressed);
            progressed.as_mut().enable();
            if !self.lock().subs.is_empty() {
                return;
            }
            progressed.await;
        }
    }

    /// Resolves when every subscriber has left (the run was abandoned).
    pub(crate) async fn abandoned(&self) {
        loop {
            let progressed = self.progress.notified();
            tokio::pin!(progressed);
            progressed.as_mut().enable();
            if self.lock().subs.is_empty() {
                return;
            }
            progressed.await;
        }
    }
}

/// One reader of a hub. Dropping it detaches.
pub(crate) struct Subscription {
    hub: Arc<Hub>,
    id: u64,
}

impl Subscription {
    /// The next frame, or `None` after the last one. Cancel-safe.
    pub(crate) async fn next(&mut self) -> Option<Bytes> {
        loop {
            let appended = self.hub.appended.notified();
            tokio::pin!(appended);
            appended.as_mut().enable();
            {
                let mut inner = self.hub.lock();
                let next = inner.subs.get(&self.id).copied().unwrap_or(u64::MAX);
                let offset = next.saturating_sub(inner.base);
                let frame = usize::try_from(offset)
                    .ok()
                    .and_then(|o| inner.frames.get(o))
                    .map(|f| f.bytes.clone());
                if let Some(bytes) = frame {
                    inner.subs.insert(self.id, next + 1);
                    drop(inner);
                    self.hub.progress.notify_waiters();
                    return Some(bytes);
                }
                if inner.finished {
                    return None;
                }
            }
            appended.await;
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.hub.lock().subs.remove(&self.id);
        self.hub.progress.notify_waiters();
    }
}

/// Live and recently finished runs, by key, for reconnects; and the runs
/// their producers are reading, for shutdown.
#[derive(Default)]
pub(crate) struct Hubs {
    map: Mutex<HashMap<String, Arc<Hub>>>,
    /// The runs being read by a producer, by tracking id.
    live: Arc<Mutex<HashMap<u64, RunHandle>>>,
    next_live: AtomicU64,
    /// Cancelled by [`Hubs::close`].
    closing: CancellationToken,
}

/// Keeps a run listed as live until dropped.
pub(crate) struct Tracked {
    live: Arc<Mutex<HashMap<u64, RunHandle>>>,
    id: u64,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
    }
}

impl Hubs {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Hub>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register `hub` under `key`; false when the key is taken.
    pub(crate) fn insert(&self, key: &str, hub: &Arc<Hub>) -> bool {
        let mut map = self.lock();
        if map.contains_key(key) {
            return false;
        }
        map.insert(key.to_owned(), hub.clone());
        true
    }

    /// The hub under `key`.
    pub(crate) fn get(&self, key: &str) -> Option<Arc<Hub>> {
        self.lock().get(key).cloned()
    }

    /// Forget `key` if it still names `hub`.
    pub(crate) fn remove(&self, key: &str, hub: &Arc<Hub>) {
        let mut map = self.lock();
        if map.get(key).is_some_and(|h| Arc::ptr_eq(h, hub)) {
            map.remove(key);
        }
    }

    /// How many runs are registered (live or retained).
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// List `run` as live while the guard is held; after [`close`](Self::close)
    /// it is cancelled at once.
    pub(crate) fn track(&self, run: RunHandle) -> Tracked {
        let id = self.next_live.fetch_add(1, Ordering::Relaxed);
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, run.clone());
        // Checked after listing: a close either sees it or is seen here.
        if self.closing.is_cancelled() {
            run.cancel();
        }
        Tracked {
            live: self.live.clone(),
            id,
        }
    }

    /// Resolves once [`close`](Self::close) was called.
    pub(crate) async fn closed(&self) {
        self.closing.cancelled().await;
    }

    /// Cancel every live run (and every run started from now on); their
    /// producers deliver the final frames and end the streams. Returns the
    /// runs cancelled.
    pub(crate) fn close(&self) -> Vec<RunHandle> {
        self.closing.cancel();
        let runs: Vec<RunHandle> = self
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        for run in &runs {
            run.cancel();
        }
        runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(frames: usize) -> ReplayLimits {
        ReplayLimits {
            frames,
            bytes: 1 << 20,
            retain: Duration::from_secs(1),
        }
    }

    fn id(sequence: u64) -> FrameId {
        FrameId { sequence, index: 0 }
    }

    #[tokio::test]
    async fn a_reconnect_replays_after_its_cursor_and_detects_gaps() {
        let hub = Hub::new(limits(2), String::new());
        let mut live = hub.attach(None).unwrap();
        for s in 1..=3 {
            let push = hub.push(id(s), Bytes::from(s.to_string()), true);
            // The live reader makes room as it reads.
            let (pushed, _) = tokio::join!(push, async {
                if s == 3 {
                    assert_eq!(live.next().await, Some(Bytes::from("1")));
                }
            });
            pushed.unwrap();
        }
        hub.finish();
        assert_eq!(live.next().await, Some(Bytes::from("2")));
        assert_eq!(live.next().await, Some(Bytes::from("3")));
        assert_eq!(live.next().await, None);
        // Frame 1 was evicted: a cursor before it is a gap, after it replays.
        assert!(hub.attach(Some(id(0))).is_err());
        let mut again = hub.attach(Some(id(2))).unwrap();
        assert_eq!(again.next().await, Some(Bytes::from("3")));
        assert_eq!(again.next().await, None);
    }

    #[tokio::test]
    async fn the_last_reader_leaving_abandons_the_run() {
        let hub = Hub::new(limits(8), String::new());
        let sub = hub.attach(None).unwrap();
        let waiter = tokio::spawn({
            let hub = hub.clone();
            async move { hub.abandoned().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        drop(sub);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(hub.push(id(1), Bytes::new(), true).await, Err(Abandoned));
    }

    #[tokio::test]
    async fn without_a_reader_the_newest_frames_wait_for_a_reconnect() {
        let hub = Hub::new(limits(2), String::new());
        for s in 1..=3 {
            hub.push(id(s), Bytes::from(s.to_string()), false)
                .await
                .unwrap();
        }
        hub.finish();
        // The oldest made room; a reconnect after it finds a gap, one
        // after the newest evicted frame reads the rest.
        assert!(hub.attach(None).is_ok());
        assert!(hub.attach(Some(id(0))).is_err());
        let mut late = hub.attach(Some(id(1))).unwrap();
        assert_eq!(late.next().await, Some(Bytes::from("2")));
        assert_eq!(late.next().await, Some(Bytes::from("3")));
        assert_eq!(late.next().await, None);
    }
}
