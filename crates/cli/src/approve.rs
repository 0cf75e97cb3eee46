//! Answering approval requests at the terminal (`--approve ask`).
//!
//! Lines are read from stdin by one background thread for the whole
//! process (a blocked read never holds the runtime up at exit).

use std::io::BufRead;
use std::sync::OnceLock;

use agent_adaptor_core::{ApprovalKind, ApprovalRequest};
use tokio::sync::{Mutex, mpsc};

/// The lines of stdin, read by a background thread (`None` at EOF).
struct Lines {
    rx: Mutex<mpsc::UnboundedReceiver<String>>,
}

fn lines() -> &'static Lines {
    static LINES: OnceLock<Lines> = OnceLock::new();
    LINES.get_or_init(|| {
        let (tx, rx) = mpsc::unbounded_channel();
        let spawned = std::thread::Builder::new()
            .name("stdin-lines".into())
            .spawn(move || {
                let stdin = std::io::stdin();
                for line in stdin.lock().lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        // Without the thread, every read is EOF (deny).
        drop(spawned);
        Lines { rx: Mutex::new(rx) }
    })
}

/// The next line of stdin; `None` at EOF.
pub async fn read_line() -> Option<String> {
    lines().rx.lock().await.recv().await
}

/// The question put to the human, for the terminal.
pub fn prompt_text(req: &ApprovalRequest, styled: bool) -> String {
    let (bold, dim, reset) = if styled {
        ("\x1b[1m\x1b[33m", "\x1b[2m", "\x1b[0m")
    } else {
        ("", "", "")
    };
    let title = if req.title.is_empty() {
        req.source.clone()
    } else {
        req.title.clone()
    };
    let mut text = format!("{bold}? {title}{reset} {dim}({}){reset}\n", req.source);
    match req.kind {
        ApprovalKind::Question => {
            for (i, c) in req.choices.iter().enumerate() {
                let label = if c.label.is_empty() { &c.key } else { &c.label };
                text.push_str(&format!("  {}) {label}\n", i + 1));
            }
            text.push_str(&format!(
                "  {dim}answer with a number or text; an empty line declines:{reset} "
            ));
        }
        _ => text.push_str(&format!(
            "  {dim}[y] approve  [n] deny  (or type a reason to deny):{reset} "
        )),
    }
    text
}

/// What the human answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Approve.
    Approve,
    /// Deny, with a reason.
    Deny(String),
    /// Answer a question (a choice key or free text).
    Text(String),
}

/// Interpret `line` (`None`: EOF) for a request of `kind`.
pub fn interpret(req: &ApprovalRequest, line: Option<&str>) -> Answer {
    let Some(line) = line.map(str::trim) else {
        return Answer::Deny("no answer (end of input)".into());
    };
    match req.kind {
        ApprovalKind::Question => {
            if line.is_empty() {
                return Answer::Deny("declined at the terminal".into());
            }
            if let Ok(n) = line.parse::<usize>()
                && let Some(choice) = n.checked_sub(1).and_then(|i| req.choices.get(i))
            {
                return Answer::Text(choice.key.clone());
            }
            Answer::Text(line.to_owned())
        }
        _ => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "a" | "approve" | "ok" => Answer::Approve,
            "" | "n" | "no" | "d" | "deny" => Answer::Deny("denied at the terminal".into()),
            _ => Answer::Deny(line.to_owned()),
        },
    }
}

/// Deliver `answer` to `req`.
pub fn deliver(
    req: &ApprovalRequest,
    answer: &Answer,
) -> Result<(), agent_adaptor_core::ApprovalError> {
    match answer {
        Answer::Approve => req.approve(),
        Answer::Deny(reason) => req.deny(reason.clone()),
        Answer::Text(text) => req.answer(text.clone()),
    }
}
