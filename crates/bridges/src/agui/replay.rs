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
//! began) ends with `RUN_ERROR` `interrupted`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_adaptor_core::thread::event_log::RecordedEvent;
use agent_adaptor_core::{Event, ThreadStore};
use bytes::Bytes;

use super::error::RequestError;
use super::hub::Hub;
use super::mapper::{Mapper, Next};
use super::record::{RunMeta, TERMINAL_NOTICE, TerminalFrame, read_since, run_meta, unsupported};
use super::run::{FrameId, Stamp};
use super::sse::frame;
use crate::Principal;

/// A recorded run found in the log.
pub(crate) struct Found {
    pub(crate) meta: RunMeta,
    /// The core run id (of every record of the run).
    pub(crate) core_run_id: String,
    /// The cursor of its run notice.
    pub(crate) cursor: u64,
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
    let found = records.iter().find_map(|rec| {
        run_meta(rec)
            .filter(|m| m.run_id == run_id)
            .map(|meta| Found {
                meta,
                core_run_id: rec.run_id.clone(),
                cursor: rec.cursor,
            })
    });
    let Some(found) = found else {
        // Cursors start at 1: a log that no longer starts there was pruned,
        // and the run may have been in the part dropped.
        let pruned = records.first().is_some_and(|r| r.cursor > 1);
        return Err(if pruned {
            RequestError::ReplayUnavailable(format!("run {run_id:?} (pruned from the event log)"))
        } else {
            RequestError::RunNotFound(run_id.to_owned())
        });
    };
    if found.meta.owner != principal.as_str() {
        tracing::warn!(run = run_id, %principal, "agui: refused a log replay of another principal's run");
        return Err(RequestError::Forbidden(
            "this run belongs to another client: only it may replay the stream",
        ));
    }
    Ok(found)
}

/// A recorded run's frames, derived again record by record.
pub(crate) struct LogFrames {
    mapper: Mapper,
    stamp: Stamp,
    core_run_id: String,
    /// The core events still map (until the run's end or interrupt).
    mapping: bool,
    done: bool,
}

impl LogFrames {
    pub(crate) fn new(found: &Found) -> Self {
        let mut mapper = Mapper::new(
            found.meta.thread_id.clone(),
            found.meta.run_id.clone(),
            None,
        );
        if let Some(snapshot) = &found.meta.snapshot {
            mapper.set_snapshot(snapshot.clone());
        }
        LogFrames {
            mapper,
            stamp: Stamp::default(),
            core_run_id: found.core_run_id.clone(),
            mapping: true,
            done: false,
        }
    }

    /// True once the terminal frames were produced.
    pub(crate) fn done(&self) -> bool {
        self.done
    }

    /// The frames of one record after the run notice. A record of another
    /// run means this one stopped without its end: it is interrupted.
    pub(crate) fn record(&mut self, rec: &RecordedEvent) -> Vec<(FrameId, Bytes)> {
        if self.done {
            return Vec::new();
        }
        if rec.run_id != self.core_run_id {
            return self.interrupted();
        }
        match &rec.event {
            Event::Notice(n) if n.kind == TERMINAL_NOTICE => {
                self.done = true;
                let frames: Vec<TerminalFrame> = n
                    .data
                    .clone()
                    .and_then(|d| serde_json::from_value(d).ok())
                    .unwrap_or_default();
                let mut out = Vec::new();
                for f in frames {
                    if let Ok(id) = f.id.parse::<FrameId>() {
                        self.stamp.after(id);
                        out.push((id, frame(id, &f.json)));
                    }
                }
                if out.is_empty() {
                    // An unreadable terminal notice still ends the run.
                    self.done = false;
                    return self.interrupted();
                }
                out
            }
            ev if self.mapping
                && !matches!(ev, Event::Notice(n) if n.kind == super::record::RUN_NOTICE) =>
            {
                let mut events = Vec::new();
                let next = self.mapper.event(ev, &mut events);
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
                frames
                    .into_iter()
                    .map(|f| (f.id, frame(f.id, &f.event.to_json())))
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// End the run as interrupted.
    pub(crate) fn interrupted(&mut self) -> Vec<(FrameId, Bytes)> {
        if self.done {
            return Vec::new();
        }
        self.done = true;
        let mut events = Vec::new();
        self.mapper
            .interrupted(Some(chrono::Utc::now().timestamp_millis()), &mut events);
        self.stamp
            .stamp(None, events)
            .into_iter()
            .map(|f| (f.id, frame(f.id, &f.event.to_json())))
            .collect()
    }
}

/// How a replay follows the log.
#[derive(Clone, Copy)]
pub(crate) struct Follow {
    pub(crate) poll: Duration,
    pub(crate) idle: Duration,
}

/// Push the frames after `cursor` of the run `found` into `hub`, following
/// the log until the run's end; then finish the hub. Stops when the client
/// leaves.
pub(crate) async fn follow(
    store: Arc<dyn ThreadStore>,
    key: String,
    found: Found,
    cursor: FrameId,
    hub: Arc<Hub>,
    follow: Follow,
) {
    let mut frames = LogFrames::new(&found);
    let mut after = found.cursor;
    let mut heard = Instant::now();
    'follow: loop {
        let batch = match read_since(store.as_ref(), &key, after).await {
            Ok(records) => {
                let mut out = Vec::new();
                if !records.is_empty() {
                    heard = Instant::now();
                }
                for rec in &records {
                    after = rec.cursor;
                    out.extend(frames.record(rec));
                    if frames.done() {
                        break;
                    }
                }
                if !frames.done() && heard.elapsed() >= follow.idle {
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
        for (id, bytes) in batch {
            if id > cursor && hub.push(id, bytes).await.is_err() {
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
