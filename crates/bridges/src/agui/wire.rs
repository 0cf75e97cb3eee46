//! AG-UI 1.0 wire types: the events we emit and the `RunAgentInput` we accept.
//!
//! Written by hand from the `@ag-ui/core` 1.0.0 schemas (the version our
//! tests pin, see [`AGUI_CORE_VERSION`]). Events serialize as compact
//! camelCase JSON with a SCREAMING_SNAKE `type`; optional fields are omitted,
//! never `null` (the official client rejects `null` optionals), and
//! timestamps are integer milliseconds.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The AG-UI protocol version this bridge speaks (`PROTOCOL_VERSION` of
/// `@ag-ui/core`).
pub const PROTOCOL_VERSION: &str = "1.0";

/// The exact `@ag-ui/core` npm version whose schemas these types follow and
/// which the interop tests pin in `tests/bridges/package-lock.json`.
pub const AGUI_CORE_VERSION: &str = "1.0.0";

/// One AG-UI event: its body plus the optional integer-millisecond
/// timestamp every event may carry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AguiEvent {
    /// The event itself (its `type` and fields).
    #[serde(flatten)]
    pub body: EventBody,
    /// The subagent whose work this event is (`subagentRunId`, which every
    /// 1.0 event may carry); `None` for the main agent's own events.
    #[serde(rename = "subagentRunId", skip_serializing_if = "Option::is_none")]
    pub subagent_run_id: Option<String>,
    /// Milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
}

impl AguiEvent {
    /// An event with a timestamp.
    pub fn new(body: EventBody, timestamp: Option<i64>) -> Self {
        AguiEvent {
            body,
            subagent_run_id: None,
            timestamp,
        }
    }

    /// This event, attributed to the subagent `subagent_run_id`.
    pub fn in_subagent(mut self, subagent_run_id: Option<String>) -> Self {
        self.subagent_run_id = subagent_run_id;
        self
    }

    /// The wire `type` (`"RUN_STARTED"` …).
    pub fn type_name(&self) -> &'static str {
        self.body.type_name()
    }

    /// Compact JSON, one line (serde escapes newlines inside strings).
    pub fn to_json(&self) -> String {
        // Serializing these types cannot fail: every map key is a string and
        // every value is plain data.
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(
                "{{\"type\":\"RUN_ERROR\",\"message\":{}}}",
                Value::String(format!("event serialization failed: {e}"))
            )
        })
    }
}

/// The events this bridge emits (a subset of the 1.0 list).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum EventBody {
    /// The run began (always first).
    RunStarted(RunStartedEvent),
    /// The run ended: success, interrupt or cancelled.
    RunFinished(RunFinishedEvent),
    /// The run failed.
    RunError(RunErrorEvent),
    /// A provider step began.
    StepStarted(StepEvent),
    /// A provider step ended.
    StepFinished(StepEvent),
    /// A text message opens.
    TextMessageStart(TextMessageStartEvent),
    /// A text delta.
    TextMessageContent(DeltaEvent),
    /// A text message closes.
    TextMessageEnd(MessageIdEvent),
    /// A tool call opens.
    ToolCallStart(ToolCallStartEvent),
    /// A fragment of a tool call's JSON arguments.
    ToolCallArgs(ToolCallArgsEvent),
    /// A tool call closes.
    ToolCallEnd(ToolCallIdEvent),
    /// A tool call's result.
    ToolCallResult(ToolCallResultEvent),
    /// A reasoning span opens.
    ReasoningStart(MessageIdEvent),
    /// A reasoning message opens.
    ReasoningMessageStart(ReasoningMessageStartEvent),
    /// A reasoning delta.
    ReasoningMessageContent(DeltaEvent),
    /// A reasoning message closes.
    ReasoningMessageEnd(MessageIdEvent),
    /// A reasoning span closes.
    ReasoningEnd(MessageIdEvent),
    /// Structured progress (a todo list, a capability invocation, a
    /// subagent's progress) shown as an activity message.
    ActivitySnapshot(ActivitySnapshotEvent),
    /// A subagent invocation began.
    SubagentStarted(SubagentStartedEvent),
    /// A subagent invocation ended (or was suspended by an interrupt).
    SubagentFinished(SubagentFinishedEvent),
    /// A subagent invocation failed.
    SubagentError(SubagentErrorEvent),
    /// An application-defined event.
    Custom(CustomEvent),
    /// The thread's conversation so far (sent right after `RUN_STARTED`).
    MessagesSnapshot(MessagesSnapshotEvent),
}

impl EventBody {
    /// The wire `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            EventBody::RunStarted(_) => "RUN_STARTED",
            EventBody::RunFinished(_) => "RUN_FINISHED",
            EventBody::RunError(_) => "RUN_ERROR",
            EventBody::StepStarted(_) => "STEP_STARTED",
            EventBody::StepFinished(_) => "STEP_FINISHED",
            EventBody::TextMessageStart(_) => "TEXT_MESSAGE_START",
            EventBody::TextMessageContent(_) => "TEXT_MESSAGE_CONTENT",
            EventBody::TextMessageEnd(_) => "TEXT_MESSAGE_END",
            EventBody::ToolCallStart(_) => "TOOL_CALL_START",
            EventBody::ToolCallArgs(_) => "TOOL_CALL_ARGS",
            EventBody::ToolCallEnd(_) => "TOOL_CALL_END",
            EventBody::ToolCallResult(_) => "TOOL_CALL_RESULT",
            EventBody::ReasoningStart(_) => "REASONING_START",
            EventBody::ReasoningMessageStart(_) => "REASONING_MESSAGE_START",
            EventBody::ReasoningMessageContent(_) => "REASONING_MESSAGE_CONTENT",
            EventBody::ReasoningMessageEnd(_) => "REASONING_MESSAGE_END",
            EventBody::ReasoningEnd(_) => "REASONING_END",
            EventBody::ActivitySnapshot(_) => "ACTIVITY_SNAPSHOT",
            EventBody::SubagentStarted(_) => "SUBAGENT_STARTED",
            EventBody::SubagentFinished(_) => "SUBAGENT_FINISHED",
            EventBody::SubagentError(_) => "SUBAGENT_ERROR",
            EventBody::Custom(_) => "CUSTOM",
            EventBody::MessagesSnapshot(_) => "MESSAGES_SNAPSHOT",
        }
    }

    /// True for `RUN_FINISHED` and `RUN_ERROR`.
    pub fn is_terminal(&self) -> bool {
        matches!(self, EventBody::RunFinished(_) | EventBody::RunError(_))
    }
}

/// `RUN_STARTED`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStartedEvent {
    /// The AG-UI thread id, echoed from the request.
    pub thread_id: String,
    /// The AG-UI run id, echoed from the request.
    pub run_id: String,
}

/// `RUN_FINISHED`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFinishedEvent {
    /// The AG-UI thread id.
    pub thread_id: String,
    /// The AG-UI run id.
    pub run_id: String,
    /// The run's answer (structured output, else the final text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// How the run ended.
    pub outcome: RunOutcome,
    /// Token usage, when the provider reported it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Vec<TokenUsage>>,
    /// Open metadata (AG-UI's user space): `{"agentAdaptor": {"costUsd": …}}`
    /// when the provider reported what the run cost, in US dollars.
    /// `TokenUsage` is a closed shape that clients strip unknown fields from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// `RUN_FINISHED.outcome`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum RunOutcome {
    /// The run completed.
    Success {},
    /// The run stopped to ask; a new run carrying `resume` answers.
    Interrupt {
        /// What it asks (at least one).
        interrupts: Vec<Interrupt>,
    },
    /// The run was cancelled.
    Cancelled {},
}

/// One open question of an interrupted run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interrupt {
    /// Unique id; a resume entry answers it by this id.
    pub id: String,
    /// Why the run stopped (`tool_approval`, `plan_review`, `question`).
    pub reason: String,
    /// A human-readable prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The tool call an approval concerns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// JSON Schema of the expected `resume[].payload`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
    /// When the answer is no longer accepted (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Details: the approval's kind, source, choices and payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// `TokenUsage` of `RUN_FINISHED.usage` / `RUN_ERROR.usage`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// The provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Input tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Total tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Reasoning tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Input tokens read from a prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// Input tokens written to a prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write_input_tokens: Option<u64>,
}

/// `MESSAGES_SNAPSHOT`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessagesSnapshotEvent {
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
}

/// One message of a [`MessagesSnapshotEvent`] (the AG-UI `Message` union,
/// the roles this bridge reports).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// A user prompt.
    User {
        /// The message id.
        id: String,
        /// The prompt.
        content: String,
    },
    /// An assistant turn: text and/or tool calls.
    Assistant {
        /// The message id.
        id: String,
        /// The text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// The tool calls it made.
        #[serde(default, rename = "toolCalls", skip_serializing_if = "Option::is_none")]
        tool_calls: Option<Vec<MessageToolCall>>,
    },
    /// A tool's result.
    Tool {
        /// The message id.
        id: String,
        /// The result as text.
        content: String,
        /// The call it answers.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
    },
}

/// A tool call inside an assistant [`Message`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageToolCall {
    /// The tool call id.
    pub id: String,
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Name and JSON arguments.
    pub function: FunctionCall,
}

/// The name and JSON arguments (as text) of a [`MessageToolCall`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The tool's name.
    pub name: String,
    /// The arguments, JSON text.
    pub arguments: String,
}

/// `RUN_ERROR`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunErrorEvent {
    /// What went wrong.
    pub message: String,
    /// A machine code (our failure reason: `agent_error`, `approval_denied` …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Token usage of the partial run, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Vec<TokenUsage>>,
}

/// `STEP_STARTED` / `STEP_FINISHED`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepEvent {
    /// The step's name.
    pub step_name: String,
}

/// Who speaks in a text message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TextRole {
    /// The assistant.
    Assistant,
    /// The user (synthesized above the driver).
    User,
}

/// `TEXT_MESSAGE_START`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TextMessageStartEvent {
    /// The message id.
    pub message_id: String,
    /// Who speaks.
    pub role: TextRole,
}

/// `TEXT_MESSAGE_CONTENT` / `REASONING_MESSAGE_CONTENT`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeltaEvent {
    /// The message id.
    pub message_id: String,
    /// The text delta (never empty from this bridge).
    pub delta: String,
}

/// Events that carry only a message id.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageIdEvent {
    /// The message (or reasoning span) id.
    pub message_id: String,
}

/// `REASONING_MESSAGE_START`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningMessageStartEvent {
    /// The reasoning message id.
    pub message_id: String,
    /// Always `"reasoning"`.
    pub role: ReasoningRole,
}

/// The only role of a reasoning message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningRole {
    /// `"reasoning"`.
    Reasoning,
}

/// `TOOL_CALL_START`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallStartEvent {
    /// The tool call id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_call_name: String,
}

/// `TOOL_CALL_ARGS`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallArgsEvent {
    /// The tool call id.
    pub tool_call_id: String,
    /// A fragment of the JSON arguments.
    pub delta: String,
}

/// `TOOL_CALL_END`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallIdEvent {
    /// The tool call id.
    pub tool_call_id: String,
}

/// The only role of a tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolRole {
    /// `"tool"`.
    Tool,
}

/// `TOOL_CALL_RESULT`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallResultEvent {
    /// The id of the tool message this result becomes.
    pub message_id: String,
    /// The tool call it answers.
    pub tool_call_id: String,
    /// The result: the string itself, or the JSON text of any other value.
    pub content: String,
    /// Always `"tool"`.
    pub role: ToolRole,
}

/// `ACTIVITY_SNAPSHOT`: the whole content of an activity message (it
/// replaces the message's earlier content).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivitySnapshotEvent {
    /// The activity message's id (unique across all messages of the thread).
    pub message_id: String,
    /// What kind of activity (`todo`, `capability`, `subagent`).
    pub activity_type: String,
    /// The content: always a JSON object.
    pub content: Value,
}

/// `SUBAGENT_STARTED`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentStartedEvent {
    /// The subagent invocation's id (our delegation scope id).
    pub subagent_run_id: String,
    /// The delegate's name.
    pub name: String,
    /// The parent agent's tool call that started it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
}

/// `SUBAGENT_FINISHED`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentFinishedEvent {
    /// The subagent invocation's id.
    pub subagent_run_id: String,
    /// What the subagent answered, when it said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Success, or suspended by the run's interrupt.
    pub outcome: SubagentOutcome,
}

/// `SUBAGENT_FINISHED.outcome`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum SubagentOutcome {
    /// The subagent completed its work.
    Success {},
    /// The subagent waits on the run's interrupts; the resuming run
    /// continues it.
    Suspended {
        /// The interrupts it waits on.
        #[serde(rename = "interruptIds")]
        interrupt_ids: Vec<String>,
    },
}

/// `SUBAGENT_ERROR`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentErrorEvent {
    /// The subagent invocation's id.
    pub subagent_run_id: String,
    /// What went wrong.
    pub message: String,
    /// A machine code (`subagent_failed`, `run_ended`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// `CUSTOM`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomEvent {
    /// The event name (`agent_adaptor.dropped` …).
    pub name: String,
    /// Its value.
    pub value: Value,
}

/// The POST body of an AG-UI run (`RunAgentInput`). Unknown fields are
/// ignored; `state`, `tools`, `context` and `forwardedProps` are accepted
/// and not used.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    /// The conversation (bound to a thread key when the handler binds threads).
    pub thread_id: String,
    /// The client's id for this run; echoed in `RUN_STARTED` / `RUN_FINISHED`.
    pub run_id: String,
    /// The client's protocol version.
    #[serde(default)]
    pub protocol_version: Option<String>,
    /// The conversation so far; the prompt is the last non-empty user text.
    pub messages: Vec<InputMessage>,
    /// Answers to the previous run's interrupts.
    #[serde(default)]
    pub resume: Option<Vec<ResumeEntry>>,
}

/// One message of [`RunAgentInput::messages`] (only what the bridge reads).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct InputMessage {
    /// The client's message id.
    #[serde(default)]
    pub id: Option<String>,
    /// `user`, `assistant`, `system`, `developer`, `tool`, `reasoning`, `activity`.
    pub role: String,
    /// A string, or (user messages) content parts.
    #[serde(default)]
    pub content: Option<Value>,
}

impl InputMessage {
    /// The message's text: the string content, or its text parts joined by
    /// newlines.
    pub fn text(&self) -> String {
        match &self.content {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }
}

impl RunAgentInput {
    /// The last non-empty user text, the prompt of a new run.
    pub fn prompt(&self) -> Option<String> {
        self.messages
            .iter()
            .rev()
            .filter(|m| m.role == "user")
            .map(InputMessage::text)
            .find(|t| !t.trim().is_empty())
    }

    /// The client's id of the message [`prompt`](Self::prompt) comes from.
    pub fn prompt_message_id(&self) -> Option<String> {
        self.messages
            .iter()
            .rev()
            .filter(|m| m.role == "user")
            .find(|m| !m.text().trim().is_empty())
            .and_then(|m| m.id.clone())
    }
}

/// How a resume entry answers its interrupt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResumeStatus {
    /// Answered; the payload holds the answer.
    Resolved,
    /// Abandoned (an approval is denied).
    Cancelled,
}

/// One entry of `RunAgentInput.resume`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    /// The interrupt it answers.
    pub interrupt_id: String,
    /// Resolved or cancelled.
    pub status: ResumeStatus,
    /// The answer (see [`Interrupt::response_schema`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_serialize_as_the_1_0_wire_shape() {
        let ev = AguiEvent::new(
            EventBody::TextMessageStart(TextMessageStartEvent {
                message_id: "m1".into(),
                role: TextRole::Assistant,
            }),
            Some(5),
        );
        assert_eq!(
            serde_json::to_value(&ev).ok(),
            Some(
                json!({"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant","timestamp":5})
            )
        );
        let fin = AguiEvent::new(
            EventBody::RunFinished(RunFinishedEvent {
                thread_id: "t".into(),
                run_id: "r".into(),
                result: None,
                outcome: RunOutcome::Interrupt {
                    interrupts: vec![Interrupt {
                        id: "i1".into(),
                        reason: "tool_approval".into(),
                        message: None,
                        tool_call_id: Some("c1".into()),
                        response_schema: None,
                        expires_at: None,
                        metadata: None,
                    }],
                },
                usage: None,
                metadata: None,
            }),
            None,
        );
        assert_eq!(
            fin.to_json(),
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i1","reason":"tool_approval","toolCallId":"c1"}]}}"#
        );
        let ok = EventBody::RunFinished(RunFinishedEvent {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: None,
            outcome: RunOutcome::Success {},
            usage: None,
            metadata: None,
        });
        assert_eq!(
            AguiEvent::new(ok, None).to_json(),
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success"}}"#
        );
    }

    #[test]
    fn the_prompt_is_the_last_non_empty_user_text() {
        let input: RunAgentInput = serde_json::from_value(json!({
            "threadId": "t", "runId": "r",
            "messages": [
                {"id": "1", "role": "user", "content": "first"},
                {"id": "2", "role": "assistant", "content": "reply"},
                {"id": "3", "role": "user", "content": [{"type": "text", "text": "second"}, {"type": "image", "source": {}}]},
                {"id": "4", "role": "user", "content": "  "}
            ],
            "tools": [], "context": [], "state": {}, "forwardedProps": {}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(input.prompt().as_deref(), Some("second"));
    }
}
