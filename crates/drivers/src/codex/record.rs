//! What both Codex transports share: the turn recorder. The exec and
//! app-server parsers read their own wire formats and report *facts* to it
//! (the thread, a text delta, a completed tool item, the usage, the
//! terminal); the recorder turns them into live payloads, transcript items
//! and, at the end, every layer of the response — one implementation of the
//! lifecycle, checkpoint and failure rules for both transports.

use std::collections::BTreeMap;

use crate::observe::{CapabilityFact, Observer, TodoFact};
use agent_adaptor_driver::{
    CapabilityKind, Checkpoint, HOST_TOOL_SERVER, LifecycleId, OperationalEvent, ProviderCoords,
    RunEvent, RunFailure, SeenIds, SessionState, StreamPayload, TerminalPayload, ToolScope,
    Transcript, TranscriptItem, TranscriptKind, Usage, describe_exit,
};
use serde_json::{Value, json};

use crate::exit::ExitFacts;
use crate::pump::Out;
use crate::terminal_guard::IgnoredTerminals;

/// Data keys under which a checkpoint carries the thread's cumulative usage,
/// so the next (resumed) turn can report its own usage by difference.
pub const USAGE_KEYS: [&str; 4] = [
    "usage.input_tokens",
    "usage.cached_input_tokens",
    "usage.output_tokens",
    "usage.reasoning_output_tokens",
];

/// Token counts as Codex reports them (a thread's cumulative totals, or one
/// model response's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Input tokens.
    pub input: u64,
    /// Of the input, served from the prompt cache.
    pub cached_input: u64,
    /// Output tokens.
    pub output: u64,
    /// Of the output, reasoning tokens.
    pub reasoning: u64,
}

impl Totals {
    /// `self - earlier`, field by field, never below zero.
    pub fn minus(self, earlier: Totals) -> Totals {
        Totals {
            input: self.input.saturating_sub(earlier.input),
            cached_input: self.cached_input.saturating_sub(earlier.cached_input),
            output: self.output.saturating_sub(earlier.output),
            reasoning: self.reasoning.saturating_sub(earlier.reasoning),
        }
    }

    /// The SPI's usage.
    pub fn usage(self) -> Usage {
        Usage {
            input_tokens: Some(self.input),
            cached_input_tokens: Some(self.cached_input),
            output_tokens: Some(self.output),
            reasoning_tokens: Some(self.reasoning),
            ..Default::default()
        }
    }

    /// The totals a checkpoint carried ([`USAGE_KEYS`]); `None` without them.
    pub fn from_state(data: &BTreeMap<String, String>) -> Option<Totals> {
        let get = |k: &str| data.get(k).and_then(|v| v.parse::<u64>().ok());
        Some(Totals {
            input: get(USAGE_KEYS[0])?,
            cached_input: get(USAGE_KEYS[1]).unwrap_or(0),
            output: get(USAGE_KEYS[2]).unwrap_or(0),
            reasoning: get(USAGE_KEYS[3]).unwrap_or(0),
        })
    }

    fn store(self, data: &mut BTreeMap<String, String>) {
        let values = [self.input, self.cached_input, self.output, self.reasoning];
        for (k, v) in USAGE_KEYS.iter().zip(values) {
            data.insert((*k).to_owned(), v.to_string());
        }
    }
}

/// Every layer one parse formed (either transport).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// Completed agent messages, joined with a blank line.
    pub output: String,
    /// The last agent message (the answer; the JSON with an output schema).
    pub last_message: String,
    /// The official terminal event, exactly.
    pub terminal: Option<TerminalPayload>,
    /// Every transcript item, in emission order.
    pub transcript: Transcript,
    /// This turn's usage.
    pub usage: Option<Usage>,
    /// Valid after a successful terminal with a thread id and exit 0.
    pub checkpoint: Option<Checkpoint>,
    /// The failure, when the turn failed or never ended.
    pub failure: Option<RunFailure>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Family {
    Text,
    Reasoning,
    Tool,
}

impl Family {
    /// The prefix of a lifecycle id made up for an item without an id.
    fn what(self) -> &'static str {
        match self {
            Family::Text => "message",
            Family::Reasoning => "reasoning",
            Family::Tool => "tool",
        }
    }
}

/// One open lifecycle.
#[derive(Debug)]
struct Open {
    family: Family,
    /// The provider's item id.
    item: String,
    /// The lifecycle id (unique in the run), shared with its payloads.
    id: LifecycleId,
    /// Whether its start was emitted. A lifecycle opened while nobody
    /// observed payloads is never announced: none of its payloads are built
    /// (see [`EventSink::payloads_observed`](agent_adaptor_driver::EventSink::payloads_observed)).
    announced: bool,
}

/// The shared state machine of one Codex turn (see the module docs).
#[derive(Debug)]
pub(crate) struct Recorder {
    payloads: bool,
    /// Whether anyone can see payloads (told per line); new lifecycles are
    /// announced only while true.
    observed: bool,
    started: bool,
    terminated: bool,
    succeeded: bool,
    step_open: bool,
    /// Whether the open step's start was emitted.
    step_announced: bool,
    thread_id: Option<String>,
    turn_id: Option<String>,
    /// Open lifecycles, in opening order.
    open: Vec<Open>,
    /// Every lifecycle id handed out (looked up per item; kept as hashes).
    used_ids: SeenIds,
    counter: u64,
    /// Completed agent messages so far, joined with a blank line (built
    /// as they complete: no list of them and no join at the end).
    output: String,
    /// Where the last completed agent message starts in `output` (it is
    /// its suffix: no second copy is kept).
    last_start: usize,
    items: Transcript,
    terminal: Option<(String, String)>,
    failure: Option<RunFailure>,
    stream_error: Option<String>,
    /// The thread's cumulative usage after the turn, for the checkpoint.
    cumulative: Option<Totals>,
    usage: Option<Usage>,
    /// Terminal lines the parser did not believe (named in a missing-terminal failure).
    ignored: IgnoredTerminals,
    /// Todo lists and MCP capability invocations.
    observer: Observer,
}

impl Recorder {
    /// Record the transcript into `transcript` (made with the request's
    /// budget) instead of one with the default budget.
    pub(crate) fn set_transcript(&mut self, transcript: Transcript) {
        self.items = transcript;
    }

    /// A recorder; `payloads` turns live payloads on (`Request::streaming`).
    pub(crate) fn new(payloads: bool) -> Self {
        Recorder {
            payloads,
            observed: true,
            started: false,
            terminated: false,
            succeeded: false,
            step_open: false,
            step_announced: false,
            thread_id: None,
            turn_id: None,
            open: Vec::new(),
            used_ids: SeenIds::new(),
            counter: 0,
            output: String::new(),
            last_start: 0,
            items: Transcript::new(),
            terminal: None,
            failure: None,
            stream_error: None,
            cumulative: None,
            usage: None,
            ignored: IgnoredTerminals::new(),
            observer: Observer::new(super::OBSERVATION),
        }
    }

    /// The agent's todo list as of now (`source`: the protocol element it
    /// was read from); a list that did not change is left out, one that
    /// makes no valid list is a notice.
    pub(crate) fn todos(&mut self, out: &mut Vec<Out>, facts: Vec<TodoFact>, source: &str) {
        match self.observer.todos(None, facts, source) {
            Ok(Some(p)) if self.live() => self.emit(out, p),
            Ok(_) => {}
            Err(e) => out.push(Out::Event(crate::observe::notice("codex", &e))),
        }
    }

    pub(crate) fn terminated(&self) -> bool {
        self.terminated
    }

    /// Whether anyone can see payloads
    /// ([`EventSink::payloads_observed`](agent_adaptor_driver::EventSink::payloads_observed));
    /// once false, lifecycles not started yet are left out.
    pub(crate) fn observe(&mut self, observed: bool) {
        self.observed = observed;
    }

    /// Whether a new lifecycle (or a standalone payload) would be emitted now.
    fn live(&self) -> bool {
        self.payloads && self.observed && !self.terminated
    }

    /// Whether the tool call of `item_id` shows payloads: it is open and
    /// announced, or not open and would be announced now. Lets a parser
    /// skip building a result nobody will see.
    pub(crate) fn shows_tool(&self, item_id: &str) -> bool {
        match self.find_open(Family::Tool, item_id) {
            Some(o) => o.announced,
            None => self.live(),
        }
    }

    pub(crate) fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    pub(crate) fn turn_id(&self) -> Option<&str> {
        self.turn_id.as_deref()
    }

    pub(crate) fn set_turn(&mut self, turn_id: &str) {
        if !turn_id.is_empty() {
            self.turn_id = Some(turn_id.to_owned());
        }
    }

    /// The thread is known: the `init` transcript item (once).
    pub(crate) fn thread(&mut self, out: &mut Vec<Out>, thread_id: &str) {
        if thread_id.is_empty() || self.thread_id.is_some() {
            return;
        }
        self.thread_id = Some(thread_id.to_owned());
        self.ensure_started(out);
        let mut item = TranscriptItem::new(TranscriptKind::Init, "");
        item.session_id = Some(thread_id.to_owned());
        self.item(out, item);
    }

    fn ensure_started(&mut self, out: &mut Vec<Out>) {
        if self.payloads && !self.started {
            self.started = true;
            let source = ProviderCoords {
                thread_id: self.thread_id.clone(),
                turn_id: self.turn_id.clone(),
                ..Default::default()
            };
            out.push(Out::Stream(
                StreamPayload::run_started().with_source(source),
            ));
        }
    }

    fn emit(&mut self, out: &mut Vec<Out>, p: StreamPayload) {
        // Nothing follows the terminal frame (a late line is a notice).
        if self.payloads && !self.terminated {
            self.ensure_started(out);
            out.push(Out::Stream(p));
        }
    }

    fn item(&mut self, out: &mut Vec<Out>, item: TranscriptItem) {
        out.push(Out::Event(RunEvent::Item(self.items.share(item))));
    }

    /// An operational notice about a line (never a payload).
    pub(crate) fn notice(out: &mut Vec<Out>, text: String, raw: &[u8]) {
        let mut ev = OperationalEvent::text(text);
        let preview = String::from_utf8_lossy(&raw[..raw.len().min(2048)]).into_owned();
        ev.data = Some(json!({ "line": preview }));
        out.push(Out::Event(RunEvent::Lifecycle(ev)));
    }

    /// A terminal line the parser does not believe (`why` says whose it
    /// is): a protocol-violation notice; the run goes on.
    pub(crate) fn ignore_terminal(&mut self, out: &mut Vec<Out>, why: &str, raw: &[u8]) {
        out.push(Out::Event(self.ignored.ignore("codex", why, raw)));
    }

    /// A provider warning (non-fatal): an operational notice.
    pub(crate) fn warning(out: &mut Vec<Out>, message: String) {
        let mut ev = OperationalEvent::text(message);
        ev.metadata.insert("kind".into(), "warning".into());
        out.push(Out::Event(RunEvent::Lifecycle(ev)));
    }

    /// A fatal stream error; its message explains a failure that follows.
    pub(crate) fn stream_error(&mut self, out: &mut Vec<Out>, message: String) {
        let mut ev = OperationalEvent::text(readable(&message).unwrap_or(message.clone()));
        ev.metadata.insert("kind".into(), "stream_error".into());
        out.push(Out::Event(RunEvent::Lifecycle(ev)));
        self.stream_error = Some(message);
    }

    /// Something the protocol said that has no normalized meaning: a custom
    /// payload with its raw JSON (a notice without payloads).
    pub(crate) fn custom(&mut self, out: &mut Vec<Out>, kind: String, raw: &[u8]) {
        if self.payloads {
            if !self.live() {
                return;
            }
            let value: Value = crate::json_line::from_line(raw).unwrap_or(Value::Null);
            self.emit(
                out,
                StreamPayload::custom(kind, String::new()).with_raw(value),
            );
        } else {
            Self::notice(out, format!("codex: {kind}"), raw);
        }
    }

    /// An audit payload (HITL broadcasts); nothing without payloads.
    pub(crate) fn payload(&mut self, out: &mut Vec<Out>, p: StreamPayload) {
        self.emit(out, p);
    }

    /// The turn began: a step.
    pub(crate) fn step_started(&mut self, out: &mut Vec<Out>) {
        if !self.step_open {
            self.step_open = true;
            self.step_announced = self.live();
            if self.step_announced {
                self.emit(out, StreamPayload::step_started("turn"));
            }
        }
    }

    /// A lifecycle id for a provider item: the item id when unused in this
    /// run, else made unique (exec restarts its ids in every process).
    fn fresh_id(&mut self, item_id: &str, what: &str) -> LifecycleId {
        match self.reserve_id(item_id, what) {
            Some(id) => id.into(),
            None => item_id.into(),
        }
    }

    /// [`fresh_id`](Self::fresh_id) without allocating in the usual case:
    /// `None` means the lifecycle id is `item_id` itself.
    fn reserve_id(&mut self, item_id: &str, what: &str) -> Option<String> {
        let id = if item_id.is_empty() {
            self.counter += 1;
            format!("{what}-{}", self.counter)
        } else if self.used_ids.contains(item_id) {
            self.counter += 1;
            format!("{item_id}#{}", self.counter)
        } else {
            self.used_ids.insert(item_id);
            return None;
        };
        self.used_ids.insert(&id);
        Some(id)
    }

    /// True while the tool call of `item_id` is open (its start was seen
    /// and it has not completed): its completion needs no name or arguments.
    pub(crate) fn tool_open(&self, item_id: &str) -> bool {
        self.find_open(Family::Tool, item_id).is_some()
    }

    fn find_open(&self, family: Family, item_id: &str) -> Option<&Open> {
        self.open
            .iter()
            .find(|o| o.family == family && o.item == item_id)
    }

    fn take_open(&mut self, family: Family, item_id: &str) -> Option<Open> {
        let pos = self
            .open
            .iter()
            .position(|o| o.family == family && o.item == item_id)?;
        Some(self.open.remove(pos))
    }

    /// The open lifecycle of `item_id`, opened (and announced, when
    /// payloads are seen) if needed: its id, and whether it is announced.
    fn open_lifecycle(
        &mut self,
        out: &mut Vec<Out>,
        family: Family,
        item_id: &str,
    ) -> (LifecycleId, bool) {
        if let Some(o) = self.find_open(family, item_id) {
            return (o.id.clone(), o.announced);
        }
        let what = family.what();
        // Ids are handed out whether or not the lifecycle is announced, so
        // transcript ids do not depend on who is watching.
        let id = self.fresh_id(item_id, what);
        let announced = self.live();
        self.open.push(Open {
            family,
            item: item_id.to_owned(),
            id: id.clone(),
            announced,
        });
        if announced && family != Family::Tool {
            self.emit(out, start(family, id.clone()));
        }
        (id, announced)
    }

    /// A piece of a message (text or reasoning, token level).
    fn message_delta(&mut self, out: &mut Vec<Out>, family: Family, item_id: &str, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let (id, announced) = self.open_lifecycle(out, family, item_id);
        if announced {
            self.emit(out, content(family, id, delta));
        }
    }

    /// A completed message: closes its lifecycle, or plays it whole when no
    /// delta came.
    fn message_done(&mut self, out: &mut Vec<Out>, family: Family, item_id: &str, text: &str) {
        let open = match self.take_open(family, item_id) {
            Some(o) => Some(o),
            // Played whole, but nobody sees it: only the id is spent (so
            // later ids do not depend on who watches).
            None if !text.is_empty() && !self.live() => {
                self.reserve_id(item_id, family.what());
                None
            }
            // Played whole while watched: start, the text and end at once,
            // with no open lifecycle to record and take back.
            None if !text.is_empty() => {
                let id = self.fresh_id(item_id, family.what());
                self.emit(out, start(family, id.clone()));
                self.emit(out, content(family, id.clone(), text));
                self.emit(out, end(family, id));
                return;
            }
            None => None,
        };
        if let Some(o) = open.filter(|o| o.announced) {
            self.emit(out, end(family, o.id));
        }
    }

    /// A piece of assistant text (token level).
    pub(crate) fn text_delta(&mut self, out: &mut Vec<Out>, item_id: &str, delta: &str) {
        self.message_delta(out, Family::Text, item_id, delta);
    }

    /// A completed assistant message: closes its lifecycle (or plays it
    /// whole when no delta came), and records it.
    pub(crate) fn text_done(&mut self, out: &mut Vec<Out>, item_id: &str, text: String) {
        self.message_done(out, Family::Text, item_id, &text);
        if !text.is_empty() {
            if !self.output.is_empty() {
                self.output.push_str("\n\n");
            }
            self.last_start = self.output.len();
            self.output.push_str(&text);
            self.item(out, TranscriptItem::assistant(text));
        }
    }

    /// A piece of reasoning.
    pub(crate) fn reasoning_delta(&mut self, out: &mut Vec<Out>, item_id: &str, delta: &str) {
        self.message_delta(out, Family::Reasoning, item_id, delta);
    }

    /// Completed reasoning (see [`text_done`](Self::text_done)).
    pub(crate) fn reasoning_done(&mut self, out: &mut Vec<Out>, item_id: &str, text: String) {
        self.message_done(out, Family::Reasoning, item_id, &text);
        if !text.is_empty() {
            self.item(out, TranscriptItem::thinking(text));
        }
    }

    /// A tool call began, with its complete arguments.
    pub(crate) fn tool_started(&mut self, out: &mut Vec<Out>, item_id: &str, call: ToolCall) {
        if self.find_open(Family::Tool, item_id).is_some() {
            return;
        }
        let ToolCall { name, args, scope } = call;
        let (id, announced) = self.open_lifecycle(out, Family::Tool, item_id);
        if announced {
            let invocation = match &scope {
                ToolScope::Mcp { server, tool } => Some(CapabilityFact {
                    kind: CapabilityKind::Mcp,
                    name: tool.clone(),
                    server: Some(server.clone()),
                }),
                _ => None,
            };
            self.emit(
                out,
                StreamPayload::tool_call_start_in(id.clone(), &name, Some(args.clone()), scope),
            );
            if let Some(fact) = invocation {
                match self
                    .observer
                    .capability_started(&id, None, fact, "codex.mcp_tool_call")
                {
                    Ok(Some(p)) => self.emit(out, p),
                    Ok(None) => {}
                    Err(e) => out.push(Out::Event(crate::observe::notice("codex", &e))),
                }
            }
        }
        self.item(out, TranscriptItem::tool_call(id, name, Some(args)));
    }

    /// A tool call completed (started first if its start was never seen).
    pub(crate) fn tool_done(&mut self, out: &mut Vec<Out>, item_id: &str, tool: ToolOutcome) {
        if !self.tool_open(item_id)
            && let Some(call) = tool.call
        {
            self.tool_started(out, item_id, call);
        }
        let Some(o) = self.take_open(Family::Tool, item_id) else {
            return;
        };
        if o.announced {
            self.emit(out, StreamPayload::tool_call_end(o.id.clone(), None));
            self.emit(
                out,
                StreamPayload::tool_call_result(o.id.clone(), Some(tool.result)),
            );
            let error = tool.is_error.then(|| tool.text.clone());
            if let Some(p) = self.observer.capability_finished(&o.id, error, None) {
                self.emit(out, p);
            }
        }
        self.item(
            out,
            TranscriptItem::tool_result(o.id, tool.text, tool.is_error),
        );
    }

    /// Close every open lifecycle (before a terminal frame).
    fn close_all(&mut self, out: &mut Vec<Out>) {
        for p in self.observer.finish() {
            self.emit(out, p);
        }
        for o in std::mem::take(&mut self.open) {
            if o.announced {
                let p = match o.family {
                    Family::Tool => StreamPayload::tool_call_end(o.id, None),
                    family => end(family, o.id),
                };
                self.emit(out, p);
            }
        }
        if self.step_open {
            self.step_open = false;
            if self.step_announced {
                self.emit(out, StreamPayload::step_finished("turn"));
            }
        }
    }

    /// The turn's usage, and the thread's cumulative totals after it.
    pub(crate) fn set_usage(&mut self, turn: Option<Totals>, cumulative: Option<Totals>) {
        self.usage = turn.map(Totals::usage);
        self.cumulative = cumulative;
    }

    /// The successful terminal event (`event` is its name, `line` the exact
    /// JSON line).
    pub(crate) fn succeed(&mut self, out: &mut Vec<Out>, event: &str, line: &[u8]) {
        self.ensure_started(out);
        self.close_all(out);
        let mut item = TranscriptItem::new(TranscriptKind::Result, "");
        item.subtype = Some(event.to_owned());
        item.usage.clone_from(&self.usage);
        item.session_id.clone_from(&self.thread_id);
        self.item(out, item);
        self.emit(out, StreamPayload::run_finished(self.usage.clone()));
        self.terminal = Some((event.to_owned(), String::from_utf8_lossy(line).into_owned()));
        self.succeeded = true;
        self.terminated = true;
    }

    /// A failure terminal: the provider's terminal event when there was one.
    pub(crate) fn fail(
        &mut self,
        out: &mut Vec<Out>,
        terminal: Option<(&str, &[u8])>,
        failure: RunFailure,
    ) {
        self.ensure_started(out);
        self.close_all(out);
        let mut item = TranscriptItem::new(TranscriptKind::Failure, failure.message.clone());
        item.metadata
            .insert("code".into(), failure.code.as_str().into());
        self.item(out, item);
        self.emit(out, StreamPayload::run_error(failure.clone()));
        self.failure = Some(failure);
        self.terminal =
            terminal.map(|(e, l)| (e.to_owned(), String::from_utf8_lossy(l).into_owned()));
        self.terminated = true;
    }

    /// The failure message of a failed turn: the provider's, made readable,
    /// else the last stream error, else `fallback`.
    pub(crate) fn failure_message(&self, provider: Option<&str>, fallback: &str) -> String {
        provider
            .and_then(readable)
            .or_else(|| self.stream_error.as_deref().and_then(readable))
            .unwrap_or_else(|| fallback.to_owned())
    }

    /// End of stdout: end the run if the CLI never did, form every layer.
    /// `terminal_name` names the terminal event in the missing-terminal
    /// message.
    pub(crate) fn finish(&mut self, exit: ExitFacts, terminal_name: &str) -> (Vec<Out>, Parsed) {
        self.finish_with(exit.code, exit.ended_cleanly, terminal_name)
    }

    /// The end of a turn served by a resident process, which keeps running:
    /// the turn ended at its terminal event (or, without one, failed). A
    /// successful terminal with a thread id is a valid checkpoint although
    /// the process did not exit.
    pub(crate) fn finish_resident(&mut self, terminal_name: &str) -> (Vec<Out>, Parsed) {
        self.finish_with(None, true, terminal_name)
    }

    fn finish_with(
        &mut self,
        exit_code: Option<i32>,
        exited_cleanly: bool,
        terminal_name: &str,
    ) -> (Vec<Out>, Parsed) {
        let mut out = Vec::new();
        if !self.terminated {
            let why = self
                .stream_error
                .as_deref()
                .and_then(readable)
                .unwrap_or_else(|| {
                    let exit = describe_exit(
                        exit_code,
                        (!exited_cleanly && exit_code.is_none()).then_some("a signal"),
                    );
                    format!("codex ended without {terminal_name} ({exit})")
                });
            let mut f = RunFailure::missing_terminal(why);
            self.ignored.annotate(&mut f);
            self.fail(&mut out, None, f);
        }
        let clean = self.failure.is_none() && exited_cleanly;
        let checkpoint = self
            .thread_id
            .as_ref()
            .filter(|t| clean && self.succeeded && !t.is_empty())
            .map(|t| {
                let mut state = SessionState {
                    resume_id: t.clone(),
                    display_id: t.clone(),
                    data: Default::default(),
                };
                if let Some(totals) = self.cumulative {
                    totals.store(&mut state.data);
                }
                Checkpoint::valid(state)
            });
        let last_message = self
            .output
            .get(self.last_start..)
            .unwrap_or_default()
            .to_owned();
        let parsed = Parsed {
            output: std::mem::take(&mut self.output),
            last_message,
            terminal: self
                .terminal
                .as_ref()
                .and_then(|(event, json)| TerminalPayload::new(event.clone(), json).ok()),
            transcript: std::mem::take(&mut self.items),
            usage: self.usage.clone(),
            checkpoint,
            failure: self.failure.clone(),
        };
        (out, parsed)
    }
}

/// The content payload of a message family.
fn content(family: Family, id: impl Into<LifecycleId>, delta: &str) -> StreamPayload {
    match family {
        Family::Reasoning => StreamPayload::reasoning_content(id, delta),
        _ => StreamPayload::text_content(id, delta),
    }
}

/// The start payload of a message family.
fn start(family: Family, id: impl Into<LifecycleId>) -> StreamPayload {
    match family {
        Family::Reasoning => StreamPayload::reasoning_start(id),
        _ => StreamPayload::text_start(id),
    }
}

/// The end payload of a message family.
fn end(family: Family, id: impl Into<LifecycleId>) -> StreamPayload {
    match family {
        Family::Reasoning => StreamPayload::reasoning_end(id),
        _ => StreamPayload::text_end(id),
    }
}

/// A tool call as an item names it.
#[derive(Debug, Clone)]
pub(crate) struct ToolCall {
    /// The tool's name (`mcp:<server>/<tool>` for an MCP tool, the bare
    /// name for a host tool).
    pub name: String,
    /// Its complete arguments.
    pub args: Value,
    /// Where the tool lives.
    pub scope: ToolScope,
}

impl ToolCall {
    /// A built-in tool of Codex's.
    pub(crate) fn builtin(name: &str, args: Value) -> ToolCall {
        ToolCall {
            name: name.to_owned(),
            args,
            scope: ToolScope::Builtin,
        }
    }

    /// `tool` of the MCP server `server` (`mcpToolCall` / `mcp_tool_call`);
    /// a tool of [`HOST_TOOL_SERVER`] is the host's, under its own name.
    pub(crate) fn mcp(server: &str, tool: &str, args: Value) -> ToolCall {
        if server == HOST_TOOL_SERVER {
            return ToolCall {
                name: tool.to_owned(),
                args,
                scope: ToolScope::Host,
            };
        }
        ToolCall {
            name: format!("mcp:{server}/{tool}"),
            args,
            scope: ToolScope::Mcp {
                server: server.to_owned(),
                tool: tool.to_owned(),
            },
        }
    }

    /// A host tool (a dynamic tool of the app-server's), by its bare name.
    pub(crate) fn host(tool: &str, args: Value) -> ToolCall {
        ToolCall {
            name: tool.to_owned(),
            args,
            scope: ToolScope::Host,
        }
    }
}

/// How a completed tool call ended (and what starts it, when its start was
/// never seen).
#[derive(Debug)]
pub(crate) struct ToolOutcome {
    /// The tool name and its complete arguments, which start the call when
    /// its start was never seen. A caller leaves them out (`None`) only when
    /// [`Recorder::tool_open`] says the call is open, so as not to build them
    /// for nothing; a completion of an unknown call without them is dropped.
    pub call: Option<ToolCall>,
    /// The transcript text of the result.
    pub text: String,
    /// Whether it failed (or was declined).
    pub is_error: bool,
    /// The structured result of the live payload (`Null` when
    /// [`Recorder::shows_tool`] said nobody sees it).
    pub result: Value,
}

/// An error message made readable: a JSON error document becomes its inner
/// `error.message`; empty stays `None`.
pub(crate) fn readable(message: &str) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_unwraps_provider_error_documents() {
        assert_eq!(
            readable(r#"{"error":{"message":"mock http error 400: Bad Request"}}"#).as_deref(),
            Some("mock http error 400: Bad Request")
        );
        assert_eq!(readable("  plain  ").as_deref(), Some("plain"));
        assert_eq!(readable(" "), None);
    }

    #[test]
    fn totals_diff_and_round_trip_through_state() {
        let a = Totals {
            input: 200,
            cached_input: 40,
            output: 20,
            reasoning: 6,
        };
        let b = Totals {
            input: 100,
            cached_input: 20,
            output: 10,
            reasoning: 3,
        };
        assert_eq!(a.minus(b), b);
        assert_eq!(b.minus(a), Totals::default());
        let mut data = BTreeMap::new();
        a.store(&mut data);
        assert_eq!(Totals::from_state(&data), Some(a));
        assert_eq!(Totals::from_state(&BTreeMap::new()), None);
    }
}
