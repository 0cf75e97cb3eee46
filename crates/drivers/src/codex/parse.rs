//! The `codex exec --json` parser: JSONL events → coarse live payloads
//! (exec has no text deltas), transcript items, and every response layer,
//! through the shared [`Recorder`](super::record).
//!
//! Its terminal lines (`turn.completed`, `turn.failed`) name no thread or
//! turn: one is believed only after this process's `thread.started`; before
//! it, it is a protocol-violation notice ([`crate::terminal_guard`]).

use serde_json::{Value, json};

use super::record::{Parsed, Recorder, ToolCall, ToolOutcome, Totals};
use super::wire::{
    AgentMessage, CommandExecution, ExecEvent, ExecUsage, FileChange, Item, ItemDetails, ItemError,
    ItemEvent, McpToolCall, Reasoning, StreamError, ThreadStarted, TurnCompleted, TurnFailed,
    WebSearch,
};
use crate::exit::ExitFacts;
use crate::pump::{LineProtocol, Out};

pub use super::record::USAGE_KEYS;

/// Every layer the exec parse formed.
pub type ExecParsed = Parsed;

/// The parser of one exec run.
#[derive(Debug)]
pub struct ExecParser {
    rec: Recorder,
    previous: Option<Totals>,
    /// The decoded lines of a burst, reused from burst to burst.
    wires: Vec<Wire>,
}

/// What [`decode`] makes of a line: `None` for a blank one.
type Wire = Option<serde_json::Result<ExecEvent>>;

impl From<ExecUsage> for Totals {
    fn from(u: ExecUsage) -> Self {
        Totals {
            input: u.input_tokens,
            cached_input: u.cached_input_tokens,
            output: u.output_tokens,
            reasoning: u.reasoning_output_tokens,
        }
    }
}

impl ExecParser {
    /// A parser. `payloads` turns live payloads on; `previous` is the
    /// thread's cumulative usage before this turn (from the checkpoint).
    pub fn new(payloads: bool, previous: Option<ExecUsage>) -> Self {
        ExecParser {
            rec: Recorder::new(payloads),
            previous: previous.map(Totals::from),
            wires: Vec::new(),
        }
    }

    /// Record the transcript into `transcript` (empty, made with the
    /// request's budget by [`Request::new_transcript`](agent_adaptor_driver::Request::new_transcript))
    /// instead of one with the default budget.
    pub fn with_transcript(mut self, transcript: agent_adaptor_driver::Transcript) -> Self {
        self.rec.set_transcript(transcript);
        self
    }

    /// The tool a tool-like item stands for: its name and arguments.
    fn tool_of(details: &ItemDetails) -> Option<ToolCall> {
        match details {
            ItemDetails::CommandExecution(CommandExecution { command, .. }) => Some(
                ToolCall::builtin("command_execution", json!({ "command": command })),
            ),
            ItemDetails::FileChange(FileChange { changes, .. }) => Some(ToolCall::builtin(
                "file_change",
                json!({ "changes": changes }),
            )),
            ItemDetails::McpToolCall(McpToolCall {
                server,
                tool,
                arguments,
                ..
            }) => Some(ToolCall::mcp(server, tool, arguments.clone())),
            ItemDetails::WebSearch(WebSearch { query }) => {
                Some(ToolCall::builtin("web_search", json!({ "query": query })))
            }
            _ => None,
        }
    }

    fn tool_completed(&mut self, item: Item, out: &mut Vec<Out>) {
        // The name and arguments only start a call whose start was not seen.
        let call = if self.rec.tool_open(&item.id) {
            None
        } else if let Some(call) = Self::tool_of(&item.details) {
            Some(call)
        } else {
            return;
        };
        // The structured result only feeds a payload: not built when
        // nobody will see it.
        let shown = self.rec.shows_tool(&item.id);
        let (text, is_error, result) = match item.details {
            ItemDetails::CommandExecution(CommandExecution {
                aggregated_output,
                exit_code,
                status,
                ..
            }) => {
                let result = shown.then(|| {
                    json!({"exit_code": exit_code, "status": status, "output": aggregated_output})
                });
                let is_error = status != "completed" || exit_code.is_some_and(|c| c != 0);
                (aggregated_output, is_error, result)
            }
            ItemDetails::FileChange(FileChange { status, .. }) => {
                let result = shown.then(|| json!({ "status": status }));
                let is_error = status != "completed";
                (status, is_error, result)
            }
            ItemDetails::McpToolCall(McpToolCall {
                result,
                error,
                status,
                ..
            }) => (
                result
                    .as_ref()
                    .map(Value::to_string)
                    .or_else(|| error.as_ref().map(Value::to_string))
                    .unwrap_or_default(),
                error.is_some() || status == "failed",
                shown.then(|| json!({"result": result, "error": error, "status": status})),
            ),
            _ => (String::new(), false, None),
        };
        let result = result.unwrap_or(Value::Null);
        let outcome = ToolOutcome {
            call,
            text,
            is_error,
            result,
        };
        self.rec.tool_done(out, &item.id, outcome);
    }

    fn completed(&mut self, item: Item, raw: &[u8], out: &mut Vec<Out>) {
        match item.details {
            ItemDetails::AgentMessage(AgentMessage { text }) => {
                self.rec.text_done(out, &item.id, text)
            }
            ItemDetails::Reasoning(Reasoning { text }) => {
                self.rec.reasoning_done(out, &item.id, text)
            }
            // Error *items* are warnings (e.g. unknown model metadata).
            ItemDetails::Error(ItemError { message }) => Recorder::warning(out, message),
            ItemDetails::CommandExecution(_)
            | ItemDetails::FileChange(_)
            | ItemDetails::McpToolCall(_)
            | ItemDetails::WebSearch(_) => self.tool_completed(item, out),
            ItemDetails::TodoList(_) => self.todo_list(&item.details, out),
            ItemDetails::Other => self.unknown_item(raw, out),
        }
    }

    /// A `todo_list` item (started, updated or completed): the whole list.
    fn todo_list(&mut self, details: &ItemDetails, out: &mut Vec<Out>) {
        if let ItemDetails::TodoList(list) = details {
            self.rec.todos(out, list.facts(), "codex.todo_list");
        }
    }

    fn unknown_item(&mut self, raw: &[u8], out: &mut Vec<Out>) {
        let kind = crate::json_line::from_line::<Value>(raw)
            .ok()
            .and_then(|v| {
                v.get("item")
                    .and_then(|i| i.get("type"))
                    .and_then(Value::as_str)
                    .map(|t| format!("codex.item.{t}"))
            })
            .unwrap_or_else(|| "codex.unknown".into());
        self.rec.custom(out, kind, raw);
    }

    fn unknown_event(&mut self, raw: &[u8], out: &mut Vec<Out>) {
        let kind = crate::json_line::from_line::<Value>(raw)
            .ok()
            .and_then(|v| {
                v.get("type")
                    .and_then(Value::as_str)
                    .map(|t| format!("codex.{t}"))
            })
            .unwrap_or_else(|| "codex.unknown".into());
        self.rec.custom(out, kind, raw);
    }

    /// End of stdout: end the run if the CLI never did, form every layer.
    pub fn finish(&mut self, exit: ExitFacts) -> (Vec<Out>, ExecParsed) {
        self.rec.finish(exit, "turn.completed")
    }
}

/// The pure part of parsing a line: the line as a wire event.
fn decode(raw: &[u8]) -> Wire {
    let raw = raw.trim_ascii();
    (!raw.is_empty()).then(|| crate::json_line::from_line::<ExecEvent>(raw))
}

impl ExecParser {
    /// Handle `raw`, which [`decode`] made `wire` of.
    fn apply(&mut self, raw: &[u8], wire: Wire, out: &mut Vec<Out>) {
        let raw = raw.trim_ascii();
        let Some(wire) = wire else {
            return;
        };
        let event = match wire {
            Ok(e) => e,
            Err(e) => {
                let what = if raw.first() == Some(&b'{') {
                    format!("codex: malformed protocol line ({e})")
                } else {
                    "codex: non-JSON stdout line".to_owned()
                };
                Recorder::notice(out, what, raw);
                return;
            }
        };
        if self.rec.terminated() {
            Recorder::notice(out, "codex: line after the terminal event".into(), raw);
            return;
        }
        let terminal = match &event {
            ExecEvent::TurnCompleted(_) => Some("turn.completed"),
            ExecEvent::TurnFailed(_) => Some("turn.failed"),
            _ => None,
        };
        if let Some(name) = terminal
            && self.rec.thread_id().is_none()
        {
            // Its lines name no thread or turn: a terminal is this run's
            // only after the process announced its thread.
            let why = format!("a {name} before thread.started");
            self.rec.ignore_terminal(out, &why, raw);
            return;
        }
        match event {
            ExecEvent::ThreadStarted(ThreadStarted { thread_id }) => {
                self.rec.thread(out, &thread_id)
            }
            ExecEvent::TurnStarted => self.rec.step_started(out),
            ExecEvent::ItemStarted(ItemEvent { item })
            | ExecEvent::ItemUpdated(ItemEvent { item })
                if matches!(item.details, ItemDetails::TodoList(_)) =>
            {
                self.todo_list(&item.details, out)
            }
            ExecEvent::ItemStarted(ItemEvent { item }) => match &item.details {
                ItemDetails::AgentMessage(_) | ItemDetails::Reasoning(_) => {}
                ItemDetails::Other => self.unknown_item(raw, out),
                details => {
                    if let Some(call) = Self::tool_of(details) {
                        self.rec.tool_started(out, &item.id, call);
                    }
                }
            },
            ExecEvent::ItemUpdated(_) => self.unknown_item(raw, out),
            ExecEvent::ItemCompleted(ItemEvent { item }) => self.completed(item, raw, out),
            ExecEvent::Error(StreamError { message }) => self.rec.stream_error(out, message),
            ExecEvent::TurnCompleted(TurnCompleted { usage }) => {
                // exec reports the thread's cumulative usage: this turn's is
                // the difference with what the checkpoint carried.
                let cumulative = usage.map(Totals::from);
                let turn = cumulative.map(|c| c.minus(self.previous.unwrap_or_default()));
                self.rec.set_usage(turn, cumulative);
                self.rec.succeed(out, "turn.completed", raw);
            }
            ExecEvent::TurnFailed(TurnFailed { error }) => {
                let message = error.map(|e| e.message);
                let message = self
                    .rec
                    .failure_message(message.as_deref(), "the turn failed");
                let failure = agent_adaptor_driver::RunFailure::new(
                    agent_adaptor_driver::FailureCode::AgentError,
                    message,
                );
                self.rec.fail(out, Some(("turn.failed", raw)), failure);
            }
            ExecEvent::Unknown => self.unknown_event(raw, out),
        }
    }
}

impl LineProtocol for ExecParser {
    fn line_into(&mut self, raw: &[u8], out: &mut Vec<Out>) {
        let wire = decode(raw);
        self.apply(raw, wire, out);
    }

    /// Every line decoded first, then each handled in turn.
    fn lines_into(&mut self, lines: &[&[u8]], out: &mut Vec<Out>) {
        let mut wires = std::mem::take(&mut self.wires);
        wires.extend(lines.iter().map(|raw| decode(raw)));
        for (raw, wire) in lines.iter().zip(wires.drain(..)) {
            self.apply(raw, wire, out);
        }
        self.wires = wires;
    }

    fn terminated(&self) -> bool {
        self.rec.terminated()
    }

    fn observe(&mut self, observed: bool) {
        self.rec.observe(observed);
    }
}
