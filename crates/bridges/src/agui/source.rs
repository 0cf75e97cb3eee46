//! The per-run producer task: reads a run (AG-UI or raw), encodes SSE
//! frames into the run's hub, parks interrupted runs, and cancels the run
//! when every client has left.

use std::sync::Arc;
use std::time::Duration;

use agent_adaptor_core::{Event, RunStream};
use futures::StreamExt;
use serde_json::json;

use super::hub::{Hub, Hubs};
use super::interrupts::InterruptRegistry;
use super::presence::Presence;
use super::record::{Recorder, RunMeta};
use super::run::{AguiRun, FrameId};
use super::sse::frame;
use crate::public_error::{STORE_MESSAGE, public_error, store_failure};

/// A raw-mode run: one frame per event, our own event JSON, the SSE id is
/// `EventMeta::sequence`.
pub(crate) struct RawRun {
    stream: RunStream,
    seen_any: bool,
    done: bool,
}

impl RawRun {
    pub(crate) fn new(stream: RunStream) -> Self {
        RawRun {
            stream,
            seen_any: false,
            done: false,
        }
    }

    /// The next frame. A run refused before it started has no events: it
    /// gets one `{"type":"error","code","message"}` frame with id 0.
    async fn next_frame(&mut self) -> Option<(FrameId, String)> {
        if self.done {
            return None;
        }
        match self.stream.next().await {
            Some(mut ev) => {
                self.seen_any = true;
                if let Event::RunFinished(f) = &mut ev
                    && f.failed
                    && let Err(e) = self.stream.result().await
                    && store_failure(&e)
                {
                    // The store's own words stay in the server log.
                    let _ = public_error(&e, self.stream.run_id());
                    f.message = STORE_MESSAGE.into();
                }
                let id = FrameId {
                    sequence: ev.meta().sequence,
                    index: 0,
                };
                Some((id, raw_json(&ev)))
            }
            None => {
                self.done = true;
                if self.seen_any {
                    return None;
                }
                let err = self.stream.result().await.err()?;
                let (code, message) = public_error(&err, self.stream.run_id());
                let body = json!({"type": "error", "code": code, "message": message});
                let id = FrameId::default();
                Some((id, body.to_string()))
            }
        }
    }
}

fn raw_json(ev: &Event) -> String {
    serde_json::to_string(ev).unwrap_or_else(|e| {
        json!({"type": "error", "code": "serialization", "message": e.to_string()}).to_string()
    })
}

/// What the producer reads.
pub(crate) enum Source {
    /// AG-UI frames.
    Agui(Box<AguiRun>),
    /// Raw event frames.
    Raw(RawRun),
    /// Handed over (parked) or finished.
    Gone,
}

impl Source {
    /// The next frames: ids and `data:` JSON.
    async fn next_batch(&mut self) -> Option<Vec<(FrameId, String)>> {
        match self {
            Source::Agui(run) => run.next_batch().await.map(|batch| {
                batch
                    .into_iter()
                    .map(|f| (f.id, f.event.to_json()))
                    .collect()
            }),
            Source::Raw(run) => run.next_frame().await.map(|f| vec![f]),
            Source::Gone => None,
        }
    }

    pub(crate) fn handle(&self) -> Option<agent_adaptor_core::RunHandle> {
        match self {
            Source::Agui(run) => Some(run.handle()),
            Source::Raw(run) => Some(run.stream.handle()),
            Source::Gone => None,
        }
    }

    fn cancel(&self) {
        match self {
            Source::Agui(run) => run.handle().cancel(),
            Source::Raw(run) => run.stream.cancel(),
            Source::Gone => {}
        }
    }
}

/// Shares a parked run's interrupt with the other hosts (see
/// [`SseHandler::share`](super::SseHandler)).
pub(crate) type Share = Arc<
    dyn Fn(&super::run::Interrupted, &str) -> futures::future::BoxFuture<'static, ()> + Send + Sync,
>;

/// Where an interrupted AG-UI run is parked.
pub(crate) struct Parking {
    pub(crate) registry: InterruptRegistry,
    pub(crate) fallback: Duration,
    /// Who started the run ([`Principal::digest`](crate::Principal::digest)):
    /// the only principal that may answer it.
    pub(crate) owner: String,
    /// Called with each run before it is parked.
    pub(crate) share: Option<Share>,
}

/// What to record of an AG-UI run, and where.
pub(crate) struct Recording {
    pub(crate) store: Arc<dyn agent_adaptor_core::ThreadStore>,
    /// The thread key of the log.
    pub(crate) key: String,
    pub(crate) meta: RunMeta,
    /// The prompt (`None` for a run that resumes an interrupted one).
    pub(crate) prompt: Option<String>,
    /// What the log keeps once the run has ended.
    pub(crate) retention: agent_adaptor_core::thread::event_log::Retention,
}

/// Record the core events `source` read since the last call and, when
/// `batch` ended the AG-UI run, its frames.
async fn record(recorder: &mut Recorder, source: &mut Source, batch: &[(FrameId, String)]) {
    let Source::Agui(run) = source else {
        return;
    };
    recorder.events(run.take_seen()).await;
    if run.is_done() || run.is_interrupted() {
        recorder.terminal(batch).await;
    }
}

/// After a cancel, record the rest of a recorded run (its end, `cancelled`)
/// so that a replay from the log ends as the run did.
async fn drain(recorder: &mut Option<Recorder>, source: &mut Source) {
    let Some(recorder) = recorder else {
        return;
    };
    while let Some(batch) = source.next_batch().await {
        record(recorder, source, &batch).await;
    }
}

/// Run the producer of `hub` to the end, then keep the hub reachable under
/// `key` for `retain` (until the handler closes). With a `recording`, the
/// run goes to the event log first, each batch before its frames are sent
/// (so every frame a client saw can be replayed from the log).
///
/// At shutdown ([`Hubs::close`]) the run is cancelled from outside; the
/// producer goes on reading it, so clients get its final frames (an AG-UI
/// `RUN_FINISHED` with outcome `cancelled`) and then the end of the stream.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn produce(
    hub: Arc<Hub>,
    mut source: Source,
    parking: Parking,
    presence: Presence,
    hubs: Arc<Hubs>,
    key: String,
    retain: Duration,
    recording: Option<Recording>,
) {
    let tracked = source.handle().map(|run| hubs.track(run));
    let mut recorder = match (recording, &mut source) {
        (Some(r), Source::Agui(run)) => {
            run.keep_events();
            let run_id = run.handle().run_id().to_owned();
            Some(Recorder::start(r, run_id).await)
        }
        _ => None,
    };
    // One watch for the whole run: the grace runs across batches.
    let deserted = presence.deserted(&hub);
    tokio::pin!(deserted);
    'run: loop {
        let batch = tokio::select! {
            b = source.next_batch() => b,
            () = &mut deserted => {
                tracing::debug!(%key, "every client left; cancelling the run");
                source.cancel();
                drain(&mut recorder, &mut source).await;
                break 'run;
            }
        };
        let Some(batch) = batch else {
            break;
        };
        if let Some(recorder) = &mut recorder {
            record(recorder, &mut source, &batch).await;
        }
        // Park an interrupted run before its RUN_FINISHED is visible, so a
        // client that answers at once finds it.
        if matches!(&source, Source::Agui(run) if run.is_interrupted())
            && let Source::Agui(run) = std::mem::replace(&mut source, Source::Gone)
        {
            match (*run).into_interrupted() {
                Ok(parked) => {
                    // Shared (a store row) and parked before the client
                    // can see the interrupt: an answer at once, here or
                    // on another host, finds it.
                    let shared = parking.share.as_ref().map(|s| s(&parked, &parking.owner));
                    parking
                        .registry
                        .park(parked, parking.fallback, parking.owner.clone());
                    if let Some(shared) = shared {
                        shared.await;
                    }
                }
                Err(run) => source = Source::Agui(run),
            }
        }
        for (id, json) in batch {
            if hub
                .push(id, frame(id, &json), presence.must_be_read())
                .await
                .is_err()
            {
                tracing::debug!(%key, "every client left; cancelling the run");
                source.cancel();
                drain(&mut recorder, &mut source).await;
                break 'run;
            }
        }
    }
    // Dropping the source drops the RunStream (which cancels an unfinished run).
    drop(source);
    drop(tracked);
    hub.finish();
    tokio::select! {
        () = tokio::time::sleep(retain) => {}
        () = hubs.closed() => {}
    }
    hubs.remove(&key, &hub);
}
