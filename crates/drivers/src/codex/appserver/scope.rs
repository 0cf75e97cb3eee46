//! Whose a notification is. The run's thread is the one the `thread/start`
//! (`thread/resume`) result named, its turn the one the `turn/start` result
//! named; `thread/started` and `turn/started` never choose them. A
//! `turn/completed` is this run's terminal only for that thread and that
//! turn, after `turn/start` was answered; other notifications of other
//! threads, or (after the answer) of other turns, never touch the turn's
//! state. Pure functions of the params and of what the run knows.

use serde_json::Value;

/// What the run knows of its own thread and turn.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ours<'a> {
    /// The thread the handshake opened.
    pub(crate) thread: Option<&'a str>,
    /// The turn: the `turn/start` result's once `acked`, before that the
    /// one `turn/started` announced (what `turn/interrupt` names).
    pub(crate) turn: Option<&'a str>,
    /// `turn/start` was answered.
    pub(crate) acked: bool,
}

impl Ours<'_> {
    /// A notification about another thread than this run's, or (once
    /// `turn/start` was answered) about another turn. The usage of another
    /// turn is read on purpose (the baseline of this turn's usage).
    pub(crate) fn foreign(&self, method: &str, params: &Value) -> bool {
        let other = |theirs: Option<&str>, ours: Option<&str>| matches!((theirs, ours), (Some(a), Some(b)) if a != b);
        other(thread_of(params), self.thread)
            || (self.acked
                && method != "thread/tokenUsage/updated"
                && other(turn_of(params), self.turn))
    }

    /// Why a `turn/completed` of `turn` is not this run's terminal, if it
    /// is not.
    pub(crate) fn not_our_terminal(&self, params: &Value, turn: &str) -> Option<String> {
        let Some(ours) = self.thread else {
            return Some(format!(
                "a turn/completed (turn {turn:?}) before this run's thread was opened"
            ));
        };
        if let Some(theirs) = thread_of(params).filter(|t| *t != ours) {
            return Some(format!(
                "a turn/completed for thread {theirs:?}, not this run's thread {ours:?}"
            ));
        }
        match self.turn.filter(|_| self.acked) {
            None => Some(format!(
                "a turn/completed (turn {turn:?}) before turn/start was answered"
            )),
            Some(mine) if mine != turn => Some(format!(
                "a turn/completed for turn {turn:?}, not this run's turn {mine:?}"
            )),
            Some(_) => None,
        }
    }
}

/// The thread a notification names (`threadId`, else `thread.id`).
fn thread_of(params: &Value) -> Option<&str> {
    params
        .get("threadId")
        .and_then(Value::as_str)
        .or_else(|| params.pointer("/thread/id").and_then(Value::as_str))
}

/// The turn a notification names (`turnId`, else `turn.id`).
fn turn_of(params: &Value) -> Option<&str> {
    params
        .get("turnId")
        .and_then(Value::as_str)
        .or_else(|| params.pointer("/turn/id").and_then(Value::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_acknowledged_turn_of_the_opened_thread_is_ours() {
        let done = json!({"threadId": "t", "turn": {"id": "u"}});
        let mut ours = Ours {
            thread: None,
            turn: None,
            acked: false,
        };
        assert!(ours.not_our_terminal(&done, "u").is_some(), "no thread yet");
        ours.thread = Some("t");
        ours.turn = Some("u");
        assert!(
            ours.not_our_terminal(&done, "u").is_some(),
            "not answered yet"
        );
        assert!(!ours.foreign("item/completed", &json!({"threadId": "t", "turnId": "x"})));
        ours.acked = true;
        assert_eq!(ours.not_our_terminal(&done, "u"), None);
        assert!(
            ours.not_our_terminal(&json!({"threadId": "x"}), "u")
                .is_some()
        );
        assert!(ours.not_our_terminal(&done, "x").is_some());
        assert!(ours.foreign("item/completed", &json!({"threadId": "t", "turnId": "x"})));
        assert!(ours.foreign("turn/started", &json!({"thread": {"id": "x"}})));
        assert!(!ours.foreign(
            "thread/tokenUsage/updated",
            &json!({"threadId": "t", "turnId": "x"})
        ));
        assert!(!ours.foreign("warning", &json!({"message": "m"})));
    }
}
