//! The sans-IO half of an ACP session: what each stdout line means.
//!
//! | ACP | here |
//! |---|---|
//! | `agent_message_chunk` (text) | text deltas of one text lifecycle per message |
//! | `agent_thought_chunk` (text) | reasoning deltas; a thinking transcript item |
//! | `tool_call` / `tool_call_update` | one tool lifecycle per `toolCallId` (name: the call's `name`, else its `title`; `kind`, `locations` and `status` in the item's metadata and the raw start payload); `completed` → result, `failed` → error result |
//! | `plan` | a `todo.updated` snapshot of the whole entry list (source `acp.plan`) |
//! | `agent_message_chunk` (image) | an `image` observation |
//! | `current_mode_update` | a `acp.mode` lifecycle notice |
//! | `usage_update` | a `acp.context` lifecycle notice (window use and cost) |
//! | (the session opened) | a `acp.session` lifecycle notice naming it and the method |
//! | anything else (commands, config, session info, unknown kinds) | `<driver>.<kind>` custom payloads |
//! | `session/prompt` result | the terminal: `end_turn` ok; `cancelled` → `cancelled`; `refusal`, `max_tokens`, `max_turn_requests` → failures with that code; usage from `usage`, else Gemini's `_meta.quota.token_count`, else the sum of the per-model-call `_meta.usage` Qwen Code puts on `agent_message_chunk`s |
//!
//! Agent requests and responses to the client's requests go to the
//! transport as control frames. A frame without `"jsonrpc":"2.0"` is
//! reported (a notice) and read all the same. Updates are believed only for the session
//! the client opened (others are protocol-violation notices); while a
//! `session/load` replays history, updates are counted, not emitted. An
//! agent may go on replaying after its load answer (a recipe's
//! `late_replay`): then the replay ends with the last turn's final text
//! after every earlier user message (the checkpoint's turn count and text
//! digest, `load.rs`).

use std::collections::HashMap;

use agent_adaptor_driver::{
    FailureCode, LifecycleId, ObservationSupport, OperationalEvent, ProviderCoords, RunEvent,
    RunFailure, StreamPayload, ToolScope, TranscriptItem, Usage,
};
use agent_client_protocol::v1::schema::{
    ContentBlock, SessionNotification, SessionUpdate, ToolCall, ToolCallStatus, ToolCallUpdate,
};
use serde_json::{Value, json};

use super::load::{ReplayEnd, text_digest};
use super::wire::{Frame, FrameKind, error_message};
use crate::observe::{ObserveError, Observer, TodoFact, str_field};
use crate::one_shot::{Emitter, Exit, Parsed};
use crate::pump::{ControlFrame, LineProtocol, Out};
use crate::terminal_guard::IgnoredTerminals;

/// What every ACP agent can report: its plan (a todo list, replaced whole
/// by each `plan` update) and the images it shows.
pub const OBSERVATION: ObservationSupport = ObservationSupport {
    todos: true,
    images: true,
    subagents: false,
    capabilities: false,
};

/// The todo facts of a plan's entries (`content`, `status`, `priority`;
/// no ids: the position is the id).
fn plan_facts(entries: &Value) -> Vec<TodoFact> {
    entries
        .as_array()
        .map(|es| {
            es.iter()
                .map(|e| TodoFact {
                    id: None,
                    content: str_field(e, "content").unwrap_or_default(),
                    status: str_field(e, "status").unwrap_or_default(),
                    active_form: None,
                    priority: str_field(e, "priority"),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The failure code of an `initialize` answer with another protocol version.
pub const UNSUPPORTED_PROTOCOL: &str = "unsupported_protocol_version";
/// The failure code of a thread turn the agent cannot continue (no
/// `loadSession`, no `session/resume`), or whose session it rejected.
pub const RESUME_REJECTED: &str = "resume_rejected";
/// The terminal's name: the answer to `session/prompt`.
pub const TERMINAL: &str = "session/prompt";

/// A replay that may go on after the `session/load` answer.
#[derive(Debug)]
struct LateReplay {
    end: ReplayEnd,
    /// User messages replayed so far.
    users: u64,
    /// The text of the agent message being replayed.
    message: String,
    /// The last turn's final text was replayed.
    done: bool,
    /// The updates after the load answer while the end is still to come:
    /// the turn's own, should the end never come.
    held: Vec<(Value, Vec<u8>)>,
}

/// An open reasoning lifecycle.
#[derive(Debug)]
struct Thought {
    id: LifecycleId,
    text: String,
}

/// The ACP parser of one run.
#[derive(Debug)]
pub struct AcpParser {
    em: Emitter,
    driver: &'static str,
    session: Option<String>,
    replaying: bool,
    replayed: usize,
    /// A load whose replay may go on after the answer: where it ends.
    late: Option<LateReplay>,
    thought: Option<Thought>,
    thoughts: usize,
    /// Started tool calls: id → name.
    tools: HashMap<String, String>,
    usage: Option<Usage>,
    ignored: IgnoredTerminals,
    /// Updates sent before the session was opened (CodeBuddy announces the
    /// new session's options before its `session/new` answer): judged once
    /// the session id is known. At most [`EARLY_UPDATES`].
    early: Vec<(Value, Vec<u8>)>,
    /// Plans (todo lists) and images.
    observer: Observer,
}

/// The most updates held before the session is opened; later ones are
/// judged at once (without a session: a protocol violation).
const EARLY_UPDATES: usize = 64;

impl AcpParser {
    /// A parser for `driver` (its type, the prefix of notices); `payloads`
    /// turns live payloads on.
    pub fn new(driver: &'static str, payloads: bool) -> Self {
        AcpParser {
            em: Emitter::new(driver, payloads),
            driver,
            session: None,
            replaying: false,
            replayed: 0,
            late: None,
            thought: None,
            thoughts: 0,
            tools: HashMap::new(),
            early: Vec::new(),
            usage: None,
            ignored: IgnoredTerminals::new(),
            observer: Observer::new(OBSERVATION),
        }
    }

    /// Emit an observation, or report why the fact made none.
    fn observed(&mut self, out: &mut Vec<Out>, r: Result<Option<StreamPayload>, ObserveError>) {
        match r {
            Ok(Some(p)) => self.em.stream(out, p),
            Ok(None) => {}
            Err(e) => out.push(Out::Event(crate::observe::notice(self.driver, &e))),
        }
    }

    /// Record the transcript into `transcript` (the request's budget).
    pub fn with_transcript(mut self, transcript: agent_adaptor_driver::Transcript) -> Self {
        self.em.set_transcript(transcript);
        self
    }

    /// The session the client opened.
    pub fn session_id(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// A `session/load` is in flight: the updates until its answer are the
    /// replayed history; with `end`, so are those after it until the
    /// replay has given back `end.turns` user messages and then the agent
    /// message whose text has digest `end.last_text`.
    pub fn loading(&mut self, end: Option<ReplayEnd>) {
        self.replaying = true;
        self.late = end.map(|end| LateReplay {
            end,
            users: 0,
            message: String::new(),
            done: false,
            held: Vec::new(),
        });
    }

    /// Count one replayed update; the late replay's end is noted.
    fn replayed(&mut self, update: &SessionUpdate) {
        self.replayed += 1;
        let Some(late) = &mut self.late else {
            return;
        };
        match update {
            SessionUpdate::UserMessageChunk(_) => {
                late.users += 1;
                late.message.clear();
            }
            SessionUpdate::AgentMessageChunk(c) => {
                if let ContentBlock::Text(t) = &c.content {
                    late.message.push_str(&t.text);
                }
                if late.users >= late.end.turns && text_digest(&late.message) == late.end.last_text
                {
                    late.done = true;
                }
            }
            _ => late.message.clear(),
        }
    }

    /// The turn ended while the late replay's end never came: the updates
    /// held since the load answer were the turn's after all (a notice says
    /// so).
    fn release_held(&mut self, out: &mut Vec<Out>) {
        if !self.replaying || self.session.is_none() {
            return;
        }
        let held = self
            .late
            .as_mut()
            .map(|l| std::mem::take(&mut l.held))
            .unwrap_or_default();
        self.replaying = false;
        self.replayed -= held.len();
        out.push(notice(
            format!(
                "{}: the replay's end (the last turn's final text) never came; the {} updates after the session/load answer are this turn's",
                self.driver,
                held.len()
            ),
            "acp.replay_unmatched",
            Some(json!({ "updates": held.len() })),
        ));
        out.push(self.replayed_notice());
        for (params, raw) in held {
            self.update(params, &raw, out);
        }
    }

    /// Whether updates after the load answer are still replay.
    fn replay_goes_on(&self) -> bool {
        self.late.as_ref().is_some_and(|l| !l.done)
    }

    fn replayed_notice(&self) -> Out {
        notice(
            format!(
                "{}: session/load replayed {} updates of the earlier turns",
                self.driver, self.replayed
            ),
            "acp.replayed",
            Some(json!({ "updates": self.replayed })),
        )
    }

    /// The agent answered `session/new`, `session/load` or
    /// `session/resume`: the run starts on session `id`.
    /// An `acp.session` notice says so (with the method that opened it).
    pub fn session_opened(&mut self, id: &str, method: &str) -> Vec<Out> {
        let mut out = Vec::new();
        self.session = Some(id.to_owned());
        self.replaying = self.replay_goes_on();
        let coords = ProviderCoords {
            thread_id: Some(id.to_owned()),
            ..Default::default()
        };
        self.em.start(&mut out, coords);
        out.push(notice(
            format!("{}: session {id} opened ({method})", self.driver),
            "acp.session",
            Some(json!({ "sessionId": id, "method": method })),
        ));
        if self.replayed > 0 && !self.replaying {
            out.push(self.replayed_notice());
        }
        for (params, raw) in std::mem::take(&mut self.early) {
            self.update(params, &raw, &mut out);
        }
        out
    }

    /// The answer to `session/prompt`: the terminal.
    pub fn prompt_answered(&mut self, result: Result<Value, Value>) -> Vec<Out> {
        let mut out = Vec::new();
        self.release_held(&mut out);
        self.close_thought(&mut out);
        self.em.close_all(&mut out);
        match result {
            Ok(result) => {
                self.usage = usage_of(&result).or(self.usage.take());
                self.em.terminal(TERMINAL, result.to_string().as_bytes());
                let reason = result
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let failure = match reason {
                    "end_turn" => None,
                    "cancelled" => Some(RunFailure::new(
                        FailureCode::Cancelled,
                        format!("{}: the agent cancelled the turn", self.driver),
                    )),
                    "" => Some(self.failure(
                        "missing_stop_reason",
                        "the session/prompt result has no stopReason".into(),
                    )),
                    other => Some(self.failure(other, format!("the turn stopped: {other}"))),
                };
                match failure {
                    Some(f) => self.em.fail(&mut out, f),
                    None => self
                        .em
                        .stream(&mut out, StreamPayload::run_finished(self.usage.clone())),
                }
            }
            Err(error) => {
                let mut f = RunFailure::new(
                    FailureCode::AgentError,
                    format!("{}: {}", self.driver, error_message(&error)),
                );
                f.metadata.insert("reason".into(), "prompt_failed".into());
                self.em.fail(&mut out, f);
            }
        }
        out
    }

    fn failure(&self, code: &str, message: String) -> RunFailure {
        let mut f = RunFailure::new(
            FailureCode::Other(code.to_owned()),
            format!("{}: {message}", self.driver),
        );
        f.metadata.insert("reason".into(), code.to_owned());
        f
    }

    /// End the run with a typed failure `code` before the prompt ran (a
    /// rejected request, an unsupported protocol version, a resume the agent
    /// cannot do).
    pub fn fail(&mut self, code: &str, message: String) -> Vec<Out> {
        let mut out = Vec::new();
        let f = if code == "request_failed" {
            let mut f = RunFailure::new(
                FailureCode::AgentError,
                format!("{}: {message}", self.driver),
            );
            f.metadata.insert("reason".into(), code.into());
            f
        } else {
            self.failure(code, message)
        };
        self.close_thought(&mut out);
        self.em.close_all(&mut out);
        self.em.fail(&mut out, f);
        out
    }

    /// End of stdout: end the run if the agent never did, form every layer.
    pub fn finish(&mut self, exit: &Exit) -> (Vec<Out>, Parsed) {
        let mut out = Vec::new();
        // Updates still waiting for a session that never opened.
        for (_, raw) in std::mem::take(&mut self.early) {
            let why = "session/update before any session was opened";
            out.push(Out::Event(self.ignored.ignore(self.driver, why, &raw)));
        }
        self.close_thought(&mut out);
        if !self.em.ended() {
            let f = self
                .em
                .missing_terminal(&mut out, TERMINAL, exit, &self.ignored);
            self.em.fail(&mut out, f);
        }
        let output = self.em.messages().last().cloned().unwrap_or_default();
        let parsed = self.em.finish(
            exit,
            self.session.as_deref(),
            output,
            self.usage.clone(),
            None,
        );
        (out, parsed)
    }

    fn update(&mut self, params: Value, raw: &[u8], out: &mut Vec<Out>) {
        let note: SessionNotification = match serde_json::from_value(params.clone()) {
            Ok(n) => n,
            Err(_) => {
                let kind = params["update"]["sessionUpdate"]
                    .as_str()
                    .unwrap_or("session_update")
                    .to_owned();
                if !self.replaying {
                    self.em.unknown(out, &kind, params);
                }
                return;
            }
        };
        if self.replaying {
            self.replayed(&note.update);
            if let (Some(_), Some(late)) = (&self.session, &mut self.late) {
                if late.done {
                    // The late replay's last update: the turn starts after it.
                    late.held.clear();
                    self.replaying = false;
                    out.push(self.replayed_notice());
                } else {
                    late.held.push((params, raw.to_vec()));
                }
            }
            return;
        }
        if self.session.is_none() && self.early.len() < EARLY_UPDATES {
            self.early.push((params, raw.to_vec()));
            return;
        }
        if self.session.as_deref() != Some(&*note.session_id.0) {
            let why = format!(
                "session/update for session {} before or beside ours",
                note.session_id.0
            );
            out.push(Out::Event(self.ignored.ignore(self.driver, &why, raw)));
            return;
        }
        match note.update {
            SessionUpdate::AgentMessageChunk(c) => {
                self.close_thought(out);
                // Qwen Code reports each model call's usage in the `_meta`
                // of an (empty) chunk: the turn's usage is their sum.
                if let Some(call) = c.meta.as_ref().and_then(|m| acp_usage(m.get("usage")?)) {
                    self.usage = Some(sum(self.usage.take(), call));
                }
                match c.content {
                    ContentBlock::Text(t) => self.em.text(out, t.text),
                    ContentBlock::Image(i) => {
                        let (data, uri) = match i.uri {
                            Some(u) if i.data.is_empty() => (None, Some(u)),
                            _ => (Some(i.data), None),
                        };
                        let r = self
                            .observer
                            .image(None, &i.mime_type, data, uri, "acp.image");
                        self.observed(out, r);
                    }
                    other => self.em.unknown(out, "agent_message_content", json!(other)),
                }
            }
            SessionUpdate::AgentThoughtChunk(c) => match c.content {
                ContentBlock::Text(t) => self.thought(out, t.text),
                other => self.em.unknown(out, "agent_thought_content", json!(other)),
            },
            SessionUpdate::UserMessageChunk(_) => {}
            SessionUpdate::ToolCall(call) => self.tool_call(out, call),
            SessionUpdate::ToolCallUpdate(update) => self.tool_update(out, update),
            SessionUpdate::Plan(plan) => {
                let entries = json!(plan.entries);
                let r = self.observer.todos(None, plan_facts(&entries), "acp.plan");
                self.observed(out, r);
            }
            SessionUpdate::CurrentModeUpdate(m) => out.push(notice(
                format!("{}: mode is now {}", self.driver, m.current_mode_id.0),
                "acp.mode",
                Some(json!({ "currentModeId": m.current_mode_id.0 })),
            )),
            SessionUpdate::UsageUpdate(u) => out.push(notice(
                format!("{}: context {} of {} tokens", self.driver, u.used, u.size),
                "acp.context",
                Some(json!(u)),
            )),
            other => {
                let v = json!(other);
                let kind = v["sessionUpdate"].as_str().unwrap_or("update").to_owned();
                self.em.unknown(out, &kind, v);
            }
        }
    }

    fn thought(&mut self, out: &mut Vec<Out>, chunk: String) {
        if chunk.is_empty() {
            return;
        }
        self.em.close_text(out);
        let id = match &mut self.thought {
            Some(t) => {
                t.text.push_str(&chunk);
                t.id.clone()
            }
            None => {
                self.thoughts += 1;
                let id = LifecycleId::from(format!("reasoning-{}", self.thoughts));
                self.em
                    .stream(out, StreamPayload::reasoning_start(id.clone()));
                self.thought = Some(Thought {
                    id: id.clone(),
                    text: chunk.clone(),
                });
                id
            }
        };
        self.em
            .stream(out, StreamPayload::reasoning_content(id, chunk));
    }

    fn close_thought(&mut self, out: &mut Vec<Out>) {
        if let Some(t) = self.thought.take() {
            self.em.stream(out, StreamPayload::reasoning_end(t.id));
            self.em.item(out, TranscriptItem::thinking(t.text));
        }
    }

    fn start_tool(&mut self, out: &mut Vec<Out>, id: &str, name: String, args: Value, raw: Value) {
        self.close_thought(out);
        let meta = [
            ("kind", raw["kind"].as_str().unwrap_or("other").to_owned()),
            (
                "locations",
                match &raw["locations"] {
                    Value::Null => "[]".to_owned(),
                    l => l.to_string(),
                },
            ),
            (
                "status",
                raw["status"].as_str().unwrap_or("pending").to_owned(),
            ),
        ];
        let started =
            self.em
                .tool_call_described(out, id, &name, args, ToolScope::Builtin, Some(raw), &meta);
        if started {
            self.tools.insert(id.to_owned(), name);
        }
    }

    fn tool_call(&mut self, out: &mut Vec<Out>, call: ToolCall) {
        let raw = json!(call);
        let id = call.tool_call_id.0.to_string();
        let name = call.name.clone().unwrap_or_else(|| call.title.clone());
        let args = call.raw_input.clone().unwrap_or_else(|| json!({}));
        self.start_tool(out, &id, name, args, raw.clone());
        self.tool_status(out, &id, Some(call.status), &raw);
    }

    fn tool_update(&mut self, out: &mut Vec<Out>, update: ToolCallUpdate) {
        let raw = json!(update);
        let id = update.tool_call_id.0.to_string();
        if !self.tools.contains_key(&id) {
            let f = &update.fields;
            let name = f
                .name
                .clone()
                .or_else(|| f.title.clone())
                .unwrap_or_else(|| "tool".into());
            let args = f.raw_input.clone().unwrap_or_else(|| json!({}));
            self.start_tool(out, &id, name, args, raw.clone());
        }
        self.tool_status(out, &id, update.fields.status, &raw);
    }

    fn tool_status(
        &mut self,
        out: &mut Vec<Out>,
        id: &str,
        status: Option<ToolCallStatus>,
        raw: &Value,
    ) {
        let is_error = match status {
            Some(ToolCallStatus::Completed) => false,
            Some(ToolCallStatus::Failed) => true,
            _ => return,
        };
        let text = tool_text(raw);
        let result = json!({
            "status": raw["status"],
            "content": raw["content"],
            "rawOutput": raw["rawOutput"],
        });
        self.em.tool_result(out, id, text, is_error, result);
    }
}

/// The text of a tool call's content blocks.
fn tool_text(raw: &Value) -> String {
    raw["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["content"]["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Usage from a `session/prompt` result: ACP's `usage`, else Gemini's
/// `_meta.quota.token_count`.
fn usage_of(result: &Value) -> Option<Usage> {
    let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
    if let Some(u) = result.get("usage").and_then(acp_usage) {
        return Some(u);
    }
    let t = result.get("_meta")?.get("quota")?.get("token_count")?;
    let (input, output) = (n(t, "input_tokens"), n(t, "output_tokens"));
    Some(Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input.zip(output).map(|(i, o)| i + o),
        ..Default::default()
    })
}

/// ACP's usage object (`inputTokens`, `outputTokens` …), when `u` is one.
fn acp_usage(u: &Value) -> Option<Usage> {
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    u.is_object().then(|| Usage {
        input_tokens: n("inputTokens"),
        output_tokens: n("outputTokens"),
        total_tokens: n("totalTokens"),
        reasoning_tokens: n("thoughtTokens"),
        cached_input_tokens: n("cachedReadTokens"),
        cache_creation_input_tokens: n("cachedWriteTokens"),
        ..Default::default()
    })
}

/// `so_far` plus `more`, field by field (a field either reported counts).
fn sum(so_far: Option<Usage>, more: Usage) -> Usage {
    let Some(a) = so_far else {
        return more;
    };
    let add = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0) + y.unwrap_or(0)),
    };
    Usage {
        input_tokens: add(a.input_tokens, more.input_tokens),
        output_tokens: add(a.output_tokens, more.output_tokens),
        cached_input_tokens: add(a.cached_input_tokens, more.cached_input_tokens),
        cache_creation_input_tokens: add(
            a.cache_creation_input_tokens,
            more.cache_creation_input_tokens,
        ),
        reasoning_tokens: add(a.reasoning_tokens, more.reasoning_tokens),
        total_tokens: add(a.total_tokens, more.total_tokens),
        cost_usd: match (a.cost_usd, more.cost_usd) {
            (None, None) => None,
            (x, y) => Some(x.unwrap_or(0.0) + y.unwrap_or(0.0)),
        },
    }
}

/// A lifecycle notice of `kind` with `data`.
fn notice(text: String, kind: &str, data: Option<Value>) -> Out {
    let mut ev = OperationalEvent::text(text);
    ev.metadata.insert("kind".into(), kind.to_owned());
    ev.data = data;
    Out::Event(RunEvent::Lifecycle(ev))
}

impl LineProtocol for AcpParser {
    fn line_into(&mut self, raw: &[u8], out: &mut Vec<Out>) {
        let Some((frame, raw)) = self.em.decode::<Frame>(out, raw) else {
            return;
        };
        if frame.jsonrpc.as_deref() != Some("2.0") {
            // Reported, then read all the same: dropping it could leave a
            // request unanswered or the turn without its terminal.
            self.em
                .notice(out, "a frame without \"jsonrpc\":\"2.0\"", raw);
        }
        match frame.kind() {
            FrameKind::Request { id, method, params } => {
                out.push(Out::Control(ControlFrame::Request { id, method, params }));
            }
            FrameKind::Response { id, result } => {
                out.push(Out::Control(ControlFrame::Response { id, result }));
            }
            FrameKind::Notification { method, params } if method == "session/update" => {
                self.update(params, raw, out);
            }
            FrameKind::Notification { method, params } => {
                let kind = method.replace('/', ".");
                self.em.unknown(out, &kind, params);
            }
            FrameKind::Invalid => self.em.notice(out, "a frame with no method and no id", raw),
        }
    }

    fn terminated(&self) -> bool {
        self.em.ended()
    }
}
