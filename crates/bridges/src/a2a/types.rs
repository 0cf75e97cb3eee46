//! A2A 1.0 wire types, in the ProtoJSON form the JSON-RPC binding uses:
//! camelCase field names, enums as their `SCREAMING_SNAKE` names, oneofs as
//! sibling keys (`{"text": "…"}`, `{"task": {…}}`), absent instead of empty.
//!
//! Every field a peer may omit deserializes to its default, and unknown
//! fields are ignored (spec §5.7), so the types read what other
//! implementations write; required fields are checked where a request is
//! validated, with messages that name the field.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The protocol version this module speaks (`Major.Minor`, spec §3.6).
pub const PROTOCOL_VERSION: &str = "1.0";
/// The service parameter (HTTP header, or query parameter) naming the
/// version a client speaks.
pub const VERSION_HEADER: &str = "A2A-Version";
/// Where the public Agent Card is served.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";
/// The `protocolBinding` of the JSON-RPC interface.
pub const JSONRPC_BINDING: &str = "JSONRPC";

/// A JSON object (`google.protobuf.Struct`).
pub type Metadata = Map<String, Value>;

/// The self-description an agent publishes at [`AGENT_CARD_PATH`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCard {
    /// Human-readable name.
    pub name: String,
    /// What the agent does.
    pub description: String,
    /// Where and how to reach it (binding, URL, protocol version).
    pub supported_interfaces: Vec<AgentInterface>,
    /// Who runs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// The agent's own version.
    pub version: String,
    /// Documentation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// Optional protocol features it supports.
    pub capabilities: AgentCapabilities,
    /// Security schemes, verbatim ProtoJSON (`{"bearer": {"httpAuthSecurityScheme": {…}}}`).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub security_schemes: Map<String, Value>,
    /// Security requirements, verbatim ProtoJSON.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<Value>,
    /// Media types it accepts by default.
    pub default_input_modes: Vec<String>,
    /// Media types it produces by default.
    pub default_output_modes: Vec<String>,
    /// What it can do.
    pub skills: Vec<AgentSkill>,
    /// An icon.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

impl AgentCard {
    /// Declare that every call needs `Authorization: Bearer <token>`: the
    /// HTTP `Bearer` scheme under `securitySchemes.bearer` and one security
    /// requirement naming it (A2A 1.0 `HTTPAuthSecurityScheme`). Clients
    /// such as the PyPI `a2a-sdk` send their credentials only for a scheme
    /// the card declares.
    pub fn declare_bearer(&mut self, description: Option<&str>) {
        let mut scheme = serde_json::json!({"scheme": "Bearer"});
        if let Some(d) = description {
            scheme["description"] = serde_json::Value::String(d.to_owned());
        }
        self.security_schemes.insert(
            "bearer".into(),
            serde_json::json!({"httpAuthSecurityScheme": scheme}),
        );
        self.security_requirements
            .push(serde_json::json!({"schemes": {"bearer": {"list": []}}}));
    }

    /// The JSON-RPC interface speaking `Major.Minor` [`PROTOCOL_VERSION`],
    /// if the card declares one (patch versions are ignored, spec §3.6).
    pub fn jsonrpc_interface(&self) -> Option<&AgentInterface> {
        self.supported_interfaces.iter().find(|i| {
            i.protocol_binding.eq_ignore_ascii_case(JSONRPC_BINDING)
                && major_minor(&i.protocol_version) == major_minor(PROTOCOL_VERSION)
        })
    }
}

/// `Major.Minor` of a version string (`"1.0.2"` → `(1, 0)`), if it has one.
pub(crate) fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut it = version.trim().split('.');
    let major = it.next()?.parse().ok()?;
    let minor = it.next().unwrap_or("0").parse().ok()?;
    Some((major, minor))
}

/// One way to reach the agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentInterface {
    /// The absolute endpoint URL.
    pub url: String,
    /// `"JSONRPC"`, `"HTTP+JSON"`, `"GRPC"` or a custom binding URI.
    pub protocol_binding: String,
    /// A tenant to send with every request.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The A2A version this interface speaks (`"1.0"`).
    pub protocol_version: String,
}

/// The organization running an agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentProvider {
    /// Its website.
    pub url: String,
    /// Its name.
    pub organization: String,
}

/// Optional protocol features.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCapabilities {
    /// `SendStreamingMessage` and `SubscribeToTask` are supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Push notification configs are supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// Protocol extensions, verbatim.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<Value>,
    /// `GetExtendedAgentCard` is supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

/// Something the agent can do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentSkill {
    /// A stable id.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Keywords.
    pub tags: Vec<String>,
    /// Example prompts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Accepted media types, when they differ from the card's defaults.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    /// Produced media types, when they differ from the card's defaults.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
}

/// Who sent a message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    /// The client (a human or another agent acting for one).
    #[serde(rename = "ROLE_USER")]
    User,
    /// The agent.
    #[serde(rename = "ROLE_AGENT")]
    Agent,
    /// Not set (or a value this implementation does not know).
    #[default]
    #[serde(rename = "ROLE_UNSPECIFIED", other)]
    Unspecified,
}

/// One piece of content: exactly one of text, raw bytes, a URL or JSON data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// The content (serialized as its sibling key).
    #[serde(flatten)]
    pub content: PartContent,
    /// Part metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// A file name, for raw and URL parts.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub filename: String,
    /// The media type (`"application/json"` …).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub media_type: String,
}

/// The oneof of a [`Part`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PartContent {
    /// Plain text.
    Text(String),
    /// Bytes, base64-encoded.
    Raw(String),
    /// A URL pointing at the content.
    Url(String),
    /// Any JSON value.
    Data(Value),
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part {
            content: PartContent::Text(text.into()),
            metadata: None,
            filename: String::new(),
            media_type: String::new(),
        }
    }

    /// A JSON data part (`mediaType: application/json`).
    pub fn data(value: Value) -> Self {
        Part {
            content: PartContent::Data(value),
            metadata: None,
            filename: String::new(),
            media_type: "application/json".into(),
        }
    }

    /// The text, for a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t),
            _ => None,
        }
    }

    /// The value, for a data part.
    pub fn as_data(&self) -> Option<&Value> {
        match &self.content {
            PartContent::Data(v) => Some(v),
            _ => None,
        }
    }
}

/// One communication turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Message {
    /// Unique per message; chosen by the sender.
    pub message_id: String,
    /// The conversation it belongs to.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub context_id: String,
    /// The task it belongs to (set to continue a task).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    /// Who sent it.
    pub role: Role,
    /// The content.
    pub parts: Vec<Part>,
    /// Message metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// Extension URIs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Related tasks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// A user message with one text part and a fresh message id.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message {
            message_id: crate::a2a::new_id("msg-"),
            role: Role::User,
            parts: vec![Part::text(text)],
            ..Message::default()
        }
    }

    /// An agent message with `parts` and a fresh message id.
    pub fn agent(parts: Vec<Part>) -> Self {
        Message {
            message_id: crate::a2a::new_id("msg-"),
            role: Role::Agent,
            parts,
            ..Message::default()
        }
    }

    /// Address this message to an existing task (and its context).
    pub fn for_task(mut self, task_id: impl Into<String>, context_id: impl Into<String>) -> Self {
        self.task_id = task_id.into();
        self.context_id = context_id.into();
        self
    }

    /// The text parts, joined with newlines.
    pub fn text(&self) -> String {
        join_text(&self.parts)
    }
}

/// The text parts of `parts`, joined with newlines.
pub(crate) fn join_text(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(Part::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where a task is in its lifecycle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TaskState {
    /// Accepted, not started.
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    /// Running.
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    /// Finished successfully (terminal).
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    /// Finished with an error (terminal).
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    /// Canceled (terminal).
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    /// Waiting for the client's input (interrupted).
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    /// The agent refused the task (terminal).
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    /// Waiting for authentication (interrupted).
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
    /// Not set (or a value this implementation does not know).
    #[default]
    #[serde(rename = "TASK_STATE_UNSPECIFIED", other)]
    Unspecified,
}

impl TaskState {
    /// Completed, failed, canceled or rejected: nothing more will happen.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Input- or auth-required: the task waits for the client.
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// The wire name (`"TASK_STATE_WORKING"`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Unspecified => "TASK_STATE_UNSPECIFIED",
            TaskState::Submitted => "TASK_STATE_SUBMITTED",
            TaskState::Working => "TASK_STATE_WORKING",
            TaskState::Completed => "TASK_STATE_COMPLETED",
            TaskState::Failed => "TASK_STATE_FAILED",
            TaskState::Canceled => "TASK_STATE_CANCELED",
            TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            TaskState::Rejected => "TASK_STATE_REJECTED",
            TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
        }
    }
}

/// A task's state, with an optional agent message and a timestamp.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// What the agent says about it (the question, for input-required).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When it entered this state (ISO 8601, UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// An output of a task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Artifact {
    /// Unique within the task.
    pub artifact_id: String,
    /// Name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Description.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The content.
    pub parts: Vec<Part>,
    /// Artifact metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// Extension URIs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

impl Artifact {
    /// The text parts, joined with newlines.
    pub fn text(&self) -> String {
        join_text(&self.parts)
    }
}

/// A stateful unit of work.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Task {
    /// Server-generated id.
    pub id: String,
    /// The conversation it belongs to.
    pub context_id: String,
    /// Where it is.
    pub status: TaskStatus,
    /// Its outputs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// The messages exchanged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// Task metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl Task {
    /// The text of every artifact, concatenated in order.
    pub fn artifact_text(&self) -> String {
        self.artifacts.iter().map(Artifact::text).collect()
    }
}

/// A change of a task's status (streaming).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskStatusUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its context.
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
    /// Event metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// A new or extended artifact (streaming).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its context.
    pub context_id: String,
    /// The artifact (or the chunk to append).
    pub artifact: Artifact,
    /// Append these parts to the artifact with the same id instead of
    /// replacing it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
    /// This is the artifact's last chunk.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub last_chunk: bool,
    /// Event metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// One item of a `SendStreamingMessage` / `SubscribeToTask` stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// A full task snapshot (always first on a task stream).
    Task(Task),
    /// A direct message (a message-only stream).
    Message(Message),
    /// A status change.
    StatusUpdate(TaskStatusUpdateEvent),
    /// An artifact change.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamResponse {
    /// The task state this item reports, if it reports one.
    pub fn state(&self) -> Option<TaskState> {
        match self {
            StreamResponse::Task(t) => Some(t.status.state),
            StreamResponse::StatusUpdate(s) => Some(s.status.state),
            _ => None,
        }
    }
}

/// The result of `SendMessage`: a task, or a direct message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    /// The task processing the message.
    Task(Task),
    /// A direct reply.
    Message(Message),
}

/// How `SendMessage` should behave.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SendMessageConfiguration {
    /// Media types the client accepts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accepted_output_modes: Vec<String>,
    /// A push notification config (not supported by this server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<Value>,
    /// At most this many history messages in the returned task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Return as soon as the task exists instead of waiting for a terminal
    /// or interrupted state.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub return_immediately: bool,
}

/// Params of `SendMessage` and `SendStreamingMessage`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SendMessageRequest {
    /// The tenant.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The message (required).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// Behaviour.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Request metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl SendMessageRequest {
    /// A request carrying `message`.
    pub fn new(message: Message) -> Self {
        SendMessageRequest {
            message: Some(message),
            ..SendMessageRequest::default()
        }
    }

    /// Ask the server to return at once instead of waiting.
    pub fn return_immediately(mut self) -> Self {
        self.configuration
            .get_or_insert_with(SendMessageConfiguration::default)
            .return_immediately = true;
        self
    }
}

/// Params of `GetTask`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetTaskRequest {
    /// The tenant.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task id (required).
    pub id: String,
    /// At most this many history messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
}

/// Params of `CancelTask`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CancelTaskRequest {
    /// The tenant.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task id (required).
    pub id: String,
    /// Request metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// Params of `SubscribeToTask`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscribeToTaskRequest {
    /// The tenant.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task id (required).
    pub id: String,
}

/// Params of `ListTasks` (A2A 1.0): filters and a page of the caller's
/// tasks, most recently changed first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListTasksRequest {
    /// The tenant.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// Only tasks of this context.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub context_id: String,
    /// Only tasks in this state (`TASK_STATE_UNSPECIFIED`: any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// At most this many tasks, 1 to 100 (default 50).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    /// The `nextPageToken` of the previous page.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub page_token: String,
    /// At most this many history messages per task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Only tasks changed at or after this time (ISO 8601).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_timestamp_after: Option<String>,
    /// Whether the tasks carry their artifacts (default: no).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_artifacts: Option<bool>,
}

/// Result of `ListTasks`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListTasksResponse {
    /// The tasks of this page.
    pub tasks: Vec<Task>,
    /// The token of the next page; empty on the last one.
    pub next_page_token: String,
    /// The page size used.
    pub page_size: i32,
    /// How many tasks match in all.
    pub total_size: i32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_use_sibling_keys_and_keep_their_metadata() {
        let part: Part = serde_json::from_value(json!({
            "text": "hi", "mediaType": "text/plain", "metadata": {"k": 1}
        }))
        .unwrap();
        assert_eq!(part.as_text(), Some("hi"));
        assert_eq!(part.media_type, "text/plain");
        assert_eq!(
            serde_json::to_value(Part::data(json!({"a": 1}))).unwrap(),
            json!({"data": {"a": 1}, "mediaType": "application/json"})
        );
        assert!(serde_json::from_value::<Part>(json!({"mediaType": "x"})).is_err());
    }

    #[test]
    fn enums_are_proto_names_and_unknown_values_degrade() {
        assert_eq!(
            serde_json::to_value(TaskState::InputRequired).unwrap(),
            json!("TASK_STATE_INPUT_REQUIRED")
        );
        let s: TaskState = serde_json::from_value(json!("TASK_STATE_FROM_THE_FUTURE")).unwrap();
        assert_eq!(s, TaskState::Unspecified);
        let r: Role = serde_json::from_value(json!("ROLE_AGENT")).unwrap();
        assert_eq!(r, Role::Agent);
    }

    #[test]
    fn stream_responses_are_oneofs() {
        let v = json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_WORKING"}}});
        let r: StreamResponse = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(r.state(), Some(TaskState::Working));
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
    }

    #[test]
    fn versions_compare_by_major_minor() {
        assert_eq!(major_minor("1.0.3"), Some((1, 0)));
        assert_eq!(major_minor("1"), Some((1, 0)));
        assert_eq!(major_minor("x"), None);
    }
}
