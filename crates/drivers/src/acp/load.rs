//! Continuing a thread with `session/load`: what each turn's checkpoint
//! records for the next load, and the agents' known load quirks (recipe
//! data, [`LoadQuirks`]).
//!
//! Every checkpoint's state data carries [`ENDED_AT`] (the Unix second the
//! turn ended), [`TURNS`] (how many turns the session has had, when known)
//! and [`LAST_TEXT`] (a stable digest of the turn's final text). A recipe
//! with [`LoadQuirks::minute_records`] makes the next turn wait for the
//! next UTC minute when the last one ended in the current minute; one with
//! [`LoadQuirks::late_replay`] keeps counting updates as replay after the
//! load answer until the replay has given back every earlier user message
//! and then the last turn's final text ([`ReplayEnd`]).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agent_adaptor_driver::SessionState;

/// Checkpoint data: the Unix second the turn ended.
pub const ENDED_AT: &str = "acp.ended_at";
/// Checkpoint data: the number of turns the session has had.
pub const TURNS: &str = "acp.turns";
/// Checkpoint data: the digest ([`text_digest`]) of the turn's final text.
pub const LAST_TEXT: &str = "acp.last_text";

/// What an agent's `session/load` is known to need beyond the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadQuirks {
    /// The agent names a session's record after the UTC minute a process
    /// opened it, and a load in that same minute replaces the record and
    /// loses the session (Gemini CLI 0.61): the next turn waits for the
    /// next minute when the last one ended in the current minute.
    pub minute_records: bool,
    /// The agent may send part of the replay after its `session/load`
    /// answer (Gemini CLI 0.61 starts the replay, then answers).
    pub late_replay: bool,
}

impl LoadQuirks {
    /// An agent that loads as the protocol says.
    pub const NONE: LoadQuirks = LoadQuirks {
        minute_records: false,
        late_replay: false,
    };
}

/// Where a late replay ends: after `turns` user messages and then the
/// agent message whose text has digest `last_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayEnd {
    /// The earlier turns (one replayed user message each).
    pub turns: u64,
    /// The digest of the last turn's final text.
    pub last_text: String,
}

impl ReplayEnd {
    /// What the checkpoint `prev` says of its replay, when it says enough.
    pub fn of(prev: &SessionState) -> Option<ReplayEnd> {
        Some(ReplayEnd {
            turns: prev.data.get(TURNS)?.parse().ok()?,
            last_text: prev.data.get(LAST_TEXT)?.clone(),
        })
    }
}

/// A digest of `text` that is stable across builds (64-bit FNV-1a of the
/// trimmed text, in hex): it is stored in checkpoints.
pub fn text_digest(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.trim().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Record a finished turn in its checkpoint `state`: the time, the turn
/// count (one for a new session, one more than `prev`'s when it knows its
/// own) and the final text's digest.
pub fn record(state: &mut SessionState, prev: Option<&SessionState>, text: &str, now: SystemTime) {
    let secs = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    state.data.insert(ENDED_AT.into(), secs.to_string());
    let turns = match prev {
        None => Some(1),
        Some(p) => p
            .data
            .get(TURNS)
            .and_then(|n| n.parse::<u64>().ok())
            .map(|n| n + 1),
    };
    match turns {
        Some(n) => state.data.insert(TURNS.into(), n.to_string()),
        None => state.data.remove(TURNS),
    };
    state.data.insert(LAST_TEXT.into(), text_digest(text));
}

/// How long a load of `prev` must wait at `now` under `quirks`: until the
/// minute after the one the last turn ended in, when that is still to
/// come (at most a minute, whatever the clocks say).
pub fn wait_before_load(
    quirks: LoadQuirks,
    prev: &SessionState,
    now: SystemTime,
) -> Option<Duration> {
    if !quirks.minute_records {
        return None;
    }
    let ended: u64 = prev.data.get(ENDED_AT)?.parse().ok()?;
    let next_minute = Duration::from_secs((ended / 60 + 1) * 60);
    let now = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let wait = next_minute.checked_sub(now)?;
    (!wait.is_zero()).then(|| wait.min(Duration::from_secs(60)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn state() -> SessionState {
        SessionState {
            resume_id: "s".into(),
            display_id: String::new(),
            data: Default::default(),
        }
    }

    #[test]
    fn turns_count_from_a_new_session_and_unknown_stays_unknown() {
        let mut first = state();
        record(&mut first, None, " answer\n", at(125));
        assert_eq!(first.data[ENDED_AT], "125");
        assert_eq!(first.data[TURNS], "1");
        assert_eq!(first.data[LAST_TEXT], text_digest("answer"));
        let mut second = state();
        record(&mut second, Some(&first), "other", at(200));
        assert_eq!(second.data[TURNS], "2");
        assert_eq!(
            ReplayEnd::of(&second),
            Some(ReplayEnd {
                turns: 2,
                last_text: text_digest("other"),
            })
        );
        let mut after_unknown = state();
        record(&mut after_unknown, Some(&state()), "x", at(300));
        assert!(!after_unknown.data.contains_key(TURNS));
        assert_eq!(ReplayEnd::of(&after_unknown), None);
        assert_ne!(text_digest("a"), text_digest("b"));
        assert_eq!(text_digest("abc"), "e71fa2190541574b");
    }

    #[test]
    fn a_load_waits_only_within_the_minute_the_last_turn_ended() {
        let gemini = LoadQuirks {
            minute_records: true,
            late_replay: true,
        };
        let mut prev = state();
        record(&mut prev, None, "x", at(125)); // minute 2 (120..180)
        assert_eq!(
            wait_before_load(gemini, &prev, at(130)),
            Some(Duration::from_secs(50))
        );
        assert_eq!(
            wait_before_load(gemini, &prev, at(179)),
            Some(Duration::from_secs(1))
        );
        assert_eq!(wait_before_load(gemini, &prev, at(180)), None);
        assert_eq!(wait_before_load(LoadQuirks::NONE, &prev, at(130)), None);
        // A clock that went back: still at most a minute.
        assert_eq!(
            wait_before_load(gemini, &prev, at(10)),
            Some(Duration::from_secs(60))
        );
        assert_eq!(wait_before_load(gemini, &state(), at(130)), None);
    }
}
