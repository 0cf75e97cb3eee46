//! The `agent --output-format stream-json` parser: stdout lines → coarse live
//! payloads (one text lifecycle per complete `assistant` message, tool
//! lifecycles from `tool_call` started/completed), transcript items, and at
//! the end every layer of the response — all from one parse.
//!
//! * `user` is the replayed prompt: never mirrored as the driver's output.
//! * `thinking` deltas (third-party parsers report them) are gathered into
//!   one thinking transcript item; no reasoning payloads are emitted, since
//!   the driver does not declare a reasoning lifecycle.
//! * `result` is the terminal line; `subtype:"success"` without `is_error`
//!   finishes the run, anything else fails it with the result text. Its
//!   top-level `session_id` is the resume identifier: a checkpoint after a
//!   successful result and a clean exit. On failure Cursor may exit non-zero
//!   with no `result` at all (error on stderr): a missing terminal.
//! * A `result` is believed only after this run's `system/init`, and only for
//!   its session when both name one; any other is a protocol-violation
//!   notice ([`crate::terminal_guard`]) and the run goes on.

use agent_adaptor_driver::{
    FailureCode, HOST_TOOL_SERVER, ProviderCoords, RunFailure, StreamPayload, ToolScope,
    TranscriptItem, TranscriptKind, Usage,
};
use serde_json::Value;

use super::wire::{Line, Message, ResultUsage};
use crate::one_shot::{Emitter, Exit};
use crate::pump::{LineProtocol, Out};
use crate::terminal_guard::{IgnoredTerminals, session_mismatch};

/// Every layer the parse formed.
pub type CursorParsed = crate::one_shot::Parsed;

#[derive(Debug)]
struct Terminal {
    success: bool,
    session_id: Option<String>,
    text: Option<String>,
    usage: Option<Usage>,
}

/// The parser of one Cursor Agent run.
#[derive(Debug)]
pub struct CursorParser {
    em: Emitter,
    model: Option<String>,
    thinking: String,
    terminal: Option<Terminal>,
    /// The first `system/init` was seen, with this session id (if any).
    init: Option<Option<String>>,
    ignored: IgnoredTerminals,
}

impl CursorParser {
    /// A parser; `payloads` turns live payloads on (the request streams).
    pub fn new(payloads: bool) -> Self {
        CursorParser {
            em: Emitter::new("cursor", payloads),
            model: None,
            thinking: String::new(),
            terminal: None,
            init: None,
            ignored: IgnoredTerminals::new(),
        }
    }

    /// Record the transcript into `transcript` (empty, made with the
    /// request's budget by [`Request::new_transcript`](agent_adaptor_driver::Request::new_transcript))
    /// instead of one with the default budget.
    pub fn with_transcript(mut self, transcript: agent_adaptor_driver::Transcript) -> Self {
        self.em.set_transcript(transcript);
        self
    }

    fn init(&mut self, line: Line, out: &mut Vec<Out>) {
        let Line::System {
            session_id,
            model,
            cwd,
            api_key_source,
            permission_mode,
            ..
        } = line
        else {
            return;
        };
        if self.init.is_none() {
            self.init = Some(session_id.clone());
        }
        if model.is_some() {
            self.model.clone_from(&model);
        }
        let source = ProviderCoords {
            thread_id: session_id.clone(),
            ..Default::default()
        };
        self.em.start(out, source);
        let mut item = TranscriptItem::new(TranscriptKind::Init, "");
        item.session_id = session_id;
        item.model = model;
        for (key, value) in [
            ("cwd", cwd),
            ("api_key_source", api_key_source),
            ("permission_mode", permission_mode),
        ] {
            if let Some(v) = value {
                item.metadata.insert(key.into(), v);
            }
        }
        self.em.item(out, item);
    }

    fn flush_thinking(&mut self, out: &mut Vec<Out>) {
        if !self.thinking.is_empty() {
            let text = std::mem::take(&mut self.thinking);
            self.em.item(out, TranscriptItem::thinking(text));
        }
    }

    fn assistant(&mut self, message: Message, out: &mut Vec<Out>) {
        let mut text = String::new();
        for block in message.content {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    text.push_str(block.get("text").and_then(Value::as_str).unwrap_or(""));
                }
                other => {
                    let kind = format!("assistant.{}", other.unwrap_or("unknown"));
                    self.em.unknown(out, &kind, block);
                }
            }
        }
        self.em.message(out, text);
    }

    fn tool_started(&mut self, id: &str, call: &Value, out: &mut Vec<Out>) {
        let (name, args) = describe(call);
        self.em.tool_call_in(out, id, &name, args, scope_of(call));
    }

    fn tool_completed(&mut self, id: &str, call: &Value, out: &mut Vec<Out>) {
        self.tool_started(id, call, out);
        let result = call
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(|inner| inner.get("result"))
            .cloned()
            .unwrap_or(Value::Null);
        let (text, is_error) = outcome(&result);
        self.em.tool_result(out, id, text, is_error, result);
    }

    fn close_all(&mut self, out: &mut Vec<Out>) {
        self.flush_thinking(out);
        self.em.close_all(out);
    }

    fn result(&mut self, line: Line, raw: &[u8], out: &mut Vec<Out>) {
        let Line::Result {
            subtype,
            is_error,
            result,
            session_id,
            usage,
        } = line
        else {
            return;
        };
        let init = self.init.as_ref().map(Option::as_deref);
        if let Some(why) = session_mismatch("system/init", "result", init, session_id.as_deref()) {
            out.push(Out::Event(self.ignored.ignore("cursor", &why, raw)));
            return;
        }
        self.close_all(out);
        let usage = usage.map(usage_of);
        let success = subtype == "success" && !is_error;
        let mut item = TranscriptItem::new(TranscriptKind::Result, "");
        item.subtype = Some(subtype.clone());
        item.session_id.clone_from(&session_id);
        item.usage.clone_from(&usage);
        item.is_error = !success;
        self.em.item(out, item);
        if success {
            self.em
                .stream(out, StreamPayload::run_finished(usage.clone()));
        } else {
            let message = result
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map_or_else(|| format!("cursor reported {subtype:?}"), str::to_owned);
            let mut f = RunFailure::new(FailureCode::AgentError, message);
            f.metadata.insert("subtype".into(), subtype);
            self.em.fail(out, f);
        }
        self.em.terminal("result", raw);
        self.terminal = Some(Terminal {
            success,
            session_id,
            text: result,
            usage,
        });
    }

    /// End of stdout: end the run if the CLI never printed its `result`,
    /// and form every layer.
    pub fn finish(&mut self, exit: &Exit) -> (Vec<Out>, CursorParsed) {
        let mut out = Vec::new();
        if !self.em.ended() {
            self.flush_thinking(&mut out);
            let f = self
                .em
                .missing_terminal(&mut out, "result", exit, &self.ignored);
            self.em.fail(&mut out, f);
        }
        let t = self.terminal.as_ref();
        let output = t
            .filter(|t| t.success)
            .and_then(|t| t.text.clone())
            .filter(|text| !text.is_empty())
            .unwrap_or_else(|| self.em.messages().concat());
        let parsed = self.em.finish(
            exit,
            t.and_then(|t| t.session_id.as_deref()),
            output,
            t.and_then(|t| t.usage.clone()),
            self.model.clone(),
        );
        (out, parsed)
    }
}

impl LineProtocol for CursorParser {
    fn line_into(&mut self, raw: &[u8], out: &mut Vec<Out>) {
        let Some((line, raw)) = self.em.decode::<Line>(out, raw) else {
            return;
        };
        match line {
            Line::System { ref subtype, .. } if subtype == "init" => self.init(line, out),
            Line::System { subtype, .. } => self.unknown(&format!("system.{subtype}"), raw, out),
            // The replayed prompt (see the module docs).
            Line::User {} => {}
            Line::Assistant { message } => {
                self.flush_thinking(out);
                self.assistant(message, out);
            }
            Line::Thinking { subtype, text } => match subtype.as_str() {
                "delta" => self.thinking.push_str(&text),
                "completed" => self.flush_thinking(out),
                other => self.unknown(&format!("thinking.{other}"), raw, out),
            },
            Line::ToolCall {
                subtype,
                call_id,
                tool_call,
            } => {
                self.flush_thinking(out);
                if call_id.is_empty() {
                    self.em.notice(out, "tool_call without a call_id", raw);
                    return;
                }
                match subtype.as_str() {
                    "started" => self.tool_started(&call_id, &tool_call, out),
                    "completed" => self.tool_completed(&call_id, &tool_call, out),
                    other => self.unknown(&format!("tool_call.{other}"), raw, out),
                }
            }
            line @ Line::Result { .. } => self.result(line, raw, out),
            Line::Unknown => {
                let value: Value = crate::json_line::from_line(raw).unwrap_or(Value::Null);
                let kind = value
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown")
                    .to_owned();
                self.em.unknown(out, &kind, value);
            }
        }
    }

    fn terminated(&self) -> bool {
        self.em.ended()
    }
}

impl CursorParser {
    fn unknown(&mut self, kind: &str, raw: &[u8], out: &mut Vec<Out>) {
        let value = crate::json_line::from_line(raw).unwrap_or(Value::Null);
        self.em.unknown(out, kind, value);
    }
}

fn usage_of(u: ResultUsage) -> Usage {
    Usage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cached_input_tokens: u.cache_read_tokens,
        cache_creation_input_tokens: u.cache_write_tokens,
        ..Default::default()
    }
}

/// A tool call's name and arguments. `{"readToolCall": {"args": …}}` is
/// `read`; `{"function": {"name", "arguments"}}` is its `name`;
/// `{"mcpToolCall": {"args": {"providerIdentifier", "toolName"|"name"}}}` is
/// `mcp:<provider>/<tool>`, or the bare `<tool>` with the tool's own input
/// (`args.args`) when the provider is [`HOST_TOOL_SERVER`]. An unknown
/// `<kind>ToolCall` keeps its kind.
pub fn describe(call: &Value) -> (String, Value) {
    let Some((key, inner)) = call.as_object().and_then(|o| o.iter().next()) else {
        return ("unknown".into(), Value::Null);
    };
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match key.as_str() {
        "function" => (
            text(inner, "name").unwrap_or_else(|| "function".into()),
            inner.get("arguments").cloned().unwrap_or(Value::Null),
        ),
        "mcpToolCall" => {
            let args = inner.get("args").cloned().unwrap_or(Value::Null);
            let provider = text(&args, "providerIdentifier").unwrap_or_else(|| "mcp".into());
            let tool = text(&args, "toolName")
                .or_else(|| text(&args, "name"))
                .unwrap_or_else(|| "unknown".into());
            if provider == HOST_TOOL_SERVER {
                // The host's tool: its own name and its own input.
                let input = args.get("args").cloned().unwrap_or(Value::Null);
                return (tool, input);
            }
            (format!("mcp:{provider}/{tool}"), args)
        }
        other => (
            other.strip_suffix("ToolCall").unwrap_or(other).to_owned(),
            inner.get("args").cloned().unwrap_or(Value::Null),
        ),
    }
}

/// Where a tool call's tool lives: an `mcpToolCall` naming its server
/// (`providerIdentifier`, the key of the server in `mcp.json`) and its tool
/// (`toolName`, else `name`) is [`ToolScope::Mcp`], or [`ToolScope::Host`]
/// for [`HOST_TOOL_SERVER`]; anything else is built in.
pub fn scope_of(call: &Value) -> ToolScope {
    let args = call.get("mcpToolCall").and_then(|c| c.get("args"));
    let text = |k: &str| {
        args.and_then(|a| a.get(k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    match (
        text("providerIdentifier"),
        text("toolName").or_else(|| text("name")),
    ) {
        (Some(HOST_TOOL_SERVER), Some(_)) => ToolScope::Host,
        (Some(server), Some(tool)) => ToolScope::Mcp {
            server: server.to_owned(),
            tool: tool.to_owned(),
        },
        _ => ToolScope::Builtin,
    }
}

/// A tool result's text and whether it failed: `{"success": …}` or
/// `{"failure"|"error"|"rejected": …}` wrappers, or a flat outcome.
pub fn outcome(result: &Value) -> (String, bool) {
    if let Some(o) = result.as_object() {
        if let Some(ok) = o.get("success") {
            return (text_of(ok), false);
        }
        for key in ["failure", "error", "rejected"] {
            if let Some(bad) = o.get(key) {
                return (text_of(bad), true);
            }
        }
    }
    // A flat shell outcome fails with a non-zero exit code.
    let failed = result
        .get("exitCode")
        .and_then(Value::as_i64)
        .is_some_and(|c| c != 0);
    (text_of(result), failed)
}

fn text_of(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Object(o) => {
            if let Some(content) = o.get("content") {
                return match content {
                    Value::String(s) => s.clone(),
                    Value::Array(items) => items
                        .iter()
                        .map(|i| match i.get("text") {
                            Some(Value::String(s)) => s.clone(),
                            Some(inner) => text_of(inner),
                            None => text_of(i),
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                    other => text_of(other),
                };
            }
            let field = |k: &str| o.get(k).and_then(Value::as_str);
            if o.contains_key("stdout") || o.contains_key("stderr") {
                let parts: Vec<&str> = [field("stdout"), field("stderr")]
                    .into_iter()
                    .flatten()
                    .filter(|s| !s.is_empty())
                    .collect();
                return parts.join("\n");
            }
            for k in ["text", "message", "error", "reason"] {
                if let Some(s) = field(k).filter(|s| !s.is_empty()) {
                    return s.to_owned();
                }
            }
            v.to_string()
        }
        other => other.to_string(),
    }
}

impl crate::one_shot::OneShotParser for CursorParser {
    fn finish(&mut self, exit: &Exit) -> (Vec<Out>, CursorParsed) {
        CursorParser::finish(self, exit)
    }
}
