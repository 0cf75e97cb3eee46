//! Turns the [`LlmStreamEvent`] streams of a run's model turns (its steps)
//! into live payloads, transcript items and the final [`Response`].
//!
//! Lifecycles: a text segment stays open until reasoning or a tool call
//! starts (or the step ends), then its transcript item is written; a
//! reasoning lifecycle closes when its item arrives (an item that arrives
//! without deltas is shown whole); a tool call opens with its first delta
//! that names it and closes when the provider reports the finished call.
//! Everything still open is closed at the end of each step. Tool-call ids
//! are unique in the run (a provider that numbers its calls per turn, as
//! Gemini does, would repeat them across steps). Usage is summed over the
//! steps; `run.finished` / `run.error` come once, at the end of the run.

use std::collections::{HashMap, HashSet};

use agent_adaptor_driver::{
    DriverError, EventSink, FailureCode, RunEvent, RunFailure, SharedItem, StreamKind,
    StreamPayload, TerminalPayload, ToolScope, Transcript, TranscriptItem, TranscriptKind, Usage,
};
use serde_json::json;

use crate::error::{LlmError, LlmErrorKind, LlmStreamError};
use crate::event::{LlmCompletionMetadata, LlmStreamEvent, ToolCallDelta};
use crate::message::ToolCall;
use crate::reasoning::ReasoningContentPart;

/// A tool call seen live.
#[derive(Debug)]
struct LiveCall {
    index: u32,
    /// The id the live lifecycle uses.
    live_id: String,
    /// The provider's id, once known.
    provider_id: Option<String>,
    name: Option<String>,
    /// Argument text that arrived before the call was named.
    pending: String,
    started: bool,
    closed: bool,
}

/// What one finished step gives the loop.
#[derive(Debug, Default)]
pub(super) struct Step {
    /// The step's text segments: their transcript items, shared, so the
    /// text is held once (an answer can be large).
    texts: Vec<SharedItem>,
    /// Reasoning to replay with the assistant message.
    pub(super) reasoning: Vec<ReasoningContentPart>,
    /// The tool calls, in the model's order, each with the id of its
    /// lifecycle on the stream.
    pub(super) calls: Vec<(String, ToolCall)>,
}

impl Step {
    /// The step's text (its segments joined).
    pub(super) fn text(&self) -> String {
        self.texts.iter().map(|item| item.text.as_str()).collect()
    }
}

/// The bookkeeping of one run.
pub(super) struct Translator {
    run_id: String,
    payloads: bool,
    model: String,
    /// The scope of each tool the model may call (absent: built in).
    scopes: HashMap<String, ToolScope>,
    /// The step (model turn) being translated, from 1.
    step_number: u32,
    segments: u32,
    text: Option<(String, String)>,
    reasoning: Option<String>,
    reasoning_streamed: bool,
    calls: Vec<LiveCall>,
    reported: HashSet<String>,
    /// Every tool-call lifecycle id of the run.
    call_ids: HashSet<String>,
    step: Step,
    transcript: Transcript,
    usage: Option<Usage>,
    response_model: Option<String>,
    failure: Option<RunFailure>,
    terminal: Option<TerminalPayload>,
}

/// Adds the usage of one step to the run's sum (a count stays `None`
/// until some step reports it).
fn add_usage(total: &mut Option<Usage>, metadata: &LlmCompletionMetadata) {
    let part = |v: Option<u32>| v.map(u64::from);
    let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    let mut u = total.take().unwrap_or_default();
    u.input_tokens = sum(u.input_tokens, part(metadata.prompt_tokens));
    u.output_tokens = sum(u.output_tokens, part(metadata.completion_tokens));
    u.cached_input_tokens = sum(u.cached_input_tokens, part(metadata.cache_read_tokens));
    u.cache_creation_input_tokens = sum(
        u.cache_creation_input_tokens,
        part(metadata.cache_creation_tokens),
    );
    u.reasoning_tokens = sum(u.reasoning_tokens, part(metadata.reasoning_tokens));
    u.total_tokens = sum(u.total_tokens, part(metadata.total_tokens));
    u.cost_usd = match (u.cost_usd, metadata.provider_cost_usd) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    };
    *total = (u != Usage::default()).then_some(u);
}

/// The snake_case name of an error kind (`rate_limited` …): the failure
/// code.
pub(super) fn kind_name(kind: LlmErrorKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "other".to_owned())
}

impl Translator {
    /// A translator recording its items into `transcript` (made with the
    /// request's budget); `scopes` names the scope of each offered tool.
    pub(super) fn new(
        run_id: &str,
        payloads: bool,
        model: &str,
        transcript: Transcript,
        scopes: HashMap<String, ToolScope>,
    ) -> Self {
        Translator {
            run_id: run_id.to_owned(),
            payloads,
            model: model.to_owned(),
            scopes,
            step_number: 0,
            segments: 0,
            text: None,
            reasoning: None,
            reasoning_streamed: false,
            calls: Vec::new(),
            reported: HashSet::new(),
            call_ids: HashSet::new(),
            step: Step::default(),
            transcript,
            usage: None,
            response_model: None,
            failure: None,
            terminal: None,
        }
    }

    /// Starts the next step (model turn).
    pub(super) fn begin_step(&mut self) {
        self.step_number += 1;
        self.text = None;
        self.reasoning = None;
        self.reasoning_streamed = false;
        self.calls.clear();
        self.reported.clear();
        self.step = Step::default();
    }

    /// What the step that just finished produced.
    pub(super) fn take_step(&mut self) -> Step {
        std::mem::take(&mut self.step)
    }

    /// The sink, when payloads are on (for the loop's own payloads).
    pub(super) fn payloads(&self) -> bool {
        self.payloads
    }

    /// Record a transcript item of the loop's own (a tool result).
    pub(super) async fn push_item(
        &mut self,
        sink: &dyn EventSink,
        item: TranscriptItem,
    ) -> Result<(), DriverError> {
        self.item(sink, item).await
    }

    fn scope(&self, name: &str) -> ToolScope {
        self.scopes.get(name).cloned().unwrap_or_default()
    }

    /// `id`, or a variant of it no earlier call of the run used.
    fn unique_call_id(&mut self, id: &str) -> String {
        let mut candidate = id.to_owned();
        let mut n = 1;
        while candidate.is_empty() || self.call_ids.contains(&candidate) {
            n += 1;
            candidate = format!("{id}-{n}");
        }
        self.call_ids.insert(candidate.clone());
        candidate
    }

    async fn emit(&self, sink: &dyn EventSink, payload: StreamPayload) -> Result<(), DriverError> {
        if self.payloads {
            sink.emit_stream(payload).await?;
        }
        Ok(())
    }

    async fn item(
        &mut self,
        sink: &dyn EventSink,
        item: TranscriptItem,
    ) -> Result<(), DriverError> {
        sink.emit(RunEvent::Item(self.transcript.share(item)))
            .await?;
        Ok(())
    }

    fn next_id(&mut self, what: &str) -> String {
        self.segments += 1;
        format!("{}-{what}-{}", self.run_id, self.segments)
    }

    pub(super) async fn start(&mut self, sink: &dyn EventSink) -> Result<(), DriverError> {
        self.emit(sink, StreamPayload::run_started()).await
    }

    /// `run.finished` with the usage summed over the steps.
    pub(super) async fn finish(&mut self, sink: &dyn EventSink) -> Result<(), DriverError> {
        self.emit(sink, StreamPayload::run_finished(self.usage.clone()))
            .await
    }

    async fn close_text(&mut self, sink: &dyn EventSink) -> Result<(), DriverError> {
        if let Some((id, text)) = self.text.take() {
            self.emit(sink, StreamPayload::text_end(id)).await?;
            let item = self.transcript.share(TranscriptItem::assistant(text));
            self.step.texts.push(item.clone());
            sink.emit(RunEvent::Item(item)).await?;
        }
        Ok(())
    }

    async fn close_reasoning(&mut self, sink: &dyn EventSink) -> Result<(), DriverError> {
        if let Some(id) = self.reasoning.take() {
            self.emit(sink, StreamPayload::reasoning_end(id)).await?;
        }
        Ok(())
    }

    async fn text_delta(&mut self, sink: &dyn EventSink, delta: String) -> Result<(), DriverError> {
        if delta.is_empty() {
            return Ok(());
        }
        self.close_reasoning(sink).await?;
        if self.text.is_none() {
            let id = self.next_id("text");
            self.emit(sink, StreamPayload::text_start(id.clone()))
                .await?;
            self.text = Some((id, String::new()));
        }
        if let Some((id, text)) = &mut self.text {
            text.push_str(&delta);
            let id = id.clone();
            self.emit(sink, StreamPayload::text_content(id, delta))
                .await?;
        }
        Ok(())
    }

    async fn reasoning_delta(
        &mut self,
        sink: &dyn EventSink,
        delta: String,
    ) -> Result<(), DriverError> {
        if delta.is_empty() {
            return Ok(());
        }
        self.close_text(sink).await?;
        let id = match &self.reasoning {
            Some(id) => id.clone(),
            None => {
                let id = self.next_id("reasoning");
                self.emit(sink, StreamPayload::reasoning_start(id.clone()))
                    .await?;
                self.reasoning = Some(id.clone());
                id
            }
        };
        self.reasoning_streamed = true;
        self.emit(sink, StreamPayload::reasoning_content(id, delta))
            .await
    }

    async fn reasoning_item(
        &mut self,
        sink: &dyn EventSink,
        item: ReasoningContentPart,
    ) -> Result<(), DriverError> {
        let text = item.display_text();
        if !self.reasoning_streamed
            && let Some(text) = text.as_ref().filter(|t| !t.is_empty())
        {
            // Shown whole: the provider sent no deltas for this block.
            self.close_text(sink).await?;
            let id = self.next_id("reasoning");
            self.emit(sink, StreamPayload::reasoning_start(id.clone()))
                .await?;
            self.emit(
                sink,
                StreamPayload::reasoning_content(id.clone(), text.clone()),
            )
            .await?;
            self.reasoning = Some(id);
        }
        self.close_reasoning(sink).await?;
        self.reasoning_streamed = false;
        self.step.reasoning.push(item.clone());
        let mut entry = TranscriptItem::new(
            TranscriptKind::Thinking,
            text.filter(|t| !t.is_empty())
                .unwrap_or_else(|| "[redacted reasoning]".to_owned()),
        );
        entry
            .metadata
            .insert("provider".into(), item.provider.clone());
        entry
            .metadata
            .insert("replayable".into(), item.has_replay_state().to_string());
        self.item(sink, entry).await
    }

    async fn tool_delta(
        &mut self,
        sink: &dyn EventSink,
        delta: ToolCallDelta,
    ) -> Result<(), DriverError> {
        self.close_text(sink).await?;
        self.close_reasoning(sink).await?;
        let position = match self
            .calls
            .iter()
            .position(|c| c.index == delta.index && !c.closed)
        {
            Some(position) => position,
            None => {
                let live_id = match &delta.id {
                    Some(id) => self.unique_call_id(id),
                    None => {
                        let id =
                            format!("{}-call-{}-{}", self.run_id, self.step_number, delta.index);
                        self.unique_call_id(&id)
                    }
                };
                self.calls.push(LiveCall {
                    index: delta.index,
                    live_id,
                    provider_id: None,
                    name: None,
                    pending: String::new(),
                    started: false,
                    closed: false,
                });
                self.calls.len() - 1
            }
        };
        let scope = delta
            .name
            .as_deref()
            .or(self.calls[position].name.as_deref())
            .map(|name| self.scope(name))
            .unwrap_or_default();
        let call = &mut self.calls[position];
        if delta.id.is_some() {
            call.provider_id.clone_from(&delta.id);
        }
        if delta.name.is_some() {
            call.name.clone_from(&delta.name);
        }
        call.pending.push_str(&delta.arguments);
        let mut out = Vec::new();
        if !call.started
            && let Some(name) = &call.name
        {
            call.started = true;
            out.push(StreamPayload::tool_call_start_in(
                call.live_id.clone(),
                name.clone(),
                None,
                scope,
            ));
        }
        if call.started && !call.pending.is_empty() {
            out.push(StreamPayload::tool_call_args(
                call.live_id.clone(),
                std::mem::take(&mut call.pending),
            ));
        }
        for payload in out {
            self.emit(sink, payload).await?;
        }
        Ok(())
    }

    async fn tool_calls(
        &mut self,
        sink: &dyn EventSink,
        calls: Vec<ToolCall>,
    ) -> Result<(), DriverError> {
        self.close_text(sink).await?;
        self.close_reasoning(sink).await?;
        for call in calls {
            if !self.reported.insert(call.id.clone()) {
                continue;
            }
            let live = self
                .calls
                .iter()
                .position(|c| !c.closed && c.provider_id.as_deref() == Some(call.id.as_str()))
                .or_else(|| {
                    self.calls.iter().position(|c| {
                        !c.closed
                            && c.provider_id.is_none()
                            && c.name.as_deref() == Some(call.name.as_str())
                    })
                });
            let scope = self.scope(&call.name);
            let mut out = Vec::new();
            let lifecycle_id = match live {
                Some(position) => {
                    let live = &mut self.calls[position];
                    live.closed = true;
                    if !live.started {
                        live.started = true;
                        out.push(StreamPayload::tool_call_start_in(
                            live.live_id.clone(),
                            call.name.clone(),
                            Some(call.arguments.clone()),
                            scope,
                        ));
                    }
                    out.push(StreamPayload::tool_call_end(live.live_id.clone(), None));
                    live.live_id.clone()
                }
                None => {
                    let id = self.unique_call_id(&call.id);
                    out.push(StreamPayload::tool_call_start_in(
                        id.clone(),
                        call.name.clone(),
                        Some(call.arguments.clone()),
                        scope,
                    ));
                    out.push(StreamPayload::tool_call_end(id.clone(), None));
                    id
                }
            };
            for payload in out {
                self.emit(sink, payload).await?;
            }
            self.item(
                sink,
                TranscriptItem::tool_call(
                    lifecycle_id.clone(),
                    call.name.clone(),
                    Some(call.arguments.clone()),
                ),
            )
            .await?;
            self.step.calls.push((lifecycle_id, call));
        }
        Ok(())
    }

    /// Closes every open lifecycle; live tool calls the provider never
    /// finished end here (they were dropped).
    async fn close_all(&mut self, sink: &dyn EventSink) -> Result<(), DriverError> {
        self.close_text(sink).await?;
        self.close_reasoning(sink).await?;
        let mut out = Vec::new();
        for call in &mut self.calls {
            if call.started && !call.closed {
                call.closed = true;
                out.push(StreamPayload::tool_call_end(
                    call.live_id.clone(),
                    Some(json!({"dropped": true})),
                ));
            }
        }
        for payload in out {
            self.emit(sink, payload).await?;
        }
        Ok(())
    }

    /// Handles one event of the current step; true when it was terminal (the
    /// step is over: [`take_step`](Self::take_step) unless it failed).
    pub(super) async fn event(
        &mut self,
        sink: &dyn EventSink,
        event: LlmStreamEvent,
    ) -> Result<bool, DriverError> {
        match event {
            LlmStreamEvent::TextDelta(delta) => self.text_delta(sink, delta).await?,
            LlmStreamEvent::ReasoningDelta { delta, .. } => {
                self.reasoning_delta(sink, delta).await?
            }
            LlmStreamEvent::ReasoningItem(item) => self.reasoning_item(sink, item).await?,
            LlmStreamEvent::ToolCallDelta(delta) => self.tool_delta(sink, delta).await?,
            LlmStreamEvent::ToolCalls(calls) => self.tool_calls(sink, calls).await?,
            LlmStreamEvent::HostedToolCall(call) => {
                let payload = StreamPayload::from(StreamKind::Custom {
                    name: "llm.hosted_tool_call".into(),
                    text: format!("{} {:?}", call.tool, call.status),
                })
                .with_raw(serde_json::to_value(&call).unwrap_or_default());
                self.emit(sink, payload).await?;
            }
            LlmStreamEvent::Done(metadata) => {
                self.done(sink, *metadata).await?;
                return Ok(true);
            }
            LlmStreamEvent::Error(error) => {
                self.provider_error(sink, &error).await?;
                return Ok(true);
            }
        }
        Ok(false)
    }

    async fn done(
        &mut self,
        sink: &dyn EventSink,
        metadata: LlmCompletionMetadata,
    ) -> Result<(), DriverError> {
        self.close_all(sink).await?;
        add_usage(&mut self.usage, &metadata);
        if metadata.response_model.is_some() {
            self.response_model.clone_from(&metadata.response_model);
        }
        let json =
            serde_json::to_string(&metadata).map_err(|e| DriverError::Protocol(e.to_string()))?;
        self.terminal = TerminalPayload::new("done", &json).ok();
        Ok(())
    }

    /// True once a step failed (the run ends with `run.error`).
    pub(super) fn failed(&self) -> bool {
        self.failure.is_some()
    }

    /// Fail the run with `failure` (a step failure, the step limit, an MCP
    /// server that a required run could not reach …).
    pub(super) async fn fail(
        &mut self,
        sink: &dyn EventSink,
        failure: RunFailure,
    ) -> Result<(), DriverError> {
        self.close_all(sink).await?;
        let mut item = TranscriptItem::new(TranscriptKind::Failure, failure.message.clone());
        item.metadata
            .insert("code".into(), failure.code.as_str().to_owned());
        self.item(sink, item).await?;
        self.emit(sink, StreamPayload::run_error(failure.clone()))
            .await?;
        self.failure = Some(failure);
        Ok(())
    }

    async fn provider_error(
        &mut self,
        sink: &dyn EventSink,
        error: &LlmStreamError,
    ) -> Result<(), DriverError> {
        let json =
            serde_json::to_string(error).map_err(|e| DriverError::Protocol(e.to_string()))?;
        self.terminal = TerminalPayload::new("error", &json).ok();
        let mut failure = RunFailure::new(
            FailureCode::parse(&kind_name(error.kind())),
            error.to_string(),
        );
        if let Some(code) = &error.code {
            failure
                .metadata
                .insert("provider_code".into(), code.clone());
        }
        if let Some(status) = error.status {
            failure
                .metadata
                .insert("http_status".into(), status.to_string());
        }
        self.fail(sink, failure).await
    }

    /// A call that failed before or during the stream (no provider terminal).
    pub(super) async fn call_failed(
        &mut self,
        sink: &dyn EventSink,
        error: &LlmError,
    ) -> Result<(), DriverError> {
        let mut failure = RunFailure::new(
            FailureCode::parse(&kind_name(error.kind)),
            error.to_string(),
        );
        if let Some(code) = &error.code {
            failure
                .metadata
                .insert("provider_code".into(), code.clone());
        }
        if let Some(status) = error.status {
            failure
                .metadata
                .insert("http_status".into(), status.to_string());
        }
        if let Some(retries) = &error.retry_metadata {
            failure
                .metadata
                .insert("retries".into(), retries.attempts.to_string());
        }
        self.fail(sink, failure).await
    }

    /// The stream ended cleanly without `Done` or `Error`.
    pub(super) async fn ended_without_terminal(
        &mut self,
        sink: &dyn EventSink,
    ) -> Result<(), DriverError> {
        let failure = RunFailure::new(
            FailureCode::parse(&kind_name(LlmErrorKind::Incomplete)),
            "the provider stream ended before its terminal event: the turn is incomplete",
        );
        self.fail(sink, failure).await
    }

    /// The response; `output` is the final answer.
    pub(super) fn into_response(
        self,
        provider: &str,
        output: String,
    ) -> agent_adaptor_driver::Response {
        let mut response = agent_adaptor_driver::Response {
            output,
            transcript: self.transcript,
            usage: self.usage,
            failure: self.failure,
            provider: provider.to_owned(),
            model: self.response_model.unwrap_or(self.model),
            ..Default::default()
        };
        response.raw.terminal = self.terminal;
        response
    }
}
