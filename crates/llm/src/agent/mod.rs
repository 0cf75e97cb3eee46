//! The LLM agent: a `Driver` over a [`Provider`] that runs the multi-step
//! tool loop, through the same `Runner` / `RunStream` / `Event` /
//! `RunResult` as the CLI drivers.
//!
//! A run is a sequence of *steps* (model turns): the model answers; when the
//! answer calls tools, the loop runs every call of that turn concurrently
//! and sends the results back, in the model's order, in the next turn; it
//! ends at the first answer without tool calls. The tools are
//!
//! * the run's **host tools** ([`Request::host_tools`]): their specs are
//!   the provider's tool definitions, each call goes to
//!   [`HostTools::call`](agent_adaptor_driver::HostTools::call), which
//!   checks the input, asks for approval, runs the handler under its
//!   deadline and the run's cancellation (events:
//!   [`ToolScope::Host`](agent_adaptor_driver::ToolScope::Host));
//! * the tools of the run's **MCP servers** ([`Request::mcp_servers`],
//!   stdio and Streamable HTTP, reached with the `rmcp` client), offered
//!   to the model as `<server>__<tool>` after the server's allow / deny
//!   lists, and put to the host's approval unless the server's policy
//!   auto-approves them (source [`MCP_APPROVAL_SOURCE`]; events:
//!   [`ToolScope::Mcp`](agent_adaptor_driver::ToolScope::Mcp)).
//!
//! A model that still calls tools after [`max_steps`](LlmDriver::max_steps)
//! turns (default [`DEFAULT_MAX_STEPS`]) fails the run with the code
//! [`STEP_LIMIT_CODE`]. Cancelling the run stops the model's stream and
//! every tool call in flight. Usage is summed over the steps.
//!
//! The conversation (every message, reasoning to replay included) is the
//! thread's resume state ([`session`]), so the agent runs on a `Thread`
//! whose store keeps it, and the next turn sends the whole conversation.
//!
//! Live payloads (when the request streams): `run.started`, text and
//! reasoning lifecycles at token level per step, tool calls with their
//! argument deltas, scope and result, and `run.finished` with the summed
//! usage or `run.error` with the provider's code and status. The response
//! carries the final answer, the transcript, usage, and as its terminal
//! payload the JSON of the last step's final event.

mod exec;
mod mcp;
mod probe;
pub mod session;
mod steps;
mod tools;
mod translate;

pub use exec::MCP_APPROVAL_SOURCE;

use std::sync::Arc;

use agent_adaptor_driver::{
    ConfigError, Descriptor, Driver, DriverError, EventSink, FingerprintError, HostToolChannel,
    HumanDecisionSupport, McpSupport, ModelInfo, Request, Response, RunContext, SessionCodec,
    StandardSessionCodec, StreamCapability, StructuredOutputCapability,
    canonical_session_config_fingerprint,
};
use async_trait::async_trait;
use serde_json::json;

use crate::message::{LlmCallConfig, ResponseFormat};
use crate::provider::Provider;

/// The most model turns a run takes unless
/// [`max_steps`](LlmDriver::max_steps) says otherwise.
pub const DEFAULT_MAX_STEPS: usize = 8;

/// The failure code of a run whose model still called tools at the step
/// limit (`RunFailure::code`; metadata `max_steps`).
pub const STEP_LIMIT_CODE: &str = "step_limit";

/// The multi-step LLM agent over a [`Provider`] (see the [module
/// docs](self)).
///
/// ```
/// use agent_adaptor_llm::agent::LlmDriver;
/// use agent_adaptor_llm::{OpenAiChat, Provider};
///
/// let provider = Provider::new("local", OpenAiChat::new())
///     .base_url("http://127.0.0.1:8080/v1")
///     .api_key("local-key");
/// let driver = LlmDriver::new(provider, "gpt-test").max_steps(4);
/// # let _ = driver;
/// ```
#[derive(Debug, Clone)]
pub struct LlmDriver {
    provider: Provider,
    config: LlmCallConfig,
    max_steps: usize,
    /// What identifies the endpoint in the session fingerprint.
    endpoint_id: String,
}

impl LlmDriver {
    /// A driver calling `model` at `provider`.
    pub fn new(provider: Provider, model: impl Into<String>) -> Self {
        let endpoint_id = provider.endpoint().base_url().to_owned();
        LlmDriver {
            provider,
            config: LlmCallConfig::new(model),
            max_steps: DEFAULT_MAX_STEPS,
            endpoint_id,
        }
    }

    /// With every call setting (temperature, limits …); the model is the
    /// config's. Tools in it are offered besides the run's host and MCP
    /// tools, but the loop cannot run them: a call of one is answered as an
    /// unknown tool.
    #[must_use]
    pub fn with_config(mut self, config: LlmCallConfig) -> Self {
        self.config = config;
        self
    }

    /// The most model turns (steps) one run takes (at least 1).
    #[must_use]
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.max_steps = steps.max(1);
        self
    }

    /// Identify the endpoint by `id` instead of its base URL in the session
    /// fingerprint: threads stay resumable across restarts of a server on a
    /// changing port (such as a local playground's).
    #[must_use]
    pub fn with_endpoint_id(mut self, id: impl Into<String>) -> Self {
        self.endpoint_id = id.into();
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

    /// The step limit.
    pub fn step_limit(&self) -> usize {
        self.max_steps
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
        works_with_hitl: true,
        notes: if native {
            "sent as the protocol's response format (json_schema, strict)".into()
        } else {
            "Anthropic Messages has no response format: prompt instruction, validated by core"
                .into()
        },
    }
}

/// The configuration check of a driver of type `llm` over `provider`: a model
/// is named and the base URL is http(s).
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

/// What the loop carries of the run's MCP servers.
fn mcp_support() -> McpSupport {
    McpSupport {
        stdio: true,
        http: true,
        sse: false,
        headers: true,
        bearer_token_env: true,
        tool_filter: true,
        auto_approve: true,
        // The loop loads no server but the run's.
        strict: true,
        required: true,
    }
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
        // The instructions are the system message of every model turn.
        descriptor.instructions = true;
        if !self.config.model.is_empty() {
            descriptor.models.push(ModelInfo {
                id: self.config.model.clone(),
                label: String::new(),
            });
        }
        descriptor.sessions.supports_resume = true;
        // Tool calls are put to the host as permission decisions.
        descriptor.run_policy.permission = HumanDecisionSupport {
            ask: true,
            auto_approve: true,
            auto_reject: true,
            retry: false,
        };
        descriptor.structured_output = structured_output_capability(self.provider.protocol().id());
        descriptor.mcp = mcp_support();
        descriptor.host_tools = HostToolChannel::Native;
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
            hitl: true,
            observation: agent_adaptor_driver::ObservationSupport::NONE,
        })
    }

    fn session_codec(&self) -> Option<Arc<dyn SessionCodec>> {
        Some(Arc::new(StandardSessionCodec::new(session::CODEC)))
    }

    fn session_config_fingerprint(&self) -> Option<Result<String, FingerprintError>> {
        // The scheme and fields of the first `llm` thread driver (the CLI's),
        // kept so that its threads stay resumable.
        Some(canonical_session_config_fingerprint(
            session::FINGERPRINT_SCHEME,
            &json!({
                "provider": self.provider.name(),
                "protocol": self.provider.protocol().id(),
                "endpoint": self.endpoint_id,
                "tools": true,
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
        steps::run(self, config, &ctx, &req, sink).await
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
