//! The app-server parser (sans-IO): one stdout line → live payloads,
//! transcript items and control frames, through the shared
//! [`Recorder`](super::super::record). The transport tells it what only the
//! client knows (the thread the handshake opened, the turn it started, the
//! decisions it sent, a rejected request).
//!
//! Mapping:
//!
//! | notification | becomes |
//! |---|---|
//! | `turn/started` | `step.started` (the turn) |
//! | `item/agentMessage/delta` | `text.start` / `text.content` (token level) |
//! | `item/completed` agentMessage | `text.end`, an assistant transcript item |
//! | `item/reasoning/summaryTextDelta`, `item/reasoning/textDelta` | reasoning lifecycle |
//! | `item/started` / `item/completed` commandExecution, fileChange, mcpToolCall, webSearch | `tool_call.start` (complete args) / `tool_call.end` + `tool_call.result` |
//! | `item/started` / `item/completed` dynamicToolCall | the same, in [`ToolScope::Host`](agent_adaptor_driver::ToolScope::Host) with the bare tool name; the result carries the host tool's decoded `output` (told by the transport that answered the call) |
//! | `thread/tokenUsage/updated` | this turn's usage (`total` now − `total` before the turn) |
//! | `error` | a stream-error notice (its message explains the failure), or a warning when Codex retries |
//! | `warning`, `configWarning`, `deprecationNotice` | warning notices |
//! | a server approval request / `serverRequest/resolved` | `hitl.requested` / `hitl.resolved` |
//! | `turn/completed` of this run's turn | the only terminal: `completed` → `run.finished`, else `run.error` |
//! | anything else, and unknown item types | a custom payload `codex.<method>` / `codex.item.<type>` with the raw JSON |
//!
//! Status, rate-limit and output-delta notifications (`thread/status/changed`,
//! `account/rateLimits/updated`, `item/commandExecution/outputDelta`,
//! `item/fileChange/outputDelta`, `item/reasoning/summaryPartAdded`) carry
//! nothing the payloads or layers use; they stay in the raw capture.
//! Notifications about other threads, and (once `turn/start` was answered)
//! about other turns, become custom payloads and never touch this turn's
//! state.
//!
//! The transport tells the parser the thread the handshake opened and the
//! turn `turn/start` was answered with
//! ([`thread_opened`](AppServerParser::thread_opened),
//! [`turn_accepted`](AppServerParser::turn_accepted)); `scope.rs` decides
//! whose a notification is. A `turn/completed` that is not this run's is a
//! protocol-violation notice ([`crate::terminal_guard`]) and the run goes on
//! (without its own, it fails as a missing terminal that names it).

use crate::observe::{TodoFact, str_field};
use std::collections::HashMap;

use agent_adaptor_driver::{
    DecisionRequest, DecisionResult, FailureCode, HitlRequested, HitlResolved, HostToolResult,
    HumanDecisionFailure, RunFailure, StreamKind, StreamPayload,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::super::record::{Parsed, Recorder, ToolCall, ToolOutcome, Totals};
use super::protocol::{
    DeltaNotification, ErrorNotification, Incoming, ItemNotification, ThreadItem,
    TokenUsageNotification, TurnNotification, decision_request,
};
use super::scope::Ours;
use crate::exit::ExitFacts;
use crate::pump::{ControlFrame, LineProtocol, Out};

/// The failure code of a resume the server rejected (an unknown thread id).
pub const RESUME_REJECTED: &str = "resume_rejected";

/// Notifications with nothing for the payloads or layers.
const QUIET: [&str; 5] = [
    "thread/status/changed",
    "account/rateLimits/updated",
    "item/commandExecution/outputDelta",
    "item/fileChange/outputDelta",
    "item/reasoning/summaryPartAdded",
];

/// The parser of one app-server run.
#[derive(Debug)]
pub struct AppServerParser {
    rec: Recorder,
    resuming: bool,
    /// The thread's cumulative usage the checkpoint carried.
    checkpoint_total: Option<Totals>,
    /// The latest cumulative usage reported for another turn (on resume,
    /// Codex replays the previous turn's).
    before_total: Option<Totals>,
    /// The latest cumulative usage reported during this turn.
    turn_total: Option<Totals>,
    /// The sum of per-response usage during this turn.
    turn_sum: Totals,
    /// Approval requests asked (by JSON-RPC id), and how they were answered.
    approvals: HashMap<String, (DecisionRequest, Option<DecisionResult>)>,
    /// Set when a host rejection was answered with `cancel`, which ends the
    /// turn as `interrupted`.
    cancelled_by: Option<HumanDecisionFailure>,
    /// `turn/start` was answered: its turn is the one a terminal must name.
    turn_acked: bool,
    /// The host tool results the transport answered, by call id, until
    /// their `dynamicToolCall` item completes.
    host_results: HashMap<String, HostToolResult>,
}

impl AppServerParser {
    /// A parser. `payloads` turns live payloads on; `resuming` says the run
    /// resumes a thread whose cumulative usage was `checkpoint_total`.
    pub fn new(payloads: bool, resuming: bool, checkpoint_total: Option<Totals>) -> Self {
        AppServerParser {
            rec: Recorder::new(payloads),
            resuming,
            checkpoint_total,
            before_total: None,
            turn_total: None,
            turn_sum: Totals::default(),
            approvals: HashMap::new(),
            cancelled_by: None,
            turn_acked: false,
            host_results: HashMap::new(),
        }
    }

    /// Record the transcript into `transcript` (empty, made with the
    /// request's budget by [`Request::new_transcript`](agent_adaptor_driver::Request::new_transcript))
    /// instead of one with the default budget.
    pub fn with_transcript(mut self, transcript: agent_adaptor_driver::Transcript) -> Self {
        self.rec.set_transcript(transcript);
        self
    }

    /// The thread id, once known.
    pub fn thread_id(&self) -> Option<&str> {
        self.rec.thread_id()
    }

    /// The turn id, once known.
    pub fn turn_id(&self) -> Option<&str> {
        self.rec.turn_id()
    }

    /// The handshake opened `thread_id` (the `thread/start` or
    /// `thread/resume` result).
    pub fn thread_opened(&mut self, thread_id: &str) -> Vec<Out> {
        let mut out = Vec::new();
        self.rec.thread(&mut out, thread_id);
        out
    }

    /// `turn/start` was answered with `turn_id`: from now on a
    /// `turn/completed` of this thread and this turn ends the run (and no
    /// other does).
    pub fn turn_accepted(&mut self, turn_id: &str) {
        if !turn_id.is_empty() {
            self.rec.set_turn(turn_id);
            self.turn_acked = true;
        }
    }

    /// The server rejected `thread/resume`: a typed failure.
    pub fn resume_rejected(&mut self, message: &str) -> Vec<Out> {
        let mut f = RunFailure::new(
            FailureCode::Other(RESUME_REJECTED.into()),
            format!("codex rejected the resume: {message}"),
        );
        f.metadata.insert("reason".into(), RESUME_REJECTED.into());
        let mut out = Vec::new();
        self.rec.fail(&mut out, None, f);
        out
    }

    /// The server rejected one of the client's requests (`method`).
    pub fn request_failed(&mut self, method: &str, message: &str) -> Vec<Out> {
        let mut f = RunFailure::new(
            FailureCode::AgentError,
            format!("codex rejected {method}: {message}"),
        );
        f.metadata.insert("reason".into(), "request_failed".into());
        f.metadata.insert("method".into(), method.into());
        let mut out = Vec::new();
        self.rec.fail(&mut out, None, f);
        out
    }

    /// The transport answered approval request `id` with `decision`, after
    /// the host's `result`.
    pub fn approval_answered(&mut self, id: &Value, result: DecisionResult, decision: &Value) {
        let Some((request, answered)) = self.approvals.get_mut(&id.to_string()) else {
            return;
        };
        *answered = Some(result);
        if decision.as_str() == Some("cancel")
            && matches!(result, DecisionResult::Rejected | DecisionResult::TimedOut)
        {
            self.cancelled_by = Some(HumanDecisionFailure {
                kind: request.kind,
                source: request.source.clone(),
                decision: result,
                request: request.clone(),
                attempts: 1,
            });
        }
    }

    /// The transport answered the host tool call `call_id` with `result`
    /// (its `dynamicToolCall` item completes after the answer).
    pub fn host_tool_answered(&mut self, call_id: &str, result: HostToolResult) {
        self.host_results.insert(call_id.to_owned(), result);
    }

    fn hitl_id(id: &Value) -> String {
        format!("codex-request-{}", id.to_string().trim_matches('"'))
    }

    fn server_request(&mut self, id: Value, method: String, params: Value, out: &mut Vec<Out>) {
        if let Some(mut d) = decision_request(&method, &params) {
            d.request_id = Self::hitl_id(&id);
            self.rec.payload(
                out,
                StreamPayload::from(StreamKind::HitlRequested(Box::new(HitlRequested {
                    request: d.clone(),
                }))),
            );
            self.approvals.insert(id.to_string(), (d, None));
        }
        out.push(Out::Control(ControlFrame::Request { id, method, params }));
    }

    fn params<T: DeserializeOwned>(params: &Value) -> Option<T> {
        serde_json::from_value(params.clone()).ok()
    }

    /// What the run knows of its thread and turn.
    fn ours(&self) -> Ours<'_> {
        Ours {
            thread: self.rec.thread_id(),
            turn: self.rec.turn_id(),
            acked: self.turn_acked,
        }
    }

    /// A notification about another turn than this run's.
    fn other_turn(&self, turn_id: &str) -> bool {
        matches!(self.rec.turn_id(), Some(ours) if ours != turn_id) || self.rec.turn_id().is_none()
    }

    fn notification(&mut self, method: &str, params: &Value, raw: &[u8], out: &mut Vec<Out>) {
        if method == "turn/completed" {
            return match Self::params::<TurnNotification>(params) {
                Some(n) => match self.ours().not_our_terminal(params, &n.turn.id) {
                    Some(why) => self.rec.ignore_terminal(out, &why, raw),
                    None => self.turn_completed(n, raw, out),
                },
                None => self.malformed(method, raw, out),
            };
        }
        if self.ours().foreign(method, params) {
            self.rec.custom(out, format!("codex.{method}"), raw);
            return;
        }
        match method {
            // The thread is the one the handshake's result named (the
            // transport reports it); the announcement adds nothing.
            "thread/started" if self.rec.thread_id().is_some() => {}
            // Before this run's thread was opened no turn is ours.
            "turn/started" if self.rec.thread_id().is_none() => {
                self.rec.custom(out, format!("codex.{method}"), raw);
            }
            "turn/started" => {
                // Before `turn/start` was answered the announced turn is
                // provisional (what `turn/interrupt` names); the answer
                // decides.
                if let Some(n) = Self::params::<TurnNotification>(params)
                    && self.rec.turn_id().is_none()
                {
                    self.rec.set_turn(&n.turn.id);
                }
                self.rec.step_started(out);
            }
            "item/started" => match Self::params::<ItemNotification>(params).map(|n| n.item) {
                Some(
                    ThreadItem::UserMessage { .. }
                    | ThreadItem::AgentMessage { .. }
                    | ThreadItem::Reasoning { .. },
                ) => {}
                Some(item) => match (item.tool(), item_id(&item)) {
                    (Some(call), Some(id)) => self.rec.tool_started(out, id, call),
                    _ => self.unknown_item(params, raw, out),
                },
                None => self.malformed(method, raw, out),
            },
            "item/completed" => match Self::params::<ItemNotification>(params).map(|n| n.item) {
                Some(item) => self.completed(item, params, raw, out),
                None => self.malformed(method, raw, out),
            },
            "item/agentMessage/delta" => match Self::params::<DeltaNotification>(params) {
                Some(d) => self.rec.text_delta(out, &d.item_id, &d.delta),
                None => self.malformed(method, raw, out),
            },
            "item/reasoning/summaryTextDelta" | "item/reasoning/textDelta" => {
                match Self::params::<DeltaNotification>(params) {
                    Some(d) => self.rec.reasoning_delta(out, &d.item_id, &d.delta),
                    None => self.malformed(method, raw, out),
                }
            }
            "thread/tokenUsage/updated" => match Self::params::<TokenUsageNotification>(params) {
                Some(u) => self.usage(&u),
                None => self.malformed(method, raw, out),
            },
            "error" => match Self::params::<ErrorNotification>(params) {
                Some(e) if e.will_retry => Recorder::warning(out, e.error.message),
                Some(e) => self.rec.stream_error(out, e.error.message),
                None => self.malformed(method, raw, out),
            },
            "warning" | "configWarning" | "deprecationNotice" | "guardianWarning" => {
                let text = ["message", "summary"]
                    .iter()
                    .find_map(|k| params.get(*k).and_then(Value::as_str))
                    .unwrap_or(method);
                Recorder::warning(out, text.to_owned());
            }
            "serverRequest/resolved" => {
                let id = params.get("requestId").cloned().unwrap_or(Value::Null);
                if let Some((_, answered)) = self.approvals.get(&id.to_string()) {
                    let result = answered.unwrap_or(DecisionResult::Aborted);
                    self.rec.payload(
                        out,
                        StreamPayload::from(StreamKind::HitlResolved(Box::new(HitlResolved {
                            request_id: Self::hitl_id(&id),
                            result,
                            choice: String::new(),
                            resolved_at: None,
                            attempt: 0,
                        }))),
                    );
                } else {
                    self.rec.custom(out, format!("codex.{method}"), raw);
                }
            }
            "turn/plan/updated" => match params.get("plan").and_then(Value::as_array) {
                Some(steps) => {
                    let facts = steps
                        .iter()
                        .map(|st| TodoFact {
                            content: str_field(st, "step").unwrap_or_default(),
                            status: str_field(st, "status").unwrap_or_default(),
                            ..TodoFact::default()
                        })
                        .collect();
                    self.rec.todos(out, facts, "codex.turn/plan/updated");
                }
                None => self.malformed(method, raw, out),
            },
            m if QUIET.contains(&m) => {}
            _ => self.rec.custom(out, format!("codex.{method}"), raw),
        }
    }

    fn completed(&mut self, item: ThreadItem, params: &Value, raw: &[u8], out: &mut Vec<Out>) {
        match item {
            ThreadItem::UserMessage { .. } => {}
            ThreadItem::AgentMessage { id, text } => self.rec.text_done(out, &id, text),
            ThreadItem::Reasoning {
                id,
                summary,
                content,
            } => {
                let parts = if summary.is_empty() { content } else { summary };
                self.rec.reasoning_done(out, &id, parts.join("\n"));
            }
            ThreadItem::Other => self.unknown_item(params, raw, out),
            tool => {
                let Some(id) = item_id(&tool) else {
                    return;
                };
                let id = id.to_owned();
                // The name and arguments only start a call whose start was
                // not seen.
                let call = if self.rec.tool_open(&id) {
                    None
                } else if let Some(call) = tool.tool() {
                    Some(call)
                } else {
                    return;
                };
                let answered = self.host_results.remove(&id);
                let outcome = outcome(call, tool, answered);
                self.rec.tool_done(out, &id, outcome);
            }
        }
    }

    fn unknown_item(&mut self, params: &Value, raw: &[u8], out: &mut Vec<Out>) {
        let kind = params
            .get("item")
            .and_then(|i| i.get("type"))
            .and_then(Value::as_str)
            .map_or_else(
                || "codex.item.unknown".into(),
                |t| format!("codex.item.{t}"),
            );
        self.rec.custom(out, kind, raw);
    }

    fn malformed(&mut self, method: &str, raw: &[u8], out: &mut Vec<Out>) {
        Recorder::notice(out, format!("codex: malformed {method} notification"), raw);
    }

    fn usage(&mut self, u: &TokenUsageNotification) {
        let total = Totals::from(u.token_usage.total);
        if self.other_turn(&u.turn_id) {
            self.before_total = Some(total);
        } else {
            self.turn_total = Some(total);
            let last = Totals::from(u.token_usage.last);
            self.turn_sum = Totals {
                input: self.turn_sum.input + last.input,
                cached_input: self.turn_sum.cached_input + last.cached_input,
                output: self.turn_sum.output + last.output,
                reasoning: self.turn_sum.reasoning + last.reasoning,
            };
        }
    }

    /// This turn's usage: the cumulative total now minus the total before
    /// the turn (the replayed one, else the checkpoint's, else zero for a
    /// new thread); on a resume with no known baseline, the sum of the
    /// per-response usage.
    fn turn_usage(&self) -> (Option<Totals>, Option<Totals>) {
        let Some(total) = self.turn_total else {
            return (None, None);
        };
        let baseline = self
            .before_total
            .or(self.checkpoint_total)
            .or((!self.resuming).then_some(Totals::default()));
        let turn = match baseline {
            Some(b) => total.minus(b),
            None => self.turn_sum,
        };
        (Some(turn), Some(total))
    }

    fn turn_completed(&mut self, n: TurnNotification, raw: &[u8], out: &mut Vec<Out>) {
        let (turn, cumulative) = self.turn_usage();
        self.rec.set_usage(turn, cumulative);
        let status = n.turn.status.as_str();
        if status == "completed" {
            self.rec.succeed(out, "turn/completed", raw);
            return;
        }
        let provider = n.turn.error.as_ref().map(|e| e.message.as_str());
        let mut failure = match (status, self.cancelled_by.take()) {
            ("interrupted", Some(decision)) => {
                let code = if decision.decision == DecisionResult::TimedOut {
                    FailureCode::DecisionTimeout
                } else {
                    FailureCode::DecisionRejected
                };
                let mut f = RunFailure::new(
                    code,
                    format!(
                        "the host {} {}; the turn was cancelled",
                        if decision.decision == DecisionResult::TimedOut {
                            "did not answer"
                        } else {
                            "rejected"
                        },
                        decision.request.prompt
                    ),
                );
                f.human_decision = Some(Box::new(decision));
                f
            }
            ("interrupted", None) => RunFailure::new(
                FailureCode::AgentError,
                self.rec
                    .failure_message(provider, "the turn was interrupted"),
            ),
            ("failed", _) => RunFailure::new(
                FailureCode::AgentError,
                self.rec.failure_message(provider, "the turn failed"),
            ),
            (other, _) => RunFailure::new(
                FailureCode::AgentError,
                format!("turn/completed with status {other:?}"),
            ),
        };
        failure.metadata.insert("status".into(), status.into());
        if let Some(info) = n.turn.error.and_then(|e| e.codex_error_info) {
            failure.metadata.insert(
                "codex_error_info".into(),
                info.as_str()
                    .map_or_else(|| info.to_string(), str::to_owned),
            );
        }
        self.rec.fail(out, Some(("turn/completed", raw)), failure);
    }

    /// End of stdout: end the run if the server never completed the turn,
    /// form every layer.
    pub fn finish(&mut self, exit: ExitFacts) -> (Vec<Out>, Parsed) {
        self.rec.finish(exit, "turn/completed")
    }

    /// The end of a turn on a resident app-server, which keeps running: the
    /// turn ended at `turn/completed`; a completed turn with a thread id is a
    /// valid checkpoint although the process did not exit.
    pub fn finish_resident(&mut self) -> (Vec<Out>, Parsed) {
        self.rec.finish_resident("turn/completed")
    }

    /// End the turn with `failure` before `turn/completed` (the transport
    /// lost the server): open lifecycles close, the failure is recorded and
    /// ends the run lifecycle. Nothing happens once the turn ended.
    pub fn abort(&mut self, failure: RunFailure) -> Vec<Out> {
        let mut out = Vec::new();
        if !self.rec.terminated() {
            self.rec.fail(&mut out, None, failure);
        }
        out
    }
}

fn item_id(item: &ThreadItem) -> Option<&str> {
    match item {
        ThreadItem::CommandExecution { id, .. }
        | ThreadItem::FileChange { id, .. }
        | ThreadItem::McpToolCall { id, .. }
        | ThreadItem::DynamicToolCall { id, .. }
        | ThreadItem::WebSearch { id, .. } => Some(id),
        _ => None,
    }
}

/// How a completed tool item ended; `answered` is the host tool result the
/// transport gave a `dynamicToolCall`.
fn outcome(
    call: Option<ToolCall>,
    item: ThreadItem,
    answered: Option<HostToolResult>,
) -> ToolOutcome {
    let (text, is_error, result) = match item {
        ThreadItem::CommandExecution {
            status,
            aggregated_output,
            exit_code,
            ..
        } => {
            let output = aggregated_output.unwrap_or_default();
            let text = if output.is_empty() && status != "completed" {
                status.clone()
            } else {
                output.clone()
            };
            (
                text,
                status != "completed" || exit_code.is_some_and(|c| c != 0),
                json!({"exit_code": exit_code, "status": status, "output": output}),
            )
        }
        ThreadItem::FileChange { status, .. } => (
            status.clone(),
            status != "completed",
            json!({ "status": status }),
        ),
        ThreadItem::McpToolCall {
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
        ThreadItem::DynamicToolCall {
            content_items,
            success,
            status,
            ..
        } => {
            let text = content_items
                .iter()
                .flatten()
                .filter_map(|c| c.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n");
            let (output, host_status) = match answered {
                Some(r) => (r.output, Some(r.status.as_str())),
                None => (None, None),
            };
            (
                text.clone(),
                success == Some(false) || status == "failed",
                json!({
                    "output": output,
                    "content": text,
                    "success": success,
                    "status": status,
                    "host_status": host_status,
                }),
            )
        }
        ThreadItem::WebSearch { action, .. } => (String::new(), false, json!({ "action": action })),
        _ => (String::new(), false, Value::Null),
    };
    ToolOutcome {
        call,
        text,
        is_error,
        result,
    }
}

impl LineProtocol for AppServerParser {
    fn line_into(&mut self, raw: &[u8], out: &mut Vec<Out>) {
        let raw = raw.trim_ascii();
        if raw.is_empty() {
            return;
        }
        let incoming = match crate::json_line::from_line::<Value>(raw) {
            Ok(v) => Incoming::classify(v),
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
        match incoming {
            None => Recorder::notice(out, "codex: not a JSON-RPC message".into(), raw),
            Some(Incoming::Response { id, result }) => {
                out.push(Out::Control(ControlFrame::Response { id, result }));
            }
            // A request is always handed on: it must be answered, even late.
            Some(Incoming::Request { id, method, params }) => {
                self.server_request(id, method, params, out);
            }
            Some(Incoming::Notification { .. }) if self.rec.terminated() => {
                Recorder::notice(out, "codex: line after the terminal event".into(), raw);
            }
            Some(Incoming::Notification { method, params }) => {
                self.notification(&method, &params, raw, out);
            }
        }
    }

    fn terminated(&self) -> bool {
        self.rec.terminated()
    }

    fn observe(&mut self, observed: bool) {
        self.rec.observe(observed);
    }
}
