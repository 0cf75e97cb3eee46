//! One model call, translated live: [`LlmStreamEvent`]s become text,
//! reasoning and tool-call lifecycles on the sink, and transcript items; the
//! call's outcome is folded into a [`CallOutcome`].

use std::collections::BTreeMap;

use agent_adaptor_driver::{
    DriverError, EventSink, RunEvent, SharedItem, StreamPayload, Transcript, TranscriptItem,
};
use agent_adaptor_llm::{
    LlmCompletionMetadata, LlmStreamEvent, ReasoningContentPart, ToolCall, ToolCallDelta,
};

/// How one model call ended.
#[derive(Debug)]
pub enum CallOutcome {
    /// The model answered.
    Done {
        /// The answer text of this call.
        text: String,
        /// Reasoning to replay with the assistant message.
        reasoning: Vec<ReasoningContentPart>,
        /// The tool calls, each with the id its lifecycle used on the stream.
        tool_calls: Vec<(String, ToolCall)>,
        /// The terminal metadata.
        metadata: Box<LlmCompletionMetadata>,
    },
    /// The provider reported an error (or the stream broke off).
    Failed {
        /// The failure code (`rate_limited`, `incomplete` …).
        code: String,
        /// The provider's message.
        message: String,
    },
}

/// A tool call seen live.
#[derive(Debug, Default)]
struct LiveTool {
    id: Option<String>,
    name: Option<String>,
    started: bool,
    pending_args: String,
}

/// The translator of one model call (number `call` of the run).
pub struct Live<'a> {
    sink: &'a dyn EventSink,
    /// Transcript items of the whole run (shared across calls).
    items: &'a mut Transcript,
    call: usize,
    segments: usize,
    text_open: Option<String>,
    text_segment: String,
    /// This call's answer text so far, as its closed text segments (the
    /// transcript items themselves: the text is held once, not also as a
    /// running copy).
    texts: Vec<SharedItem>,
    reasoning_open: Option<String>,
    reasoning_segment: String,
    /// Reasoning deltas arrived since the last reasoning item.
    reasoning_streamed: bool,
    reasoning: Vec<ReasoningContentPart>,
    tools: BTreeMap<u32, LiveTool>,
    tool_calls: Vec<ToolCall>,
}

impl<'a> Live<'a> {
    /// A translator for model call `call`, appending to `items`.
    pub fn new(sink: &'a dyn EventSink, items: &'a mut Transcript, call: usize) -> Self {
        Live {
            sink,
            items,
            call,
            segments: 0,
            text_open: None,
            text_segment: String::new(),
            texts: Vec::new(),
            reasoning_open: None,
            reasoning_segment: String::new(),
            reasoning_streamed: false,
            reasoning: Vec::new(),
            tools: BTreeMap::new(),
            tool_calls: Vec::new(),
        }
    }

    async fn emit(&self, payload: StreamPayload) -> Result<(), DriverError> {
        self.sink.emit_stream(payload).await?;
        Ok(())
    }

    /// Emit a transcript item and keep it for the response.
    pub async fn item(&mut self, item: TranscriptItem) -> Result<(), DriverError> {
        let item = self.items.share(item);
        self.sink.emit(RunEvent::Item(item)).await?;
        Ok(())
    }

    fn next_id(&mut self, prefix: &str) -> String {
        self.segments += 1;
        format!("{prefix}-{}-{}", self.call, self.segments)
    }

    async fn close_text(&mut self) -> Result<(), DriverError> {
        if let Some(id) = self.text_open.take() {
            self.emit(StreamPayload::text_end(id)).await?;
            let text = std::mem::take(&mut self.text_segment);
            if !text.is_empty() {
                let item = self.items.share(TranscriptItem::assistant(text));
                self.texts.push(item.clone());
                self.sink.emit(RunEvent::Item(item)).await?;
            }
        }
        Ok(())
    }

    async fn close_reasoning(&mut self) -> Result<(), DriverError> {
        if let Some(id) = self.reasoning_open.take() {
            self.emit(StreamPayload::reasoning_end(id)).await?;
            let text = std::mem::take(&mut self.reasoning_segment);
            if !text.is_empty() {
                self.item(TranscriptItem::thinking(text)).await?;
            }
        }
        Ok(())
    }

    async fn text_delta(&mut self, delta: String) -> Result<(), DriverError> {
        if delta.is_empty() {
            return Ok(());
        }
        self.close_reasoning().await?;
        let id = match &self.text_open {
            Some(id) => id.clone(),
            None => {
                let id = self.next_id("msg");
                self.emit(StreamPayload::text_start(id.clone())).await?;
                self.text_open = Some(id.clone());
                id
            }
        };
        self.text_segment.push_str(&delta);
        self.emit(StreamPayload::text_content(id, delta)).await
    }

    async fn reasoning_delta(&mut self, delta: String) -> Result<(), DriverError> {
        if delta.is_empty() {
            return Ok(());
        }
        self.close_text().await?;
        let id = match &self.reasoning_open {
            Some(id) => id.clone(),
            None => {
                let id = self.next_id("rsn");
                self.emit(StreamPayload::reasoning_start(id.clone()))
                    .await?;
                self.reasoning_open = Some(id.clone());
                id
            }
        };
        self.reasoning_segment.push_str(&delta);
        self.reasoning_streamed = true;
        self.emit(StreamPayload::reasoning_content(id, delta)).await
    }

    async fn reasoning_item(&mut self, part: ReasoningContentPart) -> Result<(), DriverError> {
        let streamed = std::mem::take(&mut self.reasoning_streamed);
        self.close_reasoning().await?;
        if !streamed
            && let Some(text) = part.text.as_ref().and_then(|t| t.display_text())
            && !text.is_empty()
        {
            // A block that arrived whole: show it as one lifecycle.
            self.close_text().await?;
            let id = self.next_id("rsn");
            self.emit(StreamPayload::reasoning_start(id.clone()))
                .await?;
            self.emit(StreamPayload::reasoning_content(id.clone(), text.clone()))
                .await?;
            self.emit(StreamPayload::reasoning_end(id)).await?;
            self.item(TranscriptItem::thinking(text)).await?;
        }
        self.reasoning.push(part);
        Ok(())
    }

    async fn tool_delta(&mut self, delta: ToolCallDelta) -> Result<(), DriverError> {
        self.close_text().await?;
        self.close_reasoning().await?;
        let call = self.call;
        let index = delta.index;
        let tool = self.tools.entry(index).or_default();
        if tool.id.is_none() {
            tool.id = delta.id.filter(|id| !id.is_empty());
        }
        if tool.name.is_none() {
            tool.name = delta.name.filter(|n| !n.is_empty());
        }
        tool.pending_args.push_str(&delta.arguments);
        let mut out = Vec::new();
        if !tool.started
            && let Some(name) = tool.name.clone()
        {
            let id = tool
                .id
                .get_or_insert_with(|| format!("call-{call}-{index}"))
                .clone();
            tool.started = true;
            out.push(StreamPayload::tool_call_start(id, name, None));
        }
        if tool.started && !tool.pending_args.is_empty() {
            let id = tool.id.clone().unwrap_or_default();
            out.push(StreamPayload::tool_call_args(
                id,
                std::mem::take(&mut tool.pending_args),
            ));
        }
        for payload in out {
            self.emit(payload).await?;
        }
        Ok(())
    }

    /// Feed one event; `Some` once the call is over.
    pub async fn event(
        &mut self,
        event: LlmStreamEvent,
    ) -> Result<Option<CallOutcome>, DriverError> {
        match event {
            LlmStreamEvent::TextDelta(delta) => self.text_delta(delta).await?,
            LlmStreamEvent::ReasoningDelta { delta, .. } => self.reasoning_delta(delta).await?,
            LlmStreamEvent::ReasoningItem(part) => self.reasoning_item(part).await?,
            LlmStreamEvent::ToolCallDelta(delta) => self.tool_delta(delta).await?,
            LlmStreamEvent::ToolCalls(calls) => self.tool_calls = calls,
            LlmStreamEvent::Done(metadata) => return self.done(metadata).await.map(Some),
            LlmStreamEvent::Error(error) => {
                let code = error.kind();
                return self
                    .failed(kind_name(code), error.message.clone())
                    .await
                    .map(Some);
            }
            _ => {}
        }
        Ok(None)
    }

    /// Close everything and report a failure.
    pub async fn failed(
        &mut self,
        code: String,
        message: String,
    ) -> Result<CallOutcome, DriverError> {
        self.close_text().await?;
        self.close_reasoning().await?;
        let open: Vec<String> = self
            .tools
            .values()
            .filter(|t| t.started)
            .filter_map(|t| t.id.clone())
            .collect();
        for id in open {
            self.emit(StreamPayload::tool_call_end(id, None)).await?;
        }
        let message = if message.trim().is_empty() {
            format!("the provider failed ({code})")
        } else {
            message
        };
        Ok(CallOutcome::Failed { code, message })
    }

    async fn done(
        &mut self,
        metadata: Box<LlmCompletionMetadata>,
    ) -> Result<CallOutcome, DriverError> {
        self.close_text().await?;
        self.close_reasoning().await?;
        // Live calls in index order match the final calls in order.
        let live: Vec<(u32, Option<String>, bool)> = self
            .tools
            .iter()
            .map(|(i, t)| (*i, t.id.clone(), t.started))
            .collect();
        let mut calls = Vec::new();
        for (n, call) in std::mem::take(&mut self.tool_calls).into_iter().enumerate() {
            let (stream_id, started) = match live.get(n) {
                Some((_, Some(id), true)) => (id.clone(), true),
                _ => (call.id.clone(), false),
            };
            if started {
                self.emit(StreamPayload::tool_call_end(stream_id.clone(), None))
                    .await?;
            } else {
                self.emit(StreamPayload::tool_call_start(
                    stream_id.clone(),
                    call.name.clone(),
                    Some(call.arguments.clone()),
                ))
                .await?;
                self.emit(StreamPayload::tool_call_end(stream_id.clone(), None))
                    .await?;
            }
            self.item(TranscriptItem::tool_call(
                stream_id.clone(),
                call.name.clone(),
                Some(call.arguments.clone()),
            ))
            .await?;
            calls.push((stream_id, call));
        }
        // Calls opened live that the final set does not hold are closed.
        for (_, id, started) in live.iter().skip(calls.len()) {
            if let (Some(id), true) = (id, started) {
                self.emit(StreamPayload::tool_call_end(id.clone(), None))
                    .await?;
            }
        }
        let text: String = std::mem::take(&mut self.texts)
            .iter()
            .map(|item| item.text.as_str())
            .collect();
        Ok(CallOutcome::Done {
            text,
            reasoning: std::mem::take(&mut self.reasoning),
            tool_calls: calls,
            metadata,
        })
    }
}

/// The snake_case name of an error kind (`rate_limited` …), the failure code.
pub fn kind_name(kind: agent_adaptor_llm::LlmErrorKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "other".to_owned())
}
