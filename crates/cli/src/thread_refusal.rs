//! `run --thread KEY` over a session this driver cannot continue: the
//! refusal names the exact commands that go on, and with `--new-session`
//! the terminal says which session was set aside.

use agent_adaptor_core::thread::Mismatch;
use agent_adaptor_core::{Error, Event, RunResult, ThreadError, notice_kind};
use serde_json::Value;

use crate::args::RunArgs;
use crate::error::CliError;
use crate::select::Selected;

/// The placeholder for the prompt in the suggested commands.
const PROMPT: &str = "\"…\"";

/// The failure of a run refused because thread `KEY` holds an incompatible
/// session, with the three ways on; `None` for any other outcome.
pub fn refusal(
    result: &Result<RunResult, Error>,
    args: &RunArgs,
    selected: &Selected,
) -> Option<CliError> {
    // A fork's parent is another key: the core error says which.
    if args.fork_from.is_some() {
        return None;
    }
    let Err(Error::Thread(ThreadError::Incompatible {
        record: Some(m), ..
    })) = result
    else {
        return None;
    };
    Some(CliError::failure(message(m, &driver_flags(args, selected))))
}

/// The refusal's text; `flags` select this run's driver.
fn message(m: &Mismatch, flags: &str) -> String {
    let key = shell_word(&m.key);
    let what = m.differs.join(", ");
    format!(
        "thread {key} holds a {old} session that {flags} cannot continue ({what} differs), so nothing ran\n\
         Continue it with its driver: agent-adaptor run --driver {old} --thread {key} {PROMPT}\n\
         Start a new session on this key (the {old} session stays, archived): \
         agent-adaptor run {flags} --thread {key} --new-session {PROMPT}\n\
         Or use a new key: agent-adaptor run {flags} --thread NEW_KEY {PROMPT}",
        old = shell_word(&m.record_driver),
    )
}

/// The flags that select this run's driver.
fn driver_flags(args: &RunArgs, selected: &Selected) -> String {
    if selected.playground.is_some() {
        return "--playground".to_owned();
    }
    let mut flags = format!("--driver {}", shell_word(selected.name.as_str()));
    if let Some(model) = &args.driver.model {
        flags.push_str(&format!(" --model {}", shell_word(model)));
    }
    flags
}

/// The terminal's line for a `thread.session_replaced` notice.
pub fn replaced_note(event: &Event) -> Option<String> {
    let Event::Notice(n) = event else { return None };
    if n.kind != notice_kind::THREAD_SESSION_REPLACED {
        return None;
    }
    let data = n.data.as_ref()?;
    let field = |name: &str| data.get(name).and_then(Value::as_str).unwrap_or("?");
    let key = shell_word(field("key"));
    Some(format!(
        "▸ new session on thread {key}: the previous {} session is archived when this run succeeds; \
         `agent-adaptor threads show {key}` lists it",
        field("driver_type"),
    ))
}

/// `word` as one shell word: bare when it is plain, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_gives_the_three_commands() {
        let m = Mismatch {
            key: "team/t 1".into(),
            record_id: "thr_1".into(),
            record_driver: "llm".into(),
            driver: "claude".into(),
            differs: vec!["driver"],
        };
        let text = message(&m, "--driver claude");
        assert!(
            text.contains("agent-adaptor run --driver llm --thread 'team/t 1' \"…\""),
            "{text}"
        );
        assert!(
            text.contains(
                "agent-adaptor run --driver claude --thread 'team/t 1' --new-session \"…\""
            ),
            "{text}"
        );
        assert!(text.contains("--thread NEW_KEY"), "{text}");
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("t1"), "t1");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
