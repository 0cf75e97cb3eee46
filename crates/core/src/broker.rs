//! The per-run event broker: a bounded queue with a drop policy for deltas,
//! reserved terminal capacity, and cancellation that releases every waiter
//! (streaming guide §5, driver contract §11).
//!
//! Publishing is serialized by the caller (the core sink holds one async,
//! FIFO lock around [`Publisher`]), so at most one publisher ever waits for
//! space; sequence numbers are assigned under that lock, in receive order, and
//! the queue order is the sequence order.

use std::collections::{BTreeMap, VecDeque};
use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use chrono::Utc;
use serde_json::json;

use crate::control::RunControl;
use crate::event::{Dropped, Event, EventMeta};

/// Default buffer for ordinary events.
pub const DEFAULT_EVENT_BUFFER: usize = 1024;

/// Slots reserved beyond the buffer: a final `Dropped`, then `RunFinished`.
const RESERVED: usize = 2;

/// How the broker treats a full buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BrokerConfig {
    pub(crate) buffer: usize,
    pub(crate) blocking: bool,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            buffer: DEFAULT_EVENT_BUFFER,
            blocking: false,
        }
    }
}

struct Queue {
    items: VecDeque<Event>,
    closed: bool,
    consumer: Option<Waker>,
    publisher: Option<Waker>,
}

struct Shared {
    queue: Mutex<Queue>,
    config: BrokerConfig,
    control: Arc<RunControl>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A poisoned queue only means another thread panicked while holding
        // it; the queue itself is always left consistent.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Losses not yet reported.
#[derive(Debug, Default)]
struct DropAggregate {
    count: u64,
    by_kind: BTreeMap<String, u64>,
    first: u64,
    last: u64,
    during_abort: bool,
}

impl DropAggregate {
    fn add(&mut self, seq: u64, ev: &Event, during_abort: bool) {
        if self.count == 0 {
            self.first = seq;
        }
        self.count += 1;
        self.last = seq;
        *self.by_kind.entry(ev.kind_name().into_owned()).or_default() += 1;
        self.during_abort |= during_abort;
    }
}

/// The publishing side; owned by the core sink behind its publication lock.
pub(crate) struct Publisher {
    shared: Arc<Shared>,
    state: PubState,
}

struct PubState {
    next_seq: u64,
    pending: Option<DropAggregate>,
    template: EventMeta,
    config: BrokerConfig,
}

/// The consuming side, read by `RunStream`.
#[derive(Clone)]
pub(crate) struct Consumer {
    shared: Arc<Shared>,
}

/// A new broker for one run.
pub(crate) fn broker(
    config: BrokerConfig,
    control: Arc<RunControl>,
    template: EventMeta,
) -> (Publisher, Consumer) {
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue {
            items: VecDeque::with_capacity((config.buffer + RESERVED).min(4096)),
            closed: false,
            consumer: None,
            publisher: None,
        }),
        config,
        control,
    });
    (
        Publisher {
            shared: shared.clone(),
            state: PubState {
                next_seq: 1,
                pending: None,
                template,
                config,
            },
        },
        Consumer { shared },
    )
}

/// What became of an offered event.
pub(crate) enum Offer {
    /// Delivered, dropped and counted, or refused because of cancellation.
    Done(Result<(), Cancelled>),
    /// A reliable event that has to wait for space.
    Wait(Box<Waiting>),
}

/// An event waiting for space.
pub(crate) struct Waiting {
    slot: Option<Event>,
    droppable: bool,
}

/// The event could not be delivered because the run was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cancelled;

impl PubState {
    fn stamp(&mut self, ev: &mut Event) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        ev.meta_mut().sequence = seq;
        seq
    }

    fn push(&mut self, q: &mut Queue, mut ev: Event) {
        self.stamp(&mut ev);
        q.items.push_back(ev);
        if let Some(w) = q.consumer.take() {
            w.wake();
        }
    }

    fn drop_event(&mut self, mut ev: Event, during_abort: bool) {
        let seq = self.stamp(&mut ev);
        self.pending
            .get_or_insert_with(DropAggregate::default)
            .add(seq, &ev, during_abort);
    }

    fn dropped_event(&self, agg: DropAggregate) -> Event {
        let mut meta = self.template.clone();
        meta.time = Utc::now();
        Event::Dropped(Dropped {
            meta,
            count: agg.count,
            by_kind: agg.by_kind,
            first_sequence: agg.first,
            last_sequence: agg.last,
            reason: if agg.during_abort {
                "cancelled".into()
            } else {
                "slow_consumer".into()
            },
            source: "sdk.event_broker".into(),
            details: Some(json!({
                "buffer": self.config.buffer,
                "strategy": if self.config.blocking { "blocking" } else { "drop_deltas" },
            })),
        })
    }
}

impl Publisher {
    /// An unstamped envelope for this run.
    pub(crate) fn meta(&self) -> EventMeta {
        self.state.template.clone()
    }

    /// Offer one event without waiting: it is delivered, dropped (a delta
    /// on a full buffer), or — a reliable event on a full buffer — handed
    /// back as [`Offer::Wait`] for [`publish_waiting`](Self::publish_waiting).
    ///
    /// Once the run is cancelled, deltas are discarded and reliable events use
    /// free space only; whatever is not delivered is counted in the final
    /// `Dropped` report and the offer is `Done(Err(Cancelled))`.
    ///
    /// This is synchronous on purpose: every driver event goes through it,
    /// and only a publisher that really has to wait pays for a future.
    pub(crate) fn offer(&mut self, mut ev: Event) -> Offer {
        ev.meta_mut().time = Utc::now();
        let droppable = !self.shared.config.blocking && ev.is_droppable();
        let mut slot = Some(ev);
        match self.try_publish(&mut slot, droppable) {
            Some(done) => Offer::Done(done),
            None => Offer::Wait(Box::new(Waiting { slot, droppable })),
        }
    }

    /// Wait for space (or cancellation) and deliver an event `offer` handed back.
    pub(crate) async fn publish_waiting(&mut self, waiting: Box<Waiting>) -> Result<(), Cancelled> {
        let Waiting {
            mut slot,
            droppable,
        } = *waiting;
        loop {
            self.wait_for_space().await;
            if let Some(done) = self.try_publish(&mut slot, droppable) {
                return done;
            }
        }
    }

    /// Offer, and wait when needed (for core's own, infrequent events).
    pub(crate) async fn publish(&mut self, ev: Event) -> Result<(), Cancelled> {
        match self.offer(ev) {
            Offer::Done(done) => done,
            Offer::Wait(waiting) => Box::pin(self.publish_waiting(waiting)).await,
        }
    }

    /// One attempt under the queue lock. `None` means "wait for space and
    /// try again" (the event stays in `slot`).
    fn try_publish(
        &mut self,
        slot: &mut Option<Event>,
        droppable: bool,
    ) -> Option<Result<(), Cancelled>> {
        let capacity = self.shared.config.buffer;
        let st = &mut self.state;
        let mut q = self.shared.lock();
        let ev = slot.take()?;
        if self.shared.control.is_stopped() {
            if !droppable && q.items.len() < capacity {
                st.push(&mut q, ev);
                return Some(Ok(()));
            }
            st.drop_event(ev, true);
            return Some(Err(Cancelled));
        }
        if let Some(agg) = st.pending.take() {
            if q.items.len() < capacity {
                let report = st.dropped_event(agg);
                st.push(&mut q, report);
            } else {
                st.pending = Some(agg);
            }
        }
        if st.pending.is_none() && q.items.len() < capacity {
            st.push(&mut q, ev);
            return Some(Ok(()));
        }
        if droppable {
            st.drop_event(ev, false);
            return Some(Ok(()));
        }
        *slot = Some(ev);
        None
    }

    /// Wait until the queue has room or the run is cancelled.
    async fn wait_for_space(&self) {
        let shared = &self.shared;
        let capacity = shared.config.buffer;
        let space = poll_fn(|cx: &mut Context<'_>| {
            let mut q = shared.lock();
            if q.items.len() < capacity {
                Poll::Ready(())
            } else {
                q.publisher = Some(cx.waker().clone());
                Poll::Pending
            }
        });
        tokio::select! {
            () = space => {}
            () = shared.control.cancel.cancelled() => {}
        }
    }

    /// Close the run: report pending losses, then `RunFinished`, into the
    /// reserved slots (they always fit), and close the queue.
    pub(crate) fn finish(&mut self, mut finished: Event) {
        let st = &mut self.state;
        let mut q = self.shared.lock();
        if let Some(agg) = st.pending.take() {
            let report = st.dropped_event(agg);
            st.push(&mut q, report);
        }
        finished.meta_mut().time = Utc::now();
        st.push(&mut q, finished);
        q.closed = true;
        if let Some(w) = q.consumer.take() {
            w.wake();
        }
    }
}

impl Consumer {
    /// Poll for the next event; `None` once the run is closed and drained.
    pub(crate) fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let mut q = self.shared.lock();
        if let Some(ev) = q.items.pop_front() {
            if let Some(w) = q.publisher.take() {
                w.wake();
            }
            return Poll::Ready(Some(ev));
        }
        if q.closed {
            return Poll::Ready(None);
        }
        match &q.consumer {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => q.consumer = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// True once the queue is closed and every event was read.
    pub(crate) fn is_terminated(&self) -> bool {
        let q = self.shared.lock();
        q.closed && q.items.is_empty()
    }

    /// Events buffered and not yet read.
    pub(crate) fn buffered(&self) -> usize {
        self.shared.lock().items.len()
    }
}
