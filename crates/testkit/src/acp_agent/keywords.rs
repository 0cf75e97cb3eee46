//! Keywords in a `text` turn's prompt that steer it: the faults and
//! endings a real agent gives only when it wants to.

use agent_client_protocol::v1::schema::StopReason;
use serde_json::Value;

/// `[stop:REASON]` ends the turn with REASON (`end_turn`, `max_tokens`,
/// `max_turn_requests`, `refusal`, `cancelled`) instead of `end_turn`.
pub const STOP: &str = "[stop:";
/// `[mode:ID]` sends a `current_mode_update` to ID before the thought.
pub const MODE: &str = "[mode:";
/// `[wait-for-cancel]`: after the first text delta the turn waits for
/// `session/cancel`, then ends `cancelled`.
pub const WAIT_FOR_CANCEL: &str = "[wait-for-cancel]";

/// What a prompt's keywords ask of a `text` turn.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Keywords {
    /// The stop reason of `[stop:REASON]`.
    pub stop: Option<StopReason>,
    /// The mode of `[mode:ID]`.
    pub mode: Option<String>,
    /// Whether `[wait-for-cancel]` is there.
    pub wait_for_cancel: bool,
}

impl Keywords {
    /// The keywords in `prompt`; an unknown stop reason is an error.
    pub fn parse(prompt: &str) -> Result<Keywords, String> {
        let stop = match bracketed(prompt, STOP) {
            Some(reason) => Some(
                serde_json::from_value(Value::from(reason))
                    .map_err(|_| format!("unknown stop reason {reason:?}"))?,
            ),
            None => None,
        };
        Ok(Keywords {
            stop,
            mode: bracketed(prompt, MODE).map(str::to_owned),
            wait_for_cancel: prompt.contains(WAIT_FOR_CANCEL),
        })
    }
}

/// The text between `open` and the next `]`.
fn bracketed<'a>(prompt: &'a str, open: &str) -> Option<&'a str> {
    let start = prompt.find(open)? + open.len();
    let len = prompt[start..].find(']')?;
    Some(&prompt[start..start + len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_found_anywhere_in_the_prompt() {
        let k = Keywords::parse("say hi [stop:refusal] then [mode:plan]").unwrap();
        assert_eq!(k.stop, Some(StopReason::Refusal));
        assert_eq!(k.mode.as_deref(), Some("plan"));
        assert!(!k.wait_for_cancel);
        assert_eq!(Keywords::parse("plain").unwrap(), Keywords::default());
        assert!(
            Keywords::parse("[wait-for-cancel]")
                .unwrap()
                .wait_for_cancel
        );
        let max = Keywords::parse("[stop:max_turn_requests]").unwrap();
        assert_eq!(max.stop, Some(StopReason::MaxTurnRequests));
    }

    #[test]
    fn an_unknown_stop_reason_is_refused() {
        assert!(
            Keywords::parse("[stop:tired]")
                .unwrap_err()
                .contains("tired")
        );
    }
}
