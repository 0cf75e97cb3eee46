//! What the mock model answers: [`Script`] (rules chosen by a keyword in the
//! conversation's first user message) and [`Reply`] (one scripted model
//! turn).
//!
//! # JSON shape (for `mock-model-server --script FILE.json`)
//!
//! ```json
//! {
//!   "rules": [
//!     { "keyword": "RUNTOOL", "replies": [
//!         { "tool_call": { "name": "Bash", "arguments": { "command": "echo hi" } } },
//!         "Tool said hi."
//!     ] },
//!     { "keyword": "THINK", "replies": [
//!         { "reasoning_then_text": { "reasoning": "Let me think.", "text": "Done." } }
//!     ] },
//!     { "keyword": "FAIL", "replies": [
//!         { "http_error": { "status": 429, "body": null, "retry_after": 1 } }
//!     ] },
//!     { "keyword": "RETRY", "replies": [
//!         { "attempts": [ { "http_error": { "status": 429 } }, "Recovered." ] }
//!     ] },
//!     { "keyword": "PARALLEL", "replies": [
//!         { "tool_calls": [
//!             { "name": "read", "arguments": { "path": "a.txt" } },
//!             { "name": "read", "arguments": { "path": "b.txt" } }
//!         ] },
//!         "Read both."
//!     ] }
//!   ],
//!   "fallback": { "text": "OK" }
//! }
//! ```
//!
//! A reply is either a bare JSON string (short for `{"text": ...}`) or an
//! object with exactly one key naming the variant in snake_case:
//!
//! | key | value |
//! |---|---|
//! | `text` | the answer text |
//! | `reasoning_then_text` | `{"reasoning": str, "text": str}` |
//! | `tool_call` | `{"name": str, "arguments": any JSON}` |
//! | `json` | any JSON value, answered as its compact text |
//! | `http_error` | `{"status": u16, "body": any JSON or null, "retry_after": seconds or null}` (`body` and `retry_after` may be omitted) |
//! | `stream_error` | `{"message": str}` |
//! | `cut_off` | `{"partial_text": str}` |
//! | `slow` | `{"text": str, "chunk_delay_ms": u64}` |
//! | `tool_calls` | `[{"name": str, "arguments": any JSON}, ...]` (`arguments` may be omitted: `null`) |
//! | `stream_error_envelope` | `{"partial_text": str, "code": str, "status": u16, "message": str}` (`partial_text` may be omitted: empty) |
//! | `no_finish_reason` | the answer text |
//! | `attempts` | a list of replies, one per request (see [`Reply::Attempts`]) |
//!
//! Both `rules` and `fallback` may be omitted (no rules; fallback `"OK"`);
//! `"text_chunk_chars": N` streams text and reasoning in deltas of N
//! characters (default 8).
//! [`Script`] and [`Reply`] also serialize to this shape, so a test can write
//! a script file for the binary with `serde_json::to_string(&script)`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::conversation::Conversation;

/// One scripted model turn.
///
/// How each protocol renders a reply is described in the [`mock`](super)
/// module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "ReplyRepr", into = "ReplyRepr")]
#[non_exhaustive]
pub enum Reply {
    /// A plain text answer, streamed as several deltas.
    Text(String),
    /// A reasoning (thinking) block followed by a text answer.
    ReasoningThenText {
        /// The reasoning text (Anthropic `thinking`, Responses reasoning
        /// summary, Chat `reasoning_content`, Gemini thought part).
        reasoning: String,
        /// The answer text that follows.
        text: String,
    },
    /// The model calls a tool; the CLI runs it and sends the result back in
    /// the next request (which then gets the next scripted reply).
    ToolCall {
        /// The tool's name as the CLI declared it (for example `Bash`,
        /// `exec_command`, `run_shell_command`).
        name: String,
        /// The tool's arguments (an object for every real tool).
        arguments: serde_json::Value,
    },
    /// A JSON answer, sent as its compact text (for structured-output modes
    /// that read the final text, such as `codex exec --output-schema`).
    Json(serde_json::Value),
    /// An HTTP error status instead of a model answer.
    HttpError {
        /// The HTTP status (400, 429, 500, ...). Invalid codes become 500.
        status: u16,
        /// The JSON body; `Null` means the protocol's own error shape with a
        /// message derived from the status.
        body: serde_json::Value,
        /// Seconds for a `Retry-After` header. When `None`, the response
        /// carries `x-should-retry: false` so SDK-level retries stop early.
        retry_after: Option<u64>,
    },
    /// A 200 stream that starts normally and then carries the protocol's
    /// error event (`response.failed`, Anthropic `event: error`, a chunk with
    /// an `error` object).
    StreamError {
        /// The error message inside the error event.
        message: String,
    },
    /// The stream sends some text and then the connection drops, with no
    /// terminal event (and no clean end of the chunked body).
    CutOff {
        /// The text sent before the drop.
        partial_text: String,
    },
    /// Like [`Reply::Text`], with a pause before every stream event after the
    /// first (keep the delay tiny in tests).
    Slow {
        /// The answer text.
        text: String,
        /// The pause between consecutive stream events.
        chunk_delay: Duration,
    },
    /// Parallel tool calls: one answer with several calls, in this order
    /// (`ToolCall` is the one-call case). The follow-up request carrying all
    /// the results gets the next scripted reply (the whole answer is one
    /// assistant turn). An empty list is an answer with no content and the
    /// ordinary stop reason.
    ToolCalls(Vec<ToolCallSpec>),
    /// A 200 stream that streams `partial_text` as ordinary text deltas
    /// (nothing when empty) and then carries the protocol's in-stream error
    /// envelope with `code` and `status` where each vendor or gateway puts
    /// them, with no terminal success event. Without streaming it is an HTTP
    /// `status` with the protocol's error body built from `code` and
    /// `message`. The exact shapes are in the [`mock`](super) module docs.
    StreamErrorEnvelope {
        /// The text streamed before the error (may be empty).
        partial_text: String,
        /// The error code or type as the protocol spells it (for example
        /// `rate_limit_exceeded`, `overloaded_error`, `RESOURCE_EXHAUSTED`).
        code: String,
        /// The HTTP status the error stands for (429, 500, 529, ...).
        status: u16,
        /// The error message.
        message: String,
    },
    /// A complete text answer whose terminal frame carries no finish / stop
    /// reason (the stream still ends cleanly), for clients that must not
    /// invent one.
    NoFinishReason(String),
    /// Per-request sequencing: the n-th request (0-based) that selects this
    /// reply gets `attempts[n]`; past the end the last one repeats. Unlike
    /// the replies of [`Script::on_prompt`] (indexed by the assistant turns
    /// in the history, so a retry with the same history gets the same
    /// reply), this scripts what a retrying client sees, for example
    /// `Attempts(vec![HttpError { status: 429, .. }, Text("ok")])`.
    ///
    /// Each `Attempts` value in the script has its own request counter,
    /// kept by the running [`MockServer`](super::MockServer) (a fresh
    /// server starts at 0). Nested `Attempts` are flattened in place:
    /// `Attempts([a, Attempts([b, c]), d])` behaves as
    /// `Attempts([a, b, c, d])`. An empty list (after flattening) behaves
    /// like the script's fallback.
    Attempts(Vec<Reply>),
}

/// One call of a [`Reply::ToolCalls`] answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallSpec {
    /// The tool's name as the client declared it.
    pub name: String,
    /// The tool's arguments (an object for every real tool).
    #[serde(default)]
    pub arguments: serde_json::Value,
}

impl ToolCallSpec {
    /// A call of `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: serde_json::Value) -> Self {
        ToolCallSpec {
            name: name.into(),
            arguments,
        }
    }
}

/// The serde representation of [`Reply`] (see the module docs).
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum ReplyRepr {
    Bare(String),
    Tagged(TaggedReply),
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum TaggedReply {
    Text(String),
    ReasoningThenText {
        reasoning: String,
        text: String,
    },
    ToolCall {
        name: String,
        #[serde(default)]
        arguments: serde_json::Value,
    },
    Json(serde_json::Value),
    HttpError {
        status: u16,
        #[serde(default)]
        body: serde_json::Value,
        #[serde(default)]
        retry_after: Option<u64>,
    },
    StreamError {
        message: String,
    },
    CutOff {
        partial_text: String,
    },
    Slow {
        text: String,
        #[serde(default)]
        chunk_delay_ms: u64,
    },
    ToolCalls(Vec<ToolCallSpec>),
    StreamErrorEnvelope {
        #[serde(default)]
        partial_text: String,
        code: String,
        status: u16,
        message: String,
    },
    NoFinishReason(String),
    Attempts(Vec<Reply>),
}

impl From<ReplyRepr> for Reply {
    fn from(repr: ReplyRepr) -> Self {
        match repr {
            ReplyRepr::Bare(text) => Reply::Text(text),
            ReplyRepr::Tagged(tagged) => match tagged {
                TaggedReply::Text(text) => Reply::Text(text),
                TaggedReply::ReasoningThenText { reasoning, text } => {
                    Reply::ReasoningThenText { reasoning, text }
                }
                TaggedReply::ToolCall { name, arguments } => Reply::ToolCall { name, arguments },
                TaggedReply::Json(value) => Reply::Json(value),
                TaggedReply::HttpError {
                    status,
                    body,
                    retry_after,
                } => Reply::HttpError {
                    status,
                    body,
                    retry_after,
                },
                TaggedReply::StreamError { message } => Reply::StreamError { message },
                TaggedReply::CutOff { partial_text } => Reply::CutOff { partial_text },
                TaggedReply::Slow {
                    text,
                    chunk_delay_ms,
                } => Reply::Slow {
                    text,
                    chunk_delay: Duration::from_millis(chunk_delay_ms),
                },
                TaggedReply::ToolCalls(calls) => Reply::ToolCalls(calls),
                TaggedReply::StreamErrorEnvelope {
                    partial_text,
                    code,
                    status,
                    message,
                } => Reply::StreamErrorEnvelope {
                    partial_text,
                    code,
                    status,
                    message,
                },
                TaggedReply::NoFinishReason(text) => Reply::NoFinishReason(text),
                TaggedReply::Attempts(replies) => Reply::Attempts(replies),
            },
        }
    }
}

impl From<Reply> for ReplyRepr {
    fn from(reply: Reply) -> Self {
        ReplyRepr::Tagged(match reply {
            Reply::Text(text) => TaggedReply::Text(text),
            Reply::ReasoningThenText { reasoning, text } => {
                TaggedReply::ReasoningThenText { reasoning, text }
            }
            Reply::ToolCall { name, arguments } => TaggedReply::ToolCall { name, arguments },
            Reply::Json(value) => TaggedReply::Json(value),
            Reply::HttpError {
                status,
                body,
                retry_after,
            } => TaggedReply::HttpError {
                status,
                body,
                retry_after,
            },
            Reply::StreamError { message } => TaggedReply::StreamError { message },
            Reply::CutOff { partial_text } => TaggedReply::CutOff { partial_text },
            Reply::Slow { text, chunk_delay } => TaggedReply::Slow {
                text,
                chunk_delay_ms: u64::try_from(chunk_delay.as_millis()).unwrap_or(u64::MAX),
            },
            Reply::ToolCalls(calls) => TaggedReply::ToolCalls(calls),
            Reply::StreamErrorEnvelope {
                partial_text,
                code,
                status,
                message,
            } => TaggedReply::StreamErrorEnvelope {
                partial_text,
                code,
                status,
                message,
            },
            Reply::NoFinishReason(text) => TaggedReply::NoFinishReason(text),
            Reply::Attempts(replies) => TaggedReply::Attempts(replies),
        })
    }
}

/// One keyword rule of a [`Script`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Matched (case-sensitively) as a substring of the conversation's first
    /// user message.
    pub keyword: String,
    /// `replies[i]` answers the request whose history already holds `i`
    /// assistant turns; past the end the last reply repeats. An empty list
    /// means the fallback.
    pub replies: Vec<Reply>,
}

/// The mock server's script: keyword rules plus a fallback reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Rules, tried in the order they were added; the first match wins.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// The reply for requests that match no rule.
    #[serde(default = "default_fallback")]
    pub fallback: Reply,
    /// Characters per streamed text / reasoning delta; `None` is
    /// [`TEXT_CHUNK_CHARS`](super::TEXT_CHUNK_CHARS) (8). Large answers in
    /// tests stream in bigger pieces to keep the event count small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_chunk_chars: Option<usize>,
}

fn default_fallback() -> Reply {
    Reply::Text("OK".to_owned())
}

impl Default for Script {
    fn default() -> Self {
        Self::new()
    }
}

impl Script {
    /// An empty script: every request gets the fallback, `Text("OK")`.
    pub fn new() -> Self {
        Script {
            rules: Vec::new(),
            fallback: default_fallback(),
            text_chunk_chars: None,
        }
    }

    /// A conversation whose FIRST user message contains `keyword` gets
    /// `replies[i]` where i = number of assistant turns already in the
    /// request's history (so after a ToolCall, the follow-up request carrying
    /// the tool result gets the next reply). When i is past the end, the last
    /// reply repeats.
    ///
    /// "First user message" is all user text before the first assistant turn
    /// (CLIs often send an environment/context block as a separate user
    /// message before the prompt); tool results are not user text. An
    /// assistant turn is a run of consecutive assistant-side history entries
    /// (assistant message, tool call, reasoning item), so text + tool call in
    /// one answer counts once.
    pub fn on_prompt(mut self, keyword: &str, replies: Vec<Reply>) -> Self {
        self.rules.push(Rule {
            keyword: keyword.to_owned(),
            replies,
        });
        self
    }

    /// Requests that match no rule (side requests such as title generation,
    /// quota/haiku probes) get this; default Text("OK").
    pub fn fallback(mut self, reply: Reply) -> Self {
        self.fallback = reply;
        self
    }

    /// Stream text and reasoning in deltas of `chars` characters (at least
    /// 1) instead of [`TEXT_CHUNK_CHARS`](super::TEXT_CHUNK_CHARS).
    pub fn text_chunk_chars(mut self, chars: usize) -> Self {
        self.text_chunk_chars = Some(chars);
        self
    }

    /// The reply for a request, and the index of the rule that chose it
    /// (`None` for the fallback). A [`Reply::Attempts`] is returned as is;
    /// the server picks the attempt per request.
    pub fn select(&self, conversation: Option<&Conversation>) -> (&Reply, Option<usize>) {
        let Some(conversation) = conversation else {
            return (&self.fallback, None);
        };
        for (index, rule) in self.rules.iter().enumerate() {
            if !conversation.first_user_text.contains(&rule.keyword) {
                continue;
            }
            let turn = conversation
                .assistant_turns
                .min(rule.replies.len().saturating_sub(1));
            return match rule.replies.get(turn) {
                Some(reply) => (reply, Some(index)),
                None => (&self.fallback, None),
            };
        }
        (&self.fallback, None)
    }
}
