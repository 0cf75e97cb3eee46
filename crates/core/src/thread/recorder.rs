//! The event log recorder: copies every event of a recorded thread's run
//! into the thread store's event log.
//!
//! The broker hands every event it stamps (delivered, or dropped for a
//! slow consumer) to an unbounded channel; one writer task per run appends
//! them in batches: whatever accumulated while the previous append was in
//! flight, at most [`BATCH_MAX`] events (a natural group commit — no timer,
//! no added latency when the store keeps up). Backpressure: none towards
//! the driver. The channel grows while the store is slower than the run
//! (memory, bounded by the run's own events), and the run's end waits
//! until everything is written. A failed append stops the run with
//! [`ThreadError::EventLog`]; nothing is ever dropped silently.
//!
//! Writing starts only once the run holds the key's lease: a run refused
//! as `Busy` (or one whose record cannot be resumed) records nothing.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::event_log::{NewEvent, Retention};
use super::store::{StoreError, ThreadStore};
use crate::control::{RunControl, StopReason};
use crate::event::Event;

/// The most events one append carries.
pub const BATCH_MAX: usize = 256;

/// What the broker (and the run's end) send the writer.
// Events are the hot path (one per event); boxing them would cost an
// allocation each to shrink the rare `Flush`.
#[allow(clippy::large_enum_variant)]
pub(crate) enum TapItem {
    /// An event, stamped.
    Event(Event),
    /// Write everything received so far and answer.
    Flush(oneshot::Sender<Result<(), StoreError>>),
}

/// A run's recorder: the writer task and the controls of its life.
pub(crate) struct Recorder {
    tx: mpsc::UnboundedSender<TapItem>,
    go: Option<oneshot::Sender<bool>>,
    writer: JoinHandle<Result<(), StoreError>>,
}

/// What the writer needs.
pub(crate) struct RecorderSpec {
    pub(crate) store: Arc<dyn ThreadStore>,
    pub(crate) key: Arc<str>,
    pub(crate) run_id: Arc<str>,
    pub(crate) prompt: String,
    pub(crate) retention: Retention,
}

impl Recorder {
    /// Spawn the writer on `runtime`; returns the recorder and the tap for
    /// the broker.
    pub(crate) fn spawn(
        runtime: &tokio::runtime::Handle,
        spec: RecorderSpec,
        control: Arc<RunControl>,
    ) -> (Recorder, mpsc::UnboundedSender<TapItem>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (go_tx, go_rx) = oneshot::channel();
        let writer = runtime.spawn(write(spec, control, rx, go_rx));
        let recorder = Recorder {
            tx: tx.clone(),
            go: Some(go_tx),
            writer,
        };
        (recorder, tx)
    }

    /// The run holds its lease (`true`: start writing) or never will
    /// (`false`: what was received is discarded).
    pub(crate) fn go(&mut self, proceed: bool) {
        if let Some(go) = self.go.take() {
            let _ = go.send(proceed);
        }
    }

    /// Wait until everything received so far is written.
    pub(crate) async fn flush(&self) -> Result<(), StoreError> {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(TapItem::Flush(tx)).is_err() {
            return Err(StoreError::Backend("the event log writer ended".into()));
        }
        rx.await
            .unwrap_or_else(|_| Err(StoreError::Backend("the event log writer ended".into())))
    }

    /// After the broker let its tap go: write the rest, prune by the
    /// retention, and report how it went.
    pub(crate) async fn finish(mut self) -> Result<(), StoreError> {
        self.go(true);
        drop(self.tx);
        match self.writer.await {
            Ok(done) => done,
            Err(e) => Err(StoreError::Backend(format!("event log writer failed: {e}"))),
        }
    }
}

/// The writer task.
async fn write(
    spec: RecorderSpec,
    control: Arc<RunControl>,
    mut rx: mpsc::UnboundedReceiver<TapItem>,
    go: oneshot::Receiver<bool>,
) -> Result<(), StoreError> {
    if !go.await.unwrap_or(false) {
        return Ok(());
    }
    let mut writer = Writer {
        spec,
        prompt_sent: false,
        failed: None,
        batch: Vec::with_capacity(BATCH_MAX),
    };
    let mut items = Vec::with_capacity(BATCH_MAX);
    while rx.recv_many(&mut items, BATCH_MAX).await > 0 {
        for item in items.drain(..) {
            match item {
                TapItem::Event(event) => writer.push(event),
                TapItem::Flush(reply) => {
                    let _ = reply.send(writer.write().await);
                }
            }
        }
        if let Err(e) = writer.write().await {
            control.stop(StopReason::EventLog(e));
        }
    }
    writer.write().await?;
    if writer.spec.retention != Retention::keep_all() {
        writer
            .spec
            .store
            .prune_events(&writer.spec.key, &writer.spec.retention)
            .await?;
    }
    Ok(())
}

struct Writer {
    spec: RecorderSpec,
    prompt_sent: bool,
    /// The first failure: every later write reports it (the log holds a
    /// prefix of the run, and nothing after the failure).
    failed: Option<StoreError>,
    batch: Vec<NewEvent>,
}

impl Writer {
    fn push(&mut self, event: Event) {
        let mut record = NewEvent::now(event);
        if !self.prompt_sent {
            self.prompt_sent = true;
            record.prompt = Some(self.spec.prompt.clone());
        }
        self.batch.push(record);
    }

    /// Append the batch (one atomic append).
    async fn write(&mut self) -> Result<(), StoreError> {
        if let Some(e) = &self.failed {
            self.batch.clear();
            return Err(e.clone());
        }
        if self.batch.is_empty() {
            return Ok(());
        }
        let appended = self
            .spec
            .store
            .append_events(&self.spec.key, &self.spec.run_id, &self.batch)
            .await;
        self.batch.clear();
        match appended {
            Ok(_) => Ok(()),
            Err(e) => {
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }
}
