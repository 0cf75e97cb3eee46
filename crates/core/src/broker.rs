//! The per-run event broker: a bounded queue with a drop policy for deltas,
//! reserved terminal capacity, and cancellation that releases every waiter
//! (streaming guide §5, driver contract §11).
//!
//! Publishing is serialized by the caller (the core sink holds one async,
//! FIFO lock around [`Publisher`]), so at most one publisher ever waits for
//! space; sequence numbers are assigned under that lock, in receive order, and
//! the queue order is the sequence order.
//!
//! Waking the consumer is the expensive part of a hand-over (it usually sits
//! on another thread). A driver may bracket what one input produced in a
//! batch ([`Batcher`]): inside it, the consumer is woken once at the end, or
//! earlier when the queue has filled to [`wake_threshold`], when the
//! publisher has to wait for space, or when the batch is flushed.
//!
//! Receive times come from the same place: the lines of one burst were all
//! received by one read, so opening a batch reads the clock once and the
//! events published inside it carry that time. A flush (core's own event,
//! which takes the time it is published) or the outermost close goes back
//! to reading the clock per event, so times never run backwards in
//! sequence order.

use std::collections::{BTreeMap, VecDeque};
use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::control::RunControl;
use crate::event::{Dropped, Event, EventMeta};
use crate::wall_clock::WallClock;

/// Default buffer for ordinary events.
pub const DEFAULT_EVENT_BUFFER: usize = 1024;

/// The most events a batch queues before it wakes the consumer anyway.
const BATCH_WAKE_MAX: usize = 128;

/// Inside a batch, the queue length at which the consumer is woken without
/// waiting for the batch to end: at most half the buffer, so a slow consumer
/// starts draining long before deltas would be dropped.
fn wake_threshold(buffer: usize) -> usize {
    (buffer / 2).clamp(1, BATCH_WAKE_MAX)
}

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
    /// Events the consumer took out of `items` and has not yet handed on:
    /// they still count against the buffer, so `items.len() + in_hand`
    /// never exceeds it. Settled when the consumer takes the next lot.
    in_hand: usize,
    closed: bool,
    consumer: Option<Waker>,
    publisher: Option<Waker>,
    /// Open batches (nesting depth); 0 wakes the consumer on every push.
    batch: u32,
    /// The receive time of the events of the open batch (see the module
    /// docs); `None` reads the clock for each event.
    batch_time: Option<DateTime<Utc>>,
    /// Stamps receive times (the date is worked out once a day).
    clock: WallClock,
    /// Run keys the consumer cloned for the publisher (see [`Keys`]).
    keys: Vec<Keys>,
}

/// A clone of the run's id and thread key, for one event's envelope.
///
/// Every event holds its own reference to both. Were the publisher to clone
/// them, each event would move the reference counts' cache line from the
/// publishing thread to the consuming one, which drops it, and back. So the
/// consumer makes the clones, on its own thread, as it takes each lot (as
/// many as the lot held), and the publisher only moves them into envelopes:
/// the counts are only ever touched where they are released.
type Keys = (Arc<str>, Option<Arc<str>>);

impl Queue {
    /// Buffer slots in use: queued, or taken by the consumer and not yet
    /// handed on.
    fn used(&self) -> usize {
        self.items.len() + self.in_hand
    }

    fn wake_consumer(&mut self) {
        if let Some(w) = self.consumer.take() {
            w.wake();
        }
    }

    /// When the event published now was received.
    fn receive_time(&mut self) -> DateTime<Utc> {
        match self.batch_time {
            Some(t) => t,
            None => self.clock.now(),
        }
    }

    /// Wake the consumer if it has something to read.
    fn flush(&mut self) {
        if !self.items.is_empty() {
            self.wake_consumer();
        }
    }
}

struct Shared {
    queue: Mutex<Queue>,
    config: BrokerConfig,
    /// See [`wake_threshold`].
    wake_at: usize,
    /// Set once nobody can read droppable events any more (`run()`, see
    /// [`Consumer::unobserved`]): they are no longer queued.
    unobserved: AtomicBool,
    /// The run's events are recorded (see [`Tap`]): they are always built
    /// and queued, even when nobody reads the stream.
    recorded: bool,
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
    /// Run keys from the consumer not yet used (see [`Keys`]).
    keys: Vec<Keys>,
    /// Whether the next delta that finds the buffer full is handed back to
    /// give way once instead of being dropped at once (see
    /// [`Publisher::publish_waiting`]). Spent by that delta, restored by the
    /// next event that finds room.
    may_give_way: bool,
    /// Where every stamped event is copied (the event log's recorder).
    tap: Option<Tap>,
}

/// What a run's event log recorder receives: every event the broker
/// stamps, delivered or dropped for a slow consumer, in sequence order.
pub(crate) type Tap = tokio::sync::mpsc::UnboundedSender<crate::thread::recorder::TapItem>;

/// The closing events of a run, stamped (and recorded) but not yet
/// queued: see [`Publisher::seal`].
pub(crate) struct Sealed {
    events: Vec<Event>,
}

impl Sealed {
    /// The run's `RunFinished` (last), to replace when the outcome changed
    /// after sealing (its envelope is kept).
    pub(crate) fn finished_mut(&mut self) -> Option<&mut Event> {
        self.events.last_mut()
    }
}

/// The consuming side, read by `RunStream`.
///
/// It takes everything queued under one lock and hands it on from a local
/// buffer, so a consumer on another thread costs the publisher one lock
/// contention per wake, not one per event.
pub(crate) struct Consumer {
    shared: Arc<Shared>,
    /// Taken from the queue, not yet handed on (counted in `Queue::in_hand`).
    local: VecDeque<Event>,
    /// What the clones handed to the publisher are made from.
    keys: Keys,
}

/// A new broker for one run.
pub(crate) fn broker(
    config: BrokerConfig,
    control: Arc<RunControl>,
    template: EventMeta,
    tap: Option<Tap>,
) -> (Publisher, Consumer) {
    let keys = (template.run_id.clone(), template.thread_key.clone());
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue {
            // Grown on demand: a consumer that keeps up never holds more
            // than a lot or two, and 256 runs need not hold 256 full buffers.
            items: VecDeque::with_capacity(wake_threshold(config.buffer)),
            in_hand: 0,
            closed: false,
            consumer: None,
            publisher: None,
            batch: 0,
            batch_time: None,
            clock: WallClock::default(),
            keys: Vec::new(),
        }),
        config,
        wake_at: wake_threshold(config.buffer),
        unobserved: AtomicBool::new(false),
        recorded: tap.is_some(),
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
                keys: Vec::new(),
                may_give_way: true,
                tap,
            },
        },
        Consumer {
            keys,
            shared,
            local: VecDeque::new(),
        },
    )
}

/// What became of an offered event.
pub(crate) enum Offer {
    /// Delivered, dropped and counted, or refused because of cancellation.
    Done(Result<(), Cancelled>),
    /// A reliable event that has to wait for space, or a delta that gives
    /// way once before it may be dropped
    /// ([`publish_waiting`](Publisher::publish_waiting)).
    Wait(Box<Waiting>),
}

/// An event waiting for space (already stamped with its receive time).
pub(crate) struct Waiting {
    ev: Event,
    droppable: bool,
}

/// Whether [`Publisher::try_publish`] stamps the receive time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stamp {
    /// A new event: received now (or with its batch).
    Now,
    /// Handed back earlier and already stamped.
    Kept,
}

/// The event could not be delivered because the run was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cancelled;

impl PubState {
    fn stamp(&mut self, ev: &mut Event) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        ev.meta_mut().sequence = seq;
        if let Some(tap) = &self.tap {
            // A closed tap means the recorder failed; it stopped the run
            // and its error is the run's outcome.
            let _ = tap.send(crate::thread::recorder::TapItem::Event(ev.clone()));
        }
        seq
    }

    fn push(&mut self, q: &mut Queue, mut ev: Event, wake_at: usize) {
        self.stamp(&mut ev);
        q.items.push_back(ev);
        if q.batch == 0 || q.items.len() >= wake_at {
            q.wake_consumer();
        }
    }

    fn drop_event(&mut self, mut ev: Event, during_abort: bool) {
        let seq = self.stamp(&mut ev);
        self.pending
            .get_or_insert_with(DropAggregate::default)
            .add(seq, &ev, during_abort);
    }

    /// The report of the losses in `agg`, received at `time`.
    fn dropped_event(&self, agg: DropAggregate, time: DateTime<Utc>) -> Event {
        let mut meta = self.template.clone();
        meta.time = time;
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
    /// An unstamped envelope for this run, with run keys the consumer
    /// cloned (see [`Keys`]; cloned here only when none are left).
    pub(crate) fn meta(&mut self) -> EventMeta {
        let st = &mut self.state;
        if st.keys.is_empty() {
            std::mem::swap(&mut st.keys, &mut self.shared.lock().keys);
        }
        match st.keys.pop() {
            Some((run_id, thread_key)) => EventMeta::unstamped(run_id, thread_key),
            None => st.template.clone(),
        }
    }

    /// The run's id.
    pub(crate) fn run_id(&self) -> &Arc<str> {
        &self.state.template.run_id
    }

    /// When nobody will read the next event (see [`Consumer::unobserved`])
    /// and the run is not stopping: spend its sequence number (later events
    /// keep the numbers they would have had) and return true — the caller
    /// need not even build the event. It is dropped on the publishing
    /// thread instead of being queued, handed over and freed by the
    /// draining one.
    pub(crate) fn skip_unobserved(&mut self) -> bool {
        if self.shared.unobserved.load(Ordering::Relaxed) && !self.shared.control.is_stopped() {
            self.state.next_seq += 1;
            return true;
        }
        false
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
    pub(crate) fn offer(&mut self, ev: Event) -> Offer {
        if self.skip_unobserved() {
            return Offer::Done(Ok(()));
        }
        let droppable = !self.shared.config.blocking && ev.is_droppable();
        match self.try_publish(ev, droppable, Stamp::Now) {
            Ok(done) => Offer::Done(done),
            Err(ev) => Offer::Wait(Box::new(Waiting { ev, droppable })),
        }
    }

    /// Deliver an event `offer` handed back: a reliable one once there is
    /// space (or the run is cancelled); a delta after giving way once.
    ///
    /// A delta that finds the buffer full is dropped under the default
    /// policy — but the first of a run of them gives way first: the
    /// consumer is woken and the publishing task yields once, then the
    /// delta is offered again and dropped only if there is still no room.
    /// A consumer on the publisher's own thread (a `current_thread`
    /// runtime, or a task woken into the same worker) cannot drain before
    /// the publisher yields, and without this it lost deltas whenever one
    /// read of a flooding CLI made more events than the buffer holds. A
    /// consumer that is really slow costs one yield per full spell, not one
    /// per delta: the deltas after it drop at once until an event finds
    /// room again.
    pub(crate) async fn publish_waiting(&mut self, waiting: Box<Waiting>) -> Result<(), Cancelled> {
        let Waiting { mut ev, droppable } = *waiting;
        if droppable {
            self.shared.lock().wake_consumer();
            tokio::task::yield_now().await;
            // The give-way is spent: the delta is delivered or dropped now.
            match self.try_publish(ev, droppable, Stamp::Kept) {
                Ok(done) => return done,
                Err(back) => ev = back,
            }
        }
        loop {
            self.wait_for_space().await;
            match self.try_publish(ev, droppable, Stamp::Kept) {
                Ok(done) => return done,
                Err(back) => ev = back,
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

    /// One attempt under the queue lock. `Err` hands the event back: wait
    /// for space and try again. (The event moves in and, in the common
    /// case, straight on into the queue: no `Option` slot to copy through.)
    // The event comes back only on a full buffer; boxing it would cost every
    // call an allocation to save a move on the rare one.
    #[allow(clippy::result_large_err)]
    fn try_publish(
        &mut self,
        mut ev: Event,
        droppable: bool,
        stamp: Stamp,
    ) -> Result<Result<(), Cancelled>, Event> {
        let capacity = self.shared.config.buffer;
        let wake_at = self.shared.wake_at;
        let st = &mut self.state;
        let mut q = self.shared.lock();
        if stamp == Stamp::Now {
            ev.meta_mut().time = q.receive_time();
        }
        if self.shared.control.is_stopped() {
            if !droppable && q.used() < capacity {
                st.push(&mut q, ev, wake_at);
                return Ok(Ok(()));
            }
            st.drop_event(ev, true);
            return Ok(Err(Cancelled));
        }
        if let Some(agg) = st.pending.take() {
            if q.used() < capacity {
                let report = st.dropped_event(agg, q.receive_time());
                st.push(&mut q, report, wake_at);
            } else {
                st.pending = Some(agg);
            }
        }
        if st.pending.is_none() && q.used() < capacity {
            st.may_give_way = true;
            st.push(&mut q, ev, wake_at);
            return Ok(Ok(()));
        }
        if droppable && !std::mem::take(&mut st.may_give_way) {
            st.drop_event(ev, false);
            return Ok(Ok(()));
        }
        Err(ev)
    }

    /// Wait until the queue has room or the run is cancelled.
    async fn wait_for_space(&self) {
        let shared = &self.shared;
        let capacity = shared.config.buffer;
        let space = poll_fn(|cx: &mut Context<'_>| {
            let mut q = shared.lock();
            if q.used() < capacity {
                Poll::Ready(())
            } else {
                q.publisher = Some(cx.waker().clone());
                // Inside a batch the consumer may not know about the
                // queued events yet: it has to drain for us to go on.
                q.wake_consumer();
                Poll::Pending
            }
        });
        tokio::select! {
            () = space => {}
            () = shared.control.cancel.cancelled() => {}
        }
    }

    /// Close the run: report pending losses, then `RunFinished`, past the
    /// buffer's bound (these two always fit), and close the queue.
    pub(crate) fn finish(&mut self, finished: Event) {
        let sealed = self.seal(finished);
        self.close(sealed);
    }

    /// Stamp the closing events (pending losses, then `RunFinished`) and
    /// hand them to the tap, which is then let go (the recorder sees its
    /// channel end); they are queued by [`close`](Self::close).
    pub(crate) fn seal(&mut self, mut finished: Event) -> Sealed {
        let st = &mut self.state;
        let mut q = self.shared.lock();
        q.batch = 0;
        q.batch_time = None;
        let mut events = Vec::with_capacity(2);
        if let Some(agg) = st.pending.take() {
            let mut report = st.dropped_event(agg, q.receive_time());
            st.stamp(&mut report);
            events.push(report);
        }
        finished.meta_mut().time = q.receive_time();
        st.stamp(&mut finished);
        events.push(finished);
        st.tap = None;
        Sealed { events }
    }

    /// Queue the sealed closing events past the buffer's bound and close
    /// the queue.
    pub(crate) fn close(&mut self, sealed: Sealed) {
        let mut q = self.shared.lock();
        q.items.extend(sealed.events);
        q.closed = true;
        q.wake_consumer();
    }

    /// The batching side of this broker, for the sink to hold outside its
    /// publication lock.
    pub(crate) fn batcher(&self) -> Batcher {
        Batcher {
            shared: self.shared.clone(),
        }
    }
}

/// Opens and closes batches (see the module docs); cheap to clone.
#[derive(Clone)]
pub(crate) struct Batcher {
    shared: Arc<Shared>,
}

impl Batcher {
    /// True until the consumer said nobody will read the events
    /// ([`Consumer::unobserved`]).
    pub(crate) fn observed(&self) -> bool {
        !self.shared.unobserved.load(Ordering::Relaxed)
    }

    /// Open a batch: pushes stop waking the consumer until it is closed,
    /// and the events published inside carry the time it was opened (the
    /// time its input was read; a nested batch — the next burst — reads the
    /// clock again).
    pub(crate) fn begin(&self) {
        let mut q = self.shared.lock();
        q.batch = q.batch.saturating_add(1);
        q.batch_time = Some(q.clock.now());
    }

    /// Close a batch; the outermost close wakes the consumer if it has
    /// something to read. An unmatched close is ignored.
    pub(crate) fn end(&self) {
        let mut q = self.shared.lock();
        q.batch = q.batch.saturating_sub(1);
        if q.batch == 0 {
            q.batch_time = None;
            q.flush();
        }
    }

    /// Wake the consumer now if it has something to read, batch or not
    /// (before waiting for something the consumer may have to see first).
    /// The events that follow read the clock again until the next batch
    /// opens: what comes after a flush — a human's answer, say — may have
    /// been received well after the batch opened.
    pub(crate) fn flush(&self) {
        let mut q = self.shared.lock();
        q.batch_time = None;
        q.flush();
    }
}

impl Consumer {
    /// Poll for the next event; `None` once the run is closed and drained.
    ///
    /// Events come from the local buffer; when it is empty, everything
    /// queued is taken at once (and the slots the previous lot held are
    /// given back to the publisher).
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        if let Some(ev) = self.local.pop_front() {
            return Poll::Ready(Some(ev));
        }
        let mut q = self.shared.lock();
        let freed = std::mem::take(&mut q.in_hand);
        if !q.items.is_empty() {
            std::mem::swap(&mut self.local, &mut q.items);
            q.in_hand = self.local.len();
            // Keys for about as many events as this lot held (see [`Keys`]).
            let want = self.local.len().min(self.shared.config.buffer);
            let (run_id, thread_key) = &self.keys;
            while q.keys.len() < want {
                q.keys.push((run_id.clone(), thread_key.clone()));
            }
        }
        if freed > 0
            && let Some(w) = q.publisher.take()
        {
            w.wake();
        }
        if let Some(ev) = self.local.pop_front() {
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

    /// The reader only drains, to reach the end of the run (`run()`):
    /// events published from now on are not queued at all (the final
    /// `Dropped` report and `RunFinished` still are, so the drain ends). The
    /// result and every contract check are built from the sink's state, not
    /// from events, so they are unaffected; once the run is cancelled,
    /// events take the ordinary path and losses are reported as before.
    /// A recorded run ignores this: its events are always built and queued.
    pub(crate) fn unobserved(&self) {
        if self.shared.recorded {
            return;
        }
        self.shared.unobserved.store(true, Ordering::Relaxed);
    }

    /// True once the queue is closed and every event was read.
    pub(crate) fn is_terminated(&self) -> bool {
        let q = self.shared.lock();
        q.closed && q.items.is_empty() && self.local.is_empty()
    }

    /// Events buffered and not yet read.
    pub(crate) fn buffered(&self) -> usize {
        self.shared.lock().items.len() + self.local.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    use agent_adaptor_driver::RunEvent;

    use super::*;
    use crate::translate;

    /// A waker that counts its wakes.
    #[derive(Default)]
    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Counter {
        fn count(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }
    }

    fn setup(buffer: usize, blocking: bool) -> (Publisher, Consumer, Arc<RunControl>) {
        let control = Arc::new(RunControl::default());
        let meta = EventMeta::unstamped("run_b".into(), None);
        let (p, c) = broker(
            BrokerConfig { buffer, blocking },
            control.clone(),
            meta,
            None,
        );
        (p, c, control)
    }

    /// A reliable event (a transcript-item notice).
    fn reliable(p: &mut Publisher, n: usize) -> Event {
        let item = agent_adaptor_driver::TranscriptItem::assistant(format!("item {n}"));
        translate::run_event(p.meta(), RunEvent::Item(item.into()))
    }

    fn offer_now(p: &mut Publisher, ev: Event) {
        assert!(matches!(p.offer(ev), Offer::Done(Ok(()))));
    }

    /// Read everything queued; the consumer's waker is `waker`.
    fn drain(c: &mut Consumer, waker: &Waker) -> Vec<Event> {
        let mut cx = Context::from_waker(waker);
        let mut out = Vec::new();
        while let Poll::Ready(Some(ev)) = c.poll_next(&mut cx) {
            out.push(ev);
        }
        out
    }

    /// A buffer of `buffer` slots filled with reliable events, and a
    /// consumer that took the whole lot and handed on the first (returned,
    /// with the consumer's waker).
    fn full_with_a_lot_in_hand(
        buffer: usize,
    ) -> (Publisher, Consumer, Arc<RunControl>, Waker, Event) {
        let (mut p, mut c, control) = setup(buffer, false);
        for n in 0..buffer {
            let ev = reliable(&mut p, n);
            offer_now(&mut p, ev);
        }
        let waker = Waker::from(Arc::new(Counter::default()));
        let mut cx = Context::from_waker(&waker);
        let Poll::Ready(Some(first)) = c.poll_next(&mut cx) else {
            panic!("an event was queued");
        };
        (p, c, control, waker, first)
    }

    #[test]
    fn events_the_consumer_took_still_count_against_the_buffer() {
        // The consumer takes the whole lot and hands on the first.
        let (mut p, mut c, _control, waker, first) = full_with_a_lot_in_hand(4);
        assert_eq!(first.meta().sequence, 1);
        assert_eq!(c.buffered(), 3);
        // Three still in its hands and one handed on: the buffer is full.
        let ev = reliable(&mut p, 4);
        let Offer::Wait(waiting) = p.offer(ev) else {
            panic!("the buffer holds what the consumer took");
        };
        // Once the lot is handed on and the consumer comes back, the slots
        // are free again and the waiting event goes in.
        let rest: Vec<u64> = drain(&mut c, &waker)
            .iter()
            .map(|e| e.meta().sequence)
            .collect();
        assert_eq!(rest, [2, 3, 4]);
        assert_eq!(c.buffered(), 0);
        assert!(matches!(
            p.try_publish(waiting.ev, false, Stamp::Kept),
            Ok(Ok(()))
        ));
        assert_eq!(drain(&mut c, &waker).len(), 1);
    }

    #[test]
    fn a_batch_wakes_the_consumer_once_at_its_end() {
        let (mut p, mut c, _control) = setup(DEFAULT_EVENT_BUFFER, false);
        let counter = Arc::new(Counter::default());
        let waker = Waker::from(counter.clone());
        assert!(drain(&mut c, &waker).is_empty()); // parked: waker registered
        let batch = p.batcher();
        batch.begin();
        for n in 0..10 {
            let ev = reliable(&mut p, n);
            offer_now(&mut p, ev);
        }
        assert_eq!(counter.count(), 0, "no wake inside the batch");
        batch.end();
        assert_eq!(counter.count(), 1, "one wake for the whole batch");
        let got = drain(&mut c, &waker);
        assert_eq!(got.len(), 10);
        let seqs: Vec<u64> = got.iter().map(|e| e.meta().sequence).collect();
        assert_eq!(seqs, (1..=10).collect::<Vec<_>>());
    }

    #[test]
    fn envelopes_take_the_run_keys_the_consumer_cloned_for_its_last_lot() {
        let control = Arc::new(RunControl::default());
        let meta = EventMeta::unstamped("run_k".into(), Some("thread_k".into()));
        let run_id = meta.run_id.clone();
        let config = BrokerConfig::default();
        let (mut p, mut c) = broker(config, control, meta, None);
        let waker = Waker::from(Arc::new(Counter::default()));
        for n in 0..3 {
            let ev = reliable(&mut p, n);
            offer_now(&mut p, ev);
        }
        let lot = drain(&mut c, &waker);
        assert_eq!(lot.len(), 3);
        // Taking the lot, the consumer cloned keys for three more events:
        // the next three envelopes clone nothing.
        let before = Arc::strong_count(&run_id);
        let metas: Vec<EventMeta> = (0..3).map(|_| p.meta()).collect();
        assert_eq!(Arc::strong_count(&run_id), before);
        for m in &metas {
            assert!(Arc::ptr_eq(&m.run_id, &run_id));
            assert_eq!(m.thread_key.as_deref(), Some("thread_k"));
            assert_eq!((m.sequence, m.time), (0, DateTime::<Utc>::UNIX_EPOCH));
        }
        // With none left, the publisher clones its own.
        let extra = p.meta();
        assert_eq!(Arc::strong_count(&run_id), before + 1);
        assert_eq!(extra.thread_key.as_deref(), Some("thread_k"));
    }

    /// Return once the wall clock reads later than it did on entry, so
    /// anything stamped afterwards is strictly later than anything stamped
    /// before (a few nanoseconds of spinning, no sleep).
    fn clock_moves_on() {
        let before = Utc::now();
        while Utc::now() <= before {
            std::hint::spin_loop();
        }
    }

    /// Run `f` to its end on a fresh `current_thread` runtime.
    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// A text delta (droppable under the default policy).
    fn text_delta(p: &mut Publisher) -> Event {
        let delta = translate::payload(
            p.meta(),
            agent_adaptor_driver::StreamPayload::text_content("m", "x"),
        );
        let translate::Routed::Publish(delta) = delta else {
            panic!("a text delta is published");
        };
        delta
    }

    /// Offer a delta on a full buffer: it is handed back to give way, and
    /// dropped once it has (nobody drains meanwhile).
    fn give_way_then_drop(p: &mut Publisher, delta: Event) {
        let waiting = handed_back(p, delta);
        let done = block_on(p.publish_waiting(waiting));
        assert_eq!(done, Ok(()));
        assert!(p.state.pending.is_some(), "dropped and counted");
    }

    /// Offer `delta`, which must be handed back (to give way, or to wait).
    fn handed_back(p: &mut Publisher, delta: Event) -> Box<Waiting> {
        match p.offer(delta) {
            Offer::Wait(waiting) => waiting,
            Offer::Done(done) => panic!("delivered or dropped at once: {done:?}"),
        }
    }

    /// A buffer of two, filled with two reliable events.
    fn full_of_two() -> (Publisher, Consumer, Arc<RunControl>, Waker) {
        let (mut p, c, control) = setup(2, false);
        for n in 0..2 {
            let ev = reliable(&mut p, n);
            offer_now(&mut p, ev);
        }
        (p, c, control, Waker::from(Arc::new(Counter::default())))
    }

    #[test]
    fn a_delta_on_a_full_buffer_gives_way_once_per_full_spell() {
        let (mut p, mut c, _control, waker) = full_of_two();
        let delta = text_delta(&mut p);
        give_way_then_drop(&mut p, delta);
        // The spell goes on: the next deltas drop at once.
        for _ in 0..3 {
            let delta = text_delta(&mut p);
            assert!(matches!(p.offer(delta), Offer::Done(Ok(()))));
        }
        let got = drain(&mut c, &waker);
        assert_eq!(got.len(), 2);
        // Room again: the loss report goes out with the next event, which
        // ends the spell; the next full buffer gives way again.
        let ev = reliable(&mut p, 2);
        offer_now(&mut p, ev);
        let got = drain(&mut c, &waker);
        assert!(
            matches!(&got[0], Event::Dropped(d) if d.count == 4),
            "{got:?}"
        );
        assert_eq!(got.len(), 2);
        let ev = reliable(&mut p, 3);
        offer_now(&mut p, ev);
        let ev = reliable(&mut p, 4);
        offer_now(&mut p, ev);
        let delta = text_delta(&mut p);
        assert!(
            matches!(p.offer(delta), Offer::Wait(_)),
            "a new spell gives way"
        );
    }

    #[test]
    fn a_delta_that_gave_way_is_delivered_when_the_consumer_drained_meanwhile() {
        let (mut p, mut c, _control, waker) = full_of_two();
        let delta = text_delta(&mut p);
        let waiting = handed_back(&mut p, delta);
        // What the yield is for: the consumer drains meanwhile (taking a
        // lot, then coming back for more, frees its slots).
        assert_eq!(drain(&mut c, &waker).len(), 2);
        assert_eq!(block_on(p.publish_waiting(waiting)), Ok(()));
        let got = drain(&mut c, &waker);
        assert_eq!(got.len(), 1);
        assert!(got[0].is_droppable(), "the delta itself, not a loss report");
        assert!(p.state.pending.is_none(), "nothing was dropped");
    }

    #[test]
    fn a_run_cancelled_while_a_delta_gives_way_drops_it_as_cancelled() {
        let (mut p, mut c, control, waker) = full_of_two();
        let delta = text_delta(&mut p);
        let waiting = handed_back(&mut p, delta);
        control.stop(crate::control::StopReason::Cancelled);
        assert_eq!(block_on(p.publish_waiting(waiting)), Err(Cancelled));
        // The loss is reported at the end, as a cancellation.
        let finished = translate::notice(p.meta(), "test.finished", String::new(), None);
        p.finish(finished);
        let got = drain(&mut c, &waker);
        assert_eq!(got.len(), 4, "two events, the loss report, the final event");
        assert!(
            matches!(&got[2], Event::Dropped(d) if d.count == 1 && d.reason == "cancelled"),
            "{:?}",
            got[2]
        );
    }

    #[test]
    fn blocking_mode_never_gives_way_it_waits() {
        let (mut p, _c, _control) = setup(1, true);
        let ev = reliable(&mut p, 0);
        offer_now(&mut p, ev);
        let delta = text_delta(&mut p);
        let waiting = handed_back(&mut p, delta);
        let mut publish = Box::pin(p.publish_waiting(waiting));
        let waker = Waker::from(Arc::new(Counter::default()));
        let mut cx = Context::from_waker(&waker);
        for _ in 0..3 {
            assert!(publish.as_mut().poll(&mut cx).is_pending(), "still waiting");
        }
    }

    /// Offer one reliable event after the wall clock has moved on.
    fn offer_later(p: &mut Publisher, n: usize) {
        clock_moves_on();
        let ev = reliable(p, n);
        offer_now(p, ev);
    }

    #[test]
    fn the_events_of_a_batch_carry_the_time_it_was_opened() {
        let (mut p, mut c, _control) = setup(DEFAULT_EVENT_BUFFER, false);
        let waker = Waker::from(Arc::new(Counter::default()));
        let batch = p.batcher();
        offer_later(&mut p, 0); // outside any batch: its own time
        clock_moves_on();
        batch.begin();
        offer_later(&mut p, 1);
        offer_later(&mut p, 2);
        clock_moves_on();
        batch.begin(); // the next burst: the clock is read again
        offer_later(&mut p, 3);
        offer_later(&mut p, 4);
        batch.end();
        batch.end();
        offer_later(&mut p, 5); // after the outermost close: its own time
        let times: Vec<_> = drain(&mut c, &waker)
            .iter()
            .map(|e| e.meta().time)
            .collect();
        assert_eq!(times.len(), 6);
        assert_eq!(times[1], times[2], "one batch, one receive time");
        assert_eq!(times[3], times[4], "one batch, one receive time");
        assert!(times[0] < times[1], "{times:?}");
        assert!(times[2] < times[3], "a nested batch reads the clock");
        assert!(times[4] < times[5], "after the close every event reads it");
    }

    #[test]
    fn after_a_flush_events_read_the_clock_and_times_never_run_backwards() {
        let (mut p, mut c, _control) = setup(DEFAULT_EVENT_BUFFER, false);
        let waker = Waker::from(Arc::new(Counter::default()));
        let batch = p.batcher();
        batch.begin();
        offer_later(&mut p, 0);
        // Core publishes its own event (say, an approval request) and
        // flushes; the driver's next event comes after the human answered.
        offer_later(&mut p, 1);
        batch.flush();
        offer_later(&mut p, 2);
        offer_later(&mut p, 3);
        batch.end();
        let times: Vec<_> = drain(&mut c, &waker)
            .iter()
            .map(|e| e.meta().time)
            .collect();
        assert_eq!(times[0], times[1]);
        assert!(times[1] < times[2] && times[2] < times[3], "{times:?}");
    }

    #[test]
    fn the_final_events_are_never_stamped_before_the_batch_they_close() {
        let (mut p, mut c, _control) = setup(2, false);
        let waker = Waker::from(Arc::new(Counter::default()));
        let batch = p.batcher();
        batch.begin();
        for n in 0..2 {
            offer_later(&mut p, n);
        }
        // A delta on the full buffer is dropped (after giving way once);
        // the loss report comes with the final event.
        let delta = text_delta(&mut p);
        give_way_then_drop(&mut p, delta);
        clock_moves_on();
        let finished = translate::notice(p.meta(), "test.finished", String::new(), None);
        p.finish(finished);
        let got = drain(&mut c, &waker);
        let times: Vec<_> = got.iter().map(|e| e.meta().time).collect();
        assert_eq!(got.len(), 4, "two events, the loss report, the final event");
        assert!(matches!(got[2], Event::Dropped(_)));
        assert!(times[1] < times[2] && times[2] <= times[3], "{times:?}");
    }

    #[test]
    fn without_a_batch_every_event_wakes_a_parked_consumer() {
        let (mut p, mut c, _control) = setup(DEFAULT_EVENT_BUFFER, false);
        let counter = Arc::new(Counter::default());
        let waker = Waker::from(counter.clone());
        for n in 0..3 {
            assert!(drain(&mut c, &waker).len() <= 1);
            let ev = reliable(&mut p, n);
            offer_now(&mut p, ev);
            assert_eq!(counter.count(), n + 1);
        }
    }

    #[test]
    fn batches_nest_and_unmatched_ends_are_ignored() {
        let (mut p, mut c, _control) = setup(DEFAULT_EVENT_BUFFER, false);
        let counter = Arc::new(Counter::default());
        let waker = Waker::from(counter.clone());
        let batch = p.batcher();
        batch.end(); // unmatched: ignored
        assert!(drain(&mut c, &waker).is_empty());
        batch.begin();
        batch.begin();
        let ev = reliable(&mut p, 0);
        offer_now(&mut p, ev);
        batch.end();
        assert_eq!(counter.count(), 0, "the inner end is not the outermost");
        batch.end();
        assert_eq!(counter.count(), 1);
        batch.end(); // unmatched again
        assert_eq!(drain(&mut c, &waker).len(), 1);
        let ev = reliable(&mut p, 1);
        offer_now(&mut p, ev);
        assert_eq!(counter.count(), 2, "outside a batch again: woken at once");
    }

    #[test]
    fn an_empty_batch_and_a_flush_of_nothing_wake_nobody() {
        let (p, mut c, _control) = setup(DEFAULT_EVENT_BUFFER, false);
        let counter = Arc::new(Counter::default());
        let waker = Waker::from(counter.clone());
        assert!(drain(&mut c, &waker).is_empty());
        let batch = p.batcher();
        batch.begin();
        batch.end();
        batch.flush();
        assert_eq!(counter.count(), 0);
    }

    #[test]
    fn a_long_batch_wakes_the_consumer_at_the_threshold_and_on_flush() {
        let (mut p, mut c, _control) = setup(DEFAULT_EVENT_BUFFER, false);
        let at = wake_threshold(DEFAULT_EVENT_BUFFER);
        assert!((2..=DEFAULT_EVENT_BUFFER / 2).contains(&at));
        let counter = Arc::new(Counter::default());
        let waker = Waker::from(counter.clone());
        assert!(drain(&mut c, &waker).is_empty());
        let batch = p.batcher();
        batch.begin();
        for n in 0..at - 1 {
            let ev = reliable(&mut p, n);
            offer_now(&mut p, ev);
        }
        assert_eq!(counter.count(), 0);
        let ev = reliable(&mut p, at);
        offer_now(&mut p, ev);
        assert_eq!(
            counter.count(),
            1,
            "woken once the queue reached the threshold"
        );
        assert_eq!(drain(&mut c, &waker).len(), at);
        let ev = reliable(&mut p, 0);
        offer_now(&mut p, ev);
        assert_eq!(counter.count(), 1);
        batch.flush();
        assert_eq!(counter.count(), 2, "a flush wakes inside the batch");
        assert_eq!(drain(&mut c, &waker).len(), 1);
        batch.end();
        assert_eq!(counter.count(), 2, "nothing left to read");
    }

    #[test]
    fn unobserved_events_are_not_queued_but_keep_their_sequence_numbers() {
        let (mut p, mut c, control) = setup(DEFAULT_EVENT_BUFFER, false);
        let counter = Arc::new(Counter::default());
        let waker = Waker::from(counter.clone());
        let delta = |p: &mut Publisher, n: usize| {
            let payload = agent_adaptor_driver::StreamPayload::text_content("m", format!("{n}"));
            match translate::payload(p.meta(), payload) {
                translate::Routed::Publish(ev) => ev,
                _ => unreachable!("a text delta is published"),
            }
        };
        let ev = delta(&mut p, 0);
        offer_now(&mut p, ev);
        c.unobserved();
        for n in 1..5 {
            let ev = delta(&mut p, n);
            offer_now(&mut p, ev);
        }
        let ev = reliable(&mut p, 0);
        offer_now(&mut p, ev);
        let ev = reliable(&mut p, 1);
        p.finish(ev);
        let got = drain(&mut c, &waker);
        let seqs: Vec<u64> = got.iter().map(|e| e.meta().sequence).collect();
        assert_eq!(
            seqs,
            [1, 7],
            "the delta before, then only the closing event, numbered as if all were queued"
        );
        assert!(got[0].is_droppable() && !got[1].is_droppable());
        // Once cancelled, deltas are refused (and counted) as before.
        control.stop(crate::control::StopReason::Cancelled);
        let ev = delta(&mut p, 9);
        assert!(matches!(p.offer(ev), Offer::Done(Err(Cancelled))));
    }

    #[tokio::test]
    async fn cancellation_frees_a_publisher_waiting_on_events_the_consumer_holds() {
        // The consumer takes the lot, hands on one, and stops reading.
        let (mut p, mut c, control, waker, _first) = full_with_a_lot_in_hand(2);
        let mut cx = Context::from_waker(&waker);
        let ev = reliable(&mut p, 2);
        let Offer::Wait(waiting) = p.offer(ev) else {
            panic!("the buffer is full with what the consumer holds");
        };
        let cancel = control.clone();
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            cancel.stop(crate::control::StopReason::Cancelled);
        });
        // The waiter is released by the cancellation, not by the consumer,
        // and its event is counted as lost.
        assert_eq!(p.publish_waiting(waiting).await, Err(Cancelled));
        let ev = reliable(&mut p, 3);
        p.finish(ev);
        let rest: Vec<Event> = drain(&mut c, &waker);
        let kinds: Vec<_> = rest.iter().map(Event::kind_name).collect();
        assert_eq!(kinds.len(), 3, "{kinds:?}");
        assert_eq!(rest[0].meta().sequence, 2, "the held event comes first");
        let Event::Dropped(d) = &rest[1] else {
            panic!("a loss report before the end: {kinds:?}");
        };
        assert_eq!(
            (d.count, d.first_sequence, d.reason.as_str()),
            (1, 3, "cancelled")
        );
        assert_eq!(rest[2].meta().sequence, 5, "the closing event is last");
        assert!(matches!(c.poll_next(&mut cx), Poll::Ready(None)));
    }

    #[test]
    fn the_threshold_is_within_the_buffer() {
        for buffer in [1, 2, 3, 7, 100, 1024, 1 << 20] {
            let at = wake_threshold(buffer);
            assert!(
                at >= 1 && at <= buffer && at <= BATCH_WAKE_MAX,
                "{buffer}: {at}"
            );
        }
    }

    #[test]
    fn finishing_inside_a_batch_wakes_the_consumer() {
        let (mut p, mut c, _control) = setup(4, false);
        let counter = Arc::new(Counter::default());
        let waker = Waker::from(counter.clone());
        assert!(drain(&mut c, &waker).is_empty());
        p.batcher().begin();
        let ev = reliable(&mut p, 0);
        p.finish(ev);
        assert_eq!(counter.count(), 1);
        assert_eq!(drain(&mut c, &waker).len(), 1);
        let mut cx = Context::from_waker(&waker);
        assert!(matches!(c.poll_next(&mut cx), Poll::Ready(None)));
    }

    /// A batch longer than the buffer, in blocking mode and with the
    /// consumer on another task: the publisher has to wait for space inside
    /// the batch, and everything arrives.
    #[test]
    fn a_full_queue_inside_a_batch_still_drains() {
        for multi_thread in [false, true] {
            let rt = if multi_thread {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
            } else {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
            }
            .unwrap();
            for buffer in [1, 2, 3, 8] {
                let (mut p, mut c, _control) = setup(buffer, true);
                let got = rt.block_on(async move {
                    let reader = tokio::spawn(async move {
                        let mut n = 0u64;
                        while let Some(ev) = poll_fn(|cx| c.poll_next(cx)).await {
                            n += 1;
                            assert_eq!(ev.meta().sequence, n);
                        }
                        n
                    });
                    let batch = p.batcher();
                    batch.begin();
                    for n in 0..50 {
                        let ev = reliable(&mut p, n);
                        p.publish(ev).await.unwrap();
                    }
                    let ev = reliable(&mut p, 50);
                    p.finish(ev);
                    reader.await.unwrap()
                });
                assert_eq!(got, 51, "buffer {buffer}, multi_thread {multi_thread}");
            }
        }
    }
}
