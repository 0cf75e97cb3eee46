//! Answering approval requests at the terminal (`--approve ask`).
//!
//! Lines are read from stdin by one background thread for the whole
//! process (a blocked read never holds the runtime up at exit).

use std::io::BufRead;
use std::sync::OnceLock;

use agent_adaptor_core::driver::ToolScope;
use agent_adaptor_core::{ApprovalKind, ApprovalRequest};
use serde_json::Value;
use tokio::sync::{Mutex, mpsc};

use crate::tool_view::{self, ToolView};

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

/// The request's own account of its tool call, when the renderer has not
/// seen the call: the `tool_name` and `input` of its details (Claude,
/// host tools), else a `command` (Codex).
pub fn details_view(req: &ApprovalRequest) -> Option<ToolView> {
    let details = req.details.as_ref()?;
    if let Some(name) = details.get("tool_name").and_then(Value::as_str) {
        let scope = if details.get("scope").and_then(Value::as_str) == Some("host") {
            ToolScope::Host
        } else {
            ToolScope::Builtin
        };
        let input = details.get("input").cloned().unwrap_or(Value::Null);
        return Some(tool_view::classify(name, &scope, &input));
    }
    if let Some(tool) = details.get("tool").and_then(Value::as_str) {
        let server = details.get("mcp_server").and_then(Value::as_str);
        let scope = ToolScope::Mcp {
            server: server.unwrap_or("mcp").to_owned(),
            tool: tool.to_owned(),
        };
        let input = details.get("arguments").cloned().unwrap_or(Value::Null);
        return Some(tool_view::classify(tool, &scope, &input));
    }
    let command = details.get("command").filter(|c| !c.is_null())?;
    Some(tool_view::classify(
        "command_execution",
        &ToolScope::Builtin,
        &serde_json::json!({ "command": command }),
    ))
}

/// The question put to the human, for the terminal: the title, the exact
/// input the answer approves (`view`: the command, the diff, the input),
/// then the choices (`[a]` only when the request can be always allowed,
/// i.e. in a thread run).
pub fn prompt_text(req: &ApprovalRequest, view: Option<&ToolView>, styled: bool) -> String {
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
    if let Some(view) = view {
        for line in view.detail_lines(styled, "    ") {
            text.push_str(&line);
            text.push('\n');
        }
    }
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
        _ => {
            let always = req
                .always_allow_tool()
                .map(|tool| format!("  [a] always allow {tool} in this thread"))
                .unwrap_or_default();
            text.push_str(&format!(
                "  {dim}[y] allow once{always}  [n] deny  (or type a reason to deny):{reset} "
            ));
        }
    }
    text
}

/// What the human answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Approve.
    Approve,
    /// Approve, and always allow the tool in this thread.
    Always,
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
            "a" | "always" if req.always_allow_tool().is_some() => Answer::Always,
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
        Answer::Always => req.approve_always(),
        Answer::Deny(reason) => req.deny(reason.clone()),
        Answer::Text(text) => req.answer(text.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(details: serde_json::Value) -> ApprovalRequest {
        serde_json::from_value(serde_json::json!({
            "meta": {"run_id": "r", "sequence": 1, "time": "2026-01-01T00:00:00Z"},
            "id": "apr_1", "kind": "permission", "title": "Allow Bash: Say hi?",
            "source": "claude.can_use_tool", "tool_call_id": "t1",
            "details": details, "created_at": "2026-01-01T00:00:00Z", "attempt": 0
        }))
        .unwrap()
    }

    #[test]
    fn the_prompt_shows_the_exact_command_before_the_choices() {
        let req = request(serde_json::json!({
            "tool_name": "Bash",
            "input": {"command": "touch a.txt && echo hi", "description": "Say hi"}
        }));
        let view = details_view(&req).unwrap();
        let text = prompt_text(&req, Some(&view), false);
        assert_eq!(
            text,
            "? Allow Bash: Say hi? (claude.can_use_tool)\n    $ touch a.txt && echo hi\n  \
             [y] allow once  [n] deny  (or type a reason to deny): "
        );
        // Outside a thread run "always" is not offered; `a` approves once.
        assert_eq!(interpret(&req, Some("a")), Answer::Approve);
        assert_eq!(
            interpret(&req, Some("not this one")),
            Answer::Deny("not this one".into())
        );
        assert_eq!(
            interpret(&req, None),
            Answer::Deny("no answer (end of input)".into())
        );
    }

    #[test]
    fn codex_requests_show_their_command() {
        let req = request(
            serde_json::json!({"method": "item/commandExecution/requestApproval", "command": "make test"}),
        );
        let view = details_view(&req).unwrap();
        assert_eq!(view.summary(), "$ make test");
    }
}
