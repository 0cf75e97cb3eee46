//! The agent's session: the conversation as the thread's resume state.
//!
//! A finished run checkpoints [`SessionState`] with the whole conversation
//! (every user, assistant and tool message, reasoning to replay included)
//! as JSON under [`HISTORY_KEY`], and the thread's title under
//! [`TITLE_KEY`], so a listing never reads the conversation. The codec is
//! named [`CODEC`] (`llm`): a thread store keeps the state, and the next
//! run of the thread starts from it.

use std::collections::BTreeMap;

use agent_adaptor_driver::{DriverError, Request, SessionState};

use crate::message::{Message, MessageRole};

/// The session codec's name (also the thread record's `codec`).
pub const CODEC: &str = "llm";

/// The scheme of the session fingerprint (the endpoint's identity): the
/// one the first `llm` thread driver wrote, kept so its threads resume.
pub const FINGERPRINT_SCHEME: &str = "agent-adaptor-cli/llm/v1";

/// The session-state key that holds the conversation (a JSON array of
/// messages).
pub const HISTORY_KEY: &str = "messages";

/// The session-state key of the thread's title: the first user message, at
/// most [`TITLE_CHARS`] characters.
pub const TITLE_KEY: &str = "title";

/// The most characters a thread title keeps.
pub const TITLE_CHARS: usize = 60;

/// The title of a conversation: its first user message, shortened.
pub fn title_of(history: &[Message]) -> Option<String> {
    history
        .iter()
        .find(|m| m.role == MessageRole::User)
        .map(|m| m.content.chars().take(TITLE_CHARS).collect())
}

/// The conversation a run continues (from its session state) and the
/// session's resume id (a new one for a new session).
pub(super) fn restore(req: &Request) -> Result<(Vec<Message>, String), DriverError> {
    let state = req.session.as_ref().and_then(|s| s.state.as_ref());
    let Some(state) = state.filter(|s| !s.resume_id.is_empty()) else {
        return Ok((Vec::new(), format!("llm-{}", random_hex())));
    };
    let history = match state.data.get(HISTORY_KEY) {
        Some(text) => serde_json::from_str(text).map_err(|e| {
            DriverError::Protocol(format!(
                "the thread's saved conversation does not decode: {e}"
            ))
        })?,
        None => Vec::new(),
    };
    Ok((history, state.resume_id.clone()))
}

/// The state that continues `history` under `resume_id`.
pub(super) fn save(history: &[Message], resume_id: &str) -> Result<SessionState, DriverError> {
    let messages = serde_json::to_string(history)
        .map_err(|e| DriverError::Protocol(format!("cannot save the conversation: {e}")))?;
    let mut data = BTreeMap::from([(HISTORY_KEY.to_owned(), messages)]);
    if let Some(title) = title_of(history) {
        data.insert(TITLE_KEY.to_owned(), title);
    }
    Ok(SessionState {
        resume_id: resume_id.to_owned(),
        display_id: resume_id.to_owned(),
        data,
    })
}

fn random_hex() -> String {
    use rand::Rng;
    let n: u64 = rand::rng().random();
    format!("{n:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_conversation_restores_with_its_title() {
        let history = vec![Message::user("x".repeat(80)), Message::assistant("done")];
        let state = save(&history, "llm-1").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            state.data.get(TITLE_KEY).map(String::len),
            Some(TITLE_CHARS)
        );
        let mut req = Request::new("run_1", "next");
        req.session = Some(agent_adaptor_driver::SessionContext {
            state: Some(state),
            ..Default::default()
        });
        let (restored, id) = restore(&req).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(id, "llm-1");
        assert_eq!(restored.len(), 2);
        assert_eq!(restored[1].content, "done");
    }
}
