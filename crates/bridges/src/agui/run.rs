//! [`AguiRun`]: one core run as AG-UI frames, and [`Interrupted`]: a run
//! parked at an approval, waiting for the AG-UI run that resumes it.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::str::FromStr;
use std::task::{Context, Poll};
use std::time::Duration;

use agent_adaptor_core::driver::DecisionKind;
use agent_adaptor_core::{ApprovalError, ApprovalRequest, Error, RunHandle, RunResult, RunStream};
use futures::future::BoxFuture;
use futures::{FutureExt, Stream};
use serde_json::Value;

use super::mapper::{Mapper, Next};
use super::wire::{AguiEvent, Interrupt, ResumeEntry, ResumeStatus};

/// Where a frame sits: the `EventMeta::sequence` of the core event it was
/// derived from, and its index among that event's frames.
///
/// Written as the SSE `id:` — `"7"` for index 0, `"7.2"` otherwise — so ids
/// are strictly increasing within a response and a `Last-Event-ID` names an
/// exact position. Frames derived before any core event (a run refused
/// before it started) have sequence 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameId {
    /// The core event's sequence.
    pub sequence: u64,
    /// The frame's index among the frames of that event.
    pub index: u32,
}

impl fmt::Display for FrameId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.index == 0 {
            write!(f, "{}", self.sequence)
        } else {
            write!(f, "{}.{}", self.sequence, self.index)
        }
    }
}

/// A `Last-Event-ID` that is not a frame id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a frame id: {0:?} (expected \"<sequence>\" or \"<sequence>.<index>\")")]
pub struct BadFrameId(pub String);

impl FromStr for FrameId {
    type Err = BadFrameId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadFrameId(s.to_owned());
        let t = s.trim();
        let (seq, index) = match t.split_once('.') {
            Some((a, b)) => (a, b.parse::<u32>().map_err(|_| bad())?),
            None => (t, 0),
        };
        Ok(FrameId {
            sequence: seq.parse::<u64>().map_err(|_| bad())?,
            index,
        })
    }
}

/// One AG-UI event with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct AguiFrame {
    /// The SSE id.
    pub id: FrameId,
    /// The event.
    pub event: AguiEvent,
}

enum State {
    /// Reading core events.
    Reading,
    /// The core `RunFinished` was read; drain to the end of the stream.
    Draining,
    /// Waiting for the authoritative outcome.
    Awaiting(BoxFuture<'static, Result<RunResult, Error>>),
    /// An approval ended the AG-UI run; the core run waits for the answer.
    Interrupted(Box<ApprovalRequest>, Box<Interrupt>),
    /// The terminal frame was produced.
    Done,
}

/// A core run seen as AG-UI 1.0 frames: `RUN_STARTED` first, lifecycles
/// completed and deduplicated, exactly one `RUN_FINISHED` / `RUN_ERROR`
/// from the run's outcome last — or, when the run asks for an approval,
/// `RUN_FINISHED` with an interrupt outcome, after which
/// [`into_interrupted`](Self::into_interrupted) hands over the still-running
/// core run.
///
/// Dropping an `AguiRun` drops its [`RunStream`], which cancels the run: a
/// handler that drops it when its client goes away cancels the run.
///
/// ```
/// use agent_adaptor_bridges::agui::AguiRun;
/// use agent_adaptor_core::{Agent, Runner, scripted::ScriptedDriver};
/// use futures::StreamExt;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let agent = Agent::new(ScriptedDriver::text_reply("hello there"));
/// let run = AguiRun::new(agent.stream("hi"), "thread-1", "run-1");
/// let types: Vec<_> = run.map(|f| f.event.type_name()).collect().await;
/// assert_eq!(types.first(), Some(&"RUN_STARTED"));
/// assert_eq!(types.last(), Some(&"RUN_FINISHED"));
/// # }
/// ```
pub struct AguiRun {
    stream: RunStream,
    mapper: Box<Mapper>,
    pending: VecDeque<AguiFrame>,
    state: State,
    stamp: Stamp,
    last_ts: Option<i64>,
    /// The core events read, kept for the event-log recorder (when on).
    seen: Option<Vec<agent_adaptor_core::Event>>,
}

/// Assigns [`FrameId`]s: frames of a core event get its sequence and
/// indexes from 0; frames derived without one continue the last sequence.
#[derive(Debug, Default)]
pub(crate) struct Stamp {
    sequence: u64,
    index: u32,
}

impl Stamp {
    /// Ids for `events`, derived from the core event with `sequence`
    /// (`None`: not derived from a core event).
    pub(crate) fn stamp(
        &mut self,
        sequence: Option<u64>,
        events: Vec<AguiEvent>,
    ) -> Vec<AguiFrame> {
        if let Some(s) = sequence
            && s > self.sequence
        {
            self.sequence = s;
            self.index = 0;
        }
        events
            .into_iter()
            .map(|event| {
                let id = FrameId {
                    sequence: self.sequence,
                    index: self.index,
                };
                self.index = self.index.saturating_add(1);
                AguiFrame { id, event }
            })
            .collect()
    }

    /// Continue after `id` (a frame recorded verbatim).
    pub(crate) fn after(&mut self, id: FrameId) {
        self.sequence = id.sequence;
        self.index = id.index.saturating_add(1);
    }
}

impl fmt::Debug for AguiRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::Reading => "reading",
            State::Draining => "draining",
            State::Awaiting(_) => "awaiting",
            State::Interrupted(..) => "interrupted",
            State::Done => "done",
        };
        f.debug_struct("AguiRun")
            .field("run_id", &self.stream.run_id())
            .field("agui_ids", &self.mapper.ids())
            .field("state", &state)
            .field("pending", &self.pending.len())
            .finish()
    }
}

impl AguiRun {
    /// Map `stream` as the AG-UI run `run_id` of thread `thread_id`.
    pub fn new(stream: RunStream, thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        Self::with_interrupt_limit(stream, thread_id, run_id, None)
    }

    /// Like [`new`](Self::new); interrupts expire (`expiresAt`) at the
    /// approval's own deadline or after `limit`, whichever is first.
    pub fn with_interrupt_limit(
        stream: RunStream,
        thread_id: impl Into<String>,
        run_id: impl Into<String>,
        limit: Option<Duration>,
    ) -> Self {
        AguiRun {
            stream,
            mapper: Box::new(Mapper::new(thread_id.into(), run_id.into(), limit)),
            pending: VecDeque::new(),
            state: State::Reading,
            stamp: Stamp::default(),
            last_ts: None,
            seen: None,
        }
    }

    /// Send `messages` as a `MESSAGES_SNAPSHOT` right after `RUN_STARTED`.
    pub(crate) fn set_snapshot(&mut self, messages: Vec<super::wire::Message>) {
        self.mapper.set_snapshot(messages);
    }

    /// Keep every core event read, for [`take_seen`](Self::take_seen).
    pub(crate) fn keep_events(&mut self) {
        self.seen.get_or_insert_with(Vec::new);
    }

    /// The core events read since the last call (see [`keep_events`](Self::keep_events)).
    pub(crate) fn take_seen(&mut self) -> Vec<agent_adaptor_core::Event> {
        self.seen.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// True once the terminal frame was produced.
    pub(crate) fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// A handle on the core run (its id, outcome and cancellation).
    pub fn handle(&self) -> RunHandle {
        self.stream.handle()
    }

    /// True once an approval ended the AG-UI run with an interrupt.
    pub fn is_interrupted(&self) -> bool {
        matches!(self.state, State::Interrupted(..))
    }

    /// The parked run, when an approval ended this AG-UI run and every frame
    /// was read; otherwise `self` back.
    pub fn into_interrupted(self) -> Result<Interrupted, Box<AguiRun>> {
        if !self.pending.is_empty() {
            return Err(Box::new(self));
        }
        let mut run = self;
        match std::mem::replace(&mut run.state, State::Done) {
            State::Interrupted(request, interrupt) => Ok(Interrupted {
                run,
                request,
                interrupt,
            }),
            other => {
                run.state = other;
                Err(Box::new(run))
            }
        }
    }

    /// The frames derived from the next core event (or the terminal), or
    /// `None` when the AG-UI run ended. Cancel-safe.
    pub async fn next_batch(&mut self) -> Option<Vec<AguiFrame>> {
        futures::future::poll_fn(|cx| self.poll_batch(cx)).await
    }

    fn stamp(&mut self, sequence: Option<u64>, events: Vec<AguiEvent>) {
        let frames = self.stamp.stamp(sequence, events);
        self.pending.extend(frames);
    }

    fn poll_batch(&mut self, cx: &mut Context<'_>) -> Poll<Option<Vec<AguiFrame>>> {
        loop {
            if !self.pending.is_empty() {
                return Poll::Ready(Some(self.pending.drain(..).collect()));
            }
            match &mut self.state {
                State::Done | State::Interrupted(..) => return Poll::Ready(None),
                State::Reading => match Pin::new(&mut self.stream).poll_next(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(None) => self.await_outcome(),
                    Poll::Ready(Some(ev)) => {
                        if let Some(seen) = &mut self.seen {
                            seen.push(ev.clone());
                        }
                        let seq = ev.meta().sequence;
                        self.last_ts = Some(ev.meta().time.timestamp_millis());
                        let mut out = Vec::new();
                        match self.mapper.event(&ev, &mut out) {
                            Next::Continue => {}
                            Next::Finished => self.state = State::Draining,
                            Next::Interrupt(req, interrupt) => {
                                self.state = State::Interrupted(req, interrupt);
                            }
                        }
                        self.stamp(Some(seq), out);
                    }
                },
                State::Draining => match Pin::new(&mut self.stream).poll_next(cx) {
                    Poll::Pending => return Poll::Pending,
                    // Nothing follows RunFinished; skip anything that would
                    // (the log keeps it, and its replay skips it too).
                    Poll::Ready(Some(ev)) => {
                        if let Some(seen) = &mut self.seen {
                            seen.push(ev);
                        }
                    }
                    Poll::Ready(None) => self.await_outcome(),
                },
                State::Awaiting(fut) => match fut.poll_unpin(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(outcome) => {
                        let mut out = Vec::new();
                        let ts = self.last_ts.or_else(now_ms);
                        self.mapper.finish(&outcome, ts, &mut out);
                        self.state = State::Done;
                        self.stamp(None, out);
                    }
                },
            }
        }
    }

    fn await_outcome(&mut self) {
        let handle = self.stream.handle();
        self.state = State::Awaiting(Box::pin(async move { handle.result().await }));
    }
}

impl Stream for AguiRun {
    type Item = AguiFrame;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AguiFrame>> {
        let this = self.get_mut();
        if let Some(f) = this.pending.pop_front() {
            return Poll::Ready(Some(f));
        }
        match this.poll_batch(cx) {
            Poll::Ready(Some(batch)) => {
                this.pending.extend(batch);
                Poll::Ready(this.pending.pop_front())
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

fn now_ms() -> Option<i64> {
    Some(chrono::Utc::now().timestamp_millis())
}

/// Why a resume entry was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// The entry answers another interrupt.
    #[error("resume entry answers interrupt {found:?}, not {expected:?}")]
    WrongInterrupt {
        /// The interrupt this run waits on.
        expected: String,
        /// The one the entry names.
        found: String,
    },
    /// The payload does not match the interrupt's `responseSchema`.
    #[error("invalid resume payload: {0}")]
    InvalidPayload(String),
    /// The approval expired (its deadline passed, or the run ended).
    #[error("the interrupt expired")]
    Expired,
    /// The approval was already answered.
    #[error("the interrupt was already answered")]
    AlreadyResolved,
    /// `"always": true` on an approval that cannot always allow its tool
    /// (not a thread run's permission request naming its tool); nothing
    /// was answered.
    #[error("this approval cannot always allow its tool (not a thread run, or no tool named)")]
    NotGrantable,
}

/// What a resume entry asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Approve a permission or plan review.
    Approve,
    /// Approve a permission request and always allow its tool in the thread.
    ApproveAlways,
    /// Deny (or decline a question), with a reason.
    Deny(String),
    /// Answer a question.
    Answer(String),
}

/// A core run parked at an approval: its AG-UI run ended with an interrupt,
/// and the agent (and its CLI process) waits for the answer. Resume it with
/// the AG-UI run that carries the answer; dropping it cancels the run.
pub struct Interrupted {
    run: AguiRun,
    request: Box<ApprovalRequest>,
    interrupt: Box<Interrupt>,
}

impl fmt::Debug for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interrupted")
            .field("interrupt", &self.interrupt.id)
            .field("run", &self.run)
            .finish()
    }
}

impl Interrupted {
    /// The interrupt the client was sent.
    pub fn interrupt(&self) -> &Interrupt {
        &self.interrupt
    }

    /// The approval request behind it.
    pub fn request(&self) -> &ApprovalRequest {
        &self.request
    }

    /// The AG-UI thread id of the run that was interrupted.
    pub fn thread_id(&self) -> &str {
        self.run.mapper.ids().0
    }

    /// A handle on the waiting core run.
    pub fn handle(&self) -> RunHandle {
        self.run.handle()
    }

    /// When the interrupt stops being answerable (its `expiresAt`).
    pub fn expires_at(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        let s = self.interrupt.expires_at.as_deref()?;
        chrono::DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|t| t.with_timezone(&chrono::Utc))
    }

    /// What `entry` asks for, checked against the interrupt's
    /// `responseSchema`, without applying it.
    ///
    /// * `cancelled` → deny.
    /// * permission / plan review: `{"approved": bool, "reason"?: string}`;
    ///   a permission request whose interrupt names `alwaysAllowTool` also
    ///   takes `{"approved": true, "always": true}`
    ///   ([`ResumeError::NotGrantable`] on any other).
    /// * question: `{"answer": string}`, or `{"approved": false, "reason"?}`
    ///   to decline.
    pub fn decision(&self, entry: &ResumeEntry) -> Result<Decision, ResumeError> {
        decide(
            &self.interrupt.id,
            self.request.kind,
            self.request.always_allow_tool().is_some(),
            entry,
        )
    }

    /// Answer the approval with `entry` and continue the core run as the
    /// AG-UI run `run_id` of `thread_id` (its first frame is `RUN_STARTED`).
    /// On an error the run is given back unchanged, except after
    /// [`ResumeError::Expired`] / [`ResumeError::AlreadyResolved`], when it
    /// can no longer be answered.
    pub fn resume(
        self,
        entry: &ResumeEntry,
        thread_id: impl Into<String>,
        run_id: impl Into<String>,
    ) -> Result<AguiRun, (ResumeError, Box<Interrupted>)> {
        self.resume_at(entry, thread_id.into(), run_id.into(), now_ms())
    }

    /// [`resume`](Self::resume), its `RUN_STARTED` stamped `ts` (ms).
    pub(crate) fn resume_at(
        self,
        entry: &ResumeEntry,
        thread_id: String,
        run_id: String,
        ts: Option<i64>,
    ) -> Result<AguiRun, (ResumeError, Box<Interrupted>)> {
        let decision = match self.decision(entry) {
            Ok(d) => d,
            Err(e) => return Err((e, Box::new(self))),
        };
        let applied = match &decision {
            Decision::Approve => self.request.approve(),
            Decision::ApproveAlways => self.request.approve_always(),
            Decision::Deny(reason) => self.request.deny(reason.clone()),
            Decision::Answer(answer) => self.request.answer(answer.clone()),
        };
        if let Err(e) = applied {
            let err = match e {
                ApprovalError::AlreadyResolved => ResumeError::AlreadyResolved,
                ApprovalError::NotGrantable => ResumeError::NotGrantable,
                _ => ResumeError::Expired,
            };
            return Err((err, Box::new(self)));
        }
        let mut run = self.run;
        let mut out = Vec::new();
        run.mapper.begin_run(thread_id, run_id, ts, &mut out);
        run.state = State::Reading;
        run.stamp(None, out);
        Ok(run)
    }
}

/// What `entry` asks of interrupt `interrupt_id` of a `kind` request
/// (`grantable`: its tool can be always allowed), checked, not applied
/// (see [`Interrupted::decision`]).
pub(crate) fn decide(
    interrupt_id: &str,
    kind: DecisionKind,
    grantable: bool,
    entry: &ResumeEntry,
) -> Result<Decision, ResumeError> {
    if entry.interrupt_id != interrupt_id {
        return Err(ResumeError::WrongInterrupt {
            expected: interrupt_id.to_owned(),
            found: entry.interrupt_id.clone(),
        });
    }
    if entry.status == ResumeStatus::Cancelled {
        return Ok(Decision::Deny("cancelled by the client".into()));
    }
    let invalid = |m: &str| ResumeError::InvalidPayload(m.to_owned());
    let payload = match &entry.payload {
        Some(Value::Object(map)) => map,
        Some(_) => return Err(invalid("the payload must be a JSON object")),
        None => return Err(invalid("a resolved entry needs a payload")),
    };
    let reason = payload
        .get("reason")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("denied by the client")
        .to_owned();
    let approved = payload.get("approved");
    if approved.is_some_and(|v| !v.is_boolean()) {
        return Err(invalid("\"approved\" must be a boolean"));
    }
    let approved = approved.and_then(Value::as_bool);
    if kind == DecisionKind::Question {
        return match (payload.get("answer"), approved) {
            (Some(Value::String(a)), _) => Ok(Decision::Answer(a.clone())),
            (Some(_), _) => Err(invalid("\"answer\" must be a string")),
            (None, Some(false)) => Ok(Decision::Deny(reason)),
            (None, _) => Err(invalid("a question needs {\"answer\": string}")),
        };
    }
    let always = payload.get("always");
    if always.is_some_and(|v| !v.is_boolean()) {
        return Err(invalid("\"always\" must be a boolean"));
    }
    let always = always.and_then(Value::as_bool) == Some(true);
    match approved {
        Some(true) if always => {
            if kind != DecisionKind::Permission || !grantable {
                return Err(ResumeError::NotGrantable);
            }
            Ok(Decision::ApproveAlways)
        }
        Some(true) => Ok(Decision::Approve),
        Some(false) => Ok(Decision::Deny(reason)),
        None => Err(invalid("an approval needs {\"approved\": boolean}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_ids_print_and_parse() {
        let id = FrameId {
            sequence: 7,
            index: 2,
        };
        assert_eq!(id.to_string(), "7.2");
        assert_eq!("7.2".parse::<FrameId>(), Ok(id));
        assert_eq!(
            "7".parse::<FrameId>(),
            Ok(FrameId {
                sequence: 7,
                index: 0
            })
        );
        assert!("x".parse::<FrameId>().is_err());
        assert!("1.".parse::<FrameId>().is_err());
        assert!(
            FrameId {
                sequence: 7,
                index: 9
            } < FrameId {
                sequence: 8,
                index: 0
            }
        );
    }
}
