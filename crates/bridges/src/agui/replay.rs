//! `Last-Event-ID` replay of an AG-UI run from its thread's event log (see
//! [`record`](super::record)): the reconnect may reach another instance
//! than the one running the run, or come after the in-memory buffer let
//! the run go.
//!
//! The frames are derived again from the recorded core events by the same
//! mapper, with the same ids; the terminal frames are taken verbatim from
//! the terminal notice. A run still going is followed by polling the log
//! until its terminal notice; a run whose log stops (its owner died, or it
//! was silent longer than the idle limit, or a later run of the thread
//! began, or its thread's record was saved and the log stayed silent: its
//! host died between saving and logging the end) ends with `RUN_ERROR`
//! `interrupted`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_adaptor_core::thread::event_log::RecordedEvent;
use agent_adaptor_core::{Event, ThreadStore};

use super::error::RequestError;
use super::hub::Hub;
use super::mapper::{Mapper, Next};
use super::presence::TOPIC_READER;
use super::record::{RunMeta, TERMINAL_NOTICE, TerminalFrame, read_since, run_meta, unsupported};
use super::run::{FrameId, Stamp};
use super::sse::frame;
use crate::Principal;
use crate::desk::Desk;

/// A recorded run found in the log.
pub(crate) struct Found {
    /// The AG-UI run asked for.
    pub(crate) meta: RunMeta,
    /// The core run id (of every record of the run).
    pub(crate) core_run_id: String,
    /// The cursor of the core run's first record: an AG-UI run that
    /// resumes an interrupted one is derived from the whole core run.
    pub(crate) start: u64,
}

/// The store error as the client sees it: no event log (503
/// `event_log_unavailable`), or any other failure (503 with a fixed text).
pub(crate) fn store_error(e: &agent_adaptor_core::thread::store::StoreError) -> RequestError {
    if unsupported(e) {
        RequestError::EventLogUnavailable
    } else {
        RequestError::StoreUnavailable
    }
}

/// Find AG-UI run `run_id` in `key`'s log and check that `principal` owns
/// it: 404 when the log never held it, 410 when it was pruned away, 403
/// for another principal's run.
pub(crate) async fn find(
    store: &dyn ThreadStore,
    key: &str,
    run_id: &str,
    principal: &Principal,
) -> Result<Found, RequestError> {
    let records = read_since(store, key, 0)
        .await
        .map_err(|e| store_error(&e))?;
    // Cursors start at 1: a log that no longer starts there was pruned.
    let pruned = records.first().is_some_and(|r| r.cursor > 1);
    let gone =
        || RequestError::ReplayUnavailable(format!("run {run_id:?} (pruned from the event log)"));
    let found = records.iter().find_map(|rec| {
        run_meta(rec)
            .filter(|m| m.run_id == run_id)
            .map(|meta| (meta, rec.run_id.clone()))
    });
    let Some((meta, core_run_id)) = found else {
        return Err(if pruned {
            gone()
        } else {
            RequestError::RunNotFound(run_id.to_owned())
        });
    };
    if meta.owner != principal.digest() {
        tracing::warn!(run = run_id, %principal, "agui: refused a log replay of another principal's run");
        return Err(RequestError::Forbidden(
            "this run belongs to another client: only it may replay the stream",
        ));
    }
    // The core run's first record must be its original run notice.
    let first = records.iter().find(|r| r.run_id == core_run_id);
    let start = match first.and_then(|r| run_meta(r).map(|m| (r.cursor, m))) {
        Some((cursor, m)) if m.resumed_at.is_none() => cursor,
        _ => return Err(gone()),
    };
    Ok(Found {
        meta,
        core_run_id,
        start,
    })
}

/// A recorded run's frames, derived again record by record from the core
/// run's first record; only the frames of the AG-UI run asked for are
/// returned.
pub(crate) struct LogFrames {
    target: RunMeta,
    mapper: Option<Mapper>,
    stamp: Stamp,
    core_run_id: String,
    /// The core events still map (not ended, not parked at an interrupt).
    mapping: bool,
    /// The current AG-UI run is the one asked for.
    emitting: bool,
    done: bool,
}

impl LogFrames {
    pub(crate) fn new(found: &Found) -> Self {
        LogFrames {
            target: found.meta.clone(),
            mapper: None,
            stamp: Stamp::default(),
            core_run_id: found.core_run_id.clone(),
            mapping: false,
            emitting: false,
            done: false,
        }
    }

    /// True once the terminal frames were produced.
    pub(crate) fn done(&self) -> bool {
        self.done
    }

    fn encode(frames: Vec<super::run::AguiFrame>) -> Vec<(FrameId, String)> {
        frames
            .into_iter()
            .map(|f| (f.id, f.event.to_json()))
            .collect()
    }

    /// The frames (id, AG-UI JSON) of one record. A record of another run
    /// means this one stopped without its end: it is interrupted.
    pub(crate) fn record(&mut self, rec: &RecordedEvent) -> Vec<(FrameId, String)> {
        if self.done {
            return Vec::new();
        }
        if rec.run_id != self.core_run_id {
            return self.interrupted();
        }
        if let Some(meta) = run_meta(rec) {
            return self.begin(meta);
        }
        match &rec.event {
            Event::Notice(n) if n.kind == TERMINAL_NOTICE => {
                let frames: Vec<TerminalFrame> = n
                    .data
                    .clone()
                    .and_then(|d| serde_json::from_value(d).ok())
                    .unwrap_or_default();
                let mut out = Vec::new();
                for f in frames {
                    if let Ok(id) = f.id.parse::<FrameId>() {
                        self.stamp.after(id);
                        out.push((id, f.json));
                    }
                }
                self.mapping = false;
                if !self.emitting {
                    return Vec::new();
                }
                if out.is_empty() {
                    // An unreadable terminal notice still ends the run.
                    return self.interrupted();
                }
                self.done = true;
                out
            }
            ev if self.mapping => {
                let Some(mapper) = self.mapper.as_mut() else {
                    return Vec::new();
                };
                let mut events = Vec::new();
                let next = mapper.event(ev, &mut events);
                let frames = self.stamp.stamp(Some(ev.meta().sequence), events);
                match next {
                    Next::Continue => {}
                    Next::Finished => self.mapping = false,
                    // The interrupt's frames are in the terminal notice.
                    Next::Interrupt(..) => {
                        self.mapping = false;
                        return Vec::new();
                    }
                }
                if self.emitting {
                    Self::encode(frames)
                } else {
                    Vec::new()
                }
            }
            _ => Vec::new(),
        }
    }

    /// An AG-UI run of the core run begins (the original, or a resume).
    fn begin(&mut self, meta: RunMeta) -> Vec<(FrameId, String)> {
        self.emitting = meta.run_id == self.target.run_id;
        self.mapping = true;
        match (meta.resumed_at, self.mapper.as_mut()) {
            (Some(ts), Some(mapper)) => {
                let mut events = Vec::new();
                mapper.begin_run(meta.thread_id, meta.run_id, Some(ts), &mut events);
                let frames = self.stamp.stamp(None, events);
                if self.emitting {
                    return Self::encode(frames);
                }
            }
            _ => {
                let mut mapper = Mapper::new(meta.thread_id, meta.run_id, None);
                if let Some(snapshot) = meta.snapshot {
                    mapper.set_snapshot(snapshot);
                }
                self.mapper = Some(mapper);
            }
        }
        Vec::new()
    }

    /// End the run as interrupted.
    pub(crate) fn interrupted(&mut self) -> Vec<(FrameId, String)> {
        if self.done {
            return Vec::new();
        }
        self.done = true;
        let target = &self.target;
        let mapper = self.mapper.get_or_insert_with(|| {
            Mapper::new(target.thread_id.clone(), target.run_id.clone(), None)
        });
        let mut events = Vec::new();
        mapper.interrupted(Some(chrono::Utc::now().timestamp_millis()), &mut events);
        Self::encode(self.stamp.stamp(None, events))
    }
}

/// The frames of AG-UI run `run_id` of `thread_id` that never started
/// where a replay could see it: `RUN_STARTED`, then `RUN_ERROR`
/// `interrupted`.
pub(crate) fn interrupted_frames(thread_id: String, run_id: String) -> Vec<(FrameId, String)> {
    let mut mapper = Mapper::new(thread_id, run_id, None);
    let mut events = Vec::new();
    mapper.interrupted(Some(chrono::Utc::now().timestamp_millis()), &mut events);
    LogFrames::encode(Stamp::default().stamp(None, events))
}

/// How long a followed run's log may stay silent before the follow asks
/// the store whether the run is over.
const SETTLE: Duration = Duration::from_secs(3);

/// Whether a followed run ended without its end in the log: its host saved
/// the thread's record (the run finished) and died before it logged the
/// terminal frames. Seen as the key's record created after the run's first
/// log record (both by the run's host clock), with the log still silent a
/// [`SETTLE`] later.
#[derive(Default)]
struct Ended {
    /// When the run's first record was taken.
    began: Option<chrono::DateTime<chrono::Utc>>,
    /// When the follow last asked the store.
    asked: Option<Instant>,
    /// When the follow first saw the run's record saved.
    saved: Option<Instant>,
}

impl Ended {
    fn began(&mut self, rec: &RecordedEvent, core_run_id: &str) {
        if self.began.is_none() && rec.run_id == core_run_id {
            self.began = Some(rec.recorded_at);
        }
    }

    /// Whether to end the follow now (`silent`: since the log last grew).
    async fn unlogged(
        &mut self,
        store: &dyn ThreadStore,
        key: &str,
        silent: Duration,
        idle: Duration,
    ) -> bool {
        let settle = SETTLE.min(idle);
        if silent < settle {
            self.saved = None;
            return false;
        }
        if let Some(saved) = self.saved {
            return saved.elapsed() >= settle;
        }
        let Some(began) = self.began else {
            return false;
        };
        if self.asked.is_some_and(|t| t.elapsed() < settle) {
            return false;
        }
        self.asked = Some(Instant::now());
        if let Ok(Some(record)) = store.resolve(key, false).await
            && record.created_at >= began
        {
            self.saved = Some(Instant::now());
        }
        false
    }
}

/// How a replay follows the log.
#[derive(Clone)]
pub(crate) struct Follow {
    pub(crate) poll: Duration,
    pub(crate) idle: Duration,
    /// Where to announce this reader to the run's host, and how often
    /// (see [`presence`](super::presence)).
    pub(crate) announce: Option<(Desk, Duration)>,
}

/// Push the frames after `cursor` (all without one) of the run `found`
/// into `hub`, following the log until the run's end; then finish the hub.
/// Stops when the client leaves. While it reads, it tells the run's host
/// that a reader is there.
pub(crate) async fn follow(
    store: Arc<dyn ThreadStore>,
    key: String,
    found: Found,
    cursor: Option<FrameId>,
    hub: Arc<Hub>,
    follow: Follow,
) {
    let mut frames = LogFrames::new(&found);
    let mut after = found.start.saturating_sub(1);
    let mut heard = Instant::now();
    let mut announced: Option<Instant> = None;
    let mut ended = Ended::default();
    'follow: loop {
        if let Some((desk, every)) = &follow.announce
            && announced.is_none_or(|t| t.elapsed() >= *every)
        {
            desk.notify(TOPIC_READER, &found.core_run_id).await;
            announced = Some(Instant::now());
        }
        let batch = match read_since(store.as_ref(), &key, after).await {
            Ok(records) => {
                let mut out = Vec::new();
                if !records.is_empty() {
                    heard = Instant::now();
                }
                for rec in &records {
                    after = rec.cursor;
                    ended.began(rec, &found.core_run_id);
                    out.extend(frames.record(rec));
                    if frames.done() {
                        break;
                    }
                }
                let silent = heard.elapsed();
                if !frames.done()
                    && (silent >= follow.idle
                        || ended
                            .unlogged(store.as_ref(), &key, silent, follow.idle)
                            .await)
                {
                    out.extend(frames.interrupted());
                }
                out
            }
            Err(e) => {
                tracing::warn!(
                    unsupported = unsupported(&e),
                    "agui: reading the event log failed during a replay; ending it as interrupted"
                );
                frames.interrupted()
            }
        };
        for (id, json) in batch {
            if cursor.is_none_or(|c| id > c) && hub.push(id, frame(id, &json), true).await.is_err()
            {
                break 'follow;
            }
        }
        if frames.done() {
            break;
        }
        tokio::select! {
            () = tokio::time::sleep(follow.poll) => {}
            () = hub.abandoned() => break,
        }
    }
    hub.finish();
}
