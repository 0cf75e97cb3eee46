//! Terminals are believed only when they match: a transport ends a run only
//! on a terminal line for the thread, turn or session it started itself,
//! after its own start was acknowledged. Any other terminal line is a
//! protocol-violation notice (an operational event, metadata
//! `reason` = [`PROTOCOL_VIOLATION`], with a bounded preview of the line; the
//! whole line stays in the raw capture like every other) and the run goes
//! on. If stdout then ends without a matching terminal, the usual
//! missing-terminal failure says what was ignored ([`IgnoredTerminals::annotate`]).
//!
//! Each parser decides what matches (its protocol's ids); this module only
//! keeps the count and the shapes of the notice and the failure.

use agent_adaptor_driver::{OperationalEvent, RunEvent, RunFailure};
use serde_json::json;

/// `reason` metadata of a protocol-violation notice.
pub const PROTOCOL_VIOLATION: &str = "protocol_violation";

/// Longest line preview a notice carries.
const PREVIEW_BYTES: usize = 2048;

/// The terminal lines a parser did not believe.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IgnoredTerminals {
    count: usize,
    first: Option<String>,
}

impl IgnoredTerminals {
    /// Nothing ignored yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ignore one terminal line: `why` says what it was for (e.g. "a
    /// turn/completed for thread X, not this run's thread Y"). Returns the
    /// protocol-violation notice `"<driver>: ignored <why>"`.
    pub fn ignore(&mut self, driver: &str, why: &str, raw: &[u8]) -> RunEvent {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(why.to_owned());
        }
        let mut ev = OperationalEvent::text(format!("{driver}: ignored {why}"));
        ev.metadata
            .insert("reason".into(), PROTOCOL_VIOLATION.into());
        ev.metadata.insert("bytes".into(), raw.len().to_string());
        let preview = String::from_utf8_lossy(&raw[..raw.len().min(PREVIEW_BYTES)]);
        ev.data = Some(json!({ "line": preview }));
        RunEvent::Lifecycle(ev)
    }

    /// How many terminal lines were ignored.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Add to a missing-terminal failure what was ignored: the message says
    /// it, metadata `ignored_terminals` counts them and `ignored_terminal`
    /// describes the first. Nothing when nothing was ignored.
    pub fn annotate(&self, failure: &mut RunFailure) {
        let Some(first) = &self.first else {
            return;
        };
        failure.message = format!("{}; ignored {first}", failure.message);
        if self.count > 1 {
            failure
                .message
                .push_str(&format!(" (and {} more)", self.count - 1));
        }
        failure
            .metadata
            .insert("ignored_terminals".into(), self.count.to_string());
        failure
            .metadata
            .insert("ignored_terminal".into(), first.clone());
    }
}

/// Why a session-scoped terminal line is not this run's, if it is not: it
/// must follow the run's own init line (`init` is what that line announced:
/// `None` before it, `Some(None)` for one without a session id) and, when
/// both name a session, name the same one (`theirs`). `init_line` and
/// `terminal` name the lines in the message.
pub fn session_mismatch(
    init_line: &str,
    terminal: &str,
    init: Option<Option<&str>>,
    theirs: Option<&str>,
) -> Option<String> {
    match (init, theirs.filter(|t| !t.is_empty())) {
        (None, _) => Some(format!("a {terminal} line before {init_line}")),
        (Some(Some(ours)), Some(theirs)) if !ours.is_empty() && ours != theirs => Some(format!(
            "a {terminal} line for session {theirs:?}, not this run's session {ours:?}"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_adaptor_driver::FailureCode;

    #[test]
    fn the_notice_and_the_failure_say_what_was_ignored() {
        let mut ignored = IgnoredTerminals::new();
        let mut f = RunFailure::new(FailureCode::AgentError, "x ended without a result line");
        ignored.annotate(&mut f);
        assert_eq!(
            f.message, "x ended without a result line",
            "nothing ignored"
        );
        let RunEvent::Lifecycle(ev) = ignored.ignore("x", "a result for session b", b"{\"a\":1}")
        else {
            panic!("a lifecycle notice");
        };
        assert_eq!(ev.metadata["reason"], PROTOCOL_VIOLATION);
        assert_eq!(ev.data, Some(json!({"line": "{\"a\":1}"})));
        ignored.ignore("x", "another", b"{}");
        ignored.annotate(&mut f);
        assert!(
            f.message
                .ends_with("; ignored a result for session b (and 1 more)"),
            "{}",
            f.message
        );
        assert_eq!(f.metadata["ignored_terminals"], "2");
    }

    #[test]
    fn a_session_terminal_must_follow_the_init_and_name_its_session() {
        let m = |init, theirs| session_mismatch("init", "result", init, theirs);
        assert_eq!(m(None, Some("a")).unwrap(), "a result line before init");
        assert_eq!(
            m(Some(Some("a")), Some("b")).unwrap(),
            "a result line for session \"b\", not this run's session \"a\""
        );
        for (init, theirs) in [
            (Some(Some("a")), Some("a")),
            (Some(Some("a")), None),
            (Some(None), Some("b")),
            (Some(Some("")), Some("b")),
            (Some(Some("a")), Some("")),
        ] {
            assert_eq!(m(init, theirs), None, "{init:?} {theirs:?}");
        }
    }
}
