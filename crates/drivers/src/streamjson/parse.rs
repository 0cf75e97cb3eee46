//! The stream-json state machine: stdout lines → live payloads, transcript
//! items and notices, and at the end every layer of the response — all from
//! one parse (driver contract §6, §7).
//!
//! The session of a run is the one its own `system/init` announced (after a
//! resume or a fork too: the init of this process is the authority). A
//! `result` line is believed only after that init and only for that session
//! — and, in the control transport, only after the CLI answered the host's
//! `initialize` ([`expect_initialize_answer`](Parser::expect_initialize_answer));
//! any other is a protocol-violation notice ([`crate::terminal_guard`]) and
//! the run goes on.

use foldhash::fast::RandomState;
use std::collections::{BTreeMap, HashSet};

use agent_adaptor_driver::{
    Checkpoint, FailureCode, LifecycleId, OperationalEvent, ProviderCoords, RunEvent, RunFailure,
    SeenIds, SessionState, StreamPayload, TerminalPayload, Transcript, TranscriptItem,
    TranscriptKind, Usage, describe_exit,
};
use serde_json::{Value, json};

use super::Family;
use super::observe as sj;
use super::wire::{
    AssistantLine, Block, ContentBlockDelta, ContentBlockStart, ContentBlockStop, Delta,
    InputJsonDelta, Line, MessageStart, ResultLine, SseEvent, SystemLine, TextBlock, TextDelta,
    ThinkingBlock, ThinkingDelta, ToolResultBlock, ToolUseBlock, UserContent, UserLine,
};
use crate::observe::{ObserveError, Observer};
use crate::terminal_guard::{IgnoredTerminals, session_mismatch};
use agent_adaptor_driver::StreamKind;

pub use crate::exit::ExitFacts;
pub use crate::pump::{ControlFrame, Out};

/// A `control_response` envelope as the pump's frame: the host request it
/// answers (`request_id`), and its `response`, or its `error` when the
/// subtype is `"error"`.
fn control_response(mut envelope: Value) -> ControlFrame {
    let id = envelope
        .get_mut("request_id")
        .map_or(Value::Null, Value::take);
    let result = if envelope.get("subtype").and_then(Value::as_str) == Some("error") {
        Err(envelope.get_mut("error").map_or(Value::Null, Value::take))
    } else {
        Ok(envelope
            .get_mut("response")
            .map_or(Value::Null, Value::take))
    };
    ControlFrame::Response { id, result }
}

/// Every response layer the parse formed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// The final assistant text.
    pub output: String,
    /// The official terminal payload (the `result` line, exactly).
    pub terminal: Option<TerminalPayload>,
    /// Every transcript item, in the order it was emitted.
    pub transcript: Transcript,
    /// Usage from the `result` line only.
    pub usage: Option<Usage>,
    /// A checkpoint from a successful `result` line.
    pub checkpoint: Option<Checkpoint>,
    /// The failure, when the turn failed.
    pub failure: Option<RunFailure>,
    /// The model the CLI reported.
    pub model: String,
    /// The structured output (`--json-schema`), as the CLI reported it.
    pub structured_output: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Open {
    Text(LifecycleId),
    Reasoning(LifecycleId),
    Tool(LifecycleId),
}

/// The parser. Feed it every stdout line with [`line`](Self::line), then
/// call [`finish`](Self::finish) once.
#[derive(Debug)]
pub struct Parser {
    family: &'static Family,
    payloads: bool,
    partials: bool,
    started: bool,
    terminated: bool,
    session_id: Option<String>,
    model: Option<String>,
    current_message: String,
    open: BTreeMap<u32, Open>,
    block_counts: BTreeMap<String, u32>,
    tools: HashSet<String, RandomState>,
    results: HashSet<String, RandomState>,
    last_message: String,
    last_text: String,
    api_error: Option<String>,
    items: Transcript,
    result: Option<(ResultLine, String)>,
    aborted: Option<RunFailure>,
    anonymous: u64,
    lifecycle_ids: SeenIds,
    /// The first `system/init` was seen, with this session id (if any).
    init: Option<Option<String>>,
    /// The host sent `initialize` and no control response came yet.
    awaiting_initialize: bool,
    ignored: IgnoredTerminals,
    /// The run's MCP servers (the CLI's name, the run's), longest first.
    mcp_servers: Vec<(String, String)>,
    /// Todos, subagents, capability invocations and images.
    observer: Observer,
}

impl Parser {
    /// Record the transcript into `transcript` (empty, made with the
    /// request's budget by [`Request::new_transcript`](agent_adaptor_driver::Request::new_transcript))
    /// instead of one with the default budget.
    pub fn with_transcript(mut self, transcript: Transcript) -> Self {
        self.items = transcript;
        self
    }

    /// Name the run's MCP servers (as `(name in the CLI's tool names, the
    /// run's name)`, longest first), so that a call to
    /// `mcp__<server>__<tool>` starts with
    /// [`ToolScope::Mcp`](agent_adaptor_driver::ToolScope::Mcp).
    pub fn with_mcp_servers(mut self, servers: Vec<(String, String)>) -> Self {
        self.mcp_servers = servers;
        self
    }

    /// A parser for `family`. `payloads` turns live payloads on (the
    /// request is streaming); `partials` says the CLI was asked for
    /// `stream_event` lines, which then drive the text/reasoning/tool
    /// lifecycles token by token (whole `assistant` lines then only feed the
    /// transcript — never both).
    pub fn new(family: &'static Family, payloads: bool, partials: bool) -> Self {
        Parser {
            family,
            payloads,
            partials,
            started: false,
            terminated: false,
            session_id: None,
            model: None,
            current_message: String::new(),
            open: BTreeMap::new(),
            block_counts: BTreeMap::new(),
            tools: HashSet::default(),
            results: HashSet::default(),
            last_message: String::new(),
            last_text: String::new(),
            api_error: None,
            items: Transcript::new(),
            result: None,
            aborted: None,
            anonymous: 0,
            lifecycle_ids: SeenIds::new(),
            init: None,
            awaiting_initialize: false,
            ignored: IgnoredTerminals::new(),
            mcp_servers: Vec::new(),
            observer: Observer::new(super::observe::SUPPORT),
        }
    }

    /// The host sent `initialize` (control transport) and this parser sees
    /// its answer: no `result` is believed before a `control_response` —
    /// the CLI answers `initialize` before it reads the prompt, and the
    /// host sends no other request before the prompt.
    pub fn expect_initialize_answer(&mut self) {
        self.awaiting_initialize = true;
    }

    /// The session id announced so far (never a resume identifier by itself).
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// True once the `result` line was seen.
    pub fn terminated(&self) -> bool {
        self.terminated
    }

    /// Parse one stdout line (without its newline).
    pub fn line(&mut self, raw: &[u8]) -> Vec<Out> {
        let mut out = Vec::new();
        self.line_into(raw, &mut out);
        out
    }

    /// [`line`](Self::line), appending to `out` (a buffer the caller reuses).
    pub fn line_into(&mut self, raw: &[u8], out: &mut Vec<Out>) {
        let trimmed = raw.trim_ascii();
        if trimmed.is_empty() {
            return;
        }
        match crate::json_line::from_line::<Line>(trimmed) {
            Ok(line) => self.dispatch(line, trimmed, out),
            Err(e) => self.not_protocol(trimmed, &e.to_string(), out),
        }
    }

    fn dispatch(&mut self, line: Line, raw: &[u8], out: &mut Vec<Out>) {
        if let Line::Result(r) = line {
            return self.result(r, raw, out);
        }
        if self.terminated {
            // Nothing may follow the terminal frame: keep it as a notice.
            return self.notice(out, "line after the result line", raw);
        }
        match line {
            Line::System(s) => self.system(s, out),
            Line::Assistant(a) => self.assistant(a, out),
            Line::User(u) => self.user(u, out),
            Line::StreamEvent(e) if e.parent_tool_use_id.is_none() => {
                if self.partials {
                    self.ensure_started(out);
                    self.sse(e.event, out);
                }
            }
            Line::StreamEvent(_) => {}
            Line::ControlRequest(c) => out.push(Out::Control(ControlFrame::Request {
                method: (c.request.get("subtype").and_then(Value::as_str))
                    .unwrap_or_default()
                    .to_owned(),
                id: Value::String(c.request_id),
                params: c.request,
            })),
            Line::ControlResponse(c) => {
                self.awaiting_initialize = false;
                out.push(Out::Control(control_response(c.response)));
            }
            Line::ControlCancelRequest(c) => out.push(Out::Control(ControlFrame::Cancel {
                id: Value::String(c.request_id),
            })),
            Line::Result(_) => {}
            Line::Unknown => self.unknown(raw, out),
        }
    }

    fn ensure_started(&mut self, out: &mut Vec<Out>) {
        if self.payloads && !self.started {
            self.started = true;
            let source = ProviderCoords {
                thread_id: self.session_id.clone(),
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
        out.push(Out::Event(RunEvent::Item(self.items.share(item))));
    }

    fn notice(&mut self, out: &mut Vec<Out>, what: &str, raw: &[u8]) {
        let mut ev = OperationalEvent::text(format!("{}: {what}", self.family.driver_type));
        ev.metadata.insert("bytes".into(), raw.len().to_string());
        // Keep a bounded preview; the whole line is in the raw capture.
        let preview: String = String::from_utf8_lossy(&raw[..raw.len().min(2048)]).into_owned();
        ev.data = Some(json!({ "line": preview }));
        out.push(Out::Event(RunEvent::Lifecycle(ev)));
    }

    fn not_protocol(&mut self, raw: &[u8], error: &str, out: &mut Vec<Out>) {
        let what = if raw.first() == Some(&b'{') {
            format!("malformed protocol line ({error})")
        } else {
            "non-JSON stdout line".to_owned()
        };
        self.notice(out, &what, raw);
    }

    fn unknown(&mut self, raw: &[u8], out: &mut Vec<Out>) {
        let value: Value = crate::json_line::from_line(raw).unwrap_or(Value::Null);
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_owned();
        if self.payloads {
            let name = format!("{}.{kind}", self.family.driver_type);
            self.emit(
                out,
                StreamPayload::custom(name, String::new()).with_raw(value),
            );
        } else {
            self.notice(out, &format!("unknown line type {kind:?}"), raw);
        }
    }

    fn system(&mut self, s: SystemLine, out: &mut Vec<Out>) {
        if s.session_id.is_some() && self.session_id.is_none() {
            self.session_id.clone_from(&s.session_id);
        }
        match s.subtype.as_str() {
            "init" => {
                if self.init.is_none() {
                    self.init = Some(s.session_id.clone());
                }
                if let Some(m) = &s.model {
                    self.model = Some(m.clone());
                }
                self.ensure_started(out);
                let mut item = TranscriptItem::new(TranscriptKind::Init, "");
                item.session_id.clone_from(&s.session_id);
                item.model.clone_from(&s.model);
                if let Some(cwd) = s.cwd {
                    item.metadata.insert("cwd".into(), cwd);
                }
                self.item(out, item);
            }
            // Progress chatter with no audit value (kept in raw).
            "status" | "thinking_tokens" => {}
            subtype => {
                let mut ev = OperationalEvent::text(s.message.clone().unwrap_or_default());
                ev.metadata.insert("subtype".into(), subtype.to_owned());
                if let Some(t) = s.tool_name {
                    ev.metadata.insert("tool_name".into(), t);
                }
                if let Some(t) = s.tool_use_id {
                    ev.metadata.insert("tool_use_id".into(), t);
                }
                out.push(Out::Event(RunEvent::Lifecycle(ev)));
            }
        }
    }

    /// A lifecycle id derived from `base`, unique within the run even when
    /// the CLI repeats a message id or block index.
    fn fresh_id(&mut self, base: String) -> LifecycleId {
        if self.lifecycle_ids.insert(&base) {
            return base.into();
        }
        let mut n = 2u64;
        loop {
            let candidate = format!("{base}#{n}");
            if self.lifecycle_ids.insert(&candidate) {
                return candidate.into();
            }
            n += 1;
        }
    }

    fn message_id(&mut self, id: &str) -> String {
        if id.is_empty() {
            self.anonymous += 1;
            format!("msg-{}", self.anonymous)
        } else {
            id.to_owned()
        }
    }

    fn assistant(&mut self, a: AssistantLine, out: &mut Vec<Out>) {
        self.ensure_started(out);
        if a.message
            .model
            .as_deref()
            .is_some_and(|m| m != "<synthetic>")
        {
            self.model.clone_from(&a.message.model);
        }
        let nested = a.parent_tool_use_id.clone();
        if a.is_api_error_message {
            let text = text_of_blocks(&a.message.content);
            self.api_error = Some(text.clone());
            if !text.is_empty() {
                let mut item = TranscriptItem::new(TranscriptKind::Failure, text);
                item.metadata.insert("code".into(), "api_error".into());
                self.item(out, item);
            }
            return;
        }
        let msg = self.message_id(&a.message.id);
        for block in a.message.content {
            let n = {
                let c = self.block_counts.entry(msg.clone()).or_default();
                *c += 1;
                *c
            };
            let id = self.fresh_id(format!("{msg}:{n}"));
            match block {
                Block::Text(TextBlock { text }) if !text.is_empty() => {
                    let mut item = TranscriptItem::assistant(text.clone());
                    if let Some(p) = &nested {
                        item.metadata.insert("parent_tool_use_id".into(), p.clone());
                        if let Some(d) = self.observer.subagent_delta(p, &text) {
                            self.emit(out, d);
                        }
                    } else {
                        if self.last_message != msg {
                            self.last_message.clone_from(&msg);
                            self.last_text.clear();
                        }
                        self.last_text.push_str(&text);
                        if !self.partials {
                            self.emit(out, StreamPayload::text_start(id.clone()));
                            self.emit(out, StreamPayload::text_content(id.clone(), text));
                            self.emit(out, StreamPayload::text_end(id));
                        }
                    }
                    self.item(out, item);
                }
                Block::Thinking(ThinkingBlock { thinking }) if !thinking.is_empty() => {
                    if nested.is_none() && !self.partials {
                        self.emit(out, StreamPayload::reasoning_start(id.clone()));
                        self.emit(
                            out,
                            StreamPayload::reasoning_content(id.clone(), thinking.clone()),
                        );
                        self.emit(out, StreamPayload::reasoning_end(id));
                    }
                    let mut item = TranscriptItem::thinking(thinking);
                    if let Some(p) = &nested {
                        item.metadata.insert("parent_tool_use_id".into(), p.clone());
                    }
                    self.item(out, item);
                }
                Block::ToolUse(ToolUseBlock {
                    id: call,
                    name,
                    input,
                }) if !call.is_empty() && !name.is_empty() => {
                    if nested.is_none() && !self.partials && self.tools.insert(call.clone()) {
                        let (scope, shown) = super::equip::tool_scope(&self.mcp_servers, &name);
                        let start = StreamPayload::tool_call_start_in(
                            &call,
                            shown,
                            Some(input.clone()),
                            scope,
                        );
                        self.emit(out, start);
                        self.emit(out, StreamPayload::tool_call_end(&call, None));
                    }
                    self.observe_tool_use(&call, &name, &input, nested.as_deref(), out);
                    let mut item = TranscriptItem::tool_call(call, name, Some(input));
                    if let Some(p) = &nested {
                        item.metadata.insert("parent_tool_use_id".into(), p.clone());
                    }
                    self.item(out, item);
                }
                Block::Image(img) => {
                    let (mime, data, uri) = sj::image_source(&img.source);
                    let r = self
                        .observer
                        .image(Some(&msg), &mime, data, uri, "stream-json.image");
                    self.observed(out, r);
                }
                _ => {}
            }
        }
    }

    /// Observations of one `tool_use` block: a todo list, a subagent, a
    /// capability invocation; and, inside an open subagent, the call
    /// itself, attributed to that subagent's scope.
    fn observe_tool_use(
        &mut self,
        call: &str,
        name: &str,
        input: &Value,
        nested: Option<&str>,
        out: &mut Vec<Out>,
    ) {
        let scope = nested.map(str::to_owned);
        if let Some(delegation) = nested.and_then(|p| self.observer.delegation(p))
            && self.tools.insert(call.to_owned())
        {
            let (scope, shown) = super::equip::tool_scope(&self.mcp_servers, name);
            let start = StreamKind::ToolCallStart {
                tool_call_id: LifecycleId::from(call),
                name: shown.to_owned(),
                args: Some(input.clone()),
                scope,
                delegation: Box::new(delegation),
            };
            self.emit(out, start.into());
            self.emit(out, StreamPayload::tool_call_end(call, None));
        }
        if name == sj::TODO_TOOL
            && let Some(facts) = sj::todo_facts(input)
        {
            let r = self
                .observer
                .todos(scope.clone(), facts, "claude.TodoWrite");
            self.observed(out, r);
        }
        if let Some(fact) = sj::capability_of(name, input) {
            let r = self
                .observer
                .capability_started(call, scope, fact, "claude.tool_use");
            self.observed(out, r);
        }
        if sj::is_subagent_tool(name) {
            let agent = sj::subagent_name(input);
            let data = input
                .get("description")
                .map(|d| json!({ "description": d }));
            let r = self
                .observer
                .subagent_started(call, &agent, Some(call), data, "claude.Task");
            self.observed(out, r);
        }
    }

    /// Observations of one `tool_result`: the end of the invocation or
    /// subagent its call started, its images, and — inside an open
    /// subagent — the result itself, attributed to that scope.
    fn observe_tool_result(
        &mut self,
        call: &str,
        content: &Value,
        is_error: bool,
        nested: Option<&str>,
        out: &mut Vec<Out>,
    ) {
        if let Some(delegation) = nested.and_then(|p| self.observer.delegation(p))
            && self.tools.contains(call)
            && self.results.insert(call.to_owned())
        {
            let result = StreamKind::ToolCallResult {
                tool_call_id: LifecycleId::from(call),
                result: Some(json!({ "content": content, "is_error": is_error })),
                delegation: Box::new(delegation),
            };
            self.emit(out, result.into());
        }
        for source in sj::result_images(content) {
            let (mime, data, uri) = sj::image_source(source);
            let r = self
                .observer
                .image(None, &mime, data, uri, "stream-json.tool_result");
            self.observed(out, r);
        }
        let text = text_of_result(content);
        let error = is_error.then(|| text.clone());
        if let Some(end) = self.observer.capability_finished(call, error, None) {
            self.emit(out, end);
        }
        if let Some(end) = self.observer.subagent_finished(call, is_error, text) {
            self.emit(out, end);
        }
    }

    /// Emit an observation, or report why the fact made none.
    fn observed(&mut self, out: &mut Vec<Out>, r: Result<Option<StreamPayload>, ObserveError>) {
        match r {
            Ok(Some(p)) => self.emit(out, p),
            Ok(None) => {}
            Err(e) => out.push(Out::Event(crate::observe::notice(
                self.family.driver_type,
                &e,
            ))),
        }
    }

    /// Close every observation still open (before the terminal frame).
    fn close_observations(&mut self, out: &mut Vec<Out>) {
        for p in self.observer.finish() {
            self.emit(out, p);
        }
    }

    fn user(&mut self, u: UserLine, out: &mut Vec<Out>) {
        let UserContent::Blocks(blocks) = u.message.content else {
            // A replayed prompt: the driver never passes the user's words off
            // as its own output.
            return;
        };
        for block in blocks {
            let Block::ToolResult(ToolResultBlock {
                tool_use_id,
                content,
                is_error,
            }) = block
            else {
                continue;
            };
            if tool_use_id.is_empty() {
                continue;
            }
            // CodeBuddy sets parent_tool_use_id to the result's own tool id at
            // top level; Claude uses null. Anything else is a sub-agent.
            let nested = u
                .parent_tool_use_id
                .as_ref()
                .filter(|p| **p != tool_use_id)
                .cloned();
            let text = text_of_result(&content);
            if nested.is_none()
                && self.tools.contains(&tool_use_id)
                && self.results.insert(tool_use_id.clone())
            {
                let result = json!({ "content": content, "is_error": is_error });
                self.emit(
                    out,
                    StreamPayload::tool_call_result(&tool_use_id, Some(result)),
                );
            }
            self.observe_tool_result(&tool_use_id, &content, is_error, nested.as_deref(), out);
            let mut item = TranscriptItem::tool_result(tool_use_id, text, is_error);
            if let Some(p) = nested {
                item.metadata.insert("parent_tool_use_id".into(), p);
            }
            self.item(out, item);
        }
    }

    fn sse(&mut self, event: SseEvent, out: &mut Vec<Out>) {
        match event {
            SseEvent::MessageStart(MessageStart { message }) => {
                self.current_message = self.message_id(&message.id);
            }
            SseEvent::ContentBlockStart(ContentBlockStart {
                index,
                content_block,
            }) => {
                let id = self.fresh_id(format!("{}:{index}", self.current_message));
                let open = match content_block {
                    Block::Text(_) => {
                        self.emit(out, StreamPayload::text_start(id.clone()));
                        Open::Text(id)
                    }
                    Block::Thinking(_) => {
                        self.emit(out, StreamPayload::reasoning_start(id.clone()));
                        Open::Reasoning(id)
                    }
                    Block::ToolUse(ToolUseBlock { id: call, name, .. })
                        if !call.is_empty() && !name.is_empty() && !self.tools.contains(&call) =>
                    {
                        let call_id = LifecycleId::from(call.as_str());
                        let (scope, shown) = super::equip::tool_scope(&self.mcp_servers, &name);
                        let start =
                            StreamPayload::tool_call_start_in(call_id.clone(), shown, None, scope);
                        self.emit(out, start);
                        self.tools.insert(call);
                        Open::Tool(call_id)
                    }
                    _ => return,
                };
                if let Some(previous) = self.open.insert(index, open) {
                    // A block index reused without a stop: close the old one.
                    self.close(previous, out);
                }
            }
            SseEvent::ContentBlockDelta(ContentBlockDelta { index, delta }) => {
                let Some(open) = self.open.get(&index).cloned() else {
                    return;
                };
                match (open, delta) {
                    (Open::Text(id), Delta::TextDelta(TextDelta { text })) if !text.is_empty() => {
                        self.emit(out, StreamPayload::text_content(id, text));
                    }
                    (Open::Reasoning(id), Delta::ThinkingDelta(ThinkingDelta { thinking }))
                        if !thinking.is_empty() =>
                    {
                        self.emit(out, StreamPayload::reasoning_content(id, thinking));
                    }
                    (Open::Tool(id), Delta::InputJsonDelta(InputJsonDelta { partial_json }))
                        if !partial_json.is_empty() =>
                    {
                        self.emit(out, StreamPayload::tool_call_args(id, partial_json));
                    }
                    _ => {}
                }
            }
            SseEvent::ContentBlockStop(ContentBlockStop { index }) => {
                if let Some(open) = self.open.remove(&index) {
                    self.close(open, out);
                }
            }
            SseEvent::Other => {}
        }
    }

    fn close(&mut self, open: Open, out: &mut Vec<Out>) {
        let p = match open {
            Open::Text(id) => StreamPayload::text_end(id),
            Open::Reasoning(id) => StreamPayload::reasoning_end(id),
            Open::Tool(id) => StreamPayload::tool_call_end(id, None),
        };
        self.emit(out, p);
    }

    fn close_all(&mut self, out: &mut Vec<Out>) {
        let open = std::mem::take(&mut self.open);
        for (_, o) in open {
            self.close(o, out);
        }
    }

    fn result(&mut self, r: ResultLine, raw: &[u8], out: &mut Vec<Out>) {
        if self.terminated {
            return self.notice(out, "a second result line", raw);
        }
        if let Some(why) = self.not_ours(&r) {
            let notice = self.ignored.ignore(self.family.driver_type, &why, raw);
            out.push(Out::Event(notice));
            return;
        }
        self.ensure_started(out);
        if r.session_id.is_some() {
            self.session_id.clone_from(&r.session_id);
        }
        let usage = r.usage.as_ref().map(|u| Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cached_input_tokens: u.cache_read_input_tokens,
            cache_creation_input_tokens: u.cache_creation_input_tokens,
            cost_usd: r.total_cost_usd,
            ..Default::default()
        });
        let mut item = TranscriptItem::new(TranscriptKind::Result, "");
        item.subtype = Some(r.subtype.clone());
        item.session_id.clone_from(&r.session_id);
        item.usage.clone_from(&usage);
        item.cost_usd = r.total_cost_usd;
        item.is_error = r.is_error;
        item.errors.clone_from(&r.errors);
        self.item(out, item);
        self.close_all(out);
        self.close_observations(out);
        let failure = failure_of(&r, self.api_error.as_deref());
        if let Some(f) = &failure {
            let mut item = TranscriptItem::new(TranscriptKind::Failure, f.message.clone());
            item.metadata
                .insert("code".into(), f.code.as_str().to_owned());
            self.item(out, item);
        }
        match failure {
            Some(f) => self.emit(out, StreamPayload::run_error(f)),
            None => self.emit(out, StreamPayload::run_finished(usage)),
        }
        self.terminated = true;
        self.result = Some((r, String::from_utf8_lossy(raw).into_owned()));
    }

    /// Why a `result` line is not this run's terminal, if it is not: it
    /// must follow this run's `system/init` and name its session.
    fn not_ours(&self, r: &ResultLine) -> Option<String> {
        if self.awaiting_initialize {
            return Some("a result line before initialize was answered".into());
        }
        let init = self.init.as_ref().map(Option::as_deref);
        session_mismatch("system/init", "result", init, r.session_id.as_deref())
    }

    /// End the turn with `failure` before any `result` line (the transport
    /// lost the CLI): close what is open, record the failure in the
    /// transcript and end the run lifecycle with it. [`finish`](Self::finish)
    /// then reports it, with no terminal and no checkpoint. Nothing happens
    /// once the turn ended.
    pub fn abort(&mut self, failure: RunFailure) -> Vec<Out> {
        let mut out = Vec::new();
        if self.terminated {
            return out;
        }
        self.ensure_started(&mut out);
        self.close_all(&mut out);
        self.close_observations(&mut out);
        let mut item = TranscriptItem::new(TranscriptKind::Failure, failure.message.clone());
        item.metadata
            .insert("code".into(), failure.code.as_str().to_owned());
        self.item(&mut out, item);
        self.emit(&mut out, StreamPayload::run_error(failure.clone()));
        self.terminated = true;
        self.aborted = Some(failure);
        out
    }

    /// End of stdout: close what is open, end the run lifecycle if the CLI
    /// never did, and form every response layer.
    pub fn finish(&mut self, exit: ExitFacts) -> (Vec<Out>, Parsed) {
        self.finish_with(Some(exit))
    }

    /// End of a turn served by a resident process, which keeps running: the
    /// turn ended at its `result` line (or, without one, it failed). A
    /// successful `result` with a session id is a valid checkpoint although
    /// the process did not exit.
    pub fn finish_resident(&mut self) -> (Vec<Out>, Parsed) {
        self.finish_with(None)
    }

    fn finish_with(&mut self, exit: Option<ExitFacts>) -> (Vec<Out>, Parsed) {
        let mut out = Vec::new();
        let mut missing = self.aborted.clone();
        if !self.terminated {
            let exit = exit.unwrap_or_default();
            self.close_all(&mut out);
            self.close_observations(&mut out);
            let mut f = RunFailure::missing_terminal(format!(
                "{} ended without a result line ({})",
                self.family.driver_type,
                describe_exit(exit.code, exit.signaled.then_some("a signal"))
            ));
            self.ignored.annotate(&mut f);
            let mut item = TranscriptItem::new(TranscriptKind::Failure, f.message.clone());
            item.metadata
                .insert("code".into(), f.code.as_str().to_owned());
            self.item(&mut out, item);
            self.emit(&mut out, StreamPayload::run_error(f.clone()));
            self.terminated = true;
            missing = Some(f);
        }
        let (terminal, usage, checkpoint, failure, structured) = match &self.result {
            None => (None, None, None, missing, None),
            Some((r, raw)) => {
                let failure = failure_of(r, self.api_error.as_deref());
                let usage = r.usage.as_ref().map(|u| Usage {
                    input_tokens: u.input_tokens,
                    output_tokens: u.output_tokens,
                    cached_input_tokens: u.cache_read_input_tokens,
                    cache_creation_input_tokens: u.cache_creation_input_tokens,
                    cost_usd: r.total_cost_usd,
                    ..Default::default()
                });
                // A resident process did not exit: its turn ended at `result`.
                let exited_cleanly = exit.is_none_or(|e| e.ended_cleanly);
                let clean = failure.is_none() && r.subtype == "success" && exited_cleanly;
                let checkpoint = r
                    .session_id
                    .as_ref()
                    .filter(|s| clean && !s.is_empty())
                    .map(|s| {
                        Checkpoint::valid(SessionState {
                            resume_id: s.clone(),
                            display_id: s.clone(),
                            data: Default::default(),
                        })
                    });
                (
                    TerminalPayload::new("result", raw).ok(),
                    usage,
                    checkpoint,
                    failure,
                    r.structured_output.clone(),
                )
            }
        };
        let parsed = Parsed {
            output: self.last_text.clone(),
            terminal,
            transcript: std::mem::take(&mut self.items),
            usage,
            checkpoint,
            failure,
            model: self.model.clone().unwrap_or_default(),
            structured_output: structured,
        };
        (out, parsed)
    }
}

/// The failure a result line reports, if any. Its message comes from, in
/// order: `errors[]`, the result text, the synthetic API-error text, the
/// subtype, the API status.
fn failure_of(r: &ResultLine, api_error: Option<&str>) -> Option<RunFailure> {
    if !r.is_error && r.subtype == "success" {
        return None;
    }
    let message = if !r.errors.is_empty() {
        r.errors.join("; ")
    } else if let Some(t) = r.result.as_deref().filter(|t| !t.trim().is_empty()) {
        t.to_owned()
    } else if let Some(t) = api_error.filter(|t| !t.trim().is_empty()) {
        t.to_owned()
    } else if !r.subtype.is_empty() && r.subtype != "success" {
        r.subtype.clone()
    } else if let Some(s) = r.api_error_status {
        format!("API error {s}")
    } else {
        "the turn failed".to_owned()
    };
    let code = match r.subtype.as_str() {
        "error_max_turns" => FailureCode::Other("max_turns".into()),
        "error_max_budget_usd" => FailureCode::Other("max_budget".into()),
        _ => FailureCode::AgentError,
    };
    let mut f = RunFailure::new(code, message);
    f.metadata.insert("subtype".into(), r.subtype.clone());
    if let Some(t) = &r.terminal_reason {
        f.metadata.insert("terminal_reason".into(), t.clone());
    }
    if let Some(s) = r.api_error_status {
        f.metadata.insert("api_error_status".into(), s.to_string());
    }
    Some(f)
}

fn text_of_blocks(blocks: &[Block]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

/// A tool result's content as text: a string, or the text blocks of an array.
fn text_of_result(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
