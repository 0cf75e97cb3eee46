//! The CLI's `llm` driver: a small agent loop over an LLM HTTP
//! [`Provider`].
//!
//! `agent_adaptor_llm::agent::LlmDriver` runs exactly one model turn and
//! reports tool calls without running them. A person at a terminal or in the
//! web chat expects more, so this driver adds, on top of the same
//! [`Provider`]:
//!
//! * **tools with approvals** — the model may call the read-only
//!   [`tools::LIST_FILES`]; every call is put to the host as a permission
//!   decision (the terminal asks, the web page shows buttons, `--approve`
//!   decides) and runs only when approved; a denial is told to the model,
//!   which then answers on its own;
//! * **threads** — the conversation (every message, reasoning to replay
//!   included) is the thread's resume state (`data["messages"]`, JSON), so
//!   `--thread KEY` continues it and the thread store holds it;
//! * up to [`MAX_MODEL_CALLS`] model calls per run (tool round trips).
//!
//! Live payloads: text and reasoning lifecycles at token level, tool calls
//! with argument deltas, `run.finished` with the summed usage (or
//! `run.error` with the provider's failure code).

mod live;
pub mod tools;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use agent_adaptor_driver::{
    Checkpoint, ConfigError, DecisionKind, DecisionRequest, DecisionResult, Descriptor, Driver,
    DriverError, EventSink, FailureCode, FingerprintError, HumanDecisionSupport, ModelInfo,
    OperationalEvent, RawStreams, Request, Response, RunContext, RunEvent, RunFailure,
    SessionCodec, SessionState, StandardSessionCodec, StreamCapability, StreamPayload,
    StructuredOutputCapability, TerminalPayload, Transcript, TranscriptItem, Usage, async_trait,
    canonical_session_config_fingerprint,
};
use agent_adaptor_llm::{
    LlmCallConfig, LlmCompletionMetadata, Message, MessageRole, Provider, ResponseFormat, ToolCall,
};
use futures::StreamExt;
use serde_json::{Value, json};

use live::{CallOutcome, Live, kind_name};

/// The most model calls one run makes (each tool round trip is one more).
pub const MAX_MODEL_CALLS: usize = 8;

/// The session-state key that holds the conversation (JSON array of
/// messages).
pub const HISTORY_KEY: &str = "messages";

/// The session-state key of the thread's title: the first user message,
/// at most [`TITLE_CHARS`] characters, written with every save so a
/// listing never has to read the conversation.
pub const TITLE_KEY: &str = "title";

/// The most characters a thread title keeps.
pub const TITLE_CHARS: usize = 60;

/// The title of a conversation: its first user message, shortened.
pub fn title_of(history: &[Message]) -> Option<String> {
    history
        .iter()
        .find(|m| m.role == MessageRole::User)
        .map(|m| m.content.chars().take(TITLE_CHARS).collect())
}

/// The session codec's name (also the thread record's `codec`).
pub const CODEC: &str = "llm";

/// The CLI's `llm` driver (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct ConversationDriver {
    provider: Provider,
    model: String,
    tools: bool,
    /// What identifies the endpoint in the session fingerprint (the base
    /// URL; the playground's port changes every start, so it uses a name).
    endpoint_id: String,
}

impl ConversationDriver {
    /// A driver calling `model` at `provider`, offering the built-in tools.
    pub fn new(provider: Provider, model: impl Into<String>) -> Self {
        let endpoint_id = provider.endpoint().base_url().to_owned();
        ConversationDriver {
            provider,
            model: model.into(),
            tools: true,
            endpoint_id,
        }
    }

    /// Identify the endpoint by `id` instead of its base URL in the session
    /// fingerprint (threads stay compatible across restarts of a server on
    /// a changing port, such as the playground's).
    #[must_use]
    pub fn with_endpoint_id(mut self, id: impl Into<String>) -> Self {
        self.endpoint_id = id.into();
        self
    }

    /// The provider.
    pub fn provider(&self) -> &Provider {
        &self.provider
    }

    fn protocol(&self) -> &str {
        self.provider.protocol().id()
    }

    fn call_config(&self, req: &Request) -> Result<LlmCallConfig, DriverError> {
        let model = req
            .model_override
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| self.model.clone());
        let mut config = LlmCallConfig::new(model);
        if self.tools {
            config = config.with_tools(tools::definitions());
        }
        if let Some(schema) = req.native_output_schema() {
            let value: Value = serde_json::from_str(&schema.schema_json).map_err(|e| {
                DriverError::Protocol(format!("the output schema is not JSON: {e}"))
            })?;
            let name = if schema.name.is_empty() {
                "output"
            } else {
                schema.name.as_str()
            };
            config = config.with_response_format(ResponseFormat::json_schema(name, value));
        }
        Ok(config)
    }
}

/// The conversation a run continues (from its session state), and the
/// session's resume id.
fn restore(req: &Request) -> Result<(Vec<Message>, String), DriverError> {
    let state = req.session.as_ref().and_then(|s| s.state.as_ref());
    let Some(state) = state.filter(|s| !s.resume_id.is_empty()) else {
        return Ok((Vec::new(), format!("llm-{}", random_hex())));
    };
    let history = match state.data.get(HISTORY_KEY) {
        Some(text) => serde_json::from_str(text).map_err(|e| {
            DriverError::Protocol(format!(
                "the thread's saved conversation does not decode: {e}"
            ))
        })?,
        None => Vec::new(),
    };
    Ok((history, state.resume_id.clone()))
}

fn random_hex() -> String {
    use rand::Rng;
    let n: u64 = rand::rng().random();
    format!("{n:016x}")
}

fn add_usage(total: &mut Option<Usage>, m: &LlmCompletionMetadata) {
    let part = |v: Option<u32>| v.map(u64::from);
    let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    let u = total.get_or_insert_with(Usage::default);
    u.input_tokens = sum(u.input_tokens, part(m.prompt_tokens));
    u.output_tokens = sum(u.output_tokens, part(m.completion_tokens));
    u.cached_input_tokens = sum(u.cached_input_tokens, part(m.cache_read_tokens));
    u.cache_creation_input_tokens =
        sum(u.cache_creation_input_tokens, part(m.cache_creation_tokens));
    u.reasoning_tokens = sum(u.reasoning_tokens, part(m.reasoning_tokens));
    u.total_tokens = sum(u.total_tokens, part(m.total_tokens));
    u.cost_usd = match (u.cost_usd, m.provider_cost_usd) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    };
}

/// What the run loop accumulates.
struct RunState {
    items: Transcript,
    usage: Option<Usage>,
    output: String,
    response_model: String,
    terminal: Option<String>,
}

#[async_trait]
impl Driver for ConversationDriver {
    fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::new(
            "llm",
            format!("LLM API ({} via {})", self.provider.name(), self.protocol()),
        );
        d.models.push(ModelInfo {
            id: self.model.clone(),
            label: String::new(),
        });
        d.sessions.supports_resume = true;
        // The run's instructions are the system message of every call.
        d.instructions = true;
        d.run_policy.permission = HumanDecisionSupport {
            ask: true,
            auto_approve: true,
            auto_reject: true,
            retry: false,
        };
        let native = self.protocol() != "anthropic";
        d.structured_output = StructuredOutputCapability {
            json_schema_native: native,
            json_schema_prompt_validate: true,
            works_with_run: true,
            works_with_streaming: true,
            works_with_hitl: true,
            notes: "the protocol's response format where it has one, else a prompt instruction"
                .into(),
        };
        d
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        agent_adaptor_llm::agent::validate_llm_config(&self.provider, &self.model)
    }

    fn stream_capability(&self) -> Option<StreamCapability> {
        Some(StreamCapability {
            native: true,
            token_level: true,
            reasoning: true,
            tool_call_args: true,
            hitl: true,
        })
    }

    fn session_codec(&self) -> Option<Arc<dyn SessionCodec>> {
        Some(Arc::new(StandardSessionCodec::new(CODEC)))
    }

    fn session_config_fingerprint(&self) -> Option<Result<String, FingerprintError>> {
        Some(canonical_session_config_fingerprint(
            "agent-adaptor-cli/llm/v1",
            &json!({
                "provider": self.provider.name(),
                "protocol": self.protocol(),
                "endpoint": self.endpoint_id,
                "tools": self.tools,
            }),
        ))
    }

    async fn run(
        &self,
        ctx: RunContext,
        req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        let config = self.call_config(&req)?;
        let (mut history, resume_id) = restore(&req)?;
        let workspace = match &req.workspace {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        };
        let mut invocation = OperationalEvent::text(format!(
            "{} {} ({})",
            self.provider.name(),
            config.model,
            self.protocol()
        ));
        invocation.metadata = BTreeMap::from([
            ("provider".to_owned(), self.provider.name().to_owned()),
            ("protocol".to_owned(), self.protocol().to_owned()),
            ("model".to_owned(), config.model.clone()),
            (
                "base_url".to_owned(),
                self.provider.endpoint().display_url(),
            ),
        ]);
        sink.emit(RunEvent::Invocation(invocation)).await?;
        sink.emit_stream(StreamPayload::run_started()).await?;
        history.push(Message::user(req.prompt.clone()));

        let mut st = RunState {
            items: req.new_transcript(),
            usage: None,
            output: String::new(),
            response_model: String::new(),
            terminal: None,
        };
        let mut failure = None;
        let mut finished = false;
        for call in 0..MAX_MODEL_CALLS {
            let mut messages = Vec::with_capacity(history.len() + 1);
            if let Some(instructions) = req.instructions.as_ref().filter(|i| !i.is_empty()) {
                messages.push(Message::system(instructions.clone()));
            }
            messages.extend(history.iter().cloned());
            let outcome = self
                .one_call(&ctx, sink, &mut st.items, call, &messages, &config)
                .await?;
            match outcome {
                CallOutcome::Failed { code, message } => {
                    failure = Some(RunFailure::new(FailureCode::parse(&code), message));
                    break;
                }
                CallOutcome::Done {
                    text,
                    reasoning,
                    tool_calls,
                    metadata,
                } => {
                    add_usage(&mut st.usage, &metadata);
                    if let Some(m) = metadata.response_model.clone().or(metadata.model.clone()) {
                        st.response_model = m;
                    }
                    st.terminal = serde_json::to_string(&*metadata).ok();
                    let calls: Vec<ToolCall> = tool_calls.iter().map(|(_, c)| c.clone()).collect();
                    // Moved, not copied: the answer is taken back out of
                    // the history once the history is saved.
                    history.push(
                        Message::assistant(text)
                            .with_tool_calls(calls)
                            .with_reasoning(reasoning),
                    );
                    if tool_calls.is_empty() {
                        finished = true;
                        break;
                    }
                    for (stream_id, call) in tool_calls {
                        let output = self
                            .tool(sink, &mut st.items, &stream_id, &call, &workspace)
                            .await?;
                        history.push(Message::tool_result(call.id.clone(), output));
                    }
                }
            }
        }
        if failure.is_none() && !finished {
            failure = Some(RunFailure::new(
                FailureCode::AgentError,
                format!("the model was still calling tools after {MAX_MODEL_CALLS} calls"),
            ));
        }
        let checkpoint = match failure {
            Some(ref f) => {
                sink.emit_stream(StreamPayload::run_error(f.clone()))
                    .await?;
                None
            }
            None => {
                sink.emit_stream(StreamPayload::run_finished(st.usage.clone()))
                    .await?;
                let messages = serde_json::to_string(&history)
                    .map_err(|e| DriverError::Protocol(format!("cannot save the thread: {e}")))?;
                let mut data = BTreeMap::from([(HISTORY_KEY.to_owned(), messages)]);
                if let Some(title) = title_of(&history) {
                    data.insert(TITLE_KEY.to_owned(), title);
                }
                // The last message is the answer (a finished run ends
                // without tool calls).
                st.output = history.pop().map(|m| m.content).unwrap_or_default();
                drop(history);
                Some(Checkpoint::valid(SessionState {
                    resume_id: resume_id.clone(),
                    display_id: resume_id.clone(),
                    data,
                }))
            }
        };
        let terminal = match (&failure, &st.terminal) {
            (None, Some(json)) => TerminalPayload::new("done", json).ok(),
            _ => None,
        };
        Ok(Response {
            output: st.output,
            raw: RawStreams {
                terminal,
                ..Default::default()
            },
            transcript: st.items,
            usage: st.usage,
            checkpoint,
            failure,
            provider: self.provider.name().to_owned(),
            model: if st.response_model.is_empty() {
                config.model.clone()
            } else {
                st.response_model
            },
            ..Default::default()
        })
    }
}

impl ConversationDriver {
    /// One model call, translated live.
    async fn one_call(
        &self,
        ctx: &RunContext,
        sink: &dyn EventSink,
        items: &mut Transcript,
        call: usize,
        messages: &[Message],
        config: &LlmCallConfig,
    ) -> Result<CallOutcome, DriverError> {
        let mut live = Live::new(sink, items, call);
        let opened = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => return Err(DriverError::Cancelled),
            opened = self.provider.chat_completion_stream(messages, config) => opened,
        };
        let mut stream = match opened {
            Ok(stream) => stream,
            Err(error) => return live.failed(kind_name(error.kind), error.message).await,
        };
        loop {
            let next = tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => return Err(DriverError::Cancelled),
                next = stream.next() => next,
            };
            match next {
                Some(Ok(event)) => {
                    if let Some(outcome) = live.event(event).await? {
                        return Ok(outcome);
                    }
                }
                Some(Err(error)) => {
                    return live.failed(kind_name(error.kind), error.message).await;
                }
                None => {
                    return live
                        .failed(
                            "incomplete".into(),
                            "the provider's stream ended without a terminal event".into(),
                        )
                        .await;
                }
            }
        }
    }

    /// Ask for approval of one tool call and run it when approved; the text
    /// given back to the model.
    async fn tool(
        &self,
        sink: &dyn EventSink,
        items: &mut Transcript,
        stream_id: &str,
        call: &ToolCall,
        workspace: &std::path::Path,
    ) -> Result<String, DriverError> {
        let mut request =
            DecisionRequest::new(DecisionKind::Permission, format!("tool:{}", call.name));
        request.tool_call_id = stream_id.to_owned();
        request.prompt = format!("Allow {} {}?", call.name, call.arguments);
        request.payload = Some(json!({"tool": call.name, "arguments": call.arguments}));
        let decision = match sink.decisions() {
            Some(d) => d.request_decision(request).await?,
            None => agent_adaptor_driver::DecisionResponse {
                request_id: String::new(),
                result: DecisionResult::Rejected,
                choice: String::new(),
                answer: BTreeMap::new(),
                text: "the host cannot answer approvals".into(),
            },
        };
        let (text, is_error) = if decision.result == DecisionResult::Approved {
            let out = tools::run(&call.name, &call.arguments, workspace);
            (out.text, out.is_error)
        } else {
            let why = if decision.text.is_empty() {
                String::new()
            } else {
                format!(": {}", decision.text)
            };
            (
                format!(
                    "The user did not allow this tool call ({}{why}). Do not retry it; answer without it.",
                    decision.result.as_str()
                ),
                true,
            )
        };
        sink.emit_stream(StreamPayload::tool_call_result(
            stream_id.to_owned(),
            Some(Value::String(text.clone())),
        ))
        .await?;
        let item = TranscriptItem::tool_result(stream_id.to_owned(), text.clone(), is_error);
        sink.emit(RunEvent::Item(items.share(item))).await?;
        Ok(text)
    }
}
