//! What a call sends: the conversation ([`Message`]), tools
//! ([`ToolDefinition`]), and the call's settings ([`LlmCallConfig`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::collector::TurnLimits;
use crate::reasoning::ReasoningContentPart;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// Instructions. Vendors with a separate system field (Anthropic,
    /// Gemini, Responses) get every system message joined by a blank line.
    System,
    /// The user.
    User,
    /// The model (text, tool calls, reasoning to replay).
    Assistant,
    /// A tool result (`tool_call_id` names the call).
    Tool,
}

/// One conversation message (text content; multimodal parts are not
/// supported yet).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Message {
    /// The author.
    pub role: MessageRole,
    /// The text (a tool result's output for [`MessageRole::Tool`]).
    pub content: String,
    /// Tool calls the assistant made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool result: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Reasoning items to replay verbatim (assistant messages).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<ReasoningContentPart>,
}

impl Message {
    fn with_role(role: MessageRole, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            reasoning: Vec::new(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::with_role(MessageRole::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::with_role(MessageRole::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::with_role(MessageRole::Assistant, content)
    }

    /// A tool result for `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, output: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(tool_call_id.into()),
            ..Message::with_role(MessageRole::Tool, output)
        }
    }

    /// With tool calls (assistant).
    #[must_use]
    pub fn with_tool_calls(mut self, calls: Vec<ToolCall>) -> Self {
        self.tool_calls = calls;
        self
    }

    /// With reasoning to replay (assistant).
    #[must_use]
    pub fn with_reasoning(mut self, reasoning: Vec<ReasoningContentPart>) -> Self {
        self.reasoning = reasoning;
        self
    }
}

/// Every system message's text, joined by a blank line; `None` when there
/// is none.
pub fn fold_system_messages(messages: &[Message]) -> Option<String> {
    let parts: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == MessageRole::System)
        .map(|m| m.content.as_str())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// A tool call, arguments parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id (the provider's, or `call_{n}` where it gives none).
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments (an object; `{}` when a finished call's arguments were
    /// not valid JSON).
    pub arguments: Value,
}

impl ToolCall {
    /// A tool call.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// A function the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// The name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}

impl ToolDefinition {
    /// A function tool.
    pub fn function(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
    ) -> Self {
        ToolDefinition {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// How hard a reasoning model should think.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// Little.
    Low,
    /// Some.
    Medium,
    /// Much.
    High,
}

impl ReasoningEffort {
    /// The OpenAI word.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }

    /// A thinking budget in tokens for vendors that take one (Anthropic,
    /// Gemini).
    pub fn budget_tokens(self) -> u32 {
        match self {
            ReasoningEffort::Low => 2_048,
            ReasoningEffort::Medium => 8_192,
            ReasoningEffort::High => 24_576,
        }
    }
}

/// A JSON Schema the answer must follow (provider-native structured output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponseFormat {
    /// The schema's name.
    pub name: String,
    /// The JSON Schema.
    pub schema: Value,
    /// Ask for strict enforcement where the provider has it.
    pub strict: bool,
}

impl ResponseFormat {
    /// A strict JSON-schema format.
    pub fn json_schema(name: impl Into<String>, schema: Value) -> Self {
        ResponseFormat {
            name: name.into(),
            schema,
            strict: true,
        }
    }
}

/// The settings of one call. Construct with [`LlmCallConfig::new`] and the
/// `with_*` setters.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct LlmCallConfig {
    /// The model id.
    pub model: String,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// The output token cap (vendors that require one get a default).
    pub max_tokens: Option<u32>,
    /// Tools the model may call.
    pub tools: Vec<ToolDefinition>,
    /// Allow several tool calls in one answer (provider default when `None`).
    pub parallel_tool_calls: Option<bool>,
    /// Reasoning effort; `None` leaves reasoning to the provider's default.
    pub reasoning: Option<ReasoningEffort>,
    /// Structured output.
    pub response_format: Option<ResponseFormat>,
    /// Extra HTTP headers for this call (they replace same-named headers,
    /// auth excepted).
    pub extra_headers: Vec<(String, String)>,
    /// Time and size bounds (see [`TurnLimits`]).
    pub limits: TurnLimits,
}

impl LlmCallConfig {
    /// A config for `model`.
    pub fn new(model: impl Into<String>) -> Self {
        LlmCallConfig {
            model: model.into(),
            ..Default::default()
        }
    }

    /// With a temperature.
    #[must_use]
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// With an output token cap.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// With tools.
    #[must_use]
    pub fn with_tools(mut self, tools: Vec<ToolDefinition>) -> Self {
        self.tools = tools;
        self
    }

    /// With reasoning effort.
    #[must_use]
    pub fn with_reasoning(mut self, effort: ReasoningEffort) -> Self {
        self.reasoning = Some(effort);
        self
    }

    /// With a response format.
    #[must_use]
    pub fn with_response_format(mut self, format: ResponseFormat) -> Self {
        self.response_format = Some(format);
        self
    }

    /// With limits.
    #[must_use]
    pub fn with_limits(mut self, limits: TurnLimits) -> Self {
        self.limits = limits;
        self
    }

    /// With an extra header.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_headers.push((name.into(), value.into()));
        self
    }
}
