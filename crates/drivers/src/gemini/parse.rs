//! The `gemini --output-format stream-json` parser: stdout lines → live
//! payloads (token-level text from `message` deltas, tool lifecycles),
//! transcript items, and at the end every layer of the response — all from
//! one parse.
//!
//! * Assistant text arrives as `message{role:"assistant",delta:true}`
//!   chunks. Chunks up to the next tool event (or the end) form one message:
//!   one text lifecycle live, one assistant transcript item when it closes.
//! * The replayed `message{role:"user"}` is the host's own prompt; a driver
//!   never passes it off as output, so it is not mirrored.
//! * `result` is the terminal line: `status:"success"` finishes the run,
//!   anything else fails it with the error's message (or the message of the
//!   last `error` event, which is how an invalid model stream is reported).
//! * The resume identifier is `init.session_id` (the `result` line carries
//!   none); it becomes a checkpoint only after a successful `result` and a
//!   clean exit.
//! * A `result` is believed only after this run's `init`, and only for its
//!   session if it names one; any other is a protocol-violation notice
//!   ([`crate::terminal_guard`]) and the run goes on.

use agent_adaptor_driver::{
    FailureCode, ProviderCoords, RunFailure, StreamPayload, TranscriptItem, TranscriptKind, Usage,
};
use serde_json::{Value, json};

use super::wire::{ErrorBody, Event, Stats};
use crate::one_shot::{Emitter, Exit};
use crate::pump::{LineProtocol, Out};
use crate::terminal_guard::{IgnoredTerminals, session_mismatch};

/// Every layer the parse formed.
pub type GeminiParsed = crate::one_shot::Parsed;

/// The parser of one Gemini CLI run.
#[derive(Debug)]
pub struct GeminiParser {
    em: Emitter,
    session_id: Option<String>,
    model: Option<String>,
    last_error: Option<String>,
    /// The usage the `result` line reported.
    usage: Option<Usage>,
    /// This run's `init` was seen (its session is `session_id`).
    init_seen: bool,
    ignored: IgnoredTerminals,
    /// The run's MCP servers (their tools are `mcp_<server>_<tool>`).
    mcp_servers: Vec<String>,
}

impl GeminiParser {
    /// A parser; `payloads` turns live payloads on (the request streams).
    pub fn new(payloads: bool) -> Self {
        GeminiParser {
            em: Emitter::new("gemini", payloads),
            session_id: None,
            model: None,
            last_error: None,
            usage: None,
            init_seen: false,
            ignored: IgnoredTerminals::new(),
            mcp_servers: Vec::new(),
        }
    }

    /// The run's MCP server names: a call to one of their tools gets
    /// [`ToolScope::Mcp`](agent_adaptor_driver::ToolScope::Mcp), one of
    /// [`HOST_TOOL_SERVER`](agent_adaptor_driver::HOST_TOOL_SERVER)'s
    /// [`ToolScope::Host`](agent_adaptor_driver::ToolScope::Host)
    /// (see [`super::mcp::resolve`]).
    pub fn with_mcp_servers(mut self, servers: Vec<String>) -> Self {
        self.mcp_servers = servers;
        self
    }

    /// Record the transcript into `transcript` (empty, made with the
    /// request's budget by [`Request::new_transcript`](agent_adaptor_driver::Request::new_transcript))
    /// instead of one with the default budget.
    pub fn with_transcript(mut self, transcript: agent_adaptor_driver::Transcript) -> Self {
        self.em.set_transcript(transcript);
        self
    }

    fn init(&mut self, session_id: String, model: Option<String>, out: &mut Vec<Out>) {
        // The first init is this run's session.
        let first = !std::mem::replace(&mut self.init_seen, true);
        if first && !session_id.is_empty() {
            self.session_id = Some(session_id.clone());
        }
        if model.is_some() {
            self.model.clone_from(&model);
        }
        let source = ProviderCoords {
            thread_id: self.session_id.clone(),
            ..Default::default()
        };
        self.em.start(out, source);
        let mut item = TranscriptItem::new(TranscriptKind::Init, "");
        item.session_id = self.session_id.clone();
        item.model = model;
        self.em.item(out, item);
    }

    fn tool_use(&mut self, name: String, id: String, args: Value, raw: &[u8], out: &mut Vec<Out>) {
        if id.is_empty() || name.is_empty() {
            return self
                .em
                .notice(out, "tool_use without a tool_id or tool_name", raw);
        }
        let (scope, name) = super::mcp::resolve(&name, &self.mcp_servers);
        if !self.em.tool_call_in(out, &id, &name, args, scope) {
            self.em.notice(out, "a repeated tool_use", raw);
        }
    }

    fn tool_result(
        &mut self,
        id: String,
        status: String,
        output: Option<String>,
        error: Option<ErrorBody>,
        raw: &[u8],
        out: &mut Vec<Out>,
    ) {
        if id.is_empty() {
            return self.em.notice(out, "tool_result without a tool_id", raw);
        }
        let is_error = status != "success" || error.is_some();
        let text = match (&error, &output) {
            (Some(e), _) if is_error && !e.message.is_empty() => e.message.clone(),
            (_, Some(o)) => o.clone(),
            _ => String::new(),
        };
        let result = json!({
            "status": status,
            "output": output,
            "error": error.as_ref().map(|e| json!({"type": e.kind, "message": e.message})),
        });
        self.em.tool_result(out, &id, text, is_error, result);
    }

    fn result(
        &mut self,
        status: String,
        error: Option<ErrorBody>,
        stats: Option<Stats>,
        raw: &[u8],
        out: &mut Vec<Out>,
    ) {
        self.em.close_all(out);
        let usage = stats.map(|s| Usage {
            input_tokens: Some(s.input_tokens),
            output_tokens: Some(s.output_tokens),
            cached_input_tokens: Some(s.cached),
            total_tokens: Some(s.total_tokens),
            ..Default::default()
        });
        let success = status == "success";
        let mut item = TranscriptItem::new(TranscriptKind::Result, "");
        item.subtype = Some(status.clone());
        item.session_id.clone_from(&self.session_id);
        item.usage.clone_from(&usage);
        item.is_error = !success;
        self.em.item(out, item);
        if success {
            self.em
                .stream(out, StreamPayload::run_finished(usage.clone()));
        } else {
            let failure = failure_of(&status, error.as_ref(), self.last_error.as_deref());
            self.em.fail(out, failure);
        }
        self.em.terminal("result", raw);
        self.usage = usage;
    }

    /// End of stdout: end the run if the CLI never printed its `result`,
    /// and form every layer.
    pub fn finish(&mut self, exit: &Exit) -> (Vec<Out>, GeminiParsed) {
        let mut out = Vec::new();
        if !self.em.ended() {
            let mut f = self
                .em
                .missing_terminal(&mut out, "result", exit, &self.ignored);
            if let Some(e) = &self.last_error {
                f.metadata.insert("last_error".into(), e.clone());
            }
            self.em.fail(&mut out, f);
        }
        let output = self.em.messages().last().cloned().unwrap_or_default();
        let parsed = self.em.finish(
            exit,
            self.session_id.as_deref(),
            output,
            self.usage.clone(),
            self.model.clone(),
        );
        (out, parsed)
    }
}

impl LineProtocol for GeminiParser {
    fn line_into(&mut self, raw: &[u8], out: &mut Vec<Out>) {
        let Some((event, raw)) = self.em.decode::<Event>(out, raw) else {
            return;
        };
        match event {
            Event::Init { session_id, model } => self.init(session_id, model, out),
            Event::Message {
                role,
                content,
                delta,
            } => match role.as_str() {
                "assistant" if delta => self.em.text(out, content),
                // A whole message: a message of its own.
                "assistant" => self.em.message(out, content),
                // The replayed prompt (see the module docs).
                "user" => {}
                other => self.unknown(&format!("message.{other}"), raw, out),
            },
            Event::ToolUse {
                tool_name,
                tool_id,
                parameters,
            } => {
                self.em.close_text(out);
                self.tool_use(tool_name, tool_id, parameters, raw, out);
            }
            Event::ToolResult {
                tool_id,
                status,
                output,
                error,
            } => {
                self.em.close_text(out);
                self.tool_result(tool_id, status, output, error, raw, out);
            }
            Event::Error { severity, message } => {
                let text = readable(&message).unwrap_or_else(|| "an empty error event".into());
                self.em.warning(out, &text, &severity);
                if severity != "warning" {
                    self.last_error = Some(text);
                }
            }
            Event::Result {
                status,
                error,
                stats,
                session_id,
            } => {
                let init = self.init_seen.then_some(self.session_id.as_deref());
                match session_mismatch("init", "result", init, session_id.as_deref()) {
                    Some(why) => out.push(Out::Event(self.ignored.ignore("gemini", &why, raw))),
                    None => self.result(status, error, stats, raw, out),
                }
            }
            Event::Unknown => {
                let kind = type_of(raw);
                self.unknown(&kind, raw, out);
            }
        }
    }

    fn terminated(&self) -> bool {
        self.em.ended()
    }
}

impl GeminiParser {
    fn unknown(&mut self, kind: &str, raw: &[u8], out: &mut Vec<Out>) {
        let value = crate::json_line::from_line(raw).unwrap_or(Value::Null);
        self.em.unknown(out, kind, value);
    }
}

/// The `type` of a JSON line, or `unknown`.
fn type_of(raw: &[u8]) -> String {
    crate::json_line::from_line::<Value>(raw)
        .ok()
        .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

/// The failure a non-success `result` reports.
fn failure_of(status: &str, error: Option<&ErrorBody>, last_error: Option<&str>) -> RunFailure {
    let message = error
        .and_then(|e| readable(&e.message))
        .or_else(|| last_error.map(str::to_owned))
        .unwrap_or_else(|| format!("gemini reported status {status:?}"));
    let mut f = RunFailure::new(FailureCode::AgentError, message);
    f.metadata.insert("status".into(), status.to_owned());
    if let Some(e) = error {
        if !e.kind.is_empty() {
            f.metadata.insert("error_type".into(), e.kind.clone());
        }
        if !e.message.is_empty() && e.message != f.message {
            f.metadata
                .insert("provider_message".into(), e.message.clone());
        }
    }
    f
}

/// Gemini's error text made readable: `[API Error: …]` is unwrapped, and a
/// provider JSON error document inside becomes its `error.message`. Empty
/// stays `None`.
pub fn readable(message: &str) -> Option<String> {
    let m = message.trim();
    let inner = match m.strip_prefix("[API Error: ") {
        Some(rest) => rest,
        None => m,
    };
    if let Some(pos) = inner.find('{') {
        let mut values = serde_json::Deserializer::from_str(&inner[pos..]).into_iter::<Value>();
        if let Some(Ok(v)) = values.next()
            && let Some(text) = v
                .get("error")
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .filter(|t| !t.trim().is_empty())
        {
            return Some(text.trim().to_owned());
        }
    }
    let text = if inner.len() < m.len() {
        // `[API Error: <text>]` and maybe advice on the following lines.
        let first = inner.lines().next().unwrap_or_default();
        first.strip_suffix(']').unwrap_or(first).trim()
    } else {
        m
    };
    (!text.is_empty()).then(|| text.to_owned())
}

impl crate::one_shot::OneShotParser for GeminiParser {
    fn finish(&mut self, exit: &Exit) -> (Vec<Out>, GeminiParsed) {
        GeminiParser::finish(self, exit)
    }
}

#[cfg(test)]
mod tests {
    use super::readable;

    #[test]
    fn api_errors_read_as_the_provider_message() {
        for (raw, want) in [
            (
                r#"[API Error: {"error":{"code":400,"message":"mock http error 400: Bad Request","status":"INVALID_ARGUMENT"}}]"#,
                "mock http error 400: Bad Request",
            ),
            (
                r#"[API Error: got status: INTERNAL. {"error":{"code":500,"message":"mock sse failure","status":"INTERNAL"}}]"#,
                "mock sse failure",
            ),
            (
                "[API Error: Quota exceeded for mock]\nPlease wait and try again later.",
                "Quota exceeded for mock",
            ),
            (
                "[API Error: mock http error 503: Service Unavailable]",
                "mock http error 503: Service Unavailable",
            ),
            ("Operation cancelled.", "Operation cancelled."),
        ] {
            assert_eq!(readable(raw).as_deref(), Some(want), "{raw}");
        }
        assert_eq!(readable("  "), None);
        assert_eq!(readable("[API Error: ]"), None);
    }
}
