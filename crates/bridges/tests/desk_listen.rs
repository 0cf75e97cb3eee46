//! The desk's listener: a store whose first `listen` fails is asked again
//! a poll period on (by a waiter's next wait), and its notifications then
//! wake the waiters; one failure is not polling for the process's life.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_adaptor_bridges::desk::Desk;
use agent_adaptor_core::thread::durable::{Notification, Notifications};
use agent_adaptor_core::thread::{FinalizeRequest, Lease, StoreError, ThreadRecord};
use agent_adaptor_core::{MemoryStore, ThreadStore};

/// A memory store's notifications, whose first `listen` fails (a lost
/// connection); threads are not kept.
#[derive(Default)]
struct FirstListenFails {
    inner: MemoryStore,
    listens: AtomicUsize,
}

#[agent_adaptor_core::driver::async_trait]
impl ThreadStore for FirstListenFails {
    async fn resolve(&self, _: &str, _: bool) -> Result<Option<ThreadRecord>, StoreError> {
        Err(StoreError::Unsupported("keep threads"))
    }
    async fn acquire_lease(&self, _: &str, _: &str, _: Duration) -> Result<Lease, StoreError> {
        Err(StoreError::Unsupported("keep threads"))
    }
    async fn renew_lease(&self, _: &Lease, _: Duration) -> Result<Lease, StoreError> {
        Err(StoreError::Unsupported("keep threads"))
    }
    async fn release_lease(&self, _: &Lease) -> Result<(), StoreError> {
        Err(StoreError::Unsupported("keep threads"))
    }
    async fn finalize(&self, _: FinalizeRequest) -> Result<ThreadRecord, StoreError> {
        Err(StoreError::Unsupported("keep threads"))
    }
    async fn notify(&self, n: &Notification) -> Result<(), StoreError> {
        self.inner.notify(n).await
    }
    async fn listen(&self) -> Result<Notifications, StoreError> {
        if self.listens.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err(StoreError::Backend("connection lost".into()));
        }
        self.inner.listen().await
    }
}

#[tokio::test]
async fn a_failed_first_listen_is_retried_and_then_wakes_waiters() {
    let store = Arc::new(FirstListenFails::default());
    let listens = || store.listens.load(Ordering::SeqCst);
    let poll = Duration::from_millis(50);
    let desk = Desk::with_poll(store.clone(), poll);
    let mut wake = desk.wake("topic", "id").await;
    assert_eq!(listens(), 1);
    // Past the retry time (a poll period after the failure): the waiter's
    // own next wait listens again, and a notification then wakes it
    // (`next` is true only then; a poll period passing is false).
    tokio::time::sleep(poll * 2).await;
    for _ in 0..100 {
        let (notified, ()) = tokio::join!(wake.next(), async {
            tokio::task::yield_now().await;
            desk.notify("topic", "id").await;
        });
        if notified {
            assert_eq!(listens(), 2, "listened again, once");
            drop(desk.wake("topic", "other").await);
            assert_eq!(listens(), 2, "a listener that runs is not started again");
            return;
        }
    }
    panic!(
        "no notification woke the waiter (listened {} times)",
        listens()
    );
}
