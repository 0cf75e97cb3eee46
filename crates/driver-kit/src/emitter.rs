//! The conventions every line-protocol parser keeps, kept once
//! ([`Emitter`]): `run.started` exactly once and first; live payloads only
//! when the request streams (`streaming = false`: the transcript and the
//! response only); one text lifecycle per assistant message, closed before a
//! tool call; each tool lifecycle opened once and ended once; a failure
//! reported three ways (transcript item, `run.error`, `Response.failure`);
//! the terminal line kept exactly; and the shapes of notices.
//!
//! Protocol semantics stay in each driver's parser; nothing here looks
//! inside a provider's JSON.

use std::collections::HashSet;

use agent_adaptor_driver::{
    Checkpoint, LifecycleId, OperationalEvent, ProviderCoords, RunEvent, RunFailure, SessionState,
    StreamPayload, TerminalPayload, ToolScope, Transcript, TranscriptItem, TranscriptKind, Usage,
};
use foldhash::fast::RandomState;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::one_shot::{Exit, Parsed, missing_terminal};
use crate::pump::Out;
use crate::terminal_guard::IgnoredTerminals;

/// Longest stdout line kept in a notice (the whole line is in the raw capture).
const NOTICE_PREVIEW_BYTES: usize = 2048;

/// The text lifecycle of the assistant message being written.
#[derive(Debug, Clone)]
struct OpenText {
    id: LifecycleId,
    text: String,
}

/// The bookkeeping a parser does around its protocol: the run's and the
/// lifecycles' order, live payloads only when the request streams, the
/// transcript kept item by item as it is emitted (the mirror the response
/// returns), the failure, the exact terminal line, and the shapes of notices
/// and custom payloads.
#[derive(Debug, Clone)]
pub struct Emitter {
    driver: &'static str,
    payloads: bool,
    started: bool,
    items: Transcript,
    text: Option<OpenText>,
    messages: Vec<String>,
    open_tools: Vec<String>,
    tools: HashSet<String, RandomState>,
    results: HashSet<String, RandomState>,
    terminal: Option<TerminalPayload>,
    ended: bool,
    failure: Option<RunFailure>,
}

impl Emitter {
    /// An emitter for `driver` (the prefix of notices and custom kinds);
    /// `payloads` turns live payloads on (the request's `streaming`).
    pub fn new(driver: &'static str, payloads: bool) -> Self {
        Emitter {
            driver,
            payloads,
            started: false,
            items: Transcript::new(),
            text: None,
            messages: Vec::new(),
            open_tools: Vec::new(),
            tools: HashSet::default(),
            results: HashSet::default(),
            terminal: None,
            ended: false,
            failure: None,
        }
    }

    /// An emitter for a run of `req`: live payloads when it streams, its
    /// transcript recorded with its budget
    /// ([`Request::new_transcript`](agent_adaptor_driver::Request::new_transcript)).
    pub fn for_request(driver: &'static str, req: &agent_adaptor_driver::Request) -> Self {
        let mut em = Emitter::new(driver, req.streaming);
        em.set_transcript(req.new_transcript());
        em
    }

    /// True when live payloads are emitted.
    pub fn payloads(&self) -> bool {
        self.payloads
    }

    /// Decode one stdout line as the protocol's line type `T`: `None` for a
    /// blank line, for a line that is not a protocol frame (a notice, see
    /// [`not_protocol`](Self::not_protocol)) and for any line after the
    /// terminal line (a notice). Else the frame, with the line trimmed.
    pub fn decode<'a, T: Deserialize<'a>>(
        &self,
        out: &mut Vec<Out>,
        raw: &'a [u8],
    ) -> Option<(T, &'a [u8])> {
        let raw = raw.trim_ascii();
        if raw.is_empty() {
            return None;
        }
        let line = match crate::json_line::from_line::<T>(raw) {
            Ok(line) => line,
            Err(e) => {
                self.not_protocol(out, raw, &e);
                return None;
            }
        };
        if self.ended {
            let after = self.terminal.as_ref().map_or("terminal", |t| &t.event);
            self.notice(out, &format!("line after the {after} line"), raw);
            return None;
        }
        Some((line, raw))
    }

    /// Emit `run.started` with the provider's coordinates, unless it was
    /// emitted already (or payloads are off).
    pub fn start(&mut self, out: &mut Vec<Out>, source: ProviderCoords) {
        if self.payloads && !self.started {
            self.started = true;
            out.push(Out::Stream(
                StreamPayload::run_started().with_source(source),
            ));
        }
    }

    /// Emit a live payload (after `run.started`), when payloads are on.
    pub fn stream(&mut self, out: &mut Vec<Out>, payload: StreamPayload) {
        if self.payloads {
            self.start(out, ProviderCoords::default());
            out.push(Out::Stream(payload));
        }
    }

    /// Emit a transcript item and keep it for the response.
    pub fn item(&mut self, out: &mut Vec<Out>, item: TranscriptItem) {
        out.push(Out::Event(RunEvent::Item(self.items.share(item))));
    }

    /// Append `chunk` to the assistant message being written, opening its
    /// text lifecycle (`message-<n>`) first if none is open.
    pub fn text(&mut self, out: &mut Vec<Out>, chunk: String) {
        if chunk.is_empty() {
            return;
        }
        let id = match &mut self.text {
            Some(open) => {
                open.text.push_str(&chunk);
                open.id.clone()
            }
            None => {
                let id = LifecycleId::from(format!("message-{}", self.messages.len() + 1));
                self.stream(out, StreamPayload::text_start(id.clone()));
                self.text = Some(OpenText {
                    id: id.clone(),
                    text: chunk.clone(),
                });
                id
            }
        };
        self.stream(out, StreamPayload::text_content(id, chunk));
    }

    /// Close the assistant message being written, if any: its lifecycle
    /// ends and it becomes an assistant transcript item.
    pub fn close_text(&mut self, out: &mut Vec<Out>) {
        if let Some(open) = self.text.take() {
            self.stream(out, StreamPayload::text_end(open.id));
            self.item(out, TranscriptItem::assistant(open.text.clone()));
            self.messages.push(open.text);
        }
    }

    /// A whole assistant message: a text lifecycle of its own.
    pub fn message(&mut self, out: &mut Vec<Out>, text: String) {
        self.close_text(out);
        self.text(out, text);
        self.close_text(out);
    }

    /// The assistant messages closed so far, in order.
    pub fn messages(&self) -> &[String] {
        &self.messages
    }

    /// A tool call `id` starts: the message being written is closed, the
    /// tool's lifecycle opens and the call becomes a transcript item.
    /// Returns false, and emits nothing, when `id` was started before.
    pub fn tool_call(&mut self, out: &mut Vec<Out>, id: &str, name: &str, args: Value) -> bool {
        self.tool_call_in(out, id, name, args, ToolScope::Builtin)
    }

    /// As [`tool_call`](Self::tool_call), for a tool that lives in `scope`
    /// (an MCP server's tool: [`ToolScope::Mcp`]).
    pub fn tool_call_in(
        &mut self,
        out: &mut Vec<Out>,
        id: &str,
        name: &str,
        args: Value,
        scope: ToolScope,
    ) -> bool {
        self.tool_call_described(out, id, name, args, scope, None, &[])
    }

    /// As [`tool_call_in`](Self::tool_call_in), describing the call
    /// further: `raw` (the provider's own form of the call) on the start
    /// payload, `metadata` on the transcript item.
    #[allow(clippy::too_many_arguments)] // one call, described whole
    pub fn tool_call_described(
        &mut self,
        out: &mut Vec<Out>,
        id: &str,
        name: &str,
        args: Value,
        scope: ToolScope,
        raw: Option<Value>,
        metadata: &[(&str, String)],
    ) -> bool {
        if !self.tools.insert(id.to_owned()) {
            return false;
        }
        self.close_text(out);
        self.open_tools.push(id.to_owned());
        let mut start = StreamPayload::tool_call_start_in(id, name, Some(args.clone()), scope);
        if let Some(raw) = raw {
            start = start.with_raw(raw);
        }
        self.stream(out, start);
        let mut item = TranscriptItem::tool_call(id, name, Some(args));
        for (k, v) in metadata {
            item.metadata.insert((*k).to_owned(), v.clone());
        }
        self.item(out, item);
        true
    }

    /// The result of tool call `id`: its lifecycle ends (when open) with
    /// `result` as the result payload (once), and a tool-result transcript
    /// item says `text`, carrying `result` as its data.
    pub fn tool_result(
        &mut self,
        out: &mut Vec<Out>,
        id: &str,
        text: String,
        is_error: bool,
        result: Value,
    ) {
        if let Some(pos) = self.open_tools.iter().position(|t| t == id) {
            self.open_tools.remove(pos);
            self.stream(out, StreamPayload::tool_call_end(id, None));
            if self.results.insert(id.to_owned()) {
                self.stream(
                    out,
                    StreamPayload::tool_call_result(id, Some(result.clone())),
                );
            }
        }
        let mut item = TranscriptItem::tool_result(id, text, is_error);
        item.data = Some(result);
        self.item(out, item);
    }

    /// Close every open lifecycle: the message being written, then the tool
    /// calls without a result (before the run's end).
    pub fn close_all(&mut self, out: &mut Vec<Out>) {
        self.close_text(out);
        for id in std::mem::take(&mut self.open_tools) {
            self.stream(out, StreamPayload::tool_call_end(id, None));
        }
    }

    /// The protocol's terminal line `name` was seen: the run is over, and
    /// `raw` is kept exactly as the response's terminal payload.
    pub fn terminal(&mut self, name: &str, raw: &[u8]) {
        self.ended = true;
        self.terminal = TerminalPayload::new(name, &String::from_utf8_lossy(raw)).ok();
    }

    /// True once the run ended: the terminal line was seen, or it failed.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// End the run as failed, the three ways a failure is reported: a
    /// failure transcript item, `run.error` (when payloads are on), and
    /// the response's failure ([`finish`](Self::finish)).
    pub fn fail(&mut self, out: &mut Vec<Out>, failure: RunFailure) {
        let mut item = TranscriptItem::new(TranscriptKind::Failure, failure.message.clone());
        item.metadata
            .insert("code".into(), failure.code.as_str().to_owned());
        self.item(out, item);
        self.stream(out, StreamPayload::run_error(failure.clone()));
        self.failure = Some(failure);
        self.ended = true;
    }

    /// The failure of a run whose stdout ended without its `terminal` line
    /// ([`missing_terminal`], saying what `ignored` holds), after every open
    /// lifecycle is closed. Report it with [`fail`](Self::fail).
    pub fn missing_terminal(
        &mut self,
        out: &mut Vec<Out>,
        terminal: &str,
        exit: &Exit,
        ignored: &IgnoredTerminals,
    ) -> RunFailure {
        self.close_all(out);
        let mut failure = missing_terminal(self.driver, terminal, exit);
        ignored.annotate(&mut failure);
        failure
    }

    /// The failure reported so far.
    pub fn failure(&self) -> Option<&RunFailure> {
        self.failure.as_ref()
    }

    /// The transcript so far, in emission order.
    pub fn transcript(&self) -> &Transcript {
        &self.items
    }

    /// Record the transcript into `transcript` (empty, made with the
    /// request's budget by [`Request::new_transcript`](agent_adaptor_driver::Request::new_transcript))
    /// instead of one with the default budget.
    pub fn set_transcript(&mut self, transcript: Transcript) {
        self.items = transcript;
    }

    /// Hand the transcript over to the response (no copy), leaving an
    /// empty one.
    pub fn take_transcript(&mut self) -> Transcript {
        std::mem::take(&mut self.items)
    }

    /// Every layer of the response: `output`, `usage` and `model` as the
    /// parser formed them, and what the emitter kept — the exact terminal
    /// line, the transcript (handed over), the failure, and a checkpoint
    /// resuming `session_id`, valid only after the terminal line of a run
    /// that did not fail and a clean exit.
    pub fn finish(
        &mut self,
        exit: &Exit,
        session_id: Option<&str>,
        output: String,
        usage: Option<Usage>,
        model: Option<String>,
    ) -> Parsed {
        let resumable = self.terminal.is_some() && self.failure.is_none() && exit.clean();
        let checkpoint = session_id
            .filter(|id| resumable && !id.is_empty())
            .map(|id| {
                Checkpoint::valid(SessionState {
                    resume_id: id.to_owned(),
                    display_id: id.to_owned(),
                    data: Default::default(),
                })
            });
        Parsed {
            output,
            terminal: self.terminal.clone(),
            transcript: self.take_transcript(),
            usage,
            checkpoint,
            failure: self.failure.clone(),
            model,
        }
    }

    /// An operational notice `"<driver>: <what>"` about one stdout line, with
    /// a bounded preview of the line.
    pub fn notice(&self, out: &mut Vec<Out>, what: &str, raw: &[u8]) {
        let mut ev = OperationalEvent::text(format!("{}: {what}", self.driver));
        ev.metadata.insert("bytes".into(), raw.len().to_string());
        let preview = String::from_utf8_lossy(&raw[..raw.len().min(NOTICE_PREVIEW_BYTES)]);
        ev.data = Some(json!({ "line": preview }));
        out.push(Out::Event(RunEvent::Lifecycle(ev)));
    }

    /// A stdout line that is not a protocol frame: a notice saying whether it
    /// looked like JSON (malformed) or was plain text.
    pub fn not_protocol(&self, out: &mut Vec<Out>, raw: &[u8], error: &serde_json::Error) {
        let what = if raw.first() == Some(&b'{') {
            format!("malformed protocol line ({error})")
        } else {
            "non-JSON stdout line".to_owned()
        };
        self.notice(out, &what, raw);
    }

    /// An event the parser does not know, kept whole: a custom payload
    /// `"<driver>.<kind>"` carrying the raw JSON when payloads are on, else a
    /// notice carrying it.
    pub fn unknown(&mut self, out: &mut Vec<Out>, kind: &str, raw: Value) {
        let name = format!("{}.{kind}", self.driver);
        if self.payloads {
            self.stream(
                out,
                StreamPayload::custom(name, String::new()).with_raw(raw),
            );
        } else {
            let mut ev = OperationalEvent::text(format!("{}: unknown event {kind:?}", self.driver));
            ev.metadata.insert("kind".into(), name);
            ev.data = Some(raw);
            out.push(Out::Event(RunEvent::Lifecycle(ev)));
        }
    }

    /// A warning or error the provider reported without ending the run.
    pub fn warning(&self, out: &mut Vec<Out>, message: &str, severity: &str) {
        let mut ev = OperationalEvent::text(format!("{}: {message}", self.driver));
        ev.metadata.insert("kind".into(), "warning".into());
        ev.metadata.insert("severity".into(), severity.to_owned());
        out.push(Out::Event(RunEvent::Lifecycle(ev)));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use agent_adaptor_driver::FailureCode;

    use super::*;
    use crate::exit::ExitFacts;

    /// The kinds of the payloads in `out`, and `item:<kind>` for items.
    fn kinds(out: &[Out]) -> Vec<String> {
        out.iter()
            .map(|o| match o {
                Out::Stream(p) => p.kind.name().to_owned(),
                Out::Event(RunEvent::Item(i)) => format!("item:{}", i.kind.as_str()),
                Out::Event(_) => "event".into(),
                Out::Control(_) => "control".into(),
            })
            .collect()
    }

    fn exit(code: i32) -> Exit {
        Exit {
            process: ExitFacts::exited(code),
            stderr_tail: None,
        }
    }

    #[test]
    fn text_is_one_lifecycle_closed_before_a_tool_call() {
        let mut e = Emitter::new("x", true);
        let mut out = Vec::new();
        e.text(&mut out, "Hel".into());
        e.text(&mut out, "lo".into());
        assert!(e.tool_call(&mut out, "t1", "read", json!({})));
        assert!(!e.tool_call(&mut out, "t1", "read", json!({})), "once");
        e.tool_result(&mut out, "t1", "ok".into(), false, json!("ok"));
        e.text(&mut out, "done".into());
        e.close_all(&mut out);
        let want = [
            "run.started",
            "text.start",
            "text.content",
            "text.content",
            "text.end",
            "item:assistant",
            "tool_call.start",
            "item:tool_call",
            "tool_call.end",
            "tool_call.result",
            "item:tool_result",
            "text.start",
            "text.content",
            "text.end",
            "item:assistant",
        ];
        assert_eq!(kinds(&out), want);
        assert_eq!(e.messages(), ["Hello", "done"]);
    }

    #[test]
    fn without_streaming_only_the_transcript_is_emitted() {
        let mut e = Emitter::new("x", false);
        let mut out = Vec::new();
        e.start(&mut out, ProviderCoords::default());
        e.message(&mut out, "hi".into());
        e.tool_call(&mut out, "t1", "read", json!({}));
        e.fail(&mut out, RunFailure::new(FailureCode::AgentError, "boom"));
        assert!(out.iter().all(|o| !matches!(o, Out::Stream(_))));
        assert_eq!(
            kinds(&out),
            ["item:assistant", "item:tool_call", "item:failure"]
        );
    }

    #[test]
    fn a_failure_is_reported_three_ways_and_forbids_a_checkpoint() {
        let mut e = Emitter::new("x", true);
        let mut out = Vec::new();
        let f = e.missing_terminal(&mut out, "result", &exit(1), &IgnoredTerminals::new());
        assert!(f.is_missing_terminal());
        e.fail(&mut out, f.clone());
        assert!(e.ended());
        assert_eq!(kinds(&out), ["item:failure", "run.started", "run.error"]);
        let parsed = e.finish(&exit(0), Some("s1"), String::new(), None, None);
        assert_eq!(parsed.failure, Some(f));
        assert_eq!(parsed.checkpoint, None);
        assert_eq!(parsed.transcript.len(), 1);
    }

    #[test]
    fn the_terminal_line_is_kept_exactly_and_ends_the_run() {
        let mut e = Emitter::new("x", true);
        let mut out = Vec::new();
        let line = br#"{"type":"result",  "ok":true}"#;
        let decoded = e.decode::<Value>(&mut out, b"  \n");
        assert!(
            decoded.is_none() && out.is_empty(),
            "blank lines are nothing"
        );
        assert!(e.decode::<Value>(&mut out, b"not json").is_none());
        assert_eq!(out.len(), 1, "a notice");
        let (_, raw) = e.decode::<Value>(&mut out, line).unwrap();
        e.terminal("result", raw);
        assert!(e.ended());
        assert!(e.decode::<Value>(&mut out, b"{}").is_none());
        assert!(matches!(&out[1], Out::Event(RunEvent::Lifecycle(ev))
            if ev.text == "x: line after the result line"));
        let parsed = e.finish(&exit(0), Some("s1"), String::new(), None, None);
        let terminal = parsed.terminal.unwrap();
        assert_eq!(terminal.event, "result");
        assert_eq!(terminal.json.get().as_bytes(), line);
        assert!(
            parsed.checkpoint.is_some(),
            "a clean end after the terminal"
        );
        let mut e = Emitter::new("x", true);
        e.terminal("result", line);
        let unclean = e.finish(&exit(3), Some("s1"), String::new(), None, None);
        assert_eq!(unclean.checkpoint, None);
    }

    #[test]
    fn a_malformed_protocol_line_is_a_notice_and_the_run_goes_on() {
        let e = Emitter::new("x", true);
        let mut out = Vec::new();
        assert!(e.decode::<Value>(&mut out, br#"{"type":"text","#).is_none());
        assert!(matches!(&out[..], [Out::Event(RunEvent::Lifecycle(ev))]
            if ev.text.starts_with("x: malformed protocol line (")
                && ev.data == Some(json!({"line": r#"{"type":"text","#}))));
        assert!(!e.ended(), "a bad line never ends the run");
        assert!(e.decode::<Value>(&mut out, br#"{"type":"text"}"#).is_some());
    }

    #[test]
    fn unknown_events_are_kept_whole() {
        let mut e = Emitter::new("x", false);
        let mut out = Vec::new();
        e.unknown(&mut out, "new", json!({"type": "new", "a": 1}));
        assert!(matches!(&out[0], Out::Event(RunEvent::Lifecycle(ev))
            if ev.data == Some(json!({"type": "new", "a": 1}))));
        let mut e = Emitter::new("x", true);
        let mut out = Vec::new();
        e.unknown(&mut out, "new", json!({"type": "new"}));
        assert_eq!(out.len(), 2, "run.started, then the custom payload");
    }
}
