//! The `codex exec --json` parser: JSONL events → coarse live payloads
//! (exec has no text deltas), transcript items, and every response layer.

use std::collections::HashSet;

use agent_adaptor_driver::{
    Checkpoint, FailureCode, OperationalEvent, ProviderCoords, RunEvent, RunFailure, SessionState,
    StreamPayload, TerminalPayload, TranscriptItem, TranscriptKind, Usage,
};
use serde_json::{Value, json};

use super::wire::{ExecEvent, ExecUsage, Item, ItemDetails};
use crate::pump::{LineProtocol, Out};

/// Data keys under which a checkpoint carries the thread's cumulative usage,
/// so the next (resumed) turn can report its own usage by difference.
pub const USAGE_KEYS: [&str; 4] = [
    "usage.input_tokens",
    "usage.cached_input_tokens",
    "usage.output_tokens",
    "usage.reasoning_output_tokens",
];

/// Every layer the parse formed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecParsed {
    /// Completed agent messages, joined with a blank line.
    pub output: String,
    /// The last agent message (the formal summary of a turn).
    pub last_message: String,
    /// `turn.completed` / `turn.failed`, exactly.
    pub terminal: Option<TerminalPayload>,
    /// Every transcript item, in emission order.
    pub transcript: Vec<TranscriptItem>,
    /// This turn's usage (cumulative minus the previous turn's, when resumed).
    pub usage: Option<Usage>,
    /// Valid after a successful `turn.completed` with a thread id and exit 0.
    pub checkpoint: Option<Checkpoint>,
    /// The failure, when the turn failed or never ended.
    pub failure: Option<RunFailure>,
}

/// The parser of one exec run.
#[derive(Debug)]
pub struct ExecParser {
    payloads: bool,
    started: bool,
    terminated: bool,
    step_open: bool,
    thread_id: Option<String>,
    open_tools: Vec<String>,
    started_tools: HashSet<String>,
    messages: Vec<String>,
    items: Vec<TranscriptItem>,
    stream_error: Option<String>,
    terminal: Option<(String, String)>,
    cumulative: Option<ExecUsage>,
    previous: Option<ExecUsage>,
    failure: Option<RunFailure>,
    counter: u64,
}

impl ExecParser {
    /// A parser. `payloads` turns live payloads on; `previous` is the
    /// thread's cumulative usage before this turn (from the checkpoint).
    pub fn new(payloads: bool, previous: Option<ExecUsage>) -> Self {
        ExecParser {
            payloads,
            started: false,
            terminated: false,
            step_open: false,
            thread_id: None,
            open_tools: Vec::new(),
            started_tools: HashSet::new(),
            messages: Vec::new(),
            items: Vec::new(),
            stream_error: None,
            terminal: None,
            cumulative: None,
            previous,
            failure: None,
            counter: 0,
        }
    }

    fn ensure_started(&mut self, out: &mut Vec<Out>) {
        if self.payloads && !self.started {
            self.started = true;
            let source = ProviderCoords {
                thread_id: self.thread_id.clone(),
                ..Default::default()
            };
            out.push(Out::Stream(
                StreamPayload::run_started().with_source(source),
            ));
        }
    }

    fn emit(&mut self, out: &mut Vec<Out>, p: StreamPayload) {
        if self.payloads {
            self.ensure_started(out);
            out.push(Out::Stream(p));
        }
    }

    fn item(&mut self, out: &mut Vec<Out>, item: TranscriptItem) {
        self.items.push(item.clone());
        out.push(Out::Event(RunEvent::Item(item)));
    }

    fn notice(out: &mut Vec<Out>, text: String, raw: &[u8]) {
        let mut ev = OperationalEvent::text(text);
        let preview = String::from_utf8_lossy(&raw[..raw.len().min(2048)]).into_owned();
        ev.data = Some(json!({ "line": preview }));
        out.push(Out::Event(RunEvent::Lifecycle(ev)));
    }

    /// Exec's item ids restart at `item_0` in every process; lifecycle ids
    /// are made unique within the run.
    fn lifecycle_id(&mut self, item_id: &str, what: &str) -> String {
        self.counter += 1;
        if item_id.is_empty() {
            format!("{what}-{}", self.counter)
        } else {
            format!("{item_id}#{}", self.counter)
        }
    }

    fn tool_of(details: &ItemDetails) -> Option<(String, Value)> {
        match details {
            ItemDetails::CommandExecution { command, .. } => {
                Some(("command_execution".into(), json!({ "command": command })))
            }
            ItemDetails::FileChange { changes, .. } => {
                Some(("file_change".into(), json!({ "changes": changes })))
            }
            ItemDetails::McpToolCall {
                server,
                tool,
                arguments,
                ..
            } => Some((format!("mcp:{server}/{tool}"), arguments.clone())),
            ItemDetails::WebSearch { query } => {
                Some(("web_search".into(), json!({ "query": query })))
            }
            _ => None,
        }
    }

    fn tool_started(&mut self, item: &Item, out: &mut Vec<Out>) {
        let Some((name, args)) = Self::tool_of(&item.details) else {
            return;
        };
        if !self.started_tools.insert(item.id.clone()) {
            return;
        }
        self.open_tools.push(item.id.clone());
        self.emit(
            out,
            StreamPayload::tool_call_start(&item.id, &name, Some(args.clone())),
        );
        self.item(out, TranscriptItem::tool_call(&item.id, name, Some(args)));
    }

    fn tool_completed(&mut self, item: Item, out: &mut Vec<Out>) {
        if !self.started_tools.contains(&item.id) {
            self.tool_started(&item, out);
        }
        let (text, is_error, result) = match &item.details {
            ItemDetails::CommandExecution {
                aggregated_output,
                exit_code,
                status,
                ..
            } => (
                aggregated_output.clone(),
                status != "completed" || exit_code.is_some_and(|c| c != 0),
                json!({"exit_code": exit_code, "status": status, "output": aggregated_output}),
            ),
            ItemDetails::FileChange { status, .. } => (
                status.clone(),
                status != "completed",
                json!({ "status": status }),
            ),
            ItemDetails::McpToolCall {
                result,
                error,
                status,
                ..
            } => (
                result
                    .as_ref()
                    .map(Value::to_string)
                    .or_else(|| error.as_ref().map(Value::to_string))
                    .unwrap_or_default(),
                error.is_some() || status == "failed",
                json!({"result": result, "error": error, "status": status}),
            ),
            _ => (String::new(), false, Value::Null),
        };
        if let Some(pos) = self.open_tools.iter().position(|t| *t == item.id) {
            self.open_tools.remove(pos);
            self.emit(out, StreamPayload::tool_call_end(&item.id, None));
            self.emit(out, StreamPayload::tool_call_result(&item.id, Some(result)));
        }
        self.item(out, TranscriptItem::tool_result(&item.id, text, is_error));
    }

    fn completed(&mut self, item: Item, raw: &[u8], out: &mut Vec<Out>) {
        match &item.details {
            ItemDetails::AgentMessage { text } if !text.is_empty() => {
                let id = self.lifecycle_id(&item.id, "message");
                self.emit(out, StreamPayload::text_start(&id));
                self.emit(out, StreamPayload::text_content(&id, text.clone()));
                self.emit(out, StreamPayload::text_end(&id));
                self.messages.push(text.clone());
                self.item(out, TranscriptItem::assistant(text.clone()));
            }
            ItemDetails::Reasoning { text } if !text.is_empty() => {
                let id = self.lifecycle_id(&item.id, "reasoning");
                self.emit(out, StreamPayload::reasoning_start(&id));
                self.emit(out, StreamPayload::reasoning_content(&id, text.clone()));
                self.emit(out, StreamPayload::reasoning_end(&id));
                self.item(out, TranscriptItem::thinking(text.clone()));
            }
            ItemDetails::Error { message } => {
                // Error *items* are warnings (e.g. unknown model metadata).
                let mut ev = OperationalEvent::text(message.clone());
                ev.metadata.insert("kind".into(), "warning".into());
                out.push(Out::Event(RunEvent::Lifecycle(ev)));
            }
            ItemDetails::CommandExecution { .. }
            | ItemDetails::FileChange { .. }
            | ItemDetails::McpToolCall { .. }
            | ItemDetails::WebSearch { .. } => self.tool_completed(item, out),
            _ => self.unknown("item", raw, out),
        }
    }

    fn unknown(&mut self, what: &str, raw: &[u8], out: &mut Vec<Out>) {
        let value: Value = serde_json::from_slice(raw).unwrap_or(Value::Null);
        let kind = match what {
            "item" => value
                .get("item")
                .and_then(|i| i.get("type"))
                .and_then(Value::as_str)
                .map(|t| format!("codex.item.{t}")),
            _ => value
                .get("type")
                .and_then(Value::as_str)
                .map(|t| format!("codex.{t}")),
        }
        .unwrap_or_else(|| "codex.unknown".into());
        if self.payloads {
            self.emit(
                out,
                StreamPayload::custom(kind, String::new()).with_raw(value),
            );
        } else {
            Self::notice(out, format!("codex: {kind}"), raw);
        }
    }

    fn close_all(&mut self, out: &mut Vec<Out>) {
        for id in std::mem::take(&mut self.open_tools) {
            self.emit(out, StreamPayload::tool_call_end(id, None));
        }
        if self.step_open {
            self.step_open = false;
            self.emit(out, StreamPayload::step_finished("turn"));
        }
    }

    fn turn_usage(&self) -> Option<Usage> {
        let total = self.cumulative?;
        let prev = self.previous.unwrap_or_default();
        let minus = |a: u64, b: u64| a.saturating_sub(b);
        Some(Usage {
            input_tokens: Some(minus(total.input_tokens, prev.input_tokens)),
            cached_input_tokens: Some(minus(total.cached_input_tokens, prev.cached_input_tokens)),
            output_tokens: Some(minus(total.output_tokens, prev.output_tokens)),
            reasoning_tokens: Some(minus(
                total.reasoning_output_tokens,
                prev.reasoning_output_tokens,
            )),
            ..Default::default()
        })
    }

    fn terminal(&mut self, event: ExecEvent, raw: &[u8], out: &mut Vec<Out>) {
        self.ensure_started(out);
        self.close_all(out);
        let line = String::from_utf8_lossy(raw).into_owned();
        match event {
            ExecEvent::TurnCompleted { usage } => {
                self.cumulative = usage;
                let usage = self.turn_usage();
                let mut item = TranscriptItem::new(TranscriptKind::Result, "");
                item.subtype = Some("turn.completed".into());
                item.usage.clone_from(&usage);
                item.session_id.clone_from(&self.thread_id);
                self.item(out, item);
                self.emit(out, StreamPayload::run_finished(usage));
                self.terminal = Some(("turn.completed".into(), line));
            }
            ExecEvent::TurnFailed { error } => {
                let raw_message = error.map(|e| e.message).unwrap_or_default();
                let message = readable(&raw_message)
                    .or_else(|| self.stream_error.as_deref().and_then(readable))
                    .unwrap_or_else(|| "the turn failed".into());
                let failure = RunFailure::new(FailureCode::AgentError, message);
                let mut item =
                    TranscriptItem::new(TranscriptKind::Failure, failure.message.clone());
                item.metadata
                    .insert("code".into(), failure.code.as_str().into());
                self.item(out, item);
                self.emit(out, StreamPayload::run_error(failure.clone()));
                self.failure = Some(failure);
                self.terminal = Some(("turn.failed".into(), line));
            }
            _ => {}
        }
        self.terminated = true;
    }

    /// End of stdout: end the run if the CLI never did, form every layer.
    pub fn finish(&mut self, exit_code: Option<i32>, signaled: bool) -> (Vec<Out>, ExecParsed) {
        let mut out = Vec::new();
        if !self.terminated {
            self.ensure_started(&mut out);
            self.close_all(&mut out);
            let why = self
                .stream_error
                .as_deref()
                .and_then(readable)
                .unwrap_or_else(|| {
                    format!("codex ended without turn.completed (exit code {exit_code:?})")
                });
            let mut f = RunFailure::new(FailureCode::AgentError, why);
            f.metadata
                .insert("reason".into(), "missing_terminal".into());
            let mut item = TranscriptItem::new(TranscriptKind::Failure, f.message.clone());
            item.metadata.insert("code".into(), f.code.as_str().into());
            self.item(&mut out, item);
            self.emit(&mut out, StreamPayload::run_error(f.clone()));
            self.failure = Some(f);
            self.terminated = true;
        }
        let clean = self.failure.is_none() && exit_code == Some(0) && !signaled;
        let completed = self
            .terminal
            .as_ref()
            .is_some_and(|(event, _)| event == "turn.completed");
        let checkpoint = self
            .thread_id
            .as_ref()
            .filter(|t| clean && completed && !t.is_empty())
            .map(|t| {
                let mut state = SessionState {
                    resume_id: t.clone(),
                    display_id: t.clone(),
                    data: Default::default(),
                };
                if let Some(u) = self.cumulative {
                    let values = [
                        u.input_tokens,
                        u.cached_input_tokens,
                        u.output_tokens,
                        u.reasoning_output_tokens,
                    ];
                    for (k, v) in USAGE_KEYS.iter().zip(values) {
                        state.data.insert((*k).to_owned(), v.to_string());
                    }
                }
                Checkpoint::valid(state)
            });
        let parsed = ExecParsed {
            output: self.messages.join("\n\n"),
            last_message: self.messages.last().cloned().unwrap_or_default(),
            terminal: self
                .terminal
                .as_ref()
                .and_then(|(event, json)| TerminalPayload::new(event.clone(), json).ok()),
            transcript: self.items.clone(),
            usage: self.turn_usage(),
            checkpoint,
            failure: self.failure.clone(),
        };
        (out, parsed)
    }
}

impl LineProtocol for ExecParser {
    fn line(&mut self, raw: &[u8]) -> Vec<Out> {
        let mut out = Vec::new();
        let raw = raw.trim_ascii();
        if raw.is_empty() {
            return out;
        }
        let event = match serde_json::from_slice::<ExecEvent>(raw) {
            Ok(e) => e,
            Err(e) => {
                let what = if raw.first() == Some(&b'{') {
                    format!("codex: malformed protocol line ({e})")
                } else {
                    "codex: non-JSON stdout line".to_owned()
                };
                Self::notice(&mut out, what, raw);
                return out;
            }
        };
        if self.terminated {
            Self::notice(&mut out, "codex: line after the terminal event".into(), raw);
            return out;
        }
        match event {
            ExecEvent::ThreadStarted { thread_id } => {
                if !thread_id.is_empty() {
                    self.thread_id = Some(thread_id.clone());
                }
                self.ensure_started(&mut out);
                let mut item = TranscriptItem::new(TranscriptKind::Init, "");
                item.session_id = Some(thread_id);
                self.item(&mut out, item);
            }
            ExecEvent::TurnStarted => {
                if !self.step_open {
                    self.step_open = true;
                    self.emit(&mut out, StreamPayload::step_started("turn"));
                }
            }
            ExecEvent::ItemStarted { item } => match &item.details {
                ItemDetails::AgentMessage { .. } | ItemDetails::Reasoning { .. } => {}
                ItemDetails::Other => self.unknown("item", raw, &mut out),
                _ => self.tool_started(&item, &mut out),
            },
            ExecEvent::ItemUpdated { .. } => self.unknown("item", raw, &mut out),
            ExecEvent::ItemCompleted { item } => self.completed(item, raw, &mut out),
            ExecEvent::Error { message } => {
                let mut ev = OperationalEvent::text(readable(&message).unwrap_or(message.clone()));
                ev.metadata.insert("kind".into(), "stream_error".into());
                out.push(Out::Event(RunEvent::Lifecycle(ev)));
                self.stream_error = Some(message);
            }
            e @ (ExecEvent::TurnCompleted { .. } | ExecEvent::TurnFailed { .. }) => {
                self.terminal(e, raw, &mut out)
            }
            ExecEvent::Unknown => self.unknown("event", raw, &mut out),
        }
        out
    }

    fn terminated(&self) -> bool {
        self.terminated
    }
}

/// An error message made readable: a JSON error document becomes its inner
/// `error.message`; empty stays `None`.
fn readable(message: &str) -> Option<String> {
    let m = message.trim();
    if m.is_empty() {
        return None;
    }
    if let Ok(v) = serde_json::from_str::<Value>(m)
        && let Some(inner) = v
            .get("error")
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
    {
        return Some(inner.to_owned());
    }
    Some(m.to_owned())
}
