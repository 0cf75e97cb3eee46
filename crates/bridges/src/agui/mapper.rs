//! The lifecycle state machine: our [`Event`]s → AG-UI 1.0 events.
//!
//! * `RUN_STARTED` is always the first event of an AG-UI run.
//! * Text, reasoning, tool-call and step lifecycles are completed (a delta
//!   without its start opens it; a run that ends closes whatever is open)
//!   and deduplicated (a second start of an open id, an end of a closed id,
//!   a second result of a tool call are dropped).
//! * Exactly one `RUN_FINISHED` or `RUN_ERROR` ends an AG-UI run, after every
//!   open lifecycle is closed: from the run's outcome, or — for an approval —
//!   `RUN_FINISHED` with an interrupt outcome.
//!
//! One core run may span several AG-UI runs (an approval ends AG-UI run 1
//! with an interrupt; the resuming run 2 continues the same core run), so the
//! dedup memory lives as long as the core run.

use std::collections::{HashMap, HashSet};

use agent_adaptor_core::driver::{DecisionKind, Role, Usage};
use agent_adaptor_core::{
    ApprovalRequest, Error, Event, FailureReason, Phase, RunResult, notice_kind,
};
use serde_json::{Value, json};

use crate::public_error::public_error;

use super::observe::Observer;
use super::wire::{
    AguiEvent, CustomEvent, DeltaEvent, EventBody, Interrupt, Message, MessageIdEvent,
    MessagesSnapshotEvent, ReasoningMessageStartEvent, ReasoningRole, RunErrorEvent,
    RunFinishedEvent, RunOutcome, RunStartedEvent, StepEvent, TextMessageStartEvent, TextRole,
    TokenUsage, ToolCallArgsEvent, ToolCallIdEvent, ToolCallResultEvent, ToolCallStartEvent,
    ToolRole,
};

/// The interrupt `reason` of a permission request.
pub const REASON_TOOL_APPROVAL: &str = "tool_approval";
/// The interrupt `reason` of a plan review.
pub const REASON_PLAN_REVIEW: &str = "plan_review";
/// The interrupt `reason` of a question.
pub const REASON_QUESTION: &str = "question";
/// The `CUSTOM` event name under which a [`Dropped`](agent_adaptor_core::Dropped) report travels.
pub const CUSTOM_DROPPED: &str = "agent_adaptor.dropped";

/// The `CUSTOM` event name under which a `thread.session_replaced` notice
/// travels (its `data`: key, archived record id, its driver type, why).
pub const CUSTOM_SESSION_REPLACED: &str = "agent_adaptor.thread.session_replaced";

/// What the caller does after an event was mapped.
#[derive(Debug)]
pub(crate) enum Next {
    /// Keep reading events.
    Continue,
    /// An approval ended the AG-UI run with an interrupt.
    Interrupt(Box<ApprovalRequest>, Box<Interrupt>),
    /// The core run finished: await its outcome and call [`Mapper::finish`].
    Finished,
}

/// An open tool call.
#[derive(Debug)]
struct OpenTool {
    id: String,
    /// Complete arguments known at start (sent at the end unless deltas came).
    args: Option<Value>,
    sent_args: bool,
}

/// A text or reasoning lifecycle family: which core ids are open (with the
/// wire id each was given) and which were closed.
#[derive(Debug, Default)]
struct Lanes {
    /// Open core id → wire id, in opening order.
    open: Vec<(String, String)>,
    /// Core ids whose lifecycle ended normally.
    ended: HashSet<String>,
    /// Core ids that an interrupt closed, with how often: their next delta
    /// reopens them under a fresh wire id.
    forced: HashMap<String, u32>,
}

impl Lanes {
    fn wire_id(&self, id: &str) -> Option<&str> {
        self.open
            .iter()
            .find(|(core, _)| core == id)
            .map(|(_, wire)| wire.as_str())
    }

    /// Open `id`; returns the wire id, or `None` when it is open already or
    /// ended (dedup).
    fn open(&mut self, id: &str) -> Option<String> {
        if self.wire_id(id).is_some() || self.ended.contains(id) {
            return None;
        }
        let wire = match self.forced.get(id) {
            Some(n) => format!("{id}.{n}"),
            None => id.to_owned(),
        };
        self.open.push((id.to_owned(), wire.clone()));
        Some(wire)
    }

    /// Close `id` normally; returns its wire id when it was open.
    fn end(&mut self, id: &str) -> Option<String> {
        let pos = self.open.iter().position(|(core, _)| core == id)?;
        let (core, wire) = self.open.remove(pos);
        self.forced.remove(&core);
        self.ended.insert(core);
        Some(wire)
    }

    /// Close everything open because the AG-UI run ends; returns the wire ids.
    fn force_all(&mut self) -> Vec<String> {
        let open = std::mem::take(&mut self.open);
        open.into_iter()
            .map(|(core, wire)| {
                *self.forced.entry(core).or_insert(0) += 1;
                wire
            })
            .collect()
    }
}

/// Maps one core run onto one or more AG-UI runs.
#[derive(Debug)]
pub(crate) struct Mapper {
    thread_id: String,
    run_id: String,
    /// `RUN_STARTED` of the current AG-UI run was emitted.
    started: bool,
    /// The current AG-UI run was ended.
    ended: bool,
    text: Lanes,
    reasoning: Lanes,
    tools: Vec<OpenTool>,
    tools_ended: HashSet<String>,
    tool_results: HashSet<String>,
    steps: Vec<String>,
    /// Todos, capabilities, subagents and images.
    observer: Observer,
    /// Default `expiresAt` horizon for interrupts without a core deadline,
    /// and a cap for those with one.
    park_limit: Option<std::time::Duration>,
    /// The thread's history, sent once right after the first `RUN_STARTED`.
    snapshot: Option<Vec<Message>>,
}

impl Mapper {
    pub(crate) fn new(
        thread_id: String,
        run_id: String,
        park_limit: Option<std::time::Duration>,
    ) -> Self {
        Mapper {
            thread_id,
            run_id,
            started: false,
            ended: false,
            text: Lanes::default(),
            reasoning: Lanes::default(),
            tools: Vec::new(),
            tools_ended: HashSet::new(),
            tool_results: HashSet::new(),
            steps: Vec::new(),
            observer: Observer::default(),
            park_limit,
            snapshot: None,
        }
    }

    /// Send `messages` as a `MESSAGES_SNAPSHOT` right after `RUN_STARTED`.
    pub(crate) fn set_snapshot(&mut self, messages: Vec<Message>) {
        self.snapshot = Some(messages);
    }

    /// End the AG-UI run as interrupted (its log stopped before the end):
    /// close what is open, then `RUN_ERROR` `interrupted`.
    pub(crate) fn interrupted(&mut self, ts: Option<i64>, out: &mut Vec<AguiEvent>) {
        if self.ended {
            return;
        }
        self.ensure_started(ts, out);
        self.close_all(ts, out);
        self.ended = true;
        out.push(AguiEvent::new(
            EventBody::RunError(RunErrorEvent {
                message: "interrupted: the run stopped before its end was recorded".into(),
                code: Some("interrupted".into()),
                usage: None,
            }),
            ts,
        ));
    }

    /// Start the next AG-UI run of the same core run (after an interrupt).
    pub(crate) fn begin_run(
        &mut self,
        thread_id: String,
        run_id: String,
        ts: Option<i64>,
        out: &mut Vec<AguiEvent>,
    ) {
        self.thread_id = thread_id;
        self.run_id = run_id;
        self.started = false;
        self.ended = false;
        let first = out.len();
        self.ensure_started(ts, out);
        self.observer.resume_all(ts, out);
        self.observer.tag(&mut out[first..]);
    }

    /// The AG-UI ids of the current run.
    pub(crate) fn ids(&self) -> (&str, &str) {
        (&self.thread_id, &self.run_id)
    }

    fn ensure_started(&mut self, ts: Option<i64>, out: &mut Vec<AguiEvent>) {
        if !self.started {
            self.started = true;
            out.push(AguiEvent::new(
                EventBody::RunStarted(RunStartedEvent {
                    thread_id: self.thread_id.clone(),
                    run_id: self.run_id.clone(),
                }),
                ts,
            ));
            if let Some(messages) = self.snapshot.take() {
                out.push(AguiEvent::new(
                    EventBody::MessagesSnapshot(MessagesSnapshotEvent { messages }),
                    ts,
                ));
            }
        }
    }

    /// Map one core event.
    pub(crate) fn event(&mut self, ev: &Event, out: &mut Vec<AguiEvent>) -> Next {
        if self.ended {
            // Nothing may follow the AG-UI terminal; the caller stops reading.
            return Next::Continue;
        }
        let first = out.len();
        let next = self.map_event(ev, out);
        self.observer.tag(&mut out[first..]);
        next
    }

    fn map_event(&mut self, ev: &Event, out: &mut Vec<AguiEvent>) -> Next {
        let ts = Some(ev.meta().time.timestamp_millis());
        self.ensure_started(ts, out);
        if self.observer.event(ev, ts, out) {
            return Next::Continue;
        }
        let push = |out: &mut Vec<AguiEvent>, body| out.push(AguiEvent::new(body, ts));
        match ev {
            Event::RunStarted(_) => {}
            Event::RunFinished(_) => return Next::Finished,
            Event::TextDelta(d) => match d.phase {
                Phase::Start => {
                    if let Some(wire) = self.text.open(&d.message_id) {
                        push(out, text_start(wire, d.role));
                    }
                }
                Phase::Content => {
                    if d.text.is_empty() {
                        return Next::Continue;
                    }
                    let wire = match self.text.wire_id(&d.message_id) {
                        Some(w) => Some(w.to_owned()),
                        None => self.text.open(&d.message_id).inspect(|w| {
                            push(out, text_start(w.clone(), d.role));
                        }),
                    };
                    if let Some(message_id) = wire {
                        push(
                            out,
                            EventBody::TextMessageContent(DeltaEvent {
                                message_id,
                                delta: d.text.clone(),
                            }),
                        );
                    }
                }
                Phase::End => {
                    if let Some(message_id) = self.text.end(&d.message_id) {
                        push(
                            out,
                            EventBody::TextMessageEnd(MessageIdEvent { message_id }),
                        );
                    }
                }
            },
            Event::Thinking(t) => match t.phase {
                Phase::Start => {
                    if let Some(wire) = self.reasoning.open(&t.message_id) {
                        reasoning_start(wire, ts, out);
                    }
                }
                Phase::Content => {
                    if t.text.is_empty() {
                        return Next::Continue;
                    }
                    let wire = match self.reasoning.wire_id(&t.message_id) {
                        Some(w) => Some(w.to_owned()),
                        None => self
                            .reasoning
                            .open(&t.message_id)
                            .inspect(|w| reasoning_start(w.clone(), ts, out)),
                    };
                    if let Some(message_id) = wire {
                        push(
                            out,
                            EventBody::ReasoningMessageContent(DeltaEvent {
                                message_id,
                                delta: t.text.clone(),
                            }),
                        );
                    }
                }
                Phase::End => {
                    if let Some(wire) = self.reasoning.end(&t.message_id) {
                        reasoning_end(wire, ts, out);
                    }
                }
            },
            Event::ToolCall(c) => match c.phase {
                Phase::Start => {
                    if self.tool_open(&c.id) || self.tools_ended.contains(c.id.as_str()) {
                        return Next::Continue;
                    }
                    push(
                        out,
                        EventBody::ToolCallStart(ToolCallStartEvent {
                            tool_call_id: c.id.to_string(),
                            tool_call_name: if c.name.is_empty() {
                                "tool".to_owned()
                            } else {
                                c.name.clone()
                            },
                        }),
                    );
                    self.tools.push(OpenTool {
                        id: c.id.to_string(),
                        args: c.args.clone(),
                        sent_args: false,
                    });
                }
                Phase::Content => {
                    if c.args_delta.is_empty() {
                        return Next::Continue;
                    }
                    // Argument deltas of a call that is not open (ended, or
                    // closed by an interrupt) have nowhere to go.
                    if let Some(tool) = self.tools.iter_mut().find(|t| t.id == c.id) {
                        tool.sent_args = true;
                        push(
                            out,
                            EventBody::ToolCallArgs(ToolCallArgsEvent {
                                tool_call_id: c.id.to_string(),
                                delta: c.args_delta.clone(),
                            }),
                        );
                    }
                }
                Phase::End => {
                    if let Some(pos) = self.tools.iter().position(|t| t.id == c.id) {
                        let mut tool = self.tools.remove(pos);
                        if tool.args.is_none() {
                            tool.args = c.args.clone();
                        }
                        close_tool(tool, ts, out);
                        self.tools_ended.insert(c.id.to_string());
                    }
                    if let Some(result) = &c.result {
                        self.tool_result(&c.id, Some(result), ts, out);
                    }
                }
            },
            Event::ToolResult(r) => {
                if let Some(pos) = self.tools.iter().position(|t| t.id == r.id) {
                    let tool = self.tools.remove(pos);
                    close_tool(tool, ts, out);
                    self.tools_ended.insert(r.id.to_string());
                }
                self.tool_result(&r.id, r.result.as_ref(), ts, out);
            }
            Event::Notice(n) if n.kind == notice_kind::STEP => {
                let phase = n
                    .data
                    .as_ref()
                    .and_then(|d| d.get("phase"))
                    .and_then(Value::as_str);
                let name = n.text.clone();
                match phase {
                    Some("started") if !self.steps.contains(&name) => {
                        self.steps.push(name.clone());
                        push(out, EventBody::StepStarted(StepEvent { step_name: name }));
                    }
                    Some("finished") => {
                        if let Some(pos) = self.steps.iter().position(|s| *s == name) {
                            self.steps.remove(pos);
                            push(out, EventBody::StepFinished(StepEvent { step_name: name }));
                        }
                    }
                    _ => {}
                }
            }
            Event::Notice(n) if n.kind == notice_kind::THREAD_SESSION_REPLACED => push(
                out,
                EventBody::Custom(CustomEvent {
                    name: CUSTOM_SESSION_REPLACED.to_owned(),
                    value: n.data.clone().unwrap_or(Value::Null),
                }),
            ),
            Event::Dropped(d) => push(
                out,
                EventBody::Custom(CustomEvent {
                    name: CUSTOM_DROPPED.to_owned(),
                    value: json!({
                        "count": d.count,
                        "byKind": d.by_kind,
                        "firstSequence": d.first_sequence,
                        "lastSequence": d.last_sequence,
                        "reason": d.reason,
                        "source": d.source,
                    }),
                }),
            ),
            Event::ApprovalRequest(req) => {
                let interrupt = self.interrupt_for(req);
                self.close_all(ts, out);
                self.observer.suspend_all(&interrupt.id, ts, out);
                self.ended = true;
                self.started = false;
                out.push(AguiEvent::new(
                    EventBody::RunFinished(RunFinishedEvent {
                        thread_id: self.thread_id.clone(),
                        run_id: self.run_id.clone(),
                        result: None,
                        outcome: RunOutcome::Interrupt {
                            interrupts: vec![interrupt.clone()],
                        },
                        usage: None,
                        metadata: None,
                    }),
                    ts,
                ));
                return Next::Interrupt(req.clone(), Box::new(interrupt));
            }
            // Process output and other notices have no AG-UI counterpart
            // here; the raw mode carries them.
            _ => {}
        }
        Next::Continue
    }

    fn tool_open(&self, id: &str) -> bool {
        self.tools.iter().any(|t| t.id == id)
    }

    fn tool_result(
        &mut self,
        id: &str,
        result: Option<&Value>,
        ts: Option<i64>,
        out: &mut Vec<AguiEvent>,
    ) {
        if !self.tool_results.insert(id.to_owned()) {
            return;
        }
        let content = match result {
            None => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        };
        out.push(AguiEvent::new(
            EventBody::ToolCallResult(ToolCallResultEvent {
                message_id: format!("{id}-result"),
                tool_call_id: id.to_owned(),
                content,
                role: ToolRole::Tool,
            }),
            ts,
        ));
    }

    /// Close every open lifecycle (innermost kinds first).
    fn close_all(&mut self, ts: Option<i64>, out: &mut Vec<AguiEvent>) {
        for tool in std::mem::take(&mut self.tools) {
            self.tools_ended.insert(tool.id.clone());
            close_tool(tool, ts, out);
        }
        for wire in self.reasoning.force_all() {
            reasoning_end(wire, ts, out);
        }
        for message_id in self.text.force_all() {
            out.push(AguiEvent::new(
                EventBody::TextMessageEnd(MessageIdEvent { message_id }),
                ts,
            ));
        }
        for step_name in std::mem::take(&mut self.steps).into_iter().rev() {
            out.push(AguiEvent::new(
                EventBody::StepFinished(StepEvent { step_name }),
                ts,
            ));
        }
    }

    /// End the AG-UI run from the core run's outcome: close what is open,
    /// then exactly one `RUN_FINISHED` or `RUN_ERROR`.
    pub(crate) fn finish(
        &mut self,
        outcome: &Result<RunResult, Error>,
        ts: Option<i64>,
        out: &mut Vec<AguiEvent>,
    ) {
        if self.ended {
            return;
        }
        let first = out.len();
        self.ensure_started(ts, out);
        self.close_all(ts, out);
        self.observer.end_all(ts, out);
        self.observer.tag(&mut out[first..]);
        self.ended = true;
        let body = match outcome {
            Ok(result) => EventBody::RunFinished(RunFinishedEvent {
                thread_id: self.thread_id.clone(),
                run_id: self.run_id.clone(),
                result: result_value(result),
                outcome: RunOutcome::Success {},
                usage: token_usage(result),
                metadata: run_metadata(result),
            }),
            Err(Error::Run(e)) if e.reason == FailureReason::Cancelled => {
                EventBody::RunFinished(RunFinishedEvent {
                    thread_id: self.thread_id.clone(),
                    run_id: self.run_id.clone(),
                    result: None,
                    outcome: RunOutcome::Cancelled {},
                    usage: e.result.as_deref().and_then(token_usage),
                    metadata: e.result.as_deref().and_then(run_metadata),
                })
            }
            Err(e) => {
                let (code, message) = public_error(e, &self.run_id);
                EventBody::RunError(RunErrorEvent {
                    message,
                    code: Some(code),
                    usage: e
                        .as_run_error()
                        .and_then(|r| r.result.as_deref())
                        .and_then(token_usage),
                })
            }
        };
        out.push(AguiEvent::new(body, ts));
    }

    /// The interrupt an approval request becomes.
    fn interrupt_for(&self, req: &ApprovalRequest) -> Interrupt {
        let (reason, schema) = match req.kind {
            DecisionKind::Question => (REASON_QUESTION, question_schema(req)),
            DecisionKind::PlanReview => (REASON_PLAN_REVIEW, approval_schema(false)),
            _ => (
                REASON_TOOL_APPROVAL,
                approval_schema(req.always_allow_tool().is_some()),
            ),
        };
        let now = chrono::Utc::now();
        let horizon = self
            .park_limit
            .and_then(|d| chrono::Duration::from_std(d).ok())
            .map(|d| now + d);
        let expires = match (req.deadline, horizon) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut metadata = json!({
            "kind": req.kind.as_str(),
            "source": req.source,
            "approvalId": req.id,
        });
        if !req.choices.is_empty() {
            metadata["choices"] = serde_json::to_value(&req.choices).unwrap_or(Value::Null);
        }
        if let Some(details) = &req.details {
            metadata["details"] = details.clone();
        }
        if let Some(tool) = req.always_allow_tool() {
            metadata["alwaysAllowTool"] = json!(tool);
        }
        Interrupt {
            id: req.id.clone(),
            reason: reason.to_owned(),
            message: (!req.title.is_empty()).then(|| req.title.clone()),
            tool_call_id: (!req.tool_call_id.is_empty()).then(|| req.tool_call_id.clone()),
            response_schema: Some(schema),
            expires_at: expires.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
            metadata: Some(metadata),
        }
    }
}

fn text_start(message_id: String, role: Role) -> EventBody {
    EventBody::TextMessageStart(TextMessageStartEvent {
        message_id,
        role: match role {
            Role::User => TextRole::User,
            _ => TextRole::Assistant,
        },
    })
}

fn reasoning_start(message_id: String, ts: Option<i64>, out: &mut Vec<AguiEvent>) {
    out.push(AguiEvent::new(
        EventBody::ReasoningStart(MessageIdEvent {
            message_id: message_id.clone(),
        }),
        ts,
    ));
    out.push(AguiEvent::new(
        EventBody::ReasoningMessageStart(ReasoningMessageStartEvent {
            message_id,
            role: ReasoningRole::Reasoning,
        }),
        ts,
    ));
}

fn reasoning_end(message_id: String, ts: Option<i64>, out: &mut Vec<AguiEvent>) {
    out.push(AguiEvent::new(
        EventBody::ReasoningMessageEnd(MessageIdEvent {
            message_id: message_id.clone(),
        }),
        ts,
    ));
    out.push(AguiEvent::new(
        EventBody::ReasoningEnd(MessageIdEvent { message_id }),
        ts,
    ));
}

fn close_tool(tool: OpenTool, ts: Option<i64>, out: &mut Vec<AguiEvent>) {
    if !tool.sent_args
        && let Some(args) = tool.args
    {
        out.push(AguiEvent::new(
            EventBody::ToolCallArgs(ToolCallArgsEvent {
                tool_call_id: tool.id.clone(),
                delta: args.to_string(),
            }),
            ts,
        ));
    }
    out.push(AguiEvent::new(
        EventBody::ToolCallEnd(ToolCallIdEvent {
            tool_call_id: tool.id,
        }),
        ts,
    ));
}

/// The `responseSchema` of a permission or plan review; `always` (approve
/// and always allow the tool in the thread) only when it can be granted.
fn approval_schema(grantable: bool) -> Value {
    let mut schema = json!({
        "type": "object",
        "properties": {
            "approved": {"type": "boolean"},
            "reason": {"type": "string"}
        },
        "required": ["approved"]
    });
    if grantable {
        schema["properties"]["always"] = json!({"type": "boolean"});
    }
    schema
}

/// The `responseSchema` of a question.
fn question_schema(req: &ApprovalRequest) -> Value {
    let mut answer = json!({"type": "string"});
    if !req.choices.is_empty() {
        answer["examples"] = req.choices.iter().map(|c| json!(c.key)).collect();
    }
    json!({
        "type": "object",
        "properties": {"answer": answer, "reason": {"type": "string"}},
        "required": ["answer"]
    })
}

fn result_value(result: &RunResult) -> Option<Value> {
    if let Some(v) = result
        .structured_output()
        .filter(|s| s.valid)
        .and_then(|s| s.value.clone())
    {
        return Some(v);
    }
    (!result.text.is_empty()).then(|| Value::String(result.text.clone()))
}

fn token_usage(result: &RunResult) -> Option<Vec<TokenUsage>> {
    let u: &Usage = result.usage.as_ref()?;
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    Some(vec![TokenUsage {
        provider: non_empty(&result.provider),
        model: non_empty(&result.model),
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        total_tokens: u.total_tokens,
        reasoning_tokens: u.reasoning_tokens,
        cached_input_tokens: u.cached_input_tokens,
        cache_write_input_tokens: u.cache_creation_input_tokens,
    }])
}

/// `RUN_FINISHED.metadata`: what the run cost, when the provider said.
fn run_metadata(result: &RunResult) -> Option<Value> {
    let cost = result.usage.as_ref()?.cost_usd?;
    Some(serde_json::json!({"agentAdaptor": {"costUsd": cost}}))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use agent_adaptor_core::{
        EventMeta, Notice, RunError, RunFinished, TextDelta, Thinking, ToolCall, ToolResult,
    };

    use super::*;

    fn meta(sequence: u64) -> EventMeta {
        EventMeta {
            run_id: Arc::from("run_1"),
            thread_key: None,
            sequence,
            time: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            source: None,
        }
    }

    fn text(id: &str, t: &str, phase: Phase) -> Event {
        Event::TextDelta(TextDelta {
            meta: meta(1),
            message_id: id.into(),
            text: t.into(),
            role: Role::Assistant,
            phase,
        })
    }

    fn thinking(id: &str, t: &str, phase: Phase) -> Event {
        Event::Thinking(Thinking {
            meta: meta(1),
            message_id: id.into(),
            text: t.into(),
            phase,
        })
    }

    fn tool(
        id: &str,
        phase: Phase,
        args: Option<Value>,
        delta: &str,
        result: Option<Value>,
    ) -> Event {
        Event::ToolCall(ToolCall {
            meta: meta(1),
            id: id.into(),
            name: if phase == Phase::Start {
                "bash".into()
            } else {
                String::new()
            },
            args,
            args_delta: delta.into(),
            result,
            phase,
            scope: Default::default(),
            delegation: None,
        })
    }

    fn step(name: &str, phase: &str) -> Event {
        Event::Notice(Notice {
            meta: meta(1),
            kind: notice_kind::STEP.into(),
            text: name.into(),
            item: None,
            metadata: Default::default(),
            data: Some(json!({ "phase": phase })),
        })
    }

    fn finished() -> Event {
        Event::RunFinished(RunFinished {
            meta: meta(9),
            usage: None,
            failed: false,
            reason: None,
            message: String::new(),
        })
    }

    /// Map `events`, then finish with `outcome`; the wire JSON of each event.
    fn map(events: &[Event], outcome: Result<RunResult, Error>) -> Vec<Value> {
        let mut m = Mapper::new("t".into(), "r".into(), None);
        let mut out = Vec::new();
        for ev in events {
            if let Next::Finished = m.event(ev, &mut out) {
                break;
            }
        }
        m.finish(&outcome, Some(1), &mut out);
        // A second finish, and events after the end, add nothing.
        m.finish(&Err(Error::RuntimeShutdown), Some(1), &mut out);
        m.event(&text("late", "x", Phase::Content), &mut out);
        out.iter()
            .map(|e| serde_json::to_value(e).unwrap_or(Value::Null))
            .collect()
    }

    fn kinds(out: &[Value]) -> Vec<&str> {
        out.iter()
            .map(|e| e["type"].as_str().unwrap_or("?"))
            .collect()
    }

    fn cancelled() -> Result<RunResult, Error> {
        Err(Error::Run(Box::new(RunError {
            reason: FailureReason::Cancelled,
            message: "cancelled".into(),
            details: None,
            result: None,
            cause: None,
        })))
    }

    #[test]
    fn a_replaced_thread_session_is_a_custom_event() {
        let data = json!({"key": "k", "archived_record_id": "thr_1", "driver_type": "llm"});
        let notice = Event::Notice(Notice {
            meta: meta(1),
            kind: notice_kind::THREAD_SESSION_REPLACED.into(),
            text: "a new session".into(),
            item: None,
            metadata: Default::default(),
            data: Some(data.clone()),
        });
        let out = map(&[notice, finished()], Err(Error::RuntimeShutdown));
        let custom: Vec<&Value> = out.iter().filter(|e| e["type"] == "CUSTOM").collect();
        assert_eq!(custom.len(), 1, "{out:?}");
        assert_eq!(custom[0]["name"], CUSTOM_SESSION_REPLACED);
        assert_eq!(custom[0]["value"], data);
    }

    #[test]
    fn lifecycles_are_completed_and_deduplicated() {
        let out = map(
            &[
                // A delta without its start opens the message; a repeated
                // start and an end of something never opened are dropped;
                // empty deltas are skipped.
                text("m1", "Hel", Phase::Content),
                text("m1", "", Phase::Start),
                text("m1", "", Phase::Content),
                text("m1", "lo", Phase::Content),
                text("m1", "", Phase::End),
                text("m1", "", Phase::End),
                text("nope", "", Phase::End),
                // An ended id does not reopen.
                text("m1", "", Phase::Start),
                // Open at the end: reasoning, a step, a text message.
                step("s1", "started"),
                step("s1", "started"),
                thinking("r1", "hmm", Phase::Content),
                text("m2", "cut", Phase::Content),
                finished(),
            ],
            cancelled(),
        );
        assert_eq!(
            kinds(&out),
            [
                "RUN_STARTED",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "STEP_STARTED",
                "REASONING_START",
                "REASONING_MESSAGE_START",
                "REASONING_MESSAGE_CONTENT",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "REASONING_MESSAGE_END",
                "REASONING_END",
                "TEXT_MESSAGE_END",
                "STEP_FINISHED",
                "RUN_FINISHED"
            ]
        );
        assert_eq!(out[1]["messageId"], "m1");
        assert_eq!(out[1]["role"], "assistant");
        assert_eq!(out[12]["messageId"], "r1");
        assert_eq!(out[13]["messageId"], "m2");
        // A cancelled run ends with the cancelled outcome.
        assert_eq!(out[15]["outcome"], json!({"type": "cancelled"}));
        assert!(out.iter().all(|e| e["timestamp"].is_i64()));
    }

    #[test]
    fn tool_calls_get_their_arguments_once_and_one_result() {
        let out = map(
            &[
                // Complete args at start, no deltas: one ARGS before END.
                tool("c1", Phase::Start, Some(json!({"cmd": "ls"})), "", None),
                tool("c1", Phase::Start, None, "", None),
                tool("c1", Phase::End, None, "", Some(json!("a.txt"))),
                Event::ToolResult(ToolResult {
                    meta: meta(1),
                    id: "c1".into(),
                    result: Some(json!("again")),
                    delegation: None,
                }),
                // Deltas win over args known at start; a standalone result
                // closes the call first; an object result is JSON text.
                tool("c2", Phase::Start, Some(json!({})), "", None),
                tool("c2", Phase::Content, None, "{\"x\":", None),
                tool("c2", Phase::Content, None, "1}", None),
                Event::ToolResult(ToolResult {
                    meta: meta(1),
                    id: "c2".into(),
                    result: Some(json!({"ok": true})),
                    delegation: None,
                }),
                tool("c2", Phase::End, None, "", None),
                // Still open at the end: closed (with its args) before the terminal.
                tool("c3", Phase::Start, Some(json!([1])), "", None),
                finished(),
            ],
            Err(Error::RuntimeShutdown),
        );
        assert_eq!(
            kinds(&out),
            [
                "RUN_STARTED",
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_END",
                "TOOL_CALL_RESULT",
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_END",
                "TOOL_CALL_RESULT",
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_END",
                "RUN_ERROR"
            ]
        );
        assert_eq!(out[2]["delta"], "{\"cmd\":\"ls\"}");
        assert_eq!(out[4]["content"], "a.txt");
        assert_eq!(out[4]["messageId"], "c1-result");
        assert_eq!(out[4]["role"], "tool");
        assert_eq!(out[9]["content"], "{\"ok\":true}");
        assert_eq!(out[11]["delta"], "[1]");
        assert_eq!(out[13]["code"], "runtime_shutdown");
    }

    fn subagent(scope: &str, kind: agent_adaptor_core::SubagentKind, failed: bool) -> Event {
        Event::SubagentUpdate(agent_adaptor_core::SubagentUpdate {
            meta: meta(1),
            scope_id: scope.into(),
            agent: "reviewer".into(),
            kind,
            tool_call_id: None,
            failed,
            delta: if failed { "boom".into() } else { String::new() },
            data: None,
            origin: Default::default(),
        })
    }

    #[test]
    fn a_failed_subagent_is_an_error_and_one_left_open_ends_with_the_run() {
        use agent_adaptor_core::SubagentKind::{Delta, Finished, Started};
        let out = map(
            &[
                subagent("s1", Started, false),
                subagent("s2", Started, false),
                // A second start of an open scope and progress of an
                // unknown one have nowhere to go.
                subagent("s1", Started, false),
                subagent("nope", Delta, false),
                subagent("s1", Finished, true),
                // A finished scope does not start again.
                subagent("s1", Started, false),
                finished(),
            ],
            cancelled(),
        );
        assert_eq!(
            kinds(&out),
            [
                "RUN_STARTED",
                "SUBAGENT_STARTED",
                "SUBAGENT_STARTED",
                "SUBAGENT_ERROR",
                "SUBAGENT_ERROR",
                "RUN_FINISHED"
            ]
        );
        assert_eq!(
            out[1],
            json!({"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "reviewer", "timestamp": 0})
        );
        assert_eq!(
            (
                &out[3]["subagentRunId"],
                &out[3]["message"],
                &out[3]["code"]
            ),
            (&json!("s1"), &json!("boom"), &json!("subagent_failed"))
        );
        assert_eq!(
            (&out[4]["subagentRunId"], &out[4]["code"]),
            (&json!("s2"), &json!("run_ended"))
        );
    }

    #[test]
    fn a_lifecycle_closed_by_an_interrupt_reopens_under_a_fresh_id() {
        let mut lanes = Lanes::default();
        assert_eq!(lanes.open("m1").as_deref(), Some("m1"));
        assert_eq!(lanes.force_all(), ["m1"]);
        assert_eq!(lanes.open("m1").as_deref(), Some("m1.1"));
        assert_eq!(lanes.force_all(), ["m1.1"]);
        assert_eq!(lanes.open("m1").as_deref(), Some("m1.2"));
        assert_eq!(lanes.end("m1").as_deref(), Some("m1.2"));
        assert_eq!(lanes.open("m1"), None);
    }
}
