//! The agent `Driver` over a [`Provider`]:
//! one model turn per run, through the same `Runner` / `RunStream` /
//! `Event` / `RunResult` as the CLI drivers.
//!
//! What a run does: the request's instructions become a system message and
//! its prompt the user message; the model is the configured one unless the
//! request overrides it; an output schema becomes the provider's native
//! response format. Live payloads (when the request streams): `run.started`,
//! text and reasoning lifecycles at token level, tool calls with their
//! argument deltas, and `run.finished` with usage or `run.error` with the
//! provider's code and status. The response carries the text, the
//! transcript, usage, and as its terminal payload the JSON of the final
//! event (the completion metadata, or the error).
//!
//! The model's tool calls are reported, not executed: a run is one turn.

mod probe;
mod translate;

use std::collections::BTreeMap;

use agent_adaptor_driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, ModelInfo, OperationalEvent, Request,
    Response, RunContext, RunEvent, StreamCapability, StructuredOutputCapability,
};
use async_trait::async_trait;
use futures::StreamExt;

use crate::message::{LlmCallConfig, Message, ResponseFormat};
use crate::provider::Provider;

use translate::Translator;

/// Runs one model turn of a [`Provider`] as an agent run.
///
/// ```
/// use agent_adaptor_llm::agent::LlmDriver;
/// use agent_adaptor_llm::{OpenAiChat, Provider};
///
/// let provider = Provider::new("local", OpenAiChat::new())
///     .base_url("http://127.0.0.1:8080/v1")
///     .api_key("local-key");
/// let driver = LlmDriver::new(provider, "gpt-test");
/// # let _ = driver;
/// ```
#[derive(Debug, Clone)]
pub struct LlmDriver {
    provider: Provider,
    config: LlmCallConfig,
}

impl LlmDriver {
    /// A driver calling `model` at `provider`.
    pub fn new(provider: Provider, model: impl Into<String>) -> Self {
        LlmDriver {
            provider,
            config: LlmCallConfig::new(model),
        }
    }

    /// With every call setting (tools, temperature, limits …); the model is
    /// the config's.
    #[must_use]
    pub fn with_config(mut self, config: LlmCallConfig) -> Self {
        self.config = config;
        self
    }

    /// The provider.
    pub fn provider(&self) -> &Provider {
        &self.provider
    }

    /// The call settings.
    pub fn config(&self) -> &LlmCallConfig {
        &self.config
    }

    fn call_config(&self, req: &Request) -> Result<LlmCallConfig, DriverError> {
        let mut config = self.config.clone();
        if let Some(model) = req.model_override.as_ref().filter(|m| !m.is_empty()) {
            config.model = model.clone();
        }
        // Only a schema core enforces natively becomes the response format;
        // a prompt-validated one is already in the prompt.
        if let Some(schema) = req.native_output_schema() {
            let value: serde_json::Value =
                serde_json::from_str(&schema.schema_json).map_err(|error| {
                    DriverError::Protocol(format!("the output schema is not JSON: {error}"))
                })?;
            let name = if schema.name.is_empty() {
                "output"
            } else {
                schema.name.as_str()
            };
            config.response_format = Some(ResponseFormat::json_schema(name, value));
        }
        Ok(config)
    }
}

/// Native where the wire protocol has a response format (Chat Completions,
/// Responses, Gemini, OpenRouter's Chat); Anthropic Messages has none, so
/// there core appends the instruction and validates the text. Every
/// protocol can follow the instruction.
fn structured_output_capability(protocol: &str) -> StructuredOutputCapability {
    let native = protocol != "anthropic";
    StructuredOutputCapability {
        json_schema_native: native,
        json_schema_prompt_validate: true,
        works_with_run: true,
        works_with_streaming: true,
        works_with_hitl: false,
        notes: if native {
            "sent as the protocol's response format (json_schema, strict)".into()
        } else {
            "Anthropic Messages has no response format: prompt instruction, validated by core"
                .into()
        },
    }
}

/// The configuration check of a driver of type `llm` over `provider`: a model
/// is named and the base URL is http(s). Shared by every agent driver built
/// on a [`Provider`] (this crate's [`LlmDriver`], the CLI's tool loop).
pub fn validate_llm_config(provider: &Provider, model: &str) -> Result<(), ConfigError> {
    let invalid = |reason: String| ConfigError {
        driver: "llm".into(),
        reason,
    };
    if model.trim().is_empty() {
        return Err(invalid("no model configured".into()));
    }
    let base = provider.endpoint().base_url();
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        let shown = provider.endpoint().display_url();
        return Err(invalid(format!("base URL {shown:?} is not http(s)")));
    }
    Ok(())
}

fn messages(req: &Request) -> Vec<Message> {
    let mut messages = Vec::with_capacity(2);
    if let Some(instructions) = req.instructions.as_ref().filter(|i| !i.is_empty()) {
        messages.push(Message::system(instructions.clone()));
    }
    messages.push(Message::user(req.prompt.clone()));
    messages
}

#[async_trait]
impl Driver for LlmDriver {
    fn descriptor(&self) -> Descriptor {
        let mut descriptor = Descriptor::new(
            "llm",
            format!(
                "LLM API ({} via {})",
                self.provider.name(),
                self.provider.protocol().id()
            ),
        );
        // The instructions become the first system message.
        descriptor.instructions = true;
        if !self.config.model.is_empty() {
            descriptor.models.push(ModelInfo {
                id: self.config.model.clone(),
                label: String::new(),
            });
        }
        descriptor.structured_output = structured_output_capability(self.provider.protocol().id());
        descriptor
    }

    fn validate_config(&self) -> Result<(), ConfigError> {
        validate_llm_config(&self.provider, &self.config.model)
    }

    fn stream_capability(&self) -> Option<StreamCapability> {
        Some(StreamCapability {
            native: true,
            token_level: true,
            reasoning: true,
            tool_call_args: true,
            hitl: false,
        })
    }

    async fn run(
        &self,
        ctx: RunContext,
        req: Request,
        sink: &dyn EventSink,
    ) -> Result<Response, DriverError> {
        let config = self.call_config(&req)?;
        let mut invocation = OperationalEvent::text(format!(
            "{} {} ({})",
            self.provider.name(),
            config.model,
            self.provider.protocol().id()
        ));
        invocation.metadata = BTreeMap::from([
            ("provider".to_owned(), self.provider.name().to_owned()),
            (
                "protocol".to_owned(),
                self.provider.protocol().id().to_owned(),
            ),
            ("model".to_owned(), config.model.clone()),
            (
                "base_url".to_owned(),
                self.provider.endpoint().display_url(),
            ),
        ]);
        sink.emit(RunEvent::Invocation(invocation)).await?;

        let mut translator = Translator::new(
            &req.run_id,
            req.streaming,
            &config.model,
            req.new_transcript(),
        );
        translator.start(sink).await?;
        let messages = messages(&req);
        let opened = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => return Err(DriverError::Cancelled),
            opened = self.provider.chat_completion_stream(&messages, &config) => opened,
        };
        let mut stream = match opened {
            Ok(stream) => stream,
            Err(error) => {
                translator.call_failed(sink, &error).await?;
                return Ok(translator.into_response(self.provider.name()));
            }
        };
        loop {
            let item = tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => return Err(DriverError::Cancelled),
                item = stream.next() => item,
            };
            match item {
                Some(Ok(event)) => {
                    if translator.event(sink, event).await? {
                        break;
                    }
                }
                Some(Err(error)) => {
                    translator.call_failed(sink, &error).await?;
                    break;
                }
                None => {
                    translator.ended_without_terminal(sink).await?;
                    break;
                }
            }
        }
        Ok(translator.into_response(self.provider.name()))
    }

    fn check_environment(&self) -> Option<agent_adaptor_driver::EnvironmentReport> {
        Some(probe::environment(self))
    }

    fn detect_model(&self) -> Option<agent_adaptor_driver::DetectedModel> {
        probe::detect_model(self)
    }

    fn quota(&self) -> Option<agent_adaptor_driver::QuotaReport> {
        Some(probe::quota())
    }

    fn config_schema(&self) -> Option<agent_adaptor_driver::ConfigSchema> {
        Some(probe::config_schema())
    }
}
