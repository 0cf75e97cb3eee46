//! Folding a stream into one turn, with limits: [`collect_turn`],
//! [`limit_stream`], [`TurnLimits`], [`CollectedTurn`].

use std::time::{Duration, Instant};

use futures::StreamExt;

use crate::error::{LlmError, LlmErrorKind};
use crate::event::{LlmCompletionMetadata, LlmStreamEvent};
use crate::message::ToolCall;
use crate::provider::LlmResponseStream;
use crate::reasoning::ReasoningContentPart;

/// Bounds on one turn. Every bound is off by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TurnLimits {
    /// Wall-clock time from the first poll to the terminal event.
    pub total: Option<Duration>,
    /// Time to the first event.
    pub first_event: Option<Duration>,
    /// Bytes of assistant text plus readable reasoning.
    pub max_response_bytes: Option<u64>,
    /// A stream that ends without `Done`/`Error` is an error
    /// ([`LlmErrorKind::MalformedResponse`]) instead of an incomplete turn.
    pub require_terminal_event: bool,
}

impl TurnLimits {
    /// With a total time bound.
    #[must_use]
    pub fn with_total(mut self, total: Duration) -> Self {
        self.total = Some(total);
        self
    }

    /// With a time-to-first-event bound.
    #[must_use]
    pub fn with_first_event(mut self, first: Duration) -> Self {
        self.first_event = Some(first);
        self
    }

    /// With a byte cap.
    #[must_use]
    pub fn with_max_response_bytes(mut self, bytes: u64) -> Self {
        self.max_response_bytes = Some(bytes);
        self
    }

    /// Requiring a terminal event.
    #[must_use]
    pub fn requiring_terminal_event(mut self) -> Self {
        self.require_terminal_event = true;
        self
    }

    /// True when no bound is set.
    pub fn is_unbounded(&self) -> bool {
        self.total.is_none()
            && self.first_event.is_none()
            && self.max_response_bytes.is_none()
            && !self.require_terminal_event
    }

    /// The limits left after `spent` (time bounds shrink, saturating).
    #[must_use]
    pub fn after(mut self, spent: Duration) -> Self {
        self.total = self.total.map(|d| d.saturating_sub(spent));
        self.first_event = self.first_event.map(|d| d.saturating_sub(spent));
        self
    }
}

/// How the turn's time went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TurnTiming {
    /// Time to the first event.
    pub time_to_first_event: Option<Duration>,
    /// Mean gap between content events (text and reasoning deltas); `None`
    /// below two.
    pub mean_inter_event: Option<Duration>,
    /// From the first poll to the end.
    pub total: Duration,
}

/// One folded turn.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CollectedTurn {
    /// The assistant text.
    pub text: String,
    /// Reasoning items, in order.
    pub reasoning: Vec<ReasoningContentPart>,
    /// The tool calls (the last full set).
    pub tool_calls: Vec<ToolCall>,
    /// `Done`'s metadata (default when there was none).
    pub metadata: LlmCompletionMetadata,
    /// True when `Done` arrived.
    pub complete: bool,
    /// Why the turn is incomplete (stream ended, connection dropped).
    pub incomplete_reason: Option<String>,
    /// Timing.
    pub timing: TurnTiming,
}

impl CollectedTurn {
    /// The reasoning items' readable text joined by a blank line.
    pub fn reasoning_text(&self) -> String {
        self.reasoning
            .iter()
            .filter_map(ReasoningContentPart::display_text)
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// The error for a turn with no first event within `limit`.
pub fn first_event_timeout(limit: Duration) -> LlmError {
    LlmError::new(
        LlmErrorKind::Unavailable,
        format!("provider sent no response within {limit:?}"),
    )
}

/// The error for a turn that did not finish within `limit`.
pub fn turn_timeout(limit: Duration) -> LlmError {
    LlmError::new(
        LlmErrorKind::Unavailable,
        format!("provider turn did not finish within {limit:?}"),
    )
}

fn over_cap(cap: u64) -> LlmError {
    LlmError::malformed(format!(
        "provider response exceeded the {cap}-byte limit for this call"
    ))
}

fn missing_terminal(reason: &str) -> LlmError {
    LlmError::malformed(format!(
        "provider stream ended before its terminal event: the turn is incomplete ({reason})"
    ))
}

/// Enforces `limits` on a stream as it is consumed.
struct Bounds {
    limits: TurnLimits,
    started: Instant,
    got_first: bool,
    bytes: u64,
}

impl Bounds {
    fn new(limits: TurnLimits) -> Self {
        Bounds {
            limits,
            started: Instant::now(),
            got_first: false,
            bytes: 0,
        }
    }

    /// The time left before the next event must arrive, and the error if it
    /// does not.
    fn deadline(&self) -> Option<(Duration, LlmError)> {
        let elapsed = self.started.elapsed();
        let total = self
            .limits
            .total
            .map(|d| (d.saturating_sub(elapsed), turn_timeout(d)));
        let first = if self.got_first {
            None
        } else {
            self.limits
                .first_event
                .map(|d| (d.saturating_sub(elapsed), first_event_timeout(d)))
        };
        match (total, first) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    async fn next(
        &mut self,
        stream: &mut LlmResponseStream,
    ) -> Option<Result<LlmStreamEvent, LlmError>> {
        let item = match self.deadline() {
            Some((left, error)) => match tokio::time::timeout(left, stream.next()).await {
                Ok(item) => item,
                Err(_) => Some(Err(error)),
            },
            None => stream.next().await,
        };
        if let Some(Ok(event)) = &item {
            self.got_first = true;
            self.bytes += content_bytes(event);
            if let Some(cap) = self.limits.max_response_bytes
                && self.bytes > cap
            {
                return Some(Err(over_cap(cap)));
            }
        }
        item
    }
}

fn content_bytes(event: &LlmStreamEvent) -> u64 {
    match event {
        LlmStreamEvent::TextDelta(text) => text.len() as u64,
        LlmStreamEvent::ReasoningItem(item) => item.display_text().map_or(0, |t| t.len() as u64),
        _ => 0,
    }
}

/// Folds `stream` into one turn under `limits`. `observe` sees every event
/// as it arrives.
///
/// * Text is the concatenation of non-empty `TextDelta`s; reasoning is the
///   `ReasoningItem`s (deltas are not folded: the item repeats them);
///   `ToolCalls` replaces the list.
/// * `Done` completes the turn; `Error` is returned as an [`LlmError`] with
///   the provider's code and status.
/// * A stream that ends (or whose connection drops) without a terminal event
///   gives a turn with `complete == false` and the reason, or an error when
///   `limits.require_terminal_event` is set.
pub async fn collect_turn(
    mut stream: LlmResponseStream,
    limits: &TurnLimits,
    mut observe: impl FnMut(&LlmStreamEvent),
) -> Result<CollectedTurn, LlmError> {
    let mut bounds = Bounds::new(*limits);
    let mut turn = CollectedTurn::default();
    let mut content_times: Vec<Instant> = Vec::new();
    let end = loop {
        let Some(item) = bounds.next(&mut stream).await else {
            break None;
        };
        let event = match item {
            Ok(event) => event,
            Err(error) if error.kind == LlmErrorKind::Incomplete => break Some(error.message),
            Err(error) => return Err(error),
        };
        if turn.timing.time_to_first_event.is_none() {
            turn.timing.time_to_first_event = Some(bounds.started.elapsed());
        }
        observe(&event);
        match event {
            LlmStreamEvent::TextDelta(text) if !text.is_empty() => {
                content_times.push(Instant::now());
                turn.text.push_str(&text);
            }
            LlmStreamEvent::ReasoningDelta { .. } => content_times.push(Instant::now()),
            LlmStreamEvent::ReasoningItem(item) => turn.reasoning.push(item),
            LlmStreamEvent::ToolCalls(calls) => turn.tool_calls = calls,
            LlmStreamEvent::Done(metadata) => {
                turn.metadata = *metadata;
                turn.complete = true;
            }
            LlmStreamEvent::Error(error) => return Err(LlmError::from_stream(&error)),
            _ => {}
        }
        if turn.complete {
            break None;
        }
    };
    turn.timing.total = bounds.started.elapsed();
    if content_times.len() >= 2
        && let (Some(first), Some(last)) = (content_times.first(), content_times.last())
    {
        turn.timing.mean_inter_event =
            Some(last.duration_since(*first) / (content_times.len() as u32 - 1));
    }
    if !turn.complete {
        let reason = end.unwrap_or_else(|| "the stream ended".to_owned());
        if limits.require_terminal_event {
            return Err(missing_terminal(&reason));
        }
        turn.incomplete_reason = Some(reason);
    }
    Ok(turn)
}

/// Applies `limits` to a stream a caller consumes itself: the first breach
/// is yielded as an `Err` item and ends the stream. A stream that ends
/// without a terminal event yields a `MalformedResponse` error when
/// `require_terminal_event` is set. Unbounded limits return the stream as
/// it is.
pub fn limit_stream(stream: LlmResponseStream, limits: TurnLimits) -> LlmResponseStream {
    if limits.is_unbounded() {
        return stream;
    }
    struct State {
        stream: LlmResponseStream,
        bounds: Bounds,
        finished: bool,
        terminal: bool,
    }
    let state = State {
        stream,
        bounds: Bounds::new(limits),
        finished: false,
        terminal: false,
    };
    Box::pin(futures::stream::unfold(state, |mut state| async move {
        if state.finished {
            return None;
        }
        match state.bounds.next(&mut state.stream).await {
            Some(Ok(event)) => {
                state.terminal |= event.is_terminal();
                Some((Ok(event), state))
            }
            Some(Err(error)) => {
                state.finished = true;
                Some((Err(error), state))
            }
            None => {
                state.finished = true;
                if state.bounds.limits.require_terminal_event && !state.terminal {
                    Some((Err(missing_terminal("the stream ended")), state))
                } else {
                    None
                }
            }
        }
    }))
}
